"""Many launches of one program through the batched step (qgrun --batch with --batch-width).

The runner keeps `width` slots busy: a launch starts in a free slot (its first input and
recurrent states loaded there), every slot steps together on the device, and the host
reads the decoded fields of all slots once per K steps.  Each launch's fields go through
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
from ..trace import Fault
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
    def __init__(self, network: LinkedNetwork, width: int, device: str = "cpu", chunk: int | None = None,
                 lowp: bool | None = None):
        from .neural_batch import BatchedLayers, row_layers

        self.host = Host(network, None)
        fields = network.fields
        chunk = chunk or (16 if device == "cuda" else 1)
        host = self.host
        if lowp is None:
            lowp = device == "cuda"
        self.layers = BatchedLayers(row_layers(network, device, lowp), width, host._all_dims,
                                    fields["phase"][PHASES.index("halt")],
                                    fields["fault"], device, chunk, lowp=lowp,
                                    decode=(host._all_pow, host._starts), level=network.value_level)
        self.width, self.chunk = width, chunk

    def run(self, launches: list[Launch], max_steps: int, on_step=None) -> list[NeuralResult | Fault]:
        """Each launch's result (or its fault), in the order given.  `on_step` gets every
        launch's trace records (in order within a launch), up to K steps late; without it the
        slots' statistics are summed for all slots at once (engines.bulk)."""
        from .bulk import BulkTracker
        from .neural_batch import flag_text

        host, layers, names = self.host, self.layers, self.host._names
        results: list[NeuralResult | Fault | None] = [None] * len(launches)
        queue = deque(enumerate(launches))
        slots: list[_Slot | None] = [None] * self.width
        bulk = BulkTracker(host, self.width, launches[0].program.code, max_steps) \
            if on_step is None and launches else None
        grid = np.ones((self.width, 3), np.int64)
        while queue or any(s is not None for s in slots):
            for b in range(self.width):
                if slots[b] is None and queue:
                    i, launch = queue.popleft()
                    t0 = time.perf_counter()
                    h, init = host.initial(launch)
                    layers.load(b, h, init)
                    first = host.decode(h)
                    grid[b] = launch.grid
                    if bulk is None:
                        slots[b] = _Slot(i, launch, Tracker(host, launch, max_steps, on_step, first), t0)
                    else:
                        bulk.start(b, first, names)
                        slots[b] = _Slot(i, launch, None, t0)
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
            for b, slot in enumerate(slots):
                if slot is None or slot.tracker is None:
                    continue
                outcome = self._advance(b, slot, values[slot.row:, b].tolist(), names)
                slot.row = 0
                if outcome is not None:
                    results[slot.index] = outcome
                    layers.stop(b)
                    slots[b] = None
        return results  # type: ignore[return-value]

    def _advance(self, b: int, slot: _Slot, rows: list[list[int]], names: list[str]):
        """Feed one slot's decoded steps to its tracker; its result or fault when it ended."""
        tr = slot.tracker
        try:
            for row in rows:
                f = dict(zip(names, row))
                if tr.at_limit():
                    raise tr.limit_fault(f)
                if tr.feed(f):
                    mem = self.host.read_cells(len(slot.launch.memory),
                                               lambda layer: self.layers.recurrent_state(b, layer))
                    return NeuralResult(mem, tr.finish(), tr.netsteps, time.perf_counter() - slot.t0)
        except Fault as fault:
            return fault
        return None
