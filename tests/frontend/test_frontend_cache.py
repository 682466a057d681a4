"""The front end's on-disk cache: a second compile of a program is read back equal, any edit to
the program or a file it includes misses, a corrupt entry is rebuilt, errors are never cached,
and ``P4FABRIC_NO_CACHE`` / ``cache=False`` turn it off. The cache root is a tmp dir."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest
from scapy.layers.l2 import Ether

from p4switch import ir
from p4switch.frontend import P4CompileError, cache, compile_file
from p4switch.p4info import build_p4info
from p4switch.pipeline import Pipeline

MAIN = """#include <core.p4>
#include <v1model.p4>
#include "defs.p4"
struct metadata { }
parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.ethernet); transition accept; }
}
control VC(inout headers hdr, inout metadata meta) { apply { } }
control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    action fwd(bit<9> port) { sm.egress_spec = port; }
    table t { key = { hdr.ethernet.dstAddr: exact; } actions = { fwd; } default_action = fwd(OUT); }
    apply { t.apply(); }
}
control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.ethernet); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""

DEFS = """#define OUT {port}
header ethernet_t {{ bit<48> dstAddr; bit<48> srcAddr; bit<16> etherType; }}
struct headers {{ ethernet_t ethernet; }}
"""


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "cache"
    monkeypatch.setenv("P4FABRIC_FRONTEND_CACHE", str(d))
    monkeypatch.delenv("P4FABRIC_NO_CACHE", raising=False)
    return d


def program_dir(tmp_path: Path, port: int = 2) -> Path:
    src = tmp_path / "src"
    src.mkdir(parents=True, exist_ok=True)
    (src / "main.p4").write_text(MAIN)
    (src / "defs.p4").write_text(DEFS.format(port=port))
    return src / "main.p4"


def entries(root: Path) -> list[Path]:
    return sorted(root.glob("*.pickle")) if root.exists() else []


def out_port(program: ir.Program) -> int:
    frame = bytes(Ether(src="00:00:00:00:00:01", dst="00:00:00:00:00:02") / (b"x" * 50))
    res = Pipeline(program).process(frame, 1, 0)
    [out] = res.outputs
    return out.port


def test_second_compile_is_a_hit_and_equal(root: Path, tmp_path: Path) -> None:
    main = program_dir(tmp_path)
    first = compile_file(main)
    [entry] = entries(root)
    stamp = entry.stat().st_mtime_ns
    second = compile_file(main)
    assert [entry] == entries(root) and entry.stat().st_mtime_ns >= stamp
    assert second is not first and second == first
    assert build_p4info(second) == build_p4info(first)
    assert out_port(second) == out_port(first) == 2


def test_a_hit_really_comes_from_the_cache(root: Path, tmp_path: Path) -> None:
    main = program_dir(tmp_path)
    compile_file(main)
    [entry] = entries(root)
    other = compile_file(program_dir(tmp_path / "other", port=7), cache=False)
    entry.write_bytes(pickle.dumps((entry.stem, other)))  # doctored, under main's key
    assert out_port(compile_file(main)) == 7


@pytest.mark.parametrize("edit", ["include", "program"])
def test_an_edit_misses(root: Path, tmp_path: Path, edit: str) -> None:
    main = program_dir(tmp_path)
    assert out_port(compile_file(main)) == 2
    if edit == "include":
        (main.parent / "defs.p4").write_text(DEFS.format(port=3))
        expected = 3
    else:
        main.write_text(MAIN.replace("default_action = fwd(OUT)", "default_action = fwd(OUT + 2)"))
        expected = 4
    assert out_port(compile_file(main)) == expected
    assert len(entries(root)) == 2


def test_defines_are_part_of_the_key(root: Path, tmp_path: Path) -> None:
    main = program_dir(tmp_path)
    main.write_text(MAIN.replace("fwd(OUT)", "fwd(EXTRA)"))
    assert out_port(compile_file(main, defines={"EXTRA": "5"})) == 5
    assert out_port(compile_file(main, defines={"EXTRA": "6"})) == 6
    assert len(entries(root)) == 2


@pytest.mark.parametrize("content", [b"", b"not a pickle", b"\x80\x05garbage"])
def test_a_corrupt_entry_is_rebuilt(root: Path, tmp_path: Path, content: bytes) -> None:
    main = program_dir(tmp_path)
    good = compile_file(main)
    [entry] = entries(root)
    entry.write_bytes(content)
    assert compile_file(main) == good
    assert entry.read_bytes() != content  # rewritten


def test_an_entry_of_another_key_is_not_used(root: Path, tmp_path: Path) -> None:
    main = program_dir(tmp_path)
    compile_file(main)
    [entry] = entries(root)
    other = program_dir(tmp_path / "other", port=7)
    compile_file(other)
    [other_entry] = [e for e in entries(root) if e != entry]
    entry.write_bytes(other_entry.read_bytes())  # a valid pickle, but of another program
    assert out_port(compile_file(main)) == 2


def test_errors_are_reported_every_time_and_never_cached(root: Path, tmp_path: Path) -> None:
    main = program_dir(tmp_path)
    (main.parent / "defs.p4").write_text("header ethernet_t { bit<48> dstAddr }\n")
    for _ in range(3):
        with pytest.raises(P4CompileError) as err:
            compile_file(main)
        assert str(err.value).startswith(f"{main.parent / 'defs.p4'}:1:")
    assert entries(root) == []


def test_an_unwritable_cache_only_means_no_caching(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("P4FABRIC_FRONTEND_CACHE", str(blocker / "cache"))  # under a file
    main = program_dir(tmp_path)
    assert compile_file(main) == compile_file(main)


def test_caching_off(root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    main = program_dir(tmp_path)
    compile_file(main, cache=False)
    assert entries(root) == []
    monkeypatch.setenv("P4FABRIC_NO_CACHE", "1")
    assert out_port(compile_file(main)) == 2
    assert entries(root) == []


def test_a_program_with_a_warning_is_not_cached(root: Path, tmp_path: Path) -> None:
    main = program_dir(tmp_path)
    main.write_text(MAIN.replace("default_action = fwd(OUT);", "default_action = fwd(OUT); "
                                 "bogus_property = 1;"))
    for _ in range(2):
        with pytest.warns(UserWarning, match="bogus_property"):
            compile_file(main)
    assert entries(root) == []


def test_a_compiler_edit_misses(root: Path, tmp_path: Path,
                                monkeypatch: pytest.MonkeyPatch) -> None:
    files = {p.relative_to(Path(cache.__file__).parents[1]).as_posix()
             for p in cache.compiler_files()}
    assert {"frontend/elaborate.py", "frontend/parse.py", "frontend/p4.lark", "ir.py"} <= files
    main = program_dir(tmp_path)
    compile_file(main)
    monkeypatch.setattr(cache, "compiler_hash", lambda: "an edited front end")
    compile_file(main)
    assert len(entries(root)) == 2
