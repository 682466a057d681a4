"""Translation between P4Runtime entities and pipeline state operations (``pipeline.api``).

Every write handler validates the whole update against the schema first (ids, bitwidths, match
kinds, scopes), then performs exactly one pipeline state operation (which itself validates
before changing anything), and returns an *undo* closure that restores the previous state —
used to roll a batch back under ROLLBACK_ON_ERROR / DATAPLANE_ATOMIC. Entries are found by
match + priority with one lookup (``table_get``), never by scanning a table, so a batch and its
rollback cost O(1) per update.

Two ways to run a batch (the server picks): with a ``TableBatch`` (only non-default table
entries) the table writes are staged — validated outside the switch lock, committed under it,
nothing to undo — and cookie changes wait in ``cookie_ops`` for ``apply_cookies``; otherwise
each update is applied under the switch lock and returns its undo.

Readers take what they need from the pipeline when called (the caller holds the switch lock
for that) and return a generator that only encodes, which the caller runs after releasing it.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from functools import partial
from typing import Any, ClassVar

from google.rpc import code_pb2
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from p4switch.pipeline import api
from p4switch.runtime.errors import (
    P4RTError,
    invalid,
    not_found,
    out_of_range,
    permission_denied,
    unimplemented,
)
from p4switch.runtime.schema import MF, Schema, SimpleInfo, TableInfo, decode, encode

Undo = Callable[[], None]
U = p4runtime_pb2.Update
SCOPE = p4info_pb2.ActionRef


def _noop() -> None:
    return None


def _call(fn, *args):
    """Run a pipeline operation, turning its StateError into the matching P4Runtime error."""
    try:
        return fn(*args)
    except api.StateError as e:
        raise P4RTError.from_state(e) from None


def _write_keyed(utype: int, missing: str, old: Any, build: Callable[[], Any],
                 add: Callable[[Any], Any], delete: Callable[[], Any],
                 modify: Callable[[Any], Any]) -> Undo:
    """INSERT/MODIFY/DELETE of one action-profile member or group and its undo. ``old`` is the
    one stored under the same id (None if absent; ``missing`` is the NOT_FOUND message);
    ``build`` validates the request into the new one (not called for DELETE)."""
    if utype == U.DELETE:
        if old is None:
            raise not_found(missing)
        _call(delete)
        return lambda: add(old)
    new = build()
    if utype == U.INSERT:
        _call(add, new)
        return delete
    if old is None:
        raise not_found(missing)
    _call(modify, new)
    return lambda: modify(old)


MatchKey = tuple  # hashable form of an entry's match + priority


def match_key(match: dict[str, api.MatchValue], priority: int) -> MatchKey:
    return (tuple(sorted(match.items(), key=lambda kv: kv[0])), priority)


@dataclass
class EntryCookie:
    """What the target must store but the pipeline does not: opaque controller data."""

    controller_metadata: int = 0
    metadata: bytes = b""


@dataclass
class ServerState:
    """Per-pipeline state kept by the server itself (reset on every new pipeline)."""

    cookies: dict[tuple[str, MatchKey], EntryCookie] = field(default_factory=dict)
    digest_configs: dict[int, p4runtime_pb2.DigestEntry.Config] = field(default_factory=dict)


class Entities:
    """Write/read of every supported entity kind against one pipeline + schema."""

    def __init__(self, schema: Schema, pipeline: api.PipelineAPI, state: ServerState,
                 *, want_undo: bool = True, batch: api.TableBatch | None = None) -> None:
        """``want_undo``: the caller may roll back (atomic batch), so handlers must capture the
        previous state; without it, MODIFY/DELETE skip the lookup of the old entry.
        ``batch``: stage table-entry writes there instead of applying them."""
        self.schema = schema
        self.want_undo = want_undo
        self.pipe = pipeline
        self.state = state
        self.batch = batch
        self.cookie_ops: list[tuple[tuple[str, MatchKey], EntryCookie | None]] = []
        self._handlers: dict[str, EntityHandler] = {}
        self.initial_defaults = {
            t.preamble.id: t.initial_default_action for t in schema.p4info.tables
        }

    def handler(self, kind: str | None, verb: str) -> EntityHandler:
        """The handler of one entity kind (an ``Entity`` oneof name), made once per Entities;
        UNIMPLEMENTED (``verb`` says for what) for a kind no handler is registered for."""
        h = self._handlers.get(kind or "")
        if h is None:
            cls = HANDLERS.get(kind or "")
            if cls is None:
                raise unimplemented(f"{verb} {kind or 'an empty entity'} is not supported")
            h = self._handlers[kind or ""] = cls(self)
        return h

    def write(self, update: p4runtime_pb2.Update) -> Undo:
        if update.type not in (U.INSERT, U.MODIFY, U.DELETE):
            raise invalid("update type must be INSERT, MODIFY or DELETE")
        kind = update.entity.WhichOneof("entity")
        return self.handler(kind, "writing").write(update.type, getattr(update.entity, kind))

    def decode_match(self, t: TableInfo, fields) -> dict[str, api.MatchValue]:
        out: dict[str, api.MatchValue] = {}
        seen: set[int] = set()
        for fm in fields:
            f = t.fields.get(fm.field_id)
            if f is None:
                raise invalid(f"{t.name}: unknown match field id {fm.field_id}")
            if fm.field_id in seen:
                raise invalid(f"{t.name}: match field {f.name} given twice")
            seen.add(fm.field_id)
            kind = fm.WhichOneof("field_match_type")
            what = f"{t.name} field {f.name}"
            bw = f.bitwidth
            if kind == "exact" and f.match_type == MF.EXACT:
                out[f.name] = api.ExactMatch(decode(fm.exact.value, bw, what))
            elif kind == "lpm" and f.match_type == MF.LPM:
                v = decode(fm.lpm.value, bw, what)
                plen = fm.lpm.prefix_len
                if plen <= 0 or plen > bw:
                    raise invalid(f"{what}: prefix length {plen} not in 1..{bw} "
                                  "(a /0 match must be omitted)")
                if v & ((1 << (bw - plen)) - 1):
                    raise invalid(f"{what}: value has bits set beyond the /{plen} prefix")
                out[f.name] = api.LpmMatch(v, plen)
            elif kind == "ternary" and f.match_type == MF.TERNARY:
                v = decode(fm.ternary.value, bw, what)
                m = decode(fm.ternary.mask, bw, what + " mask")
                if m == 0:
                    raise invalid(f"{what}: all-zero mask (a don't-care match must be omitted)")
                if v & ~m:
                    raise invalid(f"{what}: value has bits set outside the mask")
                out[f.name] = api.TernaryMatch(v, m)
            elif kind == "range" and f.match_type == MF.RANGE:
                lo = decode(fm.range.low, bw, what + " low")
                hi = decode(fm.range.high, bw, what + " high")
                if lo > hi:
                    raise invalid(f"{what}: range low > high")
                if lo == 0 and hi == (1 << bw) - 1:
                    raise invalid(f"{what}: full range (a don't-care match must be omitted)")
                out[f.name] = api.RangeMatch(lo, hi)
            elif kind == "optional" and f.match_type == MF.OPTIONAL:
                out[f.name] = api.OptionalMatch(decode(fm.optional.value, bw, what))
            else:
                raise invalid(f"{what}: {kind or 'no'} match given for a "
                              f"{MF.MatchType.Name(f.match_type)} field")
        for fid, f in t.fields.items():
            if f.match_type == MF.EXACT and fid not in seen:
                raise invalid(f"{t.name}: exact match field {f.name} is missing")
        return out

    def encode_match(self, t: TableInfo, match: dict[str, api.MatchValue]) -> list:
        out = []
        for fid in sorted(t.fields):
            f = t.fields[fid]
            mv = match.get(f.name)
            if mv is None:
                continue
            fm = p4runtime_pb2.FieldMatch(field_id=fid)
            if isinstance(mv, api.ExactMatch):
                fm.exact.value = encode(mv.value)
            elif isinstance(mv, api.LpmMatch):
                if mv.prefix_len == 0:
                    continue
                fm.lpm.value = encode(mv.value)
                fm.lpm.prefix_len = mv.prefix_len
            elif isinstance(mv, api.TernaryMatch):
                if mv.mask == 0:
                    continue
                fm.ternary.value = encode(mv.value)
                fm.ternary.mask = encode(mv.mask)
            elif isinstance(mv, api.RangeMatch):
                if mv.low == 0 and mv.high == (1 << f.bitwidth) - 1:
                    continue
                fm.range.low = encode(mv.low)
                fm.range.high = encode(mv.high)
            elif isinstance(mv, api.OptionalMatch):
                fm.optional.value = encode(mv.value)
            out.append(fm)
        return out

    def decode_action(
        self, t: TableInfo | None, action: p4runtime_pb2.Action, *, default: bool,
        allowed: dict[int, int] | None = None,
    ) -> tuple[str, dict[str, int]]:
        refs = t.actions if t is not None else (allowed or {})
        owner = t.name if t is not None else "action profile"
        if action.action_id not in refs:
            raise invalid(f"{owner}: action id {action.action_id} is not one of its actions")
        a = self.schema.action(action.action_id)
        scope = refs[action.action_id]
        if default and scope == SCOPE.TABLE_ONLY:
            raise permission_denied(f"{owner}: action {a.name} is @tableonly")
        if not default and scope == SCOPE.DEFAULT_ONLY:
            raise permission_denied(f"{owner}: action {a.name} is @defaultonly")
        params: dict[str, int] = {}
        for p in action.params:
            if p.param_id not in a.params:
                raise invalid(f"action {a.name}: unknown parameter id {p.param_id}")
            name, bw = a.params[p.param_id]
            if name in params:
                raise invalid(f"action {a.name}: parameter {name} given twice")
            params[name] = decode(p.value, bw, f"action {a.name} parameter {name}")
        missing = [n for n, _ in a.params.values() if n not in params]
        if missing:
            raise invalid(f"action {a.name}: missing parameter(s) {', '.join(missing)}")
        return a.name, params

    def encode_action(self, name: str, params: dict[str, int]) -> p4runtime_pb2.Action:
        aid = self.schema.action_by_name.get(name)
        if aid is None:  # a pipeline name that is a suffix of the P4Info name
            aid = next((i for n, i in self.schema.action_by_name.items()
                        if n.endswith("." + name) or name.endswith("." + n)), 0)
        msg = p4runtime_pb2.Action(action_id=aid)
        if aid:
            a = self.schema.actions[aid]
            for pid in sorted(a.params):
                pname, _ = a.params[pid]
                msg.params.add(param_id=pid, value=encode(params.get(pname, 0)))
        return msg

    def find_entry(self, table: str, match, priority: int) -> api.TableEntry | None:
        return _call(self.pipe.table_get, table, match, priority)

    def apply_cookies(self) -> None:
        """Store the cookies of a committed ``batch`` (None: the entry was deleted)."""
        cookies = self.state.cookies
        for key, cookie in self.cookie_ops:
            if cookie is None:
                cookies.pop(key, None)
            else:
                cookies[key] = cookie
        self.cookie_ops = []

    def read(self, entity: p4runtime_pb2.Entity) -> Iterator[p4runtime_pb2.Entity]:
        kind = entity.WhichOneof("entity")
        return self.handler(kind, "reading").read(getattr(entity, kind))


class EntityKind(StrEnum):
    """The P4Runtime entity kinds (the ``Entity`` message's oneof names) the server handles."""

    TABLE_ENTRY = "table_entry"
    ACTION_PROFILE_MEMBER = "action_profile_member"
    ACTION_PROFILE_GROUP = "action_profile_group"
    COUNTER_ENTRY = "counter_entry"
    DIRECT_COUNTER_ENTRY = "direct_counter_entry"
    METER_ENTRY = "meter_entry"
    DIRECT_METER_ENTRY = "direct_meter_entry"
    REGISTER_ENTRY = "register_entry"
    PACKET_REPLICATION_ENGINE_ENTRY = "packet_replication_engine_entry"
    DIGEST_ENTRY = "digest_entry"


class EntityHandler:
    """Write and read of one entity kind against the pipeline and schema of an ``Entities``
    (shared: match and action codecs, the batch, the server's cookies). Subclasses register
    with ``@handles(kind)``; an unregistered kind is UNIMPLEMENTED."""

    kind: ClassVar[EntityKind]

    def __init__(self, ent: Entities) -> None:
        self.ent = ent
        self.schema = ent.schema
        self.pipe = ent.pipe
        self.state = ent.state

    def write(self, utype: int, msg: Any) -> Undo:
        raise unimplemented(f"writing {self.kind} is not supported")

    def read(self, msg: Any) -> Iterator[p4runtime_pb2.Entity]:
        raise unimplemented(f"reading {self.kind} is not supported")

    @staticmethod
    def _modify_only(utype: int, what: str) -> None:
        if utype != U.MODIFY:
            raise invalid(f"{what} entries exist for every index: only MODIFY is valid")


HANDLERS: dict[str, type[EntityHandler]] = {}
"""Entity kind -> its handler class (filled by ``@handles``)."""


def handles(kind: EntityKind) -> Callable[[type[EntityHandler]], type[EntityHandler]]:
    """Register the decorated class as the handler of ``kind``."""
    def register(cls: type[EntityHandler]) -> type[EntityHandler]:
        cls.kind = kind
        HANDLERS[kind] = cls
        return cls
    return register


@handles(EntityKind.TABLE_ENTRY)
class TableEntries(EntityHandler):
    """Table entries: match + priority identify one; default entries are MODIFY only; writes
    are staged in the Entities' batch when it has one."""

    def _direct_counter_data(self, te: p4runtime_pb2.TableEntry, t: TableInfo):
        if te.HasField("counter_data") and not t.direct_counter_id:
            raise invalid(f"{t.name} has no direct counter")
        if te.HasField("meter_config") and not t.direct_meter_id:
            raise invalid(f"{t.name} has no direct meter")
        if te.HasField("meter_counter_data"):
            raise unimplemented("meter_counter_data is not supported")

    def _table_action(self, t: TableInfo, ta: p4runtime_pb2.TableAction, entry: api.TableEntry):
        kind = ta.WhichOneof("type")
        if kind is None:
            raise invalid(f"{t.name}: entry has no action")
        if t.implementation_id == 0:
            if kind != "action":
                raise invalid(f"{t.name} is a direct table: it takes an action, not {kind}")
            entry.action, entry.params = self.ent.decode_action(t, ta.action, default=False)
            return
        prof = self.schema.profile(t.implementation_id)
        if kind == "action_profile_member_id":
            entry.member_id = ta.action_profile_member_id
        elif kind == "action_profile_group_id":
            if not prof.with_selector:
                raise invalid(f"{t.name}: {prof.name} is not a selector; it takes members only")
            entry.group_id = ta.action_profile_group_id
        elif kind == "action_profile_action_set":
            raise unimplemented("one-shot action selector programming is not supported")
        else:
            raise invalid(f"{t.name} is an indirect table: it takes a member or group id")

    def write(self, utype: int, te: p4runtime_pb2.TableEntry) -> Undo:
        t = self.schema.table(te.table_id)
        if te.is_const:
            raise invalid("is_const must be false in a write")
        if utype != U.DELETE:  # a DELETE is identified by match + priority; the rest is ignored
            if te.idle_timeout_ns or te.HasField("time_since_last_hit"):
                raise invalid(f"{t.name} does not support idle timeout")
            self._direct_counter_data(te, t)
        if te.is_default_action:
            return self._write_default(utype, t, te)

        match = self.ent.decode_match(t, te.match)
        if t.needs_priority and te.priority <= 0:
            raise invalid(f"{t.name} needs a priority > 0 (it has ternary/range/optional keys)")
        if not t.needs_priority and te.priority != 0:
            raise invalid(f"{t.name} takes no priority (no ternary/range/optional keys)")
        if t.is_const and not (utype == U.MODIFY and not te.HasField("action")):
            raise permission_denied(f"{t.name} is a const table")
        if not t.fields and utype == U.INSERT:
            raise invalid(f"{t.name} is keyless: only its default entry can be set")
        meter = _meter_from(te.meter_config) if te.HasField("meter_config") else None
        ckey = (t.name, match_key(match, te.priority))
        cookie = EntryCookie(te.controller_metadata, te.metadata)
        if self.ent.batch is not None:
            self._stage_table_entry(self.ent.batch, utype, t, te, match, meter, ckey, cookie)
            return _noop

        if utype == U.INSERT:
            entry = api.TableEntry(match=match, priority=te.priority, meter=meter)
            self._table_action(t, te.action, entry)
            _call(self.pipe.table_add, t.name, entry)
            self._write_entry_counter(
                t, te, match, lambda: _call(self.pipe.table_delete, t.name, match, te.priority))
            self.state.cookies[ckey] = cookie

            def undo_insert() -> None:
                self.pipe.table_delete(t.name, match, te.priority)
                self.state.cookies.pop(ckey, None)
            return undo_insert

        if not self.ent.want_undo:
            # Fast paths (no lookup of the old entry, which costs a scan of the table): the
            # pipeline identifies the entry by match + priority and refuses const entries.
            if utype == U.DELETE:
                _call(self.pipe.table_delete, t.name, match, te.priority)
                self.state.cookies.pop(ckey, None)
                return _noop
            if te.HasField("action") and not te.HasField("counter_data"):
                new = api.TableEntry(match=match, priority=te.priority, meter=meter)
                self._table_action(t, te.action, new)
                _call(self.pipe.table_modify, t.name, new)
                self.state.cookies[ckey] = cookie
                return _noop

        old = self.ent.find_entry(t.name, match, te.priority)
        if old is None:
            raise not_found(f"{t.name}: no entry with this match and priority")
        old_cookie = self.state.cookies.get(ckey, EntryCookie())

        if utype == U.MODIFY:
            new = copy.deepcopy(old)
            if te.HasField("action"):
                new.action, new.params, new.member_id, new.group_id = None, {}, None, None
                self._table_action(t, te.action, new)
            new.meter = meter
            _call(self.pipe.table_modify, t.name, new)
            self._write_entry_counter(t, te, match, lambda: self.pipe.table_modify(t.name, old))
            self.state.cookies[ckey] = cookie

            def undo_modify() -> None:
                self.pipe.table_modify(t.name, old)
                if te.HasField("counter_data"):
                    self.pipe.direct_counter_write(t.name, match, te.priority, old.packets,
                                                   old.bytes)
                self.state.cookies[ckey] = old_cookie
            return undo_modify

        # DELETE
        if old.is_const:
            raise permission_denied(f"{t.name}: const entries cannot be deleted")
        _call(self.pipe.table_delete, t.name, match, te.priority)
        self.state.cookies.pop(ckey, None)

        def undo_delete() -> None:
            self.pipe.table_add(t.name, old)
            if t.direct_counter_id:
                self.pipe.direct_counter_write(t.name, match, te.priority, old.packets, old.bytes)
            self.state.cookies[ckey] = old_cookie
        return undo_delete

    def _stage_table_entry(self, b: api.TableBatch, utype: int, t: TableInfo,
                           te: p4runtime_pb2.TableEntry, match: dict[str, api.MatchValue],
                           meter: api.MeterConfig | None, ckey, cookie: EntryCookie) -> None:
        """A table-entry INSERT/MODIFY/DELETE staged in ``b`` (validated now, applied at commit);
        same semantics as the direct path below."""
        counters = None
        if te.HasField("counter_data"):
            counters = (te.counter_data.packet_count, te.counter_data.byte_count)
        if utype == U.INSERT:
            entry = api.TableEntry(match=match, priority=te.priority, meter=meter)
            self._table_action(t, te.action, entry)
            _call(b.add, t.name, entry, counters)
            self.ent.cookie_ops.append((ckey, cookie))
            return
        old = _call(b.get, t.name, match, te.priority)
        if old is None:
            raise not_found(f"{t.name}: no entry with this match and priority")
        if utype == U.MODIFY:
            # ``old`` is already a copy (TableBatch.get): no deep copy needed
            new = api.TableEntry(match=old.match, priority=old.priority, meter=meter)
            if te.HasField("action"):
                self._table_action(t, te.action, new)
            else:
                new.action, new.params = old.action, old.params
                new.member_id, new.group_id = old.member_id, old.group_id
            _call(b.modify, t.name, new, counters)
            self.ent.cookie_ops.append((ckey, cookie))
            return
        if old.is_const:
            raise permission_denied(f"{t.name}: const entries cannot be deleted")
        _call(b.delete, t.name, match, te.priority)
        self.ent.cookie_ops.append((ckey, None))

    def _write_entry_counter(self, t: TableInfo, te: p4runtime_pb2.TableEntry,
                             match: dict[str, api.MatchValue],
                             restore: Callable[[], object]) -> None:
        """Set the entry's direct counter from ``te.counter_data``, if given; when the pipeline
        refuses it, ``restore()`` takes back the table write just made (state stays unchanged)."""
        if not te.HasField("counter_data"):
            return
        d = te.counter_data
        try:
            _call(self.pipe.direct_counter_write, t.name, match, te.priority,
                  d.packet_count, d.byte_count)
        except P4RTError:
            restore()
            raise

    def _write_default(self, utype: int, t: TableInfo, te: p4runtime_pb2.TableEntry) -> Undo:
        if utype != U.MODIFY:
            raise invalid("the default entry can only be modified (INSERT/DELETE are invalid)")
        if len(te.match) or te.priority:
            raise invalid("the default entry has no match fields and priority 0")
        if t.const_default_action_id:
            raise permission_denied(f"{t.name}: the default action is const")
        if t.implementation_id:
            raise permission_denied(f"{t.name}: an indirect table's default entry is fixed")
        if te.HasField("action"):
            if te.action.WhichOneof("type") != "action":
                raise invalid(f"{t.name}: the default entry takes an action")
            name, params = self.ent.decode_action(t, te.action.action, default=True)
        else:  # reset to the program's default
            init = self.ent.initial_defaults.get(t.id)
            if init is None or init.action_id == 0:
                raise invalid(f"{t.name}: no initial default action is known")
            a = self.schema.action(init.action_id)
            name = a.name
            params = {a.params[arg.param_id][0]: int.from_bytes(arg.value, "big")
                      for arg in init.arguments if arg.param_id in a.params}
        old = _call(self.pipe.table_get_default, t.name)
        _call(self.pipe.table_set_default, t.name, name, params)

        def undo() -> None:
            self.pipe.table_set_default(t.name, old.action, dict(old.params))
        return undo

    def read(self, te: p4runtime_pb2.TableEntry) -> Iterator[p4runtime_pb2.Entity]:
        if te.table_id == 0:
            tables = list(self.schema.tables.values())
        else:
            tables = [self.schema.table(te.table_id)]
        snaps: list[tuple[TableInfo, Any]] = []
        for t in tables:
            if te.is_default_action:
                snaps.append((t, _call(self.pipe.table_get_default, t.name)))
            elif te.table_id and len(te.match):
                match = self.ent.decode_match(t, te.match)
                try:
                    e = self.pipe.table_get(t.name, match, te.priority)
                except api.StateError:  # e.g. no priority for a ternary table: matches nothing
                    e = None
                snaps.append((t, [e] if e is not None else []))
            else:
                snaps.append((t, _call(self.pipe.table_entries, t.name)))
        return self._encode_table_entries(te, snaps)

    def _encode_table_entries(self, te: p4runtime_pb2.TableEntry, snaps
                              ) -> Iterator[p4runtime_pb2.Entity]:
        for t, snap in snaps:
            with_counters = te.HasField("counter_data") and t.direct_counter_id != 0
            with_meter = te.HasField("meter_config") and t.direct_meter_id != 0
            if te.is_default_action:
                ent = p4runtime_pb2.Entity()
                out = ent.table_entry
                out.table_id = t.id
                out.is_default_action = True
                if snap.action:
                    out.action.action.CopyFrom(self.ent.encode_action(snap.action, snap.params))
                yield ent
                continue
            action_filter = 0
            if te.table_id and te.action.WhichOneof("type") == "action":
                action_filter = te.action.action.action_id
            for e in snap:
                if te.priority and e.priority != te.priority:
                    continue
                mk = match_key(e.match, e.priority)
                cookie = self.state.cookies.get((t.name, mk), EntryCookie())
                if te.controller_metadata and cookie.controller_metadata != te.controller_metadata:
                    continue
                if te.metadata and cookie.metadata != te.metadata:
                    continue
                ent = p4runtime_pb2.Entity()
                out = ent.table_entry
                out.table_id = t.id
                out.match.extend(self.ent.encode_match(t, e.match))
                out.priority = e.priority
                out.is_const = e.is_const
                out.controller_metadata = cookie.controller_metadata
                out.metadata = cookie.metadata
                if e.action is not None:
                    out.action.action.CopyFrom(self.ent.encode_action(e.action, e.params))
                    if action_filter and out.action.action.action_id != action_filter:
                        continue
                elif e.member_id is not None:
                    out.action.action_profile_member_id = e.member_id
                elif e.group_id is not None:
                    out.action.action_profile_group_id = e.group_id
                if with_counters:
                    out.counter_data.packet_count = e.packets
                    out.counter_data.byte_count = e.bytes
                if with_meter and e.meter is not None:
                    _meter_to(e.meter, out.meter_config)
                yield ent


class ProfileEntries(EntityHandler):
    """Members and groups of action profiles: each is kept under its id within a profile,
    written through ``_write_keyed`` and read per profile. A subclass names the kind
    (``what``: the messages' ``<what>_id`` and the pipeline's ``act_prof_*_<what>`` calls),
    which profiles hold it, and how a message is built and an object encoded."""

    what: ClassVar[str]

    def holds(self, prof: SimpleInfo) -> bool:
        """Whether ``prof`` can hold this kind (every profile holds members)."""
        return True

    def ident(self, x: Any) -> int:
        """The id of a message or a pipeline object of this kind (``member_id``, ``group_id``)."""
        return int(getattr(x, f"{self.what}_id"))

    def listed(self, profile: str) -> list[Any]:
        """The pipeline's objects of this kind in ``profile`` (``act_prof_members`` ...)."""
        return list(getattr(self.pipe, f"act_prof_{self.what}s")(profile))

    def calls(self, profile: str, ident: int) -> tuple[Callable[[Any], Any], Callable[[], Any],
                                                      Callable[[Any], Any]]:
        """The pipeline's add, delete and modify of object ``ident`` of ``profile``
        (``act_prof_add_member`` ...)."""
        return (partial(getattr(self.pipe, f"act_prof_add_{self.what}"), profile),
                partial(getattr(self.pipe, f"act_prof_delete_{self.what}"), profile, ident),
                partial(getattr(self.pipe, f"act_prof_modify_{self.what}"), profile))

    def build(self, prof: SimpleInfo, msg: Any) -> Any:
        """The validated pipeline object a write of ``msg`` makes."""
        raise NotImplementedError

    def encode(self, prof: SimpleInfo, x: Any) -> p4runtime_pb2.Entity:
        raise NotImplementedError

    def check(self, prof: SimpleInfo) -> None:
        """Refuse a write into ``prof`` that cannot hold this kind."""

    def write(self, utype: int, msg: Any) -> Undo:
        prof = self.schema.profile(msg.action_profile_id)
        self.check(prof)
        ident = self.ident(msg)
        if ident == 0:
            raise invalid(f"{self.what}_id 0 is reserved")
        old = next((x for x in _call(self.listed, prof.name) if self.ident(x) == ident), None)
        return _write_keyed(utype, f"{prof.name}: no {self.what} {ident}", old,
                            partial(self.build, prof, msg), *self.calls(prof.name, ident))

    def read(self, msg: Any) -> Iterator[p4runtime_pb2.Entity]:
        profs = ([self.schema.profile(msg.action_profile_id)] if msg.action_profile_id
                 else [p for p in self.schema.profiles.values() if self.holds(p)])
        return self._encode_all(self.ident(msg), [(p, _call(self.listed, p.name))
                                                  for p in profs if self.holds(p)])

    def _encode_all(self, ident: int, snaps: list[tuple[SimpleInfo, list[Any]]]
                    ) -> Iterator[p4runtime_pb2.Entity]:
        for prof, objs in snaps:
            for x in objs:
                if not ident or self.ident(x) == ident:
                    yield self.encode(prof, x)


@handles(EntityKind.ACTION_PROFILE_MEMBER)
class ActionProfileMembers(ProfileEntries):
    what = "member"

    def _profile_actions(self, prof_id: int) -> dict[int, int]:
        prof = self.schema.profile(prof_id)
        refs: dict[int, int] = {}
        for tid in prof.table_ids:
            if tid in self.schema.tables:
                refs.update(self.schema.tables[tid].actions)
        return refs

    def build(self, prof: SimpleInfo, m: p4runtime_pb2.ActionProfileMember
              ) -> api.ActionProfileMember:
        refs = {k: SCOPE.TABLE_AND_DEFAULT for k in self._profile_actions(prof.id)}
        name, params = self.ent.decode_action(None, m.action, default=False, allowed=refs)
        return api.ActionProfileMember(m.member_id, name, params)

    def encode(self, prof: SimpleInfo, x: api.ActionProfileMember) -> p4runtime_pb2.Entity:
        ent = p4runtime_pb2.Entity()
        out = ent.action_profile_member
        out.action_profile_id = prof.id
        out.member_id = x.member_id
        out.action.CopyFrom(self.ent.encode_action(x.action, x.params))
        return ent


@handles(EntityKind.ACTION_PROFILE_GROUP)
class ActionProfileGroups(ProfileEntries):
    what = "group"

    def holds(self, prof: SimpleInfo) -> bool:
        return bool(prof.with_selector)

    def check(self, prof: SimpleInfo) -> None:
        if not prof.with_selector:
            raise invalid(f"{prof.name} is not an action selector: it has no groups")

    def build(self, prof: SimpleInfo, g: p4runtime_pb2.ActionProfileGroup
              ) -> api.ActionProfileGroup:
        members: list[tuple[int, int]] = []
        for gm in g.members:
            if gm.weight <= 0:
                raise invalid(f"{prof.name} group {g.group_id}: member weight must be > 0")
            if any(mid == gm.member_id for mid, _ in members):
                raise invalid(f"{prof.name} group {g.group_id}: member {gm.member_id} twice")
            members.append((gm.member_id, gm.weight))
        if prof.max_group_size and g.max_size > prof.max_group_size:
            raise invalid(f"{prof.name}: max_size {g.max_size} exceeds the profile's "
                          f"max_group_size {prof.max_group_size}")
        if g.max_size and sum(w for _, w in members) > g.max_size:
            raise P4RTError(code_pb2.RESOURCE_EXHAUSTED,
                            f"{prof.name} group {g.group_id}: weights exceed max_size")
        return api.ActionProfileGroup(g.group_id, members, g.max_size)

    def encode(self, prof: SimpleInfo, x: api.ActionProfileGroup) -> p4runtime_pb2.Entity:
        ent = p4runtime_pb2.Entity()
        out = ent.action_profile_group
        out.action_profile_id = prof.id
        out.group_id = x.group_id
        out.max_size = x.max_size
        for mid, w in x.members:
            out.members.add(member_id=mid, weight=w)
        return ent


class IndexedArray(EntityHandler):
    """Counters, meters and registers: one cell per index, MODIFY only; an unset index is every
    cell."""

    @staticmethod
    def _indexes(has: bool, index: int, size: int, what: str) -> range:
        """The cells a counter/meter/register entry names: one index, or all when the index is
        unset (a wildcard, for reads and for MODIFY alike). A negative index is malformed
        (INVALID_ARGUMENT); one past the array is OUT_OF_RANGE."""
        if not has:
            return range(size)
        if index < 0:
            raise invalid(f"{what}: index {index} is negative")
        if index >= size:
            raise out_of_range(f"{what}: index {index} out of range 0..{size - 1}")
        return range(index, index + 1)

    def _write_cells(self, info, idxs: range, read, write, value: tuple) -> Undo:
        """Set every cell in ``idxs`` to ``value`` (``write(name, i, *value)``); the undo
        restores each cell's old value (``read(name, i)``, a tuple or a scalar)."""
        old = [_call(read, info.name, i) for i in idxs]
        for i in idxs:
            _call(write, info.name, i, *value)

        def undo() -> None:
            for i, v in zip(idxs, old, strict=True):
                write(info.name, i, *(v if isinstance(v, tuple) else (v,)))
        return undo

    def _read_cells(self, req, array_id: int, lookup, every: dict, kind: str, value, put):
        """Entities of an indexed array (counter, meter, register): the request names one array
        or all (id 0), one index or every index. ``value(info, i)`` reads a cell now (under
        the caller's lock); the returned generator encodes them (``put(out, value)``)."""
        infos = [lookup(array_id)] if array_id else list(every.values())
        snaps = []
        for info in infos:
            idxs = self._indexes(req.HasField("index"), req.index.index, info.size, info.name)
            snaps.append((info, [(i, value(info, i)) for i in idxs]))
        return self._encode_cells(snaps, kind, put)

    @staticmethod
    def _encode_cells(snaps, kind: str, put):
        for info, cells in snaps:
            for i, v in cells:
                ent = p4runtime_pb2.Entity()
                out = getattr(ent, f"{kind}_entry")
                setattr(out, f"{kind}_id", info.id)
                out.index.index = i
                put(out, v)
                yield ent


class DirectResource(EntityHandler):
    """Direct counters and meters: one cell per table entry, named by the entry's match."""

    def _read_direct(self, te: p4runtime_pb2.TableEntry, kind: str, fill):
        """Entities of a direct resource: the request names one table or all that have one (id 0),
        one entry (a match) or every entry; fill(entry, out) sets the entry's data."""
        attr, what = f"{kind}_id", kind.replace("_", " ")
        tables = ([self.schema.table(te.table_id)] if te.table_id else
                  [t for t in self.schema.tables.values() if getattr(t, attr)])
        snaps = []
        for t in tables:
            if not getattr(t, attr):
                raise invalid(f"{t.name} has no {what}")
            if te.table_id and len(te.match):
                e = self.ent.find_entry(t.name, self.ent.decode_match(t, te.match), te.priority)
                snaps.append((t, [e] if e is not None else []))
            else:
                snaps.append((t, _call(self.pipe.table_entries, t.name)))
        return self._encode_direct(snaps, kind, fill)

    def _encode_direct(self, snaps, kind: str, fill):
        for t, entries in snaps:
            for e in entries:
                ent = p4runtime_pb2.Entity()
                out = getattr(ent, f"{kind}_entry")
                out.table_entry.table_id = t.id
                out.table_entry.match.extend(self.ent.encode_match(t, e.match))
                out.table_entry.priority = e.priority
                fill(e, out)
                yield ent

    def _direct_target(self, te: p4runtime_pb2.TableEntry, attr: str, what: str):
        t = self.schema.table(te.table_id)
        if not getattr(t, attr):
            raise invalid(f"{t.name} has no {what}")
        if te.is_default_action:
            raise unimplemented(f"{what} of a default entry is not supported")
        match = self.ent.decode_match(t, te.match)
        entry = self.ent.find_entry(t.name, match, te.priority)
        if entry is None:
            raise not_found(f"{t.name}: no entry with this match and priority")
        return t, match, entry


@handles(EntityKind.COUNTER_ENTRY)
class Counters(IndexedArray):
    def write(self, utype: int, c: p4runtime_pb2.CounterEntry) -> Undo:
        self._modify_only(utype, "counter")
        info = self.schema.counter(c.counter_id)
        idxs = self._indexes(c.HasField("index"), c.index.index, info.size, info.name)
        return self._write_cells(info, idxs, self.pipe.counter_read, self.pipe.counter_write,
                                 (c.data.packet_count, c.data.byte_count))

    def read(self, c: p4runtime_pb2.CounterEntry):
        def put(out, v):
            out.data.packet_count, out.data.byte_count = v
        return self._read_cells(c, c.counter_id, self.schema.counter, self.schema.counters,
                                "counter", lambda info, i: _call(self.pipe.counter_read,
                                                                 info.name, i), put)


@handles(EntityKind.DIRECT_COUNTER_ENTRY)
class DirectCounters(DirectResource):
    def write(self, utype: int, d: p4runtime_pb2.DirectCounterEntry) -> Undo:
        self._modify_only(utype, "direct counter")
        t, match, entry = self._direct_target(d.table_entry, "direct_counter_id",
                                              "direct counter")
        prio = d.table_entry.priority
        _call(self.pipe.direct_counter_write, t.name, match, prio, d.data.packet_count,
              d.data.byte_count)
        return lambda: self.pipe.direct_counter_write(t.name, match, prio, entry.packets,
                                                      entry.bytes)

    def read(self, d: p4runtime_pb2.DirectCounterEntry):
        def fill(e, out):
            out.data.packet_count = e.packets
            out.data.byte_count = e.bytes
        return self._read_direct(d.table_entry, "direct_counter", fill)


@handles(EntityKind.METER_ENTRY)
class Meters(IndexedArray):
    def write(self, utype: int, m: p4runtime_pb2.MeterEntry) -> Undo:
        self._modify_only(utype, "meter")
        info = self.schema.meter(m.meter_id)
        idxs = self._indexes(m.HasField("index"), m.index.index, info.size, info.name)
        cfg = _meter_from(m.config) if m.HasField("config") else None
        return self._write_cells(info, idxs, self.pipe.meter_get, self.pipe.meter_set, (cfg,))

    def read(self, m: p4runtime_pb2.MeterEntry):
        def put(out, cfg):
            if cfg is not None:
                _meter_to(cfg, out.config)
        return self._read_cells(m, m.meter_id, self.schema.meter, self.schema.meters, "meter",
                                lambda info, i: _call(self.pipe.meter_get, info.name, i), put)


@handles(EntityKind.DIRECT_METER_ENTRY)
class DirectMeters(DirectResource):
    def write(self, utype: int, d: p4runtime_pb2.DirectMeterEntry) -> Undo:
        self._modify_only(utype, "direct meter")
        t, _, entry = self._direct_target(d.table_entry, "direct_meter_id", "direct meter")
        new = copy.deepcopy(entry)
        new.meter = _meter_from(d.config) if d.HasField("config") else None
        _call(self.pipe.table_modify, t.name, new)
        return lambda: self.pipe.table_modify(t.name, entry)

    def read(self, d: p4runtime_pb2.DirectMeterEntry):
        def fill(e, out):
            if e.meter is not None:
                _meter_to(e.meter, out.config)
        return self._read_direct(d.table_entry, "direct_meter", fill)


@handles(EntityKind.REGISTER_ENTRY)
class Registers(IndexedArray):
    def write(self, utype: int, r: p4runtime_pb2.RegisterEntry) -> Undo:
        self._modify_only(utype, "register")
        info = self.schema.register(r.register_id)
        idxs = self._indexes(r.HasField("index"), r.index.index, info.size, info.name)
        kind = r.data.WhichOneof("data")
        if kind == "bitstring":
            value = decode(r.data.bitstring, info.bitwidth, info.name)
        elif kind == "bool":
            if not info.is_bool:  # P4Data must have the register's type (spec 8.4)
                raise invalid(f"{info.name}: a bool given for a bit<{info.bitwidth}> register")
            value = int(r.data.bool)
        else:
            raise invalid(f"{info.name}: register data must be a bitstring")
        return self._write_cells(info, idxs, self.pipe.register_read, self.pipe.register_write,
                                 (value,))

    def read(self, r: p4runtime_pb2.RegisterEntry):
        def put(out, v):
            out.data.bitstring = encode(v)
        return self._read_cells(r, r.register_id, self.schema.register, self.schema.registers,
                                "register", lambda info, i: _call(self.pipe.register_read,
                                                                  info.name, i), put)


@handles(EntityKind.PACKET_REPLICATION_ENGINE_ENTRY)
class ReplicationEngine(EntityHandler):
    """Multicast groups and clone sessions."""

    @staticmethod
    def _replicas(replicas) -> list[api.Replica]:
        out: list[api.Replica] = []
        seen = set()
        for r in replicas:
            kind = r.WhichOneof("port_kind") if "port_kind" in r.DESCRIPTOR.oneofs_by_name \
                else "egress_port"
            if kind == "port":
                port = decode(r.port, 32, "replica port")
            else:
                port = r.egress_port
            if (port, r.instance) in seen:
                raise invalid(f"replica (port {port}, instance {r.instance}) given twice")
            seen.add((port, r.instance))
            out.append(api.Replica(port, r.instance))
        return out

    def write(self, utype: int, pre: p4runtime_pb2.PacketReplicationEngineEntry) -> Undo:
        kind = pre.WhichOneof("type")
        if kind == "multicast_group_entry":
            g = pre.multicast_group_entry
            if g.multicast_group_id == 0:
                raise invalid("multicast group id 0 is reserved")
            return self._write_replication(
                utype, "multicast group", g.multicast_group_id, self.pipe.mcast_groups,
                self.pipe.mcast_group_set, self.pipe.mcast_group_delete,
                lambda: (self._replicas(g.replicas),))
        if kind == "clone_session_entry":
            c = pre.clone_session_entry
            if c.session_id == 0:
                raise invalid("clone session id 0 is reserved")
            return self._write_replication(
                utype, "clone session", c.session_id, self.pipe.clone_sessions,
                self.pipe.clone_session_set, self.pipe.clone_session_delete,
                lambda: (self._replicas(c.replicas), c.packet_length_bytes))
        raise invalid("packet replication entry has no multicast group or clone session")

    @staticmethod
    def _write_replication(utype: int, what: str, key: int, table: Callable[[], dict],
                           set_: Callable[..., None], delete: Callable[[int], None],
                           args: Callable[[], tuple]) -> Undo:
        """INSERT/MODIFY/DELETE of a multicast group or clone session (``table()``: id ->
        replicas) and its undo; ``args()`` validates the request into ``set_``'s arguments
        after ``key``."""
        old = _call(table).get(key)
        if utype == U.INSERT and old is not None:
            raise P4RTError(code_pb2.ALREADY_EXISTS, f"{what} {key} exists")
        if utype != U.INSERT and old is None:
            raise not_found(f"no {what} {key}")
        if utype == U.DELETE:
            _call(delete, key)
            return lambda: set_(key, old)
        _call(set_, key, *args())
        if old is None:
            return lambda: delete(key)
        return lambda: set_(key, old)

    @staticmethod
    def _read_replicas(want: int, table, kind: str, id_field: str, what: str):
        """Entities of multicast groups or clone sessions (``table()``: id -> replicas): all,
        or only ``want`` (NOT_FOUND when it does not exist)."""
        groups = sorted(_call(table).items())
        if want and want not in dict(groups):
            raise not_found(f"no {what} {want}")

        def encode_all():
            for key, reps in groups:
                if want and key != want:
                    continue
                ent = p4runtime_pb2.Entity()
                out = getattr(ent.packet_replication_engine_entry, kind)
                setattr(out, id_field, key)
                for r in reps:
                    out.replicas.add(egress_port=r.egress_port, instance=r.instance)
                yield ent
        return encode_all()

    def read(self, pre: p4runtime_pb2.PacketReplicationEngineEntry):
        kind = pre.WhichOneof("type")
        if kind == "multicast_group_entry":
            return self._read_replicas(
                pre.multicast_group_entry.multicast_group_id, self.pipe.mcast_groups,
                kind, "multicast_group_id", "multicast group")
        if kind == "clone_session_entry":
            return self._read_replicas(
                pre.clone_session_entry.session_id, self.pipe.clone_sessions,
                kind, "session_id", "clone session")
        raise invalid("read of a packet replication entry needs a multicast group or "
                      "clone session")


@handles(EntityKind.DIGEST_ENTRY)
class Digests(EntityHandler):
    """Digest configuration: it lives in the server (the pipeline just reports digest calls)."""

    def write(self, utype: int, d: p4runtime_pb2.DigestEntry) -> Undo:
        self.schema.digest(d.digest_id)
        configs = self.state.digest_configs
        old = configs.get(d.digest_id)
        if utype == U.INSERT and old is not None:
            raise P4RTError(code_pb2.ALREADY_EXISTS, f"digest {d.digest_id} is configured")
        if utype != U.INSERT and old is None:
            raise not_found(f"digest {d.digest_id} is not configured")
        if utype == U.DELETE:
            del configs[d.digest_id]
        else:
            configs[d.digest_id] = copy.deepcopy(d.config)

        def undo() -> None:
            if old is None:
                configs.pop(d.digest_id, None)
            else:
                configs[d.digest_id] = old
        return undo

    def read(self, d: p4runtime_pb2.DigestEntry):
        if d.digest_id:
            self.schema.digest(d.digest_id)
        return self._encode_digests(d, sorted(self.state.digest_configs.items()))

    @staticmethod
    def _encode_digests(d: p4runtime_pb2.DigestEntry, configs):
        for did, cfg in configs:
            if d.digest_id and did != d.digest_id:
                continue
            ent = p4runtime_pb2.Entity()
            ent.digest_entry.digest_id = did
            ent.digest_entry.config.CopyFrom(cfg)
            yield ent


def _meter_from(cfg: p4runtime_pb2.MeterConfig) -> api.MeterConfig:
    if cfg.cir < 0 or cfg.pir < 0 or cfg.cburst < 0 or cfg.pburst < 0:
        raise invalid("meter rates and bursts must be >= 0")
    if cfg.pir and cfg.cir > cfg.pir:
        raise invalid("meter CIR must not exceed PIR")
    return api.MeterConfig(cfg.cir, cfg.cburst, cfg.pir, cfg.pburst)


def _meter_to(cfg: api.MeterConfig, out: p4runtime_pb2.MeterConfig) -> None:
    out.cir, out.cburst, out.pir, out.pburst = cfg.cir, cfg.cburst, cfg.pir, cfg.pburst
