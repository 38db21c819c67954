"""Code for the warp, integer and clock intrinsics and for atomicInc/atomicDec.

Warp intrinsics are one instruction each: SHFL and VOTE (qgcc.isa), whose lane-crossing
datapath is in the network (qgcc.link.blocks.xlane).  `clock()` is one S2R of %clock.
The integer intrinsics are short branch-free sequences of ALU instructions, inlined
at each call (their costs, in warp instructions, are in docs/subset.md); atomicInc and
atomicDec are compare-and-swap loops, as float atomicAdd is.
"""

from __future__ import annotations

from ..isa import MASK32, Op, ShflMode, SReg, VoteMode
from ..spec import SPEC
from . import ast as A
from . import wide
from .bitops import brev, byte_perm, clz, ffs, popc, umulhi
from .builtin_names import INT_FUNCS
from .types import INT, UINT, is_float, is_pair
from .values import C, KernelGen, MemLV, Pair, VarLV, is_c

_SHFL = {"__shfl_sync": ShflMode.IDX, "__shfl_up_sync": ShflMode.UP, "__shfl_down_sync": ShflMode.DOWN,
         "__shfl_xor_sync": ShflMode.XOR}
_VOTE = {"__ballot_sync": VoteMode.BALLOT, "__any_sync": VoteMode.ANY, "__all_sync": VoteMode.ALL,
         "__match_any_sync": VoteMode.MATCH}
LANE_MASK = (1 << SPEC.warp_size) - 1


def _operand(g: "KernelGen", v):
    """(register, immediate, use_imm) for a second operand that may be a constant."""
    if is_c(v):
        return -1, v.value, True
    return v, 0, False


def warp(g: "KernelGen", e: A.Call, name: str):
    args = e.args
    if name in ("clock", "clock64"):
        t = g.new()
        g.emit(Op.S2R, t, mod=SReg.CLOCK)
        if name == "clock64":  # the same count, zero-extended (2^32 warp instructions never run)
            return Pair(t, C(0))
        return t
    if name.startswith("__reduce_"):
        return reduce_sync(g, e, name[9:].split("_")[0])
    if name == "__match_all_sync":
        return match_all(g, e)
    if name == "__syncwarp":
        for a in args:
            g.effect(a)
        g.emit(Op.NOP)  # lanes of a warp run in lockstep and memory is coherent: nothing to wait for
        return None
    if name == "__activemask":
        t = g.new()
        g.emit(Op.VOTE, t, g.reg(C(1)), imm=LANE_MASK, use_imm=True, mod=VoteMode.BALLOT)
        return t
    if name.startswith("__qg_reduce"):  # cg::reduce: a butterfly over the tile
        v = g.reg(g.val(args[0]))
        width = args[1].const
        signed = e.ty == INT
        k = 1
        while k < width:
            other = g.new()
            g.emit(Op.SHFL, other, v, imm=k, use_imm=True, mod=int(ShflMode.XOR) | ((width.bit_length() - 1) << 2))
            if name == "__qg_reduce_add":
                v = g.alu(Op.ADD, v, other)
            else:  # v = other when it wins: v ^ ((v ^ other) & -(wins))
                lt = g.alu(Op.SLT if signed else Op.SLTU, *((v, other) if name == "__qg_reduce_max" else (other, v)))
                v = g.alu(Op.XOR, v, g.alu(Op.AND, g.alu(Op.XOR, v, other), g.alu(Op.SUB, C(0), lt)))
            k *= 2
        return v
    if name in _SHFL:
        g.effect(args[0])  # the mask names the lanes taking part; the active lanes are those
        v = g.reg(g.convert(g.val(args[1]), args[1].ty, e.ty))
        b = g.convert(g.val(args[2]), args[2].ty, INT)
        width = args[3].const if len(args) == 4 else SPEC.warp_size
        wlog = min(width, SPEC.warp_size).bit_length() - 1
        rs2, imm, use_imm = _operand(g, b)
        if is_pair(e.ty):  # a 64-bit value or a double: each half shuffled from the same source lane
            halves = []
            for h in (v.lo, v.hi):
                t = g.new()
                g.emit(Op.SHFL, t, g.reg(h), rs2, imm=imm, use_imm=use_imm, mod=int(_SHFL[name]) | (wlog << 2))
                halves.append(t)
            return Pair(*halves)
        t = g.new()
        g.emit(Op.SHFL, t, v, rs2, imm=imm, use_imm=use_imm, mod=int(_SHFL[name]) | (wlog << 2))
        return t
    mask = g.convert(g.val(args[0]), args[0].ty, UINT)
    v = g.val(args[1])
    if is_pair(args[1].ty):  # __match_any_sync of a 64-bit value or a double: lanes whose both halves match
        return _match64(g, v, mask)
    if is_float(args[1].ty) and name != "__match_any_sync":
        v = g.float_truth(v)
    v = g.reg(v)
    rs2, imm, use_imm = _operand(g, mask)
    t = g.new()
    g.emit(Op.VOTE, t, v, rs2, imm=imm, use_imm=use_imm, mod=_VOTE[name])
    return t


