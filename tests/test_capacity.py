"""The machine's limits (qgcc.spec.MachineSpec) at their maximum, through the compiled network.

Each kernel uses one capacity to the last cell or thread, and the network must agree with
the reference emulator step for step and bit for bit; the expected buffers come from a
numpy model of the same C, so a cell that aliased another (a wrong address bit in the
memory heads' keys) or a thread that never ran shows up as a wrong value, not only as a
disagreement between two engines.  One past each limit is a named error (the other test
files check the exact messages, read from the MachineSpec).
"""

from __future__ import annotations

import numpy as np
import pytest

from lockstep import both
from qgcc.program import NULL_GUARD_CELLS
from qgcc.spec import SPEC

SHARED_FILL = r"""
__global__ void shared_fill(unsigned *out, unsigned seed) {
    __shared__ unsigned sh[%(S)d];
    for (unsigned i = threadIdx.x; i < %(S)du; i += blockDim.x)
        sh[i] = (i * 2654435761u) ^ seed;
    __syncthreads();
    for (unsigned i = threadIdx.x; i < %(S)du; i += blockDim.x)
        out[i] = sh[(i * 1031u) & %(M)du];
}
""" % {"S": SPEC.shared_words, "M": SPEC.shared_words - 1}


@pytest.mark.slow  # 34,000 network steps: 35-45 s on one CPU core
def test_a_block_fills_every_shared_cell_and_reads_each_back_from_another_thread():
    """Every shared cell is written, and read back by a different thread in a permuted order
    (1031 is odd, so i -> 1031 i mod S is a permutation): the whole per-block capacity,
    the highest offset included, holds distinct words without aliasing global memory."""
    S, seed = SPEC.shared_words, 0x5EED1234
    outs, _ = both("shared_fill", (1, 1, 1), (SPEC.max_block_threads, 1, 1), {"seed": seed},
                   {"out": np.zeros(S, np.uint32)}, source=SHARED_FILL, max_steps=200_000)
    i = np.arange(S, dtype=np.uint64)
    sh = ((i * 2654435761) & 0xFFFFFFFF) ^ seed
    assert outs["out"].tolist() == sh[(i * 1031) & (S - 1)].tolist()


