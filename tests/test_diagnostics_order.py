"""With two constructs outside the subset, `qgcc x.cu -o x.qg` names the first in source order
(issue 27, "Diagnostics seen on the way"; docs/cli.md, "Which error is reported"), whichever
stage of the front end names each: the preprocessor (headers), the token passes (`asm`,
cooperative-groups tiles), the parser (syntax) or sema (built-ins refused by name, member
functions).  Each pair is compiled in both orders; the error is one gcc-style report at the
first construct's line:col, exit code 1, and no output file."""

from __future__ import annotations

import pytest

PRELUDE = "#include <cooperative_groups.h>\nnamespace cg = cooperative_groups;\n"

# name -> (top-level text, the text the error points at, the message's start)
ITEMS = {
    "header": ("#include <curand_kernel.h>\n", "curand_kernel.h", "'curand_kernel.h' (cuRAND's device API"),
    "asm": ("__global__ void a(int *p) {\n    int v = p[0];\n    asm(\"mov.u32 %0, 1;\" : \"=r\"(v));\n"
            "    p[0] = v;\n}\n", "asm(", "inline assembly ('asm') is not supported"),
    "ldg": ("__global__ void b(const int *q, int *p) {\n    p[threadIdx.x] = __ldg(q + threadIdx.x);\n}\n",
            "__ldg", "'__ldg' is not supported"),
    "method": ("struct Lane {\n    int v;\n    __device__ int down() const { return __shfl_down(v, 1); }\n};\n",
               "__shfl_down", "'__shfl_down' was removed in CUDA 9"),
    "tile": ("__global__ void t(int *p) {\n    cg::thread_block_tile<64> w = "
             "cg::tiled_partition<64>(cg::this_thread_block());\n    p[0] = w.thread_rank();\n}\n",
             "cg::tiled_partition", "tiles of 64 threads are not supported"),
    "syntax": ("__global__ void s(int *p) {\n    p[0] = 1\n}\n", "}\n", "expected ';' before '}'"),
    "type": ("__global__ void u(Unknown q, int *p) {\n    p[0] = 0;\n}\n", "Unknown", "unknown type name 'Unknown'"),
}

# Pairs named by different stages (or by one stage in different passes).
PAIRS = [("header", "asm"), ("header", "ldg"), ("asm", "ldg"), ("method", "ldg"), ("tile", "asm"),
         ("syntax", "ldg"), ("syntax", "method"), ("type", "ldg"), ("tile", "ldg")]


def _at(src: str, marker: str, after: int = 0) -> tuple[int, int]:
    i = src.index(marker, after)
    return src.count("\n", 0, i) + 1, i - src.rfind("\n", 0, i)


def _compile(tmp_path, qgcc, src: str):
    cu = tmp_path / "k.cu"
    cu.write_text(src)
    out = tmp_path / "k.qg"
    res = qgcc(cu, "-o", out)
    return res, out


def _assert_first(res, out, line: int, col: int, message: str) -> None:
    assert res.exit_code == 1, res.output
    where, _, what = res.output.splitlines()[0].partition(": error: ")
    assert where.endswith(f"k.cu:{line}:{col}") and what.startswith(message), res.output
    assert res.output.count("error:") == 1, res.output
    assert not out.exists()


@pytest.mark.parametrize("first,second", PAIRS + [(b, a) for a, b in PAIRS], ids=lambda s: s)
def test_the_first_of_two_unsupported_constructs_in_source_order_is_reported(tmp_path, qgcc, first, second):
    text1, marker, message = ITEMS[first]
    src = PRELUDE + text1 + ITEMS[second][0]
    res, out = _compile(tmp_path, qgcc, src)
    _assert_first(res, out, *_at(src, marker, len(PRELUDE)), message)


BODY = "__global__ void k(int *p) {\n    int v = p[threadIdx.x];\n{A}{B}    p[threadIdx.x] = v;\n}\n"
SHFL = "    v += __shfl_down(v, 1);\n"
ASM = "    asm(\"mov.u32 %0, 1;\" : \"=r\"(v));\n"


