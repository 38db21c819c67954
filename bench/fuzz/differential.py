"""Differential execution fuzzing: random UB-free kernels, g++ as the oracle, qgcc on every path.

    python bench/fuzz/differential.py --programs N --seed S --engine ref|neural --via api|cli|checkpoint

Program i of a run is generated from seed S + i (diffgen.py), compiled by g++ with a host shim
that runs CUDA threads as coroutines (diffshim.py), batched many programs to one binary, and by
qgcc through the path asked for:

* api: `qgcc.compile(text).launch(...)` in process;
* cli: `qgcc k.cu -o k.qg` (with --no-link for the ref engine, which does not read the layers),
  then `qgrun k.qg --arg ...=@in.npy --out ...=out.npy`, both through click's runner in process;
* checkpoint: `qgcc k.cu --base BASE -o DIR` into a tiny Qwen3.5 checkpoint built once, then
  `qgrun DIR` (slow: a sample).

Every byte of every buffer must equal the oracle's (any NaN equals any NaN: payloads and signs
of NaN are IEEE's freedom and qgcc canonicalises them).  A program qgcc rejects for the
machine's capacity (registers, instructions, memory) is skipped and counted; any other
CompileError, a fault or an exception is a crash.  Each failure prints one line naming its
reproducer in bench/fuzz/crashes/, minimised by delta debugging over the kernel's lines.
The last line is `N programs, M mismatches, K crashes`; the exit code is 0 only when both are 0.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import io
import os
import re
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1] / "src"))

from diffgen import DTYPE, Program, generate  # noqa: E402
from diffshim import OracleResult, equal_bits, members, run_batch  # noqa: E402

CRASHES = HERE / "crashes"
# qgcc's limits: a program that exceeds them is not wrong code, only too big for the machine
CAPACITY = ("registers", "instructions", "at most 8192", "global cells", "cells of", "65536", "parameter words",
            "shared_words", "local frame")


@dataclass
class Outcome:
    kind: str  # "ok", "mismatch", "crash", "capacity", "oracle"
    detail: str = ""


def is_capacity(message: str) -> bool:
    return any(c in message for c in CAPACITY)


# ------------------------------------------------------------------ running qgcc

def qgcc_outputs(prog: Program, engine: str, via: str, work: Path, base: Path | None = None) -> dict:
    """The buffers after the launch, as {buffer: {field: array}} (raises on compile errors and faults)."""
    if via == "api":
        import qgcc

        p = qgcc.compile(prog.source, name="fuzz.cu")
        r = p.launch(prog.grid, prog.block_shape, engine=engine, max_steps=2_000_000, shared=prog.shared_bytes,
                     args=prog.args())
        got = {b.name: r[b.name] for b in prog.buffers}
    else:
        got = via_cli(prog, engine, via, work, base)
    return {b.name: split(b, got[b.name]) for b in prog.buffers}


def split(b, arr: np.ndarray) -> dict:
    out = {}
    for field, t, k in members(b):
        a = arr if not field else arr[field]
        out[field] = np.ascontiguousarray(a).astype(DTYPE[t], copy=False).reshape(-1)
    return out


class ToolFailed(Exception):
    pass


def invoke(main, args: list[str]) -> str:
    from click.testing import CliRunner

    r = CliRunner().invoke(main, args, catch_exceptions=True)
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        tb = "".join(traceback.format_exception(type(r.exception), r.exception, r.exception.__traceback__))
        raise ToolFailed(f"exception {type(r.exception).__name__}: {r.exception}\n{tb}")
    if r.exit_code != 0:
        raise ToolFailed(r.output.strip())
    return r.output


def via_cli(prog: Program, engine: str, via: str, work: Path, base: Path | None) -> dict:
    from qgcc.cli.qgcc_cmd import main as qgcc_main
    from qgcc.cli.qgrun_cmd import main as qgrun_main

    src = work / "k.cu"
    src.write_text(prog.source)
    if via == "checkpoint":
        target = work / "ckpt"
        invoke(qgcc_main, [str(src), "--base", str(base), "-o", str(target)])
    else:
        target = work / "k.qg"
        invoke(qgcc_main, [str(src), "-o", str(target)] + (["--no-link"] if engine == "ref" else []))
    args = [str(target), "--grid", str(prog.grid), "--block", ",".join(map(str, prog.block_shape)),
            "--engine", engine, "--trace", "none", "--max-steps", "2000000", "--shared", str(prog.shared_bytes)]
    for b in prog.buffers:
        np.save(work / f"{b.name}.npy", b.data)
        args += ["--arg", f"{b.name}=@{work / (b.name + '.npy')}", "--out", f"{b.name}={work / ('o_' + b.name + '.npy')}"]
    for s in prog.scalars:
        args += ["--arg", f"{s.name}={scalar_text(s)}"]
    invoke(qgrun_main, args)
    return {b.name: np.load(work / f"o_{b.name}.npy") for b in prog.buffers}


def scalar_text(s) -> str:
    v = s.value
    if s.ctype in ("float", "double"):
        if v != v:
            return "nan"
        if v in (float("inf"), float("-inf")):
            return "inf" if v > 0 else "-inf"
        return repr(float(v))  # the exact value: a float32 is a float64 exactly, and repr round-trips
    return str(int(v))


# ------------------------------------------------------------------ one program

def check(prog: Program, oracle: OracleResult, engine: str, via: str, base: Path | None = None) -> Outcome:
    from qgcc.diagnostics import CompileError

    if oracle.status != "ok":
        return Outcome("oracle", f"{oracle.status}: {oracle.detail}")
    with tempfile.TemporaryDirectory(prefix="qgfuzz") as d:
        try:
            with contextlib.redirect_stderr(io.StringIO()):
                got = qgcc_outputs(prog, engine, via, Path(d), base)
        except CompileError as e:
            if is_capacity(e.message):
                return Outcome("capacity", e.message)
            return Outcome("crash", f"CompileError {e.render()}")
        except ToolFailed as e:
            msg = str(e)
            if "error:" in msg and is_capacity(msg) and "exception" not in msg:
                return Outcome("capacity", msg)
            return Outcome("crash", msg)
        except Exception as e:  # noqa: BLE001 - a fault or an escape: exactly what is hunted
            return Outcome("crash", f"{type(e).__name__}: {e}\n{traceback.format_exc()}")
    diffs = []
    for b in prog.buffers:
        for field, t, k in members(b):
            want, have = oracle.outputs[b.name][field], got[b.name][field]
            if not equal_bits(want, have):
                bad = [i for i in range(min(len(want), len(have))) if not equal_bits(want[i:i + 1], have[i:i + 1])]
                name = b.name + (f".{field}" if field else "")
                diffs.append(f"{name}[{bad[0] if bad else '?'}]: g++ {want[bad[0]] if bad else want!r} "
                             f"qgcc {have[bad[0]] if bad else have!r} ({len(bad)} elements differ)")
    if diffs:
        return Outcome("mismatch", "; ".join(diffs))
    return Outcome("ok")


# ------------------------------------------------------------------ minimising

def with_lines(prog: Program, lines: list[str]) -> Program:
    import copy

    p = copy.copy(prog)
    p.source = "\n".join(lines)
    return p


def signature(o: Outcome) -> str:
    """What must stay the same while minimising: the kind, and for a crash its first line with
    paths, numbers and quoted names left out (they change as lines are dropped)."""
    if o.kind == "crash":
        first = o.detail.splitlines()[0] if o.detail else ""
        first = re.sub(r"\S*/\S*|'[^']*'|\d+", "_", first)
        return "crash:" + first[:100]
    return o.kind


def ddmin(lines: list[str], fails, deadline: float) -> list[str]:
    """Zeller's delta debugging over lines: the smallest subsequence found (1-minimal when time
    allows) for which `fails` still holds."""
    n = 2
    while len(lines) >= 2 and time.time() < deadline:
        chunk = max(1, len(lines) // n)
        reduced = False
        for start in range(0, len(lines), chunk):
            cand = lines[:start] + lines[start + chunk:]
            if cand and fails(cand):
                lines, n, reduced = cand, max(n - 1, 2), True
                break
            if time.time() > deadline:
                break
        if not reduced:
            if chunk == 1:
                break
            n = min(len(lines), n * 2)
    return lines


def minimise(prog: Program, outcome: Outcome, engine: str, via: str, budget_s: float = 120) -> Program:
    """Drop chunks of the source's lines while the failure stays the same (signature) and the
    oracle still accepts the program (it compiles under g++, and both thread orders agree)."""
    want = signature(outcome)

    def fails(cand: list[str]) -> bool:
        p = with_lines(prog, cand)
        o = run_batch([p], timeout=10)[0]  # a dropped decrement may loop forever
        return o.status == "ok" and signature(check(p, o, engine, via)) == want

    return with_lines(prog, ddmin(prog.source.split("\n"), fails, time.time() + budget_s))


def save(prog: Program, outcome: Outcome, engine: str, via: str) -> Path:
    CRASHES.mkdir(exist_ok=True)
    path = CRASHES / f"{outcome.kind}-{prog.seed}.cu"
    args = ", ".join(f"{b.name}: {b.ctype}[{len(b.data)}]" for b in prog.buffers)
    head = [f"// differential fuzz: seed {prog.seed}, engine {engine}, via {via}, grid {prog.grid}, "
            f"block {prog.block_shape}", f"// buffers {args}; scalars "
            + ", ".join(f"{s.name}={scalar_text(s)}" for s in prog.scalars),
            "// " + outcome.detail.splitlines()[0][:400] if outcome.detail else "//"]
    path.write_text("\n".join(head) + "\n" + prog.source + "\n")
    return path


# ------------------------------------------------------------------ the command

KINDS = ("ok", "mismatch", "crash", "capacity", "oracle")


def run_seeds(seeds: list[int], engine: str, via: str, base: Path | None, neural: bool,
              no_minimise: bool) -> tuple[dict, list[str]]:
    """One batch (one g++ binary): the count of each outcome, and a report line per failure
    (minimised and saved to crashes/ first).  A unit of work for one process, so that --jobs
    only decides which process runs a batch, never what it prints."""
    counts = dict.fromkeys(KINDS, 0)
    lines = []
    progs = [generate(s, neural=neural) for s in seeds]
    for prog, orc in zip(progs, run_batch(progs)):
        o = check(prog, orc, engine, via, base)
        counts[o.kind] += 1
        if o.kind in ("mismatch", "crash", "oracle"):
            small = minimise(prog, o, engine, via) if o.kind != "oracle" and not no_minimise else prog
            path = save(small, o, engine, via)
            lines.append(f"{o.kind}: seed {prog.seed}: {path}: {o.detail.splitlines()[0][:300] if o.detail else ''}")
    return counts, lines


def batches(a) -> list[list[int]]:
    seeds = list(range(a.seed, a.seed + a.programs))
    return [seeds[i:i + a.batch] for i in range(0, len(seeds), a.batch)]


def results(a, base: Path | None, neural: bool):
    """Each batch's (seeds, counts, lines), in seed order, from --jobs worker processes (forked:
    the generator and qgcc are imported once)."""
    work = functools.partial(run_seeds, engine=a.engine, via=a.via, base=base, neural=neural,
                             no_minimise=a.no_minimise)
    todo = batches(a)
    if a.jobs <= 1:
        for seeds in todo:
            yield (seeds, *work(seeds))
        return
    import multiprocessing
    import signal

    # Killed (SIGTERM), leave through the `with`, which terminates the workers: none is orphaned.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    with multiprocessing.get_context("fork").Pool(a.jobs) as pool:
        for seeds, res in zip(todo, pool.imap(work, todo)):
            yield (seeds, *res)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--programs", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--engine", choices=["ref", "neural"], default="ref")
    ap.add_argument("--via", choices=["api", "cli", "checkpoint"], default="api")
    ap.add_argument("--batch", type=int, default=40, help="programs per g++ binary")
    ap.add_argument("--jobs", type=int, default=1,
                    help="worker processes, each running whole batches (same output as --jobs 1)")
    ap.add_argument("--time-limit", type=float, default=None, metavar="S",
                    help="start no batch after S seconds; the summary counts the programs run")
    ap.add_argument("--no-minimise", action="store_true")
    ap.add_argument("--base", help="the base checkpoint for --via checkpoint (built once if absent)")
    ap.add_argument("--quiet", action="store_true", help="no progress lines")
    ap.add_argument("--small", action="store_true",
                    help="the network runs' smaller programs (1-2 blocks of 4 or 8 threads) on any engine")
    a = ap.parse_args(argv)
    neural = a.engine == "neural" or a.via == "checkpoint" or a.small
    base = None
    if a.via == "checkpoint":
        from basecheckpoint import tiny_base

        base = tiny_base(Path(a.base) if a.base else Path(tempfile.gettempdir()) / "qgfuzz-base")
    counts = dict.fromkeys(KINDS, 0)
    t0 = time.time()
    done = 0
    for seeds, c, lines in results(a, base, neural):
        done += len(seeds)
        for k in KINDS:
            counts[k] += c[k]
        for line in lines:
            print(line, flush=True)
        if not a.quiet:
            print(f"  ... {done} programs, {time.time() - t0:.0f} s, {done / (time.time() - t0):.2f} programs/s, "
                  f"{counts}", file=sys.stderr, flush=True)
        if a.time_limit is not None and time.time() - t0 > a.time_limit:
            break
    el = time.time() - t0
    last = f"seeds {a.seed}..{a.seed + done - 1}" if done != a.programs else f"seed {a.seed}"
    print(f"{last}, engine {a.engine}, via {a.via}: {counts['ok']} agreed, {counts['capacity']} over the "
          f"machine's capacity (skipped), "
          f"{counts['oracle']} rejected by the oracle; {el:.0f} s, "
          f"{done / el:.2f} programs/s")
    print(f"{done} programs, {counts['mismatch']} mismatches, {counts['crash']} crashes")
    return 0 if counts["mismatch"] == 0 and counts["crash"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
