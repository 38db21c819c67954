"""The warp table (layer 0) and the thread-index tables (layer L_PARAM), read for the current warp.

Per warp one row: the four lane PCs, the live lanes, the minimum PC over live lanes
and the active mask (the lanes at that PC).  The thread-index tables hold each
thread's (x, y, z), written by BLKINIT (one warp's four lanes per step), so threadIdx costs
no arithmetic at run time.  They sit beside the parameter bank, not in layer 0: a bus read
in layer 0 holds its residual dimensions for the whole step (96 at 8-bit indices), and
S2R's thread index is only needed at writeback.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..circuits import eq_lits
from ..layout import L_PARAM, L_WARP, NWARP, WARP_BITS, W
from ..netlist import Netlist, Sig
from .state import State


@dataclass
class WarpRow:
    pc: list[list[Sig]]  # per lane
    live: list[Sig]
    min_pc: list[Sig]
    act: list[Sig]
    tid: list[list[Sig]]  # per lane: tx (TID_BITS bits), ty, tz


def build(n: Netlist, st: State, heads: dict[str, tuple[int, int]], lane_tid: list[list[Sig]]) -> WarpRow:
    """`lane_tid[l]`: lane l's (x, y, z) of the warp BLKINIT initialises (launch.thread_indices)."""
    RUN, BLK, CUR, CNT = st.RUN, st.BLK, st.CUR, st.CNT
    row_in = [b for l in range(W) for b in st.WT_PC[l]] + st.WT_LIVE + st.WT_MIN + st.WT_ACT
    wt_write = [[(st.WT_EN, True)] + eq_lits(st.WT_W, w) for w in range(NWARP)]
    wt_read = [[(RUN, True)] + eq_lits(CUR, w) for w in range(NWARP)]
    row = n.memory("warptable", L_WARP, wt_write, wt_read, row_in)
    PCB = st.pc_bits
    heads["warptable"] = (L_WARP, len(n.memories) - 1)
    R_PC = [row[l * PCB:(l + 1) * PCB] for l in range(W)]
    o = W * PCB
    R_LIVE, R_MIN, R_ACT = row[o:o + W], row[o + W:o + W + PCB], row[o + W + PCB:o + 2 * W + PCB]
    TIDL = []
    for l in range(W):
        wk = [[(BLK, True)] + eq_lits(CNT[:WARP_BITS], s) for s in range(NWARP)]
        rk = [[(RUN, True)] + eq_lits(CUR, s) for s in range(NWARP)]
        TIDL.append(n.memory(f"tid{l}", L_PARAM, wk, rk, lane_tid[l]))
        heads[f"tid{l}"] = (L_PARAM, len(n.memories) - 1)
    return WarpRow(R_PC, R_LIVE, R_MIN, R_ACT, TIDL)
