"""What the ALU and float opcodes compute: exact semantics on 32-bit patterns, for whoever
evaluates instructions (the reference emulator, the compiler's constant folding, the tests).

Kept out of `isa`, which is the opcode table and encoding only, so that the ISA does not import
the float semantics (`fpu`), which are written in terms of its opcodes.
"""

from __future__ import annotations

from . import fpu
from .isa import FLOAT_OPS, MASK32, Op, to_s32


def alu(op: Op, a: int, b: int, c: int = 0) -> int:
    """Exact semantics of the ALU opcodes on 32-bit patterns (c: FFMA's addend, rd); returns u32.

    F2I/F2U/I2F/U2F (format UN) take a alone."""
    a &= MASK32
    b &= MASK32
    if op in FLOAT_OPS:
        return _float_op(op, a, b, c & MASK32)
    if op is Op.ADD:
        r = a + b
    elif op is Op.SUB:
        r = a - b
    elif op is Op.MUL:
        r = a * b
    elif op is Op.AND:
        r = a & b
    elif op is Op.OR:
        r = a | b
    elif op is Op.XOR:
        r = a ^ b
    elif op is Op.SHL:
        r = a << (b & 31)
    elif op is Op.SHR:
        r = a >> (b & 31)
    elif op is Op.SRA:
        r = to_s32(a) >> (b & 31)
    elif op is Op.SLT:
        r = int(to_s32(a) < to_s32(b))
    elif op is Op.SLTU:
        r = int(a < b)
    elif op is Op.SEQ:
        r = int(a == b)
    elif op is Op.SNE:
        r = int(a != b)
    else:
        raise ValueError(f"{op.name} is not an ALU opcode")
    return r & MASK32


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
