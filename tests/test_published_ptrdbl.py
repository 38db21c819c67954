"""Pointer forms and double precision as published CUDA writes them (issue 27): double struct
members and the double2/double3/double4 vector types, ...  Each kernel is compiled with
`qgcc --no-link -o k.qg`, run by `qgrun` on the emulator, and compared with an independent
model (g++ on the same text where threads do not communicate)."""

from __future__ import annotations

import numpy as np
import pytest

from gxx import gxx_model, need_gxx
from test_published_constructs import cli_run

# ---------------------------------------------------------------- double members and vectors

DOUBLE_STRUCTS = r"""
struct Particle {                 // doubles first, then 4-byte members in pairs: C++ adds no padding
    double mass;
    double3 pos;
    int id, pad;
};
typedef struct { double2 v; double w; } Flux;
__device__ double3 axpy(double a, double3 x, double3 y) {
    return make_double3(a * x.x + y.x, a * x.y + y.y, a * x.z + y.z);
}
__global__ void step(Particle *ps, double3 *vel, double *energy, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    Particle p = ps[i];               // a struct copy with double members
    double3 v = vel[i];
    p.pos = axpy(0.125, v, p.pos);     // a double3 member assigned from a double3 value
    p.mass *= 1.0 + 1.0 / (p.id + 3);
    ps[i] = p;
    Flux f;
    f.v = make_double2(p.pos.x * p.mass, p.pos.y - p.pos.z);
    f.w = f.v.x / (f.v.y + 2.5);
    double4 q = make_double4(f.v.x, f.v.y, f.w, (double)p.id);
    vel[i].x = -v.x;                  // a member of a double3 element, written in place
    energy[i] = 0.5 * p.mass * (v.x * v.x + v.y * v.y + v.z * v.z) + q.x - q.y * q.z + q.w;
}
"""

# CUDA's vector_types.h for the g++ model (qgcc has them built in)
GXX_VECTORS = r"""
struct double2 { double x, y; };
struct double3 { double x, y, z; };
struct double4 { double x, y, z, w; };
static double2 make_double2(double x, double y) { return {x, y}; }
static double3 make_double3(double x, double y, double z) { return {x, y, z}; }
static double4 make_double4(double x, double y, double z, double w) { return {x, y, z, w}; }
"""

PARTICLE = np.dtype([("mass", np.float64), ("pos", [("x", np.float64), ("y", np.float64), ("z", np.float64)]),
                     ("id", np.int32), ("pad", np.int32)])
D3 = np.dtype([("x", np.float64), ("y", np.float64), ("z", np.float64)])


@need_gxx
def test_double_struct_members_and_double_vectors_match_gxx(qgcc, qgrun, tmp_path):
    """Struct members of type double and double3, double2/3/4 locals, make_double*, a struct
    copied in and out of a buffer and a member of a double3 element written in place: every byte
    equals g++ running the same text (same operation order, IEEE binary64)."""
    rng = np.random.default_rng(27)
    n = 6
    ps = np.zeros(n, PARTICLE)
    ps["mass"] = rng.uniform(0.5, 4, n)
    for c in "xyz":
        ps["pos"][c] = rng.normal(size=n) * 10
    ps["id"] = np.arange(n) * 7 - 5
    vel = np.zeros(n, D3)
    for c in "xyz":
        vel[c] = rng.normal(size=n)
    energy = np.zeros(n, np.float64)
    got = cli_run(qgcc, qgrun, tmp_path, DOUBLE_STRUCTS, "step", 2, 4,
                  {"ps": ps, "vel": vel, "energy": energy}, {"n": n})
    want = gxx_model(tmp_path, GXX_VECTORS + DOUBLE_STRUCTS, "step", 2, 4,
                     [("ps", ps, "Particle"), ("vel", vel, "double3"), ("energy", energy), ("n", n)])
    assert got["ps"].tobytes() == want["ps"].tobytes()
    assert got["vel"].tobytes() == want["vel"].tobytes()
    assert got["energy"].tobytes() == want["energy"].tobytes()


CONSTANT_DOUBLES = r"""
#define NVAR 3
__constant__ double coef[NVAR] = {0.1, -2.5, 1e-3};
__constant__ double3 flux[1] = {{0.3333333333333333, 2.1f, -7}};   // a double3 constant from double, float, int
__constant__ double scale[2];                                // set at launch (--const)
__device__ double bias;                                      // a __device__ double: 0 until written
__global__ void init(double *v, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    double x = v[i];
    v[i] = (coef[0] + x * (coef[1] + x * coef[2])) * scale[i & 1] + bias;
    v[n + i] = flux[0].x * x + flux[0].y - flux[0].z * scale[0];
}
"""


