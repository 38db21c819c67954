"""The machine in bfloat16: each sample's launch through transformers' own modules in bf16.

    python bench/bf16.py [--samples vadd,collatz,...] [--device cpu|cuda]

Runs every sample's short launch (tests/lockstep.py CASES) with `--engine hf --dtype bf16`
(weights and activations in bfloat16, the stock Qwen3_5DecoderLayer) and compares the
trace record by record and the final memory bit for bit with the reference emulator.
Prints, per sample, whether it is exact, its warp instructions and network steps, and the
time.  On a CPU a bf16 step costs seconds (transformers' reference conv and delta-rule
paths in bf16), so the whole set takes long; CI runs a short kernel (tests/test_numerics.py).
"""
import argparse, sys, time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from lockstep import CASES, linked  # noqa: E402
from qgcc import engines  # noqa: E402
from qgcc.ref.emulator import run as ref_run  # noqa: E402
from qgcc.runtime.launch import make_launch  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--samples", default=",".join(CASES))
ap.add_argument("--device", default="cpu")
args = ap.parse_args()
exact_all = True
for name in args.samples.split(","):
    grid, block, scalars, arrays = CASES[name]
    prog, cm = linked(name)
    mk = lambda: make_launch(prog, prog.kernels[0], grid, block, scalars, {k: v.copy() for k, v in arrays.items()})
    ref_trace, net_trace = [], []
    ref = ref_run(mk(), on_step=lambda r: ref_trace.append(r.key()))
    t0 = time.time()
    host = engines.get("hf").create(args.device, "bf16").host(cm)
    t1 = time.time()
    res = host.run(mk(), max_steps=20000, on_step=lambda r: net_trace.append(r.key()))
    t2 = time.time()
    exact = net_trace == ref_trace and np.array_equal(res.memory, ref.memory)
    exact_all &= exact
    print(f"{name:10s} {'exact' if exact else 'DIFFERS'}: {len(ref_trace)} warp instructions, "
          f"{res.network_steps} network steps, "
          f"load {t1 - t0:.0f} s, run {t2 - t1:.0f} s", flush=True)
print("every sample exact in bf16" if exact_all else "some sample differs in bf16")
sys.exit(0 if exact_all else 1)
