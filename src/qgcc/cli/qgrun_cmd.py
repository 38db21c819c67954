"""`qgrun`: launch a kernel of a .qg program on an engine and report the result.

    qgrun KERNEL.qg --grid X[,Y[,Z]] --block X[,Y[,Z]] [--kernel NAME]
          [--arg NAME=VALUE]... [--out NAME=PATH.npy]... [--shared BYTES] [--const NAME=@FILE.npy]...
          [--engine ref] [--device cpu|cuda] [--step unfused|fused|phased]
          [--trace full|summary|none] [--json PATH] [--max-steps N] [--progress]
          [--dump-states FILE.npz [--dump-every K]]
    qgrun KERNEL.qg --batch LAUNCHES.jsonl [--batch-width N] [--engine ...] [--json PATH]   (cli/qgrun_batch.py)

Every argument is checked before anything runs.  Outputs (--out files) are
written only after a successful run, all renamed into place together; the
--json summary is written after the run whether it succeeded or faulted.
See docs/cli.md for the exit codes.
"""

from __future__ import annotations

import io
import os
import sys
import time
from typing import Any

import click

from ..diagnostics import UsageError
from ..engines import STEPS
from ..inputs import open_program
from ..program import PRINTF_CELLS
from ..qgfile import FORMAT_VERSION as QG_FORMAT_VERSION
from ..spec import SPEC
from ..trace import ExitCode, Fault, Stats, StepRecord
from ..version import __version__
from . import CONTEXT_SETTINGS, REPORTED, ToolCommand, err, internal_error, note, report
from .args import write_outputs
from .qgrun_batch import STAT_KEYS, TOOL, run_batch, say_precision

DEFAULT_MAX_STEPS = 1_000_000


class _StepCounter:
    def __init__(self, then=None):
        self.steps = 0
        self.then = then

    def __call__(self, rec: StepRecord) -> None:
        self.steps += 1
        if self.then is not None:
            self.then(rec)


class _Progress:
    """A live line on stderr for runs longer than a second: instructions, rate, current block.

    Shown when stderr is a terminal, or with --progress; redrawn at most 4 times a second,
    and erased (on a terminal) before anything else is printed."""

    def __init__(self, then=None, stream=None, delay: float = 1.0):
        self.then = then
        self.stream = stream if stream is not None else sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.t0 = time.perf_counter()
        self.next = self.t0 + delay
        self.count = 0
        self.shown = False

    def __call__(self, rec: StepRecord) -> None:
        self.count += 1
        if self.then is not None:
            self.then(rec)
        if self.count & 63 == 0:
            now = time.perf_counter()
            if now >= self.next:
                self.next = now + 0.25
                rate = self.count / (now - self.t0)
                line = f"{TOOL}: {self.count:,} warp instructions, {rate:,.0f}/s, block {rec.block}"
                self.stream.write(("\r\x1b[K" + line) if self.tty else line + "\n")
                self.stream.flush()
                self.shown = True

    def close(self) -> None:
        if self.shown and self.tty:
            self.stream.write("\r\x1b[K")
            self.stream.flush()


def _restore_stdout_after_broken_pipe() -> None:
    # The reader went away: send further output (and the interpreter's final flush) to /dev/null.
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, io.UnsupportedOperation):
        pass


