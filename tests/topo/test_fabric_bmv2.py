"""The BMv2 target: the same k=4 reachability check with simple_switch_grpc switches and the
pipeline compiled by p4c-bm2-ss. Skipped with a reason when the tools are not on PATH
(built from p4lang/p4c and p4lang/behavioral-model, on PATH)."""

from __future__ import annotations

import shutil
import time

import pytest

pytest.importorskip("mininet.net", reason="needs Mininet (Debian package `mininet`)")

from model.spec import fat_tree  # noqa: E402
from topo.check import check_reachability  # noqa: E402

MISSING = [t for t in ("simple_switch_grpc", "p4c-bm2-ss") if shutil.which(t) is None]
pytestmark = [pytest.mark.root, pytest.mark.mininet,
              pytest.mark.skipif(bool(MISSING), reason=f"needs {' and '.join(MISSING)} on "
                                 "PATH")]


def test_bmv2_fat_tree_every_pair_reachable() -> None:
    from controller import FabricController
    from topo.net import FabricNet

    spec = fat_tree(4)
    t0 = time.monotonic()
    with FabricNet(spec, target="bmv2", lock_timeout=240) as net:
        with FabricController(spec, target="bmv2", control_period=0.5) as ctl:
            print(f"\nbmv2 fabric up in {time.monotonic() - t0:.1f} s ({net.timings}, "
                  f"{ctl.stats})")
            res = check_reachability(net)
            print(res.summary())
            assert res.passed, res.summary()
            c = ctl.read_counters(["edge1"])
            rx = c[(c["counter"] == "port_rx_ctr") & (c["port"] == 1)]["packets"].iloc[0]
            assert rx >= 15  # h1's pings (and replies to others) went through BMv2's counters


def test_bmv2_missing_tools_is_one_clear_error(monkeypatch) -> None:
    from topo.net import FabricNet
    from topo.nodes import TopoError

    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(TopoError, match="target bmv2 needs simple_switch_grpc and p4c-bm2-ss "
                                        "on PATH"):
        FabricNet(fat_tree(4), target="bmv2")
