"""The fused packet path: one generated function per program for ``Pipeline.process``.

``BlockGen`` compiles each block into its own function over header/struct objects, which the
general driver needs (ingress/egress split by queues, clones, multicast, resubmit, recirculate
all copy or re-run those objects). Most programs use none of that in ``process()``: a packet
is parsed, checked, forwarded once and deparsed. For those this module generates a single
function ``(packet bytes, ingress port, now_us) -> ProcessResult`` (and a lean twin for
``process_fast`` returning ``(egress port, bytes)`` or a ``Drop``) in which

* every header field, header validity bit, user-metadata field and standard_metadata field is
  a Python local (``h_f_ipv4_f_ttl``, ``h_f_ipv4__v``, ``m_f_x``, ``s_f_egress_spec``): no
  per-packet objects, no attribute access;
* parser, verify_checksum, ingress, egress, compute_checksum and the deparser run in order
  in that one frame; table actions and directly called actions are inlined (a table hit
  dispatches on its pre-bound action function by identity);
* what the driver does between stages (drop checks, egress_port, timestamps, queue metadata
  of an empty queue) is specialised to the fields the program reads.

Semantics are those of ``Pipeline.process`` with empty queues (see ``pipeline``'s docstring);
the generator refuses (``NotFusable``) anything whose semantics need the general driver:
clone, resubmit, recirculate, digest, log_msg, multicast (a write of ``mcast_grp`` other than
mark_to_drop's zero), header stacks, header-typed lookahead, aggregate values where a
flattened path is not known (``==`` on headers, header-valued ``?:``), ``table.apply().hit``
other than as an ``if`` condition. ``Pipeline`` then keeps using the general driver.
"""

from __future__ import annotations

import re
import struct as _struct
import types
from collections.abc import Callable
from typing import Any

from p4switch import ir

from . import registry
from .codegen import BlockGen, Module
from .emit import (
    AGG,
    SM_ROOT,
    BuildError,
    fattr,
    mask,
    pyname,
    successors,
    unit_pieces,
    valid_terms,
)


class NotFusable(Exception):
    """The program needs the general driver (the message says why)."""


