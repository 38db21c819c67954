"""The float unit: binary32 FADD/FSUB, FMUL, I2F/U2F and F2I/F2U, one lane per micro-step,
and the float compares and FMIN/FMAX of every lane (lane_compare, wired into the ALU).

Float arithmetic is micro-stepped like MUL (the `ismem` flag): one datapath serves
the four lanes, on the micro-step lane's operands (Ams, Bms).  It is linked only into
programs that use it (used_ops).  Every gate is an AND step over literals, an OR, or a
digit-wise circuit of qgcc.link.circuits (adders, constant adds and compares), so its
weights and sums stay within the integer machine's bounds (qgcc.link.numerics).  The adder
is a straight pipeline of threshold-gate levels, each one MLP:

1. classify the operands (zero exponent; exponent all ones, fraction nonzero), effective
   operation; 2. |a| >= |b| (the compare's digits), NaN and infinity;
2-4. both exponent differences ea' - eb' and eb' - ea' (digit adders), then the one-hot d of
   the one |a| >= |b| selects (0..26, 27 = 27 or more); swap: the bigger operand's mantissa and
   effective exponent, the smaller's mantissa, and the ORs of its low bits (the sticky bit);
6. align: the smaller mantissa shifted right by d onto guard, round and sticky bits, inverted
   for an effective subtraction; 7-9. the 32-bit carry-lookahead adder (qgcc.link.circuits.add),
   beside which the big exponent minus every normalising shift is precomputed (constant adds);
10. the normalising shift as a one-hot s: right by one on a carry out, else left by the leading
   zero count, limited so that the exponent stays >= 1 (a subnormal result keeps its zeros);
11. the normalised fraction, the exponent field (0 for a subnormal: the hidden bit gates it),
   the round-up bit (guard and (round or sticky or lsb)), the special-case flags;
12-13. {exponent, fraction} + round-up (a carry out of the fraction bumps the exponent, and out of
   254 gives infinity; increment_if's digit structure), merged with NaN, infinity and overflow.

FMUL, I2F and F2I are described at their functions; FFMA (and FADD/FSUB/FMUL in a program
that uses FFMA: fused_operands) in qgcc.link.blocks.ffma.  The semantics are qgcc.fpu's
(tests/test_fpu_circuits.py checks the gates against it bit for bit with Netlist.simulate).
"""

from __future__ import annotations

from dataclasses import dataclass

from ...isa import FLOAT_OPS
from ...program import Program
from .. import circuits as C
from ..circuits import and_step, neg, step
from ..layout import L_MEM0
from ..netlist import Netlist, Sig
from .floatbits import _any, _classify, _eff_exp, _exp_sum, _parity3, _round_merge
from .mul import sum_columns


def used_ops(program: Program) -> frozenset[str]:
    """Names of the float opcodes `program` uses (the network executes all of them: IN_NETWORK)."""
    return frozenset(op.name for op in {ins.op for ins in program.code} & FLOAT_OPS)


@dataclass
class FloatUnit:
    result: list[Sig] | None  # the micro-step lane's float result (None: the program uses no such op)
    product: list[Sig] | None  # MUL's product when the multiplier is shared with FMUL


# First layer of the float unit (the adder starts six layers later).  Placed by measurement:
# its levels need a few hundred residual dimensions beside the register and memory layers'
# buses.  With 256 threads (registers in layers 1-12, memory from 13): from L_MEM0 - 2 a
# kernel of float + - * and conversions overflows the residual (stage 23: the multiplier's
# array beside the register copies); from L_MEM0 - 1 everything tried links; from L_MEM0
# (one layer of margin) the math-library kernels take at most 41 layers and the float
# samples 33; from L_MEM0 + 5 (the 18-layer machine's place) FFMA kernels such as atan2f
# and hypotf need 46.
L_FPU = L_MEM0
FUSED_OPERANDS = L_FPU + 2  # FADD/FSUB/FMUL's b and c on the fused datapath: after the multiplier's array


