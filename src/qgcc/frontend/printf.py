"""Lowering, device output: a printf call's record and an assert's check (sema_printf.py has the
model).

A record is RECORD_HEADER cells -- the format number + 1, blockIdx.x/y/z and threadIdx.x/y/z --
then the arguments' cells; the number is stored last, so a launch stopped by a fault leaves
no record that looks complete and is not.  The call reserves its cells with one atomic add on the buffer's
cell 0 (the count of cells asked for so far, dropped ones included) and stores the record
only if it fits: like CUDA, a full buffer drops records, and the host says how many.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..isa import AtomOp, Op, SReg
from ..printfmt import CELLS
from ..program import PRINTF_CELLS
from . import ast as A
from .types import INT, UINT, is_pair
from .values import C, MemLV, Pair

if TYPE_CHECKING:
    from .values import KernelGen

RECORD_HEADER = 7
HEADER_REGS = (SReg.CTAID_X, SReg.CTAID_Y, SReg.CTAID_Z, SReg.TID_X, SReg.TID_Y, SReg.TID_Z)


def printf(g: "KernelGen", e: A.Call):
    number, kinds, buffer = e.fmt  # buffer: the first cell of the __qg_printf array
    cells: list = [C(number + 1)]  # 0 marks a record not yet complete (stored last, below)
    for sreg in HEADER_REGS:
        t = g.new()
        g.emit(Op.S2R, t, mod=sreg)
        cells.append(t)
    for a, kind in zip(e.args, kinds):
        if kind == "s":
            continue
        v = g.val(a)
        if kind in "iu" and a.ty not in (INT, UINT):
            v = g.convert(v, a.ty, INT)  # char, bool: promoted as C's varargs do
        if CELLS[kind] == 2:
            assert isinstance(v, Pair) and is_pair(a.ty)
            cells += [v.lo, v.hi]
        else:
            cells.append(v)
    size = len(cells)
    counter, counter_off = g.base_reg(MemLV(None, buffer, UINT))
    old = g.new()
    g.emit(Op.ATOM, old, counter, g.reg(C(size)), imm=counter_off, mod=AtomOp.ADD)
    # the record's cells are buffer[1 + old ...]; it fits if old + size <= PRINTF_CELLS - 1
    fits = g.alu(Op.SLTU, old, C(PRINTF_CELLS - size))
    skip = g.label()
    g.emit(Op.BRZ, rs1=fits, target=skip)
    start = g.alu(Op.ADD, old, C(buffer + 1))
    for k in [*range(1, size), 0]:  # the format number last: a record is complete once it is there
        g.store(MemLV(start, k, UINT), g.reg(cells[k]))
    g.place(skip)
    return C(len(e.args))


def grid_sync(g: "KernelGen", e: A.Call):
    """grid.sync(): stop the launch (the check's assert) unless the grid is one block, then the
    block barrier, which in a one-block launch is exactly the grid barrier."""
    _, address = e.fmt
    other = None  # (x ^ 1) | (y ^ 1) | (z ^ 1): zero exactly when the grid is 1 x 1 x 1 (no MUL, no overflow)
    for sreg in (SReg.NCTAID_X, SReg.NCTAID_Y, SReg.NCTAID_Z):
        t = g.new()
        g.emit(Op.S2R, t, mod=sreg)
        off = g.alu(Op.XOR, t, C(1))
        other = off if other is None else g.alu(Op.OR, other, off)
    ok = g.label()
    g.emit(Op.BRZ, rs1=g.reg(other), target=ok)
    g.store(MemLV(None, address, UINT), C(0))
    g.place(ok)
    g.emit(Op.BAR)
    return None


def check_assert(g: "KernelGen", e: A.Call):
    """if (!cond) store to the assert's cell of the reserved band: the launch stops there."""
    _, address = e.fmt
    ok = g.label()
    g.branch(e.args[0], ok, True)
    g.store(MemLV(None, address, UINT), C(0))
    g.place(ok)
    return None
