"""The code generator's intermediate form: qsass instructions over virtual registers.

`VI` mirrors `isa.Instr` but its register fields hold virtual register numbers
(-1 = unused), branches name a label instead of an address, and `LABEL`
pseudo-instructions mark branch targets.  Subroutine calls add a `MOV rd`
whose `target` is a label (it loads the label's address) and a BRA marked as a
call (see `clobbers`).  `regalloc.py` turns a list of VIs
into real `Instr`s.
"""

from __future__ import annotations

from ..isa import WRITES_RD, Fmt, FORMATS, Op, registers_read


class VI:
    __slots__ = ("op", "rd", "rs1", "rs2", "imm", "use_imm", "mod", "target", "line", "extra_reads",
                 "clobbers")

    def __init__(self, op: Op | None, rd: int = -1, rs1: int = -1, rs2: int = -1, imm: int = 0,
                 use_imm: bool = False, mod: int = 0, target: int | None = None,
                 line: int | None = None):
        self.op = op  # None: a label (its number in `target`)
        self.rd = rd
        self.rs1 = rs1
        self.rs2 = rs2
        self.imm = imm
        self.use_imm = use_imm
        self.mod = mod
        self.target = target
        self.line = line
        # Subroutine calls.  A MOV with a `target` loads that label's address (the
        # return address).  The call's BRA carries `clobbers` (every vreg the
        # routine and the routines it calls may write) and `extra_reads` (its
        # arguments and link register); the routine's JR reads its result.
        self.extra_reads: tuple[int, ...] = ()
        self.clobbers: frozenset[int] | None = None

    @property
    def is_label(self) -> bool:
        return self.op is None

    def reads(self) -> tuple[int, ...]:
        return registers_read(self) + self.extra_reads

    def writes(self) -> int | None:
        return self.rd if self.op in WRITES_RD else None

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        if self.op is None:
            return f"L{self.target}:"
        parts = [self.op.name]
        for f in ("rd", "rs1", "rs2"):
            v = getattr(self, f)
            if v >= 0:
                parts.append(f"{f}=v{v}")
        if self.use_imm or self.op in (Op.LD, Op.ST, Op.ATOM, Op.LDC):
            parts.append(f"#{self.imm}")
        if self.target is not None:
            parts.append(f"->L{self.target}")
        return " ".join(parts)


PURE_OPS = frozenset(op for op, f in FORMATS.items() if f in (Fmt.ALU, Fmt.MOV, Fmt.S2R, Fmt.LDC))
