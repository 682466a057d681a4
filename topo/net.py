"""FabricNet: a Mininet network of P4 switch processes and hosts built from a FabricSpec.

It owns the machine-wide fabric lock for its lifetime, records every process and interface it
creates in its run dir (so ``make stop`` can undo a crash), starts the switch processes in
parallel and waits until each P4Runtime server listens. It installs nothing: the controller
(``controller.FabricController``) programs the switches.
"""

from __future__ import annotations

import functools
import time
from pathlib import Path
from typing import Any

from mininet.log import setLogLevel
from mininet.net import Mininet

from model.spec import GRPC_BASE_PORT, MAX_PORT, THRIFT_BASE_PORT, FabricSpec
from model.targets import Target

from .agents import HostAgents
from .lock import FabricLock
from .nodes import BMv2Switch, EbpfP4Switch, FabricLink, P4Host, P4Switch, TopoError
from .priority import SwitchPriority, prioritise, prioritise_all
from .rundir import RunDir, stop_leftovers
from .topos import SpecTopo

RESERVED_PORTS = Path("/proc/sys/net/ipv4/ip_local_reserved_ports")


def reserve_switch_ports(spec: FabricSpec) -> None:
    """Keep the kernel from handing the switches' fixed gRPC/Thrift ports out as ephemeral
    source ports (they sit inside Linux's default 32768-60999 range): one controller
    connection that happened to get 127.0.0.1:50020 as its source would make core4 fail to
    bind. Adds the fabric's ranges to ``ip_local_reserved_ports``; keeps what is there."""
    if not spec.switches:
        return
    n = max(s.device_id for s in spec.switches.values())
    want = [f"{GRPC_BASE_PORT + 1}-{GRPC_BASE_PORT + max(n, MAX_PORT)}",
            f"{THRIFT_BASE_PORT + 1}-{THRIFT_BASE_PORT + max(n, MAX_PORT)}"]
    try:
        have = RESERVED_PORTS.read_text().strip()
        if all(w in have.split(",") for w in want):
            return
        RESERVED_PORTS.write_text(",".join([p for p in have.split(",") if p] + want))
    except OSError:
        pass  # not root / no such sysctl: collisions stay possible, start-up reports them

TARGETS: dict[str, type[P4Switch]] = {Target.P4SWITCH: P4Switch, Target.BMV2: BMv2Switch,
                                      Target.EBPF: EbpfP4Switch}


