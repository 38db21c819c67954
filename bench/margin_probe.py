"""bench/margin.py --probe: the exact and a perturbed machine side by side, per MLP unit.

Twin steps both (each on its own residual and recurrent states, so errors accumulate in the
perturbed one as they do in a real run) and hands the host the perturbed residual.  At
every MLP it compares each unit's gate pre-activation p (exact) with p' (perturbed):
(p - p') / p is the fraction of the unit's distance to 0 that the noise consumed, 1 where
SiLU stops being the identity (firing) or zero (silent).  p' - p splits into the row's own
weight noise, (W' - W) x', and the error its inputs carry, W x' - W x.  Units map to gates
in build_weights' order: unit 0 the constant, then per gate its pass-through units and two
units per step.
"""
from __future__ import annotations

import numpy as np
import torch

from qgcc.engines.neural_torch import NeuralLayers, _rms
from qgcc.link.core import build_core
from qgcc.link.netlist import Table
from qgcc.link.schedule import place
from qgcc.link.weights import _low_side


def unit_names(net, pl, L: int) -> list[tuple[str, int | None, object]]:
    """(gate name, step index, the step as the MLP computes it) for each MLP unit of layer L."""
    out: list[tuple[str, int | None, object]] = [("constant", None, None)]
    for s in pl.layer_gates[L]:
        node = net.nodes[s]
        nm = net.names.get(s, f"#{s}")
        passes = len(pl.table_outputs[s]) if isinstance(node, Table) else 1
        out += [(f"{nm} (pass-through)", None, None)] * passes
        for k, st in enumerate(node.steps):
            # A single table's steps are one unit each, but for its first `restoring` (weights.emit_steps).
            one = isinstance(node, Table) and node.single and k >= node.restoring
            out += [(nm, k, st if one else _low_side(st))] * (1 if one else 2)
    return out


class Twin:
    """Steps the exact and the perturbed layers on their own residuals; records the worst units."""

    def __init__(self, prog, cm, noisy, keep: int = 5):
        m = build_core(prog)
        pl = place(m.net, cm.num_layers)
        self.names = [unit_names(m.net, pl, L) for L in range(cm.num_layers)]
        self.E, self.N = NeuralLayers(cm.layers), NeuralLayers(noisy.layers)
        self.keep, self.n, self.log, self.he = keep, 0, [], None
        self.dW = [ln.Wg - le.Wg for le, ln in zip(self.E.layers, self.N.layers)]

    def reset(self, init):
        self.E.reset(init)
        self.N.reset(init)
        self.n, self.he = 0, None

    def recurrent_state(self, layer):
        return self.N.recurrent_state(layer)

    @torch.no_grad()
    def step(self, h):
        self.n += 1
        xe = torch.from_numpy(np.ascontiguousarray(h if self.he is None else self.he, np.float32))
        xn = torch.from_numpy(np.ascontiguousarray(h, np.float32))
        for L, (le, ln, se, sn) in enumerate(zip(self.E.layers, self.N.layers, self.E.states, self.N.states)):
            xe, xn = le.mix(xe, se), ln.mix(xn, sn)
            ie, inn = _rms(xe, le.post_norm)[le.mlp_in], _rms(xn, ln.post_norm)[ln.mlp_in]
            pe, pn = le.Wg @ ie, ln.Wg @ inn
            own = self.dW[L] @ inn
            ratio = ((pe - pn) / pe).numpy()
            for r in np.argsort(-ratio)[:self.keep]:
                self.log.append((float(ratio[r]), self.n, L, int(r), float(pe[r]), float(pn[r]), float(own[r])))
            xe, xn = le.mlp(xe), ln.mlp(xn)
        self.he = xe.numpy().copy()
        return xn.numpy()


def report(twin: Twin, top: int = 8) -> None:
    flip = min((x[1] for x in twin.log if x[0] >= 1), default=None)
    before = [x for x in twin.log if flip is None or x[1] < flip]
    seen, rows = set(), []
    for x in sorted(before, key=lambda x: -x[0]):
        if (x[2], x[3]) not in seen:
            seen.add((x[2], x[3]))
            rows.append(x)
        if len(rows) == top:
            break
    if flip is not None:
        print(f"  network step {flip}: the first units across 0, in layer order (the first is the cause):")
        crossed = sorted((x for x in twin.log if x[1] == flip and x[0] >= 1), key=lambda x: (x[2], -x[0]))
        _show(twin, crossed[:3])
    print(f"  the closest units before {'it' if flip else 'the end'}:")
    _show(twin, rows)


def _show(twin: Twin, rows) -> None:
    for ratio, st, L, u, pe, pn, own in rows:
        nm, k, stp = twin.names[L][u]
        what = f"{nm} step {k}" if k is not None else nm
        if stp is not None:
            what += f" (T {stp.T}, {len(stp.terms)} terms, weights {sorted({w for _, w in stp.terms})})"
        print(f"    {ratio:5.3f} of the margin: layer {L} unit {u} {what}, network step {st}: "
              f"exact {pe:.0f}, perturbed {pn:.1f} (own row {own:+.1f}, inputs {pn - pe - own:+.1f})")
