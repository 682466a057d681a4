"""Execute an STF file against a p4switch pipeline and check its expectations.

The semantics follow p4c's BMv2 driver (see the package docstring): control-plane commands and
packets run in file order; every output packet is recorded per egress port; at the end, the
packets seen on each port are compared, in order, with that port's ``expect`` lines. Counter and
register checks happen at their line, with every earlier packet already processed (the pipeline
is synchronous, so there is nothing to wait for).
"""

from __future__ import annotations

import operator
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from p4switch import ir
from p4switch.pipeline import api

from . import syntax as s
from .matcher import compare, spaced
from .values import match_value, number

# Time model: each packet is processed at the current clock, which then advances by this step;
# ``wait <us>`` (a p4switch extension) advances it further. The clock starts at START_US.
START_US = 0
PACKET_STEP_US = 1

EXIT_OK = 0
EXIT_FAIL = 1
EXIT_COMPILE = 2

_OPS: dict[str, Callable[[Any, Any], bool]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


class StfRunError(Exception):
    """A command that cannot be executed (unknown name, rejected state operation, ...)."""


@dataclass
class Received:
    """One packet that left the switch: ``line`` is the STF line of the packet that caused it."""

    port: int
    data: bytes
    line: int


@dataclass
class StfResult:
    """Outcome of one STF run. ``exit_code`` is what the CLI exits with; ``message`` is the first
    failure (empty on success); ``failures`` lists every failure found, first-by-line first."""

    exit_code: int
    message: str = ""
    failures: list[str] = field(default_factory=list)
    received: list[Received] = field(default_factory=list)
    log: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.exit_code == EXIT_OK


@dataclass
class _Failure:
    line: int
    text: str


def _dot_suffix_lookup(name: str, candidates: dict[str, Any], what: str) -> Any:
    """Resolve ``name`` as bmv2stf does: an exact name, else a unique dot-suffix, else a unique
    plain suffix (bmv2stf's ``endswith``)."""
    if name in candidates:
        return candidates[name]
    for pred in (lambda c: c.endswith("." + name), lambda c: c.endswith(name)):
        hits = sorted({c for c in candidates if pred(c)})
        if len(hits) == 1:
            return candidates[hits[0]]
        if len(hits) > 1:
            raise StfRunError(f"{what} name {name!r} is ambiguous: {', '.join(hits)}")
    raise StfRunError(f"no {what} named {name!r}")


class StfRunner:
    """Runs parsed STF commands against one pipeline built from ``program``."""

    def __init__(
        self,
        program: ir.Program,
        pipeline: api.PipelineAPI,
        stf_name: str,
        *,
        verbose: bool = False,
        echo: Callable[[str], None] | None = None,
        strict: bool = False,
    ) -> None:
        self.program = program
        self.strict = strict
        self.pipeline = pipeline
        self.stf_name = stf_name
        self.verbose = verbose
        self.echo = echo
        self.now = START_US
        self.log: list[str] = []
        self.received: list[Received] = []
        self.expects: dict[int, list[s.ExpectCmd]] = {}
        self.any_ports: set[int] = set()
        self.ports_named: set[int] = set()
        self.failures: list[_Failure] = []
        self.tables = {t.cp_name: t for t in program.all_tables()}
        # multicast bookkeeping, as simple_switch's PRE numbers nodes: handles 0, 1, 2, ...
        self.mc_nodes: dict[int, tuple[int, list[int]]] = {}
        self.mc_groups: dict[int, list[int]] = {}

    # ---------------------------------------------------------------------------------------
    def say(self, text: str) -> None:
        self.log.append(text)
        if self.verbose and self.echo is not None:
            self.echo(text)

    def run(self, commands: list[s.Command]) -> StfResult:
        for cmd in commands:
            if isinstance(cmd, s.PacketCmd | s.ExpectCmd):
                self.ports_named.add(cmd.port)
        for cmd in commands:
            try:
                self.execute(cmd)
            except (StfRunError, api.StateError, ValueError, KeyError) as e:
                text = f"{self.stf_name}:{cmd.line}: {_describe(e)}"
                return self._result([_Failure(cmd.line, text)])
        self._check_packets()
        return self._result(self.failures)

    def _result(self, failures: list[_Failure]) -> StfResult:
        ordered = sorted(failures, key=lambda f: f.line)
        texts = [f.text for f in ordered]
        return StfResult(
            exit_code=EXIT_FAIL if texts else EXIT_OK,
            message=texts[0] if texts else "",
            failures=texts,
            received=self.received,
            log=self.log,
        )

    # ---------------------------------------------------------------------------------------
    def execute(self, cmd: s.Command) -> None:
        handler = getattr(self, "_do_" + type(cmd).__name__, None)
        if handler is None:
            raise StfRunError(f"unsupported STF command {type(cmd).__name__}")
        handler(cmd)

    def _do_PacketCmd(self, cmd: s.PacketCmd) -> None:
        self.say(f"packet {cmd.port} {spaced(cmd.data.hex().upper())}  @ t={self.now}us")
        try:
            result = self.pipeline.process(cmd.data, cmd.port, self.now)
        except Exception as e:  # a crash inside the pipeline is a finding, not an STF error
            detail = traceback.format_exc() if self.verbose else f"{type(e).__name__}: {e}"
            raise StfRunError(f"pipeline raised while processing the packet: {detail}") from e
        self.now += PACKET_STEP_US
        for out in result.outputs:
            self.received.append(Received(out.port, out.data, cmd.line))
            self.say(f"  -> port {out.port}: {spaced(out.data.hex().upper())}")
        for drop in result.drops:
            self.say(f"  dropped: {drop.reason} {drop.detail}".rstrip())
        for line in result.logs:
            self.say(f"  log: {line}")
        for d in result.digests:
            self.say(f"  digest {d.name}: {d.values}")

    def _do_ExpectCmd(self, cmd: s.ExpectCmd) -> None:
        if cmd.pattern is None:
            self.any_ports.add(cmd.port)
        else:
            self.expects.setdefault(cmd.port, []).append(cmd)

    def _do_Wait(self, cmd: s.Wait) -> None:
        if cmd.micros:
            self.now += cmd.micros
            self.say(f"wait {cmd.micros}us -> t={self.now}us")

    def _do_NoOp(self, cmd: s.NoOp) -> None:
        self.say(f"{cmd.text} (no effect on p4switch)")

    # tables --------------------------------------------------------------------------------
    def _table(self, name: str) -> ir.Table:
        return _dot_suffix_lookup(name, self.tables, "table")

    def _action_of(self, table: ir.Table | None, name: str) -> ir.Action:
        if table is None:
            cands = {a.cp_name: a for a in self.program.actions.values()}
        else:
            cands = {}
            for ref in table.actions:
                a = self.program.actions[ref.action]
                cands[a.cp_name] = a
        where = f" of table {table.cp_name}" if table is not None else ""
        try:
            return _dot_suffix_lookup(name, cands, "action")
        except StfRunError as e:
            raise StfRunError(f"{e}{where}") from None

    def _params(self, action: ir.Action, args: list[tuple[str, str]]) -> dict[str, int]:
        given = dict(args)
        params: dict[str, int] = {}
        for p in action.data_params:
            if p.name not in given:
                raise StfRunError(f"action {action.cp_name}: missing parameter {p.name}")
            params[p.name] = number(given.pop(p.name), ir.type_width(p.type))
        if given:
            raise StfRunError(f"action {action.cp_name} has no parameter {', '.join(given)}")
        return params

    def _key(self, table: ir.Table, name: str) -> ir.TableKey:
        keys = {k.name: k for k in table.keys}
        norm = _stack_name(name)
        for alias in _key_aliases(norm):
            try:
                return _dot_suffix_lookup(alias, keys, "key")
            except StfRunError as e:
                if "ambiguous" in str(e):
                    raise
        raise StfRunError(
            f"table {table.cp_name} has no key {name!r}; keys are "
            + ", ".join(k.name for k in table.keys)
        )

    def _do_Add(self, cmd: s.Add) -> None:
        table = self._table(cmd.table)
        match: dict[str, api.MatchValue] = {}
        for kv in cmd.keys:
            key = self._key(table, kv.name)
            if key.name in match:
                raise StfRunError(f"key {key.name} given twice")
            match[key.name] = match_value(kv, key.match_kind, key.width)
        for key in table.keys:
            if key.name not in match and key.match_kind == "exact":
                match[key.name] = api.ExactMatch(0)  # bmv2stf fills a missing exact key with 0
        entry = api.TableEntry(match=match, priority=self._priority(table, cmd.priority))
        if cmd.action.member_id is not None:
            entry.member_id = cmd.action.member_id
        elif cmd.action.group_id is not None:
            entry.group_id = cmd.action.group_id
        else:
            action = self._action_of(table, cmd.action.name or "")
            entry.action = action.cp_name
            entry.params = self._params(action, cmd.action.args)
        self.pipeline.table_add(table.cp_name, entry)
        self.say(
            f"add {table.cp_name} prio={entry.priority} {match} -> "
            f"{entry.action or entry.member_id or entry.group_id} {entry.params}"
        )

    @staticmethod
    def _priority(table: ir.Table, stf_priority: int | None) -> int:
        """STF priority p -> api priority p + 1 (both: larger wins; +1 keeps p=0 valid).

        bmv2stf sends ``10000 - p`` to BMv2, where the smaller number wins, so in STF the larger
        ``p`` wins -- the same order as P4Runtime's (and our api's) priorities. Tables without
        ternary/range/optional keys take no priority (bmv2stf drops it too). An entry without a
        priority in a table that needs one gets 1, like ``p = 0`` (bmv2stf would send none,
        which simple_switch_CLI rejects)."""
        if not table.has_priority:
            return 0
        return (stf_priority or 0) + 1

    def _do_SetDefault(self, cmd: s.SetDefault) -> None:
        table = self._table(cmd.table)
        action = self._action_of(table, cmd.action.name or "")
        params = self._params(action, cmd.action.args)
        self.pipeline.table_set_default(table.cp_name, action.cp_name, params)
        self.say(f"setdefault {table.cp_name} {action.cp_name} {params}")

    def _do_RemoveAll(self, cmd: s.RemoveAll) -> None:
        for name in self.tables:
            self.pipeline.table_clear(name)
        self.say("remove all: cleared every table")

    # action profiles (extension) -----------------------------------------------------------
    def _do_Member(self, cmd: s.Member) -> None:
        profile = self.pipeline.resolve("action_profile", cmd.profile)
        action = self._action_of(self._profile_table(profile), cmd.action.name or "")
        member = api.ActionProfileMember(
            cmd.member_id, action.cp_name, self._params(action, cmd.action.args)
        )
        self.pipeline.act_prof_add_member(profile, member)
        self.say(f"member {profile} {cmd.member_id} {action.cp_name} {member.params}")

    def _profile_table(self, profile: str) -> ir.Table | None:
        """A table using the profile (its actions are the ones members may use)."""
        for t in self.tables.values():
            if t.implementation is None:
                continue
            for inst in self.program.all_instances():
                if inst.cp_name == profile and inst.name == t.implementation:
                    return t
        return None

    def _do_Group(self, cmd: s.Group) -> None:
        profile = self.pipeline.resolve("action_profile", cmd.profile)
        group = api.ActionProfileGroup(cmd.group_id, list(cmd.members), max_size=0)
        self.pipeline.act_prof_add_group(profile, group)
        self.say(f"group {profile} {cmd.group_id} {cmd.members}")

    # counters, registers, meters -----------------------------------------------------------
    def _do_CheckCounter(self, cmd: s.CheckCounter) -> None:
        if isinstance(cmd.index, str):
            raise StfRunError(f"unsupported STF command: check_counter by entry id ({cmd.index})")
        name = self.pipeline.resolve("counter", cmd.name)
        packets, bytes_ = self.pipeline.counter_read(name, cmd.index)
        got = packets if cmd.kind == "packets" else bytes_
        self.say(f"check_counter {name}({cmd.index}): packets={packets} bytes={bytes_}")
        if not _OPS[cmd.op](got, cmd.value):
            self.failures.append(
                _Failure(
                    cmd.line,
                    (
                        f"{self.stf_name}:{cmd.line}: check_counter {name}({cmd.index}): expected "
                        f"{cmd.kind} {cmd.op} {cmd.value}, got {cmd.kind} == {got}"
                    ),
                )
            )

    def _do_CheckRegister(self, cmd: s.CheckRegister) -> None:
        name = self.pipeline.resolve("register", cmd.name)
        got = self.pipeline.register_read(name, cmd.index)
        self.say(f"check_register {name}({cmd.index}) = {got}")
        want = cmd.value
        width = self._register_width(name)
        if width and cmd.op in ("==", "!="):
            # int<W> cells may come back signed; compare the bit patterns, as P4Runtime would.
            got, want = got & ((1 << width) - 1), want & ((1 << width) - 1)
        if not _OPS[cmd.op](got, want):
            self.failures.append(
                _Failure(
                    cmd.line,
                    (
                        f"{self.stf_name}:{cmd.line}: check_register {name}({cmd.index}): expected "
                        f"{cmd.op} {cmd.value}, got {got}"
                    ),
                )
            )

    def _register_width(self, name: str) -> int | None:
        for inst in self.program.all_instances():
            if inst.cp_name == name and inst.type_args:
                try:
                    return ir.type_width(inst.type_args[0])
                except TypeError:
                    return None
        return None

    def _do_CounterRead(self, cmd: s.CounterRead) -> None:
        name = self.pipeline.resolve("counter", cmd.name)
        packets, bytes_ = self.pipeline.counter_read(name, cmd.index)
        self.say(f"counter_read {name}[{cmd.index}] = packets {packets}, bytes {bytes_}")

    def _do_CounterWrite(self, cmd: s.CounterWrite) -> None:
        name = self.pipeline.resolve("counter", cmd.name)
        self.pipeline.counter_write(name, cmd.index, cmd.packets, cmd.bytes)

    def _do_RegisterRead(self, cmd: s.RegisterRead) -> None:
        name = self.pipeline.resolve("register", cmd.name)
        self.say(
            f"register_read {name}[{cmd.index}] = {self.pipeline.register_read(name, cmd.index)}"
        )

    def _do_RegisterWrite(self, cmd: s.RegisterWrite) -> None:
        name = self.pipeline.resolve("register", cmd.name)
        self.pipeline.register_write(name, cmd.index, cmd.value)

    def _do_RegisterReset(self, cmd: s.RegisterReset) -> None:
        name = self.pipeline.resolve("register", cmd.name)
        for i in range(self.pipeline.register_size(name)):
            self.pipeline.register_write(name, i, 0)

    def _do_MeterSetRates(self, cmd: s.MeterSetRates) -> None:
        if len(cmd.rates) != 2:
            raise StfRunError("meter rates: expected two rate:burst pairs (committed, peak)")
        name = self.pipeline.resolve("meter", cmd.name)
        (crate, cburst), (prate, pburst) = cmd.rates
        # simple_switch_CLI rates are units per microsecond; the api takes units per second.
        config = api.MeterConfig(
            cir=round(crate * 1e6), cburst=cburst, pir=round(prate * 1e6), pburst=pburst
        )
        indexes = [cmd.index] if cmd.index is not None else range(self._meter_size(name))
        for i in indexes:
            self.pipeline.meter_set(name, i, config)

    def _meter_size(self, name: str) -> int:
        for inst in self.program.all_instances():
            if inst.cp_name == name and inst.args and isinstance(inst.args[0], ir.Const):
                return int(inst.args[0].value)
        raise StfRunError(f"cannot find the size of meter {name}")

    # packet replication ----------------------------------------------------------------------
    def _do_MirroringAdd(self, cmd: s.MirroringAdd) -> None:
        self.pipeline.clone_session_set(cmd.session, [api.Replica(cmd.port, 0)])

    def _do_MirroringAddMc(self, cmd: s.MirroringAddMc) -> None:
        # The session copies to the group's replicas as they are now (not tracked afterwards).
        self.pipeline.clone_session_set(cmd.session, self._replicas(cmd.group))

    def _do_MirroringDelete(self, cmd: s.MirroringDelete) -> None:
        self.pipeline.clone_session_delete(cmd.session)

    def _do_McMgrpCreate(self, cmd: s.McMgrpCreate) -> None:
        if cmd.group in self.mc_groups:
            raise StfRunError(f"multicast group {cmd.group} already exists")
        self.mc_groups[cmd.group] = []
        self.pipeline.mcast_group_set(cmd.group, [])

    def _do_McNodeCreate(self, cmd: s.McNodeCreate) -> None:
        handle = len(self.mc_nodes)
        self.mc_nodes[handle] = (cmd.rid, list(cmd.ports))
        self.say(f"mc_node_create rid {cmd.rid} ports {cmd.ports}: handle {handle}")

    def _do_McNodeUpdate(self, cmd: s.McNodeUpdate) -> None:
        if cmd.handle not in self.mc_nodes:
            raise StfRunError(f"no multicast node with handle {cmd.handle}")
        self.mc_nodes[cmd.handle] = (self.mc_nodes[cmd.handle][0], list(cmd.ports))
        for gid, handles in self.mc_groups.items():
            if cmd.handle in handles:
                self.pipeline.mcast_group_set(gid, self._replicas(gid))

    def _do_McNodeAssociate(self, cmd: s.McNodeAssociate) -> None:
        if cmd.group not in self.mc_groups:
            raise StfRunError(f"no multicast group {cmd.group} (mc_mgrp_create it first)")
        if cmd.handle not in self.mc_nodes:
            raise StfRunError(f"no multicast node with handle {cmd.handle}")
        self.mc_groups[cmd.group].append(cmd.handle)
        self.pipeline.mcast_group_set(cmd.group, self._replicas(cmd.group))

    def _replicas(self, group: int) -> list[api.Replica]:
        if group not in self.mc_groups:
            raise StfRunError(f"no multicast group {group}")
        out: list[api.Replica] = []
        for h in self.mc_groups[group]:
            rid, ports = self.mc_nodes[h]
            out.extend(api.Replica(p, rid) for p in ports)
        return out

    # final comparison ------------------------------------------------------------------------
    def _check_packets(self) -> None:
        """Per port, the received packets must match that port's expects one to one, in order.
        Ports the STF never names have no interface in bmv2stf's set-up, so packets sent there
        are not checked (they are logged) -- unless ``strict``, which checks every port."""
        by_port: dict[int, list[Received]] = {}
        for r in self.received:
            by_port.setdefault(r.port, []).append(r)
        for port, got in sorted(by_port.items()):
            if port not in self.ports_named:
                verdict = "a failure (strict)" if self.strict else "not checked (as bmv2stf)"
                self.say(f"note: {len(got)} packet(s) on port {port}, never named: {verdict}")
        ports = set(self.ports_named) | (set(by_port) if self.strict else set())
        for port in sorted(ports):
            if port in self.any_ports:
                continue
            want = self.expects.get(port, [])
            got = by_port.get(port, [])
            for i, exp in enumerate(want):
                assert exp.pattern is not None
                if i >= len(got):
                    self.failures.append(
                        _Failure(
                            exp.line,
                            (
                                f"{self.stf_name}:{exp.line}: expected on port {port}: "
                                f"{spaced(exp.pattern)} got: no packet on port {port} "
                                f"(received {len(got)} of {len(want)} expected there)"
                            ),
                        )
                    )
                    break
                mm = compare(exp.pattern, got[i].data)
                if mm is not None:
                    self.failures.append(
                        _Failure(
                            exp.line,
                            (
                                f"{self.stf_name}:{exp.line}: expected on port {port}: "
                                f"{spaced(exp.pattern)} got: {spaced(got[i].data.hex().upper())} "
                                f"({mm.reason} at nibble {mm.position}; packet #{i + 1} on port {port}, "
                                f"from the packet at line {got[i].line})"
                            ),
                        )
                    )
                    break
            else:
                for extra in got[len(want) :]:
                    self.failures.append(
                        _Failure(
                            extra.line,
                            (
                                f"{self.stf_name}:{extra.line}: unexpected packet on port {port}: "
                                f"{spaced(extra.data.hex().upper())} (expected {len(want)} packet(s) "
                                f"there, got {len(got)})"
                            ),
                        )
                    )
                    break


def _describe(e: Exception) -> str:
    if isinstance(e, KeyError):
        return f"unknown name {e}"
    return str(e)


def _stack_name(name: str) -> str:
    """``stack$0.f`` (p4c's STF spelling of a stack element) -> ``stack[0].f``."""
    out = []
    i = 0
    while i < len(name):
        if name[i] == "$" and i + 1 < len(name) and name[i + 1].isdigit():
            j = i + 1
            while j < len(name) and name[j].isdigit():
                j += 1
            out.append(f"[{name[i + 1 : j]}]")
            i = j
        else:
            out.append(name[i])
            i += 1
    return "".join(out)


def _key_aliases(name: str) -> list[str]:
    """The key name, plus bmv2stf's other validity spelling ``h.valid`` mapped to
    ``h.$valid$``, the name p4c and p4switch give such a key."""
    names = [name]
    for suffix in (".valid", "$valid$"):
        if name.endswith(suffix) and not name.endswith(".$valid$"):
            names.append(name[: -len(suffix)].rstrip(".") + ".$valid$")
    return names


def load_program(program_path: str | Path) -> ir.Program:
    """P4 source through p4switch's front end, or p4c's BMv2 JSON through the BMv2 JSON one
    (imported late: the STF syntax needs no compiler)."""
    from p4switch.programs import load_program as load

    return load(program_path)


def run_stf(
    program_path: str | Path,
    stf_path: str | Path,
    *,
    verbose: bool = False,
    echo: Callable[[str], None] | None = None,
    seed: int = 0,
    strict: bool = False,
) -> StfResult:
    """Compile ``program_path``, run ``stf_path`` against a fresh pipeline, check expectations.

    Never raises for bad input: a compile error gives exit_code 2 with the front end's message,
    an STF or run-time error exit_code 1 with ``file.stf:line: ...``. ``strict`` also fails on
    packets to ports the STF never names (bmv2stf does not see those)."""
    from p4switch.errors import P4CompileError

    stf_path = Path(stf_path)
    stf_name = str(stf_path)
    try:
        text = stf_path.read_text()
    except OSError as e:
        return StfResult(EXIT_FAIL, f"{stf_name}: cannot read: {e.strerror}", [])
    try:
        commands = s.parse_stf(text, stf_name)
    except s.StfSyntaxError as e:
        return StfResult(EXIT_FAIL, str(e), [str(e)])
    try:
        program = load_program(program_path)
    except P4CompileError as e:
        return StfResult(EXIT_COMPILE, str(e), [str(e)])
    except OSError as e:
        msg = f"{program_path}: cannot read: {e.strerror}"
        return StfResult(EXIT_COMPILE, msg, [msg])
    from p4switch.pipeline import Pipeline

    try:
        pipeline = Pipeline(program, drop_port=511, cpu_port=None, seed=seed)
    except P4CompileError as e:  # e.g. a construct the pipeline does not support
        return StfResult(EXIT_COMPILE, str(e), [str(e)])
    except Exception as e:  # a crash in the pipeline compiler is a finding: report, don't raise
        msg = f"{program_path}: pipeline construction failed: {type(e).__name__}: {e}"
        return StfResult(EXIT_FAIL, msg, [msg])
    runner = StfRunner(program, pipeline, stf_name, verbose=verbose, echo=echo, strict=strict)
    return runner.run(commands)
