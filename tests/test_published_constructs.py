"""Constructs that published CUDA uses unchanged (issue 27), each taken the way a user takes it:
`qgcc k.cu --no-link -o k.qg`, then `qgrun k.qg` with .npy buffers, and the result compared with
an independent model: g++ compiling the same kernel text (tests/gxx.py) where threads do not
communicate, numpy otherwise, or CUDA's own definition of the construct (a second kernel
spelled the way the headers define it).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from frontcheck import assert_error, emulate_src
from gxx import gxx_model, need_gxx

F32 = np.float32


def cli_run(qgcc, qgrun, tmp_path, src: str, kernel: str, grid, block, arrays: dict, scalars=None,
            instantiate=(), engine="ref", extra=()) -> dict:
    """Compile src to a .qg with the qgcc command, read it back with qgrun, return the buffers."""
    d = tmp_path / kernel.replace("<", "_").replace(">", "_").replace(",", "_").replace(" ", "")
    d.mkdir(exist_ok=True)
    (d / "k.cu").write_text(src)
    inst = [x for i in instantiate for x in ("--instantiate", i)]
    r = qgcc(d / "k.cu", "--no-link", "-o", d / "k.qg", *inst)
    assert r.exit_code == 0, r.stderr
    argv = [d / "k.qg", "--kernel", kernel, "--engine", engine, "--grid", str(grid), "--block", str(block),
            "--trace", "none", *extra]
    for n, v in arrays.items():
        np.save(d / f"{n}.npy", v)
        argv += ["--arg", f"{n}=@{d / f'{n}.npy'}", "--out", f"{n}={d / f'o_{n}.npy'}"]
    for n, v in (scalars or {}).items():
        argv += ["--arg", f"{n}={v}"]
    r = qgrun(*argv)
    assert r.exit_code == 0, r.stderr
    return {n: np.load(d / f"o_{n}.npy") for n in arrays}


# ---------------------------------------------------------------- float overloads, umin/umax

OVERLOADS = r"""
#include <math.h>
__global__ void shade(float *out, const float *x, unsigned *u, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float a = x[i];
    // CUDA's headers overload these on float: the float function, a float result
    out[i] = sqrt(a) * a + fabs(a - 1.5f) * floor(a) + fmax(a, 0.75f) / ceil(a + 0.5f)
             + fmin(trunc(a), round(a * 3.0f));
    out[n + i] = (float)sqrt((double)a) + sqrt(i);    // double and int arguments: the double function
    u[i] = umin(u[i], 7u) + umax(3u, (unsigned)i);
}
"""

TRANSCENDENTAL = r"""
__global__ void wave(float *out, const float *x) {
    int i = threadIdx.x;
    float a = x[i];
    out[i] = cos(a) + sin(a) * exp(-a) + tanh(a) + pow(a, 2) + log(a + 2.0f) + atan2(a, 0.5f);
}
"""
GXX_UMINMAX = "static unsigned umin(unsigned a, unsigned b) { return a < b ? a : b; }\n" \
              "static unsigned umax(unsigned a, unsigned b) { return a > b ? a : b; }\n"
# the same kernel written with the functions the float overloads are defined to call
TRANSCENDENTAL_F = TRANSCENDENTAL.replace("cos(", "cosf(").replace("sin(", "sinf(").replace(
    "exp(", "expf(").replace("tanh(", "tanhf(").replace("pow(", "powf(").replace("log(", "logf(").replace(
    "atan2(", "atan2f(")


@need_gxx
def test_math_functions_on_float_call_the_float_overload_as_cuda_does(qgcc, qgrun, tmp_path):
    """`sqrt(x)` on a float is sqrtf and stays float (g++ with <math.h> picks the same
    overloads; the exact functions make it bit-exact); `cos(x)` on a float is cosf, as the
    CUDA headers define it; umin/umax are min/max on unsigned."""
    n = 12
    x = np.linspace(0.3, 5.1, n).astype(F32)
    out = np.zeros(2 * n, F32)
    u = (np.arange(n) * 3).astype(np.uint32)
    got = cli_run(qgcc, qgrun, tmp_path, OVERLOADS, "shade", 3, 4, {"out": out, "x": x, "u": u},
                  {"n": n})
    want = gxx_model(tmp_path, GXX_UMINMAX + OVERLOADS, "shade", 3, 4, [("out", out), ("x", x), ("u", u), ("n", n)])
    assert got["out"].tobytes() == want["out"].tobytes()
    assert got["u"].tolist() == want["u"].tolist()

    x = np.linspace(0.1, 2.9, 8).astype(F32)
    got = cli_run(qgcc, qgrun, tmp_path, TRANSCENDENTAL, "wave", 1, 8, {"out": np.zeros(8, F32), "x": x})
    (tmp_path / "f").mkdir()
    want = cli_run(qgcc, qgrun, tmp_path / "f", TRANSCENDENTAL_F, "wave", 1, 8, {"out": np.zeros(8, F32), "x": x})
    assert got["out"].tobytes() == want["out"].tobytes()


# ---------------------------------------------------------------- predefined macros, template literals

ARCH = r"""
#include <stdbool.h>
template <unsigned int sortDir>
__global__ void pick(int *out) {
    int i = threadIdx.x;
#if defined(__CUDACC__) && __CUDA_ARCH__ >= 700 && CUDART_VERSION >= 9000
    out[i] = sortDir ? __CUDA_ARCH__ + i : -i;   // the device pass of nvcc for sm_70
#else
    out[i] = -1;
#endif
}
"""


def test_cuda_arch_is_700_and_template_arguments_take_integer_suffixes(qgcc, qgrun, tmp_path):
    """nvcc's device pass defines __CUDACC__ and __CUDA_ARCH__ (qgcc: 700); a kernel template
    named at compile time takes C's integer suffixes ('1U', as the CUDA samples' host code
    writes it); <stdbool.h> is accepted."""
    got = cli_run(qgcc, qgrun, tmp_path, ARCH, "pick<1U>", 1, 4, {"out": np.zeros(4, np.int32)},
                  instantiate=["pick<1U>"])
    assert got["out"].tolist() == [700, 701, 702, 703]
    got = cli_run(qgcc, qgrun, tmp_path, ARCH, "pick<0ul>", 1, 4, {"out": np.zeros(4, np.int32)},
                  instantiate=["pick<0ul>"])
    assert got["out"].tolist() == [0, -1, -2, -3]


# ---------------------------------------------------------------- the SharedMemory<T> idiom

SHARED_MEMORY = r"""
// The CUDA samples' way to get a typed view of dynamic shared memory in a kernel template: an
// empty struct whose conversion operator returns the extern array, specialised for double.
template <class T> struct SharedMemory {
    __device__ inline operator T *() {
        extern __shared__ int __smem[];
        return (T *)__smem;
    }
    __device__ inline operator const T *() const {
        extern __shared__ int __smem[];
        return (T *)__smem;
    }
};
template <> struct SharedMemory<double> {
    __device__ inline operator double *() {
        extern __shared__ double __smem_d[];
        return (double *)__smem_d;
    }
};
template <typename T> struct Bias { T b; __device__ T add(T x) const { return x + b; } };
template <> struct Bias<int> { int b; __device__ int add(int x) const { return x + 2 * b; } };

