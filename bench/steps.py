"""Steps per second of the ref, neural and hf engines on the samples (CPU; CUDA when present).

    python bench/steps.py [--hf-steps 20] [--samples vadd,reduce]

Prints, per sample: warp instructions, network steps, steps/s for each engine and the
ratio neural/ref.  The hf engine (transformers' own layers) is timed on its first
--hf-steps network steps only: it is about 0.5 s per step on a CPU.
"""
import argparse, sys, time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from test_neural import CASES  # noqa: E402  (small launches of every sample)
from qgcc.frontend import compile_source  # noqa: E402
from qgcc.engines.hf import HFEngine  # noqa: E402
from qgcc.engines.neural import NeuralEngine  # noqa: E402
from qgcc.link.linker import link  # noqa: E402
from qgcc.ref.emulator import run as ref_run  # noqa: E402
from qgcc.runtime.launch import make_launch  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--hf-steps", type=int, default=20)
ap.add_argument("--samples", default=",".join(sorted(CASES)))
args = ap.parse_args()
devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
print(f"{'sample':10} {'instr':>6} {'netstep':>7} {'ref/s':>9} " +
      " ".join(f"{'neural-' + d + '/s':>15}" for d in devices) + f" {'hf-cpu/s':>9} {'neural/ref':>10}")
for name in args.samples.split(","):
    grid, block, scalars, arrays = CASES[name]
    prog = compile_source((ROOT / "samples" / f"{name}.cu").read_text(), name)
    cm = link(prog)
    mk = lambda: make_launch(prog, prog.kernels[0], grid, block, scalars, {k: v.copy() for k, v in arrays.items()})
    t = time.perf_counter(); r = ref_run(mk()); t_ref = time.perf_counter() - t
    rates = []
    for d in devices:
        host = NeuralEngine(d).host(cm)
        t = time.perf_counter(); n = host.run(mk()); t_n = time.perf_counter() - t
        assert np.array_equal(n.memory, r.memory)
        rates.append(n.network_steps / t_n)
    hf = HFEngine("cpu").host(cm)
    h, init = hf.initial(mk()); hf.net.reset(init)
    t = time.perf_counter()
    for _ in range(args.hf_steps):
        h = hf.net.step(h)
    hf_rate = args.hf_steps / (time.perf_counter() - t)
    ref_rate = r.stats.steps / t_ref
    print(f"{name:10} {r.stats.steps:6d} {n.network_steps:7d} {ref_rate:9.0f} " +
          " ".join(f"{x:15.1f}" for x in rates) + f" {hf_rate:9.2f} {rates[0] / ref_rate:10.4f}")
