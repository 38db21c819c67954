"""The soft-float library (`softfloat.cu`), parsed and checked once per process.

The library is CUDA-C in the subset itself, so the ordinary front end turns it
into device functions; the code generator emits the ones a kernel calls as
out-of-line routines (see `codegen`).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from .parser import parse
from .sema import FuncSym, analyse

SOURCE = Path(__file__).with_name("softfloat.cu")


@lru_cache(maxsize=1)
def library() -> dict[str, FuncSym]:
    text = SOURCE.read_text()
    return analyse(parse(text, SOURCE.name), SOURCE.name, text).functions
