"""The fused step's Triton kernels: the work of a sublayer between two products as one kernel.

Why a module of its own: whether Triton compiles these for the GPU or runs them in its
interpreter (numpy, on the CPU) is decided when triton is first imported, so this module is
imported only through `engines.fused.kernels`, which chooses the mode (docs/engines.md,
"The fused step").

Why each kernel gives the unfused step's bits (docs/engines.md, "The exactness argument"):
every operation is one the unfused step (engines/neural_batch.py) performs, on the same
operands in the same order per element, and every one of them is an IEEE operation with
one rounding: divisions and square roots are `div_rn` / `sqrt_rn` (correctly rounded, as
torch's), and the launcher compiles with `enable_fp_fusion=False`, so no multiply and add
are contracted into an FMA.  The only reductions are sums of integers (flag bits, rail
bits) and the read's sum of squares, whose terms are all equal (a row holds +0 and one
rail level; the level is checked at load so that 128 of its squares add exactly in any
order), so Triton's tree order gives torch's sum.  The maximum and the count of entries
>= 17 do not depend on order; the index of the maximum is used only where the key or
query is one-hot (one entry >= 17, so the maximum is unique), and otherwise the row it
names is written back unchanged or its product is discarded, as in the unfused step.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def start(h, x, bad, H: tl.constexpr, NOT_PM8: tl.constexpr):
    """x = h (the step's working copy); bad = NOT_PM8 where the residual is not exactly +-8."""
    b = tl.program_id(0).to(tl.int64)
    i = tl.arange(0, H)
    v = tl.load(h + b * H + i)
    tl.store(x + b * H + i, v)
    off = tl.max((tl.abs(v) != 8.0).to(tl.int32), axis=0)
    tl.store(bad + b, off * NOT_PM8)


@triton.jit
def gather(x, cols, out, outb, N, H: tl.constexpr, BLOCK: tl.constexpr, BF16: tl.constexpr):
    """out[b, j] = x[b, cols[j]] / 8 (the RMSNorm of a +-8 residual with weight 0, exactly
    +-1); with BF16 also the same values in bfloat16 (exact: +-1) for the products."""
    b = tl.program_id(0).to(tl.int64)
    j = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    m = j < N
    c = tl.load(cols + j, mask=m, other=0)
    v = tl.load(x + b * H + c, mask=m, other=0.0) * 0.125
    tl.store(out + b * N + j, v, mask=m)
    if BF16:
        tl.store(outb + b * N + j, v.to(tl.bfloat16), mask=m)


@triton.jit
def residual(x, cols, y, bad, N, H: tl.constexpr, BLOCK: tl.constexpr, NOT_PM8: tl.constexpr):
    """x[b, cols[j]] += y[b, j] (index_add, cols distinct), and the residual check on them."""
    b = tl.program_id(0).to(tl.int64)
    j = tl.arange(0, BLOCK)
    m = j < N
    c = tl.load(cols + j, mask=m, other=0)
    v = tl.load(x + b * H + c, mask=m, other=8.0) + tl.load(y + b * N + j, mask=m, other=0.0)
    tl.store(x + b * H + c, v, mask=m)
    off = tl.max(((tl.abs(v) != 8.0) & m).to(tl.int32), axis=0)
    tl.store(bad + b, tl.load(bad + b) | (off * NOT_PM8))


@triton.jit
def mlp_act(pre, act, bad, U, BLOCK: tl.constexpr, INEXACT_ACT: tl.constexpr):
    """act = silu(gate) * up over pre = gate | up, and the gate's exact-range check."""
    b = tl.program_id(0).to(tl.int64)
    j = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    m = j < U
    g = tl.load(pre + b * 2 * U + j, mask=m, other=0.0)
    u = tl.load(pre + b * 2 * U + U + j, mask=m, other=0.0)
    tl.store(act + b * U + j, tl.where(g >= 17.0, g, g * 0.0) * u, mask=m)
    off = tl.max(((((g > -89.0) & (g < 0.0)) | ((g > 0.0) & (g < 17.0))) & m).to(tl.int32), axis=0)
    tl.atomic_or(bad + b, off * INEXACT_ACT)


@triton.jit
def mix_rows(pre, S, rows0, running, gnorm, y, bad, nh, P, LEVEL, LEVEL_BITS, EPS, QSCALE,
             NHP: tl.constexpr, HD: tl.constexpr,
             NOT_ONE_HOT: tl.constexpr, INEXACT_ACT: tl.constexpr, INEXACT_NORM: tl.constexpr,
             NOT_RAIL: tl.constexpr, NOT_HELD: tl.constexpr):
    """The mixer of one slot between in_proj and out_proj (neural_batch._mix_rows): the one-hot
    key's row read, updated by the delta rule and written back as rail bits, the query's row
    read, the gated RMSNorm and the z gate into y; the premises into bad.  S is the layer's
    pool of head blocks and rows0 (B, nh) each head's first row there; 0 is block 0 (+0),
    never written: a write to a head the slot does not hold sets NOT_HELD instead."""
    b = tl.program_id(0).to(tl.int64)
    hh = tl.arange(0, NHP)
    e = tl.arange(0, HD)[None, :]
    hm = hh < nh
    m2 = hm[:, None] & (e < HD)
    span = nh * HD
    base = pre + b * P + hh[:, None] * HD + e
    q = tl.load(base, mask=m2, other=0.0)
    k = tl.load(base + span, mask=m2, other=0.0)
    v = tl.load(base + 2 * span, mask=m2, other=0.0)
    z = tl.load(base + 3 * span, mask=m2, other=0.0)
    bp = tl.load(pre + b * P + 4 * span + hh, mask=hm, other=0.0)
    # The head's first row in the pool viewed as (rows, 16); 0: block 0 (a head not held).
    srow = tl.load(rows0 + b * nh + hh, mask=hm, other=0).to(tl.int64)
    run = tl.load(running + b + hh * 0) != 0  # a block: the interpreter's scalar compare is no mask
    out, flags = row_work(q, k, v, z, bp, hm, srow, run, S, gnorm, LEVEL, LEVEL_BITS, EPS, QSCALE, NHP, HD,
                          NOT_ONE_HOT, INEXACT_ACT, INEXACT_NORM, NOT_RAIL, NOT_HELD)
    tl.store(y + b * span + hh[:, None] * HD + e, out, mask=m2)
    tl.store(bad + b, tl.load(bad + b) | flags)


@triton.jit
def row_work(q, k, v, z, bp, hm, srow, run, S, gnorm, LEVEL, LEVEL_BITS, EPS, QSCALE,
             NHP: tl.constexpr, HD: tl.constexpr, NOT_ONE_HOT: tl.constexpr, INEXACT_ACT: tl.constexpr,
             INEXACT_NORM: tl.constexpr, NOT_RAIL: tl.constexpr, NOT_HELD: tl.constexpr):
    """A mixer's work between its in_proj rows and out_proj for NHP heads (q, k, v, z (NHP, HD),
    b (NHP,); heads where `hm` is false are padding): the one-hot key's row (at row `srow` + its
    index of the layer's pool viewed as (rows, 16); srow 0: block 0, a head not held, where a
    write sets NOT_HELD instead) read, updated by the delta rule and written back as
    rail bits where `run`, the query's row read, the gated RMSNorm and the z gate.  Returns the
    head outputs (NHP, HD) and the premise flags (the OR over the heads).  Shared by the fused
    step (mix_rows) and the phased one (phased_kernels.mix_head)."""
    e = tl.arange(0, HD)[None, :]
    m2 = hm[:, None] & (e < HD)
    beta = tl.where(bp >= 17.0, 1.0, tl.where(bp <= -89.0, 0.0, 0.5))
    # One-hot keys and queries (neural_batch._one_hot): exactly one entry >= 17, a power of two.
    # Both counts in one sum (q's in the low byte: at most 128 each), both maxima and their
    # first indices in one reduction.
    counts = tl.sum((q >= 17.0).to(tl.int32) + (k >= 17.0).to(tl.int32) * 256, axis=1)
    qcount = counts & 255
    kcount = counts >> 8
    mx, at = tl.max(tl.join(q, k), axis=1, return_indices=True)
    qa, ka = tl.split(mx)
    qh, kh = tl.split(at)
    qone = qcount == 1
    kone = kcount == 1
    # A power of two, as frexp's mantissa 0.5: a zero mantissa field (the entry is >= 17: normal).
    qbits, kbits = qa.to(tl.int32, bitcast=True), ka.to(tl.int32, bitcast=True)
    qpow2 = ((qbits & 0x7FFFFF) == 0) & (((qbits >> 23) & 0xFF) != 0xFF)
    kpow2 = ((kbits & 0x7FFFFF) == 0) & (((kbits >> 23) & 0xFF) != 0xFF)
    one_bad = (qcount > 1) | (qone & ~qpow2) | (kcount > 1) | (kone & ~kpow2)
    ones = tl.full([NHP], 1.0, tl.float32)
    qv = qa * tl.div_rn(ones, tl.sqrt_rn(qa * qa + EPS))
    kv = ka * tl.div_rn(ones, tl.sqrt_rn(ka * ka + EPS))
    # The key's row: delta = (v - row * k) * beta; row + k * delta, where a key writes.
    held = srow != 0  # 0: block 0, a head the slot does not hold (+0, never written)
    kbyte = tl.load(S + (srow + kh)[:, None] * 16 + e // 8, mask=m2, other=0).to(tl.int32)
    row = tl.where(((kbyte >> (e % 8)) & 1) != 0, LEVEL, 0.0)
    delta = (tl.where(v >= 17.0, v, v * 0.0) - row * kv[:, None]) * beta[:, None]
    write = kone & run & hm
    new = tl.where(write[:, None], row + kv[:, None] * delta, row)
    raw = new.to(tl.int32, bitcast=True)
    on = raw == LEVEL_BITS
    packed = tl.sum(tl.reshape(on.to(tl.int32) << (e % 8), (NHP, HD // 8, 8)), axis=2)
    j = tl.arange(0, HD // 8)[None, :]
    tl.store(S + (srow + kh)[:, None] * 16 + j, packed.to(tl.uint8), mask=(write & held)[:, None] & (j < HD // 8))
    # The query's row after the write: the row just written when it is the key's (block 0 stays +0).
    qbyte = tl.load(S + (srow + qh)[:, None] * 16 + e // 8, mask=m2, other=0).to(tl.int32)
    qrow = tl.where(((qh == kh) & held)[:, None], on.to(tl.int32), (qbyte >> (e % 8)) & 1)
    o = tl.where(qrow != 0, LEVEL, 0.0) * tl.div_rn(qv, tl.full([NHP], QSCALE, tl.float32))[:, None]
    ss = tl.sum(o * o, axis=1)
    var = tl.div_rn(ss, tl.full([NHP], 128.0, tl.float32)) + EPS
    vbits = var.to(tl.int32, bitcast=True)
    vexp = (vbits >> 23) & 0xFF
    pow4 = (var > 0.0) & ((vbits & 0x7FFFFF) == 0) & (vexp != 0xFF) & (vexp != 0) & ((vexp & 1) == 1)
    rd = qone & (ss != 0.0) & hm
    # Arguments strictly inside (-89, 0) or (0, 17), where SiLU/sigmoid are not exact: q, k and
    # b everywhere, v where a key writes, z where a query reads.
    qx = ((q > -89.0) & (q < 0.0)) | ((q > 0.0) & (q < 17.0))
    kx = ((k > -89.0) & (k < 0.0)) | ((k > 0.0) & (k < 17.0))
    vx = ((v > -89.0) & (v < 0.0)) | ((v > 0.0) & (v < 17.0))
    zx = ((z > -89.0) & (z < 0.0)) | ((z > 0.0) & (z < 17.0))
    bx = ((bp > -89.0) & (bp < 0.0)) | ((bp > 0.0) & (bp < 17.0))
    act = qx | kx | (vx & kone[:, None]) | (zx & rd[:, None])
    # Per head: the elements out of range and those a rail write cannot hold, counted in one sum
    # (one byte each: at most 128), then the head's flag word.
    ecount = tl.sum((act & m2).to(tl.int32) + ((raw != 0) & ~on & write[:, None]).to(tl.int32) * 256, axis=1)
    hflags = tl.where((ecount & 255) != 0, INEXACT_ACT, 0) | tl.where((ecount >> 8) != 0, NOT_RAIL, 0) | \
        tl.where(one_bad, NOT_ONE_HOT, 0) | tl.where(rd & ~pow4, INEXACT_NORM, 0) | tl.where(bx, INEXACT_ACT, 0) | \
        tl.where(write & ~held, NOT_HELD, 0)
    hflags = tl.where(hm, hflags, 0)
    # Their OR over the heads: each of the 6 flag bits counted in a 5-bit field (at most 16 heads).
    fields = hflags * 0
    for i in tl.static_range(6):
        fields += ((hflags >> i) & 1) << (5 * i)
    tot = tl.sum(fields, axis=0)
    flags = tot * 0
    for i in tl.static_range(6):
        flags |= (((tot >> (5 * i)) & 31) != 0).to(tl.int32) << i
    gn = tl.load(gnorm + e)
    out = ((o * tl.div_rn(ones, tl.sqrt_rn(var))[:, None]) * gn) * tl.where(z >= 17.0, z, z * 0.0)
    return tl.where(rd[:, None], out, 0.0), flags


@triton.jit
def finish(h, x, bad, flags, running, fault, NF, halt, H: tl.constexpr, FB: tl.constexpr):
    """End of a step (neural_batch._step): a running slot takes x and its premise flags; a slot
    whose phase.halt or a fault bit is set stops running."""
    b = tl.program_id(0).to(tl.int64)
    i = tl.arange(0, H)
    r = tl.load(running + b) != 0
    f = tl.arange(0, FB)
    fm = f < NF
    fd = tl.load(fault + f, mask=fm, other=0)
    # Everything read before h is written (the threads of a program do not see each other's stores).
    new = tl.where(r, tl.load(x + b * H + i), tl.load(h + b * H + i))
    hv = tl.where(r, tl.load(x + b * H + halt), tl.load(h + b * H + halt))
    fv = tl.where(r, tl.load(x + b * H + fd, mask=fm, other=0.0), tl.load(h + b * H + fd, mask=fm, other=0.0))
    tl.store(h + b * H + i, new)
    tl.store(flags + b, tl.load(flags + b) | tl.where(r, tl.load(bad + b), 0))
    faulted = tl.max(((fv > 0.0) & fm).to(tl.int32), axis=0)
    done = (hv > 0.0) | (faulted != 0)
    tl.store(running + b, (r & ~done).to(tl.uint8))
