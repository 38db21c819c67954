"""Warp intrinsics, clock(), atomicInc/atomicDec and the integer intrinsics.

The expected values come from models written here from CUDA's own definitions (the
programming guide's wording for shuffles and votes with a 4-lane warp, the C
definitions of the integer intrinsics), not from qgcc.isa: the emulator is checked
against them, and the network against the emulator, record by record.  Shuffles and
votes are checked with full masks, per-lane partial masks, divergent code (only some
lanes active) and a partial warp (lanes that do not exist).
"""

from __future__ import annotations

import copy
import dataclasses

import numpy as np
import pytest

from lockstep import both, host, linked
from qgcc.frontend import compile_source
from qgcc.isa import Op
from qgcc.link.linker import link
from qgcc.ref.emulator import run as ref_run
from qgcc.runtime.launch import make_launch

WS = 4
OUTW = 16  # output words per thread

WARP_KERNEL = r"""
__global__ void warp(int *out, const int *v, const unsigned *m, unsigned *ctr) {
    int t = threadIdx.x + blockIdx.x * blockDim.x;
    int x = v[t];
    int *o = out + t * 16;
    o[0] = __shfl_sync(0xffffffff, x, v[t + 32] & 7);
    o[1] = __shfl_up_sync(0xffffffff, x, 1);
    o[2] = __shfl_down_sync(0xffffffff, x, 2, 4);
    o[3] = __shfl_xor_sync(0xffffffff, x, 3, 2);
    o[4] = __shfl_down_sync(0xffffffff, x, 1, 2);
    o[5] = __ballot_sync(0xffffffff, x > 0);
    o[6] = __ballot_sync(m[t], x & 1);
    if (x > 0) {
        o[7] = __shfl_xor_sync(__activemask(), x, 1);
        o[8] = __any_sync(0xf, x & 2);
        o[9] = __all_sync(m[t], x & 4);
        o[10] = __activemask();
        o[11] = __match_any_sync(0xffffffff, x & 3);
        o[12] = __shfl_up_sync(m[t], x, 1, 2);
    }
    __syncwarp();
    o[13] = __any_sync(m[t], x > 5) + 2 * __all_sync(0xffffffff, x != 12345);
    int c0 = clock();
    o[14] = atomicInc(ctr, 5) + 16 * atomicDec_block(ctr + 1, 3);
    o[15] = clock() - c0;
}
"""


# ---- the model: CUDA's rules, a warp of 4 lanes; an inactive source lane gives the lane's own value

