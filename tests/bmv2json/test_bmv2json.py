"""The BMv2 JSON front end without p4c: a hand-written document runs on the pipeline; it is
recognised by content (device config, program file, never a bundle); malformed or
unsupported JSON is refused with an error naming the JSON object."""

from __future__ import annotations

import json

import pytest
from bmv2json_docs import doc

from p4switch import bmv2json, device_config, p4info
from p4switch.errors import P4CompileError
from p4switch.pipeline import Pipeline
from p4switch.pipeline.api import ExactMatch, TableEntry
from p4switch.programs import load_program

ETH = bytes.fromhex("0000000000aa" "000000000001")


def _pipeline(d: dict | None = None) -> Pipeline:
    return Pipeline(bmv2json.load(d or doc(), name="hand.json"), drop_port=511, cpu_port=None)


def test_handwritten_program_forwards_counts_and_writes_its_register():
    pl = _pipeline()
    pl.table_add("MyIngress.l2", TableEntry({"hdr.ethernet.dst": ExactMatch(0xAA)}, "MyIngress.forward",
                                           {"port": 3}))
    out = pl.process(ETH + b"\x08\x00" + b"payload", 1, 0).outputs
    assert [o.port for o in out] == [3]
    assert out[0].data[6:12] == bytes.fromhex("000000000002")  # the conditional's arm ran
    assert pl.register_read("MyIngress.last_type", 0) == 0x0800
    assert pl.counter_read("MyIngress.fwd_ctr", 1)[0] == 1
    other = pl.process(ETH + b"\x86\xdd" + b"payload", 1, 0).outputs  # the else arm
    assert [o.data[6:12] for o in other] == [ETH[6:12]]
    assert pl.process(bytes(6) + ETH[6:] + b"\x08\x00", 1, 0).outputs == []  # miss: drop


def test_synthesized_table_and_action_are_hidden_from_p4info():
    info = p4info.build_p4info(bmv2json.load(doc()))
    assert [t.preamble.name for t in info.tables] == ["MyIngress.l2"]
    assert sorted(a.preamble.name for a in info.actions) == ["MyIngress.drop",
                                                             "MyIngress.forward"]


def test_recognised_by_content_not_by_name(tmp_path):
    data = json.dumps(doc()).encode()
    assert bmv2json.sniff(data) is not None
    bundle = device_config.Bundle("a.p4", {"a.p4": "x"}).to_bytes()
    assert bmv2json.sniff(bundle) is None
    assert bmv2json.sniff(b"not json") is None
    f = tmp_path / "prog.p4"  # a misleading suffix: the content decides
    f.write_bytes(data)
    assert "MyIngress.l2" in {t.cp_name for t in load_program(f).all_tables()}


def _refusal(d: object, name: str = "x.json") -> str:
    data = d if isinstance(d, bytes) else json.dumps(d).encode()
    with pytest.raises(bmv2json.Bmv2JsonError) as e:
        bmv2json.load(data, name=name)
    assert isinstance(e.value, P4CompileError)  # reported like any refused program
    return str(e.value)


def _with(path: list, value: object) -> dict:
    d = doc()
    node = d
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value
    return d