def build(n: Netlist, dec, mem, fops: frozenset[str]) -> FloatUnit:
    """The micro-stepped float unit on the micro-step lane's operands (Ams, Bms; FFMA's Cms)."""
    op = dec.op
    results, product = [], None
    if "FFMA" in fops:  # the fused datapath also runs FADD, FSUB and FMUL (fused_operands)
        from .ffma import ffma
        fused = [op[o] for o in ("FADD", "FSUB", "FMUL", "FFMA") if o in fops]  # exclusive: a list is their OR
        en = fused if len(fused) > 1 else fused[0]
        mul_ops = [op[o] for o in ("FMUL", "FFMA") if o in fops]
        add_ops = [op[o] for o in ("FADD", "FSUB") if o in fops]
        with n.at_least(L_FPU):  # FADD/FSUB's a * 1.0 in the partial products themselves
            P, G = multiplier(n, mem.Ams, mem.Bms, op["MUL"], mul_ops if len(mul_ops) > 1 else mul_ops[0],
                              one_en=add_ops or None)
        with n.at_least(FUSED_OPERANDS):
            b, c = fused_operands(n, mem, op, fops)
        product = P[:32]
        results.append(ffma(n, mem.Ams, b, c, en, P, G))
        fops = fops - {"FADD", "FSUB", "FMUL"}
    if fops & {"FADD", "FSUB"}:
        with n.at_least(L_FPU + 6):  # after the multiplier's widest levels (measured: beside them the
            # residual overflowed where the adder's and the multiplier's tails meet; with 17 memory
            # layers and two-word pending writes, from L_FPU + 4 it still did, at stage 47)
            en = n.or_([op["FADD"], op["FSUB"]], "fadd.en")
            results.append(fadd(n, mem.Ams, mem.Bms, op["FSUB"], en))
    if "FMUL" in fops:
        with n.at_least(L_FPU):
            P, G = multiplier(n, mem.Ams, mem.Bms, op["MUL"], op["FMUL"])
        product = P[:32]
        results.append(fmul(n, mem.Ams, mem.Bms, op["FMUL"], P=P, G=G))
    # Shallow: after the multiplier's widest level, whose layer has no room left when a program
    # also uses SHFL/VOTE or the clock (measured: the residual overflowed at that layer).
    with n.at_least(L_FPU + 1 if product is not None else L_FPU):
        if fops & {"I2F", "U2F"}:
            en = n.or_([op["I2F"], op["U2F"]], "i2f.en")
            results.append(i2f(n, mem.Ams, op["I2F"], en))
        if fops & {"F2I", "F2U"}:
            results.append(f2i(n, mem.Ams, op["F2I"], op["F2U"]))
        if fops & {"I2F", "U2F"} and fops & {"F2I", "F2U"}:  # both shallow: one bus at once, so that
            cv = results[-2:]  # 32 fewer dimensions wait beside the multiplier's array
            results[-2:] = [[n.gate([step([(r[i], 1)], 1) for r in cv], f"fcv{i}") for i in range(32)]]
    result = None
    if len(results) == 1:
        result = results[0]
    elif results:
        result = [n.gate([step([(r[i], 1)], 1) for r in results], f"fres{i}") for i in range(32)]
    return FloatUnit(result, product)


ONE_F = 0x3F800000  # 1.0f
NEG_ZERO = 0x80000000  # -0.0f


def fused_operands(n: Netlist, mem, op: dict, fops: frozenset[str]) -> tuple[list[Sig], list[Sig]]:
    """(b, c) of the fused datapath a * b + c, one level: FFMA's own (Bms, Cms); a + b and a - b
    as a * 1 + b and a * 1 + (-b); a * b as a * b + (-0).  Each is the same exact value rounded
    once, with the same NaN, infinity and zero-sign results (qgcc.fpu), so a program with FFMA
    needs no separate adder or multiplier rounding."""
    Bms, Cms = mem.Bms, mem.Cms
    adds = [op[o] for o in ("FADD", "FSUB") if o in fops]
    if not fops & {"FADD", "FSUB", "FMUL"}:
        return Bms, Cms
    b, c = [], []
    for i in range(32):
        sts = [and_step([neg(adds), Bms[i]])] if adds else [and_step([Bms[i]])]
        if adds and ONE_F >> i & 1:
            sts.append(and_step([adds]))
        b.append(n.gate(sts, f"fma.b{i}") if adds else Bms[i])
        sts = [and_step([op["FFMA"], Cms[i]])]
        if "FADD" in fops:
            sts.append(and_step([op["FADD"], Bms[i]]))
        if "FSUB" in fops:
            sts.append(and_step([op["FSUB"], Bms[i] if i < 31 else neg(Bms[i])]))
        if "FMUL" in fops and NEG_ZERO >> i & 1:
            sts.append(and_step([op["FMUL"]]))
        c.append(n.gate(sts, f"fma.c{i}"))
    return b, c


