"""The float unit's gate circuits (qgcc.link.blocks.fpu) evaluated bit by bit with
Netlist.simulate, before they become weights, against the emulator's exact model
(qgcc.isa.alu / qgcc.fpu), which test_fpu checks against numpy and exact rationals.

A circuit is built once per module; the default run takes a few dozen special-heavy
operands per operation, `-m slow` 2,000 pairs per operation and every special pair."""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import pytest

import floatref as R
from qgcc.isa import Op, alu
from qgcc.link.blocks import fpu as F
from qgcc.link.netlist import Netlist
from test_fpu import hard_pairs


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
