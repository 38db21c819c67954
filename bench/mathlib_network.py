"""Every math-library function inside the network, on many inputs each.

    python bench/mathlib_network.py [--inputs 256] [--funcs expf,sinf] [--seed 31]

For each function: --inputs arguments drawn from the library tests' generator (specials,
subnormals, huge trig arguments, near-midpoint cases, random floats), one thread each,
in blocks of one warp.  The launch runs on the reference emulator and through the
compiled layers (`--engine neural`); the traces must agree record by record, the memories
bit for bit, and the results must equal the library's host build (gcc, the reference
the ulp bounds are measured on).  Prints per function: inputs, warp instructions,
network steps, seconds, and whether everything agreed.  Exits 1 on any difference.
"""
import argparse, sys, time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
import mathkernel as K  # noqa: E402
import mathref as M  # noqa: E402
from lockstep import both  # noqa: E402
from qgcc.frontend.sema import MATH_FUNCS  # noqa: E402
from test_mathlib import _canon, host_of  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--inputs", type=int, default=256)
ap.add_argument("--funcs", default="")
ap.add_argument("--seed", type=int, default=31)
args = ap.parse_args()
names = args.funcs.split(",") if args.funcs else sorted(
    n for n in MATH_FUNCS if not (n.startswith("__") and n[2:] in MATH_FUNCS))
bad = 0
total_steps = 0
print(f"{'function':12} {'inputs':>6} {'warp instr':>10} {'steps':>8} {'seconds':>8}  exact")
for name in names:
    x, y, n_in = M.inputs(host_of(name), args.inputs, np.random.default_rng(args.seed))
    # The generator returns its specials (for two-argument functions, every pair of them)
    # plus --inputs random ones; run --inputs of them, drawn from all.
    pick = np.sort(np.random.default_rng(args.seed + 1).choice(len(x), min(len(x), args.inputs), replace=False))
    m = len(pick) // K.LANES * K.LANES
    pick = pick[:m]
    x, y, n_in = (np.asarray(x, np.float32)[pick], np.asarray(y, np.float32)[pick],
                  np.asarray(n_in, np.int32)[pick])
    z = np.zeros(m, np.float32)
    t = time.time()
    try:
        outs, res = both(f"math_{name}", (m // K.LANES, 1, 1), (K.LANES, 1, 1), {},
                         {"x": x, "y": y, "n": n_in, "r": z, "r2": z, "ir": np.zeros(m, np.int32)},
                         source=K.source(name), max_steps=50_000_000)
        hr, hr2, hir = M.host(host_of(name), x, y, n_in)
        ok = (np.array_equal(_canon(outs["r"]), _canon(hr)) and np.array_equal(_canon(outs["r2"]), _canon(hr2))
              and np.array_equal(outs["ir"], hir))
        steps, instr = res.network_steps, res.stats.warp_instructions
    except AssertionError as e:
        ok, steps, instr = False, 0, 0
        print(f"  {name}: {str(e)[:200]}")
    bad += not ok
    total_steps += steps
    print(f"{name:12} {m:6d} {instr:10d} {steps:8d} {time.time() - t:8.1f}  {'yes' if ok else 'NO'}", flush=True)
print(f"{len(names)} functions, {total_steps} network steps, {bad} with a difference")
sys.exit(1 if bad else 0)
