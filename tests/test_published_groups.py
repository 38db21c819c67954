"""Cooperative groups that published CUDA uses beyond blocks and tiles (issue 27): the grid,
coalesced groups, labeled and binary partitions, and cg::reduce on a group handed to a template.
Each kernel is written the way the CUDA samples write them, compiled with `qgcc --no-link -o`,
run with `qgrun` on the emulator and compared with numpy following CUDA's definitions (the
machine's warp is 4 lanes, so a coalesced group is at most 4 threads; partitions of a 32-thread
tile span 8 warps).
"""

from __future__ import annotations

import numpy as np
import pytest

from frontcheck import assert_error
from test_published_constructs import cli_run

F32 = np.float32
WARP = 4

# ---------------------------------------------------------------- the grid

GRID = r"""
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
__device__ void scale(float *y, const float *x, float a, int n, const cg::grid_group &grid) {
    for (int i = grid.thread_rank(); i < n; i += grid.size())   // a grid-stride loop
        y[i] = a * x[i];
}
__global__ void ranks(const float *x, float *y, unsigned *info, int n) {
    cg::thread_block cta = cg::this_thread_block();
    cg::grid_group grid = cg::this_grid();
    scale(y, x, 2.5f, n, grid);
    unsigned r = grid.thread_rank();
    info[4 * r] = grid.block_rank();
    info[4 * r + 1] = grid.num_blocks();
    info[4 * r + 2] = grid.num_threads() * 1000u + cta.thread_rank();
    info[4 * r + 3] = grid.is_valid() ? grid.dim_blocks().x : 0u;
}
"""


