"""The exactness invariant of the compiled layers, checked on the weights the linker wrote.

Why the network's numbers do not depend on the order of any sum (docs/architecture.md,
"Numerics"): every layer input is exactly +-8 in every dimension, so each RMSNorm
divides by exactly 8 and every matrix input is exactly +-1 (or, after a SiLU, a
multiple of 256 or zero).  If every weight is a multiple of a power of two small
enough that each product is an integer, and every row's worst-case sum of absolute
products stays below 2^24, then every partial sum in every order is an integer that
float32 holds exactly: CSR, a GPU's reductions and batching all give the same bits.

`check` computes those bounds per tensor and raises if one is violated, so a future
circuit with a too-large weight fails at link time rather than as a rare low-bit
difference between engines.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

EXACT_LIMIT = 2 ** 24  # float32 holds every integer up to this
# Largest positive pre-activation a gate unit may reach.  A step [y >= T] has units
# 4K(y - T) + K or + 2K (K = 256), computed from the side of T whose sums lie closer
# (weights._low_side), so this bounds that reach by 63: wide comparisons are built digit by
# digit (qgcc.link.circuits), never as one big-weight threshold.  The bound is what
# gives the decisions their noise margin (a unit's error grows with its pre-activation, the
# margin stays K) and keeps every pre-activation a bfloat16 value (8 significant bits).
PREACT_LIMIT = 2 ** 16


@dataclass(frozen=True)
class Bounds:
    largest_weight: float  # largest |weight| in any projection
    largest_sum: float  # largest possible |partial sum| of any row, any input, any order
    largest_activation: float  # largest possible |silu(gate) * up| of any MLP unit
    largest_preactivation: float  # largest possible positive gate pre-activation of any MLP unit but unit 0
    non_bf16_weights: tuple[float, ...] = ()  # distinct |weights| that bfloat16 cannot hold exactly

    @property
    def margin_bits(self) -> float:
        """How many doublings the largest sum could take before float32 loses integers."""
        return float(np.log2(EXACT_LIMIT / max(self.largest_sum, 1.0)))


class NumericsError(AssertionError):
    pass


def _rows(st) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    idx, val = st.arrays()
    r, c = np.divmod(idx, st.shape[-1])
    return r, c, val


def _row_l1(st, col_scale: np.ndarray | None = None) -> np.ndarray:
    r, c, v = _rows(st)
    a = np.abs(v.astype(np.float64))
    if col_scale is not None:
        a = a * col_scale[c]
    return np.bincount(r, weights=a, minlength=st.shape[0])


def _integral(values: np.ndarray, scale: float) -> bool:
    x = values.astype(np.float64) * scale
    return bool(np.all(x == np.round(x)))


def _positive_reach(gate) -> np.ndarray:
    """Per MLP unit, the largest positive pre-activation on +-1 inputs: its constant (the
    column of unit 0, the constant K) plus the sum of its other absolute weights.  Only a
    positive pre-activation reaches the SiLU's output (a negative one gives exactly 0 at any
    size), so this is what bounds a unit's error under noise and its bfloat16 rounding."""
    r, c, v = _rows(gate)
    if not len(v):
        return np.zeros(gate.shape[0])
    one = c[r == 0][0]
    const = np.bincount(r, weights=np.where(c == one, v, 0.0), minlength=gate.shape[0])
    rest = np.bincount(r, weights=np.where(c == one, 0.0, np.abs(v)), minlength=gate.shape[0])
    out = const + rest
    out[0] = 0.0  # unit 0 is the constant K
    return out


def check(layers) -> Bounds:
    """Bounds of every product and sum the layers can form on an exact +-8 residual."""
    big_w = big_sum = big_act = big_pre = 0.0
    non_bf16: set[float] = set()
    for i, lw in enumerate(layers):
        t = lw.tensors
        gate, up, down = t["mlp.gate_proj.weight"], t["mlp.up_proj.weight"], t["mlp.down_proj.weight"]
        # MLP inputs are +-1: gate and up rows sum integer products (gate weights are integers).
        g1 = _row_l1(gate)
        u1 = _row_l1(up)
        # |silu(y) * u| <= max(y, 0.28) * |u|: SiLU is below y for y > 0 and 0.28 in size for y < 0
        act = np.maximum(_positive_reach(gate), 0.28) * u1
        act[0] = g1[0] * u1[0]
        d1 = _row_l1(down, act)
        # Down weights are multiples of 1/32 and every activation a multiple of 256.
        for name, st, scale in (("gate", gate, 1.0), ("down", down, 32.0)):
            _, v = st.arrays()
            if not _integral(v, scale):
                raise NumericsError(f"layer {i}: {name} weights are not multiples of 1/{scale:g}")
        # Key and query rows are integer decoders; a value row has one term (its bit, or the
        # constant rail), whose product is exact whatever the value level.
        qkv = t["linear_attn.in_proj_qkv.weight"]
        q1 = _row_l1(qkv)
        r, _, v = _rows(qkv)
        terms = np.bincount(r, minlength=qkv.shape[0])
        if not _integral(v[terms[r] > 1], 1.0):
            raise NumericsError(f"layer {i}: an in_proj_qkv row of several terms has a non-integer weight")
        for name, st in t.items():
            if name.endswith("_proj.weight") or name.endswith("in_proj_qkv.weight"):
                big_w = max(big_w, float(np.abs(st.arrays()[1]).max(initial=0.0)))
            _, v = st.arrays()
            lost = v[(np.abs(v).astype(np.float32).view(np.uint32) & 0xFFFF) != 0]  # bits below bf16's 8
            non_bf16.update(float(x) for x in np.unique(np.abs(lost)))
        worst = max(g1.max(initial=0), d1.max(initial=0), q1.max(initial=0))
        if worst >= EXACT_LIMIT:
            raise NumericsError(f"layer {i}: a row's sum can reach {worst:.0f}, beyond 2^24 "
                                "where float32 stops holding every integer")
        big_sum = max(big_sum, float(worst))
        big_act = max(big_act, float(act.max(initial=0)))
        pos = _positive_reach(gate)
        pre = float(pos.max(initial=0))
        if pre >= PREACT_LIMIT:
            row = int(np.argmax(pos))
            raise NumericsError(f"layer {i}: MLP unit {row} can reach a pre-activation of {pre:.0f} "
                                f"(limit {PREACT_LIMIT}): a threshold gate with large weights; build wide "
                                "comparisons digit by digit (qgcc.link.circuits)")
        big_pre = max(big_pre, pre)
    return Bounds(big_w, big_sum, big_act, big_pre, tuple(sorted(non_bf16)))
