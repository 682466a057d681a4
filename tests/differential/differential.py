"""Differential testing: the same program, control-plane state and packets through p4switch's
Pipeline and through BMv2 ``simple_switch``; the output packets per port must be identical.

How the two sides get the same state: p4switch is driven first (by the STF runner, or by a
test through the pipeline API) with a ``RecordingPipeline`` in front of the real one. It records
every state-changing API call and every packet; ``cli_commands`` translates the recorded calls
into ``simple_switch_CLI`` commands (names, key order and match kinds from p4c's BMv2 JSON),
and the recorded packets are replayed into BMv2 (see bmv2_oracle.py). So the STF syntax is parsed
once, by p4switch's STF front end, and what is compared is the pipelines, not two STF readers.

Counter and register reads (the STF's check_counter / check_register) are replayed too, and
BMv2's answers compared with p4switch's. Limits, each reported as a skip reason by
``Unsupported``: state changes between packets sent on several ports (see run_bmv2),
replication changes between packets, weighted selector members, meters
(their colours depend on the arrival clock, which differs between the targets), parser value
sets, direct-counter writes.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bmv2_oracle import Bmv2Switch, compile_bmv2

from p4switch import ir
from p4switch.pipeline import api

_BMV2_PRIORITY_BASE = 1 << 24  # BMv2: the numerically smaller priority wins; api: larger wins


class Unsupported(Exception):
    """The run uses something the differential set-up cannot reproduce on BMv2 (why: str)."""


# --------------------------------------------------------------------------------------------
# Recording
# --------------------------------------------------------------------------------------------


@dataclass
class Packet:
    port: int
    data: bytes
    outputs: int = 0  # how many packets p4switch sent for it


@dataclass
class Probe:
    """A counter or register read and what p4switch answered at that point of the run."""

    kind: str  # "counter" | "register"
    name: str
    index: int
    value: tuple[int, int] | int


@dataclass
class RecordingPipeline:
    """A pipeline proxy: state-changing calls, packets and counter/register reads are recorded
    in order (``timeline``), everything is passed through to ``inner`` (so the caller sees the
    real pipeline's answers)."""

    inner: Any
    timeline: list[tuple[str, str, tuple] | Packet | Probe] = field(default_factory=list)
    p4switch_outputs: dict[int, list[bytes]] = field(default_factory=dict)

    _RECORDED = (
        "table_add", "table_modify", "table_delete", "table_set_default", "table_clear",
        "act_prof_add_member", "act_prof_modify_member", "act_prof_delete_member",
        "act_prof_add_group", "act_prof_modify_group", "act_prof_delete_group",
        "counter_write", "register_write", "meter_set", "mcast_group_set", "mcast_group_delete",
        "clone_session_set", "clone_session_delete", "value_set_set", "direct_counter_write",
    )

    @property
    def packets(self) -> list[Packet]:
        return [e for e in self.timeline if isinstance(e, Packet)]

    @property
    def calls(self) -> list[tuple[str, tuple]]:
        return [(e[1], e[2]) for e in self.timeline if isinstance(e, tuple)]

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.inner, name)
        if name not in self._RECORDED:
            return attr

        def recorded(*args: Any, **kwargs: Any) -> Any:
            self.timeline.append(("call", name, args + tuple(kwargs.values())))
            return attr(*args, **kwargs)
        return recorded

    def counter_read(self, counter: str, index: int) -> tuple[int, int]:
        value = self.inner.counter_read(counter, index)
        self.timeline.append(Probe("counter", counter, index, tuple(value)))
        return value

    def register_read(self, register: str, index: int) -> int:
        value = self.inner.register_read(register, index)
        self.timeline.append(Probe("register", register, index, value))
        return value

    def process(self, data: bytes, port: int, now_us: int) -> api.ProcessResult:
        packet = Packet(port, bytes(data))
        self.timeline.append(packet)
        result = self.inner.process(data, port, now_us)
        packet.outputs = len(result.outputs)
        for out in result.outputs:
            self.p4switch_outputs.setdefault(out.port, []).append(bytes(out.data))
        return result


