"""Control flow: next lane PCs and liveness, the warp's next minimum PC, and the faults.

Branches are per lane; lanes that diverge keep their own PC and the warp runs the
minimum PC over its live lanes next (the active mask is the lanes at it), which is
how divergent paths reconverge.  The fault checks of a step (out-of-bounds access,
barrier in divergent code, PC or JR target outside the kernel, LDC beyond the
parameters) end in `any_fault`.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import circuits as C
from ..circuits import and_step, neg, step
from ..layout import W
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
    PCB = st.pc_bits
    R_PC, R_LIVE, R_MIN, R_ACT, TGT, NXT, OFF = row.pc, row.live, row.min_pc, row.act, dec.bus("tgt"), \
        dec.bus("nxt"), dec.restored(n, "off")
    oob = mem.oob
    # A branch operand is zero: NORs of 8 bits, then their AND (short rows: noise margin).
    zero = [n.and_([n.threshold([(A[l][i], -1) for i in range(j, j + 8)], 0, 0, f"zero{l}.{j // 8}")
                    for j in range(0, 32, 8)], f"zero{l}") for l in range(W)]
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
    bar_div = n.gate([step([(dec.restored_flag(n, "op_BAR"), 8)] + [(x, 1) for x in behind], 9)], "bardiv")
    # PC outside the kernel: below the entry or at/after the end (digit comparisons: no step
    # carries a large weight, the enables are AND literals).
    pc_lo = C.less_than(n, R_MIN, ENTRY, "pclo", extra=[RUN])
    pc_hi = C.at_least(n, R_MIN, KEND, "pchi", extra=[RUN])
    # JR to an address outside the kernel (lane by lane): below the entry, at or past
    # the end, or beyond the PC's width.
    jr_bad = []
    for l in range(W):
        on = [RUN, R_ACT[l], op["JR"]]
        tgt = A[l][:PCB]
        jr_bad.append(C.less_than(n, tgt, ENTRY, f"jrlo{l}", extra=on))
        jr_bad.append(C.at_least(n, tgt, KEND, f"jrhi{l}", extra=on))
        wide = n.threshold([(A[l][i], 1) for i in range(PCB, 32)], 1, 0, f"jrwide{l}.any")
        jr_bad.append(n.and_(on + [wide], f"jrwide{l}"))
    pc_bad = n.or_([pc_lo, pc_hi] + jr_bad, "pcbadany")
    # LDC index beyond the parameters.
    par_bad = _param_bad(n, op["LDC"], OFF, NPARAM)

    any_fault = n.or_([oob, bar_div, pc_bad, par_bad], "anyfault")
    return ControlFlow(NPC, NLIVE, nmin, nact, warp_alive, behind, bar_div, pc_bad, par_bad, any_fault)


def _param_bad(n: Netlist, ldc: Sig, OFF, NPARAM) -> Sig:
    """LDC with an index >= the number of parameters."""
    hi = C.any_of(n, OFF[7:], "offhi", flat=8, group=8)  # narrow ORs: see xlane's vnz
    gt, eq = C.digit_compare(n, OFF[:7], NPARAM, "offge")
    return n.gate([and_step([ldc, hi])] + C.greater_steps(gt, eq, True, [ldc, neg(hi)]), "parbad")


def min_pc(n: Netlist, pcs: list[list[Sig]], live: list[Sig], name: str):
    """(smallest PC among live lanes, mask of live lanes at it): three levels."""
    Wl = len(pcs)
    le, lt = {}, {}
    for l in range(Wl):
        for j in range(Wl):
            if j == l:
                continue
            # pc_l <= pc_j (or < for lt), or lane j is dead: exclusive AND steps over digits.
            gt, eq = C.digit_compare(n, pcs[j], pcs[l], f"{name}d{l}{j}")
            dead = and_step([neg(live[j])])
            le[l, j] = n.gate([dead] + C.greater_steps(gt, eq, True, [live[j]]), f"{name}le{l}{j}")
            lt[l, j] = n.gate([dead] + C.greater_steps(gt, eq, False, [live[j]]), f"{name}lt{l}{j}")
    act = [n.and_([live[l]] + [le[l, j] for j in range(Wl) if j != l], f"{name}act{l}") for l in range(Wl)]
    sel = [n.and_([live[l]] + [lt[l, j] for j in range(l)] + [le[l, j] for j in range(l + 1, Wl)],
                  f"{name}sel{l}") for l in range(Wl)]
    mpc = [n.gate([and_step([sel[l], pcs[l][i]]) for l in range(Wl)], f"{name}min{i}") for i in range(len(pcs[0]))]
    return mpc, act
