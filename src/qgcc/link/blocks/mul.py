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


COUNTER = 7  # widest column counter (7 bits -> a 3-bit count)


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
    return sum_columns(n, cols, "mc", "mulsum")


def sum_columns(n: Netlist, cols: list[list], counter: str, sum_name: str, want_carry: bool = False):
    """The sum of weighted bits (cols[k]: the bits of weight 2^k), mod 2^len(cols): column
    counters of at most COUNTER bits (one level per round) until every column holds two
    bits, then the adder.  A counter over h bits fires steps as far as h above their
    thresholds: a 7:3 counter's steps are sums of 7 bits (small rows, a small noise-margin
    cost), where counting a whole column (32 bits here, 48 in FMUL's dense mantissa product)
    broke the machine under relative weight noise of 1e-3.  Shared by MUL and FMUL."""
    width = len(cols)
    level = 0
    while max(len(c) for c in cols) > 2:
        new: list[list] = [[] for _ in range(width)]
        for k, col in enumerate(cols):
            if len(col) <= 2:
                new[k] += col
                continue
            for part, lo in enumerate(range(0, len(col), COUNTER)):
                chunk = col[lo:lo + COUNTER]
                h = len(chunk)
                if h <= 2 and lo:
                    new[k] += chunk
                    continue
                pairs = [(x, 1) for x in chunk]
                for d in range(h.bit_length()):
                    if k + d >= width:
                        break
                    steps, m = [], 1
                    while m * (1 << d) <= h:
                        steps.append(step(pairs, m * (1 << d), 1 if m % 2 else -1))
                        m += 1
                    new[k + d].append(n.gate(steps, f"{counter}{level}_{k}_{part}_{d}"))
        cols = new
        level += 1
    zero = (n.ONE, False)
    x = [c[0] if len(c) > 0 else zero for c in cols]
    y = [c[1] if len(c) > 1 else zero for c in cols]
    return C.add(n, x, y, name=sum_name, want_carry=want_carry)
