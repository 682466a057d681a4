"""The fabric's interactive CLI: Mininet's CLI plus commands that drive the controller.

Each command is a thin wrapper over the documented APIs (``FabricController`` for load
balancing, counters, links, queues and events; ``FabricNet`` for physical link state;
``run_collective`` for traffic), so what works here works the same from a script.
"""

from __future__ import annotations

import time

import pandas as pd
from mininet.cli import CLI

from .collective import run_collective


def _table(df: pd.DataFrame, max_rows: int = 60) -> str:
    if df is None or df.empty:
        return "(nothing)"
    text = df.to_string(index=False, max_rows=max_rows)
    return text


class FabricCLI(CLI):
    """``mininet>`` plus: lb, counters, links, linkdown, linkup, collective, queues, events."""

    prompt = "p4fabric> "

    def __init__(self, fabric, ctl=None, **kwargs) -> None:
        self.fabric = fabric
        self.ctl = ctl
        self._last_links: tuple[float, pd.DataFrame] | None = None
        super().__init__(fabric.net, **kwargs)

    # ---- helpers ------------------------------------------------------------------------------
    def _need_ctl(self) -> bool:
        if self.ctl is None:
            print("error: no controller is running (start the fabric with python -m topo)")
            return False
        return True

    _FAILED = object()

    def _run(self, fn, *args):
        """fn(*args), or ``_FAILED`` after printing the error in one line."""
        try:
            return fn(*args)
        except Exception as e:  # a CLI must never die on a bad command
            print(f"error: {e}")
            return self._FAILED

    # ---- commands -----------------------------------------------------------------------------
    def do_lb(self, line: str) -> None:
        """lb <scheme> [switch [group]]: set the load-balancing scheme of every group, of one
        switch's groups, or of one group (ecmp, flowlet, random, rotate, wam)."""
        args = line.split()
        if not args or len(args) > 3:
            print("usage: lb <scheme> [switch [group]]")
            return
        if not self._need_ctl():
            return
        from model.schemes import scheme_from_name

        scheme = self._run(scheme_from_name, args[0])
        if scheme is self._FAILED:
            return
        target: str | tuple[str, int] | None = None
        if len(args) >= 2:
            if args[1] not in self.fabric.spec.switches:
                print(f"error: no switch {args[1]!r}")
                return
            target = args[1]
        if len(args) == 3:
            if not args[2].isdigit():
                print(f"error: group must be a number, got {args[2]!r}")
                return
            target = (args[1], int(args[2]))
        if self._run(self.ctl.set_scheme, scheme, target) is not self._FAILED:
            print(f"scheme {args[0]} set on {target or 'every group'}")

    def do_counters(self, line: str) -> None:
        """counters [switch]: packet/byte counters read over P4Runtime (non-zero rows)."""
        if not self._need_ctl():
            return
        df = self._run(self.ctl.read_counters)
        if df is self._FAILED:
            return
        sw = line.strip()
        if sw:
            if sw not in self.fabric.spec.switches:
                print(f"error: no switch {sw!r}")
                return
            df = df[df["switch"] == sw]
        df = df[df["packets"] > 0]
        if not sw:  # one line per switch and counter
            df = df.groupby(["switch", "counter"], as_index=False)[["packets", "bytes"]].sum()
        else:
            df = df.dropna(axis=1, how="all")
        print(_table(df))

    def do_links(self, _line: str) -> None:
        """links: per switch-switch link direction, load since the last `links` (Mbit/s,
        packets) and whether it is up."""
        if not self._need_ctl():
            return
        df = self._run(self.ctl.read_links)
        if df is self._FAILED:
            return
        now = time.monotonic()
        df = df.copy()
        if self._last_links is None:
            df["mbps"] = float("nan")
            df["d_packets"] = df["tx_packets"]
            note = "(first call: totals since start; call again for the load)"
        else:
            t0, prev = self._last_links
            key = ["src", "src_port", "dst", "dst_port"]
            m = df.merge(prev[key + ["tx_packets", "tx_bytes"]], on=key, how="left",
                         suffixes=("", "_prev")).fillna({"tx_packets_prev": 0,
                                                         "tx_bytes_prev": 0})
            dt = max(now - t0, 1e-9)
            df["d_packets"] = (m["tx_packets"] - m["tx_packets_prev"]).values
            df["mbps"] = ((m["tx_bytes"] - m["tx_bytes_prev"]) * 8 / dt / 1e6).round(3).values
            note = f"(over the last {dt:.1f} s)"
        self._last_links = (now, df[["src", "src_port", "dst", "dst_port", "tx_packets",
                                     "tx_bytes"]])
        print(_table(df[["src", "src_port", "dst", "dst_port", "d_packets", "mbps", "up"]],
                     max_rows=200))
        print(note)

    def _link_cmd(self, line: str, up: bool) -> None:
        args = line.split()
        if len(args) != 2:
            print(f"usage: link{'up' if up else 'down'} <node> <node>")
            return
        fn = self.fabric.link_up if up else self.fabric.link_down
        if self._run(fn, *args) is not self._FAILED:
            print(f"{args[0]}-{args[1]} {'up' if up else 'down'} (physical; the controller's "
                  "failure loop reroutes on its own)")

    def do_linkdown(self, line: str) -> None:
        """linkdown <a> <b>: take both interfaces of the a-b link down (a physical failure)."""
        self._link_cmd(line, up=False)

    def do_linkup(self, line: str) -> None:
        """linkup <a> <b>: bring the a-b link back up."""
        self._link_cmd(line, up=True)

    def do_collective(self, line: str) -> None:
        """collective <schedule> [size]: run a traffic/ collective (e.g. ring_allreduce,
        alltoall, halving_doubling_allreduce) on every host and print its completion time."""
        args = line.split()
        if not args or len(args) > 2:
            print("usage: collective <schedule> [size]   e.g. collective ring_allreduce 256KB")
            return
        res = self._run(run_collective, self.fabric, args[0], args[1] if len(args) > 1
                        else "64KB")
        if res is not self._FAILED:
            print(res.summary())

    def do_queues(self, _line: str) -> None:
        """queues: per-port maximum and last egress queue depth (packets), from the registers."""
        if self._need_ctl():
            df = self._run(self.ctl.read_queues)
            if df is not self._FAILED:
                print(_table(df[df["qdepth_max"] > 0] if "qdepth_max" in df else df))

    def do_events(self, line: str) -> None:
        """events [n]: the last n (default 20) things the control loops did."""
        if not self._need_ctl():
            return
        n = int(line) if line.strip().isdigit() else 20
        evs = list(self.ctl.events)[-n:]
        if not evs:
            print("(no events)")
        for ev in evs:
            t = getattr(ev, "time", None)
            ts = time.strftime("%H:%M:%S", time.localtime(t)) if isinstance(t, float) else t
            print(f"{ts} {getattr(ev, 'loop', '')} {getattr(ev, 'switch', '')}: "
                  f"{getattr(ev, 'what', ev)}")
