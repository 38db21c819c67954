"""Parsing of qgrun's `--arg NAME=VALUE` and `--out NAME=PATH` options against a kernel's parameters.

Everything is checked before anything runs; every problem is a one-line
UsageError (exit code 2) that names the argument.
"""

from __future__ import annotations

import json
import os
import re
from fractions import Fraction

import numpy as np

from ..diagnostics import OutputError, UsageError
from ..spec import SPEC
from ..program import ELEM_DTYPES, Kernel, Param, Program

from ..runtime.values import SCALAR_RANGES, check_array, check_int  # noqa: F401  (SCALAR_RANGES re-exported)

_INT_RE = re.compile(r"([+-]?)(0[xX][0-9A-Fa-f]+|[0-9]+)\Z")
# A .npy of the largest buffer the machine holds is well under this; anything bigger is refused unread.
_MAX_NPY_BYTES = SPEC.global_words * 8 + (1 << 16)


def parse_int(text: str) -> int | None:
    """Decimal or 0x hex, optionally signed; None if malformed."""
    m = _INT_RE.match(text.strip())
    if not m or len(m.group(2)) > 40:
        return None
    v = int(m.group(2), 0) if m.group(2)[:2].lower() == "0x" else int(m.group(2), 10)
    return -v if m.group(1) == "-" else v


def _split(option: str, spec: str) -> tuple[str, str]:
    name, eq, value = spec.partition("=")
    name = name.strip()
    if not eq or not name:
        raise UsageError(f"{option} '{spec}': expected NAME=VALUE")
    return name, value


def _param(kernel: Kernel, option: str, name: str) -> Param:
    for p in kernel.params:
        if p.name == name:
            return p
    have = ", ".join(p.name for p in kernel.params) or "none"
    raise UsageError(f"{option} '{name}': kernel '{kernel.name}' has no parameter '{name}' "
                     f"(parameters: {have})")


_FLOAT_RE = re.compile(r"[+-]?(([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?|inf|infinity|nan)\Z", re.I)


def parse_float(name: str, value: str) -> int:
    """A float scalar: a decimal number (rounded once, to nearest even), inf or nan -> bits."""
    from ..frontend import floatconst

    text = value.strip()
    if not _FLOAT_RE.match(text) or len(text) > 100:
        raise UsageError(f"--arg {name}={value}: expected a float (e.g. 1.5, -2e-3, inf, nan)")
    neg = text.startswith("-")
    body = text.lstrip("+-").lower()
    if body.startswith("inf"):
        bits = 0x7F800000
    elif body == "nan":
        return floatconst.NAN
    else:
        bits = floatconst.decimal_to_bits(Fraction(body))
    return bits | (0x80000000 if neg else 0)


def parse_double(name: str, value: str, option: str = "--arg") -> int:
    """A double scalar: a decimal number (the nearest double, ties to even), inf or nan -> the
    64-bit pattern."""
    from ..frontend import doubleconst

    text = value.strip()
    if not _FLOAT_RE.match(text) or len(text) > 100:
        raise UsageError(f"{option} {name}={value}: expected a double (e.g. 1.5, -2e-3, inf, nan)")
    if text.lstrip("+-").lower() == "nan":
        return doubleconst.NAN
    return doubleconst.from_py(float(text))  # correctly rounded; 1e999 is inf, as in C


def parse_scalar(name: str, value: str, p: Param, option: str = "--arg") -> int:
    if p.ctype == "float":
        return parse_float(name, value)
    if p.ctype == "double":
        return parse_double(name, value, option)
    v = parse_int(value)
    if v is None:
        if value.startswith("@") or value.startswith("zeros:"):
            raise UsageError(f"{option} {name}={value}: parameter '{name}' is a scalar ({p.describe()}); "
                             f"give a number")
        raise UsageError(f"{option} {name}={value}: expected a {p.ctype} (decimal or 0x hex)")
    return check_int(f"{option} {name}={value}", v, p)


