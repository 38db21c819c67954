"""Every diagnostic of the CUDA front end: message, line and column.

Each case is a small source and the exact `file:line:col: error: message` the
compiler must report.  Columns are 1-based and point at the offending token
(the keyword, the operator, the name, the unexpected token).  The last tests
check that no input whatsoever makes a Python exception other than
CompileError escape `compile_source`.
"""

from __future__ import annotations

import random

import pytest

from qgcc.spec import SPEC
from qgcc.diagnostics import CompileError
from qgcc.frontend import compile_source

K = "__global__ void k(int *a, const int *c, unsigned *u, char *ch, int n) {\n%s\n}\n"


def error_of(src: str) -> CompileError:
    with pytest.raises(CompileError) as info:
        compile_source(src, "t.cu")
    return info.value


def assert_error(src: str, line: int, col: int, message: str) -> None:
    e = error_of(src)
    assert (e.line, e.col, e.message) == (line, col, message), e.render()
    assert e.filename == "t.cu"
    assert e.source_line == src.split("\n")[line - 1]


# (source fragment placed as line 2 of kernel K, column, message)
IN_KERNEL = [
    # --- unsupported types, each named
    ("long double d;", 6, "'long double' is not supported; use 'double'"),
    ("double x = 1.0 % 2.0f;", 16, "invalid operands to binary '%' ('double' and 'float')"),
    ("float x = 1.0f % 2.0f;", 16, "invalid operands to binary '%' ('float' and 'float')"),
    ("float x = 1.0f; x <<= 1;", 19, "invalid operands to '<<=' ('float' and 'int')"),
    ("float x = ~1.0f;", 11, "invalid operand to unary '~' ('float')"),
    ("float x = 1.5L;", 11, "'long double' constant '1.5L' is not supported; write '1.5f'"),
    ("float x = fmod(1.0, 2.0f);", 11, "'fmod' on double is not supported (qgcc's double functions are sqrt, fabs, fmin, fmax, floor, ceil, trunc, round, exp, log, log10, pow, sin, cos, tan, rsqrt, frexp, ldexp and scalbn); use 'fmodf' on float"),
    ("float x = atan(1.0);", 11, "'atan' on double is not supported (qgcc's double functions are sqrt, fabs, fmin, fmax, floor, ceil, trunc, round, exp, log, log10, pow, sin, cos, tan, rsqrt, frexp, ldexp and scalbn); use 'atanf' on float"),
    ("int x = abs(1.0);", 9, "'abs' needs an integer argument ('double'); use fabs"),
    ("atomicMin(ch, 1.0f);", 11, "first argument of 'atomicMin' must be an 'int *' or 'unsigned int *' "
                                 "pointer (got 'char *')"),
    ("long long long x;", 11, "'long long long' is too long"),
    ("long char x;", 6, "invalid combination of type specifiers 'long char'"),
    ("short char s;", 7, "invalid combination of type specifiers 'short char'"),
    ("int x = ~1.5;", 9, "invalid operand to unary '~' ('double')"),
    ("int x = 10LLL;", 9, "invalid suffix 'LLL' on integer literal"),
    ("auto x = 1;", 1, "'auto' is not supported; write the type"),
    ("int int x;", 5, "duplicate 'int'"),
    ("signed unsigned x;", 8, "invalid combination of type specifiers 'signed unsigned'"),
    ("const x = 1;", 1, "missing type specifier in declaration"),
    # --- unsupported constructs, each named
    ("int *b[4];", 6, "arrays of pointers are not supported ('b')"),
    ("int **pp = 0; int x = **pp + *(pp - a);", 35, "invalid operands to binary '-' ('int **' and 'int *')"),
    ("extern __shared__ int s[8];", 23, "extern __shared__ 's' must be a 1-D array of unknown size "
                                        "('s[]'); its size is set at launch (qgrun --shared BYTES)"),
    ('printf("%d", 1.5f);', 14, "printf: '%d' needs an integer (write %f for a float); the argument is 'float'"),
    ("int *m = (int *)malloc(4);", 17, "dynamic memory allocation ('malloc') is not supported"),
    ("int *m = new int;", 10, "dynamic memory allocation ('new') is not supported"),
    ("goto out;", 1, "'goto' is not supported"),
    ("int (*fp)(int);", 7, "function pointers are not supported"),
    ("int x = sizeof(char);", 9, "sizeof('char') is not available: 'char' takes a 4-byte cell per element "
                                 "here, not CUDA's size; sizeof works on int, unsigned, float and structs "
                                 "and arrays made of them"),
    ("int x = sizeof a;", 9, "sizeof('int *') is not available: a pointer is 8 bytes in CUDA and one 4-byte "
                             "cell here; sizeof works on int, unsigned, float and structs and arrays made "
                             "of them"),
    ("static int sx = 0;", 1, "static local variables are not supported"),
    ("int y = (int)a;", 9, "cast from pointer to integer is not supported ('int *' to 'int')"),
    ("char *q = (char *)a;", 11, "casts between pointer types are not supported "
                                 "('int *' to 'char *'): memory is addressed in 32-bit cells, so "
                                 "only pointers to int, unsigned, float, 64-bit scalars and structs of "
                                 "32-bit members (float4, int2, ...) convert to each other"),
    ("int *q = (int *)n;", 10, "cast from integer to pointer is not supported ('int' to 'int *')"),
    ("__syncthreads_count(1);", 1, "'__syncthreads_count' is not supported"),
    ("atomicInc(a, 3u);", 11, "first argument of 'atomicInc' must be an 'unsigned int *' pointer (got 'int *')"),
    ("int x = __shfl_down_sync(0xffffffff, n, 1, 3);", 44,
     "the width of '__shfl_down_sync' must be a power of two (1, 2 or 4; larger widths mean the whole warp)"),
    ("int x = __ballot_sync(0xffffffff);", 9, "'__ballot_sync' expects 2 arguments, got 1"),
    ("int x = __shfl_down(n, 1);", 9, "'__shfl_down' was removed in CUDA 9; use __shfl_down_sync(0xffffffff, ...)"),
    ("int x = __reduce_add_sync(0xffffffff, 1.5f);", 39,
     "argument 2 of '__reduce_add_sync' must be an integer (got 'float')"),
    ("int x = __match_all_sync(0xf, n, c);", 34, "argument 3 of '__match_all_sync' must be an 'int *' (got 'const int *')"),
    ("int x = 'ab';", 9, "multi-character character constants are not supported"),
    ('int x = "s"[0];', 9, "string literals are not supported"),
    ("int x = a->y;", 12, "'->' needs a pointer to a struct ('int *' is not one)"),
    ("int x = n.y;", 11, "member '.y' of a value of type 'int', which is not a struct"),
    # --- names and types
    ("x = 1;", 1, "unknown identifier 'x'"),
    ("foo(1);", 1, "unknown function 'foo'"),
    ("int x = NULL;", 9, "unknown identifier 'NULL'; use 0"),
    ("n[0] = 1;", 1, "subscripted value is not an array or pointer (type 'int')"),
    ("a[c] = 1;", 1, "array subscript is not an integer ('const int *')"),
    ("a = 3;", 5, "cannot convert 'int' to 'int *' in assignment"),
    ("int x = a;", 9, "cannot convert 'int *' to 'int' in initialisation"),
    ("unsigned *q = a;", 15, "cannot convert 'int *' to 'unsigned int *' in initialisation"),
    ("int *q = c;", 10, "cannot convert 'const int *' to 'int *' in initialisation "
                        "(it would discard 'const')"),
    ("int x = a + a;", 11, "invalid operands to binary '+' ('int *' and 'int *')"),
    ("int x = a * 2;", 11, "invalid operands to binary '*' ('int *' and 'int')"),
    ("int x = a < u;", 11, "invalid operands to binary '<' ('int *' and 'unsigned int *')"),
    ("int x = -a;", 9, "invalid operand to unary '-' ('int *')"),
    ("int x = *n;", 9, "indirection requires a pointer operand ('int' is not one)"),
    ("a *= 2;", 3, "invalid operands to '*=' ('int *' and 'int')"),
    ("int x = n ? a : 1;", 11, "incompatible operand types in '?:' ('int *' and 'int')"),
    ("int x = (void)1;", 9, "void value used in an expression"),
    ("void v;", 6, "variable 'v' has type void"),
    ("void *vp = a; int x = *vp;", 23, "'void *' points to no type; cast it to a typed pointer first "
                                       "('(float *)p')"),
    ("void *vp = a; vp += 1;", 18, "'void *' points to no type; cast it to a typed pointer first ('(float *)p')"),
    ("void *vp = a; int *q = vp;", 24, "cannot convert 'void *' to 'int *' in initialisation"),
    # --- assignment targets
    ("c[0] = 1;", 1, "cannot assign to read-only memory (through 'const int *')"),
    ("*c = 1;", 1, "cannot assign to read-only memory (through 'const int *')"),
    ("const int z = n; z = 2;", 18, "cannot assign to const variable 'z'"),
    ("const int z = 1; z++;", 18, "cannot increment const variable 'z'"),
    ("int * const p = a; p = a;", 20, "cannot assign to const variable 'p'"),
    ("threadIdx.x = 1;", 11, "cannot assign to 'threadIdx.x' (it is read-only)"),
    ("(n + 1) = 2;", 9, "expression is not assignable"),
    ("n++ = 2;", 5, "expression is not assignable"),
    ("__shared__ int s[4]; s = a;", 22, "cannot assign to an array"),
    ("bool b = true; b++;", 17, "cannot increment a bool"),
    ("bool b = true; --b;", 16, "cannot decrement a bool"),
    ("int *p = &n;", 10, "cannot take the address of local variable 'n' (locals live in registers)"),
    ("__shared__ int s[4]; int *q = &s;", 31, "taking the address of an array is not supported; "
                                              "use the array name or '&a[0]'"),
    ("__shared__ int s[4][4]; int *q = s;", 34, "2-D array cannot be used as a value "
                                                "(type 'int[4][4]'); index it"),
    # --- built-ins
    ("int t = threadIdx;", 9, "'threadIdx' must be used with .x, .y or .z"),
    ("int t = blockDim.w;", 18, "'blockDim' has no member 'w' (use .x, .y or .z)"),
    ("__syncthreads(1);", 1, "'__syncthreads' expects 0 arguments, got 1"),
    ("atomicAdd(c, 1);", 11, "first argument of 'atomicAdd' points to const ('const int *')"),
    ("atomicAdd(n, 1);", 11, "first argument of 'atomicAdd' must be an 'int *', 'unsigned int *' or "
                             "'float *' pointer (got 'int')"),
    ("atomicMax(ch, 1);", 11, "first argument of 'atomicMax' must be an 'int *' or "
                              "'unsigned int *' pointer (got 'char *')"),
    ("atomicCAS(a, 1);", 1, "'atomicCAS' expects 3 arguments, got 2"),
    ("int m = min(a, 1);", 9, "'min' needs integer arguments ('int *' and 'int')"),
    # --- statements and scopes
    ("break;", 1, "'break' statement not in a loop or switch"),
    ("continue;", 1, "'continue' statement not in a loop"),
    ("return 1;", 8, "kernel 'k' must not return a value"),
    ("int v; int v;", 12, "redefinition of 'v' (previously declared on line 2)"),
    ("if (n) { int w = 1; } w = 2;", 23, "unknown identifier 'w'"),
    ("for (int i = 0; i < n; i++) {} i = 0;", 32, "unknown identifier 'i'"),
    ("int x = k(a, c, u, ch, n);", 9, "cannot call kernel 'k' from device code "
                                      "(kernel launches are not supported)"),
    ("int f(int);", 5, "local function declarations are not supported"),
    ("const int z;", 11, "const variable 'z' needs an initialiser"),
    ("__device__ int x;", 1, "'__device__' is not allowed on a local variable"),
    ("if (a) {} else { n = (void)0; }", 22, "void value used in an expression"),
    # --- __shared__ arrays
    ("__shared__ int s[n];", 18, "size of array 's' is not a compile-time constant"),
    ("__shared__ int s[0];", 18, "size of array 's' must be positive (got 0)"),
    ("__shared__ int s[2][2][2][2];", 16, "__shared__ arrays have at most 3 dimensions"),
    ("__shared__ int s[4] = 0;", 23, "__shared__ variables cannot have an initialiser"),
    ("__shared__ int *sp;", 17, "__shared__ pointers are not supported; declare a __shared__ array"),
    (f"__shared__ int big[{SPEC.shared_words - 24}]; __shared__ int more[30];", 42,
     f"kernel 'k' needs {SPEC.shared_words + 6} cells of __shared__ memory ('more' needs 30); the machine has "
     f"{SPEC.shared_words} cells ({SPEC.shared_words // 256} KiB) per block"),
    # --- literals
    ("int x = 09;", 9, "invalid digit in octal literal '09'"),
    ("int x = 0x;", 9, "invalid integer literal '0x'"),
    ("int x = 12abc;", 9, "invalid suffix 'abc' on integer literal"),
    ("int x = 18446744073709551616u;", 9,
     "integer literal '18446744073709551616u' is too large (it does not fit in 64 bits)"),
    ("int x = 9223372036854775808;", 9,
     "integer literal '9223372036854775808' is too large for 'long long'; write '9223372036854775808ull'"),
    ("char x = '';", 10, "empty character constant"),
    ("char x = '\\q';", 10, "unknown escape sequence '\\q'"),
]


