"""Fitting the machine's 16 DeltaNet memory heads into a base with more value heads.

Why it works: Qwen3.5's Gated DeltaNet lets `linear_num_value_heads` be a multiple r of
the 16 key heads; transformers repeats key/query head k for value heads k*r .. k*r+r-1
(`repeat_interleave`).  So memory head h can live on value head h*r, which reads key
head h exactly as before, and the other value heads are left all-zero: zero values,
zero z-gate and zero out_proj columns keep their state at zero and their output at
exactly zero.  The used heads compute what they computed at 16 value heads, element
for element.

Tensors are mapped in their sparse (flat index, value) form, so the mapping costs
the number of non-zeros, not the dense size.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..neural.schedule import HEADS
from ..neural.weights import HEAD_DIM, SHAPES

KEY_DIM = HEADS * HEAD_DIM  # 16 key heads x 128

# tensor -> (axis carrying the value heads, where the value part starts on it, entries per head)
_VALUE_AXIS = {
    "linear_attn.in_proj_qkv.weight": (0, 2 * KEY_DIM, HEAD_DIM),  # rows: q | k | v
    "linear_attn.conv1d.weight": (0, 2 * KEY_DIM, HEAD_DIM),  # channels: q | k | v
    "linear_attn.in_proj_z.weight": (0, 0, HEAD_DIM),
    "linear_attn.in_proj_b.weight": (0, 0, 1),
    "linear_attn.in_proj_a.weight": (0, 0, 1),
    "linear_attn.dt_bias": (0, 0, 1),
    "linear_attn.A_log": (0, 0, 1),
    "linear_attn.out_proj.weight": (1, 0, HEAD_DIM),
}


class GeometryError(ValueError):
    """Tensors that are not the machine laid out on the stated number of value heads."""


@dataclass(frozen=True)
class ValueHeads:
    count: int  # the base's linear_num_value_heads, a multiple of 16

    @property
    def ratio(self) -> int:
        return self.count // HEADS

    @property
    def head_map(self) -> list[int]:
        """Machine memory head h -> the value head that holds it."""
        return [h * self.ratio for h in range(HEADS)]

    def shape(self, name: str) -> tuple[int, ...]:
        shape = list(SHAPES[name])
        if name in _VALUE_AXIS:
            axis, start, per = _VALUE_AXIS[name]
            shape[axis] = start + self.count * per
        return tuple(shape)

    def to_base(self, name: str, idx: np.ndarray, val: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Flat indices of a machine tensor (16 heads) -> flat indices in the base's shape."""
        if self.ratio == 1 or name not in _VALUE_AXIS:
            return idx, val
        axis, start, per = _VALUE_AXIS[name]
        coords = list(np.unravel_index(idx, SHAPES[name]))
        c = coords[axis]
        v = c >= start
        head, off = np.divmod(c[v] - start, per)
        c = c.copy()
        c[v] = start + head * self.ratio * per + off
        coords[axis] = c
        return np.ravel_multi_index(coords, self.shape(name)).astype(np.int64), val

    def from_base(self, name: str, idx: np.ndarray, val: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The inverse of to_base; a non-zero on a value head the machine does not use is an error."""
        if self.ratio == 1 or name not in _VALUE_AXIS:
            return idx, val
        axis, start, per = _VALUE_AXIS[name]
        coords = list(np.unravel_index(idx, self.shape(name)))
        c = coords[axis]
        v = c >= start
        head, off = np.divmod(c[v] - start, per)
        if np.any(head % self.ratio):
            raise GeometryError(f"{name} has non-zeros on value heads the machine does not use")
        c = c.copy()
        c[v] = start + (head // self.ratio) * per + off
        coords[axis] = c
        return np.ravel_multi_index(coords, SHAPES[name]).astype(np.int64), val
