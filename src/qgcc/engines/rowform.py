"""The batched steps' form of the compiled layers and of their states (engines/neural_batch.py,
engines/fused.py, engines/phased.py): each layer's weights as the exact products those steps
multiply, built once per network and device, and a state row as 128 bits.  A module of its
own because every batched step and the benches that measure them build on it, while only the
unfused step needs neural_batch's operations."""

from __future__ import annotations

import numpy as np
import torch

from ..link.weights import LayerWeights
from .lowp import ExactProjection
from .neural_torch import FastLayer, _rms
from .premises import HD


class Rails:
    """A state row as 128 bits: every recurrent-state entry of the exact encoding is +0 or
    the rail level V (docs/protocol.md), so a row is 16 bytes instead of 512.  Writing any
    other value is a premise failure (flag NOT_RAIL), never a silent change; reading gives
    the float32 entries back bit for bit."""

    def __init__(self, level: float, device: torch.device):
        self.level = float(np.float32(level))
        self.bits = int(np.float32(level).view(np.int32))
        self.shift = torch.arange(8, dtype=torch.uint8, device=device)

    def unpack(self, packed: torch.Tensor) -> torch.Tensor:
        """(..., 16) uint8 -> (..., 128) float32 of +0 and V."""
        on = ((packed[..., None] >> self.shift) & 1).flatten(-2).bool()
        return torch.where(on, self.level, 0.0)

    def pack(self, row: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(..., 128) float32 -> ((..., 16) uint8, entries that are neither +0 nor V)."""
        raw = row.view(torch.int32)
        on = raw == self.bits
        bad = ~on & (raw != 0)
        packed = (on.reshape(*on.shape[:-1], 16, 8).to(torch.uint8) << self.shift).sum(-1).to(torch.uint8)
        return packed, bad

    def pack_numpy(self, rows: np.ndarray) -> np.ndarray:
        raw = np.ascontiguousarray(rows, np.float32).view(np.int32)
        if np.any((raw != self.bits) & (raw != 0)):
            raise ValueError("an initial state entry is neither +0 nor the rail level")
        return np.packbits(raw == self.bits, axis=-1, bitorder="little")


class _RowLayer:
    """One layer's weights in the form the batched step uses: the mixer's in_proj rows
    (q | k | v | z | b of the used heads) as one exact projection of the +-1 input, gate | up
    as another, out_proj and down_proj in float32 (their inputs are not +-1)."""

    def __init__(self, lw: LayerWeights, device: torch.device, lowp: bool, index: int):
        L = self.L = FastLayer(lw, device)
        self.notes: list[str] = []
        nh = self.nh = len(L.heads)
        self.span = nh * HD
        self.units = L.units
        if nh:
            self.mix = ExactProjection(torch.cat([L.Wqkv, L.Wz, L.Wb]), device, lowp, f"layer {index} in_proj")
            self.notes += self.mix.notes
        self.gu = ExactProjection(torch.cat([L.Wg, L.Wu]), device, lowp, f"layer {index} gate/up")
        self.notes += self.gu.notes
        # Decay exactly 1 (in_proj_a zero, A_log underflowing): a one-hot key rewrites one row.
        self.rows = bool(nh) and isinstance(L.decay, str)
        # RMSNorm weights 0: with the residual exactly +-8 (checked) the normalised input is
        # h / 8 exactly, one multiply; conv taps 1: the stock multiply is the identity.
        self.norm_zero = not bool(L.in_norm.any()) and not bool(L.post_norm.any())
        self.conv_one = bool(nh) and bool(torch.all(L.conv_last == 1.0))
        # The projections hold these now (the full-state mixer still reads its own).
        L.Wg = L.Wu = None
        if self.rows:
            L.Wqkv = L.Wz = L.Wb = None

    def normed(self, h: torch.Tensor, weight: torch.Tensor, cols: torch.Tensor) -> torch.Tensor:
        if self.norm_zero:
            return h[:, cols] * 0.125
        return _rms(h, weight)[:, cols]

    def projections(self) -> list[ExactProjection]:
        return ([self.mix] if self.nh else []) + [self.gu]


def exact_cuda_products() -> None:
    """cuBLAS settings the exactness argument needs: no TF32 (10-bit mantissas) for float32
    products, and no reduced-precision (bf16/fp16) sums inside bfloat16 products' split-K
    reductions: every partial sum must stay float32."""
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False


def row_layers(network, device: str, lowp: bool) -> list[_RowLayer]:
    """A network's layers in the batched step's form, built once per device and precision
    (kept with the network, like its hosts): runners of several widths share them."""
    key = ("row-layers", str(torch.device(device)), bool(lowp))
    if torch.device(device).type == "cuda":
        exact_cuda_products()  # before the load-time probe of the bfloat16 product
    if key not in network.hosts:
        network.hosts[key] = [_RowLayer(lw, torch.device(device), lowp, i) for i, lw in enumerate(network.layers)]
    return network.hosts[key]
