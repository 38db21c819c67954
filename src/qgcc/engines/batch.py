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
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass

import numpy as np

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


@dataclass
class _Slot:
    index: int
    launch: Launch
    tracker: Tracker | None  # None while the bulk bookkeeping (engines.bulk) sums its steps
    t0: float
    row: int = 0  # the first row of the current chunk its tracker reads


class BatchRunner:
    LOAD_GROUP = 256  # launches loaded with one transfer a layer (bounds the host's buffers)

    def __init__(self, network: LinkedNetwork, width: int, device: str = "cpu", chunk: int | None = None,
                 lowp: bool | None = None, fused: bool = False, launches: list[Launch] = (), phased: bool = False):
        """`launches`: those it will run, if known, so that the slots' heads are sized before a
        CUDA graph is captured (else the first `run` sizes them and captures it again).
        `fused` / `phased`: the step as Triton kernels (engines/fused.py / engines/phased.py)."""
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

    def _heads(self, launches: list[Launch], layers) -> list[int]:
        """Per layer, the most head blocks any of `launches` needs (Host.written_heads) of the
        used heads of `layers` (neural_batch's)."""
        held = {id(x): x for x in map(self.host.written_heads, launches)}  # shared by equal shapes
        return [max((int(x[i, :R.nh].sum()) for x in held.values()), default=0) for i, R in enumerate(layers)]

    def run(self, launches: list[Launch], max_steps: int, on_step=None) -> list[NeuralResult | Fault]:
        """Each launch's result (or its fault), in the order given.  `on_step` gets every
        launch's trace records (in order within a launch), up to K steps late; without it the
        slots' statistics are summed for all slots at once (engines.bulk)."""
        from .bulk import BulkTracker
        from .premises import flag_text

        host, layers, names = self.host, self.layers, self.host._names
        self.max_steps, self.on_step = max_steps, on_step
        layers.reserve(self._heads(launches, layers.layers))
        results: list[NeuralResult | Fault | None] = [None] * len(launches)
        queue = deque(enumerate(launches))
        slots: list[_Slot | None] = [None] * self.width
        bulk = BulkTracker(host, self.width, launches[0].program.code, max_steps) \
            if on_step is None and launches else None
        grid = np.ones((self.width, 3), np.int64)
        while queue or any(s is not None for s in slots):
            self._fill(queue, slots, bulk, grid)
            values, flags = layers.run()  # (K, B, fields), decoded on the device
            for b, slot in enumerate(slots):
                if slot is not None and flags[b]:
                    raise StepError(f"launch {slot.index + 1} of the batch: {flag_text(int(flags[b]))} "
                                    "(a premise of the batched step's exactness)")
            if bulk is not None:
                summed = np.array([s is not None and s.tracker is None for s in slots])
                for b, row in bulk.advance(values, summed, grid).items():
                    slot = slots[b]
                    slot.tracker, slot.row = bulk.tracker(b, host, slot.launch, names), row
            halted: list[int] = []
            for b, slot in enumerate(slots):
                if slot is None or slot.tracker is None:
                    continue
                outcome = self._advance(slot, values[slot.row:, b].tolist(), names)
                slot.row = 0
                if outcome is True:
                    halted.append(b)
                elif outcome is not None:
                    if isinstance(outcome, MemoryFault):  # the printf records so far, as Host.run gives them
                        outcome.memory = self._memories([slot], [b])[0]
                    results[slot.index] = outcome
                    layers.stop(b)
                    slots[b] = None
            if halted:  # their memory, read for all of them at once
                for b, mem in zip(halted, self._memories([slots[b] for b in halted], halted)):
                    slot = slots[b]
                    tr = slot.tracker
                    results[slot.index] = NeuralResult(mem, tr.finish(), tr.netsteps, time.perf_counter() - slot.t0)
                    layers.stop(b)
                    slots[b] = None
        return results  # type: ignore[return-value]

    def _fill(self, queue, slots: list[_Slot | None], bulk, grid: np.ndarray) -> None:
        """Start the next launches in the free slots, loaded onto the device together."""
        host, names = self.host, self.host._names
        free = [b for b in range(self.width) if slots[b] is None][:len(queue)]
        for lo in range(0, len(free), self.LOAD_GROUP):
            group = free[lo:lo + self.LOAD_GROUP]
            t0 = time.perf_counter()
            todo = [queue.popleft() for _ in group]
            starts = [host.initial_rails(launch) for _, launch in todo]
            h = np.stack([s[0] for s in starts])
            self.layers.load_many(np.array(group), h, [s[1] for s in starts],
                                  [host.written_heads(launch) for _, launch in todo])
            firsts = host.decode_bits(h[:, host._all_dims] > 0)
            for b, (i, launch), first in zip(group, todo, firsts):
                grid[b] = launch.grid
                if bulk is None:
                    tracker = Tracker(host, launch, self.max_steps, self.on_step, dict(zip(names, first.tolist())))
                    slots[b] = _Slot(i, launch, tracker, t0)
                else:
                    bulk.start(b, dict(zip(names, first.tolist())), names)
                    slots[b] = _Slot(i, launch, None, t0)

    def _memories(self, done: list[_Slot], where: list[int]) -> list[np.ndarray]:
        """The memory of each halted launch, from its slot's state rows (one gather for all)."""
        count = max(len(s.launch.memory) for s in done)
        if count == 0:
            return [np.zeros(0, np.uint32) for _ in done]
        rails = self.layers.read_rails(np.array(where), self.host.cell_rows(count))
        cells = self.host.cells_from_rails(rails, count)
        return [cells[j, :len(s.launch.memory)] for j, s in enumerate(done)]

    def _advance(self, slot: _Slot, rows: list[list[int]], names: list[str]):
        """Feed one slot's decoded steps to its tracker: True when its launch halted (its
        memory is read with the others'), its fault, or None while it runs."""
        tr = slot.tracker
        try:
            for row in rows:
                f = dict(zip(names, row))
                if tr.at_limit():
                    raise tr.limit_fault(f)
                if tr.feed(f):
                    return True
        except Fault as fault:
            return fault
        return None
