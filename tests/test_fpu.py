"""The float instructions' semantics in the reference emulator (qgcc.fpu through semantics.alu)
against an independent model: numpy's float32 (the host's IEEE hardware) and exact
rationals rounded once (floatref), on operands biased toward the cases where float
units go wrong: specials, subnormals, ties, cancellation, overflow and underflow.

The default run checks every special x special pair and a few thousand random pairs
per operation; `-m slow` sweeps 100,000 pairs per operation."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import floatref as R
from qgcc.isa import FLOAT_OPS, Op
from qgcc.semantics import alu

BINARY = {Op.FADD: lambda a, b: R.binary("+", a, b), Op.FSUB: lambda a, b: R.binary("-", a, b),
          Op.FMUL: lambda a, b: R.binary("*", a, b),
          Op.FMIN: lambda a, b: R.minmax("min", a, b), Op.FMAX: lambda a, b: R.minmax("max", a, b),
          **{op: (lambda s: lambda a, b: R.compare(s, a, b).astype(np.uint32))(sym) for op, sym in
             ((Op.FSLT, "<"), (Op.FSLE, "<="), (Op.FSGT, ">"), (Op.FSGE, ">="), (Op.FSEQ, "=="),
              (Op.FSNE, "!="))}}
UNARY = {Op.F2I: lambda a: R.to_int(a).view(np.uint32), Op.F2U: R.to_uint,
         Op.I2F: lambda a: R.from_int(a.view(np.int32)), Op.U2F: R.from_uint}


def hard_pairs(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Pairs whose exponents differ by 0..30 (alignment, ties, cancellation), near the top of the
    range (overflow) or the bottom (underflow), and integers near powers of two (conversions)."""
    a, b = R.pairs(rng, n)
    kind = rng.integers(0, 4, size=n)
    ea = rng.integers(0, 255, size=n)
    d = rng.integers(0, 31, size=n)
    eb = np.clip(ea - d, 0, 254)
    a2 = (a & np.uint32(0x807FFFFF)) | (ea.astype(np.uint32) << np.uint32(23))
    b2 = (b & np.uint32(0x807FFFFF)) | (eb.astype(np.uint32) << np.uint32(23))
    few = rng.integers(0, 4, size=n).astype(np.uint32)  # short mantissas make exact ties likely
    b3 = b2 & ~np.uint32(0x7FFFFF) | (few << np.uint32(21))
    hi = (a & np.uint32(0x80FFFFFF)) | (rng.integers(0xF0, 0xFF, size=n).astype(np.uint32) << np.uint32(23))
    lo = (b & np.uint32(0x80FFFFFF)) | (rng.integers(0, 0x10, size=n).astype(np.uint32) << np.uint32(23))
    p2 = (np.uint32(1) << rng.integers(0, 32, size=n).astype(np.uint32)) + rng.integers(-3, 4, size=n).astype(np.uint32)
    a = np.where(kind == 0, a2, np.where(kind == 1, hi, np.where(kind == 2, p2, a))).astype(np.uint32)
    b = np.where(kind == 0, np.where(few == 0, b2, b3), np.where(kind == 1, np.where(few & 1, hi[::-1], lo), b))
    return a, b.astype(np.uint32)


