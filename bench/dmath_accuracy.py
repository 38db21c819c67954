"""The accuracy of qgcc's double exp, log, log10 and pow (src/qgcc/frontend/dmath.cu) against the
true value.

    python bench/dmath_accuracy.py [--n 20000]

Evaluates the library's algorithms through their bit-exact numpy model (tests/dmathref.py, which
the tests check against the compiled routines) on random arguments over each function's range
(for exp also near 0 and in the subnormal and overflow ends; for pow bases from 2^-30 to 2^30
with exponents that put y log x anywhere in exp's range, and integer exponents of negative
bases), and prints the largest error in ulps (mpmath, 200 bits).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

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
    x = np.exp2(rng.uniform(-30, 30, n))
    t = rng.uniform(-740, 705, n)                       # the target y log x
    y = t / np.log(x)
    neg = -np.exp2(rng.uniform(-8, 8, n // 4))
    k = rng.integers(-60, 60, n // 4).astype(float)
    return list(zip(np.concatenate([x, neg]), np.concatenate([y, k])))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=20000)
    n = ap.parse_args().n
    rng = np.random.default_rng(1)
    model = {"exp": lambda x, y: D.exp(x), "log": lambda x, y: D.log(x), "log10": lambda x, y: D.log10(x),
             "pow": D.pow}
    for name, f in model.items():
        args = arguments(name, n, rng)
        worst, at = 0.0, None
        for x, y in args:
            e = D.ulp_error(float(f(x, y)), D.exact(name, float(x), float(y)))
            if e > worst:
                worst, at = e, (float(x), float(y))
        where = f"x = {at[0]!r}" + (f", y = {at[1]!r}" if name == "pow" else "")
        print(f"{name}(double): {len(args)} arguments, largest error {worst:.3f} ulp at {where}")


if __name__ == "__main__":
    main()
