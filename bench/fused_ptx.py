"""Compile the fused step's kernels for an H200 (sm_90) on any machine, no GPU needed, and check
the generated code for what would break the exactness argument (docs/engines.md, "The fused step"):

    python bench/fused_ptx.py [--arch 90] [--show mix_rows] [--step fused|phased]

`--step phased`: the phased step's kernels (engines/phased_kernels.py) instead.
For each kernel, as the step launches it (`enable_fp_fusion=False`, 8 warps; 4 phased), it counts in the
PTX the float32 instructions that could round differently from torch's: fused multiply-adds
(`fma`), approximate division, reciprocal, square root or reciprocal square root, and
flush-to-zero variants; and, for comparison, the fused multiply-adds the same kernel gets with
Triton's default (`enable_fp_fusion=True`).  Exits 1 if any such instruction is in the code the
step runs.  Needs triton (its wheel carries LLVM and ptxas).
"""
from __future__ import annotations

import argparse
import re
import sys

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from qgcc.engines import fused_kernels, phased_kernels
from qgcc.engines.premises import INEXACT_ACT, INEXACT_NORM, NOT_HELD, NOT_ONE_HOT, NOT_PM8, NOT_RAIL

H, HD, NH, BLOCK = 2048, 128, 16, 1024
KERNELS = {  # name: (signature, constexprs), as engines/fused.py launches them
    "start": ({"h": "*fp32", "x": "*fp32", "bad": "*i32"}, {"H": H, "NOT_PM8": NOT_PM8}),
    "gather": ({"x": "*fp32", "cols": "*i64", "out": "*fp32", "outb": "*bf16", "N": "i32"},
               {"H": H, "BLOCK": BLOCK, "BF16": True}),
    "residual": ({"x": "*fp32", "cols": "*i64", "y": "*fp32", "bad": "*i32", "N": "i32"},
                 {"H": H, "BLOCK": H, "NOT_PM8": NOT_PM8}),
    "mlp_act": ({"pre": "*fp32", "act": "*fp32", "bad": "*i32", "U": "i32"},
                {"BLOCK": BLOCK, "INEXACT_ACT": INEXACT_ACT}),
    "mix_rows": ({"pre": "*fp32", "S": "*u8", "rows0": "*i32", "running": "*u8", "gnorm": "*fp32", "y": "*fp32", "bad": "*i32",
                  "nh": "i32", "P": "i32", "LEVEL": "fp32", "LEVEL_BITS": "i32", "EPS": "fp32", "QSCALE": "fp32"},
                 {"NHP": NH, "HD": HD, "NOT_ONE_HOT": NOT_ONE_HOT, "INEXACT_ACT": INEXACT_ACT,
                  "INEXACT_NORM": INEXACT_NORM, "NOT_RAIL": NOT_RAIL, "NOT_HELD": NOT_HELD}),
    "finish": ({"h": "*fp32", "x": "*fp32", "bad": "*i32", "flags": "*i32", "running": "*u8", "fault": "*i64",
                "NF": "i32", "halt": "i32"}, {"H": H, "FB": 8}),
}
BC, BU, BE, NOUT = 16, 128, 16, 1024  # engines/phased.py's tiles on CUDA (NOUT: the 36-layer machine's)
# The previous sublayer's product a phased kernel adds itself (phased_kernels._take).
PENDING = {"xin": "*fp32", "xp": "*fp32", "pv": "*fp32", "pWT": "*fp32", "pcols": "*i64", "pn_out": "i32",
           "pn_in": "i32"}
