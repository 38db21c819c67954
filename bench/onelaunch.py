"""What one launch's step needs on a GPU, and how fast a design of few kernels could be.

    python bench/onelaunch.py [--sample vadd] [--boundary-us 2.5] [--bandwidth 4.3e12]
                              [--cstep-ref 1529]

Issue #26's first target is one launch on the GPU at twice the C step.  At width 1 the
bytes are small (a few MiB of weights a step if only what changes is read) and the time goes
into kernel boundaries: every kernel of a step waits for the one before (on the H200, in a
CUDA graph, about 2.5 us a kernel: `bench/results/gpu_run_h200_2026-12-04.log`).  So this
counts, from the sample's short launch run through the layers (the torch path, one launch,
every step), what a step touches:

  flipped columns  inputs of the +-1 projections (in_proj, gate | up) whose sign differs from
                   the reference input the C step precomputes (the `one` dimension +1, every
                   other -1), and the nonzero weights in those columns: what a step reads if it
                   adds only the changes, as neural_c.c does;
  active inputs    nonzero head outputs (out_proj's input) and nonzero MLP activations
                   (down_proj's input), and the nonzero weights in their columns;

and the kernel boundaries of three designs:

  unfused   the batched step as it runs today (about 4,400 kernels in the H200 profile);
  fused     engines/fused.py: 434 kernels a step (bench/fused_ops.py);
  phased    engines/phased.py: a kernel whose programs each take a head (its in_proj rows over
            the flipped columns, the delta rule, the gated norm) and one whose programs each take
            a block of MLP units (gate | up over the flipped columns, the activation); out_proj and
            down_proj (a few active inputs) are added by every program of the next kernel to its
            own copy of the residual instead of running as kernels of their own: 2 a mixer layer,
            1 an MLP-only layer, 3 a step (start, the last down_proj, finish), the fewest
            dependent kernels the layers allow.

For each: boundaries x --boundary-us, plus the bytes over --bandwidth, gives a floor and the
steps/s it allows, against the C step measured here on the same launch and against --cstep-ref
(the C step on the H200 machine's CPU, 1,529 steps/s there).  A floor, not a measurement.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
import lockstep  # noqa: E402
from qgcc.engines.host import Host  # noqa: E402
from qgcc.engines.neural_c import CStepLayers  # noqa: E402
from qgcc.engines.neural_torch import NeuralLayers  # noqa: E402
from qgcc.runtime.launch import make_launch  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--sample", default="vadd", choices=sorted(lockstep.CASES))
ap.add_argument("--boundary-us", type=float, default=2.5)
ap.add_argument("--bandwidth", type=float, default=4.3e12)
ap.add_argument("--cstep-ref", type=float, default=1529.0)
ap.add_argument("--unfused-kernels", type=int, default=4400)
ap.add_argument("--fused-kernels", type=int, default=434)
args = ap.parse_args()

prog, cm = lockstep.linked(args.sample)
grid, block, scalars, arrays = lockstep.CASES[args.sample]


def launch():
    return make_launch(prog, prog.kernels[0], grid, block, scalars, {k: v.copy() for k, v in arrays.items()},
                       network=cm)


class Counted:
    """A weight matrix that counts what each product with it touches, then multiplies."""

    def __init__(self, W: torch.Tensor, kind: str, tally: dict):
        self.W, self.kind, self.tally = W, kind, tally
        self.col_nnz = (W != 0).sum(0).numpy()

    def __matmul__(self, x):
        v = x.numpy()
        if self.kind == "pm1":  # +-1 input: columns whose sign differs from the reference input
            hot = v > 0
            self.tally["flipped"] += max(int(hot.sum()) - 1, 0)  # the `one` dimension is +1 in the reference too
        else:
            hot = v != 0
            self.tally["active"] += int(hot.sum())
        self.tally[f"{self.kind}_entries"] += int(self.col_nnz[hot].sum())
        return self.W @ x


tally = {"flipped": 0, "active": 0, "pm1_entries": 0, "act_entries": 0}
torch_layers = NeuralLayers(cm.layers, "cpu")
mixers = 0
for L in torch_layers.layers:
    if L.heads:
        mixers += 1
        L.Wqkv, L.Wz, L.Wb = (Counted(W, "pm1", tally) for W in (L.Wqkv, L.Wz, L.Wb))
        L.Wo = Counted(L.Wo, "act", tally)
    L.Wg, L.Wu = Counted(L.Wg, "pm1", tally), Counted(L.Wu, "pm1", tally)
    L.Wd = Counted(L.Wd, "act", tally)
result = Host(cm, torch_layers).run(launch(), max_steps=100000)
steps = result.network_steps
per = {k: v / steps for k, v in tally.items()}

c_host = Host(cm, CStepLayers(cm.layers, cm.fields["one"][0]))
best = 0.0
for _ in range(3):
    t0 = time.perf_counter()
    c_host.run(launch(), max_steps=100000)
    best = max(best, steps / (time.perf_counter() - t0))

nlayers = len(torch_layers.layers)
designs = {"unfused": args.unfused_kernels, "fused": args.fused_kernels,
           "phased": 3 + 2 * mixers + (nlayers - mixers)}
# Bytes a step reads in the phased design: flipped columns' entries once, active inputs'
# entries once per program of the kernel that adds them.
programs = max(max((len(L.heads) for L in torch_layers.layers), default=1), 1)
bytes_step = 8 * (per["pm1_entries"] + programs * per["act_entries"])
print(f"sample {args.sample}: {nlayers} layers ({mixers} with a mixer), {steps} network steps")
print(f"  per step: {per['flipped']:.0f} flipped columns of the +-1 projections ({per['pm1_entries']:,.0f} nonzero "
      f"weights in them), {per['active']:.1f} active inputs of out_proj/down_proj ({per['act_entries']:,.0f} "
      f"nonzero weights)")
print(f"  the phased design reads about {bytes_step / 2**10:,.0f} KiB a step (value + index; the active part "
      f"{programs}x, recomputed by every program of a kernel): {bytes_step / args.bandwidth * 1e6:.2f} us "
      f"at {args.bandwidth / 1e12:.1f} TB/s")
print(f"  C step here: {best:,.0f} steps/s (best of 3); on the H200 machine's CPU (--cstep-ref): "
      f"{args.cstep_ref:,.0f}")
print(f"\n{'design':>8} {'kernels/step':>13} {'floor':>10} {'steps/s':>9} {'x C step here':>14} "
      f"{'x --cstep-ref':>14}")
for name, k in designs.items():
    floor = k * args.boundary_us * 1e-6 + (bytes_step / args.bandwidth if name == "phased" else 0.0)
    print(f"{name:>8} {k:13,d} {floor * 1e6:7.0f} us {1 / floor:9,.0f} {1 / floor / best:13.2f}x "
          f"{1 / floor / args.cstep_ref:13.2f}x")
