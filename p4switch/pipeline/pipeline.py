"""``Pipeline``: a v1model program compiled once into Python, plus its control-plane state.

Packet path (BMv2 simple_switch order, read from targets/simple_switch/simple_switch.cpp):

ingress: parser -> verify_checksum -> ingress control, then in this order
  1. clone (I2E): the *original* packet bytes are parsed again (ingress_port kept), user
     metadata reset except the @field_list fields, instance_type INGRESS_CLONE (1), one copy per
     clone-session replica;
  2. digests are reported;
  3. resubmit: the original bytes re-enter ingress (instance_type RESUBMIT (6), metadata reset
     except the preserved field list — BMv2 resets all metadata, so standard_metadata including
     ingress_port starts at 0); the packet itself goes no further;
  4. multicast: mcast_grp != 0 -> one copy per replica of the group (instance_type
     REPLICATION (5), egress_rid = replica instance); the original is discarded;
  5. egress_spec == drop port -> dropped; otherwise instance_type is set to NORMAL (0) and the
     packet is queued for egress_spec. egress_spec starts at 0, so a program that never sets it
     sends the packet to port 0, as BMv2 does.

A parser error does not drop the packet: as in BMv2, parsing stops, standard_metadata.
parser_error gets the error code, headers extracted so far stay valid, the unparsed bytes (from
the failing extract on) are the payload, and ingress runs normally.

egress: egress_port = the queue's port, egress_spec = 0 (BMv2 writes drop_port + 1 into the 9-bit
field, which wraps to 0), queueing metadata from the queue; egress control; clone (E2E): a copy
of the headers as they are now with metadata reset except the field list, instance_type
EGRESS_CLONE (2); egress_spec == drop port -> dropped; compute_checksum + deparser; recirculate:
the deparsed bytes re-enter ingress (instance_type RECIRC (4), packet_length = new length,
metadata reset except the field list).

Counters count bytes = packet_length of the packet as it entered the stage.
"""

from __future__ import annotations

import functools
import random as _random
import re
import struct
import types
from collections import deque
from dataclasses import dataclass
from typing import Any

from p4switch import ir

from . import fused, registry, runtime, v1model
from .api import (
    ActionProfileGroup,
    ActionProfileMember,
    Digest,
    Drop,
    EgressJob,
    EgressResult,
    IngressResult,
    MatchValue,
    MeterConfig,
    Output,
    ProcessResult,
    QueueingMetadata,
    Replica,
    StateCode,
    StateError,
    TableEntry,
)
from .codegen import BlockGen, Module
from .emit import BuildError, fattr, pyname
from .externs import CounterArray, MeterArray, RegisterArray, ValueSet
from .tables import ActionProfileState, TableBatch, TableState, check_params

NORMAL, INGRESS_CLONE, EGRESS_CLONE, COALESCED, RECIRC, REPLICATION, RESUBMIT = range(7)

MAX_RECIRCULATIONS = 16  # resubmit/recirculate passes per packet before it is dropped
MAX_PROCESS_JOBS = 4096  # egress jobs one process() call follows
# what stops a parser/control/deparser run with the packet dropped (asserts, parser errors,
# malformed packets, out-of-range stack indices)
_BLOCK_FAILURES = (runtime.AssertSignal, runtime.ParserErrorSignal, runtime.PacketError, IndexError)

_STANDARD_FIELDS = (
    ("ingress_port", 9), ("egress_spec", 9), ("egress_port", 9), ("instance_type", 32),
    ("packet_length", 32), ("enq_timestamp", 32), ("enq_qdepth", 19), ("deq_timedelta", 32),
    ("deq_qdepth", 19), ("ingress_global_timestamp", 48), ("egress_global_timestamp", 48),
    ("mcast_grp", 16), ("egress_rid", 16), ("checksum_error", 1), ("priority", 3),
)


@dataclass(frozen=True, eq=False)
class _Code:
    """One program's generated code, shared read-only by every instance made from it
    (``Pipeline.new_instance``): the compiled module, the globals it was generated against
    (the first instance's state objects), and the names the linker looks up in it."""

    code: types.CodeType
    source: str
    globals: dict[str, Any]
    fnames: dict[str, str]
    classes: tuple[str, str, str]
    blocks: list[tuple[ir.Control, dict[str, str], dict[tuple[str, str], str]]]
    fused_reason: str | None
    hdr_t: ir.Type
    meta_t: ir.Type
    sm_t: ir.StructType


_IMMUTABLE = (type, types.BuiltinFunctionType, struct.Struct, int, float, str, bytes, bool,
              type(None))


def _shareable(val: Any, seen: set[int] | None = None) -> bool:
    """True if ``val`` holds no state of its own: an immutable value, a class, a builtin or
    compiled Struct, a tuple of such, or a plain function whose closure holds only such."""
    if isinstance(val, _IMMUTABLE):
        return True
    seen = set() if seen is None else seen
    if id(val) in seen:
        return True
    seen.add(id(val))
    if isinstance(val, tuple | frozenset):
        return all(_shareable(v, seen) for v in val)
    if isinstance(val, types.FunctionType):
        return all(_shareable(c.cell_contents, seen) for c in val.__closure__ or ())
    return False


class _PacketState:
    """What travels from ingress to egress inside an EgressJob."""

    __slots__ = ("hdr", "meta", "sm", "payload", "truncate", "depth")

    def __init__(self, hdr: Any, meta: Any, sm: Any, payload: bytes, truncate: int | None,
                 depth: int) -> None:
        self.hdr, self.meta, self.sm = hdr, meta, sm
        self.payload, self.truncate, self.depth = payload, truncate, depth


