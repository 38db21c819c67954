"""Float operations inside the network on many operand pairs, against numpy references.

    python bench/float_neural.py [--ops add,f2i] [--pairs 2048] [--minutes 60]

For each operation, a kernel applies it once per thread (64 threads per block, 4 blocks
per launch: 256 pairs per launch) and runs on the neural engine; the buffer is compared
bit for bit with the IEEE reference in tests/floatref.py.  Prints, per operation, the
pairs checked, mismatches, network steps and time; stops an operation at --pairs and the
whole run at --minutes.  The expensive operations (fma: ~300 warp instructions; div, sqrt:
~60) get fewer pairs per minute than the one-instruction ones.
"""
import argparse, sys, time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
import floatref as R  # noqa: E402
from qgcc.frontend import compile_source  # noqa: E402
from qgcc.engines.neural import NeuralEngine  # noqa: E402
from qgcc.link.linker import link  # noqa: E402
from qgcc.runtime.launch import make_launch  # noqa: E402

OPS = {
    "add": ("x + y", lambda a, b, c: R.binary("+", a, b)),
    "sub": ("x - y", lambda a, b, c: R.binary("-", a, b)),
    "mul": ("x * y", lambda a, b, c: R.binary("*", a, b)),
    "div": ("x / y", lambda a, b, c: R.binary("/", a, b)),
    "sqrt": ("sqrtf(x)", lambda a, b, c: R.sqrt(a)),
    "fma": ("fmaf(x, y, z)", lambda a, b, c: R.fma(a, b, c)),
    "lt": ("__int_as_float(x < y)", lambda a, b, c: R.compare("<", a, b).view(np.uint32)),
    "le": ("__int_as_float(x <= y)", lambda a, b, c: R.compare("<=", a, b).view(np.uint32)),
    "eq": ("__int_as_float(x == y)", lambda a, b, c: R.compare("==", a, b).view(np.uint32)),
    "f2i": ("__int_as_float((int)x)", lambda a, b, c: R.to_int(a).view(np.uint32)),
    "f2u": ("__uint_as_float((unsigned)x)", lambda a, b, c: R.to_uint(a)),
    "i2f": ("(float)__float_as_int(x)", lambda a, b, c: R.from_int(a.view(np.int32))),
    "u2f": ("(float)__float_as_uint(x)", lambda a, b, c: R.from_uint(a)),
    "min": ("fminf(x, y)", lambda a, b, c: R.minmax("min", a, b)),
    "max": ("fmaxf(x, y)", lambda a, b, c: R.minmax("max", a, b)),
}
ap = argparse.ArgumentParser()
ap.add_argument("--ops", default=",".join(OPS))
ap.add_argument("--pairs", type=int, default=2048)
ap.add_argument("--minutes", type=float, default=60)
ap.add_argument("--seed", type=int, default=0)
args = ap.parse_args()
deadline = time.time() + 60 * args.minutes
rng = np.random.default_rng(args.seed)
print(f"{'op':5} {'pairs':>6} {'bad':>4} {'netsteps':>9} {'seconds':>8}", flush=True)
for name in args.ops.split(","):
    expr, ref = OPS[name]
    src = ("__global__ void k(const float *a, const float *b, const float *c, float *r) {\n"
           "    int i = blockIdx.x * blockDim.x + threadIdx.x; float x = a[i], y = b[i], z = c[i];\n"
           f"    r[i] = {expr};\n}}\n")
    prog = compile_source(src, f"{name}.cu")
    host = NeuralEngine().host(link(prog))
    done = bad = steps = 0
    t0 = time.time()
    with np.errstate(all="ignore"):
        while done < args.pairs and time.time() < deadline:
            n = 256
            a, b = R.pairs(rng, n)
            c = R.operands(rng, n)
            launch = make_launch(prog, prog.kernels[0], (4, 1, 1), (64, 1, 1), {},
                                 {"a": R.f(a), "b": R.f(b), "c": R.f(c), "r": np.zeros(n, np.float32)})
            res = host.run(launch, max_steps=10 ** 7)
            got = launch.read_buffer(res.memory, "r").view(np.uint32)
            want = ref(a, b, c)
            bad += int(np.count_nonzero(got != want))
            done += n
            steps += res.network_steps
    print(f"{name:5} {done:6d} {bad:4d} {steps:9d} {time.time() - t0:8.0f}", flush=True)