def _run(program_file: str, grid: str, block: str, kernel_name: str | None, args: tuple[str, ...],
         outs: tuple[str, ...], engine: str, device: str, trace: str, json_path: str | None,
         max_steps: int, progress: bool | None = None, timeline: str | None = None,
         trace_out: str | None = None, shared: int = 0, consts: tuple[str, ...] = (), dtype: str = "fp32",
         dump_states: str | None = None, dump_every: int = 1, step: str = "unfused") -> int:
    from .. import engines
    from ..api import run_launch, select_kernel
    from ..runtime.launch import make_launch, parse_dim3
    from .args import check_out_buffers, check_writable, parse_args, parse_consts, parse_outs
    from .render import TraceRenderer, fault_message, make_console, print_summary

    grid3 = parse_dim3(grid, "grid")
    block3 = parse_dim3(block, "block")
    eng = engines.get(engine)
    dev, device_note = eng.resolve_device(device)
    dtype, dtype_note = eng.resolve_dtype(dtype)
    step, step_note = eng.resolve_step(step, dev)
    dump = _state_dump(eng.name, dump_states, dump_every, step)
    if json_path is not None:
        check_writable(f"--json {json_path}", json_path)
    # A kernel template named at launch (--kernel 'matmul<8>') is instantiated from a .cu.
    linked = open_program(program_file, (kernel_name,) if kernel_name and "<" in kernel_name else ())
    program = linked.program
    kernel = select_kernel(program, kernel_name)
    scalars, arrays = parse_args(kernel, args)
    out_paths = parse_outs(kernel, outs)
    if json_path is not None and os.path.realpath(json_path) in {os.path.realpath(p) for p in out_paths.values()}:
        raise UsageError(f"--json {json_path} is also an --out file")
    _check_extra_outputs(timeline, trace_out, json_path, out_paths, dump_states)
    launch = make_launch(program, kernel, grid3, block3, scalars, arrays, network=linked.network,
                         shared_bytes=shared, constants=parse_consts(program, consts))
    check_out_buffers(out_paths, launch.buffers)
    if device_note:
        note(TOOL, device_note)
    if dtype_note:
        note(TOOL, dtype_note)
    if step_note:
        note(TOOL, step_note)

    console = make_console()
    renderer = TraceRenderer(console, program) if trace == "full" else None
    counter = _StepCounter(renderer)
    on_step = counter if (renderer is not None or json_path is not None) else None
    if progress is None:
        progress = sys.stderr.isatty() and renderer is None
    recorder = writer = None
    if timeline is not None or trace_out is not None:
        from ..timeline import TimelineRecorder
        from ..traceout import TraceWriter

        after = on_step
        if trace_out is not None:
            stream = open(trace_out, "w", encoding="utf-8")  # noqa: SIM115 (closed by _end_trace_out)
            writer = TraceWriter(stream, program, {"kernel": kernel.name, "grid": list(grid3), "block": list(block3),
                                                   "engine": eng.name, "device": dev})
            after = writer if after is None else _chain(writer, after)
        if timeline is not None:
            recorder = TimelineRecorder(launch, then=after)
        on_step = recorder if recorder is not None else after
    live = _Progress(on_step) if progress else None
    if live is not None:
        on_step = live

    summary: dict[str, Any] = {
        "kernel": kernel.name, "grid": list(grid3), "block": list(block3),
        "steps": None, "warp_instructions": None, "divergent_steps": None, "barrier_waits": None,
        "atomics": None, "loads": None, "stores": None,
        "engine": eng.name, "device": dev, "wall_time_s": None, "status": "ok", "exit_code": 0,
    }
    t0 = time.perf_counter()
    try:
        try:
            result, final = run_launch(eng, launch, device=dev, max_steps=max_steps, on_step=on_step, dtype=dtype,
                                       states=dump, step=step)
        except Fault:
            raise
        except BaseException:
            _end_trace_out(writer, "error", int(ExitCode.INTERNAL))
            raise
        finally:
            if live is not None:
                live.close()
            from ..engines.batch import runner_key

            runner = launch.network.hosts.get(runner_key(1, dev, step)) if launch.network is not None else None
            if runner is not None and eng.name == "neural":  # one launch on CUDA (or --step): a batch of one
                say_precision(runner)
    except Fault as fault:
        _end_trace_out(writer, fault.kind, int(fault.exit_code), fault=fault_message(fault, program))
        summary["wall_time_s"] = round(time.perf_counter() - t0, 6)
        summary["steps"] = counter.steps if (renderer is not None or json_path is not None) else None
        partial = getattr(fault, "stats", None)  # an engine may attach the statistics so far
        if isinstance(partial, Stats):
            for key in STAT_KEYS:
                summary[key] = int(getattr(partial, key))
        summary["status"] = fault.kind
        summary["exit_code"] = int(fault.exit_code)
        summary["fault"] = {"kind": fault.kind, "message": fault.message, "block": fault.block,
                            "warp": fault.warp, "lane": fault.lane, "pc": fault.pc, "line": fault.line,
                            "step": fault.step}
        printed = getattr(fault, "printf", None)  # device printf before an out-of-bounds fault or assert
        if program.printf and printed is not None:
            summary["printf"] = printed.lines
            sys.stdout.write(printed.text)
            sys.stdout.flush()
        if renderer is not None and renderer.broken:
            _restore_stdout_after_broken_pipe()
        extra = {}
        if recorder is not None:
            extra[timeline] = _timeline_bytes(timeline, recorder, eng.name, dev, fault.kind, partial)
        if dump is not None:
            extra[dump_states] = _dump_bytes(dump, launch, eng.name, dev, dtype, fault.kind)
        if json_path is not None or extra:
            write_outputs(extra, json_path, summary)
        err(TOOL, fault_message(fault, program))
        return int(fault.exit_code)
    summary["wall_time_s"] = round(time.perf_counter() - t0, 6)
    stats = result.stats
    for key in STAT_KEYS:
        summary[key] = int(getattr(stats, key))
    if program.printf:  # device printf: the formatted calls, in qgcc's order (runtime/printf.py)
        summary["printf"] = result.printf.lines
        if result.printf.dropped:
            summary["printf_dropped_cells"] = result.printf.dropped

    buffers = {}
    for name, path in out_paths.items():
        import numpy as np

        buf = io.BytesIO()
        # (a `T **` parameter: NAME is its address cells, NAME[J] the J-th buffer)
        np.save(buf, launch.read_buffer(result.memory, name), allow_pickle=False)
        buffers[path] = buf.getvalue()
    _end_trace_out(writer, "ok", 0, **{k: summary[k] for k in STAT_KEYS})
    if recorder is not None:
        buffers[timeline] = _timeline_bytes(timeline, recorder, eng.name, dev, "ok", stats)
    if dump is not None:
        buffers[dump_states] = _dump_bytes(dump, launch, eng.name, dev, dtype, "ok")
    write_outputs(buffers, json_path, summary)
    if result.printf.lines:
        sys.stdout.write(result.printf.text)
        sys.stdout.flush()
    if result.printf.dropped:
        note(TOOL, f"the printf buffer ({PRINTF_CELLS} cells) was full: {result.printf.dropped} cells of "
                   f"records were dropped, as CUDA drops output when its buffer is full")
    if renderer is not None and renderer.broken:
        _restore_stdout_after_broken_pipe()
        return 0
    if trace in ("summary", "full"):
        print_summary(console, summary)
    return 0


