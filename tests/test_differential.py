"""Differential execution fuzzing (bench/fuzz/differential.py), briefly, and the bugs it found.

The fuzzer generates kernels free of undefined behaviour, runs them under g++ with a host
shim of CUDA's threads (the oracle) and through qgcc, and requires every byte of every
buffer to agree.  Each test below under "found by the fuzzer" is the minimised reproducer of
a bug, kept so that it stays fixed.
"""

from __future__ import annotations

import contextlib
import io
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import qgcc
from qgcc.diagnostics import CompileError

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gxx import need_gxx  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench" / "fuzz"))
import differential  # noqa: E402
from diffgen import generate  # noqa: E402
from diffshim import run_batch  # noqa: E402


def fuzz(*args: str) -> tuple[int, list[str]]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = differential.main([*args, "--quiet"])
    return code, out.getvalue().splitlines()


@need_gxx
def test_generated_kernels_give_gxxs_bytes_through_qgcc_and_qgrun():
    code, lines = fuzz("--programs", "5", "--seed", "2026", "--engine", "ref", "--via", "cli", "--small")
    assert lines[-1] == "5 programs, 0 mismatches, 0 crashes", "\n".join(lines)
    assert code == 0


@need_gxx
def test_switches_atomics_whose_old_values_are_used_and_struct_operators_give_gxxs_bytes():
    assert {"switch", "atomics with old values", "struct operators"} <= generate(1225, neural=True).features
    code, lines = fuzz("--programs", "1", "--seed", "1225", "--engine", "ref", "--via", "cli", "--small")
    assert lines[-1] == "1 programs, 0 mismatches, 0 crashes", "\n".join(lines)
    assert code == 0


@need_gxx
def test_cxx_constructs_tiles_wider_than_the_warp_and_exact_math_give_gxxs_bytes():
    assert {"__device__ variables", "cg::reduce", "class constants", "frexp", "lambdas", "namespaces",
            "pointer casts", "scoped enums", "template overloads by arity", "wide tiles"} <= generate(
        3467, neural=True).features
    code, lines = fuzz("--programs", "1", "--seed", "3467", "--engine", "ref", "--via", "cli", "--small")
    assert lines[-1] == "1 programs, 0 mismatches, 0 crashes", "\n".join(lines)
    assert code == 0


@need_gxx
def test_worker_processes_print_what_one_process_prints():
    args = ("--programs", "2", "--seed", "31", "--engine", "ref", "--via", "api", "--small", "--batch", "1")
    one, many = fuzz(*args), fuzz(*args, "--jobs", "2")
    timing = lambda lines: [ln.split(";")[0] for ln in lines]  # noqa: E731 - the seconds differ
    assert one[0] == many[0] == 0
    assert timing(one[1]) == timing(many[1])
    assert one[1][-1] == "2 programs, 0 mismatches, 0 crashes"


@need_gxx
def test_a_time_limit_stops_after_the_running_batch_and_counts_what_ran():
    code, lines = fuzz("--programs", "40", "--seed", "31", "--small", "--batch", "2", "--time-limit", "0")
    assert lines[-1] == "2 programs, 0 mismatches, 0 crashes", "\n".join(lines)
    assert lines[-2].startswith("seeds 31..32, ")
    assert code == 0


@pytest.mark.slow
@need_gxx
def test_generated_kernels_give_gxxs_bytes_in_the_network():
    code, lines = fuzz("--programs", "3", "--seed", "9000", "--engine", "neural", "--via", "cli")
    assert lines[-1] == "3 programs, 0 mismatches, 0 crashes", "\n".join(lines)
    assert code == 0


@need_gxx
def test_the_oracle_runs_threads_as_cuda_does_and_a_differing_byte_is_a_mismatch():
    progs = [generate(s, neural=True) for s in range(3)]
    oracles = run_batch(progs)
    assert [o.status for o in oracles] == ["ok"] * 3
    assert differential.check(progs[0], oracles[0], "ref", "api").kind == "ok"
    chk = oracles[0].outputs["chk"][""]
    chk[0] ^= 1  # one bit of one thread's hash
    o = differential.check(progs[0], oracles[0], "ref", "api")
    assert o.kind == "mismatch" and o.detail.startswith("chk[0]:")