@need_gxx
def test_constant_doubles_and_constant_double_structs_match_gxx(qgcc, qgrun, tmp_path):
    """`__constant__ double` arrays and `__constant__ double3` with initialisers (each value
    converted as C converts it), one set at launch with `qgrun --const`, a `__device__ double`:
    the results equal g++ running the same text with the launch values as initialisers."""
    v = np.random.default_rng(3).normal(size=16) * 4
    v[8:] = 0
    scale = np.array([0.75, -1.0 / 7.0])
    np.save(tmp_path / "scale.npy", scale)
    got = cli_run(qgcc, qgrun, tmp_path, CONSTANT_DOUBLES, "init", 2, 4, {"v": v}, {"n": 8},
                  extra=("--const", f"scale=@{tmp_path / 'scale.npy'}"))
    model = CONSTANT_DOUBLES.replace("scale[2];", f"scale[2] = {{{scale[0].hex()}, {scale[1].hex()}}};")
    want = gxx_model(tmp_path, GXX_VECTORS + model, "init", 2, 4, [("v", v), ("n", 8)])
    assert got["v"].tobytes() == want["v"].tobytes()
    assert np.count_nonzero(got["v"]) == 16


# ---------------------------------------------------------------- exp on double

EXP_KERNEL = r"""
#include <math.h>
__global__ void boltzmann(const double *e, const double *y, double *w, float *wf, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    double a = e[i];
    w[i] = exp(a);                  // the double functions (dmath.cu)
    w[n + i] = log(a);
    w[2 * n + i] = log10(a);
    w[3 * n + i] = pow(a, y[i]);
    wf[i] = exp((float)a * 0.01f);  // a float argument: CUDA's float overload, expf
}
"""


def exp_inputs() -> np.ndarray:
    """Special values, both ends of the range (overflow, subnormal results, underflow to 0), the
    neighbourhood of 0 and random arguments over the whole range."""
    special = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 5e-324, -5e-324, 1e-300, 2.0 ** -54, -2.0 ** -53,
               0.5 * np.log(2), -0.5 * np.log(2), 709.782712893384, 709.7827128933841, 709.79, 710.0,
               -708.3964185322641, -745.1332191019411, -745.1332191019412, -745.2, -746.0, 1e300]
    rng = np.random.default_rng(2718)
    return np.concatenate([special, rng.uniform(-745.2, 709.8, 24), rng.normal(size=16) * 3])


def pow_exponents(n: int) -> np.ndarray:
    """Exponents for pow: specials, integers (odd and even, for negative bases) and fractions."""
    special = [0.0, -0.0, 1.0, -1.0, 2.0, 3.0, -3.0, 0.5, np.inf, -np.inf, np.nan, 1e308, 1.6, -2.5]
    rng = np.random.default_rng(31)
    return np.concatenate([special, rng.integers(-9, 9, 12).astype(float), rng.normal(size=n) * 4])[:n]


@pytest.mark.slow  # 1-2 minutes: 64 arguments, each some 150 double routine calls on the emulator
def test_exp_log_log10_pow_on_double_equal_their_documented_algorithms_bit_for_bit(qgcc, qgrun, tmp_path):
    """`exp`, `log`, `log10` and `pow` on double are dmath.cu's routines (Cody-Waite reduction
    and Taylor polynomials in binary64 operations, a double-double log for pow); every result
    equals the numpy model of the same operation sequences (tests/dmathref.py) bit for bit,
    specials included (NaN canonical, negative bases, zeros, infinities), and the float
    overload still gives expf."""
    import dmathref

    x = exp_inputs()
    n = x.size
    y = pow_exponents(n)
    got = cli_run(qgcc, qgrun, tmp_path, EXP_KERNEL, "boltzmann", 2, 32,
                  {"e": x, "y": y, "w": np.zeros(4 * n), "wf": np.zeros(n, np.float32)}, {"n": n})
    want = np.concatenate([[dmathref.exp(v) for v in x], [dmathref.log(v) for v in x],
                           [dmathref.log10(v) for v in x], [dmathref.pow(a, b) for a, b in zip(x, y)]])
    assert got["w"].view(np.uint64).tolist() == want.view(np.uint64).tolist()
    assert got["e"].view(np.uint64).tolist() == x.view(np.uint64).tolist()
    import mathref

    with np.errstate(all="ignore"):
        wf = mathref.host("expf", x.astype(np.float32) * np.float32(0.01))[0]
    assert got["wf"].view(np.uint32).tolist() == np.asarray(wf, np.float32).view(np.uint32).tolist()


