"""The `neural` engine's layer math: the stock Qwen3.5 decoder-layer computation, restricted
to the rows, columns and heads that are not all zero.

Same weights, same operations in the same order per element (RMSNorm, SiLU, L2 norm,
the gated delta rule, gated RMSNorm): only blocks that are entirely zero are skipped,
and the conv (taps [0, 0, 0, 1]) is applied as its multiply by the last tap.  No
new nonlinearity and no decision on lane data is added.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from .schedule import HEADS, HIDDEN
from .weights import CONV, HEAD_DIM, LayerWeights

EPS = 1e-6


def _rms(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    var = x.pow(2).mean(-1, keepdim=True)
    return (x * torch.rsqrt(var + EPS)) * (1.0 + weight)


class FastLayer:
    def __init__(self, lw: LayerWeights, device: torch.device):
        t = {k: v for k, v in lw.tensors.items()}

        def dense(name):
            return torch.from_numpy(t[name].dense()).to(device)

        self.in_norm = dense("input_layernorm.weight")
        self.post_norm = dense("post_attention_layernorm.weight")
        g = t["mlp.gate_proj.weight"].dense()
        u_ = t["mlp.up_proj.weight"].dense()
        d_ = t["mlp.down_proj.weight"].dense()
        rows = np.nonzero(np.any(g != 0, axis=1))[0]
        self.units = len(rows)
        # Compact: the input dims the MLP reads, the output dims it writes.
        self.mlp_in = torch.from_numpy(np.nonzero(np.any(g[rows] != 0, axis=0) | np.any(u_[rows] != 0, axis=0))[0])
        self.mlp_out = torch.from_numpy(np.nonzero(np.any(d_[:, rows] != 0, axis=1))[0])
        self.Wg = torch.from_numpy(g[rows][:, self.mlp_in.numpy()]).to(device)
        self.Wu = torch.from_numpy(u_[rows][:, self.mlp_in.numpy()]).to(device)
        self.Wd = torch.from_numpy(d_[self.mlp_out.numpy()][:, rows]).to(device)
        self.mlp_in, self.mlp_out = self.mlp_in.to(device), self.mlp_out.to(device)
        # DeltaNet heads that have any key, query or value weight.
        qkv = t["linear_attn.in_proj_qkv.weight"].dense()
        used = [h for h in range(HEADS)
                if np.any(qkv[h * HEAD_DIM:(h + 1) * HEAD_DIM]) or
                np.any(qkv[HEADS * HEAD_DIM + h * HEAD_DIM:HEADS * HEAD_DIM + (h + 1) * HEAD_DIM])]
        self.heads = used
        if used:
            idx = []
            for part in range(3):
                for h in used:
                    base = part * HEADS * HEAD_DIM + h * HEAD_DIM
                    idx.extend(range(base, base + HEAD_DIM))
            conv = t["linear_attn.conv1d.weight"].dense()[:, 0, CONV - 1]
            zrows = [r for h in used for r in range(h * HEAD_DIM, (h + 1) * HEAD_DIM)]
            Wz = t["linear_attn.in_proj_z.weight"].dense()[zrows]
            Wb = t["linear_attn.in_proj_b.weight"].dense()[used]
            Wa = t["linear_attn.in_proj_a.weight"].dense()[used]
            Wqkv = qkv[idx]
            cols = np.nonzero(np.any(Wqkv != 0, axis=0) | np.any(Wz != 0, axis=0) | np.any(Wb != 0, axis=0)
                              | np.any(Wa != 0, axis=0))[0]
            self.mix_in = torch.from_numpy(cols).to(device)
            self.Wqkv = torch.from_numpy(Wqkv[:, cols]).to(device)
            self.conv_last = torch.from_numpy(conv[idx]).to(device)
            self.Wz = torch.from_numpy(Wz[:, cols]).to(device)
            self.Wb = torch.from_numpy(Wb[:, cols]).to(device)
            self.Wa = torch.from_numpy(Wa[:, cols]).to(device)
            self.dt_bias = torch.from_numpy(t["linear_attn.dt_bias"].dense()[used]).to(device)
            self.A_log = torch.from_numpy(t["linear_attn.A_log"].dense()[used]).to(device)
            # With in_proj_a all zero the decay exp(g) depends on the weights alone; compute it
            # once, and skip the multiply where it is exactly 1.0 (x * 1.0 == x in IEEE).
            self.decay = None
            if not np.any(Wa):
                g0 = -self.A_log.float().exp() * F.softplus(torch.zeros_like(self.dt_bias) + self.dt_bias)
                d = g0.exp()
                self.decay = "one" if bool(torch.all(d == 1.0)) else d
            self.gnorm = torch.from_numpy(t["linear_attn.norm.weight"].dense()).to(device)
            Wo = t["linear_attn.out_proj.weight"].dense()[:, zrows]
            self.mix_out = torch.from_numpy(np.nonzero(np.any(Wo != 0, axis=1))[0]).to(device)
            self.Wo = torch.from_numpy(Wo[self.mix_out.cpu().numpy()]).to(device)
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
            q, k, v = mixed.reshape(3, nh, HEAD_DIM)
            q = q * torch.rsqrt((q * q).sum(-1, keepdim=True) + EPS)
            k = k * torch.rsqrt((k * k).sum(-1, keepdim=True) + EPS)
            q = q / (HEAD_DIM ** 0.5)
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
            z = (self.Wz @ x).reshape(nh, HEAD_DIM)
            o = o * F.silu(z)
            h = h.index_add(0, self.mix_out, self.Wo @ o.reshape(-1))
        return h

    def mlp(self, h: torch.Tensor) -> torch.Tensor:
        x = _rms(h, self.post_norm)[self.mlp_in]
        act = F.silu(self.Wg @ x) * (self.Wu @ x)
        return h.index_add(0, self.mlp_out, self.Wd @ act)


class FastMachine:
    """All compiled layers with their recurrent states, stepped one token at a time."""

    def __init__(self, layers: list[LayerWeights], device: str = "cpu"):
        self.device = torch.device(device)
        if self.device.type == "cpu":
            # Matrix-vector products this small are memory-bound; extra threads only contend.
            torch.set_num_threads(1)
        self.layers = [FastLayer(lw, self.device) for lw in layers]
        self.states = None

    def reset(self, recurrent_init: dict[int, torch.Tensor] | None = None) -> None:
        recurrent_init = recurrent_init or {}
        self.states = []
        for i in range(len(self.layers)):
            s0 = recurrent_init.get(i)
            s = torch.zeros(HEADS, HEAD_DIM, HEAD_DIM, device=self.device) if s0 is None else \
                s0.to(self.device, torch.float32).reshape(HEADS, HEAD_DIM, HEAD_DIM).clone()
            self.states.append(s)

    def recurrent_state(self, layer: int) -> torch.Tensor:
        return self.states[layer]

    @torch.no_grad()
    def step(self, h: torch.Tensor) -> torch.Tensor:
        x = h.to(self.device, torch.float32).reshape(HIDDEN)
        for layer, st in zip(self.layers, self.states):
            x = layer.forward(x, st)
        return x
