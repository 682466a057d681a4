"""Compile IR blocks into Python source, once per pipeline.

Representation (what the generated code manipulates):

* a header is an instance of a generated ``__slots__`` class: ``_v`` (validity, bool) plus one
  attribute ``f_<name>`` per field; a struct likewise (without ``_v``); a header stack is a
  ``runtime.Stack`` (list ``h`` of headers, ``n`` = nextIndex);
* ``bit<W>`` values are Python ints in [0, 2^W), ``int<W>`` values Python ints in
  [-2^(W-1), 2^(W-1)); every operator that can leave the range re-wraps (masks) its result, so
  values stay canonical; ``bool`` is a Python bool; ``error``/enum values are ints;
* every parser/control becomes one Python function whose arguments are the block's parameters
  plus ``_lv`` (an object holding control-level locals, shared with the block's actions) and
  ``_ctx`` (``runtime.Ctx``); each action becomes a function of the same leading arguments
  followed by its own parameters; each table becomes a function that computes the key, looks up
  the run-time table state and calls the chosen action;
* extraction reads a header with one ``int.from_bytes`` over the byte slice and splits fields
  with pre-computed shifts and masks; emission joins them back the same way.

Run-time objects (tables, registers, counters, meters, value sets, hash functions) are bound
as module globals of the generated code by ``bind``; the pipeline owns them.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable
from typing import Any

from p4switch import ir

from . import hashes, registry, runtime, varbit
from .emit import (
    AGG,
    BuildError,
    const_int,
    enum_member,
    fattr,
    fpath,
    header_leaves,
    mask,
    pyname,
    stack_size,
    successors,
    unit_pieces,
)
from .exits import ExitAnalysis

# --------------------------------------------------------------------------------------------
# The module: classes for types, then functions for blocks
# --------------------------------------------------------------------------------------------


#: ``flatten``'s width of a value that has none (an error, an enum without underlying type)
NO_WIDTH = -2

class Module:
    """Collects generated source and the globals it needs; ``compile`` execs it once."""

    def __init__(self, program: ir.Program) -> None:
        self.program = program
        self.lines: list[str] = []
        self.globals: dict[str, Any] = {}
        self._classes: dict[Any, str] = {}
        self._bound: dict[int, str] = {}
        self._layouts: dict[Any, Any] = {}
        self._n = 0
        self.globals.update(
            _Stack=runtime.Stack,
            _PErr=runtime.ParserErrorSignal,
            _Exit=runtime.ExitSignal,
            _into=runtime.assign_into,
            _PktErr=runtime.PacketError,
            _Assert=runtime.AssertSignal,
            _div=runtime.div,
            _mod=runtime.mod,
            _ifb=int.from_bytes,
        )
        for name, fn in hashes.ALGORITHMS.items():
            self.globals["_H_" + name] = fn
        # C implementations bound directly (no Python wrapper frame per hash)
        self.globals["_H_crc16"] = hashes._crc16_arc
        self.globals["_H_crc32"] = hashes.zlib.crc32
        self.globals["_H_csum16_int"] = hashes.csum16_int

    def fresh(self, prefix: str) -> str:
        self._n += 1
        return f"{prefix}{self._n}"

    def bind(self, obj: Any, prefix: str = "G") -> str:
        """A global name for a run-time object."""
        key = id(obj)
        if key not in self._bound:
            name = self.fresh("_" + prefix)
            self.globals[name] = obj
            self._bound[key] = name
        return self._bound[key]

    # types -----------------------------------------------------------------------------------
    def cls(self, t: ir.Type) -> str:
        """Name of the generated class for a header or struct type."""
        if t in self._classes:
            return self._classes[t]
        if isinstance(t, ir.HeaderType):
            name = self.fresh("H_" + re.sub(r"\W", "_", t.name) + "_")
        elif isinstance(t, ir.StructType):
            name = self.fresh("S_" + re.sub(r"\W", "_", t.name) + "_")
        else:
            raise BuildError(f"no class for type {t}")
        self._classes[t] = name
        fields = [f for f in t.fields]
        for f in fields:  # nested classes first
            if isinstance(f.type, ir.HeaderType | ir.StructType):
                self.cls(f.type)
            elif isinstance(f.type, ir.StackType):
                self.cls(f.type.elem)
        is_hdr = isinstance(t, ir.HeaderType)
        # Scalars default at class level (no per-packet initialisation); instances get a
        # __dict__ entry only for what is written. Nested aggregates are built in __init__.
        out = [f"class {name}:"]
        if is_hdr:
            out.append("    _v = False")
        nested = []
        for f in fields:
            if isinstance(f.type, ir.HeaderType | ir.StructType | ir.StackType):
                nested.append(f)
            else:
                out.append(f"    {fattr(f.name)} = {self.default(f.type)}")
        out.append(f"    _fields = {tuple(fattr(f.name) for f in fields)!r}")
        if nested:
            out.append("    def __init__(self):")
            for f in nested:
                out.append(f"        self.{fattr(f.name)} = {self.default(f.type)}")
        out.append("    def copy(self):")
        out.append(f"        c = {name}.__new__({name})")
        out.append("        c.__dict__.update(self.__dict__)")
        for f in nested:
            a = fattr(f.name)
            out.append(f"        c.{a} = self.{a}.copy()")
        out.append("        return c")
        if isinstance(t, ir.HeaderType) and t.varbit is not None:
            out.extend(varbit.pack_method(t))
        elif isinstance(t, ir.HeaderType):
            out.append("    def _pack(self):")
            out.append(f"        return {self.pack_expr(t, 'self')}")
        self.lines.extend(out)
        self.lines.append("")
        return name

    def default(self, t: ir.Type) -> str:
        if isinstance(t, ir.BoolType):
            return "False"
        if isinstance(t, ir.VarbitType):
            return "(0, 0)"  # (length in bits, value)
        if isinstance(t, ir.HeaderType | ir.StructType):
            return f"{self.cls(t)}()"
        if isinstance(t, ir.StackType):
            return f"_Stack([{self.cls(t.elem)}() for _ in range({t.size})])"
        return "0"

    def layout(self, t: ir.HeaderType) -> tuple[str, list[tuple[list[int], list[tuple[ir.Field, int, int]]]]]:
        """The header cut into byte-aligned units: (struct format name, units); a unit is
        (its piece widths in bits, [(field, width, shift within the unit)]). Pieces are the
        1/2/4/8-byte integers ``struct`` reads, so extraction is one C call plus small shifts."""
        if t in self._layouts:
            return self._layouts[t]
        w = t.width
        if w % 8:
            raise BuildError(f"header {t.name} is {w} bits wide, not a whole number of bytes",
                             t.loc)
        units: list[tuple[list[int], list[tuple[ir.Field, int, int]]]] = []
        cur: list[tuple[ir.Field, int]] = []
        bits = 0
        fmt = "!"
        for f in header_leaves(t):
            fw = ir.type_width(f.type)
            cur.append((f, fw))
            bits += fw
            if bits % 8 == 0:
                nbytes = bits // 8
                pieces = []
                while nbytes:
                    for size, code in ((8, "Q"), (4, "I"), (2, "H"), (1, "B")):
                        if nbytes >= size:
                            pieces.append(size * 8)
                            fmt += code
                            nbytes -= size
                            break
                fields = []
                shift = bits
                for fld, fw2 in cur:
                    shift -= fw2
                    fields.append((fld, fw2, shift))
                units.append((pieces, fields))
                cur, bits = [], 0
        name = self.bind(struct.Struct(fmt), "ST")
        self._layouts[t] = (name, units)
        return self._layouts[t]

    def pack_expr(self, t: ir.HeaderType, var: str,
                  field_code: Callable[[ir.Field], str] | None = None) -> str:
        """Expression giving the bytes of header object ``var`` (or of the fields whose code
        ``field_code`` gives)."""
        if not t.fields:
            return "b''"
        sname, units = self.layout(t)
        args = []
        for pieces, fields in units:
            parts = []
            for f, fw, shift in fields:
                v = field_code(f) if field_code else f"{var}.{fpath(f.name)}"
                if isinstance(f.type, ir.BitsType) and f.type.signed:
                    v = f"({v} & {mask(fw)})"
                parts.append(f"({v} << {shift})" if shift else v)
            args += unit_pieces(" | ".join(parts), pieces, mask_top=True)
        return f"{sname}.pack({', '.join(args)})"

    def compile(self, filename: str = "<p4switch>") -> dict[str, Any]:
        src = "\n".join(self.lines) + "\n"
        self.source = src
        ns = dict(self.globals)
        exec(compile(src, filename, "exec"), ns)  # noqa: S102 - our own generated code
        return ns


# --------------------------------------------------------------------------------------------
# Expressions and statements of one block
# --------------------------------------------------------------------------------------------


class BlockGen(ir.Visitor):
    """Generates the functions of one parser or control.

    ``resolve_instance(name)`` gives the ExternInstance for an instance name;
    ``runtime_obj(inst)`` the pipeline's run-time object for it; ``table_state(table)`` the
    run-time table."""

    def __init__(
        self,
        mod: Module,
        block: ir.Parser | ir.Control,
        *,
        kind: str,
        resolve_instance: Callable[[str], ir.ExternInstance],
        runtime_obj: Callable[[ir.ExternInstance | ir.ValueSet], Any],
        table_state: Callable[[ir.Table], Any],
        drop_port: int,
        sm_var: str | None,
    ) -> None:
        self.mod = mod
        self.block = block
        self.kind = kind  # "parser", "control", "deparser"
        self.prog = mod.program
        self.resolve_instance = resolve_instance
        self.runtime_obj = runtime_obj
        self.table_state = table_state
        self.drop_port = drop_port
        self.lv_names: set[str] = set()
        if isinstance(block, ir.Control):
            self.lv_names = {d.name for d in block.locals}
        self.loops: list[ir.For] = []  # the loops being generated, innermost last
        self.exits = ExitAnalysis(mod.program, block.tables if isinstance(block, ir.Control)
                                  else {})
        self.pkt_param: str | None = None
        self.params: list[str] = []
        for p in block.params:
            if isinstance(p.type, ir.ExternType) and p.type.name in ("packet_in", "packet_out"):
                self.pkt_param = p.name
            else:
                self.params.append(pyname(p.name))
        self.sm_var = sm_var
        self.lines: list[str] = []
        self.ind = 1
        self.in_parser = kind == "parser"
        self.action_outs: list[str] | None = None  # in an action with out params
        self.action_fns: dict[str, str] = {}
        self.table_fns: dict[str, str] = {}
        # (table name, action key) -> function of an action with bound directional arguments
        self.bound_fns: dict[tuple[str, str], str] = {}
        # where per-packet context lives in the generated code (the fused generator keeps
        # these in locals instead of a Ctx object)
        self.c_plen = "_ctx.plen"
        self.c_now = "_ctx.now"
        self.c_payload = "_ctx.payload"
        self.c_ckerr = "_ctx.checksum_error"
        self.c_meter = "_ctx.meter_colour"
        self.c_trunc = "_ctx.truncate"

    # -- helpers ---------------------------------------------------------------------------
    def w(self, line: str) -> None:
        self.lines.append("    " * self.ind + line)

    def err(self, name: str) -> int:
        try:
            return self.prog.error_code(name)
        except ValueError:
            raise BuildError(f"error.{name} is not declared") from None

    def var(self, name: str) -> str:
        if name in self.lv_names:
            return "_lv." + pyname(name)
        return pyname(name)

    # -- expressions -----------------------------------------------------------------------
    def ex(self, e: ir.Expr) -> str:
        """Python code of expression ``e``: one ``visit_<class>`` per IR expression."""
        return self.visit(e)

    def generic(self, node: Any, *args: Any) -> Any:
        what = "statement" if isinstance(node, ir.Stmt) else "expression"
        raise BuildError(f"unsupported {what} {type(node).__name__}")

    def visit_Const(self, e: ir.Const) -> str:
        t = e.type
        if isinstance(t, ir.BoolType):
            return "True" if e.value else "False"
        if isinstance(e.value, str):
            return repr(e.value)
        v = int(e.value)
        if isinstance(t, ir.BitsType):
            v = v & mask(t.width) if not t.signed else _wrap_const(v, t.width)
        return str(v) if v >= 0 else f"({v})"

    def visit_Var(self, e: ir.Var) -> str:
        return self.var(e.name)

    def visit_Member(self, e: ir.Member) -> str:
        bt = e.base.type
        if isinstance(bt, ir.StackType):
            return self.stack_prop(e.base, e.field)
        return f"{self.ex(e.base)}.{fattr(e.field)}"

    def visit_StackElem(self, e: ir.StackElem) -> str:
        s = self.ex(e.stack)
        if isinstance(e.index, ir.Const):
            i = const_int(e.index)
            size = stack_size(e.stack)
            if not 0 <= i < size:
                raise BuildError(f"stack index {i} out of bounds")
            return f"{s}.h[{i}]"
        return f"_sget({s}, {self.ex(e.index)})"

    def visit_StackNext(self, e: ir.StackNext) -> str:
        return f"_snext({self.ex(e.stack)})"

    def visit_StackLast(self, e: ir.StackLast) -> str:
        return f"_slast({self.ex(e.stack)})"

    def visit_StackProp(self, e: ir.StackProp) -> str:
        return self.stack_prop(e.stack, e.prop)

    def visit_Slice(self, e: ir.Slice) -> str:
        m = mask(e.hi - e.lo + 1)
        b = self.ex(e.base)
        return f"(({b} >> {e.lo}) & {m})" if e.lo else f"({b} & {m})"

    def visit_Concat(self, e: ir.Concat) -> str:
        wr = ir.type_width(e.right.type)
        r = self.ex(e.right)
        if isinstance(e.right.type, ir.BitsType) and e.right.type.signed:
            r = f"({r} & {mask(wr)})"
        elif isinstance(e.right.type, ir.BoolType):
            r = f"int({r})"
        return f"(({self.ex(e.left)} << {wr}) | {r})"

    def visit_Cast(self, e: ir.Cast) -> str:
        return self.cast(e)

    def visit_Unary(self, e: ir.Unary) -> str:
        t = e.type
        a = self.ex(e.operand)
        if e.op == "!":
            return f"(not {a})"
        if e.op == "~":
            if isinstance(t, ir.BitsType) and not t.signed:
                return f"({a} ^ {mask(t.width)})"
            return f"(~{a})"
        if e.op == "-":
            return self.wrap(f"-{a}", t)
        raise BuildError(f"unknown unary operator {e.op}")

    def visit_Binary(self, e: ir.Binary) -> str:
        return self.binary(e)

    def visit_Mux(self, e: ir.Mux) -> str:
        return f"({self.ex(e.then)} if {self.ex(e.cond)} else {self.ex(e.else_)})"

    def visit_IsValid(self, e: ir.IsValid) -> str:
        return f"{self.ex(e.header)}._v"

    def visit_TableHit(self, e: ir.TableHit) -> str:
        fn = self.table_fn(e.table)
        hit = f"({fn}({self.call_args()})[3] is not None)"
        return f"(not {hit})" if e.negate else hit

    def visit_Lookahead(self, e: ir.Lookahead) -> str:
        return self.lookahead(e.type)

    def visit_ListExpr(self, e: ir.ListExpr) -> str:
        t = e.type
        if isinstance(t, ir.HeaderType | ir.StructType):
            tmp = self.mod.cls(t)
            vals = ", ".join(self.ex(i) for i in e.items)
            fn = "_mkh" if isinstance(t, ir.HeaderType) else "_mks"
            return f"{fn}({tmp}, ({vals}{',' if len(e.items) == 1 else ''}))"
        return "(" + "".join(self.ex(i) + ", " for i in e.items) + ")"

    def stack_prop(self, stack: ir.Expr, prop: str) -> str:
        s = self.ex(stack)
        if prop == "size":
            return str(stack_size(stack))
        if prop == "nextIndex":
            return f"{s}.n"
        if prop == "lastIndex":
            return f"(({s}.n - 1) & 0xFFFFFFFF)"
        raise BuildError(f"unknown stack property {prop}")

    def wrap(self, code: str, t: ir.Type) -> str:
        if isinstance(t, ir.BitsType):
            if t.signed:
                h = 1 << (t.width - 1)
                return f"((({code}) + {h} & {mask(t.width)}) - {h})"
            return f"(({code}) & {mask(t.width)})"
        return f"({code})"

    def cast(self, e: ir.Cast) -> str:
        t, s = e.type, e.expr.type
        a = self.ex(e.expr)
        if isinstance(s, ir.EnumType) and s.underlying is not None:
            s = s.underlying
        if isinstance(t, ir.EnumType) and t.underlying is not None:
            t = t.underlying
        if isinstance(t, ir.BoolType):
            return a if isinstance(s, ir.BoolType) else f"({a} != 0)"
        if isinstance(t, ir.BitsType):
            if isinstance(s, ir.BoolType):
                return f"(1 if {a} else 0)"
            if isinstance(s, ir.BitsType) and s.signed == t.signed and s.width <= t.width:
                return a
            if isinstance(s, ir.BitsType) and not s.signed and t.signed and s.width < t.width:
                return a
            return self.wrap(a, t)
        return a

    def binary(self, e: ir.Binary) -> str:
        op, t = e.op, e.type
        a, b = self.ex(e.left), self.ex(e.right)
        if op in ("==", "!=", "<", "<=", ">", ">="):
            if isinstance(e.left.type, ir.HeaderType | ir.StructType | ir.StackType):
                eq = f"_eq({a}, {b})"
                return eq if op == "==" else f"(not {eq})"
            return f"({a} {op} {b})"
        if op == "&&":
            return f"({a} and {b})"
        if op == "||":
            return f"({a} or {b})"
        if op in ("&", "|", "^"):
            return f"({a} {op} {b})"
        if op in ("+", "-", "*"):
            return self.wrap(f"{a} {op} {b}", t)
        if op in ("/", "%"):
            if isinstance(e.right, ir.Const) and const_int(e.right) > 0 and not _signed(t):
                return f"({a} {'//' if op == '/' else '%'} {b})"
            return self.wrap(f"{'_div' if op == '/' else '_mod'}({a}, {b})", t)
        if op == "<<":
            if not isinstance(t, ir.BitsType):
                return f"({a} << {b})"
            if isinstance(e.right, ir.Const):
                n = const_int(e.right)
                return "0" if n >= t.width else self.wrap(f"{a} << {n}", t)
            return f"_shl({a}, {b}, {t.width}, {int(t.signed)})"
        if op == ">>":
            return f"({a} >> {b})"
        if op in ("|+|", "|-|"):
            sym = "+" if op == "|+|" else "-"
            if isinstance(t, ir.BitsType):
                if t.signed:
                    h = 1 << (t.width - 1)
                    return f"max(min({a} {sym} {b}, {h - 1}), {-h})"
                return f"max(min({a} {sym} {b}, {mask(t.width)}), 0)"
            return f"({a} {sym} {b})"
        raise BuildError(f"unknown operator {op}")

    def lookahead(self, t: ir.Type) -> str:
        if not self.in_parser:
            raise BuildError("lookahead outside a parser")
        w = ir.type_width(t)
        nbytes = (w + 7) // 8
        pad = nbytes * 8 - w
        raw = f"_look(_pkt, _pos, {nbytes})"
        if isinstance(t, ir.HeaderType):
            return f"_hdr_from_int({self.mod.cls(t)}, {raw} >> {pad}, {self.fields_spec(t)!r})"
        v = f"({raw} >> {pad})" if pad else raw
        if isinstance(t, ir.BitsType) and t.signed:
            return self.wrap(v, t)
        if isinstance(t, ir.BoolType):
            return f"({v} != 0)"
        return v

    @staticmethod
    def fields_spec(t: ir.HeaderType) -> tuple[tuple[str, int, int], ...]:
        out = []
        for f in header_leaves(t):
            kind = 0
            if isinstance(f.type, ir.BitsType) and f.type.signed:
                kind = 1
            elif isinstance(f.type, ir.BoolType):
                kind = 2
            out.append((fpath(f.name), ir.type_width(f.type), kind))
        return tuple(out)

    def call_args(self) -> str:
        return ", ".join([*self.params, "_lv", "_ctx"])

    # -- l-values --------------------------------------------------------------------------
    def assign(self, lhs: ir.Expr, rhs_code: str) -> None:
        if isinstance(lhs, ir.Slice):
            m = mask(lhs.hi - lhs.lo + 1)
            cur = self.ex(lhs.base)
            code = f"({cur} & {~(m << lhs.lo) & mask(ir.type_width(lhs.base.type))}) | (({rhs_code} & {m}) << {lhs.lo})"
            if _signed(lhs.base.type):
                code = self.wrap(code, lhs.base.type)
            self.assign(lhs.base, code)
            return
        if isinstance(lhs, ir.StackElem) and not isinstance(lhs.index, ir.Const):
            self.w(f"_sset({self.ex(lhs.stack)}, {self.ex(lhs.index)}, {rhs_code})")
            return
        if isinstance(lhs, ir.StackNext | ir.StackLast):
            fn = "_snext_i" if isinstance(lhs, ir.StackNext) else "_slast_i"
            s = self.ex(lhs.stack)
            self.w(f"{s}.h[{fn}({s})] = {rhs_code}")
            return
        if (isinstance(lhs, ir.Var) and isinstance(lhs.type, AGG)
                and lhs.name not in self.lv_names and pyname(lhs.name) in self.params):
            # the parameter names the caller's object: rebinding the name would lose the write
            self.w(f"_into({self.var(lhs.name)}, {rhs_code})")
            return
        self.w(f"{self.ex(lhs)} = {rhs_code}")

    def value(self, e: ir.Expr) -> str:
        """Code for the value of ``e`` as an assignment source (copies aggregates)."""
        code = self.ex(e)
        if isinstance(e.type, ir.HeaderType | ir.StructType | ir.StackType) and not isinstance(
            e, ir.ListExpr | ir.Lookahead
        ):
            return f"{code}.copy()"
        return code

    # -- statements ------------------------------------------------------------------------
    def stmts(self, ss: list[ir.Stmt]) -> None:
        start = len(self.lines)
        for s in ss:
            self.stmt(s)
        if len(self.lines) == start:
            self.w("pass")

    def if_else(self, cond: str, s: ir.If) -> None:
        """``if cond:`` with ``s``'s branches (no ``else:`` for an empty one)."""
        self.w(f"if {cond}:")
        self.ind += 1
        self.stmts(s.then.stmts)
        self.ind -= 1
        if s.else_ is not None and s.else_.stmts:
            self.w("else:")
            self.ind += 1
            self.stmts(s.else_.stmts)
            self.ind -= 1

    def stmt(self, s: ir.Stmt) -> None:
        """Emit statement ``s``: one ``visit_<class>`` per IR statement."""
        self.visit(s)

    def visit_Block(self, s: ir.Block) -> None:
        n = s.copy_out
        if n and self.exits.stmts(s.stmts[:-n]):
            self.exit_guarded(lambda: self.stmts(s.stmts[:-n]),
                              lambda _x: self.stmts(s.stmts[-n:]))
        else:
            self.stmts(s.stmts)

    def visit_VarDecl(self, s: ir.VarDecl) -> None:
        code = self.value(s.init) if s.init is not None else self.mod.default(s.type)
        self.w(f"{self.var(s.name)} = {code}")

    def visit_Assign(self, s: ir.Assign) -> None:
        self.assign(s.lhs, self.value(s.rhs))

    def visit_If(self, s: ir.If) -> None:
        self.if_else(self.ex(s.cond), s)

    def visit_ApplyTable(self, s: ir.ApplyTable) -> None:
        self.table_code(s.table, self.mod.fresh("_t"))

    def visit_SwitchAction(self, s: ir.SwitchAction) -> None:
        tmp = self.mod.fresh("_t")
        self.table_code(s.table, tmp)
        tmp = f"{tmp}[0]"
        self.switch(tmp, [(c.actions, c.body) for c in s.cases], repr)

    def visit_SwitchValue(self, s: ir.SwitchValue) -> None:
        tmp = self.mod.fresh("_s")
        self.w(f"{tmp} = {self.ex(s.expr)}")
        cases = [
            (None if c.values is None else [self.ex(v) for v in c.values], c.body)
            for c in s.cases
        ]
        self.switch(tmp, cases, str)

    def visit_ActionCall(self, s: ir.ActionCall) -> None:
        self.action_call(s)

    def visit_ExternCall(self, s: ir.ExternCall) -> None:
        self.extern_call(s)

    def visit_HeaderMethod(self, s: ir.HeaderMethod) -> None:
        h = self.ex(s.header)
        if s.method == "setValid":
            self.w(f"{h}._v = True")
        elif s.method == "setInvalid":
            self.w(f"{h}._v = False")
        else:
            raise BuildError(f"unknown header method {s.method}")

    def visit_StackMethod(self, s: ir.StackMethod) -> None:
        self.w(f"_s{s.method}({self.ex(s.stack)}, {s.count})")

    def visit_Extract(self, s: ir.Extract) -> None:
        if isinstance(s.header.type, ir.HeaderType) and s.header.type.varbit is not None:
            varbit.gen_extract(self, s.header, s.bits)
        else:
            self.extract(s.header)

    def visit_Advance(self, s: ir.Advance) -> None:
        if isinstance(s.bits, ir.Const) and const_int(s.bits) % 8:
            raise BuildError("advance by a number of bits that is not a multiple of 8")
        n = self.mod.fresh("_n")
        self.w(f"{n} = {self.ex(s.bits)} >> 3")
        self.w(f"if _pos + {n} > _plen: raise _PErr({self.err('PacketTooShort')})")
        self.w(f"_pos += {n}")

    def visit_Emit(self, s: ir.Emit) -> None:
        self.emit(s.header)

    def visit_For(self, s: ir.For) -> None:
        self.loop(s)

    def visit_Break(self, s: ir.Break) -> None:
        self.w("break")

    def visit_Continue(self, s: ir.Continue) -> None:
        for u in self.loops[-1].update:  # the update runs before the next test
            self.stmt(u)
        self.w("continue")

    def visit_Exit(self, s: ir.Exit) -> None:
        self.w("raise _Exit()")

    def visit_Return(self, s: ir.Return) -> None:
        if self.action_outs is not None:
            self.w(f"return ({', '.join(self.action_outs)},)")
        else:
            self.w("return")

    def loop(self, s: ir.For) -> None:
        """``for``: a Python ``while`` (break/continue are Python's; ``continue`` repeats the
        update first)."""
        for st in s.init:
            self.stmt(st)
        self.w(f"while {self.ex(s.cond)}:")
        self.ind += 1
        self.loops.append(s)
        self.stmts(s.body.stmts)
        self.loops.pop()
        for u in s.update:
            self.stmt(u)
        self.ind -= 1

    def exit_guarded(self, body: Callable[[], None], copy_out: Callable[[str | None], None],
                     ) -> None:
        """``body``, then ``copy_out(None)``; an ``exit`` inside ``body`` runs
        ``copy_out("_x")`` (``_x`` the ExitSignal) before it goes on ending the control."""
        self.w("try:")
        self.ind += 1
        body()
        self.ind -= 1
        self.w("except _Exit as _x:")
        self.ind += 1
        copy_out("_x")
        self.w("raise")
        self.ind -= 1
        copy_out(None)

    def switch(self, tmp: str, cases: list[tuple[Any, ir.Block | None]], fmt: Callable) -> None:
        pending: list[Any] = []
        first = True
        default_body: ir.Block | None = None
        has_default = False
        for labels, body in cases:
            if labels is None:
                has_default = True
                default_body = body
                continue
            pending.extend(labels)
            if body is None:
                continue
            vals = ", ".join(fmt(v) for v in pending)
            self.w(f"{'if' if first else 'elif'} {tmp} in ({vals},):")
            first = False
            pending = []
            self.ind += 1
            self.stmts(body.stmts)
            self.ind -= 1
        if has_default and default_body is not None:
            if first:
                self.stmts(default_body.stmts)
            else:
                self.w("else:")
                self.ind += 1
                self.stmts(default_body.stmts)
                self.ind -= 1

    # -- parser pieces ---------------------------------------------------------------------
    def unit_field(self, u: str, uw: int, t: ir.Type, fw: int, shift: int) -> str:
        """The value of a ``fw``-bit field of type ``t`` at bit ``shift`` of the ``uw``-bit
        unpacked unit ``u``."""
        v = u if not shift else f"({u} >> {shift})"
        if shift + fw < uw:
            v = f"({v} & {mask(fw)})"
        if isinstance(t, ir.BitsType) and t.signed:
            v = self.wrap(v, t)
        elif isinstance(t, ir.BoolType):
            v = f"({v} != 0)"
        return v

    def extract(self, target: ir.Expr) -> None:
        t = target.type
        if not isinstance(t, ir.HeaderType):
            raise BuildError("extract of something that is not a header")
        w = t.width
        if w % 8:
            raise BuildError(f"header {t.name} is {w} bits wide, not a whole number of bytes",
                             target.loc)
        n = w // 8
        self.w(f"if _pos + {n} > _plen: raise _PErr({self.err('PacketTooShort')})")
        self.extract_target(target)
        if t.fields:
            sname, units = self.mod.layout(t)
            names = []
            k = 0
            for pieces, _ in units:
                for _ in pieces:
                    names.append(f"_u{k}")
                    k += 1
            self.w(f"{', '.join(names)}{',' if len(names) == 1 else ''} = {sname}.unpack_from(_pkt, _pos)")
            k = 0
            for pieces, fields in units:
                if len(pieces) == 1:
                    u = f"_u{k}"
                else:
                    rest = sum(pieces)
                    parts = []
                    for j, pw in enumerate(pieces):
                        rest -= pw
                        parts.append(f"(_u{k + j} << {rest})" if rest else f"_u{k + j}")
                    u = "(" + " | ".join(parts) + ")"
                k += len(pieces)
                uw = sum(pieces)
                for f, fw, shift in fields:
                    self.w(f"_h.{fpath(f.name)} = {self.unit_field(u, uw, f.type, fw, shift)}")
        self.w("_h._v = True")
        self.w(f"_pos += {n}")

    def extract_target(self, target: ir.Expr) -> None:
        """``_h = `` the header extract fills; ``stack.next`` (and a member of a header union
        stack's ``next``, spec 8.20) takes the element at nextIndex and advances it."""
        nxt = target.base if isinstance(target, ir.Member) else target
        if isinstance(nxt, ir.StackNext):
            s = self.ex(nxt.stack)
            self.w(f"if {s}.n >= {stack_size(nxt.stack)}: raise _PErr({self.err('StackOutOfBounds')})")
            member = f".{fattr(target.field)}" if isinstance(target, ir.Member) else ""
            self.w(f"_h = {s}.h[{s}.n]{member}")
            self.w(f"{s}.n += 1")
        else:
            self.w(f"_h = {self.ex(target)}")

    # -- deparser --------------------------------------------------------------------------
    def emit(self, e: ir.Expr) -> None:
        t = e.type
        if isinstance(t, ir.HeaderType):
            h = self.mod.fresh("_e")
            self.w(f"{h} = {self.ex(e)}")
            pack = f"{h}._pack()" if t.varbit is not None else self.mod.pack_expr(t, h)
            self.w(f"if {h}._v: _out.append({pack})")
        elif isinstance(t, ir.StackType) and isinstance(t.elem, ir.StructType):
            self.w(f"for _eu in {self.ex(e)}.h:")  # header unions: each one's valid member
            for f in t.elem.fields:
                self.w(f"    if _eu.{fattr(f.name)}._v: _out.append(_eu.{fattr(f.name)}._pack())")
        elif isinstance(t, ir.StackType):
            self.w(f"for _eh in {self.ex(e)}.h:")
            self.w("    if _eh._v: _out.append(_eh._pack())")
        elif isinstance(t, ir.StructType):
            for f in t.fields:
                self.emit(ir.Member(e, f.name, type=f.type))
        else:
            raise BuildError(f"emit of {t}")

    # -- hash input ------------------------------------------------------------------------
    def flatten(self, e: ir.Expr) -> list[tuple[str, int, str | None]]:
        """(value code, width, validity code or None) of each scalar of a field list, in order."""
        t = e.type
        if isinstance(e, ir.ListExpr) and not isinstance(t, ir.HeaderType | ir.StructType):
            out = []
            for i in e.items:
                out.extend(self.flatten(i))
            return out
        if isinstance(t, ir.HeaderType):
            out = []
            for f in t.fields:
                out.extend(self.flatten(ir.Member(e, f.name, type=f.type)))
            return out
        if isinstance(t, ir.StructType):
            out = []
            for f in t.fields:
                out.extend(self.flatten(ir.Member(e, f.name, type=f.type)))
            return out
        if isinstance(t, ir.StackType):
            out = []
            for idx in range(t.size):
                out.extend(self.flatten(ir.StackElem(e, ir.Const(idx, type=ir.InfIntType()),
                                                     type=t.elem)))
            return out
        # a varbit's width is its run-time length: VARBIT marks it (varbit.py); an error or an
        # enum without an underlying type has none (NO_WIDTH: log_msg prints it, hash_input
        # refuses it)
        width = varbit.VARBIT if isinstance(t, ir.VarbitType) else (
            NO_WIDTH if isinstance(t, ir.EnumType | ir.ErrorType) and getattr(t, "underlying", None)
            is None else ir.type_width(t))
        code = self.ex(e)
        if isinstance(t, ir.BitsType) and t.signed:
            code = f"({code} & {mask(width)})"
        elif isinstance(t, ir.BoolType):
            code = f"int({code})"
        valid = None
        owner = e.base if isinstance(e, ir.Member) else None
        # a field of a struct-typed header field belongs to the header around the struct
        while isinstance(owner, ir.Member) and isinstance(owner.type, ir.StructType) and \
                isinstance(owner.base.type, ir.HeaderType | ir.StructType):
            owner = owner.base
            if isinstance(owner.type, ir.HeaderType):
                break
        if owner is not None and isinstance(owner.type, ir.HeaderType):
            valid = self.ex(ir.IsValid(owner, type=ir.BoolType()))
        return [(code, width, valid)]

    def packed_input(self, items: list[tuple[str, int, str | None]], align: int) -> str:
        """An expression for the hash input of ``items`` (all taken as valid): one precompiled
        ``struct.pack`` of byte-aligned units, each unit the OR of its shifted fields, cut into
        the 8/4/2/1-byte integers struct packs (the last unit zero-padded to a byte). Bytes for
        ``align=8``; for ``align=16`` the int of the bytes padded to whole 16-bit words."""
        units: list[tuple[list[tuple[str, int]], int]] = []
        cur: list[tuple[str, int]] = []
        bits = 0
        for code, width, _ in items:
            cur.append((code, width))
            bits += width
            if bits % 8 == 0:
                units.append((cur, 0))
                cur, bits = [], 0
        if cur:
            units.append((cur, -bits & 7))
        fmt = "!"
        args: list[str] = []
        nbytes_total = 0
        for fields, pad in units:
            parts = []
            shift = pad
            for code, width in reversed(fields):
                parts.append(f"({code} << {shift})" if shift else code)
                shift += width
            u = " | ".join(reversed(parts))
            nbytes = shift // 8
            nbytes_total += nbytes
            pieces = []
            while nbytes:
                for size, c in ((8, "Q"), (4, "I"), (2, "H"), (1, "B")):
                    if nbytes >= size:
                        pieces.append(size * 8)
                        fmt += c
                        nbytes -= size
                        break
            if len(pieces) == 1:
                args.append(u)
                continue
            if len(parts) > 1:
                u = f"({u})"
            rest = shift
            for pw in pieces:
                rest -= pw
                args.append(f"(({u} >> {rest}) & {mask(pw)})" if rest else f"({u} & {mask(pw)})")
        if align == 16 and nbytes_total & 1:
            fmt += "x"
        st = self.mod.bind(struct.Struct(fmt), "ST")
        code = f"{st}.pack({', '.join(args)})"
        return f"_ifb({code}, 'big')" if align == 16 else code

    def hash_input(self, data: ir.Expr, payload: bool = False, align: int = 8) -> str:
        """Emit code building the hash input; returns the variable holding it: bytes (fields
        concatenated MSB first, zero-padded at the end to a whole byte, fields of invalid
        headers skipped), or with ``align=16`` an int padded to whole 16-bit words (csum16).
        The common case — every header named in the list is valid — is one ``struct.pack``;
        otherwise the fields of valid headers are shifted into an int."""
        items = self.flatten(data)
        if any(w == NO_WIDTH for _, w, _ in items):
            raise BuildError("a hash or checksum input holds a value without a width (an error "
                             "or an enum without an underlying type)", data.loc)
        b = self.mod.fresh("_hb")
        if not items:
            self.w(f"{b} = {'0' if align == 16 else repr(b'')}")
        elif any(w == varbit.VARBIT for _, w, _ in items):
            self.shifted_input(b, items, align)
        else:
            valids = list(dict.fromkeys(v for _, _, v in items if v is not None))
            if valids:
                self.w(f"if {' and '.join(valids)}:")
                self.w(f"    {b} = {self.packed_input(items, align)}")
                self.w("else:")
                self.ind += 1
                self.shifted_input(b, items, align)
                self.ind -= 1
            else:
                self.w(f"{b} = {self.packed_input(items, align)}")
        if payload:
            self.w(f"{b} = {b} + {self.c_payload}")
        return b

    def shifted_input(self, b: str, items: list[tuple[str, int, str | None]], align: int) -> None:
        """The hash input built as an int, skipping fields of invalid headers."""
        acc, wv = self.mod.fresh("_ha"), self.mod.fresh("_hw")
        self.w(f"{acc} = 0")
        self.w(f"{wv} = 0")
        groups: list[tuple[str | None, list[tuple[str, int]]]] = []
        for code, width, valid in items:
            if groups and groups[-1][0] == valid and varbit.VARBIT not in (
                    width, groups[-1][1][-1][1]):
                groups[-1][1].append((code, width))
            else:
                groups.append((valid, [(code, width)]))
        for valid, fields in groups:
            if fields[0][1] == varbit.VARBIT:
                line = varbit.shift_in(acc, wv, fields[0][0])
                self.w(f"if {valid}: {line}" if valid else line)
                continue
            gw = sum(w for _, w in fields)
            parts = []
            shift = 0
            for code, width in reversed(fields):
                parts.append(f"({code} << {shift})" if shift else code)
                shift += width
            line = f"{acc} = ({acc} << {gw}) | {' | '.join(reversed(parts))}; {wv} += {gw}"
            self.w(f"if {valid}: {line}" if valid else line)
        if align == 16:
            self.w(f"{b} = {acc} << (-{wv} & 15)")
        else:
            self.w(f"{wv}_p = -{wv} & 7")
            self.w(f"{b} = ({acc} << {wv}_p).to_bytes(({wv} + {wv}_p) >> 3, 'big')")

    def checksum_value(self, algo: ir.Expr, data: ir.Expr, payload: bool) -> str:
        """Emit the hash input and return an expression for the algorithm's value over it."""
        fn = self.algo_fn(algo)
        if fn == "_H_csum16" and not payload:
            # csum16 inline: the ones'-complement sum of the words of x is x mod 0xFFFF, except
            # that a non-zero x whose sum is a multiple of 0xFFFF sums to 0xFFFF (csum16_int)
            b = self.hash_input(data, align=16)
            self.w(f"{b} = {b} % 65535 or (65535 if {b} else 0)")
            return f"(65535 - {b})"
        return f"{fn}({self.hash_input(data, payload=payload)})"

    # -- externs ---------------------------------------------------------------------------
    def algo_fn(self, c: ir.Expr) -> str:
        name = enum_member(c)
        try:
            hashes.algorithm(name)
        except ValueError as exc:
            raise BuildError(str(exc)) from None
        return "_H_" + name

    def extern_call(self, s: ir.ExternCall) -> None:
        """An extern function or method call: its code comes from the extern registry."""
        if s.instance is not None:
            self.method_call(s)
            return
        fn = registry.extern_function(s.method)
        if fn is None:
            raise BuildError(f"unsupported extern function {s.method}", s.loc)
        fn.general(self, s)

    def method_call(self, s: ir.ExternCall) -> None:
        inst = self.resolve_instance(s.instance)  # type: ignore[arg-type]  # a method call always names its instance
        obj = self.runtime_obj(inst)
        g = self.mod.bind(obj, "X")
        kind = registry.extern_object(inst.type_name)
        gen = kind.methods.get(s.method) if kind is not None else None
        if gen is None:
            raise BuildError(f"unsupported extern method {inst.type_name}.{s.method}", s.loc)
        gen(self, s, obj, g)

    # -- actions and tables ----------------------------------------------------------------
    def action_call(self, s: ir.ActionCall) -> None:
        self.call_action(s.action, s.args, [])

    def call_action(self, key: str, args: list[ir.Expr], data: list[str]) -> None:
        """Call action ``key`` with ``args`` for its leading parameters and the codes ``data``
        after them: scalar out/inout arguments are copied back from the returned tuple."""
        act = self.prog.actions[key]
        fn = self.action_fn(key)
        codes = []
        for p, x in zip(act.params, args, strict=False):
            if not isinstance(p.type, AGG):
                codes.append(self.ex(x))
            else:  # copied in (spec 6.8): the action must not see or make writes through it
                codes.append(self.mod.default(p.type) if p.direction == "out" else self.value(x))
        outs = [(p, x) for p, x in zip(act.params, args, strict=False)
                if p.direction in ("out", "inout")]
        call = f"{fn}({', '.join([self.call_args(), *codes, *data])})"
        if not outs:
            self.w(call)
            return
        tmp = self.mod.fresh("_r")

        def copy_out(src: str) -> None:
            for k, (_, x) in enumerate(outs):
                self.assign(x, f"{src}[{k}]")

        if self.exits.action(key):  # the action sets the values it had on ExitSignal.outs
            self.exit_guarded(lambda: self.w(f"{tmp} = {call}"),
                              lambda x: copy_out(f"{x}.outs" if x else tmp))
        else:
            self.w(f"{tmp} = {call}")
            copy_out(tmp)

    def bound_fn(self, table: ir.Table, ref: ir.ActionRef) -> str:
        """A function running ``ref``'s action from ``table`` with the directional arguments
        its actions list binds (``ir.ActionRef.args``): it takes only the action data, like an
        unbound action's function, so table hits carry it the same way."""
        key = (table.name, ref.action)
        if key in self.bound_fns:
            return self.bound_fns[key]
        act = self.prog.actions[ref.action]
        name = self.mod.fresh("B_" + re.sub(r"\W", "_", act.cp_name.split(".")[-1]) + "_")
        self.bound_fns[key] = name
        saved = (self.lines, self.ind, self.action_outs)
        self.lines, self.ind, self.action_outs = [], 1, None
        data = [f"_d{i}" for i in range(len(act.data_params))]
        self.call_action(ref.action, ref.args, data)
        body = self.lines
        self.lines, self.ind, self.action_outs = saved
        self.funcs.append([f"def {name}({', '.join([self.call_args(), *data])}):", *body, ""])
        return name

    def action_fn(self, key: str) -> str:
        if key in self.action_fns:
            return self.action_fns[key]
        act = self.prog.actions.get(key)
        if act is None:
            raise BuildError(f"unknown action {key}")
        name = self.mod.fresh("A_" + re.sub(r"\W", "_", act.cp_name.split(".")[-1]) + "_")
        self.action_fns[key] = name
        saved = (self.lines, self.ind, self.action_outs)
        self.lines, self.ind = [], 1
        outs = [pyname(p.name) for p in act.params if p.direction in ("out", "inout")]
        self.action_outs = outs or None
        params = [pyname(p.name) for p in act.params]
        body_start = len(self.lines)
        if outs and self.exits.action(key):
            # exit copies out too: the values go to the caller on the ExitSignal
            self.w("try:")
            self.ind += 1
            self.stmts(act.body.stmts)
            self.ind -= 1
            self.w("except _Exit as _x:")
            self.w(f"    _x.outs = ({', '.join(outs)},)")
            self.w("    raise")
        else:
            self.stmts(act.body.stmts)
        if outs:
            self.w(f"return ({', '.join(outs)},)")
        body = self.lines[body_start:]
        self.lines, self.ind, self.action_outs = saved
        head = f"def {name}({', '.join([*self.params, '_lv', '_ctx', *params])}):"
        self.funcs.append([head, *body, ""])
        return name

    def table(self, tname: str) -> tuple[ir.Table, Any]:
        assert isinstance(self.block, ir.Control)
        table = self.block.tables.get(tname)
        if table is None:
            raise BuildError(f"unknown table {tname}")
        return table, self.table_state(table)

    def table_lookup(self, tname: str, ev: str) -> ir.Table:
        """Emit a table's lookup into ``ev`` (the hit tuple) and the update of its direct
        counter and meter; the caller emits the action call."""
        table, state = self.table(tname)
        g = self.mod.bind(state, "TBL")
        keys = [k for k in table.keys if k.match_kind != "selector"]
        kcodes = [self.ex(k.expr) for k in keys]
        if not kcodes:
            key = "None"
        elif len(kcodes) == 1:
            key = kcodes[0]
        else:
            key = "(" + ", ".join(kcodes) + ")"
        sel = [k for k in table.keys if k.match_kind == "selector"]
        if sel:
            sb = self.hash_input(
                ir.ListExpr([k.expr for k in sel], type=ir.TupleType(tuple(k.expr.type for k in sel)))
            )
            self.w(f"{ev} = {g}.lookup_sel({key}, {sb})")
        else:
            self.lookup_code(state, g, key, ev)
        if table.direct_counter or table.direct_meter:
            self.w(f"_n = {ev}[3]")
            if table.direct_counter:
                self.w("if _n is not None:")
                self.w("    _n.packets += 1")
                self.w(f"    _n.bytes += {self.c_plen}")
            if table.direct_meter:
                inst = (self.block.instances.get(table.direct_meter)
                        or self.mod.program.instances.get(table.direct_meter))
                packets = inst is not None and enum_member(inst.args[0]) == "packets"
                units = "1" if packets else self.c_plen  # a packets meter counts packets
                self.w(f"{self.c_meter} = _n.execute_meter({self.c_now}, {units})"
                       " if _n is not None else 0")
        return table

    def table_code(self, tname: str, ev: str) -> None:
        """Emit the application of a table at the current indentation: ``ev`` ends up holding
        the hit tuple (action key, function, args, entry or None on a miss)."""
        table = self.table_lookup(tname, ev)
        self.w(f"{ev}[1]({self.call_args()}, *{ev}[2])")
        # every action of the table needs a function; the table state binds them after exec
        for ref in table.actions:
            if ref.args:
                self.bound_fn(table, ref)
            else:
                self.action_fn(ref.action)

    def lookup_code(self, state: Any, g: str, key: str, ev: str) -> None:
        """``ev`` = the hit tuple of run-time table ``state`` (bound as ``g``) for ``key``:
        exact tables probe their dict, single-key lpm tables their per-prefix-length dicts
        (longest first) inline; anything else calls the table's lookup function."""
        if state.mode == "exact":
            d = self.mod.bind(state._exact, "TD")
            self.w(f"{ev} = {d}.get({key})")
            self.w(f"if {ev} is None: {ev} = {g}.default_hit")
        elif state.mode == "lpm" and state.single:
            k = self.mod.fresh("_lk")
            self.w(f"{k} = {key}")
            self.w(f"for _sh, _d in {g}.lpm_levels:")
            self.w(f"    {ev} = _d.get({k} >> _sh)")
            self.w(f"    if {ev} is not None: break")
            self.w("else:")
            self.w(f"    {ev} = {g}.default_hit")
        else:
            self.w(f"{ev} = {g}.lookup({key})")

    def table_fn(self, tname: str) -> str:
        """A function applying the table (for table applications inside expressions)."""
        if tname in self.table_fns:
            return self.table_fns[tname]
        name = self.mod.fresh("T_" + re.sub(r"\W", "_", tname) + "_")
        self.table_fns[tname] = name
        saved = (self.lines, self.ind)
        self.lines, self.ind = [], 1
        self.table_code(tname, "_e")
        self.w("return _e")
        body = self.lines
        self.lines, self.ind = saved
        self.funcs.append([f"def {name}({self.call_args()}):", *body, ""])
        return name

    # -- whole blocks ----------------------------------------------------------------------
    def gen_control(self, fname: str) -> list[str]:
        assert isinstance(self.block, ir.Control)
        self.funcs: list[list[str]] = []
        lv_cls = None
        if self.block.locals:
            lv_cls = self.mod.fresh("LV_")
            slots = tuple(pyname(d.name) for d in self.block.locals)
            self.mod.lines.extend(
                [f"class {lv_cls}:", f"    __slots__ = {slots!r}", ""]
            )
        self.lines, self.ind = [], 1
        if lv_cls:
            self.w(f"_lv = {lv_cls}()")
            for d in self.block.locals:
                code = self.value(d.init) if d.init is not None else self.mod.default(d.type)
                self.w(f"_lv.{pyname(d.name)} = {code}")
        else:
            self.w("_lv = None")
        if self.kind == "deparser":
            self.w("_out = []")
            self.stmts(self.block.body.stmts)
            self.w("return _out")
        else:
            self.w("try:")
            self.ind += 1
            self.stmts(self.block.body.stmts)
            self.ind -= 1
            self.w("except _Exit:")
            self.w("    pass")
        return self.block_fn(f"def {fname}({', '.join([*self.params, '_ctx'])}):")

    def block_fn(self, head: str) -> list[str]:
        """The block's helper functions, then the function ``head`` with the lines written."""
        out = [line for f in self.funcs for line in f]
        return [*out, head, *self.lines, ""]

    def gen_parser(self, fname: str) -> list[str]:
        assert isinstance(self.block, ir.Parser)
        p = self.block
        self.funcs = []
        self.lines, self.ind = [], 1
        self.w("_lv = None")
        self.w("_pos = 0")
        self.w("_plen = len(_pkt)")
        for d in p.locals:
            code = self.value(d.init) if d.init is not None else self.mod.default(d.type)
            self.w(f"{self.var(d.name)} = {code}")
        self.gen_state_machine(p, "return _pos, _pe.code")
        self.w("return _pos, 0")
        return self.block_fn(f"def {fname}(_pkt, {', '.join([*self.params, '_ctx'])}):")

    def gen_state_machine(self, p: ir.Parser, on_error: str) -> None:
        """The parser's states, from ``start``, in a ``try`` whose ``except _PErr as _pe``
        runs ``on_error``. States with one predecessor are inlined at their transition; the
        others are dispatched from a loop on a state number."""
        preds: dict[str, int] = {"start": 1}
        for st in p.states.values():
            for nxt in successors(st.transition):
                preds[nxt] = preds.get(nxt, 0) + 1
        self.loop_states = {
            n: i for i, n in enumerate(sorted(s for s, c in preds.items() if c > 1 and s in p.states))
        }
        self.w("try:")
        self.ind += 1
        if self.loop_states:
            self.w("_st = -1")
            self.w("while True:")
            self.ind += 1
            self.w("if _st == -1:")
            self.ind += 1
            self.gen_state("start", set())
            self.ind -= 1
            for n, i in self.loop_states.items():
                self.w(f"elif _st == {i}:")
                self.ind += 1
                self.enter_loop_state()
                self.gen_state(n, set())
                self.ind -= 1
            self.ind -= 1
        else:
            self.gen_state("start", set())
        self.ind -= 1
        self.w("except _PErr as _pe:")
        self.w(f"    {on_error}")

    def enter_loop_state(self) -> None:
        """Hook: a dispatched state starts; it may be reached from anywhere."""

    def goto(self, nxt: str, active: set[str]) -> None:
        if nxt in ("accept", "reject"):
            # v1model: reject without an error behaves like accept (the packet goes to ingress)
            self.w("break" if self.loop_states else "pass")
            return
        if nxt in self.loop_states:
            self.w(f"_st = {self.loop_states[nxt]}")
            self.w("continue")
            return
        self.gen_state(nxt, active)

    def gen_state(self, name: str, active: set[str]) -> None:
        st = self.block.states.get(name)  # type: ignore[union-attr]  # states: only a parser block generates states
        if st is None:
            raise BuildError(f"unknown parser state {name}")
        if name in active:
            raise BuildError(f"parser state {name} loops without a join point")
        active = active | {name}
        for s in st.stmts:
            self.stmt(s)
        tr = st.transition
        if tr.select_keys is None:
            self.goto(tr.next_state or "accept", active)
            return
        keys = []
        for k in tr.select_keys:
            tmp = self.mod.fresh("_k")
            self.w(f"{tmp} = {self.ex(k)}")
            keys.append(tmp)
        first = True
        for case in tr.cases:
            conds = []
            for i, ks in enumerate(case.keysets):
                kv = keys[i]
                if isinstance(ks, ir.KeysetValueSet) and ks.keys > 1:  # a struct value_set
                    kv = "(" + ", ".join(keys[i:i + ks.keys]) + ")"
                c = self.keyset_cond(kv, ks)
                if c is not None:
                    conds.append(c)
            cond = " and ".join(conds) if conds else "True"
            self.w(f"{'if' if first else 'elif'} {cond}:")
            first = False
            self.ind += 1
            self.goto(case.next_state, active)
            self.ind -= 1
            if cond == "True":
                return
        if first:
            self.w(f"raise _PErr({self.err('NoMatch')})")
        else:
            self.w("else:")
            self.w(f"    raise _PErr({self.err('NoMatch')})")

    def keyset_cond(self, kv: str, ks: ir.Keyset) -> str | None:
        if isinstance(ks, ir.KeysetDefault):
            return None
        if isinstance(ks, ir.KeysetValue):
            return f"{kv} == {ks.value}"
        if isinstance(ks, ir.KeysetMask):
            return f"{kv} & {ks.mask} == {ks.value & ks.mask}"
        if isinstance(ks, ir.KeysetRange):
            return f"{ks.lo} <= {kv} <= {ks.hi}"
        if isinstance(ks, ir.KeysetValueSet):
            vs = self.block.value_sets.get(ks.name)  # type: ignore[union-attr]  # value_sets: keysets are a parser's
            if vs is None:
                raise BuildError(f"unknown value_set {ks.name}")
            g = self.mod.bind(self.runtime_obj(vs), "VS")
            return f"{g}.match({kv})"
        raise BuildError(f"unsupported keyset {ks!r}")


def _signed(t: ir.Type) -> bool:
    return isinstance(t, ir.BitsType) and t.signed


def _wrap_const(v: int, w: int) -> int:
    h = 1 << (w - 1)
    return ((v + h) & mask(w)) - h

