"""FFMA: d = a * b + d with one rounding, a gate circuit of the float unit (qgcc.link.blocks.fpu).

The exact 48-bit mantissa product P comes from the multiplier array that MUL and FMUL share.
Positions below are in units of P's last bit (2^(ea' + eb' - 300)); the addend c sits at
offset delta = ec' + 150 - (ea' + eb') (its mantissa MC times 2^delta).  The sum is formed
exactly in a window of FW = 102 bits, window bit t holding position t - LO:

* P lies at t = 27..74.  The addend is placed for delta in [-50, 49] (up to t = 99); its bits
  below position -26 are ORed into window bit 0, a sticky bit (for delta <= -50 all of it).
  That loses nothing: an addend reaching below position -26 is under 2^-2 while P >= 1, so
  the sum's leading one is at position -1 or above, its round bit at -26 or above, and the
  sticky bit below it is all rounding needs (an effective subtraction subtracts one unit
  there, as FADD does).  When the addend is at least half of P its lowest bit is at -24
  or above and the sum is exact.
* delta >= 50 with a nonzero c: P < 2^48 is under a quarter of c's last place (half of it
  where c is a power of two and the sum falls below it), so the result is c itself, passed
  through.  So is c when a or b is zero (c nonzero).
* The sum: one adder (a two-level carry lookahead, _magnitude_sum) gives P + Y + eff (Y the
  aligned addend, inverted for an effective subtraction) and, with the same generate and
  propagate groups, its complement ~(P + Y) = A - P, which is the magnitude when the addend
  is the bigger (no carry out of P + ~A + 1); the sum bits select between the two.
* Normalisation: the rounding point (the result's last bit) is r = max(lead - 23,
  178 - (ea' + eb')), the second term the subnormal exponent; a one-hot s over r in
  [-22, 76] selects the fraction, guard and sticky, and the exponent field is
  ea' + eb' - 200 + (r + 22) + [hidden bit], one adder on r's binary code.  Then the
  rounding increment of FADD and FMUL (_round_merge).

Levels after P: the adder's groups, the block signals and in-block carries, the carries and
the sign, the selected sum bits; group zeros; s (and the sticky prefix ORs); fraction, r,
round-up, overflow; the exponent adder (three levels); the two rounding levels: twelve,
against FMUL's four.  No AND or OR has more than 31 terms, as in the rest of the machine.
"""

from __future__ import annotations

from dataclasses import replace

from .. import circuits as C
from ..circuits import and_step, eq_lits, gated, neg, step
from ..netlist import Netlist, Sig
from .floatbits import _any, _classify, _eff_exp, _exp_sum, _parity3, _round_merge

FW = 102  # window bits
LO = 27  # window bit of P's bit 0 (window bit 0: the addend's sticky bit)
DMIN, DMAX = -50, 49  # addend offsets placed in the window (below: sticky only; above: the result is c)
KMIN, KMAX = -22, 76  # rounding points r (window bits of the result's last place)
GROUP = 4  # bits per zero-detect group of the normalising shift


