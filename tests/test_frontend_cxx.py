"""Real CUDA source (issue 12): the preprocessor and the C++ surface that kernels use.

Each construct is compiled, run on the reference emulator and compared with a
value computed here in Python from the C/C++ rules (or, for a rejected
construct, with the documented `file:line:col` diagnostic).  One launch goes
through the compiled network too, and must agree with the emulator step by step.
The kernels are written for these tests in the style of public CUDA code
(samples, textbooks); none is copied.
"""

from __future__ import annotations

import numpy as np
import pytest

from qgcc.frontend import compile_source
from qgcc.frontend.parser import parse
from qgcc.ref.emulator import run as emulate
from qgcc.runtime.launch import make_launch
from frontcheck import assert_error, error_of
from models import s32, u32


def run(src: str, arrays: dict, scalars: dict | None = None, block: int = 4, filename="t.cu",
        **kw) -> dict:
    prog = compile_source(src, filename, **kw)
    k = prog.kernel(None)
    launch = make_launch(prog, k, (1, 1, 1), (block, 1, 1), scalars or {},
                         {n: np.asarray(v) for n, v in arrays.items()})
    res = emulate(launch, max_steps=400_000)
    return {n: [x.item() for x in launch.read_buffer(res.memory, n)] for n in launch.buffers}


Z4 = np.zeros(4, np.int32)


# ------------------------------------------------------------------ the three bugs


def test_backslash_newline_is_deleted_anywhere_and_positions_stay_physical():
    # Splices between tokens, inside an identifier and a number, at the end of a // comment
    # (the next line is then comment too), and in a macro body.
    src = ("#define ADD(a, b) \\\n    ((a) + \\\n     (b))\n"
           "__global__ void k(int *out) {\n"
           "    unsigned i = threadIdx.x; // the comment goes on \\\n"
           "    i = 100;\n"
           "    int val\\\nue = 1\\\n0;\n"
           "    out[i] = ADD(value, \\\n        (int)i * 2);\n"
           "}\n")
    assert run(src, {"out": Z4})["out"] == [10 + 2 * i for i in range(4)]
    # A diagnostic after splices names the physical line and column of the token.
    src = "__global__ void k(int *a) {\n    int x = 1 + \\\n        y;\n}\n"
    e = assert_error(src, 3, 9, "unknown identifier 'y'")
    assert e.source_line == "        y;"
    src = "__global__ void k(int *a) {\n    int x = 1; in\\\nt z = 2; a[0] = q;\n}\n"
    assert_error(src, 3, 17, "unknown identifier 'q'")


def test_half_is_an_ordinary_name_unless_cuda_fp16_h_is_included():
    src = ("__global__ void k(int *out) {\n    int half = blockDim.x / 2;\n"
           "    int __half = 3;\n    out[threadIdx.x] = half * 10 + __half;\n}\n")
    assert run(src, {"out": np.zeros(6, np.int32)}, block=6)["out"] == [33] * 6
    assert_error("#include <cuda_fp16.h>\n" + src, 3, 9,
                 "'half' (half precision, cuda_fp16.h) is not supported; use float")
    assert_error("#include <cuda_fp16.h>\n__global__ void k(int *a) { __half2 h; }\n", 2, 29,
                 "'__half2' (half precision, cuda_fp16.h) is not supported; use float")
    # Without the header, using it as a type is an unknown type name, as in nvcc.
    assert_error("__global__ void k(int *a) {\n    __half h = 1;\n}\n", 2, 5,
                 "unknown type name '__half' (half precision needs cuda_fp16.h, which qgcc does "
                 "not support; use float)")
    assert_error("__device__ mytype f(int x);\n__global__ void k() {}\n", 1, 12, "unknown type name 'mytype'")


def test_extern_c_blocks_and_single_declarations():
    src = ('extern "C" {\n__device__ int sq(int v) { return v * v; }\n}\n'
           'extern "C" __device__ int inc(int v);\n'
           'extern "C" __global__ void k(int *out) {\n'
           '    out[threadIdx.x] = inc(sq((int)threadIdx.x));\n}\n'
           '__device__ int inc(int v) { return v + 1; }\n')
    assert run(src, {"out": Z4})["out"] == [i * i + 1 for i in range(4)]
    assert_error('extern "Fortran" __global__ void k() {}\n', 1, 8,
                 'unknown language linkage "Fortran"; write extern "C"')
    assert_error("__global__ void k() { extern int x; }\n", 1, 23, "'extern' is not supported (only 'extern __shared__' arrays and 'extern \"C\"')")


