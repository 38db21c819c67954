"""Cost of float division and sqrtf: the float unit's routines (divsqrt.cu) and --soft-float's.

    python bench/divsqrt.py [--warps 16]

Per operand class, the warp instructions of one call on one lane (a kernel that only loads
and stores subtracted); the mean per call over --warps warps of 4 lanes of random operands
(tests/floatref.py pairs: specials, subnormals, near 1; divergent paths included); and the
routine's code size.  Results are checked against numpy float32.
"""
import argparse, sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
import floatref as R  # noqa: E402
from qgcc.frontend import compile_source  # noqa: E402
from qgcc.ref.emulator import run as ref_run  # noqa: E402
from qgcc.runtime.launch import make_launch  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--warps", type=int, default=16)
args = ap.parse_args()
OPS = {"copy": "x", "div": "x / y", "sqrt": "sqrtf(x)"}
CASES = {"normal": (0x40490FDB, 0x402DF854), "subnormal in": (0x00012345, 0x00654321),
         "subnormal out": (0x00800000, 0x40400000),
         "both": (0x00012345, 0x3F800000), "overflow": (0x7F000000, 0x3E800000),
         "zero/inf/nan": (0x7FC00000, 0x00000000), "sqrt: negative": (0xBF800000, 0)}


def program(op: str, soft: bool):
    src = ("__global__ void k(const float *a, const float *b, float *r) {\n"
           "    int i = blockIdx.x * blockDim.x + threadIdx.x; float x = a[i], y = b[i];\n"
           f"    r[i] = {OPS[op]};\n}}\n")
    return compile_source(src, f"{op}.cu", soft_float=soft)


def steps(prog, a, b, block):
    n = len(a)
    launch = make_launch(prog, prog.kernels[0], (n // block, 1, 1), (block, 1, 1), {},
                         {"a": R.f(np.asarray(a, np.uint32)), "b": R.f(np.asarray(b, np.uint32)),
                          "r": np.zeros(n, np.float32)})
    res = ref_run(launch, max_steps=10 ** 8)
    return res.stats.steps, launch.read_buffer(res.memory, "r").view(np.uint32)


rng = np.random.default_rng(7)
ra, rb = R.pairs(rng, 4 * args.warps)
print(f"{'routine':12} " + " ".join(f"{c:>14}" for c in CASES) + f" {'mean/warp':>9} {'code':>5}")
for soft in (True, False):
    base = program("copy", soft)
    for op in ("div", "sqrt"):
        prog = program(op, soft)
        cols = []
        for a, b in CASES.values():
            s1, r = steps(prog, [a], [b], 1)
            want = R.binary("/", np.array([a], np.uint32), np.array([b], np.uint32)) if op == "div" else \
                R.sqrt(np.array([a], np.uint32))
            assert r.tolist() == want.tolist(), (op, hex(a), hex(b))
            cols.append(s1 - steps(base, [a], [b], 1)[0])
        s1, r = steps(prog, ra, rb, 4)
        want = R.binary("/", ra, rb) if op == "div" else R.sqrt(ra)
        assert r.tolist() == want.tolist(), op
        mean = (s1 - steps(base, ra, rb, 4)[0]) / args.warps
        name = ("soft " if soft else "fpu ") + op
        print(f"{name:12} " + " ".join(f"{c:14d}" for c in cols) + f" {mean:9.1f} {len(prog.code) - len(base.code):5d}",
              flush=True)
