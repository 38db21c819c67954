"""`qgrun --trace-out FILE.jsonl`: the trace as JSON Lines, streamed as the engine runs.

Line 1 is a header `{"begin": true, "format": "qgtrace", "version": 1, ...}`; then one object
per warp instruction (`record_dict`); the last line is `{"end": true, "status": ...}`.  A file
without the end line is incomplete (the process was killed).  The schema is in docs/cli.md.
"""

from __future__ import annotations

import json
from typing import IO, Any

from .spec import SPEC
from .program import Program
from .trace import StepRecord

FORMAT = "qgtrace"
VERSION = 1


class Describer:
    """Instruction text and source line of each pc, cached."""

    def __init__(self, program: Program):
        self.program = program
        self._cache: dict[int, tuple[str, int | None, str | None]] = {}

    def __call__(self, pc: int) -> tuple[str, int | None, str | None]:
        hit = self._cache.get(pc)
        if hit is None:
            from .asm.disassembler import instr_text

            code = self.program.code
            if 0 <= pc < len(code):
                line = code[pc].line
                src = "(soft-float library)" if line == 0 else (self.program.source_line(line) or None)
                hit = (instr_text(code[pc]), line, src)
            else:
                hit = ("?", None, None)
            self._cache[pc] = hit
        return hit


def record_dict(rec: StepRecord, describe: Describer) -> dict[str, Any]:
    """One warp instruction as a JSON object (the same for every engine)."""
    instr, line, src = describe(rec.pc)
    flags = []
    if rec.diverged:
        flags.append("diverged")
    if rec.reconverged:
        flags.append("reconverged")
    if rec.barrier:
        flags.append(f"barrier-{rec.barrier}")
    return {
        "step": rec.step, "block": rec.block, "warp": rec.warp, "pc": rec.pc,
        "mask": rec.active, "lanes": [lane for lane in range(SPEC.warp_size) if rec.active >> lane & 1],
        "instruction": instr, "line": line, "source": src,
        "writes": [{"lane": w.lane, "reg": w.reg, "value": w.value & 0xFFFFFFFF} for w in rec.writes],
        "mem": [{"lane": m.lane, "kind": m.kind, "addr": m.addr,
                 "space": "shared" if m.addr >= SPEC.shared_base else "global", "value": m.value & 0xFFFFFFFF}
                for m in rec.mem],
        "flags": flags,
    }


class TraceWriter:
    """on_step callback writing one line per record to an open text file."""

    def __init__(self, stream: IO[str], program: Program, header: dict[str, Any]):
        self.stream = stream
        self.describe = Describer(program)
        self.records = 0
        self._line({"begin": True, "format": FORMAT, "version": VERSION, "warp_size": SPEC.warp_size, **header})

    def _line(self, obj: dict[str, Any]) -> None:
        self.stream.write(json.dumps(obj, separators=(",", ":")) + "\n")

    def __call__(self, rec: StepRecord) -> None:
        self._line(record_dict(rec, self.describe))
        self.records += 1

    def end(self, status: str, exit_code: int, **more: Any) -> None:
        self._line({"end": True, "status": status, "exit_code": exit_code, "records": self.records, **more})
        self.stream.flush()
