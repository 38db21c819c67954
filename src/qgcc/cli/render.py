"""Rendering of qgrun output with rich: the per-step trace, the summary table and fault messages.

The trace is streamed: `TraceRenderer` is the engine's on_step callback and
prints one row per step as it arrives, so a long run never accumulates its
trace in memory.  When stdout is not a terminal (a pipe, a file, a test)
rows are plain text without ANSI codes, written straight to the stream.
"""

from __future__ import annotations

import sys
from typing import IO, Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..asm.disassembler import instr_text
from ..isa import to_s32
from ..spec import SPEC
from ..program import Program
from ..trace import Fault, StepRecord

INSTR_WIDTH = 28
SOURCE_WIDTH = 34

# Summary fields in display order: (json key, label).
SUMMARY_FIELDS = [
    ("kernel", "kernel"),
    ("grid", "grid"),
    ("block", "block"),
    ("engine", "engine"),
    ("device", "device"),
    ("status", "status"),
    ("steps", "steps"),
    ("warp_instructions", "warp instructions"),
    ("divergent_steps", "divergent steps"),
    ("barrier_waits", "barrier waits"),
    ("atomics", "atomics"),
    ("loads", "loads"),
    ("stores", "stores"),
    ("wall_time_s", "wall time (s)"),
]


def make_console(file: IO[str] | None = None) -> Console:
    """A console on `file` (default: the current sys.stdout); colour only on a terminal."""
    return Console(file=file if file is not None else sys.stdout, highlight=False, soft_wrap=True,
                   emoji=False, markup=False)


def _unicode_ok(console: Console) -> bool:
    return (console.encoding or "").lower().replace("-", "").startswith("utf")


def fmt_value(v: int) -> str:
    v &= 0xFFFFFFFF
    return f"{v:#010x} ({to_s32(v)})"


def fmt_addr(addr: int) -> str:
    if addr >= SPEC.shared_base:
        return f"[shared+{addr - SPEC.shared_base}]"
    return f"[{addr}]"


def lane_results(rec: StepRecord) -> list[tuple[int, str]]:
    """(lane, text) per lane with a register write or a memory access, in lane order."""
    per_lane: dict[int, list[str]] = {}
    mem_by_lane: dict[int, list] = {}
    for m in rec.mem:
        mem_by_lane.setdefault(m.lane, []).append(m)
    for w in rec.writes:
        per_lane.setdefault(w.lane, []).append(f"r{w.reg}={fmt_value(w.value)}")
    for lane, accesses in mem_by_lane.items():
        for m in accesses:
            if m.kind == "ld":
                per_lane.setdefault(lane, []).append(f"<- {fmt_addr(m.addr)}")
            else:
                per_lane.setdefault(lane, []).append(f"{fmt_addr(m.addr)}={fmt_value(m.value)}")
    return [(lane, " ".join(parts)) for lane, parts in sorted(per_lane.items())]


