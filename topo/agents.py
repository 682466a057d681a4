"""The fabric's host agents: one ``traffic.agentd`` server per host, started once per fabric.

A collective hands each participating host's agent its traffic.run arguments over the host's
control socket (``<run dir>/agents/<host>.sock``) and gathers the replies together, so the
hosts start the job within one round trip of each other instead of one interpreter start.
Every agent's PID is recorded in the run directory (``make stop`` undoes a crashed launcher)
and it exits on its own when the launcher is gone. An agent that dies or stops answering is
reported for that host, killed by PID, and started again at the next collective.
"""

from __future__ import annotations

import select
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from traffic.agentd import AgentClient, AgentGone
from traffic.metrics import RankMetrics

from .priority import SwitchPriority, prioritise_agent
from .rundir import RunDir, kill_recorded, proc_start_time

REPO = Path(__file__).resolve().parents[1]


class _Host(Protocol):
    def popen(self, *args: Any, **kw: Any) -> subprocess.Popen: ...


@dataclass
class AgentReply:
    """What one host's agent answered to a ``run`` (``error``: it died or did not answer)."""

    host: str
    rc: int | None
    log: str = ""
    ranks: dict[int, RankMetrics] = field(default_factory=dict)
    error: str | None = None


@dataclass
class _Agent:
    host: str
    proc: subprocess.Popen
    client: AgentClient
    log: Any

    def alive(self) -> bool:
        return self.proc.poll() is None

    def exit_text(self) -> str:
        rc = self.proc.poll()
        return "still running" if rc is None else f"exit status {rc}"


