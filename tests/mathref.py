"""The math library's independent models and its host build (used by tests and bench/mathlib.py).

* `host(name, x, y, n)`: the library text (softfloat.cu + mathlib.cu) compiled by
  the host C compiler through tests/native/mathlib_host.c, evaluated at native
  speed (IEEE binary32, one rounding per operation: the soft-float semantics).
* `exact(name, ...)`: the exact functions' values from numpy / Python (floor,
  fmod, ldexp, ...), bit for bit.
* `ulp_errors(name, x, y, got)`: the error of each result in ulps of binary32 at
  the true value, which mpmath computes to 40 digits.
* `inputs(name, n, rng)`: specials, subnormals, huge arguments, points near
  hard-to-round cases and random floats over the whole range and over the
  function's own domain.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import hashlib
import os
import math
import subprocess
import tempfile
from functools import lru_cache
from pathlib import Path

import mpmath as mp
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SHIM = ROOT / "tests" / "native" / "mathlib_host.c"
SOURCES = [SHIM, ROOT / "src/qgcc/frontend/softfloat.cu", ROOT / "src/qgcc/frontend/mathlib.cu"]
NAN = np.uint32(0x7FFFFFFF).view(np.float32)

# The exact functions (compared bit for bit) and the approximate ones (compared in ulps).
EXACT1 = ["floorf", "ceilf", "truncf", "roundf", "rintf", "saturatef", "isnan", "isinf", "isfinite",
          "signbit", "frexpf"]
EXACT2 = ["fmodf", "remainderf", "copysignf", "fdimf", "ldexpf"]
APPROX1 = ["rsqrtf", "cbrtf", "expf", "exp2f", "exp10f", "expm1f", "logf", "log2f", "log10f", "log1pf",
           "sinf", "cosf", "tanf", "asinf", "acosf", "atanf", "sinhf", "coshf", "tanhf"]
APPROX2 = ["hypotf", "atan2f", "powf"]
BINARY = set(EXACT2) | set(APPROX2)
INT_RESULT = {"isnan", "isinf", "isfinite", "signbit"}


@lru_cache(maxsize=1)
def _lib():
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in SOURCES)).hexdigest()[:16]
    so = Path(tempfile.gettempdir()) / f"qgcc_mathlib_{digest}.so"
    if not so.exists():
        tmp = so.with_suffix(f".{os.getpid()}.tmp.so")  # xdist workers may build it at the same time
        subprocess.run(["gcc", "-O2", "-ffp-contract=off", "-fno-fast-math", "-shared", "-fPIC",
                        "-o", str(tmp), str(SHIM), "-lm"], check=True)
        tmp.replace(so)
    lib = ctypes.CDLL(str(so))
    lib.qgm_eval.restype = None
    return lib


def host(name: str, x, y=None, n_in=None):
    """(results, second results (sincosf's cosine), int results) of the host build."""
    x = np.ascontiguousarray(x, np.float32)
    n = len(x)
    y = np.zeros(n, np.float32) if y is None else np.ascontiguousarray(y, np.float32)
    n_in = np.zeros(n, np.int32) if n_in is None else np.ascontiguousarray(n_in, np.int32)
    out = np.zeros(2 * n, np.float32)
    iout = np.zeros(n, np.int32)
    p = lambda a: a.ctypes.data_as(ctypes.c_void_p)  # noqa: E731
    _lib().qgm_eval(name.encode(), p(x), p(y), p(n_in), p(out), p(iout), ctypes.c_int(n))
    return out[:n], out[n:], iout


# ------------------------------------------------------------------ exact models

def exact(name: str, x, y=None, n_in=None):
    """Bit-exact expected results of the exact functions (NaN results canonical)."""
    x = np.asarray(x, np.float32)
    with np.errstate(all="ignore"):
        if name in ("floorf", "ceilf", "truncf", "rintf"):
            r = {"floorf": np.floor, "ceilf": np.ceil, "truncf": np.trunc, "rintf": np.rint}[name](x)
        elif name == "roundf":
            d = x.astype(np.float64)
            r = (np.copysign(np.floor(np.abs(d) + 0.5), d)).astype(np.float32)
        elif name == "saturatef":
            r = np.where(np.isnan(x), np.float32(0), np.clip(x, np.float32(0), np.float32(1)))
            r = np.where(r == 0, np.float32(0), r).astype(np.float32)  # -0 -> +0
        elif name == "isnan":
            return np.isnan(x).astype(np.int32)
        elif name == "isinf":
            return np.isinf(x).astype(np.int32)
        elif name == "isfinite":
            return np.isfinite(x).astype(np.int32)
        elif name == "signbit":
            return np.signbit(x).astype(np.int32)
        elif name == "frexpf":
            m, e = np.frexp(x)
            e = np.where(np.isfinite(x), e, 0).astype(np.int32)
            return np.where(np.isnan(x), NAN, m).astype(np.float32), e
        elif name == "fmodf":
            r = np.fmod(x, y)
        elif name == "remainderf":
            r = np.array([math.remainder(float(a), float(b)) if (math.isfinite(a) and b != 0 and not
                          math.isnan(b)) else math.nan for a, b in zip(x, y)], np.float64).astype(np.float32)
        elif name == "copysignf":
            return np.copysign(x, y)  # a bit operation: NaN payloads kept
        elif name == "fdimf":
            r = np.where(x > y, x - y, np.float32(0)).astype(np.float32)
            r = np.where(np.isnan(x) | np.isnan(y), NAN, r)
        elif name == "ldexpf":
            r = np.ldexp(x, np.asarray(n_in, np.int32))
        else:
            raise KeyError(name)
    r = np.asarray(r, np.float32)
    return np.where(np.isnan(r), NAN, r).astype(np.float32)


# ------------------------------------------------------------------ mpmath models

mp.mp.prec = 140
# The host C library's pow (C99 Annex F special cases; numpy's power takes shortcuts such as
# sqrt for y = 0.5 that give pow(-0, 0.5) = -0).
_LIBM = ctypes.CDLL(ctypes.util.find_library("m"))
_LIBM.pow.restype = ctypes.c_double
_LIBM.pow.argtypes = [ctypes.c_double, ctypes.c_double]
_PI2 = mp.pi / 2


def _true(name: str, a: float, b: float):
    """The exact value as an mpf, or a float inf/nan for the special results."""
    x = mp.mpf(a)
    y = mp.mpf(b)
    if name == "rsqrtf":
        return 1 / mp.sqrt(x)
    if name == "cbrtf":
        return mp.cbrt(x) if x >= 0 else -mp.cbrt(-x)
    if name == "expf":
        return mp.exp(x)
    if name == "exp2f":
        return mp.power(2, x)
    if name == "exp10f":
        return mp.power(10, x)
    if name == "expm1f":
        return mp.expm1(x)
    if name == "logf":
        return mp.log(x)
    if name == "log2f":
        return mp.log(x, 2)
    if name == "log10f":
        return mp.log10(x)
    if name == "log1pf":
        return mp.log1p(x)
    if name == "sinf":
        return mp.sin(x)
    if name == "cosf":
        return mp.cos(x)
    if name == "tanf":
        return mp.tan(x)
    if name == "asinf":
        return mp.asin(x)
    if name == "acosf":
        return mp.acos(x)
    if name == "atanf":
        return mp.atan(x)
    if name == "sinhf":
        return mp.sinh(x)
    if name == "coshf":
        return mp.cosh(x)
    if name == "tanhf":
        return mp.tanh(x)
    if name == "hypotf":
        return mp.hypot(x, y)
    if name == "atan2f":
        return mp.atan2(x, y)  # atan2f(y = a, x = b)
    if name == "powf":  # a negative base only reaches here with an integer exponent
        v = mp.power(abs(x), y)
        return -v if x < 0 and int(y) % 2 == 1 else v
    raise KeyError(name)


def _special(name: str, a: float, b: float):
    """The IEEE / C99 result where an argument is special (NaN, inf, zero, out of domain), else None."""
    nan, inf = math.nan, math.inf
    if name == "hypotf":
        if math.isinf(a) or math.isinf(b):
            return inf
        if math.isnan(a) or math.isnan(b):
            return nan
        return None
    if name == "powf":
        # C99 Annex F, as the host's libm implements it in double (no double rounding issue:
        # every special result is 0, 1, inf or NaN, or a finite case handled by _true)
        if math.isnan(a) or math.isnan(b) or math.isinf(a) or math.isinf(b) or a == 0 or b == 0 or a == 1 \
                or (a < 0 and b != math.floor(b)):
            return _LIBM.pow(a, b)
        return None
    if name == "atan2f":
        y, x = a, b
        if math.isnan(x) or math.isnan(y):
            return nan
        if y == 0 or math.isinf(x) or math.isinf(y):
            return math.atan2(y, x)  # exact special values (rounded pi multiples)
        return None
    if math.isnan(a):
        return nan
    if name in ("logf", "log2f", "log10f"):
        if a == 0:
            return -inf
        if a < 0:
            return nan
        if a == inf:
            return inf
    if name == "log1pf":
        if a == -1:
            return -inf
        if a < -1:
            return nan
        if a == inf:
            return inf
    if name == "rsqrtf":
        if a == 0:
            return math.copysign(inf, a)
        if a < 0:
            return nan
        if a == inf:
            return 0.0
    if name in ("sinf", "cosf", "tanf") and math.isinf(a):
        return nan
    if name in ("asinf", "acosf") and abs(a) > 1:
        return nan
    if math.isinf(a):
        return {"cbrtf": a, "expf": inf if a > 0 else 0.0, "exp2f": inf if a > 0 else 0.0,
                "exp10f": inf if a > 0 else 0.0, "expm1f": inf if a > 0 else -1.0,
                "atanf": math.copysign(math.pi / 2, a), "sinhf": a, "coshf": inf,
                "tanhf": math.copysign(1.0, a)}[name]
    if a == 0 and name in ("cbrtf", "sinf", "tanf", "asinf", "atanf", "sinhf", "tanhf", "expm1f", "log1pf"):
        return a  # signed zero
    return None


def _ulp(v) -> mp.mpf:
    e = mp.floor(mp.log(abs(v), 2))
    # log may land one off near powers of two; fix it against the value
    if mp.mpf(2) ** e > abs(v):
        e -= 1
    if mp.mpf(2) ** (e + 1) <= abs(v):
        e += 1
    return mp.mpf(2) ** (max(int(e), -126) - 23)


OVERFLOW = mp.mpf(2) ** 128 * (1 - mp.mpf(2) ** -25)


def ulp_errors(name: str, x, y, got) -> np.ndarray:
    """Error of each result in ulps (0 for a matching special result, inf for a wrong one)."""
    errs = np.zeros(len(x))
    with np.errstate(all="ignore"):
        x, y = np.asarray(x, np.float32).astype(np.float64), np.asarray(y, np.float32).astype(np.float64)
    for i, (a, b, g) in enumerate(zip(x, y, np.asarray(got, np.float32))):
        g = float(g)
        s = _special(name, a, b)
        if s is not None:
            if math.isnan(s):
                ok = math.isnan(g) and np.float32(g).view(np.uint32) == 0x7FFFFFFF
            else:
                ok = float(np.float32(s)) == g and math.copysign(1, s) == math.copysign(1, g)
            errs[i] = 0 if ok else math.inf
            continue
        v = _true(name, a, b)
        if math.isnan(g):
            errs[i] = math.inf
        elif abs(v) >= OVERFLOW:
            errs[i] = 0 if g == math.copysign(math.inf, v) else math.inf
        elif math.isinf(g):
            errs[i] = math.inf
        elif v == 0:
            errs[i] = 0 if g == 0 else math.inf
        else:
            errs[i] = float(abs(mp.mpf(g) - v) / _ulp(v))
    return errs


# ------------------------------------------------------------------ inputs

SPECIALS = np.array([0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0x7FFFFFFF, 0xFFC00001,
                     0x00000001, 0x80000001, 0x007FFFFF, 0x807FFFFF, 0x00800000, 0x80800000,
                     0x7F7FFFFF, 0xFF7FFFFF, 0x3F800000, 0xBF800000, 0x3F000000, 0xBF000000,
                     0x3F7FFFFF, 0x3F800001, 0x40000000, 0xC0000000, 0x3EFFFFFF, 0x3F000001,
                     0x3FC00000, 0xBFC00000, 0x40200000, 0x4B000000, 0x4B000001, 0x4AFFFFFF,
                     0x33800000, 0x39800000, 0x4B7FFFFF, 0x5F000000], np.uint32).view(np.float32)

# Where each function's values vary (random inputs are drawn here as well as over all floats).
DOMAIN = {"expf": (-104, 89), "exp2f": (-150, 128), "exp10f": (-46, 39), "expm1f": (-18, 89),
          "sinhf": (-90, 90), "coshf": (-90, 90), "tanhf": (-10, 10), "asinf": (-1, 1), "acosf": (-1, 1),
          "log1pf": (-1, 4), "sinf": (-8, 8), "cosf": (-8, 8), "tanf": (-8, 8), "atanf": (-4, 4)}

_NP = {"expf": np.exp, "exp2f": np.exp2, "exp10f": lambda v: np.power(10.0, v), "expm1f": np.expm1,
       "logf": np.log, "log2f": np.log2, "log10f": np.log10, "log1pf": np.log1p, "sinf": np.sin,
       "cosf": np.cos, "tanf": np.tan, "asinf": np.arcsin, "acosf": np.arccos, "atanf": np.arctan,
       "sinhf": np.sinh, "coshf": np.cosh, "tanhf": np.tanh, "rsqrtf": lambda v: 1 / np.sqrt(v),
       "cbrtf": np.cbrt}


def _random_bits(rng, n):
    return rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32).view(np.float32)


def hard_cases(name: str, n: int, rng, pool: int = 200000) -> np.ndarray:
    """n inputs whose true result lies closest to a rounding boundary (a midpoint between
    two floats), found among `pool` candidates with a float64 evaluation."""
    f = _NP[name]
    lo, hi = DOMAIN.get(name, (2.0**-10, 2.0**10))
    cand = np.concatenate([rng.uniform(lo, hi, pool // 2), np.exp2(rng.uniform(-20, 20, pool // 2))])
    cand = cand.astype(np.float32)
    with np.errstate(all="ignore"):
        v = f(cand.astype(np.float64))
    ok = np.isfinite(v) & (v != 0) & (np.abs(v) > 2.0**-126) & (np.abs(v) < 2.0**127)
    cand, v = cand[ok], v[ok]
    e = np.floor(np.log2(np.abs(v)))
    frac = np.abs(v) / np.exp2(e - 23)  # in ulps
    dist = np.abs(frac - np.floor(frac) - 0.5)
    return cand[np.argsort(dist)[:n]]


def pow_hard_cases(n: int, rng, pool: int = 400000) -> tuple[np.ndarray, np.ndarray]:
    """n (x, y) pairs whose x^y (float64) lies closest to a midpoint between two floats."""
    x = np.exp2(rng.uniform(-8, 8, pool)).astype(np.float32)
    y = rng.uniform(-12, 12, pool).astype(np.float32)
    with np.errstate(all="ignore"):
        v = np.power(x.astype(np.float64), y.astype(np.float64))
    ok = np.isfinite(v) & (v > 2.0**-126) & (v < 2.0**127)
    x, y, v = x[ok], y[ok], v[ok]
    frac = v / np.exp2(np.floor(np.log2(v)) - 23)
    pick = np.argsort(np.abs(frac - np.floor(frac) - 0.5))[:n]
    return x[pick], y[pick]


def pow_inputs(n: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """Specials crossed with specials and integers; random bits; x near 1 with large y; results
    near overflow and underflow (subnormal results); negative bases with integer exponents;
    near-midpoint cases; random moderate pairs."""
    sp = np.concatenate([SPECIALS, np.float32([3.0, -3.0, 0.25, -0.5, 2.5, -2.5, 1e10, -1e10])])
    k = max((n - len(sp) ** 2) // 7, 1)
    xs = [np.repeat(sp, len(sp)), _random_bits(rng, k)]
    ys = [np.tile(sp, len(sp)), _random_bits(rng, k)]
    # x = 1 +- a few ulps, y large
    d = rng.integers(-2000, 2000, k).astype(np.int64)
    xs.append((np.int64(0x3F800000) + d).astype(np.uint32).view(np.float32))
    ys.append((rng.uniform(-1, 1, k) * np.exp2(rng.uniform(0, 30, k))).astype(np.float32))
    # results near 2^128 and 2^-126 .. 2^-150: y = t / log2 x
    x = np.exp2(rng.uniform(-20, 20, k)).astype(np.float32)
    x = np.where(x == 1, np.float32(3), x)
    t = rng.choice([128.0, -126.0, -140.0, -149.0, -150.0], k) + rng.uniform(-0.6, 0.6, k)
    xs.append(x)
    ys.append((t / np.log2(x.astype(np.float64))).astype(np.float32))
    # integer exponents, negative bases included
    xs.append((rng.standard_normal(k) * np.exp2(rng.uniform(-4, 4, k))).astype(np.float32))
    ys.append(rng.integers(-40, 41, k).astype(np.float32))
    hx, hy = pow_hard_cases(k, rng)
    xs.append(hx)
    ys.append(hy)
    xs.append(np.exp2(rng.uniform(-30, 30, k)).astype(np.float32))
    ys.append((rng.standard_normal(k) * 4).astype(np.float32))
    x, y = np.concatenate(xs), np.concatenate(ys)
    if len(x) < n:
        m = n - len(x)
        x = np.concatenate([x, rng.uniform(0, 4, m).astype(np.float32)])
        y = np.concatenate([y, rng.uniform(-30, 30, m).astype(np.float32)])
    return x.astype(np.float32), y.astype(np.float32)


def inputs(name: str, n: int, rng) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(x, y, integer argument) arrays of about n inputs for function `name`."""
    if name == "powf":
        x, y = pow_inputs(n, rng)
        return x, y, np.zeros(len(x), np.int32)
    k = max(n // 4, 1)
    if name in BINARY:
        k = max(n // 3, 1)
        sp = SPECIALS
        xs = [np.repeat(sp, len(sp)), _random_bits(rng, k), rng.standard_normal(k).astype(np.float32) * 10,
              np.exp2(rng.uniform(-30, 30, k)).astype(np.float32) * rng.choice([-1, 1], k)]
        ys = [np.tile(sp, len(sp)), _random_bits(rng, k), rng.standard_normal(k).astype(np.float32) * 10,
              np.exp2(rng.uniform(-30, 30, k)).astype(np.float32) * rng.choice([-1, 1], k)]
        with np.errstate(all="ignore"):
            x = np.concatenate(xs)[:max(n, len(sp) ** 2)]
            y = np.concatenate(ys)[:len(x)]
        m = len(x)
        return x.astype(np.float32), y.astype(np.float32), rng.integers(-300, 300, m).astype(np.int32)
    parts = [SPECIALS, _random_bits(rng, k)]
    lo, hi = DOMAIN.get(name, (-100, 100))
    parts.append(rng.uniform(lo, hi, k).astype(np.float32))
    if name in ("sinf", "cosf", "tanf"):
        # near multiples of pi/2 (the cancellation cases) and huge arguments
        j = rng.integers(1, 2**20, k // 4)
        near = (j * (np.pi / 2)).astype(np.float32).view(np.uint32) + rng.integers(-2, 3, k // 4).astype(np.uint32)
        parts += [near.view(np.float32), np.exp2(rng.uniform(17, 128, k // 4)).astype(np.float32)]
    if name in _NP:
        parts.append(hard_cases(name, k // 2, rng))
    else:
        parts.append(np.exp2(rng.uniform(-149, 127, k)).astype(np.float32))
    x = np.concatenate(parts).astype(np.float32)
    if len(x) < n:  # fill up with random floats of the domain and of all magnitudes
        m = n - len(x)
        x = np.concatenate([x, rng.uniform(lo, hi, m - m // 2).astype(np.float32),
                            (np.exp2(rng.uniform(-30, 30, m // 2)) * rng.choice([-1, 1], m // 2)).astype(np.float32)])
    x = x[: max(n, len(SPECIALS))]
    return x, np.zeros(len(x), np.float32), rng.integers(-300, 300, len(x)).astype(np.int32)
