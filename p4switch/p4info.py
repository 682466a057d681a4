"""IR -> ``p4.config.v1.P4Info``: the control-plane contract a P4Runtime client uses.

Why this shape:

* Ids carry the spec's 8-bit per-entity prefix (``p4.config.v1.P4Ids.Prefix``: actions 0x01,
  tables 0x02, value sets 0x03, controller headers 0x04, action profiles 0x11, counters 0x12,
  direct counters 0x13, meters 0x14, direct meters 0x15, registers 0x16, digests 0x17), so a
  client can tell an id's kind from its top byte.
* Ids are p4c's, so a controller holding p4c's P4Info (or ids taken from it) drives p4switch
  and vice versa: ``prefix << 24 | (Jenkins one-at-a-time hash of the name & 0xffffff)``,
  collisions resolved by probing the 32-bit hash upwards in name order, ``@id(n)`` honoured (a
  value without a prefix byte gets the kind's; one with a prefix byte must carry the kind's).
  Controller headers hash their header type's name but are named by the annotation's argument.
* Names are the IR's ``cp_name`` (``MyIngress.ipv4_lpm``), exactly what the pipeline resolves,
  so the runtime translates a P4Runtime id to a pipeline name with one lookup. Aliases are the
  shortest unique dot-suffix over the names of all kinds together (p4c's one suffix set).
* Match-field, action-parameter and controller-metadata ids follow p4c: ``@id``s first, then
  each member takes its 1-based position (selector keys hold a position too) or the next free
  id above it.
* What p4c leaves out is left out: tables no control applies (and with them their direct
  counters/meters and the actions only they can run), actions no table can run and no control
  body calls (an unused NoAction too), ``@hidden`` objects.
* Annotation strings are written as p4c writes them: the body's tokens joined by spaces, string
  arguments quoted (``@noWarn("unused")``, ``@a(1 , "x")``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from google.protobuf import json_format, text_format
from p4.config.v1 import p4info_pb2, p4types_pb2

from p4switch import ir
from p4switch.pipeline import registry

# Spec prefixes, taken from the installed proto so they can never drift from it.
_P = p4info_pb2.P4Ids
PREFIX_ACTION = _P.ACTION
PREFIX_TABLE = _P.TABLE
PREFIX_VALUE_SET = _P.VALUE_SET
PREFIX_CONTROLLER_HEADER = _P.CONTROLLER_HEADER
PREFIX_ACTION_PROFILE = _P.ACTION_PROFILE
PREFIX_COUNTER = _P.COUNTER
PREFIX_DIRECT_COUNTER = _P.DIRECT_COUNTER
PREFIX_METER = _P.METER
PREFIX_DIRECT_METER = _P.DIRECT_METER
PREFIX_REGISTER = _P.REGISTER
PREFIX_DIGEST = _P.DIGEST

_MATCH_TYPES = {
    "exact": p4info_pb2.MatchField.EXACT,
    "lpm": p4info_pb2.MatchField.LPM,
    "ternary": p4info_pb2.MatchField.TERNARY,
    "range": p4info_pb2.MatchField.RANGE,
    "optional": p4info_pb2.MatchField.OPTIONAL,
}

_SCOPES = {
    "": p4info_pb2.ActionRef.TABLE_AND_DEFAULT,
    "tableonly": p4info_pb2.ActionRef.TABLE_ONLY,
    "defaultonly": p4info_pb2.ActionRef.DEFAULT_ONLY,
}

# Annotations P4Info carries elsewhere, so (like p4c) they are not repeated as annotation
# strings: @name/@id in the preamble, @brief/@description as documentation, @hidden objects are
# left out; @controller_header and a value set's @match are written by their builders; and
# support_timeout is the front end's note of a table property (idle_timeout_behavior here).
# Everything else -- @defaultonly, @tableonly, @padding, @noWarn, user annotations -- is kept.
#: ``@p4runtime_translation("uri", 32 | bit<32> | string)`` as its tokens are written
_TRANSLATION = re.compile(r'^\s*"((?:[^"\\]|\\.)*)"\s*,\s*(\d+|0[xX][0-9a-fA-F]+|bit\s*<\s*\d+\s*>|string)\s*$')

_STRUCTURAL_ANNOTATIONS = {
    "name", "id", "brief", "description", "hidden", "controller_header", "match",
    "support_timeout",
}


class P4InfoError(Exception):
    """The program cannot be described as P4Info (e.g. two objects claim the same ``@id``)."""


# --------------------------------------------------------------------------------------------
# Id allocation
# --------------------------------------------------------------------------------------------


def jenkins_one_at_a_time(data: bytes) -> int:
    """Bob Jenkins' one-at-a-time hash (32-bit), the hash p4c applies to control-plane names."""
    h = 0
    for byte in data:
        h = (h + byte) & 0xFFFFFFFF
        h = (h + (h << 10)) & 0xFFFFFFFF
        h ^= h >> 6
    h = (h + (h << 3)) & 0xFFFFFFFF
    h ^= h >> 11
    return (h + (h << 15)) & 0xFFFFFFFF