# --------------------------------------------------------------------------------------------
# API calls -> simple_switch_CLI
# --------------------------------------------------------------------------------------------


@dataclass
class _Bmv2Names:
    """What the CLI needs from p4c's BMv2 JSON: each table's keys (name, match type) in order,
    each action's parameter order, each table's match type (``ternary``/``range`` need a
    priority) and whether it is indirect."""

    tables: dict[str, dict]
    actions: dict[str, list[str]]

    @classmethod
    def load(cls, path: Path) -> _Bmv2Names:
        j = json.loads(path.read_text())
        tables = {t["name"]: t for p in j["pipelines"] for t in p["tables"]}
        actions = {a["name"]: [r["name"] for r in a["runtime_data"]] for a in j["actions"]}
        return cls(tables, actions)


def _hex(v: int) -> str:
    return hex(v)


def _key_text(kind: str, width: int, mv: api.MatchValue | None) -> str:
    full = (1 << width) - 1
    if kind == "exact":
        if mv is None:
            return "0"
        assert isinstance(mv, api.ExactMatch | api.OptionalMatch), mv
        return _hex(mv.value)
    if kind == "lpm":
        if mv is None:
            return "0/0"
        if isinstance(mv, api.ExactMatch):
            return f"{_hex(mv.value)}/{width}"
        assert isinstance(mv, api.LpmMatch), mv
        return f"{_hex(mv.value)}/{mv.prefix_len}"
    if kind in ("ternary", "optional"):
        if mv is None:
            return "0&&&0"
        if isinstance(mv, api.TernaryMatch):
            return f"{_hex(mv.value)}&&&{_hex(mv.mask)}"
        assert isinstance(mv, api.ExactMatch | api.OptionalMatch), mv
        return f"{_hex(mv.value)}&&&{_hex(full)}"
    if kind == "range":
        if mv is None:
            return f"0->{_hex(full)}"
        if isinstance(mv, api.ExactMatch):
            return f"{_hex(mv.value)}->{_hex(mv.value)}"
        assert isinstance(mv, api.RangeMatch), mv
        return f"{_hex(mv.low)}->{_hex(mv.high)}"
    raise Unsupported(f"BMv2 match type {kind}")


