"""Files a run writes under ``sudo`` belong to the user who ran sudo, not to root.

``sudo make demo`` must run as root (network namespaces), but its results, the calibration
cache and a session's collective logs are the user's: left to root, the next run without sudo
(the simulator needs none) cannot write next to them. sudo says who invoked it in
``SUDO_UID``/``SUDO_GID``; :func:`give_back` hands what a run created back to that user.
"""

from __future__ import annotations

import os
from pathlib import Path


def invoker() -> tuple[int, int] | None:
    """(uid, gid) of the user who ran sudo, when this process is root under sudo; else None."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return None
    try:
        uid, gid = int(os.environ["SUDO_UID"]), int(os.environ["SUDO_GID"])
    except (KeyError, ValueError):
        return None
    return (uid, gid) if uid != 0 else None


def give_back(path: str | Path, upto: str | Path | None = None) -> int:
    """Hand ``path`` (recursively) to the invoking user, and its ancestors below ``upto``
    (those a run created, e.g. ``results/`` and ``results/<name>/``); only what root owns
    is changed. Returns how many entries changed; nothing outside sudo, never an error."""
    who = invoker()
    if who is None:
        return 0
    p = Path(path)
    todo = [p]
    if upto is not None:
        top = Path(upto).resolve()
        parent = p.resolve().parent
        while parent != top and top in parent.parents:
            todo.append(parent)
            parent = parent.parent
        todo.append(top)
    if p.is_dir():
        todo += [Path(root) / n for root, dirs, files in os.walk(p) for n in (*dirs, *files)]
    n = 0
    for q in todo:
        try:
            if q.lstat().st_uid == 0:
                os.lchown(q, *who)
                n += 1
        except OSError:
            pass
    return n