def _explicit_id(annotations: dict[str, str], prefix: int, what: str) -> int | None:
    """``@id(n)`` as p4c reads it: a value without a prefix byte gets the kind's prefix; one
    with a prefix byte must carry the kind's own."""
    body = annotations.get("id")
    if body is None:
        return None
    try:
        value = int(str(body).strip().strip('"'), 0)
    except ValueError as e:
        raise P4InfoError(f"{what}: @id({body}) is not an integer") from e
    if not 0 <= value < (1 << 32):
        raise P4InfoError(f"{what}: @id({body}) should be an unsigned 32-bit integer")
    if value >> 24 not in (0, prefix):
        raise P4InfoError(f"{what}: @id({body}) has the wrong 8-bit prefix "
                          f"(0x{prefix:02x} expected)")
    return value | (prefix << 24)


@dataclass
class _IdAllocator:
    """p4c's rule, so that ids are interchangeable with its P4Info: explicit ``@id``s first;
    then, in name order, ``prefix << 24 | (hash & 0xffffff)`` with the 32-bit hash probed
    upwards (linear probing on the hash, not on the id) past ids already taken."""

    used: set[int] = field(default_factory=set)

    def allocate(self, prefix: int, items: list[tuple[str, int | None]]) -> dict[str, int]:
        out: dict[str, int] = {}
        for name, explicit in items:
            if explicit is None or name in out:
                continue
            if explicit in self.used:
                raise P4InfoError(f"{name}: @id 0x{explicit:08x} is already in use")
            self.used.add(explicit)
            out[name] = explicit
        for name in sorted({n for n, e in items if e is None and n not in out}):
            start = value = jenkins_one_at_a_time(name.encode())
            while (pid := prefix << 24 | (value & 0xFFFFFF)) in self.used:
                value = (value + 1) & 0xFFFFFFFF
                if value == start:
                    raise P4InfoError(f"{name}: no id left for prefix 0x{prefix:02x}")
            self.used.add(pid)
            out[name] = pid
        return out


def _member_ids(items: list[tuple[str, dict[str, str] | tuple]], what: str) -> list[int]:
    """Ids of match fields / params / metadata as p4c allocates them: ``@id``s first, then
    each other member takes its 1-based position, or the next free id above it."""
    explicit: list[int | None] = []
    for name, ann in items:
        ann_d = dict(ann) if not isinstance(ann, dict) else ann
        body = ann_d.get("id")
        if body is None:
            explicit.append(None)
            continue
        try:
            value = int(str(body).strip(), 0)
        except ValueError as e:
            raise P4InfoError(f"{what}.{name}: @id({body}) is not an integer") from e
        if value <= 0:
            raise P4InfoError(f"{what}.{name}: @id({body}) is not a valid id (must be > 0)")
        explicit.append(value)
    used = {e for e in explicit if e is not None}
    if len(used) != len([e for e in explicit if e is not None]):
        raise P4InfoError(f"{what}: duplicate @id among its members")
    out: list[int] = []
    index = 1
    for given in explicit:
        if given is not None:
            out.append(given)
            index += 1
            continue
        while index in used:
            index += 1
        used.add(index)
        out.append(index)
    return out


# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------


def _annotation_strings(annotations: dict[str, str] | tuple) -> list[str]:
    items = annotations.items() if isinstance(annotations, dict) else annotations
    out: list[str] = []
    for key, body in items:
        if key in _STRUCTURAL_ANNOTATIONS or isinstance(body, ir.StructuredAnnotation):
            continue
        texts = [body] if not isinstance(body, ir.AnnotationText) else [*body.earlier,
                                                                         body.source]
        out.extend(f"@{key}({text})" if text not in (None, "") else f"@{key}" for text in texts)
    return out


def _expression(e: p4types_pb2.Expression, value: int | str | bool) -> None:
    if isinstance(value, bool):
        e.bool_value = value
    elif isinstance(value, int):
        e.int64_value = value
    else:
        e.string_value = value


def _annotate(msg, annotations: dict[str, str] | tuple) -> None:  # noqa: ANN001 - any message
    """An entity's annotations as p4c writes them: unstructured ones as ``annotations``
    strings, structured ones (``@a[...]``) as ``structured_annotations``, each in source
    order."""
    msg.annotations.extend(_annotation_strings(annotations))
    items = annotations.items() if isinstance(annotations, dict) else annotations
    for key, body in items:
        if not isinstance(body, ir.StructuredAnnotation):
            continue
        sa = msg.structured_annotations.add(name=key)
        if not body.items:
            continue  # @a[]: a name only, as p4c writes it
        if body.kind == "kv":
            for k, v in body.items:
                _expression(sa.kv_pair_list.kv_pairs.add(key=k).value, v)
        else:
            for _, v in body.items:
                _expression(sa.expression_list.expressions.add(), v)


def _aliases(names: list[str]) -> dict[str, str]:
    """Shortest dot-suffix of each name that no other name of the same kind ends with."""
    out = {}
    for name in names:
        parts = name.split(".")
        alias = name
        for k in range(1, len(parts) + 1):
            cand = ".".join(parts[-k:])
            clash = [o for o in names if o != name and (o == cand or o.endswith("." + cand))]
            if not clash:
                alias = cand
                break
        out[name] = alias
    return out


def _const_int(e: ir.Expr | None, default: int = 0) -> int:
    if isinstance(e, ir.Const) and isinstance(e.value, int | bool):
        return int(e.value)
    return default


def _enum_member(e: ir.Expr | None) -> str | None:
    """Member name of a constant enum argument (``CounterType.packets`` -> "packets")."""
    if isinstance(e, ir.Const) and isinstance(e.type, ir.EnumType):
        for name, value in e.type.members:
            if value == e.value:
                return name
    if isinstance(e, ir.Const) and isinstance(e.value, str):
        return e.value.split(".")[-1]
    return None


