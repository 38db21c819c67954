"""`qgrun`: launch a kernel of a .qg program on an engine and report the result.

    qgrun KERNEL.qg --grid X[,Y[,Z]] --block X[,Y[,Z]] [--kernel NAME]
          [--arg NAME=VALUE]... [--out NAME=PATH.npy]... [--shared BYTES] [--const NAME=@FILE.npy]...
          [--engine ref] [--device cpu|cuda]
          [--trace full|summary|none] [--json PATH] [--max-steps N] [--progress]
          [--dump-states FILE.npz [--dump-every K]]
    qgrun KERNEL.qg --batch LAUNCHES.jsonl [--batch-width N] [--engine ...] [--json PATH]

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
from typing import Any

import click

from ..diagnostics import OutputError, UsageError
from ..inputs import open_program
from ..program import PRINTF_CELLS
from ..qgfile import FORMAT_VERSION as QG_FORMAT_VERSION
from ..spec import SPEC
from ..trace import ExitCode, Fault, Stats, StepRecord
from ..version import __version__
from . import CONTEXT_SETTINGS, REPORTED, ToolCommand, err, internal_error, note, report

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
         dump_states: str | None = None, dump_every: int = 1) -> int:
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
    dump = _state_dump(eng.name, dump_states, dump_every)
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
                                       states=dump)
        except Fault:
            raise
        except BaseException:
            _end_trace_out(writer, "error", int(ExitCode.INTERNAL))
            raise
        finally:
            if live is not None:
                live.close()
            runner = launch.network.hosts.get(("neural-batch", dev, 1)) if launch.network is not None else None
            if runner is not None and eng.name == "neural":  # one launch on CUDA: a batch of one
                _say_precision(runner)
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
            _write_outputs(extra, json_path, summary)
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
    _write_outputs(buffers, json_path, summary)
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


def _state_dump(engine: str, path: str | None, every: int):
    """The StateDump that --dump-states fills, or None (docs/protocol.md, section 5a)."""
    if path is None:
        return None
    from ..engines.states import StateDump, check_engine

    check_engine(engine)
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


def _batch_launches(path: str, program, network) -> list[tuple[Any, ...]]:
    """Parse and check every line of a --batch file before anything runs.

    A line is {"grid": "2" | [2, 1, 1], "block": ..., "kernel": NAME (optional),
    "args": {NAME: VALUE} (as for --arg: 6, "0.5", "@a.npy", "zeros:6"),
    "outs": {NAME: PATH.npy} (optional), "shared": BYTES (optional, as --shared),
    "consts": {NAME: VALUE} (optional, as --const)}; paths are relative to the current directory.
    """
    from .args import check_out_buffers, check_writable, parse_args, parse_consts, parse_outs
    from ..runtime.launch import make_launch, parse_dim3

    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise UsageError(f"--batch {path}: cannot read it ({getattr(e, 'strerror', None) or e})") from None
    launches, all_outs = [], {}
    for no, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{path}:{no}"
        try:
            spec = json.loads(line)
        except json.JSONDecodeError as e:
            raise UsageError(f"{where}: not JSON ({e.msg} at column {e.colno})") from None
        if not isinstance(spec, dict):
            raise UsageError(f"{where}: expected an object with grid, block, args and outs")
        unknown = set(spec) - {"grid", "block", "kernel", "args", "outs", "shared", "consts"}
        if unknown:
            raise UsageError(f"{where}: unknown key '{sorted(unknown)[0]}' (keys: grid, block, kernel, args, "
                             "outs, shared, consts)")

        def dim(key):
            v = spec.get(key)
            if v is None:
                raise UsageError(f"{where}: missing \"{key}\"")
            text = ",".join(str(x) for x in v) if isinstance(v, list) else str(v)
            try:
                return parse_dim3(text, key)
            except UsageError as e:
                raise UsageError(f"{where}: {e}") from None

        def pairs(key):
            v = spec.get(key, {})
            if not isinstance(v, dict):
                raise UsageError(f"{where}: \"{key}\" must be an object of NAME: VALUE")
            return tuple(f"{k}={json.dumps(x) if isinstance(x, bool) else x}" for k, x in v.items())

        try:
            kernel = program.kernel(spec.get("kernel"))
            grid3, block3 = dim("grid"), dim("block")
            scalars, arrays = parse_args(kernel, pairs("args"))
            outs = parse_outs(kernel, pairs("outs"))
            for name, p in outs.items():
                key = os.path.realpath(p)
                if key in all_outs:
                    raise UsageError(f"--out {name}={p} is also written by launch {all_outs[key]}")
                all_outs[key] = no
                check_writable(f"--out {name}={p}", p)
            shared = spec.get("shared", 0)
            if type(shared) is not int or shared < 0:
                raise UsageError(f"{where}: \"shared\" must be a number of bytes >= 0")
            launch = make_launch(program, kernel, grid3, block3, scalars, arrays, network=network,
                                 shared_bytes=shared, constants=parse_consts(program, pairs("consts")))
            check_out_buffers(outs, launch.buffers)
        except LookupError as e:
            raise UsageError(f"{where}: {e.args[0] if e.args else e}") from None
        except UsageError as e:
            msg = str(e)
            raise UsageError(msg if msg.startswith(where) else f"{where}: {msg}") from None
        launches.append((no, kernel, grid3, block3, launch, outs))
    if not launches:
        raise UsageError(f"--batch {path}: no launches (one JSON object per line)")
    return launches


def _batch_width(requested: int | None, engine: str, device: str, launches: int) -> int:
    """How many launches step together through the layers (docs/engines.md, "Batched launches").

    The batched step is the neural engine's torch path with a batch dimension: the default on
    CUDA (up to 1024 launches at a time); on the CPU the compiled C step running the launches
    one by one is faster per launch, so there the default is 1."""
    if requested is None:
        requested = min(launches, 1024) if engine == "neural" and device == "cuda" else 1
    if requested > 1 and engine != "neural":
        raise UsageError(f"--batch-width {requested}: only the neural engine steps launches together; "
                         "drop --batch-width or use --engine neural")
    return max(1, min(requested, launches))


def _batch_jobs(requested: int | None, engine: str, device: str, width: int, launches: int) -> int:
    """How many worker processes run the launches (qgrun --jobs; cli/jobs.py).

    Default: every core this process may use, for launches run one at a time on the CPU;
    1 on CUDA (one device, one process) and for the hf engine (each process would load its
    own dense layers, about 9 GB)."""
    from .jobs import available_cores, can_fork

    if requested is None:
        requested = available_cores() if device == "cpu" and width == 1 and engine != "hf" else 1
    elif requested > 1 and device != "cpu":
        raise UsageError(f"--jobs {requested}: worker processes run launches on the CPU; "
                         "with --device cuda use --batch-width (or drop --jobs)")
    elif requested > 1 and width > 1:
        raise UsageError(f"--jobs {requested} with --batch-width {width}: the batched step runs in "
                         "one process; use one of them")
    if not can_fork():
        return 1
    return max(1, min(requested, launches))


def _prepare_workers(eng, launches, network, device: str, dtype: str):
    """Link the program and build its layers once, before the workers fork, so that none
    of them does it again (each gets its own copy)."""
    if eng.name == "ref":
        return network
    from ..engines.network import network_for

    network = network or network_for(launches[0][4])
    eng.create(device, dtype).host(network)
    return network


def _batch_instances(path: str) -> tuple[str, ...]:
    """The kernel template instances a --batch file names ("kernel": "matmul<8>"), which a .cu is
    compiled with; malformed lines are left to _batch_launches to report."""
    names: list[str] = []
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except (OSError, UnicodeDecodeError):
        return ()
    for line in lines:
        try:
            spec = json.loads(line)
        except json.JSONDecodeError:
            continue
        k = spec.get("kernel") if isinstance(spec, dict) else None
        if isinstance(k, str) and "<" in k and k not in names:
            names.append(k)
    return tuple(names)


def _run_batch(program_file: str, batch_path: str, engine: str, device: str, trace: str,
               json_path: str | None, max_steps: int, dtype: str = "fp32", width: int | None = None,
               jobs: int | None = None) -> int:
    """Many launches of one program: loaded and linked once, then run one after another
    through the same layers, or with --batch-width N stacked N at a time as a batch dimension;
    either way each exactly as a single qgrun would run it.  Every line is checked first;
    the --out files of the launches that succeed are written together at the end."""
    from .. import engines
    from .args import check_writable
    from .jobs import ordered
    from ..runtime.printf import assertion, collect
    from .render import fault_message, make_console, print_batch_summary

    eng = engines.get(engine)
    dev, device_note = eng.resolve_device(device)
    dtype, dtype_note = eng.resolve_dtype(dtype)
    if dtype_note:
        note(TOOL, dtype_note)
    if json_path is not None:
        check_writable(f"--json {json_path}", json_path)
    linked = open_program(program_file, _batch_instances(batch_path))
    program = linked.program
    launches = _batch_launches(batch_path, program, linked.network)
    width = _batch_width(width, eng.name, dev, len(launches))
    if json_path is not None and os.path.realpath(json_path) in {
            os.path.realpath(p) for *_, outs in launches for p in outs.values()}:
        raise UsageError(f"--json {json_path} is also an --out file")
    if device_note:
        note(TOOL, device_note)
    import numpy as np

    results, buffers, first_failure = [], {}, 0
    jobs = _batch_jobs(jobs, eng.name, dev, width, len(launches))
    t_all = time.perf_counter()
    batched = _run_batched(launches, linked.network, width, dev, max_steps) if width > 1 else None
    network = linked.network  # a program compiled on the fly is linked by its first launch, once
    if jobs > 1:
        network = _prepare_workers(eng, launches, network, dev, dtype)

    def one(i: int) -> tuple[dict[str, Any], dict[str, bytes]]:
        """Launch i's JSON summary and --out files (in this process or a --jobs worker)."""
        nonlocal network
        no, kernel, grid3, block3, launch, outs = launches[i]
        launch.network = launch.network or network
        summary: dict[str, Any] = {"line": no, "kernel": kernel.name, "grid": list(grid3), "block": list(block3),
                                   "status": "ok", "exit_code": 0}
        files: dict[str, bytes] = {}
        t0 = time.perf_counter()
        try:
            if batched is not None:
                result = batched[i]
                if isinstance(result, Fault):
                    raise result
            else:
                result = eng.run(launch, max_steps=max_steps, on_step=None, device=dev, dtype=dtype)
            network = launch.network
        except Fault as fault:
            fault = assertion(fault, launch)  # a failing device assert (runtime/printf.py)
            summary.update(status=fault.kind, exit_code=int(fault.exit_code),
                           fault={"kind": fault.kind, "message": fault_message(fault, program)})
        else:
            for key in STAT_KEYS:
                summary[key] = int(getattr(result.stats, key))
            if program.printf:  # device printf: in --json only (each launch its own list)
                out = collect(program, result.memory)
                summary["printf"] = out.lines
                if out.dropped:
                    summary["printf_dropped_cells"] = out.dropped
            for name, path in outs.items():
                buf = io.BytesIO()
                np.save(buf, launch.read_buffer(result.memory, name), allow_pickle=False)
                files[path] = buf.getvalue()
        # Batched launches overlap in time: each one's own span, from its start to its end.
        summary["wall_time_s"] = round(time.perf_counter() - t0 if batched is None
                                       else getattr(batched[i], "wall_s", 0.0), 6)
        return summary, files

    for summary, files in ordered(one, len(launches), jobs):
        first_failure = first_failure or summary["exit_code"]
        buffers.update(files)
        results.append(summary)
    wall = time.perf_counter() - t_all
    report = {"engine": eng.name, "device": dev, "batch_width": width, "launches": len(results),
              "ok": sum(r["status"] == "ok" for r in results), "wall_time_s": round(wall, 6),
              "launches_per_s": round(len(results) / wall, 3) if wall > 0 else None, "results": results}
    _write_outputs(buffers, json_path, report)
    for r in results:
        if r["status"] != "ok":
            err(TOOL, f"{batch_path}:{r['line']}: {r['fault']['message']}")
    if trace in ("summary", "full"):
        print_batch_summary(make_console(), report)
    return first_failure