def _plus_const(n: Netlist, x: list, c: int, name: str) -> list[Sig]:
    """(x + c) mod 2^len(x), three levels (the digit adder, so no weight above 2^DIGIT)."""
    return C.plus_const(n, x, c, name)


def fadd(n: Netlist, a: list, b: list, sub, en, name: str = "fadd") -> list[Sig]:
    """Bits of a + b (a - b when `sub`) as binary32, 0 unless `en`; thirteen levels."""
    ZERO = (n.ONE, False)
    ea, eb = a[23:31], b[23:31]
    # ---- level 1
    za, nan_a, inf_a = _classify(n, a, f"{name}.a")
    zb, nan_b, inf_b = _classify(n, b, f"{name}.b")
    sb = n.xor(b[31], sub, f"{name}.sb")
    eff = _parity3(n, a[31], b[31], sub, f"{name}.eff")  # effective subtraction
    # ---- level 2
    ge, _ = C.compare(n, a[:31] + [ZERO], b[:31] + [ZERO], name=f"{name}.cmp")  # |a| >= |b|
    # ---- levels 2-4: both exponent differences (ea' - eb' when |a| >= |b|, which implies
    # ea' >= eb', else eb' - ea'), then the one-hot d of the one that applies
    EA, EB = _eff_exp(a, za), _eff_exp(b, zb)
    ONE = (n.ONE, True)
    dab = C.add(n, EA, [C.neg(x) for x in EB], cin=ONE, name=f"{name}.dab")
    dba = C.add(n, EB, [C.neg(x) for x in EA], cin=ONE, name=f"{name}.dba")
    d = []
    for k in range(27):
        d.append(n.gate([and_step([ge] + C.eq_lits(dab, k)), and_step([neg(ge)] + C.eq_lits(dba, k))],
                        f"{name}.d{k}"))
    d.append(n.gate(C.cmp_const_steps(dab, 27, extra=[ge]) + C.cmp_const_steps(dba, 27, extra=[neg(ge)]),
                    f"{name}.d27"))
    nan_out = n.gate([and_step([nan_a]), and_step([neg(nan_a), nan_b]),
                      and_step([inf_a, inf_b, eff])], f"{name}.nanout")
    # ---- level 3: swap
    MA = list(a[:23]) + [neg(za)]
    MB = list(b[:23]) + [neg(zb)]
    big = [n.gate([and_step([ge, MA[i]]), and_step([neg(ge), MB[i]])], f"{name}.big{i}") for i in range(24)]
    small = [n.gate([and_step([ge, MB[i]]), and_step([neg(ge), MA[i]])], f"{name}.sm{i}") for i in range(24)]
    EBE = []  # the bigger operand's effective exponent (1 for a subnormal)
    for i in range(8):
        sts = [and_step([ge, ea[i]]), and_step([neg(ge), eb[i]])]
        if i == 0:
            sts += [and_step([ge, za]), and_step([neg(ge), zb])]
        EBE.append(n.gate(sts, f"{name}.eb{i}"))
    sign_big = n.gate([and_step([ge, a[31]]), and_step([neg(ge), sb])], f"{name}.sbig")
    inf_out = n.gate([and_step([neg(nan_out), inf_a]), and_step([neg(nan_out), neg(inf_a), inf_b])],
                     f"{name}.infout")
    inf_sign = n.gate([and_step([inf_a, a[31]]), and_step([neg(inf_a), sb])], f"{name}.infsign")
    # ---- level 4: align (inverted for subtraction), exponent tables
    orS = {m: _any(n, small[:m], f"{name}.or{m}") for m in range(1, 25)}  # beside d: the sticky's ORs
    Y = []
    for p in range(27):
        if p == 0:  # sticky: every bit of the smaller mantissa that lands below position 1
            sts = []
            for k in range(3, 28):
                S = orS[min(k - 2, 24)]
                sts.append(and_step([d[k], neg(eff), S]))
                sts.append(and_step([d[k], eff, S], -1))
            sts.append(and_step([eff]))
        else:
            sts = [and_step([eff])]
            for k in range(28):
                i = p - 3 + k
                if 0 <= i < 24:
                    sts.append(and_step([neg(eff), d[k], small[i]]))
                    sts.append(and_step([eff, d[k], small[i]], -1))
        Y.append(n.gate(sts, f"{name}.y{p}"))
    Y += [eff] * 5
    X = [ZERO] * 3 + big + [ZERO] * 5
    # ---- levels 5-7: the adder
    R, carry, _ = C.add(n, X, Y, cin=eff, name=f"{name}.add", want_carry=True)
    # The sum bits are noisy at both values (three steps each), and the leading-one detector
    # ANDs up to 28 of them: restored copies (bench/margin_static.py: fadd.s26 z 1.9 at 1e-3).
    R = [n.copy(r, f"{name}.Rc{i}") for i, r in enumerate(R[:28])]
    with n.not_before(carry):  # tables of the big exponent, computed just in time (beside R)
        LIM_GE = {k: n.gate(C.cmp_const_steps(EBE, k + 1), f"{name}.limge{k}") for k in range(1, 27)}
        LIM_EQ = {k: n.gate([and_step(C.eq_lits(EBE, k + 1))] if k else C.cmp_const_steps(EBE, 2, ge=False),
                            f"{name}.limeq{k}") for k in range(27)}
        eb254 = n.gate([and_step(C.eq_lits(EBE, 254))], f"{name}.eb254")
    with n.not_before(Y[1]):  # three levels each: begun with the adder
        EM = {k: _plus_const(n, EBE, -k, f"{name}.em{k}_") for k in range(-1, 27)}
    # ---- level 8: the normalising shift (one-hot), exact zero, overflow
    s = {-1: R[27]}
    for k in range(27):
        pos = 26 - k
        top = [neg(t) for t in R[pos + 1:28]]
        sts = [and_step([R[pos]] + top + ([LIM_GE[k]] if k else [])),
               and_step([LIM_EQ[k], neg(R[pos])] + top)]
        s[k] = n.gate(sts, f"{name}.s{k}")
    zero_r = n.gate([step([(neg(x), 1) for x in R], 28)], f"{name}.zr")
    ovf = n.gate([and_step([R[27], eb254])], f"{name}.ovf")
    # ---- level 9: normalised fraction, exponent field, round-up, specials
    frac = []
    for i in range(23):
        sts = [and_step([R[27], R[i + 4]])]
        for k in range(27):
            j = i + 3 - k
            if j >= 0:
                sts.append(and_step([s[k], R[j]]))
        frac.append(n.gate(sts, f"{name}.f{i}"))
    field = []
    for j in range(8):
        sts = [and_step([R[27], EM[-1][j]])]
        for k in range(27):
            sts.append(and_step([s[k], R[26 - k], EM[k][j]]))
        field.append(n.gate(sts, f"{name}.e{j}"))
    ru_cases = {-1: (R[3], R[4], R[0:3]), 0: (R[2], R[3], R[0:2]), 1: (R[1], R[2], R[0:1]), 2: (R[0], R[1], [])}
    ru = _round_up(n, [(s[k], g, [lsb] + rest) for k, (g, lsb, rest) in ru_cases.items()], f"{name}.ru")
    normal = n.gate([and_step([en, neg(nan_out), neg(inf_out), neg(ovf)])], f"{name}.normal")
    to_inf = n.gate([and_step([en, neg(nan_out), inf_out]), and_step([en, neg(nan_out), neg(inf_out), ovf])],
                    f"{name}.toinf")
    out_sign = n.gate([and_step([en, neg(nan_out), inf_out, inf_sign]),
                       and_step([en, neg(nan_out), neg(inf_out), ovf, sign_big]),
                       and_step([en, neg(nan_out), neg(inf_out), neg(ovf), neg(zero_r), sign_big]),
                       and_step([en, neg(nan_out), neg(inf_out), neg(ovf), zero_r, a[31], sb])], f"{name}.sign")
    nan_en = n.and_([en, nan_out], f"{name}.nanen")
    # ---- level 10: round and merge the special results
    return _round_merge(n, frac + field, ru, normal, nan_en, to_inf, out_sign, name)