def _doc(doc: p4info_pb2.Documentation, annotations: dict[str, str] | tuple) -> None:
    """``@brief`` / ``@description`` go into the documentation message, as p4c puts them."""
    annos = dict(annotations)
    if annos.get("brief"):
        doc.brief = str(annos["brief"])
    if annos.get("description"):
        doc.description = str(annos["description"])


def _is_hidden(annotations: dict[str, str]) -> bool:
    return "hidden" in annotations


_COUNTER_UNITS = {
    "packets": p4info_pb2.CounterSpec.PACKETS,
    "bytes": p4info_pb2.CounterSpec.BYTES,
    "packets_and_bytes": p4info_pb2.CounterSpec.BOTH,
}
_METER_UNITS = {
    "packets": p4info_pb2.MeterSpec.PACKETS,
    "bytes": p4info_pb2.MeterSpec.BYTES,
}
# v1model enum declaration order, used when the argument is a bare number.
_COUNTER_ORDER = ["packets", "bytes", "packets_and_bytes"]
_METER_ORDER = ["packets", "bytes"]


def _unit(arg: ir.Expr | None, table: dict[str, int], order: list[str]) -> int:
    member = _enum_member(arg)
    if member is None and isinstance(arg, ir.Const) and isinstance(arg.value, int):
        member = order[arg.value] if 0 <= arg.value < len(order) else None
    return table.get(member or "", 0)


class _TypeInfo:
    """Builds ``P4DataTypeSpec``s, registering named types in ``P4TypeInfo`` as p4c does."""

    def __init__(self, info: p4types_pb2.P4TypeInfo, errors: Sequence[str] = (),
                 new_types: dict[str, ir.Type] | None = None,
                 annotations: dict[str, dict[str, str]] | None = None) -> None:
        self.info = info
        self.errors = list(errors)
        self.new_types = new_types or {}
        self.annotations = annotations or {}

    def translation(self, name: str) -> tuple[str, int | None] | None:
        """``(uri, width)`` of newtype ``name`` if it has ``@p4runtime_translation(uri, w)``
        (``w``: an int or ``bit<N>``; ``string`` gives width None), else None."""
        body = self.annotations.get(name, {}).get("p4runtime_translation")
        if body is None:
            return None
        m = _TRANSLATION.match(getattr(body, "source", "") or "")
        if m is None:
            raise P4InfoError(f"type {name}: @p4runtime_translation needs a URI string and a "
                              f"width (an integer, bit<N> or string), not ({body})")
        uri, width = m.group(1), m.group(2).replace(" ", "")
        if width == "string":
            return uri, None
        return uri, int(width[4:-1] if width.startswith("bit<") else width, 0)

    def new_type(self, name: str) -> None:
        """Register newtype ``name`` (p4c: ``new_types[name].original_type``, or
        ``translated_type`` when it has ``@p4runtime_translation``, with its annotations)."""
        if name in self.new_types and name not in self.info.new_types:
            spec = self.info.new_types[name]
            _annotate(spec, {k: v for k, v in self.annotations.get(name, {}).items()
                             if k != "p4runtime_translation"})
            translated = self.translation(name)
            if translated is None:
                spec.original_type.CopyFrom(self.spec(self.new_types[name]))
                return
            spec.translated_type.uri = translated[0]
            if translated[1] is None:
                spec.translated_type.sdn_string.SetInParent()
            else:
                spec.translated_type.sdn_bitwidth = translated[1]

    def named(self, t: ir.Type, type_name: str) -> p4types_pb2.P4DataTypeSpec:
        """The spec of a member declared with newtype ``type_name`` (or none)."""
        if type_name and type_name in self.new_types:
            self.new_type(type_name)
            s = p4types_pb2.P4DataTypeSpec()
            s.new_type.name = type_name
            return s
        return self.spec(t)

    def spec(self, t: ir.Type) -> p4types_pb2.P4DataTypeSpec:
        s = p4types_pb2.P4DataTypeSpec()
        if isinstance(t, ir.BitsType):
            if t.signed:
                s.bitstring.int.bitwidth = t.width
            else:
                s.bitstring.bit.bitwidth = t.width
        elif isinstance(t, ir.BoolType):
            s.bool.SetInParent()
        elif isinstance(t, ir.ErrorType):
            s.error.SetInParent()
            if not self.info.HasField("error"):
                self.info.error.members.extend(self.errors)
        elif isinstance(t, ir.StructType):
            s.struct.name = t.name
            if t.name not in self.info.structs:
                st = self.info.structs[t.name]
                for f in t.fields:
                    m = st.members.add(name=f.name)
                    m.type_spec.CopyFrom(self.named(f.type, f.type_name))
        elif isinstance(t, ir.HeaderType):
            s.header.name = t.name
            if t.name not in self.info.headers:
                ht = self.info.headers[t.name]
                for f in t.fields:
                    m = ht.members.add(name=f.name)
                    ft = f.type
                    if isinstance(ft, ir.EnumType) and ft.underlying is not None:
                        ft = ft.underlying
                    if isinstance(ft, ir.BitsType) and ft.signed:
                        m.type_spec.int.bitwidth = ft.width
                    else:
                        m.type_spec.bit.bitwidth = ir.type_width(ft)
        elif isinstance(t, ir.StackType):
            s.header_stack.header.name = t.elem.name
            s.header_stack.size = t.size
            self.spec(t.elem)
        elif isinstance(t, ir.TupleType):
            for e in t.elems:
                s.tuple.members.add().CopyFrom(self.spec(e))
        elif isinstance(t, ir.EnumType):
            if t.underlying is not None:
                s.serializable_enum.name = t.name
                if t.name not in self.info.serializable_enums:
                    se = self.info.serializable_enums[t.name]
                    se.underlying_type.bitwidth = t.underlying.width
                    w = (t.underlying.width + 7) // 8
                    for name, value in t.members:
                        se.members.add(name=name, value=value.to_bytes(max(w, 1), "big"))
            else:
                s.enum.name = t.name
                if t.name not in self.info.enums:
                    en = self.info.enums[t.name]
                    for name, _ in t.members:
                        en.members.add(name=name)
        else:
            raise P4InfoError(f"type {t} cannot be exposed to the control plane")
        return s


