"""The last C++ gaps of issue 12: designated initialisers, `return {a, b};`, explicit template
specialisation, `>>` closing two template argument lists.

Each is C++ that published kernels use as written (`Params p = {.n = n, .scale = s};`,
`return {x, y};` in a complex-number helper, `template <> __device__ float zero<float>()`,
`Pair<Vec<int>>`), so the kernels here are compared with g++ compiling the same text: its
threads do not communicate, so running them one after another is CUDA's result.  What stays
outside the subset (class template specialisation, designators out of order, ...) is a named
error at the construct.
"""

from __future__ import annotations

import numpy as np
import pytest

from frontcheck import assert_error, emulate_src
from gxx import gxx_model, need_gxx

SRC = r"""
struct Complex { float re, im; };
struct Span { int lo, hi; };
struct Box { Span x; Span y; int tag[3]; };

__device__ Complex cmul(Complex a, Complex b) { return {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re}; }
__device__ Span order(int a, int b) {
    if (a > b) return {b, a};           // an early brace return
    return {.lo = a, .hi = b};          // designated, in member order
}
__device__ int scaled(int v) { return {v * 3}; }

template <typename T> __device__ T zero() { return T(7); }
template <> __device__ float zero<float>() { return -0.0f; }
template <typename T, int N = 2> __device__ T times(T x) { return x * N; }
template <> __device__ int times<int, 3>(int x) { return 1000 + x; }
template <> __device__ int times<int>(int x) { return -x; }

template <typename T, int N = 2> struct Vec { T v[N]; };
template <typename A, typename B> struct Pair { A a; B b; };
template <int S> __device__ int shr(int x) { return x >> S; }

__global__ void gaps(const int *in, int *out, float *fout) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int a = in[2 * t], b = in[2 * t + 1];
    Span s = order(a, b);
    Box bx = {.x = {.hi = a}, .tag = {b, 2}};
    Box by{.y = s};
    Complex u = {(float)a, 0.5f}, w = {.re = 1.5f, .im = (float)b};
    Complex z = cmul(u, w);
    Pair<Vec<int>, Vec<Vec<int, 3>>> p = {{{a, b}}, {}};
    p.b.v[1].v[2] = shr<(4 >> 1)>(a) + (b >> 1);
    out[8 * t + 0] = s.lo;
    out[8 * t + 1] = s.hi;
    out[8 * t + 2] = bx.x.lo + 10 * bx.x.hi + bx.tag[0] + bx.tag[1] + bx.tag[2] + bx.y.hi;
    out[8 * t + 3] = by.y.hi - by.y.lo + by.x.lo + scaled(b);
    out[8 * t + 4] = times<int, 3>(a) + times(b) + times<unsigned>(5u) + times<int, 4>(a);
    out[8 * t + 5] = zero<int>() + p.a.v[0] * p.a.v[1] + p.b.v[1].v[2] + p.b.v[0].v[0];
    out[8 * t + 6] = (int)zero<float>();
    out[8 * t + 7] = shr<1>(a);
    fout[3 * t + 0] = z.re;
    fout[3 * t + 1] = z.im;
    fout[3 * t + 2] = zero<float>() * (float)a + times(2.5f);
}

template <int B> __global__ void fill(int *o) { o[threadIdx.x] = B * (int)threadIdx.x; }
template <> __global__ void fill<4>(int *o) { o[threadIdx.x] = -4 - (int)threadIdx.x; }
"""


@need_gxx
def test_gap_constructs_match_gxx(tmp_path):
    rng = np.random.default_rng(12)
    ins = rng.integers(-1000, 1000, 16).astype(np.int32)
    ins[:4] = [3, 3, -7, 2]  # equal bounds, and a swapped pair
    args = [("in", ins), ("out", np.zeros(64, np.int32)), ("fout", np.zeros(24, np.float32))]
    got = emulate_src(SRC, "gaps", 2, 4, args)
    want = gxx_model(tmp_path, SRC, "gaps", 2, 4, args)
    for name in ("out", "fout"):
        assert got[name].view(np.uint32).tolist() == want[name].view(np.uint32).tolist(), name


def test_kernel_template_specialisation_is_the_instance_named_at_launch():
    """`fill<4>` named at launch is the specialisation's body; `fill<3>` the template's."""
    t = np.arange(4)
    for inst, want in (("fill<4>", -4 - t), ("fill<3>", 3 * t)):
        got = emulate_src(SRC, inst, 1, 4, [("o", np.zeros(4, np.int32))], instantiate=(inst,))
        assert got["o"].tolist() == want.tolist(), inst


