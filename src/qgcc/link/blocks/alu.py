"""The per-lane ALU: every ALU-class result, each source gated by its opcode flag.

Add, subtract, compare, shift, the bitwise operations, MOV, LDC and S2R (special
registers) are computed side by side on all four lanes; the decoded opcode selects
one, so the result bus is an OR of gated terms.
"""

from __future__ import annotations

from .. import circuits as C
from ..circuits import and_step, eq_lits, neg, step
from ..layout import W
from ..netlist import Netlist, Sig
from . import fpu
from .fetch import Decoded
from .regfile import Operands
from .state import State
from .warptable import WarpRow


ALU_FLOOR = 3  # earliest layer of the ALU's adders


def build(n: Netlist, state: State, dec: Decoded, ops: Operands, row: WarpRow,
          fops: frozenset = frozenset(), xl=None) -> list[list[Sig]]:
    """Per lane: the 32-bit ALU-class result (`fops`: the names of the float opcodes the program uses;
    `xl`: the lane-crossing unit, whose SHFL/VOTE results join this multiplexer)."""
    op, R, IMMV = dec.op, dec.flag, dec.restored(n, "immv")
    A, Bop, ONE = ops.a, ops.b_or_imm, n.ONE
    s_ = state
    BX, BY, BZ, CX, CY, CZ, GX, GY, GZ, CUR = s_.BX, s_.BY, s_.BZ, s_.CX, s_.CY, s_.CZ, s_.GX, s_.GY, s_.GZ, s_.CUR
    # The logic operations weight their opcode flag by 2: restored copies (Decoded.restored).
    logic = {o: dec.restored_flag(n, f"op_{o}") for o in ("AND", "OR", "XOR")}
    RES = []  # per lane: the ALU-class result (every source gated by its opcode flag)
    for l in range(W):
        a, b = A[l], Bop[l]
        # Not urgent (the result is written back at the end of the step): placed from layer
        # ALU_FLOOR on, where the MLPs have room for the digit-wise carries.
        with n.at_least(ALU_FLOOR):
            s_add = C.add(n, a, b, name=f"add{l}")
            s_sub, groups = C.add(n, a, [neg(x) for x in b], cin=ONE, name=f"sub{l}", want_groups=True)
        ge, eq = C.compare(n, a, b, name=f"cmp{l}", digits=groups)
        sh = shifter(n, a, b[:5], op["SHL"], op["SHR"], op["SRA"], name=f"sh{l}")
        fbit, fsel = fpu.lane_compare(n, a, b, ge, eq, op, fops, f"fl{l}") if fops else (None, [])
        sreg_src = {
            "NTID_X": BX, "NTID_Y": BY, "NTID_Z": BZ, "CTAID_X": CX, "CTAID_Y": CY, "CTAID_Z": CZ,
            "NCTAID_X": GX, "NCTAID_Y": GY, "NCTAID_Z": GZ, "WARPID": CUR, "CLOCK": s_.CLK,
        }
        res = []
        for i in range(32):
            pairs = [(a[i], 1), (b[i], 1)]
            st = [and_step([op["ADD"], s_add[i]]), and_step([op["SUB"], s_sub[i]]), step([(sh[i], 1)], 1),
                  step(pairs + [(logic["AND"], 2)], 4),
                  step(pairs + [(logic["OR"], 2)], 3),
                  step(pairs + [(logic["XOR"], 2)], 3), step(pairs + [(logic["XOR"], 2)], 4, -1),
                  and_step([op["MOV"], a[i]]), and_step([op["MOV"], IMMV[i]])  # exclusive under MOV
                  ] + [and_step([sel, bus[i]]) for sel, bus in fsel]
            if xl is not None:
                st += xl.steps(l, i)
            for sname, bus in sreg_src.items():
                if i < len(bus):
                    st.append(and_step([R(f"sreg_{sname}"), bus[i]]))
            if i < 2 and (l >> i) & 1:
                st.append(and_step([R("sreg_LANEID")]))
            if i == 0:
                b31 = b[31]
                st += [and_step([op["SLTU"], neg(ge)]), and_step([op["SEQ"], eq]), and_step([op["SNE"], neg(eq)]),
                       and_step([op["SLT"], a[31], neg(b31)]),
                       and_step([op["SLT"], neg(a[31]), neg(b31), neg(ge)]),
                       and_step([op["SLT"], a[31], b31, neg(ge)])] + ([step([(fbit, 1)], 1)] if fbit else [])
            res.append(n.gate(st, f"res{l}.{i}"))
        RES.append(res)
    return RES


def shifter(n: Netlist, x: list[Sig], amt: list, shl: Sig, shr: Sig, sra: Sig, name: str) -> list[Sig]:
    """SHL/SHR/SRA by amt (5 bits) in two levels; SHL is a right shift of the reversed word."""
    rev = list(reversed(x))
    # Stage 1: right shift by amt[0:2] of x (SHR/SRA) or of rev(x) (SHL); fill: x31 for SRA.
    st1 = []
    for i in range(32):
        steps = []
        for s in range(4):
            sel = eq_lits(amt[:2], s)
            j = i + s
            if j < 32:
                steps.append(and_step(sel + [shl, rev[j]]))
                steps.append(and_step(sel + [[shr, sra], x[j]]))
            else:
                steps.append(and_step(sel + [sra, x[31]]))
        st1.append(n.gate(steps, f"{name}.a{i}"))
    out = []
    for i in range(32):
        steps = []
        for t in range(8):
            sel = eq_lits(amt[2:5], t)
            # SHL result bit i = reversed-shift bit 31-i.
            j = (31 - i) + 4 * t
            if j < 32:
                steps.append(and_step(sel + [shl, st1[j]]))
            j = i + 4 * t
            if j < 32:
                steps.append(and_step(sel + [[shr, sra], st1[j]]))
            else:
                steps.append(and_step(sel + [sra, x[31]]))
        out.append(n.gate(steps, f"{name}.b{i}"))
    return out
