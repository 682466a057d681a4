"""A small BMv2 JSON document written by hand for these tests (no p4c needed): Ethernet in,
an exact table on the destination MAC whose action sets the egress port and counts, a miss
that drops, a conditional on the EtherType, and a register written on every packet."""

from __future__ import annotations

import copy


def _field(h: str, f: str) -> dict:
    return {"type": "field", "value": [h, f]}


def _hex(v: int) -> dict:
    return {"type": "hexstr", "value": hex(v)}


STANDARD = [["ingress_port", 9, False], ["egress_spec", 9, False], ["egress_port", 9, False],
            ["instance_type", 32, False], ["packet_length", 32, False],
            ["mcast_grp", 16, False], ["egress_rid", 16, False], ["checksum_error", 1, False],
            ["parser_error", 32, False], ["priority", 3, False], ["_padding", 4, False]]

DOC = {
    "__meta__": {"version": [2, 23], "compiler": "hand-written for p4fabric's tests"},
    "header_types": [
        {"name": "scalars_0", "id": 0, "fields": [["seen", 8, False]]},
        {"name": "standard_metadata", "id": 1, "fields": STANDARD},
        {"name": "ethernet_t", "id": 2, "fields": [["dst", 48, False], ["src", 48, False],
                                                   ["etherType", 16, False]]},
    ],
    "headers": [
        {"name": "scalars", "id": 0, "header_type": "scalars_0", "metadata": True},
        {"name": "standard_metadata", "id": 1, "header_type": "standard_metadata",
         "metadata": True},
        {"name": "ethernet", "id": 2, "header_type": "ethernet_t", "metadata": False},
    ],
    "header_stacks": [], "header_union_types": [], "header_unions": [],
    "header_union_stacks": [], "field_lists": [], "errors": [["NoError", 0],
                                                             ["PacketTooShort", 1]],
    "enums": [],
    "parsers": [{
        "name": "parser", "id": 0, "init_state": "start",
        "parse_states": [{
            "name": "start", "id": 0,
            "parser_ops": [{"op": "extract", "parameters": [{"type": "regular",
                                                              "value": "ethernet"}]}],
            "transitions": [{"type": "default", "value": None, "mask": None,
                             "next_state": None}],
            "transition_key": [],
        }],
    }],
    "parse_vsets": [],
    "deparsers": [{"name": "deparser", "id": 0, "order": ["ethernet"], "primitives": []}],
    "meter_arrays": [],
    "counter_arrays": [{"name": "MyIngress.fwd_ctr", "id": 0, "size": 4, "is_direct": False}],
    "register_arrays": [{"name": "MyIngress.last_type", "id": 0, "size": 2, "bitwidth": 16}],
    "calculations": [],
    "learn_lists": [],
    "actions": [
        {"name": "MyIngress.drop", "id": 0, "runtime_data": [],
         "primitives": [{"op": "mark_to_drop", "parameters": [{"type": "header",
                                                                "value": "standard_metadata"}]}]},
        {"name": "MyIngress.forward", "id": 1,
         "runtime_data": [{"name": "port", "bitwidth": 9}],
         "primitives": [
             {"op": "assign", "parameters": [_field("standard_metadata", "egress_spec"),
                                             {"type": "runtime_data", "value": 0}]},
             {"op": "count", "parameters": [{"type": "counter_array",
                                             "value": "MyIngress.fwd_ctr"}, _hex(1)]},
         ]},
        {"name": "ingress12", "id": 2, "runtime_data": [],
         "primitives": [
             {"op": "register_write", "parameters": [
                 {"type": "register_array", "value": "MyIngress.last_type"}, _hex(0),
                 _field("ethernet", "etherType")]},
             {"op": "assign", "parameters": [
                 _field("ethernet", "src"),
                 {"type": "expression", "value": {"op": "&", "left": {
                     "type": "expression", "value": {"op": "+", "left": _field("ethernet", "src"),
                                                     "right": _hex(1)}},
                     "right": _hex((1 << 48) - 1)}}]},
         ]},
    ],
    "pipelines": [
        {"name": "ingress", "id": 0, "init_table": "node_1",
         "tables": [
             {"name": "MyIngress.l2", "id": 0,
              "key": [{"match_type": "exact", "name": "hdr.ethernet.dst",
                       "target": ["ethernet", "dst"], "mask": None}],
              "match_type": "exact", "type": "simple", "max_size": 64, "with_counters": False,
              "support_timeout": False, "direct_meters": None, "action_ids": [1, 0],
              "actions": ["MyIngress.forward", "MyIngress.drop"],
              "base_default_next": None,
              "next_tables": {"MyIngress.forward": None, "MyIngress.drop": None},
              "default_entry": {"action_id": 0, "action_const": False, "action_data": [],
                                "action_entry_const": False}},
             {"name": "tbl_ingress12", "id": 1, "key": [], "match_type": "exact",
              "type": "simple", "max_size": 1024, "with_counters": False,
              "support_timeout": False, "direct_meters": None, "action_ids": [2],
              "actions": ["ingress12"], "base_default_next": "MyIngress.l2",
              "next_tables": {"ingress12": "MyIngress.l2"},
              "default_entry": {"action_id": 2, "action_const": True, "action_data": [],
                                "action_entry_const": True}},
         ],
         "action_profiles": [],
         "conditionals": [
             {"name": "node_1", "id": 0,
              "expression": {"type": "expression", "value": {
                  "op": "==", "left": _field("ethernet", "etherType"), "right": _hex(0x0800)}},
              "true_next": "tbl_ingress12", "false_next": "MyIngress.l2"},
         ]},
        {"name": "egress", "id": 1, "init_table": None, "tables": [], "action_profiles": [],
         "conditionals": []},
    ],
    "checksums": [], "force_arith": [], "extern_instances": [], "field_aliases": [],
    "program": "handwritten.p4",
}


def doc() -> dict:
    """A fresh copy (tests mutate it)."""
    return copy.deepcopy(DOC)
