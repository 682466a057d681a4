"""The controller contract of a P4 program as data, from two sources, so two programs compare:

* a P4Info (p4switch's for the v1model fabric.p4; the Tofino compiler's for tna/fabric.p4 when
  ``p4c-barefoot`` is on PATH), and
* the TNA program's own declarations, read by a small parser of just the constructs the contract
  names: ``#define``/``const``, typedefs, headers and structs (for key widths), and in each
  control its actions, tables, registers, counters and action profiles. p4switch's front end
  parses v1model only (no TNA externs), and the Tofino compiler is not on CI.

:func:`differences` renders what differs between two contracts as ``(kind, name, left, right)``
tuples, the form ``model.tna.DIFFERENCES`` declares.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from p4.config.v1 import p4info_pb2

MATCH_KINDS = {2: "exact", 3: "lpm", 4: "ternary", 5: "range", 6: "optional"}
"""P4Info's MatchField.MatchType values."""
_GENERIC = r"<((?:[^<>]|<[^<>]*>)*)>"
"""A type-argument list, one level of nesting (``<bit<32>, bit<12>>``)."""


@dataclass(frozen=True)
class Key:
    name: str
    match: str
    width: int


@dataclass(frozen=True)
class Table:
    name: str
    keys: tuple[Key, ...]
    actions: tuple[str, ...]
    size: int
    implementation: str | None = None
    direct_counter: str | None = None
    default_only: frozenset[str] = frozenset()
    """The actions listed ``@defaultonly`` (P4Info: ActionRef scope DEFAULT_ONLY)."""


@dataclass(frozen=True)
class Action:
    name: str
    params: tuple[tuple[str, int], ...]


@dataclass
class Contract:
    tables: dict[str, Table] = field(default_factory=dict)
    actions: dict[str, Action] = field(default_factory=dict)
    registers: dict[str, tuple[int, int]] = field(default_factory=dict)
    """name -> (cell width, size)."""
    counters: dict[str, int] = field(default_factory=dict)
    """indexed counters: name -> size."""
    direct_counters: dict[str, str] = field(default_factory=dict)
    """name -> table."""
    profiles: dict[str, int] = field(default_factory=dict)
    """action profiles / selectors: name -> size."""
    selectors: dict[str, int] = field(default_factory=dict)
    """the profiles that are action selectors: name -> max group size (0: not stated)."""
    packet_metadata: dict[str, tuple[tuple[str, int], ...]] = field(default_factory=dict)
    constants: dict[str, int] = field(default_factory=dict)


# ---- from a P4Info -------------------------------------------------------------------------
def _strip_pipe(name: str, prefix: str) -> str:
    return name[len(prefix):] if prefix and name.startswith(prefix) else name


def from_p4info(info: p4info_pb2.P4Info, pipe_prefix: str = "") -> Contract:
    """``pipe_prefix`` ("pipe.") is stripped from names (the Tofino compiler qualifies TNA names
    with the pipeline's unless told to write standard P4Info)."""
    c = Contract()
    p = info

    def nm(obj: Any) -> str:
        return _strip_pipe(obj.preamble.name, pipe_prefix)

    action_names = {a.preamble.id: nm(a) for a in p.actions}
    for a in p.actions:
        c.actions[nm(a)] = Action(nm(a), tuple((q.name, q.bitwidth) for q in a.params))
    profile_names = {x.preamble.id: nm(x) for x in p.action_profiles}
    for x in p.action_profiles:
        c.profiles[nm(x)] = x.size
        if x.with_selector:
            c.selectors[nm(x)] = x.max_group_size
    direct = {d.preamble.id: d for d in p.direct_counters}
    table_names = {t.preamble.id: nm(t) for t in p.tables}
    for t in p.tables:
        keys = tuple(Key(f.name, MATCH_KINDS.get(f.match_type, str(f.match_type)), f.bitwidth)
                     for f in t.match_fields)
        acts = tuple(action_names[r.id] for r in t.action_refs)
        impl = profile_names.get(t.implementation_id)
        dc = next((nm(direct[i]) for i in t.direct_resource_ids if i in direct), None)
        dflt = frozenset(action_names[r.id] for r in t.action_refs
                         if r.scope == p4info_pb2.ActionRef.DEFAULT_ONLY)
        c.tables[nm(t)] = Table(nm(t), keys, acts, t.size, impl, dc, dflt)
    for r in p.registers:
        c.registers[nm(r)] = (r.type_spec.bitstring.bit.bitwidth, r.size)
    for k in p.counters:
        c.counters[nm(k)] = k.size
    for d in p.direct_counters:
        c.direct_counters[nm(d)] = table_names.get(d.direct_table_id, "?")
    for m in p.controller_packet_metadata:
        c.packet_metadata[m.preamble.name] = tuple((f.name, f.bitwidth) for f in m.metadata)
    return c


