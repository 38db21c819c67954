"""Cost of each float operation: warp instructions, network steps and wall time, neural vs ref.

    python bench/float_ops.py [--ops add,mul] [--lanes 4]

For every operation a one-warp kernel applies it once per lane to IEEE-special and
random operands.  Printed per operation: the kernel's instructions (routine code
included), warp instructions executed for that one operation (a kernel that only
loads and stores is subtracted), network steps, wall seconds on each engine, and
neural/ref time.  Results are checked equal between the engines.
"""
import argparse, sys, time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
import floatref as R  # noqa: E402
from qgcc.frontend import compile_source  # noqa: E402
from qgcc.engines.neural import NeuralEngine  # noqa: E402
from qgcc.link.linker import link  # noqa: E402
from qgcc.ref.emulator import run as ref_run  # noqa: E402
from qgcc.runtime.launch import make_launch  # noqa: E402

OPS = {"copy": "x", "add": "x + y", "sub": "x - y", "mul": "x * y", "div": "x / y", "sqrt": "sqrtf(x)",
       "fma": "fmaf(x, y, z)", "lt": "(float)(x < y)", "f2i": "(float)(int)x", "i2f": "(float)__float_as_int(x)",
       "min": "fminf(x, y)"}
ap = argparse.ArgumentParser()
ap.add_argument("--ops", default=",".join(OPS))
ap.add_argument("--lanes", type=int, default=4)
args = ap.parse_args()
devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
rng = np.random.default_rng(3)
n = args.lanes
a, b = R.pairs(rng, n)
c = R.operands(rng, n)
print(f"{'op':6} {'code':>5} {'instr':>6} {'op instr':>8} {'netsteps':>8} {'ref s':>7} " +
      " ".join(f"{'neural-' + d + ' s':>14}" for d in devices) + f" {'neural/ref':>10}")
base_instr = None
for name in (["copy"] if "copy" not in args.ops.split(",") else []) + args.ops.split(","):
    src = ("__global__ void k(const float *a, const float *b, const float *c, float *r) {\n"
           "    int i = threadIdx.x; float x = a[i], y = b[i], z = c[i];\n"
           f"    r[i] = {OPS[name]};\n}}\n")
    prog = compile_source(src, f"{name}.cu")
    cm = link(prog)
    mk = lambda: make_launch(prog, prog.kernels[0], (1, 1, 1), (n, 1, 1), {},  # noqa: E731
                             {"a": R.f(a), "b": R.f(b), "c": R.f(c), "r": np.zeros(n, np.float32)})
    t = time.perf_counter(); r = ref_run(mk()); t_ref = time.perf_counter() - t
    times = []
    for d in devices:
        t = time.perf_counter(); res = NeuralEngine(d).host(cm).run(mk()); times.append(time.perf_counter() - t)
        assert np.array_equal(res.memory, r.memory), name
    if name == "copy":
        base_instr = r.stats.steps
    print(f"{name:6} {len(prog.code):5d} {r.stats.steps:6d} {r.stats.steps - base_instr:8d} "
          f"{res.network_steps:8d} {t_ref:7.3f} " + " ".join(f"{x:14.2f}" for x in times)
          + f" {times[0] / t_ref:10.0f}")
