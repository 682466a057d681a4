"""Benchmark: P4Runtime Write throughput of p4switch per atomicity mode, and the longest
forwarding pause while a 10k-update batch is applied with traffic flowing.

    .venv/bin/python bench/runtime_bench.py [--sizes 1000,10000]          # throughput only
    sudo .venv/bin/python bench/runtime_bench.py [--rate 5000]             # + forwarding pause

The switch under test is a `p4switch p4src/fabric.p4` process (its P4Runtime server on a free
loopback port); the client is this process, a raw-protobuf P4Runtime client on its own channel,
so client and server do not share an interpreter — as a controller and a switch would not.

Throughput: for each atomicity mode (CONTINUE_ON_ERROR, ROLLBACK_ON_ERROR, DATAPLANE_ATOMIC) and
batch size N, one Write of N INSERTs, then N MODIFYs, then N DELETEs of lb_member entries (exact
keys), each timed end to end (request encoding, RPC, server, answer): updates/s = N / seconds.
In the atomic modes also N DELETEs plus one DELETE of a missing entry: the failure aborts the
whole batch (the case issue 12 measured at 24 s for 4,000 and 206 s for 10,000 updates, when
every DELETE scanned its table; plain DELETEs: 1.9 s for 4,000 — quoted, not measured here).

Name resolution: in this process, CPU µs of ``Pipeline.resolve`` and of a staged table INSERT
with resolve's cache and without it (same run, interleaved).

Forwarding pause (root): namespaces p4ft-<pid>r-h1 / -h2 with a veth each, whose root-side ends
are the switch's ports 1 and 2; a blaster in h1 sends 110-byte UDP frames at --rate frames/s in
bursts of --burst (bench/switch_bench.py's blaster), the switch routes them to port 2
(ipv4_lpm 10.0.2.0/24), and a sink in h2 records the gaps between arrivals. While the traffic
flows, this process writes a 10k-INSERT batch and then the 10k DELETEs, once per atomicity mode,
with quiet intervals between them. Per batch: its duration and the longest arrival gap that
overlaps it; next to it, the longest gap in the quiet intervals of the same run (the baseline:
burst cadence plus scheduling noise of a small shared machine).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import select
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests" / "runtime"))

import switch_bench as sb  # noqa: E402  (roles, Child, the fabric program's path)

from tests.netutil import free_port  # noqa: E402

PY = sys.executable
DEVICE_ID = 1
MODE_NAMES = ("CONTINUE_ON_ERROR", "ROLLBACK_ON_ERROR", "DATAPLANE_ATOMIC")
ROUTE = f"add MyIngress.ipv4_lpm hdr.ipv4.dstAddr:0x0a000200/24 " \
        f"MyIngress.set_nhop(port:2, dmac:{sb.NEXT_HOP:#x})\n"


# --------------------------------------------------------------------------------------------
# the sink role (runs in h2)
# --------------------------------------------------------------------------------------------


def role_gapsink(ifname: str, idle: float, max_seconds: float, min_gap: float) -> dict:
    """Arrival gaps of our UDP frames longer than ``min_gap`` s, as (previous, this) monotonic
    times (CLOCK_MONOTONIC is system-wide, so the bench compares them with its own), until
    ``idle`` s pass without a frame (after the first) or ``max_seconds``."""
    s = sb._raw(ifname)
    s.setblocking(False)
    buf = bytearray(2048)
    view = memoryview(buf)
    want = sb.DPORT.to_bytes(2, "big")
    count, first, last = 0, 0.0, 0.0
    gaps: list[tuple[float, float]] = []
    print("READY", flush=True)
    t_end = time.monotonic() + max_seconds
    while True:
        now = time.monotonic()
        if now > t_end or (count and now - last > idle):
            break
        r, _, _ = select.select([s], [], [], 0.01)
        if not r:
            continue
        while True:
            try:
                n = s.recv_into(buf)
            except BlockingIOError:
                break
            if n >= 38 and view[36:38] == want and view[12:14] == b"\x08\x00":
                t = time.monotonic()
                if count and t - last > min_gap and len(gaps) < 200_000:
                    gaps.append((last, t))
                if not count:
                    first = t
                count += 1
                last = t
    return {"count": count, "first": first, "last": last, "gaps": gaps}


# --------------------------------------------------------------------------------------------
# switch process and client
# --------------------------------------------------------------------------------------------


def lock_held_ms(sw: sb.Child, since: int, timeout: float = 2.0) -> tuple[float, float] | None:
    """(wall ms, CPU ms) the server logged holding the switch lock for the first big Write
    after stderr line ``since`` (p4switch logs Writes of >= 1000 updates at info level)."""
    t_end = time.monotonic() + timeout
    while time.monotonic() < t_end:
        for line in sw.err[since:]:
            m = re.search(r"switch lock held ([\d.]+) ms \(([\d.]+) ms CPU\)", line)
            if m:
                return float(m.group(1)), float(m.group(2))
        time.sleep(0.02)
    return None


def _ms(v: tuple[float, float] | None) -> str:
    return f"{v[0]:.1f} ({v[1]:.1f} CPU)" if v else "?"


def start_switch(tmp: Path, interfaces: list[tuple[int, str]]) -> tuple[sb.Child, str]:
    addr = f"127.0.0.1:{free_port()}"
    ef = tmp / "route.stf"
    ef.write_text(ROUTE)
    cmd = [PY, "-m", "p4switch", str(sb.FABRIC_P4), "--grpc-server-addr", addr,
           "--device-id", str(DEVICE_ID), "--entries", str(ef), "--log-level", "info"]
    for port, ifname in interfaces:
        cmd += ["-i", f"{port}@{ifname}"]
    child = sb.Child(cmd, ready=None, stderr_ready="started")
    try:
        child.wait_ready(90)
    except BaseException:  # also ^C: never leave the switch running
        child.kill()
        raise
    return child, addr


class Client:
    """The bench's controller: primary, with a channel that reads big per-update error lists."""

    def __init__(self, addr: str) -> None:
        from p4.v1 import p4runtime_pb2
        from runtime_client import WIDE_METADATA, RawClient

        self.pb = p4runtime_pb2
        self.raw = RawClient(addr, (0, 1), device_id=DEVICE_ID, options=WIDE_METADATA)
        msg = self.raw.arbitrate()
        assert msg.arbitration.status.code == 0, msg
        cfg = self.raw.stub.GetForwardingPipelineConfig(
            p4runtime_pb2.GetForwardingPipelineConfigRequest(device_id=DEVICE_ID))
        info = cfg.config.p4info
        self.table = next(t for t in info.tables if t.preamble.name == "MyIngress.lb_member")
        self.action = {a.preamble.name: a for a in info.actions}["MyIngress.set_member"]

    def updates(self, utype: int, n: int, port: int = 1, offset: int = 0) -> list:
        """n lb_member updates: key (group k // 256, member k % 256), set_member(port, dmac)."""
        U = self.pb.Update
        out = []
        fid = [f.id for f in self.table.match_fields]
        pid = [p.id for p in self.action.params]
        for k in range(offset, offset + n):
            u = U(type=utype)
            te = u.entity.table_entry
            te.table_id = self.table.preamble.id
            te.match.add(field_id=fid[0]).exact.value = (k // 256).to_bytes(2, "big")
            te.match.add(field_id=fid[1]).exact.value = (k % 256).to_bytes(2, "big")
            if utype != U.DELETE:
                a = te.action.action
                a.action_id = self.action.preamble.id
                a.params.add(param_id=pid[0], value=port.to_bytes(2, "big"))
                a.params.add(param_id=pid[1], value=(0x020000000000 | k).to_bytes(6, "big"))
            out.append(u)
        return out

    def write(self, updates: list, atomicity: int, sw: sb.Child | None = None
              ) -> tuple[float, bool, float]:
        """(seconds, all applied, CPU seconds the switch process spent meanwhile)."""
        import grpc

        c0 = sb.cpu_seconds(sw.proc.pid) if sw else 0.0
        t0 = time.perf_counter()
        try:
            self.raw.write(*updates, atomicity=atomicity)
            ok = True
        except grpc.RpcError as e:
            if e.code() != grpc.StatusCode.UNKNOWN:
                raise
            ok = False
        dt = time.perf_counter() - t0
        return dt, ok, (sb.cpu_seconds(sw.proc.pid) - c0) if sw else 0.0

    def close(self) -> None:
        self.raw.close()


# --------------------------------------------------------------------------------------------
# measurements
# --------------------------------------------------------------------------------------------


def throughput(client: Client, sw: sb.Child, sizes: list[int]) -> tuple[dict, dict]:
    """updates/s per (mode, N) and op: end to end, and per switch-process CPU second; and the
    switch lock time of each big batch."""
    U = client.pb.Update
    res: dict[tuple[str, int], dict[str, float]] = {}
    held: dict[tuple[str, int], dict[str, tuple[float, float] | None]] = {}
    bad = client.updates(U.DELETE, 1, offset=60000)  # never inserted: NOT_FOUND
    for mode, name in enumerate(MODE_NAMES):
        for n in sizes:
            row: dict[str, float] = {}
            locks: dict[str, tuple[float, float] | None] = {}
            ins, mod, dele = (client.updates(U.INSERT, n), client.updates(U.MODIFY, n, port=2),
                              client.updates(U.DELETE, n))
            steps = [("INSERT", ins, True), ("MODIFY", mod, True)]
            if mode:  # atomic: the failed batch must leave every entry in place
                steps.append(("DELETE+1 bad", dele + bad, False))
            steps.append(("DELETE", dele, True))
            for op, batch, want_ok in steps:
                since = len(sw.err)
                dt, ok, cpu = client.write(batch, mode, sw)
                assert ok == want_ok, f"{op} batch: applied={ok}"
                row[op] = len(batch) / dt
                row[op + " cpu"] = len(batch) / cpu if cpu > 0 else 0.0
                if len(batch) >= 1000:
                    locks[op] = lock_held_ms(sw, since)
            res[(name, n)] = row
            held[(name, n)] = locks
            cells = "  ".join(f"{k} {v:7.0f}/s" for k, v in row.items())
            print(f"  {name:18} {n:6}: {cells}", flush=True)
    return res, held


def _in_ns(ns: str, *args: str) -> list[str]:
    return ["ip", "netns", "exec", ns, PY, *args]


def forwarding_pause(args, tmp: Path) -> dict:
    from switch_netns import Topo

    with Topo(tag="r") as topo:
        h1, h2 = topo.hosts
        sw, addr = start_switch(tmp, [(1, h1.sw_ifname), (2, h2.sw_ifname)])
        sink = blast = None
        client = None
        try:
            client = Client(addr)
            U = client.pb.Update
            n = args.pause_size
            ins, dele = client.updates(U.INSERT, n), client.updates(U.DELETE, n)
            sink = sb.Child(_in_ns(h2.ns, str(Path(__file__).resolve()), "--role", "gapsink",
                                   "--ifname", h2.ifname, "--min-gap", "0.0015"))
            sink.wait_ready()
            blast = sb.Child(_in_ns(h1.ns, str(ROOT / "bench" / "switch_bench.py"), "--role",
                                    "blast", "--ifname", h1.ifname, "--seconds", "600",
                                    "--rate", str(args.rate), "--burst", str(args.burst)),
                             ready=None)
            time.sleep(2.0)  # warm-up: first-packet paths
            quiet: list[tuple[float, float]] = []
            batches: list[tuple[str, str, float, float]] = []

            def rest() -> None:
                t = time.monotonic()
                time.sleep(args.quiet)
                quiet.append((t, time.monotonic()))

            rest()
            for mode in (2, 0, 1):  # DATAPLANE_ATOMIC first, next to plain CONTINUE_ON_ERROR
                for op, batch in (("INSERT", ins), ("DELETE", dele)):
                    since = len(sw.err)
                    t0 = time.monotonic()
                    _, ok, _ = client.write(batch, mode)
                    t1 = time.monotonic()
                    assert ok, f"{op} batch failed"
                    held = lock_held_ms(sw, since)
                    batches.append((MODE_NAMES[mode], op, t0, t1, held))
                    print(f"  {MODE_NAMES[mode]:18} {op} {n}: {t1 - t0:.2f} s, switch lock "
                          f"held {_ms(held)} ms", flush=True)
                    rest()
            blast.kill()
            got = sink.result(30)
        finally:
            for c in (blast, sink):
                if c is not None:
                    c.kill()
            if client is not None:
                client.close()
            sw.kill()

    def longest(a: float, b: float) -> float:
        return max((t1 - t0 for t0, t1 in got["gaps"] if t1 > a and t0 < b), default=0.0)

    return {
        "baseline": max(longest(a, b) for a, b in quiet),
        "batches": [(m, op, b - a, longest(a, b), held) for (m, op, a, b, held) in batches],
        "received": got["count"],
    }


def name_resolution(n: int = 4000, rounds: int = 5) -> None:
    """In this process, on a fabric.p4 Pipeline: CPU µs per ``resolve`` (a table and an action
    name, as every table write does) and per staged lb_member INSERT (``table_batch().add``),
    with resolve's cache and without it (``_resolve_uncached``: the lookup before the cache);
    min of ``rounds`` interleaved runs, so the ratio is from one run on the same load."""
    from p4switch import ExactMatch, Pipeline, TableEntry, compile_file

    prog = compile_file(str(sb.FABRIC_P4))

    def pipe(cached: bool) -> Pipeline:
        p = Pipeline(prog, cpu_port=255)
        if not cached:
            p.resolve = p._resolve_uncached  # type: ignore[method-assign]  # the uncached lookup, measured against the cache
        return p

    def resolve_us(cached: bool, action: str) -> float:
        f = pipe(cached).resolve
        t = time.process_time()
        for _ in range(n):
            f("table", "MyIngress.lb_member")
            f("action", action)
        return (time.process_time() - t) / n * 1e6

    def add_us(cached: bool) -> float:
        b = pipe(cached).table_batch()
        es = [TableEntry(match={"meta.lb.group_id": ExactMatch(i // 64),
                                "meta.lb.member_idx": ExactMatch(i % 64)},
                         action="MyIngress.set_member", params={"port": 1, "dmac": 2})
              for i in range(n)]
        t = time.process_time()
        for e in es:
            b.add("MyIngress.lb_member", e)
        b.commit()
        return (time.process_time() - t) / n * 1e6

    print("Pipeline name resolution (this process, CPU µs, min of "
          f"{rounds}; uncached = before the cache):")
    for what, fn in (("resolve table + action MyIngress.set_member",
                      lambda c: resolve_us(c, "MyIngress.set_member")),
                     ("resolve table + action set_member (suffix)",
                      lambda c: resolve_us(c, "set_member")),
                     (f"table_batch add, {n} lb_member entries, per entry", add_us)):
        u = min(fn(False) for _ in range(rounds))
        c = min(fn(True) for _ in range(rounds))
        print(f"  {what}: uncached {u:.2f}, cached {c:.2f} ({u / c:.2f}x)", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--role", choices=["gapsink"], help=argparse.SUPPRESS)
    ap.add_argument("--ifname", help=argparse.SUPPRESS)
    ap.add_argument("--min-gap", type=float, default=0.0015, help=argparse.SUPPRESS)
    ap.add_argument("--sizes", default="1000,10000", help="batch sizes for the throughput table")
    ap.add_argument("--pause-size", type=int, default=10000,
                    help="updates in each batch of the forwarding-pause run")
    ap.add_argument("--rate", type=float, default=5000,
                    help="offered load (frames/s) during the forwarding-pause run")
    ap.add_argument("--burst", type=int, default=5, help="back-to-back frames per burst")
    ap.add_argument("--quiet", type=float, default=1.5,
                    help="seconds between batches (baseline windows)")
    ap.add_argument("--no-pause", action="store_true", help="skip the forwarding-pause run")
    args = ap.parse_args()

    if args.role == "gapsink":
        print(json.dumps(role_gapsink(args.ifname, 1.0, 900, args.min_gap)), flush=True)
        return 0

    sizes = [int(s) for s in args.sizes.split(",") if s]
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at start")
    name_resolution()
    with tempfile.TemporaryDirectory(prefix="p4ft-rtbench-") as tmpd:
        tmp = Path(tmpd)
        print("Write throughput (lb_member, exact keys), updates/s end to end:", flush=True)
        sw, addr = start_switch(tmp, [])
        try:
            client = Client(addr)
            try:
                tput, tlock = throughput(client, sw, sizes)
            finally:
                client.close()
        finally:
            sw.kill()
        pause = None
        if args.no_pause:
            pass
        elif os.geteuid() != 0:
            print("\nforwarding pause: skipped (needs root: network namespaces)")
        else:
            print(f"\nForwarding pause, {args.rate:g} frames/s offered in bursts of "
                  f"{args.burst} (gap resolution {args.burst / args.rate * 1e3:.1f} ms):",
                  flush=True)
            pause = forwarding_pause(args, tmp)

    ops = ("INSERT", "MODIFY", "DELETE", "DELETE+1 bad")
    for title, suffix in (("end to end (wall clock)", ""),
                          ("per CPU second of the switch process", " cpu")):
        print(f"\nupdates/s, {title}")
        print(f"{'mode':18} {'N':>6} " + " ".join(
            f"{c:>13}" for c in ("INSERT", "MODIFY", "DELETE", "DEL+1 bad")))
        for (name, n), row in tput.items():
            cells = [row.get(k + suffix) for k in ops]
            print(f"{name:18} {n:6} " + " ".join(f"{c:13.0f}" if c else f"{'-':>13}"
                                                 for c in cells))
    plain = {n: tput[("CONTINUE_ON_ERROR", n)] for n in sizes}
    for name in MODE_NAMES[1:]:
        ratios = ", ".join(f"N={n}: " + "/".join(
            f"{tput[(name, n)][op + ' cpu'] / plain[n][op + ' cpu']:.2f}"
            for op in ("INSERT", "MODIFY", "DELETE")) for n in sizes)
        print(f"  {name} vs CONTINUE_ON_ERROR (INSERT/MODIFY/DELETE per-CPU rate ratio): "
              f"{ratios}")
    for (name, n), locks in tlock.items():
        if locks:
            cells = ", ".join(f"{op} {_ms(v)}" for op, v in locks.items())
            print(f"  switch lock held (ms, server log) {name} N={n}: {cells}")
    if len(sizes) > 1:
        lo, hi = sizes[0], sizes[-1]
        for name in MODE_NAMES:
            r = tput[(name, hi)]["DELETE cpu"] / tput[(name, lo)]["DELETE cpu"]
            print(f"  {name}: per-CPU DELETE rate at N={hi} / at N={lo} = {r:.2f} "
                  "(1.0 = linear time)")
    if pause:
        print(f"\nlongest forwarding pause (arrival gap at the sink), baseline (quiet windows, "
              f"same run): {pause['baseline'] * 1e3:.1f} ms")
        print(f"{'mode':18} {'batch':>12} {'seconds':>8} {'updates/s':>10} {'pause ms':>9} "
              f"{'vs base':>8} {'lock ms (CPU ms)':>18}")
        for m, op, dt, gap, held in pause["batches"]:
            ratio = gap / pause["baseline"] if pause["baseline"] else 0
            print(f"{m:18} {op + ' ' + str(args.pause_size):>12} {dt:8.2f} "
                  f"{args.pause_size / dt:10.0f} {gap * 1e3:9.1f} {ratio:8.1f} {_ms(held):>18}")
        print("  pause: longest arrival gap overlapping the batch; lock: how long the server "
              "held the switch lock for it (its log)")
        print(f"  frames received over the run: {pause['received']}")
    print(f"load average {os.getloadavg()[0]:.1f} at the end (other work on the machine "
          "inflates wall-clock figures)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
