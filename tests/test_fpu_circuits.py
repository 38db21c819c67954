"""The float unit's gate circuits (qgcc.link.blocks.fpu) evaluated bit by bit with
Netlist.simulate, before they become weights, against the emulator's exact model
(qgcc.semantics.alu / qgcc.fpu), which test_fpu checks against numpy and exact rationals.

A circuit is built once per module; the default run takes a few dozen special-heavy
operands per operation, `-m slow` 2,000 pairs per operation and every special pair."""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import pytest

import floatref as R
from qgcc.isa import Op
from qgcc.semantics import alu
from qgcc.link.blocks import fpu as F
from qgcc.link.netlist import Netlist
from test_fpu import hard_pairs, hard_triples


@lru_cache(maxsize=None)
def circuit(kind: str):
    n = Netlist()
    a, b = n.inputs_bus("a", 32), n.inputs_bus("b", 32)
    flag, en = n.input("flag"), n.input("en")
    out = {"fadd": lambda: F.fadd(n, a, b, flag, en), "fmul": lambda: F.fmul(n, a, b, en),
           "i2f": lambda: F.i2f(n, a, flag, en), "f2i": lambda: F.f2i(n, a, flag, en)}[kind]()
    return n, a, b, flag, en, out


# (circuit, flag input, en input): FSUB is the adder with its flag; F2U is f2i's second enable.
CASES = {Op.FADD: ("fadd", 0, 1), Op.FSUB: ("fadd", 1, 1), Op.FMUL: ("fmul", 0, 1), Op.I2F: ("i2f", 1, 1),
         Op.U2F: ("i2f", 0, 1), Op.F2I: ("f2i", 1, 0), Op.F2U: ("f2i", 0, 1)}


def check(op: Op, xs, ys) -> None:
    kind, fl, e = CASES[op]
    n, a, b, flag, en, out = circuit(kind)
    for x, y in zip(xs, ys):
        x, y = int(x), int(y)
        inp = {s: (x >> i) & 1 for i, s in enumerate(a)} | {s: (y >> i) & 1 for i, s in enumerate(b)}
        inp[flag], inp[en] = fl, e
        v = n.simulate(inp)
        got = sum(v[o] << i for i, o in enumerate(out))
        want = alu(op, x, y)
        assert got == want, f"{op.name} {x:#010x} {y:#010x}: circuit {got:#010x}, model {want:#010x}"


def operands(n: int, seed: int):
    rng = np.random.default_rng(seed)
    s = R.SPECIALS
    pick = rng.integers(0, len(s), size=(n, 2))
    a, b = hard_pairs(rng, n)
    return np.concatenate([s[pick[:, 0]], a]), np.concatenate([s[pick[:, 1]], b])


@pytest.mark.parametrize("op", list(CASES), ids=lambda o: o.name)
def test_circuit_equals_the_model(op):
    a, b = operands(12, seed=int(op))
    check(op, a, b)


def test_a_disabled_unit_outputs_zero():
    for kind in ("fadd", "fmul", "i2f"):
        n, a, b, flag, en, out = circuit(kind)
        inp = {s: 1 for s in a + b} | {flag: 1, en: 0}
        v = n.simulate(inp)
        assert not any(v[o] for o in out), kind


@pytest.mark.slow
@pytest.mark.parametrize("op", list(CASES), ids=lambda o: o.name)
def test_circuit_sweep(op):
    a, b = operands(1000, seed=100 + int(op))
    s = R.SPECIALS
    check(op, np.concatenate([np.repeat(s, len(s)), a]), np.concatenate([np.tile(s, len(s)), b]))


# ---- the fused datapath (a * b + c, one rounding): FFMA, and FADD/FSUB/FMUL in a program with FFMA
FUSED = ("FADD", "FSUB", "FMUL", "FFMA")


@lru_cache(maxsize=None)
def fused_circuit():
    """The float unit as a program with every fused op links it (fpu.build), on free operands."""
    from types import SimpleNamespace
    n = Netlist()
    a, b, c = n.inputs_bus("a", 32), n.inputs_bus("b", 32), n.inputs_bus("c", 32)
    op = {o: n.input(o) for o in FUSED + ("MUL",)}
    unit = F.build(n, SimpleNamespace(op=op), SimpleNamespace(Ams=a, Bms=b, Cms=c), frozenset(FUSED))
    return n, a, b, c, op, unit.result


def fused(opname: str, x: int, y: int, z: int = 0, zero=()) -> int:
    """The fused circuit's result for one instruction (`zero`: bus bits forced to 0, liveness)."""
    n, a, b, c, op, out = fused_circuit()
    inp = {s: (x >> i) & 1 for i, s in enumerate(a)} | {s: (y >> i) & 1 for i, s in enumerate(b)}
    inp |= {s: (z >> i) & 1 for i, s in enumerate(c)} | {s: int(o == opname) for o, s in op.items()}
    v = n.simulate(inp | {s: 0 for s in zero})
    return sum(v[o] << i for i, o in enumerate(out))


