"""Reading safetensors headers and writing the machine shard, without loading tensors.

Why by hand: a base checkpoint can be many GB, so the linker must never hold a
shard in memory; it only needs each shard's header (names, dtypes, shapes).  The
machine shard is ~4.2 GB of float32 of which ~99.9% is zero, so it is written
sparsely: the header, then only the file pages that hold a non-zero value
(`pwrite` at their offsets); the zeros are holes that the file system fills in
on read.  The file is an ordinary safetensors file whatever the file system
(one without holes simply stores the zeros).
"""

from __future__ import annotations

import json
import os
import struct
from dataclasses import dataclass

import numpy as np

DTYPE_SIZES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1,
               "BOOL": 1, "U16": 2, "U32": 4, "U64": 8, "F8_E4M3": 1, "F8_E5M2": 1}
PAGE = 4096  # write granularity: one file-system block
PAGES_PER_BATCH = 4096  # 16 MiB of pages in memory at a time
MAX_HEADER = 100 * 1024 * 1024  # safetensors' own limit
CHUNK = 16 * 1024 * 1024  # bytes read at a time


class HeaderError(ValueError):
    """A file whose safetensors header cannot be read; the message says what is wrong."""


@dataclass(frozen=True)
class TensorInfo:
    dtype: str
    shape: tuple[int, ...]
    begin: int  # byte offsets in the data section
    end: int


def read_header(path: str) -> tuple[dict[str, TensorInfo], dict[str, str]]:
    """(tensors by name, __metadata__) of a safetensors file, reading only its header."""
    try:
        with open(path, "rb") as f:
            head = f.read(8)
            if len(head) < 8:
                raise HeaderError("truncated: too short for a safetensors header")
            (n,) = struct.unpack("<Q", head)
            if n > MAX_HEADER:
                raise HeaderError("corrupt safetensors header (header length too large)")
            raw = f.read(n)
            size = os.fstat(f.fileno()).st_size
    except OSError as e:
        raise HeaderError(f"cannot read: {e.strerror or e}") from None
    if len(raw) < n:
        raise HeaderError("truncated safetensors header")
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise HeaderError("corrupt safetensors header") from None
    if not isinstance(header, dict):
        raise HeaderError("corrupt safetensors header")
    meta = header.pop("__metadata__", None) or {}
    tensors = {}
    for name, t in header.items():
        try:
            info = TensorInfo(t["dtype"], tuple(int(s) for s in t["shape"]), int(t["data_offsets"][0]),
                              int(t["data_offsets"][1]))
        except (KeyError, TypeError, ValueError, IndexError):
            raise HeaderError(f"corrupt safetensors header (tensor '{name}')") from None
        if 8 + n + info.end > size:
            raise HeaderError(f"truncated: tensor '{name}' ends past the end of the file")
        tensors[name] = info
    return tensors, meta


# How each stored dtype's elements are laid out: (size, little-endian numpy dtype of the bits).
# bfloat16 is the upper half of a float32, so its bits are handled as uint16.
ELEMENT = {"F32": (4, "<f4"), "BF16": (2, "<u2")}


def to_bits(val: np.ndarray, dtype: str) -> np.ndarray:
    """Float32 values as the stored elements of `dtype`; the caller has checked they are exact there."""
    v = np.ascontiguousarray(val, dtype=np.float32)
    if dtype == "F32":
        return v.astype("<f4")
    bits = v.view(np.uint32)
    if np.any(bits & 0xFFFF):
        raise ValueError("a value is not a bfloat16 value")
    return (bits >> 16).astype("<u2")


def from_bits(raw: np.ndarray, dtype: str) -> np.ndarray:
    """Stored elements of `dtype` as float32 values (widening bfloat16 is exact)."""
    if dtype == "F32":
        return raw.astype(np.float32)
    return (raw.astype(np.uint32) << 16).view(np.float32)


@dataclass
class SparseEntry:
    """One tensor given by its non-zero entries (flat indices ascending, float32 values), stored as `dtype`."""
    name: str
    shape: tuple[int, ...]
    idx: np.ndarray  # int64
    val: np.ndarray  # float32
    dtype: str = "F32"  # or "BF16" (every value must then be a bfloat16 value)


