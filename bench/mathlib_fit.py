"""Fit the polynomial coefficients of src/qgcc/frontend/mathlib.cu (reproducible; run to regenerate).

    python bench/mathlib_fit.py

Each kernel g(z) is fitted in the monomial basis on Chebyshev-distributed points
of its interval by Lawson's iteratively reweighted least squares (which
converges to the minimax fit), minimising the relative error of the FINAL
function value (the weight maps an error in g to that error), with the targets
computed by mpmath at 50 digits.  Coefficients are rounded to float and printed
as C literals, with the float64 relative error of the rounded polynomial.
"""
import mpmath as mp
import numpy as np

mp.mp.dps = 50


def fit(name, target, lo, hi, degree, weight, n=1500, iters=60):
    xs = [lo + (hi - lo) * (1 - mp.cos(mp.pi * (i + 0.5) / n)) / 2 for i in range(n)]
    g = np.array([float(target(x)) for x in xs])
    w = np.array([float(weight(x)) for x in xs])
    z = np.array([float(x) for x in xs])
    A = np.vander(z, degree + 1, increasing=True)
    lw = np.ones(n) / n
    for _ in range(iters):
        sw = np.sqrt(lw)
        c, *_ = np.linalg.lstsq(A * (sw * w)[:, None], g * sw * w, rcond=None)
        err = np.abs((A @ c - g) * w)
        lw = lw * err
        lw /= lw.sum()
    c32 = c.astype(np.float32).astype(np.float64)
    err = np.max(np.abs((A @ c32 - g) * w))
    print(f"/* {name}: degree {degree} on [{float(lo):.6g}, {float(hi):.6g}], rel. error {err:.3g} "
          f"(2^{np.log2(err):.1f}) */")
    for i, v in enumerate(c32):
        print(f"    {name}{i} = {float(np.float32(v)):.9g}f  /* {np.float32(v).view(np.uint32):#010x} */")
    return c32


ln2 = mp.log(2)
small = mp.mpf(2) ** -60
# e^r = 1 + r + r^2 P(r)
fit("EXP", lambda r: (mp.exp(r) - 1 - r) / r**2 if abs(r) > small else mp.mpf(0.5), -ln2 / 2, ln2 / 2, 4,
    lambda r: r * r / mp.exp(r))
# 2^t = 1 + t Q(t)
fit("EXP2", lambda t: (mp.power(2, t) - 1) / t if abs(t) > small else ln2, -0.5, 0.5, 5,
    lambda t: abs(t) / mp.power(2, t))
# 10^t = 1 + t Q(t), |t| <= log10(2)/2
h10 = mp.log10(2) / 2
fit("EXP10", lambda t: (mp.power(10, t) - 1) / t if abs(t) > small else mp.log(10), -h10, h10, 6,
    lambda t: abs(t) / mp.power(10, t))
# expm1(r) = r + r^2 P(r), |r| <= 0.75 (k = 0 up to there: no cancellation in 2^k (1 + p) - 1)
fit("EXPM1", lambda r: (mp.expm1(r) - r) / r**2 if abs(r) > small else mp.mpf(0.5), -0.75, 0.75, 6,
    lambda r: r * r / abs(mp.expm1(r)) if abs(r) > small else 0)
# log(1+f) = f - s (f - R(z)), s = f/(2+f), z = s^2, R(z) = z L(z); |s| <= 3-2sqrt2
smax = 3 - 2 * mp.sqrt(2)
fit("LOG", lambda z: (2 * mp.atanh(mp.sqrt(z)) / mp.sqrt(z) - 2) / z if z > small else mp.mpf(2) / 3,
    0, smax**2, 3, lambda z: z / 2)
# sin r = r + r^3 S(r^2), cos r = 1 - r^2/2 + r^4 C(r^2), |r| <= pi/4
q = (mp.pi / 4) ** 2
fit("SIN", lambda z: (mp.sin(mp.sqrt(z)) - mp.sqrt(z)) / z**1.5 if z > small else -mp.mpf(1) / 6, 0, q, 3,
    lambda z: z)
fit("COS", lambda z: (mp.cos(mp.sqrt(z)) - 1 + z / 2) / z**2 if z > small else mp.mpf(1) / 24, 0, q, 3,
    lambda z: z * z / mp.cos(mp.sqrt(z)))
# asin x = x + x^3 A(x^2), |x| <= 1/2
fit("ASIN", lambda z: (mp.asin(mp.sqrt(z)) - mp.sqrt(z)) / z**1.5 if z > small else mp.mpf(1) / 6, 0, 0.25, 4,
    lambda z: z)
# atan x = x + x^3 T(x^2), |x| <= 1
fit("ATAN", lambda z: (mp.atan(mp.sqrt(z)) - mp.sqrt(z)) / z**1.5 if z > small else -mp.mpf(1) / 3, 0, 1, 8,
    lambda z: z * mp.sqrt(z) / mp.atan(mp.sqrt(z)) if z > small else 0)
# sinh x = x + x^3 H(x^2), |x| <= 1; tanh x = x + x^3 K(x^2), |x| <= 0.55
fit("SINH", lambda z: (mp.sinh(mp.sqrt(z)) - mp.sqrt(z)) / z**1.5 if z > small else mp.mpf(1) / 6, 0, 1, 4,
    lambda z: z)
fit("TANH", lambda z: (mp.tanh(mp.sqrt(z)) - mp.sqrt(z)) / z**1.5 if z > small else -mp.mpf(1) / 3, 0,
    mp.mpf(0.55) ** 2, 6, lambda z: z * mp.sqrt(z) / mp.tanh(mp.sqrt(z)) if z > small else 0)
# cosh x = 1 + x^2/2 + x^4 C(x^2), |x| <= 1
fit("COSH", lambda z: (mp.cosh(mp.sqrt(z)) - 1 - z / 2) / z**2 if z > small else mp.mpf(1) / 24, 0, 1, 3,
    lambda z: z * z / mp.cosh(mp.sqrt(z)))