@dataclass
class CliTranslator:
    """Turns recorded pipeline API calls into simple_switch_CLI commands."""

    program: ir.Program
    names: _Bmv2Names
    member_handles: dict[tuple[str, int], int] = field(default_factory=dict)
    group_handles: dict[tuple[str, int], int] = field(default_factory=dict)
    profile_members: dict[str, int] = field(default_factory=dict)
    profile_groups: dict[str, int] = field(default_factory=dict)
    mcast: dict[int, list[api.Replica]] = field(default_factory=dict)
    clones: dict[int, list[api.Replica]] = field(default_factory=dict)
    set_up: bool = False  # setup() ran: the first packet is on its way

    def table(self, name: str) -> tuple[ir.Table, dict]:
        tables = {t.cp_name: t for t in self.program.all_tables()}
        if name not in tables or name not in self.names.tables:
            raise Unsupported(f"table {name} is not in both the IR and the BMv2 JSON")
        return tables[name], self.names.tables[name]

    def params(self, action: str, params: dict[str, int]) -> str:
        if action not in self.names.actions:
            raise Unsupported(f"action {action} is not in the BMv2 JSON")
        return " ".join(_hex(params[p]) for p in self.names.actions[action])

    def match(self, table: str, entry: api.TableEntry) -> str:
        t, jt = self.table(table)
        keys = [k for k in t.keys if k.match_kind != "selector"]
        if len(keys) != len(jt["key"]):
            raise Unsupported(f"table {table}: key count differs between IR and BMv2 JSON")
        parts = [_key_text(jk["match_type"], k.width, entry.match.get(k.name))
                 for k, jk in zip(keys, jt["key"], strict=True)]
        return " ".join(parts)

    def needs_priority(self, table: str) -> bool:
        _, jt = self.table(table)
        return any(k["match_type"] in ("ternary", "range", "optional") for k in jt["key"])

    def translate(self, calls: list[tuple[str, tuple]]) -> list[str]:
        out: list[str] = []
        for name, args in calls:
            handler = getattr(self, "_" + name, None)
            if handler is None:
                raise Unsupported(f"{name} has no simple_switch_CLI translation here")
            out.extend(handler(*args))
        return out

    def setup(self) -> list[str]:
        """What the first phase adds after its calls: indirect tables' defaults and the
        final replication state (the STF runner re-sets a group per node it adds)."""
        self.set_up = True
        out = self._indirect_defaults()
        for gid, replicas in sorted(self.mcast.items()):
            out.extend(self._mcast_commands(gid, replicas))
        for sid, replicas in sorted(self.clones.items()):
            if len(replicas) == 1 and replicas[0].instance == 0:
                out.append(f"mirroring_add {sid} {replicas[0].egress_port}")
            else:
                mgrp = 0xF000 + sid
                out.extend(self._mcast_commands(mgrp, replicas))
                out.append(f"mirroring_add_mc {sid} {mgrp}")
        return out

    def _indirect_defaults(self) -> list[str]:
        """p4c's BMv2 back end drops the default_action of action-profile tables ("Target does
        not support default_action ... due to action profiles"); a miss there would run no
        action. Give BMv2 the P4 semantics: a member running the declared default action,
        made the table's default (created last, so the recorded members keep their handles)."""
        out: list[str] = []
        for t in self.program.all_tables():
            jt = self.names.tables.get(t.cp_name)
            if jt is None or jt["type"] == "simple" or t.default_action.action == "NoAction":
                continue
            if "hidden" in self.program.actions[t.default_action.action].annotations:
                continue  # a program read from BMv2 JSON: its miss runs nothing, as BMv2's
            prof = jt["action_profile"]
            action = self.program.actions[t.default_action.action]
            args = [a for a in t.default_action.args]
            if len(args) != len(action.data_params) or not all(
                    isinstance(a, ir.Const) for a in args):
                raise Unsupported(f"default action of {t.cp_name} with non-constant arguments")
            params = {p.name: int(a.value) & ((1 << ir.type_width(p.type)) - 1)
                      for p, a in zip(action.data_params, args, strict=True)}
            handle = self.profile_members.get(prof, 0)
            self.profile_members[prof] = handle + 1
            out.append(f"act_prof_create_member {prof} {action.cp_name} "
                       f"{self.params(action.cp_name, params)}")
            out.append(f"table_indirect_set_default {t.cp_name} {handle}")
        return out

    @staticmethod
    def _mcast_commands(gid: int, replicas: list[api.Replica]) -> list[str]:
        cmds = [f"mc_mgrp_create {gid}"]
        by_rid: dict[int, list[int]] = {}
        for r in replicas:
            by_rid.setdefault(r.instance, []).append(r.egress_port)
        for rid, ports in by_rid.items():
            cmds.append(f"mc_node_create {rid} {' '.join(map(str, ports))}")
            # the handle is the node count so far; the CLI prints it, the order makes it known
            cmds.append(f"mc_node_associate {gid} {{node}}")
        return cmds

    # handlers: one per recorded API call -------------------------------------------------
    def _table_add(self, table: str, entry: api.TableEntry) -> list[str]:
        keys = self.match(table, entry)
        prio = ""
        if self.needs_priority(table):
            prio = f" {_BMV2_PRIORITY_BASE - entry.priority}"
        if entry.member_id is not None or entry.group_id is not None:
            prof = self._profile_of(table)
            if entry.member_id is not None:
                h = self.member_handles[(prof, entry.member_id)]
                return [f"table_indirect_add {table} {keys} => {h}{prio}"]
            h = self.group_handles[(prof, entry.group_id)]
            return [f"table_indirect_add_with_group {table} {keys} => {h}{prio}"]
        assert entry.action is not None
        return [f"table_add {table} {entry.action} {keys} => "
                f"{self.params(entry.action, entry.params)}{prio}"]

    def _table_set_default(self, table: str, action: str, params: dict[str, int]) -> list[str]:
        _, jt = self.table(table)
        if jt["type"] != "simple":
            raise Unsupported(f"default action of indirect table {table}")
        return [f"table_set_default {table} {action} {self.params(action, params)}"]

    def _table_clear(self, table: str) -> list[str]:
        return [f"table_clear {table}"]

    def _profile_of(self, table: str) -> str:
        _, jt = self.table(table)
        prof = jt.get("action_profile")
        if not prof:
            raise Unsupported(f"table {table} has no action profile in the BMv2 JSON")
        return prof

    def _act_prof_add_member(self, profile: str, m: api.ActionProfileMember) -> list[str]:
        self.member_handles[(profile, m.member_id)] = self.profile_members.get(profile, 0)
        self.profile_members[profile] = self.profile_members.get(profile, 0) + 1
        return [f"act_prof_create_member {profile} {m.action} {self.params(m.action, m.params)}"]

    def _act_prof_add_group(self, profile: str, g: api.ActionProfileGroup) -> list[str]:
        gh = self.profile_groups.get(profile, 0)
        self.group_handles[(profile, g.group_id)] = gh
        self.profile_groups[profile] = gh + 1
        cmds = [f"act_prof_create_group {profile}"]
        for mid, weight in g.members:
            if weight != 1:
                raise Unsupported("weighted selector members (BMv2 has no member weights)")
            cmds.append(f"act_prof_add_member_to_group {profile} "
                        f"{self.member_handles[(profile, mid)]} {gh}")
        return cmds

    def _register_write(self, register: str, index: int, value: int) -> list[str]:
        return [f"register_write {register} {index} {value}"]

    def _counter_write(self, counter: str, index: int, packets: int, bytes_: int) -> list[str]:
        return [f"counter_write {counter} {index} {packets} {bytes_}"]

    def _meter_set(self, *args: object) -> list[str]:
        raise Unsupported("meters: their colours depend on each target's arrival clock")

    def _mcast_group_set(self, gid: int, replicas: list[api.Replica]) -> list[str]:
        if self.set_up:
            raise Unsupported("multicast groups changed between packets")
        self.mcast[gid] = list(replicas)
        return []

    def _clone_session_set(self, sid: int, replicas: list[api.Replica],
                           truncate: int = 0) -> list[str]:
        if truncate:
            raise Unsupported("truncating clone sessions")
        if self.set_up:
            raise Unsupported("clone sessions changed between packets")
        self.clones[sid] = list(replicas)
        return []


