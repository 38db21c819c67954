"""The math library (src/qgcc/frontend/mathlib.cu).

Two independent questions, answered separately because the emulator is slow:
1. Is the ALGORITHM right?  The library text is compiled by the host C compiler
   (tests/native/mathlib_host.c: IEEE binary32, one rounding per operation, the
   soft-float semantics) and compared with exact models: numpy for the exact
   functions (bit for bit) and mpmath at 140 bits for the others, whose error
   in ulps must stay within the bound documented in docs/subset.md.
2. Does qgcc compile that text to the same bits?  Kernels calling each function
   run on the reference emulator (and on the network) and must equal the host
   build bit for bit (NaNs compared as NaNs: the host's own NaN is not CUDA's).

The default suite checks every function on fewer inputs; the slow tests and
bench/mathlib.py do at least 10,000 per function and print the measured errors
and costs.
"""
from __future__ import annotations

import numpy as np
import pytest

import mathkernel as K
import mathref as M
from qgcc.frontend import CompileError, compile_source
from qgcc.frontend.sema import MATH_FUNCS
from qgcc.spec import SPEC

# Documented error bounds in ulps (docs/subset.md, "Math library"); the exact
# functions have none: they are exact.
BOUNDS = {"rsqrtf": 0.501, "cbrtf": 0.501, "hypotf": 0.51, "logf": 0.55, "log2f": 0.6, "log10f": 0.6,
          "log1pf": 0.65, "expf": 0.9, "exp2f": 0.95, "exp10f": 0.95, "expm1f": 1.05, "sinf": 0.9,
          "cosf": 0.8, "tanf": 1.1, "asinf": 0.7, "acosf": 0.7, "atanf": 1.15, "atan2f": 1.2,
          "sinhf": 0.7, "coshf": 0.8, "tanhf": 0.85, "powf": 0.55}
assert set(BOUNDS) == set(M.APPROX1 + M.APPROX2)


def _canon(a):
    a = np.asarray(a, np.float32)
    return np.where(np.isnan(a), M.NAN, a).view(np.uint32)


def check_exact(name, x, y, n_in, r, ir):
    if name in M.INT_RESULT:
        np.testing.assert_array_equal(ir, M.exact(name, x))
    elif name == "frexpf":
        m, e = M.exact(name, x)
        np.testing.assert_array_equal(r.view(np.uint32), m.view(np.uint32))
        np.testing.assert_array_equal(ir, e)
    else:
        np.testing.assert_array_equal(r.view(np.uint32), M.exact(name, x, y, n_in).view(np.uint32))


def check_bound(name, n, seed):
    rng = np.random.default_rng(seed)
    x, y, n_in = M.inputs(name, n, rng)
    r, _, _ = M.host(name, x, y, n_in)
    err = M.ulp_errors(name, x, y, r)
    worst = int(np.argmax(err))
    assert err[worst] <= BOUNDS[name], (f"{name}({x[worst]!r}, {y[worst]!r}) = {r[worst]!r}: "
                                        f"{err[worst]:.3f} ulp > {BOUNDS[name]}")
    return len(x)


@pytest.mark.parametrize("name", M.EXACT1 + M.EXACT2)
def test_exact_functions_equal_their_numpy_models(name):
    """floor, fmod, remainder, ldexp, ... have one right answer: bit for bit on 20,000 inputs."""
    x, y, n_in = M.inputs(name, 20000, np.random.default_rng(11))
    r, _, ir = M.host(name, x, y, n_in)
    check_exact(name, x, y, n_in, r, ir)


@pytest.mark.parametrize("name", M.APPROX1 + M.APPROX2)
def test_error_within_documented_bound(name):
    """A quick sweep (specials, subnormals, huge trig arguments, near-midpoint cases, random)."""
    check_bound(name, 600, 12)


@pytest.mark.slow
@pytest.mark.parametrize("name", M.APPROX1 + M.APPROX2)
def test_error_within_documented_bound_10000_inputs(name):
    assert check_bound(name, 10000, 13) >= 10000


