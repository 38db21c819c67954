"""C++ constructs and host-side leftovers of published CUDA (issue 27): function template
overloads, enums, functor objects (`operator()`), host-only headers.  Each kernel is written in
the published style (our own text), compiled with `qgcc --no-link -o k.qg`, run by `qgrun` on
the emulator, and compared with g++ running the same text thread by thread."""

from __future__ import annotations

import numpy as np
import pytest

from frontcheck import assert_error, error_of
from gxx import gxx_model, need_gxx
from test_published_constructs import cli_run

# ---------------------------------------------------------------- function template overloads

TEMPLATE_OVERLOADS = r"""
#include <malloc.h>
#include <pthread.h>
template <class T, class S>
__device__ void store(T *lo, T *hi, S &count, const unsigned n) {
    lo[threadIdx.x] = count;
    hi[threadIdx.x] = count + n;
}
template <class T, class S>
__device__ void store(T *lo, T *hi, S &count, const unsigned n, unsigned &second) {
    lo[threadIdx.x] = count * 2;
    hi[threadIdx.x + n] = count - 1;
    second = count + 7;
}
template <typename T> __device__ T twice(T x) { return x + x; }
template <typename T> __device__ T twice(T x, T y, T z = 1) { return x * y + z; }
__global__ void bisect(unsigned *lo, unsigned *hi, int *o) {
    unsigned c = threadIdx.x * 3 + 1, s = 0;
    if (threadIdx.x & 1) store(lo, hi, c, 4u);
    else store(lo, hi, c, 4u, s);
    o[threadIdx.x * 3] = s;
    o[threadIdx.x * 3 + 1] = twice((int)threadIdx.x);
    o[threadIdx.x * 3 + 2] = twice((int)threadIdx.x, 5) + twice(2, 3, 4);
}
"""


@need_gxx
def test_function_template_overloads_are_chosen_by_argument_count_as_gxx_does(qgcc, qgrun, tmp_path):
    """Two templates of one name with different parameter counts (bisect_util's
    storeIntervalConverged) are overloads, also when their template arguments are the same;
    the call's argument count picks one (defaults counted).  malloc.h/pthread.h are host
    headers: accepted, declaring nothing."""
    lo, hi, o = np.zeros(4, np.uint32), np.zeros(8, np.uint32), np.zeros(12, np.int32)
    got = cli_run(qgcc, qgrun, tmp_path, TEMPLATE_OVERLOADS, "bisect", 1, 4, {"lo": lo, "hi": hi, "o": o})
    src = TEMPLATE_OVERLOADS.replace("#include <malloc.h>\n", "").replace("#include <pthread.h>\n", "")
    want = gxx_model(tmp_path, src, "bisect", 1, 4, [("lo", lo), ("hi", hi), ("o", o)])
    for n in ("lo", "hi", "o"):
        assert got[n].tolist() == want[n].tolist(), n


def test_function_template_overloads_need_different_parameter_counts():
    src = ("template <typename T> __device__ T f(T x) { return x; }\n"
           "template <typename T> __device__ T f(T *x) { return *x; }\n"
           "__global__ void k(int *o) { o[0] = f(o); }\n")
    assert_error(src, 2, 36, "function template 'f' is overloaded with the same number of parameters as "
                             "the one on line 1 (qgcc tells function template overloads apart by their "
                             "number of parameters); rename one")
    src = ("template <typename T> __device__ T f(T x) { return x; }\n"
           "template <typename T> __device__ T f(T x, T y) { return x; }\n"
           "__global__ void k(int *o) { o[0] = f(1, 2, 3); }\n")
    assert_error(src, 3, 36, "no overload of function template 'f' takes 3 arguments")


def test_device_only_library_headers_are_named_errors():
    assert_error("#include <curand_kernel.h>\n__global__ void k(int *o) {}\n", 1, 11,
                 "'curand_kernel.h' (cuRAND's device API: curand_init, curand_uniform, ...) is not supported; "
                 "make the random numbers on the host and pass them in an array")
    assert_error("#include <cuda/barrier>\n__global__ void k(int *o) {}\n", 1, 11,
                 "'cuda/barrier' (cuda::barrier, arrive/wait barriers) is not supported; use __syncthreads() "
                 "or cooperative groups' sync")


