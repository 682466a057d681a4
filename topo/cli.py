"""The fabric's interactive CLI: Mininet's CLI plus commands that drive a FabricSession.

Each command is a thin wrapper over the session's API (topo/session.py), so what works here
works the same from a script, in the same units: every time and rate the commands take or
print is the modelled fabric's (µs, Gb/s), dilated by the session's TDF on the way in and back.
"""

from __future__ import annotations

import inspect
import re
import time
from typing import Any

import pandas as pd
from mininet.cli import CLI

from .session import FabricSession

_UNITS_US = {"ns": 1e-3, "us": 1.0, "µs": 1.0, "ms": 1e3, "s": 1e6}
_TIME = re.compile(r"^([0-9.eE+-]+)\s*(ns|us|µs|ms|s)$")
ALIASES = {"gap": "timeout_us", "timeout": "timeout_us"}
"""Short names of scheme parameters (``lb flowlet gap=50us``)."""


class CliError(ValueError):
    """A bad command line: printed as one line, the CLI goes on."""


def _table(df: pd.DataFrame, max_rows: int = 60) -> str:
    if df is None or df.empty:
        return "(nothing)"
    return df.to_string(index=False, max_rows=max_rows)


def time_us(text: str) -> float:
    """``50us``, ``0.05ms``, ``50`` (µs) -> µs (CliError otherwise)."""
    m = _TIME.match(text.strip())
    try:
        v = float(m.group(1)) * _UNITS_US[m.group(2)] if m else float(text)
    except ValueError:
        raise CliError(f"{text!r} is not a time (e.g. 50us, 0.2ms)") from None
    if not 0 <= v < float("inf"):
        raise CliError(f"{text!r} is not a time >= 0 (e.g. 50us, 0.2ms)")
    return v


def _rate(text: str) -> str:
    """A fabric rate (``50G``) as the session takes it (CliError otherwise)."""
    from model.dilation import format_rate, parse_rate

    try:
        v = parse_rate(text)
    except ValueError:
        raise CliError(f"{text!r} is not a rate (e.g. 50G)") from None
    if not v > 0:
        raise CliError(f"{text!r} is not a rate (e.g. 50G)")
    return format_rate(v)


def _number(text: str) -> int | float:
    try:
        v = float(text)
    except ValueError:
        raise CliError(f"{text!r} is not a number") from None
    return int(v) if v.is_integer() else v


def _count(name: str, text: str) -> int:
    v = _number(text)
    if not isinstance(v, int) or v < 1:
        raise CliError(f"{name} must be a whole number >= 1, got {text!r}")
    return v


def scheme_params(pairs: list[str]) -> dict[str, Any]:
    """``["gap=50us", "seed=7"]`` -> ``{"timeout_us": 50, "seed": 7}`` (fabric units)."""
    out: dict[str, Any] = {}
    for p in pairs:
        k, _, v = p.partition("=")
        k = ALIASES.get(k, k)
        if not k or not v:
            raise CliError(f"{p!r}: expected name=value")
        out[k] = _number(str(time_us(v))) if k.endswith("_us") else _number(v)
    return out


def split_args(line: str) -> tuple[list[str], dict[str, str]]:
    """Positional words and ``name=value`` words of a command line."""
    pos: list[str] = []
    kw: dict[str, str] = {}
    for w in line.split():
        if "=" in w:
            k, _, v = w.partition("=")
            kw[k] = v
        else:
            pos.append(w)
    return pos, kw


FABRIC_COMMANDS = ("fabric", "lb", "loops", "collective", "queues", "links", "counters",
                   "linkdown", "linkup", "events")
FABRIC_HELP = f"""\
p4fabric's commands: {', '.join(FABRIC_COMMANDS)} (help <command>).
They take and print the modelled fabric's times and rates (µs, Gb/s), not this machine's:
the fabric runs here TDF times slower (`fabric` shows the TDF), so what you give is dilated
on the way in (times x TDF, rates / TDF) and what they print is fabric time (wall time / TDF).
Mininet's own commands (ping, iperf, time, ...) measure wall time on the slowed fabric."""