def _is_nan(n: Netlist, x: list, name: str) -> Sig:
    """[x is a NaN pattern] in two levels (exponent all ones AND fraction nonzero): an operand
    bit may be a list of exclusive signals (a register or an immediate), so a one-level
    weighted sum would count each weight twice."""
    e1 = n.gate([and_step(x[23:31])], f"{name}.e1")
    fnz = _any(n, [_any(n, x[lo:min(lo + 8, 23)], f"{name}.fnz{lo}") for lo in (0, 8, 16)], f"{name}.fnz")
    return n.gate([and_step([e1, fnz])], name)


def lane_compare(n: Netlist, a: list, b: list, ge: Sig, eq: Sig, op: dict, used: set, name: str):
    """The float compares and FMIN/FMAX of one lane, from the ALU's unsigned compare (ge, eq).

    Returns (bit 0 of a compare result or None, [(select literal, bus)] for FMIN/FMAX).  One
    level after the compare: a NaN operand makes every compare but FSNE false; -0 == +0;
    for two negative patterns the unsigned order is reversed."""
    e_a, e_b = a[23:31], b[23:31]
    nan_a = _is_nan(n, a, f"{name}.nana")
    nan_b = _is_nan(n, b, f"{name}.nanb")
    zs = [n.gate([and_step([neg(x) for x in v[lo:min(lo + 8, 31)]])], f"{name}.zz{i}_{lo}")
          for i, v in enumerate((a, b)) for lo in range(0, 31, 8)]
    zz = n.gate([and_step(zs)], f"{name}.zz")
    a31, b31 = a[31], b[31]
    LT = [[a31, neg(b31), neg(zz)], [neg(a31), neg(b31), neg(ge)], [a31, b31, ge, neg(eq)]]
    GT = [[b31, neg(a31), neg(zz)], [neg(a31), neg(b31), ge, neg(eq)], [a31, b31, neg(ge)]]
    EQ = [[eq], [neg(eq), zz]]
    ok = [neg(nan_a), neg(nan_b)]
    cases = {"FSLT": LT, "FSLE": LT + EQ, "FSGT": GT, "FSGE": GT + EQ, "FSEQ": EQ}
    sts = [and_step([op[o]] + ok + c) for o, cs in cases.items() if o in used for c in cs]
    if "FSNE" in used:
        sts += [and_step([op["FSNE"], nan_a]), and_step([op["FSNE"], neg(nan_a), nan_b]),
                and_step([op["FSNE"]] + ok + [neg(eq), neg(zz)])]
    bit = n.gate(sts, f"{name}.cmp") if sts else None
    sel = []
    mm = [op[o] for o in ("FMIN", "FMAX") if o in used]
    if mm:
        PA = [[a31, neg(b31)], [neg(a31), neg(b31), neg(ge)], [a31, b31, ge]]  # a orders first (or equal)
        PB = [[neg(a31), b31], [neg(a31), neg(b31), ge], [a31, b31, neg(ge)]]
        fmin, fmax = op["FMIN"], op["FMAX"]
        sel_a = n.gate([and_step([fmin] + ok + c) for c in PA] + [and_step([fmax] + ok + c) for c in PB]
                       + [and_step([mm, neg(nan_a), nan_b])], f"{name}.sela")
        sel_b = n.gate([and_step([fmin] + ok + c) for c in PB] + [and_step([fmax] + ok + c) for c in PA]
                       + [and_step([mm, nan_a, neg(nan_b)])], f"{name}.selb")
        sel_nan = n.gate([and_step([mm, nan_a, nan_b])], f"{name}.selnan")
        sel = [(sel_a, a), (sel_b, b), (sel_nan, [(n.ONE, True)] * 31 + [(n.ONE, False)])]
    return bit, sel


