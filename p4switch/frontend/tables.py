"""Tables: keys, the actions list (with bound directional arguments), default actions and
entries' action calls, implementation/counters/meters properties, and entry keysets cut to
the key's match kind. Entries and their priorities are in ``entries``.

"""

from __future__ import annotations

import re
from collections.abc import Callable

from lark import Token, Tree

from p4switch import ir
from p4switch.frontend.bindings import (
    ActionB,
    Args,
    BlockCtx,
    InstanceB,
    Scope,
    TableB,
)
from p4switch.frontend.diagnostics import warn
from p4switch.frontend.errors import P4CompileError, unsupported
from p4switch.frontend.parts import Part
from p4switch.frontend.trees import expr_text, name_text, unquote

#: Whether table actions lists may bind directional action arguments (``ir.ActionRef.args``).
#: On since both pipeline paths (codegen's general driver, fused) execute them.
BOUND_ACTION_ARGS = True


class Tables(Part):
    """Table declarations (``parts.tables``): keys, actions lists, default actions,
    properties and the constant entries' keys."""

    def table_decl(self, d: Tree, scope: Scope, ctx: BlockCtx) -> None:
        annos_t, name = d.children[0], d.children[1]
        annos = self.parts.annos.annotations(annos_t, scope)
        n = name_text(name)
        props = d.children[2:]
        table = ir.Table(ctx.local_prefix + n, self.parts.annos.cp_name(ctx, n, annos), [], [],
                         ir.BoundAction("NoAction", []), annotations=annos, loc=self.loc(name))
        seen: set[str] = set()

        def once(p: str, node: object) -> None:
            if p in seen:
                raise self.err(node, f"table property '{p}' given twice")
            seen.add(p)

        # keys and actions first: other properties refer to them
        for p in props:
            if p.data == "key_prop":
                once("key", p)
                for k in p.children:
                    table.keys.append(self.table_key(k, scope, ctx))
            elif p.data == "actions_prop":
                once("actions", p)
                for ar in p.children:
                    table.actions.append(self.action_ref(ar, scope, ctx, table))
        if "actions" not in seen:
            raise self.err(name, f"table '{n}' has no actions property")
        lpm = [k for k in table.keys if k.match_kind == "lpm"]
        if len(lpm) > 1:
            raise self.err(name, f"table '{n}' has more than one lpm key")
        entries_t = None
        default_given = False
        largest_wins, delta = True, 1
        for p in props:
            if p.data == "entries_prop":
                once("entries", p)
                entries_t = p
            elif p.data == "other_prop":
                p_annos, const_tok, pname, value = p.children
                pn = name_text(pname)
                once(pn, pname)
                if pn == "default_action":
                    default_given = True
                    table.default_action = self.bound_action(value, scope, ctx, table,
                                                             default=True)
                    table.default_action_const = const_tok is not None
                elif pn == "size":
                    table.size = self.parts.decls.const_int(value, scope, "table size")
                    if table.size <= 0:
                        raise self.err(value, "table size must be positive")
                elif pn == "counters":
                    table.direct_counter = self.table_instance_prop(
                        value, scope, ctx, table, "direct_counter", pn)
                elif pn == "meters":
                    table.direct_meter = self.table_instance_prop(
                        value, scope, ctx, table, "direct_meter", pn)
                elif pn == "implementation":
                    table.implementation = self.table_instance_prop(
                        value, scope, ctx, table, ("action_profile", "action_selector"), pn,
                        self.parts.annos.annotations(p_annos, scope))
                elif pn == "largest_priority_wins":
                    e = self.parts.exprs.expr(value, scope, ctx)
                    if not (isinstance(e, ir.Const) and isinstance(e.type, ir.BoolType)):
                        raise self.err(value, "largest_priority_wins must be true or false")
                    largest_wins = bool(e.value)
                elif pn == "priority_delta":
                    delta = self.parts.decls.const_int(value, scope, "priority_delta")
                    if delta <= 0:
                        raise self.err(value, "priority_delta must be positive")
                elif pn == "support_timeout":
                    e = self.parts.exprs.expr(value, scope, ctx)
                    if not (isinstance(e, ir.Const) and isinstance(e.type, ir.BoolType)):
                        raise self.err(value, "support_timeout must be true or false")
                    table.annotations["support_timeout"] = "true" if e.value else "false"
                else:  # as p4c: a warning, and the property plays no part
                    warn(self.loc(pname), f"unknown table property '{pn}' of table '{n}' is "
                                          "ignored")
        if not default_given:
            # as p4c: an implicit `default_action = NoAction()`, with NoAction added to the
            # list as @defaultonly when the program did not list it
            if self.env.globals.lookup("NoAction") is None:
                raise self.err(name, f"table '{n}' has no default_action and NoAction is not "
                                     "declared (include <core.p4>)")
            if not any(r.action == "NoAction" for r in table.actions):
                table.actions.append(ir.ActionRef("NoAction", "defaultonly"))
            table.default_action = ir.BoundAction("NoAction", [])
        selector = [k for k in table.keys if k.match_kind == "selector"]
        if selector:
            impl = ctx.instances.get(table.implementation or "") or self.env.instances.get(
                table.implementation or "")
            if impl is None or impl.type_name != "action_selector":
                raise self.err(name, f"table '{n}' has selector keys but no action_selector "
                                     "implementation")
        if entries_t is not None:
            self.parts.entries.table_entries(entries_t, scope, ctx, table, largest_wins, delta)
        self.env.declare(scope, n, TableB(table), name)
        ctx.tables[table.name] = table

    def table_key(self, k: Tree, scope: Scope, ctx: BlockCtx) -> ir.TableKey:
        expr_t, kind_t, annos_t = k.children
        annos = self.parts.annos.annotations(annos_t, scope)
        e = self.parts.exprs.expr(expr_t, scope, ctx)
        kind = name_text(kind_t)
        if kind not in self.env.match_kinds:
            raise self.err(kind_t, f"unknown match kind '{kind}'")
        t = e.type
        if isinstance(t, ir.EnumType) and t.underlying is None:
            # p4c-bm2-ss refuses it too: "width not well-defined for values of type ..."
            raise self.err(expr_t, f"table key of enum type {t}, which has no underlying type: "
                                   "its width is not defined for the target (declare it "
                                   f"'enum bit<W> {t}')")
        if isinstance(t, ir.ErrorType):
            # any type with == may be an exact key (spec 14.2.1.1); masks and ranges need bits
            if kind not in ("exact", "optional"):
                raise self.err(kind_t, f"an error key can only be matched exact or optional, "
                                       f"not {kind}")
        elif not isinstance(t, ir.BitsType | ir.BoolType | ir.EnumType):
            raise self.err(expr_t, f"table key type {t} is not allowed (use bit<W>, int<W>, "
                                   "bool, error or a serializable enum)")
        name = annos.get("name") or _key_name(expr_t, lambda base: self._field_names(
            base, scope, ctx))
        type_name = ""
        if isinstance(e, ir.Member) and isinstance(e.base.type, ir.StructType | ir.HeaderType):
            type_name = next((f.type_name for f in e.base.type.fields if f.name == e.field), "")
        return ir.TableKey(e, kind, name, annos, type_name)

    def _field_names(self, base: Tree | Token, scope: Scope, ctx: BlockCtx) -> dict[str, str]:
        """The ``@name``s of the fields of the struct or header ``base`` evaluates to."""
        try:
            t = self.parts.exprs.expr(base, scope, ctx).type
        except P4CompileError:
            return {}
        if not isinstance(t, ir.StructType | ir.HeaderType):
            return {}
        return {f.name: str(dict(f.annotations)["name"]) for f in t.fields
                if dict(f.annotations).get("name")}

    def action_ref(self, ar: Tree, scope: Scope, ctx: BlockCtx,
                   table: ir.Table) -> ir.ActionRef:
        annos_t, name, args = ar.children
        annos = self.parts.annos.annotations(annos_t, scope)
        b = scope.lookup(name_text(name))
        if not isinstance(b, ActionB):
            raise self.err(name, f"'{name_text(name)}' is not an action")
        action = self.env.actions[b.key]
        an = name_text(name)
        directional = [p for p in action.params if p.direction]
        bound: list[ir.Expr] = []
        raw = self.parts.args.arg_list(args)
        if raw or directional:
            # `actions = { setbyte(hdr.data.b1); }`: the directional parameters are bound here
            if len(raw) != len(directional):
                raise self.err(name, f"action '{an}' in the actions list of table "
                                     f"'{table.name}' needs {len(directional)} argument(s) for "
                                     f"its directional parameters, got {len(raw)}")
            what = f"action '{an}'"
            arg_trees = self.parts.args.bind(raw, [p.name for p in directional], what)
            for p, a in zip(directional, arg_trees, strict=True):
                e = self.parts.exprs.expr_as(a, scope, ctx, p.type,
                                             f"argument '{p.name}' of '{an}'")
                if p.direction in ("out", "inout"):
                    self.parts.stmts.check_lvalue(e, a, scope)
                bound.append(e)
            if not BOUND_ACTION_ARGS:
                raise self.err(args if args is not None else name, unsupported(
                    f"binding directional action arguments in a table's actions list "
                    f"('{expr_text(ar.children[1])}(...)')") + " yet (its pipeline does not "
                    "execute them); declare an action without directional parameters instead")
        if any(r.action == b.key for r in table.actions):
            raise self.err(name, f"action '{an}' listed twice")
        scope_kw = "defaultonly" if "defaultonly" in annos else (
            "tableonly" if "tableonly" in annos else "")
        return ir.ActionRef(b.key, scope_kw, annos, bound)

    def bound_action(self, value: Tree, scope: Scope, ctx: BlockCtx, table: ir.Table,
                     default: bool = False, name_node: object = None,
                     args_t: Tree | None = None) -> ir.BoundAction:
        if name_node is None:
            if value.data == "call":
                name_node, args_t = value.children
            elif value.data == "name_ref":
                name_node, args_t = value, None
            else:
                raise self.err(value, "default_action must be an action call like a(1, 2)")
            if not (isinstance(name_node, Tree) and name_node.data == "name_ref"):
                raise self.err(value, "expected an action name")
            name_node = name_node.children[0]
        assert isinstance(name_node, Tree | Token)  # the name's token (or name_ref tree)
        an = name_text(name_node)
        b = scope.lookup(an)
        if not isinstance(b, ActionB):
            raise self.err(name_node, f"'{an}' is not an action")
        ref = next((r for r in table.actions if r.action == b.key), None)
        if ref is None:
            raise self.err(name_node, f"action '{an}' is not in the actions of table "
                                      f"'{table.name}'")
        if default and ref.scope == "tableonly":
            raise self.err(name_node, f"action '{an}' is @tableonly and cannot be the default")
        if not default and ref.scope == "defaultonly":
            raise self.err(name_node, f"action '{an}' is @defaultonly and cannot be used in "
                                      "entries")
        action = self.env.actions[b.key]
        raw = self.parts.args.arg_list(args_t)
        data = action.data_params
        if ref.args and len(raw) == len(action.params):
            # p4c's spelling: the directional arguments the actions list binds, repeated
            raw = self.bound_leading(raw, ref, action, scope, ctx, an)
        # defaults do not apply here: p4c requires every action data argument
        arg_trees = self.parts.args.with_defaults(raw, [p.name for p in data], {},
                                                  f"action '{an}'", name_node)
        vals: list[ir.Expr] = []
        for p, a in zip(data, arg_trees, strict=True):
            c = self.parts.args.arg_value(a, p.type, "", f"argument '{p.name}' of '{an}'", scope,
                                          ctx)
            if not isinstance(c, ir.Const):
                raise self.err(a, f"argument '{p.name}' of '{an}' must be a compile-time "
                                  "constant")
            vals.append(c)
        return ir.BoundAction(b.key, vals)

    def bound_leading(self, raw: Args, ref: ir.ActionRef, action: ir.Action, scope: Scope,
                      ctx: BlockCtx, an: str) -> Args:
        """An entry or default action that repeats the directional arguments its actions list
        binds (p4c requires them there): check they are the same, keep the action data."""
        trees = self.parts.args.bind(raw, [p.name for p in action.params], f"action '{an}'")
        for a, bound in zip(trees, ref.args, strict=False):
            if self.parts.exprs.expr(a, scope, ctx) != bound:
                raise self.err(a, f"argument of '{an}' must be the one its table's actions "
                                  f"list binds ('{expr_text(a)}' differs)")
        rest = Args()
        rest.extend(trees[len(ref.args):])
        rest.names = [None] * len(rest)
        rest.nodes = list(rest)
        return rest

    def table_instance_prop(self, value: Tree, scope: Scope, ctx: BlockCtx, table: ir.Table,
                            kinds: str | tuple[str, ...], prop: str,
                            prop_annos: dict[str, str] | None = None) -> str:
        """The instance a table property names or constructs. A constructed one is named
        after the table, or as p4c names it by the property's own ``@name`` (the first one,
        as written: no control prefix), and carries the property's other annotations."""
        kinds = (kinds,) if isinstance(kinds, str) else kinds
        if value.data == "construct":
            tref, args = value.children
            t = self.parts.decls.resolve_type(tref, scope)
            if not isinstance(t, ir.ExternType) or t.name not in kinds:
                raise self.err(value, f"table property '{prop}' must be "
                                      f"{' or '.join(kinds)}, not {t}")
            local = table.name if table.name not in ctx.instances else f"{table.name}_{prop}"
            annos = {}
            if "name" in table.annotations:
                annos["name"] = table.annotations["name"]
            inst = self.parts.blocks.make_instance(t, args, value, scope, ctx, local, annos, value)
            inst.cp_name = table.cp_name if local == table.name else f"{table.cp_name}_{prop}"
            inst.annotations = {k: v for k, v in (prop_annos or {}).items() if k != "name"}
            if prop_annos and prop_annos.get("name"):
                first = prop_annos["name"]
                earlier = getattr(first, "earlier", ())
                inst.cp_name = (unquote(earlier[0]) if earlier else str(first)).lstrip(".")
            inst.name = local  # the table's IR name already carries ctx.local_prefix
            ctx.instances[local] = inst
            return local
        if value.data == "name_ref":
            b = scope.lookup(str(value.children[0]))
            if isinstance(b, InstanceB) and b.inst.type_name in kinds:
                return b.inst.name
        raise self.err(value, f"table property '{prop}' must name a {' or '.join(kinds)} "
                              "instance")

    def entry_key(self, ks: object, key: ir.TableKey, node: Tree) -> ir.EntryKey:
        kind = key.match_kind
        width = key.width
        full = (1 << width) - 1
        if isinstance(ks, ir.KeysetDefault):
            if kind == "exact":
                raise self.err(node, f"'_' / default is not allowed for exact key '{key.name}'")
            return ir.EntryKey("default")
        if kind == "exact":
            if not isinstance(ks, ir.KeysetValue):
                raise self.err(node, f"exact key '{key.name}' needs a plain value")
            return ir.EntryKey("exact", ks.value)
        if kind == "lpm":
            if isinstance(ks, ir.KeysetValue):
                return ir.EntryKey("lpm", ks.value, full, prefix_len=width)
            if isinstance(ks, ir.KeysetMask):
                plen = _prefix_len(ks.mask, width)
                if plen is None:
                    raise self.err(node, f"mask 0x{ks.mask:x} of lpm key '{key.name}' is not a "
                                         "prefix")
                return ir.EntryKey("lpm", ks.value & ks.mask, ks.mask, prefix_len=plen)
            raise self.err(node, f"lpm key '{key.name}' needs value or value &&& mask")
        if kind == "ternary":
            if isinstance(ks, ir.KeysetValue):
                return ir.EntryKey("ternary", ks.value, full)
            if isinstance(ks, ir.KeysetMask):
                return ir.EntryKey("ternary", ks.value & ks.mask, ks.mask)
            raise self.err(node, f"ternary key '{key.name}' needs value or value &&& mask")
        if kind == "range":
            if isinstance(ks, ir.KeysetRange):
                return ir.EntryKey("range", ks.lo, hi=ks.hi)
            if isinstance(ks, ir.KeysetValue):
                return ir.EntryKey("range", ks.value, hi=ks.value)
            raise self.err(node, f"range key '{key.name}' needs lo .. hi or a value")
        if kind == "optional":
            if isinstance(ks, ir.KeysetValue):
                return ir.EntryKey("optional", ks.value)
            raise self.err(node, f"optional key '{key.name}' needs a value or _")
        raise self.err(node, unsupported(f"const entries for '{kind}' keys"))


