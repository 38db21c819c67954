"""How many 32-bit words can one DeltaNet slot hold and still read back exactly?

    python bench/memrow.py [--steps 2000] [--bf16-steps 200]

Issue #14 asks for 65,536 global cells.  At one dual-rail word per slot (today) a memory
layer holds 2,048 cells and 69,632 cells (with 4,096 shared) need 34 layers.  This probe
measures, on one stock `Qwen3_5DecoderLayer` at 2B geometry (fp32 and bf16), the two
encodings that put more than one word in a slot:

1. Sign-encoded rails (every value entry +-V, so that the gated RMSNorm's mean square
   is V^2 whatever the bits; three words per slot).  The stock module passes the value
   projection through the causal conv's SiLU, like the keys and queries, so a stored
   entry is never below min silu = -0.2785: -V cannot be stored.  The probe writes a row
   whose value pre-activations are -V and prints what the state holds.
2. One-hot-of-4 groups (the design this probe proposes): bit i of word 0 and bit i of
   word 1 choose one of four rails of group i (V on that rail, 0 on the other three), so
   a row of 128 entries holds two words with exactly 32 nonzero entries: the same mean
   square, rsqrt and read level as today's one-word rows.  The rail is an AND of two bits
   computed inside the value projection (V*x_a + V*x_b - V*one: V, or <= -V which SiLU
   sends to exactly 0), so a store needs no extra MLP level.  A read picks its word with
   the z gate, per rail: rail (1,1) always, rail (1,0) when the word select is 0, rail
   (0,1) when it is 1, rail (0,0) never; out_proj adds each group's selected rails into
   the bit's residual dimension, so decoding is linear and a read adds exactly 16.  A
   store is a read-modify-write: the store step reads the row's other word (z selects
   it) and the next step writes the whole row (the delta rule replaces it).
   The probe runs random loads and stores (the store's other word taken from the
   network's own read) against a dictionary of words, and checks every read bit and
   that every other residual dimension leaves the layer unchanged, bit for bit.

Why not three words: a read must leave the residual at exactly +-8, so each bit must be
a linear function of the rails, and the row's mean square must not depend on the data
(entries are >= 0 after SiLU, so a constant number of equal nonzero entries, 32 for an
exact rsqrt).  Three words are 96 bits from 32 of 128 entries, close to the number of
such rows (C(128, 32) ~ 2^100); one-hot groups of 4 give 2 bits per 4 entries (64 bits a
row) with a two-bit AND per rail.  So 2 words a slot, 4,096 cells a layer, 17 layers for
65,536 + 4,096 cells (docs/architecture.md, "What bounds the limits").
"""
from __future__ import annotations

import argparse
import random
import time

import numpy as np
import torch

from qgcc.link.weights import KEY, READ_ADD, VALUE_LEVEL, VALUE_RAILS
from qgcc.qwen35 import QWEN35_2B as qwen, text_config

H, D, NH = qwen.hidden, qwen.head_dim, qwen.linear_heads
SLOT_BITS = (D - 1).bit_length()
# Residual dimensions of the probe (dimension 0 is the constant `one`).
ONE = 0
RA = list(range(1, 1 + SLOT_BITS))  # read slot
WA = list(range(8, 8 + SLOT_BITS))  # write slot
SEL, WE = 15, 16  # word select of the read, write enable
W0 = list(range(32, 64))  # the row to write: word 0
W1 = list(range(64, 96))  # word 1
OUT = list(range(128, 160))  # the read word, held at -8 before the mixer
GROUPS = 32  # one-hot groups of 4 rails: one group per bit position


def build_layer(dtype: torch.dtype, sign_probe: bool = False):
    """One stock decoder layer whose head 0 is a two-word-per-slot memory (see module doc)."""
    from transformers.models.qwen3_5.modeling_qwen3_5 import Qwen3_5DecoderLayer

    cfg = text_config(1)
    cfg._attn_implementation = "eager"
    layer = Qwen3_5DecoderLayer(cfg, 0)
    with torch.no_grad():
        for p in layer.parameters():
            p.zero_()
        la = layer.linear_attn
        qkv, z, out = la.in_proj_qkv.weight, la.in_proj_z.weight, la.out_proj.weight
        for j in range(D):  # key and query decoders over the slot bits
            for base, dims in ((0, RA), (qwen.key_dim, WA)):
                for b, d in enumerate(dims):
                    qkv[base + j, d] = KEY if (j >> b) & 1 else -KEY
                qkv[base + j, ONE] = KEY * (1 - SLOT_BITS)
        vbase = 2 * qwen.key_dim
        for i in range(GROUPS):
            for c in range(4):  # rail c of group i: bit i of word 0 is c & 1, of word 1 is c >> 1
                row = vbase + 4 * i + c
                qkv[row, W0[i]] = VALUE_LEVEL if c & 1 else -VALUE_LEVEL
                qkv[row, W1[i]] = VALUE_LEVEL if c >> 1 else -VALUE_LEVEL
                qkv[row, ONE] = -VALUE_LEVEL
                zr = 4 * i + c
                if c == 3:
                    z[zr, ONE] = KEY
                elif c == 1:
                    z[zr, SEL] = -KEY  # word 0 selected: SEL bit 0
                elif c == 2:
                    z[zr, SEL] = KEY
                else:
                    z[zr, ONE] = -KEY
                if c:
                    out[OUT[i], 4 * i + c] = READ_ADD / (np.sqrt(D / VALUE_RAILS) * KEY)
        if sign_probe:  # the sign-encoding probe: value pre-activation -V on rail 0
            qkv[vbase, :] = 0
            qkv[vbase, ONE] = -VALUE_LEVEL
        la.conv1d.weight[:, 0, -1] = 1.0
        la.in_proj_b.weight[0, WE] = KEY
        la.in_proj_b.weight[1:, ONE] = -KEY
        la.A_log.fill_(-1000.0)
        la.norm.weight.fill_(1.0)
    return cfg, layer.to(dtype).eval()


