"""A P4Runtime server for a program p4switch cannot run: state checked against a P4Info only.

``p4switch --schema-only P4INFO`` (or :func:`start_schema_server`) serves P4Runtime for a
device that has the P4Info's tables, action profiles, counters and registers but no packet
path: the Tofino port (p4src/tna/fabric.p4), whose TNA externs p4switch does not execute, so a
controller can be run against it without hardware. Every Write goes through the same
:class:`~p4switch.runtime.entities.Entities` as on a real p4switch (ids, widths, match kinds,
priorities, action parameters and scopes, each with the spec's gRPC status), and this store adds
what a target checks beyond the P4Info: an entry exists once (ALREADY_EXISTS / NOT_FOUND), a
table holds ``size`` entries (RESOURCE_EXHAUSTED), an indirect table takes members or groups of
its own profile and only existing ones (NOT_FOUND), a group names existing members, and a member
or group in use cannot be deleted (FAILED_PRECONDITION). Read returns what was written; counters
and registers read zero until written. There are no packets: a PacketOut is checked against the
P4Info's ``packet_out`` header and dropped (counted), and nothing ever comes back.

SetForwardingPipelineConfig accepts a P4Info compatible with the loaded one (the same objects
with the same shapes, ids may differ; an empty P4Info keeps the loaded one) and keeps the
``p4_device_config`` bytes as they are (a Tofino binary is opaque here). VERIFY_AND_COMMIT of a
device config clears the forwarding state, as the spec says; a config with a P4Info and no
device config re-describes the running one and keeps it (as p4switch does).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field, replace
from typing import Any

import grpc
from google.rpc import code_pb2
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from p4switch.pipeline.api import (
    ActionProfileGroup,
    ActionProfileMember,
    MatchValue,
    MeterConfig,
    Replica,
    StateCode,
    StateError,
    TableEntry,
)
from p4switch.runtime.entities import ServerState, match_key
from p4switch.runtime.errors import P4RTError, invalid
from p4switch.runtime.schema import Schema, build_schema, check_compatible, decode, is_empty
from p4switch.runtime.server import P4RuntimeService, PipelineConfig, Stream, start_server

_SCOPE = p4info_pb2.ActionRef


def _err(code: StateCode, msg: str) -> StateError:
    return StateError(code, msg)


@dataclass
class _Profile:
    name: str
    size: int
    selector: bool
    tables: list[str]
    members: dict[int, ActionProfileMember] = field(default_factory=dict)
    groups: dict[int, ActionProfileGroup] = field(default_factory=dict)


class SchemaPipeline:
    """The control-plane state of ``p4switch.pipeline.api.PipelineAPI`` for a P4Info's objects,
    without a packet path. Operations validate fully before changing anything (the server's
    rollback relies on it) and raise ``StateError``; names are the P4Info's full names."""

    def __init__(self, schema: Schema) -> None:
        self.schema = schema
        self.tables: dict[str, dict[tuple, TableEntry]] = {t.name: {} for t in
                                                            schema.tables.values()}
        self._tinfo = {t.name: t for t in schema.tables.values()}
        self.defaults: dict[str, TableEntry] = {}
        for t in schema.p4info.tables:
            init = t.initial_default_action
            a = schema.actions.get(init.action_id) if init.action_id else None
            params = {} if a is None else {a.params[x.param_id][0]: int.from_bytes(x.value, "big")
                                           for x in init.arguments if x.param_id in a.params}
            self.defaults[t.preamble.name] = TableEntry({}, a.name if a else None, params)
        self.profiles: dict[str, _Profile] = {}
        for p in schema.action_profiles.values():
            self.profiles[p.name] = _Profile(
                p.name, p.size, p.with_selector,
                [schema.tables[i].name for i in p.table_ids if i in schema.tables])
        self.counters: dict[str, dict[int, tuple[int, int]]] = {
            c.name: {} for c in schema.counters.values()}
        self._sizes = {c.name: c.size for c in schema.counters.values()}
        self.registers: dict[str, dict[int, int]] = {r.name: {} for r in schema.registers.values()}
        self._regs = {r.name: r for r in schema.registers.values()}
        self.meters: dict[str, dict[int, MeterConfig | None]] = {
            m.name: {} for m in schema.meters.values()}
        self._meter_sizes = {m.name: m.size for m in schema.meters.values()}
        self.mcast: dict[int, list[Replica]] = {}
        self.clone: dict[int, list[Replica]] = {}

    # ---- names ---------------------------------------------------------------------------
    @staticmethod
    def _get(d: dict, name: str, kind: str) -> Any:
        try:
            return d[name]
        except KeyError:
            raise _err(StateCode.NOT_FOUND, f"no {kind} named {name!r}") from None

    def resolve(self, kind: str, name: str) -> str:
        return name

    # ---- tables --------------------------------------------------------------------------
    def _profile_of(self, table: str) -> _Profile | None:
        t = self._tinfo[table]
        if not t.implementation_id:
            return None
        return self.profiles[self.schema.action_profiles[t.implementation_id].name]

    def _check_action(self, table: str, e: TableEntry) -> None:
        if sum(x is not None for x in (e.action, e.member_id, e.group_id)) != 1:
            raise _err(StateCode.INVALID_ARGUMENT,
                       "an entry needs exactly one of action, member_id, group_id")
        prof = self._profile_of(table)
        if prof is None:
            if e.action is None:
                raise _err(StateCode.INVALID_ARGUMENT, f"{table} has no action profile")
            return
        if e.action is not None:
            raise _err(StateCode.INVALID_ARGUMENT, f"{table} takes members or groups, not actions")
        if e.member_id is not None and e.member_id not in prof.members:
            raise _err(StateCode.NOT_FOUND, f"{prof.name}: no member {e.member_id}")
        if e.group_id is not None:
            if not prof.selector:
                raise _err(StateCode.INVALID_ARGUMENT, f"{prof.name} is not an action selector")
            if e.group_id not in prof.groups:
                raise _err(StateCode.NOT_FOUND, f"{prof.name}: no group {e.group_id}")

    def table_add(self, table: str, entry: TableEntry) -> None:
        rows = self._get(self.tables, table, "table")
        key = match_key(entry.match, entry.priority)
        self._check_action(table, entry)
        if key in rows:
            raise _err(StateCode.ALREADY_EXISTS, f"entry exists in {table}")
        if len(rows) >= self._tinfo[table].size > 0:
            raise _err(StateCode.RESOURCE_EXHAUSTED,
                       f"table {table} is full ({self._tinfo[table].size} entries)")
        rows[key] = replace(entry, match=dict(entry.match), params=dict(entry.params))

    def table_modify(self, table: str, entry: TableEntry) -> None:
        rows = self._get(self.tables, table, "table")
        key = match_key(entry.match, entry.priority)
        old = rows.get(key)
        if old is None:
            raise _err(StateCode.NOT_FOUND, f"no such entry in {table}")
        self._check_action(table, entry)
        rows[key] = replace(entry, match=dict(old.match), params=dict(entry.params),
                            packets=old.packets, bytes=old.bytes)

    def table_delete(self, table: str, match: dict[str, MatchValue], priority: int = 0) -> None:
        rows = self._get(self.tables, table, "table")
        if rows.pop(match_key(match, priority), None) is None:
            raise _err(StateCode.NOT_FOUND, f"no such entry in {table}")

    def table_entries(self, table: str) -> list[TableEntry]:
        return [replace(e, match=dict(e.match), params=dict(e.params))
                for e in self._get(self.tables, table, "table").values()]

    def table_get(self, table: str, match: dict[str, MatchValue],
                  priority: int = 0) -> TableEntry | None:
        e = self._get(self.tables, table, "table").get(match_key(match, priority))
        return None if e is None else replace(e, match=dict(e.match), params=dict(e.params))

    def table_set_default(self, table: str, action: str, params: dict[str, int]) -> None:
        self._get(self.tables, table, "table")
        self.defaults[table] = TableEntry({}, action, dict(params))

    def table_get_default(self, table: str) -> TableEntry:
        self._get(self.tables, table, "table")
        d = self.defaults.get(table, TableEntry({}))
        return TableEntry({}, d.action, dict(d.params))

    def table_clear(self, table: str) -> None:
        self._get(self.tables, table, "table").clear()

    def direct_counter_write(self, table: str, match: dict[str, MatchValue], priority: int,
                             packets: int, bytes_: int) -> None:
        if not self._tinfo[table].direct_counter_id:
            raise _err(StateCode.INVALID_ARGUMENT, f"{table} has no direct counter")
        e = self.tables[table].get(match_key(match, priority))
        if e is None:
            raise _err(StateCode.NOT_FOUND, f"no such entry in {table}")
        e.packets, e.bytes = packets, bytes_

    # ---- action profiles -----------------------------------------------------------------
    def _in_use(self, prof: _Profile, attr: str, ident: int) -> str | None:
        for t in prof.tables:
            if any(getattr(e, attr) == ident for e in self.tables[t].values()):
                return t
        return None

    def _check_member(self, prof: _Profile, m: ActionProfileMember) -> None:
        allowed = {self.schema.actions[aid].name: scope for t in prof.tables
                   for aid, scope in self._tinfo[t].actions.items()}
        if m.action not in allowed:
            raise _err(StateCode.INVALID_ARGUMENT,
                       f"action {m.action} is not an action of {prof.name}'s tables")
        if allowed[m.action] == _SCOPE.DEFAULT_ONLY:
            raise _err(StateCode.INVALID_ARGUMENT, f"action {m.action} is @defaultonly")

    def act_prof_add_member(self, profile: str, member: ActionProfileMember) -> None:
        prof = self._get(self.profiles, profile, "action profile")
        if member.member_id in prof.members:
            raise _err(StateCode.ALREADY_EXISTS, f"{profile}: member {member.member_id} exists")
        if prof.size and len(prof.members) >= prof.size:
            raise _err(StateCode.RESOURCE_EXHAUSTED, f"{profile} is full ({prof.size} members)")
        self._check_member(prof, member)
        prof.members[member.member_id] = replace(member, params=dict(member.params))

    def act_prof_modify_member(self, profile: str, member: ActionProfileMember) -> None:
        prof = self._get(self.profiles, profile, "action profile")
        if member.member_id not in prof.members:
            raise _err(StateCode.NOT_FOUND, f"{profile}: no member {member.member_id}")
        self._check_member(prof, member)
        prof.members[member.member_id] = replace(member, params=dict(member.params))

    def act_prof_delete_member(self, profile: str, member_id: int) -> None:
        prof = self._get(self.profiles, profile, "action profile")
        if member_id not in prof.members:
            raise _err(StateCode.NOT_FOUND, f"{profile}: no member {member_id}")
        for g in prof.groups.values():
            if any(mid == member_id for mid, _ in g.members):
                raise _err(StateCode.FAILED_PRECONDITION,
                           f"{profile}: member {member_id} is in group {g.group_id}")
        used = self._in_use(prof, "member_id", member_id)
        if used is not None:
            raise _err(StateCode.FAILED_PRECONDITION,
                       f"{profile}: member {member_id} is used by {used}")
        del prof.members[member_id]

    def act_prof_members(self, profile: str) -> list[ActionProfileMember]:
        prof = self._get(self.profiles, profile, "action profile")
        return [replace(m, params=dict(m.params)) for _, m in sorted(prof.members.items())]

    def _check_group(self, prof: _Profile, g: ActionProfileGroup) -> None:
        if not prof.selector:
            raise _err(StateCode.INVALID_ARGUMENT, f"{prof.name} is not an action selector")
        for mid, _w in g.members:
            if mid not in prof.members:
                raise _err(StateCode.NOT_FOUND, f"{prof.name} group {g.group_id}: no member {mid}")
        if g.max_size and len(g.members) > g.max_size:
            raise _err(StateCode.RESOURCE_EXHAUSTED,
                       f"{prof.name} group {g.group_id}: more members than max_size")

    def act_prof_add_group(self, profile: str, group: ActionProfileGroup) -> None:
        prof = self._get(self.profiles, profile, "action profile")
        if group.group_id in prof.groups:
            raise _err(StateCode.ALREADY_EXISTS, f"{profile}: group {group.group_id} exists")
        self._check_group(prof, group)
        prof.groups[group.group_id] = replace(group, members=list(group.members))

    def act_prof_modify_group(self, profile: str, group: ActionProfileGroup) -> None:
        prof = self._get(self.profiles, profile, "action profile")
        if group.group_id not in prof.groups:
            raise _err(StateCode.NOT_FOUND, f"{profile}: no group {group.group_id}")
        self._check_group(prof, group)
        prof.groups[group.group_id] = replace(group, members=list(group.members))

    def act_prof_delete_group(self, profile: str, group_id: int) -> None:
        prof = self._get(self.profiles, profile, "action profile")
        if group_id not in prof.groups:
            raise _err(StateCode.NOT_FOUND, f"{profile}: no group {group_id}")
        used = self._in_use(prof, "group_id", group_id)
        if used is not None:
            raise _err(StateCode.FAILED_PRECONDITION,
                       f"{profile}: group {group_id} is used by {used}")
        del prof.groups[group_id]

    def act_prof_groups(self, profile: str) -> list[ActionProfileGroup]:
        prof = self._get(self.profiles, profile, "action profile")
        return [replace(g, members=list(g.members)) for _, g in sorted(prof.groups.items())]

    # ---- counters, registers, meters -----------------------------------------------------
    @staticmethod
    def _index(name: str, index: int, size: int) -> None:
        if not 0 <= index < size:
            raise _err(StateCode.OUT_OF_RANGE, f"index {index} outside {name} (size {size})")

    def counter_read(self, counter: str, index: int) -> tuple[int, int]:
        cells = self._get(self.counters, counter, "counter")
        self._index(counter, index, self._sizes[counter])
        return cells.get(index, (0, 0))

    def counter_write(self, counter: str, index: int, packets: int, bytes_: int) -> None:
        cells = self._get(self.counters, counter, "counter")
        self._index(counter, index, self._sizes[counter])
        if not (0 <= packets < 1 << 64 and 0 <= bytes_ < 1 << 64):
            raise _err(StateCode.INVALID_ARGUMENT, "counter values must be 0 .. 2^64-1")
        cells[index] = (packets, bytes_)

    def counter_size(self, counter: str) -> int:
        return int(self._get(self._sizes, counter, "counter"))

    def register_read(self, register: str, index: int) -> int:
        cells = self._get(self.registers, register, "register")
        self._index(register, index, self._regs[register].size)
        return cells.get(index, 0)

    def register_write(self, register: str, index: int, value: int) -> None:
        cells = self._get(self.registers, register, "register")
        info = self._regs[register]
        self._index(register, index, info.size)
        if info.bitwidth and not 0 <= value < 1 << info.bitwidth:
            raise _err(StateCode.INVALID_ARGUMENT,
                       f"value {value:#x} does not fit {info.bitwidth} bits")
        cells[index] = value

    def register_size(self, register: str) -> int:
        return int(self._get(self._regs, register, "register").size)

    def meter_set(self, meter: str, index: int, config: MeterConfig | None) -> None:
        cells = self._get(self.meters, meter, "meter")
        self._index(meter, index, self._meter_sizes[meter])
        cells[index] = config

    def meter_get(self, meter: str, index: int) -> MeterConfig | None:
        cells = self._get(self.meters, meter, "meter")
        self._index(meter, index, self._meter_sizes[meter])
        return cells.get(index)

    # ---- replication ---------------------------------------------------------------------
    def mcast_group_set(self, group_id: int, replicas: list[Replica]) -> None:
        self.mcast[group_id] = list(replicas)

    def mcast_group_delete(self, group_id: int) -> None:
        if self.mcast.pop(group_id, None) is None:
            raise _err(StateCode.NOT_FOUND, f"no multicast group {group_id}")

    def mcast_groups(self) -> dict[int, list[Replica]]:
        return {g: list(r) for g, r in self.mcast.items()}

    def clone_session_set(self, session_id: int, replicas: list[Replica],
                          truncate_bytes: int = 0) -> None:
        self.clone[session_id] = list(replicas)

    def clone_session_delete(self, session_id: int) -> None:
        if self.clone.pop(session_id, None) is None:
            raise _err(StateCode.NOT_FOUND, f"no clone session {session_id}")

    def clone_sessions(self) -> dict[int, list[Replica]]:
        return {s: list(r) for s, r in self.clone.items()}

    def value_set_set(self, value_set: str, members: list[list[MatchValue]]) -> None:
        raise _err(StateCode.UNIMPLEMENTED, "value sets are not kept in schema-only mode")


