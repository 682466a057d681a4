"""Control loops: the Whack-a-Mole decision on scripted samples (pure), and the failure and
Whack-a-Mole loops end to end on an in-process fabric driven over P4Runtime."""

from __future__ import annotations

import time

import pytest
from ctl_helpers import udp_frame
from inproc_fabric import inproc_fabric

from controller.fabric import FabricController
from controller.loops import WamGroupState, WamPolicy, parse_probe, probe_frame, wam_decide
from model.routing import PROBE_IP
from model.spec import leaf_spine

P = WamPolicy(high=16, low=4, hold=2, full=60, step=0.25, floor=0.25)


def _run(samples: list[dict[int, int]], ports=(1, 2, 3)) -> list[dict[int, float]]:
    st = WamGroupState()
    w = {p: 1.0 for p in ports}
    out = []
    for q in samples:
        w = wam_decide(w, q, st, P)
        out.append(w)
    return out


def test_wam_one_hot_period_moves_nothing_hold_periods_do() -> None:
    hist = _run([{1: 30}, {1: 2}, {1: 30}, {1: 30}])
    assert hist[0] == hist[1] == hist[2] == {1: 1.0, 2: 1.0, 3: 1.0}
    assert hist[3] == {1: 0.75, 2: 1.0, 3: 1.0}


def test_wam_full_queue_moves_at_once() -> None:
    (w,) = _run([{2: 64}])
    assert w[2] == 0.75 and w[1] == w[3] == 1.0


def test_wam_busy_member_never_below_floor() -> None:
    hist = _run([{1: 40}] * 20)
    assert min(h[1] for h in hist) == pytest.approx(P.floor)
    assert hist[-1][1] == pytest.approx(P.floor)


def test_wam_hysteresis_between_low_and_high() -> None:
    # congested, then hovering between low and high: stays congested (keeps losing weight)
    hist = _run([{1: 30}, {1: 30}, {1: 10}, {1: 10}, {1: 3}, {1: 3}, {1: 3}])
    w1 = [h[1] for h in hist]
    assert w1[1] < 1.0 and w1[2] < w1[1] and w1[3] < w1[2]
    # back below low: recovers step by step up to the full share
    assert w1[4] > w1[3] and w1[-1] == 1.0 or w1[-1] > w1[4]
    assert all(x <= 1.0 for x in w1)


def test_wam_all_congested_moves_nothing() -> None:
    hist = _run([{1: 64, 2: 64, 3: 64}] * 3)
    assert hist[-1] == {1: 1.0, 2: 1.0, 3: 1.0}


def test_wam_policy_rejects_nonsense() -> None:
    with pytest.raises(ValueError):
        WamPolicy(high=4, low=8)
    with pytest.raises(ValueError):
        WamPolicy(step=0)


def test_probe_frame_round_trip() -> None:
    f = probe_frame(7, 3, 123456, "02:fe:00:07:00:03")
    assert parse_probe(f) == (7, 3, 123456)
    assert parse_probe(f[:-1]) is None
    assert parse_probe(udp_frame("10.0.0.1", PROBE_IP, 1, 1, "02:00:00:00:00:01",
                                 "ff:ff:ff:ff:ff:ff", payload=b"x" * 12)) is None


# ---- end to end on an in-process fabric ------------------------------------------------------
def _wait(cond, timeout: float) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.02)
    return cond()


def _send_h1_to_h2(fab, n: int, sport0: int = 1000) -> int:
    """n UDP packets h1 -> h2 (distinct source ports); returns how many reached h2."""
    spec = fab.spec
    h1, h2 = spec.hosts["h1"], spec.hosts["h2"]
    before = len(fab.host_ports["h2"].sent)
    fab.host_ports["h1"].feed([udp_frame(h1.ip, h2.ip, sport0 + i, 4791, h1.mac,
                                         h1.gateway_mac) for i in range(n)])
    _wait(lambda: len(fab.host_ports["h2"].sent) - before >= n, 3.0)
    return len(fab.host_ports["h2"].sent) - before


