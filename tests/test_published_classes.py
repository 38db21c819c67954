"""C++ classes as rodinia dwt2d's wavelet kernels write them (issue 27): member function
templates of class templates (`b.each(p, F())` deduced, `l.transform<true>(...)` explicit),
class templates nested in a class template (deduced from `Col<C> &`), base classes reached with
`this->`, `Buf::SIZE` through a member typedef, static member functions called as
`X<8>::run(...)`, local references (`T &mid = v[i];`), a class instance in `__shared__` memory,
and file-scope float constants named by later ones.  Our own kernels in that style: compiled
with `qgcc --no-link -o k.qg`, read back by `qgrun`, every output byte compared with g++ running
the same text."""

from __future__ import annotations

import numpy as np
import pytest

from frontcheck import assert_error
from gxx import gxx_model, need_gxx
from test_published_constructs import cli_run

LIFT_LIB = r"""
namespace lift {

const float kGain = 1.25f;
const float kNeg = -kGain;           // a const float named by a later one
const float kInv = 1.0 / kGain;      // a double quotient rounded to float, as C++ initialises it

struct AddScaled {                   // a functor with a const member set by its constructor
    const float w;
    __device__ AddScaled(const float w) : w(w) {}
    __device__ void operator()(const float a, float & c, const float b) const { c += w * (a + b); }
};
struct Predict { __device__ void operator()(const int a, int & c, const int b) const { c -= (a + b) / 2; } };
struct Update { __device__ void operator()(const int a, int & c, const int b) const { c += (a + b + 2) / 4; } };

class Mirror {                       // a base with no data: a protected static helper
protected:
    __device__ static void reflect(int & i, const int & n) {
        if (i >= n) i = 2 * n - 2 - i;
        else if (i < 0) i = -i;
    }
};

template <typename T, bool CHECKED>
class Cursor : protected Mirror {
protected:
    int step;
    int limit;
    __device__ int start(int first, int n) { limit = CHECKED ? n : 0; step = 1; return first; }
};

template <typename T, bool CHECKED>
class Reader : public Cursor<const T, CHECKED> {
    int pos;
public:
    __device__ void init(int first, int n) {
        this->reflect(first, n);
        pos = this->start(first, n) - 1;
    }
    __device__ T next(const T * const src) {
        pos += this->step;
        if (CHECKED && pos == this->limit) {     // past the end: walk back, mirrored
            pos -= 2 * this->step;
            this->step = -this->step;
        }
        return src[pos];
    }
};

template <typename T, int N>
class Line {
public:
    enum { SIZE = N };
    T v[N];
    template <typename F>
    __device__ void each(const int odd, const F & f) {
        for (int i = odd; i < N; i += 2) {
            const T left = v[i > 0 ? i - 1 : 1];
            T & mid = v[i];                          // a local reference into the member array
            const T right = v[i + 1 < N ? i + 1 : N - 2];
            f(left, mid, right);
        }
    }
    __device__ T & operator[](const int i) { return v[i]; }
};

template <int N>
class Lifter {
    template <bool CHECKED>
    struct Column {
        Reader<int, CHECKED> in;
        int taken;
    };
    typedef Line<int, N> Buffer;
    enum { WIDTH = Buffer::SIZE };
    Buffer line;

    template <bool CHECKED>
    __device__ void load(Column<CHECKED> & c, const int * src, int first, int n) {
        c.in.init(first, n);
        c.taken = 0;
        for (int i = 0; i < WIDTH; i++) {
            line[i] = c.in.next(src);
            c.taken++;
        }
    }
    template <bool CHECKED>
    __device__ int transform(const int * src, int * dst, int first, int n) {
        Column<CHECKED> c;
        load(c, src, first, n);                      // CHECKED deduced from Column<CHECKED> &
        line.each(1, Predict());
        line.each(0, Update());
        for (int i = 0; i < WIDTH; i++)
            if (first + i < n) dst[first + i] = line[i];
        return c.taken;
    }
public:
    __device__ static int run(const int * src, int * dst, int n) {
        Lifter<N> l;
        const int first = (blockIdx.x * blockDim.x + threadIdx.x) * N;
        if (first + N >= n)
            return l.transform<true>(src, dst, first, n);
        return l.transform<false>(src, dst, first, n);
    }
};

}  // namespace lift

"""

LIFT = LIFT_LIB + r"""
template <int N>
__global__ void liftKernel(const int * in, int * out, int * taken, int n) {
    taken[blockIdx.x * blockDim.x + threadIdx.x] = lift::Lifter<N>::run(in, out, n);
}
"""

SMOOTH = LIFT_LIB + r"""
__global__ void smoothKernel(float * data) {
    __shared__ lift::Line<float, 8> rows[4];         // class instances in shared memory, one a thread
    const int t = threadIdx.x;
    lift::Line<float, 8> & row = rows[t];
    for (int i = 0; i < 8; i++) row[i] = data[t * 8 + i];
    row.each(1, lift::AddScaled(lift::kNeg));
    row.each(0, lift::AddScaled(lift::kInv));
    for (int i = 0; i < 8; i++) data[t * 8 + i] = row[i];
}
"""


