"""One way in for a linked program: a .qg file or a checkpoint directory -> LinkedProgram.

qgrun, the examples and the tests load through here, so the two containers give the
engines the same typed value (program plus network) and a damaged file is reported
the same way whichever container it came in.
"""

from __future__ import annotations

import os

from .diagnostics import QgFileError
from .link.linker import LinkedProgram


def load_program(path: str | os.PathLike) -> LinkedProgram:
    """A .qg file (linked or written with --no-link) or a checkpoint directory linked with `qgcc --base`."""
    from .checkpoint.reader import is_checkpoint, load_checkpoint_program
    from .qgfile import load

    path = os.fspath(path)
    if is_checkpoint(path):
        return load_checkpoint_program(path)
    qg = load(path)
    if not any(name.startswith("layers.") for name in qg.tensors):
        return LinkedProgram(qg.program)
    from .isa import encode
    from .link.linker import from_tensors

    try:
        code = [encode(i) for i in qg.program.code]
        return LinkedProgram(qg.program, from_tensors(qg.tensors, qg.meta, code))
    except (KeyError, ValueError, TypeError, IndexError, AttributeError) as e:
        # Hashed, so only a file written by another tool gets here; still one line, exit 3.
        raise QgFileError(f"{path}: the compiled layers are incomplete or corrupt "
                          f"({type(e).__name__}: {e}); recompile it with qgcc") from None
