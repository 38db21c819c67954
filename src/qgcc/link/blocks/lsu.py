"""The load/store unit: global and shared memory (17 layers after the register file), bounds
checks, atomics.

LD, ST and ATOM take one micro-step per active lane, in lane order: `ms` is where the
scan resumes, and the micro-step serves the lowest active lane at or above it (`sel`), so
inactive lanes (divergent code, a partial warp's dead lanes) cost no step.  The lane's
address is selected, every memory head reads the slot at it (both of its words), and the
row to write becomes the pending memory write that the next step commits before it reads.
Two 32-bit cells per DeltaNet slot, in one-hot groups of four rails (layout.row_rails),
so a store or an atomic is a read-modify-write of the slot: the new word (the store
operand, or the atomic's result) and the other word just read make the row's rails.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...isa import AtomOp
from ...qwen35 import QWEN35_2B as qwen
from .. import circuits as C
from ..circuits import and_step, eq_lits, neg, step
from ..layout import (CELLS_PER_HEAD, CELLS_PER_LAYER, G_ADDR_BITS, GLOBAL_CELLS, L_MEM0, N_MEM_LAYERS,
                      S_ADDR_BITS, SHARED_BIT, SHARED_CELLS, SLOTS, W, WORDS_PER_SLOT)
from ..netlist import ONEHOT4_RAILS
from ..netlist import Netlist, Sig
from .fetch import Decoded
from .regfile import Operands
from .state import State
from .warptable import WarpRow


@dataclass
class MemoryAccess:
    sel: list[Sig]  # one-hot: the micro-step's lane (the lowest active lane at or above ms)
    last: Sig  # ... and no active lane follows it: the instruction's last micro-step
    Ams: list[Sig]  # the micro-step lane's rs1
    Bms: list[Sig]  # ... its second operand
    Cms: list[Sig]  # ... its rd (ATOM.CAS's new value, FFMA's addend)
    ADDR: list[Sig]  # rs1 + offset
    ldatom: list[Sig]  # [LD, ATOM] flags: the instructions that write back a read value
    RDEN: Sig  # a memory read happens this step
    MEMOUT: list[Sig]  # the cell read
    ROW: list[Sig]  # the slot read: word 0's 32 bits, then word 1's
    WORD: Sig  # which word of the slot the address names (its bit 0)
    valid: Sig  # the address is inside global or shared memory
    memop: Sig  # an active lane's LD, ST or ATOM this step
    oob: Sig  # ... at an invalid address
    IDX: list[Sig]  # memory index of the cell (global cell, or GLOBAL_CELLS + shared offset)
    newv: list[Sig]  # the value to write: store operand or atomic result
    rails: list[Sig]  # the row to write: newv as word WORD, the other word as read

    def read_steps(self, i: int, lits: list) -> list:
        """Steps that give bit i of the cell read (AND `lits`) straight from the slot read,
        without waiting for MEMOUT's select gate."""
        return [and_step(lits + [neg(self.WORD), self.ROW[i]]), and_step(lits + [self.WORD, self.ROW[32 + i]])]