def load_array(name: str, value: str, p: Param, option: str = "--arg") -> np.ndarray:
    if p.struct is not None:
        from ..runtime.structbuf import flat_dtype

        want = flat_dtype(p.struct)
    else:
        want = np.dtype(ELEM_DTYPES[p.ctype])
    if value.startswith("zeros:"):
        n = parse_int(value[len("zeros:"):])
        if n is None or n < 0:
            raise UsageError(f"{option} {name}={value}: expected zeros:N with a count N >= 0")
        if n > SPEC.global_words:
            raise UsageError(f"{option} {name}={value}: {n} elements exceed the machine's global memory "
                             f"({SPEC.global_words} cells)")
        return np.zeros(n, dtype=want)
    if not value.startswith("@") or len(value) < 2:
        what = (f"parameter '{name}' is a pointer ({p.describe()})" if option == "--arg"
                else f"'{name}' is an array")
        raise UsageError(f"{option} {name}={value}: {what}; give @FILE.npy or zeros:N")
    path = value[1:]
    try:
        size = os.path.getsize(path)
        if size > _MAX_NPY_BYTES:
            raise UsageError(f"{option} {name}={value}: {path} is {size} bytes, larger than any buffer "
                             f"the machine holds ({SPEC.global_words} cells)")
        arr = np.load(path, allow_pickle=False)
    except UsageError:
        raise
    except FileNotFoundError:
        raise UsageError(f"{option} {name}={value}: {path}: no such file") from None
    except IsADirectoryError:
        raise UsageError(f"{option} {name}={value}: {path} is a directory") from None
    except OSError as e:
        raise UsageError(f"{option} {name}={value}: cannot read {path}: {e.strerror or e}") from None
    except Exception as e:  # not a .npy, pickled objects, corrupt header
        msg = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise UsageError(f"{option} {name}={value}: {path} is not a readable .npy array ({msg})") from None
    if not isinstance(arr, np.ndarray):  # an .npz archive
        if hasattr(arr, "close"):
            arr.close()
        raise UsageError(f"{option} {name}={value}: {path} is not a .npy array (an .npz archive?)")
    return check_array(f"{option} {name}={value}", path, arr, p)


def load_struct_value(name: str, value: str, p: Param) -> np.ndarray:
    """A struct passed by value: `@FILE.npy` holding one record of a structured dtype whose
    fields are the struct's members (as for a buffer of structs), or `zeros` for every member 0."""
    from ..runtime.structbuf import describe, flat_dtype

    if value == "zeros":
        return np.zeros(1, dtype=flat_dtype(p.struct))
    if not value.startswith("@"):
        raise UsageError(f"--arg {name}={value}: parameter '{name}' is a struct passed by value "
                         f"({p.describe()}); give @FILE.npy with one record of a structured dtype "
                         f"with the members ({describe(p.struct)}), or zeros")
    arr = load_array(name, value, p)
    if arr.size != 1:
        raise UsageError(f"--arg {name}={value}: parameter '{name}' is one struct ({p.describe()}); "
                         f"the .npy holds {arr.size} records, give exactly one")
    return arr


def parse_args(kernel: Kernel, specs: list[str] | tuple[str, ...]) -> tuple[dict[str, int], dict[str, np.ndarray]]:
    """`--arg` values -> (scalar words, host arrays), both keyed by parameter name."""
    scalars: dict[str, int] = {}
    arrays: dict[str, np.ndarray] = {}
    seen: set[str] = set()
    for spec in specs:
        name, value = _split("--arg", spec)
        p = _param(kernel, "--arg", name)
        if name in seen:
            raise UsageError(f"--arg '{name}' is given twice")
        seen.add(name)
        if p.indirect:  # `T **`: @A.npy,@B.npy,zeros:N,... one buffer per pointer
            from ..runtime.values import check_array_list

            arrays[name] = check_array_list(f"--arg {name}={value}",
                                            [load_array(name, v, p) for v in value.split(",")], p)
        elif p.pointer:
            arrays[name] = None if value == "null" else load_array(name, value, p)  # None: a null pointer
        elif p.struct is not None:
            arrays[name] = load_struct_value(name, value, p)
        else:
            scalars[name] = parse_scalar(name, value, p)
    missing = [p for p in kernel.params if p.name not in seen]
    if missing:
        listed = ", ".join(f"'{p.name}' ({p.describe()})" for p in missing)
        raise UsageError(f"missing --arg for {listed}")
    return scalars, arrays


def _struct_cells(value: str) -> np.ndarray | None:
    """`@FILE.npy` holding a structured array (the members of a __constant__ array of structs,
    which the program keeps as its cells), else None (then load_array reads and checks it)."""
    if not value.startswith("@"):
        return None
    try:
        arr = np.load(value[1:], allow_pickle=False)
    except (OSError, ValueError):
        return None
    return arr.reshape(-1) if arr.dtype.names is not None else None


