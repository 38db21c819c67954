"""The phased step: one launch (or a few) in as few dependent kernels as the layers allow
(docs/engines.md, "The phased step"; opt-in: `BatchedLayers(..., phased=True)`,
`bench/gpu_check.py --phased`).

Why: at width 1 a GPU step is a chain of kernels each waiting for the one before, about
2.5 us apiece in a CUDA graph on the H200, and the bytes hardly matter: the unfused step's
~4,400 kernels ran 90 steps/s there and the fused step's 434 cannot pass about 0.6x of the C
step (`bench/onelaunch.py`).  Here a mixer is one kernel whose programs each take a head of a
slot (its in_proj rows, the delta rule, the gated norm: no product between them), an MLP one
whose programs each take a block of units; out_proj and down_proj, whose inputs are a few
active values, are added by every program of the next kernel to its own copy of the residual
instead of running as kernels of their own: 2 kernels a layer with a mixer, 1 without, 3 a
step, the fewest dependent kernels the layers allow.

The products read only what changes: a +-1 input's row value is precomputed at the
reference input (every input -1), and a step adds twice the weight of each column whose
input is +1 (about 30 of a sublayer's 57-1,436 columns here): the C step's form, exact by
the argument in engines/phased_kernels.py.  So the weights are held by columns (a column's
entries for every row of the sublayer contiguous), in float32.  At widths of hundreds the
dense products of the fused step read fewer bytes per launch; this step is for one launch.
"""

from __future__ import annotations

import torch

from ..qwen35 import QWEN35_2B as qwen
from .fused import EPS32, FusedStep, _pow2_at_least, kernels, why_not_fused
from .premises import HD


