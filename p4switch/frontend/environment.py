"""The service every part of the elaborator shares: where a parse-tree node is in the source
(``loc``) and its located error (``err``), the global scope and how a name is declared in a
scope (``declare``: redeclarations refused with the first declaration's place), the program
being built (types, actions, blocks, instances... in declaration order), and the state of the
statement being elaborated (what its expressions hoisted, whether they made effects, the
enclosing functions and loops)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar, cast

from lark import Token, Tree

from p4switch import ir
from p4switch.frontend.bindings import BlockCtx, Frame, FuncB, Scope
from p4switch.frontend.errors import P4CompileError
from p4switch.frontend.preprocess import Preprocessed

T = TypeVar("T")


class Environment:
    """Scopes, diagnostics and the program under construction, for one elaboration."""

    def __init__(self, pp: Preprocessed) -> None:
        self.pp = pp
        self.globals = Scope()
        # the program being built (ir.Program's fields)
        self.types: dict[str, ir.Type] = {}
        self.errors: list[str] = []
        self.match_kinds: list[str] = []
        self.actions: dict[str, ir.Action] = {}
        self.parsers: dict[str, ir.Parser] = {}
        self.controls: dict[str, ir.Control] = {}
        self.instances: dict[str, ir.ExternInstance] = {}
        self.controller_headers: dict[str, ir.HeaderType] = {}
        self.digests: list[ir.StructType] = []
        self.package: dict[str, str] = {}
        self.new_types: dict[str, ir.Type] = {}
        self.new_type_annotations: dict[str, dict[str, str]] = {}
        self.action_defaults: dict[str, dict[str, ir.Const]] = {}  # action key -> defaults
        self.reserved: set[str] = set()  # top-level action param/local names
        self.top = BlockCtx("toplevel", "", set())
        self.main_seen = False
        self.decl_locs: dict[tuple[int, str], ir.SourceLoc] = {}
        self.sub_used: set[str] = set()  # parser/control types instantiated inside a block
        # statements that must run before the statement being elaborated (inlined function
        # calls inside its expressions); None outside statements
        self.hoisted: list[ir.Stmt] | None = None
        self.effects = 0  # ordering.Effects made so far (function calls inside expressions)
        self.frames: list[Frame] = []  # functions whose bodies are being elaborated
        self.loop_depth = 0  # loops around the statement, in the body being elaborated

    # ---------------------------------------------------------------- errors / locations
    def loc(self, node: object) -> ir.SourceLoc | None:
        if isinstance(node, Token):
            if node.line is None:
                return None
            return self.pp.locate(node.line, cast(int, node.column))  # set with the line
        if isinstance(node, Tree):
            meta = node.meta
            if getattr(meta, "empty", True):
                for c in node.children:
                    loc = self.loc(c)
                    if loc is not None:
                        return loc
                return None
            return self.pp.locate(meta.line, meta.column)
        return None

    def err(self, node: object, message: str) -> P4CompileError:
        loc = self.loc(node)
        if loc is None:
            return P4CompileError(None, message)
        return self.pp.error(loc, message)

    # ---------------------------------------------------------------- scopes
    def declare(self, scope: Scope, name: str, binding: object, node: object) -> None:
        if name in scope.names:
            old = scope.names[name]
            if isinstance(old, FuncB) and isinstance(binding, FuncB):
                old.sigs.extend(binding.sigs)
                return
            where = self.decl_locs.get((id(scope), name))
            msg = f"redeclaration of '{name}'"
            if where is not None:
                msg += f" (first declared at {where})"
                if "/p4switch/include/" in where.file:
                    msg += "; p4c rejects this too: choose another name"
            raise self.err(node, msg)
        scope.names[name] = binding
        loc = self.loc(node)
        if loc is not None:
            self.decl_locs[(id(scope), name)] = loc

    # ---------------------------------------------------------------- statements
    def in_statement(self, build: Callable[[], T]) -> tuple[T, list[ir.Stmt], bool]:
        """Run ``build`` as one statement's elaboration: its result, the statements it
        hoisted (fresh variables for ``_``), and whether it made ordering.Effects."""
        saved, self.hoisted = self.hoisted, []
        effects = self.effects
        try:
            r = build()
            return r, self.hoisted, self.effects != effects
        finally:
            self.hoisted = saved