def _chain(first, then):
    def call(rec: StepRecord) -> None:
        first(rec)
        then(rec)
    return call


def _state_dump(engine: str, path: str | None, every: int, step: str = "unfused"):
    """The StateDump that --dump-states fills, or None (docs/protocol.md, section 5a)."""
    if path is None:
        return None
    from ..engines.states import StateDump, check_engine

    check_engine(engine, step=step)
    if not path.lower().endswith(".npz"):
        raise UsageError(f"--dump-states {path}: expected a .npz file name (numpy's savez format)")
    return StateDump(every)


def _dump_bytes(dump, launch, engine: str, device: str, dtype: str, status: str) -> bytes:
    from ..engines.states import dump_bytes

    return dump_bytes(dump, launch, engine, device, dtype, status)


def _check_extra_outputs(timeline: str | None, trace_out: str | None, json_path: str | None,
                         out_paths: dict[str, str], dump_states: str | None = None) -> None:
    """--timeline, --trace-out and --dump-states: writable, a known extension, no file written twice."""
    from .args import check_writable

    taken = {os.path.realpath(p): f"--out {n}" for n, p in out_paths.items()}
    if json_path is not None:
        taken[os.path.realpath(json_path)] = "--json"
    for option, path in (("--timeline", timeline), ("--trace-out", trace_out), ("--dump-states", dump_states)):
        if path is None:
            continue
        if option == "--timeline" and not path.lower().endswith((".svg", ".html", ".htm")):
            raise UsageError(f"--timeline {path}: expected a .svg (picture) or .html (interactive) file name")
        check_writable(f"{option} {path}", path)
        key = os.path.realpath(path)
        if key in taken:
            raise UsageError(f"{option} {path} is also the {taken[key]} file")
        taken[key] = option