def multiplier(n: Netlist, a: list, b: list, mul_en, fmul_en, name: str = "mul", one_en=None):
    """One array for MUL (low 32 bits of a*b) and FMUL (the 48-bit product of the mantissas,
    whose hidden bit is "exponent field nonzero"): (the 48 sum bits, the adder's level-1 groups).
    Under MUL the fraction-only products are zero and bits 0-31 are the integer product.
    Under `one_en` (FADD/FSUB on the fused datapath) the float product is a's mantissa times
    1.0's (its hidden bit alone), in the same level, so that the operand select costs none."""
    ea, eb = a[23:31], b[23:31]

    def lead(e, i):  # e's leading one is bit i: exclusive over i, their sum is [e != 0]
        return [e[i]] + [neg(v) for v in e[i + 1:]]
    cols: list[list] = [[] for _ in range(48)]
    for i in range(32):
        for j in range(32):
            in_mul = mul_en is not None and i + j < 32
            in_fmul = i < 24 and j < 24
            sts = []
            if in_mul:
                sts.append(and_step([mul_en, a[i], b[j]]))
            if in_fmul:
                if i < 23 and j < 23:
                    sts.append(and_step([fmul_en, a[i], b[j]]))
                elif i == 23 and j == 23:  # both hidden bits: both exponent fields nonzero
                    sts += [and_step([fmul_en] + lead(ea, p) + lead(eb, q)) for p in range(8) for q in range(8)]
                    if one_en is not None:
                        sts += [and_step([one_en] + lead(ea, p)) for p in range(8)]
                else:  # a hidden bit times a fraction bit, as AND steps (small sums on both sides)
                    bit, ex = (b[j], ea) if i == 23 else (a[i], eb)
                    sts += [and_step([fmul_en, bit] + lead(ex, p)) for p in range(8)]
                    if one_en is not None and j == 23:
                        sts.append(and_step([one_en, a[i]]))
            if sts:
                cols[i + j].append(n.gate(sts, f"{name}.pp{i}_{j}"))
    P, _, (G, _) = sum_columns(n, cols, f"{name}.m.c", f"{name}.m.sum", want_carry=True)
    return P, G


