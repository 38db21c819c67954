"""The .qg container: a compiled program (and, later, the network weights) in one safetensors file.

Layout (docs/qg-format.md):

* tensor `program.code`: int64 [n], the encode() words of the instructions
  reinterpreted as signed 64-bit integers;
* any extra tensors (the linker's weights, later);
* string metadata: `format`="qg", `format_version`="1", `kernels` (JSON),
  `lines` (JSON), `source_name`, `source`, `qsass`, `content_hash`, plus extras.

`content_hash` is the sha256 (hex) of: the code tensor's bytes (little-endian
int64), then the `kernels` metadata string (UTF-8), then for every other tensor
in sorted name order its name, NUL, dtype name, JSON shape, NUL and its raw
little-endian C-order bytes, then for every extra metadata key in sorted order
the key, NUL, the value, NUL.  It is checked on load: everything that decides
how the program runs (the linked machine's field map is extra metadata) is
covered; only annotations (source, lines, qsass) are not.

Files are written atomically (temp file in the same directory, fsync,
os.replace): on any error no output file exists and an existing one is untouched.
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .atomicfile import atomic_write
from .diagnostics import QgFileError
from .isa import Instr, decode, encode
from .program import ELEM_DTYPES, Constant, DeviceAssert, Kernel, Param, PrintfFormat, Program, StructLayout

FORMAT = "qg"
FORMAT_VERSION = "2"  # 2: extra metadata is hashed
CODE_TENSOR = "program.code"
RESERVED_META = ("format", "format_version", "kernels", "lines", "source_name", "source", "qsass",
                 "content_hash", "constants", "device_io")
_FIX = "recompile it with qgcc"



@dataclass
class QgFile:
    path: str
    program: Program
    tensors: dict[str, np.ndarray] = field(default_factory=dict)  # every tensor but program.code
    meta: dict[str, str] = field(default_factory=dict)  # all string metadata


# -- atomic writes ------------------------------------------------------------

# -- encoding helpers -----------------------------------------------------------

def code_tensor(program: Program) -> np.ndarray:
    words = [encode(ins) for ins in program.code]
    return np.array([w - (1 << 64) if w >= (1 << 63) else w for w in words], dtype=np.int64)


def kernels_json(kernels: list[Kernel]) -> str:
    # "local_words" only when a kernel has local arrays: other programs hash as before.
    return json.dumps([
        {"name": k.name, "entry": k.entry, "end": k.end,
         "params": [{"name": p.name, "ctype": p.ctype, "pointer": p.pointer, "const": p.const,
                     **({"struct": {"name": p.struct.name, "cells": [list(c) for c in p.struct.cells]}}
                        if p.struct is not None else {}),
                     **({"texture": p.texture} if p.texture else {}),
                     **({"indirect": True} if p.indirect else {})}
                    for p in k.params],
         "shared_words": k.shared_words, "regs": k.regs,
         **({"local_words": k.local_words} if k.local_words else {})}
        for k in kernels], separators=(",", ":"))


def constants_json(constants: list[Constant]) -> str:
    return json.dumps([{"name": c.name, "ctype": c.ctype, "dims": list(c.dims), "base": c.base, "init": c.init}
                       for c in constants], separators=(",", ":"))


def _hashed_program(kjson: str, cjson: str | None, djson: str | None = None) -> str:
    """What the hash covers of the program's description: the kernels, then the constants if any
    (a program without __constant__ variables hashes as before they existed), then the printf
    formats and asserts if any."""
    out = kjson if cjson is None else kjson + "\0constants\0" + cjson
    return out if djson is None else out + "\0device_io\0" + djson


def device_io_json(program: Program) -> str | None:
    """The printf formats and asserts (runtime/printf.py), or None when there are none."""
    if not program.printf and not program.asserts:
        return None
    return json.dumps({"printf": [[f.text, f.kinds, list(f.literals), f.line] for f in program.printf],
                       "asserts": [[a.file, a.line, a.cond, a.function, *([a.message] if a.message else [])]
                                   for a in program.asserts]},
                      separators=(",", ":"))


def _parse_device_io(path: str, text: str | None) -> tuple[list[PrintfFormat], list[DeviceAssert]]:
    if text is None:
        return [], []
    bad = _bad(path, "corrupt 'device_io' metadata")
    try:
        d = json.loads(text)
        printf = [PrintfFormat(str(t), str(k), tuple(str(x) for x in lits), int(ln)) for t, k, lits, ln in d["printf"]]
        asserts = [DeviceAssert(str(f), int(ln), str(c), str(fn), *(str(m) for m in rest))
                   for f, ln, c, fn, *rest in d["asserts"] if len(rest) <= 1]
        if len(asserts) != len(d["asserts"]):
            raise bad
    except (ValueError, TypeError, KeyError):
        raise bad from None
    if any(set(f.kinds) - set("iuIUfdsp") for f in printf):
        raise bad
    return printf, asserts


def program_description(program: Program) -> str:
    """The hashed description of a program's kernels and constants (.qg files, checkpoints)."""
    return _hashed_program(kernels_json(program.kernels),
                           constants_json(program.constants) if program.constants else None,
                           device_io_json(program))


