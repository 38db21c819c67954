"""POD structs (issue 12): members, nesting, arrays of structs, copies, parameters, member
functions and operators, and buffers of structs at launch.

Published kernels use structs in a few recurring shapes: a particle or body record updated
in place through a pointer, small vector types passed and returned by value, a complex
number with operators, a per-block statistic reduced in shared memory.  The kernels below
are written in those shapes.  Where threads do not communicate, the *same kernel text* is
compiled by g++ with a host shim (tests/gxx.py), so C++ itself says what the text means;
the shared-memory reduction is checked against numpy, and one launch runs through the
compiled network.  A buffer of structs is a numpy structured array whose fields are the
struct's members (docs/subset.md, "Structs").
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from frontcheck import assert_error, emulate_src
from gxx import gxx_model, need_gxx
from qgcc.diagnostics import UsageError
from qgcc.frontend import compile_source
from qgcc.runtime.launch import make_launch

VEC2 = np.dtype([("x", np.float32), ("y", np.float32)])
PARTICLE = np.dtype([("pos", VEC2), ("vel", VEC2), ("id", np.int32), ("hits", np.uint32, (2,))])
RANGE = np.dtype([("lo", np.float32), ("hi", np.float32)])
COMPLEX = np.dtype([("re", np.float32), ("im", np.float32)])

PARTICLES = r"""
struct Vec2 { float x, y; };
struct Particle {
    Vec2 pos;
    Vec2 vel;
    int id;
    unsigned hits[2];
};
typedef struct { float lo, hi; } Range;

__device__ Vec2 add(Vec2 a, Vec2 b) { Vec2 r = {a.x + b.x, a.y + b.y}; return r; }
__device__ Vec2 scale(const Vec2 &v, float s) { Vec2 r; r.x = v.x * s; r.y = v.y * s; return r; }
__device__ void clampTo(Vec2 &v, Range r) {
    v.x = fminf(fmaxf(v.x, r.lo), r.hi);
    v.y = fminf(fmaxf(v.y, r.lo), r.hi);
    r.lo = 1e9f;                                   // a by-value parameter is a copy
}
__device__ void bounce(struct Particle *p, const Range &box) {
    if (p->pos.x <= box.lo || p->pos.x >= box.hi) { p->vel.x = -p->vel.x; p->hits[0]++; }
    if (p->pos.y <= box.lo || p->pos.y >= box.hi) { p->vel.y = -p->vel.y; p->hits[1] += 1; }
}

__global__ void step(Particle *ps, const Range *box, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    Particle p = ps[i];                            // a whole struct copied out of memory
    p.pos = add(p.pos, scale(p.vel, 0.25f));
    Range b = box[0];
    bounce(&p, b);
    clampTo(p.pos, b);
    Particle *q = ps + i;                          // pointer arithmetic counts structs
    *q = p;
    q->id = (int)(q - ps) * 10 + (&ps[i])->id + (int)sizeof(Particle);
}
"""


def particles(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    ps = np.zeros(n, PARTICLE)
    ps["pos"]["x"] = rng.uniform(-1.2, 1.2, n)
    ps["pos"]["y"] = rng.uniform(-1.2, 1.2, n)
    ps["vel"]["x"] = rng.uniform(-2, 2, n)
    ps["vel"]["y"] = rng.uniform(-2, 2, n)
    ps["id"] = rng.integers(0, 100, n)
    ps["hits"] = rng.integers(0, 5, (n, 2))
    return ps


@need_gxx
def test_particles_through_pointers_copies_and_by_value_structs_match_gxx(tmp_path):
    ps = particles(10, 1)
    box = np.array([(-1.0, 1.0)], RANGE)
    args = [("ps", ps, "Particle"), ("box", box, "Range"), ("n", 10)]
    want = gxx_model(tmp_path, PARTICLES, "step", 3, 4, args)
    got = emulate_src(PARTICLES, "step", 3, 4, [a[:2] for a in args])
    assert got["ps"].dtype == PARTICLE
    assert got["ps"].tobytes() == want["ps"].tobytes()
    assert not np.array_equal(got["ps"]["hits"], ps["hits"])  # some particles did bounce


COMPLEX_SRC = r"""
struct Complex {
    float re, im;
    __device__ float norm2() const { return re * re + im * im; }
    __device__ Complex operator+(const Complex &o) const { Complex r = {re + o.re, im + o.im}; return r; }
    __device__ Complex operator*(const Complex &o) const {
        Complex r = {re * o.re - im * o.im, re * o.im + im * o.re};
        return r;
    }
    __device__ Complex &operator+=(const Complex &o) { re += o.re; this->im += o.im; return *this; }
    __device__ bool operator==(const Complex &o) const { return re == o.re && im == o.im; }
};
struct Poly {
    Complex c[3];
    int deg;
    __device__ Complex &operator[](int i) { return c[i]; }
    __device__ Complex eval(Complex z) {           // Horner, through this->operator[]
        Complex acc = (*this)[deg];
        for (int k = deg - 1; k >= 0; k--) acc = acc * z + c[k];
        return acc;
    }
};

