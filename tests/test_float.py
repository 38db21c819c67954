"""float: IEEE-754 binary32 arithmetic, conversions and math, bit-exact everywhere.

The machine's float unit executes + - * fmaf, compares and conversions; division
and sqrtf are routines on it (src/qgcc/frontend/divsqrt.cu), and --soft-float keeps
the integer soft-float library (src/qgcc/frontend/softfloat.cu), which the compiler
emits out of line and calls with JR-returning subroutine calls.  References come
from numpy float32 (the host's IEEE hardware) and exact rationals
(tests/floatref.py), never from the compiler.  NaN results must be the
canonical 0x7FFFFFFF (CUDA); (int)/(unsigned) saturate, NaN -> 0.

The default suite runs a few thousand operand pairs per operation on the
emulator and a short differential run inside the network; `pytest -m slow
tests/test_float.py` runs 100,000 pairs per operation on the emulator and
2,048 inside the network.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import floatref as R
from qgcc.frontend import CompileError, compile_source
from qgcc.ref.emulator import run as emulate
from qgcc.runtime.launch import make_launch

ROOT = Path(__file__).resolve().parents[1]

ARITH = """
__global__ void arith(const float *a, const float *b, const float *c, float *r, int n) {
    int stride = blockDim.x * gridDim.x;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float x = a[i], y = b[i], z = c[i];
        r[i * 6 + 0] = x + y;
        r[i * 6 + 1] = x - y;
        r[i * 6 + 2] = x * y;
        r[i * 6 + 3] = x / y;
        r[i * 6 + 4] = sqrtf(x);
        r[i * 6 + 5] = fmaf(x, y, z);
    }
}
"""

CONV = """
__global__ void conv(const float *a, const float *b, int *ri, unsigned *ru, float *rf, int n) {
    int stride = blockDim.x * gridDim.x;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float x = a[i], y = b[i];
        ri[i * 2] = (int)x;
        ri[i * 2 + 1] = (x < y) | (x <= y) << 1 | (x > y) << 2 | (x >= y) << 3 | (x == y) << 4
                        | (x != y) << 5;
        ru[i] = (unsigned)x;
        rf[i * 4 + 0] = (float)__float_as_int(y);
        rf[i * 4 + 1] = (float)__float_as_uint(y);
        rf[i * 4 + 2] = fminf(x, y);
        rf[i * 4 + 3] = fmaxf(x, y);
    }
}
"""

_PROGRAMS: dict[str, object] = {}


def program(src: str):
    if src not in _PROGRAMS:
        _PROGRAMS[src] = compile_source(src, "float_test.cu")
    return _PROGRAMS[src]


def run(src: str, scalars: dict, arrays: dict, grid=(1, 1, 1), block=(64, 1, 1), engine="ref"):
    prog = program(src)
    k = prog.kernels[0]
    launch = make_launch(prog, k, grid, block, scalars, arrays)
    if engine == "ref":
        res = emulate(launch, max_steps=10 ** 9)
        mem = res.memory
    else:
        from lockstep import both
        outs, _ = both(f"float-{hash(src)}", grid, block, scalars, arrays, source=src, max_steps=10 ** 6)
        return outs
    return {p.name: launch.read_buffer(mem, p.name) for p in k.params if p.pointer}


def check_arith(a, b, c, engine="ref"):
    n = len(a)
    out = run(ARITH, {"n": n}, {"a": R.f(a), "b": R.f(b), "c": R.f(c), "r": np.zeros(6 * n, np.float32)},
              engine=engine)
    r = out["r"].view(np.uint32).reshape(n, 6)
    want = {"+": R.binary("+", a, b), "-": R.binary("-", a, b), "*": R.binary("*", a, b),
            "/": R.binary("/", a, b), "sqrtf": R.sqrt(a), "fmaf": R.fma(a, b, c)}
    for j, (name, w) in enumerate(want.items()):
        bad = np.nonzero(r[:, j] != w)[0]
        assert len(bad) == 0, (name, [(hex(a[i]), hex(b[i]), hex(c[i]), hex(r[i, j]), hex(w[i])) for i in bad[:5]])


def check_conv(a, b, engine="ref"):
    n = len(a)
    out = run(CONV, {"n": n}, {"a": R.f(a), "b": R.f(b), "ri": np.zeros(2 * n, np.int32),
                               "ru": np.zeros(n, np.uint32), "rf": np.zeros(4 * n, np.float32)}, engine=engine)
    ri, rf = out["ri"].reshape(n, 2), out["rf"].view(np.uint32).reshape(n, 4)
    cmp = sum(R.compare(o, a, b) << k for k, o in enumerate(["<", "<=", ">", ">=", "==", "!="]))
    with np.errstate(all="ignore"):
        checks = {"(int)": (ri[:, 0], R.to_int(a)), "comparisons": (ri[:, 1], cmp),
                  "(unsigned)": (out["ru"], R.to_uint(a)), "(float)int": (rf[:, 0], R.from_int(b.view(np.int32))),
                  "(float)unsigned": (rf[:, 1], R.from_uint(b)), "fminf": (rf[:, 2], R.minmax("min", a, b)),
                  "fmaxf": (rf[:, 3], R.minmax("max", a, b))}
    for name, (got, w) in checks.items():
        bad = np.nonzero(got != w)[0]
        assert len(bad) == 0, (name, [(hex(a[i]), hex(b[i]), got[i], w[i]) for i in bad[:5]])


# ---------------------------------------------------------------- the library itself


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")
def test_library_matches_host_ieee_hardware_on_a_million_operands(tmp_path):
    # The library is valid C: compiled natively it is checked against the host's
    # IEEE unit (and libm's fmaf) far faster than the emulator could.
    exe = tmp_path / "check"
    subprocess.run(["cc", "-O2", "-std=c99", "-o", str(exe), str(ROOT / "tests/native/softfloat_check.c"), "-lm"],
                   check=True, capture_output=True)
    out = subprocess.run([str(exe), "1000000", "11"], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "ok 1000000", out.stdout


# ---------------------------------------------------------------- compiled, on the emulator


def test_arithmetic_sqrt_and_fma_are_ieee_exact_on_the_emulator():
    rng = np.random.default_rng(1)
    a, b = R.pairs(rng, 768)
    check_arith(a, b, R.operands(rng, 768))


def test_special_operands_exhaustively_paired():
    s = R.SPECIALS
    a, b = np.repeat(s, len(s)), np.tile(s, len(s))
    check_arith(a, b, np.roll(a, 7))
    check_conv(a, b)


def test_conversions_comparisons_min_max_on_the_emulator():
    rng = np.random.default_rng(2)
    a, b = R.pairs(rng, 1536)
    check_conv(a, b)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(100))
def test_hundred_thousand_pairs_per_operation_on_the_emulator(seed):
    rng = np.random.default_rng(1000 + seed)
    a, b = R.pairs(rng, 1000)
    check_arith(a, b, R.operands(rng, 1000))
    check_conv(a, b)


# ---------------------------------------------------------------- the language


def one(body: str, n_out: int = 8, params: str = "", scalars=None, arrays=None, out_type=np.float32):
    """Run `body` in one thread with `float *o` (or `int *o`) of n_out cells; returns bits / ints."""
    ctype = {np.float32: "float", np.int32: "int"}[out_type]
    src = f"__global__ void k({ctype} *o{params}) {{\n{body}\n}}\n"
    arrays = dict(arrays or {})
    arrays["o"] = np.zeros(n_out, out_type)
    out = run(src, scalars or {}, arrays, block=(1, 1, 1))["o"]
    return out.view(np.uint32) if out_type is np.float32 else out


def bits(x: float) -> int:
    return int(np.array([x], np.float32).view(np.uint32)[0])


@pytest.mark.parametrize("text", ["0.1f", "1e-45f", "1.4e-45f", "3.4028235e38f", "3.4028236e38f", "1e39f",
                                  "16777217.0f", "0.3333333432674407958984375f", "7e-46f", "2.5e-45f",
                                  "1.00000005960464477539062500001f"])
def test_float_literals_round_once_to_nearest_even(text):
    from fractions import Fraction
    v = Fraction(text[:-1])
    # the two float32 neighbours around v, by exact comparison
    want = R._round(v) if v != 0 else 0
    assert one(f"o[0] = {text};")[0] == want


def test_unsuffixed_literals_convert_like_c_where_a_float_is_expected():
    # float x = 0.1 is (float)(double)0.1 in C; the same in an argument and a return.
    src = """__device__ float halve(float x) { return x * 0.5f; }
