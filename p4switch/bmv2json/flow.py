"""A BMv2 pipeline's control graph (tables and conditionals with next pointers) -> IR blocks.

p4c wrote the graph from structured P4, so it is rebuilt as structured code: a branch (a
conditional, a table whose next node depends on hit/miss or on the action run) becomes an
``If``/``SwitchAction`` whose arms run up to the branch's immediate post-dominator, where the
code goes on; no node is emitted twice. p4c's synthesized keyless tables (one const default
action; ``tbl_*``) become the statement they stand for: a call of the user's action, or the
synthesized action's body inlined.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from p4switch import ir
from p4switch.bmv2json.errors import Bmv2JsonError

END = None
HIT, MISS = "__HIT__", "__MISS__"


@dataclass
class Graph:
    where: str
    tables: dict[str, dict]
    conditionals: dict[str, dict]
    action_names: dict[int, str]  # JSON action id -> its name

    def succ(self, n: str) -> list[str | None]:
        if n in self.conditionals:
            c = self.conditionals[n]
            return [c.get("true_next"), c.get("false_next")]
        t = self.tables[n]
        nexts = list((t.get("next_tables") or {}).values())
        if HIT not in (t.get("next_tables") or {}):
            nexts.append(t.get("base_default_next"))
        return nexts

    def check(self, n: str | None) -> None:
        if n is not END and n not in self.tables and n not in self.conditionals:
            raise Bmv2JsonError(self.where, f"next node {n!r} is neither a table nor a "
                                "conditional")


def post_dominators(g: Graph, start: str | None) -> dict[str | None, frozenset]:
    pdom: dict[str | None, frozenset] = {END: frozenset([END])}
    order: list[str] = []
    state: dict[str, int] = {}
    stack: list[tuple[str, int]] = [(start, 0)] if start is not END else []
    while stack:  # iterative DFS: post-order, with a cycle check
        n, k = stack.pop()
        g.check(n)
        if k == 0:
            if state.get(n) == 2:
                continue
            if state.get(n) == 1:
                raise Bmv2JsonError(g.where, f"the control graph has a cycle through {n!r}")
            state[n] = 1
        succ = [s for s in g.succ(n)]
        if k < len(succ):
            stack.append((n, k + 1))
            s = succ[k]
            g.check(s)
            if s is not END and state.get(s) != 2:
                if state.get(s) == 1:
                    raise Bmv2JsonError(g.where, f"the control graph has a cycle through {s!r}")
                stack.append((s, 0))
        else:
            state[n] = 2
            order.append(n)
    for n in order:
        sets = [pdom[s] for s in g.succ(n)]
        common = frozenset.intersection(*sets) if sets else frozenset([END])
        pdom[n] = common | {n}
    return pdom


def ipdom(pdom: dict, n: str) -> str | None:
    rest = pdom[n] - {n}
    return max(rest, key=lambda m: len(pdom[m]))


@dataclass
class Structurer:
    g: Graph
    pdom: dict
    table_stmt: Callable[[str], list[ir.Stmt] | None]  # a synthesized table's statements
    cond_expr: Callable[[str], ir.Expr]

    def emit(self, n: str | None, stop: str | None) -> list[ir.Stmt]:
        out: list[ir.Stmt] = []
        while n is not END and n != stop:
            if n in self.g.conditionals:
                c = self.g.conditionals[n]
                j = ipdom(self.pdom, n)
                then = self.emit(c.get("true_next"), j)
                else_ = self.emit(c.get("false_next"), j)
                out.append(ir.If(self.cond_expr(n), ir.Block(then),
                                 ir.Block(else_) if else_ else None))
                n = j
                continue
            t = self.g.tables[n]
            nexts = t.get("next_tables") or {}
            inline = self.table_stmt(n)
            if inline is not None:
                out.extend(inline)
                targets = set(nexts.values())
                n = targets.pop() if len(targets) == 1 else t.get("base_default_next")
                continue
            j = ipdom(self.pdom, n)
            if HIT in nexts or MISS in nexts:
                hit = self.emit(nexts.get(HIT), j)
                miss = self.emit(nexts.get(MISS), j)
                if hit:
                    out.append(ir.If(ir.TableHit(n, type=ir.BoolType()), ir.Block(hit),
                                     ir.Block(miss) if miss else None))
                elif miss:
                    out.append(ir.If(ir.TableHit(n, True, type=ir.BoolType()), ir.Block(miss)))
                else:
                    out.append(ir.ApplyTable(n))
                n = j
                continue
            groups: dict[str | None, list[str]] = {}
            for action, target in nexts.items():
                if target != j:
                    groups.setdefault(target, []).append(action)
            if not groups:
                out.append(ir.ApplyTable(n))
            else:
                cases = [ir.ActionCase(acts, ir.Block(self.emit(target, j)))
                         for target, acts in groups.items()]
                out.append(ir.SwitchAction(n, cases))
            n = j
        return out
