"""The v1model externs, declared into the pipeline's extern registry (``registry.py``).

Each declaration says what an extern is at run time (its state object), what code each call
of it compiles to, whether the fused path can run it, and where P4Info lists it. The semantics
are those documented in docs/architecture.md and BMv2's simple_switch: out-of-range register, counter and
meter indexes do nothing (a register read gives 0), ``direct_counter.count()`` is a no-op (the
table counts on a hit), clone/resubmit/recirculate/digest/log_msg need the general driver.
"""

from __future__ import annotations

from typing import Any

from p4switch import ir

from . import registry
from .codegen import BlockGen
from .emit import SM_ROOT, BuildError, const_int, enum_member, fattr, mask, valid_terms
from .externs import CounterArray, MeterArray, RegisterArray
from .fused import FusedBlockGen
from .hashes import algorithm
from .registry import ExternFunction, ExternObject
from .tables import ActionProfileState

# --------------------------------------------------------------------------------------------
# Extern objects: run-time state
# --------------------------------------------------------------------------------------------


def _register_state(inst: ir.ExternInstance) -> RegisterArray:
    width = ir.type_width(inst.type_args[0]) if inst.type_args else 32
    numeric = not inst.type_args or isinstance(inst.type_args[0], ir.BitsType)
    return RegisterArray(inst, const_int(inst.args[0]), width, numeric)


def _counter_state(inst: ir.ExternInstance) -> CounterArray:
    return CounterArray(inst, const_int(inst.args[0]), enum_member(inst.args[1]))


def _meter_state(inst: ir.ExternInstance) -> MeterArray:
    return MeterArray(inst, const_int(inst.args[0]), enum_member(inst.args[1]))


def _direct_state(inst: ir.ExternInstance) -> ir.ExternInstance:
    return inst  # the state is in the entries of the table it is attached to


def _profile_state(inst: ir.ExternInstance) -> ActionProfileState:
    args = inst.args
    sel = inst.type_name == "action_selector"
    algo = None
    width = 0
    if sel:
        try:
            algo = algorithm(enum_member(args[0]))
        except ValueError as exc:
            raise BuildError(f"{inst.cp_name}: {exc}") from None
        size = const_int(args[1])
        width = const_int(args[2]) if len(args) > 2 else 0
    else:
        size = const_int(args[0])
    return ActionProfileState(inst, inst.cp_name, sel, size, algo, width)


# --------------------------------------------------------------------------------------------
# Extern objects: methods
# --------------------------------------------------------------------------------------------


def _register_read(g: BlockGen, s: ir.ExternCall, obj: Any, _x: str) -> None:
    a = s.args
    i = g.mod.fresh("_i")
    g.w(f"{i} = {g.ex(a[1])}")
    vals = g.mod.bind(obj.values, "RV")
    g.assign(a[0], f"({vals}[{i}] if {i} < {obj.size} else 0)")


def _register_write(g: BlockGen, s: ir.ExternCall, obj: Any, _x: str) -> None:
    a = s.args
    i = g.mod.fresh("_i")
    g.w(f"{i} = {g.ex(a[0])}")
    vals = g.mod.bind(obj.values, "RV")
    g.w(f"if {i} < {obj.size}: {vals}[{i}] = {g.ex(a[1])}")


def _counter_count(g: BlockGen, s: ir.ExternCall, obj: Any, _x: str) -> None:
    i = g.mod.fresh("_i")
    g.w(f"{i} = {g.ex(s.args[0])}")
    g.w(f"if {i} < {obj.size}:")
    g.w(f"    {g.mod.bind(obj.packets, 'CP')}[{i}] += 1")
    g.w(f"    {g.mod.bind(obj.bytes, 'CB')}[{i}] += {g.c_plen}")


def _direct_counter_count(g: BlockGen, s: ir.ExternCall, obj: Any, _x: str) -> None:
    pass  # counted by the table on a hit (v1model: count() is optional and a no-op)


def _meter_execute(g: BlockGen, s: ir.ExternCall, obj: Any, x: str) -> None:
    a = s.args
    i = g.mod.fresh("_i")
    g.w(f"{i} = {g.ex(a[0])}")
    g.w(f"if {i} < {obj.size}:")
    g.ind += 1
    g.assign(a[1], f"{x}.execute({i}, {g.c_now}, {g.c_plen})")
    g.ind -= 1


def _direct_meter_read(g: BlockGen, s: ir.ExternCall, obj: Any, _x: str) -> None:
    g.assign(s.args[0], g.c_meter)  # the colour the table's lookup computed


