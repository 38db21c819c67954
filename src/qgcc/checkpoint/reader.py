"""qgrun's side: a patched checkpoint directory as a program source.

The machine layers are read from the checkpoint's own shards by tensor name,
straight from safetensors (never through a model), one tensor at a time, widened to
float32 (a bf16 shard's value level is put back, machine_dtype.py) and
re-sparsified.  The result is checked against the `program_hash` in config.json's
`qgpu` section, which is the content hash the same program's .qg would carry: a
checkpoint whose machine layers were altered, or cast to another dtype, is refused
rather than run.

Format 2 keeps the layers beside the text model (`<qgpu.layer_prefix><i>.*`, i.e.
`mtp.qgpu.layers.<i>.*`); format 1, written by earlier versions, appended them to the
text model (`<qgpu.text_prefix>layers.<L>.*`).  Both are read: the tensors and the
hash are the same, only their names differ.
"""

from __future__ import annotations

import json
import os

from typing import TYPE_CHECKING

import numpy as np

from ..diagnostics import QgFileError
from ..qwen35 import GeometryError, ValueHeads
from .base import CONFIG, INDEX, SINGLE
from .machine_dtype import NAMES, from_bf16
from .shards import HeaderError, read_header, read_nonzeros
from .writer import FORMAT, FORMAT_VERSION

if TYPE_CHECKING:
    from ..link.linker import LinkedProgram

READS_VERSIONS = (1, FORMAT_VERSION)

_FIX = "relink it with 'qgcc KERNEL.cu --base BASE -o DIR'"


def is_checkpoint(path: str) -> bool:
    return os.path.isdir(path) and os.path.isfile(os.path.join(path, CONFIG))


def _bad(path: str, what: str) -> QgFileError:
    return QgFileError(f"{path}: {what}; {_FIX}")


def qgpu_section(path: str) -> dict:
    try:
        with open(os.path.join(path, CONFIG), encoding="utf-8") as f:
            config = json.load(f)
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise QgFileError(f"{path}: {CONFIG} is not readable JSON ({getattr(e, 'strerror', None) or e})") from None
    q = config.get("qgpu") if isinstance(config, dict) else None
    if not isinstance(q, dict):
        raise QgFileError(f"{path}: a checkpoint without a qgpu section in {CONFIG} (no compiled program); "
                          f"{_FIX}")
    version = q.get("format_version")
    if q.get("format") != FORMAT or version not in READS_VERSIONS:
        raise _bad(path, f"qgpu format {q.get('format')!r} version {version!r} is not supported "
                         f"(this qgcc reads {FORMAT} versions {', '.join(map(str, READS_VERSIONS))})")
    names = ("layer_prefix", str), ("text_config", dict)
    if version == 1:
        names = (("text_prefix", str),)
    for key, typ in (("machine_layers", list), *names, ("program", str), ("program_hash", str),
                     ("value_heads", int)):
        if not isinstance(q.get(key), typ) or isinstance(q.get(key), bool):
            raise _bad(path, f"qgpu.{key} is missing")
    if not all(type(x) is int for x in q["machine_layers"]):
        raise _bad(path, "qgpu.machine_layers is not a list of layer indices")
    if version > 1:
        _check_text_config(path, q)
    return q


def _check_text_config(path: str, q: dict) -> None:
    """The layers' own config must describe the layers as qgrun reads them (stock DeltaNet, the machine's geometry)."""
    from .base import machine_geometry

    tc = q["text_config"]
    want = dict(machine_geometry(), linear_num_value_heads=q["value_heads"],
                num_hidden_layers=len(q["machine_layers"]),
                layer_types=["linear_attention"] * len(q["machine_layers"]))
    for name, value in want.items():
        if tc.get(name) != value:
            raise _bad(path, f"qgpu.text_config.{name} is {json.dumps(tc.get(name))}, the machine needs "
                             f"{json.dumps(value)}")


def layer_key(q: dict, layer: int, name: str) -> str:
    """The checkpoint name of tensor `name` of machine layer `layer` (an entry of qgpu.machine_layers)."""
    if q["format_version"] == 1:
        return f"{q['text_prefix']}layers.{layer}.{name}"
    return f"{q['layer_prefix']}{layer}.{name}"