def check_fused(opname: str, xs, ys, zs) -> None:
    for x, y, z in zip(xs, ys, zs):
        x, y, z = int(x), int(y), int(z)
        got, want = fused(opname, x, y, z), alu(Op[opname], x, y, z)
        assert got == want, f"{opname} {x:#010x} {y:#010x} {z:#010x}: circuit {got:#010x}, model {want:#010x}"


def triples(n: int, seed: int):
    rng = np.random.default_rng(seed)
    s = R.SPECIALS
    pick = rng.integers(0, len(s), size=(n, 3))
    a, b, c = hard_triples(rng, n)
    return (np.concatenate([s[pick[:, 0]], a]), np.concatenate([s[pick[:, 1]], b]),
            np.concatenate([s[pick[:, 2]], c]))


@pytest.mark.parametrize("opname", FUSED)
def test_fused_circuit_equals_the_model(opname):
    """FFMA's datapath, and FADD/FSUB/FMUL as a*1+b, a*1-b and a*b-0 on it, round as qgcc.fpu."""
    a, b, c = triples(12 if opname == "FFMA" else 4, seed=200 + FUSED.index(opname))
    check_fused(opname, a, b, c)


def test_ffma_rounds_once_where_a_multiply_then_add_would_not():
    """Cases whose fused result differs from fmul then fadd, so a datapath that rounded the
    product first would fail them: the exact product's low bits decide the result."""
    cases = [(0x3F800800, 0x3F800800, 0xBF800000),  # (1 + 2^-12)^2 - 1 = 2^-11 + 2^-24: the tie decides
             (0x3FAAAAAB, 0x40400000, 0xC0800000)]  # (4/3 rounded) * 3 - 4: only the residual is left
    for x, y, z in cases:
        assert alu(Op.FFMA, x, y, z) != alu(Op.FADD, alu(Op.FMUL, x, y), z)
    check_fused("FFMA", *zip(*cases))


def test_the_fused_adder_is_live():
    """Zeroing the aligned addend's window bits (the alignment shifter's output) breaks sums."""
    n, a, b, c, op, out = fused_circuit()
    ys = [s for s, nm in n.names.items() if nm.startswith("ffma.y")]
    assert len(ys) > 90
    x, y = 0x3FC00000, 0x40200000  # 1.5 + 2.5
    assert fused("FADD", x, y) == alu(Op.FADD, x, y) == 0x40800000
    assert fused("FADD", x, y, zero=ys) != 0x40800000


@pytest.mark.slow
@pytest.mark.parametrize("opname", FUSED)
def test_fused_circuit_sweep(opname):
    """Every special x special pair (a, b), with c running through the specials too (shifted per
    row, so that every special meets every other in each operand position), and 1,000 triples."""
    a, b, c = triples(500, seed=300 + FUSED.index(opname))
    s = R.SPECIALS
    k = len(s)
    sc = np.array([s[(i + j) % k] for i in range(k) for j in range(k)], dtype=np.uint32)
    check_fused(opname, np.concatenate([np.repeat(s, k), a]), np.concatenate([np.tile(s, k), b]),
                np.concatenate([sc, c]))


def test_the_exponent_fields_sum_bits_read_restored_copies_of_r():
    """The exponent field's last adder level weights r's binary code by up to 4; it reads
    copies restored beside the adder's first level (ffma.rbr*), not the halves of r's wide ORs,
    whose level errors under weight noise that weight would multiply past the decision margin
    (docs/architecture.md, "Numerics").  Zeroing the copies must change a normal result's
    exponent, so the copies are what the field is made of."""
    n, a, b, c, op, out = fused_circuit()
    rbr = [s for s, nm in n.names.items() if nm.startswith("ffma.rbr")]
    assert len(rbr) == 7
    x, y, z = 0x40400000, 0x40A00000, 0x3F800000  # 3 * 5 + 1 = 16: r's code has bits set
    assert fused("FFMA", x, y, z) == alu(Op.FFMA, x, y, z) == 0x41800000
    assert fused("FFMA", x, y, z, zero=rbr) >> 23 != 0x41800000 >> 23


def test_the_rounding_point_and_fraction_read_restored_copies_of_the_window_sum():
    """The window adder's sum bits are its noisiest outputs; everything after the zero groups
    (the one-hot rounding point, the fraction, the round-up) reads their restored copies
    (ffma.rr*), so zeroing the copies must break the result."""
    n, a, b, c, op, out = fused_circuit()
    rr = [s for s, nm in n.names.items() if nm.startswith("ffma.rr")]
    assert len(rr) == 102
    x, y, z = 0x3FC00000, 0x40200000, 0x3F000000  # 1.5 * 2.5 + 0.5 = 4.25
    assert fused("FFMA", x, y, z) == alu(Op.FFMA, x, y, z) == 0x40880000
    assert fused("FFMA", x, y, z, zero=rr) != 0x40880000