__device__ float tenth() { return 0.1; }
__global__ void k(float *o) { float x = 0.1; o[0] = x; o[1] = halve(3.0); o[2] = tenth(); o[3] = -2.5; }"""
    o = run(src, {}, {"o": np.zeros(4, np.float32)}, block=(1, 1, 1))["o"]
    assert list(o) == [np.float32(0.1), np.float32(1.5), np.float32(0.1), np.float32(-2.5)]


def test_float_times_an_unsuffixed_literal_is_computed_in_double():
    """C++: 0.1 is a double, so o[0] * 0.1 is a double product rounded once to float on the
    store (not the float product o[0] * 0.1f)."""
    o = run("__global__ void k(float *o) { o[0] = o[0] * 0.1; o[1] = o[1] * 0.1f; }", {},
            {"o": np.full(2, 0.7, np.float32)}, block=(1, 1, 1))["o"]
    assert o[0] == np.float32(np.float64(np.float32(0.7)) * 0.1)
    assert o[1] == np.float32(0.7) * np.float32(0.1)


def test_mixed_int_float_arithmetic_follows_the_usual_conversions():
    o = one("""int i = 7; unsigned u = 0xFFFFFFFFu; float f = 0.5f;
o[0] = i + f; o[1] = u * 1.0f; o[2] = i / 2; o[3] = i / 2.0f;
int j = 10; j += 2.75f; o[4] = j; j *= 0.5f; o[5] = j; f++; o[6] = f; o[7] = -f;""")
    want = [7.5, 4294967296.0, 3.0, 3.5, 12.0, 6.0, 1.5, -1.5]
    assert list(o) == [bits(w) for w in want]


def test_float_truth_zero_is_false_nan_is_true():
    o = one("""float pz = 0.0f, nz = -0.0f, nan = __int_as_float(0x7fc00000), one = 1.0f;
