"""Write a patched checkpoint: the base, byte for byte, plus the compiled layers beside the text model.

Why this shape (docs/checkpoint.md):
* The base's shard files are copied verbatim (the kernel's copy, never through
  Python memory), so every original tensor is byte-identical by construction and
  peak memory does not grow with the checkpoint.
* The compiled layers go into one new shard, in the base's dtype (bfloat16 for
  Qwen3.5-2B, machine_dtype.py) or float32, as stock decoder-layer tensors under `mtp.qgpu.layers.<i>.*`, beside the text model rather than in it:
  transformers' Qwen3.5 classes ignore every `mtp.*` tensor on load (where real
  checkpoints keep their multi-token-prediction head), so the text forward pass,
  the text config and every output stay the base's, bit for bit.  The `qgpu`
  section of config.json carries the layers' own text config, from which
  transformers' `Qwen3_5DecoderLayer` loads them.  That shard is written sparsely
  (shards.py).
* transformers loads `model.safetensors` in preference to an index, so a
  single-file base becomes two shards with an index.
* Everything is written into a temporary sibling directory that is renamed onto
  OUTDIR only when complete: OUTDIR is either absent/empty or whole.
"""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass

from ..version import __version__
from ..diagnostics import CheckpointError
from ..atomicfile import fsync_dir
from ..program import Program
from .base import CONFIG, INDEX, BaseCheckpoint
from ..qwen35 import ValueHeads
from .machine_dtype import NAMES, to_bf16
from .shards import SparseEntry, write_sparse_shard

FORMAT = "qgpu"
FORMAT_VERSION = 2  # 1: the machine appended to the text model's layers (qgrun still reads it)
PROGRAM_FILE = "qgpu.qg"
# Beside the text model, under the prefix that transformers' Qwen3.5 classes skip on load
# (`_keys_to_ignore_on_load_unexpected = [r"^mtp.*", ...]`), and under a sub-prefix of its
# own so that it never collides with a real multi-token-prediction head (`mtp.layers.0.*`,
# `mtp.fc.weight`, ...).
LAYER_PREFIX = "mtp.qgpu.layers."
_SHARD = re.compile(r"^(?P<stem>.+)-(?P<i>\d{5})-of-(?P<n>\d{5})\.safetensors$")


@dataclass
class LinkedCheckpoint:
    path: str
    machine_layers: list[int]
    machine_shard: str
    shard_names: dict[str, str]  # base shard -> its name in the output
    machine_bytes: int  # data bytes of the machine shard (dense float32)


def shard_names(base: BaseCheckpoint) -> tuple[dict[str, str], str]:
    """(base shard -> output name, machine shard name), numbered like the base's shards."""
    shards = base.shards
    if not base.indexed:
        return {shards[0]: "model-00001-of-00002.safetensors"}, "model-00002-of-00002.safetensors"
    ms = [_SHARD.match(s) for s in shards]
    n = len(shards)
    if all(ms) and len({m["stem"] for m in ms}) == 1 and all(int(m["n"]) == n for m in ms) \
            and sorted(int(m["i"]) for m in ms) == list(range(1, n + 1)):
        stem = ms[0]["stem"]
        renamed = {s: f"{stem}-{int(m['i']):05d}-of-{n + 1:05d}.safetensors" for s, m in zip(shards, ms)}
        return renamed, f"{stem}-{n + 1:05d}-of-{n + 1:05d}.safetensors"
    name = "model-qgpu.safetensors"
    while name in shards:
        name = "_" + name
    return {s: s for s in shards}, name


def check_outdir(outdir: str, base: BaseCheckpoint) -> None:
    real, real_base = os.path.realpath(outdir), os.path.realpath(base.path)
    if real == real_base:
        raise CheckpointError(f"output {outdir}: is the base checkpoint itself")
    if real.startswith(real_base + os.sep):  # the copy of the base would include the output being written
        raise CheckpointError(f"output {outdir}: is inside the base checkpoint; give a directory outside it")
    parent = os.path.dirname(os.path.abspath(outdir))
    if not os.path.isdir(parent):
        raise CheckpointError(f"output {outdir}: the directory {parent} does not exist")
    if os.path.exists(outdir):
        if not os.path.isdir(outdir):
            raise CheckpointError(f"output {outdir}: exists and is not a directory")
        if os.listdir(outdir):
            raise CheckpointError(f"output {outdir}: exists and is not empty; give a new directory")


def _copy(src: str, dst: str) -> None:
    shutil.copyfile(src, dst)  # sendfile/copy_file_range: the bytes never pass through Python
    with open(dst, "rb") as f:
        os.fsync(f.fileno())


def _copy_others(base: BaseCheckpoint, tmp: str, skip: set[str]) -> None:
    """Tokenizer, generation config, chat template, README...: everything we do not rewrite."""
    for name in sorted(os.listdir(base.path)):
        if name in skip:
            continue
        src = os.path.join(base.path, name)
        if os.path.isdir(src):
            shutil.copytree(src, os.path.join(tmp, name))
        else:
            _copy(src, os.path.join(tmp, name))


