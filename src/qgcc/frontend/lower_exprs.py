"""Lowering, expressions: conversions between the subset's types, operators (32-bit inline; 64-bit
integers through `wide`, doubles through `doubles`), comparisons and branches on conditions,
assignment, `?:`, casts.

A mixin of `codegen.KernelGen`; it imports the shared lowering values (`values`) and the
per-family lowerings, never `codegen`.
"""

from __future__ import annotations

from ..isa import Op
from . import ast as A, doubles, floatconst, textures, wide
from .structs import cells, is_struct
from .types import (BOOL, CHAR, INT, NARROW_MASKS, IntType, PtrType, Type, VoidType, fold_binary, is_double, is_float, is_ptr,
                    is_wide, wrap)
from .values import C, MASK32, MemLV, Pair, VarLV, _log2, is_c


class ExprGen:
    """Conversions, operators and branches (a mixin of `codegen.KernelGen`)."""

    def convert(self, v, src: Type, dst: Type):
        if is_double(src) or is_double(dst):
            return doubles.convert(self, v, src, dst)
        if is_wide(src) or is_wide(dst):
            return self.convert_wide(v, src, dst)
        if is_float(dst) and isinstance(src, IntType):
            if is_c(v):
                return C(floatconst.from_int(v.value, src.signed))
            return self.call_lib("__qg_i2f" if src.kind != "unsigned" else "__qg_u2f", [v])
        if is_float(src) and isinstance(dst, IntType):
            if dst.kind == "bool":
                return self.float_truth(v)
            if is_c(v):
                c = floatconst.to_uint(v.value) if dst.kind == "unsigned" else floatconst.to_int(v.value)
                return C(wrap(c, dst))
            r = self.call_lib("__qg_f2u" if dst.kind == "unsigned" else "__qg_f2i", [v])
            return self.convert(r, INT, dst) if dst.kind in NARROW_MASKS else r
        if not isinstance(dst, IntType) or not isinstance(src, IntType):
            return v
        if is_c(v):
            return C(wrap(v.value, dst))
        k = dst.kind
        if k == "bool":
            return v if src.kind == "bool" else self.alu(Op.SNE, v, C(0))
        if k == "char":
            if src.kind in ("char", "bool"):
                return v
            return self.alu(Op.SRA, self.alu(Op.SHL, v, C(24)), C(24))
        if k == "uchar":
            if src.kind in ("uchar", "bool"):
                return v
            return self.alu(Op.AND, v, C(0xFF))
        if k == "short":
            if src.kind in ("short", "char", "uchar", "bool"):
                return v
            return self.alu(Op.SRA, self.alu(Op.SHL, v, C(16)), C(16))
        if k == "ushort":
            if src.kind in ("ushort", "uchar", "bool"):
                return v
            return self.alu(Op.AND, v, C(0xFFFF))
        return v

    def convert_wide(self, v, src: Type, dst: Type):
        """Conversions with a 64-bit side (C's rules: modulo 2^N between integers, float -> 64-bit
        truncating and saturating as CUDA does, 64-bit -> float rounded once)."""
        if is_wide(src) and is_wide(dst):
            return v
        if is_wide(dst):
            if is_float(src):
                if is_c(v):
                    return wide.const(floatconst.to_int64(v.value, dst.signed))
                return self.call_lib("__qg_f2ll" if dst.signed else "__qg_f2ull", [v])
            if isinstance(src, PtrType):
                return Pair(v, C(0))
            if is_c(v):
                return wide.const(wrap(v.value, src))
            return wide.widen(self, v, src)
        # src is 64-bit
        if is_float(dst):
            cv = wide.const_value(v)
            if cv is not None:
                return C(floatconst.from_int64(cv, src.signed))
            return self.call_lib("__qg_ll2f" if src.signed else "__qg_ull2f", [v])
        if isinstance(dst, IntType):
            cv = wide.const_value(v)
            if cv is not None:
                return C(wrap(cv, dst))
            return wide.narrow(self, v, dst)
        return v.lo  # a pointer from the constant 0

    def low_word(self, v, t: Type):
        """An index or offset of type t as a 32-bit value (addresses are 32 bits)."""
        return v.lo if is_wide(t) else v

    def effect(self, e: A.Expr) -> None:
        """Evaluate e for its side effects only."""
        saved = self.line
        self.line = e.line
        if isinstance(e, A.Assign):
            self.e_Assign(e, want=False)
        elif isinstance(e, A.IncDec):
            self.e_IncDec(e, want=False)
        elif isinstance(e, A.Comma):
            self.effect(e.left)
            self.effect(e.right)
        elif isinstance(e, A.Cast) and isinstance(e.target, VoidType):
            self.effect(e.operand)
        elif isinstance(e, A.Cond) and isinstance(e.ty, VoidType):
            self.e_Cond(e)
        elif e.const is not None:
            pass
        else:
            self.val(e)
        self.line = saved

    def val(self, e: A.Expr):
        """The value of e (decayed arrays give their address)."""
        if e.const is not None and not is_ptr(e.ty):
            return wide.const(e.const) if is_wide(e.ty) else C(e.const)
        if e.fconst is not None:
            return C(e.fconst)
        if e.dconst is not None:
            return doubles.const(e.dconst)
        saved = self.line
        self.line = e.line
        if e.arr is not None:
            base, off = self.array_addr(e)
            v = C(off) if base is None else (base if off == 0 else self.alu(Op.ADD, base, C(off)))
        else:
            v = getattr(self, "e_" + type(e).__name__)(e)
        self.line = saved
        return v

    def e_Name(self, e: A.Name):
        sym = e.sym
        if sym.kind == "texture":  # a texture reference: the kernel's hidden parameter for it
            sym = textures.hidden_param(self, sym)
        if sym.kind == "shared" and sym.space in ("local", "bound"):  # a local whose address is taken
            return self.load(MemLV(*self.sym_addr(sym), sym.ty))
        if sym.kind == "shared":
            return self.load(MemLV(None, self.mem_addr(sym), sym.ty))
        if sym not in self.env and sym.kind == "param" and sym in self.fs.params:
            return self.load_param(sym)  # a kernel parameter re-read where it is used
        v = self.env[sym]
        if isinstance(v, MemLV):  # a reference parameter bound to a memory cell
            return self.load(v)
        return v

    def e_Member(self, e: A.Member):
        if e.member is not None:
            return self.load(self.lvalue(e))
        t = self.new()
        self.emit(Op.S2R, t, mod=e.sreg)
        return t

    def e_Unary(self, e: A.Unary):
        op = e.op
        if op == "*":
            return self.load(self.lvalue(e))
        if op == "&":
            base, off = self.ptr_addr(e)
            if base is None:
                return C(off)
            return base if off == 0 else self.alu(Op.ADD, base, C(off))
        v = self.val(e.operand)
        if is_double(e.operand.ty):
            if op == "-":
                return doubles.neg(self, v)
            if op == "!":
                return self.alu(Op.XOR, doubles.truth(self, v), C(1))
            return v
        if is_wide(e.operand.ty):
            if op == "-":
                return wide.neg(self, v)
            if op == "~":
                return wide.bitwise(self, Op.XOR, v, wide.const(-1))
            if op == "!":
                return self.alu(Op.SEQ, wide.either(self, v), C(0))
            return v
        if is_float(e.operand.ty):
            if op == "+":
                return v
            if op == "-":
                return self.alu(Op.XOR, v, C(floatconst.SIGN))
            if op == "!":
                return self.alu(Op.SEQ, self.alu(Op.SHL, v, C(1)), C(0))
        if op == "+":
            return v
        if op == "-":
            return self.alu(Op.MUL, v, C(-1))
        if op == "~":
            return self.alu(Op.XOR, v, C(-1))
        if op == "!":
            return self.alu(Op.SEQ, v, C(0))
        raise AssertionError(op)  # pragma: no cover

    def e_IncDec(self, e: A.IncDec, want: bool = True):
        lv = self.lvalue(e.operand)
        t = e.operand.ty
        old = self.read(lv)
        delta = 1 if e.op == "++" else -1
        if is_ptr(t):
            delta *= cells(t.elem)
        if isinstance(lv, VarLV) and want and not e.prefix:
            copy = self.new_like(t)
            self.mov(copy, old)
            old = copy
        if is_double(t):
            new = doubles.increment(self, old, delta)
            stored = self.assign_to(lv, new, t, t, want and e.prefix)
        elif is_wide(t):
            new = wide.add(self, old, wide.const(delta))
            stored = self.assign_to(lv, new, t, t, want and e.prefix)
        elif is_float(t):
            new = self.float_arith("+", old, C(floatconst.from_int(delta, True)))
            stored = self.assign_to(lv, new, t, t, want and e.prefix)
        else:
            new = self.alu(Op.ADD, old, C(delta))
            stored = self.assign_to(lv, new, t if is_ptr(t) else INT, t, want and e.prefix)
        if not want:
            return None
        return stored if e.prefix else old

    def e_Binary(self, e: A.Binary):
        op = e.op
        if op in ("&&", "||"):
            return self.logical(e)
        lt, rt = e.left.ty, e.right.ty
        if op in ("+", "-") and (is_ptr(lt) or is_ptr(rt)):
            if op == "-" and is_ptr(lt) and is_ptr(rt):
                diff = self.alu(Op.SUB, self.val(e.left), self.val(e.right))
                size = cells(lt.elem)  # elements, not cells
                if size & (size - 1) == 0:
                    return diff if size == 1 else self.alu(Op.SRA, diff, C(size.bit_length() - 1))
                return self.arith("/", diff, C(size), INT)
            base, off = self.ptr_addr(e)
            if base is None:
                return C(off)
            return base if off == 0 else self.alu(Op.ADD, base, C(off))
        a = self.convert(self.val(e.left), lt, e.opty)
        if op in ("<<", ">>"):  # the amount keeps its own type; its low word is what counts
            b = self.low_word(self.val(e.right), rt)
        else:
            b = self.convert(self.val(e.right), rt, e.opty)
        if op in ("<", ">", "<=", ">=", "==", "!="):
            t, neg = self.compare(op, a, b, e.opty)
            return self.alu(Op.XOR, t, C(1)) if neg else t
        return self.arith(op, a, b, e.opty)

    def arith(self, op: str, a, b, t: IntType):
        if is_double(t):
            return doubles.arith(self, op, a, b)
        if is_float(t):
            return self.float_arith(op, a, b)
        if is_wide(t):
            return wide.arith(self, op, a, b, t)
        if is_c(a) and is_c(b):
            return C(fold_binary(op, a.value, b.value, t))
        if op in ("+", "*", "&", "|", "^") and is_c(a):
            a, b = b, a
        if op == "+":
            if is_c(b) and b.value & MASK32 == 0:
                return a
            return self.alu(Op.ADD, a, b)
        if op == "-":
            if is_c(b):
                if b.value & MASK32 == 0:
                    return a
                return self.alu(Op.ADD, a, C(-b.value))
            return self.alu(Op.SUB, a, b)
        if op == "*":
            if is_c(b):
                c = b.value & MASK32
                if c == 0:
                    return C(0)
                if c == 1:
                    return a
                k = _log2(c)
                if k is not None:
                    return self.alu(Op.SHL, a, C(k))
            return self.alu(Op.MUL, a, b)
        if op in ("/", "%"):
            return self.divmod(op, a, b, t.signed)
        if op == "&":
            return self.alu(Op.AND, a, b)
        if op == "|":
            return self.alu(Op.OR, a, b)
        if op == "^":
            return self.alu(Op.XOR, a, b)
        if op == "<<":
            return self.alu(Op.SHL, a, C(b.value & 31) if is_c(b) else b)
        if op == ">>":
            return self.alu(Op.SRA if t.signed else Op.SHR, a, C(b.value & 31) if is_c(b) else b)
        raise AssertionError(op)  # pragma: no cover

    def compare(self, op: str, a, b, t: IntType) -> tuple["int | C", bool]:
        """(v, negated): the truth of `a op b` is v (0/1), inverted when negated."""
        if is_double(t):
            return doubles.compare(self, op, a, b)
        if is_float(t):
            if is_c(a) and is_c(b):
                return C(floatconst.fold(op, a.value, b.value)), False
            if op == "!=":
                if Op.FSNE in self.hw_float:
                    return self.alu(Op.FSNE, a, b), False
                return self.call_lib("__qg_feq", [a, b]), True
            name, swap = {"<": ("__qg_flt", False), ">": ("__qg_flt", True), "<=": ("__qg_fle", False),
                          ">=": ("__qg_fle", True), "==": ("__qg_feq", False)}[op]
            return self.call_lib(name, [b, a] if swap else [a, b]), False
        signed = t.signed
        if is_wide(t):
            return wide.compare(self, op, a, b, signed)
        slt = Op.SLT if signed else Op.SLTU
        if is_c(a) and is_c(b):
            return C(fold_binary(op, a.value, b.value, t)), False
        if op in ("==", "!="):
            if is_c(a):
                a, b = b, a
            return self.alu(Op.SEQ if op == "==" else Op.SNE, a, b), False
        if is_c(a):  # put the constant on the right
            a, b = b, a
            op = {"<": ">", ">": "<", "<=": ">=", ">=": "<="}[op]
        if is_c(b) and op in (">", "<="):
            c = wrap(b.value, t)
            top = 0x7FFFFFFF if signed else MASK32
            if c == top:  # a <= MAX is always true, a > MAX always false
                return C(1 if op == "<=" else 0), False
            # a <= c  <=>  a < c+1 ;  a > c  <=>  !(a < c+1)
            return self.alu(slt, a, C(c + 1)), op == ">"
        if op == "<":
            return self.alu(slt, a, b), False
        if op == ">=":
            return self.alu(slt, a, b), True
        if op == ">":
            return self.alu(slt, self.reg(b), a), False
        return self.alu(slt, self.reg(b), a), True  # <=

    def logical(self, e: A.Binary):
        is_and = e.op == "&&"
        lc = e.left.const
        if lc is not None:
            if bool(lc) != is_and:  # 0 && x -> 0 ; 1 || x -> 1
                return C(0 if is_and else 1)
            return self.truth(e.right)
        res = self.new()
        end = self.label()
        self.mov(res, self.truth(e.left))
        self.emit(Op.BRZ if is_and else Op.BRNZ, rs1=res, target=end)
        self.mov(res, self.truth(e.right))
        self.place(end)
        return res

    def truth(self, e: A.Expr):
        """e converted to bool (0/1)."""
        v = self.val(e)
        if e.ty == BOOL:
            return v
        if is_float(e.ty):
            return self.float_truth(v)
        if is_double(e.ty):
            return doubles.truth(self, v)
        if isinstance(v, Pair):
            return wide.truth(self, v)
        if is_c(v):
            return C(int(v.value != 0))
        return self.alu(Op.SNE, v, C(0))

    def float_truth(self, v):
        """A float as a condition: 1 unless it is +0 or -0 (NaN is true)."""
        if is_c(v):
            return C(int(floatconst.truth(v.value)))
        return self.alu(Op.SNE, self.alu(Op.SHL, v, C(1)), C(0))

    def branch(self, e: A.Expr, lab: int, jump_if: bool) -> None:
        """Branch to lab when the truth of e equals jump_if; fall through otherwise."""
        if e.const is not None:
            if bool(e.const) == jump_if:
                self.emit(Op.BRA, target=lab)
            return
        saved = self.line
        self.line = e.line
        if isinstance(e, A.Binary) and e.op in ("&&", "||"):
            is_and = e.op == "&&"
            if jump_if != is_and:
                # && jumping on false / || jumping on true: either operand decides.
                self.branch(e.left, lab, jump_if)
                self.branch(e.right, lab, jump_if)
            else:
                skip = self.label()
                self.branch(e.left, skip, not jump_if)
                self.branch(e.right, lab, jump_if)
                self.place(skip)
        elif isinstance(e, A.Unary) and e.op == "!":
            self.branch(e.operand, lab, not jump_if)
        elif isinstance(e, A.Binary) and e.op in ("<", ">", "<=", ">=", "==", "!="):
            if e.op in ("==", "!=") and (e.right.const == 0 or e.left.const == 0) \
                    and not is_float(e.opty) and not is_double(e.opty):
                # x == 0 / x != 0: test x directly
                other = e.left if e.right.const == 0 else e.right
                v = self.val(other)
                truth_is_v = e.op == "!="
                self.cond_jump(v, jump_if == truth_is_v, lab)
            else:
                a = self.convert(self.val(e.left), e.left.ty, e.opty)
                b = self.convert(self.val(e.right), e.right.ty, e.opty)
                t, neg = self.compare(e.op, a, b, e.opty)
                self.cond_jump(t, jump_if != neg, lab)
        elif is_float(e.ty):
            self.cond_jump(self.float_truth(self.val(e)), jump_if, lab)
        elif is_double(e.ty):
            self.cond_jump(doubles.truth(self, self.val(e)), jump_if, lab)
        else:
            self.cond_jump(self.val(e), jump_if, lab)
        self.line = saved

    def cond_jump(self, v, nonzero: bool, lab: int) -> None:
        if isinstance(v, Pair):
            v = wide.either(self, v)
        if is_c(v):
            if (v.value != 0) == nonzero:
                self.emit(Op.BRA, target=lab)
            return
        self.emit(Op.BRNZ if nonzero else Op.BRZ, rs1=v, target=lab)

    def assign_to(self, lv, raw, src: Type, dst: Type, want: bool):
        """Store raw (a value of type src) converted to dst into lv; returns the stored value."""
        if isinstance(lv, MemLV) and lv.elem == CHAR and isinstance(src, IntType):
            # The cell keeps the low 8 bits only: no need to sign-extend first.
            self.store(lv, raw)
            return self.convert(raw, src, dst) if want else None
        v = self.convert(raw, src, dst)
        self.write(lv, v)
        if isinstance(lv, VarLV):
            return self.env[lv.sym]
        return v

    def e_Assign(self, e: A.Assign, want: bool = True):
        tt = e.target.ty
        if is_struct(tt):
            return self.address(MemLV(*self.struct_assign(e), tt))
        if e.op == "=":
            raw = self.val(e.value)  # C++17: the right operand is sequenced first
            lv = self.lvalue(e.target)
            return self.assign_to(lv, raw, e.value.ty, tt, want)
        op = e.op[:-1]
        rv = self.val(e.value)
        lv = self.lvalue(e.target)
        old = self.read(lv)
        if is_ptr(tt):
            rv = self.low_word(rv, e.value.ty)
            size = cells(tt.elem)
            if op == "-":
                size = -size
            if size != 1:
                rv = C(rv.value * size) if is_c(rv) else self.arith("*", rv, C(size), INT)
            new = old if is_c(rv) and rv.value & MASK32 == 0 else self.alu(Op.ADD, old, rv)
            return self.assign_to(lv, new, tt, tt, want)
        if is_float(e.opty) or is_double(e.opty):
            old = self.convert(old, tt, e.opty)
            rv = self.convert(rv, e.value.ty, e.opty)
        elif is_wide(e.opty) or is_wide(e.value.ty):
            old = self.convert(old, tt, e.opty)
            rv = (self.low_word(rv, e.value.ty) if op in ("<<", ">>")
                  else self.convert(rv, e.value.ty, e.opty))
        new = self.arith(op, old, rv, e.opty)
        return self.assign_to(lv, new, e.opty, tt, want)

    def e_Cond(self, e: A.Cond):
        c = None if e.tmp is not None else e.cond.const
        void = isinstance(e.ty, VoidType)
        if c is not None:
            chosen = e.then if c else e.other
            if void:
                self.effect(chosen)
                return None
            return self.convert(self.val(chosen), chosen.ty, e.ty)
        if e.tmp is not None:  # a struct: the chosen arm is copied into the temporary
            else_l, end_l = self.label(), self.label()
            dst = self.sym_addr(e.tmp)
            self.branch(e.cond, else_l, False)
            self.copy_cells(dst, self.saddr(e.then), cells(e.ty))
            self.emit(Op.BRA, target=end_l)
            self.place(else_l)
            self.copy_cells(dst, self.saddr(e.other), cells(e.ty))
            self.place(end_l)
            return None
        else_l, end_l = self.label(), self.label()
        res = None if void else self.new_like(e.ty)
        self.branch(e.cond, else_l, False)
        for i, arm in enumerate((e.then, e.other)):
            if void:
                self.effect(arm)
            else:
                self.mov(res, self.convert(self.val(arm), arm.ty, e.ty))
            if i == 0:
                self.emit(Op.BRA, target=end_l)
                self.place(else_l)
        self.place(end_l)
        return res

    def e_Comma(self, e: A.Comma):
        self.effect(e.left)
        return self.val(e.right)

    def e_Cast(self, e: A.Cast):
        if isinstance(e.target, VoidType):
            self.effect(e.operand)
            return None
        return self.convert(self.val(e.operand), e.operand.ty, e.target)

    def e_Index(self, e: A.Index):
        return self.load(self.lvalue(e))
