"""NSCC's UEC preset: a window of 1.5 BDP and a queueing target of 0.75 RTT once the fabric's
base RTT is known; without it, or without the preset, the plain defaults."""

from __future__ import annotations

import pytest

from traffic.congestion import CcContext, cc_params, make_cc
from traffic.congestion.nscc import UEC_PRESET, uec_preset


def test_the_uec_preset_starts_at_one_and_a_half_bdp() -> None:
    ctx = CcContext(100e9, 4150, 256, base_rtt=14e-6)
    cc = make_cc("nscc", ctx, UEC_PRESET)
    bdp = 100e9 / 8 * 14e-6 / 4150
    assert cc.window == pytest.approx(1.5 * bdp)
    assert cc.target == pytest.approx(14e-6 * 1.75)   # type: ignore[attr-defined]  # Nscc's


def test_without_a_base_rtt_or_the_preset_the_defaults_hold() -> None:
    assert make_cc("nscc", CcContext(100e9, 4150, 256), UEC_PRESET).window == 16
    assert make_cc("nscc", CcContext(100e9, 4150, 256, base_rtt=14e-6), {}).window == 16
    assert cc_params("nscc", UEC_PRESET).init_bdp == 1.5


def test_without_trimming_the_preset_aims_at_one_rtt_as_htsim() -> None:
    """htsim's initNsccParams: target 0.75 RTT when trimming, the whole RTT under -disable_trim."""
    assert uec_preset(True) == UEC_PRESET
    assert uec_preset(False) == {"init_bdp": 1.5, "target_qdelay_rtts": 1.0}
    cc = make_cc("nscc", CcContext(100e9, 4150, 256, base_rtt=14e-6), uec_preset(False))
    assert cc.target == pytest.approx(14e-6 * 2.0)   # type: ignore[attr-defined]  # Nscc's


def test_each_trim_nack_takes_one_packet_off_the_window_without_a_hold() -> None:
    """UEC NSCC's NACK decrease: a burst of trims shrinks the window by one packet each, where
    an ordinary NACK cuts once per window (the rest of the burst is held)."""
    ctx = CcContext(100e9, 4150, 256, base_rtt=14e-6)
    cc = make_cc("nscc", ctx, {"init_cwnd": 64})
    for _ in range(10):
        cc.on_trim_nack(0.0)
    assert cc.window == 54
    lossy = make_cc("nscc", ctx, {"init_cwnd": 64})
    for _ in range(10):
        lossy.on_nack(0.0)
    assert lossy.window == 32
