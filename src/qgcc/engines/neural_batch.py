"""The `neural` engine's batched step: B independent launches of one program stacked as a
batch dimension through the same layers (docs/engines.md, "Batched launches").

Each slot of the batch holds one launch: its hidden state (a row of `h`) and its
recurrent states (a slice of every layer's state tensor).  Every projection is one
matrix-matrix product over the stored nonzero blocks; by the exactness argument every
sum is an exact integer, so a row's numbers do not depend on the other rows or on how the
device orders its additions: each slot computes exactly what the launch computes alone.

One-hot rows: keys and queries are one-hot (the C step's premise, checked here on the
device), so the delta rule reads and rewrites one row of each head's state and a query
reads one row.  The step gathers those rows by index, updates them and scatters them back
(moving O(rows touched) bytes, not the whole 128 x 128 state), with the C step's own
formulas, so every state stays bit-identical to the C step's.  A layer whose decay is not
exactly 1 (every row changes) takes the full-state form.

Heads per slot: a one-hot-row layer's state is a pool of head blocks (128 rows each) and a
table (slot, head) -> the block's first row.  A slot holds blocks only for the heads its
launch can write (layout.written_heads: its cells, shared cells and warps); every other
head maps to the pool's block 0, all +0, which is what the C step reads from a row never
written.  Block 0 is never written (rows go back to held heads only), and a key that would
write a head the slot does not hold sets premise NOT_HELD, which stops the batch.

Exact reduced precision (engines/lowp.py): the projections whose input is exactly +-1
(gate/up, the mixer's in_proj) run with bfloat16 operands and float32 accumulation where
that is exact, checked at load; down_proj and out_proj stay float32.

A slot that is not running (free, halted or faulted) is frozen: its new hidden state and
rows are discarded, so they keep their bits.  After every step the signs of the host's
fields are gathered by one index into a (K, B, fields) buffer, the halt/fault flags clear
the slot's running bit, and the premises are checked into a per-slot flag word; the host
reads both once per K steps, with no transfer between layers.  On CUDA one step is
captured once as a CUDA graph over these static buffers and replayed K times per read
(the fields land in the row a device counter names); on the CPU the steps run eagerly
(`graph=True` on the CPU is a ValueError).
"""

from __future__ import annotations

from collections import deque
from typing import NamedTuple

import numpy as np
import torch
import torch.nn.functional as F

from ..link.weights import LayerWeights
from ..qwen35 import QWEN35_2B as qwen
from .neural_torch import EPS, FastLayer, _rms
from .rowform import Rails, _RowLayer, exact_cuda_products, row_layers  # noqa: F401  (the step's API)

from .premises import FLAG_TEXT, HD, INEXACT_ACT, INEXACT_NORM, NOT_HELD, NOT_ONE_HOT, NOT_PM8, NOT_RAIL, QSCALE


def _silu_exact(x: torch.Tensor) -> torch.Tensor:
    """SiLU at its exact arguments, as the C step evaluates it: x from 17 up, -0 from -89
    down, x / 2 == x at +-0; x * 0 gives both of the last two (a negative times +0 is -0)."""
    return torch.where(x >= 17.0, x, x * 0.0)


def _sigmoid_exact(x: torch.Tensor) -> torch.Tensor:
    return torch.where(x >= 17.0, torch.ones_like(x), torch.where(x <= -89.0, torch.zeros_like(x),
                                                                  torch.full_like(x, 0.5)))


def _pow2(a: torch.Tensor) -> torch.Tensor:
    """As the C step's is_pow2: a != 0 and frexp(|a|)'s mantissa is 0.5."""
    m, _ = torch.frexp(a.abs())
    return (a != 0) & (m == 0.5)


def _pow4(a: torch.Tensor) -> torch.Tensor:
    """As the C step's is_pow4: a > 0, frexp's mantissa 0.5 and (exponent - 1) even."""
    m, e = torch.frexp(a)
    return (a > 0) & (m == 0.5) & ((e - 1) % 2 == 0)


_EDGES: dict[torch.device, torch.Tensor] = {}


def _inexact(x: torch.Tensor) -> torch.Tensor:
    """Arguments where SiLU/sigmoid are not exact: strictly between -89 and 0 or 0 and 17.
    Counting the edges at or below x (-89 + ulp, 0, the least positive float, 17) gives an
    odd count exactly there, in one pass."""
    edges = _EDGES.get(x.device)
    if edges is None:
        edges = _EDGES[x.device] = torch.tensor(
            [np.nextafter(np.float32(-89), np.float32(0)), 0.0, np.nextafter(np.float32(0), np.float32(1)), 17.0],
            dtype=torch.float32, device=x.device)
    return (torch.bucketize(x, edges, right=True) & 1).bool()