# --------------------------------------------------------------------------------------------
# The builder
# --------------------------------------------------------------------------------------------


@dataclass
class _Ctx:
    program: ir.Program
    tables: list[tuple[ir.Control, ir.Table]]
    instances: dict[tuple[str, str], ir.ExternInstance]  # (control or "", name) -> instance


def _find_instance(ctx: _Ctx, control: ir.Control, name: str | None) -> ir.ExternInstance | None:
    if name is None:
        return None
    return ctx.instances.get((control.name, name)) or ctx.instances.get(("", name))


def build_p4info(program: ir.Program) -> p4info_pb2.P4Info:
    """The P4Info of ``program``; raises ``P4InfoError`` for conflicting ``@id``s."""
    from p4switch.pipeline import v1model  # the extern registry, filled on first use

    v1model.declare_once()
    # as p4c: a table no control applies is removed ("removing table"), with what only it
    # reaches (its actions, its direct counters and meters)
    tables = [
        (c, t)
        for c in _control_order(program)
        for t in c.tables.values()
        if not _is_hidden(t.annotations) and t.name in _applied_by(c)
    ]
    instances: dict[tuple[str, str], ir.ExternInstance] = {}
    for name, inst in program.instances.items():
        instances[("", name)] = inst
    for c in program.controls.values():
        for name, inst in c.instances.items():
            instances[(c.name, name)] = inst
    ctx = _Ctx(program, tables, instances)

    p4info = p4info_pb2.P4Info()
    p4info.pkg_info.arch = "v1model"
    if program.main_file:
        p4info.pkg_info.name = program.main_file.rsplit("/", 1)[-1].removesuffix(".p4")
    types = _TypeInfo(p4info.type_info, program.errors, program.new_types,
                      program.new_type_annotations)
    alloc = _IdAllocator()

    # ---- actions, as p4c keeps them: those a table can run (its list and default action) and
    # those a control body calls directly (p4c moves such a call into a hidden table). An
    # action nothing reaches -- NoAction included -- is not part of the control-plane API.
    reached: list[str] = []
    for _, t in tables:
        for key in [ref.action for ref in t.actions] + [t.default_action.action]:
            if key not in reached:
                reached.append(key)
    by_tables = set(reached)
    for c in _control_order(program):
        for key in _direct_action_calls(c.body):
            if key not in reached:
                reached.append(key)
    actions = [program.actions[k] for k in _action_order(program, tables, reached)
               if k in program.actions and not _is_hidden(program.actions[k].annotations)]
    action_ids = alloc.allocate(
        PREFIX_ACTION,
        [(a.cp_name, _explicit_id(a.annotations, PREFIX_ACTION, a.cp_name)) for a in actions],
    )
    key_to_action_id = {a.name: action_ids[a.cp_name] for a in actions}

    # ---- extern instances by kind.
    def instances_of(*kinds: str) -> list[tuple[ir.Control | None, ir.ExternInstance]]:
        out: list[tuple[ir.Control | None, ir.ExternInstance]] = []
        for inst in program.instances.values():
            if inst.type_name in kinds and not _is_hidden(inst.annotations):
                out.append((None, inst))
        for c in _control_order(program):
            for inst in c.instances.values():
                if inst.type_name in kinds and not _is_hidden(inst.annotations):
                    out.append((c, inst))
        return out

    def ids_for(prefix: int, insts: Sequence[tuple[object, ir.ExternInstance]]) -> dict[str, int]:
        return alloc.allocate(
            prefix,
            [(i.cp_name, _explicit_id(i.annotations, prefix, i.cp_name)) for _, i in insts],
        )

    # which extern types each section lists is the pipeline's extern registry's to say
    # (a table may name a top-level instance: it is the control's then, as p4c sees it)
    attached = {(id(c) if name in c.instances else id(None), name) for c, t in tables
                for name in (t.direct_counter, t.direct_meter) if name is not None}

    def direct(insts: list[tuple[ir.Control | None, ir.ExternInstance]]
               ) -> list[tuple[ir.Control | None, ir.ExternInstance]]:
        """Direct resources of applied tables only (p4c: "Direct counter not used; ignoring")."""
        return [(c, i) for c, i in insts if (id(c), i.name) in attached]

    # an inline ``implementation = action_selector(...)`` goes with its table: p4c drops both
    # when nothing applies the table
    applied = {(id(c), t.name) for c, t in tables}
    inline = {(id(c), t.implementation) for c in program.controls.values()
              for t in c.tables.values() if t.implementation is not None
              and (id(c), t.name) not in applied
              and c.instances.get(t.implementation) is not None
              and c.instances[t.implementation].cp_name == t.cp_name}
    profiles = [(c, i) for c, i in instances_of(*registry.p4info_types("action_profiles"))
                if (id(c), i.name) not in inline]
    counters = instances_of(*registry.p4info_types("counters"))
    dcounters = direct(instances_of(*registry.p4info_types("direct_counters")))
    meters = instances_of(*registry.p4info_types("meters"))
    dmeters = direct(instances_of(*registry.p4info_types("direct_meters")))
    registers = instances_of(*registry.p4info_types("registers"))
    profile_ids = ids_for(PREFIX_ACTION_PROFILE, profiles)
    counter_ids = ids_for(PREFIX_COUNTER, counters)
    dcounter_ids = ids_for(PREFIX_DIRECT_COUNTER, dcounters)
    meter_ids = ids_for(PREFIX_METER, meters)
    dmeter_ids = ids_for(PREFIX_DIRECT_METER, dmeters)
    register_ids = ids_for(PREFIX_REGISTER, registers)
    table_ids = alloc.allocate(
        PREFIX_TABLE,
        [(t.cp_name, _explicit_id(t.annotations, PREFIX_TABLE, t.cp_name)) for _, t in tables],
    )
    vsets = [vs for p in program.parsers.values() for vs in p.value_sets.values()
             if not _is_hidden(vs.annotations)]
    digest_types: list[ir.StructType] = []
    for st in program.digests:
        if st.name not in [d.name for d in digest_types]:
            digest_types.append(st)
    # Aliases as p4c computes them: the shortest unique suffix among the names of ALL kinds
    # (one suffix set), so a table and a counter sharing a local name both keep a prefix.
    alias = _aliases(sorted(
        {a.cp_name for a in actions} | {t.cp_name for _, t in tables}
        | {i.cp_name for _, i in profiles + counters + dcounters + meters + dmeters + registers}
        | {vs.cp_name for vs in vsets} | {h.name for h in program.controller_headers.values()}
        | {st.name for st in digest_types}))

    # ---- tables
    profile_tables: dict[str, list[int]] = {}
    dres_table: dict[str, int] = {}
    for c, t in tables:
        pt = p4info.tables.add()
        pt.preamble.id = table_ids[t.cp_name]
        pt.preamble.name = t.cp_name
        pt.preamble.alias = alias[t.cp_name]
        _annotate(pt.preamble, t.annotations)
        _doc(pt.preamble.doc, t.annotations)
        if t.annotations.get("support_timeout") == "true":
            pt.idle_timeout_behavior = p4info_pb2.Table.NOTIFY_CONTROL
        # selector keys take a position (p4c numbers all keys) but are not match fields
        fids = _member_ids([(k.name, k.annotations) for k in t.keys], t.cp_name)
        for fid, k in zip(fids, t.keys, strict=True):
            if k.match_kind == "selector":
                continue
            _register_type(types, k.expr.type)
            # an error key has no bitwidth in p4c's P4Info (its type is in type_info)
            mf = pt.match_fields.add(id=fid, name=k.name, bitwidth=_bitwidth(k.expr.type))
            if k.match_kind in _MATCH_TYPES:
                mf.match_type = _MATCH_TYPES[k.match_kind]
            else:
                mf.other_match_type = k.match_kind
            _annotate(mf, k.annotations)
            if "hidden" in k.annotations:  # a key is never left out: p4c lists it as hidden
                mf.annotations.insert(list(k.annotations).index("hidden"), "@hidden")
            _doc(mf.doc, k.annotations)
            _type_name(types, mf, k.type_name)
        for ref in t.actions:
            if ref.action not in key_to_action_id:
                continue
            ar = pt.action_refs.add(id=key_to_action_id[ref.action], scope=_SCOPES[ref.scope])
            _annotate(ar, ref.annotations)
            # the front end's implicit ``@defaultonly NoAction`` has a scope but no annotation
            if ref.scope and f"@{ref.scope}" not in ar.annotations:
                ar.annotations.append(f"@{ref.scope}")
        da = t.default_action
        if da.action in key_to_action_id:
            if t.default_action_const:
                pt.const_default_action_id = key_to_action_id[da.action]
            pt.initial_default_action.action_id = key_to_action_id[da.action]
            action = program.actions[da.action]
            pids = _member_ids(
                [(p.name, p.annotations) for p in action.data_params], action.cp_name
            )
            for pid, prm, arg in zip(pids, action.data_params, da.args, strict=False):
                width = _bitwidth(prm.type)
                value = _const_int(arg) & ((1 << width) - 1) if width else _const_int(arg)
                # p4c writes the argument at the parameter's full width, not canonically
                data = value.to_bytes(max(1, (width + 7) // 8), "big") if width else canonical(
                    value)
                pt.initial_default_action.arguments.add(param_id=pid, value=data)
        impl = _find_instance(ctx, c, t.implementation)
        if impl is not None and impl.cp_name in profile_ids:
            pt.implementation_id = profile_ids[impl.cp_name]
            profile_tables.setdefault(impl.cp_name, []).append(pt.preamble.id)
        for res_name, res_ids in ((t.direct_counter, dcounter_ids), (t.direct_meter, dmeter_ids)):
            res = _find_instance(ctx, c, res_name)
            if res is not None and res.cp_name in res_ids:
                pt.direct_resource_ids.append(res_ids[res.cp_name])
                dres_table[res.cp_name] = pt.preamble.id
        pt.size = t.size
        if t.const_entries is not None:
            pt.is_const_table = True
            pt.has_initial_entries = len(t.const_entries) > 0
        if t.initial_entries:  # non-const ``entries``: initial, not const (as p4c says)
            pt.has_initial_entries = True

    # ---- actions
    for a in actions:
        pa = p4info.actions.add()
        pa.preamble.id = action_ids[a.cp_name]
        pa.preamble.name = a.cp_name
        pa.preamble.alias = alias[a.cp_name]
        _annotate(pa.preamble, a.annotations)
        _doc(pa.preamble.doc, a.annotations)
        # an action only ever called directly has its data bound at each call: p4c lists no
        # parameters for it (the control plane supplies none)
        params = a.data_params if a.name in by_tables else []
        pids = _member_ids([(p.name, p.annotations) for p in params], a.cp_name)
        for pid, p in zip(pids, params, strict=True):
            _register_type(types, p.type)
            # p4c names a parameter by its @name
            pp = pa.params.add(id=pid, name=str(p.annotations.get("name") or p.name),
                               bitwidth=_bitwidth(p.type))
            _annotate(pp, p.annotations)
            _doc(pp.doc, p.annotations)
            _type_name(types, pp, p.type_name)

    # ---- action profiles
    for _, inst in profiles:
        ap = p4info.action_profiles.add()
        _action_profile(ap, profile_ids[inst.cp_name], inst, alias)
        ap.table_ids.extend(profile_tables.get(inst.cp_name, []))

    # ---- counters / direct counters
    for _, inst in counters:
        pc = p4info.counters.add()
        _preamble(pc.preamble, counter_ids[inst.cp_name], inst, alias)
        pc.size = _const_int(inst.args[0] if inst.args else None)
        pc.spec.unit = _unit(inst.args[1] if len(inst.args) > 1 else None,
                             _COUNTER_UNITS, _COUNTER_ORDER)
    for _, inst in dcounters:
        pd = p4info.direct_counters.add()
        _preamble(pd.preamble, dcounter_ids[inst.cp_name], inst, alias)
        pd.spec.unit = _unit(inst.args[0] if inst.args else None, _COUNTER_UNITS, _COUNTER_ORDER)
        pd.direct_table_id = dres_table.get(inst.cp_name, 0)

    # ---- meters / direct meters
    for _, inst in meters:
        pm = p4info.meters.add()
        _preamble(pm.preamble, meter_ids[inst.cp_name], inst, alias)
        pm.size = _const_int(inst.args[0] if inst.args else None)
        pm.spec.unit = _unit(inst.args[1] if len(inst.args) > 1 else None,
                             _METER_UNITS, _METER_ORDER)
    for _, inst in dmeters:
        pd = p4info.direct_meters.add()
        _preamble(pd.preamble, dmeter_ids[inst.cp_name], inst, alias)
        pd.spec.unit = _unit(inst.args[0] if inst.args else None, _METER_UNITS, _METER_ORDER)
        pd.direct_table_id = dres_table.get(inst.cp_name, 0)

    # ---- registers
    for _, inst in registers:
        pr = p4info.registers.add()
        _preamble(pr.preamble, register_ids[inst.cp_name], inst, alias)
        pr.size = _const_int(inst.args[0] if inst.args else None)
        if inst.type_args:
            pr.type_spec.CopyFrom(types.spec(inst.type_args[0]))

    # ---- controller packet metadata
    # p4c names the entry by the annotation's argument but hashes the header type's name.
    cph = sorted(program.controller_headers.items())
    cph_ids = alloc.allocate(
        PREFIX_CONTROLLER_HEADER,
        [(h.name, _explicit_id(dict(h.annotations), PREFIX_CONTROLLER_HEADER, h.name))
         for _, h in cph],
    )
    for name, h in cph:
        cm = p4info.controller_packet_metadata.add()
        cm.preamble.id = cph_ids[h.name]
        cm.preamble.name = name
        cm.preamble.alias = name
        cm.preamble.annotations.append(f'@controller_header("{name}")')
        # p4c lists @padding fields too (annotated, so a client knows to leave them zero);
        # only @hidden ones are left out, and those still hold their position's id.
        fields = controller_fields(h)
        mids = _member_ids([(f.name, f.annotations) for f in fields], name)
        for mid, f in zip(mids, fields, strict=True):
            if "hidden" in dict(f.annotations):
                continue
            md = cm.metadata.add(id=mid, name=f.name, bitwidth=ir.type_width(f.type))
            _annotate(md, f.annotations)
            _type_name(types, md, f.type_name)

    # ---- value sets
    vs_ids = alloc.allocate(
        PREFIX_VALUE_SET,
        [(vs.cp_name, _explicit_id(vs.annotations, PREFIX_VALUE_SET, vs.cp_name))
         for vs in vsets],
    )
    for vs in vsets:
        pv = p4info.value_sets.add()
        pv.preamble.id = vs_ids[vs.cp_name]
        pv.preamble.name = vs.cp_name
        pv.preamble.alias = alias[vs.cp_name]
        pv.size = vs.size
        if isinstance(vs.type, ir.StructType | ir.HeaderType):
            members = [(f.name, f.type, dict(f.annotations)) for f in vs.type.fields]
        else:
            members = [("", vs.type, {})]
        mids = _member_ids([(n, a) for n, _, a in members], vs.cp_name)
        for mid, (mname, mtype, manno) in zip(mids, members, strict=True):
            mf = pv.match.add(id=mid, name=mname, bitwidth=_bitwidth(mtype))
            kind = str(manno.get("match", "exact")).strip()
            if kind in _MATCH_TYPES:
                mf.match_type = _MATCH_TYPES[kind]
            else:
                mf.other_match_type = kind

    # ---- digests (named by the digested type, as p4c does)
    dig_ids = alloc.allocate(
        PREFIX_DIGEST,
        [(st.name, _explicit_id(dict(st.annotations), PREFIX_DIGEST, st.name))
         for st in digest_types],
    )
    for st in digest_types:
        pdg = p4info.digests.add()
        pdg.preamble.id = dig_ids[st.name]
        pdg.preamble.name = st.name
        pdg.preamble.alias = alias[st.name]
        pdg.type_spec.CopyFrom(types.spec(st))

    if _writes_type_info(program, p4info):
        p4info.type_info.SetInParent()
    return p4info


def _writes_type_info(program: ir.Program, p4info: p4info_pb2.P4Info) -> bool:
    """Whether p4c writes a ``type_info`` section, also an empty one: it does once a control
    holds a table or an extern instance, or calls an extern function (p4c's v1model back end
    looks at each), or there are controller headers; actions, header operations and parser
    value sets alone give none (observed with p4c 1.2.5)."""
    if any(len(getattr(p4info, kind)) for kind in (
            "tables", "action_profiles", "counters", "direct_counters", "meters",
            "direct_meters", "controller_packet_metadata", "registers", "digests")):
        return True
    if any(c.instances for c in program.controls.values()):
        return True
    # the actions a control can run (a top-level action no control uses does not count)
    used = {k for c in program.controls.values() for k in c.actions}
    used |= {k for c in program.controls.values() for t in c.tables.values()
             for k in [*(r.action for r in t.actions), t.default_action.action]}
    used |= {k for c in program.controls.values() for k in _direct_action_calls(c.body)}
    bodies = [c.body for c in program.controls.values()]
    bodies += [a.body for k, a in program.actions.items() if k in used]
    stack: list[object] = list(bodies)
    while stack:
        n = stack.pop()
        if isinstance(n, ir.ExternCall | ir.ExternCallExpr) and n.instance is None:
            return True
        if isinstance(n, list | tuple):
            stack.extend(n)
        elif isinstance(n, ir.Stmt | ir.Expr | ir.ActionCase | ir.ValueCase):
            stack.extend(getattr(n, f) for f in n.__dataclass_fields__)
    return False


def _control_order(program: ir.Program) -> list[ir.Control]:
    """The controls in the order p4c visits them: the V1Switch arguments first, in order."""
    first = [program.package[r] for r in ("verify_checksum", "ingress", "egress",
                                          "compute_checksum", "deparser")
             if program.package.get(r) in program.controls]
    return [program.controls[n] for n in first] + [
        c for n, c in program.controls.items() if n not in first]


def _action_order(program: ir.Program, tables: list[tuple[ir.Control, ir.Table]],
                  reached: list[str]) -> list[str]:
    """The reachable actions in p4c's order: control by control, the top-level actions it
    uses first (p4c copies them into the control, in the order they are referenced), then its
    own in declaration order (a sub-control's where it is instantiated)."""
    top = {k for k in program.actions if not any(k in c.actions
                                                 for c in program.controls.values())}
    out: list[str] = []
    for c in _control_order(program):
        refs = [k for _, t in tables if _ in (c,) for k in
                [r.action for r in t.actions] + [t.default_action.action]]
        refs += _direct_action_calls(c.body)
        for k in [*(k for k in refs if k in top), *c.actions]:
            if k in reached and k not in out:
                out.append(k)
    out += [k for k in reached if k not in out]
    return out


def _direct_action_calls(node: object) -> list[str]:
    """Keys of the actions a control body calls directly, in source order (any depth)."""
    out: list[str] = []
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, ir.ActionCall):
            out.append(n.action)
        if isinstance(n, list | tuple):
            stack.extend(reversed(n))
        elif isinstance(n, ir.Stmt | ir.ActionCase | ir.ValueCase):
            stack.extend(reversed(_live_parts(n)))
    return out


