"""The TCP mode's schedule executor over loopback TCP, inside the test process (no root).

Each agent runs in a thread with its own listener port (`AgentConfig.tcp_ports`), so several
"hosts" share 127.0.0.1; the CLI test uses 127.0.0.1 and 127.0.0.2 with one port.
"""

from __future__ import annotations

import json
import socket
import threading
import time

from traffic.agent import AgentConfig
from traffic.metrics import RankMetrics, summarize
from traffic.run import main
from traffic.schedules import Schedule, from_dict, ring_allreduce
from traffic.tcpagent import TcpHostAgent


def free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def run_agents(s: Schedule, groups: list[list[int]], qps: int = 1, timeout: float = 10.0,
               hosts: list[str] | None = None, during=None) -> dict[int, RankMetrics]:
    """One TcpHostAgent per group of ranks, each in a thread; every rank's metrics."""
    ports = free_ports(s.ranks)
    hosts = hosts or ["127.0.0.1"] * s.ranks
    start = time.time() + 0.1
    agents = [TcpHostAgent(s, g, hosts, AgentConfig(qps=qps, timeout=timeout, linger=0.2,
                                                    start_at=start, tcp_ports=ports))
              for g in groups]
    threads = [threading.Thread(target=a.run, daemon=True) for a in agents]
    for t in threads:
        t.start()
    if during:
        during(ports)
    for t in threads:
        t.join(timeout + 5)
        assert not t.is_alive(), "agent did not stop at its timeout"
    out: dict[int, RankMetrics] = {}
    for a in agents:
        out.update(a.results())
    return out


def check_agreement(s: Schedule, ms: dict[int, RankMetrics]) -> None:
    for r, m in ms.items():
        assert m.completed, (r, m.error)
        assert m.transport == "tcp"
        assert sum(f.bytes for f in m.flows) == s.bytes_sent(r)
        assert sum(x.bytes for x in m.received) == s.bytes_received(r) - sum(
            f.bytes for q in ms.values() for f in q.flows if f.local and f.dst == r)
    sent = {f.flow: f.bytes for m in ms.values() for f in m.flows if not f.local}
    got = {x.flow: x.bytes for m in ms.values() for x in m.received}
    assert sent == got


def test_ring_allreduce_over_loopback_tcp(tmp_path):
    n, size, qps = 4, 600_000, 3
    s = ring_allreduce(n, size)
    ms = run_agents(s, [[r] for r in range(n)], qps=qps)
    check_agreement(s, ms)
    for m in ms.values():
        assert m.totals().bytes_sent == 2 * (n - 1) * size // n
        assert [st.step for st in m.steps] == list(range(2 * (n - 1)))
        for a, b in zip(m.steps, m.steps[1:], strict=False):
            assert b.start >= a.finish          # a step waits for its receives
        assert [c.name for c in m.collectives] == ["ring_allreduce"]
        for f in m.flows:
            assert f.fct is not None and f.fct > 0 and f.finish >= f.start >= f.posted
            assert len(f.connections) == qps
            assert len({c["sport"] for c in f.connections}) == qps  # distinct source ports
            assert sum(c["bytes"] for c in f.connections) == f.bytes
            assert f.tcp["with_info"] == qps and f.tcp["total_retrans"] is not None
            assert f.tcp["bytes_sent"] is None or f.tcp["bytes_sent"] >= f.bytes
        for x in m.received:
            assert len(x.connections) == qps and x.finish >= x.start
        m.write(tmp_path)
    summ = summarize(tmp_path)
    assert summ.completed and summ.flows_mismatched == []
    assert summ.tcp is not None and summ.tcp.total_retrans == 0  # loopback: no loss
    assert summ.collectives[0].cct > 0
    row = (tmp_path / "rank0_flows.csv").read_text().splitlines()
    assert "tcp_total_retrans" in row[0] and "tcp_reord_seen" in row[0]
    assert json.loads((tmp_path / "rank0.json").read_text())["flows"][0]["tcp"]


def test_compute_phases_and_dependencies():
    s = from_dict({"ranks": 2, "programs": [
        {"steps": [{"sends": [{"dst": 1, "bytes": 70_000, "flow": 0}], "compute_us": 30_000},
                   {"recvs": [{"src": 1, "flow": 1}]}]},
        {"steps": [{"recvs": [{"src": 0, "flow": 0}]},
                   {"sends": [{"dst": 0, "bytes": 5, "flow": 1}], "compute_us": 10_000}]}]})
    ms = run_agents(s, [[0], [1]], qps=4)
    check_agreement(s, ms)
    r0, r1 = ms[0].steps, ms[1].steps
    assert r0[0].start - r0[0].compute_start >= 0.03
    assert r1[0].finish >= r0[0].start              # rank 1 waited for flow 0
    assert r1[1].start - r1[1].compute_start >= 0.01
    assert r0[1].finish >= r1[1].start              # rank 0 waited for flow 1
    # 5 bytes over 4 QPs: split evenly, every QP carries some
    assert [len(f.connections) for f in ms[1].flows] == [4]
    assert sorted(c["bytes"] for c in ms[1].flows[0].connections) == [1, 1, 1, 2]


def test_two_ranks_per_agent_local_flows_need_no_connection():
    s = ring_allreduce(4, 40_000)
    ms = run_agents(s, [[0, 1], [2, 3]], qps=2)
    check_agreement(s, ms)
    local = [f for m in ms.values() for f in m.flows if f.local]
    assert local and all(f.src // 2 == f.dst // 2 for f in local)
    assert all(not f.local for m in ms.values() for f in m.flows if f.src // 2 != f.dst // 2)


def test_stranger_connection_does_not_disturb_the_run():
    def intrude(ports: list[int]) -> None:
        for _ in range(50):
            try:
                with socket.create_connection(("127.0.0.1", ports[1]), timeout=1) as c:
                    c.sendall(b"GET / HTTP/1.0\r\n\r\n" * 4)
                    return
            except OSError:
                time.sleep(0.01)

    s = ring_allreduce(2, 100_000)
    ms = run_agents(s, [[0], [1]], during=intrude)
    check_agreement(s, ms)


def test_missing_peer_times_out_with_error():
    s = ring_allreduce(2, 10_000)
    t = time.monotonic()
    ms = run_agents(s, [[0]], timeout=0.5)  # rank 1's agent never starts
    assert time.monotonic() - t < 3
    assert not ms[0].completed and "timeout" in ms[0].error
    assert ms[0].steps == []


def test_cli_transport_tcp(tmp_path, capsys):
    port = free_ports(1)[0]
    start = repr(time.time() + 0.2)
    codes: dict[int, int] = {}

    def rank(r: int) -> None:
        codes[r] = main(["--schedule", "ring_allreduce", "--ranks", "2", "--size", "64KiB",
                         "--hosts", "127.0.0.1,127.0.0.2", "--rank", str(r), "--transport",
                         "tcp", "--qps", "2", "--tcp-port", str(port), "--start-at", start,
                         "--timeout", "10", "--out", str(tmp_path)])

    threads = [threading.Thread(target=rank, args=(r,)) for r in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(20)
    assert codes == {0: 0, 1: 0}
    out = capsys.readouterr().out
    assert "tcp retrans 0" in out
    summ = summarize(tmp_path)
    assert summ.completed and summ.bytes_sent == summ.bytes_received == 2 * 65536
