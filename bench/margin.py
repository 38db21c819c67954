"""Noise margin: the largest random relative weight perturbation the machine survives.

    python bench/margin.py [--sizes 1e-7,1e-6,1e-5,1e-4,1e-3] [--seeds 3] [--sample vadd|saxpy|ffma|...]
    python bench/margin.py --sample all --sizes 1e-3 --seeds 5    # every sample, and the least of them
    python bench/margin.py --sample ffma --probe 1e-3 --seeds 5     # where the margin goes
    python bench/margin.py --sample devfunc,divmod --short ...      # bench/bf16.py's short launches

Multiplies every weight of every compiled layer by (1 + size * N(0, 1)) (fresh noise per
seed), runs the sample's short launch (tests/lockstep.py, or tests/sample_cases.py at a
fixed seed; `ffma` is a one-line fmaf kernel defined here) on the torch path (the C step
refuses inexact inputs by design), and compares the trace and buffers with the emulator.
Prints, per size, how many seeds stayed exact, and the largest size at which all did.

--probe SIZE runs the exact and the perturbed layers side by side (the same launch, each on
its own residual) and, at every MLP of every step, measures for each unit how much of its
pre-activation's distance to 0 the noise consumed: (exact - noisy) / exact, 1 where the
unit crosses over (a firing pair's lower unit sits at K = 256, a silent pair's upper one
at -2K).  It splits the change into the row's own weight noise and the error its inputs
carry, and names the gate (link/netlist names), its step and weights: the decisions with
too little margin, worst first, up to the first step where one crosses.
"""
import argparse, sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from lockstep import CASES  # noqa: E402
from qgcc.engines.host import Host  # noqa: E402
from qgcc.engines.neural_torch import NeuralLayers  # noqa: E402
from qgcc.frontend import compile_source  # noqa: E402
from qgcc.link.linker import link  # noqa: E402
from qgcc.link.noise import perturbed  # noqa: E402
from qgcc.ref.emulator import run as ref_run  # noqa: E402
from qgcc.runtime.launch import make_launch  # noqa: E402
from qgcc.trace import Fault  # noqa: E402

FFMA = """
__global__ void ffma(const float *a, const float *b, const float *c, float *r, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) r[i] = fmaf(a[i], b[i], c[i]);
}
"""


def ffma_case(rng):
    """Eight fmaf triples over a wide exponent range (products and addends of any relative size)."""
    f = lambda n: (rng.standard_normal(n) * np.exp2(rng.integers(-10, 10, n))).astype(np.float32)  # noqa: E731
    return (2, 1, 1), (4, 1, 1), {"n": 8}, {"a": f(8), "b": f(8), "c": f(8), "r": np.zeros(8, np.float32)}


def program_and_case(sample: str, short: bool = False):
    if sample == "ffma":
        return compile_source(FFMA, "ffma.cu"), ffma_case(np.random.default_rng(1))
    prog = compile_source((ROOT / "samples" / f"{sample}.cu").read_text(), sample)
    if short:  # bench/bf16.py's launch: devfunc's and divmod's default ones are 20,000+ network steps
        sys.path.insert(0, str(ROOT / "bench"))
        from bf16 import SHORT
        return prog, SHORT[sample]
    if sample in CASES:
        return prog, CASES[sample]
    import sample_cases  # e.g. the float samples: tests/sample_cases.py's launch generator, at a fixed seed
    return prog, getattr(sample_cases, f"case_{sample}")(np.random.default_rng(1))


class Budget(Exception):
    pass


class Limited:
    """The torch path with a network-step budget: a perturbed machine that never halts is not exact."""

    def __init__(self, layers, limit: int):
        self.layers, self.limit, self.n = layers, limit, 0

    def reset(self, init):
        self.n = 0
        self.layers.reset(init)

    def recurrent_state(self, layer):
        return self.layers.recurrent_state(layer)

    def step(self, h):
        self.n += 1
        if self.n > self.limit:
            raise Budget
        return self.layers.step(h)


SAMPLES = sorted(p.stem for p in (ROOT / "samples").glob("*.cu")) + ["ffma"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1e-7,1e-6,1e-5,1e-4,1e-3")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--sample", default="vadd", help="a sample, a comma list, or `all` (every sample and ffma)")
    ap.add_argument("--probe", type=float, default=None, metavar="SIZE")
    ap.add_argument("--short", action="store_true", help="bench/bf16.py's short launches (not for ffma)")
    args = ap.parse_args()
    names = SAMPLES if args.sample == "all" else args.sample.split(",")
    unknown = [s for s in names if s not in SAMPLES]
    if unknown:
        sys.exit(f"bench/margin.py: --sample: no sample {', '.join(unknown)} (samples/*.cu, or ffma)")
    sizes = [float(x) for x in args.sizes.split(",")]
    best = {s: measure(s, sizes, args) for s in names}
    if len(names) > 1 and args.probe is None:
        worst = min(best.values())
        print(f"every one of the {len(names)} samples exact on every seed ({args.seeds} seeds) up to: {worst:.0e} "
              f"(the least: {', '.join(s for s, b in best.items() if b == worst)})")


def measure(sample: str, sizes: list[float], args) -> float:
    """The largest of `sizes` at which every seed's launch stays exact (0 if none)."""
    prog, (grid, block, scalars, arrays) = program_and_case(sample, args.short and sample != "ffma")
    cm = link(prog)
    mk = lambda: make_launch(prog, prog.kernels[0], grid, block, scalars,  # noqa: E731
                             {k: v.copy() for k, v in arrays.items()})
    ref_trace = []
    ref = ref_run(mk(), on_step=lambda r: ref_trace.append(r.key()))
    steps = 4 * len(ref_trace) + 200
    budget = 2 * Host(cm, Limited(NeuralLayers(cm.layers), 10 ** 9)).run(mk()).network_steps

    def exact_run(net, layers) -> bool:
        trace = []
        try:
            res = Host(net, Limited(layers, budget)).run(mk(), max_steps=steps, on_step=lambda r: trace.append(r.key()))
            return trace == ref_trace and np.array_equal(res.memory, ref.memory)
        except (Fault, Budget):
            return False

    print(f"{sample}: {cm.num_layers} layers, {len(ref_trace)} warp instructions, {budget // 2} network steps; "
          "every weight times (1 + size * N(0,1))", flush=True)
    if args.probe is not None:
        from margin_probe import Twin, report
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            twin = Twin(prog, cm, perturbed(cm, args.probe, seed))
            ok = exact_run(cm, twin)
            print(f"seed {seed}: {'exact' if ok else 'NOT exact'}", flush=True)
            report(twin)
        return 0.0
    best = 0.0
    for size in sizes:
        ok, marks = 0, ""
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            net = perturbed(cm, size, seed)
            good = exact_run(net, NeuralLayers(net.layers))
            ok += good
            marks += "+" if good else "x"
        last = args.first_seed + args.seeds - 1
        print(f"size {size:8.0e}: {ok}/{args.seeds} seeds exact ({marks}: seeds {args.first_seed}-{last})", flush=True)
        if ok == args.seeds and size > best:
            best = size
    print(f"{sample}: largest size exact on every seed ({args.seeds} seeds): {best:.0e}", flush=True)
    return best


if __name__ == "__main__":
    main()
