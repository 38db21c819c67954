"""Network steps per warp instruction on the samples, by the execution model (emulator only; fast).

    python bench/netsteps.py [--seeds 3]

The reference emulator counts the steps the compiled network takes for a launch
(`RunResult.network_steps`; every lockstep test checks the count against the network's).
Per sample, over random launches (tests/sample_cases.py): warp instructions, network steps
today, and the steps of the machine before the thread-index and micro-step changes
(TIDINIT one step per thread of a block, four micro-steps per micro-stepped instruction
whatever its active lanes), with the ratio of each to the warp instructions.
"""
import argparse, sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from sample_cases import CASES  # noqa: E402
from qgcc.frontend import compile_source  # noqa: E402
from qgcc.isa import MICRO_STEPPED  # noqa: E402
from qgcc.ref.emulator import run  # noqa: E402
from qgcc.runtime.launch import make_launch  # noqa: E402
from qgcc.spec import SPEC  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--seeds", type=int, default=3)
args = ap.parse_args()
print(f"{'sample':10} {'launches':>8} {'instr':>7} {'netsteps':>8} {'per instr':>9} {'before':>7} {'per instr':>9}")
tot = np.zeros(3, np.int64)
for name in sorted(CASES):
    prog = compile_source((ROOT / "samples" / f"{name}.cu").read_text(), name)
    code = prog.code
    row = np.zeros(3, np.int64)
    for seed in range(args.seeds):
        grid, block, scalars, arrays = CASES[name](np.random.default_rng(seed))
        launch = make_launch(prog, prog.kernels[0], grid, block, scalars, arrays)
        micro = []
        r = run(launch, max_steps=10 ** 7, on_step=lambda rec: micro.append(code[rec.pc].op in MICRO_STEPPED))
        nt = block[0] * block[1] * block[2]
        before = nt + launch.num_blocks * -(-nt // SPEC.warp_size) + len(micro) + (SPEC.warp_size - 1) * sum(micro)
        row += (r.stats.steps, r.network_steps, before)
    tot += row
    i, s, b = row
    print(f"{name:10} {args.seeds:8d} {i:7d} {s:8d} {s / i:9.3f} {b:7d} {b / i:9.3f}", flush=True)
i, s, b = tot
print(f"{'all':10} {'':8} {i:7d} {s:8d} {s / i:9.3f} {b:7d} {b / i:9.3f}")
