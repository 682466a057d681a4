"""Two hosts in their own network namespaces, each joined by a veth pair to the root namespace
where the switch binds the other ends. Used by the root tests and by ``bench/switch_bench.py``.

Names carry the ``p4ft-`` prefix plus the pid (and a tag) so parallel runs never collide;
``destroy()`` removes everything it created and is safe to call twice or after a partial create.
Offloads are switched off on every veth: with checksum offload a frame leaves the host stack with
a partial checksum that a software switch would forward unfixed, and with TSO it can leave as a
64 KiB super-frame.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import socket
import subprocess
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

T = TypeVar("T")
CLONE_NEWNET = 0x40000000
ETH_P_ALL = 0x0003
_libc = ctypes.CDLL(None, use_errno=True)


def sh(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, check=check, capture_output=True, text=True, timeout=30)


def in_netns(ns: str, fn: Callable[[], T]) -> T:
    """Run ``fn`` in a short-lived thread that entered namespace ``ns``; sockets it creates
    stay in that namespace for their whole life, whichever thread uses them later."""
    out: dict[str, object] = {}

    def run() -> None:
        fd = os.open(f"/var/run/netns/{ns}", os.O_RDONLY)
        try:
            if _libc.setns(fd, CLONE_NEWNET) != 0:
                err = ctypes.get_errno()
                raise OSError(err, f"setns({ns}): {os.strerror(err)}")
            out["value"] = fn()
        except BaseException as e:  # handed to the caller
            out["error"] = e
        finally:
            os.close(fd)

    t = threading.Thread(target=run)
    t.start()
    t.join()
    if "error" in out:
        raise out["error"]  # type: ignore[misc]  # out['error'] holds the child's exception
    return out["value"]  # type: ignore[return-value]  # out['value'] holds the child's result


def raw_socket(ifname: str, rcvbuf: int = 8 << 20) -> socket.socket:
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
    for opt in (33, 32):  # SO_RCVBUFFORCE, SO_SNDBUFFORCE
        s.setsockopt(socket.SOL_SOCKET, opt, rcvbuf)
    s.setsockopt(263, 23, 1)  # PACKET_IGNORE_OUTGOING
    s.bind((ifname, ETH_P_ALL))
    return s


@dataclass
class Host:
    ns: str
    ifname: str  # inside ns
    sw_ifname: str  # root-ns end, the switch port
    mac: str
    ip: str
    port: int  # switch port number


@dataclass
class Topo:
    """``n`` hosts h1..hn; host i: ns ``p4ft-<pid><tag>-h<i>``, MAC 02:00:00:00:00:0i,
    IP 10.0.i.1/24, switch-side veth ``p4ft<pid><tag>s<i>`` on switch port i."""

    tag: str = ""
    n: int = 2
    hosts: list[Host] = field(default_factory=list)

    def __post_init__(self) -> None:
        pid = os.getpid()
        for i in range(1, self.n + 1):
            self.hosts.append(
                Host(
                    ns=f"p4ft-{pid}{self.tag}-h{i}",
                    ifname="eth0",
                    sw_ifname=f"p4ft{pid}{self.tag}s{i}"[-15:],
                    mac=f"02:00:00:00:00:{i:02x}",
                    ip=f"10.0.{i}.1",
                    port=i,
                )
            )

    def create(self) -> Topo:
        try:
            for h in self.hosts:
                sh("ip", "netns", "add", h.ns)
                sh("ip", "netns", "exec", h.ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1")
                sh("ip", "netns", "exec", h.ns, "sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1")
                sh("ip", "link", "add", h.sw_ifname, "type", "veth", "peer", "name", h.ifname,
                   "netns", h.ns)
                sh("sysctl", "-qw", f"net.ipv6.conf.{h.sw_ifname}.disable_ipv6=1", check=False)
                sh("ip", "netns", "exec", h.ns, "ip", "link", "set", h.ifname, "address", h.mac)
                sh("ip", "netns", "exec", h.ns, "ip", "addr", "add", f"{h.ip}/24", "dev", h.ifname)
                sh("ip", "netns", "exec", h.ns, "ip", "link", "set", h.ifname, "up")
                sh("ip", "netns", "exec", h.ns, "ip", "link", "set", "lo", "up")
                sh("ip", "link", "set", h.sw_ifname, "up")
                if shutil.which("ethtool"):
                    off = ["tx", "off", "rx", "off", "tso", "off", "gso", "off", "gro", "off"]
                    sh("ethtool", "-K", h.sw_ifname, *off, check=False)
                    sh("ip", "netns", "exec", h.ns, "ethtool", "-K", h.ifname, *off, check=False)
        except BaseException:
            self.destroy()
            raise
        return self

    def destroy(self) -> None:
        for h in self.hosts:
            sh("ip", "link", "del", h.sw_ifname, check=False)
            sh("ip", "netns", "del", h.ns, check=False)

    def __enter__(self) -> Topo:
        return self.create()

    def __exit__(self, *exc: object) -> None:
        self.destroy()

    def host_socket(self, i: int) -> socket.socket:
        """A raw AF_PACKET socket on host ``i``'s interface (1-based), inside its namespace."""
        h = self.hosts[i - 1]
        return in_netns(h.ns, lambda: raw_socket(h.ifname))


def recv_all(sock: socket.socket, timeout: float, want: int | None = None,
             accept: Callable[[bytes], bool] | None = None) -> list[bytes]:
    """Frames received until ``timeout`` passes with nothing new (or ``want`` frames)."""
    import select

    got: list[bytes] = []
    sock.setblocking(False)
    while want is None or len(got) < want:
        r, _, _ = select.select([sock], [], [], timeout)
        if not r:
            break
        while True:
            try:
                data = sock.recv(65535)
            except BlockingIOError:
                break
            if accept is None or accept(data):
                got.append(data)
    return got