@pytest.mark.parametrize("first", ["shfl", "asm"])
def test_a_refused_builtin_before_asm_in_the_same_kernel_is_named_first(tmp_path, qgcc, first):
    """Within one function the parse stops at `asm`, so sema never sees the call before it; a
    look at the tokens names the built-ins sema refuses by name, with sema's message."""
    a, b = (SHFL, ASM) if first == "shfl" else (ASM, SHFL)
    src = BODY.replace("{A}", a).replace("{B}", b)
    res, out = _compile(tmp_path, qgcc, src)
    if first == "shfl":
        _assert_first(res, out, *_at(src, "__shfl_down"), "'__shfl_down' was removed in CUDA 9")
    else:
        _assert_first(res, out, *_at(src, "asm("), "inline assembly ('asm') is not supported")


def test_a_parse_error_wins_over_a_sema_problem_earlier_in_the_same_function(tmp_path, qgcc):
    """The documented limit: sema checks only a file that parses, so a problem only sema names
    (here a 64-bit atomicCAS) before a syntax error in the same function is not reported first."""
    src = ("__global__ void k(unsigned long long *p) {\n    atomicCAS(p, 0ull, 1ull);\n"
           "    p[1] = 2\n}\n")
    res, out = _compile(tmp_path, qgcc, src)
    _assert_first(res, out, 4, 1, "expected ';' before '}'")
    res, out = _compile(tmp_path, qgcc, src.replace("p[1] = 2\n", "p[1] = 2;\n"))
    _assert_first(res, out, *_at(src, "p, 0ull"), "'atomicCAS' on 'unsigned long long *' is not supported")


def test_a_missing_header_error_directive_and_unknown_directive_after_a_syntax_error(tmp_path, qgcc):
    """The preprocessor reads past headers it cannot give, `#error` and directives it does not
    know, so what the parser finds before them is reported first, and they before what comes
    after."""
    src = ("__global__ void k(int *p) {\n    p[0] = 1\n}\n#include \"nowhere.h\"\n#ident \"x\"\n"
           "#error not here\n#ifdef X\n")
    res, out = _compile(tmp_path, qgcc, src)
    _assert_first(res, out, 3, 1, "expected ';' before '}'")
    src = "#ident \"x\"\n#include \"nowhere.h\"\n__global__ void k(int *p) {\n    p[0] = 1\n}\n"
    res, out = _compile(tmp_path, qgcc, src)
    _assert_first(res, out, 1, 2, "preprocessor directive '#ident' is not supported")
    src = "#error not here\n#include \"nowhere.h\"\n__global__ void k(int *p) {\n    p[0] = 1\n}\n"
    res, out = _compile(tmp_path, qgcc, src)
    _assert_first(res, out, 1, 1, "#error not here")


@pytest.mark.parametrize("later", ["__device__ int g(int x) { return x * 2 }\n",
                                   "struct S { int a; int a; };\n__device__ int g(int x) { return x * 2; }\n"],
                         ids=["syntax", "declaration"])
def test_a_call_of_a_function_defined_after_the_error_is_not_reported_as_unknown(tmp_path, qgcc, later):
    """The items before an error are checked without the items after it; a call of one of
    those (which sema accepts before its definition) is not an error found there."""
    src = "__device__ int f(int x) { return g(x) + 1; }\n" + later + \
          "__global__ void k(int *p) { p[0] = f(1); }\n"
    res, out = _compile(tmp_path, qgcc, src)
    if "struct" in later:
        _assert_first(res, out, 2, 23, "duplicate member 'a'")
    else:
        _assert_first(res, out, 2, 40, "expected ';' before '}'")


TILE64 = "    cg::thread_block_tile<64> w = cg::tiled_partition<64>(cg::this_thread_block());\n"


@pytest.mark.parametrize("first", ["asm", "tile"])
def test_asm_and_a_tile_of_64_in_one_kernel_are_named_in_source_order(tmp_path, qgcc, first):
    """The cooperative-groups pass reads the whole file before the pass that refuses `asm`; in
    one function the earlier of the two is still the one named."""
    a, b = (ASM, TILE64) if first == "asm" else (TILE64, ASM)
    src = PRELUDE + BODY.replace("{A}", a).replace("{B}", b)
    res, out = _compile(tmp_path, qgcc, src)
    if first == "asm":
        _assert_first(res, out, *_at(src, "asm("), "inline assembly ('asm') is not supported")
    else:
        _assert_first(res, out, *_at(src, "cg::tiled_partition"), "tiles of 64 threads are not supported")
