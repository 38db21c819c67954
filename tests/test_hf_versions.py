"""The hf engine drives transformers' own modules through their public cache API, which moved
between the releases pyproject.toml admits (docs/engines.md, "Tested transformers and torch versions").
This checks, on whatever transformers is installed, that the engine's cache reaches the layer:
one step of an all-zero layer from a seeded state takes the single-token decode path, which
decays the state by exp(-softplus(0)) = 1/2 and adds nothing (zero keys)."""

from __future__ import annotations

import numpy as np

from qgcc.engines.hf import HFLayers, cache_keyword
from qgcc.link.weights import LayerWeights, SparseTensor
from qgcc.qwen35 import QWEN35_2B as qwen, SHAPES


def test_a_zero_layer_halves_the_seeded_recurrent_state_and_passes_the_hidden_state_through():
    from transformers.models.qwen3_5.modeling_qwen3_5 import Qwen3_5DecoderLayer

    assert cache_keyword(Qwen3_5DecoderLayer) in ("cache", "past_key_values")
    layer = LayerWeights("linear_attention", {name: SparseTensor(shape) for name, shape in SHAPES.items()}, 0, 0)
    hf = HFLayers([layer])
    rng = np.random.default_rng(0)
    s0 = rng.integers(-4, 5, (qwen.linear_heads, qwen.head_dim, qwen.head_dim)).astype(np.float32)
    hf.reset({0: s0})
    assert np.array_equal(hf.recurrent_state(0), s0)
    h = np.where(rng.random(qwen.hidden) < 0.5, -8.0, 8.0).astype(np.float32)
    assert np.array_equal(hf.step(h), h)  # every sublayer adds exactly 0
    assert np.allclose(hf.recurrent_state(0), s0 / 2, rtol=1e-6, atol=0)
    assert np.array_equal(hf.step(h), h)
    assert np.allclose(hf.recurrent_state(0), s0 / 4, rtol=1e-6, atol=0)
