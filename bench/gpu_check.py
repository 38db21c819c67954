"""Every sample on the CPU (the compiled C step) and on CUDA (the torch path), step by step.

    python bench/gpu_check.py [--samples vadd,reduce]

For each sample's short launch: runs both networks in lockstep, compares every step's
hidden state and, at the end, every recurrent state as bits, and prints steps/s on each
device.  Exits 1 on any difference.  Needs a CUDA device (TF32 is switched off); batched
launches on the GPU (a batch dimension through the products) are not implemented yet.
"""
import argparse, sys, time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from lockstep import CASES  # noqa: E402
from qgcc.frontend import compile_source  # noqa: E402
from qgcc.engines.neural_torch import NeuralLayers  # noqa: E402
from qgcc.link.linker import link  # noqa: E402
from qgcc.engines.neural import NeuralEngine  # noqa: E402
from qgcc.runtime.launch import make_launch  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--samples", default=",".join(sorted(CASES)))
args = ap.parse_args()
if not torch.cuda.is_available():
    sys.exit("bench/gpu_check.py: no CUDA device here")
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
bad = 0
for name in args.samples.split(","):
    grid, block, scalars, arrays = CASES[name]
    prog = compile_source((ROOT / "samples" / f"{name}.cu").read_text(), name)
    cm = link(prog)
    launch = make_launch(prog, prog.kernels[0], grid, block, scalars, {k: v.copy() for k, v in arrays.items()})
    cpu = NeuralEngine("cpu").host(cm)
    gpu = NeuralLayers(cm.layers, "cuda")
    h, init = cpu.initial(launch)
    cpu.net.reset(init)
    gpu.reset(init)
    hc = hg = h
    steps, t_c, t_g = 0, 0.0, 0.0
    while cpu.get(hc, "phase") != 8 and cpu.get(hc, "fault") == 0:
        t = time.perf_counter(); hc = cpu.net.step(hc); t_c += time.perf_counter() - t
        t = time.perf_counter(); hg = gpu.step(hg); t_g += time.perf_counter() - t
        steps += 1
        if not np.array_equal(hc.view(np.uint32), hg.view(np.uint32)):
            print(f"{name}: hidden state differs at step {steps}")
            bad += 1
            break
    same = all(np.array_equal(cpu.net.recurrent_state(L).view(np.uint32), gpu.recurrent_state(L).view(np.uint32))
               for L in range(cm.num_layers))
    bad += not same
    print(f"{name:10} {steps:6d} steps  cpu {steps / t_c:8.0f}/s  cuda {steps / t_g:8.0f}/s  states equal: {same}")
sys.exit(1 if bad else 0)
