"""float: IEEE-754 binary32 arithmetic, conversions and math, bit-exact everywhere.

The machine has integer units only; every float operation is a routine of the
soft-float library (src/qgcc/frontend/softfloat.cu) that the compiler emits
out of line and calls with JR-returning subroutine calls.  References come
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
        from test_neural import both
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
