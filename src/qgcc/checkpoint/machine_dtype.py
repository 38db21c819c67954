"""The dtype a checkpoint stores the machine's layers in, and the one weight bf16 cannot hold.

A Qwen3.5 checkpoint is bfloat16, and a user loading it with transformers' `dtype="auto"`
gets bfloat16 modules; so `qgcc --base` stores the machine in the base's dtype.  Every
weight the linker writes is a bfloat16 value except the value level V
(`link.weights.VALUE_LEVEL`, 181.019...), which appears only in `in_proj_qkv`'s value rows
and rounds to 181 (docs/architecture.md, "Numerics").  So a bf16 shard is the linked
float32 machine with exactly one value rounded, and the rounding is undone on reading:
widen to float32 (exact) and put +-V back where the shard holds +-181 in `in_proj_qkv`.
That inverse is only sound if no weight of those rows is +-181 to begin with; the writer
checks it, and the reader's program hash (computed over the float32 tensors) proves the
machine read back is the one linked.  qgrun's float32 engines therefore run a bf16
checkpoint with the exact float32 machine; transformers' modules built from the shard in
bf16 run V = 181, where a read still adds exactly 16 (measured, not by construction).
"""

from __future__ import annotations

import numpy as np

from ..link.weights import VALUE_LEVEL

NAMES = {"float32": "F32", "bfloat16": "BF16"}  # qgpu.dtype -> safetensors dtype
ROUNDED_IN = "linear_attn.in_proj_qkv.weight"  # the only tensor holding V
V_BF16 = 181.0  # bf16(VALUE_LEVEL)


def base_dtype(config: dict, text_config: dict) -> str:
    """The base's parameter dtype as qgpu.dtype names it: bfloat16 if it says so, else float32."""
    for c in (text_config, config):
        for key in ("dtype", "torch_dtype"):
            if c.get(key) == "bfloat16":
                return "bfloat16"
            if c.get(key) is not None:
                return "float32"
    return "float32"


def to_bf16(name: str, val: np.ndarray) -> np.ndarray:
    """The values a bf16 shard stores for tensor `name` (float32 values that are bf16 values).

    Raises ValueError naming the value if the machine holds anything else bf16 cannot
    hold, or a weight the reader would mistake for a rounded V."""
    v = np.asarray(val, np.float32)
    if name == ROUNDED_IN:
        if np.any(np.abs(v) == V_BF16):
            raise ValueError(f"{name} holds the weight {V_BF16}, which a bf16 shard uses for the value level")
        v = np.where(np.abs(v) == np.float32(VALUE_LEVEL), np.copysign(np.float32(V_BF16), v), v).astype(np.float32)
    inexact = v.view(np.uint32) & 0xFFFF != 0
    if inexact.any():
        raise ValueError(f"{name} holds {float(v[inexact][0])!r}, which is not a bfloat16 value")
    return v


def from_bf16(name: str, val: np.ndarray) -> np.ndarray:
    """The linked float32 values back from a bf16 shard's (widened) values of tensor `name`."""
    if name != ROUNDED_IN:
        return val
    return np.where(np.abs(val) == np.float32(V_BF16), np.copysign(np.float32(VALUE_LEVEL), val),
                    val).astype(np.float32)
