"""How the elaborator is composed: one part per concern (types and declarations, blocks,
statements, expressions, calls, tables, ...), each a class of its own module constructed with
the shared ``Environment`` and ``Parts``, the directory through which it calls the other
parts' public methods (they call each other recursively: an expression may inline a
function's statements, a type's width is an expression, so they cannot be built in order).

A part handles the declaration of grammar rule ``R`` with a method ``decl_R`` and the
statement of rule ``R`` with ``stmt_R``; ``Parts.bind`` collects them into the two dispatch
tables."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from p4switch.frontend.annotations import Annotations
    from p4switch.frontend.arguments import Arguments
    from p4switch.frontend.blocks import BlockElaborator
    from p4switch.frontend.calls import Calls
    from p4switch.frontend.compound import CompoundAssign
    from p4switch.frontend.declarations import DeclElaborator
    from p4switch.frontend.direct_apply import DirectApply
    from p4switch.frontend.entries import TableEntries
    from p4switch.frontend.environment import Environment
    from p4switch.frontend.expressions import ExprElaborator
    from p4switch.frontend.functions import Functions
    from p4switch.frontend.loops import Loops
    from p4switch.frontend.parsers import Parsers
    from p4switch.frontend.statements import StmtElaborator
    from p4switch.frontend.subblocks import SubBlocks
    from p4switch.frontend.tables import Tables
    from p4switch.frontend.unions import HeaderUnions
    from p4switch.frontend.varbit import Varbits


class Parts:
    """The parts of one elaboration, by concern (filled in by ``Elaborator``)."""

    annos: Annotations
    args: Arguments
    blocks: BlockElaborator
    calls: Calls
    compound: CompoundAssign
    decls: DeclElaborator
    direct: DirectApply
    entries: TableEntries
    exprs: ExprElaborator
    funcs: Functions
    loops: Loops
    parsers: Parsers
    stmts: StmtElaborator
    subs: SubBlocks
    tables: Tables
    unions: HeaderUnions
    varbits: Varbits

    def __init__(self) -> None:
        #: grammar rule -> the part's method that elaborates such a declaration / statement
        self.declaration_handlers: dict[str, Callable[..., Any]] = {}
        self.statement_handlers: dict[str, Callable[..., Any]] = {}

    def bind(self) -> None:
        """Collect the ``decl_<rule>`` and ``stmt_<rule>`` methods of every part."""
        for part in vars(self).copy().values():
            if not isinstance(part, Part):
                continue
            for attr in dir(type(part)):
                if attr.startswith("decl_"):
                    self.declaration_handlers[attr.removeprefix("decl_")] = getattr(part, attr)
                elif attr.startswith("stmt_"):
                    self.statement_handlers[attr.removeprefix("stmt_")] = getattr(part, attr)


class Part:
    """A part of the elaborator: the shared environment (its ``err`` and ``loc`` at hand, as
    every part reports located errors) and the other parts."""

    def __init__(self, env: Environment, parts: Parts) -> None:
        self.env = env
        self.parts = parts
        self.err = env.err
        self.loc = env.loc
