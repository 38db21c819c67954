"""Steps per second of every engine on the samples' short launches, in one run (CPU; CUDA when present).

    python bench/steps.py [--hf-steps 20] [--samples vadd,reduce]

Per sample: warp instructions, network steps, then
  ref instr/s     the reference emulator
  neural/s        `--engine neural` as qgrun runs it (the compiled C step on the CPU), best of 3 launches
  torch/s         the engine's torch path (stock operations, all-zero blocks skipped:
                  the `neural` engine before the C step)
  cuda/s          with CUDA: `--engine neural --device cuda` (the batched step at width 1, best of 2)
  hf/s            transformers' own modules, timed on the first --hf-steps steps only
and the ratios neural/hf, neural/torch and neural/ref (network steps per warp instruction
of the emulator).  Every engine's buffers are checked against the emulator's.
"""
import argparse, sys, time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from lockstep import CASES  # noqa: E402  (small launches of every sample)
from qgcc.frontend import compile_source  # noqa: E402
from qgcc.engines.hf import HFEngine  # noqa: E402
from qgcc.engines.host import Host  # noqa: E402
from qgcc.engines.neural import NeuralEngine  # noqa: E402
from qgcc.engines.neural_torch import NeuralLayers  # noqa: E402
from qgcc.link.linker import link  # noqa: E402
from qgcc.ref.emulator import run as ref_run  # noqa: E402
from qgcc.runtime.launch import make_launch  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--hf-steps", type=int, default=20)
ap.add_argument("--samples", default=",".join(sorted(CASES)))
args = ap.parse_args()
torch.set_num_threads(1)
cuda = torch.cuda.is_available()
print(f"{'sample':10} {'instr':>6} {'netstep':>7} {'ref instr/s':>11} {'neural/s':>9} {'torch/s':>8} "
      f"{'hf/s':>6} {'neural/hf':>9} {'neural/torch':>12} {'neural/ref':>10}" + ("  cuda/s" if cuda else ""))
for name in args.samples.split(","):
    grid, block, scalars, arrays = CASES[name]
    prog = compile_source((ROOT / "samples" / f"{name}.cu").read_text(), name)
    cm = link(prog)
    mk = lambda: make_launch(prog, prog.kernels[0], grid, block, scalars, {k: v.copy() for k, v in arrays.items()})
    t = time.perf_counter(); r = ref_run(mk()); t_ref = time.perf_counter() - t

    def timed(host, runs=1):
        """Steps/s of the fastest of `runs` whole launches (a short launch takes 0.1-0.5 s, so
        one run's figure swings with whatever else the machine does)."""
        best = None
        for _ in range(runs):
            t = time.perf_counter(); n = host.run(mk()); dt = time.perf_counter() - t
            assert np.array_equal(n.memory, r.memory), name
            best = dt if best is None else min(best, dt)
        return n.network_steps, n.network_steps / best

    steps, neural = timed(NeuralEngine("cpu").host(cm), runs=3)
    _, fast = timed(Host(cm, NeuralLayers(cm.layers, "cpu")))
    # As `qgrun --device cuda` runs a launch: the batched step at width 1 in a CUDA graph.
    gpu = timed(type("Cuda", (), {"run": lambda self, l: NeuralEngine("cuda").run(l, 10 ** 6)})(), runs=2)[1] \
        if cuda else None
    hf = HFEngine("cpu").host(cm)
    h, init = hf.initial(mk()); hf.net.reset(init)
    t = time.perf_counter()
    for _ in range(args.hf_steps):
        h = hf.net.step(h)
    hf_rate = args.hf_steps / (time.perf_counter() - t)
    ref_rate = r.stats.steps / t_ref
    print(f"{name:10} {r.stats.steps:6d} {steps:7d} {ref_rate:11.0f} {neural:9.0f} {fast:8.1f} {hf_rate:6.2f} "
          f"{neural / hf_rate:9.0f} {neural / fast:12.1f} {neural / ref_rate:10.3f}"
          + (f" {gpu:7.0f}" if cuda else ""))
