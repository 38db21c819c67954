"""Division and sqrtf on the float unit (src/qgcc/frontend/divsqrt.cu): correctly rounded.

With the float unit the machine has no divider and no square root: `x / y` and `sqrtf(x)`
are short routines of FMUL/FADD estimates and an exact integer remainder that decides the
last bit.  Rounding errors hide in rare operands, so the evidence is layered:
1. The routine text compiled by the host C compiler (binary32, one rounding per operation:
   what FADD/FMUL compute) against the host's IEEE division and square root, at native speed:
   a few hundred thousand biased and constructed cases by default; `-m slow` every one of the
   2^32 square roots and 3 x 10^8 divisions.
2. qgcc's compilation of that text on the reference emulator, on the hardest operands there are
   (quotients as near a midpoint as 24-bit operands allow, exact and tie quotients among the
   subnormals, perfect squares and roots near midpoints, subnormal radicands) against numpy
   float32 and exact rationals.
3. The same kernels inside the network, trace record by record against the emulator.
`qgcc --soft-float` keeps the integer routines of softfloat.cu; they are checked as before.
"""

from __future__ import annotations

import shutil
import subprocess
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

import floatref as R
from qgcc.frontend import compile_source
from qgcc.isa import FLOAT_OPS, Op
from qgcc.ref.emulator import run as emulate
from qgcc.runtime.launch import make_launch

ROOT = Path(__file__).resolve().parents[1]

DIVSQRT = """
__global__ void divsqrt(const float *a, const float *b, const float *s, float *q, float *r, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        q[i] = a[i] / b[i];
        r[i] = sqrtf(s[i]);
    }
}
"""


# ---------------------------------------------------------------- hard operands


def _bits(m: int, e: int, sign: int = 0) -> int:
    """The binary32 m * 2^e (exactly representable), with a sign."""
    return sign << 31 | R._round(Fraction(m) * Fraction(2) ** e)


