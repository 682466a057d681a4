"""From a lark parse tree to the typed IR (``p4switch.ir``).

One pass in declaration order (P4 requires declare-before-use): resolve names, expand typedefs,
fold constants, infer literal widths, type-check, compute control-plane names, and build the IR
blocks. Every error is raised as a located ``P4CompileError``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields, is_dataclass, replace

from lark import Token, Tree

from p4switch import ir
from p4switch.frontend.arguments import Arguments, is_dontcare
from p4switch.frontend.bindings import (  # noqa: F401 - re-exported for the mixin modules
    ActionB,
    Args,
    BlockB,
    BlockCtx,
    ConstB,
    ExternB,
    FuncB,
    InstanceB,
    PackageB,
    ProtoB,
    Scope,
    SubInstB,
    SubParam,
    TableB,
    TypeB,
    ValueSetB,
    VarB,
    _ApplyResult,
    _MethodRef,
    _Named,
    _ParserCall,
)
from p4switch.frontend.compound import CompoundAssign
from p4switch.frontend.direct_apply import DirectApply
from p4switch.frontend.entries import TableEntries
from p4switch.frontend.errors import P4CompileError, unsupported
from p4switch.frontend.functions import FunctionB, Functions, _Frame
from p4switch.frontend.loops import Loops
from p4switch.frontend.lowering import (  # noqa: F401 - re-exported
    _has_return,
    _lower_block,
    _lower_returns,
    _lower_stmt,
)
from p4switch.frontend.ordering import EvaluationOrder
from p4switch.frontend.preprocess import Preprocessed
from p4switch.frontend.subblocks import SubBlocks
from p4switch.frontend.tables import BOUND_ACTION_ARGS, Tables  # noqa: F401 - re-exported
from p4switch.frontend.trees import (  # noqa: F401 - re-exported
    _core,
    _has_ctor_params,
    _kids,
    _name,
    _trees,
    _type_text,
    _unquote,
    expr_text,
)
from p4switch.frontend.types import (
    BlockProto,
    BlockTypeRef,
    ExternDecl,
    FuncSig,
    PackageDecl,
    SigParam,
    TypeVar,
    bits_range,
    contains_typevar,
    is_bits,
    is_int_like,
    parse_int_literal,
    substitute,
    to_unsigned,
    wrap,
)
from p4switch.frontend.unions import HeaderUnions
from p4switch.frontend.varbit import SIZE_METHODS, Varbits, has_varbit


def _header_field_type(t: object) -> bool:
    """What a header field may be (spec 7.2.2): bit/int/bool, a serializable enum, or a
    struct of those (recursively)."""
    if isinstance(t, ir.StructType):
        return not t.union and all(_header_field_type(f.type) for f in t.fields)
    return isinstance(t, ir.BitsType | ir.BoolType) or (
        isinstance(t, ir.EnumType) and t.underlying is not None)


#: annotations whose text the front end, the pipeline or P4Info reads: p4switch takes them in
#: their unstructured form only (p4c also accepts ``@name["x"]``, ``@brief["b"]``, with effects
#: of its own), and says so rather than ignoring them
_UNSTRUCTURED_ONLY = {"name", "id", "priority", "brief", "description", "hidden",
                      "controller_header", "match", "defaultonly", "tableonly",
                      "max_group_size", "support_timeout", "field_list"}

V1SWITCH_ROLES = ir.V1SWITCH_ROLES

_BOOL = ir.BoolType()
_INFINT = ir.InfIntType()
_BIT32 = ir.BitsType(32)
_ARITH_OPS = {"+", "-", "*", "/", "%", "|+|", "|-|", "&", "|", "^"}
_CMP_OPS = {"==", "!=", "<", "<=", ">", ">="}


# --------------------------------------------------------------------------------------------
# scopes and bindings
# --------------------------------------------------------------------------------------------


# Intermediate results of member/call resolution that are not values.

# --------------------------------------------------------------------------------------------
# helpers on parse trees
# --------------------------------------------------------------------------------------------


class Elaborator(SubBlocks, Tables, TableEntries, CompoundAssign, Functions, Loops, Arguments,
                 DirectApply, HeaderUnions, Varbits):
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
        self.frames: list[_Frame] = []  # functions whose bodies are being elaborated
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
            name = _name(a.children[0])
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
            cur.append(_unquote(tok.value) if is_str else tok.value)
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
            for kv in _trees(body):
                key = _name(kv.children[0])
                if key in seen:
                    raise self.err(kv.children[0], f"duplicate key '{key}' in a structured "
                                                   "annotation")
                seen.add(key)
                items.append((key, self.annotation_value(kv.children[1], scope)))
            return ir.StructuredAnnotation("kv", tuple(items))
        for e in _trees(body.children[0]):
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

    # ---------------------------------------------------------------- types
    def resolve_type(self, t: Tree, scope: Scope, tparams: dict[str, TypeVar] | None = None):
        tparams = tparams or {}
        if t.data == "type_ref":
            return self.resolve_type(t.children[0], scope, tparams)
        if t.data == "bool_type":
            return _BOOL
        if t.data == "error_type":
            return ir.ErrorType()
        if t.data == "string_type":
            return ir.StringType()
        if t.data == "bit1_type":
            return ir.BitsType(1)
        if t.data == "infint_type":
            return _INFINT
        if t.data == "void_type":
            return ir.VoidType()
        if t.data in ("bit_type", "int_type"):
            w = self.width(t.children[0], scope)
            if w <= 0 and t.data == "bit_type" and w < 0:
                raise self.err(t, "width must be positive")
            if t.data == "int_type" and w < 1:
                raise self.err(t, "int<W> needs a width of at least 1")
            return ir.BitsType(w, t.data == "int_type")
        if t.data == "varbit_type":
            return self.varbit_type(t, scope)
        if t.data == "dontcare_type":
            raise self.err(t, unsupported("'_' as a type argument"))
        if t.data == "list_type":  # only as a for statement's collection (loops.py)
            raise self.err(t, unsupported("list<T> outside the collection of a for statement"))
        if t.data == "tuple_type":
            return ir.TupleType(tuple(self.resolve_type_arg(a, scope, tparams)
                                      for a in _trees(t.children[0])))
        if t.data == "stack_type":
            elem = self.resolve_type(t.children[0], scope, tparams)
            size = self.const_int(t.children[1], scope, "header stack size")
            if not isinstance(elem, ir.HeaderType) and not (
                    isinstance(elem, ir.StructType) and elem.union):
                raise self.err(t, f"header stack elements must be headers or header unions, "
                                  f"not {elem}")
            if size <= 0:
                raise self.err(t.children[1], "header stack size must be positive")
            return ir.StackType(elem, size)
        if t.data == "named_type":
            tok = t.children[0]
            name = str(tok)
            args_tree = t.children[1]
            args = (
                tuple(self.resolve_type_arg(a, scope, tparams) for a in _trees(args_tree))
                if args_tree is not None
                else ()
            )
            if name in tparams:
                return tparams[name]
            b = scope.lookup(name)
            if isinstance(b, TypeB):
                if args:
                    raise self.err(t, unsupported(f"generic type '{name}'"))
                return b.type
            if isinstance(b, ExternB):
                decl = b.decl
                if len(args) != len(decl.type_params):
                    if not args and decl.type_params:
                        return ir.ExternType(name, tuple(TypeVar(p) for p in decl.type_params))
                    raise self.err(t, f"extern {name} expects {len(decl.type_params)} type "
                                      f"arguments, got {len(args)}")
                return ir.ExternType(name, args)
            if isinstance(b, ProtoB | BlockB):
                return BlockTypeRef(name, args)
            if isinstance(b, PackageB):
                return BlockTypeRef(name, args)
            raise self.err(tok, f"unknown type '{name}'")
        raise self.err(t, f"unexpected type syntax {t.data}")  # pragma: no cover

    def newtype_of(self, t: Tree, scope: Scope) -> str:
        """The newtype a type reference names (directly or through typedefs), else ""."""
        while t.data == "type_ref":
            t = t.children[0]
        if t.data != "named_type" or t.children[1] is not None:
            return ""
        b = scope.lookup(str(t.children[0]))
        return b.newtype if isinstance(b, TypeB) else ""

    def resolve_type_arg(self, a: Tree, scope: Scope, tparams: dict[str, TypeVar]):
        if a.data == "type_arg":
            return self.resolve_type(a.children[0], scope, tparams)
        return self.resolve_type(a, scope, tparams)

    def width(self, w: Tree, scope: Scope) -> int:
        c = w.children[0]
        if isinstance(c, Token) and c.type == "INTEGER":
            value, _ = parse_int_literal(str(c))
            return value
        if isinstance(c, Token):
            b = scope.lookup(str(c))
            if isinstance(b, ConstB) and isinstance(b.value.value, int):
                return int(b.value.value)
            raise self.err(c, f"width '{c}' is not a compile-time constant")
        return self.const_int(c, scope, "width")

    def const_int(self, t: Tree, scope: Scope, what: str) -> int:
        e = self.expr(t, scope, BlockCtx("toplevel", "", set()))
        if not isinstance(e, ir.Const) or not isinstance(e.value, int) or isinstance(
            e.value, bool
        ):
            raise self.err(t, f"{what} must be a compile-time integer constant")
        return int(e.value)

    def type_params(self, t: Tree | None) -> list[str]:
        if t is None:
            return []
        out = []
        for a in _trees(t):
            inner = _core(a.children[0] if a.data == "type_arg" else a)
            if inner.data != "named_type" or inner.children[1] is not None:
                raise self.err(a, "type parameters must be plain names")
            out.append(str(inner.children[0]))
        return out

    # ---------------------------------------------------------------- simple declarations
    def decl_const_decl(self, d: Tree, scope: Scope | None = None,
                        ctx: BlockCtx | None = None) -> None:
        scope = scope or self.globals
        ctx = ctx or self.top
        _annos, tref, name, value = d.children
        t = self.resolve_type(tref, scope)
        e = self.coerce(self.expr(value, scope, ctx), t, value, "constant initializer")
        if not isinstance(e, ir.Const):
            raise self.err(value, f"initializer of constant '{_name(name)}' is not a "
                                  "compile-time constant")
        self.declare(scope, _name(name), ConstB(e), name)

    def decl_typedef_decl(self, d: Tree) -> None:
        _annos, kw, tref, name = d.children
        t = self.resolve_type(tref, self.globals)
        if isinstance(t, TypeVar | BlockTypeRef):
            raise self.err(tref, "typedef of this type is not supported")
        # a newtype stands for its type here; its name is kept for P4Info (type_name)
        newtype = _name(name) if str(kw) == "type" else self.newtype_of(tref, self.globals)
        if str(kw) == "type":
            self.new_types[newtype] = t
        self.declare(self.globals, _name(name), TypeB(t, newtype), name)
        if not isinstance(t, ir.ExternType):
            self.types[_name(name)] = t

    def fields(self, d: Tree, scope: Scope, header: bool) -> tuple[ir.Field, ...]:
        out = []
        seen = set()
        for f in _kids(d, "struct_field"):
            annos, tref, fname = f.children
            t = self.resolve_type(tref, scope)
            n = _name(fname)
            if n in seen:
                raise self.err(fname, f"duplicate field '{n}'")
            seen.add(n)
            if header and not (_header_field_type(t) or isinstance(t, ir.VarbitType)):
                raise self.err(tref, f"header field '{n}' must be bit<W>, int<W>, bool, a "
                                     f"serializable enum or a struct of those, not {t}")
            if isinstance(t, TypeVar | BlockTypeRef | ir.ExternType | ir.VoidType):
                raise self.err(tref, f"field '{n}' cannot have type {t}")
            out.append(ir.Field(n, t, tuple(self.annotations(annos).items()),
                                self.newtype_of(tref, scope)))
        return tuple(out)

    def decl_header_decl(self, d: Tree) -> None:
        annos, name, targs = d.children[0], d.children[1], d.children[2]
        if targs is not None:
            raise self.err(targs, unsupported("generic header"))
        a = self.annotations(annos)
        h = ir.HeaderType(_name(name), self.fields(d, self.globals, True), tuple(a.items()))
        self.check_varbit_header(h, d)
        # p4c accepts headers of any width; BMv2 needs bytes, so the pipeline checks
        self.declare(self.globals, h.name, TypeB(h), name)
        self.types[h.name] = h
        if "controller_header" in a:
            self.controller_headers[a["controller_header"]] = h

    def decl_struct_decl(self, d: Tree) -> None:
        annos, name, targs = d.children[0], d.children[1], d.children[2]
        if targs is not None:
            raise self.err(targs, unsupported("generic struct"))
        a = self.annotations(annos)
        s = ir.StructType(_name(name), self.fields(d, self.globals, False), tuple(a.items()))
        self.declare(self.globals, s.name, TypeB(s), name)
        self.types[s.name] = s

    def decl_enum_decl(self, d: Tree) -> None:
        annos, tref, name = d.children[0], d.children[1], d.children[2]
        members = _kids(d, "enum_member")
        underlying = None
        if tref is not None:
            underlying = self.resolve_type(tref, self.globals)
            if not isinstance(underlying, ir.BitsType):
                raise self.err(tref, f"enum underlying type must be bit<W> or int<W>, "
                                     f"not {underlying}")
        values: list[tuple[str, int]] = []
        seen: set[str] = set()
        for i, m in enumerate(members):
            mname = _name(m.children[1])
            if mname in seen:
                raise self.err(m, f"duplicate enum member '{mname}'")
            seen.add(mname)
            init = m.children[2]
            if underlying is None:
                if init is not None:
                    raise self.err(init, "only enums with an underlying type (enum bit<W>) "
                                         "can give members values")
                values.append((mname, i))
            else:
                if init is None:
                    raise self.err(m, f"member '{mname}' of a serializable enum needs a value")
                c = self.coerce(self.expr(init, self.globals, self.top), underlying, init,
                                "enum member value")
                if not isinstance(c, ir.Const):
                    raise self.err(init, "enum member value must be a compile-time constant")
                values.append((mname, int(c.value)))
        e = ir.EnumType(_name(name), tuple(values), underlying)
        self.annotations(annos)
        self.declare(self.globals, e.name, TypeB(e), name)
        self.types[e.name] = e

    def decl_error_decl(self, d: Tree) -> None:
        self.declare_members(d, self.errors, "error")

    def decl_match_kind_decl(self, d: Tree) -> None:
        self.declare_members(d, self.match_kinds, "match_kind")

    def declare_members(self, d: Tree, names: list[str], kind: str) -> None:
        """Appends the members of an ``error``/``match_kind`` declaration to ``names`` (the
        spec merges all declarations of each into one set)."""
        for n in d.children:
            if n is None:
                continue
            name = _name(n)
            if name in names:
                raise self.err(n, f"{kind} '{name}' declared twice")
            names.append(name)

    # ---------------------------------------------------------------- externs
    def sig(self, proto: Tree, scope: Scope, outer: dict[str, TypeVar],
            annos: dict[str, str]) -> FuncSig:
        ret_tree, name, targs, params = proto.children
        tps = self.type_params(targs)
        tvars = dict(outer)
        tvars.update({p: TypeVar(p) for p in tps})
        ret = (
            ir.VoidType()
            if ret_tree.data == "void_type"
            else self.resolve_type(ret_tree.children[0], scope, tvars)
        )
        return FuncSig(_name(name), tps, self.sig_params(params, scope, tvars), ret, annos)

    def sig_params(self, params: Tree | None, scope: Scope,
                   tvars: dict[str, TypeVar]) -> list[SigParam]:
        out = []
        if params is None:
            return out
        for p in params.children:
            _annos, direction, tref, pname, default = p.children
            if default is not None:
                raise self.err(default, unsupported("default parameter value"))
            d = str(direction.children[0]) if direction is not None else ""
            out.append(SigParam(_name(pname), d, self.resolve_type(tref, scope, tvars)))
        return out

    def decl_extern_object(self, d: Tree) -> None:
        annos, tref = d.children[0], d.children[1]
        inner = _core(tref)
        if inner.data != "named_type":
            raise self.err(tref, "an extern object needs a type name")
        name = str(inner.children[0])
        tps = self.type_params(inner.children[1])
        tvars = {p: TypeVar(p) for p in tps}
        decl = ExternDecl(name, tps, [], {})
        self.declare(self.globals, name, ExternB(decl), inner.children[0])
        for m in d.children[2:]:
            if m.data == "constructor":
                cname = str(m.children[1])
                if cname != name:
                    raise self.err(m.children[1], f"constructor name '{cname}' must be the "
                                                  f"extern's name '{name}'")
                decl.ctors.append(FuncSig(name, [], self.sig_params(m.children[2], self.globals,
                                                                    tvars), ir.VoidType()))
            elif m.data == "abstract_method":
                raise self.err(m, unsupported("abstract method"))
            else:
                s = self.sig(m.children[1], self.globals, tvars, self.annotations(m.children[0]))
                decl.methods.setdefault(s.name, []).append(s)
        self.annotations(annos)

    def decl_extern_function(self, d: Tree) -> None:
        s = self.sig(d.children[1], self.globals, {}, self.annotations(d.children[0]))
        self.declare(self.globals, s.name, FuncB([s]), d.children[1])

    def decl_package_decl(self, d: Tree) -> None:
        _annos, name, targs, params = d.children
        tps = self.type_params(targs)
        tvars = {p: TypeVar(p) for p in tps}
        decl = PackageDecl(_name(name), tps, self.sig_params(params, self.globals, tvars))
        self.declare(self.globals, decl.name, PackageB(decl), name)

    def block_proto(self, kind: str, ttree: Tree) -> BlockProto:
        _annos, name, targs, params = ttree.children
        tps = self.type_params(targs)
        tvars = {p: TypeVar(p) for p in tps}
        return BlockProto(kind, _name(name), tps, self.sig_params(params, self.globals, tvars))

    def decl_parser_proto(self, d: Tree) -> None:
        p = self.block_proto("parser", d.children[0])
        self.declare(self.globals, p.name, ProtoB(p), d.children[0].children[1])

    def decl_control_proto(self, d: Tree) -> None:
        p = self.block_proto("control", d.children[0])
        self.declare(self.globals, p.name, ProtoB(p), d.children[0].children[1])

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
                defaults[_name(pname)] = self.param_default(default, t, scope, ctx, _name(pname))
            if isinstance(t, TypeVar | BlockTypeRef) or contains_typevar(t):
                raise self.err(tref, unsupported("generic parameter types in blocks"))
            if kind == "action" and d == "" and has_varbit(t):
                raise self.err(tref, "action data cannot be a varbit (the control plane sets "
                                     "fixed-width values)")
            n = _name(pname)
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
        n = _name(name)
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
        inst = self.make_instance(t, args, d, scope, ctx, _name(name), annos, name)
        self.declare(scope, _name(name), InstanceB(inst, self.extern_decl(t.name), t), name)
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
                out.names.append(_name(a.children[0]))
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
        if _name(name) != "main":
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
            inner = _core(tref)
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

    # ---------------------------------------------------------------- parsers
    def block_prelude(self, kind: str, ttree: Tree, ctor: Tree | None,
                      reserved: set[str] | None = None) -> tuple[
            str, dict[str, str], Scope, BlockCtx, list[ir.Param]]:
        annos_t, name, targs, params = ttree.children
        if targs is not None:
            raise self.err(targs, unsupported(f"generic {kind}s"))
        if ctor is not None:
            raise self.err(ctor, unsupported(f"{kind} constructor parameters"))
        n = _name(name)
        annos = self.annotations(annos_t)
        ctx = BlockCtx(kind, n, set(self.reserved) | (reserved or set()))
        scope = Scope(self.globals)
        plist = self.block_params(params, scope, ctx, kind)
        return n, annos, scope, ctx, plist

    def decl_parser_impl(self, d: Tree) -> None:
        ttree, ctor = d.children[0], d.children[1]
        if _has_ctor_params(ctor):
            self.template_block("parser", d)
            return
        name, annos, scope, ctx, plist = self.block_prelude("parser", ttree, None)
        b = self.parser_body(d, name, annos, scope, ctx, plist)
        self.declare(self.globals, name, b, ttree.children[1])

    def parser_body(self, d: Tree, name: str, annos: dict[str, str], scope: Scope,
                    ctx: BlockCtx, plist: list[ir.Param]) -> BlockB:
        """A parser's locals and states once its parameters are bound (by a plain
        declaration, or by a specialisation with constructor arguments)."""
        ttree = d.children[0]
        if not plist or not (isinstance(plist[0].type, ir.ExternType)
                             and plist[0].type.name == "packet_in"):
            raise self.err(ttree, f"parser '{name}' must take a packet_in as first parameter")
        for item in d.children[2:]:
            if not isinstance(item, Tree) or item.data == "parser_state":
                continue
            self.block_local(item, scope, ctx)
        states = self.parser_states(_kids(d, "parser_state"), scope, ctx, "", "accept",
                                    ttree.children[1], name)
        if ctx.prelude and "start" in states:
            if any("start" in _successors(st.transition) for st in states.values()):
                raise self.err(ttree.children[1], unsupported(
                    "function calls in initializers of a parser whose states loop back to "
                    "start"))
            states["start"].stmts[:0] = ctx.prelude
        parser = ir.Parser(name, plist, ctx.locals, ctx.instances, ctx.value_sets, states, annos)
        self.parsers[name] = parser
        return BlockB("parser", parser, [p.type for p in plist], d)

    def template_block(self, kind: str, d: Tree) -> None:
        """A parser/control with constructor parameters: only usable as a sub-block instance
        (``C(5) c;``), where its constructor arguments are known; elaborated there."""
        ttree = d.children[0]
        if ttree.children[2] is not None:
            raise self.err(ttree.children[2], unsupported(f"generic {kind}s"))
        self.declare(self.globals, _name(ttree.children[1]), BlockB(kind, None, [], d),
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
            sn = _name(s.children[1])
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
                r = self.stmt(st, sscope, ctx)
                if isinstance(r, _ParserCall):
                    ib = r.inst
                    k = calls[ib.name] = calls.get(ib.name, 0) + 1
                    sub = f"{prefix}{sn}.{ib.name}{'' if k == 1 else k}."
                    cont = sub + "accept"
                    states[cur] = ir.ParserState(
                        cur, stmts + r.pre,
                        ir.Transition(next_state=sub + "start", loc=self.loc(r.node)),
                        loc=cur_loc)
                    states.update(self.parser_states(
                        _kids(ib.tree, "parser_state"), Scope(ib.scope), ib.ctx, sub, cont,
                        ib.tree.children[0].children[1], _name(ib.tree.children[0].children[1])))
                    cur, cur_loc, stmts = cont, self.loc(r.node), list(r.post)
                elif r is not None:
                    stmts.append(r)
            if trans_t is None:
                trans = ir.Transition(next_state="reject", loc=self.loc(s))
            else:
                # function calls in the select keys run at the end of the state
                saved, self.hoisted = self.hoisted, stmts
                effects = self.effects
                try:
                    trans = self.transition(trans_t, sscope, ctx, state_names, rename)
                finally:
                    self.hoisted = saved
                if self.effects != effects and trans.select_keys:
                    trans.select_keys = self.evaluation_order(ctx).select_keys(
                        trans.select_keys, stmts)
            states[cur] = ir.ParserState(cur, stmts, trans, loc=cur_loc)
        return states

    def transition(self, t: Tree, scope: Scope, ctx: BlockCtx, states: dict[str, Tree],
                   rename: Callable[[str], str] | None = None) -> ir.Transition:
        def target(n: object) -> str:
            sn = _name(n)
            if sn not in states and sn not in ("accept", "reject"):
                raise self.err(n, f"unknown parser state '{sn}'")
            return rename(sn) if rename is not None else sn

        if t.data == "transition_direct":
            return ir.Transition(next_state=target(t.children[0]), loc=self.loc(t))
        keys_t = t.children[0]  # None: ``select()``, whose only keyset is default/_
        key_trees = [k for k in keys_t.children if k is not None] if keys_t is not None else []
        keys = [self.expr(k, scope, ctx) for k in key_trees]
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
        e = self.expr(v, scope, ctx)
        if operand and isinstance(t, ir.EnumType) and t.underlying is not None and \
                isinstance(e.type, ir.InfIntType | ir.BitsType):
            t = t.underlying
        c = self.coerce(e, t, v, "keyset value")
        if not isinstance(c, ir.Const):
            raise self.err(v, "keyset values must be compile-time constants")
        val = int(c.value)
        if isinstance(t, ir.BitsType):
            return to_unsigned(val, t.width)
        if isinstance(t, ir.EnumType) and t.underlying is not None:
            return to_unsigned(val, t.underlying.width)
        return val

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
            types = [self.resolve_type_arg(a, scope, {}) for a in _trees(targs)]
            if len(types) != 1:
                raise self.err(targs, "value_set takes one type argument")
            size = self.const_int(size_t, scope, "value_set size")
            vt = types[0]
            if not (isinstance(vt, ir.BitsType) or isinstance(vt, ir.StructType) and not vt.union
                    and vt.fields and all(isinstance(f.type, ir.BitsType) for f in vt.fields)):
                raise self.err(targs, unsupported(f"value_set of type {vt} (use bit<W> or a "
                                                  "struct of bit<W> fields)"))
            n = _name(name)
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
        n = _name(name)
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
        if _has_ctor_params(ctor):
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

    # ---------------------------------------------------------------- statements
    def block(self, b: Tree, scope: Scope, ctx: BlockCtx) -> ir.Block:
        out = ir.Block([], loc=self.loc(b))
        inner = Scope(scope)
        for s in b.children[1:]:
            r = self.stmt(s, inner, ctx)
            if isinstance(r, _ParserCall):
                raise self.err(s, "a sub-parser can only be applied by a statement of a parser "
                                  "state itself (not inside a block)")
            if r is not None:
                out.stmts.append(r)
        return out

    def stmt(self, s: Tree, scope: Scope, ctx: BlockCtx) -> ir.Stmt | None:
        """One statement, preceded by the statements its expressions hoisted."""
        r, hoisted, effects = self.in_statement(lambda: self.stmt_core(s, scope, ctx))
        if effects and r is not None:
            if isinstance(r, _ParserCall):
                raise self.err(s, "a sub-parser's arguments cannot call functions")
            lowered = self.evaluation_order(ctx).stmt(r)
            r = lowered[0] if len(lowered) == 1 else ir.Block(lowered, loc=self.loc(s))
        if not hoisted:
            return r
        if isinstance(r, _ParserCall):
            raise self.err(s, "a sub-parser's arguments cannot call functions")
        return ir.Block([*hoisted, *([r] if r is not None else [])], loc=self.loc(s))

    def stmt_core(self, s: Tree, scope: Scope, ctx: BlockCtx) -> ir.Stmt | None:
        d = s.data
        handler = getattr(self, f"stmt_{d}", None)
        if handler is not None:
            return handler(s, scope, ctx)
        loc = self.loc(s)
        if d == "empty_stmt":
            return None
        if d == "block":
            return self.block(s, scope, ctx)
        if d == "assign_stmt":
            lhs_t, rhs_t = s.children
            lhs = self.expr(lhs_t, scope, ctx)
            self.check_lvalue(lhs, lhs_t, scope)
            rhs = self.coerce(self.expr(rhs_t, scope, ctx), lhs.type, rhs_t, "assignment")
            return self.union_others_invalid(lhs, ir.Assign(lhs, rhs, loc=loc))
        if d == "call_stmt":
            return self.call(s.children[0], scope, ctx, as_stmt=True)
        if d == "if_stmt":
            cond_t, then_t = s.children[0], s.children[1]
            else_t = s.children[2] if len(s.children) > 2 else None
            cond = self.expr(cond_t, scope, ctx)
            if not isinstance(cond.type, ir.BoolType):
                raise self.err(cond_t, f"condition must be bool, not {cond.type}")
            then = self.as_block(then_t, scope, ctx)
            els = self.as_block(else_t, scope, ctx) if else_t is not None else None
            return ir.If(cond, then, els, loc=loc)
        if d == "exit_stmt":
            if self.frames:
                raise self.err(s, "exit is not allowed in a function")
            if ctx.kind == "parser":
                raise self.err(s, "exit is not allowed in a parser")
            return ir.Exit(loc=loc)
        if d == "switch_stmt":
            return self.switch(s, scope, ctx)
        if d == "var_decl":
            return self.var_decl(s, scope, ctx)
        if d == "const_decl":
            self.decl_const_decl(s, scope, ctx)
            return None
        if d == "instantiation":
            raise self.err(s, "extern instances must be declared at block level, not inside "
                              "statements")
        raise self.err(s, f"unexpected statement {d}")  # pragma: no cover

    def as_block(self, s: Tree, scope: Scope, ctx: BlockCtx) -> ir.Block:
        if s.data == "block":
            return self.block(s, scope, ctx)
        r = self.stmt(s, Scope(scope), ctx)
        if isinstance(r, _ParserCall):
            raise self.err(s, "a sub-parser can only be applied by a statement of a parser "
                              "state itself (not under a condition)")
        return ir.Block([r] if r is not None else [], loc=self.loc(s))

    def switch(self, s: Tree, scope: Scope, ctx: BlockCtx) -> ir.Stmt:
        expr_t = s.children[0]
        cases_t = s.children[1:]
        # switch (t.apply().action_run)
        if (expr_t.data == "member" and str(expr_t.children[1].children[0]) == "action_run"):
            target = self.expr_or_ref(expr_t.children[0], scope, ctx)
            if not isinstance(target, _ApplyResult):
                raise self.err(expr_t, "action_run is only available on table.apply()")
            table = target.table
            cases: list[ir.ActionCase] = []
            seen: set[str] = set()
            for c in cases_t:
                label, body_t = c.children
                if label.data == "sw_default":
                    acts = None
                else:
                    lt = label.children[0]
                    if not (isinstance(lt, Tree) and lt.data == "name_ref"):
                        raise self.err(lt, "switch labels on action_run must be action names")
                    b = scope.lookup(str(lt.children[0]))
                    if not isinstance(b, ActionB) or not any(
                        r.action == b.key for r in table.actions
                    ):
                        raise self.err(lt, f"'{lt.children[0]}' is not an action of table "
                                           f"'{table.name}'")
                    if b.key in seen:
                        raise self.err(lt, f"duplicate switch label '{lt.children[0]}'")
                    seen.add(b.key)
                    acts = [b.key]
                body = self.block(body_t, scope, ctx) if body_t is not None else None
                cases.append(ir.ActionCase(acts, body))
            return ir.SwitchAction(table.name, cases, loc=self.loc(s))
        e = self.expr(expr_t, scope, ctx)
        if not isinstance(e.type, ir.BitsType | ir.EnumType | ir.ErrorType):
            raise self.err(expr_t, f"cannot switch on a value of type {e.type}")
        vcases: list[ir.ValueCase] = []
        for c in cases_t:
            label, body_t = c.children
            if label.data == "sw_default":
                vals = None
            else:
                lt = label.children[0]
                v = self.coerce(self.expr(lt, scope, ctx), e.type, lt, "switch label")
                if not isinstance(v, ir.Const):
                    raise self.err(lt, "switch labels must be compile-time constants")
                vals = [v]
            body = self.block(body_t, scope, ctx) if body_t is not None else None
            vcases.append(ir.ValueCase(vals, body))
        return ir.SwitchValue(e, vcases, loc=self.loc(s))

    def check_lvalue(self, e: ir.Expr, node: Tree, scope: Scope) -> None:
        root = e
        while True:
            if isinstance(root, ir.Member):
                root = root.base
            elif isinstance(root, ir.StackElem | ir.StackNext | ir.StackLast):
                root = root.stack
            elif isinstance(root, ir.Slice):
                root = root.base
            else:
                break
        if isinstance(root, ir.Var):
            b = self._var_binding(scope, root.name)
            if b is not None and not b.writable:
                raise self.err(node, f"cannot write to {b.what} '{expr_text(node).split('.')[0]}'")
            return
        if isinstance(root, ir.Lookahead):
            raise self.err(node, "cannot write to the result of lookahead")
        raise self.err(node, f"'{expr_text(node)}' cannot be written to")

    def _var_binding(self, scope: Scope, ir_name: str) -> VarB | None:
        s: Scope | None = scope
        while s is not None:
            for b in s.names.values():
                if isinstance(b, VarB) and b.ir_name == ir_name:
                    return b
            s = s.parent
        return None

    # ---------------------------------------------------------------- calls
    def call(self, c: Tree, scope: Scope, ctx: BlockCtx, as_stmt: bool):
        """A call; returns an ir.Stmt when as_stmt, else an ir.Expr or _ApplyResult."""
        if c.data not in ("call", "generic_call"):
            if as_stmt:
                raise self.err(c, "expression statements must be calls")
        if c.data == "call":
            callee_t, args_t = c.children
            targs_t: list[Tree] = []
        elif c.data == "generic_call":
            callee_t = c.children[0]
            args_t = c.children[-1]
            targs_t = [x for x in c.children[1:-1] if isinstance(x, Tree)]
        else:
            raise self.err(c, "expression statements must be calls")
        targs = tuple(self.resolve_type_arg(a, scope, {}) for a in targs_t)
        arg_trees = self.arg_list(args_t)
        loc = self.loc(c)

        if callee_t.data == "name_ref":
            fname = str(callee_t.children[0])
            b = scope.lookup(fname)
            if isinstance(b, FunctionB):
                if targs:
                    raise self.err(c, "functions take no type arguments")
                return self.function_call(b, arg_trees, c, scope, ctx, as_stmt)
            if isinstance(b, ActionB):
                if self.frames:
                    raise self.err(c, "a function cannot call an action")
                if not as_stmt:
                    raise self.err(c, "actions cannot be called inside expressions")
                if ctx.kind == "parser":
                    raise self.err(c, "actions cannot be called from a parser")
                if targs:
                    raise self.err(c, "actions take no type arguments")
                return self.action_call(b.key, fname, arg_trees, c, scope, ctx)
            if isinstance(b, FuncB):
                return self.extern_func_call(fname, b.sigs, targs, arg_trees, c, scope, ctx,
                                             as_stmt)
            if b is None:
                raise self.err(callee_t, f"unknown function or action '{fname}'")
            raise self.err(callee_t, f"'{fname}' cannot be called")
        if callee_t.data == "type_member" and str(callee_t.children[1].children[0]) == "apply":
            b = self.globals.lookup(str(callee_t.children[0]))
            if isinstance(b, BlockB):
                return self.direct_apply(b, callee_t.children[0], arg_trees, c, scope, ctx,
                                         as_stmt)
        ref = self.expr_or_ref(callee_t, scope, ctx)
        if not isinstance(ref, _MethodRef):
            raise self.err(callee_t, f"'{expr_text(callee_t)}' cannot be called")
        m = ref.method
        if ref.kind == "header":
            h = ref.target
            if arg_trees:
                raise self.err(c, f"{m}() takes no arguments")
            if m in SIZE_METHODS:  # a compile-time value: no effect as a statement
                return None if as_stmt else self.size_method(h, m, c)
            if m == "isValid":
                if as_stmt:  # a method call statement whose value is unused: no effect
                    return None
                if isinstance(h.type, ir.StructType):  # a header_union
                    return self.union_valid(h, loc)
                return ir.IsValid(h, type=_BOOL, loc=loc)
            if isinstance(h.type, ir.StructType):
                raise self.err(c, f"a header_union has no method {m}() (call it on a member)")
            if m in ("setValid", "setInvalid"):
                if not as_stmt:
                    raise self.err(c, f"{m}() does not return a value")
                self.check_lvalue(h, callee_t.children[0], scope)
                # a union member: setValid invalidates the others, and setInvalid of any
                # member invalidates the whole union (spec 8.19)
                return self.union_others_invalid(h, ir.HeaderMethod(h, m, loc=loc))
        if ref.kind == "stack":
            if not as_stmt:
                raise self.err(c, f"{m}() does not return a value")
            if len(arg_trees) != 1:
                raise self.err(c, f"{m}() takes one argument")
            arg_trees = self.bind(arg_trees, ["count"], f"{m}()")
            n = self.const_int(arg_trees[0], scope, f"{m} count")
            if n < 0:
                raise self.err(arg_trees[0], f"{m} count must not be negative")
            self.check_lvalue(ref.target, callee_t.children[0], scope)
            return ir.StackMethod(ref.target, m, n, loc=loc)
        if ref.kind == "table":
            table = ref.target
            if arg_trees:
                raise self.err(c, "apply() takes no arguments")
            if ctx.in_action:
                raise self.err(c, "tables cannot be applied inside actions")
            if as_stmt:
                return ir.ApplyTable(table.name, loc=loc)
            return _ApplyResult(table, c)
        if ref.kind == "subblock":
            ib: SubInstB = ref.target
            if not as_stmt:
                raise self.err(c, f"{ib.name}.apply() does not return a value")
            if ctx.in_action:
                raise self.err(c, f"a {ib.kind} cannot be applied inside an action")
            if targs:
                raise self.err(c, "apply() takes no type arguments")
            return self.sub_apply(ib, arg_trees, c, scope, ctx)
        if ref.kind == "packet_in":
            if ctx.kind != "parser":
                raise self.err(c, f"packet_in.{m} is only available in parsers")
            if m == "extract":
                if len(arg_trees) == 2:
                    return self.sized_extract(arg_trees, c, scope, ctx, as_stmt)
                if len(arg_trees) != 1:
                    raise self.err(c, "extract() takes one header")
                arg_trees = self.bind(arg_trees, ["hdr"], "extract()")
                h = self.expr(arg_trees[0], scope, ctx)
                if not isinstance(h.type, ir.HeaderType):
                    raise self.err(arg_trees[0], f"extract() needs a header, not {h.type}")
                if h.type.varbit is not None:
                    raise self.err(c, f"header {h.type.name} has a varbit field: extract it "
                                      f"with extract(hdr, bits)")
                self.check_lvalue(h, arg_trees[0], scope)
                if not as_stmt:
                    raise self.err(c, "extract() does not return a value")
                return self.union_others_invalid(h, ir.Extract(h, loc=loc))
            if m == "lookahead":
                if len(targs) != 1 or arg_trees:
                    raise self.err(c, "lookahead takes one type argument and no arguments: "
                                      "lookahead<T>()")
                t = targs[0]
                try:
                    ir.type_width(t)
                except TypeError:
                    raise self.err(c, f"lookahead<{t}> needs a fixed-width type") from None
                if as_stmt:  # the value is unused; a too short packet still fails
                    return ir.VarDecl(ctx.fresh("lookahead"), t, ir.Lookahead(type=t, loc=loc),
                                      loc=loc)
                return ir.Lookahead(type=t, loc=loc)
            if m == "advance":
                if len(arg_trees) != 1:
                    raise self.err(c, "advance() takes one argument")
                arg_trees = self.bind(arg_trees, ["sizeInBits"], "advance()")
                bits = self.coerce(self.expr(arg_trees[0], scope, ctx), _BIT32, arg_trees[0],
                                   "advance")
                return ir.Advance(bits, loc=loc)
            raise self.err(c, unsupported(f"packet_in.{m}()"))
        if ref.kind == "packet_out":
            if m != "emit" or len(arg_trees) != 1:
                raise self.err(c, "packet_out supports emit(header) only")
            arg_trees = self.bind(arg_trees, ["hdr"], "emit()")
            h = self.expr(arg_trees[0], scope, ctx)
            if not self._emittable(h.type):
                raise self.err(arg_trees[0], f"emit() needs a header, header stack or struct "
                                             f"of headers, not {h.type}")
            return ir.Emit(h, loc=loc)
        if ref.kind == "instance":
            ib: InstanceB = ref.target
            sigs = ib.decl.methods.get(m)
            if not sigs:
                raise self.err(callee_t, f"extern {ib.decl.name} has no method '{m}'")
            binding = dict(zip(ib.decl.type_params, ib.type.type_args, strict=False))
            sigs = [FuncSig(s.name, s.type_params,
                            [SigParam(p.name, p.direction, substitute(p.type, binding))
                             for p in s.params], substitute(s.ret, binding)) for s in sigs]
            return self.invoke(ib.inst.name, m, sigs, targs, arg_trees, c, scope, ctx, as_stmt)
        raise self.err(c, f"'{expr_text(callee_t)}' cannot be called")  # pragma: no cover

    def _emittable(self, t: object) -> bool:
        if isinstance(t, ir.HeaderType | ir.StackType):
            return True
        if isinstance(t, ir.StructType):
            return all(self._emittable(f.type) for f in t.fields)
        return False

    def action_call(self, key: str, name: str, arg_trees: Args, c: Tree, scope: Scope,
                    ctx: BlockCtx) -> ir.ActionCall:
        action = self.actions[key]
        trees = self.with_defaults(arg_trees, [p.name for p in action.params],
                                   self.action_defaults.get(key, {}), f"action '{name}'", c)
        args = [self.arg_value(a, p.type, p.direction, f"argument '{p.name}' of '{name}'",
                               scope, ctx, action=True)
                for p, a in zip(action.params, trees, strict=True)]
        return ir.ActionCall(key, args, loc=self.loc(c))

    def extern_func_call(self, fname: str, sigs: list[FuncSig], targs: tuple, arg_trees,
                         c: Tree, scope: Scope, ctx: BlockCtx, as_stmt: bool):
        if fname == "verify" and ctx.kind != "parser":
            raise self.err(c, "verify() is only available in parsers")
        r = self.invoke(None, fname, sigs, targs, arg_trees, c, scope, ctx, as_stmt)
        if fname == "digest" and isinstance(r, ir.ExternCall):
            t = r.type_args[0] if r.type_args else r.args[1].type
            if not isinstance(t, ir.StructType):
                raise self.err(c, f"digest data must be a struct type, not {t}")
            if t not in self.digests:
                self.digests.append(t)
        return r

    def _standard_metadata_name(self, scope: Scope) -> str:
        """The name under which the current block sees its standard_metadata_t parameter."""
        s: Scope | None = scope
        while s is not None:
            for n, b in s.names.items():
                if isinstance(b, VarB) and isinstance(b.type, ir.StructType) and \
                        b.type.name == "standard_metadata_t":
                    return n
            s = s.parent
        return "standard_metadata"

    def invoke(self, instance: str | None, method: str, sigs: list[FuncSig], targs: tuple,
               arg_trees: Args, c: Tree, scope: Scope, ctx: BlockCtx, as_stmt: bool):
        cands = [s for s in sigs if arg_trees.fits([p.name for p in s.params])]
        what = f"{method}" if instance is None else f"{instance}.{method}"
        if not cands and any(arg_trees.names):
            same = [s for s in sigs if len(s.params) == len(arg_trees)]
            if same:  # reports the first name that matches no parameter
                self.bind(arg_trees, [p.name for p in same[0].params], what)
        if not cands:
            counts = sorted({len(s.params) for s in sigs})
            msg = (f"{what} expects {' or '.join(map(str, counts))} arguments, got "
                   f"{len(arg_trees)}")
            if instance is None and method == "mark_to_drop" and not arg_trees:
                sm = self._standard_metadata_name(scope)
                msg += (f": pass the standard metadata, mark_to_drop({sm}) (the argument-less "
                        "mark_to_drop() of old v1model versions is rejected by current p4c too)")
            raise self.err(c, msg)
        sig = cands[0]
        arg_trees = self.bind(arg_trees, [p.name for p in sig.params], what)
        if targs and len(targs) != len(sig.type_params):
            raise self.err(c, f"{what} expects {len(sig.type_params)} type arguments, got "
                              f"{len(targs)}")
        binding: dict[str, object] = dict(zip(sig.type_params, targs, strict=False))
        raw = [None if is_dontcare(a) else self.expr(a, scope, ctx) for a in arg_trees]
        # infer type parameters from arguments that have a definite type
        for p, e in zip(sig.params, raw, strict=True):
            if isinstance(p.type, TypeVar) and p.type.name not in binding and e is not None \
                    and not isinstance(e.type, ir.InfIntType):
                binding[p.type.name] = e.type
        for p, e in zip(sig.params, raw, strict=True):
            if isinstance(p.type, TypeVar) and p.type.name not in binding and e is not None:
                binding[p.type.name] = e.type
        args: list[ir.Expr] = []
        for p, e, a in zip(sig.params, raw, arg_trees, strict=True):
            pt = substitute(p.type, binding)
            if e is None:  # `_`: a discarded variable of the parameter's type
                args.append(self.arg_value(a, pt, p.direction, f"argument '{p.name}' of {what}",
                                           scope, ctx))
                continue
            e = self.coerce(e, pt, a, f"argument '{p.name}' of {what}")
            self.no_varbit_argument(e, a, what)
            if p.direction in ("out", "inout"):
                self.check_lvalue(e, a, scope)
            if p.direction == "" and not isinstance(e, ir.Const):
                raise self.err(a, f"argument '{p.name}' of {what} must be a compile-time "
                                  "constant")
            args.append(e)
        type_args = tuple(binding[tp] for tp in sig.type_params)
        ret = substitute(sig.ret, binding)
        call: ir.ExternCall | ir.ExternCallExpr
        if as_stmt:
            call = ir.ExternCall(instance, method, args, type_args, loc=self.loc(c))
        elif isinstance(ret, ir.VoidType):
            raise self.err(c, f"{what} does not return a value")
        else:
            call = ir.ExternCallExpr(instance, method, args, type_args, type=ret,
                                     loc=self.loc(c))
        call.arg_dirs = tuple(p.direction for p in sig.params)  # for ordering.EvaluationOrder
        return call

    def evaluation_order(self, ctx: BlockCtx) -> EvaluationOrder:
        return EvaluationOrder(ctx.fresh, lambda a: [p.direction for p in self.actions[a].params])

    # ---------------------------------------------------------------- expressions
    def expr(self, t: Tree | Token, scope: Scope, ctx: BlockCtx) -> ir.Expr:
        r = self.expr_or_ref(t, scope, ctx)
        if isinstance(r, _ApplyResult):
            raise self.err(t, "table.apply() must be used as a statement, or through .hit, "
                              ".miss or .action_run")
        if isinstance(r, _MethodRef):
            raise self.err(t, f"method '{r.method}' must be called")
        if isinstance(r, _Named):
            raise self.err(t, f"'{r.name}' is not a value")
        return r

    def expr_or_ref(self, t: Tree | Token, scope: Scope, ctx: BlockCtx):
        if isinstance(t, Token):  # pragma: no cover - all expressions are trees
            raise self.err(t, "unexpected token")
        d = t.data
        loc = self.loc(t)
        if d == "dontcare_arg":
            raise self.err(t, "'_' can only be passed for an out parameter")
        if d == "int_lit":
            value, wt = parse_int_literal(str(t.children[0]))
            if wt is None:
                return ir.Const(value, type=_INFINT, loc=loc)
            if wt.width <= 0:
                raise self.err(t, "width of a literal must be positive")
            return ir.Const(wrap(value, wt), type=wt, loc=loc)
        if d == "str_lit":
            return ir.Const(_unquote(str(t.children[0])), type=ir.StringType(), loc=loc)
        if d in ("true_lit", "false_lit"):
            return ir.Const(d == "true_lit", type=_BOOL, loc=loc)
        if d in ("name_ref", "dot_name_ref"):
            name = str(t.children[0])
            b = (self.globals if d == "dot_name_ref" else scope).lookup(name)
            if isinstance(b, VarB):
                return ir.Var(b.ir_name, type=b.type, loc=loc)
            if isinstance(b, ConstB):
                return replace(b.value, loc=loc)
            if isinstance(b, InstanceB | TableB | ActionB | ValueSetB | FuncB | SubInstB):
                return _Named(b, name, t)
            if b is None:
                raise self.err(t, f"unknown name '{name}'")
            raise self.err(t, f"'{name}' is not a value")
        if d == "type_member":
            tname = str(t.children[0])
            member = str(t.children[1].children[0])
            b = scope.lookup(tname)
            if isinstance(b, TypeB) and isinstance(b.type, ir.EnumType):
                et = b.type
                try:
                    return ir.Const(et.value_of(member), type=et, loc=loc)
                except KeyError:
                    raise self.err(t.children[1], f"enum {tname} has no member '{member}'") \
                        from None
            raise self.err(t, f"'{tname}.{member}' is not a value")
        if d == "error_member":
            member = str(t.children[0].children[0])
            if member not in self.errors:
                raise self.err(t.children[0], f"unknown error '{member}'")
            return ir.Const(self.errors.index(member), type=ir.ErrorType(), loc=loc)
        if d == "member":
            return self.member(t, scope, ctx)
        if d == "index":
            base = self.expr(t.children[0], scope, ctx)
            if not isinstance(base.type, ir.StackType):
                raise self.err(t, f"cannot index a value of type {base.type} (use [hi:lo] for "
                                  "bit slices)")
            idx = self.expr(t.children[1], scope, ctx)
            if isinstance(idx.type, ir.EnumType) and idx.type.underlying is not None:
                # a serializable enum indexes by its value (spec 8.20)
                idx = (ir.Const(int(idx.value), type=idx.type.underlying, loc=idx.loc)
                       if isinstance(idx, ir.Const)
                       else ir.Cast(idx, type=idx.type.underlying, loc=idx.loc))
            if isinstance(idx, ir.Const) and isinstance(idx.type, ir.InfIntType | ir.BitsType):
                if not 0 <= int(idx.value) < base.type.size:
                    raise self.err(t.children[1], f"index {idx.value} is out of range for "
                                                  f"{base.type}")
                idx = ir.Const(int(idx.value), type=_BIT32, loc=idx.loc)
            elif not isinstance(idx.type, ir.BitsType):  # int<W> too: negative is out of range
                raise self.err(t.children[1], f"stack index must be bit<W>, int<W> or a "
                                              f"serializable enum, not {idx.type}")
            return ir.StackElem(base, idx, type=base.type.elem, loc=loc)
        if d == "slice":
            base = self.expr(t.children[0], scope, ctx)
            if isinstance(base.type, ir.InfIntType):
                raise self.err(t, "cannot slice an integer without a width")
            if not isinstance(base.type, ir.BitsType):
                raise self.err(t, f"cannot slice a value of type {base.type}")
            hi = self.const_int(t.children[1], scope, "slice bound")
            lo = self.const_int(t.children[2], scope, "slice bound")
            if not 0 <= lo <= hi < base.type.width:
                raise self.err(t, f"slice [{hi}:{lo}] is out of range for {base.type}")
            rt = ir.BitsType(hi - lo + 1)
            if isinstance(base, ir.Const):
                return ir.Const((to_unsigned(int(base.value), base.type.width) >> lo)
                                & ((1 << (hi - lo + 1)) - 1), type=rt, loc=loc)
            return ir.Slice(base, hi, lo, type=rt, loc=loc)
        if d == "part_select":
            return self.part_select(t, scope, ctx)
        if d in ("call", "generic_call"):
            return self.call(t, scope, ctx, as_stmt=False)
        if d == "list_expr":
            items_t = t.children[0].children if t.children[0] is not None else []
            items = [self.expr(i, scope, ctx) for i in items_t if i is not None]
            return ir.ListExpr(items, type=ir.TupleType(tuple(i.type for i in items)), loc=loc)
        if d == "cast":
            target = self.resolve_type(t.children[0], scope)
            return self.cast(self.expr(t.children[1], scope, ctx), target, t)
        if d in ("neg", "pos", "bnot", "lnot"):
            return self.unary(d, self.expr(t.children[-1], scope, ctx), t)
        if d == "binop":
            return self.binop(t, scope, ctx)
        if d == "mux":
            return self.mux(t, scope, ctx)
        if d == "construct":
            raise self.err(t, "an instantiation is not allowed here")
        raise self.err(t, f"unsupported expression {d}")  # pragma: no cover

    def part_select(self, t: Tree, scope: Scope, ctx: BlockCtx) -> ir.Expr:
        """``e[lo +: w]`` (P4_16 1.2.4): the w bits of e from bit lo up, bit<w>. The width is
        a compile-time constant; with a constant lo it is the slice e[lo+w-1:lo] (an l-value
        too), with a run-time lo the value (bit<w>)(e >> lo) -- bits past e's width are 0."""
        base_t, lo_t, _op, w_t = t.children
        loc = self.loc(t)
        base = self.expr(base_t, scope, ctx)
        if isinstance(base.type, ir.InfIntType):
            raise self.err(t, "cannot slice an integer without a width")
        if not isinstance(base.type, ir.BitsType):
            raise self.err(t, f"cannot slice a value of type {base.type}")
        w = self.const_int(w_t, scope, "part-select width")
        if not 0 < w <= base.type.width:
            raise self.err(w_t, f"part-select width {w} is out of range for {base.type}")
        lo_e = self.expr(lo_t, scope, ctx)
        if isinstance(lo_e, ir.Const):
            lo = int(lo_e.value)
            if not 0 <= lo <= base.type.width - w:
                raise self.err(lo_t, f"part-select [{lo} +: {w}] is out of range for "
                                     f"{base.type}")
            rt = ir.BitsType(w)
            if isinstance(base, ir.Const):
                return ir.Const((to_unsigned(int(base.value), base.type.width) >> lo)
                                & ((1 << w) - 1), type=rt, loc=loc)
            return ir.Slice(base, lo + w - 1, lo, type=rt, loc=loc)
        if not isinstance(lo_e.type, ir.BitsType) or lo_e.type.signed:
            raise self.err(lo_t, f"the start of a part-select must be bit<W>, not {lo_e.type}")
        unsigned = ir.BitsType(base.type.width)
        if base.type.signed:
            base = ir.Cast(base, type=unsigned, loc=loc)
        shifted = ir.Binary(">>", base, lo_e, type=unsigned, loc=loc)
        return ir.Cast(shifted, type=ir.BitsType(w), loc=loc)

    def member(self, t: Tree, scope: Scope, ctx: BlockCtx):
        base_t, mname_t = t.children
        m = str(mname_t.children[0])
        loc = self.loc(t)
        base = self.expr_or_ref(base_t, scope, ctx)
        if isinstance(base, _ApplyResult):
            if m in ("hit", "miss"):
                return ir.TableHit(base.table.name, m == "miss", type=_BOOL, loc=loc)
            if m == "action_run":
                raise self.err(t, "action_run can only be used in a switch statement")
            raise self.err(mname_t, f"table.apply() has no member '{m}'")
        if isinstance(base, _Named):
            b = base.binding
            if isinstance(b, TableB):
                if m == "apply":
                    return _MethodRef("table", b.table, m, t)
                raise self.err(mname_t, f"table '{base.name}' has no member '{m}'")
            if isinstance(b, InstanceB):
                return _MethodRef("instance", b, m, t)
            if isinstance(b, SubInstB):
                if m == "apply":
                    return _MethodRef("subblock", b, m, t)
                raise self.err(mname_t, f"{b.kind} instance '{base.name}' has no member '{m}'")
            raise self.err(base_t, f"'{base.name}' has no members")
        if isinstance(base, _MethodRef):
            raise self.err(t, f"method '{base.method}' must be called")
        bt = base.type
        if isinstance(bt, ir.ExternType):
            if bt.name in ("packet_in", "packet_out"):
                return _MethodRef(bt.name, base, m, t)
            raise self.err(t, unsupported(f"methods of extern-typed parameters ({bt.name})"))
        if isinstance(bt, ir.HeaderType) or (isinstance(bt, ir.StructType) and bt.union
                                              and m in ("isValid", "setValid", "setInvalid")):
            if m in ("isValid", "setValid", "setInvalid"):
                return _MethodRef("header", base, m, t)
            if m in SIZE_METHODS and isinstance(bt, ir.HeaderType):
                return _MethodRef("header", base, m, t)
            try:
                ft = bt.field_type(m)
            except KeyError:
                raise self.err(mname_t, f"header {bt.name} has no field '{m}'") from None
            return ir.Member(base, m, type=ft, loc=loc)
        if isinstance(bt, ir.StructType):
            try:
                ft = bt.field_type(m)
            except KeyError:
                raise self.err(mname_t, f"struct {bt.name} has no field '{m}'") from None
            return ir.Member(base, m, type=ft, loc=loc)
        if isinstance(bt, ir.StackType):
            if m == "next":
                if ctx.kind != "parser":
                    raise self.err(mname_t, "stack.next is only allowed in parsers")
                return ir.StackNext(base, type=bt.elem, loc=loc)
            if m == "last":
                return ir.StackLast(base, type=bt.elem, loc=loc)
            if m in ("size", "lastIndex", "nextIndex"):
                if m == "size":
                    return ir.Const(bt.size, type=_BIT32, loc=loc)
                if m == "nextIndex" and ctx.kind != "parser":
                    raise self.err(mname_t, "stack.nextIndex is only allowed in parsers")
                if isinstance(bt.elem, ir.StructType):  # as p4c: only header stacks have them
                    raise self.err(mname_t, f"a stack of header unions has no {m}")
                return ir.StackProp(base, m, type=_BIT32, loc=loc)
            if m in ("push_front", "pop_front"):
                return _MethodRef("stack", base, m, t)
            raise self.err(mname_t, f"header stack has no member '{m}'")
        raise self.err(mname_t, f"a value of type {bt} has no member '{m}'")

    # ---------------------------------------------------------------- typing rules
    def coerce(self, e: ir.Expr, t: object, node: object, what: str) -> ir.Expr:
        """Implicit conversion of ``e`` to ``t`` where the spec allows one (integer literals,
        list expressions initialising structs/headers/tuples), else a type error."""
        if isinstance(e, _Named):
            raise self.err(node, f"'{e.name}' is not a value")
        if isinstance(t, TypeVar) or e.type == t:
            return e
        if isinstance(e.type, ir.InfIntType) and isinstance(t, ir.BitsType):
            if isinstance(e, ir.Const):
                # a value that does not fit is truncated to the width (spec 8.12.2: p4c
                # warns, then wraps it as an explicit cast would)
                return ir.Const(wrap(int(e.value), t), type=t, loc=e.loc)
            return ir.Cast(e, type=t, loc=e.loc)
        if isinstance(e, ir.ListExpr) and isinstance(t, ir.StructType | ir.HeaderType):
            if len(e.items) != len(t.fields):
                raise self.err(node, f"{what}: {t} has {len(t.fields)} fields, the list has "
                                     f"{len(e.items)}")
            items = [self.coerce(i, f.type, node, what) for i, f in zip(e.items, t.fields,
                                                                         strict=True)]
            return ir.ListExpr(items, type=t, loc=e.loc)
        if isinstance(e, ir.ListExpr) and isinstance(t, ir.TupleType):
            if len(e.items) != len(t.elems):
                raise self.err(node, f"{what}: expected {len(t.elems)} elements, got "
                                     f"{len(e.items)}")
            items = [self.coerce(i, et, node, what) for i, et in zip(e.items, t.elems,
                                                                      strict=True)]
            return ir.ListExpr(items, type=t, loc=e.loc)
        if isinstance(t, ir.ExternType) and isinstance(e.type, ir.ExternType) and (
            e.type.name == t.name
        ):
            return e
        hint = f" (convert with a cast: ({t})...)" if isinstance(t, ir.BitsType) and isinstance(
            e.type, ir.BitsType) else ""
        raise self.err(node, f"{what}: expected {t}, got {e.type}{hint}")

    def cast(self, e: ir.Expr, t: object, node: Tree) -> ir.Expr:
        src = e.type
        loc = self.loc(node)
        if src == t:
            return e
        ok = False
        if isinstance(t, ir.BitsType):
            ok = isinstance(src, ir.BitsType | ir.InfIntType | ir.BoolType) or (
                isinstance(src, ir.EnumType) and src.underlying is not None
            )
            if isinstance(src, ir.BoolType) and t.width != 1:
                ok = False
        elif isinstance(t, ir.BoolType):
            ok = (isinstance(src, ir.BitsType) and src.width == 1 and not src.signed) or (
                isinstance(e, ir.Const) and isinstance(src, ir.InfIntType)
                and e.value in (0, 1))
        elif isinstance(t, ir.EnumType) and t.underlying is not None:
            ok = isinstance(src, ir.BitsType | ir.InfIntType)
        elif isinstance(t, ir.StructType | ir.HeaderType) and isinstance(e, ir.ListExpr):
            return self.coerce(e, t, node, "cast")
        if not ok:
            raise self.err(node, f"cannot cast {src} to {t}")
        if isinstance(e, ir.Const):
            v = e.value
            if isinstance(t, ir.BitsType):
                v = int(v)
                if isinstance(src, ir.BitsType) and src.signed and not t.signed:
                    v = to_unsigned(v, src.width)
                return ir.Const(wrap(v, t), type=t, loc=loc)
            if isinstance(t, ir.BoolType):
                return ir.Const(bool(v), type=t, loc=loc)
            if isinstance(t, ir.EnumType):
                return ir.Const(wrap(int(v), t.underlying), type=t, loc=loc)
        return ir.Cast(e, type=t, loc=loc)

    def unary(self, d: str, e: ir.Expr, node: Tree) -> ir.Expr:
        loc = self.loc(node)
        t = e.type
        if d == "pos":
            if not is_int_like(t):
                raise self.err(node, f"unary + needs a number, not {t}")
            return e
        if d == "lnot":
            if not isinstance(t, ir.BoolType):
                raise self.err(node, f"'!' needs a bool, not {t}")
            if isinstance(e, ir.Const):
                return ir.Const(not e.value, type=t, loc=loc)
            return ir.Unary("!", e, type=t, loc=loc)
        if d == "neg":
            if not is_int_like(t):
                raise self.err(node, f"unary - needs bit<W>, int<W> or an integer, not {t}")
            if isinstance(e, ir.Const):
                v = -int(e.value)
                return ir.Const(wrap(v, t) if isinstance(t, ir.BitsType) else v, type=t, loc=loc)
            return ir.Unary("-", e, type=t, loc=loc)
        # bnot
        if not is_bits(t):
            raise self.err(node, f"'~' needs bit<W> or int<W>, not {t}"
                           + (" (give the literal a width)" if isinstance(t, ir.InfIntType)
                              else ""))
        if isinstance(e, ir.Const):
            return ir.Const(wrap(~int(e.value), t), type=t, loc=loc)
        return ir.Unary("~", e, type=t, loc=loc)

    def binop(self, t: Tree, scope: Scope, ctx: BlockCtx) -> ir.Expr:
        lt, op_tok, rt = t.children
        return self.binary(str(op_tok), self.expr(lt, scope, ctx), self.expr(rt, scope, ctx),
                           lt, rt, t)

    def binary(self, op: str, left: ir.Expr, right: ir.Expr, lt: Tree, rt: Tree,
               t: Tree) -> ir.Expr:
        """``left op right`` type-checked (and folded) as the spec's binary operators; the
        trees locate errors."""
        loc = self.loc(t)
        if op in ("&&", "||"):
            for side, node in ((left, lt), (right, rt)):
                if not isinstance(side.type, ir.BoolType):
                    raise self.err(node, f"'{op}' needs bool operands, not {side.type}")
            if isinstance(left, ir.Const) and isinstance(right, ir.Const):
                v = (left.value and right.value) if op == "&&" else (left.value or right.value)
                return ir.Const(bool(v), type=_BOOL, loc=loc)
            return ir.Binary(op, left, right, type=_BOOL, loc=loc)
        if op in ("<<", ">>"):
            if not is_int_like(left.type):
                raise self.err(lt, f"'{op}' needs a number on the left, not {left.type}")
            if not is_int_like(right.type) or (
                isinstance(right.type, ir.BitsType) and right.type.signed
            ):
                raise self.err(rt, f"shift amount must be an unsigned number, not {right.type}")
            if isinstance(right, ir.Const) and int(right.value) < 0:
                raise self.err(rt, "shift amount must not be negative")
            if isinstance(left.type, ir.InfIntType) and not isinstance(right, ir.Const):
                raise self.err(lt, "shifting an integer literal by a run-time amount needs a "
                                   "width on the literal")
            if isinstance(left, ir.Const) and isinstance(right, ir.Const):
                v = int(left.value) << int(right.value) if op == "<<" else \
                    int(left.value) >> int(right.value)
                tt = left.type
                return ir.Const(wrap(v, tt) if isinstance(tt, ir.BitsType) else v, type=tt,
                                loc=loc)
            if isinstance(right.type, ir.InfIntType):
                right = ir.Const(int(right.value), type=ir.BitsType(32), loc=right.loc)
            return ir.Binary(op, left, right, type=left.type, loc=loc)
        if op == "++":
            for side, node in ((left, lt), (right, rt)):
                if not isinstance(side.type, ir.BitsType):
                    raise self.err(node, f"'++' needs bit<W> or int<W> operands, not "
                                         f"{side.type}")
            rtype = ir.BitsType(left.type.width + right.type.width, left.type.signed)
            if isinstance(left, ir.Const) and isinstance(right, ir.Const):
                v = (to_unsigned(int(left.value), left.type.width) << right.type.width) | \
                    to_unsigned(int(right.value), right.type.width)
                return ir.Const(wrap(v, rtype), type=rtype, loc=loc)
            return ir.Concat(left, right, type=rtype, loc=loc)
        # arithmetic, bitwise and comparisons: unify operand types
        left, right = self.unify(left, right, lt, rt, op, t)
        ot = left.type
        if op in ("==", "!="):
            if not isinstance(ot, ir.BitsType | ir.InfIntType | ir.BoolType | ir.EnumType
                              | ir.ErrorType | ir.HeaderType | ir.StructType
                              | ir.StackType | ir.VarbitType):
                raise self.err(t, f"cannot compare values of type {ot}")
            if isinstance(left, ir.Const) and isinstance(right, ir.Const):
                eq = left.value == right.value
                return ir.Const(eq if op == "==" else not eq, type=_BOOL, loc=loc)
            return ir.Binary(op, left, right, type=_BOOL, loc=loc)
        if not is_int_like(ot):
            raise self.err(t, f"'{op}' needs bit<W>, int<W> or integer operands, not {ot}")
        if op in _CMP_OPS:
            if isinstance(left, ir.Const) and isinstance(right, ir.Const):
                a, b = int(left.value), int(right.value)
                v = {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]
                return ir.Const(v, type=_BOOL, loc=loc)
            return ir.Binary(op, left, right, type=_BOOL, loc=loc)
        if op in ("/", "%"):
            if isinstance(ot, ir.BitsType) and ot.signed:
                raise self.err(t, f"'{op}' is not defined for signed int<W>")
            if isinstance(right, ir.Const) and int(right.value) == 0:
                raise self.err(rt, "division by zero")
            if isinstance(ot, ir.InfIntType) and (
                (isinstance(left, ir.Const) and int(left.value) < 0)
                or (isinstance(right, ir.Const) and int(right.value) < 0)
            ):
                raise self.err(t, f"'{op}' of negative integers is not defined")
        if op in ("|+|", "|-|") and isinstance(ot, ir.InfIntType):
            raise self.err(t, f"'{op}' needs operands with a width")
        if isinstance(left, ir.Const) and isinstance(right, ir.Const):
            return ir.Const(_fold(op, int(left.value), int(right.value), ot), type=ot, loc=loc)
        return ir.Binary(op, left, right, type=ot, loc=loc)

    def unify(self, left: ir.Expr, right: ir.Expr, lt: Tree, rt: Tree,
              op: str, node: Tree) -> tuple[ir.Expr, ir.Expr]:
        a, b = left.type, right.type
        if a == b:
            return left, right
        if isinstance(a, ir.InfIntType) and isinstance(b, ir.BitsType):
            return self.coerce(left, b, lt, f"'{op}'"), right
        if isinstance(b, ir.InfIntType) and isinstance(a, ir.BitsType):
            return left, self.coerce(right, a, rt, f"'{op}'")
        if isinstance(left, ir.ListExpr) and isinstance(b, ir.StructType | ir.HeaderType):
            return self.coerce(left, b, lt, f"'{op}'"), right
        if isinstance(right, ir.ListExpr) and isinstance(a, ir.StructType | ir.HeaderType):
            return left, self.coerce(right, a, rt, f"'{op}'")
        raise self.err(node, f"'{op}' needs operands of the same type, got {a} and {b} "
                             "(add a cast)")

    def mux(self, t: Tree, scope: Scope, ctx: BlockCtx) -> ir.Expr:
        ct, tt, et = t.children
        cond = self.expr(ct, scope, ctx)
        if not isinstance(cond.type, ir.BoolType):
            raise self.err(ct, f"condition of ?: must be bool, not {cond.type}")
        a = self.expr(tt, scope, ctx)
        b = self.expr(et, scope, ctx)
        a, b = self.unify(a, b, tt, et, "?:", t)
        if isinstance(cond, ir.Const):
            return a if cond.value else b
        if isinstance(a.type, ir.InfIntType):
            raise self.err(t, "the branches of ?: need a width (cast one of them)")
        return ir.Mux(cond, a, b, type=a.type, loc=self.loc(t))


def _successors(tr: ir.Transition) -> list[str]:
    if tr.select_keys is None:
        return [tr.next_state or "accept"]
    return [c.next_state for c in tr.cases]


def _fold(op: str, a: int, b: int, t: object) -> int:
    if op == "+":
        v = a + b
    elif op == "-":
        v = a - b
    elif op == "*":
        v = a * b
    elif op == "/":
        v = a // b
    elif op == "%":
        v = a % b
    elif op == "&":
        v = a & b
    elif op == "|":
        v = a | b
    elif op == "^":
        v = a ^ b
    elif op in ("|+|", "|-|"):
        assert isinstance(t, ir.BitsType)
        lo, hi = bits_range(t)
        v = a + b if op == "|+|" else a - b
        return max(lo, min(hi, v))
    else:  # pragma: no cover
        raise ValueError(op)
    return wrap(v, t) if isinstance(t, ir.BitsType) else v


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