def parse_consts(program: Program, specs: list[str] | tuple[str, ...]) -> dict[str, np.ndarray]:
    """`--const NAME=@FILE.npy` (or NAME=VALUE for a scalar) -> the values of __constant__
    variables, replacing their initialisers; make_launch checks dtypes and sizes."""
    known = {c.name: c for c in program.user_constants}
    out: dict[str, np.ndarray] = {}
    for spec in specs:
        name, value = _split("--const", spec)
        c = known.get(name)
        if c is None:
            have = ", ".join(known) or "none"
            raise UsageError(f"--const '{name}': the program has no __constant__ variable '{name}' "
                             f"(it has: {have})")
        if name in out:
            raise UsageError(f"--const '{name}' is given twice")
        p = Param(name, c.ctype, pointer=bool(c.dims))
        structs = _struct_cells(value) if c.dims and c.ctype == "unsigned" else None
        if structs is not None:  # a __constant__ array of structs (launch.constant_image)
            out[name] = structs
            continue
        if c.dims:
            out[name] = load_array(name, value, p, option="--const").reshape(-1)
        else:
            want = np.dtype(ELEM_DTYPES[c.ctype])
            v = parse_scalar(name, value, p, option="--const")
            if want.itemsize == 8:  # a 64-bit constant: its 64-bit pattern
                out[name] = np.array([v & (2**64 - 1)], np.uint64).view(want)
                continue
            cell = np.array([v & 0xFFFFFFFF], np.uint32)
            out[name] = cell.astype(np.int64).astype(want) if want.itemsize == 1 else cell.view(want)
    return out


def check_writable(label: str, path: str) -> None:
    """The directory of an output file must exist, and the path must not be a directory."""
    d = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(d):
        raise UsageError(f"{label}: directory '{os.path.dirname(path) or '.'}' does not exist")
    if os.path.isdir(path):
        raise UsageError(f"{label}: {path} is a directory")


def check_out_buffers(outs: dict[str, str], buffers) -> None:
    """`--out NAME[J]=PATH`: J must be one of the arrays given for the `T **` parameter NAME;
    NAME must not be a null pointer (no buffer)."""
    for name in outs:
        base = name.split("[")[0]
        if base not in buffers:
            raise UsageError(f"--out '{name}': parameter '{name}' was given null, which has no buffer to write; "
                             "drop --out or give it an array")
        if name not in buffers:
            n = buffers[base].length
            raise UsageError(f"--out '{name}': parameter '{base}' was given {n} array{'s' if n != 1 else ''} "
                             f"({base}[0]..{base}[{n - 1}])")


def parse_outs(kernel: Kernel, specs: list[str] | tuple[str, ...]) -> dict[str, str]:
    """`--out NAME=PATH` -> {buffer name: path}; only pointer parameters, each at most once."""
    outs: dict[str, str] = {}
    paths: dict[str, str] = {}
    for spec in specs:
        name, path = _split("--out", spec)
        m = re.fullmatch(r"(\w+)\[(\d+)\]", name)  # NAME[J]: the J-th buffer of a `T **` parameter
        p = _param(kernel, "--out", m.group(1) if m else name)
        if m and not p.indirect:
            raise UsageError(f"--out '{name}': parameter '{p.name}' is not a pointer to pointers "
                             f"({p.describe()}); write --out {p.name}=PATH.npy")
        if not p.pointer:
            raise UsageError(f"--out '{name}': parameter '{name}' is not a pointer ({p.describe()}); "
                             f"only buffers can be written out")
        if name in outs:
            raise UsageError(f"--out '{name}' is given twice")
        if not path:
            raise UsageError(f"--out '{spec}': expected NAME=PATH.npy")
        key = os.path.realpath(path)
        if key in paths:
            raise UsageError(f"--out '{name}' and --out '{paths[key]}' write the same file {path}")
        check_writable(f"--out {name}={path}", path)
        outs[name] = path
        paths[key] = name
    return outs


def write_outputs(files: dict[str, bytes], json_path: str | None, summary: dict) -> None:
    """A run's --out files and its --json summary as one AtomicFiles batch: all of them or none."""
    from ..atomicfile import AtomicFiles

    todo = dict(files)
    if json_path is not None:
        todo[json_path] = (json.dumps(summary, indent=2) + "\n").encode("utf-8")
    with AtomicFiles() as batch:
        for path, data in todo.items():
            try:
                batch.add(path, data)
            except OSError as e:
                raise OutputError(path, e) from None
        try:
            batch.commit()
        except OSError as e:
            raise OutputError(str(e.filename2 or e.filename or "an output"), e) from None
