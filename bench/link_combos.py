"""Which combinations of the machine's optional units link into the 45-layer budget.

    python bench/link_combos.py [--units farith,fcmp,...] [--only-failures]

The linker includes only the units a program uses (the float unit, FFMA's fused datapath,
the lane-crossing unit, ...), and their signals compete for the residual stream's 2,048
dimensions.  This links one small kernel per combination of the units below (every subset)
and prints the layers it takes and the fewest residual dimensions left free at any point
(Placement.spare_dims, besides the state dimensions lent after their last reader), or where
the residual or an MLP overflowed.  No launch runs:
the numbers are the linker's (qgcc.link.schedule.place, as `qgcc -o` links).
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import qgcc  # noqa: E402
from qgcc.link.core import build_core  # noqa: E402
from qgcc.link.linker import MAX_LAYERS  # noqa: E402
from qgcc.link.schedule import CapacityError, place  # noqa: E402

# One statement per unit; each uses its unit's instructions and little else.
UNITS = {
    "farith": ("float + and *", "f[t] = f[t] * 2.5f + 1.0f;"),
    "fcmp": ("float compare, fminf/fmaxf", "f[t + 8] = fmaxf(f[t + 8], 0.5f); u[t] = f[t + 16] < 3.0f;"),
    "cvt": ("float <-> int conversions", "i[t + 8] = (int)f[t + 24] + (int)(float)i[t + 16];"),
    "fma": ("fmaf", "f[t + 32] = fmaf(f[t + 32], f[t + 40], 1.0f);"),
    "double": ("double + and *", "d[t] = d[t] * 1.5 + 2.0;"),
    "xlane": ("warp shuffle and vote", "i[t] = __shfl_down_sync(0xffffffffu, i[t], 1); u[t + 8] = __ballot_sync(0xffffffffu, i[t + 24] != 3);"),
    "atomic": ("atomicAdd", "atomicAdd(&u[16], 1u);"),
    "mul": ("integer *", "i[t + 32] = i[t + 32] * i[t + 40];"),
}


def kernel(units: tuple[str, ...]) -> str:
    body = "\n    ".join(UNITS[u][1] for u in units) or "i[t] = i[t] + 1;"
    return ("__global__ void k(float *f, double *d, int *i, unsigned *u) {\n"
            f"    int t = threadIdx.x;\n    {body}\n}}\n")


def layers(src: str) -> tuple[int | None, str]:
    """(layers, where the residual came closest to full) if the kernel links, else (None, the linker's reason)."""
    prog = qgcc.compile(src)
    net = build_core(prog.program).net
    err = ""
    for L in range(16, MAX_LAYERS + 1):
        try:
            pl = place(net, L)
            return L, f"{pl.spare_dims} dims spare at layer {pl.tightest_stage // 2}"
        except CapacityError as e:
            err = str(e)
    return None, err


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--units", default=",".join(UNITS), help="comma-separated units to combine")
    ap.add_argument("--only-failures", action="store_true", help="print only the combinations that do not link")
    args = ap.parse_args(argv)
    names = [u.strip() for u in args.units.split(",") if u.strip()]
    bad = [u for u in names if u not in UNITS]
    if bad:
        ap.error(f"unknown unit {bad[0]!r}; choose from {', '.join(UNITS)}")
    fails = 0
    combos = [c for k in range(len(names) + 1) for c in itertools.combinations(names, k)]
    t0 = time.time()
    for c in combos:
        L, why = layers(kernel(c))
        fails += L is None
        if L is None or not args.only_failures:
            print(f"{'+'.join(c) or '(integer only)':45s} {L if L is not None else 'FAIL'}  {why}", flush=True)
    print(f"{len(combos)} combinations, {fails} do not link ({time.time() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
