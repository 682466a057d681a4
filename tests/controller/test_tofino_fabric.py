"""FabricController(target="tofino") end to end, without hardware: a k=4 fat-tree of schema-only
P4Runtime servers (p4switch/runtime/schema_only.py) loaded with the TNA program's P4Info, which
check every Write against it (ids, widths, match kinds, action parameters, action-profile
references) and keep what they accept. The controller programs the fabric, changes schemes
(all, per switch, per group), fails and restores a link, re-weights a Whack-a-Mole group, reads
counters and queue registers, and re-attaches; after each step every switch's state, read back
over P4Runtime, is exactly what ``model.tna`` computes for that fabric state.

The P4Info is the Tofino compiler's where it is on PATH, else the one built from the TNA
program's declarations (tests/p4src/p4contract.py), as in tests/p4src/test_tna_entries.py. The
switches sit at their own addresses with device id 1 each and one of them with Tofino device
port numbers, as real switches would."""

from __future__ import annotations

import importlib.util
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2

from controller import FabricController
from controller.connection import SwitchError
from controller.loops import ControlLoops, WamPolicy
from controller.tna_fabric import SwitchDevice, load_tofino_program
from model import tna
from model.routing import DEFAULT_ECN_THRESHOLD, compute_fabric_entries
from model.schemes import SCHEMES, Flowlet, WhackAMole
from model.spec import fat_tree
from p4switch import SchemaPipeline, start_schema_server
from tests.netutil import free_port
from tests.p4src import p4contract as pc

ROOT = Path(__file__).resolve().parents[2]
TNA_SRC = ROOT / "p4src" / "tna" / "fabric.p4"
SPEC = fat_tree(4)
EDGE1_PORTS = {p: 128 + 8 * (p - 1) for p in SPEC.ports("edge1")}  # e.g. 1/0, 2/0, ...
CELLS = tna.cells_per_packet("tofino")  # queue depth unit: 19 cells an MTU frame on Tofino 1
LOOPS = ["reconcile"]  # no probes: a schema-only switch has no data plane to answer them


