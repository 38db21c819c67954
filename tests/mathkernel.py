"""One kernel per math function, run on the reference emulator (shared by tests and bench/mathlib.py)."""
from __future__ import annotations

import numpy as np

from qgcc.frontend import compile_source
from qgcc.frontend.sema import MATH_FUNCS
from qgcc.ref.emulator import run as ref_run
from qgcc.runtime.launch import make_launch

LANES = 4  # one warp per block


def source(name: str) -> str:
    """A kernel applying `name` once per thread: r[i] = f(x[i], y[i]) (or its int result / out-params)."""
    args, ret = MATH_FUNCS[name][1].split(":")
    actual = {"ff": "x[i], y[i]", "f": "x[i]", "fi": "x[i], n[i]", "fI": "x[i], &ir[i]",
              "fFF": "x[i], &r[i], &r2[i]"}[args]
    call = f"{name}({actual})"
    body = {"f": f"r[i] = {call};", "i": f"ir[i] = {call};", "v": f"{call};"}[ret]
    return ("__global__ void k(const float *x, const float *y, const int *n, float *r, float *r2, int *ir) {\n"
            "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
            f"    {body}\n}}\n")


def run(name: str, x, y=None, n_in=None, engine=None):
    """(r, r2, ir, program, result) for the inputs; `engine` None means the reference emulator."""
    x = np.asarray(x, np.float32)
    m = -(-len(x) // LANES) * LANES
    pad = lambda a, t: np.concatenate([np.asarray(a, t), np.zeros(m - len(a), t)])  # noqa: E731
    y = np.zeros(len(x), np.float32) if y is None else y
    n_in = np.zeros(len(x), np.int32) if n_in is None else n_in
    prog = compile_source(source(name), f"{name}.cu")
    arrays = {"x": pad(x, np.float32), "y": pad(y, np.float32), "n": pad(n_in, np.int32),
              "r": np.zeros(m, np.float32), "r2": np.zeros(m, np.float32), "ir": np.zeros(m, np.int32)}
    launch = make_launch(prog, prog.kernels[0], (m // LANES, 1, 1), (LANES, 1, 1), {}, arrays)
    res = ref_run(launch, max_steps=50_000_000) if engine is None else engine(prog, launch)
    mem = res.memory
    off = {p: launch.buffers[p].base for p in ("x", "y", "n", "r", "r2", "ir")}
    r = mem[off["r"]:off["r"] + m].astype(np.uint32).view(np.float32)[:len(x)]
    r2 = mem[off["r2"]:off["r2"] + m].astype(np.uint32).view(np.float32)[:len(x)]
    ir = mem[off["ir"]:off["ir"] + m].astype(np.uint32).view(np.int32)[:len(x)]
    return r, r2, ir, prog, res
