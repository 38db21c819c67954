"""Where a batch's time goes on the device: the runner's phases, then the kernels of one step.

    python bench/gpu_profile.py [--sample vadd] [--widths 1024,8192] [--profile-width 1024] [--fused]
                                [--no-overlap]

For each width: the time of building the runner, of loading every slot (Host.initial_rails_many and
BatchedLayers.load_many), of starting the device steps (graph replays and the copy,
BatchedLayers.enqueue) and of waiting for them (BatchedLayers.collect), of the bulk bookkeeping
(BulkTracker.advance), of the ends of launches (their Trackers) and of reading the results
(BatchRunner._memories), over one batch of the sample's short launch (with the runner's
overlap, the default on CUDA, the host's phases run while the device steps, so they do not add
up to the wall time); then the device time of one step alone (CUDA events around 16 replays).
Then torch's profiler over one eager step at --profile-width: the kernels by device time.
"""
from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))
import lockstep  # noqa: E402
from qgcc.engines import batch as batch_mod, bulk as bulk_mod, neural_batch  # noqa: E402
from qgcc.engines.batch import BatchRunner  # noqa: E402
from qgcc.engines.host import Host  # noqa: E402
from qgcc.runtime.launch import make_launch  # noqa: E402
from timers import timed  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--sample", default="vadd")
ap.add_argument("--widths", default="1024,8192")
ap.add_argument("--profile-width", type=int, default=1024)
ap.add_argument("--device", default="cuda")
ap.add_argument("--fused", action="store_true", help="the fused step (engines/fused.py, Triton kernels)")
ap.add_argument("--no-overlap", action="store_true", help="the runner without overlap (host and device in turn)")
args = ap.parse_args()
dev = args.device
if args.fused:  # triton in the device's mode, before the profiler imports it
    from qgcc.engines.fused import kernels
    kernels(torch.device(dev))
grid, block, scalars, arrays = lockstep.CASES[args.sample]
prog, cm = lockstep.linked(args.sample)


def launch():
    return make_launch(prog, prog.kernels[0], grid, block, scalars, {k: v.copy() for k, v in arrays.items()},
                       network=cm)


def sync():
    if dev == "cuda":
        torch.cuda.synchronize()


def load_all(layers, host, width):
    todo = [launch() for _ in range(width)]
    h, at, owner = host.initial_rails_many(todo)
    layers.load_many(np.arange(width), h, at, [host.written_heads(lau) for lau in todo], owner)


spent = defaultdict(float)
timed(Host, "initial_rails_many", "Host.initial_rails_many", spent)
timed(neural_batch.BatchedLayers, "load_many", "BatchedLayers.load_many", spent)
timed(neural_batch.BatchedLayers, "enqueue", "BatchedLayers.enqueue (steps + copy started)", spent)
timed(neural_batch.BatchedLayers, "collect", "BatchedLayers.collect (waiting for them)", spent)
timed(bulk_mod.BulkTracker, "advance", "BulkTracker.advance", spent)
timed(batch_mod.BatchRunner, "_advance", "Tracker (ends of launches)", spent)
timed(batch_mod.BatchRunner, "_memories", "BatchRunner._memories (results)", spent)
for width in [int(w) for w in args.widths.split(",")]:
    spent.clear()
    todo = [launch() for _ in range(width)]
    t = time.perf_counter()
    runner = BatchRunner(cm, width, dev, chunk=16, fused=args.fused, launches=todo,
                         overlap=False if args.no_overlap else None)
    build = time.perf_counter() - t
    sync(); t = time.perf_counter()
    res = runner.run(todo, 10 ** 6)
    sync(); wall = time.perf_counter() - t
    steps = res[0].network_steps
    print(f"\nwidth {width} (overlap {'on' if runner.overlap else 'off'}): build {build:.2f} s; "
          f"batch of {width} launches of {steps} steps: {wall:.2f} s ({width * steps / wall:,.0f} slot-steps/s)")
    for k, v in sorted(spent.items(), key=lambda kv: -kv[1]):
        print(f"  {k:40} {v:8.3f} s")
    layers = runner.layers
    if dev == "cuda" and layers._graph is not None:
        load_all(layers, runner.host, width)  # running slots again, so the replays do the real work
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        layers._t.zero_()
        start.record()
        for _ in range(16):
            layers._graph.replay()
        end.record()
        sync()
        ms = start.elapsed_time(end) / 16
        print(f"  one step on the device: {ms:.2f} ms ({width / ms * 1e3:,.0f} slot-steps/s if nothing else ran)")
    del runner, layers
    if dev == "cuda":
        torch.cuda.empty_cache()

from qgcc.engines.neural_batch import BatchedLayers, row_layers  # noqa: E402
from qgcc.link.layout import PHASES  # noqa: E402

host = Host(cm, None)
W = args.profile_width
L = BatchedLayers(row_layers(cm, dev, True), W, host._all_dims, cm.fields["phase"][PHASES.index("halt")],
                  cm.fields["fault"], dev, chunk=1, graph=False, decode=(host._all_pow, host._starts),
                  level=cm.value_level, fused=args.fused, heads_per_slot=host.written_heads(launch()).sum(1))
load_all(L, host, W)
L.run()
L._t.zero_()
sync()
acts = [torch.profiler.ProfilerActivity.CPU] + ([torch.profiler.ProfilerActivity.CUDA] if dev == "cuda" else [])
with torch.profiler.profile(activities=acts) as prof:
    with torch.no_grad():
        L._one()
    sync()
key = "cuda_time_total" if dev == "cuda" else "cpu_time_total"
print(f"\none eager {'fused ' if args.fused else ''}step at width {W}, kernels by device time:")
print(prof.key_averages().table(sort_by=key, row_limit=30, max_name_column_width=60))
