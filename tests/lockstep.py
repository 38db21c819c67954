"""Run one launch on the reference emulator and on a network engine, step for step.

Shared by the network tests (test_neural, test_float): both compare the engines' traces
record by record and the final memory bit for bit.  Linked programs are cached per name
because linking is the slow part.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from qgcc import engines
from qgcc.frontend import compile_source
from qgcc.link.linker import link
from qgcc.ref.emulator import run as ref_run
from qgcc.runtime.launch import make_launch

ROOT = Path(__file__).resolve().parents[1]
_LINKED: dict[str, tuple] = {}


def linked(name: str, source: str | None = None):
    if name not in _LINKED:
        src = source if source is not None else (ROOT / "samples" / f"{name}.cu").read_text()
        prog = compile_source(src, f"{name}.cu")
        _LINKED[name] = (prog, link(prog))
    return _LINKED[name]


def host(network, engine: str = "neural"):
    """The host of a network engine, driving `network` on the CPU."""
    return engines.get(engine).create("cpu").host(network)


def both(name, grid, block, scalars, arrays, source=None, engine="neural", max_steps=20000):
    prog, cm = linked(name, source)
    k = prog.kernels[0]
    mk = lambda: make_launch(prog, k, grid, block, scalars, {a: v.copy() for a, v in arrays.items()})  # noqa: E731
    ref_trace, net_trace = [], []
    lr, ln = mk(), mk()
    r = ref_run(lr, max_steps=max_steps, on_step=ref_trace.append)
    n = host(cm, engine).run(ln, max_steps=max_steps, on_step=net_trace.append)
    assert len(net_trace) == len(ref_trace)
    for a, b in zip(ref_trace, net_trace):
        assert a.key() == b.key(), (a, b)
        assert (a.diverged, a.reconverged, a.barrier) == (b.diverged, b.reconverged, b.barrier), (a, b)
    assert np.array_equal(r.memory, n.memory)
    outs = {p.name: ln.read_buffer(n.memory, p.name) for p in k.params if p.pointer}
    return outs, n