# --------------------------------------------------------------------------------------------
# Extern functions
# --------------------------------------------------------------------------------------------


def _mark_to_drop(g: BlockGen, s: ir.ExternCall) -> None:
    sm = g.ex(s.args[0]) if s.args else g.sm_var
    if sm is None:
        raise BuildError("mark_to_drop outside a block with standard_metadata")
    g.w(f"{sm}.f_egress_spec = {g.drop_port}")
    g.w(f"{sm}.f_mcast_grp = 0")


def _mark_to_drop_fused(g: BlockGen, s: ir.ExternCall) -> None:
    assert isinstance(g, FusedBlockGen)
    sm = g.path(s.args[0]) if s.args else SM_ROOT
    g.w(f"{g.leaf(sm + '_f_egress_spec', ir.BitsType(9))} = {g.drop_port}")
    g.w(f"{g.leaf(sm + '_f_mcast_grp', ir.BitsType(16))} = 0")


def _hash(g: BlockGen, s: ir.ExternCall) -> None:
    out, algo, base, data, mx = s.args
    hv = g.checksum_value(algo, data, False)
    wout = ir.type_width(out.type)
    base_c, max_c = g.ex(base), g.ex(mx)
    zero_base = isinstance(base, ir.Const) and const_int(base) == 0
    if isinstance(mx, ir.Const) and const_int(mx) == 0:
        v = hv if zero_base else f"({base_c} + {hv})"
    elif isinstance(mx, ir.Const):
        v = f"({hv} % {max_c})" if zero_base else f"({base_c} + {hv} % {max_c})"
        if (zero_base and const_int(mx) <= 1 << wout and isinstance(out.type, ir.BitsType)
                and not out.type.signed):  # already fits the output
            g.assign(out, v)
            return
    else:  # run-time max; 0 gives base + h (BMv2 would divide by zero)
        h = g.mod.fresh("_hv")
        g.w(f"{h} = {hv}")
        v = f"({base_c} + ({h} % {max_c} if {max_c} else {h}))"
    g.assign(out, f"({v} & {mask(wout)})")


def _verify_checksum(g: BlockGen, s: ir.ExternCall) -> None:
    cond, data, field, algo = s.args
    g.w(f"if {g.ex(cond)}:")
    g.ind += 1
    hv = g.checksum_value(algo, data, s.method.endswith("payload"))
    wf = ir.type_width(field.type)
    g.w(f"if ({hv} & {mask(wf)}) != {g.ex(field)}: {g.c_ckerr} = 1")
    g.ind -= 1


def _update_checksum(g: BlockGen, s: ir.ExternCall) -> None:
    cond, data, field, algo = s.args
    g.w(f"if {g.ex(cond)}:")
    g.ind += 1
    hv = g.checksum_value(algo, data, s.method.endswith("payload"))
    g.assign(field, f"({hv} & {mask(ir.type_width(field.type))})")
    g.ind -= 1


def _under_condition(gen: registry.FunctionGen) -> registry.FunctionGen:
    """The fused path's checksum: computed only under its condition, so headers the condition
    requires valid are known valid while its input is built."""

    def fused_gen(g: BlockGen, s: ir.ExternCall) -> None:
        assert isinstance(g, FusedBlockGen)
        saved = set(g.known)
        g.known.update(g.path(h) for h in valid_terms(s.args[0]))
        gen(g, s)
        g.known = saved

    return fused_gen


def _random(g: BlockGen, s: ir.ExternCall) -> None:
    out, lo, hi = s.args
    g.assign(out, f"_random({g.ex(lo)}, {g.ex(hi)})")


def _clone(g: BlockGen, s: ir.ExternCall) -> None:
    a = s.args
    ctype = enum_member(a[0])
    fl = g.ex(a[2]) if s.method == "clone_preserving_field_list" else "-1"
    g.w(f"_ctx.clone = ({1 if ctype == 'E2E' else 0}, {g.ex(a[1])}, {fl})")


def _resubmit(g: BlockGen, s: ir.ExternCall) -> None:
    fl = g.ex(s.args[0]) if s.method.endswith("list") else "-1"
    g.w(f"_ctx.resubmit = {fl}")


def _recirculate(g: BlockGen, s: ir.ExternCall) -> None:
    fl = g.ex(s.args[0]) if s.method.endswith("list") else "-1"
    g.w(f"_ctx.recirculate = {fl}")


def _truncate(g: BlockGen, s: ir.ExternCall) -> None:
    g.w(f"{g.c_trunc} = {g.ex(s.args[0])}")


