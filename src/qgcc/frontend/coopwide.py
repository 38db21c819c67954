"""Cooperative-groups tiles wider than the machine's 4-lane warp (`tiled_partition<8|16|32>`).

A warp here has 4 lanes, so a tile of 32 threads is 8 warps and its shuffles and reductions
cannot be SHFL instructions.  They go through shared memory instead, with a barrier that only
the tile's threads take part in: `__syncthreads()` would wait for the whole block, while
published kernels call tile operations from code only some tiles run (`if (tid < 32)
tile32.shfl_down(...)`).  The barrier is a counter and a generation word per tile in shared
memory (the last thread to arrive resets the counter and advances the generation; the others
wait for the generation to change), which is correct on this machine because every warp of a
block keeps being scheduled and memory is sequentially consistent.

* `t.sync()`, `cg::sync(t)`: the tile barrier.
* `t.shfl(v, r)`, `shfl_down`, `shfl_up`, `shfl_xor`: every thread of the tile writes v to
  its cell, barrier, reads the source rank's cell (`shfl`'s rank taken modulo the tile, the
  others' own value when the source is outside the tile, as a shuffle does), barrier.
* `cg::reduce(t, v, cg::plus<T>() | cg::greater<T>() | cg::less<T>())`: the butterfly the
  4-lane tiles use (partner rank ^ 1, ^ 2, ^ 4, ...; each step v = op(v, partner's v)), for
  any arithmetic T, so float sums have that order.
* A `thread_group` parameter of a device function (`__device__ int sum(thread_group g, ...)`)
  is an int at run time, 0 for a thread block and the size for a tile: `g.sync()`,
  `thread_rank()`, `size()`, `num_threads()` choose by it.
* A tile is the threads whose linear index shares `index / N`; a last, partial tile (block
  size not a multiple of N) counts only its threads.  `any`/`all`/`ballot` on a wide tile are
  named errors.

Costs: one shared cell per thread of the block per element type shuffled (max_block_threads
cells), two per tile for the barrier, and a barrier is a spin loop, so waiting threads take
steps.
"""

from __future__ import annotations

from ..spec import SPEC

WIDE_SIZES = (8, 16, 32)
MAX_THREADS = SPEC.max_block_threads
MAX_TILES = MAX_THREADS // WIDE_SIZES[0]
LIN = "(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))"
SIZE = "(blockDim.x * blockDim.y * blockDim.z)"

HELPERS = f"""
template <int G> __device__ void __qg_tile_sync() {{
    __shared__ unsigned __qg_tile_count[{MAX_TILES}];
    __shared__ unsigned __qg_tile_gen[{MAX_TILES}];
    unsigned lin = {LIN};
    unsigned tile = lin / G;
    unsigned left = {SIZE} - tile * G;
    unsigned n = left < G ? left : G;
    unsigned gen = __qg_tile_gen[tile];
    if (atomicAdd(&__qg_tile_count[tile], 1u) == n - 1u) {{
        __qg_tile_count[tile] = 0u;
        __qg_tile_gen[tile] = gen + 1u;
    }} else {{
        while (__qg_tile_gen[tile] == gen) {{ }}
    }}
}}
__device__ void __qg_group_sync(int g) {{
    if (g == 0) __syncthreads();
    else if (g <= 4 || (g & 0x40000000)) __syncwarp();
    else if (g == 8) __qg_tile_sync<8>();
    else if (g == 16) __qg_tile_sync<16>();
    else __qg_tile_sync<32>();
}}
template <int G, typename T> __device__ T __qg_tile_xchg(T v, int src) {{
    __shared__ T __qg_tile_cells[{MAX_THREADS}];
    unsigned lin = {LIN};
    unsigned base = lin - lin % G;
    __qg_tile_cells[lin] = v;
    __qg_tile_sync<G>();
    T r = v;
    if (src >= 0 && src < G && base + src < {SIZE}) r = __qg_tile_cells[base + src];
    __qg_tile_sync<G>();
    return r;
}}
template <int G, int OP, typename T> __device__ T __qg_narrow_reduce(T v) {{
    for (int k = 1; k < G; k *= 2) {{
        T o = __shfl_xor_sync(0xffffffff, v, k, G);
        if (OP == 0) v = v + o;
        else if (OP == 1) v = v < o ? o : v;
        else v = o < v ? o : v;
    }}
    return v;
}}
template <int G, int OP, typename T> __device__ T __qg_tile_reduce(T v) {{
    unsigned lin = {LIN};
    int rank = lin % G;
    unsigned base = lin - rank;
    for (int k = 1; k < G; k *= 2) {{
        T o = __qg_tile_xchg<G>(v, rank ^ k);
        if (base + (rank ^ k) < {SIZE}) {{
            if (OP == 0) v = v + o;
            else if (OP == 1) v = v < o ? o : v;
            else v = o < v ? o : v;
        }}
    }}
    return v;
}}
"""

REDUCE_OP = {"plus": 0, "greater": 1, "less": 2}


def member(g: str, size: int, m: str, args: list[str]) -> str | None:
    """The C text of `g.m(args)` on a wide tile (None: not a tile operation handled here)."""
    rank = f"((int)({LIN} % {size}))"
    if m == "sync":
        return f"__qg_tile_sync<{size}>()"
    if m == "shfl":
        # the source rank modulo the tile, as __shfl_sync's width: -1 is the last rank (not out of range)
        return f"__qg_tile_xchg<{size}>({args[0]}, (int)((unsigned)({args[1]}) % {size}u))"
    if m == "shfl_down":
        return f"__qg_tile_xchg<{size}>({args[0]}, {rank} + (int)({args[1]}))"
    if m == "shfl_up":
        return f"__qg_tile_xchg<{size}>({args[0]}, {rank} - (int)({args[1]}))"
    if m == "shfl_xor":
        return f"__qg_tile_xchg<{size}>({args[0]}, {rank} ^ (int)({args[1]}))"
    return None


def any_group(g: str, m: str) -> str | None:
    """`g.m()` on a `thread_group` parameter: g is 0 for a thread block, else its tile size."""
    coal = f"({g} & 0x40000000)"  # a coalesced group (coopparts.COALESCED | its lane mask)
    crank = f"(unsigned)__popc({g} & 15 & ((1 << ({LIN} % warpSize)) - 1))"
    size = f"({g} == 0 ? {SIZE} : {coal} ? (unsigned)__popc({g} & 15) : (unsigned){g})"
    table = {"sync": f"__qg_group_sync({g})", "thread_rank": f"({g} == 0 ? {LIN} : {coal} ? {crank} : {LIN} % {g})",
             "size": size, "num_threads": size,
             "meta_group_rank": f"({g} == 0 || {coal} ? 0u : {LIN} / {g})",
             "meta_group_size": f"({g} == 0 || {coal} ? 1u : ({SIZE} + {g} - 1) / {g})"}
    return table.get(m)


def reduce(size: int, op: str, value: str) -> str:
    return f"__qg_tile_reduce<{size}, {REDUCE_OP[op]}>({value})"


__all__ = ["HELPERS", "WIDE_SIZES", "member", "reduce"]
