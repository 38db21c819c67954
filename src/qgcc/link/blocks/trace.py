"""The trace fields: what the host reads after every step to report it.

The instruction that completed (PC, active mask, warp), the memory access (read
flag, address, lane) and, for a barrier fault, the first lane that is behind.  The
host decodes them by thresholds; it never computes a lane value.
"""

from __future__ import annotations

from ..circuits import and_step, neg
from ..layout import W
from ..netlist import Netlist
from .control import ControlFlow
from .lsu import MemoryAccess
from .state import State
from .warptable import WarpRow


def build(n: Netlist, st: State, row: WarpRow, mem: MemoryAccess, ctl: ControlFlow, complete) -> None:
    RUN, CUR, R_MIN, R_ACT, RDEN, ADDR = st.RUN, st.CUR, row.min_pc, row.act, mem.RDEN, mem.ADDR
    bar_div, behind = ctl.bar_div, ctl.behind
    TR_DONE, TR_PC, TR_ACT, TR_W, TR_LD, TR_ADDR, TR_LANE = st.TR_DONE, st.TR_PC, st.TR_ACT, st.TR_W, st.TR_LD, \
        st.TR_ADDR, st.TR_LANE
    n.output(TR_DONE, n.and_([RUN, complete], "trdone"))
    n.output_bus(TR_PC, [n.copy(x, f"trpc{i}") for i, x in enumerate(R_MIN)])
    n.output_bus(TR_ACT, [n.copy(x, f"tract{i}") for i, x in enumerate(R_ACT)])
    n.output_bus(TR_W, [n.copy(x, f"trw{i}") for i, x in enumerate(CUR)])
    n.output(TR_LD, n.copy(RDEN, "trld"))
    n.output_bus(TR_ADDR, [n.copy(x, f"traddr{i}") for i, x in enumerate(ADDR)])
    n.output_bus(TR_LANE, [n.gate([and_step([neg(bar_div), mem.sel[l]]) for l in range(W) if (l >> i) & 1] +
                                  [and_step([bar_div, behind[l]] + [neg(behind[j]) for j in range(l)])
                                   for l in range(W) if (l >> i) & 1], f"trlane{i}") for i in range(2)])
