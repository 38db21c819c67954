"""The batched step fused: per sublayer, the work between two products as one Triton kernel
(docs/engines.md, "The fused step"; opt-in: `BatchedLayers(..., fused=True)`,
`BatchRunner(..., fused=True)`, `bench/gpu_check.py --fused`).

Why: the unfused step (engines/neural_batch.py) is about 4,400 small torch operations a
step on the 36-layer machine; on a GPU each is a kernel of a few microseconds, and every
intermediate (the one-hot search, the row update, the range checks, the gated RMSNorm)
goes through device memory.  Here a layer is its products (cuBLAS, exact by the argument
in engines/lowp.py) and six kernels: the normalised input gathered (with its bfloat16
copy), the mixer's whole row work, the residual add with its check; the input gathered, the
activation and the residual add of the MLP; a step adds one kernel at its start and one at
its end.  The kernels are in
`fused_kernels`; why each gives the unfused step's bits is argued there and in the docs.

Why Triton rather than torch.compile: every rounding is explicit in the kernel source
(`div_rn`, `sqrt_rn`, no FMA contraction: `enable_fp_fusion=False` at every launch), where
inductor's generated code depends on configuration (its CPU code is compiled with
`-ffast-math`-derived flags; its Triton code contracts unless precision-cast emulation is
on); and the kernels run on the CPU in Triton's interpreter, which is how they are tested
without a GPU, while torch.compile took 46 s to compile one small function here and
recompiles for every layer's shapes.

Triton chooses between compiling and interpreting when it is first imported, so
`kernels(device)` imports it for the first device asked for: interpreted for the CPU,
compiled for CUDA (interpreting sets TRITON_INTERPRET=1 for the process, since triton's own
lazy imports read it again); asking for the other one in the same process is an error (note
that running torch's profiler imports triton, in compile mode unless TRITON_INTERPRET=1).
"""

from __future__ import annotations

import os
import sys

import numpy as np
import torch

from ..qwen35 import QWEN35_2B as qwen
from .neural_torch import EPS

HD = qwen.head_dim
EPS32 = float(np.float32(EPS))  # torch adds the Python 1e-6 to float32 tensors as this float32
_MODE: list[str] = []  # "interpret" or "compile", once triton is imported by this module


def kernels(device: torch.device, module: str = "fused_kernels"):
    """A kernels module (this step's, or engines/phased_kernels), compiled for CUDA or
    interpreted on the CPU (numpy)."""
    want = "interpret" if device.type == "cpu" else "compile"
    if not _MODE:
        if "triton" not in sys.modules and want == "interpret":
            # Read at import and again by triton's lazy imports: it stays set for the process.
            os.environ["TRITON_INTERPRET"] = "1"
        try:
            import triton
        except ImportError as e:
            raise ValueError("the fused step needs triton (pip install triton)") from e
        knobs = getattr(triton, "knobs", None)  # triton >= 3.4; before it, the variable itself
        interp = knobs.runtime.interpret if knobs is not None else \
            os.environ.get("TRITON_INTERPRET", "0").lower() in ("1", "true", "on", "yes")
        mode = "interpret" if interp else "compile"
        _MODE.append(mode)
    if _MODE[0] != want:
        raise ValueError(f"the fused step on {device.type} needs triton in {want} mode, but this process imported "
                         f"it in {_MODE[0]} mode (TRITON_INTERPRET is read when triton is first imported)")
    import importlib

    return importlib.import_module(f"{__package__}.{module}")


def _pow2_at_least(n: int) -> int:
    return 1 << max(0, int(n - 1).bit_length())


def why_not_fused(layers, packed: list[bool], level: float | None) -> str:
    """'' when every layer has the form the kernels compute, else the reason."""
    from .premises import QSCALE

    if level is None:
        return "the fused step holds states as rail bits: it needs the rail level (level=...)"
    for i, (R, p) in enumerate(zip(layers, packed)):
        if not R.norm_zero:
            return f"layer {i}: an RMSNorm weight is not 0"
        if R.nh and not (R.rows and p and R.conv_one):
            return f"layer {i}: the mixer is not one-hot rows with conv taps 1 (decay not exactly 1?)"
    # A read's squares: 128 equal terms must add exactly in any order (Triton's tree or torch's).
    c = np.float32(np.float32(level) * np.float32(np.float32(1.0) / np.float32(QSCALE)))
    d = np.float32(c * c)
    num = float(d).as_integer_ratio()[0]
    if not (np.isfinite(d * np.float32(128)) and num > 0) or (num >> ((num & -num).bit_length() - 1)).bit_length() > 17:
        return "the rail level's read squares have more than 17 significant bits (their sums may round)"
    return ""


