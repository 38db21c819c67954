"""The front end's contract on one input, checked: it compiles, or it reports one clean error.

"Clean" means what a user sees is usable: a `CompileError` (never another
exception, never an "internal compiler error"), naming the file, at a line
that exists and a column inside that line (one past its end for "at end of
input"), quoting that very line, with a one-line message.  A program that
compiles must also be well formed (`check_program`).  Anything else is an
escape, and the fuzzer keeps a reproducer of it.
"""

from __future__ import annotations

from dataclasses import dataclass

from qgcc.asm.disassembler import check_program
from qgcc.cli import decode_source
from qgcc.diagnostics import CompileError
from qgcc.frontend import compile_source


@dataclass
class Outcome:
    kind: str  # "compiled", "error" or "escape"
    detail: str = ""  # the error message, or what went wrong for an escape


def error_problem(e: CompileError, filename: str, text: str | None) -> str | None:
    """Why a CompileError is not well formed, or None."""
    if e.filename != filename:
        return f"names file {e.filename!r}, not {filename!r}"
    if "internal compiler error" in e.message:
        return e.message
    if not e.message or "\n" in e.message:
        return f"message is empty or not one line: {e.message!r}"
    if text is None:  # not UTF-8: only the position can be checked against the bytes
        return None if e.line >= 1 and e.col >= 1 else f"position {e.line}:{e.col}"
    lines = text.split("\n")
    if not 1 <= e.line <= len(lines):
        return f"line {e.line} is outside the file ({len(lines)} lines)"
    if not 1 <= e.col <= len(lines[e.line - 1]) + 1:
        return f"column {e.col} is outside line {e.line} ({len(lines[e.line - 1])} characters)"
    if e.source_line != lines[e.line - 1]:
        return f"quotes {e.source_line!r}, but line {e.line} is {lines[e.line - 1]!r}"
    return None


def check_source(data: bytes, filename: str = "fuzz.cu") -> Outcome:
    text = None
    try:
        text = decode_source(data, filename, latin1=filename.endswith(".cu"))
        program = compile_source(text, filename)
    except CompileError as e:
        problem = error_problem(e, filename, text)
        if problem:
            return Outcome("escape", f"malformed error: {problem}\n{e.render()}")
        return Outcome("error", e.message)
    except Exception as e:  # noqa: BLE001 - exactly what the fuzzer hunts for
        return Outcome("escape", f"{type(e).__name__}: {e}")
    problem = check_program(program)
    if problem:
        return Outcome("escape", f"compiled to a malformed program: {problem}")
    return Outcome("compiled")
