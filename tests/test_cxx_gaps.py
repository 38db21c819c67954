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
    assert_error(HEAD + "template <> struct V<float> { int a; };\n" + k % "", 4, 21,
                 "explicit specialisation of class template 'V' is not supported; give the specialised "
                 "struct its own name")
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
