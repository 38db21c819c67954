"""Noise margin: the largest random relative weight perturbation the machine survives.

    python bench/margin.py [--sizes 1e-7,1e-6,1e-5,1e-4,1e-3] [--seeds 3] [--sample vadd|saxpy|...]

Multiplies every weight of every compiled layer by (1 + size * N(0, 1)) (fresh noise per
seed), runs the sample's short launch (tests/lockstep.py) on the torch path (the C step
refuses inexact inputs by design), and compares the trace and buffers with the emulator.
Prints, per size, how many seeds stayed exact, and the largest size at which all did.
"""
import argparse, copy, sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from lockstep import CASES  # noqa: E402
from qgcc.engines.host import Host  # noqa: E402
from qgcc.engines.neural_torch import NeuralLayers  # noqa: E402
from qgcc.frontend import compile_source  # noqa: E402
from qgcc.link.linker import link  # noqa: E402
from qgcc.link.weights import SparseTensor  # noqa: E402
from qgcc.ref.emulator import run as ref_run  # noqa: E402
from qgcc.runtime.launch import make_launch  # noqa: E402
from qgcc.trace import Fault  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--sizes", default="1e-7,1e-6,1e-5,1e-4,1e-3")
ap.add_argument("--seeds", type=int, default=3)
ap.add_argument("--sample", default="vadd")
args = ap.parse_args()
if args.sample in CASES:
    grid, block, scalars, arrays = CASES[args.sample]
else:  # e.g. the float samples: tests/sample_cases.py's launch generator, at a fixed seed
    import sample_cases  # noqa: E402
    grid, block, scalars, arrays = getattr(sample_cases, f"case_{args.sample}")(np.random.default_rng(1))
prog = compile_source((ROOT / "samples" / f"{args.sample}.cu").read_text(), args.sample)
cm = link(prog)
mk = lambda: make_launch(prog, prog.kernels[0], grid, block, scalars, {k: v.copy() for k, v in arrays.items()})
ref_trace = []
ref = ref_run(mk(), on_step=lambda r: ref_trace.append(r.key()))
steps = 4 * len(ref_trace) + 200


def perturbed(size: float, seed: int):
    rng = np.random.default_rng(seed)
    net = copy.copy(cm)
    net.layers = []
    net.hosts = {}
    for lw in cm.layers:
        lw2 = copy.copy(lw)
        lw2.tensors = {}
        for name, st in lw.tensors.items():
            idx, val = st.arrays()
            noisy = (val.astype(np.float64) * (1 + size * rng.standard_normal(len(val)))).astype(np.float32)
            lw2.tensors[name] = SparseTensor.from_arrays(st.shape, idx, noisy)
        net.layers.append(lw2)
    return net


class Budget(Exception):
    pass


class Limited:
    """The torch path with a network-step budget: a perturbed machine that never halts is not exact."""

    def __init__(self, layers, limit: int):
        self.layers, self.limit, self.n = layers, limit, 0

    def reset(self, init):
        self.n = 0
        self.layers.reset(init)

    def recurrent_state(self, layer):
        return self.layers.recurrent_state(layer)

    def step(self, h):
        self.n += 1
        if self.n > self.limit:
            raise Budget
        return self.layers.step(h)


budget = 2 * Host(cm, Limited(NeuralLayers(cm.layers), 10 ** 9)).run(mk()).network_steps
best = 0.0
print(f"{args.sample}: {len(ref_trace)} warp instructions; every weight times (1 + size * N(0,1))")
for size in [float(x) for x in args.sizes.split(",")]:
    ok = 0
    for seed in range(args.seeds):
        net = perturbed(size, seed)
        trace = []
        try:
            res = Host(net, Limited(NeuralLayers(net.layers), budget)).run(
                mk(), max_steps=steps, on_step=lambda r: trace.append(r.key()))
            exact = trace == ref_trace and np.array_equal(res.memory, ref.memory)
        except (Fault, Budget):
            exact = False
        ok += exact
    print(f"size {size:8.0e}: {ok}/{args.seeds} seeds exact")
    if ok == args.seeds and size > best:
        best = size
print(f"largest size exact on every seed: {best:.0e}")
