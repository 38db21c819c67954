"""Reference float32 semantics for the float tests, from numpy and exact rationals.

Independent of the compiler: numpy's float32 is the host's IEEE-754
hardware (round to nearest even, denormals kept); fmaf, which numpy lacks, is
computed exactly with Fractions and rounded once.  The CUDA rules on top of
IEEE (docs/subset.md, "float"): every NaN result is the canonical 0x7FFFFFFF;
(int)/(unsigned) truncate and saturate, NaN -> 0; fminf/fmaxf ignore a NaN
operand and order -0 below +0.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

NAN = 0x7FFFFFFF

SPECIALS = np.array([
    0, 0x80000000, 1, 0x80000001, 0x7FFFFF, 0x807FFFFF, 0x800000, 0x80800000, 0x3F800000, 0xBF800000,
    0x7F7FFFFF, 0xFF7FFFFF, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 0x7F800001, 0x3F800001,
    0x3FFFFFFF, 0x4B000000, 0x4B800000, 0xCF000000, 0x4F000000, 0x4F800000, 0x3F000000, 0x34000000,
    0x33800000, 0x00400000, 0x00000003, 0x3EAAAAAB, 0x4F7FFFFF, 0xCF000001, 0x3FC00000, 0x40490FDB,
], dtype=np.uint32)


def operands(rng: np.random.Generator, n: int) -> np.ndarray:
    """n bit patterns: random, denormal, near 1, specials and their neighbours."""
    r = rng.integers(0, 1 << 32, size=n, dtype=np.uint64).astype(np.uint32)
    kind = rng.integers(0, 8, size=n)
    spec = SPECIALS[rng.integers(0, len(SPECIALS), size=n)]
    out = r.copy()
    out[kind == 0] = spec[kind == 0]
    out[kind == 1] = r[kind == 1] & np.uint32(0x807FFFFF)
    out[kind == 2] = (r[kind == 2] & np.uint32(0x80FFFFFF)) | np.uint32(0x3F000000)
    near = (spec.astype(np.int64) + rng.integers(-2, 3, size=n)) & 0xFFFFFFFF
    out[kind == 3] = near[kind == 3].astype(np.uint32)
    return out


def pairs(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Operand pairs; a third share the first operand's exponent (cancellation, ties)."""
    a, b = operands(rng, n), operands(rng, n)
    same = rng.random(n) < 1 / 3
    mixed = (a & np.uint32(0xFF800000)) ^ (rng.integers(0, 1 << 32, size=n, dtype=np.uint64).astype(np.uint32)
                                           & np.uint32(0x807FFFFF))
    b[same] = mixed[same]
    return a, b


def f(bits: np.ndarray) -> np.ndarray:
    return np.asarray(bits, dtype=np.uint32).view(np.float32)


def canon(x: np.ndarray) -> np.ndarray:
    """float32 results -> bit patterns with CUDA's canonical NaN."""
    bits = np.asarray(x, dtype=np.float32).view(np.uint32).copy()
    bits[np.isnan(x)] = NAN
    return bits


def binary(op: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    x, y = f(a), f(b)
    with np.errstate(all="ignore"):
        return canon({"+": x + y, "-": x - y, "*": x * y, "/": x / y}[op])


def sqrt(a: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        return canon(np.sqrt(f(a)))


def compare(op: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    x, y = f(a), f(b)
    return {"<": x < y, "<=": x <= y, ">": x > y, ">=": x >= y, "==": x == y, "!=": x != y}[op].astype(np.int32)


def to_int(a: np.ndarray) -> np.ndarray:
    x = f(a).astype(np.float64)
    out = np.zeros(len(a), dtype=np.int64)
    ok = ~np.isnan(x)
    out[ok] = np.trunc(np.clip(x[ok], -2.0 ** 31, 2.0 ** 31 - 1))
    return out.astype(np.int32)


def to_uint(a: np.ndarray) -> np.ndarray:
    x = f(a).astype(np.float64)
    out = np.zeros(len(a), dtype=np.int64)
    ok = ~np.isnan(x)
    out[ok] = np.trunc(np.clip(x[ok], 0.0, 2.0 ** 32 - 1))
    return out.astype(np.uint32)


def from_int(v: np.ndarray) -> np.ndarray:
    return canon(np.asarray(v, dtype=np.int32).astype(np.float32))


def from_uint(v: np.ndarray) -> np.ndarray:
    return canon(np.asarray(v, dtype=np.uint32).astype(np.float32))


def minmax(which: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    x, y = f(a), f(b)
    out = np.where(np.isnan(x), b, np.where(np.isnan(y), a, 0)).astype(np.uint32)
    both = np.isnan(x) & np.isnan(y)
    ok = ~np.isnan(x) & ~np.isnan(y)
    neg_a = (a >> np.uint32(31)) == 1
    if which == "min":
        pick_a = (x < y) | ((x == y) & neg_a)
    else:
        pick_a = (x > y) | ((x == y) & ~neg_a)
    out[ok] = np.where(pick_a, a, b)[ok]
    out[both] = NAN
    return out


def _exact(bits: int) -> Fraction:
    s, e, m = bits >> 31, (bits >> 23) & 0xFF, bits & 0x7FFFFF
    v = Fraction(m if e == 0 else m | 0x800000) * Fraction(2) ** ((1 if e == 0 else e) - 150)
    return -v if s else v


def _round(v: Fraction) -> int:
    """The binary32 nearest to v (ties to even); v != 0."""
    sign = 0x80000000 if v < 0 else 0
    v = abs(v)
    e = v.numerator.bit_length() - v.denominator.bit_length()
    if Fraction(2) ** e > v:
        e -= 1
    while Fraction(2) ** (e + 1) <= v:
        e += 1
    e = max(e, -126)
    m = round(v / Fraction(2) ** (e - 23))
    if m >= 1 << 24:
        m >>= 1
        e += 1
    if e > 127:
        return sign | 0x7F800000
    return sign | (m if m < 1 << 23 else ((e + 127) << 23) | (m - (1 << 23)))


def fma_one(a: int, b: int, c: int) -> int:
    x, y, z = (float(f(np.array([v]))[0]) for v in (a, b, c))
    if any(v != v for v in (x, y, z)):
        return NAN
    if x in (float("inf"), float("-inf")) or y in (float("inf"), float("-inf")) or \
            z in (float("inf"), float("-inf")):
        prod = x * y  # float64 inf/nan rules are IEEE's
        r = prod + z
        if r != r:
            return NAN
        return 0x7F800000 if r > 0 else 0xFF800000
    v = _exact(a) * _exact(b) + _exact(c)
    if v == 0:
        psign = (a ^ b) >> 31
        if x * y == 0 and z == 0 and psign == c >> 31:
            return c & 0x80000000  # (+-0) + (+-0) of one sign keeps it
        return 0
    return _round(v)


def fma(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    return np.array([fma_one(int(x), int(y), int(z)) for x, y, z in zip(a, b, c)], dtype=np.uint32)
