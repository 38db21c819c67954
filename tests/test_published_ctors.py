"""Constructors and default member initialisers (issue 27), as published CUDA writes them:
compiled with `qgcc --no-link -o k.qg`, read back by `qgrun`, and compared with g++ running the
same kernel text."""

from __future__ import annotations

import numpy as np

from frontcheck import assert_error
from gxx import gxx_model, need_gxx
from test_published_constructs import cli_run

CTORS = r"""
struct Pt {
    int x, y;
    float w = 0.5f;                 // default member initialisers
    int tag{7};
    __device__ Pt() : x(0), y(0) {}
    __device__ Pt(int x, int y) : x(x), y(y) { tag = x + y; }   // the list names members, not parameters
    __device__ Pt operator+(const Pt &o) const { return Pt(x + o.x, y + o.y); }
};
struct Acc { int n = 3; float s = 1.0f; };       // defaults and no constructor
struct Lock {                                    // host-only constructor and destructor: host code
    int state;
    Lock(void) { state = 0; }
    ~Lock(void) { state = 0; }
    __device__ int held() const { return state != 0; }
};
class Box {
public:
    int lo, hi;
    __host__ __device__ explicit Box(int c, int r = 2) : hi(c + r), lo(c - r) {}
    __device__ int width() const { return hi - lo; }
};
struct Seg {                                     // members whose types have constructors
    Pt from, to;
    Acc acc;
    int id = -1;
    __device__ Seg(int a, int b) : to(b, a), id(a * b) {}
};
struct Holder { Acc acc; int k; };               // no constructor of its own: Acc's defaults still run
__device__ Pt mid(Pt a, Pt b) { return Pt((a.x + b.x) / 2, (a.y + b.y) / 2); }
__global__ void build(int *o, float *f, Lock *lk, int *g) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    Pt a(i, 2 * i);                 // direct initialisation
    Pt b = Pt(3, 4);                // a functional cast
    Pt z;                           // the default constructor
    Acc c;
    const Box bx(i, 3);
    Box by = Box(i);
    Pt m = mid(a, b) + a;
    o[i * 9 + 0] = a.x; o[i * 9 + 1] = a.y; o[i * 9 + 2] = a.tag; o[i * 9 + 3] = m.x;
    o[i * 9 + 4] = m.y; o[i * 9 + 5] = z.tag + z.x + m.tag; o[i * 9 + 6] = c.n;
    o[i * 9 + 7] = bx.width() * 100 + by.lo + lk->held(); o[i * 9 + 8] = Box(i, i).hi;
    f[i] = c.s * 4.0f + a.w * 2.0f + z.w;
    Seg sg(i, 5);
    Holder h;
    Pt br{i, 1};                    // braces call the constructor too (tag = i + 1)
    g[i * 4 + 0] = sg.from.tag + sg.to.x * 10 + sg.to.tag * 100;
    g[i * 4 + 1] = sg.acc.n + sg.id;
    g[i * 4 + 2] = h.acc.n;
    g[i * 4 + 3] = br.tag;
}
"""


@need_gxx
def test_constructors_initialiser_lists_and_default_member_initialisers_match_gxx(qgcc, qgrun, tmp_path):
    """`S s(a, b);`, `S s = S(a, b);`, `return S(...)`, `S s;` with a default constructor or
    defaults, member initialiser lists (run in declaration order) and default arguments."""
    o, f = np.zeros(8 * 9, np.int32), np.zeros(8, np.float32)
    lk = np.zeros(1, np.dtype([("state", np.int32)]))
    lk["state"] = 1
    g = np.zeros(8 * 4, np.int32)
    got = cli_run(qgcc, qgrun, tmp_path, CTORS, "build", 2, 4, {"o": o, "f": f, "lk": lk, "g": g})
    want = gxx_model(tmp_path, CTORS, "build", 2, 4, [("o", o), ("f", f), ("lk", lk, "Lock"), ("g", g)])
    assert got["g"].tolist() == want["g"].tolist()
    assert got["o"].tolist() == want["o"].tolist()
    assert got["f"].tobytes() == want["f"].tobytes()