def _run_batched(launches, network, width: int, device: str, max_steps: int) -> list | None:
    """Every launch through the batched step, `width` at a time: results or faults in order.
    None for a .qg linked before the exact encoding, which runs one launch at a time."""
    from ..engines.batch import BatchRunner, batchable
    from ..engines.network import network_for

    network = network or network_for(launches[0][4])
    if not batchable(network):
        note(TOOL, "this .qg predates the exact encoding the batched step relies on; "
                   "its launches run one at a time (link it again with qgcc to batch them)")
        return None
    for *_, launch, _outs in launches:
        launch.network = launch.network or network
    key = ("neural-batch", device, width)
    todo = [launch for *_, launch, _outs in launches]
    runner = network.hosts.get(key)
    if runner is None:  # sized for these launches before its CUDA graph is captured
        runner = network.hosts[key] = BatchRunner(network, width, device, launches=todo)
        _say_precision(runner)
    return runner.run(todo, max_steps)


def _say_precision(runner) -> None:
    """The matrices the batched step keeps in float32 where bfloat16 parts would not be exact
    (engines/lowp.py): the results are the same bits either way, only slower, and a user who
    measures the device should know why (issue #26: "fall back to fp32 ..., and say so")."""
    why: dict[str, list[str]] = {}  # one line per reason: a torch without the product fails them all
    for text in runner.layers.notes:
        name, _, reason = text.partition(": float32 (")
        why.setdefault(reason.rstrip(")"), []).append(name)
    for reason, names in why.items():
        shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        note(TOOL, f"the batched step multiplies {len(names)} matrices in float32, not in bfloat16 parts on "
                   f"tensor cores ({reason}): {shown}; the results are the same bits, only slower")


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
@click.version_option(__version__, "--version", prog_name=TOOL,
                      message=f"%(prog)s %(version)s (.qg format version {QG_FORMAT_VERSION})")
def main(program_file: str, grid: str, block: str, kernel_name: str | None, args: tuple[str, ...],
         outs: tuple[str, ...], engine: str, device: str, trace: str, json_path: str | None,
         max_steps: int, batch_path: str | None, progress: bool | None, timeline: str | None,
         trace_out: str | None, shared: int, consts: tuple[str, ...], dtype: str = "fp32",
         batch_width: int | None = None, dump_states: str | None = None, dump_every: int | None = None,
         jobs: int | None = None) -> int:
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
            return _run_batch(program_file, batch_path, engine, device, trace, json_path, max_steps, dtype,
                              batch_width, jobs)
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
                    dump_every or 1)
    except REPORTED as e:
        return report(TOOL, e)
    except Exception as e:
        return internal_error(TOOL, e)