@pytest.mark.parametrize("mutate, says", [
    (lambda: b"{not json", "x.json: error: not JSON"),
    (lambda: {"format": "p4switch-bundle-1"}, "not BMv2 JSON"),
    (lambda: _with(["__meta__", "version"], [3, 0]), "__meta__: error: BMv2 JSON version"),
    (lambda: _with(["actions", 1, "primitives", 0, "op"], "teleport"),
     "actions[1] \"MyIngress.forward\": error: primitive 0 'teleport' is not supported"),
    (lambda: _with(["actions", 1, "primitives", 1, "parameters"], []),
     "primitive 1 'count' takes 2 parameters"),
    (lambda: _with(["actions", 2, "primitives", 0, "parameters", 2, "value"],
                   ["ethernet", "nosuch"]), "header 'ethernet' has no field 'nosuch'"),
    (lambda: _vset_masked(), "a masked value-set transition is not supported"),
    (lambda: _with(["extern_instances"], [{"name": "my_ext", "type": "Foo"}]),
     "extern_instances[0] \"my_ext\": error: extern instances"),
    (lambda: _with(["pipelines", 0, "tables", 0, "action_ids"], [1, 7]),
     "table \"MyIngress.l2\": error: unknown action id 7"),
    (lambda: _with(["pipelines", 0, "tables", 0, "next_tables", "MyIngress.drop"], "node_1"),
     "pipelines[\"ingress\"]: error: the control graph has a cycle"),
    (lambda: _with(["pipelines", 0, "conditionals", 0, "true_next"], "nowhere"),
     "next node 'nowhere' is neither a table nor a conditional"),
    (lambda: _with(["pipelines", 0, "tables", 0, "key", 0, "match_type"], "valid_range"),
     "match type 'valid_range' is not supported"),
    (lambda: _with(["pipelines", 0, "conditionals", 0, "expression", "value", "op"], "**"),
     "conditional \"node_1\": error: expression operator '**' is not supported"),
    (lambda: _with(["header_types", 2, "fields", 0], ["dst"]),
     "header_types[2] \"ethernet_t\": error: field ['dst'] needs"),
    (lambda: _with(["parsers"], []), "parsers: error: a v1model program has one parser"),
    (lambda: _with(["meter_arrays"], [{"name": "m", "id": 0, "size": 1, "rate_count": 3,
                                       "type": "packets", "is_direct": False}]),
     "meter_arrays[0] \"m\": error: only two-rate meters"),
])
def test_malformed_or_unsupported_json_is_refused_naming_the_object(mutate, says):
    assert says in _refusal(mutate())


def test_structural_garbage_is_refused_not_crashed():
    d = doc()
    d["pipelines"][0]["tables"] = "nope"
    assert _refusal(d).startswith("x.json: error: malformed BMv2 JSON")


def test_parser_value_set_is_filled_by_the_control_plane():
    """``parse_vsets`` + a ``parse_vset`` transition: the state behind it runs once the
    control plane put the EtherType in the set (here visible as the conditional's arm that
    rewrites the source MAC, taken when the tag header is valid)."""
    d = doc()
    d["header_types"].append({"name": "tag_t", "id": 3, "fields": [["v", 8, False]]})
    d["headers"].append({"name": "tag", "id": 3, "header_type": "tag_t", "metadata": False})
    d["parse_vsets"] = [{"name": "MyParser.pvs", "id": 0, "compressed_bitwidth": 16,
                         "max_size": 4}]
    start = d["parsers"][0]["parse_states"][0]
    start["transition_key"] = [{"type": "field", "value": ["ethernet", "etherType"]}]
    start["transitions"] = [
        {"type": "parse_vset", "value": "MyParser.pvs", "mask": None, "next_state": "tagged"},
        {"type": "default", "value": None, "mask": None, "next_state": None}]
    d["parsers"][0]["parse_states"].append({
        "name": "tagged", "id": 1, "transition_key": [],
        "parser_ops": [{"op": "extract", "parameters": [{"type": "regular", "value": "tag"}]}],
        "transitions": [{"type": "default", "value": None, "mask": None, "next_state": None}]})
    d["deparsers"][0]["order"].append("tag")
    d["pipelines"][0]["conditionals"][0]["expression"] = {"type": "expression", "value": {
        "op": "d2b", "left": None, "right": {"type": "field", "value": ["tag", "$valid$"]}}}
    pl = _pipeline(d)
    pl.table_add("MyIngress.l2", TableEntry({"hdr.ethernet.dst": ExactMatch(0xAA)},
                                           "MyIngress.forward", {"port": 2}))
    frame = ETH + b"\x88\xb5" + b"\x07payload"
    assert pl.process(frame, 1, 0).outputs[0].data == frame  # not in the set: untouched
    pl.value_set_set("MyParser.pvs", [[ExactMatch(0x88B5)]])
    out = pl.process(frame, 1, 0).outputs[0].data
    assert out[6:12] == bytes.fromhex("000000000002") and out[12:] == frame[12:]
    info = p4info.build_p4info(bmv2json.load(d))
    assert [(v.preamble.name, v.size, v.match[0].bitwidth) for v in info.value_sets] == [
        ("MyParser.pvs", 4, 16)]


def _vset_masked() -> dict:
    d = doc()
    d["parse_vsets"] = [{"name": "v", "id": 0, "compressed_bitwidth": 16, "max_size": 2}]
    st = d["parsers"][0]["parse_states"][0]
    st["transition_key"] = [{"type": "field", "value": ["ethernet", "etherType"]}]
    st["transitions"] = [{"type": "parse_vset", "value": "v", "mask": "0xff00",
                          "next_state": None}]
    return d
