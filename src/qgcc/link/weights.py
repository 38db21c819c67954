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
  (V*b, V*(1-b)) with V = VALUE_LEVEL, padded to VALUE_RAILS nonzero entries,
  beta = sigmoid(128) = 1, decay exp(-exp(-1000)*...) = 1;
* every value the network forms is then exactly representable: a read adds exactly
  16 (see `value_level`), so the residual is exactly +-8 after every sublayer and every
  product and sum is exact in any order (docs/architecture.md, "Numerics").

Tensors are kept sparse (flat index, value) because a dense layer is ~200 MB.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..qwen35 import QWEN35_2B as qwen, SHAPES
from .netlist import ONEHOT4_RAILS, Gate, Netlist, Step, Table
from .schedule import Placement

K = 256.0  # step sharpness: pre-activations are multiples of K
KEY = 128.0  # key/query pre-activation level (and the z gate: silu(128) == 128)
VALUE_RAILS = 32  # nonzero entries of every stored row (dual-rail bits + constant pad rails)
READ_ADD = 16.0  # what a read of a 1 bit adds to its residual dimension (-8 -> +8)


def value_level(head_dim: int = qwen.head_dim) -> float:
    """The stored level V of a value rail, chosen so that a read is exact in float32.

    A read is o = S^T q with q the one-hot query after the stock L2 norm (exactly 1.0)
    divided by sqrt(head_dim): o = V * fl(1/sqrt(128)).  With V = 128 that product is
    11.3137..., and the gated RMSNorm after it leaves a read of 15.999999 instead of 16,
    which makes later sums depend on their order.  V is the float32 next to
    16 * sqrt(128) whose product with fl(1/sqrt(128)) rounds to exactly 16.  Then every
    stored row has VALUE_RAILS = 32 entries of 16 and 96 zeros, its mean square is
    exactly 64, rsqrt(64 + 1e-6) is exactly 1/8, each rail reads back as exactly 2, the
    z gate multiplies by silu(128) = 128 and out_proj by 1/16: exactly 16.
    """
    scale = np.float32(1.0) / np.float32(head_dim ** 0.5)
    guess = np.float32(16.0 / float(scale))
    bits = guess.view(np.int32)
    for k in sorted(range(-16, 17), key=abs):
        v = np.int32(bits + k).view(np.float32)
        if np.float32(v * scale) == np.float32(16.0):
            return float(v)
    raise AssertionError("no float32 value level reads back as exactly 16")


VALUE_LEVEL = value_level()  # 181.01934814453125


class SparseTensor:
    """Entries of a mostly-zero tensor; `dense()` rebuilds it (the documented rule).

    Built entry by entry at link time (a dict), or loaded as sorted (index, value) arrays
    from a .qg or checkpoint; the dict is made only if a loaded tensor is edited, so
    loading a network costs no per-entry Python work.
    """

    def __init__(self, shape: tuple[int, ...]):
        self.shape = shape
        self._entries: dict[int, float] | None = {}
        self._arrays: tuple[np.ndarray, np.ndarray] | None = None
        strides, acc = [], 1
        for n in reversed(shape):
            strides.append(acc)
            acc *= n
        self._strides = tuple(reversed(strides))

    def _flat(self, index: tuple[int, ...]) -> int:
        """Row-major flat index (np.ravel_multi_index's, at a fraction of its per-call cost:
        the linker calls this about a million times)."""
        if len(index) == 2 and len(self.shape) == 2:
            i, j = index
            rows, cols = self.shape
            if 0 <= i < rows and 0 <= j < cols:
                return i * cols + j
        flat = 0
        for i, n, st in zip(index, self.shape, self._strides):
            if not 0 <= i < n:
                raise IndexError(f"index {index} out of bounds for shape {self.shape}")
            flat += i * st
        return flat

    @classmethod
    def from_arrays(cls, shape: tuple[int, ...], idx: np.ndarray, val: np.ndarray) -> "SparseTensor":
        st = cls(shape)
        order = np.argsort(idx, kind="stable")
        keep = val[order] != 0
        st._entries = None
        st._arrays = (np.asarray(idx, np.int64)[order][keep], np.asarray(val, np.float32)[order][keep])
        return st

    @property
    def entries(self) -> dict[int, float]:
        if self._entries is None:
            idx, val = self._arrays
            self._entries = dict(zip(idx.tolist(), val.tolist()))
        self._arrays = None  # the dict may now change
        return self._entries

    @entries.setter
    def entries(self, value: dict[int, float]) -> None:
        self._entries, self._arrays = value, None

    def __len__(self) -> int:
        return len(self._arrays[0]) if self._arrays is not None else len(self._entries)

    def set(self, index: tuple[int, ...], value: float) -> None:
        flat = self._flat(index)
        entries = self._entries if self._arrays is None else self.entries
        if value == 0:
            entries.pop(flat, None)
        else:
            entries[flat] = float(value)

    def add(self, index: tuple[int, ...], value: float) -> None:
        # The linker's two million calls: a matrix's flat index inline (what _flat computes).
        shape = self.shape
        if len(index) == 2 and len(shape) == 2 and 0 <= index[0] < shape[0] and 0 <= index[1] < shape[1]:
            flat = index[0] * shape[1] + index[1]
        else:
            flat = self._flat(index)
        entries = self._entries if self._arrays is None else self.entries
        v = entries.get(flat, 0.0) + value
        if v == 0:
            entries.pop(flat, None)
        else:
            entries[flat] = v

    def add_row(self, i: int, cols: list[int], values: list[float]) -> None:
        """`add((i, j), v)` for each j, v in turn (one call for a gate's whole row of terms)."""
        rows, ncols = self.shape
        entries = self._entries if self._arrays is None else self.entries
        for j, value in zip(cols, values):
            if not (0 <= i < rows and 0 <= j < ncols):
                self._flat((i, j))  # raises IndexError
            flat = i * ncols + j
            v = entries.get(flat, 0.0) + value
            if v == 0:
                entries.pop(flat, None)
            else:
                entries[flat] = v

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        if self._arrays is None:
            e = self._entries
            idx = np.fromiter(e.keys(), dtype=np.int64, count=len(e))
            val = np.fromiter(e.values(), dtype=np.float32, count=len(e))
            order = np.argsort(idx)
            self._arrays = (idx[order], val[order])
        return self._arrays

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