SHARED_EDGES = r"""
__global__ void shared_edges(unsigned *out, unsigned seed) {
    __shared__ unsigned sh[%(S)d];
    unsigned t = threadIdx.x, n = blockDim.x;
    sh[t * %(D)du] = t ^ seed;
    sh[%(M)du - 2 * t] = (t * 7919u) ^ seed;
    __syncthreads();
    unsigned u = (t + 1) %% n;
    out[t] = sh[u * %(D)du];
    out[n + t] = sh[%(M)du - 2 * u];
}
""" % {"S": SPEC.shared_words, "M": SPEC.shared_words - 1, "D": SPEC.shared_words // 16}


def test_shared_cells_at_the_top_of_the_block_and_spread_over_it_hold_distinct_words():
    """A cheap companion of the test above for the default suite: 16 threads store to every
    other one of the last cells of shared memory and to one cell in every S/16, and each
    thread reads what its neighbour wrote."""
    S, T, seed = SPEC.shared_words, 16, 0xC0FFEE
    outs, _ = both("shared_edges", (1, 1, 1), (T, 1, 1), {"seed": seed}, {"out": np.zeros(2 * T, np.uint32)},
                   source=SHARED_EDGES)
    u = (np.arange(T, dtype=np.uint64) + 1) % T
    assert outs["out"].tolist() == (u ^ seed).tolist() + (((u * 7919) & 0xFFFFFFFF) ^ seed).tolist()


BLOCK = r"""
__global__ void full_block(unsigned *out, int *count, unsigned *sums) {
    __shared__ unsigned s[%(T)d];
    unsigned t = threadIdx.y * blockDim.x + threadIdx.x;
    s[t] = t * 2654435761u;
    atomicAdd(count, 1);
    atomicAdd(&sums[threadIdx.y], threadIdx.x + 1);
    __syncthreads();
    out[t] = s[%(M)d - t] ^ (threadIdx.y << 16) ^ (threadIdx.x << 8);
}
""" % {"T": SPEC.max_block_threads, "M": SPEC.max_block_threads - 1}


def block_model(bx: int, by: int) -> dict[str, list[int]]:
    T = bx * by
    t = np.arange(T, dtype=np.uint64)
    s = (t * 2654435761) & 0xFFFFFFFF
    out = s[T - 1 - t] ^ ((t // bx) << 16) ^ ((t % bx) << 8)
    return {"out": out.tolist(), "count": [T], "sums": [bx * (bx + 1) // 2] * by}


def test_a_full_block_of_threads_counts_its_indices_meets_at_a_barrier_and_adds_atomically():
    """Every one of the block's SPEC.max_block_threads threads (all the warps the scheduler
    holds) gets its own (x, y) index from the network's BLKINIT count, adds to shared
    counters with atomics, and after the barrier reads the word its mirror thread stored:
    a thread that never ran, a wrong index, a lost atomic update or a warp released before
    the others arrive changes a value."""
    bx, by = SPEC.max_block_threads // 4, 4
    T = bx * by
    outs, _ = both("full_block", (1, 1, 1), (bx, by, 1), {},
                   {"out": np.zeros(T, np.uint32), "count": np.zeros(1, np.int32), "sums": np.zeros(by, np.uint32)},
                   source=BLOCK, max_steps=100_000)
    assert {k: v.tolist() for k, v in outs.items()} == block_model(bx, by)


GLOBAL_SPAN = r"""
__global__ void global_span(unsigned *a, unsigned *out) {
    unsigned t = threadIdx.x;
    out[t] = a[t * %(S)du] + a[%(N)du - 1u - t];
    a[%(N)du - 1u - t] = t * 40503u;
    a[t * %(S)du + 1u] ^= 0xFFFFFFFFu;
}
"""


def test_buffers_filling_global_memory_round_trip_through_the_memory_heads():
    """Two buffers take every global cell but the null guard's two: the launcher loads all of
    them into the memory heads, 16 threads read and write cells spread over them and at the
    very top, and the host reads every cell back from the recurrent states; untouched cells must
    come back as loaded, touched ones as the C computes them."""
    G, T = SPEC.global_words, 16
    N = G - T - NULL_GUARD_CELLS
    src = GLOBAL_SPAN % {"N": N, "S": N // 16}
    rng = np.random.default_rng(14)
    a = rng.integers(0, 2 ** 32, size=N, dtype=np.uint64).astype(np.uint32)
    outs, _ = both("global_span", (1, 1, 1), (T, 1, 1), {}, {"a": a.copy(), "out": np.zeros(T, np.uint32)},
                   source=src)
    t = np.arange(T)
    want_a, stride = a.copy(), N // 16
    want_out = (a[t * stride].astype(np.uint64) + a[N - 1 - t]) & 0xFFFFFFFF
    want_a[N - 1 - t] = (t * 40503) & 0xFFFFFFFF
    want_a[t * stride + 1] ^= 0xFFFFFFFF
    assert outs["out"].tolist() == want_out.tolist()
    assert outs["a"].tolist() == want_a.tolist()


SLOT_PAIRS = r"""
__global__ void slot_pairs(unsigned *pad, unsigned *x, unsigned *y) {
    unsigned t = threadIdx.x;
    if (t & 1u) x[t] = x[t - 1u] * 3u + t;
    __syncthreads();
    atomicAdd(&x[0], t + 1u);
    atomicXor(&x[15], 1u << t);
    atomicMax(&x[2u + (t & 4u) * 2u], t * 0x10000001u);
    if (t == 5u) atomicCAS(&x[11], x[11], 0xC0FFEEu);
    atomicExch(&x[16 + (t & 1u)], t);
    __syncthreads();
    y[t] = x[t] ^ x[t + 8u];
}
"""


def slot_pairs_model(x: np.ndarray) -> tuple[list[int], list[int]]:
    x = x.astype(np.uint64)
    M = 0xFFFFFFFF
    for t in range(1, 8, 2):
        x[t] = (x[t - 1] * 3 + t) & M
    x[0] = (x[0] + sum(range(1, 9))) & M
    for t in range(8):
        x[15] ^= 1 << t
    for t in range(8):
        x[2 + (t & 4) * 2] = max(x[2 + (t & 4) * 2], (t * 0x10000001) & M)
    x[11] = 0xC0FFEE
    x[16], x[17] = 6, 7  # the last exchange of each is warp 1's lanes 2 and 3 (threads 6, 7)
    y = [int(x[t] ^ x[t + 8]) for t in range(8)]
    return [int(v) for v in x], y


@pytest.mark.parametrize("pad", [SPEC.global_words - 64,
                                 pytest.param(SPEC.global_words - 59, marks=pytest.mark.slow)])  # odd start: slow
def test_stores_and_atomics_on_one_word_of_a_slot_leave_the_other_word_intact(pad):
    """Global memory holds two cells a slot (docs/architecture.md), so a store or an atomic
    rewrites its slot from the word it changes and the other word as read.  Cells at the top of
    global memory, with the buffer starting on an even and an odd cell: odd elements stored
    from their even neighbours, atomics on single words of slots whose other word another
    lane stores or reads; every cell of both buffers must be what the C computes."""
    rng = np.random.default_rng(pad)
    x = rng.integers(0, 2 ** 32, size=18, dtype=np.uint64).astype(np.uint32)
    outs, _ = both("slot_pairs", (1, 1, 1), (8, 1, 1), {},
                   {"pad": np.zeros(pad, np.uint32), "x": x.copy(), "y": np.zeros(8, np.uint32)},
                   source=SLOT_PAIRS)
    want_x, want_y = slot_pairs_model(x)
    assert outs["x"].tolist() == want_x
    assert outs["y"].tolist() == want_y
    assert outs["pad"].tolist() == [0] * pad


GLOBAL_ALL = r"""
__global__ void global_all(unsigned *a) {
    for (unsigned i = threadIdx.x; i < %(G)du; i += blockDim.x)
        a[i] = a[i] * 2654435761u + i;
}
""" % {"G": SPEC.global_words - NULL_GUARD_CELLS}


@pytest.mark.slow  # 809 s on a shared 2-core machine under load (36 layers)
def test_every_global_cell_is_read_and_rewritten_inside_the_network():
    """One buffer is all of global memory but the null guard (cells 0 and 1): a full block reads
    and rewrites every other cell (both words of every other slot in every memory layer), and the
    host reads each back from the states."""
    G, T = SPEC.global_words - NULL_GUARD_CELLS, SPEC.max_block_threads
    rng = np.random.default_rng(65536)
    a = rng.integers(0, 2 ** 32, size=G, dtype=np.uint64).astype(np.uint32)
    outs, _ = both("global_all", (1, 1, 1), (T, 1, 1), {}, {"a": a.copy()}, source=GLOBAL_ALL,
                   max_steps=1_000_000)
    want = (a.astype(np.uint64) * 2654435761 + np.arange(G, dtype=np.uint64)) & 0xFFFFFFFF
    assert outs["a"].tolist() == want.tolist()


def test_one_cell_past_global_memory_is_a_named_error():
    """65,537 cells (the whole of global memory and one more, with the null guard's two) is
    refused at launch, naming the limit, before any cell is loaded."""
    from qgcc.diagnostics import UsageError
    from qgcc.frontend import compile_source
    from qgcc.runtime.launch import make_launch

    prog = compile_source(GLOBAL_ALL, "global_all.cu")
    G, free = SPEC.global_words, SPEC.global_words - NULL_GUARD_CELLS
    make_launch(prog, prog.kernels[0], (1, 1, 1), (1, 1, 1), {}, {"a": np.zeros(free, np.uint32)})
    with pytest.raises(UsageError) as e:
        make_launch(prog, prog.kernels[0], (1, 1, 1), (1, 1, 1), {}, {"a": np.zeros(free + 1, np.uint32)})
    assert str(e.value) == (f"the buffers need {free + 1} cells of global memory; the machine has {free} for them "
                            f"({G}, {G * 4 // 1024} KiB, less the null guard's {NULL_GUARD_CELLS})")