o[0] = pz ? 1 : 0; o[1] = nz ? 1 : 0; o[2] = nan ? 1 : 0; o[3] = !nz; o[4] = !nan;
o[5] = (nz && one); o[6] = (bool)nan; if (nz) o[7] = 5; else o[7] = 9;""", out_type=np.int32)
    assert list(o) == [0, 0, 1, 1, 0, 0, 1, 9]


def test_conversions_to_small_types_and_bit_casts():
    o = one("""float f = 300.7f; char c = (int)f; unsigned char uc = (int)f; bool b = f;
o[0] = c; o[1] = uc; o[2] = b; o[3] = (int)-2.9f; o[4] = __float_as_int(-0.0f);
o[5] = __float_as_uint(1.0f); o[6] = (int)(float)16777217; o[7] = (unsigned)-1.0f;""", out_type=np.int32)
    assert list(o) == [44, 44, 1, -2, -0x80000000, 0x3F800000, 16777216, 0]


def test_constant_folding_agrees_with_the_routines():
    # The same expressions folded at compile time and computed at run time.
    exprs = ["1.0f / 3.0f", "0.1f + 0.2f", "1e30f * 1e10f", "sqrtf(2.0f)", "fmaf(0.1f, 10.0f, -1.0f)",
             "(float)123456789", "(float)(unsigned)4294967295u", "-0.0f + 0.0f", "1e-40f / 3.0f"]
    const = one("\n".join(f"o[{i}] = {e};" for i, e in enumerate(exprs)), n_out=len(exprs))
    rt = one("float one = x;\n" + "\n".join(f"o[{i}] = one * ({e});" for i, e in enumerate(exprs)),
             n_out=len(exprs), params=", float x", scalars={"x": bits(1.0)})
    assert list(const) == list(rt)


def test_float_atomic_add_loses_no_lane_in_shared_or_global_memory():
    src = """__global__ void k(float *total, const float *v) {
    __shared__ float s;
    if (threadIdx.x == 0) s = 0.0f;
    __syncthreads();
    float old = atomicAdd(&s, v[threadIdx.x]);
    atomicAdd(total, v[threadIdx.x]);
    __syncthreads();
    if (threadIdx.x == 0) total[1] = s;
}"""
    # Exactly representable partial sums: every order of the adds gives the same total,
    # so this checks that no lane's add is lost when lanes and warps collide.
    v = np.array([1.5, 2, -3.25, 4, 0.5, 8, 16.75, -1, 32, 0.25, -64, 128], np.float32)
    out = run(src, {}, {"total": np.zeros(2, np.float32), "v": v}, block=(12, 1, 1))
    assert out["total"].tolist() == [float(v.sum()), float(v.sum())]


def test_a_divergent_call_does_not_let_other_lanes_reach_a_barrier_first():
    # Routines sit below the kernel body: lanes inside one finish before the
    # others of the warp move on, so this barrier is not "divergent".
    src = """__global__ void k(float *o) {
    float x = threadIdx.x;
    if (threadIdx.x & 1) x = x / 3.0f;
    __syncthreads();
    o[threadIdx.x] = x;
}"""
    o = run(src, {}, {"o": np.zeros(8, np.float32)}, block=(8, 1, 1))["o"]
    want = [np.float32(i) / np.float32(3) if i & 1 else np.float32(i) for i in range(8)]
    assert list(o) == want


# ---------------------------------------------------------------- inside the network


BASIC = """
__global__ void basic(const float *a, const float *b, float *r) {
    int i = threadIdx.x;
    float x = a[i], y = b[i];
    r[i * 3 + 0] = x - y;
    r[i * 3 + 1] = x * y;
    r[i * 3 + 2] = x / y;
}
"""


def test_add_mul_div_run_bit_exact_inside_the_network():
    # One warp: trace record by record equal to the emulator's (the division routine's call,
    # divergent paths and JR return included), buffers equal to the IEEE references.
    # sqrtf and fmaf inside the network: the slow test below.
    rng = np.random.default_rng(5)
    a, b = R.pairs(rng, 4)
    out = run(BASIC, {}, {"a": R.f(a), "b": R.f(b), "r": np.zeros(12, np.float32)}, block=(4, 1, 1),
              engine="neural")
    r = out["r"].view(np.uint32).reshape(4, 3)
    assert r[:, 0].tolist() == R.binary("-", a, b).tolist()
    assert r[:, 1].tolist() == R.binary("*", a, b).tolist()
    assert r[:, 2].tolist() == R.binary("/", a, b).tolist()


@pytest.mark.slow
def test_conversions_comparisons_min_max_run_bit_exact_inside_the_network():
    rng = np.random.default_rng(5)
    a, b = R.pairs(rng, 4)
    check_conv(a, b, engine="neural")


JR_OUT = """.kernel k
.param int* a
    LDC r1, c[0]
    MOV r2, #{target}
    JR r2
    ST [r1], r2
    EXIT
