"""What every engine reports: per-step trace records, launch statistics and faults.

Engines (the reference emulator now, the compiled network later) produce the
same records, so a trace can be compared step by step across engines.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


class ExitCode(enum.IntEnum):
    """Process exit codes of qgcc and qgrun (documented in README)."""

    OK = 0
    COMPILE_ERROR = 1
    USAGE = 2
    BAD_FILE = 3
    MEMORY_FAULT = 4
    BARRIER_FAULT = 5
    STEP_LIMIT = 6
    ASSERT = 7  # a device assert failed (runtime/printf.py)
    INTERNAL = 70


@dataclass(frozen=True)
class RegWrite:
    lane: int
    reg: int
    value: int  # u32 pattern


@dataclass(frozen=True)
class MemAccess:
    lane: int
    kind: str  # "ld", "st" or "atom"
    addr: int  # cell address
    value: int  # value loaded, stored, or (atom) the new memory value


@dataclass
class StepRecord:
    step: int
    block: int  # linear block index (x fastest)
    warp: int
    pc: int
    active: int  # bit l set when lane l executed this step
    writes: list[RegWrite] = field(default_factory=list)
    mem: list[MemAccess] = field(default_factory=list)
    diverged: bool = False  # a branch sent the active lanes to different PCs
    reconverged: bool = False  # more lanes active than at this warp's previous step
    barrier: str | None = None  # "wait" or "release"

    def key(self) -> tuple:
        """The architectural content compared across engines."""
        return (self.step, self.block, self.warp, self.pc, self.active,
                tuple(self.writes), tuple(self.mem))


@dataclass
class Stats:
    steps: int = 0
    warp_instructions: int = 0
    divergent_steps: int = 0
    barrier_waits: int = 0
    atomics: int = 0
    loads: int = 0
    stores: int = 0


class Fault(Exception):
    """A runtime fault of the launched kernel, located precisely."""

    kind = "fault"
    exit_code = ExitCode.MEMORY_FAULT

    def __init__(self, message: str, *, block: int | None = None, warp: int | None = None,
                 lane: int | None = None, pc: int | None = None, line: int | None = None,
                 step: int | None = None):
        super().__init__(message)
        self.message = message
        self.block, self.warp, self.lane, self.pc, self.line, self.step = block, warp, lane, pc, line, step

    def where(self) -> str:
        parts = []
        for name in ("block", "warp", "lane", "pc"):
            v = getattr(self, name)
            if v is not None:
                parts.append(f"{name} {v}")
        if self.line is not None:
            parts.append(f"line {self.line}")
        return ", ".join(parts)


class MemoryFault(Fault):
    kind = "out-of-bounds"
    exit_code = ExitCode.MEMORY_FAULT


class BarrierFault(Fault):
    kind = "barrier"
    exit_code = ExitCode.BARRIER_FAULT


class StepLimitFault(Fault):
    kind = "step-limit"
    exit_code = ExitCode.STEP_LIMIT


def _warps(ws: list[int]) -> str:
    return ("warp " if len(ws) == 1 else "warps ") + ", ".join(str(w) for w in ws)


def step_limit_fault(max_steps: int, waiting: list[int], running: list[int], **where) -> Fault:
    """The fault for a launch stopped by --max-steps, worded identically by every engine.

    On this machine a barrier can only deadlock one way: some warps wait at
    __syncthreads() while another never arrives (it spins, or waits on data the
    waiting warps would write after the barrier), so the launch runs out of
    steps.  Stopped with warps waiting, that is what it reports, as a barrier
    fault; otherwise it is a plain step limit.
    """
    if waiting and running:
        return BarrierFault(f"barrier deadlock: after {max_steps} steps {_warps(waiting)} still "
                            f"wait{'s' if len(waiting) == 1 else ''} at __syncthreads() for "
                            f"{_warps(running)}, which never arrived (raise --max-steps if "
                            f"{'it is' if len(running) == 1 else 'they are'} only slow)", **where)
    return StepLimitFault(f"the launch did not finish within {max_steps} steps (raise --max-steps)", **where)