# ------------------------------------------------------------------ function-like macros


def test_function_like_macros_with_nesting_parentheses_and_commas():
    src = ("#define IMUL(a, b) ((a) * (b))\n"
           "#define SQ(x) IMUL(x, x)\n"
           "#define MAX3(a, b, c) max(max(a, b), c)\n"
           "#define PICK(p, q) q\n"
           "#define IDX() threadIdx.x\n"
           "__global__ void k(int *out, const int *in) {\n"
           "    int i = IDX();\n"
           "    int v = in[i];\n"
           "    out[i] = SQ(v + 1) + MAX3(v, 3, IMUL(2, v)) + PICK((1, 2), min(v, 2));\n"
           "}\n")
    xs = [-5, 0, 2, 7]
    want = [(v + 1) ** 2 + max(v, 3, 2 * v) + min(v, 2) for v in xs]
    assert run(src, {"out": Z4, "in": np.array(xs, np.int32)})["out"] == want


def test_a_macro_is_not_expanded_inside_its_own_expansion():
    # f(2) -> 2 + f(2): the inner f is the device function (C 6.10.3.4).
    src = ("__device__ int f(int v) { return 10 * v; }\n"
           "#define f(a) (a) + f(a)\n"
           "#define g f\n"
           "#define h(x) (x) * 100\n"
           "__global__ void k(int *out) {\n"
           "    int h = 3;  // a function-like macro name without '(' is an ordinary name\n"
           "    out[threadIdx.x] = g(2) + h;\n}\n")
    assert run(src, {"out": Z4})["out"] == [2 + 20 + 3] * 4


def test_stringizing_and_token_pasting():
    src = ("#define CAT(a, b) a ## b\n"
           "#define CAT3(a, b, c) a ## b ## c\n"
           "#define TID(d) CAT(thread, Idx).d\n"
           "#define EMPTYCAT(a, b) a ## b\n"
           "__global__ void k(int *out) {\n"
           "    int v1 = 40, CAT3(v, 2, 0) = 2;\n"
           "    out[TID(x)] = CAT(v, 1) + v20 + EMPTYCAT(, 5) + EMPTYCAT(6, ) + CAT(0x, 10);\n"
           "}\n")
    assert run(src, {"out": Z4})["out"] == [40 + 2 + 5 + 6 + 16] * 4
    tu = parse('#define STR(x) #x\n#define XSTR(x) STR(x)\n#define N 4\n'
               '__global__ void k() { STR(a  +  "b"); XSTR(N); }\n', "t.cu")
    texts = [st.expr.text for st in tu.items[0].body.items]
    assert texts == ['"a + \\"b\\""', '"4"']
    assert_error("#define BAD(a) a ## +\n__global__ void k(int *o) { o[0] = BAD(x); }\n", 2, 36,
                 "pasting 'x' and '+' does not give a valid token (in macro 'BAD')")
    assert_error("#define S(a) # b\n__global__ void k() {}\n", 1, 14,
                 "'#' is not followed by a macro parameter in macro 'S'")
    assert_error("#define P(a) ## a\n__global__ void k() {}\n", 1, 14,
                 "'##' cannot appear at either end of macro 'P'")


def test_variadic_macros():
    src = ("#define FIRST(x, ...) (x)\n#define SUM3(...) add3(__VA_ARGS__)\n"
           "__device__ int add3(int a, int b, int c) { return a + b + c; }\n"
           "__global__ void k(int *out) { out[threadIdx.x] = FIRST(7, 8, 9) + SUM3(1, 2, 3); }\n")
    assert run(src, {"out": Z4})["out"] == [13] * 4