def m_shfl(vals, act, lane, src, width):
    s = (lane // width) * width + src % width
    return vals[s] if s in act else vals[lane]


def m_up(vals, act, lane, d, width):
    if lane % width - d < 0:
        return vals[lane]
    return vals[lane - d] if lane - d in act else vals[lane]


def m_down(vals, act, lane, d, width):
    if lane % width + d >= width:
        return vals[lane]
    return vals[lane + d] if lane + d in act else vals[lane]


def m_xor(vals, act, lane, mask, width):
    s = lane ^ mask
    if s >= (lane // width + 1) * width:  # a later group: own value
        return vals[lane]
    return vals[s] if s in act else vals[lane]


def m_vote(kind, act, mask, preds):
    lanes = [j for j in act if (mask >> j) & 1]
    if kind == "ballot":
        return sum(1 << j for j in lanes if preds[j])
    if kind == "any":
        return int(any(preds[j] for j in lanes))
    return int(all(preds[j] for j in lanes))


def model_warp(v, m, grid, block):
    """Words 0-13 of every thread (-1: not written), from the kernel's text."""
    u32 = lambda x: x & 0xFFFFFFFF  # noqa: E731
    out = np.full((grid * block, OUTW), -1, np.int64)
    for w0, end in [(b * block + w, (b + 1) * block) for b in range(grid) for w in range(0, block, WS)]:
        live = [l for l in range(WS) if w0 + l < end]
        x = {l: int(v[w0 + l]) for l in range(WS)}
        mk = {l: int(m[w0 + l]) for l in range(WS)}
        for l in live:
            o = out[w0 + l]
            o[0] = u32(m_shfl(x, live, l, int(v[w0 + l + 32]) & 7, 4))
            o[1] = u32(m_up(x, live, l, 1, 4))
            o[2] = u32(m_down(x, live, l, 2, 4))
            o[3] = u32(m_xor(x, live, l, 3, 2))
            o[4] = u32(m_down(x, live, l, 1, 2))
            o[5] = m_vote("ballot", live, 0xFFFFFFFF, {j: x[j] > 0 for j in x})
            o[6] = m_vote("ballot", live, mk[l], {j: x[j] & 1 for j in x})
            o[13] = m_vote("any", live, mk[l], {j: x[j] > 5 for j in x}) + 2
        act = [l for l in live if x[l] > 0]
        amask = sum(1 << l for l in act)
        for l in act:
            o = out[w0 + l]
            o[7] = u32(m_xor(x, act, l, 1, 4))
            o[8] = m_vote("any", act, 0xF, {j: x[j] & 2 for j in x})
            o[9] = m_vote("all", act, mk[l], {j: x[j] & 4 for j in x})
            o[10] = amask
            o[11] = sum(1 << j for j in act if x[j] & 3 == x[l] & 3)
            o[12] = u32(m_up(x, act, l, 1, 2))
    return out


def inc_dec_chain(n, init, lim_inc=5, lim_dec=3):
    """The n values the two counters take under n atomicInc/atomicDec, in any order of the lanes."""
    a, b = init
    seq = []
    for _ in range(n):
        seq.append((a, b))
        a = 0 if a >= lim_inc else a + 1
        b = lim_dec if b == 0 or b > lim_dec else b - 1
    return seq, (a, b)


def warp_launch(prog, seed, grid, block):
    rng = np.random.default_rng(seed)
    n = grid * block
    v = rng.integers(-3, 9, size=64).astype(np.int32)
    m = rng.integers(0, 16, size=64).astype(np.uint32)
    m[rng.random(64) < 0.3] = 0xFFFFFFFF
    ctr = np.array([rng.integers(0, 7), rng.integers(0, 5)], np.uint32)
    arrays = {"out": np.full(64 * OUTW, -1, np.int32), "v": v, "m": m, "ctr": ctr}
    return n, arrays


def check_warp_results(outs, arrays, grid, block):
    n = grid * block
    out = outs["out"].astype(np.int64).reshape(64, OUTW)[:n] & 0xFFFFFFFF
    want = model_warp(arrays["v"], arrays["m"], grid, block)
    for col in range(14):
        w = want[:, col]
        got = np.where(w == -1, -1, out[:, col])
        assert np.array_equal(got, w), (col, got, w)
    seq, final = inc_dec_chain(n, tuple(int(c) for c in arrays["ctr"]))
    assert tuple(int(c) for c in outs["ctr"]) == final
    # Each lane saw one of the counters' successive values (each once): a serial order exists.
    assert sorted(out[:, 14] % 16) == sorted(a for a, _ in seq)
    assert sorted(out[:, 14] // 16) == sorted(b for _, b in seq)


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4, 5])
def test_warp_intrinsics_on_the_emulator_follow_cudas_rules(seed):
    prog = compile_source(WARP_KERNEL, "warp.cu")
    grid, block = [(1, 8), (2, 7), (1, 3), (3, 6), (1, 5), (2, 8)][seed]
    n, arrays = warp_launch(prog, seed, grid, block)
    launch = make_launch(prog, prog.kernels[0], (grid, 1, 1), (block, 1, 1), {}, arrays)
    res = ref_run(launch)
    outs = {p: launch.read_buffer(res.memory, p) for p in ("out", "ctr")}
    check_warp_results(outs, arrays, grid, block)


def test_warp_intrinsics_inside_the_network_match_the_emulator_record_by_record():
    """Two blocks of 7 threads: a full warp and a partial one, with data-driven masks and divergence."""
    prog, _ = linked("warp", WARP_KERNEL)
    n, arrays = warp_launch(prog, 11, 2, 7)
    outs, _ = both("warp", (2, 1, 1), (7, 1, 1), {}, arrays, source=WARP_KERNEL)
    check_warp_results(outs, arrays, 2, 7)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(8))
