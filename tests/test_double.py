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


NATIVE_MAIN = r"""
int main() {
    unsigned long long p[2];
    while (fread(p, 8, 2, stdin) == 2) {
        unsigned long long a = p[0], b = p[1];
        unsigned long long r[24] = {
            __qg_dadd(a, b), __qg_dadd(a, b ^ 0x8000000000000000ull), __qg_dmul(a, b), __qg_ddiv(a, b),
            __qg_dsqrt(a), __qg_dcmp(a, b) & 1u, __qg_dcmp(a, b) != 0u, __qg_dcmp(a, b) >> 1, __qg_dmin(a, b), __qg_dmax(a, b),
            __qg_f2d(__uint_as_float((unsigned)b)), __float_as_uint(__qg_d2f(a)), __qg_ull2d(a),
            __qg_ll2d((long long)a), __qg_d2ull(a), (unsigned long long)__qg_d2ll(a),
            (unsigned long long)(long long)__qg_d2i(a), __qg_d2u(a), __qg_dtrunc(a),
            __qg_dfloorceil(a, 0), __qg_dfloorceil(a, 1), __qg_dround(a), __qg_u2d((unsigned)a),
            __qg_i2d((int)(unsigned)a)};
        fwrite(r, 8, 24, stdout);
    }
    return 0;
}
"""


