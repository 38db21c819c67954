"""The next state: every state field's new value, wired as the netlist's step outputs.

The linker copies each output into its input's residual dimensions by the last
layer, so the residual leaving the network is the next step's input.  Pending
writes (register writeback, memory write, warp-table row) are outputs too: the
memories commit them at the start of the next step.
"""

from __future__ import annotations

from .. import circuits as C
from ..circuits import and_step, neg
from ..layout import FAULTS, NWARP, PHASES, WARP_BITS, W
from ..netlist import Netlist
from .control import ControlFlow
from .fetch import Decoded
from .launch import Bookkeeping
from .lsu import MemoryAccess
from .scheduler import Schedule
from .state import State
from .writeback import Writeback


def build(n: Netlist, st: State, dec: Decoded, mem: MemoryAccess, wb: Writeback, ctl: ControlFlow,
          sch: Schedule, lb: Bookkeeping) -> None:
    RUN, BLK, CNT, CUR, MS, ENTRY, PH, FLT = st.RUN, st.BLK, st.CNT, st.CUR, st.MS, st.ENTRY, st.PH, st.FLT
    R, op, RD, complete, any_fault, block_done = dec.flag, dec.op, dec.bus("rd"), wb.complete, ctl.any_fault, \
        sch.block_done
    nph, nflt, ncnt, blk_done, blk_live, ready_init = lb.nph, lb.nflt, lb.ncnt, lb.blk_done, lb.blk_live, lb.ready_init
    (ntx, nty, ntz), (ncx, ncy, ncz) = lb.ntid, lb.ncta
    NEXTCUR, R2, W2 = sch.next_cur, sch.ready, sch.waiting  # R2, W2: literal cases (scheduler.Schedule)
    new_wb_en, new_wb_val = wb.enable, wb.value
    memop, valid, IDX, rails = mem.memop, mem.valid, mem.IDX, mem.rails
    NPC, NLIVE, nmin, nact = ctl.npc, ctl.nlive, ctl.nmin, ctl.nact
    TX, TY, TZ, CX, CY, CZ, READY, WAIT = st.TX, st.TY, st.TZ, st.CX, st.CY, st.CZ, st.READY, st.WAIT
    WB_EN, WB_W, WB_RD, WB_VAL, MW_EN, MW_IDX, MW_VAL = st.WB_EN, st.WB_W, st.WB_RD, st.WB_VAL, st.MW_EN, \
        st.MW_IDX, st.MW_VAL
    WT_EN, WT_W, WT_PC, WT_LIVE, WT_MIN, WT_ACT = st.WT_EN, st.WT_W, st.WT_PC, st.WT_LIVE, st.WT_MIN, st.WT_ACT
    run_ok = n.and_([RUN, neg(any_fault)], "runok")
    n.output_bus(list(PH.values()), [nph[p] for p in PHASES])
    n.output_bus(list(FLT.values()), [nflt[f_] for f_ in FAULTS])
    n.output_bus(CNT, ncnt)
    n.output_bus(TX, ntx)
    n.output_bus(TY, nty)
    n.output_bus(TZ, ntz)
    n.output_bus(CX, ncx)
    n.output_bus(CY, ncy)
    n.output_bus(CZ, ncz)
    # The ready and waiting masks (2 x 64 bits) are computed just in time, after the memory
    # read: computed as soon as their inputs allow, they held their residual dimensions
    # through the memory layers and the float unit.
    with n.not_before(mem.MEMOUT[0]):
        n.output_bus(CUR, [n.and_([run_ok, neg(block_done), x], f"ncur{i}") for i, x in enumerate(NEXTCUR)])
        n.output_bus(READY, [n.gate([and_step([run_ok] + case) for case in R2[w]] + ready_init[w], f"nready{w}")
                             for w in range(NWARP)])
        n.output_bus(WAIT, [n.and_([run_ok] + W2[w], f"nwait{w}") for w in range(NWARP)])
    n.output_bus(st.CLK, C.increment_if(n, st.CLK, n.and_([run_ok, complete], "clktick"), "nclk"))
    # The next micro-step resumes its lane scan after the lane served now (lsu: `sel`).
    n.output_bus(MS, [n.gate([and_step([run_ok, R("ismem"), neg(complete), mem.sel[l]])
                              for l in range(W - 1) if ((l + 1) >> i) & 1], f"nms{i}") for i in range(len(MS))])
    n.output_bus(WB_EN, [n.and_([run_ok, new_wb_en[l]], f"nwben{l}") for l in range(W)])
    n.output_bus(WB_W, [n.copy(x, f"nwbw{i}") for i, x in enumerate(CUR)])
    n.output_bus(WB_RD, [n.copy(x, f"nwbrd{i}") for i, x in enumerate(RD)])
    for l in range(W):
        n.output_bus(WB_VAL[l], new_wb_val[l])
    mwen = n.gate([and_step([run_ok, memop, valid, [op["ST"], op["ATOM"]]])], "nmwen")
    n.output(MW_EN, mwen)
    n.output_bus(MW_IDX, IDX[1:])  # the slot: the row replaces both of its words
    n.output_bus(MW_VAL, rails)
    n.output(WT_EN, n.gate([and_step([run_ok, complete]), and_step([BLK])], "nwten"))
    n.output_bus(WT_W, [n.gate([and_step([RUN, CUR[i]]), and_step([BLK, CNT[i]])], f"nwtw{i}") for i in range(WARP_BITS)])
    for l in range(W):
        n.output_bus(WT_PC[l], [n.gate([and_step([RUN, NPC[l][i]]), and_step([BLK, ENTRY[i]])], f"nwtpc{l}.{i}")
                                for i in range(st.pc_bits)])
    n.output_bus(WT_LIVE, [n.gate([and_step([RUN, NLIVE[l]]), and_step([BLK, blk_live[l]])], f"nwtlive{l}")
                           for l in range(W)])
    n.output_bus(WT_MIN, [n.gate([and_step([RUN, nmin[i]]), and_step([BLK, ENTRY[i]])], f"nwtmin{i}")
                          for i in range(st.pc_bits)])
    n.output_bus(WT_ACT, [n.gate([and_step([RUN, nact[l]]), and_step([BLK, blk_live[l]])], f"nwtact{l}")
                          for l in range(W)])
