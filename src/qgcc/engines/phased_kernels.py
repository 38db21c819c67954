"""The phased step's Triton kernels (engines/phased.py): a sublayer's products read only the
weight columns whose input differs from a reference input, and a head's whole row work runs in
the program that computed its rows.

Why each kernel gives the unfused step's bits: the row work is the fused step's
(`fused_kernels.row_work`, the same code); the products are computed as "the row's value at the reference input (every input
-1), plus twice the weight in each column where the input is +1" (the C
step's form, neural_c.c).  Every row of these projections is integer-valued with an absolute
sum below 2^24, or has a single term (docs/engines.md, "The exactness argument", (2)): so
the row's value at any input of +-1 is an exact integer, every partial sum of the changes is
an even integer below 2^25 (exact in float32), and adding them in any order to the reference
value gives the stock row sum's bits.  out_proj and down_proj add only their nonzero inputs'
terms, each an exact product, exact in any order (the same argument as cuBLAS's in the
unfused step); a zero input's term is +-0 and leaves every sum as it is; their sum is added
to the +-8 residual once, as index_add does, by every program that needs the residual.  Compiled with
`enable_fp_fusion=False` (no FMA), correctly rounded division and square root.
"""

from __future__ import annotations

import triton
import triton.language as tl

from .fused_kernels import finish, row_work, start  # noqa: F401  (start, finish: the step's ends)


@triton.jit
def _changes(x, b, cols, n_in, WT, stride, off, om, H: tl.constexpr, BC: tl.constexpr):
    """For rows at column offsets `off` (2-D, mask `om`) of WT's rows: the sum over the columns j
    whose input x[b, cols[j]] is > 0 (the reference is -1) of 2 * WT[j, off], the changes from
    the rows' values at the reference input."""
    acc = tl.zeros(off.shape, tl.float32)
    for j0 in range(0, n_in, BC):
        j = j0 + tl.arange(0, BC)
        m = j < n_in
        c = tl.load(cols + j, mask=m, other=0)
        up = (tl.load(x + b * H + c, mask=m, other=-8.0) > 0.0) & m
        w = tl.load(WT + j[:, None, None].to(tl.int64) * stride + off[None, :, :],
                    mask=up[:, None, None] & om[None, :, :], other=0.0)
        acc += tl.sum(w * 2.0, axis=0)
    return acc


@triton.jit
def _active(v, b, WT, n_out, n_in, NOUT: tl.constexpr, BE: tl.constexpr):
    """sum over the nonzero v[b, i] of WT[i, o] * v[b, i], for o < n_out (out_proj or
    down_proj over its active inputs)."""
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
    return acc


@triton.jit
def _take(xin, xp, b, v, WT, cols, n_out, n_in, H: tl.constexpr, NOUT: tl.constexpr, BE: tl.constexpr,
          NOT_PM8: tl.constexpr):
    """This program's copy xp of slot b's residual with the previous sublayer's out_proj or
    down_proj added (its active inputs v, weights WT by input, outputs at cols: index_add's
    sum, exact in any order), instead of a kernel of its own; returns NOT_PM8 where a changed
    entry is not +-8.  Every program of a kernel computes the same copy; the one of program 0
    is the next kernel's input."""
    i = tl.arange(0, H)
    tl.store(xp + i, tl.load(xin + b * H + i))
    tl.debug_barrier()  # the copy, then the changed entries (other threads may hold them)
    o = tl.arange(0, NOUT)
    om = o < n_out
    c = tl.load(cols + o, mask=om, other=0)
    new = tl.load(xin + b * H + c, mask=om, other=8.0) + _active(v, b, WT, n_out, n_in, NOUT, BE)
    tl.store(xp + c, new, mask=om)
    tl.debug_barrier()  # before the program reads its copy
    return tl.max(((tl.abs(new) != 8.0) & om).to(tl.int32), axis=0) * NOT_PM8


