"""Float circuit pieces shared by the float unit (`fpu`: FADD, FMUL, conversions) and the fused
multiply-add datapath (`ffma`): operand classification, exponent sums, parity, rounding.

Their own module so that `fpu` (which builds `ffma` into the unit) and `ffma` (which uses these
pieces) do not import each other.
"""

from __future__ import annotations

from .. import circuits as C
from ..circuits import and_step, neg, step
from ..netlist import Netlist, Sig


def _parity3(n: Netlist, x, y, z, name: str) -> Sig:
    pairs = [(x, 1), (y, 1), (z, 1)]
    return n.gate([step(pairs, 1), step(pairs, 2, -1), step(pairs, 3)], name)


def _classify(n: Netlist, x: list, name: str):
    """(exponent == 0, NaN, infinity) of a binary32 pattern: the zero test in one level, NaN and
    infinity in two (exponent all ones, fraction nonzero, then an AND), with weights 1."""
    e, f = x[23:31], x[:23]
    z = n.gate([and_step([neg(v) for v in e])], f"{name}.z")
    e1 = n.gate([and_step(e)], f"{name}.e1")
    fnz = _any(n, f, f"{name}.fnz")
    nan = n.gate([and_step([e1, fnz])], f"{name}.nan")
    inf = n.gate([and_step([e1, neg(fnz)])], f"{name}.inf")
    return z, nan, inf


def _any(n: Netlist, x: list, name: str) -> Sig:
    """OR of the literals x: one level, two for more than 24 literals (ORs of 16 first), so
    that no row sums more terms than the integer machine's."""
    return C.any_of(n, x, name)


def _eff_exp(x: list, z: Sig) -> list:
    """The effective exponent (1 for a zero field) as literals: bit 0 is the list
    [e_0, z], whose two signals never both hold."""
    e = list(x[23:31])
    return [[e[0], z]] + e[1:]


def _exp_sum(n: Netlist, a: list, b: list, za: Sig, zb: Sig, name: str) -> list[Sig]:
    """ea' + eb' (effective exponents: 1 for a zero exponent field), 9 bits, three levels."""
    out, carry, _ = C.add(n, _eff_exp(a, za), _eff_exp(b, zb), name=name, want_carry=True)
    return out + [carry]


def _round_merge(n: Netlist, x: list, ru, normal, nan_en, to_inf, sign, name: str,
                 passed: tuple | None = None) -> list[Sig]:
    """{exponent field, fraction} + round-up in two levels (a carry out of the fraction bumps the
    exponent; out of 254 it gives infinity), merged with the NaN and infinity results (and with
    `passed` = (select, bus): a bus whose bits 0-30 are the result when select holds).

    As increment_if: per digit whether it is all ones, then bit i is x_i XOR (ru AND every
    lower bit 1), as AND steps that also hold `normal`, so no weight exceeds 1."""
    ones = [n.gate([and_step(x[lo:lo + C.DIGIT])], f"{name}.ones{g}")
            for g, lo in enumerate(range(0, 30, C.DIGIT))]
    out = []
    for i in range(31):
        g, lo = divmod(i, C.DIGIT)
        lo = i - lo
        carry = [ru] + ones[:g] + x[lo:i]
        sts = [and_step([normal, x[i]]), and_step([normal, x[i]] + carry, -1),
               and_step([normal, neg(x[i])] + carry), and_step([nan_en])]
        if i >= 23:
            sts.append(and_step([to_inf]))
        if passed is not None:
            sts.append(and_step([passed[0], passed[1][i]]))
        out.append(n.gate(sts, f"{name}.o{i}"))
    return out + [sign]