class FusedBlockGen(BlockGen):
    """``BlockGen`` over flattened locals; one instance per block, all sharing ``leaves``."""

    def __init__(self, mod: Module, block: ir.Parser | ir.Control, *, kind: str, prefix: str,
                 roots: dict[str, str], leaves: dict[str, str], slow_fns: dict[str, str],
                 plen: str, facts: _Facts,
                 bound_fns: dict[tuple[str, str], str] | None = None, **kw: Any) -> None:
        super().__init__(mod, block, kind=kind, sm_var=None, **kw)
        self.facts = facts
        self.known: set[str] = set()  # header paths certainly valid at this point
        self.prefix = prefix
        self.roots = roots  # block parameter name -> root prefix ("h", "m", "s")
        self.leaves = leaves  # local name -> its per-packet initial value (shared)
        self.slow_fns = slow_fns  # action key -> name of the general driver's function
        self.slow_bound = bound_fns or {}  # (table, action key) -> same, for bound arguments
        self.in_action = 0
        self.funcs = []
        self.c_plen = plen
        self.c_now = "_now"
        self.c_payload = "_pkt[_ppos:]"
        self.c_ckerr = "_ckerr"
        self.c_meter = "_mcol"
        self.c_trunc = "_trunc"
        self.writing = False  # ex() is naming an assignment target, not reading it
        self.flat_reads: list[str] | None = None  # field reads of the hash input being built

    # -- names -----------------------------------------------------------------------------
    def var(self, name: str) -> str:
        return f"{self.prefix}{pyname(name)}"

    def path(self, e: ir.Expr) -> str:
        """The local-name prefix of an aggregate l-value (``hdr.ipv4`` -> ``h_f_ipv4``)."""
        if isinstance(e, ir.Var):
            if e.name in self.roots:
                return self.roots[e.name]
            return self.var(e.name)
        if isinstance(e, ir.Member) and isinstance(e.base.type, ir.HeaderType | ir.StructType):
            return f"{self.path(e.base)}_{fattr(e.field)}"
        raise NotFusable(f"aggregate expression {type(e).__name__}")

    def leaf(self, name: str, t: ir.Type) -> str:
        if name not in self.leaves:
            self.leaves[name] = "False" if isinstance(t, ir.BoolType) else "0"
        return name

    def leaves_of(self, p: str, t: ir.Type) -> list[tuple[str, ir.Type]]:
        """All scalar locals of the aggregate at path ``p`` (validity first for headers)."""
        if isinstance(t, ir.HeaderType):
            out: list[tuple[str, ir.Type]] = [(self.leaf(p + "__v", ir.BoolType()), ir.BoolType())]
            out += [(self.leaf(f"{p}_{fattr(f.name)}", f.type), f.type) for f in t.fields]
            return out
        if isinstance(t, ir.StructType):
            out = []
            for f in t.fields:
                q = f"{p}_{fattr(f.name)}"
                if isinstance(f.type, AGG):
                    out += self.leaves_of(q, f.type)
                else:
                    out.append((self.leaf(q, f.type), f.type))
            return out
        raise NotFusable(f"aggregate of type {t}")

    # -- expressions -----------------------------------------------------------------------
    def visit_Var(self, e: ir.Var) -> str:
        if isinstance(e.type, AGG):
            raise NotFusable(f"{e.type} used as a value")
        return self.var(e.name)

    def visit_Member(self, e: ir.Member) -> str:
        t = e.type
        if isinstance(t, AGG):
            raise NotFusable(f"{t} used as a value")
        if isinstance(e.base.type, ir.StackType):
            raise NotFusable("header stacks")
        p = self.path(e.base)
        name = self.leaf(f"{p}_{fattr(e.field)}", t)
        if isinstance(e.base.type, ir.HeaderType):
            self.facts.fields[name] = p
            self.facts.htypes[p] = e.base.type
            if self.writing:
                self.facts.wfields.add(name)
                self.facts.written.add(p)
            else:
                if self.flat_reads is not None:
                    self.flat_reads.append(name)
                else:
                    self.facts.read.add(name)
                if not self.facts.guarded and not self.is_known(p):
                    self.facts.unguarded.add(name)
        return name

    def visit_IsValid(self, e: ir.IsValid) -> str:
        if not isinstance(e.header.type, ir.HeaderType):
            raise NotFusable("isValid of a non-header")
        return self.leaf(self.path(e.header) + "__v", ir.BoolType())

    def visit_StackElem(self, e: ir.Expr) -> str:
        raise NotFusable("header stacks")

    visit_StackNext = visit_StackLast = visit_StackProp = visit_StackElem

    def visit_TableHit(self, e: ir.TableHit) -> str:
        raise NotFusable("table hit/miss inside an expression")

    def visit_Lookahead(self, e: ir.Lookahead) -> str:
        if isinstance(e.type, AGG):
            raise NotFusable("lookahead of a header")
        return super().visit_Lookahead(e)

    def visit_ListExpr(self, e: ir.ListExpr) -> str:
        if isinstance(e.type, ir.HeaderType | ir.StructType):
            raise NotFusable("header/struct list expression outside an assignment")
        return super().visit_ListExpr(e)

    def is_known(self, p: str) -> bool:
        """Header ``p`` is certainly valid here: it is inside an isValid() test (or after its
        extract in the parser) and nothing ever invalidates or overwrites it as a whole."""
        return p in self.known and p not in self.facts.touched

    def flatten(self, e: ir.Expr) -> list[tuple[str, int, str | None]]:
        # hash/checksum inputs read header fields only under a run-time validity test
        outer = self.flat_reads is None
        if outer:
            self.flat_reads = []
        self.facts.guarded += 1
        try:
            items = super().flatten(e)
        finally:
            self.facts.guarded -= 1
        items = [(c, w, None if v is not None and v.endswith("__v") and self.is_known(v[:-3])
                  else v) for c, w, v in items]
        if outer:
            reads, self.flat_reads = self.flat_reads or [], None  # a list: set above
            items, raw = self.raw_units(items)
            self.facts.read.update(n for n in reads if n not in raw)
        return items

    # -- raw units -------------------------------------------------------------------------
    # A header is cut into byte-aligned units (Module.layout). A unit of a header that only
    # extract makes valid, none of whose fields is ever written, always holds the bits it was
    # extracted with: its raw struct pieces (``h_f_ipv4__u0``) stand for its fields wherever
    # they are packed (deparser, hash/checksum input), so fields nobody reads on their own are
    # never split out. A "pristine" header (no field written at all) is re-emitted as its
    # original bytes (``_pkt[h_f_tcp__o:...]``) and unpacks only the fields something reads.
    def rawable(self, p: str, fields: list[tuple[ir.Field, int, int]]) -> bool:
        return p not in self.facts.touched and not any(
            f"{p}_{fattr(f.name)}" in self.facts.wfields for f, _, _ in fields)

    def pristine(self, p: str) -> bool:
        return p not in self.facts.touched and p not in self.facts.written

    def raw_units(self, items: list[tuple[str, int, str | None]]
                  ) -> tuple[list[tuple[str, int, str | None]], set[str]]:
        """``items`` with each complete run of a raw-able multi-field unit's fields replaced
        by the unit's raw pieces (the same bits, concatenated); and the replaced field names."""
        out: list[tuple[str, int, str | None]] = []
        raw: set[str] = set()
        i = 0
        while i < len(items):
            code, _, valid = items[i]
            p = self.facts.fields.get(code)
            t = self.facts.htypes.get(p) if p is not None else None
            if p is not None and t is not None:
                _, units = self.mod.layout(t)
                k = ui = 0
                names = []
                for ui, (pieces, fields) in enumerate(units):  # noqa: B007 - used below
                    if f"{p}_{fattr(fields[0][0].name)}" == code:
                        names = [f"{p}_{fattr(f.name)}" for f, _, _ in fields]
                        break
                    k += len(pieces)
                run = [c for c, _, _ in items[i:i + len(names)]]
                if (names and not _direct(pieces, fields) and run == names
                        and all(v == valid for _, _, v in items[i:i + len(names)])
                        and self.rawable(p, fields)):
                    out += [(f"{p}__u{k + j}", pw, valid) for j, pw in enumerate(pieces)]
                    raw.update(names)
                    self.facts.raw_used.add((p, ui))
                    i += len(names)
                    continue
            out.append(items[i])
            i += 1
        return out, raw

    def reads(self, name: str) -> bool:
        """``name`` is read somewhere (as the previous generation pass found)."""
        return self.facts.prev_read is None or name in self.facts.prev_read

    def pack_args(self, p: str, t: ir.HeaderType) -> list[str]:
        """``struct.pack`` arguments of header ``p`` in its layout: raw pieces for raw-able
        units, else the fields shifted together (fields are always in range, so the top
        piece needs no mask)."""
        _, units = self.mod.layout(t)
        args: list[str] = []
        k = 0
        for pieces, fields in units:
            if not _direct(pieces, fields) and self.rawable(p, fields):
                args += [f"{p}__u{k + j}" for j in range(len(pieces))]
                k += len(pieces)
                continue
            k += len(pieces)
            parts = []
            for f, fw, shift in fields:
                v = self.leaf(f"{p}_{fattr(f.name)}", f.type)
                if isinstance(f.type, ir.BitsType) and f.type.signed:
                    v = f"({v} & {mask(fw)})"
                parts.append(f"({v} << {shift})" if shift else v)
            args += unit_pieces(" | ".join(parts), pieces, mask_top=False)
        return args

    # -- statements ------------------------------------------------------------------------
    def assign(self, lhs: ir.Expr, rhs_code: str) -> None:
        if isinstance(lhs, ir.Member | ir.Var) and not isinstance(lhs, ir.Slice):
            self.writing = True
            try:
                target = self.ex(lhs)
            finally:
                self.writing = False
            if target == f"{SM_ROOT}_f_mcast_grp" and rhs_code != "0":
                raise NotFusable("multicast (mcast_grp written)")
            self.w(f"{target} = {rhs_code}")
            return
        super().assign(lhs, rhs_code)

    def agg_assign(self, lhs: ir.Expr, rhs: ir.Expr) -> None:
        p = self.path(lhs)
        if p == SM_ROOT:
            raise NotFusable("assignment of standard_metadata as a whole")
        self.touch(p, lhs.type)
        if not isinstance(rhs, ir.ListExpr):
            self.touch(self.path(rhs), rhs.type)
        targets = self.leaves_of(p, lhs.type)
        if isinstance(rhs, ir.ListExpr):
            t = lhs.type
            if isinstance(t, ir.HeaderType):
                fields = t.fields
                names = ["True"]
            elif isinstance(t, ir.StructType):
                fields = t.fields
                names = []
            else:
                raise NotFusable(f"list expression of type {t}")
            if any(isinstance(f.type, AGG) for f in fields):
                raise NotFusable("nested aggregate in a list expression")
            names += [self.value(i) for i in rhs.items]
        else:
            q = self.path(rhs)
            names = [n for n, _ in self.leaves_of(q, rhs.type)]
        if len(names) != len(targets):
            raise NotFusable("aggregate assignment of mismatched shapes")
        if targets:
            lhs_s = ", ".join(n for n, _ in targets)
            self.w(f"{lhs_s}, = ({', '.join(names)},)")

    def touch(self, p: str, t: ir.Type) -> None:
        """Header(s) at ``p`` get validity or fields other than by extract: never 'known'."""
        if isinstance(t, ir.HeaderType):
            self.facts.touched.add(p)
        elif isinstance(t, ir.StructType):
            for f in t.fields:
                self.touch(f"{p}_{fattr(f.name)}", f.type)

    def init_agg(self, p: str, t: ir.Type) -> None:
        """A fresh local aggregate: headers invalid, fields zero."""
        targets = self.leaves_of(p, t)
        if targets:
            vals = ["False" if isinstance(lt, ir.BoolType) else "0" for _, lt in targets]
            self.w(f"{', '.join(n for n, _ in targets)}, = ({', '.join(vals)},)")

    def visit_Assign(self, s: ir.Assign) -> None:
        if isinstance(s.lhs.type, ir.HeaderType | ir.StructType):
            self.agg_assign(s.lhs, s.rhs)
        else:
            super().visit_Assign(s)

    def visit_VarDecl(self, s: ir.VarDecl) -> None:
        if not isinstance(s.type, AGG):
            super().visit_VarDecl(s)
            return
        if isinstance(s.type, ir.StackType):
            raise NotFusable("header stacks")
        self.touch(self.var(s.name), s.type)
        if s.init is not None:
            self.leaves_of(self.var(s.name), s.type)
            self.agg_assign(ir.Var(s.name, type=s.type), s.init)
        else:
            self.init_agg(self.var(s.name), s.type)

    def visit_If(self, s: ir.If) -> None:
        th = _table_hit(s.cond)
        if th is not None:  # the table's hit tuple decides, no hit() call
            hit, negate = th
            ev = self.mod.fresh("_t")
            self.table_code(hit.table, ev)
            self.if_else(f"{ev}[3] is {'' if negate else 'not '}None", s)
        elif valid_terms(s.cond):  # headers the condition tests are known valid inside
            self.w(f"if {self.ex(s.cond)}:")
            saved = set(self.known)
            for h in valid_terms(s.cond):
                self.known.add(self.path(h))
            self.ind += 1
            self.stmts(s.then.stmts)
            self.ind -= 1
            self.known = saved
            if s.else_ is not None and s.else_.stmts:
                self.w("else:")
                self.ind += 1
                self.stmts(s.else_.stmts)
                self.ind -= 1
        else:
            super().visit_If(s)

    def visit_HeaderMethod(self, s: ir.HeaderMethod) -> None:
        self.touch(self.path(s.header), s.header.type)
        v = self.ex(ir.IsValid(s.header, type=ir.BoolType()))
        if s.method not in ("setValid", "setInvalid"):
            raise BuildError(f"unknown header method {s.method}")
        self.w(f"{v} = {s.method == 'setValid'}")

    def visit_StackMethod(self, s: ir.StackMethod) -> None:
        raise NotFusable("header stacks")

    def visit_Return(self, s: ir.Return) -> None:
        if self.kind == "deparser":
            raise NotFusable("return in a deparser")
        self.w("raise _ARet()" if self.in_action else "raise _Exit()")

    def extern_call(self, s: ir.ExternCall) -> None:
        if s.instance is None:
            fn = registry.extern_function(s.method)
            if fn is not None and not fn.fusable:
                raise NotFusable(f"{s.method} needs the general driver")
            if fn is not None and fn.fused is not None:
                fn.fused(self, s)
                return
        super().extern_call(s)

    def method_call(self, s: ir.ExternCall) -> None:
        kind = registry.extern_object(self.resolve_instance(s.instance).type_name)  # type: ignore[arg-type]  # a method call always names its instance
        if kind is not None and not kind.fusable:
            raise NotFusable(f"extern {kind.type_name} needs the general driver")
        super().method_call(s)

    # -- actions and tables (inlined) ------------------------------------------------------
    def inline_action(self, act: ir.Action) -> None:
        rets = ir.has_return(act.body)
        self.in_action += 1
        if rets:
            self.w("try:")
            self.ind += 1
        self.stmts(act.body.stmts)
        if rets:
            self.ind -= 1
            self.w("except _ARet:")
            self.w("    pass")
        self.in_action -= 1

    def action_call(self, s: ir.ActionCall) -> None:
        act = self.prog.actions.get(s.action)
        if act is None:
            raise BuildError(f"unknown action {s.action}")
        self.inline_call(act, s.args)

    def inline_call(self, act: ir.Action, args: list[ir.Expr], data: str | None = None) -> None:
        """Inline ``act`` with ``args`` bound to its leading parameters (copy-in, then
        copy-out of scalar out/inout ones); ``data``, if given, is the code of the tuple of
        its action data, unpacked after the copy-in."""
        outs = []
        for p, x in zip(act.params, args, strict=False):
            if p.direction in ("out", "inout"):
                outs.append((p, x))
            if not isinstance(p.type, AGG):
                self.w(f"{self.var(p.name)} = {self.ex(x)}")
            elif p.direction == "out":  # a fresh value: headers invalid
                self.touch(self.var(p.name), p.type)
                self.init_agg(self.var(p.name), p.type)
            else:  # copied in (spec 6.8), not aliased: writes to the original stay apart
                self.agg_assign(ir.Var(p.name, type=p.type), x)
        names = [self.var(p.name) for p in act.data_params]
        if data is not None and names:
            self.w(f"{', '.join(names)}, = {data}")

        def copy_out(_exc: str | None = None) -> None:
            for p, x in outs:
                if isinstance(p.type, AGG):
                    self.agg_assign(x, ir.Var(p.name, type=p.type))
                else:
                    self.assign(x, self.var(p.name))

        if outs and self.exits.action(act.name):
            self.exit_guarded(lambda: self.inline_action(act), copy_out)
        else:
            self.inline_action(act)
            copy_out()

    def table_code(self, tname: str, ev: str) -> None:
        table = self.table_lookup(tname, ev)
        fv = ev + "f"
        self.w(f"{fv} = {ev}[1]")
        first = True
        seen = set()
        for ref in table.actions:
            if ref.action in seen:
                continue
            seen.add(ref.action)
            act = self.prog.actions[ref.action]
            if any(p.direction for p in act.params) and not ref.args:
                raise NotFusable(f"table action {act.cp_name} with directional parameters")
            # an action the actions list binds arguments for has this table's own function
            fn = (self.slow_bound.get((table.name, ref.action)) if ref.args
                  else self.slow_fns.get(ref.action))
            if fn is None:
                raise NotFusable(f"no bound function for action {act.cp_name}")
            self.w(f"{'if' if first else 'elif'} {fv} is {fn}:")
            first = False
            self.ind += 1
            self.inline_call(act, ref.args, f"{ev}[2]")
            self.ind -= 1

    # -- parser ----------------------------------------------------------------------------
    def extract(self, target: ir.Expr) -> None:
        t = target.type
        if isinstance(target, ir.StackNext) or not isinstance(t, ir.HeaderType):
            raise NotFusable("extract into a header stack")
        w = t.width
        if w % 8:
            raise BuildError(f"header {t.name} is {w} bits wide, not a whole number of bytes",
                             target.loc)
        n = w // 8
        p = self.path(target)
        self.facts.htypes[p] = t
        pristine = self.pristine(p)
        self.w(f"if _pos + {n} > _plen: raise _PErr({self.err('PacketTooShort')})")
        if t.fields:
            sname, units = self.mod.layout(t)
            fmt = ""  # the unpack format: pieces nobody needs become pad bytes
            pad = 0
            targets: list[str] = []
            after: list[str] = []
            k = 0
            for ui, (pieces, fields) in enumerate(units):
                locs = [f"{p}_{fattr(f.name)}" for f, _, _ in fields]
                ks = range(k, k + len(pieces))
                k += len(pieces)
                if _direct(pieces, fields):
                    # the piece is the field: unpacked if read, or packed again
                    if pristine and not self.reads(locs[0]):
                        pad += pieces[0] // 8
                        continue
                    names = [self.leaf(locs[0], fields[0][0].type)]
                    need: list[tuple[ir.Field, int, int]] = []
                else:
                    rawable = self.rawable(p, fields)
                    raw = rawable and (not pristine or self.facts.prev_raw_used is None
                                       or (p, ui) in self.facts.prev_raw_used)
                    need = [fld for fld, loc in zip(fields, locs, strict=True)
                            if self.reads(loc) or not rawable]
                    if not raw and not need:
                        pad += sum(pieces) // 8
                        continue
                    names = [f"{p}__u{j}" if raw else f"_u{j}" for j in ks]
                if pad:
                    fmt += f"{pad}x"
                    pad = 0
                fmt += "".join(_PIECE[pw] for pw in pieces)
                targets.extend(names)
                if not need:
                    continue
                if len(pieces) == 1:
                    u = names[0]
                else:
                    rest = sum(pieces)
                    parts = []
                    for nm, pw in zip(names, pieces, strict=True):
                        rest -= pw
                        parts.append(f"({nm} << {rest})" if rest else nm)
                    u = "(" + " | ".join(parts) + ")"
                uw = sum(pieces)
                for f, fw, shift in need:
                    v = self.unit_field(u, uw, f.type, fw, shift)
                    after.append(f"{self.leaf(f'{p}_{fattr(f.name)}', f.type)} = {v}")
            if targets:
                if "!" + fmt != self.mod.globals[sname].format:
                    sname = self.mod.bind(_struct.Struct("!" + fmt), "ST")
                self.w(f"{', '.join(targets)}, = {sname}.unpack_from(_pkt, _pos)")
            for line in after:
                self.w(line)
        for f in t.fields:
            self.facts.fields[f"{p}_{fattr(f.name)}"] = p
        if pristine:
            self.w(f"{p}__o = _pos")
        self.w(f"{self.leaf(p + '__v', ir.BoolType())} = True")
        self.w(f"_pos += {n}")
        self.known.add(p)

    def gen_state(self, name: str, active: set[str]) -> None:
        saved = set(self.known)
        super().gen_state(name, active)
        self.known = saved

    def gen_parser_body(self) -> list[str]:
        p = self.block
        assert isinstance(p, ir.Parser)
        self.lines, self.ind = [], 0
        for d in p.locals:
            self.stmt(d)
        self.gen_state_machine(p, "_perr = _pe.code")
        return self.lines

    def enter_loop_state(self) -> None:
        self.known = set()

    # -- controls --------------------------------------------------------------------------
    def emit(self, e: ir.Expr) -> None:
        t = e.type
        if isinstance(t, ir.HeaderType):
            p = self.path(e)
            v = self.leaf(p + "__v", ir.BoolType())
            if not t.fields:
                return
            if self.pristine(p):
                code = f"_pkt[{p}__o:{p}__o + {t.width // 8}]"
            else:
                sname, _ = self.mod.layout(t)
                code = f"{sname}.pack({', '.join(self.pack_args(p, t))})"
            self.w(f"if {v}: _out.append({code})")
        elif isinstance(t, ir.StructType):
            for f in t.fields:
                self.emit(ir.Member(e, f.name, type=f.type))
        else:
            raise NotFusable(f"emit of {t}")

    def emitted_headers(self) -> list[tuple[str, ir.HeaderType]] | None:
        """The deparser's emits as (path, header type) in order, if its body is nothing but
        emits of headers/structs of headers; None otherwise."""
        out: list[tuple[str, ir.HeaderType]] = []

        def add(e: ir.Expr) -> bool:
            t = e.type
            if isinstance(t, ir.HeaderType):
                out.append((self.path(e), t))
                return True
            if isinstance(t, ir.StructType):
                return all(add(ir.Member(e, f.name, type=f.type)) for f in t.fields)
            return False

        c = self.block
        assert isinstance(c, ir.Control)
        if c.locals or not all(isinstance(st, ir.Emit) and add(st.header) for st in c.body.stmts):
            return None
        return out

    def gen_deparser_body(self, paths: list[list[str]], simple: bool) -> list[str]:
        """Deparser code leaving the packet in ``_data``. For each parser path (the headers it
        extracts) the deparser would emit a fixed run of headers: when exactly those are valid,
        the run is precompiled ``struct.pack``s of the headers that may have changed, original
        byte slices of pristine ones, and the payload. When the run ends with pristine headers
        that (``simple`` parser: no advance, no header extracted twice on a path) every parse
        matching the validity test extracted last and back to back, those and the payload are
        one slice ``_pkt[first__o:]``."""
        emitted = self.emitted_headers()
        self.lines, self.ind = [], 0
        first = True
        if emitted:
            seen: set[tuple[str, ...]] = set()
            combos = []
            for path in sorted(paths, key=len, reverse=True):
                run = tuple(p for p, _ in emitted if p in path)
                if run and run not in seen:
                    seen.add(run)
                    combos.append(run)
            types = dict(emitted)
            if len(types) != len(emitted):
                combos = []  # a header emitted twice: keep the general code
            for run in combos:
                conds = [self.leaf(p + "__v", ir.BoolType()) if p in run
                         else f"not {self.leaf(p + '__v', ir.BoolType())}" for p, _ in emitted]
                tail = 0
                if simple:
                    while tail < len(run) and self.pristine(run[-1 - tail]) and _ends_with(
                            paths, [p for p, _ in emitted if p not in self.facts.touched],
                            run, run[len(run) - 1 - tail:]):
                        tail += 1
                segs: list[str] = []
                fmt = ""
                args: list[str] = []
                for p in run[:len(run) - tail]:
                    t = types[p]
                    if not t.fields:
                        continue
                    if self.pristine(p):
                        if fmt:
                            segs.append(f"{self.mod.bind(_struct.Struct('!' + fmt), 'ST')}"
                                        f".pack({', '.join(args)})")
                            fmt, args = "", []
                        segs.append(f"_pkt[{p}__o:{p}__o + {t.width // 8}]")
                        continue
                    sname, _ = self.mod.layout(t)
                    fmt += self.mod.globals[sname].format.lstrip("!")
                    args += self.pack_args(p, t)
                if fmt:
                    segs.append(f"{self.mod.bind(_struct.Struct('!' + fmt), 'ST')}"
                                f".pack({', '.join(args)})")
                segs.append(f"_pkt[{run[-tail]}__o:]" if tail else "_pkt[_ppos:]")
                self.w(f"{'if' if first else 'elif'} {' and '.join(conds)}:")
                self.w(f"    _data = {' + '.join(segs)}")
                first = False
        if not first:
            self.w("else:")
            self.ind += 1
        self.w("_out = []")
        for st in self.block.body.stmts:  # type: ignore[union-attr]  # body: the deparser is a control
            self.stmt(st)
        self.w("_out.append(_pkt[_ppos:])")
        self.w("_data = b''.join(_out)")
        return self.lines

    def parser_paths(self) -> list[list[str]]:
        """The header paths each parser path extracts, in order (start to accept), for a
        parser without loops whose extracts are top-level statements of states; [] if the
        parser is not like that or has too many paths to be worth specialising."""
        p = self.block
        assert isinstance(p, ir.Parser)
        out: list[list[str]] = []

        def walk(name: str, acc: list[str], active: frozenset[str]) -> bool:
            if name in ("accept", "reject"):
                out.append(acc)
                return len(out) <= 16
            st = p.states.get(name)
            if st is None or name in active:
                return False
            acc = list(acc)
            for s in st.stmts:
                if isinstance(s, ir.Extract):
                    try:
                        acc.append(self.path(s.header))
                    except NotFusable:
                        return False
                elif _contains_extract(s):
                    return False
            return all(walk(n, acc, active | {name}) for n in dict.fromkeys(successors(st.transition)))

        return out if walk("start", [], frozenset()) else []

    def gen_control_body(self, wrap_exit: bool = True) -> list[str]:
        c = self.block
        assert isinstance(c, ir.Control)
        self.lines, self.ind = [], 0
        for d in c.locals:
            self.stmt(d)
        if wrap_exit:
            self.w("try:")
            self.ind += 1
        self.stmts(c.body.stmts)
        if wrap_exit:
            self.ind -= 1
            self.w("except _Exit:")
            self.w("    pass")
        return self.lines