@need_gxx
def test_the_oracle_sees_shared_memory_after_a_barrier_and_warp_shuffles_with_four_lanes():
    src = """
__global__ void k(const int *in0, int *out0, unsigned *chk) {
    unsigned tid = threadIdx.x;
    __shared__ int sh[8];
    sh[tid] = in0[tid] * 3;
    __syncthreads();
    out0[tid] = sh[7u - tid] + __shfl_xor_sync(0xffffffff, (int)tid, 1) * 1000 + __ballot_sync(0xffffffff, tid & 1) * 100000;
    chk[tid] = __reduce_add_sync(0xffffffff, tid);
}
"""
    p = generate(0)
    from diffgen import Buffer

    p.source, p.grid, p.block_shape, p.scalars, p.structs = src, 1, (8,), [], []
    p.buffers = [Buffer("in0", "int", np.arange(8, dtype=np.int32), const=True),
                 Buffer("out0", "int", np.zeros(8, np.int32)), Buffer("chk", "unsigned", np.zeros(8, np.uint32))]
    o = run_batch([p])[0]
    assert o.status == "ok"
    lane_xor = [t ^ 1 for t in range(8)]
    assert o.outputs["out0"][""].tolist() == [3 * (7 - t) + 1000 * lane_xor[t] + 100000 * 0b1010 for t in range(8)]
    assert o.outputs["chk"][""].tolist() == [6] * 4 + [22] * 4
    assert differential.check(p, o, "ref", "api").kind == "ok"


@need_gxx
def test_zero_minus_an_integer_zero_is_plus_zero_in_qgcc_and_in_the_oracle():
    """Found by the fuzzer (seed 1201850): GCC folds `0.0f - (float)i` to `-(float)i`, which is
    -0 for i == 0; IEEE round-to-nearest (CUDA, qgcc) gives +0.  The oracle now builds with
    -frounding-math, which stops the fold, so the two agree on +0 and fminf keeps it."""
    src = """
__global__ void k(const int *in0, float *out0, float *out1, unsigned *chk) {
    unsigned tid = threadIdx.x;
    out0[tid] = 0e+00f - (int)(in0[tid] == 1);
    out1[tid] = fminf((0e+00f - in0[tid]), 0e+00f);
    chk[tid] = tid;
}
"""
    p = generate(0)
    from diffgen import Buffer

    p.source, p.grid, p.block_shape, p.scalars, p.structs = src, 1, (4,), [], []
    p.buffers = [Buffer("in0", "int", np.array([0, 1, 0, 2], np.int32), const=True),
                 Buffer("out0", "float", np.zeros(4, np.float32)), Buffer("out1", "float", np.zeros(4, np.float32)),
                 Buffer("chk", "unsigned", np.zeros(4, np.uint32))]
    o = run_batch([p])[0]
    assert o.status == "ok"
    plus_zero, minus_one = 0x00000000, 0xBF800000
    assert o.outputs["out0"][""].view(np.uint32).tolist() == [plus_zero, minus_one, plus_zero, plus_zero]
    assert o.outputs["out1"][""].view(np.uint32).tolist() == [plus_zero, minus_one, plus_zero, 0xC0000000]
    assert differential.check(p, o, "ref", "api").kind == "ok"


