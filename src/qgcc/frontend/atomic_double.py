"""atomicAdd on a `double *` (conjugateGradientMultiBlockCG's dot products).

The machine's atomics are 32-bit, so there is no 64-bit compare-and-swap for CUDA's pre-sm_60
loop.  A double add does not split into word-wise adds (as a 64-bit integer add does, with its
carry), so the read-modify-write is made atomic by a lock: one reserved `__device__` cell
(`__qg_atomic_lock`, cleared before every launch like every `__device__` variable), taken with
ATOM.CAS and given back with ATOM.EXCH.  CUDA guarantees atomicity only among atomics; every
double atomicAdd takes the same lock, so no two of them interleave.

The loop is laid out so that SIMT min-PC scheduling cannot starve the holder: the lanes that
miss the lock branch forward, past the critical section, to the loop's test, so the lane that
took it (at a lower PC) runs its critical section first (the add's routine, too, lies below
every call site: codegen.py); other warps holding the lock progress because warps are scheduled
round-robin.  The add is the soft-float `__qg_dadd`, so the sum is
the one a plain double `+` gives, in the order the lanes take the lock (lane order in a warp).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..isa import AtomOp, Op
from .types import UINT, ArrayType
from .symbols import VarSym
from .values import C, MemLV, Pair

if TYPE_CHECKING:
    from .values import KernelGen

LOCK_NAME = "__qg_atomic_lock"


def lock_cell(sema) -> int:
    """The global cell of the lock, added to the translation unit on the first use."""
    sym = sema.globals.get(LOCK_NAME)
    if sym is None:
        sym = VarSym(LOCK_NAME, ArrayType(UINT, (1,)), "shared", 0, 0, space="constant",
                     address=sema.constant_cells, init=[0])
        sema.constant_cells += 1
        sema.constants.append(sym)
        sema.globals[LOCK_NAME] = sym
    return sym.address


def atomic_add(g: "KernelGen", base, off: int, v, lock: int) -> Pair:
    """old = *p; *p = old + v, under the lock; returns old (a Pair, lo/hi words)."""
    v = Pair(g.reg(v.lo), g.reg(v.hi))
    lock_base, lock_off = g.base_reg(MemLV(None, lock, UINT))
    done, got = g.new(), g.new()
    old = Pair(g.new(), g.new())
    g.mov(done, C(0))
    top, test = g.label(), g.label()
    g.place(top)
    g.mov(got, C(1))  # CAS: rd is the new value on entry (1: taken), rs2 the expected one (0: free)
    g.emit(Op.ATOM, got, lock_base, g.reg(C(0)), imm=lock_off, mod=AtomOp.CAS)
    g.emit(Op.BRNZ, rs1=got, target=test)  # held by another lane: forward, past the critical section
    g.emit(Op.LD, old.lo, base, imm=off)
    g.emit(Op.LD, old.hi, base, imm=off + 1)
    new = g.call_lib("__qg_dadd", [old, v])
    g.emit(Op.ST, -1, base, g.reg(new.lo), imm=off)
    g.emit(Op.ST, -1, base, g.reg(new.hi), imm=off + 1)
    free = g.new()
    g.emit(Op.ATOM, free, lock_base, g.reg(C(0)), imm=lock_off, mod=AtomOp.EXCH)
    g.mov(done, C(1))
    g.place(test)
    g.emit(Op.BRZ, rs1=done, target=top)
    return old
