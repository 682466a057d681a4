"""ACKs follow the data's entropy and READY beacons rotate theirs: with one "ECMP path" dead
for control packets, a spraying job still starts and completes.

The stand-in for a fabric whose ECMP hash puts some 5-tuples on a dead link: tc u32 filters on
every bridge port classify into a zero-length pfifo (this kernel has no tc actions) each
control packet (ACK or READY, not data) whose UDP source port has both low bits set — a quarter
of all source ports, and port 4791 among them. An agent that sent its ACKs or beacons from
port 4791 would lose every one and stall (at the start barrier, or on the first flow); ACKs
from the data packet's source port lose only those on the dead entropies, the sender's
retransmissions (which rotate to the next entropy) get the rest through, and beacons rotate
over 16 ports. Namespaces come from the traffic_netns helper (p4ft-<pid>-*) and are removed
also on failure.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time

import pytest
from traffic_netns import HOST_IPS, HOSTS, PREFIX, bridged_hosts, run_agents, sh  # noqa: F401

from traffic.policies import PolicySpec

pytestmark = [pytest.mark.root,
              pytest.mark.skipif(os.geteuid() != 0, reason="needs root for netns")]

# offsets from the IPv4 header (20 bytes, no options): UDP sport 20, dport 22; the collective
# header starts at 28, its flags byte at 29 (ACK 0x01, READY 0x10; data has neither bit)
DEAD_PATH = ["protocol", "ip", "u32", "match", "ip", "protocol", "17", "0xff",
             "match", "u16", "0x0003", "0x0003", "at", "20",
             "match", "u16", "4791", "0xffff", "at", "22"]
CONTROL_FLAGS = ("0x01", "0x10")


def kill_acks_on_dead_entropies(ns: str, dev: str) -> None:
    """HTB root: class 1:1 (default) passes everything, class 1:3 ends in a pfifo of limit
    0 (drops every packet); u32 filters send the dead path's ACKs and beacons to 1:3."""
    tc = ["ip", "netns", "exec", ns, "tc"]
    sh(*tc, "qdisc", "add", "dev", dev, "root", "handle", "1:", "htb", "default", "1")
    for c in ("1:1", "1:3"):
        sh(*tc, "class", "add", "dev", dev, "parent", "1:", "classid", c, "htb", "rate",
           "10gbit")
    sh(*tc, "qdisc", "add", "dev", dev, "parent", "1:3", "handle", "30:", "pfifo", "limit", "0")
    for bit in CONTROL_FLAGS:
        sh(*tc, "filter", "add", "dev", dev, "parent", "1:", *DEAD_PATH,
           "match", "u8", bit, bit, "at", "29", "flowid", "1:3")


def dropped(ns: str, dev: str) -> int:
    out = subprocess.run(["ip", "netns", "exec", ns, "tc", "-s", "qdisc", "show", "dev", dev],
                         capture_output=True, text=True, timeout=10).stdout
    m = re.search(r"qdisc pfifo 30:.*?dropped (\d+)", out, re.S)
    assert m, out
    return int(m.group(1))


def test_spraying_job_completes_with_control_packets_on_one_entropy_class_dropped(
        bridged_hosts, tmp_path):  # noqa: ANN001, F811
    br = f"{PREFIX}-br"
    ports = [f"p{i}" for i in range(HOSTS)]
    for dev in ports:
        kill_acks_on_dead_entropies(br, dev)
    size = 120_000
    start_at = time.time() + 1.0
    run_agents(bridged_hosts, lambda i: [
        "--schedule", "ring_allreduce", "--ranks", str(HOSTS), "--size", str(size),
        "--hosts", HOST_IPS, "--rate", "100M", "--path-policy", "entropy-spray(8)",
        "--rto-ms", "20", "--start-at", repr(start_at), "--timeout", "80",
        "--out", str(tmp_path / f"h{i}")])
    ranks = [json.loads((tmp_path / f"h{i}" / f"rank{i}.json").read_text())
             for i in range(HOSTS)]
    for m in ranks:
        assert m["completed"], m["error"]
        assert m["path_policy"] == "entropy-spray(8)"
    sports = {p for m in ranks for f in m["flows"] for p in f["sports"]}
    assert any(p & 3 == 3 for p in sports)        # some entropies are on the dead ACK path
    assert any(p & 3 != 3 for p in sports)
    # ... and the filters did drop control packets (a filter that matched nothing would prove nothing)
    assert sum(dropped(br, dev) for dev in ports) > 0


def test_a_receiver_lingers_while_its_last_ack_dies(bridged_hosts, tmp_path):  # noqa: ANN001, F811
    """One flow h0 -> h1 sprayed over 8 entropies, sized so that its last packet (and so the
    receiver's final ACK, which leaves from that packet's port) is on a dead entropy. h1 has
    nothing else to do: it finishes at that packet, and with --linger 50 ms alone it would
    be gone when the sender's retransmission comes a 200 ms RTO later, and the flow would
    never complete. Agents linger until 10 RTOs pass without data."""
    ports = PolicySpec("entropy-spray", 8).ports(1, 0, 0)   # job 1, rank 0, flow 0 (the trace)
    dead = next(k for k, p in enumerate(ports) if p & 3 == 3)
    npkts = 8 + dead + 1          # the ACK after 8 packets leaves from entropy 7 (alive)
    assert ports[7] & 3 != 3
    br = f"{PREFIX}-br"
    kill_acks_on_dead_entropies(br, "p0")
    trace = tmp_path / "one_flow.json"
    trace.write_text(json.dumps([{"src": 0, "dst": 1, "bytes": npkts * 1400}]))
    start_at = time.time() + 1.0
    run_agents(bridged_hosts[:2], lambda i: [
        "--trace", "--schedule", str(trace), "--hosts", HOST_IPS.rsplit(",", HOSTS - 2)[0],
        "--rate", "100M", "--path-policy", "entropy-spray(8)", "--rto-ms", "200",
        "--linger", "0.05", "--start-at", repr(start_at), "--timeout", "15",
        "--out", str(tmp_path / f"h{i}")])
    m = json.loads((tmp_path / "h0" / "rank0.json").read_text())
    assert m["completed"], m["error"]
    f = m["flows"][0]
    assert f["packets"] == npkts and f["sports"] == ports
    assert f["timeouts"] > 0          # the final ACK did die: the flow needed the lingerer
    assert dropped(br, "p0") > 0
