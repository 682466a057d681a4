"""Declarations: type references (typedefs and newtypes expanded), constants, headers,
structs, enums, errors, match kinds, extern objects and functions, packages and block
prototypes.

"""

from __future__ import annotations

from typing import cast

from lark import Token, Tree

from p4switch import ir
from p4switch.frontend.bindings import (
    BlockB,
    BlockCtx,
    ConstB,
    ExternB,
    FuncB,
    PackageB,
    ProtoB,
    Scope,
    TypeB,
)
from p4switch.frontend.errors import unsupported
from p4switch.frontend.parts import Part
from p4switch.frontend.trees import (
    child_trees,
    core_type,
    name_text,
    subtrees,
)
from p4switch.frontend.types import (
    BOOL,
    BlockProto,
    BlockTypeRef,
    ExternDecl,
    FuncSig,
    PackageDecl,
    SigParam,
    TypeVar,
    parse_int_literal,
)

_INFINT = ir.InfIntType()


def _header_field_type(t: object) -> bool:
    """What a header field may be (spec 7.2.2): bit/int/bool, a serializable enum, or a
    struct of those (recursively)."""
    if isinstance(t, ir.StructType):
        return not t.union and all(_header_field_type(f.type) for f in t.fields)
    return isinstance(t, ir.BitsType | ir.BoolType) or (
        isinstance(t, ir.EnumType) and t.underlying is not None)