HEAD = "struct S { int x, y; };\ntemplate <typename T> __device__ T f(T x) { return x; }\n" \
       "template <typename T> struct V { T a; };\n"


def test_gap_errors_are_named():
    k = "__global__ void k(int *o) { %s }\n"
    assert_error(HEAD + k % "S s = {.y = 1, .x = 2};", 4, 45,
                 "designated initialisers must follow the order of the members of 'S' ('.x' after '.y')")
    assert_error(HEAD + k % "S s = {.x = 1, 2};", 4, 44,
                 "mixing designated and positional initialisers for 'S' in 's'; name every member "
                 "('.m = ...')")
    assert_error(HEAD + k % "S s = {.z = 1};", 4, 37, "'S' has no member named 'z'")
    assert_error(HEAD + k % "int a[2] = {.x = 1};", 4, 42,
                 "designated initialiser '.x' for 'a', which is not a struct")
    assert_error(HEAD + "template <typename T> struct V<T *> { T a; };\n" + k % "", 4, 31,
                 "partial specialisation of class template 'V' is not supported; give the specialised "
                 "struct its own name")
    assert_error(HEAD + "__device__ float f<float>(float x) { return x; }\n" + k % "", 4, 18,
                 "'f<...>' names a specialisation; write 'template <>' before its definition")
    assert_error(HEAD + "template <> __device__ float f(float x) { return x; }\n" + k % "", 4, 30,
                 "explicit specialisation of 'f': write its template arguments ('f<...>(...)'; they are "
                 "not deduced from the parameters here)")
    assert_error(HEAD + "template <> __device__ int g<int>(int x) { return x; }\n" + k % "", 4, 28,
                 "explicit specialisation of 'g', which is not a function template declared before it")
    assert_error(HEAD + "__device__ int *h(int *p) { return {p, p}; }\n" + k % "", 4, 40,
                 "too many initialisers for 'return value of h'")
    assert_error(HEAD + "__device__ int g(S s) { return s.x; }\n" + k % "o[0] = g({1, 2});", 5, 38,
                 "a brace list as a function argument is not supported; declare a variable ('S v = {...};') "
                 "and pass it")


WIDE = r"""
struct Rec { long long big; int small; unsigned long long u[2]; };
__constant__ long long lim[3] = {-1, 5000000000, -9223372036854775807 - 1};
__constant__ unsigned long long bias = 3;

__device__ long long mix(Rec r) { return r.big * 3 + r.small - (long long)r.u[1]; }

__global__ void wide(Rec *p, long long *o) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    __shared__ Rec sh[4];
    Rec r = {.big = p[t].big + lim[t % 3], .small = -t};
    r.u[1] = 0xFFFFFFFFull << t;
    sh[threadIdx.x] = r;
    Rec q = sh[threadIdx.x];
    o[2 * t] = mix(q) + bias;
    o[2 * t + 1] = lim[(t + 1) % 3] ^ q.u[1];
    p[t].big += (long long)p[t].small * 3000000000ll;
    p[t].u[0] ^= q.u[1] + p[t].u[1];
}
"""

REC = np.dtype([("big", "<i8"), ("small", "<i4"), ("u", "<u8", (2,))])


@need_gxx
def test_64bit_struct_members_and_constants_match_gxx(tmp_path):
    """A 64-bit member takes two cells, the low word first, with no padding: the layout of a packed
    numpy dtype, and of C with `#pragma pack(4)` (CUDA would align `big` to 8 bytes and pad the
    struct to 24; the shim packs it so that the same bytes mean the same members)."""
    rng = np.random.default_rng(64)
    p = np.zeros(8, REC)
    p["big"] = rng.integers(-2**63, 2**63 - 1, 8, dtype=np.int64)
    p["small"] = rng.integers(-2**31, 2**31 - 1, 8, dtype=np.int64).astype(np.int32)
    p["u"] = rng.integers(0, 2**64 - 1, (8, 2), dtype=np.uint64)
    args = [("p", p, "Rec"), ("o", np.zeros(16, np.int64))]
    got = emulate_src(WIDE, "wide", 2, 4, [a[:2] for a in args])
    want = gxx_model(tmp_path, "#pragma pack(4)\n" + WIDE, "wide", 2, 4, args)
    assert got["o"].tolist() == want["o"].tolist()
    assert got["p"].tobytes() == want["p"].view(np.uint32).tobytes()


