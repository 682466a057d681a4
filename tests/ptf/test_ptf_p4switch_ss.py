"""PTF (the P4 data-plane test framework, ``ptf`` from PyPI) against p4switch started through
``p4switch-ss`` exactly as a harness starts ``simple_switch_grpc``: ``--no-p4 -i N@IFACE ...
-- --grpc-server-addr ... --cpu-port 255``. The cases (tests/ptf/cases/bmv2_compat.py) push
p4c's BMv2 JSON in PI's wrapper with p4c's P4Info, or a p4switch bundle, and check packets.

Everything runs inside one network namespace of its own (``p4ft-ptf-<pid>``): three veth pairs
(switch side ``p4ftsw<i>``, PTF side ``p4ftpt<i>``), the switch, its gRPC server on the
namespace's loopback, and ptf. The namespace (and with it every veth) and the switch process
(by PID) are removed also when a step fails. Without p4c only the bundle cases run."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CASES = Path(__file__).resolve().parent / "cases"
IPV4 = ROOT / "tests" / "stf" / "programs" / "ipv4_lpm.p4"
FABRIC = ROOT / "p4src" / "fabric.p4"
BIN = Path(sys.executable).parent
P4C = shutil.which("p4c-bm2-ss")
GRPC = "127.0.0.1:50071"
BUNDLE_CASES = ["bmv2_compat.Ipv4FromBundle", "bmv2_compat.Ipv4BundleInWrapper"]

pytestmark = [
    pytest.mark.root,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespace, veths)"),
    pytest.mark.skipif(shutil.which("ip") is None, reason="iproute2 not installed"),
    pytest.mark.skipif(not (BIN / "ptf").exists(), reason="ptf not installed (pip install ptf)"),
]


def sh(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, check=check, capture_output=True, text=True, timeout=60)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in
                                                       env.get("PYTHONPATH", "").split(os.pathsep)
                                                       if p])
    if P4C:
        inc = Path(P4C).resolve().parents[1] / "share" / "p4c" / "p4include"
        env.setdefault("P4C_16_INCLUDE_PATH", str(inc))
    return env


def _p4c(program: Path, out: Path) -> dict[str, str]:
    stem = program.stem
    sh(P4C, "--p4runtime-files", str(out / f"{stem}.p4info.txtpb"), "-o",
       str(out / f"{stem}.json"), str(program))
    return {"json": str(out / f"{stem}.json"), "p4info": str(out / f"{stem}.p4info.txtpb")}


def _case_names() -> list[str]:
    """The runnable cases of bmv2_compat.py (classes with a runTest of their own or
    inherited), read from the source so that this module needs no ptf import."""
    text = (CASES / "bmv2_compat.py").read_text()
    bases = dict(re.findall(r"^class (\w+)\((\w+)\):", text, re.M))
    runnable = {m for m in bases if re.search(rf"^class {m}\(.*?(?=^class |\Z)", text,
                                              re.M | re.S).group(0).count("def runTest")}
    out = []
    for name in bases:
        b = name
        while b in bases and b not in runnable:
            b = bases[b]
        if b in runnable:
            out.append(name)
    return out


def _switch_command() -> list[str]:
    exe = BIN / "p4switch-ss"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "p4switch.ss"]


class Namespace:
    def __init__(self) -> None:
        self.name = f"p4ft-ptf-{os.getpid()}"

    def create(self) -> None:
        sh("ip", "netns", "add", self.name)
        try:
            self.run("ip", "link", "set", "lo", "up")
            for k in ("all", "default"):
                self.run("sysctl", "-qw", f"net.ipv6.conf.{k}.disable_ipv6=1")
            for i in (1, 2, 3):
                sw, pt = f"p4ftsw{i}", f"p4ftpt{i}"
                self.run("ip", "link", "add", sw, "type", "veth", "peer", "name", pt)
                for dev in (sw, pt):
                    self.run("ip", "link", "set", dev, "up")
                    if shutil.which("ethtool"):
                        self.run("ethtool", "-K", dev, "tx", "off", "rx", "off", "tso", "off",
                                 "gso", "off", "gro", "off", check=False)
        except BaseException:
            self.destroy()
            raise

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return sh("ip", "netns", "exec", self.name, *args, check=check)

    def destroy(self) -> None:
        sh("ip", "netns", "del", self.name, check=False)  # takes its veths along


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory) -> dict[str, str]:
    out = tmp_path_factory.mktemp("ptf-artifacts")
    params: dict[str, str] = {}
    r = subprocess.run([sys.executable, "-m", "p4switch.compile", str(IPV4), "--p4info",
                        str(out / "b.p4info.txtpb"), "--device-config", str(out / "b.bin")],
                       capture_output=True, text=True, timeout=300, env=_env())
    assert r.returncode == 0, r.stderr
    params.update(bundle_bin=str(out / "b.bin"), bundle_p4info=str(out / "b.p4info.txtpb"))
    if P4C:
        params.update(_p4c(IPV4, out))
        params.update({f"fabric_{k}": v for k, v in _p4c(FABRIC, out).items()})
    return params


#: what the same suite runs on BMv2: not the bundle cases (p4switch's own device config), not
#: the register case (BMv2's P4Runtime server answers UNIMPLEMENTED for RegisterEntry)
BMV2_SKIPS = {"Ipv4FromBundle", "Ipv4BundleInWrapper", "FabricRotateRegisterOverP4Runtime"}
ALL_CASES = len(_case_names())


def _wait_for_grpc(ns: Namespace, proc: subprocess.Popen, timeout: float = 90) -> None:
    host, port = GRPC.rsplit(":", 1)
    probe = f"import socket; socket.create_connection(({host!r}, {port}), 1).close()"
    deadline = time.monotonic() + timeout
    while ns.run(sys.executable, "-c", probe, check=False).returncode != 0:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the switch did not start serving gRPC"
        time.sleep(0.3)


@pytest.mark.parametrize("target", ["p4switch-ss", "simple_switch_grpc"])
def test_ptf_suite(target, artifacts, tmp_path):
    """The same command line for both binaries; the same cases (BMv2: less BMV2_SKIPS)."""
    if target == "simple_switch_grpc" and (shutil.which(target) is None or not P4C):
        pytest.skip("simple_switch_grpc / p4c-bm2-ss not on PATH")
    binary = _switch_command() if target == "p4switch-ss" else [shutil.which(target)]
    ns = Namespace()
    ns.create()
    proc = None
    log = tmp_path / "switch.log"
    try:
        cmd = ["ip", "netns", "exec", ns.name, *binary, "--no-p4",
               "-i", "1@p4ftsw1", "-i", "2@p4ftsw2", "-i", "3@p4ftsw3", "--device-id", "0",
               "--thrift-port", "9090", "--log-file", str(log), "-L", "info",
               "--", "--grpc-server-addr", GRPC, "--cpu-port", "255", "--priority-queues", "2"]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=_env())
        _wait_for_grpc(ns, proc)
        params = {"grpc_addr": GRPC, "device_id": "0", **artifacts}
        tp = ";".join(f"{k}={v!r}" for k, v in params.items())
        ptf = [str(BIN / "ptf"), "--test-dir", str(CASES), "--test-params", tp,
               "--log-file", str(tmp_path / "ptf.log")]
        for i in (1, 2, 3):
            ptf += ["-i", f"{i}@p4ftpt{i}"]
        if not P4C:
            ptf += BUNDLE_CASES
        elif target != "p4switch-ss":
            ptf += [f"bmv2_compat.{c}" for c in _case_names() if c not in BMV2_SKIPS]
        r = subprocess.run(["ip", "netns", "exec", ns.name, *ptf], capture_output=True,
                           text=True, timeout=600, cwd=tmp_path, env=_env())
        report = r.stdout + r.stderr
        ran = re.search(r"Ran (\d+) tests?", report)
        assert r.returncode == 0 and ran, report[-4000:]
        expected = len(BUNDLE_CASES) if not P4C else (
            ALL_CASES if target == "p4switch-ss" else ALL_CASES - len(BMV2_SKIPS))
        assert int(ran.group(1)) == expected, report[-2000:]
        print(f"PTF: {ran.group(1)} cases passed against {target}")
    finally:
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        ns.destroy()
