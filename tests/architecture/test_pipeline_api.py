"""Both data planes implement the pipeline's contract, ``p4switch.pipeline.api.PipelineAPI``:
every method of the protocol with the protocol's parameters, so the switch and the P4Runtime
server drive the Python pipeline and the eBPF one unchanged. (mypy checks both against the
protocol where the switches build them: ``Switch._build_pipeline`` and ``EbpfSwitch``'s
``pipeline_factory``.)"""

from __future__ import annotations

import inspect
from collections.abc import Callable

import pytest

from p4switch.ebpf.dataplane import EbpfPipeline
from p4switch.pipeline import api
from p4switch.pipeline.pipeline import Pipeline


def _methods(proto: type) -> list[str]:
    """The public methods a protocol declares, its bases' included."""
    return sorted({name for cls in proto.__mro__ if cls.__module__ == api.__name__
                   for name, v in vars(cls).items()
                   if inspect.isfunction(v) and not name.startswith("_")})


def _params(fn: Callable[..., object]) -> list[str]:
    return list(inspect.signature(fn).parameters)


def test_the_protocol_has_the_packet_path_and_the_state_operations() -> None:
    names = _methods(api.PipelineAPI)
    assert {"ingress", "egress", "process", "process_fast", "table_add", "table_batch",
            "counter_read", "register_write", "value_set_set"} <= set(names)
    assert _methods(api.PacketPath) == ["egress", "ingress"]


@pytest.mark.parametrize("impl", [Pipeline, EbpfPipeline], ids=lambda c: c.__name__)
def test_implements_every_method_with_the_protocols_parameters(impl: type) -> None:
    for name in _methods(api.PipelineAPI):
        want = _params(getattr(api.PipelineAPI, name))
        got = getattr(impl, name, None)
        assert callable(got), f"{impl.__name__} lacks {name}"
        assert _params(got)[:len(want)] == want, f"{impl.__name__}.{name}{inspect.signature(got)}"


def test_a_missing_method_or_renamed_parameter_is_caught() -> None:
    class Partial(Pipeline):
        def table_add(self, name: str, entry: api.TableEntry) -> None: ...  # renamed: table

    with pytest.raises(AssertionError, match="Partial.table_add"):
        test_implements_every_method_with_the_protocols_parameters(Partial)
