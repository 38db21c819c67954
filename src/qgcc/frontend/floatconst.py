"""Compile-time float32 arithmetic: literals and constant folding.

Folding must give exactly what the soft-float library computes at run time
(IEEE binary32, round to nearest even, canonical NaN 0x7FFFFFFF), so it uses
numpy's float32, i.e. the host's IEEE hardware, which the library is checked
against bit for bit (tests/native/softfloat_check.c).  Decimal literals are
rounded exactly from the decimal value, never through a binary64 detour,
except where C itself goes through double (unsuffixed literals).
"""

from __future__ import annotations

import re
import warnings
from fractions import Fraction

import numpy as np

NAN = 0x7FFFFFFF
SIGN = 0x80000000
MASK32 = 0xFFFFFFFF

_LIT = re.compile(r"(?P<num>([0-9]+\.[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+)(?P<suf>[A-Za-z_]*)")


class LiteralError(ValueError):
    pass


def _f32(bits: int) -> np.float32:
    return np.array([bits & MASK32], dtype=np.uint32).view(np.float32)[0]


def _bits(x) -> int:
    v = int(np.array([x], dtype=np.float32).view(np.uint32)[0])
    return NAN if is_nan(v) else v


def is_nan(bits: int) -> bool:
    return (bits & 0x7FFFFFFF) > 0x7F800000


def decimal_to_bits(value: Fraction) -> int:
    """The binary32 nearest to an exact non-negative rational (ties to even)."""
    if value == 0:
        return 0
    e = value.numerator.bit_length() - value.denominator.bit_length()
    if Fraction(2) ** e > value:
        e -= 1
    while Fraction(2) ** (e + 1) <= value:
        e += 1
    e = max(e, -126)
    m = round(value / Fraction(2) ** (e - 23))  # round() on a Fraction: half to even
    if m >= 1 << 24:
        m >>= 1
        e += 1
    if e > 127:
        return 0x7F800000
    if m < 1 << 23:  # subnormal (or rounded to zero)
        return m
    return ((e + 127) << 23) | (m - (1 << 23))


def literal(text: str) -> tuple[int, bool]:
    """(bits, is_double) of a floating literal; raises LiteralError for bad suffixes."""
    m = _LIT.fullmatch(text)
    if not m:
        raise LiteralError(f"invalid floating-point constant '{text}'")
    num, suf = m.group("num"), m.group("suf")
    if suf in ("f", "F"):
        return decimal_to_bits(Fraction(num)), False
    if suf in ("l", "L"):
        raise LiteralError(f"'long double' constant '{text}' is not supported; write '{num}f'")
    if suf:
        raise LiteralError(f"invalid suffix '{suf}' on floating-point constant '{text}'")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _bits(np.float32(float(num))), True  # C: the double constant converted to float


def literal_number(text: str) -> str:
    """The number of a floating literal without its suffix."""
    return _LIT.fullmatch(text).group("num")


def from_int(value: int, signed: bool) -> int:
    """(float) of a 32-bit integer value, rounded to nearest even."""
    value &= MASK32
    if signed and value & SIGN:
        value -= 1 << 32
    return _bits(np.float32(value))


def from_int64(value: int, signed: bool) -> int:
    """(float) of a 64-bit integer value, rounded once to nearest even (exact rational)."""
    value &= (1 << 64) - 1
    if signed and value >> 63:
        return decimal_to_bits(Fraction((1 << 64) - value)) | SIGN
    return decimal_to_bits(Fraction(value))


def to_int64(bits: int, signed: bool) -> int:
    """(long long)f / (unsigned long long)f as CUDA's cvt.rzi: truncation, NaN -> 0, saturating
    at the type's limits (negative values -> 0 for unsigned)."""
    if is_nan(bits):
        return 0
    x = Fraction(float(_f32(bits))) if (bits & 0x7F800000) != 0x7F800000 else None
    lo, hi = (-(1 << 63), (1 << 63) - 1) if signed else (0, (1 << 64) - 1)
    if x is None:
        return hi if not bits & SIGN else lo
    v = int(x)  # truncates toward zero
    return min(max(v, lo), hi)


def to_int(bits: int) -> int:
    """(int)f as the machine computes it: truncation, NaN -> 0, saturating (an s32 value)."""
    if is_nan(bits):
        return 0
    x = float(_f32(bits))
    if x >= 2.0 ** 31:
        return 0x7FFFFFFF
    if x < -2.0 ** 31:
        return -0x80000000
    return int(x)


def to_uint(bits: int) -> int:
    """(unsigned)f: truncation, NaN and negatives -> 0, saturating at 0xFFFFFFFF."""
    if is_nan(bits):
        return 0
    x = float(_f32(bits))
    if x <= -1.0:
        return 0
    if x >= 2.0 ** 32:
        return MASK32
    return int(x)


def truth(bits: int) -> bool:
    """A float used as a condition: nonzero (NaN included) is true, +-0 false."""
    return (bits << 1) & MASK32 != 0


def fold(op: str, a: int, b: int) -> int:
    """a op b on bit patterns; comparisons give 0/1 (C semantics, NaN unordered)."""
    x, y = _f32(a), _f32(b)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        if op == "+":
            return _bits(x + y)
        if op == "-":
            return _bits(x - y)
        if op == "*":
            return _bits(x * y)
        if op == "/":
            return _bits(x / y)
        return int({"<": x < y, ">": x > y, "<=": x <= y, ">=": x >= y, "==": x == y, "!=": x != y}[op])
