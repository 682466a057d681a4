"""STF packet tests for p4switch: ``python -m p4switch.stf prog.p4 test.stf [-v]``.

STF ("simple test framework") is the packet-test format of p4c's own BMv2 tests. This runner
reads those files as p4c's BMv2 driver (``backends/bmv2/bmv2stf.py`` with the grammar of
``tools/stf/stf_parser.py``) does, and runs them against a p4switch pipeline in-process.

Exit status: 0 when every expectation holds; 1 with the first failure (``file.stf:line: ...``:
an expected packet that differs or never came, an unexpected extra packet, a failed
``check_counter``, or an STF line that is invalid or unsupported); 2 with the front end's
``file:line:col: error: ...`` when the program does not compile (e.g. ``X is not supported``).

Dialect (one command per line; ``#`` starts a comment; keywords are case-insensitive)
-----------------------------------------------------------------------------------
``add <table> [<prio>] <key>:<value> ... <action>(<param>:<value>, ...) [= <id>]``
    Table and action names may be full (``MyIngress.ipv4_lpm``) or suffixes (``ipv4_lpm``);
    the action is looked up among the table's actions. Key names may be the full key text
    (``hdr.ipv4.dstAddr``) or a dot-suffix of it (``ipv4.dstAddr``); ``stack$0.f`` means
    ``stack[0].f``; a validity key is ``h.$valid$``
    (p4c's name; ``h.valid`` means it too). Values: decimal, ``0x``,
    ``0b``, ``0o``. Ternary: ``*`` digits are don't-care and the mask covers only the digits
    written (``0x****0101``); ``v&&&m`` (extension) gives the mask. LPM: ``v/len``, or without
    ``/len`` the prefix is the number of non-``*`` digits (``0x0a******`` = /8). Range
    (extension; bmv2stf has no syntax for it): ``lo->hi``. Optional: a plain value. A key left
    out is a wildcard (an exact key: 0, as bmv2stf fills it). ``= <id>`` is accepted, ignored.
``setdefault <table> <action>(<param>:<value>, ...)``
``packet <port> <hex>`` / ``expect <port> <hex>``
    Spaces inside the hex are ignored. In ``expect``, ``*`` matches any nibble, a received
    packet may be longer than the expectation unless it ends in ``$`` (exact length);
    ``expect <port>`` with no data accepts any number of packets on that port.
``check_counter <counter>(<index>) [packets|bytes <op> <N>]``, op one of ``== != < <= > >=``
    (p4c's parser reads a bare ``check_counter c(i)`` as ``packets == 0``; so do we).
``wait`` — p4c: let outstanding packets drain; a no-op here (processing is synchronous).
``remove all`` — clear every table. ``no_packet`` — accepted, no effect.
``mirroring_add <session> <port>``, ``mirroring_add_mc <session> <mgrp>``,
``mirroring_delete <session>``, ``mirroring_get <session>`` (no effect)
``mc_mgrp_create <grp>``, ``mc_node_create <rid> <port>...`` (node handles are 0, 1, 2... in
creation order, as simple_switch numbers them), ``mc_node_update <handle> <port>...``,
``mc_node_associate <grp> <handle>``
``counter_read <c> <i>`` (logged), ``counter_write <c> <i> <packets> <bytes>``,
``register_read <r> <i>`` (logged), ``register_write <r> <i> <v>``, ``register_reset <r>``,
``meter_set_rates <m> <i> <rate>:<burst> <rate>:<burst>`` and ``meter_array_set_rates <m> ...``
(committed then peak; rates per microsecond as simple_switch_CLI takes them),
``meter_get_rates`` (no effect). Anything else: ``file:line: unsupported STF command 'x'``.

p4switch extensions (not in p4c's STF)
--------------------------------------
``wait <us>``                 advance the switch clock by ``us`` microseconds (flowlet gaps).
``check_register <r>(<i>) <op> <N>``  assert a register cell.
``member <profile> <id> <action>(<p>:<v>, ...)``  an action-profile member.
``group <profile> <gid> <mid>[*<weight>] ...``     an action-selector group.
``add <table> <keys> member=<id>`` / ``group=<gid>``  an entry of an action-profile table.
``lo->hi`` range keys, ``v&&&m`` ternary masks, ``-N`` values (wrap to the width).

Priorities
----------
bmv2stf turns an STF priority ``p`` into BMv2 priority ``10000 - p`` ("Priorities in BMV2 seem
to be reversed with respect to the stf file"), and in BMv2 the numerically smaller priority
wins, so in STF the *larger* ``p`` wins (p4c's ``ternary2-bmv2.stf`` relies on it: of two
overlapping entries with priorities 100 and 110, the 110 one wins). The pipeline API also lets
the larger priority win (P4Runtime style), so an STF ``p`` becomes api priority ``p + 1`` (the +1
keeps ``p = 0`` legal: the api needs priority > 0). Tables without ternary/range/optional keys
take no priority (bmv2stf drops it for them too). An entry without a priority in a table that
needs one gets api priority 1, i.e. it ranks like ``p = 0`` (bmv2stf would send no priority and
simple_switch_CLI would reject the line). Overlapping entries of equal priority: unspecified,
as in BMv2.

Time
----
The clock starts at 0 µs; each ``packet`` is processed at the current clock, which then advances
by 1 µs; ``wait <us>`` advances it by ``us`` more. So ``ingress_global_timestamp`` of the n-th
packet (0-based) is ``n`` plus the sum of the waits before it.

Checking
--------
As in bmv2stf, expectations are compared after the whole file ran, per port and in order:
a port's k-th ``expect`` must match the k-th packet that left on that port, and the counts must
be equal (extra packets fail). The relative order of ``packet`` and ``expect`` lines does not
matter, nor does the order across ports. Packets to a port the STF never names in a ``packet``
or ``expect`` line are not checked (bmv2stf creates no interface for it); ``-v`` shows them, and
``--strict`` (``run_stf(..., strict=True)``, used by p4fabric's own tests) fails on them.
"""

from __future__ import annotations

from .matcher import Mismatch, compare
from .runner import EXIT_COMPILE, EXIT_FAIL, EXIT_OK, StfResult, StfRunner, run_stf
from .syntax import StfSyntaxError, parse_stf

__all__ = [
    "EXIT_COMPILE",
    "EXIT_FAIL",
    "EXIT_OK",
    "Mismatch",
    "StfResult",
    "StfRunner",
    "StfSyntaxError",
    "compare",
    "parse_stf",
    "run_stf",
]
