"""Cooperative groups beyond blocks and tiles: the grid, coalesced groups and partitions.

`coopgroups` rewrites the token stream; this module supplies the C text for the groups whose
members are not a fixed slice of the block:

* `cg::grid_group grid = cg::this_grid();`: the launch's threads.  `thread_rank()` (the block's
  linear index times the block size plus the rank in the block), `size()`/`num_threads()`,
  `num_blocks()`, `block_rank()`, `block_index()`, `dim_blocks()`, `is_valid()` are arithmetic on
  the built-ins (32-bit here: a launch never has 2^32 threads).  `grid.sync()` is refused: this
  machine runs a launch's blocks one after another (one block fills the warp table), so a block
  cannot wait for blocks that only start after it ends.
* `cg::coalesced_group g = cg::coalesced_threads();`: the warp's active lanes at the call.  At
  run time the group is an int, COALESCED | the 4-bit lane mask (the flag keeps it apart from a
  tile's size when it is passed where any group may be).  rank = popcount of the lower member
  lanes; `shfl(v, r)` reads the lane holding rank r; `cg::reduce` combines the members' values in
  rank order (CUDA leaves the order unspecified; integers do not depend on it).
* `cg::labeled_partition(g, label)` / `cg::binary_partition(g, pred)` of a coalesced group or a
  tile of at most 4 threads: the members with an equal label, one MATCH vote (`__match_any_sync`).
* The same partitions of a tile wider than the warp (8, 16 or 32 threads, which span warps
  here): the group is the mask of the tile ranks with an equal label, found through shared
  memory at the partition (a barrier of the whole tile, which CUDA also requires to arrive).
  Its own barrier (`sync`, and inside `shfl` and `cg::reduce`) counts only its members, since
  the other label's threads run another branch; the counter belongs to the group's lowest rank.
* `cg::reduce(g, ...)` on a group this file does not declare (a template `Group &` parameter):
  chosen at run time from the group's int (coalesced, a tile of 1/2/4, or of 8/16/32).
"""

from __future__ import annotations

from ..spec import SPEC

COALESCED = 0x40000000  # flag bit of a coalesced group's run-time value (low 4 bits: the lane mask)
MAX_THREADS = SPEC.max_block_threads
LIN = "(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))"
SIZE = "(blockDim.x * blockDim.y * blockDim.z)"
BLOCK_RANK = "(blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z))"
NUM_BLOCKS = "(gridDim.x * gridDim.y * gridDim.z)"
LANE = f"({LIN} % warpSize)"
GRID_SYNC = "__qg_grid_sync()"  # a grid barrier, exact in a one-block launch (sema_printf.grid_sync_call)

_OP = "if (OP == 0) a = a + o; else if (OP == 1) a = a < o ? o : a; else a = o < a ? o : a;"

HELPERS = f"""
template <typename T> __device__ T __qg_coal_shfl(unsigned m, T v, int k) {{
    int src = {LANE};
    int n = 0;
    for (int l = 0; l < 4; l++) {{
        if ((m >> l) & 1u) {{ if (n == k) src = l; n++; }}
    }}
    return __shfl_sync(m, v, src);
}}
template <int OP, typename T> __device__ T __qg_coal_reduce(unsigned m, T v) {{
    T a = v;
    int first = 1;
    for (int l = 0; l < 4; l++) {{
        T o = __shfl_sync(m, v, l);
        if ((m >> l) & 1u) {{
            if (first) a = o; else {{ {_OP} }}
            first = 0;
        }}
    }}
    return a;
}}
__device__ unsigned __qg_coal_ballot(unsigned m, int p) {{
    unsigned b = __ballot_sync(m, p);
    unsigned r = 0u;
    int n = 0;
    for (int l = 0; l < 4; l++) {{
        if ((m >> l) & 1u) {{ if ((b >> l) & 1u) r |= 1u << n; n++; }}
    }}
    return r;
}}
template <int G> __device__ unsigned __qg_part_label(unsigned label) {{
    __shared__ unsigned __qg_part_labels[{MAX_THREADS}];
    unsigned lin = {LIN};
    unsigned base = lin - lin % G;
    __qg_part_labels[lin] = label;
    __qg_tile_sync<G>();
    unsigned m = 0u;
    for (int r = 0; r < G; r++)
        if (base + r < {SIZE} && __qg_part_labels[base + r] == label) m |= 1u << r;
    __qg_tile_sync<G>();
    return m;
}}
template <int G> __device__ void __qg_part_sync(unsigned m) {{
    __shared__ unsigned __qg_part_count[{MAX_THREADS}];
    __shared__ unsigned __qg_part_gen[{MAX_THREADS}];
    unsigned lin = {LIN};
    unsigned slot = lin - lin % G + (unsigned)(__ffs(m) - 1);
    unsigned gen = __qg_part_gen[slot];
    if (atomicAdd(&__qg_part_count[slot], 1u) == (unsigned)__popc(m) - 1u) {{
        __qg_part_count[slot] = 0u;
        __qg_part_gen[slot] = gen + 1u;
    }} else {{
        while (__qg_part_gen[slot] == gen) {{ }}
    }}
}}
template <int G, typename T> __device__ T __qg_part_shfl(unsigned m, T v, int k) {{
    __shared__ T __qg_part_cells[{MAX_THREADS}];
    unsigned lin = {LIN};
    unsigned base = lin - lin % G;
    __qg_part_cells[lin] = v;
    __qg_part_sync<G>(m);
    T r = v;
    int n = 0;
    for (int q = 0; q < G; q++) {{
        if ((m >> q) & 1u) {{ if (n == k) r = __qg_part_cells[base + q]; n++; }}
    }}
    __qg_part_sync<G>(m);
    return r;
}}
template <int G, int OP, typename T> __device__ T __qg_part_reduce(unsigned m, T v) {{
    __shared__ T __qg_part_vals[{MAX_THREADS}];
    unsigned lin = {LIN};
    unsigned base = lin - lin % G;
    __qg_part_vals[lin] = v;
    __qg_part_sync<G>(m);
    T a = v;
    int first = 1;
    for (int q = 0; q < G; q++) {{
        if ((m >> q) & 1u) {{
            T o = __qg_part_vals[base + q];
            if (first) a = o; else {{ {_OP} }}
            first = 0;
        }}
    }}
    __qg_part_sync<G>(m);
    return a;
}}
template <int OP, typename T> __device__ T __qg_any_reduce(int g, T v) {{
    T a = v;
    if (g & {COALESCED}) a = __qg_coal_reduce<OP>((unsigned)g, v);
    else if (g == 2) a = __qg_narrow_reduce<2, OP>(v);
    else if (g == 4) a = __qg_narrow_reduce<4, OP>(v);
    else if (g == 8) a = __qg_tile_reduce<8, OP>(v);
    else if (g == 16) a = __qg_tile_reduce<16, OP>(v);
    else if (g == 32) a = __qg_tile_reduce<32, OP>(v);
    return a;
}}
"""

