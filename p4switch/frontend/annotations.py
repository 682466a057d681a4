"""Annotations (P4_16 spec 18): the unstructured ones as the text the front end reads (and
the tokens P4Info prints), the structured ones with their values folded; and the
control-plane names they give objects (``@name``)."""

from __future__ import annotations

from lark import Token, Tree

from p4switch import ir
from p4switch.frontend.bindings import BlockCtx, Scope
from p4switch.frontend.parts import Part
from p4switch.frontend.trees import expr_text, name_text, subtrees, unquote

#: annotations whose text the front end, the pipeline or P4Info reads: p4switch takes them in
#: their unstructured form only (p4c also accepts ``@name["x"]``, ``@brief["b"]``, with effects
#: of its own), and says so rather than ignoring them
UNSTRUCTURED_ONLY = {"name", "id", "priority", "brief", "description", "hidden",
                     "controller_header", "match", "defaultonly", "tableonly",
                     "max_group_size", "support_timeout", "field_list"}


class Annotations(Part):
    """Annotations and the control-plane names they give (``parts.annos``); folds a
    structured annotation's values with ``exprs``."""

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
                if name in UNSTRUCTURED_ONLY:
                    raise self.err(a, f"p4switch reads @{name} in its unstructured form only: "
                                      f"write @{name}(...)")
                out[name] = self.structured_body(body, scope or self.env.globals)
                continue
            text = self.anno_body_text(body) if body is not None else ""
            if prev is not None:  # @a(1) @a(2): the last is read, P4Info lists both
                earlier = (*getattr(prev, "earlier", ()), getattr(prev, "source", ""))
                text = ir.AnnotationText(str(text), getattr(text, "source", ""), earlier)
            out[name] = text
        return out

    def anno_body_text(self, body: Tree | Token) -> ir.AnnotationText:
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
        e = self.parts.exprs.expr(t, scope, BlockCtx("toplevel", "", set()))
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
