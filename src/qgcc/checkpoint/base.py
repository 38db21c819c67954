"""What the linker needs to know about a base checkpoint, read without loading a weight.

A base is a Hugging Face directory: `config.json`, and `model.safetensors` or
shards listed in `model.safetensors.index.json`.  Only headers are read, so
inspecting a multi-GB checkpoint costs kilobytes.  Every problem is one
`CheckpointError` line that names the directory and the offending field or file,
because a user pointing `--base` at the wrong thing must learn what to fix.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

from ..diagnostics import CheckpointError
from .shards import HeaderError, TensorInfo, read_header

CONFIG = "config.json"
SINGLE = "model.safetensors"
INDEX = "model.safetensors.index.json"
MODEL_TYPES = ("qwen3_5", "qwen3_5_text")  # the multimodal model and the text-only model


def machine_geometry() -> dict[str, object]:
    """The text_config fields the compiled layers are built for; a base must agree on every one.

    Derived from the linker's own config so that the check cannot drift from the
    layers it guards.  Attention-only fields (num_attention_heads, head_dim, ...)
    are absent: the compiled layers are all Gated DeltaNet and never read them.
    """
    from ..qwen35 import text_config

    tc = text_config(1)
    names = ("hidden_size", "intermediate_size", "linear_num_key_heads", "linear_num_value_heads",
             "linear_key_head_dim", "linear_value_head_dim", "linear_conv_kernel_dim", "hidden_act",
             "rms_norm_eps")
    return {n: getattr(tc, n) for n in names}


@dataclass
class BaseCheckpoint:
    path: str
    config: dict  # config.json as read; the text fields are `text_config` (multimodal) or the top level
    text_key: str | None  # "text_config", or None for a text-only checkpoint
    text_prefix: str  # tensor-name prefix of the text model, e.g. "model.language_model."
    num_layers: int
    layer_types: list[str]
    weight_map: dict[str, str]  # tensor name -> shard file name
    shards: list[str]  # shard file names in index order
    indexed: bool  # the base has model.safetensors.index.json
    index_meta: dict = field(default_factory=dict)
    tensor_bytes: int = 0  # total data bytes of the base's tensors

    @property
    def text_config(self) -> dict:
        return self.config[self.text_key] if self.text_key else self.config

    @property
    def value_heads(self) -> int:
        return int(self.text_config["linear_num_value_heads"])


def _bad(path: str, what: str) -> CheckpointError:
    return CheckpointError(f"base checkpoint {path}: {what}")


def _read_json(path: str, name: str) -> dict:
    full = os.path.join(path, name)
    try:
        with open(full, encoding="utf-8") as f:
            data = json.load(f)
    except FileNotFoundError:
        raise _bad(path, f"no {name} (expected a Hugging Face model directory)") from None
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise _bad(path, f"{name} is not readable JSON ({getattr(e, 'strerror', None) or e})") from None
    if not isinstance(data, dict):
        raise _bad(path, f"{name} is not a JSON object")
    return data


def default_layer_types(tc: dict, n: int) -> list[str]:
    """transformers' rule when a config has no layer_types: every `full_attention_interval`-th is full attention."""
    k = tc.get("full_attention_interval", 4)
    return ["linear_attention" if (i + 1) % k else "full_attention" for i in range(n)]


def check_geometry(path: str, tc: dict, prefix: str) -> None:
    for name, want in machine_geometry().items():
        got = tc.get(name)
        if name == "linear_num_value_heads" and type(got) is int and got > 0 and got % want == 0:
            continue  # more value heads than key heads: the machine adapts (geometry.py)
        if name == "linear_num_value_heads" and name in tc:
            raise _bad(path, f"{prefix}{name} is {json.dumps(got)}, the compiled machine needs a multiple of {want}")
        if got != want:
            shown = "missing" if name not in tc else f"is {json.dumps(got)}"
            raise _bad(path, f"{prefix}{name} {shown}, the compiled machine needs {json.dumps(want)}")


