"""A local Ray for the tests that need one (sweeps, split runs), shut down also on failure."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType

import pytest


@contextmanager
def local_ray_cluster(cpus: int = 2) -> Iterator[ModuleType]:
    """Ray started here on ``cpus`` CPUs, no dashboard; skips when Ray is not installed or its
    daemons cannot start (say so: CI installs Ray). Ray gives its raylet a fixed 30 s to
    register; on a loaded machine the first start can miss that while the second, with Ray's
    files in the page cache, does not: three attempts."""
    if importlib.util.find_spec("ray") is None:
        pytest.skip("ray is not installed (pip install -e '.[sweep]')")
    import ray

    from experiments.sweep import init_ray

    why = ""
    for _attempt in range(3):
        try:
            init_ray(cpus=cpus)
            break
        except Exception as e:  # noqa: BLE001 - Ray's own daemons did not come up (load)
            ray.shutdown()
            why = f"{type(e).__name__}: {e}"
    else:
        pytest.skip(f"local Ray did not start in 3 attempts: {why}")
    try:
        yield ray
    finally:
        ray.shutdown()
