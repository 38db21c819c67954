"""The C++ leftovers of issue 12: functional casts `T(x)`, references to pointers, default
template arguments, and kernel template instances named in `qgrun --batch` files.

Each kernel is compiled by qgcc and run on the emulator, and the same kernel text is compiled
by g++ with the host shim of tests/gxx.py (the threads do not communicate), so C++ says what
the text means.
"""

from __future__ import annotations

import json

import numpy as np

from frontcheck import assert_error, emulate_src
from gxx import gxx_model, need_gxx

CASTS = r"""
typedef unsigned int uint;
template <typename T> __device__ T halfOf(T v) { return v / T(2); }

__global__ void casts(const int *in, float *f, int *o) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float x = float(in[i]) * 0.5f;
    f[i] = x + float(i) + halfOf(float(in[i]));
    o[i] = int(x * 3.0f) + uint(-1) % 7 + int() + bool(in[i]) + halfOf(in[i]) + (char(in[i] * 40) < 0);
}
"""


@need_gxx
def test_functional_casts_match_gxx(tmp_path):
    x = np.array([3, -5, 0, 9, 100, -77, 12345, 1], np.int32)
    args = [("in", x), ("f", np.zeros(8, np.float32)), ("o", np.zeros(8, np.int32))]
    want = gxx_model(tmp_path, CASTS, "casts", 2, 4, args)
    got = emulate_src(CASTS, "casts", 2, 4, args)
    assert got["f"].tobytes() == want["f"].tobytes()
    assert got["o"].tolist() == want["o"].tolist()


POINTER_REFS = r"""
__device__ float take(const float *&p) { return *p++; }
__device__ void skip(int *&q, int n) { q += n; }

__global__ void walk(const float *in, int *o, float *f) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    const float *p = in + i;
    float a = take(p);
    float b = take(p);
    f[i] = a * 10.0f + b + *p;
    int *q = o;
    skip(q, i);
    *q = 7 * i + (int)(p - in);
}
"""


@need_gxx
def test_references_to_pointers_match_gxx(tmp_path):
    args = [("in", np.arange(10, dtype=np.float32) * 1.5), ("o", np.zeros(8, np.int32)),
            ("f", np.zeros(8, np.float32))]
    want = gxx_model(tmp_path, POINTER_REFS, "walk", 2, 4, args)
    got = emulate_src(POINTER_REFS, "walk", 2, 4, args)
    assert got["f"].tobytes() == want["f"].tobytes()
    assert got["o"].tolist() == want["o"].tolist()


DEFAULTS = r"""
template <typename T = float, int N = 2> __device__ T scaled(T v) { return v * T(N); }
template <int B, typename T = int, int C = B * 2> __global__ void fill(T *out) {
    out[threadIdx.x] = scaled(T(threadIdx.x)) + scaled<T, B>(T(1)) + T(C);
}
"""


@need_gxx
def test_default_template_arguments_match_gxx(tmp_path):
    for request, gxx_name, dtype in (("fill<3>", "fill<3>", np.int32), ("fill<5, float>", "fill<5, float>",
                                                                          np.float32)):
        args = [("out", np.zeros(4, dtype))]
        want = gxx_model(tmp_path, DEFAULTS, gxx_name, 1, 4, args)
        got = emulate_src(DEFAULTS, request, 1, 4, args, instantiate=(request,))
        assert got["out"].tobytes() == want["out"].tobytes(), request


def test_batch_files_name_kernel_template_instances(qgrun, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.cu").write_text(DEFAULTS)
    lines = [{"grid": 1, "block": 4, "kernel": "fill<3>", "args": {"out": "zeros:4"}, "outs": {"out": "a.npy"}},
             {"grid": 1, "block": 4, "kernel": "fill<5, float>", "args": {"out": "zeros:4"},
              "outs": {"out": "b.npy"}}]
    (tmp_path / "b.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    r = qgrun("t.cu", "--batch", "b.jsonl", "--engine", "ref", "--trace", "none")
    assert r.exit_code == 0, r.stderr
    i = np.arange(4)
    assert np.load("a.npy").tolist() == (2 * i + 3 + 6).tolist()
    assert np.load("b.npy").tolist() == (2.0 * i + 5 + 10).tolist()


def test_leftover_errors_are_named():
    assert_error("struct S { int x; };\n__global__ void k(S *p) { S s = S(1); }\n", 2, 33,
                 "'S(...)' calls a constructor, and 'S' has none; declare one in the struct or write "
                 "'S v = {...};'")
    assert_error("template <int A = 1, int B> __global__ void k(int *o) {}\n", 1, 26,
                 "template parameter 'B' needs a default argument (the parameters before it have one)")


CLASS_TEMPLATES = r"""
template <typename T, int N = 3>
struct Vec {
    T v[N];
    __device__ T dot(const Vec &o) const {
        T s = T(0);
        for (int i = 0; i < N; i++) s += v[i] * o.v[i];
        return s;
    }
    __device__ Vec operator+(const Vec<T, N> &o) const {
        Vec r;
        for (int i = 0; i < N; i++) r.v[i] = v[i] + o.v[i];
        return r;
    }
    __device__ T &operator[](int i) { return v[i]; }
};
template <typename T> struct Pair { T a, b; };

template <typename T> __device__ Pair<T> minmax(T x, T y) { Pair<T> p = {x < y ? x : y, x < y ? y : x}; return p; }

__global__ void vecs(const Vec<float> *in, Vec<float> *out, Pair<int> *pr, float *d) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    Vec<float> a = in[i];
    Vec<float, 3> b = in[(i + 1) % 8];
    out[i] = a + b;
    out[i][0] = a.dot(b);
    Vec<int, 2> w = {{i, 2 * i}};
    pr[i] = minmax(w[1] - 5, w[0]);
    pr[i].b += sizeof(Vec<int, 5>);
    d[i] = b[2];
}
"""


@need_gxx
def test_class_templates_match_gxx(tmp_path):
    vec = np.dtype([("v", np.float32, (3,))])
    pair = np.dtype([("a", np.int32), ("b", np.int32)])
    x = np.zeros(8, vec)
    x["v"] = np.linspace(-4, 7, 24).reshape(8, 3)
    args = [("in", x, "Vec<float>"), ("out", np.zeros(8, vec), "Vec<float>"), ("pr", np.zeros(8, pair), "Pair<int>"),
            ("d", np.zeros(8, np.float32))]
    want = gxx_model(tmp_path, CLASS_TEMPLATES, "vecs", 2, 4, args)
    got = emulate_src(CLASS_TEMPLATES, "vecs", 2, 4, [a[:2] for a in args])
    for name in ("out", "pr", "d"):
        assert got[name].tobytes() == want[name].tobytes(), name


def test_class_template_errors_are_named():
    assert_error("template <typename T> struct P { T a; };\n__global__ void k(P *p) {}\n", 2, 19,
                 "'P' is a class template; write 'P<...>'")
    assert_error("template <typename T, int N> struct P { T a[N]; };\n__global__ void k(P<int> *p) {}\n",
                 2, 19, "too few template arguments for 'P' (give 'N')")