class DeclElaborator(Part):
    """Type references and the top-level type declarations: typedefs and newtypes,
    constants, headers, structs, enums, errors, match kinds, externs, packages and block
    prototypes (``parts.decls``)."""

    # ---------------------------------------------------------------- types
    def resolve_type(self, t: Tree, scope: Scope, tparams: dict[str, TypeVar] | None = None):
        tparams = tparams or {}
        if t.data == "type_ref":
            return self.resolve_type(t.children[0], scope, tparams)
        if t.data == "bool_type":
            return BOOL
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
            return self.parts.varbits.varbit_type(t, scope)
        if t.data == "dontcare_type":
            raise self.err(t, unsupported("'_' as a type argument"))
        if t.data == "list_type":  # only as a for statement's collection (loops.py)
            raise self.err(t, unsupported("list<T> outside the collection of a for statement"))
        if t.data == "tuple_type":
            return ir.TupleType(tuple(self.resolve_type_arg(a, scope, tparams)
                                      for a in subtrees(t.children[0])))
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
                tuple(self.resolve_type_arg(a, scope, tparams) for a in subtrees(args_tree))
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
                        # (its type arguments are type variables until a use binds them)
                        return ir.ExternType(name, tuple(cast(ir.Type, TypeVar(p))
                                                         for p in decl.type_params))
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
            if isinstance(b, ConstB) and isinstance(b.value, ir.Const) and isinstance(
                    b.value.value, int):
                return int(b.value.value)
            raise self.err(c, f"width '{c}' is not a compile-time constant")
        return self.const_int(c, scope, "width")

    def const_int(self, t: Tree, scope: Scope, what: str) -> int:
        e = self.parts.exprs.expr(t, scope, BlockCtx("toplevel", "", set()))
        if not isinstance(e, ir.Const) or not isinstance(e.value, int) or isinstance(
            e.value, bool
        ):
            raise self.err(t, f"{what} must be a compile-time integer constant")
        return int(e.value)

    def type_params(self, t: Tree | None) -> list[str]:
        if t is None:
            return []
        out = []
        for a in subtrees(t):
            inner = core_type(a.children[0] if a.data == "type_arg" else a)
            if inner.data != "named_type" or inner.children[1] is not None:
                raise self.err(a, "type parameters must be plain names")
            out.append(str(inner.children[0]))
        return out

    # ---------------------------------------------------------------- simple declarations
    def decl_const_decl(self, d: Tree, scope: Scope | None = None,
                        ctx: BlockCtx | None = None) -> None:
        scope = scope or self.env.globals
        ctx = ctx or self.env.top
        _annos, tref, name, value = d.children
        t = self.resolve_type(tref, scope)
        e = self.parts.exprs.expr_as(value, scope, ctx, t, "constant initializer")

        def constant(x: ir.Expr) -> bool:
            return isinstance(x, ir.Const) or (
                isinstance(x, ir.ListExpr) and all(constant(i) for i in x.items))
        # a struct or header constant is a list of constants (`const S c = {1, 2};`)
        if not (isinstance(e, ir.Const) or (isinstance(e, ir.ListExpr) and isinstance(
                t, ir.StructType | ir.HeaderType) and constant(e))):
            raise self.err(value, f"initializer of constant '{name_text(name)}' is not a "
                                  "compile-time constant")
        self.env.declare(scope, name_text(name), ConstB(e), name)

    def decl_typedef_decl(self, d: Tree) -> None:
        annos, kw, tref, name = d.children
        t = self.resolve_type(tref, self.env.globals)
        if isinstance(t, TypeVar | BlockTypeRef):
            raise self.err(tref, "typedef of this type is not supported")
        # a newtype stands for its type here; its name is kept for P4Info (type_name)
        newtype = name_text(name) if str(kw) == "type" else self.newtype_of(tref, self.env.globals)
        if str(kw) == "type":
            self.env.new_types[newtype] = t
            self.env.new_type_annotations[newtype] = self.parts.annos.annotations(annos)
        self.env.declare(self.env.globals, name_text(name), TypeB(t, newtype), name)
        if not isinstance(t, ir.ExternType):
            self.env.types[name_text(name)] = t

    def fields(self, d: Tree, scope: Scope, header: bool) -> tuple[ir.Field, ...]:
        out = []
        seen = set()
        for f in child_trees(d, "struct_field"):
            annos, tref, fname = f.children
            t = self.resolve_type(tref, scope)
            n = name_text(fname)
            if n in seen:
                raise self.err(fname, f"duplicate field '{n}'")
            seen.add(n)
            if header and not (_header_field_type(t) or isinstance(t, ir.VarbitType)):
                raise self.err(tref, f"header field '{n}' must be bit<W>, int<W>, bool, a "
                                     f"serializable enum or a struct of those, not {t}")
            if isinstance(t, TypeVar | BlockTypeRef | ir.ExternType | ir.VoidType):
                raise self.err(tref, f"field '{n}' cannot have type {t}")
            out.append(ir.Field(n, t, tuple(self.parts.annos.annotations(annos).items()),
                                self.newtype_of(tref, scope)))
        return tuple(out)

    def decl_header_decl(self, d: Tree) -> None:
        annos, name, targs = d.children[0], d.children[1], d.children[2]
        if targs is not None:
            raise self.err(targs, unsupported("generic header"))
        a = self.parts.annos.annotations(annos)
        h = ir.HeaderType(name_text(name), self.fields(d, self.env.globals, True), tuple(a.items()),
                          loc=self.loc(name))
        self.parts.varbits.check_varbit_header(h, d)
        # p4c accepts headers of any width; BMv2 needs bytes, so the pipeline checks
        self.env.declare(self.env.globals, h.name, TypeB(h), name)
        self.env.types[h.name] = h
        if "controller_header" in a:
            self.env.controller_headers[a["controller_header"]] = h

    def decl_struct_decl(self, d: Tree) -> None:
        annos, name, targs = d.children[0], d.children[1], d.children[2]
        if targs is not None:
            raise self.err(targs, unsupported("generic struct"))
        a = self.parts.annos.annotations(annos)
        s = ir.StructType(name_text(name), self.fields(d, self.env.globals, False),
                          tuple(a.items()))
        self.env.declare(self.env.globals, s.name, TypeB(s), name)
        self.env.types[s.name] = s

    def decl_enum_decl(self, d: Tree) -> None:
        annos, tref, name = d.children[0], d.children[1], d.children[2]
        members = child_trees(d, "enum_member")
        underlying = None
        if tref is not None:
            underlying = self.resolve_type(tref, self.env.globals)
            if not isinstance(underlying, ir.BitsType):
                raise self.err(tref, f"enum underlying type must be bit<W> or int<W>, "
                                     f"not {underlying}")
        values: list[tuple[str, int]] = []
        seen: set[str] = set()
        for i, m in enumerate(members):
            mname = name_text(m.children[1])
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
                c = self.parts.exprs.expr_as(init, self.env.globals, self.env.top, underlying,
                                             "enum member value")
                if not isinstance(c, ir.Const):
                    raise self.err(init, "enum member value must be a compile-time constant")
                values.append((mname, int(c.value)))
        e = ir.EnumType(name_text(name), tuple(values), underlying)
        self.parts.annos.annotations(annos)
        self.env.declare(self.env.globals, e.name, TypeB(e), name)
        self.env.types[e.name] = e

    def decl_error_decl(self, d: Tree) -> None:
        self.declare_members(d, self.env.errors, "error")

    def decl_match_kind_decl(self, d: Tree) -> None:
        self.declare_members(d, self.env.match_kinds, "match_kind")

    def declare_members(self, d: Tree, names: list[str], kind: str) -> None:
        """Appends the members of an ``error``/``match_kind`` declaration to ``names`` (the
        spec merges all declarations of each into one set)."""
        for n in d.children:
            if n is None:
                continue
            name = name_text(n)
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
        return FuncSig(name_text(name), tps, self.sig_params(params, scope, tvars), ret, annos)

    def sig_params(self, params: Tree | None, scope: Scope,
                   tvars: dict[str, TypeVar]) -> list[SigParam]:
        out: list[SigParam] = []
        if params is None:
            return out
        for p in params.children:
            _annos, direction, tref, pname, default = p.children
            if default is not None:
                raise self.err(default, unsupported("default parameter value"))
            d = str(direction.children[0]) if direction is not None else ""
            out.append(SigParam(name_text(pname), d, self.resolve_type(tref, scope, tvars)))
        return out

    def decl_extern_object(self, d: Tree) -> None:
        annos, tref = d.children[0], d.children[1]
        inner = core_type(tref)
        if inner.data != "named_type":
            raise self.err(tref, "an extern object needs a type name")
        name = str(inner.children[0])
        tps = self.type_params(inner.children[1])
        tvars = {p: TypeVar(p) for p in tps}
        decl = ExternDecl(name, tps, [], {})
        self.env.declare(self.env.globals, name, ExternB(decl), inner.children[0])
        for m in d.children[2:]:
            if m.data == "constructor":
                cname = str(m.children[1])
                if cname != name:
                    raise self.err(m.children[1], f"constructor name '{cname}' must be the "
                                                  f"extern's name '{name}'")
                decl.ctors.append(FuncSig(name, [], self.sig_params(m.children[2], self.env.globals,
                                                                    tvars), ir.VoidType()))
            elif m.data == "abstract_method":
                raise self.err(m, unsupported("abstract method"))
            else:
                s = self.sig(m.children[1], self.env.globals, tvars,
                             self.parts.annos.annotations(m.children[0]))
                decl.methods.setdefault(s.name, []).append(s)
        self.parts.annos.annotations(annos)

    def decl_extern_function(self, d: Tree) -> None:
        s = self.sig(d.children[1], self.env.globals, {},
                     self.parts.annos.annotations(d.children[0]))
        self.env.declare(self.env.globals, s.name, FuncB([s]), d.children[1])

    def decl_package_decl(self, d: Tree) -> None:
        _annos, name, targs, params = d.children
        tps = self.type_params(targs)
        tvars = {p: TypeVar(p) for p in tps}
        decl = PackageDecl(name_text(name), tps, self.sig_params(params, self.env.globals, tvars))
        self.env.declare(self.env.globals, decl.name, PackageB(decl), name)

    def block_proto(self, kind: str, ttree: Tree) -> BlockProto:
        _annos, name, targs, params = ttree.children
        tps = self.type_params(targs)
        tvars = {p: TypeVar(p) for p in tps}
        return BlockProto(kind, name_text(name), tps,
                          self.sig_params(params, self.env.globals, tvars))

    def decl_parser_proto(self, d: Tree) -> None:
        p = self.block_proto("parser", d.children[0])
        self.env.declare(self.env.globals, p.name, ProtoB(p), d.children[0].children[1])

    def decl_control_proto(self, d: Tree) -> None:
        p = self.block_proto("control", d.children[0])
        self.env.declare(self.env.globals, p.name, ProtoB(p), d.children[0].children[1])
