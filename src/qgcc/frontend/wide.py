"""64-bit integers (`long long`, `unsigned long long`, `long`) lowered onto register pairs.

A 64-bit value is a `Pair` of two 32-bit values (each a virtual register or a `C`
constant): `lo` holds bits 31..0 and `hi` bits 63..32.  In memory it takes two cells,
the low word first (so an int64 `.npy` buffer's bytes are the cells' bytes, on a
little-endian host).  Add, subtract, the bitwise operators, shifts, compares and
multiply are inlined branch-free sequences of 32-bit ALU instructions (costs in
docs/subset.md); division, remainder and the conversions to and from float call
routines written in the subset itself (`int64.cu`), like the soft-float library.

The code generator calls these functions wherever an operand or result type is
64-bit; 32-bit code is untouched.
"""

from __future__ import annotations


from ..isa import Op
from .bitops import umulhi
from .types import MASK32, IntType, Type, is_wide
from .values import C, KernelGen, Pair, is_c


def const(value: int) -> Pair:
    value &= (1 << 64) - 1
    return Pair(C(value & MASK32), C(value >> 32))


def const_value(p: Pair) -> int | None:
    """The 64-bit pattern of a constant pair, or None."""
    if is_c(p.lo) and is_c(p.hi):
        return (p.lo.value & MASK32) | ((p.hi.value & MASK32) << 32)
    return None


def _C(v: int):
    return C(v)


# ---------------------------------------------------------------- conversions


def widen(g: "KernelGen", v, src: IntType) -> Pair:
    """A 32-bit (or narrower) integer value -> 64 bits: sign-extended when src is signed.
    Register values of char are already sign-extended and bool/uchar are small, so the
    high word is the sign of the register (signed types) or 0."""
    if src.signed:
        return Pair(v, g.alu(Op.SRA, v, _C(31)))
    return Pair(v, _C(0))


def narrow(g: "KernelGen", p: Pair, dst: IntType):
    """64 bits -> a 32-bit or narrower integer type (C: modulo 2^N; bool: != 0)."""
    from .types import UINT
    if dst.kind == "bool":
        return truth(g, p)
    return g.convert(p.lo, UINT, dst)


def truth(g: "KernelGen", p: Pair):
    return g.alu(Op.SNE, g.alu(Op.OR, p.lo, p.hi), _C(0))


def either(g: "KernelGen", p: Pair):
    """Nonzero exactly when p is (for branches: one instruction fewer than truth)."""
    return g.alu(Op.OR, p.lo, p.hi)


# ---------------------------------------------------------------- arithmetic


def add(g: "KernelGen", a: Pair, b: Pair) -> Pair:
    if is_c(a.lo) and not is_c(b.lo):
        a, b = b, a
    lo = g.alu(Op.ADD, a.lo, b.lo)
    carry = _C(0) if is_c(b.lo) and b.lo.value & MASK32 == 0 else g.alu(Op.SLTU, lo, a.lo)
    return Pair(lo, g.alu(Op.ADD, g.alu(Op.ADD, a.hi, b.hi), carry))


def sub(g: "KernelGen", a: Pair, b: Pair) -> Pair:
    if is_c(b.lo) and is_c(b.hi):
        return add(g, a, const(-const_value(b)))
    borrow = g.alu(Op.SLTU, a.lo, b.lo)
    lo = g.alu(Op.SUB, a.lo, b.lo)
    return Pair(lo, g.alu(Op.SUB, g.alu(Op.SUB, a.hi, b.hi), borrow))


def mul(g: "KernelGen", a: Pair, b: Pair) -> Pair:
    """Low 64 bits of the product: lo*lo in full (umulhi for its high word) plus the two
    cross products' low words."""
    if is_c(a.lo) and is_c(a.hi):
        a, b = b, a
    bv = const_value(b)
    if bv is not None and bv & (bv - 1) == 0 and bv:
        return shift(g, "<<", a, _C(bv.bit_length() - 1), False)
    lo = g.alu(Op.MUL, a.lo, b.lo)
    hi = umulhi(g, a.lo, b.lo)
    hi = g.alu(Op.ADD, hi, g.alu(Op.MUL, a.lo, b.hi))
    hi = g.alu(Op.ADD, hi, g.alu(Op.MUL, a.hi, b.lo))
    return Pair(lo, hi)


def bitwise(g: "KernelGen", op: Op, a: Pair, b: Pair) -> Pair:
    return Pair(g.alu(op, a.lo, b.lo), g.alu(op, a.hi, b.hi))


def neg(g: "KernelGen", a: Pair) -> Pair:
    return sub(g, const(0), a)


def select(g: "KernelGen", big, x, y):
    """x when big is 0, y when big is 1 (big a 0/1 value): x ^ ((x ^ y) & -big)."""
    return g.alu(Op.XOR, x, g.alu(Op.AND, g.alu(Op.XOR, x, y), g.alu(Op.MUL, big, _C(-1))))


