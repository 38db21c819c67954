"""Checks of launch arguments that are already values (a number, a numpy array), shared by
qgrun's `--arg` parsing (cli/args.py) and the Python API (qgcc.api), so both refuse the
same things with the same message.  `label` is how the caller names the argument
(`--arg n=300` on the command line, `n=300` in Python)."""

from __future__ import annotations

import numpy as np

from ..diagnostics import UsageError
from ..spec import SPEC
from ..program import ELEM_DTYPES, Param

# Inclusive value range of each scalar parameter type.
SCALAR_RANGES: dict[str, tuple[int, int]] = {
    "int": (-(1 << 31), (1 << 31) - 1),
    "unsigned": (0, (1 << 32) - 1),
    "bool": (0, 1),
    "char": (-128, 127),
    "uchar": (0, 255),
    "short": (-(1 << 15), (1 << 15) - 1),
    "ushort": (0, (1 << 16) - 1),
    "llong": (-(1 << 63), (1 << 63) - 1),
    "ullong": (0, (1 << 64) - 1),
}


def check_int(label: str, v: int, p: Param) -> int:
    """An integer scalar, range-checked for the parameter's type."""
    lo, hi = SCALAR_RANGES[p.ctype]
    if not lo <= v <= hi:
        ctype = {"llong": "long long", "ullong": "unsigned long long"}.get(p.ctype, p.ctype)
        raise UsageError(f"{label}: {v} is out of range for {ctype} ({lo}..{hi})")
    return v


def check_array_list(label: str, arrays, p: Param) -> list[np.ndarray]:
    """A `T **` parameter: one array per pointer, each checked like a buffer of T."""
    if not isinstance(arrays, (list, tuple)) or not arrays or \
            not all(isinstance(a, np.ndarray) for a in arrays):
        want = np.dtype(ELEM_DTYPES[p.ctype])
        raise UsageError(f"{label}: parameter '{p.name}' is a pointer to pointers ({p.describe()}); give a "
                         f"list of numpy arrays of {want}, one buffer per pointer")
    out = [check_array(f"{label}[{j}]", "the array", a, p) for j, a in enumerate(arrays)]
    if sum(a.size for a in out) + len(out) > SPEC.global_words:
        raise UsageError(f"{label}: the {len(out)} arrays exceed the machine's global memory "
                         f"({SPEC.global_words} cells)")
    return out


def check_array(label: str, what: str, arr: np.ndarray, p: Param) -> np.ndarray:
    """A buffer: dtype exactly the pointee's, at most the machine's global memory; flattened in C order.
    A buffer of structs is a structured array (runtime/structbuf.py).  A texture keeps its shape,
    which gives its width and height (runtime/textures.py)."""
    if p.texture:
        from .textures import check_texture

        return check_texture(label, what, arr, p)
    if p.struct is not None:
        from .structbuf import check_struct_array

        flat = check_struct_array(label, what, arr, p)
        if flat.size * p.struct.words > SPEC.global_words:
            raise UsageError(f"{label}: {flat.size} structs of {p.struct.words} cells exceed the "
                             f"machine's global memory ({SPEC.global_words} cells)")
        return flat
    want = np.dtype(ELEM_DTYPES[p.ctype])
    if arr.dtype != want:
        raise UsageError(f"{label}: {what} has dtype {arr.dtype}, but parameter '{p.name}' "
                         f"({p.describe()}) needs {want}")
    flat = np.ascontiguousarray(arr).reshape(-1)
    if flat.size > SPEC.global_words:
        raise UsageError(f"{label}: {flat.size} elements exceed the machine's global memory "
                         f"({SPEC.global_words} cells)")
    return flat