def ffma(n: Netlist, a: list, b: list, c: list, en, P: list, G: list, name: str = "ffma") -> list[Sig]:
    """Bits of a * b + c (one rounding) as binary32, 0 unless `en`; P: the 48-bit mantissa
    product of a and b from fpu.multiplier, G its adder's groups (for just-in-time placement)."""
    ZERO, ONE = (n.ONE, False), (n.ONE, True)
    za, nan_a, inf_a = _classify(n, a, f"{name}.a")
    zb, nan_b, inf_b = _classify(n, b, f"{name}.b")
    zc, nan_c, inf_c = _classify(n, c, f"{name}.c")
    psign = n.xor(a[31], b[31], f"{name}.ps")
    eff = _parity3(n, a[31], b[31], c[31], f"{name}.eff")  # effective subtraction
    fa, fb, fc = (_any(n, x[:23], f"{name}.{w}f") for w, x in (("a", a), ("b", b), ("c", c)))
    pzero = n.gate([and_step([za, neg(fa)]), and_step([neg(za), zb, neg(fb)]), and_step([za, fa, zb, neg(fb)])],
                   f"{name}.pz")  # a or b is +-0
    nzc = n.or_([neg(zc), fc], f"{name}.nzc")  # c is not +-0
    # ---- specials
    t1 = _and(n, [inf_a, zb, neg(fb)], f"{name}.t1")
    t2 = _and(n, [inf_b, za, neg(fa)], f"{name}.t2")
    t3 = n.gate([and_step([inf_a, inf_c, eff]), and_step([neg(inf_a), inf_b, inf_c, eff])], f"{name}.t3")
    nan_out = n.or_([nan_a, nan_b, nan_c, t1, t2, t3], f"{name}.nan")
    pinf = n.or_([inf_a, inf_b], f"{name}.pinf")
    spec = n.or_([nan_out, pinf, inf_c], f"{name}.spec")
    inf_out = n.gate([and_step([neg(nan_out), pinf]), and_step([neg(nan_out), neg(pinf), inf_c])], f"{name}.inf")
    inf_sign = n.gate([and_step([pinf, psign]), and_step([neg(pinf), c[31]])], f"{name}.infs")
    # ---- exponents: S = ea' + eb' (9 bits), T = S - ec' (10 bits, two's complement), delta = 150 - T
    S = _exp_sum(n, a, b, za, zb, f"{name}.S")
    EC = _eff_exp(c, zc)
    T = C.add(n, S + [ZERO], [neg(x) for x in EC] + [ONE, ONE], cin=ONE, name=f"{name}.T")
    dhi = n.gate(C.cmp_const_steps(T[:9], 101, ge=False, extra=[neg(T[9])]) + [and_step([T[9]])],
                 f"{name}.dhi")  # delta >= 50
    dlo = n.gate(C.cmp_const_steps(T[:9], 201, extra=[neg(T[9])]), f"{name}.dlo")  # delta <= -51
    byp = n.gate([and_step([nzc, pzero, neg(spec)]), and_step([nzc, neg(pzero), dhi, neg(spec)])], f"{name}.byp")
    tiny = n.gate(C.cmp_const_steps(S, 102, ge=False), f"{name}.tiny")  # c = 0: the product rounds to 0
    # ---- the aligned addend, inverted for an effective subtraction (just in time for P)
    MC = list(c[:23]) + [neg(zc)]
    with n.not_before(G[0]):
        anyMC = {m: _any(n, MC[:m], f"{name}.amc{m}") for m in range(1, 24)}
        anyMC[24] = nzc
        Y = []
        for t in range(FW):
            terms = []  # exclusive AND-literal lists whose OR is the addend's window bit t
            if t == 0:
                terms = [eq_lits(T, 150 - k) + [anyMC[-26 - k]] for k in range(DMIN, -26)]
                terms.append([dlo, nzc])
            else:
                pos = t - LO
                terms = [eq_lits(T, 150 - k) + [MC[pos - k]] for k in range(DMIN, DMAX + 1) if 0 <= pos - k < 24]
            if not terms:
                Y.append(eff)
                continue
            sts = [and_step([eff])]
            for lits in terms:
                sts += [and_step([neg(eff)] + lits), and_step([eff] + lits, -1)]
            Y.append(n.gate(sts, f"{name}.y{t}"))
    X = [P[t - LO] if 0 <= t - LO < 48 else ZERO for t in range(FW)]
    R, negr = _magnitude_sum(n, X, Y, eff, f"{name}.add")
    sgn = n.xor(psign, negr, f"{name}.sg")
    # ---- S against constants (high and low halves, tables computed just in time)
    with n.not_before(R[0]):
        Sl, Sh = S[:4], S[4:]
        sh_eq, sh_gt, sl_ge, sl_eq = {}, {}, {}, {}

        def s_eq(t: int) -> list:
            h, l_ = divmod(t, 16)
            if h not in sh_eq:
                sh_eq[h] = _and(n, eq_lits(Sh, h), f"{name}.she{h}")
            if l_ not in sl_eq:
                sl_eq[l_] = _and(n, eq_lits(Sl, l_), f"{name}.sle{l_}")
            return [sh_eq[h], sl_eq[l_]]

        def s_ge(t: int) -> list[list]:  # exclusive alternatives whose OR is [S >= t]
            h, l_ = divmod(t, 16)
            if h not in sh_eq:
                sh_eq[h] = _and(n, eq_lits(Sh, h), f"{name}.she{h}")
            if h not in sh_gt:
                sh_gt[h] = n.gate(C.cmp_const_steps(Sh, h + 1), f"{name}.shg{h}")
            if l_ and l_ not in sl_ge:
                sl_ge[l_] = n.gate(C.cmp_const_steps(Sl, l_), f"{name}.slg{l_}")
            return [[sh_gt[h]], [sh_eq[h]] + ([sl_ge[l_]] if l_ else [])]
        for k in range(KMIN, KMAX + 1):  # build the tables here, beside R
            s_eq(178 - k), s_ge(178 - k), s_ge(432 - k)
        SB = C.plus_const(n, S + [ZERO], -178 + KMIN, f"{name}.SB")  # S - 200, 10 bits
    # ---- zero groups, the one-hot rounding point s, the sticky prefix ORs
    groups = [list(range(lo, min(lo + GROUP, FW))) for lo in range(0, FW, GROUP)]
    zg = [_and(n, [neg(R[t]) for t in g], f"{name}.zg{i}") for i, g in enumerate(groups)]
    # The sum bits are the window adder's noisiest outputs (up to 7 steps of 7-10 terms, the
    # sign's enable weighing up to 10): restored copies, made beside the zero groups (no level
    # added), are what the rounding point, the fraction and the round-up read.
    R = [n.copy(r, f"{name}.rr{t}") for t, r in enumerate(R)]

    def zero_from(j: int) -> list:  # literals: R[t] = 0 for every t >= j
        if j >= FW:
            return []
        gi = j // GROUP
        return [neg(R[t]) for t in range(j, groups[gi][-1] + 1)] + zg[gi + 1:]
    zero_r = _and(n, zg, f"{name}.zr")
    anyb = {}
    for m in range(1, KMAX):  # OR of R[0:m]
        gi = m // GROUP
        anyb[m] = n.gate([step([(neg(z), 1) for z in zg[:gi]] + [(R[t], 1) for t in range(gi * GROUP, m)], 1)],
                         f"{name}.any{m}")
    s = {}
    for k in range(KMIN, KMAX + 1):
        lead = [R[k + 23]] + zero_from(k + 24)
        sts = [and_step(lead + alt) for alt in s_ge(178 - k)]
        sts.append(and_step(s_eq(178 - k) + zero_from(k + 23)))
        s[k] = n.gate(sts, f"{name}.s{k}")
    # ---- fraction, exponent field, round-up, overflow
    frac = [n.gate([and_step([s[k], R[k + i]]) for k in s if 0 <= k + i < FW], f"{name}.f{i}") for i in range(23)]
    nrm = n.gate([and_step([s[k], R[k + 23]]) for k in s], f"{name}.nrm")  # the hidden bit
    # r + 22 in binary. s is at most one-hot, so bit j is [sum of the s_k with bit j set - sum
    # of the others >= 1]: one balanced row over all 99 s_k, with no large constant. (It was two
    # ORs of ~25 terms, NORs whose constant, about 50 K, dominated the row norm, 512 sqrt(650)
    # each against 512 sqrt(99): --probe 1e-3 found fe.P0 moved 2 K by the halves' errors.)
    rb = []
    for j in range(7):
        rb.append(n.gate([step([(s[k], 1 if (k - KMIN) >> j & 1 else -1) for k in s], 1)], f"{name}.rb{j}"))
    ru_sts = []
    for k in s:
        if k >= 1:
            ru_sts.append(and_step([s[k], R[k - 1], R[k]]))
            if k >= 2:
                ru_sts.append(and_step([s[k], R[k - 1], neg(R[k]), anyb[k - 1]]))
    ru = n.gate(ru_sts, f"{name}.ru")
    ovf = n.gate([and_step([s[k], R[k + 23]] + alt) for k in s for alt in s_ge(432 - k)], f"{name}.ovf")
    # The sum bits weight r's bits by up to 4 (two terms each): restored copies, made beside
    # the adder's digit groups, feed its last level (bench/margin.py --probe found fe.s6 at
    # 0.998 of its margin at 1e-3 when it read ORs of ~25 terms directly).
    rbr = [n.copy(b, f"{name}.rbr{j}") for j, b in enumerate(rb)]
    field = C.add(n, SB, rb + [ZERO] * 3, cin=nrm, name=f"{name}.fe", y_late=rbr + [ZERO] * 3)[:8]
    live = [en, neg(spec), neg(byp), neg(zero_r), neg(tiny)]
    normal = _and(n, live + [neg(ovf)], f"{name}.normal")
    to_inf = n.gate([and_step([en, inf_out]), and_step(live + [ovf])], f"{name}.toinf")
    nan_en = _and(n, [en, nan_out], f"{name}.nanen")
    byp_en = _and(n, [en, byp], f"{name}.bypen")
    out_sign = n.gate([and_step([en, inf_out, inf_sign]), and_step([byp_en, c[31]]),
                       and_step([en, neg(spec), neg(byp), zero_r, psign, c[31]]),
                       and_step([en, neg(spec), neg(byp), neg(zero_r), sgn])], f"{name}.sign")
    return _round_merge(n, frac + field, ru, normal, nan_en, to_inf, out_sign, name, passed=(byp_en, c))


