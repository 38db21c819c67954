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

Kept fast enough to be the fuzzers' oracle (bench/fuzz/differential.py runs it millions of
steps) without giving up that it reads like the model: the instructions are decoded once per
launch (`_Decoded`), the block keeps per-warp counts of runnable lanes so that picking the next
warp and releasing a barrier need no scan of every lane, and a step builds its `StepRecord`
only when someone asks for it (`on_step`).
"""


from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..isa import MASK32, MICRO_STEPPED, WRITES_RD, AtomOp, Fmt, Instr, Op, SReg, atom_apply, xlane
from ..semantics import alu
from ..spec import SPEC
from ..runtime.launch import Launch, memory_map
from ..trace import BarrierFault, MemAccess, MemoryFault, RegWrite, Stats, StepRecord, step_limit_fault


@dataclass
class RunResult:
    memory: np.ndarray  # final global memory (uint32 cells)
    stats: Stats
    network_steps: int = 0  # the steps the compiled network takes for the same launch


class _Decoded:
    """One instruction with what every step asks of it looked up once (its format is a table
    lookup, its immediate a masked u32, whether it writes rd or is micro-stepped a set test)."""

    __slots__ = ("op", "fmt", "rd", "rs1", "rs2", "imm", "uimm", "use_imm", "mod", "line", "writes_rd", "micro")

    def __init__(self, ins: Instr):
        self.op, self.fmt, self.line = ins.op, ins.fmt, ins.line
        self.rd, self.rs1, self.rs2, self.mod, self.use_imm = ins.rd, ins.rs1, ins.rs2, ins.mod, ins.use_imm
        self.imm, self.uimm = ins.imm, ins.imm & MASK32  # signed (targets, c[] indices), and as a u32 operand
        self.writes_rd = ins.op in WRITES_RD
        self.micro = ins.op in MICRO_STEPPED


class _Block:
    """Per-block lane state: PCs, liveness and barrier waits (lane t of the block is lane t % 4
    of warp t // 4).  `runnable[w]` counts warp w's live lanes that do not wait at the barrier,
    so that a warp is ready when it is non-zero; every change of `live` or `waiting` goes
    through `exit`, `wait` and `release`, which keep the counts."""

    def __init__(self, launch: Launch):
        ws = SPEC.warp_size
        self.threads = launch.threads_per_block
        self.nwarps = launch.warps_per_block
        n = self.nwarps * ws
        self.pc = [launch.kernel.entry] * n
        self.live = [t < self.threads for t in range(n)]
        self.waiting = [False] * n
        self.runnable = [sum(self.live[t] for t in self.lanes(w)) for w in range(self.nwarps)]
        self.nlive = self.threads
        self.nwaiting = 0

    def lanes(self, w: int) -> range:
        return range(w * SPEC.warp_size, (w + 1) * SPEC.warp_size)

    def ready(self, w: int) -> bool:
        return self.runnable[w] > 0

    def next_ready(self, current: int) -> int | None:
        """Round-robin: the lowest-numbered ready warp above `current`, wrapping around."""
        for k in range(1, self.nwarps + 1):
            w = (current + k) % self.nwarps
            if self.runnable[w]:
                return w
        return None

    def exit(self, t: int) -> None:
        self.live[t] = False
        self.nlive -= 1
        self.runnable[t // SPEC.warp_size] -= 1

    def wait(self, t: int) -> None:
        self.waiting[t] = True
        self.nwaiting += 1
        self.runnable[t // SPEC.warp_size] -= 1

    def all_wait(self) -> bool:
        """Every live lane waits at the barrier (a waiting lane is live: it cannot run to EXIT)."""
        return self.nwaiting > 0 and self.nwaiting == self.nlive

    def release(self) -> None:
        for t, w in enumerate(self.waiting):
            if w:
                self.waiting[t] = False
                self.pc[t] += 1
                self.runnable[t // SPEC.warp_size] += 1
        self.nwaiting = 0


def run(launch: Launch, max_steps: int = 1_000_000, on_step=None) -> RunResult:
    code = [_Decoded(ins) for ins in launch.program.code]
    kernel = launch.kernel
    ws = SPEC.warp_size
    gmem = [int(v) for v in launch.memory]
    nglobal = len(gmem)
    shared_words = launch.shared_words
    regs = [[[0] * SPEC.num_regs for _ in range(ws)] for _ in range(SPEC.max_warps)]
    shared = [0] * SPEC.shared_words
    stats = Stats()

    # The opcodes and formats that the dispatch below tests on every step, as locals (looking up
    # an enum member costs several times as much, and a step makes a handful).
    ALU, UN, XLANE = Fmt.ALU, Fmt.UN, Fmt.XLANE
    ATOM, BAR, BRA, BRNZ, BRZ, EXIT, JR = Op.ATOM, Op.BAR, Op.BRA, Op.BRNZ, Op.BRZ, Op.EXIT, Op.JR
    LD, LDC, MOV, NOP, S2R, ST = Op.LD, Op.LDC, Op.MOV, Op.NOP, Op.S2R, Op.ST

    step = 0
    netsteps = 0
    gx, gy, _ = launch.grid
    for b in range(launch.num_blocks):
        ctaid = (b % gx, (b // gx) % gy, b // (gx * gy))
        blk = _Block(launch)
        pcs, live, waiting = blk.pc, blk.live, blk.waiting
        netsteps += blk.nwarps  # BLKINIT
        last_active = [0] * blk.nwarps
        current = -1
        while blk.nlive:
            w = blk.next_ready(current)
            if w is None:  # cannot happen: a full barrier is released in the step that completes it
                raise BarrierFault("barrier deadlock: no warp can make progress", block=b)
            current = w
            base = w * ws
            # The active lanes: those of the warp's runnable lanes at the lowest PC (one pass;
            # a warp has a few lanes, so this is most of a step's bookkeeping).
            pc = None
            active = []
            mask = 0
            for t in range(base, base + ws):
                if live[t] and not waiting[t]:
                    p = pcs[t]
                    if pc is None or p < pc:
                        pc, active, mask = p, [t], 1 << (t - base)
                    elif p == pc:
                        active.append(t)
                        mask |= 1 << (t - base)

            if not (kernel.entry <= pc < kernel.end):
                raise MemoryFault(f"PC {pc} left the kernel (instructions {kernel.entry}..{kernel.end - 1})",
                                  lane=active[0] % ws, **_where(kernel, code, b, w, pc, step))
            ins = code[pc]
            if step >= max_steps:
                blocked = [v for v in range(blk.nwarps) if any(waiting[t] for t in blk.lanes(v))]
                running = [v for v in range(blk.nwarps) if blk.ready(v)]
                raise step_limit_fault(max_steps, blocked, running, **_where(kernel, code, b, w, pc, step))
            rec = None
            if on_step is not None:
                rec = StepRecord(step=step, block=b, warp=w, pc=pc, active=mask)
                rec.reconverged = (mask & ~last_active[w]) != 0 and (last_active[w] & ~mask) == 0 \
                    and last_active[w] != 0
            last_active[w] = mask
            op, fmt, wregs = ins.op, ins.fmt, regs[w]
            nxt = pc + 1
            new_pc = None  # {lane: pc} for the branches; everything else goes on to pc + 1

            if fmt is ALU:
                rd, rs1, rs2 = ins.rd, ins.rs1, ins.rs2
                for t in active:
                    r = wregs[t - base]
                    r[rd] = alu(op, r[rs1], ins.uimm if ins.use_imm else r[rs2], r[rd])
            elif op is MOV:
                for t in active:
                    r = wregs[t - base]
                    r[ins.rd] = ins.uimm if ins.use_imm else r[ins.rs1]
            elif op is LD or op is ST or op is ATOM:
                for t in active:
                    lane = t - base
                    r = wregs[lane]
                    addr = (r[ins.rs1] + ins.uimm) & MASK32
                    if addr < nglobal:
                        mem, i = gmem, addr
                    elif 0 <= addr - SPEC.shared_base < shared_words:
                        mem, i = shared, addr - SPEC.shared_base
                    else:
                        what = {Op.LD: "load from", Op.ST: "store to", Op.ATOM: "atomic on"}[op]
                        fault = MemoryFault(f"out-of-bounds {what} cell {addr:#x} "
                                            f"({memory_map(nglobal, shared_words)})",
                                            **_where(kernel, code, b, w, pc, step, lane))
                        fault.address = addr  # a failing assert's band (runtime/printf.py)
                        fault.memory = np.array(gmem, dtype=np.uint64).astype(np.uint32)  # printf records so far
                        raise fault
                    if op is LD:
                        r[ins.rd] = mem[i]
                        stats.loads += 1
                        access = MemAccess(lane, "ld", addr, mem[i]) if rec else None
                    elif op is ST:
                        mem[i] = r[ins.rs2]
                        stats.stores += 1
                        access = MemAccess(lane, "st", addr, mem[i]) if rec else None
                    else:
                        old = mem[i]
                        mem[i] = atom_apply(AtomOp(ins.mod), old, r[ins.rs2], r[ins.rd])
                        r[ins.rd] = old
                        stats.atomics += 1
                        access = MemAccess(lane, "atom", addr, mem[i]) if rec else None
                    if rec:
                        rec.mem.append(access)
            elif op is BRA:
                new_pc = {t: ins.imm for t in active}
            elif op is BRZ:
                new_pc = {t: ins.imm if wregs[t - base][ins.rs1] == 0 else nxt for t in active}
            elif op is BRNZ:
                new_pc = {t: ins.imm if wregs[t - base][ins.rs1] != 0 else nxt for t in active}
            elif fmt is XLANE:  # lanes read each other's rs1 (inactive lanes' too, then ignore them)
                crossed = xlane(op, ins.mod, [r[ins.rs1] for r in wregs],
                                [ins.uimm if ins.use_imm else r[ins.rs2] for r in wregs], mask)
                for t in active:
                    wregs[t - base][ins.rd] = crossed[t - base]
            elif fmt is UN:
                for t in active:
                    r = wregs[t - base]
                    r[ins.rd] = alu(op, r[ins.rs1], 0)
            elif op is S2R:
                for t in active:
                    wregs[t - base][ins.rd] = _sreg(SReg(ins.mod), t, w, t - base, launch.block, launch.grid,
                                                    ctaid, step)
            elif op is LDC:
                if not 0 <= ins.imm < len(launch.params):
                    raise MemoryFault(f"parameter c[{ins.imm}] does not exist "
                                      f"(the kernel has {len(launch.params)})",
                                      **_where(kernel, code, b, w, pc, step, active[0] - base))
                for t in active:
                    wregs[t - base][ins.rd] = launch.params[ins.imm]
            elif op is JR:
                new_pc = {}
                for t in active:
                    target = wregs[t - base][ins.rs1]
                    if not kernel.entry <= target < kernel.end:
                        raise MemoryFault(f"JR to an address outside the kernel (instructions "
                                          f"{kernel.entry}..{kernel.end - 1})",
                                          **_where(kernel, code, b, w, pc, step, t - base))
                    new_pc[t] = target
            elif op is EXIT:
                for t in active:
                    blk.exit(t)
            elif op is not NOP and op is not BAR:  # pragma: no cover - every opcode is handled above
                raise AssertionError(op)

            if rec and ins.writes_rd:
                rec.writes.extend(RegWrite(t - base, ins.rd, wregs[t - base][ins.rd]) for t in active)
            if op is BAR:
                warp_live = [t for t in blk.lanes(w) if live[t]]
                if len(active) != len(warp_live):
                    raise BarrierFault(
                        "barrier in divergent code: __syncthreads() reached by only some live lanes "
                        f"of the warp (active {mask:04b}); the others can no longer reach it",
                        **_where(kernel, code, b, w, pc, step, min(set(warp_live) - set(active)) % ws))
                for t in active:
                    blk.wait(t)
                if rec:
                    rec.barrier = "wait"
                stats.barrier_waits += 1
            elif new_pc is None:
                for t in active:
                    pcs[t] = nxt
            else:
                for t in active:
                    pcs[t] = new_pc[t]
                if len(set(new_pc.values())) > 1:
                    if rec:
                        rec.diverged = True
                    stats.divergent_steps += 1
            # Release the barrier once every live lane of the block waits at it.
            if blk.all_wait():
                blk.release()
                if rec:
                    rec.barrier = "release"
            step += 1
            netsteps += mask.bit_count() if ins.micro else 1
            if rec:
                on_step(rec)
    stats.steps = stats.warp_instructions = step
    return RunResult(np.array(gmem, dtype=np.uint32), stats, netsteps)


def _where(kernel, code: list[_Decoded], b: int, w: int, pc: int, step: int, lane: int | None = None) -> dict:
    """Where a fault happened, for its message (built only on a fault, not on every step)."""
    ctx = dict(block=b, warp=w, pc=pc, step=step)
    if kernel.entry <= pc < kernel.end:
        ctx["line"] = code[pc].line
    return ctx if lane is None else dict(ctx, lane=lane)


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
