"""The lane-crossing unit: SHFL (each lane reads another lane's rs1) and VOTE (over the lanes' rs1).

After the register reads, all four lanes' rs1 words are in the residual side by side,
so a shuffle is a per-bit four-way multiplexer: for each destination lane l and
source lane j, one gate decides `sel[l][j]` from the lane's operand (its low two
bits), the mode and width flags of the ROM and the active mask, following
qgcc.isa.shfl_source; then each result bit is one gate over `sel[l][j] AND
rs1[j][bit]`.  A source lane that is inactive or out of range selects the lane's
own rs1; the result bits are steps of the ALU's result gate.  A vote is a few gates over the lanes' predicates (rs1 != 0), the active
mask and the lane's own mask operand; __match_any compares the lanes' words
pairwise.  Every output is 0 unless a SHFL or VOTE is decoded, so the writeback
ORs it in.
"""

from __future__ import annotations

from dataclasses import dataclass

from ... import isa
from ...isa import Op, ShflMode, VoteMode
from ...program import Program
from .. import circuits as C
from ..circuits import and_step, eq_lits, neg, step
from ..layout import W
from ..netlist import Netlist, Sig
from .fetch import Decoded
from .regfile import Operands
from .warptable import WarpRow


@dataclass
class XLane:
    """The unit's outputs, folded into the ALU's result multiplexer (qgcc.link.blocks.alu):
    the shuffle's last level costs no gate and no 128 residual dimensions of its own, which
    a program that also multiplies floats needs (the multiplier's array fills the residual)."""

    sel: list[list[Sig]]  # sel[l][j]: lane l takes lane j's rs1 (one-hot under SHFL, else all zero)
    vote: list[list[Sig]]  # vote[l][i]: bit i < 4 of lane l's VOTE result (zero otherwise)
    A: list[list]  # the lanes' rs1 words

    def steps(self, lane: int, bit: int) -> list:
        """Exclusive steps whose sum is bit `bit` of lane `lane`'s SHFL/VOTE result."""
        st = [and_step([self.sel[lane][j], self.A[j][bit]]) for j in range(W)]
        if bit < W:
            st.append(step([(self.vote[lane][bit], 1)], 1))
        return st


def used(program: Program) -> bool:
    """The unit is linked only into programs with a SHFL or VOTE (others link as before)."""
    return any(ins.op in (Op.SHFL, Op.VOTE) for ins in program.code)


def build(n: Netlist, dec: Decoded, ops: Operands, row: WarpRow) -> XLane:
    R, A, Bop, act = dec.flag, ops.a, ops.b_or_imm, row.act
    sel = [_shfl_select(n, R, Bop[l][:2], act, l) for l in range(W)]
    # ANY and ALL weight their flag by W: restored copies (Decoded.restored).
    weighted = {m: dec.restored_flag(n, f"vote_{m.name}") for m in (VoteMode.ANY, VoteMode.ALL)}
    return XLane(sel, _vote(n, R, A, Bop, act, weighted), A)


def _shfl_select(n: Netlist, R, b2: list, act: list[Sig], lane: int) -> list[Sig]:
    """sel[j]: lane `lane` takes lane j's rs1 (one-hot under SHFL, all zero otherwise)."""
    steps: list[list] = [[] for _ in range(W)]
    for mode in ShflMode:
        for k in range(3):
            for b in range(W):
                mod = int(mode) | (k << 2)
                j, ok = isa.shfl_source(mod, lane, b)
                case = [R(f"shfl_{mode.name}"), R(f"shfl_w{1 << k}")] + eq_lits(b2, b)
                if ok and j != lane:
                    steps[j].append(and_step(case + [act[j]]))
                    steps[lane].append(and_step(case + [neg(act[j])]))
                else:
                    steps[lane].append(and_step(case))
    return [n.gate(steps[j], f"shsel{lane}.{j}") for j in range(W)]


def _vote(n: Netlist, R, A, Bop, act: list[Sig], weighted: dict) -> list[list[Sig]]:
    """Per lane: the low four bits of VOTE's result (ballot, any, all, match_any)."""
    # rs1 != 0 as ORs of 8 bits: one OR of 32 leaves its level off by about 1.4 at weight
    # noise 1e-3, which the vote's AND steps read (bench/margin_static.py).
    nz = [C.any_of(n, A[j], f"vnz{j}", flat=8, group=8) for j in range(W)]
    eq = {}
    for l in range(W):
        for j in range(l + 1, W):
            eq[l, j] = eq[j, l] = C.compare(n, A[l], A[j], name=f"veq{l}{j}")[1]
    res = []
    for l in range(W):
        m = [Bop[l][j] for j in range(W)]  # the lane's own mask operand, low bits
        yes = [n.gate([and_step([act[j], m[j], nz[j]])], f"vyes{l}.{j}") for j in range(W)]
        no = [n.gate([and_step([act[j], m[j], neg(nz[j])])], f"vno{l}.{j}") for j in range(W)]
        same = [n.gate([and_step([act[j], m[j]] + ([] if j == l else [eq[l, j]]))], f"vsame{l}.{j}")
                for j in range(W)]
        bits = []
        for j in range(W):
            st = [and_step([R(f"vote_{VoteMode.BALLOT.name}"), yes[j]]),
                  and_step([R(f"vote_{VoteMode.MATCH.name}"), same[j]])]
            if j == 0:
                st.append(step([(y, 1) for y in yes] + [(weighted[VoteMode.ANY], W)], W + 1))
                st.append(step([(x, -1) for x in no] + [(weighted[VoteMode.ALL], W)], W))
            bits.append(n.gate(st, f"vote{l}.{j}"))
        res.append(bits)
    return res
