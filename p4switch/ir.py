"""The typed intermediate representation (IR) of a P4_16 v1model program.

The front end (``p4switch.frontend``) produces it; the pipeline compiler, the P4Info generator and
the runtime consume it. It is the contract between them, so it is deliberately small and fully
resolved:

* every name is resolved: variables are ``Var`` nodes whose names are unique within one block
  (a parser or a control, including the actions that block uses); constants are folded into
  ``Const`` nodes; typedefs are expanded; type parameters of externs are concrete types;
* every expression carries its P4 type (``Expr.type``), with integer literals already given the
  width the spec's inference rules assign (an untyped literal that stays untyped has ``InfInt``);
* control-plane names (``cp_name``) are computed as p4c does for v1model programs: the control's
  type name, a dot, the object's name (``MyIngress.ipv4_lpm``); ``@name("x")`` replaces the local
  part, ``@name(".x")`` gives the absolute name ``x``; top-level actions have their bare name
  (``NoAction``).

Nothing here executes packets; ``p4switch.pipeline`` compiles this IR into closures once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

# --------------------------------------------------------------------------------------------
# Source locations
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SourceLoc:
    """A position in a P4 source file (1-based line and column), for error messages."""

    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


class AnnotationText(str):
    """An annotation's body. As a ``str`` it is the value the program's consumers read (string
    arguments unquoted: ``@name("x")`` -> ``x``); ``source`` is its token text as p4c writes it
    into P4Info (``"x"``, ``1 , 2``, ``k = "v"``), so the two P4Infos carry equal strings.
    ``earlier`` are the sources of earlier annotations of the same name on the same object
    (``@a(1) @a(2)``): the value is the last one's, P4Info lists them all, as p4c does."""

    source: str
    earlier: tuple[str, ...]

    def __new__(cls, value: str, source: str, earlier: tuple[str, ...] = ()) -> AnnotationText:
        obj = super().__new__(cls, value)
        obj.source = source
        obj.earlier = tuple(earlier)
        return obj

    def __reduce__(self):  # noqa: ANN204 - pickle/deepcopy keep the source text
        return (AnnotationText, (str(self), self.source, self.earlier))


class StructuredAnnotation(str):
    """A structured annotation's body (spec 18.1.2): ``@a[1, "x"]`` is an expression list,
    ``@a[k=1]`` a key-value list. ``items`` are (key or None, value) pairs whose values are the
    compile-time-known int, string or bool that P4Info's ``structured_annotations`` carry. As a
    ``str`` it is empty, so code reading an annotation's text sees no value."""

    kind: str  # "expressions" or "kv"
    items: tuple[tuple[str | None, int | str | bool], ...]

    def __new__(cls, kind: str, items: tuple) -> StructuredAnnotation:
        obj = super().__new__(cls, "")
        obj.kind = kind
        obj.items = tuple(items)
        return obj

    def __reduce__(self):  # noqa: ANN204 - pickle/deepcopy keep the items
        return (StructuredAnnotation, (self.kind, self.items))


@dataclass
class Node:
    """Base of statements and expressions: carries an optional source location."""

    loc: SourceLoc | None = field(default=None, kw_only=True, compare=False, repr=False)


# --------------------------------------------------------------------------------------------
# Types
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BitsType:
    """``bit<W>`` (signed=False) or ``int<W>`` (signed=True, two's complement)."""

    width: int
    signed: bool = False

    def __str__(self) -> str:
        return f"{'int' if self.signed else 'bit'}<{self.width}>"


@dataclass(frozen=True)
class VarbitType:
    """``varbit<W>`` (spec 7.1.6): a header field of at most ``max_width`` bits whose length
    is set by the two-argument ``extract``. At run time its value is the pair (current length
    in bits, value), so assignment and ``==`` carry the length along."""

    max_width: int

    def __str__(self) -> str:
        return f"varbit<{self.max_width}>"


@dataclass(frozen=True)
class InfIntType:
    """The arbitrary-precision type of an integer literal whose width was never inferred."""

    def __str__(self) -> str:
        return "int"


@dataclass(frozen=True)
class BoolType:
    def __str__(self) -> str:
        return "bool"


@dataclass(frozen=True)
class ErrorType:
    """``error``: values are indexes into ``Program.errors``."""

    def __str__(self) -> str:
        return "error"


