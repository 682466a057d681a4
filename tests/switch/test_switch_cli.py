"""The ``p4switch`` command without root: help, one-line argument errors, compile errors, and a
batch run with pcap-file ports, STF-style --entries and the real IPv4 pipeline."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from p4switch.__main__ import main
from p4switch.pcap import PcapWriter, read_pcap

HERE = Path(__file__).resolve().parent
IPV4_P4 = HERE / "p4" / "ipv4.p4"


def run(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "p4switch", *args], capture_output=True,
                          text=True, timeout=timeout)


def test_help_explains_every_flag():
    r = run("--help")
    assert r.returncode == 0
    for flag in ("-i PORT@IFACE", "--device-id", "--grpc-server-addr", "127.0.0.1:9559",
                 "--cpu-port", "--no-p4", "--pcap", "--log-level", "--queue-depth",
                 "--queue-rate", "--drop-port", "--entries", "--port-rate", "100Mbps",
                 "--control-socket", "--port-delay"):
        assert flag in r.stdout


@pytest.mark.parametrize(
    "args, message",
    [
        ([], "a P4 program is required"),
        (["--no-p4", "-i", "x@veth0"], "not an integer"),
        (["--no-p4", "-i", "1"], "expected PORT@INTERFACE"),
        (["--no-p4", "--queue-rate", "fast"], "not a number"),
        (["--no-p4", "--queue-depth", "0"], "must be >= 1"),
        (["--no-p4", "--port-rate", "3:fast"], "not a bit rate"),
        (["--no-p4", "--port-rate", "100MBps"], "not a bit rate"),
        (["--no-p4", "--port-rate", "x:1G"], "not an integer"),
        (["--no-p4", "--port-rate", "3:1G", "--queue-rate", "3:100"], "port 3 has both"),
        (["--no-p4", "--port-rate", "1G", "--queue-rate", "100"], "every port has both"),
        (["--no-p4", "--port-delay", "2:soon"], "delay must be a number of µs"),
        (["--no-p4", "--port-delay", "-5"], "delay must be a finite number of µs >= 0"),
        (["--no-p4", "--cpu-port", "600"], "out of range"),
        (["--no-p4", "-i", "1@a", "-i", "1@b"], "port 1 given twice"),
        (["--no-p4", "--no-grpc", "-i", "1@p4ft-no-such-if"], "cannot attach port"),
        (["/nonexistent/prog.p4", "--no-grpc"], "no such file"),
    ],
)
def test_bad_arguments_get_one_line_and_status_2(args, message, capsys):
    with pytest.raises(SystemExit) as e:
        code = main(args)
        raise SystemExit(code)
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert message in err[-1]


def test_compile_error_is_reported_with_location(tmp_path):
    bad = tmp_path / "bad.p4"
    bad.write_text("#include <core.p4>\n#include <v1model.p4>\ncontrol C( { }\n")
    r = run(str(bad), "--no-grpc")
    assert r.returncode == 2
    assert f"{bad}:3:" in r.stderr and "error" in r.stderr


def test_batch_run_with_pcap_ports_and_entries(tmp_path):
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether

    pkts = [Ether(dst="02:00:00:00:00:fe", src="02:00:00:00:00:01")
            / IP(src="10.0.1.1", dst="10.0.2.7", ttl=9) / UDP(sport=i, dport=9)
            for i in range(20)]
    pkts.append(Ether() / IP(dst="192.168.0.1") / UDP())  # no route: dropped
    inp = tmp_path / "in.pcap"
    with PcapWriter(inp) as w:
        for p in pkts:
            w.write(bytes(p))
        w.write(b"\x01\x02\x03")  # too short
    entries = tmp_path / "e.stf"
    entries.write_text(
        "# routes\n"
        "add MyIngress.ipv4_lpm hdr.ipv4.dstAddr:0x0a000200/24 "
        "MyIngress.ipv4_forward(dstAddr:0x020000000002, port:2)\n"
    )
    cap = tmp_path / "cap"
    r = run(str(IPV4_P4), "--no-grpc", "-i", f"1@pcap:{inp}", "-i", "2@pcap:", "--pcap",
            str(cap), "--entries", str(entries), "--stop-after-input")
    assert r.returncode == 0, r.stderr
    out = [Ether(d) for _, d in read_pcap(cap / "2_out.pcap")]
    assert [p[UDP].sport for p in out] == list(range(20))
    assert all(p[IP].ttl == 8 and p.dst == "02:00:00:00:00:02" for p in out)
    assert "rx_too_short=1" in r.stderr and "rx_dropped=1" in r.stderr
    assert len(list(read_pcap(cap / "1_in.pcap"))) == 22


def test_entries_refuse_packet_lines(tmp_path):
    entries = tmp_path / "e.stf"
    entries.write_text("packet 1 00112233445566778899aabbccdd\n")
    r = run(str(IPV4_P4), "--no-grpc", "--entries", str(entries))
    assert r.returncode == 2
    assert "e.stf:1:" in r.stderr and "not allowed" in r.stderr
