"""The P4Runtime gRPC service of p4switch (p4runtime 1.4.1 protos).

Concurrency model: gRPC runs each RPC on a worker thread. Pipeline state is touched only while
holding ``switch.lock`` — the same lock the switch's packet loop holds around each packet — so
a Write batch is atomic with respect to packets and never races the data path. Server-side
state (arbitration, the committed config, cookies, digest configs) has its own lock,
``self._mu``; when both are needed, ``self._mu`` is taken first.

Packet-in and digest callbacks arrive on the switch loop thread; they only format a message and
put it on the primary's stream queue, so they never block packets.
"""

from __future__ import annotations

import itertools
import logging
import queue
import threading
import time
from dataclasses import dataclass, field

import grpc
from google.rpc import code_pb2
from p4.config.v1 import p4info_pb2
from p4.v1 import p4data_pb2, p4runtime_pb2, p4runtime_pb2_grpc

from p4switch import bmv2json, device_config, ir, pi_device_config
from p4switch.p4info import P4InfoError, build_p4info, controller_fields
from p4switch.pipeline import api
from p4switch.runtime.entities import Entities, EntityKind, ServerState
from p4switch.runtime.errors import (
    P4RTError,
    abort,
    batch_status,
    failed_precondition,
    invalid,
    not_found,
    permission_denied,
)
from p4switch.runtime.schema import Schema, build_schema, check_compatible, encode, is_empty

log = logging.getLogger("p4switch.runtime")

#: What Capabilities answers: the version of the protos this server is built on.
API_VERSION = "1.4.1"
READ_CHUNK = 1000
#: Writes of at least this many updates are logged (info) with how long they held the switch
#: lock — what packets waited (bench/runtime_bench.py reports it).
BIG_BATCH = 1000
_CLOSE = object()

SetAction = p4runtime_pb2.SetForwardingPipelineConfigRequest
GetType = p4runtime_pb2.GetForwardingPipelineConfigRequest


def _eid(e: p4runtime_pb2.Uint128) -> tuple[int, int]:
    return (e.high, e.low)


@dataclass
class PipelineConfig:
    """A verified forwarding pipeline config (committed, or saved by VERIFY_AND_SAVE)."""

    program: ir.Program | None
    """None on a schema-only server (runtime/schema_only.py): a P4Info and no program."""
    p4info: p4info_pb2.P4Info
    schema: Schema
    device_config: bytes
    cookie: int = 0
    #: PI's ``P4DeviceConfig.reassign``: forwarding state is dropped even when the program is
    #: the one already running (PI removes and re-assigns the device).
    reassign: bool = False


@dataclass
class Stream:
    """One StreamChannel: its outgoing queue and arbitration data."""

    q: queue.Queue
    peer: str
    election_id: tuple[int, int] | None = None
    role: str = ""
    arbitrated: bool = False
    device_id: int = 0


@dataclass
class _Counters:
    packet_in_no_primary: int = 0
    packet_in_malformed: int = 0
    digests_unconfigured: int = 0
    extra: dict = field(default_factory=dict)


