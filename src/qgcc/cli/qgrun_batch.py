"""qgrun --batch: many launches of one program from a JSON Lines file (docs/cli.md, "Batches"),
one after another, in --jobs worker processes, or stacked --batch-width at a time through the
batched step.  Apart from qgrun_cmd, which runs one launch, because the two share only the
argument checks (cli/args.py) and the atomic writing of outputs."""

from __future__ import annotations

import io
import json
import os
import time
from typing import Any

from ..diagnostics import UsageError
from ..inputs import open_program
from ..trace import Fault
from . import err, note
from .args import write_outputs

TOOL = "qgrun"
STAT_KEYS = ("steps", "warp_instructions", "divergent_steps", "barrier_waits", "atomics", "loads", "stores")


def _batch_launches(path: str, program, network) -> list[tuple[Any, ...]]:
    """Parse and check every line of a --batch file before anything runs.

    A line is {"grid": "2" | [2, 1, 1], "block": ..., "kernel": NAME (optional),
    "args": {NAME: VALUE} (as for --arg: 6, "0.5", "@a.npy", "zeros:6", "null" or null),
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
            return tuple(f"{k}={json.dumps(x) if isinstance(x, bool) or x is None else x}" for k, x in v.items())

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


def _batch_width(requested: int | None, engine: str, device: str, launches: int, step: str = "unfused") -> int:
    """How many launches step together through the layers (docs/engines.md, "Batched launches").

    The batched step is the neural engine's torch path with a batch dimension: the default on
    CUDA (up to 1024 launches at a time); on the CPU the compiled C step running the launches
    one by one is faster per launch, so there the default is 1.  The phased step reads weight
    columns per launch (engines/phased.py): it steps one launch at a time unless told otherwise."""
    if requested is None:
        stacked = engine == "neural" and (device == "cuda" or step == "fused")
        requested = min(launches, 1024) if stacked else 1
    if requested > 1 and engine != "neural":
        raise UsageError(f"--batch-width {requested}: only the neural engine steps launches together; "
                         "drop --batch-width or use --engine neural")
    return max(1, min(requested, launches))


def _batch_jobs(requested: int | None, engine: str, device: str, width: int, launches: int,
                step: str = "unfused") -> int:
    """How many worker processes run the launches (qgrun --jobs; cli/jobs.py).

    Default: every core this process may use, for launches run one at a time on the CPU;
    1 on CUDA (one device, one process) and for the hf engine (each process would load its
    own dense layers, about 9 GB)."""
    from .jobs import available_cores, can_fork

    if requested is None:
        requested = available_cores() if device == "cpu" and width == 1 and engine != "hf" and step == "unfused" \
            else 1
    elif requested > 1 and step != "unfused":
        raise UsageError(f"--jobs {requested} with --step {step}: the Triton step runs in one process; "
                         "use --batch-width (or drop --jobs)")
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


def run_batch(program_file: str, batch_path: str, engine: str, device: str, trace: str,
               json_path: str | None, max_steps: int, dtype: str = "fp32", width: int | None = None,
               jobs: int | None = None, step: str = "unfused") -> int:
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
    step, step_note = eng.resolve_step(step, dev)
    if dtype_note:
        note(TOOL, dtype_note)
    if json_path is not None:
        check_writable(f"--json {json_path}", json_path)
    linked = open_program(program_file, _batch_instances(batch_path))
    program = linked.program
    launches = _batch_launches(batch_path, program, linked.network)
    width = _batch_width(width, eng.name, dev, len(launches), step)
    if json_path is not None and os.path.realpath(json_path) in {
            os.path.realpath(p) for *_, outs in launches for p in outs.values()}:
        raise UsageError(f"--json {json_path} is also an --out file")
    if device_note:
        note(TOOL, device_note)
    import numpy as np

    results, buffers, first_failure = [], {}, 0
    jobs = _batch_jobs(jobs, eng.name, dev, width, len(launches), step)
    if step_note:
        note(TOOL, step_note)
    t_all = time.perf_counter()
    batched = _run_batched(launches, linked.network, width, dev, max_steps, step) \
        if width > 1 or step != "unfused" else None
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
    write_outputs(buffers, json_path, report)
    for r in results:
        if r["status"] != "ok":
            err(TOOL, f"{batch_path}:{r['line']}: {r['fault']['message']}")
    if trace in ("summary", "full"):
        print_batch_summary(make_console(), report)
    return first_failure


def _run_batched(launches, network, width: int, device: str, max_steps: int, step: str) -> list | None:
    """Every launch through the batched step, `width` at a time: results or faults in order.
    None for a .qg linked before the exact encoding, which runs one launch at a time."""
    from ..engines.batch import batchable_with, runner_for, runner_key
    from ..engines.network import network_for

    network = network or network_for(launches[0][4])
    if not batchable_with(network, step):
        note(TOOL, "this .qg predates the exact encoding the batched step relies on; "
                   "its launches run one at a time (link it again with qgcc to batch them)")
        return None
    for *_, launch, _outs in launches:
        launch.network = launch.network or network
    todo = [launch for *_, launch, _outs in launches]
    new = runner_key(width, device, step) not in network.hosts
    runner = runner_for(network, width, device, step, todo)
    if new:
        say_precision(runner)
    return runner.run(todo, max_steps)


def say_precision(runner) -> None:
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
