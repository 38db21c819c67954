"""The phased step's Triton kernels (engines/phased.py): a sublayer's products read only the
weight columns whose input differs from a reference input, and a head's whole row work runs in
the program that computed its rows.

Why each kernel gives the unfused step's bits: the row work is the fused step's `mix_rows`
(engines/fused_kernels.py) for one head, with the same operations in the same order per
element; the products are computed as "the row's value at the reference input (every input
-1), plus twice the weight times the input in each column where the input is +1" (the C
step's form, neural_c.c).  Every row of these projections is integer-valued with an absolute
sum below 2^24, or has a single term (docs/engines.md, "The exactness argument", (2)): so
the row's value at any input of +-1 is an exact integer, every partial sum of the changes is
an even integer below 2^25 (exact in float32), and adding them in any order to the reference
value gives the stock row sum's bits.  out_proj and down_proj add only their nonzero inputs'
terms, each an exact product, exact in any order (the same argument as cuBLAS's in the
unfused step); a zero input's term is +-0 and leaves every sum as it is.  Compiled with
`enable_fp_fusion=False` (no FMA), correctly rounded division and square root.
"""

from __future__ import annotations

import triton
import triton.language as tl

from .fused_kernels import finish, start  # noqa: F401  (the step's first and last kernels)


@triton.jit
def _changes(x, b, cols, n_in, WT, stride, base, r, rm, H: tl.constexpr, BC: tl.constexpr):
    """Sum over the columns whose input x[b, cols[j]] is > 0 (the reference is -1) of
    2 * W[j, base + r]: the changes from the row values at the reference input."""
    acc = tl.zeros(r.shape, tl.float32)
    for j0 in range(0, n_in, BC):
        j = j0 + tl.arange(0, BC)
        m = j < n_in
        c = tl.load(cols + j, mask=m, other=0)
        up = (tl.load(x + b * H + c, mask=m, other=-8.0) > 0.0) & m
        w = tl.load(WT + j[:, None].to(tl.int64) * stride + base + r[None, :], mask=up[:, None] & rm[None, :],
                    other=0.0)
        acc += tl.sum(w * 2.0, axis=0)
    return acc


