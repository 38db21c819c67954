"""Bit-level integer helpers over 32-bit values: population count, leading zeros, bit reverse,
find-first-set, the high word of a product, byte permute -- short branch-free ALU sequences.

The bottom of the integer lowering: `intrinsics` (the CUDA intrinsics that name them) and `wide`
(64-bit multiply and the 64-bit intrinsics) both use them, and this module imports neither.
"""

from __future__ import annotations

from ..isa import Op
from .values import C, KernelGen, is_c


def brev(g: "KernelGen", x):
    alu = g.alu
    for k, m in ((1, 0x55555555), (2, 0x33333333), (4, 0x0F0F0F0F), (8, 0x00FF00FF), (16, 0x0000FFFF)):
        x = alu(Op.OR, alu(Op.AND, alu(Op.SHR, x, C(k)), C(m)), alu(Op.SHL, alu(Op.AND, x, C(m)), C(k)))
    return x


def ffs(g: "KernelGen", x):
    alu = g.alu
    lsb = alu(Op.AND, x, alu(Op.SUB, C(0), x))
    return alu(Op.SUB, C(32), clz(g, lsb))


def popc(g: "KernelGen", x):
    alu = g.alu
    x = alu(Op.SUB, x, alu(Op.AND, alu(Op.SHR, x, C(1)), C(0x55555555)))
    x = alu(Op.ADD, alu(Op.AND, x, C(0x33333333)), alu(Op.AND, alu(Op.SHR, x, C(2)), C(0x33333333)))
    x = alu(Op.AND, alu(Op.ADD, x, alu(Op.SHR, x, C(4))), C(0x0F0F0F0F))
    x = alu(Op.ADD, x, alu(Op.SHR, x, C(8)))
    x = alu(Op.ADD, x, alu(Op.SHR, x, C(16)))
    return alu(Op.AND, x, C(0x3F))


def clz(g: "KernelGen", x):
    """Leading zeros by halving: five rounds of compare, shift and count; 32 for zero."""
    alu = g.alu
    n = C(0)
    for k in (16, 8, 4, 2, 1):
        s = alu(Op.SHL, alu(Op.SLTU, x, C(1 << (32 - k))), C(k.bit_length() - 1))
        x = alu(Op.SHL, x, s)
        n = alu(Op.ADD, n, s)
    return alu(Op.ADD, n, alu(Op.SEQ, x, C(0)))


def umulhi(g: "KernelGen", a, b):
    """High word of the 64-bit unsigned product, from four 16 x 16-bit products."""
    alu = g.alu
    al, ah = alu(Op.AND, a, C(0xFFFF)), alu(Op.SHR, a, C(16))
    bl, bh = alu(Op.AND, b, C(0xFFFF)), alu(Op.SHR, b, C(16))
    ll, lh, hl, hh = (alu(Op.MUL, x, y) for x, y in ((al, bl), (al, bh), (ah, bl), (ah, bh)))
    mid = alu(Op.ADD, alu(Op.ADD, alu(Op.SHR, ll, C(16)), alu(Op.AND, lh, C(0xFFFF))), alu(Op.AND, hl, C(0xFFFF)))
    hi = alu(Op.ADD, alu(Op.ADD, hh, alu(Op.SHR, lh, C(16))), alu(Op.SHR, hl, C(16)))
    return alu(Op.ADD, hi, alu(Op.SHR, mid, C(16)))


def byte_perm(g: "KernelGen", x, y, s):
    """Byte n of the result is byte s<4n+2:4n> of the 8 bytes y:x (CUDA's __byte_perm)."""
    alu = g.alu
    out = C(0)
    xy = None
    for n in range(4):
        if is_c(s):
            sel = (s.value >> (4 * n)) & 7
            src = y if sel >= 4 else x
            byte = alu(Op.AND, alu(Op.SHR, src, C(8 * (sel & 3))), C(0xFF))
        else:
            if xy is None:
                xy = alu(Op.XOR, x, y)
            hi = alu(Op.AND, alu(Op.SHR, s, C(4 * n + 2)), C(1))
            src = alu(Op.XOR, x, alu(Op.AND, xy, alu(Op.SUB, C(0), hi)))  # y if hi else x
            amt = alu(Op.SHL, alu(Op.AND, alu(Op.SHR, s, C(4 * n)), C(3)), C(3))
            byte = alu(Op.AND, alu(Op.SHR, src, amt), C(0xFF))
        out = alu(Op.OR, out, alu(Op.SHL, byte, C(8 * n)))
    return out