def _digest(g: BlockGen, s: ir.ExternCall) -> None:
    receiver, data = s.args
    t = s.type_args[0] if s.type_args else data.type
    if not isinstance(t, ir.StructType):
        raise BuildError("digest data must be a struct")
    if isinstance(data, ir.ListExpr):
        vals = [g.ex(i) for i in data.items]
    else:
        d = g.ex(data)
        vals = [f"{d}.{fattr(f.name)}" for f in t.fields]
    items = ", ".join(f"{f.name!r}: {v}" for f, v in zip(t.fields, vals, strict=True))
    g.w(f"_digest(_ctx, {t.name!r}, {g.ex(receiver)}, {{{items}}})")


def _log_msg(g: BlockGen, s: ir.ExternCall) -> None:
    a = s.args
    msg = a[0].value if isinstance(a[0], ir.Const) else ""
    vals = "()"
    if len(a) > 1:
        vals = "(" + "".join(c + ", " for c, _, _ in g.flatten(a[1])) + ")"
    g.w(f"_log(_ctx, {msg!r}, {vals})")


def _assert(g: BlockGen, s: ir.ExternCall) -> None:
    g.w(f"if not {g.ex(s.args[0])}: raise _Assert()")


def _verify(g: BlockGen, s: ir.ExternCall) -> None:
    g.w(f"if not {g.ex(s.args[0])}: raise _PErr({g.ex(s.args[1])})")


# --------------------------------------------------------------------------------------------
# Declarations
# --------------------------------------------------------------------------------------------

OBJECTS: tuple[ExternObject, ...] = (
    ExternObject("register", _register_state,
                 {"read": _register_read, "write": _register_write},
                 space="register", p4info="registers"),
    ExternObject("counter", _counter_state, {"count": _counter_count},
                 space="counter", p4info="counters"),
    ExternObject("direct_counter", _direct_state, {"count": _direct_counter_count},
                 space="direct_counter", direct=True, p4info="direct_counters"),
    ExternObject("meter", _meter_state, {"execute_meter": _meter_execute},
                 space="meter", p4info="meters"),
    ExternObject("direct_meter", _direct_state, {"read": _direct_meter_read},
                 space="direct_meter", direct=True, p4info="direct_meters"),
    ExternObject("action_profile", _profile_state, space="action_profile",
                 p4info="action_profiles"),
    ExternObject("action_selector", _profile_state, space="action_profile",
                 p4info="action_profiles"),
)

FUNCTIONS: tuple[ExternFunction, ...] = (
    ExternFunction("mark_to_drop", _mark_to_drop, fused=_mark_to_drop_fused),
    ExternFunction("hash", _hash),
    ExternFunction("verify_checksum", _verify_checksum, fused=_under_condition(_verify_checksum)),
    ExternFunction("verify_checksum_with_payload", _verify_checksum,
                   fused=_under_condition(_verify_checksum)),
    ExternFunction("update_checksum", _update_checksum, fused=_under_condition(_update_checksum)),
    ExternFunction("update_checksum_with_payload", _update_checksum,
                   fused=_under_condition(_update_checksum)),
    ExternFunction("random", _random),
    ExternFunction("clone", _clone, fusable=False),
    ExternFunction("clone3", _clone, fusable=False),
    ExternFunction("clone_preserving_field_list", _clone, fusable=False),
    ExternFunction("resubmit", _resubmit, fusable=False),
    ExternFunction("resubmit_preserving_field_list", _resubmit, fusable=False),
    ExternFunction("recirculate", _recirculate, fusable=False),
    ExternFunction("recirculate_preserving_field_list", _recirculate, fusable=False),
    ExternFunction("truncate", _truncate),
    ExternFunction("digest", _digest, fusable=False),
    ExternFunction("log_msg", _log_msg, fusable=False),
    ExternFunction("assert", _assert),
    ExternFunction("assume", _assert),
    ExternFunction("verify", _verify),
)


def register() -> None:
    """Declare the v1model externs into the registry, replacing earlier declarations of the
    same names."""
    for kind in OBJECTS:
        registry.declare_object(kind)
    for fn in FUNCTIONS:
        registry.declare_function(fn)


_declared = False


def declare_once() -> None:
    """Declare the v1model externs the first time a pipeline or a P4Info is built: not when
    ``p4switch`` is imported, so a module that needs only the contract types (``api``, the
    match kinds) does not load the code generators."""
    global _declared
    if not _declared:
        register()
        _declared = True
