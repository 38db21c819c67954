"""The CUDA-C front end and code generator: source text -> `qgcc.program.Program`.

A pipeline of passes whose imports run one way (docs/frontend.md has the table;
tests/test_layering.py checks it).  Bottom up:

- shared types  -- `ast` (the tree), `types` (C types, conversions, constant arithmetic),
                   `structs`, `floatconst`, `doubleconst`, `grammar` (the Lark grammar),
                   `symbols` (VarSym, FuncSym, SemaResult), `builtin_names` (the CUDA
                   built-ins), `values` (C, Pair, lvalues: what lowering passes around),
                   `ir` (VI: qsass over virtual registers)
- preprocess    -- `preprocess` (directives, source map), `macros` (expansion, #if),
                   `coopgroups` (cooperative groups rewritten on the token stream)
- parse         -- `tokens` (the token stream and syntax messages), `parser` (tree -> AST)
- sema          -- `sema` composes the topic mixins: `sema_decls` (declarations, scopes),
                   `sema_stmts` (statements, local/shared/constant storage), `sema_exprs`
                   (expressions, conversions), `sema_calls` (calls, built-ins),
                   `sema_templates` (templates, the call graph), `structsema` (structs)
- libraries     -- `softfloat`: the .cu routine libraries, parsed and checked once
- lowering      -- per family: `bitops`, `wide` (64-bit integers), `doubles`, `intrinsics`;
                   per construct: `lower_stmts`, `lower_memory`, `lower_exprs`,
                   `lower_calls`; `codegen` composes them (KernelGen -> ir.VI)
- `regalloc`    -- liveness, dead code, register colouring -> `isa.Instr`
- `firsterror`  -- parse and sema, reporting the first error in source order across stages
- this module   -- compile_source: the passes in order, per kernel, -> Program

Public API: `compile_source(source, filename) -> Program`.  Every problem with
the input is reported as a `qgcc.diagnostics.CompileError`; no other
exception escapes.
"""

from __future__ import annotations

import re

from ..diagnostics import CompileError
from ..spec import SPEC
from ..program import Constant, DeviceAssert, Kernel, PrintfFormat, Program, instance_name
from . import ast as A
from .codegen import KernelGen
from .firsterror import front_end
from .preprocess import preprocess
from .regalloc import TooLong, allocate
from .spill import allocate_spilling
from .structs import is_struct
from .types import ArrayType

__all__ = ["compile_source", "CompileError"]


def _compile(pp, filename: str, soft_float: bool = False, instantiate=()) -> Program:
    # Positions below are virtual lines (preprocess.SourceMap); compile_source maps them back.
    lines = pp.srcmap.virtual_lines()

    def error(line: int, col: int, msg: str) -> CompileError:
        src = lines[line - 1] if 0 < line <= len(lines) else ""
        return CompileError(filename, line, col, msg, src)

    pp.launch_names = frozenset(w for request in instantiate for w in re.findall(r"[A-Za-z_]\w*", request))
    tu, result = front_end(pp, filename, "\n".join(lines), instantiate)
    if not result.kernels:
        if any(isinstance(it, A.TemplateDef) for it in tu.items):
            raise error(1, 1, "no kernel: the file defines only templates; a kernel template is "
                              "instantiated when it is named at launch (qgrun --kernel 'NAME<ARGS>')")
        raise error(1, 1, "no kernel: the file defines no __global__ function")
    constants = [_constant(c) for c in result.constants]
    code = []
    kernels = []
    for fs in result.kernels:
        entry = len(code)
        region = sum(c.words for c in constants)
        fused = False
        while True:
            gen, ir, params = _generate(fs, filename, lines, False, region, soft_float, fused)
            can_fuse = (not fused and "__qg_fma" in gen.routines
                        and bool({"__qg_fadd", "__qg_fsub", "__qg_fmul"} & set(gen.routines)))
            budget = SPEC.max_instrs - len(code)
            try:
                instrs, nregs = allocate(ir, fs.line, entry, budget)
                if nregs > SPEC.num_regs:
                    # Short of registers: re-read parameters at each use instead of holding them.
                    gen, ir, params = _generate(fs, filename, lines, True, region, soft_float, fused)
                    instrs, nregs = allocate(ir, fs.line, entry, budget)
            except TooLong as e:
                if can_fuse:
                    fused = True
                    continue
                raise error(fs.line, fs.col,
                            f"kernel '{fs.name}' needs at least {e.least} instructions"
                            + (f" after the {len(code)} of the kernels before it" if code else "")
                            + f"; the machine holds at most {SPEC.max_instrs}: split the kernel or call "
                            "fewer library routines (each double or math-library call site adds code)") from None
            if (can_fuse and len(code) + len(instrs) > SPEC.max_instrs):
                # Too long, with the fma routine linked anyway (the math library uses it):
                # compute + - * through it as well (the same results; fewer routines).
                fused = True
                continue
            break
        spill_words = 0
        if nregs > SPEC.num_regs:
            gen, instrs, nregs, spill_words = _spilled(fs, filename, lines, region, soft_float, fused, entry)
        if nregs > SPEC.num_regs:
            raise error(fs.line, fs.col, f"kernel '{fs.name}' needs {nregs} registers; the "
                                         f"machine has {SPEC.num_regs}")
        code.extend(instrs)
        if len(code) > SPEC.max_instrs:
            raise error(fs.line, fs.col,
                        f"the program needs {len(code)} instructions (kernel '{fs.name}' has "
                        f"{len(instrs)}); the machine holds at most {SPEC.max_instrs}: compile its kernels "
                        "(or template instances) in separate files")
        kname = instance_name(*fs.template) if fs.template else fs.name
        kernels.append(Kernel(kname, entry, len(code), params, gen.shared_used, nregs,
                              local_words=gen.local_used + spill_words))
    return Program(code, kernels, source_name=filename,
                   source_lines=_program_lines(pp, filename, code), constants=constants,
                   **_device_io(pp, filename, result))


