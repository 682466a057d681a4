"""BMv2 ``simple_switch`` as a packet-in/packet-out oracle, driven through pcap files.

Why pcap files and not veths: no root, no namespaces, nothing another test on the machine can
see. ``simple_switch --use-files 0 -i N@pN`` reads port N's input from ``pN_in.pcap`` and writes
its output to ``pN_out.pcap`` (the set-up p4c's own BMv2 STF driver uses). Each input file is
a FIFO (ports nothing is sent on get an empty capture), so the switch blocks on it until this
side writes: table entries go in first, through ``simple_switch_CLI`` (which returns once the
switch applied them), then the packets.

Every process here is started by this module and stopped by PID (``close`` / the context
manager), also when a step fails; the Thrift port is a free local port and the notification
socket lives in the run's own directory, so concurrent runs do not meet.
"""

from __future__ import annotations

import errno
import fcntl
import os
import shutil
import struct
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from p4switch.pcap import PcapError, read_pcap
from tests.netutil import free_port, listening

P4C = "p4c-bm2-ss"
SWITCH = "simple_switch"
CLI = "simple_switch_CLI"
_PCAP_HEADER = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 1)


class Bmv2Error(Exception):
    """The reference toolchain failed (compile error, CLI error, switch died)."""


def tools_missing() -> str | None:
    """Why BMv2 tests cannot run here, or None when p4c-bm2-ss and simple_switch are on PATH."""
    missing = [t for t in (P4C, SWITCH, CLI) if shutil.which(t) is None]
    if missing:
        return f"{', '.join(missing)} not on PATH"
    return None


def p4c_env() -> dict[str, str]:
    """p4c finds core.p4/v1model.p4 through P4C_16_INCLUDE_PATH when installed under another
    prefix than it was built for (the p4tools bundle keeps them in share/p4c/p4include)."""
    env = dict(os.environ)
    exe = shutil.which(P4C)
    if exe and "P4C_16_INCLUDE_PATH" not in env:
        inc = Path(exe).resolve().parent.parent / "share" / "p4c" / "p4include"
        if inc.is_dir():
            env["P4C_16_INCLUDE_PATH"] = str(inc)
    return env


def compile_bmv2(program: Path, out_json: Path) -> None:
    """``p4c-bm2-ss -o out.json program``; Bmv2Error with p4c's last line when it refuses."""
    r = subprocess.run([P4C, "-o", str(out_json), str(program)], capture_output=True,
                       text=True, timeout=180, env=p4c_env())
    if r.returncode != 0:
        errors = [ln for ln in r.stderr.splitlines() if "error" in ln] or ["(no message)"]
        raise Bmv2Error(f"p4c rejects {program.name}: {errors[0].strip()}")


@dataclass
class _FifoWriter:
    """The writing end of one port's input FIFO, in pcap format."""

    path: Path
    fd: int = -1

    def try_open(self) -> bool:
        """Open without blocking; False while the switch has not opened its end yet."""
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as e:
            if e.errno == errno.ENXIO:
                return False
            raise
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        os.write(fd, _PCAP_HEADER)
        self.fd = fd
        return True

    def write(self, frame: bytes) -> None:
        now = time.time()
        rec = struct.pack("<IIII", int(now), int(now % 1 * 1e6), len(frame), len(frame))
        os.write(self.fd, rec + frame)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


