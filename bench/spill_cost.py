"""What register spilling costs: instructions and network steps of a kernel that needs it.

    python bench/spill_cost.py [FILE.cu KERNEL GRID BLOCK]      (default: tests' manyLive kernel)

Compiles the kernel, finds its spill loads and stores (LD/ST on the frame register at a
spill slot: frontend/spill.py), and runs one launch on the emulator, counting network steps
(docs/architecture.md's model: a memory instruction is one step per active lane) in total and
on the spill instructions.  Buffers are filled with small integers; every pointer parameter
gets 4 * threads + 64 cells.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import qgcc.frontend as F  # noqa: E402
import qgcc.frontend.spill as S  # noqa: E402
from qgcc.isa import Op  # noqa: E402
from qgcc.ref.emulator import network_steps, run  # noqa: E402
from qgcc.runtime.launch import make_launch  # noqa: E402


def main() -> int:
    if len(sys.argv) == 5:
        src, kname, grid, block = Path(sys.argv[1]).read_text(), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    else:
        from test_published_constructs import SPILL
        src, kname, grid, block = SPILL, "manyLive", 3, 4
    seen = {}
    orig_alloc, orig_emit = F.allocate_spilling, S.emit

    def alloc(ir, entry_line, base, frame, first_slot, limit):
        def emit(code, best, b):
            seen.update(frame=best[frame], first=first_slot)
            return orig_emit(code, best, b)
        S.emit = emit
        try:
            return orig_alloc(ir, entry_line, base, frame, first_slot, limit)
        finally:
            S.emit = orig_emit

    F.allocate_spilling = alloc
    prog = F.compile_source(src, "k.cu")
    k = prog.kernel(kname)
    if not seen:
        print(f"{kname}: {k.regs} registers, no spilling")
        return 0
    code = prog.code[k.entry:k.end]
    spill_pcs = {k.entry + i for i, ins in enumerate(code)
                 if ins.op in (Op.LD, Op.ST) and ins.rs1 == seen["frame"] and ins.imm >= seen["first"]}
    slots = k.local_words - seen["first"]
    n = grid * block
    arrays = {p.name: (np.arange(4 * n + 64) % 97).astype(np.float32 if p.ctype == "float" else np.int32)
              for p in k.params if p.pointer}
    scalars = {p.name: n for p in k.params if not p.pointer}
    launch = make_launch(prog, k, (grid, 1, 1), (block, 1, 1), scalars, arrays)
    total = {"steps": 0, "spill": 0, "instr": 0, "spill_instr": 0}

    def on_step(rec):
        op = prog.code[rec.pc].op
        s = network_steps(op, rec.active)
        total["instr"] += 1
        total["steps"] += s
        if rec.pc in spill_pcs:
            total["spill"] += s
            total["spill_instr"] += 1

    res = run(launch, max_steps=10_000_000, on_step=on_step)
    total["steps"] = res.network_steps  # (with the block-start steps, BLKINIT)
    print(f"{kname}: {k.regs} registers, {slots} spill slots ({k.local_words} frame cells per thread)")
    print(f"  instructions: {len(code)}, of which spill loads/stores {len(spill_pcs)}")
    print(f"  launch {grid}x{block}: {total['instr']} warp instructions ({total['spill_instr']} spill), "
          f"{total['steps']} network steps ({total['spill']} on spill loads/stores, "
          f"{100 * total['spill'] / total['steps']:.1f}%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
