"""Fuzz the CUDA front end: random programs from the grammar and mutated samples.

    nice python bench/fuzz/frontend.py --count 100000 [--seed 0] [--crashes DIR]

Each input is either a program generated from the subset's grammar
(programs.py), or a sample from samples/*.cu or a generated program, mutated
by byte flips, token deletions, duplications, swaps and insertions,
truncations and splices (mutate.py).  Every input must compile or give one
clean CompileError (check.py).  The run reports how many inputs it tried, how
many compiled and how many gave a clean error, and writes every escape to
DIR/escape-N.cu with its message in escape-N.txt.  The exit status is 1 if
anything escaped.  Input i depends only on (seed, i), so an escape can be
regenerated with --start i --count 1.
"""

from __future__ import annotations

import argparse
import random
import signal
import sys
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "src"))

from check import check_source  # noqa: E402
from mutate import mutate  # noqa: E402
from programs import random_program  # noqa: E402

SAMPLES = [p.read_bytes() for p in sorted((ROOT / "samples").glob("*.cu"))]
HANG_S = 20  # an input that takes longer than this is reported as an escape (a hang)


class _Hang(Exception):
    pass


def make_input(seed: int, i: int) -> tuple[str, bytes]:
    """(how it was made, the bytes) of input i: reproducible on its own."""
    rnd = random.Random(f"{seed}:{i}")
    r = rnd.random()
    if r < 0.4:
        return "generated", random_program(rnd).encode()
    base = rnd.choice(SAMPLES) if r < 0.8 else random_program(rnd).encode()
    other = rnd.choice(SAMPLES) if rnd.random() < 0.5 else random_program(rnd).encode()
    how, data = mutate(rnd, base, other)
    return f"mutated:{how}", data


def _alarm(signum, frame):
    raise _Hang()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--count", type=int, default=10_000)
    ap.add_argument("--start", type=int, default=0, help="index of the first input")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--crashes", type=Path, default=HERE / "crashes")
    ap.add_argument("--progress", type=int, default=5000, help="print a line every N inputs")
    args = ap.parse_args()

    signal.signal(signal.SIGALRM, _alarm)
    counts: Counter[str] = Counter()
    by_source: Counter[str] = Counter()
    escapes = 0
    slowest = (0.0, -1)
    t0 = time.perf_counter()
    for i in range(args.start, args.start + args.count):
        how, data = make_input(args.seed, i)
        by_source[how.split(":")[0]] += 1
        t = time.perf_counter()
        signal.alarm(HANG_S)
        try:
            outcome = check_source(data, "fuzz.cu")
            kind, detail = outcome.kind, outcome.detail
        except _Hang:
            kind, detail = "escape", f"no answer within {HANG_S} s"
        finally:
            signal.alarm(0)
        dt = time.perf_counter() - t
        slowest = max(slowest, (dt, i))
        counts[kind] += 1
        if kind == "escape":
            escapes += 1
            args.crashes.mkdir(parents=True, exist_ok=True)
            (args.crashes / f"escape-{i}.cu").write_bytes(data)
            (args.crashes / f"escape-{i}.txt").write_text(f"seed {args.seed} input {i} ({how})\n{detail}\n")
            print(f"ESCAPE input {i} ({how}): {detail.splitlines()[0]}", flush=True)
        done = i - args.start + 1
        if args.progress and done % args.progress == 0:
            print(f"  {done} inputs, {counts['compiled']} compiled, {counts['error']} clean errors, "
                  f"{counts['escape']} escapes, {time.perf_counter() - t0:.0f} s", flush=True)
    total = sum(counts.values())
    print(f"front-end fuzz: seed {args.seed}, inputs {args.start}..{args.start + args.count - 1}: "
          f"{total} inputs ({by_source['generated']} generated from the grammar, "
          f"{by_source['mutated']} mutated), {counts['compiled']} compiled, "
          f"{counts['error']} clean CompileErrors, {counts['escape']} escaped; "
          f"{time.perf_counter() - t0:.0f} s, slowest input {slowest[1]} ({slowest[0]:.2f} s)")
    if escapes:
        print(f"reproducers in {args.crashes}/escape-*.cu")
    return 1 if escapes else 0


if __name__ == "__main__":
    sys.exit(main())