def _one_hot(pre: torch.Tensor):
    """(index of the hot entry, there is one, its normalised value, bad) per head, as the C
    step's one_hot: exactly one entry >= 17, a power of two (then it is the maximum)."""
    count = (pre >= 17.0).sum(-1)
    a, idx = pre.max(-1)
    one = count == 1
    bad = (count > 1) | (one & ~_pow2(a))
    value = a * (1.0 / torch.sqrt(a * a + EPS))
    return idx, one, value, bad


def _sorted_set(a: np.ndarray) -> np.ndarray:
    """np.unique(a) for int64 positions: sorting and dropping repeats, which is several times
    faster here than numpy 2's hashing np.unique (a batch loads thousands of launches)."""
    a = np.sort(a)
    return a[np.diff(a, prepend=a[:1] - 1) != 0] if len(a) else a


class Chunk(NamedTuple):
    """What the host reads of K steps (BatchedLayers.collect)."""
    values: np.ndarray  # (K, B, fields)
    flags: np.ndarray  # (B,) int32 premise flag words
    running: np.ndarray  # (B,) bool: the slot still runs after the chunk's last step


class BatchedLayers:
    """`width` slots of the compiled layers, stepped together K steps at a time.

    `dims` are the hidden dimensions whose signs the host decodes (Host._all_dims);
    `halt_dim` is phase.halt's dimension and `fault_dims` the fault field's.  `lowp`:
    bfloat16 products where exact (default on CUDA; on the CPU the same parts in float32).
    `decode` = (each dim's power of two, each field's first position in `dims`): the fields'
    values are then computed on the device, and `run` returns them instead of the signs.
    `layers` are LayerWeights, or the prepared layers of `row_layers` (then `lowp` is theirs).
    `level`: the rail level of the exact encoding (LinkedNetwork.value_level); given, the
    states of the one-hot-row layers are held as bits (`Rails`), 16 bytes a row.
    `fused`: the step as a few Triton kernels a layer (engines/fused.py), the same bits.
    `phased`: the step as the fewest dependent kernels, reading only changed weight columns
    (engines/phased.py; for one launch or a few), the same bits.
    `heads_per_slot`: per layer, the head blocks each slot may hold (default: every used head;
    `reserve` grows it); a slot is loaded with the heads it holds (`held`, default all).
    """

    def __init__(self, layers: list[LayerWeights] | list[_RowLayer], width: int, dims: np.ndarray, halt_dim: int,
                 fault_dims: list[int], device: str = "cpu", chunk: int = 1, graph: bool | None = None,
                 lowp: bool | None = None, decode: tuple[np.ndarray, np.ndarray] | None = None,
                 level: float | None = None, fused: bool = False, heads_per_slot: list[int] | None = None,
                 phased: bool = False):
        self.device = torch.device(device)
        self.width, self.chunk = width, chunk
        if graph is None:
            graph = self.device.type == "cuda"
        if graph and self.device.type != "cuda":
            raise ValueError("CUDA graphs need --device cuda")
        if lowp is None:
            lowp = self.device.type == "cuda"
        if self.device.type == "cpu":
            torch.set_num_threads(1)  # as neural_torch: extra threads only contend on these sizes
        if self.device.type == "cuda":
            exact_cuda_products()
        self.layers = [lw if isinstance(lw, _RowLayer) else _RowLayer(lw, self.device, lowp, i)
                       for i, lw in enumerate(layers)]
        self.notes = [n for L in self.layers for n in L.notes]
        dev = self.device
        self.h = torch.full((width, qwen.hidden), -8.0, device=dev)
        # Only the heads a layer uses change; the others keep their initial rows (host side).
        self.rails = Rails(level, dev) if level is not None else None
        self.packed = [bool(R.nh and R.rows and self.rails is not None) for R in self.layers]
        # One-hot-row layers: a pool of head blocks, block 0 all +0 (module docstring); the
        # full-state layers keep every head of every slot.
        self.pooled = [bool(R.nh and R.rows) for R in self.layers]
        want = [R.nh for R in self.layers] if heads_per_slot is None else heads_per_slot
        self.allot = [min(int(m), R.nh) if p else R.nh for m, R, p in zip(want, self.layers, self.pooled)]
        self.states = [self._pool(i, self.allot[i]) if self.pooled[i] else
                       torch.zeros(width, R.nh, HD, HD, device=dev) if R.nh else None
                       for i, R in enumerate(self.layers)]
        # Each (slot, head)'s first row in its layer's pool (0: block 0), on the device (static,
        # updated in place: a captured graph reads it) and on the host (loads and reads).
        self.rows0 = [torch.zeros(width, R.nh, dtype=torch.int32, device=dev) if p else None
                      for R, p in zip(self.layers, self.pooled)]
        self._rows0 = [np.zeros((width, R.nh), np.int32) if p else None for R, p in zip(self.layers, self.pooled)]
        self._fixed: list[dict[int, np.ndarray]] = [{} for _ in range(width)]
        self.running = torch.zeros(width, dtype=torch.bool, device=dev)
        self.flags = torch.zeros(width, dtype=torch.int32, device=dev)
        self._dims = torch.as_tensor(np.asarray(dims), dtype=torch.long, device=dev)
        self._decode = None
        if decode is None:
            self.bits = torch.zeros(chunk, width, len(dims), dtype=torch.bool, device=dev)
        else:
            pows, starts = (np.asarray(a, np.int64) for a in decode)
            ends = np.append(starts[1:], len(dims))
            self._decode = tuple(torch.as_tensor(a, device=dev) for a in (pows, starts, ends))
            self.bits = torch.zeros(chunk, width, len(starts), dtype=torch.int64, device=dev)
        self._halt = int(halt_dim)
        self._fault = torch.as_tensor(list(fault_dims), dtype=torch.long, device=dev)
        self._t = torch.zeros(1, dtype=torch.long, device=dev)  # the chunk's next row
        self._pinned = None  # two page-locked buffers: the host reads one chunk while the next is copied
        if self.device.type == "cuda" and decode is not None:
            self._pinned = [torch.empty(self.bits.numel() + 2 * width, dtype=torch.int64, pin_memory=True)
                            for _ in range(2)]
        self._pending: deque[tuple[torch.Tensor, torch.cuda.Event | None]] = deque()  # chunks not collected
        self._next = 0  # the page-locked buffer the next chunk is copied into
        self._fused = None
        if fused and phased:
            raise ValueError("a batch steps either fused or phased, not both")
        if fused:
            from .fused import FusedStep
            self._fused = FusedStep(self)
        elif phased:
            from .phased import PhasedStep
            self._fused = PhasedStep(self)
        self._graph = None
        if graph:
            self._capture()

    # ---- what it holds ----
    def slot_bytes(self, heads: list[int] | None = None) -> int:
        """Device bytes that belong to one slot: its head blocks (`heads_per_slot` of each layer,
        or `heads`: what a slot sized for those would hold), its head tables, full states,
        hidden row, fields and flags.  The pools' blocks 0 (2 KiB a layer) are the batch's."""
        heads = self.allot if heads is None else heads
        states = 0
        for i, (R, S) in enumerate(zip(self.layers, self.states)):
            if self.pooled[i]:
                states += min(int(heads[i]), R.nh) * S[0].numel() * S.element_size() + R.nh * 4
            elif S is not None:
                states += S[0].numel() * S.element_size()
        return states + self.h[0].numel() * 4 + self.bits[:, 0].numel() * self.bits.element_size() + 1 + 4

    def heads_held(self, held: np.ndarray) -> list[int]:
        """Per layer, the blocks a slot needs for `held` (bool (layers, heads): Host.written_heads)."""
        return [int(np.asarray(held)[i, :R.nh].sum()) if p else R.nh
                for i, (R, p) in enumerate(zip(self.layers, self.pooled))]

    def _pool(self, i: int, m: int) -> torch.Tensor:
        """Layer i's pool: block 0, then `m` blocks of each slot (slot b's j-th is 1 + b*m + j)."""
        last, dtype = (HD // 8, torch.uint8) if self.packed[i] else (HD, torch.float32)
        if (1 + self.width * m) * HD >= 2 ** 31:  # rows0 holds first rows as int32
            raise ValueError(f"layer {i}: {self.width} slots of {m} head blocks: too many rows for the head tables")
        return torch.zeros(1 + self.width * m, HD, last, dtype=dtype, device=self.device)

    def reserve(self, heads: list[int]) -> None:
        """Let every slot hold at least heads[i] blocks of layer i (never fewer than now): the
        pools grow, the slots' blocks move with their tables.  A captured CUDA graph holds the
        old pools' addresses, so it is captured again."""
        grew = False
        for i, R in enumerate(self.layers):
            old_m = self.allot[i]
            m = min(max(int(heads[i]), old_m), R.nh)
            if not self.pooled[i] or m == old_m:
                continue
            old, new = self.states[i], self._pool(i, m)
            shape = old.shape[1:]
            new[1:].view(self.width, m, *shape)[:, :old_m] = old[1:].view(self.width, old_m, *shape)
            rows, b = self._rows0[i].astype(np.int64), np.arange(self.width)[:, None]
            self._rows0[i] = np.where(rows != 0, rows + b * (m - old_m) * HD, 0).astype(np.int32)
            self.rows0[i].copy_(torch.from_numpy(self._rows0[i]))
            self.states[i], self.allot[i], grew = new, m, True
        if grew and self._graph is not None:
            self._capture()

    def _assign(self, i: int, slots: np.ndarray, held: np.ndarray, ranks: np.ndarray | None = None) -> np.ndarray:
        """Give `slots` blocks for their held heads of layer i (bool (n, nh)), cleared; the
        others map to block 0.  Returns their (n, nh) first rows.  `ranks`: cumsum(held) - 1,
        if the caller has it (load_many computes it for every layer at once)."""
        m = self.allot[i]
        ranks = np.cumsum(held, 1) - 1 if ranks is None else ranks
        if len(ranks) and ranks.shape[1] and ranks[:, -1].max() >= m:
            raise ValueError(f"layer {i}: a launch needs {ranks[:, -1].max() + 1} head blocks, a slot holds {m} "
                             "(BatchedLayers.reserve)")
        rows = np.where(held, (1 + slots[:, None] * m + ranks) * HD, 0).astype(np.int32)
        self._rows0[i][slots] = rows
        dev, S = self.device, self.states[i]
        self.rows0[i].index_copy_(0, torch.as_tensor(slots, device=dev), torch.from_numpy(rows).to(dev))
        lo, n = (int(slots[0]), len(slots)) if len(slots) else (0, 0)
        if n and np.array_equal(slots, np.arange(lo, lo + n)):
            S[1 + lo * m:1 + (lo + n) * m].zero_()
        elif n:
            S.index_fill_(0, torch.as_tensor((1 + slots[:, None] * m + np.arange(m)).reshape(-1), device=dev), 0)
        return rows

    def _held(self, i: int, n: int, held: np.ndarray | list[np.ndarray] | None) -> np.ndarray:
        """Layer i's held heads (bool (n, nh)) of `n` launches (`held`: (n, layers, heads), or a
        list of (layers, heads)), or every used head."""
        nh = self.layers[i].nh
        if held is None or n == 0:
            return np.ones((n, nh), bool)
        if isinstance(held, np.ndarray):
            return held[:, i, :nh]
        return np.stack([np.asarray(x)[i, :nh] for x in held])

    def weight_bytes(self) -> int:
        return sum(p.nbytes for R in self.layers for p in R.projections()) + \
            sum(t.numel() * t.element_size() for R in self.layers for t in (R.L.Wd,) + ((R.L.Wo,) if R.nh else ()))

    # ---- slots ----
    def load(self, slot: int, h: np.ndarray, recurrent_init: dict[int, np.ndarray],
             held: np.ndarray | None = None) -> None:
        """Start a launch in `slot`: its first input and initial recurrent states (as Host.initial),
        holding the heads `held` (bool (layers, heads): Host.written_heads; default every one)."""
        self.h[slot] = torch.from_numpy(np.ascontiguousarray(h, np.float32)).to(self.device)
        self._fixed[slot] = {}
        for i, (R, S) in enumerate(zip(self.layers, self.states)):
            s0 = recurrent_init.get(i)
            nh = R.nh
            if self.pooled[i]:
                mine = self._held(i, 1, None if held is None else [held])
                rows = self._assign(i, np.array([slot]), mine)[0]
                if s0 is not None:
                    part = np.asarray(s0, np.float32).reshape(qwen.linear_heads, HD, HD)[:nh]
                    if np.any(part[~mine[0]].view(np.uint32)):
                        raise ValueError(f"layer {i}: the initial state sets a row of a head the slot does not hold")
                    part = part[mine[0]]
                    if self.packed[i]:
                        part = self.rails.pack_numpy(part)
                    S.index_copy_(0, torch.as_tensor(rows[mine[0]].astype(np.int64) // HD, device=self.device),
                                  torch.from_numpy(np.ascontiguousarray(part)).to(self.device))
            elif S is not None:  # a full-state layer: every head, float32
                if s0 is None:
                    S[slot].zero_()
                else:
                    part = np.asarray(s0, np.float32).reshape(qwen.linear_heads, HD, HD)[:nh]
                    S[slot] = torch.from_numpy(np.ascontiguousarray(part)).to(self.device)
            if s0 is not None:
                rest = np.asarray(s0, np.float32).reshape(qwen.linear_heads, HD, HD)[nh:]
                if np.any(rest.view(np.uint32)):
                    self._fixed[slot][i] = rest.copy()
        self.flags[slot] = 0
        self.running[slot] = True

    def load_many(self, slots: np.ndarray, h: np.ndarray, rails: list[np.ndarray] | np.ndarray,
                  held: list[np.ndarray] | None = None, owner: np.ndarray | None = None) -> None:
        """Start a launch in each of `slots`: first inputs `h` (n, hidden) and initial states as
        the positions of their entries at the rail level (Host.initial_rails: a list, one array
        a launch; or, with `owner`, Host.initial_rails_many's one array and each row's launch),
        with a few transfers for all of them: the states are built as bits on the host, never
        as dense float32 states.  The same states as `load` with Host.initial's dense ones;
        `held`: each launch's heads, as `load`'s."""
        if self.rails is None:
            raise ValueError("loading by rail positions needs the rail level (level=...)")
        slots = np.asarray(slots, np.int64)
        n, dev = len(slots), self.device
        idx = torch.as_tensor(slots, device=dev)
        self.h.index_copy_(0, idx, torch.from_numpy(np.ascontiguousarray(h, np.float32)).to(dev))
        if owner is None:
            owner = np.repeat(np.arange(n), [len(r) for r in rails])
            rails = np.concatenate(rails) if n else np.zeros((0, 4), np.int64)
        at = rails
        by_layer = np.argsort(at[:, 0], kind="stable")  # each layer's entries, a slice of them
        owner, at = owner[by_layer], at[by_layer]
        bounds = np.searchsorted(at[:, 0], np.arange(len(self.layers) + 1))
        held = None if held is None or n == 0 else np.stack([np.asarray(x, bool) for x in held])
        ranks = None if held is None else np.cumsum(held, 2) - 1  # a held head's block among the launch's
        level = np.float32(self.rails.level)
        lo = int(slots[0]) if n else 0
        contiguous = bool(n) and bool(np.array_equal(slots, np.arange(lo, lo + n)))
        for b in slots.tolist():
            self._fixed[b] = {}
        for i, (R, S) in enumerate(zip(self.layers, self.states)):
            mine = slice(bounds[i], bounds[i + 1])
            o, head, row, e = owner[mine], at[mine, 1], at[mine, 2], at[mine, 3]
            nh = R.nh if S is not None else 0
            inside = head < nh
            if self.pooled[i]:  # blocks given and cleared, then only the entries at the level written
                rows0 = self._assign(i, slots, self._held(i, n, held),
                                     None if ranks is None else ranks[:, i, :R.nh])
                if mine.start == mine.stop:
                    continue  # nothing of these launches in this layer: blocks given and cleared
                first = rows0[o[inside], head[inside]].astype(np.int64)
                if not first.all():
                    raise ValueError(f"layer {i}: an initial state sets a row of a head its slot does not hold")
                entry = _sorted_set((first + row[inside]) * HD + e[inside])
            elif S is not None:  # cleared, then only the entries at the level written
                if contiguous:
                    S[lo:lo + n].zero_()
                else:
                    S.index_fill_(0, idx, 0)
                entry = _sorted_set((((slots[o[inside]] * nh + head[inside]) * HD + row[inside]) * HD) + e[inside])
            if S is not None:
                flat = S.view(-1)
                if self.packed[i]:  # a byte's bits are distinct entries: their sum is their OR
                    byte = entry >> 3
                    first = np.flatnonzero(np.diff(byte, prepend=-1))  # entry is sorted: each byte's first
                    where = byte[first]
                    value = np.add.reduceat(1 << (entry & 7), first) if len(entry) else entry
                    flat[torch.as_tensor(where, device=dev)] = torch.as_tensor(value.astype(np.uint8), device=dev)
                else:
                    flat[torch.as_tensor(entry, device=dev)] = float(level)
            for j in np.unique(o[~inside]).tolist():  # heads the layer does not use: kept on the host
                out = ~inside & (o == j)
                rest = np.zeros((qwen.linear_heads - nh, HD, HD), np.float32)
                rest[head[out] - nh, row[out], e[out]] = level
                self._fixed[int(slots[j])][i] = rest
        self.flags.index_fill_(0, idx, 0)
        self.running.index_fill_(0, idx, True)

    def read_rails(self, slots: np.ndarray, where: np.ndarray) -> np.ndarray:
        """The set rails (bool (n, rows, 128)) of the state rows `where` ((rows, 3): layer, head,
        row) of the launches in `slots`, gathered on the device in one transfer a layer: a
        batch reads its results without copying whole states (Host.cells_from_rails)."""
        slots = np.asarray(slots, np.int64)
        out = np.zeros((len(slots), len(where), HD), bool)
        for layer in np.unique(where[:, 0]).tolist():
            S = self.states[layer]
            nh = 0 if S is None else self.layers[layer].nh
            mine = np.flatnonzero(where[:, 0] == layer)
            inside = mine[where[mine, 1] < nh]
            if len(inside):
                # Row r of head h of slot b in the state viewed as (rows, last): its block's first
                # row in a pool (block 0 for a head it does not hold), or (b * nh + h) * 128 + r.
                flat = (self._rows0[layer][slots[:, None], where[inside, 1]] if self.pooled[layer] else
                        (slots[:, None] * nh + where[inside, 1]) * HD) + where[inside, 2]
                got = S.view(-1, S.shape[-1]).index_select(0, torch.as_tensor(flat.reshape(-1), device=self.device))
                if self.packed[layer]:
                    bits = np.unpackbits(got.cpu().numpy(), axis=-1, bitorder="little").astype(bool)
                else:
                    bits = got.cpu().numpy() > self.rails_level() / 2
                out[:, inside] = bits.reshape(len(slots), len(inside), HD)
            for k in mine[where[mine, 1] >= nh]:
                for j, b in enumerate(slots.tolist()):
                    rest = self._fixed[b].get(layer)
                    if rest is not None:
                        out[j, k] = rest[where[k, 1] - nh, where[k, 2]] > self.rails_level() / 2
        return out

    def rails_level(self) -> float:
        return self.rails.level

    def stop(self, slot: int) -> None:
        """Freeze a slot (its launch ended on the host's side, e.g. at --max-steps)."""
        self.running[slot] = False

    def hidden(self, slot: int) -> np.ndarray:
        return self.h[slot].cpu().numpy()

    def recurrent_state(self, slot: int, layer: int) -> np.ndarray:
        """Layer `layer`'s recurrent state of the launch in `slot` (16 x 128 x 128)."""
        full = np.zeros((qwen.linear_heads, HD, HD), np.float32)
        S = self.states[layer]
        nh = 0 if S is None else self.layers[layer].nh
        if self.pooled[layer]:  # its blocks, block 0 (+0) for the heads it does not hold
            blocks = self._rows0[layer][slot].astype(np.int64) // HD
            mine = S.index_select(0, torch.as_tensor(blocks, device=self.device))
            full[:nh] = (self.rails.unpack(mine) if self.packed[layer] else mine).cpu().numpy()
        elif S is not None:
            full[:nh] = S[slot].cpu().numpy()
        if layer in self._fixed[slot]:
            full[nh:] = self._fixed[slot][layer]
        return full

    # ---- stepping ----
    @torch.no_grad()
    def run(self) -> tuple[np.ndarray, np.ndarray]:
        """K steps of every running slot: (the gathered field signs (K, B, fields) as uint8, or
        with `decode` the fields' values as int64; each slot's premise flags (B,), nonzero when
        a premise failed), in one transfer.  On CUDA the values are a view of a page-locked
        buffer: valid until the next run but one."""
        self.enqueue()
        chunk = self.collect()
        return chunk.values, chunk.flags

    @torch.no_grad()
    def enqueue(self) -> None:
        """Start K steps of every running slot and the copy of their fields, flag words and
        running bits to the host, without waiting for them (on CUDA; the CPU computes them
        here): the host can work on the previous chunk meanwhile.  At most two chunks may be
        in flight, one for each page-locked buffer.  Slots loaded or stopped after this call
        change from the next chunk on (stream order)."""
        if len(self._pending) == 2:
            raise RuntimeError("two chunks are in flight: collect one before starting another")
        self._t.zero_()
        for _ in range(self.chunk):
            if self._graph is not None:
                self._graph.replay()
            else:
                self._one()
        if self._decode is not None:  # int64 values, then the flags and running bits widened
            out = torch.cat([self.bits.reshape(-1), self.flags.to(torch.int64), self.running.to(torch.int64)])
        else:
            out = torch.cat([self.bits.reshape(-1).to(torch.uint8), self.flags.view(torch.uint8),
                             self.running.to(torch.uint8)])
        event = None
        if self._pinned is not None:  # one copy into page-locked memory, ordered after the steps
            buf = self._pinned[self._next]
            self._next ^= 1
            buf.copy_(out, non_blocking=True)
            event = torch.cuda.Event()
            event.record(torch.cuda.current_stream(self.device))
            out = buf
        self._pending.append((out, event))

    def collect(self) -> Chunk:
        """The oldest chunk in flight, once its copy has arrived (its values, as `run`'s, and
        each slot's running bit after its last step); on CUDA a view of a page-locked buffer,
        valid until the next enqueue but one."""
        if not self._pending:
            raise RuntimeError("no chunk in flight: enqueue one first")
        out, event = self._pending.popleft()
        if event is not None:
            event.synchronize()
        arr = out.numpy() if out.device.type == "cpu" else out.cpu().numpy()
        k, w = self.bits.numel(), self.width
        values = arr[:k].reshape(self.bits.shape)
        if self._decode is not None:
            return Chunk(values, arr[k:k + w].astype(np.int32), arr[k + w:].astype(bool))
        return Chunk(values, arr[k:k + 4 * w].view(np.int32), arr[k + 4 * w:].astype(bool))

    def drain(self) -> None:
        """Wait for and drop the chunks in flight (a runner's speculative chunk, or what a run
        that raised left), so that the next enqueue starts from an empty queue."""
        while self._pending:
            self.collect()

    def _one(self) -> None:
        """One step, its fields written at row `_t` of the chunk's buffer (a device counter,
        so that one captured step serves every row)."""
        self._step()
        signs = self.h[:, self._dims] > 0
        if self._decode is None:
            row = signs
        else:  # each field's sum of its set bits' powers: differences of one running sum
            pows, starts, ends = self._decode
            run = F.pad((signs.to(torch.int64) * pows).cumsum(-1), (1, 0))
            row = run[:, ends] - run[:, starts]
        self.bits.index_copy_(0, self._t, row[None])
        self._t.add_(1)

    def _flag(self, bad: torch.Tensor, code: int) -> None:
        """Note that the slots where `bad` (B,) holds broke premise `code` in this step."""
        self._bad[code].logical_or_(bad)

    def _check(self, h: torch.Tensor, dims: torch.Tensor | None = None) -> None:
        """The residual is exactly +-8: everywhere, or in `dims` (the only ones a sublayer
        changed; the others were checked before)."""
        x = h if dims is None else h[:, dims]
        self._flag((x.abs() != 8.0).any(-1), NOT_PM8)

    def _step(self) -> None:
        if self._fused is not None:
            self._fused.step()
            return
        self._bad = {code: torch.zeros_like(self.running) for code in FLAG_TEXT}
        x = self.h
        self._check(x)
        for R, S, packed, rows0 in zip(self.layers, self.states, self.packed, self.rows0):
            if R.nh:
                x = self._mix_rows(R, x, S, packed, rows0) if R.rows else self._mix_full(R.L, x, S)
                self._check(x, R.L.mix_out)
            x = self._mlp(R, x)
            self._check(x, R.L.mlp_out)
        for code, bad in self._bad.items():  # premises of running slots only
            self.flags.bitwise_or_((bad & self.running).to(torch.int32) * code)
        self.h.copy_(torch.where(self.running[:, None], x, self.h))
        done = (self.h[:, self._halt] > 0) | (self.h[:, self._fault] > 0).any(-1)
        self.running &= ~done

    def _mix_rows(self, R: _RowLayer, h: torch.Tensor, S: torch.Tensor, packed: bool,
                  base: torch.Tensor) -> torch.Tensor:
        """The mixer through one-hot rows, with the C step's formulas (neural_c.c, mixer).
        `S` is the layer's pool of head blocks, `base` (B, nh) each head's first row there."""
        L, B, nh, span = R.L, h.shape[0], R.nh, R.span
        x = R.normed(h, L.in_norm, L.mix_in)
        pre = R.mix(x)
        qkv = pre[:, :3 * span] if R.conv_one else pre[:, :3 * span] * L.conv_last
        q_pre, k_pre, v_pre = qkv.reshape(B, 3, nh, HD).unbind(1)
        z_pre = pre[:, 3 * span:4 * span].reshape(B, nh, HD)
        b_pre = pre[:, 4 * span:]
        beta = _sigmoid_exact(b_pre)
        qh, qone, qv, qbad = _one_hot(q_pre)
        kh, kone, kv, kbad = _one_hot(k_pre)
        # Which arguments are outside the exact range, in one pass over the whole projection:
        # q, k and b always count, v where a key writes, z where a query reads (below).
        bad = _inexact(pre if R.conv_one else torch.cat([qkv, pre[:, 3 * span:]], 1))
        act_bad = bad[:, :2 * span].any(-1) | bad[:, 4 * span:].any(-1)
        act_bad |= (bad[:, 2 * span:3 * span].reshape(B, nh, HD) & kone[..., None]).flatten(1).any(-1)
        self._flag(act_bad, INEXACT_ACT)
        self._flag((qbad | kbad).any(-1), NOT_ONE_HOT)
        flat = S.view(-1, S.shape[-1])
        read = (lambda idx: self.rails.unpack(flat.index_select(0, idx))) if packed else \
            (lambda idx: flat.index_select(0, idx))
        # The key's row: delta = (v - row * k) * beta; row + k * delta.  Written back unchanged
        # where there is no key or the slot is frozen; block 0 (a head the slot does not hold)
        # gets its +0 back, and a write there breaks the premise that it is never written.
        kidx = (base + kh).reshape(-1)
        row = read(kidx).reshape(B, nh, HD)
        kvx = kv[..., None]
        delta = (_silu_exact(v_pre) - row * kvx) * beta[..., None]
        write = kone & self.running[:, None]
        held = base != 0
        self._flag((write & ~held).any(-1), NOT_HELD)
        new = torch.where(write[..., None], row + kvx * delta, row)
        if packed:
            bits, off = self.rails.pack(new)
            self._flag((off & write[..., None]).flatten(1).any(-1), NOT_RAIL)
            flat.index_copy_(0, kidx, (bits * held[..., None]).reshape(-1, bits.shape[-1]))
        else:
            flat.index_copy_(0, kidx, torch.where(held[..., None], new, 0.0).reshape(-1, HD))
        # The query's row (after the write), gated RMSNorm and the z gate.
        o = read((base + qh).reshape(-1)).reshape(B, nh, HD) * (qv / QSCALE)[..., None]
        ss = (o * o).sum(-1)
        var = ss / float(HD) + EPS
        on = qone & (ss != 0)
        self._flag((on & ~_pow4(var)).any(-1), INEXACT_NORM)
        self._flag((bad[:, 3 * span:4 * span].reshape(B, nh, HD) & on[..., None]).flatten(1).any(-1), INEXACT_ACT)
        y = ((o * (1.0 / torch.sqrt(var))[..., None]) * L.gnorm) * _silu_exact(z_pre)
        y = torch.where(on[..., None], y, torch.zeros_like(y))
        return h.index_add(1, L.mix_out, y.reshape(B, span) @ L.Wo.T)

    def _mix_full(self, L: FastLayer, h: torch.Tensor, S: torch.Tensor) -> torch.Tensor:
        """The stock mixer over whole states (a decay other than 1 changes every row); the
        state is replaced only where running."""
        B, nh = h.shape[0], len(L.heads)
        x = _rms(h, L.in_norm)[:, L.mix_in]
        mixed = F.silu((x @ L.Wqkv.T) * L.conv_last)
        q, k, v = mixed.reshape(B, 3, nh, HD).unbind(1)
        q = q * torch.rsqrt((q * q).sum(-1, keepdim=True) + EPS)
        k = k * torch.rsqrt((k * k).sum(-1, keepdim=True) + EPS)
        q = q / (HD ** 0.5)
        beta = torch.sigmoid(x @ L.Wb.T)
        if L.decay is None:
            g = -L.A_log.float().exp() * F.softplus((x @ L.Wa.T) + L.dt_bias)
            Sd = S * g.exp()[..., None, None]
        else:
            Sd = S * L.decay[:, None, None]
        flat = Sd.reshape(B * nh, HD, HD)  # the (launch, head) pairs as one bmm batch
        kv_mem = torch.bmm(k.reshape(B * nh, 1, HD), flat).reshape(B, nh, HD)
        delta = (v - kv_mem) * beta[..., None]
        Snew = torch.baddbmm(flat, k.reshape(B * nh, HD, 1), delta.reshape(B * nh, 1, HD))
        o = torch.bmm(q.reshape(B * nh, 1, HD), Snew).reshape(B, nh, HD)
        torch.where(self.running[:, None, None, None], Snew.reshape(B, nh, HD, HD), S, out=S)
        var = o.pow(2).mean(-1, keepdim=True)
        o = o * torch.rsqrt(var + EPS)
        o = L.gnorm * o
        z = (x @ L.Wz.T).reshape(B, nh, HD)
        o = o * F.silu(z)
        return h.index_add(1, L.mix_out, o.reshape(B, -1) @ L.Wo.T)

    def _mlp(self, R: _RowLayer, h: torch.Tensor) -> torch.Tensor:
        """SwiGLU as the C step evaluates it: silu(gate) at its exact arguments times up."""
        L, U = R.L, R.units
        x = R.normed(h, L.post_norm, L.mlp_in)
        pre = R.gu(x)
        gate = pre[:, :U]
        self._flag(_inexact(pre)[:, :U].any(-1), INEXACT_ACT)  # the whole (contiguous) output, gate part
        act = _silu_exact(gate) * pre[:, U:]
        return h.index_add(1, L.mlp_out, act @ L.Wd.T)

    def _capture(self) -> None:
        """Record one step as a CUDA graph over the static buffers (all slots frozen, so the
        warm-up changes no state), replayed K times for every `run`: capturing one step
        rather than K keeps the start-up short.  Captured again when the pools grow (`reserve`),
        perhaps with launches running: they are frozen for the warm-up, then resumed."""
        running = self.running.clone()
        self.running.zero_()
        side = torch.cuda.Stream(self.device)
        side.wait_stream(torch.cuda.current_stream(self.device))
        with torch.no_grad(), torch.cuda.stream(side):
            self._one()  # warm-up: cuBLAS handles and workspaces exist before capture
        torch.cuda.current_stream(self.device).wait_stream(side)
        self._graph = torch.cuda.CUDAGraph()
        with torch.no_grad(), torch.cuda.graph(self._graph):
            self._one()
        torch.cuda.synchronize(self.device)
        self.running.copy_(running)
