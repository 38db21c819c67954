"""Textures at launch: the array bound to a texture parameter gives its cells and its shape.

A texture's parameter is a 64-bit handle (frontend/sema_textures.py): the buffer's first cell,
then (width - 1) | (height - 1) << 16.  A 1-D array of n elements is n wide and 1 high; a 2-D
array of shape (H, W) is W wide and H high (row-major, as cudaBindTexture2D / a pitched
texture object of W x H elements reads it).  A 1-D texture takes only a 1-D array; a texture of
structs (float2, float4, ...) a structured array of the same shapes.
"""

from __future__ import annotations

import numpy as np

from ..diagnostics import UsageError
from ..program import ELEM_DTYPES, Param
from ..spec import SPEC
from .structbuf import to_cells

MAX_SIDE = 1 << 16  # width and height each take 16 bits of the handle


def check_texture(label: str, what: str, arr: np.ndarray, p: Param) -> np.ndarray:
    if p.struct is not None:
        from .structbuf import check_struct_array

        flat = check_struct_array(label, what, arr, p).reshape(arr.shape)  # the shape gives the size
        if flat.size * p.struct.words > SPEC.global_words:
            raise UsageError(f"{label}: {flat.size} structs of {p.struct.words} cells exceed the machine's "
                             f"global memory ({SPEC.global_words} cells)")
    else:
        want = np.dtype(ELEM_DTYPES[p.ctype])
        if arr.dtype != want:
            raise UsageError(f"{label}: {what} has dtype {arr.dtype}, but texture '{p.name}' "
                             f"({p.describe()}) needs {want}")
        if arr.size > SPEC.global_words:
            raise UsageError(f"{label}: {arr.size} elements exceed the machine's global memory "
                             f"({SPEC.global_words} cells)")
        flat = np.ascontiguousarray(arr)
    if flat.ndim > p.texture or flat.ndim == 0:
        need = "a 1-D array" if p.texture == 1 else "a 1-D array or a 2-D array of shape (height, width)"
        raise UsageError(f"{label}: {what} has shape {tuple(arr.shape)}; the {p.texture}-D texture "
                         f"'{p.name}' takes {need}")
    if flat.size == 0:
        raise UsageError(f"{label}: texture '{p.name}' needs at least one element")
    return flat


def texture_cells(arr: np.ndarray, p: Param, base: int) -> tuple[np.ndarray, list[int]]:
    """The texture's cells and its handle's two parameter words (low word first)."""
    if p.struct is not None:
        from .structbuf import struct_cells

        cells = struct_cells(arr.reshape(-1))
    else:
        cells = to_cells(arr.reshape(-1))
    height, width = arr.shape if arr.ndim == 2 else (1, arr.shape[0])
    assert 1 <= width <= MAX_SIDE and 1 <= height <= MAX_SIDE
    return cells, [base, (width - 1) | ((height - 1) << 16)]