__global__ void julia(const Complex *cs, int *iters, Complex *last) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    Complex c = cs[i];
    Poly q = {{{0.0f, 0.0f}, {0.0f, 0.0f}, {1.0f, 0.0f}}, 2};   // z^2
    Poly q2 = {0.0f, 0.0f, 0.0f, 0.0f, 1.0f};      // brace elision; deg is 0
    q2.deg = 2;
    q2[0] = q[0];
    Complex z{};
    int n = 0;
    while (n < 24 && z.norm2() <= 4.0f) {
        z = q2.eval(z);
        z += c;
        n++;
    }
    Complex hist[2] = {z, c};
    iters[i] = n + (hist[1] == c ? 100 : 0);
    last[i] = n > 12 ? hist[0] : hist[1] + z;
}
"""


@need_gxx
def test_member_functions_and_operators_of_a_complex_type_match_gxx(tmp_path):
    cs = np.zeros(12, COMPLEX)
    cs["re"] = np.linspace(-2.0, 0.6, 12)
    cs["im"] = np.linspace(-1.1, 1.1, 12)[::-1]
    args = [("cs", cs, "Complex"), ("iters", np.zeros(12, np.int32)), ("last", np.zeros(12, COMPLEX), "Complex")]
    want = gxx_model(tmp_path, COMPLEX_SRC, "julia", 3, 4, args)
    got = emulate_src(COMPLEX_SRC, "julia", 3, 4, [a[:2] for a in args])
    assert got["iters"].tolist() == want["iters"].tolist()
    assert got["last"].tobytes() == want["last"].tobytes()
    assert len(set(want["iters"].tolist())) > 3  # the escape counts differ across the plane


STATS = r"""
struct Stat { int sum; int max; unsigned count; };

__device__ Stat merge(Stat a, const Stat &b) {
    Stat r = {a.sum + b.sum, max(a.max, b.max), a.count + b.count};
    return r;
}

