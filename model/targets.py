"""The switch implementations a fabric can run fabric.p4 on: the one list ``--target``, the YAML
``parameters.target``, the controller's program compilation and the Mininet node classes use."""

from __future__ import annotations

from enum import StrEnum


class Target(StrEnum):
    P4SWITCH = "p4switch"
    """p4fabric's own target (p4switch/): P4Info and a source bundle, compiled in the switch."""
    BMV2 = "bmv2"
    """BMv2 simple_switch_grpc: the program compiled by p4c-bm2-ss (JSON + P4Info)."""
    EBPF = "ebpf"
    """p4switch --target ebpf: the program in the kernel (tc); the same device config as p4switch."""


TARGET_NAMES: tuple[str, ...] = tuple(t.value for t in Target)
"""The names, in declaration order (``str in Target`` raises TypeError on Python 3.11)."""

AUTO_TARGET = "auto"
"""A command line's ``--target auto``: the kernel data plane where this machine can load it
(its switches cost the hosts no CPU, so the emulated fabric runs at a much smaller TDF), else
p4fabric's own Python target. :func:`resolve_auto` makes the choice."""


def resolve_auto(name: str, ebpf_unavailable: str | None) -> tuple[str, str | None]:
    """The concrete target for ``name`` and, when ``auto`` fell back, why: ``ebpf_unavailable``
    is the eBPF toolchain's reason it cannot run here (None: it can). Other names pass through."""
    if name != AUTO_TARGET:
        return name, None
    if ebpf_unavailable is None:
        return Target.EBPF.value, None
    return Target.P4SWITCH.value, ebpf_unavailable


class HardwareTarget(StrEnum):
    """Switches the controller can program but the emulated fabric cannot start (so they are not
    among :data:`TARGET_NAMES`, the ``--target`` choices of topo and the experiments)."""

    TOFINO = "tofino"
    """Intel Tofino 1/2 running p4src/tna/fabric.p4: ``model.tna`` turns the fabric's entries
    into the TNA program's (action-profile groups, the slot table, ns timeouts, queue depths in
    cells) and ``FabricController(target="tofino")`` writes and maintains them
    (controller/tna_fabric.py); docs/tofino.md."""
