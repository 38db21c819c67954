"""`double`: IEEE binary64 on register pairs, its routines (frontend/double.cu), C++'s
promotion rules and conversions, launch arguments and buffers, against the host's IEEE double
(numpy, Python floats, and g++ compiling the same text) and, where C leaves it open, against
the rules docs/subset.md documents (CUDA's: canonical NaN, cvt.rzi saturation)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import doubleref as R

need_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ for the native check")
SRC = Path(__file__).parents[1] / "src/qgcc/frontend"

NATIVE_SHIM = r"""
#include <cstdio>
#include <cstring>
#define __device__ static
static unsigned __clz(int x) { return x ? (unsigned)__builtin_clz((unsigned)x) : 32u; }
static int __clzll(unsigned long long x) { return x ? __builtin_clzll(x) : 64; }
static unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
    return (unsigned long long)(((unsigned __int128)a * b) >> 64); }
static float __uint_as_float(unsigned u) { float f; memcpy(&f, &u, 4); return f; }
static unsigned __float_as_uint(float f) { unsigned u; memcpy(&u, &f, 4); return u; }
"""

NATIVE_MAIN = r"""
int main() {
    unsigned long long p[2];
    while (fread(p, 8, 2, stdin) == 2) {
        unsigned long long a = p[0], b = p[1];
        unsigned long long r[22] = {
            __qg_dadd(a, b), __qg_dadd(a, b ^ 0x8000000000000000ull), __qg_dmul(a, b), __qg_ddiv(a, b),
            __qg_dsqrt(a), __qg_dlt(a, b), __qg_dle(a, b), __qg_deq(a, b), __qg_dmin(a, b), __qg_dmax(a, b),
            __qg_f2d(__uint_as_float((unsigned)b)), __float_as_uint(__qg_d2f(a)), __qg_ull2d(a),
            __qg_ll2d((long long)a), __qg_d2ull(a), (unsigned long long)__qg_d2ll(a),
            (unsigned long long)(long long)__qg_d2i(a), __qg_d2u(a), __qg_dtrunc(a),
            __qg_dfloorceil(a, 0), __qg_dfloorceil(a, 1), __qg_dround(a)};
        fwrite(r, 8, 22, stdout);
    }
    return 0;
}
"""


def native(tmp_path, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """double.cu (with the float library it rounds through) compiled by g++, run on the pairs."""
    text = (SRC / "softfloat.cu").read_text() + (SRC / "double.cu").read_text()
    cpp = tmp_path / "double.cpp"
    cpp.write_text(NATIVE_SHIM + text + NATIVE_MAIN)
    exe = tmp_path / "double"
    subprocess.run(["g++", "-O2", "-std=c++17", "-o", str(exe), str(cpp)], check=True, capture_output=True)
    out = subprocess.run([str(exe)], input=np.stack([a, b], 1).tobytes(), check=True,
                         capture_output=True).stdout
    return np.frombuffer(out, np.uint64).reshape(len(a), 22)


def check_native(tmp_path, n: int, seed: int) -> None:
    a, b = R.operands(n, seed)
    got, want = native(tmp_path, a, b), R.model(a, b)
    for j, name in enumerate(R.COLUMNS):
        bad = np.nonzero(got[:, j] != want[:, j])[0]
        assert bad.size == 0, (name, [(hex(int(a[i])), hex(int(b[i])), hex(int(got[i, j])), hex(int(want[i, j])))
                                      for i in bad[:5]])


@need_gxx
def test_routines_natively_against_host_double(tmp_path):
    """Every routine of double.cu, compiled by g++ from the text the machine runs, on every pair
    of edge values (zeros, subnormals, the normal range's ends, infinities, NaN, halfway cases)
    and random pairs (any bit pattern, nearby magnitudes that cancel, short significands whose
    products are exact or halfway), against the host's correctly rounded double."""
    check_native(tmp_path, 30_000, 1)


@pytest.mark.slow
@need_gxx
def test_routines_natively_large_sweep(tmp_path):
    """The same on 2,000,000 pairs of other seeds."""
    for seed in range(2, 6):
        check_native(tmp_path, 500_000, seed)
