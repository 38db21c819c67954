"""Cost of each double operation in warp instructions (docs/subset.md, "double").

    python bench/double_ops.py

For every operation a one-warp kernel applies it once per lane to random doubles (normal values
of mixed signs and magnitudes) and the emulator counts the warp instructions executed; a kernel
that only loads and stores the same values is subtracted.  Also printed: the kernel's code size
(routine code included; the machine holds SPEC.max_instrs instructions).
"""
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from qgcc.frontend import compile_source  # noqa: E402
from qgcc.ref.emulator import run as ref_run  # noqa: E402
from qgcc.runtime.launch import make_launch  # noqa: E402

OPS = {"copy": "x", "add": "x + y", "sub": "x - y", "mul": "x * y", "div": "x / y", "sqrt": "sqrt(y)",
       "neg": "-x", "fabs": "fabs(x)", "<": "x < y ? x : y", "==": "x == y ? x : y",
       "fmin": "fmin(x, y)", "floor": "floor(x)", "ceil": "ceil(x)", "trunc": "trunc(x)", "round": "round(x)",
       "float -> double": "(double)f", "double -> float": "(double)(float)x", "int -> double": "(double)n",
       "double -> int": "__longlong_as_double((int)x)", "long long -> double": "(double)((long long)n * 3)",
       "double -> long long": "__longlong_as_double((long long)x)", "x * 0.3 (float x)": "f * 0.3",
       "++": "x + 1", "exp": "exp(x * 1e-10)", "sin": "sin((double)f * 3.0)", "cos": "cos((double)f * 3.0)",
       "tan": "tan((double)f * 3.0)"}
SRC = ("__global__ void k(const double *a, const double *b, double *r) {\n"
       "    int i = threadIdx.x; double x = a[i], y = b[i];\n"
       "    float f = (float)i * 0.75f - 1.0f; int n = i * 1000003 - 7;\n"
       "    r[i] = %s;\n}\n")
rng = np.random.default_rng(3)
a = rng.standard_normal(4) * np.exp2(rng.integers(-30, 30, 4))
b = np.abs(rng.standard_normal(4)) * np.exp2(rng.integers(-30, 30, 4))
base = None
print(f"{'operation':20} {'warp instr':>10} {'code':>5}")
for name, expr in OPS.items():
    prog = compile_source(SRC % expr, "k.cu")
    launch = make_launch(prog, prog.kernels[0], (1, 1, 1), (4, 1, 1), {},
                         {"a": a, "b": b, "r": np.zeros(4, np.float64)})
    steps = ref_run(launch).stats.steps
    if name == "copy":
        base = steps
        continue
    print(f"{name:20} {steps - base:10d} {len(prog.code):5d}")
