"""Exact semantics of the float instructions (FADD ... U2F) on binary32 bit patterns.

The reference emulator executes the float opcodes with these functions.  Every
arithmetic result is computed exactly with Python integers (a value is an integer
mantissa times a power of two) and rounded once to binary32, to nearest even, with
subnormals kept and overflow to infinity: no float of the host is involved, so the
model is independent of the numpy/Fraction reference the tests compare it with.

CUDA's rules on top of IEEE 754: every NaN result is the canonical 0x7FFFFFFF;
F2I/F2U truncate toward zero, saturate out-of-range values and give 0 for NaN;
FMIN/FMAX return the other operand when one is NaN (canonical NaN when both are)
and order -0 below +0; the compares are C's (false on NaN, except FSNE).
"""

from __future__ import annotations

from .isa import Op

MASK32 = 0xFFFFFFFF
NAN = 0x7FFFFFFF
INF = 0x7F800000
SIGN = 0x80000000


# The float instructions the compiled network executes (link/blocks/fpu.py, link/blocks/ffma.py):
# every float opcode of the ISA; the code generator emits them unless --soft-float.
IN_NETWORK = frozenset({Op.FADD, Op.FSUB, Op.FMUL, Op.FFMA, Op.FMIN, Op.FMAX, Op.FSLT, Op.FSLE, Op.FSGT, Op.FSGE, Op.FSEQ,
                        Op.F2I, Op.F2U, Op.I2F, Op.U2F,
                        Op.FSNE})


def is_nan(a: int) -> bool:
    return (a & 0x7FFFFFFF) > INF


def is_inf(a: int) -> bool:
    return (a & 0x7FFFFFFF) == INF


def _parts(a: int) -> tuple[int, int, int]:
    """(sign, mantissa, exponent) with |value| = mantissa * 2**exponent (finite a)."""
    e, m = (a >> 23) & 0xFF, a & 0x7FFFFF
    return a >> 31, (m if e == 0 else m | 0x800000), (1 if e == 0 else e) - 150


def round_pack(sign: int, mant: int, exp: int) -> int:
    """The binary32 nearest to (-1)**sign * mant * 2**exp, ties to even (mant > 0)."""
    # Bring the mantissa to 24 significant bits (or fewer, at the subnormal exponent -149).
    shift = max(mant.bit_length() - 24, -149 - exp)
    if shift > 0:
        q, r = mant >> shift, mant & ((1 << shift) - 1)
        half = 1 << (shift - 1)
        if r > half or (r == half and q & 1):
            q += 1
        mant, exp = q, exp + shift
    else:
        mant, exp = mant << -shift, exp + shift
    if mant >> 24:  # rounding carried into a 25th bit
        mant, exp = mant >> 1, exp + 1
    if mant == 0:
        return sign << 31
    if mant < 1 << 23:  # subnormal (exp is -149)
        return (sign << 31) | mant
    field = exp + 150
    if field >= 255:
        return (sign << 31) | INF
    return (sign << 31) | (field << 23) | (mant & 0x7FFFFF)


def _exact_sum(s1: int, m1: int, e1: int, s2: int, m2: int, e2: int) -> tuple[int, int, int]:
    """(-1)^s1 m1 2^e1 + (-1)^s2 m2 2^e2 as (sign, mant >= 0, exp)."""
    e = min(e1, e2)
    v = (-m1 if s1 else m1) << (e1 - e)
    v += (-m2 if s2 else m2) << (e2 - e)
    return (1 if v < 0 else 0), abs(v), e


def fadd(a: int, b: int) -> int:
    if is_nan(a) or is_nan(b):
        return NAN
    if is_inf(a) or is_inf(b):
        if is_inf(a) and is_inf(b) and (a ^ b) & SIGN:
            return NAN
        return a if is_inf(a) else b
    sa, ma, ea = _parts(a)
    sb, mb, eb = _parts(b)
    s, m, e = _exact_sum(sa, ma, ea, sb, mb, eb)
    if m == 0:  # exact zero: -0 only for (-0) + (-0)
        return SIGN if sa and sb else 0
    return round_pack(s, m, e)


def fmul(a: int, b: int) -> int:
    if is_nan(a) or is_nan(b):
        return NAN
    sign = (a ^ b) >> 31
    if is_inf(a) or is_inf(b):
        if (a & 0x7FFFFFFF) == 0 or (b & 0x7FFFFFFF) == 0:
            return NAN
        return (sign << 31) | INF
    _, ma, ea = _parts(a)
    _, mb, eb = _parts(b)
    if ma == 0 or mb == 0:
        return sign << 31
    return round_pack(sign, ma * mb, ea + eb)


def ffma(a: int, b: int, c: int) -> int:
    """a * b + c with one rounding."""
    if is_nan(a) or is_nan(b) or is_nan(c):
        return NAN
    psign = (a ^ b) >> 31
    if is_inf(a) or is_inf(b):
        if (a & 0x7FFFFFFF) == 0 or (b & 0x7FFFFFFF) == 0:
            return NAN
        if is_inf(c) and (c >> 31) != psign:
            return NAN
        return (psign << 31) | INF
    if is_inf(c):
        return c
    _, ma, ea = _parts(a)
    _, mb, eb = _parts(b)
    sc, mc, ec = _parts(c)
    s, m, e = _exact_sum(psign, ma * mb, ea + eb, sc, mc, ec)
    if m == 0:
        return SIGN if (psign and sc) else 0  # exact zero; both zero with sign 1 keep -0
    return round_pack(s, m, e)


def _less(a: int, b: int) -> bool:
    """a < b for non-NaN patterns (-0 == +0)."""
    if (a | b) & 0x7FFFFFFF == 0:
        return False
    sa, sb = a >> 31, b >> 31
    if sa != sb:
        return bool(sa)
    return a > b if sa else a < b


def compare(op: str, a: int, b: int) -> int:
    if is_nan(a) or is_nan(b):
        return int(op == "ne")
    eq = a == b or (a | b) & 0x7FFFFFFF == 0
    return int({"lt": _less(a, b), "le": _less(a, b) or eq, "gt": _less(b, a), "ge": _less(b, a) or eq,
                "eq": eq, "ne": not eq}[op])


def fminmax(want_max: bool, a: int, b: int) -> int:
    if is_nan(a):
        return NAN if is_nan(b) else b
    if is_nan(b):
        return a

    def before(x, y):  # x orders before y, -0 before +0
        return (bool(x >> 31) and not y >> 31) or _less(x, y)
    if want_max:
        return b if before(a, b) else a
    return b if before(b, a) else a


def f2i(a: int) -> int:
    if is_nan(a):
        return 0
    if is_inf(a):
        return 0x80000000 if a >> 31 else 0x7FFFFFFF
    s, m, e = _parts(a)
    v = m << e if e >= 0 else m >> -e
    v = -v if s else v
    return max(-(1 << 31), min((1 << 31) - 1, v)) & MASK32


def f2u(a: int) -> int:
    if is_nan(a):
        return 0
    if is_inf(a):
        return 0 if a >> 31 else MASK32
    s, m, e = _parts(a)
    v = m << e if e >= 0 else m >> -e
    return 0 if s else min(MASK32, v)


def i2f(x: int, signed: bool) -> int:
    x &= MASK32
    s = 0
    if signed and x >> 31:
        s, x = 1, (1 << 32) - x
    return round_pack(s, x, 0) if x else 0