def _end_trace_out(writer, status: str, exit_code: int, **more: Any) -> None:
    if writer is None or writer.stream.closed:
        return
    try:
        writer.end(status, exit_code, **more)
    finally:
        writer.stream.close()


def _timeline_bytes(path: str, recorder, engine: str, device: str, status: str, stats) -> bytes:
    from ..timeline import render

    return render(path, recorder, engine=engine, device=device, status=status,
                  stats=stats if isinstance(stats, Stats) else None)


@click.command(name=TOOL, cls=ToolCommand, context_settings=CONTEXT_SETTINGS)
@click.argument("program_file", metavar="KERNEL.qg|CHECKPOINT_DIR")
@click.option("--grid", metavar="X[,Y[,Z]]",
              help=f"Grid of blocks, at most {SPEC.max_grid_dim} a dimension (required without --batch).")
@click.option("--block", metavar="X[,Y[,Z]]",
              help=f"Threads per block, at most {SPEC.max_block_threads} in all (required without --batch).")
@click.option("--kernel", "kernel_name", metavar="NAME", help="Kernel to launch (needed if the file has several).")
@click.option("--arg", "args", multiple=True, metavar="NAME=VALUE",
              help="A parameter: a number (decimal or 0x hex) for scalars; @FILE.npy or zeros:N for pointers.")
@click.option("--out", "outs", multiple=True, metavar="NAME=PATH.npy",
              help="Write buffer NAME's final contents to PATH.npy after a successful run.")
@click.option("--shared", "shared", type=click.IntRange(min=0), default=0, metavar="BYTES",
              help="Dynamic shared memory per block for extern __shared__ arrays (CUDA's third launch "
                   f"parameter; one 4-byte cell per element; with the static ones at most {SPEC.shared_words} "
                   f"cells, {SPEC.shared_words * 4} bytes).")
@click.option("--const", "consts", multiple=True, metavar="NAME=@FILE.npy",
              help="Set a __constant__ variable at launch: @FILE.npy for an array, a number for a scalar.")
@click.option("--engine", default="neural", show_default=True, metavar="NAME",
              help="neural (the compiled layers), hf (transformers' own modules) or ref (the emulator).")
@click.option("--device", type=click.Choice(["cpu", "cuda"]), default="cpu", show_default=True,
              help="Torch device for engines that use one (the ref engine always runs on the CPU).")
@click.option("--dtype", type=click.Choice(["fp32", "bf16"]), default="fp32", show_default=True,
              help="Arithmetic of the network: fp32 (every engine) or bf16 (weights and activations in "
                   "bfloat16: --engine hf).")
@click.option("--trace", type=click.Choice(["full", "summary", "none"]), default="summary", show_default=True,
              help="full: one row per step and the summary; summary: the statistics; none: errors only.")
@click.option("--json", "json_path", metavar="PATH", help="Write a JSON summary (also on faults).")
@click.option("--max-steps", type=click.IntRange(min=1), default=DEFAULT_MAX_STEPS, show_default=True,
              metavar="N", help="Fault (exit 6) after N warp steps.")
@click.option("--batch", "batch_path", metavar="FILE.jsonl",
              help="Run many launches of the program, one JSON object per line (docs/cli.md).")
@click.option("--batch-width", "batch_width", type=click.IntRange(min=1), default=None, metavar="N",
              help="With --batch: step N launches together through the layers as a batch dimension "
                   "(default: up to 1024 on CUDA; 1 on the CPU, where the compiled step is faster per launch).")