class TraceRenderer:
    """on_step callback printing one row per step (header first)."""

    def __init__(self, console: Console, program: Program, warp_size: int = SPEC.warp_size):
        self.console = console
        self.program = program
        self.warp_size = warp_size
        self.color = console.color_system is not None
        self.on, self.off = ("●", "○") if _unicode_ok(console) else ("#", ".")
        self.broken = False  # stdout went away (a closed pipe): stop printing, keep running
        self._instr_cache: dict[int, str] = {}
        self._write_header()

    def _emit(self, text: Text) -> None:
        if self.broken:
            return
        try:
            if self.color:
                self.console.print(text)
            else:
                self.console.file.write(text.plain + "\n")
        except BrokenPipeError:
            self.broken = True

    def _write_header(self) -> None:
        head = (f"{'step':>6} {'blk':>4} {'wrp':>3} {'pc':>4}  {'lanes':<{self.warp_size}}  "
                f"{'instruction':<{INSTR_WIDTH}} {'source':<{SOURCE_WIDTH}} results")
        self._emit(Text(head, style="bold"))

    def instr(self, pc: int) -> str:
        s = self._instr_cache.get(pc)
        if s is None:
            code = self.program.code
            s = instr_text(code[pc]) if 0 <= pc < len(code) else "?"
            self._instr_cache[pc] = s
        return s

    def __call__(self, rec: StepRecord) -> None:
        if self.broken:
            return
        t = Text()
        t.append(f"{rec.step:>6} {rec.block:>4} {rec.warp:>3} {rec.pc:>4}  ")
        for lane in range(self.warp_size):
            if rec.active >> lane & 1:
                t.append(self.on, style="bold green")
            else:
                t.append(self.off, style="dim")
        t.append("  ")
        t.append(f"{self.instr(rec.pc):<{INSTR_WIDTH}} ", style="cyan")
        line = self.program.code[rec.pc].line if 0 <= rec.pc < len(self.program.code) else None
        src = ""
        if line == 0:
            src = "(soft-float library)"  # routine code shared by every float operation
        elif line is not None:
            src = f"{line}: {self.program.source_line(line)}".rstrip()
        if len(src) > SOURCE_WIDTH:
            src = src[:SOURCE_WIDTH - 3] + "..."
        t.append(f"{src:<{SOURCE_WIDTH}} ", style="dim")
        if rec.diverged:
            t.append("DIVERGE ", style="bold yellow")
        if rec.reconverged:
            t.append("RECONVERGE ", style="bold blue")
        if rec.barrier == "wait":
            t.append("BARRIER-WAIT ", style="bold magenta")
        elif rec.barrier == "release":
            t.append("BARRIER-RELEASE ", style="bold magenta")
        first = True
        for lane, text in lane_results(rec):
            if not first:
                t.append("  ")
            first = False
            t.append(f"L{lane} ", style="dim")
            t.append(text)
        t.rstrip()
        self._emit(t)


def summary_table(summary: dict[str, Any]) -> Table:
    table = Table(title="qgrun summary", show_header=False, title_justify="left")
    table.add_column("what", style="bold")
    table.add_column("value", justify="right")
    for key, label in SUMMARY_FIELDS:
        v = summary.get(key)
        if v is None:
            continue
        if isinstance(v, (list, tuple)):
            v = ",".join(str(x) for x in v)
        elif isinstance(v, float):
            v = f"{v:.3f}"
        table.add_row(label, str(v))
    return table


def print_summary(console: Console, summary: dict[str, Any]) -> None:
    try:
        console.print(summary_table(summary))
    except BrokenPipeError:
        pass


def fault_message(fault: Fault, program: Program) -> str:
    """`<kind>: <message> (block B, warp W, lane L, pc P, line N: <source line>)`."""
    where = fault.where()
    src = program.source_line(fault.line) if fault.line is not None else ""
    if src:
        where = f"{where}: {src}"
    return f"{fault.kind}: {fault.message}" + (f" ({where})" if where else "")


def print_batch_summary(console: Console, report: dict[str, Any]) -> None:
    """One row per launch of `qgrun --batch`, then the totals."""
    table = Table(title=f"qgrun batch: {report['ok']} of {report['launches']} launches ok "
                        f"({report['engine']}, {report['device']}, {report['launches_per_s']} launches/s)",
                  title_justify="left")
    for col in ("line", "kernel", "grid", "block", "status", "warp instructions", "wall time (s)"):
        table.add_column(col, justify="left" if col in ("kernel", "status") else "right")
    for r in report["results"]:
        table.add_row(str(r["line"]), r["kernel"], ",".join(map(str, r["grid"])), ",".join(map(str, r["block"])),
                      r["status"], str(r.get("warp_instructions", "-")), f"{r['wall_time_s']:.3f}")
    try:
        console.print(table)
    except BrokenPipeError:
        pass