_PIECE = {8: "B", 16: "H", 32: "I", 64: "Q"}


def _direct(pieces: list[int], fields: list[tuple[ir.Field, int, int]]) -> bool:
    """A layout unit that is one unsigned field in one struct piece (unpacked as is)."""
    f0, _, shift = fields[0]
    return (len(pieces) == 1 and len(fields) == 1 and shift == 0
            and isinstance(f0.type, ir.BitsType) and not f0.type.signed)


def _ends_with(paths: list[list[str]], certain: list[str], run: tuple[str, ...],
               tail: tuple[str, ...]) -> bool:
    """Every parse that can pass the deparser's validity test for ``run`` extracted ``tail``
    last, back to back. A parse extracts a prefix of a parser path (a parser error stops it
    early); ``certain`` are the emitted headers whose validity only extract sets, so a parse
    passes the test only if it extracted exactly those of them that ``run`` holds."""
    for path in paths:
        for j in range(len(path) + 1):
            done = path[:j]
            if all((h in done) == (h in run) for h in certain) and (
                    len(done) < len(tail) or tuple(done[j - len(tail):]) != tail):
                return False
    return True


def _has_advance(s: ir.Stmt | list[ir.Stmt]) -> bool:
    if isinstance(s, list):
        return any(_has_advance(x) for x in s)
    if isinstance(s, ir.Advance):
        return True
    if isinstance(s, ir.Block):
        return _has_advance(s.stmts)
    if isinstance(s, ir.If):
        return _has_advance(s.then) or (s.else_ is not None and _has_advance(s.else_))
    if isinstance(s, ir.SwitchValue | ir.SwitchAction):
        return any(c.body is not None and _has_advance(c.body) for c in s.cases)
    return False


