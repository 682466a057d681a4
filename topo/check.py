"""Reachability check of a running fabric (``make topo-check``): every host pings every other.

One shell per host starts all its pings at once (``ping -c1 -W1`` in the background, then
``wait``), and all hosts run concurrently, so 16x15 pairs take about one round trip plus
process start-up rather than 240 sequential pings. Pairs that fail are pinged once more
(first packets of a fabric just programmed may meet a switch still installing); the summary
says how many needed it.
"""

from __future__ import annotations

import shlex
import time
from dataclasses import dataclass, field


@dataclass
class ReachResult:
    pairs: int
    ok: int
    failed: list[tuple[str, str]] = field(default_factory=list)
    retried: int = 0
    seconds: float = 0.0

    @property
    def passed(self) -> bool:
        return not self.failed and self.ok == self.pairs

    def summary(self) -> str:
        s = (f"topo-check: {self.ok}/{self.pairs} host pairs reachable in {self.seconds:.1f} s"
             f" ({self.retried} needed a second ping)")
        if self.failed:
            shown = ", ".join(f"{a}->{b}" for a, b in self.failed[:8])
            more = f" (+{len(self.failed) - 8} more)" if len(self.failed) > 8 else ""
            s += f"; FAILED: {shown}{more}"
        return s


def _ping_batch(host, targets: list[tuple[str, str]], wait_s: int):
    """Start one shell in ``host`` that pings every target at once; returns the Popen."""
    lines = [f"(ping -n -q -c1 -W{wait_s} {shlex.quote(ip)} >/dev/null 2>&1 "
             f"&& echo ok {shlex.quote(name)} || echo fail {shlex.quote(name)}) &"
             for name, ip in targets]
    return host.popen(["bash", "-c", " ".join(lines) + " wait"], text=True)


def _round(net, todo: dict[str, list[tuple[str, str]]], wait_s: int) -> list[tuple[str, str]]:
    procs = {src: _ping_batch(net.get(src), targets, wait_s) for src, targets in todo.items()
             if targets}
    failed: list[tuple[str, str]] = []
    for src, p in procs.items():
        out, _ = p.communicate(timeout=wait_s + 30)
        seen = set()
        for line in out.splitlines():
            verdict, _, dst = line.partition(" ")
            seen.add(dst)
            if verdict != "ok":
                failed.append((src, dst))
        failed += [(src, n) for n, _ in todo[src] if n not in seen]
    return failed


def check_reachability(net, hosts: list[str] | None = None, wait_s: int = 1) -> ReachResult:
    """Ping every ordered pair of ``hosts`` (default: all) of a started FabricNet."""
    t0 = time.monotonic()
    spec = net.spec
    names = hosts or list(spec.hosts)
    todo = {a: [(b, spec.hosts[b].ip) for b in names if b != a] for a in names}
    pairs = sum(len(v) for v in todo.values())
    failed = _round(net, todo, wait_s)
    retried = len(failed)
    if failed:
        again: dict[str, list[tuple[str, str]]] = {}
        for a, b in failed:
            again.setdefault(a, []).append((b, spec.hosts[b].ip))
        failed = _round(net, again, wait_s)
    return ReachResult(pairs=pairs, ok=pairs - len(failed), failed=sorted(failed),
                       retried=retried, seconds=time.monotonic() - t0)
