"""P4Info of constructs p4c writes in a way of its own, checked without p4c (the program,
tests/runtime/p4/p4c_parity.p4, is also compared with p4c's own P4Info by
test_p4info_p4c.py when p4c is on PATH). Each expectation is what p4c 1.2.5 writes for the
same construct in its test corpus (testdata/p4_16_samples): the corpus program is named."""

from __future__ import annotations

from pathlib import Path

import pytest

from p4switch.frontend import compile_file
from p4switch.p4info import build_p4info

PROGRAM = Path(__file__).parent / "p4" / "p4c_parity.p4"


@pytest.fixture(scope="module")
def info():
    return build_p4info(compile_file(PROGRAM))


def _by_name(items, name: str):
    return next(i for i in items if i.preamble.name == name)


def test_translated_types_take_the_controller_width(info):
    """@p4runtime_translation(uri, w): fields of the type are w bits wide for the controller
    (none for ``string``), and type_info holds the translated type with the type's other
    annotations (v1model-p4runtime-most-types1, issue2283_1-bmv2, p416-type-use3)."""
    fwd = _by_name(info.actions, "I.fwd")
    assert [(p.name, p.bitwidth, p.type_name.name) for p in fwd.params] == [
        ("port", 32, "PortNum_t")]
    name_key = _by_name(info.tables, "I.keys").match_fields[3]
    assert (name_key.name, name_key.bitwidth, name_key.type_name.name) == (
        "meta.name", 0, "Name_t")
    port = info.type_info.new_types["PortNum_t"]
    assert (port.translated_type.uri, port.translated_type.sdn_bitwidth) == (
        "example.org/PortNum", 32)
    name = info.type_info.new_types["Name_t"]
    assert name.translated_type.HasField("sdn_string")
    assert list(name.annotations) == ["@custom_note"]


def test_packet_out_header_holding_a_struct_is_flattened(info):
    """custom-type-restricted-fields, issue3329-bmv2: ``s.f`` names, translated widths."""
    [cpm] = info.controller_packet_metadata
    assert [(m.id, m.name, m.bitwidth, m.type_name.name) for m in cpm.metadata] == [
        (1, "meta.pad", 7, ""), (2, "meta.port", 32, "PortNum_t"), (3, "reason", 8, "")]


def test_key_names_of_expressions(info):
    """match-on-exprs2-bmv2 (a constant without width or leading zeros), issue298-bmv2 (a
    field's @name), issue2362-bmv2 (a table applied in a key is applied: it is listed)."""
    keys = _by_name(info.tables, "I.keys")
    assert [(m.name, m.bitwidth) for m in keys.match_fields] == [
        ("hdr.eth.dst & 0xffffffff", 48), ("hdr.eth.src[15:8]", 8),
        ("meta.flags.renamed", 8), ("meta.name", 0), ("inner_hit", 1)]
    assert "I.inner_tbl" in [t.preamble.name for t in info.tables]


def test_action_profile_names_and_sizes(info):
    """action_profile-bmv2, action_profile_*_annotation: an implementation constructed on
    the table property is named by the property's @name as written; the size annotations
    count on a selector only and are not listed as annotations."""
    prof = _by_name(info.action_profiles, "shared_profile")
    assert (prof.size, prof.with_selector, prof.max_group_size) == (64, False, 0)
    assert list(prof.preamble.annotations) == []
    assert _by_name(info.tables, "I.prof_t").implementation_id == prof.preamble.id
    sel = _by_name(info.action_profiles, "I.sel")
    assert (sel.size, sel.with_selector, sel.max_group_size) == (128, True, 16)
    assert sel.sum_of_members.max_member_weight == 100
    assert list(sel.preamble.annotations) == []


def test_top_level_direct_meter_of_a_table(info):
    """named_meter_1-bmv2: a direct meter declared outside the control its table is in."""
    meter = _by_name(info.direct_meters, "top_meter")
    keys = _by_name(info.tables, "I.keys")
    assert meter.direct_table_id == keys.preamble.id
    assert list(keys.direct_resource_ids) == [meter.preamble.id]


def test_actions_kept_and_dropped(info):
    """gauntlet_exit_combination_5-bmv2: an action called only in the branch of ``if (true)``
    never taken is not listed; switch_p4_16: a sub-control's action with a global @name is
    listed and its table refers to it."""
    names = [a.preamble.name for a in info.actions]
    assert "I.never" not in names
    mark = _by_name(info.actions, "Sub.mark")
    sub_t = _by_name(info.tables, "I.sub.sub_t")
    assert mark.preamble.id in [r.id for r in sub_t.action_refs]


_SKELETON = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<32> a; }
struct H { h_t h; }
struct M { }
parser P(packet_in pkt, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
%s
control I(inout H hdr, inout M m, inout standard_metadata_t sm) { %s }
control VC(inout H hdr, inout M m) { apply { } }
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control CC(inout H hdr, inout M m) { apply { } }
control D(packet_out pkt, in H hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def _compile(top: str, body: str):
    from p4switch.frontend import compile_source
    return build_p4info(compile_source(_SKELETON % (top, body), "t.p4"))


def test_when_type_info_is_written():
    """issue1535: a top-level action no control uses calls an extern function: no type_info;
    issue1882-bmv2: a control holds an instance of a user extern: an empty type_info."""
    unused = _compile("action drop_it(inout standard_metadata_t s) { mark_to_drop(s); }",
                      "apply { }")
    assert not unused.HasField("type_info")
    ext = _compile("extern Tally { Tally(); void bump(); }",
                   "Tally() t; apply { t.bump(); }")
    assert ext.HasField("type_info")


def test_hidden_key_is_listed_as_hidden():
    """graph-annotationless-key: a @hidden key stays a match field, annotated @hidden."""
    info = _compile("", "action a() { } table t { key = { hdr.h.a : exact @hidden; } "
                        "actions = { a; } } apply { t.apply(); }")
    [mf] = info.tables[0].match_fields
    assert (mf.name, list(mf.annotations)) == ("hdr.h.a", ["@hidden"])