ATOMICS = r"""
__global__ void bits(unsigned long long *m, const unsigned long long *v, unsigned long long *old) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    old[3 * t] = atomicOr(&m[0], v[t]);
    old[3 * t + 1] = atomicAnd(&m[1], ~v[t]);
    old[3 * t + 2] = atomicXor_block(m + 2, v[t]);
}
"""


def test_64bit_bitwise_atomics_are_exact_in_memory_and_in_lane_order_within_a_warp():
    """atomicOr/And/Xor on `unsigned long long *` act on each 32-bit half on its own, so two ATOMs
    leave memory as one 64-bit atomic would whatever the warps' interleaving (numpy's reduction
    is the model); within a warp the lanes go in lane order, so each lane's old value is the
    memory after the lanes before it (across warps a returned value may mix halves: docs/subset.md)."""
    rng = np.random.default_rng(5)
    v = rng.integers(0, 2**64 - 1, 32, dtype=np.uint64)
    init = np.array([0x0123456789ABCDEF, 2**64 - 1, 0xF0F0F0F00F0F0F0F], np.uint64)
    res = emulate_src(ATOMICS, "bits", 2, 16, [("m", init.copy()), ("v", v), ("old", np.zeros(96, np.uint64))])
    m = res["m"]
    assert int(m[0]) == int(np.bitwise_or.reduce(v)) | int(init[0])
    assert int(m[1]) == int(np.bitwise_and.reduce(~v)) & int(init[1])
    assert int(m[2]) == int(np.bitwise_xor.reduce(v)) ^ int(init[2])
    one = emulate_src(ATOMICS, "bits", 1, 4, [("m", init.copy()), ("v", v[:4]), ("old", np.zeros(12, np.uint64))])
    acc = [int(x) for x in init]
    for t in range(4):
        assert [int(x) for x in one["old"][3 * t:3 * t + 3]] == acc, t
        x = int(v[t])
        acc = [acc[0] | x, acc[1] & ~x & (2**64 - 1), acc[2] ^ x]


def test_64bit_atomics_that_need_a_64bit_compare_and_swap_are_named():
    k = "__global__ void k(unsigned long long *p, long long *q) { %s; }\n"
    cas = "needs a 64-bit compare-and-swap, which the machine does not have (its ATOM works on one 32-bit cell)"
    assert_error(k % "atomicCAS(p, 1, 2)", 1, 68,
                 "'atomicCAS' on 'unsigned long long *' is not supported (the machine's ATOM.CAS compares one "
                 "32-bit cell, and two of them cannot compare and swap 64 bits at once)")
    assert_error(k % "atomicExch(p, 1)", 1, 69,
                 "'atomicExch' on 'unsigned long long *' is not supported (two 32-bit exchanges could "
                 "interleave with another warp's and leave one value's low word with the other's high word; "
                 f"a 64-bit exchange {cas})")
    assert_error(k % "atomicMax(q, 1)", 1, 68,
                 "'atomicMax' on 'long long *' is not supported (the high words decide only when they differ, "
                 f"so it cannot be done a half at a time; it {cas})")
    assert_error(k % "atomicOr(q, 1)", 1, 67,
                 "'atomicOr' on 'long long *' is not supported (CUDA's 64-bit 'atomicOr' takes an "
                 "'unsigned long long *')")


def test_64bit_constants_set_at_launch_from_int64_arrays():
    """`--const lim=@x.npy` for a `__constant__ long long` array takes an int64 array of its
    element count (the role of cudaMemcpyToSymbol), two cells per element."""
    from qgcc.frontend import compile_source
    from qgcc.ref.emulator import run as emulate
    from qgcc.runtime.launch import make_launch

    prog = compile_source(WIDE, "t.cu")
    k = prog.kernel("wide")
    lim = np.array([2**62 + 5, -3, 2**40], np.int64)
    p = np.zeros(4, REC)
    p["big"] = [7, -7, 2**50, -2**50]
    launch = make_launch(prog, k, (1, 1, 1), (4, 1, 1), {}, {"p": p, "o": np.zeros(8, np.int64)},
                         constants={"lim": lim, "bias": np.array([9], np.uint64)})
    o = launch.read_buffer(emulate(launch).memory, "o")
    t = np.arange(4)
    big = p["big"] + lim[t % 3]
    u1 = np.array([(0xFFFFFFFF << int(i)) & (2**64 - 1) for i in t], np.uint64)
    want_mix = big * 3 - t - u1.view(np.int64) + 9
    assert o[0::2].tolist() == want_mix.tolist()
    assert o[1::2].tolist() == (lim[(t + 1) % 3] ^ u1.view(np.int64)).tolist()