class FabricCLI(CLI):
    """``mininet>`` plus: lb, loops, collective, counters, links, queues, linkdown, linkup,
    events, fabric."""

    prompt = "p4fabric> "

    def __init__(self, session: FabricSession, **kwargs: Any) -> None:
        self.session = session
        self._last_links: tuple[float, pd.DataFrame] | None = None
        super().__init__(session.net.net, **kwargs)

    # ---- helpers ------------------------------------------------------------------------------
    def _need_ctl(self) -> bool:
        if self.session.ctl is None:
            print("error: no controller is running (start the fabric without --no-controller)")
            return False
        return True

    _FAILED = object()

    def _run(self, fn: Any, *args: Any, **kw: Any) -> Any:
        """fn(*args), or ``_FAILED`` after printing the error in one line."""
        try:
            return fn(*args, **kw)
        except Exception as e:  # noqa: BLE001 - a CLI must never die on a bad command
            print(f"error: {e}")
            return self._FAILED

    # ---- commands -----------------------------------------------------------------------------
    def do_help(self, line: str) -> None:
        """help [command]: the commands, or what one does (fabric units explained in both)."""
        arg = line.strip()
        if arg in FABRIC_COMMANDS:
            print(inspect.cleandoc(getattr(self, f"do_{arg}").__doc__ or arg))
            return
        super().do_help(line)
        if not arg:
            print(FABRIC_HELP)

    def do_fabric(self, _line: str) -> None:
        """fabric: the fabric this session models and how it runs here (TDF, rates, loops)."""
        print("\n".join(self.session.describe()))

    def do_lb(self, line: str) -> None:
        """lb <scheme> [name=value ...] [switch [group]]: set the load-balancing scheme of every
        group, of one switch's groups, or of one group (ecmp, flowlet, random, rotate, wam).
        Parameters are in fabric units and written dilated by the TDF: `lb flowlet gap=50us`
        (gap or timeout: the flowlet timeout; 50, 50us, 0.05ms), `lb ecmp seed=7`. A flowlet
        scheme without a gap takes the fabric's. `lb wam` starts Whack-a-Mole's loop."""
        pos, kw = split_args(line)
        if not pos or len(pos) > 3:
            print("usage: lb <scheme> [name=value ...] [switch [group]]   e.g. lb flowlet gap=50us")
            return
        if not self._need_ctl():
            return
        try:
            params = scheme_params([f"{k}={v}" for k, v in kw.items()])
        except CliError as e:
            print(f"error: {e}")
            return
        target: str | tuple[str, int] | None = None
        if len(pos) >= 2:
            if pos[1] not in self.session.spec.switches:
                print(f"error: no switch {pos[1]!r}")
                return
            target = pos[1]
        if len(pos) == 3:
            if not pos[2].isdigit():
                print(f"error: group must be a number, got {pos[2]!r}")
                return
            target = (pos[1], int(pos[2]))
        built = self._run(self.session.set_scheme, pos[0], target, **params)
        if built is self._FAILED:
            return
        times = {k: getattr(built, k) for k in getattr(built, "time_params", ())}
        note = "".join(f"; {k} {v / self.session.tdf:g} µs fabric = {v} µs written"
                       for k, v in times.items())
        print(f"scheme {pos[0]} set on {target or 'every group'}{note}")
        loop = getattr(built, "control_loop", None)
        if loop is not None and loop in self.session.loop_names:
            print(f"loops: {', '.join(self.session.loop_names)}")

    def do_loops(self, line: str) -> None:
        """loops [auto | none | name,name,...]: show the control loops, or run exactly these
        (failure, reconcile, wam); auto: failure and reconcile, and Whack-a-Mole's whenever a
        group uses it."""
        if not self._need_ctl():
            return
        s = self.session
        arg = line.strip()
        if arg:
            from controller.loops import LOOP_NAMES

            want: tuple[str, ...] | None
            if arg == "auto":
                want, auto = None, True
            elif arg == "none":
                want, auto = (), False
            else:
                want = tuple(n.strip() for n in arg.replace(" ", ",").split(",") if n.strip())
                bad = [n for n in want if n not in LOOP_NAMES]
                if bad:
                    print(f"error: unknown loop(s) {', '.join(bad)} (choose from "
                          f"{', '.join(LOOP_NAMES)}, or auto, none)")
                    return
                auto = False
            if self._run(s.set_loops, want, auto) is self._FAILED:
                return
        period = s.emu.control_period_s / s.tdf * 1e6
        print(f"loops: {', '.join(s.loop_names) or 'none'}"
              + (" (auto: Whack-a-Mole's joins when a group uses it)" if s.auto_loops else "")
              + f"; period {period:g} µs fabric = {s.emu.control_period_s:g} s wall")

    def do_counters(self, line: str) -> None:
        """counters [switch]: packet/byte counters read over P4Runtime (non-zero rows)."""
        if not self._need_ctl():
            return
        sw = line.strip()
        if sw and sw not in self.session.spec.switches:
            print(f"error: no switch {sw!r}")
            return
        df = self._run(self.session.counters, sw or None)
        if df is self._FAILED:
            return
        df = df[df["packets"] > 0]
        if not sw:  # one line per switch and counter
            df = df.groupby(["switch", "counter"], as_index=False)[["packets", "bytes"]].sum()
        else:
            df = df.dropna(axis=1, how="all")
        print(_table(df))

    def do_links(self, _line: str) -> None:
        """links: per switch-switch link direction, its load since the last `links` in fabric
        units (Gb/s and share of the link's rate), packets, and whether it is up."""
        if not self._need_ctl():
            return
        df = self._run(self.session.links)
        if df is self._FAILED:
            return
        now = time.monotonic()
        cols = ["src", "src_port", "dst", "dst_port", "tx_packets", "tx_bytes"]
        if self._last_links is None:
            out = df.assign(d_packets=df["tx_packets"], gbps=float("nan"), util=float("nan"))
            note = "(first call: totals since start; call again for the load)"
        else:
            t0, prev = self._last_links
            out = self.session.link_load(prev, df, now - t0)
            note = (f"(over the last {(now - t0) / self.session.tdf * 1e6:.1f} µs of fabric "
                    f"time = {now - t0:.2f} s wall)")
        self._last_links = (now, df[cols])
        print(_table(out[["src", "src_port", "dst", "dst_port", "d_packets", "gbps", "util",
                          "up"]], max_rows=200))
        print(note)

    def _link_cmd(self, line: str, up: bool) -> None:
        args = line.split()
        if len(args) != 2:
            print(f"usage: link{'up' if up else 'down'} <node> <node>")
            return
        fn = self.session.restore if up else self.session.cut
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
        """collective <schedule> [size] [hosts=h1,h3,...] [window=N] [mss=B] [qps=N] [rto=50us]
        [rate=50G] [seed=N]: run a collective (ring_allreduce, alltoall,
        halving_doubling_allreduce, moe_alltoall, ...; size default 64KB) on the hosts given
        (default every host; rank i on the i-th) and print its completion time in fabric µs
        and whether the emulation kept up (the fidelity guard: valid, or why not). rto (the
        initial RTO) and rate (pacing) are the fabric's, run dilated by the TDF; seed (default
        0) draws the schedule's random choices and the switches' random(), as an experiment's
        run with that seed does."""
        pos, kw = split_args(line)
        if not pos or len(pos) > 2:
            print("usage: collective <schedule> [size] [hosts=h1,h3,...] [window=N] [mss=B] "
                  "[qps=N] [rto=50us] [rate=50G] [seed=N]   e.g. collective ring_allreduce "
                  "720KB hosts=h1,h3")
            return
        if not self._need_ctl():
            return
        hosts = [h for h in kw.pop("hosts", "").split(",") if h] or None
        extra: dict[str, Any] = {}
        try:
            for k, v in kw.items():
                if k in ("rto", "rto_us"):
                    extra["rto_ms"] = time_us(v) / 1e3
                    if not extra["rto_ms"] > 0:
                        raise CliError(f"rto must be > 0, got {v!r}")
                elif k in ("window", "mss", "qps"):
                    extra[k] = _count(k, v)
                elif k == "rate":
                    extra[k] = _rate(v)
                elif k == "seed":
                    extra[k] = _number(v)
                else:
                    raise CliError(f"unknown option {k!r} (hosts, window, mss, qps, rto, "
                                   "rate, seed)")
        except CliError as e:
            print(f"error: {e}")
            return
        res = self._run(self.session.collective, pos[0], pos[1] if len(pos) > 1 else "64KB",
                        hosts, **extra)
        if res is not self._FAILED:
            print(res.summary())

    def do_queues(self, _line: str) -> None:
        """queues: per port, the maximum and last egress queue depth (packets) since the last
        read, and the longest queueing delay in fabric µs (ports that queued)."""
        if self._need_ctl():
            df = self._run(self.session.queues, True)
            if df is not self._FAILED:
                print(_table(df[df["qdepth_max"] > 0] if "qdepth_max" in df else df))

    def do_events(self, line: str) -> None:
        """events [n]: the last n (default 20) things the controller and its loops did, each
        at its fabric time (µs since the fabric came up: wall time ÷ TDF)."""
        arg = line.strip()
        if arg and not arg.isdigit():
            print(f"error: {arg!r} is not a number of events   e.g. events 50")
            return
        if not self._need_ctl():
            return
        evs = self._run(self.session.events, int(arg) if arg else 20)
        if evs is self._FAILED:
            return
        if not evs:
            print("(no events)")
        for ev in evs:
            print(ev)
