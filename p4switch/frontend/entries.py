"""A table's ``entries`` and their priorities (P4_16 spec 14.2.1.4).

* ``const entries``: fixed; earlier entries win (the front end numbers them N..1, larger
  wins, as the pipeline and P4Runtime count). ``priority = N :`` is refused there (as p4c
  does); p4c/BMv2's ``@priority(N)`` annotation on one is honoured: BMv2 gives such an
  entry the priority N where a smaller number wins, and numbers the others by position.
* ``entries`` without ``const``: initial entries the control plane may change
  (``ir.Table.initial_entries``). Priorities follow the spec: given ones (``priority = N :``)
  and, for the others, the previous entry's minus ``priority_delta`` (``largest_priority_wins``
  true, the default) or plus it (false); with none given, the entry that must win gets the
  largest value (or the smallest) counting from 1 in steps of ``priority_delta``.
  For ``largest_priority_wins = false`` the numbers are mirrored into larger-wins order
  (p' = max + min - p), which is what the pipeline and the control plane see.

"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lark import Tree

from p4switch import ir
from p4switch.frontend.parts import Part

if TYPE_CHECKING:  # pragma: no cover
    from p4switch.frontend.bindings import BlockCtx, Scope


class TableEntries(Part):
    """A table's ``entries`` and their priorities (``parts.entries``)."""

    def table_entries(self, p: Tree, scope: Scope, ctx: BlockCtx, table: ir.Table,
                      largest_wins: bool, delta: int) -> None:
        const_tok = p.children[1]  # after the property's annotations (@noWarn: no effect)
        key_types = [k.expr.type for k in table.keys]
        if not table.keys:
            raise self.err(p, f"table '{table.name}' has no keys and cannot have entries")
        raw = [c for c in p.children[2:] if isinstance(c, Tree)]
        entries: list[ir.ConstEntry] = []
        given: list[int | None] = []
        for e in raw:
            entry_const, prio_t, ks_t, aname, args_t, annos_t = e.children
            if entry_const is not None and const_tok is not None:
                raise self.err(entry_const, "an entry of 'const entries' is const already "
                                            "(drop one of the two 'const')")
            keysets = self.parts.parsers.keyset(ks_t, key_types, scope, ctx)
            keys = [self.parts.tables.entry_key(ks, k, ks_t) for ks, k in zip(keysets, table.keys,
                                                                              strict=True)]
            act = self.parts.tables.bound_action(e, scope, ctx, table, name_node=aname,
                                                 args_t=args_t)
            entries.append(ir.ConstEntry(keys, act, None, const=entry_const is not None))
            given.append(self.entry_priority(prio_t, annos_t, const_tok is not None, table))
        n = len(entries)
        if const_tok is not None:
            if table.has_priority:
                if any(g is not None for g in given):  # @priority(N): BMv2's smaller-wins N
                    bm = [g if g is not None else i + 1 for i, g in enumerate(given)]
                    order = sorted(range(n), key=lambda i: (bm[i], i))
                    for rank, i in enumerate(order):
                        entries[i].priority = n - rank
                else:
                    for i, ce in enumerate(entries):
                        ce.priority = n - i
            table.const_entries = entries
            return
        if any(g is not None for g in given) or table.has_priority:
            prios = self.assigned_priorities(raw, given, largest_wins, delta, table)
            if not largest_wins:  # mirror into the larger-wins order everything else uses
                top, bottom = max(prios), min(prios)
                prios = [top + bottom - x for x in prios]
            for ce, pr in zip(entries, prios, strict=True):
                ce.priority = pr
        table.initial_entries = entries

    def entry_priority(self, prio_t: Tree | None, annos_t: Tree | None, const: bool,
                       table: ir.Table) -> int | None:
        annos = self.parts.annos.annotations(annos_t)
        if prio_t is not None:
            word, value_t = prio_t.children
            if str(word) != "priority":
                raise self.err(word, f"expected 'priority = N :' before an entry, not "
                                     f"'{word} ='")
            if const:
                raise self.err(prio_t, "entries of 'const entries' cannot have priorities "
                                       "(drop 'const', or use @priority(N))")
            if not table.has_priority:
                raise self.err(prio_t, f"table '{table.name}' has only exact/lpm keys: its "
                                       "entries take no priority")
            v = self.parts.decls.const_int(value_t, self.env.globals, "entry priority")
            if v <= 0:
                raise self.err(value_t, "an entry priority must be positive (P4Runtime "
                                        "numbers them from 1)")
            return v
        if "priority" in annos:
            try:
                v = int(annos["priority"], 0)
            except ValueError:
                raise self.err(annos_t, "@priority needs an integer") from None
            return v
        return None

    def assigned_priorities(self, raw: list[Tree], given: list[int | None],
                            largest_wins: bool, delta: int, table: ir.Table) -> list[int]:
        n = len(raw)
        if all(g is None for g in given):
            out = [0] * n
            cur = 1
            for i in range(n):
                out[n - 1 - i if largest_wins else i] = cur
                cur += delta
            return out
        if given[0] is None:
            raise self.err(raw[0], f"the first entry of table '{table.name}' needs a priority "
                                   "when later ones have one")
        out = []
        cur = 0
        for e, g in zip(raw, given, strict=True):
            cur = g if g is not None else cur
            if cur <= 0:
                raise self.err(e, f"this entry's priority would be {cur} (priorities start "
                                  "at 1): give it one, or lower priority_delta")
            out.append(cur)
            cur = cur - delta if largest_wins else cur + delta
        return out