def test_hard_cases_are_near_midpoints():
    """The near-midpoint inputs really are hard: their results lie within 2^-12 ulp of a midpoint."""
    x = M.hard_cases("expf", 20, np.random.default_rng(1))
    v = np.exp(x.astype(np.float64))
    frac = v / np.exp2(np.floor(np.log2(v)) - 23)
    assert np.all(np.abs(frac - np.floor(frac) - 0.5) < 2.0**-12)


HOST_NAMES = {"nearbyintf": "rintf", "__saturatef": "saturatef", "__frsqrt_rn": "rsqrtf", "scalbnf": "ldexpf",
              "__sincosf": "sincosf"}


def host_of(name):
    return HOST_NAMES.get(name, name.removeprefix("__"))


def emulator_matches_host(name, n, seed):
    x, y, n_in = M.inputs(host_of(name), n, np.random.default_rng(seed))
    # keep the specials and a random choice of the rest
    idx = np.concatenate([np.arange(min(8, len(x))), np.random.default_rng(seed).choice(
        np.arange(8, len(x)), max(n - 8, 0), replace=False)])[:n]
    x, y, n_in = x[idx], y[idx], n_in[idx]
    r, r2, ir, _, _ = K.run(name, x, y, n_in)
    hr, hr2, hir = M.host(host_of(name), x, y, n_in)
    np.testing.assert_array_equal(_canon(r), _canon(hr), err_msg=f"{name}({x}, {y})")
    np.testing.assert_array_equal(_canon(r2), _canon(hr2))
    np.testing.assert_array_equal(ir, hir)
    # every NaN qgcc produces is CUDA's canonical one (copysignf only moves a sign bit, as fabsf)
    if name != "copysignf":
        assert np.all(r.view(np.uint32)[np.isnan(r)] == 0x7FFFFFFF)
    if name == "frexpf" or name in M.INT_RESULT or name in ("floorf", "fmodf"):
        check_exact(host_of(name), x, y, n_in, r, ir)


@pytest.mark.parametrize("name", ["floorf", "fmodf", "frexpf", "rsqrtf", "expf"])
def test_compiled_library_equals_host_build(name):
    emulator_matches_host(name, 8, 21)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(MATH_FUNCS))
def test_compiled_library_equals_host_build_many_inputs(name):
    emulator_matches_host(name, 200, 22)


def test_the_largest_function_fits_with_arithmetic_around_it():
    """The largest function plus the kernel's own + - * fit the instruction memory: when they
    would not, the kernel's arithmetic goes through the fma routine the library links anyway."""
    for name in ("tanhf", "powf"):
        src = K.source(name).replace("float *r2, int *ir) {", "float *r2, int *ir) {\n    float u = x[0] * y[1] + y[2] - x[3];")
        src = src.replace("\n}\n", "\n    r2[0] = u;\n}\n")
        prog = compile_source(src, f"{name}.cu")
        assert len(prog.code) <= SPEC.max_instrs


def test_fused_arithmetic_gives_the_same_results():
    """sinf with kernel arithmetic around it (compiled with the fma fallback) equals numpy."""
    src = ("__global__ void k(const float *x, float *r) {\n"
           "    int i = threadIdx.x;\n"
           "    r[i] = sinf(x[i]) * x[i] + x[i] - 0.25f * x[i];\n}\n")
    prog = compile_source(src, "fused.cu")
    x = np.array([0.5, -3.0, 1e-3, 7.25], np.float32)
    from qgcc.ref.emulator import run
    from qgcc.runtime.launch import make_launch
    launch = make_launch(prog, prog.kernels[0], (1, 1, 1), (4, 1, 1), {}, {"x": x, "r": np.zeros(4, np.float32)})
    res = run(launch)
    s = M.host("sinf", x)[0]
    want = (s * x + x) - np.float32(0.25) * x
    np.testing.assert_array_equal(launch.read_buffer(res.memory, "r").view(np.uint32),
                                  want.astype(np.float32).view(np.uint32))


