"""The kernel-parameter bank (layer L_PARAM, after the memory): LDC reads parameter word OFF.

Never written by the network: the host seeds its recurrent state with the launch's
parameter words, so the write side is a placeholder.
"""

from __future__ import annotations

from ..circuits import eq_lits
from ..layout import L_PARAM
from ..netlist import Netlist, Sig
from .fetch import Decoded
from .state import State


def build(n: Netlist, st: State, dec: Decoded, heads: dict[str, tuple[int, int]]) -> list[Sig]:
    OFF = dec.restored(n, "off")
    pk = [[(dec.flag("op_LDC"), True)] + eq_lits(OFF[:6], j) + [(b, False) for b in OFF[6:]] for j in range(64)]
    const = n.memory("params", L_PARAM, [[] for _ in range(64)], pk, st.WB_VAL[0])
    heads["params"] = (L_PARAM, len(n.memories) - 1)
    return const