def test_failure_loop_detects_a_cut_link_reroutes_and_restores() -> None:
    period = 0.4  # x 3 missed periods: slack for a loaded 2-core machine
    with inproc_fabric(leaf_spine(2, 2, 1)) as fab:
        ctl = FabricController(fab.spec, control_period=period, probe_miss_periods=3)
        ctl.start("random", loops=("failure",))
        try:
            assert _send_h1_to_h2(fab, 40) == 40
            time.sleep(4 * period)
            assert all(ctl.link_state().values())  # probes flow on every link
            fab.cut_link("leaf1", "spine1")
            assert _wait(lambda: not ctl.link_state()[frozenset({"leaf1", "spine1"})], 10.0)
            downs = [e.what for e in ctl.events if e.loop == "failure" and "down" in e.what]
            assert downs and all("leaf1:2-spine1:1" in w for w in downs)
            # the reroute was written before link_state showed the link down
            assert any(e.loop == "failure" and e.what.startswith("reroute") for e in ctl.events)
            # spraying over the remaining spine loses nothing
            assert _send_h1_to_h2(fab, 40, 2000) == 40
            assert ctl.link_state()[frozenset({"leaf2", "spine1"})]
            assert any(e.loop == "failure" and "down" in e.what for e in ctl.events)
            fab.mend_link("leaf1", "spine1")
            assert _wait(lambda: all(ctl.link_state().values()), 10.0)
            assert any(e.loop == "failure" and "up" in e.what for e in ctl.events)
            links = ctl.read_links()
            assert len(links) == 8 and links["up"].all()
            assert (links["tx_packets"] > 0).all()  # probes count as tx on every link end
            routes = ctl.read_routes(["leaf1"])
            to_h2 = routes[routes["prefix"] == "10.1.1.0/24"]
            assert to_h2["packets"].sum() == 80  # the direct counter saw both bursts
            probe = routes[routes["action"] == "send_to_cpu"]
            assert int(probe["packets"].iloc[0]) > 0  # spine probes punted to the CPU
        finally:
            ctl.stop()


def test_a_full_egress_queue_keeps_its_link_a_cut_link_still_goes_down() -> None:
    """An incast fills spine1's egress queue towards leaf2 (tail drops) for many probe
    periods: its probes, packet-outs in fabric.p4's control priority queue, still get through
    and the link stays up; a cut link is still declared down. (With one queue per port, as
    before, the probes are tail-dropped with the data and this link goes down.)"""
    period = 0.4
    with inproc_fabric(leaf_spine(2, 2, 1)) as fab:
        spec = fab.spec
        spine1 = fab.switches["spine1"]
        hot = spec.links_between("spine1", "leaf2")[0].port_of("spine1")
        spine1.set_port_rate(hot, 200e3)  # one 1 KB frame per 42 ms: 64 queued = 2.7 s
        ctl = FabricController(spec, control_period=period, probe_miss_periods=2)
        ctl.start("random", loops=("failure",))
        try:
            assert _wait(lambda: all(ctl.loops.last_seen.values()), 10.0)
            h1, h2 = spec.hosts["h1"], spec.hosts["h2"]
            t_end = time.monotonic() + 8 * period
            while time.monotonic() < t_end:  # about half of each burst goes via spine1
                fab.host_ports["h1"].feed([udp_frame(h1.ip, h2.ip, 1000 + i, 4791, h1.mac,
                                                     h1.gateway_mac, payload=b"x" * 1000)
                                           for i in range(120)])
                time.sleep(1.0)
            st = spine1.port_stats()[hot]
            assert st["queue_max_depth"] == 64 and st["tail_drops"] > 0  # really full
            assert st["queue_priority_enqueued"] > 0  # the probes took the control queue
            assert ctl.link_state()[frozenset({"spine1", "leaf2"})]
            assert not [e for e in ctl.events if e.loop == "failure" and "down" in e.what]
            fab.cut_link("leaf1", "spine2")
            assert _wait(lambda: not ctl.link_state()[frozenset({"leaf1", "spine2"})], 10.0)
            assert ctl.link_state()[frozenset({"spine1", "leaf2"})]
        finally:
            ctl.stop()