@pytest.mark.parametrize("src, msg", [
    ("r[0] = frexpf(x[0], r);", "argument 2 of 'frexpf' must be a 'int *' pointer (got 'float *')"),
    ("sincosf(x[0], r, n);", "argument 3 of 'sincosf' must be a 'float *' pointer (got 'int *')"),
    ("r[0] = ldexpf(x[0]);", "'ldexpf' expects 2 arguments, got 1"),
    ("r[0] = atan2((double)x[0], 2.0f);", "'atan2' on double is not supported (qgcc's double functions are sqrt, fabs, fmin, fmax, floor, ceil, trunc, round, exp, log, log10, pow, sin, cos, tan, rsqrt, frexp, ldexp and scalbn); use 'atan2f' on float"),
    ("r[0] = __fadd_rz(x[0], x[1]);", "'__fadd_rz' is not supported (only round to nearest: '__fadd_rn')"),
    ("r[0] = atan(x[0] * 1.0);", "'atan' on double is not supported (qgcc's double functions are sqrt, fabs, fmin, fmax, floor, ceil, trunc, round, exp, log, log10, pow, sin, cos, tan, rsqrt, frexp, ldexp and scalbn); use 'atanf' on float"),
    ("r[0] = expf(r);", "argument 1 of 'expf' must be a number (got 'float *')"),
])
def test_bad_calls_are_named(src, msg):
    code = f"__global__ void k(float *x, float *r, int *n) {{\n    {src}\n}}\n"
    with pytest.raises(CompileError, match=msg.replace("(", r"\(").replace(")", r"\)").replace("*", r"\*")):
        compile_source(code, "bad.cu")


def test_fast_intrinsics_and_rounding_spellings():
    """__fdividef and __frcp_rn are the correctly rounded division; __expf is expf."""
    src = ("__global__ void k(const float *x, const float *y, float *r) {\n"
           "    int i = threadIdx.x;\n"
           "    r[i] = __fdividef(x[i], y[i]);\n    r[i + 4] = __frcp_rn(y[i]);\n"
           "    r[i + 8] = __saturatef(x[i]);\n    r[i + 12] = nearbyintf(x[i]);\n}\n")
    prog = compile_source(src, "intr.cu")
    x = np.array([1.0, -2.5, 0.5, 3.0], np.float32)
    y = np.array([3.0, 7.0, -0.0, 1e-3], np.float32)
    from qgcc.ref.emulator import run
    from qgcc.runtime.launch import make_launch
    launch = make_launch(prog, prog.kernels[0], (1, 1, 1), (4, 1, 1), {},
                         {"x": x, "y": y, "r": np.zeros(16, np.float32)})
    got = launch.read_buffer(run(launch).memory, "r")
    with np.errstate(all="ignore"):
        want = np.concatenate([x / y, np.float32(1) / y, np.clip(x, 0, 1), np.rint(x)]).astype(np.float32)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


def _neural(name, x, y=None, n_in=None):
    from lockstep import both
    z = np.zeros(len(x), np.float32)
    y = z if y is None else np.asarray(y, np.float32)
    n_in = np.zeros(len(x), np.int32) if n_in is None else np.asarray(n_in, np.int32)
    outs, _ = both(f"math_{name}", (len(x) // 4, 1, 1), (4, 1, 1), {},
                   {"x": np.asarray(x, np.float32), "y": y, "n": n_in, "r": z, "r2": z,
                    "ir": np.zeros(len(x), np.int32)}, source=K.source(name), max_steps=200_000)
    hr, hr2, hir = M.host(host_of(name), x, y, n_in)
    np.testing.assert_array_equal(_canon(outs["r"]), _canon(hr))
    np.testing.assert_array_equal(_canon(outs["r2"]), _canon(hr2))
    np.testing.assert_array_equal(outs["ir"], hir)


def test_floorf_runs_bit_exact_inside_the_network():
    """Four lanes taking four different paths of the routine, traced step for step against the emulator."""
    _neural("floorf", np.array([2.5, -0.0, -1.5, 3e-39], np.float32))


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(n for n in MATH_FUNCS if not (n.startswith("__") and n[2:] in MATH_FUNCS)))
def test_every_function_runs_bit_exact_inside_the_network(name):
    x, y, n_in = M.inputs(host_of(name), 400, np.random.default_rng(31))
    pick = np.random.default_rng(32).choice(len(x), 4, replace=False)
    _neural(name, x[pick], y[pick], n_in[pick])