def hard_triples(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """FFMA operands a, b, c where a fused multiply-add goes wrong: c's exponent placed from far
    below to far above the product's (alignment, sticky bits, a dominant addend), c close to
    -a*b (cancellation, exact zeros), subnormal factors and products, overflow and underflow."""
    a, b = hard_pairs(rng, n)
    kind = rng.integers(0, 5, size=n)
    ea = ((a >> np.uint32(23)) & np.uint32(0xFF)).astype(np.int64)
    eb = ((b >> np.uint32(23)) & np.uint32(0xFF)).astype(np.int64)
    r = rng.integers(0, 1 << 32, size=n, dtype=np.uint64).astype(np.uint32)
    # c's exponent relative to the product's: -60..60 (clipped to the field)
    ec = np.clip(ea + eb - 127 + rng.integers(-60, 61, size=n), 0, 254).astype(np.uint32)
    placed = (r & np.uint32(0x807FFFFF)) | (ec << np.uint32(23))
    with np.errstate(all="ignore"):
        prod = (a.view(np.float32) * b.view(np.float32)).view(np.uint32)
    near = ((prod ^ np.uint32(0x80000000)).astype(np.int64) + rng.integers(-2, 3, size=n)) & 0xFFFFFFFF
    few = r & np.uint32(0xFF800000) | ((r & np.uint32(3)) << np.uint32(21))  # short mantissa: exact ties
    sub = r & np.uint32(0x807FFFFF)  # a subnormal factor
    c = np.where(kind == 0, placed, np.where(kind == 1, near.astype(np.uint32),
                                             np.where(kind == 2, few, R.operands(rng, n))))
    a = np.where(kind == 4, sub, a)
    return a.astype(np.uint32), b.astype(np.uint32), c.astype(np.uint32)


def emu(op: Op, a, b=None, c=None) -> np.ndarray:
    n = len(a)
    b = np.zeros(n, np.uint32) if b is None else b
    c = np.zeros(n, np.uint32) if c is None else c
    return np.array([alu(op, int(x), int(y), int(z)) for x, y, z in zip(a, b, c)], dtype=np.uint32)


def check(op: Op, a, b, got, want) -> None:
    bad = np.nonzero(got != want)[0]
    assert len(bad) == 0, f"{op.name}: {len(bad)} wrong, e.g. " + ", ".join(
        f"{a[i]:#010x} {b[i]:#010x} -> {got[i]:#010x}, want {want[i]:#010x}" for i in bad[:4])


def special_grid() -> tuple[np.ndarray, np.ndarray]:
    s = R.SPECIALS
    return np.repeat(s, len(s)), np.tile(s, len(s))


def sweep(n: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    sa, sb = special_grid()
    a1, b1 = R.pairs(rng, n // 2)
    a2, b2 = hard_pairs(rng, n - n // 2)
    a, b = np.concatenate([sa, a1, a2]), np.concatenate([sb, b1, b2])
    with np.errstate(all="ignore"):
        for op, ref in BINARY.items():
            check(op, a, b, emu(op, a, b), ref(a, b))
        for op, ref in UNARY.items():
            check(op, a, b, emu(op, a), ref(a))
        m = max(n // 10, 300)
        c = R.operands(rng, m)
        check(Op.FFMA, a[:m], b[:m], emu(Op.FFMA, a[:m], b[:m], c), R.fma(a[:m], b[:m], c))
        c2 = np.bitwise_xor(emu(Op.FMUL, a1[:m], b1[:m]), np.uint32(0x80000000))  # c ~ -a*b: cancellation
        check(Op.FFMA, a1[:m], b1[:m], emu(Op.FFMA, a1[:m], b1[:m], c2), R.fma(a1[:m], b1[:m], c2))


def test_every_float_opcode_is_checked_here():
    assert set(BINARY) | set(UNARY) | {Op.FFMA} == set(FLOAT_OPS)


def test_float_ops_match_numpy_and_exact_rationals():
    sweep(3000, seed=11)


def test_add_and_mul_equal_the_exact_value_rounded_once():
    """A second, numpy-free reference: the exact rational result rounded by floatref._round."""
    rng = np.random.default_rng(5)
    a, b = hard_pairs(rng, 600)
    finite = ((a & 0x7F800000) != 0x7F800000) & ((b & 0x7F800000) != 0x7F800000)
    for x, y in zip(a[finite], b[finite]):
        for op, v in ((Op.FADD, R._exact(int(x)) + R._exact(int(y))), (Op.FMUL, R._exact(int(x)) * R._exact(int(y)))):
            got = alu(op, int(x), int(y))
            if v == 0:
                assert got & 0x7FFFFFFF == 0
            else:
                want = R._round(v)
                assert got == want, (op.name, hex(x), hex(y), hex(got), hex(want))
                assert (Fraction(1) if got >> 31 == 0 else Fraction(-1)) * v >= 0


@pytest.mark.slow
def test_float_ops_sweep_100k():
    sweep(100_000, seed=2026)
