"""The `neural` engine's batched step: B independent launches of one program stacked as a
batch dimension through the same layers (docs/engines.md, "Batched launches").

Each slot of the batch holds one launch: its hidden state (a row of `h`) and its
recurrent states (a slice of every layer's state tensor).  A step runs the torch path's
operations (neural_torch) on all rows at once, so every projection is a matrix-matrix
product over the stored nonzero blocks.  By the exactness argument every sum is an exact
integer, so a row's numbers do not depend on the other rows or on how the device orders
its additions: each slot computes exactly what the launch computes alone.

A slot that is not running (free, halted or faulted) is frozen: its new hidden and
recurrent states are discarded by `torch.where`, so they keep their bits, and whatever it
computes never reaches another row (rows only meet in products as separate outputs).

Decoding on the device: after every step the signs of the host's fields are gathered by
one index into a (K, B, fields) buffer, and the halt/fault flags clear the slot's running
bit on the device; the host reads that buffer once per K steps (`run`), with no transfer
between layers.  The residual premise (exactly +-8 after every sublayer) is checked on
the device too, for running slots, into a flag the host reads with the fields.

On CUDA the K steps are captured once in a CUDA graph over these static buffers and
replayed; on the CPU they run eagerly.  The graph path is reached only when the device is
CUDA (`graph=True` on the CPU is a ValueError) and has not been run on hardware yet.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from ..link.weights import LayerWeights
from ..qwen35 import QWEN35_2B as qwen
from .neural_torch import EPS, FastLayer, _rms

HD = qwen.head_dim


class BatchedLayers:
    """`width` slots of the compiled layers, stepped together K steps at a time.

    `dims` are the hidden dimensions whose signs the host decodes (Host._all_dims);
    `halt_dim` is phase.halt's dimension and `fault_dims` the fault field's.
    """

    def __init__(self, layers: list[LayerWeights], width: int, dims: np.ndarray, halt_dim: int,
                 fault_dims: list[int], device: str = "cpu", chunk: int = 1, graph: bool | None = None):
        self.device = torch.device(device)
        self.width, self.chunk = width, chunk
        if graph is None:
            graph = self.device.type == "cuda"
        if graph and self.device.type != "cuda":
            raise ValueError("CUDA graphs need --device cuda")
        if self.device.type == "cpu":
            torch.set_num_threads(1)  # as neural_torch: extra threads only contend on these sizes
        if self.device.type == "cuda":
            torch.backends.cuda.matmul.allow_tf32 = False
            torch.backends.cudnn.allow_tf32 = False
        self.layers = [FastLayer(lw, self.device) for lw in layers]
        dev = self.device
        self.h = torch.full((width, qwen.hidden), -8.0, device=dev)
        # Only the heads a layer uses change; the others keep their initial rows (host side).
        self.states = [torch.zeros(width, len(L.heads), HD, HD, device=dev) if L.heads else None
                       for L in self.layers]
        self._fixed: list[dict[int, np.ndarray]] = [{} for _ in range(width)]
        self.running = torch.zeros(width, dtype=torch.bool, device=dev)
        self.inexact = torch.zeros(width, dtype=torch.bool, device=dev)
        self.bits = torch.zeros(chunk, width, len(dims), dtype=torch.bool, device=dev)
        self._dims = torch.as_tensor(np.asarray(dims), dtype=torch.long, device=dev)
        self._halt = int(halt_dim)
        self._fault = torch.as_tensor(list(fault_dims), dtype=torch.long, device=dev)
        self._graph = None
        if graph:
            self._capture()

    # ---- slots ----
    def load(self, slot: int, h: np.ndarray, recurrent_init: dict[int, np.ndarray]) -> None:
        """Start a launch in `slot`: its first input and initial recurrent states (as Host.initial)."""
        self.h[slot] = torch.from_numpy(np.ascontiguousarray(h, np.float32)).to(self.device)
        self._fixed[slot] = {}
        for i, (L, S) in enumerate(zip(self.layers, self.states)):
            s0 = recurrent_init.get(i)
            full = np.zeros((qwen.linear_heads, HD, HD), np.float32) if s0 is None else \
                np.asarray(s0, np.float32).reshape(qwen.linear_heads, HD, HD)
            nh = len(L.heads)
            if S is not None:
                S[slot] = torch.from_numpy(np.ascontiguousarray(full[:nh])).to(self.device)
            if np.any(full[nh:].view(np.uint32)):
                self._fixed[slot][i] = full[nh:].copy()
        self.inexact[slot] = False
        self.running[slot] = True

    def stop(self, slot: int) -> None:
        """Freeze a slot (its launch ended on the host's side, e.g. at --max-steps)."""
        self.running[slot] = False

    def hidden(self, slot: int) -> np.ndarray:
        return self.h[slot].cpu().numpy()

    def recurrent_state(self, slot: int, layer: int) -> np.ndarray:
        """Layer `layer`'s recurrent state of the launch in `slot` (16 x 128 x 128)."""
        full = np.zeros((qwen.linear_heads, HD, HD), np.float32)
        S = self.states[layer]
        nh = 0 if S is None else S.shape[1]
        if S is not None:
            full[:nh] = S[slot].cpu().numpy()
        if layer in self._fixed[slot]:
            full[nh:] = self._fixed[slot][layer]
        return full

    # ---- stepping ----
    @torch.no_grad()
    def run(self) -> tuple[np.ndarray, np.ndarray]:
        """K steps of every running slot: (the gathered field signs (K, B, fields) as uint8,
        the slots whose residual left +-8 (B,) bool), in one transfer."""
        if self._graph is not None:
            self._graph.replay()
        else:
            self._steps()
        out = torch.cat([self.bits.reshape(-1), self.inexact]).to("cpu", torch.uint8).numpy()
        k = self.bits.numel()
        return out[:k].reshape(self.bits.shape), out[k:].astype(bool)

    def _steps(self) -> None:
        for i in range(self.chunk):
            self._step()
            self.bits[i] = self.h[:, self._dims] > 0

    def _check(self, h: torch.Tensor) -> None:
        self.inexact |= self.running & (h.abs() != 8.0).any(-1)

    def _step(self) -> None:
        run = self.running
        x = self.h
        for L, S in zip(self.layers, self.states):
            if L.heads:
                x = self._mix(L, x, S)
                self._check(x)
            x = self._mlp(L, x)
            self._check(x)
        self.h.copy_(torch.where(run[:, None], x, self.h))
        done = (self.h[:, self._halt] > 0) | (self.h[:, self._fault] > 0).any(-1)
        self.running &= ~done

    def _mix(self, L: FastLayer, h: torch.Tensor, S: torch.Tensor) -> torch.Tensor:
        """FastLayer.mix with a leading batch dimension; the state is replaced only where running."""
        B, nh = h.shape[0], len(L.heads)
        x = _rms(h, L.in_norm)[:, L.mix_in]
        mixed = F.silu((x @ L.Wqkv.T) * L.conv_last)
        q, k, v = mixed.reshape(B, 3, nh, HD).unbind(1)
        q = q * torch.rsqrt((q * q).sum(-1, keepdim=True) + EPS)
        k = k * torch.rsqrt((k * k).sum(-1, keepdim=True) + EPS)
        q = q / (HD ** 0.5)
        beta = torch.sigmoid(x @ L.Wb.T)
        Sd = S
        if L.decay is None:
            g = -L.A_log.float().exp() * F.softplus((x @ L.Wa.T) + L.dt_bias)
            Sd = S * g.exp()[..., None, None]
        elif not isinstance(L.decay, str):
            Sd = S * L.decay[:, None, None]
        flat = Sd.reshape(B * nh, HD, HD)  # the (launch, head) pairs as one bmm batch
        kv_mem = torch.bmm(k.reshape(B * nh, 1, HD), flat).reshape(B, nh, HD)
        delta = (v - kv_mem) * beta[..., None]
        Snew = torch.baddbmm(flat, k.reshape(B * nh, HD, 1), delta.reshape(B * nh, 1, HD))
        o = torch.bmm(q.reshape(B * nh, 1, HD), Snew).reshape(B, nh, HD)
        torch.where(self.running[:, None, None, None], Snew.reshape(B, nh, HD, HD), S, out=S)
        var = o.pow(2).mean(-1, keepdim=True)
        o = o * torch.rsqrt(var + EPS)
        o = L.gnorm * o
        z = (x @ L.Wz.T).reshape(B, nh, HD)
        o = o * F.silu(z)
        return h.index_add(1, L.mix_out, o.reshape(B, -1) @ L.Wo.T)

    def _mlp(self, L: FastLayer, h: torch.Tensor) -> torch.Tensor:
        x = _rms(h, L.post_norm)[:, L.mlp_in]
        act = F.silu(x @ L.Wg.T) * (x @ L.Wu.T)
        return h.index_add(1, L.mlp_out, act @ L.Wd.T)

    def _capture(self) -> None:
        """Record K steps as one CUDA graph over the static buffers (all slots frozen, so the
        warm-up runs change no state), then replay it for every `run`."""
        side = torch.cuda.Stream(self.device)
        side.wait_stream(torch.cuda.current_stream(self.device))
        with torch.no_grad(), torch.cuda.stream(side):
            for _ in range(2):  # warm-up: cuBLAS handles and workspaces exist before capture
                self._steps()
        torch.cuda.current_stream(self.device).wait_stream(side)
        self._graph = torch.cuda.CUDAGraph()
        with torch.no_grad(), torch.cuda.graph(self._graph):
            self._steps()
        torch.cuda.synchronize(self.device)