def content_hash(code: np.ndarray, kernels: str, tensors: dict[str, np.ndarray],
                 extra_meta: dict[str, str] | None = None) -> str:
    h = hashlib.sha256()
    h.update(np.ascontiguousarray(code, dtype="<i8").tobytes())
    h.update(kernels.encode("utf-8"))
    for name in sorted(tensors):
        arr = np.asarray(tensors[name])
        h.update(name.encode("utf-8") + b"\0")
        h.update(arr.dtype.name.encode() + json.dumps(list(arr.shape)).encode() + b"\0")
        h.update(np.ascontiguousarray(arr, dtype=arr.dtype.newbyteorder("<")).tobytes())
    for key in sorted(extra_meta or {}):
        h.update(key.encode("utf-8") + b"\0" + extra_meta[key].encode("utf-8", "surrogatepass") + b"\0")
    return h.hexdigest()


def extra_meta_of(meta: dict[str, str]) -> dict[str, str]:
    """The metadata that is not one of the format's own keys (the linker's, for instance)."""
    return {k: v for k, v in meta.items() if k not in RESERVED_META}


# -- save -------------------------------------------------------------------------

def save(program: Program, path: str | os.PathLike, extra_tensors: dict[str, np.ndarray] | None = None,
         extra_meta: dict[str, str] | None = None) -> None:
    """Write `program` (and extras) to `path` atomically.

    Raises ValueError for a malformed program or bad extras (nothing is written),
    OSError when the file cannot be written (an existing file is left untouched).
    """
    from .asm.disassembler import check_program, disassemble

    problem = check_program(program)
    if problem:
        raise ValueError(f"cannot save a malformed program: {problem}")
    extra_tensors = dict(extra_tensors or {})
    extra_meta = dict(extra_meta or {})
    for name, arr in extra_tensors.items():
        if not isinstance(name, str) or not name or name == CODE_TENSOR:
            raise ValueError(f"extra tensor name {name!r} is reserved or empty")
        if not isinstance(arr, np.ndarray):
            raise ValueError(f"extra tensor '{name}' is not a numpy array")
    for key, value in extra_meta.items():
        if key in RESERVED_META or key == "__metadata__":
            raise ValueError(f"metadata key '{key}' is reserved")
        if not isinstance(key, str) or not isinstance(value, str):
            raise ValueError(f"metadata {key!r} must map a string to a string")
    code = code_tensor(program)
    kjson = kernels_json(program.kernels)
    cjson = constants_json(program.constants) if program.constants else None
    djson = device_io_json(program)
    meta = dict(extra_meta)
    if cjson is not None:
        meta["constants"] = cjson
    if djson is not None:
        meta["device_io"] = djson
    meta.update({
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "kernels": kjson,
        "lines": json.dumps([ins.line for ins in program.code], separators=(",", ":")),
        "source_name": program.source_name,
        "source": "\n".join(program.source_lines),
        "qsass": disassemble(program, header=f"{program.source_name}: qsass disassembly"),
        "content_hash": content_hash(code, _hashed_program(kjson, cjson, djson), extra_tensors, extra_meta),
    })
    import safetensors.numpy

    tensors = {CODE_TENSOR: code}
    tensors.update({k: np.ascontiguousarray(v) for k, v in extra_tensors.items()})
    try:
        data = safetensors.numpy.save(tensors, metadata=meta)
    except Exception as e:  # unsupported dtype and the like
        raise ValueError(f"cannot serialise the tensors: {e}") from None
    atomic_write(path, _sorted_header(data))


