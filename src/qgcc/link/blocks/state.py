"""The residual state: every field a step reads and the next step's input gets back.

Launch constants are set once by the host and never written; the dynamic fields
carry the phase, the counters, the scheduler summary (current warp, ready and
waiting masks) and the *pending writes* of the previous step (register writeback,
memory write, warp-table row); trace fields are written every step for the host
to read.  Field names and widths are the protocol (docs/protocol.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..layout import (FAULTS, GLOBAL_CELLS, NT_BITS, NW_BITS, NWARP, PHASES, ROW_RAILS, SHARED_CELLS, SLOT_IDX_BITS,
                      TID_BITS, WARP_BITS, W)
from ..netlist import Netlist, Sig


@dataclass
class State:
    """The state fields by name (`fields`, the linker's map) and as attributes for the blocks
    (st.CUR, st.WB_VAL[lane], st.PH["run"], ...), set by declare_state."""

    fields: dict[str, list[Sig]] = field(default_factory=dict)  # every field, in declaration order
    pc_bits: int = 0  # the width of every PC field (layout.pc_bits of the program's length)


def declare_state(n: Netlist, pc_bits: int) -> State:
    st = State(pc_bits=pc_bits)
    PCB = pc_bits
    F = st.fields

    def fld(name: str, width: int) -> list[Sig]:
        F[name] = n.inputs_bus(name, width)
        return F[name]

    # ---- launch constants (set once by the host, never written) ----
    st.BX, st.BY, st.BZ = fld("bx", NT_BITS), fld("by", NT_BITS), fld("bz", NT_BITS)
    st.GX, st.GY, st.GZ = fld("gx", 16), fld("gy", 16), fld("gz", 16)
    st.NT, st.NW = fld("nt", NT_BITS), fld("nw", NW_BITS)
    st.GSIZE, st.SHW, st.NPARAM = fld("gsize", GLOBAL_CELLS.bit_length()), fld("shw", SHARED_CELLS.bit_length()), fld("nparam", 7)
    st.ENTRY, st.KEND = fld("entry", PCB), fld("kend", PCB + 1)
    # ---- dynamic state ----
    st.PH = dict(zip(PHASES, fld("phase", len(PHASES))))
    st.FLT = dict(zip(FAULTS, fld("fault", 4)))
    st.CNT = fld("cnt", NW_BITS)  # BLKINIT: the warp
    st.TX, st.TY, st.TZ = fld("tx", TID_BITS), fld("ty", TID_BITS), fld("tz", TID_BITS)  # BLKINIT: warp CNT's lane 0
    st.CX, st.CY, st.CZ = fld("ctax", 16), fld("ctay", 16), fld("ctaz", 16)
    st.CUR = fld("cur", WARP_BITS)
    st.READY, st.WAIT = fld("ready", NWARP), fld("wait", NWARP)
    st.MS = fld("ms", 2)
    st.CLK = fld("clk", 32)  # warp instructions completed in the launch (S2R %clock)
    st.WB_EN, st.WB_W, st.WB_RD = fld("wb_en", W), fld("wb_w", WARP_BITS), fld("wb_rd", 5)
    st.WB_VAL = [fld(f"wb_val{l}", 32) for l in range(W)]
    # The pending memory write is a whole slot: its index and its row's one-hot rails.
    # (The rails are four fields of 32, so that the host decodes each as a 64-bit integer.)
    st.MW_EN, st.MW_IDX = fld("mw_en", 1)[0], fld("mw_slot", SLOT_IDX_BITS)
    st.MW_VAL = [x for k in range(ROW_RAILS // 32) for x in fld(f"mw_row{k}", 32)]
    st.WT_EN, st.WT_W = fld("wt_en", 1)[0], fld("wt_w", WARP_BITS)
    st.WT_PC = [fld(f"wt_pc{l}", PCB) for l in range(W)]
    st.WT_LIVE, st.WT_MIN, st.WT_ACT = fld("wt_live", W), fld("wt_min", PCB), fld("wt_act", W)
    # ---- trace fields (written every step, read by the host) ----
    st.TR_DONE = fld("tr_done", 1)[0]  # an instruction completed this step
    st.TR_PC, st.TR_ACT, st.TR_W = fld("tr_pc", PCB), fld("tr_act", W), fld("tr_w", WARP_BITS)
    st.TR_LD = fld("tr_ld", 1)[0]
    st.TR_ADDR = fld("tr_addr", 32)
    st.TR_LANE = fld("tr_lane", 2)
    st.RUN, st.BLK, st.HALT = st.PH["run"], st.PH["blkinit"], st.PH["halt"]
    return st
