"""Command-line tools `qgcc` and `qgrun` (docs/cli.md), and what they share.

Errors never show a traceback: a usage problem is one line `TOOL: error: ...`
with exit code 2, a compile error the gcc-style `file:line:col: error:` block
with exit code 1, and an unexpected exception one `TOOL: internal error: ...`
line with exit code 70 (set QGCC_DEBUG=1 to see the traceback).
"""

from __future__ import annotations

import os
import sys
import traceback
from pathlib import Path
from typing import Any

import click

from ..diagnostics import CheckpointError, CompileError, OutputError, QgFileError, UsageError
from ..program import Program
from ..trace import ExitCode

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}
CU_EXTS = (".cu",)
ASM_EXTS = (".qsass",)
QG_EXTS = (".qg",)


def err(tool: str, message: str) -> None:
    """One diagnostic line on stderr."""
    click.echo(f"{tool}: error: {message}", err=True)


def note(tool: str, message: str) -> None:
    click.echo(f"{tool}: note: {message}", err=True)


def internal_error(tool: str, exc: BaseException) -> int:
    if os.environ.get("QGCC_DEBUG"):
        traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
    first = str(exc).splitlines()[0] if str(exc) else ""
    click.echo(f"{tool}: internal error: {type(exc).__name__}{': ' + first if first else ''} "
               f"(please report it; set QGCC_DEBUG=1 for a traceback)", err=True)
    return int(ExitCode.INTERNAL)


# The one table from the errors a command reports to its exit code (docs/cli.md).  Runtime
# faults carry theirs (qgcc.trace.Fault.exit_code); anything else is an internal error (70).
EXIT_CODES: dict[type[Exception], ExitCode] = {
    CompileError: ExitCode.COMPILE_ERROR,
    CheckpointError: ExitCode.COMPILE_ERROR,  # a base checkpoint that cannot take the machine
    UsageError: ExitCode.USAGE,
    OutputError: ExitCode.USAGE,
    QgFileError: ExitCode.BAD_FILE,
}
REPORTED = tuple(EXIT_CODES)


def report(tool: str, exc: Exception) -> int:
    """Show a REPORTED error the way users expect it and return its exit code."""
    if isinstance(exc, CompileError):
        click.echo(exc.render(), err=True)
    else:
        err(tool, str(exc))
    return int(next(code for cls, code in EXIT_CODES.items() if isinstance(exc, cls)))


class ToolCommand(click.Command):
    """A click command whose callback returns the exit code and whose usage errors are one line.

    `TOOL: error: <message>` on stderr and exit code 2, instead of click's
    multi-line usage block; Ctrl-C exits with 130.
    """

    def main(self, args: Any = None, prog_name: str | None = None, complete_var: str | None = None,
             standalone_mode: bool = True, **extra: Any) -> Any:
        tool = self.name or "qgcc"
        try:
            rv = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click.ClickException as e:
            msg = " ".join(e.format_message().split("\n"))
            err(tool, f"{msg} (see '{tool} --help')")
            rv = int(ExitCode.USAGE)
        except click.exceptions.Abort:
            click.echo(f"{tool}: interrupted", err=True)
            rv = 130
        if not standalone_mode:
            return rv
        sys.exit(rv if isinstance(rv, int) else 0)


def read_source(path: str) -> str:
    """The text of an input file: UsageError if unreadable, CompileError if not UTF-8."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise UsageError(f"{path}: is a directory") from None
    except OSError as e:
        raise UsageError(f"cannot read {path}: {e.strerror or e}") from None
    return decode_source(data, path)


def decode_source(data: bytes, path: str) -> str:
    """Bytes of a source file as text; a CompileError at the first byte that is not UTF-8.

    Separate from reading so that the front-end fuzzer (bench/fuzz) feeds raw bytes
    through exactly the path the tools use.
    """
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
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
        from ..asm import assemble

        return assemble(read_source(path), path)
    if ext in CU_EXTS:
        text = read_source(path)
        try:
            from ..frontend import compile_source
        except ImportError as e:
            raise RuntimeError(f"the CUDA front end (qgcc.frontend) is not available: {e}") from None
        program = compile_source(text, path, include_dirs=include_dirs, defines=defines, soft_float=soft_float,
                                 instantiate=instantiate)
        if not program.source_lines:
            program.source_lines = text.splitlines()
        return program
    raise UsageError(f"{path}: unknown input type '{ext or '(none)'}' "
                     f"(expected .cu, .qsass, or .qg with -d)")
