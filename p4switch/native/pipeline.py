"""``NativePipeline``: a Python ``Pipeline`` whose packet path runs compiled C (cgen.py).

The Python pipeline stays the face and the source of truth: every control-plane call goes to
it (attribute access falls through), and its tables are copied into C after each write (a
hook on the table's ``_install_lookup``, which every write path ends with, marks the copy
stale; the next packet copies the changed tables). Registers and counters are not copied but
shared: their cells become 64-bit memoryviews the C code writes in place, and the Python
pipeline's generated code is re-pointed at them, so reads through either side agree. Direct
counters count in C and are folded into the Python entries before a call through this object
that reads or rewrites them (``flush``; a caller holding the Python pipeline itself calls it). ``random()`` continues the Python pipeline's generator from its state at
wrapping (``sync_rng`` hands the state back).

Packet path: ``process``/``process_fast`` (one C call, empty queue), ``ingress_lean`` /
``egress_lean`` and their ``_fast`` and plain forms (the halves around the queue, the job's
state being the C context and the packet bytes), with the same results as the Python
pipeline's fused path — tests/pipeline/test_native.py runs them in lock-step.
"""

from __future__ import annotations

from typing import Any, Literal

from p4switch import ir
from p4switch.pipeline import Pipeline
from p4switch.pipeline.api import (
    Drop,
    EgressJob,
    EgressResult,
    IngressResult,
    Output,
    ProcessResult,
    QueueingMetadata,
)

from . import build
from .cgen import NativeProgram, NativeUnsupported, generate

_OUT_SLACK = 1 << 16

# program id -> (program, generated C and indexes, compiled module) | the refusal/failure
_PROGRAMS: dict[int, tuple[ir.Program, NativeProgram | None, Any, str | None]] = {}


def compiled(program: ir.Program, drop_port: int = 511,
             cpu_port: int | None = None) -> tuple[NativeProgram, Any]:
    """The native code of ``program`` (generated and compiled once per process; the build
    once per machine): raises NativeUnsupported or build.NativeUnavailable."""
    key = id(program)
    got = _PROGRAMS.get(key)
    if got is None or got[0] is not program:
        try:
            gen = generate(program, drop_port=drop_port, cpu_port=cpu_port)
            mod = build.load(gen.source)
        except (NativeUnsupported, build.NativeUnavailable) as exc:
            _PROGRAMS[key] = (program, None, exc, str(exc))
            raise
        got = _PROGRAMS[key] = (program, gen, mod, None)
    if got[1] is None:
        raise got[2]
    return got[1], got[2]


class _Shared:
    """Per compiled module: the scratch context and output buffer of the one-call path (a
    process runs one packet at a time)."""

    def __init__(self, ffi: Any, max_hdr: int) -> None:
        self.ffi = ffi
        self.ctx = ffi.new("struct p4ctx *")
        self.slack = max_hdr + 64
        self.cap = _OUT_SLACK
        self.out = ffi.new("uint8_t[]", self.cap + self.slack)
        self.out_c = ffi.cast("char *", self.out)  # ffi.unpack of a char * gives bytes
        # contexts of jobs that left egress, for the next ones (any switch's: they hold no
        # state between packets)
        self.pool: list[Any] = []

    def grow(self, n: int) -> None:
        self.cap = max(n, 2 * self.cap)
        self.out = self.ffi.new("uint8_t[]", self.cap + self.slack)
        self.out_c = self.ffi.cast("char *", self.out)


_SHARED: dict[int, _Shared] = {}

STALE: set[NativePipeline] = set()
"""Pipelines whose tables changed since their last copy into C: a caller that runs their C
code itself (sim.core) copies them (``_sync``) before it does."""

# the control-plane calls that read or rewrite direct counters: C's counts are folded in first
_READS_DIRECT = frozenset({"table_entries", "table_get", "table_modify", "table_delete",
                           "table_batch", "table_clear", "direct_counter_write",
                           "direct_counts"})


