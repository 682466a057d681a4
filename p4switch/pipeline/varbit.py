"""Code generation for headers with a ``varbit<W>`` field (spec 7.1.6, 13.8.2), general path.

A varbit field's run-time value is the pair ``(length in bits, value)`` (so assignment and
``==`` carry the length; the class default is ``(0, 0)``). The fixed fields before and after
it stay ordinary ints. ``extract(hdr, bits)`` reads the fixed part plus ``bits`` as one
big-endian integer and cuts it with shifts that depend on ``bits``; the header's ``_pack``
writes the fixed fields and the varbit's current length; in a hash or checksum input the
varbit contributes its current length of bits. The fused path refuses these programs
(fused.NotFusable), so only ``BlockGen`` uses this module.

The checks of the two-argument extract, in BMv2 simple_switch's order (1.15.5): ``bits`` not a
multiple of 8 is ``ParserInvalidArgument``, more than W is ``HeaderTooShort``, past the end of
the packet is ``PacketTooShort``; the header is left unchanged by each.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from p4switch import ir

from .emit import BuildError, fpath, header_leaves, mask

if TYPE_CHECKING:  # pragma: no cover
    from .codegen import BlockGen


#: the width ``BlockGen.flatten`` gives a varbit field of a hash/checksum input
VARBIT = -1


def shift_in(acc: str, wv: str, code: str) -> str:
    """One line appending the varbit value ``code`` to the hash input int ``acc`` of
    ``wv`` bits (its current length, MSB first, as BMv2 does)."""
    return f"_vn, _vv = {code}; {acc} = ({acc} << _vn) | _vv; {wv} += _vn"


def split(t: ir.HeaderType) -> tuple[list[ir.Field], ir.Field, list[ir.Field]]:
    """(leaves before the varbit field, the varbit field, leaves after it)."""
    leaves = header_leaves(t)
    i = next(k for k, f in enumerate(leaves) if isinstance(f.type, ir.VarbitType))
    return list(leaves[:i]), leaves[i], list(leaves[i + 1:])


def _joined(fields: list[ir.Field], var: str) -> tuple[str, int]:
    """Code for the fields of header ``var`` concatenated into one int, and its width."""
    parts, shift = [], 0
    for f in reversed(fields):
        fw = ir.type_width(f.type)
        v = f"{var}.{fpath(f.name)}"
        if isinstance(f.type, ir.BitsType) and f.type.signed:
            v = f"({v} & {mask(fw)})"
        elif isinstance(f.type, ir.BoolType):
            v = f"int({v})"
        parts.append(f"({v} << {shift})" if shift else v)
        shift += fw
    return (" | ".join(reversed(parts)) if parts else "0"), shift


def pack_method(t: ir.HeaderType) -> list[str]:
    """The ``_pack`` method of a varbit header's class (class-body indentation)."""
    before, vb, after = split(t)
    fixed = t.min_width
    if fixed % 8:
        raise BuildError(f"header {t.name} has {fixed} bits besides its varbit field, not a "
                         f"whole number of bytes")
    b, _ = _joined(before, "self")
    a, aw = _joined(after, "self")
    return [
        "    def _pack(self):",
        f"        _n, _v = self.{fpath(vb.name)}",
        f"        _x = ((({b}) << _n | _v) << {aw}) | {a}",
        f"        return _x.to_bytes(({fixed} + _n) >> 3, 'big')",
    ]


def gen_extract(g: BlockGen, target: ir.Expr, bits: ir.Expr | None) -> None:
    """``extract(target, bits)`` at ``g``'s current indentation."""
    t = target.type
    assert isinstance(t, ir.HeaderType)
    if bits is None:
        raise BuildError(f"header {t.name} has a varbit field: extract(hdr, bits) is needed")
    before, vb, after = split(t)
    fixed, width = t.min_width, vb.type.max_width  # type: ignore[union-attr]  # split's middle field is the varbit one
    if fixed % 8:
        raise BuildError(f"header {t.name} has {fixed} bits besides its varbit field, not a "
                         f"whole number of bytes")
    n, nb = g.mod.fresh("_vn"), g.mod.fresh("_vb")
    g.w(f"{n} = {g.ex(bits)}")
    g.w(f"if {n} & 7: raise _PErr({g.err('ParserInvalidArgument')})")
    g.w(f"if {n} > {width}: raise _PErr({g.err('HeaderTooShort')})")
    g.w(f"{nb} = ({fixed} + {n}) >> 3")
    g.w(f"if _pos + {nb} > _plen: raise _PErr({g.err('PacketTooShort')})")
    g.extract_target(target)
    g.w(f"_x = int.from_bytes(_pkt[_pos:_pos + {nb}], 'big')")
    shift = 0
    for f in reversed(after):
        fw = ir.type_width(f.type)
        g.w(f"_h.{fpath(f.name)} = {g.unit_field('_x', shift + fw + 1, f.type, fw, shift)}")
        shift += fw
    g.w(f"_h.{fpath(vb.name)} = ({n}, (_x >> {shift}) & ((1 << {n}) - 1))")
    for f in reversed(before):
        fw = ir.type_width(f.type)
        v = f"((_x >> ({n} + {shift})) & {mask(fw)})"
        g.w(f"_h.{fpath(f.name)} = {g.unit_field(v, fw, f.type, fw, 0)}")
        shift += fw
    g.w("_h._v = True")
    g.w(f"_pos += {nb}")