def test_warp_intrinsics_inside_the_network_more_launches(seed):
    grid, block = [(1, 8), (1, 4), (2, 5), (1, 6), (3, 3), (2, 8), (1, 2), (1, 1)][seed]
    prog, _ = linked("warp", WARP_KERNEL)
    n, arrays = warp_launch(prog, 100 + seed, grid, block)
    outs, _ = both("warp", (grid, 1, 1), (block, 1, 1), {}, arrays, source=WARP_KERNEL)
    check_warp_results(outs, arrays, grid, block)


def test_liveness_zeroing_the_shuffle_multiplexer_breaks_shuffles():
    """The lane-crossing datapath is in the layers: without its gates a shuffle returns garbage."""
    from qgcc.link.core import build_core
    from qgcc.link.schedule import place
    prog, cm = linked("warp", WARP_KERNEL)
    cm2 = dataclasses.replace(cm, layers=copy.deepcopy(cm.layers), hosts={})  # the damaged copy
    m = build_core(prog)
    pl = place(m.net, cm2.num_layers)
    for s, nm in m.net.names.items():
        if nm.startswith("shsel"):  # the source-lane selection of every lane
            layer, d = pl.stage[s] // 2, pl.dim[s]
            dn = cm2.layers[layer].tensors["mlp.down_proj.weight"]
            ncol = dn.shape[1]
            dn.entries = {i: x for i, x in dn.entries.items() if i // ncol != d or x < 0 and abs(x) == 1 / 32}
    n, arrays = warp_launch(prog, 11, 1, 8)
    launch = make_launch(prog, prog.kernels[0], (1, 1, 1), (8, 1, 1), {}, {k: a.copy() for k, a in arrays.items()})
    try:
        res = host(cm2).run(launch, max_steps=5000)
    except Exception:  # a fault (stray addresses) is a broken result too
        return
    out = launch.read_buffer(res.memory, "out").astype(np.int64).reshape(64, OUTW)[:n] & 0xFFFFFFFF
    want = model_warp(arrays["v"], arrays["m"], 1, 8)
    assert not np.array_equal(out[:, :5], want[:, :5])


def test_clock_counts_the_warp_instructions_in_between():
    """In straight-line code of a single warp, clock() advances by one per warp instruction."""
    src = r"""
    __global__ void k(int *out, int a) {
        int c0 = clock();
        int x = a * 3 + (a >> 2) - (a ^ 5);
        int c1 = clock();
        out[threadIdx.x] = c1 - c0 + 1000 * x;
    }
    """
    prog = compile_source(src, "clk.cu")
    code = prog.code
    s2r = [pc for pc, ins in enumerate(code) if ins.op is Op.S2R and ins.mod == 14]
    assert len(s2r) == 2
    span = s2r[1] - s2r[0]
    launch = make_launch(prog, prog.kernels[0], (1, 1, 1), (4, 1, 1), {"a": 7}, {"out": np.zeros(4, np.int32)})
    res = ref_run(launch)
    x = 7 * 3 + (7 >> 2) - (7 ^ 5)
    assert list(launch.read_buffer(res.memory, "out")) == [span + 1000 * x] * 4


# ---- integer intrinsics: an independent Python model over many operand triples

INT_KERNEL = r"""
__global__ void ints(const int *a, const int *b, const unsigned *c, int *out, int n) {
    int i = threadIdx.x + blockIdx.x * blockDim.x;
    if (i >= n) return;
    int x = a[i], y = b[i];
    unsigned z = c[i];
    int *o = out + i * 16;
    o[0] = __popc(x); o[1] = __clz(x); o[2] = __ffs(x); o[3] = __brev(x);
    o[4] = __byte_perm(x, y, z); o[5] = __byte_perm(x, y, 0x5140);
    o[6] = __mul24(x, y); o[7] = __umul24(x, y); o[8] = __mulhi(x, y); o[9] = __umulhi(x, y);
    o[10] = __sad(x, y, z); o[11] = __usad(x, y, z);
    o[12] = min(x, y); o[13] = max((unsigned)x, (unsigned)y); o[14] = abs(x); o[15] = min((unsigned)x, z);
}
"""


def s32(v):
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >> 31 else v


def s24(v):
    v &= 0xFFFFFF
    return v - (1 << 24) if v >> 23 else v


def int_model(x, y, z):
    ux, uy, uz = x & 0xFFFFFFFF, y & 0xFFFFFFFF, z & 0xFFFFFFFF
    clz = 32 - ux.bit_length()
    ffs = (ux & -ux).bit_length()
    brev = int(f"{ux:032b}"[::-1], 2)
    bytes8 = ux.to_bytes(4, "little") + uy.to_bytes(4, "little")

    def perm(s):
        return int.from_bytes(bytes(bytes8[(s >> (4 * k)) & 7] for k in range(4)), "little")
    return [bin(ux).count("1"), clz, ffs, brev, perm(uz), perm(0x5140),
            s24(x) * s24(y), (ux & 0xFFFFFF) * (uy & 0xFFFFFF), (s32(x) * s32(y)) >> 32, (ux * uy) >> 32,
            abs(s32(x) - s32(y)) + uz, abs(ux - uy) + uz,
            min(s32(x), s32(y)), max(ux, uy), abs(s32(x)), min(ux, uz)]


def int_operands(n, seed):
    rng = np.random.default_rng(seed)
    special = [0, 1, -1, 2, -2, 0x7FFFFFFF, -0x80000000, 0x800000, 0xFFFFFF, -0x800000, 0x10000, 0xFFFF, 3, 255]
    pick = lambda: np.where(rng.random(n) < 0.25, rng.choice(special, n),  # noqa: E731
                            rng.integers(-(1 << 31), 1 << 31, n)).astype(np.int64)
    a, b, c = pick(), pick(), pick()
    return a, b, c


def run_int_intrinsics(n, seed):
    prog = compile_source(INT_KERNEL, "ints.cu")
    a, b, c = int_operands(n, seed)
    arrays = {"a": a.astype(np.int32), "b": b.astype(np.int32), "c": (c & 0xFFFFFFFF).astype(np.uint32),
              "out": np.zeros(16 * n, np.int32)}
    launch = make_launch(prog, prog.kernels[0], (-(-n // 64), 1, 1), (64, 1, 1), {"n": n}, arrays)
    res = ref_run(launch, max_steps=10_000_000)
    out = launch.read_buffer(res.memory, "out").astype(np.int64).reshape(n, 16) & 0xFFFFFFFF
    for i in range(n):
        want = [v & 0xFFFFFFFF for v in int_model(int(a[i]), int(b[i]), int(c[i]))]
        assert list(out[i]) == want, (i, int(a[i]), int(b[i]), int(c[i]))


def test_integer_intrinsics_match_their_c_definitions_on_the_emulator():
    run_int_intrinsics(128, 1)


@pytest.mark.slow
def test_integer_intrinsics_over_many_operands():
    for seed in range(2, 18):  # 16 launches of 512 operand triples (memory holds 16384 cells)
        run_int_intrinsics(512, seed)


@pytest.mark.slow
def test_integer_intrinsics_inside_the_network():
    a, b, c = int_operands(8, 3)
    arrays = {"a": a.astype(np.int32), "b": b.astype(np.int32), "c": (c & 0xFFFFFFFF).astype(np.uint32),
              "out": np.zeros(16 * 8, np.int32)}
    outs, _ = both("ints", (1, 1, 1), (8, 1, 1), {"n": 8}, arrays, source=INT_KERNEL)
    out = outs["out"].astype(np.int64).reshape(8, 16) & 0xFFFFFFFF
    for i in range(8):
        assert list(out[i]) == [v & 0xFFFFFFFF for v in int_model(int(a[i]), int(b[i]), int(c[i]))]


def test_block_and_system_scopes_are_the_same_atomics():
    """One block runs at a time, so atomicX_block and atomicX_system are atomicX itself."""
    from qgcc.frontend.sema import ATOMICS

    def kernel(sfx):
        calls = " ".join(f"{a}{sfx}(p, 1u, 2u);" if a == "atomicCAS" else f"{a}{sfx}(p + {i}, 3u);"
                         for i, a in enumerate(sorted(ATOMICS)))
        return compile_source(f"__global__ void k(unsigned *p) {{ {calls} }}", "a.cu").code
    base = kernel("")
    assert kernel("_block") == base and kernel("_system") == base


# ---- cooperative groups: lowered onto the intrinsics; checked against CUDA's definitions

CG_KERNEL = r"""
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

__global__ void groups(const int *x, int *out, int n) {
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<4> tile = cg::tiled_partition<4>(block);
    auto pair = cg::tiled_partition(block, 2);
    int r = block.thread_rank();
    int v = 0;
    int gi = blockIdx.x * block.size() + r;
    if (gi < n) v = x[gi];
    block.sync();
    int *o = out + gi * 12;
    o[0] = tile.shfl_down(v, 1);
    o[1] = tile.thread_rank() + 10 * pair.thread_rank() + 100 * tile.size() + 1000 * block.size();
    o[2] = tile.any(v > 5) + 2 * tile.all(v > 0) + 4 * pair.any(v > 5) + 8 * pair.all(v > 0);
    o[3] = tile.ballot(v & 1) + 16 * pair.ballot(v & 1);
    o[4] = cg::reduce(tile, v, cg::plus<int>());
    o[5] = cg::reduce(pair, v, cg::greater<int>());
    o[6] = cg::reduce(tile, (unsigned)v, cg::less<unsigned>());
    o[7] = block.group_index().x + 10 * block.thread_index().x;
    o[8] = pair.shfl(v, 1);
    o[9] = tile.meta_group_rank() + 10 * pair.meta_group_size();
    tile.sync();
    cg::sync(block);
    o[10] = pair.shfl_xor(v, 1);
    o[11] = tile.shfl_up(v, 2);
}
"""


def model_groups(x, n, grid, block):
    """CUDA's definitions for full tiles of 4 and 2 threads (block a multiple of 4)."""
    out = np.zeros((grid * block, 12), np.int64)
    for b in range(grid):
        vals = [int(x[b * block + r]) if b * block + r < n else 0 for r in range(block)]
        for r in range(block):
            t4, t2 = r // 4 * 4, r // 2 * 2
            q4, q2 = vals[t4:t4 + 4], vals[t2:t2 + 2]
            o = out[b * block + r]
            o[0] = vals[r + 1] if r % 4 < 3 else vals[r]
            o[1] = r % 4 + 10 * (r % 2) + 400 + 1000 * block
            o[2] = any(u > 5 for u in q4) + 2 * all(u > 0 for u in q4) + 4 * any(u > 5 for u in q2) \
                + 8 * all(u > 0 for u in q2)
            o[3] = sum((u & 1) << i for i, u in enumerate(q4)) + 16 * sum((u & 1) << i for i, u in enumerate(q2))
            o[4] = sum(q4)
            o[5] = max(q2)
            o[6] = min(u & 0xFFFFFFFF for u in q4)
            o[7] = b + 10 * r
            o[8] = q2[1]
            o[9] = r // 4 + 10 * (-(-block // 2))
            o[10] = q2[1 - r % 2]
            o[11] = vals[r - 2] if r % 4 >= 2 else vals[r]
    return out & 0xFFFFFFFF


@pytest.mark.parametrize("seed", [0, 1])
def test_cooperative_groups_follow_cudas_definitions(seed):
    rng = np.random.default_rng(seed)
    grid, block = [(1, 8), (2, 12)][seed]
    n = grid * block - 3
    x = rng.integers(-9, 10, size=grid * block).astype(np.int32)
    prog = compile_source(CG_KERNEL, "cg.cu")
    launch = make_launch(prog, prog.kernels[0], (grid, 1, 1), (block, 1, 1), {"n": n},
                         {"x": x, "out": np.zeros(12 * grid * block, np.int32)})
    res = ref_run(launch)
    got = launch.read_buffer(res.memory, "out").astype(np.int64).reshape(-1, 12) & 0xFFFFFFFF
    want = model_groups(x, n, grid, block)
    assert np.array_equal(got, want), np.argwhere(got != want)[:5]


@pytest.mark.slow
def test_cooperative_groups_inside_the_network():
    x = np.arange(-3, 5, dtype=np.int32)
    outs, _ = both("groups", (1, 1, 1), (8, 1, 1), {"n": 7}, {"x": x, "out": np.zeros(96, np.int32)},
                   source=CG_KERNEL)
    assert np.array_equal(outs["out"].astype(np.int64).reshape(-1, 12) & 0xFFFFFFFF, model_groups(x, 7, 1, 8))


@pytest.mark.parametrize("body,msg", [
    ("auto t = cg::tiled_partition<64>(cg::this_thread_block());",
     "tiles of 64 threads are not supported: a tile is 1, 2, 4, 8, 16 or 32 threads"),
    ("auto t = cg::tiled_partition<8>(cg::this_thread_block()); unsigned b = t.ballot(1);",
     "'.ballot()' on a tile of 8 threads is not supported (a warp has 4 lanes here; tiles of 1, 2 or 4 "
     "threads have it)"),
    ("const int n = 4; auto t = cg::tiled_partition<n + 0>(cg::this_thread_block());",
     "the size of a tile must be a number (1, 2, 4, 8, 16 or 32), a macro or a template parameter, not 'n + 0'"),
    ("auto c = cg::coalesced_threads(); auto t = cg::tiled_partition<2>(c);",
     "'tiled_partition' of a coalesced group is not supported (tiles are taken from the thread block)"),
    ("auto b = cg::this_thread_block(); auto p = cg::labeled_partition(b, 1);",
     "'cg::labeled_partition' needs a coalesced group or a tile (cg::tiled_partition<N>) declared in this file, "
     "not 'b'"),
    ("auto b = cg::this_thread_block(); int s = b.shfl(1, 0);",
     "'.shfl()' needs a tile (cg::tiled_partition<N>), not a thread block"),
])
def test_cooperative_groups_outside_the_subset_are_named(body, msg):
    from qgcc.diagnostics import CompileError
    src = "#include <cooperative_groups.h>\nnamespace cg = cooperative_groups;\n" \
          f"__global__ void k(int *o) {{ {body} }}\n"
    with pytest.raises(CompileError) as e:
        compile_source(src, "g.cu")
    assert msg in str(e.value)


def test_shuffles_move_bits_of_every_scalar_type_and_votes_test_float_truth():
    """A shuffle moves the 32-bit pattern (float, unsigned, char after promotion); a float
    predicate is true unless it is +0 or -0, as in C."""
    src = r"""
    __global__ void k(const float *f, const unsigned *u, const char *c, float *of, unsigned *ou, int *oc,
                      unsigned *ob) {
        int t = threadIdx.x;
        of[t] = __shfl_xor_sync(0xffffffff, f[t], 1);
        ou[t] = __shfl_up_sync(0xffffffff, u[t], 1);
        oc[t] = __shfl_sync(0xffffffff, c[t], 3);
        ob[t] = __ballot_sync(0xffffffff, f[t]) + 16 * __match_any_sync(0xffffffff, f[t]);
    }
    """
    prog = compile_source(src, "types.cu")
    f = np.array([1.5, -0.0, np.nan, -0.0], np.float32)
    u = np.array([0xFFFFFFFF, 7, 0x80000000, 1], np.uint32)
    c = np.array([-1, 5, -128, 127], np.int8)
    arrays = {"f": f, "u": u, "c": c, "of": np.zeros(4, np.float32), "ou": np.zeros(4, np.uint32),
              "oc": np.zeros(4, np.int32), "ob": np.zeros(4, np.uint32)}
    launch = make_launch(prog, prog.kernels[0], (1, 1, 1), (4, 1, 1), {}, arrays)
    res = ref_run(launch)
    out = {k: launch.read_buffer(res.memory, k) for k in ("of", "ou", "oc", "ob")}
    assert out["of"].view(np.uint32).tolist() == f[[1, 0, 3, 2]].view(np.uint32).tolist()
    assert out["ou"].tolist() == [0xFFFFFFFF, 0xFFFFFFFF, 7, 0x80000000]
    assert out["oc"].tolist() == [127] * 4
    bits = f.view(np.uint32)
    match = [sum(1 << j for j in range(4) if bits[j] == bits[i]) for i in range(4)]
    assert out["ob"].tolist() == [0b0101 + 16 * m for m in match]
