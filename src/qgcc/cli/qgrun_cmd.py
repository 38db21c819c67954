"""`qgrun`: launch a kernel of a .qg program on an engine and report the result.

    qgrun KERNEL.qg --grid X[,Y[,Z]] --block X[,Y[,Z]] [--kernel NAME]
          [--arg NAME=VALUE]... [--out NAME=PATH.npy]... [--engine ref] [--device cpu|cuda]
          [--trace full|summary|none] [--json PATH] [--max-steps N]

Every argument is checked before anything runs.  Outputs (--out files) are
written only after a successful run, all renamed into place together; the
--json summary is written after the run whether it succeeded or faulted.
See docs/cli.md for the exit codes.
"""

from __future__ import annotations

import io
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import click

from .. import __version__
from ..diagnostics import OutputError, UsageError
from ..trace import ExitCode, Fault, Stats, StepRecord
from . import (ASM_EXTS, CONTEXT_SETTINGS, CU_EXTS, REPORTED, ToolCommand, compile_file, err, internal_error, note,
               report)

TOOL = "qgrun"
DEFAULT_MAX_STEPS = 1_000_000
STAT_KEYS = ("steps", "warp_instructions", "divergent_steps", "barrier_waits", "atomics", "loads", "stores")


class _StepCounter:
    def __init__(self, then=None):
        self.steps = 0
        self.then = then

    def __call__(self, rec: StepRecord) -> None:
        self.steps += 1
        if self.then is not None:
            self.then(rec)


def open_program(path: str):
    """A .qg file, a checkpoint directory linked with `qgcc --base`, or a .cu / .qsass compiled on the fly."""
    from ..link.linker import LinkedProgram
    from ..loader import load_program

    ext = Path(path).suffix.lower()
    if ext in CU_EXTS or ext in ASM_EXTS:
        return LinkedProgram(compile_file(path))
    return load_program(path)


def _restore_stdout_after_broken_pipe() -> None:
    # The reader went away: send further output (and the interpreter's final flush) to /dev/null.
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, io.UnsupportedOperation):
        pass


def _run(program_file: str, grid: str, block: str, kernel_name: str | None, args: tuple[str, ...],
         outs: tuple[str, ...], engine: str, device: str, trace: str, json_path: str | None,
         max_steps: int) -> int:
    from .. import engines
    from ..runtime.launch import make_launch, parse_dim3
    from .args import check_writable, parse_args, parse_outs
    from .render import TraceRenderer, fault_message, make_console, print_summary

    grid3 = parse_dim3(grid, "grid")
    block3 = parse_dim3(block, "block")
    eng = engines.get(engine)
    dev, device_note = eng.resolve_device(device)
    if json_path is not None:
        check_writable(f"--json {json_path}", json_path)
    linked = open_program(program_file)
    program = linked.program
    try:
        kernel = program.kernel(kernel_name)
    except LookupError as e:
        raise UsageError(str(e.args[0]) if e.args else str(e)) from None
    scalars, arrays = parse_args(kernel, args)
    out_paths = parse_outs(kernel, outs)
    if json_path is not None and os.path.realpath(json_path) in {os.path.realpath(p) for p in out_paths.values()}:
        raise UsageError(f"--json {json_path} is also an --out file")
    launch = make_launch(program, kernel, grid3, block3, scalars, arrays, network=linked.network)
    if device_note:
        note(TOOL, device_note)

    console = make_console()
    renderer = TraceRenderer(console, program) if trace == "full" else None
    counter = _StepCounter(renderer)
    on_step = counter if (renderer is not None or json_path is not None) else None

    summary: dict[str, Any] = {
        "kernel": kernel.name, "grid": list(grid3), "block": list(block3),
        "steps": None, "warp_instructions": None, "divergent_steps": None, "barrier_waits": None,
        "atomics": None, "loads": None, "stores": None,
        "engine": eng.name, "device": dev, "wall_time_s": None, "status": "ok", "exit_code": 0,
    }
    t0 = time.perf_counter()
    try:
        result = eng.run(launch, max_steps=max_steps, on_step=on_step, device=dev)
    except Fault as fault:
        summary["wall_time_s"] = round(time.perf_counter() - t0, 6)
        summary["steps"] = counter.steps if on_step is not None else None
        partial = getattr(fault, "stats", None)  # an engine may attach the statistics so far
        if isinstance(partial, Stats):
            for key in STAT_KEYS:
                summary[key] = int(getattr(partial, key))
        summary["status"] = fault.kind
        summary["exit_code"] = int(fault.exit_code)
        summary["fault"] = {"kind": fault.kind, "message": fault.message, "block": fault.block,
                            "warp": fault.warp, "lane": fault.lane, "pc": fault.pc, "line": fault.line,
                            "step": fault.step}
        if renderer is not None and renderer.broken:
            _restore_stdout_after_broken_pipe()
        if json_path is not None:
            _write_outputs({}, json_path, summary)
        err(TOOL, fault_message(fault, program))
        return int(fault.exit_code)
    summary["wall_time_s"] = round(time.perf_counter() - t0, 6)
    stats = result.stats
    for key in STAT_KEYS:
        summary[key] = int(getattr(stats, key))

    buffers = {}
    for name, path in out_paths.items():
        import numpy as np

        buf = io.BytesIO()
        np.save(buf, launch.read_buffer(result.memory, name), allow_pickle=False)
        buffers[path] = buf.getvalue()
    _write_outputs(buffers, json_path, summary)
    if renderer is not None and renderer.broken:
        _restore_stdout_after_broken_pipe()
        return 0
    if trace in ("summary", "full"):
        print_summary(console, summary)
    return 0


