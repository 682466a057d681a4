"""A whole BMv2 JSON document (p4c-bm2-ss output) -> ``ir.Program``."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from p4.config.v1 import p4info_pb2

from p4switch import ir
from p4switch.bmv2json.actions import (
    COUNTER_TYPE,
    METER_TYPE,
    U32,
    Context,
    Primitives,
    enum_const,
)
from p4switch.bmv2json.errors import Bmv2JsonError
from p4switch.bmv2json.exprs import BOOL, Exprs, _hexint, convert
from p4switch.bmv2json.flow import Graph, Structurer, post_dominators
from p4switch.bmv2json.layout import (
    HDR,
    META,
    SM,
    Layout,
    build_layout,
    elem_type,
    field_type,
    with_field_lists,
)
from p4switch.bmv2json.unions import with_siblings_invalid

#: JSON top-level keys whose content p4switch cannot run (refused when non-empty)
_UNSUPPORTED_TOP = {
    "extern_instances": "extern instances (non-v1model externs)",
}
#: the action a table without a default entry runs on a miss (nothing, as in BMv2)
MISS_ACTION = "$miss"
OPTIONAL = p4info_pb2.MatchField.OPTIONAL
_MATCH_KINDS = {"exact", "lpm", "ternary", "range", "optional"}
#: names of p4c's synthesized actions (``<block><line>``, ``act``, ``act_3``): inlined
_SYNTH_ACTION = re.compile(r"^(act(_\d+)?|[A-Za-z_]\w*?\d+(_\d+)?|switch_\d+_case(_\d+)?)$")
#: p4c's tables for ``switch`` on an expression (hidden in its P4Info)
_HIDDEN_TABLE = re.compile(r"^switch_\d+_table$")


def _v1_params(lay: Layout, kind: str) -> list[ir.Param]:
    hdr = ir.Param(HDR, "inout", lay.hdr_t)
    meta = ir.Param(META, "inout", lay.meta_t)
    sm = ir.Param(SM, "inout", lay.sm_t)
    if kind == "parser":
        return [ir.Param("packet", "", ir.ExternType("packet_in")),
                ir.Param(HDR, "out", lay.hdr_t), meta, sm]
    if kind == "deparser":
        return [ir.Param("packet", "", ir.ExternType("packet_out")),
                ir.Param(HDR, "in", lay.hdr_t)]
    if kind == "checksum":
        return [hdr, meta]
    return [hdr, meta, sm]


@dataclass
class _Builder:
    doc: dict
    p4info: p4info_pb2.P4Info | None
    lay: Layout = field(init=False)
    actions: dict[str, ir.Action] = field(default_factory=dict)
    action_key: dict[int, str] = field(default_factory=dict)  # JSON id -> IR key
    action_json: dict[int, dict] = field(default_factory=dict)
    instances: dict[str, ir.ExternInstance] = field(default_factory=dict)
    value_sets: dict[str, ir.ValueSet] = field(default_factory=dict)
    ctx: Context = field(init=False)

    def build(self, name: str) -> ir.Program:
        doc = self.doc
        for key, what in _UNSUPPORTED_TOP.items():
            if doc.get(key):
                first = doc[key][0]
                label = first.get("name") if isinstance(first, dict) else first
                raise Bmv2JsonError(f'{key}[0] "{label}"', f"{what} are not supported")
        self.lay = build_layout(doc)
        with_field_lists(self.lay, doc)
        self.ctx = Context({c["name"]: c for c in doc.get("calculations", [])},
                           {ll["id"]: ll for ll in doc.get("learn_lists", [])}, self.instances, {})
        self._externs()
        for p in doc.get("pipelines", []):
            for ap in p.get("action_profiles", []):
                self._action_profile(ap)
        self._actions()
        parser = self._parser()
        controls: dict[str, ir.Control] = {}
        pipes = {p.get("name"): p for p in doc.get("pipelines", [])}
        for role in ("ingress", "egress"):
            if role not in pipes:
                raise Bmv2JsonError("pipelines", f"no {role!r} pipeline")
            controls[role] = self._pipeline(pipes[role])
        controls["verify_checksum"], controls["compute_checksum"] = self._checksums()
        controls["deparser"] = self._deparser()
        errors = [n for n, _ in sorted((e for e in doc.get("errors", [])), key=lambda e: e[1])]
        for builtin in ("NoError", "PacketTooShort", "NoMatch", "StackOutOfBounds",
                        "HeaderTooShort", "ParserTimeout", "ParserInvalidArgument"):
            if builtin not in errors:
                errors.append(builtin)
        types: dict[str, ir.Type] = dict(self.lay.header_types)
        types.update({"headers": self.lay.hdr_t, "metadata": self.lay.meta_t,
                      "standard_metadata_t": self.lay.sm_t})
        prog = ir.Program(
            types=types, errors=errors,
            match_kinds=["exact", "ternary", "lpm", "range", "optional", "selector"],
            actions=self.actions, parsers={"parser": parser}, controls=controls,
            package={r: r for r in ("parser", "verify_checksum", "ingress", "egress",
                                    "compute_checksum", "deparser")},
            instances=self.instances, controller_headers=self._controller_headers(),
            digests=list(self.ctx.digests.values()), main_file=name)
        return prog

    # -- externs -----------------------------------------------------------------------------
    def _counter_unit(self, name: str, direct: bool) -> str:
        """packets_and_bytes (BMv2 counts both), unless p4c's P4Info says otherwise."""
        if self.p4info is not None:
            objs = self.p4info.direct_counters if direct else self.p4info.counters
            for c in objs:
                if c.preamble.name == name:
                    unit = c.spec.unit
                    return {1: "bytes", 2: "packets", 3: "packets_and_bytes"}.get(
                        unit, "packets_and_bytes")
        return "packets_and_bytes"

    def _externs(self) -> None:
        doc = self.doc
        signed = self._signed_registers()
        for r in doc.get("register_arrays", []):
            t = ir.BitsType(int(r["bitwidth"]), r["name"] in signed)
            self._add(ir.ExternInstance(r["name"], r["name"], "register", (t,),
                                        [ir.Const(int(r["size"]), type=U32)]))
        for i, c in enumerate(doc.get("counter_arrays", [])):
            direct = bool(c.get("is_direct"))
            unit = enum_const(COUNTER_TYPE, self._counter_unit(c["name"], direct),
                              f"counter_arrays[{i}]")
            if direct:
                self._add(ir.ExternInstance(c["name"], c["name"], "direct_counter", (), [unit]))
            else:
                self._add(ir.ExternInstance(c["name"], c["name"], "counter", (),
                                            [ir.Const(int(c["size"]), type=U32), unit]))
        for i, m in enumerate(doc.get("meter_arrays", [])):
            where = f'meter_arrays[{i}] "{m.get("name")}"'
            mtype = enum_const(METER_TYPE, m.get("type", "packets"), where)
            if m.get("rate_count", 2) != 2:
                raise Bmv2JsonError(where, "only two-rate meters (v1model's) are supported")
            if m.get("is_direct"):
                self._add(ir.ExternInstance(m["name"], m["name"], "direct_meter", (), [mtype]))
            else:
                self._add(ir.ExternInstance(m["name"], m["name"], "meter", (),
                                            [ir.Const(int(m["size"]), type=U32), mtype]))

    def _signed_registers(self) -> set[str]:
        """Registers read into int<W> fields: BMv2 JSON gives a register only a bitwidth,
        the P4 source declared register<int<W>>."""
        out = set()
        x = Exprs(self.lay, "actions", [])
        for a in self.doc.get("actions", []):
            for p in a.get("primitives", []):
                if isinstance(p, dict) and p.get("op") == "register_read":
                    dst, reg = p["parameters"][0], p["parameters"][1]
                    if dst.get("type") == "field":
                        t = x.value(dst).type
                        if isinstance(t, ir.BitsType) and t.signed:
                            out.add(reg.get("value"))
        return out

    def _action_profile(self, ap: dict) -> None:
        sel = ap.get("selector")
        size = ir.Const(int(ap.get("max_size", 0)), type=U32)
        if sel:
            algo = Primitives(Exprs(self.lay, f'action_profiles "{ap["name"]}"', []),
                              self.ctx).calc_inputs({"name": ap["name"], **sel})[0]
            self._add(ir.ExternInstance(ap["name"], ap["name"], "action_selector", (),
                                        [algo, size]))
        else:
            self._add(ir.ExternInstance(ap["name"], ap["name"], "action_profile", (), [size]))

    def _add(self, inst: ir.ExternInstance) -> None:
        self.instances[inst.name] = inst

    # -- actions -----------------------------------------------------------------------------
    def _actions(self) -> None:
        seen: dict[str, tuple[str, str]] = {}  # name -> (key, canonical JSON)
        for i, a in enumerate(self.doc.get("actions", [])):
            if not isinstance(a, dict) or "name" not in a or "id" not in a:
                raise Bmv2JsonError(f"actions[{i}]", "an action needs a name and an id")
            where = f'actions[{i}] "{a["name"]}"'
            body = json.dumps([a.get("runtime_data"), _strip(a.get("primitives"))],
                              sort_keys=True)
            key = a["name"]
            if key in seen:
                if seen[key][1] == body:  # p4c's per-table copy of the same action
                    self.action_key[a["id"]] = seen[key][0]
                    continue
                key = f"{a['name']}${a['id']}"
            seen.setdefault(a["name"], (key, body))
            params = []
            for rd in a.get("runtime_data", []):
                params.append(ir.Param(rd["name"], "", ir.BitsType(int(rd["bitwidth"]))))
            x = Exprs(self.lay, where, params)
            block = Primitives(x, self.ctx).block(a.get("primitives", []))
            # p4c's synthesized actions, and its specialized copies of one action (bound to
            # other directional arguments; P4Info lists the name once) are hidden
            hidden = (_SYNTH_ACTION.match(a["name"]) and a["name"] != "NoAction") or \
                key != a["name"]
            ann = {"hidden": ""} if hidden else {}
            self.actions[key] = ir.Action(key, a["name"], params, block, ann)
            self.action_key[a["id"]] = key
            self.action_json[a["id"]] = a

    def _bound(self, where: str, action_id: Any, data: list) -> ir.BoundAction:
        key = self.action_key.get(action_id)
        if key is None:
            raise Bmv2JsonError(where, f"unknown action id {action_id!r}")
        act = self.actions[key]
        if len(data or []) != len(act.data_params):
            raise Bmv2JsonError(where, f"{act.cp_name} takes {len(act.data_params)} action "
                                f"data values, got {len(data or [])}")
        args = [convert(ir.Const(_hexint(v, where), type=ir.InfIntType()), p.type)
                for v, p in zip(data or [], act.data_params, strict=True)]
        return ir.BoundAction(key, args)

    # -- parser ------------------------------------------------------------------------------
    def _parser(self) -> ir.Parser:
        self.value_sets = {}
        for i, vs in enumerate(self.doc.get("parse_vsets", [])):
            where = f'parse_vsets[{i}] "{vs.get("name")}"'
            if not isinstance(vs, dict) or "name" not in vs:
                raise Bmv2JsonError(where, "a value set needs a name")
            self.value_sets[vs["name"]] = ir.ValueSet(
                vs["name"], vs["name"], ir.BitsType(int(vs.get("compressed_bitwidth", 0))),
                int(vs.get("max_size", 0)))
        parsers = self.doc.get("parsers", [])
        if len(parsers) != 1:
            raise Bmv2JsonError("parsers", f"a v1model program has one parser, got {len(parsers)}")
        p = parsers[0]
        states: dict[str, ir.ParserState] = {}
        err_code = {n: v for n, v in self.doc.get("errors", [])}
        init = p.get("init_state")
        for st in p.get("parse_states", []):
            where = f'parsers[0] state "{st.get("name")}"'
            x = Exprs(self.lay, where, [], lookahead=_lookahead)
            prims = Primitives(x, self.ctx)
            stmts: list[ir.Stmt] = []
            for k, op in enumerate(st.get("parser_ops", [])):
                stmts.extend(self._parser_op(x, prims, op, k, err_code))
            keys = [x.value(k) for k in st.get("transition_key", [])]
            trans = self._transition(where, x, keys, st.get("transitions", []))
            name = "start" if st["name"] == init else st["name"]
            states[name] = ir.ParserState(name, stmts, trans)
        if init is None or "start" not in states:
            raise Bmv2JsonError("parsers[0]", f"init_state {init!r} is not one of its states")
        if init != "start":
            for s in states.values():
                _rename_target(s.transition, init, "start")
        return ir.Parser("parser", _v1_params(self.lay, "parser"), [], {}, self.value_sets,
                         states)

    def _parser_op(self, x: Exprs, prims: Primitives, op: dict, k: int,
                   err_code: dict) -> list[ir.Stmt]:
        kind = op.get("op")
        ps = op.get("parameters", [])
        if kind == "extract":
            (h,) = ps
            e: ir.Expr
            if h.get("type") == "union_stack":  # [stack, member]: member of us.next
                stack = self.lay.header(h["value"][0], x.where)
                nxt = ir.StackNext(stack, type=elem_type(stack.type))
                e = ir.Member(nxt, h["value"][1], type=field_type(nxt.type, h["value"][1]))
            else:
                e = x.value(h)
                if h.get("type") == "stack":
                    e = ir.StackNext(e, type=elem_type(e.type))
            return with_siblings_invalid(e, ir.Extract(e))
        if kind == "extract_VL":
            h, n = ps
            return [ir.Extract(x.value(h), convert(x.value(n.get("value", n)
                                                            if n.get("type") == "expression"
                                                            else n), U32))]
        if kind == "set":
            dst, src = ps
            lhs = x.value(dst)
            return [ir.Assign(lhs, convert(x.value(src), lhs.type))]
        if kind == "verify":
            cond, err = ps
            code = x.value(err)
            return [ir.ExternCall(None, "verify", [convert(x.value(cond), BOOL),
                                                   convert(code, ir.ErrorType())
                                                   if not isinstance(code, ir.Const)
                                                   else ir.Const(int(code.value),
                                                                 type=ir.ErrorType())])]
        if kind == "advance":
            (n,) = ps
            return [ir.Advance(convert(x.value(n), U32))]
        if kind == "primitive":
            return [s for inner in ps for s in prims.one(inner, k)]
        raise x.err(f"parser op {k} {kind!r} is not supported")

    def _transition(self, where: str, x: Exprs, keys: list[ir.Expr], trans: list
                    ) -> ir.Transition:
        if not keys:
            nxt = trans[0].get("next_state") if trans else None
            return ir.Transition(nxt or "accept")
        key = keys[0]
        for k in keys[1:]:
            w = sum(_width(e) for e in (key, k))
            key = ir.Concat(_as_bits(key), _as_bits(k), type=ir.BitsType(w))
        key = _as_bits(key)
        cases = []
        for t in trans:
            nxt = t.get("next_state") or "accept"
            if t.get("type") == "default":
                cases.append(ir.SelectCase([ir.KeysetDefault()], nxt))
            elif t.get("type") == "hexstr":
                v = _hexint(t["value"], where)
                ks = ir.KeysetValue(v) if t.get("mask") is None else \
                    ir.KeysetMask(v, _hexint(t["mask"], where))
                cases.append(ir.SelectCase([ks], nxt))
            elif t.get("type") == "parse_vset" and t.get("value") in self.value_sets:
                if t.get("mask") is not None:
                    raise x.err("a masked value-set transition is not supported")
                cases.append(ir.SelectCase([ir.KeysetValueSet(t["value"])], nxt))
            else:
                raise x.err(f"transition type {t.get('type')!r} is not supported")
        if not any(isinstance(c.keysets[0], ir.KeysetDefault) for c in cases):
            # BMv2 accepts a packet no transition matches (p4c writes no reject for it)
            cases.append(ir.SelectCase([ir.KeysetDefault()], "accept"))
        return ir.Transition(None, [key], cases)

    # -- controls ----------------------------------------------------------------------------
    def _pipeline(self, p: dict) -> ir.Control:
        role = p["name"]
        where = f'pipelines["{role}"]'
        tables_json = {t["name"]: t for t in p.get("tables", [])}
        conds = {c["name"]: c for c in p.get("conditionals", [])}
        g = Graph(where, tables_json, conds, {})
        tables: dict[str, ir.Table] = {}
        used: list[str] = []
        for name, t in tables_json.items():
            if not _synthesized(t):
                tables[name] = self._table(f'{where} table "{name}"', t)
                for ref in tables[name].actions:
                    if ref.action not in used:
                        used.append(ref.action)

        def table_stmt(name: str) -> list[ir.Stmt] | None:
            t = tables_json[name]
            if not _synthesized(t):
                return None
            ba = self._bound(f'{where} table "{name}"', t["default_entry"]["action_id"],
                             t["default_entry"].get("action_data", []))
            act = self.actions[ba.action]
            if "hidden" in act.annotations:
                return list(act.body.stmts)
            if ba.action not in used:
                used.append(ba.action)
            return [ir.ActionCall(ba.action, ba.args)]

        def cond_expr(name: str) -> ir.Expr:
            x = Exprs(self.lay, f'{where} conditional "{name}"', [])
            return convert(x.expression(conds[name].get("expression")), BOOL)

        start = p.get("init_table")
        pdom = post_dominators(g, start)
        body = ir.Block(Structurer(g, pdom, table_stmt, cond_expr).emit(start, None))
        # the direct meters' result_target is written when the table runs: read into it first
        for t in tables.values():
            if t.direct_meter:
                target = self._meter_target(t.direct_meter)
                for ref in t.actions:
                    a = self.actions[ref.action]
                    a.body.stmts.insert(0, ir.ExternCall(t.direct_meter, "read", [target],
                                                         (target.type,)))
        # a direct counter or meter belongs to its table's control (P4Info lists it there)
        own = {n: self.instances.pop(n) for t in tables.values()
               for n in (t.direct_counter, t.direct_meter) if n in self.instances}
        for name, t in tables.items():
            if _HIDDEN_TABLE.match(name):
                t.annotations["hidden"] = ""
        return ir.Control(role, _v1_params(self.lay, "control"), [], own, used, tables, body)

    def _meter_target(self, name: str) -> ir.Expr:
        for m in self.doc.get("meter_arrays", []):
            if m["name"] == name:
                inst, f = m["result_target"]
                return self.lay.field(inst, f, f'meter_arrays "{name}"')
        raise Bmv2JsonError(f'meter_arrays "{name}"', "missing")

    def _table(self, where: str, t: dict) -> ir.Table:
        x = Exprs(self.lay, where, [])
        keys = []
        for k in t.get("key", []):
            mk = k.get("match_type")
            if mk == "valid":
                mk = "exact"
            if mk not in _MATCH_KINDS:
                raise Bmv2JsonError(where, f"match type {mk!r} is not supported")
            tgt = k.get("target")
            e = x.value({"type": "field", "value": tgt}) if isinstance(tgt, list) else \
                x.expression(tgt)
            if k.get("mask"):
                e = ir.Binary("&", e, convert(ir.Const(_hexint(k["mask"], where),
                                                       type=ir.InfIntType()), e.type), type=e.type)
            kname = k.get("name") or ".".join(tgt)
            if mk == "ternary" and self._p4info_match(t["name"], kname) == OPTIONAL:
                mk = "optional"  # BMv2 has no optional; p4c's P4Info says which were
            keys.append(ir.TableKey(e, mk, kname))
        kind = t.get("type", "simple")
        impl = None
        if kind in ("indirect", "indirect_ws"):
            impl = t.get("action_profile")
            if impl not in self.instances:
                raise Bmv2JsonError(where, f"unknown action profile {impl!r}")
            inst = self.instances[impl]
            if inst.type_name == "action_selector":
                for ap in self._profiles():
                    if ap["name"] == impl:
                        for e in ap["selector"].get("input", []):
                            keys.append(ir.TableKey(x.value(e), "selector",
                                                    ".".join(e.get("value", []))))
        elif kind != "simple":
            raise Bmv2JsonError(where, f"table type {kind!r} is not supported")
        refs = []
        for aid in t.get("action_ids", []):
            key = self.action_key.get(aid)
            if key is None:
                raise Bmv2JsonError(where, f"unknown action id {aid!r}")
            refs.append(ir.ActionRef(key))
        de = t.get("default_entry") or {}
        if "action_id" in de:
            default = self._bound(where, de["action_id"], de.get("action_data", []))
        else:  # BMv2 JSON has no default entry for indirect tables: a miss runs nothing
            if MISS_ACTION not in self.actions:
                self.actions[MISS_ACTION] = ir.Action(MISS_ACTION, MISS_ACTION, [], ir.Block(),
                                                      {"hidden": ""})
            default = ir.BoundAction(MISS_ACTION, [])
        table = ir.Table(t["name"], t["name"], keys, refs, default,
                         bool(de.get("action_const")), int(t.get("max_size", 1024)),
                         implementation=impl)
        if t.get("with_counters"):
            table.direct_counter = self._direct_binding("counter_arrays", t["name"], where)
        if t.get("direct_meters"):
            table.direct_meter = t["direct_meters"]
        if t.get("support_timeout"):
            table.annotations["support_timeout"] = "true"
        entries = t.get("entries")
        if entries:
            table.const_entries = [self._entry(where, table, e) for e in entries]
            if table.has_priority:
                top = max(int(e.get("priority", 0)) for e in entries)
                for ce, e in zip(table.const_entries, entries, strict=True):
                    ce.priority = top + 1 - int(e.get("priority", 0))
        return table

    def _p4info_match(self, table: str, key: str) -> int | None:
        if self.p4info is None:
            return None
        for t in self.p4info.tables:
            if t.preamble.name == table:
                for f in t.match_fields:
                    if f.name == key:
                        return f.match_type
        return None

    def _profiles(self) -> list[dict]:
        return [ap for p in self.doc.get("pipelines", []) for ap in p.get("action_profiles", [])]

    def _direct_binding(self, key: str, table: str, where: str) -> str:
        for c in self.doc.get(key, []):
            if c.get("is_direct") and c.get("binding") == table:
                return c["name"]
        raise Bmv2JsonError(where, f"with_counters but no direct counter is bound to {table!r}")

    def _entry(self, where: str, table: ir.Table, e: dict) -> ir.ConstEntry:
        keys = []
        for tk, mk in zip(table.keys, e.get("match_key", []), strict=False):
            kind = mk.get("match_type")
            w = tk.width
            if kind == "exact":
                keys.append(ir.EntryKey("exact", _hexint(mk["key"], where)))
            elif kind == "lpm":
                plen = int(mk["prefix_length"])
                mask = ((1 << plen) - 1) << (w - plen) if plen else 0
                keys.append(ir.EntryKey("lpm", _hexint(mk["key"], where), mask,
                                        prefix_len=plen))
            elif kind in ("ternary", "optional"):
                mask = _hexint(mk["mask"], where)
                if kind == "optional":
                    kind = "ternary" if mask else "default"
                keys.append(ir.EntryKey(kind, _hexint(mk["key"], where), mask)
                            if kind != "default" else ir.EntryKey("default"))
            elif kind == "range":
                keys.append(ir.EntryKey("range", _hexint(mk["start"], where),
                                        hi=_hexint(mk["end"], where)))
            else:
                raise Bmv2JsonError(where, f"entry match type {kind!r} is not supported")
        ae = e.get("action_entry", {})
        return ir.ConstEntry(keys, self._bound(where, ae.get("action_id"),
                                               ae.get("action_data", [])))

    def _checksums(self) -> tuple[ir.Control, ir.Control]:
        verify: list[ir.Stmt] = []
        update: list[ir.Stmt] = []
        calcs = {c["name"]: c for c in self.doc.get("calculations", [])}
        for i, ck in enumerate(self.doc.get("checksums", [])):
            where = f'checksums[{i}] "{ck.get("name")}"'
            x = Exprs(self.lay, where, [])
            calc = calcs.get(ck.get("calculation"))
            if calc is None:
                raise Bmv2JsonError(where, f"no calculation {ck.get('calculation')!r}")
            payload = any(e.get("type") == "payload" for e in calc.get("input", []))
            inputs = {**calc, "input": [e for e in calc.get("input", [])
                                        if e.get("type") != "payload"]}
            algo, data = Primitives(x, self.ctx).calc_inputs(inputs)
            target = x.value({"type": "field", "value": ck["target"]})
            cond = ck.get("if_cond")
            c = convert(x.expression(cond), BOOL) if cond else ir.Const(True, type=BOOL)
            suffix = "_with_payload" if payload else ""
            if ck.get("verify"):
                verify.append(ir.ExternCall(None, "verify_checksum" + suffix,
                                            [c, data, target, algo]))
            if ck.get("update"):
                update.append(ir.ExternCall(None, "update_checksum" + suffix,
                                            [c, data, target, algo]))
        params = _v1_params(self.lay, "checksum")
        return (ir.Control("verify_checksum", params, [], {}, [], {}, ir.Block(verify)),
                ir.Control("compute_checksum", params, [], {}, [], {}, ir.Block(update)))

    def _deparser(self) -> ir.Control:
        deps = self.doc.get("deparsers", [])
        if len(deps) != 1:
            raise Bmv2JsonError("deparsers", f"a v1model program has one deparser, got "
                                f"{len(deps)}")
        d = deps[0]
        if d.get("primitives"):
            raise Bmv2JsonError('deparsers[0]', "deparser primitives are not supported")
        stmts: list[ir.Stmt] = [ir.Emit(self.lay.header(n, "deparsers[0]"))
                                for n in d.get("order", [])]
        return ir.Control("deparser", _v1_params(self.lay, "deparser"), [], {}, [], {},
                          ir.Block(stmts))

    def _controller_headers(self) -> dict[str, ir.HeaderType]:
        """@controller_header is not in BMv2 JSON: taken from p4c's P4Info when given (the
        header type whose fields are the metadata's), else from the header type names
        (``packet_in_header_t``, ``packet_out_t``...)."""
        out: dict[str, ir.HeaderType] = {}
        used = {ht for k, ht in self.lay.where.values() if k == "header"}
        if self.p4info is not None:
            for cpm in self.p4info.controller_packet_metadata:
                want = [(m.name, m.bitwidth) for m in cpm.metadata]
                for ht in used:
                    have = [(f.name, ir.type_width(f.type)) for f in ht.fields]
                    if have == want:
                        out[cpm.preamble.name] = ht
                        break
            return out
        for role in ("packet_in", "packet_out"):
            for ht in used:
                if ht.name.startswith(role):
                    out[role] = ht
                    break
        return out


