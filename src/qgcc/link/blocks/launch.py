"""Launch bookkeeping: thread indices, blocks and phases.

TIDINIT counts through the threads of a block (one step each, once per launch: every
block has the same shape) and stores every thread's (x, y, z) in the thread-index
tables; BLKINIT writes one warp-table row per warp; RUN executes until the block is
done, then the next block (x, y, z) starts with BLKINIT, or the machine halts after the
last block or on a fault.
Counting is done by the network, in mixed radix, never by the host.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import circuits as C
from ..circuits import and_step, cmp_const_steps, neg
from ..layout import NT_BITS, NWARP, WARP_BITS, W
from ..netlist import Netlist, Sig, Step
from .state import State


@dataclass
class Bookkeeping:
    ncnt: list[Sig]
    ntid: tuple[list[Sig], list[Sig], list[Sig]]  # next thread (x, y, z)
    ncta: tuple[list[Sig], list[Sig], list[Sig]]  # next block (x, y, z)
    nph: dict[str, Sig]  # next phase, one-hot
    nflt: dict[str, Sig]  # fault flags (sticky)
    tid_done: Sig
    blk_done: Sig
    blk_live: list[Sig]  # BLKINIT: live lanes of warp CNT
    ready_init: list[list[Step]]  # BLKINIT: warp w starts ready (w < nw), as steps of the commit's gate


def build(n: Netlist, st: State, block_done: Sig, any_fault: Sig, oob: Sig, bar_div: Sig, pc_bad: Sig,
          par_bad: Sig) -> Bookkeeping:
    RUN, TID, BLK, HALT, FLT, CNT, NT, NW = st.RUN, st.TID, st.BLK, st.HALT, st.FLT, st.CNT, st.NT, st.NW
    TX, TY, TZ, CX, CY, CZ, BX, BY, GX, GY, GZ = st.TX, st.TY, st.TZ, st.CX, st.CY, st.CZ, st.BX, st.BY, \
        st.GX, st.GY, st.GZ
    tid_done = C.eq_plus(n, CNT, 1, NT, "tiddone")
    blk_done = C.eq_plus(n, CNT, 1, NW, "blkdone")
    cnt_inc = C.increment(n, CNT, "cntinc")
    wx, wy = C.eq_plus(n, TX, 1, BX, "wrapx"), C.eq_plus(n, TY, 1, BY, "wrapy")
    tx1, ty1, tz1 = C.increment(n, TX, "tx1"), C.increment(n, TY, "ty1"), C.increment(n, TZ, "tz1")
    cwx, cwy = C.eq_plus(n, CX, 1, GX, "cwrapx"), C.eq_plus(n, CY, 1, GY, "cwrapy")
    cwz = C.eq_plus(n, CZ, 1, GZ, "cwrapz")
    last_block = n.and_([cwx, cwy, cwz], "lastblock")
    cx1, cy1, cz1 = C.increment(n, CX, "cx1"), C.increment(n, CY, "cy1"), C.increment(n, CZ, "cz1")

    def counter3(x, y, z, x1, y1, z1, wrx, wry, active, name):
        """(x,y,z) + 1 in a mixed radix; the unchanged value when not active."""
        nx = [n.gate([and_step([active, neg(wrx), x1[i]]), and_step([neg(active), x[i]])], f"{name}x{i}")
              for i in range(len(x))]
        ny = [n.gate([and_step([active, wrx, neg(wry), y1[i]]), and_step([active, neg(wrx), y[i]]),
                      and_step([neg(active), y[i]])], f"{name}y{i}") for i in range(len(y))]
        nz = [n.gate([and_step([active, wrx, wry, z1[i]]), and_step([active, neg(wrx), z[i]]),
                      and_step([active, wrx, neg(wry), z[i]]), and_step([neg(active), z[i]])], f"{name}z{i}")
              for i in range(len(z))]
        return nx, ny, nz

    ntx, nty, ntz = counter3(TX, TY, TZ, tx1, ty1, tz1, wx, wy, TID, "ntid")
    next_block = n.and_([block_done, neg(last_block), neg(any_fault)], "nextblock")
    ncx, ncy, ncz = counter3(CX, CY, CZ, cx1, cy1, cz1, cwx, cwy, next_block, "ncta")
    ncnt = [n.gate([and_step([TID, neg(tid_done), cnt_inc[i]]), and_step([BLK, neg(blk_done), cnt_inc[i]])],
                   f"ncnt{i}") for i in range(NT_BITS)]
    nph = {
        "tidinit": n.and_([TID, neg(tid_done)], "ph_tid"),
        "blkinit": n.gate([and_step([TID, tid_done]), and_step([BLK, neg(blk_done)]), and_step([next_block])],
                          "ph_blk"),
        "run": n.gate([and_step([BLK, blk_done]), and_step([RUN, neg(block_done), neg(any_fault)])], "ph_run"),
        "halt": n.gate([and_step([HALT]), and_step([RUN, block_done, last_block, neg(any_fault)]),
                        and_step([RUN, any_fault])], "ph_halt"),
    }
    nflt = {
        "oob": n.or_([FLT["oob"], n.and_([RUN, oob], "f_oob")], "nf_oob"),
        "barrier": n.or_([FLT["barrier"], n.and_([RUN, bar_div], "f_bar")], "nf_bar"),
        "pc": n.or_([FLT["pc"], pc_bad], "nf_pc"),
        "param": n.or_([FLT["param"], n.and_([RUN, par_bad], "f_par")], "nf_par"),
    }
    # BLKINIT: the warp-table row of warp CNT.
    # Lane l of warp CNT is live iff 4 CNT + l < NT.
    blk_live = [C.less_than(n, C.const_bits(n, l, 2) + CNT[:WARP_BITS], NT, f"blklive{l}") for l in range(W)]
    # Steps, not gates: folded into the commit's ready gates, they hold no residual dimension
    # through the step (64 of them at 64 warps).
    ready_init = [cmp_const_steps(NW, w + 1, ge=True, extra=[BLK, blk_done]) for w in range(NWARP)]
    return Bookkeeping(ncnt, (ntx, nty, ntz), (ncx, ncy, ncz), nph, nflt, tid_done, blk_done, blk_live, ready_init)