def test_wam_loop_moves_balls_off_a_congested_member() -> None:
    with inproc_fabric(leaf_spine(2, 2, 1)) as fab:
        ctl = FabricController(fab.spec, control_period=0.1)
        try:
            ctl.start("wam", loops=())
            from controller.loops import ControlLoops

            loops = ControlLoops(ctl, ["wam"], WamPolicy(high=16, low=4, hold=2))
            (g,) = ctl.entries["leaf1"].groups.values()
            hot = g.ports[0]
            for _ in range(3):  # the queue of spine1's port stays deep for 3 periods
                ctl.write_registers("leaf1", "MyEgress.port_qdepth_max", {hot: 40})
                loops.wam_step()
            w = ctl.weights[("leaf1", g.group_id)]
            assert w[hot] < 1.0 and w[g.ports[1]] == 1.0
            # the read cleared the register, and the new ranges are on the switch
            assert ctl.read_registers("leaf1", "MyEgress.port_qdepth_max", [hot]) == [0]
            ranges = [e for e in ctl.read_entries("leaf1", "MyIngress.wam_slot_to_member")]
            sizes = {e.params_dict["member_idx"]:
                     e.match_dict["meta.lb.wam_slot"].high - e.match_dict["meta.lb.wam_slot"].low
                     + 1 for e in ranges}
            assert sizes[0] < sizes[1] and sizes[0] + sizes[1] == 256
            assert any(e.loop == "wam" for e in ctl.events)
        finally:
            ctl.stop()


class _FakeController:
    """A FabricControl (controller.loops) that records what the loops ask of it."""

    def __init__(self, spec) -> None:
        self.spec = spec
        self.events: list[str] = []
        self.detected_failed: frozenset[int] = frozenset()
        self.applied = 0
        self.handler = None

    def event(self, loop: str, switch, what: str) -> None:
        self.events.append(what)

    def send_probes(self, seq: int) -> None:
        pass

    def listen_probes(self, handler) -> None:
        self.handler = handler

    def set_detected_failed(self, links: frozenset[int], loop: str, why: str) -> int:
        self.detected_failed = links
        self.applied += 1
        return 0

    def operator_failed(self) -> frozenset[int]:
        return frozenset(self.held)

    held: frozenset[int] = frozenset()

    def wam_groups(self) -> list:
        return []

    def group_weights(self, switch: str, group_id: int) -> dict[int, float]:
        return {}

    def read_qdepth_max(self, switches) -> dict:
        return {}

    def set_group_weights(self, weights, loop: str, why: str) -> int:
        return 0


def _hear_all(loops, spec, seq: int, skip: frozenset = frozenset()) -> None:
    for lk in spec.switch_links():
        if frozenset({lk.a, lk.b}) in skip:
            continue
        a, b = spec.switches[lk.a], spec.switches[lk.b]
        loops.record_probe(lk.b, lk.b_port, a.device_id, lk.a_port, seq)
        loops.record_probe(lk.a, lk.a_port, b.device_id, lk.b_port, seq)


def test_link_liveness_counts_probe_rounds_not_seconds() -> None:
    from controller.loops import ControlLoops

    spec = leaf_spine(2, 2, 1)
    ctl = _FakeController(spec)
    # not started: rounds are driven by hand
    loops = ControlLoops(ctl, ["failure"], miss_periods=3)
    cut = frozenset({"leaf1", "spine2"})
    for rnd in range(1, 3):  # two rounds, the cut link silent: not yet down (miss = 3)
        loops.seq = rnd
        _hear_all(loops, spec, rnd, skip=frozenset({cut}))
        loops.check_links()
    assert loops.down == set() and ctl.applied == 0
    time.sleep(0.5)  # wall time alone (a stalled loop sends no rounds) changes nothing
    loops.check_links()
    assert loops.down == set()
    loops.seq = 3  # the third missed round
    _hear_all(loops, spec, 3, skip=frozenset({cut}))
    loops.check_links()
    (idx,) = loops.down
    assert frozenset({spec.links[idx].a, spec.links[idx].b}) == cut
    assert ctl.detected_failed == {idx} and ctl.applied == 1
    # one direction back is not enough; both directions heard in the last round restore it
    loops.seq = 4
    _hear_all(loops, spec, 4, skip=frozenset({cut}))
    lk = spec.links[idx]
    loops.record_probe(lk.b, lk.b_port, spec.switches[lk.a].device_id, lk.a_port, 4)
    loops.check_links()
    assert loops.down == {idx}
    loops.seq = 5
    _hear_all(loops, spec, 5)
    loops.check_links()
    assert loops.down == set() and ctl.detected_failed == set() and ctl.applied == 2