def test_macro_argument_errors_point_at_the_use():
    assert_error("#define F(a, b) a\n__global__ void k(int *o) {\n  o[0] = F(1);\n}\n", 3, 10,
                 "macro 'F' takes 2 arguments, 1 given")
    assert_error("#define F(a) a\n__global__ void k(int *o) { o[0] = F(1, 2); }\n", 2, 36,
                 "macro 'F' takes 1 argument, 2 given")
    assert_error("#define F(a) a\n__global__ void k(int *o) { o[0] = F(1; }\n", 2, 36,
                 "unterminated argument list invoking macro 'F'")
    assert_error("#define F(a, a) a\n__global__ void k() {}\n", 1, 14,
                 "duplicate parameter 'a' in macro 'F'")


# ------------------------------------------------------------------ #if expressions

# (expression, value as C's preprocessor computes it in intmax_t / uintmax_t)
IF_CASES = [
    ("1 + 2 * 3 == 7", 1),
    ("(1 + 2) * 3 - 9", 0),
    ("-1 < 0", 1),
    ("-1 < 0u", 0),  # -1 converts to UINTMAX_MAX
    ("0x7fffffffffffffff + 1 < 0", 1),  # wraps in intmax_t
    ("1 << 40 == 1099511627776", 1),
    ("-7 / 2 == -3 && -7 % 2 == -1", 1),
    ("~0u == 18446744073709551615u", 1),
    ("UNDEFINED_NAME == 0", 1),
    ("defined(TWO) && defined TWO && !defined(NOPE)", 1),
    ("TWO * SQ(3) == 18", 1),
    ("TWO > 1 ? 10 : 20", 10),
    ("0 || (1 && 2)", 1),
    ("5 & 3 | 8 ^ 1", 1 | (8 ^ 1)),
    ("'A' == 65", 1),
    ("true", 1),
]


@pytest.mark.parametrize("expr, want", IF_CASES, ids=[c[0] for c in IF_CASES])
def test_if_evaluates_integer_constant_expressions(expr, want):
    src = (f"#define TWO 2\n#define SQ(x) ((x) * (x))\n"
           f"#if {expr}\n#define R 1\n#else\n#define R 0\n#endif\n"
           "__global__ void k(int *out) { out[threadIdx.x] = R != 0; }\n")
    assert run(src, {"out": Z4})["out"] == [int(want != 0)] * 4


def test_elif_chains_pick_the_first_true_branch():
    src = ("#define V 3\n#if V == 1\n#define R 10\n#elif V == 3\n#define R 30\n"
           "#elif V == 3\n#define R 31\n#else\n#define R 99\n#endif\n"
           "#undef V\n#ifdef V\n#error V must be undefined\n#endif\n"
           "__global__ void k(int *out) { out[threadIdx.x] = R; }\n")
    assert run(src, {"out": Z4})["out"] == [30] * 4


def test_if_errors_are_named():
    k = "__global__ void k() {}\n"
    assert_error("#if 1 / (2 - 2)\n#endif\n" + k, 1, 7, "division by zero in '#if' expression")
    assert_error("#if (1 + 2\n#endif\n" + k, 1, 11, "missing ')' in '#if' expression")
    assert_error("#if 1 +\n#endif\n" + k, 1, 8, "expected a value at the end of the '#if' "
                                                  "expression")
    assert_error("#if 1.5\n#endif\n" + k, 1, 5, "floating constant '1.5' in '#if' expression")
    assert_error("#if\n#endif\n" + k, 1, 1, "'#if' with no expression")
    assert_error("#if 2 3\n#endif\n" + k, 1, 7, "unexpected '3' in '#if' expression")


# ------------------------------------------------------------------ #include


def test_local_includes_resolve_relative_to_the_including_file(tmp_path):
    (tmp_path / "lib").mkdir()
    (tmp_path / "inc").mkdir()
    (tmp_path / "lib" / "util.h").write_text(
        "#ifndef UTIL_H\n#define UTIL_H\n#include \"scale.h\"\n"
        "__device__ int scaled(int v) { return SCALE(v); }\n#endif\n")
    (tmp_path / "lib" / "scale.h").write_text("#pragma once\n#define SCALE(v) ((v) * FACTOR)\n")
    (tmp_path / "inc" / "factor.h").write_text("#define FACTOR 3\n")
    main = tmp_path / "k.cu"
    src = ('#include <cuda_runtime.h>\n#include <stdio.h>\n#include "device_launch_parameters.h"\n'
           '#include <factor.h>\n#include "lib/util.h"\n#include "lib/util.h"\n'
           '#include "lib/scale.h"\n'
           "__global__ void k(int *out) {\n    out[threadIdx.x] = scaled(threadIdx.x);\n}\n")
    got = run(src, {"out": Z4}, filename=str(main), include_dirs=[str(tmp_path / "inc")])
    assert got["out"] == [3 * i for i in range(4)]
    # A diagnostic after the includes is at the main file's own line.
    bad = src.replace("scaled(threadIdx.x)", "scaled(nope)")
    e = assert_error(bad, 9, 31, "unknown identifier 'nope'", filename=str(main),
                     include_dirs=[str(tmp_path / "inc")])
    assert e.filename == str(main)


