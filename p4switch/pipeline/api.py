"""The pipeline's public contract: packet-path results and control-plane state operations.

Everything that drives a pipeline — the switch process (ports + queues), the P4Runtime server,
the STF runner, benchmarks and a future virtual-time simulator — uses only what is defined here.
``p4switch.pipeline.Pipeline`` implements ``PipelineAPI``.

Design rules:
* the pipeline does no I/O and reads no clock: time comes in as ``now_us`` (microseconds since
  switch start, as v1model timestamps are);
* it is not thread-safe: the caller serialises packets and state changes (one lock), which makes
  every state operation atomic with respect to packets;
* a state operation validates fully before it changes anything, and on error raises
  ``StateError`` with a code the P4Runtime server maps 1:1 to a gRPC status, so a failed
  operation leaves state exactly as it was;
* names may be the full control-plane name (``MyIngress.ipv4_lpm``) or any unambiguous
  dot-suffix of it (``ipv4_lpm``), as STF files and humans write them.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Protocol

# the match kinds live in a leaf module, so the fabric's models need not load the pipeline
from p4switch.matches import ExactMatch as ExactMatch
from p4switch.matches import LpmMatch as LpmMatch
from p4switch.matches import MatchValue as MatchValue
from p4switch.matches import OptionalMatch as OptionalMatch
from p4switch.matches import RangeMatch as RangeMatch
from p4switch.matches import TernaryMatch as TernaryMatch

# --------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------


class StateCode(enum.Enum):
    """Failure kinds of state operations; names match google.rpc.Code for a direct mapping."""

    INVALID_ARGUMENT = 3
    NOT_FOUND = 5
    ALREADY_EXISTS = 6
    PERMISSION_DENIED = 7
    RESOURCE_EXHAUSTED = 8
    FAILED_PRECONDITION = 9
    OUT_OF_RANGE = 11
    UNIMPLEMENTED = 12


class StateError(Exception):
    """A rejected control-plane operation; state is unchanged."""

    def __init__(self, code: StateCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def __str__(self) -> str:
        return f"{self.code.name}: {self.message}"


# --------------------------------------------------------------------------------------------
# Table entries
# --------------------------------------------------------------------------------------------


@dataclass
class TableEntry:
    """One table entry as the control plane sees it.

    ``match`` maps key names (``TableKey.name``) to values; a key missing from the dict is a
    wildcard (allowed for ternary/range/optional/lpm keys — lpm then means /0 — never for exact).
    Exactly one of ``action`` (direct action: action name and ``params`` by parameter name),
    ``member_id`` or ``group_id`` (tables with an action profile / selector) is set.
    ``priority``: larger wins, as in P4Runtime; must be > 0 for tables whose keys need it
    (ternary/range/optional) and 0 otherwise. Two entries are the same entry iff they have the
    same match and priority. ``packets``/``bytes`` are the direct counter (read side; on write
    they are ignored unless ``write_counter`` is used). ``meter`` is a direct meter config."""

    match: dict[str, MatchValue]
    action: str | None = None
    params: dict[str, int] = field(default_factory=dict)
    member_id: int | None = None
    group_id: int | None = None
    priority: int = 0
    packets: int = 0
    bytes: int = 0
    meter: MeterConfig | None = None
    is_const: bool = False


@dataclass
class MeterConfig:
    """A two-rate three-colour meter config (RFC 2698): rates in units/s, bursts in units
    (units are packets or bytes depending on the meter's MeterType)."""

    cir: int
    cburst: int
    pir: int
    pburst: int


@dataclass
class ActionProfileMember:
    member_id: int
    action: str
    params: dict[str, int] = field(default_factory=dict)


@dataclass
class ActionProfileGroup:
    """A group of an action selector: members with weights (weight = number of copies)."""

    group_id: int
    members: list[tuple[int, int]] = field(default_factory=list)  # (member_id, weight)
    max_size: int = 0


@dataclass
class Replica:
    """One copy of a multicast group or clone session."""

    egress_port: int
    instance: int = 0  # egress_rid for multicast


# --------------------------------------------------------------------------------------------
# Packet-path results
# --------------------------------------------------------------------------------------------


@dataclass(slots=True)
class Output:
    """A packet leaving the switch on ``port`` (the CPU port too: the runtime turns those into
    PacketIn messages by stripping the @controller_header("packet_in") header)."""

    port: int
    data: bytes


@dataclass
class Digest:
    """One ``digest<T>(receiver, data)`` call: ``name`` is T's name, ``values`` its fields."""

    name: str
    receiver: int
    values: dict[str, int]


@dataclass
class EgressJob:
    """A packet that left ingress and waits in (or goes through) the egress queue of
    ``egress_port``. The queue fills the v1model queueing metadata when it dequeues it.
    ``state`` is opaque to everything but the pipeline. ``priority`` is
    ``standard_metadata.priority`` at the end of ingress: which of the port's strict-priority
    queues takes the packet (BMv2's ``--priority-queues``; higher is served first)."""

    egress_port: int
    instance_type: int
    packet_length: int
    state: Any = None
    priority: int = 0


@dataclass
class QueueingMetadata:
    """What the egress queue reports to egress (v1model standard_metadata fields)."""

    enq_timestamp: int = 0
    enq_qdepth: int = 0
    deq_timedelta: int = 0
    deq_qdepth: int = 0
    qid: int = 0


@dataclass
class Drop:
    """Why a packet (or copy) went nowhere: counted by callers."""

    reason: str  # "mark_to_drop", "parser_error", "no_egress" (port unset), "assert", "error"
    detail: str = ""


@dataclass
class IngressResult:
    """What ingress produced for one arriving packet: jobs to enqueue (unicast, multicast copies,
    I2E clones), digests, drops, and log_msg lines."""

    jobs: list[EgressJob] = field(default_factory=list)
    digests: list[Digest] = field(default_factory=list)
    drops: list[Drop] = field(default_factory=list)
    logs: list[str] = field(default_factory=list)


@dataclass
class EgressResult:
    """What egress produced for one dequeued job: outputs on ports, new jobs (E2E clones) to
    enqueue, digests, drops and logs. Recirculated packets are run back through ingress inside
    the pipeline (bounded), so their outputs appear in ``jobs``."""

    outputs: list[Output] = field(default_factory=list)
    jobs: list[EgressJob] = field(default_factory=list)
    digests: list[Digest] = field(default_factory=list)
    drops: list[Drop] = field(default_factory=list)
    logs: list[str] = field(default_factory=list)


@dataclass(slots=True)
class ProcessResult:
    """``process()``: ingress and egress with empty queues, all copies followed to the end.
    (``slots``: the fused path builds one per packet, so construction cost counts.)"""

    outputs: list[Output] = field(default_factory=list)
    digests: list[Digest] = field(default_factory=list)
    drops: list[Drop] = field(default_factory=list)
    logs: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------------------------
# The pipeline interface
# --------------------------------------------------------------------------------------------


class TableBatch(Protocol):
    """Table writes staged for one atomic commit (``PipelineAPI.table_batch``).

    Each write is validated (and raises StateError) against the tables as they are plus the
    batch's earlier writes; a failed write stages nothing. Nothing the packet path sees changes
    until ``commit()``, which cannot fail and costs a few dict operations per write — so a
    driver prepares a batch without its packet lock and holds the lock only for ``commit()``.
    ``counters`` sets the entry's direct counter (packets, bytes). Between creating a batch and
    committing it the caller must not change the tables by other means."""

    def add(self, table: str, entry: TableEntry,
            counters: tuple[int, int] | None = None) -> None: ...

    def modify(self, table: str, entry: TableEntry,
               counters: tuple[int, int] | None = None) -> None: ...

    def delete(self, table: str, match: dict[str, MatchValue], priority: int = 0) -> None: ...

    def get(self, table: str, match: dict[str, MatchValue],
            priority: int = 0) -> TableEntry | None:
        """The entry as the batch would leave it (None: absent)."""
        ...

    def commit(self) -> None: ...



FastResult = tuple[int, bytes] | Drop | ProcessResult
"""What ``PipelineAPI.process_fast`` returns: ``(egress_port, bytes)`` for the common one-output
packet, else the ``Drop`` or the whole ``ProcessResult``."""


class PacketPath(Protocol):
    """The packet path through queues: what the switch's general path calls (a pipeline a test
    fakes needs only these two)."""

    def ingress(self, data: bytes, port: int, now_us: int) -> IngressResult: ...

    def egress(self, job: EgressJob, now_us: int, qmeta: QueueingMetadata) -> EgressResult: ...


class PipelineAPI(PacketPath, Protocol):
    """What ``p4switch.pipeline.Pipeline(program, *, drop_port=511, cpu_port=None, seed=None)``
    offers (and ``p4switch.ebpf.EbpfPipeline``, a subclass). ``seed`` seeds ``random()`` so
    that runs are reproducible."""

    # packet path (and PacketPath's ingress, egress) ------------------------------------------
    def process(self, data: bytes, port: int, now_us: int) -> ProcessResult: ...

    def process_fast(self, data: bytes, port: int, now_us: int) -> FastResult:
        """``process`` with the same state changes, minus the result objects where it can:
        ``(egress_port, bytes)`` when the packet has exactly one output and nothing else to
        report, the ``Drop`` when it has one drop and nothing else, else the ProcessResult.
        Optional (drivers fall back to ``process``); for the switch's inline path."""
        ...

    # names ---------------------------------------------------------------------------------
    def resolve(self, kind: str, name: str) -> str:
        """Full control-plane name for ``name`` (full or unambiguous dot-suffix) of ``kind``
        ("table", "action", "counter", "direct_counter", "register", "meter", "direct_meter",
        "action_profile", "value_set"); StateError(NOT_FOUND) otherwise."""
        ...

    # tables --------------------------------------------------------------------------------
    def table_add(self, table: str, entry: TableEntry) -> None: ...

    def table_modify(self, table: str, entry: TableEntry) -> None:
        """Replace action/params/member/group (and meter) of the entry with the same match and
        priority; NOT_FOUND if there is none."""
        ...

    def table_delete(self, table: str, match: dict[str, MatchValue], priority: int = 0) -> None: ...

    def table_entries(self, table: str) -> list[TableEntry]:
        """All entries (const entries too, flagged is_const) with direct counter values."""
        ...

    def table_get(self, table: str, match: dict[str, MatchValue],
                  priority: int = 0) -> TableEntry | None:
        """The entry with this match and priority (as ``table_entries`` lists it) or None;
        O(1): entries are indexed by match and priority."""
        ...

    def table_batch(self) -> TableBatch:
        """A new, empty batch of table writes (see ``TableBatch``)."""
        ...

    def table_set_default(self, table: str, action: str, params: dict[str, int]) -> None:
        """PERMISSION_DENIED-like INVALID_ARGUMENT if the default action is const or the action
        is @tableonly / not in the table's actions."""
        ...

    def table_get_default(self, table: str) -> TableEntry: ...

    def table_clear(self, table: str) -> None: ...

    def direct_counter_write(
        self, table: str, match: dict[str, MatchValue], priority: int, packets: int, bytes_: int
    ) -> None: ...

    # action profiles / selectors -----------------------------------------------------------
    def act_prof_add_member(self, profile: str, member: ActionProfileMember) -> None: ...

    def act_prof_modify_member(self, profile: str, member: ActionProfileMember) -> None: ...

    def act_prof_delete_member(self, profile: str, member_id: int) -> None: ...

    def act_prof_members(self, profile: str) -> list[ActionProfileMember]: ...

    def act_prof_add_group(self, profile: str, group: ActionProfileGroup) -> None: ...

    def act_prof_modify_group(self, profile: str, group: ActionProfileGroup) -> None: ...

    def act_prof_delete_group(self, profile: str, group_id: int) -> None: ...

    def act_prof_groups(self, profile: str) -> list[ActionProfileGroup]: ...

    # counters, registers, meters -----------------------------------------------------------
    def counter_read(self, counter: str, index: int) -> tuple[int, int]:
        """(packets, bytes); OUT_OF_RANGE for a bad index."""
        ...

    def counter_write(self, counter: str, index: int, packets: int, bytes_: int) -> None: ...

    def counter_size(self, counter: str) -> int: ...

    def register_read(self, register: str, index: int) -> int: ...

    def register_write(self, register: str, index: int, value: int) -> None:
        """INVALID_ARGUMENT if value does not fit the register's width."""
        ...

    def register_size(self, register: str) -> int: ...

    def meter_set(self, meter: str, index: int, config: MeterConfig | None) -> None:
        """None resets the meter to its default (everything GREEN)."""
        ...

    def meter_get(self, meter: str, index: int) -> MeterConfig | None: ...

    # packet replication --------------------------------------------------------------------
    def mcast_group_set(self, group_id: int, replicas: list[Replica]) -> None: ...

    def mcast_group_delete(self, group_id: int) -> None: ...

    def mcast_groups(self) -> dict[int, list[Replica]]: ...

    def clone_session_set(
        self, session_id: int, replicas: list[Replica], truncate_bytes: int = 0
    ) -> None: ...

    def clone_session_delete(self, session_id: int) -> None: ...

    def clone_sessions(self) -> dict[int, list[Replica]]: ...

    # parser value sets ---------------------------------------------------------------------
    def value_set_set(self, value_set: str, members: list[list[MatchValue]]) -> None: ...