def fmul(n: Netlist, a: list, b: list, en, name: str = "fmul", P=None, G=None) -> list[Sig]:
    """Bits of a * b as binary32, 0 unless `en`.

    The 48-bit product P of the 24-bit mantissas (partial products, column counters, adder) is
    shifted right by rs = max(p - 23, 151 - S) (p: P's leading one, S = ea' + eb'), which puts
    the leading one on the hidden bit, or the result at the subnormal exponent; rs never needs
    to be negative for a nonzero result, so one right shifter (one-hot rs, 0..49) normalises."""
    ea, eb = a[23:31], b[23:31]
    za, nan_a, inf_a = _classify(n, a, f"{name}.a")
    zb, nan_b, inf_b = _classify(n, b, f"{name}.b")
    sign = n.xor(a[31], b[31], f"{name}.sg")
    if P is None:
        P, G = multiplier(n, a, b, None, en, name)
    # S's bits are adder sum bits, and the exponent tables' adders weight them by up to 4:
    # they read restored copies, made long before the tables are (bench/margin.py --probe
    # 1e-3: fmul.ex*_.s5 moved 1.2 K by S's errors on saxpy).
    S = [n.copy(x, f"{name}.Sc{i}") for i, x in enumerate(_exp_sum(n, a, b, za, zb, f"{name}.S"))]
    nan_out = n.gate([and_step([nan_a]), and_step([neg(nan_a), nan_b]),
                      and_step([neg(nan_a), neg(nan_b), inf_a, zb] + [neg(x) for x in b[:23]]),
                      and_step([neg(nan_a), neg(nan_b), inf_b, za] + [neg(x) for x in a[:23]])], f"{name}.nanout")
    inf_in = n.gate([and_step([neg(nan_out), inf_a]), and_step([neg(nan_out), neg(inf_a), inf_b])], f"{name}.infin")
    with n.not_before(G[0]):  # exponent tables, just in time for the shift
        S_ge = {t: n.gate(C.cmp_const_steps(S, t), f"{name}.Sge{t}") for t in sorted({151 - k for k in range(25)}
                                                                                    | {405 - k for k in range(25)})}
        S_eq = {t: n.gate([and_step(C.eq_lits(S, t))], f"{name}.Seq{t}") for t in range(103, 152)}
        S_le102 = n.gate(C.cmp_const_steps(S, 103, ge=False), f"{name}.Sle102")
        EX = {k: _plus_const(n, S[:8], k - 150, f"{name}.ex{k}_") for k in range(25)}
    # The right shift rs (one-hot), level after P.
    rs = {}
    for k in range(50):
        sts = []
        pos = k + 23
        if k < 25:
            sts.append(and_step([P[pos], S_ge[151 - k]] + [neg(t) for t in P[pos + 1:48]]))
        if k < 49:
            sts.append(and_step([S_eq[151 - k]] + [neg(t) for t in P[pos:48]]))
        else:
            sts.append(and_step([S_le102]))
        rs[k] = n.gate(sts, f"{name}.rs{k}")
    # Shifted mantissa, exponent field, round-up, overflow.
    frac = [n.gate([and_step([rs[k], P[i + k]]) for k in range(50) if i + k < 48], f"{name}.f{i}") for i in range(23)]
    field = [n.gate([and_step([rs[k], P[k + 23], EX[k][j]]) for k in range(25)], f"{name}.e{j}") for j in range(8)]
    cases = []
    for k in range(1, 49):  # guard P[k-1]; ties to even: lsb P[k] or a sticky bit below the guard
        cases.append((rs[k], P[k - 1], ([P[k]] if k < 48 else []) + P[:k - 1]))
    ru = _round_up(n, cases, f"{name}.ru")
    ovf = n.gate([and_step([rs[k], P[k + 23], S_ge[405 - k]]) for k in range(25)], f"{name}.ovf")
    normal = n.gate([and_step([en, neg(nan_out), neg(inf_in), neg(ovf)])], f"{name}.normal")
    to_inf = n.gate([and_step([en, neg(nan_out), inf_in]), and_step([en, neg(nan_out), neg(inf_in), ovf])],
                    f"{name}.toinf")
    out_sign = n.and_([en, neg(nan_out), sign], f"{name}.sign")
    nan_en = n.and_([en, nan_out], f"{name}.nanen")
    return _round_merge(n, frac + field, ru, normal, nan_en, to_inf, out_sign, name)