def test_probe_from_the_wrong_neighbour_is_ignored() -> None:
    from controller.loops import ControlLoops

    spec = leaf_spine(2, 2, 1)
    ctl = _FakeController(spec)
    loops = ControlLoops(ctl, ["failure"], miss_periods=3)
    port = next(p for p, (peer, _) in spec.ports("leaf1").items() if peer == "spine1")
    loops.record_probe("leaf1", port, spec.switches["spine2"].device_id, 1, 9)
    assert loops.last_seen[("leaf1", port)] == 0
    assert len(ctl.events) == 1 and "miswired" in ctl.events[0]


def test_a_switch_whose_packet_ins_lag_keeps_its_links() -> None:
    """Late PacketIns (a starved switch or controller) delay every port of that switch alike:
    no link is declared dead; a port that lags behind its switch's other ports is."""
    from controller.loops import ControlLoops

    spec = leaf_spine(2, 2, 1)
    ctl = _FakeController(spec)
    loops = ControlLoops(ctl, ["failure"], miss_periods=3)
    late = "spine1"
    for rnd in range(1, 6):  # spine1 hears nothing new after round 1: its stream is backed up
        loops.seq = rnd
        for lk in spec.switch_links():
            for rx, rx_port, tx, tx_port in ((lk.b, lk.b_port, lk.a, lk.a_port),
                                             (lk.a, lk.a_port, lk.b, lk.b_port)):
                if rx != late or rnd == 1:
                    loops.record_probe(rx, rx_port, spec.switches[tx].device_id, tx_port, rnd)
        loops.check_links()
    assert loops.down == set() and ctl.applied == 0
    # the backlog arrives, except on the port from leaf2: that direction is dead
    port, (_, leaf_port) = next((p, pp) for p, pp in spec.ports(late).items() if pp[0] == "leaf1")
    for rnd in range(6, 10):
        loops.seq = rnd
        loops.record_probe(late, port, spec.switches["leaf1"].device_id, leaf_port, rnd)
        _hear_all(loops, spec, rnd, skip=frozenset({frozenset({late, "leaf1"}),
                                                   frozenset({late, "leaf2"})}))
        lk1 = spec.links_between(late, "leaf1")[0]   # leaf1 hears spine1 too
        loops.record_probe("leaf1", lk1.port_of("leaf1"), spec.switches[late].device_id,
                           lk1.port_of(late), rnd)
        loops.check_links()
    (idx,) = loops.down
    assert {spec.links[idx].a, spec.links[idx].b} == {late, "leaf2"}


def test_the_last_way_into_a_switch_is_never_taken_out() -> None:
    """Both uplinks of leaf1 go silent (an incast's probes tail-dropped, or really cut):
    removing the second would cut leaf1's hosts off, which rerouting cannot fix and which would
    turn every packet to them into a route miss; it stays in service and is reported once."""
    from controller.loops import ControlLoops

    spec = leaf_spine(3, 2, 1)
    ctl = _FakeController(spec)
    loops = ControlLoops(ctl, ["failure"], miss_periods=3)
    silent = frozenset({frozenset({"leaf1", "spine1"}), frozenset({"leaf1", "spine2"})})
    for rnd in range(1, 7):
        loops.seq = rnd
        _hear_all(loops, spec, rnd, skip=silent)
        loops.check_links()
    (idx,) = loops.down  # one of the two goes; the other is the last way in
    assert frozenset({spec.links[idx].a, spec.links[idx].b}) in silent
    kept = [e for e in ctl.events if "kept" in e]
    assert len(kept) == 1 and "leaf1 would be cut off" in kept[0]
    for rnd in range(7, 9):  # probes back: the removed one is restored
        loops.seq = rnd
        _hear_all(loops, spec, rnd)
        loops.check_links()
    assert loops.down == set()