@triton.jit
def mix_head(x, cols, n_in, WT, pre0, S, rowbase, running, gnorm, y, bad, nh, LEVEL, LEVEL_BITS, EPS, QSCALE,
             H: tl.constexpr, HD: tl.constexpr, BC: tl.constexpr,
             NOT_ONE_HOT: tl.constexpr, INEXACT_ACT: tl.constexpr, INEXACT_NORM: tl.constexpr,
             NOT_RAIL: tl.constexpr):
    """One head of one slot (program (slot, head)): its q, k, v, z rows and b over the flipped
    columns, then the mixer's row work (fused_kernels.mix_rows for this head): the one-hot
    key's row updated by the delta rule and written back as rail bits, the query's row read,
    the gated RMSNorm and the z gate into y; the premises into bad.

    WT is (n_in, nh * (4 * HD + 1)): row j holds column j of every head's q | k | v | z rows
    and then every head's b row; pre0 the rows' values at the reference input, in that order."""
    b = tl.program_id(0).to(tl.int64)
    hd = tl.program_id(1).to(tl.int64)
    e = tl.arange(0, HD)
    em = e < HD
    stride = nh * (4 * HD + 1)
    row0 = hd * 4 * HD
    q = tl.load(pre0 + row0 + e) + _changes(x, b, cols, n_in, WT, stride, row0, e, em, H, BC)
    k = tl.load(pre0 + row0 + HD + e) + _changes(x, b, cols, n_in, WT, stride, row0 + HD, e, em, H, BC)
    v = tl.load(pre0 + row0 + 2 * HD + e) + _changes(x, b, cols, n_in, WT, stride, row0 + 2 * HD, e, em, H, BC)
    z = tl.load(pre0 + row0 + 3 * HD + e) + _changes(x, b, cols, n_in, WT, stride, row0 + 3 * HD, e, em, H, BC)
    one = tl.arange(0, 1)
    bp = tl.load(pre0 + nh * 4 * HD + hd + one) + \
        _changes(x, b, cols, n_in, WT, stride, nh * 4 * HD + hd, one, one < 1, H, BC)
    beta = tl.where(bp >= 17.0, 1.0, tl.where(bp <= -89.0, 0.0, 0.5))
    # One-hot keys and queries: exactly one entry >= 17, a power of two (then it is the maximum).
    qcount = tl.sum((q >= 17.0).to(tl.int32), axis=0, keep_dims=True)
    kcount = tl.sum((k >= 17.0).to(tl.int32), axis=0, keep_dims=True)
    qa, qh = tl.max(q, axis=0, return_indices=True, keep_dims=True)
    ka, kh = tl.max(k, axis=0, return_indices=True, keep_dims=True)
    qone = qcount == 1
    kone = kcount == 1
    qbits, kbits = qa.to(tl.int32, bitcast=True), ka.to(tl.int32, bitcast=True)
    qpow2 = ((qbits & 0x7FFFFF) == 0) & (((qbits >> 23) & 0xFF) != 0xFF)
    kpow2 = ((kbits & 0x7FFFFF) == 0) & (((kbits >> 23) & 0xFF) != 0xFF)
    one_bad = (qcount > 1) | (qone & ~qpow2) | (kcount > 1) | (kone & ~kpow2)
    ones = tl.full([1], 1.0, tl.float32)
    qv = qa * tl.div_rn(ones, tl.sqrt_rn(qa * qa + EPS))
    kv = ka * tl.div_rn(ones, tl.sqrt_rn(ka * ka + EPS))
    # The key's row: delta = (v - row * k) * beta; row + k * delta, where a key writes.
    srow = tl.load(rowbase + b * nh + hd + one)  # the head's first row in the state viewed as (rows, 16)
    kbyte = tl.load(S + (srow + kh) * 16 + e // 8).to(tl.int32)
    row = tl.where(((kbyte >> (e % 8)) & 1) != 0, LEVEL, 0.0)
    delta = (tl.where(v >= 17.0, v, v * 0.0) - row * kv) * beta
    write = kone & (tl.load(running + b + one) != 0)
    new = tl.where(write, row + kv * delta, row)
    raw = new.to(tl.int32, bitcast=True)
    on = raw == LEVEL_BITS
    packed = tl.sum(tl.reshape(on.to(tl.int32) << (e % 8), (HD // 8, 8)), axis=1)
    j = tl.arange(0, HD // 8)
    tl.store(S + (srow + kh) * 16 + j, packed.to(tl.uint8), mask=write & (j < HD // 8))
    # The query's row after the write: the row just written when it is the key's.
    qbyte = tl.load(S + (srow + qh) * 16 + e // 8).to(tl.int32)
    qrow = tl.where(qh == kh, on.to(tl.int32), (qbyte >> (e % 8)) & 1)
    o = tl.where(qrow != 0, LEVEL, 0.0) * tl.div_rn(qv, tl.full([1], QSCALE, tl.float32))
    ss = tl.sum(o * o, axis=0, keep_dims=True)
    var = tl.div_rn(ss, tl.full([1], 128.0, tl.float32)) + EPS
    vbits = var.to(tl.int32, bitcast=True)
    vexp = (vbits >> 23) & 0xFF
    pow4 = (var > 0.0) & ((vbits & 0x7FFFFF) == 0) & (vexp != 0xFF) & (vexp != 0) & ((vexp & 1) == 1)
    rd = qone & (ss != 0.0)
    # Arguments strictly inside (-89, 0) or (0, 17), where SiLU/sigmoid are not exact: q, k and
    # b everywhere, v where a key writes, z where a query reads.
    qx = ((q > -89.0) & (q < 0.0)) | ((q > 0.0) & (q < 17.0))
    kx = ((k > -89.0) & (k < 0.0)) | ((k > 0.0) & (k < 17.0))
    vx = ((v > -89.0) & (v < 0.0)) | ((v > 0.0) & (v < 17.0))
    zx = ((z > -89.0) & (z < 0.0)) | ((z > 0.0) & (z < 17.0))
    bx = ((bp > -89.0) & (bp < 0.0)) | ((bp > 0.0) & (bp < 17.0))
    act = qx | kx | (vx & kone) | (zx & rd)
    acount = tl.sum(act.to(tl.int32), axis=0, keep_dims=True)
    rcount = tl.sum(((raw != 0) & ~on & write).to(tl.int32), axis=0, keep_dims=True)
    flags = tl.where(acount != 0, INEXACT_ACT, 0) | tl.where(rcount != 0, NOT_RAIL, 0) | \
        tl.where(one_bad, NOT_ONE_HOT, 0) | tl.where(rd & ~pow4, INEXACT_NORM, 0) | tl.where(bx, INEXACT_ACT, 0)
    gn = tl.load(gnorm + e)
    out = ((o * tl.div_rn(ones, tl.sqrt_rn(var))) * gn) * tl.where(z >= 17.0, z, z * 0.0)
    out = tl.where(rd, out, 0.0)
    tl.store(y + b * nh * HD + hd * HD + e, out)
    tl.atomic_or(bad + b + one, flags)


@triton.jit
def add_active(x, v, WT, cols, n_out, n_in, bad, H: tl.constexpr, NOUT: tl.constexpr, BE: tl.constexpr,
               NOT_PM8: tl.constexpr):
    """x[b, cols[o]] += sum over the nonzero v[b, i] of WT[i, o] * v[b, i] (out_proj or
    down_proj over its active inputs, then the residual add, index_add's), and the residual
    check on the changed dims.  One program a slot."""
    b = tl.program_id(0).to(tl.int64)
    o = tl.arange(0, NOUT)
    om = o < n_out
    acc = tl.zeros([NOUT], tl.float32)
    for i0 in range(0, n_in, BE):
        i = i0 + tl.arange(0, BE)
        im = i < n_in
        val = tl.load(v + b * n_in + i, mask=im, other=0.0)
        nz = (val != 0.0) & im
        w = tl.load(WT + i[:, None].to(tl.int64) * n_out + o[None, :], mask=nz[:, None] & om[None, :], other=0.0)
        acc += tl.sum(w * val[:, None], axis=0)
    c = tl.load(cols + o, mask=om, other=0)
    new = tl.load(x + b * H + c, mask=om, other=8.0) + acc
    tl.store(x + b * H + c, new, mask=om)
    off = tl.max(((tl.abs(new) != 8.0) & om).to(tl.int32), axis=0)
    tl.store(bad + b, tl.load(bad + b) | (off * NOT_PM8))


@triton.jit
def mlp_units(x, cols, n_in, WT, pre0, act, bad, U, H: tl.constexpr, BU: tl.constexpr, BC: tl.constexpr,
              INEXACT_ACT: tl.constexpr):
    """A block of MLP units of one slot (program (slot, block)): gate and up over the flipped
    columns, act = silu(gate) * up at exact arguments, and the gate's exact-range check.
    WT is (n_in, 2U): gate rows then up rows; pre0 their values at the reference input."""
    b = tl.program_id(0).to(tl.int64)
    u = tl.program_id(1) * BU + tl.arange(0, BU)
    um = u < U
    g = tl.load(pre0 + u, mask=um, other=0.0) + _changes(x, b, cols, n_in, WT, 2 * U, 0, u, um, H, BC)
    up = tl.load(pre0 + U + u, mask=um, other=0.0) + _changes(x, b, cols, n_in, WT, 2 * U, U, u, um, H, BC)
    tl.store(act + b * U + u, tl.where(g >= 17.0, g, g * 0.0) * up, mask=um)
    off = tl.max(((((g > -89.0) & (g < 0.0)) | ((g > 0.0) & (g < 17.0))) & um).to(tl.int32), axis=0)
    tl.atomic_or(bad + b, off * INEXACT_ACT)
