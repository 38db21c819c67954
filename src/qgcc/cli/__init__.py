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
from typing import Any

import click

from ..diagnostics import CheckpointError, CompileError, OutputError, QgFileError, UsageError
# The input files by extension (qgcc.inputs), re-exported for the tools that import them from here.
from ..inputs import ASM_EXTS, CU_EXTS, QG_EXTS, compile_file, decode_source, read_source  # noqa: F401
from ..trace import ExitCode

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


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