@dataclass(frozen=True)
class MatchKindType:
    def __str__(self) -> str:
        return "match_kind"


@dataclass(frozen=True)
class StringType:
    """Only for ``log_msg`` format strings and ``@name``-like annotation bodies."""

    def __str__(self) -> str:
        return "string"


@dataclass(frozen=True)
class VoidType:
    def __str__(self) -> str:
        return "void"


@dataclass(frozen=True)
class EnumType:
    """``enum`` (underlying None, members numbered 0..n-1) or ``enum bit<W>`` (serializable)."""

    name: str
    members: tuple[tuple[str, int], ...]
    underlying: BitsType | None = None

    def value_of(self, member: str) -> int:
        for name, value in self.members:
            if name == member:
                return value
        raise KeyError(member)

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Field:
    """A struct or header field. ``type_name``: the ``type`` (newtype, spec 7.6) the field
    was declared with, if any -- ``type`` holds the type it stands for; P4Info names it."""

    name: str
    type: Type
    annotations: tuple[tuple[str, str], ...] = ()
    type_name: str = field(default="", compare=False)


@dataclass(frozen=True)
class HeaderType:
    """A header: fixed-width fields (bit/int/serializable enum) plus a hidden validity bit."""

    name: str
    fields: tuple[Field, ...]
    annotations: tuple[tuple[str, str], ...] = ()
    loc: SourceLoc | None = field(default=None, compare=False, repr=False)  # its declaration

    @property
    def width(self) -> int:
        """Total width in bits (what ``extract`` consumes); TypeError with a varbit field."""
        return sum(type_width(f.type) for f in self.fields)

    @property
    def varbit(self) -> Field | None:
        """The header's ``varbit`` field (at most one), if any."""
        return next((f for f in self.fields if isinstance(f.type, VarbitType)), None)

    @property
    def min_width(self) -> int:
        """Width in bits without the varbit field (``minSizeInBits``)."""
        return sum(type_width(f.type) for f in self.fields if not isinstance(f.type, VarbitType))

    def field_type(self, name: str) -> Type:
        for f in self.fields:
            if f.name == name:
                return f.type
        raise KeyError(name)

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class StructType:
    """A struct; fields may be of any type (headers, stacks, structs, bits, bool, ...).
    ``union``: a ``header_union`` (fields are headers; the front end keeps at most one
    valid by adding setInvalid() of the others where a member becomes valid)."""

    name: str
    fields: tuple[Field, ...]
    annotations: tuple[tuple[str, str], ...] = ()
    union: bool = False

    def field_type(self, name: str) -> Type:
        for f in self.fields:
            if f.name == name:
                return f.type
        raise KeyError(name)

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class StackType:
    """A header stack ``H[size]``; ``elem`` is a header or a header union (spec 7.2.4)."""

    elem: HeaderType | StructType
    size: int

    def __str__(self) -> str:
        return f"{self.elem.name}[{self.size}]"


@dataclass(frozen=True)
class TupleType:
    """The type of a list expression ``{a, b, c}`` (hash inputs, digest data, field lists)."""

    elems: tuple[Type, ...]

    def __str__(self) -> str:
        return "tuple<" + ", ".join(str(t) for t in self.elems) + ">"


@dataclass(frozen=True)
class ExternType:
    """An extern object type (``register``, ``counter``, ``packet_in``...) with its type args."""

    name: str
    type_args: tuple[Type, ...] = ()

    def __str__(self) -> str:
        if not self.type_args:
            return self.name
        return f"{self.name}<{', '.join(str(t) for t in self.type_args)}>"


Type = (
    BitsType
    | VarbitType
    | InfIntType
    | BoolType
    | ErrorType
    | MatchKindType
    | StringType
    | VoidType
    | EnumType
    | HeaderType
    | StructType
    | StackType
    | TupleType
    | ExternType
)


def type_width(t: Type) -> int:
    """Width in bits of a fixed-width type (bit/int, serializable enum, bool=1, header, struct
    of fixed-width fields). Raises TypeError for types without a width."""
    if isinstance(t, BitsType):
        return t.width
    if isinstance(t, BoolType):
        return 1
    if isinstance(t, EnumType) and t.underlying is not None:
        return t.underlying.width
    if isinstance(t, HeaderType | StructType):
        return sum(type_width(f.type) for f in t.fields)
    if isinstance(t, StackType):
        return t.size * type_width(t.elem)
    raise TypeError(f"type {t} has no fixed width")