class Pipeline:
    """A v1model program ready to process packets (see the module docstring and api.py)."""

    def __init__(self, program: ir.Program, *, drop_port: int = 511, cpu_port: int | None = None,
                 seed: int | None = None) -> None:
        v1model.declare_once()
        self._init_state(program, drop_port, cpu_port, seed)
        code = self._generate()
        self._link(code, code.globals)

    def new_instance(self, seed: int | None = None) -> Pipeline:
        """Another pipeline of the same program, drop port and CPU port, with its own fresh
        state (empty tables, zeroed registers, counters and meters, ``random()`` seeded with
        ``seed``), as ``Pipeline(self.program, ...)`` would give — but sharing this one's
        generated code instead of generating and compiling it again (a fabric of hundreds of
        switches runs one program: code generation is ~all of a Pipeline's build time).

        The generated code reaches state through module globals bound to run-time objects
        (tables, register and counter arrays, a table's exact-match dict); the new instance
        executes the same compiled code object with those globals re-pointed at its own
        objects. A global that is neither such an object nor immutable raises BuildError
        rather than be shared. This pipeline's state is neither read nor changed."""
        new = Pipeline.__new__(Pipeline)
        new._init_state(self.program, self.drop_port, self.cpu_port, seed)
        new._link(self._code, new._rebind(self, self._code.globals))
        return new

    # ------------------------------------------------------------------------------------
    # Build: state, then code generation (once per program), then linking code to state
    # ------------------------------------------------------------------------------------
    def _init_state(self, program: ir.Program, drop_port: int, cpu_port: int | None,
                    seed: int | None) -> None:
        """The control-plane state objects, all empty: what every instance has of its own."""
        self.program = program
        self.drop_port = drop_port
        self.cpu_port = cpu_port
        self.rng = _random.Random(seed)
        self._names_changed()
        self.tables: dict[str, TableState] = {}
        self.registers: dict[str, RegisterArray] = {}
        self.counters: dict[str, CounterArray] = {}
        self.direct_counters: dict[str, str] = {}  # direct_counter cp name -> table cp name
        self.meters: dict[str, MeterArray] = {}
        self.direct_meters: dict[str, str] = {}
        self.profiles: dict[str, ActionProfileState] = {}
        self.value_sets: dict[str, ValueSet] = {}
        self.mcast: dict[int, list[Replica]] = {}
        self.clone_sess: dict[int, tuple[list[Replica], int]] = {}
        self._objs: dict[int, Any] = {}
        prog = program
        for role in ir.V1SWITCH_ROLES:
            if role not in prog.package:
                raise BuildError(f"the V1Switch package has no {role} block")
        for inst in prog.all_instances():
            self._make_extern(inst)
        for p in prog.parsers.values():
            for vs in p.value_sets.values():
                obj = ValueSet(vs)
                self.value_sets[vs.cp_name] = obj
                self._objs[id(vs)] = obj
        for c in prog.controls.values():
            for t in c.tables.values():
                ts = TableState(t, prog)
                self.tables[t.cp_name] = ts
                self._objs[id(t)] = ts
                if t.implementation:
                    impl = c.instances.get(t.implementation) or prog.instances.get(
                        t.implementation)
                    if impl is None:
                        raise BuildError(f"table {t.cp_name}: unknown {t.implementation}")
                    ts.profile = self._objs[id(impl)]
                    ts.profile.tables.append(ts)
                if t.direct_counter:
                    inst = c.instances.get(t.direct_counter) or prog.instances[t.direct_counter]
                    self.direct_counters[inst.cp_name] = t.cp_name
                if t.direct_meter:
                    inst = c.instances.get(t.direct_meter) or prog.instances[t.direct_meter]
                    self.direct_meters[inst.cp_name] = t.cp_name
        self._names_changed()  # the name spaces are complete now

    def _generate(self) -> _Code:
        """Generate and compile the program's Python against this instance's state objects."""
        prog = self.program
        mod = Module(prog)
        parser = prog.parsers[prog.package["parser"]]
        data_params = [p for p in parser.params if not isinstance(p.type, ir.ExternType)]
        if len(data_params) != 3:
            raise BuildError("the v1model parser needs (packet_in, hdr, meta, standard_metadata)")
        self.hdr_t, self.meta_t, sm_t = (p.type for p in data_params)
        if not isinstance(sm_t, ir.StructType):
            raise BuildError("standard_metadata is not a struct")
        have = {f.name for f in sm_t.fields}
        extra = tuple(ir.Field(n, ir.BitsType(w)) for n, w in _STANDARD_FIELDS if n not in have)
        if "parser_error" not in have:
            extra += (ir.Field("parser_error", ir.ErrorType()),)
        sm_aug = ir.StructType(sm_t.name + "_p4switch", sm_t.fields + extra)
        mod._classes[sm_t] = mod.cls(sm_aug)
        self.sm_t = sm_t
        hdr_cls, meta_cls, sm_cls = (mod.cls(t) for t in (self.hdr_t, self.meta_t, sm_t))

        fnames = {}
        gens: list[BlockGen] = []
        for role in ir.V1SWITCH_ROLES:
            block = prog.block(role)
            sm_var = None
            if role in ("ingress", "egress", "parser"):
                sm_var = _pyname_of(block.params[-1].name)
            gen = BlockGen(
                mod, block,
                kind="parser" if role == "parser" else ("deparser" if role == "deparser"
                                                        else "control"),
                resolve_instance=functools.partial(self._instance, block),
                runtime_obj=lambda i: self._objs[id(i)],
                table_state=lambda t: self._objs[id(t)],
                drop_port=self.drop_port,
                sm_var=sm_var,
            )
            fname = f"block_{role}"
            lines = gen.gen_parser(fname) if role == "parser" else gen.gen_control(fname)
            mod.lines.extend(lines)
            fnames[role] = fname
            gens.append(gen)

        # the fused process() path (fused.py), when the program allows it
        fused_reason: str | None = None
        try:
            fused_lines = fused.generate(
                mod, prog, "process_fused", drop_port=self.drop_port,
                slow_fns={g.block.name: g.action_fns for g in gens},
                bound_fns={g.block.name: g.bound_fns for g in gens},
                resolve_instance=self._instance,
                runtime_obj=lambda i: self._objs[id(i)],
                table_state=lambda t: self._objs[id(t)],
            )
        except fused.NotFusable as exc:
            fused_reason = str(exc)
        else:
            mod.lines.extend(fused_lines)
        mod.globals.update(runtime.make_helpers(self._err("StackOutOfBounds")))
        too_short = self._err("PacketTooShort")
        mod.globals.update(
            _shl=runtime.shl, _hmod=runtime.hmod, _hdr_from_int=runtime.hdr_from_int,
            _mkh=runtime.mkh, _mks=runtime.mks, _eq=runtime.eq, _log=runtime.log,
            _look=lambda p, pos, n: runtime.look(p, pos, n, too_short),
            _digest=_digest, _Drop=Drop, _PR=ProcessResult, _Out=Output, _new=object.__new__,
            _IR=IngressResult, _ER=EgressResult, _EJ=EgressJob,
            _describe=self._describe, _ARet=runtime.ActionReturn,
        )
        source = "\n".join(mod.lines) + "\n"
        filename = f"<p4switch:{prog.main_file or 'program'}>"
        code = _Code(
            code=compile(source, filename, "exec"), source=source, globals=dict(mod.globals),
            fnames=fnames, classes=(hdr_cls, meta_cls, sm_cls),
            blocks=[(g.block, g.action_fns, g.bound_fns) for g in gens
                    if isinstance(g.block, ir.Control)],
            fused_reason=fused_reason, hdr_t=self.hdr_t, meta_t=self.meta_t, sm_t=sm_t)
        return code

    def _link(self, code: _Code, globs: dict[str, Any]) -> None:
        """Execute the compiled program with ``globs`` (bound to this instance's state) and
        wire the resulting functions into the tables and the packet path."""
        self._code = code
        self.source = code.source
        self.hdr_t, self.meta_t, self.sm_t = code.hdr_t, code.meta_t, code.sm_t
        self.fused_reason = code.fused_reason
        rng = self.rng
        ns = dict(globs)
        ns["_random"] = lambda lo, hi: rng.randint(lo, hi) if hi >= lo else lo
        exec(code.code, ns)  # noqa: S102 - our own generated code
        fnames = code.fnames
        hdr_cls, meta_cls, sm_cls = code.classes
        self._parser = ns[fnames["parser"]]
        self._verify = ns[fnames["verify_checksum"]]
        self._ingress_fn = ns[fnames["ingress"]]
        self._egress_fn = ns[fnames["egress"]]
        self._compute = ns[fnames["compute_checksum"]]
        self._deparser = ns[fnames["deparser"]]
        self._hdr_cls, self._meta_cls, self._sm_cls = ns[hdr_cls], ns[meta_cls], ns[sm_cls]
        self._has_qid = "f_qid" in self._sm_cls._fields
        self._has_priority = "f_priority" in self._sm_cls._fields
        self._fused = ns.get("process_fused") if code.fused_reason is None else None
        self._fused_lean = ns.get("process_fused_lean") if code.fused_reason is None else None
        if self._fused is not None and self._fused_lean is not None:
            # the generated functions are process()/process_fast() themselves (they take any
            # bytes-like packet): no method frame in between
            self.process = self._fused  # type: ignore[method-assign]  # the generated functions replace the methods per instance
            self.process_fast = self._fused_lean  # type: ignore[method-assign]  # as process
            # the two halves around the queue (fused._assemble_halves)
            self.ingress_fast = ns["process_fused_ingress"]  # type: ignore[method-assign]  # as process
            self.egress_fast = ns["process_fused_egress"]  # type: ignore[method-assign]  # as process
            if "process_fused_ingress_lean" in ns:
                self.ingress_lean = ns["process_fused_ingress_lean"]  # type: ignore[method-assign]  # as process
                self.egress_lean = ns["process_fused_egress_lean"]  # type: ignore[method-assign]  # as process

        for block, action_fns, bound_fns in code.blocks:
            fns = {k: ns[v] for k, v in action_fns.items()}
            for t in block.tables.values():
                ts = self._objs[id(t)]
                # actions whose directional arguments this table binds get its own functions
                tfns = {**fns, **{a: ns[v] for (tn, a), v in bound_fns.items()
                                  if tn == t.name}}
                ts.bind(tfns)
                if ts.profile is not None:
                    ts.profile.fns = getattr(ts.profile, "fns", {})
                    ts.profile.fns.update(tfns)

        # user-metadata fields to preserve, per @field_list index
        self.field_lists: dict[int, list[str]] = {}
        if isinstance(self.meta_t, ir.StructType):
            for f in self.meta_t.fields:
                for name, body in f.annotations:
                    if name == "field_list":
                        for idx in re.findall(r"\d+", body):
                            self.field_lists.setdefault(int(idx), []).append(fattr(f.name))


    def _rebind(self, template: Pipeline, globs: dict[str, Any]) -> dict[str, Any]:
        """``template``'s generated globals with each of its state objects (and the lists and
        dicts they hold) replaced by this instance's counterpart; immutable ones are shared."""
        counterpart: dict[int, Any] = {}
        for key, old in template._objs.items():
            new = self._objs[key]
            counterpart[id(old)] = new
            for attr, val in vars(old).items() if hasattr(old, "__dict__") else ():
                if isinstance(val, list | dict | memoryview) and hasattr(new, attr):
                    counterpart[id(val)] = getattr(new, attr)
        out: dict[str, Any] = {}
        for name, val in globs.items():
            hit = counterpart.get(id(val))
            if hit is not None:
                out[name] = hit
            elif _shareable(val):
                out[name] = val
            else:
                raise BuildError(f"generated global {name} ({type(val).__name__}) is state "
                                 "new_instance cannot give the new pipeline a copy of")
        return out

    def _err(self, name: str) -> int:
        try:
            return self.program.error_code(name)
        except ValueError:
            return 0

    def _instance(self, block: ir.Parser | ir.Control, name: str) -> ir.ExternInstance:
        inst = block.instances.get(name) or self.program.instances.get(name)
        if inst is None:
            raise BuildError(f"unknown extern instance {name}")
        return inst

    def _make_extern(self, inst: ir.ExternInstance) -> None:
        """The run-time state of one extern instance, as the extern registry declares it."""
        kind = registry.extern_object(inst.type_name)
        if kind is None:
            raise BuildError(f"unsupported extern {inst.type_name} ({inst.cp_name})", inst.loc)
        obj = kind.make_state(inst)
        if not kind.direct and kind.space is not None:
            self._space(kind.space)[inst.cp_name] = obj
        self._objs[id(inst)] = obj

    # ------------------------------------------------------------------------------------
    # Packet path
    # ------------------------------------------------------------------------------------
    def ingress(self, data: bytes, port: int, now_us: int) -> IngressResult:
        res = IngressResult()
        jobs: list[tuple[Any, ...]] = []
        self._run_ingress(bytes(data), port, now_us, NORMAL, None, res, jobs, 0)
        res.jobs = self._jobs(jobs)
        return res

    def _jobs(self, jobs: list[tuple[Any, ...]]) -> list[EgressJob]:
        """EgressJobs of (port, instance_type, packet_length, state) tuples; each carries its
        standard_metadata.priority, which picks the egress priority queue."""
        if self._has_priority:
            return [EgressJob(j[0], j[1], j[2], j[3], j[3].sm.f_priority) for j in jobs]
        return [EgressJob(j[0], j[1], j[2], j[3]) for j in jobs]

    def _preserve(self, meta: Any, fl: int | None) -> list[tuple[str, Any]] | None:
        if fl is None or fl < 0:
            return None
        return [(n, getattr(meta, n)) for n in self.field_lists.get(fl, [])]

    def _run_ingress(self, data: bytes, port: int, now: int, itype: int,
                     keep: list[tuple[str, Any]] | None, res: Any, jobs: list[tuple[Any, ...]],
                     depth: int) -> None:
        """Ingress of one packet instance; appends (port, instance_type, packet_length, state)
        tuples to ``jobs`` and digests/drops/logs to ``res``."""
        hdr, meta, sm = self._hdr_cls(), self._meta_cls(), self._sm_cls()
        plen = len(data)
        sm.f_ingress_port = port
        sm.f_packet_length = plen
        sm.f_instance_type = itype
        sm.f_ingress_global_timestamp = now
        if keep:
            for n, v in keep:
                setattr(meta, n, v)
        ctx = runtime.Ctx(now, plen)
        try:
            pos, err = self._parser(data, hdr, meta, sm, ctx)
            sm.f_parser_error = err
            ctx.payload = data[pos:]
            self._verify(hdr, meta, ctx)
            sm.f_checksum_error = ctx.checksum_error
            self._ingress_fn(hdr, meta, sm, ctx)
        except _BLOCK_FAILURES as exc:
            self._fail(ctx, res, "ingress", exc)
            return
        if ctx.digests is not None or ctx.logs is not None:
            self._collect(ctx, res)
        if ctx.clone is not None or ctx.resubmit is not None:
            if self._ingress_specials(data, port, now, plen, meta, ctx, res, jobs, depth):
                return
        mgid = sm.f_mcast_grp
        if mgid:
            replicas = self.mcast.get(mgid)
            if not replicas:
                res.drops.append(Drop("no_egress", f"multicast group {mgid} has no replicas"))
                return
            sm.f_instance_type = REPLICATION
            self._replicate(replicas, hdr, meta, sm, ctx.payload, ctx.truncate, depth,
                            REPLICATION, jobs, set_rid=True)
            return
        spec = sm.f_egress_spec
        if spec == self.drop_port:
            res.drops.append(Drop("mark_to_drop"))
            return
        sm.f_instance_type = NORMAL
        jobs.append((spec, NORMAL, sm.f_packet_length,
                     _PacketState(hdr, meta, sm, ctx.payload, ctx.truncate, depth)))

    def _ingress_specials(self, data: bytes, port: int, now: int, plen: int, meta: Any,
                          ctx: runtime.Ctx, res: Any, jobs: list[tuple[Any, ...]],
                          depth: int) -> bool:
        """I2E clone and resubmit at the end of ingress; True if the packet goes no further."""
        if ctx.clone is not None:
            _, session, fl = ctx.clone
            cfg = self.clone_sess.get(session)
            if cfg is not None:
                c_hdr, c_meta, c_sm = self._hdr_cls(), self._meta_cls(), self._sm_cls()
                c_sm.f_ingress_port = port
                c_ctx = runtime.Ctx(now, plen)
                try:
                    pos2, err2 = self._parser(data, c_hdr, c_meta, c_sm, c_ctx)
                except (runtime.ParserErrorSignal, runtime.PacketError, IndexError) as exc:
                    res.drops.append(Drop("error", f"clone re-parse: {self._describe(exc)}"))
                else:
                    c_meta = self._meta_cls()
                    for n, v in self._preserve(meta, fl) or []:
                        setattr(c_meta, n, v)
                    c_sm = self._sm_cls()
                    c_sm.f_ingress_port = port
                    c_sm.f_parser_error = err2
                    c_sm.f_instance_type = INGRESS_CLONE
                    c_sm.f_packet_length = plen
                    c_sm.f_ingress_global_timestamp = now
                    self._replicate(cfg[0], c_hdr, c_meta, c_sm, data[pos2:],
                                    cfg[1] or None, depth, INGRESS_CLONE, jobs, set_rid=False)
        if ctx.resubmit is not None:
            if depth >= MAX_RECIRCULATIONS:
                res.drops.append(Drop("error", "too many resubmissions"))
                return True
            self._run_ingress(data, 0, now, RESUBMIT, self._preserve(meta, ctx.resubmit), res,
                              jobs, depth + 1)
            return True
        return False

    def _replicate(self, replicas: list[Replica], hdr: Any, meta: Any, sm: Any, payload: bytes,
                   truncate: int | None, depth: int, itype: int, jobs: list[tuple[Any, ...]],
                   set_rid: bool) -> None:
        last = len(replicas) - 1
        for i, r in enumerate(replicas):
            if i == last:
                h, m, s = hdr, meta, sm
            else:
                h, m, s = hdr.copy(), meta.copy(), sm.copy()
            if set_rid:
                s.f_egress_rid = r.instance
            jobs.append((r.egress_port, itype, s.f_packet_length,
                         _PacketState(h, m, s, payload, truncate, depth)))

    @staticmethod
    def _describe(exc: BaseException) -> str:
        if isinstance(exc, runtime.ParserErrorSignal):
            return f"error code {exc.code}"
        return f"{type(exc).__name__}: {exc}"

    @classmethod
    def _fail(cls, ctx: runtime.Ctx, res: Any, where: str, exc: BaseException) -> None:
        """A block that stopped with ``exc``: keep what it produced so far, drop the packet."""
        cls._collect(ctx, res)
        if isinstance(exc, runtime.AssertSignal):
            res.drops.append(Drop("assert", f"assert/assume failed in {where}"))
        else:
            res.drops.append(Drop("error", f"{where}: {cls._describe(exc)}"))

    @staticmethod
    def _collect(ctx: runtime.Ctx, res: Any) -> None:
        if ctx.digests:
            res.digests.extend(ctx.digests)
        if ctx.logs:
            res.logs.extend(ctx.logs)

    def egress(self, job: EgressJob, now_us: int, qmeta: QueueingMetadata) -> EgressResult:
        res = EgressResult()
        jobs: list[tuple[Any, ...]] = []
        self._run_egress(job.egress_port, job.packet_length, job.state, now_us,
                         qmeta.enq_timestamp, qmeta.enq_qdepth, qmeta.deq_timedelta,
                         qmeta.deq_qdepth, qmeta.qid, res, res.outputs, jobs)
        res.jobs = self._jobs(jobs)
        return res

    def _run_egress(self, port: int, plen: int, st: _PacketState, now_us: int, enq_ts: int,
                    enq_qdepth: int, deq_timedelta: int, deq_qdepth: int, qid: int, res: Any,
                    outputs: list[Output], jobs: list[tuple[Any, ...]]) -> None:
        hdr, meta, sm = st.hdr, st.meta, st.sm
        sm.f_egress_port = port
        sm.f_egress_spec = 0
        sm.f_packet_length = plen
        sm.f_egress_global_timestamp = now_us
        sm.f_enq_timestamp = enq_ts
        sm.f_enq_qdepth = enq_qdepth
        sm.f_deq_timedelta = deq_timedelta
        sm.f_deq_qdepth = deq_qdepth
        if self._has_qid:
            sm.f_qid = qid
        ctx = runtime.Ctx(now_us, plen)
        ctx.payload = st.payload
        try:
            self._egress_fn(hdr, meta, sm, ctx)
        except _BLOCK_FAILURES as exc:
            self._fail(ctx, res, "egress", exc)
            return
        if ctx.digests is not None or ctx.logs is not None:
            self._collect(ctx, res)
        if ctx.clone is not None:
            _, session, fl = ctx.clone
            cfg = self.clone_sess.get(session)
            if cfg is not None:
                c_meta = self._meta_cls()
                for n, v in self._preserve(meta, fl) or []:
                    setattr(c_meta, n, v)
                c_sm = self._sm_cls()
                c_sm.f_instance_type = EGRESS_CLONE
                c_sm.f_packet_length = plen
                self._replicate(cfg[0], hdr.copy(), c_meta, c_sm, st.payload, cfg[1] or None,
                                st.depth, EGRESS_CLONE, jobs, set_rid=False)
        if sm.f_egress_spec == self.drop_port:
            res.drops.append(Drop("mark_to_drop", "dropped in egress"))
            return
        try:
            self._compute(hdr, meta, ctx)
            out = self._deparser(hdr, ctx)
        except (runtime.ParserErrorSignal, runtime.PacketError, IndexError) as exc:
            res.drops.append(Drop("error", f"deparser: {self._describe(exc)}"))
            return
        out.append(st.payload)
        data = b"".join(out)
        if ctx.recirculate is not None:
            if st.depth >= MAX_RECIRCULATIONS:
                res.drops.append(Drop("error", "too many recirculations"))
                return
            self._run_ingress(data, 0, now_us, RECIRC, self._preserve(meta, ctx.recirculate),
                              res, jobs, st.depth + 1)
            return
        trunc = ctx.truncate if ctx.truncate is not None else st.truncate
        if trunc is not None and trunc < len(data):
            data = data[:trunc]
        outputs.append(Output(port, data))

    # Where the program is fusable, __init__ binds the generated functions over ``process``,
    # ``process_fast``, ``ingress_fast`` and ``egress_fast`` per instance, so these methods only
    # run the general driver.
    def ingress_fast(self, data: bytes, port: int, now_us: int) -> IngressResult:
        """``ingress`` through the fused code where the program fuses. Its jobs are for
        ``egress_fast`` only (their state is the fused code's locals, not ``egress``'s)."""
        return self.ingress(data, port, now_us)

    def egress_fast(self, job: EgressJob, now_us: int, qmeta: QueueingMetadata) -> EgressResult:
        """``egress`` of a job ``ingress_fast`` made, through the fused code where it fuses."""
        return self.egress(job, now_us, qmeta)

    def ingress_lean(self, data: bytes, port: int, now_us: int) -> EgressJob | Drop | IngressResult:
        """``ingress_fast`` without a result object in the common cases: its one job, or the
        one ``Drop`` of a packet dropped with nothing else to report; otherwise the result."""
        r = self.ingress_fast(data, port, now_us)
        if not (r.digests or r.logs):
            if len(r.jobs) == 1 and not r.drops:
                return r.jobs[0]
            if not r.jobs and len(r.drops) == 1:
                return r.drops[0]
        return r

    def egress_lean(self, job: EgressJob, now_us: int,
                    qmeta: QueueingMetadata) -> tuple[int, bytes] | Drop | EgressResult:
        """``egress_fast`` without a result object in the common cases: ``(port, bytes)`` of
        its one output, or its one ``Drop``; otherwise the result."""
        r = self.egress_fast(job, now_us, qmeta)
        if not (r.digests or r.logs or r.jobs):
            if len(r.outputs) == 1 and not r.drops:
                o = r.outputs[0]
                return (o.port, o.data)
            if not r.outputs and len(r.drops) == 1:
                return r.drops[0]
        return r

    def process(self, data: bytes, port: int, now_us: int) -> ProcessResult:
        return self.process_general(data, port, now_us)

    def process_fast(self, data: bytes, port: int,
                     now_us: int) -> tuple[int, bytes] | Drop | ProcessResult:
        """``process`` without result objects in the common cases (api.PipelineAPI)."""
        res = self.process_general(data, port, now_us)
        if len(res.outputs) == 1 and not (res.drops or res.digests or res.logs):
            out = res.outputs[0]
            return (out.port, out.data)
        return res

    def process_general(self, data: bytes, port: int, now_us: int) -> ProcessResult:
        """``process`` through the general driver (ingress, then egress per copy); the fused
        path must give the same results wherever it applies."""
        res = ProcessResult()
        jobs: list[tuple[Any, ...]] = []
        self._run_ingress(bytes(data), port, now_us, NORMAL, None, res, jobs, 0)
        if not jobs:
            return res
        outputs = res.outputs
        if len(jobs) == 1:
            eport, _, plen, st = jobs.pop()
            self._run_egress(eport, plen, st, now_us, now_us, 0, 0, 0, 0, res, outputs, jobs)
            if not jobs:
                return res
        queue = deque(jobs)
        jobs.clear()
        done = 1
        while queue:
            done += 1
            if done > MAX_PROCESS_JOBS:
                res.drops.append(Drop("error", "too many copies"))
                break
            eport, _, plen, st = queue.popleft()
            self._run_egress(eport, plen, st, now_us, now_us, 0, 0, 0, 0, res, outputs, jobs)
            if jobs:
                queue.extend(jobs)
                jobs.clear()
        return res

    # ------------------------------------------------------------------------------------
    # Names
    # ------------------------------------------------------------------------------------
    def _space(self, kind: str) -> dict[str, Any]:
        spaces: dict[str, dict[str, Any]] = {
            "table": self.tables,
            "action": self.program.actions,
            "counter": self.counters,
            "direct_counter": self.direct_counters,
            "register": self.registers,
            "meter": self.meters,
            "direct_meter": self.direct_meters,
            "action_profile": self.profiles,
            "value_set": self.value_sets,
        }
        if kind not in spaces:
            raise StateError(StateCode.INVALID_ARGUMENT, f"unknown kind {kind!r}")
        return spaces[kind]

    def resolve(self, kind: str, name: str) -> str:
        """See api.py. Answers are cached per (kind, name): a table write resolves its table
        and its action, and building the suffix and control-plane-name maps each time cost
        ~45 µs per entry. The name spaces are fixed once the state exists (a new program is
        a new Pipeline); whatever changes them must call ``_names_changed``."""
        key = (kind, name)
        full = self._resolved.get(key)
        if full is None:
            full = self._resolved[key] = self._resolve_uncached(kind, name)
        return full

    def _names_changed(self) -> None:
        """Forget cached name resolutions (the pipeline's name spaces changed)."""
        self._resolved: dict[tuple[str, str], str] = {}

    def _resolve_uncached(self, kind: str, name: str) -> str:
        space = self._space(kind)
        if kind == "action":
            full = {a.cp_name: k for k, a in self.program.actions.items()}
            if name in space:
                return name
            if name in full:
                return full[name]
            hits = [k for cp, k in full.items() if cp.endswith("." + name)]
        else:
            if name in space:
                return name
            hits = [k for k in space if k.endswith("." + name)]
        if len(hits) == 1:
            return hits[0]
        if not hits:
            raise StateError(StateCode.NOT_FOUND, f"no {kind} named {name!r}")
        raise StateError(StateCode.NOT_FOUND, f"{kind} name {name!r} is ambiguous: {hits}")

    def _table(self, name: str) -> TableState:
        return self.tables[self.resolve("table", name)]

    def _resolve_entry(self, entry: TableEntry) -> TableEntry:
        if entry.action is None:
            return entry
        key = self.resolve("action", entry.action)
        return TableEntry(**{**vars(entry), "action": key})

    # ------------------------------------------------------------------------------------
    # Tables
    # ------------------------------------------------------------------------------------
    def table_add(self, table: str, entry: TableEntry) -> None:
        ts = self._table(table)
        ts.add(self._resolve_entry(entry))

    def table_modify(self, table: str, entry: TableEntry) -> None:
        ts = self._table(table)
        ts.modify(self._resolve_entry(entry))

    def table_delete(self, table: str, match: dict[str, MatchValue], priority: int = 0) -> None:
        self._table(table).delete(match, priority)

    def table_entries(self, table: str) -> list[TableEntry]:
        return self._table(table).list_entries()

    def table_get(self, table: str, match: dict[str, MatchValue],
                  priority: int = 0) -> TableEntry | None:
        return self._table(table).get(match, priority)

    def table_batch(self) -> TableBatch:
        return TableBatch(self._table, self._resolve_entry)

    def table_set_default(self, table: str, action: str, params: dict[str, int]) -> None:
        ts = self._table(table)
        ts.set_default(self.resolve("action", action), params)

    def table_get_default(self, table: str) -> TableEntry:
        e = self._table(table).default_entry
        return TableEntry(match={}, action=e.action, params=dict(e.params))

    def table_clear(self, table: str) -> None:
        self._table(table).clear()

    def direct_counts(self, table: str) -> list[tuple[dict[str, MatchValue], int, int, int]]:
        """(match, priority, packets, bytes) of ``table``'s entries whose direct counter is
        not 0, as ``table_entries`` orders them: a big table's counts without a copy of every
        entry (a simulated k=32 fabric's route tables hold ~600 entries per switch)."""
        ts = self._table(table)
        if not ts.table.direct_counter:
            raise StateError(StateCode.INVALID_ARGUMENT, f"{ts.table.cp_name} has no direct counter")
        return ts.counted()

    def direct_counter_write(self, table: str, match: dict[str, MatchValue], priority: int,
                             packets: int, bytes_: int) -> None:
        ts = self._table(table)
        if not ts.table.direct_counter:
            raise StateError(StateCode.INVALID_ARGUMENT, f"{ts.table.cp_name} has no direct counter")
        if not (0 <= packets < 1 << 64 and 0 <= bytes_ < 1 << 64):
            raise StateError(StateCode.INVALID_ARGUMENT, "counter values must be 0 .. 2^64-1")
        es = ts.find(match, priority)
        es.packets, es.bytes = packets, bytes_

    # ------------------------------------------------------------------------------------
    # Action profiles
    # ------------------------------------------------------------------------------------
    def _profile(self, name: str) -> ActionProfileState:
        return self.profiles[self.resolve("action_profile", name)]

    def _member_hit(self, prof: ActionProfileState, m: ActionProfileMember) -> tuple[Any, ...]:
        key = self.resolve("action", m.action)
        refs = prof.table_actions()
        if key not in refs:
            raise StateError(StateCode.INVALID_ARGUMENT,
                             f"action {m.action} is not an action of {prof.cp_name}'s tables")
        if refs[key].scope == "defaultonly":
            raise StateError(StateCode.INVALID_ARGUMENT, f"action {m.action} is @defaultonly")
        act = self.program.actions[key]
        check_params(act, m.params)
        fns = getattr(prof, "fns", {})
        args = tuple(m.params[p.name] for p in act.data_params)
        return (key, fns.get(key), args, None)

    def _refresh(self, prof: ActionProfileState) -> None:
        prof.refresh_groups()
        for t in prof.tables:
            t.refresh_profile_hits()

    def act_prof_add_member(self, profile: str, member: ActionProfileMember) -> None:
        prof = self._profile(profile)
        if member.member_id in prof.members:
            raise StateError(StateCode.ALREADY_EXISTS, f"member {member.member_id} exists")
        if len(prof.members) >= prof.size:
            raise StateError(StateCode.RESOURCE_EXHAUSTED, f"{prof.cp_name} is full")
        hit = self._member_hit(prof, member)
        prof.members[member.member_id] = ActionProfileMember(member.member_id, hit[0],
                                                             dict(member.params))
        prof.member_hits[member.member_id] = hit

    def act_prof_modify_member(self, profile: str, member: ActionProfileMember) -> None:
        prof = self._profile(profile)
        if member.member_id not in prof.members:
            raise StateError(StateCode.NOT_FOUND, f"no member {member.member_id}")
        hit = self._member_hit(prof, member)
        prof.members[member.member_id] = ActionProfileMember(member.member_id, hit[0],
                                                             dict(member.params))
        prof.member_hits[member.member_id] = hit
        self._refresh(prof)

    def act_prof_delete_member(self, profile: str, member_id: int) -> None:
        prof = self._profile(profile)
        if member_id not in prof.members:
            raise StateError(StateCode.NOT_FOUND, f"no member {member_id}")
        for g in prof.groups.values():
            if any(mid == member_id for mid, _ in g.members):
                raise StateError(StateCode.FAILED_PRECONDITION,
                                 f"member {member_id} is in group {g.group_id}")
        for t in prof.tables:
            if any(es.entry.member_id == member_id for es in t.entries.values()):
                raise StateError(StateCode.FAILED_PRECONDITION,
                                 f"member {member_id} is used by {t.table.cp_name}")
        del prof.members[member_id]
        del prof.member_hits[member_id]

    def act_prof_members(self, profile: str) -> list[ActionProfileMember]:
        prof = self._profile(profile)
        return [ActionProfileMember(m.member_id, m.action, dict(m.params))
                for m in sorted(prof.members.values(), key=lambda m: m.member_id)]

    def _check_group(self, prof: ActionProfileState, group: ActionProfileGroup) -> None:
        if not prof.selector:
            raise StateError(StateCode.INVALID_ARGUMENT, f"{prof.cp_name} is not a selector")
        seen = set()
        for mid, weight in group.members:
            if mid not in prof.members:
                raise StateError(StateCode.NOT_FOUND, f"no member {mid}")
            if mid in seen:
                raise StateError(StateCode.INVALID_ARGUMENT, f"member {mid} listed twice")
            if weight < 1:
                raise StateError(StateCode.INVALID_ARGUMENT, "weights must be >= 1")
            seen.add(mid)
        if group.max_size and len(group.members) > group.max_size:
            raise StateError(StateCode.RESOURCE_EXHAUSTED, "group larger than its max_size")

    def act_prof_add_group(self, profile: str, group: ActionProfileGroup) -> None:
        prof = self._profile(profile)
        if group.group_id in prof.groups:
            raise StateError(StateCode.ALREADY_EXISTS, f"group {group.group_id} exists")
        self._check_group(prof, group)
        prof.groups[group.group_id] = ActionProfileGroup(group.group_id, list(group.members),
                                                         group.max_size)
        self._refresh(prof)

    def act_prof_modify_group(self, profile: str, group: ActionProfileGroup) -> None:
        prof = self._profile(profile)
        if group.group_id not in prof.groups:
            raise StateError(StateCode.NOT_FOUND, f"no group {group.group_id}")
        self._check_group(prof, group)
        prof.groups[group.group_id] = ActionProfileGroup(group.group_id, list(group.members),
                                                         group.max_size)
        self._refresh(prof)

    def act_prof_delete_group(self, profile: str, group_id: int) -> None:
        prof = self._profile(profile)
        if group_id not in prof.groups:
            raise StateError(StateCode.NOT_FOUND, f"no group {group_id}")
        for t in prof.tables:
            if any(es.entry.group_id == group_id for es in t.entries.values()):
                raise StateError(StateCode.FAILED_PRECONDITION,
                                 f"group {group_id} is used by {t.table.cp_name}")
        del prof.groups[group_id]
        prof.group_hits.pop(group_id, None)

    def act_prof_groups(self, profile: str) -> list[ActionProfileGroup]:
        prof = self._profile(profile)
        return [ActionProfileGroup(g.group_id, list(g.members), g.max_size)
                for g in sorted(prof.groups.values(), key=lambda g: g.group_id)]

    # ------------------------------------------------------------------------------------
    # Counters, registers, meters
    # ------------------------------------------------------------------------------------
    def _counter(self, name: str, index: int) -> CounterArray:
        c = self.counters[self.resolve("counter", name)]
        if not 0 <= index < c.size:
            raise StateError(StateCode.OUT_OF_RANGE, f"index {index} outside {c.inst.cp_name}")
        return c

    def counter_read(self, counter: str, index: int) -> tuple[int, int]:
        c = self._counter(counter, index)
        return c.packets[index], c.bytes[index]

    def counter_write(self, counter: str, index: int, packets: int, bytes_: int) -> None:
        c = self._counter(counter, index)
        if not (0 <= packets < 1 << 64 and 0 <= bytes_ < 1 << 64):
            raise StateError(StateCode.INVALID_ARGUMENT, "counter values must be 0 .. 2^64-1")
        c.packets[index], c.bytes[index] = packets, bytes_

    def counter_size(self, counter: str) -> int:
        return self.counters[self.resolve("counter", counter)].size

    def _register(self, name: str, index: int) -> RegisterArray:
        r = self.registers[self.resolve("register", name)]
        if not 0 <= index < r.size:
            raise StateError(StateCode.OUT_OF_RANGE, f"index {index} outside {r.inst.cp_name}")
        return r

    def register_read(self, register: str, index: int) -> int:
        return self._register(register, index).values[index]

    def register_write(self, register: str, index: int, value: int) -> None:
        r = self._register(register, index)
        if not 0 <= value < (1 << r.width):
            raise StateError(StateCode.INVALID_ARGUMENT,
                             f"value {value:#x} does not fit {r.width} bits")
        r.values[index] = value

    def register_size(self, register: str) -> int:
        return self.registers[self.resolve("register", register)].size

    def _meter(self, name: str, index: int) -> MeterArray:
        m = self.meters[self.resolve("meter", name)]
        if not 0 <= index < m.size:
            raise StateError(StateCode.OUT_OF_RANGE, f"index {index} outside {m.inst.cp_name}")
        return m

    def meter_set(self, meter: str, index: int, config: MeterConfig | None) -> None:
        m = self._meter(meter, index)
        if config is not None:
            if min(config.cir, config.cburst, config.pir, config.pburst) < 0:
                raise StateError(StateCode.INVALID_ARGUMENT, "meter rates/bursts must be >= 0")
            if config.pir < config.cir:
                raise StateError(StateCode.INVALID_ARGUMENT, "RFC 2698 needs PIR >= CIR")
            config = MeterConfig(config.cir, config.cburst, config.pir, config.pburst)
        m.meters[index].set(config)

    def meter_get(self, meter: str, index: int) -> MeterConfig | None:
        c = self._meter(meter, index).meters[index].config
        return None if c is None else MeterConfig(c.cir, c.cburst, c.pir, c.pburst)

    # ------------------------------------------------------------------------------------
    # Replication
    # ------------------------------------------------------------------------------------
    @staticmethod
    def _check_replicas(replicas: list[Replica]) -> list[Replica]:
        seen = set()
        for r in replicas:
            if not 0 <= r.egress_port < (1 << 32) or r.instance < 0:
                raise StateError(StateCode.INVALID_ARGUMENT, f"bad replica {r}")
            if (r.egress_port, r.instance) in seen:
                raise StateError(StateCode.INVALID_ARGUMENT, f"duplicate replica {r}")
            seen.add((r.egress_port, r.instance))
        return [Replica(r.egress_port, r.instance) for r in replicas]

    def mcast_group_set(self, group_id: int, replicas: list[Replica]) -> None:
        if not 0 < group_id < (1 << 16):
            raise StateError(StateCode.INVALID_ARGUMENT, "multicast group ids are 1..65535")
        self.mcast[group_id] = self._check_replicas(replicas)

    def mcast_group_delete(self, group_id: int) -> None:
        if group_id not in self.mcast:
            raise StateError(StateCode.NOT_FOUND, f"no multicast group {group_id}")
        del self.mcast[group_id]

    def mcast_groups(self) -> dict[int, list[Replica]]:
        return {g: [Replica(r.egress_port, r.instance) for r in rs] for g, rs in self.mcast.items()}

    def clone_session_set(self, session_id: int, replicas: list[Replica],
                          truncate_bytes: int = 0) -> None:
        if session_id < 0 or truncate_bytes < 0:
            raise StateError(StateCode.INVALID_ARGUMENT, "bad clone session")
        self.clone_sess[session_id] = (self._check_replicas(replicas), truncate_bytes)

    def clone_session_delete(self, session_id: int) -> None:
        if session_id not in self.clone_sess:
            raise StateError(StateCode.NOT_FOUND, f"no clone session {session_id}")
        del self.clone_sess[session_id]

    def clone_sessions(self) -> dict[int, list[Replica]]:
        return {s: [Replica(r.egress_port, r.instance) for r in rs]
                for s, (rs, _) in self.clone_sess.items()}

    # ------------------------------------------------------------------------------------
    # Value sets
    # ------------------------------------------------------------------------------------
    def value_set_set(self, value_set: str, members: list[list[MatchValue]]) -> None:
        self.value_sets[self.resolve("value_set", value_set)].set(members)


def _pyname_of(name: str) -> str:
    return pyname(name)


def _digest(ctx: runtime.Ctx, name: str, receiver: int, values: dict[str, int]) -> None:
    if ctx.digests is None:
        ctx.digests = []
    ctx.digests.append(Digest(name, receiver, {k: int(v) for k, v in values.items()}))
