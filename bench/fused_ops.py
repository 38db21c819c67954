"""Kernels per step of the batched step, unfused against fused, counted with the torch profiler on
the CPU (what a GPU would launch per step, up to the products' own kernels):

    python bench/fused_ops.py [--width 2] [--steps 2]

The program is tests/lockstep.py's mixed one (36 layers), its launches loaded into `--width`
slots.  One step (`BatchedLayers._one`: the layers, freezing, the fields decoded) is profiled
after a warm-up step.  Counted: every leaf operator that does work (views, allocations and
metadata operations excluded: they launch nothing on a GPU), each Triton launch as one (in
Triton's interpreter its argument copies are torch operators inside the launch, not counted;
an operator whose work is done by an operator it calls is counted once, as that one),
and torch's top-level operator calls.  Needs triton for the fused column.
"""
from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
import lockstep  # noqa: E402
from qgcc.engines.fused import kernels as fused_kernels  # noqa: E402
from qgcc.engines.host import Host  # noqa: E402
from qgcc.engines.neural_batch import BatchedLayers, row_layers  # noqa: E402
from qgcc.link.layout import PHASES  # noqa: E402

NO_KERNEL = {f"aten::{n}" for n in (
    "empty", "empty_strided", "empty_like", "view", "view_as", "as_strided", "reshape", "_reshape_alias",
    "_unsafe_view", "slice", "select", "unsqueeze", "squeeze", "expand", "expand_as", "transpose", "permute",
    "unbind", "alias", "detach", "detach_", "split", "narrow", "flatten", "resolve_conj", "resolve_neg",
    "result_type", "lift_fresh", "t", "numpy_T", "to", "contiguous", "set_", "item", "_local_scalar_dense",
    "as_strided_")}


def does_work(name: str) -> bool:
    """A leaf operator that launches a kernel on a GPU (not a view, allocation or metadata)."""
    return name not in NO_KERNEL


def count(batch: BatchedLayers) -> tuple[int, int, Counter]:
    batch._t.zero_()
    batch._one()  # warm-up
    batch._t.zero_()  # the chunk's row (BatchedLayers.run resets it before each chunk)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        batch._one()
    kernels, top, names = 0, 0, Counter()

    def works_below(ev) -> bool:  # a descendant that launches a kernel (then it is the one counted)
        return any(does_work(c.name) or works_below(c) for c in ev.cpu_children)

    for ev in prof.events():
        anc, inside = ev.cpu_parent, False
        while anc is not None:
            inside |= anc.name.startswith("triton::")
            anc = anc.cpu_parent
        if inside:
            continue
        if ev.cpu_parent is None:
            top += 1
        if ev.name.startswith("triton::") or (does_work(ev.name) and not works_below(ev)):
            kernels += 1
            names[ev.name] += 1
    return kernels, top, names


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--width", type=int, default=2)
    ap.add_argument("--steps", type=int, default=2, help="steps timed after the profiled one")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    fused_kernels(torch.device("cpu"))  # before any profile: torch's profiler imports triton, compiling
    prog, cm = lockstep.linked("mixed", lockstep.MIXED_KERNELS)
    host = Host(cm, None)
    layers = row_layers(cm, "cpu", True)
    halt = cm.fields["phase"][PHASES.index("halt")]
    launches = [lockstep.mixed_launch(*lockstep.MIXED[i % len(lockstep.MIXED)]) for i in range(args.width)]
    for fused in (False, True):
        batch = BatchedLayers(layers, args.width, host._all_dims, halt, cm.fields["fault"], level=cm.value_level,
                              fused=fused)
        for b, lau in enumerate(launches):
            batch.load(b, *host.initial(lau))
        kernels, top, names = count(batch)
        t = time.perf_counter()
        for _ in range(args.steps):
            batch._t.zero_()
            batch._one()
        dt = (time.perf_counter() - t) / args.steps
        ok = not batch.flags.any()
        print(f"{'fused  ' if fused else 'unfused'} width {args.width}: {kernels:5d} kernels a step "
              f"({top} top-level operator calls), {dt * 1e3:9.1f} ms a step on this CPU, premises held: {ok}")
        print("   most frequent:", ", ".join(f"{n} {c}" for n, c in names.most_common(8)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