PHASED = {  # as engines/phased.py launches them (start and finish are the fused step's)
    "start": KERNELS["start"],
    "mix_head": (dict(PENDING, **{"cols": "*i64", "n_in": "i32", "WT": "*fp32", "pre0": "*fp32", "S": "*u8",
                                  "rows0": "*i32", "running": "*u8", "gnorm": "*fp32", "y": "*fp32", "bad": "*i32",
                                  "nh": "i32", "LEVEL": "fp32", "LEVEL_BITS": "i32", "EPS": "fp32", "QSCALE": "fp32",
                                  "B": "i32"}),
                 {"H": H, "HD": HD, "HB": 1, "BC": BC, "NOUT": NOUT, "BE": BE, "NOT_ONE_HOT": NOT_ONE_HOT,
                  "INEXACT_ACT": INEXACT_ACT, "INEXACT_NORM": INEXACT_NORM, "NOT_RAIL": NOT_RAIL,
                  "NOT_HELD": NOT_HELD, "NOT_PM8": NOT_PM8}),
    "add_active": ({"x": "*fp32", "v": "*fp32", "WT": "*fp32", "cols": "*i64", "n_out": "i32", "n_in": "i32",
                    "bad": "*i32"}, {"H": H, "NOUT": NOUT, "BE": BE, "NOT_PM8": NOT_PM8}),
    "mlp_units": (dict(PENDING, **{"cols": "*i64", "n_in": "i32", "WT": "*fp32", "pre0": "*fp32", "act": "*fp32",
                                   "bad": "*i32", "U": "i32", "B": "i32"}),
                  {"H": H, "BU": BU, "BC": BC, "NOUT": NOUT, "BE": BE, "INEXACT_ACT": INEXACT_ACT, "NOT_PM8": NOT_PM8}),
    "finish": KERNELS["finish"],
}
STEPS = {"fused": (fused_kernels, KERNELS, 8), "phased": (phased_kernels, PHASED, 4)}
# Float32 instructions whose result may differ from one IEEE operation of torch's.
RISKY = {"fma": r"\bfma\.[a-z.]*f32", "approximate division": r"\bdiv\.(approx|full)\.[a-z.]*f32",
         "approximate reciprocal": r"\brcp\.approx", "approximate square root": r"\bsqrt\.approx",
         "reciprocal square root": r"\brsqrt\.", "flush to zero": r"\.ftz\.f32"}


def compile_ptx(name: str, arch: int, fp_fusion: bool, step: str = "fused") -> str:
    module, table, warps = STEPS[step]
    sig, constexprs = table[name]
    fn = getattr(module, name)
    signature = dict(sig, **{k: "constexpr" for k in constexprs})
    src = ASTSource(fn=fn, signature=signature, constexprs={(fn.arg_names.index(k),): v for k, v in constexprs.items()})
    return triton.compile(src, target=GPUTarget("cuda", arch, 32),
                          options={"enable_fp_fusion": fp_fusion, "num_warps": warps}).asm["ptx"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--arch", type=int, default=90, help="compute capability x 10 (90: H100/H200)")
    ap.add_argument("--show", default="", help="print this kernel's PTX")
    ap.add_argument("--step", default="fused", choices=sorted(STEPS))
    args = ap.parse_args(argv)
    print(f"triton {triton.__version__}, sm_{args.arch}, the {args.step} step")
    bad = 0
    for name in STEPS[args.step][1]:
        ptx = compile_ptx(name, args.arch, False, args.step)
        found = {what: len(re.findall(rx, ptx)) for what, rx in RISKY.items()}
        exact = {op: len(re.findall(rf"\b{op}\.rn\.f32", ptx)) for op in ("div", "sqrt", "mul", "add")}
        fma_default = len(re.findall(RISKY["fma"], compile_ptx(name, args.arch, True, args.step)))
        risky = {k: v for k, v in found.items() if v}
        bad += bool(risky)
        print(f"{name:10} {len(ptx.splitlines()):5d} PTX lines; correctly rounded: "
              + ", ".join(f"{op}.rn {n}" for op, n in exact.items())
              + f"; risky: {risky or 'none'} (with fp fusion on: {fma_default} fma)")
        if name == args.show:
            print(ptx)
    print(f"no risky instruction in the step's kernels: {bad == 0}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