def _round_up(n: Netlist, cases: list, name: str) -> Sig:
    """Round to nearest even: OR over exclusive cases (select, guard, [lsb, sticky bits...])
    of select AND guard AND (any of the rest), the ORs computed beside the selects."""
    sts = []
    for sel, g, rest in cases:
        if rest:
            sts.append(and_step([sel, g, _any(n, rest, f"{name}.q{len(rest)}")]))
    return n.gate(sts, name)


def _zero_digits(n: Netlist, x: list, name: str) -> list[Sig]:
    """Per DIGIT-bit digit of x, whether it is all zeros, one level."""
    return [n.gate([and_step([neg(v) for v in x[lo:lo + C.DIGIT]])], f"{name}{g}")
            for g, lo in enumerate(range(0, len(x), C.DIGIT))]


def _negate_steps(x: list, zeros: list, i: int, gate_lits: list):
    """AND steps whose sum is bit i of -x (x_i XOR any lower bit set), firing only when every
    literal of gate_lits holds; `zeros` from _zero_digits(x)."""
    gl = list(gate_lits)
    if i == 0:
        return [and_step(gl + [x[0]])]
    g = i // C.DIGIT
    low_zero = zeros[:g] + [neg(v) for v in x[g * C.DIGIT:i]]
    return [and_step(gl + [x[i]] + low_zero), and_step(gl + [neg(x[i])]),
            and_step(gl + [neg(x[i])] + low_zero, -1)]