def test_the_generators_guarded_divisor_of_the_most_negative_integer_runs_in_the_oracle():
    """Found by the fuzzer (seed 8712002): with -fwrapv, GCC 12 folds `x - a / (b + 1)` into
    `x + a / ~b` even at -O0, which for a == LLONG_MIN and b == 0 divides by -1 and traps on
    x86 where the program divides by 1 (CUDA and qgcc give LLONG_MIN / 1).  The generator now
    sums its guarded divisor in unsigned, which GCC does not negate; this runs the divisor
    text the generator writes, subtracted and negated, in both signed widths."""
    import diffgen
    from diffgen import Buffer

    class Fixed:  # the generator's choices: '/', and the guarded (non-constant) divisor
        def choice(self, xs):
            return "/"

        def random(self):
            return 0.9

    gen = diffgen.Gen(0)
    gen.r = Fixed()
    divs = {}
    for t, name in (("long long", "l"), ("int", "i")):
        operands = iter([f"a{name}[tid]", f"b{name}[tid]"])  # the dividend, then the divisor's source
        gen.expr = lambda t_, d, operands=operands: next(operands)
        divs[name] = gen.division(t, 2)
    src = f"""
__global__ void k(const long long *al, const long long *bl, const int *ai, const int *bi,
                  long long *out0, int *out1, unsigned *chk) {{
    unsigned tid = threadIdx.x;
    out0[tid] = (long long)((long long)tid - {divs['l']});
    out1[tid] = (int)(-{divs['i']});
    chk[tid] = tid;
}}
"""
    p = diffgen.generate(0)
    lo64, lo32 = np.iinfo(np.int64).min, np.iinfo(np.int32).min
    a64, b64 = np.array([lo64, 7, lo64, -1024], np.int64), np.array([0, 0, 3, 255], np.int64)
    a32, b32 = np.array([lo32, 7, lo32, -1024], np.int32), np.array([0, 256, 3, -1], np.int32)
    p.source, p.grid, p.block_shape, p.scalars, p.structs = src, 1, (4,), [], []
    p.buffers = [Buffer("al", "long long", a64, const=True), Buffer("bl", "long long", b64, const=True),
                 Buffer("ai", "int", a32, const=True), Buffer("bi", "int", b32, const=True),
                 Buffer("out0", "long long", np.zeros(4, np.int64)), Buffer("out1", "int", np.zeros(4, np.int32)),
                 Buffer("chk", "unsigned", np.zeros(4, np.uint32))]
    o = run_batch([p])[0]
    assert o.status == "ok", o.detail

    def c_div(a, b):  # C's truncating division, then two's-complement wrap to the width
        q = abs(a) // abs(b)
        return q if (a < 0) == (b < 0) else -q

    def wrap(v, bits):
        v &= (1 << bits) - 1
        return v - (1 << bits) if v >> (bits - 1) else v

    assert o.outputs["out0"][""].tolist() == [wrap(t - c_div(int(a), (int(b) & 255) + 1), 64)
                                              for t, a, b in zip(range(4), a64, b64)]
    assert o.outputs["out1"][""].tolist() == [wrap(-c_div(int(a), (int(b) & 255) + 1), 32) for a, b in zip(a32, b32)]
    assert differential.check(p, o, "ref", "api").kind == "ok"


def test_delta_debugging_keeps_only_the_lines_the_failure_needs():
    lines = [f"line {i}" for i in range(40)]
    fails = lambda c: "line 7" in c and "line 31" in c  # noqa: E731
    assert differential.ddmin(lines, fails, time.time() + 30) == ["line 7", "line 31"]


# ---- found by the fuzzer

def test_a_double_scalar_parameter_takes_a_python_number_in_the_api():
    # Program.launch rejected x=0.1 for `double x` ("give an int"): only float had a branch.
    prog = qgcc.compile("__global__ void k(double *o, double x) { o[threadIdx.x] = x * 2.0; }")
    r = prog.launch(1, 2, engine="ref", o=np.zeros(2), x=0.1)
    assert r["o"].tolist() == [0.2, 0.2]  # 0.1 * 2 is exact in binary64
    assert prog.launch(1, 1, engine="ref", o=np.zeros(1), x=3)["o"].tolist() == [6.0]
    r = prog.launch(1, 1, engine="ref", o=np.zeros(1), x=float("-inf"))
    assert r["o"].tolist() == [float("-inf")]



def test_a_64bit_variable_shifted_by_32_into_itself_keeps_its_low_word():
    # `v = v << 32` stored 0: the shift's result is the pair (0, v.lo), and the pair move wrote
    # v.lo = 0 before copying v.lo into v.hi (found in a fuzzed kernel as `v3 = v3 << 32`).
    prog = qgcc.compile("""
__global__ void k(long long *q, const int *in) {
    long long a = (long long)in[0];
    a = a << 32;
    q[0] = a;
    long long b = (long long)in[0];
    b <<= 32;
    q[1] = b;
    unsigned long long r = (unsigned long long)(unsigned)in[0] | ((unsigned long long)(unsigned)in[1] << 32);
    r = (r << 32) | (r >> 32);  // a rotation by 32 swaps the halves
    q[2] = (long long)r;
}
""")
    r = prog.launch(1, 1, engine="ref", q=np.zeros(3, np.int64), args={"in": np.array([5, 7], np.int32)})
    assert r["q"].tolist() == [5 << 32, 5 << 32, (5 << 32) | 7]


def test_logical_operators_fold_64bit_constants_on_all_64_bits():
    # `(unsigned char)0 || (-4294967296ll)` folded to 0: the constant was cut to its low 32 bits.
    prog = qgcc.compile("""
__global__ void k(unsigned *o) {
    o[0] = (unsigned)((unsigned char)0 || (-4294967296ll));
    o[1] = 4294967296ll && 1;
    o[2] = 0ull || 0ll;
}
""")
    assert prog.launch(1, 1, engine="ref", o=np.zeros(3, np.uint32))["o"].tolist() == [1, 1, 0]

