"""Two 32-bit words per DeltaNet slot, read exactly by a stock Qwen3.5 layer.

The encoding that global memory of 65,536 cells needs (docs/architecture.md, "What
bounds the limits"): one-hot groups of four rails, the word chosen by the z gate, stores
as read-modify-writes.  The probe (bench/memrow.py) runs random loads and stores through
transformers' own `Qwen3_5DecoderLayer` and compares every read bit with a dictionary of
words and every other residual entry with the layer's input.
"""
import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import memrow  # noqa: E402


@pytest.mark.slow
def test_sign_encoded_rails_cannot_be_stored():
    """The value projection passes SiLU, so -V (a sign-encoded 0) is stored as 0, not -V."""
    probe = memrow.Probe(torch.float32, sign_probe=True)
    probe.step(memrow.residual(0, 0, (5, 0, 0)))
    assert probe.state()[5, 0] == 0.0


@pytest.mark.slow
@pytest.mark.parametrize("dtype,steps", [(torch.float32, 300), (torch.bfloat16, 40)])
def test_two_words_a_slot_read_back_exactly(dtype, steps):
    """Random loads and read-modify-write stores: every read bit right, nothing else disturbed."""
    bad_bits, bad_dims, _ = memrow.run(dtype, steps, seed=1)
    assert (bad_bits, bad_dims) == (0, 0)