def _key_name(expr_t: Tree | Token,
              field_names: Callable[[Tree | Token], dict[str, str]] | None = None) -> str:
    """A key's control-plane name as p4c gives it: the expression's text, except that a
    validity test ``h.isValid()`` is named ``h.$valid$`` (the BMv2 field p4c matches on), so
    P4Info, P4Runtime requests and STF files written for p4c address the same key; a field
    with ``@name("n")`` is named ``n`` (``.n``: ``n`` alone, without what is left of it), and
    a constant is written in its base without width or leading zeros (``0x0f`` -> ``0xf``).
    ``field_names(base)``: the ``@name``s of the fields of the struct/header ``base`` is."""
    if not isinstance(expr_t, Tree):
        return expr_text(expr_t)
    d, c = expr_t.data, expr_t.children
    if (d == "call" and not c[1] and isinstance(c[0], Tree) and c[0].data == "member"
            and str(c[0].children[1].children[0]) == "isValid"):
        return f"{_key_name(c[0].children[0], field_names)}.$valid$"
    if d == "member":
        field = str(c[1].children[0])
        renamed = (field_names(c[0]) if field_names else {}).get(field)
        if renamed is not None and renamed.startswith("."):
            return renamed[1:]
        return f"{_key_name(c[0], field_names)}.{renamed or field}"
    if d == "int_lit":
        return _constant_text(str(c[0]))
    if d == "index":
        return f"{_key_name(c[0], field_names)}[{_key_name(c[1], field_names)}]"
    if d == "slice":
        return (f"{_key_name(c[0], field_names)}[{_key_name(c[1], field_names)}:"
                f"{_key_name(c[2], field_names)}]")
    if d == "binop" and str(c[1]) == "&":
        return f"{_key_name(c[0], field_names)} & {_key_name(c[2], field_names)}"
    return expr_text(expr_t)


def _constant_text(literal: str) -> str:
    """An integer literal as p4c names it in a key: its value in its base, no width."""
    digits = literal.replace("_", "")
    m = re.fullmatch(r"[0-9]+[ws](-?)(.*)", digits)
    sign = ""
    if m is not None:
        sign, digits = m.group(1), m.group(2)
    prefix = digits[:2].lower()
    base = {"0x": 16, "0b": 2, "0o": 8, "0d": 10}.get(prefix)
    if base is None:
        return literal if not digits.isdigit() else sign + str(int(digits))
    value = int(digits[2:], base)
    text = {16: "x", 2: "b", 8: "o", 10: "d"}[base]
    body = format(value, text) if base != 10 else str(value)
    return f"{sign}{'0' + text if base != 10 else ''}{body}"


def _prefix_len(mask: int, width: int) -> int | None:
    """Number of leading ones of a prefix mask, or None if the mask is not a prefix."""
    full = (1 << width) - 1
    mask &= full
    plen = 0
    while plen < width and mask & (1 << (width - 1 - plen)):
        plen += 1
    expected = (full >> (width - plen)) << (width - plen) if plen else 0
    return plen if mask == expected else None