@pytest.mark.parametrize("frag,col,message", IN_KERNEL, ids=[c[0] for c in IN_KERNEL])
def test_error_inside_a_kernel(frag, col, message):
    assert_error(K % frag, 2, col, message)


# (whole source, line, col, message)
WHOLE = [
    # --- syntax errors, gcc style, at the unexpected token
    ("__global__ void k(int *a) {\n  a[0] = 1\n}\n", 3, 1, "expected ';' before '}'"),
    ("__global__ void k(int *a) {\n  a[0 = 1;\n}\n", 2, 10, "expected ']' before ';'"),
    ("__global__ void k(int *a) {\n  if (a[0] { }\n}\n", 2, 12, "expected ')' before '{'"),
    ("__global__ void k(int *a) {\n  a[0] = ;\n}\n", 2, 10, "expected an expression before ';'"),
    ("__global__ void k(int *a) {\n  a[0] = 1;\n", 2, 12, "expected '}' at end of input"),
    ("__global__ void k(int *a) {\n  do a[0]++; (a[0]);\n}\n", 2, 14, "expected 'while' before '('"),
    ("int 3;\n", 1, 5, "expected an identifier before '3'"),
    ("}\n", 1, 1, "expected a declaration before '}'"),
    ("__global__ void k(int *a) { a[0] = @; }\n", 1, 36, "unexpected character '@'"),
    ("__global__ void k(int *a) { a[0] = 'x; }\n", 1, 36, "missing terminating ' character"),
    ("/* never closed\n__global__ void k() {}\n", 1, 1, "unterminated /* comment"),
    # --- unsupported keywords anywhere
    ("template <typename T> __global__ void k(T *a) {}\n", 1, 1,
     "no kernel: the file defines only templates; a kernel template is instantiated when it is named at "
     "launch (qgrun --kernel 'NAME<ARGS>')"),
    ("namespace n = m;\n", 1, 1, "namespaces are not supported"),
    # --- functions
    ("__device__ int f(int x) { return f(x - 1); }\n"
     "__global__ void k(int *a) { a[0] = f(1); }\n",
     1, 34, "recursion is not supported: 'f' calls itself"),
    ("__device__ int g(int);\n"
     "__device__ int f(int x) { return g(x); }\n"
     "__device__ int g(int x) { return x ? f(x - 1) : 0; }\n"
     "__global__ void k(int *a) { a[0] = f(3); }\n",
     2, 34, "recursion is not supported: 'f' calls itself (f -> g -> f)"),
    ("__device__ int g(int);\n__global__ void k(int *a) { a[0] = g(1); }\n",
     2, 36, "function 'g' is declared but never defined"),
    ("__device__ int f(int x, int y) { return x + y; }\n"
     "__global__ void k(int *a) { a[0] = f(1); }\n",
     2, 36, "function 'f' expects 2 arguments, got 1"),
    ("__device__ int f(int *p) { return *p; }\n"
     "__global__ void k(const int *a) { int x = f(a); }\n",
     2, 45, "cannot convert 'const int *' to 'int *' in argument 1 of 'f' "
            "(it would discard 'const')"),
    ("__global__ int k(int *a) { }\n", 1, 16, "kernel 'k' must return void"),
    ("int f(int x) { return x; }\n", 1, 5,
     "function 'f' must be __global__ or __device__ (host code is not supported)"),
    ("__host__ int f(int x) { return x; }\n", 1, 1,
     "'__host__' is not supported (only device code is compiled; '__host__ __device__' "
     "functions are)"),
    ("__global__ __device__ void k() {}\n", 1, 12, "a function cannot be both __global__ and __device__"),
    ("__device__ void f() { return 1; }\n__global__ void k() {}\n", 1, 30,
     "void function 'f' must not return a value"),
    ("__device__ int f() { return; }\n__global__ void k() {}\n", 1, 22,
     "function 'f' must return a value of type 'int'"),
    ("__device__ int f() { return 1; }\n__device__ int f() { return 2; }\n__global__ void k() {}\n",
     2, 16, "redefinition of function 'f' (previously defined on line 1)"),
    ("__device__ int f(int);\n__device__ unsigned f(int x) { return x; }\n__global__ void k() {}\n",
     2, 21, "conflicting declaration of 'f' (previously declared on line 1)"),
    ("__global__ void k(int *a, int *a) {}\n", 1, 32, "redefinition of parameter 'a'"),
    ("__device__ int f(int a) { int a = 2; return a; }\n__global__ void k() {}\n", 1, 31,
     "redefinition of 'a' (previously declared on line 1)"),
    ("__global__ void k(int *a) { a[0] = f; }\n__device__ int f() { return 1; }\n", 1, 36,
     "function 'f' cannot be used as a value (function pointers are not supported)"),
    ("__global__ void k(void (*cb)(int)) {}\n", 1, 26, "function pointers are not supported"),
    ("__global__ void k(long double *a) {}\n", 1, 24, "'long double' is not supported; use 'double'"),
    ("__global__ void k(int a[][4]) {}\n", 1, 23,
     "multi-dimensional array parameters are not supported"),
    ("__global__ void k(int x) {}\n__global__ void k(int x) {}\n", 2, 17,
     "redefinition of function 'k' (previously defined on line 1)"),
    ("__constant__ int *tab;\n", 1, 19,
     "__constant__ pointers are not supported; declare a __constant__ array or scalar"),
    ("", 1, 1, "no kernel: the file defines no __global__ function"),
    ("__device__ int f(int x) { return x; }\n", 1, 1,
     "no kernel: the file defines no __global__ function"),
    # --- file scope
    ("int x;\n__global__ void k(int *o) { o[0] = x; }\n", 1, 5,
     "global variable 'x' is not supported; only integer constants ('const int N = 4;') may be "
     "declared at file scope"),
    ("__shared__ int s[4] = {1, 2};\n__global__ void k() {}\n", 1, 23,
     "__shared__ variables cannot have an initialiser"),
    ("const int N = 3;\nconst int N = 4;\n__global__ void k() {}\n", 2, 11,
     "redefinition of 'N' (previously declared on line 1)"),
    ("__global__ void k(int n) { }\nconst int M = n;\n", 2, 15, "unknown identifier 'n'"),
    ("__device__ int f(int x) { return x; }\nconst int N = f(2);\n__global__ void k() {}\n", 2, 15,
     "a constant initialiser cannot call function 'f'"),
    ("const int N = threadIdx.x;\n__global__ void k() {}\n", 1, 25,
     "file-scope constant 'N' needs a compile-time constant initialiser"),
    # --- preprocessor
    ("#define N 4\n#define N 5\n__global__ void k() {}\n", 2, 9,
     "macro 'N' redefined with a different value (first defined on line 1)"),
    ("#define N @\n__global__ void k(int *a) { a[0] = N; }\n", 1, 11,
     "unexpected character '@' in macro 'N'"),
    ("#define N 4\n__global__ void k(int *a) { a[0] = N; }\n#undef N\n"
     "__global__ void k2(int *a) { a[0] = N; }\n", 4, 37, "unknown identifier 'N'"),
    ("#ifdef X\n__global__ void k() {}\n", 1, 1, "unterminated conditional directive (missing '#endif')"),
    ("#endif\n__global__ void k() {}\n", 1, 1, "'#endif' without '#if'"),
    ("#error not for this machine\n", 1, 1, "#error not for this machine"),
    ("#line 5\n__global__ void k() {}\n", 1, 2, "preprocessor directive '#line' is not supported"),
]