def _weight_map(path: str) -> dict[str, str]:
    if os.path.isfile(os.path.join(path, INDEX)):
        try:
            with open(os.path.join(path, INDEX), encoding="utf-8") as f:
                wm = json.load(f)["weight_map"]
        except (OSError, ValueError, KeyError, TypeError):
            raise _bad(path, f"{INDEX} is unreadable") from None
        return dict(wm)
    if os.path.isfile(os.path.join(path, SINGLE)):
        try:
            return dict.fromkeys(read_header(os.path.join(path, SINGLE))[0], SINGLE)
        except HeaderError as e:
            raise _bad(path, f"{SINGLE}: {e}") from None
    raise _bad(path, f"no {INDEX} or {SINGLE}")


def load_checkpoint_program(path: str) -> LinkedProgram:
    """The program of a patched checkpoint and the network it was linked into (for the network engines)."""
    from ..link.linker import LinkedProgram, from_tensors
    from ..qwen35 import SHAPES
    from ..qgfile import code_tensor, content_hash, extra_meta_of, kernels_json, load, program_description

    q = qgpu_section(path)
    program_file = os.path.join(path, os.path.basename(q["program"]))
    if not os.path.isfile(program_file):  # e.g. a copy written by transformers' save_pretrained
        raise _bad(path, f"{q['program']} is missing (transformers' save_pretrained keeps the qgpu section "
                         f"but not the machine)")
    qg = load(program_file)
    program = qg.program
    kjson = kernels_json(program.kernels)
    if json.loads(kjson) != q.get("kernels"):
        raise _bad(path, f"the kernel table in {CONFIG} does not match {q['program']}")
    heads = ValueHeads(q["value_heads"])
    if heads.count <= 0 or heads.count % 16:
        raise _bad(path, f"qgpu.value_heads is {heads.count}, expected a multiple of 16")
    dtype = q.get("dtype", "float32")
    stored = NAMES.get(dtype)
    if stored is None:
        raise _bad(path, f"qgpu.dtype is {dtype!r}, expected one of {', '.join(NAMES)}")
    wm = _weight_map(path)
    headers: dict[str, dict] = {}
    keys: dict[str, list[tuple[str, str]]] = {}  # shard -> [(checkpoint name, .qg name)]
    for i, layer in enumerate(q["machine_layers"]):
        for name in SHAPES:
            shape = heads.shape(name)
            key = layer_key(q, layer, name)
            shard = wm.get(key)
            if shard is None:
                raise _bad(path, f"tensor {key} of the machine is missing")
            if shard not in headers:
                try:
                    headers[shard] = read_header(os.path.join(path, shard))[0]
                except HeaderError as e:
                    raise _bad(path, f"{shard}: {e}") from None
            info = headers[shard].get(key)
            if info is None:
                raise _bad(path, f"tensor {key} is not in {shard}")
            if info.dtype != stored or info.shape != tuple(shape):
                raise _bad(path, f"tensor {key} is {info.dtype} {list(info.shape)}, the machine needs {stored} "
                                 f"{list(shape)} (qgpu.dtype is {dtype})")
            keys.setdefault(shard, []).append((key, f"layers.{i}.{name}"))
    tensors: dict[str, np.ndarray] = {}
    for shard, pairs in keys.items():
        # Plain reads of the data extents, one tensor at a time, rather than an mmap of the
        # whole shard: resident memory stays small whatever the checkpoint's size.
        file = os.path.join(path, shard)
        fd = os.open(file, os.O_RDONLY)
        try:
            data_start = 8 + int.from_bytes(os.pread(fd, 8, 0), "little")
            for key, qname in pairs:
                info = headers[shard][key]
                try:
                    name = qname.split(".", 2)[2]
                    idx, val = read_nonzeros(fd, data_start + info.begin, int(np.prod(info.shape)), stored)
                    if stored == "BF16":
                        val = from_bf16(name, val)
                    idx, val = heads.from_base(name, idx, val)
                except HeaderError as e:
                    raise _bad(path, f"{shard}: {e}") from None
                except GeometryError as e:
                    raise _bad(path, f"tensor {key}: {e}") from None
                tensors[qname + ".idx"] = idx
                tensors[qname + ".val"] = val
        finally:
            os.close(fd)
    if content_hash(code_tensor(program), program_description(program), tensors, extra_meta_of(qg.meta)) != q["program_hash"]:
        raise _bad(path, "the machine layers do not match qgpu.program_hash (modified or damaged)")
    meta = dict(qg.meta)
    meta["num_layers"] = str(len(q["machine_layers"]))
    try:
        network = from_tensors(tensors, meta, [w & ((1 << 64) - 1) for w in code_tensor(program).tolist()])
    except (KeyError, ValueError) as e:
        raise _bad(path, f"the machine description is incomplete ({e})") from None
    network.value_heads = heads.count  # the hf engine builds its stock modules at the checkpoint's geometry
    return LinkedProgram(program, network)