def _live_parts(n: ir.Stmt | ir.Expr | ir.ActionCase | ir.ValueCase) -> list[object]:
    """The parts of a node that can run: p4c drops the branch an ``if`` on a constant never
    takes (and what only that branch calls or applies)."""
    if isinstance(n, ir.If) and isinstance(n.cond, ir.Const):
        return [n.then if n.cond.value else n.else_]
    return [getattr(n, f) for f in n.__dataclass_fields__]


def _applied_by(control: ir.Control) -> set[str]:
    """The tables a control applies: from its body, and from the keys of those tables
    (``key = { t.apply().hit : exact; }`` applies ``t``)."""
    out = _applied_tables(control.body)
    todo = list(out)
    while todo:
        t = control.tables.get(todo.pop())
        for name in _applied_tables([k.expr for k in t.keys] if t is not None else []) - out:
            out.add(name)
            todo.append(name)
    return out


def _applied_tables(node: object) -> set[str]:
    """Names of the tables a control body applies: ``t.apply();``, ``t.apply().hit`` and
    ``switch (t.apply().action_run)``, at any depth (statements and expressions)."""
    out: set[str] = set()
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, ir.ApplyTable | ir.TableHit | ir.SwitchAction):
            out.add(n.table)
        if isinstance(n, list | tuple):
            stack.extend(n)
        elif isinstance(n, ir.Stmt | ir.Expr | ir.ActionCase | ir.ValueCase):
            stack.extend(_live_parts(n))
    return out