def number_mc_nodes(commands: list[str]) -> list[str]:
    """Fill in the ``{node}`` placeholders: simple_switch numbers nodes 0, 1, 2... as created."""
    out, nodes = [], 0
    for c in commands:
        if c.startswith("mc_node_create"):
            nodes += 1
        out.append(c.replace("{node}", str(nodes - 1)))
    return out


# --------------------------------------------------------------------------------------------
# Running both and comparing
# --------------------------------------------------------------------------------------------


@dataclass
class Comparison:
    """Outputs of both targets per port (only ports where either sent something), and the
    counter/register reads both answered."""

    p4switch: dict[int, list[bytes]]
    bmv2: dict[int, list[bytes]]
    commands: list[str]
    packets: int
    probes: list[tuple[Probe, tuple[int, int] | int]] = field(default_factory=list)

    def mismatches(self) -> list[str]:
        out = []
        for port in sorted(set(self.p4switch) | set(self.bmv2)):
            a, b = self.p4switch.get(port, []), self.bmv2.get(port, [])
            if a == b:
                continue
            if len(a) != len(b):
                out.append(f"port {port}: p4switch sent {len(a)} packet(s), BMv2 {len(b)}")
            for i, (x, y) in enumerate(zip(a, b, strict=False)):
                if x != y:
                    out.append(f"port {port} packet #{i + 1}:\n  p4switch {x.hex()}\n"
                               f"  bmv2     {y.hex()}")
                    break
            else:
                extra = a[len(b):] or b[len(a):]
                who = "p4switch" if len(a) > len(b) else "bmv2"
                out.append(f"port {port}: first extra packet from {who}: {extra[0].hex()}")
        for probe, theirs in self.probes:
            if probe.value != theirs:
                out.append(f"{probe.kind} {probe.name}[{probe.index}]: p4switch {probe.value}, "
                           f"BMv2 {theirs}")
        return out