REDUCE_OP = {"plus": 0, "greater": 1, "less": 2}


def this_grid() -> str:
    return "0"


def grid_member(m: str) -> str | None:
    """`grid.m()` (None: not a grid_group member; `sync` is GRID_SYNC, chosen by the caller)."""
    return {"thread_rank": f"({BLOCK_RANK} * {SIZE} + {LIN})", "size": f"({NUM_BLOCKS} * {SIZE})",
            "num_threads": f"({NUM_BLOCKS} * {SIZE})", "num_blocks": NUM_BLOCKS, "block_rank": BLOCK_RANK,
            "block_index": "blockIdx", "dim_blocks": "gridDim", "group_dim": "gridDim",
            "is_valid": "true"}.get(m)


def coalesced_threads() -> str:
    return f"((int)({COALESCED}u | __activemask()))"


def coalesced_member(g: str, m: str, a: list[str]) -> str | None:
    """`g.m(a)` on a coalesced group (run-time value: COALESCED | lane mask)."""
    mask = f"((unsigned)({g}) & 15u)"
    rank = f"((unsigned)__popc({mask} & ((1u << {LANE}) - 1u)))"
    if m == "thread_rank":
        return rank
    if m in ("size", "num_threads"):
        return f"((unsigned)__popc({mask}))"
    if m == "sync":
        return f"__syncwarp({mask})"
    if m == "shfl":
        return f"__qg_coal_shfl({mask}, {a[0]}, (int)({a[1]}))"
    if m == "shfl_down":
        return f"__qg_coal_shfl({mask}, {a[0]}, (int){rank} + (int)({a[1]}))"
    if m == "shfl_up":
        return f"__qg_coal_shfl({mask}, {a[0]}, (int){rank} - (int)({a[1]}))"
    if m in ("any", "all"):
        return f"__{m}_sync({mask}, {a[0]})"
    if m == "ballot":
        return f"__qg_coal_ballot({mask}, {a[0]})"
    return None


def part_member(g: str, size: int, m: str, a: list[str]) -> str | None:
    """`g.m(a)` on a partition of a tile of `size` > 4 threads (run-time value: the rank mask)."""
    mask = f"((unsigned)({g}))"
    rank = f"((unsigned)__popc({mask} & ((1u << ({LIN} % {size})) - 1u)))"
    if m == "thread_rank":
        return rank
    if m in ("size", "num_threads"):
        return f"((unsigned)__popc({mask}))"
    if m == "sync":
        return f"__qg_part_sync<{size}>({mask})"
    if m == "shfl":
        return f"__qg_part_shfl<{size}>({mask}, {a[0]}, (int)({a[1]}))"
    if m == "shfl_down":
        return f"__qg_part_shfl<{size}>({mask}, {a[0]}, (int){rank} + (int)({a[1]}))"
    if m == "shfl_up":
        return f"__qg_part_shfl<{size}>({mask}, {a[0]}, (int){rank} - (int)({a[1]}))"
    return None


def narrow_partition(parent_mask: str, label: str) -> str:
    """The coalesced group of the parent's members (lane mask `parent_mask`) whose label equals
    this lane's: one MATCH vote restricted to the parent."""
    return f"((int)({COALESCED}u | (__match_any_sync({parent_mask}, (unsigned)({label})) & {parent_mask})))"


def wide_partition(size: int, label: str) -> str:
    return f"((int)__qg_part_label<{size}>((unsigned)({label})))"


def reduce(kind: str, g: str, size: int | None, op: str, value: str) -> str:
    """`cg::reduce(g, value, cg::op<T>())` on a coalesced group, a wide-tile partition or a
    group known only at run time."""
    if kind == "coalesced":
        return f"__qg_coal_reduce<{REDUCE_OP[op]}>(((unsigned)({g}) & 15u), {value})"
    if kind == "part":
        return f"__qg_part_reduce<{size}, {REDUCE_OP[op]}>((unsigned)({g}), {value})"
    return f"__qg_any_reduce<{REDUCE_OP[op]}>((int)({g}), {value})"


__all__ = ["COALESCED", "GRID_SYNC", "HELPERS", "coalesced_member", "coalesced_threads", "grid_member",
           "narrow_partition", "part_member", "reduce", "wide_partition"]