def _table_hit(cond: ir.Expr) -> tuple[ir.TableHit, bool] | None:
    if isinstance(cond, ir.TableHit):
        return cond, cond.negate
    if isinstance(cond, ir.Unary) and cond.op == "!" and isinstance(cond.operand, ir.TableHit):
        return cond.operand, not cond.operand.negate
    return None


class _Facts:
    """What one generation pass learns about the whole program (shared by all blocks); a pass
    starts from what the previous one learnt (None: nothing yet, assume the worst)."""

    def __init__(self, prev: _Facts | None = None) -> None:
        self.touched: set[str] = set(prev.touched if prev else ())  # set other than by extract
        self.written: set[str] = set(prev.written if prev else ())  # a field assigned
        self.wfields: set[str] = set(prev.wfields if prev else ())  # header-field locals assigned
        self.read: set[str] = set()  # header-field locals read on their own
        self.raw_used: set[tuple[str, int]] = set()  # (header path, unit) packed as raw pieces
        self.prev_read = prev.read if prev else None
        self.prev_raw_used = prev.raw_used if prev else None
        self.htypes: dict[str, ir.HeaderType] = {}  # header path -> its type
        self.fields: dict[str, str] = {}  # header-field local -> header path
        self.unguarded: set[str] = set()  # header-field locals read without a validity proof
        self.guarded = 0  # > 0 while generating reads that test validity at run time


