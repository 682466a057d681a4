"""The one registry of the externs the pipeline executes.

An extern is declared here once — its run-time state, the code generated for each of its
methods on both packet paths, whether the fused path can run it, where its instances appear in
P4Info and which P4Runtime entity reaches their state — instead of being string-matched by
name in the code generator, the fused generator, the pipeline's state builder and the P4Info
builder. The v1model externs are declared in ``v1model.py``; a new extern needs an ``extern``
declaration in P4 (the front end accepts any) and one ``declare_object``/``declare_function``.

Code generators receive the ``BlockGen`` (or ``FusedBlockGen``) emitting the current block and
use its public helpers (``w``, ``ex``, ``assign``, ``mod``, ``ind``, the ``c_*`` names of the
packet length, clock, meter colour and truncation), so one generator serves both paths unless
the fused path needs its own.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from p4switch import ir

if TYPE_CHECKING:
    from .codegen import BlockGen

# gen(block_gen, call, state object, its bound global name): emits the method call's code
MethodGen = Callable[["BlockGen", ir.ExternCall, Any, str], None]
# gen(block_gen, call): emits the extern function call's code
FunctionGen = Callable[["BlockGen", ir.ExternCall], None]

# P4Info section -> the P4Runtime Entity field that reads and writes its cells
P4INFO_ENTITIES: dict[str, str] = {
    "counters": "counter_entry",
    "direct_counters": "direct_counter_entry",
    "meters": "meter_entry",
    "direct_meters": "direct_meter_entry",
    "registers": "register_entry",
    "action_profiles": "action_profile_member",  # and action_profile_group
}


@dataclass(frozen=True)
class ExternObject:
    """An extern object type (``register<T>(N) r;``).

    ``make_state(inst)`` builds the run-time object the generated code and the control plane
    share; ``space`` is its control-plane name space (``Pipeline.resolve`` kind, e.g.
    "register"); ``direct`` externs live in their table's entries (the table, not the
    instance, holds the state); ``p4info`` is the P4Info section listing the instances (None:
    not in P4Info), which also fixes the P4Runtime entity (``entity``); ``fusable`` False sends
    every program using it to the general driver."""

    type_name: str
    make_state: Callable[[ir.ExternInstance], Any]
    methods: Mapping[str, MethodGen] = field(default_factory=dict)
    space: str | None = None
    direct: bool = False
    p4info: str | None = None
    fusable: bool = True

    @property
    def entity(self) -> str | None:
        """The P4Runtime ``Entity`` field that reaches this extern's state."""
        return P4INFO_ENTITIES.get(self.p4info) if self.p4info else None


@dataclass(frozen=True)
class ExternFunction:
    """An extern function (``mark_to_drop``, ``hash``, ``clone``, ...): ``general`` emits its
    code (on the fused path too unless ``fused`` is given); ``fusable`` False means its
    semantics need the general driver (copies, re-runs, digests, logs)."""

    name: str
    general: FunctionGen
    fused: FunctionGen | None = None
    fusable: bool = True


_OBJECTS: dict[str, ExternObject] = {}
_FUNCTIONS: dict[str, ExternFunction] = {}


def declare_object(kind: ExternObject) -> ExternObject:
    """Add (or replace) an extern object type; returns it."""
    _OBJECTS[kind.type_name] = kind
    return kind


def declare_function(fn: ExternFunction) -> ExternFunction:
    """Add (or replace) an extern function; returns it."""
    _FUNCTIONS[fn.name] = fn
    return fn


def forget(name: str) -> None:
    """Remove an extern object type or function (tests declare toys and take them back)."""
    _OBJECTS.pop(name, None)
    _FUNCTIONS.pop(name, None)


def extern_object(type_name: str) -> ExternObject | None:
    return _OBJECTS.get(type_name)


def extern_function(name: str) -> ExternFunction | None:
    return _FUNCTIONS.get(name)


def p4info_types(section: str) -> tuple[str, ...]:
    """The extern type names whose instances the P4Info section lists, in declaration order."""
    return tuple(k.type_name for k in _OBJECTS.values() if k.p4info == section)