class NativePipeline:
    """The packet path of ``py`` (a Pipeline) in C; everything else is ``py``'s."""

    native = True

    def __init__(self, py: Pipeline) -> None:
        gen, mod = compiled(py.program, py.drop_port, py.cpu_port)
        self.py = py
        self.gen = gen
        self._mod = mod
        ffi, lib = mod.ffi, mod.lib
        self._ffi, self._lib = ffi, lib
        sh = _SHARED.get(id(mod))
        if sh is None:
            sh = _SHARED[id(mod)] = _Shared(ffi, gen.max_header_bytes)
        self._sh = sh
        self._P = ffi.gc(lib.p4n_pipe_new(), lib.p4n_pipe_free)
        self._tables: list[tuple[Any, Any, Any]] = []  # (TableState, TableInfo, nt_table)
        self._slots: dict[str, list[Any]] = {}  # table -> EntryState of each C hit
        self._keep: list[Any] = []  # buffers C points into
        self._seen: dict[str, tuple[Any, Any]] = {}  # table -> its lookup when copied
        self._dirty = True
        self._bind_tables()
        self._share_cells()
        self.sync_rng(to_python=False)
        self._sync()
        self._process = lib.p4n_process
        self._ingress = lib.p4n_ingress
        self._egress = lib.p4n_egress
        self._new_ctx = lambda: ffi.new("struct p4ctx *")
        self._unpack = ffi.unpack
        self._pool = sh.pool

    # -- state -----------------------------------------------------------------------------
    def _bind_tables(self) -> None:
        lib, ffi = self._lib, self._ffi
        for name, ti in self.gen.tables.items():
            ts = self.py.tables[name]
            nt = ffi.gc(lib.nt_new(), lib.nt_free)
            lib.p4n_set_table(self._P, ti.index, nt)
            self._tables.append((ts, ti, nt))
            install = ts._install_lookup

            def hooked(install: Any = install) -> None:
                install()
                self._dirty = True
                STALE.add(self)

            ts._install_lookup = hooked  # type: ignore[method-assign]  # every table write ends here

    def _share_cells(self) -> None:
        """Registers' and counters' cells as 64-bit memoryviews C writes in place; the Python
        pipeline's generated code re-pointed at them."""
        remap: dict[int, Any] = {}
        lib, ffi = self._lib, self._ffi

        def shared(cells: Any, fmt: Literal["q", "Q"]) -> tuple[Any, Any]:
            """C-owned cells with ``cells``' values, and a memoryview of them for Python."""
            n = len(cells)
            raw_ptr = lib.p4n_cells_new(n)
            if raw_ptr == ffi.NULL:
                raise MemoryError(f"native cells ({n})")
            ptr = ffi.gc(raw_ptr, lambda p, n=n: lib.p4n_cells_free(p, n))
            raw = memoryview(ffi.buffer(ptr, 8 * max(n, 1)))
            mv = raw.cast(fmt)[:n]
            if isinstance(cells, memoryview) and cells.itemsize == 8:
                src = cells.cast("B")
                for i in range(0, 8 * n, 1 << 15):  # untouched pages stay untouched
                    if src[i:i + (1 << 15)].tobytes().strip(b"\0"):
                        raw[i:i + (1 << 15)] = src[i:i + (1 << 15)]
            else:
                for i, v in enumerate(cells):
                    if v:
                        mv[i] = int(v)
            remap[id(cells)] = mv
            return ptr, mv

        for name, k in self.gen.registers.items():
            reg = self.py.registers[name]
            ptr, reg.values = shared(reg.values, "Q" if reg.width >= 64 else "q")
            lib.p4n_set_register(self._P, k, ptr)
            self._keep.append(ptr)
        for name, k in self.gen.counters.items():
            ctr = self.py.counters[name]
            pk, ctr.packets = shared(ctr.packets, "Q")
            by, ctr.bytes = shared(ctr.bytes, "Q")
            lib.p4n_set_counter(self._P, k, pk, by)
            self._keep += [pk, by]
        if remap:
            ns = self.py._parser.__globals__
            for gname, val in list(ns.items()):
                new = remap.get(id(val))
                if new is not None:
                    ns[gname] = new

    def sync_rng(self, to_python: bool = True) -> None:
        """Hand the random() stream's state to the Python pipeline's generator (or, with
        ``to_python=False``, take it from there)."""
        ffi, lib = self._ffi, self._lib
        if to_python:
            words = ffi.new("uint32_t[624]")
            idx = lib.p4n_get_rng(self._P, words)
            self.py.rng.setstate((3, (*words, idx), None))
        else:
            st = self.py.rng.getstate()[1]
            lib.p4n_set_rng(self._P, list(st[:624]), st[624])

    def flush(self) -> None:
        """Fold the direct counts C made into the Python entries."""
        ffi, lib = self._ffi, self._lib
        for _, ti, nt in self._tables:
            slots = self._slots.get(ti.cp_name)
            if not ti.direct_counter or not slots:
                continue
            n = len(slots)
            pk, by = ffi.new("uint64_t[]", n), ffi.new("uint64_t[]", n)
            lib.nt_take_counters(nt, pk, by, n)
            for i, es in enumerate(slots):
                if pk[i] and es is not None:
                    es.packets += pk[i]
                    es.bytes += by[i]

    def _sync(self) -> None:
        """Copy every table whose lookup the Python side rebuilt since the last copy."""
        self.flush()
        self._dirty = False
        for ts, ti, nt in self._tables:
            seen = self._seen.get(ti.cp_name)
            if seen is not None and seen[0] is ts.lookup and seen[1] is ts.default_hit:
                continue
            self._copy_table(ts, ti, nt)

    def _copy_table(self, ts: Any, ti: Any, nt: Any) -> None:
        lib = self._lib
        acts = {a: i + 1 for i, a in enumerate(ti.actions)}

        def action(hit: tuple[Any, ...]) -> tuple[int, list[int]]:
            a = hit[0]
            if a not in acts:
                raise NativeUnsupported(None, f"table {ti.cp_name}: a hit on {a} (an action "
                                        "selector group or an action outside the table)")
            return acts[a], [int(x) for x in hit[2]]

        def keys(k: Any) -> list[int]:
            if k is None:
                return [0]
            if isinstance(k, tuple):
                return [int(x) for x in k]
            return [int(k)]

        nk = len(ts.keys)
        slots: list[Any] = []
        if ts.mode == "exact":
            items = [(0, k, h) for k, h in ts._exact.items()]
        elif ts.mode == "lpm":
            items = [(shift, k, h) for shift, d in ts.lpm_levels for k, h in d.items()]
        else:
            items = []
        gens = list(ts._general) if ts.mode == "general" else []
        n = len(items) + len(gens)
        cap = 1
        while cap < 2 * len(items) + 2:
            cap *= 2
        mode = {"exact": 0, "lpm": 1}.get(ts.mode, 2)
        if lib.nt_reset(nt, mode, nk, getattr(ts, "lpm_pos", 0), n, cap if items else 0,
                        len(gens)):
            raise MemoryError(f"native table {ti.cp_name}")
        if ts.mode == "lpm":
            lib.nt_set_levels(nt, [s for s, _ in ts.lpm_levels], len(ts.lpm_levels))
        for i, (level, k, h) in enumerate(items):
            a, d = action(h)
            lib.nt_set_hit(nt, i, a, d or [0], len(d))
            lib.nt_put(nt, keys(k), level, i)
            slots.append(h[3])
        for j, es in enumerate(gens):
            i = len(items) + j
            a, d = action(es.hit)
            lib.nt_set_hit(nt, i, a, d or [0], len(d))
            conds = es.conds
            lib.nt_gen_add(nt, len(conds), [c[0] for c in conds] or [0],
                           [c[1] for c in conds] or [0], [int(c[2]) for c in conds] or [0],
                           [int(c[3]) for c in conds] or [0], i)
            slots.append(es)
        a, d = action(ts.default_hit)
        lib.nt_set_default(nt, a, d or [0], len(d))
        self._slots[ti.cp_name] = slots
        self._seen[ti.cp_name] = (ts.lookup, ts.default_hit)

    # -- the Python pipeline's face --------------------------------------------------------
    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.py, name)
        if name.startswith("_") or not callable(attr):
            return attr

        if name not in _READS_DIRECT:
            return attr  # a write marks the tables stale (the hook); the next packet copies

        def call(*args: Any, **kw: Any) -> Any:
            self.flush()
            return attr(*args, **kw)

        return call

    def new_instance(self, seed: int | None = None) -> NativePipeline:
        return NativePipeline(self.py.new_instance(seed))

    # -- packet path -----------------------------------------------------------------------
    def process_fast(self, data: bytes, port: int, now_us: int) -> Any:
        """``(egress port, bytes)`` or a Drop, as Pipeline.process_fast."""
        if self._dirty:
            self._sync()
        if data.__class__ is not bytes:
            data = bytes(data)
        n = len(data)
        sh = self._sh
        if n > sh.cap:
            sh.grow(n)
        r = self._process(self._P, sh.ctx, data, n, port, now_us, sh.out)
        if r < 0:
            return _drop(-r & 15, "egress" if -r & 16 else "ingress")
        return (r >> 32, self._unpack(sh.out_c, r & 0xFFFFFFFF))

    def process(self, data: bytes, port: int, now_us: int) -> ProcessResult:
        r = self.process_fast(data, port, now_us)
        if r.__class__ is tuple:
            return ProcessResult(outputs=[Output(r[0], r[1])])
        return ProcessResult(drops=[r])

    def ingress_lean(self, data: bytes, port: int, now_us: int) -> EgressJob | Drop:
        if self._dirty:
            self._sync()
        if data.__class__ is not bytes:
            data = bytes(data)
        pool = self._pool
        c = pool.pop() if pool else self._new_ctx()
        r = self._ingress(self._P, c, data, len(data), port, now_us)
        if r < 0:
            pool.append(c)
            return _drop(-r, "ingress")
        return EgressJob(r & 0xFFFF, 0, r >> 24, (c, data), (r >> 16) & 0xFF)

    def egress_lean(self, job: EgressJob, now_us: int, qm: QueueingMetadata) -> Any:
        if self._dirty:
            self._sync()
        c, data = job.state
        n = len(data)
        sh = self._sh
        if n > sh.cap:
            sh.grow(n)
        r = self._egress(self._P, c, data, n, job.egress_port, job.packet_length, now_us,
                         qm.enq_timestamp, qm.enq_qdepth, qm.deq_timedelta, qm.deq_qdepth,
                         qm.qid, sh.out)
        pool = self._pool
        if len(pool) < 256:
            pool.append(c)  # a job goes through egress once: its context is free again
        if r < 0:
            return _drop(-r, "egress")
        return (job.egress_port, self._unpack(sh.out_c, r))

    def ingress_fast(self, data: bytes, port: int, now_us: int) -> IngressResult:
        r = self.ingress_lean(data, port, now_us)
        if isinstance(r, EgressJob):
            return IngressResult(jobs=[r])
        return IngressResult(drops=[r])

    def egress_fast(self, job: EgressJob, now_us: int, qm: QueueingMetadata) -> EgressResult:
        r = self.egress_lean(job, now_us, qm)
        if r.__class__ is tuple:
            return EgressResult(outputs=[Output(r[0], r[1])])
        return EgressResult(drops=[r])

    ingress = ingress_fast
    egress = egress_fast


def _drop(code: int, where: str) -> Drop:
    if code == 1:
        return Drop("mark_to_drop", "dropped in egress" if where == "egress" else "")
    if code == 2:
        return Drop("assert", f"assert/assume failed in {where}")
    return Drop("error", f"{where}: native pipeline")


def native_pipeline(py: Pipeline) -> NativePipeline:
    """``py``'s packet path in C; NativeUnsupported (the program, located) or
    build.NativeUnavailable (no compiler) if it cannot be."""
    return NativePipeline(py)
