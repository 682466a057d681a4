"""`python -m traffic.run`: build or load a schedule, then run this host's ranks of it.

    python -m traffic.run --schedule ring_allreduce --ranks 16 --size 1MB \\
        --hosts 10.0.0.1,10.0.0.2,... --rate 1G --qps 4 --out results/run1

--hosts lists one IPv4 address per host (or name=ip); ranks are placed on them with
--placement unless the schedule file carries a placement of host names. The agent runs the
ranks whose host address is local (or --rank). --dump-schedule writes the schedule and exits.

--transport udp (default) is the reorder-tolerant transport on raw frames (needs root);
--transport tcp runs the same schedule over kernel TCP connections, one per flow and QP,
listening on --tcp-port (4792), and records TCP_INFO (retransmissions, reordering) per
connection, to show how packet spraying hurts a reorder-intolerant transport.

--path-policy picks each data packet's entropy (UDP source port) at the host (udp transport;
traffic/policies.py): single (default: the --qps ports in turn), split(K) [--pin --fabric
fattree:4], entropy-spray(N) [--spray random], reps(N), ecn-adaptive(N) [--avoid-us]. The
choice is recorded in every rank's metrics (path_policy).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from .agent import AgentConfig
from .congestion import DEFAULT_CC, REGISTRY
from .metrics import RankMetrics
from .policies import ENTROPY_SETS, SPRAY_MODES, PolicySpec, parse_policy
from .schedules import (
    GENERATORS,
    Schedule,
    ScheduleError,
    bsp_training,
    dump,
    load,
    load_trace,
    parse_size,
    place,
)
from .schedules.placement import POLICIES
from .transport import TransportConfig


def _size(text: str) -> int:
    try:
        return parse_size(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _rate(text: str) -> float:
    units = {"K": 1e3, "M": 1e6, "G": 1e9}
    t = text.strip().upper().removesuffix("BPS").removesuffix("BIT/S")
    try:
        return float(t[:-1]) * units[t[-1]] if t and t[-1] in units else float(t)
    except ValueError:
        raise argparse.ArgumentTypeError(f"bad rate {text!r} (use e.g. 800M, 1G)") from None


def _cc_params(text: str) -> dict[str, float]:
    out = {}
    for item in filter(None, text.split(",")):
        k, eq, v = item.partition("=")
        try:
            if not eq:
                raise ValueError
            out[k.strip()] = float(v)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{item!r} is not NAME=NUMBER") from None
    return out


def _ints(text: str) -> list[int]:
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") \
            from None


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m traffic.run", description=__doc__,
                                usage="%(prog)s --schedule NAME|FILE [options]  (see --help)",
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    g = p.add_argument_group("schedule")
    g.add_argument("--schedule", required=True,
                   help=f"a generator ({', '.join(GENERATORS)}) or a .json/.yaml file")
    g.add_argument("--trace", action="store_true", help="--schedule is a CSV/JSON trace")
    g.add_argument("--ranks", type=int, help="number of ranks (generators)")
    g.add_argument("--size", type=_size, default=1 << 20, help="message size, e.g. 1MB, 4MiB")
    g.add_argument("--job", type=int, default=1)
    g.add_argument("--algorithm", default="direct", help="AllToAll: direct, scattered or pairwise")
    g.add_argument("--skew", default="zipf", help="MoE: zipf, hot or uniform")
    g.add_argument("--alpha", type=float, default=1.2, help="MoE Zipf exponent")
    g.add_argument("--hot", type=int, default=1, help="MoE: number of hot experts")
    g.add_argument("--hot-fraction", type=float, default=0.8)
    g.add_argument("--tokens", type=int, default=0, help="MoE: sample this many tokens")
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--iterations", type=int, default=0, help="BSP: repeat with compute phases")
    g.add_argument("--compute-us", type=float, default=0.0, help="BSP compute time per step")
    g.add_argument("--stragglers", type=_ints, default=[], help="BSP: slow ranks, e.g. 3,7")
    g.add_argument("--straggler-prob", type=float, default=0.0)
    g.add_argument("--straggler-factor", type=float, default=2.0)
    g.add_argument("--jitter", type=float, default=0.0, help="BSP lognormal sigma")
    g.add_argument("--dump-schedule", type=Path, help="write the schedule here and exit")
    h = p.add_argument_group("placement")
    h.add_argument("--hosts", help="comma-separated IPv4 addresses (or name=ip) of the hosts")
    h.add_argument("--placement", choices=POLICIES, default="block")
    h.add_argument("--rank", type=_ints, help="run these ranks (default: ranks on local IPs)")
    t = p.add_argument_group("transport")
    t.add_argument("--transport", choices=("udp", "tcp"), default="udp",
                   help="udp: reorder-tolerant selective repeat on raw frames (default); "
                   "tcp: kernel TCP, one connection per flow and QP")
    t.add_argument("--rate", type=_rate, default=None,
                   help="pacing rate, e.g. 500M, 1G (udp: per host, default 1G; tcp: per flow "
                   "via SO_MAX_PACING_RATE, exact with the fq qdisc; default unpaced)")
    t.add_argument("--qps", type=int, default=1,
                   help="entropy values (source ports) per flow; tcp: parallel connections")
    t.add_argument("--tcp-port", type=int, default=4792, help="tcp: listener port")
    t.add_argument("--mss", type=int, default=1400, help="payload bytes per packet")
    t.add_argument("--window", type=int, default=256, help="packets in flight per flow")
    t.add_argument("--rto-ms", type=float, default=20.0,
                   help="RTO before the first RTT sample (RFC 6298's initial RTO)")
    t.add_argument("--min-rto-ms", type=float, default=20.0,
                   help="floor of the RTO estimate (default %(default)s; = --max-rto-ms: a "
                        "fixed timer)")
    t.add_argument("--max-rto-ms", type=float, default=2000.0,
                   help="ceiling of the RTO estimate and its backoff (default %(default)s)")
    t.add_argument("--cc", default=DEFAULT_CC.value, choices=sorted(REGISTRY),
                   help="congestion control (traffic.congestion; default %(default)s)")
    t.add_argument("--cc-params", type=_cc_params, default={},
                   help="its parameters, e.g. g=0.0625,init_cwnd=8")
    t.add_argument("--base-rtt-us", type=float, default=0.0,
                   help="the fabric's unloaded RTT (NSCC's delay target; 0: measured)")
    t.add_argument("--nack-gap", type=int, default=64)
    d = TransportConfig()
    t.add_argument("--ack-delay-ms", type=float, default=d.ack_delay * 1e3,
                   help="the receiver's delayed-ACK timer (default %(default)s)")
    t.add_argument("--tick-ms", type=float, default=d.tick * 1e3,
                   help="granularity of the RTO and delayed-ACK timers (default %(default)s)")
    t.add_argument("--pace-credit-ms", type=float, default=AgentConfig.pace_credit * 1e3,
                   help="how far the pacers (the NIC rate's and a rate-based congestion "
                        "control's) may fall behind and catch up in a burst (default "
                        "%(default)s)")
    t.add_argument("--next-hop-mac", help="override the neighbour-table next-hop MAC")
    t.add_argument("--prop-delay-us", type=float, default=0.0,
                   help="propagation delay per link, µs, that this host adds to what arrives "
                        "(traffic.delayline; a fabric that cannot delay frames itself)")
    t.add_argument("--path-links", type=Path,
                   help="with --prop-delay-us: JSON {ip: {peer ip: links}} (delayline)")
    q = p.add_argument_group("path policy (host-based load balancing, udp transport)")
    q.add_argument("--path-policy", type=_policy, default=PolicySpec(),
                   help="single | split(K) | entropy-spray(N) | reps(N) | ecn-adaptive(N)")
    q.add_argument("--pin", action="store_true",
                   help="split: choose ports whose ECMP hashes use distinct uplinks")
    q.add_argument("--fabric", help="the fabric for --pin: fattree:K or "
                   "leafspine:LEAVES:SPINES:HOSTS_PER_LEAF[:UPLINKS]")
    q.add_argument("--spray", choices=SPRAY_MODES, default="rr",
                   help="entropy-spray: round-robin or random entropies")
    q.add_argument("--avoid-us", type=float, default=200.0,
                   help="ecn-adaptive: avoid a CE-marked entropy this long")
    q.add_argument("--entropy-set", choices=ENTROPY_SETS, default="random",
                   help="unpinned policies: random ports per flow, or the QP ports")
    r = p.add_argument_group("run")
    r.add_argument("--start-at", type=float, help="wall-clock start (time.time())")
    r.add_argument("--start-in", type=float, help="start this many seconds from now")
    r.add_argument("--timeout", type=float, default=60.0, help="hard bound on the run, s")
    r.add_argument("--linger", type=float, default=AgentConfig.linger,
                   help="wall seconds to keep ACKing after the last step, at least")
    r.add_argument("--beacon-gap-ms", type=float, default=AgentConfig.beacon_gap * 1e3,
                   help="wall ms between the start barrier's first READY rounds (doubling)")
    r.add_argument("--beacon-gap-max-ms", type=float,
                   default=AgentConfig.beacon_gap_max * 1e3,
                   help="... up to this many wall ms")
    r.add_argument("--linger-rtos", type=float,
                   help="after the last step, exit once no data arrived for this many initial "
                   "RTOs (default traffic.agent.LINGER_RTOS, 10: retransmissions over dead "
                   "paths)")
    r.add_argument("--out", type=Path, default=Path("traffic-out"), help="metrics directory")
    return p


def _policy(text: str) -> PolicySpec:
    try:
        return parse_policy(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def path_policy(a: argparse.Namespace) -> tuple[PolicySpec, object | None]:
    """The run's PolicySpec (--path-policy with --pin/--spray/--avoid-us) and, for --pin, the
    FabricSpec; ValueError naming the flag otherwise."""
    import dataclasses

    if a.avoid_us <= 0:
        raise ValueError("--avoid-us must be positive")
    spec = dataclasses.replace(a.path_policy, pin=a.pin, mode=a.spray, hold=a.avoid_us * 1e-6,
                               seed=a.seed, entropy_set=a.entropy_set)
    if a.transport == "tcp" and spec.name != "single":
        raise ValueError("--path-policy: the tcp transport has one path per connection "
                         "(use --qps)")
    fabric = None
    if a.pin:
        if not a.fabric:
            raise ValueError("--pin needs --fabric (the topology whose hashes it predicts)")
        from model.paths import spec_from_text

        fabric = spec_from_text(a.fabric)
    return spec, fabric


def build_schedule(a: argparse.Namespace) -> Schedule:
    if a.schedule in GENERATORS:
        if a.ranks is None:
            raise ScheduleError("ranks", "--ranks is required with a generator")
        kw: dict = {}
        if a.schedule in ("alltoall", "moe_alltoall"):
            kw["algorithm"] = a.algorithm
        if a.schedule == "moe_alltoall":
            kw.update(skew=a.skew, alpha=a.alpha, hot=a.hot, hot_fraction=a.hot_fraction,
                      tokens=a.tokens, seed=a.seed)

        def gen() -> Schedule:
            return GENERATORS[a.schedule](a.ranks, a.size, **kw)

        if a.iterations:
            s = bsp_training(gen, a.iterations, a.compute_us, a.stragglers, a.straggler_prob,
                             a.straggler_factor, jitter=a.jitter, seed=a.seed)
        else:
            s = gen()
    elif a.trace:
        s = load_trace(a.schedule, a.ranks)
    elif Path(a.schedule).suffix in (".json", ".yaml", ".yml"):
        s = load(a.schedule)
    else:
        raise ScheduleError("schedule", f"unknown generator or file {a.schedule!r}; "
                            f"generators: {', '.join(GENERATORS)}")
    s.job = a.job
    return s


def host_map(a: argparse.Namespace, s: Schedule) -> list[str]:
    """Rank -> IPv4 address."""
    if not a.hosts:
        raise ScheduleError("hosts", "--hosts is required to run")
    names: dict[str, str] = {}
    ips = []
    for item in a.hosts.split(","):
        name, _, ip = item.strip().rpartition("=")
        ips.append(ip)
        names[name or ip] = ip
    if s.placement is None:
        place(s, ips, a.placement, a.seed)
    try:
        return [names[h] for h in s.placement or []]
    except KeyError as e:
        raise ScheduleError("placement", f"host {e.args[0]} is not in --hosts") from None


def agent_config(a: argparse.Namespace, policy: PolicySpec | None = None,
                 fabric: object | None = None) -> AgentConfig:
    """The agent's and the transport's configuration from parsed flags (ValueError naming
    the flag)."""
    if a.qps < 1 or a.mss < 1 or a.mss > 8900 or (a.rate is not None and a.rate <= 0):
        raise ValueError("--qps, --mss (1..8900) and --rate must be positive")
    if not 0 < a.tcp_port < 65536:
        raise ValueError(f"--tcp-port: {a.tcp_port} out of range 1..65535")
    if not 0 < a.min_rto_ms <= a.max_rto_ms or a.rto_ms <= 0:
        raise ValueError("--rto-ms and --min-rto-ms <= --max-rto-ms must be > 0")
    for flag in ("ack_delay_ms", "tick_ms", "beacon_gap_ms", "beacon_gap_max_ms"):
        if not getattr(a, flag) > 0:
            raise ValueError(f"--{flag.replace('_', '-')} must be > 0, got {getattr(a, flag)}")
    if not a.pace_credit_ms >= 0:
        raise ValueError(f"--pace-credit-ms must be >= 0, got {a.pace_credit_ms}")
    try:
        transport = TransportConfig(mss=a.mss, window=a.window, rto=a.rto_ms / 1000,
                                    nack_gap=a.nack_gap, ack_delay=a.ack_delay_ms / 1000,
                                    tick=a.tick_ms / 1000,
                                    pace_credit=a.pace_credit_ms / 1000).with_cc(
            a.cc, a.cc_params, min_rto=a.min_rto_ms / 1000, max_rto=a.max_rto_ms / 1000,
            base_rtt=a.base_rtt_us * 1e-6)
    except ValueError as e:
        raise ValueError(f"--cc-params: {e}") from None
    if not a.prop_delay_us >= 0 or a.prop_delay_us == float("inf"):
        raise ValueError(f"--prop-delay-us must be >= 0, got {a.prop_delay_us}")
    links: dict[str, int] = {}
    if a.prop_delay_us:
        if a.path_links is None:
            raise ValueError("--prop-delay-us needs --path-links (each peer's path length)")
        from .delayline import read_path_links
        from .nexthop import local_addresses

        links = read_path_links(a.path_links, local_addresses())
    start_at = a.start_at if a.start_at is not None else (
        time.time() + a.start_in if a.start_in is not None else None)
    return AgentConfig(rate_bps=a.rate or 1e9, qps=a.qps, timeout=a.timeout, linger=a.linger,
                       **({"linger_rtos": a.linger_rtos} if a.linger_rtos else {}),
                       start_at=start_at, nexthop_mac=a.next_hop_mac,
                       tcp_port=a.tcp_port, tcp_rate_bps=a.rate,
                       path_policy=policy or PolicySpec(),
                       fabric=fabric, transport=transport,
                       prop_delay=a.prop_delay_us * 1e-6, path_links=links,
                       pace_credit=a.pace_credit_ms / 1000, beacon_gap=a.beacon_gap_ms / 1000,
                       beacon_gap_max=max(a.beacon_gap_max_ms, a.beacon_gap_ms) / 1000)


def main(argv: list[str] | None = None) -> int:
    return execute(argv)[0]


def execute(argv: list[str] | None = None) -> tuple[int, dict[int, RankMetrics]]:
    """Parse ``argv``, run this host's ranks, write their metrics to --out and print the
    summary; (exit status, the ranks' metrics). The agent server (traffic.agentd) calls this
    in its long-lived process for every collective it is handed; a bad argument exits
    (SystemExit, argparse's status 2) as on the command line."""
    p = parser()
    a = p.parse_args(argv)
    try:
        s = build_schedule(a)
        if a.dump_schedule:
            dump(s, a.dump_schedule)
            print(f"wrote {a.dump_schedule}: {s.name}, {s.ranks} ranks")
            return 0, {}
        hosts = host_map(a, s)
        policy, fabric = path_policy(a)
    except (ScheduleError, ValueError) as e:
        p.error(str(e))
    from .agent import HostAgent
    from .nexthop import NextHopError, local_addresses

    if a.rank:
        bad = [r for r in a.rank if not 0 <= r < s.ranks]
        if bad:
            p.error(f"--rank: {bad[0]} out of range 0..{s.ranks - 1}")
        local = a.rank
    else:
        mine = local_addresses()
        local = [r for r, ip in enumerate(hosts) if ip in mine]
        if not local:
            p.error("--hosts: none of these addresses is local; pass --rank")
    try:
        cfg = agent_config(a, policy, fabric)
    except ValueError as e:
        p.error(str(e))
    if a.transport == "tcp":
        from .tcpagent import TcpHostAgent
        agent: HostAgent = TcpHostAgent(s, local, hosts, cfg)
    else:
        agent = HostAgent(s, local, hosts, cfg)
    try:
        agent.run()
    except (NextHopError, OSError) as e:
        print(f"traffic.run: error: {e}", file=sys.stderr)
        return 2, {}
    ok = True
    results = agent.results()
    for r, m in sorted(results.items()):
        m.write(a.out)
        ok &= m.completed
        colls = ", ".join(f"{c.name} {c.cct * 1e3:.2f} ms" for c in m.collectives)
        tot = m.totals()
        tcp = tot.tcp
        if m.transport == "tcp":
            seen = (f"tcp retrans {tcp and tcp.total_retrans}, reord_seen "
                    f"{tcp and tcp.reord_seen}, dsack {tcp and tcp.dsack_dups}, "
                    f"ooo segs in {tcp and tcp.rcv_ooopack}")
        else:
            seen = f"retx {tot.retransmissions}, reordered {tot.reordered}"
        print(f"rank {r}: {'done' if m.completed else m.error}; sent {tot.bytes_sent} B, "
              f"received {tot.bytes_received} B, {seen}; {colls}")
    if agent.exit_reason:
        print(f"left: {agent.exit_reason}")
    print(json.dumps({"out": str(a.out), "ranks": local}))
    return (0 if ok else 1), results


if __name__ == "__main__":
    sys.exit(main())
