"""Human-readable rendering of a compiled program (for ``python -m p4switch.frontend --dump``
and for debugging): P4-like text with every expression's type visible where it matters."""

from __future__ import annotations

from p4switch import ir


def summary(program: ir.Program) -> str:
    tables = program.all_tables()
    return (
        f"ok: {len(tables)} tables, {len(program.actions)} actions, "
        f"{len(program.parsers)} parsers, {len(program.controls)} controls, "
        f"{len(program.all_instances())} extern instances"
    )


class _Text(ir.Visitor):
    """P4-like text of expressions (``visit(e)`` -> str) and statements (``visit(s, indent)``
    -> lines)."""

    # -- expressions
    def visit_Const(self, e: ir.Const) -> str:
        if isinstance(e.type, ir.BoolType):
            return "true" if e.value else "false"
        if isinstance(e.type, ir.StringType):
            return f'"{e.value}"'
        return f"{e.value}:{e.type}"

    def visit_Var(self, e: ir.Var) -> str:
        return e.name

    def visit_Member(self, e: ir.Member) -> str:
        return f"{self.visit(e.base)}.{e.field}"

    def visit_StackElem(self, e: ir.StackElem) -> str:
        return f"{self.visit(e.stack)}[{self.visit(e.index)}]"

    def visit_StackNext(self, e: ir.StackNext) -> str:
        return f"{self.visit(e.stack)}.next"

    def visit_StackLast(self, e: ir.StackLast) -> str:
        return f"{self.visit(e.stack)}.last"

    def visit_StackProp(self, e: ir.StackProp) -> str:
        return f"{self.visit(e.stack)}.{e.prop}"

    def visit_Slice(self, e: ir.Slice) -> str:
        return f"{self.visit(e.base)}[{e.hi}:{e.lo}]"

    def visit_Concat(self, e: ir.Concat) -> str:
        return f"({self.visit(e.left)} ++ {self.visit(e.right)})"

    def visit_Cast(self, e: ir.Cast) -> str:
        return f"(({e.type}) {self.visit(e.expr)})"

    def visit_Unary(self, e: ir.Unary) -> str:
        return f"{e.op}{self.visit(e.operand)}"

    def visit_Binary(self, e: ir.Binary) -> str:
        return f"({self.visit(e.left)} {e.op} {self.visit(e.right)})"

    def visit_Mux(self, e: ir.Mux) -> str:
        return f"({self.visit(e.cond)} ? {self.visit(e.then)} : {self.visit(e.else_)})"

    def visit_ListExpr(self, e: ir.ListExpr) -> str:
        return "{" + ", ".join(self.visit(i) for i in e.items) + "}"

    def visit_IsValid(self, e: ir.IsValid) -> str:
        return f"{self.visit(e.header)}.isValid()"

    def visit_TableHit(self, e: ir.TableHit) -> str:
        return f"{e.table}.apply().{'miss' if e.negate else 'hit'}"

    def visit_Lookahead(self, e: ir.Lookahead) -> str:
        return f"lookahead<{e.type}>()"

    def visit_ExternCallExpr(self, e: ir.ExternCallExpr) -> str:
        who = f"{e.instance}." if e.instance else ""
        return f"{who}{e.method}({', '.join(self.visit(a) for a in e.args)})"

    # -- statements
    def visit_Block(self, s: ir.Block, indent: str) -> list[str]:
        out = [indent + "{"]
        for x in s.stmts:
            out.extend(self.visit(x, indent + "    "))
        return out + [indent + "}"]

    def visit_VarDecl(self, s: ir.VarDecl, indent: str) -> list[str]:
        init = f" = {self.visit(s.init)}" if s.init is not None else ""
        return [f"{indent}{s.type} {s.name}{init};"]

    def visit_Assign(self, s: ir.Assign, indent: str) -> list[str]:
        return [f"{indent}{self.visit(s.lhs)} = {self.visit(s.rhs)};"]

    def visit_If(self, s: ir.If, indent: str) -> list[str]:
        out = [f"{indent}if ({self.visit(s.cond)})"] + self.visit(s.then, indent)
        if s.else_ is not None:
            out += [f"{indent}else"] + self.visit(s.else_, indent)
        return out

    def visit_ApplyTable(self, s: ir.ApplyTable, indent: str) -> list[str]:
        return [f"{indent}{s.table}.apply();"]

    def _switch(self, head: str, cases: list[tuple[list[str] | None, ir.Block | None]],
                indent: str) -> list[str]:
        out = [indent + head]
        for labels, body in cases:
            out.append(f"{indent}  {'default' if labels is None else ', '.join(labels)}:")
            if body is not None:
                out.extend(self.visit(body, indent + "    "))
        return out

    def visit_SwitchAction(self, s: ir.SwitchAction, indent: str) -> list[str]:
        return self._switch(f"switch ({s.table}.apply().action_run)",
                            [(c.actions, c.body) for c in s.cases], indent)

    def visit_SwitchValue(self, s: ir.SwitchValue, indent: str) -> list[str]:
        return self._switch(f"switch ({self.visit(s.expr)})", [
            ([self.visit(v) for v in c.values] if c.values is not None else None, c.body)
            for c in s.cases], indent)

    def visit_ActionCall(self, s: ir.ActionCall, indent: str) -> list[str]:
        return [f"{indent}{s.action}({', '.join(self.visit(a) for a in s.args)});"]

    def visit_ExternCall(self, s: ir.ExternCall, indent: str) -> list[str]:
        who = f"{s.instance}." if s.instance else ""
        targs = f"<{', '.join(str(t) for t in s.type_args)}>" if s.type_args else ""
        return [f"{indent}{who}{s.method}{targs}({', '.join(self.visit(a) for a in s.args)});"]

    def visit_HeaderMethod(self, s: ir.HeaderMethod, indent: str) -> list[str]:
        return [f"{indent}{self.visit(s.header)}.{s.method}();"]

    def visit_StackMethod(self, s: ir.StackMethod, indent: str) -> list[str]:
        return [f"{indent}{self.visit(s.stack)}.{s.method}({s.count});"]

    def visit_Extract(self, s: ir.Extract, indent: str) -> list[str]:
        bits = "" if s.bits is None else f", {self.visit(s.bits)}"
        return [f"{indent}extract({self.visit(s.header)}{bits});"]

    def visit_Advance(self, s: ir.Advance, indent: str) -> list[str]:
        return [f"{indent}advance({self.visit(s.bits)});"]

    def visit_Emit(self, s: ir.Emit, indent: str) -> list[str]:
        return [f"{indent}emit({self.visit(s.header)});"]

    def visit_For(self, s: ir.For, indent: str) -> list[str]:
        init = "; ".join(" ".join(self.visit(x, "")).rstrip(";") for x in s.init)
        upd = "; ".join(" ".join(self.visit(x, "")).rstrip(";") for x in s.update)
        return [f"{indent}for ({init}; {self.visit(s.cond)}; {upd})"] + self.visit(s.body, indent)

    def visit_Break(self, s: ir.Break, indent: str) -> list[str]:
        return [f"{indent}break;"]

    def visit_Continue(self, s: ir.Continue, indent: str) -> list[str]:
        return [f"{indent}continue;"]

    def visit_Exit(self, s: ir.Exit, indent: str) -> list[str]:
        return [f"{indent}exit;"]

    def visit_Return(self, s: ir.Return, indent: str) -> list[str]:
        return [f"{indent}return;"]

    def generic(self, node: object, *indent: str) -> str | list[str]:  # pragma: no cover
        return [indent[0] + repr(node)] if indent else repr(node)


