"""Static noise margin: every decision of a linked machine, ranked by an error model, no launch run.

    python bench/margin_static.py [--sample vadd,saxpy,...] [--size 1e-3] [--top 25]

bench/margin.py runs launches under noise and finds the decisions a launch happens to
reach; this ranks all of them from the netlist alone, in seconds, so a fix can be aimed
and checked before a 30-minute noise run.  The model (docs/architecture.md, "Noise
margins"), for relative weight noise e:

* a unit's own error is e |row| (|row|: the L2 norm of its gate_proj row);
* a literal read with weight w whose level is off by d moves a pre-activation by 64 w d
  (2K w on level / 8);
* a gate (a pair of units per step) restores its level: it leaves it off by
  (16 / K) sqrt(2) e |row| (input errors cancel in the pair); a one-unit ROM row does not:
  (16 / 2K) times its own and its inputs' error; a memory read is off by about 3 e 16;
* only a firing pair errs, so a gate's output carries its error at one of its two values;
  a step's input error is taken on the input patterns next to its threshold, with as many
  literals at their noisy value as such a pattern allows (exactly for weights +-1; a step
  with larger weights, an adder's sum bit, counts every literal);
* a step's lower unit sits K from 0 (a ROM row's unit 2K): its z-score is that distance
  over the root sum of squares of its own and its inputs' errors.

The errors are treated as independent Gaussians, which ranks decisions well (the weakest
here are what --probe finds crossing) without predicting any one seed.
"""
from __future__ import annotations

import argparse, math, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from margin import SAMPLES, program_and_case  # noqa: E402
from qgcc.link.core import build_core  # noqa: E402
from qgcc.link.netlist import Gate, MemRead, Table, TableOut  # noqa: E402
from qgcc.link.weights import K, _low_side  # noqa: E402


def rows(st, single: bool) -> list[float]:
    """The L2 norms of the units' gate_proj rows for one step (weights.emit_steps)."""
    W = sum(w for _, w in st.terms)
    lits = sum((2 * K * w) ** 2 for _, w in st.terms)
    if single:
        return [math.sqrt(lits + (4 * K * (W / 2 + st.const - st.T) + 2 * K) ** 2)]
    st = _low_side(st)
    W = sum(w for _, w in st.terms)
    return [math.sqrt(lits + (4 * K * (W / 2 + st.const - st.T) + K * s) ** 2) for s in (2, 1)]


def noisy_state(node, single: bool) -> int | None:
    """The value (0 or 1) at which a gate's output carries its level error, None if both.

    Only a firing pair errs: a step computed from its low side fires when it is 1; one
    computed from its complement (_low_side's coef -1) when it is 0."""
    if single:
        return 1
    states = {1 if _low_side(st).coef > 0 else 0 for st in node.steps}
    return states.pop() if len(states) == 1 else None


def input_error(st, level: dict, state: dict) -> float:
    """The input error of a step at its margin: on the input patterns with y = T - 1 or T (the
    sums next to its threshold), the most noisy literals such a pattern can hold.  Literals of
    weight +-1 are counted exactly; a step with larger weights counts every literal noisy."""
    terms = [(w, level.get(x, 0.0), state.get(x)) for x, w in st.terms]
    if any(abs(w) != 1 for w, _, _ in terms):
        return 64 * math.sqrt(sum((w * d) ** 2 for w, d, _ in terms))
    always = sum(d * d for _, d, ns in terms if ns is None)
    base, plus, minus = st.const, [], []
    for w, d, ns in terms:
        if ns is None:
            continue
        # Contribution of the literal to y when quiet (b = 1 - ns) and the change when noisy.
        base += w * (1 - ns)
        (plus if w * (2 * ns - 1) > 0 else minus).append(d * d)
    plus.sort(reverse=True)
    minus.sort(reverse=True)
    cp = [0.0] + [sum(plus[:i + 1]) for i in range(len(plus))]
    cm = [0.0] + [sum(minus[:i + 1]) for i in range(len(minus))]
    best = 0.0
    for target in (st.T - 1, st.T):
        for p in range(len(plus) + 1):
            q = base + p - target
            if 0 <= q <= len(minus):
                best = max(best, cp[p] + cm[q])
    return 64 * math.sqrt(best + always)


def analyse(net, e: float) -> list[tuple[float, str, int, float, float]]:
    """(z, gate, step, own error, input error) of every step of every gate."""
    level: dict[int, float] = {}
    state: dict[int, int | None] = {}
    out = []
    for s, node in enumerate(net.nodes):
        if isinstance(node, MemRead):
            level[s], state[s] = 3 * e * 16, None
        elif isinstance(node, TableOut):
            level[s], state[s] = level[node.table], state[node.table]
        elif isinstance(node, (Gate, Table)):
            name = net.names.get(s, f"#{s}")
            worst_level = 0.0
            for k, st in enumerate(node.steps):
                # A ROM chunk's first `restoring` steps (the previous chunk passed through) are pairs.
                single = isinstance(node, Table) and node.single and k >= node.restoring
                inp = input_error(st, level, state)
                own = e * max(rows(st, single))
                z = (2 * K if single else K) / math.hypot(own, inp)
                out.append((z, name, k, own, inp))
                if single:
                    worst_level = max(worst_level, 16 / (2 * K) * math.hypot(own, inp))
                else:
                    worst_level = max(worst_level, 16 / K * math.sqrt(2) * own)
            level[s], state[s] = worst_level, noisy_state(node, isinstance(node, Table) and node.single)
        else:
            level[s], state[s] = 0.0, None
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sample", default="vadd,saxpy,mandelbrot,warpreduce,ffma")
    ap.add_argument("--size", type=float, default=1e-3)
    ap.add_argument("--top", type=int, default=25)
    args = ap.parse_args()
    for sample in args.sample.split(","):
        if sample not in SAMPLES:
            sys.exit(f"bench/margin_static.py: --sample: no sample {sample}")
        prog, _ = program_and_case(sample)
        net = build_core(prog).net
        res = analyse(net, args.size)
        # One line per family of gates (lane and bit numbers dropped), its weakest step.
        fam: dict[str, tuple] = {}
        for r in res:
            key = "".join(c if not c.isdigit() else "#" for c in r[1])
            if key not in fam or r[0] < fam[key][0]:
                fam[key] = r
        worst = sorted(fam.values())[:args.top]
        n_low = sum(1 for r in res if r[0] < 4)
        print(f"{sample}: {len(res)} steps; {n_low} below z = 4 at e = {args.size:g}; weakest families:")
        for z, nm, k, own, inp in worst:
            print(f"  z {z:5.2f}  {nm} step {k}: own {own:6.1f}, inputs {inp:6.1f}")


if __name__ == "__main__":
    main()
