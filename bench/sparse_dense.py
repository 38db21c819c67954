"""The batched step's products, dense (as it runs them) against sparse (nonzeros only), per step.

    python bench/sparse_dense.py [--sample vadd] [--device cuda] [--widths 1,64,1024,8192]
                                 [--layers N] [--repeat 5]

Issue #26, item 2: "prefer what moves fewest bytes: sparse or blocked weights if they beat dense
tensor cores at the batch sizes that matter; measure both".  For every layer of the sample's
network (or its first --layers), the products one step of a batch of W launches computes:

  dense   what engines/neural_batch.py runs: the +-1 projections (the mixer's in_proj rows and
          gate | up) as engines/lowp.py's ExactProjection (bfloat16 parts with float32
          accumulation on CUDA; their float32 copies on the CPU), down_proj and out_proj as
          float32 products of the compacted blocks;
  sparse  the same float32 matrices in CSR (torch.sparse, cuSPARSE on CUDA), nonzeros only.

Inputs are what the step feeds them in kind: exactly +-1 for the +-1 projections (random signs),
and for down_proj / out_proj random rows of the same shape (their time does not depend on the
values).  Every +-1 projection's dense and sparse outputs are compared bit for bit with the exact
product (float64, whose sums of these integers are exact): by the exactness argument all three
must agree, so a sparse kernel may replace a dense one only where this says True.  Prints, per
width, the summed time of a step's products (best of --repeat), the bytes of weights each form
reads, and the ratio.  Exits 1 if any output differs.
"""
from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
import lockstep  # noqa: E402
from qgcc.engines.neural_batch import _RowLayer, exact_cuda_products  # noqa: E402
from qgcc.engines.neural_torch import FastLayer  # noqa: E402


def sync(dev: torch.device) -> None:
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


def best_of(fn, repeat: int, dev: torch.device) -> float:
    fn()  # warm-up (cuBLAS / cuSPARSE handles, workspaces)
    best = float("inf")
    for _ in range(repeat):
        sync(dev)
        t = time.perf_counter()
        fn()
        sync(dev)
        best = min(best, time.perf_counter() - t)
    return best


class Products:
    """One layer's products in both forms."""

    def __init__(self, lw, index: int, dev: torch.device):
        R = _RowLayer(lw, dev, True, index)  # the device's form: bfloat16 parts where exact
        F = FastLayer(lw, dev)  # the float32 compacted blocks (the row layer keeps only its parts)
        self.pm = [R.gu] + ([R.mix] if R.nh else [])  # +-1 input
        self.pm_f32 = [torch.cat([F.Wg, F.Wu])] + ([torch.cat([F.Wqkv, F.Wz, F.Wb])] if R.nh else [])
        self.fp = [R.L.Wd] + ([R.L.Wo] if R.nh else [])  # inputs not +-1: float32 dense
        self.sp_pm = [W.to_sparse_csr() for W in self.pm_f32]
        self.sp_fp = [W.to_sparse_csr() for W in self.fp]

    def dense_bytes(self) -> int:
        return sum(p.nbytes for p in self.pm) + sum(W.numel() * 4 for W in self.fp)

    def sparse_bytes(self) -> int:  # value + column index (int64 as torch stores them) + row pointers
        return sum(S.values().numel() * 4 + S.col_indices().numel() * 8 + S.crow_indices().numel() * 8
                   for S in self.sp_pm + self.sp_fp)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sample", default="vadd", help="a sample, or mixed (tests/lockstep.py's program of three kernels)")
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--widths", default="1,64,1024,8192")
    ap.add_argument("--layers", type=int, default=0, help="only the first N layers (0: all)")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        print("bench/sparse_dense.py: no CUDA device here (--device cpu runs the same comparison on the CPU)")
        return 2
    dev = torch.device(args.device)
    if dev.type == "cuda":
        exact_cuda_products()
    else:
        torch.set_num_threads(1)  # as the batched step on the CPU
    warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
    _, cm = lockstep.linked("mixed", lockstep.MIXED_KERNELS) if args.sample == "mixed" else lockstep.linked(args.sample)
    lws = cm.layers[:args.layers] if args.layers else cm.layers
    layers = [Products(lw, i, dev) for i, lw in enumerate(lws)]
    dense_b = sum(L.dense_bytes() for L in layers)
    sparse_b = sum(L.sparse_bytes() for L in layers)
    nnz = sum(S.values().numel() for L in layers for S in L.sp_pm + L.sp_fp)
    print(f"device {torch.cuda.get_device_name(dev) if dev.type == 'cuda' else 'cpu'}, torch {torch.__version__}; "
          f"{args.sample}, {len(layers)} layers: dense reads {dense_b / 2**20:.0f} MiB of weights a step "
          f"(bfloat16 parts{' as float32 copies' if dev.type == 'cpu' else ''} + float32), "
          f"sparse {sparse_b / 2**20:.1f} MiB ({nnz / 1e6:.2f} M nonzeros, CSR float32)")
    print(f"{'width':>6} {'dense ms/step':>14} {'sparse ms/step':>15} {'sparse/dense':>13}  exact")
    rng = np.random.default_rng(0)
    bad = 0
    for width in [int(w) for w in args.widths.split(",")]:
        xs_pm = [[torch.from_numpy(np.where(rng.random((width, W.shape[1])) < 0.5, -1.0, 1.0).astype(np.float32))
                  .to(dev) for W in L.pm_f32] for L in layers]
        xs_fp = [[torch.from_numpy(rng.integers(-4, 5, (width, W.shape[1])).astype(np.float32) * 256).to(dev)
                  for W in L.fp] for L in layers]

        def dense():  # outputs dropped as they come, as in a step (all of them at 8,192: ~32 GB)
            for L, xp, xf in zip(layers, xs_pm, xs_fp):
                for p, x in zip(L.pm, xp):
                    p(x)
                for W, x in zip(L.fp, xf):
                    x @ W.T

        def sparse():
            for L, xp, xf in zip(layers, xs_pm, xs_fp):
                for S, x in zip(L.sp_pm + L.sp_fp, xp + xf):
                    torch.sparse.mm(S, x.T)

        same = True
        for L, xp in zip(layers, xs_pm):
            for p, S, W, x in zip(L.pm, L.sp_pm, L.pm_f32, xp):
                want = (x.double() @ W.double().T).float()
                same &= bool(torch.equal(p(x), want)) and bool(torch.equal(torch.sparse.mm(S, x.T).T, want))
        bad += not same
        t_d, t_s = best_of(dense, args.repeat, dev), best_of(sparse, args.repeat, dev)
        print(f"{width:6d} {t_d * 1e3:14.3f} {t_s * 1e3:15.3f} {t_s / t_d:12.2f}x  {same}", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