@pytest.mark.parametrize("src,line,col,message", WHOLE, ids=[f"{c[3][:50]}" for c in WHOLE])
def test_error_in_a_whole_file(src, line, col, message):
    assert_error(src, line, col, message)


def test_instruction_limit_names_the_machine_capacity():
    # An inlined integer division is about 27 instructions.
    divs = "".join(f"  a[{i}] = a[{i}] / a[{i + 1}];\n" for i in range(SPEC.max_instrs // 25))
    e = error_of(f"__global__ void big(int *a) {{\n{divs}}}\n")
    assert (e.line, e.col) == (1, 17)
    assert f"the machine holds at most {SPEC.max_instrs}" in e.message


def test_parameter_limit_names_the_machine_capacity():
    params = ", ".join(f"int p{i}" for i in range(65))
    e = error_of(f"__global__ void wide({params}) {{}}\n")
    assert (e.line, e.col, e.message) == (
        1, 17, "kernel 'wide' has 65 parameters; the machine allows at most 64")


def test_rendered_error_has_gcc_form_with_a_caret():
    e = error_of(K % "x = 1;")
    assert e.render() == "t.cu:2:1: error: unknown identifier 'x'\nx = 1;\n^"
    assert str(e) == "t.cu:2:1: error: unknown identifier 'x'"


def test_syntax_errors_come_first_then_the_first_semantic_error():
    # The parser (with the unsupported-keyword check on its token stream) reads the
    # whole file before semantic analysis; each phase reports its first error.
    src = "__global__ void k() {\n  int x = 1\n  int y = 2;\n  goto end;\n}\n"
    assert error_of(src).message == "expected ';' before 'int'"
    src = "__global__ void k() {\n  goto end;\n  int x = 1\n}\n"
    assert error_of(src).message == "'goto' is not supported"
    e = error_of(K % "int x = ~1.5;\nint y = ~2.5;")
    assert (e.line, e.col) == (2, 9)


# ---------------------------------------------------------------- robustness

VALID = """#define N 8
const int M = N / 2;
__device__ int sq(int x) { return x * x; }
__global__ void k(int *a, const char *b, unsigned n) {
    __shared__ int s[2][M];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && b[i] > 0) { s[i % 2][i % M] = sq(a[i]) / (i + 1); }
    for (int j = 0; j < 3; j++) { if (j == 1) continue; a[i] += j << 2; }
    __syncthreads();
    atomicAdd(&a[0], (int)b[i] % 3 ? 1 : -1);
}
"""

TOKENS = ["__global__", "__device__", "__shared__", "void", "int", "unsigned", "char", "bool",
          "const", "if", "else", "for", "while", "do", "return", "break", "continue", "x", "y",
          "a", "k", "threadIdx", ".", "x", "(", ")", "{", "}", "[", "]", ";", ",", "=", "+=",
          "++", "--", "+", "-", "*", "/", "%", "<<", ">>", "<", ">=", "==", "!=", "&&", "||",
          "!", "~", "&", "|", "^", "?", ":", "0", "1", "0x7fffffff", "'c'", "#define", "\n",
          "atomicAdd", "__syncthreads", "float", "switch", "/*", "*/", "//", '"s"', "@", "\\"]


def _compiles_or_reports(src: str) -> None:
    try:
        compile_source(src, "fuzz.cu")
    except CompileError as e:
        assert isinstance(e.line, int) and isinstance(e.col, int) and e.line >= 1 and e.col >= 1
        assert "internal compiler error" not in e.message, f"{e.render()}\n--- source:\n{src}"


def test_random_garbage_never_escapes_as_a_python_exception():
    rnd = random.Random(1234)
    alphabet = "abcxyz_019 \t\n(){}[];,.+-*/%&|^!~<>=?:#'\"\\@$"
    for _ in range(150):
        _compiles_or_reports("".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 80))))
    for _ in range(150):
        _compiles_or_reports(" ".join(rnd.choice(TOKENS) for _ in range(rnd.randint(0, 40))))


def test_mutations_of_a_valid_kernel_compile_or_report_an_error():
    compile_source(VALID, "valid.cu")
    rnd = random.Random(99)
    toks = VALID.replace("(", " ( ").replace(")", " ) ").split(" ")
    for _ in range(200):
        t = list(toks)
        for _ in range(rnd.randint(1, 3)):
            i = rnd.randrange(len(t))
            r = rnd.random()
            if r < 0.4:
                del t[i]
            elif r < 0.7:
                t.insert(i, rnd.choice(TOKENS))
            else:
                t[i] = rnd.choice(TOKENS)
        _compiles_or_reports(" ".join(t))


def test_absurdly_deep_nesting_is_a_compile_error_not_a_crash():
    src = "__global__ void k(int *a) { a[0] = " + "(" * 3000 + "1" + ")" * 3000 + "; }"
    _compiles_or_reports(src)
    src = "__global__ void k(int *a) { " + "{" * 3000 + "}" * 3000 + " }"
    _compiles_or_reports(src)
    src = "__global__ void k(int *a) { a[0] = 1" + " + 1" * 5000 + "; }"
    _compiles_or_reports(src)
