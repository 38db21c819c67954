"""The accuracy of qgcc's double exp, log, log10, pow, sin, cos and tan (src/qgcc/frontend/dmath.cu)
against the true value.

    python bench/dmath_accuracy.py [--n 20000]

Evaluates the library's algorithms through their bit-exact numpy model (tests/dmathref.py, which
the tests check against the compiled routines) on random arguments over each function's range
(for exp also near 0 and in the subnormal and overflow ends; for pow bases from 2^-30 to 2^30
with exponents that put y log x anywhere in exp's range, and integer exponents of negative
bases; for sin, cos and tan arguments up to 2^20, their documented domain: uniform ones near 0,
up to 1e3 and up to 2^20, log-uniform ones from 2^-27, and the doubles nearest to k pi/2 where
the reduction cancels most), and prints the largest error in ulps (mpmath, 200 bits).  Beyond
2^20 (to 2^50) sin and cos are measured as the absolute error in ulps of the argument.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import mpmath as mp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import dmathref as D  # noqa: E402


def arguments(name: str, n: int, rng) -> list[tuple[float, float]]:
    if name == "exp":
        x = np.concatenate([rng.uniform(-745.2, 709.8, n), rng.uniform(-1, 1, n // 4), rng.normal(size=n // 4) * 1e-8,
                            rng.uniform(-745.2, -708, n // 7), rng.uniform(700, 709.78, n // 10)])
        return [(v, 0.0) for v in x]
    if name in ("log", "log10"):
        x = np.concatenate([np.exp(rng.uniform(-744, 709, n)), rng.uniform(0.5, 2, n // 2),
                            1 + rng.normal(size=n // 4) * 1e-6, rng.uniform(0, 2.2250738585072014e-308, n // 10)])
        return [(v, 0.0) for v in x]
    if name in ("sin", "cos", "tan"):
        x = np.concatenate([rng.uniform(-4, 4, n // 2), rng.uniform(-1e3, 1e3, n // 4),
                            rng.uniform(-2.0 ** 20, 2.0 ** 20, n // 4),
                            np.exp2(rng.uniform(-27, 20, n // 4)) * rng.choice([-1, 1], n // 4), near_half_pi()])
        return [(v, 0.0) for v in x]
    x = np.exp2(rng.uniform(-30, 30, n))
    t = rng.uniform(-740, 705, n)                       # the target y log x
    y = t / np.log(x)
    neg = -np.exp2(rng.uniform(-8, 8, n // 4))
    k = rng.integers(-60, 60, n // 4).astype(float)
    return list(zip(np.concatenate([x, neg]), np.concatenate([y, k])))


def near_half_pi(count: int = 200) -> np.ndarray:
    """The doubles nearest to k pi/2, 0 < k < 2^20 * 2/pi, whose distance to it is smallest (the
    reduced arguments closest to 0), and their neighbours."""
    mp.mp.prec = 400
    s = 300
    half_pi = int(mp.floor(mp.pi / 2 * mp.mpf(2) ** s))
    best = []
    for k in range(1, 667545):
        v = k * half_pi
        sh = v.bit_length() - 1 - 52                # the ulp of k pi/2, in units of 2^-s
        rem = v % (1 << sh)
        best.append((min(rem, (1 << sh) - rem), k))
    best.sort()
    x = [float(mp.mpf(k) * mp.pi / 2) for _, k in best[:count]]
    return np.array(x + [float(np.nextafter(v, 0)) for v in x])


def beyond(n: int, rng) -> None:
    """sin and cos from 2^20 to 2^50: the absolute error in ulps of x."""
    x = np.exp2(rng.uniform(20, 50, n))
    for name in ("sin", "cos"):
        f = getattr(D, name)
        worst = max(float(abs(mp.mpf(float(f(v))) - D.exact(name, float(v))) / np.spacing(v)) for v in x)
        print(f"{name}(double) for 2^20 <= x < 2^50: {n} arguments, largest absolute error {worst:.3f} ulp of x")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=20000)
    n = ap.parse_args().n
    rng = np.random.default_rng(1)
    model = {"exp": lambda x, y: D.exp(x), "log": lambda x, y: D.log(x), "log10": lambda x, y: D.log10(x),
             "pow": D.pow, "sin": lambda x, y: D.sin(x), "cos": lambda x, y: D.cos(x), "tan": lambda x, y: D.tan(x)}
    for name, f in model.items():
        args = arguments(name, n, rng)
        worst, at = 0.0, None
        for x, y in args:
            e = D.ulp_error(float(f(x, y)), D.exact(name, float(x), float(y)))
            if e > worst:
                worst, at = e, (float(x), float(y))
        where = f"x = {at[0]!r}" + (f", y = {at[1]!r}" if name == "pow" else "")
        print(f"{name}(double): {len(args)} arguments, largest error {worst:.3f} ulp at {where}")
    beyond(n // 10, rng)


if __name__ == "__main__":
    main()
