"""Run compiled layers with transformers' own Qwen3.5 classes, unmodified.

This is the `hf` engine's core: the layers are `Qwen3_5DecoderLayer`s built from
a `Qwen3_5TextConfig` at Qwen3.5-2B geometry, fed one token (the previous step's
hidden state as `inputs_embeds`) per step with the stock `DynamicCache`.
"""

from __future__ import annotations

import numpy as np
import torch

from .schedule import HEADS, HIDDEN, UNITS
from .weights import CONV, HEAD_DIM, LayerWeights


def text_config(num_layers: int, value_heads: int = HEADS):
    from transformers import Qwen3_5TextConfig

    return Qwen3_5TextConfig(
        hidden_size=HIDDEN,
        intermediate_size=UNITS,
        num_hidden_layers=num_layers,
        layer_types=["linear_attention"] * num_layers,
        linear_num_key_heads=HEADS,
        linear_num_value_heads=value_heads,
        linear_key_head_dim=HEAD_DIM,
        linear_value_head_dim=HEAD_DIM,
        linear_conv_kernel_dim=CONV,
        num_attention_heads=8,
        num_key_value_heads=2,
        head_dim=256,
        rms_norm_eps=1e-6,
        hidden_act="silu",
        vocab_size=248320,
        tie_word_embeddings=True,
        max_position_embeddings=262144,
    )


class HFMachine:
    """The compiled layers as stock transformers modules, stepped one token at a time."""

    def __init__(self, layers: list[LayerWeights], device: str = "cpu", value_heads: int = HEADS):
        """`value_heads` > 16 builds the layers at a checkpoint's geometry, the machine on every
        (value_heads/16)-th value head, as they are stored there (qgcc.checkpoint.geometry)."""
        from transformers.models.qwen3_5.modeling_qwen3_5 import Qwen3_5DecoderLayer, Qwen3_5TextRotaryEmbedding

        from ..checkpoint.geometry import ValueHeads

        self.heads = ValueHeads(value_heads)
        self.config = text_config(len(layers), value_heads)
        self.config._attn_implementation = "eager"
        self.device = torch.device(device)
        self.layers = []
        with torch.no_grad():
            for i, lw in enumerate(layers):
                layer = Qwen3_5DecoderLayer(self.config, i)
                sd = {}
                for name, st in lw.tensors.items():
                    idx, val = self.heads.to_base(name, *st.arrays())
                    shape = self.heads.shape(name)
                    dense = np.zeros(int(np.prod(shape)), np.float32)
                    dense[idx] = val
                    sd[name] = torch.from_numpy(dense.reshape(shape))
                layer.load_state_dict(sd, strict=True)
                self.layers.append(layer.to(self.device).eval())
        self.rotary = Qwen3_5TextRotaryEmbedding(self.config).to(self.device)
        self.cache = None
        self.position = 0

    def reset(self, recurrent_init: dict[int, np.ndarray] | None = None) -> None:
        """A fresh cache whose every layer starts from its documented initial state.

        Each layer's conv state starts at zero and its recurrent state at
        `recurrent_init[layer]` (default zero), so that every step, the first included,
        takes the stock single-token decode path.
        """
        from transformers import DynamicCache

        recurrent_init = recurrent_init or {}
        self.cache = DynamicCache(config=self.config)
        self.position = 0
        nv, used = self.heads.count, self.heads.head_map
        conv_dim = 2 * HEADS * HEAD_DIM + nv * HEAD_DIM
        for i in range(len(self.layers)):
            self.cache.update_conv_state(torch.zeros(1, conv_dim, CONV, device=self.device), i)
            s0 = torch.zeros(1, nv, HEAD_DIM, HEAD_DIM)
            if recurrent_init.get(i) is not None:
                s0[0, used] = torch.from_numpy(np.asarray(recurrent_init[i], np.float32)).reshape(
                    HEADS, HEAD_DIM, HEAD_DIM)
            self.cache.update_recurrent_state(s0.to(self.device), i)

    def recurrent_state(self, layer: int) -> np.ndarray:
        nv = self.heads.count
        s = self.cache.layers[layer].recurrent_states[0].reshape(nv, HEAD_DIM, HEAD_DIM)[self.heads.head_map]
        return s.cpu().numpy()

    @torch.no_grad()
    def step(self, h: np.ndarray) -> np.ndarray:
        x = torch.from_numpy(np.ascontiguousarray(h, np.float32)).reshape(1, 1, HIDDEN).to(self.device)
        pos = torch.tensor([[self.position]], device=self.device)
        pe = self.rotary(x, pos)
        for layer in self.layers:
            x = layer(x, position_embeddings=pe, position_ids=pos, cache=self.cache)
        self.position += 1
        return x.reshape(HIDDEN).cpu().numpy()
