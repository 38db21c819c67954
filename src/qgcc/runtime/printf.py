"""Device printf and assert on the host side (frontend/sema_printf.py has the device side).

After a launch the host reads the record buffer (`__qg_printf`, a __device__ array: cell 0
counts the cells the calls asked for, the records follow) and formats each record from its raw
cells with qgcc.printfmt.  CUDA leaves the order between threads unspecified; qgcc prints in a
fixed order: by block (blockIdx.z, y, x), then by thread (threadIdx.z, y, x), then in the
order each thread called printf.  A record that did not fit is dropped, as CUDA drops output
when its buffer is full; `dropped` says how many cells were lost.

A failing assert stops the launch with an out-of-bounds store into the reserved band
ASSERT_BAND + its number; `assertion` turns that fault into the assertion's report.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..printfmt import CELLS, format_record
from ..program import ASSERT_BAND, PRINTF_CELLS, PRINTF_NAME, Program
from ..spec import SPEC
from ..trace import ExitCode, Fault

RECORD_HEADER = 7  # format number, blockIdx.x/y/z, threadIdx.x/y/z (frontend/printf.py)


@dataclass
class PrintfOutput:
    lines: list[str]  # one string per printf call, in qgcc's order (each with its own newlines)
    dropped: int  # cells of records not printed: they did not fit (or a fault cut them short)

    @property
    def text(self) -> str:
        return "".join(self.lines)


def buffer_base(program: Program) -> int | None:
    for c in program.constants:
        if c.name == PRINTF_NAME:
            return c.base
    return None


def collect(program: Program, memory: np.ndarray) -> PrintfOutput:
    """The launch's printf output from its final global memory."""
    base = buffer_base(program)
    if base is None or not program.printf:
        return PrintfOutput([], 0)
    cells = np.asarray(memory[base:base + PRINTF_CELLS], dtype=np.uint32).tolist()
    asked = cells[0]
    records = []
    pos = 0
    while pos < min(asked, PRINTF_CELLS - 1):
        number = cells[1 + pos] - 1  # stored last, as number + 1: 0 is a record cut short by a fault
        if not 0 <= number < len(program.printf):
            break
        fmt = program.printf[number]
        size = RECORD_HEADER + sum(CELLS[k] for k in fmt.kinds)
        if pos + size > PRINTF_CELLS - 1:
            break
        rec = cells[1 + pos:1 + pos + size]
        bx, by, bz, tx, ty, tz = rec[1:RECORD_HEADER]
        records.append(((bz, by, bx, tz, ty, tx), pos, fmt, rec[RECORD_HEADER:]))
        pos += size
    records.sort(key=lambda r: (r[0], r[1]))
    lines = [format_record(f.text, f.kinds, f.literals, args) for _, _, f, args in records]
    return PrintfOutput(lines, max(0, asked - pos))


class AssertionFault(Fault):
    """A device assert whose condition was false: the launch stopped (CUDA: cudaErrorAssert)."""

    kind = "assert"
    exit_code = ExitCode.ASSERT


def assertion(fault: Fault, launch) -> Fault:
    """The assert a fault stands for (a store into the reserved band), else the fault itself."""
    addr = getattr(fault, "address", None)
    program = launch.program
    if addr is None or not 0 <= addr - ASSERT_BAND < len(program.asserts):
        return fault
    a = program.asserts[addr - ASSERT_BAND]
    where = ""
    if fault.block is not None and fault.warp is not None and fault.lane is not None:
        gx, gy, _ = launch.grid
        bx, by, _ = launch.block
        b, t = fault.block, fault.warp * SPEC.warp_size + fault.lane
        where = (f" block [{b % gx},{(b // gx) % gy},{b // (gx * gy)}], thread "
                 f"[{t % bx},{(t // bx) % by},{t // (bx * by)}]:")
    report = a.message or f"Assertion `{a.cond}` failed."
    out = AssertionFault(f"{a.file}:{a.line}: {a.function}:{where} {report}",
                         block=fault.block, warp=fault.warp, lane=fault.lane, pc=fault.pc, line=fault.line,
                         step=fault.step)
    if hasattr(fault, "stats"):
        out.stats = fault.stats
    return out
