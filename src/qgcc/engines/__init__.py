"""Engine registry: the name given to `qgrun --engine` -> the class that runs a launch.

This is the only place an engine name is looked up.  Engines are imported lazily,
on first use, so that importing this module (or running another engine) never
imports the reference emulator, and vice versa.

Every engine class is built as `cls(device=...)` and has `run(launch, max_steps,
on_step=None) -> result` (the result has `.memory`, a uint32 array, and `.stats`, a
qgcc.trace.Stats), raising qgcc.trace.Fault subclasses.  Engines that cannot use a
torch device are listed with devices ("cpu",) and always get "cpu".
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from ..diagnostics import UsageError

DEVICES = ("cpu", "cuda")
DTYPES = ("fp32", "bf16")  # the arithmetic of a network engine (qgrun --dtype)
# How the neural engine's batched step runs (qgrun --step; docs/engines.md, "Batched launches"):
# torch operators, or Triton kernels (engines/fused.py, engines/phased.py), the same bits.
STEPS = ("unfused", "fused", "phased")


@dataclass(frozen=True)
class Engine:
    name: str
    target: str  # "module:Class", imported on first use
    devices: tuple[str, ...]  # devices it can run on; ("cpu",) means it ignores the device
    description: str = ""
    dtypes: tuple[str, ...] = ("fp32",)  # arithmetic it can run the layers in; () means no layers

    def load(self) -> type:
        module, _, cls = self.target.partition(":")
        return getattr(importlib.import_module(module), cls)

    def create(self, device: str = "cpu", dtype: str = "fp32", step: str = "unfused") -> Any:
        kw = {} if step == "unfused" else {"step": step}  # resolve_step admits others for neural only
        if dtype == "fp32" or not self.dtypes:
            return self.load()(device=device, **kw)
        return self.load()(device=device, dtype=dtype, **kw)

    def resolve_step(self, requested: str, device: str) -> tuple[str, str | None]:
        """(the batched step to run, note for the user or None); raises UsageError naming the fix.
        A Triton step runs every launch through the batched step, on the CPU too, where Triton's
        interpreter runs its kernels: exact and very slow, which is how it is tested there."""
        if requested not in STEPS:
            raise UsageError(f"--step '{requested}': expected one of {', '.join(STEPS)}")
        if requested == "unfused":
            return requested, None
        if self.name != "neural":
            raise UsageError(f"--step {requested}: only the neural engine has a batched step; "
                             "drop --step or use --engine neural")
        import importlib.util

        if importlib.util.find_spec("triton") is None:
            raise UsageError(f"--step {requested}: its kernels need Triton, which is not installed here; "
                             "pip install 'qgcc[fused]' (or drop --step)")
        if device == "cpu":
            return requested, (f"--step {requested} on the CPU runs its Triton kernels in Triton's interpreter: "
                               "exact but about 1,000x slower than the C step (for testing; use --device cuda)")
        return requested, None

    def resolve_dtype(self, requested: str) -> tuple[str, str | None]:
        """(the arithmetic to run in, note for the user or None); raises UsageError naming an
        engine that supports it."""
        if requested not in DTYPES:
            raise UsageError(f"--dtype '{requested}': expected one of {', '.join(DTYPES)}")
        if not self.dtypes:
            note = None if requested == "fp32" else \
                f"the {self.name} engine runs no layers; --dtype {requested} is ignored"
            return "fp32", note
        if requested in self.dtypes:
            return requested, None
        others = [e.name for e in ENGINES.values() if requested in e.dtypes]
        raise UsageError(f"--dtype {requested}: the {self.name} engine computes in "
                         f"{', '.join(self.dtypes)} only; use --engine {' or '.join(others)}")

    def resolve_device(self, requested: str) -> tuple[str, str | None]:
        """(device to record, note for the user or None); raises UsageError if it cannot run there."""
        if requested not in DEVICES:
            raise UsageError(f"--device '{requested}': expected one of {', '.join(DEVICES)}")
        if self.devices == ("cpu",):
            if requested != "cpu":
                return "cpu", (f"the {self.name} engine runs on the CPU only; "
                               f"--device {requested} is ignored")
            return "cpu", None
        if requested not in self.devices:
            raise UsageError(f"--device {requested}: the {self.name} engine runs on "
                             f"{', '.join(self.devices)}")
        if requested == "cuda":
            try:
                import torch
                available = bool(torch.cuda.is_available())
            except Exception:  # no torch, or a broken CUDA install
                available = False
            if not available:
                raise UsageError("--device cuda: CUDA is not available here "
                                 "(torch.cuda.is_available() is False); use --device cpu")
        return requested, None

    def run(self, launch, *, max_steps: int, on_step=None, device: str = "cpu", dtype: str = "fp32", states=None,
            step: str = "unfused"):
        """`states`: a qgcc.engines.states.StateDump to fill (network engines only)."""
        engine = self.create(device, dtype, step)
        if states is None:
            return engine.run(launch, max_steps, on_step=on_step)
        return engine.run(launch, max_steps, on_step=on_step, states=states)


ENGINES: dict[str, Engine] = {
    "neural": Engine("neural", "qgcc.engines.neural:NeuralEngine", ("cpu", "cuda"),
                     "the compiled Qwen3.5 layers, stock math with all-zero blocks skipped (default)"),
    "hf": Engine("hf", "qgcc.engines.hf:HFEngine", ("cpu", "cuda"),
                 "the compiled layers as transformers' own Qwen3_5DecoderLayer modules", ("fp32", "bf16")),
    "ref": Engine("ref", "qgcc.engines.ref:RefEngine", ("cpu",),
                  "reference SIMT emulator (golden model for differential testing; pure Python, CPU)", ()),
}


def names() -> list[str]:
    return list(ENGINES)


def get(name: str) -> Engine:
    try:
        return ENGINES[name]
    except KeyError:
        raise UsageError(f"unknown engine '{name}' (engines: {', '.join(ENGINES)})") from None
