"""The 64-bit intrinsics (`__popcll`, `__clzll`, `__ffsll`, `__brevll`, `__umul64hi`,
`__mul64hi`, `llmin`, `llmax`, `ullmin`, `ullmax`, `llabs`), `clock64()`, 64-bit shuffles, and the warp
reductions `__reduce_*_sync` and `__match_all_sync`, against models written here from CUDA's
definitions (Python integers; a warp of 4 lanes; only the lanes named in the mask and active
take part)."""

from __future__ import annotations

import functools

import numpy as np
import pytest

from frontcheck import emulate_src

M64 = (1 << 64) - 1


def s64(v: int) -> int:
    v &= M64
    return v - (1 << 64) if v >> 63 else v


def s32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >> 31 else v


BITS_SRC = r"""
__global__ void bits64(const unsigned long long *a, const unsigned long long *b, unsigned long long *o) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned long long x = a[i], y = b[i];
    long long c0 = clock64();
    o[i * 10 + 0] = __popcll(x);
    o[i * 10 + 1] = __clzll(x);
    o[i * 10 + 2] = __ffsll(x);
    o[i * 10 + 3] = __brevll(x);
    o[i * 10 + 4] = __umul64hi(x, y);
    o[i * 10 + 5] = __mul64hi(x, y);
    o[i * 10 + 6] = llmin(x, y) ^ llmax(x, y);
    o[i * 10 + 7] = ullmin(x, y) ^ ullmax(x, y) * 3;
    o[i * 10 + 8] = llabs(x);
    o[i * 10 + 9] = clock64() - c0;
    long long sum = (long long)x;  // a 64-bit warp reduction by shuffles (two SHFLs each)
    for (int d = 2; d > 0; d /= 2)
        sum += __shfl_down_sync(0xffffffff, sum, d);
    o[160 + i] = __shfl_sync(0xffffffff, sum, 0);
}
"""


def _bits_model(x: int, y: int) -> list[int]:
    sx, sy = s64(x), s64(y)
    return [bin(x).count("1"), 64 - x.bit_length(), (x & -x).bit_length(), int(f"{x:064b}"[::-1], 2),
            (x * y) >> 64, ((sx * sy) >> 64) & M64, (min(sx, sy) ^ max(sx, sy)) & M64,
            (min(x, y) ^ (max(x, y) * 3)) & M64, abs(sx) & M64]