def _and(n: Netlist, lits: list, name: str) -> Sig:
    return n.gate([and_step(lits)], name)


BLOCK = 7  # digit groups per block of the window adder's carry-select (AND steps of <= 8 literals)


def _magnitude_sum(n: Netlist, x: list, y: list, eff, name: str) -> tuple[list[Sig], Sig]:
    """(|x + y + eff| as a magnitude, [it is negative]) in four levels, for an effective
    subtraction's y = ~addend: x - addend = x + y + 1 when there is a carry out, else the
    magnitude is addend - x = ~(x + y).

    The digit groups of circuits.add (level 1); per block of BLOCK groups its generate and
    propagate, and inside it the carries into each group and "every group before it in the
    block propagates" (level 2); the carry into each group, for x + y and for x + y + eff, as
    exclusive AND steps over those (a generate inside the block, or one of an earlier block
    carried through), and the sign (level 3); each sum bit takes, by the sign, the sum or
    the complement (circuits.gated; level 4).  No AND has more than BLOCK + 2 literals: one
    flat lookahead over the 51 groups ANDs up to 52, whose rows are noisier than any of the
    machine's others."""
    width = len(x)
    groups = width // C.DIGIT
    full = 1 << C.DIGIT
    G, Pp = [], []
    for g in range(groups):
        lo = C.DIGIT * g
        pairs = [(v[i], 1 << (i - lo)) for i in range(lo, lo + C.DIGIT) for v in (x, y)]
        G.append(n.gate([step(pairs, full)], f"{name}.G{g}"))
        Pp.append(n.gate([step(pairs, full - 1), step(pairs, full, -1)], f"{name}.P{g}"))
    blocks = [list(range(lo, min(lo + BLOCK, groups))) for lo in range(0, groups, BLOCK)]
    lc, pin = {}, {}  # carry into group g from inside its block; "groups bs..g-1 all propagate"
    BG, BP = [], []
    for bi, blk in enumerate(blocks):
        bs = blk[0]
        for g in blk[1:]:
            lc[g] = n.gate([and_step([G[j]] + Pp[j + 1:g]) for j in range(bs, g)], f"{name}.lc{g}")
            pin[g] = _and(n, Pp[bs:g], f"{name}.pin{g}")
        be = blk[-1] + 1
        BG.append(n.gate([and_step([G[j]] + Pp[j + 1:be]) for j in blk], f"{name}.BG{bi}"))
        BP.append(_and(n, Pp[bs:be], f"{name}.BP{bi}"))
    nb = len(blocks)
    c0: list = []  # carries of x + y, and of x + y + eff: exclusive AND steps of <= BLOCK + 2 literals
    c1: list = []
    for g in range(groups):
        b = g // BLOCK
        own = [pin[g]] if g in pin else []
        sts = [and_step([lc[g]])] if g in lc else []
        sts += [and_step([BG[j]] + BP[j + 1:b] + own) for j in range(b)]
        c0.append(n.gate(sts, f"{name}.C{g}") if sts else None)
        c1.append(n.gate(sts + [and_step([eff] + BP[:b] + own)], f"{name}.Ce{g}") if g else eff)
    negr = n.gate([and_step([eff])] + [and_step([eff, BG[j]] + BP[j + 1:], -1) for j in range(nb)]
                  + [and_step([eff] + BP, -1)], f"{name}.neg")
    out = []
    for i in range(width):
        g, k = divmod(i, C.DIGIT)
        M = 1 << (k + 1)
        base = [(x[i], M), (y[i], M)] + [(v[j], 1 << (j - C.DIGIT * g)) for j in range(C.DIGIT * g, i) for v in (x, y)]
        bb = 1 << k

        def parity(carry):
            pairs = base + ([(carry, 1)] if carry is not None else [])
            return [step(pairs, bb), step(pairs, M + bb, -1), step(pairs, 2 * M + bb)]
        sts = [gated(st, neg(negr)) for st in parity(c1[g])]
        sts.append(and_step([negr]))
        sts += [replace(gated(st, negr), coef=-st.coef) for st in parity(c0[g])]
        out.append(n.gate(sts, f"{name}.s{i}"))
    return out, negr