@dataclass
class Bmv2Switch:
    """One ``simple_switch`` run over pcap ports; use as a context manager.

    ``ports`` are the switch ports to create (a packet BMv2 sends to any other port is lost,
    so include every port either target may use)."""

    json_path: Path
    ports: list[int]
    workdir: Path
    input_ports: list[int] | None = None  # None: all ports
    thrift_port: int = 0
    proc: subprocess.Popen | None = None
    inputs: dict[int, _FifoWriter] = field(default_factory=dict)

    def __enter__(self) -> Bmv2Switch:
        try:
            self.start()
        except BaseException:  # a switch that never came up is stopped too (by pid)
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self, timeout: float = 30.0) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        inputs = self.ports if self.input_ports is None else self.input_ports
        for p in self.ports:
            path = self.workdir / f"p{p}_in.pcap"
            if p in inputs:
                os.mkfifo(path)
                self.inputs[p] = _FifoWriter(path)
            else:  # a port nothing is sent on: an empty capture, at its end at once
                path.write_bytes(_PCAP_HEADER)
        self.thrift_port = free_port()
        cmd = [SWITCH, "--use-files", "0", "--thrift-port", str(self.thrift_port),
               "--notifications-addr", f"ipc://{self.workdir}/notifications.ipc",
               "--device-id", "0"]
        for p in self.ports:
            cmd += ["-i", f"{p}@p{p}"]
        cmd.append(str(self.json_path))
        log = open(self.workdir / "switch.out", "wb")  # noqa: SIM115 (closed with the process)
        self.proc = subprocess.Popen(cmd, cwd=self.workdir, stdout=log, stderr=subprocess.STDOUT)
        log.close()
        deadline = time.monotonic() + timeout
        pending = list(self.inputs.values())
        while pending:
            pending = [w for w in pending if not w.try_open()]
            self._check_alive()
            if time.monotonic() > deadline:
                raise Bmv2Error("simple_switch did not open its input files")
            if pending:
                time.sleep(0.01)
        while not listening(self.thrift_port, 0.2):
            self._check_alive()
            if time.monotonic() > deadline:
                raise Bmv2Error("simple_switch's Thrift server did not come up")
            time.sleep(0.05)

    def _check_alive(self) -> None:
        if self.proc is not None and self.proc.poll() is not None:
            out = (self.workdir / "switch.out").read_text(errors="replace")[-500:]
            raise Bmv2Error(f"simple_switch exited with {self.proc.returncode}: {out}")

    def cli(self, commands: list[str]) -> str:
        """Run CLI commands; Bmv2Error naming the first command the CLI refused."""
        if not commands:
            return ""
        r = subprocess.run([CLI, "--thrift-port", str(self.thrift_port)],
                           input="\n".join(commands) + "\n", capture_output=True, text=True,
                           timeout=120)
        out = r.stdout + r.stderr
        if r.returncode != 0:
            raise Bmv2Error(f"simple_switch_CLI exited with {r.returncode}: {out[-500:]}")
        for marker in ("Error:", "Invalid", "error:", "Exception"):
            if marker in out:
                at = out.index(marker)
                raise Bmv2Error(f"simple_switch_CLI refused a command: {out[max(0, at - 200):at + 300]}")
        return out

    def send(self, port: int, frame: bytes) -> None:
        self.inputs[port].write(frame)

    def finish_inputs(self) -> None:
        """End of input on every port. simple_switch merges its input files by timestamp, so
        with several open inputs it waits for a packet (or the end) on each of them."""
        for w in self.inputs.values():
            w.close()

    def outputs(self) -> dict[int, list[bytes]]:
        """Frames written so far per port (a record still being written is not counted)."""
        out: dict[int, list[bytes]] = {}
        for p in self.ports:
            path = self.workdir / f"p{p}_out.pcap"
            frames: list[bytes] = []
            if path.exists() and path.stat().st_size >= 24:
                try:
                    frames = [data for _, data in read_pcap(path)]
                except PcapError:
                    frames = []
            out[p] = frames
        return out

    def drain(self, expect_at_least: int = 0, settle: float = 0.3, timeout: float = 10.0,
              ) -> dict[int, list[bytes]]:
        """Wait until ``expect_at_least`` frames came out in all and then nothing new came for
        ``settle`` seconds (BMv2 runs asynchronously); return the outputs."""
        deadline = time.monotonic() + timeout
        last = self.outputs()
        quiet_since = time.monotonic()
        while time.monotonic() < deadline:
            time.sleep(0.05)
            self._check_alive()
            now = self.outputs()
            if now != last:
                last, quiet_since = now, time.monotonic()
            elif (sum(map(len, now.values())) >= expect_at_least
                  and time.monotonic() - quiet_since >= settle):
                break
        return last

    def close(self) -> None:
        for w in self.inputs.values():
            w.close()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
