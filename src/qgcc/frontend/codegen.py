"""Code generation: annotated AST -> qsass over virtual registers, one kernel at a time.

Layout follows the machine's reconvergence rule (min-PC scheduling): code is
emitted in source order and every join point lies after the code that
reaches it.  `if`: `BRZ c, Lelse; then; BRA Ljoin; Lelse: else; Ljoin:`;
`while`/`for`: `Ltop: cond; BRZ c, Lexit; body; Lcont: step; BRA Ltop; Lexit:`;
`do`: `Ltop: body; Lcont: cond; BRNZ c, Ltop`.  break/continue/return in a
device function branch forward; `return` in a kernel is `EXIT`.  The only
backward branches are loop back-edges (the user's loops and the 32-iteration
loop of each general division).

Device functions are inlined at every call.  Values are `int` virtual
registers or `C` constants (folded and used as immediates where the ISA allows).

Float operations the machine has no instruction for call library routines:
division and `sqrtf` those of `divsqrt.cu` (on the float unit; with --soft-float
the integer ones), `fmaf` (and, with --soft-float, every float operation) those
of the soft-float library (`softfloat.cu`), and the math functions (`expf`, ...)
those of the math library (`mathlib.cu`).
Each routine a kernel uses is emitted once, out of line, between the kernel's
first instruction (`BRA body`) and its body, so routine code always has lower
PCs than every call site: under min-PC scheduling, lanes that enter a routine
finish it before any other lane of the warp moves on, so a divergent call
never lets other lanes run ahead into a barrier.  A call is `MOV args; MOV
link, #return-address; BRA routine; ...` and the routine ends with `JR link`.
Register allocation treats the call as one instruction that writes every
register the routine (and what it calls) writes, so values live across a call
get other registers: no calling convention, no saving.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..diagnostics import CompileError
from ..fpu import IN_NETWORK
from ..isa import FORMATS, AtomOp, Fmt, Op, SReg, to_s32
from ..spec import SPEC
from ..program import Param
from . import ast as A
from .ir import VI
from . import floatconst
from . import intrinsics
from . import doubles, wide
from .wide import Pair
from .sema import ATOMICS, BIT_CASTS, FENCES, DOUBLE_FUNCS, FLOAT_FUNCS, INT_FUNCS, MATH_FUNCS, WARP_FUNCS, FuncSym, VarSym
from .softfloat import library
from .structs import cells, is_struct, struct_layout
from .types import (BOOL, CHAR, DOUBLE, FLOAT, INT, LLONG, UINT, IntType, PtrType, Type,
                    VoidType, fold_binary, is_double, is_float, is_pair, is_ptr, is_wide, wrap)

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


class KernelGen:
    IR_LIMIT = 8 * SPEC.max_instrs

    def __init__(self, fs: FuncSym, filename: str, lines: list[str], remat_params: bool = False,
                 soft_float: bool = False, dynamic_base: int = SPEC.shared_base, local_words: int = 0,
                 local_region: int = 0, fma_arith: bool = False):
        self.fs = fs
        # Float instructions to emit instead of soft-float routines (none with --soft-float).
        self.hw_float = frozenset() if soft_float else IN_NETWORK
        # Local arrays: each thread's frame of `local_words` cells at global cell
        # local_region + (linear thread index) * local_words; frames are laid out by the
        # first generation, the base is computed at the entry by the second.
        self.local_words = local_words
        self.local_region = local_region
        self.local: dict[VarSym, int] = {}
        self.local_used = 0
        self.local_base: int | None = None
        # Struct reference parameters (`const S &o`) of the functions being inlined: the cells
        # of the argument they name.
        self.bound: dict[VarSym, tuple["int | None", int]] = {}
        # Where extern __shared__ arrays start: after the static __shared__ cells, which are
        # known only once the kernel is generated (compile_source generates it again if the
        # guess was wrong).
        self.dynamic_base = dynamic_base
        self.uses_dynamic = False
        # Re-read parameters that are never assigned with LDC at each use instead of
        # keeping them in registers from the entry (used when registers run short).
        self.remat_params = remat_params
        self.filename = filename
        self.lines = lines
        self.code: list[VI] = []
        self.nv = 0
        self.nl = 0
        self.env: dict[VarSym, object] = {}
        self.shared: dict[VarSym, int] = {}
        self.shared_used = 0
        self.frames: list[Frame] = []
        self.var_regs: set[int] = set()  # registers that are the home of a variable
        self.line = fs.line
        self.routines: dict[str, Routine] = {}
        self.routine_code: list[VI] = []
        self.in_routine = False
        # + - * through the fma routine: in math-library routines always, in the kernel's
        # own code when it would not fit otherwise (see float_arith and compile_source).
        self.fma_only = fma_arith

    # ------------------------------------------------------------------ emission

    def error(self, line: int, col: int, msg: str) -> CompileError:
        src = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        return CompileError(self.filename, line, col, msg, src)

    def new(self) -> int:
        self.nv += 1
        return self.nv - 1

    def label(self) -> int:
        self.nl += 1
        return self.nl - 1

    def place(self, lab: int) -> None:
        self.code.append(VI(None, target=lab))

    def emit(self, op: Op, rd: int = -1, rs1: int = -1, rs2: int = -1, imm: int = 0,
             use_imm: bool = False, mod: int = 0, target: int | None = None) -> None:
        if len(self.code) > self.IR_LIMIT:
            raise self.error(self.fs.line, self.fs.col,
                             f"kernel '{self.fs.name}' needs more than {SPEC.max_instrs} "
                             f"instructions; the machine holds at most {SPEC.max_instrs}")
        # Library code is shared by every call site: it has no source line of its own.
        line = 0 if self.in_routine else self.line
        self.code.append(VI(op, rd, rs1, rs2, to_s32(imm), use_imm, int(mod), target, line))

    def reg(self, v) -> int:
        if is_c(v):
            t = self.new()
            self.emit(Op.MOV, t, imm=v.value, use_imm=True)
            return t
        return v

    def new_like(self, t: Type):
        """A fresh home for a value of type t: a register, or a register pair for 64 bits."""
        return Pair(self.new(), self.new()) if is_pair(t) else self.new()

    def mov(self, dst, v) -> None:
        if isinstance(dst, Pair):
            self.mov(dst.lo, v.lo)
            self.mov(dst.hi, v.hi)
            return
        if is_c(v):
            self.emit(Op.MOV, dst, imm=v.value, use_imm=True)
        elif v != dst:
            self.emit(Op.MOV, dst, v)

    def alu(self, op: Op, a, b) -> "int | C":
        """rd = a op b with ISA semantics; folds constants, uses the immediate form when b is one."""
        from ..isa import alu as isa_alu

        if is_c(a) and is_c(b):
            return C(isa_alu(op, a.value, b.value))
        if is_c(b):
            c = b.value & MASK32
            if (c == 0 and op in (Op.ADD, Op.SUB, Op.OR, Op.XOR, Op.SHL, Op.SHR, Op.SRA)) or \
                    (c == 1 and op is Op.MUL) or (c == MASK32 and op is Op.AND):
                return a  # identity
        t = self.new()
        if is_c(b):
            self.emit(op, t, a, imm=b.value, use_imm=True)
        else:
            self.emit(op, t, self.reg(a), b)
        return t

    # ------------------------------------------------------------------ kernel

    def run(self) -> tuple[list[VI], list[Param]]:
        fs = self.fs
        fd = fs.definition
        assert fd is not None
        params = []
        for p in fs.params:
            t = p.ty
            if isinstance(t, PtrType) and is_struct(t.elem):
                params.append(Param(p.name, "struct", pointer=True, const=t.const,
                                    struct=struct_layout(t.elem)))
            elif isinstance(t, PtrType):
                params.append(Param(p.name, t.elem.kind, pointer=True, const=t.const))
            elif is_wide(t):
                params.append(Param(p.name, t.kind, pointer=False, const=p.readonly))
            else:
                params.append(Param(p.name, t.kind, pointer=False, const=p.readonly))
        self.frames.append(Frame(fs, None, None))
        self.line = fs.line
        if self.local_words:
            self.local_base = self.frame_base()
        for p in fs.params:
            if self.remat_params and not p.assigned:
                continue  # read where used (e_Name)
            v = self.load_param(p)
            self.env[p] = v
            self.var_regs.update(v.regs() if isinstance(v, Pair) else (v,))
        for item in fd.body.items:
            self.stmt(item)
        self.line = fd.end_line
        self.emit(Op.EXIT)
        self.frames.pop()
        if self.routine_code:
            body = self.label()
            head = [VI(Op.BRA, target=body, line=fs.line)]
            self.code = head + self.routine_code + [VI(None, target=body)] + self.code
        return self.code, params

    def load_param(self, p: VarSym):
        """A kernel parameter's value from the parameter words: a 64-bit one from two (low first)."""
        if is_pair(p.ty):
            lo, hi = self.new(), self.new()
            self.emit(Op.LDC, lo, imm=p.index)
            self.emit(Op.LDC, hi, imm=p.index + 1)
            return Pair(lo, hi)
        v = self.new()
        self.emit(Op.LDC, v, imm=p.index)
        return v

    # ------------------------------------------------------------------ statements

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

    # ------------------------------------------------------------------ conversions

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
            return self.convert(r, INT, dst) if dst.kind in ("char", "uchar") else r
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

    # ------------------------------------------------------------------ memory

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
        if lv.elem == CHAR:
            return self.alu(Op.SRA, self.alu(Op.SHL, t, C(24)), C(24))
        return t

    def store(self, lv: MemLV, v) -> None:
        """Store v (already converted to the element type) into a cell."""
        if lv.elem == CHAR:
            v = self.alu(Op.AND, v, C(0xFF))
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
            assert isinstance(lv, MemLV)
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

    # ------------------------------------------------------------------ structs

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

    # ------------------------------------------------------------------ expressions

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

    # ------------------------------------------------------------------ calls

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
        if callee == "__syncthreads":
            self.emit(Op.BAR)
            return None
        if callee in FENCES:  # sequentially consistent memory: nothing to order (sema.FENCES)
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

    # ------------------------------------------------------------------ float

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
        call.extra_reads = _flat(r.params) + (r.link,)
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
        self.routine_code.extend(self.code)
        self.code, self.frames, self.in_routine, self.line, self.fma_only = saved
        return r

    # ------------------------------------------------------------------ division

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