def test_constructor_forms_outside_the_subset_are_named():
    k = "__global__ void k(int *o) { o[0] = 1; }\n"
    assert_error("template <typename T> struct V { T v; __device__ V(T a) : v(a) {} };\n" + k, 1, 50,
                 "constructors of a class template are not supported ('V'); initialise a struct with braces ('V s = {...};') "
                 "or assign its members")
    assert_error("struct S { int a[2] = {1, 2}; };\n" + k, 1, 16,
                 "a default initialiser of the array member 'a' is not supported; assign it in a constructor")
    assert_error("struct S { int a; __device__ S(int x) : a(x, 1) {} };\n" + k, 1, 41,
                 "member initialiser 'a(...)' with 2 arguments is not supported; write one value")
    assert_error("struct S { int a; __device__ S(int x) : b(x) {} };\n" + k, 1, 41,
                 "'b' in the initialiser list of 'S' is not a data member of 'S'")
    assert_error("struct S { int a; __device__ ~S() {} };\n" + k, 1, 30,
                 "destructors are not supported ('~S'); a local struct needs no clean-up here, so remove it "
                 "or make it a member function")
    assert_error("__global__ void k(int *o) { struct L { int a = 1; }; L l; o[0] = l.a; }\n", 1, 36,
                 "constructors and default member initialisers of a struct declared in a function are not "
                 "supported; declare 'L' at file scope")
    s = "struct S { int a; __device__ S(int x) : a(x) {} };\n__global__ void k(int *o) { "
    assert_error(s + "for (S t(1); t.a < 3; t.a++) o[0] = 1; }\n", 2, 36,
                 "declare 'S t(...)' before the statement; a constructor call is not supported in a 'for' header")
    assert_error(s + "S p(1), q(2); }\n", 2, 31,
                 "declare one 'S' per statement when it has constructor arguments ('S p(...);')")
    assert_error(s + "S q; }\n", 2, 31, "'S' has no default constructor; write 'S q(...);' with its arguments")
    assert_error(s + "S q[2]; }\n", 2, 31, "a local array of 'S' (a struct with a constructor) is not "
                                          "supported; construct the elements one by one")


# ---------------------------------------------------------------- pointer casts of equal byte layout

CASTS = r"""
struct Pair { int a; float b; };
__global__ void views(float *f, unsigned *u, long long *w, int *o) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float4 *f4 = (float4 *)f;                        // four floats at a time
    int4 *i4 = reinterpret_cast<int4 *>(f4);         // the same bytes as int4
    uint2 *u2 = (uint2 *)u;
    unsigned *wu = (unsigned *)w;                    // a long long's words, low first
    double *d = (double *)w;
    Pair *pr = (Pair *)f;
    o[i * 6 + 0] = i4[i / 4].y;
    o[i * 6 + 1] = (int)(f4[i / 4].w * 4.0f);
    o[i * 6 + 2] = (int)(u2[i / 2].x ^ u2[i / 2].y);
    o[i * 6 + 3] = (int)wu[2 * (i % 4) + 1];
    o[i * 6 + 4] = (int)(d[i % 4] > 0.0) + pr[i % 8].a;
    o[i * 6 + 5] = (int)((unsigned *)f)[i] >> 3;
}
"""


@need_gxx
def test_pointer_casts_between_types_of_the_same_bytes_match_gxx(qgcc, qgrun, tmp_path):
    """`(float4 *)floats`, `int4 *` from `float4 *`, `(unsigned *)long_longs`, `(double *)`,
    a struct of 32-bit members over a float buffer: CUDA's bytes, read the same way as g++ reads them."""
    rng = np.random.default_rng(7)
    f = rng.standard_normal(16).astype(np.float32)
    u = rng.integers(0, 2**32, 16, dtype=np.uint64).astype(np.uint32)
    w = rng.integers(-2**62, 2**62, 8, dtype=np.int64)
    o = np.zeros(8 * 6, np.int32)
    got = cli_run(qgcc, qgrun, tmp_path, CASTS, "views", 2, 4, {"f": f, "u": u, "w": w, "o": o})
    vectors = ("struct float4 { float x, y, z, w; }; struct int4 { int x, y, z, w; };\n"
               "struct uint2 { unsigned x, y; };\n")  # CUDA's vector_types.h, for the host compiler
    want = gxx_model(tmp_path, vectors + CASTS, "views", 2, 4, [("f", f), ("u", u), ("w", w), ("o", o)])
    assert got["o"].tolist() == want["o"].tolist()
    assert_error("struct C { char c; int x; };\n__global__ void k(int *p) { C *q = (C *)p; }\n", 2, 36,
                 "casts between pointer types are not supported ('int *' to 'C *'): memory is addressed in "
                 "32-bit cells, so only pointers to int, unsigned, float, 64-bit scalars and structs of 32-bit "
                 "members (float4, int2, ...) convert to each other")