__global__ void stats(const int *x, Stat *out) {
    __shared__ Stat s[8];
    unsigned t = threadIdx.x;
    Stat mine = {x[blockIdx.x * blockDim.x + t], x[blockIdx.x * blockDim.x + t], 1u};
    s[t] = mine;
    __syncthreads();
    for (unsigned h = blockDim.x / 2; h > 0; h /= 2) {
        if (t < h) s[t] = merge(s[t], s[t + h]);
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = s[0];
}
"""

STAT = np.dtype([("sum", np.int32), ("max", np.int32), ("count", np.uint32)])


def test_a_shared_array_of_structs_reduces_a_block_like_numpy():
    x = np.random.default_rng(2).integers(-1000, 1000, 24).astype(np.int32)
    got = emulate_src(STATS, "stats", 3, 8, [("x", x), ("out", np.zeros(3, STAT))])["out"]
    blocks = x.reshape(3, 8)
    assert got["sum"].tolist() == blocks.sum(axis=1).tolist()
    assert got["max"].tolist() == blocks.max(axis=1).tolist()
    assert got["count"].tolist() == [8, 8, 8]


def test_the_network_runs_a_shared_array_of_structs():
    from lockstep import both

    x = np.array([7, -3, 12, 5], np.int32)
    outs, _ = both("structs_stats", (1, 1, 1), (4, 1, 1), {}, {"x": x, "out": np.zeros(1, STAT)},
                   source=STATS, max_steps=4000)
    assert outs["out"].tolist() == [(21, 12, 4)]


NARROW = r"""
struct Pixel { unsigned char r, g, b; bool lit; char delta; float w; };

__global__ void shade(Pixel *px, int *sums) {
    int i = threadIdx.x;
    Pixel p = px[i];
    p.r = p.r + 100;                 // unsigned char wraps modulo 256
    p.delta = p.delta - 100;         // char wraps to -128..127
    p.lit = p.g;                     // bool: nonzero -> 1
    px[i] = p;
    sums[i] = p.r + p.g + p.b + p.delta + (int)p.w;
}
"""


def test_char_and_bool_members_keep_their_c_value_domains():
    """A char member takes one cell like any scalar; its value is converted as C converts."""
    dt = np.dtype([("r", np.uint8), ("g", np.uint8), ("b", np.uint8), ("lit", np.bool_),
                   ("delta", np.int8), ("w", np.float32)])
    px = np.array([(200, 0, 3, True, -50, 2.5), (10, 7, 250, False, 100, -1.0)], dt)
    got = emulate_src(NARROW, "shade", 1, 2, [("px", px), ("sums", np.zeros(2, np.int32))])
    r = ((px["r"].astype(int) + 100) & 0xFF)
    delta = ((px["delta"].astype(int) - 100 + 128) & 0xFF) - 128
    assert got["px"]["r"].tolist() == r.tolist()
    assert got["px"]["delta"].tolist() == delta.tolist()
    assert got["px"]["lit"].tolist() == [False, True]
    want = r + px["g"].astype(int) + px["b"].astype(int) + delta + px["w"].astype(int)
    assert got["sums"].tolist() == want.tolist()


def test_a_struct_buffer_must_match_the_members():
    prog = compile_source(STATS, "t.cu")
    k = prog.kernel("stats")
    assert [p.describe() for p in k.params] == ["const int * x", "Stat * out"]
    wrong = np.zeros(1, [("sum", np.int32), ("count", np.uint32), ("max", np.int32)])
    from qgcc.api import check_args

    with pytest.raises(UsageError) as e:
        check_args(k, {"x": np.zeros(8, np.int32), "out": wrong})
    assert str(e.value) == ("out: the array does not match struct 'Stat' of parameter 'out': it needs a "
                            "structured dtype with the members (sum int32, max int32, count uint32); "
                            "got (sum int32, count uint32, max int32)")
    flat = np.zeros(2, [("sum", np.int32), ("max", np.int32), ("count", np.uint32)])
    assert check_args(k, {"x": np.zeros(8, np.int32), "out": flat})[1]["out"].dtype == flat.dtype


def test_qgrun_reads_and_writes_buffers_of_structs(qgrun, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.cu").write_text(STATS)
    np.save("x.npy", np.arange(8, dtype=np.int32) - 3)
    r = qgrun("s.cu", "--engine", "ref", "--grid", "1", "--block", "8", "--arg", "x=@x.npy", "--arg", "out=zeros:1",
              "--out", "out=o.npy", "--trace", "none")
    assert r.exit_code == 0, r.stderr
    o = np.load("o.npy")
    assert o.dtype.names == ("sum", "max", "count")
    assert o.tolist() == [(4, 4, 8)]
    np.save("in.npy", np.zeros(1, STAT))
    r = qgrun("s.cu", "--engine", "ref", "--grid", "1", "--block", "8", "--arg", "x=@x.npy", "--arg", "out=@in.npy",
              "--out", "out=o2.npy", "--trace", "none")
    assert r.exit_code == 0, r.stderr
    assert np.load("o2.npy").dtype == STAT


NAMED_ERRORS = [
    ("template <int N> struct S { int x; __device__ S(int a) {} };\n__global__ void k() {}", 1, 47,
     "constructors of a class template are not supported ('S'); initialise a struct with braces ('S s = {...};') or assign "
     "its members"),
    ("template <int N> struct S { int x = 0; };\n__global__ void k() { S<1> s; }", 1, 37,
     "default member initialisers of a class template are not supported ('x'); assign the member after declaring the object"),
    ("struct S { int x; };\n__global__ void k(S *p) { p->y = 1; }", 2, 30, "'S' has no member named 'y'"),
    ("struct S { int x; };\n__global__ void k(S *p) { p.x = 1; }", 2, 29, "'S *' is a pointer; use '->x'"),
    ("struct S { int x; };\n__global__ void k(int *p) { S s; p->x = s.x; }", 2, 37,
     "'->' needs a pointer to a struct ('int *' is not one)"),
    ("struct S;\n__global__ void k(S *p) { S s; }", 2, 29,
     "'S' is an incomplete type (declared but not defined)"),
    ("struct S { int x; __device__ int f(); };\n__global__ void k() {}", 1, 34,
     "member function 'f' is declared but not defined here; define member functions inside the struct"),
    ("struct S { int x; };\n__global__ void k(S *p) { p[0] = p[1] + p[2]; }", 2, 39,
     "invalid operands to binary '+' ('S' and 'S'): no 'operator+' for them"),
    ("struct S { int x; __device__ void set() { x = 1; } };\n__global__ void k(const S *p) { p->set(); }",
     2, 36, "cannot call 'S::set' on a const 'S' (declare it 'set(...) const')"),
    ("struct S { int x; };\n__global__ void k(const S *p) { p->x = 2; }", 2, 36,
     "cannot assign to member 'x' of a const struct"),
    ("struct S { int x; };\n__global__ void k(S *p, int *o) { o[0] = p[0]; }", 2, 42,
     "cannot convert 'S' to 'int' in assignment"),
    ("struct S { int x; __device__ S operator<<(int k); };", 1, 40,
     "'operator<<' is not supported (a struct may define operator!=, operator%, operator(), operator*, operator*=, "
     "operator+, operator+=, operator-, operator-=, operator/, operator/=, operator<, operator<=, "
     "operator=, operator==, operator>, operator>=, operator[])"),
    ("typedef int I;\nstruct B : I { int y; };", 2, 12, "base class 'I' is not a complete struct or class"),
    ("struct A { int x : 3; };", 1, 16, "bit-fields are not supported ('x : ...'); use a whole member"),
    ("struct A { int x; virtual int f(); };", 1, 19, "'virtual' is not supported"),
    ("struct A { static int n; };", 1, 23, "static member 'n' is not supported; only integer constants "
     "('static const int N = 4;') may be static members"),
    ("struct S { int x; };\n__global__ void k(int *o) { int v = *o; }\n__constant__ S c = {1}, d = {c.x};",
     3, 32, "the initialiser of __constant__ 'd' is not a compile-time constant"),
    ("__global__ void k() { struct L { int a; __device__ int f() { return a; } }; }", 1, 56,
     "member functions of a struct declared inside a function are not supported; declare the struct "
     "at file scope"),
    ("struct S { int x; };\n__device__ int &f(S s) { return s.x; }\n__global__ void k() {}", 2, 35,
     "cannot return a reference to a member of a struct passed by value or a local; return a value"),
]


@pytest.mark.parametrize("src, line, col, message", NAMED_ERRORS, ids=[c[3][:40] for c in NAMED_ERRORS])
def test_struct_constructs_outside_the_subset_are_named(src, line, col, message):
    assert_error(src, line, col, message)


VECTORS = r"""
__device__ float3 operator+(float3 a, float3 b) { return make_float3(a.x + b.x, a.y + b.y, a.z + b.z); }
__device__ float3 operator*(float3 a, float s) { return make_float3(a.x * s, a.y * s, a.z * s); }
__device__ float dot(const float3 &a, const float3 &b) { return a.x * b.x + a.y * b.y + a.z * b.z; }

__global__ void blend(const float4 *p, float3 *q, int2 *r, float *d) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float4 v = p[i];
    float3 a = make_float3(v.x, v.y, v.z);
    float3 b = {v.w, 1.0f, 2};
    q[i] = a + b * 0.5f;
    int2 pair[3] = {};
    d[i] = dot(a, b) + sizeof(float4) + sizeof pair;
    r[i] = make_int2(i, -i);
    r[i].y += (int)v.x;
    uchar4 c = make_uchar4(300, i, 255 + i, 7);      // each argument converted to unsigned char
    r[i].x += c.x + c.z;
}
"""

# What CUDA's vector_types.h gives g++: the independent model of the built-in vector types.
GXX_VECTORS = r"""
struct float3 { float x, y, z; };
struct float4 { float x, y, z, w; };
struct int2 { int x, y; };
struct uchar4 { unsigned char x, y, z, w; };
static float3 make_float3(float x, float y, float z) { return {x, y, z}; }
static int2 make_int2(int x, int y) { return {x, y}; }
static uchar4 make_uchar4(unsigned char x, unsigned char y, unsigned char z, unsigned char w) { return {x, y, z, w}; }
"""


@need_gxx
def test_cuda_vector_types_and_make_functions_match_gxx(tmp_path):
    f4 = np.dtype([(c, np.float32) for c in "xyzw"])
    f3 = np.dtype([(c, np.float32) for c in "xyz"])
    i2 = np.dtype([(c, np.int32) for c in "xy"])
    p = np.zeros(8, f4)
    for j, c in enumerate("xyzw"):
        p[c] = np.linspace(-3, 3, 8) * (j + 1) + 0.25
    args = [("p", p, "float4"), ("q", np.zeros(8, f3), "float3"), ("r", np.zeros(8, i2), "int2"),
            ("d", np.zeros(8, np.float32))]
    want = gxx_model(tmp_path, GXX_VECTORS + VECTORS, "blend", 2, 4, args)
    got = emulate_src(VECTORS, "blend", 2, 4, [a[:2] for a in args])
    for name in ("q", "r", "d"):
        assert got[name].tobytes() == want[name].tobytes(), name


OVERLOADS = r"""
struct V {
    float x, y;
    __device__ V operator*(float s) const { V r = {x * s, y * s}; return r; }
    __device__ V operator*(const V &o) const { V r = {x * o.x, y * o.y}; return r; }
    __device__ V operator-() const { V r = {-x, -y}; return r; }
    __device__ V operator-(const V &o) const { V r = {x - o.x, y - o.y}; return r; }
    __device__ float get() const { return x; }
    __device__ float get(int i) const { return i ? y : x; }
    __device__ void set(float v) { x = v; }
    __device__ void set(float v) const { }
};
__device__ float3 operator+(float3 a, float3 b) { return make_float3(a.x + b.x, a.y + b.y, a.z + b.z); }
__device__ float3 operator+(float3 a, float s) { return make_float3(a.x + s, a.y + s, a.z + s); }
__device__ float3 operator-(float3 a) { return make_float3(-a.x, -a.y, -a.z); }
__device__ int twice(int v) { return 2 * v; }
__device__ float twice(float v) { return 2.5f * v; }
__device__ unsigned twice(unsigned v) { return v << 3; }