class HostAgents:
    """Agent servers on a fabric's hosts; ``get_host(name)`` returns the Mininet host."""

    def __init__(self, run: RunDir, get_host: Any, start_timeout: float = 60.0,
                 priority: SwitchPriority | str = SwitchPriority.NONE) -> None:
        self.rundir = run
        self.priority = SwitchPriority(priority)
        """How each agent is scheduled once it answers (topo/priority.py: the switches' way,
        with a safety valve); ``applied`` says what each got."""
        self.applied: dict[str, str] = {}
        self.get_host = get_host
        self.start_timeout = start_timeout
        self.dir = run.path / "agents"
        self._agents: dict[str, _Agent] = {}
        self.started = 0
        """Agent processes started so far (once per host, plus restarts after a death)."""

    def socket_path(self, host: str) -> Path:
        return self.dir / f"{host}.sock"

    def ensure(self, hosts: list[str]) -> dict[str, str]:
        """Every host in ``hosts`` has a live, connected agent (started in parallel where
        missing or dead); returns {host: why it could not be started} for the rest."""
        self.dir.mkdir(parents=True, exist_ok=True)
        new = []
        for h in hosts:
            a = self._agents.get(h)
            if a is not None and a.alive() and a.client.sock is not None:
                continue
            if a is not None:
                self._stop_one(a)
            new.append(self._launch(h))
        failed = {}
        deadline = time.monotonic() + self.start_timeout
        for a in new:
            try:
                a.client.connect(max(0.1, deadline - time.monotonic()), alive=a.alive)
                a.client.request({"op": "ping"}, max(0.1, deadline - time.monotonic()))
                # imports done (agentd preloads before it listens): from now on it sleeps
                # between paced sends, and a woken agent must not wait behind the machine
                self.applied[a.host] = prioritise_agent(a.proc.pid, self.priority)
            except AgentGone as e:
                failed[a.host] = f"{e} ({a.exit_text()}; log {self.dir / (a.host + '.log')})"
                self._stop_one(a)
        return failed

    def _launch(self, host: str) -> _Agent:
        import os

        sock = self.socket_path(host)
        sock.unlink(missing_ok=True)
        log = (self.dir / f"{host}.log").open("a")
        proc = self.get_host(host).popen(
            [sys.executable, "-m", "traffic.agentd", "--socket", str(sock),
             "--parent", str(os.getpid())], cwd=str(REPO), stdout=log,
            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.rundir.record_pid(f"agent-{host}", proc.pid)
        self.started += 1
        a = _Agent(host, proc, AgentClient(sock), log)
        self._agents[host] = a
        return a

    def pids(self) -> dict[str, int]:
        return {h: a.proc.pid for h, a in self._agents.items() if a.alive()}

    def run(self, argv: dict[str, list[str]], timeout: float) -> dict[str, AgentReply]:
        """Hand every host in ``argv`` its traffic.run arguments at once and wait at most
        ``timeout`` s for all replies. A host whose agent cannot start, dies or does not
        answer in time gets a reply with ``error`` (and the agent is killed by PID)."""
        out: dict[str, AgentReply] = {}
        for h, why in self.ensure(list(argv)).items():
            out[h] = AgentReply(h, None, error=f"agent not started: {why}")
        waiting: dict[int, _Agent] = {}
        for h, args in argv.items():
            if h in out:
                continue
            a = self._agents[h]
            try:
                a.client.send({"op": "run", "argv": list(args)})
            except AgentGone as e:
                out[h] = self._gone(a, str(e))
                continue
            waiting[a.client.fileno()] = a
        deadline = time.monotonic() + timeout
        while waiting:
            left = deadline - time.monotonic()
            if left <= 0:
                for a in waiting.values():
                    out[a.host] = self._gone(
                        a, f"agent did not answer within {timeout:g} s; killed")
                break
            ready, _, _ = select.select(list(waiting), [], [], min(left, 1.0))
            for fd in ready:
                a = waiting[fd]
                try:
                    reply = a.client.poll_reply()
                except AgentGone as e:
                    del waiting[fd]
                    out[a.host] = self._gone(a, str(e))
                    continue
                if reply is None:
                    continue
                del waiting[fd]
                out[a.host] = _reply(a.host, reply)
            for fd, a in list(waiting.items()):   # died without closing (e.g. SIGKILL
                if not a.alive():                 # while its socket is still referenced)
                    del waiting[fd]
                    out[a.host] = self._gone(a, "agent died")
        return {h: out[h] for h in argv}

    def _gone(self, a: _Agent, why: str) -> AgentReply:
        self._stop_one(a, grace=0.5)
        return AgentReply(a.host, None, error=f"{why} ({a.exit_text()})")

    def _stop_one(self, a: _Agent, grace: float = 2.0) -> None:
        a.client.close()
        if a.alive():
            kill_recorded([(a.proc.pid, proc_start_time(a.proc.pid))], grace=grace)
        try:
            a.proc.wait(5)
        except subprocess.TimeoutExpired:
            pass
        a.log.close()
        self.rundir.forget_pid(f"agent-{a.host}")
        self.socket_path(a.host).unlink(missing_ok=True)
        if self._agents.get(a.host) is a:
            del self._agents[a.host]

    def stop(self) -> None:
        """Ask every agent to quit, then stop by PID whatever still runs."""
        agents = list(self._agents.values())
        for a in agents:
            if a.alive() and a.client.sock is not None:
                try:
                    a.client.request({"op": "quit"}, 2.0)
                except AgentGone:
                    pass
        live = [(a.proc.pid, proc_start_time(a.proc.pid)) for a in agents if a.alive()]
        kill_recorded(live, grace=1.0)
        for a in agents:
            self._stop_one(a, grace=0.1)


def _reply(host: str, r: dict[str, Any]) -> AgentReply:
    if not r.get("ok"):
        return AgentReply(host, None, error=f"agent refused the request: {r.get('error')}")
    try:
        ranks = {int(k): RankMetrics.from_json(v, f"{host}: rank {k}")
                 for k, v in (r.get("ranks") or {}).items()}
    except (ValueError, AttributeError) as e:   # RecordError is a ValueError
        return AgentReply(host, None, str(r.get("log", "")),
                          error=f"agent sent a bad rank record: {e}")
    rc = r.get("rc")
    return AgentReply(host, rc if isinstance(rc, int) else None, str(r.get("log", "")), ranks)
