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
    if not bool(torch.isfinite(vals[0]).all()):  # first: what it leaves is inf or nan
        return None, "a weight overflows bfloat16"
    if bool(rest.any()):
        return None, "a weight needs more than three bfloat16 parts (a float32 subnormal)"
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
        self.Wx: torch.Tensor | None = None
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
        self.parts = len(parts)
        # The first part as one matrix (its product is the contiguous output), the others
        # stacked into a second: (offset in that product, the rows they add to).
        blocks, offset = [], 0
        for rows, block in parts[1:]:
            blocks.append(block)
            self.extra.append((offset, rows))
            offset += len(rows)
        cast = (lambda t: t.bfloat16()) if device.type == "cuda" else (lambda t: t)  # the CPU: float32 copies
        self.W = cast(parts[0])
        self.Wx = cast(torch.cat(blocks)) if blocks else None

    @property
    def elements(self) -> int:
        return self.W.numel() + (0 if self.Wx is None else self.Wx.numel())

    @property
    def nbytes(self) -> int:
        wx = self.Wx
        return self.W.numel() * self.W.element_size() + (0 if wx is None else wx.numel() * wx.element_size())

    def dense(self) -> torch.Tensor:
        """The float32 matrix again (its parts added: exact, each part's weights are the
        roundings of what the previous left), for steps that hold it in another form."""
        W = self.W.float().clone()
        if self.Wx is not None:
            for offset, rows in self.extra:
                W.index_add_(0, rows, self.Wx[offset:offset + len(rows)].float())
        return W

    def __call__(self, x: torch.Tensor, xb: torch.Tensor | None = None) -> torch.Tensor:
        """`x` the float32 input; `xb` the same values in bfloat16 (shared by the projections
        of one input), used on CUDA."""
        if not self.lowp:
            return x @ self.W.t()
        if self.device.type == "cuda":
            xb = xb if xb is not None else x.bfloat16()
            product = lambda W: torch.mm(xb, W.t(), out_dtype=torch.float32)  # noqa: E731
        else:
            product = lambda W: x @ W.t()  # noqa: E731
        y = product(self.W)
        if self.Wx is not None:
            more = product(self.Wx)
            for offset, rows in self.extra:
                y.index_add_(1, rows, more[:, offset:offset + len(rows)])
        return y
