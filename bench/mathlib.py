"""The math library's measured errors and costs, per function.

    python bench/mathlib.py [--n 10000] [--warps 8] [--funcs expf,sinf]

For every function: the maximum error in ulps over --n inputs (specials,
subnormals, huge trig arguments, near-midpoint cases, random floats; the
library's host build against mpmath, or bit-exact against numpy for the exact
functions: "exact" means no mismatch), then, on the reference emulator, the
cost of one call in warp instructions: the mean over --warps warps of random
inputs from the function's main domain (4 lanes each, so divergent paths are
included), less a kernel that only loads and stores; with the kernel's total
instruction count (routine code included) and registers.
"""
import argparse, sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
import mathkernel as K  # noqa: E402
import mathref as M  # noqa: E402
from qgcc.frontend import compile_source  # noqa: E402
from qgcc.frontend.sema import MATH_FUNCS  # noqa: E402
from qgcc.ref.emulator import run as ref_run  # noqa: E402
from qgcc.runtime.launch import make_launch  # noqa: E402
from test_mathlib import HOST_NAMES, check_exact  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--n", type=int, default=10000)
ap.add_argument("--warps", type=int, default=8)
ap.add_argument("--funcs", default="")
args = ap.parse_args()
names = args.funcs.split(",") if args.funcs else [n for n in MATH_FUNCS if not (n.startswith("__") and n[2:] in MATH_FUNCS)]
rng = np.random.default_rng(2026)

base_src = K.source("copysignf").replace("copysignf(x[i], y[i])", "x[i]")
base = compile_source(base_src, "base.cu")
arrays = lambda x: {"x": x, "y": x[::-1].copy(), "n": rng.integers(-20, 20, len(x)).astype(np.int32),  # noqa: E731
                    "r": np.zeros(len(x), np.float32), "r2": np.zeros(len(x), np.float32),
                    "ir": np.zeros(len(x), np.int32)}


def steps(prog, x):
    launch = make_launch(prog, prog.kernels[0], (len(x) // 4, 1, 1), (4, 1, 1), {}, arrays(x))
    return ref_run(launch, max_steps=50_000_000).stats.steps


print(f"{'function':12} {'inputs':>7} {'max error':>10} {'warp instr':>10} {'code':>5} {'regs':>4}")
for name in names:
    hname = HOST_NAMES.get(name, name.removeprefix("__"))
    x, y, n_in = M.inputs("sinf" if hname == "sincosf" else hname, args.n, rng)
    r, r2, ir = M.host(hname, x, y, n_in)
    if hname == "sincosf":
        err = f"{max(M.ulp_errors('sinf', x, y, r).max(), M.ulp_errors('cosf', x, y, r2).max()):.3f} ulp"
    elif hname in M.APPROX1 + M.APPROX2:
        err = f"{M.ulp_errors(hname, x, y, r).max():.3f} ulp"
    else:
        try:
            check_exact(hname, x, y, n_in, r, ir)
            err = "exact"
        except AssertionError:
            err = "MISMATCH"
    lo, hi = M.DOMAIN.get(hname, (-100, 100))
    if hname in ("logf", "log2f", "log10f", "rsqrtf", "cbrtf"):
        lo, hi = 1e-3, 1e3
    xs = rng.uniform(lo, hi, 4 * args.warps).astype(np.float32)
    prog = compile_source(K.source(name), f"{name}.cu")
    cost = (steps(prog, xs) - steps(base, xs)) / args.warps
    print(f"{name:12} {len(x):7d} {err:>10} {cost:10.0f} {len(prog.code):5d} {prog.kernels[0].regs:4d}", flush=True)
