"""frexp, ldexp and scalbn on double, and frexp's float overload (issue 27: the eigenvalues
sample's floorPow2 calls `frexp((float)n, &exp)`).

Each kernel is compiled with `qgcc --no-link -o`, run with `qgrun` on the emulator and
compared bit for bit with g++ compiling the same text against the host's libm (tests/gxx.py),
on the values where C pins the result down: zeros, subnormals, the normal range's ends,
infinities, NaN, and ldexp's overflow, underflow and rounding to a subnormal.  A NaN result is
qgcc's canonical NaN (every double routine's rule); the host keeps the payload, so NaN is
compared as NaN.
"""

from __future__ import annotations

import numpy as np

from frontcheck import assert_error
from gxx import gxx_model, need_gxx
from test_published_constructs import cli_run

F64 = np.float64
CANON = 0x7FFFFFFFFFFFFFFF

SCALE = r"""
#include <math.h>
__global__ void scale(const double *x, const int *n, double *m, int *e, double *l, double *s) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int ex = 12345;
    m[i] = frexp(x[i], &ex);
    e[i] = ex;
    l[i] = ldexp(x[i], n[i]);
    s[i] = scalbn(x[i] * 0.75, -n[i]);
}
"""


def bits(*vals) -> list[float]:
    return [np.array([v], np.uint64).view(F64)[0] for v in vals]


def edge_values() -> tuple[np.ndarray, np.ndarray]:
    tiny = bits(1, 2, 3, 0x000FFFFFFFFFFFFF, 0x0008000000000000, 0x0000000100000001, 0x0010000000000000,
                0x7FEFFFFFFFFFFFFF, 0x8000000000000001, 0x800FFFFFFFFFFFFF)
    xs = [0.0, -0.0, 1.0, -1.5, 0.5, 0.75, 3.0, 1e300, -2.5e-300, np.pi, -np.e, 1 / 3, np.inf, -np.inf,
          np.nan, *tiny]
    ns = [0, 1, -1, 1023, -1022, -1074, -1075, 2000, -2000, 2**31 - 1, -2**31, 52, -53, 7, -1060, 30]
    x = np.array([v for v in xs for _ in range(2)], F64)  # each value with two exponents
    n = np.array([ns[(i * 7 + j) % len(ns)] for i in range(len(xs)) for j in range(2)], np.int32)
    return x, n


def same_double(got: np.ndarray, want: np.ndarray) -> None:
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    assert (got[nan].view(np.uint64) == CANON).all()
    assert got[~nan].tobytes() == want[~nan].tobytes()


@need_gxx
def test_frexp_ldexp_and_scalbn_on_double_match_gxx_on_edge_values(qgcc, qgrun, tmp_path):
    """Fractions in [0.5, 1) with the exponent that restores the value (subnormals normalized
    first), +-0 and +-inf returned with exponent 0; ldexp exact in range, overflowing to inf,
    underflowing to a signed zero and rounding to nearest even when the result is subnormal,
    whatever the int (INT_MIN, INT_MAX)."""
    x, n = edge_values()
    size = len(x)
    arrays = {"x": x, "n": n, "m": np.zeros(size, F64), "e": np.zeros(size, np.int32),
              "l": np.zeros(size, F64), "s": np.zeros(size, F64)}
    got = cli_run(qgcc, qgrun, tmp_path, SCALE, "scale", 2, size // 2, arrays)
    want = gxx_model(tmp_path, SCALE, "scale", 2, size // 2, list(arrays.items()))
    for name in ("m", "l", "s"):
        same_double(got[name], want[name])
    assert got["e"].tolist() == want["e"].tolist()


FLOOR_POW2 = r"""
__device__ inline int floorPow2(int n) {
    if (0 == (n & (n - 1))) return n;
    int exp;
    frexp((float)n, &exp);      // CUDA's float overload: frexpf
    return (1 << (exp - 1));
}
__global__ void pow2(const int *n, int *p, float *f) {
    int i = threadIdx.x;
    int ex;
    p[i] = floorPow2(n[i]);
    f[i] = frexp((float)n[i] * 0.5f, &ex) + ex;   // a float result: the expression stays float
}
"""


@need_gxx
def test_frexp_of_a_float_is_the_float_overload(qgcc, qgrun, tmp_path):
    """frexp with a float argument is CUDA's frexpf (a float result), as the eigenvalues
    sample's floorPow2 uses it; an int argument is the double function, as in C++."""
    n = np.array([1, 2, 3, 5, 7, 8, 9, 100, 1000, 1023, 1025, 65535, 1 << 20, (1 << 24) + 1, 2**31 - 1, 6], np.int32)
    arrays = {"n": n, "p": np.zeros(16, np.int32), "f": np.zeros(16, np.float32)}
    got = cli_run(qgcc, qgrun, tmp_path, FLOOR_POW2, "pow2", 1, 16, arrays)
    want = gxx_model(tmp_path, FLOOR_POW2, "pow2", 1, 16, list(arrays.items()))
    assert got["p"].tolist() == want["p"].tolist()
    assert got["f"].tobytes() == want["f"].tobytes()


def test_frexp_needs_an_int_pointer():
    """The exponent goes through an `int *`: anything else is a one-line error at the argument."""
    assert_error("__global__ void k(double *p, float *q) { p[0] = frexp(p[1], q); }\n", 1, 61,
                 "argument 2 of 'frexp' must be a 'int *' pointer (got 'float *')")


RSQRT = r"""
__global__ void inv(const double *x, double *r, float *rf) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    r[i] = rsqrt(x[i]);
    rf[i] = rsqrt((float)x[i]);  // CUDA's float overload: rsqrtf
}
"""


def test_rsqrt_on_double_is_one_over_the_rounded_root_rounded_again(qgcc, qgrun, tmp_path):
    """nbody's `rsqrt` of a double (its vec3<double> path): 1.0 / sqrt(x), each step rounded as
    IEEE rounds it (numpy's sqrt and division are), which keeps CUDA's 1-ulp bound; ±0 give ±inf,
    negatives NaN, inf 0."""
    x = np.array([4.0, 2.0, 3.0, 1e-310, 0.0, -0.0, -1.0, np.inf, 1e300, 0.1, 7.25, 123456.789], F64)
    got = cli_run(qgcc, qgrun, tmp_path, RSQRT, "inv", 3, 4,
                  {"x": x, "r": np.zeros(12, F64), "rf": np.zeros(12, np.float32)})
    with np.errstate(divide="ignore", invalid="ignore"):
        want = F64(1.0) / np.sqrt(x)
    assert np.isnan(got["r"][6]) and np.isnan(want[6])
    keep = [i for i in range(12) if i != 6]
    assert got["r"][keep].tobytes() == want[keep].tobytes()
    assert got["rf"][0] == np.float32(0.5) and got["rf"][7] == 0
