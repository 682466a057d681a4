"""BMv2 JSON primitives (action bodies, parser ``primitive`` ops) -> IR statements.

Each primitive maps onto the v1model extern call or statement the P4 front end produces for
the same source, so the code generator and the fused path treat both alike. ``_jump`` /
``_jump_if_zero`` (p4c's lowering of an ``if`` inside an action) are folded back into ``If``.
"""

from __future__ import annotations

from dataclasses import dataclass

from p4switch import ir
from p4switch.bmv2json.errors import Bmv2JsonError
from p4switch.bmv2json.exprs import BOOL, Exprs, _hexint, convert
from p4switch.bmv2json.unions import with_siblings_invalid

HASH_ALGORITHM = ir.EnumType("HashAlgorithm", (
    ("crc32", 0), ("crc32_custom", 1), ("crc16", 2), ("crc16_custom", 3), ("random", 4),
    ("identity", 5), ("csum16", 6), ("xor16", 7)))
COUNTER_TYPE = ir.EnumType("CounterType", (("packets", 0), ("bytes", 1),
                                           ("packets_and_bytes", 2)))
METER_TYPE = ir.EnumType("MeterType", (("packets", 0), ("bytes", 1)))
CLONE_TYPE = ir.EnumType("CloneType", (("I2E", 0), ("E2E", 1)))
U32 = ir.BitsType(32)


def _jump_target(p: object, where: str) -> int:
    v = p.get("value") if isinstance(p, dict) else p
    if isinstance(v, str):
        return _hexint(v, where)
    if isinstance(v, int):
        return v
    raise Bmv2JsonError(where, f"jump target {p!r} is not a number")


def enum_const(t: ir.EnumType, member: str, where: str) -> ir.Const:
    try:
        return ir.Const(t.value_of(member), type=t)
    except KeyError:
        raise Bmv2JsonError(where, f"{t.name} has no member {member!r}") from None


@dataclass
class Context:
    """What primitives refer to by name: calculations, learn lists, extern arrays."""

    calculations: dict[str, dict]
    learn_lists: dict[int, dict]
    instances: dict[str, ir.ExternInstance]
    digests: dict[str, ir.StructType]


