"""The host's share of a batch, per slot and in bulk, without stepping: what loading a slot
(its first input and initial states) and reading a halted slot's memory cost, on any device.

    python bench/host_bulk.py [--sample vadd] [--width 1024] [--device cpu]

`per slot` is the path before bulk loading (Host.initial's dense states, BatchedLayers.load
one slot at a time, Host.read_cells over each slot's whole states); `bulk` is what
BatchRunner does now (Host.initial_rails_many, BatchedLayers.load_many in groups, read_rails and
Host.cells_from_rails for every slot at once).  Both must give the same cells.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
import lockstep  # noqa: E402
from qgcc.engines.batch import BatchRunner  # noqa: E402
from qgcc.runtime.launch import make_launch  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--sample", default="vadd")
ap.add_argument("--width", type=int, default=1024)
ap.add_argument("--device", default="cpu")
args = ap.parse_args()
grid, block, scalars, arrays = lockstep.CASES[args.sample]
prog, cm = lockstep.linked(args.sample)
todo = [make_launch(prog, prog.kernels[0], grid, block, scalars, {k: v.copy() for k, v in arrays.items()},
                    network=cm) for _ in range(args.width)]
runner = BatchRunner(cm, args.width, args.device, chunk=1, launches=todo)
host, layers, W = runner.host, runner.layers, args.width


def sync():
    if args.device == "cuda":
        torch.cuda.synchronize()


sync(); t = time.perf_counter()
for b, lau in enumerate(todo):
    layers.load(b, *host.initial(lau), host.written_heads(lau))
sync(); load_one = time.perf_counter() - t
t = time.perf_counter()
old = [host.read_cells(len(lau.memory), lambda L: layers.recurrent_state(b, L)) for b, lau in enumerate(todo)]
read_one = time.perf_counter() - t

sync(); t = time.perf_counter()
for lo in range(0, W, runner.LOAD_GROUP):
    group = np.arange(lo, min(W, lo + runner.LOAD_GROUP))
    h, at, owner = host.initial_rails_many([todo[b] for b in group])
    layers.load_many(group, h, at, [host.written_heads(todo[b]) for b in group], owner)
sync(); load_bulk = time.perf_counter() - t
t = time.perf_counter()
count = len(todo[0].memory)
new = host.cells_from_rails(layers.read_rails(np.arange(W), host.cell_rows(count)), count)
read_bulk = time.perf_counter() - t
same = all(np.array_equal(o, n) for o, n in zip(old, new))
print(f"{args.sample} width {W} on {args.device}: load per slot {load_one:.3f} s, bulk {load_bulk:.3f} s; "
      f"read per slot {read_one:.3f} s, bulk {read_bulk:.3f} s; same cells: {same}")
sys.exit(0 if same else 1)