class FabricNet:
    """``with FabricNet(spec) as net:`` — the fabric, up; ``net.stop()`` tears everything down.

    ``timings`` records the bring-up phases (``build``: namespaces, veths, HTB; ``processes``:
    switch processes until every gRPC port listens) in seconds. The switches run at real-time
    priority by default (topo/priority.py), as every entry point runs them: a switch woken by
    a frame must not wait behind the hosts. Most scripts want topo.session.FabricSession,
    which also dilates the fabric's units and starts the controller.
    """

    def __init__(self, spec: FabricSpec, target: str = "p4switch",
                 run_dir: str | Path | None = None, pcap: bool = False,
                 log_level: str = "warn", lock_timeout: float = 0.0,
                 ready_timeout: float = 60.0, queue_depth: int | None = None,
                 socket_buffer: int | None = None, switch_priority: str = "realtime",
                 prop_delay_us: float = 0.0, trim_bytes: int | None = None) -> None:
        if target not in TARGETS:
            raise TopoError(f"unknown target {target!r} (choose from {', '.join(TARGETS)})")
        # the arguments first: a wrong combination is wrong whatever is installed
        if not 0 <= prop_delay_us < float("inf"):
            raise TopoError(f"propagation delay must be >= 0 µs, got {prop_delay_us!r}")
        if prop_delay_us and target != Target.P4SWITCH:
            raise TopoError(f"target {target} emulates no propagation delay in its switches "
                            "(this kernel has no netem; p4switch delays frames itself): use "
                            "target p4switch, a delay of 0"
                            + (", or topo.session.FabricSession, whose hosts add it"
                               if target == Target.EBPF else ""))
        if trim_bytes is not None and target != Target.P4SWITCH:
            raise TopoError(f"target {target} does not trim packets (BMv2 and the eBPF "
                            "target's qdiscs tail-drop): use target p4switch, or no trimming")
        if target == Target.BMV2 and (missing := BMv2Switch.missing_tools()):
            raise TopoError(f"target bmv2 needs {' and '.join(missing)} on PATH "
                            "(build p4c and BMv2, or use target p4switch)")
        if target == Target.BMV2:
            BMv2Switch.p4c_include_env()
        if target == Target.EBPF and (why := EbpfP4Switch.missing()):
            raise TopoError(f"target ebpf: {why}")
        spec.validate()
        self.spec = spec
        self.prop_delay_us = prop_delay_us
        """Every link's propagation delay, µs (the p4switch ports add it; 0: none)."""
        self.target = target
        self.pcap = pcap
        self.log_level = log_level
        self.ready_timeout = ready_timeout
        self.switch_opts: dict[str, Any] = {"queue_depth": queue_depth,
                                            "socket_buffer": socket_buffer,
                                            "trim_bytes": trim_bytes}
        """p4switch options of every switch (None: its default)."""
        self.switch_priority = SwitchPriority(switch_priority)
        """How every switch process is scheduled (topo/priority.py): ``python -m topo`` and
        the experiments run them at real-time priority, as a hardware switch never waits."""
        self.priority: dict[str, int] = {}
        """What was applied: {``SCHED_RR 1`` / ``nice -10`` / ``none`` / why not: switches}."""
        self.lock = FabricLock(timeout=lock_timeout)
        self._run_dir_arg = run_dir
        self.run: RunDir | None = None
        self.net: Mininet | None = None
        self.timings: dict[str, float] = {}
        self._agents: HostAgents | None = None

    # ---- life cycle ---------------------------------------------------------------------------
    @property
    def run_dir(self) -> Path:
        if self.run is None:
            raise TopoError("fabric not started")
        return self.run.path

    def start(self) -> FabricNet:
        self.lock.acquire()
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self) -> None:
        setLogLevel("output")  # Mininet CLI command output on, its build chatter (info) off
        # we hold the lock, so no other fabric is legitimately running: switches and veths a
        # crashed launcher left behind (the kernel dropped its lock) would block our ports
        stop_leftovers(log=lambda _msg: None)
        reserve_switch_ports(self.spec)
        self.run = RunDir.create(self.spec.name, self._run_dir_arg)
        t0 = time.monotonic()
        switch_cls = functools.partial(TARGETS[self.target], run_dir=self.run.path,
                                       pcap=self.pcap, log_level=self.log_level,
                                       **({k: v for k, v in self.switch_opts.items() if v}
                                          if self.target in (Target.P4SWITCH, Target.EBPF) else {}))
        self.net = Mininet(topo=SpecTopo(self.spec, self.prop_delay_us), switch=switch_cls,
                           host=P4Host,
                           link=FabricLink, controller=None, build=False, autoSetMacs=False)
        # record what the build creates as it goes: a failure half-way is still undoable
        self.run.record_intfs([f"{lk.a if lk.a in self.spec.switches else lk.b}"
                               f"-eth{lk.a_port if lk.a in self.spec.switches else lk.b_port}"
                               for lk in self.spec.links])
        self.net.build()
        for node in (*self.net.hosts, *self.net.switches):
            self.run.record_pid(f"{node.name}.shell", node.pid)
        t1 = time.monotonic()
        self.net.start()
        for sw in self.switches:
            assert sw.proc_pid is not None  # started just now
            self.run.record_pid(sw.name, sw.proc_pid)
        for sw in self.switches:
            sw.wait_ready(max(1.0, self.ready_timeout - (time.monotonic() - t1)))
        # once ready: the threads its start-up made are there; later ones inherit it
        self.priority = prioritise_all([pid for sw in self.switches
                                        if (pid := getattr(sw, "proc_pid", None))],
                                       self.switch_priority)
        t2 = time.monotonic()
        self.timings = {"build": t1 - t0, "processes": t2 - t1}
        self.run.write_manifest({
            "name": self.spec.name, "kind": self.spec.kind, "target": self.target,
            "switches": {s.name: {"grpc_addr": s.grpc_addr, "device_id": s.device_id,
                                  "thrift_port": s.thrift_port, "role": s.role}
                         for s in self.spec.switches.values()},
            "hosts": {h.name: h.ip for h in self.spec.hosts.values()},
        })

    @property
    def agents(self) -> HostAgents:
        """The hosts' traffic agents (topo.agents): each started at its first collective,
        kept for the fabric's lifetime, stopped with it."""
        if self.run is None or self.net is None:
            raise TopoError("fabric not started")
        if self._agents is None:
            self._agents = HostAgents(self.run, self.get, priority=self.switch_priority)
        return self._agents

    def stop(self) -> None:
        """Host agents and switch processes first (so none sees its ports vanish), then
        Mininet's links, hosts and helper shells; then the records and the lock."""
        try:
            if self._agents is not None:
                try:
                    self._agents.stop()
                finally:
                    self._agents = None
            if self.net is not None:
                for sw in self.switches:  # SIGTERM all first: they shut down in parallel
                    if sw.proc is not None and sw.proc.poll() is None:
                        sw.proc.terminate()
                for sw in self.switches:
                    sw.kill_process()
                self.net.stop()
                self.net = None
            if self.run is not None:
                for node in list(self.run.pids()):
                    if node != "launcher":
                        self.run.forget_pid(node)
                (self.run.path / "intfs.txt").unlink(missing_ok=True)
                self.run.forget_pid("launcher")
        finally:
            self.lock.release()

    def __enter__(self) -> FabricNet:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---- nodes --------------------------------------------------------------------------------
    def _mn(self) -> Mininet:
        if self.net is None:
            raise TopoError("fabric not started")
        return self.net

    @property
    def hosts(self) -> list:
        return self._mn().hosts

    @property
    def switches(self) -> list[P4Switch]:
        return self.net.switches if self.net is not None else []

    def get(self, name: str):
        try:
            return self._mn()[name]
        except KeyError:
            raise TopoError(f"no node {name!r} in {self.spec.name}") from None

    def host_ips(self) -> list[str]:
        return [h.ip for h in self.spec.hosts.values()]

    # ---- run-time changes ---------------------------------------------------------------------
    def _check_linked(self, a: str, b: str) -> None:
        if not self.spec.links_between(a, b):
            raise TopoError(f"{a} and {b} are not linked")

    def link_down(self, a: str, b: str) -> None:
        """Physical failure: both interfaces of every a-b link down (the controller must
        notice by itself)."""
        self._check_linked(a, b)
        self._mn().configLinkStatus(a, b, "down")

    def link_up(self, a: str, b: str) -> None:
        """Both interfaces up again; a host end gets its routes back (the kernel flushed them
        when its NIC went down)."""
        self._check_linked(a, b)
        self._mn().configLinkStatus(a, b, "up")
        for n in (a, b):
            node = self.get(n)
            if isinstance(node, P4Host):
                node.configure_routes()

    def restart_switch(self, name: str, timeout: float = 30.0) -> None:
        """Kill the switch's process (by PID) and start it again, empty: its P4Runtime state is
        gone until the controller re-programs it."""
        sw = self.get(name)
        if not isinstance(sw, P4Switch):
            raise TopoError(f"{name} is not a switch")
        sw.kill_process()
        sw.launch()
        assert self.run is not None and sw.proc_pid is not None
        self.run.record_pid(sw.name, sw.proc_pid)
        sw.wait_ready(timeout)
        prioritise(sw.proc_pid, self.switch_priority)

    def set_prop_delay(self, delay_us: float) -> None:
        """Every link's propagation delay from now on (µs; 0: none), through each p4switch's
        control socket (a calibration ramp changes the TDF without a new fabric)."""
        from p4switch import ControlClient

        if not 0 <= delay_us < float("inf"):
            raise TopoError(f"propagation delay must be >= 0 µs, got {delay_us!r}")
        if delay_us and self.target != Target.P4SWITCH:
            raise TopoError(f"target {self.target} emulates no propagation delay")
        if self.net is None:
            raise TopoError("fabric not started")
        topo = SpecTopo(self.spec, delay_us)
        for sw in self.switches:
            if not isinstance(sw, P4Switch) or isinstance(sw, BMv2Switch):
                continue
            delays = topo.port_delays(sw.name)
            with ControlClient(str(sw.control_socket)) as c:
                for port, us in sorted(delays.items()):
                    c.set_port_delay(port, us)
            sw.port_delays = delays if delay_us else {}
        self.prop_delay_us = delay_us

    def set_link_rate(self, a: str, b: str, mbps: float) -> None:
        """Change an a-b link's rate at run time, both directions: switch ends through the
        p4switch control socket, host ends by re-configuring HTB."""
        from p4switch import ControlClient

        if mbps <= 0:
            raise TopoError("link rate must be > 0 Mbps")
        links = self.spec.links_between(a, b)
        if not links:
            raise TopoError(f"{a} and {b} are not linked")
        for lk in links:
            for node in (lk.a, lk.b):
                n = self.get(node)
                if isinstance(n, BMv2Switch):
                    raise TopoError("set_link_rate: BMv2 switches have no bits/s port rate")
                if isinstance(n, P4Switch):
                    with ControlClient(str(n.control_socket)) as c:
                        c.set_port_rate(lk.port_of(node), mbps * 1e6)
                    n.port_rates[lk.port_of(node)] = mbps
                else:
                    n.defaultIntf().config(bw=mbps)