def test_diagnostics_inside_an_included_file_name_that_file(tmp_path):
    (tmp_path / "bad.h").write_text("#define ONE 1\n__device__ int f(int v) {\n"
                                    "    return v +* ;\n}\n")
    main = tmp_path / "k.cu"
    e = error_of('#include "bad.h"\n__global__ void k(int *o) { o[0] = f(1); }\n', str(main))
    assert (e.filename, e.line, e.col) == (str(tmp_path / "bad.h"), 3, 17), e.render()
    assert e.message == "expected an expression before ';'"
    assert e.source_line == "    return v +* ;"
    (tmp_path / "cond.h").write_text("#if 1\n")
    e = error_of('#include "cond.h"\n__global__ void k() {}\n', str(main))
    assert (e.filename, e.line, e.col, e.message) == (
        str(tmp_path / "cond.h"), 1, 1, "unterminated conditional directive (missing '#endif')")


def test_limits_h_and_float_h_define_this_machines_limits():
    src = ("#include <climits>\n#include <float.h>\n"
           "__global__ void k(int *out, float *f) {\n"
           "    int i = threadIdx.x;\n"
           "    int m = i == 0 ? INT_MAX : i == 1 ? INT_MIN : i == 2 ? CHAR_MIN : (int)UINT_MAX;\n"
           "    out[i] = m;\n"
           "    f[i] = i == 0 ? FLT_MAX : i == 1 ? FLT_MIN : i == 2 ? FLT_EPSILON : -FLT_MAX;\n"
           "}\n")
    got = run(src, {"out": Z4, "f": np.zeros(4, np.float32)})
    assert got["out"] == [2 ** 31 - 1, -2 ** 31, -128, -1]
    fi = np.finfo(np.float32)  # the exact float32 values C's float.h names
    assert got["f"] == [float(fi.max), float(fi.tiny), float(fi.eps), -float(fi.max)]
    assert_error("__global__ void k(int *a) { a[0] = INT_MAX; }\n", 1, 36,
                 "unknown identifier 'INT_MAX'")


def test_unknown_and_unsupported_headers_are_named():
    k = "__global__ void k() {}\n"
    assert_error("#include <helper_cuda.h>\n" + k, 1, 11,
                 "'helper_cuda.h' is host-side helper code of the CUDA samples and is not built in "
                 "(qgcc compiles device code only); remove the #include, or give its directory "
                 "with -I")
    assert_error('#include "mine.h"\n' + k, 1, 11,
                 "cannot find 'mine.h' (looked in: .); it is not one of qgcc's built-in headers "
                 "(docs/subset.md lists them)")
    assert_error("#include MINE\n" + k, 1, 10,
                 "'#include' expects \"FILE\" or <FILE> (computed includes are not supported)")


def test_command_line_defines():
    src = ("#ifndef N\n#error N is needed\n#endif\n"
           "__global__ void k(int *out) { out[threadIdx.x] = N * 10 + DEBUG + SQ(2); }\n")
    got = run(src, {"out": Z4}, defines=["N=7", "DEBUG", "SQ(x)=((x)*(x))"])
    assert got["out"] == [70 + 1 + 4] * 4
    assert_error(src, 2, 1, "#error N is needed")
    e = error_of("#define N 2\n" + src, defines=["N=7"])
    assert (e.line, e.col, e.message) == (
        1, 9, "macro 'N' redefined with a different value (first defined on the command line)")


# ------------------------------------------------------------------ C++ surface