# ---------------------------------------------------------------- enums

ENUMS = r"""
enum Mode { ADD, MUL = 4, SUB, LAST };
typedef enum { RED = 1 << 2, GREEN, BLUE = GREEN * 3 } Color;
enum class Dir : unsigned { Up = 7, Down, Left = Up + 10 };
typedef enum Shape { DOT, LINE } ShapeT;
__device__ int apply(Mode m, int a, int b) {
    switch (m) { case ADD: return a + b; case MUL: return a * b; default: return a - b; }
}
__device__ unsigned turn(Dir d) { return d == Dir::Left ? 1u : (unsigned)d * 2u; }
__global__ void enums(int *o, unsigned *u) {
    int i = threadIdx.x;
    enum Mode m = (Mode)(i % 3 == 2 ? SUB : i % 3 == 1 ? MUL : ADD);
    Color c = GREEN;
    Dir d = i & 1 ? Dir::Down : Dir::Left;
    enum { LOCAL_A = 3, LOCAL_B } local = LOCAL_A;
    ShapeT s = (ShapeT)(i & 1);
    enum Shape s2 = LINE;
    o[i * 4] = apply(m, i, 3);
    o[i * 4 + 1] = c + BLUE + LAST + (s == DOT) * 100 + s2;
    o[i * 4 + 2] = (int)d + (int)Dir::Left + (d == Dir::Down) + (int)sizeof(Mode);
    o[i * 4 + 3] = LOCAL_B * 10 + local;
    u[i] = turn(d) + turn(Dir::Up);
}
"""


@need_gxx
@pytest.mark.parametrize("engine", ["ref", pytest.param("neural", marks=pytest.mark.slow)])
def test_enums_are_integer_constants_and_their_types_the_underlying_integer_as_gxx_does(qgcc, qgrun, tmp_path,
                                                                                        engine):
    """Unscoped and scoped enums (`enum class E : unsigned`), implicit values (previous + 1),
    values from earlier enumerators, `typedef enum {...} T;`, C's `enum E x;`, a local enum
    with a declarator, enum parameters, casts, switch cases and sizeof (nbody's bodysystem.h);
    on the emulator and inside the network."""
    o, u = np.zeros(16, np.int32), np.zeros(4, np.uint32)
    got = cli_run(qgcc, qgrun, tmp_path, ENUMS, "enums", 1, 4, {"o": o, "u": u}, engine=engine)
    want = gxx_model(tmp_path, ENUMS, "enums", 1, 4, [("o", o), ("u", u)])
    assert got["o"].tolist() == want["o"].tolist()
    assert got["u"].tolist() == want["u"].tolist()


def test_an_undeclared_enum_is_a_named_error():
    assert_error("__global__ void k(int *o) { enum E e; o[0] = 0; }\n", 1, 29,
                 "'enum E' is not declared before this use")


# ---------------------------------------------------------------- functors: operator()

FUNCTORS = r"""
struct AddScaled {                       // a lifting step, as dwt2d writes them
    const float scale;                   // a const member: set by the constructor only
    __device__ AddScaled(const float s) : scale(s) {}
    __device__ void operator()(const float p, float &c, const float n) const { c += scale * (p + n); }
};
struct Halve {
    __device__ int operator()(int a, int b) const { return (a + b) / 2; }
    __device__ int operator()(int a) const { return a / 2; }
};
struct Count {
    int n;
    __device__ void operator()(int by) { n += by; }
};
template <typename OP>
__device__ void lift(float *d, int n, const OP &op) {
    for (int i = 1; i + 1 < n; i += 2) op(d[i - 1], d[i], d[i + 1]);
}
template <typename F>
__device__ int fold(F f, int x) { return f(x, 7) + f(x); }
__global__ void functors(float *d, int *o) {
    int t = threadIdx.x;
    AddScaled up(0.25f);
    lift(d + t * 8, 8, up);
    lift(d + t * 8, 8, AddScaled(-0.5f));          // a temporary functor
    Halve h;
    Count c;
    c.n = t;
    c(3);
    c(t);
    o[t] = h(t, 3) + Halve()(t * 5) + fold(h, t) + c.n * 1000 + (int)up.scale;
}
"""