def _write_outputs(files: dict[str, bytes], json_path: str | None, summary: dict[str, Any]) -> None:
    from ..atomicfile import AtomicFiles

    todo = dict(files)
    if json_path is not None:
        todo[json_path] = (json.dumps(summary, indent=2) + "\n").encode("utf-8")
    with AtomicFiles() as batch:
        for path, data in todo.items():
            try:
                batch.add(path, data)
            except OSError as e:
                raise OutputError(path, e) from None
        try:
            batch.commit()
        except OSError as e:
            raise OutputError(str(e.filename2 or e.filename or "an output"), e) from None


@click.command(name=TOOL, cls=ToolCommand, context_settings=CONTEXT_SETTINGS)
@click.argument("program_file", metavar="KERNEL.qg|CHECKPOINT_DIR")
@click.option("--grid", required=True, metavar="X[,Y[,Z]]", help="Grid of blocks.")
@click.option("--block", required=True, metavar="X[,Y[,Z]]", help="Threads per block (at most 64).")
@click.option("--kernel", "kernel_name", metavar="NAME", help="Kernel to launch (needed if the file has several).")
@click.option("--arg", "args", multiple=True, metavar="NAME=VALUE",
              help="A parameter: a number (decimal or 0x hex) for scalars; @FILE.npy or zeros:N for pointers.")
@click.option("--out", "outs", multiple=True, metavar="NAME=PATH.npy",
              help="Write buffer NAME's final contents to PATH.npy after a successful run.")
@click.option("--engine", default="neural", show_default=True, metavar="NAME",
              help="neural (the compiled layers), hf (transformers' own modules) or ref (the emulator).")
@click.option("--device", type=click.Choice(["cpu", "cuda"]), default="cpu", show_default=True,
              help="Torch device for engines that use one (the ref engine always runs on the CPU).")
@click.option("--trace", type=click.Choice(["full", "summary", "none"]), default="summary", show_default=True,
              help="full: one row per step and the summary; summary: the statistics; none: errors only.")
@click.option("--json", "json_path", metavar="PATH", help="Write a JSON summary (also on faults).")
@click.option("--max-steps", type=click.IntRange(min=1), default=DEFAULT_MAX_STEPS, show_default=True,
              metavar="N", help="Fault (exit 6) after N warp steps.")
@click.version_option(__version__, "--version", prog_name=TOOL)
def main(program_file: str, grid: str, block: str, kernel_name: str | None, args: tuple[str, ...],
         outs: tuple[str, ...], engine: str, device: str, trace: str, json_path: str | None,
         max_steps: int) -> int:
    """Run a kernel of a compiled .qg program or of a checkpoint linked with qgcc --base (a .cu or .qsass is
    compiled on the fly)."""
    try:
        return _run(program_file, grid, block, kernel_name, args, outs, engine, device, trace,
                    json_path, max_steps)
    except REPORTED as e:
        return report(TOOL, e)
    except Exception as e:
        return internal_error(TOOL, e)