def test_typedef_and_using_aliases_of_scalar_and_pointer_types():
    src = ("typedef unsigned int uint;\n"
           "typedef const int *cptr, cint;\n"
           "using real = float;\n"
           "using iptr = int *;\n"
           "__device__ uint twice(uint v) { return v * 2u; }\n"
           "__global__ void k(iptr out, cptr in) {\n"
           "    typedef char small;\n"
           "    uint i = threadIdx.x;\n"
           "    const iptr o = out;\n"
           "    cint c = 5;\n"
           "    small s = (small)(in[i] + 120);\n"
           "    real r = (real)in[i] / 2.0f;\n"
           "    o[i] = (int)twice(i) + c + s * 1000 + (int)(r * 4.0f);\n"
           "}\n")
    xs = [0, 5, 10, -300]
    want = [2 * i + 5 + (((x + 120) + 128) % 256 - 128) * 1000 + int(x / 2 * 4)
            for i, x in enumerate(xs)]
    assert run(src, {"out": Z4, "in": np.array(xs, np.int32)})["out"] == want


def test_typedef_rules():
    k = "__global__ void k(int *a) {\n%s\n}\n"
    assert_error("typedef int T;\n" + k % "T x; unsigned T y;", 3, 15,
                 "invalid combination of type specifiers 'unsigned T'")
    assert_error(k % "typedef int row[4];", 2, 13, "array typedefs are not supported ('row')")
    assert_error(k % "typedef int (*fp)(int);", 2, 15,
                 "function types in typedefs are not supported ('fp')")
    assert_error("typedef int T;\ntypedef unsigned U;\n" + k % "typedef float T;", 4, 15,
                 "conflicting typedef 'T' (was 'int')")
    assert_error("typedef int *P;\n" + k % "P *pp = 0; float *f = *pp;", 3, 23,
                 "cannot convert 'int *' to 'float *' in initialisation")
    assert_error(k % "using namespace thrust;", 2, 7, "namespaces are not supported")
    assert_error(k % "using std::min;", 2, 1,
                 "'using' declarations are not supported; only aliases ('using NAME = TYPE;')")
    # typedef int T; T x; is fine twice (same type)
    run("typedef int T;\ntypedef int T;\n" + k % "T x = 1; a[threadIdx.x] = x;", {"a": Z4})


def test_host_device_functions_and_ignored_qualifiers():
    src = ("__host__ __device__ __forceinline__ int add(int a, int b) { return a + b; }\n"
           "__device__ __noinline__ int neg(int a) { return -a; }\n"
           "static __device__ inline int one() { return 1; }\n"
           "__global__ void k(int * __restrict__ out, const int * __restrict__ in) {\n"
           "    out[threadIdx.x] = add(in[threadIdx.x], neg(one()));\n}\n")
    assert run(src, {"out": Z4, "in": np.array([1, 2, 3, 4], np.int32)})["out"] == [0, 1, 2, 3]
    assert_error("__host__ __global__ void k() {}\n", 1, 1, "a kernel cannot be '__host__'")
    src = ("#define THREADS 4\n__global__ void __launch_bounds__(THREADS, (1)) k(int *out) {\n"
           "    out[threadIdx.x] = THREADS;\n}\n")
    assert run(src, {"out": Z4})["out"] == [4] * 4
    assert_error("__global__ void __launch_bounds__(4 k(int *a) {}\n", 1, 17,
                 "unterminated '__launch_bounds__('")