def hard_div_pairs(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Pairs whose quotient is as near a rounding midpoint as 24-bit operands allow, or is
    exact, or an exact midpoint, at the subnormal grid; exponents spread over the whole range
    (overflow, underflow, subnormal operands), signs random."""
    a, b = [], []
    while len(a) < n:
        kind = rng.integers(0, 3)
        sa, sb = (int(v) for v in rng.integers(0, 2, 2))
        if kind == 0:
            # a/b = (2q+1)/2^25 - r/(mb 2^25): mb = r / (2q+1) mod 2^25, ma = ((2q+1) mb - r) / 2^25,
            # within |r| / (2 mb) ulp (about 2^-24 ulp) of the midpoint between two quotients
            mid = 2 * int(rng.integers(1 << 23, 1 << 24)) + 1
            r = int(rng.integers(1, 9)) * (1 if rng.integers(0, 2) else -1)
            mb = r * pow(mid, -1, 1 << 25) % (1 << 25)
            if not (1 << 23) <= mb < 1 << 24:
                continue
            ma = (mid * mb - r) >> 25
            eb = int(rng.integers(-170, 130))
            ea = eb + int(rng.integers(-150, 150))
            if not -149 <= ea - 23 <= 104 or not -149 <= eb - 23 <= 104:
                continue
            a.append(_bits(ma, ea - 23, sa))
            b.append(_bits(mb, eb - 23, sb))
        else:
            # a = m * b exactly, m with at most 16 bits near the subnormal grid: the quotient is
            # exact or an exact midpoint where rounding is at 2^-149; or a one ulp away
            mb, mm = 2 * int(rng.integers(0, 256)) + 1, int(rng.integers(1, 1 << 16))
            eb = int(rng.integers(-100, 100))
            em = -150 - int(rng.integers(0, 8)) + (int(rng.integers(0, 120)) if kind == 2 else 0)
            prod = Fraction(mm * mb) * Fraction(2) ** (em + eb)
            if not Fraction(2) ** -149 <= prod < Fraction(2) ** 128:
                continue
            x = R._round(prod) + int(rng.integers(-1, 2))
            a.append(x | sa << 31)
            b.append(_bits(mb, eb, sb))
    return np.array(a, np.uint32), np.array(b, np.uint32)


def hard_sqrt_operands(rng: np.random.Generator, n: int) -> np.ndarray:
    """Perfect squares, the floats nearest to squares of midpoints (roots as near a rounding
    midpoint as binary32 allows) and their neighbours, subnormals, specials."""
    out = []
    while len(out) < n:
        kind = rng.integers(0, 4)
        if kind == 0:  # s^2 with s of at most 12 bits: an exact root
            s = int(rng.integers(1, 1 << 12))
            v = Fraction(s * s) * Fraction(4) ** int(rng.integers(-90, 50))
        elif kind == 1:  # X = q^2 + q + j = m 2^24: sqrt(X) = q + 1/2 + (j - 1/4)/(2q + 1) + ...
            v = _near_midpoint_square(rng)
            if v is None:
                continue
        elif kind == 2:  # a subnormal
            out.append(int(rng.integers(1, 1 << 23)) >> int(rng.integers(0, 23)) or 1)
            continue
        else:
            out.append(int(R.SPECIALS[rng.integers(0, len(R.SPECIALS))]))
            continue
        if not Fraction(2) ** -149 <= v < Fraction(2) ** 128:
            continue
        out.append(R._round(v) + int(rng.integers(-1, 2)))
    return np.array(out, np.uint32)


def _near_midpoint_square(rng: np.random.Generator) -> Fraction | None:
    """A float whose square root lies within about j 2^-25 ulp of a rounding midpoint: q solves
    q^2 + q + j = 0 mod 2^24 (j even; Hensel's lifting, the derivative 2q + 1 being odd), so that
    X = q^2 + q + j is a 24-bit significand times 2^24."""
    j = 2 * int(rng.integers(-512, 512))
    q = int(rng.integers(0, 2))
    for _ in range(5):  # 1, 2, 4, ... 32 correct bits
        q = (q - (q * q + q + j) * pow(2 * q + 1, -1, 1 << 24)) % (1 << 24)
    X = q * q + q + j
    if not (1 << 47) <= X < 1 << 48 or X % (1 << 24):
        return None
    return Fraction(X) * Fraction(4) ** int(rng.integers(-85, 40)) / Fraction(1 << 48)


def exact_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Correctly rounded quotients from exact rationals (numpy for zero, infinite and NaN)."""
    want = R.binary("/", a, b)
    for i, (x, y) in enumerate(zip(a.tolist(), b.tolist())):
        if 0 < x & 0x7FFFFFFF < 0x7F800000 and 0 < y & 0x7FFFFFFF < 0x7F800000:
            want[i] = R._round(R._exact(x) / R._exact(y))
    return want


def run_divsqrt(a, b, s, engine="ref", grid=(4, 1, 1), block=(64, 1, 1)):
    n = len(a)
    arrays = {"a": R.f(a), "b": R.f(b), "s": R.f(s), "q": np.zeros(n, np.float32), "r": np.zeros(n, np.float32)}
    if engine == "neural":
        from lockstep import both
        outs, _ = both("divsqrt", grid, block, {"n": n}, arrays, source=DIVSQRT, max_steps=10 ** 7)
    else:
        prog = compile_source(DIVSQRT, "divsqrt.cu")
        launch = make_launch(prog, prog.kernels[0], grid, block, {"n": n}, arrays)
        mem = emulate(launch, max_steps=10 ** 9).memory
        outs = {k: launch.read_buffer(mem, k) for k in ("q", "r")}
    return outs["q"].view(np.uint32), outs["r"].view(np.uint32)


def check(a, b, s, engine="ref", **kw) -> None:
    q, r = run_divsqrt(a, b, s, engine, **kw)
    for name, got, want, ops in (("/", q, R.binary("/", a, b), (a, b)), ("sqrtf", r, R.sqrt(s), (s,))):
        bad = np.nonzero(got != want)[0]
        assert len(bad) == 0, (name, [tuple(hex(int(o[i])) for o in ops) + (hex(got[i]), hex(want[i]))
                                      for i in bad[:5]])


# ---------------------------------------------------------------- 1. the algorithm, natively


def native_check(tmp_path, *runs: tuple[str, int, int]) -> None:
    exe = tmp_path / "divsqrt_check"
    subprocess.run(["cc", "-O2", "-std=c99", "-ffp-contract=off", "-fno-fast-math", "-o", str(exe),
                    str(ROOT / "tests/native/divsqrt_check.c"), "-lm"], check=True, capture_output=True)
    for mode, n, seed in runs:
        out = subprocess.run([str(exe), mode, str(n), str(seed)], capture_output=True, text=True)
        assert out.returncode == 0 and out.stdout.startswith("ok "), (mode, out.stdout)


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")
def test_routines_match_host_ieee_division_and_sqrt(tmp_path):
    native_check(tmp_path, ("div", 300_000, 1), ("div-hard", 300_000, 2), ("sqrt", 300_000, 3))


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")
def test_every_square_root_and_300_million_quotients(tmp_path):
    native_check(tmp_path, ("sqrt-all", 0, 0), ("div", 200_000_000, 11), ("div-hard", 100_000_000, 12))


def test_the_hard_case_generators_are_hard():
    """The constructed quotients lie within 2^-20 ulp of a midpoint (or on the subnormal grid);
    the constructed roots include exact ones and ones within 2^-12 ulp of a midpoint."""
    rng = np.random.default_rng(0)
    a, b = hard_div_pairs(rng, 200)
    near = 0
    for x, y in zip(a.tolist(), b.tolist()):
        v = abs(R._exact(x) / R._exact(y))
        if v >= Fraction(2) ** -126:
            ulp = Fraction(2) ** (v.numerator.bit_length() - v.denominator.bit_length() - 24)
            frac = (v / ulp) % 1
            if abs(frac - Fraction(1, 2)) < Fraction(2) ** -20 or abs(frac) < Fraction(2) ** -18:
                near += 1
    assert near >= 30
    s = hard_sqrt_operands(rng, 400)
    roots = R.sqrt(s)
    exact = near = 0
    for x, r in zip(s.tolist(), roots.tolist()):
        if 0 < x < 0x7F800000:
            v, w = R._exact(x), R._exact(r)
            exact += w * w == v
            ulp = Fraction(2) ** ((r >> 23) - 150)
            for mid in (w - ulp / 2, w + ulp / 2):  # sqrt(v) - mid ~ (v - mid^2) / (2 mid)
                near += abs(v - mid * mid) / (2 * mid * ulp) < Fraction(2) ** -12
    assert exact >= 20 and near >= 20, (exact, near)


# ---------------------------------------------------------------- 2. qgcc's compilation, emulated


def test_hard_quotients_and_roots_on_the_emulator():
    rng = np.random.default_rng(11)
    a, b = hard_div_pairs(rng, 192)
    s = hard_sqrt_operands(rng, 192)
    assert R.binary("/", a, b).tolist() == exact_div(a, b).tolist()  # the two references agree
    check(a, b, s)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(50))
def test_hundred_thousand_hard_cases_per_operation_on_the_emulator(seed):
    rng = np.random.default_rng(5000 + seed)
    a, b = hard_div_pairs(rng, 2000)
    check(a, b, hard_sqrt_operands(rng, 2000))


def test_soft_float_keeps_the_integer_routines():
    """--soft-float compiles division and sqrtf to the integer routines (no float instruction,
    digit-by-digit loops); the default compilation to the float unit's (no loop)."""
    soft = compile_source(DIVSQRT, "divsqrt.cu", soft_float=True)
    hw = compile_source(DIVSQRT, "divsqrt.cu")
    assert not {i.op for i in soft.code} & FLOAT_OPS
    assert {Op.FMUL, Op.FADD, Op.F2U, Op.U2F, Op.I2F, Op.F2I} <= {i.op for i in hw.code}

    def back_edges(prog):  # backward branches other than the kernel's own loop
        return sum(1 for pc, i in enumerate(prog.code) if i.op in (Op.BRA, Op.BRZ, Op.BRNZ) and i.imm <= pc)
    assert back_edges(hw) < back_edges(soft)
    rng = np.random.default_rng(3)
    a, b = R.pairs(rng, 64)
    launches = []
    for prog in (soft, hw):
        arrays = {"a": R.f(a), "b": R.f(b), "s": R.f(a), "q": np.zeros(64, np.float32), "r": np.zeros(64, np.float32)}
        launch = make_launch(prog, prog.kernels[0], (1, 1, 1), (64, 1, 1), {"n": 64}, arrays)
        res = emulate(launch, max_steps=10 ** 8)
        launches.append((launch.read_buffer(res.memory, "q").view(np.uint32), res.stats.steps))
    assert launches[0][0].tolist() == launches[1][0].tolist() == R.binary("/", a, b).tolist()


# ---------------------------------------------------------------- 3. inside the network


def test_hard_quotients_and_roots_inside_the_network():
    rng = np.random.default_rng(12)
    a, b = hard_div_pairs(rng, 6)
    s = hard_sqrt_operands(rng, 6)
    sp = R.SPECIALS[[0, 2, 7, 12, 14, 10]]
    check(np.concatenate([a, sp]), np.concatenate([b, sp[::-1]]), np.concatenate([s, sp]), engine="neural",
          grid=(1, 1, 1), block=(4, 1, 1))


@pytest.mark.slow
def test_every_special_pair_and_2000_hard_pairs_inside_the_network():
    rng = np.random.default_rng(2027)
    sp = R.SPECIALS
    a1, b1 = hard_div_pairs(rng, 1000)
    a2, b2 = R.pairs(rng, 1000)
    a = np.concatenate([np.repeat(sp, len(sp)), a1, a2])
    b = np.concatenate([np.tile(sp, len(sp)), b1, b2])
    s = np.concatenate([np.tile(sp, len(sp)), hard_sqrt_operands(rng, 1000), R.operands(rng, 1000)])
    for lo in range(0, len(a), 1024):
        check(a[lo:lo + 1024], b[lo:lo + 1024], s[lo:lo + 1024], engine="neural")