# ---- from the TNA program's declarations ----------------------------------------------------
class ContractParseError(ValueError):
    pass


# Widths of the TNA names the program uses from tna.p4 (Tofino 1 and 2 alike).
TNA_TYPES = {"PortId_t": 9}
TNA_INTRINSIC = {("egress_intrinsic_metadata_t", "egress_port"): 9,
                 ("ingress_intrinsic_metadata_t", "ingress_port"): 9}


def _strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def read_with_includes(path: Path) -> str:
    """The file with its relative ``#include "x"`` files inlined (system includes dropped)."""
    out = []
    for line in _strip_comments(path.read_text()).splitlines():
        m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
        if m:
            out.append(read_with_includes((path.parent / m.group(1)).resolve()))
        elif not re.match(r"\s*#\s*include\s+<", line):
            out.append(line)
    return "\n".join(out)


def _block(text: str, start: int) -> tuple[str, int]:
    """The text inside the braces whose ``{`` is at or after ``start``, and the end index."""
    i = text.index("{", start)
    depth = 0
    for j in range(i, len(text)):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return text[i + 1:j], j + 1
    raise ContractParseError("unbalanced braces")


def _int(expr: str, defines: dict[str, int]) -> int:
    expr = expr.strip()
    if expr in defines:
        return defines[expr]
    m = re.fullmatch(r"(?:\d+w)?(0x[0-9a-fA-F]+|\d+)", expr)
    if not m:
        raise ContractParseError(f"cannot evaluate {expr!r}")
    return int(m.group(1), 0)


class _Types:
    """typedefs, headers and structs: resolve ``a.b.c`` to a width from a control's params."""

    def __init__(self, text: str) -> None:
        self.typedefs = {n: int(w) for w, n in re.findall(r"typedef\s+bit<(\d+)>\s+(\w+)\s*;",
                                                          text)}
        self.fields: dict[str, dict[str, str]] = {}
        for m in re.finditer(r"\b(header|struct)\s+(\w+)\s*\{", text):
            body, _ = _block(text, m.end() - 1)
            self.fields[m.group(2)] = {n: t.strip() for t, n in
                                       re.findall(r"([\w<>\s]+?)\s+(\w+)\s*;", body)}

    def width(self, typ: str) -> int:
        typ = typ.strip()
        m = re.fullmatch(r"bit<(\d+)>", typ)
        if m:
            return int(m.group(1))
        if typ == "bool":
            return 1
        if typ in self.typedefs:
            return self.typedefs[typ]
        if typ in TNA_TYPES:
            return TNA_TYPES[typ]
        raise ContractParseError(f"unknown type {typ!r}")

    def path_width(self, path: str, params: dict[str, str]) -> int:
        head, *rest = path.split(".")
        typ = params.get(head)
        if typ is None:
            raise ContractParseError(f"{path}: {head} is not a parameter of the control")
        for i, f in enumerate(rest):
            if (typ, f) in TNA_INTRINSIC and i == len(rest) - 1:
                return TNA_INTRINSIC[(typ, f)]
            if typ not in self.fields or f not in self.fields[typ]:
                raise ContractParseError(f"{path}: no field {f} in {typ}")
            typ = self.fields[typ][f]
        return self.width(typ)


def _params(sig: str, types: _Types) -> tuple[tuple[str, int], ...]:
    out = []
    for part in filter(None, (s.strip() for s in sig.split(","))):
        m = re.fullmatch(r"(?:in|out|inout\s+)?([\w<>]+)\s+(\w+)", part)
        if not m:
            raise ContractParseError(f"cannot read action parameter {part!r}")
        out.append((m.group(2), types.width(m.group(1))))
    return tuple(out)


def _table(name: str, body: str, control: str, params: dict[str, str], types: _Types,
           defines: dict[str, int]) -> Table:
    keys: list[Key] = []
    km = re.search(r"\bkey\s*=\s*\{(.*?)\}", body, flags=re.S)
    if km:
        for expr, kind in re.findall(r"([\w.\[\]:]+)\s*:\s*(\w+)\s*(?:@\w+(?:\([^)]*\))?\s*)*;",
                                     km.group(1)):
            if kind == "selector":  # P4Info lists no selector fields
                continue
            keys.append(Key(expr, kind, types.path_width(expr, params)))
    am = re.search(r"\bactions\s*=\s*\{(.*?)\}", body, flags=re.S)
    if not am:
        raise ContractParseError(f"table {name} has no actions")
    acts, default_only = [], set()
    for a in filter(None, (s.strip() for s in am.group(1).split(";"))):
        only_default = "@defaultonly" in a
        a = re.sub(r"@\w+(\([^)]*\))?\s*", "", a).strip()
        acts.append(a if a == "NoAction" else f"{control}.{a}")
        if only_default:
            default_only.add(acts[-1])
    sm = re.search(r"\bsize\s*=\s*(\w+)\s*;", body)
    im = re.search(r"\bimplementation\s*=\s*(\w+)\s*;", body)
    cm = re.search(r"\bcounters\s*=\s*(\w+)\s*;", body)
    return Table(f"{control}.{name}", tuple(keys), tuple(acts),
                 _int(sm.group(1), defines) if sm else 0,
                 f"{control}.{im.group(1)}" if im else None,
                 f"{control}.{cm.group(1)}" if cm else None, frozenset(default_only))