def i2f(n: Netlist, x: list, signed, en, name: str = "i2f") -> list[Sig]:
    """(float) of a signed (`signed` = 1) or unsigned 32-bit integer, rounded to nearest even;
    five levels: the magnitude (a negative int negated digit-wise, two levels), then the
    fraction, exponent field (127 + the leading one's position) and round-up straight from the
    leading one, then the rounding increment (two levels)."""
    zeros = _zero_digits(n, x, f"{name}.z")
    mag = []
    for i in range(32):
        sts = [and_step([neg(signed), x[i]]), and_step([signed, neg(x[31]), x[i]])]
        sts += _negate_steps(x, zeros, i, [signed, x[31]])
        mag.append(n.gate(sts, f"{name}.m{i}"))
    # The round-up weights the magnitude's bits by up to 9, and a negated bit is a wide AND
    # step: restored copies (bench/margin_static.py).
    mag = [n.copy(x_, f"{name}.mc{i}") for i, x_ in enumerate(mag)]
    sign = n.and_([en, signed, x[31]], f"{name}.sign")

    def lead(p, W):  # "mag's leading one is at p", weighted W (higher bits weigh -W)
        return [(mag[p], W)] + [(mag[q], -W) for q in range(p + 1, 32)]
    frac = []
    for i in range(23):
        frac.append(n.gate([step(lead(p, 1) + [(mag[p - 23 + i], 1)], 2) for p in range(32) if p - 23 + i >= 0],
                           f"{name}.f{i}"))
    field = [n.gate([step(lead(p, 1), 1) for p in range(32) if (127 + p) >> j & 1], f"{name}.e{j}")
             for j in range(8)]
    sts = []
    for p in range(24, 32):
        g, lsb, rest = mag[p - 24], mag[p - 23], mag[:p - 24]
        W = len(rest) + 2
        sts.append(step(lead(p, W) + [(g, W), (lsb, 1)] + [(r, 1) for r in rest], 2 * W + 1))
    ru = n.gate(sts, f"{name}.ru")
    zero = (n.ONE, False)
    return _round_merge(n, frac + field, ru, en, zero, zero, sign, name)


def f2i(n: Netlist, x: list, to_int, to_uint, name: str = "f2i") -> list[Sig]:
    """(int) / (unsigned) of a float: truncation, saturation, NaN -> 0; five levels (the
    exponent decoded, the magnitude shifted by it, then the sign and the saturated values,
    a negative result negated digit-wise)."""
    e = x[23:31]
    lead = [n.gate([and_step(C.eq_lits(e, 127 + t))], f"{name}.t{t}") for t in range(32)]  # leading bit at t
    mag = []
    for i in range(32):
        sts = []
        for t in range(i, min(i + 24, 32)):
            k = i + 23 - t
            sts.append(and_step([lead[t]] if k == 23 else [lead[t], x[k]]))
        mag.append(n.gate(sts, f"{name}.m{i}"))
    nan = _is_nan(n, x, f"{name}.nan")
    big31 = n.gate(C.cmp_const_steps(e, 158), f"{name}.ge31")  # |x| >= 2^31
    big32 = n.gate(C.cmp_const_steps(e, 159), f"{name}.ge32")
    s = x[31]
    pos_ok = n.gate([and_step([to_int, neg(s), neg(big31)]), and_step([to_uint, neg(s), neg(big32)])], f"{name}.pos")
    neg_ok = n.and_([to_int, s, neg(big31)], f"{name}.neg")
    sat_max = n.gate([and_step([to_int, neg(s), big31, neg(nan)])], f"{name}.smax")  # 0x7fffffff
    sat_min = n.and_([to_int, s, big31, neg(nan)], f"{name}.smin")  # 0x80000000 (-inf, -2^31 and below)
    sat_u = n.and_([to_uint, neg(s), big32, neg(nan)], f"{name}.su")  # 0xffffffff
    zeros = _zero_digits(n, mag, f"{name}.z")
    out = []
    for i in range(32):
        sts = [and_step([pos_ok, mag[i]])] + _negate_steps(mag, zeros, i, [neg_ok])
        sts += [and_step([sat_u])] + ([and_step([sat_max])] if i < 31 else [and_step([sat_min])])
        out.append(n.gate(sts, f"{name}.o{i}"))
    return out
