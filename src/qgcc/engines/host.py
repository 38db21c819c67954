"""The host side of the step protocol (docs/protocol.md).

The host builds the first input (launch constants in their residual fields, every
other dimension at -8, the `one` dimension at +8) and the initial recurrent states
(global memory contents as one-hot rows of two words, kernel parameters as dual-rail rows), then feeds each
step's output back as the next input until the network raises `phase.halt` or a
fault flag.  It decodes the trace and the result buffers by thresholds; it never
computes a lane value.  This module must not import the reference emulator.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ..isa import Op, decode
from ..link.layout import L_MEM0, NWARP, PHASES, ROW_RAILS, WORDS_PER_SLOT, W, cell_location, written_heads
from ..link.netlist import ONEHOT4_RAILS
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


def decode_word(rails, word: int) -> int:
    """Word `word` (0 or 1) of a slot's row, from its 128 rails' set flags."""
    return sum(1 << i for i in range(32) if any(rails[4 * i + c] for c in ONEHOT4_RAILS[word]))


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
        self._written: dict[tuple[int, int, int], np.ndarray] = {}
        self._inputs: dict[tuple[int, ...], np.ndarray] = {}  # first inputs by launch constants
        self._decoded: dict[int, object] = {}  # cm_code's instructions by pc

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
        h, at = self.initial_rails(launch)
        init: dict[int, np.ndarray] = {}
        for layer in np.unique(at[:, 0]).tolist():
            st = init[layer] = np.zeros((qwen.linear_heads, qwen.head_dim, qwen.head_dim), np.float32)
            mine = at[at[:, 0] == layer]
            st[mine[:, 1], mine[:, 2], mine[:, 3]] = self.cm.value_level
        return h, init

    def initial_rails(self, launch: Launch) -> tuple[np.ndarray, np.ndarray]:
        """The first input, and the initial recurrent states as the (layer, head, row, entry)
        of every entry at the rail level (int64 (n, 4)); every other entry is +0.  Why this
        form: a batch loads thousands of launches, and these positions are a few hundred
        numbers where the dense states are megabytes (engines.neural_batch.load_many)."""
        h, at, _ = self.initial_rails_many([launch])
        return h[0], at

    def initial_rails_many(self, launches: list[Launch]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """initial_rails of several launches, computed for all of them at once: (first inputs
        (n, hidden), every launch's positions in one array (m, 4), the launch of each row (m,):
        `at[owner == j]` is launch j's initial_rails).  The batched step loads launches by the
        thousand, and one at a time this was a third of the host's work a launch
        (bench/host_bulk.py, bench/host_ceiling.py).  First inputs are kept per launch shape."""
        h = np.stack([self._first_input(launch) for launch in launches])
        bit = np.arange(32)
        # Global memory: two cells a slot, as one-hot rails (layout.row_rails); a slot's
        # second word past the buffers is 0.
        sizes = [len(launch.memory) for launch in launches]
        rows = [-(-n // WORDS_PER_SLOT) for n in sizes]
        pairs = np.zeros((sum(rows), WORDS_PER_SLOT), np.uint32)
        at = np.cumsum([0] + rows)
        for j, launch in enumerate(launches):
            pairs[at[j]:at[j + 1]].reshape(-1)[:sizes[j]] = np.asarray(launch.memory, np.uint32)
        pairs = pairs.astype(np.int64)
        rail = 4 * bit + ((pairs[:, :1] >> bit) & 1) + 2 * ((pairs[:, 1:] >> bit) & 1)  # (rows, 32): layout.row_rails
        index = WORDS_PER_SLOT * (np.arange(len(pairs)) - np.repeat(at[:-1], rows))  # each launch's first cell of a row
        layer, head, slot, _ = cell_location(index, self.cm.layout.get("memory_first_layer", L_MEM0))
        mem = np.stack(np.broadcast_arrays(layer[:, None], head[:, None], slot[:, None], rail), -1).reshape(-1, 4)
        # The parameter bank: parameter j in row j, as dual rails (2i set for bit i, else 2i + 1).
        pl, ph = self.cm.param_head
        counts = [len(launch.params) for launch in launches]
        values = np.asarray([v & 0xFFFFFFFF for launch in launches for v in launch.params], np.int64).reshape(-1, 1)
        prail = 2 * bit + 1 - ((values >> bit) & 1)
        prow = np.broadcast_to((np.arange(len(values)) - np.repeat(np.cumsum([0] + counts)[:-1], counts))[:, None],
                               prail.shape)
        par = np.stack([np.full_like(prail, pl), np.full_like(prail, ph), prow, prail], -1).reshape(-1, 4)
        owner = np.concatenate([np.repeat(np.arange(len(launches)), 32 * np.asarray(rows, np.int64)),
                                np.repeat(np.arange(len(launches)), 32 * np.asarray(counts, np.int64))])
        return h, np.concatenate([mem, par]).astype(np.int64), owner

    def _first_input(self, launch: Launch) -> np.ndarray:
        """The launch constants in their fields, every other dimension -8 and `one` +8; the same
        array for every launch of one shape (callers copy it: np.stack)."""
        k = launch.kernel
        bx, by, bz = launch.block
        gx, gy, gz = launch.grid
        nt = bx * by * bz
        consts = dict(bx=bx, by=by, bz=bz, gx=gx, gy=gy, gz=gz, nt=nt, nw=-(-nt // W),
                      gsize=len(launch.memory), shw=launch.shared_words, nparam=len(launch.params),
                      entry=k.entry, kend=k.end, phase=1 << PHASES.index("blkinit"))
        key = tuple(consts.values())
        h = self._inputs.get(key)
        if h is None:
            h = np.full(qwen.hidden, -8.0, dtype=np.float32)
            self.put(h, "one", 1)
            for name, v in consts.items():
                self.put(h, name, v)
            h.flags.writeable = False
            self._inputs[key] = h
        return h

    def written_heads(self, launch: Launch) -> np.ndarray:
        """bool (layers, heads): the heads whose rows `launch` can ever write (layout.written_heads);
        the batched step holds only these.  Kept per (cells, shared cells, threads), the only
        facts of a launch it depends on: a batch asks for thousands of launches."""
        bx, by, bz = launch.block
        key = (len(launch.memory), launch.shared_words, bx * by * bz)
        got = self._written.get(key)
        if got is None:
            names = [L["heads"] for L in self.cm.layout.get("layers", [])]  # none named: every head held
            rows = written_heads(names, self.cm.layout.get("memory_first_layer", L_MEM0), *key)
            got = self._written[key] = np.ones((len(self.cm.layers), qwen.linear_heads), bool)
            for L, row in enumerate(rows):
                got[L, :len(row)] = row
        return got

    def cell_rows(self, count: int) -> np.ndarray:
        """The (layer, head, row) of the state rows that hold cells 0..count-1 (two a row)."""
        mem0 = self.cm.layout.get("memory_first_layer", L_MEM0)
        layer, head, slot, _ = cell_location(np.arange(0, count, WORDS_PER_SLOT, dtype=np.int64), mem0)
        return np.stack([layer, head, slot], 1)

    @staticmethod
    def cells_from_rails(rails: np.ndarray, count: int) -> np.ndarray:
        """Cells 0..count-1 from their rows' set rails (bool (..., rows, >= ROW_RAILS)): bit i of
        word w is set when one of group i's rails with bit w in its index is set (rails 4i+1,
        4i+3 for word 0; 4i+2, 4i+3 for 1)."""
        pow2 = 1 << np.arange(32, dtype=np.uint64)
        words = [np.logical_or.reduce([rails[..., c:ROW_RAILS:4] for c in ONEHOT4_RAILS[w]]) @ pow2
                 for w in range(2)]
        out = np.stack(words, axis=-1)
        return out.reshape(*out.shape[:-2], -1)[..., :count].astype(np.uint32)

    def read_cells(self, count: int, recurrent_state=None) -> np.ndarray:
        """Cells 0..count-1 from the memory states (cells_from_rails).
        `recurrent_state(layer)` gives a layer's states (default: the stepped layers')."""
        recurrent_state = recurrent_state or self.net.recurrent_state
        if count == 0:
            return np.zeros(0, dtype=np.uint32)
        where = self.cell_rows(count)
        layers = sorted(set(where[:, 0].tolist()))
        states = np.stack([np.asarray(recurrent_state(L)) for L in layers])
        # A rail is set at V and clear at 0; the midpoint, not the sign, decides, because an
        # erased rail is exactly 0 only with exact weights (under weight noise the delta rule
        # leaves old * (1 - beta |k|^2), a few ulps of either sign).
        rows = states[np.searchsorted(layers, where[:, 0]), where[:, 1], where[:, 2], :ROW_RAILS] > self.cm.value_level / 2
        return self.cells_from_rails(rows, count)

    def written_word(self, f: dict[str, int], addr: int) -> int:
        """The word a store or atomic at `addr` wrote, from the pending row's rails (fields
        mw_row0..3, 32 rails each)."""
        rails = sum(f[f"mw_row{k}"] << (32 * k) for k in range(ROW_RAILS // 32))
        return decode_word([(rails >> r) & 1 for r in range(ROW_RAILS)], addr % WORDS_PER_SLOT)

    def decode_bits(self, bits: np.ndarray) -> np.ndarray:
        """Every field's value from rows of gathered signs (`bits[..., i]` is the sign of
        dimension `all_dims[i]`), as an int64 array (..., fields) in `names` order."""
        return np.add.reduceat(bits * self._all_pow, self._starts, axis=-1)

    def run(self, launch: Launch, max_steps: int = 1_000_000, on_step=None, states=None) -> NeuralResult:
        """`states` (a qgcc.engines.states.StateDump) receives every step's input, the initial
        and the final recurrent states, also when the launch faults."""
        t0 = time.perf_counter()
        h, init = self.initial(launch)
        self.net.reset(init)
        if states is not None:
            states.start(self.cm.num_layers, self.net.recurrent_state)
        tracker = Tracker(self, launch, max_steps, on_step, self.decode(h))
        try:
            while True:
                limit = tracker.at_limit()
                if states is not None:
                    states.step(h)
                h = self.net.step(h)
                if limit:
                    # This step shows which warp and PC would run next; the run ends here,
                    # so its effects are never used.
                    raise tracker.limit_fault(self.decode(h))
                if tracker.feed(self.decode(h)):
                    break
        except MemoryFault as fault:  # the printf records so far (runtime/printf.py)
            fault.memory = self.read_cells(len(launch.memory))
            raise
        finally:
            if states is not None:
                states.finish(h, self.cm.num_layers, self.net.recurrent_state)
        mem = self.read_cells(len(launch.memory))
        return NeuralResult(mem, tracker.finish(), tracker.netsteps, time.perf_counter() - t0)

    def cm_code(self, pc: int):
        """The network's instruction at `pc`, decoded once (every finished instruction asks)."""
        ins = self._decoded.get(pc)
        if ins is None:
            ins = self._decoded[pc] = decode(self.cm.code[pc])
        return ins


