"""Buffers of structs: a numpy structured array whose fields match the struct's members.

The struct's layout (program.StructLayout, from frontend/structs.py) is one cell per scalar
member (two for a 64-bit one, the low word first) in declaration order, nested structs and array
members flattened; a record of the
structured array is read member by member in the same order, so the field names, their
order and their dtypes must match (a nested struct is a nested dtype, an array member a
subarray field: `('a', np.int32, (3,))`).  Results come back in the caller's own dtype.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from ..diagnostics import UsageError
from ..program import ELEM_DTYPES, Param, StructLayout


def _columns(a: np.ndarray, prefix: str = "") -> Iterator[tuple[str, np.ndarray]]:
    """Every scalar column of a structured array of records (shape (n, ...)), in memory order,
    named like the layout's member paths ('p.x', 'a[2]'); the columns are views."""
    if a.dtype.names is not None:
        for name in a.dtype.names:
            yield from _columns(a[name], f"{prefix}.{name}" if prefix else name)
    elif a.ndim > 1:
        for i in range(a.shape[1]):
            yield from _columns(a[:, i], f"{prefix}[{i}]")
    else:
        yield prefix, a


def flat_dtype(layout: StructLayout) -> np.dtype:
    """A structured dtype with one field per cell, named by member path ('p.x', 'a[2]'): what
    `zeros:N` gives for a buffer of structs (a nested dtype of the same members is equivalent)."""
    return np.dtype([(path, ELEM_DTYPES[ct]) for path, ct in layout.cells])


def describe(layout: StructLayout) -> str:
    return ", ".join(f"{path} {ELEM_DTYPES[ct]}" for path, ct in layout.cells)


def check_struct_array(label: str, what: str, arr: np.ndarray, p: Param) -> np.ndarray:
    """A buffer of structs: a structured array whose scalar fields are the struct's members."""
    layout = p.struct
    assert layout is not None
    flat = np.ascontiguousarray(arr).reshape(-1)
    have = [(path, col.dtype) for path, col in _columns(flat)] if arr.dtype.names else []
    want = [(path, np.dtype(ELEM_DTYPES[ct])) for path, ct in layout.cells]
    if have != want:
        got = ", ".join(f"{n} {d}" for n, d in have) if have else f"dtype {arr.dtype}"
        raise UsageError(f"{label}: {what} does not match struct '{layout.name}' of parameter "
                         f"'{p.name}': it needs a structured dtype with the members "
                         f"({describe(layout)}); got ({got})")
    return flat


def to_cells(values: np.ndarray) -> np.ndarray:
    """Host array -> uint32 cells; chars are stored as their 8-bit pattern (zero-extended)."""
    if values.dtype == np.bool_:
        return values.astype(np.uint32)
    if values.dtype in (np.int8, np.uint8):
        return values.view(np.uint8).astype(np.uint32)
    if values.dtype in (np.int16, np.uint16):  # shorts likewise: the 16-bit pattern
        return values.view(np.uint16).astype(np.uint32)
    return values.view(np.uint32).astype(np.uint32)


def struct_cells(arr: np.ndarray) -> np.ndarray:
    """Records -> uint32 cells, record after record (char members as their 8-bit pattern)."""
    n = arr.size
    cols = [to_cells(np.ascontiguousarray(c)).reshape(n, -1) for _, c in _columns(arr)]  # 64-bit: 2 wide
    return np.hstack(cols).reshape(-1).astype(np.uint32) if n else np.zeros(0, np.uint32)


def cells_to_struct(cells: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """uint32 cells -> records of the caller's dtype."""
    out = np.zeros(0, dtype)
    widths = [max(1, col.dtype.itemsize // 4) for _, col in _columns(out)]  # 64-bit members: 2 cells
    n = cells.size // max(1, sum(widths))
    out = np.zeros(n, dtype)
    grid = np.asarray(cells, np.uint32).reshape(n, sum(widths))
    j = 0
    for w, (_, col) in zip(widths, _columns(out)):
        c = np.ascontiguousarray(grid[:, j:j + w]).reshape(-1)
        j += w
        if col.dtype == np.bool_:
            col[...] = c != 0
        elif col.dtype in (np.int8, np.uint8):
            col[...] = (c & 0xFF).astype(np.uint8).view(col.dtype)
        elif col.dtype in (np.int16, np.uint16):
            col[...] = (c & 0xFFFF).astype(np.uint16).view(col.dtype)
        else:
            col[...] = c.view(col.dtype)
    return out
