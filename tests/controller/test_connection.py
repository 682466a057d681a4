"""The controller against real p4switch processes on loopback (started with --no-p4, no ports):
arbitration, pipeline push, batched write + wildcard read, errors, counters and registers over
P4Runtime, and reconcile after the switch process is killed and started again."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from inproc_fabric import _relocated

from controller.connection import SwitchConnection, SwitchError
from controller.fabric import FabricController
from controller.p4rt_codec import P4Schema
from model.spec import leaf_spine

P4SWITCH = Path(sys.executable).with_name("p4switch")


class Procs:
    def __init__(self, spec) -> None:
        self.spec = spec
        self.procs: dict[str, subprocess.Popen] = {}

    def start(self, name: str) -> None:
        sw = self.spec.switches[name]
        self.procs[name] = subprocess.Popen(
            [str(P4SWITCH), "--no-p4", "--grpc-server-addr", sw.grpc_addr, "--device-id",
             str(sw.device_id), "--cpu-port", "255", "--log-level", "error"])

    def kill(self, name: str) -> None:
        p = self.procs.pop(name)
        p.kill()
        p.wait(timeout=10)

    def close(self) -> None:
        for name in list(self.procs):
            self.kill(name)


@pytest.fixture(scope="module")
def procs():
    if not P4SWITCH.exists():
        pytest.skip(f"{P4SWITCH} not installed")
    pr = Procs(_relocated(leaf_spine(2, 1, 1, uplinks=2)))  # parallel uplinks: LB groups
    try:
        for n in pr.spec.switches:
            pr.start(n)
        yield pr
    finally:
        pr.close()


def _wait(cond, timeout: float) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.05)
    return cond()


def test_controller_on_real_switch_processes(procs: Procs) -> None:
    spec = procs.spec
    ctl = FabricController(spec, election_id=(0, 10), control_period=0.2, connect_timeout=30)
    ctl.start("ecmp", loops=("reconcile",))
    try:
        # everything installed is what a wildcard read returns
        for name in spec.switches:
            got = sorted(ctl.read_entries(name), key=repr)
            assert got == sorted(ctl.installed[name].values(), key=repr)
            assert len(got) == len(ctl.entries[name].entries) > 0

        # arbitration: a lower election id is a backup and may not write
        leaf = spec.switches["leaf1"]
        backup = SwitchConnection("leaf1", leaf.grpc_addr, leaf.device_id, (0, 5))
        with pytest.raises(SwitchError, match="ALREADY_EXISTS"):
            backup.connect(timeout=2)
        backup.close()

        # a bad batch names the update and leaves the switch as it was
        sch: P4Schema = ctl.schema
        dup = next(iter(ctl.installed["leaf1"].values()))
        with pytest.raises(SwitchError, match="ALREADY_EXISTS"):
            ctl.conns["leaf1"].write([sch.update("insert", dup)])
        assert len(ctl.read_entries("leaf1")) == len(ctl.installed["leaf1"])

        # counters and registers over P4Runtime: a packet-out on port 2 counts rx on the CPU
        # port and tx on port 2 (the port has no interface: the switch drops it after egress)
        ctl.conns["leaf1"].packet_out(sch.packet_out(b"\x00" * 60, egress_port=2))
        assert _wait(lambda: int(ctl.read_counters(["leaf1"]).query(
            "counter == 'port_tx_ctr' and port == 2")["packets"].iloc[0]) == 1, 5)
        c = ctl.read_counters()
        assert list(c.columns) == ["switch", "counter", "index", "port", "group", "member",
                                   "reason", "packets", "bytes"]
        assert set(c["switch"]) == set(spec.switches)
        assert c["packets"].sum() == 1
        ctl.write_registers("leaf1", "MyEgress.port_qdepth_max", {2: 17})
        q = ctl.read_queues(clear=True)
        assert q.query("switch == 'leaf1' and port == 2")["qdepth_max"].tolist() == [17]
        assert q.query("switch == 'leaf1' and port == 2")["peer"].tolist() == ["spine1"]
        assert ctl.read_registers("leaf1", "MyEgress.port_qdepth_max", [2]) == [0]

        # a scheme change is one lb_group MODIFY per group
        n = ctl.set_scheme("rotate")
        assert n == sum(len(ctl.entries[s].groups) for s in spec.switches) == 4
        assert {e.action for e in ctl.read_entries("leaf1", "MyIngress.lb_group")} == \
            {"MyIngress.lb_rotate"}

        # reconcile: kill leaf1's process, start it again (empty, no pipeline)
        procs.kill("leaf1")
        procs.start("leaf1")
        assert _wait(lambda: any(e.loop == "reconcile" and e.switch == "leaf1"
                                 for e in ctl.events), 40)
        assert ctl.conns["leaf1"].reconnects == 1
        got = sorted(ctl.read_entries("leaf1"), key=repr)
        assert got == sorted(ctl.installed["leaf1"].values(), key=repr)
        assert any(e.action == "MyIngress.lb_rotate" for e in got)
    finally:
        ctl.stop()


def test_a_second_controller_can_reuse_the_running_pipeline(procs: Procs) -> None:
    """Runs after the kill/restart test: every switch runs the pipeline of a controller that
    is gone. A new one with reuse_pipeline keeps it and writes only the entry diff."""
    spec = procs.spec
    first = FabricController(spec, connect_timeout=30)
    first.start("rotate", loops=())
    first.conns["leaf1"].packet_out(first.schema.packet_out(b"\x00" * 60, egress_port=2))
    assert _wait(lambda: first.read_counters(["leaf1"])["packets"].sum() == 1, 10)
    first.stop()
    second = FabricController(spec, connect_timeout=30)
    second.start("wam", loops=(), reuse_pipeline=True)
    try:
        assert second.reused == set(spec.switches)
        assert second.stats["pipelines_reused"] == len(spec.switches)
        for name in spec.switches:
            got = sorted(second.read_entries(name), key=repr)
            assert got == sorted(second.installed[name].values(), key=repr)
        assert second.read_counters(["leaf1"])["packets"].sum() == 1  # state was kept
    finally:
        second.stop()
    third = FabricController(spec, connect_timeout=30)
    third.start("ecmp", loops=())  # default: a clean slate
    try:
        assert third.reused == set()
        assert third.read_counters(["leaf1"])["packets"].sum() == 0
    finally:
        third.stop()


def _listening(addr: str) -> bool:
    host, port = addr.rsplit(":", 1)
    try:
        socket.create_connection((host, int(port)), timeout=0.5).close()
        return True
    except OSError:
        return False


def test_start_names_the_switch_that_is_not_there(procs: Procs) -> None:
    """Runs last in this module: it kills a switch of the shared processes."""
    procs.kill("spine1")
    for name in ("leaf1", "leaf2"):  # the others are up (slow to start on a loaded machine)
        assert _wait(lambda n=name: _listening(procs.spec.switches[n].grpc_addr), 30)
    ctl = FabricController(procs.spec, connect_timeout=2.0)
    with pytest.raises(SwitchError, match="spine1"):
        ctl.start()
    assert ctl.conns == {}