RUN, HALT = 1 << PHASES.index("run"), 1 << PHASES.index("halt")


class Tracker:
    """One launch's host-side bookkeeping, fed one decoded step at a time.

    Shared by the one-launch loop (Host.run) and the batched runner (engines.batch), so
    a launch's records, statistics and faults do not depend on how its steps were
    computed.  `feed` takes the fields of one step's output and says whether the
    launch halted; it raises the launch's fault.
    """

    def __init__(self, host: Host, launch: Launch, max_steps: int, on_step, first: dict[str, int]):
        self.host, self.launch, self.max_steps, self.on_step = host, launch, max_steps, on_step
        self.code = launch.program.code
        self.stats = Stats()
        self.rec: StepRecord | None = None
        self.instr_steps = 0
        self.netsteps = 0
        self.last_active: dict[tuple[int, int], int] = {}
        self.f = first  # the fields of the next step's input

    def _block(self) -> int:
        gx, gy, _ = self.launch.grid
        f = self.f
        return f["ctax"] + gx * (f["ctay"] + gy * f["ctaz"])

    def at_limit(self) -> bool:
        """The next step would run an instruction beyond --max-steps."""
        return self.instr_steps >= self.max_steps and self.f["phase"] == RUN

    def limit_fault(self, nxt: dict[str, int]) -> Fault:
        """The step-limit (or barrier-deadlock) fault, located at the instruction that would run
        next: `nxt` are the fields of one more step, which shows the warp and PC it issues.

        The waiting and ready warp masks are the network's scheduler state."""
        wait, ready = self.f["wait"], self.f["ready"]
        pc, warp = nxt["tr_pc"], nxt["tr_w"]
        line = self.code[pc].line if pc < len(self.code) else None
        return step_limit_fault(self.max_steps, [w for w in range(NWARP) if wait >> w & 1],
                                [w for w in range(NWARP) if ready >> w & 1],
                                block=self._block(), warp=warp, pc=pc, line=line, step=self.instr_steps)

    def feed(self, f: dict[str, int]) -> bool:
        """The fields of the output of one step (whose input was the previous output)."""
        block, phase_in, wait_in = self._block(), self.f["phase"], self.f["wait"]
        self.f = f
        self.netsteps += 1
        if self.netsteps > 64 * self.max_steps + 10_000:
            raise StepLimitFault("the network did not halt", step=self.instr_steps)
        flt = f["fault"]
        stats, code = self.stats, self.code
        if phase_in == RUN:
            pc, act, warp = f["tr_pc"], f["tr_act"], f["tr_w"]
            if flt:
                raise self._fault(flt, f, block, warp, pc, act)
            if self.rec is None:
                self.rec = StepRecord(step=self.instr_steps, block=block, warp=warp, pc=pc, active=act)
            rec = self.rec
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
                rec.mem.append(MemAccess(lane, kind, addr, self.host.written_word(f, addr)))
                if kind == "atom":
                    stats.atomics += 1
                else:
                    stats.stores += 1
            if f["tr_done"]:
                self._finish(rec, f)
                if f["wait"] == 0 and (wait_in or ins.op is Op.BAR):
                    rec.barrier = "release"  # every live lane had arrived: the network freed them
                if self.on_step is not None:
                    self.on_step(rec)
                self.rec = None
                self.instr_steps += 1
        elif flt:
            raise self._fault(flt, f, block, None, None, None)
        return f["phase"] == HALT

    def finish(self) -> Stats:
        self.stats.steps = self.stats.warp_instructions = self.instr_steps
        return self.stats

    def _finish(self, rec: StepRecord, f: dict[str, int]) -> None:
        """Presentation flags, decoded from the network's own fields."""
        key = (rec.block, rec.warp)
        prev = self.last_active.get(key, 0)
        rec.reconverged = prev != 0 and (rec.active & ~prev) != 0 and (prev & ~rec.active) == 0
        self.last_active[key] = rec.active
        ins = self.host.cm_code(rec.pc)
        if ins.op in (Op.BRZ, Op.BRNZ, Op.JR):
            pcs = {f[f"wt_pc{l}"] for l in range(W) if (rec.active >> l) & 1}
            if len(pcs) > 1:
                rec.diverged = True
                self.stats.divergent_steps += 1
        if ins.op is Op.BAR:
            self.stats.barrier_waits += 1
            rec.barrier = "wait"

    def _fault(self, flt: int, f: dict[str, int], block, warp, pc, active) -> Fault:
        launch, code, step = self.launch, self.code, self.instr_steps
        lane = f["tr_lane"]
        line = code[pc].line if pc is not None and pc < len(code) else None
        ctx = dict(block=block, warp=warp, lane=lane, pc=pc, line=line, step=step)
        if flt & 1:
            addr = f["tr_addr"]
            where = memory_map(len(launch.memory), launch.shared_words)
            op = code[pc].op if pc is not None and pc < len(code) else None
            what = {Op.LD: "load from", Op.ST: "store to", Op.ATOM: "atomic on"}.get(op, "access to")
            fault = MemoryFault(f"out-of-bounds {what} cell {addr:#x} ({where})", **ctx)
            fault.address = addr  # a failing assert's band (runtime/printf.py)
            return fault
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
