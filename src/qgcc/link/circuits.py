"""Arithmetic circuits as threshold-gate netlists (buses are lists of bits, LSB first).

Depths are in MLP levels.  Sums inside one step stay below 2^17 in magnitude so
that fp32 evaluates them exactly (weights never exceed 2^8 per 8-bit group).
"""

from __future__ import annotations

from .netlist import Netlist, Sig, Step

Lit = tuple[Sig, bool]


def lit(x) -> Lit:
    """A literal: a signal, (signal, polarity), or a list of mutually exclusive signals whose
    sum is the bit (an OR that costs no gate), optionally as (list, polarity)."""
    if isinstance(x, int):
        return (x, True)
    if isinstance(x, list):
        return (x, True)
    return x


def wterm(l: Lit, w: int) -> tuple[list[tuple[Sig, int]], int]:
    """Weight w on a literal: (terms, const)."""
    s, pol = l
    sigs = s if isinstance(s, list) else [s]
    if pol:
        return [(x, w) for x in sigs], 0
    return [(x, -w) for x in sigs], w


def wsum(pairs) -> tuple[list[tuple[Sig, int]], int]:
    terms, const = [], 0
    for l, w in pairs:
        t, c = wterm(lit(l), w)
        terms += t
        const += c
    return terms, const


def step(pairs, T: int, coef: int = 1) -> Step:
    terms, const = wsum(pairs)
    return Step(tuple(terms), const, T, coef)


def eq_lits(bus: list, value: int) -> list:
    """The literals that hold when `bus` (LSB first) equals `value`: an AND of them is a decoder."""
    return [(b, bool((value >> i) & 1)) for i, b in enumerate(bus)]


def and_step(lits, coef: int = 1) -> Step:
    return step([(l, 1) for l in lits], len(lits), coef)


def add(n: Netlist, x: list, y: list, cin=None, en=None, name: str = "add", want_carry: bool = False):
    """x + y (+ cin) mod 2^len in three levels; x, y are literals, en gates the result.

    Level 1: per 8-bit group, generate G = [X+Y >= 256] and propagate P = [X+Y >= 255].
    Level 2: group carries C_g = [sum_{j<g} 2^j (G_j + P_j) >= 2^g].
    Level 3: bit k of group g is the parity of x + y + carry, where the carry into bit k is
    [L + C_g >= 2^k] with L the sum of the lower bits of the group; with M = 2^(k+1),
    [x + y + carry >= j] == [M(x + y) + L + C_g >= M(j - 1) + 2^k], one step each.
    With want_carry, also returns the carry out of the top bit (level 2).
    """
    width = len(x)
    assert width % 8 == 0 and len(y) == width
    groups = width // 8
    cin_pairs = [(cin, 1)] if cin is not None else []
    G, P = [], []
    for g in range(groups + (1 if want_carry else 0)):
        if g == groups:
            break
        pairs = [(v[i], 1 << (i - 8 * g)) for i in range(8 * g, 8 * g + 8) for v in (x, y)]
        if g == 0:
            pairs += cin_pairs
        G.append(n.gate([step(pairs, 256)], f"{name}.G{g}"))
        P.append(n.gate([step(pairs, 255)], f"{name}.P{g}"))
    carries: list = [cin]
    for g in range(1, groups + (1 if want_carry else 0)):
        pairs = [(G[j], 1 << j) for j in range(g)] + [(P[j], 1 << j) for j in range(g)]
        carries.append(n.gate([step(pairs, 1 << g)], f"{name}.C{g}"))
    out = []
    enp = [(en, 1024)] if en is not None else []
    E = 1024 if en is not None else 0
    for i in range(width):
        g, k = divmod(i, 8)
        M = 1 << (k + 1)
        pairs = [(x[i], M), (y[i], M)] + enp
        pairs += [(v[j], 1 << (j - 8 * g)) for j in range(8 * g, i) for v in (x, y)]
        if carries[g] is not None:
            pairs.append((carries[g], 1))
        base = (1 << k) + E
        out.append(n.gate([step(pairs, base), step(pairs, M + base, -1), step(pairs, 2 * M + base)],
                          f"{name}.s{i}"))
    if want_carry:
        return out, carries[groups], (G, P)
    return out


def compare(n: Netlist, x: list, y: list, name: str = "cmp") -> tuple[Sig, Sig]:
    """(x >= y unsigned, x == y), two levels, from the groups of x + ~y + 1."""
    width = len(x)
    groups = width // 8
    G, P = [], []
    for g in range(groups):
        pairs = [(x[i], 1 << (i - 8 * g)) for i in range(8 * g, 8 * g + 8)] + \
                [(neg(y[i]), 1 << (i - 8 * g)) for i in range(8 * g, 8 * g + 8)]
        if g == 0:
            pairs = pairs + [(n.ONE, 1)]
            # group 0 is exactly 256 iff its bytes are equal
            G.append(n.gate([step(pairs, 256)], f"{name}.G0"))
            P.append(n.gate([step(pairs, 256), step(pairs, 257, -1)], f"{name}.E0"))
            continue
        G.append(n.gate([step(pairs, 256)], f"{name}.G{g}"))
        P.append(n.gate([step(pairs, 255), step(pairs, 256, -1)], f"{name}.E{g}"))  # exactly 255
    # ge: carry out of x + ~y + 1.  Group g propagates iff its sum is >= 255, i.e. E or G.
    # t_j = G_j + P'_j where P'_j = [sum >= 255] = G_j + E_j for j >= 1; for j = 0, t_0 = 2*G_0.
    pairs = [(G[0], 2)] + [(G[j], 2 << j) for j in range(1, groups)] + [(P[j], 1 << j) for j in range(1, groups)]
    ge = n.gate([step(pairs, 1 << groups)], f"{name}.ge")
    eq = n.gate([and_step(P)], f"{name}.eq")
    return ge, eq


