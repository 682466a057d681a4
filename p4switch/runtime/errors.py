"""P4Runtime errors: one exception type carrying a google.rpc code, and the gRPC plumbing that
turns it (or a batch of per-update errors) into the status a P4Runtime client expects.

Why hand-built status details: ``grpcio-status`` is not a dependency, and the wire format is
simple — the serialized ``google.rpc.Status`` travels in the ``grpc-status-details-bin``
trailer, which is where p4runtime-shell (and every other client) looks for per-update errors.
"""

from __future__ import annotations

from dataclasses import dataclass

import grpc
from google.protobuf import any_pb2
from google.rpc import code_pb2, status_pb2
from p4.v1 import p4runtime_pb2

from p4switch.pipeline import api

# google.rpc.Code number -> grpc.StatusCode
_GRPC_CODES = {c.value[0]: c for c in grpc.StatusCode}


class P4RTError(Exception):
    """A rejected request or update: ``code`` is a google.rpc.Code number."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def __str__(self) -> str:
        return f"{code_pb2.Code.Name(self.code)}: {self.message}"

    @classmethod
    def from_state(cls, e: api.StateError) -> P4RTError:
        """Pipeline StateError codes are named (and numbered) as google.rpc.Code."""
        return cls(e.code.value, e.message)


def invalid(msg: str) -> P4RTError:
    return P4RTError(code_pb2.INVALID_ARGUMENT, msg)


def not_found(msg: str) -> P4RTError:
    return P4RTError(code_pb2.NOT_FOUND, msg)


def out_of_range(msg: str) -> P4RTError:
    return P4RTError(code_pb2.OUT_OF_RANGE, msg)


def permission_denied(msg: str) -> P4RTError:
    return P4RTError(code_pb2.PERMISSION_DENIED, msg)


def failed_precondition(msg: str) -> P4RTError:
    return P4RTError(code_pb2.FAILED_PRECONDITION, msg)


def unimplemented(msg: str) -> P4RTError:
    return P4RTError(code_pb2.UNIMPLEMENTED, msg)


@dataclass(frozen=True)
class _Status(grpc.Status):
    """A grpc.Status with binary details, for ``ServicerContext.abort_with_status``."""

    code: grpc.StatusCode
    details: str
    trailing_metadata: tuple


def grpc_status(code: int, message: str, details: list[any_pb2.Any] | None = None) -> _Status:
    rpc = status_pb2.Status(code=code, message=message)
    if details:
        rpc.details.extend(details)
    return _Status(
        code=_GRPC_CODES.get(code, grpc.StatusCode.UNKNOWN),
        details=message,
        trailing_metadata=(("grpc-status-details-bin", rpc.SerializeToString()),),
    )


def batch_status(errors: list[P4RTError | None]) -> _Status:
    """Spec §Error reporting: a Write with any failed update ends with UNKNOWN, and the details
    hold one ``p4.v1.Error`` per update, in request order (OK for those that succeeded).

    The details travel in a trailer, and gRPC clients refuse trailers above 16 KiB by default
    (``grpc.max_metadata_size``). So the form is kept as small as the spec allows: OK entries
    are empty Errors and ABORTED ones (the rest of a failed atomic batch) carry only the code,
    about 39 bytes an update, so ~400 updates fit a default client; only real failures carry a
    message. Larger failed batches need the client to raise its limit (docs/p4runtime.md)."""
    details = []
    failed = 0
    for err in errors:
        e = p4runtime_pb2.Error()
        if err is not None:
            failed += err.code != code_pb2.ABORTED
            e.canonical_code = err.code
            if err.code != code_pb2.ABORTED:
                e.message = err.message
                e.space = "p4switch"
        a = any_pb2.Any()
        a.Pack(e)
        details.append(a)
    return grpc_status(code_pb2.UNKNOWN, f"{failed} of {len(errors)} updates failed", details)


def abort(context: grpc.ServicerContext, err: P4RTError) -> None:
    """End the RPC with ``err``'s code (raises, as ``context.abort`` does)."""
    context.abort_with_status(grpc_status(err.code, err.message))