def test_each_reader_of_the_queue_maxima_sees_what_others_cleared() -> None:
    """The sampler and the Whack-a-Mole loop both clear port_qdepth_max; each sees the
    maximum since its own last read (FabricController._clearing_read)."""
    from controller.fabric import FabricController
    from model.spec import fat_tree

    ctl = FabricController(fat_tree(4))
    assert ctl._clearing_read("wam", "edge1", [3, 4], [0, 0]) == [0, 0]      # wam registers
    assert ctl._clearing_read("sampler", "edge1", [3, 4], [20, 1]) == [20, 1]
    assert ctl._clearing_read("sampler", "edge1", [3, 4], [2, 0]) == [2, 0]
    assert ctl._clearing_read("wam", "edge1", [3, 4], [5, 0]) == [20, 1]     # sampler's 20 kept
    assert ctl._clearing_read("wam", "edge1", [3, 4], [0, 0]) == [0, 0]      # seen once
    assert ctl._clearing_read("sampler", "edge1", [3, 4], [0, 0]) == [5, 0]  # and wam's 5


def test_late_probes_of_a_replaced_loop_are_ignored() -> None:
    """The controller restarts its loops (Whack-a-Mole joins); probes of the old loop's rounds
    still in flight reach the new one, whose rounds start again at 1. Counted, a port heard at
    an old round 40 put its switch's freshest round far ahead of its other ports, and those
    links were declared down (13 live links on the k=4 fabric)."""
    from controller.loops import ControlLoops

    spec = leaf_spine(2, 2, 1)
    ctl = _FakeController(spec)
    loops = ControlLoops(ctl, ["failure"], miss_periods=2)
    lk = spec.switch_links()[0]
    loops.record_probe(lk.b, lk.b_port, spec.switches[lk.a].device_id, lk.a_port, 40)
    assert loops.last_seen[(lk.b, lk.b_port)] == 0
    for rnd in range(1, 4):
        loops.check_links()
        loops.seq = rnd
        _hear_all(loops, spec, rnd)
    loops.check_links()
    assert loops.down == set() and ctl.applied == 0


class _LateFabric(_FakeController):
    """Probes that come back ``delay`` periods after their round went out (a starved
    controller or switches: the emulated fabric at a low TDF), ``slow`` senders' ``extra``
    periods later still (their PacketOuts queued longer), and none on ``cut`` links."""

    def __init__(self, spec, delay: int, slow: frozenset[str] = frozenset(),
                 extra: int = 0) -> None:
        super().__init__(spec)
        self.delay, self.slow, self.extra = delay, slow, extra
        self.cut: set[frozenset[str]] = set()
        self.in_flight: list[tuple[int, int, str, int, str, int]] = []
        self.period = 0
        self.rounds = 0

    def send_probes(self, seq: int) -> None:
        self.rounds += 1
        for lk in self.spec.switch_links():
            for tx, tx_port, rx, rx_port in ((lk.a, lk.a_port, lk.b, lk.b_port),
                                             (lk.b, lk.b_port, lk.a, lk.a_port)):
                late = self.delay + (self.extra if tx in self.slow else 0)
                self.in_flight.append((self.period + late, seq, rx, rx_port, tx, tx_port))

    def advance(self, loops) -> None:
        """One period: deliver what is due (not over a cut link), then the loops' tick."""
        self.period += 1
        due = [f for f in self.in_flight if f[0] <= self.period]
        self.in_flight = [f for f in self.in_flight if f[0] > self.period]
        for _, seq, rx, rx_port, tx, tx_port in due:
            if frozenset({rx, tx}) not in self.cut:
                loops.record_probe(rx, rx_port, self.spec.switches[tx].device_id, tx_port, seq)
        loops.tick()


def test_late_probes_slow_the_rounds_down_and_no_live_link_goes_down() -> None:
    """Probes come back 2 periods late, spine2's 5 (its PacketOuts queue longer). Sent every
    period, the leaves would hear spine1 at round n and spine2 at round n - 3 and call
    spine2's links dead (what the emulated fabric at TDF 5,000 did: 9-28 live links down per
    collective). The loop waits for a round to come back (or its timeout) before the next:
    no link is declared down, and it sends a round per round trip, not per period. (Its
    first round's timeout is the controller's floor, ``min_round_trip``: here 2 periods.)"""
    from controller.loops import ControlLoops

    spec = leaf_spine(2, 2, 1)
    fab = _LateFabric(spec, delay=2, slow=frozenset({"spine2"}), extra=3)
    loops = ControlLoops(fab, ["failure"], miss_periods=2, min_round_trip=2)
    for _ in range(60):
        fab.advance(loops)
    assert loops.down == set() and fab.applied == 0
    assert fab.rounds <= 60 // 5 + 2
    assert loops.round_timeout() == 2 * 5     # spine2's probes: back in 5 periods