def shift(g: "KernelGen", op: str, a: Pair, n, signed: bool) -> Pair:
    """a << n, a >> n (arithmetic when signed); n is a 32-bit amount, of which the low 6 bits
    count (x << 65 is x << 1), as the 32-bit shifts use the low 5."""
    if is_c(n):
        k = n.value & 63
        if k == 0:
            return a
        if op == "<<":
            if k >= 32:
                return Pair(_C(0), g.alu(Op.SHL, a.lo, _C(k - 32)))
            hi = g.alu(Op.OR, g.alu(Op.SHL, a.hi, _C(k)), g.alu(Op.SHR, a.lo, _C(32 - k)))
            return Pair(g.alu(Op.SHL, a.lo, _C(k)), hi)
        right = Op.SRA if signed else Op.SHR
        if k >= 32:
            return Pair(g.alu(right, a.hi, _C(k - 32)), g.alu(Op.SRA, a.hi, _C(31)) if signed else _C(0))
        lo = g.alu(Op.OR, g.alu(Op.SHR, a.lo, _C(k)), g.alu(Op.SHL, a.hi, _C(32 - k)))
        return Pair(lo, g.alu(right, a.hi, _C(k)))
    s = g.alu(Op.AND, n, _C(31))
    big = g.alu(Op.AND, g.alu(Op.SHR, n, _C(5)), _C(1))  # the amount's bit 5: a whole word
    back = g.alu(Op.XOR, s, _C(31))  # 31 - s: a word's other part moves by (x >> 1) >> (31 - s)
    if op == "<<":
        lo = g.alu(Op.SHL, a.lo, s)
        hi = g.alu(Op.OR, g.alu(Op.SHL, a.hi, s), g.alu(Op.SHR, g.alu(Op.SHR, a.lo, _C(1)), back))
        return Pair(g.alu(Op.AND, lo, g.alu(Op.ADD, big, _C(-1))), select(g, big, hi, lo))
    right = Op.SRA if signed else Op.SHR
    hi = g.alu(right, a.hi, s)
    lo = g.alu(Op.OR, g.alu(Op.SHR, a.lo, s), g.alu(Op.SHL, g.alu(Op.SHL, a.hi, _C(1)), back))
    top = g.alu(Op.SRA, a.hi, _C(31)) if signed else _C(0)
    return Pair(select(g, big, lo, hi), select(g, big, hi, top))


def arith(g: "KernelGen", op: str, a, b, t: IntType):
    """a op b in the 64-bit type t (a is a Pair; b too except for shifts: a 32-bit amount)."""
    from .types import fold_binary
    if op in ("<<", ">>"):
        av = const_value(a)
        if av is not None and is_c(b):
            return const(fold_binary(op, av, b.value & MASK32, t))
        return shift(g, op, a, b, t.signed)
    av, bv = const_value(a), const_value(b)
    if av is not None and bv is not None:
        return const(fold_binary(op, av, bv, t))
    if op == "+":
        return add(g, a, b)
    if op == "-":
        return sub(g, a, b)
    if op == "*":
        return mul(g, a, b)
    if op in ("&", "|", "^"):
        return bitwise(g, {"&": Op.AND, "|": Op.OR, "^": Op.XOR}[op], a, b)
    if op in ("/", "%"):
        if bv is not None and not t.signed and bv and bv & (bv - 1) == 0:
            k = bv.bit_length() - 1
            if op == "/":
                return shift(g, ">>", a, _C(k), False)
            return bitwise(g, Op.AND, a, const(bv - 1))
        if bv == 1:
            return a if op == "/" else const(0)
        routine = ("__qg_sdivmod64" if t.signed else "__qg_udivmod64")
        return g.call_lib(routine, [a, b, _C(int(op == "%"))])
    raise AssertionError(op)  # pragma: no cover


def compare(g: "KernelGen", op: str, a: Pair, b: Pair, signed: bool):
    """(v, negated) as KernelGen.compare: the truth of a op b is v (0/1), inverted if negated."""
    av, bv = const_value(a), const_value(b)
    if op in ("==", "!="):
        if av is not None:
            a, b = b, a
            bv = av
        x = either(g, a) if bv == 0 else g.alu(Op.OR, g.alu(Op.XOR, a.lo, b.lo), g.alu(Op.XOR, a.hi, b.hi))
        return g.alu(Op.SEQ, x, _C(0)), op == "!="
    if op in (">", "<="):  # b < a
        a, b = b, a
    # a < b: the high words decide, or they are equal and the low words (unsigned) decide
    hi_lt = g.alu(Op.SLT if signed else Op.SLTU, g.reg(a.hi), b.hi)
    hi_eq = g.alu(Op.SEQ, g.reg(a.hi), b.hi)
    lo_lt = g.alu(Op.SLTU, g.reg(a.lo), b.lo)
    lt = g.alu(Op.OR, hi_lt, g.alu(Op.AND, hi_eq, lo_lt))
    return lt, op in (">=", "<=")


def minmax(g: "KernelGen", name: str, a: Pair, b: Pair, signed: bool) -> Pair:
    lt, neg_ = compare(g, "<", a, b, signed)
    pick_b = lt if name == "max" else g.alu(Op.XOR, lt, _C(1))  # min: b unless a < b
    return Pair(select(g, pick_b, g.reg(a.lo), b.lo), select(g, pick_b, g.reg(a.hi), b.hi))


def abs_(g: "KernelGen", a: Pair) -> Pair:
    s = g.alu(Op.SRA, a.hi, _C(31))
    return sub(g, bitwise(g, Op.XOR, a, Pair(s, s)), Pair(s, s))


def is_wide_type(t: Type) -> bool:
    return is_wide(t)


__all__ = ["Pair", "const", "const_value", "widen", "narrow", "truth", "either", "arith", "compare",
           "shift", "minmax", "abs_"]