def _device_io(pp, filename: str, result) -> dict:
    """The printf formats and asserts, at their real file and line (sema_printf.py)."""
    def where(v: int) -> tuple[str, int]:
        vl = pp.srcmap.vlines
        return (vl[v - 1][0], vl[v - 1][1]) if 0 < v <= len(vl) else (filename, v)
    printf = [PrintfFormat(text, kinds, lits, where(line)[1]) for text, kinds, lits, line in result.printf]
    asserts = [DeviceAssert(*where(line), cond, fn, *msg) for line, cond, fn, *msg in result.asserts]
    return {"printf": printf, "asserts": asserts}


def _generate(fs, filename: str, lines: list[str], remat_params: bool, local_region: int, soft_float: bool,
              fma_arith: bool = False, extra_local: int = 0):
    """Generate a kernel.  Extern __shared__ arrays start after its static __shared__ cells,
    and local arrays need the size of a thread's frame, both known once the kernel is
    generated, so a kernel that has them is generated twice."""
    gen = KernelGen(fs, filename, lines, remat_params=remat_params, soft_float=soft_float, fma_arith=fma_arith)
    ir, params = gen.run()
    if (gen.uses_dynamic and gen.shared_used) or gen.local_used or extra_local:
        # (extra_local: spill slots after the local arrays, frontend/spill.py)
        gen = KernelGen(fs, filename, lines, remat_params=remat_params, soft_float=soft_float, fma_arith=fma_arith,
                        dynamic_base=SPEC.shared_base + gen.shared_used,
                        local_words=gen.local_used + extra_local, local_region=local_region)
        ir, params = gen.run()
    return gen, ir, params


def _constant(c) -> Constant:
    """A __constant__ (or __device__) variable as the Program keeps it; one of structs is its
    cells, unsigned, in one dimension (sema_stmts.constant_struct)."""
    elem = c.ty.elem if isinstance(c.ty, ArrayType) else c.ty
    if is_struct(elem):
        return Constant(c.name, "unsigned", (len(c.init),), c.address, list(c.init))
    return Constant(c.name, elem.kind, tuple(c.ty.dims) if isinstance(c.ty, ArrayType) else (), c.address,
                    list(c.init or []))


def _spilled(fs, filename: str, lines: list[str], region: int, soft_float: bool, fused: bool, entry: int):
    """Registers still short after re-reading parameters: spill values to the thread's local
    frame (frontend/spill.py).  The frame's size (local arrays, then the slots) sets the stride
    of the frame base computed at the entry, so the kernel is generated again until the slots
    it gets are the slots it needs."""
    slots = 1
    for _ in range(8):
        gen, ir, params = _generate(fs, filename, lines, True, region, soft_float, fused, extra_local=slots)
        arrays = gen.local_used
        instrs, nregs, used = allocate_spilling(ir, fs.line, entry, gen.local_base, arrays, SPEC.num_regs)
        if used <= slots:
            return gen, instrs, nregs, slots
        slots = used
    return gen, instrs, nregs, slots  # pragma: no cover - the slot count settles in a step or two


def _program_lines(pp, filename: str, code) -> list[str]:
    """The Program's source lines, and instruction lines turned from virtual to real.

    Lines of the main file keep their numbers.  Lines of #included files are numbered after
    the main file's last line, and their text names the file and line ("util.h:4: ...").
    """
    vlines = pp.srcmap.vlines
    if all(f == filename and ln == v for v, (f, ln, _) in enumerate(vlines, 1)):
        return [t for _, _, t in vlines]
    main = sorted((ln, t) for f, ln, t in vlines if f == filename)
    out = [t for _, t in main]
    where: dict[int, int] = {}
    for v, (f, ln, t) in enumerate(vlines, 1):
        if f == filename:
            where[v] = ln
        else:
            out.append(f"{f}:{ln}: {t.strip()}")
            where[v] = len(out)
    for ins in code:
        if ins.line:
            ins.line = where.get(ins.line, ins.line)
    return out


def compile_source(source: str, filename: str = "<input>", include_dirs=(), defines=(),
                   soft_float: bool = False, instantiate=()) -> Program:
    """Compile CUDA-C source text to a Program; raises CompileError on any problem.

    soft_float: compile every float operation to the soft-float routines, even those the
    machine has an instruction for (qgcc --soft-float).
    include_dirs: directories searched for `#include` (after the including file's directory);
    defines: `-D` definitions, "NAME" or "NAME=VALUE"; instantiate: kernel templates to
    instantiate, as named at launch ("matmul<8>", "scale<float>").
    """
    pp = None
    try:
        pp = preprocess(source, filename, include_dirs, defines)
        return _compile(pp, filename, soft_float, tuple(instantiate))
    except CompileError as e:
        raise (pp.srcmap.remap(e, filename) if pp is not None else e) from None
    except RecursionError:
        raise CompileError(filename, 1, 1, "the program is nested too deeply (expression or "
                                           "statement nesting exceeds the compiler's limit)") from None
    except Exception as e:  # last resort: never leak a Python exception to the user
        raise CompileError(filename, 1, 1, f"internal compiler error: {type(e).__name__}: {e}") from e