def test_cxx_casts_follow_c_semantics():
    src = ("__global__ void k(int *out, float *f, int *bits) {\n"
           "    int i = threadIdx.x;\n"
           "    float x = f[i];\n"
           "    out[i] = static_cast<int>(x) + static_cast<unsigned char>(i + 254) * 100;\n"
           "    const int *cb = bits;\n"
           "    unsigned *ub = reinterpret_cast<unsigned *>(const_cast<int *>(cb));\n"
           "    float *fb = reinterpret_cast<float *>(bits);\n"
           "    if (i == 0) fb[1] = 1.0f;\n"
           "    if (i == 0) ub[2] = static_cast<unsigned>(-1);\n"
           "    if (i == 0) bits[3] = (int)*(float *)(f + 3);\n"
           "    if (i == 0) static_cast<void>(x);\n"
           "}\n")
    fs = np.array([1.75, -2.5, 3e9, -0.5], np.float32)
    got = run(src, {"out": Z4, "f": fs, "bits": Z4})
    want = [int(np.trunc(v)) if abs(v) < 2 ** 31 else 2 ** 31 - 1 for v in fs]
    want = [w + ((i + 254) % 256) * 100 for i, w in enumerate(want)]
    assert got["out"] == want
    assert got["bits"] == [0, s32(int(np.float32(1.0).view(np.uint32))), -1, 0]
    k = "__global__ void k(float *f, const int *c, char *ch) {\n%s\n}\n"
    assert_error(k % "int *p = static_cast<int *>(f);", 2, 10,
                 "static_cast from 'float *' to 'int *' is not allowed; use reinterpret_cast")
    assert_error(k % "int *p = static_cast<int *>(c);", 2, 10,
                 "static_cast cannot cast away const ('const int *' to 'int *'); use const_cast")
    assert_error(k % "int p = reinterpret_cast<int>(f[0]);", 2, 9,
                 "reinterpret_cast from 'float' to 'int' is not allowed; use static_cast to convert "
                 "the value, or __float_as_int / __int_as_float for its bits")
    assert_error(k % "float *p = const_cast<float *>(c);", 2, 12,
                 "const_cast can only add or remove const ('const int *' to 'float *'); use "
                 "static_cast")
    assert_error(k % "int *p = reinterpret_cast<int *>(ch);", 2, 10,
                 "casts between pointer types are not supported ('char *' to 'int *'): memory is "
                 "addressed in 32-bit cells, so only pointers to int, unsigned, float, 64-bit "
                 "scalars and structs of 32-bit members (float4, int2, ...) convert to each other")


def test_brace_initialisation_of_scalars():
    src = ("const int W{3};\n"
           "__global__ void k(int *out) {\n"
           "    int i{(int)threadIdx.x};\n"
           "    unsigned u{threadIdx.x};\n"
           "    int z{};\n"
           "    int j = {4};\n"
           "    const int N{2};\n"
           "    __shared__ int s[N * W];\n"
           "    float f{0.5f}, g = {1.5f};\n"
           "    s[i] = i;\n"
           "    __syncthreads();\n"
           "    out[i] = i + (int)u + z + j * 10 + s[(i + 1) % 4] * 100 + (int)((f + g) * 1000.0f);\n"
           "}\n")
    assert run(src, {"out": Z4})["out"] == [2 * i + 40 + ((i + 1) % 4) * 100 + 2000 for i in range(4)]
    k = "__global__ void k(int *a) {\n%s\n}\n"
    assert_error(k % "int x{1, 2};", 2, 10, "too many initialisers for 'x'")
    assert_error(k % "int x{{1}};", 2, 7, "braces around the initialiser of scalar 'x'")
    assert_error(k % "__shared__ int s[4] = {1};", 2, 23, "initialiser lists are not supported")


def test_fixed_width_integer_names_of_stdint_h():
    src = ("#include <stdint.h>\n"
           "__global__ void k(uint8_t *bytes, int32_t *out, uint32_t n) {\n"
           "    int i = threadIdx.x;\n"
           "    int8_t c = (int8_t)(bytes[i] + 100);\n"
           "    ptrdiff_t d = &out[3] - &out[i];\n"
           "    out[i] = c * 1000 + (int32_t)(n - 1u > 5u) * 100 + (int)d;\n"
           "}\n")
    bs = [0, 27, 28, 200]
    got = run(src, {"bytes": np.array(bs, np.uint8), "out": Z4}, {"n": 0})
    assert got["out"] == [(((b + 100) + 128) % 256 - 128) * 1000 + 100 + (3 - i)
                          for i, b in enumerate(bs)]