def _strip(prims: object) -> object:
    """Primitives without their source_info (which differs between p4c's copies)."""
    if isinstance(prims, list):
        return [_strip(p) for p in prims]
    if isinstance(prims, dict):
        return {k: _strip(v) for k, v in prims.items() if k != "source_info"}
    return prims


def _synthesized(t: dict) -> bool:
    """p4c's keyless table around straight-line code: no key, one action, const default."""
    de = t.get("default_entry") or {}
    return (t.get("name", "").startswith("tbl_") and not t.get("key")
            and len(t.get("action_ids", [])) == 1 and bool(de.get("action_const"))
            and not t.get("entries"))


def _lookahead(offset: int, width: int) -> ir.Expr:
    look = ir.Lookahead(type=ir.BitsType(offset + width))
    if offset == 0:
        return look
    return ir.Slice(look, width - 1, 0, type=ir.BitsType(width))


def _width(e: ir.Expr) -> int:
    return 1 if isinstance(e.type, ir.BoolType) else ir.type_width(e.type)


def _as_bits(e: ir.Expr) -> ir.Expr:
    if isinstance(e.type, ir.BitsType) and not e.type.signed:
        return e
    return convert(e, ir.BitsType(_width(e)))


def _rename_target(t: ir.Transition, old: str, new: str) -> None:
    if t.next_state == old:
        t.next_state = new
    for c in t.cases:
        if c.next_state == old:
            c.next_state = new


def build_program(doc: dict, p4info: p4info_pb2.P4Info | None = None,
                  name: str = "program.json") -> ir.Program:
    return _Builder(doc, p4info).build(name)