_COUNTER_RE = re.compile(r"packets=(\d+),\s*bytes=(\d+)")
_REGISTER_RE = re.compile(r"\]=\s*(-?\d+)")


def _read_probe(sw: Bmv2Switch, probe: Probe, program: ir.Program) -> tuple[int, int] | int:
    if probe.kind == "counter":
        m = _COUNTER_RE.search(sw.cli([f"counter_read {probe.name} {probe.index}"]))
        if m is None:
            raise Unsupported(f"cannot read counter {probe.name} on BMv2")
        return int(m.group(1)), int(m.group(2))
    m = _REGISTER_RE.search(sw.cli([f"register_read {probe.name} {probe.index}"]))
    if m is None:
        raise Unsupported(f"cannot read register {probe.name} on BMv2")
    width = next((ir.type_width(i.type_args[0]) for i in program.all_instances()
                  if i.cp_name == probe.name and i.type_args), 0)
    value = int(m.group(1))
    assert isinstance(probe.value, int)
    if width:  # int<W> cells: compare bit patterns
        probe.value &= (1 << width) - 1
        value &= (1 << width) - 1
    return value


def run_bmv2(program_path: Path, program: ir.Program, rec: RecordingPipeline, workdir: Path,
             extra_ports: range = range(8)) -> Comparison:
    """Replay ``rec`` on simple_switch and compare with what p4switch did.

    With one input port the replay follows the timeline (state changes and reads between
    packets, each after BMv2 has sent everything for the packets before it). With several
    input ports BMv2 merges its input files by timestamp and needs every one at its end, so
    all state goes first and reads are compared only after the last packet."""
    json_path = workdir / "program.json"
    compile_bmv2(program_path, json_path)
    translator = CliTranslator(program, _Bmv2Names.load(json_path))
    packets = rec.packets
    in_ports = sorted({p.port for p in packets})
    streaming = len(in_ports) <= 1
    last_packet = max((i for i, e in enumerate(rec.timeline) if isinstance(e, Packet)),
                      default=-1)
    ports = sorted(set(in_ports) | set(rec.p4switch_outputs) | set(extra_ports))
    all_commands: list[str] = []
    probes: list[tuple[Probe, tuple[int, int] | int]] = []
    pending: list[str] = []
    sent = expected = 0
    with Bmv2Switch(json_path, ports, workdir / "bmv2", input_ports=in_ports) as sw:
        def flush() -> None:
            cmds = pending[:]
            if not translator.set_up:
                cmds += translator.setup()
            cmds = number_mc_nodes(all_commands + cmds)[len(all_commands):]
            sw.cli(cmds)
            all_commands.extend(cmds)
            pending.clear()

        for i, event in enumerate(rec.timeline):
            if isinstance(event, tuple):
                if sent and not streaming:
                    raise Unsupported(f"{event[1]} between packets from several ports (BMv2 "
                                      "over pcap files then takes all state first)")
                if sent:
                    sw.drain(expect_at_least=expected)
                pending.extend(translator.translate([(event[1], event[2])]))
            elif isinstance(event, Packet):
                if pending or not translator.set_up:
                    flush()
                sw.send(event.port, event.data)
                sent += 1
                expected += event.outputs
            elif streaming or i > last_packet:
                if i > last_packet and not streaming:
                    sw.finish_inputs()
                if pending:
                    flush()
                sw.drain(expect_at_least=expected)
                probes.append((event, _read_probe(sw, event, program)))
        if pending or not translator.set_up:
            flush()
        sw.finish_inputs()
        outputs = sw.drain(expect_at_least=expected)
    bmv2 = {p: frames for p, frames in outputs.items() if frames}
    return Comparison(dict(rec.p4switch_outputs), bmv2, all_commands, sent, probes)
