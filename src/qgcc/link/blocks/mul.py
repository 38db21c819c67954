"""MUL: the low 32 bits of a product, one lane per memory micro-step.

MUL is micro-stepped like LD, ST and ATOM (the `ismem` flag), so one multiplier
serves the four lanes: partial products, column counts, then a final adder.  Its gates
are placed no earlier than layer L_MEM0 + 1 (n.at_least).
"""

from __future__ import annotations

from .. import circuits as C
from ..circuits import step
from ..layout import L_MEM0
from ..netlist import Netlist, Sig


def build(n: Netlist, Ams: list[Sig], Bms: list[Sig], en: Sig) -> list[Sig]:
    with n.at_least(L_MEM0 + 1):
        return multiplier(n, Ams, Bms, en=en)


def multiplier(n: Netlist, a: list, b: list, en: Sig) -> list[Sig]:
    """Low 32 bits of a*b: partial products, column counts, then a final adder."""
    width = 32
    cols: list[list[Sig]] = [[] for _ in range(width)]
    for i in range(width):
        for j in range(width - i):
            cols[i + j].append(n.and_([a[i], b[j], en], f"pp{i}_{j}"))
    # Compress until every column holds at most two bits.
    level = 0
    while max(len(c) for c in cols) > 2:
        new: list[list[Sig]] = [[] for _ in range(width)]
        for k, col in enumerate(cols):
            h = len(col)
            if h <= 2:
                new[k] += col
                continue
            nb = h.bit_length()
            pairs = [(x, 1) for x in col]
            for d in range(nb):
                if k + d >= width:
                    break
                steps = []
                m = 1
                while m * (1 << d) <= h:
                    steps.append(step(pairs, m * (1 << d), 1 if m % 2 else -1))
                    m += 1
                new[k + d].append(n.gate(steps, f"mc{level}_{k}_{d}"))
        cols = new
        level += 1
    x = [c[0] if len(c) > 0 else (n.ONE, False) for c in cols]
    y = [c[1] if len(c) > 1 else (n.ONE, False) for c in cols]
    return C.add(n, x, y, name="mulsum")
