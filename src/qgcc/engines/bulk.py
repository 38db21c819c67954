"""Every slot's bookkeeping at once, for batches nobody traces (engines.batch, on_step None).

Why: `Tracker.feed` (engines/host.py) costs microseconds of Python per launch per step,
which caps a batch at some 10^5 slot-steps/s whatever the device does.  Without trace
records a launch needs only its statistics, its network step count and how it ends, and
those are sums over its steps that numpy can take for every slot at once, step by step,
with the same rules as `Tracker.feed` and `Tracker._finish`.

A step that needs more than sums (a fault flag, phase.halt, the step limit, a PC outside
the code) hands the slot to a real `Tracker`, set to the same counts, which reads the
rest of the chunk row by row: a launch's result, statistics and fault are the ones
`Host.run` gives.  Lane values are never looked at, only the trace fields the host decodes
anyway.
"""

from __future__ import annotations

import numpy as np

from ..isa import Op, decode
from ..link.layout import PHASES, W
from ..trace import StepRecord
from .host import Host, Tracker

RUN, HALT = 1 << PHASES.index("run"), 1 << PHASES.index("halt")
BRANCHES = (Op.BRZ, Op.BRNZ, Op.JR)
COUNTS = ("netsteps", "instr", "loads", "stores", "atomics", "barrier_waits", "divergent_steps")


class BulkTracker:
    def __init__(self, host: Host, width: int, program_code, max_steps: int):
        names = host._names
        self.col = {n: i for i, n in enumerate(names)}
        self.wt_pc = np.array([self.col[f"wt_pc{l}"] for l in range(W)])
        self.max_steps = max_steps
        self.limit = 64 * max_steps + 10_000
        # The op at each pc: the program's (loads, stores) and the network's code (_finish).
        self.op_prog = np.array([int(i.op) for i in program_code], np.int64)
        self.op_net = np.array([int(decode(w).op) for w in host.cm.code], np.int64)
        self.ncode = min(len(self.op_prog), len(self.op_net))
        z = lambda: np.zeros(width, np.int64)  # noqa: E731
        self.c = {k: z() for k in COUNTS}
        self.rec_open = np.zeros(width, bool)
        self.rec_pc, self.rec_act, self.rec_warp, self.rec_block, self.rec_step = z(), z(), z(), z(), z()
        self.prev = np.zeros((width, len(names)), np.int64)

    def start(self, b: int, first: dict[str, int], names: list[str]) -> None:
        for k in COUNTS:
            self.c[k][b] = 0
        self.rec_open[b] = False
        self.prev[b] = [first[n] for n in names]

    def _block(self, f: np.ndarray, grid: np.ndarray) -> np.ndarray:
        c = self.col
        return f[:, c["ctax"]] + grid[:, 0] * (f[:, c["ctay"]] + grid[:, 1] * f[:, c["ctaz"]])

    def advance(self, values: np.ndarray, slots: np.ndarray, grid: np.ndarray) -> dict[int, int]:
        """Sum K steps (`values` (K, B, fields)) into the slots in `slots` (bool (B,));
        {slot: the row at which it needs a Tracker} for the slots whose launch ends there."""
        c, col, cnt = self.c, self.col, self.c
        alive = slots.copy()
        handover: dict[int, int] = {}
        for k in range(values.shape[0]):
            f = values[k]
            prev = self.prev
            run_in = prev[:, col["phase"]] == RUN
            pc = f[:, col["tr_pc"]]
            event = (f[:, col["fault"]] != 0) | (f[:, col["phase"]] == HALT) | (cnt["netsteps"] + 1 > self.limit)
            event |= run_in & ((cnt["instr"] >= self.max_steps) | (pc >= self.ncode) | (pc < 0))
            event |= run_in & self.rec_open & (self.rec_pc >= self.ncode)
            ev = alive & event
            for b in np.flatnonzero(ev):
                handover[int(b)] = k
            alive &= ~ev
            a = alive
            cnt["netsteps"] += a
            r = a & run_in
            pcc = np.clip(pc, 0, self.ncode - 1)
            op = self.op_prog[pcc]
            opening = r & ~self.rec_open
            if opening.any():
                self.rec_pc[opening] = pc[opening]
                self.rec_act[opening] = f[opening, col["tr_act"]]
                self.rec_warp[opening] = f[opening, col["tr_w"]]
                self.rec_block[opening] = self._block(prev[opening], grid[opening])
                self.rec_step[opening] = cnt["instr"][opening]
                self.rec_open |= opening
            cnt["loads"] += r & (f[:, col["tr_ld"]] != 0) & (op == int(Op.LD))
            mw = r & (f[:, col["mw_en"]] != 0)
            cnt["atomics"] += mw & (op == int(Op.ATOM))
            cnt["stores"] += mw & (op != int(Op.ATOM))
            done = r & (f[:, col["tr_done"]] != 0)
            if done.any():
                op0 = self.op_net[np.clip(self.rec_pc, 0, self.ncode - 1)]
                br = done & np.isin(op0, [int(o) for o in BRANCHES])
                if br.any():
                    idx = np.flatnonzero(br)
                    pcs = f[np.ix_(idx, self.wt_pc)]
                    act = (self.rec_act[idx, None] >> np.arange(W)) & 1 != 0
                    big = np.where(act, pcs, np.iinfo(np.int64).min).max(1)
                    small = np.where(act, pcs, np.iinfo(np.int64).max).min(1)
                    cnt["divergent_steps"][idx] += (act.any(1) & (big != small))
                cnt["barrier_waits"] += done & (op0 == int(Op.BAR))
                cnt["instr"] += done
                self.rec_open &= ~done
            np.copyto(self.prev, f, where=a[:, None])  # the running slots' fields (no gather)
        return handover

    def tracker(self, b: int, host: Host, launch, names: list[str]) -> Tracker:
        """A Tracker in the state slot b's sums describe, to read the rest of its launch."""
        tr = Tracker(host, launch, self.max_steps, None, dict(zip(names, self.prev[b].tolist())))
        c = self.c
        tr.netsteps = int(c["netsteps"][b])
        tr.instr_steps = int(c["instr"][b])
        st = tr.stats
        st.loads, st.stores, st.atomics = int(c["loads"][b]), int(c["stores"][b]), int(c["atomics"][b])
        st.barrier_waits, st.divergent_steps = int(c["barrier_waits"][b]), int(c["divergent_steps"][b])
        if self.rec_open[b]:
            tr.rec = StepRecord(step=int(self.rec_step[b]), block=int(self.rec_block[b]), warp=int(self.rec_warp[b]),
                                pc=int(self.rec_pc[b]), active=int(self.rec_act[b]))
        return tr
