"""An independent model of qgcc's double math library (src/qgcc/frontend/dmath.cu: exp, log,
log10, pow, sin, cos, tan): the same documented algorithms as sequences of numpy binary64
operations (each rounds once to nearest even, as double.cu's routines do), so the library's
results are checked bit for bit; and the error of a result in ulps of binary64 at the true
value (mpmath, 40 digits)."""

from __future__ import annotations

import struct

import mpmath as mp
import numpy as np

F = np.float64
NAN_BITS = 0x7FFFFFFFFFFFFFFF
M64 = (1 << 64) - 1
LN2_HI, LN2_LO = F(0.6931471803691238), F(1.9082149292705877e-10)
SHIFTER = F(6755399441055744.0)  # 1.5 * 2^52
SPLIT = F(134217729.0)  # 2^27 + 1: Veltkamp's split into 26 + 27 bits
LOG_C = [F(x) for x in (0.09523809523809523, 0.10526315789473684, 0.11764705882352941,
                        0.13333333333333333, 0.15384615384615385, 0.18181818181818182,
                        0.2222222222222222, 0.2857142857142857, 0.4, 0.6666666666666666)]
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


def _logdd(x: F, dd: bool) -> tuple[F, F]:
    u = bits(x)
    k = 0
    if u >> 52 == 0:
        u = bits(x * F(18014398509481984.0))
        k = -54
    k += (u >> 52) - 1023
    mb = (u & 0x000FFFFFFFFFFFFF) | 0x3FF0000000000000
    if mb > 0x3FF6A09E667F3BCC:
        mb -= 0x0010000000000000
        k += 1
    f = val(mb) - F(1.0)
    s = f / (F(2.0) + f)
    z = s * s
    R = LOG_C[0]
    for c in LOG_C[1:]:
        R = R * z + c
    R = R * z
    hfsq = F(0.5) * (f * f)
    kd = F(k)
    shared = s * (hfsq + R) + kd * LN2_LO
    if not dd:
        return kd * LN2_HI + (f - (hfsq - shared)), F(0.0)
    c = SPLIT * f
    fh = c - (c - f)
    fl = f - fh
    qh = f * f
    ql = ((fh * fh - qh) + F(2.0) * (fh * fl)) + fl * fl
    h2 = F(0.5) * qh
    a1 = kd * LN2_HI
    a = a1 + f
    av = a - a1
    ae = (a1 - (a - av)) + (f - av)
    b = a - h2
    bv = b - a
    be = (a - (b - bv)) - (h2 + bv)
    tail = ((ae + be) - F(0.5) * ql) + shared
    hi = b + tail
    return hi, tail - (hi - b)


def log(x: F, base10: bool = False) -> F:
    x = F(x)
    u = bits(x)
    if np.isnan(x) or (u >> 63 and (u << 1) & M64):
        return val(NAN_BITS)
    if (u << 1) & M64 == 0:
        return F(-np.inf)
    if np.isinf(x):
        return x
    r, lo = _logdd(x, base10)
    if base10:
        c = F(0.4342944819032518)
        return r * c + (lo * c + r * F(1.098319650216765e-17))
    return r


def log10(x: F) -> F:
    return log(x, True)


def _intkind(y: int) -> int:
    e = ((y >> 52) & 0x7FF) - 1075
    if e >= 1:
        return 2
    if e < -52:
        return 2 if (y << 1) & M64 == 0 else 0
    sig = (y & 0x000FFFFFFFFFFFFF) | 0x0010000000000000
    if e == 0:
        return 1 if sig & 1 else 2
    if (sig << (64 + e)) & M64:
        return 0
    return 1 if (sig >> -e) & 1 else 2