template <class T>
__global__ void blockSum(const T *in, T *out, unsigned int n) {
    T *sdata = SharedMemory<T>();
    Bias<T> bias = {1};
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * (blockDim.x * 2) + threadIdx.x;
    T v = (i < n) ? bias.add(in[i]) : 0;
    if (i + blockDim.x < n) v += in[i + blockDim.x];
    sdata[tid] = v;
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) sdata[tid] = v = v + sdata[tid + s];
        __syncthreads();
    }
    if (tid == 0) out[blockIdx.x] = v;
}
"""


def block_sum_model(x: np.ndarray, bias, block: int) -> np.ndarray:
    """The kernel's tree, in its order, with numpy's arithmetic of x's dtype."""
    out = []
    for b in range(len(x) // (2 * block)):
        lo = x[b * 2 * block:(b * 2 + 1) * 2 * block]
        v = [lo[t] + bias + lo[t + block] for t in range(block)]
        s = block // 2
        while s:
            v = [v[t] + v[t + s] if t < s else v[t] for t in range(block)]
            s //= 2
        out.append(v[0])
    return np.array(out, x.dtype)


@pytest.mark.parametrize("engine", ["ref", pytest.param("neural", marks=pytest.mark.slow)])
def test_shared_memory_struct_conversion_operator_and_class_specialisation(qgcc, qgrun, tmp_path, engine):
    """An empty struct with conversion operators, value-initialised with `SharedMemory<T>()`,
    gives the kernel its dynamic shared array; `template <> struct` replaces the class template
    for its arguments (Bias<int> adds 2b, Bias<float> b; SharedMemory<double> is the samples'
    specialisation); in the network, one short float launch."""
    n, block = (32, 4) if engine == "ref" else (8, 4)
    xi = (np.arange(n, dtype=np.int32) * 7 - 50)
    xf = np.linspace(-3, 5, n).astype(F32)
    xd = np.linspace(-3, 5, n) / 3
    cases = (("blockSum<int>", xi, 2), ("blockSum<float>", xf, F32(1)), ("blockSum<double>", xd, 1.0))
    for kernel, x, bias in cases if engine == "ref" else cases[1:2]:
        got = cli_run(qgcc, qgrun, tmp_path, SHARED_MEMORY, kernel, n // (2 * block), block,
                      {"in": x, "out": np.zeros(n // (2 * block), x.dtype)}, {"n": n},
                      instantiate=["blockSum<int>", "blockSum<float>", "blockSum<double>"], engine=engine,
                      extra=["--shared", str(x.itemsize * block)])
        assert got["out"].tobytes() == block_sum_model(x, bias, block).tobytes(), kernel


def test_an_empty_struct_is_a_value(qgcc, qgrun, tmp_path):
    """`S()` value-initialises an aggregate (every member 0); an empty struct takes one cell that
    nothing reads, so it can be declared, copied and passed (through `qgcc -o k.qg`, `qgrun`)."""
    src = r"""
struct Tag { __device__ int twice(int x) const { return 2 * x; } };
struct P { int a; float f; };
__device__ int use(Tag t, int x) { return t.twice(x) + 1; }
__global__ void k(int *o) {
    Tag t; Tag u = Tag(); P p = P();
    o[threadIdx.x] = use(u, t.twice(threadIdx.x)) + p.a + (int)p.f;
}
"""
    got = cli_run(qgcc, qgrun, tmp_path, src, "k", 1, 4, {"o": np.zeros(4, np.int32)})
    assert got["o"].tolist() == (2 * (2 * np.arange(4)) + 1 + 0 + 0).tolist()  # use(u, twice(i)) + p.a + p.f


# ---------------------------------------------------------------- tiles wider than the warp

WIDE_TILES = r"""
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
// the CUDA samples' reduce4 ending, a cg::reduce of floats per tile, and a tile-local scan
__global__ void tiles(const int *in, int *out, const float *fin, float *fout, unsigned *scan) {
    cg::thread_block cta = cg::this_thread_block();
    cg::thread_block_tile<32> tile32 = cg::tiled_partition<32>(cta);
    unsigned tid = cta.thread_rank();
    int mySum = in[blockIdx.x * blockDim.x + tid];
    if (tid < 32) {                                   // only the first tile shuffles
        for (int offset = tile32.size() / 2; offset > 0; offset /= 2)
            mySum += tile32.shfl_down(mySum, offset);
    }
    if (tid == 0) out[blockIdx.x] = mySum;
    float f = cg::reduce(tile32, fin[blockIdx.x * blockDim.x + tid], cg::plus<float>());
    if (tile32.thread_rank() == 0) fout[blockIdx.x * tile32.meta_group_size() + tile32.meta_group_rank()] = f;
    auto t8 = cg::tiled_partition<8>(cta);
    unsigned v = tid + 1;
    for (int i = 1; i < 8; i *= 2) {
        unsigned n = t8.shfl_up(v, i);
        if (t8.thread_rank() >= i) v += n;
    }
    cg::sync(t8);
    scan[blockIdx.x * blockDim.x + tid] = v ^ t8.shfl_xor(v, 3);
}
"""


def wide_tiles_model(x, fx, grid, block):
    out = x.reshape(grid, block)[:, :32].sum(axis=1).astype(np.int32)
    fout = []
    for b in range(grid):
        for t in range(block // 32):
            v = list(fx[b * block + t * 32:b * block + t * 32 + 32])
            k = 1
            while k < 32:  # the butterfly: v = v + partner's v, partners rank ^ 1, ^ 2, ...
                v = [F32(v[r] + v[r ^ k]) for r in range(32)]
                k *= 2
            fout.append(v[0])
    tid = np.arange(grid * block) % block
    inc = np.array([sum(range(t - t % 8 + 1, t + 2)) for t in tid], np.uint32)
    partner = np.array([(i - i % 8) + ((i % 8) ^ 3) for i in range(grid * block)])
    return out, np.array(fout, F32), inc ^ inc[partner]


@pytest.mark.parametrize("engine", ["ref", pytest.param("neural", marks=pytest.mark.slow)])
def test_tiles_of_32_and_8_threads_shuffle_reduce_and_sync(qgcc, qgrun, tmp_path, engine):
    """Tiles wider than the 4-lane warp: shuffles in code only the first tile runs, a float
    cg::reduce per tile in the documented butterfly order, a scan with shfl_up and a shfl_xor,
    against numpy, over two blocks (the tile barriers' counters carry over); the network run
    (slow: waiting threads spin) is one block."""
    grid, block = (2, 32) if engine == "ref" else (1, 32)
    x = (np.arange(grid * block, dtype=np.int32) * 5 - 40)
    fx = np.linspace(-1, 3, grid * block).astype(F32)
    got = cli_run(qgcc, qgrun, tmp_path, WIDE_TILES, "tiles", grid, block,
                  {"in": x, "out": np.zeros(grid, np.int32), "fin": fx, "fout": np.zeros(grid * block // 32, F32),
                   "scan": np.zeros(grid * block, np.uint32)}, engine=engine)
    out, fout, scan = wide_tiles_model(x, fx, grid, block)
    assert got["out"].tolist() == out.tolist()
    assert got["fout"].tobytes() == fout.tobytes()
    assert got["scan"].tolist() == scan.tolist()


# ---------------------------------------------------------------- groups as parameters, __device__ globals

GROUPS = r"""
#include <cooperative_groups.h>
using namespace cooperative_groups;
// simpleCooperativeGroups' shape: one reduction for any group, passed as a thread_group
__device__ int sumReduction(thread_group g, int *x, int val) {
    int lane = g.thread_rank();
    for (int i = g.size() / 2; i > 0; i /= 2) {
        x[lane] = val;
        g.sync();
        if (lane < i) val += x[lane + i];
        g.sync();
    }
    return g.thread_rank() == 0 ? val : -1;
}
__device__ void rankOf(const thread_block &b, int *o) { o[b.thread_rank()] = (int)b.thread_rank(); }

// threadFenceReduction's shape: a __device__ counter of finished blocks and per-block partials
__device__ unsigned int retirementCount = 0;
__device__ float partials[8];
__global__ void groups(int *out, float *total, int *ranks, float *mag) {
    thread_block block = this_thread_block();
    extern __shared__ int workspace[];
    int r = sumReduction(block, workspace, block.thread_rank() + blockIdx.x);
    block.sync();
    thread_block_tile<16> t16 = tiled_partition<16>(block);
    int off = block.thread_rank() - t16.thread_rank();
    int r16 = sumReduction(t16, workspace + off, t16.thread_rank());
    rankOf(block, ranks + blockIdx.x * blockDim.x);
    mag[blockIdx.x * blockDim.x + block.thread_rank()] = abs(-0.5f * block.thread_rank());
    if (block.thread_rank() == 0) {
        out[blockIdx.x * 2] = r;
        out[blockIdx.x * 2 + 1] = r16;
        partials[blockIdx.x] = r * 0.5f;
        __threadfence();
        unsigned ticket = atomicInc(&retirementCount, gridDim.x);
        if (ticket == gridDim.x - 1) {          // the last block sums every block's partial
            float s = 0.0f;
            for (int i = 0; i < gridDim.x; i++) s += partials[i];
            total[0] = s;
        }
    }
}
"""


def test_groups_as_parameters_device_globals_and_threadfence(qgcc, qgrun, tmp_path):
    """A thread_group parameter takes a block or a tile of 16; a `const thread_block &`
    parameter; __device__ globals (a counter taken with atomicInc, an array of partials) and
    __threadfence (nothing to order here) finish a reduction in the last block; abs(float)."""
    grid, block = 3, 32
    got = cli_run(qgcc, qgrun, tmp_path, GROUPS, "groups", grid, block,
                  {"out": np.zeros(2 * grid, np.int32), "total": np.zeros(1, F32),
                   "ranks": np.zeros(grid * block, np.int32), "mag": np.zeros(grid * block, F32)},
                  extra=["--shared", str(4 * block)])
    sums = [sum(range(block)) + block * b for b in range(grid)]
    assert got["out"].tolist() == [v for b in range(grid) for v in (sums[b], sum(range(16)))]
    partial = [F32(s) * F32(0.5) for s in sums]
    assert got["total"][0] == F32(F32(F32(0) + partial[0]) + partial[1]) + partial[2]
    assert got["ranks"].tolist() == list(range(block)) * grid
    assert got["mag"].tolist() == (np.arange(block, dtype=F32) * F32(0.5)).tolist() * grid


# ---------------------------------------------------------------- register spilling

SPILL = r"""
// More values live at once than the machine's 32 registers: some wait in the local frame.
__global__ void manyLive(const int *a, int *out, float *f, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const int *p = a + i * 4;
    int v0 = p[0] * 3, v1 = p[1] * 5, v2 = p[2] - 7, v3 = p[3] ^ 0x55;
    int w[4] = {v0, v1, v2, v3};
    int s0 = v0 + v1, s1 = v1 * v2, s2 = v2 - v3, s3 = v3 + v0, s4 = v0 * v3, s5 = v1 - v0;
    int s6 = s0 * 7, s7 = s1 + 11, s8 = s2 * s3, s9 = s4 - s5, s10 = s6 ^ s7, s11 = s8 + s9;
    int t0 = s0 + s1 * 2, t1 = s2 + s3 * 3, t2 = s4 + s5 * 5, t3 = s6 + s7 * 7, t4 = s8 + s9 * 11;
    int t5 = s10 + s11 * 13, t6 = t0 ^ t1, t7 = t2 ^ t3, t8 = t4 ^ t5, t9 = t6 + t7 + t8;
    int u[12];
    for (int k = 0; k < 12; k++) u[k] = p[k & 3] * (k + 1) + t9;
    int h0 = u[0] * u[1], h1 = u[2] + u[3], h2 = u[4] - u[5], h3 = u[6] ^ u[7], h4 = u[8] * 3, h5 = u[9] + u[10];
    int h6 = u[11] - h0, h7 = h1 * h2, h8 = h3 + h4, h9 = h5 ^ h6;
    float x = (float)v0 * 0.5f, y = (float)v1 * 0.25f, z = (float)s8 * 0.125f;
    for (int k = 0; k < 4; k++) {
        s0 += w[k] * t0; s1 ^= w[(k + 1) & 3] + t1; s2 -= t2 >> k; s3 += t3 << k;
        x = x * 1.5f + y; y = y - z * 0.5f;
        h0 += h9 * k; h9 ^= h0 + h8;
    }
    out[i] = s0 + s1 + s2 + s3 + s4 + s5 + s6 + s7 + s8 + s9 + s10 + s11
           + t0 * 2 + t1 * 3 + t2 * 4 + t3 * 5 + t4 * 6 + t5 * 7 + t6 * 8 + t7 * 9 + t8 * 10 + t9 * 11
           + v0 * v1 * v2 * v3 + h0 + h1 * h2 + h3 * h4 + h5 * h6 + h7 * h8 + h9;
    f[i] = x + y * z;
}
"""


# the same with divisions, which call subroutines (their registers are never spilled)
SPILL_DIV = SPILL.replace("x = x * 1.5f + y; y = y - z * 0.5f;",
                          "x = x / (1.5f + y * y) + y; y = y - z / (x * x + 2.0f); h1 = h1 / (k + 1) + h2 % 7;")


@need_gxx
@pytest.mark.parametrize("src", [SPILL, SPILL_DIV], ids=["alu", "with-routines"])
def test_kernels_needing_more_than_32_registers_spill_to_the_local_frame(qgcc, qgrun, tmp_path, src):
    """A kernel with more values live at once than registers compiles (the .qg says 32
    registers and a frame larger than its local arrays) and computes what g++ computes."""
    from qgcc import qgfile

    n = 10
    a = (np.arange(4 * n, dtype=np.int32) * 37 - 200)
    args = {"a": a, "out": np.zeros(n, np.int32), "f": np.zeros(n, F32)}
    got = cli_run(qgcc, qgrun, tmp_path, src, "manyLive", 3, 4, args, {"n": n})
    k = qgfile.load(tmp_path / "manyLive" / "k.qg").program.kernels[0]
    assert k.regs <= 32 and k.local_words > 16  # the arrays take 16 cells, the spill slots the rest
    want = gxx_model(tmp_path, src, "manyLive", 3, 4, [("a", a), ("out", args["out"]), ("f", args["f"]),
                                                        ("n", n)], flags=("-fwrapv",))
    assert got["out"].tolist() == want["out"].tolist()
    assert got["f"].tobytes() == want["f"].tobytes()


# ---------------------------------------------------------------- __constant__ pointers, file-scope float constants

CONSTANTS = r"""
#define QRNG_DIMENSIONS 2
#define QRNG_RESOLUTION 4
static __constant__ unsigned int c_Table[QRNG_DIMENSIONS][QRNG_RESOLUTION];
__constant__ float weights[3] = {0.5f, 0.25f, 2.0f};
const float RISKFREE = 0.02f;
const float coef[3] = {0.5f, 1.5f, -2.0f};

__global__ void tables(unsigned int *out, float *f) {
    unsigned int *dimBase = &c_Table[threadIdx.y][0];   // not const-qualified in CUDA
    unsigned int *second = c_Table[1];
    float *w = weights;
    unsigned int i = threadIdx.y * blockDim.x + threadIdx.x;
    out[i] = dimBase[threadIdx.x] * 3u + second[threadIdx.x];
    f[i] = w[threadIdx.x % 3] * RISKFREE + coef[i % 3];
}
"""


def test_constant_memory_takes_non_const_pointers_and_file_scope_float_constants(qgcc, qgrun, tmp_path):
    """`unsigned int *p = &c_Table[y][0];` (quasirandomGenerator) and `float *w = weights;` are
    allowed, as CUDA's __constant__ variables are not const-qualified; file-scope `const float`
    scalars and arrays are read-only cells; the table is set at launch with --const."""
    table = np.array([[1, 2, 3, 4], [10, 20, 30, 40]], np.uint32)
    np.save(tmp_path / "table.npy", table)
    got = cli_run(qgcc, qgrun, tmp_path, CONSTANTS, "tables", 1, "4,2",
                  {"out": np.zeros(8, np.uint32), "f": np.zeros(8, F32)},
                  extra=["--const", f"c_Table=@{tmp_path / 'table.npy'}"])
    y, x = np.divmod(np.arange(8), 4)
    assert got["out"].tolist() == (table[y, x] * 3 + table[1, x]).tolist()
    w, coef = np.array([0.5, 0.25, 2.0], F32), np.array([0.5, 1.5, -2.0], F32)
    assert got["f"].tobytes() == (w[x % 3] * F32(0.02) + coef[np.arange(8) % 3]).astype(F32).tobytes()
    assert_error("__constant__ int c[2];\n__global__ void k() { c[0] = 1; }\n", 2, 23,
                 "cannot assign to read-only memory (through 'const int[2]')")


# ---------------------------------------------------------------- switch

SWITCH = r"""
#define SPECIAL 'A'
__device__ int classify(unsigned char c) {
    switch (c) {
    case ' ': case '\t': return 0;
    case SPECIAL: return 2;
    default: return c < 128 ? 1 : 3;
    }
}
__global__ void dispatch(const int *in, int *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int acc = 0;
    for (int j = 0; j < 3; j++) {
        switch (in[i] + j) {
        case 0: acc += 1;                       // falls through
        case 1: acc += 10; break;
        case 65: acc += 100; continue;          // to the loop
        case -5: { int t = j * 7; acc += t; } break;
        default: acc -= 1;
        case 9: acc *= 2;
        }
        acc += 1000;
    }
    out[i] = acc * 4 + classify((unsigned char)in[i]);
}
"""


@need_gxx
def test_switch_with_fallthrough_default_in_the_middle_break_and_continue_matches_gxx(qgcc, qgrun, tmp_path):
    """`switch` as C++ defines it: fall-through, `default` anywhere, `break` out of the switch,
    `continue` to the enclosing loop, case values that are constant expressions (a macro, a
    character), in a device function too; g++ runs the same text."""
    x = np.array([0, 1, -5, 63, 64, 65, 9, 7, 8, 32, 9 - 2, -6, 200, 100, 3, 4], np.int32)
    got = cli_run(qgcc, qgrun, tmp_path, SWITCH, "dispatch", 4, 4, {"in": x, "out": np.zeros(16, np.int32)},
                  {"n": 16})
    want = gxx_model(tmp_path, SWITCH, "dispatch", 4, 4, [("in", x), ("out", np.zeros(16, np.int32)), ("n", 16)])
    assert got["out"].tolist() == want["out"].tolist()


@pytest.mark.parametrize("body, line, col, msg", [
    ("switch (n) { case 1: break; case 1: break; }", 2, 38, "duplicate case value 1 (first on line 2)"),
    ("switch (n) { default: break; default: break; }", 2, 34,
     "multiple default labels in one switch (the first on line 2)"),
    ("switch (n) { case n: break; }", 2, 23, "case label does not reduce to an integer constant"),
    ("switch (1.5f) { }", 2, 13, "switch quantity is not an integer (type 'float')"),
    ("switch (n) { case 1: continue; }", 2, 26, "'continue' statement not in a loop"),
    ("switch (n) { case 1: { case 2: break; } }", 2, 28,
     "'case' label not directly in the braces of a switch statement (qgcc takes labels at the top level "
     "of the switch body)"),
    ("break;", 2, 5, "'break' statement not in a loop or switch"),
])
def test_switch_misuses_are_named(body, line, col, msg):
    assert_error(f"__global__ void k(int n) {{\n    {body}\n}}\n", line, col, msg)


# ---------------------------------------------------------------- the address of a local

RAY = r"""
#define INF 2e10f
struct Sphere {
    float r, b, g, radius, x, y, z;
    __device__ float hit(float ox, float oy, float *n) {   // CUDA by Example's ray tracer
        float dx = ox - x, dy = oy - y;
        if (dx * dx + dy * dy < radius * radius) {
            float dz = sqrtf(radius * radius - dx * dx - dy * dy);
            *n = dz / sqrtf(radius * radius);
            return dz + z;
        }
        return -INF;
    }
};
__device__ void bump(int *c) { (*c)++; }
__global__ void trace(Sphere *s, float *out, int *hits, int ns) {
    float ox = threadIdx.x - 2.0f, oy = blockIdx.x - 1.0f;
    float r = 0, maxz = -INF;
    int count = 0;
    for (int i = 0; i < ns; i++) {
        float n;
        float t = s[i].hit(ox, oy, &n);
        if (t > maxz) { r = s[i].r * n; maxz = t; bump(&count); }
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = r + maxz;
    hits[blockIdx.x * blockDim.x + threadIdx.x] = count;
}
"""
SPHERE = np.dtype([(f, np.float32) for f in ("r", "b", "g", "radius", "x", "y", "z")])


@need_gxx
def test_the_address_of_a_local_puts_it_in_the_frame_and_matches_gxx(qgcc, qgrun, tmp_path):
    """`hit(ox, oy, &n)` and `bump(&count)`: a local whose address is taken lives in the
    thread's frame, so the callee writes it through the pointer; g++ runs the same text."""
    s = np.zeros(3, SPHERE)
    s["r"], s["radius"] = [0.5, 1.0, 0.25], [1.5, 2.5, 1.0]
    s["x"], s["y"], s["z"] = [0.0, 1.0, -1.0], [0.0, -0.5, 0.5], [1.0, 0.5, 2.0]
    args = {"s": s, "out": np.zeros(12, F32), "hits": np.zeros(12, np.int32)}
    got = cli_run(qgcc, qgrun, tmp_path, RAY, "trace", 3, 4, args, {"ns": 3})
    want = gxx_model(tmp_path, RAY, "trace", 3, 4, [("s", s, "Sphere"), ("out", args["out"]),
                                                    ("hits", args["hits"]), ("ns", 3)])
    assert got["out"].tobytes() == want["out"].tobytes()
    assert got["hits"].tolist() == want["hits"].tolist() and max(got["hits"]) > 0


# ---------------------------------------------------------------- std:: math

STD_MATH = r"""
#include <cmath>
using namespace std;
__global__ void stdMath(float *o, const float *a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) o[i] = std::fmax(a[i], 0.5f) + std::sqrt(std::fabs(a[i])) * std::abs(a[i] - 1.0f)
                      + std::floor(a[i] * 3.0f) / std::fmin(a[i] + 4.0f, 2.0f);
}
"""


@need_gxx
def test_std_math_functions_are_the_builtins_and_match_gxx(qgcc, qgrun, tmp_path):
    """`std::fmax`, `std::sqrt`, `std::abs` on floats (the float overloads), `using namespace
    std;`; and `std::min`/`std::max` on integers, which g++'s <cmath> alone does not declare."""
    a = np.linspace(-2.5, 3.5, 12).astype(F32)
    got = cli_run(qgcc, qgrun, tmp_path, STD_MATH, "stdMath", 3, 4, {"o": np.zeros(12, F32), "a": a}, {"n": 12})
    want = gxx_model(tmp_path, STD_MATH, "stdMath", 3, 4, [("o", np.zeros(12, F32)), ("a", a), ("n", 12)])
    assert got["o"].tobytes() == want["o"].tobytes()
    src = "__global__ void k(int *m) { int i = threadIdx.x; m[i] = std::min(i, 2) * 10 + std::max(m[i], 1); }\n"
    got = emulate_src(src, "k", 1, 4, [("m", np.array([0, 5, -3, 2], np.int32))])
    assert got["m"].tolist() == [1, 15, 21, 22]
    assert_error("__global__ void k(int *o) { std::vector<int> v; }\n", 1, 32,
                 "'::' is not supported (C++ namespaces and classes are not)")


# ---------------------------------------------------------------- default arguments

DEFAULTS = r"""
__device__ float lerp(float a, float b, float t = 0.5f) { return a + t * (b - a); }
__device__ int stepOf(int i, int s = 2, int o = 1) { return i * s + o; }
__global__ void withDefaults(float *f, int *o, int n = 8, float scale = 1.0f) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    f[i] = lerp(f[i], 4.0f) + lerp(f[i], 2.0f, 0.25f) * scale;
    o[i] = stepOf(i) + stepOf(i, 3) + stepOf(i, 4, 5);
}
"""


@need_gxx
def test_default_arguments_of_device_functions_and_kernels_match_gxx(qgcc, qgrun, tmp_path):
    """Trailing parameters with defaults may be left out of a device-function call; a kernel's
    defaults (for its host-side launches) are accepted; g++ runs the same text."""
    f = np.linspace(-1, 2, 8).astype(F32)
    got = cli_run(qgcc, qgrun, tmp_path, DEFAULTS, "withDefaults", 2, 4,
                  {"f": f, "o": np.zeros(8, np.int32)}, {"n": 8, "scale": 1.0})
    want = gxx_model(tmp_path, DEFAULTS, "withDefaults", 2, 4,
                     [("f", f), ("o", np.zeros(8, np.int32)), ("n", 8), ("scale", F32(1.0))])
    assert got["f"].tobytes() == want["f"].tobytes()
    assert got["o"].tolist() == want["o"].tolist()
    assert_error("__device__ int f(int a = 1, int b) { return a + b; }\n__global__ void k(int *o) {}\n", 1, 33,
                 "parameter 'b' needs a default argument (the parameters before it have one)")


# ---------------------------------------------------------------- __constant__ structs

CONSTANT_STRUCTS = r"""
struct Sphere {
    float r, g, b, radius; int id;
    __device__ float scaled(float k) { return r * k; }   // not const: CUDA's constants are not const
};
#define SPHERES 3
__constant__ Sphere s[SPHERES];                                   // set at launch (--const)
__constant__ float3 flux[2] = {{1.0f, 2.0f, 3.0f}, {4.0f, 5.0f, 6.0f}};
__global__ void shade(float *o, int *ids) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    Sphere sp = s[i % SPHERES];                                  // a copy out of constant memory
    o[i] = sp.r * s[i % SPHERES].radius + flux[i % 2].y - flux[1].x;
    ids[i] = s[i % SPHERES].id + (int)s[i % SPHERES].scaled(10.0f);
}
"""
SPHERE5 = np.dtype([("r", np.float32), ("g", np.float32), ("b", np.float32), ("radius", np.float32),
                    ("id", np.int32)])


def test_constant_arrays_of_structs_and_float3_from_initialisers_or_launch(qgcc, qgrun, tmp_path):
    """`__constant__ Sphere s[3];` set at launch from a structured .npy of its members, and
    `__constant__ float3 flux[2] = {...};` from its initialiser (Rodinia's cfd, CUDA by
    Example's ray tracer), read member by member, against numpy."""
    s = np.zeros(3, SPHERE5)
    s["r"], s["radius"], s["id"] = [0.5, 1.5, -2.0], [2.0, 3.0, 0.25], [7, 8, 9]
    np.save(tmp_path / "s.npy", s)
    got = cli_run(qgcc, qgrun, tmp_path, CONSTANT_STRUCTS, "shade", 2, 4,
                  {"o": np.zeros(8, F32), "ids": np.zeros(8, np.int32)},
                  extra=["--const", f"s=@{tmp_path / 's.npy'}"])
    i = np.arange(8)
    flux_y = np.array([2.0, 5.0], F32)
    want = (s["r"][i % 3] * s["radius"][i % 3] + flux_y[i % 2]) - F32(4.0)
    assert got["o"].tobytes() == want.astype(F32).tobytes()
    assert got["ids"].tolist() == (s["id"][i % 3] + (s["r"][i % 3] * F32(10)).astype(np.int32)).tolist()


# ---------------------------------------------------------------- small C/C++ leftovers

LEFTOVERS = r"""
#include <stdio.h>
typedef struct node_tag { const float *w; int n; } Node;    // a tag that differs from the name
__global__ void reverse(const float *w, float *out, int n) {
    static __shared__ float acc[4];                          // shared memory is static already
    Node nd = {w, n};
    const float *p = nd.w;                                   // a pointer-to-const member
    acc[threadIdx.x] = (p != NULL && threadIdx.x < nd.n) ? p[threadIdx.x] * 2.0f : -1.0f;
    __syncthreads();
    out[threadIdx.x] = acc[3 - threadIdx.x];
}
"""


def test_null_static_shared_const_pointer_members_and_typedef_tags(qgcc, qgrun, tmp_path):
    """`NULL` (from <stdio.h>), `static __shared__`, a `const float *` struct member and
    `typedef struct tag {...} Name;` compile and run as numpy says; writing through the
    pointer-to-const member is the usual error."""
    w = np.array([1.5, -2.0, 3.25, 8.0], F32)
    got = cli_run(qgcc, qgrun, tmp_path, LEFTOVERS, "reverse", 1, 4, {"w": w, "out": np.zeros(4, F32)}, {"n": 3})
    acc = np.where(np.arange(4) < 3, w * F32(2.0), F32(-1.0)).astype(F32)  # the kernel's two steps
    assert got["out"].tobytes() == acc[::-1].tobytes()
    assert_error(LEFTOVERS.replace("const float *p = nd.w;", "nd.w[0] = 1.0f; const float *p = nd.w;"),
                 7, 8, "cannot assign to read-only memory (through 'const float *')")


NARROW_FLOAT_REDUCE = r"""
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
__global__ void quad(const float *x, float *sum, double *mx) {
    auto t = cg::tiled_partition<4>(cg::this_thread_block());
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    float s = cg::reduce(t, x[i], cg::plus<float>());
    double m = cg::reduce(t, (double)x[i] * 2.0, cg::greater<double>());
    if (t.thread_rank() == 0) { sum[i / 4] = s; mx[i / 4] = m; }
}
"""


def test_cg_reduce_of_floats_and_doubles_on_a_narrow_tile(qgcc, qgrun, tmp_path):
    """cg::reduce on a 4-thread tile takes float and double values (the butterfly, partner
    rank ^ 1 then ^ 2), instead of naming an internal routine in an error; through `qgcc -o
    k.qg` and `qgrun`."""
    x = np.array([0.1, 0.2, 0.3, 1e8, -1.5, 2.25, 7.0, -0.125], F32)
    got = cli_run(qgcc, qgrun, tmp_path, NARROW_FLOAT_REDUCE, "quad", 2, 4,
                  {"x": x, "sum": np.zeros(2, F32), "mx": np.zeros(2, np.float64)})
    for b in range(2):
        v = list(x[4 * b:4 * b + 4])
        for k in (1, 2):
            v = [F32(v[r] + v[r ^ k]) for r in range(4)]
        assert got["sum"][b] == v[0]
        assert got["mx"][b] == max(float(a) * 2.0 for a in x[4 * b:4 * b + 4])


# ---------------------------------------------------------------- 3-D shared tiles

STENCIL3D = r"""
#define T 4
// PMPP's 3-D stencil shape: a cube of the input in shared memory, neighbours read from it
__global__ void stencil(const float *in, float *out, float c0, float c1) {
    __shared__ float tile[T][T][T];
    int x = threadIdx.x, y = threadIdx.y, z = threadIdx.z;
    tile[z][y][x] = in[(z * T + y) * T + x];
    __syncthreads();
    float s = c0 * tile[z][y][x];
    if (x > 0 && x < T - 1 && y > 0 && y < T - 1 && z > 0 && z < T - 1)
        s += c1 * (tile[z][y][x - 1] + tile[z][y][x + 1] + tile[z][y - 1][x] + tile[z][y + 1][x]
                   + tile[z - 1][y][x] + tile[z + 1][y][x]);
    out[(z * T + y) * T + x] = s;
}
"""


def test_three_dimensional_shared_arrays_are_row_major_like_numpy(qgcc, qgrun, tmp_path):
    """`__shared__ float tile[T][T][T]` indexed [z][y][x] (a 4 x 4 x 4 block), against numpy in
    the kernel's operation order."""
    x = np.linspace(-1, 2, 64).astype(F32)
    got = cli_run(qgcc, qgrun, tmp_path, STENCIL3D, "stencil", 1, "4,4,4",
                  {"in": x, "out": np.zeros(64, F32)}, {"c0": 0.5, "c1": 0.25})
    t = x.reshape(4, 4, 4)
    want = (F32(0.5) * t).copy()
    for z in range(1, 3):
        for y in range(1, 3):
            for xx in range(1, 3):
                nb = F32(F32(F32(F32(F32(t[z, y, xx - 1] + t[z, y, xx + 1]) + t[z, y - 1, xx]) + t[z, y + 1, xx])
                             + t[z - 1, y, xx]) + t[z + 1, y, xx])
                want[z, y, xx] = F32(F32(0.5) * t[z, y, xx]) + F32(F32(0.25) * nb)
    assert got["out"].tobytes() == want.reshape(-1).tobytes()


# ---------------------------------------------------------------- a shuffle width known at run time

RUNTIME_WIDTH = r"""
__global__ void segments(const int *in, int *out, double *d, int w) {
    int i = threadIdx.x;
    int v = in[i];
    out[i] = __shfl_down_sync(0xffffffff, v, 1, w);
    out[8 + i] = __shfl_xor_sync(0xffffffff, v, 1, w);
    d[i] = __shfl_sync(0xffffffff, v * 0.5, 3, w);
}
"""


@pytest.mark.parametrize("w", [1, 2, 4, 32])
def test_a_shuffle_width_given_at_run_time(qgcc, qgrun, tmp_path, w):
    """`__shfl_*_sync(mask, v, x, w)` with w a kernel argument: CUDA's segments of w lanes
    (w of 4 or more is the whole 4-lane warp), through `qgcc -o k.qg` and `qgrun --arg w=W`,
    against a numpy model of the shuffles."""
    x = np.arange(10, 18, dtype=np.int32)
    got = cli_run(qgcc, qgrun, tmp_path, RUNTIME_WIDTH, "segments", 1, 8,
                  {"in": x, "out": np.zeros(16, np.int32), "d": np.zeros(8, np.float64)}, {"w": w})
    seg = min(w, 4)
    lane = np.arange(8) % 4
    base = np.arange(8) - lane % seg
    down = np.where(lane % seg + 1 < seg, np.arange(8) + 1, np.arange(8))
    xor = base + ((lane % seg) ^ 1) % seg
    idx = base + 3 % seg
    assert got["out"].tolist() == x[down].tolist() + x[np.where((lane % seg) ^ 1 < seg, xor, np.arange(8))].tolist()
    assert got["d"].tolist() == (x[idx] * 0.5).tolist()