INF, NAN_, TINY = np.inf, np.nan, 2.0**-149
# powf's special cases, C99 Annex F (F.9.4.4) and CUDA's powf: (x, y, x^y).  The finite rows are
# exact results (a result within the bound of an exact float is that float), at the edges too.
POW_SPECIALS = [
    (NAN_, 0.0, 1.0), (NAN_, -0.0, 1.0), (INF, 0.0, 1.0), (-3.5, -0.0, 1.0),   # x^+-0 = 1
    (1.0, NAN_, 1.0), (1.0, INF, 1.0), (1.0, -7.5, 1.0),                        # 1^y = 1
    (-1.0, INF, 1.0), (-1.0, -INF, 1.0), (-1.0, 3.0, -1.0), (-1.0, 2.0**30, 1.0),
    (NAN_, 2.0, NAN_), (2.0, NAN_, NAN_), (-1.0, NAN_, NAN_),
    (-2.0, 0.5, NAN_), (-8.0, 1.0 / 3.0, NAN_), (-INF, 0.5, INF), (-0.0, 0.5, 0.0),
    (0.0, -3.0, INF), (-0.0, -3.0, -INF), (-0.0, -2.0, INF), (-0.0, -0.5, INF), (0.0, -INF, INF),
    (0.0, 3.0, 0.0), (-0.0, 3.0, -0.0), (-0.0, 4.0, 0.0), (-0.0, INF, 0.0),
    (0.5, -INF, INF), (-0.5, INF, 0.0), (1.5, INF, INF), (-1.5, -INF, 0.0),
    (-INF, -3.0, -0.0), (-INF, -2.0, 0.0), (-INF, 3.0, -INF), (-INF, 2.0, INF), (INF, -0.5, 0.0),
    (INF, 0.5, INF),
    (2.0, 10.0, 1024.0), (-2.0, 3.0, -8.0), (10.0, 10.0, 1e10), (4.0, 0.5, 2.0), (0.25, -1.5, 8.0),
    (-3.0, -2.0, 1.0 / 9.0), (2.0, 127.0, 2.0**127), (2.0, 128.0, INF), (-2.0, 129.0, -INF),
    (2.0, -126.0, 2.0**-126), (2.0, -149.0, TINY), (0.5, 149.0, TINY), (-0.5, 149.0, -TINY),
    (2.0, -150.0, 0.0),                                   # 2^-150: the tie rounds to even, 0
    (-0.5, 151.0, -0.0), (2.0, -149.5, TINY),             # 2^-149.5 rounds up to 2^-149
    (2.0**-75, 2.0, 0.0), (1e30, 2.0, INF), (1e-30, -2.0, INF), (3.0, 1e10, INF),
    (0.75, 1e10, 0.0), (1.0000001, -2.0**40, 0.0), (-1.0000001, 2.0**40, INF),
]


def test_powf_special_cases_follow_c99_annex_f():
    """Every special case of C99 Annex F, exactly (signs of zeros and infinities, canonical NaNs),
    in the host build and in the compiled kernel on the emulator."""
    x, y, want = (np.array(c, np.float64).astype(np.float32) for c in zip(*POW_SPECIALS))
    want = _canon(want)
    np.testing.assert_array_equal(_canon(M.host("powf", x, y)[0]), want)
    for name in ("powf", "__powf"):
        r = K.run(name, x, y)[0]
        np.testing.assert_array_equal(r.view(np.uint32), want, err_msg=name)


def test_powf_within_bound_on_10000_inputs():
    """Specials crossed with specials, random bit patterns, x within 2000 ulps of 1 with large y,
    results near 2^128 and across the subnormal range, integer exponents with negative bases,
    near-midpoint cases from a float64 screen, and random moderate pairs, against mpmath."""
    assert check_bound("powf", 10000, 14) >= 10000


def test_powf_compiled_equals_host_build_300_inputs():
    emulator_matches_host("powf", 300, 24)


def test_powf_runs_bit_exact_inside_the_network():
    """Four lanes on four paths: a negative base with an odd exponent, a subnormal result rounded
    once, a general case, and a NaN (negative base, non-integer exponent)."""
    _neural("powf", np.array([-1.5, 0.5, 3.7, -2.0], np.float32), np.array([-7.0, 140.5, 2.3, 0.5], np.float32))
