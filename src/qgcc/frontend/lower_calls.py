"""Lowering, calls: device functions (inlined at each call), built-ins (atomics, warp and integer
intrinsics through `intrinsics`, math and float functions), and the routines of the .cu
libraries (soft-float, division, int64, double), each emitted once out of line and reached by
`BRA` / `JR link`; integer division and remainder.

A mixin of `codegen.KernelGen`; it imports the shared lowering values (`values`) and the
per-family lowerings, never `codegen`.
"""

from __future__ import annotations

from ..isa import AtomOp, FORMATS, Fmt, Op, to_s32
from . import ast as A, doubles, floatconst, intrinsics, printf, textures, wide
from .builtin_names import ATOMICS, BIT_CASTS, DOUBLE_FUNCS, FENCES, FLOAT_FUNCS, INT_FUNCS, MATH_FUNCS, WARP_FUNCS
from .ir import VI
from .softfloat import library
from .structs import cells, is_struct
from .symbols import FuncSym
from .types import DOUBLE, FLOAT, INT, LLONG, UINT, VoidType, is_double, is_float, is_wide
from .values import (C, FPU_ROUTINE_OPS, Frame, HW_ROUTINES, INLINE_HELPERS, MASK32, MemLV, ON_FPU, Pair, Routine,
                     VarLV, _flat, _log2, is_c)