def _type_name(types: _TypeInfo, msg, name: str) -> None:  # noqa: ANN001 - field/param/meta
    """A member declared with a newtype carries its name (``type_name``), as p4c writes."""
    if name and name in types.new_types:
        msg.type_name.name = name
        types.new_type(name)
        translated = types.translation(name)
        if translated is not None:  # the controller's width (none for a string)
            msg.bitwidth = translated[1] or 0


def _register_type(types: _TypeInfo, t: ir.Type) -> None:
    """Enter a named type of a match field / action parameter into ``type_info`` (p4c does)."""
    if isinstance(t, ir.EnumType | ir.StructType | ir.HeaderType | ir.ErrorType):
        try:
            types.spec(t)
        except P4InfoError:
            pass


def canonical(value: int) -> bytes:
    """P4Runtime canonical bytestring (spec: shortest big-endian string, at least one byte)."""
    return value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big")


def _bitwidth(t: ir.Type) -> int:
    if isinstance(t, ir.EnumType) and t.underlying is not None:
        return t.underlying.width
    try:
        return ir.type_width(t)
    except TypeError:
        return 0


def controller_fields(h: ir.HeaderType) -> list[ir.Field]:
    """A controller header's fields as p4c lists them: a header holding a struct is
    flattened, its fields named by their path (``s.f``) with the annotations of the field and
    of the structs around it (the innermost one of each name)."""
    if not any(isinstance(f.type, ir.StructType) for f in h.fields):
        return list(h.fields)
    out: list[ir.Field] = []

    def walk(fields: Sequence[ir.Field], path: list[str], outer: list[tuple]) -> None:
        for f in fields:
            annos = [tuple(f.annotations), *outer]
            if isinstance(f.type, ir.StructType):
                walk(f.type.fields, [*path, f.name], annos)
                continue
            merged: dict[str, str] = {}
            for level in annos:
                for k, v in level:
                    merged.setdefault(k, v)
            merged.pop("name", None)
            out.append(replace(f, name=".".join([*path, f.name]),
                               annotations=tuple(merged.items())))

    walk(h.fields, [], [])
    return out


