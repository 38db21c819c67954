"""Random launches of the samples: `CASES[name](rng) -> (grid, block, scalars, arrays)`.

Shared by the sample tests (emulator against the C models) and the network tests (the
compiled layers against the emulator), so both draw the same kind of inputs: random
values with the integer edge cases mixed in.
"""

from __future__ import annotations

import math

import numpy as np

import models

I32_EDGES = [0, 1, -1, 2, -2, models.INT_MIN, models.INT_MAX, models.INT_MIN + 1, 0x7FFF, -0x8000, 255, 256]


def _i32(rng, n, lo=models.INT_MIN, hi=models.INT_MAX, edges=True):
    v = rng.integers(lo, hi, size=n, endpoint=True, dtype=np.int64)
    if edges:
        mask = rng.random(n) < 0.2
        v[mask] = rng.choice(I32_EDGES, size=int(mask.sum()))
    return v.astype(np.int32)


def _blocks(n, bs, extra=0):
    return (math.ceil(n / bs) + extra, 1, 1)


def case_vadd(rng):
    bs = int(rng.choice([3, 4, 7, 12, 16, 32, 64]))
    n = int(rng.integers(1, 120))
    return _blocks(n, bs, int(rng.integers(0, 2))), (bs, 1, 1), {"n": n}, {
        "a": _i32(rng, n), "b": _i32(rng, n), "c": _i32(rng, n + 3)}


def case_collatz(rng):
    bs = int(rng.choice([4, 5, 8, 12, 16]))
    n = int(rng.integers(1, 33))
    x = rng.integers(0, 200, size=n).astype(np.int32)
    wild = rng.random(n) < 0.15
    x[wild] = _i32(rng, int(wild.sum()))
    return _blocks(n, bs), (bs, 1, 1), {"n": n, "limit": int(rng.integers(10, 100))}, {
        "x": x, "steps": np.zeros(n, np.int32), "peak": np.zeros(n, np.uint32), "odd": np.zeros(n, np.int32)}


def case_devfunc(rng):
    bs = int(rng.choice([4, 6, 8, 16]))
    n = int(rng.integers(1, 25))
    a = _i32(rng, n, -300, 300, edges=False)
    b = _i32(rng, n, -300, 300, edges=False)
    a[rng.random(n) < 0.1] = 0
    b[rng.random(n) < 0.1] = 0
    return _blocks(n, bs), (bs, 1, 1), {"n": n, "cap": int(rng.integers(0, 20000))}, {
        "a": a, "b": b, "g": np.zeros(n, np.int32), "l": np.zeros(n, np.int32), "s": np.zeros(n, np.int32)}


def case_reduce(rng):
    bs = int(rng.choice([4, 16, 32, 64]))
    n = int(rng.integers(1, 150))
    grid = _blocks(n, bs)
    return grid, (bs, 1, 1), {"n": n}, {"x": _i32(rng, n), "partial": _i32(rng, grid[0])}


def case_histogram(rng):
    bs = int(rng.choice([1, 4, 8, 13, 16, 32]))
    n = int(rng.integers(0, 160))
    text = rng.integers(-128, 128, size=max(n, 1)).astype(np.int8)
    return (int(rng.integers(1, 4)), 1, 1), (bs, 1, 1), {"n": n}, {
        "text": text, "bins": rng.integers(0, 5, size=17).astype(np.int32)}


def case_matmul(rng):
    n = int(rng.integers(1, 9))
    g = math.ceil(n / 4)
    small = rng.random() < 0.5
    lo, hi = (-50, 50) if small else (models.INT_MIN, models.INT_MAX)
    return (g, g, 1), (4, 4, 1), {"n": n}, {
        "A": _i32(rng, n * n, lo, hi, edges=not small), "B": _i32(rng, n * n, lo, hi, edges=not small),
        "C": np.full(n * n, -7, np.int32)}


def case_scan(rng):
    bs = int(rng.choice([4, 8, 11, 16, 32, 64]))
    n = int(rng.integers(1, 130))
    grid = _blocks(n, bs)
    return grid, (bs, 1, 1), {"n": n}, {"x": _i32(rng, n), "y": np.zeros(n, np.int32),
                                        "sums": np.zeros(grid[0], np.int32)}