def inspect_base(path: str) -> BaseCheckpoint:
    if not os.path.exists(path):
        raise _bad(path, "no such directory")
    if not os.path.isdir(path):
        raise _bad(path, "not a directory (give the Hugging Face model directory)")
    config = _read_json(path, CONFIG)
    mt = config.get("model_type")
    if mt not in MODEL_TYPES:
        raise _bad(path, f"model_type is {json.dumps(mt)}, not a Qwen3.5 checkpoint ({' or '.join(MODEL_TYPES)})")
    q = config.get("qgpu")
    if isinstance(q, dict) and q.get("format_version") == 1:  # its machine is among the text layers
        raise _bad(path, "was linked by an earlier qgcc (qgpu format 1, the machine among its text layers); "
                         "give the checkpoint it was linked from")
    # Any other qgpu section without the machine's tensors (checked below) is stale, e.g. kept by
    # save_pretrained from a model loaded from a patched checkpoint: the new section replaces it.
    text_key = "text_config" if mt == "qwen3_5" else None
    tc = config.get("text_config") if text_key else config
    if not isinstance(tc, dict):
        raise _bad(path, "text_config is missing")
    prefix = "text_config." if text_key else ""
    check_geometry(path, tc, prefix)
    n = tc.get("num_hidden_layers")
    if type(n) is not int or n < 0:
        raise _bad(path, f"{prefix}num_hidden_layers is {json.dumps(n)}, expected a count")
    lt = tc.get("layer_types")
    if lt is None:
        lt = default_layer_types(tc, n)
    if not isinstance(lt, list) or len(lt) != n:
        raise _bad(path, f"{prefix}layer_types has {len(lt) if isinstance(lt, list) else 'no'} entries, "
                         f"{prefix}num_hidden_layers is {n}")

    index_meta: dict = {}
    if os.path.exists(os.path.join(path, INDEX)):
        index = _read_json(path, INDEX)
        wm = index.get("weight_map")
        if not isinstance(wm, dict) or not all(isinstance(v, str) for v in wm.values()):
            raise _bad(path, f"{INDEX} has no weight_map")
        index_meta = index.get("metadata") if isinstance(index.get("metadata"), dict) else {}
        shards = list(dict.fromkeys(wm.values()))
        indexed = True
    elif os.path.exists(os.path.join(path, SINGLE)):
        shards, wm, indexed = [SINGLE], {}, False
    else:
        raise _bad(path, f"no {SINGLE} or {INDEX} (only safetensors checkpoints can be linked)")
    names: dict[str, TensorInfo] = {}
    for shard in shards:
        if os.path.basename(shard) != shard:
            raise _bad(path, f"{INDEX} names a shard outside the directory: {shard}")
        try:
            tensors, _ = read_header(os.path.join(path, shard))
        except HeaderError as e:
            raise _bad(path, f"{shard}: {e}") from None
        for k, info in tensors.items():
            names[k] = info
            if not indexed:
                wm[k] = shard
    missing = [k for k in wm if k not in names]
    if missing:
        raise _bad(path, f"tensor {missing[0]} is in {INDEX} but not in {wm[missing[0]]}")

    if any(k.startswith("mtp.qgpu.") for k in wm):  # writer.LAYER_PREFIX: where the machine goes
        raise _bad(path, "already carries a qgcc machine (tensors mtp.qgpu.*); "
                         "give the checkpoint it was linked from")
    embeds = sorted(k[:-len("embed_tokens.weight")] for k in wm if k.endswith("embed_tokens.weight"))
    if len(embeds) != 1:
        raise _bad(path, "cannot tell which tensors are the text model's "
                         f"({len(embeds)} tensors named *embed_tokens.weight)")
    text_prefix = embeds[0]
    layer_ids = {int(k[len(text_prefix) + 7:].split(".", 1)[0]) for k in wm
                 if k.startswith(text_prefix + "layers.") and k[len(text_prefix) + 7:].split(".", 1)[0].isdigit()}
    if layer_ids != set(range(n)):
        raise _bad(path, f"the weights hold text layers {sorted(layer_ids)[:3]}..{max(layer_ids, default=-1)}, "
                         f"{prefix}num_hidden_layers is {n}")
    return BaseCheckpoint(path, config, text_key, text_prefix, n, list(lt), dict(wm), shards, indexed,
                          index_meta, sum(i.end - i.begin for i in names.values()))
