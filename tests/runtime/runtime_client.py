"""A minimal P4Runtime client on the raw protos, for requests real clients never send."""

from __future__ import annotations

import queue
import threading

import grpc
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from p4switch import device_config

DEVICE_ID = 1


class RawClient:
    """A minimal P4Runtime client on the raw protos (to send what real clients never would)."""

    def __init__(self, addr: str, election_id: tuple[int, int] | None = (0, 1),
                 device_id: int = DEVICE_ID, options: list | None = None) -> None:
        self.channel = grpc.insecure_channel(addr, options=options)
        self.stub = p4runtime_pb2_grpc.P4RuntimeStub(self.channel)
        self.device_id = device_id
        self.election_id = election_id
        self.out: queue.Queue = queue.Queue()
        self.inq: queue.Queue = queue.Queue()
        self.stream = self.stub.StreamChannel(iter(self.out.get, None))
        self._t = threading.Thread(target=self._recv, daemon=True)
        self._t.start()

    def _recv(self) -> None:
        try:
            for msg in self.stream:
                self.inq.put(msg)
        except grpc.RpcError as e:
            self.inq.put(e)

    def arbitrate(self, election_id: tuple[int, int] | None = None, *, role: str = "",
                  device_id: int | None = None):
        """Send a MasterArbitrationUpdate; the answer (or the RpcError ending the stream)."""
        if election_id is not None:
            self.election_id = election_id
        req = p4runtime_pb2.StreamMessageRequest()
        req.arbitration.device_id = self.device_id if device_id is None else device_id
        if role:
            req.arbitration.role.name = role
        if self.election_id is not None:
            req.arbitration.election_id.high, req.arbitration.election_id.low = self.election_id
        self.out.put(req)
        return self.next_message("arbitration")

    def next_message(self, kind: str, timeout: float = 5.0):
        while True:
            msg = self.inq.get(timeout=timeout)
            if isinstance(msg, grpc.RpcError):
                return msg
            if msg.WhichOneof("update") == kind:
                return msg

    def send(self, req: p4runtime_pb2.StreamMessageRequest) -> None:
        self.out.put(req)

    def write(self, *updates, atomicity=0, election_id=None, role: str = ""):
        req = p4runtime_pb2.WriteRequest(device_id=self.device_id, atomicity=atomicity,
                                         role=role)
        eid = election_id if election_id is not None else self.election_id
        if eid is not None:
            req.election_id.high, req.election_id.low = eid
        req.updates.extend(updates)
        return self.stub.Write(req)

    def read(self, *entities):
        req = p4runtime_pb2.ReadRequest(device_id=self.device_id)
        req.entities.extend(entities)
        out = []
        for resp in self.stub.Read(req):
            out.extend(resp.entities)
        return out

    def set_pipeline(self, p4info_msg, device_cfg: bytes, action=None):
        A = p4runtime_pb2.SetForwardingPipelineConfigRequest
        req = A(device_id=self.device_id, action=action or A.VERIFY_AND_COMMIT)
        if self.election_id is not None:
            req.election_id.high, req.election_id.low = self.election_id
        if p4info_msg is not None:
            req.config.p4info.CopyFrom(p4info_msg)
        req.config.p4_device_config = device_cfg
        return self.stub.SetForwardingPipelineConfig(req)

    def close(self) -> None:
        self.out.put(None)
        self.channel.close()


#: Channel options of a client that reads the per-update errors of big failed batches: the
#: details trailer of a failed Write grows ~39 bytes an update, and gRPC's default limit on
#: received metadata is 8 KiB soft / 16 KiB hard (docs/p4runtime.md, "Big failed batches").
WIDE_METADATA = [("grpc.max_metadata_size", 16 << 20)]


def sample_bundle_bytes() -> bytes:
    return device_config.Bundle("sample.p4", {"sample.p4": "// sample\n"}).to_bytes()
