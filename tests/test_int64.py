"""64-bit integers (`long long`, `unsigned long long`, `long`, `int64_t`, `uint64_t`): every
operator, C++'s conversions and literal types, memory of every space, kernel parameters and
atomicAdd, against g++ compiling the same kernel text (LP64, like CUDA on Linux) and, for the
cases C++ leaves undefined, against the documented rules (docs/subset.md, "64-bit integers")."""

from __future__ import annotations

import numpy as np
import pytest

from frontcheck import assert_error, emulate_src
from gxx import ROUTINE_SHIM, gxx_model, need_gxx

M64 = (1 << 64) - 1
EDGES = [0, 1, -1, 2, 3, 0x7FFFFFFF, -0x80000000, 0xFFFFFFFF, 1 << 32, (1 << 32) + 1, (1 << 63) - 1,
         -(1 << 63), 0x123456789ABCDEF, -1000000007]

# What the CUDA headers give a kernel and the g++ shim does not.
HOST_PRELUDE = r"""
#include <cstdlib>
static unsigned __float_as_uint(float f) { unsigned u; memcpy(&u, &f, 4); return u; }
template <class T> static T min(T a, T b) { return a < b ? a : b; }
template <class T> static T max(T a, T b) { return a < b ? b : a; }
using std::abs;
"""

OPS_SRC = r"""
#define N 42
__device__ long long twice(long long v) { return v + v; }

__global__ void ops64(const long long *a, const long long *b, const unsigned long long *ua,
                      const unsigned long long *ub, const int *c, const unsigned *d, const float *fl,
                      unsigned long long *out, long long s, unsigned long us) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    long long x = a[i], y = b[i];
    unsigned long long u = ua[i], v = ub[i];
    int w = c[i];
    unsigned z = d[i];
    float f = fl[i];
    unsigned long long *o = out + i * N;
#if PART == 1
    o[0] = x + y; o[1] = x - y; o[2] = x * y;
    bool ok = y != 0 && !(x == (-9223372036854775807ll - 1) && y == -1);
    o[3] = ok ? x / y : 0;
    o[4] = ok ? x % y : 0;
    o[5] = v ? u / v : 0;
    o[6] = v ? u % v : 0;
    o[7] = x << (y & 63); o[8] = x >> (y & 63); o[9] = u >> (v & 63); o[10] = u << (w & 63);
    o[11] = x & y; o[12] = x | u; o[13] = x ^ v; o[14] = ~x; o[15] = -u; o[16] = !x;
    o[17] = (x < y) | (x <= y) << 1 | (x > y) << 2 | (x >= y) << 3 | (x == y) << 4 | (x != y) << 5
          | (u < v) << 6 | (u <= v) << 7 | (u > v) << 8 | (u >= v) << 9 | (x < u) << 10 | (w < x) << 11
          | (z < x) << 12 | (w < u) << 13 | (x < 0) << 14 | (u == 0) << 15;
    o[18] = x + w; o[19] = u + w; o[20] = z * x; o[21] = x - z; o[22] = w * u; o[23] = x / 7 + u % 10;
#else
    o[24] = (int)x; o[25] = (unsigned)u; o[26] = (char)x; o[27] = (unsigned char)u;
    o[28] = (bool)(x & 0xFFFFFFFF00000000) + 2 * (bool)(u & 0xFFFFFFFF);
    o[29] = (long long)w; o[30] = (unsigned long long)w; o[31] = (long long)z;
    o[32] = __float_as_uint((float)x) | (unsigned long long)__float_as_uint((float)u) << 32;
    o[33] = (f > -9.2e18f && f < 9.2e18f) ? (long long)f : 1;
    o[34] = (f > -1.0f && f < 1.8e19f) ? (unsigned long long)f : 2;
    long long t = x;
    t += y; t *= w; t -= z; t <<= (w & 63); t >>= 3; t |= u; t ^= 1; t &= ~v; t %= 1000;
    o[35] = t;
    t = x;
    o[36] = t++;
    o[37] = ++t + (t--) - (--t);
    o[38] = s * x + us;
    o[39] = (x < 3000000000) + (u > 0xFFFFFFFF) * 2 + (-1 < 0xFFFFFFFFFFFFFFFF) * 4 + (w < 2147483648) * 8
          + (z + 4294967296) * 16;
    o[40] = 3000000000 * 3 + 0x7FFFFFFFFFFFFFFF + x + (w & 1 ? x : u) + min(x, y) + max(u, v) + abs(x);
    unsigned long long acc = 0;
    for (long long k = x & 15; k > 0; k--)
        acc += twice(k) * u;
    o[41] = acc;
#endif
}
"""