def _tna_p4info(tmp: Path) -> p4info_pb2.P4Info:
    spec = importlib.util.spec_from_file_location("tofino_script", ROOT / "scripts" / "tofino.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    compiler = mod.find_compiler()
    if compiler is None:
        return pc.to_p4info(pc.from_tna_source(TNA_SRC))
    r, _ = mod.compile_for(compiler, "tofino", tmp)
    assert r.returncode == 0, r.stderr
    return text_format.Parse((tmp / "p4info.txtpb").read_text(), p4info_pb2.P4Info())


@pytest.fixture(scope="module")
def build(tmp_path_factory) -> Path:
    """A ``make tofino``-like output directory: the P4Info and an (opaque) device config."""
    out = tmp_path_factory.mktemp("tofino")
    info = _tna_p4info(out)
    (out / "p4info.txtpb").write_text(text_format.MessageToString(info))
    (out / "device_config.bin").write_bytes(b"tofino binary + context.json + bfrt.json")
    return out


@pytest.fixture
def fabric(build) -> Iterator[tuple[dict[str, SwitchDevice], dict[str, object]]]:
    """One schema-only server per switch: (devices for the controller, servers)."""
    info = load_tofino_program(build).p4info
    servers, devices = {}, {}
    try:
        for name in SPEC.switches:
            for _ in range(20):
                addr = f"127.0.0.1:{free_port()}"
                try:
                    servers[name] = start_schema_server(info, addr, device_id=1, max_workers=4)
                    break
                except OSError:
                    continue
            devices[name] = SwitchDevice(addr, 1, EDGE1_PORTS if name == "edge1" else None)
        yield devices, servers
    finally:
        for srv in servers.values():
            srv.stop(0).wait()


def _expected(**kw) -> dict[str, tna.TnaSwitchEntries]:
    return tna.tna_fabric_entries(compute_fabric_entries(SPEC, kw.pop("scheme", "ecmp"), **kw),
                                  {"edge1": EDGE1_PORTS}, CELLS)


def _norm(t: tna.TnaSwitchEntries) -> tuple:
    return (frozenset(t.entries), frozenset(t.members), frozenset(t.groups),
            frozenset(t.selector_entries))


def _check(ctl: FabricController, want: dict[str, tna.TnaSwitchEntries]) -> None:
    for name in SPEC.switches:
        assert _norm(ctl.read_tna_state(name)) == _norm(want[name]), name


def _store(servers, name: str) -> SchemaPipeline:
    pipe = servers[name].p4runtime.switch.pipeline
    assert isinstance(pipe, SchemaPipeline)
    return pipe


def _selector(servers, name: str):
    """The profile behind lb_select: the compiler lists the TNA ActionProfile and its
    ActionSelector as one profile with a selector (MyIngress.lb_profile), the P4Info built
    from the source as the selector itself (MyIngress.lb_selector)."""
    found = [p for p in _store(servers, name).profiles.values()
             if p.selector and "MyIngress.lb_select" in p.tables]
    assert len(found) == 1, _store(servers, name).profiles
    return found[0]


@pytest.mark.slow
def test_programs_every_scheme_and_reroutes(build, fabric):
    devices, servers = fabric
    ctl = FabricController(SPEC, target="tofino", program=build, devices=devices)
    ctl.start("ecmp", loops=LOOPS)
    try:
        _check(ctl, _expected())
        groups = _selector(servers, "edge1").groups
        assert groups and all(len(g.members) == 2 for g in groups.values())
        for scheme in sorted(SCHEMES):
            ctl.set_scheme(scheme)
            _check(ctl, _expected(scheme=scheme))
            if scheme not in ("ecmp", "flowlet"):  # no selector state left behind
                assert not _selector(servers, "agg1").members

        ctl.set_scheme("ecmp")
        gid = sorted(ctl.entries["edge1"].groups)[0]
        ctl.set_scheme("wam", ("edge1", gid))
        ctl.set_scheme("random", "agg1")
        mixed = {"group_schemes": {("edge1", gid): WhackAMole(), "agg1": "random"}}
        _check(ctl, _expected(**mixed))

        assert ctl.fail_link("edge1", "agg1") > 0
        _check(ctl, _expected(failed_links=[frozenset({"edge1", "agg1"})], **mixed))
        assert not ctl.link_state()[frozenset({"edge1", "agg1"})]
        ctl.restore_link("edge1", "agg1")
        _check(ctl, _expected(**mixed))

        ports = ctl.entries["edge1"].groups[gid].ports
        n = ctl.set_weights("edge1", gid, {ports[0]: 3.0, ports[1]: 1.0})
        slots = [e for e in ctl.read_tna_state("edge1").entries if e.table == tna.WAM_SLOT]
        assert 0 < n <= len(slots)  # the re-weight rewrote slot entries only
        _check(ctl, _expected(weights={("edge1", gid): {ports[0]: 3.0, ports[1]: 1.0}}, **mixed))
    finally:
        ctl.stop()


def test_what_the_tna_program_cannot_take_is_one_line_and_changes_nothing(build, fabric):
    devices, _servers = fabric
    ctl = FabricController(SPEC, target="tofino", program=build, devices=devices)
    ctl.start("flowlet", loops=LOOPS)
    try:
        with pytest.raises(ValueError, match="32-bit ns") as e:
            ctl.set_scheme(Flowlet(timeout_us=5_000_000))
        assert "\n" not in str(e.value)
        assert ctl.scheme.name == "flowlet" and not ctl.group_schemes
        _check(ctl, _expected(scheme="flowlet"))
    finally:
        ctl.stop()
    with pytest.raises(ValueError, match="32-bit ns"):
        FabricController(SPEC, target="tofino", program=build, devices=devices).start(
            Flowlet(timeout_us=5_000_000), loops=LOOPS)


def test_counters_queues_and_routes_in_fabric_ports(build, fabric):
    devices, servers = fabric
    ctl = FabricController(SPEC, target="tofino", program=build, devices=devices)
    ctl.start("rotate", loops=LOOPS)
    try:
        edge1 = _store(servers, "edge1")
        up = next(p for p, (peer, _) in SPEC.ports("edge1").items() if peer.startswith("agg"))
        edge1.counter_write("MyEgress.port_tx_ctr", EDGE1_PORTS[up], 7, 700)
        edge1.register_write("MyEgress.port_qdepth_max", EDGE1_PORTS[up], 42 * CELLS - 3)
        c = ctl.read_counters(["edge1"])
        tx = c[(c["counter"] == "port_tx_ctr") & (c["packets"] > 0)]
        assert list(zip(tx["port"], tx["packets"], strict=True)) == [(up, 7)]
        members = c[c["counter"] == "lb_member_ctr"]  # rotation members are counted on TNA
        assert len(members) and set(members["port"]) <= set(SPEC.ports("edge1"))
        q = ctl.read_queues(clear=True, switches=["edge1"])
        assert dict(zip(q["port"], q["qdepth_max"], strict=True))[up] == 42
        assert edge1.register_read("MyEgress.port_qdepth_max", EDGE1_PORTS[up]) == 0
        ecn = [e for e in ctl.read_entries("edge1") if e.table == "MyEgress.ecn_config"]
        assert ecn and {e.params_dict["qdepth"] for e in ecn} == {DEFAULT_ECN_THRESHOLD * CELLS}
        routes = ctl.read_routes(["edge1"])
        assert set(routes["port"].dropna()) <= set(SPEC.ports("edge1"))
    finally:
        ctl.stop()


def test_reattaches_and_runs_without_a_device_config(build, fabric):
    devices, servers = fabric
    ctl = FabricController(SPEC, target="tofino", program=build, devices=devices)
    ctl.start("wam", loops=LOOPS)
    ctl.stop()
    again = FabricController(SPEC, target="tofino", program=build, devices=devices)
    again.start("wam", loops=LOOPS, reuse_pipeline=True)
    try:
        assert again.reused == set(SPEC.switches)
        _check(again, _expected(scheme="wam"))
    finally:
        again.stop()
    # the P4Info alone: the switches keep their pipeline, the controller writes the difference
    only_info = FabricController(SPEC, target="tofino", program=build / "p4info.txtpb",
                                 devices=devices)
    only_info.start("ecmp", loops=LOOPS)
    try:
        assert only_info.reused == set(SPEC.switches)
        _check(only_info, _expected(scheme="ecmp"))
    finally:
        only_info.stop()


def test_a_switch_running_another_p4info_is_refused(build, fabric, tmp_path):
    devices, _servers = fabric
    info = load_tofino_program(build).p4info
    for t in info.tables:
        t.preamble.id += 0x100  # another compile of another program: other ids
    other = tmp_path / "other.txtpb"
    other.write_text(text_format.MessageToString(info))
    ctl = FabricController(SPEC, target="tofino", program=other, devices=devices)
    with pytest.raises(SwitchError, match="runs another P4Info"):
        ctl.start("ecmp", loops=LOOPS)
    assert not ctl.conns


def test_bad_arguments_are_one_line_errors(build):
    with pytest.raises(ValueError, match="needs program="):
        FabricController(SPEC, target="tofino").start(loops=LOOPS)
    with pytest.raises(ValueError, match="cannot read the Tofino P4Info"):
        FabricController(SPEC, target="tofino", program=build / "nope").start(loops=LOOPS)
    with pytest.raises(ValueError, match="not in the fabric: sw9"):
        FabricController(SPEC, target="tofino", devices={"sw9": SwitchDevice("h:1")})
    with pytest.raises(ValueError, match="unknown target 'tofino3'.*tofino"):
        FabricController(SPEC, target="tofino3")
    with pytest.raises(ValueError, match="for target tofino"):
        FabricController(SPEC).read_tna_state("edge1")


def test_wam_loop_moves_balls_off_a_congested_member(build, fabric):
    """A member port whose queue register shows a full queue (in cells) loses balls in one
    period of the Whack-a-Mole loop, and the switch's slot table is rewritten to match."""
    devices, servers = fabric
    ctl = FabricController(SPEC, target="tofino", program=build, devices=devices)
    ctl.start("wam", loops=LOOPS)
    try:
        gid = sorted(ctl.entries["edge1"].groups)[0]
        ports = ctl.entries["edge1"].groups[gid].ports
        full = WamPolicy().full
        _store(servers, "edge1").register_write("MyEgress.port_qdepth_max",
                                               EDGE1_PORTS[ports[0]], full * CELLS)
        loops = ControlLoops(ctl, ["wam"])
        loops.tick()
        w = ctl.group_weights("edge1", gid)
        assert w[ports[0]] < w[ports[1]]
        assert _store(servers, "edge1").register_read(
            "MyEgress.port_qdepth_max", EDGE1_PORTS[ports[0]]) == 0  # read and cleared
        _check(ctl, _expected(scheme="wam", weights={("edge1", gid): w}))
    finally:
        ctl.stop()


def test_probes_are_valid_packet_outs_on_device_ports(build, fabric):
    """The failure loop's probes: one packet-out per switch-switch port, each accepted by the
    switch's P4Info (its ``packet_out`` header, the device port number)."""
    devices, servers = fabric
    ctl = FabricController(SPEC, target="tofino", program=build, devices=devices)
    ctl.start("ecmp", loops=LOOPS)
    try:
        ctl.send_probes(1)
        want = {n: sum(peer in SPEC.switches for peer, _ in SPEC.ports(n).values())
                for n in SPEC.switches}
        deadline = time.monotonic() + 60  # the stream delivers them asynchronously
        while time.monotonic() < deadline:
            got = {n: servers[n].p4runtime.switch.packets_out for n in SPEC.switches}
            if got == want:
                break
            time.sleep(0.05)
        assert got == want
    finally:
        ctl.stop()


def test_a_restarted_switch_is_reprogrammed(build, fabric):
    """The reconcile loop: a switch whose P4Runtime server comes back empty (a reboot) gets the
    pipeline and its whole state again, through the controller's reconnecting stream."""
    devices, servers = fabric
    ctl = FabricController(SPEC, target="tofino", program=build, devices=devices)
    ctl.start("flowlet", loops=LOOPS)
    try:
        addr = devices["edge1"].addr
        servers["edge1"].stop(0).wait()
        for _ in range(50):  # the old server's port is free again once it has closed
            try:
                servers["edge1"] = start_schema_server(load_tofino_program(build).p4info,
                                                       addr, device_id=1, max_workers=4)
                break
            except OSError:
                time.sleep(0.1)
        want = _expected(scheme="flowlet")["edge1"]
        deadline = time.monotonic() + 60  # the connection retries with backoff
        while time.monotonic() < deadline:
            if any(e.what.startswith("reconnected") for e in ctl.events
                   if e.switch == "edge1"):
                break
            time.sleep(0.05)
        assert _norm(ctl.read_tna_state("edge1")) == _norm(want)
        assert "edge1" not in ctl.reused  # an empty switch gets the pipeline pushed
    finally:
        ctl.stop()
