"""Blocks and what they declare: actions, extern and sub-block instantiations, the V1Switch
package, block parameters, parser/control-level variables and locals, and controls (parsers
are ``parsers.py``'s)."""

from __future__ import annotations

from dataclasses import fields, is_dataclass, replace

from lark import Token, Tree

from p4switch import ir
from p4switch.frontend.bindings import (
    ActionB,
    BlockB,
    BlockCtx,
    ExternB,
    InstanceB,
    PackageB,
    ProtoB,
    Scope,
    ValueSetB,
    VarB,
)
from p4switch.frontend.errors import unsupported
from p4switch.frontend.parts import Part
from p4switch.frontend.trees import core_type, has_ctor_params, name_text, subtrees
from p4switch.frontend.types import (
    BlockTypeRef,
    ExternDecl,
    PackageDecl,
    TypeVar,
    contains_typevar,
    substitute,
)
from p4switch.frontend.varbit import has_varbit

V1SWITCH_ROLES = ir.V1SWITCH_ROLES


class BlockElaborator(Part):
    """Actions, instantiations, the V1Switch package, block parameters and locals, and
    controls (``parts.blocks``): the declarations inside and of blocks."""

    def block_params(self, params: Tree | None, scope: Scope, ctx: BlockCtx,
                     kind: str, defaults: dict[str, ir.Const] | None = None) -> list[ir.Param]:
        """The parameters; ``defaults`` (actions) receives the default values."""
        out: list[ir.Param] = []
        if params is None:
            return out
        for p in params.children:
            annos, direction, tref, pname, default = p.children
            if default is not None and defaults is None and kind not in ("parser", "control"):
                raise self.err(default, unsupported("default parameter value"))
            d = str(direction.children[0]) if direction is not None else ""
            t = self.parts.decls.resolve_type(tref, scope)
            if default is not None and defaults is None:
                # a parser's or control's: its value is read where it is applied as a
                # sub-block (subblocks.default_value); a V1Switch block gets every argument
                if d != "in":
                    raise self.err(default, f"only an 'in' parameter can have a default value "
                                            f"('{name_text(pname)}' is '{d or 'directionless'}')")
            elif default is not None:
                assert defaults is not None
                if d in ("out", "inout"):
                    raise self.err(default, f"an {d} parameter cannot have a default value")
                defaults[name_text(pname)] = self.parts.args.param_default(
                    default, t, scope, ctx, name_text(pname))
            if isinstance(t, TypeVar | BlockTypeRef) or contains_typevar(t):
                raise self.err(tref, unsupported("generic parameter types in blocks"))
            if kind == "action" and d == "" and has_varbit(t):
                raise self.err(tref, "action data cannot be a varbit (the control plane sets "
                                     "fixed-width values)")
            n = name_text(pname)
            # action parameters keep their names (they are the control-plane API); block
            # parameters and locals are renamed around them instead
            irn = n if kind == "action" else ctx.fresh(n)
            if d == "" and kind != "action" and not isinstance(t, ir.ExternType):
                raise self.err(p, unsupported("directionless (constructor) parameters of "
                                              f"{kind}s"))
            writable = d in ("out", "inout")
            what = {"in": "'in' parameter", "": "action data parameter" if kind == "action"
                    else "parameter"}.get(d, "parameter")
            self.env.declare(scope, n, VarB(irn, t, writable, what), pname)
            out.append(ir.Param(irn, d, t, self.parts.annos.annotations(annos, scope),
                                self.parts.decls.newtype_of(tref, scope)))
        return out

    def decl_action_decl(self, d: Tree, scope: Scope | None = None,
                         ctx: BlockCtx | None = None) -> None:
        toplevel = ctx is None
        scope = scope or self.env.globals
        ctx = ctx or BlockCtx("toplevel", "", set(self.env.reserved))
        annos_t, name, params, body = d.children
        annos = self.parts.annos.annotations(annos_t, scope)
        n = name_text(name)
        cp = self.parts.annos.cp_name(ctx if not toplevel else self.env.top, n, annos)
        key = cp
        i = 1
        while key in self.env.actions:
            key = f"{cp}_{i}"
            i += 1
        ascope = Scope(scope)
        saved_in_action = ctx.in_action
        ctx.in_action = True
        defaults: dict[str, ir.Const] = {}
        plist = self.block_params(params, ascope, ctx, "action", defaults)
        self.env.action_defaults[key] = defaults
        seen_data = False
        for p, ptree in zip(plist, params.children if params is not None else [], strict=True):
            if p.direction == "":
                seen_data = True
            elif seen_data:
                raise self.err(ptree, "action parameters with a direction must come before "
                                      "directionless (action data) parameters")
            if isinstance(p.type, ir.ExternType):
                raise self.err(ptree, unsupported("extern-typed action parameters"))
        if toplevel:
            self.env.reserved.update(p.name for p in plist)
            ctx.used.update(p.name for p in plist)
        action = ir.Action(key, cp, plist, ir.Block([]), annos, loc=self.loc(name))
        # declare before the body so that (illegal) recursion is reported as such
        self.env.declare(scope, n, ActionB(key), name)
        self.env.actions[key] = action
        action.body = self.parts.stmts.block(body, ascope, ctx)
        ctx.in_action = saved_in_action
        if toplevel:
            self.env.reserved.update(ctx.used)
        if key != cp and _same_action(self.env.actions[cp], action):
            # `@name(".NoAction") action NoAction_1() {}` (what p4c's own output and many
            # programs contain) is the same action as NoAction: one action, one P4Info entry;
            # references to the new name resolve to the existing one
            del self.env.actions[key]
            scope.names[n] = ActionB(cp)
            if not toplevel and cp not in ctx.actions and any(
                    cp in c.actions for c in self.env.controls.values()):
                # a sub-control's action, inlined here: this control runs it too
                ctx.actions.append(cp)
            return
        if not toplevel:
            ctx.actions.append(key)

    def decl_instantiation(self, d: Tree, scope: Scope | None = None,
                           ctx: BlockCtx | None = None) -> None:
        scope = scope or self.env.globals
        ctx = ctx or self.env.top
        annos_t, tref, args, name, *rest = d.children
        if any(r is not None for r in rest):
            raise self.err(d, unsupported("extern instances with abstract method "
                                          "implementations"))
        annos = self.parts.annos.annotations(annos_t, scope)
        t = self.parts.decls.resolve_type(tref, scope)
        if isinstance(t, BlockTypeRef):
            b = scope.lookup(t.name)
            if isinstance(b, PackageB):
                if ctx is not self.env.top:
                    raise self.err(d, "a package can only be instantiated at top level")
                self.package_instance(d, b.decl, args, name)
                return
            if ctx is self.env.top:
                raise self.err(tref, unsupported("top-level parser or control instances"))
            if not isinstance(b, BlockB):
                raise self.err(tref, f"'{t.name}' is a {b.proto.kind} type without an "
                                     "implementation and cannot be instantiated"
                               if isinstance(b, ProtoB) else f"cannot instantiate '{t.name}'")
            self.parts.subs.sub_instance(d, b, t, args, name, scope, ctx, annos)
            return
        if not isinstance(t, ir.ExternType):
            raise self.err(tref, f"cannot instantiate type {t}")
        inst = self.make_instance(t, args, d, scope, ctx, name_text(name), annos, name)
        self.env.declare(scope, name_text(name), InstanceB(inst, self.extern_decl(t.name), t), name)
        if ctx is self.env.top:
            self.env.instances[inst.name] = inst
        else:
            ctx.instances[inst.name] = inst

    def extern_decl(self, name: str) -> ExternDecl:
        b = self.env.globals.lookup(name)
        assert isinstance(b, ExternB)
        return b.decl

    def make_instance(self, t: ir.ExternType, args: Tree | None, node: Tree, scope: Scope,
                      ctx: BlockCtx, local: str, annos: dict[str, str],
                      name_node: object) -> ir.ExternInstance:
        decl = self.extern_decl(t.name)
        if t.name in ("packet_in", "packet_out"):
            raise self.err(node, f"{t.name} cannot be instantiated")
        if contains_typevar(t):
            raise self.err(node, f"extern {t.name} needs type arguments "
                                 f"<{', '.join(decl.type_params)}>")
        for ta in t.type_args:
            if has_varbit(ta):
                raise self.err(node, unsupported(f"{t.name} of a varbit type"))
        raw = self.parts.args.arg_list(args)
        ctors = [c for c in decl.ctors if raw.fits([p.name for p in c.params])]
        if not ctors and any(raw.names):
            same = [c for c in decl.ctors if len(c.params) == len(raw)]
            if same:
                self.parts.args.bind(raw, [p.name for p in same[0].params],
                                     f"constructor of {t.name}")
        if not ctors:
            counts = sorted({len(c.params) for c in decl.ctors})
            raise self.err(node, f"constructor of {t.name} expects "
                                 f"{' or '.join(map(str, counts))} arguments, got {len(raw)}")
        ctor = ctors[0]
        arg_trees = self.parts.args.bind(raw, [p.name for p in ctor.params],
                                         f"constructor of {t.name}")
        binding = dict(zip(decl.type_params, t.type_args, strict=False))
        vals: list[ir.Expr] = []
        for p, a in zip(ctor.params, arg_trees, strict=True):
            pt = substitute(p.type, binding)
            e = self.parts.exprs.expr(a, scope, ctx)
            if isinstance(e, ir.Const) and isinstance(e.type, ir.EnumType) and \
                    e.type.underlying is not None and e.type.underlying == pt:
                # a serializable enum member converts to its underlying type (as p4c does)
                e = ir.Const(e.value, type=pt, loc=e.loc)
            e = self.parts.exprs.coerce(e, pt, a, f"argument '{p.name}' of {t.name}")
            if not isinstance(e, ir.Const):
                raise self.err(a, f"constructor argument '{p.name}' of {t.name} must be a "
                                  "compile-time constant")
            vals.append(e)
        ir_name = local if ctx is self.env.top else ctx.local_prefix + local
        return ir.ExternInstance(ir_name, self.parts.annos.cp_name(ctx, local, annos), t.name,
                                 t.type_args, vals, annos, loc=self.loc(name_node))

    def package_instance(self, d: Tree, decl: PackageDecl, args: Tree | None,
                         name: Tree | Token) -> None:
        if decl.name != "V1Switch":
            raise self.err(d, unsupported(f"package '{decl.name}' (only V1Switch of v1model)"))
        if self.env.main_seen:
            raise self.err(d, "only one package instantiation is allowed")
        if name_text(name) != "main":
            raise self.err(name, "the package instance must be called 'main'")
        raw = self.parts.args.arg_list(args)
        if len(raw) != len(decl.params):
            raise self.err(d, f"V1Switch expects {len(decl.params)} blocks, got {len(raw)}")
        arg_trees = self.parts.args.bind(raw, [p.name for p in decl.params], "V1Switch")
        binding: dict[str, object] = {}
        for role, p, a in zip(V1SWITCH_ROLES, decl.params, arg_trees, strict=True):
            if a.data != "construct":
                raise self.err(a, f"argument '{p.name}' of V1Switch must be a parser or control "
                                  "instantiation like MyIngress()")
            tref, cargs = a.children
            inner = core_type(tref)
            if inner.data != "named_type":
                raise self.err(a, "expected a parser or control name")
            bname = str(inner.children[0])
            b = self.env.globals.lookup(bname)
            if not isinstance(b, BlockB):
                raise self.err(a, f"'{bname}' is not a parser or control implementation")
            if b.block is None:
                b = self.parts.subs.specialize_block(b, bname, cargs, a)  # Top(Leaf(), 3) -> Top_0
                assert b.block is not None  # a specialisation has its IR block
                bname = b.block.name
            elif cargs is not None:
                raise self.err(cargs, f"{b.kind} '{bname}' has no constructor parameters")
            block = b.block
            assert isinstance(p.type, BlockTypeRef)
            proto_b = self.env.globals.lookup(p.type.name)
            assert isinstance(proto_b, ProtoB)
            proto = proto_b.proto
            if proto.kind != b.kind:
                raise self.err(a, f"argument '{p.name}' of V1Switch must be a {proto.kind}, "
                                  f"but '{bname}' is a {b.kind}")
            if len(proto.params) != len(block.params):
                raise self.err(a, f"{b.kind} '{bname}' has {len(block.params)} parameters, "
                                  f"but {proto.name} needs {len(proto.params)}")
            # proto type params are positional aliases of the package's (H, M)
            pkg_args = {tp: pa for tp, pa in zip(proto.type_params, p.type.args, strict=False)}
            for pp_, bp, bt in zip(proto.params, block.params, b.param_types, strict=True):
                if pp_.direction != bp.direction:
                    # p4c unifies the block's apply signature with the package parameter's:
                    # directions must be identical (an 'in' where 'inout' is declared fails too)
                    raise self.err(a, f"parameter '{bp.name}' of '{bname}' is "
                                      f"'{bp.direction or 'directionless'}', but {proto.name} "
                                      f"declares it '{pp_.direction or 'directionless'}': the "
                                      "directions must match (p4c rejects this too)")
                expected = pp_.type
                if isinstance(expected, TypeVar):
                    outer = pkg_args.get(expected.name)
                    key = outer.name if isinstance(outer, TypeVar) else expected.name
                    if key in binding and binding[key] != bt:
                        raise self.err(a, f"parameter '{bp.name}' of '{bname}' has type {bt}, "
                                          f"but the other blocks use {binding[key]}")
                    binding[key] = bt
                elif expected != bt:
                    raise self.err(a, f"parameter '{bp.name}' of '{bname}' has type {bt}, "
                                      f"expected {expected}")
            self.env.package[role] = bname
        self.env.main_seen = True

    def block_local(self, item: Tree, scope: Scope, ctx: BlockCtx) -> None:
        if item.data == "const_decl":
            self.parts.decls.decl_const_decl(item, scope, ctx)
        elif item.data == "var_decl":
            ctx.locals.append(self.block_var(item, scope, ctx))
        elif item.data == "instantiation":
            self.decl_instantiation(item, scope, ctx)
        elif item.data == "value_set_decl":
            annos_t, targs, size_t, name = item.children
            annos = self.parts.annos.annotations(annos_t, scope)
            types = [self.parts.decls.resolve_type_arg(a, scope, {}) for a in subtrees(targs)]
            if len(types) != 1:
                raise self.err(targs, "value_set takes one type argument")
            size = self.parts.decls.const_int(size_t, scope, "value_set size")
            vt = types[0]
            if not (isinstance(vt, ir.BitsType) or isinstance(vt, ir.StructType) and not vt.union
                    and vt.fields and all(isinstance(f.type, ir.BitsType) for f in vt.fields)):
                raise self.err(targs, unsupported(f"value_set of type {vt} (use bit<W> or a "
                                                  "struct of bit<W> fields)"))
            n = name_text(name)
            cp = self.parts.annos.cp_name(ctx, n, annos)
            vs = ir.ValueSet(ctx.local_prefix + n, cp, vt, size, annos)
            ctx.value_sets[vs.name] = vs
            self.env.declare(scope, n, ValueSetB(vs), name)
        elif item.data == "action_decl":
            self.decl_action_decl(item, scope, ctx)
        elif item.data == "table_decl":
            self.parts.tables.table_decl(item, scope, ctx)
        else:  # pragma: no cover
            raise self.err(item, f"unexpected {item.data}")

    def block_var(self, d: Tree, scope: Scope, ctx: BlockCtx) -> ir.VarDecl:
        """A parser/control-level variable. Its initializer may call functions: then it, and
        every initialised variable declared after it, is initialised by statements at the
        start of the block's body (``ctx.prelude``), in declaration order."""
        vd, hoisted, effects = self.env.in_statement(lambda: self.var_decl(d, scope, ctx))
        if not effects and not hoisted and not ctx.prelude:
            return vd
        pre = [*hoisted, *self.parts.calls.evaluation_order(ctx).stmt(vd)]
        decl = pre.pop()
        assert isinstance(decl, ir.VarDecl)
        if decl.init is not None:
            pre.append(ir.Assign(ir.Var(decl.name, type=decl.type, loc=decl.loc), decl.init,
                                 loc=decl.loc))
        ctx.prelude.extend(pre)
        return ir.VarDecl(decl.name, decl.type, loc=decl.loc)

    def var_decl(self, d: Tree, scope: Scope, ctx: BlockCtx) -> ir.VarDecl:
        _annos, tref, name, init = d.children
        t = self.parts.decls.resolve_type(tref, scope)
        if isinstance(t, ir.ExternType | TypeVar | BlockTypeRef | ir.VoidType):
            raise self.err(tref, f"variables cannot have type {t}")
        if isinstance(t, ir.InfIntType):
            raise self.err(tref, "variables of type int need a width (int<W>)")
        n = name_text(name)
        if n in scope.names:
            raise self.err(name, f"redeclaration of '{n}'")
        ie = None
        if init is not None:
            ie = self.parts.exprs.expr_as(init, scope, ctx, t, f"initializer of '{n}'")
        irn = ctx.fresh(n)
        scope.names[n] = VarB(irn, t, True, "variable")
        return ir.VarDecl(irn, t, ie, loc=self.loc(name))

    def decl_control_impl(self, d: Tree) -> None:
        ttree, ctor = d.children[0], d.children[1]
        if has_ctor_params(ctor):
            self.parts.parsers.template_block("control", d)
            return
        # action parameter names of this control (and of the sub-controls it instantiates,
        # which are inlined into it) keep their names: reserve them first
        reserved = self.parts.subs.action_param_names(d)
        name, annos, scope, ctx, plist = self.parts.parsers.block_prelude("control", ttree, None,
                                                                          reserved)
        self.env.declare(self.env.globals, name,
                         self.control_body(d, name, annos, scope, ctx, plist), ttree.children[1])

    def control_body(self, d: Tree, name: str, annos: dict[str, str], scope: Scope, ctx: BlockCtx,
                     plist: list[ir.Param]) -> BlockB:
        """A control's locals and apply block once its parameters are bound (by a plain
        declaration, or by a specialisation with constructor arguments): registered as
        ``name``."""
        ctx.deparser = bool(plist) and isinstance(plist[0].type, ir.ExternType) and \
            plist[0].type.name == "packet_out"
        for item in d.children[2:-1]:
            if isinstance(item, Tree):
                self.block_local(item, scope, ctx)
        body = self.parts.stmts.block(d.children[-1], Scope(scope), ctx)
        if ctx.prelude:
            body = replace(body, stmts=[*ctx.prelude, *body.stmts])
        control = ir.Control(name, plist, ctx.locals, ctx.instances, ctx.actions, ctx.tables,
                             body, annos)
        self.env.controls[name] = control
        return BlockB("control", control, [p.type for p in plist], d)


def _same_action(a: ir.Action, b: ir.Action) -> bool:
    """Whether two actions with the same control-plane name are one action: the same
    parameters and body, and a body that refers only to its own parameters and locals (so that
    it means the same thing wherever it is declared)."""
    if a.params != b.params or a.body != b.body:
        return False
    own = {p.name for p in a.params}
    used: set[str] = set()

    def walk(node: object) -> None:
        if isinstance(node, ir.VarDecl):
            own.add(node.name)
        elif isinstance(node, ir.Var):
            used.add(node.name)
        if isinstance(node, list):
            for x in node:
                walk(x)
        elif is_dataclass(node) and not isinstance(node, type):
            for f in fields(node):
                walk(getattr(node, f.name))

    walk(a.body)
    return used <= own
