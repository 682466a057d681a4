"""Mininet node classes of the fabric: P4 switches as processes, hosts configured for P4 routers.

Switches stay in the root namespace (Mininet's default for switches): their ports are the
root-side ends of the veth pairs, and each node runs one switch *process* we start and stop by
PID — never by name, since other fabrics' or tests' processes may share the machine.
"""

from __future__ import annotations

import ipaddress
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from mininet.link import Intf, Link, TCIntf
from mininet.node import Host, Switch

from model.spec import CPU_PORT, PRIORITY_QUEUES, HostSpec, SwitchSpec
from model.targets import Target


class TopoError(RuntimeError):
    """The fabric cannot be built or started (missing tool, switch that does not come up)."""


def _venv_tool(name: str) -> str:
    """A console script of this venv (next to the running interpreter), else PATH."""
    here = Path(sys.executable).parent / name
    return str(here) if here.exists() else (shutil.which(name) or name)


def _port_open(addr: str) -> bool:
    host, port = addr.rsplit(":", 1)
    try:
        with socket.create_connection((host, int(port)), timeout=0.2):
            return True
    except OSError:
        return False


class P4Switch(Switch):
    """One ``p4switch`` process per node, ports ``-i N@<name>-ethN``, empty until a controller
    pushes the pipeline (``--no-p4``). Link rates come from the links (``port_rates`` in Mbps);
    the switch serves each egress queue at its link's rate, so the P4 program sees congestion.
    """

    tool = "p4switch"

    def __init__(self, name: str, spec: SwitchSpec | None = None, run_dir: str | Path = ".",
                 port_rates: dict[int, float] | None = None, pcap: bool = False,
                 log_level: str = "warn", queue_depth: int | None = None,
                 socket_buffer: int | None = None,
                 port_delays: dict[int, float] | None = None,
                 host_ports: set[int] | None = None, trim_bytes: int | None = None,
                 **params) -> None:
        if spec is None:
            raise TopoError(f"switch {name}: no SwitchSpec (build the net from a FabricSpec)")
        params.setdefault("dpid", f"{spec.device_id:016x}")
        params.pop("role", None), params.pop("pod", None), params.pop("ports", None)
        super().__init__(name, **params)
        self.spec = spec
        self.run_dir = Path(run_dir)
        self.port_rates = dict(port_rates or {})
        self.port_delays = dict(port_delays or {})
        """Propagation delay (µs) per port (``--port-delay``; topo.topos.SpecTopo)."""
        self.host_ports = set(host_ports or ())
        """Ports whose link leads to a host (``--host-port`` where delayed)."""
        self.pcap = pcap
        self.log_level = log_level
        self.queue_depth = queue_depth
        self.socket_buffer = socket_buffer
        self.trim_bytes = trim_bytes
        """Packet trimming at the egress queues (``--trim-bytes``; None: tail drop)."""
        self.proc: subprocess.Popen | None = None

    # ---- paths --------------------------------------------------------------------------------
    @property
    def log_path(self) -> Path:
        return self.run_dir / f"{self.name}.log"

    @property
    def control_socket(self) -> Path:
        return self.run_dir / f"{self.name}.sock"

    @property
    def pcap_dir(self) -> Path:
        return self.run_dir / "pcap" / self.name

    def port_intfs(self) -> dict[int, Intf]:
        """Data-plane ports (the root-namespace control ``lo`` on port 0 excluded)."""
        return {p: i for p, i in sorted(self.intfs.items()) if p and i.name != "lo"}

    def command(self) -> list[str]:
        cmd = [_venv_tool(self.tool), "--no-p4"]
        for port, intf in self.port_intfs().items():
            cmd += ["-i", f"{port}@{intf.name}"]
        cmd += ["--device-id", str(self.spec.device_id),
                "--grpc-server-addr", self.spec.grpc_addr,
                "--cpu-port", str(CPU_PORT), "--priority-queues", str(PRIORITY_QUEUES),
                "--log-level", self.log_level,
                "--control-socket", str(self.control_socket)]
        for port, mbps in sorted(self.port_rates.items()):
            cmd += ["--port-rate", f"{port}:{round(mbps * 1e6)}"]
        for port, us in sorted(self.port_delays.items()):
            if us:
                cmd += ["--port-delay", f"{port}:{float(us)!r}"]
        for port in sorted(self.host_ports):
            if self.port_delays.get(port):
                cmd += ["--host-port", str(port)]
        if self.queue_depth:
            cmd += ["--queue-depth", str(self.queue_depth)]
        if self.socket_buffer:
            cmd += ["--socket-buffer", str(self.socket_buffer)]
        if self.trim_bytes:
            cmd += ["--trim-bytes", str(self.trim_bytes)]
        if self.pcap:
            cmd += ["--pcap", str(self.pcap_dir)]
        return cmd

    # ---- life cycle ---------------------------------------------------------------------------
    def prepare_intfs(self) -> None:
        """Up, no IPv6 (the kernel's router solicitations would be switched), no offloads (a
        software switch must see real frames, not 64 KB GSO super-packets)."""
        for intf in self.port_intfs().values():
            n = intf.name
            self.cmd(f"sysctl -qw net.ipv6.conf.{n}.disable_ipv6=1; "
                     f"ethtool -K {n} rx off tx off sg off tso off gso off gro off "
                     f">/dev/null 2>&1; ip link set {n} up")

    def start(self, controllers=None) -> None:  # noqa: ARG002 - Mininet's signature
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.prepare_intfs()
        self.launch()

    def launch(self) -> None:
        """Start the process (not waiting for it): own session, so the CLI's Ctrl-C never
        reaches it; stdout/stderr to ``<run_dir>/<name>.log``."""
        self.control_socket.unlink(missing_ok=True)
        log = self.log_path.open("ab")
        try:
            self.proc = subprocess.Popen(self.command(), stdin=subprocess.DEVNULL, stdout=log,
                                         stderr=subprocess.STDOUT, start_new_session=True)
        finally:
            log.close()

    def ready(self) -> bool:
        return _port_open(self.spec.grpc_addr)

    def wait_ready(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc is None or self.proc.poll() is not None:
                raise TopoError(f"{self.name}: {self.tool} exited "
                                f"(code {self.proc.returncode if self.proc else '?'}): "
                                f"{self.log_tail()}")
            if self.ready():
                return
            time.sleep(0.05)
        raise TopoError(f"{self.name}: {self.tool} not listening on {self.spec.grpc_addr} "
                        f"after {timeout:.0f} s: {self.log_tail()}")

    def log_tail(self, lines: int = 3) -> str:
        try:
            text = self.log_path.read_text(errors="replace").strip().splitlines()
        except OSError:
            return "(no log)"
        return " | ".join(text[-lines:]) or "(empty log)"

    def kill_process(self, grace: float = 3.0) -> None:
        p, self.proc = self.proc, None
        if p is None or p.poll() is not None:
            return
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(grace)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(5)

    @property
    def proc_pid(self) -> int | None:
        """The switch process (Mininet's ``pid`` is the node's helper shell)."""
        return self.proc.pid if self.proc else None

    def stop(self, deleteIntfs: bool = True) -> None:  # noqa: N803 - Mininet's name
        self.kill_process()
        super().stop(deleteIntfs)


class EbpfP4Switch(P4Switch):
    """``p4switch --target ebpf``: the same process and P4Runtime server, packets processed by
    the program compiled to BPF on each port's tc ingress; link rates become each port's HTB
    qdisc (docs/p4switch-ebpf.md). No pcaps (frames never reach the process)."""

    @staticmethod
    def missing() -> str | None:
        from p4switch import ebpf_unavailable_reason as unavailable_reason

        return unavailable_reason()

    def command(self) -> list[str]:
        cmd = super().command()
        if "--pcap" in cmd:
            i = cmd.index("--pcap")
            del cmd[i:i + 2]
        return cmd + ["--target", Target.EBPF.value]


class BMv2Switch(P4Switch):
    """BMv2 ``simple_switch_grpc`` (program pushed over P4Runtime as p4c-bm2-ss JSON).

    No port rates: BMv2 sets queue rates in packets/s at run time (``set_queue_rate``), which
    is not the bits/s link model of p4switch; its ports run unshaped (host side still HTB).
    """

    tool = "simple_switch_grpc"
    required = ("simple_switch_grpc", "p4c-bm2-ss")

    @classmethod
    def missing_tools(cls) -> list[str]:
        return [t for t in cls.required if shutil.which(t) is None]

    @staticmethod
    def p4c_include_env() -> None:
        """Point p4c at its own p4include when nothing else does: the p4tools bundle's
        wrapper sets only the library path, so ``#include <core.p4>`` fails without
        P4C_16_INCLUDE_PATH (set here for this process, which compiles the program)."""
        import os

        p4c = shutil.which("p4c-bm2-ss")
        if p4c is None or os.environ.get("P4C_16_INCLUDE_PATH"):
            return
        inc = Path(p4c).resolve().parent.parent / "share" / "p4c" / "p4include"
        if (inc / "core.p4").exists():
            os.environ["P4C_16_INCLUDE_PATH"] = str(inc)

    def command(self) -> list[str]:
        cmd = [shutil.which(self.tool) or self.tool, "--no-p4",
               "--device-id", str(self.spec.device_id),
               "--thrift-port", str(self.spec.thrift_port)]
        for port, intf in self.port_intfs().items():
            cmd += ["-i", f"{port}@{intf.name}"]
        if self.pcap:
            self.pcap_dir.mkdir(parents=True, exist_ok=True)
            cmd += ["--pcap", str(self.pcap_dir)]
        return cmd + ["--", "--grpc-server-addr", self.spec.grpc_addr,
                      "--cpu-port", str(CPU_PORT), "--priority-queues", str(PRIORITY_QUEUES)]


class P4Host(Host):
    """A host behind a P4 router: NIC offloads and IPv6 off, static ARP for its gateway and a
    default route through it. On-link peers (same subnet) are ARPed statically to the gateway
    MAC too: the P4 switches do not answer ARP, and routing every frame keeps all traffic on
    the program's path. The NIC is renamed ``eth0`` (what topology.json commands name)."""

    def config(self, spec: HostSpec | None = None, peers: tuple[str, ...] = (), **params):
        intf = self.defaultIntf()
        if intf is not None and intf.name != "eth0":
            # one NIC per host, named as in HostSpec and in topology.json commands
            self.nameToIntf.pop(intf.name, None)
            intf.rename("eth0")
            self.nameToIntf["eth0"] = intf
        r = super().config(**params)
        self.spec = spec
        self.peers = peers
        if intf is None or spec is None:
            return r
        self.cmd("sysctl -qw net.ipv6.conf.all.disable_ipv6=1; "
                 "sysctl -qw net.ipv6.conf.default.disable_ipv6=1; "
                 f"ethtool -K {intf.name} rx off tx off sg off tso off gso off gro off "
                 ">/dev/null 2>&1")
        self.configure_routes()
        for c in spec.commands:
            self.cmd(c)
        return r

    def configure_routes(self) -> None:
        """Static neighbours and the default route. The kernel drops the route when the NIC
        goes down, so ``FabricNet.link_up`` calls this again."""
        spec, intf = getattr(self, "spec", None), self.defaultIntf()
        if spec is None or intf is None or not (spec.gateway_ip and spec.gateway_mac):
            return
        n = intf.name
        cmds = [f"ip neigh replace {spec.gateway_ip} lladdr {spec.gateway_mac} dev {n} "
                "nud permanent",
                f"ip route replace default via {spec.gateway_ip} dev {n}"]
        net = ipaddress.ip_network(f"{spec.ip}/{spec.prefixlen}", strict=False)
        for ip in self.peers:
            if ip != spec.ip and ipaddress.ip_address(ip) in net:
                cmds.append(f"ip neigh replace {ip} lladdr {spec.gateway_mac} dev {n} "
                            "nud permanent")
        self.cmd("; ".join(cmds))


class HostShapedIntf(TCIntf):
    """TCIntf for the host end: HTB at the link rate (no netem here: delay/loss not emulated).
    Mininet caps ``bw`` at 1000 Mbps; the fabric allows faster links."""

    bwParamMax = 100_000  # noqa: N815 - Mininet's attribute

    def bwCmds(self, *args, **kwargs):  # noqa: N802 - Mininet's name
        """Mininet's HTB commands with an explicit quantum of one MTU frame: the default
        (rate / r2q) exceeds HTB's limit above ~16 Mbps and tc complains on every link."""
        cmds, parent = super().bwCmds(*args, **kwargs)
        return [c + " quantum 1514" if " class add " in c and " htb " in c else c
                for c in cmds], parent


class FabricLink(Link):
    """A link whose host end (if any) is shaped to ``bw`` Mbps by HTB; switch ends are plain
    veths (the switch process serves its egress queue at the link rate itself)."""

    def __init__(self, node1, node2, port1=None, port2=None, bw: float | None = None,
                 **params) -> None:
        if bw:
            for i, node in ((1, node1), (2, node2)):
                if isinstance(node, Host):
                    params[f"cls{i}"] = HostShapedIntf
                    params[f"params{i}"] = {"bw": bw, **params.get(f"params{i}", {})}
        super().__init__(node1, node2, port1=port1, port2=port2, **params)