def from_tna_source(path: Path) -> Contract:
    """The contract that ``path`` (a TNA program) declares; ContractParseError when a construct
    the contract needs cannot be read."""
    text = read_with_includes(path)
    c = Contract()
    defines = {n: int(v, 0) for n, v in re.findall(r"#define\s+(\w+)\s+(0x[0-9a-fA-F]+|\d+)\b",
                                                   text)}
    for _typ, n, v in re.findall(r"\bconst\s+([\w<>]+)\s+(\w+)\s*=\s*(\w+)\s*;", text):
        c.constants[n] = _int(v, defines)
    c.constants.update(defines)
    types = _Types(text)
    for m in re.finditer(r'@controller_header\("(\w+)"\)\s*header\s+(\w+)', text):
        fields = types.fields[m.group(2)]
        c.packet_metadata[m.group(1)] = tuple((f, types.width(t)) for f, t in fields.items())
    for m in re.finditer(r"\bcontrol\s+(\w+)\s*\(([^)]*)\)\s*\{", text):
        control = m.group(1)
        params = {}
        for part in m.group(2).split(","):
            pm = re.fullmatch(r"\s*(?:in|out|inout)?\s*(\w+)\s+(\w+)\s*", part)
            if pm:
                params[pm.group(2)] = pm.group(1)
        body, _ = _block(text, m.end() - 1)
        for am in re.finditer(r"\baction\s+(\w+)\s*\(([^)]*)\)\s*\{", body):
            name = f"{control}.{am.group(1)}"
            c.actions[name] = Action(name, _params(am.group(2), types))
        for tm in re.finditer(r"\btable\s+(\w+)\s*\{", body):
            tbody, _ = _block(body, tm.end() - 1)
            t = _table(tm.group(1), tbody, control, params, types, defines)
            c.tables[t.name] = t
            if t.direct_counter:
                c.direct_counters[t.direct_counter] = t.name
        for rm in re.finditer(r"\bRegister\s*" + _GENERIC + r"\s*\(\s*(\w+)[^)]*\)\s*(\w+)\s*;",
                              body):
            cell = rm.group(1).split(",")[0]
            c.registers[f"{control}.{rm.group(3)}"] = (types.width(cell),
                                                       _int(rm.group(2), defines))
        for km in re.finditer(r"\bCounter\s*" + _GENERIC + r"\s*\(\s*(\w+)\s*,[^)]*\)\s*(\w+)\s*;",
                              body):
            c.counters[f"{control}.{km.group(3)}"] = _int(km.group(2), defines)
        for pm in re.finditer(r"\bActionProfile\s*\(\s*(\w+)\s*\)\s*(\w+)\s*;", body):
            c.profiles[f"{control}.{pm.group(2)}"] = _int(pm.group(1), defines)
        for sm in re.finditer(r"\bActionSelector\s*\(\s*(\w+)\s*,([^;]*?)\)\s*(\w+)\s*;", body):
            name = f"{control}.{sm.group(3)}"
            c.profiles[name] = c.profiles.get(f"{control}.{sm.group(1)}", 0)
            # (profile, hash, mode, max_group_size, num_groups)
            args = [a.strip() for a in sm.group(2).split(",")]
            c.selectors[name] = _int(args[2], defines) if len(args) >= 3 else 0
    # only actions some table lists are part of the contract (as in a P4Info)
    used = {a for t in c.tables.values() for a in t.actions}
    c.actions = {n: a for n, a in c.actions.items() if n in used}
    if "NoAction" in used:
        c.actions["NoAction"] = Action("NoAction", ())
    return c


# ---- comparing two contracts -----------------------------------------------------------------
Difference = tuple[str, str, str, str]
ABSENT = "absent"


def _keys(t: Table) -> str:
    return ", ".join(f"{k.name}:{k.match}:{k.width}" for k in t.keys)


def _params_str(a: Action) -> str:
    return ", ".join(f"{n}:{w}" for n, w in a.params) or "()"


