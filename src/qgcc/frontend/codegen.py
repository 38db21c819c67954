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

from ..diagnostics import CompileError
from ..fpu import IN_NETWORK
from ..isa import Op, to_s32
from ..spec import SPEC
from ..program import Param
from .ir import VI
from .symbols import FuncSym, VarSym
from .structs import cells, is_struct, struct_layout
from .types import INT, PtrType, Type, is_pair, is_wide
from .values import MASK32, C, Frame, MemLV, Pair, Routine, VarLV, is_c  # noqa: F401 - MemLV, VarLV re-exported
from .lower_stmts import StmtGen
from .lower_memory import MemoryGen
from .lower_exprs import ExprGen
from .lower_calls import CallGen
from . import textures


class KernelGen(StmtGen, MemoryGen, ExprGen, CallGen):
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
            # A parallel move: v's halves may be dst's own registers crossed (x = x << 32 gives
            # (0, x.lo), a rotation by 32 gives (x.hi, x.lo)), and writing dst.lo first would
            # overwrite the source of dst.hi.
            if not is_c(v.hi) and v.hi == dst.lo:
                if not is_c(v.lo) and v.lo == dst.hi:  # a swap: through a temporary
                    t = self.new()
                    self.emit(Op.MOV, t, v.hi)
                    self.emit(Op.MOV, dst.lo, v.lo)
                    self.emit(Op.MOV, dst.hi, t)
                    return
                self.mov(dst.hi, v.hi)
                self.mov(dst.lo, v.lo)
                return
            self.mov(dst.lo, v.lo)
            self.mov(dst.hi, v.hi)
            return
        if is_c(v):
            self.emit(Op.MOV, dst, imm=v.value, use_imm=True)
        elif v != dst:
            self.emit(Op.MOV, dst, v)

    def alu(self, op: Op, a, b) -> "int | C":
        """rd = a op b with ISA semantics; folds constants, uses the immediate form when b is one."""
        from ..semantics import alu as isa_alu

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
            if p.texture is not None:  # a texture's handle: a read-only buffer to the launcher
                params.append(textures.texture_param(p))
            elif is_struct(t):  # by value: its cells are parameter words
                params.append(Param(p.name, "struct", pointer=False, const=p.readonly, struct=struct_layout(t)))
            elif isinstance(t, PtrType) and is_struct(t.elem):
                params.append(Param(p.name, "struct", pointer=True, const=t.const,
                                    struct=struct_layout(t.elem)))
            elif isinstance(t, PtrType) and isinstance(t.elem, PtrType) and hasattr(t.elem.elem, "kind") \
                    and not is_struct(t.elem.elem):  # `T **`: a buffer of addresses of T buffers
                params.append(Param(p.name, t.elem.elem.kind, pointer=True, const=t.const, indirect=True))
            elif isinstance(t, PtrType) and not hasattr(t.elem, "kind"):
                # `void *`, `S **`, `T ***`: the buffer as raw cells (addresses, untyped words)
                params.append(Param(p.name, "unsigned", pointer=True, const=t.const))
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
            if is_struct(p.ty):  # a struct by value: copied from its words into the local frame
                self.local_array(p)
                base, off = self.sym_addr(p)
                for i in range(cells(p.ty)):
                    v = self.new()
                    self.emit(Op.LDC, v, imm=p.index + i)
                    self.store(MemLV(base, off + i, INT), v)
                continue
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


    # ------------------------------------------------------------------ conversions


    # ------------------------------------------------------------------ memory


    # ------------------------------------------------------------------ structs


    # ------------------------------------------------------------------ expressions


    # ------------------------------------------------------------------ calls


    # ------------------------------------------------------------------ float


    # ------------------------------------------------------------------ division


