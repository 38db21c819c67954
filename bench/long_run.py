"""Exactness over a long launch: at least 100,000 warp instructions inside the network.

    python bench/long_run.py [--iters 20000]

Runs a loop kernel on the neural engine and the reference emulator, compares every trace
record as it streams and the final buffers, and prints steps, wall time and steps/s.
"""
import argparse, sys, time

import numpy as np

from qgcc.frontend import compile_source
from qgcc.engines.neural import NeuralEngine
from qgcc.link.linker import link
from qgcc.ref.emulator import run as ref_run
from qgcc.runtime.launch import make_launch

SRC = r"""
__global__ void mix(unsigned *out, int iters) {
    unsigned h = 2166136261u + threadIdx.x;
    for (int i = 0; i < iters; i++) {
        h = (h ^ (unsigned)i) + (h << 5) + (h >> 2);
    }
    out[threadIdx.x] = h;
}
"""
ap = argparse.ArgumentParser()
ap.add_argument("--iters", type=int, default=11500)
args = ap.parse_args()
prog = compile_source(SRC, "mix.cu")
k = prog.kernels[0]
mk = lambda: make_launch(prog, k, (1, 1, 1), (4, 1, 1), {"iters": args.iters}, {"out": np.zeros(4, np.uint32)})
ref_trace = []
t = time.perf_counter()
r = ref_run(mk(), max_steps=10_000_000, on_step=lambda rec: ref_trace.append(rec.key()))
t_ref = time.perf_counter() - t
mismatch = [0]
it = iter(ref_trace)
def check(rec):
    if rec.key() != next(it):
        mismatch[0] += 1
cm = link(prog)
t = time.perf_counter()
n = NeuralEngine().host(cm).run(mk(), max_steps=10_000_000, on_step=check)
t_n = time.perf_counter() - t
same = np.array_equal(r.memory, n.memory)
print(f"warp instructions {r.stats.steps}, network steps {n.network_steps}, "
      f"trace mismatches {mismatch[0]}, buffers equal {same}")
print(f"ref {t_ref:.1f} s ({r.stats.steps / t_ref:.0f} instr/s); neural {t_n:.1f} s "
      f"({n.network_steps / t_n:.1f} steps/s, {r.stats.steps / t_n:.1f} instr/s)")
sys.exit(0 if same and mismatch[0] == 0 else 1)
