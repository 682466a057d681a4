"""Where BMv2 JSON's flat header instances live in the IR's three v1model parameters.

BMv2 JSON has no structs: every header, metadata instance, stack and union is a global
instance, and a field is ``[instance, field]``. The IR's blocks take ``hdr``, ``meta`` and
``standard_metadata``, so the instances are laid out as:

* ``hdr``: one field per non-metadata header instance (stack elements and union members are
  reached through their stack / union, which are fields too);
* ``meta``: one flat field per field of every metadata instance but standard_metadata, named
  ``<instance>.<field>`` (flat, so ``@field_list`` preservation sees each one);
* ``standard_metadata``: the instance itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from p4switch import ir
from p4switch.bmv2json.errors import Bmv2JsonError

HDR, META, SM = "hdr", "meta", "standard_metadata"
VALID = "$valid$"


def _field_type(where: str, f: list) -> ir.Type:
    if len(f) < 2:
        raise Bmv2JsonError(where, f"field {f!r} needs [name, width(, signed)]")
    name, width = f[0], f[1]
    if width == "*":
        return ir.VarbitType(0)  # max_length comes from the header type
    if not isinstance(width, int) or width < 0:
        raise Bmv2JsonError(where, f"field {name!r} has width {width!r}")
    return ir.BitsType(width, bool(f[2]) if len(f) > 2 else False)


def field_type(t: ir.Type, name: str) -> ir.Type:
    """The type of field ``name`` of header, struct or union type ``t``; KeyError when it has
    no such field (or ``t`` has no fields)."""
    if isinstance(t, ir.HeaderType | ir.StructType):
        return t.field_type(name)
    raise KeyError(name)


def fields_of(t: ir.Type) -> tuple[ir.Field, ...]:
    """The fields of header, struct or union type ``t`` (TypeError for another type: the
    loader reports it as malformed JSON)."""
    if isinstance(t, ir.HeaderType | ir.StructType):
        return t.fields
    raise TypeError(f"{t} has no fields")


def elem_type(t: ir.Type) -> ir.Type:
    """The element type of header (union) stack type ``t`` (TypeError for another type)."""
    if isinstance(t, ir.StackType):
        return t.elem
    raise TypeError(f"{t} is not a header stack")


@dataclass
class Layout:
    """The three parameter types and how to reach each JSON instance (``build_layout`` sets
    the types; the defaults are empty)."""

    header_types: dict[str, ir.HeaderType] = field(default_factory=dict)
    hdr_t: ir.StructType = ir.StructType("headers", ())
    meta_t: ir.StructType = ir.StructType("metadata", ())
    sm_t: ir.StructType = ir.StructType("standard_metadata_t", ())
    #: header instance name -> (kind, data): ("header", type), ("meta", type),
    #: ("sm", None), ("stack_elem", (stack, index)), ("union_member", (union, member)),
    #: ("union_stack_elem", (stack, index)): data's type depends on kind
    where: dict[str, tuple[str, Any]] = field(default_factory=dict)
    stacks: dict[str, ir.StackType] = field(default_factory=dict)
    unions: dict[str, ir.StructType] = field(default_factory=dict)
    union_stacks: dict[str, ir.StackType] = field(default_factory=dict)
    meta_fields: dict[tuple[str, str], ir.Field] = field(default_factory=dict)

    # -- expressions -------------------------------------------------------------------------
    def var(self, which: str) -> ir.Var:
        t = {HDR: self.hdr_t, META: self.meta_t, SM: self.sm_t}[which]
        return ir.Var(which, type=t)

    def header(self, name: str, where: str) -> ir.Expr:
        """The header (or stack, or union) instance ``name`` as an IR l-value."""
        hdr = self.var(HDR)
        if name in self.stacks:
            return ir.Member(hdr, name, type=self.stacks[name])
        if name in self.unions and self.where.get(name, ("",))[0] != "union_stack_elem":
            return ir.Member(hdr, name, type=self.unions[name])
        if name in self.union_stacks:
            return ir.Member(hdr, name, type=self.union_stacks[name])
        kind, data = self.where.get(name, ("?", None))
        if kind == "header":
            return ir.Member(hdr, name, type=self.hdr_t.field_type(name))
        if kind == "stack_elem":
            stack, idx = data
            st = self.stacks[stack]
            return ir.StackElem(ir.Member(hdr, stack, type=st), ir.Const(idx, type=ir.BitsType(32)),
                                type=st.elem)
        if kind == "union_stack_elem":
            stack, idx = data
            st = self.union_stacks[stack]
            return ir.StackElem(ir.Member(hdr, stack, type=st),
                                ir.Const(idx, type=ir.BitsType(32)), type=st.elem)
        if kind == "union_member":
            union, member = data
            base = self.header(union, where)
            return ir.Member(base, member, type=field_type(base.type, member))
        if kind == "sm":
            return self.var(SM)
        raise Bmv2JsonError(where, f"{name!r} is not a header instance")

    def field(self, inst: str, fname: str, where: str) -> ir.Expr:
        kind, data = self.where.get(inst, ("?", None))
        if kind == "meta":
            f = self.meta_fields.get((inst, fname))
            if f is None:
                raise Bmv2JsonError(where, f"metadata {inst!r} has no field {fname!r}")
            return ir.Member(self.var(META), f.name, type=f.type)
        if kind == "sm":
            try:
                return ir.Member(self.var(SM), fname, type=self.sm_t.field_type(fname))
            except KeyError:
                raise Bmv2JsonError(where, f"standard_metadata has no field {fname!r}") from None
        h = self.header(inst, where)
        if fname == VALID:
            return ir.IsValid(h, type=ir.BoolType())
        try:
            t = field_type(h.type, fname)
        except KeyError:
            raise Bmv2JsonError(where, f"header {inst!r} has no field {fname!r}") from None
        return ir.Member(h, fname, type=t)


def build_layout(doc: dict) -> Layout:
    lay = Layout()
    raw_types: dict[str, list] = {}
    for i, ht in enumerate(doc.get("header_types", [])):
        where = f'header_types[{i}] "{ht.get("name")}"'
        raw_types[ht["name"]] = ht.get("fields", [])
        fields = []
        for f in ht.get("fields", []):
            t = _field_type(where, f)
            if isinstance(t, ir.VarbitType):
                t = ir.VarbitType(int(ht.get("max_length", 0) or 0) * 8 - sum(
                    g[1] for g in ht["fields"] if g[1] != "*"))
            fields.append(ir.Field(f[0], t))
        lay.header_types[ht["name"]] = ir.HeaderType(ht["name"], tuple(fields))
    by_id: dict[int, dict] = {}
    hdr_fields: list[ir.Field] = []
    meta_fields: list[ir.Field] = []
    sm_t: ir.StructType | None = None
    for i, h in enumerate(doc.get("headers", [])):
        where = f'headers[{i}] "{h.get("name")}"'
        by_id[h["id"]] = h
        ht = lay.header_types.get(h.get("header_type"))
        if ht is None:
            raise Bmv2JsonError(where, f"unknown header_type {h.get('header_type')!r}")
        name = h["name"]
        if name == SM:
            lay.where[name] = ("sm", None)
            # parser_error holds an error, as in v1model.p4 (BMv2 JSON: 32 bits)
            sm_t = ir.StructType("standard_metadata_t", tuple(
                ir.Field(f.name, ir.ErrorType()) if f.name == "parser_error" else f
                for f in ht.fields if f.name != "_padding"))
        elif h.get("metadata"):
            lay.where[name] = ("meta", ht)
            for f in ht.fields:
                mf = ir.Field(f"{name}.{f.name}", f.type)
                lay.meta_fields[(name, f.name)] = mf
                meta_fields.append(mf)
        else:
            lay.where[name] = ("header", ht)
    members: set[str] = set()
    for i, s in enumerate(doc.get("header_stacks", [])):
        where = f'header_stacks[{i}] "{s.get("name")}"'
        ht = lay.header_types.get(s.get("header_type"))
        if ht is None:
            raise Bmv2JsonError(where, f"unknown header_type {s.get('header_type')!r}")
        lay.stacks[s["name"]] = ir.StackType(ht, int(s["size"]))
        for k, hid in enumerate(s.get("header_ids", [])):
            lay.where[by_id[hid]["name"]] = ("stack_elem", (s["name"], k))
            members.add(by_id[hid]["name"])
    union_types: dict[str, ir.StructType] = {}
    for i, u in enumerate(doc.get("header_union_types", [])):
        where = f'header_union_types[{i}] "{u.get("name")}"'
        fs = []
        for m, tname in u.get("headers", []):
            if tname not in lay.header_types:
                raise Bmv2JsonError(where, f"unknown header_type {tname!r}")
            fs.append(ir.Field(m, lay.header_types[tname]))
        union_types[u["name"]] = ir.StructType(u["name"], tuple(fs), union=True)
    for i, u in enumerate(doc.get("header_unions", [])):
        where = f'header_unions[{i}] "{u.get("name")}"'
        ut = union_types.get(u.get("union_type"))
        if ut is None:
            raise Bmv2JsonError(where, f"unknown union_type {u.get('union_type')!r}")
        lay.unions[u["name"]] = ut
        for f, hid in zip(ut.fields, u.get("header_ids", []), strict=False):
            lay.where[by_id[hid]["name"]] = ("union_member", (u["name"], f.name))
            members.add(by_id[hid]["name"])
    union_ids = {u["id"]: u["name"] for u in doc.get("header_unions", [])}
    in_stacks: set[str] = set()
    for i, us in enumerate(doc.get("header_union_stacks", [])):
        where = f'header_union_stacks[{i}] "{us.get("name")}"'
        ut = union_types.get(us.get("union_type"))
        if ut is None:
            raise Bmv2JsonError(where, f"unknown union_type {us.get('union_type')!r}")
        lay.union_stacks[us["name"]] = ir.StackType(ut, int(us["size"]))
        for k, uid in enumerate(us.get("header_union_ids", [])):
            if uid not in union_ids:
                raise Bmv2JsonError(where, f"unknown header union id {uid!r}")
            lay.where[union_ids[uid]] = ("union_stack_elem", (us["name"], k))
            in_stacks.add(union_ids[uid])
    for name, (kind, ht) in list(lay.where.items()):
        if kind == "header" and name not in members:
            hdr_fields.append(ir.Field(name, ht))
    for name in lay.stacks:
        hdr_fields.append(ir.Field(name, lay.stacks[name]))
    for name in lay.unions:
        if name not in in_stacks:
            hdr_fields.append(ir.Field(name, lay.unions[name]))
    for name in lay.union_stacks:
        hdr_fields.append(ir.Field(name, lay.union_stacks[name]))
    if sm_t is None:
        raise Bmv2JsonError("headers", "no standard_metadata instance (not a v1model program?)")
    lay.sm_t = sm_t
    lay.hdr_t = ir.StructType("headers", tuple(hdr_fields))
    lay.meta_t = ir.StructType("metadata", tuple(meta_fields))
    return lay


def with_field_lists(lay: Layout, doc: dict) -> None:
    """Mark the metadata fields of each ``field_lists`` entry ``@field_list(id)``, which is how
    the pipeline knows what resubmit/recirculate/clone preserve."""
    marks: dict[str, list[str]] = {}
    for i, fl in enumerate(doc.get("field_lists", [])):
        for e in fl.get("elements", []):
            if e.get("type") != "field":
                raise Bmv2JsonError(f'field_lists[{i}] "{fl.get("name")}"',
                                    f"element {e!r} is not a field")
            inst, fname = e["value"]
            mf = lay.meta_fields.get((inst, fname))
            if mf is not None:
                marks.setdefault(mf.name, []).append(str(fl["id"]))
    if not marks:
        return
    fields = []
    for f in lay.meta_t.fields:
        if f.name in marks:
            f = ir.Field(f.name, f.type, (("field_list", ", ".join(marks[f.name])),))
            lay.meta_fields = {k: (f if v.name == f.name else v)
                               for k, v in lay.meta_fields.items()}
        fields.append(f)
    lay.meta_t = ir.StructType(lay.meta_t.name, tuple(fields))
