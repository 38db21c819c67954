"""Compile-time binary64: unsuffixed literals, conversions and folding of constant doubles.

Folding must give exactly what double.cu computes at run time (IEEE binary64, round to
nearest even, subnormals kept, canonical NaN 0x7FFFFFFFFFFFFFFF), so it uses the host's
IEEE double (Python floats, numpy), which the library is checked against bit for bit
(tests/test_double.py).  Values are 64-bit patterns (Python ints).
"""

from __future__ import annotations

import math
import struct
import warnings

import numpy as np

from . import floatconst

NAN = 0x7FFFFFFFFFFFFFFF
SIGN = 1 << 63
MASK64 = (1 << 64) - 1


def to_py(bits: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", bits & MASK64))[0]


def from_py(x: float) -> int:
    return NAN if x != x else struct.unpack("<Q", struct.pack("<d", x))[0]


def is_nan(bits: int) -> bool:
    return (bits & ~SIGN & MASK64) > 0x7FF0000000000000


def literal(num: str) -> int:
    """The double nearest to a decimal literal (Python's float() rounds correctly)."""
    return from_py(float(num))


def from_int(value: int, signed: bool, bits: int) -> int:
    """(double) of an integer of `bits` bits, rounded once to nearest even."""
    value &= (1 << bits) - 1
    if signed and value >> (bits - 1):
        value -= 1 << bits
    return from_py(float(value))  # int -> float rounds correctly


def from_float(fbits: int) -> int:
    """(double) of a float: exact (a NaN gives the canonical NaN)."""
    if floatconst.is_nan(fbits):
        return NAN
    return from_py(float(np.array([fbits & 0xFFFFFFFF], np.uint32).view(np.float32)[0]))


def to_float(bits: int) -> int:
    """(float) of a double: rounded once (a NaN gives the float's canonical NaN)."""
    if is_nan(bits):
        return floatconst.NAN
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return int(np.array([to_py(bits)], np.float64).astype(np.float32).view(np.uint32)[0])


def to_int(bits: int, lo: int, hi: int) -> int:
    """C's truncation with CUDA's cvt.rzi saturation to [lo, hi]; NaN -> 0."""
    if is_nan(bits):
        return 0
    x = to_py(bits)
    if math.isinf(x):
        return hi if x > 0 else lo
    return min(max(int(x), lo), hi)


def truth(bits: int) -> bool:
    return (bits << 1) & MASK64 != 0


def fold(op: str, a: int, b: int) -> int:
    """a op b on bit patterns; comparisons give 0/1 (C semantics, NaN unordered)."""
    x, y = np.float64(to_py(a)), np.float64(to_py(b))
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        if op in ("+", "-", "*", "/"):
            r = {"+": x + y, "-": x - y, "*": x * y, "/": x / y}[op]
            return from_py(float(r))
        return int({"<": x < y, ">": x > y, "<=": x <= y, ">=": x >= y, "==": x == y, "!=": x != y}[op])
