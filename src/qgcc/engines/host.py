"""The host side of the step protocol (docs/protocol.md).

The host builds the first input (launch constants in their residual fields, every
other dimension at -8, the `one` dimension at +8) and the initial recurrent states
(global memory contents and kernel parameters as dual-rail rows), then feeds each
step's output back as the next input until the network raises `phase.halt` or a
fault flag.  It decodes the trace and the result buffers by thresholds; it never
computes a lane value.  This module must not import the reference emulator.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ..isa import Op, decode
from ..link.layout import NWARP, PHASES, W, cell_location
from ..link.linker import LinkedNetwork
from ..qwen35 import QWEN35_2B as qwen
from ..runtime.launch import Launch, memory_map
from ..trace import (BarrierFault, Fault, MemAccess, MemoryFault, RegWrite, Stats, StepLimitFault,
                     StepRecord, step_limit_fault)


@dataclass
class NeuralResult:
    memory: np.ndarray
    stats: Stats
    network_steps: int = 0
    wall_s: float = 0.0


def _bits(v: int, width: int) -> list[int]:
    return [(v >> i) & 1 for i in range(width)]


class Host:
    def __init__(self, cm: LinkedNetwork, layers):
        """`layers` steps the compiled layers: reset(recurrent_init), step(h) and
        recurrent_state(layer), all on numpy float32 arrays."""
        self.cm = cm
        self.fields = cm.fields  # name -> list of dims
        self._dims = {k: np.asarray(v, dtype=np.int64) for k, v in cm.fields.items()}
        self._pow = {k: (1 << np.arange(len(v), dtype=np.int64)) for k, v in cm.fields.items()}
        # Every field at once (one gather and one segmented sum per step).
        self._names = list(cm.fields)
        self._all_dims = np.concatenate([self._dims[k] for k in self._names])
        self._all_pow = np.concatenate([self._pow[k] for k in self._names])
        self._starts = np.cumsum([0] + [len(cm.fields[k]) for k in self._names[:-1]])
        self.net = layers

    # ---- encoding and decoding of residual fields ----
    def put(self, h: np.ndarray, name: str, value: int) -> None:
        dims = self.fields[name]
        for d, b in zip(dims, _bits(value, len(dims))):
            h[d] = 8.0 if b else -8.0

    def get(self, h: np.ndarray, name: str) -> int:
        """A field's value, decoded by sign."""
        return int((h[self._dims[name]] > 0) @ self._pow[name])

    def decode(self, h: np.ndarray) -> dict[str, int]:
        """Every field's value, decoded by sign."""
        vals = np.add.reduceat((h[self._all_dims] > 0) * self._all_pow, self._starts)
        return dict(zip(self._names, vals.tolist()))

    def initial(self, launch: Launch) -> tuple[np.ndarray, dict[int, np.ndarray]]:
        """The first input and the initial recurrent states (numpy float32; every network
        implementation takes and returns numpy, so the C path never imports torch)."""
        h = np.full(qwen.hidden, -8.0, dtype=np.float32)
        self.put(h, "one", 1)
        k = launch.kernel
        bx, by, bz = launch.block
        gx, gy, gz = launch.grid
        nt = bx * by * bz
        consts = dict(bx=bx, by=by, bz=bz, gx=gx, gy=gy, gz=gz, nt=nt, nw=-(-nt // W),
                      gsize=len(launch.memory), shw=launch.shared_words, nparam=len(launch.params),
                      entry=k.entry, kend=k.end, phase=1 << PHASES.index("tidinit"))
        for name, v in consts.items():
            self.put(h, name, v)
        # Recurrent states: memory cells and the parameter bank, as dual-rail rows.
        init: dict[int, np.ndarray] = {}
        level = self.cm.value_level

        def row(layer: int, head: int, slot: int, value: int) -> None:
            st = init.setdefault(layer, np.zeros((qwen.linear_heads, qwen.head_dim, qwen.head_dim), np.float32))
            for i in range(32):
                b = (value >> i) & 1
                st[head, slot, 2 * i] = level * b
                st[head, slot, 2 * i + 1] = level * (1 - b)
        for idx, v in enumerate(launch.memory.tolist()):
            row(*cell_location(idx), int(v))
        pl, ph = self.cm.param_head
        for j, v in enumerate(launch.params):
            row(pl, ph, j, v)
        return h, init

    def read_cells(self, count: int) -> np.ndarray:
        """Cells 0..count-1 from the memory states: bit i is rail 2i > rail 2i+1."""
        out = np.zeros(count, dtype=np.uint32)
        pow2 = (1 << np.arange(32, dtype=np.uint64))
        states: dict[int, np.ndarray] = {}
        for index in range(count):
            layer, head, slot = cell_location(index)
            if layer not in states:
                states[layer] = self.net.recurrent_state(layer)
            row = states[layer][head, slot]
            out[index] = int((row[0:64:2] > row[1:64:2]) @ pow2)
        return out

    def run(self, launch: Launch, max_steps: int = 1_000_000, on_step=None) -> NeuralResult:
        t0 = time.perf_counter()
        h, init = self.initial(launch)
        self.net.reset(init)
        stats = Stats()
        code = launch.program.code
        rec: StepRecord | None = None
        instr_steps = 0
        netsteps = 0
        gx, gy, _ = launch.grid
        last_active: dict[tuple[int, int], int] = {}
        f = self.decode(h)
        while True:
            block = f["ctax"] + gx * (f["ctay"] + gy * f["ctaz"])
            phase_in = f["phase"]
            wait_in = f["wait"]
            if instr_steps >= max_steps and phase_in == 1 << PHASES.index("run"):
                raise self._step_limit(h, block, max_steps, instr_steps, launch)
            h = self.net.step(h)
            f = self.decode(h)
            netsteps += 1
            if netsteps > 64 * max_steps + 10_000:
                raise StepLimitFault("the network did not halt", step=instr_steps)
            flt = f["fault"]
            if phase_in == 1 << PHASES.index("run"):
                pc, act, warp = f["tr_pc"], f["tr_act"], f["tr_w"]
                if flt:
                    raise self._fault(flt, h, block, warp, pc, launch, act, instr_steps)
                if rec is None:
                    rec = StepRecord(step=instr_steps, block=block, warp=warp, pc=pc, active=act)
                lane = f["tr_lane"]
                ins = code[pc]
                wb_en = f["wb_en"]
                wb_rd = f["wb_rd"]
                for l in range(W):
                    if (wb_en >> l) & 1:
                        rec.writes.append(RegWrite(l, wb_rd, f[f"wb_val{l}"]))
                if f["tr_ld"]:
                    addr = f["tr_addr"]
                    if ins.op is Op.LD:
                        rec.mem.append(MemAccess(lane, "ld", addr, f[f"wb_val{lane}"]))
                        stats.loads += 1
                if f["mw_en"]:
                    addr = f["tr_addr"]
                    kind = "atom" if ins.op is Op.ATOM else "st"
                    rec.mem.append(MemAccess(lane, kind, addr, f["mw_val"]))
                    if kind == "atom":
                        stats.atomics += 1
                    else:
                        stats.stores += 1
                if f["tr_done"]:
                    self._finish(rec, f, last_active, stats)
                    if f["wait"] == 0 and (wait_in or ins.op is Op.BAR):
                        rec.barrier = "release"  # every live lane had arrived: the network freed them
                    if on_step is not None:
                        on_step(rec)
                    rec = None
                    instr_steps += 1
            elif flt:
                raise self._fault(flt, h, block, None, None, launch, None, instr_steps)
            if f["phase"] == 1 << PHASES.index("halt"):
                break
        stats.steps = stats.warp_instructions = instr_steps
        mem = self.read_cells(len(launch.memory))
        return NeuralResult(mem, stats, netsteps, time.perf_counter() - t0)

    def _finish(self, rec: StepRecord, f: dict[str, int], last_active, stats: Stats) -> None:
        """Presentation flags, decoded from the network's own fields."""
        key = (rec.block, rec.warp)
        prev = last_active.get(key, 0)
        rec.reconverged = prev != 0 and (rec.active & ~prev) != 0 and (prev & ~rec.active) == 0
        last_active[key] = rec.active
        ins = self.cm_code(rec.pc)
        if ins.op in (Op.BRZ, Op.BRNZ, Op.JR):
            pcs = {f[f"wt_pc{l}"] for l in range(W) if (rec.active >> l) & 1}
            if len(pcs) > 1:
                rec.diverged = True
                stats.divergent_steps += 1
        if ins.op is Op.BAR:
            stats.barrier_waits += 1
            rec.barrier = "wait"

    def cm_code(self, pc: int):
        return decode(self.cm.code[pc])

    def _step_limit(self, h, block: int, max_steps: int, steps: int, launch: Launch) -> Fault:
        """The step-limit (or barrier-deadlock) fault, located at the instruction that would run next.

        The waiting and ready warp masks are the network's scheduler state; one more
        network step shows which warp and PC it issues next.  The run ends here, so
        that step's effects are never used.
        """
        wait, ready = self.get(h, "wait"), self.get(h, "ready")
        nxt = self.net.step(h)
        pc, warp = self.get(nxt, "tr_pc"), self.get(nxt, "tr_w")
        code = launch.program.code
        line = code[pc].line if pc < len(code) else None
        return step_limit_fault(max_steps, [w for w in range(NWARP) if wait >> w & 1],
                                [w for w in range(NWARP) if ready >> w & 1],
                                block=block, warp=warp, pc=pc, line=line, step=steps)

    def _fault(self, flt: int, h, block, warp, pc, launch, active, step) -> Fault:
        lane = self.get(h, "tr_lane")
        code = launch.program.code
        line = code[pc].line if pc is not None and pc < len(code) else None
        ctx = dict(block=block, warp=warp, lane=lane, pc=pc, line=line, step=step)
        if flt & 1:
            addr = self.get(h, "tr_addr")
            where = memory_map(len(launch.memory), launch.shared_words)
            op = code[pc].op if pc is not None and pc < len(code) else None
            what = {Op.LD: "load from", Op.ST: "store to", Op.ATOM: "atomic on"}.get(op, "access to")
            return MemoryFault(f"out-of-bounds {what} cell {addr:#x} ({where})", **ctx)
        if flt & 2:
            mask = "" if active is None else f" (active {active:0{W}b})"
            return BarrierFault("barrier in divergent code: __syncthreads() reached by only some live lanes "
                                f"of the warp{mask}; the others can no longer reach it", **ctx)
        if flt & 4 and pc is not None and pc < len(code) and code[pc].op is Op.JR:
            return MemoryFault(f"JR to an address outside the kernel (instructions {launch.kernel.entry}.."
                               f"{launch.kernel.end - 1})", **ctx)
        if flt & 4:
            return MemoryFault(f"PC {pc} left the kernel (instructions {launch.kernel.entry}.."
                               f"{launch.kernel.end - 1})", **ctx)
        return MemoryFault(f"parameter index out of range (the kernel has {len(launch.params)})", **ctx)

