"""`double` (IEEE binary64) lowered onto register pairs and the routines of double.cu.

A double is a `Pair` (frontend/wide.py) holding its bit pattern, the low word first, in
registers and in two memory cells, like a 64-bit integer.  The sign-bit operations (unary
-, fabs) are one instruction on the high word; everything else calls a routine of
double.cu, written in the subset on `unsigned long long` (costs in docs/subset.md).
Constant operands are folded with the host's IEEE double (doubleconst), which gives the
routines' results bit for bit.

The code generator calls these functions wherever an operand or result type is double.
"""

from __future__ import annotations

from ..isa import Op
from . import doubleconst as DC
from . import wide
from .types import INT, IntType, PtrType, Type, is_double, is_float, is_wide
from .values import C, KernelGen, Pair, is_c

ONE = 0x3FF0000000000000
HI_SIGN = 0x80000000


def _C(v: int):
    return C(v)


def _is_c(v) -> bool:
    return is_c(v)


def const(bits: int) -> Pair:
    return wide.const(bits)


def neg(g: "KernelGen", v: Pair) -> Pair:
    cv = wide.const_value(v)
    if cv is not None:
        return const(cv ^ DC.SIGN)
    return Pair(v.lo, g.alu(Op.XOR, v.hi, _C(HI_SIGN)))


def fabs(g: "KernelGen", v: Pair) -> Pair:
    cv = wide.const_value(v)
    if cv is not None:
        return const(cv & ~DC.SIGN)
    return Pair(v.lo, g.alu(Op.AND, v.hi, _C(0x7FFFFFFF)))


def truth(g: "KernelGen", v: Pair):
    """A double as a condition: 1 unless it is +0 or -0 (NaN is true)."""
    cv = wide.const_value(v)
    if cv is not None:
        return _C(int(DC.truth(cv)))
    return g.alu(Op.SNE, g.alu(Op.OR, v.lo, g.alu(Op.SHL, v.hi, _C(1))), _C(0))


def convert(g: "KernelGen", v, src: Type, dst: Type):
    """C's conversions to and from double: int/float -> double exact (64-bit integers rounded
    once), double -> float rounded once, double -> integers truncating and saturating as CUDA's
    cvt.rzi (NaN -> 0; char and unsigned char through int, then modulo 2^8)."""
    if is_double(src) and is_double(dst):
        return v
    if is_double(dst):
        if is_float(src):
            return const(DC.from_float(v.value)) if _is_c(v) else g.call_lib("__qg_f2d", [v])
        if isinstance(src, PtrType):  # pragma: no cover - sema rejects it
            raise AssertionError(src)
        if is_wide(src):
            cv = wide.const_value(v)
            if cv is not None:
                return const(DC.from_int(cv, src.signed, 64))
            return g.call_lib("__qg_ll2d" if src.signed else "__qg_ull2d", [v])
        if _is_c(v):
            return const(DC.from_int(v.value, src.signed, 32))
        return g.call_lib("__qg_u2d" if src.kind == "unsigned" else "__qg_i2d", [g.convert(v, src, INT)])
    cv = wide.const_value(v)
    if is_float(dst):
        return _C(DC.to_float(cv)) if cv is not None else g.call_lib("__qg_d2f", [v])
    assert isinstance(dst, IntType), dst
    if dst.kind == "bool":
        return truth(g, v)
    if is_wide(dst):
        if cv is not None:
            lo, hi = (-(1 << 63), (1 << 63) - 1) if dst.signed else (0, (1 << 64) - 1)
            return wide.const(DC.to_int(cv, lo, hi))
        return g.call_lib("__qg_d2ll" if dst.signed else "__qg_d2ull", [v])
    if dst.kind == "unsigned":
        return _C(DC.to_int(cv, 0, 0xFFFFFFFF)) if cv is not None else g.call_lib("__qg_d2u", [v])
    r = _C(DC.to_int(cv, -(1 << 31), (1 << 31) - 1)) if cv is not None else g.call_lib("__qg_d2i", [v])
    return g.convert(r, INT, dst)  # int itself, or char/uchar modulo 2^8


def arith(g: "KernelGen", op: str, a: Pair, b: Pair) -> Pair:
    """a op b for + - * /, correctly rounded; a - b is a + (-b) (the sign flip is exact)."""
    av, bv = wide.const_value(a), wide.const_value(b)
    if av is not None and bv is not None:
        return const(DC.fold(op, av, bv))
    if op == "-":
        return g.call_lib("__qg_dadd", [a, neg(g, b)])
    return g.call_lib({"+": "__qg_dadd", "*": "__qg_dmul", "/": "__qg_ddiv"}[op], [a, b])


def compare(g: "KernelGen", op: str, a: Pair, b: Pair):
    """(v, negated) as KernelGen.compare; every comparison with a NaN is false but !=."""
    av, bv = wide.const_value(a), wide.const_value(b)
    if av is not None and bv is not None:
        return _C(DC.fold(op, av, bv)), False
    # __qg_dcmp: 1 (a < b), 2 (a == b), 0 (a > b, or unordered)
    if op in (">", ">="):
        a, b, op = b, a, {">": "<", ">=": "<="}[op]
    r = g.call_lib("__qg_dcmp", [a, b])
    if op == "<":
        return g.alu(Op.AND, r, _C(1)), False
    if op == "<=":
        return g.alu(Op.SNE, r, _C(0)), False
    return g.alu(Op.SHR, r, _C(1)), op == "!="


def func(g: "KernelGen", name: str, args: list) -> Pair:
    """The double functions of sema.DOUBLE_FUNCS (arguments already converted to double)."""
    if name == "fabs":
        return fabs(g, args[0])
    if name in ("__dadd_rn", "__dsub_rn", "__dmul_rn", "__ddiv_rn"):
        return arith(g, {"a": "+", "s": "-", "m": "*", "d": "/"}[name[3]], *args)
    if name in ("fmin", "fmax", "min", "max"):
        return g.call_lib("__qg_dmin" if name.endswith("min") else "__qg_dmax", args)
    if name in ("floor", "ceil"):
        return g.call_lib("__qg_dfloorceil", [args[0], _C(int(name == "ceil"))])
    if name in ("log", "log10"):  # dmath.cu
        return g.call_lib("__qgd_log", [args[0], _C(int(name == "log10"))])
    if name in ("exp", "pow"):
        return g.call_lib("__qgd_" + name, args)
    if name in ("sin", "cos", "tan"):  # dmath.cu: one routine, the function as its second argument
        return g.call_lib("__qgd_trig", [args[0], _C(("sin", "cos", "tan").index(name))])
    if name == "rsqrt":  # the division of 1 by the correctly rounded root, rounded again
        return arith(g, "/", const(DC.from_int(1, True, 32)), g.call_lib("__qg_dsqrt", args))
    routine = {"sqrt": "__qg_dsqrt", "__dsqrt_rn": "__qg_dsqrt", "trunc": "__qg_dtrunc",
               "round": "__qg_dround"}[name]
    return g.call_lib(routine, args)


def increment(g: "KernelGen", v: Pair, delta: int) -> Pair:
    return arith(g, "+", v, const(DC.from_int(delta, True, 32)))


__all__ = ["const", "neg", "fabs", "truth", "convert", "arith", "compare", "func", "increment"]
