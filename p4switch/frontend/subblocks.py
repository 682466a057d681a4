"""Parsers and controls instantiated inside another block (``Sub() c; ... c.apply(...)``),
inlined: the instance's parameters become variables of the enclosing block, its locals,
instances, actions, tables and value sets are elaborated into it once, and each apply is
copy-in, the body (``return`` lowered), copy-out (``ir.Block.copy_out``: also on exit).

"""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import TYPE_CHECKING

from lark import Token, Tree

from p4switch import ir
from p4switch.frontend.arguments import is_dontcare
from p4switch.frontend.bindings import (
    Args,
    BlockB,
    BlockCtx,
    ConstB,
    ParserCall,
    ProtoB,
    Scope,
    SubInstB,
    SubParam,
    VarB,
)
from p4switch.frontend.errors import unsupported
from p4switch.frontend.lowering import lower_returns
from p4switch.frontend.parts import Part
from p4switch.frontend.trees import core_type, expr_text, has_ctor_params, name_text
from p4switch.frontend.types import (
    BOOL,
    BlockTypeRef,
    TypeVar,
    contains_typevar,
)
from p4switch.ir import has_return

if TYPE_CHECKING:  # pragma: no cover
    from p4switch.frontend.environment import Environment
    from p4switch.frontend.parts import Parts


