"""What the host alone can feed a batch: BatchRunner with the device replaced by a replay of
the C step's fields, so the figure bounds the batched rate whatever the GPU does (issue #26's
target is 10^6 lane-instructions/s on the vadd and collatz short launches).

    python bench/host_ceiling.py [--samples vadd,collatz] [--widths 1024,8192] [--rounds 2] [--profile]

Each sample's short launch is run once on the C step, recording the fields it decodes after
every network step and its final cells.  The replay then plays the device's part for `rounds`
x width launches through a runner of that width: a chunk gives each running slot its next K
recorded rows (a halted slot repeats its last, as the device's frozen slot does), `read_rails`
gives the final cells' rails.  Everything else is the runner's own work, as on CUDA: loading
slots (Host.initial_rails_many, and load_many into a real BatchedLayers of one load group's
width on the CPU: its numpy work, with the clearing of a few slots' blocks standing in for the
device's), the bulk bookkeeping of every chunk, reading and decoding results, refilling slots.
The replay's own indexing counts too, so the figure errs low.  Every result
is compared with the C step's (memory and statistics).  On a machine whose host is about
as fast as this one, the batched step cannot go past the printed rate.
"""
from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time
from collections import deque
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))
import lockstep  # noqa: E402
from qgcc.engines.batch import BatchRunner  # noqa: E402
from qgcc.engines.host import Host  # noqa: E402
from qgcc.engines.neural import neural_layers  # noqa: E402
from qgcc.engines.neural_batch import Chunk  # noqa: E402
from qgcc.runtime.launch import make_launch  # noqa: E402
from timers import timed  # noqa: E402

TARGET = 1e6


def record(cm, launch):
    """(fields decoded after each network step (steps, fields) int64, the C step's result, lanes)."""
    host = Host(cm, neural_layers(cm, "cpu"))
    rows = []
    step = host.net.step

    def recorded(h):
        out = step(h)
        rows.append(np.add.reduceat((out[host._all_dims] > 0) * host._all_pow, host._starts))
        return out

    host.net.step = recorded
    lanes = []
    result = host.run(launch, on_step=lambda r: lanes.append(bin(r.active).count("1")))
    host.net.step = step
    return np.array(rows, np.int64), result, sum(lanes)


class Replay:
    """The BatchedLayers interface BatchRunner uses, answered from one recorded launch."""

    def __init__(self, loader, width: int, chunk: int, rows: np.ndarray, memory: np.ndarray):
        self.loader = loader  # a real BatchedLayers of one load group's width: load_many's host work
        self.layers, self.width, self.chunk = loader.layers, width, chunk
        self.rows, self.memory = rows, np.asarray(memory, np.uint32)
        self.at = np.zeros(width, np.int64)  # each slot's next recorded row
        self.running = np.zeros(width, bool)
        self.pending: deque[Chunk] = deque()

    def reserve(self, heads) -> None:
        pass

    def load_many(self, slots, h, rails, held=None, owner=None) -> None:
        slots = np.asarray(slots)
        more = () if owner is None else (owner,)
        self.loader.load_many(np.arange(len(slots)), h, rails, held, *more)  # its numpy work, on a few slots
        self.at[slots] = 0
        self.running[slots] = True

    def stop(self, slot: int) -> None:
        self.running[slot] = False

    def enqueue(self) -> None:
        n = len(self.rows)
        k = np.minimum(self.at[None, :] + np.arange(self.chunk)[:, None], n - 1)  # (K, B)
        values = self.rows[k]
        values[:, ~self.running] = 0
        self.at = np.where(self.running, self.at + self.chunk, self.at)
        self.running &= self.at < n
        self.pending.append(Chunk(values, np.zeros(self.width, np.int32), self.running.copy()))

    def collect(self) -> Chunk:
        return self.pending.popleft()

    def drain(self) -> None:
        self.pending.clear()

    def read_rails(self, slots, where) -> np.ndarray:
        """The final cells' rows as rails (layout.row_rails: rail 4i + bit i of word 0 + 2 x bit
        i of word 1 set), the same for every slot."""
        cells = np.zeros(2 * len(where), np.uint32)
        cells[:len(self.memory)] = self.memory[:len(cells)]
        words = cells.reshape(-1, 2).astype(np.int64)
        bit = np.arange(32)
        rail = 4 * bit + ((words[:, :1] >> bit) & 1) + 2 * ((words[:, 1:] >> bit) & 1)
        out = np.zeros((len(where), 128), bool)
        np.put_along_axis(out, rail, True, axis=1)
        return np.broadcast_to(out, (len(slots), *out.shape)).copy()


def parts_timed(runner, host_parts, device_parts) -> dict[str, float]:
    """Wrap the runner's parts with timers: {part: seconds}, filled as it runs."""
    spent: dict[str, float] = {}
    for name in host_parts:
        timed(runner, name, name, spent)
    for name in device_parts:
        timed(runner.layers, name, "replay", spent)
    return spent


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--samples", default="vadd,collatz")
    ap.add_argument("--widths", default="1024,8192")
    ap.add_argument("--rounds", type=int, default=2, help="launches per slot")
    ap.add_argument("--chunk", type=int, default=16)
    ap.add_argument("--profile", action="store_true", help="the host functions that take the time, at the last width")
    args = ap.parse_args(argv)
    bad = 0
    for name in args.samples.split(","):
        grid, block, scalars, arrays = lockstep.CASES[name]
        prog, cm = lockstep.linked(name)

        def make():
            return make_launch(prog, prog.kernels[0], grid, block, scalars,
                               {k: v.copy() for k, v in arrays.items()}, network=cm)

        rows, want, lanes = record(cm, make())
        print(f"{name}: {len(rows)} network steps, {lanes} lane-instructions a launch", flush=True)
        for width in map(int, args.widths.split(",")):
            todo = [make() for _ in range(args.rounds * width)]
            runner = BatchRunner(cm, min(width, BatchRunner.LOAD_GROUP), "cpu", chunk=args.chunk, lowp=False,
                                 launches=todo[:1])
            runner.width = width
            runner.layers = Replay(runner.layers, width, args.chunk, rows, want.memory)
            spent = parts_timed(runner, ("_fill", "_process", "_read"), ("enqueue", "collect"))
            prof = cProfile.Profile() if args.profile else None
            t = time.perf_counter()
            if prof:
                prof.enable()
            results = runner.run(todo, 10 ** 6)
            if prof:
                prof.disable()
            wall = time.perf_counter() - t
            ok = all(not isinstance(r, Exception) and np.array_equal(r.memory, want.memory) and r.stats == want.stats
                     for r in results)
            bad += not ok
            rate = lanes * len(todo) / wall
            print(f"  width {width:6d}: {len(todo):6d} launches in {wall:6.2f} s: {1e6 * wall / len(todo):7.1f} us "
                  f"a launch, {len(todo) / wall:8.0f} launches/s, {rate:12,.0f} lane-instr/s "
                  f"({rate / TARGET:.2f}x the 10^6 target)  results equal the C step's: {ok}", flush=True)
            print("    us a launch: " + ", ".join(f"{k.strip('_')} {1e6 * v / len(todo):.1f}" for k, v in spent.items())
                  + " (replay: the stand-in device's own work)", flush=True)
            if prof:
                pstats.Stats(prof).sort_stats("tottime").print_stats(15)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
