"""A split run's parts on a Ray cluster: one simulation spread over machines.

sim.parallel forks its parts, so they start with the network the caller built. Here every
part but the first is a Ray task, possibly on another machine: it gets a recipe (a picklable
call, ``sim.network.PartRecipe``: spec, scheme, config, program, schedule, failures), builds
its own network and job with it (``SimNetwork.prepare``, deterministic: the same pipelines,
entries, links and event keys as the caller's), and then runs exactly the windows a forked
part runs (``parallel.run_part``, handed in: this module imports nothing of sim).
Parts talk over two Ray queues per pair (``ray.util.queue.Queue``), in place of a pipe; part 0
stays in the caller. Results are those of one loop, as for forked parts
(tests/sim/test_rayparts.py). ``SimConfig(workers=N, ray_address=...)``, ``python -m sim
--workers N --ray ADDRESS``.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from typing import Any

_POLL_S = 2.0
"""How often a part waiting for a peer checks whether a Ray task failed."""


def connect(address: str) -> None:
    """Join the Ray cluster at ``address`` ("local": start one on this machine), unless this
    process already did."""
    try:
        import ray
    except ImportError:
        raise RuntimeError("a split run over Ray needs Ray (pip install -e '.[sweep]')") from None
    if not ray.is_initialized():
        try:
            if address == "local":
                ray.init(include_dashboard=False, log_to_driver=False)
            else:
                ray.init(address=address, log_to_driver=False)
        except Exception as e:  # noqa: BLE001 - Ray's many ways to fail to connect
            raise RuntimeError(f"cannot join the Ray cluster at {address}: {e}") from None


class RayChannel:
    """One part's end of its link to another: what it sends goes into one queue, what it
    receives comes out of the other; a receive that waits checks every ``_POLL_S`` whether a
    part's task failed (then it ends as a closed pipe would: EOFError)."""

    def __init__(self, out: Any, into: Any, check: Callable[[], None] | None = None) -> None:
        self._out, self._in, self._check = out, into, check

    def send(self, obj: Any) -> None:
        self._out.put(obj)

    def recv(self) -> Any:
        from ray.util.queue import Empty

        while True:
            try:
                return self._in.get(timeout=_POLL_S)
            except Empty:
                if self._check is not None:
                    self._check()


def _ends(me: int, queues: dict[tuple[int, int], Any],
          check: Callable[[], None] | None = None) -> dict[int, RayChannel]:
    return {b: RayChannel(q, queues[(b, a)], check)
            for (a, b), q in queues.items() if a == me}


def _part_task(recipe: Callable[[], tuple[Any, Any]], run_part: Callable[..., None], me: int,
               part_of: dict[str, int], queues: dict[tuple[int, int], Any],
               until: float) -> None:
    """A part on a Ray worker: build the network and job with ``recipe``, run the part."""
    gc.disable()  # as SimNetwork.run: the run keeps everything it allocates
    net, job = recipe()
    run_part(net, job, me, part_of, dict(_ends(me, queues)), until)


def start(address: str, recipe: Callable[[], tuple[Any, Any]], run_part: Callable[..., None],
          part_of: dict[str, int], parts: int,
          until: float) -> tuple[dict[int, Any], Callable[[], None]]:
    """Start parts 1 .. ``parts`` - 1 as Ray tasks running ``run_part`` on what ``recipe``
    builds; returns part 0's channels to them and a function that waits for the tasks (or
    cancels them) when part 0 is done."""
    connect(address)
    import ray
    from ray.util.queue import Queue

    queues = {(a, b): Queue() for a in range(parts) for b in range(parts) if a != b}
    task = ray.remote(num_cpus=1, max_retries=0)(_part_task)
    refs = [task.remote(recipe, run_part, q, part_of, queues, until) for q in range(1, parts)]

    def check() -> None:
        done, _ = ray.wait(refs, num_returns=len(refs), timeout=0)
        for ref in done:
            try:
                ray.get(ref)
            except Exception as e:  # noqa: BLE001 - a lost worker: the peer is gone
                raise EOFError(f"a part's Ray task failed: {e}") from e

    def finish() -> None:
        try:
            ray.get(refs, timeout=60)
        except Exception:  # noqa: BLE001 - part 0 has the results or its own error already
            for ref in refs:
                ray.cancel(ref, force=True)
        for q in queues.values():
            q.shutdown(force=True)

    return dict(_ends(0, queues, check)), finish
