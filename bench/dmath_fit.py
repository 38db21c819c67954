"""Fit the polynomial coefficients of the double sin and cos in src/qgcc/frontend/dmath.cu
(reproducible; run to regenerate).

    python bench/dmath_fit.py

As bench/mathlib_fit.py does for the float library, but carried out in mpmath (60 digits):
binary64 coefficients need a fit far finer than numpy's double arithmetic.  Each kernel g(z),
z = r^2 with |r| <= pi/4 (and a little more: the reduced argument of a double-double reduction
may exceed pi/4 by an ulp), is fitted in the monomial basis on Chebyshev-distributed points by
Lawson's iteratively reweighted least squares (it converges to the minimax fit), minimising the
relative error of the FINAL function value; then the coefficients are rounded to binary64 one
at a time, each later one refitted to absorb the rounding of the earlier ones, and the rounded
polynomial's relative error is measured on a denser grid.  Printed as C literals.

    sin r = r + r^3 S(z),  S(z) = S0 + S1 z + ... + S5 z^5
    cos r = 1 - z/2 + z^2 C(z),  C(z) = C0 + C1 z + ... + C5 z^5
"""
import mpmath as mp

mp.mp.dps = 60
Q = (mp.pi / 4 * (1 + mp.mpf(2) ** -40)) ** 2


def nodes(n):
    return [Q * (1 - mp.cos(mp.pi * (i + mp.mpf(0.5)) / n)) / 2 for i in range(n)]


def lawson(zs, g, w, degree, fixed, iters=40):
    """The weighted minimax fit of g by sum c_i z^i, the first len(fixed) coefficients given."""
    k = len(fixed)
    n = len(zs)
    resid = [g[j] - sum(fixed[i] * zs[j] ** i for i in range(k)) for j in range(n)]
    lw = [mp.mpf(1) / n] * n
    c = None
    for _ in range(iters):
        rows = [[mp.sqrt(lw[j]) * w[j] * zs[j] ** i for i in range(k, degree + 1)] for j in range(n)]
        rhs = [mp.sqrt(lw[j]) * w[j] * resid[j] for j in range(n)]
        A, b = mp.matrix(rows), mp.matrix(rhs)
        c = mp.lu_solve(A.T * A, A.T * b)
        err = [abs(w[j] * (resid[j] - sum(c[i - k] * zs[j] ** i for i in range(k, degree + 1)))) for j in range(n)]
        lw = [lw[j] * err[j] for j in range(n)]
        s = sum(lw)
        lw = [v / s for v in lw]
    return [c[i] for i in range(len(c))]


def fit(name, target, weight, degree, n=60):
    zs = nodes(n)
    g = [target(z) for z in zs]
    w = [weight(z) for z in zs]
    fixed = []
    while len(fixed) <= degree:                     # round one coefficient, refit the rest
        c = lawson(zs, g, w, degree, fixed)
        fixed.append(mp.mpf(float(c[0])))
    dense = nodes(4 * n)
    err = max(abs(weight(z) * (target(z) - sum(fixed[i] * z ** i for i in range(degree + 1))))
              for z in dense)
    print(f"/* {name}: degree {degree} on [0, (pi/4)^2], relative error of the result "
          f"{float(err):.3g} (2^{float(mp.log(err, 2)):.1f}) */")
    for i, v in enumerate(fixed):
        print(f"    {name}{i} = {float(v)!r}")
    return [float(v) for v in fixed]


small = mp.mpf(2) ** -200
fit("S", lambda z: (mp.sin(mp.sqrt(z)) - mp.sqrt(z)) / z ** mp.mpf(1.5) if z > small else -mp.mpf(1) / 6,
    lambda z: z / (mp.sin(mp.sqrt(z)) / mp.sqrt(z)) if z > small else z, 5)
fit("C", lambda z: (mp.cos(mp.sqrt(z)) - 1 + z / 2) / z ** 2 if z > small else mp.mpf(1) / 24,
    lambda z: z * z / mp.cos(mp.sqrt(z)), 5)