# --------------------------------------------------------------------------------------------
# Expressions
# --------------------------------------------------------------------------------------------


@dataclass
class Expr(Node):
    """Base of expressions. ``type`` is the P4 type of the value."""

    type: Type = field(kw_only=True)


@dataclass
class Const(Expr):
    """A compile-time value: an int for bit/int/InfInt, the member's numeric value for enums,
    the index into ``Program.errors`` for ``error``, 0/1 as bool for ``bool``, the string for
    ``string``, the match-kind name for ``match_kind``. Values are already reduced to their
    type: ``bit<W>`` in 0..2^W-1, ``int<W>`` as the signed value in -2^(W-1)..2^(W-1)-1
    (``16s-1`` is -1)."""

    value: int | bool | str


@dataclass
class Var(Expr):
    """A variable, parameter or action parameter: ``name`` is unique within its block."""

    name: str


@dataclass
class Member(Expr):
    """``base.field`` of a struct or header (also ``hdr.stack.next.f`` via StackNext)."""

    base: Expr
    field: str


@dataclass
class StackElem(Expr):
    """``stack[index]``; index may be a run-time expression (out of range: StackOutOfBounds)."""

    stack: Expr
    index: Expr


@dataclass
class StackNext(Expr):
    """``stack.next`` (parsers only: the element at nextIndex)."""

    stack: Expr


@dataclass
class StackLast(Expr):
    """``stack.last``: the element at nextIndex - 1."""

    stack: Expr


@dataclass
class StackProp(Expr):
    """``stack.size``, ``stack.lastIndex`` or ``stack.nextIndex`` (type bit<32>)."""

    stack: Expr
    prop: str


@dataclass
class Slice(Expr):
    """``base[hi:lo]``: bits hi..lo inclusive; type is bit<hi-lo+1>. Also an l-value."""

    base: Expr
    hi: int
    lo: int


@dataclass
class Concat(Expr):
    """``left ++ right``: width is the sum; signedness that of ``left``."""

    left: Expr
    right: Expr


@dataclass
class Cast(Expr):
    """``(type) expr``: bit<->int same width, widening/narrowing (truncate or extend), bool<->bit<1>,
    serializable enum <-> underlying, InfInt -> bit/int. ``type`` is the target type."""

    expr: Expr


@dataclass
class Unary(Expr):
    """``op`` is one of ``-`` (two's complement negate), ``~`` (bitwise not), ``!`` (bool not)."""

    op: str
    operand: Expr


@dataclass
class Binary(Expr):
    """Binary operators, spelled as in P4: ``+ - * / % << >> & | ^ && || == != < <= > >=
    |+| |-|``. Operands of arithmetic/bitwise ops already have the same type (the front end
    inserted casts/inferred literal widths); shifts may have a right operand of another width.
    ``&&``/``||`` short-circuit. Comparisons have type bool."""

    op: str
    left: Expr
    right: Expr


@dataclass
class Mux(Expr):
    """``cond ? then : else_``."""

    cond: Expr
    then: Expr
    else_: Expr


@dataclass
class ListExpr(Expr):
    """``{a, b, c}`` with TupleType, or with a StructType/HeaderType when it initialises one."""

    items: list[Expr]


@dataclass
class IsValid(Expr):
    """``header.isValid()`` (type bool)."""

    header: Expr


@dataclass
class TableHit(Expr):
    """``table.apply().hit`` (negate=False) or ``table.apply().miss`` (negate=True): applies the
    table, then yields whether it hit."""

    table: str
    negate: bool = False


@dataclass
class Lookahead(Expr):
    """``packet.lookahead<T>()`` in a parser: T's bits without consuming them."""


@dataclass
class ExternCallExpr(Expr):
    """A value-returning extern call, e.g. a method with a return value. Reserved for externs
    that need it; the v1model subset mostly uses ``out`` parameters instead."""

    instance: str | None
    method: str
    args: list[Expr]
    type_args: tuple[Type, ...] = ()


# --------------------------------------------------------------------------------------------
# Statements
# --------------------------------------------------------------------------------------------


@dataclass
class Stmt(Node):
    pass