def _contains_extract(s: ir.Stmt) -> bool:
    if isinstance(s, ir.Extract):
        return True
    if isinstance(s, ir.Block):
        return any(_contains_extract(x) for x in s.stmts)
    if isinstance(s, ir.If):
        return _contains_extract(s.then) or (s.else_ is not None and _contains_extract(s.else_))
    return isinstance(s, ir.SwitchValue | ir.SwitchAction)


# --------------------------------------------------------------------------------------------
# The whole function
# --------------------------------------------------------------------------------------------

_PREFIX = {"parser": "P", "verify_checksum": "V", "ingress": "I", "egress": "E",
           "compute_checksum": "C", "deparser": "D"}


def generate(mod: Module, program: ir.Program, fname: str, *, drop_port: int,
             slow_fns: dict[str, dict[str, str]],
             resolve_instance: Callable[[ir.Parser | ir.Control, str], ir.ExternInstance],
             runtime_obj: Callable[[ir.ExternInstance | ir.ValueSet], Any],
             table_state: Callable[[ir.Table], Any],
             bound_fns: dict[str, dict[tuple[str, str], str]] | None = None) -> list[str]:
    """Source lines of ``fname(_pkt, _port, _now)`` for ``program`` (see the module docstring);
    NotFusable if the program needs the general driver. ``slow_fns`` maps each control's
    name to its action key -> function name map (table hits carry those functions);
    ``bound_fns`` likewise maps (table, action key) for actions a table binds arguments for."""
    for t in program.types.values():
        if isinstance(t, ir.HeaderType) and any(isinstance(f.type, ir.StructType)
                                                for f in t.fields):
            raise NotFusable(f"header {t.name} has a struct-typed field")
        if isinstance(t, ir.HeaderType) and t.varbit is not None:
            raise NotFusable(f"header {t.name} has a varbit field")
    # pass 1 finds the headers set other than by extract and the fields written; pass 2,
    # knowing them, which fields are read on their own (raw units and original bytes replace
    # the other reads); pass 3 generates knowing both
    facts = None
    for _ in range(3):
        facts = _Facts(facts)
        leaves, bodies = _generate(mod, program, facts, drop_port, slow_fns, resolve_instance,
                                   runtime_obj, table_state, bound_fns or {})
    # a field of a header that only extract makes valid, read only where the header is valid,
    # is always written before it is read: it needs no per-packet initial value
    assert facts is not None  # the loop ran
    for name, p in facts.fields.items():
        if p not in facts.touched and name not in facts.unguarded:
            leaves.pop(name, None)
    return _assemble(fname, bodies, leaves, drop_port) + _assemble_halves(
        fname, bodies, leaves, drop_port)


