"""From a lark parse tree to the typed IR (``p4switch.ir``).

One pass in declaration order (P4 requires declare-before-use): resolve names, expand typedefs,
fold constants, infer literal widths, type-check, compute control-plane names, and build the IR
blocks. Every error is raised as a located ``P4CompileError``.

``Elaborator`` is composed of one mixin per concept: ``declarations`` (types, headers, structs,
enums, externs), ``parsers`` (states, transitions, keysets), ``statements``, ``calls``,
``expressions``, and the smaller ones (tables, entries, sub-blocks, functions, loops, ...);
this module keeps the program walk, annotations, actions, instantiations, the V1Switch package
and block-level variables.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields, is_dataclass, replace

from lark import Token, Tree

from p4switch import ir
from p4switch.frontend.arguments import Arguments
from p4switch.frontend.bindings import (  # noqa: F401 - re-exported for the mixin modules
    ActionB,
    ApplyResult,
    Args,
    BlockB,
    BlockCtx,
    ConstB,
    ExternB,
    FuncB,
    InstanceB,
    MethodRef,
    Named,
    PackageB,
    ParserCall,
    ProtoB,
    Scope,
    SubInstB,
    SubParam,
    TableB,
    TypeB,
    ValueSetB,
    VarB,
)
from p4switch.frontend.calls import Calls
from p4switch.frontend.compound import CompoundAssign
from p4switch.frontend.declarations import Declarations
from p4switch.frontend.direct_apply import DirectApply
from p4switch.frontend.entries import TableEntries
from p4switch.frontend.errors import P4CompileError, unsupported
from p4switch.frontend.expressions import Expressions
from p4switch.frontend.functions import Frame, Functions
from p4switch.frontend.loops import Loops
from p4switch.frontend.lowering import (  # noqa: F401 - re-exported
    has_return,
    lower_block,
    lower_returns,
    lower_stmt,
)
from p4switch.frontend.parsers import Parsers
from p4switch.frontend.preprocess import Preprocessed
from p4switch.frontend.statements import Statements
from p4switch.frontend.subblocks import SubBlocks
from p4switch.frontend.tables import BOUND_ACTION_ARGS, Tables  # noqa: F401 - re-exported
from p4switch.frontend.trees import (  # noqa: F401 - re-exported
    child_trees,
    core_type,
    expr_text,
    has_ctor_params,
    name_text,
    subtrees,
    type_text,
    unquote,
)
from p4switch.frontend.types import (
    BlockTypeRef,
    ExternDecl,
    PackageDecl,
    TypeVar,
    contains_typevar,
    substitute,
)
from p4switch.frontend.unions import HeaderUnions
from p4switch.frontend.varbit import Varbits, has_varbit

#: annotations whose text the front end, the pipeline or P4Info reads: p4switch takes them in
#: their unstructured form only (p4c also accepts ``@name["x"]``, ``@brief["b"]``, with effects
#: of its own), and says so rather than ignoring them
_UNSTRUCTURED_ONLY = {"name", "id", "priority", "brief", "description", "hidden",
                      "controller_header", "match", "defaultonly", "tableonly",
                      "max_group_size", "support_timeout", "field_list"}

V1SWITCH_ROLES = ir.V1SWITCH_ROLES



# --------------------------------------------------------------------------------------------
# scopes and bindings
# --------------------------------------------------------------------------------------------


# Intermediate results of member/call resolution that are not values.

# --------------------------------------------------------------------------------------------
# helpers on parse trees
# --------------------------------------------------------------------------------------------


class Elaborator(Declarations, Parsers, Statements, Calls, Expressions, SubBlocks, Tables,
                 TableEntries, CompoundAssign, Functions, Loops, Arguments, DirectApply,
                 HeaderUnions, Varbits):
    """The one pass. Statements and expressions whose rule has a ``stmt_<rule>`` method
    (defined here or in a per-concept mixin module) dispatch to it."""

    def __init__(self, pp: Preprocessed):
        self.pp = pp
        self.globals = Scope()
        self.types: dict[str, ir.Type] = {}
        self.errors: list[str] = []
        self.match_kinds: list[str] = []
        self.actions: dict[str, ir.Action] = {}
        self.parsers: dict[str, ir.Parser] = {}
        self.controls: dict[str, ir.Control] = {}
        self.instances: dict[str, ir.ExternInstance] = {}
        self.controller_headers: dict[str, ir.HeaderType] = {}
        self.digests: list[ir.StructType] = []
        self.package: dict[str, str] = {}
        self.reserved: set[str] = set()  # top-level action param/local names
        self.top = BlockCtx("toplevel", "", set())
        self.main_seen = False
        self.decl_locs: dict[tuple[int, str], ir.SourceLoc] = {}
        self.sub_used: set[str] = set()  # parser/control types instantiated inside a block
        # statements that must run before the statement being elaborated (inlined function
        # calls inside its expressions); None outside statements
        self.hoisted: list[ir.Stmt] | None = None
        self.effects = 0  # ordering.Effects made so far (function calls inside expressions)
        self.new_types: dict[str, ir.Type] = {}
        self.frames: list[Frame] = []  # functions whose bodies are being elaborated
        self.action_defaults: dict[str, dict[str, ir.Const]] = {}  # action key -> defaults

    # ---------------------------------------------------------------- errors / locations
    def loc(self, node: object) -> ir.SourceLoc | None:
        if isinstance(node, Token):
            if node.line is None:
                return None
            return self.pp.locate(node.line, node.column)
        if isinstance(node, Tree):
            meta = node.meta
            if getattr(meta, "empty", True):
                for c in node.children:
                    loc = self.loc(c)
                    if loc is not None:
                        return loc
                return None
            return self.pp.locate(meta.line, meta.column)
        return None

    def err(self, node: object, message: str) -> P4CompileError:
        loc = self.loc(node)
        if loc is None:
            return P4CompileError(None, message)
        return self.pp.error(loc, message)

    # ---------------------------------------------------------------- program
    def program(self, tree: Tree) -> ir.Program:
        for decl in tree.children:
            if isinstance(decl, Tree):
                self.declaration(decl)
        for bname in self.sub_used - set(self.package.values()):
            # a type used only as a sub-block exists only inlined into its users (as in p4c,
            # its standalone tables and actions are not part of the program)
            control = self.controls.pop(bname, None)
            if control is not None:
                for key in control.actions:
                    self.actions.pop(key, None)
            self.parsers.pop(bname, None)
        if not self.main_seen:
            end = ir.SourceLoc(self.pp.main_file, max(1, len(self.pp.sources.get(
                self.pp.main_file, "").splitlines())), 1)
            raise self.pp.error(end, "program has no package instantiation (V1Switch(...) main;)")
        return ir.Program(
            types=self.types,
            errors=self.errors,
            match_kinds=self.match_kinds,
            actions=self.actions,
            parsers=self.parsers,
            controls=self.controls,
            package=self.package,
            instances=self.instances,
            controller_headers=self.controller_headers,
            digests=self.digests,
            main_file=self.pp.main_file,
            sources=dict(self.pp.sources),
            new_types=self.new_types,
        )

    def declare(self, scope: Scope, name: str, binding: object, node: object) -> None:
        if name in scope.names:
            old = scope.names[name]
            if isinstance(old, FuncB) and isinstance(binding, FuncB):
                old.sigs.extend(binding.sigs)
                return
            where = self.decl_locs.get((id(scope), name))
            msg = f"redeclaration of '{name}'"
            if where is not None:
                msg += f" (first declared at {where})"
                if "/p4switch/include/" in where.file:
                    msg += "; p4c rejects this too: choose another name"
            raise self.err(node, msg)
        scope.names[name] = binding
        loc = self.loc(node)
        if loc is not None:
            self.decl_locs[(id(scope), name)] = loc

    def declaration(self, d: Tree) -> None:
        handler = getattr(self, "decl_" + d.data, None)
        if handler is None:  # pragma: no cover - grammar and handlers go together
            raise self.err(d, f"unexpected declaration {d.data}")
        handler(d)

    # ---------------------------------------------------------------- annotations
    def annotations(self, t: Tree | None, scope: Scope | None = None) -> dict[str, str]:
        """The annotations of one object, by name; ``scope`` resolves the constants of its
        structured annotations (the object's block; the globals by default)."""
        out: dict[str, str] = {}
        if t is None:
            return out
        for a in t.children:
            name = name_text(a.children[0])
            body = a.children[1] if len(a.children) > 1 else None
            prev = out.get(name)
            structured = a.data == "structured_annotation"
            if prev is not None and (structured or isinstance(prev, ir.StructuredAnnotation)):
                raise self.err(a, f"duplicate name for structured annotation @{name}")
            if structured:
                if name in _UNSTRUCTURED_ONLY:
                    raise self.err(a, f"p4switch reads @{name} in its unstructured form only: "
                                      f"write @{name}(...)")
                out[name] = self.structured_body(body, scope or self.globals)
                continue
            text = self.anno_body_text(body) if body is not None else ""
            if prev is not None:  # @a(1) @a(2): the last is read, P4Info lists both
                earlier = (*getattr(prev, "earlier", ()), getattr(prev, "source", ""))
                text = ir.AnnotationText(str(text), getattr(text, "source", ""), earlier)
            out[name] = text
        return out

    def anno_body_text(self, body: Token) -> ir.AnnotationText:
        """The body's value as the front end reads it (comma-separated items, strings unquoted:
        ``@name("x")`` -> ``x``, ``@a(k = "v", - 2)`` -> ``k=v, -2``) carrying its tokens as
        p4c prints them (spaced) for P4Info."""
        toks: list[Token] = getattr(body, "tokens", [])
        items: list[str] = []
        cur: list[str] = []
        depth = 0
        for tok in toks:
            is_str = tok.type == "STRING_LITERAL"
            if not is_str and tok.value == "," and depth == 0:
                items.append("".join(cur))
                cur = []
                continue
            if not is_str and tok.value == "(":
                depth += 1
            elif not is_str and tok.value == ")":
                depth -= 1
            cur.append(unquote(tok.value) if is_str else tok.value)
        if toks:
            items.append("".join(cur))
        return ir.AnnotationText(", ".join(items), " ".join(tok.value for tok in toks))

    def structured_body(self, body: Tree | None, scope: Scope) -> ir.StructuredAnnotation:
        """Spec 18.1.2: expressions or key-value pairs whose values are compile-time-known
        ints, strings or bools (folded: ``1 + 2`` is 3), keys unique -- as p4c checks them."""
        if body is None:
            return ir.StructuredAnnotation("expressions", ())
        items: list[tuple[str | None, int | str | bool]] = []
        if body.data == "kv_list":
            seen: set[str] = set()
            for kv in subtrees(body):
                key = name_text(kv.children[0])
                if key in seen:
                    raise self.err(kv.children[0], f"duplicate key '{key}' in a structured "
                                                   "annotation")
                seen.add(key)
                items.append((key, self.annotation_value(kv.children[1], scope)))
            return ir.StructuredAnnotation("kv", tuple(items))
        for e in subtrees(body.children[0]):
            items.append((None, self.annotation_value(e, scope)))
        return ir.StructuredAnnotation("expressions", tuple(items))

    def annotation_value(self, t: Tree | Token, scope: Scope) -> int | str | bool:
        e = self.expr(t, scope, BlockCtx("toplevel", "", set()))
        if isinstance(e, ir.Const) and isinstance(e.type, ir.InfIntType | ir.BoolType
                                                  | ir.StringType):
            return e.value
        raise self.err(t, f"'{expr_text(t)}' is not a compile-time-known int, string or bool "
                          "(a structured annotation's values must be)")

    def cp_name(self, ctx: BlockCtx, local: str, annos: dict[str, str]) -> str:
        name = annos.get("name")
        if name:
            if name.startswith("."):
                return name[1:]
            local = name
        return f"{ctx.prefix}.{local}" if ctx.prefix else local

    # ---------------------------------------------------------------- params
    def block_params(self, params: Tree | None, scope: Scope, ctx: BlockCtx,
                     kind: str, defaults: dict[str, ir.Const] | None = None) -> list[ir.Param]:
        """The parameters; ``defaults`` (actions) receives the default values."""
        out: list[ir.Param] = []
        if params is None:
            return out
        for p in params.children:
            annos, direction, tref, pname, default = p.children
            if default is not None and defaults is None:
                raise self.err(default, unsupported("default parameter value"))
            d = str(direction.children[0]) if direction is not None else ""
            t = self.resolve_type(tref, scope)
            if default is not None:
                if d in ("out", "inout"):
                    raise self.err(default, f"an {d} parameter cannot have a default value")
                defaults[name_text(pname)] = self.param_default(default, t, scope, ctx, name_text(pname))
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
            self.declare(scope, n, VarB(irn, t, writable, what), pname)
            out.append(ir.Param(irn, d, t, self.annotations(annos, scope),
                                self.newtype_of(tref, scope)))
        return out

    # ---------------------------------------------------------------- actions
    def decl_action_decl(self, d: Tree, scope: Scope | None = None,
                         ctx: BlockCtx | None = None) -> None:
        toplevel = ctx is None
        scope = scope or self.globals
        ctx = ctx or BlockCtx("toplevel", "", set(self.reserved))
        annos_t, name, params, body = d.children
        annos = self.annotations(annos_t, scope)
        n = name_text(name)
        cp = self.cp_name(ctx if not toplevel else self.top, n, annos)
        key = cp
        i = 1
        while key in self.actions:
            key = f"{cp}_{i}"
            i += 1
        ascope = Scope(scope)
        saved_in_action = ctx.in_action
        ctx.in_action = True
        defaults: dict[str, ir.Const] = {}
        plist = self.block_params(params, ascope, ctx, "action", defaults)
        self.action_defaults[key] = defaults
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
            self.reserved.update(p.name for p in plist)
            ctx.used.update(p.name for p in plist)
        action = ir.Action(key, cp, plist, ir.Block([]), annos, loc=self.loc(name))
        # declare before the body so that (illegal) recursion is reported as such
        self.declare(scope, n, ActionB(key), name)
        self.actions[key] = action
        action.body = self.block(body, ascope, ctx)
        ctx.in_action = saved_in_action
        if toplevel:
            self.reserved.update(ctx.used)
        if key != cp and _same_action(self.actions[cp], action):
            # `@name(".NoAction") action NoAction_1() {}` (what p4c's own output and many
            # programs contain) is the same action as NoAction: one action, one P4Info entry;
            # references to the new name resolve to the existing one
            del self.actions[key]
            scope.names[n] = ActionB(cp)
            return
        if not toplevel:
            ctx.actions.append(key)

    # ---------------------------------------------------------------- instantiations
    def decl_instantiation(self, d: Tree, scope: Scope | None = None,
                           ctx: BlockCtx | None = None) -> None:
        scope = scope or self.globals
        ctx = ctx or self.top
        annos_t, tref, args, name, *rest = d.children
        if any(r is not None for r in rest):
            raise self.err(d, unsupported("extern instances with abstract method "
                                          "implementations"))
        annos = self.annotations(annos_t, scope)
        t = self.resolve_type(tref, scope)
        if isinstance(t, BlockTypeRef):
            b = scope.lookup(t.name)
            if isinstance(b, PackageB):
                if ctx is not self.top:
                    raise self.err(d, "a package can only be instantiated at top level")
                self.package_instance(d, b.decl, args, name)
                return
            if ctx is self.top:
                raise self.err(tref, unsupported("top-level parser or control instances"))
            if not isinstance(b, BlockB):
                raise self.err(tref, f"'{t.name}' is a {b.proto.kind} type without an "
                                     "implementation and cannot be instantiated"
                               if isinstance(b, ProtoB) else f"cannot instantiate '{t.name}'")
            self.sub_instance(d, b, t, args, name, scope, ctx, annos)
            return
        if not isinstance(t, ir.ExternType):
            raise self.err(tref, f"cannot instantiate type {t}")
        inst = self.make_instance(t, args, d, scope, ctx, name_text(name), annos, name)
        self.declare(scope, name_text(name), InstanceB(inst, self.extern_decl(t.name), t), name)
        if ctx is self.top:
            self.instances[inst.name] = inst
        else:
            ctx.instances[inst.name] = inst

    def extern_decl(self, name: str) -> ExternDecl:
        b = self.globals.lookup(name)
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
        raw = self.arg_list(args)
        ctors = [c for c in decl.ctors if raw.fits([p.name for p in c.params])]
        if not ctors and any(raw.names):
            same = [c for c in decl.ctors if len(c.params) == len(raw)]
            if same:
                self.bind(raw, [p.name for p in same[0].params], f"constructor of {t.name}")
        if not ctors:
            counts = sorted({len(c.params) for c in decl.ctors})
            raise self.err(node, f"constructor of {t.name} expects "
                                 f"{' or '.join(map(str, counts))} arguments, got {len(raw)}")
        ctor = ctors[0]
        arg_trees = self.bind(raw, [p.name for p in ctor.params], f"constructor of {t.name}")
        binding = dict(zip(decl.type_params, t.type_args, strict=False))
        vals: list[ir.Expr] = []
        for p, a in zip(ctor.params, arg_trees, strict=True):
            pt = substitute(p.type, binding)
            e = self.expr(a, scope, ctx)
            if isinstance(e, ir.Const) and isinstance(e.type, ir.EnumType) and \
                    e.type.underlying is not None and e.type.underlying == pt:
                # a serializable enum member converts to its underlying type (as p4c does)
                e = ir.Const(e.value, type=pt, loc=e.loc)
            e = self.coerce(e, pt, a, f"argument '{p.name}' of {t.name}")
            if not isinstance(e, ir.Const):
                raise self.err(a, f"constructor argument '{p.name}' of {t.name} must be a "
                                  "compile-time constant")
            vals.append(e)
        ir_name = local if ctx is self.top else ctx.local_prefix + local
        return ir.ExternInstance(ir_name, self.cp_name(ctx, local, annos), t.name, t.type_args,
                                 vals, annos, loc=self.loc(name_node))

    def arg_list(self, args: Tree | None) -> Args:
        """The argument expressions in source order, with their names if they are named
        (``f(x = 1, y = 2)``); ``bind`` puts them in parameter order."""
        out = Args()
        if args is None:
            return out
        for a in args.children:
            if a.data == "dontcare_arg":  # the calls that accept it check it (arguments.py)
                out.append(a)
                out.names.append(None)
                out.nodes.append(a)
            elif a.data == "named_arg":
                out.append(a.children[1])
                out.names.append(name_text(a.children[0]))
                out.nodes.append(a)
            else:
                out.append(a.children[0])
                out.names.append(None)
                out.nodes.append(a)
        if any(out.names) and not all(out.names):
            bad = next(n for n, nm in zip(out.nodes, out.names, strict=True) if nm is None)
            raise self.err(bad, "arguments must be all named or all positional")
        return out

    def bind(self, args: Args, params: list[str], what: str) -> list[Tree]:
        """Arguments in the order of ``params`` (named arguments are matched by name)."""
        if not any(args.names):
            return list(args)
        by_name: dict[str, Tree] = {}
        for name, e, node in zip(args.names, args, args.nodes, strict=True):
            if name not in params:
                raise self.err(node, f"{what} has no parameter named '{name}'")
            if name in by_name:
                raise self.err(node, f"argument '{name}' of {what} given twice")
            by_name[name] = e
        missing = [p for p in params if p not in by_name]
        if missing:
            raise self.err(args.nodes[0], f"{what}: no argument for parameter '{missing[0]}'")
        return [by_name[p] for p in params]

    def package_instance(self, d: Tree, decl: PackageDecl, args: Tree | None,
                         name: object) -> None:
        if decl.name != "V1Switch":
            raise self.err(d, unsupported(f"package '{decl.name}' (only V1Switch of v1model)"))
        if self.main_seen:
            raise self.err(d, "only one package instantiation is allowed")
        if name_text(name) != "main":
            raise self.err(name, "the package instance must be called 'main'")
        raw = self.arg_list(args)
        if len(raw) != len(decl.params):
            raise self.err(d, f"V1Switch expects {len(decl.params)} blocks, got {len(raw)}")
        arg_trees = self.bind(raw, [p.name for p in decl.params], "V1Switch")
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
            b = self.globals.lookup(bname)
            if not isinstance(b, BlockB):
                raise self.err(a, f"'{bname}' is not a parser or control implementation")
            if b.block is None:
                b = self.specialize_block(b, bname, cargs, a)  # Top(Leaf(), 3) -> Top_0
                bname = b.block.name
            elif cargs is not None:
                raise self.err(cargs, f"{b.kind} '{bname}' has no constructor parameters")
            assert isinstance(p.type, BlockTypeRef)
            proto_b = self.globals.lookup(p.type.name)
            assert isinstance(proto_b, ProtoB)
            proto = proto_b.proto
            if proto.kind != b.kind:
                raise self.err(a, f"argument '{p.name}' of V1Switch must be a {proto.kind}, "
                                  f"but '{bname}' is a {b.kind}")
            if len(proto.params) != len(b.block.params):
                raise self.err(a, f"{b.kind} '{bname}' has {len(b.block.params)} parameters, "
                                  f"but {proto.name} needs {len(proto.params)}")
            # proto type params are positional aliases of the package's (H, M)
            pkg_args = {tp: pa for tp, pa in zip(proto.type_params, p.type.args, strict=False)}
            for pp_, bp, bt in zip(proto.params, b.block.params, b.param_types, strict=True):
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
            self.package[role] = bname
        self.main_seen = True

    # ---------------------------------------------------------------- block locals
    def block_local(self, item: Tree, scope: Scope, ctx: BlockCtx) -> None:
        if item.data == "const_decl":
            self.decl_const_decl(item, scope, ctx)
        elif item.data == "var_decl":
            ctx.locals.append(self.block_var(item, scope, ctx))
        elif item.data == "instantiation":
            self.decl_instantiation(item, scope, ctx)
        elif item.data == "value_set_decl":
            annos_t, targs, size_t, name = item.children
            annos = self.annotations(annos_t, scope)
            types = [self.resolve_type_arg(a, scope, {}) for a in subtrees(targs)]
            if len(types) != 1:
                raise self.err(targs, "value_set takes one type argument")
            size = self.const_int(size_t, scope, "value_set size")
            vt = types[0]
            if not (isinstance(vt, ir.BitsType) or isinstance(vt, ir.StructType) and not vt.union
                    and vt.fields and all(isinstance(f.type, ir.BitsType) for f in vt.fields)):
                raise self.err(targs, unsupported(f"value_set of type {vt} (use bit<W> or a "
                                                  "struct of bit<W> fields)"))
            n = name_text(name)
            vs = ir.ValueSet(ctx.local_prefix + n, self.cp_name(ctx, n, annos), vt, size, annos)
            ctx.value_sets[vs.name] = vs
            self.declare(scope, n, ValueSetB(vs), name)
        elif item.data == "action_decl":
            self.decl_action_decl(item, scope, ctx)
        elif item.data == "table_decl":
            self.table_decl(item, scope, ctx)
        else:  # pragma: no cover
            raise self.err(item, f"unexpected {item.data}")

    def in_statement(self, build: Callable[[], object]) -> tuple[object, list[ir.Stmt], bool]:
        """Run ``build`` as one statement's elaboration: its result, the statements it
        hoisted (fresh variables for ``_``), and whether it made ordering.Effects."""
        saved, self.hoisted = self.hoisted, []
        effects = self.effects
        try:
            r = build()
            return r, self.hoisted, self.effects != effects
        finally:
            self.hoisted = saved

    def block_var(self, d: Tree, scope: Scope, ctx: BlockCtx) -> ir.VarDecl:
        """A parser/control-level variable. Its initializer may call functions: then it, and
        every initialised variable declared after it, is initialised by statements at the
        start of the block's body (``ctx.prelude``), in declaration order."""
        vd, hoisted, effects = self.in_statement(lambda: self.var_decl(d, scope, ctx))
        if not effects and not hoisted and not ctx.prelude:
            return vd
        pre = [*hoisted, *self.evaluation_order(ctx).stmt(vd)]
        decl = pre.pop()
        assert isinstance(decl, ir.VarDecl)
        if decl.init is not None:
            pre.append(ir.Assign(ir.Var(decl.name, type=decl.type, loc=decl.loc), decl.init,
                                 loc=decl.loc))
        ctx.prelude.extend(pre)
        return ir.VarDecl(decl.name, decl.type, loc=decl.loc)

    def var_decl(self, d: Tree, scope: Scope, ctx: BlockCtx) -> ir.VarDecl:
        _annos, tref, name, init = d.children
        t = self.resolve_type(tref, scope)
        if isinstance(t, ir.ExternType | TypeVar | BlockTypeRef | ir.VoidType):
            raise self.err(tref, f"variables cannot have type {t}")
        if isinstance(t, ir.InfIntType):
            raise self.err(tref, "variables of type int need a width (int<W>)")
        n = name_text(name)
        if n in scope.names:
            raise self.err(name, f"redeclaration of '{n}'")
        ie = None
        if init is not None:
            ie = self.coerce(self.expr(init, scope, ctx), t, init, f"initializer of '{n}'")
        irn = ctx.fresh(n)
        scope.names[n] = VarB(irn, t, True, "variable")
        return ir.VarDecl(irn, t, ie, loc=self.loc(name))

    # ---------------------------------------------------------------- controls
    def decl_control_impl(self, d: Tree) -> None:
        ttree, ctor = d.children[0], d.children[1]
        if has_ctor_params(ctor):
            self.template_block("control", d)
            return
        # action parameter names of this control (and of the sub-controls it instantiates,
        # which are inlined into it) keep their names: reserve them first
        reserved = self.action_param_names(d)
        name, annos, scope, ctx, plist = self.block_prelude("control", ttree, None, reserved)
        self.declare(self.globals, name, self.control_body(d, name, annos, scope, ctx, plist),
                     ttree.children[1])

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
        body = self.block(d.children[-1], Scope(scope), ctx)
        if ctx.prelude:
            body = replace(body, stmts=[*ctx.prelude, *body.stmts])
        control = ir.Control(name, plist, ctx.locals, ctx.instances, ctx.actions, ctx.tables,
                             body, annos)
        self.controls[name] = control
        return BlockB("control", control, [p.type for p in plist], d)


    # ---------------------------------------------------------------- sub-blocks (inlined)

    # ---------------------------------------------------------------- tables

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