__global__ void over(V *p, const V *c, float3 *q, float *f) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    V a = p[i];
    p[i] = -(a * 2.0f * a) - -a;
    p[i].set(7.0f);
    c[i].set(9.0f);                   // the const overload: changes nothing
    q[i] = -(q[i] + 1.0f + q[i]);
    f[i] = twice(i) + twice(1.0f) + a.get() + a.get(1) + twice(3u) + c[i].get();
}
"""


@need_gxx
def test_overloaded_functions_and_operators_match_gxx(tmp_path):
    """Vector code overloads: `v * s` and `v * w`, `-v` and `v - w`, `a + b` and `a + s`, `twice(int)` and
    `twice(float)`; the call picks the overload whose parameters the arguments match."""
    f3 = np.dtype([(c, np.float32) for c in "xyz"])
    p = np.zeros(8, VEC2)
    p["x"] = np.linspace(-2, 3, 8)
    p["y"] = np.linspace(5, -1, 8)
    q = np.zeros(8, f3)
    q["y"] = np.arange(8)
    args = [("p", p, "V"), ("c", p.copy(), "V"), ("q", q, "float3"), ("f", np.zeros(8, np.float32))]
    want = gxx_model(tmp_path, GXX_VECTORS + OVERLOADS, "over", 2, 4, args)
    got = emulate_src(OVERLOADS, "over", 2, 4, [a[:2] for a in args])
    for name in ("p", "c", "q", "f"):
        assert got[name].tobytes() == want[name].tobytes(), name


def test_overload_errors_are_named():
    src = "__device__ int g(int v) { return v; }\n__device__ int g(float v) { return 1; }\n"
    assert_error(src + "__global__ void k(int *o) { o[0] = g(o); }\n", 3, 36, "no overload of 'g' takes (int *)")
    assert_error(src + "__global__ void k(int *o) { o[0] = g(1u); }\n", 3, 36,
                 "call of overloaded 'g' with (unsigned int) is ambiguous")
    assert_error(src + "__device__ float g(int w) { return 2.0f; }\n__global__ void k() {}\n", 3, 18,
                 "conflicting declaration of 'g' (previously declared on line 1)")


NODE_KERNEL = """
struct Node { int key; float w; };
__global__ void bump(Node *nodes, float4 *v, const uint2 *pairs, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        nodes[i].key = nodes[i].key * 2 + (int)pairs[i].y;
        nodes[i].w = nodes[i].w + 1.5f;
        v[i].w = v[i].x + v[i].y * v[i].z;
    }
}
"""
NODE = np.dtype([("key", np.int32), ("w", np.float32)])
FLOAT4 = np.dtype([("x", np.float32), ("y", np.float32), ("z", np.float32), ("w", np.float32)])
UINT2 = np.dtype([("x", np.uint32), ("y", np.uint32)])


@pytest.mark.parametrize("engine", ["ref", "neural"])
def test_struct_and_vector_pointer_parameters_survive_every_output_form(qgcc, qgrun, tmp_path, monkeypatch, engine):
    """A kernel whose parameters point to a struct, a float4 and a uint2 is written as a
    linked .qg, an unlinked .qg and .qsass; the .qsass assembles back to the same program,
    and each file runs through qgrun to the values numpy gives in the kernel's order."""
    from qgcc import qgfile

    monkeypatch.chdir(tmp_path)
    Path("k.cu").write_text(NODE_KERNEL)
    n = 6
    nodes = np.zeros(n, NODE)
    nodes["key"] = np.arange(n) - 2
    nodes["w"] = np.linspace(-1, 1, n, dtype=np.float32)
    v = np.zeros(n, FLOAT4)
    for j, f in enumerate("xyzw"):
        v[f] = np.arange(n, dtype=np.float32) * (j + 1) / 3
    pairs = np.zeros(n, UINT2)
    pairs["y"] = 7 * np.arange(n)
    np.save("nodes.npy", nodes)
    np.save("v.npy", v)
    np.save("pairs.npy", pairs)

    outputs = {"linked": ["-o", "linked.qg"], "unlinked": ["--no-link", "-o", "unlinked.qg"],
               "asm": ["-S", "-o", "k.qsass"]}
    for what, argv in outputs.items():
        if engine == "ref" and what == "linked":
            continue
        r = qgcc("k.cu", *argv)
        assert r.exit_code == 0, (what, r.stdout, r.stderr)
    text = Path("k.qsass").read_text()
    assert '.struct Node "key" int, "w" float' in text and ".param struct float4* v" in text
    r = qgcc("k.qsass", "--no-link", "-o", "from_asm.qg")
    assert r.exit_code == 0, r.stderr
    assert qgfile.load("from_asm.qg").program.kernels[0].params == qgfile.load("unlinked.qg").program.kernels[0].params

    want_nodes = nodes.copy()
    want_nodes["key"] = want_nodes["key"] * 2 + pairs["y"].astype(np.int32)
    want_nodes["w"] = want_nodes["w"] + np.float32(1.5)
    want_v = v.copy()
    want_v["w"] = v["x"] + v["y"] * v["z"]
    files = ["linked.qg"] if engine == "neural" else ["from_asm.qg", "unlinked.qg"]
    for f in files:
        r = qgrun(f, "--engine", engine, "--grid", "2", "--block", "4", "--arg", "nodes=@nodes.npy",
                  "--arg", "v=@v.npy", "--arg", "pairs=@pairs.npy", "--arg", f"n={n}",
                  "--out", "nodes=o_nodes.npy", "--out", "v=o_v.npy", "--trace", "none")
        assert r.exit_code == 0, (f, r.stdout, r.stderr)
        got_nodes, got_v = np.load("o_nodes.npy"), np.load("o_v.npy")
        assert got_nodes.dtype == NODE and got_v.dtype == FLOAT4
        assert got_nodes.tobytes() == want_nodes.tobytes(), f
        assert got_v.tobytes() == want_v.tobytes(), f
