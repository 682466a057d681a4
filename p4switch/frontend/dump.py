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


def expr(e: ir.Expr) -> str:
    """P4-like text of an IR expression; constants show their type (``1:bit<8>``)."""
    if isinstance(e, ir.Const):
        if isinstance(e.type, ir.BoolType):
            return "true" if e.value else "false"
        if isinstance(e.type, ir.StringType):
            return f'"{e.value}"'
        return f"{e.value}:{e.type}"
    if isinstance(e, ir.Var):
        return e.name
    if isinstance(e, ir.Member):
        return f"{expr(e.base)}.{e.field}"
    if isinstance(e, ir.StackElem):
        return f"{expr(e.stack)}[{expr(e.index)}]"
    if isinstance(e, ir.StackNext):
        return f"{expr(e.stack)}.next"
    if isinstance(e, ir.StackLast):
        return f"{expr(e.stack)}.last"
    if isinstance(e, ir.StackProp):
        return f"{expr(e.stack)}.{e.prop}"
    if isinstance(e, ir.Slice):
        return f"{expr(e.base)}[{e.hi}:{e.lo}]"
    if isinstance(e, ir.Concat):
        return f"({expr(e.left)} ++ {expr(e.right)})"
    if isinstance(e, ir.Cast):
        return f"(({e.type}) {expr(e.expr)})"
    if isinstance(e, ir.Unary):
        return f"{e.op}{expr(e.operand)}"
    if isinstance(e, ir.Binary):
        return f"({expr(e.left)} {e.op} {expr(e.right)})"
    if isinstance(e, ir.Mux):
        return f"({expr(e.cond)} ? {expr(e.then)} : {expr(e.else_)})"
    if isinstance(e, ir.ListExpr):
        return "{" + ", ".join(expr(i) for i in e.items) + "}"
    if isinstance(e, ir.IsValid):
        return f"{expr(e.header)}.isValid()"
    if isinstance(e, ir.TableHit):
        return f"{e.table}.apply().{'miss' if e.negate else 'hit'}"
    if isinstance(e, ir.Lookahead):
        return f"lookahead<{e.type}>()"
    if isinstance(e, ir.ExternCallExpr):
        who = f"{e.instance}." if e.instance else ""
        return f"{who}{e.method}({', '.join(expr(a) for a in e.args)})"
    return repr(e)  # pragma: no cover


def stmt(s: ir.Stmt, indent: str = "") -> list[str]:
    if isinstance(s, ir.Block):
        out = [indent + "{"]
        for x in s.stmts:
            out.extend(stmt(x, indent + "    "))
        return out + [indent + "}"]
    if isinstance(s, ir.VarDecl):
        init = f" = {expr(s.init)}" if s.init is not None else ""
        return [f"{indent}{s.type} {s.name}{init};"]
    if isinstance(s, ir.Assign):
        return [f"{indent}{expr(s.lhs)} = {expr(s.rhs)};"]
    if isinstance(s, ir.If):
        out = [f"{indent}if ({expr(s.cond)})"] + stmt(s.then, indent)
        if s.else_ is not None:
            out += [f"{indent}else"] + stmt(s.else_, indent)
        return out
    if isinstance(s, ir.ApplyTable):
        return [f"{indent}{s.table}.apply();"]
    if isinstance(s, ir.SwitchAction | ir.SwitchValue):
        head = (f"switch ({s.table}.apply().action_run)" if isinstance(s, ir.SwitchAction)
                else f"switch ({expr(s.expr)})")
        out = [indent + head]
        for c in s.cases:
            labels = c.actions if isinstance(c, ir.ActionCase) else (
                [expr(v) for v in c.values] if c.values is not None else None)
            out.append(f"{indent}  {'default' if labels is None else ', '.join(labels)}:")
            if c.body is not None:
                out.extend(stmt(c.body, indent + "    "))
        return out
    if isinstance(s, ir.ActionCall):
        return [f"{indent}{s.action}({', '.join(expr(a) for a in s.args)});"]
    if isinstance(s, ir.ExternCall):
        who = f"{s.instance}." if s.instance else ""
        targs = f"<{', '.join(str(t) for t in s.type_args)}>" if s.type_args else ""
        return [f"{indent}{who}{s.method}{targs}({', '.join(expr(a) for a in s.args)});"]
    if isinstance(s, ir.HeaderMethod):
        return [f"{indent}{expr(s.header)}.{s.method}();"]
    if isinstance(s, ir.StackMethod):
        return [f"{indent}{expr(s.stack)}.{s.method}({s.count});"]
    if isinstance(s, ir.Extract):
        return [f"{indent}extract({expr(s.header)});"]
    if isinstance(s, ir.Advance):
        return [f"{indent}advance({expr(s.bits)});"]
    if isinstance(s, ir.Emit):
        return [f"{indent}emit({expr(s.header)});"]
    if isinstance(s, ir.For):
        init = "; ".join(" ".join(stmt(x)).rstrip(";") for x in s.init)
        upd = "; ".join(" ".join(stmt(x)).rstrip(";") for x in s.update)
        return [f"{indent}for ({init}; {expr(s.cond)}; {upd})"] + stmt(s.body, indent)
    if isinstance(s, ir.Break):
        return [f"{indent}break;"]
    if isinstance(s, ir.Continue):
        return [f"{indent}continue;"]
    if isinstance(s, ir.Exit):
        return [f"{indent}exit;"]
    if isinstance(s, ir.Return):
        return [f"{indent}return;"]
    return [indent + repr(s)]  # pragma: no cover


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
    for c in program.controls.values():
        out.append(f"control {c.name}(" + ", ".join(
            f"{x.direction} {x.type} {x.name}".strip() for x in c.params) + ") {")
        for v in c.locals:
            out.extend(stmt(v, "    "))
        for inst in c.instances.values():
            out.append("    " + _instance(inst))
        for t in c.tables.values():
            out.append(f"    table {t.name} {{  // {t.cp_name}")
            for k in t.keys:
                out.append(f"        {expr(k.expr)}: {k.match_kind};  // {k.name}")
            for r in t.actions:
                out.append(f"        action {r.action}" + (f" @{r.scope}" if r.scope else ""))
            const = "const " if t.default_action_const else ""
            out.append(f"        {const}default_action = {_bound(t.default_action)};")
            out.append(f"        size = {t.size};")
            for attr in ("implementation", "direct_counter", "direct_meter"):
                if getattr(t, attr):
                    out.append(f"        {attr} = {getattr(t, attr)};")
            for e in t.const_entries or []:
                keys = ", ".join(f"{k.kind}:{k.value:#x}" + (f"/{k.mask:#x}" if k.mask else "")
                                 + (f"..{k.hi:#x}" if k.hi is not None else "") for k in e.keys)
                prio = f" prio {e.priority}" if e.priority is not None else ""
                out.append(f"        entry ({keys}){prio}: {_bound(e.action)}")
            out.append("    }")
        out.append("    apply")
        out.extend(stmt(c.body, "    "))
        out.append("}")
    return "\n".join(out)