.end
"""


@pytest.mark.parametrize("target", [3, 5, 99999])
def test_jr_outside_the_kernel_faults_in_both_engines(target):
    from qgcc.asm.assembler import assemble
    from lockstep import host
    from qgcc.link.linker import link
    from qgcc.trace import MemoryFault

    prog = assemble(JR_OUT.format(target=target), "jr.qsass")
    launch = lambda: make_launch(prog, prog.kernels[0], (1, 1, 1), (4, 1, 1), {},  # noqa: E731
                                 {"a": np.zeros(1, np.int32)})
    if target == 3:  # inside: jumps to the store
        r = emulate(launch())
        n = host(link(prog)).run(launch(), max_steps=100)
        assert np.array_equal(r.memory, n.memory) and r.memory[0] == 3
        return
    with pytest.raises(MemoryFault) as ref:
        emulate(launch())
    with pytest.raises(MemoryFault) as net:
        host(link(prog)).run(launch(), max_steps=100)
    r, n = ref.value, net.value
    assert (r.message, r.pc, r.warp, r.lane, r.step) == (n.message, n.pc, n.warp, n.lane, n.step)
    assert r.pc == 2 and r.message.startswith("JR to an address outside the kernel")


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(16))
def test_more_operand_pairs_inside_the_network(seed):
    rng = np.random.default_rng(2000 + seed)
    a, b = R.pairs(rng, 4)
    check_arith(a, b, R.operands(rng, 4), engine="neural")
    check_conv(a, b, engine="neural")


# ---------------------------------------------------------------- qgrun arguments


def test_float_scalar_arguments_are_rounded_once_and_checked():
    from qgcc.diagnostics import UsageError
    from qgcc.cli.args import parse_args

    k = program("__global__ void k(float *o, float a) { o[0] = a; }").kernels[0]
    for text, want in [("0.1", bits(0.1)), ("-2", bits(-2.0)), ("1e-45", 1), ("inf", 0x7F800000),
                       ("-inf", 0xFF800000), ("nan", 0x7FFFFFFF), ("3.4028236e38", 0x7F800000),
                       ("16777217", bits(16777216.0))]:
        scalars, _ = parse_args(k, [f"a={text}", "o=zeros:1"])
        assert scalars["a"] == want, text
    for bad in ["0x3f800000", "1.5f", "one", ""]:
        with pytest.raises(UsageError) as e:
            parse_args(k, [f"a={bad}", "o=zeros:1"])
        assert str(e.value) == f"--arg a={bad}: expected a float (e.g. 1.5, -2e-3, inf, nan)"