class Probe:
    def __init__(self, dtype: torch.dtype, sign_probe: bool = False):
        from transformers import DynamicCache
        from transformers.models.qwen3_5.modeling_qwen3_5 import Qwen3_5TextRotaryEmbedding

        self.dtype = dtype
        self.cfg, self.layer = build_layer(dtype, sign_probe)
        self.cache = DynamicCache(config=self.cfg)
        conv_dim = 2 * qwen.key_dim + NH * D
        self.cache.update_conv_state(torch.zeros(1, conv_dim, qwen.conv_kernel, dtype=dtype), 0)
        self.cache.update_recurrent_state(torch.zeros(1, NH, D, D, dtype=dtype), 0)
        self.rotary = Qwen3_5TextRotaryEmbedding(self.cfg)
        self.pos = 0

    @torch.no_grad()
    def step(self, h: np.ndarray) -> np.ndarray:
        x = torch.from_numpy(h.astype(np.float32)).reshape(1, 1, H).to(self.dtype)
        p = torch.tensor([[self.pos]])
        y = self.layer(x, position_embeddings=self.rotary(x, p), position_ids=p, cache=self.cache)
        self.pos += 1
        return y.reshape(H).float().numpy()

    def state(self) -> np.ndarray:
        return self.cache.layers[0].recurrent_states[0][0, 0].float().numpy()


def residual(read_slot, sel, write) -> np.ndarray:
    """The bipolar input of one step: read (slot, word), and a pending row write or None."""
    h = np.full(H, -8.0, np.float32)
    h[ONE] = 8.0
    bits = lambda dims, v: [h.__setitem__(d, 8.0 if (v >> b) & 1 else -8.0) for b, d in enumerate(dims)]
    bits(RA, read_slot)
    h[SEL] = 8.0 if sel else -8.0
    if write is not None:
        slot, w0, w1 = write
        h[WE] = 8.0
        bits(WA, slot)
        bits(W0, w0)
        bits(W1, w1)
    return h


def run(dtype: torch.dtype, steps: int, seed: int = 0) -> tuple[int, int, float]:
    """Random loads and read-modify-write stores; returns (bad read bits, bad other dims, s)."""
    rng = random.Random(seed)
    probe = Probe(dtype)
    mem: dict[tuple[int, int], int] = {}
    pending = None
    bad_bits = bad_dims = 0
    t0 = time.time()
    for _ in range(steps):
        slot, sel = rng.randrange(D), rng.randrange(2)
        store = rng.random() < 0.5
        # A store reads the row's other word; a load reads its own.
        rsel = 1 - sel if store else sel
        h = residual(slot, rsel, pending)
        y = probe.step(h)
        if pending is not None:
            mem[(pending[0], 0)], mem[(pending[0], 1)] = pending[1], pending[2]
        word = sum(1 << b for b, d in enumerate(OUT) if y[d] > 0)
        expect = mem.get((slot, rsel), 0)
        levels_ok = np.all(np.abs(y[OUT]) == 8.0)
        bad_bits += bin(word ^ expect).count("1") + (0 if levels_ok else 1)
        others = np.ones(H, bool)
        others[OUT] = False
        bad_dims += int(np.count_nonzero(y[others] != h[others]))
        pending = None
        if store:
            value = rng.getrandbits(32)
            pending = (slot, value, word) if sel == 0 else (slot, word, value)
    return bad_bits, bad_dims, time.time() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--bf16-steps", type=int, default=200)
    args = ap.parse_args()
    torch.set_num_threads(1)

    probe = Probe(torch.float32, sign_probe=True)
    h = residual(0, 0, (5, 0, 0))
    probe.step(h)
    x = torch.linspace(-20, 20, 400001)
    print(f"sign encoding: a value pre-activation of -V = {-VALUE_LEVEL} is stored as "
          f"{probe.state()[5, 0]!r} (the causal conv's SiLU); the least storable entry is "
          f"min silu = {float(torch.nn.functional.silu(x).min()):.4f}, so -V rails are impossible")

    for name, dtype, steps in (("fp32", torch.float32, args.steps), ("bf16", torch.bfloat16, args.bf16_steps)):
        if steps <= 0:
            continue
        bad_bits, bad_dims, secs = run(dtype, steps)
        verdict = "exact" if bad_bits == bad_dims == 0 else "NOT exact"
        print(f"two words a slot (one-hot-of-4 rails), {name}: {steps} random loads/RMW stores, "
              f"{bad_bits} wrong read bits, {bad_dims} disturbed residual entries: {verdict} ({secs:.1f} s)")


if __name__ == "__main__":
    main()
