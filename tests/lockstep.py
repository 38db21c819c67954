"""Run one launch on the reference emulator and on a network engine, step for step.

Shared by the network tests (test_neural, test_float, test_numerics) and bench/: CASES
holds a launch of every sample small enough for CI.  The tests compare the engines' traces
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


def i32(rng, n, lo=-1000, hi=1000):
    return rng.integers(lo, hi, size=n).astype(np.int32)


rng = np.random.default_rng(7)
CASES = {
    "vadd": ((2, 1, 1), (6, 1, 1), {"n": 10}, {"a": i32(rng, 10), "b": i32(rng, 10), "c": np.zeros(11, np.int32)}),
    "collatz": ((1, 1, 1), (4, 1, 1), {"n": 4, "limit": 12},
                {"x": np.array([1, 6, 7, 2], np.int32), "steps": np.zeros(4, np.int32),
                 "peak": np.zeros(4, np.uint32), "odd": np.zeros(4, np.int32)}),
    "reduce": ((2, 1, 1), (8, 1, 1), {"n": 13}, {"x": i32(rng, 13), "partial": np.zeros(2, np.int32)}),
    "histogram": ((1, 1, 1), (8, 1, 1), {"n": 12},
                  {"text": rng.integers(-128, 128, size=12).astype(np.int8), "bins": np.zeros(17, np.int32)}),
    "scan": ((1, 1, 1), (8, 1, 1), {"n": 8}, {"x": i32(rng, 8), "y": np.zeros(8, np.int32),
                                                "sums": np.zeros(1, np.int32)}),
    "matmul": ((1, 1, 1), (4, 4, 1), {"n": 3}, {"A": i32(rng, 9, -20, 20), "B": i32(rng, 9, -20, 20),
                                                 "C": np.zeros(9, np.int32)}),
}

# One program of three kernels (a store, a loop, shared memory with a barrier and atomics),
# for batches that mix launches of different kernels (tests/test_batch.py, bench/gpu_check.py).
MIXED_KERNELS = ("__global__ void k(int *a, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; "
                 "if (i < n) a[i] = a[i] * 3 + i; }\n"
                 "__global__ void sums(int *a, int n) { int i = threadIdx.x; "
                 "for (int j = 0; j < n; j++) if (i < 8) a[i] += j ^ i; }\n"
                 "__global__ void mix(int *a, int n) { __shared__ int s[8]; int i = threadIdx.x; s[i] = i * n; "
                 "__syncthreads(); if (i & 1) atomicAdd(&a[0], s[i ^ 1]); else a[i] = s[i] + a[i + 1]; }")
# (kernel, grid, block, n): launches of two kernels of it, of four different lengths.
MIXED = [(0, 1, 1, 0), (1, 1, 2, 2), (0, 1, 4, 3), (1, 1, 3, 1)]


def mixed_launch(kernel, grid, block, n, a=None):
    prog, cm = linked("mixed", MIXED_KERNELS)
    a = np.arange(8, dtype=np.int32) * 5 - 11 if a is None else a
    return make_launch(prog, prog.kernels[kernel], (grid, 1, 1), (block, 1, 1), {"n": n}, {"a": a.copy()},
                       network=cm)


def linked(name: str, source: str | None = None):
    if name not in _LINKED:
        src = source if source is not None else (ROOT / "samples" / f"{name}.cu").read_text()
        prog = compile_source(src, f"{name}.cu")
        _LINKED[name] = (prog, link(prog))
    return _LINKED[name]


def host(network, engine: str = "neural"):
    """The host of a network engine, driving `network` on the CPU."""
    return engines.get(engine).create("cpu").host(network)


def both(name, grid, block, scalars, arrays, source=None, engine="neural", max_steps=20000, **launch_kw):
    """launch_kw: make_launch's keywords (shared_bytes=, constants=)."""
    prog, cm = linked(name, source)
    k = prog.kernels[0]
    mk = lambda: make_launch(prog, k, grid, block, scalars, {a: v.copy() for a, v in arrays.items()},  # noqa: E731
                             **launch_kw)
    ref_trace, net_trace = [], []
    lr, ln = mk(), mk()
    r = ref_run(lr, max_steps=max_steps, on_step=ref_trace.append)
    n = host(cm, engine).run(ln, max_steps=max_steps, on_step=net_trace.append)
    assert len(net_trace) == len(ref_trace)
    for a, b in zip(ref_trace, net_trace):
        assert a.key() == b.key(), (a, b)
        assert (a.diverged, a.reconverged, a.barrier) == (b.diverged, b.reconverged, b.barrier), (a, b)
    assert np.array_equal(r.memory, n.memory)
    assert n.network_steps == r.network_steps  # the execution model counts the network's steps
    outs = {p.name: ln.read_buffer(n.memory, p.name) for p in k.params if p.pointer}
    return outs, n