class CallGen:
    """Calls, built-ins and library routines (a mixin of `codegen.KernelGen`)."""

    def e_Call(self, e: A.Call):
        callee = e.callee
        if isinstance(callee, FuncSym):
            if self.in_routine and callee.name not in INLINE_HELPERS:
                # Library helpers are routines too: one copy each, however often they are used.
                args = [self.convert(self.val(a), a.ty, pt) for a, pt in zip(e.args, callee.param_types)]
                return self.call_lib(callee.name, args)
            r = self.inline(e, callee)
            if callee.ret_ref and not is_struct(e.ty):
                return self.load(MemLV(self.reg(r), 0, e.ty))
            return r
        if callee == "make_vector":
            base, off = self.sym_addr(e.tmp)
            for a, f in zip(e.args, e.ty.fields):
                self.store(MemLV(base, off + f.offset, f.ty), self.convert(self.val(a), a.ty, f.ty))
            return self.address(MemLV(base, off, e.ty))
        if callee in ("tex1Dfetch", "tex1D", "tex2D"):
            return textures.fetch(self, e)
        if callee == "printf":
            return printf.printf(self, e)
        if callee == "assert":
            return printf.check_assert(self, e)
        if callee == "__syncthreads":
            self.emit(Op.BAR)
            return None
        if callee in FENCES:  # sequentially consistent memory: nothing to order (builtin_names.FENCES)
            return None
        if callee in FLOAT_FUNCS:
            args = [self.convert(self.val(a), a.ty, FLOAT) for a in e.args]
            return self.float_func(callee, args)
        if callee in MATH_FUNCS:
            routine, sig, extra = MATH_FUNCS[callee]
            args = [self.convert(self.val(a), a.ty, FLOAT if k == "f" else INT) if k in "fi"
                    else self.val(a) for a, k in zip(e.args, sig.split(":")[0])]
            return self.call_lib(routine, args + [C(v) for v in extra])
        if callee in DOUBLE_FUNCS:
            return doubles.func(self, callee, [self.convert(self.val(a), a.ty, e.ty) for a in e.args])
        if callee in ("__double_as_longlong", "__longlong_as_double"):
            a = e.args[0]  # the same register pair
            return self.convert(self.val(a), a.ty, DOUBLE if callee == "__double_as_longlong" else LLONG)
        if callee in BIT_CASTS:
            a = e.args[0]
            return self.convert(self.val(a), a.ty, UINT) if is_wide(a.ty) else self.val(a)
        if callee in ("min", "max") and is_double(e.ty):
            return doubles.func(self, callee, [self.convert(self.val(a), a.ty, e.ty) for a in e.args])
        if callee in ("min", "max") and is_float(e.ty):
            args = [self.convert(self.val(a), a.ty, FLOAT) for a in e.args]
            return self.float_func("fminf" if callee == "min" else "fmaxf", args)
        if callee in ("min", "max") and is_wide(e.ty):
            a = self.convert(self.val(e.args[0]), e.args[0].ty, e.ty)
            b = self.convert(self.val(e.args[1]), e.args[1].ty, e.ty)
            return wide.minmax(self, callee, a, b, e.ty.signed)
        if callee == "abs" and is_wide(e.ty):
            return wide.abs_(self, self.convert(self.val(e.args[0]), e.args[0].ty, e.ty))
        if callee in ("min", "max"):
            t = e.ty
            a = self.convert(self.val(e.args[0]), e.args[0].ty, t)
            b = self.convert(self.val(e.args[1]), e.args[1].ty, t)
            # min(a,b) = b + (a-b)*(a<b) ; max(a,b) = a + (b-a)*(a<b)
            lt, neg = self.compare("<", a, b, t)
            if neg:
                lt = self.alu(Op.XOR, lt, C(1))
            if callee == "min":
                return self.arith("+", b, self.arith("*", self.alu(Op.SUB, self.reg(a), b), lt, UINT), UINT)
            return self.arith("+", a, self.arith("*", self.alu(Op.SUB, self.reg(b), a), lt, UINT), UINT)
        if callee == "abs":
            v = self.val(e.args[0])
            s = self.alu(Op.SRA, v, C(31))
            return self.alu(Op.SUB, self.alu(Op.XOR, v, s), s)
        if callee in ATOMICS:
            return self.atomic(e, callee)
        if callee in WARP_FUNCS:
            return intrinsics.warp(self, e, callee)
        if callee in INT_FUNCS:
            return intrinsics.integer(self, e, callee)
        raise AssertionError(callee)  # pragma: no cover

    def atomic(self, e: A.Call, name: str):
        elem = e.ty
        base, off = self.ptr_addr(e.args[0])
        vals = [self.convert(self.val(a), a.ty, elem) for a in e.args[1:]]
        if base is None:
            base = self.reg(C(off))
            off = 0
        if is_float(elem) and name == "atomicAdd":
            return self.float_atomic_add(base, off, vals[0])
        if name in ("atomicInc", "atomicDec"):
            return intrinsics.atomic_inc_dec(self, base, off, vals[0], name)
        if is_wide(elem) and name != "atomicAdd":  # And/Or/Xor: each half on its own
            v = vals[0]
            mod = {"atomicAnd": AtomOp.AND, "atomicOr": AtomOp.OR, "atomicXor": AtomOp.XOR}[name]
            old_lo, old_hi = self.new(), self.new()
            self.emit(Op.ATOM, old_lo, base, self.reg(v.lo), imm=off, mod=mod)
            self.emit(Op.ATOM, old_hi, base, self.reg(v.hi), imm=off + 1, mod=mod)
            return Pair(old_lo, old_hi)
        if is_wide(elem):  # atomicAdd on unsigned long long: the low word, then the high word and carry
            v = vals[0]
            old_lo, old_hi = self.new(), self.new()
            self.emit(Op.ATOM, old_lo, base, self.reg(v.lo), imm=off, mod=AtomOp.ADD)
            carry = self.alu(Op.SLTU, self.alu(Op.ADD, old_lo, v.lo), old_lo)
            self.emit(Op.ATOM, old_hi, base, self.reg(self.alu(Op.ADD, v.hi, carry)), imm=off + 1,
                      mod=AtomOp.ADD)
            return Pair(old_lo, old_hi)
        rd = self.new()
        if name == "atomicCAS":
            cmp, new = vals
            self.mov(rd, new)
            self.emit(Op.ATOM, rd, base, self.reg(cmp), imm=off, mod=AtomOp.CAS)
            return rd
        v = vals[0]
        signed = elem == INT
        mod = {
            "atomicAdd": AtomOp.ADD, "atomicSub": AtomOp.ADD, "atomicExch": AtomOp.EXCH,
            "atomicAnd": AtomOp.AND, "atomicOr": AtomOp.OR, "atomicXor": AtomOp.XOR,
            "atomicMin": AtomOp.MIN if signed else AtomOp.MINU,
            "atomicMax": AtomOp.MAX if signed else AtomOp.MAXU,
        }[name]
        if name == "atomicSub":
            v = C(-v.value) if is_c(v) else self.alu(Op.MUL, v, C(-1))
        self.emit(Op.ATOM, rd, base, self.reg(v), imm=off, mod=mod)
        return rd

    def inline(self, e: A.Call, fs: FuncSym):
        fd = fs.definition
        assert fd is not None
        args = []
        binds = e.ref_binds or [False] * len(e.args)
        for i, (a, pt) in enumerate(zip(e.args, fs.param_types)):
            if is_struct(pt):  # its cells: copied (by value) or named (a reference) below
                args.append(self.saddr(a))
                continue
            if binds[i]:
                # A reference parameter names the argument itself: its register, or its cell.
                lv = self.lvalue(a)
                args.append(self.env[lv.sym] if isinstance(lv, VarLV) else lv)
                continue
            v = self.convert(self.val(a), a.ty, pt)
            held = v.regs() if isinstance(v, Pair) else () if is_c(v) else (v,)
            if any(r in self.var_regs for r in held) and (i + 1 < len(e.args) or any(binds)):
                # A later argument (or a reference) might modify the variable: pass its current value.
                r = self.new_like(pt)
                self.mov(r, v)
                v = r
            args.append(v)
        for sym, v, bound in zip(fs.params, args, binds):
            if is_struct(sym.ty):
                if sym.space == "bound":
                    self.bound[sym] = v
                else:
                    self.copy_cells(self.sym_addr(sym), v, cells(sym.ty))
                continue
            if bound:
                self.env[sym] = v
            elif sym.assigned:
                r = self.new_like(sym.ty)
                self.mov(r, v)
                self.env[sym] = r
                self.var_regs.update(r.regs() if isinstance(r, Pair) else (r,))
            else:
                self.env[sym] = v
        struct_ret = is_struct(fs.ret) and not fs.ret_ref
        ret_reg = None if isinstance(fs.ret, VoidType) or struct_ret else self.new_like(fs.ret)
        frame = Frame(fs, self.label(), ret_reg)
        if struct_ret:
            frame.ret_addr = self.sym_addr(e.tmp)
        self.frames.append(frame)
        if ret_reg is not None and not self.always_returns(fd.body):
            # Falling off the end of a non-void function is undefined; make it 0.
            self.mov(ret_reg, wide.const(0) if isinstance(ret_reg, Pair) else C(0))
        for item in fd.body.items:
            self.stmt(item)
        self.frames.pop()
        self.place(frame.ret_label)
        if struct_ret:
            return self.address(MemLV(*frame.ret_addr, fs.ret))
        return ret_reg

    def always_returns(self, s) -> bool:
        if isinstance(s, A.Return):
            return True
        if isinstance(s, A.Block):
            return any(self.always_returns(x) for x in s.items)
        if isinstance(s, A.If):
            return s.other is not None and self.always_returns(s.then) and self.always_returns(s.other)
        return False

    def float_arith(self, op: str, a, b):
        if is_c(a) and is_c(b):
            return C(floatconst.fold(op, a.value, b.value))
        routine = {"+": "__qg_fadd", "-": "__qg_fsub", "*": "__qg_fmul", "/": "__qg_fdiv"}[op]
        if HW_ROUTINES.get(routine) in self.hw_float:
            return self.call_lib(routine, [a, b])  # one instruction of the machine's float unit
        if self.fma_only and op != "/":
            # Without the float unit (--soft-float), inside the math library a + b, a - b, a * b are fmaf(a, 1, b), fmaf(a, 1, -b),
            # fmaf(a, b, -0): the same IEEE results, and one routine instead of three.
            if op == "*":
                return self.call_lib("__qg_fma", [a, b, C(0x80000000)])
            if op == "-":
                b = C(b.value ^ 0x80000000) if is_c(b) else self.alu(Op.XOR, b, C(0x80000000))
            return self.call_lib("__qg_fma", [a, C(0x3F800000), b])
        return self.call_lib(routine, [a, b])

    def float_func(self, name: str, args: list):
        if name == "fabsf":
            v = args[0]
            return C(v.value & 0x7FFFFFFF) if is_c(v) else self.alu(Op.AND, v, C(0x7FFFFFFF))
        if name in ("__fadd_rn", "__fsub_rn", "__fmul_rn", "__fdiv_rn"):
            return self.float_arith({"a": "+", "s": "-", "m": "*", "d": "/"}[name[3]], *args)
        if name == "__fdividef":
            return self.float_arith("/", *args)
        if name == "__frcp_rn":
            return self.float_arith("/", C(0x3F800000), args[0])
        routine = {"sqrtf": "__qg_fsqrt", "__fsqrt_rn": "__qg_fsqrt", "fminf": "__qg_fmin",
                   "fmaxf": "__qg_fmax", "fmaf": "__qg_fma", "__fmaf_rn": "__qg_fma"}[name]
        return self.call_lib(routine, args)

    def float_atomic_add(self, base, off: int, v):
        """atomicAdd on a float cell: a compare-and-swap loop around the float add."""
        v = self.reg(v)
        return self.cas_loop(base, off, lambda assumed: self.call_lib("__qg_fadd", [assumed, v]))

    def cas_loop(self, base, off: int, new_of) -> int:
        """An atomic read-modify-write the machine has no ATOM for: every lane loads the cell,
        computes `new_of(assumed)` and swaps it in if the cell still holds what it loaded, else
        goes round.  Lanes of a warp reach the cell in lane order (as every ATOM does): the
        first lane's CAS succeeds, the others see its value and go round again.  Returns the
        old value's vreg."""
        old, assumed = self.new(), self.new()
        self.emit(Op.LD, old, base, imm=off)
        top = self.label()
        self.place(top)
        self.mov(assumed, old)
        self.mov(old, new_of(assumed))
        self.emit(Op.ATOM, old, base, assumed, imm=off, mod=AtomOp.CAS)
        self.emit(Op.BRNZ, rs1=self.alu(Op.SNE, old, assumed), target=top)
        return old

    def call_lib(self, name: str, args: list) -> int:
        """Call a soft-float routine (emitting it on first use); returns the result's vreg.

        A routine the machine has an instruction for (HW_ROUTINES, unless --soft-float) is
        that one instruction instead, and division and square root the float unit's routines."""
        if name in ON_FPU and FPU_ROUTINE_OPS <= self.hw_float:
            name = ON_FPU[name]
        op = HW_ROUTINES.get(name)
        if op in self.hw_float:
            if op is Op.FFMA:
                t = self.new()
                self.mov(t, args[2])
                self.emit(op, t, self.reg(args[0]), self.reg(args[1]))
                return t
            if FORMATS[op] is Fmt.UN:
                t = self.new()
                self.emit(op, t, self.reg(args[0]))
                return t
            return self.alu(op, *args)
        r = self.routines.get(name)
        if r is None:
            r = self.emit_routine(name)
        for p, a in zip(r.params, args):
            self.mov(p, a)
        back = self.label()
        line = 0 if self.in_routine else self.line
        self.code.append(VI(Op.MOV, r.link, imm=0, use_imm=True, target=back, line=line))
        call = VI(Op.BRA, target=r.entry, line=line)
        call.extra_reads = _flat(r.params) + (r.link,) + r.frame_reads
        call.clobbers = r.clobbers
        self.code.append(call)
        self.place(back)
        out = Pair(self.new(), self.new()) if isinstance(r.ret, Pair) else self.new()
        self.mov(out, r.ret)
        return out

    def emit_routine(self, name: str) -> Routine:
        fs = library()[name]
        r = Routine(self.label(), [self.new_like(p.ty) for p in fs.params], self.new_like(fs.ret), self.new())
        self.routines[name] = r
        saved = (self.code, self.frames, self.in_routine, self.line, self.fma_only)
        self.code, self.frames, self.in_routine = [], [], True
        self.fma_only = name.startswith("__qgm_")
        self.place(r.entry)
        for sym, v in zip(fs.params, r.params):
            if sym.assigned:
                copy = self.new_like(sym.ty)
                self.mov(copy, v)
                self.env[sym] = copy
            else:
                self.env[sym] = v
        frame = Frame(fs, self.label(), r.ret)
        self.frames.append(frame)
        for item in fs.definition.body.items:
            self.stmt(item)
        self.place(frame.ret_label)
        jr = VI(Op.JR, rs1=r.link, line=0)
        jr.extra_reads = _flat([r.ret])
        self.code.append(jr)
        writes = set()
        for vi in self.code:
            w = vi.writes()
            if w is not None:
                writes.add(w)
            writes |= vi.clobbers or set()
        r.clobbers = frozenset(writes)
        base = self.local_base
        if base is not None and any(vi.op is not None and base in vi.reads() for vi in self.code):
            r.frame_reads = (base,)
        self.routine_code.extend(self.code)
        self.code, self.frames, self.in_routine, self.line, self.fma_only = saved
        return r

    def divmod(self, op: str, a, b, signed: bool):
        want_q = op == "/"
        if is_c(b):
            c = b.value & MASK32
            if c == 1:
                return a if want_q else C(0)
            k = _log2(c)
            if not signed and k is not None:
                return self.alu(Op.SHR, a, C(k)) if want_q else self.alu(Op.AND, a, C(c - 1))
            if signed and c == MASK32:  # divisor -1
                return self.alu(Op.MUL, a, C(-1)) if want_q else C(0)
            if signed and k is not None and k < 31:
                bias = self.alu(Op.SHR, self.alu(Op.SRA, a, C(31)), C(32 - k))
                t = self.alu(Op.ADD, a, bias)
                if want_q:
                    return self.alu(Op.SRA, t, C(k))
                return self.alu(Op.SUB, a, self.alu(Op.AND, t, C(-c)))
        if not signed:
            q, r = self.udiv(a, b)
            return q if want_q else r
        sa = self.alu(Op.SRA, a, C(31))
        ua = self.alu(Op.SUB, self.alu(Op.XOR, a, sa), sa)
        if is_c(b):
            bv = to_s32(b.value)
            sb = C(-1 if bv < 0 else 0)
            ub = C(abs(bv) & MASK32)
        else:
            sb = self.alu(Op.SRA, b, C(31))
            ub = self.alu(Op.SUB, self.alu(Op.XOR, b, sb), sb)
        q, r = self.udiv(ua, ub)
        if want_q:
            s = self.alu(Op.XOR, sa, sb)
            return self.alu(Op.SUB, self.alu(Op.XOR, q, s), s)
        return self.alu(Op.SUB, self.alu(Op.XOR, r, sa), sa)

    def udiv(self, n, d) -> tuple[int, int]:
        """32-iteration restoring division; returns (quotient, remainder) registers.

        n/0 gives quotient 0xFFFFFFFF and remainder n.
        """
        nn, r, i = self.new(), self.new(), self.new()
        self.mov(nn, n)
        self.emit(Op.MOV, r, imm=0, use_imm=True)
        self.emit(Op.MOV, i, imm=32, use_imm=True)
        top = self.label()
        self.place(top)
        carry = self.alu(Op.SHR, r, C(31))           # bit shifted out of r
        self.emit(Op.SHL, r, r, imm=1, use_imm=True)
        hi = self.alu(Op.SHR, nn, C(31))             # next dividend bit
        self.emit(Op.OR, r, r, hi)
        self.emit(Op.SHL, nn, nn, imm=1, use_imm=True)
        lt = self.alu(Op.SLTU, r, d)
        ge = self.alu(Op.OR, self.alu(Op.XOR, lt, C(1)), carry)  # r >= d (or overflowed)
        self.emit(Op.OR, nn, nn, ge)                 # quotient bit enters at the bottom
        sub = self.alu(Op.MUL, ge, d)
        self.emit(Op.SUB, r, r, sub)
        self.emit(Op.ADD, i, i, imm=-1, use_imm=True)
        self.emit(Op.BRNZ, rs1=i, target=top)
        return nn, r
