"""A P4Runtime server owns its port: a second switch on a busy address is refused at start,
not bound beside the first (gRPC's default SO_REUSEPORT would let it, and the kernel would
then hand the controller's connections to either switch)."""

from __future__ import annotations

import pytest
from runtime_client import RawClient

from p4switch.runtime import start_server
from p4switch.switch import Switch
from tests.netutil import serve_free


def test_a_second_server_on_a_busy_port_is_refused_and_the_first_keeps_answering() -> None:
    first = Switch(device_id=1, cpu_port=None)
    server, addr = serve_free(first)
    try:
        with pytest.raises(OSError, match="cannot listen"):
            start_server(Switch(device_id=2, cpu_port=None), addr)
        for _ in range(8):  # every new connection reaches device 1
            client = RawClient(addr, device_id=1)
            try:
                answer = client.arbitrate(device_id=1)
                assert not isinstance(answer, Exception), answer
                assert answer.arbitration.device_id == 1
            finally:
                client.close()
    finally:
        server.stop(0).wait()
