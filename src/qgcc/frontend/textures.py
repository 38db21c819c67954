"""Lowering, textures: a fetch is an ordinary load from the texture's buffer (sema_textures.py
explains the model; docs/subset.md, "Textures", the rules).

A texture's value is its 64-bit handle: the low word is the buffer's first cell, the high word
(width - 1) | (height - 1) << 16.  The fetches implement CUDA's point sampling with
unnormalised coordinates:

* `tex1Dfetch(t, i)`: element i; an index outside 0 .. width-1 reads 0 in every cell (CUDA's
  linear-memory fetch).  The load goes to element 0 then, so it never leaves the buffer.
* `tex1D(t, x)`: element clamp(floor(x), 0, width-1).
* `tex2D(t, x, y)`: element clamp(floor(y), 0, height-1) * width + clamp(floor(x), 0, width-1).

floor then clamp at 0 equals truncation then clamp at 0 (a coordinate in (-1, 0) truncates to
0 and floors to -1, which the clamp makes 0), so the conversion is C's float -> int (F2I:
truncating, saturating, NaN -> 0) and the clamp two selects made of compares and masks: no
branch, the same cost on every lane.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..isa import Op
from ..program import Param
from . import ast as A
from .structs import cells, is_struct, struct_layout
from .symbols import VarSym
from .types import FLOAT, INT, UINT
from .values import C, MemLV, Pair

if TYPE_CHECKING:
    from .values import KernelGen


def texture_param(p: VarSym) -> Param:
    """The Program's view of a texture parameter: a read-only buffer of its element type."""
    info = p.texture
    elem, dims = info.elem if info.elem is not None else FLOAT, info.dims or 1
    if is_struct(elem):
        return Param(p.name, "struct", pointer=True, const=True, struct=struct_layout(elem), texture=dims)
    return Param(p.name, elem.kind, pointer=True, const=True, texture=dims)


def hidden_param(g: "KernelGen", sym: VarSym) -> VarSym:
    """The kernel's hidden parameter that binds the file-scope texture `sym`."""
    for p in g.fs.params:
        if p.texture is not None and p.texture.ref is sym:
            return p
    raise g.error(g.line, 1, f"texture '{sym.name}' is not bound in kernel '{g.fs.name}'")  # pragma: no cover


def _select(g: "KernelGen", cond, a, b):
    """cond (0 or 1) ? a : b, without a branch: b ^ ((a ^ b) & -cond)."""
    neg = g.alu(Op.SUB, C(0), cond)
    return g.alu(Op.XOR, b, g.alu(Op.AND, g.alu(Op.XOR, a, b), neg))


def _clamp(g: "KernelGen", coord, ty, top):
    """clamp(floor(coord), 0, top) for a float coordinate (see the module's docstring)."""
    i = g.convert(g.convert(coord, ty, FLOAT), FLOAT, INT)
    below = g.alu(Op.SLT, i, C(0))
    i = g.alu(Op.AND, i, g.alu(Op.SUB, below, C(1)))  # negative -> 0
    above = g.alu(Op.SLT, top, i)
    return _select(g, above, top, i)


def fetch(g: "KernelGen", e: A.Call):
    handle = g.val(e.args[0])
    assert isinstance(handle, Pair)
    base, info = g.reg(handle.lo), handle.hi
    top_x = g.alu(Op.AND, info, C(0xFFFF))
    mask = None
    if e.callee == "tex1Dfetch":
        a = e.args[1]
        i = g.convert(g.val(a), a.ty, INT)
        outside = g.alu(Op.SLTU, top_x, i)  # i > width-1, unsigned: negative indices too
        mask = g.alu(Op.SUB, outside, C(1))  # all ones inside, 0 outside
        index = g.alu(Op.AND, i, mask)
    elif e.callee == "tex1D":
        index = _clamp(g, g.val(e.args[1]), e.args[1].ty, top_x)
    else:  # tex2D
        top_y = g.alu(Op.SHR, info, C(16))
        x = _clamp(g, g.val(e.args[1]), e.args[1].ty, top_x)
        y = _clamp(g, g.val(e.args[2]), e.args[2].ty, top_y)
        width = g.alu(Op.ADD, top_x, C(1))
        index = g.alu(Op.ADD, g.alu(Op.MUL, y, width), x)
    elem = e.ty
    n = cells(elem) if is_struct(elem) else 1
    offset = index if n == 1 else g.alu(Op.MUL, index, C(n))
    addr = g.reg(g.alu(Op.ADD, base, offset))
    if not is_struct(elem):
        v = g.load(MemLV(addr, 0, elem))
        return v if mask is None else g.alu(Op.AND, v, mask)
    tb, toff = g.sym_addr(e.tmp)
    for k in range(n):
        v = g.load(MemLV(addr, k, UINT))
        g.store(MemLV(tb, toff + k, UINT), v if mask is None else g.alu(Op.AND, v, mask))
    return g.address(MemLV(tb, toff, elem))
