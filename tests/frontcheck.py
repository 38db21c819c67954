"""Front-end test helpers shared by the C++ construct tests: a compile error's exact
position and message, and a kernel source run on the reference emulator."""

from __future__ import annotations

import numpy as np
import pytest

from qgcc.diagnostics import CompileError
from qgcc.frontend import compile_source
from qgcc.ref.emulator import run as emulate
from qgcc.runtime.launch import make_launch


def error_of(src: str, filename: str = "t.cu", **kw) -> CompileError:
    with pytest.raises(CompileError) as info:
        compile_source(src, filename, **kw)
    return info.value


def assert_error(src: str, line: int, col: int, message: str, filename: str = "t.cu",
                 **kw) -> CompileError:
    """The source fails to compile with exactly this position and message."""
    e = error_of(src, filename, **kw)
    assert (e.line, e.col, e.message) == (line, col, message), e.render()
    return e


def emulate_src(src: str, kernel: str | None, grid: int, block: int, args: list, instantiate=(),
                max_steps: int = 2_000_000) -> dict:
    """Run a 1-D launch of `src` on the emulator; args are (name, value) pairs, numpy arrays for
    pointers; returns every buffer's final contents."""
    prog = compile_source(src, "t.cu", instantiate=instantiate)
    k = prog.kernel(kernel)
    scalars = {n: v for n, v in args if not isinstance(v, np.ndarray)}
    arrays = {n: v.copy() for n, v in args if isinstance(v, np.ndarray)}
    launch = make_launch(prog, k, (grid, 1, 1), (block, 1, 1), scalars, arrays)
    res = emulate(launch, max_steps=max_steps)
    return {n: launch.read_buffer(res.memory, n) for n in arrays}
