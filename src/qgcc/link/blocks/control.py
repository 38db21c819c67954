"""Control flow: next lane PCs and liveness, the warp's next minimum PC, and the faults.

Branches are per lane; lanes that diverge keep their own PC and the warp runs the
minimum PC over its live lanes next (the active mask is the lanes at it), which is
how divergent paths reconverge.  The fault checks of a step (out-of-bounds access,
barrier in divergent code, PC or JR target outside the kernel, LDC beyond the
parameters) end in `any_fault`.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..circuits import and_step, neg, step
from ..layout import PCB, W
from ..netlist import Netlist, Sig
from .fetch import Decoded
from .lsu import MemoryAccess
from .regfile import Operands
from .state import State
from .warptable import WarpRow


@dataclass
class ControlFlow:
    npc: list[list[Sig]]  # per lane: next PC
    nlive: list[Sig]  # per lane: still live after this instruction
    nmin: list[Sig]  # the warp's next minimum PC
    nact: list[Sig]  # ... and the lanes at it
    warp_alive: Sig
    behind: list[Sig]  # per lane: live but not active (for the barrier fault's lane)
    bar_div: Sig  # barrier in divergent code
    pc_bad: Sig
    par_bad: Sig
    any_fault: Sig


def build(n: Netlist, st: State, dec: Decoded, row: WarpRow, ops: Operands, mem: MemoryAccess) -> ControlFlow:
    RUN, ENTRY, KEND, NPARAM, op, A = st.RUN, st.ENTRY, st.KEND, st.NPARAM, dec.op, ops.a
    R_PC, R_LIVE, R_MIN, R_ACT, TGT, NXT, OFF = row.pc, row.live, row.min_pc, row.act, dec.bus("tgt"), \
        dec.bus("nxt"), dec.bus("off")
    oob = mem.oob
    zero = [n.threshold([(A[l][i], -1) for i in range(32)], 0, 0, f"zero{l}") for l in range(W)]
    brany = [op["BRA"], op["BRZ"], op["BRNZ"], op["JR"]]
    NPC, NLIVE = [], []
    for l in range(W):
        act, z = R_ACT[l], zero[l]
        pcb = []
        for i in range(PCB):
            pcb.append(n.gate([
                and_step([neg(act), R_PC[l][i]]),
                and_step([act, op["BRA"], TGT[i]]),
                and_step([act, op["BRZ"], z, TGT[i]]), and_step([act, op["BRZ"], neg(z), NXT[i]]),
                and_step([act, op["BRNZ"], neg(z), TGT[i]]), and_step([act, op["BRNZ"], z, NXT[i]]),
                and_step([act, op["JR"], A[l][i]]),
                and_step([act, neg(brany), NXT[i]])], f"npc{l}.{i}"))
        NPC.append(pcb)
        NLIVE.append(n.gate([step([(R_LIVE[l], 2), (neg(act), 1), (neg(op["EXIT"]), 1)], 3)], f"nlive{l}"))
    nmin, nact = min_pc(n, NPC, NLIVE, "n")
    warp_alive = n.or_(NLIVE, "alive")

    # Barrier in divergent code: some live lane is not active.
    behind = [n.and_([R_LIVE[l], neg(R_ACT[l])], f"behind{l}") for l in range(W)]
    bar_div = n.gate([step([(op["BAR"], 8)] + [(x, 1) for x in behind], 9)], "bardiv")
    # PC outside the kernel.
    pc_bad = n.gate([
        step([(neg(R_MIN[i]), 1 << i) for i in range(PCB)] + [(ENTRY[i], 1 << i) for i in range(PCB)]
             + [(RUN, 4096)], 4096 + (1 << PCB)),
        step([(R_MIN[i], 1 << i) for i in range(PCB)] + [(neg(KEND[i]), 1 << i) for i in range(PCB + 1)]
             + [(RUN, 4096)], 4096 + (1 << (PCB + 1)) - 1)], "pcbad")
    # JR to an address outside the kernel (lane by lane): below the entry, at or past
    # the end, or beyond the PC's width.
    jr_bad = []
    for l in range(W):
        on = [(R_ACT[l], 4096), (op["JR"], 4096)]
        jr_bad.append(n.gate([step([(neg(A[l][i]), 1 << i) for i in range(PCB)]
                                   + [(ENTRY[i], 1 << i) for i in range(PCB)] + on, 8192 + (1 << PCB))],
                             f"jrlo{l}"))
        jr_bad.append(n.gate([step([(A[l][i], 1 << i) for i in range(PCB)]
                                   + [(neg(KEND[i]), 1 << i) for i in range(PCB + 1)] + on,
                                   8192 + (1 << (PCB + 1)) - 1)], f"jrhi{l}"))
        jr_bad.append(n.gate([step([(A[l][i], 1) for i in range(PCB, 32)] + [(R_ACT[l], 64), (op["JR"], 64)],
                                   129)], f"jrwide{l}"))
    pc_bad = n.or_([pc_bad, n.and_([RUN, n.or_(jr_bad, "jrbad")], "jrbadrun")], "pcbadany")
    # LDC index beyond the parameters.
    par_bad = _param_bad(n, op["LDC"], OFF, NPARAM)

    any_fault = n.or_([oob, bar_div, pc_bad, par_bad], "anyfault")
    return ControlFlow(NPC, NLIVE, nmin, nact, warp_alive, behind, bar_div, pc_bad, par_bad, any_fault)


def _param_bad(n: Netlist, ldc: Sig, OFF, NPARAM) -> Sig:
    """LDC with an index >= the number of parameters."""
    hi = n.threshold([(x, 1) for x in OFF[7:]], 1, 0, "offhi")
    ge = n.gate([step([(OFF[i], 1 << i) for i in range(7)] + [(neg(NPARAM[i]), 1 << i) for i in range(7)], 127)],
                "offge")
    return n.gate([and_step([ldc, hi]), and_step([ldc, neg(hi), ge])], "parbad")


def min_pc(n: Netlist, pcs: list[list[Sig]], live: list[Sig], name: str):
    """(smallest PC among live lanes, mask of live lanes at it): three levels."""
    Wl = len(pcs)
    le, lt = {}, {}
    for l in range(Wl):
        for j in range(Wl):
            if j == l:
                continue
            diff = [(pcs[j][i], 1 << i) for i in range(PCB)] + [(neg(pcs[l][i]), 1 << i) for i in range(PCB)]
            base = (1 << PCB) - 1  # sum = pc_j - pc_l + base
            dead = [(neg(live[j]), 2048)]
            le[l, j] = n.gate([step(diff + dead, base)], f"{name}le{l}{j}")
            lt[l, j] = n.gate([step(diff + dead, base + 1)], f"{name}lt{l}{j}")
    act = [n.and_([live[l]] + [le[l, j] for j in range(Wl) if j != l], f"{name}act{l}") for l in range(Wl)]
    sel = [n.and_([live[l]] + [lt[l, j] for j in range(l)] + [le[l, j] for j in range(l + 1, Wl)],
                  f"{name}sel{l}") for l in range(Wl)]
    mpc = [n.gate([and_step([sel[l], pcs[l][i]]) for l in range(Wl)], f"{name}min{i}") for i in range(PCB)]
    return mpc, act