def _first(annotations: dict[str, str], key: str) -> str | None:
    """The first ``@key`` of an object, as p4c reads a size annotation (``getAnnotation``)."""
    body = annotations.get(key)
    if isinstance(body, ir.AnnotationText) and body.earlier:
        return body.earlier[0].strip().strip('"')
    return None if body is None else str(body).strip()


def _action_profile(ap: p4info_pb2.ActionProfile, pid: int, inst: ir.ExternInstance,
                    aliases: dict[str, str]) -> None:
    """An action profile or selector: p4c reads ``@max_group_size``,
    ``@selector_size_semantics`` and ``@max_member_weight`` of a selector only (ignoring
    them, with a warning, on a profile) and lists none of them as annotations."""
    sizing = ("max_group_size", "selector_size_semantics", "max_member_weight")
    _preamble(ap.preamble, pid, replace(inst, annotations={
        k: v for k, v in inst.annotations.items() if k not in sizing}), aliases)
    ap.with_selector = inst.type_name == "action_selector"
    size_at = 1 if ap.with_selector else 0
    ap.size = _const_int(inst.args[size_at] if len(inst.args) > size_at else None)
    if not ap.with_selector:
        return
    mgs = _first(inst.annotations, "max_group_size")
    if mgs is not None:
        ap.max_group_size = int(mgs, 0)
    semantics = (_first(inst.annotations, "selector_size_semantics") or "").upper()
    if semantics == "SUM_OF_WEIGHTS":
        ap.sum_of_weights.SetInParent()
    elif semantics == "SUM_OF_MEMBERS":
        ap.sum_of_members.SetInParent()
        mmw = _first(inst.annotations, "max_member_weight")
        if mmw is not None:
            ap.sum_of_members.max_member_weight = int(mmw, 0)