def test_64bit_intrinsics_match_their_definitions():
    """Edge values (0, 1, all ones, single bits at 31, 32 and 63, the signed limits) and random
    ones; clock64() is the 64-bit step counter, so it grows across the calls in between."""
    edges = [0, 1, M64, 1 << 31, 1 << 32, 1 << 63, (1 << 63) - 1, 0xFFFFFFFF, 0x8000000080000000]
    rng = np.random.default_rng(5)
    a = np.array(edges + list(rng.integers(0, 1 << 64, 16 - len(edges), dtype=np.uint64)), np.uint64)
    b = np.array(list(reversed(edges)) + list(rng.integers(0, 1 << 64, 16 - len(edges), dtype=np.uint64)),
                 np.uint64)
    o = emulate_src(BITS_SRC, None, 1, 16, [("a", a), ("b", b), ("o", np.zeros(176, np.uint64))])["o"]
    for i, (x, y) in enumerate(zip(a, b)):
        got = [int(v) for v in o[i * 10:i * 10 + 10]]
        assert got[:9] == _bits_model(int(x), int(y)), (i, hex(int(x)), hex(int(y)))
        assert 0 < got[9] < 1 << 20  # the warp instructions of every warp since the first read
        warp = [int(v) for v in a[i // 4 * 4:i // 4 * 4 + 4]]
        assert int(o[160 + i]) == sum(warp) & M64  # lanes beyond the warp give their own value


REDUCE_SRC = r"""
__global__ void red(const int *v, const unsigned *m, int *o) {
    int t = threadIdx.x;
    int x = v[t];
    unsigned mask = m[t];
    if (mask != 0) {
        o[t * 9 + 0] = __reduce_add_sync(mask, x);
        o[t * 9 + 1] = __reduce_min_sync(mask, x);
        o[t * 9 + 2] = __reduce_max_sync(mask, x);
        o[t * 9 + 3] = __reduce_min_sync(mask, (unsigned)x);
        o[t * 9 + 4] = __reduce_max_sync(mask, (unsigned)x);
        o[t * 9 + 5] = __reduce_and_sync(mask, x);
        o[t * 9 + 6] = __reduce_or_sync(mask, x);
        o[t * 9 + 7] = __reduce_xor_sync(mask, x);
        int all = -1;
        unsigned r = __match_all_sync(mask, x & 3, &all);
        o[t * 9 + 8] = (int)r * 2 + all;
    }
}
"""


def _reduce_model(vals: list[int], masks: list[int]) -> dict[int, list[int]]:
    """Per active lane: the reductions over the lanes of its mask that are active (CUDA requires
    every lane of the mask to call the intrinsic; the tests keep to that)."""
    out = {}
    for warp in range(0, len(vals), 4):
        lanes = range(warp, warp + 4)
        for t in lanes:
            if masks[t] == 0:
                continue
            part = [u for u in lanes if masks[t] >> (u - warp) & 1 and masks[u] != 0]
            xs = [vals[u] for u in part]
            us = [x & 0xFFFFFFFF for x in xs]
            same = len({x & 3 for x in xs}) == 1
            pmask = sum(1 << (u - warp) for u in part)
            out[t] = [s32(sum(xs)), min(xs), max(xs), s32(min(us)), s32(max(us)),
                      s32(functools.reduce(lambda p, q: p & q, us)), s32(functools.reduce(lambda p, q: p | q, us)),
                      s32(functools.reduce(lambda p, q: p ^ q, us)), (pmask if same else 0) * 2 + int(same)]
    return out


def _reduce_case(seed: int):
    rng = np.random.default_rng(seed)
    v = rng.integers(-(1 << 31), 1 << 31, 16, dtype=np.int64).astype(np.int32)
    v[4:8] = [5, -7, 9, 13]  # a warp where x & 3 matches on every lane
    # warp 0: full mask; warp 1: everyone; warp 2: lanes {0,2} and {1,3} reduce separately;
    # warp 3: lane 3 inactive, the others name lanes {0,1,2}
    m = np.array([0xFFFFFFFF] * 4 + [0xF] * 4 + [0x5, 0xA, 0x5, 0xA] + [0x7, 0x7, 0x7, 0], np.uint32)
    return v, m


def test_warp_reductions_and_match_all_follow_cuda():
    v, m = _reduce_case(3)
    o = emulate_src(REDUCE_SRC, None, 1, 16, [("v", v), ("m", m), ("o", np.zeros(144, np.int32))])["o"]
    want = _reduce_model([int(x) for x in v], [int(x) for x in m])
    for t, w in want.items():
        assert [int(x) for x in o[t * 9:t * 9 + 9]] == w, t
    assert not o[15 * 9:].any()  # the inactive lane wrote nothing


@pytest.mark.slow
def test_warp_reductions_inside_the_network():
    """The same kernel in the network, record by record against the emulator (the default suite
    runs a shorter one in test_int64.py)."""
    from lockstep import both

    v, m = _reduce_case(4)
    outs, _ = both("reduce_sync", (1, 1, 1), (16, 1, 1), {}, {"v": v, "m": m, "o": np.zeros(144, np.int32)},
                   source=REDUCE_SRC, max_steps=6000)
    want = _reduce_model([int(x) for x in v], [int(x) for x in m])
    for t, w in want.items():
        assert [int(x) for x in outs["o"][t * 9:t * 9 + 9]] == w, t
