"""Parsers: their states (a sub-parser's inlined and renamed into its caller's),
transitions, select keys and keysets (values, masks, ranges, value sets, default).

"""

from __future__ import annotations

from collections.abc import Callable

from lark import Token, Tree

from p4switch import ir
from p4switch.frontend.bindings import (
    BlockB,
    BlockCtx,
    ParserCall,
    Scope,
    ValueSetB,
)
from p4switch.frontend.errors import unsupported
from p4switch.frontend.parts import Part
from p4switch.frontend.trees import (
    child_trees,
    has_ctor_params,
    name_text,
)
from p4switch.frontend.types import (
    to_unsigned,
)


def _successors(tr: ir.Transition) -> list[str]:
    if tr.select_keys is None:
        return [tr.next_state or "accept"]
    return [c.next_state for c in tr.cases]


class Parsers(Part):
    """Parsers: the block prelude shared with controls, states, transitions and keysets
    (``parts.parsers``)."""

    # ---------------------------------------------------------------- parsers
    def block_prelude(self, kind: str, ttree: Tree, ctor: Tree | None,
                      reserved: set[str] | None = None) -> tuple[
            str, dict[str, str], Scope, BlockCtx, list[ir.Param]]:
        annos_t, name, targs, params = ttree.children
        if targs is not None:
            raise self.err(targs, unsupported(f"generic {kind}s"))
        if ctor is not None:
            raise self.err(ctor, unsupported(f"{kind} constructor parameters"))
        n = name_text(name)
        annos = self.parts.annos.annotations(annos_t)
        ctx = BlockCtx(kind, n, set(self.env.reserved) | (reserved or set()))
        scope = Scope(self.env.globals)
        plist = self.parts.blocks.block_params(params, scope, ctx, kind)
        return n, annos, scope, ctx, plist

    def decl_parser_impl(self, d: Tree) -> None:
        ttree, ctor = d.children[0], d.children[1]
        if has_ctor_params(ctor):
            self.template_block("parser", d)
            return
        name, annos, scope, ctx, plist = self.block_prelude("parser", ttree, None)
        b = self.parser_body(d, name, annos, scope, ctx, plist)
        self.env.declare(self.env.globals, name, b, ttree.children[1])

    def parser_body(self, d: Tree, name: str, annos: dict[str, str], scope: Scope,
                    ctx: BlockCtx, plist: list[ir.Param]) -> BlockB:
        """A parser's locals and states once its parameters are bound (by a plain
        declaration, or by a specialisation with constructor arguments)."""
        ttree = d.children[0]
        # a parser without a packet_in (p4c allows one) can only be a sub-parser: the V1Switch
        # check of its parameters refuses it as the package's parser, and the program leaves
        # it out when nothing applies it
        for item in d.children[2:]:
            if not isinstance(item, Tree) or item.data == "parser_state":
                continue
            self.parts.blocks.block_local(item, scope, ctx)
        states = self.parser_states(child_trees(d, "parser_state"), scope, ctx, "", "accept",
                                    ttree.children[1], name)
        if ctx.prelude and "start" in states:
            if any("start" in _successors(st.transition) for st in states.values()):
                raise self.err(ttree.children[1], unsupported(
                    "function calls in initializers of a parser whose states loop back to "
                    "start"))
            states["start"].stmts[:0] = ctx.prelude
        parser = ir.Parser(name, plist, ctx.locals, ctx.instances, ctx.value_sets, states, annos)
        self.env.parsers[name] = parser
        return BlockB("parser", parser, [p.type for p in plist], d)

    def template_block(self, kind: str, d: Tree) -> None:
        """A parser/control with constructor parameters: only usable as a sub-block instance
        (``C(5) c;``), where its constructor arguments are known; elaborated there."""
        ttree = d.children[0]
        if ttree.children[2] is not None:
            raise self.err(ttree.children[2], unsupported(f"generic {kind}s"))
        self.env.declare(self.env.globals, name_text(ttree.children[1]), BlockB(kind, None, [], d),
                         ttree.children[1])

    def parser_states(self, states_t: list[Tree], scope: Scope, ctx: BlockCtx, prefix: str,
                      accept_to: str, name_node: object,
                      pname: str) -> dict[str, ir.ParserState]:
        """The states of a parser, named ``prefix + name``; ``accept`` leads to ``accept_to``
        (a sub-parser's accept continues its caller's state). A state that applies a
        sub-parser is split there: its statements so far plus the copy-in, a transition to the
        callee's (inlined, renamed) start, and a continuation state that the callee's accept
        reaches, holding the copy-out, the rest of the statements and the transition."""
        state_names: dict[str, Tree] = {}
        for s in states_t:
            sn = name_text(s.children[1])
            if sn in ("accept", "reject"):
                raise self.err(s.children[1], f"state '{sn}' is built in and cannot be declared")
            if sn in state_names:
                raise self.err(s.children[1], f"duplicate state '{sn}'")
            state_names[sn] = s
        if "start" not in state_names:
            raise self.err(name_node, f"parser '{pname}' has no 'start' state")

        def rename(sn: str) -> str:
            if sn == "accept":
                return accept_to
            return sn if sn == "reject" else prefix + sn

        states: dict[str, ir.ParserState] = {}
        for sn, s in state_names.items():
            sscope = Scope(scope)
            cur = prefix + sn
            cur_loc = self.loc(s.children[1])
            stmts: list[ir.Stmt] = []
            calls: dict[str, int] = {}
            trans_t = s.children[-1]
            for st in s.children[2:-1]:
                r = self.parts.stmts.stmt(st, sscope, ctx)
                if isinstance(r, ParserCall):
                    ib = r.inst
                    k = calls[ib.name] = calls.get(ib.name, 0) + 1
                    sub = f"{prefix}{sn}.{ib.name}{'' if k == 1 else k}."
                    cont = sub + "accept"
                    states[cur] = ir.ParserState(
                        cur, stmts + r.pre,
                        ir.Transition(next_state=sub + "start", loc=self.loc(r.node)),
                        loc=cur_loc)
                    states.update(self.parser_states(
                        child_trees(ib.tree, "parser_state"), Scope(ib.scope), ib.ctx, sub, cont,
                        ib.tree.children[0].children[1],
                        name_text(ib.tree.children[0].children[1])))
                    cur, cur_loc, stmts = cont, self.loc(r.node), list(r.post)
                elif r is not None:
                    stmts.append(r)
            if trans_t is None:
                trans = ir.Transition(next_state="reject", loc=self.loc(s))
            else:
                # function calls in the select keys run at the end of the state
                saved, self.env.hoisted = self.env.hoisted, stmts
                effects = self.env.effects
                try:
                    trans = self.transition(trans_t, sscope, ctx, state_names, rename)
                finally:
                    self.env.hoisted = saved
                if self.env.effects != effects and trans.select_keys:
                    trans.select_keys = self.parts.calls.evaluation_order(ctx).select_keys(
                        trans.select_keys, stmts)
            states[cur] = ir.ParserState(cur, stmts, trans, loc=cur_loc)
        return states

    def transition(self, t: Tree, scope: Scope, ctx: BlockCtx, states: dict[str, Tree],
                   rename: Callable[[str], str] | None = None) -> ir.Transition:
        def target(n: Tree | Token) -> str:
            sn = name_text(n)
            if sn not in states and sn not in ("accept", "reject"):
                raise self.err(n, f"unknown parser state '{sn}'")
            return rename(sn) if rename is not None else sn

        if t.data == "transition_direct":
            return ir.Transition(next_state=target(t.children[0]), loc=self.loc(t))
        keys_t = t.children[0]  # None: ``select()``, whose only keyset is default/_
        key_trees = [k for k in keys_t.children if k is not None] if keys_t is not None else []
        keys = [self.parts.exprs.expr(k, scope, ctx) for k in key_trees]
        for k, kt in zip(keys, key_trees, strict=True):
            if not isinstance(k.type, ir.BitsType | ir.BoolType | ir.EnumType | ir.ErrorType):
                raise self.err(kt, f"select key of type {k.type} is not supported")
            if isinstance(k.type, ir.InfIntType):
                raise self.err(kt, "select key needs a width")
        cases = []
        for c in t.children[1:]:
            ks_t, nxt = c.children
            keysets = self.keyset(ks_t, [k.type for k in keys], scope, ctx, allow_vs=True)
            cases.append(ir.SelectCase(keysets, target(nxt)))
        return ir.Transition(select_keys=keys, cases=cases, loc=self.loc(t))

    def keyset(self, ks: Tree, types: list, scope: Scope, ctx: BlockCtx,
               allow_vs: bool = False) -> list:
        if ks.data == "tuple_keyset":
            elems = ks.children
        else:
            elems = ks.children
        if (len(elems) == 1 and elems[0].data == "ks_value" and isinstance(
                elems[0].children[0], Tree) and elems[0].children[0].data == "list_expr"):
            # `{(a)}` / `{{a, b}}`: a keyset written as one list expression of the key values
            items = elems[0].children[0].children[0]
            items = [i for i in (items.children if items is not None else []) if i is not None]
            if len(items) == len(types) and not any(
                    isinstance(t, ir.TupleType | ir.StructType) for t in types):
                elems = [Tree("ks_value", [i], elems[0].meta) for i in items]
        if len(elems) == 1 and elems[0].data == "ks_default" and len(types) != 1:
            return [ir.KeysetDefault() for _ in types]
        if len(elems) == 1 and elems[0].data == "ks_value" and len(types) > 1:
            vs = self.struct_value_set(elems[0], types, scope, allow_vs)
            if vs is not None:
                return vs
        if len(elems) != len(types):
            raise self.err(ks, f"keyset has {len(elems)} elements but there are "
                               f"{len(types)} keys")
        return [self.simple_keyset(e, t, scope, ctx, allow_vs)
                for e, t in zip(elems, types, strict=True)]

    def struct_value_set(self, e: Tree, types: list, scope: Scope,
                         allow_vs: bool) -> list | None:
        """A value_set of a struct type as the keyset of a select on several keys: its
        fields match the keys in order, jointly (one member must match them all)."""
        v = e.children[0]
        if not (isinstance(v, Tree) and v.data == "name_ref"):
            return None
        b = scope.lookup(str(v.children[0]))
        if not isinstance(b, ValueSetB):
            return None
        if not allow_vs:
            raise self.err(v, "a value_set can only be used in a select")
        t = b.vs.type
        ftypes = [f.type for f in t.fields] if isinstance(t, ir.StructType) else [t]
        if ftypes != list(types):
            raise self.err(v, f"value_set of type {t} ({', '.join(map(str, ftypes))}) used "
                              f"for keys of types {', '.join(map(str, types))}")
        return [ir.KeysetValueSet(b.vs.name, keys=len(types)),
                *(ir.KeysetDefault() for _ in types[1:])]

    def simple_keyset(self, e: Tree, t: object, scope: Scope, ctx: BlockCtx,
                      allow_vs: bool) -> object:
        if e.data == "ks_default":
            return ir.KeysetDefault()
        if e.data == "ks_value":
            v = e.children[0]
            if allow_vs and isinstance(v, Tree) and v.data == "name_ref":
                b = scope.lookup(str(v.children[0]))
                if isinstance(b, ValueSetB):
                    vt = b.vs.type
                    if isinstance(vt, ir.StructType) and [f.type for f in vt.fields] == [t]:
                        return ir.KeysetValueSet(b.vs.name)  # a struct of one field
                    if b.vs.type != t:
                        raise self.err(v, f"value_set of type {b.vs.type} used for a key of "
                                          f"type {t}")
                    return ir.KeysetValueSet(b.vs.name)
            return ir.KeysetValue(self.keyset_const(v, t, scope, ctx))
        if e.data == "ks_mask":
            return ir.KeysetMask(self.keyset_const(e.children[0], t, scope, ctx),
                                 self.keyset_const(e.children[2], t, scope, ctx, True))
        if e.data == "ks_range":
            return ir.KeysetRange(self.keyset_const(e.children[0], t, scope, ctx),
                                  self.keyset_const(e.children[2], t, scope, ctx))
        raise self.err(e, "unexpected keyset")  # pragma: no cover

    def keyset_const(self, v: Tree, t: object, scope: Scope, ctx: BlockCtx,
                     operand: bool = False) -> int:
        """A keyset value of key type ``t``; ``operand`` (a mask, spec 8.16.3): an integer
        for a serializable enum key converts to the enum's underlying type."""
        e = self.parts.exprs.expr(v, scope, ctx)
        if operand and isinstance(t, ir.EnumType) and t.underlying is not None and \
                isinstance(e.type, ir.InfIntType | ir.BitsType):
            t = t.underlying
        c = self.parts.exprs.coerce(e, t, v, "keyset value")
        if not isinstance(c, ir.Const):
            raise self.err(v, "keyset values must be compile-time constants")
        val = int(c.value)
        if isinstance(t, ir.BitsType):
            return to_unsigned(val, t.width)
        if isinstance(t, ir.EnumType) and t.underlying is not None:
            return to_unsigned(val, t.underlying.width)
        return val