def pow(x: F, y: F) -> F:
    x, y = F(x), F(y)
    ux, uy = bits(x), bits(y)
    if (uy << 1) & M64 == 0 or ux == 0x3FF0000000000000:
        return F(1.0)
    if np.isnan(x) or np.isnan(y):
        return val(NAN_BITS)
    kind = _intkind(uy)
    sign = 1 << 63 if ux >> 63 and kind == 1 else 0
    ax = ux & ~(1 << 63)
    yneg = uy >> 63
    if np.isinf(y):
        if ax == 0x3FF0000000000000:
            return F(1.0)
        return F(np.inf) if (ax > 0x3FF0000000000000) != bool(yneg) else F(0.0)
    if ax == 0 or ax == 0x7FF0000000000000:
        return val(sign | (0x7FF0000000000000 if (ax == 0) == bool(yneg) else 0))
    if ux >> 63 and kind == 0:
        return val(NAN_BITS)
    if ax == 0x3FF0000000000000:
        return val(sign | 0x3FF0000000000000)
    hi, lo = _logdd(val(ax), True)
    with np.errstate(over="ignore"):  # y * hi beyond the range: the result is inf or 0
        ph = y * hi
    if ph > F(709.79):
        r = F(np.inf)
    elif ph < F(-745.2):
        r = F(0.0)
    else:
        cy = SPLIT * y
        yh = cy - (cy - y)
        yl = y - yh
        ch = SPLIT * hi
        hh = ch - (ch - hi)
        hl = hi - hh
        pl = (((yh * hh - ph) + yh * hl) + yl * hh) + yl * hl
        r = _expdd(ph, pl + y * lo)
    return val(sign | bits(r))


# ---------------------------------------------------------------- sin, cos, tan

PIO2 = [F(1.5707963267341256), F(6.077100506303966e-11), F(2.0222662487111665e-21), F(8.4784276603689e-32)]
SIN_C = [F(x) for x in (1.5895831390124462e-10, -2.5050740396269475e-08, 2.7557313570424023e-06,
                        -0.00019841269829427846, 0.008333333333321891, -0.1666666666666663)]
COS_C = [F(x) for x in (-1.1358748988066748e-11, 2.0875705395562304e-09, -2.75573142170586e-07,
                        2.4801587289002157e-05, -0.0013888888888873342, 0.041666666666666595)]
TRIG_TINY = 0x3E40000000000000      # 2^-27
TRIG_BIG = 0x4310000000000000       # 2^50


def _two_sum(a: F, b: F) -> tuple[F, F]:
    s = a + b
    bv = s - a
    return s, (a - (s - bv)) + (b - bv)


def _trigred(x: F) -> tuple[int, F, F]:
    """k and r + rl = x - k pi/2 (pi/2 in four parts, k P1..k P3 exact for |k| < 2^20)."""
    t = x * F(0.6366197723675814) + SHIFTER
    k = bits(t) & 0xFFFFFFFF
    kd = t - SHIFTER
    a = x - kd * PIO2[0]
    s1, e1 = _two_sum(a, -(kd * PIO2[1]))
    s2, e2 = _two_sum(s1, -(kd * PIO2[2]))
    lo = (e1 + e2) - kd * PIO2[3]
    r = s2 + lo
    return k, r, lo - (r - s2)


def _ksin(r: F, rl: F) -> F:
    z = r * r
    p = SIN_C[0]
    for c in SIN_C[1:]:
        p = p * z + c
    return r + ((r * z) * p + (rl - (F(0.5) * z) * rl))


def _kcos(r: F, rl: F) -> F:
    z = r * r
    p = COS_C[0]
    for c in COS_C[1:]:
        p = p * z + c
    hz = F(0.5) * z
    w = F(1.0) - hz
    return w + (((F(1.0) - w) - hz) + ((z * z) * p - r * rl))


def trig(x: F, fn: int) -> F:
    """sin (fn 0), cos (1) or tan (2) as dmath.cu's __qgd_trig computes it."""
    x = F(x)
    u = bits(x)
    a = u & ~(1 << 63)
    if a >= 0x7FF0000000000000 or a >= TRIG_BIG:
        return val(NAN_BITS)
    if a < TRIG_TINY:
        return F(1.0) if fn == 1 else x
    k, r, rl = _trigred(x)
    if fn == 2:
        s, c = _ksin(r, rl), _kcos(r, rl)
        return -c / s if k & 1 else s / c
    q = k + fn
    v = _kcos(r, rl) if q & 1 else _ksin(r, rl)
    return -v if q & 2 else v


def sin(x: F) -> F:
    return trig(x, 0)


def cos(x: F) -> F:
    return trig(x, 1)


def tan(x: F) -> F:
    return trig(x, 2)


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


def exact(name: str, x: float, y: float = 0.0):
    """The true value of exp, log, log10, pow, sin, cos or tan at binary64 arguments (200 bits)."""
    mp.mp.prec = 200
    if name == "pow":
        return mp.power(mp.mpf(x), mp.mpf(y))
    return {"exp": mp.exp, "log": mp.log, "log10": mp.log10, "sin": mp.sin, "cos": mp.cos,
            "tan": mp.tan}[name](mp.mpf(x))