CONST64 = """\
__constant__ unsigned long long big[2] = {0x8b1896fa3b1b2900ull};
__constant__ int small[2] = {-5, 7};
__global__ void k(unsigned long long *o, int *p) {
    o[threadIdx.x] = big[threadIdx.x & 1];
    p[threadIdx.x] = small[threadIdx.x & 1];
}
"""


def test_64bit_constants_survive_qg_files_and_qsass(qgcc, qgrun, tmp_path):
    # `qgcc k.cu -o k.qg` refused a 64-bit __constant__ array ("cannot save a malformed program:
    # constant 'c0' is malformed": the program check counted one cell per element, a 64-bit one
    # has two), and `qgcc -S` wrote `.const ullong`, which the assembler rejected.
    (tmp_path / "k.cu").write_text(CONST64)
    assert qgcc(tmp_path / "k.cu", "--no-link", "-o", tmp_path / "a.qg").exit_code == 0
    r = qgcc("-S", tmp_path / "k.cu", "-o", tmp_path / "k.qsass")
    assert r.exit_code == 0 and ".const ullong big[2] 0x3b1b2900, 0x8b1896fa, 0x0, 0x0" in (tmp_path / "k.qsass").read_text()
    r = qgcc(tmp_path / "k.qsass", "--no-link", "-o", tmp_path / "b.qg")
    assert r.exit_code == 0, r.output
    for name in ("a", "b"):
        r = qgrun(tmp_path / f"{name}.qg", "--grid", 1, "--block", 2, "--arg", "o=zeros:2", "--arg", "p=zeros:2",
                  "--out", f"o={tmp_path / name}_o.npy", "--out", f"p={tmp_path / name}_p.npy", "--engine", "ref",
                  "--trace", "none")
        assert r.exit_code == 0, r.output
        assert np.load(tmp_path / f"{name}_o.npy").tolist() == [0x8b1896fa3b1b2900, 0]
        assert np.load(tmp_path / f"{name}_p.npy").tolist() == [-5, 7]


@pytest.mark.slow  # a whole link (weights included): about 15 s; tests/test_residual.py places it in seconds
def test_float_arithmetic_with_a_compare_and_a_warp_vote_links_into_the_network():
    # Did not link ("does not fit in 45 layers: the residual stream (2048 dims) is full at stage
    # 17"): gates waiting for the end of the step held dimensions in the register-file layers.
    # The linker now moves them later (qgcc.link.sink), and the program takes the integer
    # machine's 36 layers.
    from qgcc.link.linker import link

    prog = qgcc.compile("""
__global__ void k(float *a, unsigned *b) {
    float x = a[threadIdx.x];
    a[threadIdx.x] = (x * 2.0f) + 1.0f;
    b[threadIdx.x] = __ballot_sync(0xffffffff, x != 3.0f);
}
""")
    assert link(prog.program).num_layers == 36


def test_a_bitwise_and_with_a_by_value_capture_after_the_lambda_is_not_taking_its_address():
    # Found by the fuzzer (seed 8000018): `(unsigned char)33 & p0` after `auto l = [p0](...)`
    # was "'p0' is captured by value by the lambda 'lam2' and changed after it": the '&' was
    # read as taking p0's address.  A binary '&' follows an operand; a unary one does not.
    src = """
__global__ void k(int *o, const int *in) {
    int c = in[threadIdx.x], r = 0;
    {
        auto f = [c, &r](int a) -> int { r = r + a; return a & c; };
        o[threadIdx.x] = f(7 & c) + (3 & c) * 100;
    }
    o[threadIdx.x] += r * 10000;
}
"""
    r = qgcc.compile(src).launch(1, 4, engine="ref", o=np.zeros(4, np.int32),
                                 args={"in": np.array([1, 2, 3, 12], np.int32)})
    assert r["o"].tolist() == [(7 & c & c) + (3 & c) * 100 + (7 & c) * 10000 for c in (1, 2, 3, 12)]
    with pytest.raises(CompileError, match="'c' is captured by value by the lambda 'f' and changed"):
        qgcc.compile("__global__ void k(int *o) { int c = 1; { auto f = [c](int a) -> int { return a; }; "
                     "int *q = &c; o[0] = f(*q); } }")