class P4RuntimeService(p4runtime_pb2_grpc.P4RuntimeServicer):
    """P4Runtime for one ``Switch`` (see p4switch.switch)."""

    def __init__(self, switch, compiler=None) -> None:
        """``compiler(bundle) -> ir.Program`` compiles device configs (default: the front end,
        via ``device_config.compile_bundle``); tests substitute their own."""
        self.switch = switch
        self.compiler = compiler or device_config.compile_bundle
        self._mu = threading.RLock()
        self.config: PipelineConfig | None = None
        self.saved: PipelineConfig | None = None
        self.state = ServerState()
        self.streams: list[Stream] = []
        # Arbitration (spec 1.1+, §5.3-5.4), per role (one device): the primary stream, and the
        # highest election id ever seen — a client becomes primary only by claiming an id >= it,
        # and nobody is promoted when the primary leaves or steps down.
        self.primaries: dict[str, Stream] = {}
        self.highest: dict[str, tuple[int, int]] = {}
        self.counters = _Counters()
        self._list_ids = itertools.count(1)
        self._adopt_running_program()
        switch.add_packet_in_listener(self._on_packet_in)
        switch.add_digest_listener(self._on_digest)

    def close(self) -> None:
        """Detach from the switch and end every stream (used by ``stop_server``)."""
        self.switch.remove_packet_in_listener(self._on_packet_in)
        self.switch.remove_digest_listener(self._on_digest)
        with self._mu:
            for s in self.streams:
                s.q.put(_CLOSE)

    # ----------------------------------------------------------------------------------------
    # helpers
    # ----------------------------------------------------------------------------------------

    def _adopt_running_program(self) -> None:
        """A switch started with a program (``p4switch prog.p4``) serves it right away, with the
        P4Info p4switch generates, so clients can connect without pushing a pipeline."""
        program = getattr(self.switch, "program", None)
        if program is None:
            return
        try:
            p4info = build_p4info(program)
        except P4InfoError as e:
            log.warning("no P4Info for the running program: %s", e)
            return
        self.config = PipelineConfig(program, p4info, build_schema(p4info),
                                     device_config.running_device_config(program))

    def _current(self) -> PipelineConfig | None:
        """The committed config, adopting a program loaded behind our back (CLI, tests)."""
        program = getattr(self.switch, "program", None)
        if program is not None and (self.config is None or self.config.program is not program):
            self._adopt_running_program()
            self.state = ServerState()
        return self.config

    def _configured(self) -> PipelineConfig:
        """The committed config, for the RPCs that need one (FAILED_PRECONDITION without)."""
        cur = self._current()
        if cur is None:
            raise failed_precondition("no forwarding pipeline config has been set")
        return cur

    def _check_device(self, device_id: int) -> None:
        if device_id != self.switch.device_id:
            raise not_found(f"unknown device id {device_id} (this is device "
                            f"{self.switch.device_id})")

    def _primary(self, role: str) -> Stream | None:
        return self.primaries.get(role)

    def _check_primary(self, role: str, election_id: p4runtime_pb2.Uint128, has: bool) -> None:
        if role and role not in self.highest and not any(
                o.arbitrated and o.role == role for o in self.streams):
            raise not_found(f"unknown role {role!r}: no client has arbitrated for it")
        prim = self._primary(role)
        if prim is None:
            raise permission_denied("no primary client: a client becomes primary by sending a "
                                    "MasterArbitrationUpdate with an election id >= the "
                                    "highest seen")
        if not has or prim.election_id != _eid(election_id):
            raise permission_denied("only the primary client (highest election id) may write")

    # ----------------------------------------------------------------------------------------
    # Capabilities
    # ----------------------------------------------------------------------------------------

    def Capabilities(self, request, context):
        return p4runtime_pb2.CapabilitiesResponse(p4runtime_api_version=API_VERSION)

    # ----------------------------------------------------------------------------------------
    # Forwarding pipeline config
    # ----------------------------------------------------------------------------------------

    def _prepare(self, cfg: p4runtime_pb2.ForwardingPipelineConfig) -> PipelineConfig:
        """VERIFY: compile the bundle and check the P4Info against the program."""
        try:
            unwrapped = pi_device_config.unwrap(cfg.p4_device_config)
        except pi_device_config.WrapperError as e:
            raise invalid(str(e)) from None
        what = f"{pi_device_config.FULL_NAME}.device_data: " if unwrapped.wrapped else ""
        if unwrapped.data:
            bmv2 = bmv2json.sniff(unwrapped.data)
            if bmv2 is not None:  # p4c-bm2-ss output, as simple_switch_grpc takes it
                pushed = cfg.p4info if cfg.HasField("p4info") else None
                try:
                    program = bmv2json.load(bmv2, pushed, "bmv2.json")
                except bmv2json.Bmv2JsonError as e:
                    raise invalid(f"{what}{e}") from None
            else:
                try:
                    bundle = device_config.parse_bundle(unwrapped.data)
                except device_config.BundleError as e:
                    raise invalid(f"{what}{e}") from None
                try:
                    program = self.compiler(bundle)
                except Exception as e:  # P4CompileError (file:line:col) or a front-end failure
                    raise invalid(f"{what}P4 compile error: {e}") from None
            dev = unwrapped.data
        else:  # P4Info only: describe the program the switch already runs
            cur = self._current()
            if cur is None or cur.program is None:
                raise invalid("the config has no p4_device_config and no program is loaded "
                              "(see docs/device-config.md)")
            program, dev = cur.program, cur.device_config
        try:
            generated = build_p4info(program)
        except P4InfoError as e:
            raise invalid(f"cannot describe the program in P4Info: {e}") from None
        if cfg.HasField("p4info") and not is_empty(cfg.p4info):
            check_compatible(cfg.p4info, generated)
            p4info = cfg.p4info
        else:
            p4info = generated
        cookie = cfg.cookie.cookie if cfg.HasField("cookie") else 0
        return PipelineConfig(program, p4info, build_schema(p4info), dev, cookie,
                              unwrapped.reassign)

    def _commit(self, new: PipelineConfig) -> None:
        cur = self.config
        if cur is not None and cur.program is new.program and not new.reassign:
            self.config = new  # P4Info-only update: forwarding state is kept
            return
        try:
            self.switch.load_program(new.program)
        except Exception as e:
            raise invalid(f"cannot build a pipeline for the program: {e}") from None
        self.config = new
        self.state = ServerState()

    def _reconcile(self, new: PipelineConfig) -> None:
        """RECONCILE_AND_COMMIT: keep forwarding state. Possible without a reload when the
        program is unchanged (same device config); otherwise reported as unsupported, leaving
        the running pipeline untouched."""
        cur = self._current()
        if cur is None or new.reassign:  # reassign: PI drops the state before reconciling
            self._commit(new)
            return
        if new.device_config == cur.device_config:
            new.program = cur.program
            self.config = new
            return
        raise P4RTError(code_pb2.UNIMPLEMENTED,
                        "RECONCILE_AND_COMMIT to a different program is not supported; use "
                        "VERIFY_AND_COMMIT (forwarding state is then reset)")

    @staticmethod
    def _check_config_presence(request) -> None:
        """Spec §9: the VERIFY* and RECONCILE actions need a config (a P4Info, a device config
        or both); COMMIT takes none — it commits the one VERIFY_AND_SAVE stored."""
        cfg = request.config
        has = request.HasField("config") and bool(
            cfg.p4_device_config or (cfg.HasField("p4info") and not is_empty(cfg.p4info)))
        if request.action == SetAction.COMMIT:
            if request.HasField("config"):
                raise invalid("COMMIT takes no config: it commits the one saved by "
                              "VERIFY_AND_SAVE")
        elif request.action != SetAction.UNSPECIFIED and not has:
            raise invalid(f"{SetAction.Action.Name(request.action)} needs a config with a "
                          "p4info and/or a p4_device_config")

    def SetForwardingPipelineConfig(self, request, context):
        try:
            with self._mu:
                self._check_device(request.device_id)
                self._check_primary(request.role, request.election_id,
                                    request.HasField("election_id"))
                action = request.action
                self._check_config_presence(request)
                if action == SetAction.VERIFY:
                    self._prepare(request.config)
                elif action == SetAction.VERIFY_AND_SAVE:
                    self.saved = self._prepare(request.config)
                elif action == SetAction.VERIFY_AND_COMMIT:
                    self._commit(self._prepare(request.config))
                    self.saved = None
                elif action == SetAction.COMMIT:
                    if self.saved is None:
                        raise failed_precondition("COMMIT without a config saved by "
                                                  "VERIFY_AND_SAVE")
                    self._commit(self.saved)
                    self.saved = None
                elif action == SetAction.RECONCILE_AND_COMMIT:
                    self._reconcile(self._prepare(request.config))
                else:
                    raise invalid("SetForwardingPipelineConfig needs an action")
        except P4RTError as e:
            abort(context, e)
        return p4runtime_pb2.SetForwardingPipelineConfigResponse()

    def GetForwardingPipelineConfig(self, request, context):
        try:
            with self._mu:
                self._check_device(request.device_id)
                cur = self._configured()
                resp = p4runtime_pb2.GetForwardingPipelineConfigResponse()
                rt = request.response_type
                if cur.cookie:
                    resp.config.cookie.cookie = cur.cookie
                if rt in (GetType.ALL, GetType.P4INFO_AND_COOKIE):
                    resp.config.p4info.CopyFrom(cur.p4info)
                if rt in (GetType.ALL, GetType.DEVICE_CONFIG_AND_COOKIE):
                    resp.config.p4_device_config = cur.device_config
                return resp
        except P4RTError as e:
            abort(context, e)

    # ----------------------------------------------------------------------------------------
    # Write / Read
    # ----------------------------------------------------------------------------------------

    def Write(self, request, context):
        try:
            with self._mu:
                self._check_device(request.device_id)
                self._check_primary(request.role, request.election_id,
                                    request.HasField("election_id"))
                cur = self._configured()
                errors = self._apply(cur, request)
        except P4RTError as e:
            abort(context, e)
            return None
        if any(e is not None for e in errors):
            context.abort_with_status(batch_status(errors))
        return p4runtime_pb2.WriteResponse()

    def _apply(self, cur: PipelineConfig, request) -> list[P4RTError | None]:
        """Run a batch; the per-update errors (None: applied). Under ROLLBACK_ON_ERROR and
        DATAPLANE_ATOMIC one failure fails all: the others get ABORTED and nothing stays."""
        atomic = request.atomicity in (p4runtime_pb2.WriteRequest.ROLLBACK_ON_ERROR,
                                       p4runtime_pb2.WriteRequest.DATAPLANE_ATOMIC)
        pipe = self.switch.pipeline
        if pipe is None:
            raise failed_precondition("the switch has no pipeline")
        t0 = time.perf_counter()
        staged = hasattr(pipe, "table_batch") and all(_stageable(u) for u in request.updates)
        if staged:
            errors, held, held_cpu = self._apply_staged(cur, pipe, request.updates, atomic)
        else:
            with self.switch.lock:
                t1, c1 = time.perf_counter(), time.thread_time()
                errors = self._apply_direct(cur, self.switch.pipeline, request.updates, atomic)
                held, held_cpu = time.perf_counter() - t1, time.thread_time() - c1
        if len(request.updates) >= BIG_BATCH:
            log.info("Write of %d updates (%s, %s): %.1f ms, switch lock held %.1f ms "
                     "(%.1f ms CPU)", len(request.updates),
                     p4runtime_pb2.WriteRequest.Atomicity.Name(request.atomicity),
                     "staged" if staged else "direct",
                     (time.perf_counter() - t0) * 1e3, held * 1e3, held_cpu * 1e3)
        if atomic and any(e is not None for e in errors):
            aborted = P4RTError(code_pb2.ABORTED, "rolled back: another update failed")
            errors = [e if e is not None else aborted for e in errors]
            errors += [aborted] * (len(request.updates) - len(errors))
        return errors

    def _apply_staged(self, cur: PipelineConfig, pipe, updates, atomic: bool
                      ) -> tuple[list[P4RTError | None], float, float]:
        """Table entries only: validate and prepare every update into a pipeline TableBatch
        without the switch lock (packets keep flowing), then hold the lock only for the commit,
        which stores prepared objects. Nothing is applied before the commit, so a failed atomic
        batch has nothing to undo. (Writes are serialised by ``self._mu``, so the tables cannot
        change between preparing and committing.)"""
        batch = pipe.table_batch()
        ent = Entities(cur.schema, pipe, self.state, batch=batch)
        errors: list[P4RTError | None] = []
        for upd in updates:
            err = _one(ent.write, upd)
            errors.append(err)
            if err is not None and atomic:
                return errors, 0.0, 0.0
        with self.switch.lock:
            t0, c0 = time.perf_counter(), time.thread_time()
            batch.commit()
            held, held_cpu = time.perf_counter() - t0, time.thread_time() - c0
        ent.apply_cookies()
        return errors, held, held_cpu

    def _apply_direct(self, cur: PipelineConfig, pipe, updates, atomic: bool
                      ) -> list[P4RTError | None]:
        """Any entity: each update applied in turn (the caller holds the switch lock), with
        its undo kept under ``atomic`` and run in reverse order on the first failure."""
        ent = Entities(cur.schema, pipe, self.state, want_undo=atomic)
        errors: list[P4RTError | None] = []
        undo: list = []
        for upd in updates:
            err = _one(lambda u: undo.append(ent.write(u)), upd)
            errors.append(err)
            if err is not None and atomic:
                for fn in reversed(undo):
                    try:
                        fn()
                    except Exception:
                        log.exception("rollback step failed")
                break
        return errors

    def Read(self, request, context):
        """Copy what the request names under the switch lock, encode it outside (packets flow
        meanwhile), stream it in chunks outside ``self._mu``."""
        try:
            with self._mu:
                self._check_device(request.device_id)
                cur = self._configured()
                with self.switch.lock:
                    pipe = self.switch.pipeline
                    if pipe is None:
                        raise failed_precondition("the switch has no pipeline")
                    ent = Entities(cur.schema, pipe, self.state)
                    encoders = [ent.read(e) for e in request.entities]
                out = [x for enc in encoders for x in enc]
        except P4RTError as e:
            abort(context, e)
            return
        except api.StateError as e:
            abort(context, P4RTError.from_state(e))
            return
        for i in range(0, max(len(out), 1), READ_CHUNK):
            yield p4runtime_pb2.ReadResponse(entities=out[i:i + READ_CHUNK])

    # ----------------------------------------------------------------------------------------
    # StreamChannel: arbitration, packet I/O, digests
    # ----------------------------------------------------------------------------------------

    def StreamChannel(self, request_iterator, context):
        s = Stream(queue.Queue(), context.peer())
        with self._mu:
            self.streams.append(s)
        context.add_callback(lambda: s.q.put(_CLOSE))
        reader = threading.Thread(target=self._read_stream, args=(s, request_iterator, context),
                                  name="p4rt-stream-reader", daemon=True)
        reader.start()
        try:
            while True:
                msg = s.q.get()
                if msg is _CLOSE:
                    break
                if isinstance(msg, P4RTError):
                    abort(context, msg)
                    break
                yield msg
        finally:
            with self._mu:
                if s in self.streams:
                    self.streams.remove(s)
                    if self._primary(s.role) is s:  # no promotion: the role has no primary
                        del self.primaries[s.role]
                        self._announce(s.role)

    def _read_stream(self, s: Stream, it, context) -> None:
        try:
            for req in it:
                kind = req.WhichOneof("update")
                if kind == "arbitration":
                    self._arbitrate(s, req.arbitration)
                elif kind == "packet":
                    self._packet_out(s, req.packet)
                elif kind == "digest_ack":
                    pass  # lists are sent once; nothing is retransmitted, so acks need no state
                else:
                    self._stream_error(s, code_pb2.UNIMPLEMENTED,
                                       f"stream message {kind} is not supported")
        except Exception:  # the client went away (or cancelled)
            pass
        finally:
            s.q.put(_CLOSE)

    def _arbitrate(self, s: Stream, arb: p4runtime_pb2.MasterArbitrationUpdate) -> None:
        """Spec §5.3: the first update of a stream names the device and role (NOT_FOUND for an
        unknown device); later ones may not change them (FAILED_PRECONDITION). An election id
        used by another live client of the role ends the stream (INVALID_ARGUMENT). Then the
        client is primary iff its id is >= the highest ever seen for the role."""
        with self._mu:
            role = arb.role.name
            eid = _eid(arb.election_id) if arb.HasField("election_id") else None
            if not s.arbitrated:
                if arb.device_id != self.switch.device_id:
                    s.q.put(not_found(f"unknown device id {arb.device_id}"))
                    return
            elif arb.device_id != s.device_id:
                s.q.put(failed_precondition("a stream cannot change its device id "
                                            f"({s.device_id} -> {arb.device_id})"))
                return
            elif role != s.role:
                s.q.put(failed_precondition("a stream cannot change its role: open a new "
                                            "stream for another role"))
                return
            if eid is not None and any(o is not s and o.arbitrated and o.role == role
                                       and o.election_id == eid for o in self.streams):
                s.q.put(invalid(f"election id {eid} is already used by another client"))
                return
            was_primary = self._primary(role) is s
            s.role, s.election_id, s.arbitrated, s.device_id = role, eid, True, arb.device_id
            past = self.highest.get(role)
            if eid is not None and (past is None or eid >= past):
                self.primaries[role] = s
                self.highest[role] = eid
                self._announce(role)
            elif was_primary:  # stepped down: nobody else is promoted
                del self.primaries[role]
                self._announce(role)
            else:
                self._send_arbitration(s, self._primary(role))

    def _announce(self, role: str) -> None:
        """Tell every stream of the role who is primary: the others first, the primary last
        (the spec's order for a change of primary)."""
        prim = self._primary(role)
        for o in self.streams:
            if o.arbitrated and o.role == role and o is not prim:
                self._send_arbitration(o, prim)
        if prim is not None:
            self._send_arbitration(prim, prim)

    def _send_arbitration(self, s: Stream, primary: Stream | None) -> None:
        """Spec §5.4: the primary gets OK, a backup ALREADY_EXISTS (a primary exists), everybody
        NOT_FOUND when there is no primary; election_id is the highest ever seen for the role
        (the primary's, if there is one), unset if there never was a primary."""
        resp = p4runtime_pb2.StreamMessageResponse()
        a = resp.arbitration
        a.device_id = self.switch.device_id
        if s.role:
            a.role.name = s.role
        highest = self.highest.get(s.role)
        if highest is not None:
            a.election_id.high, a.election_id.low = highest
        if primary is s:
            a.status.code = code_pb2.OK
            a.status.message = "primary"
        elif primary is not None:
            a.status.code = code_pb2.ALREADY_EXISTS
            a.status.message = "backup: another client is primary"
        else:
            a.status.code = code_pb2.NOT_FOUND
            a.status.message = "no primary client"
        s.q.put(resp)

    def _stream_error(self, s: Stream, code: int, msg: str,
                      packet: p4runtime_pb2.PacketOut | None = None) -> None:
        resp = p4runtime_pb2.StreamMessageResponse()
        resp.error.canonical_code = code
        resp.error.message = msg
        if packet is not None:
            resp.error.packet_out.packet_out.CopyFrom(packet)
        s.q.put(resp)

    # packet-out ---------------------------------------------------------------------------

    def _packet_out(self, s: Stream, pkt: p4runtime_pb2.PacketOut) -> None:
        with self._mu:
            prim = self._primary(s.role)
            cur = self._current()
        if prim is not s:
            self._stream_error(s, code_pb2.PERMISSION_DENIED,
                               "only the primary client may send packets", pkt)
            return
        if cur is None:
            self._stream_error(s, code_pb2.FAILED_PRECONDITION, "no pipeline config", pkt)
            return
        try:
            data = build_packet_out(cur, pkt)
        except P4RTError as e:
            self._stream_error(s, e.code, e.message, pkt)
            return
        if self.switch.cpu_port is None:
            self._stream_error(s, code_pb2.FAILED_PRECONDITION,
                               "the switch has no CPU port (start it with --cpu-port)", pkt)
            return
        self.switch.packet_out(data)

    # packet-in / digests (switch loop thread) ------------------------------------------------

    def _to_primary(self, msg: p4runtime_pb2.StreamMessageResponse) -> bool:
        with self._mu:
            prim = self._primary("")
            if prim is None:
                return False
            prim.q.put(msg)
            return True

    def _on_packet_in(self, frame: bytes) -> None:
        cur = self.config
        if cur is None:
            return
        try:
            pin = parse_packet_in(cur, frame)
        except P4RTError:
            self.counters.packet_in_malformed += 1
            return
        resp = p4runtime_pb2.StreamMessageResponse()
        resp.packet.CopyFrom(pin)
        if not self._to_primary(resp):
            self.counters.packet_in_no_primary += 1

    def _on_digest(self, digest: api.Digest) -> None:
        cur = self.config
        if cur is None:
            return
        did = cur.schema.digest_by_name.get(digest.name)
        if did is None:
            did = next((i for n, i in cur.schema.digest_by_name.items()
                        if n.split(".")[-1] == digest.name.split(".")[-1]), None)
        if did is None or did not in self.state.digest_configs:
            self.counters.digests_unconfigured += 1
            return
        resp = p4runtime_pb2.StreamMessageResponse()
        dl = resp.digest
        dl.digest_id = did
        dl.list_id = next(self._list_ids)
        dl.timestamp = time.time_ns()
        dl.data.append(digest_data(cur, did, digest.values))
        self._to_primary(resp)


