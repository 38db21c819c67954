"""The host's IEEE binary64 as the model of qgcc's double routines (double.cu): numpy and
Python floats compute every operation correctly rounded (round to nearest even, subnormals
kept), and C's conversions are written out here with CUDA's saturation rules."""

from __future__ import annotations

import math

import numpy as np

M64 = (1 << 64) - 1
SIGN = 1 << 63
NAN = 0x7FFFFFFFFFFFFFFF  # every NaN result of the machine (docs/subset.md, "double")
FNAN = 0x7FFFFFFF

# Bit patterns that every operation is tried on, in all pairs.
EDGE_DOUBLES = [0.0, -0.0, 5e-324, -5e-324, 2.225073858507201e-308, 2.2250738585072014e-308,
                -2.2250738585072014e-308, 1.7976931348623157e308, -1.7976931348623157e308, math.inf,
                -math.inf, math.nan, 1.0, -1.0, 0.5, 1.5, 2.5, -2.5, 3.0, 0.1, 1 / 3, 1.0000000000000002,
                0.9999999999999999, 4503599627370496.5, 4503599627370497.0, 9007199254740993.0,
                2.0 ** 63, -2.0 ** 63, 2.0 ** 64, 2147483647.5, -2147483648.9, 4294967295.7, 1e300, 1e-300,
                2.0 ** -1022 * 1.5, 8.98846567431158e307, 0.49999999999999994, -0.5, 2.0 ** -1074 * 3,
                3.4028235677973366e38, 3.4028234663852886e38, 1.401298464324817e-45, 7.006492321624085e-46,
                1.1754942807573643e-38]
EDGE_BITS = [int(np.float64(v).view(np.uint64)) for v in EDGE_DOUBLES] + [0x7FF0000000000001, 0xFFF8000000000000]


def bits(x) -> np.ndarray:
    return np.asarray(x, np.float64).view(np.uint64)


def operands(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """n pairs: every pair of edge values, then random bit patterns, random values of nearby
    exponents (cancellation in +/-), products of short significands (exact or halfway
    results) and random subnormals."""
    rng = np.random.default_rng(seed)
    e = np.array(EDGE_BITS, np.uint64)
    a = [np.repeat(e, len(e))]
    b = [np.tile(e, len(e))]
    k = (n - len(e) ** 2) // 4
    a.append(rng.integers(0, 1 << 64, k, dtype=np.uint64))
    b.append(rng.integers(0, 1 << 64, k, dtype=np.uint64))
    x = rng.standard_normal(k) * np.exp2(rng.integers(-60, 60, k))
    a.append(bits(x))
    b.append(bits(x * (1 + rng.standard_normal(k) * np.exp2(rng.integers(-53, -1, k)))))
    short = lambda: rng.integers(1, 1 << 27, k).astype(np.float64) * np.exp2(rng.integers(-40, 10, k))
    a.append(bits(short()))
    b.append(bits(-short()))
    rest = n - sum(len(v) for v in a)
    sub = rng.integers(0, 1 << 53, rest, dtype=np.uint64)
    a.append(sub)
    b.append(rng.integers(0, 1 << 64, rest, dtype=np.uint64) >> np.uint64(rng.integers(0, 12)))
    return np.concatenate(a), np.concatenate(b)


def canon(r: np.ndarray) -> np.ndarray:
    """Results as the machine gives them: every NaN is the canonical NaN."""
    r = np.asarray(r, np.float64)
    return np.where(np.isnan(r), np.uint64(NAN), r.view(np.uint64))


def to_float_bits(r: np.ndarray) -> np.ndarray:
    f = np.asarray(r, np.float64).astype(np.float32)
    return np.where(np.isnan(f), np.uint32(FNAN), f.view(np.uint32)).astype(np.uint64)


def d2int(x: float, lo: int, hi: int) -> int:
    """C's truncation with CUDA's cvt.rzi saturation: NaN -> 0, beyond the range -> its end."""
    if x != x:
        return 0
    if math.isinf(x):
        return hi if x > 0 else lo
    return min(max(int(x), lo), hi)


def round_half_away(x: float) -> float:
    if x != x or math.isinf(x):
        return x
    r = math.floor(abs(x))
    if abs(x) - r >= 0.5:  # exact: x - floor(x) is a double
        r += 1
    return math.copysign(float(r), x)


def fminmax(x: np.ndarray, y: np.ndarray, least: bool) -> np.ndarray:
    """C's fmin/fmax with CUDA's zero rule: a NaN operand is ignored, -0 is below +0."""
    xl = (x < y) | ((x == y) & np.signbit(x) & ~np.signbit(y))  # x is the smaller
    pick_x = xl if least else ~xl & ~((x == y) & (np.signbit(x) == np.signbit(y)) & False)
    if not least:
        pick_x = (y < x) | ((x == y) & np.signbit(y) & ~np.signbit(x)) | (x == y) & (np.signbit(x) == np.signbit(y))
    r = np.where(pick_x, x, y)
    r = np.where(np.isnan(x), y, r)
    return np.where(np.isnan(y), x, r)


def model(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The results (COLUMNS) NATIVE_MAIN (tests/test_double.py) prints for each operand pair."""
    x, y = a.view(np.float64), b.view(np.float64)
    with np.errstate(all="ignore"):
        cols = [canon(x + y), canon(x - y), canon(x * y), canon(x / y), canon(np.sqrt(x)),
                (x < y).astype(np.uint64), (x <= y).astype(np.uint64), (x == y).astype(np.uint64),
                canon(fminmax(x, y, True)), canon(fminmax(x, y, False)),
                canon((b & np.uint64(0xFFFFFFFF)).astype(np.uint32).view(np.float32).astype(np.float64)),
                to_float_bits(x)]
        xs = [float(v) for v in x]
        cols.append(bits([float(int(v)) for v in a]))  # Python's int -> float rounds correctly
        cols.append(bits([float(int(v) - (1 << 64) if v >> 63 else int(v)) for v in a]))
        cols.append(np.array([d2int(v, 0, M64) for v in xs], np.uint64))
        cols.append(np.array([d2int(v, -(1 << 63), (1 << 63) - 1) & M64 for v in xs], np.uint64))
        cols.append(np.array([d2int(v, -(1 << 31), (1 << 31) - 1) & M64 for v in xs], np.uint64))
        cols.append(np.array([d2int(v, 0, (1 << 32) - 1) for v in xs], np.uint64))
        cols += [canon(np.trunc(x)), canon(np.floor(x)), canon(np.ceil(x)),
                 canon(np.array([round_half_away(v) for v in xs]))]
        low = a & np.uint64(0xFFFFFFFF)
        cols += [bits(low.astype(np.float64)), bits(low.astype(np.uint32).view(np.int32).astype(np.float64))]
    return np.stack(cols, 1)


COLUMNS = ["add", "sub", "mul", "div", "sqrt", "lt", "le", "eq", "fmin", "fmax", "f2d", "d2f", "ull2d",
           "ll2d", "d2ull", "d2ll", "d2i", "d2u", "trunc", "floor", "ceil", "round", "u2d", "i2d"]
