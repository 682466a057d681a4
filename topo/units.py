"""A fabric described in its own units: what a 100 Gb/s fabric's links, delays, queues and host
timers are, whatever rate the emulation runs it at (model/dilation.py slows it down by the TDF).

The experiment files' ``fabric:`` and ``transport:`` blocks (experiments/config.py) and a
:class:`topo.session.FabricSession` are the same dataclasses, so a knob means the same on every
entry point and dilation finds it by its declared dimension (model/dims.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from model.dilation import Dim, dim, parse_rate
from model.schemes import SCHEMES
from model.spec import FabricSpec


class _Segments(Protocol):
    """What the transport needs of a workload: its segment size and window cap."""

    @property
    def mss(self) -> int: ...

    @property
    def window(self) -> int: ...


@dataclass(frozen=True)
class FabricConfig:
    """The fabric the experiment models, in its own units (docs/experiments.md, "Fabric units
    and time dilation"). With this block every time and rate of the file is a fabric value;
    the Mininet backend runs them dilated by ``parameters.tdf``, the simulator as written.

    The link rate is ``link_rate`` here (``topology.bw_mbps`` is derived from it)."""

    link_rate: str = dim(Dim.RATE, "100G")
    prop_delay_us: float = dim(Dim.TIME, 1.0)
    """Per-link propagation delay (the simulator's; the emulation cannot add delay — no
    netem here — and reports the per-hop latency it has instead)."""
    mtu: int = 1500
    queue_packets: int = 64
    """Egress queue depth of every switch port, packets."""
    flowlet_gap_us: float | None = dim(Dim.TIME, None)
    """Default flowlet timeout of ``flowlet`` schemes that state none."""
    trim: bool = False
    """Packet trimming at every switch queue (UEC's; off: tail drop, as v1model): the
    simulator's queues (sim.network.SimConfig.trim) or p4switch's (``--trim-bytes``, target
    p4switch only); docs/htsim.md."""

    @property
    def link_bps(self) -> float:
        return parse_rate(self.link_rate)


TDF_AUTO = "auto"
FABRIC_DEFAULTS = {"sample_period_s": 20e-6, "control_period_s": 20e-6, "settle_s": 5e-6,
                   "rto_ms": 0.05}
"""Defaults, in fabric seconds, of the time knobs a file with a fabric block leaves out (the
plain defaults are the emulation's own, 10^4-10^5 times larger): sampler and control loop
every 20 µs, 5 µs of settling between schemes, a 50 µs retransmission timeout."""


@dataclass(frozen=True)
class TransportSettings:
    """The hosts' congestion control and timers (``transport:``; traffic.congestion), the same
    on both backends. ``cc``: the algorithm; ``params``: its parameters by the names its paper
    uses (``*_us`` keys are fabric times); ``min_rto_us``/``max_rto_us``: RFC 6298's clamp of
    the RTO estimate (equal: a fixed timer; None: the backend's default — the simulator's
    200 µs to 0.5 s, the emulation's 20 ms to 2 s, or 200 µs to 0.5 s in a file with a
    fabric block); ``ecn_threshold``: the switches' CE-marking threshold in packets (None:
    from the algorithm, the link rate and the fabric's base RTT, traffic.congestion.marking;
    0: no marking); ``ecn_kmin``: the low end of a marking ramp in packets (None: a step at
    the threshold; model.routing.EcnRamp). The workload's ``rto_ms`` is the RTO before the first RTT sample.
    The transport's own timers (None: the backend's default; a file with a fabric block
    states them in fabric µs, as every other time): ``ack_delay_us`` the receivers'
    delayed-ACK timer (the simulator's 50 µs, but at most a quarter of ``min_rto_us``: an ACK
    held longer than the RTO floor times the sender out spuriously; RFC 5681 §4.2 and Linux
    keep the delay well below the minimum RTO, 40 of 200 ms), ``tick_us`` the granularity at
    which RTO and delayed-ACK timers are looked at (a tenth of ``min_rto_us``: RFC 6298's
    clock granularity G well below the RTO), ``pace_credit_us`` how far a pacer may fall
    behind and catch up in a burst: an agent's NIC pacer, and on both backends a rate-based
    algorithm's (DCQCN's rate limiter, a token bucket this long; 1 µs, ~8 full packets at
    100 Gb/s; the simulator's NICs never fall behind, its DCQCN flows do when they share
    one)."""

    cc: str = "dctcp"
    params: dict[str, float] = dim(Dim.PARAMS, default_factory=dict)
    min_rto_us: float | None = dim(Dim.TIME, None)
    max_rto_us: float | None = dim(Dim.TIME, None)
    ecn_threshold: int | None = None
    ecn_kmin: int | None = None
    ack_delay_us: float | None = dim(Dim.TIME, None)
    tick_us: float | None = dim(Dim.TIME, None)
    pace_credit_us: float | None = dim(Dim.TIME, None)

    @property
    def label(self) -> str:
        return self.cc + ("(" + ",".join(f"{k}={v:g}" for k, v in self.params.items()) + ")"
                          if self.params else "")

    def transport_config(self, base: Any, w: _Segments, base_rtt: float,
                         rto_bounds: tuple[float, float]) -> Any:
        """``base`` (a traffic.transport.TransportConfig) with this block and workload ``w``'s
        segment size and window applied; ``rto_bounds``: the backend's default clamp (s)."""
        lo = self.min_rto_us * 1e-6 if self.min_rto_us is not None else rto_bounds[0]
        hi = self.max_rto_us * 1e-6 if self.max_rto_us is not None else max(rto_bounds[1], lo)
        timers = {k: v * 1e-6 for k, v in (("ack_delay", self.ack_delay_us),
                                            ("tick", self.tick_us),
                                            ("pace_credit", self.pace_credit_us))
                  if v is not None}
        return base.with_cc(self.cc, self.params, mss=w.mss, window=w.window, min_rto=lo,
                            max_rto=hi, base_rtt=base_rtt, **timers)

    def marking(self, spec: FabricSpec, prop_delay_s: float, packet_bytes: int,
                queue_depth: int) -> Any:
        """The switches' ECN threshold: this block's packets, None (no marking), or a
        function of each port's rate (traffic.congestion.PortMarking) for the controller;
        under ``ecn_kmin``, a ramp up to it (model.routing.EcnRamp)."""
        k: Any
        if self.ecn_threshold is not None:
            k = self.ecn_threshold or None
        else:
            from traffic.congestion import fabric_marking

            k = fabric_marking(spec, self.cc, prop_delay_s, packet_bytes, queue_depth,
                               self.params)
        if k is None or self.ecn_kmin is None:
            return k
        from model.routing import EcnRamp

        return EcnRamp(self.ecn_kmin, k)