def integer(g: "KernelGen", e: A.Call, name: str):
    ptypes, _ = INT_FUNCS[name]
    args = [g.convert(g.val(a), a.ty, pt) for a, pt in zip(e.args, ptypes)]
    alu = g.alu
    if name == "__popc":
        return popc(g, args[0])
    if name == "__clz":
        return clz(g, args[0])
    if name == "__ffs":
        return ffs(g, args[0])
    if name == "__brev":
        return brev(g, args[0])
    if name.endswith("ll") or name.endswith("64hi"):
        return integer64(g, name, args)
    if name == "__byte_perm":
        return byte_perm(g, *args)
    if name in ("__mul24", "__umul24"):
        if name == "__mul24":
            a, b = (alu(Op.SRA, alu(Op.SHL, v, C(8)), C(8)) for v in args)
        else:
            a, b = (alu(Op.AND, v, C(0xFFFFFF)) for v in args)
        return alu(Op.MUL, a, b)
    if name in ("__mulhi", "__umulhi"):
        a, b = args
        hi = umulhi(g, a, b)
        if name == "__mulhi":  # signed: subtract b when a < 0 and a when b < 0 (mod 2^32)
            hi = alu(Op.SUB, hi, alu(Op.AND, b, alu(Op.SRA, a, C(31))))
            hi = alu(Op.SUB, hi, alu(Op.AND, a, alu(Op.SRA, b, C(31))))
        return hi
    if name in ("__sad", "__usad"):
        x, y, z = args
        lt = alu(Op.SLT if name == "__sad" else Op.SLTU, x, y)
        m = alu(Op.SUB, C(0), lt)  # all ones when x < y
        d = alu(Op.SUB, x, y)
        return alu(Op.ADD, alu(Op.SUB, alu(Op.XOR, d, m), m), z)
    raise AssertionError(name)  # pragma: no cover


def integer64(g: "KernelGen", name: str, args: list):
    """The 64-bit integer intrinsics on register pairs (frontend/wide.py)."""
    alu = g.alu
    if name == "__popcll":
        x = args[0]
        return alu(Op.ADD, popc(g, x.lo), popc(g, x.hi))
    if name == "__clzll":  # clz(hi), plus clz(lo) when hi is 0
        x = args[0]
        return alu(Op.ADD, clz(g, x.hi), alu(Op.AND, clz(g, x.lo), alu(Op.SUB, C(0), alu(Op.SEQ, x.hi, C(0)))))
    if name == "__ffsll":  # ffs(lo), or 32 + ffs(hi) when lo is 0 (0 when both are)
        x = args[0]
        f_hi = ffs(g, x.hi)
        f_hi = alu(Op.ADD, f_hi, alu(Op.SHL, alu(Op.SNE, f_hi, C(0)), C(5)))
        return alu(Op.ADD, ffs(g, x.lo), alu(Op.AND, f_hi, alu(Op.SUB, C(0), alu(Op.SEQ, x.lo, C(0)))))
    if name == "__brevll":
        x = args[0]
        return Pair(brev(g, x.hi), brev(g, x.lo))
    a, b = args  # __umul64hi, __mul64hi: the high 64 bits of the 128-bit product
    z = C(0)

    def full(x, y) -> Pair:
        return Pair(alu(Op.MUL, x, y), umulhi(g, x, y))
    p00, p01, p10, p11 = full(a.lo, b.lo), full(a.lo, b.hi), full(a.hi, b.lo), full(a.hi, b.hi)
    mid = wide.add(g, wide.add(g, Pair(p00.hi, z), Pair(p01.lo, z)), Pair(p10.lo, z))
    hi = wide.add(g, wide.add(g, p11, Pair(p01.hi, z)), Pair(p10.hi, z))
    hi = wide.add(g, hi, Pair(mid.hi, z))
    if name == "__mul64hi":  # signed: subtract b when a < 0 and a when b < 0 (mod 2^64)
        sa, sb = alu(Op.SRA, a.hi, C(31)), alu(Op.SRA, b.hi, C(31))
        hi = wide.sub(g, hi, wide.bitwise(g, Op.AND, b, Pair(sa, sa)))
        hi = wide.sub(g, hi, wide.bitwise(g, Op.AND, a, Pair(sb, sb)))
    return hi


