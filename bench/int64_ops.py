"""Cost of each 64-bit integer operation in warp instructions (docs/subset.md, "64-bit integers").

    python bench/int64_ops.py

For every operation a one-warp kernel applies it once per lane to random 64-bit operands (full
64-bit values, so division takes its 64-step path; `div32` uses values below 2^32) and the
emulator counts the warp instructions executed; a kernel that only loads and stores the same
values is subtracted.  Also printed: the kernel's code size (routine code included).
"""
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from qgcc.frontend import compile_source  # noqa: E402
from qgcc.ref.emulator import run as ref_run  # noqa: E402
from qgcc.runtime.launch import make_launch  # noqa: E402

OPS = {"copy": "x", "add": "x + y", "sub": "x - y", "mul": "x * y", "and": "x & y", "neg": "-x",
       "shl const": "x << 13", "shl var": "x << (int)y", "shr var": "u >> (int)y", "sar var": "x >> (int)y",
       "== / !=": "x == y", "< signed": "x < y", "< unsigned": "u < v", "min": "min(x, y)",
       "div signed": "x / y", "rem unsigned": "u % v", "div by 32-bit": "x / 1000",
       "div32": "(u >> 32) / (v >> 33)",
       "to float": "__float_as_int((float)x)", "from float": "(long long)__int_as_float((int)y)",
       "int -> ll": "(long long)(int)y", "ll -> int": "(int)x", "__popcll": "__popcll(x)",
       "__clzll": "__clzll(x)", "__ffsll": "__ffsll(x)", "__brevll": "__brevll(x)",
       "__umul64hi": "__umul64hi(u, v)", "__mul64hi": "__mul64hi(x, y)",
       "atomicAdd": "atomicAdd((unsigned long long *)0, 0ull)"}
SRC = ("__global__ void k(const long long *a, const long long *b, long long *r, unsigned long long *acc) {\n"
       "    int i = threadIdx.x; long long x = a[i], y = b[i];\n"
       "    unsigned long long u = (unsigned long long)x, v = (unsigned long long)y;\n"
       "    r[i] = (long long)(%s);\n}\n")
rng = np.random.default_rng(3)
a = rng.integers(-(1 << 63), 1 << 63, 4, dtype=np.int64)
b = rng.integers(-(1 << 63), 1 << 63, 4, dtype=np.int64) | 1
base = None
print(f"{'operation':14} {'warp instr':>10} {'code':>5}")
for name, expr in OPS.items():
    if name == "atomicAdd":
        src = SRC.replace("    r[i] = (long long)(%s);\n", "    atomicAdd(acc, u);\n    r[i] = x;\n")
    else:
        src = SRC % expr
    prog = compile_source(src, "k.cu")
    launch = make_launch(prog, prog.kernels[0], (1, 1, 1), (4, 1, 1), {},
                         {"a": a, "b": b, "r": np.zeros(4, np.int64), "acc": np.zeros(1, np.uint64)})
    steps = ref_run(launch).stats.steps
    if name == "copy":
        base = steps
        continue
    print(f"{name:14} {steps - base:10d} {len(prog.code):5d}")