class SubBlocks(Part):
    """Parser and control instances inside blocks, inlined (``parts.subs``): their
    parameters, constructor arguments, specialisations and applies."""

    def __init__(self, env: Environment, parts: Parts) -> None:
        super().__init__(env, parts)
        self.specialized: dict[str, int] = {}  # block type -> its specialisations so far

    def action_param_names(self, d: Tree) -> set[str]:
        out: set[str] = set()
        for item in d.children[2:-1]:
            if not isinstance(item, Tree):
                continue
            if item.data == "action_decl" and item.children[2]:
                out.update(name_text(p.children[3]) for p in item.children[2].children)
            elif item.data == "instantiation":
                inner = core_type(item.children[1])
                if inner.data == "named_type":
                    b = self.env.globals.lookup(str(inner.children[0]))
                    if isinstance(b, BlockB) and b.kind == "control" and b.tree is not None:
                        out |= self.action_param_names(b.tree)
        return out

    def sub_instance(self, d: Tree, b: BlockB, t: BlockTypeRef, args: Tree | None,
                     name: Tree | Token, scope: Scope, ctx: BlockCtx, annos: dict[str, str],
                     into: Scope | None = None) -> None:
        """``Sub(...) c;`` inside a parser/control: elaborate the instance's parameters (as
        per-instance variables of the enclosing block), constructor arguments (as constants),
        locals, extern instances, actions, tables and value sets into the enclosing block."""
        inst = name_text(name)
        if b.kind != ctx.kind or ctx.in_action:
            raise self.err(d, f"a {ctx.kind} cannot instantiate a {b.kind} ('{t.name}')")
        if t.args:
            raise self.err(d, unsupported(f"generic {b.kind}s"))
        assert b.tree is not None
        tree = b.tree
        ttree, ctor = tree.children[0], tree.children[1]
        iscope = Scope(self.env.globals)
        sub = BlockCtx(ctx.kind, self.parts.annos.cp_name(ctx, inst, annos), ctx.used,
                       ctx.instances, ctx.tables, ctx.actions, ctx.value_sets, ctx.locals,
                       deparser=ctx.deparser, local_prefix=f"{ctx.local_prefix}{inst}.")
        self.ctor_args(d, b.kind, t.name, ctor, args, scope, ctx, iscope, sub)
        # apply parameters: one variable per instance in the enclosing block (control-level,
        # so that the instance's actions and table keys see them)
        params: list[SubParam] = []
        defaults: dict[str, ir.Expr] = {}
        ptree = ttree.children[3]
        for p in ptree.children if ptree is not None else []:
            _pa, direction, tref, pname, default = p.children
            dname = str(direction.children[0]) if direction is not None else ""
            pt = self.parts.decls.resolve_type(tref, iscope)
            n = name_text(pname)
            if default is not None:
                if dname != "in":
                    raise self.err(default, f"only an 'in' parameter can have a default value "
                                            f"('{n}' is '{dname or 'directionless'}')")
                defaults[n] = self.default_value(default, pt, iscope, n)
            if isinstance(pt, ir.ExternType):
                if pt.name not in ("packet_in", "packet_out"):
                    raise self.err(p, unsupported(f"{pt.name} parameters of sub-{b.kind}s"))
                # extract/emit do not name the packet: the parameter only gives access to them
                self.env.declare(iscope, n, VarB(f"{inst}_{n}", pt, False, "parameter"), pname)
                params.append(SubParam(n, dname, pt, ""))
                continue
            if dname == "":
                raise self.err(p, unsupported(f"directionless parameters of {b.kind}s"))
            if isinstance(pt, TypeVar | BlockTypeRef) or contains_typevar(pt):
                raise self.err(tref, unsupported(f"generic parameter types in {b.kind}s"))
            irn = ctx.fresh(f"{inst}_{n}")
            what_p = "'in' parameter" if dname == "in" else "parameter"
            self.env.declare(iscope, n, VarB(irn, pt, dname != "in", what_p), pname)
            ctx.locals.append(ir.VarDecl(irn, pt, loc=self.loc(pname)))
            params.append(SubParam(n, dname, pt, irn))
        # locals: declared in the enclosing block, (re)initialised at each apply
        items = [c for c in (tree.children[2:-1] if b.kind == "control" else tree.children[2:])
                 if isinstance(c, Tree) and c.data != "parser_state"]
        inits: list[tuple[str, ir.Type, ir.Expr | None]] = []
        for item in items:
            if item.data == "var_decl":
                vd = self.parts.blocks.var_decl(item, iscope, sub)
                ctx.locals.append(ir.VarDecl(vd.name, vd.type, loc=vd.loc))
                inits.append((vd.name, vd.type, vd.init))
            else:
                self.parts.blocks.block_local(item, iscope, sub)
        self.env.declare(scope if into is None else into, inst,
                         SubInstB(b.kind, inst, tree, iscope, sub, params, inits,
                                  defaults=defaults), name)
        self.env.sub_used.add(t.name)

    def ctor_args(self, d: Tree, kind: str, tname: str, ctor: Tree | None, args: Tree | None,
                  scope: Scope, ctx: BlockCtx, iscope: Scope, sub: BlockCtx) -> None:
        """Bind a block's constructor parameters: values become compile-time constants in
        ``iscope``, parser/control-typed ones sub-instances of ``sub``; the arguments are
        evaluated in the instantiating ``scope``/``ctx``."""
        # constructor parameters: compile-time constants in the instance's scope
        cparams = ctor.children[0].children if has_ctor_params(ctor) else []
        raw = self.parts.args.arg_list(args)
        if len(raw) != len(cparams):
            raise self.err(d, f"{kind} '{tname}' expects {len(cparams)} constructor "
                              f"arguments, got {len(raw)}")
        what = f"constructor of {tname}"
        bound = self.parts.args.bind(raw, [name_text(p.children[3]) for p in cparams], what)
        for p, a in zip(cparams, bound, strict=True):
            _pa, direction, tref, pname, default = p.children
            if direction is not None or default is not None:
                raise self.err(p, unsupported("constructor parameters with a direction or "
                                              "a default value"))
            pt = self.parts.decls.resolve_type(tref, self.env.globals)
            if isinstance(pt, BlockTypeRef):
                self.block_ctor_arg(p, pt, a, what, scope, ctx, iscope, sub)
                continue
            if not isinstance(pt, ir.BitsType | ir.BoolType | ir.EnumType | ir.ErrorType
                              | ir.InfIntType):
                raise self.err(tref, unsupported(f"constructor parameters of type {pt} (only "
                                                 "values: bit/int/bool/enum/error)"))
            e = self.parts.exprs.expr_as(a, scope, ctx, pt,
                                         f"argument '{name_text(pname)}' of {what}")
            if not isinstance(e, ir.Const):
                raise self.err(a, f"argument '{name_text(pname)}' of {what} must be a "
                                  "compile-time constant")
            self.env.declare(iscope, name_text(pname), ConstB(e), pname)

    def specialize_block(self, b: BlockB, bname: str, cargs: Tree | None, a: Tree) -> BlockB:
        """A V1Switch control or parser with constructor parameters (``V1Switch(P(2), ...,
        Top(Leaf(), 3), ...)``): elaborated here with its arguments bound, as a block named
        ``Top_0`` (then ``Top_1``, ...), the name p4c gives its specialisation, so
        control-plane names agree (``Top_0.lf.leaf_t``)."""
        assert b.tree is not None
        d = b.tree
        ttree, ctor = d.children[0], d.children[1]
        annos_t, _name_tok, targs, params = ttree.children
        if targs is not None:
            raise self.err(targs, unsupported(f"generic {b.kind}s"))
        counts = self.specialized
        n = f"{bname}_{counts.get(bname, 0)}"
        counts[bname] = counts.get(bname, 0) + 1
        reserved = self.action_param_names(d) if b.kind == "control" else set()
        ctx = BlockCtx(b.kind, n, set(self.env.reserved) | reserved)
        scope = Scope(self.env.globals)
        plist = self.parts.blocks.block_params(params, scope, ctx, b.kind)
        self.ctor_args(a, b.kind, bname, ctor, cargs, self.env.globals, ctx, scope, ctx)
        body = (self.parts.blocks.control_body if b.kind == "control"
                else self.parts.parsers.parser_body)
        return body(d, n, self.parts.annos.annotations(annos_t), scope, ctx, plist)

    def block_ctor_arg(self, p: Tree, pt: BlockTypeRef, a: Tree, what: str, scope: Scope,
                       ctx: BlockCtx, iscope: Scope, sub: BlockCtx) -> None:
        """A control- or parser-typed constructor parameter (``control C(...)(D_t d)``) bound
        to an instantiation (``C(D())``): the argument becomes a sub-instance named after the
        parameter inside the instance (control-plane names ``<outer>.<inst>.<param>.<x>``,
        as p4c's), so ``d.apply(...)`` in C's body applies it. Its own constructor arguments
        are evaluated where C is instantiated."""
        pname = p.children[3]
        pn = name_text(pname)
        proto_b = self.env.globals.lookup(pt.name)
        if not isinstance(proto_b, ProtoB):
            kind = proto_b.kind if isinstance(proto_b, BlockB) else "package"
            raise self.err(p.children[2], f"constructor parameter '{pn}' cannot have type "
                                          f"{kind} {pt.name}: use a {kind} type declaration "
                                          f"('{kind} {pt.name}_t(...);') as its type")
        proto = proto_b.proto
        if proto.type_params or pt.args:
            raise self.err(p.children[2], unsupported(f"generic {proto.kind} types as "
                                                      "constructor parameter types"))
        if isinstance(a, Tree) and a.data == "name_ref":
            # an instance declared before (``Inner() i; Outer(i) o;``): Outer applies that
            # very instance (its tables and state are the enclosing block's ``i.*``)
            ib = scope.lookup(str(a.children[0]))
            if not isinstance(ib, SubInstB):
                raise self.err(a, f"argument '{pn}' of {what}: '{expr_text(a)}' is not a "
                                  f"{proto.kind} instance")
            if ib.kind != proto.kind:
                raise self.err(a, f"argument '{pn}' of {what} must be a {proto.kind}, but "
                                  f"'{ib.name}' is a {ib.kind}")
            got = [(q.direction, q.type) for q in ib.params]
            if got != [(sp.direction, sp.type) for sp in proto.params]:
                raise self.err(a, f"the parameters of '{ib.name}' do not match {proto.name}")
            self.env.declare(iscope, pn, ib, pname)
            return
        if not (isinstance(a, Tree) and a.data == "construct"):
            raise self.err(a, f"argument '{pn}' of {what} must be a {proto.kind} instantiation "
                              f"like {proto.name.removesuffix('_t')}()")
        tref, cargs = a.children
        inner = core_type(tref)
        bname = str(inner.children[0]) if inner.data == "named_type" else ""
        b = scope.lookup(bname) if bname else None
        if not isinstance(b, BlockB) or b.tree is None:
            raise self.err(a, f"argument '{pn}' of {what}: '{bname or 'this'}' is not a "
                              f"{proto.kind}")
        if b.kind != proto.kind:
            raise self.err(a, f"argument '{pn}' of {what} must be a {proto.kind}, but "
                              f"'{bname}' is a {b.kind}")
        ptree = b.tree.children[0].children[3]
        bparams = list(ptree.children) if ptree is not None else []
        if len(bparams) != len(proto.params):
            raise self.err(a, f"{b.kind} '{bname}' has {len(bparams)} parameters, but "
                              f"{proto.name} needs {len(proto.params)}")
        for sp, bp in zip(proto.params, bparams, strict=True):
            _pa, direction, btref, bpname, _default = bp.children
            bdir = str(direction.children[0]) if direction is not None else ""
            bt = self.parts.decls.resolve_type(btref, self.env.globals)
            if bdir != sp.direction or bt != sp.type:
                raise self.err(a, f"parameter '{name_text(bpname)}' of '{bname}' is "
                                  f"'{f'{bdir} {bt}'.strip()}', but {proto.name} declares "
                                  f"'{f'{sp.direction} {sp.type}'.strip()}'")
        self.sub_instance(a, b, BlockTypeRef(bname), cargs, pname, scope, sub, {}, into=iscope)

    def default_value(self, default: Tree, t: ir.Type, scope: Scope, pname: str) -> ir.Expr:
        """A sub-block parameter's default: a compile-time constant of its type (a list of
        constants for a struct or header)."""
        e = self.parts.exprs.expr_as(default, scope, BlockCtx("toplevel", "", set()), t,
                                     f"default value of '{pname}'")

        def constant(x: ir.Expr) -> bool:
            return isinstance(x, ir.Const) or (
                isinstance(x, ir.ListExpr) and all(constant(i) for i in x.items))
        if not constant(e):
            raise self.err(default, f"the default value of '{pname}' must be a compile-time "
                                    "constant")
        return e

    def sub_apply(self, ib: SubInstB, arg_trees: Args, c: Tree, scope: Scope,
                  ctx: BlockCtx) -> ir.Stmt | ParserCall:
        """``c.apply(args)``: copy-in (left to right; ``out`` parameters start at zero), the
        re-initialised locals, the callee's body with ``return`` lowered to a flag, copy-out
        (left to right). For a sub-parser the caller's state is split instead."""
        what = f"{ib.name}.apply()"
        bound: list[Tree | ir.Expr]
        if ib.defaults:  # an omitted argument is its parameter's default value
            bound = self.parts.args.with_defaults(arg_trees, [p.name for p in ib.params],
                                                  ib.defaults, what, c)
        else:
            if len(arg_trees) != len(ib.params):
                raise self.err(c, f"{what} expects {len(ib.params)} arguments, got "
                                  f"{len(arg_trees)}")
            bound = list(self.parts.args.bind(arg_trees, [p.name for p in ib.params], what))
        pre: list[ir.Stmt] = []
        post: list[ir.Stmt] = []
        loc = self.loc(c)
        for p, a in zip(ib.params, bound, strict=True):
            if not p.ir_name:
                assert not isinstance(a, ir.Expr)  # packet parameters have no defaults
                e = self.parts.exprs.expr(a, scope, ctx)
                # packet_in/packet_out (the parameters without a variable)
                if not (isinstance(e.type, ir.ExternType) and isinstance(p.type, ir.ExternType)
                        and e.type.name == p.type.name):
                    raise self.err(a, f"argument '{p.name}' of {what}: expected {p.type}, got "
                                      f"{e.type}")
                continue
            var = ir.Var(p.ir_name, type=p.type, loc=loc)
            if isinstance(a, ir.Expr):  # a default value
                pre.append(ir.Assign(var, a, loc=loc))
                continue
            if is_dontcare(a):
                if p.direction != "out":
                    raise self.err(a, f"'_' can only be passed for an out parameter "
                                      f"('{p.name}' of {what} is '{p.direction}')")
                pre.extend(self.zero(var, ctx))  # no copy-out: the value is discarded
                continue
            e = self.parts.exprs.expr_as(a, scope, ctx, p.type, f"argument '{p.name}' of {what}")
            if p.direction in ("out", "inout"):
                self.parts.stmts.check_lvalue(e, a, scope)
                e = self.pin_lvalue(e, pre, ctx)
                post.append(ir.Assign(copy.deepcopy(e), var, loc=loc))
            if p.direction in ("in", "inout"):
                pre.append(ir.Assign(var, e, loc=loc))
            else:
                pre.extend(self.zero(var, ctx))
        for n, t, init in ib.local_inits:
            var = ir.Var(n, type=t)
            if init is not None:
                pre.append(ir.Assign(var, copy.deepcopy(init), loc=init.loc))
            else:
                pre.extend(self.zero(var, ctx))
        if ib.kind == "parser":
            return ParserCall(ib, pre, post, c)
        # break/continue do not leave the callee
        depth, self.env.loop_depth = self.env.loop_depth, 0
        try:
            body = self.parts.stmts.block(ib.tree.children[-1], Scope(ib.scope), ib.ctx)
        finally:
            self.env.loop_depth = depth
        if has_return(body):
            flag = ctx.fresh(f"{ib.name}_returned")
            pre.append(ir.VarDecl(flag, BOOL, ir.Const(False, type=BOOL), loc=loc))
            body = ir.Block(lower_returns(body.stmts, flag), loc=body.loc)
        return ir.Block([*pre, body, *post], loc=loc, copy_out=len(post))

    def pin_lvalue(self, e: ir.Expr, pre: list[ir.Stmt], ctx: BlockCtx) -> ir.Expr:
        """An out/inout argument is evaluated to a location once, at the call: run-time stack
        indexes are saved in temporaries so that copy-out writes where copy-in read."""
        if isinstance(e, ir.Member | ir.Slice):
            return replace(e, base=self.pin_lvalue(e.base, pre, ctx))
        if isinstance(e, ir.StackNext | ir.StackLast):
            return replace(e, stack=self.pin_lvalue(e.stack, pre, ctx))
        if isinstance(e, ir.StackElem):
            stack = self.pin_lvalue(e.stack, pre, ctx)
            idx = e.index
            if not isinstance(idx, ir.Const):
                tmp = ctx.fresh("index")
                pre.append(ir.VarDecl(tmp, idx.type, idx, loc=idx.loc))
                idx = ir.Var(tmp, type=idx.type, loc=idx.loc)
            return replace(e, stack=stack, index=idx)
        return e

    def zero(self, var: ir.Var, ctx: BlockCtx) -> list[ir.Stmt]:
        """Statements that reset ``var`` to a fresh variable's value (zero, headers invalid)."""
        t = var.type
        if isinstance(t, ir.BitsType):
            return [ir.Assign(var, ir.Const(0, type=t))]
        if isinstance(t, ir.BoolType):
            return [ir.Assign(var, ir.Const(False, type=t))]
        tmp = ctx.fresh(f"{var.name}_init")
        return [ir.VarDecl(tmp, t), ir.Assign(var, ir.Var(tmp, type=t))]