def _sorted_header(data: bytes) -> bytes:
    """The same file with its header's keys in sorted order.  safetensors writes the metadata
    from a hash map, so two saves of one program differed in bytes; sorted, a .qg is a function
    of its program (reproducible builds, and caches keyed by a file's bytes keep working)."""
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n].decode("utf-8"))
    text = json.dumps(header, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    if len(text) > n:  # the same content never needs more room; keep safetensors' own order then
        return data
    return data[:8] + text + b" " * (n - len(text)) + data[8 + n:]


# -- load ---------------------------------------------------------------------------

def _bad(path: str, what: str, fix: str = _FIX) -> QgFileError:
    return QgFileError(f"{path}: {what}; {fix}")


def _read_header(path: str, data: bytes) -> dict:
    if len(data) < 8:
        raise _bad(path, "not a .qg file (truncated: too short for a safetensors header)")
    (n,) = struct.unpack("<Q", data[:8])
    if n > len(data) - 8:
        raise _bad(path, "not a .qg file (truncated or corrupt safetensors header)")
    try:
        header = json.loads(data[8:8 + n].decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise _bad(path, "not a .qg file (corrupt safetensors header)") from None
    if not isinstance(header, dict):
        raise _bad(path, "not a .qg file (corrupt safetensors header)")
    return header


def _json_list(text: str, bad: Exception) -> list:
    """A metadata value that must be a JSON list; anything else is the caller's named error."""
    try:
        raw = json.loads(text)
    except ValueError:
        raise bad from None
    if not isinstance(raw, list):
        raise bad
    return raw


def _parse_kernels(path: str, text: str) -> list[Kernel]:
    bad = _bad(path, "corrupt 'kernels' metadata")
    raw = _json_list(text, bad)
    kernels = []
    for k in raw:
        if not isinstance(k, dict) or set(k) - {"local_words"} != {"name", "entry", "end", "params",
                                                                   "shared_words", "regs"}:
            raise bad
        if not isinstance(k["params"], list):
            raise bad
        params = []
        for p in k["params"]:
            if not isinstance(p, dict) or set(p) - {"struct", "texture", "indirect"} != {"name", "ctype", "pointer",
                                                                                 "const"}:
                raise bad
            if p.get("texture", 1) not in (1, 2) or ("texture" in p and p["pointer"] is not True) \
                    or p.get("indirect", True) is not True:
                raise bad
            layout = None
            if "struct" in p:  # a pointer to a struct: its cells (a buffer is a structured array)
                st = p["struct"]
                if p["ctype"] != "struct" or not isinstance(st, dict) or set(st) != {"name", "cells"} \
                        or not isinstance(st["cells"], list) or not all(
                            isinstance(c, list) and len(c) == 2 and c[1] in ELEM_DTYPES for c in st["cells"]):
                    raise bad
                layout = StructLayout(st["name"], tuple((str(a), b) for a, b in st["cells"]))
            elif p["ctype"] not in ELEM_DTYPES:
                raise bad
            params.append(Param(p["name"], p["ctype"], p["pointer"], p["const"], layout, p.get("texture", 0),
                                indirect="indirect" in p))
        kernels.append(Kernel(k["name"], k["entry"], k["end"], params, k["shared_words"], k["regs"],
                              k.get("local_words", 0)))
    return kernels


def _parse_constants(path: str, text: str | None) -> list[Constant]:
    if text is None:
        return []
    bad = _bad(path, "corrupt 'constants' metadata")
    raw = _json_list(text, bad)
    out = []
    for c in raw:
        if not isinstance(c, dict) or set(c) != {"name", "ctype", "dims", "base", "init"} \
                or not isinstance(c["dims"], list) or not isinstance(c["init"], list):
            raise bad
        out.append(Constant(c["name"], c["ctype"], tuple(c["dims"]), c["base"], c["init"]))
    return out


def load(path: str | os.PathLike) -> QgFile:
    """Read and fully validate a .qg file; every problem is a one-line QgFileError."""
    from .asm.disassembler import check_program

    spath = os.fspath(path)
    try:
        data = Path(spath).read_bytes()
    except FileNotFoundError:
        raise QgFileError(f"{spath}: no such file; compile a kernel with 'qgcc KERNEL.cu -o {spath}'") from None
    except IsADirectoryError:
        raise QgFileError(f"{spath}: is a directory, not a .qg file") from None
    except OSError as e:
        raise QgFileError(f"{spath}: cannot read: {e.strerror or e}") from None
    header = _read_header(spath, data)
    meta = header.get("__metadata__")
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise _bad(spath, "not a .qg file (safetensors without format=qg metadata)")
    if any(not isinstance(v, str) for v in meta.values()):
        raise _bad(spath, "not a .qg file (non-string metadata)")
    if meta.get("format_version") != FORMAT_VERSION:
        raise _bad(spath, f"format version {meta.get('format_version')!r} is not supported "
                          f"(this qgcc reads version {FORMAT_VERSION})")
    for key in ("kernels", "lines", "content_hash"):
        if not isinstance(meta.get(key), str):
            raise _bad(spath, f"metadata '{key}' is missing")
    if CODE_TENSOR not in header:
        raise _bad(spath, f"tensor '{CODE_TENSOR}' is missing")
    import safetensors.numpy

    try:
        tensors = safetensors.numpy.load(data)
    except Exception as e:
        msg = str(e).replace("\n", " ")
        raise _bad(spath, f"not a .qg file (truncated or corrupt: {msg})") from None
    code = tensors.pop(CODE_TENSOR)
    if code.dtype != np.int64 or code.ndim != 1:
        raise _bad(spath, f"tensor '{CODE_TENSOR}' must be int64 [n], found {code.dtype} {list(code.shape)}")
    if content_hash(code, _hashed_program(meta["kernels"], meta.get("constants"), meta.get("device_io")), tensors,
                    extra_meta_of(meta)) != meta["content_hash"]:
        raise _bad(spath, "content hash mismatch (the file was modified or damaged)")
    kernels = _parse_kernels(spath, meta["kernels"])
    constants = _parse_constants(spath, meta.get("constants"))
    printf, asserts = _parse_device_io(spath, meta.get("device_io"))
    try:
        lines = json.loads(meta["lines"])
    except ValueError:
        lines = None
    if not isinstance(lines, list) or len(lines) != len(code) or \
            any(not (ln is None or type(ln) is int) for ln in lines):
        raise _bad(spath, "corrupt 'lines' metadata")
    instrs: list[Instr] = []
    for pc, (word, line) in enumerate(zip(code.tolist(), lines)):
        try:
            ins = decode(word & ((1 << 64) - 1))
        except ValueError as e:
            raise _bad(spath, f"instruction {pc} is invalid ({e})") from None
        ins.line = line
        instrs.append(ins)
    source = meta.get("source", "")
    program = Program(code=instrs, kernels=kernels,
                      source_name=meta.get("source_name", spath),
                      source_lines=source.split("\n") if source else [], constants=constants,
                      printf=printf, asserts=asserts)
    problem = check_program(program)
    if problem:
        raise _bad(spath, f"inconsistent program ({problem})")
    return QgFile(spath, program, tensors, dict(meta))
