"""Writeback: which lanes write rd this step, and the value each writes.

ALU-class instructions (SHFL/VOTE among them: qgcc.link.blocks.xlane feeds the ALU's result) write
every active lane at once; micro-stepped ones (LD,
ATOM, MUL, the float unit's) write the micro-step's lane (lsu: `sel`).  The write is not done here: it
becomes the pending writeback (wb_*) that every register-file copy commits at the
start of the next step.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..circuits import and_step, neg, step
from ..layout import TID_BITS, W
from ..netlist import Netlist, Sig, Step
from .fetch import Decoded
from .lsu import MemoryAccess
from .state import State
from .warptable import WarpRow


@dataclass
class Writeback:
    complete: Sig  # the instruction finishes this step (always, or in its last micro-step)
    value: list[list[Sig]]  # per lane: the 32-bit value to write
    enable: list[Sig]  # per lane


def build(n: Netlist, st: State, dec: Decoded, row: WarpRow, RES: list[list[Sig]], mem: MemoryAccess,
          prod: list[Sig], CONST: list[Sig], fres: list[Sig] | None = None) -> Writeback:
    RUN, R, op, R_ACT, ldatom, MEMOUT = st.RUN, dec.flag, dec.op, row.act, mem.ldatom, mem.MEMOUT
    complete = n.gate([and_step([neg(R("ismem"))]), and_step([R("ismem"), mem.last])], "complete")
    # threadIdx and LDC's parameter word join here, not in the ALU's result: the thread-index
    # tables and the parameter bank are read late (layer L_PARAM, after the register file),
    # and the ALU's words in flight need not wait for them.
    tid = {d: [row.tid[l][k * TID_BITS:(k + 1) * TID_BITS] for l in range(W)] for k, d in enumerate("XYZ")}

    def early(l: int, i: int) -> list[Step]:
        return [step([(RES[l][i], 1)], 1), *mem.read_steps(i, [ldatom]), and_step([op["LDC"], CONST[i]])] + \
            [and_step([R(f"sreg_TID_{d}"), tid[d][l][i]]) for d in "XYZ" if i < TID_BITS]

    if fres is None:
        new_wb_val = [[n.gate(early(l, i) + [and_step([op["MUL"], prod[i]])], f"wbv{l}.{i}") for i in range(32)]
                      for l in range(W)]
    else:
        # A float program's result comes late: every other source is merged first, so that the
        # ALU's words, the thread indices and the parameter word do not hold 4 x 32 residual
        # dimensions each while the float unit runs.
        part = [[n.gate(early(l, i), f"wbp{l}.{i}") for i in range(32)] for l in range(W)]
        new_wb_val = [[n.gate([step([(part[l][i], 1)], 1), and_step([op["MUL"], prod[i]]),
                               step([(fres[i], 1)], 1)], f"wbv{l}.{i}") for i in range(32)] for l in range(W)]
    # Lane writes: ALU-like instructions write every active lane; micro-stepped ones the micro-step's.
    new_wb_en = []
    for l in range(W):
        new_wb_en.append(n.gate([
            and_step([RUN, R("wrd"), neg(R("ismem")), R_ACT[l]]),
            and_step([RUN, R("wrd"), R("ismem"), mem.sel[l]])], f"wb_en{l}"))
    return Writeback(complete, new_wb_val, new_wb_en)
