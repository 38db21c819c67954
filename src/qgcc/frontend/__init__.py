"""The CUDA-C front end and code generator: source text -> `qgcc.program.Program`.

Modules, one job each:

- `preprocess` -- line splicing, comments, #include, #define/#undef/#if..., source map
- `macros`     -- macro expansion on the token stream (function-like, # and ##), #if expressions
- `parser`     -- Lark grammar (grammars/cuda.lark) -> AST (`ast`), macro expansion,
                  syntax errors as CompileErrors
- `types`      -- the C types of the subset, conversions, constant arithmetic
- `sema`       -- names, types, constants, every subset restriction
- `codegen`    -- AST -> qsass over virtual registers (inlining, structured layout,
                  division lowering)
- `regalloc`   -- liveness, dead code, register colouring -> `isa.Instr`

Public API: `compile_source(source, filename) -> Program`.  Every problem with
the input is reported as a `qgcc.diagnostics.CompileError`; no other
exception escapes.
"""

from __future__ import annotations

from ..diagnostics import CompileError
from ..spec import SPEC
from ..program import Kernel, Program
from .codegen import KernelGen
from .parser import parse_pp
from .preprocess import preprocess
from .regalloc import allocate
from .sema import analyse

__all__ = ["compile_source", "CompileError"]


def _compile(pp, filename: str) -> Program:
    # Positions below are virtual lines (preprocess.SourceMap); compile_source maps them back.
    lines = pp.srcmap.virtual_lines()

    def error(line: int, col: int, msg: str) -> CompileError:
        src = lines[line - 1] if 0 < line <= len(lines) else ""
        return CompileError(filename, line, col, msg, src)

    tu = parse_pp(pp, filename)
    result = analyse(tu, filename, "\n".join(lines))
    if not result.kernels:
        raise error(1, 1, "no kernel: the file defines no __global__ function")
    code = []
    kernels = []
    for fs in result.kernels:
        entry = len(code)
        fused = False
        while True:
            gen = KernelGen(fs, filename, lines, fma_arith=fused)
            ir, params = gen.run()
            instrs, nregs = allocate(ir, fs.line, entry)
            if nregs > SPEC.num_regs:
                # Short of registers: re-read parameters at each use instead of holding them.
                gen = KernelGen(fs, filename, lines, remat_params=True, fma_arith=fused)
                ir, params = gen.run()
                instrs, nregs = allocate(ir, fs.line, entry)
            if (not fused and len(code) + len(instrs) > SPEC.max_instrs and "__qg_fma" in gen.routines
                    and {"__qg_fadd", "__qg_fsub", "__qg_fmul"} & set(gen.routines)):
                # Too long, with the fma routine linked anyway (the math library uses it):
                # compute + - * through it as well (the same results; fewer routines).
                fused = True
                continue
            break
        if nregs > SPEC.num_regs:
            raise error(fs.line, fs.col, f"kernel '{fs.name}' needs {nregs} registers; the "
                                         f"machine has {SPEC.num_regs}")
        code.extend(instrs)
        if len(code) > SPEC.max_instrs:
            raise error(fs.line, fs.col,
                        f"the program needs {len(code)} instructions (kernel '{fs.name}' has "
                        f"{len(instrs)}); the machine holds at most {SPEC.max_instrs}")
        kernels.append(Kernel(fs.name, entry, len(code), params, gen.shared_used, nregs))
    return Program(code, kernels, source_name=filename,
                   source_lines=_program_lines(pp, filename, code))


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


def compile_source(source: str, filename: str = "<input>", include_dirs=(), defines=()) -> Program:
    """Compile CUDA-C source text to a Program; raises CompileError on any problem.

    include_dirs: directories searched for `#include` (after the including file's directory);
    defines: `-D` definitions, "NAME" or "NAME=VALUE".
    """
    pp = None
    try:
        pp = preprocess(source, filename, include_dirs, defines)
        return _compile(pp, filename)
    except CompileError as e:
        raise (pp.srcmap.remap(e, filename) if pp is not None else e) from None
    except RecursionError:
        raise CompileError(filename, 1, 1, "the program is nested too deeply (expression or "
                                           "statement nesting exceeds the compiler's limit)") from None
    except Exception as e:  # last resort: never leak a Python exception to the user
        raise CompileError(filename, 1, 1, f"internal compiler error: {type(e).__name__}: {e}") from e
