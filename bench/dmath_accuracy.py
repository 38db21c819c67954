"""The accuracy of qgcc's double exp (src/qgcc/frontend/dmath.cu) against the true value.

    python bench/dmath_accuracy.py [--n 20000]

Evaluates the library's algorithm through its bit-exact numpy model (tests/dmathref.py, which
the tests check against the compiled routine) on random arguments over the whole range, near 0
and in the subnormal and overflow ends, and prints the largest error in ulps (mpmath, 200 bits).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import dmathref as D  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=20000)
    n = ap.parse_args().n
    rng = np.random.default_rng(1)
    xs = np.concatenate([rng.uniform(-745.2, 709.8, n), rng.uniform(-1, 1, n // 4), rng.normal(size=n // 4) * 1e-8,
                         rng.uniform(-745.2, -708, n // 7), rng.uniform(700, 709.79, n // 10)])
    worst, at = 0.0, None
    for x in xs:
        e = D.ulp_error(float(D.exp(x)), D.exact_exp(float(x)))
        if e > worst:
            worst, at = e, x
    print(f"exp(double): {xs.size} arguments, largest error {worst:.3f} ulp at x = {float(at)!r}")


if __name__ == "__main__":
    main()
