"""A tiny Qwen3.5 base checkpoint for `differential.py --via checkpoint`, built once and reused.

`qgcc --base` needs a real Hugging Face checkpoint at the machine's geometry (hidden size 2048);
downloading Qwen3.5-2B is neither possible nor needed: transformers' own classes build one with two
random text layers (one of each mixer) and a small vocabulary, which `save_pretrained` writes as a
stock checkpoint (about 200 MB in bfloat16).
"""

from __future__ import annotations

from pathlib import Path


def tiny_base(path: Path) -> Path:
    if (path / "config.json").exists():
        return path
    import torch
    from transformers import Qwen3_5ForCausalLM, Qwen3_5TextConfig

    config = Qwen3_5TextConfig(
        hidden_size=2048, intermediate_size=6144, num_hidden_layers=2,
        layer_types=["linear_attention", "full_attention"], linear_num_key_heads=16, linear_num_value_heads=16,
        linear_key_head_dim=128, linear_value_head_dim=128, linear_conv_kernel_dim=4, num_attention_heads=8,
        num_key_value_heads=2, head_dim=256, rms_norm_eps=1e-6, vocab_size=512, tie_word_embeddings=True,
        max_position_embeddings=4096)
    torch.manual_seed(0)
    tmp = path.with_name(path.name + ".partial")
    Qwen3_5ForCausalLM(config).to(torch.bfloat16).save_pretrained(tmp)
    tmp.rename(path)
    return path