@dataclass
class Block(Stmt):
    """Statements in order. ``copy_out`` > 0 marks an inlined sub-control apply (copy-in,
    body, copy-out): its last ``copy_out`` statements are the copy-out of the callee's out/inout
    parameters, which run also when an ``exit`` ends the statements before them (spec: exit
    still copies out)."""

    stmts: list[Stmt] = field(default_factory=list)
    copy_out: int = field(default=0, kw_only=True)


@dataclass
class VarDecl(Stmt):
    """A local variable; without ``init`` it starts at zero / all headers invalid (as BMv2 does;
    the spec leaves it unspecified)."""

    name: str
    type: Type
    init: Expr | None = None


@dataclass
class Assign(Stmt):
    """``lhs = rhs``. lhs is Var/Member/StackElem/StackNext/StackLast/Slice. Assigning a header
    copies its fields and validity; a ListExpr initialises a header (making it valid) or struct."""

    lhs: Expr
    rhs: Expr


@dataclass
class If(Stmt):
    cond: Expr
    then: Block
    else_: Block | None = None


@dataclass
class ApplyTable(Stmt):
    """``table.apply();`` as a statement."""

    table: str


@dataclass
class ActionCase:
    """One label of ``switch (t.apply().action_run)``: ``actions`` are action keys (into
    ``Program.actions``), None for ``default``. ``body`` None means fall through to the next."""

    actions: list[str] | None
    body: Block | None


@dataclass
class SwitchAction(Stmt):
    table: str
    cases: list[ActionCase]


@dataclass
class ValueCase:
    """One label of an expression switch: ``values`` are Consts, None for ``default``."""

    values: list[Const] | None
    body: Block | None


@dataclass
class SwitchValue(Stmt):
    """``switch (expr) { 1: {...} default: {...} }`` over bit<W>/int<W>/enum/error values."""

    expr: Expr
    cases: list[ValueCase]


@dataclass
class ActionCall(Stmt):
    """A direct call of an action from a control body or another action. ``action`` is the key
    into ``Program.actions``; ``args`` bind the action's parameters in order (directional ones
    are l-values for out/inout)."""

    action: str
    args: list[Expr]


@dataclass
class ExternCall(Stmt):
    """Any extern function or method call.

    ``instance`` is the name of the extern instance (a key into the block's ``instances``) for
    method calls (``r.read(v, i)``, ``c.count(i)``, ``h.get_hash(...)``), or None for extern
    functions (``mark_to_drop``, ``hash``, ``random``, ``verify_checksum``, ``update_checksum``,
    ``verify_checksum_with_payload``, ``update_checksum_with_payload``, ``clone``,
    ``clone_preserving_field_list``, ``resubmit_preserving_field_list``,
    ``recirculate_preserving_field_list``, ``digest``, ``truncate``, ``log_msg``, ``assert``,
    ``assume``, ``verify`` (parsers)). ``args`` are in declaration order with defaults filled;
    out/inout arguments are l-values. ``type_args`` are explicit or inferred type arguments
    (e.g. ``digest<T>``)."""

    instance: str | None
    method: str
    args: list[Expr]
    type_args: tuple[Type, ...] = ()


@dataclass
class HeaderMethod(Stmt):
    """``h.setValid()`` / ``h.setInvalid()``."""

    header: Expr
    method: str


@dataclass
class StackMethod(Stmt):
    """``s.push_front(count)`` / ``s.pop_front(count)``."""

    stack: Expr
    method: str
    count: int


@dataclass
class Extract(Stmt):
    """``packet.extract(hdr)`` in a parser (also ``hdr.stack.next``); ``bits``: the varbit
    field's length of the two-argument form ``extract(hdr, bits)`` (bit<32>)."""

    header: Expr
    bits: Expr | None = None


@dataclass
class Advance(Stmt):
    """``packet.advance(bits)`` in a parser."""

    bits: Expr


@dataclass
class Emit(Stmt):
    """``packet.emit(hdr)`` in a deparser: emits a valid header (or each valid header of a
    stack, or each header of a struct in order); invalid ones emit nothing."""

    header: Expr


@dataclass
class For(Stmt):
    """``for (init; cond; update) body`` (``for (T x in lo .. hi)`` is lowered to one):
    ``init`` runs once; while ``cond`` holds, ``body`` and then ``update`` run. ``Break`` ends
    the innermost loop at once; ``Continue`` ends this iteration of it (``update`` still runs)."""

    init: list[Stmt]
    cond: Expr
    update: list[Stmt]
    body: Block


