"""What ``FabricController(target="tofino")`` does differently: switches running
p4src/tna/fabric.p4, reached where the operator says, with their own port numbers.

The fabric's entries are computed as for every target (``model.routing``); per switch,
:class:`TnaDriver` turns them into the TNA program's state (``model.tna``: action-profile members
and groups, selector entries, the slot table, ns timeouts), writes it over P4Runtime with the
usual client, keeps what it wrote, and writes only the difference at run time (a scheme change,
new weights, a failed or restored link) in an order the switch accepts. A switch that already
runs the pipeline (same cookie) is read back and diffed instead of re-pushed.

The program is what the Tofino compiler wrote (``make tofino``: the P4Info, and the device config
packed as the switch's P4Runtime server wants it): :func:`load_tofino_program`. Without a device
config the controller does not push a pipeline: the switch must already run the program, and its
P4Info must name the same objects with the same ids (checked at start).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from google.protobuf import text_format
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from model.entries import Entry
from model.targets import HardwareTarget
from model.tna import (
    LB_SELECTOR,
    ProfileGroup,
    ProfileMember,
    SelectorEntry,
    TnaSwitchEntries,
    diff_tna,
    tna_entries,
)
from p4switch import ExactMatch

from .connection import SwitchConnection, SwitchError
from .p4rt_codec import P4Schema, decode
from .program import Program
from .tna_codec import diff_updates, install_updates, profile_id

P4INFO_FILE = "p4info.txtpb"
"""What ``make tofino`` writes per chip (build/tofino/<chip>/)."""
DEVICE_CONFIG_FILE = "device_config.bin"
"""The device config, packed for the switch's P4Runtime server, beside the P4Info (optional)."""


@dataclass(frozen=True)
class SwitchDevice:
    """Where one switch of the fabric is and how its ports are numbered: a real switch is not
    at 127.0.0.1:50000+id, and its device ports are not the fabric spec's 1..n."""

    addr: str
    """host:port of the switch's P4Runtime server."""
    device_id: int = 1
    port_map: Mapping[int, int] | None = field(default=None, hash=False)
    """Fabric spec port -> device port (``dev_port`` on a Tofino); None: the same numbers."""
    qdepth_scale: int | None = None
    """Queue-depth units one fabric packet is: a Tofino counts 80-byte cells (176 on Tofino 2),
    so ECN thresholds are written ×scale and queue registers read ÷scale. None: the target's
    (``model.tna.cells_per_packet("tofino")`` = 19 for target tofino, else 1)."""


def load_tofino_program(source: str | Path | None, device_config: str | Path | None = None
                        ) -> Program:
    """The program of a Tofino fabric: ``source`` is the P4Info (text format) the Tofino
    compiler wrote, or the directory ``make tofino`` wrote it to (``p4info.txtpb``, and
    ``device_config.bin`` if present); ``device_config`` names the packed device config
    explicitly. ValueError (one line) when there is no P4Info to read."""
    if source is None:
        raise ValueError("target tofino needs program= the P4Info the Tofino compiler wrote "
                         "(make tofino: build/tofino/<chip>/p4info.txtpb; docs/tofino.md)")
    path = Path(source)
    info_path = path / P4INFO_FILE if path.is_dir() else path
    if device_config is None and path.is_dir() and (path / DEVICE_CONFIG_FILE).is_file():
        device_config = path / DEVICE_CONFIG_FILE
    try:
        info = text_format.Parse(info_path.read_text(), p4info_pb2.P4Info())
    except (OSError, UnicodeDecodeError, text_format.ParseError) as e:
        raise ValueError(f"cannot read the Tofino P4Info {info_path}: {e}") from None
    try:
        dev = Path(device_config).read_bytes() if device_config is not None else b""
    except OSError as e:
        raise ValueError(f"cannot read the device config {device_config}: {e}") from None
    return Program(info, dev, HardwareTarget.TOFINO, str(info_path))


def _ids(info: p4info_pb2.P4Info) -> set[tuple[str, str, int]]:
    kinds = ("tables", "actions", "action_profiles", "counters", "direct_counters", "registers",
             "controller_packet_metadata")
    return {(k, o.preamble.name, o.preamble.id) for k in kinds for o in getattr(info, k)}


