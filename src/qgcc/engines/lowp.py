"""Exact projections with bfloat16 operands and float32 accumulation (the batched step).

Why this is exact (docs/engines.md, "The exactness argument"): the input of gate/up and of
the mixer's in_proj rows is exactly +-1, so every product `w * x` is `+-w`, and every row of
several terms is integer-valued with a sum of absolute terms below 2^24: every partial sum
in any order is an exact float32 integer.  A weight that bfloat16 cannot hold is written as
a sum of up to three bfloat16 numbers (w = w0 + w1 + w2, each the rounding of what is left;
float32 has 24 significant bits, bfloat16 8): the row then is the sum of up to three rows of
parts, each again integer-valued (rounding an integer to 8 significant bits leaves an
integer) with an absolute sum no larger than the row's, so each part's product is exact,
and adding them gives the row's exact integer.  Each part row is checked at load (every
part exactly representable, its absolute sum below 2^24); a matrix that fails is kept in
float32 and the reason recorded (`notes`).

On CUDA the parts are multiplied by `torch.mm(x, W.T, out_dtype=torch.float32)` (bfloat16
tensor-core products, float32 accumulation); on the CPU by a float32 product of the same
part values (whose products are the same exact numbers), so the CPU runs the same parts,
index maps and additions as the device.
"""

from __future__ import annotations

import torch

EXACT_LIMIT = 2 ** 24


def bf16_parts(W: torch.Tensor) -> tuple[list[torch.Tensor] | None, str]:
    """W (float32, on its device) as a sum of bfloat16-representable parts (the first dense,
    the rest as blocks of the rows that need them), or None and the reason when that is not
    exact.  Works on the nonzero entries (about 2% of the compacted blocks)."""
    nz = torch.nonzero(W)
    r, c = nz[:, 0], nz[:, 1]
    rest = W[r, c]
    vals = []
    for _ in range(3):
        p = rest.bfloat16().float()  # round to nearest, ties to even
        vals.append(p)
        rest = rest - p  # exact: what rounding to 8 significant bits left
        if not bool(rest.any()):
            break
    if bool(rest.any()):
        return None, "a weight needs more than three bfloat16 parts (a float32 subnormal)"
    if not bool(torch.isfinite(vals[0]).all()):
        return None, "a weight overflows bfloat16"
    # The later parts are at most 2^-8 of a weight each; the first can round a weight up.
    l1 = torch.zeros(W.shape[0], dtype=torch.float64, device=W.device).index_add_(0, r, vals[0].abs().double())
    if bool((l1 >= EXACT_LIMIT).any()):
        return None, "a part row's absolute sum reaches 2^24"
    parts = [W.bfloat16().float()]
    for v in vals[1:]:
        keep = v != 0
        rows, inv = torch.unique(r[keep], return_inverse=True)
        block = torch.zeros(len(rows), W.shape[1], device=W.device)
        block[inv, c[keep]] = v[keep]
        parts.append((rows, block))
    return parts, ""


_MM_DTYPE_OK: dict[str, bool] = {}


def cuda_bf16_mm_ok(device: torch.device) -> bool:
    """Whether this torch has bfloat16 x bfloat16 -> float32 products on the device
    (`torch.mm(..., out_dtype=torch.float32)`), checked once on integers it must get exactly."""
    key = str(device)
    if key not in _MM_DTYPE_OK:
        try:
            a = torch.tensor([[1.0, -1.0, 1.0], [-1.0, -1.0, 1.0]], device=device).bfloat16()
            b = torch.tensor([[255.0, 65280.0, -3.0], [7.0, 1.0, 128.0]], device=device).bfloat16()
            got = torch.mm(a, b.t(), out_dtype=torch.float32)
            want = a.double() @ b.double().t()
            _MM_DTYPE_OK[key] = got.dtype == torch.float32 and bool(torch.equal(got.double(), want))
        except (RuntimeError, TypeError, NotImplementedError):
            _MM_DTYPE_OK[key] = False
    return _MM_DTYPE_OK[key]


class ExactProjection:
    """y = x @ W.T for x exactly +-1 (one matrix, or several of one input concatenated by rows).

    `lowp`: bfloat16 parts where exact (above), else float32.  `notes` says which."""

    def __init__(self, W: torch.Tensor, device: torch.device, lowp: bool, name: str = ""):
        W = W.to(device=device, dtype=torch.float32).contiguous()
        self.rows = W.shape[0]
        self.device = device
        self.notes: list[str] = []
        self.extra: list[tuple[int, torch.Tensor]] = []  # (offset in the product, rows of the part)
        parts, why = bf16_parts(W) if lowp else (None, "")
        if lowp and device.type == "cuda" and not cuda_bf16_mm_ok(device):
            parts, why = None, "this torch has no bfloat16 -> float32 product on CUDA"
        if parts is None:
            self.lowp = False
            self.W = W
            if lowp:
                self.notes.append(f"{name}: float32 ({why})")
            self.parts = 1
            return
        self.lowp = True
        blocks, offset = [parts[0]], self.rows
        for rows, block in parts[1:]:
            blocks.append(block)
            self.extra.append((offset, rows))
            offset += len(rows)
        self.parts = len(parts)
        stacked = torch.cat(blocks)
        # On CUDA the bfloat16 tensor itself; on the CPU float32 copies of the same values.
        self.W = stacked.bfloat16() if device.type == "cuda" else stacked

    @property
    def elements(self) -> int:
        return self.W.numel()

    def __call__(self, x: torch.Tensor, xb: torch.Tensor | None = None) -> torch.Tensor:
        """`x` the float32 input; `xb` the same values in bfloat16 (shared by the projections
        of one input), used on CUDA."""
        if not self.lowp:
            return x @ self.W.t()
        if self.device.type == "cuda":
            y = torch.mm(xb if xb is not None else x.bfloat16(), self.W.t(), out_dtype=torch.float32)
        else:
            y = x @ self.W.t()
        if not self.extra:
            return y
        out = y[:, :self.rows]
        for offset, rows in self.extra:
            out.index_add_(1, rows, y[:, offset:offset + len(rows)])
        return out