def _generate(mod: Module, program: ir.Program, facts: _Facts, drop_port: int,
              slow_fns: dict[str, dict[str, str]],
              resolve_instance: Callable[[ir.Parser | ir.Control, str], ir.ExternInstance],
              runtime_obj: Callable[[ir.ExternInstance | ir.ValueSet], Any],
              table_state: Callable[[ir.Table], Any],
              bound_fns: dict[str, dict[tuple[str, str], str]],
              ) -> tuple[dict[str, str], dict[str, list[str]]]:
    leaves: dict[str, str] = {}
    bodies: dict[str, list[str]] = {}
    paths: list[list[str]] = []
    simple = False
    for role in ir.V1SWITCH_ROLES:
        block = program.block(role)
        data = [p for p in block.params if not isinstance(p.type, ir.ExternType)]
        roots = dict(zip([p.name for p in data], ("h", "m", SM_ROOT), strict=False))
        kind = "parser" if role == "parser" else ("deparser" if role == "deparser" else "control")
        gen = FusedBlockGen(
            mod, block, kind=kind, prefix=_PREFIX[role] + "_", roots=roots, leaves=leaves,
            slow_fns=slow_fns.get(block.name, {}), bound_fns=bound_fns.get(block.name, {}),
            plen="_plen" if role in ("parser", "verify_checksum", "ingress") else "_eplen",
            facts=facts,
            resolve_instance=lambda n, b=block: resolve_instance(b, n),
            runtime_obj=runtime_obj, table_state=table_state, drop_port=drop_port,
        )
        if role == "parser":
            bodies[role] = gen.gen_parser_body()
            paths = gen.parser_paths()
            simple = not _has_advance([s for st in block.states.values()  # type: ignore[union-attr]  # states: role parser is a Parser
                                       for s in st.stmts])
            simple = simple and all(len(set(p)) == len(p) for p in paths)
        elif role == "deparser":
            bodies[role] = gen.gen_deparser_body(paths, simple)
        else:
            bodies[role] = gen.gen_control_body(wrap_exit=role != "deparser")
        if gen.funcs:
            raise NotFusable("a block needs helper functions")
    return leaves, bodies