def _operands(n: int, seed: int):
    """Operands for n threads: launch `seed` of two takes its half of the edge pairs, then random
    values; fewer threads than that take edge pairs spread over the whole table."""
    rng = np.random.default_rng(seed)
    table = [(p, q) for p in EDGES for q in EDGES]
    half = len(table) // 2
    pairs = table[seed * half:(seed + 1) * half] if n >= half else table[5::len(table) // n][:n]
    extra = n - len(pairs)
    x = np.array([p for p, _ in pairs] + list(rng.integers(-(1 << 63), 1 << 63, extra, dtype=np.int64)), np.int64)
    y = np.array([q for _, q in pairs] + list(rng.integers(-(1 << 63), 1 << 63, extra, dtype=np.int64)), np.int64)
    y[len(pairs):] >>= rng.integers(0, 64, extra)  # small divisors too
    u = rng.integers(0, 1 << 64, n, dtype=np.uint64)
    u[::3] = x.view(np.uint64)[::3]
    v = rng.integers(0, 1 << 64, n, dtype=np.uint64) >> rng.integers(0, 64, n).astype(np.uint64)
    w = rng.integers(-(1 << 31), 1 << 31, n, dtype=np.int64).astype(np.int32)
    w[::4] = np.array([-1, 0, 7, -7] * n, np.int32)[: w[::4].size]
    z = rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
    f = (rng.standard_normal(n) * 10.0 ** rng.integers(0, 20, n)).astype(np.float32)
    return x, y, u, v, w, z, f


@need_gxx
@pytest.mark.parametrize("part, launches", [(1, 1), (2, 1), pytest.param(1, 2, marks=pytest.mark.slow),
                                             pytest.param(2, 2, marks=pytest.mark.slow)],
                         ids=["arith-short", "conv-short", "arith-all-edges", "conv-all-edges"])
def test_every_operator_and_conversion_matches_gxx(tmp_path, part, launches):
    """One operand pair per thread: every pair of edge values (0, +-1, the 32-bit limits, 2^32,
    the 64-bit limits, ...) and random values over two launches of 128 threads (slow), or the
    8 pairs spread over the table in the default suite; C++ with -fwrapv is the model (signed
    overflow wraps, as on a GPU); undefined cases are left out by the kernel's own guards."""
    grid, block = (2, 64) if launches == 2 else (1, 8)
    for launch in range(launches):  # every edge pair over two launches (64 KiB of memory holds 128 threads)
        x, y, u, v, w, z, f = _operands(grid * block, launch)
        args = [("a", x), ("b", y), ("ua", u), ("ub", v), ("c", w), ("d", z), ("fl", f),
                ("out", np.zeros(42 * grid * block, np.uint64)), ("s", np.int64(-3)),
                ("us", np.uint64(0xFEDCBA9876543210))]
        src = f"#define PART {part}\n" + OPS_SRC  # two kernels: one would exceed the 1024 instructions
        want = gxx_model(tmp_path, HOST_PRELUDE + src, "ops64", grid, block, args, flags=("-fwrapv",))["out"]
        got = emulate_src(src, None, grid, block, [(n, int(val) if isinstance(val, np.generic) else val)
                                                   for n, val in args], max_steps=10_000_000)["out"]
        bad = np.nonzero(got != want)[0]
        assert bad.size == 0, [(int(k) // 42, int(k) % 42, int(got[k]), int(want[k])) for k in bad[:10]]


def test_undefined_cases_follow_the_documented_rules():
    """Division by zero, LLONG_MIN / -1, shift amounts of 64 and more (the low 6 bits count), and
    float -> 64-bit beyond the range or NaN (CUDA's cvt.rzi: saturate, NaN -> 0)."""
    src = r"""
    __global__ void k(const long long *a, const long long *b, const float *f, unsigned long long *o) {
        int i = threadIdx.x;
        long long x = a[i], y = b[i];
        o[i * 8 + 0] = x / y; o[i * 8 + 1] = x % y;
        o[i * 8 + 2] = (unsigned long long)x / (unsigned long long)y;
        o[i * 8 + 3] = (unsigned long long)x % (unsigned long long)y;
        o[i * 8 + 4] = x << (y + 64); o[i * 8 + 5] = x >> (int)(y + 128);
        o[i * 8 + 6] = (long long)f[i]; o[i * 8 + 7] = (unsigned long long)f[i];
    }
    """
    lmin = -(1 << 63)
    a = np.array([7, -7, lmin, lmin], np.int64)
    b = np.array([0, 0, -1, 3], np.int64)
    f = np.array([np.nan, 1e30, -1e30, -np.inf], np.float32)
    o = emulate_src(src, None, 1, 4, [("a", a), ("b", b), ("f", f), ("o", np.zeros(32, np.uint64))])["o"]
    rows = [[int(v) for v in o[i * 8:i * 8 + 8]] for i in range(4)]
    assert rows[0][:4] == [M64, 7, M64, 7]  # x / 0 = -1 for x >= 0; x % 0 = x; unsigned: all ones, x
    assert rows[1][:4] == [1, -7 & M64, M64, -7 & M64]
    assert rows[2][:2] == [lmin & M64, 0]  # LLONG_MIN / -1 wraps
    assert rows[3][4] == (lmin << 3) & M64 and rows[3][5] == (lmin >> 3) & M64
    assert [r[6] for r in rows] == [0, (1 << 63) - 1, lmin & M64, lmin & M64]
    assert [r[7] for r in rows] == [0, M64, 0, 0]


def test_memory_spaces_parameters_and_atomic_add():
    """64-bit elements in shared, local and global arrays (two cells each, the low word first,
    so pointer arithmetic counts elements), kernel parameters (two words), and atomicAdd on
    unsigned long long from every thread of several warps (carries between the halves)."""
    src = r"""
    __global__ void k(const unsigned long long *in, unsigned long long *sum, long long *rev, long long base) {
        __shared__ long long s[16];
        long long loc[3] = {base, base * 2, 0};
        int i = threadIdx.x;
        s[i] = (long long)in[i] + base;
        __syncthreads();
        loc[2] = s[15 - i];
        const long long *p = &loc[0];
        p += 2;
        rev[i] = *p - (p - loc);
        atomicAdd(sum, in[i]);
        atomicAdd(&sum[1], 1ull);
    }
    """
    inp = np.array([0xFFFFFFFF, 0xFFFFFFFF00000001, 5, 1 << 40] * 4, np.uint64)
    base = -(1 << 35)
    out = emulate_src(src, None, 1, 16, [("in", inp), ("sum", np.zeros(2, np.uint64)),
                                         ("rev", np.zeros(16, np.int64)), ("base", base)])
    assert int(out["sum"][0]) == sum(int(v) for v in inp) & M64 and int(out["sum"][1]) == 16
    s64 = lambda v: ((v + (1 << 63)) & M64) - (1 << 63)  # noqa: E731
    assert [int(v) for v in out["rev"]] == [s64(int(inp[15 - i]) + base - 2) for i in range(16)]


def test_literal_types_follow_cxx():
    """An unsuffixed decimal literal is int, then long long (never unsigned); a hex one may be
    unsigned int or unsigned long long; the suffixes u, l, ll, ul, ull pick the type."""
    src = r"""
    #include <climits>
    __global__ void k(unsigned long long *o) {
        o[8] = LLONG_MIN; o[9] = LONG_MAX; o[10] = ULLONG_MAX + (LLONG_MIN < 0);
        o[0] = -1 < 2147483648;            // long long: true
        o[1] = -1 < 0x80000000;            // unsigned int: false
        o[2] = -1 < 0x100000000;           // long long: true
        o[3] = -1 < 0x8000000000000000;    // unsigned long long: false
        o[4] = -1 < 1ul;                   // unsigned long: false
        o[5] = -1ll < 1u;                  // long long: true
        o[6] = 4000000000 * 4;             // 64-bit product
        o[7] = 1ull << 63;
    }
    """
    o = emulate_src(src, None, 1, 1, [("o", np.zeros(11, np.uint64))])["o"]
    assert [int(v) for v in o] == [1, 0, 1, 0, 0, 1, 16000000000, 1 << 63, 1 << 63, (1 << 63) - 1, 0]


ERRORS = [
    ("__global__ void k(long long *p) { atomicCAS(p, 0, 1); }", 1, 45,
     "'atomicCAS' on 'long long *' is not supported (the machine's ATOM.CAS compares one 32-bit cell, "
     "and two of them cannot compare and swap 64 bits at once)"),
    ("__global__ void k(long long *p) { p[0] = __ballot_sync(0xf, p[1]); }", 1, 61,
     "argument 2 of '__ballot_sync' is 64-bit ('long long'); it takes a 32-bit value"),
    ("__global__ void k(int *p) { unsigned long long long x; }", 1, 48, "'long long long' is too long"),
]


@pytest.mark.parametrize("src, line, col, message", ERRORS, ids=[e[3][:30] for e in ERRORS])
def test_what_is_not_supported_is_named(src, line, col, message):
    assert_error(src, line, col, message)


def test_the_network_agrees_with_the_emulator():
    """A short launch in the network, compared step by step with the emulator: a 64-bit
    parameter, loads and stores of pairs, add with carry, multiply, compare and shift, and the
    warp reductions and __match_all_sync (test_int64_intrinsics.py checks them in full)."""
    from lockstep import both

    src = r"""
    __global__ void k(const long long *a, long long *o, int *r, long long s) {
        int i = threadIdx.x;
        long long x = a[i];
        o[i] = (x < s) ? x * 3 + s : (x >> 7) - s;
        int same;
        r[i] = __reduce_add_sync(0xb, (int)x) + __reduce_max_sync(0xf, (unsigned)x) +
               (int)__match_all_sync(0xf, x >> 62, &same) * 16 + same;
    }
    """
    a = np.array([5, -(1 << 40), (1 << 62) + 12345, -1], np.int64)
    s = 0xFFFFFFFF
    outs, _ = both("int64_net", (1, 1, 1), (4, 1, 1), {"s": s},
                   {"a": a, "o": np.zeros(4, np.int64), "r": np.zeros(4, np.int32)}, source=src, max_steps=3000)
    want = [(int(x) * 3 + s if x < s else (int(x) >> 7) - s) for x in a]
    assert [int(v) for v in outs["o"]] == want
    low = [int(x) & 0xFFFFFFFF for x in a]
    red = ((low[0] + low[1] + low[3]) + max(low)) & 0xFFFFFFFF
    red -= (1 << 32) if red >> 31 else 0
    assert [int(v) for v in outs["r"]] == [red] * 4  # x >> 62 differs between lanes: no match, same = 0



NATIVE_MAIN = r"""
int main() {
    unsigned long long p[2];
    while (fread(p, 8, 2, stdin) == 2) {
        unsigned long long x = p[0], y = p[1];
        float f; unsigned fb = (unsigned)y; memcpy(&f, &fb, 4);
        unsigned long long r[8] = {
            __qg_udivmod64(x, y, 0), __qg_udivmod64(x, y, 1),
            (unsigned long long)__qg_sdivmod64((long long)x, (long long)y, 0),
            (unsigned long long)__qg_sdivmod64((long long)x, (long long)y, 1),
            __float_as_uint(__qg_ull2f(x)), __float_as_uint(__qg_ll2f((long long)x)),
            __qg_f2ull(f), (unsigned long long)__qg_f2ll(f)};
        fwrite(r, 8, 8, stdout);
    }
    return 0;
}
"""


@need_gxx
def test_division_and_float_conversion_routines_natively(tmp_path):
    """int64.cu's routines, compiled by g++ from the same text the machine runs, on 40,000
    operands: division and remainder against exact integer arithmetic (and the documented
    rules for x / 0 and LLONG_MIN / -1); 64-bit -> float against the host's correctly rounded
    conversion; float -> 64-bit against truncation with CUDA's saturation (NaN -> 0)."""
    import subprocess
    from pathlib import Path

    text = (Path(__file__).parents[1] / "src/qgcc/frontend/int64.cu").read_text()
    cpp = tmp_path / "int64.cpp"
    cpp.write_text(ROUTINE_SHIM + text + NATIVE_MAIN)
    exe = tmp_path / "int64"
    subprocess.run(["g++", "-O2", "-std=c++17", "-o", str(exe), str(cpp)], check=True, capture_output=True)
    rng = np.random.default_rng(11)
    n = 40_000
    x = rng.integers(0, 1 << 64, n, dtype=np.uint64) >> rng.integers(0, 64, n).astype(np.uint64)
    y = rng.integers(0, 1 << 64, n, dtype=np.uint64) >> rng.integers(0, 64, n).astype(np.uint64)
    edges = np.array([v & M64 for v in EDGES], np.uint64)
    x[:len(edges) ** 2] = np.repeat(edges, len(edges))
    y[:len(edges) ** 2] = np.tile(edges, len(edges))
    floats = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 0.5, -0.99, 1.0, -1.0, 2.0 ** 63, -2.0 ** 63,
                       2.0 ** 64, 2.0 ** 62 * 3, -2.0 ** 62 * 3, 1e-45, 16777217.0], np.float32)
    y[-len(floats):] = floats.view(np.uint32)
    y[-5000:-len(floats)] = rng.integers(0, 1 << 32, 5000 - len(floats), dtype=np.uint64)  # any float
    out = subprocess.run([str(exe)], input=np.stack([x, y], 1).tobytes(), check=True,
                         capture_output=True).stdout
    got = np.frombuffer(out, np.uint64).reshape(n, 8)
    want_f = x.astype(np.float32).view(np.uint32), x.view(np.int64).astype(np.float32).view(np.uint32)
    assert np.array_equal(got[:, 4], want_f[0]) and np.array_equal(got[:, 5], want_f[1])
    for i in range(n):
        xu, yu = int(x[i]), int(y[i])
        xs, ys = s64(xu), s64(yu)
        if yu == 0:
            div = [M64, xu, (-1 if xs >= 0 else 1) & M64, xu]
        else:
            q = abs(xs) // abs(ys) * (1 if (xs < 0) == (ys < 0) else -1)
            div = [xu // yu, xu % yu, q & M64, (xs - q * ys) & M64]
        assert [int(v) for v in got[i, :4]] == div, (i, xu, yu)
        f = float(np.uint32(yu & 0xFFFFFFFF).view(np.float32))
        if f != f:
            conv = [0, 0]
        else:
            t = int(f) if abs(f) != float("inf") else (1 << 70 if f > 0 else -(1 << 70))
            conv = [min(max(t, 0), M64), min(max(t, -(1 << 63)), (1 << 63) - 1) & M64]
        assert [int(v) for v in got[i, 6:]] == conv, (i, f)


def s64(v: int) -> int:
    v &= M64
    return v - (1 << 64) if v >> 63 else v


def test_with_the_other_constructs():
    """64-bit values through a reference parameter (a register and a memory cell), a template
    instantiated with long long (explicitly and deduced), a 2-D local array, extern __shared__
    memory sized at launch (8 bytes an element), a bit cast of a narrowed value and a loop on a
    64-bit counter."""
    from qgcc.frontend import compile_source
    from qgcc.ref.emulator import run
    from qgcc.runtime.launch import make_launch

    src = r"""
    __device__ void bump(long long &v, long long d) { v += d; }
    template <typename T> __device__ T twice(T v) { return v * 2; }
    __global__ void k(long long *o) {
        extern __shared__ long long dyn[];
        long long loc[2][3] = {{1, 2, 3}, {4, 5, 6}};
        int i = threadIdx.x;
        long long x = 5000000000ll * (i + 1);
        bump(x, 7);
        bump(o[i * 4 + 3], -1);
        dyn[i] = x;
        __syncthreads();
        o[i * 4 + 0] = x;
        o[i * 4 + 1] = twice(x) + twice<long long>(loc[1][i % 3]) + dyn[3 - i];
        o[i * 4 + 2] = __float_as_int(__int_as_float(x)) + (x ? 1 : 0);
        long long n = 3; int c = 0;
        while (n--) c++;
        o[i * 4 + 2] += c * 100;
    }
    """
    prog = compile_source(src, "t.cu")
    launch = make_launch(prog, prog.kernels[0], (1, 1, 1), (4, 1, 1), {}, {"o": np.zeros(16, np.int64)},
                         shared_bytes=32)
    o = launch.read_buffer(run(launch).memory, "o").reshape(4, 4)
    for i in range(4):
        x = 5000000000 * (i + 1) + 7
        low = ((x & 0xFFFFFFFF) ^ (1 << 31)) - (1 << 31)
        assert [int(v) for v in o[i]] == [x, 2 * x + 2 * (4 + i % 3) + 5000000000 * (4 - i) + 7, low + 301, -1]
