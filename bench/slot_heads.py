"""Check the claim behind the batched step's per-slot heads (layout.written_heads): over
whole launches on the compiled C step, every row of every head a launch is not said to
write stays +0 at every step, including launches that fault on an out-of-bounds store into
a head they do not hold (docs/engines.md, "Rail bits: memory per slot").

    PYTHONPATH=src python bench/slot_heads.py [--quick]

Prints, per launch, its steps, the heads held of the used ones, and whether every other
row stayed +0; exits 1 if any did not.  --quick: the mixed program's launches only.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import lockstep  # noqa: E402
from qgcc.engines.host import HALT, Host  # noqa: E402
from qgcc.engines.neural import neural_layers  # noqa: E402
from qgcc.runtime.launch import make_launch  # noqa: E402

# Faults and shapes the samples do not have: out-of-bounds stores into a head past the
# launch's cells (global and shared), and a block of ten warps (register groups 0..2).
EXTRA = {
    "oob_far": ("__global__ void k(int *a) { a[threadIdx.x + 300] = 1; }", (1, 1, 1), (4, 1, 1), {},
                {"a": np.zeros(4, np.int32)}),
    "oob_shared": ("__global__ void k(int *a, int n) { __shared__ int s[4]; s[threadIdx.x * n] = 1; "
                   "__syncthreads(); a[threadIdx.x] = s[threadIdx.x & 3]; }", (1, 1, 1), (4, 1, 1), {"n": 600},
                   {"a": np.zeros(4, np.int32)}),
    "warps10": ("__global__ void k(int *a, int n) { int i = threadIdx.x; int v = i; "
                "for (int j = 0; j < n; j++) v = v * 3 + j; a[i] = v; }", (2, 1, 1), (40, 1, 1), {"n": 2},
                {"a": np.zeros(40, np.int32)}),
}


def launches(quick: bool):
    """(name, network, launch) of every case."""
    cm = lockstep.linked("mixed", lockstep.MIXED_KERNELS)[1]
    for m in lockstep.MIXED + [(2, 1, 8, 3), (0, 1, 4, 4)]:
        a = np.zeros(2, np.int32) if m == (0, 1, 4, 4) else None  # the second: out of bounds
        yield f"mixed{m}", cm, lockstep.mixed_launch(*m, a=a)
    if quick:
        return
    for name, (grid, block, scalars, arrays) in lockstep.CASES.items():
        prog, cm = lockstep.linked(name)
        yield name, cm, make_launch(prog, prog.kernels[0], grid, block, scalars,
                                    {k: v.copy() for k, v in arrays.items()}, network=cm)
    for name, (src, grid, block, scalars, arrays) in EXTRA.items():
        prog, cm = lockstep.linked(name, src)
        yield name, cm, make_launch(prog, prog.kernels[0], grid, block, scalars,
                                    {k: v.copy() for k, v in arrays.items()}, network=cm)


def check(cm, launch) -> tuple[int, int, int, str, bool]:
    """(steps, heads held, heads used, how it ended, every unheld row +0 at every step)."""
    host = Host(cm, neural_layers(cm, "cpu"))
    held = host.written_heads(launch)
    used = [len(L["heads"]) for L in cm.layout["layers"]]
    watch = [L for L in range(cm.num_layers) if not held[L, :used[L]].all()]
    h, init = host.initial(launch)
    host.net.reset(init)
    steps, clean = 0, True

    def zero() -> bool:
        return all(not host.net.recurrent_state(L)[~held[L]].view(np.uint32).any() for L in watch)

    clean = zero()
    while host.get(h, "phase") != HALT and host.get(h, "fault") == 0 and steps < 20000:
        h = host.net.step(h)
        steps += 1
        clean = clean and zero()
    fault = host.get(h, "fault")  # a fault also raises phase.halt
    end = f"fault {fault}" if fault else "halt" if host.get(h, "phase") == HALT else "running"
    return steps, int(sum(held[L, :used[L]].sum() for L in range(len(used)))), sum(used), end, clean


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    bad = 0
    for name, cm, launch in launches(args.quick):
        steps, held, used, end, clean = check(cm, launch)
        print(f"{name:22} steps {steps:6d}  {end:8}  heads held {held:3d} of {used}  "
              f"cells {len(launch.memory):5d}  shared {launch.shared_words:4d}  every unheld row +0: {clean}",
              flush=True)
        bad += not clean
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