def build(n: Netlist, st: State, dec: Decoded, ops: Operands, row: WarpRow,
          heads: dict[str, tuple[int, int]]) -> MemoryAccess:
    MS, A, Bop, Cc, R_ACT, op, R, OFF = st.MS, ops.a, ops.b_or_imm, ops.c, row.act, dec.op, dec.flag, \
        dec.restored(n, "off")
    MW_EN, MW_IDX, MW_VAL, GSIZE, SHW = st.MW_EN, st.MW_IDX, st.MW_VAL, st.GSIZE, st.SHW
    sel = [n.gate([and_step(eq_lits(MS, m) + [R_ACT[l]] + [neg(R_ACT[j]) for j in range(m, l)])
                   for m in range(l + 1)], f"mslane{l}") for l in range(W)]
    last = n.gate([and_step([sel[l]] + [neg(R_ACT[j]) for j in range(l + 1, W)]) for l in range(W)], "mslast")
    Ams = [n.gate([and_step([sel[l], A[l][i]]) for l in range(W)], f"Ams{i}") for i in range(32)]
    # The sum bits are restored before the range checks and the decoders read them: an OR of
    # 14 of them (hizero) or a compare's digits would otherwise add their level errors
    # (bench/margin_static.py).
    ADDR = [n.copy(x, f"addrr{i}") for i, x in enumerate(C.add(n, Ams, OFF, name="addr"))]
    ldatom = [op["LD"], op["ATOM"]]
    act_ms = n.or_(sel, "act_ms")
    # Stores read too: the slot's other word goes back into the row they write.
    RDEN = n.gate([and_step([act_ms, [op["LD"], op["ST"], op["ATOM"]]])], "rden")
    # Global cell index = ADDR[0:G_ADDR_BITS]; shared offset = ADDR[0:S_ADDR_BITS] when SHARED_BIT is
    # set.  Bit 0 picks the word; the slot is the bits above it.
    G, S, SB = G_ADDR_BITS, S_ADDR_BITS, SHARED_BIT
    assert WORDS_PER_SLOT == 2
    ROW = None
    for m in range(N_MEM_LAYERS):
        layer = L_MEM0 + m
        for h in range(qwen.linear_heads):
            base = m * CELLS_PER_LAYER + h * CELLS_PER_HEAD
            if base >= GLOBAL_CELLS + SHARED_CELLS:
                break
            wk, rk = [], []
            for s in range(SLOTS):
                idx = base + WORDS_PER_SLOT * s  # the slot's first cell
                wk.append([(MW_EN, True)] + eq_lits(MW_IDX, idx // WORDS_PER_SLOT))
                if idx < GLOBAL_CELLS:
                    rk.append([(RDEN, True), (ADDR[SB], False)] + eq_lits(ADDR[1:G], idx // WORDS_PER_SLOT))
                else:
                    rk.append([(RDEN, True), (ADDR[SB], True)]
                              + eq_lits(ADDR[1:S], (idx - GLOBAL_CELLS) // WORDS_PER_SLOT))
            ROW = n.memory(f"mem.l{layer}.h{h}", layer, wk, rk, MW_VAL, outputs=ROW, encoding="onehot4")
            heads[f"mem.l{layer}.h{h}"] = (layer, len(n.memories) - 1)
    WORD = ADDR[0]
    MEMOUT = [n.gate([and_step([neg(WORD), ROW[i]]), and_step([WORD, ROW[32 + i]])], f"memout{i}")
              for i in range(32)]

    # Bounds: global needs ADDR < GSIZE with bits G.. zero; shared needs bit SB and offset < SHW.
    hi = n.threshold([(ADDR[i], -1) for i in range(SB + 1, 32)], 0, 0, "hizero")
    # (With GLOBAL_CELLS == shared_base no bit lies between the global index and SHARED_BIT.)
    zg = [n.threshold([(ADDR[i], -1) for i in range(G, SB)], 0, 0, "zglobal")] if G < SB else []
    zs = n.threshold([(ADDR[i], -1) for i in range(S, SB)], 0, 0, "zshared")
    ltg = C.less_than(n, ADDR[:G], GSIZE, "ltg")
    lts = C.less_than(n, ADDR[:S], SHW, "lts")
    valid = n.gate([and_step([hi, neg(ADDR[SB])] + zg + [ltg]), and_step([hi, ADDR[SB], zs, lts])], "valid")
    memop = n.gate([and_step([act_ms, [op["LD"], op["ST"], op["ATOM"]]])], "memop")
    oob = n.gate([and_step([memop, neg(valid)])], "oob")
    IDX = [n.gate([and_step([neg(ADDR[SB]), ADDR[i]])] + ([and_step([ADDR[SB], ADDR[i]])] if i < S else []),
                  f"IDX{i}") for i in range(G)] + [n.copy(ADDR[SB], f"IDX{G}")]

    # The micro-step lane's operands for stores, atomics, MUL and the float unit.
    Bms = [n.gate([and_step([sel[l], Bop[l][i]]) for l in range(W)], f"Bms{i}") for i in range(32)]
    Cms = [n.gate([and_step([sel[l], Cc[l][i]]) for l in range(W)], f"Cms{i}") for i in range(32)]
    # Atomic read-modify-write on the value just read.
    # OR and XOR weight their flag by 2, and C.gated weights ATOM by 2: restored copies
    # (Decoded.restored), made after the read, so that they hold no residual dimension
    # through the memory and the float unit.
    with n.not_before(MEMOUT[0]):
        at = {a_.name: dec.restored_flag(n, f"atom_{a_.name}") if a_.name in ("OR", "XOR")
              else R(f"atom_{a_.name}") for a_ in AtomOp}
        isat = dec.restored_flag(n, "op_ATOM")
    en_atadd = n.and_([isat, at["ADD"]], "en_atadd")
    nadd = C.add(n, MEMOUT, Bms, name="atadd")
    geu, equ = C.compare(n, MEMOUT, Bms, name="atcmpu")
    ges, _ = C.compare(n, MEMOUT[:31] + [neg(MEMOUT[31])], Bms[:31] + [neg(Bms[31])], name="atcmps")
    newv = []
    for i in range(32):
        m_, b_ = MEMOUT[i], Bms[i]
        st = [
            and_step([at["MIN"], ges, b_]), and_step([at["MIN"], neg(ges), m_]),
            and_step([at["MAX"], ges, m_]), and_step([at["MAX"], neg(ges), b_]),
            and_step([at["MINU"], geu, b_]), and_step([at["MINU"], neg(geu), m_]),
            and_step([at["MAXU"], geu, m_]), and_step([at["MAXU"], neg(geu), b_]),
            and_step([at["EXCH"], b_]),
            and_step([at["CAS"], equ, Cms[i]]), and_step([at["CAS"], neg(equ), m_]),
            and_step([at["AND"], m_, b_]),
            step([(at["OR"], 2), (m_, 1), (b_, 1)], 3),
            step([(at["XOR"], 2), (m_, 1), (b_, 1)], 3), step([(at["XOR"], 2), (m_, 1), (b_, 1)], 4, -1),
        ]
        newv.append(n.gate([C.gated(s_, isat) for s_ in st] + [and_step([op["ST"], b_])]
                           + [and_step([en_atadd, nadd[i]])], f"newv{i}"))
    # The row's rails: rail c of group i is set when (bit i of word 0, of word 1) is (c & 1, c >> 1);
    # the addressed word's bit is newv's, the other word's is the slot's as read.
    rails = []
    for i in range(32):
        for c in range(4):
            b = [c & 1, c >> 1]

            def lit(x, want):
                return x if want else neg(x)
            rails.append(n.gate([and_step([neg(WORD), lit(newv[i], b[0]), lit(ROW[32 + i], b[1])]),
                                 and_step([WORD, lit(ROW[i], b[0]), lit(newv[i], b[1])])], f"rail{i}.{c}"))
    assert all(c in (1, 3) for c in ONEHOT4_RAILS[0]) and all(c in (2, 3) for c in ONEHOT4_RAILS[1])
    return MemoryAccess(sel, last, Ams, Bms, Cms, ADDR, ldatom, RDEN, MEMOUT, ROW, WORD, valid, memop, oob, IDX, newv, rails)

