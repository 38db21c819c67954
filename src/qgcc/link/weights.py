"""Turn a placed netlist into Qwen3.5 decoder-layer tensors.

Conventions (docs/architecture.md has the derivations):
* both RMSNorm weights are 0, so with every residual dim at +-8 the normalised
  input is exactly the bipolar bit vector s = +-1;
* MLP unit 0 is the constant 256; a gate step [y >= T] (y = sum w b + c over bits)
  is the pair silu(1024(y-T) + 512) - silu(1024(y-T) + 256), whose pre-activations
  are >= 256 or <= -512, where SiLU is exactly the identity or exactly zero: the
  difference is exactly 256 or 0 and input errors cancel (level restoration); a
  gate overwrites its dim with 16*bit - 8 by also subtracting the old value (one
  pass-through unit);
* a DeltaNet head is a 128-slot memory: keys and queries are AND-decoders
  (pre-activation 128 on a match, <= -128 otherwise), values dual-rail
  (128*b, 128*(1-b)), beta = sigmoid(128) = 1, decay exp(-exp(-1000)*...) = 1.

Tensors are kept sparse (flat index, value) because a dense layer is ~200 MB.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..qwen35 import QWEN35_2B as qwen, SHAPES
from .netlist import Gate, Netlist, Step, Table
from .schedule import Placement

K = 256.0  # step sharpness: pre-activations are multiples of K
KEY = 128.0  # key/value pre-activation level


class SparseTensor:
    """Entries of a mostly-zero tensor; `dense()` rebuilds it (the documented rule)."""

    def __init__(self, shape: tuple[int, ...]):
        self.shape = shape
        self.entries: dict[int, float] = {}

    def set(self, index: tuple[int, ...], value: float) -> None:
        flat = int(np.ravel_multi_index(index, self.shape))
        if value == 0:
            self.entries.pop(flat, None)
        else:
            self.entries[flat] = float(value)

    def add(self, index: tuple[int, ...], value: float) -> None:
        flat = int(np.ravel_multi_index(index, self.shape))
        v = self.entries.get(flat, 0.0) + value
        if v == 0:
            self.entries.pop(flat, None)
        else:
            self.entries[flat] = v

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        idx = np.fromiter(self.entries.keys(), dtype=np.int64, count=len(self.entries))
        val = np.fromiter(self.entries.values(), dtype=np.float32, count=len(self.entries))
        order = np.argsort(idx)
        return idx[order], val[order]

    def dense(self) -> np.ndarray:
        idx, val = self.arrays()
        out = np.zeros(int(np.prod(self.shape)), dtype=np.float32)
        out[idx] = val
        return out.reshape(self.shape)


@dataclass
class LayerWeights:
    kind: str  # "linear_attention"
    tensors: dict[str, SparseTensor]
    mlp_units: int  # units in use (the fast engine keeps only these)
    heads: int  # DeltaNet heads in use


def build_weights(net: Netlist, pl: Placement) -> list[LayerWeights]:
    layers = []
    one = pl.dim[net.ONE]
    last = pl.num_layers - 1
    for L in range(pl.num_layers):
        t = {name: SparseTensor(shape) for name, shape in SHAPES.items()}
        # Stock settings that make the DeltaNet an exact memory (even for unused heads).
        for h in range(qwen.linear_heads):
            t["linear_attn.A_log"].set((h,), -1000.0)
        for c in range(3 * qwen.key_dim):
            t["linear_attn.conv1d.weight"].set((c, 0, qwen.conv_kernel - 1), 1.0)
        t["linear_attn.norm.weight"].entries = {i: 1.0 for i in range(qwen.head_dim)}
        gp, up, dn = t["mlp.gate_proj.weight"], t["mlp.up_proj.weight"], t["mlp.down_proj.weight"]
        # Unit 0: the constant K.
        gp.set((0, one), K)
        up.set((0, one), 1.0)
        u = 1

        def overwrite(d: int) -> None:
            """Subtract the old value of dim d and the constant 8 (new value added by the caller)."""
            nonlocal u
            gp.set((u, one), K)
            up.set((u, d), 1.0)
            dn.set((d, u), -8.0 / K)
            dn.add((d, 0), -8.0 / K)
            u += 1

        def emit_steps(steps, outs) -> None:
            """Two units per step; `outs[k]` lists (dim, coef) fed by step k.

            With y = sum(w b) + const the units are silu(4K(y-T) + 2K) and silu(4K(y-T) + K):
            both pre-activations are >= K or <= -2K for every integer y, where SiLU is exactly
            the identity or exactly 0, so their difference is exactly K (y >= T) or 0 and an
            error e in the inputs shifts both equally and cancels: every gate restores levels.
            """
            nonlocal u
            for k, st in enumerate(steps):
                W = sum(w for _, w in st.terms)
                for shift in (2, 1):
                    for x, w in st.terms:
                        gp.add((u, pl.dim[x]), 2 * K * w)
                    gp.add((u, one), 4 * K * (W / 2 + st.const - st.T) + K * shift)
                    up.set((u, one), 1.0)
                    for d, coef in outs[k]:
                        dn.add((d, u), (16.0 / K) * coef * (1 if shift == 2 else -1))
                    u += 1

        for s in pl.layer_gates[L]:
            node = net.nodes[s]
            if isinstance(node, Table):
                outdims = [pl.dim[o] for o in pl.table_outputs[s]]
                for d in outdims:
                    overwrite(d)
                outs = [[(outdims[j], c[k]) for j, c in enumerate(node.coefs) if k in c]
                        for k in range(len(node.steps))]
                emit_steps(node.steps, outs)
                continue
            assert isinstance(node, Gate)
            d = pl.dim[s]
            overwrite(d)
            emit_steps(node.steps, [[(d, st.coef)] for st in node.steps])
        if L == last:
            for inp, new in pl.copies:
                d = pl.dim[inp]
                overwrite(d)
                emit_steps([Step(((new, 1),), 0, 1)], [[(d, 1)]])
        for rl, d in pl.read_dims:
            if rl == L:
                overwrite(d)  # bit 0, so that the memory read can add its word
        assert u <= qwen.intermediate, (L, u)

        qkv, z, bproj = t["linear_attn.in_proj_qkv.weight"], t["linear_attn.in_proj_z.weight"], \
            t["linear_attn.in_proj_b.weight"]
        out = t["linear_attn.out_proj.weight"]
        for h, mi in enumerate(pl.layer_heads[L]):
            m = net.memories[mi]
            for base, keys in ((0, m.read_keys), (qwen.key_dim, m.write_keys)):
                for j, pat in enumerate(keys):
                    if not pat:
                        continue
                    row = base + h * qwen.head_dim + j
                    for x, pol in pat:
                        qkv.add((row, pl.dim[x]), KEY if pol else -KEY)
                    qkv.add((row, one), KEY * (1 - len(pat)))
            vbase = 2 * qwen.key_dim + h * qwen.head_dim
            for i, x in enumerate(m.value):
                qkv.set((vbase + 2 * i, pl.dim[x]), KEY)
                qkv.set((vbase + 2 * i + 1, pl.dim[x]), -KEY)
            bproj.set((h, one), KEY)
            for e in range(qwen.head_dim):
                z.set((h * qwen.head_dim + e, one), KEY)
            # A stored 1 reads back (after the gated RMSNorm) as sqrt(128/width) * silu(128).
            level = math.sqrt(qwen.head_dim / m.width) * KEY
            for i, o in enumerate(m.outputs):
                out.set((pl.dim[o], h * qwen.head_dim + 2 * i), 16.0 / level)
        units_used = u
        layers.append(LayerWeights("linear_attention", t, units_used, len(pl.layer_heads[L])))
    return layers