def test_a_cut_link_is_declared_down_while_probes_are_late() -> None:
    """With every probe 4 periods late, a cut link still goes down (and only it), within
    a few round trips, and comes back when its probes do."""
    from controller.loops import ControlLoops

    spec = leaf_spine(2, 2, 1)
    fab = _LateFabric(spec, delay=4)
    loops = ControlLoops(fab, ["failure"], miss_periods=2)
    for _ in range(40):
        fab.advance(loops)
    assert loops.down == set()
    cut = frozenset({"leaf1", "spine2"})
    fab.cut.add(cut)
    periods = 0
    while not loops.down and periods < 60:
        fab.advance(loops)
        periods += 1
    (idx,) = loops.down
    assert frozenset({spec.links[idx].a, spec.links[idx].b}) == cut
    assert periods <= 6 * 4 + 4, periods   # a few round trips of 4 periods, not the cap
    fab.cut.clear()
    for _ in range(30):
        fab.advance(loops)
    assert loops.down == set() and fab.detected_failed == frozenset()


def test_prompt_probes_keep_a_round_per_period() -> None:
    """Probes back within the period (the simulator's, an idle fabric): a round every period
    and a cut link down at the second round it misses, as before the rounds waited for each
    other."""
    from controller.loops import ControlLoops

    spec = leaf_spine(2, 2, 1)
    fab = _LateFabric(spec, delay=0)
    loops = ControlLoops(fab, ["failure"], miss_periods=2)
    for _ in range(10):
        fab.advance(loops)
    assert fab.rounds == 10 and loops.round_timeout() == 1
    fab.cut.add(frozenset({"leaf1", "spine1"}))
    fab.advance(loops)                # the first round it misses
    assert not loops.down
    fab.advance(loops)                # the second
    assert len(loops.down) == 1 and fab.rounds == 12


def test_the_controller_counts_its_probe_round_trip_in_periods() -> None:
    """A control period shorter than the controller's own probe round trip (a low TDF)
    makes the rounds' timeout longer than one period from the start."""
    from controller.fabric import FabricController
    from model.spec import fat_tree

    ctl = FabricController(fat_tree(4), control_period=0.1, probe_rtt_s=0.25)
    from controller.loops import ControlLoops

    loops = ControlLoops(ctl, ["failure"], min_round_trip=3)
    assert loops.round_timeout() == 6
    with pytest.raises(ValueError):
        FabricController(fat_tree(4), probe_rtt_s=-1)


def test_a_link_the_operator_failed_is_not_judged_and_comes_back_quietly() -> None:
    """A link cut and announced (``fail_link``: routed around, no longer probed) is neither
    declared down nor waited for by the rounds; restored, its probes resume and it is not
    declared down either (its ends count as heard at the last round)."""
    from controller.loops import ControlLoops

    spec = leaf_spine(2, 2, 1)
    fab = _LateFabric(spec, delay=1)
    loops = ControlLoops(fab, ["failure"], miss_periods=2)
    for _ in range(5):
        fab.advance(loops)
    pair = frozenset({"leaf1", "spine2"})
    idx = next(i for i, lk in enumerate(spec.links) if {lk.a, lk.b} == pair)
    fab.cut.add(pair)
    fab.held = frozenset({idx})
    rounds = fab.rounds
    for _ in range(20):
        fab.advance(loops)
    assert loops.down == set() and fab.applied == 0
    assert fab.rounds - rounds >= 19          # a round per period: nothing waits for it
    fab.cut.clear()
    fab.held = frozenset()
    for _ in range(10):
        fab.advance(loops)
    assert loops.down == set() and fab.applied == 0
    assert not [e for e in fab.events if "down" in e]
