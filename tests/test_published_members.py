"""Class-scope names in published CUDA (issue 27): enums declared inside a struct or class body
and `static const` integer members (rodinia dwt2d's TransformBuffer sizes its shared array with
them).  Each kernel is compiled with `qgcc --no-link -o k.qg`, run by `qgrun --engine ref`, and
compared with g++ running the same text."""

from __future__ import annotations

import numpy as np

from frontcheck import assert_error
from gxx import gxx_model, need_gxx
from test_published_constructs import cli_run

MEMBER_ENUMS = r"""
template <typename T, int W, int PAD>
class Window {
public:
    enum { STRIDE = PAD + W / 2 };           // depends on the template's parameters
private:
    enum {
        BANKS = 16,
        SIZE = STRIDE * 2,
        GAP = BANKS - (SIZE + BANKS / 2) % BANKS,
        ODD = SIZE + GAP,
    };
    T data[2 * SIZE + GAP];                  // sized by enumerators
public:
    enum Kind { EVEN, ODDK = 5, NEXT };      // a named member enum: its name is its type
    static const int SCALE = STRIDE * 3;
    Kind kind;
    __device__ int offset(int col) const { return col / 2 + (col & 1) * ODD; }
    __device__ int cells() const { return 2 * SIZE + GAP + SCALE * 1000; }
    __device__ void set(int i, T v) { data[i] = v; }
    __device__ T get(int i) const { return data[i]; }
    __device__ int pickKind(int i) { kind = i & 1 ? NEXT : EVEN; Kind k = kind; return k + ODDK; }
};
struct Plain { enum { N = 3, M }; int a[N * M]; static constexpr unsigned MASK = 0xF0u;
               __device__ unsigned pick(unsigned x) const { return (x & MASK) + N; } };
__global__ void windows(int *o, unsigned *u) {
    int i = threadIdx.x;
    Window<int, 8, 2> w;
    Window<float, 4, 1> v;
    w.set(i, i * 7);
    v.set(i, 0.5f * i);
    Plain p;
    p.a[i % 4] = i;
    o[i * 5 + 0] = w.offset(i);
    o[i * 5 + 1] = w.cells();
    o[i * 5 + 2] = v.offset(i + 3) + v.cells();
    o[i * 5 + 3] = w.get(i) + (int)v.get(i) + (int)sizeof(Plain) / 4;
    o[i * 5 + 4] = (int)sizeof(Window<int, 8, 2>) / 4 + w.pickKind(i) * 100;
    u[i] = p.pick(i * 37u);
}
"""


@need_gxx
def test_member_enums_and_static_const_members_are_class_constants_as_gxx_has_them(qgcc, qgrun, tmp_path):
    """Anonymous and named enums in a class template's body (values from its parameters and from
    earlier enumerators), a named member enum as a member's type, `static const` and
    `static constexpr` integer members: usable in member array sizes and member functions; they
    take no room in the object (sizeof)."""
    o, u = np.zeros(4 * 5, np.int32), np.zeros(4, np.uint32)
    got = cli_run(qgcc, qgrun, tmp_path, MEMBER_ENUMS, "windows", 1, 4, {"o": o, "u": u})
    want = gxx_model(tmp_path, MEMBER_ENUMS, "windows", 1, 4, [("o", o), ("u", u)])
    assert got["o"].tolist() == want["o"].tolist()
    assert got["u"].tolist() == want["u"].tolist()


def test_static_members_other_than_integer_constants_are_named_errors():
    assert_error("struct S {\n  static int n;\n};\n__global__ void k(int *o) {}\n", 2, 14,
                 "static member 'n' is not supported; only integer constants ('static const int N = 4;') "
                 "may be static members")
    assert_error("struct S {\n  static const float f = 1.0f;\n};\n__global__ void k(int *o) {}\n", 2, 22,
                 "static member 'f' is not supported; only integer constants ('static const int N = 4;') "
                 "may be static members")


MEMBER_TYPES = r"""
struct P3 { float x, y, z; };
struct P4 { float x, y, z, w; };
template <typename T> struct vec3 { typedef float Type; };   // a default, specialised below
template <> struct vec3<float> { typedef P3 Type; };
template <> struct vec3<int> { typedef int *Type; };
template <typename T> struct vec4 { typedef float Type; };
template <> struct vec4<float> { typedef P4 Type; };
template <typename T>
__device__ typename vec3<T>::Type lift(typename vec4<T>::Type a, typename vec4<T>::Type b) {
    typename vec3<T>::Type r;
    r.x = b.x - a.x; r.y = b.y - a.y; r.z = (b.z - a.z) * a.w;
    return r;
}
template <typename T>
__global__ void step(typename vec4<T>::Type *pos, T *out, typename vec3<int>::Type cnt) {
    int i = threadIdx.x;
    typename vec4<T>::Type p = pos[i];
    typename vec3<T>::Type d = lift<T>(p, pos[(i + 1) % 4]);
    out[i] = d.x + d.y * 2.0f + d.z;
    typename vec3<short>::Type f = 1.5f;                      // the primary template's float
    cnt[i] = (int)(f * 2.0f) + (int)sizeof(typename vec3<T>::Type);
}
"""


@need_gxx
def test_member_typedefs_of_class_templates_name_types_through_typename_as_gxx_does(qgcc, qgrun, tmp_path):
    """`typedef P3 Type;` in a class template and its explicit specialisations, named as
    `typename vec3<T>::Type` in return, parameter, local and sizeof types of templates (nbody's
    bodysystem.h), the specialisation chosen per argument and the primary template otherwise."""
    pos = np.zeros(4, np.dtype([(c, np.float32) for c in "xyzw"]))
    for k, c in enumerate("xyzw"):
        pos[c] = np.array([1.5, -2.0, 0.25, 3.0], np.float32) * (k + 1) + k
    out, cnt = np.zeros(4, np.float32), np.zeros(4, np.int32)
    got = cli_run(qgcc, qgrun, tmp_path, MEMBER_TYPES, "step<float>", 1, 4, {"pos": pos, "out": out, "cnt": cnt},
                  instantiate=["step<float>"])
    want = gxx_model(tmp_path, MEMBER_TYPES, "step<float>", 1, 4,
                     [("pos", pos, "P4"), ("out", out), ("cnt", cnt)])
    assert got["out"].tobytes() == want["out"].tobytes()
    assert got["cnt"].tolist() == want["cnt"].tolist()


def test_a_missing_member_type_is_a_named_error():
    assert_error("template <typename T> struct V { typedef float Type; };\n"
                 "template <typename T> __global__ void k(typename V<T>::Kind *o) {}\n", 2, 50,
                 "'V<int>' has no member type 'Kind'", instantiate=("k<int>",))