def test_the_models_are_as_accurate_as_docs_subset_md_says():
    """The accuracy docs/subset.md states (bench/dmath_accuracy.py measures it on ~14,000
    arguments each): exp and log under 1 ulp, log10 within 1 ulp, pow within 1 ulp while
    |y log x| <= 10; here a sample of the same kinds of argument."""
    import dmathref as D

    rng = np.random.default_rng(12)
    x = exp_inputs()
    x = x[np.isfinite(x)]
    assert max(D.ulp_error(float(D.exp(v)), D.exact("exp", v)) for v in x) < 1.0
    pos = np.concatenate([np.exp(rng.uniform(-744, 709, 40)), rng.uniform(0.5, 2, 20), [5e-324, 1e-310]])
    assert max(D.ulp_error(float(D.log(v)), D.exact("log", v)) for v in pos) < 1.0
    assert max(D.ulp_error(float(D.log10(v)), D.exact("log10", v)) for v in pos) < 1.1
    b = np.exp2(rng.uniform(-30, 30, 60))
    e = rng.uniform(-10, 10, 60) / np.log(b)
    assert max(D.ulp_error(float(D.pow(u, v)), D.exact("pow", u, v)) for u, v in zip(b, e)) < 1.0


# ---------------------------------------------------------------- pointers to pointers, void *

ROWS = r"""
struct Cell { unsigned key; void *value; Cell *next; };   // a void * member and a self pointer
struct Table { unsigned count; Cell **heads; Cell *pool; };
typedef struct { float *data; float **rows; int (*compare)(const void *, const void *); } Host;  // host-side
__device__ float clampf(float v) { return v < 0.0f ? 0.0f : v; }
__global__ void normalise(float **rows, const int *len, float *total, int nrows) {
    int r = blockIdx.x;                  // one block per row, as rodinia's leukocyte does per cell
    if (r >= nrows) return;
    float *row = rows[r];                // a pointer loaded from the buffer of pointers
    int n = len[r];
    float s = 0.0f;
    for (int j = 0; j < n; j++)
        s += clampf(row[j]);
    __syncthreads();
    void *raw = (void *)rows[r];         // an untyped address, typed again before use
    float *same = (float *)raw;
    for (int j = threadIdx.x; j < n; j += blockDim.x)
        rows[r][j] = clampf(same[j]) / (s + 1.0f);   // written through rows[r]
    __syncthreads();
    if (threadIdx.x == 0) {
        total[r] = s;
        float **slot = rows + r;
        *slot = row + (n - 1);           // a pointer stored into the buffer of pointers
    }
}
"""


@pytest.mark.parametrize("engine", ["ref", pytest.param("neural", marks=pytest.mark.slow)])
def test_pointer_to_pointer_parameters_take_a_list_of_buffers(qgcc, qgrun, tmp_path, engine):
    """`float **rows` at launch: `--arg rows=@a.npy,@b.npy,...` makes each array its own buffer and
    rows the buffer of their addresses; `--out 'rows[J]=...'` writes the J-th buffer back and
    `--out rows=...` the addresses (here changed by the kernel).  Rows are loaded and stored
    through the pointers, cast to void * and back; the results equal a numpy model in the
    kernel's operation order; the network engine's too."""
    rng = np.random.default_rng(7)
    lens = [5, 9, 3]
    rows = [rng.normal(size=n).astype(np.float32) for n in lens]
    d = tmp_path / "pp"
    d.mkdir()
    (d / "k.cu").write_text(ROWS)
    assert qgcc(d / "k.cu", "--no-link", "-o", d / "k.qg").exit_code == 0
    argv = [d / "k.qg", "--engine", engine, "--grid", "3", "--block", "4", "--trace", "none",
            "--arg", "rows=" + ",".join(f"@{d / f'r{j}.npy'}" for j in range(3)),
            "--arg", f"len=@{d / 'len.npy'}", "--arg", "total=zeros:3", "--arg", "nrows=3",
            "--out", f"total={d / 'total.npy'}", "--out", f"rows={d / 'addr.npy'}"]
    for j, r in enumerate(rows):
        np.save(d / f"r{j}.npy", r)
        argv += ["--out", f"rows[{j}]={d / f'o{j}.npy'}"]
    np.save(d / "len.npy", np.array(lens, np.int32))
    res = qgrun(*argv)
    assert res.exit_code == 0, res.stderr
    total = np.load(d / "total.npy")
    for j, r in enumerate(rows):
        c = np.maximum(r, np.float32(0))
        s = np.float32(0)
        for v in c:
            s = np.float32(s + v)
        assert total[j].tobytes() == s.tobytes()
        assert np.load(d / f"o{j}.npy").tobytes() == (c / np.float32(s + np.float32(1))).astype(np.float32).tobytes()
    addr = np.load(d / "addr.npy")
    base = addr - np.array(lens) + 1         # each address moved to its row's last element
    assert np.diff(base).tolist() == lens[:2]   # the rows lie one after another in memory
    res = qgrun(*argv, "--out", f"rows[3]={d / 'o3.npy'}")  # one past the arrays given
    assert res.exit_code == 2 and res.stderr == ("qgrun: error: --out 'rows[3]': parameter 'rows' was given "
                                                 "3 arrays (rows[0]..rows[2])\n")


