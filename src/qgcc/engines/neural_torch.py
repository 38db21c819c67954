"""The `neural` engine's torch path: the stock Qwen3.5 decoder-layer computation,
restricted to the rows, columns and heads that are not all zero.

It runs where the compiled C step (neural_c) does not: on CUDA, without a C
compiler, or for layers that fail one of the C step's load-time checks.

Same weights, same operations in the same order per element (RMSNorm, SiLU, L2 norm,
the gated delta rule, gated RMSNorm): only blocks that are entirely zero are skipped,
and the conv (taps [0, 0, 0, 1]) is applied as its multiply by the last tap.  No
new nonlinearity and no decision on lane data is added.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from ..link.weights import LayerWeights
from ..qwen35 import QWEN35_2B as qwen

EPS = 1e-6


def _rms(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    var = x.pow(2).mean(-1, keepdim=True)
    return (x * torch.rsqrt(var + EPS)) * (1.0 + weight)


def _coo(st) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    idx, val = st.arrays()
    r, c = np.divmod(idx, st.shape[-1]) if len(st.shape) == 2 else (idx, np.zeros_like(idx))
    return r, c, val


def _compact(st, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """The (rows x cols) block of a sparse matrix, without building the dense matrix."""
    r, c, v = _coo(st)
    ri = np.full(st.shape[0], -1)
    ri[rows] = np.arange(len(rows))
    ci = np.full(st.shape[1], -1)
    ci[cols] = np.arange(len(cols))
    keep = (ri[r] >= 0) & (ci[c] >= 0)
    out = np.zeros((len(rows), len(cols)), dtype=np.float32)
    out[ri[r[keep]], ci[c[keep]]] = v[keep]
    return out


class FastLayer:
    def __init__(self, lw: LayerWeights, device: torch.device):
        t = lw.tensors

        def vec(name):
            return torch.from_numpy(t[name].dense()).to(device)

        self.in_norm = vec("input_layernorm.weight")
        self.post_norm = vec("post_attention_layernorm.weight")
        gr, gc, _ = _coo(t["mlp.gate_proj.weight"])
        ur, uc, _ = _coo(t["mlp.up_proj.weight"])
        dr, dc, _ = _coo(t["mlp.down_proj.weight"])
        rows = np.unique(gr)
        self.units = len(rows)
        inp = np.unique(np.concatenate([gc[np.isin(gr, rows)], uc[np.isin(ur, rows)]]))
        outp = np.unique(dr[np.isin(dc, rows)])
        self.Wg = torch.from_numpy(_compact(t["mlp.gate_proj.weight"], rows, inp)).to(device)
        self.Wu = torch.from_numpy(_compact(t["mlp.up_proj.weight"], rows, inp)).to(device)
        self.Wd = torch.from_numpy(_compact(t["mlp.down_proj.weight"], outp, rows)).to(device)
        self.mlp_in = torch.from_numpy(inp).to(device)
        self.mlp_out = torch.from_numpy(outp).to(device)
        # DeltaNet heads that have any query or key weight.
        qr, qc, _ = _coo(t["linear_attn.in_proj_qkv.weight"])
        qk = qr[qr < 2 * qwen.key_dim]  # numpy: a layer has ~10^6 nonzeros, a Python loop took seconds
        used = sorted(int(h) for h in np.unique((qk // qwen.head_dim) % qwen.linear_heads))
        self.heads = used
        if used:
            idx = (np.arange(3)[:, None, None] * qwen.key_dim + np.array(used)[None, :, None] * qwen.head_dim
                   + np.arange(qwen.head_dim)[None, None, :]).reshape(-1)
            zrows = np.array([h * qwen.head_dim + e for h in used for e in range(qwen.head_dim)])
            cols = set(qc[np.isin(qr, idx)].tolist())
            for name in ("linear_attn.in_proj_z.weight", "linear_attn.in_proj_b.weight",
                         "linear_attn.in_proj_a.weight"):
                r, c, _ = _coo(t[name])
                cols |= set(c.tolist())
            cols = np.array(sorted(cols))
            self.mix_in = torch.from_numpy(cols).to(device)
            self.Wqkv = torch.from_numpy(_compact(t["linear_attn.in_proj_qkv.weight"], idx, cols)).to(device)
            conv = t["linear_attn.conv1d.weight"].dense()[:, 0, qwen.conv_kernel - 1]
            self.conv_last = torch.from_numpy(conv[idx]).to(device)
            self.Wz = torch.from_numpy(_compact(t["linear_attn.in_proj_z.weight"], zrows, cols)).to(device)
            hs = np.array(used)
            self.Wb = torch.from_numpy(_compact(t["linear_attn.in_proj_b.weight"], hs, cols)).to(device)
            Wa = _compact(t["linear_attn.in_proj_a.weight"], hs, cols)
            self.Wa = torch.from_numpy(Wa).to(device)
            self.dt_bias = torch.from_numpy(t["linear_attn.dt_bias"].dense()[used]).to(device)
            self.A_log = torch.from_numpy(t["linear_attn.A_log"].dense()[used]).to(device)
            # With in_proj_a all zero the decay exp(g) depends on the weights alone; compute it
            # once, and skip the multiply where it is exactly 1.0 (x * 1.0 == x in IEEE).
            self.decay = None
            if not np.any(Wa):
                g0 = -self.A_log.float().exp() * F.softplus(torch.zeros_like(self.dt_bias) + self.dt_bias)
                d = g0.exp()
                self.decay = "one" if bool(torch.all(d == 1.0)) else d
            self.gnorm = vec("linear_attn.norm.weight")
            orr, _, _ = _coo(t["linear_attn.out_proj.weight"])
            outm = np.unique(orr)
            self.mix_out = torch.from_numpy(outm).to(device)
            self.Wo = torch.from_numpy(_compact(t["linear_attn.out_proj.weight"], outm, zrows)).to(device)
            # Heads are stored first-to-last from 0, so the used ones form a prefix.
            assert used == list(range(len(used)))

    def forward(self, h: torch.Tensor, state: torch.Tensor) -> torch.Tensor:
        """One token through the layer; `state` (16 x 128 x 128) is updated in place."""
        return self.mlp(self.mix(h, state))

    def mix(self, h: torch.Tensor, state: torch.Tensor) -> torch.Tensor:
        if self.heads:
            x = _rms(h, self.in_norm)[self.mix_in]
            nh = len(self.heads)
            mixed = F.silu((self.Wqkv @ x) * self.conv_last)
            q, k, v = mixed.reshape(3, nh, qwen.head_dim)
            q = q * torch.rsqrt((q * q).sum(-1, keepdim=True) + EPS)
            k = k * torch.rsqrt((k * k).sum(-1, keepdim=True) + EPS)
            q = q / (qwen.head_dim ** 0.5)
            beta = torch.sigmoid(self.Wb @ x)
            S = state[:nh]
            if self.decay is None:
                g = -self.A_log.float().exp() * F.softplus((self.Wa @ x) + self.dt_bias)
                S.mul_(g.exp()[:, None, None])
            elif self.decay != "one":
                S.mul_(self.decay[:, None, None])
            kv_mem = torch.bmm(k[:, None, :], S)[:, 0]
            delta = (v - kv_mem) * beta[:, None]
            S.baddbmm_(k[:, :, None], delta[:, None, :])
            o = torch.bmm(q[:, None, :], S)[:, 0]
            var = o.pow(2).mean(-1, keepdim=True)
            o = o * torch.rsqrt(var + EPS)
            o = self.gnorm * o
            z = (self.Wz @ x).reshape(nh, qwen.head_dim)
            o = o * F.silu(z)
            h = h.index_add(0, self.mix_out, self.Wo @ o.reshape(-1))
        return h

    def mlp(self, h: torch.Tensor) -> torch.Tensor:
        x = _rms(h, self.post_norm)[self.mlp_in]
        act = F.silu(self.Wg @ x) * (self.Wu @ x)
        return h.index_add(0, self.mlp_out, self.Wd @ act)


class NeuralLayers:
    """All compiled layers with their recurrent states, stepped one token at a time."""

    def __init__(self, layers: list[LayerWeights], device: str = "cpu"):
        self.device = torch.device(device)
        if self.device.type == "cpu":
            # Matrix-vector products this small are memory-bound; extra threads only contend.
            torch.set_num_threads(1)
        self.layers = [FastLayer(lw, self.device) for lw in layers]
        self.states = None

    def reset(self, recurrent_init: dict[int, np.ndarray] | None = None) -> None:
        recurrent_init = recurrent_init or {}
        self.states = []
        for i in range(len(self.layers)):
            s0 = recurrent_init.get(i)
            s = torch.zeros(qwen.linear_heads, qwen.head_dim, qwen.head_dim, device=self.device) if s0 is None else \
                torch.tensor(np.asarray(s0, np.float32).reshape(qwen.linear_heads, qwen.head_dim, qwen.head_dim),
                             device=self.device)
            self.states.append(s)

    def recurrent_state(self, layer: int) -> np.ndarray:
        return self.states[layer].cpu().numpy()

    @torch.no_grad()
    def step(self, h: np.ndarray) -> np.ndarray:
        x = torch.from_numpy(np.ascontiguousarray(h, np.float32).reshape(qwen.hidden)).to(self.device)
        for layer, st in zip(self.layers, self.states):
            x = layer.forward(x, st)
        return x.cpu().numpy()
