"""Lowering, statements and storage: blocks, declarations (registers, local arrays in the
thread's frame, `__shared__` cells), `if`, loops, `break`/`continue`, `return` -- laid out for
the machine's reconvergence rule (see `codegen`).

A mixin of `codegen.KernelGen`; it imports the shared lowering values (`values`) and the
per-family lowerings, never `codegen`.
"""

from __future__ import annotations

from ..isa import Op, SReg
from ..spec import SPEC
from . import ast as A, wide
from .structs import cells, is_struct
from .symbols import VarSym
from .types import INT, is_pair, is_wide
from .values import C, MemLV


class StmtGen:
    """Statements and storage (a mixin of `codegen.KernelGen`; its state is documented there)."""

    def stmt(self, s) -> None:
        saved = self.line
        self.line = s.line
        getattr(self, "s_" + type(s).__name__)(s)
        self.line = saved

    def s_Block(self, s: A.Block) -> None:
        for it in s.items:
            self.stmt(it)

    def s_DeclStmt(self, s: A.DeclStmt) -> None:
        for sym, it in zip(s.syms, s.decl.items):
            self.line = it.line
            if sym.kind == "shared" and sym.space == "local":
                self.local_array(sym)
            elif sym.kind == "shared":
                self.mem_addr(sym)
            elif sym.kind == "const":
                self.env[sym] = wide.const(sym.const_value) if is_wide(sym.ty) else C(sym.const_value)
            elif is_pair(sym.ty):
                v = self.new_like(sym.ty)
                if it.init is not None:
                    self.mov(v, self.convert(self.val(it.init), it.init.ty, sym.ty))
                else:
                    self.mov(v, wide.const(0))
                self.env[sym] = v
                self.var_regs.update(v.regs())
            else:
                v = self.new()
                if it.init is not None:
                    self.mov(v, self.convert(self.val(it.init), it.init.ty, sym.ty))
                else:
                    self.emit(Op.MOV, v, imm=0, use_imm=True)
                self.env[sym] = v
                self.var_regs.add(v)

    def frame_base(self) -> int:
        """The first cell of this thread's local frame: region + (warp * 4 + lane) * words."""
        w, lane = self.new(), self.new()
        self.emit(Op.S2R, w, mod=SReg.WARPID)
        self.emit(Op.S2R, lane, mod=SReg.LANEID)
        tid = self.alu(Op.ADD, self.alu(Op.SHL, w, C(SPEC.warp_size.bit_length() - 1)), lane)
        n = self.local_words
        off = self.alu(Op.SHL, tid, C(n.bit_length() - 1)) if n & (n - 1) == 0 else self.alu(Op.MUL, tid, C(n))
        base = self.reg(self.alu(Op.ADD, off, C(self.local_region)))
        self.var_regs.add(base)
        return base

    def local_array(self, sym: VarSym) -> None:
        """Place a local array (or struct) in the thread's frame and store its initialiser
        (missing cells 0)."""
        if sym not in self.local:
            self.local[sym] = self.local_used
            self.local_used += cells(sym.ty)
        if sym.init_cells is not None:
            base, off = self.sym_addr(sym)
            covered: set[int] = set()
            for cell, e, t in sym.init_cells:
                if is_struct(t):
                    self.copy_cells((base, off + cell), self.saddr(e), cells(t))
                    covered.update(range(cell, cell + cells(t)))
                else:
                    self.store(MemLV(base, off + cell, t), self.convert(self.val(e), e.ty, t))
                    covered.update(range(cell, cell + cells(t)))  # a 64-bit member: two cells
            if sym.init_braced:
                for i in range(cells(sym.ty)):
                    if i not in covered:
                        self.store(MemLV(base, off + i, INT), C(0))
        if sym.init_exprs is not None:
            size = 1
            for d in sym.ty.dims:
                size *= d
            given = dict(sym.init_exprs)
            base, off = self.sym_addr(sym)
            w = cells(sym.ty.elem)
            zero = wide.const(0) if w == 2 else C(0)
            for i in range(size):
                e = given.get(i)
                v = zero if e is None else self.convert(self.val(e), e.ty, sym.ty.elem)
                self.store(MemLV(base, off + i * w, sym.ty.elem), v)

    def sym_addr(self, sym: VarSym) -> tuple["int | None", int]:
        """(base register or None, offset) of a memory-resident variable."""
        if sym.space == "bound":
            return self.bound[sym]
        if sym.space == "local":
            if sym not in self.local:
                self.local_array(sym)
            if self.local_base is None:  # first generation: frames are being laid out
                self.local_base = self.reg(C(self.local_region))
            return self.local_base, self.local[sym]
        return None, self.mem_addr(sym)

    def mem_addr(self, sym: VarSym) -> int:
        """The cell address of a memory-resident variable (static/extern __shared__, __constant__)."""
        if sym.space == "constant":
            return sym.address
        if sym.space == "dynamic":
            self.uses_dynamic = True
            return self.dynamic_base
        self.alloc_shared(sym)
        return self.shared[sym]

    def alloc_shared(self, sym: VarSym) -> None:
        if sym in self.shared:
            return
        size = cells(sym.ty)
        if self.shared_used + size > SPEC.shared_words:
            raise self.error(sym.line, sym.col,
                             f"kernel '{self.fs.name}' needs {self.shared_used + size} cells of "
                             f"__shared__ memory ('{sym.name}' needs {size}); the machine has "
                             f"{SPEC.shared_words} cells ({SPEC.shared_words * 4 // 1024} KiB) per block")
        self.shared[sym] = SPEC.shared_base + self.shared_used
        self.shared_used += size

    def s_ExprStmt(self, s: A.ExprStmt) -> None:
        if s.expr is not None:
            self.effect(s.expr)

    def s_If(self, s: A.If) -> None:
        c = s.cond.const
        if c is not None:
            chosen = s.then if c else s.other
            if chosen is not None:
                self.stmt(chosen)
            return
        else_l = self.label()
        self.branch(s.cond, else_l, False)
        self.stmt(s.then)
        if s.other is not None:
            end_l = self.label()
            self.line = s.line
            self.emit(Op.BRA, target=end_l)
            self.place(else_l)
            self.stmt(s.other)
            self.place(end_l)
        else:
            self.place(else_l)

    def loop(self, s, cond: A.Expr | None, body, step: A.Expr | None, do: bool) -> None:
        top, exit_l, cont_l = self.label(), self.label(), self.label()
        frame = self.frames[-1]
        self.place(top)
        if not do and cond is not None:
            if cond.const is not None and not cond.const:
                self.place(exit_l)
                return
            self.line = cond.line
            self.branch(cond, exit_l, False)
        frame.loops.append((exit_l, cont_l))
        self.stmt(body)
        frame.loops.pop()
        self.place(cont_l)
        if step is not None:
            self.line = step.line
            self.effect(step)
        if do:
            self.line = cond.line
            self.branch(cond, top, True)
        else:
            self.line = s.line
            self.emit(Op.BRA, target=top)
        self.place(exit_l)

    def s_While(self, s: A.While) -> None:
        self.loop(s, s.cond, s.body, None, do=False)

    def s_DoWhile(self, s: A.DoWhile) -> None:
        self.loop(s, s.cond, s.body, None, do=True)

    def s_For(self, s: A.For) -> None:
        if s.init is not None:
            self.stmt(s.init)
            self.line = s.line
        self.loop(s, s.cond, s.body, s.step, do=False)

    def s_Break(self, s: A.Break) -> None:
        self.emit(Op.BRA, target=self.frames[-1].loops[-1][0])

    def s_Continue(self, s: A.Continue) -> None:
        self.emit(Op.BRA, target=self.frames[-1].loops[-1][1])

    def s_Return(self, s: A.Return) -> None:
        frame = self.frames[-1]
        if frame.ret_label is None:
            if s.value is not None:
                self.effect(s.value)
            self.emit(Op.EXIT)
            return
        if s.temp is not None:  # `return {...};`: the brace list stored in a temporary first
            self.local_array(s.temp)
        if s.value is not None:
            if frame.ret_addr is not None:
                self.copy_cells(frame.ret_addr, self.saddr(s.value), cells(frame.func.ret))
            elif frame.func.ret_ref:
                self.mov(frame.ret_reg, self.address(self.lvalue(s.value)))
            elif frame.ret_reg is not None:
                v = self.convert(self.val(s.value), s.value.ty, frame.func.ret)
                self.mov(frame.ret_reg, v)
            else:
                self.effect(s.value)
        self.emit(Op.BRA, target=frame.ret_label)