def differences(left: Contract, right: Contract) -> set[Difference]:
    """``(kind, name, left, right)`` for every aspect in which the two contracts differ."""
    out: set[Difference] = set()

    def both(kind: str, a: dict, b: dict, render) -> None:
        for name in sorted(set(a) | set(b)):
            x = render(a[name]) if name in a else ABSENT
            y = render(b[name]) if name in b else ABSENT
            if x != y:
                out.add((kind, name, x, y))

    tl, tr = left.tables, right.tables
    for name in sorted(set(tl) | set(tr)):
        if name not in tl or name not in tr:
            out.add(("table", name, "present" if name in tl else ABSENT,
                     "present" if name in tr else ABSENT))
            continue
        a, b = tl[name], tr[name]
        for kind, x, y in (("table-keys", _keys(a), _keys(b)),
                           ("table-actions", ", ".join(sorted(a.actions)),
                            ", ".join(sorted(b.actions))),
                           ("table-size", str(a.size), str(b.size)),
                           ("table-implementation", str(a.implementation),
                            str(b.implementation))):
            if x != y:
                out.add((kind, name, x, y))
    both("action", left.actions, right.actions, _params_str)
    both("register", left.registers, right.registers, lambda r: f"bit<{r[0]}> x {r[1]}")
    both("counter", left.counters, right.counters, str)
    both("direct-counter", left.direct_counters, right.direct_counters, str)
    both("action-profile", left.profiles, right.profiles, str)
    both("packet-metadata", left.packet_metadata, right.packet_metadata,
         lambda fs: ", ".join(f"{n}:{w}" for n, w in fs))
    return out


# ---- a P4Info from a contract ------------------------------------------------------------------
def to_p4info(c: Contract) -> p4info_pb2.P4Info:
    """A P4Info carrying ``c`` (ids numbered per kind with the spec's prefixes): what the
    controller's codec is checked against when the Tofino compiler's own P4Info is not at hand."""
    info = p4info_pb2.P4Info()
    kinds = {v: k for k, v in MATCH_KINDS.items()}
    action_ids = {}
    for i, (name, a) in enumerate(sorted(c.actions.items()), 1):
        pa = info.actions.add()
        pa.preamble.id, pa.preamble.name = (0x01 << 24) | i, name
        pa.preamble.alias = name.split(".")[-1]
        action_ids[name] = pa.preamble.id
        for j, (pn, w) in enumerate(a.params, 1):
            pa.params.add(id=j, name=pn, bitwidth=w)
    profile_ids = {}
    for i, (name, size) in enumerate(sorted(c.profiles.items()), 1):
        pp = info.action_profiles.add()
        pp.preamble.id, pp.preamble.name, pp.size = (0x11 << 24) | i, name, size
        if name in c.selectors:
            pp.with_selector = True
            pp.max_group_size = c.selectors[name]
        profile_ids[name] = pp.preamble.id
    table_ids = {}
    for i, (name, t) in enumerate(sorted(c.tables.items()), 1):
        pt = info.tables.add()
        pt.preamble.id, pt.preamble.name, pt.size = (0x02 << 24) | i, name, t.size
        table_ids[name] = pt.preamble.id
        for j, k in enumerate(t.keys, 1):
            pt.match_fields.add(id=j, name=k.name, bitwidth=k.width, match_type=kinds[k.match])
        for a in t.actions:
            ref = pt.action_refs.add(id=action_ids[a])
            if a in t.default_only:
                ref.scope = p4info_pb2.ActionRef.DEFAULT_ONLY
        if t.implementation:
            pt.implementation_id = profile_ids[t.implementation]
            for pp in info.action_profiles:
                if pp.preamble.name == t.implementation:
                    pp.table_ids.append(pt.preamble.id)
    for i, (name, (w, size)) in enumerate(sorted(c.registers.items()), 1):
        pr = info.registers.add()
        pr.preamble.id, pr.preamble.name, pr.size = (0x16 << 24) | i, name, size
        pr.type_spec.bitstring.bit.bitwidth = w
    for i, (name, size) in enumerate(sorted(c.counters.items()), 1):
        pc = info.counters.add()
        pc.preamble.id, pc.preamble.name, pc.size = (0x12 << 24) | i, name, size
    for i, (name, table) in enumerate(sorted(c.direct_counters.items()), 1):
        pd = info.direct_counters.add()
        pd.preamble.id, pd.preamble.name = (0x13 << 24) | i, name
        pd.direct_table_id = table_ids[table]
    for i, (name, fields) in enumerate(sorted(c.packet_metadata.items()), 1):
        pm = info.controller_packet_metadata.add()
        pm.preamble.id, pm.preamble.name = (0x04 << 24) | i, name
        for j, (fn, w) in enumerate(fields, 1):
            pm.metadata.add(id=j, name=fn, bitwidth=w)
    return info
