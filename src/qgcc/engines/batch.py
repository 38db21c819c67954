"""Many launches of one program through the batched step (qgrun --batch with --batch-width).

The runner keeps `width` slots busy: a launch starts in a free slot (its first input and
recurrent states loaded there), every slot steps together on the device, and the host
reads the decoded fields of all slots once per K steps.  A slot holds the state heads its
launch can write (Host.written_heads), in blocks of a pool a layer: every slot is given as
many blocks of a layer as the most any of the runner's launches needs (`reserve`, when the
runner is built and again if a later `run` needs more; never fewer).  Each launch's fields go through
its own Tracker (engines.host), the same bookkeeping as a launch run alone, so its
result, statistics and faults are the ones `Host.run` gives.  A slot whose launch ended
is frozen on the device and refilled with the next launch.

With overlap (default on CUDA) the device steps the next chunk while the host reads this
one: two page-locked buffers, one chunk in flight (BatchedLayers.enqueue / collect).  A
slot's rows of the chunk being read may then belong to the launch before the one it holds
now; `_run` says what is done when, and why that is the launch `Host.run` would give.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass

import numpy as np

from ..diagnostics import UsageError
from ..link.layout import PHASES
from ..link.linker import LinkedNetwork
from ..link.weights import VALUE_LEVEL
from ..runtime.launch import Launch
from ..trace import Fault, MemoryFault
from .host import Host, NeuralResult, Tracker
from .neural_c import StepError


def batchable(network: LinkedNetwork) -> bool:
    """The batched step relies on the exactness argument, which holds for networks linked with
    the exact encoding; older .qg files run one launch at a time."""
    return network.value_level == VALUE_LEVEL


def batchable_with(network: LinkedNetwork, step: str) -> bool:
    """batchable(network); a Triton step, which has no one-launch fallback, refuses an older
    network with the fix instead of returning False."""
    if batchable(network):
        return True
    if step != "unfused":
        raise UsageError(f"--step {step}: this .qg predates the exact encoding the batched step relies on; "
                         "link it again with qgcc")
    return False


def runner_key(width: int, device: str, step: str) -> tuple:
    """Where runner_for keeps a runner in network.hosts."""
    return ("neural-batch", device, width, step)


def runner_for(network: LinkedNetwork, width: int, device: str, step: str = "unfused",
               launches: list[Launch] = ()) -> "BatchRunner":
    """The network's runner of this width, device and step (qgcc.engines.STEPS), built on first
    use and then kept with the network: its layers, weights and CUDA graph serve every later
    launch of the program.  The Triton steps run the device's form (bfloat16 parts) on the CPU
    too, since that is the form they are tested in."""
    key = runner_key(width, device, step)
    runner = network.hosts.get(key)
    if runner is None:  # sized for these launches before its CUDA graph is captured
        kw = {} if step == "unfused" else {"lowp": True, step: True}
        runner = network.hosts[key] = BatchRunner(network, width, device, launches=list(launches), **kw)
    return runner


@dataclass
class _Slot:
    index: int
    launch: Launch
    first: dict[str, int]  # the fields of its first input, where its bookkeeping starts
    t0: float
    tracker: Tracker | None = None  # None while the bulk bookkeeping (engines.bulk) sums its steps
    row: int = 0  # the first row of the current chunk its tracker reads
    memory: np.ndarray | None = None  # its cells, read once the device froze it (halt or fault)


class BatchRunner:
    LOAD_GROUP = 256  # launches loaded with one transfer a layer (bounds the host's buffers)

    def __init__(self, network: LinkedNetwork, width: int, device: str = "cpu", chunk: int | None = None,
                 lowp: bool | None = None, fused: bool = False, launches: list[Launch] = (), phased: bool = False,
                 overlap: bool | None = None):
        """`launches`: those it will run, if known, so that the slots' heads are sized before a
        CUDA graph is captured (else the first `run` sizes them and captures it again).
        `fused` / `phased`: the step as Triton kernels (engines/fused.py / engines/phased.py).
        `overlap`: step the next chunk while the host reads one (default: on CUDA)."""
        from .neural_batch import BatchedLayers, row_layers

        self.host = Host(network, None)
        fields = network.fields
        chunk = chunk or (16 if device == "cuda" else 1)
        host = self.host
        if lowp is None:
            lowp = device == "cuda"
        rows = row_layers(network, device, lowp)
        self.layers = BatchedLayers(rows, width, host._all_dims,
                                    fields["phase"][PHASES.index("halt")],
                                    fields["fault"], device, chunk, lowp=lowp,
                                    decode=(host._all_pow, host._starts), level=network.value_level,
                                    fused=fused, heads_per_slot=self._heads(launches, rows), phased=phased)
        self.width, self.chunk = width, chunk
        # The device steps the next chunk while the host reads this one (default on CUDA; on the
        # CPU the same order of work, computed synchronously, which is how it is tested).
        self.overlap = device == "cuda" if overlap is None else overlap

    def _heads(self, launches: list[Launch], layers) -> list[int]:
        """Per layer, the most head blocks any of `launches` needs (Host.written_heads) of the
        used heads of `layers` (neural_batch's)."""
        held = {id(x): x for x in map(self.host.written_heads, launches)}  # shared by equal shapes
        return [max((int(x[i, :R.nh].sum()) for x in held.values()), default=0) for i, R in enumerate(layers)]

    def run(self, launches: list[Launch], max_steps: int, on_step=None) -> list[NeuralResult | Fault]:
        """Each launch's result (or its fault), in the order given.  `on_step` gets every
        launch's trace records (in order within a launch), up to K steps late (2K with
        overlap); without it the slots' statistics are summed for all slots at once (engines.bulk)."""
        self.layers.drain()  # a chunk that a run which raised left in flight
        try:
            return self._run(launches, max_steps, on_step)
        finally:
            self.layers.drain()  # the chunk started for launches the host then ended at the step limit

    def _run(self, launches: list[Launch], max_steps: int, on_step) -> list[NeuralResult | Fault]:
        """Chunk j is read, then every slot whose launch the device froze in it (halt, fault)
        has its memory read and is refilled, while no chunk runs (a frozen slot's bits are
        the same whenever read, and a load or read then waits for no chunk); then (with
        overlap) chunk j + 1 is started before the host feeds chunk j's rows to the launches
        they belong to (`owners`: a refilled slot's rows of chunk j are its previous launch's,
        whose bookkeeping ends before the new launch's begins).  A launch the host ends itself
        (the step limit) still runs on the device during j + 1, as it ran to the end of its
        chunk before: it is stopped after j + 1, its slot is empty while j + 1 is read (its rows
        and flags there are ignored) and refilled then.  Slots are loaded only while no chunk
        is in flight, so every launch in a slot has its rows in the next chunk read."""
        from .bulk import BulkTracker

        layers = self.layers
        self.max_steps, self.on_step = max_steps, on_step
        layers.reserve(self._heads(launches, layers.layers))
        results: list[NeuralResult | Fault | None] = [None] * len(launches)
        queue = deque(enumerate(launches))
        slots: list[_Slot | None] = [None] * self.width
        self._bulk = BulkTracker(self.host, self.width, launches[0].program.code, max_steps) \
            if on_step is None and launches else None
        self._grid = np.ones((self.width, 3), np.int64)
        self._begin(self._fill(queue, slots))
        ahead = False  # the next chunk is in flight already
        while queue or any(s is not None for s in slots):
            if not ahead:
                layers.enqueue()
            chunk = layers.collect()
            owners = list(slots)  # the launches whose rows this chunk holds
            self._check(owners, chunk.flags)
            frozen = [b for b in np.flatnonzero(~chunk.running).tolist() if owners[b] is not None]
            self._read(owners, frozen)
            for b in frozen:  # their launches end in this chunk: the slots take the next launches now
                slots[b] = None
            started = self._fill(queue, slots)
            ahead = self.overlap and any(s is not None for s in slots)
            if ahead:
                layers.enqueue()
            self._process(owners, frozen, chunk.values, slots, results)
            self._begin(started)
            if not ahead:  # the slots the host freed, refilled before the next chunk
                self._begin(self._fill(queue, slots))
        return results  # type: ignore[return-value]

    def _check(self, owners: list[_Slot | None], flags: np.ndarray) -> None:
        """A premise flag of a launch whose rows the chunk holds stops the batch; one raised by
        a launch the host had ended at the step limit (running on during the next chunk, its
        slot empty then) is no launch's, and a load resets the slot's flags."""
        from .premises import flag_text

        for b in np.flatnonzero(flags).tolist():
            slot = owners[b]
            if slot is not None:
                raise StepError(f"launch {slot.index + 1} of the batch: {flag_text(int(flags[b]))} "
                                "(a premise of the batched step's exactness)")

    def _read(self, owners: list[_Slot | None], frozen: list[int]) -> None:
        """The memory of the launches the device froze in this chunk (the halted ones' result, a
        memory fault's printf records so far), one gather for all, before the next chunk runs:
        a frozen slot's bits are the same whenever read, and no read waits for a chunk."""
        done = [owners[b] for b in frozen]
        if done:
            for slot, mem in zip(done, self._memories(done, frozen)):
                slot.memory = mem

    def _process(self, owners: list[_Slot | None], frozen: list[int], values: np.ndarray,
                 slots: list[_Slot | None], results: list) -> None:
        """Feed each launch its rows of this chunk; record the launches that end."""
        host, names, bulk = self.host, self.host._names, self._bulk
        if bulk is not None:
            summed = np.array([s is not None and s.tracker is None for s in owners])
            for b, row in bulk.advance(values, summed, self._grid).items():
                slot = owners[b]
                slot.tracker, slot.row = bulk.tracker(b, host, slot.launch, names), row
        for b, slot in enumerate(owners):
            if slot is None or slot.tracker is None:
                continue
            outcome = self._advance(slot, values[slot.row:, b], names)
            slot.row = 0
            if outcome is None:
                continue
            results[slot.index] = self._result(slot, outcome)
            if slots[b] is slot:  # the host ended it (the step limit): the device still runs it
                self.layers.stop(b)
                slots[b] = None
        for b in frozen:
            if results[owners[b].index] is None:
                raise StepError(f"launch {owners[b].index + 1} of the batch: the device stopped it, "
                                "but its fields show no halt or fault")

    def _result(self, slot: _Slot, outcome) -> NeuralResult | Fault:
        """A halted launch's result, or its fault (a memory fault with the memory at the fault,
        the printf records so far, as Host.run gives them)."""
        if outcome is True or isinstance(outcome, MemoryFault):
            if slot.memory is None:
                raise StepError(f"launch {slot.index + 1} of the batch: its fields show a halt or fault, "
                                "but the device did not stop it")
            if outcome is not True:
                outcome.memory = slot.memory
                return outcome
            tr = slot.tracker
            return NeuralResult(slot.memory, tr.finish(), tr.netsteps, time.perf_counter() - slot.t0)
        return outcome

    def _fill(self, queue, slots: list[_Slot | None]) -> list[tuple[int, _Slot]]:
        """Load the next launches into the free slots, together; their bookkeeping begins
        later (`_begin`), once the previous occupants' rows of the chunk being read are fed.
        The slots filled, with their launches."""
        host, names = self.host, self.host._names
        free = [b for b in range(self.width) if slots[b] is None][:len(queue)]
        for lo in range(0, len(free), self.LOAD_GROUP):
            group = free[lo:lo + self.LOAD_GROUP]
            t0 = time.perf_counter()
            todo = [queue.popleft() for _ in group]
            h, at, owner = host.initial_rails_many([launch for _, launch in todo])
            self.layers.load_many(np.array(group), h, at, [host.written_heads(launch) for _, launch in todo], owner)
            firsts = host.decode_bits(h[:, host._all_dims] > 0)
            for b, (i, launch), first in zip(group, todo, firsts):
                slots[b] = _Slot(i, launch, dict(zip(names, first.tolist())), t0)
        return [(b, slots[b]) for b in free]

    def _begin(self, started: list[tuple[int, _Slot]]) -> None:
        """Start the bookkeeping of newly loaded launches: a Tracker each, or the bulk sums."""
        for b, slot in started:
            self._grid[b] = slot.launch.grid
            if self._bulk is None:
                slot.tracker = Tracker(self.host, slot.launch, self.max_steps, self.on_step, slot.first)
            else:
                self._bulk.start(b, slot.first, self.host._names)

    def _memories(self, done: list[_Slot], where: list[int]) -> list[np.ndarray]:
        """The memory of each launch in `done`, from its slot's state rows (one gather for all)."""
        count = max(len(s.launch.memory) for s in done)
        if count == 0:
            return [np.zeros(0, np.uint32) for _ in done]
        rails = self.layers.read_rails(np.array(where), self.host.cell_rows(count))
        cells = self.host.cells_from_rails(rails, count)
        return [cells[j, :len(s.launch.memory)] for j, s in enumerate(done)]

    def _advance(self, slot: _Slot, rows: np.ndarray, names: list[str]):
        """Feed one slot's decoded steps to its tracker: True when its launch halted (its
        memory is read with the others'), its fault, or None while it runs.  Rows become
        dicts one at a time: a launch handed over at its halt reads one row of the chunk."""
        tr = slot.tracker
        try:
            for row in rows:
                f = dict(zip(names, row.tolist()))
                if tr.at_limit():
                    raise tr.limit_fault(f)
                if tr.feed(f):
                    return True
        except Fault as fault:
            return fault
        return None
