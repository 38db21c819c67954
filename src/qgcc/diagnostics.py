"""Compiler diagnostics in the `file:line:col: error: message` form users know from gcc/nvcc."""

from __future__ import annotations


class CompileError(Exception):
    """A user-facing error in a source or assembly file; never shown as a traceback."""

    def __init__(self, filename: str, line: int, col: int, message: str, source_line: str = ""):
        super().__init__(message)
        self.filename = filename
        self.line = line
        self.col = col
        self.message = message
        self.source_line = source_line

    def render(self) -> str:
        head = f"{self.filename}:{self.line}:{self.col}: error: {self.message}"
        if not self.source_line:
            return head
        caret = " " * max(self.col - 1, 0) + "^"
        return f"{head}\n{self.source_line.rstrip()}\n{caret}"

    def __str__(self) -> str:
        return f"{self.filename}:{self.line}:{self.col}: error: {self.message}"


class UsageError(Exception):
    """Bad launch arguments or files given to a tool; one line, exit code 2."""


class QgFileError(Exception):
    """A .qg file that is missing, corrupt, of another version or inconsistent; exit code 3."""


class CheckpointError(Exception):
    """A Hugging Face checkpoint given to `qgcc --base` that cannot take the machine; one line, exit code 1."""


class OutputError(Exception):
    """An output file that cannot be written (bad directory, permissions, full disk); one line, exit code 2."""

    def __init__(self, path: str, error: OSError):
        super().__init__(f"cannot write {path}: {error.strerror or error}")
