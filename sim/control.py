"""The controller's control loops in virtual time: ``controller.loops.ControlLoops`` over the
simulated pipelines.

:class:`SimControl` is the simulator's side of ``controller.loops.FabricControl``: queue depths
are read from (and cleared in) each switch's ``port_qdepth_max`` register, new weights and
detected failures recompute the fabric's entries (``model.routing``, as the controller does)
and apply the difference to the pipelines (``SimNetwork.reprogram``), events are kept with
their virtual time. The loops' logic — Whack-a-Mole's decision and hysteresis, the failure
loop's probe rounds and verdicts — is the controller's own; only the clock differs: the
network's event loop runs ``tick`` every period.

Probes are not simulated as frames: a round reaches the far end of every link that is up
when it is sent (on the emulated fabric they travel in their own egress priority queue, so a
full data queue does not drop them either). A cut link misses every round from its cut on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from controller.fabric import QDEPTH_MAX
from controller.loops import ControlLoop, ControlLoops, ProbeHandler, WamPolicy
from model.routing import Group, GroupKey
from model.spec import FabricSpec

if TYPE_CHECKING:
    from .network import SimNetwork


class SimControl:
    """``FabricControl`` over a SimNetwork (see module docstring)."""

    def __init__(self, net: SimNetwork) -> None:
        self.net = net
        self._heard: ProbeHandler | None = None
        sw = net.spec.switches
        # each direction of every switch-switch link: (link, receiver's port, sender device)
        self._probe_paths = [(d, d.dst, d.dst_port, sw[d.src].device_id, d.src_port)
                             for pair in net.links for d in pair
                             if d.src in sw and d.dst in sw]

    @property
    def spec(self) -> FabricSpec:
        return self.net.spec

    def event(self, loop: str, switch: str | None, what: str) -> None:
        self.net.control_events.append((self.net.loop.now, loop, switch, what))

    def send_probes(self, seq: int) -> None:
        heard = self._heard
        if heard is None:
            return
        for link, rx, rx_port, dev, tx_port in self._probe_paths:
            if link.up:
                heard(rx, rx_port, dev, tx_port, seq)

    def listen_probes(self, handler: ProbeHandler | None) -> None:
        self._heard = handler

    def set_detected_failed(self, links: frozenset[int], loop: str, why: str) -> int:
        self.net.detected_failed = frozenset(links)
        return self.net.reprogram(loop, why)

    def operator_failed(self) -> frozenset[int]:
        return frozenset()   # the simulator's failures are physical: the loops find them

    def wam_groups(self) -> list[Group]:
        entries = self.net.entries
        return [g for s in entries for gid, g in sorted(entries[s].groups.items())
                if entries[s].scheme[gid].control_loop == ControlLoop.WAM]

    def group_weights(self, switch: str, group_id: int) -> dict[int, float]:
        return dict(self.net.weights.get((switch, group_id), {}))

    def read_qdepth_max(self, switches: Sequence[str]) -> dict[tuple[str, int], int]:
        out = {}
        for name in switches:
            pipe = self.net.switches[name].pipe
            for port in sorted(self.spec.ports(name)):
                out[(name, port)] = pipe.register_read(QDEPTH_MAX, port)
                pipe.register_write(QDEPTH_MAX, port, 0)
        return out

    def set_group_weights(self, weights: Mapping[GroupKey, Mapping[int, float]], loop: str,
                          why: str) -> int:
        for key, w in weights.items():
            self.net.weights[key] = {int(p): float(v) for p, v in w.items()}
        return self.net.reprogram(loop, why)


def make_loops(net: SimNetwork, names: Sequence[str], miss_periods: int = 2,
               policy: WamPolicy | None = None) -> ControlLoops:
    """The controller's loops ``names`` over ``net`` (ticked by the network, not started)."""
    loops = ControlLoops(SimControl(net), names, policy, miss_periods=miss_periods)
    loops.attach()
    return loops
