"""Run compiled layers with transformers' own Qwen3.5 classes, unmodified.

This is the `hf` engine's core: the layers are `Qwen3_5DecoderLayer`s built from
a `Qwen3_5TextConfig` at Qwen3.5-2B geometry, fed one token (the previous step's
hidden state as `inputs_embeds`) per step with the stock `DynamicCache`.

Every transformers release that pyproject.toml admits (5.5 on) runs them; two things
moved between releases and are handled here, not guessed per version: the decoder
layer's cache argument (`past_key_values` in 5.5-5.17, `cache` in 5.25) and the rotary
embedding's position ids (2-D, then 3-D multimodal ones: 5.17's indexes
`position_ids[:, :, None, :]`).  Gated DeltaNet layers use no rotary embedding, so
none is computed: `position_embeddings` is None (docs/protocol.md, section 4).
"""

from __future__ import annotations

import numpy as np
import torch

from ..link.linker import LinkedNetwork
from ..link.weights import LayerWeights
from ..qwen35 import QWEN35_2B as qwen, ValueHeads, text_config
from .network import NetworkEngine


def cache_keyword(layer_class) -> str:
    """The name under which this transformers' decoder layer takes the cache."""
    import inspect

    params = inspect.signature(layer_class.forward).parameters
    for name in ("cache", "past_key_values"):
        if name in params:
            return name
    raise RuntimeError("this transformers' Qwen3_5DecoderLayer takes neither `cache` nor `past_key_values`; "
                       "install a transformers version that pyproject.toml admits")


class HFLayers:
    """The compiled layers as stock transformers modules, stepped one token at a time."""

    def __init__(self, layers: list[LayerWeights], device: str = "cpu", value_heads: int = qwen.linear_heads,
                 dtype: str = "fp32"):
        """`value_heads` > 16 builds the layers at a checkpoint's geometry, the machine on every
        (value_heads/16)-th value head, as they are stored there (qgcc.qwen35.ValueHeads).
        `dtype` "bf16" runs the modules in bfloat16 (weights and activations), as a checkpoint
        loaded with transformers' dtype="auto" would (docs/architecture.md, "Numerics")."""
        from transformers.models.qwen3_5.modeling_qwen3_5 import Qwen3_5DecoderLayer

        self.heads = ValueHeads(value_heads)
        self.config = text_config(len(layers), value_heads)
        self.config._attn_implementation = "eager"
        self.device = torch.device(device)
        self.dtype = {"fp32": torch.float32, "bf16": torch.bfloat16}[dtype]
        if self.device.type == "cuda":
            # Exactness needs every product summed in float32 (docs/architecture.md, "Numerics"):
            # no TF32 inputs (cuDNN's conv, which the conv1d fallback may use, allows them by
            # default and would round V = 181.019... to 181) and no bf16 split-K reductions.
            torch.backends.cuda.matmul.allow_tf32 = False
            torch.backends.cudnn.allow_tf32 = False
            torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
        self.layers = []
        with torch.no_grad():
            for i, lw in enumerate(layers):
                with torch.device("meta"):  # no random init (seconds a layer): every tensor is loaded
                    layer = Qwen3_5DecoderLayer(self.config, i)
                sd = {}
                for name, st in lw.tensors.items():
                    idx, val = self.heads.to_base(name, *st.arrays())
                    shape = self.heads.shape(name)
                    dense = np.zeros(int(np.prod(shape)), np.float32)
                    dense[idx] = val
                    sd[name] = torch.from_numpy(dense.reshape(shape))
                layer.load_state_dict(sd, strict=True, assign=True)
                self.layers.append(layer.to(self.device, self.dtype).eval())
        self.cache_kw = cache_keyword(Qwen3_5DecoderLayer)
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
        nv, used, d = self.heads.count, self.heads.head_map, qwen.head_dim
        conv_dim = 2 * qwen.key_dim + nv * qwen.head_dim
        for i in range(len(self.layers)):
            self.cache.update_conv_state(torch.zeros(1, conv_dim, qwen.conv_kernel, device=self.device,
                                                     dtype=self.dtype), i)
            s0 = torch.zeros(1, nv, qwen.head_dim, qwen.head_dim)
            if recurrent_init.get(i) is not None:
                s0[0, used] = torch.from_numpy(np.asarray(recurrent_init[i], np.float32)).reshape(
                    qwen.linear_heads, d, d)
            self.cache.update_recurrent_state(s0.to(self.device, self.dtype), i)

    def recurrent_state(self, layer: int) -> np.ndarray:
        nv, d = self.heads.count, qwen.head_dim
        s = self.cache.layers[layer].recurrent_states[0].reshape(nv, d, d)[self.heads.head_map]
        return s.float().cpu().numpy()

    @torch.no_grad()
    def step(self, h: np.ndarray) -> np.ndarray:
        x = torch.from_numpy(np.ascontiguousarray(h, np.float32)).reshape(1, 1, qwen.hidden).to(self.device, self.dtype)
        for layer in self.layers:
            x = layer(x, position_embeddings=None, **{self.cache_kw: self.cache})
        self.position += 1
        return x.reshape(qwen.hidden).float().cpu().numpy()


class HFEngine(NetworkEngine):
    """`qgrun --engine hf`: the compiled layers as transformers' own modules."""

    name = "hf"

    def layers(self, network: LinkedNetwork) -> HFLayers:
        return HFLayers(network.layers, self.device, value_heads=network.value_heads, dtype=self.dtype)
