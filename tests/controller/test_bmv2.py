"""The same controller on BMv2 (simple_switch_grpc + p4c-bm2-ss's P4Info, no ports): entries
installed and read back by P4Info names, counters, packet-out (fabric.p4 gives it priority 1:
BMv2 drops it unless started with --priority-queues 2, as the launcher does), scheme change. Skipped with a
reason when the tools are not on PATH."""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from inproc_fabric import _relocated

from controller.fabric import FabricController
from model.spec import PRIORITY_QUEUES, FabricSpec, leaf_spine
from tests.netutil import free_port, listening

MISSING = [t for t in ("simple_switch_grpc", "p4c-bm2-ss") if shutil.which(t) is None]
pytestmark = pytest.mark.skipif(bool(MISSING), reason=f"{' and '.join(MISSING)} not on PATH")


def _start_bmv2(spec: FabricSpec, logs: Path, attempts: int = 3,
                timeout: float = 30) -> tuple[FabricSpec, list[subprocess.Popen[bytes]]]:
    """One simple_switch_grpc per switch, at fresh gRPC and Thrift ports, up when both ports
    answer. A switch that exits first (a port taken between ``free_port`` and its bind: BMv2
    exits when Thrift cannot bind) restarts the whole set at new ports; after ``attempts``
    the test fails with the switches' output."""
    for attempt in range(attempts):
        spec = _relocated(spec)
        for n, sw in list(spec.switches.items()):
            spec.switches[n] = dataclasses.replace(sw, thrift_port=free_port())
        procs: dict[str, subprocess.Popen[bytes]] = {}
        for n, sw in spec.switches.items():
            with open(logs / f"{n}.{attempt}.log", "wb") as out:
                procs[n] = subprocess.Popen(
                    ["simple_switch_grpc", "--no-p4", "--device-id", str(sw.device_id),
                     "--thrift-port", str(sw.thrift_port), "--", "--grpc-server-addr",
                     sw.grpc_addr, "--cpu-port", "255", "--priority-queues",
                     str(PRIORITY_QUEUES)], stdout=out, stderr=subprocess.STDOUT)
        waiting = dict(spec.switches)
        end = time.monotonic() + timeout
        while waiting and time.monotonic() < end and all(p.poll() is None for p in procs.values()):
            for n, sw in list(waiting.items()):
                if listening(sw.grpc_port) and listening(sw.thrift_port):
                    del waiting[n]
            time.sleep(0.1)
        if not waiting and all(p.poll() is None for p in procs.values()):
            return spec, list(procs.values())
        _stop(list(procs.values()))
    out = "\n".join(f"--- {f.name}\n{f.read_text(errors='replace')}" for f in sorted(logs.iterdir()))
    pytest.fail(f"simple_switch_grpc did not start in {attempts} attempts:\n{out}")


def _stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for p in procs:
        p.kill()
        p.wait(timeout=10)


def test_controller_drives_bmv2(tmp_path: Path) -> None:
    spec, procs = _start_bmv2(leaf_spine(2, 1, 1, uplinks=2), tmp_path)
    try:
        ctl = FabricController(spec, target="bmv2", connect_timeout=30)
        ctl.start("wam", loops=())
        try:
            for name in spec.switches:
                got = sorted(ctl.read_entries(name), key=repr)
                assert got == sorted(ctl.installed[name].values(), key=repr)
            ctl.conns["leaf1"].packet_out(ctl.schema.packet_out(b"\x00" * 60, egress_port=2))
            end = time.monotonic() + 5
            while time.monotonic() < end:
                c = ctl.read_counters(["leaf1"])
                if c.query("counter == 'port_tx_ctr' and port == 2")["packets"].sum() == 1:
                    break
                time.sleep(0.1)
            assert c.query("counter == 'port_tx_ctr' and port == 2")["packets"].sum() == 1
            assert ctl.set_scheme("ecmp") > 0
            assert {e.action for e in ctl.read_entries("leaf1", "MyIngress.lb_group")} == \
                {"MyIngress.lb_ecmp"}
            assert not ctl.read_entries("leaf1", "MyIngress.wam_slot_to_member")
        finally:
            ctl.stop()
    finally:
        _stop(procs)