class TnaDriver:
    """Per-switch TNA state of a fabric: what was written, and how to write what changed."""

    def __init__(self, schema: P4Schema, port_maps: Mapping[str, Mapping[int, int] | None],
                 qdepth_scales: Mapping[str, int] | None = None) -> None:
        self.schema = schema
        self.port_maps = dict(port_maps)
        self.qdepth_scales = dict(qdepth_scales or {})
        self.installed: dict[str, TnaSwitchEntries] = {}
        self._selector_profile = profile_id(schema, LB_SELECTOR)

    def translate(self, name: str, entries: list[Entry]) -> TnaSwitchEntries:
        """One switch's entries for the TNA program; ValueError (one line) for what it cannot
        take (e.g. a flowlet timeout beyond its 32-bit ns, too many slot entries)."""
        return tna_entries(entries, name, self.port_maps.get(name),
                           self.qdepth_scales.get(name, 1))

    # ---- writing ---------------------------------------------------------------------------
    def push(self, conn: SwitchConnection, name: str, entries: list[Entry], program: Program,
             reuse: bool) -> tuple[float, float, bool]:
        """Bring a switch to ``entries``; (pipeline s, write s, pipeline kept)."""
        want = self.translate(name, entries)
        t0 = time.perf_counter()
        if (reuse and conn.get_cookie() == program.cookie) or not program.device_config:
            if not program.device_config:
                self._check_running(conn, program)
            try:
                have = self.read_state(conn, name)
            except (KeyError, ValueError):
                have = None  # not decodable as ours
            if have is not None:
                t1 = time.perf_counter()
                conn.write(diff_updates(self.schema, diff_tna(have, want)))
                self.installed[name] = want
                return t1 - t0, time.perf_counter() - t1, True
            if not program.device_config:
                raise SwitchError(f"switch {name}: its entries are not the TNA program's and "
                                  "no device config was given to push a clean pipeline")
        conn.set_pipeline(program.p4info, program.device_config, cookie=program.cookie)
        t1 = time.perf_counter()
        conn.write(install_updates(self.schema, want))
        self.installed[name] = want
        return t1 - t0, time.perf_counter() - t1, False

    @staticmethod
    def _check_running(conn: SwitchConnection, program: Program) -> None:
        running = conn.get_p4info()
        if running is None:
            raise SwitchError(f"switch {conn.name}: runs no pipeline, and the Tofino program "
                              f"has no device config to push (docs/tofino.md)")
        missing = _ids(program.p4info) - _ids(running)
        if missing:
            kind, obj, oid = sorted(missing)[0]
            raise SwitchError(f"switch {conn.name}: runs another P4Info ({len(missing)} "
                              f"objects differ, e.g. {kind[:-1]} {obj} id {oid:#x})")

    def apply(self, conn: SwitchConnection, name: str, want: TnaSwitchEntries) -> int:
        """Write what turns the installed state into ``want``; the number of updates."""
        d = diff_tna(self.installed.get(name, TnaSwitchEntries(name)), want)
        if len(d):
            conn.write(diff_updates(self.schema, d))
            self.installed[name] = want
        return len(d)

    # ---- reading back ----------------------------------------------------------------------
    def read_state(self, conn: SwitchConnection, name: str) -> TnaSwitchEntries:
        """What the switch holds, as the TNA entities (table entries, selector entries, the
        selector's members and groups)."""
        sch = self.schema
        ents = [sch.table_wildcard()]
        mem = p4runtime_pb2.Entity()
        mem.action_profile_member.action_profile_id = self._selector_profile
        grp = p4runtime_pb2.Entity()
        grp.action_profile_group.action_profile_id = self._selector_profile
        out = TnaSwitchEntries(name)
        for e in conn.read([*ents, mem, grp]):
            kind = e.WhichOneof("entity")
            if kind == "table_entry":
                te = e.table_entry
                if te.action.WhichOneof("type") == "action_profile_group_id":
                    out.selector_entries.append(self._selector_entry(te))
                else:
                    out.entries.append(sch.entry_of(te))
            elif kind == "action_profile_member":
                m = e.action_profile_member
                a = sch.index.actions[m.action.action_id]
                params = sorted((a.params[p.param_id][0], decode(p.value))
                                for p in m.action.params)
                out.members.append(ProfileMember(m.member_id, a.name, tuple(params)))
            elif kind == "action_profile_group":
                g = e.action_profile_group
                out.groups.append(ProfileGroup(g.group_id, tuple(sorted(
                    (x.member_id, x.weight) for x in g.members)), g.max_size))
        return out

    def _selector_entry(self, te: p4runtime_pb2.TableEntry) -> SelectorEntry:
        t = self.schema.index.tables[te.table_id]
        match = tuple((t.fields[fm.field_id].name, ExactMatch(decode(fm.exact.value)))
                      for fm in te.match)
        return SelectorEntry(t.name, match,
                             te.action.action_profile_group_id)