@need_gxx
def test_functor_objects_call_their_operator_call_as_gxx_does(qgcc, qgrun, tmp_path):
    """`f(args)` on a struct with operator() calls it: a variable, a temporary (`Halve()(x)`), a
    functor passed by value or const reference to a template, overloads of operator(), a
    non-const operator() that updates the object; const members set by a constructor."""
    d = np.random.default_rng(27).standard_normal(32).astype(np.float32)
    o = np.zeros(4, np.int32)
    got = cli_run(qgcc, qgrun, tmp_path, FUNCTORS, "functors", 1, 4, {"d": d, "o": o})
    want = gxx_model(tmp_path, FUNCTORS, "functors", 1, 4, [("d", d), ("o", o)])
    assert got["o"].tolist() == want["o"].tolist()
    assert got["d"].tobytes() == want["d"].tobytes()


def test_calling_a_non_functor_and_assigning_a_const_member_are_errors():
    head = "struct S { const int k; __device__ S(int v) : k(v) {} };\nstruct T { int a; };\n"
    assert_error(head + "__global__ void g(int *o) { S s(1); s.k = 2; }\n", 3, 39,
                 "cannot assign to const member 'k' of 'S'")
    assert_error(head + "__global__ void g(int *o) { T t; t.a = 1; o[0] = t(2); }\n", 3, 50,
                 "called object of type 'T' has no 'operator()'")
    assert_error(head + "__global__ void g(int *o) { int t = 1; o[0] = t(2); }\n", 3, 47,
                 "called object 't' is not a function")


# ---------------------------------------------------------------- host code beside the kernels

HOST_PART = r"""
#include <pthread.h>
#include <stdio.h>
#include <queue>
#include <vector>
using namespace std;
struct job_arg_t { Points *points; long kmin; pthread_barrier_t *barrier; };   // host types
class Stream {
public:
    virtual size_t read(float *dest, int dim, int num) = 0;
    virtual ~Stream() {}
};
class SimStream : public Stream {
public:
    SimStream(long n_) { n = n_; }
    size_t read(float *dest, int dim, int num) { return std::fread(dest, 4, num, fp); }
private:
    long n; FILE *fp;
};
struct Frame { unsigned char *dev; CPUAnimBitmap *bitmap; };
struct NodeCmp { bool operator()(const Stream *a, const Stream *b) const { return a < b; } };  // host methods
struct list_item { struct list_item *pred, *next; void *datum; };               // host data
typedef struct list_item list_item_t;
typedef struct { list_item_t *head; int (*compare)(const void *, const void *); } list_t;
typedef struct { int n; float **weights; } Net;
FILE *logfile;
int nthreads = 4;
static const double PI = 3.1415926535897932384626433832795;
typedef vector<bool> Code;
template <typename T> T host_max(T a, T b) { return a > b ? a : b; }
static void usage(const char *argv0) { fprintf(stderr, "usage: %s\n", argv0); exit(1); }
int main(int argc, char **argv) {
    Points pts; SimStream s(10);
    scale<<<1, 4>>>(0, 0, 3);
    return host_max(argc, 2);
}
"""
KERNEL_PART = r"""
typedef struct { float weight; float *coord; long assign; float cost; } Point;
typedef struct { long num; int dim; Point *p; } Points;
__device__ float dist(const Point &a, float x) { return (a.weight - x) * (a.weight - x); }
__global__ void scale(Point *p, float *o, int k) {
    int i = threadIdx.x;
    o[i] = dist(p[i], 1.5f) * k + (float)p[i].assign + p[i].cost;
}
"""