def _preamble(pre: p4info_pb2.Preamble, pid: int, inst: ir.ExternInstance,
              aliases: dict[str, str]) -> None:
    pre.id = pid
    pre.name = inst.cp_name
    pre.alias = aliases[inst.cp_name]
    _annotate(pre, inst.annotations)
    _doc(pre.doc, inst.annotations)


# --------------------------------------------------------------------------------------------
# Serialisation (what ``python -m p4switch.compile --p4info-format`` writes)
# --------------------------------------------------------------------------------------------

FORMATS = ("text", "binary", "json")


def serialize(p4info: p4info_pb2.P4Info, fmt: str = "text") -> bytes:
    """P4Info as protobuf text (what p4runtime-shell's ``--config`` reads), binary or JSON."""
    if fmt == "text":
        return text_format.MessageToString(p4info).encode()
    if fmt == "binary":
        return p4info.SerializeToString()
    if fmt == "json":
        return json_format.MessageToJson(p4info).encode()
    raise ValueError(f"unknown P4Info format {fmt!r} (choose from {', '.join(FORMATS)})")


def parse(data: bytes, fmt: str = "text") -> p4info_pb2.P4Info:
    p4info = p4info_pb2.P4Info()
    if fmt == "text":
        text_format.Parse(data.decode(), p4info)
    elif fmt == "binary":
        p4info.ParseFromString(data)
    elif fmt == "json":
        json_format.Parse(data.decode(), p4info)
    else:
        raise ValueError(f"unknown P4Info format {fmt!r}")
    return p4info