def test_grid_group_ranks_sizes_and_grid_stride_loop(qgcc, qgrun, tmp_path):
    """grid.thread_rank() is the block's rank times the block size plus the rank in the block;
    size/num_threads count the launch's threads; a grid_group passed by const reference works
    in a device function's grid-stride loop (3 blocks of 8 threads over 50 elements)."""
    grid, block, n = 3, 8, 50
    x = np.linspace(-3, 7, n).astype(F32)
    got = cli_run(qgcc, qgrun, tmp_path, GRID, "ranks", grid, block, {"x": x, "y": np.zeros(n, F32),
                                                   "info": np.zeros(4 * grid * block, np.uint32)}, {"n": n})
    assert got["y"].tobytes() == (F32(2.5) * x).tobytes()
    r = np.arange(grid * block)
    want = np.stack([r // block, np.full_like(r, grid), grid * block * 1000 + r % block, np.full_like(r, grid)], 1)
    assert got["info"].tolist() == want.reshape(-1).tolist()


# ---------------------------------------------------------------- coalesced groups

COALESCED = r"""
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;
// a warp-aggregated increment: the group's leader adds the group's size, the others offset from it
__device__ int aggInc(int *counter) {
    cg::coalesced_group g = cg::coalesced_threads();
    int base = 0;
    if (g.thread_rank() == 0) base = atomicAdd(counter, g.size());
    return g.shfl(base, 0) + g.thread_rank();
}
__device__ int aggIncBucket(int bucket, int *counter) {
    cg::coalesced_group active = cg::coalesced_threads();
    auto same = cg::labeled_partition(active, bucket);
    int base = 0;
    if (same.thread_rank() == 0) base = atomicAdd(&counter[bucket], same.size());
    return same.shfl(base, 0) + same.thread_rank();
}
__global__ void compact(const int *src, int *slot, int *counters, int *bslot, int *bmax, float *fsum, int n) {
    int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 4;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        int v = src[i];
        if (v > 0) {
            slot[i] = aggInc(&counters[warp]);                       // one counter per warp: no race
            int b = v % 3;
            bslot[i] = aggIncBucket(b, &counters[64 + 3 * warp]);
            cg::coalesced_group g = cg::coalesced_threads();
            auto part = cg::labeled_partition(g, b);
            bmax[i] = cg::reduce(part, v, cg::greater<int>()) * 100 + part.size() * 10 + part.thread_rank();
            fsum[i] = cg::reduce(g, v * 0.1f, cg::plus<float>());   // the members in rank order
        }
    }
}
"""


def coalesced_model(src, grid, block):
    n = len(src)
    slot, bslot, bmax = (np.zeros(n, np.int32) for _ in range(3))
    fsum = np.zeros(n, F32)
    counters = np.zeros(64 + 3 * 64, np.int32)
    stride = grid * block
    for warp in range(stride // WARP):
        lanes = range(warp * WARP, warp * WARP + WARP)
        for it in range(0, n, stride):
            idx = [it + t for t in lanes if it + t < n]
            members = [i for i in idx if src[i] > 0]          # the active lanes at the call
            for r, i in enumerate(members):
                slot[i] = counters[warp] + r
            counters[warp] += len(members)
            for b in range(3):
                same = [i for i in members if src[i] % 3 == b]
                for r, i in enumerate(same):
                    bslot[i] = counters[64 + 3 * warp + b] + r
                    bmax[i] = max(src[j] for j in same) * 100 + len(same) * 10 + r
                counters[64 + 3 * warp + b] += len(same)
            acc = None
            for i in members:
                acc = F32(src[i] * F32(0.1)) if acc is None else F32(acc + F32(src[i] * F32(0.1)))
            for i in members:
                fsum[i] = acc
    return slot, counters, bslot, bmax, fsum




@pytest.mark.parametrize("engine", ["ref", pytest.param("neural", marks=pytest.mark.slow)])
def test_coalesced_group_is_the_active_lanes_and_partitions_by_label(qgcc, qgrun, tmp_path, engine):
    """coalesced_threads() inside `if (v > 0)` is the warp's lanes that took the branch: rank =
    lower member lanes, size = members, shfl from rank 0 broadcasts the leader's atomicAdd;
    labeled_partition splits it by bucket; cg::reduce over it (max of ints, float sum in rank
    order).  The last grid-stride iteration leaves a warp partly outside the data."""
    grid, block, n = (2, 8, 27) if engine == "ref" else (1, 4, 6)
    rng = np.random.default_rng(7)
    src = rng.integers(-4, 12, n).astype(np.int32)
    arrays = {"src": src, "slot": np.zeros(n, np.int32), "counters": np.zeros(256, np.int32),
              "bslot": np.zeros(n, np.int32), "bmax": np.zeros(n, np.int32), "fsum": np.zeros(n, F32)}
    got = cli_run(qgcc, qgrun, tmp_path, COALESCED, "compact", grid, block, arrays, {"n": n}, engine=engine)
    slot, counters, bslot, bmax, fsum = coalesced_model(src, grid, block)
    pos = src > 0
    assert got["slot"][pos].tolist() == slot[pos].tolist()
    assert got["counters"].tolist() == counters.tolist()
    assert got["bslot"][pos].tolist() == bslot[pos].tolist()
    assert got["bmax"][pos].tolist() == bmax[pos].tolist()
    assert got["fsum"].tobytes() == fsum.tobytes()


# ---------------------------------------------------------------- partitions of a 32-thread tile

BINARY = r"""
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;
// odd and even elements counted and summed per half of a 32-thread tile (8 warps here)
__global__ void oddEven(const int *in, int *odds, int *sums, unsigned *who, float *fs, int n) {
    cg::thread_block cta = cg::this_thread_block();
    cg::grid_group grid = cg::this_grid();
    cg::thread_block_tile<32> tile32 = cg::tiled_partition<32>(cta);
    for (int i = grid.thread_rank(); i < n; i += grid.size()) {
        int e = in[i];
        auto half = cg::binary_partition(tile32, e & 1);
        if (e & 1) {
            int s = cg::reduce(half, e, cg::plus<int>());
            if (half.thread_rank() == 0) { atomicAdd(odds, half.size()); atomicAdd(&sums[0], s); }
        } else {
            int s = cg::reduce(half, e, cg::plus<int>());
            if (half.thread_rank() == 0) atomicAdd(&sums[1], s);
        }
        who[i] = half.thread_rank() * 100u + half.size() + 10000u * (unsigned)half.shfl(e, 1);
        fs[i] = cg::reduce(half, e * 0.25f, cg::plus<float>());
        cg::sync(tile32);
    }
}
"""


def test_binary_partition_of_a_tile_wider_than_the_warp(qgcc, qgrun, tmp_path):
    """binary_partition(tile32, pred) splits the tile into the threads with each predicate,
    across the tile's 8 warps; cg::reduce is called from the two branches of the `if` (each
    half waits only for its own members), thread_rank/size/shfl are within the half, and a
    float reduce adds the members' values in rank order.  One block of 32 threads (each half's
    barrier counter serves six barriers in a row)."""
    grid, block = 1, 32
    n = grid * block
    x = np.random.default_rng(3).integers(-50, 50, n).astype(np.int32)
    got = cli_run(qgcc, qgrun, tmp_path, BINARY, "oddEven", grid, block,
                  {"in": x, "odds": np.zeros(1, np.int32), "sums": np.zeros(2, np.int32),
                   "who": np.zeros(n, np.uint32), "fs": np.zeros(n, F32)}, {"n": n})
    odd = (x & 1) == 1
    assert got["odds"].tolist() == [int(odd.sum())]
    assert got["sums"].tolist() == [int(x[odd].sum()), int(x[~odd].sum())]
    who, fs = np.zeros(n, np.uint32), np.zeros(n, F32)
    for t0 in range(0, n, 32):  # each tile of each round
        for p in (True, False):
            members = [i for i in range(t0, t0 + 32) if odd[i] == p]
            acc = F32(0)
            for k, i in enumerate(members):
                acc = F32(x[i] * F32(0.25)) if k == 0 else F32(acc + F32(x[i] * F32(0.25)))
            for r, i in enumerate(members):
                src = members[1] if len(members) > 1 else i
                who[i] = (r * 100 + len(members) + 10000 * int(x[src])) & 0xFFFFFFFF
                fs[i] = acc
    assert got["who"].tolist() == who.tolist()
    assert got["fs"].tobytes() == fs.tobytes()


# ---------------------------------------------------------------- groups handed to templates

GENERIC = r"""
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;
template <typename T, typename Group> __device__ T sumOf(T in, Group &g) {
    return cg::reduce(g, in, cg::plus<T>());
}
template <int TileSize> __global__ void tileSums(const int *x, int *out, int *counts) {
    __shared__ cg::block_tile_memory<64> scratch;
    auto cta = cg::this_thread_block(scratch);
    auto tile = cg::tiled_partition<TileSize>(cta);
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    int v = x[i];
    int s = sumOf(v, tile);
    if (tile.thread_rank() == 0) out[blockIdx.x * tile.meta_group_size() + tile.meta_group_rank()] = s;
    if (v > 0) {
        cg::coalesced_group pos = cg::coalesced_threads();
        int c = sumOf(v, pos);
        if (pos.thread_rank() == 0) atomicAdd(&counts[i / 4], c);
    }
}
"""


@pytest.mark.parametrize("size", [4, 32])
def test_cg_reduce_on_a_group_passed_to_a_template(qgcc, qgrun, tmp_path, size):
    """A template `Group &` parameter takes a tile whose size is a template argument
    (tiled_partition<TileSize>) or a coalesced group; cg::reduce on it chooses by the group at
    run time.  block_tile_memory scratch is accepted (it is not needed here)."""
    grid, block = 2, 64
    x = np.random.default_rng(size).integers(-9, 20, grid * block).astype(np.int32)
    got = cli_run(qgcc, qgrun, tmp_path, GENERIC, f"tileSums<{size}>", grid, block,
                  {"x": x, "out": np.zeros(grid * block // size, np.int32),
                   "counts": np.zeros(grid * block // 4, np.int32)}, instantiate=[f"tileSums<{size}>"])
    assert got["out"].tolist() == x.reshape(-1, size).sum(axis=1).tolist()
    assert got["counts"].tolist() == np.where(x > 0, x, 0).reshape(-1, 4).sum(axis=1).tolist()


TILE_PARAM = r"""
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
__device__ int tileSum(cg::thread_block_tile<32> &t, int v) {     // a tile passed by reference
    for (int offset = t.size() / 2; offset > 0; offset /= 2)
        v += t.shfl_down(v, offset);
    return v;
}
__device__ unsigned rankIn(cg::thread_group g) { return g.thread_rank() * 100u + g.size(); }
__global__ void sums(const int *x, int *out, unsigned *ranks) {
    cg::thread_block cta = cg::this_thread_block();
    cg::thread_block_tile<32> tile32 = cg::tiled_partition<32>(cta);
    int s = tileSum(tile32, x[threadIdx.x]);
    if (tile32.thread_rank() == 0) out[tile32.meta_group_rank()] = s;
    if (x[threadIdx.x] > 0) {
        cg::thread_group pos = cg::coalesced_threads();           // a coalesced group as a thread_group
        ranks[threadIdx.x] = rankIn(pos) + 10000u * pos.thread_rank();
    }
}
"""


def test_a_32_thread_tile_by_reference_and_a_coalesced_group_as_thread_group(qgcc, qgrun, tmp_path):
    """`cg::thread_block_tile<32> &t` parameters keep the tile's size (the shfl_down ladder of the
    samples' warp sums over 8 warps); a coalesced group passed as a `thread_group` keeps its
    members (rank among the warp's positive lanes, size = their count)."""
    x = np.random.default_rng(11).integers(-5, 9, 64).astype(np.int32)
    got = cli_run(qgcc, qgrun, tmp_path, TILE_PARAM, "sums", 1, 64,
                  {"x": x, "out": np.zeros(2, np.int32), "ranks": np.zeros(64, np.uint32)})
    assert got["out"].tolist() == x.reshape(2, 32).sum(axis=1).tolist()
    want = np.zeros(64, np.uint32)
    for w in range(16):
        members = [t for t in range(4 * w, 4 * w + 4) if x[t] > 0]
        for r, t in enumerate(members):
            want[t] = r * 100 + len(members) + 10000 * r
    assert got["ranks"].tolist() == want.tolist()


def test_a_partition_of_a_wide_tile_passed_to_a_function_is_named():
    """A partition of a 32-thread tile is a mask of tile ranks that only its own function
    knows how to use: passing it on is a named error, not a wrong group."""
    src = BINARY.replace("        cg::sync(tile32);", "        rankOf(half);\n        cg::sync(tile32);").replace(
        "// odd and even", "__device__ void rankOf(cg::thread_group g) { g.sync(); }\n// odd and even")
    assert_error(src, 23, 16, "'half', a partition of a tile wider than a warp, cannot be passed to a function "
                              "(use it in the function that partitions)")