@need_gxx
def test_host_code_the_kernels_do_not_use_is_left_out(qgcc, qgrun, tmp_path):
    """main, host functions and function templates, classes with virtual members or base classes,
    structs with host member functions, `void *` or `T **` members or function pointers,
    typedefs naming them, STL headers, structs of host types (pthread_barrier_t, CPUAnimBitmap), host globals and typedefs of
    host types beside the kernel (streamcluster's header, cuda-by-example's DataBlock): the
    kernel compiles, and computes what the kernel alone computes under g++."""
    pt = np.dtype([("weight", np.float32), ("coord", np.uint32), ("assign", np.int64), ("cost", np.float32)])
    p = np.zeros(4, pt)
    p["weight"], p["assign"], p["cost"] = [0.5, 2, -1, 3.25], [3, -2, 7, 1 << 33], [1, 2, 0.5, -4]
    o = np.zeros(4, np.float32)
    got = cli_run(qgcc, qgrun, tmp_path, KERNEL_PART + HOST_PART, "scale", 1, 4, {"p": p, "o": o}, {"k": 3})
    want = [np.float32(np.float32(np.float32(w - 1.5) * np.float32(w - 1.5)) * 3) + np.float32(a) + np.float32(c)
            for w, a, c in zip(p["weight"], p["assign"], p["cost"])]
    assert got["o"].tobytes() == np.array(want, np.float32).tobytes()


def test_host_code_a_kernel_uses_is_reported_as_before():
    """Left out only when nothing kept names it: a kernel that uses a host struct, calls a host
    function or reads a host global gets the error it got before."""
    e = error_of("struct F { CPUAnimBitmap *b; };\n__global__ void k(F *f) {}\n")
    assert (e.line, e.col) == (1, 12) and "'CPUAnimBitmap'" in e.message, e.render()
    assert_error("int twice(int x) { return 2 * x; }\n__global__ void k(int *o) { o[0] = twice(1); }\n", 1, 5,
                 "function 'twice' must be __global__ or __device__ (host code is not supported)")
    assert_error("int n = 4;\n__global__ void k(int *o) { o[0] = n; }\n", 1, 5,
                 "global variable 'n' is not supported; only integer constants ('const int N = 4;') may be "
                 "declared at file scope")
    assert_error("class B { virtual int f(); };\n__global__ void k(B *b) {}\n", 1, 11, "'virtual' is not supported")
    assert_error("static const double PI = 3.14159;\n__global__ void k(double *o) { o[0] = PI; }\n", 1, 21,
                 "global variable 'PI' is not supported; only integer constants ('const int N = 4;') may be "
                 "declared at file scope")


# ---------------------------------------------------------------- a local variable named like a type

SHADOW = r"""
typedef struct latLong { float lat; float lng; } LatLong;
__global__ void euclid(LatLong *d, float *o, float lat, float lng) {
    int i = threadIdx.x;
    {
        LatLong *latLong = d + i;        // hides the struct tag in this block
        o[i] = (lat - latLong->lat) * (lat - latLong->lat) + (lng - latLong->lng) * (lng - latLong->lng);
    }
    latLong other = d[3 - i];            // a type again after the block
    o[i + 4] = other.lat * 2.0f + other.lng;
}
"""


@need_gxx
def test_a_local_variable_named_like_a_struct_tag_hides_it_in_its_block_as_gxx_does(qgcc, qgrun, tmp_path):
    """rodinia nn: `LatLong *latLong = d_locations + id;` where latLong is also the struct's tag."""
    d = np.zeros(4, np.dtype([("lat", np.float32), ("lng", np.float32)]))
    d["lat"], d["lng"] = [1.5, -2.25, 3, 0.125], [4, 5.5, -6, 7]
    o = np.zeros(8, np.float32)
    got = cli_run(qgcc, qgrun, tmp_path, SHADOW, "euclid", 1, 4, {"d": d, "o": o}, {"lat": 0.5, "lng": -1.0})
    want = gxx_model(tmp_path, SHADOW, "euclid", 1, 4, [("d", d, "LatLong"), ("o", o), ("lat", np.float32(0.5)),
                                                        ("lng", np.float32(-1.0))])
    assert got["o"].tobytes() == want["o"].tobytes()


