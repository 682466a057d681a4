"""End to end, as root: the ``p4switch`` command joins two network namespaces, runs the IPv4
forwarding program, takes its entries over P4Runtime, forwards scapy packets rewritten, survives
a fuzz storm, fills its queue under a rate limit, and shuts down cleanly on SIGTERM with its
counters logged and pcaps written."""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from switch_netns import Topo, recv_all

from tests.netutil import Logged, free_port, spawn_logged

pytestmark = pytest.mark.root

HERE = Path(__file__).resolve().parent
IPV4_P4 = HERE / "p4" / "ipv4.p4"
ROUTER_MAC = "02:00:00:00:00:fe"


@dataclass
class SwitchProc(Logged):
    """A p4switch process (``Logged.stop``: SIGTERM by pid, the exit code)."""

    addr: str = ""
    pcap_dir: Path = Path()

    def port_counters(self, port: int) -> dict[str, int]:
        """Counters of ``port`` from the shutdown report."""
        for line in self.log:
            m = re.search(rf"port {port}@\S+: (.*)$", line)
            if m:
                return {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", m.group(1))}
        raise AssertionError(f"no counters for port {port} in:\n" + "\n".join(self.log[-20:]))


@pytest.fixture
def topo() -> Iterator[Topo]:
    with Topo(tag="c") as t:
        yield t


def start_switch(topo: Topo, tmp_path: Path, *extra: str) -> SwitchProc:
    addr = f"127.0.0.1:{free_port()}"
    pcap_dir = tmp_path / "pcap"
    cmd = [sys.executable, "-m", "p4switch", str(IPV4_P4), "--grpc-server-addr", addr,
           "--pcap", str(pcap_dir), "--log-level", "info", *extra]
    for h in topo.hosts:
        cmd += ["-i", f"{h.port}@{h.sw_ifname}"]
    run = spawn_logged(cmd, "started")
    sp = SwitchProc(run.proc, run.log, run.ready, addr, pcap_dir)
    if not sp.ready.wait(60):
        sp.stop()
        raise AssertionError("p4switch did not start:\n" + "\n".join(sp.log[-30:]))
    return sp


@pytest.fixture
def switch(topo: Topo, tmp_path: Path) -> Iterator[SwitchProc]:
    sp = start_switch(topo, tmp_path)
    try:
        yield sp
    finally:
        sp.stop()


# --------------------------------------------------------------------------------------------
# a minimal P4Runtime client: arbitration via p4runtime-shell's client, entries built by name
# --------------------------------------------------------------------------------------------


def _canon(value: int) -> bytes:
    return value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big")


def install_routes(addr: str, routes: list[tuple[int, int, int, int, str]]) -> None:
    """routes: (prefix, prefix_len, port, dst_mac, action) into MyIngress.ipv4_lpm."""
    from p4.v1 import p4runtime_pb2
    from p4runtime_sh.p4runtime import P4RuntimeClient

    client = P4RuntimeClient(0, addr, (0, 1))
    try:
        p4info = client.get_p4info()
        table = next(t for t in p4info.tables if t.preamble.name == "MyIngress.ipv4_lpm")
        actions = {a.preamble.name: a for a in p4info.actions}
        req = p4runtime_pb2.WriteRequest()
        for prefix, plen, port, mac, action_name in routes:
            action = actions[action_name]
            params = {p.name: p.id for p in action.params}
            u = req.updates.add()
            u.type = p4runtime_pb2.Update.INSERT
            te = u.entity.table_entry
            te.table_id = table.preamble.id
            m = te.match.add()
            m.field_id = table.match_fields[0].id
            m.lpm.value = _canon(prefix)
            m.lpm.prefix_len = plen
            te.action.action.action_id = action.preamble.id
            for name, v in (("dstAddr", mac), ("port", port)):
                prm = te.action.action.params.add()
                prm.param_id = params[name]
                prm.value = _canon(v)
        client.write(req)
    finally:
        client.tear_down()


def udp(dst_ip: str, sport: int = 1234, payload: bytes = b"p4fabric") -> bytes:
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether

    return bytes(
        Ether(src="02:00:00:00:00:01", dst=ROUTER_MAC)
        / IP(src="10.0.1.1", dst=dst_ip, ttl=64)
        / UDP(sport=sport, dport=9999)
        / payload
    )


def send_routed(topo: Topo, n: int = 50) -> tuple[list[bytes], list[bytes]]:
    """From host 1: ``n`` UDP frames to 10.0.2.1 (source ports 1000, 1001, ...) and one to an
    address without a route; (the frames sent, ours of what host 2 received)."""
    s1, s2 = topo.host_socket(1), topo.host_socket(2)
    try:
        sent = [udp("10.0.2.1", sport=1000 + i) for i in range(n)]
        for f in sent:
            s1.send(f)
        s1.send(udp("10.9.9.9"))  # no route: the default action drops it
        return sent, recv_all(s2, timeout=1.5, want=n, accept=_ours)
    finally:
        s1.close()
        s2.close()


def assert_routed(got: list[bytes], n: int) -> None:
    """All ``n`` frames of ``send_routed`` arrived as ipv4_forward rewrites them, in order."""
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether

    assert len(got) == n
    for i, raw in enumerate(got):
        p = Ether(raw)
        assert p.dst == "02:00:00:00:00:02"  # next hop MAC from the entry
        assert p.src == ROUTER_MAC  # old destination becomes the source
        assert p[IP].ttl == 63
        assert p[UDP].sport == 1000 + i  # order kept
        want_csum = p[IP].chksum
        del p[IP].chksum
        assert Ether(bytes(p))[IP].chksum == want_csum  # checksum recomputed correctly


def _ours(data: bytes) -> bool:
    return len(data) >= 38 and data[12:14] == b"\x08\x00" and data[36:38] == (9999).to_bytes(2, "big")


# --------------------------------------------------------------------------------------------


def test_ipv4_forwarding_between_namespaces_over_p4runtime(topo: Topo, switch: SwitchProc):
    from scapy.utils import rdpcap

    install_routes(switch.addr, [(0x0A000200, 24, 2, 0x020000000002, "MyIngress.ipv4_forward")])
    sent, got = send_routed(topo)
    assert_routed(got, len(sent))
    assert switch.stop() == 0
    c1, c2 = switch.port_counters(1), switch.port_counters(2)
    assert c1["rx_packets"] >= 51 and c1.get("rx_dropped", 0) >= 1
    assert c2["tx_packets"] >= 50
    assert any("switch:" in ln for ln in switch.log)
    # per-port pcaps, readable by scapy (as by Wireshark)
    ins = [bytes(p) for p in rdpcap(str(switch.pcap_dir / "1_in.pcap"))]
    outs = [bytes(p) for p in rdpcap(str(switch.pcap_dir / "2_out.pcap"))]
    assert all(f in ins for f in sent)
    assert [o for o in outs if _ours(o)] == got


def test_fuzz_storm_is_counted_and_forwarding_continues(topo: Topo, switch: SwitchProc):
    import os
    import random

    from scapy.layers.inet import IP, TCP, UDP
    from scapy.layers.l2 import Ether
    from scapy.packet import fuzz

    install_routes(switch.addr, [(0x0A000200, 24, 2, 0x020000000002, "MyIngress.ipv4_forward")])
    rnd = random.Random(5)
    frames: list[bytes] = []
    for i in range(4000):  # scapy fuzz(): random field values, valid-looking structure
        layer = (UDP if i % 2 else TCP)()
        frames.append(bytes(Ether(src="02:00:00:00:00:01") / fuzz(IP() / layer)))
    for _ in range(5000):  # raw random bytes of every length
        frames.append(os.urandom(rnd.choice([1, 6, 13, 14, 20, 33, 60, 200, 1000, 1514])))
    valid = udp("10.0.2.1")
    for _ in range(3500):  # truncated valid frames
        frames.append(valid[: rnd.randrange(1, len(valid))])
    frames.append(b"\x00" * 9000)  # oversized for a 1500-byte MTU port
    rnd.shuffle(frames)
    s1, s2 = topo.host_socket(1), topo.host_socket(2)
    sent = 0
    try:
        for i, f in enumerate(frames):
            try:
                s1.send(f)
                sent += 1
            except OSError:
                pass  # the kernel refuses frames shorter than a link header or > MTU
            if i % 500 == 0:
                time.sleep(0.005)  # keep the storm within the socket buffers: test the switch
        time.sleep(0.5)
        assert switch.proc.poll() is None  # still up
        s1.send(udp("10.0.2.1", sport=4242))
        got = recv_all(s2, timeout=2.0, accept=lambda d: _ours(d) and d[34:36] == (4242).to_bytes(2, "big"))
    finally:
        s1.close()
        s2.close()
    assert len(got) == 1
    assert sent >= 10_000
    assert switch.stop() == 0
    c = switch.port_counters(1)
    assert c["rx_packets"] >= sent * 0.95
    bad = c.get("rx_too_short", 0) + c.get("rx_malformed", 0) + c.get("rx_dropped", 0)
    assert bad >= 1000
    assert c.get("rx_errors", 0) == 0  # no pipeline exception on any of them


def test_rate_limited_queue_grows_and_tail_drops(topo: Topo, tmp_path: Path):
    """--queue-rate 2:1000 and --queue-depth 16: a 100-frame burst shows the program a growing
    deq_qdepth (written into the IPv4 identification by ipv4_forward_record) and the frames
    beyond the depth are tail-dropped and counted."""
    from scapy.layers.inet import IP
    from scapy.layers.l2 import Ether

    sp = start_switch(topo, tmp_path, "--queue-rate", "2:1000", "--queue-depth", "16")
    try:
        install_routes(sp.addr, [(0x0A000200, 24, 2, 0x020000000002,
                                  "MyIngress.ipv4_forward_record")])
        s1, s2 = topo.host_socket(1), topo.host_socket(2)
        try:
            burst = [udp("10.0.2.1", sport=2000 + i) for i in range(100)]  # built beforehand
            for f in burst:
                s1.send(f)
            got = recv_all(s2, timeout=1.0, accept=_ours)
        finally:
            s1.close()
            s2.close()
        assert sp.stop() == 0
    finally:
        sp.stop()
    deq = [Ether(g)[IP].id for g in got]
    enq = [Ether(g)[IP].tos for g in got]
    assert 16 <= len(got) < 100
    assert max(deq) >= 8, deq
    assert max(enq) >= 8, enq
    c = sp.port_counters(2)
    assert c["tail_drops"] == 100 - len(got)
    assert c["queue_max_depth"] == 16
