"""An independent model of qgcc's double math library (src/qgcc/frontend/dmath.cu, exp): the same
documented algorithm as sequences of numpy binary64 operations (each rounds once to nearest
even, as double.cu's routines do), so the library's results are checked bit for bit; and the
error of a result in ulps of binary64 at the true value (mpmath, 40 digits)."""

from __future__ import annotations

import struct

import mpmath as mp
import numpy as np

F = np.float64
NAN_BITS = 0x7FFFFFFFFFFFFFFF
M64 = (1 << 64) - 1
LN2_HI, LN2_LO = F(0.6931471803691238), F(1.9082149292705877e-10)
SHIFTER = F(6755399441055744.0)  # 1.5 * 2^52
EXP_C = [F(x) for x in (1.6059043836821613e-10, 2.08767569878681e-09, 2.505210838544172e-08,
                        2.755731922398589e-07, 2.7557319223985893e-06, 2.48015873015873e-05,
                        0.0001984126984126984, 0.001388888888888889, 0.008333333333333333,
                        0.041666666666666664, 0.16666666666666666, 0.5)]


def bits(x) -> int:
    return struct.unpack("<Q", struct.pack("<d", float(x)))[0]


def val(b: int) -> F:
    return F(struct.unpack("<d", struct.pack("<Q", b & M64))[0])


def _pow2(e: int) -> F:
    return val((e + 1023) << 52)


def _scale(r: F, k: int) -> F:
    if k > 1000:
        return (r * _pow2(k - 100)) * _pow2(100)
    if k < -1000:
        return (r * _pow2(k + 100)) * _pow2(-100)
    return r * _pow2(k)


def _expdd(hi: F, lo: F) -> F:
    t = hi * F(1.4426950408889634) + SHIFTER
    k = bits(t) & 0xFFFFFFFF
    k = k - (1 << 32) if k >> 31 else k
    kd = t - SHIFTER
    r = (hi - kd * LN2_HI) + (lo - kd * LN2_LO)
    p = EXP_C[0]
    for c in EXP_C[1:]:
        p = p * r + c
    return _scale(F(1.0) + (r + r * r * p), k)


def exp(x: F) -> F:
    x = F(x)
    with np.errstate(all="ignore"):
        if np.isnan(x):
            return val(NAN_BITS)
        if x > F(709.79):
            return F(np.inf)
        if x < F(-745.2):
            return F(0.0)
        return _expdd(x, F(0.0))


# ---------------------------------------------------------------- accuracy against mpmath

def ulp_error(got: float, exact) -> float:
    """|got - exact| in ulps of binary64 at the exact value (subnormal ulp 2^-1074 below 2^-1022)."""
    mp.mp.prec = 200
    e = mp.mpf(exact)
    if abs(e) >= mp.mpf(2) ** 1024 * (1 - mp.mpf(2) ** -54):  # rounds to infinity
        e = mp.inf if e > 0 else -mp.inf
    if mp.isinf(e) or not mp.isfinite(mp.mpf(got)):
        return 0.0 if mp.mpf(got) == e else float("inf")
    if e == 0:
        return 0.0 if got == 0 else float("inf")
    ex = max(int(mp.floor(mp.log(abs(e), 2))), -1022)
    return float(abs(mp.mpf(got) - e) / mp.mpf(2) ** (ex - 52))


def exact_exp(x: float):
    mp.mp.prec = 200
    return mp.exp(mp.mpf(x))
