"""The native back end's generator: a v1model ``ir.Program`` → C for the simulator's packet
path, compiled in-process (build.py) and driven by ``pipeline.NativePipeline``.

It is the eBPF generator (``p4switch.ebpf.cgen.CGen``) with the kernel taken out: the same
translation of expressions, statements, actions, the parser's states and hash inputs, the
same C representation (every scalar a ``__u64``, per-packet state in one ``struct p4ctx``);
what differs is overridden here — packet bytes come from a buffer, tables, registers and
counters live in a ``struct p4pipe`` (cruntime.TABLES) instead of BPF maps, ``random()``
draws from the Python pipeline's Mersenne Twister, and the deparser writes the frame into an
output buffer. Two entry points mirror the Python pipeline's halves around the queue:
``p4n_ingress`` (parser, verify_checksum, ingress: the job's egress port, length and
priority) and ``p4n_egress`` (egress with the queue's metadata, compute_checksum, deparser);
``p4n_process`` runs both with an empty queue's metadata (``Pipeline.process_fast``).

What the simulator's fused path does not do either is refused with a located error
(``NativeUnsupported``): clones, multicast, resubmit, recirculate, digests, log_msg,
truncate, meters, action selectors, varbit headers, signed or non-numeric registers, keys or
random() values of 64 bits and more.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from p4switch import ir
from p4switch.ebpf.cgen import HASH_BUF, CGen, _mask, _width
from p4switch.ebpf.cruntime import CRC_TABLES, HASH_FNS, crc_table
from p4switch.ebpf.layout import STAT_NAMES
from p4switch.errors import P4CompileError

from .cruntime import ENTRIES, HEAD, PIPE, TABLES

_REFUSED_FUNCTIONS = ("clone", "clone_preserving_field_list", "digest", "log_msg", "resubmit",
                      "resubmit_preserving_field_list", "recirculate",
                      "recirculate_preserving_field_list", "truncate")


class NativeUnsupported(P4CompileError):
    """A construct the native back end cannot express; ``str()`` is ``file:line:col: ...``."""


@dataclass
class TableInfo:
    """What the pipeline needs to copy a table's entries into C: its index in ``P->t``,
    its actions in the order of the C ``switch`` (action index = position + 1)."""

    cp_name: str
    index: int
    actions: list[str]
    direct_counter: bool


@dataclass
class NativeProgram:
    """The generated C and the indexes the pipeline binds state by."""

    source: str
    tables: dict[str, TableInfo] = field(default_factory=dict)
    registers: dict[str, int] = field(default_factory=dict)  # cp name -> index in P->r
    counters: dict[str, int] = field(default_factory=dict)   # cp name -> index in P->cp/cb
    max_header_bytes: int = 0                                # the deparser adds at most this


class NativeGen(CGen):
    """Generates the native C for one program (``generate_native``)."""

    unsupported = NativeUnsupported
    backend = "the native back end"
    for_max = 1 << 31  # the Python target does not bound loops; this only ends a runaway one

    def __init__(self, program: ir.Program, *, drop_port: int = 511,
                 cpu_port: int | None = None) -> None:
        super().__init__(program, drop_port=drop_port, cpu_port=cpu_port)
        self.out = NativeProgram("")
        self.nk = 1  # most keys of a table
        self.nd = 1  # most data parameters of an action

    # -- packet bytes ----------------------------------------------------------------------
    def load_bytes(self, n: str) -> str:
        # the caller has checked C->off + n <= C->plen
        return f"(memcpy(C->xb, C->pkt + C->off, {n}), 0)"

    def extract_varbit(self, s: ir.Extract, t: ir.HeaderType) -> None:
        raise self.refuse(f"extract of {t.name}, a header with a varbit field", s.loc)

    # -- no locks: one thread per switch ---------------------------------------------------
    def rmw_region(self, ss: list[ir.Stmt], i: int) -> None:
        return None

    # -- tables ----------------------------------------------------------------------------
    def table_info(self, t: ir.Table) -> TableInfo:
        ti = self.out.tables.get(t.cp_name)
        if ti is not None:
            return ti
        if t.implementation is not None:
            inst = self.instance(t.implementation)
            if inst.type_name != "action_profile":
                raise self.refuse(f"a table with an {inst.type_name}", t.loc)
        if t.direct_meter is not None:
            raise self.refuse("a direct meter", t.loc)
        keys = [k for k in t.keys if k.match_kind != "selector"]
        for k in keys:
            if k.width > 64 or k.width <= 0:
                raise self.refuse(f"the {k.width}-bit key {k.name}", t.loc)
            if k.match_kind not in ("exact", "lpm", "ternary", "range", "optional"):
                raise self.refuse(f"the match kind {k.match_kind}", t.loc)
        self.nk = max(self.nk, len(keys))
        acts = [r.action for r in t.actions]
        self.nd = max([self.nd] + [len(self.p.actions[a].data_params) for a in acts])
        ti = TableInfo(t.cp_name, len(self.out.tables), acts, t.direct_counter is not None)
        self.out.tables[t.cp_name] = ti
        return ti

    def apply_table(self, name: str, hit_var: str | None = None,
                    act_var: str | None = None) -> None:
        t = self.table(name)
        if t.loc is not None:
            self.loc = t.loc
        ti = self.table_info(t)
        keys = [k for k in t.keys if k.match_kind != "selector"]
        v = self.fresh("_v")
        self.w("{")
        self.ind += 1
        if keys:
            kn = self.fresh("_k")
            self.w(f"__u64 {kn}[{len(keys)}];")
            for i, k in enumerate(keys):
                self.w(f"{kn}[{i}] = {self.key_value(k)};")
            self.w(f"const nt_hit *{v} = nt_lookup(P->t[{ti.index}], {kn});")
        else:
            self.w(f"const nt_hit *{v} = nt_lookup(P->t[{ti.index}], 0);")
        if hit_var:
            self.w(f"{hit_var} = !{v}->dflt;")
        if ti.direct_counter:
            self.w(f"if (!{v}->dflt) {{ P->t[{ti.index}]->dcp[{v}->ctr] += 1; "
                   f"P->t[{ti.index}]->dcb[{v}->ctr] += C->sm.f_packet_length; }}")
        if act_var:
            self.w(f"{act_var} = {v}->action;")
        self.w(f"switch ({v}->action) {{")
        for i, ref in enumerate(t.actions):
            act = self.p.actions[ref.action]
            self.w(f"case {i + 1}:")
            self.ind += 1
            data = [f"{v}->d[{j}]" for j in range(len(act.data_params))]
            self.call_action(ref.action, list(ref.args), data)
            self.w("break;")
            self.ind -= 1
        self.w("}")
        self.ind -= 1
        self.w("}")

    def visit_SwitchAction(self, s: ir.SwitchAction) -> None:
        act = self.fresh("_act")
        self.w(f"__u32 {act} = 0;")
        self.apply_table(s.table, act_var=act)
        names = self.out.tables[self.table(s.table).cp_name].actions
        self.switch(act, [(None if c.actions is None
                           else [str(names.index(a) + 1) for a in c.actions], c.body)
                          for c in s.cases])

    # -- externs ---------------------------------------------------------------------------
    def register_index(self, inst: ir.ExternInstance) -> tuple[int, int, int]:
        """(index in P->r, size, cell width) of a register the back end can share with the
        Python pipeline's cells (unsigned, at most 64 bits)."""
        t = inst.type_args[0] if inst.type_args else None
        if not isinstance(t, ir.BitsType) or t.signed or t.width > 64:
            raise self.refuse(f"a register of {t}", inst.loc)
        size = int(inst.args[0].value) if isinstance(inst.args[0], ir.Const) else None
        if size is None:
            raise self.refuse("a register whose size is not a constant", inst.loc)
        idx = self.out.registers.setdefault(inst.cp_name, len(self.out.registers))
        return idx, size, t.width

    def counter_index(self, inst: ir.ExternInstance) -> tuple[int, int]:
        size = int(inst.args[0].value) if isinstance(inst.args[0], ir.Const) else None
        if size is None:
            raise self.refuse("a counter whose size is not a constant", inst.loc)
        idx = self.out.counters.setdefault(inst.cp_name, len(self.out.counters))
        return idx, size

    def extern_call(self, s: ir.ExternCall) -> None:
        if s.instance is not None:
            inst = self.instance(s.instance)
            tn = inst.type_name
            if tn == "direct_counter" and s.method == "count":
                return  # counted by the table lookup
            if tn == "counter" and s.method == "count":
                k, size = self.counter_index(inst)
                self.w(f"{{ __u64 _i = {self.ex(s.args[0])}; if (_i < {size}) {{ "
                       f"P->cp[{k}][_i] += 1; P->cb[{k}][_i] += C->sm.f_packet_length; }} }}")
                return
            if tn == "register" and s.method in ("read", "write"):
                k, size, w = self.register_index(inst)
                if s.method == "read":
                    out, idx = s.args
                    self.w(f"{{ __u64 _i = {self.ex(idx)}; {self.lval(out)} = _i < {size} ? "
                           f"P->r[{k}][_i] : 0; }}")
                else:
                    idx, val = s.args
                    self.w(f"{{ __u64 _i = {self.ex(idx)}; __u64 _x = ({self.ex(val)}) & "
                           f"{_mask(w)}; if (_i < {size}) P->r[{k}][_i] = _x; }}")
                return
            raise self.refuse(f"{tn}.{s.method}", s.loc)
        fn = s.method
        if fn in _REFUSED_FUNCTIONS:
            raise self.refuse(f"the extern function {fn}", s.loc)
        if fn == "random":
            rout, rlo, rhi = s.args
            if _width(rout.type) >= 64:
                raise self.refuse("random() of 64 bits", s.loc)
            # Python: rng.randint(lo, hi) if hi >= lo else lo
            self.w(f"{{ __u64 _lo = {self.ex(rlo)}, _hi = {self.ex(rhi)}; {self.lval(rout)} = "
                   f"_hi >= _lo ? _lo + p4n_randbelow(P, _hi - _lo + 1) : _lo; }}")
            return
        super().extern_call(s)

    # -- deparser --------------------------------------------------------------------------
    def deparser(self, c: ir.Control, names: dict[str, str]) -> None:
        emits = self.deparser_emits(c, names)
        self.w("__u8 *_o = out;")
        for lv, t in emits:
            if t.varbit is not None:
                raise self.refuse(f"emit of {t.name}, a header with a varbit field")
            name = self.header_codecs(t)
            nb = t.width // 8
            self.out.max_header_bytes += nb
            self.w(f"if ({lv}.valid) {{ pack_{name}(&{lv}, _o); _o += {nb}; }}")
        self.w("deparse_end:;")
        self.w("if (len > C->off) { memcpy(_o, pkt + C->off, len - C->off); "
               "_o += len - C->off; }")
        self.w("*olen = (__u32)(_o - out);")

    # -- the program -----------------------------------------------------------------------
    def generate_native(self) -> NativeProgram:
        p = self.p
        pr = p.parsers[p.package["parser"]]
        hdr_t, meta_t, sm_t = (pr.params[i].type for i in (1, 2, 3))
        if not isinstance(sm_t, ir.StructType):
            raise self.refuse("a standard_metadata that is not a struct")
        sm = {f.name for f in sm_t.fields}
        for r, t in {"hdr": hdr_t, "meta": meta_t, "sm": sm_t}.items():
            self.ctx_fields.append(f"    {self.ctype(t)} {r};")

        def names_for(params: list[ir.Param], roles: list[str | None]) -> dict[str, str]:
            return {pp.name: f"C->{r}" for pp, r in zip(params, roles, strict=False) if r}

        self.role = "parser"
        self.parser(pr, names_for(pr.params, [None, "hdr", "meta", "sm"]))
        for role in ("verify_checksum", "ingress"):
            self.role = role
            c = p.controls[p.package[role]]
            roles: list[str | None] = ["hdr", "meta", "sm"] if role == "ingress" else ["hdr", "meta"]
            self.control(c, names_for(c.params, roles))
        drop = self.layout.drop_port
        self.w(f"if (C->sm.f_egress_spec == {drop}) return P4N_MARK_TO_DROP;")
        self.w("C->j_port = (__u32)C->sm.f_egress_spec;")
        self.w("C->j_plen = (__u32)C->sm.f_packet_length;")
        self.w("C->j_prio = " + ("(__u32)C->sm.f_priority;" if "priority" in sm else "0;"))
        ingress, self.lines = self.lines, []
        # egress with the queue's metadata: what Pipeline's egress half sets
        for n, v in (("instance_type", "0"), ("egress_port", "C->j_port"), ("egress_spec", "0"),
                     ("packet_length", "C->j_plen"), ("egress_global_timestamp", "now"),
                     ("enq_timestamp", "enq_ts"), ("enq_qdepth", "enq_qdepth"),
                     ("deq_timedelta", "deq_timedelta"), ("deq_qdepth", "deq_qdepth"),
                     ("qid", "qid")):
            if n in sm:
                self.w(f"C->sm.f_{n} = {v};")
        self.w("C->stat = 0;")
        self.role = "egress"
        c = p.controls[p.package["egress"]]
        self.control(c, names_for(c.params, ["hdr", "meta", "sm"]))
        self.w(f"if (C->sm.f_egress_spec == {drop}) return P4N_MARK_TO_DROP;")
        self.role = "compute_checksum"
        c = p.controls[p.package["compute_checksum"]]
        self.control(c, names_for(c.params, ["hdr", "meta"]))
        self.role = "deparser"
        c = p.controls[p.package["deparser"]]
        self.deparser(c, names_for(c.params, [None, "hdr"]))
        egress = self.lines
        if self.repl:
            raise self.refuse("multicast or clones")
        if self.passes:
            raise self.refuse("resubmit or recirculate")
        self.out.source = self.assemble_native(ingress, egress, sm)
        return self.out

    def assemble_native(self, ingress: list[str], egress: list[str], sm: set[str]) -> str:
        seen: set[str] = set()
        ctx = [f for f in self.ctx_fields if not (f in seen or seen.add(f))]  # type: ignore[func-returns-value]  # set.add: None, the dedup idiom
        xb = max(self.max_hdr, 8)
        init = [f"C->sm.f_{n} = {v};" for n, v in (
            ("ingress_port", "port"), ("packet_length", "len"),
            ("ingress_global_timestamp", "now")) if n in sm]
        out = [HEAD,
               f"#define P4N_STAT_ASSERT {STAT_NAMES.index('assert')}\n"
               f"#define NT_NK {self.nk}\n#define NT_ND {self.nd}\n"
               f"#define NT_NT {max(len(self.out.tables), 1)}\n"
               f"#define NT_NR {max(len(self.out.registers), 1)}\n"
               f"#define NT_NC {max(len(self.out.counters), 1)}",
               (CRC_TABLES + HASH_FNS).format(hb=HASH_BUF, crc32=crc_table(0xEDB88320, 8),
                                             crc16=crc_table(0xA001, 4)),
               PIPE.format(nt="NT_NT", nr="NT_NR", nc="NT_NC"),
               TABLES]
        out += list(self.structs.values())
        out.append("struct p4ctx {\n    __u32 j_port;\n    __u32 j_plen;\n    __u32 j_prio;\n"
                   "    __u32 stat;\n    __u32 off;\n    __u32 exiting;\n    __u32 plen;\n"
                   "    __u16 test;\n    __u16 cut;\n    __u64 depart_ns;\n    __u64 now_us;\n"
                   f"    __u64 dm_colour;\n    const __u8 *pkt;\n    __u8 hb[{HASH_BUF}];\n"
                   f"    __u8 xb[{xb}];\n    __u8 mv[64];\n" + "\n".join(ctx) + "\n};")
        out += self.helpers
        out.append("static int p4n_ingress_body(struct p4pipe *P, struct p4ctx *C, "
                   "const __u8 *pkt, __u32 len, __u32 port, __u64 now) {\n"
                   "    memset(C, 0, sizeof(*C));\n    C->pkt = pkt;\n    C->plen = len;\n"
                   "    C->now_us = now;\n"
                   + "".join(f"    {i}\n" for i in init)
                   + "\n".join(ingress) + "\n    return P4N_OK;\n}")
        out.append("static int p4n_egress_body(struct p4pipe *P, struct p4ctx *C, "
                   "const __u8 *pkt, __u32 len, __u64 now, __u64 enq_ts, __u64 enq_qdepth, "
                   "__u64 deq_timedelta, __u64 deq_qdepth, __u64 qid, __u8 *out, "
                   "__u32 *olen) {\n"
                   "    C->pkt = pkt;\n    C->plen = len;\n    C->now_us = now;\n"
                   + "\n".join(egress) + "\n    return P4N_OK;\n}")
        out.append(ENTRIES)
        return "\n\n".join(out) + "\n"


def generate(program: ir.Program, *, drop_port: int = 511,
             cpu_port: int | None = None) -> NativeProgram:
    """The native C for ``program``; NativeUnsupported (located) if it cannot be expressed."""
    return NativeGen(program, drop_port=drop_port, cpu_port=cpu_port).generate_native()