def test_size_t_is_a_32_bit_unsigned():
    src = ("__global__ void k(unsigned *out, size_t n) {\n"
           "    size_t i = blockIdx.x * blockDim.x + threadIdx.x;\n"
           "    size_t z = 0;\n"
           "    out[i] = (z - 1) / 2 + (i < n) + static_cast<size_t>(-2) % 7u;\n"
           "}\n")
    got = run(src, {"out": np.zeros(4, np.uint32)}, {"n": 2})
    want = [u32((0xFFFFFFFF // 2) + (i < 2) + 0xFFFFFFFE % 7) for i in range(4)]
    assert got["out"] == want


# ------------------------------------------------------------------ through the network

NET_SRC = """#include <cuda_runtime.h>
#define IMUL(a, b) ((a) * (b))
#define TID(d) threadIdx.d
typedef unsigned int uint;
using iptr = int *;
extern "C" __global__ void k(iptr out, const int *in) {
    uint i{TID(x)};
    int v = in[i];
    int half = \\
        static_cast<int>(i) / 2;
    out[i] = IMUL(v, v) + half;
}
"""


def test_the_network_agrees_with_the_emulator_and_the_model():
    from lockstep import both  # step-for-step comparison of the emulator and the network

    xs = np.array([3, -4, 7, 100], np.int32)
    outs, _ = both("cxx_surface", (1, 1, 1), (4, 1, 1), {},
                   {"out": np.zeros(4, np.int32), "in": xs}, source=NET_SRC, max_steps=5000)
    assert [int(v) for v in outs["out"]] == [int(x) * int(x) + i // 2 for i, x in enumerate(xs)]


# ------------------------------------------------------------------ not yet: each one named

NOT_YET = [
    ("union P { int x; };", 1, "'union' types are not supported"),
    ("__device__ typename T f();", 12, "'typename' is supported only in a template parameter list"),
    ("__device__ long double f();", 17, "'long double' is not supported; use 'double'"),
    ("__device__ void f(int &&r) {}", 23, "rvalue references ('int &&') are not supported"),
    ("namespace fs = filesystem;", 1, "namespaces are not supported"),
    ("__device__ void f() { cg::sync(b); }", 25,
     "'::' is not supported (C++ namespaces and classes are not)"),
]


@pytest.mark.parametrize("line1, col, message", NOT_YET, ids=[c[2][:40] for c in NOT_YET])
def test_constructs_not_yet_supported_are_named(line1, col, message):
    assert_error(line1 + "\n__global__ void k(int *a) {}\n", 1, col, message)


def test_qgcc_command_line_takes_d_and_i(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from qgcc.cli.qgcc_cmd import main as qgcc_main
    from qgcc.qgfile import load

    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "scale.h").write_text("#define SCALE(v) ((v) * FACTOR)\n")
    (tmp_path / "k.cu").write_text('#include <scale.h>\n__global__ void k(int *out) '
                                   '{ out[threadIdx.x] = SCALE(threadIdx.x) + BIAS; }\n')
    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(qgcc_main, ["-D", "FACTOR=5", "-DBIAS", "-I", "inc", "k.cu",
                                       "--no-link", "-o", "k.qg"], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    prog = load("k.qg").program
    launch = make_launch(prog, prog.kernels[0], (1, 1, 1), (4, 1, 1), {}, {"out": Z4})
    res = emulate(launch, max_steps=10_000)
    assert [int(v) for v in launch.read_buffer(res.memory, "out")] == [5 * i + 1 for i in range(4)]
    r = CliRunner().invoke(qgcc_main, ["k.cu", "--no-link", "-o", "k.qg"], catch_exceptions=False)
    assert r.exit_code != 0
    assert "k.cu:1:11: error: cannot find 'scale.h' (looked in: no -I directories)" in r.output
    r = CliRunner().invoke(qgcc_main, ["-I", "nodir", "k.cu"], catch_exceptions=False)
    assert r.exit_code != 0 and "-I nodir: no such directory" in r.output


def test_program_lines_of_included_code_name_their_file(tmp_path):
    from qgcc.asm import disassemble

    (tmp_path / "util.h").write_text("__device__ int twice(int v) {\n    return v + v;\n}\n")
    src = ('#include "util.h"\n__global__ void k(int *out) {\n'
           '    out[threadIdx.x] = twice(threadIdx.x);\n}\n')
    prog = compile_source(src, str(tmp_path / "k.cu"))
    assert prog.source_lines[:5] == src.split("\n")
    lines = {prog.source_line(ins.line) for ins in prog.code if ins.line}
    assert "out[threadIdx.x] = twice(threadIdx.x);" in lines
    assert f"{tmp_path / 'util.h'}:2: return v + v;" in lines
    assert f"// {tmp_path / 'util.h'}:2: return v + v;" in disassemble(prog)