@need_gxx
def test_member_templates_nested_classes_bases_and_static_calls_match_gxx(qgcc, qgrun, tmp_path):
    """A lifting step written as dwt2d writes one: `Lifter<8>::run` (a static member function),
    `l.transform<true>` and `line.each(1, Predict())` (member function templates, explicit and
    deduced), `Column<CHECKED>` nested in the class template and deduced from a reference, a
    reader whose bases hold its fields and a protected static helper (`this->reflect`), `Buffer::SIZE`,
    a local reference into a member array; the last thread's window runs past the end (mirrored)."""
    rng = np.random.default_rng(27)
    n = 60
    x = rng.integers(-128, 128, n).astype(np.int32)
    out, taken = np.zeros(n, np.int32), np.zeros(8, np.int32)
    got = cli_run(qgcc, qgrun, tmp_path, LIFT, "liftKernel<8>", 2, 4, {"in": x, "out": out, "taken": taken},
                  {"n": n}, instantiate=["liftKernel<8>"])
    want = gxx_model(tmp_path, LIFT, "liftKernel<8>", 2, 4, [("in", x), ("out", out), ("taken", taken), ("n", n)])
    assert got["out"].tolist() == want["out"].tolist()
    assert got["taken"].tolist() == want["taken"].tolist() == [8] * 8
    assert got["out"].tolist() != x.tolist()  # the steps changed the data


@need_gxx
def test_class_instances_in_shared_memory_and_float_constants_match_gxx(qgcc, qgrun, tmp_path):
    """`__shared__ Line<float, 8> rows[4]` with member function templates called on them, a functor
    holding a float set by its constructor, and `kNeg = -kGain`, `kInv = 1.0 / kGain` (file-scope
    float constants named by later ones): every bit as g++ computes it."""
    data = np.random.default_rng(5).standard_normal(32).astype(np.float32)
    got = cli_run(qgcc, qgrun, tmp_path, SMOOTH, "smoothKernel", 1, 4, {"data": data})
    want = gxx_model(tmp_path, SMOOTH, "smoothKernel", 1, 4, [("data", data)])
    assert got["data"].tobytes() == want["data"].tobytes()
    assert got["data"].tobytes() != data.tobytes()


REFS = r"""
__global__ void refs(int *o, float *f) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int x = i * 3;
    int &r = x;                 // a local in a register: the reference reaches it
    r += 2;
    const int &t = x * 2;       // a temporary, bound to a const reference
    x += 1;
    float &e = f[i];
    e = e * 2.0f + (float)t;
    int a[3] = {i, i + 1, i + 2};
    for (int k = 0; k < 3; k++) { int &ak = a[k]; ak *= ak; }
    { int r = 100; o[i * 4 + 3] = r; }      // a new r hides the reference in this block
    o[i * 4 + 0] = x; o[i * 4 + 1] = r; o[i * 4 + 2] = t + a[0] + a[1] + a[2];
}
"""


@need_gxx
def test_local_references_name_their_referent_as_gxx_does(qgcc, qgrun, tmp_path):
    """`int &r = x;` (a register local), `float &e = f[i];` (global memory), `int &ak = a[k];` (a local
    array element), `const int &t = x * 2;` (a temporary), and a block that declares its own r."""
    f = np.linspace(-1, 1, 8).astype(np.float32)
    o = np.zeros(32, np.int32)
    got = cli_run(qgcc, qgrun, tmp_path, REFS, "refs", 2, 4, {"o": o, "f": f})
    want = gxx_model(tmp_path, REFS, "refs", 2, 4, [("o", o), ("f", f)])
    assert got["o"].tolist() == want["o"].tolist()
    assert got["f"].tobytes() == want["f"].tobytes()


@pytest.mark.slow
def test_lifting_in_the_network_equals_the_emulator(qgcc, qgrun, tmp_path):
    """The same member-template kernel executed by the compiled layers: the emulator's bits."""
    x = np.random.default_rng(3).integers(-128, 128, 20).astype(np.int32)
    arrays = {"in": x, "out": np.zeros(20, np.int32), "taken": np.zeros(4, np.int32)}
    ref = cli_run(qgcc, qgrun, tmp_path, LIFT, "liftKernel<8>", 1, 4, arrays, {"n": 20}, instantiate=["liftKernel<8>"])
    net = cli_run(qgcc, qgrun, tmp_path, LIFT, "liftKernel<8>", 1, 4, arrays, {"n": 20},
                  instantiate=["liftKernel<8>"], engine="neural")
    assert ref["out"].tolist() != x.tolist()
    for k in arrays:
        assert net[k].tobytes() == ref[k].tobytes()


def test_class_member_misuses_are_named():
    assert_error("struct S { template <int N> __device__ int f(int x) { return x + N; } };\n"
                 "struct T { __device__ int f(int x) { return x; } };\n"
                 "__global__ void k(int *o) { T t; o[0] = t.f<2>(1); }\n", 3, 43,
                 "'T::f' is not a member function template")
    assert_error("struct S { template <int N> __device__ int f(int x) { return x + N; } };\n"
                 "__global__ void k(int *o) { S s; o[0] = s.f(1); }\n", 2, 43,
                 "cannot deduce template parameter 'N' of member function template 'f'; write .f<...>(...)")
    assert_error("struct S { enum { N = 2 }; };\n__global__ void k(int *o) { o[0] = S::M; }\n", 2, 36,
                 "'S' has no constant 'M' (outside the class, '::' names only class constants and static "
                 "member functions)")
    assert_error("__global__ void k(int *o) { o[0] = Q::M; }\n", 1, 37,
                 "'::' is not supported (C++ namespaces and classes are not)")
    assert_error("template <int N> struct S { int a; };\n__global__ void k(int *o) { o[0] = S<2>::g(1); }\n", 2, 36,
                 "'S<2>::g' is not a static member function")
    assert_error("__global__ void k(int *o) { int &r = o[0] + 1; r = 2; }\n", 1, 33,
                 "cannot bind the non-const reference 'r' to a temporary; initialise it with a variable or an "
                 "element, or declare it 'const'")