# --------------------------------------------------------------------------------------------
# Write helpers
# --------------------------------------------------------------------------------------------


def _stageable(upd: p4runtime_pb2.Update) -> bool:
    """Updates a pipeline TableBatch can stage: entries of match tables (not default entries,
    not other entities, whose writes are applied under the lock with an undo)."""
    return (upd.entity.WhichOneof("entity") == EntityKind.TABLE_ENTRY
            and not upd.entity.table_entry.is_default_action)


def _one(write, upd) -> P4RTError | None:
    """Run one update; its error (a bug is reported as INTERNAL, never half-applied state)."""
    try:
        write(upd)
        return None
    except P4RTError as e:
        return e
    except api.StateError as e:
        return P4RTError.from_state(e)
    except Exception as e:
        log.exception("Write update failed unexpectedly")
        return P4RTError(code_pb2.INTERNAL, f"internal error: {e}")


# --------------------------------------------------------------------------------------------
# Controller headers and digest data
# --------------------------------------------------------------------------------------------


def _header_fields(cur: PipelineConfig, role: str) -> list[tuple[str, int, int | None]]:
    """(field name, width, P4Info metadata id or None for padding) of the controller header."""
    h = cur.program.controller_headers.get(role) if cur.program is not None else None
    if h is None:
        return []
    metas = cur.schema.packet_in if role == "packet_in" else cur.schema.packet_out
    ids = {m.name: m.id for m in metas}
    return [(f.name, ir.type_width(f.type), ids.get(f.name)) for f in controller_fields(h)]