FABRIC_TRANSPORT = {"min_rto_us": 200.0, "max_rto_us": 500e3, "pace_credit_us": 1.0}
"""The transport's defaults in a fabric described in its own units (fabric µs): RTO clamped
to 200 µs-0.5 s, a 1 µs pacer credit; the delayed-ACK timer and the tick follow from the RTO
floor (:func:`fabric_transport`)."""


def fabric_transport(cc: str = "dctcp", params: dict[str, float] | None = None,
                     min_rto_us: float | None = None, max_rto_us: float | None = None,
                     ecn_threshold: int | None = None, ack_delay_us: float | None = None,
                     ecn_kmin: int | None = None,
                     tick_us: float | None = None,
                     pace_credit_us: float | None = None) -> TransportSettings:
    """A transport block in fabric units with the fabric defaults filled in where a value is
    None (an experiment file's ``transport:`` with a ``fabric:`` block, and a session)."""
    lo = FABRIC_TRANSPORT["min_rto_us"] if min_rto_us is None else min_rto_us
    hi = FABRIC_TRANSPORT["max_rto_us"] if max_rto_us is None else max_rto_us
    return TransportSettings(
        cc=cc, params=dict(params or {}), min_rto_us=lo, max_rto_us=hi,
        ecn_threshold=ecn_threshold, ecn_kmin=ecn_kmin,
        ack_delay_us=min(50.0, lo / 4) if ack_delay_us is None else ack_delay_us,
        tick_us=lo / 10 if tick_us is None else tick_us,
        pace_credit_us=FABRIC_TRANSPORT["pace_credit_us"] if pace_credit_us is None
        else pace_credit_us)


def with_flowlet_gap(name: str, params: dict[str, Any], gap_us: float | None) -> dict[str, Any]:
    """A scheme's parameters with the fabric's flowlet gap as its ``gap_param`` (flowlet's
    timeout) when it states none (fabric µs; dilation scales it with the other ``*_us``)."""
    cls = SCHEMES.get(name)
    gap = cls.gap_param if cls is not None else None   # an unknown name is refused elsewhere
    if gap is not None and gap_us is not None and gap not in params:
        return {**params, gap: round(gap_us)}
    return dict(params)
