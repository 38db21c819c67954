"""The values and records the lowering passes share: a compile-time constant (`C`), a 64-bit
register pair (`Pair`), lvalues (`MemLV`, `VarLV`), a function's frame, an out-of-line routine,
and the tables that route float operations to instructions or routines.

They live below every lowering module (`codegen` and its mixins, `wide`, `doubles`,
`intrinsics`), so that none of those imports another pass for a type.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..isa import Op
from .symbols import FuncSym, VarSym
from .types import IntType

# The kernel being lowered (`codegen.KernelGen`), as the per-family lowerings (`wide`, `doubles`,
# `intrinsics`, `bitops`) name it in annotations: they call its methods (alu, emit, val, ...)
# but may not import it, because `codegen` imports them.
KernelGen = Any

MASK32 = 0xFFFFFFFF


class C:
    """A compile-time constant value (a Python int in its type's domain or a u32 pattern)."""

    __slots__ = ("value",)

    def __init__(self, value: int):
        self.value = value

    def __repr__(self) -> str:  # pragma: no cover
        return f"C({self.value})"


# Soft-float routines that are one float instruction when the machine has it.
HW_ROUTINES = {"__qg_fadd": Op.FADD, "__qg_fsub": Op.FSUB, "__qg_fmul": Op.FMUL, "__qg_fma": Op.FFMA,
               "__qg_fmin": Op.FMIN, "__qg_fmax": Op.FMAX, "__qg_flt": Op.FSLT, "__qg_fle": Op.FSLE,
               "__qg_feq": Op.FSEQ, "__qg_f2i": Op.F2I, "__qg_f2u": Op.F2U, "__qg_i2f": Op.I2F,
               "__qg_u2f": Op.U2F}
# Soft-float routines with a shorter version on the float unit (divsqrt.cu), and the float
# instructions that version uses.
ON_FPU = {"__qg_fdiv": "__qg_fdiv_fpu", "__qg_fsqrt": "__qg_fsqrt_fpu"}
FPU_ROUTINE_OPS = frozenset({Op.FADD, Op.FMUL, Op.F2I, Op.F2U, Op.I2F, Op.U2F})


@dataclass(frozen=True)
class Pair:
    lo: object  # int (vreg) | C
    hi: object

    def regs(self) -> tuple[int, ...]:
        return tuple(v for v in (self.lo, self.hi) if isinstance(v, int))


def is_c(v) -> bool:
    return isinstance(v, C)


@dataclass
class MemLV:
    base: "int | None"  # vreg holding an address, or None (absolute address in off)
    off: int
    elem: IntType


@dataclass
class VarLV:
    sym: VarSym


@dataclass
class Frame:
    func: FuncSym
    ret_label: int | None  # None: the kernel itself (return -> EXIT)
    ret_reg: int | None
    loops: list[tuple[int, int]] = field(default_factory=list)  # (break label, continue label)
    ret_addr: "tuple[int | None, int] | None" = None  # where a returned struct is copied


@dataclass
class Routine:
    """A soft-float routine emitted out of line in the current kernel."""

    entry: int  # label
    params: list[int]  # vregs the caller fills
    ret: int  # vreg holding the result at the JR
    link: int  # vreg holding the return address
    clobbers: frozenset[int] = frozenset()  # vregs written by the routine and its callees
    # The kernel's frame base, when the routine (or a callee) has a local array: read at every
    # call, so it stays live (and computed) across the kernel's calls
    frame_reads: tuple[int, ...] = ()


# Library functions small enough to inline into the routines that use them.
INLINE_HELPERS = frozenset({"__qg_isnan", "__qg_mulhi", "__qgm_nan", "__qgm_canon", "__qgm_small_int", "__qgm_key",
                            "__qg_dnan", "__qg_dkey"})


def _flat(vals) -> tuple[int, ...]:
    """The registers of routine operands (a 64-bit one is two)."""
    out: list[int] = []
    for v in vals:
        out.extend(v.regs() if isinstance(v, Pair) else (v,))
    return tuple(out)


def _log2(c: int) -> int | None:
    if c > 0 and c & (c - 1) == 0:
        return c.bit_length() - 1
    return None
