"""The batched step's exact bfloat16 products (qgcc.engines.lowp): a weight matrix is split into
bfloat16 parts only where every part's product is an exact integer; anything else stays float32,
and the reason is recorded (issue #26: "fall back to fp32 where it fails, and say so")."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from qgcc.engines.lowp import ExactProjection, bf16_parts

CPU = torch.device("cpu")


def signs(rows: int, cols: int, seed: int = 0) -> torch.Tensor:
    """Inputs of the +-1 projections: every entry exactly +1 or -1."""
    rng = np.random.default_rng(seed)
    return torch.from_numpy(np.where(rng.random((rows, cols)) < 0.5, -1.0, 1.0).astype(np.float32))


def exact(x: torch.Tensor, W: torch.Tensor) -> torch.Tensor:
    return (x.double() @ W.double().T).float()


def test_a_weight_bfloat16_cannot_hold_is_split_into_parts_whose_products_add_to_the_exact_row():
    # 257 = 256 + 1 and 1,050,625 = 2^20 + 2^11 + 1 need two and three parts (8 significant bits each).
    W = torch.tensor([[257.0, -3.0, 0.0, 1.0], [1050625.0, 2.0, -7.0, 0.0], [1.0, 1.0, 1.0, 1.0]])
    parts, why = bf16_parts(W)
    assert why == "" and len(parts) == 3
    proj = ExactProjection(W, CPU, lowp=True, name="gate/up")
    assert proj.lowp and proj.parts == 3 and proj.notes == []
    x = signs(5, 4)
    assert torch.equal(proj(x), exact(x, W))


@pytest.mark.parametrize("weight, why", [
    (1e-40, "more than three bfloat16 parts (a float32 subnormal)"),
    (3.4028235e38, "overflows bfloat16"),
    (2.0 ** 23, "absolute sum reaches 2^24"),
])
def test_a_matrix_whose_parts_would_not_be_exact_stays_float32_and_says_why(weight, why):
    W = torch.tensor([[weight, 2.0 ** 23 if weight == 2.0 ** 23 else 1.0], [3.0, -1.0]])
    parts, reason = bf16_parts(W)
    assert parts is None and why in reason
    proj = ExactProjection(W, CPU, lowp=True, name="layer 7 in_proj")
    assert not proj.lowp and proj.W.dtype == torch.float32
    assert proj.notes == [f"layer 7 in_proj: float32 ({reason})"]
    x = signs(3, 2, seed=1)
    assert torch.equal(proj(x), x @ W.T)


def test_without_lowp_a_projection_is_float32_with_nothing_to_say():
    W = torch.tensor([[257.0, 1.0]])
    proj = ExactProjection(W, CPU, lowp=False)
    assert not proj.lowp and proj.notes == []