@dataclass
class _SchemaConfig(PipelineConfig):
    p4info_only: bool = False
    """The config named no device config: it re-describes the running one (state kept)."""


class SchemaSwitch:
    """What the P4Runtime service needs of a switch, for a device with no packet path: its
    device id, the lock writes hold, the state store, and packet hooks that do nothing."""

    program = None
    cpu_port = None

    def __init__(self, p4info: p4info_pb2.P4Info, device_id: int = 1) -> None:
        self.device_id = device_id
        self.lock = threading.Lock()
        self.p4info = p4info
        self.pipeline: SchemaPipeline | None = None
        self.packets_out = 0
        """PacketOuts accepted (checked against the P4Info) and dropped: no data plane."""

    def add_packet_in_listener(self, fn: object) -> None:
        """No packets ever come in."""

    def remove_packet_in_listener(self, fn: object) -> None:
        """Nothing was added."""

    add_digest_listener = add_packet_in_listener
    remove_digest_listener = remove_packet_in_listener


class SchemaOnlyService(P4RuntimeService):
    """P4Runtime over a :class:`SchemaSwitch`: the pipeline config is a P4Info plus opaque
    device bytes, and writes land in a :class:`SchemaPipeline`."""

    switch: SchemaSwitch

    def _adopt_running_program(self) -> None:
        info = self.switch.p4info
        self.config = PipelineConfig(None, info, build_schema(info), b"")
        self.switch.pipeline = SchemaPipeline(self.config.schema)

    def _current(self) -> PipelineConfig | None:
        return self.config

    def _prepare(self, cfg: p4runtime_pb2.ForwardingPipelineConfig) -> PipelineConfig:
        loaded = self.switch.p4info
        if cfg.HasField("p4info") and not is_empty(cfg.p4info):
            check_compatible(cfg.p4info, loaded)
            p4info = cfg.p4info
        else:
            p4info = loaded
        cookie = cfg.cookie.cookie if cfg.HasField("cookie") else 0
        cur = self.config
        if not cfg.p4_device_config and cur is not None:  # P4Info only: same device, state kept
            return _SchemaConfig(None, p4info, build_schema(p4info), cur.device_config, cookie,
                                 p4info_only=True)
        return _SchemaConfig(None, p4info, build_schema(p4info), cfg.p4_device_config, cookie)

    def _commit(self, new: PipelineConfig) -> None:
        keep = isinstance(new, _SchemaConfig) and new.p4info_only
        self.config = new
        if not keep:
            with self.switch.lock:
                self.switch.pipeline = SchemaPipeline(new.schema)
            self.state = ServerState()

    def _reconcile(self, new: PipelineConfig) -> None:
        cur = self.config
        if cur is not None and new.device_config == cur.device_config:
            self.config = new
            return
        raise P4RTError(code_pb2.UNIMPLEMENTED, "RECONCILE_AND_COMMIT to a different device "
                                                "config is not supported; use VERIFY_AND_COMMIT")

    def _packet_out(self, s: Stream, pkt: p4runtime_pb2.PacketOut) -> None:
        with self._mu:
            prim = self._primary(s.role)
            cur = self.config
        if prim is not s:
            self._stream_error(s, code_pb2.PERMISSION_DENIED,
                               "only the primary client may send packets", pkt)
            return
        try:
            if cur is not None:
                _check_packet_out(cur.schema, pkt)
        except P4RTError as e:
            self._stream_error(s, e.code, e.message, pkt)
            return
        self.switch.packets_out += 1


def _check_packet_out(schema: Schema, pkt: p4runtime_pb2.PacketOut) -> None:
    """The metadata ids and widths of a PacketOut against the P4Info's ``packet_out`` header."""
    fields = {m.id: m for m in schema.packet_out}
    seen = set()
    for md in pkt.metadata:
        f = fields.get(md.metadata_id)
        if f is None:
            raise invalid(f"unknown packet_out metadata id {md.metadata_id}")
        if md.metadata_id in seen:
            raise invalid(f"packet_out metadata id {md.metadata_id} given twice")
        seen.add(md.metadata_id)
        decode(md.value, f.bitwidth, f"packet_out metadata {f.name}")


def start_schema_server(p4info: p4info_pb2.P4Info, address: str = "127.0.0.1:9559",
                        device_id: int = 1, max_workers: int = 16) -> grpc.Server:
    """A schema-only P4Runtime server for ``p4info`` on ``address`` (see the module doc); the
    returned server's ``p4runtime.switch`` is the :class:`SchemaSwitch` (its ``pipeline`` the
    store). OSError if the address is taken; stop it with ``stop_server``."""
    return start_server(SchemaSwitch(p4info, device_id), address, max_workers=max_workers,
                        service_class=SchemaOnlyService)
