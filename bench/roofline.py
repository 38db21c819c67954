"""What one network step needs, counted from a linked network, against a device's limits.

    python bench/roofline.py [--sample vadd] [--bandwidth 4.3e12] [--bf16 790e12] [--fp32 50e12]
                             [--widths 1,64,1024,4096] [--lanes-per-step 2.1]

Counts (per step of one launch, "slot-step"):
  nonzero weights     the entries a sparse step must read (value + index) and multiply
  dense elements      the compacted blocks the batched step multiplies (engines/neural_batch.py):
                      bfloat16 parts of the +-1 projections, float32 down_proj/out_proj
  state rows          one-hot rows the delta rule reads and rewrites and the query reads:
                      3 rows per used head, 16 bytes each as rail bits (512 as float32)
  activations         the projections' outputs written and read once, the hidden row read and
                      written once per sublayer (what an unfused step must move)
and the floors they set on a device with the given copy bandwidth and product rates: bytes
over bandwidth, operations over rate, the larger one per width (weights are read once per
step for the whole batch).  The defaults are the H200 limits of docs/engines.md (4.3 TB/s
measured copy, about 790 TFLOP/s bf16 dense; float32 without TF32 at about 50).  Lane-
instructions per slot-step converts slot-steps into the issue's unit (vadd's short launch:
about 2.1).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
import lockstep  # noqa: E402
from qgcc.engines.neural_batch import HD, row_layers  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--sample", default="vadd")
ap.add_argument("--bandwidth", type=float, default=4.3e12)
ap.add_argument("--bf16", type=float, default=790e12)
ap.add_argument("--fp32", type=float, default=50e12)
ap.add_argument("--widths", default="1,64,1024,4096")
ap.add_argument("--lanes-per-step", type=float, default=2.1)
args = ap.parse_args()

prog, cm = lockstep.linked(args.sample)
nnz = 0
for lw in cm.layers:
    for name, st in lw.tensors.items():
        if name.endswith("proj.weight") or name.endswith("in_proj_qkv.weight"):
            nnz += int((st.arrays()[1] != 0).sum())
layers = row_layers(cm, "cpu", True)
bf16 = sum(p.elements for R in layers for p in R.projections() if p.lowp)
fp32 = sum(p.elements for R in layers for p in R.projections() if not p.lowp) + \
    sum(R.L.Wd.numel() + (R.L.Wo.numel() if R.nh else 0) for R in layers)
heads = sum(R.nh for R in layers)
sublayers = sum(2 if R.nh else 1 for R in layers)
outs = sum((5 * R.span + R.nh if R.nh else 0) + 2 * R.units for R in layers)
hidden = 2048 * 4
rows = 3 * heads * HD // 8  # rail bits (neural_batch.Rails)
acts = 2 * 4 * outs + 2 * hidden * sublayers
weights_dense = 2 * bf16 + 4 * fp32
weights_sparse = 8 * nnz
print(f"sample {args.sample}: {cm.num_layers} layers, {heads} state heads in use "
      f"({heads * HD * HD / 8 / 2**20:.2f} MiB of recurrent state per launch as rail bits, "
      f"{heads * HD * HD * 4 / 2**20:.1f} MiB as float32)")
print(f"  nonzero weights      {nnz / 1e6:8.2f} M  ({weights_sparse / 2**20:.1f} MiB as value + index; "
      f"{2 * nnz / 1e6:.1f} MFLOP per slot-step)")
print(f"  dense elements       {bf16 / 1e6:8.2f} M bf16 parts + {fp32 / 1e6:.2f} M fp32 "
      f"({weights_dense / 2**20:.0f} MiB read per step; {2 * bf16 / 1e6:.0f} + {2 * fp32 / 1e6:.0f} MFLOP "
      "per slot-step)")
print(f"  state rows           {rows / 2**10:8.1f} KiB per slot-step (3 rows of 16 B per head)")
print(f"  activations          {acts / 2**20:8.2f} MiB per slot-step (projection outputs and hidden rows, "
      "written and read once)")
print(f"\n{'width':>6} {'bytes/slot-step':>16} {'memory floor':>13} {'bf16 floor':>11} {'fp32 floor':>11} "
      f"{'slot-steps/s':>13} {'lane-instr/s':>13}")
for w in [int(x) for x in args.widths.split(",")]:
    per = rows + acts + weights_dense / w
    t_mem = per / args.bandwidth
    t_bf, t_f32 = 2 * bf16 / args.bf16, 2 * fp32 / args.fp32
    floor = max(t_mem, t_bf + t_f32)
    print(f"{w:6d} {per / 2**20:13.2f} MiB {t_mem * 1e6:10.2f} us {t_bf * 1e6:8.2f} us {t_f32 * 1e6:8.2f} us "
          f"{1 / floor:13,.0f} {args.lanes_per_step / floor:13,.0f}")
print(f"\none launch, sparse (nonzeros only, fused): {weights_sparse / args.bandwidth * 1e6:.1f} us of weights "
      f"per step -> at most {args.bandwidth / weights_sparse:,.0f} steps/s")