def test_pointer_to_pointer_parameters_in_the_python_api():
    """The API takes a `T **` argument as a list of arrays and gives back the list of their final
    contents (CUDA-style calls write each array back), the same numbers as qgrun."""
    import qgcc

    prog = qgcc.compile(ROWS)
    rows = [np.array([1.0, -2.0, 3.0], np.float32), np.array([0.5, 0.25], np.float32)]
    total = np.zeros(2, np.float32)
    r = prog.normalise[2, 2](rows, np.array([3, 2], np.int32), total, 2, engine="ref")
    assert isinstance(r["rows"], list) and len(r["rows"]) == 2
    assert total.tolist() == [4.0, 0.75]
    assert rows[0].tolist() == [np.float32(1) / np.float32(5), 0.0, np.float32(3) / np.float32(5)]
    assert rows[1].tobytes() == (np.array([0.5, 0.25], np.float32) / np.float32(1.75)).tobytes()
    assert r["rows"][1].tobytes() == rows[1].tobytes()


@need_gxx
def test_double_math_library_text_built_by_gxx_equals_the_model(tmp_path):
    """dmath.cu is valid C++ too: built by g++ (IEEE binary64, no contraction) it computes what the
    numpy model computes, bit for bit, for exp, log, log10 and pow on 2,764 argument pairs across
    their ranges (the emulator tests show qgcc compiles the same text to the same bits)."""
    import subprocess
    from pathlib import Path

    import dmathref

    lib = Path(__file__).resolve().parents[1] / "src/qgcc/frontend/dmath.cu"
    cpp = tmp_path / "dm.cpp"
    cpp.write_text("#include <cstdio>\n#include <cstring>\n#define __device__ static\n"
                   "static double __longlong_as_double(long long u) { double d; memcpy(&d, &u, 8); return d; }\n"
                   "static long long __double_as_longlong(double d) { long long u; memcpy(&u, &d, 8); return u; }\n"
                   + lib.read_text() + r"""
int main() {
    unsigned long long a, b;
    while (scanf("%llu %llu", &a, &b) == 2) {
        double x = __longlong_as_double((long long)a), y = __longlong_as_double((long long)b);
        double r[4] = {__qgd_exp(x), __qgd_log(x, 0), __qgd_log(x, 1), __qgd_pow(x, y)};
        for (int i = 0; i < 4; i++)
            printf("%llu\n", (unsigned long long)__double_as_longlong(r[i]));
    }
}
""")
    subprocess.run(["g++", "-O1", "-ffp-contract=off", "-o", str(tmp_path / "dm"), str(cpp)], check=True)
    rng = np.random.default_rng(5)
    x = np.concatenate([exp_inputs(), rng.uniform(-746, 710, 1000), rng.normal(size=400),
                        np.exp(rng.uniform(-744, 709, 1000)), -np.exp2(rng.uniform(-8, 8, 300))])
    y = np.concatenate([pow_exponents(64), rng.normal(size=x.size - 64) * 20])
    y[-300:] = np.round(y[-300:])                   # integer exponents of negative bases
    out = subprocess.run([str(tmp_path / "dm")], input="\n".join(f"{a} {b}" for a, b in
                                                                zip(x.view(np.uint64), y.view(np.uint64))),
                         capture_output=True, text=True, check=True).stdout.split()
    want = [dmathref.bits(r) for a, b in zip(x, y) for r in (dmathref.exp(a), dmathref.log(a),
                                                             dmathref.log10(a), dmathref.pow(a, b))]
    assert [int(v) for v in out] == want