class FusedStep:
    """The step of a BatchedLayers in a few kernels a layer; its buffers are the batch's."""

    BLOCK = 1024

    def __init__(self, batch):
        why = why_not_fused(batch.layers, batch.packed, None if batch.rails is None else batch.rails.level)
        if why:
            raise ValueError(f"the fused step does not apply: {why}")
        self.k = kernels(batch.device)
        self.batch = batch
        dev = batch.device
        self.x = torch.empty_like(batch.h)
        self.bad = torch.zeros(batch.width, dtype=torch.int32, device=dev)
        # No FMA contraction; 8 warps: a program holds 2,048-element blocks (ignored by the interpreter).
        self.opts = {} if dev.type == "cpu" else {"enable_fp_fusion": False, "num_warps": 8}
        self.bf16 = dev.type == "cuda"
        self.launches = self.per_step = 0  # Triton kernels launched (bench: kernels per step)
        self.level = batch.rails.level
        self.level_bits = batch.rails.bits

    def _go(self, kern, grid, *args, **meta) -> None:
        # Named for the profiler (bench/fused_ops.py counts a launch as one kernel; in the
        # interpreter its argument copies are torch operations inside this range).
        with torch.profiler.record_function(f"triton::{kern.__name__}"):
            kern[grid](*args, **meta, **self.opts)
        self.launches += 1

    def _gather(self, cols: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        B, n = self.batch.width, len(cols)
        out = torch.empty(B, n, device=self.x.device)
        outb = torch.empty(B, n, dtype=torch.bfloat16, device=self.x.device) if self.bf16 else out
        self._go(self.k.gather, (B, -(-n // self.BLOCK)), self.x, cols, out, outb, n,
                 H=qwen.hidden, BLOCK=self.BLOCK, BF16=self.bf16)
        return out, (outb if self.bf16 else None)

    def _residual(self, cols: torch.Tensor, y: torch.Tensor) -> None:
        from .premises import NOT_PM8

        self._go(self.k.residual, (self.batch.width,), self.x, cols, y, self.bad, len(cols),
                 H=qwen.hidden, BLOCK=qwen.hidden, NOT_PM8=NOT_PM8)  # one compiled form for every layer

    def step(self) -> None:
        from .premises import INEXACT_ACT, INEXACT_NORM, NOT_HELD, NOT_ONE_HOT, NOT_PM8, NOT_RAIL, QSCALE

        bl, k = self.batch, self.k
        first = self.launches
        B = bl.width
        run8 = bl.running.view(torch.uint8)
        self._go(k.start, (B,), bl.h, self.x, self.bad, H=qwen.hidden, NOT_PM8=NOT_PM8)
        for R, S, rows0 in zip(bl.layers, bl.states, bl.rows0):
            L = R.L
            if R.nh:
                pre = R.mix(*self._gather(L.mix_in))
                y = torch.empty(B, R.span, device=bl.device)
                self._go(k.mix_rows, (B,), pre, S, rows0, run8, L.gnorm, y, self.bad, R.nh, pre.shape[1],
                         self.level, self.level_bits, EPS32, QSCALE, NHP=qwen.linear_heads, HD=HD,  # one compiled form
                         NOT_ONE_HOT=NOT_ONE_HOT, INEXACT_ACT=INEXACT_ACT, INEXACT_NORM=INEXACT_NORM,
                         NOT_RAIL=NOT_RAIL, NOT_HELD=NOT_HELD)
                self._residual(L.mix_out, y @ L.Wo.T)
            pre = R.gu(*self._gather(L.mlp_in))
            U = R.units
            act = torch.empty(B, U, device=bl.device)
            self._go(k.mlp_act, (B, -(-U // self.BLOCK)), pre, act, self.bad, U, BLOCK=self.BLOCK,
                     INEXACT_ACT=INEXACT_ACT)
            self._residual(L.mlp_out, act @ L.Wd.T)
        nf = len(bl._fault)
        self._go(k.finish, (B,), bl.h, self.x, self.bad, bl.flags, run8, bl._fault, nf, bl._halt,
                 H=qwen.hidden, FB=_pow2_at_least(nf))
        self.per_step = self.launches - first  # kernels a step (a graph replays them uncounted)