@dataclass
class Break(Stmt):
    """``break``: leaves the innermost ``For``."""


@dataclass
class Continue(Stmt):
    """``continue``: goes on with the innermost ``For``'s update and condition."""


@dataclass
class Exit(Stmt):
    """``exit``: ends the current control block (ingress or egress) at once."""


@dataclass
class Return(Stmt):
    """``return``: ends the current action or control apply body."""


# --------------------------------------------------------------------------------------------
# Parsers
# --------------------------------------------------------------------------------------------


@dataclass
class KeysetDefault:
    """``default`` or ``_``: matches anything."""


@dataclass
class KeysetValue:
    """A single value. Keyset and const-entry values are unsigned bit patterns of the key's
    width (an ``int<8>`` key matched against -1 holds 255)."""

    value: int


@dataclass
class KeysetMask:
    """``value &&& mask``."""

    value: int
    mask: int


@dataclass
class KeysetRange:
    """``lo .. hi`` inclusive."""

    lo: int
    hi: int


@dataclass
class KeysetValueSet:
    """A ``value_set`` instance name (parser value sets, filled by the control plane).
    ``keys`` > 1: a value_set of a struct type matching this and the next ``keys - 1``
    select keys jointly (as a tuple, one member matching them all); the keysets of those
    next keys are KeysetDefault."""

    name: str
    keys: int = 1


Keyset = (
    KeysetDefault
    | KeysetValue
    | KeysetMask
    | KeysetRange
    | KeysetValueSet
)


@dataclass
class SelectCase:
    """One case of a select: one keyset per select key; ``next_state`` may be accept/reject."""

    keysets: list[Keyset]
    next_state: str


@dataclass
class Transition:
    """``transition state;`` (select is None) or ``transition select(keys) { cases }``. With a
    select and no matching case the parser rejects with error.NoMatch."""

    next_state: str | None = None
    select_keys: list[Expr] | None = None
    cases: list[SelectCase] = field(default_factory=list)
    loc: SourceLoc | None = field(default=None, compare=False, repr=False)


@dataclass
class ParserState:
    name: str
    stmts: list[Stmt]
    transition: Transition
    loc: SourceLoc | None = field(default=None, compare=False, repr=False)


@dataclass
class ValueSet:
    """``value_set<T>(size) name;`` in a parser."""

    name: str
    cp_name: str
    type: Type
    size: int
    annotations: dict[str, str] = field(default_factory=dict)


# --------------------------------------------------------------------------------------------
# Blocks, tables, actions, extern instances
# --------------------------------------------------------------------------------------------


@dataclass
class Param:
    """A parameter. ``direction`` is "in", "out", "inout" or "" (directionless: action data
    supplied by the control plane, or a constructor parameter)."""

    name: str
    direction: str
    type: Type
    annotations: dict[str, str] = field(default_factory=dict)
    type_name: str = ""  # the newtype the parameter was declared with (see Field)


@dataclass
class Action:
    """An action. ``name`` is its key in ``Program.actions`` (equal to ``cp_name``, made unique
    by the front end if two would clash). Directional params come first, then action data.
    ``body`` refers to its params through ``Var`` nodes named as in ``params``."""

    name: str
    cp_name: str
    params: list[Param]
    body: Block
    annotations: dict[str, str] = field(default_factory=dict)
    loc: SourceLoc | None = field(default=None, compare=False, repr=False)

    @property
    def data_params(self) -> list[Param]:
        """The directionless parameters the control plane supplies."""
        return [p for p in self.params if p.direction == ""]


@dataclass
class ExternInstance:
    """An extern object instantiated in a block (or at top level), e.g.
    ``register<bit<32>>(1024) r;`` -> type_name "register", type_args (bit<32>,), args [1024],
    or ``action_selector(HashAlgorithm.crc16, 64, 16)``. Constructor args are Consts."""

    name: str
    cp_name: str
    type_name: str
    type_args: tuple[Type, ...]
    args: list[Expr]
    annotations: dict[str, str] = field(default_factory=dict)
    loc: SourceLoc | None = field(default=None, compare=False, repr=False)


