"""Where p4fabric keeps what it computes once per machine: ``$XDG_CACHE_HOME/p4fabric`` (else
``~/.cache/p4fabric``), one entry per kind, each movable alone by its own environment variable
so that tests and users can point one cache elsewhere without moving the others."""

from __future__ import annotations

import os
from pathlib import Path


def cache_path(name: str, override_env: str | None = None) -> Path:
    """``name`` under p4fabric's cache root, or ``$override_env`` when that is set."""
    if override_env:
        env = os.environ.get(override_env)
        if env:
            return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "p4fabric" / name