def test_syntax_errors_between_items_are_still_reported_beside_a_kernel():
    assert_error("__global__ void k(int *o) { o[0] = 1; }\n}\n", 2, 1, "expected a declaration before '}'")
    assert_error("__global__ void k(int *o) { o[0] = 1; }\nint x\n", 2, 6, "expected ';' at end of input")


LAUNCHED_TYPES = r"""
typedef unsigned char u8;
struct Texel { int a; float b; };
typedef Texel TexelT;
template <class T> __global__ void copyk(T *d, const T *s, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) d[i] = s[i];
}
int main() { return 0; }  // the host code that launched copyk<u8> and copyk<TexelT> (cut)
"""


def test_typedefs_named_only_by_kernel_templates_instantiated_at_launch_are_kept(qgcc, qgrun, tmp_path):
    """A typedef only the (left-out) host code names is left out, unless `--instantiate` names it:
    alignedTypes' `testKernel<uint8>`.  Then the instance copies its elements exactly."""
    s = np.arange(1, 7, dtype=np.uint8) * 37
    got = cli_run(qgcc, qgrun, tmp_path, LAUNCHED_TYPES, "copyk__uchar", 2, 4, {"d": np.zeros(6, np.uint8), "s": s},
                  {"n": 6}, instantiate=("copyk<u8>", "copyk<TexelT>"))
    assert got["d"].tolist() == s.tolist()


def test_a_kernel_named_through_a_typedef_at_run_time_gets_an_error_naming_the_typedef(qgcc, qgrun, tmp_path):
    """The program keeps instances by their types (`copyk__uchar`), not by the typedefs the
    host code spelled them with, so `qgrun --kernel 'copyk<u8>'` cannot be found: the error
    names the argument and the fix, and `copyk<unsigned char>` finds the instance."""
    (tmp_path / "k.cu").write_text(LAUNCHED_TYPES)
    r = qgcc(tmp_path / "k.cu", "--no-link", "--instantiate", "copyk<u8>", "-o", tmp_path / "k.qg")
    assert r.exit_code == 0, r.stderr
    run = ("--grid", 1, "--block", 4, "--arg", "d=zeros:4", "--arg", "s=zeros:4", "--arg", "n=4",
           "--engine", "ref", "--trace", "none")
    r = qgrun(tmp_path / "k.qg", "--kernel", "copyk<u8>", *run)
    assert r.exit_code == 2 and "'u8' is not a type" in r.stderr and "copyk__uchar" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert qgrun(tmp_path / "k.qg", "--kernel", "copyk<unsigned char>", *run).exit_code == 0


def test_an_instance_of_a_struct_type_is_named_by_the_struct_at_run_time(qgcc, qgrun, tmp_path):
    """`qgrun --kernel 'copyk<Texel>'` finds the instance `copyk__Texel` (alignedTypes launches
    `testKernel<RGBA8>`), and copies its records exactly."""
    (tmp_path / "k.cu").write_text(LAUNCHED_TYPES)
    r = qgcc(tmp_path / "k.cu", "--no-link", "--instantiate", "copyk<Texel>", "-o", tmp_path / "k.qg")
    assert r.exit_code == 0, r.stderr
    s = np.zeros(3, dtype=[("a", np.int32), ("b", np.float32)])
    s["a"], s["b"] = [5, -6, 7], [0.5, -1.25, 3.0]
    np.save(tmp_path / "s.npy", s)
    r = qgrun(tmp_path / "k.qg", "--kernel", "copyk<Texel>", "--grid", 1, "--block", 4,
              "--arg", "d=zeros:3", "--arg", f"s=@{tmp_path / 's.npy'}", "--arg", "n=3",
              "--out", f"d={tmp_path / 'd.npy'}", "--engine", "ref", "--trace", "none")
    assert r.exit_code == 0, r.stderr
    d = np.load(tmp_path / "d.npy")
    assert d["a"].tolist() == [5, -6, 7] and d["b"].tolist() == [0.5, -1.25, 3.0]


