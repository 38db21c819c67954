"""qsass assembler and disassembler (syntax: docs/qsass.md)."""

from .assembler import assemble
from .disassembler import check_program, disassemble, instr_text

__all__ = ["assemble", "disassemble", "check_program", "instr_text"]