def _low_side(st: Step) -> Step:
    """The step as the MLP computes it: [y >= T], or its complement [-y >= 1 - T] (coef -1)
    when that keeps the units' positive pre-activations smaller.

    A unit's pre-activation is positive only on the side of the threshold where its step
    fires, and its error under weight noise grows with it, so a step is computed from the
    side whose reachable sums lie closer to the threshold: an OR of many inputs becomes a
    NOR whose units are positive only when every input is 0 (at 2K, the least possible).
    """
    hi = st.const + sum(w for _, w in st.terms if w > 0)
    lo = st.const + sum(w for _, w in st.terms if w < 0)
    if st.T - 1 - lo < hi - st.T:
        return Step(tuple((x, -w) for x, w in st.terms), -st.const, 1 - st.T, -1)
    return Step(st.terms, st.const, st.T, 1)


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

        def emit_steps(steps, outs, single: bool = False, restoring: int = 0) -> None:
            """Two units per step (one per step of a `single` table past its first `restoring`);
            `outs[k]` lists (dim, coef) fed by step k.

            With y = sum(w b) + const the units are silu(4K(y-T) + 2K) and silu(4K(y-T) + K):
            both pre-activations are >= K or <= -2K for every integer y, where SiLU is exactly
            the identity or exactly 0, so their difference is exactly K (y >= T) or 0 and an
            error e in the inputs shifts both equally and cancels: every gate restores levels.
            """
            nonlocal u
            for k, st in enumerate(steps):
                if single and k >= restoring:
                    # An AND step (y <= T for every input): the first unit alone is exactly 2K
                    # (y == T) or exactly 0 (pre-activation <= -2K), so it carries the bit.
                    W = sum(w for _, w in st.terms)
                    for x, w in st.terms:
                        gp.add((u, pl.dim[x]), 2 * K * w)
                    gp.add((u, one), 4 * K * (W / 2 + st.const - st.T) + 2 * K)
                    up.set((u, one), 1.0)
                    for d, coef in outs[k]:
                        dn.add((d, u), (16.0 / (2 * K)) * coef)
                    u += 1
                    continue
                st, outs_k = _low_side(st), outs[k]
                if st.coef < 0:  # flipped: [y >= T] = 1 - [-y >= 1 - T], the 1 from unit 0 (K)
                    for d, coef in outs_k:
                        dn.add((d, 0), (16.0 / K) * coef)
                    outs_k = [(d, -coef) for d, coef in outs_k]
                W = sum(w for _, w in st.terms)
                dims = [pl.dim[x] for x, _ in st.terms]
                weights = [2 * K * w for _, w in st.terms]
                for shift in (2, 1):
                    gp.add_row(u, dims, weights)
                    gp.add((u, one), 4 * K * (W / 2 + st.const - st.T) + K * shift)
                    up.set((u, one), 1.0)
                    for d, coef in outs_k:
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
                emit_steps(node.steps, outs, node.single, node.restoring)
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
            # A stored 1 reads back (after the gated RMSNorm) as sqrt(128/32) * silu(128) = 256.
            level = math.sqrt(qwen.head_dim / VALUE_RAILS) * KEY
            if m.encoding == "onehot4":
                # Two words a slot: each rail is one residual bit (V or, after SiLU, exactly 0),
                # one of each group of four set, so every row has VALUE_RAILS nonzero entries;
                # out_proj adds a word bit's two rails (at most one of them is set).
                assert len(m.value) == 4 * VALUE_RAILS
                for r, x in enumerate(m.value):
                    qkv.set((vbase + r, pl.dim[x]), VALUE_LEVEL)
                for k, o in enumerate(m.outputs):
                    w, i = divmod(k, 32)
                    for c in ONEHOT4_RAILS[w]:
                        out.set((pl.dim[o], h * qwen.head_dim + 4 * i + c), READ_ADD / level)
            else:
                for i, x in enumerate(m.value):
                    qkv.set((vbase + 2 * i, pl.dim[x]), VALUE_LEVEL)
                    qkv.set((vbase + 2 * i + 1, pl.dim[x]), -VALUE_LEVEL)
                # Constant rails bring every stored row to VALUE_RAILS nonzero entries, so that
                # the read's mean square (and with it the gated RMSNorm) is the same exact constant.
                for p in range(VALUE_RAILS - m.width):
                    qkv.set((vbase + 2 * m.width + p, one), VALUE_LEVEL)
                for i, o in enumerate(m.outputs):
                    out.set((pl.dim[o], h * qwen.head_dim + 2 * i), READ_ADD / level)
            bproj.set((h, one), KEY)
            for e in range(qwen.head_dim):
                z.set((h * qwen.head_dim + e, one), KEY)
        units_used = u
        layers.append(LayerWeights("linear_attention", t, units_used, len(pl.layer_heads[L])))
    return layers
