"""One P4Runtime client per switch, on the p4runtime 1.4.1 protos (no p4runtime-shell globals).

A :class:`SwitchConnection` holds a gRPC channel and the StreamChannel: it arbitrates as primary
with its election id, pushes the pipeline (VERIFY_AND_COMMIT), writes batches, reads with
wildcards, and sends/receives packets. A reader thread owns the stream; when the stream breaks
(the switch process died) it reconnects with exponential backoff, re-arbitrates and calls
``on_reconnect`` so the reconcile loop can re-program the switch. Connections to different
switches are independent, so a FabricController drives them concurrently from a thread pool.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import grpc
from google.rpc import code_pb2, status_pb2
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

log = logging.getLogger("p4fabric.controller")

_CLOSE = object()
MAX_MSG = 64 << 20


class SwitchError(RuntimeError):
    """A switch could not be reached, arbitrated or programmed; the message names the switch."""


@dataclass
class PacketIn:
    switch: str
    payload: bytes
    metadata: p4runtime_pb2.PacketIn = field(repr=False)


def _rpc_details(err: grpc.RpcError) -> str:
    """The gRPC status plus the per-update p4.v1.Error messages of a failed Write."""
    code = err.code().name if hasattr(err, "code") and err.code() else "UNKNOWN"
    text = f"{code}: {err.details() if hasattr(err, 'details') else err}"
    for key, value in (err.trailing_metadata() or ()) if hasattr(err, "trailing_metadata") \
            else ():
        if key == "grpc-status-details-bin":
            st = status_pb2.Status.FromString(value)
            msgs = []
            for i, any_ in enumerate(st.details):
                e = p4runtime_pb2.Error()
                if any_.Unpack(e) and e.canonical_code != code_pb2.OK:
                    msgs.append(f"update {i}: {code_pb2.Code.Name(e.canonical_code)} {e.message}")
            if msgs:
                text += " [" + "; ".join(msgs[:5]) + (" ..." if len(msgs) > 5 else "") + "]"
    return text


class SwitchConnection:
    """P4Runtime client of one switch (device ``device_id`` at ``addr``)."""

    def __init__(self, name: str, addr: str, device_id: int,
                 election_id: tuple[int, int] = (0, 1), *,
                 on_packet_in: Callable[[PacketIn], None] | None = None,
                 on_reconnect: Callable[[SwitchConnection], None] | None = None,
                 backoff: tuple[float, float] = (0.05, 1.0)) -> None:
        self.name, self.addr, self.device_id = name, addr, device_id
        self.election_id = election_id
        self.on_packet_in = on_packet_in
        self.on_reconnect = on_reconnect
        self.backoff = backoff
        self.primary = threading.Event()
        self.reconnects = 0
        self._closing = False
        self._opening = False
        self._lock = threading.Lock()
        self._channel: grpc.Channel | None = None
        self._stub: p4runtime_pb2_grpc.P4RuntimeStub | None = None
        self._out: queue.Queue[object] | None = None
        self._reader: threading.Thread | None = None
        self._arb: queue.Queue[p4runtime_pb2.MasterArbitrationUpdate | Exception] = queue.Queue()

    # ---- connection --------------------------------------------------------------------------
    def connect(self, timeout: float = 10.0) -> None:
        """Open channel + stream and become primary; SwitchError on failure or timeout."""
        deadline = time.monotonic() + timeout
        last = "not reachable"
        while True:
            try:
                self._open(max(0.1, deadline - time.monotonic()))
                return
            except SwitchError as e:
                last = str(e)
            if time.monotonic() >= deadline or self._closing:
                raise SwitchError(f"switch {self.name} ({self.addr}, device {self.device_id}): "
                                  f"{last}")
            time.sleep(min(0.2, max(0.0, deadline - time.monotonic())))

    def _open(self, timeout: float) -> None:
        self._opening = True  # a stream dying meanwhile is this call's failure, not a reconnect
        try:
            self._open_stream(timeout)
        except BaseException:
            self._drop_channel()
            raise
        finally:
            self._opening = False

    def _open_stream(self, timeout: float) -> None:
        self._drop_channel()
        opts = [("grpc.max_receive_message_length", MAX_MSG),
                ("grpc.max_send_message_length", MAX_MSG)]
        channel = grpc.insecure_channel(self.addr, options=opts)
        try:
            grpc.channel_ready_future(channel).result(timeout=timeout)
        except grpc.FutureTimeoutError:
            channel.close()
            raise SwitchError("gRPC channel not ready (is the switch running?)") from None
        out: queue.Queue[object] = queue.Queue()
        stub = p4runtime_pb2_grpc.P4RuntimeStub(channel)
        stream = stub.StreamChannel(iter(out.get, _CLOSE))
        self._arb = queue.Queue()
        with self._lock:
            self._channel, self._stub, self._out = channel, stub, out
        self._reader = threading.Thread(target=self._read_stream, args=(stream, out),
                                        name=f"p4rt-{self.name}", daemon=True)
        self._reader.start()
        req = p4runtime_pb2.StreamMessageRequest()
        req.arbitration.device_id = self.device_id
        req.arbitration.election_id.high, req.arbitration.election_id.low = self.election_id
        out.put(req)
        try:
            arb = self._arb.get(timeout=timeout)
        except queue.Empty:
            raise SwitchError("no arbitration answer") from None
        if isinstance(arb, Exception):
            raise SwitchError(f"stream failed: {arb}")
        if arb.status.code != code_pb2.OK:
            seen = (arb.election_id.high, arb.election_id.low)
            why = (f"; election id {seen} was seen before (a primary needs >= the highest seen)"
                   if arb.status.code == code_pb2.NOT_FOUND and seen > self.election_id else "")
            raise SwitchError(f"not primary: {code_pb2.Code.Name(arb.status.code)} "
                              f"{arb.status.message}{why}")
        self.primary.set()

    def _read_stream(self, stream: Iterable[p4runtime_pb2.StreamMessageResponse],
                     out: queue.Queue[object]) -> None:
        err: Exception | None = None
        try:
            for msg in stream:
                kind = msg.WhichOneof("update")
                if kind == "arbitration":
                    if msg.arbitration.status.code == code_pb2.OK:
                        self.primary.set()
                    else:
                        self.primary.clear()
                    self._arb.put(msg.arbitration)
                elif kind == "packet" and self.on_packet_in is not None:
                    try:
                        self.on_packet_in(PacketIn(self.name, msg.packet.payload, msg.packet))
                    except Exception:  # a bad handler must not kill the stream
                        log.exception("%s: packet-in handler failed", self.name)
                elif kind == "error":
                    log.warning("%s: stream error %s", self.name, msg.error.message)
        except grpc.RpcError as e:
            err = e
        self.primary.clear()
        self._arb.put(err or SwitchError("stream closed"))
        with self._lock:
            current = out is self._out
        if current and not self._closing and not self._opening:
            threading.Thread(target=self._reconnect, name=f"p4rt-reconnect-{self.name}",
                             daemon=True).start()

    def _reconnect(self) -> None:
        delay = self.backoff[0]
        log.info("%s: connection lost, reconnecting", self.name)
        while not self._closing:
            try:
                self._open(timeout=max(delay, 0.5))
            except SwitchError:
                time.sleep(delay)
                delay = min(delay * 2, self.backoff[1])
                continue
            self.reconnects += 1
            log.info("%s: reconnected (primary)", self.name)
            if self.on_reconnect is not None:
                try:
                    self.on_reconnect(self)
                except Exception:
                    log.exception("%s: reconnect handler failed", self.name)
            return

    def _drop_channel(self) -> None:
        with self._lock:
            out, channel = self._out, self._channel
            self._out = self._channel = self._stub = None
        if out is not None:
            out.put(_CLOSE)
        if channel is not None:
            channel.close()

    def close(self) -> None:
        """Close the stream and channel; the switch keeps running (and its state)."""
        self._closing = True
        self.primary.clear()
        self._drop_channel()

    # ---- RPCs --------------------------------------------------------------------------------
    def _stub_or_fail(self) -> p4runtime_pb2_grpc.P4RuntimeStub:
        with self._lock:
            stub = self._stub
        if stub is None:
            raise SwitchError(f"switch {self.name}: not connected")
        return stub

    def _eid(self, msg: Any) -> None:   # any request message with an election_id
        msg.election_id.high, msg.election_id.low = self.election_id

    def set_pipeline(self, p4info: p4info_pb2.P4Info, device_config: bytes,
                     timeout: float = 60.0, cookie: int | None = None) -> None:
        req = p4runtime_pb2.SetForwardingPipelineConfigRequest(
            device_id=self.device_id,
            action=p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT)
        self._eid(req)
        req.config.p4info.CopyFrom(p4info)
        req.config.p4_device_config = device_config
        if cookie is not None:
            req.config.cookie.cookie = cookie
        try:
            self._stub_or_fail().SetForwardingPipelineConfig(req, timeout=timeout)
        except grpc.RpcError as e:
            raise SwitchError(f"switch {self.name}: SetForwardingPipelineConfig: "
                              f"{_rpc_details(e)}") from None

    def _get_config(self, response_type: int,
                    timeout: float) -> p4runtime_pb2.ForwardingPipelineConfig | None:
        """GetForwardingPipelineConfig's config; None when the switch has no pipeline."""
        req = p4runtime_pb2.GetForwardingPipelineConfigRequest(device_id=self.device_id,
                                                               response_type=response_type)
        try:
            return self._stub_or_fail().GetForwardingPipelineConfig(req, timeout=timeout).config
        except grpc.RpcError as e:
            if e.code() == grpc.StatusCode.FAILED_PRECONDITION:
                return None
            raise SwitchError(f"switch {self.name}: GetForwardingPipelineConfig: "
                              f"{_rpc_details(e)}") from None

    def get_cookie(self, timeout: float = 10.0) -> int | None:
        """The running pipeline's cookie; None when there is no pipeline or no cookie."""
        cfg = self._get_config(
            p4runtime_pb2.GetForwardingPipelineConfigRequest.COOKIE_ONLY, timeout)
        return cfg.cookie.cookie if cfg is not None and cfg.HasField("cookie") else None

    def get_p4info(self, timeout: float = 10.0) -> p4info_pb2.P4Info | None:
        """The P4Info the switch runs, None when it has no pipeline (e.g. just restarted)."""
        cfg = self._get_config(
            p4runtime_pb2.GetForwardingPipelineConfigRequest.P4INFO_AND_COOKIE, timeout)
        return cfg.p4info if cfg is not None and cfg.HasField("p4info") else None

    def write(self, updates: Sequence[p4runtime_pb2.Update], *, batch: int = 5000,
              atomicity: int = p4runtime_pb2.WriteRequest.CONTINUE_ON_ERROR,
              timeout: float = 60.0) -> None:
        """Write ``updates`` in batches of ``batch``; SwitchError lists the failed updates."""
        stub = self._stub_or_fail()
        for i in range(0, len(updates), batch):
            req = p4runtime_pb2.WriteRequest(device_id=self.device_id, atomicity=atomicity)
            self._eid(req)
            req.updates.extend(updates[i:i + batch])
            try:
                stub.Write(req, timeout=timeout)
            except grpc.RpcError as e:
                raise SwitchError(f"switch {self.name}: Write: {_rpc_details(e)}") from None

    def read(self, entities: Iterable[p4runtime_pb2.Entity], timeout: float = 30.0
             ) -> list[p4runtime_pb2.Entity]:
        req = p4runtime_pb2.ReadRequest(device_id=self.device_id)
        req.entities.extend(entities)
        try:
            return [e for resp in self._stub_or_fail().Read(req, timeout=timeout)
                    for e in resp.entities]
        except grpc.RpcError as e:
            raise SwitchError(f"switch {self.name}: Read: {_rpc_details(e)}") from None

    def packet_out(self, packet: p4runtime_pb2.PacketOut) -> None:
        with self._lock:
            out = self._out
        if out is None or not self.primary.is_set():
            raise SwitchError(f"switch {self.name}: not connected as primary")
        req = p4runtime_pb2.StreamMessageRequest()
        req.packet.CopyFrom(packet)
        out.put(req)

    @property
    def connected(self) -> bool:
        return self.primary.is_set()