def test_a_published_header_with_latin1_comments_and_posix_includes_compiles(qgcc, qgrun, tmp_path):
    """rodinia heartwall's avilib.h (reached through the build's own -I): a Latin-1 name in a
    comment (gcc and nvcc read bytes) and POSIX host headers (sys/types.h, fcntl.h, errno.h,
    inttypes.h) that declare nothing a kernel uses.  A Latin-1 byte outside a comment is still an
    error at its line."""
    inc = tmp_path / "AVI"
    inc.mkdir()
    (inc / "lib.h").write_bytes(b"/* Copyright (C) Thomas \xd6streich */\n#include <sys/types.h>\n"
                                b"#include <sys/stat.h>\n#include <fcntl.h>\n#include <errno.h>\n"
                                b"#include <inttypes.h>\n#define fp float\n"
                                b"typedef struct { long fdes; double fps; } avi_t;\nint AVI_close(avi_t *AVI);\n")
    (tmp_path / "k.cu").write_text('#include "lib.h"\n__global__ void k(fp *a) { a[threadIdx.x] = (fp)threadIdx.x * 0.5f; }\n')
    r = qgcc(tmp_path / "k.cu", "-I", inc, "--no-link", "-o", tmp_path / "k.qg")
    assert r.exit_code == 0, r.stderr
    r = qgrun(tmp_path / "k.qg", "--grid", 1, "--block", 4, "--arg", "a=zeros:4",
              "--out", f"a={tmp_path / 'a.npy'}", "--engine", "ref", "--trace", "none")
    assert r.exit_code == 0, r.stderr
    assert np.load(tmp_path / "a.npy").tolist() == [0, 0.5, 1, 1.5]
    (inc / "lib.h").write_bytes(b"/* \xd6 */\n#define fp float\nint \xd6x;\n")
    r = qgcc(tmp_path / "k.cu", "-I", inc, "--no-link", "-o", tmp_path / "k2.qg")
    assert r.exit_code == 1 and "lib.h:3:" in r.stderr and "internal" not in r.stderr
    assert not (tmp_path / "k2.qg").exists()


def test_a_kernel_file_with_latin1_comments_compiles_as_its_headers_do(qgcc, qgrun, tmp_path):
    """Old published kernels were saved in Latin-1 (an author's name, a degree sign in a
    comment); gcc and nvcc read bytes, so the .cu file itself is read as its headers are.
    A Latin-1 byte outside a comment is still an error at its line and column."""
    (tmp_path / "k.cu").write_bytes(b"// Autor: J\xfcrgen, 20\xb0C\n"
                                    b"__global__ void k(float *a) { a[threadIdx.x] = threadIdx.x * 2.0f; }\n")
    r = qgcc(tmp_path / "k.cu", "--no-link", "-o", tmp_path / "k.qg")
    assert r.exit_code == 0, r.stderr
    r = qgrun(tmp_path / "k.qg", "--grid", 1, "--block", 4, "--arg", "a=zeros:4",
              "--out", f"a={tmp_path / 'a.npy'}", "--engine", "ref", "--trace", "none")
    assert r.exit_code == 0, r.stderr
    assert np.load(tmp_path / "a.npy").tolist() == [0, 2, 4, 6]
    (tmp_path / "bad.cu").write_bytes(b"// ok\n__global__ void k(float *a) { a[0] = 1.0f; \xb0 }\n")
    r = qgcc(tmp_path / "bad.cu", "--no-link", "-o", tmp_path / "bad.qg")
    assert r.exit_code == 1 and r.stderr.startswith(f"{tmp_path / 'bad.cu'}:2:") and "internal" not in r.stderr
    assert not (tmp_path / "bad.qg").exists()