def _match64(g: "KernelGen", v, mask):
    lo, hi = g.new(), g.new()
    rs2, imm, use_imm = _operand(g, mask)
    g.emit(Op.VOTE, lo, g.reg(v.lo), rs2, imm=imm, use_imm=use_imm, mod=VoteMode.MATCH)
    g.emit(Op.VOTE, hi, g.reg(v.hi), rs2, imm=imm, use_imm=use_imm, mod=VoteMode.MATCH)
    return g.alu(Op.AND, lo, hi)


def match_all(g: "KernelGen", e: A.Call):
    """__match_all_sync(mask, v, &pred): the lanes taking part (a ballot of 1 over the mask) when
    every one of them holds this lane's value, else 0; pred says which."""
    args = e.args
    mask = g.convert(g.val(args[0]), args[0].ty, UINT)
    v = g.val(args[1])
    rs2, imm, use_imm = _operand(g, mask)
    if is_pair(args[1].ty):
        m = _match64(g, v, mask)
    else:
        m = g.new()
        g.emit(Op.VOTE, m, g.reg(v), rs2, imm=imm, use_imm=use_imm, mod=VoteMode.MATCH)
    part = g.new()
    g.emit(Op.VOTE, part, g.reg(C(1)), rs2, imm=imm, use_imm=use_imm, mod=VoteMode.BALLOT)
    same = g.alu(Op.SEQ, m, part)
    p = args[2]
    if isinstance(p, A.Unary) and p.op == "&" and isinstance(p.operand, A.Name) and \
            isinstance(g.lvalue(p.operand), VarLV):
        g.write(g.lvalue(p.operand), same)
    else:
        base, off = g.ptr_addr(p)
        g.store(MemLV(base, off, INT), same)
    return g.alu(Op.AND, m, g.alu(Op.SUB, C(0), same))


def reduce_sync(g: "KernelGen", e: A.Call, op: str):
    """__reduce_{add,min,max,and,or,xor}_sync(mask, v): every lane reads each lane's value with
    one SHFL.IDX and combines those of the lanes taking part (a ballot of 1 over the mask).  A
    lane not taking part gives the caller's own value (docs/qsass.md), which min, max, and, or
    absorb; for add and xor it is masked to 0."""
    alu = g.alu
    args = e.args
    mask = g.convert(g.val(args[0]), args[0].ty, UINT)
    v = g.reg(g.convert(g.val(args[1]), args[1].ty, e.ty))
    rs2, imm, use_imm = _operand(g, mask)
    part = g.new()
    g.emit(Op.VOTE, part, g.reg(C(1)), rs2, imm=imm, use_imm=use_imm, mod=VoteMode.BALLOT)
    acc = C(0) if op in ("add", "xor") else v
    for k in range(SPEC.warp_size):
        x = g.new()
        g.emit(Op.SHFL, x, v, imm=k, use_imm=True, mod=int(ShflMode.IDX) | ((SPEC.warp_size.bit_length() - 1) << 2))
        on = alu(Op.SUB, C(0), alu(Op.AND, alu(Op.SHR, part, C(k)), C(1)))  # all ones: lane k takes part
        if op in ("add", "xor"):
            acc = alu(Op.ADD if op == "add" else Op.XOR, acc, alu(Op.AND, x, on))
            continue
        x = alu(Op.XOR, v, alu(Op.AND, alu(Op.XOR, v, x), on))  # v unless lane k takes part
        if op in ("and", "or"):
            acc = alu(Op.AND if op == "and" else Op.OR, acc, x)
        else:  # acc = x when it wins: acc ^ ((acc ^ x) & -(wins))
            signed = e.ty == INT
            lt = alu(Op.SLT if signed else Op.SLTU, *((acc, x) if op == "max" else (x, acc)))
            acc = alu(Op.XOR, acc, alu(Op.AND, alu(Op.XOR, acc, x), alu(Op.SUB, C(0), lt)))
    return acc


def atomic_inc_dec(g: "KernelGen", base, off: int, v, name: str):
    """atomicInc: old >= v ? 0 : old + 1;  atomicDec: (old == 0 || old > v) ? v : old - 1,
    as a compare-and-swap loop (KernelGen.cas_loop)."""
    alu = g.alu
    v = g.reg(v)

    def new_of(assumed):
        if name == "atomicInc":
            keep = alu(Op.SLTU, assumed, v)  # 1: old + 1, 0: wrap to 0
            return alu(Op.AND, alu(Op.ADD, assumed, C(1)), alu(Op.SUB, C(0), keep))
        wrap = alu(Op.OR, alu(Op.SEQ, assumed, C(0)), alu(Op.SLTU, v, assumed))
        dec = alu(Op.ADD, assumed, C(MASK32))
        return alu(Op.XOR, dec, alu(Op.AND, alu(Op.XOR, dec, v), alu(Op.SUB, C(0), wrap)))
    return g.cas_loop(base, off, new_of)


__all__ = ["warp", "integer", "atomic_inc_dec"]