def patched_config(base: BaseCheckpoint, qgpu: dict) -> dict:
    """The base's config.json plus the qgpu section; the text model's own config is not touched."""
    cfg = copy.deepcopy(base.config)
    cfg["qgpu"] = qgpu
    return cfg


def machine_text_config(num_layers: int, value_heads: int, dtype: str = "float32") -> dict:
    """The Qwen3_5TextConfig under which the machine's layers are stock `Qwen3_5DecoderLayer`s.

    The hf engine's own config (qgcc.qwen35.text_config) at the base's value heads; the base's
    geometry was checked equal to it field by field (base.check_geometry).
    """
    from ..qwen35 import text_config

    tc = text_config(num_layers, value_heads).to_dict()
    for noise in ("id2label", "label2id", "_name_or_path"):
        tc.pop(noise, None)
    tc["dtype"] = dtype
    return tc


def write_checkpoint(base: BaseCheckpoint, program: Program, tensors: dict, meta: dict[str, str],
                     outdir: str, dtype: str = "float32") -> LinkedCheckpoint:
    """Write OUTDIR from the base and the linker's `to_tensors` output (sparse layers and metadata).

    `dtype` ("float32" or "bfloat16") is what the machine's tensors are stored as
    (machine_dtype.py: a bf16 shard rounds only the value level, and qgrun undoes it)."""
    from ..qwen35 import SHAPES
    from ..qgfile import RESERVED_META, code_tensor, content_hash, kernels_json, program_description, save

    check_outdir(outdir, base)
    num = int(meta["num_layers"])
    layers = list(range(num))
    kjson = kernels_json(program.kernels)
    extra_meta = {k: v for k, v in meta.items() if k not in RESERVED_META}
    # The same hash a .qg of this program and these layers carries (format 2 covers the
    # linker's metadata too), so the two can be compared.
    program_hash = content_hash(code_tensor(program), program_description(program), tensors, extra_meta)
    renamed, machine_shard = shard_names(base)
    heads = ValueHeads(base.value_heads)
    qgpu = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "layer_prefix": LAYER_PREFIX,
        "machine_layers": layers,
        "text_config": machine_text_config(num, heads.count, dtype),
        "dtype": dtype,
        "value_heads": heads.count,
        "value_head_map": heads.head_map,
        "shard": machine_shard,
        "program": PROGRAM_FILE,
        "program_hash": program_hash,
        "kernels": json.loads(kjson),
        "source_name": program.source_name,
        "qgcc_version": __version__,
    }
    entries = []
    for i, layer in enumerate(layers):
        for name in SHAPES:
            idx, val = heads.to_base(name, tensors[f"layers.{i}.{name}.idx"], tensors[f"layers.{i}.{name}.val"])
            if dtype == "bfloat16":
                try:
                    val = to_bf16(name, val)
                except ValueError as e:
                    raise CheckpointError(f"cannot store the machine in bfloat16: layer {i}: {e}; "
                                          f"use --machine-dtype float32") from None
            entries.append(SparseEntry(f"{LAYER_PREFIX}{layer}.{name}", heads.shape(name), idx, val,
                                       NAMES[dtype]))

    parent = os.path.dirname(os.path.abspath(outdir))
    tmp = tempfile.mkdtemp(prefix=f".{os.path.basename(os.path.abspath(outdir))}.", suffix=".tmp", dir=parent)
    try:
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(tmp, 0o777 & ~mask)  # mkdtemp makes it private; OUTDIR should look like any new directory
        for src, dst in renamed.items():
            _copy(os.path.join(base.path, src), os.path.join(tmp, dst))
        machine_bytes = write_sparse_shard(os.path.join(tmp, machine_shard), entries,
                                           {"format": "pt", "qgpu_program_hash": program_hash})
        weight_map = {k: renamed[v] for k, v in base.weight_map.items()}
        weight_map.update({e.name: machine_shard for e in entries})
        index_meta = dict(base.index_meta)
        index_meta["total_size"] = base.tensor_bytes + machine_bytes
        if "total_parameters" in index_meta:
            index_meta["total_parameters"] = int(index_meta["total_parameters"]) + machine_bytes // (
                2 if dtype == "bfloat16" else 4)
        index = {"metadata": index_meta, "weight_map": dict(sorted(weight_map.items()))}
        _write_json(os.path.join(tmp, INDEX), index)
        _write_json(os.path.join(tmp, CONFIG), patched_config(base, qgpu))
        # The program (code, kernel table, source, machine description) without the layers,
        # which live in the shard; an ordinary .qg, validated by qgfile.load on the way back.
        save(program, os.path.join(tmp, PROGRAM_FILE), extra_meta=extra_meta)
        _copy_others(base, tmp, skip={CONFIG, INDEX, *base.shards})
        fsync_dir(tmp)
        os.replace(tmp, outdir)  # an empty OUTDIR is replaced; a non-empty one was refused above
        fsync_dir(parent)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return LinkedCheckpoint(outdir, layers, machine_shard, renamed, machine_bytes)


def _write_json(path: str, data: dict) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2)
        f.write("\n")
        f.flush()
        os.fsync(f.fileno())