@dataclass
class TableKey:
    """One key of a table. ``name`` is the control-plane name (``@name`` or the expression's
    source text, e.g. ``hdr.ipv4.dstAddr``); ``match_kind`` is exact/lpm/ternary/range/optional
    or selector (for action_selector inputs)."""

    expr: Expr
    match_kind: str
    name: str
    annotations: dict[str, str] = field(default_factory=dict)
    type_name: str = ""  # the newtype of the key's field, if it was declared with one

    @property
    def width(self) -> int:
        # an ``error`` key matches the error's code (its index in Program.errors) in 32 bits,
        # the width BMv2 gives error fields; P4Info gives it no bitwidth, as p4c does
        if isinstance(self.expr.type, ErrorType):
            return 32
        return type_width(self.expr.type)


@dataclass
class ActionRef:
    """An entry of a table's ``actions`` list: ``action`` is a key into ``Program.actions``;
    ``scope`` is "" or "defaultonly"/"tableonly" from @defaultonly/@tableonly.

    ``args`` binds the action's directional parameters, in order, when the list names the
    action with arguments (``actions = { setbyte(hdr.data.b1); }``): l-values for out/inout,
    any expression for in. Whenever the table runs this action (entry, default action, const
    entry), these are its leading arguments and the control plane supplies only the data
    parameters. Empty for the usual plain reference. (Added for p4c-testdata programs; the front
    end produces it only where the pipeline executes it, see ``frontend.elaborate``.)"""

    action: str
    scope: str = ""
    annotations: dict[str, str] = field(default_factory=dict)
    args: list[Expr] = field(default_factory=list)


@dataclass
class BoundAction:
    """An action with its action-data arguments (Consts), as in default_action or an entry."""

    action: str
    args: list[Expr]


@dataclass
class EntryKey:
    """A key of a const entry: kind is "exact", "lpm", "ternary", "range", "optional" or
    "default" (``_``/``default``). For lpm ``mask`` holds the prefix mask; ``prefix_len`` too."""

    kind: str
    value: int = 0
    mask: int | None = None
    hi: int | None = None
    prefix_len: int | None = None


@dataclass
class ConstEntry:
    """A ``const entries`` entry. ``priority`` is None for tables without ternary/range/
    optional keys; otherwise the front end numbers entries so that an earlier entry has a
    larger priority (larger wins, as in P4Runtime): the first of N entries gets N."""

    keys: list[EntryKey]
    action: BoundAction
    priority: int | None = None
    # ``const`` before an entry of a non-const ``entries`` list (P4_16 1.2.4): installed like
    # the others, but the control plane may not modify or delete it
    const: bool = False


@dataclass
class Table:
    name: str
    cp_name: str
    keys: list[TableKey]
    actions: list[ActionRef]
    default_action: BoundAction
    default_action_const: bool = False
    size: int = 1024
    const_entries: list[ConstEntry] | None = None
    # ``entries = {...}`` without const: installed when the pipeline starts, then ordinary
    # entries the control plane may modify or delete (priorities as for const entries)
    initial_entries: list[ConstEntry] | None = None
    # action_profile / action_selector instance name; an inline
    # ``implementation = action_selector(...)`` becomes an instance of the block named after the
    # table (same cp_name as the table), as p4c names it
    implementation: str | None = None
    direct_counter: str | None = None  # direct_counter instance name
    direct_meter: str | None = None  # direct_meter instance name
    annotations: dict[str, str] = field(default_factory=dict)
    loc: SourceLoc | None = field(default=None, compare=False, repr=False)

    @property
    def has_priority(self) -> bool:
        """Whether entries carry priorities (ternary, range or optional keys)."""
        return any(k.match_kind in ("ternary", "range", "optional") for k in self.keys)


@dataclass
class Parser:
    name: str
    params: list[Param]
    locals: list[VarDecl]
    instances: dict[str, ExternInstance]
    value_sets: dict[str, ValueSet]
    states: dict[str, ParserState]
    annotations: dict[str, str] = field(default_factory=dict)


@dataclass
class Control:
    """A control block: ``locals`` are control-level variable declarations (run at each apply,
    in order), ``actions`` the keys of the actions declared in it, ``body`` the apply block."""

    name: str
    params: list[Param]
    locals: list[VarDecl]
    instances: dict[str, ExternInstance]
    actions: list[str]
    tables: dict[str, Table]
    body: Block
    annotations: dict[str, str] = field(default_factory=dict)