def case_atomics(rng):
    bs = int(rng.choice([4, 7, 8, 16, 32]))
    n = int(rng.integers(1, 65))
    acc = _i32(rng, 9)
    acc[8] = 0
    return _blocks(n, bs), (bs, 1, 1), {"n": n}, {
        "x": _i32(rng, n), "acc": acc, "u": _i32(rng, 2).view(np.uint32),
        "tickets": np.zeros(2, np.uint32), "slot": _i32(rng, n), "prev": np.zeros(n, np.int32)}


def case_divmod(rng):
    bs = int(rng.choice([2, 4, 8, 16]))
    n = int(rng.integers(1, 25))
    a = _i32(rng, n)
    b = np.where(rng.random(n) < 0.5, _i32(rng, n, -40, 40, edges=False), _i32(rng, n))
    b[b == 0] = 3
    b[(a == models.INT_MIN) & (b == -1)] = 7
    z = {k: np.zeros(n, t) for k, t in (("q", np.int32), ("r", np.int32), ("uq", np.uint32),
                                        ("ur", np.uint32), ("sr", np.int32), ("ur2", np.uint32),
                                        ("sl", np.int32), ("c", np.int8), ("cw", np.int32),
                                        ("uc", np.uint8), ("bz", np.bool_))}
    return _blocks(n, bs), (bs, 1, 1), {"n": n}, {"a": a, "b": b.astype(np.int32), **z}


def _f32(rng, n, scale=4.0):
    return (rng.standard_normal(n) * scale).astype(np.float32)


def _fbits(x: float) -> int:
    return int(np.array([x], np.float32).view(np.uint32)[0])


def case_saxpy(rng):
    bs = int(rng.choice([4, 8, 12]))
    n = int(rng.integers(1, 30))
    return _blocks(n, bs), (bs, 1, 1), {"a": _fbits(float(rng.standard_normal())), "n": n}, {
        "x": _f32(rng, n), "y": _f32(rng, n + 2)}


def case_dot(rng):
    bs = int(rng.choice([2, 4, 8]))
    n = int(rng.integers(1, 40))
    return (int(rng.integers(1, 3)), 1, 1), (bs, 1, 1), {"n": n}, {
        "x": _f32(rng, n), "y": _f32(rng, n), "result": _f32(rng, 1)}


def case_mandelbrot(rng):
    w, h = int(rng.integers(1, 7)), int(rng.integers(1, 3))
    return (2, 1, 1), (4, 2, 1), {"width": w, "height": h, "x0": _fbits(-2.1), "y0": _fbits(-1.2),
                                  "dx": _fbits(float(rng.uniform(0.2, 0.6))),
                                  "dy": _fbits(float(rng.uniform(0.5, 1.2))),
                                  "max_iter": int(rng.integers(1, 7))}, {
        "iters": np.full(w * h + 1, -1, np.int32)}


def case_bitops(rng):
    bs = int(rng.choice([4, 8, 9, 16]))
    n = int(rng.integers(1, 25))
    z = {k: np.zeros(n, t) for k, t in (("pop", np.int32), ("par", np.bool_), ("rev", np.uint32),
                                        ("rot", np.uint32), ("low", np.uint32), ("clz", np.int32))}
    return _blocks(n, bs), (bs, 1, 1), {"n": n}, {"x": _i32(rng, n).view(np.uint32), "r": _i32(rng, n), **z}


def case_warpreduce(rng):
    bs = int(rng.choice([4, 8, 16, 32, 64]))
    n = int(rng.integers(1, 150))
    grid = _blocks(n, bs, int(rng.integers(0, 2)))
    return grid, (bs, 1, 1), {"n": n}, {"x": _i32(rng, max(n, 1)), "partial": _i32(rng, grid[0])}


def case_compact(rng):
    bs = int(rng.choice([4, 8, 12, 16, 64]))
    n = int(rng.integers(1, 100))
    grid = _blocks(n, bs)
    return grid, (bs, 1, 1), {"n": n, "threshold": int(rng.choice([-1000, -5, 0, 3, 2000]))}, {
        "x": _i32(rng, n, -10, 10, edges=rng.random() < 0.3), "out": _i32(rng, grid[0] * bs),
        "counts": np.zeros(grid[0], np.int32)}


CASES = {name[5:]: fn for name, fn in globals().items() if name.startswith("case_")}