def _assemble(fname: str, bodies: dict[str, list[str]], leaves: dict[str, str],
              drop_port: int) -> list[str]:
    out = [f"def {fname}(_pkt, _port, _now):"]

    def w(line: str, ind: int = 1) -> None:
        out.append("    " * ind + line)

    def block(role: str, ind: int) -> None:
        lines = bodies[role]
        for line in lines or ["pass"]:
            out.append("    " * ind + line)

    def sm(name: str) -> str | None:
        n = f"{SM_ROOT}_f_{name}"
        return n if n in leaves else None

    text = "\n".join(line for b in bodies.values() for line in b)
    special = {f"{SM_ROOT}_f_ingress_port": "_port", f"{SM_ROOT}_f_packet_length": "_plen",
               f"{SM_ROOT}_f_ingress_global_timestamp": "_now"}
    w("if _pkt.__class__ is not bytes: _pkt = bytes(_pkt)")
    w("_plen = len(_pkt)")
    zeros = [n for n, v in leaves.items() if v == "0" and n not in special]
    falses = [n for n, v in leaves.items() if v == "False" and n not in special]
    for group, v in ((zeros, "0"), (falses, "False")):
        for i in range(0, len(group), 16):
            w(" = ".join(group[i:i + 16]) + f" = {v}")
    for n, v in special.items():
        if n in leaves:
            w(f"{n} = {v}")
    if "_trunc" in text:
        w("_trunc = None")
    if "_mcol" in text:
        w("_mcol = 0")
    w("_pos = 0")
    w("_perr = 0")
    if sm("checksum_error"):
        w("_ckerr = 0")
    # ingress side: parser, verify_checksum, ingress; errors as the general driver reports them
    w("try:")
    block("parser", 2)
    w("_ppos = _pos", 2)
    if sm("parser_error"):
        w(f"{sm('parser_error')} = _perr", 2)
    block("verify_checksum", 2)
    if sm("checksum_error"):
        w(f"{sm('checksum_error')} = _ckerr", 2)
    block("ingress", 2)
    w("except _Assert:")
    w('    return @@DROP("assert", "assert/assume failed in ingress")')
    w("except (_PErr, _PktErr, IndexError) as _x:")
    w('    return @@DROP("error", "ingress: " + _describe(_x))')
    spec = sm("egress_spec") or "0"
    if spec != "0":
        w(f"if {spec} == {drop_port}:")
        w('    return @@DROP("mark_to_drop")')
        w(f"_eport = {spec}")
    else:
        w("_eport = 0")
    late = "\n".join(line for r in ("egress", "compute_checksum", "deparser") for line in bodies[r])
    if "_eplen" in late:
        w(f"_eplen = {sm('packet_length') or '_plen'}")
    # egress_spec neither read nor written after ingress: it stays 0 through egress
    spec_late = spec != "0" and (drop_port == 0 or re.search(rf"\b{spec}\b", late) is not None)
    # egress with an empty queue: what Pipeline._run_egress sets
    for name, init in (("instance_type", "0"), ("egress_port", "_eport"),
                       ("egress_spec", "0" if spec_late else None),
                       ("egress_global_timestamp", "_now"), ("enq_timestamp", "_now"),
                       ("enq_qdepth", "0"), ("deq_timedelta", "0"), ("deq_qdepth", "0"),
                       ("qid", "0")):
        if sm(name) and init is not None:
            w(f"{sm(name)} = {init}")
    w("try:")
    block("egress", 2)
    w("except _Assert:")
    w('    return @@DROP("assert", "assert/assume failed in egress")')
    w("except (_PErr, _PktErr, IndexError) as _x:")
    w('    return @@DROP("error", "egress: " + _describe(_x))')
    if spec_late:
        w(f"if {spec} == {drop_port}:")
        w('    return @@DROP("mark_to_drop", "dropped in egress")')
    w("try:")
    block("compute_checksum", 2)
    block("deparser", 2)
    w("except (_PErr, _PktErr, IndexError) as _x:")
    w('    return @@DROP("error", "deparser: " + _describe(_x))')
    if "_trunc" in text:
        w("if _trunc is not None and _trunc < len(_data):")
        w("    _data = _data[:_trunc]")
    w("return @@OUT")
    out.append("")
    src = "\n".join(out)
    # the one-output result built field by field: no __init__ frames, no default factories
    full = src.replace("    return @@OUT", "\n".join((
        "    _o = _new(_Out); _o.port = _eport; _o.data = _data",
        "    _r = _new(_PR); _r.outputs = [_o]; _r.digests = []; _r.drops = []; _r.logs = []",
        "    return _r")))
    full = re.sub("@@DROP\\((.*)\\)$", r"_PR(drops=[_Drop(\1)])", full, flags=re.M)
    lean = src.replace(f"def {fname}(", f"def {fname}_lean(").replace("@@OUT", "(_eport, _data)")
    lean = re.sub("@@DROP\\((.*)\\)$", r"_Drop(\1)", lean, flags=re.M)
    return [full, "", lean, ""]


def _prologue(bodies: dict[str, list[str]], leaves: dict[str, str], text: str) -> list[str]:
    """The per-packet start of the fused functions: bytes, length, the locals' initial values."""
    out = ["if _pkt.__class__ is not bytes: _pkt = bytes(_pkt)", "_plen = len(_pkt)"]
    special = {f"{SM_ROOT}_f_ingress_port": "_port", f"{SM_ROOT}_f_packet_length": "_plen",
               f"{SM_ROOT}_f_ingress_global_timestamp": "_now"}
    zeros = [n for n, v in leaves.items() if v == "0" and n not in special]
    falses = [n for n, v in leaves.items() if v == "False" and n not in special]
    for group, v in ((zeros, "0"), (falses, "False")):
        for i in range(0, len(group), 16):
            out.append(" = ".join(group[i:i + 16]) + f" = {v}")
    out += [f"{n} = {v}" for n, v in special.items() if n in leaves]
    if "_trunc" in text:
        out.append("_trunc = None")
    if "_mcol" in text:
        out.append("_mcol = 0")
    out += ["_pos = 0", "_perr = 0"]
    if f"{SM_ROOT}_f_checksum_error" in leaves:
        out.append("_ckerr = 0")
    return out


def _fn_code(src: str) -> types.CodeType:
    """The code object of the one function ``src`` defines (compiled only to read its names)."""
    mod = compile(src, "<p4switch:fused-half>", "exec")
    return next(c for c in mod.co_consts if isinstance(c, types.CodeType))


