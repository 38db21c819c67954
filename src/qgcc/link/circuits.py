"""Arithmetic circuits as threshold-gate netlists (buses are lists of bits, LSB first).

Depths are in MLP levels.  Wide operations work digit by digit (DIGIT = 2 bits) and
combine the digits with AND steps, so every step's weighted sum stays within a few tens
of its threshold (`reach`): the noise margin and the bfloat16 range of every gate
depend on that bound, which qgcc.link.numerics checks at every link.
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


DIGIT = 2  # bits per digit of every wide add, comparison and equality (see reach())


def reach(st: Step) -> int:
    """How far, in units of the weighted sum, a step's reachable sums lie from its threshold.

    A step fires when y = const + sum(w b) >= T; over all inputs y spans
    [const + sum(w < 0), const + sum(w > 0)], so the pre-activation 4K(y - T) + ... of its
    MLP units spans at most 4K * reach.  Small reaches are what give the machine its noise
    margin (a relative weight error e moves a pre-activation by about e * reach units of 4K,
    against a decision margin of 1/4 unit) and keep every pre-activation representable in
    bfloat16.  Circuits keep it within 2^DIGIT-scale bounds by working digit by digit.
    """
    hi = st.const + sum(w for _, w in st.terms if w > 0)
    lo = st.const + sum(w for _, w in st.terms if w < 0)
    return max(hi - st.T, st.T - lo - 1, 0)


def gated(st: Step, en) -> Step:
    """The step, able to fire only when literal `en` is 1.

    `en` gets the smallest weight that holds the step below its threshold when it is 0
    (one more than the step's reach above T), not a large constant: an AND step just
    gains one literal.
    """
    hi = st.const + sum(w for _, w in st.terms if w > 0)
    E = max(1, hi - st.T + 1)
    t, c = wterm(lit(en), E)
    return Step(st.terms + tuple(t), st.const + c, st.T + E, st.coef)


def _pad(n: Netlist, bus: list, width: int) -> list:
    return list(bus) + [(n.ONE, False)] * (width - len(bus))


def _digit_pairs(xs: list, ys: list) -> tuple[list, int]:
    """Weighted pairs of D = X + (top - Y) for one digit, and top = 2^len - 1."""
    pairs = [(x, 1 << i) for i, x in enumerate(xs)] + [(neg(y), 1 << i) for i, y in enumerate(ys)]
    return pairs, (1 << len(xs)) - 1


def digit_compare(n: Netlist, x: list, y: list, name: str = "dc", want_gt: bool = True):
    """Per DIGIT-bit digit, LSB first: ([X_g > Y_g], [X_g == Y_g]), one level.

    D = X_g + (top - Y_g) lies in [0, 2 top]: X_g > Y_g iff D > top, equal iff D == top,
    so every step's reach is at most top = 15.
    """
    w = max(len(x), len(y))
    x, y = _pad(n, x, w), _pad(n, y, w)
    gt, eq = [], []
    for g, lo in enumerate(range(0, w, DIGIT)):
        pairs, top = _digit_pairs(x[lo:lo + DIGIT], y[lo:lo + DIGIT])
        if want_gt:
            gt.append(n.gate([step(pairs, top + 1)], f"{name}.gt{g}"))
        eq.append(n.gate([step(pairs, top), step(pairs, top + 1, -1)], f"{name}.eq{g}"))
    return gt, eq


def greater_steps(gt: list, eq: list, or_equal: bool, extra=()) -> list[Step]:
    """Mutually exclusive AND steps whose sum is [x > y] (or [x >= y]), from digit_compare(x, y).

    x > y iff some digit j is greater and every digit above it equal; at most one j can hold.
    `extra` literals are ANDed into every step (an enable costs one literal, not a big weight).
    """
    extra = list(extra)
    steps = [and_step([gt[j]] + eq[j + 1:] + extra) for j in range(len(gt))]
    if or_equal:
        steps.append(and_step(eq + extra))
    return steps


def add(n: Netlist, x: list, y: list, cin=None, name: str = "add", want_carry: bool = False,
        want_groups: bool = False, y_late: list | None = None):
    """x + y (+ cin) mod 2^len in three levels; x, y are literals (LSB first).

    Level 1: per DIGIT-bit group, generate G = [X + Y >= 2^DIGIT] and propagate exactly
    P = [X + Y == 2^DIGIT - 1].
    Level 2: the carry into group g is the OR of the mutually exclusive terms
    G_j AND P_{j+1} AND ... AND P_{g-1}, and cin AND P_0 AND ... AND P_{g-1}: one AND step
    each, so no weight exceeds 1.  (For x + ~y + 1, G and P are the digits' x > y and
    x == y, which is why a compare can share a subtractor's groups: want_groups.)
    Level 3: bit k of group g is the parity of x + y + carry, where the carry into bit k is
    [L + C_g >= 2^k] with L the sum of the lower bits of the group; with M = 2^(k+1),
    [x + y + carry >= j] == [M(x + y) + L + C_g >= M(j - 1) + 2^k], one step each.
    With want_carry, also returns the carry out of the top bit (level 2).
    An enable is the consumer's business (an AND literal where the sum is used), so that
    no step carries a large enable weight.
    y_late: literals equal to y for level 3 only, where y's weights reach 2^DIGIT: a caller
    whose y is noisy (a wide OR's output, or a pair of them taken as one literal) passes
    copies restored in level 1, so that its errors are not multiplied by 4 (ffma's
    exponent field).
    """
    width = len(x)
    assert width % DIGIT == 0 and len(y) == width
    groups = width // DIGIT
    full = 1 << DIGIT
    G, P = [], []
    for g in range(groups):
        lo = DIGIT * g
        pairs = [(v[i], 1 << (i - lo)) for i in range(lo, lo + DIGIT) for v in (x, y)]
        G.append(n.gate([step(pairs, full)], f"{name}.G{g}"))
        P.append(n.gate([step(pairs, full - 1), step(pairs, full, -1)], f"{name}.P{g}"))
    carries: list = [cin]
    for g in range(1, groups + (1 if want_carry else 0)):
        terms = [and_step([G[j]] + P[j + 1:g]) for j in range(g)]
        if cin is not None:
            terms.append(and_step([cin] + P[:g]))
        carries.append(n.gate(terms, f"{name}.C{g}"))
    out = []
    for i in range(width):
        g, k = divmod(i, DIGIT)
        M = 1 << (k + 1)
        y3 = y if y_late is None else y_late
        pairs = [(x[i], M), (y3[i], M)]
        pairs += [(v[j], 1 << (j - DIGIT * g)) for j in range(DIGIT * g, i) for v in (x, y3)]
        if carries[g] is not None:
            pairs.append((carries[g], 1))
        base = 1 << k
        out.append(n.gate([step(pairs, base), step(pairs, M + base, -1), step(pairs, 2 * M + base)],
                          f"{name}.s{i}"))
    if want_carry:
        return out, carries[groups], (G, P)
    if want_groups:
        return out, (G, P)
    return out


def compare(n: Netlist, x: list, y: list, name: str = "cmp", digits=None) -> tuple[Sig, Sig]:
    """(x >= y unsigned, x == y), two levels, digit by digit (`digits`: a subtractor's
    (G, P) groups of x + ~y, which are the digits' (x > y, x == y))."""
    gt, eq = digits if digits is not None else digit_compare(n, x, y, name)
    ge = n.gate(greater_steps(gt, eq, True), f"{name}.ge")
    return ge, n.and_(eq, f"{name}.eq")


def neg(l) -> Lit:
    s, pol = lit(l)
    return (s, not pol)


def increment(n: Netlist, x: list[Sig], name: str = "inc") -> list[Sig]:
    """x + 1 mod 2^len in two levels: bit i flips when every lower bit is 1.

    Level 1: per DIGIT-bit digit, whether it is all ones.  Level 2: bit i is
    x_i XOR c_i with c_i the AND of the lower digits' all-ones and the lower bits of its
    own digit, as three AND steps ([x_i] - [x_i AND c_i] + [not x_i AND c_i]), so no row
    carries more than a few literals.
    """
    ones = [n.and_(x[lo:lo + DIGIT], f"{name}.ones{g}") for g, lo in enumerate(range(0, len(x) - DIGIT, DIGIT))]
    out = []
    for i in range(len(x)):
        g, lo = i // DIGIT, i - i % DIGIT
        carry = ones[:g] + x[lo:i]
        if not carry:
            out.append(n.not_(x[i], f"{name}{i}"))
            continue
        out.append(n.gate([and_step([x[i]]), and_step([x[i]] + carry, -1), and_step([neg(x[i])] + carry)],
                          f"{name}{i}"))
    return out


def increment_if(n: Netlist, x: list[Sig], en, name: str = "cnt") -> list[Sig]:
    """x + en mod 2^len in two levels, as increment() with `en` joining every carry."""
    ones = [n.and_(x[lo:lo + DIGIT], f"{name}.ones{g}") for g, lo in enumerate(range(0, len(x) - DIGIT, DIGIT))]
    out = []
    for i in range(len(x)):
        g, lo = i // DIGIT, i - i % DIGIT
        carry = [en] + ones[:g] + x[lo:i]
        out.append(n.gate([and_step([x[i]]), and_step([x[i]] + carry, -1), and_step([neg(x[i])] + carry)],
                          f"{name}{i}"))
    return out


def eq_plus(n: Netlist, x: list, plus: int, y: list, name: str = "eqp") -> Sig:
    """[x + plus == y] as integers (plus is 0 or 1; no wrap-around), two levels, digit by digit.

    x + 1 == y iff for some digit j: the digits below j wrap (x all ones, y all zeros),
    digit j steps by one (X_j + 1 == Y_j) and the digits above are equal; at most one
    j can hold, so the OR is a sum of AND steps.
    """
    w = max(len(x), len(y))
    x, y = _pad(n, x, w), _pad(n, y, w)
    _, e0 = digit_compare(n, x, y, name, want_gt=False)
    if plus == 0:
        return n.and_(e0, name)
    e1, wrap = [], []
    for g, lo in enumerate(range(0, w, DIGIT)):
        xs, ys = x[lo:lo + DIGIT], y[lo:lo + DIGIT]
        pairs, top = _digit_pairs(xs, ys)  # X + 1 == Y iff D == top - 1
        e1.append(n.gate([step(pairs, top - 1), step(pairs, top, -1)], f"{name}.e1{g}"))
        wrap.append(n.and_([lit(b) for b in xs] + [neg(b) for b in ys], f"{name}.w{g}"))
    return n.gate([and_step(wrap[:j] + [e1[j]] + e0[j + 1:]) for j in range(len(e1))], name)


def less_than(n: Netlist, x: list, y: list, name: str = "lt", extra=()) -> Sig:
    """[x < y] unsigned (AND the `extra` literals), in two levels with weights below 2^DIGIT."""
    gt, eq = digit_compare(n, y, x, name)
    return n.gate(greater_steps(gt, eq, False, extra), name)


def at_least(n: Netlist, x: list, y: list, name: str = "ge", extra=()) -> Sig:
    """[x >= y] unsigned (AND the `extra` literals), in two levels with weights below 2^DIGIT."""
    gt, eq = digit_compare(n, x, y, name)
    return n.gate(greater_steps(gt, eq, True, extra), name)


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


def cmp_const_steps(x: list, c: int, ge: bool = True, extra=()) -> list[Step]:
    """Mutually exclusive AND steps whose sum is [x >= c] (ge) or [x < c], for a constant c
    and unsigned x (LSB first), so one level with no weight above 1.

    x >= c iff x == c, or for some bit j where c has 0 and x has 1 every higher bit equals
    c's; x < c likewise where c has 1 and x has 0.  At most one j can hold."""
    extra = list(extra)
    w = len(x)
    if c >= 1 << w:
        return [] if ge else [and_step(extra)]
    bits = eq_lits(x, c)
    steps = [and_step(extra + bits)] if ge else []
    for j in range(w):
        cj = (c >> j) & 1
        if (ge and cj == 0) or (not ge and cj == 1):
            steps.append(and_step(extra + [(x[j], ge)] + bits[j + 1:]))
    return steps


def plus_const(n: Netlist, x: list, c: int, name: str = "pc") -> list[Sig]:
    """(x + c) mod 2^len(x), in three levels: add() with a constant addend."""
    w = len(x)
    pad = w % DIGIT
    xs = list(x) + [(n.ONE, False)] * pad
    out = add(n, xs, const_bits(n, c % (1 << len(xs)), len(xs)), name=name)
    return out[:w]


def any_of(n: Netlist, lits: list, name: str, flat: int = 24, group: int = 16) -> Sig:
    """OR of the literals: one level up to `flat` of them, else ORs of `group` first.

    An OR is computed from its quiet side, a NOR whose constant grows with its width, and
    the constant's weight noise reaches every consumer at full weight (docs/architecture.md,
    "Numerics"): wide ORs are built as trees of narrow ones."""
    if len(lits) > flat:
        lits = [n.gate([step([(v, 1) for v in lits[lo:lo + group]], 1)], f"{name}.{lo}")
                for lo in range(0, len(lits), group)]
    return n.gate([step([(v, 1) for v in lits], 1)], name)