class Primitives:
    """Converts the primitive list of one action (or parser state)."""

    def __init__(self, x: Exprs, ctx: Context) -> None:
        self.x, self.ctx = x, ctx

    def err(self, msg: str) -> Bmv2JsonError:
        return self.x.err(msg)

    def block(self, prims: list) -> ir.Block:
        if not isinstance(prims, list):
            raise self.err("primitives must be a list")
        return ir.Block(self._range(prims, 0, len(prims)))

    def _range(self, prims: list, lo: int, hi: int) -> list[ir.Stmt]:
        out: list[ir.Stmt] = []
        i = lo
        while i < hi:
            p = prims[i]
            op = p.get("op") if isinstance(p, dict) else None
            if op == "_jump_if_zero":
                cond_json, target = p["parameters"]
                t = _jump_target(target, self.x.where)
                if not i < t <= hi:
                    raise self.err(f"primitive {i}: _jump_if_zero to {t} is not forward")
                cond = convert(self.x.value(cond_json), BOOL)
                end = t
                last = prims[t - 1] if t - 1 > i else None
                if isinstance(last, dict) and last.get("op") == "_jump":
                    end = _jump_target(last["parameters"][0], self.x.where)
                    if not t <= end <= hi:
                        raise self.err(f"primitive {t - 1}: _jump to {end} leaves the if")
                    then = self._range(prims, i + 1, t - 1)
                    else_ = self._range(prims, t, end)
                else:
                    then, else_ = self._range(prims, i + 1, t), []
                out.append(ir.If(cond, ir.Block(then), ir.Block(else_) if else_ else None))
                i = end
                continue
            if op == "_jump":
                raise self.err(f"primitive {i}: a _jump p4c's if/else lowering does not explain")
            out.extend(self.one(p, i))
            i += 1
        return out

    def params(self, p: dict, n: int | tuple[int, ...], i: int) -> list:
        ps = p.get("parameters", [])
        ok = (n,) if isinstance(n, int) else n
        if not isinstance(ps, list) or len(ps) not in ok:
            raise self.err(f"primitive {i} {p.get('op')!r} takes {n} parameters, got "
                           f"{len(ps) if isinstance(ps, list) else ps!r}")
        return ps

    def instance(self, ref: dict, kind: str, i: int) -> ir.ExternInstance:
        name = ref.get("value") if isinstance(ref, dict) else None
        inst = self.ctx.instances.get(name) if isinstance(name, str) else None
        if inst is None or inst.type_name != kind:
            raise self.err(f"primitive {i}: {name!r} is not a {kind}")
        return inst

    def one(self, p: dict, i: int) -> list[ir.Stmt]:
        if not isinstance(p, dict) or "op" not in p:
            raise self.err(f"primitive {i} is not an object with an 'op'")
        op, x = p["op"], self.x
        if op in ("assign", "modify_field", "assign_VL"):
            dst, src = self.params(p, 2, i)
            lhs = x.value(dst)
            return [ir.Assign(lhs, convert(x.value(src), lhs.type))]
        if op in ("assign_header", "assign_union", "assign_header_stack", "assign_union_stack",
                  "copy_header"):
            dst, src = self.params(p, 2, i)
            lhs = x.value(dst)
            return with_siblings_invalid(lhs, ir.Assign(lhs, x.value(src)))
        if op == "mark_to_drop":
            self.params(p, (0, 1), i)
            return [ir.ExternCall(None, "mark_to_drop", [x.layout.var("standard_metadata")])]
        if op in ("add_header", "remove_header"):
            (h,) = self.params(p, 1, i)
            he = x.value(h)
            return with_siblings_invalid(he, ir.HeaderMethod(he, "setValid" if op == "add_header"
                                                             else "setInvalid"))
        if op in ("push", "pop"):
            s, n = self.params(p, 2, i)
            count = x.value(n)
            if not isinstance(count, ir.Const):
                raise self.err(f"primitive {i}: {op} count must be a constant")
            return [ir.StackMethod(x.value(s), "push_front" if op == "push" else "pop_front",
                                   int(count.value))]
        if op == "modify_field_with_hash_based_offset":
            dst, base, calc, mx = self.params(p, 4, i)
            out = x.value(dst)
            algo, data = self.calculation(calc.get("value"), i)
            b = x.value(base)
            m = x.value(mx)
            bt = out.type if isinstance(out.type, ir.BitsType) else U32
            mt = ir.BitsType(max(32, int(m.value).bit_length())) if isinstance(m, ir.Const) \
                else m.type
            return [ir.ExternCall(None, "hash", [out, algo, convert(b, bt), data, convert(m, mt)],
                                  (out.type, bt, data.type, mt))]
        if op == "modify_field_rng_uniform":
            dst, lo, hi = self.params(p, 3, i)
            out = x.value(dst)
            return [ir.ExternCall(None, "random", [out, convert(x.value(lo), out.type),
                                                   convert(x.value(hi), out.type)], (out.type,))]
        if op == "count":
            c, idx = self.params(p, 2, i)
            inst = self.instance(c, "counter", i)
            return [ir.ExternCall(inst.name, "count", [convert(x.value(idx), U32)])]
        if op == "execute_meter":
            m, idx, dst = self.params(p, 3, i)
            inst = self.instance(m, "meter", i)
            out = x.value(dst)
            return [ir.ExternCall(inst.name, "execute_meter", [convert(x.value(idx), U32), out],
                                  (out.type,))]
        if op == "register_read":
            dst, r, idx = self.params(p, 3, i)
            inst = self.instance(r, "register", i)
            out = x.value(dst)
            rt = inst.type_args[0]
            if out.type != rt:
                raise self.err(f"primitive {i}: register_read into a {out.type} from "
                               f"{inst.cp_name} of {rt}")
            return [ir.ExternCall(inst.name, "read", [out, convert(x.value(idx), U32)])]
        if op == "register_write":
            r, idx, src = self.params(p, 3, i)
            inst = self.instance(r, "register", i)
            return [ir.ExternCall(inst.name, "write", [convert(x.value(idx), U32),
                                                       convert(x.value(src), inst.type_args[0])])]
        if op in ("clone_ingress_pkt_to_egress", "clone_egress_pkt_to_egress"):
            sess, fl = self.params(p, (1, 2), i) + ([None] if len(p["parameters"]) == 1 else [])
            ct = enum_const(CLONE_TYPE, "I2E" if "ingress" in op else "E2E", x.where)
            args: list[ir.Expr] = [ct, convert(x.value(sess), U32)]
            if fl is not None:
                return [ir.ExternCall(None, "clone_preserving_field_list",
                                      args + [convert(x.value(fl), ir.BitsType(8))])]
            return [ir.ExternCall(None, "clone", args)]
        if op in ("resubmit", "recirculate"):
            ps = self.params(p, (0, 1), i)
            if not ps:
                return [ir.ExternCall(None, op, [])]
            return [ir.ExternCall(None, f"{op}_preserving_field_list",
                                  [convert(x.value(ps[0]), ir.BitsType(8))])]
        if op == "truncate":
            (n,) = self.params(p, 1, i)
            return [ir.ExternCall(None, "truncate", [convert(x.value(n), U32)])]
        if op == "exit":
            return [ir.Exit()]
        if op == "drop":
            return [ir.ExternCall(None, "mark_to_drop", [x.layout.var("standard_metadata")])]
        if op == "log_msg":
            fmt, vec = self.params(p, 2, i)
            items = [x.value(v) for v in (vec.get("value") or [])]
            args = [x.value(fmt)]
            if items:
                args.append(ir.ListExpr(items, type=ir.TupleType(tuple(e.type for e in items))))
            return [ir.ExternCall(None, "log_msg", args)]
        if op in ("assert", "assume"):
            (c,) = self.params(p, 1, i)
            return [ir.ExternCall(None, op, [convert(x.value(c), BOOL)])]
        if op == "generate_digest":
            recv, ll = self.params(p, 2, i)
            return [self.digest(x.value(recv), x.value(ll), i)]
        raise self.err(f"primitive {i} {op!r} is not supported")

    def calculation(self, name: object, i: int) -> tuple[ir.Const, ir.ListExpr]:
        calc = self.ctx.calculations.get(name) if isinstance(name, str) else None
        if calc is None:
            raise self.err(f"primitive {i}: no calculation {name!r}")
        return self.calc_inputs(calc)

    def calc_inputs(self, calc: dict) -> tuple[ir.Const, ir.ListExpr]:
        where = f'calculations "{calc.get("name")}"'
        algo = calc.get("algo")
        if algo not in dict(HASH_ALGORITHM.members):
            raise Bmv2JsonError(where, f"hash algorithm {algo!r} is not supported")
        items = []
        for e in calc.get("input", []):
            if e.get("type") == "payload":
                raise Bmv2JsonError(where, "checksums over the payload are handled by checksums")
            items.append(self.x.value(e))
        data = ir.ListExpr(items, type=ir.TupleType(tuple(e.type for e in items)))
        return enum_const(HASH_ALGORITHM, algo, where), data

    def digest(self, receiver: ir.Expr, ll: ir.Expr, i: int) -> ir.Stmt:
        lid = int(ll.value) if isinstance(ll, ir.Const) else -1
        learn = self.ctx.learn_lists.get(lid)
        if learn is None:
            raise self.err(f"primitive {i}: no learn list {lid}")
        items = [self.x.value(e) for e in learn.get("elements", [])]
        name = learn.get("name") or f"learn_{lid}"
        st = self.ctx.digests.get(name)
        if st is None:
            st = ir.StructType(name, tuple(ir.Field(f"f{k}", e.type) for k, e in enumerate(items)))
            self.ctx.digests[name] = st
        data = ir.ListExpr(items, type=st)
        return ir.ExternCall(None, "digest", [convert(receiver, U32), data], (st,))