def _assemble_halves(fname: str, bodies: dict[str, list[str]], leaves: dict[str, str],
                     drop_port: int) -> list[str]:
    """``{fname}_ingress(_pkt, _port, _now) -> IngressResult`` and ``{fname}_egress(_job, _now,
    _qm) -> EgressResult``: the whole function cut where the queue sits (Pipeline.ingress_fast,
    egress_fast). Every local of the ingress half that the egress half names travels in the
    job's state as one tuple (the egress half unpacks it); which ones is read off the two
    halves compiled on their own, so nothing the generator emits can be missed."""
    text = "\n".join(line for b in bodies.values() for line in b)

    def sm(name: str) -> str | None:
        n = f"{SM_ROOT}_f_{name}"
        return n if n in leaves else None

    def block(out: list[str], role: str, ind: int) -> None:
        out += ["    " * ind + line for line in bodies[role] or ["pass"]]

    ing = ["    " + line for line in _prologue(bodies, leaves, text)]
    ing.append("    try:")
    block(ing, "parser", 2)
    ing.append("        _ppos = _pos")
    if sm("parser_error"):
        ing.append(f"        {sm('parser_error')} = _perr")
    block(ing, "verify_checksum", 2)
    if sm("checksum_error"):
        ing.append(f"        {sm('checksum_error')} = _ckerr")
    block(ing, "ingress", 2)
    ing += ["    except _Assert:",
            '        return _IR(drops=[_Drop("assert", "assert/assume failed in ingress")])',
            "    except (_PErr, _PktErr, IndexError) as _x:",
            '        return _IR(drops=[_Drop("error", "ingress: " + _describe(_x))])']
    spec = sm("egress_spec") or "0"
    if spec != "0":
        ing += [f"    if {spec} == {drop_port}:",
                '        return _IR(drops=[_Drop("mark_to_drop")])']

    late = "\n".join(line for r in ("egress", "compute_checksum", "deparser") for line in bodies[r])
    eg: list[str] = []
    preset: set[str] = set()  # set by the egress half itself before its blocks run
    if "_eplen" in late:
        eg.append("    _eplen = _job.packet_length")
    # egress_port, egress_spec, packet_length, timestamps and queueing metadata: what
    # Pipeline._run_egress sets
    for name, v in (("instance_type", "0"), ("egress_port", "_job.egress_port"),
                    ("egress_spec", "0"), ("packet_length", "_job.packet_length"),
                    ("egress_global_timestamp", "_now"), ("enq_timestamp", "_qm.enq_timestamp"),
                    ("enq_qdepth", "_qm.enq_qdepth"), ("deq_timedelta", "_qm.deq_timedelta"),
                    ("deq_qdepth", "_qm.deq_qdepth"), ("qid", "_qm.qid")):
        if sm(name):
            eg.append(f"    {sm(name)} = {v}")
            preset.add(f"{sm(name)}")
    eg.append("    try:")
    block(eg, "egress", 2)
    eg += ["    except _Assert:",
           '        return _ER(drops=[_Drop("assert", "assert/assume failed in egress")])',
           "    except (_PErr, _PktErr, IndexError) as _x:",
           '        return _ER(drops=[_Drop("error", "egress: " + _describe(_x))])']
    # as in the whole function: egress_spec neither read nor written in egress stays 0
    if spec != "0" and (drop_port == 0 or re.search(rf"\b{spec}\b", late) is not None):
        eg += [f"    if {spec} == {drop_port}:",
               '        return _ER(drops=[_Drop("mark_to_drop", "dropped in egress")])']
    eg.append("    try:")
    block(eg, "compute_checksum", 2)
    block(eg, "deparser", 2)
    eg += ["    except (_PErr, _PktErr, IndexError) as _x:",
           '        return _ER(drops=[_Drop("error", "deparser: " + _describe(_x))])']
    if "_trunc" in text:
        eg += ["    if _trunc is not None and _trunc < len(_data):",
               "        _data = _data[:_trunc]"]
    eg += ["    _o = _new(_Out); _o.port = _job.egress_port; _o.data = _data",
           "    _r = _new(_ER); _r.outputs = [_o]; _r.jobs = []; _r.digests = []; _r.drops = []",
           "    _r.logs = []",
           "    return _r"]

    ihead, ehead = f"def {fname}_ingress(_pkt, _port, _now):", f"def {fname}_egress(_job, _now, _qm):"
    icode = _fn_code("\n".join([ihead, *ing, "    return None", ""]))
    ecode = _fn_code("\n".join([ehead, *eg, ""]))
    named = set(ecode.co_varnames) | set(ecode.co_names)
    own = {"_job", "_now", "_qm", "_eplen", "_x", "_o", "_r", *preset}
    carried = [n for n in icode.co_varnames if n in named and n not in own]
    # a carried local the ingress half may leave unassigned (a field of a header that was not
    # extracted: only read under its validity, so any value will do) starts at 0
    prologue = "\n".join(_prologue(bodies, leaves, text))
    unset = [n for n in carried if n not in ("_pkt", "_port", "_ppos")
             and not re.search(rf"(^|[ ,]){re.escape(n)}( =|,)", prologue, flags=re.M)]
    state = f"({', '.join(carried)},)" if carried else "()"
    plen = sm("packet_length") or "_plen"
    prio = sm("priority") or "0"
    inits = [f"    {' = '.join(unset[i:i + 16])} = 0" for i in range(0, len(unset), 16)]
    ing = ing[:2] + inits + ing[2:]
    ing += [f"    _j = _EJ({spec}, 0, {plen}, {state}, {prio})",
            "    _r = _new(_IR); _r.jobs = [_j]; _r.digests = []; _r.drops = []; _r.logs = []",
            "    return _r"]
    eg = [f"    {', '.join(carried)}, = _job.state"] + eg if carried else eg
    isrc, esrc = "\n".join([ihead, *ing, ""]), "\n".join([ehead, *eg, ""])
    return [isrc, "", esrc, "", *_lean_halves(fname, isrc, esrc)]


def _lean_halves(fname: str, isrc: str, esrc: str) -> list[str]:
    """``{fname}_ingress_lean`` and ``{fname}_egress_lean``: the halves without result objects
    (Pipeline.ingress_lean / egress_lean): ingress returns its one job, egress ``(port,
    bytes)``, either a ``Drop`` where the full half returns a result holding only that drop.
    A simulator's congested hop takes both halves; the results' five lists and three objects
    were a tenth of its cost."""
    def drops(src: str, res: str) -> str:
        return re.sub(rf"return {res}\(drops=\[(.*)\]\)$", r"return \1", src, flags=re.M)

    ing = drops(isrc, "_IR").replace(f"def {fname}_ingress(", f"def {fname}_ingress_lean(")
    ing = ing.replace(
        "    _r = _new(_IR); _r.jobs = [_j]; _r.digests = []; _r.drops = []; _r.logs = []\n"
        "    return _r\n", "    return _j\n")
    eg = drops(esrc, "_ER").replace(f"def {fname}_egress(", f"def {fname}_egress_lean(")
    eg = eg.replace(
        "    _o = _new(_Out); _o.port = _job.egress_port; _o.data = _data\n"
        "    _r = _new(_ER); _r.outputs = [_o]; _r.jobs = []; _r.digests = []; _r.drops = []\n"
        "    _r.logs = []\n    return _r\n", "    return (_job.egress_port, _data)\n")
    if re.search(r"\b_IR\b", ing) or re.search(r"\b_ER\b", eg):
        # the generator's ends changed shape: the pipeline keeps its general lean halves
        return []
    return [ing, "", eg, ""]