@triton.jit
def mix_head(xin, xp, pv, pWT, pcols, pn_out, pn_in, cols, n_in, WT, pre0, S, rows0, running, gnorm, y, bad, nh,
             LEVEL, LEVEL_BITS, EPS, QSCALE, B,
             H: tl.constexpr, HD: tl.constexpr, HB: tl.constexpr, BC: tl.constexpr, NOUT: tl.constexpr,
             BE: tl.constexpr, NOT_ONE_HOT: tl.constexpr, INEXACT_ACT: tl.constexpr, INEXACT_NORM: tl.constexpr,
             NOT_RAIL: tl.constexpr, NOT_HELD: tl.constexpr, NOT_PM8: tl.constexpr):
    """HB heads of one slot (program (slot, block of heads)): their q, k, v, z rows and b over
    the flipped columns, then the mixer's row work (fused_kernels.row_work, the fused step's):
    the one-hot key's row updated by the delta rule and written back as rail bits, the query's
    row read, the gated RMSNorm and the z gate into y; the premises into bad.

    WT is (n_in, nh * (4 * HD + 1)): row j holds column j of every head's q | k | v | z rows
    and then every head's b row; pre0 the rows' values at the reference input, in that order.
    The residual is xin's row plus the previous MLP's down_proj (pv, pWT, pcols: `_take`), in
    this program's row of xp ((programs, B, H))."""
    b = tl.program_id(0).to(tl.int64)
    x = xp + (tl.program_id(1) * B + b) * H
    took = _take(xin, x, b, pv, pWT, pcols, pn_out, pn_in, H, NOUT, BE, NOT_PM8)
    hh = tl.program_id(1) * HB + tl.arange(0, HB)
    hm = hh < nh
    e = tl.arange(0, HD)[None, :]
    m2 = hm[:, None] & (e < HD)
    stride = nh * (4 * HD + 1)
    r0 = hh[:, None].to(tl.int64) * 4 * HD + e
    q = tl.load(pre0 + r0, mask=m2, other=0.0) + _changes(x, 0, cols, n_in, WT, stride, r0, m2, H, BC)
    k = tl.load(pre0 + r0 + HD, mask=m2, other=0.0) + _changes(x, 0, cols, n_in, WT, stride, r0 + HD, m2, H, BC)
    v = tl.load(pre0 + r0 + 2 * HD, mask=m2, other=0.0) + \
        _changes(x, 0, cols, n_in, WT, stride, r0 + 2 * HD, m2, H, BC)
    z = tl.load(pre0 + r0 + 3 * HD, mask=m2, other=0.0) + \
        _changes(x, 0, cols, n_in, WT, stride, r0 + 3 * HD, m2, H, BC)
    rb = nh * 4 * HD + hh[:, None].to(tl.int64)  # (HB, 1): the b rows
    bp = tl.sum(tl.load(pre0 + rb, mask=hm[:, None], other=0.0) +
                _changes(x, 0, cols, n_in, WT, stride, rb, hm[:, None], H, BC), axis=1)  # one term: exact
    # Each head's first row in the layer's pool (rows, 16); 0: block 0, a head the slot does not hold.
    srow = tl.load(rows0 + b * nh + hh, mask=hm, other=0).to(tl.int64)
    run = tl.load(running + b + hh * 0) != 0  # a block: the interpreter's scalar compare is no mask
    out, flags = row_work(q, k, v, z, bp, hm, srow, run, S, gnorm, LEVEL, LEVEL_BITS, EPS, QSCALE, HB, HD,
                          NOT_ONE_HOT, INEXACT_ACT, INEXACT_NORM, NOT_RAIL, NOT_HELD)
    tl.store(y + b * nh * HD + hh[:, None] * HD + e, out, mask=m2)
    tl.atomic_or(bad + b, flags | took)


@triton.jit
def add_active(x, v, WT, cols, n_out, n_in, bad, H: tl.constexpr, NOUT: tl.constexpr, BE: tl.constexpr,
               NOT_PM8: tl.constexpr):
    """x[b, cols[o]] += the step's last down_proj over its active inputs (`_active`), and the
    residual check on the changed dims.  One program a slot."""
    b = tl.program_id(0).to(tl.int64)
    o = tl.arange(0, NOUT)
    om = o < n_out
    c = tl.load(cols + o, mask=om, other=0)
    new = tl.load(x + b * H + c, mask=om, other=8.0) + _active(v, b, WT, n_out, n_in, NOUT, BE)
    tl.store(x + b * H + c, new, mask=om)
    off = tl.max(((tl.abs(new) != 8.0) & om).to(tl.int32), axis=0)
    tl.store(bad + b, tl.load(bad + b) | (off * NOT_PM8))


@triton.jit
def mlp_units(xin, xp, pv, pWT, pcols, pn_out, pn_in, cols, n_in, WT, pre0, act, bad, U, B,
              H: tl.constexpr, BU: tl.constexpr, BC: tl.constexpr, NOUT: tl.constexpr, BE: tl.constexpr,
              INEXACT_ACT: tl.constexpr, NOT_PM8: tl.constexpr):
    """A block of MLP units of one slot (program (slot, block)): gate and up over the flipped
    columns, act = silu(gate) * up at exact arguments, and the gate's exact-range check.
    WT is (n_in, 2U): gate rows then up rows; pre0 their values at the reference input.
    The residual is xin's row plus the previous sublayer's out_proj or down_proj (pv, pWT,
    pcols: `_take`), in this program's row of xp ((programs, B, H))."""
    b = tl.program_id(0).to(tl.int64)
    x = xp + (tl.program_id(1) * B + b) * H
    took = _take(xin, x, b, pv, pWT, pcols, pn_out, pn_in, H, NOUT, BE, NOT_PM8)
    u = tl.program_id(1) * BU + tl.arange(0, BU)
    um = u < U
    g = tl.load(pre0 + u, mask=um, other=0.0) + \
        tl.sum(_changes(x, 0, cols, n_in, WT, 2 * U, u[None, :], um[None, :], H, BC), axis=0)
    up = tl.load(pre0 + U + u, mask=um, other=0.0) + \
        tl.sum(_changes(x, 0, cols, n_in, WT, 2 * U, U + u[None, :], um[None, :], H, BC), axis=0)
    tl.store(act + b * U + u, tl.where(g >= 17.0, g, g * 0.0) * up, mask=um)
    off = tl.max(((((g > -89.0) & (g < 0.0)) | ((g > 0.0) & (g < 17.0))) & um).to(tl.int32), axis=0)
    tl.atomic_or(bad + b, (off * INEXACT_ACT) | took)
