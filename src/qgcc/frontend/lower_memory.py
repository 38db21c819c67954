"""Lowering, memory: loads and stores of 32- and 64-bit values, lvalues, address arithmetic
(indexing, pointers, members, constant offsets folded into the instruction), and struct copies
cell by cell.

A mixin of `codegen.KernelGen`; it imports the shared lowering values (`values`), never
`codegen`.
"""

from __future__ import annotations

from ..isa import Op, to_s32
from . import ast as A
from .structs import cells, is_struct
from .symbols import FuncSym
from .types import CHAR, INT, SHORT, is_pair, is_ptr
from .values import C, MemLV, Pair, VarLV, _log2, is_c


class MemoryGen:
    """Loads, stores and addresses (a mixin of `codegen.KernelGen`)."""

    def base_reg(self, lv: MemLV) -> tuple[int, int]:
        if lv.base is None:
            t = self.new()
            self.emit(Op.MOV, t, imm=lv.off, use_imm=True)
            return t, 0
        return lv.base, lv.off

    def load(self, lv: MemLV):
        b, off = self.base_reg(lv)
        if is_pair(lv.elem):
            lo, hi = self.new(), self.new()
            self.emit(Op.LD, lo, b, imm=off)
            self.emit(Op.LD, hi, b, imm=off + 1)
            return Pair(lo, hi)
        t = self.new()
        self.emit(Op.LD, t, b, imm=off)
        if lv.elem in (CHAR, SHORT):  # the cell holds the low bits: sign-extend them
            k = 24 if lv.elem == CHAR else 16
            return self.alu(Op.SRA, self.alu(Op.SHL, t, C(k)), C(k))
        return t

    def store(self, lv: MemLV, v) -> None:
        """Store v (already converted to the element type) into a cell."""
        if lv.elem in (CHAR, SHORT):
            v = self.alu(Op.AND, v, C(0xFF if lv.elem == CHAR else 0xFFFF))
        if is_pair(lv.elem):
            lo, hi = self.reg(v.lo), self.reg(v.hi)
            b, off = self.base_reg(lv)
            self.emit(Op.ST, -1, b, lo, imm=off)
            self.emit(Op.ST, -1, b, hi, imm=off + 1)
            return
        v = self.reg(v)
        b, off = self.base_reg(lv)
        self.emit(Op.ST, -1, b, v, imm=off)

    def read(self, lv):
        if isinstance(lv, VarLV):
            return self.env[lv.sym]
        return self.load(lv)

    def write(self, lv, v) -> None:
        if isinstance(lv, VarLV):
            self.mov(self.env[lv.sym], v)
        else:
            self.store(lv, v)

    def add_offset(self, base, off: int, idx, stride: int) -> tuple["int | None", int]:
        """Address base+off+idx*stride as (register or None, constant offset)."""
        if is_c(base):
            off += base.value
            base = None
        if is_c(idx):
            return base, off + idx.value * stride
        if stride != 1:
            k = _log2(stride)
            idx = self.alu(Op.SHL, idx, C(k)) if k is not None else self.alu(Op.MUL, idx, C(stride))
        if base is None:
            return idx, off
        return self.alu(Op.ADD, base, idx), off

    def split_const(self, e: A.Expr) -> tuple[A.Expr | None, int]:
        """e as (rest, constant) with e == rest + constant (modulo 2^32)."""
        if e.const is not None:
            return None, e.const
        if isinstance(e, A.Binary) and e.op in ("+", "-") and not is_ptr(e.ty):
            if e.right.const is not None:
                c = e.right.const
                return e.left, (c if e.op == "+" else -c)
            if e.op == "+" and e.left.const is not None:
                return e.right, e.left.const
        return e, 0

    def index_addr(self, e: A.Index) -> tuple["int | None", int]:
        arr = e.base.arr
        if arr is not None:
            base, off = self.array_addr(e.base)
            stride = cells(arr.elem)
            for d in arr.dims[1:]:
                stride *= d
        else:
            base, off = self.ptr_addr(e.base)
            stride = cells(e.base.ty.elem)
        rest, c = self.split_const(e.index)
        off += to_s32(c) * stride
        if rest is None:
            return base, off
        return self.add_offset(base, off, self.low_word(self.val(rest), rest.ty), stride)

    def array_addr(self, e: A.Expr) -> tuple["int | None", int]:
        """Address of an array or array row expression."""
        if isinstance(e, A.Name):
            return self.sym_addr(e.sym)
        if isinstance(e, A.Member):
            return self.saddr(e)
        assert isinstance(e, A.Index)
        return self.index_addr(e)

    def ptr_addr(self, pe: A.Expr) -> tuple["int | None", int]:
        """The address a pointer-valued expression holds, as (register or None, offset)."""
        if pe.arr is not None:
            return self.array_addr(pe)
        if isinstance(pe, A.Binary) and pe.op in ("+", "-") and is_ptr(pe.ty):
            if is_ptr(pe.left.ty):
                p, ie = pe.left, pe.right
            else:
                p, ie = pe.right, pe.left
            base, off = self.ptr_addr(p)
            rest, c = self.split_const(ie)
            sign = -1 if pe.op == "-" else 1
            stride = cells(p.ty.elem)
            off += sign * to_s32(c) * stride
            if rest is None:
                return base, off
            iv = self.low_word(self.val(rest), rest.ty)
            if sign < 0:
                iv = self.alu(Op.MUL, iv, C(-1))
            return self.add_offset(base, off, iv, stride)
        if isinstance(pe, A.Unary) and pe.op == "&":
            lv = self.lvalue(pe.operand)
            if not isinstance(lv, MemLV):  # `&r`, r a reference parameter bound to a register local
                raise self.error(pe.line, pe.col, f"cannot take the address of reference parameter "
                                                  f"'{pe.operand.name}': this call binds it to a local variable, "
                                                  "which lives in a register; pass a __shared__ or global "
                                                  "variable, or a local whose address is taken")
            return lv.base, lv.off
        v = self.val(pe)
        if is_c(v):
            return None, v.value
        return v, 0

    def lvalue(self, e: A.Expr):
        if isinstance(e, A.Name):
            sym = e.sym
            if sym.kind == "shared":
                base, off = self.sym_addr(sym)
                return MemLV(base, off, sym.ty)
            v = self.env[sym]
            if isinstance(v, MemLV):  # a reference parameter bound to a memory cell
                return v
            if is_c(v):  # an unassigned parameter bound to a constant: give it a register
                r = self.reg(v)
                self.env[sym] = r
            elif isinstance(v, Pair) and (is_c(v.lo) or is_c(v.hi)):
                self.env[sym] = Pair(self.reg(v.lo), self.reg(v.hi))
            return VarLV(sym)
        if isinstance(e, A.Index):
            base, off = self.index_addr(e)
            return MemLV(base, off, e.ty)
        if isinstance(e, A.Unary) and e.op == "*":
            base, off = self.ptr_addr(e.operand)
            return MemLV(base, off, e.ty)
        if isinstance(e, A.Call) and isinstance(e.callee, FuncSym) and e.callee.ret_ref:
            return MemLV(self.reg(self.inline(e, e.callee)), 0, e.ty)
        if isinstance(e, A.Member) or is_struct(e.ty):
            base, off = self.saddr(e)
            return MemLV(base, off, e.ty)
        raise AssertionError(f"not an lvalue: {e}")  # pragma: no cover

    def address(self, lv: MemLV):
        """The address of a memory lvalue as a value (a register or a constant)."""
        if lv.base is None:
            return C(lv.off)
        return lv.base if lv.off == 0 else self.alu(Op.ADD, lv.base, C(lv.off))

    def saddr(self, e: A.Expr) -> tuple["int | None", int]:
        """The first cell of a struct-valued (or member) expression, as (register or None, offset):
        every struct value lives in memory."""
        if isinstance(e, A.Name):
            return self.sym_addr(e.sym)
        if isinstance(e, A.Member):
            base, off = self.ptr_addr(e.base) if e.arrow else self.saddr(e.base)
            return base, off + e.member.offset
        if isinstance(e, A.Index):
            return self.index_addr(e)
        if isinstance(e, A.Unary) and e.op == "*":
            return self.ptr_addr(e.operand)
        if isinstance(e, A.Call):
            if isinstance(e.callee, FuncSym) and e.callee.ret_ref:
                return self.reg(self.inline(e, e.callee)), 0
            self.e_Call(e)
            return self.sym_addr(e.tmp)
        if isinstance(e, A.Assign):
            return self.struct_assign(e)
        if isinstance(e, A.Comma):
            self.effect(e.left)
            return self.saddr(e.right)
        if isinstance(e, A.Cond):
            self.e_Cond(e)
            return self.sym_addr(e.tmp)
        raise AssertionError(f"not a struct: {e}")  # pragma: no cover

    def copy_cells(self, dst: tuple["int | None", int], src: tuple["int | None", int], n: int) -> None:
        """Copy n cells (a struct assignment: the cells' bits, char cells included), one at a
        time: two objects of one struct type are the same cells or disjoint ones."""
        if dst == src:
            return
        sb, so = self.base_reg(MemLV(src[0], src[1], INT))
        db, do = self.base_reg(MemLV(dst[0], dst[1], INT))
        for i in range(n):
            t = self.new()
            self.emit(Op.LD, t, sb, imm=so + i)
            self.emit(Op.ST, -1, db, t, imm=do + i)

    def struct_assign(self, e: A.Assign) -> tuple["int | None", int]:
        src = self.saddr(e.value)  # C++17: the right operand is sequenced first
        dst = self.saddr(e.target)
        self.copy_cells(dst, src, cells(e.target.ty))
        return dst