def build_packet_out(cur: PipelineConfig, pkt: p4runtime_pb2.PacketOut) -> bytes:
    """packet_out header (fields in declaration order, padding zero) + payload, bit-packed."""
    fields = _header_fields(cur, "packet_out")
    if not fields:
        return bytes(pkt.payload)
    widths = {mid: w for _, w, mid in fields if mid is not None}
    values: dict[int, int] = {}
    for md in pkt.metadata:
        if md.metadata_id not in widths:
            raise invalid(f"unknown packet_out metadata id {md.metadata_id}")
        if md.metadata_id in values:
            raise invalid(f"packet_out metadata id {md.metadata_id} given twice")
        v = int.from_bytes(md.value, "big")
        if not md.value or v.bit_length() > widths[md.metadata_id]:
            raise invalid(f"packet_out metadata id {md.metadata_id} does not fit in "
                          f"{widths[md.metadata_id]} bits")
        values[md.metadata_id] = v
    hdr, hbits = 0, 0
    for _, w, mid in fields:
        hdr = (hdr << w) | (values.get(mid, 0) if mid is not None else 0)
        hbits += w
    payload = bytes(pkt.payload)
    if hbits % 8 == 0:
        return hdr.to_bytes(hbits // 8, "big") + payload
    total = hbits + 8 * len(payload)
    whole = (hdr << (8 * len(payload))) | int.from_bytes(payload, "big")
    nbytes = (total + 7) // 8
    return (whole << (nbytes * 8 - total)).to_bytes(nbytes, "big")


def parse_packet_in(cur: PipelineConfig, frame: bytes) -> p4runtime_pb2.PacketIn:
    """Split a CPU-port frame into packet_in metadata and payload."""
    pin = p4runtime_pb2.PacketIn()
    fields = _header_fields(cur, "packet_in")
    hbits = sum(w for _, w, _ in fields)
    if len(frame) * 8 < hbits:
        raise invalid("frame shorter than the packet_in header")
    whole = int.from_bytes(frame, "big")
    total = len(frame) * 8
    pos = 0
    for _, w, mid in fields:
        v = (whole >> (total - pos - w)) & ((1 << w) - 1)
        pos += w
        if mid is not None:
            pin.metadata.add(metadata_id=mid, value=encode(v))
    if hbits % 8 == 0:
        pin.payload = frame[hbits // 8:]
    else:
        rest = total - hbits
        pin.payload = ((whole & ((1 << rest) - 1)) << (8 - rest % 8) % 8).to_bytes(
            (rest + 7) // 8, "big")
    return pin


def digest_data(cur: PipelineConfig, did: int, values: dict[str, int]) -> p4data_pb2.P4Data:
    """A digest's fields as P4Data struct members, in the order of the P4Info type spec."""
    d = next(x for x in cur.p4info.digests if x.preamble.id == did)
    data = p4data_pb2.P4Data()
    spec = d.type_spec
    if spec.WhichOneof("type_spec") == "struct":
        st = cur.p4info.type_info.structs[spec.struct.name]
        for m in st.members:
            v = int(values.get(m.name, 0))
            if m.type_spec.WhichOneof("type_spec") == "bool":
                data.struct.members.add(bool=bool(v))
            else:
                data.struct.members.add(bitstring=encode(v))
    else:
        data.bitstring = encode(int(next(iter(values.values()), 0)))
    return data


# --------------------------------------------------------------------------------------------
# Server start / stop
# --------------------------------------------------------------------------------------------


def start_server(switch, address: str = "127.0.0.1:9559", *, max_workers: int = 16,
                 compiler=None, service_class: type[P4RuntimeService] = P4RuntimeService
                 ) -> grpc.Server:
    """Start the P4Runtime service for ``switch`` on ``address`` (non-blocking). The returned
    server's ``p4runtime`` attribute is the service; stop it with ``stop_server``.
    ``service_class``: a subclass for another kind of switch (runtime/schema_only.py).

    OSError if the address is taken. gRPC's default SO_REUSEPORT is off here: with it, a
    second switch started on a busy port binds too, and the kernel splits the controller's
    connections between the two servers, so a client of one switch is answered by the other
    ("unknown device id")."""
    from concurrent import futures

    service = service_class(switch, compiler)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=max_workers,
                                                    thread_name_prefix="p4rt"),
                         options=[("grpc.max_receive_message_length", 256 << 20),
                                  ("grpc.max_send_message_length", 256 << 20),
                                  ("grpc.so_reuseport", 0)])
    p4runtime_pb2_grpc.add_P4RuntimeServicer_to_server(service, server)
    try:
        port = server.add_insecure_port(address)
    except RuntimeError:  # grpcio >= 1.5x raises where older versions returned 0
        port = 0
    if port == 0:
        service.close()
        raise OSError(f"cannot listen on {address}: address in use or not local")
    server.start()
    server.p4runtime = service
    server.bound_port = port
    _orig_stop = server.stop

    def stop(grace: float | None = None):
        """Graceful stop: end streams first so their generators return, then stop gRPC."""
        service.close()
        return _orig_stop(grace)

    server.stop = stop
    return server


def stop_server(server: grpc.Server, grace: float | None = 0.5) -> None:
    server.stop(grace).wait()