_TEXT = _Text()


def expr(e: ir.Expr) -> str:
    """P4-like text of an IR expression; constants show their type (``1:bit<8>``)."""
    return _TEXT.visit(e)


def stmt(s: ir.Stmt, indent: str = "") -> list[str]:
    return _TEXT.visit(s, indent)


def _keyset(k: object) -> str:
    if isinstance(k, ir.KeysetDefault):
        return "default"
    if isinstance(k, ir.KeysetValue):
        return hex(k.value)
    if isinstance(k, ir.KeysetMask):
        return f"{k.value:#x} &&& {k.mask:#x}"
    if isinstance(k, ir.KeysetRange):
        return f"{k.lo} .. {k.hi}"
    if isinstance(k, ir.KeysetValueSet):
        return k.name
    return repr(k)  # pragma: no cover


def _bound(b: ir.BoundAction) -> str:
    return f"{b.action}({', '.join(expr(a) for a in b.args)})"


def _instance(i: ir.ExternInstance) -> str:
    targs = f"<{', '.join(str(t) for t in i.type_args)}>" if i.type_args else ""
    return f"{i.type_name}{targs}({', '.join(expr(a) for a in i.args)}) {i.name}  // {i.cp_name}"


def dump_program(program: ir.Program) -> str:
    out: list[str] = []
    out.append(f"// errors: {', '.join(program.errors)}")
    out.append(f"// match_kinds: {', '.join(program.match_kinds)}")
    out.append("// package: " + ", ".join(f"{r}={b}" for r, b in program.package.items()))
    for inst in program.instances.values():
        out.append(_instance(inst) + ";")
    for a in program.actions.values():
        params = ", ".join(f"{p.direction} {p.type} {p.name}".strip() for p in a.params)
        out.append(f"action {a.name}({params})  // {a.cp_name}")
        out.extend(stmt(a.body, ""))
    for p in program.parsers.values():
        out.append(f"parser {p.name}(" + ", ".join(
            f"{x.direction} {x.type} {x.name}".strip() for x in p.params) + ") {")
        for v in p.locals:
            out.extend(stmt(v, "    "))
        for inst in p.instances.values():
            out.append("    " + _instance(inst))
        for vs in p.value_sets.values():
            out.append(f"    value_set<{vs.type}>({vs.size}) {vs.name};  // {vs.cp_name}")
        for s in p.states.values():
            out.append(f"    state {s.name} {{")
            for st in s.stmts:
                out.extend(stmt(st, "        "))
            t = s.transition
            if t.select_keys is None:
                out.append(f"        transition {t.next_state};")
            else:
                out.append("        transition select(" + ", ".join(
                    expr(k) for k in t.select_keys) + ") {")
                for c in t.cases:
                    out.append("            (" + ", ".join(_keyset(k) for k in c.keysets)
                               + f"): {c.next_state};")
                out.append("        }")
            out.append("    }")
        out.append("}")
    for ctl in program.controls.values():
        out.append(f"control {ctl.name}(" + ", ".join(
            f"{x.direction} {x.type} {x.name}".strip() for x in ctl.params) + ") {")
        for v in ctl.locals:
            out.extend(stmt(v, "    "))
        for inst in ctl.instances.values():
            out.append("    " + _instance(inst))
        for tbl in ctl.tables.values():
            out.append(f"    table {tbl.name} {{  // {tbl.cp_name}")
            for k in tbl.keys:
                out.append(f"        {expr(k.expr)}: {k.match_kind};  // {k.name}")
            for r in tbl.actions:
                out.append(f"        action {r.action}" + (f" @{r.scope}" if r.scope else ""))
            const = "const " if tbl.default_action_const else ""
            out.append(f"        {const}default_action = {_bound(tbl.default_action)};")
            out.append(f"        size = {tbl.size};")
            for attr in ("implementation", "direct_counter", "direct_meter"):
                if getattr(tbl, attr):
                    out.append(f"        {attr} = {getattr(tbl, attr)};")
            for e in tbl.const_entries or []:
                keys = ", ".join(f"{k.kind}:{k.value:#x}" + (f"/{k.mask:#x}" if k.mask else "")
                                 + (f"..{k.hi:#x}" if k.hi is not None else "") for k in e.keys)
                prio = f" prio {e.priority}" if e.priority is not None else ""
                out.append(f"        entry ({keys}){prio}: {_bound(e.action)}")
            out.append("    }")
        out.append("    apply")
        out.extend(stmt(ctl.body, "    "))
        out.append("}")
    return "\n".join(out)