def test_using_a_nested_namespace_makes_its_names_visible():
    # Found by the fuzzer (seed 8000013): `using namespace N0::N1;` was "namespaces are not supported".
    src = """
namespace A { namespace B { __device__ int f(int x) { return x * 3; } } }
using namespace A::B;
__global__ void k(int *o) { o[threadIdx.x] = f(threadIdx.x) + A::B::f(1) * 10; }
"""
    assert qgcc.compile(src).launch(1, 3, engine="ref", o=np.zeros(3, np.int32))["o"].tolist() == [30, 33, 36]
    with pytest.raises(CompileError, match="namespaces are not supported"):
        qgcc.compile(src.replace("using namespace A::B;", "using namespace A::Z;"))


def test_a_scoped_enumerator_in_the_arguments_of_a_tile_operation():
    # Found by the fuzzer (seed 8000035): `tile.shfl_xor((unsigned)E1::b2 + x, 1u)` was "expected an
    # expression before 'E1'": the cooperative-groups lowering re-lexed its arguments' text, and the
    # enumerator (one token `E1::b2`) fell apart into `E1 : : b2`.
    src = """
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
enum class E1 : unsigned { b0 = 5u, b2 = 7u };
__global__ void k(unsigned *o) {
    cg::thread_block cb = cg::this_thread_block();
    auto t = cg::tiled_partition<2>(cb);
    auto t8 = cg::tiled_partition<8>(cb);
    o[threadIdx.x] = t.shfl_xor((unsigned)E1::b2 + threadIdx.x, 1u) * 1000
        + cg::reduce(t, (unsigned)E1::b0, cg::plus<unsigned>()) * 100 + t8.shfl_down(E1::b0 + threadIdx.x, 1u);
}
"""
    got = qgcc.compile(src).launch(1, 8, engine="ref", o=np.zeros(8, np.uint32))["o"].tolist()
    assert got == [(7 + (i ^ 1)) * 1000 + 10 * 100 + 5 + min(i + 1, 7) for i in range(8)]


def test_a_wide_tile_shuffle_takes_its_source_rank_modulo_the_tile_as_a_narrow_one_does():
    # `tile8.shfl(v, -1)` gave the caller's own value (the rank -1 % 8 stayed -1, "outside the
    # tile"); __shfl_sync takes the source lane modulo the width, as the 4-lane tiles do: rank 7.
    src = """
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
__global__ void k(int *o, int *p, int s) {
    cg::thread_block cb = cg::this_thread_block();
    auto t8 = cg::tiled_partition<8>(cb);
    auto t4 = cg::tiled_partition<4>(cb);
    o[threadIdx.x] = t8.shfl((int)threadIdx.x, s);
    p[threadIdx.x] = t4.shfl((int)threadIdx.x, s);
}
"""
    prog = qgcc.compile(src)
    for s in (-1, 9, -9, 3):
        r = prog.launch(1, 16, engine="ref", o=np.zeros(16, np.int32), p=np.zeros(16, np.int32), s=s)
        assert r["o"].tolist() == [i - i % 8 + s % 8 for i in range(16)]
        assert r["p"].tolist() == [i - i % 4 + s % 4 for i in range(16)]


def test_a_functor_temporary_after_a_cast_or_first_in_an_initialiser_list_is_an_expression():
    # Found by the fuzzer (seed 8000175): `(int)F0()(a, b)` and `int v[2] = {F0()(a, b), 1};` were
    # "expected an expression before 'F0'": `F0(` was read as a functional cast only after an
    # operator, '(', '[', ',' or 'return'.  A cast's ')' and an initialiser list's '{' (also
    # nested, `{{F0()(x)}}`, seed 31) start an expression too (`if (c) int(x);` stays what it was).
    src = """
struct F0 { int k; __device__ int operator()(int a, int b) const { return a * 10 + b + k; } };
struct P { int x, y; };
__global__ void k(int *o) {
    int a[2] = {F0()(1, 2), 3};
    P p = {int(2.5f), 4};
    int b[2][1] = {{F0()(0, 1)}, {F0()(0, 2)}};
    int c{F0()(0, 3)};
    o[0] = (int)F0()(1, 2);
    o[1] = a[0] + a[1];
    o[2] = (unsigned int)int(3.7f) + (int)float(2) + p.x * p.y;
    o[3] = b[0][0] * 10 + b[1][0] + c * 100;
}
"""
    assert qgcc.compile(src).launch(1, 1, engine="ref", o=np.zeros(4, np.int32))["o"].tolist() == [12, 15, 13, 312]
