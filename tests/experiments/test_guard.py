"""The fidelity guard: its verdict on hand-made measurements (each threshold, each reason),
the probe's parsing, and on the real emulated fabric an overloaded run (far too small a TDF,
tiny socket buffers) marked invalid for the right reason next to a light run marked valid."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pandas as pd
import pytest

from common.histogram import RELATIVE_ERROR, LogHistogram, bucket_of
from topo import guard, probes
from topo.guard import Measures, frame_time_us, judge
from traffic.metrics import FlowRecord, RankMetrics, RecvRecord

MBPS10 = 10e6   # frame time 1.21 ms


def _hist(values: list[int]) -> LogHistogram:
    h = LogHistogram()
    for v in values:
        h.add(v)
    return h


def test_a_clean_run_is_valid() -> None:
    m = Measures(frames_switched=10_000, ingress_lag_us=_hist([100] * 1000),
                 egress_delay_us=_hist([0] * 500 + [20_000] * 500),
                 send_lag_us=_hist([200] * 100), switch_cpu={"edge1": 0.4})
    v = judge(m, MBPS10, tdf=100)
    assert v.valid and v.reasons == () and v.row.valid and v.row.invalid_reason is None
    assert v.row.egress_delay_p99_us == pytest.approx(20_000 / 100,   # fabric µs
                                                         rel=RELATIVE_ERROR)


@pytest.mark.parametrize(("change", "reason"), [
    ({"socket_drops": 8, "qdisc_drops": 3}, "11 frames dropped outside the P4 pipeline"),
    ({"ingress_lag_us": _hist([50_000] * 100)}, "hidden queue: ingress lag p99"),
    ({"send_lag_us": _hist([30_000] * 100)}, "hosts cannot pace"),
    ({"switch_cpu": {"edge1": 0.3, "core2": 0.97}}, "CPU-bound: 1 switch process(es)"),
    ({"false_link_downs": ["agg5-core2", "agg7-core1", "agg5-core2"]},
     "control plane lagged: the failure loop declared 2 live link(s) down"),
])
def test_each_check_names_its_reason(change: dict, reason: str) -> None:
    m = Measures(frames_switched=10_000, ingress_lag_us=_hist([100] * 100),
                 egress_delay_us=_hist([1000] * 100))
    for k, v in change.items():
        setattr(m, k, v)
    v = judge(m, MBPS10)
    assert not v.valid and len(v.reasons) == 1 and v.reasons[0].startswith(reason)


def test_lag_is_judged_against_the_egress_delay_and_a_frame_time_floor() -> None:
    # 4 ms of ingress lag: hidden when P4 queues hold 1 ms, small next to 64 ms of them
    lag = _hist([4000] * 100)
    assert not judge(Measures(ingress_lag_us=lag, egress_delay_us=_hist([1000] * 100)),
                     MBPS10).valid
    assert judge(Measures(ingress_lag_us=lag, egress_delay_us=_hist([64_000] * 100)),
                 MBPS10).valid
    # at 1 Mb/s a frame takes 12 ms: 4 ms of lag cannot hold back even one frame
    assert judge(Measures(ingress_lag_us=lag, egress_delay_us=_hist([0] * 100)), 1e6).valid
    assert guard.frame_time_us(1e6) == pytest.approx(12112)
    # the floor is one frame time (store-and-forward): 1.5 of them is a hidden queue
    assert not judge(Measures(ingress_lag_us=_hist([18_000] * 100),
                              egress_delay_us=_hist([0] * 100)), 1e6).valid


def test_a_verdict_within_the_histograms_resolution_is_marked_marginal() -> None:
    floor = guard.frame_time_us(MBPS10)            # 1211 µs: the allowed lag
    near = judge(Measures(ingress_lag_us=_hist([int(floor * 1.02)] * 100)), MBPS10)
    far = judge(Measures(ingress_lag_us=_hist([int(floor * 1.5)] * 100)), MBPS10)
    assert not near.valid and near.reasons[0].endswith("(marginal: within the histogram's "
                                                      "resolution)")
    assert not far.valid and "marginal" not in far.reasons[0]


def test_probe_parses_host_counters_and_differences() -> None:
    text = ("3\n1\nqdisc htb 5: root refcnt 2 r2q 10\n Sent 100 bytes 2 pkt (dropped 7, "
            "overlimits 0 requeues 0)\nqdisc netem 10: parent 5:1\n Sent 1 bytes 1 pkt "
            "(dropped 2, overlimits 0)\n")
    assert probes.parse_host_probe(text) == (4, 9)
    hidden = {"ports": {"1": {"kernel_packets": 10, "kernel_drops": 1, "tx_errors": 0,
                              "ingress_lag_us": {}}},
              "egress_delay_us": {}, "dequeued": 5}
    b = probes.Snapshot(t=0.0, hidden={"s": hidden}, cpu_ticks={"s": 0},
                        machine=(0, 100, 10))
    after = {"ports": {"1": {"kernel_packets": 110, "kernel_drops": 4, "tx_errors": 2,
                             "ingress_lag_us": {"5": 7}}},
             "egress_delay_us": {str(bucket_of(900)): 3}, "dequeued": 25}
    a = probes.Snapshot(t=2.0, hidden={"s": after}, cpu_ticks={"s": probes.CLK_TCK},
                        machine=(50, 200, 30), veth_drops=1)
    m = probes.measures(b, a)
    assert m.frames_switched == 100 and m.socket_drops == 5 and m.veth_drops == 1
    assert m.ingress_lag_us.n == 7 and m.egress_delay_us.counts[bucket_of(900)] == 3
    assert m.egress_delay_us.counts[0] == 20 - 3   # the rest went straight through
    assert m.egress_delay_us.counts[0] == 17             # 20 dequeued, 3 of them waited
    assert m.switch_cpu == {"s": pytest.approx(0.5)} and m.machine_busy == pytest.approx(0.5)
    assert m.machine_steal == pytest.approx(0.2)         # 20 of the 100 jiffies: the host's


def test_machine_ticks_reads_steal_from_proc_stat() -> None:
    busy, total, steal = probes.machine_ticks() or (0, 0, -1)
    assert 0 <= steal <= busy <= total and total > 0


def test_an_invalid_run_names_the_cpu_steal_and_a_valid_one_records_it() -> None:
    lagging = LogHistogram()
    lagging.add_many([int(10 * frame_time_us(MBPS10))] * 100)   # p99: 10 frame times late
    m = Measures(frames_switched=1000, send_lag_us=lagging, machine_steal=0.3)
    v = judge(m, MBPS10)
    assert not v.valid and "CPU steal 30%" in v.row.invalid_reason
    assert all("steal" not in r for r in v.reasons)        # context, not a reason
    quiet = judge(Measures(frames_switched=1000, send_lag_us=lagging, machine_steal=0.01),
                  MBPS10)
    assert "steal" not in quiet.row.invalid_reason
    ok = judge(Measures(frames_switched=1000, machine_steal=0.3), MBPS10)
    assert ok.valid and ok.row.invalid_reason is None and ok.row.machine_steal == 0.3


def test_drop_sites_are_counted_once_and_only_hidden_ones_invalidate() -> None:
    # 120 tail drops and 3 program drops: results (congestion, the program's decision)
    m = Measures(frames_switched=10_000, tail_drops=120, pipeline_drops={"mark_to_drop": 3},
                 qdisc_drops=2, agent_drops={"tx_refused": 5, "rx_malformed": 0},
                 host_stack={"udp_in_errors": 4, "udp_rcvbuf": 0, "udp_no_port": 1},
                 data_sent=1000, data_arrived=900)
    sites = m.sites()
    assert set(sites) == set(guard.SITES)
    assert sites["p4_queue"] == 120 and sites["p4_pipeline"] == 3
    assert sites["host_send"] == 5           # the qdisc's 2 are among the agent's 5 refusals
    assert sites["host_stack"] == 4          # e.g. checksum errors
    assert sites["no_listener"] == 1         # counted, but the start barrier expects it
    assert m.hidden_drops == 9 and m.uncounted == 0
    v = judge(m, MBPS10)
    assert v.valid, v.reasons                # 9 hidden of 10,000 switched: under 0.1 %
    assert not judge(Measures(frames_switched=10_000, host_stack={"udp_in_errors": 11}),
                     MBPS10).valid
    assert judge(Measures(frames_switched=10_000, host_stack={"udp_no_port": 11}),
                 MBPS10).valid
    assert v.row.drops["p4_queue"] == 120 and v.row.data_frames_uncounted == 0
    assert '"udp_no_port": 1' in (v.row.drops_detail or "")
    # one datagram dropped at an agent's receive socket is enough
    for drops in ({"host_stack": {"udp_in_errors": 1, "udp_rcvbuf": 1}},
                  {"agent_drops": {"udp_socket_drops": 1}}):
        m = Measures(frames_switched=10_000, **drops)
        assert m.hidden_drops == 1               # udp_rcvbuf is part of udp_in_errors
        v = judge(m, MBPS10)
        assert v.reasons == ("1 datagrams dropped at a host's receive socket (an agent fell a "
                             "whole socket buffer behind its arrivals: a hidden queue)",)
    # the same loss with nothing counted anywhere: the account does not close
    lost = Measures(frames_switched=10_000, data_sent=1000, data_arrived=900)
    v = judge(lost, MBPS10)
    assert lost.uncounted == 100 and not v.valid
    assert v.reasons == ("100 data frames lost where no drop was counted (100 lost, 0 drops "
                         "counted at any site)",)
    # hidden drops over the threshold name their sites
    v = judge(Measures(frames_switched=1000, host_stack={"udp_in_errors": 7, "udp_rcvbuf": 0},
                       tail_drops=50), MBPS10)
    assert v.reasons == ("7 frames dropped outside the P4 pipeline (host_stack 7; > 0.10% of "
                         "1000)",)


def test_probe_reads_the_stack_counters_and_the_switch_drop_sites() -> None:
    snmp = ("Ip: Forwarding DefaultTTL InReceives InHdrErrors InAddrErrors ForwDatagrams "
            "InUnknownProtos InDiscards InDelivers OutRequests OutDiscards OutNoRoutes\n"
            "Ip: 2 64 500 1 2 0 0 3 494 480 4 0\n"
            "Icmp: InMsgs InErrors\nIcmp: 0 0\n"
            "Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors "
            "InCsumErrors IgnoredMulti MemErrors\n"
            "Udp: 490 5 6 470 6 0 0 0 0\n")
    assert probes.parse_snmp(snmp) == {"ip_in_hdr_errors": 1, "ip_in_addr_errors": 2,
                                       "ip_in_discards": 3, "ip_out_discards": 4,
                                       "udp_no_port": 5, "udp_in_errors": 6, "udp_rcvbuf": 6}

    def hidden(tail: int, mtd: int, short: int) -> dict:
        return {"ports": {}, "egress_delay_us": {}, "dequeued": 0,
                "drop_sites": {"tail_drops": tail, "pipeline": {"mark_to_drop": mtd},
                               "discards": {"rx_too_short": short, "flushed": 0}}}
    b = probes.Snapshot(t=0.0, hidden={"s1": hidden(10, 1, 0)}, host_stack={"udp_no_port": 2})
    a = probes.Snapshot(t=1.0, hidden={"s1": hidden(25, 4, 2), "s2": hidden(3, 0, 0)},
                        host_stack={"udp_no_port": 3})
    m = probes.measures(b, a)
    assert m.tail_drops == 15 + 3 and m.pipeline_drops == {"mark_to_drop": 3}
    assert m.switch_discards == {"rx_too_short": 2, "flushed": 0}
    assert m.host_stack == {"udp_no_port": 1}


def test_agents_counts_and_the_data_frames_join_the_account() -> None:
    from topo.guard import account_agents

    def rank(sent: int, arrived: int, drops: dict | None, transport: str = "udp") \
            -> RankMetrics:
        def flow(n: int, local: bool) -> FlowRecord:
            return FlowRecord(flow=0, src=0, dst=1, step=0, collective=0, bytes=0, packets=n,
                              packets_sent=n, posted=0.0, start=None, finish=None, local=local)
        recv = RecvRecord(flow=0, src=1, dst=0, bytes=0, packets=arrived,
                          packets_received=arrived, arrivals=arrived, duplicates=0,
                          reordered=0, reorder_distance={}, start=None, finish=None)
        return RankMetrics(rank=0, host="h1", job=0, schedule="s", transport=transport,
                           flows=[flow(sent, False), flow(0, True)], received=[recv],
                           agent_drops=drops)
    m = Measures()
    account_agents(m, [rank(100, 90, {"tx_refused": 1, "udp_socket_drops": None}),
                       rank(50, 55, {"tx_refused": 2, "udp_socket_drops": 0})])
    assert m.agent_drops == {"tx_refused": 3, "udp_socket_drops": 0}
    assert (m.data_sent, m.data_arrived) == (150, 145)
    tcp = Measures()
    account_agents(tcp, [rank(10, 10, None, "tcp")])
    assert tcp.agent_drops is None and tcp.data_sent is None and tcp.uncounted is None


# ---- on the emulated fabric -----------------------------------------------------------------
def _fabric_run(tmp_path: Path, name: str, tdf: float, size: str, socket_buffer: int) \
        -> pd.Series:
    from experiments import runner
    from experiments.config import from_dict

    cfg = from_dict({
        "name": name, "backend": "mininet",
        # 10 ns links: 4 ms of wall time each at TDF 400 000 (the default 1 µs would be 400 ms,
        # a 3.2 s RTT against the 300 ms RTO this test runs with)
        "fabric": {"link_rate": "100G", "queue_packets": 64, "prop_delay_us": 0.01},
        "topology": {"kind": "leafspine", "leaves": 2, "spines": 2, "hosts_per_leaf": 2},
        "schemes": ["random"],
        "workloads": [{"name": "a2a", "schedule": "alltoall", "size": size, "window": 64,
                       "rto_ms": 300 / tdf, "timeout_s": 60}],   # 300 ms emulated
        "transport": {"cc": "dctcp", "min_rto_us": 3e5 / tdf, "max_rto_us": 2e6 / tdf},
        "parameters": {"tdf": tdf, "loops": [], "sample_period_s": 0.5 / tdf,
                       "socket_buffer": socket_buffer, "lock_timeout_s": 600}})
    run = runner.run_experiment(cfg, tmp_path, report=False)
    assert run.meta["interrupted"] is None, run.meta["interrupted"]
    return pd.read_csv(run.root / "runs.csv").iloc[0]


@pytest.mark.root
@pytest.mark.mininet
@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("mnexec") is None,
                    reason="needs root and Mininet")
def test_overloaded_run_is_invalid_and_a_light_one_valid(tmp_path: Path) -> None:
    # 100 Gb/s fabric at TDF 400 000: 0.25 Mb/s links (a frame takes 48 ms: CPU stalls of a
    # loaded machine stay below one of them), a 48 KB AllToAll on 4 hosts — light
    light = _fabric_run(tmp_path, "light", 400_000, "48KB", 256 << 10)
    assert light["ok"], light["errors"]
    assert bool(light["valid"]), light["invalid_reason"]
    # the same fabric at TDF 10: 10 Gb/s links no Python switch can serve, 4 KB socket
    # buffers: frames pile up and die in front of the pipeline
    heavy = _fabric_run(tmp_path, "heavy", 10, "960KB", 4096)
    assert not bool(heavy["valid"])
    assert "dropped outside the P4 pipeline" in heavy["invalid_reason"] or \
        "hidden queue" in heavy["invalid_reason"], heavy["invalid_reason"]
    assert heavy["hidden_drops"] > 0 or heavy["ingress_lag_p99_us"] > 0


def test_headroom_scales_every_threshold() -> None:
    # calibration's margin: a run at 60 % of each limit is valid, but not with thresholds x0.5
    frame = guard.frame_time_us(MBPS10)
    m = Measures(frames_switched=10_000, socket_drops=6,
                 ingress_lag_us=_hist([int(0.6 * frame)] * 100),
                 egress_delay_us=_hist([0] * 100),
                 send_lag_us=_hist([int(0.6 * guard.SEND_LAG_FRAMES * frame)] * 100),
                 switch_cpu={"edge1": 0.6 * guard.SWITCH_CPU_MAX})
    assert judge(m, MBPS10).valid
    strict = judge(m, MBPS10, headroom=0.5)
    prefixes = ("6 frames dropped outside", "hidden queue", "hosts cannot pace", "CPU-bound")
    assert len(strict.reasons) == 4
    assert all(r.startswith(p) for r, p in zip(strict.reasons, prefixes, strict=True))


def test_false_link_downs_are_the_loops_downs_of_links_the_run_did_not_cut() -> None:
    from controller.fabric import ControlEvent
    from topo.guard import false_link_downs

    ev = [ControlEvent(0.0, "failure", "agg5", "link agg5:4-core2:3 down (no probe "
                       "for 2 periods)"),
          ControlEvent(1.0, "failure", "agg5", "link agg5:4-core2:3 up (probes back)"),
          ControlEvent(2.0, "failure", "edge1", "link edge1:3-agg1:1 down (no probe "
                       "for 2 periods)"),
          ControlEvent(3.0, "failure", "agg6", "link agg6:3-core3:3 silent for 2 "
                       "periods but kept: without it edge5 would be cut off (rerouting cannot "
                       "help)"),
          ControlEvent(4.0, "wam", "edge1", "group 3 weights [1.0, 0.75]")]
    assert false_link_downs(ev) == ["agg5-core2", "agg1-edge1"]
    assert false_link_downs(ev, ("agg1", "edge1")) == ["agg5-core2"]
    # links a session cut before the run are down, not live ones declared down
    assert false_link_downs(ev, down_links=[("core2", "agg5"), ("agg1", "edge1")]) == []
    assert false_link_downs([]) == []


def test_timed_reasons_are_in_fabric_time() -> None:
    # 100 ms of wall send lag at TDF 1000 is 100 µs of the fabric's; frames of 1.21 ms wall
    v = judge(Measures(send_lag_us=_hist([100_000] * 100)), MBPS10, tdf=1000)
    assert not v.valid and " ms" not in v.reasons[0], v.reasons
    lag = float(v.reasons[0].split("send lag p99 ")[1].split(" µs")[0])
    assert lag == pytest.approx(100, rel=0.04)            # within the histogram's resolution
    assert "> 4 frame times (4.84 µs fabric time)" in v.reasons[0], v.reasons