def native(tmp_path, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """double.cu (with the float library it rounds through) compiled by g++, run on the pairs."""
    text = (SRC / "softfloat.cu").read_text() + (SRC / "double.cu").read_text()
    cpp = tmp_path / "double.cpp"
    cpp.write_text(ROUTINE_SHIM + text + NATIVE_MAIN)
    exe = tmp_path / "double"
    subprocess.run(["g++", "-O2", "-std=c++17", "-o", str(exe), str(cpp)], check=True, capture_output=True)
    out = subprocess.run([str(exe)], input=np.stack([a, b], 1).tobytes(), check=True,
                         capture_output=True).stdout
    return np.frombuffer(out, np.uint64).reshape(len(a), len(R.COLUMNS))


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


# ---------------------------------------------------------------- kernels: emulator against g++

from frontcheck import assert_error, emulate_src  # noqa: E402
from gxx import ROUTINE_SHIM, gxx_model  # noqa: E402

HOST_PRELUDE = r"""
#include <cstdlib>
static unsigned __float_as_uint(float f) { unsigned u; memcpy(&u, &f, 4); return u; }
static long long __double_as_longlong(double d) { long long u; memcpy(&u, &d, 8); return u; }
using std::sqrt; using std::floor; using std::ceil; using std::trunc; using std::round; using std::fmin;
using std::fmax; using std::fabs;
"""

# One thread per operand pair; every result goes out as a 64-bit pattern.  Five parts, because
# one kernel with every routine would exceed the machine's 1024 instructions.  The kernel's own
# guards leave out what C++ leaves undefined (out-of-range double -> integer).
OPS_SRC = r"""
#define N 24
__device__ double twice(double v) { return v + v; }

__global__ void opsd(const double *a, const double *b, const float *fl, const int *c, unsigned long long *out,
                     double s) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    double x = a[i], y = b[i];
    float f = fl[i];
    int n = c[i];
    unsigned long long *o = out + i * N;
    __shared__ double sh[64];
    double loc[3];
#if PART == 1
    o[0] = __double_as_longlong(x + y); o[1] = __double_as_longlong(x - y);
    o[2] = (x < y) | (x <= y) << 1 | (x > y) << 2 | (x >= y) << 3 | (x == y) << 4 | (x != y) << 5
         | (!x) << 6 | (x ? 1 : 0) << 7 | (x < 0.5) << 8 | (f < x) << 9 | (n == x) << 10;
    o[3] = __double_as_longlong(-x); o[4] = __double_as_longlong(twice(x) + s);
    double t = x;
    t += y; o[5] = __double_as_longlong(t);
    t -= n; o[6] = __double_as_longlong(t);
    o[7] = __double_as_longlong(++t); o[8] = __double_as_longlong(t--); o[9] = __double_as_longlong(t);
    sh[threadIdx.x] = x - 2.5;
    loc[n & 1] = y; loc[(n & 1) ^ 1] = s;
    o[10] = __double_as_longlong(sh[threadIdx.x] + loc[0] - loc[1]);
    o[11] = __double_as_longlong(x > y ? x : y + 1.0);
    o[12] = __double_as_longlong(1.0 / 3 + x - 1e-300);
#elif PART == 2
    o[0] = __double_as_longlong(x * y); o[1] = __double_as_longlong(x * s);
    float ff = f; ff *= 0.3; o[2] = __float_as_uint(ff);  /* float *= double: computed in double */
    o[3] = __float_as_uint(0.3f * f); o[4] = __double_as_longlong(0.3 * f);
    o[5] = __double_as_longlong(1.0 / 3 * x);
    double t = x; t *= y; o[6] = __double_as_longlong(t);
#elif PART == 3
    o[0] = __double_as_longlong(x / y); o[1] = __double_as_longlong(sqrt(x)); o[2] = __double_as_longlong(y / 7);
    o[3] = __double_as_longlong(fabs(y)); o[4] = __double_as_longlong(sqrt(fabs(y)) / s);
    double t = x; t /= y; o[5] = __double_as_longlong(t);
#elif PART == 4
    o[0] = __double_as_longlong(fmin(x, y)); o[1] = __double_as_longlong(fmax(x, f));
    o[2] = __double_as_longlong(floor(x)); o[3] = __double_as_longlong(ceil(x));
    o[4] = __double_as_longlong(trunc(x)); o[5] = __double_as_longlong(round(x));
#else
    o[0] = __double_as_longlong((double)f); o[1] = __float_as_uint((float)x); o[2] = __double_as_longlong((double)n);
    o[3] = __double_as_longlong((double)(unsigned)n); o[4] = __double_as_longlong((double)((long long)n * 1234567891ll));
    o[5] = __double_as_longlong((double)((unsigned long long)n * 0x9E3779B97F4A7C15ull));
    bool fits_int = x > -2147483649.0 && x < 2147483648.0;
    bool fits_u = x > -1.0 && x < 4294967296.0;
    bool fits_ll = x >= -9223372036854775808.0 && x < 9223372036854775808.0;
    bool fits_ull = x > -1.0 && x < 18446744073709551616.0;
    o[6] = fits_int ? (long long)(int)x : 1;
    o[7] = fits_u ? (unsigned)x : 2;
    o[8] = fits_ll ? (long long)x : 3;
    o[9] = fits_ull ? (unsigned long long)x : 4;
    o[10] = (x > -128.0 && x < 128.0) ? (long long)(char)x : 5;
    o[11] = (bool)x;
    float g = x; o[12] = __float_as_uint(g);
    double h = f; o[13] = __double_as_longlong(h);
    int k = y; o[14] = (y > -2147483649.0 && y < 2147483648.0) ? k : 6;
#endif
}
"""

DOUBLE_EDGES = np.array(R.EDGE_DOUBLES, np.float64)


def _operands(n: int, seed: int):
    """Operands for n threads: edge values against each other and random values of mixed
    magnitudes (some nearby, so that + and - cancel)."""
    rng = np.random.default_rng(seed)
    e = len(DOUBLE_EDGES)
    idx = rng.permutation(e * e)[:n]
    x, y = DOUBLE_EDGES[idx // e], DOUBLE_EDGES[idx % e]
    r = n // 2
    x[:r] = rng.standard_normal(r) * np.exp2(rng.integers(-40, 40, r))
    y[:r // 2] = x[:r // 2] * (1 + rng.standard_normal(r // 2) * 1e-9)
    f = (rng.standard_normal(n) * 10.0 ** rng.integers(-5, 5, n)).astype(np.float32)
    f[::5] = x[::5].astype(np.float32)
    c = rng.integers(-(1 << 31), 1 << 31, n, dtype=np.int64).astype(np.int32)
    c[::3] = np.array([0, 1, -1, 7] * n, np.int32)[: c[::3].size]
    return x, y, f, c


def run_ops(tmp_path, part: int, grid: int, block: int, seed: int) -> None:
    x, y, f, c = _operands(grid * block, seed)
    s = np.float64(-1.25)
    args = [("a", x), ("b", y), ("fl", f), ("c", c), ("out", np.zeros(24 * grid * block, np.uint64)), ("s", s)]
    src = f"#define PART {part}\n" + OPS_SRC
    want = gxx_model(tmp_path, HOST_PRELUDE + src, "opsd", grid, block, args, flags=("-fno-fast-math",))["out"]
    sbits = int(s.view(np.uint64))
    got = emulate_src(src, None, grid, block, [(n, sbits if n == "s" else v) for n, v in args],
                      max_steps=10_000_000)["out"]
    # NaN results: the machine's are the canonical NaN (docs/subset.md); the host's carry payloads
    want = want.copy()
    dnan = ((want & np.uint64(0x7FFFFFFFFFFFFFFF)) > np.uint64(0x7FF0000000000000))
    got_dnan = got == np.uint64(R.NAN)
    fnan = (want >> np.uint64(32) == 0) & ((want & np.uint64(0x7FFFFFFF)) > np.uint64(0x7F800000))
    bad = np.nonzero((got != want) & ~(dnan & got_dnan) & ~(fnan & (got == np.uint64(R.FNAN))))[0]
    assert bad.size == 0, [(int(k) // 24, int(k) % 24, hex(int(got[k])), hex(int(want[k])),
                            float(x[k // 24]), float(y[k // 24])) for k in bad[:8]]


@need_gxx
@pytest.mark.parametrize("part", [1, 2, pytest.param(3, marks=pytest.mark.slow),
                                  pytest.param(4, marks=pytest.mark.slow), 5],
                         ids=["add-compare", "mul-promotion", "div-sqrt", "minmax-rounding", "conversions"])
def test_kernel_matches_gxx(tmp_path, part):
    """Every double operator, compound assignment, ++/--, the functions, the conversions in both
    directions, double in shared and local arrays, a device function taking and returning double,
    a double kernel parameter, and C++'s promotions (`0.3f * f` stays float, `0.3 * f` is double,
    `ff *= 0.3` computes in double and rounds once), on edge values and random pairs: the
    emulator against g++ compiling the same kernel text.  (Division, sqrt and the rounding
    functions are routine calls wired like the others; their routines are checked bit for bit
    by the native test, and these two parts run in the slow suite.)"""
    run_ops(tmp_path, part, 1, 12, part)


@pytest.mark.slow
@need_gxx
@pytest.mark.parametrize("part", [1, 2, 3, 4, 5])
def test_kernel_matches_gxx_more_operands(tmp_path, part):
    """The same on 4 launches of 128 threads each (512 operand pairs a part)."""
    for seed in range(4):
        run_ops(tmp_path, part, 2, 64, 10 + seed)


# ---------------------------------------------------------------- in the network

def test_double_launch_in_the_network():
    """A double kernel run by the linked layers step for step like the emulator (the routines'
    every instruction included): a float64 buffer, a double scalar parameter (two words), an
    add through double.cu, a compare and a sign flip; the results equal the host's double
    arithmetic bit for bit (a subnormal operand included)."""
    from lockstep import both

    src = r"""
    __global__ void dnet(const double *a, double *o, double s) {
        int i = threadIdx.x;
        double x = a[i] + s;
        o[i] = x < 0.5 ? -x : x;
    }
    """
    a = np.array([0.1, -2.5, 1e300, 5e-324])
    s = 0.2
    outs, _ = both("double_net", (1, 1, 1), (4, 1, 1), {"s": int(np.float64(s).view(np.uint64))},
                   {"a": a, "o": np.zeros(4)}, source=src, max_steps=4000)
    x = a + s
    want = np.where(x < 0.5, -x, x)
    assert outs["o"].view(np.uint64).tolist() == want.view(np.uint64).tolist()


# ---------------------------------------------------------------- launch arguments, diagnostics

def test_qgrun_double_scalar_and_float64_buffers(qgcc, qgrun, tmp_path, monkeypatch):
    """`--arg x=0.1` is the double nearest the decimal (not the float), `inf` and `nan` are
    accepted, a float64 .npy is a double buffer and `--out` writes one back; a wrong value is a
    one-line error naming the argument."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "k.cu").write_text("__global__ void k(const double *a, double *o, double x, double y) {\n"
                                   "    int i = threadIdx.x; o[i] = a[i] + x; o[i + 2] = y; }\n")
    assert qgcc("-S", "k.cu", "-o", "k.qsass").exit_code == 0  # qsass: qgrun's emulator needs no link
    np.save("a.npy", np.array([1e16, -0.5]))
    r = qgrun("k.qsass", "--grid", "1", "--block", "2", "--arg", "a=@a.npy", "--arg", "o=zeros:4",
              "--arg", "x=0.1", "--arg", "y=-inf", "--out", "o=o.npy", "--trace", "none", "--engine", "ref")
    assert r.exit_code == 0, r.stderr
    o = np.load("o.npy")
    assert o.dtype == np.float64
    assert o.view(np.uint64).tolist() == np.array([1e16 + 0.1, -0.5 + 0.1, -np.inf, -np.inf]).view(np.uint64).tolist()
    r = qgrun("k.qsass", "--grid", "1", "--block", "2", "--arg", "a=@a.npy", "--arg", "o=zeros:4",
              "--arg", "x=0.1.2", "--arg", "y=nan", "--engine", "ref")
    assert r.exit_code != 0 and "--arg x=0.1.2: expected a double (e.g. 1.5, -2e-3, inf, nan)" in r.stderr


@pytest.mark.parametrize("line, col, message", [
    ("long double d = 1;", 6, "'long double' is not supported; use 'double'"),
    ("double d = atan(1.0);", 12, "'atan' on double is not supported (qgcc's double functions are sqrt, fabs, "
                                 "fmin, fmax, floor, ceil, trunc, round, exp, log, log10, pow, sin, cos, tan, rsqrt, frexp, "
                                 "ldexp and scalbn); use 'atanf' on float"),
    ("atomicMax(p, 1.0);", 11, "'atomicMax' on 'double *' is not supported (on doubles only atomicAdd is); "
                               "use a 64-bit integer"),
    ("double d = 1.0 << 2;", 16, "invalid operands to binary '<<' ('double' and 'int')"),
    ("int n = abs(1.5);", 9, "'abs' needs an integer argument ('double'); use fabs"),
    ("int n = __reduce_add_sync(15, 1.5);", 31, "argument 2 of '__reduce_add_sync' is 64-bit ('double'); it takes "
                                                "a 32-bit value"),
])
def test_what_double_does_not_have_is_named(line, col, message):
    """Each construct outside the subset's double gets a named diagnostic at its position."""
    assert_error("__global__ void k(double *p) {\n" + line + "\n}\n", 2, col, message)


def test_double_with_the_other_constructs():
    """A double warp reduction through __shfl_down_sync (both halves from the same lane), a
    template instantiated with double, an extern __shared__ double array sized at launch and a
    reference parameter bound to a shared cell: the sums equal the host's double sums done in
    the same order."""
    from qgcc.frontend import compile_source
    from qgcc.ref.emulator import run
    from qgcc.runtime.launch import make_launch

    src = r"""
    template <typename T> __device__ T half_of(T v) { return v * 0.5; }
    __device__ void bump(double &v, double d) { v += d; }
    __global__ void k(const double *a, double *o) {
        extern __shared__ double dyn[];
        int i = threadIdx.x;
        double v = a[i];
        for (int off = 2; off > 0; off >>= 1)
            v += __shfl_down_sync(0xffffffff, v, off);
        dyn[i] = half_of(a[i]);
        bump(dyn[i], 1.0);
        o[i] = i == 0 ? v : dyn[i];
    }
    """
    prog = compile_source(src, "k.cu")
    a = np.array([0.1, 0.2, 0.3, 1e-17])
    launch = make_launch(prog, prog.kernels[0], (1, 1, 1), (4, 1, 1), {},
                         {"a": a, "o": np.zeros(4)}, shared_bytes=32)
    res = run(launch, max_steps=100_000)
    o = launch.read_buffer(res.memory, "o")
    lanes = a.copy()
    for off in (2, 1):  # the shuffle's order: lane i adds lane i + off (lanes past 3 keep their own)
        lanes = lanes + np.array([lanes[j + off] if j + off < 4 else lanes[j] for j in range(4)])
    want = np.concatenate([[lanes[0]], a[1:] * 0.5 + 1.0])
    assert o.view(np.uint64).tolist() == want.view(np.uint64).tolist()