NET = r"""
template <typename T, int N = 2> struct Vec { T v[N]; };
struct Acc { long long sum; int n; };
template <typename T> __device__ T scale(T x) { return x * 3; }
template <> __device__ int scale<int>(int x) { return x - 7; }
__device__ Acc add(Acc a, int x) { return {a.sum + x * 1000000000ll, a.n + 1}; }
__global__ void tmpl(const int *in, long long *out) {
    int i = threadIdx.x;
    Vec<Vec<int>> w = {.v = {{in[i], scale(in[i])}, {scale(2u), 0}}};
    Acc a = {.sum = -1};
    a = add(add(a, w.v[0].v[0]), w.v[0].v[1]);
    out[i] = a.sum + a.n + w.v[1].v[0];
}
"""


@pytest.mark.slow
def test_the_network_runs_templates_specialisations_and_brace_returns():
    """Templates are resolved before code generation, so this checks that what they produce (an
    instance, a specialisation, a nested class template, brace returns and designated
    initialisers, 64-bit members) runs in the layers as on the emulator, step for step."""
    from lockstep import both

    xs = np.array([5, -9, 100, 0], np.int32)
    outs, _ = both("cxx_gaps", (1, 1, 1), (4, 1, 1), {}, {"in": xs, "out": np.zeros(4, np.int64)},
                   source=NET, max_steps=20000)
    want = [-1 + (int(x) + int(x) - 7) * 10**9 + 2 + 6 for x in xs]
    assert [int(v) for v in outs["out"]] == want


def test_qgrun_takes_64bit_scalars_buffers_structs_and_constants(qgrun, tmp_path, monkeypatch):
    """The launch arguments of the new types from the command line: a 64-bit `--arg` scalar over
    the whole range, an int64 `.npy` buffer, a buffer of structs with a 64-bit member (a packed
    structured dtype, written back in it by `--out`) and a 64-bit `--const` array."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "w.cu").write_text(WIDE)
    p = np.zeros(4, REC)
    p["big"] = [1, -2, 2**40, -2**62]
    p["small"] = [3, -4, 5, -6]
    np.save("p.npy", p)
    np.save("lim.npy", np.array([10, -20, 2**50], np.int64))
    r = qgrun("w.cu", "--engine", "ref", "--grid", "1", "--block", "4", "--arg", "p=@p.npy", "--arg", "o=zeros:8",
              "--const", "lim=@lim.npy", "--const", "bias=5000000000", "--out", "p=p2.npy", "--out", "o=o.npy",
              "--trace", "none")
    assert r.exit_code == 0, r.stderr
    p2, o = np.load("p2.npy"), np.load("o.npy")
    assert p2.dtype == REC and o.dtype == np.int64
    t = np.arange(4)
    lim = np.array([10, -20, 2**50], np.int64)
    u1 = np.array([(0xFFFFFFFF << int(i)) & (2**64 - 1) for i in t], np.uint64).view(np.int64)
    bias = 5000000000
    assert o[0::2].tolist() == ((p["big"] + lim[t % 3]) * 3 - t - u1 + bias).tolist()
    assert p2["big"].tolist() == (p["big"] + p["small"].astype(np.int64) * 3000000000).tolist()
    (tmp_path / "s.cu").write_text("__global__ void k(long long *o, long long s, unsigned long long u) "
                                   "{ o[threadIdx.x] = s * (threadIdx.x + 1) + (long long)(u >> 1); }\n")
    r = qgrun("s.cu", "--engine", "ref", "--grid", "1", "--block", "2", "--arg", "o=zeros:2",
              "--arg", "s=-5000000000", "--arg", "u=18446744073709551615", "--out", "o=so.npy", "--trace", "none")
    assert r.exit_code == 0, r.stderr
    assert np.load("so.npy").tolist() == [-5000000000 + 2**63 - 1, -10000000000 + 2**63 - 1]