def _by_columns(W: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(W.T contiguous, the rows' values at the reference input): W's rows are integer-valued
    with absolute sums below 2^24 or single-term, so the float64 sum is exact and so is its
    float32 value."""
    pre0 = (-W.double().sum(1)).float()
    return W.T.contiguous(), pre0


class _PhasedLayer:
    """A layer's weights in the phased step's form (see the module docstring)."""

    def __init__(self, R, device: torch.device):
        L = R.L
        self.nh, self.units = R.nh, R.units
        if R.nh:
            nh, span = R.nh, R.span
            Wqkv, Wz, Wb = R.mix.dense().cpu().split([3 * span, span, nh])
            # Rows per head: q, k, v, z of head 0, then of head 1, ...; then every head's b.
            per_head = torch.cat([Wqkv.reshape(3, nh, HD, -1), Wz.reshape(1, nh, HD, -1)]).transpose(0, 1)
            W = torch.cat([per_head.reshape(nh * 4 * HD, -1), Wb])
            WT, pre0 = _by_columns(W)
            self.mixT, self.mix0 = WT.to(device), pre0.to(device)
            self.mix_in, self.n_mix = L.mix_in.to(device), len(L.mix_in)
            self.WoT = L.Wo.float().T.contiguous().to(device)  # (span, outputs)
            self.mix_out, self.span = L.mix_out.to(device), span
            self.gnorm = L.gnorm.to(device)
        WT, pre0 = _by_columns(R.gu.dense().cpu())
        self.guT, self.gu0 = WT.to(device), pre0.to(device)
        self.mlp_in, self.n_mlp = L.mlp_in.to(device), len(L.mlp_in)
        self.WdT = L.Wd.float().T.contiguous().to(device)  # (units, outputs)
        self.mlp_out = L.mlp_out.to(device)


class PhasedStep:
    """The step of a BatchedLayers in a few kernels a layer; its buffers are the batch's."""

    # Columns a program reads at a time, MLP units a program, active-input rows add_active reads
    # at a time: small tiles on a GPU (registers); in the CPU's interpreter every operation costs
    # the same whatever its size, so few large ones.
    # And heads a program: one on a GPU (a program per head), all on the CPU.
    BLOCKS = {"cuda": (16, 128, 16, 1), "cpu": (256, 1024, 256, 16)}

    def __init__(self, batch):
        why = why_not_fused(batch.layers, batch.packed, None if batch.rails is None else batch.rails.level)
        if why:
            raise ValueError(f"the phased step does not apply: {why}")
        self.k = kernels(batch.device, "phased_kernels")
        self.batch = batch
        dev = batch.device
        self.layers = [_PhasedLayer(R, dev) for R in batch.layers]
        self.bad = torch.zeros(batch.width, dtype=torch.int32, device=dev)
        self.opts = {} if dev.type == "cpu" else {"enable_fp_fusion": False, "num_warps": 4}
        self.launches = self.per_step = 0
        self.BC, self.BU, self.BE, self.HB = self.BLOCKS[dev.type]
        # Each program of a kernel builds its own copy of the residual (phased_kernels._take):
        # two buffers of (programs, B, H), read and written in turn; a kernel's input is row 0 of
        # the other one.
        progs = max([-(-P.nh // self.HB) for P in self.layers] + [-(-P.units // self.BU) for P in self.layers])
        self.xs = [torch.zeros(progs, batch.width, qwen.hidden, device=dev) for _ in range(2)]
        self.NOUT = _pow2_at_least(max(len(c) for P in self.layers for c in (P.mlp_out,) + ((P.mix_out,) if P.nh else ())))
        self.none = (torch.zeros(1, device=dev), torch.zeros(1, device=dev), torch.zeros(1, dtype=torch.long, device=dev), 0, 0)
        self.level, self.level_bits = batch.rails.level, batch.rails.bits

    _go = FusedStep._go  # a Triton launch, named for the profiler and counted (kernels a step)

    def step(self) -> None:
        from .premises import INEXACT_ACT, INEXACT_NORM, NOT_HELD, NOT_ONE_HOT, NOT_PM8, NOT_RAIL, QSCALE

        bl, k = self.batch, self.k
        first = self.launches
        B, dev, H = bl.width, bl.device, qwen.hidden
        run8 = bl.running.view(torch.uint8)
        cur, nxt = self.xs
        self._go(k.start, (B,), bl.h, cur[0], self.bad, H=H, NOT_PM8=NOT_PM8)
        pend = self.none  # the previous sublayer's out_proj or down_proj, not yet added: (v, WT, cols, ...)
        for P, S, rows0 in zip(self.layers, bl.states, bl.rows0):  # rows0: the heads' first rows in S
            if P.nh:
                y = torch.empty(B, P.span, device=dev)
                self._go(k.mix_head, (B, -(-P.nh // self.HB)), cur[0], nxt, *pend, P.mix_in, P.n_mix, P.mixT, P.mix0,
                         S, rows0, run8, P.gnorm, y, self.bad, P.nh, self.level, self.level_bits, EPS32, QSCALE, B,
                         H=H, HD=HD, HB=self.HB, BC=self.BC, NOUT=self.NOUT, BE=self.BE, NOT_ONE_HOT=NOT_ONE_HOT,
                         INEXACT_ACT=INEXACT_ACT, INEXACT_NORM=INEXACT_NORM, NOT_RAIL=NOT_RAIL, NOT_HELD=NOT_HELD,
                         NOT_PM8=NOT_PM8)
                cur, nxt = nxt, cur
                pend = (y, P.WoT, P.mix_out, len(P.mix_out), P.span)
            act = torch.empty(B, P.units, device=dev)
            self._go(k.mlp_units, (B, -(-P.units // self.BU)), cur[0], nxt, *pend, P.mlp_in, P.n_mlp, P.guT, P.gu0,
                     act, self.bad, P.units, B, H=H, BU=self.BU, BC=self.BC, NOUT=self.NOUT, BE=self.BE,
                     INEXACT_ACT=INEXACT_ACT, NOT_PM8=NOT_PM8)
            cur, nxt = nxt, cur
            pend = (act, P.WdT, P.mlp_out, len(P.mlp_out), P.units)
        v, WT, cols, n_out, n_in = pend
        self._go(k.add_active, (B,), cur[0], v, WT, cols, n_out, n_in, self.bad, H=H, NOUT=self.NOUT, BE=self.BE,
                 NOT_PM8=NOT_PM8)
        nf = len(bl._fault)
        self._go(k.finish, (B,), bl.h, cur[0], self.bad, bl.flags, run8, bl._fault, nf, bl._halt,
                 H=H, FB=_pow2_at_least(nf))
        self.per_step = self.launches - first  # kernels a step (a graph replays them uncounted)


def column_bytes(step: PhasedStep) -> int:
    """Device bytes of the phased step's weights (held by columns, float32)."""
    return sum(t.numel() * t.element_size() for P in step.layers
               for t in ((P.mixT, P.WoT) if P.nh else ()) + (P.guT, P.WdT))

