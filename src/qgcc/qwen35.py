"""The Qwen3.5 geometry the machine is compiled for, in one place.

Every size the linker, the engines and the checkpoint code depend on is a field of
`QWEN35_2B`, read as `QWEN35_2B.hidden` the way transformers' `configuration_qwen3_5.py`
is read as `config.hidden_size`, so the geometry is changed (or checked against a
base checkpoint) once.  `text_config` turns it into transformers' own config class;
`ValueHeads` maps the machine's 16 DeltaNet heads onto a base with more value heads.

Why the value-head mapping works: Qwen3.5's Gated DeltaNet lets `linear_num_value_heads`
be a multiple r of the 16 key heads; transformers repeats key/query head k for value
heads k*r .. k*r+r-1 (`repeat_interleave`).  So memory head h can live on value head
h*r, which reads key head h exactly as before, and the other value heads are left
all-zero: zero values, zero z-gate and zero out_proj columns keep their state at zero
and their output at exactly zero.  The used heads compute what they computed at 16
value heads, element for element.  Tensors are mapped in their sparse (flat index,
value) form, so the mapping costs the number of non-zeros, not the dense size.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Qwen35Geometry:
    hidden: int  # hidden_size: residual dimensions
    intermediate: int  # intermediate_size: MLP units per layer
    linear_heads: int  # linear_num_key_heads (= the machine's value heads): DeltaNet heads per layer
    head_dim: int  # linear_key_head_dim = linear_value_head_dim: slots (and value width) per head
    conv_kernel: int  # linear_conv_kernel_dim
    # Fields of the stock config that the all-DeltaNet layers never read; kept at the 2B figures.
    attention_heads: int = 8
    kv_heads: int = 2
    attention_head_dim: int = 256
    rms_norm_eps: float = 1e-6
    hidden_act: str = "silu"
    vocab_size: int = 248320
    max_position_embeddings: int = 262144

    @property
    def key_dim(self) -> int:
        """Width of the q (and of the k) part of a DeltaNet layer's projections."""
        return self.linear_heads * self.head_dim

    @property
    def shapes(self) -> dict[str, tuple[int, ...]]:
        """Every tensor of one linear-attention decoder layer, at the machine's 16 value heads."""
        H, U, NH, D = self.hidden, self.intermediate, self.linear_heads, self.head_dim
        return {
            "input_layernorm.weight": (H,),
            "post_attention_layernorm.weight": (H,),
            "mlp.gate_proj.weight": (U, H),
            "mlp.up_proj.weight": (U, H),
            "mlp.down_proj.weight": (H, U),
            "linear_attn.in_proj_qkv.weight": (3 * NH * D, H),
            "linear_attn.conv1d.weight": (3 * NH * D, 1, self.conv_kernel),
            "linear_attn.in_proj_z.weight": (NH * D, H),
            "linear_attn.in_proj_b.weight": (NH, H),
            "linear_attn.in_proj_a.weight": (NH, H),
            "linear_attn.dt_bias": (NH,),
            "linear_attn.A_log": (NH,),
            "linear_attn.norm.weight": (D,),
            "linear_attn.out_proj.weight": (H, NH * D),
        }


QWEN35_2B = Qwen35Geometry(hidden=2048, intermediate=6144, linear_heads=16, head_dim=128, conv_kernel=4)
SHAPES = QWEN35_2B.shapes


def text_config(num_layers: int, value_heads: int = QWEN35_2B.linear_heads):
    """transformers' `Qwen3_5TextConfig` for `num_layers` all-DeltaNet layers at this geometry."""
    from transformers import Qwen3_5TextConfig

    g = QWEN35_2B
    return Qwen3_5TextConfig(
        hidden_size=g.hidden,
        intermediate_size=g.intermediate,
        num_hidden_layers=num_layers,
        layer_types=["linear_attention"] * num_layers,
        linear_num_key_heads=g.linear_heads,
        linear_num_value_heads=value_heads,
        linear_key_head_dim=g.head_dim,
        linear_value_head_dim=g.head_dim,
        linear_conv_kernel_dim=g.conv_kernel,
        num_attention_heads=g.attention_heads,
        num_key_value_heads=g.kv_heads,
        head_dim=g.attention_head_dim,
        rms_norm_eps=g.rms_norm_eps,
        hidden_act=g.hidden_act,
        vocab_size=g.vocab_size,
        tie_word_embeddings=True,
        max_position_embeddings=g.max_position_embeddings,
    )


def text_config_json(num_layers: int) -> str:
    """`text_config(num_layers).to_json_string(use_diff=False)`, the text a linked program carries,
    kept in the user's cache (qgcc.usercache) per transformers version and text of this module:
    importing transformers (and torch) costs a `qgcc` run more than the whole link."""
    from importlib import metadata
    from pathlib import Path

    from .usercache import cache_file, read_text, write_text

    try:
        version = metadata.version("transformers")
    except metadata.PackageNotFoundError:
        version = None
    path = None
    if version is not None:
        here = Path(__file__).read_text(encoding="utf-8")
        path = cache_file("text_config", f"{version}\n{num_layers}\n{here}", ".json")
    text = read_text(path)
    if text is None:
        text = text_config(num_layers).to_json_string(use_diff=False)
        write_text(path, text)
    return text


# tensor -> (axis carrying the value heads, where the value part starts on it, entries per head)
_KEY_DIM, _HEAD_DIM = QWEN35_2B.key_dim, QWEN35_2B.head_dim
_VALUE_AXIS = {
    "linear_attn.in_proj_qkv.weight": (0, 2 * _KEY_DIM, _HEAD_DIM),  # rows: q | k | v
    "linear_attn.conv1d.weight": (0, 2 * _KEY_DIM, _HEAD_DIM),  # channels: q | k | v
    "linear_attn.in_proj_z.weight": (0, 0, _HEAD_DIM),
    "linear_attn.in_proj_b.weight": (0, 0, 1),
    "linear_attn.in_proj_a.weight": (0, 0, 1),
    "linear_attn.dt_bias": (0, 0, 1),
    "linear_attn.A_log": (0, 0, 1),
    "linear_attn.out_proj.weight": (1, 0, _HEAD_DIM),
}


class GeometryError(ValueError):
    """Tensors that are not the machine laid out on the stated number of value heads."""


@dataclass(frozen=True)
class ValueHeads:
    """The machine's 16 memory heads on a base with `count` value heads (see the module docstring)."""

    count: int  # the base's linear_num_value_heads, a multiple of 16

    @property
    def ratio(self) -> int:
        return self.count // QWEN35_2B.linear_heads

    @property
    def head_map(self) -> list[int]:
        """Machine memory head h -> the value head that holds it."""
        return [h * self.ratio for h in range(QWEN35_2B.linear_heads)]

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