def write_sparse_shard(path: str, entries: list[SparseEntry], metadata: dict[str, str]) -> int:
    """Write a safetensors file holding `entries` densely; returns the data section's size.

    Memory stays at a few times the number of non-zeros, whatever the dense size.  All
    entries share one dtype (F32 or BF16).
    """
    dtypes = {e.dtype for e in entries} or {"F32"}
    if len(dtypes) != 1:
        raise ValueError("one shard, one dtype")
    (dtype,) = dtypes
    size, view = ELEMENT[dtype]
    header: dict = {"__metadata__": dict(metadata)}
    offset = 0
    starts = []
    for e in entries:
        nbytes = size * int(np.prod(e.shape))
        header[e.name] = {"dtype": dtype, "shape": list(e.shape), "data_offsets": [offset, offset + nbytes]}
        starts.append(offset)
        offset += nbytes
    hbytes = json.dumps(header, separators=(",", ":")).encode("utf-8")
    hbytes += b" " * (-len(hbytes) % 8)  # safetensors pads the header to 8 bytes with spaces
    data_start = 8 + len(hbytes)
    # Every non-zero as (file offset, value); pages that hold any are written whole.
    offs = np.concatenate([data_start + s + size * e.idx.astype(np.int64) for s, e in zip(starts, entries)]
                          or [np.zeros(0, np.int64)])
    vals = np.concatenate([to_bits(e.val, dtype) for e in entries] or [np.zeros(0, view)])
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        total = data_start + offset
        os.ftruncate(fd, total)
        page = offs // PAGE
        pages, inv = np.unique(page, return_inverse=True)
        for lo in range(0, len(pages), PAGES_PER_BATCH):  # bounded memory: a batch of pages at a time
            hi = min(lo + PAGES_PER_BATCH, len(pages))
            sel = slice(int(np.searchsorted(inv, lo)), int(np.searchsorted(inv, hi)))  # offs is ascending
            buf = np.zeros((hi - lo, PAGE), np.uint8)
            # data_start and every offset are multiples of the element size: no value straddles a page.
            buf.view(view)[inv[sel] - lo, (offs[sel] % PAGE) // size] = vals[sel]
            breaks = np.flatnonzero(np.diff(pages[lo:hi]) != 1) + 1
            for run in np.split(np.arange(hi - lo), breaks):  # one pwrite per run of consecutive pages
                at = int(pages[lo + run[0]]) * PAGE
                os.pwrite(fd, buf[run[0]:run[-1] + 1].tobytes()[:total - at], at)
        # The header last: the first data page may share its file page with the header.
        os.pwrite(fd, struct.pack("<Q", len(hbytes)) + hbytes, 0)
        os.fsync(fd)
    finally:
        os.close(fd)
    return offset


def read_nonzeros(fd: int, start: int, count: int, dtype: str = "F32") -> tuple[np.ndarray, np.ndarray]:
    """(flat indices, float32 values) of the non-zero entries of a `dtype` tensor at file offset `start`.

    Only the file's data extents are read (SEEK_DATA / SEEK_HOLE): a hole is zeros, so
    a sparse machine shard costs what its non-zeros occupy, not its 4.2 GB.  Where the
    file system has no holes (or a copy filled them) the whole tensor is read, in
    pieces of at most CHUNK bytes, with the same result.
    """
    size, view = ELEMENT[dtype]
    end = start + size * count
    idx_parts, val_parts = [], []
    pos = start
    while pos < end:
        try:
            data = os.lseek(fd, pos, os.SEEK_DATA)
            hole = os.lseek(fd, data, os.SEEK_HOLE)
        except OSError:  # ENXIO: only a hole is left (or no SEEK_DATA support beyond EOF)
            break
        if data >= end:
            break
        a = max(pos, data)
        a -= (a - start) % size  # extents are block-aligned; stay on entry boundaries
        b = min(end, hole)
        b += -(b - start) % size
        b = min(end, b)
        while a < b:
            n = min(b - a, CHUNK)
            buf = from_bits(np.frombuffer(os.pread(fd, n, a), dtype=view), dtype)
            if buf.size * size != n:
                raise HeaderError("truncated: a tensor ends past the end of the file")
            nz = np.flatnonzero(buf)
            idx_parts.append(nz + (a - start) // size)
            val_parts.append(buf[nz])
            a += n
        pos = b
    if not idx_parts:
        return np.zeros(0, np.int64), np.zeros(0, np.float32)
    return np.concatenate(idx_parts).astype(np.int64), np.concatenate(val_parts)
