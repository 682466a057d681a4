"""Benchmark: how fast the FabricController brings a fabric of real p4switch processes up, and
how fast it reroutes (per phase, no root, loopback gRPC only).

    .venv/bin/python bench/controller_bench.py [--k 4 | --leaf-spine 4x2] [--scheme ecmp]

Starts one ``p4switch --no-p4`` process per switch on free loopback ports (no data ports), then
times FabricController.start(): compile fabric.p4 (once, in the controller), routing (pure),
and per switch in parallel: connect + arbitrate, SetForwardingPipelineConfig (p4switch compiles
the bundle on arrival), one Write batch of all its entries. Then it times a fail_link (diff-only
rewrite), restore_link, set_scheme (one lb_group MODIFY per group), a full read_counters and
read_queues, and a second controller attaching with reuse_pipeline=True (entry diff only). Processes are stopped by PID at the end, also on error.
"""

from __future__ import annotations

import argparse
import dataclasses
import socket
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from controller.fabric import FabricController  # noqa: E402
from model.schemes import DEFAULT_SCHEME  # noqa: E402
from model.spec import FabricSpec, fat_tree, leaf_spine  # noqa: E402
from tests.netutil import free_port  # noqa: E402

P4SWITCH = Path(sys.executable).with_name("p4switch")


def _listening(addr: str) -> bool:
    host, port = addr.rsplit(":", 1)
    try:
        socket.create_connection((host, int(port)), timeout=0.2).close()
        return True
    except OSError:
        return False


def relocate(spec: FabricSpec) -> FabricSpec:
    out = dataclasses.replace(spec, switches=dict(spec.switches))
    for n, sw in spec.switches.items():
        out.switches[n] = dataclasses.replace(sw, grpc_port=free_port())
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--k", type=int, default=4, help="fat-tree k (default 4)")
    ap.add_argument("--leaf-spine", metavar="LxS", help="a leaf-spine instead, e.g. 4x2")
    ap.add_argument("--scheme", default=DEFAULT_SCHEME)
    args = ap.parse_args(argv)
    if args.leaf_spine:
        try:
            leaves, spines = (int(x) for x in args.leaf_spine.lower().split("x"))
        except ValueError:
            ap.error("--leaf-spine wants LEAVESxSPINES, e.g. 4x2")
        spec = leaf_spine(leaves, spines, 2)
    else:
        spec = fat_tree(args.k)
    spec = relocate(spec)
    procs: list[subprocess.Popen] = []
    try:
        t0 = time.perf_counter()
        for sw in spec.switches.values():
            procs.append(subprocess.Popen(
                [str(P4SWITCH), "--no-p4", "--grpc-server-addr", sw.grpc_addr, "--device-id",
                 str(sw.device_id), "--cpu-port", "255", "--log-level", "error"]))
        deadline = time.monotonic() + 120
        while not all(_listening(sw.grpc_addr) for sw in spec.switches.values()):
            if time.monotonic() > deadline:
                print("switch processes did not come up within 120 s", file=sys.stderr)
                return 1
            time.sleep(0.1)
        t_procs = time.perf_counter() - t0
        ctl = FabricController(spec, connect_timeout=60)
        t1 = time.perf_counter()
        ctl.start(args.scheme, loops=())
        t_start = time.perf_counter() - t1
        st = ctl.stats
        n_sw = len(spec.switches)
        print(f"{spec.name}: {n_sw} switches, {st['entries']:.0f} entries "
              f"({st['entries'] / n_sw:.0f} per switch), scheme {args.scheme}")
        print(f"  processes up (all listening)   {t_procs:7.2f} s")
        print(f"  start() total                  {t_start:7.2f} s")
        print(f"    compile fabric.p4 (once)     {st['compile_s']:7.2f} s")
        print(f"    routing (pure)               {st['routing_s']:7.3f} s")
        print(f"    bring-up, switches parallel  {st['bring_up_s']:7.2f} s  "
              f"(slowest: connect {st['max_connect_s']:.2f} s, pipeline push "
              f"{st['max_pipeline_s']:.2f} s, write {st['max_write_s']:.3f} s)")
        print(f"  entries/s, whole bring-up      {st['entries_per_s']:9,.0f}")
        print(f"  entries/s, Write phase only    {st['write_entries_per_s']:9,.0f}")
        a, b = next((lk.a, lk.b) for lk in spec.switch_links())
        for what, fn in (("fail_link", lambda: ctl.fail_link(a, b)),
                         ("restore_link", lambda: ctl.restore_link(a, b)),
                         ("set_scheme wam", lambda: ctl.set_scheme("wam")),
                         ("set_scheme ecmp", lambda: ctl.set_scheme("ecmp"))):
            t = time.perf_counter()
            n = fn()
            label = f"{what} {a}-{b}" if "link" in what else what
            print(f"  {label:<30} {n:5d} updates {1000 * (time.perf_counter() - t):8.1f} ms")
        for what, fn in (("read_counters", ctl.read_counters), ("read_queues", ctl.read_queues)):
            t = time.perf_counter()
            df = fn()
            print(f"  {what:<30} {len(df):5d} rows    {1000 * (time.perf_counter() - t):8.1f} ms")
        ctl.stop()
        again = FabricController(spec, connect_timeout=60)
        t = time.perf_counter()
        again.start(args.scheme, loops=(), reuse_pipeline=True)
        print(f"  second controller, reuse_pipeline=True: start() {time.perf_counter() - t:.2f} s "
              f"({again.stats['pipelines_reused']:.0f} of {n_sw} pipelines kept) "
              f"vs {t_start:.2f} s; ratio {t_start / (time.perf_counter() - t):.1f}x")
        again.stop()
    finally:
        for p in procs:
            p.kill()
        for p in procs:
            p.wait(timeout=10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
