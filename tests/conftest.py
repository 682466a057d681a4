"""Suite-wide test policy: tests marked ``root`` need root (network namespaces, raw sockets) and
``mininet`` tests need Mininet; both skip with a reason instead of failing elsewhere."""

from __future__ import annotations

import importlib.util
import os
import shutil

import pytest


def _skip_reason(item: pytest.Item) -> str | None:
    if item.get_closest_marker("root") and os.geteuid() != 0:
        return "needs root (network namespaces / raw sockets)"
    if item.get_closest_marker("root") and shutil.which("ip") is None:
        return "needs iproute2 (`ip`)"
    if item.get_closest_marker("mininet") and importlib.util.find_spec("mininet") is None:
        return "needs Mininet (Debian package `mininet`; `make test` installs it as root)"
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        reason = _skip_reason(item)
        if reason:
            item.add_marker(pytest.mark.skip(reason=reason))