def test_exp_in_a_kernel_without_spills_keeps_each_lanes_frame():
    """exp's routine keeps its values in the thread's frame: in a kernel that needs no spill slots
    the frame base is still computed at the entry and kept across the calls (each of the four
    lanes gets its own exp, equal to the model)."""
    from qgcc.frontend import compile_source
    from qgcc.ref.emulator import run
    from qgcc.runtime.launch import make_launch

    import dmathref

    prog = compile_source("__global__ void k(const double *a, double *r) { int i = threadIdx.x; "
                          "r[i] = exp(a[i]); }\n", "k.cu")
    a = np.array([0.5, -3.25, 700.0, -740.0])
    launch = make_launch(prog, prog.kernels[0], (1, 1, 1), (4, 1, 1), {}, {"a": a, "r": np.zeros(4)})
    r = launch.read_buffer(run(launch).memory, "r")
    assert r.view(np.uint64).tolist() == [dmathref.bits(dmathref.exp(v)) for v in a]


def test_pointer_misuses_are_named():
    """What stays outside: reading or stepping through a `void *`, converting it without a cast,
    calling a function-pointer member, byte views of word memory."""
    from frontcheck import assert_error

    k = "struct S { int a; int (*f)(int); };\n__global__ void k(S *s, float *p, unsigned char *b) {\n%s\n}\n"
    assert_error(k % "void *v = p; v[0] = 1;", 3, 14,
                 "'void *' points to no type; cast it to a typed pointer first ('(float *)p')")
    assert_error(k % "void *v = p; float *q = v;", 3, 25, "cannot convert 'void *' to 'float *' in initialisation")
    assert_error(k % "int r = s->f(2);", 3, 12, "'S::f': a function-pointer member (host code's callback); "
                                                "calling through a function pointer is not supported")
    assert_error(k % "unsigned *w = (unsigned *)b;", 3, 15,
                 "casts between pointer types are not supported ('unsigned char *' to 'unsigned int *'): memory "
                 "is addressed in 32-bit cells, so only pointers to int, unsigned, float, 64-bit scalars and "
                 "structs of 32-bit members (float4, int2, ...) convert to each other")


SHARED_DOUBLE4 = r"""
template <class T> struct SharedMemory {
    __device__ inline operator T *() { extern __shared__ int __smem[]; return (T *)__smem; }
};
__global__ void sums(const double4 *in, double *out, unsigned *raw) {
    double4 *s = SharedMemory<double4>();
    int t = threadIdx.x;
    s[t] = in[t];
    __syncthreads();
    double4 o = s[(t + 1) % blockDim.x];
    out[t] = ((o.x + o.y) + o.z) + o.w;
    unsigned *w = (unsigned *)s;  // the same cells as 32-bit words, low word first
    raw[t] = w[8 * t + 1];
}
"""


def test_a_struct_of_64_bit_members_is_a_view_of_32_bit_cells_as_in_cuda(qgcc, qgrun, tmp_path):
    """nbody's SharedMemory<double4>: an `extern __shared__ int` array cast to `double4 *` (a struct
    of 64-bit members has no padding, so each double4 is 8 cells at CUDA's byte offsets / 4); read
    back through `unsigned *` the high word of each x sits at cell 8t + 1, as on little-endian CUDA."""
    rec = np.dtype([("x", np.float64), ("y", np.float64), ("z", np.float64), ("w", np.float64)])
    inp = np.zeros(4, rec)
    for k, f in enumerate("xyzw"):
        inp[f] = np.array([1.5, -2.25, 1e300, 3e-310]) * (k + 1)
    got = cli_run(qgcc, qgrun, tmp_path, SHARED_DOUBLE4, "sums", 1, 4,
                  {"in": inp, "out": np.zeros(4, np.float64), "raw": np.zeros(4, np.uint32)},
                  extra=("--shared", str(4 * 32)))
    nxt = np.roll(np.arange(4), -1)
    want = ((inp["x"][nxt] + inp["y"][nxt]) + inp["z"][nxt]) + inp["w"][nxt]
    assert got["out"].tobytes() == want.tobytes()
    assert got["raw"].tolist() == np.ascontiguousarray(inp["x"]).view(np.uint32)[1::2].tolist()
