"""p4src/fabric.p4 through p4switch and BMv2 simple_switch with the controller's entries for a
few routes and load-balancing groups, and a seeded stream of random packets (good and bad);
the packets leaving each port must be identical.

Only schemes whose choice is a function of the packet and the switch state take part: ECMP
(hash), destination rotation and Whack-a-Mole (per-group counters). Flowlet (arrival clock) and
random spraying (each target's own RNG) cannot agree between two targets by design. No
ecn_config entry is installed: CE marking depends on each target's queue depth."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest
from bmv2_oracle import tools_missing
from differential import RecordingPipeline, run_bmv2

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "p4src"))
import fabric_harness as fh  # noqa: E402  (tests/p4src has no package)

pytestmark = pytest.mark.skipif(tools_missing() is not None, reason=tools_missing() or "")

ECMP_NET, ROT_NET, WAM_NET, HOST, HOLE, CPU_NET = (
    "10.2.0.0", "10.3.0.0", "10.4.0.0", "10.5.0.1", "10.6.0.0", "10.7.0.0")


def fabric_with_routes() -> tuple[fh.Fabric, RecordingPipeline]:
    f = fh.Fabric(seed=1)
    rec = RecordingPipeline(f.p)
    f.p = rec  # every entry and packet from here on is recorded for BMv2
    f.route_group(ECMP_NET, 16, group_id=1)
    f.group_ecmp(1, 4, seed=7)
    f.members(1, 4, port0=10)
    f.route_group(ROT_NET, 16, group_id=2, dst_id=3)
    f.group_rotate(2, 3)
    f.members(2, 3, port0=4)
    f.route_group(WAM_NET, 16, group_id=3)
    f.group_wam(3, log2_m=3, a=5, b=3, balls=[3, 3, 2], port0=1)
    f.route_nhop(HOST, 32, port=7, dmac=0x02000000BEEF)
    f.route_blackhole(HOLE, 16)
    f.route_cpu(CPU_NET, 16)
    for port in (1, 2, 3, 10, 11):
        f.port_smac(port, fh.ROUTER_SMAC + port)
    return f, rec


def random_frame(rng: random.Random) -> bytes:
    net = rng.choice([ECMP_NET, ROT_NET, WAM_NET, HOST, HOLE, CPU_NET, "10.9.0.0"])
    dst = fh.ip_int(net) + (rng.randrange(1, 250) if net != HOST else 0)
    src = fh.ip_int("10.1.0.0") + rng.randrange(1, 1000)
    proto = rng.choice([6, 17])
    ttl = rng.choice([64, 64, 64, 2, 1, 0])
    frame = bytearray(fh.fast_pkt(src, dst, sport=rng.randrange(1024, 65536),
                                  dport=rng.choice([4791, 80, rng.randrange(65536)]),
                                  proto=proto, ttl=ttl, payload=rng.randbytes(rng.randrange(24))))
    fault = rng.random()
    if fault < 0.05:
        frame[24] ^= 0xFF  # bad IPv4 header checksum
    elif fault < 0.08:
        frame[12:14] = b"\x86\xdd"  # not IPv4
    elif fault < 0.10:
        frame = frame[: rng.randrange(14, 34)]  # cut inside the IPv4 header
    return bytes(frame)


def test_fabric_random_packets_match_bmv2(tmp_path: Path):
    f, rec = fabric_with_routes()
    rng = random.Random(20261201)
    for _ in range(200):
        f.send(random_frame(rng), port=rng.choice([1, 2, 3]))
    assert sum(len(v) for v in rec.p4switch_outputs.values()) > 50  # many forwarded
    cmp = run_bmv2(fh.FABRIC_P4, fh.program(), rec, tmp_path, extra_ports=range(16))
    problems = cmp.mismatches()
    assert not problems, "\n".join(problems)
    # all three groups spread over more than one member on both targets
    for ports in ((10, 11, 12, 13), (4, 5, 6), (1, 2, 3)):
        assert sum(1 for p in ports if cmp.bmv2.get(p)) > 1, ports