@click.option("--jobs", "jobs", type=click.IntRange(min=1), default=None, metavar="N",
              help="With --batch: run the launches in N worker processes, each with its own copy of the "
                   "layers (default: the cores available on the CPU; 1 with --device cuda or --engine hf).")
@click.option("--timeline", metavar="FILE.svg|FILE.html",
              help="Draw the launch: a row per warp and lane, a column per step (.html: with hover details).")
@click.option("--trace-out", "trace_out", metavar="FILE.jsonl",
              help="Stream the trace as JSON Lines, one object per warp instruction (docs/cli.md).")
@click.option("--dump-states", "dump_states", metavar="FILE.npz",
              help="Write every step's input hidden state and every layer's initial and final recurrent state "
                   "as raw float32 bits (docs/protocol.md, section 5a; engines neural and hf).")
@click.option("--dump-every", "dump_every", type=click.IntRange(min=1), default=None, metavar="K",
              help="With --dump-states: keep every K-th step's input only (default 1).")
@click.option("--progress/--no-progress", default=None,
              help="A live progress line on stderr for runs over a second (default: when stderr is a terminal).")
@click.option("--step", type=click.Choice(STEPS), default="unfused", show_default=True,
              help="The neural engine's batched step, used on CUDA and by --batch-width: torch operators, or "
                   "Triton kernels (pip install 'qgcc[fused]'): phased for one launch, fused for wide batches. "
                   "Exact; the Triton steps are not yet timed on a GPU (docs/engines.md).")
@click.version_option(__version__, "--version", prog_name=TOOL,
                      message=f"%(prog)s %(version)s (.qg format version {QG_FORMAT_VERSION})")
def main(program_file: str, grid: str, block: str, kernel_name: str | None, args: tuple[str, ...],
         outs: tuple[str, ...], engine: str, device: str, trace: str, json_path: str | None,
         max_steps: int, batch_path: str | None, progress: bool | None, timeline: str | None,
         trace_out: str | None, shared: int, consts: tuple[str, ...], dtype: str = "fp32",
         batch_width: int | None = None, dump_states: str | None = None, dump_every: int | None = None,
         jobs: int | None = None, step: str = "unfused") -> int:
    """Run a kernel of a compiled .qg program or of a checkpoint linked with qgcc --base (a .cu or .qsass is
    compiled on the fly)."""
    try:
        if batch_path is not None and (dump_states is not None or dump_every is not None):
            raise UsageError("--dump-states records one launch; run the launch alone, without --batch")
        if batch_path is not None:
            used = [f"--{n}" for n, v in (("grid", grid), ("block", block), ("kernel", kernel_name),
                                         ("arg", args), ("out", outs), ("timeline", timeline),
                                         ("trace-out", trace_out), ("shared", shared),
                                         ("const", consts)) if v]
            if used:
                raise UsageError(f"--batch takes each launch's {', '.join(used)} from {batch_path}; "
                                 "drop them from the command line")
            return run_batch(program_file, batch_path, engine, device, trace, json_path, max_steps, dtype,
                              batch_width, jobs, step)
        if batch_width is not None:
            raise UsageError("--batch-width needs --batch FILE.jsonl (the launches to step together)")
        if jobs is not None:
            raise UsageError("--jobs needs --batch FILE.jsonl (the launches to spread over processes)")
        if dump_every is not None and dump_states is None:
            raise UsageError("--dump-every needs --dump-states FILE.npz")
        for name, value in (("grid", grid), ("block", block)):
            if value is None:
                raise UsageError(f"missing --{name} (or give the launches with --batch FILE.jsonl)")
        return _run(program_file, grid, block, kernel_name, args, outs, engine, device, trace,
                    json_path, max_steps, progress, timeline, trace_out, shared, consts, dtype, dump_states,
                    dump_every or 1, step)
    except REPORTED as e:
        return report(TOOL, e)
    except Exception as e:
        return internal_error(TOOL, e)