def neg(l) -> Lit:
    s, pol = lit(l)
    return (s, not pol)


def increment(n: Netlist, x: list[Sig], name: str = "inc") -> list[Sig]:
    """x + 1 mod 2^len in one level (bit i flips when all lower bits are 1)."""
    out = []
    for i in range(len(x)):
        pairs = [(x[i], i + 1)] + [(x[j], 1) for j in range(i)]
        if i == 0:
            out.append(n.not_(x[0], f"{name}{i}"))
        else:
            out.append(n.gate([step(pairs, i), step(pairs, 2 * i + 1, -1)], f"{name}{i}"))
    return out


def increment_if(n: Netlist, x: list[Sig], en, name: str = "cnt") -> list[Sig]:
    """x + en mod 2^len in one level: bit i flips when en and all lower bits are 1."""
    out = []
    for i in range(len(x)):
        k = i + 1  # literals below bit i, en included
        pairs = [(x[i], k + 1), (en, 1)] + [(x[j], 1) for j in range(i)]
        out.append(n.gate([step(pairs, k), step(pairs, 2 * k + 1, -1)], f"{name}{i}"))
    return out


def eq_plus(n: Netlist, x: list[Sig], plus: int, y: list[Sig], name: str = "eqp") -> Sig:
    """[x + plus == y] (plus is 0 or 1).  One level for buses up to 10 bits; wider buses are
    split at bit 8 and combined in a second level, so that no weighted sum gets large
    weights (large weights would amplify any deviation of the RMSNorm scale)."""
    if max(len(x), len(y)) <= 10:
        pairs = [(b, 1 << i) for i, b in enumerate(x)] + [(neg(b), 1 << i) for i, b in enumerate(y)]
        offset = sum(1 << i for i in range(len(y)))  # sum == x + (2^k - 1 - y)
        target = offset - plus
        return n.gate([step(pairs, target), step(pairs, target + 1, -1)], name)
    xl, xh, yl, yh = x[:8], x[8:], y[:8], y[8:]
    e_lo = eq_plus(n, xl, plus, yl, f"{name}.lo")
    e_hi = eq_plus(n, xh, 0, yh, f"{name}.hi")
    if plus == 0:
        return n.and_([e_lo, e_hi], name)
    wrap = n.and_([(b, True) for b in xl] + [(b, False) for b in yl], f"{name}.wrap")
    e_hi1 = eq_plus(n, xh, 1, yh, f"{name}.hi1")
    return n.gate([and_step([e_lo, e_hi]), and_step([wrap, e_hi1])], name)


def less_than(n: Netlist, x: list, y: list, name: str = "lt") -> Sig:
    """[x < y] unsigned for buses up to 16 bits, in two levels with small weights."""
    def lt1(a, b, nm):
        pairs = [(v, 1 << i) for i, v in enumerate(b)] + [(neg(v), 1 << i) for i, v in enumerate(a)]
        return n.gate([step(pairs, sum(1 << i for i in range(len(a))) + 1)], nm)  # b - a >= 1
    w = max(len(x), len(y))
    if w <= 10:
        return lt1(x, y, name)
    zero = (n.ONE, False)
    x = list(x) + [zero] * (w - len(x))
    y = list(y) + [zero] * (w - len(y))
    lt_hi = lt1(x[8:], y[8:], f"{name}.hi")
    lt_lo = lt1(x[:8], y[:8], f"{name}.lo")
    eq_hi = eq_plus(n, x[8:], 0, y[8:], f"{name}.eqhi")
    return n.gate([and_step([lt_hi]), and_step([neg(lt_hi), eq_hi, lt_lo])], name)


def eq_const(n: Netlist, x: list[Sig], value: int, extra=(), name: str = "") -> Step:
    lits = [(b, bool((value >> i) & 1)) for i, b in enumerate(x)] + list(extra)
    return and_step(lits)


def mux_bus(n: Netlist, sel, a: list, b: list, name: str = "mux") -> list[Sig]:
    """sel ? a : b, bitwise, one level."""
    return [n.gate([and_step([sel, a[i]]), and_step([neg(sel), b[i]])], f"{name}{i}") for i in range(len(a))]


def select_bus(n: Netlist, cases: list[tuple[list, list]], width: int, name: str = "sel") -> list[Sig]:
    """OR over mutually exclusive cases (condition literals, data bus), one level."""
    out = []
    for i in range(width):
        out.append(n.gate([and_step(list(conds) + [data[i]]) for conds, data in cases if data[i] is not None],
                          f"{name}{i}"))
    return out


def const_bits(n: Netlist, value: int, width: int) -> list:
    """Constant literals: ONE for 1 bits, not-ONE for 0 bits."""
    return [(n.ONE, True) if (value >> i) & 1 else (n.ONE, False) for i in range(width)]
