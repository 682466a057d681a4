"""From a lark parse tree to the typed IR (``p4switch.ir``).

One pass in declaration order (P4 requires declare-before-use): resolve names, expand typedefs,
fold constants, infer literal widths, type-check, compute control-plane names, and build the IR
blocks. Every error is raised as a located ``P4CompileError``.

``Elaborator`` composes the parts (``parts.py``): the shared ``Environment`` (scopes,
diagnostics, the program being built) and one part per concern -- declarations of types,
constants and externs (``declarations``), blocks, actions and instances (``blocks``), parsers,
statements, expressions, calls, tables and their entries, sub-blocks, functions, loops,
arguments, annotations, header unions and varbits. It walks the program's declarations and
assembles the ``ir.Program``.
"""

from __future__ import annotations

from lark import Tree

from p4switch import ir
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
from p4switch.frontend.parts import Parts
from p4switch.frontend.preprocess import Preprocessed
from p4switch.frontend.statements import StmtElaborator
from p4switch.frontend.subblocks import SubBlocks
from p4switch.frontend.tables import Tables
from p4switch.frontend.unions import HeaderUnions
from p4switch.frontend.varbit import Varbits


class Elaborator:
    """One elaboration of one preprocessed program: ``Elaborator(pp).program(tree)``."""

    def __init__(self, pp: Preprocessed) -> None:
        self.pp = pp
        self.env = env = Environment(pp)
        self.parts = parts = Parts()
        parts.annos = Annotations(env, parts)
        parts.args = Arguments(env, parts)
        parts.blocks = BlockElaborator(env, parts)
        parts.calls = Calls(env, parts)
        parts.compound = CompoundAssign(env, parts)
        parts.decls = DeclElaborator(env, parts)
        parts.direct = DirectApply(env, parts)
        parts.entries = TableEntries(env, parts)
        parts.exprs = ExprElaborator(env, parts)
        parts.funcs = Functions(env, parts)
        parts.loops = Loops(env, parts)
        parts.parsers = Parsers(env, parts)
        parts.stmts = StmtElaborator(env, parts)
        parts.subs = SubBlocks(env, parts)
        parts.tables = Tables(env, parts)
        parts.unions = HeaderUnions(env, parts)
        parts.varbits = Varbits(env, parts)
        parts.bind()

    def declaration(self, d: Tree) -> None:
        handler = self.parts.declaration_handlers.get(d.data)
        if handler is None:  # pragma: no cover - grammar and handlers go together
            raise self.env.err(d, f"unexpected declaration {d.data}")
        handler(d)

    def program(self, tree: Tree) -> ir.Program:
        env = self.env
        for decl in tree.children:
            if isinstance(decl, Tree):
                self.declaration(decl)
        dropped: list[str] = []
        for bname in env.sub_used - set(env.package.values()):
            # a type used only as a sub-block exists only inlined into its users (as in p4c,
            # its standalone tables and actions are not part of the program)
            control = env.controls.pop(bname, None)
            if control is not None:
                dropped.extend(control.actions)
            env.parsers.pop(bname, None)
        for pname, parser in list(env.parsers.items()):
            if pname not in env.package.values() and not (parser.params and isinstance(
                    parser.params[0].type, ir.ExternType)
                    and parser.params[0].type.name == "packet_in"):
                del env.parsers[pname]  # a parser without a packet_in no V1Switch can run
        # ... except the actions an inlined copy resolved to, being the same action under the
        # same global @name(".x") (their tables refer to them)
        kept = {k for c in env.controls.values() for t in c.tables.values()
                for k in [*(r.action for r in t.actions), t.default_action.action]}
        kept |= _called_actions([c.body for c in env.controls.values()]
                                + [a.body for k, a in env.actions.items() if k not in dropped])
        for key in dropped:
            if key not in kept:
                env.actions.pop(key, None)
        if not env.main_seen:
            end = ir.SourceLoc(self.pp.main_file, max(1, len(self.pp.sources.get(
                self.pp.main_file, "").splitlines())), 1)
            raise self.pp.error(end, "program has no package instantiation (V1Switch(...) main;)")
        return ir.Program(
            types=env.types,
            errors=env.errors,
            match_kinds=env.match_kinds,
            actions=env.actions,
            parsers=env.parsers,
            controls=env.controls,
            package=env.package,
            instances=env.instances,
            controller_headers=env.controller_headers,
            digests=env.digests,
            main_file=self.pp.main_file,
            sources=dict(self.pp.sources),
            new_types=env.new_types,
            new_type_annotations=env.new_type_annotations,
        )


def _called_actions(node: object) -> set[str]:
    """The actions called directly (``a();`` in a control or action body) under ``node``."""
    out: set[str] = set()
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, ir.ActionCall):
            out.add(n.action)
        if isinstance(n, list | tuple):
            stack.extend(n)
        elif isinstance(n, ir.Stmt | ir.Expr | ir.ActionCase | ir.ValueCase):
            stack.extend(getattr(n, f) for f in n.__dataclass_fields__)
    return out
