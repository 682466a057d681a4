"""The agent server (traffic.agentd): one process serves collective after collective over its
control socket, bad requests are answered (not fatal), a server that dies is an AgentGone for
its caller, not a hang, and it exits by itself when its launcher is gone."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from traffic.agentd import AgentClient, AgentGone

ROOT = Path(__file__).resolve().parents[2]


def _server(sock: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "traffic.agentd", "--socket", str(sock),
                             *extra], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


@pytest.fixture
def server(tmp_path: Path):
    sock = tmp_path / "h1.sock"
    p = _server(sock)
    c = AgentClient(sock)
    try:
        c.connect(60, alive=lambda: p.poll() is None)
        yield p, c, tmp_path
    finally:
        c.close()
        if p.poll() is None:
            p.kill()
        p.wait(10)


def _run(c: AgentClient, tmp: Path, name: str) -> dict:
    # both ranks on this host: the flows are local, so no raw sockets are needed
    return c.request({"op": "run", "argv": [
        "--schedule", "ring_allreduce", "--ranks", "2", "--size", "64KB",
        "--hosts", "127.0.0.1,127.0.0.2", "--rank", "0,1", "--timeout", "20",
        "--out", str(tmp / name)]}, 60)


def test_one_server_runs_collectives_one_after_another(server) -> None:
    p, c, tmp = server
    assert c.request({"op": "ping"}, 10) == {"ok": True, "pid": p.pid}
    for name in ("first", "second"):
        r = _run(c, tmp, name)
        assert r["ok"] and r["rc"] == 0, r["log"]
        assert sorted(r["ranks"]) == ["0", "1"]
        assert all(m["completed"] for m in r["ranks"].values())
        assert (tmp / name / "rank0.json").exists()   # the files are still written
        assert "rank 0: done" in r["log"]
    assert c.request({"op": "quit"}, 10) == {"ok": True}
    assert p.wait(10) == 0


def test_bad_requests_are_answered_and_the_server_goes_on(server) -> None:
    p, c, tmp = server
    assert "unknown op" in c.request({"op": "fly"}, 10)["error"]
    assert not c.request({"op": "run", "argv": "no list"}, 10)["ok"]
    assert c.sock is not None
    c.sock.sendall(b"{not json\n")
    assert "bad JSON" in c.wait_reply(10)["error"]
    r = c.request({"op": "run", "argv": ["--schedule", "ring_allreduce", "--size", "3 parsecs"]},
                  30)
    assert r["rc"] == 2 and "bad size" in r["log"]
    assert _run(c, tmp, "after")["rc"] == 0
    assert p.poll() is None


def test_a_dead_server_is_reported_not_waited_for(server) -> None:
    p, c, _tmp = server
    assert c.request({"op": "ping"}, 10)["ok"]
    os.kill(p.pid, signal.SIGKILL)
    p.wait(10)
    t0 = time.monotonic()
    with pytest.raises(AgentGone):
        c.request({"op": "ping"}, 30)
    assert time.monotonic() - t0 < 10


def test_server_exits_when_its_launcher_is_gone(tmp_path: Path) -> None:
    parent = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    p = _server(tmp_path / "s.sock", "--parent", str(parent.pid))
    try:
        AgentClient(tmp_path / "s.sock").connect(60, alive=lambda: p.poll() is None)
        parent.kill()
        parent.wait(10)
        assert p.wait(15) == 0
        assert not (tmp_path / "s.sock").exists()
    finally:
        for q in (p, parent):
            if q.poll() is None:
                q.kill()
                q.wait(10)


def test_connect_to_nothing_is_bounded(tmp_path: Path) -> None:
    t0 = time.monotonic()
    with pytest.raises(AgentGone, match="no agent listening"):
        AgentClient(tmp_path / "none.sock").connect(0.3)
    assert time.monotonic() - t0 < 5
