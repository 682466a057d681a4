"""What names are bound to while elaborating (values, objects, block types, sub-block
instances), the scopes that hold them, the block being elaborated (``BlockCtx``) and the
intermediate results of name resolution that are not values."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from lark import Tree

from p4switch import ir
from p4switch.frontend.preprocess import Preprocessed  # noqa: F401
from p4switch.frontend.types import (
    BlockProto,
    ExternDecl,
    FuncSig,
    PackageDecl,
)

if TYPE_CHECKING:  # pragma: no cover
    pass

@dataclass
class VarB:
    ir_name: str
    type: ir.Type
    writable: bool
    what: str  # "variable", "'in' parameter", "action data parameter", ...


@dataclass
class ConstB:
    value: ir.Const | ir.ListExpr  # a list (of constants) for a struct or header constant


@dataclass
class InstanceB:
    inst: ir.ExternInstance
    decl: ExternDecl
    type: ir.ExternType


@dataclass
class TableB:
    table: ir.Table


@dataclass
class ActionB:
    key: str


@dataclass
class ValueSetB:
    vs: ir.ValueSet


@dataclass
class FuncB:
    sigs: list[FuncSig]


@dataclass
class TypeB:
    type: object
    newtype: str = ""  # the ``type`` declaration it names (directly or through typedefs)


@dataclass
class ExternB:
    decl: ExternDecl


@dataclass
class ProtoB:
    proto: BlockProto


@dataclass
class BlockB:
    kind: str  # "parser" | "control"
    block: ir.Parser | ir.Control | None  # None: has constructor parameters (no standalone IR)
    param_types: list[object]
    tree: Tree | None = None  # the declaration, re-elaborated for each sub-block instance


@dataclass
class SubParam:
    name: str
    direction: str
    type: ir.Type
    ir_name: str  # the per-instance variable holding the parameter ("" for packet_in/out)


@dataclass
class SubInstB:
    """A parser or control instantiated inside another block (``Sub() c;``). It is inlined:
    its locals, extern instances, actions, tables and value sets were elaborated once, into the
    enclosing block, at the instantiation (with control-plane names ``<outer>.<inst>.<x>``);
    each ``c.apply(...)`` re-elaborates its apply body (or states) in ``scope``/``ctx``."""

    kind: str
    name: str
    tree: Tree
    scope: Scope
    ctx: BlockCtx
    params: list[SubParam]
    local_inits: list[tuple[str, ir.Type, ir.Expr | None]]
    applies: int = 0
    # apply parameters' default values (``in T p = v``), by parameter name
    defaults: dict[str, ir.Expr] = field(default_factory=dict)


@dataclass
class ParserCall:
    """``p.apply(...)`` of a sub-parser in a parser state: the state is split there."""

    inst: SubInstB
    pre: list[ir.Stmt]
    post: list[ir.Stmt]
    node: Tree


@dataclass
class Frame:
    """The function whose body is being elaborated: where ``return e`` stores ``e``."""

    name: str
    ret: ir.Type
    result: str | None


@dataclass
class PackageB:
    decl: PackageDecl


class Scope:
    def __init__(self, parent: Scope | None = None):
        self.parent = parent
        self.names: dict[str, object] = {}

    def lookup(self, name: str) -> object | None:
        s: Scope | None = self
        while s is not None:
            if name in s.names:
                return s.names[name]
            s = s.parent
        return None


@dataclass
class BlockCtx:
    """The parser/control (or top-level action) being elaborated."""

    kind: str  # "parser", "control", "toplevel"
    prefix: str  # control-plane name prefix ("" at top level)
    used: set[str]
    instances: dict[str, ir.ExternInstance] = field(default_factory=dict)
    tables: dict[str, ir.Table] = field(default_factory=dict)
    actions: list[str] = field(default_factory=list)
    value_sets: dict[str, ir.ValueSet] = field(default_factory=dict)
    locals: list[ir.VarDecl] = field(default_factory=list)
    in_action: bool = False
    deparser: bool = False
    # prefix of the IR names of tables, extern instances and value sets of an inlined
    # sub-block instance ("c1." for `Sub() c1;`), so that they cannot clash with the outer's
    local_prefix: str = ""
    # block-level variable initialisations that must run as statements (an initializer that
    # calls a function, and every initialised variable after it, in order): the start of
    # the apply body / of the start state
    prelude: list[ir.Stmt] = field(default_factory=list)

    def fresh(self, name: str) -> str:
        if name not in self.used:
            self.used.add(name)
            return name
        i = 1
        while f"{name}_{i}" in self.used:
            i += 1
        self.used.add(f"{name}_{i}")
        return f"{name}_{i}"


@dataclass
class MethodRef:
    kind: str  # "header", "stack", "table", "instance", "packet_in", "packet_out"
    target: object
    method: str
    node: object


@dataclass
class ApplyResult:
    table: ir.Table
    node: object


class Args(list):
    """Argument expressions in source order; ``names`` holds each one's name when the call
    uses named arguments (``extract(hdr = h)``), else None."""

    def __init__(self) -> None:
        super().__init__()
        self.names: list[str | None] = []
        self.nodes: list[Tree] = []

    def fits(self, params: list[str]) -> bool:
        """Whether these arguments can bind the parameters ``params`` (count, then names)."""
        if len(self) != len(params):
            return False
        return not any(self.names) or set(self.names) == set(params)


@dataclass
class Named:
    """A name that denotes an object (table, instance, action...) rather than a value."""

    binding: object
    name: str
    node: object
    type: object = None
