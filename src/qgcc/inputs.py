"""Input files by extension: a .cu compiled by the front end, a .qsass assembled, a .qg file or a
checkpoint directory loaded -- the one way in that qgcc, qgrun and the Python API share.

Below both the command-line tools (`cli`) and the API (`api`), which import it; it imports
neither (the API once took `open_program` from qgrun's module, which imported the API back).
"""

from __future__ import annotations

from pathlib import Path

from .diagnostics import CompileError, UsageError
from .program import Program

CU_EXTS = (".cu",)
ASM_EXTS = (".qsass",)
QG_EXTS = (".qg",)


def read_source(path: str, latin1: bool = False) -> str:
    """The text of an input file: UsageError if unreadable, CompileError if not UTF-8 (unless
    `latin1`, for CUDA sources: see decode_source)."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise UsageError(f"{path}: is a directory") from None
    except OSError as e:
        raise UsageError(f"cannot read {path}: {e.strerror or e}") from None
    return decode_source(data, path, latin1)


def decode_source(data: bytes, path: str, latin1: bool = False) -> str:
    """Bytes of a source file as text; a CompileError at the first byte that is not UTF-8.

    With `latin1` (CUDA sources) bytes that are not UTF-8 are read as Latin-1 instead, one
    byte one character, as the preprocessor reads headers: published kernels carry Latin-1
    names and symbols in comments, and gcc and nvcc read bytes.  A non-ASCII character
    outside a comment or string is then the lexer's error at its place.  Assembly stays UTF-8.

    Separate from reading so that the front-end fuzzer (bench/fuzz) feeds raw bytes
    through exactly the path the tools use.
    """
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        if latin1:
            return data.decode("latin-1")
        line = data[:e.start].count(b"\n") + 1
        start = data.rfind(b"\n", 0, e.start) + 1
        end = data.find(b"\n", e.start)
        shown = data[start:end if end >= 0 else len(data)].decode("utf-8", errors="replace")
        col = len(data[start:e.start].decode("utf-8", errors="replace")) + 1
        raise CompileError(path, line, col, f"the file is not UTF-8 text (byte {data[e.start]:#04x})",
                           shown) from None


def compile_file(path: str, include_dirs=(), defines=(), soft_float: bool = False, instantiate=()) -> Program:
    """Compile a .cu or assemble a .qsass file (by extension); raises CompileError or UsageError.

    include_dirs and defines are qgcc's -I and -D, soft_float its --soft-float (for .cu files);
    instantiate names kernel templates to instantiate ("matmul<8>").
    """
    ext = Path(path).suffix.lower()
    if ext in ASM_EXTS:
        from .asm import assemble

        return assemble(read_source(path), path)
    if ext in CU_EXTS:
        text = read_source(path, latin1=True)
        try:
            from .frontend import compile_source
        except ImportError as e:
            raise RuntimeError(f"the CUDA front end (qgcc.frontend) is not available: {e}") from None
        program = compile_source(text, path, include_dirs=include_dirs, defines=defines, soft_float=soft_float,
                                 instantiate=instantiate)
        if not program.source_lines:
            program.source_lines = text.splitlines()
        return program
    raise UsageError(f"{path}: unknown input type '{ext or '(none)'}' "
                     f"(expected .cu, .qsass, or .qg with -d)")


def open_program(path: str, instantiate=()):
    """A .qg file, a checkpoint directory linked with `qgcc --base`, or a .cu / .qsass compiled on the fly
    (with the kernel templates named in `instantiate`, for a .cu)."""
    from .link.linker import LinkedProgram
    from .loader import load_program

    ext = Path(path).suffix.lower()
    if ext in CU_EXTS:
        return LinkedProgram(compile_file(path, instantiate=instantiate))
    if ext in ASM_EXTS:
        return LinkedProgram(compile_file(path))
    return load_program(path)
