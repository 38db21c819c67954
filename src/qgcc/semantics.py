"""What the ALU and float opcodes compute: exact semantics on 32-bit patterns, for whoever
evaluates instructions (the reference emulator, the compiler's constant folding, the tests).

Kept out of `isa`, which is the opcode table and encoding only, so that the ISA does not import
the float semantics (`fpu`), which are written in terms of its opcodes.
"""

from __future__ import annotations

import operator

from . import fpu
from .isa import FLOAT_OPS, MASK32, Op, to_s32


def _sra(a: int, b: int) -> int:
    return to_s32(a) >> (b & 31)


# The integer opcodes on u32 operands (the result is masked to 32 bits after).  A table rather
# than a chain of tests: the reference emulator evaluates one of these for every lane of most
# warp steps, and a dict lookup and a call are a third of the chain's time.
_INT_OPS = {
    Op.ADD: operator.add,
    Op.SUB: operator.sub,
    Op.MUL: operator.mul,
    Op.AND: operator.and_,
    Op.OR: operator.or_,
    Op.XOR: operator.xor,
    Op.SHL: lambda a, b: a << (b & 31),
    Op.SHR: lambda a, b: a >> (b & 31),
    Op.SRA: _sra,
    Op.SLT: lambda a, b: int(to_s32(a) < to_s32(b)),
    Op.SLTU: lambda a, b: int(a < b),
    Op.SEQ: lambda a, b: int(a == b),
    Op.SNE: lambda a, b: int(a != b),
}


def alu(op: Op, a: int, b: int, c: int = 0) -> int:
    """Exact semantics of the ALU opcodes on 32-bit patterns (c: FFMA's addend, rd); returns u32.

    F2I/F2U/I2F/U2F (format UN) take a alone."""
    f = _INT_OPS.get(op)
    if f is not None:
        return f(a & MASK32, b & MASK32) & MASK32
    if op in FLOAT_OPS:
        return _float_op(op, a & MASK32, b & MASK32, c & MASK32)
    raise ValueError(f"{op.name} is not an ALU opcode")


def _float_op(op: Op, a: int, b: int, c: int) -> int:
    if op is Op.FADD:
        return fpu.fadd(a, b)
    if op is Op.FSUB:
        return fpu.fadd(a, b ^ fpu.SIGN) if not fpu.is_nan(b) else fpu.NAN
    if op is Op.FMUL:
        return fpu.fmul(a, b)
    if op is Op.FFMA:
        return fpu.ffma(a, b, c)
    if op in (Op.FMIN, Op.FMAX):
        return fpu.fminmax(op is Op.FMAX, a, b)
    if op in (Op.F2I, Op.F2U):
        return fpu.f2i(a) if op is Op.F2I else fpu.f2u(a)
    if op in (Op.I2F, Op.U2F):
        return fpu.i2f(a, op is Op.I2F)
    return fpu.compare(op.name[2:].lower(), a, b)