class BlockRole(StrEnum):
    """The six blocks of v1model's V1Switch package, in the order its constructor takes them
    (and packets pass them)."""

    PARSER = "parser"
    VERIFY_CHECKSUM = "verify_checksum"
    INGRESS = "ingress"
    EGRESS = "egress"
    COMPUTE_CHECKSUM = "compute_checksum"
    DEPARSER = "deparser"


V1SWITCH_ROLES: tuple[str, ...] = tuple(r.value for r in BlockRole)
"""The roles' names in V1Switch order: the keys of ``Program.package``."""


@dataclass
class Program:
    """A whole v1model program after the front end.

    ``package`` maps the V1Switch roles (``BlockRole``) to the names of blocks in
    ``parsers``/``controls``.
    ``controller_headers`` maps "packet_in"/"packet_out" to the header types annotated with
    ``@controller_header``. ``digests`` lists the struct types passed to ``digest<T>``.
    ``sources`` maps each file read (after include resolution) to its text, for device configs.
    """

    types: dict[str, Type]
    errors: list[str]
    match_kinds: list[str]
    actions: dict[str, Action]
    parsers: dict[str, Parser]
    controls: dict[str, Control]
    package: dict[str, str]
    instances: dict[str, ExternInstance] = field(default_factory=dict)
    controller_headers: dict[str, HeaderType] = field(default_factory=dict)
    digests: list[StructType] = field(default_factory=list)
    main_file: str = ""
    sources: dict[str, str] = field(default_factory=dict)
    # ``type N = T;`` declarations (newtypes), name -> T, in declaration order
    new_types: dict[str, Type] = field(default_factory=dict)
    # a newtype's annotations (P4Info lists them; ``@p4runtime_translation`` changes its
    # P4Runtime width), by name
    new_type_annotations: dict[str, dict[str, str]] = field(default_factory=dict)

    def error_code(self, name: str) -> int:
        return self.errors.index(name)

    def block(self, role: str) -> Parser | Control:
        name = self.package[role]
        return self.parsers[name] if role == BlockRole.PARSER else self.controls[name]

    def all_tables(self) -> list[Table]:
        return [t for c in self.controls.values() for t in c.tables.values()]

    def all_instances(self) -> list[ExternInstance]:
        out = list(self.instances.values())
        for p in self.parsers.values():
            out.extend(p.instances.values())
        for c in self.controls.values():
            out.extend(c.instances.values())
        return out


# --------------------------------------------------------------------------------------------
# Visitor
# --------------------------------------------------------------------------------------------


def has_return(s: Stmt) -> bool:
    """Whether statement ``s`` (not counting the actions it calls) contains a ``return``."""
    if isinstance(s, Return):
        return True
    if isinstance(s, Block):
        return any(has_return(x) for x in s.stmts)
    if isinstance(s, If):
        return has_return(s.then) or (s.else_ is not None and has_return(s.else_))
    if isinstance(s, SwitchAction | SwitchValue):
        return any(c.body is not None and has_return(c.body) for c in s.cases)
    if isinstance(s, For):
        return has_return(s.body)
    return False


class Visitor:
    """Dispatch on an IR node's class, so consumers (code generators, the dump) write one
    method per node kind instead of an ``isinstance`` chain.

    ``visit(node, *args)`` calls ``visit_<Class>(node, *args)`` for the nearest class in the
    node's MRO that has such a method, else ``generic(node, *args)``. A subclass overrides a
    node kind by defining its ``visit_<Class>`` (calling ``super().visit_<Class>`` to fall
    back). The method found is cached per (visitor class, node class): dispatch is one dict
    lookup, whatever the chain's length."""

    _dispatch: dict[type, Callable[..., Any]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._dispatch = {}

    def visit(self, node: Any, *args: Any) -> Any:
        fn = self._dispatch.get(type(node))
        if fn is None:
            fn = self._resolve(type(node))
        return fn(self, node, *args)

    @classmethod
    def _resolve(cls, node_cls: type) -> Callable[..., Any]:
        for k in node_cls.__mro__:
            fn = getattr(cls, "visit_" + k.__name__, None)
            if fn is not None:
                break
        else:
            fn = cls.generic
        cls._dispatch[node_cls] = fn
        return fn

    def generic(self, node: Any, *args: Any) -> Any:
        """No ``visit_`` method for the node's class (or its bases)."""
        raise TypeError(f"{type(self).__name__} cannot visit {type(node).__name__}")
