"""A stand-in pipeline with the state semantics of ``p4switch.pipeline.api`` (validate first,
then change; StateError codes as documented), built from an IR program's names. It lets the
P4Runtime server be tested before/independently of the real pipeline.

Packet path (for packet I/O tests): a frame injected on the CPU port (packet_out) is sent back
to the CPU port with a 2-byte packet_in header carrying the port the packet_out header named;
it also emits a ``mac_learn_t`` digest with the payload's first 6 bytes.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

from p4switch import ir
from p4switch.pipeline import api

E = api.StateError
C = api.StateCode


def _key(match: dict, priority: int):
    return (tuple(sorted(match.items())), priority)


@dataclass
class _Table:
    t: ir.Table
    entries: dict = field(default_factory=dict)
    default: api.TableEntry | None = None


class FakePipeline:
    def __init__(self, program: ir.Program, *, drop_port: int = 511, cpu_port: int | None = None,
                 seed: int | None = None) -> None:
        self.program = program
        self.drop_port = drop_port
        self.cpu_port = cpu_port
        self.tables: dict[str, _Table] = {}
        self.instances: dict[str, ir.ExternInstance] = {}
        for c in program.controls.values():
            for t in c.tables.values():
                self.tables[t.cp_name] = _Table(t)
                da = t.default_action
                self.tables[t.cp_name].default = api.TableEntry(
                    {}, action=da.action,
                    params={p.name: a.value for p, a in
                            zip(program.actions[da.action].data_params, da.args, strict=False)})
                for ce in t.const_entries or []:
                    m = {k.name: api.ExactMatch(e.value) for k, e in zip(t.keys, ce.keys,
                                                                          strict=True)}
                    self.tables[t.cp_name].entries[_key(m, 0)] = api.TableEntry(
                        m, action=ce.action.action, is_const=True)
            for inst in c.instances.values():
                self.instances[inst.cp_name] = inst
        self.counters = {n: [(0, 0)] * i.args[0].value for n, i in self.instances.items()
                         if i.type_name == "counter"}
        self.registers = {n: [0] * i.args[0].value for n, i in self.instances.items()
                          if i.type_name == "register"}
        self.meters = {n: [None] * i.args[0].value for n, i in self.instances.items()
                       if i.type_name == "meter"}
        self.members: dict[str, dict[int, api.ActionProfileMember]] = {}
        self.groups: dict[str, dict[int, api.ActionProfileGroup]] = {}
        for n, i in self.instances.items():
            if i.type_name in ("action_profile", "action_selector"):
                self.members[n] = {}
                self.groups[n] = {}
        self.mcast: dict[int, list[api.Replica]] = {}
        self.clones: dict[int, list[api.Replica]] = {}
        self.ops = 0  # state-changing operations performed
        self.scanned = 0  # entries copied out by table_entries (full-table reads)
        self.lookups = 0  # single-entry lookups (table_get, TableBatch.get)

    # names ------------------------------------------------------------------------------------
    def resolve(self, kind: str, name: str) -> str:
        pool = {"table": self.tables, "counter": self.counters, "register": self.registers,
                "meter": self.meters, "action_profile": self.members}.get(kind, {})
        if name in pool:
            return name
        hits = [n for n in pool if n.endswith("." + name)]
        if len(hits) == 1:
            return hits[0]
        raise E(C.NOT_FOUND, f"no {kind} {name}")

    def _t(self, name: str) -> _Table:
        return self.tables[self.resolve("table", name)]

    # tables -----------------------------------------------------------------------------------
    def _check_entry(self, tb: _Table, entry: api.TableEntry) -> None:
        if entry.action is not None:
            if entry.action not in [r.action for r in tb.t.actions]:
                raise E(C.INVALID_ARGUMENT, f"{entry.action} is not an action of the table")
        if tb.t.implementation:
            prof = f"MyIngress.{tb.t.implementation}"
            if entry.member_id is not None and entry.member_id not in self.members[prof]:
                raise E(C.NOT_FOUND, f"no member {entry.member_id}")
            if entry.group_id is not None and entry.group_id not in self.groups[prof]:
                raise E(C.NOT_FOUND, f"no group {entry.group_id}")

    def table_add(self, table: str, entry: api.TableEntry) -> None:
        tb = self._t(table)
        k = _key(entry.match, entry.priority)
        if k in tb.entries:
            raise E(C.ALREADY_EXISTS, "entry exists")
        if len(tb.entries) >= tb.t.size:
            raise E(C.RESOURCE_EXHAUSTED, "table full")
        self._check_entry(tb, entry)
        e = copy.deepcopy(entry)
        e.packets = e.bytes = 0
        tb.entries[k] = e
        self.ops += 1

    def table_modify(self, table: str, entry: api.TableEntry) -> None:
        tb = self._t(table)
        k = _key(entry.match, entry.priority)
        old = tb.entries.get(k)
        if old is None:
            raise E(C.NOT_FOUND, "no such entry")
        if old.is_const and (entry.action, entry.params) != (old.action, old.params):
            raise E(C.PERMISSION_DENIED, "const entry")
        self._check_entry(tb, entry)
        new = copy.deepcopy(entry)
        new.packets, new.bytes, new.is_const = old.packets, old.bytes, old.is_const
        tb.entries[k] = new
        self.ops += 1

    def table_delete(self, table: str, match: dict, priority: int = 0) -> None:
        tb = self._t(table)
        e = tb.entries.get(_key(match, priority))
        if e is None:
            raise E(C.NOT_FOUND, "no such entry")
        if e.is_const:
            raise E(C.PERMISSION_DENIED, "const entry")
        del tb.entries[_key(match, priority)]
        self.ops += 1

    def table_entries(self, table: str) -> list[api.TableEntry]:
        entries = self._t(table).entries
        self.scanned += len(entries)
        return [copy.deepcopy(e) for e in entries.values()]

    def table_get(self, table: str, match: dict, priority: int = 0) -> api.TableEntry | None:
        self.lookups += 1
        e = self._t(table).entries.get(_key(match, priority))
        return copy.deepcopy(e)

    def table_batch(self) -> FakeBatch:
        return FakeBatch(self)

    def table_set_default(self, table: str, action: str, params: dict[str, int]) -> None:
        tb = self._t(table)
        if tb.t.default_action_const:
            raise E(C.INVALID_ARGUMENT, "const default action")
        tb.default = api.TableEntry({}, action=action, params=dict(params))
        self.ops += 1

    def table_get_default(self, table: str) -> api.TableEntry:
        return copy.deepcopy(self._t(table).default)

    def table_clear(self, table: str) -> None:
        self._t(table).entries.clear()

    def direct_counter_write(self, table, match, priority, packets, bytes_) -> None:
        e = self._t(table).entries.get(_key(match, priority))
        if e is None:
            raise E(C.NOT_FOUND, "no such entry")
        e.packets, e.bytes = packets, bytes_
        self.ops += 1

    # action profiles --------------------------------------------------------------------------
    def act_prof_add_member(self, profile, member) -> None:
        ms = self.members[self.resolve("action_profile", profile)]
        if member.member_id in ms:
            raise E(C.ALREADY_EXISTS, "member exists")
        ms[member.member_id] = copy.deepcopy(member)
        self.ops += 1

    def act_prof_modify_member(self, profile, member) -> None:
        ms = self.members[self.resolve("action_profile", profile)]
        if member.member_id not in ms:
            raise E(C.NOT_FOUND, "no such member")
        ms[member.member_id] = copy.deepcopy(member)
        self.ops += 1

    def act_prof_delete_member(self, profile, member_id) -> None:
        name = self.resolve("action_profile", profile)
        if member_id not in self.members[name]:
            raise E(C.NOT_FOUND, "no such member")
        if any(member_id in [m for m, _ in g.members] for g in self.groups[name].values()):
            raise E(C.FAILED_PRECONDITION, "member is in a group")
        del self.members[name][member_id]
        self.ops += 1

    def act_prof_members(self, profile):
        return [copy.deepcopy(m) for m in
                self.members[self.resolve("action_profile", profile)].values()]

    def _check_group(self, name, group) -> None:
        for mid, _ in group.members:
            if mid not in self.members[name]:
                raise E(C.NOT_FOUND, f"no member {mid}")

    def act_prof_add_group(self, profile, group) -> None:
        name = self.resolve("action_profile", profile)
        if group.group_id in self.groups[name]:
            raise E(C.ALREADY_EXISTS, "group exists")
        self._check_group(name, group)
        self.groups[name][group.group_id] = copy.deepcopy(group)
        self.ops += 1

    def act_prof_modify_group(self, profile, group) -> None:
        name = self.resolve("action_profile", profile)
        if group.group_id not in self.groups[name]:
            raise E(C.NOT_FOUND, "no such group")
        self._check_group(name, group)
        self.groups[name][group.group_id] = copy.deepcopy(group)
        self.ops += 1

    def act_prof_delete_group(self, profile, group_id) -> None:
        name = self.resolve("action_profile", profile)
        if self.groups[name].pop(group_id, None) is None:
            raise E(C.NOT_FOUND, "no such group")
        self.ops += 1

    def act_prof_groups(self, profile):
        return [copy.deepcopy(g) for g in
                self.groups[self.resolve("action_profile", profile)].values()]

    # counters / registers / meters ------------------------------------------------------------
    def _idx(self, arr, index):
        if not 0 <= index < len(arr):
            raise E(C.OUT_OF_RANGE, f"index {index}")

    def counter_read(self, counter, index):
        arr = self.counters[self.resolve("counter", counter)]
        self._idx(arr, index)
        return arr[index]

    def counter_write(self, counter, index, packets, bytes_):
        arr = self.counters[self.resolve("counter", counter)]
        self._idx(arr, index)
        arr[index] = (packets, bytes_)
        self.ops += 1

    def counter_size(self, counter):
        return len(self.counters[self.resolve("counter", counter)])

    def register_read(self, register, index):
        arr = self.registers[self.resolve("register", register)]
        self._idx(arr, index)
        return arr[index]

    def register_write(self, register, index, value):
        name = self.resolve("register", register)
        arr = self.registers[name]
        self._idx(arr, index)
        if value >> self.instances[name].type_args[0].width:
            raise E(C.INVALID_ARGUMENT, "value too wide")
        arr[index] = value
        self.ops += 1

    def register_size(self, register):
        return len(self.registers[self.resolve("register", register)])

    def meter_set(self, meter, index, config):
        arr = self.meters[self.resolve("meter", meter)]
        self._idx(arr, index)
        arr[index] = copy.deepcopy(config)
        self.ops += 1

    def meter_get(self, meter, index):
        arr = self.meters[self.resolve("meter", meter)]
        self._idx(arr, index)
        return copy.deepcopy(arr[index])

    # replication ------------------------------------------------------------------------------
    def mcast_group_set(self, group_id, replicas):
        self.mcast[group_id] = list(replicas)
        self.ops += 1

    def mcast_group_delete(self, group_id):
        if self.mcast.pop(group_id, None) is None:
            raise E(C.NOT_FOUND, "no group")
        self.ops += 1

    def mcast_groups(self):
        return {k: list(v) for k, v in self.mcast.items()}

    def clone_session_set(self, session_id, replicas, truncate_bytes=0):
        self.clones[session_id] = list(replicas)
        self.ops += 1

    def clone_session_delete(self, session_id):
        if self.clones.pop(session_id, None) is None:
            raise E(C.NOT_FOUND, "no session")
        self.ops += 1

    def clone_sessions(self):
        return {k: list(v) for k, v in self.clones.items()}

    def value_set_set(self, value_set, members):
        raise E(C.UNIMPLEMENTED, "no value sets")

    # packet path ------------------------------------------------------------------------------
    def ingress(self, data: bytes, port: int, now_us: int) -> api.IngressResult:
        res = api.IngressResult()
        if port != self.cpu_port:
            res.drops.append(api.Drop("mark_to_drop"))
            return res
        # packet_out header: egress_port:9, mcast:16, pad:7 (4 bytes)
        hdr = int.from_bytes(data[:4], "big")
        named_port = hdr >> 23
        payload = data[4:]
        pin = ((named_port << 7).to_bytes(2, "big")) + payload
        res.jobs.append(api.EgressJob(self.cpu_port, 0, len(pin), pin))
        res.digests.append(api.Digest("mac_learn_t", 1, {
            "src_mac": int.from_bytes(payload[:6].ljust(6, b"\0"), "big"), "port": named_port}))
        return res

    def egress(self, job, now_us, qmeta) -> api.EgressResult:
        return api.EgressResult(outputs=[api.Output(job.egress_port, job.state)])

    def process(self, data, port, now_us):
        raise NotImplementedError


class FakeBatch:
    """``api.TableBatch`` for FakePipeline: writes checked against the tables plus a view of the
    batch's earlier writes, replayed onto the tables by commit()."""

    def __init__(self, pipe: FakePipeline) -> None:
        self.p = pipe
        self.view: dict[tuple, api.TableEntry | None] = {}
        self.sizes: dict[str, int] = {}
        self.todo: list[tuple[str, tuple, api.TableEntry | None]] = []

    def _cur(self, tb: _Table, k) -> api.TableEntry | None:
        vk = (tb.t.cp_name, k)
        return self.view[vk] if vk in self.view else tb.entries.get(k)

    def _stage(self, tb: _Table, k, e: api.TableEntry | None, grow: int) -> None:
        name = tb.t.cp_name
        self.sizes[name] = self.sizes.get(name, len(tb.entries)) + grow
        self.view[(name, k)] = e
        self.todo.append((name, k, e))

    def add(self, table, entry, counters=None) -> None:
        tb = self.p._t(table)
        k = _key(entry.match, entry.priority)
        if self._cur(tb, k) is not None:
            raise E(C.ALREADY_EXISTS, "entry exists")
        if self.sizes.get(tb.t.cp_name, len(tb.entries)) >= tb.t.size:
            raise E(C.RESOURCE_EXHAUSTED, "table full")
        self.p._check_entry(tb, entry)
        e = copy.deepcopy(entry)
        e.packets, e.bytes = counters or (0, 0)
        self._stage(tb, k, e, 1)

    def modify(self, table, entry, counters=None) -> None:
        tb = self.p._t(table)
        k = _key(entry.match, entry.priority)
        old = self._cur(tb, k)
        if old is None:
            raise E(C.NOT_FOUND, "no such entry")
        if old.is_const and (entry.action, entry.params) != (old.action, old.params):
            raise E(C.PERMISSION_DENIED, "const entry")
        self.p._check_entry(tb, entry)
        new = copy.deepcopy(entry)
        new.packets, new.bytes = counters or (old.packets, old.bytes)
        new.is_const = old.is_const
        self._stage(tb, k, new, 0)

    def delete(self, table, match, priority=0) -> None:
        tb = self.p._t(table)
        k = _key(match, priority)
        old = self._cur(tb, k)
        if old is None:
            raise E(C.NOT_FOUND, "no such entry")
        if old.is_const:
            raise E(C.PERMISSION_DENIED, "const entry")
        self._stage(tb, k, None, -1)

    def get(self, table, match, priority=0) -> api.TableEntry | None:
        self.p.lookups += 1
        return copy.deepcopy(self._cur(self.p._t(table), _key(match, priority)))

    def commit(self) -> None:
        for name, k, e in self.todo:
            entries = self.p.tables[name].entries
            if e is None:
                del entries[k]
            else:
                entries[k] = e
            self.p.ops += 1
        self.todo = []
