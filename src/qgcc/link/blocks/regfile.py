"""The register file: three read ports (rs1, rs2, rd) in the layers `layout.L_REGS` names.

Each port is a full copy of the registers, one DeltaNet head per lane and group of
four warps (4 warps x 32 registers = 128 slots), so the three operands of one
instruction are read in parallel; at 64 warps a copy is 64 heads, four layers.  All
copies take the previous step's pending writeback (wb_*) before they are read.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..circuits import eq_lits
from ..layout import NREG, NWARP, SLOTS, W, reg_head, reg_layer
from ..netlist import Netlist, Sig
from .fetch import Decoded
from .state import State


@dataclass
class Operands:
    a: list[list[Sig]]  # per lane: rs1
    b: list[list[Sig]]  # per lane: rs2
    c: list[list[Sig]]  # per lane: rd (read for CAS)
    b_or_imm: list[list[list[Sig]]]  # per lane, per bit: [rs2 bit, immediate bit] (at most one is set)


def _port(n: Netlist, st: State, heads: dict, port: str, sel: list[Sig], en: Sig) -> list[list[Sig]]:
    outs = []
    per = SLOTS // NREG  # warps per head
    for l in range(W):
        bus = None
        for g in range(NWARP // per):
            layer = reg_layer("ABC".index(port), l, g)
            wk, rk = [], []
            for w4 in range(per):
                w = g * per + w4
                for r in range(NREG):
                    wk.append([(st.WB_EN[l], True)] + eq_lits(st.WB_W, w) + eq_lits(st.WB_RD, r))
                    rk.append([(en, True)] + eq_lits(st.CUR, w) + eq_lits(sel, r))
            name = reg_head("ABC".index(port), l, g)
            bus = n.memory(name, layer, wk, rk, st.WB_VAL[l], outputs=bus)
            heads[name] = (layer, len(n.memories) - 1)
        outs.append(bus)
    return outs


def build(n: Netlist, st: State, dec: Decoded, heads: dict[str, tuple[int, int]]) -> Operands:
    A = _port(n, st, heads, "A", dec.bus("rs1"), dec.flag("rs1en"))
    B = _port(n, st, heads, "B", dec.bus("rs2"), dec.flag("rs2en"))
    Cc = _port(n, st, heads, "C", dec.bus("rd"), dec.flag("rden"))
    # Second ALU operand: the register (read only without an immediate) or the immediate.
    IMMV = dec.restored(n, "immv")
    Bop = [[[B[l][i], IMMV[i]] for i in range(32)] for l in range(W)]
    return Operands(A, B, Cc, Bop)
