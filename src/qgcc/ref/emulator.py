"""Reference emulator of the qsass machine: simple and obviously correct, not fast.

It defines the execution model that the compiled network must reproduce step
for step (docs/qsass.md, "Execution model"):

* Blocks run one at a time, in linear order (x fastest).  Registers (per warp
  slot and lane) and shared memory are not cleared between blocks: a new block
  sees what the previous one left, exactly as the compiled machine does.  At
  launch every register and shared cell is zero.
* Thread t of a block (t = x + y*bx + z*bx*by) is lane t % 4 of warp t // 4.
* Every lane has its own PC.  A warp issues the smallest PC among its live,
  non-waiting lanes; the lanes at that PC are active (min-PC reconvergence).
* Warps are scheduled round-robin: after warp w issues, the next step goes to
  the lowest-numbered ready warp above w, wrapping around.  A warp is ready
  when it has a live lane that is not waiting at the barrier.
* BAR: all live lanes of the warp must be active (else: barrier in divergent
  code); they wait.  When every live lane of the block waits, all are released
  (PC + 1).  Exited lanes are not waited for.
* Memory instructions act lane by lane in lane order (so atomics serialise in
  lane order).

It also counts the compiled network's steps (`RunResult.network_steps`, the model of
docs/architecture.md, "Execution model in the network"): BLKINIT takes one step per warp
at the start of every block, and a warp instruction one step, or one micro-step per
active lane when the network runs it one lane at a time (isa.MICRO_STEPPED).  The
lockstep tests compare it with the steps the network actually takes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..isa import MASK32, MICRO_STEPPED, WRITES_RD, AtomOp, Fmt, Op, SReg, atom_apply, xlane
from ..semantics import alu
from ..spec import SPEC
from ..runtime.launch import Launch, memory_map
from ..trace import BarrierFault, MemAccess, MemoryFault, RegWrite, Stats, StepRecord, step_limit_fault


@dataclass
class RunResult:
    memory: np.ndarray  # final global memory (uint32 cells)
    stats: Stats
    network_steps: int = 0  # the steps the compiled network takes for the same launch


class _Block:
    """Per-block lane state: PCs, liveness and barrier waits."""

    def __init__(self, launch: Launch):
        self.threads = launch.threads_per_block
        self.nwarps = launch.warps_per_block
        n = self.nwarps * SPEC.warp_size
        self.pc = [launch.kernel.entry] * n
        self.live = [t < self.threads for t in range(n)]
        self.waiting = [False] * n

    def lanes(self, w: int) -> range:
        return range(w * SPEC.warp_size, (w + 1) * SPEC.warp_size)

    def ready(self, w: int) -> bool:
        return any(self.live[t] and not self.waiting[t] for t in self.lanes(w))

    def any_live(self) -> bool:
        return any(self.live)


def run(launch: Launch, max_steps: int = 1_000_000, on_step=None) -> RunResult:
    code = launch.program.code
    kernel = launch.kernel
    ws = SPEC.warp_size
    gmem = [int(v) for v in launch.memory]
    nglobal = len(gmem)
    regs = [[[0] * SPEC.num_regs for _ in range(ws)] for _ in range(SPEC.max_warps)]
    shared = [0] * SPEC.shared_words
    stats = Stats()
    bx, by, bz = launch.block
    gx, gy, gz = launch.grid

    def resolve(addr: int, kind: str, ctx: dict) -> tuple[list[int], int]:
        if addr < nglobal:
            return gmem, addr
        off = addr - SPEC.shared_base
        if 0 <= off < launch.shared_words:
            return shared, off
        what = {"ld": "load from", "st": "store to", "atom": "atomic on"}[kind]
        fault = MemoryFault(f"out-of-bounds {what} cell {addr:#x} ({memory_map(nglobal, launch.shared_words)})",
                            **ctx)
        fault.address = addr  # a failing assert's band (runtime/printf.py)
        fault.memory = np.array(gmem, dtype=np.uint64).astype(np.uint32)  # the printf records so far
        raise fault

    step = 0
    netsteps = 0
    for b in range(launch.num_blocks):
        ctaid = (b % gx, (b // gx) % gy, b // (gx * gy))
        blk = _Block(launch)
        netsteps += blk.nwarps  # BLKINIT
        last_active = [0] * blk.nwarps
        current = -1
        while blk.any_live():
            order = list(range(current + 1, blk.nwarps)) + list(range(0, current + 1))
            ready = [w for w in order if blk.ready(w)]
            if not ready:  # cannot happen: a full barrier is released in the step that completes it
                raise BarrierFault("barrier deadlock: no warp can make progress", block=b)
            w = ready[0]
            current = w
            lanes = [t for t in blk.lanes(w) if blk.live[t] and not blk.waiting[t]]
            pc = min(blk.pc[t] for t in lanes)
            active = [t for t in lanes if blk.pc[t] == pc]
            mask = 0
            for t in active:
                mask |= 1 << (t % ws)
            ctx = dict(block=b, warp=w, pc=pc, step=step)
            if not (kernel.entry <= pc < kernel.end):
                raise MemoryFault(f"PC {pc} left the kernel (instructions {kernel.entry}..{kernel.end - 1})",
                                  lane=active[0] % ws, **ctx)
            if step >= max_steps:
                waiting = [v for v in range(blk.nwarps) if any(blk.waiting[t] for t in blk.lanes(v))]
                raise step_limit_fault(max_steps, waiting, sorted(ready), line=code[pc].line, **ctx)
            ins = code[pc]
            ctx["line"] = ins.line
            rec = StepRecord(step=step, block=b, warp=w, pc=pc, active=mask)
            rec.reconverged = (mask & ~last_active[w]) != 0 and (last_active[w] & ~mask) == 0 \
                and last_active[w] != 0
            last_active[w] = mask
            op = ins.op
            nxt = pc + 1
            new_pc = {t: nxt for t in active}
            results: dict[int, int] = {}

            def src2(lane_regs: list[int]) -> int:
                return ins.imm & MASK32 if ins.use_imm else lane_regs[ins.rs2]

            if ins.fmt is Fmt.XLANE:  # lanes read each other's rs1 (inactive lanes' too, then ignore them)
                lane_regs = regs[w]
                crossed = xlane(op, ins.mod, [lane_regs[j][ins.rs1] for j in range(ws)],
                                [src2(lane_regs[j]) for j in range(ws)], mask)
            for t in active:
                lane = t % ws
                r = regs[w][lane]
                lctx = dict(ctx, lane=lane)
                if op is Op.NOP or op is Op.BAR:
                    pass
                elif op is Op.MOV:
                    results[t] = ins.imm & MASK32 if ins.use_imm else r[ins.rs1]
                elif ins.fmt is Fmt.ALU:
                    results[t] = alu(op, r[ins.rs1], src2(r), r[ins.rd])
                elif ins.fmt is Fmt.XLANE:
                    results[t] = crossed[lane]
                elif ins.fmt is Fmt.UN:
                    results[t] = alu(op, r[ins.rs1], 0)
                elif op is Op.S2R:
                    results[t] = _sreg(SReg(ins.mod), t, w, lane, launch.block, launch.grid, ctaid, step)
                elif op is Op.LDC:
                    if not 0 <= ins.imm < len(launch.params):
                        raise MemoryFault(f"parameter c[{ins.imm}] does not exist "
                                          f"(the kernel has {len(launch.params)})", **lctx)
                    results[t] = launch.params[ins.imm]
                elif op is Op.LD:
                    addr = (r[ins.rs1] + ins.imm) & MASK32
                    mem, i = resolve(addr, "ld", lctx)
                    results[t] = mem[i]
                    rec.mem.append(MemAccess(lane, "ld", addr, mem[i]))
                    stats.loads += 1
                elif op is Op.ST:
                    addr = (r[ins.rs1] + ins.imm) & MASK32
                    mem, i = resolve(addr, "st", lctx)
                    mem[i] = r[ins.rs2]
                    rec.mem.append(MemAccess(lane, "st", addr, r[ins.rs2]))
                    stats.stores += 1
                elif op is Op.ATOM:
                    addr = (r[ins.rs1] + ins.imm) & MASK32
                    mem, i = resolve(addr, "atom", lctx)
                    old = mem[i]
                    new = atom_apply(AtomOp(ins.mod), old, r[ins.rs2], r[ins.rd])
                    mem[i] = new
                    results[t] = old
                    rec.mem.append(MemAccess(lane, "atom", addr, new))
                    stats.atomics += 1
                elif op is Op.BRA:
                    new_pc[t] = ins.imm
                elif op is Op.BRZ:
                    new_pc[t] = ins.imm if r[ins.rs1] == 0 else nxt
                elif op is Op.BRNZ:
                    new_pc[t] = ins.imm if r[ins.rs1] != 0 else nxt
                elif op is Op.JR:
                    target = r[ins.rs1]
                    if not kernel.entry <= target < kernel.end:
                        raise MemoryFault(f"JR to an address outside the kernel (instructions "
                                          f"{kernel.entry}..{kernel.end - 1})", **lctx)
                    new_pc[t] = target
                elif op is Op.EXIT:
                    blk.live[t] = False
                else:  # pragma: no cover - every opcode is handled above
                    raise AssertionError(op)

            if op in WRITES_RD:
                for t in active:
                    regs[w][t % ws][ins.rd] = results[t]
                    rec.writes.append(RegWrite(t % ws, ins.rd, results[t]))
            if op is Op.BAR:
                warp_live = [t for t in blk.lanes(w) if blk.live[t]]
                if len(active) != len(warp_live):
                    raise BarrierFault(
                        "barrier in divergent code: __syncthreads() reached by only some live lanes "
                        f"of the warp (active {mask:04b}); the others can no longer reach it",
                        lane=min(set(warp_live) - set(active)) % ws, **ctx)
                for t in active:
                    blk.waiting[t] = True
                rec.barrier = "wait"
                stats.barrier_waits += 1
            else:
                for t in active:
                    blk.pc[t] = new_pc[t]
                if op in (Op.BRZ, Op.BRNZ, Op.JR) and len({new_pc[t] for t in active}) > 1:
                    rec.diverged = True
                    stats.divergent_steps += 1
            # Release the barrier once every live lane of the block waits at it.
            if any(blk.waiting) and all(blk.waiting[t] for t in range(len(blk.live)) if blk.live[t]):
                for t in range(len(blk.live)):
                    if blk.waiting[t]:
                        blk.waiting[t] = False
                        blk.pc[t] += 1
                rec.barrier = "release"
            step += 1
            netsteps += network_steps(op, mask)
            stats.steps = step
            stats.warp_instructions = step
            if on_step is not None:
                on_step(rec)
    return RunResult(np.array(gmem, dtype=np.uint32), stats, netsteps)


def network_steps(op: Op, active: int) -> int:
    """Network steps of one warp instruction with active-lane mask `active`."""
    return bin(active).count("1") if op in MICRO_STEPPED else 1


def _sreg(s: SReg, t: int, w: int, lane: int, block, grid, ctaid, clock: int) -> int:
    bx, by, _ = block
    tid = (t % bx, (t // bx) % by, t // (bx * by))
    table = {
        SReg.TID_X: tid[0], SReg.TID_Y: tid[1], SReg.TID_Z: tid[2],
        SReg.NTID_X: block[0], SReg.NTID_Y: block[1], SReg.NTID_Z: block[2],
        SReg.CTAID_X: ctaid[0], SReg.CTAID_Y: ctaid[1], SReg.CTAID_Z: ctaid[2],
        SReg.NCTAID_X: grid[0], SReg.NCTAID_Y: grid[1], SReg.NCTAID_Z: grid[2],
        SReg.LANEID: lane, SReg.WARPID: w, SReg.CLOCK: clock & MASK32,
    }
    return table[s]
