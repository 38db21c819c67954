"""The soft-float, math, 64-bit integer and double libraries (`softfloat.cu`, `divsqrt.cu`, `mathlib.cu`,
`int64.cu`, `double.cu`, `dmath.cu`), parsed and checked once per process.

The library is CUDA-C in the subset itself, so the ordinary front end turns it
into device functions; the code generator emits the ones a kernel calls as
out-of-line routines (see `codegen`).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from .parser import parse
from .sema import analyse
from .symbols import FuncSym

SOURCES = tuple(Path(__file__).with_name(n) for n in ("softfloat.cu", "divsqrt.cu", "mathlib.cu", "int64.cu",
                                                     "double.cu", "dmath.cu"))


@lru_cache(maxsize=1)
def library() -> dict[str, FuncSym]:
    # One translation unit: the math library calls the soft-float helpers (__qg_clz, ...).
    text = "\n".join(p.read_text() for p in SOURCES)
    return analyse(parse(text, "softfloat.cu"), "softfloat.cu", text).functions
