"""Engine registry: the name given to `qgrun --engine` -> the function that runs a launch.

Engines are imported lazily, on first use, so that importing this module (or
running another engine) never imports the reference emulator, and vice versa.

Every engine's run function has the signature of the reference emulator:
`run(launch, max_steps, on_step=None) -> RunResult` (RunResult has `.memory`,
a uint32 array, and `.stats`, a qgcc.trace.Stats), raising qgcc.trace.Fault
subclasses.  Engines that run on a torch device also take `device=` ("cpu" or
"cuda"); `Engine.run` passes it only to them.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Callable

from .diagnostics import UsageError

DEVICES = ("cpu", "cuda")


@dataclass(frozen=True)
class Engine:
    name: str
    module: str  # imported on first use
    function: str
    devices: tuple[str, ...]  # devices it can run on; ("cpu",) means it takes no device argument
    description: str = ""

    def load(self) -> Callable[..., Any]:
        return getattr(importlib.import_module(self.module), self.function)

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

    def run(self, launch, *, max_steps: int, on_step=None, device: str = "cpu"):
        fn = self.load()
        if self.devices == ("cpu",):
            return fn(launch, max_steps, on_step=on_step)
        return fn(launch, max_steps, on_step=on_step, device=device)


ENGINES: dict[str, Engine] = {
    "neural": Engine("neural", "qgcc.neural.engine", "run_neural", ("cpu", "cuda"),
                     "the compiled Qwen3.5 layers, stock math with all-zero blocks skipped (default)"),
    "hf": Engine("hf", "qgcc.neural.engine", "run_hf", ("cpu", "cuda"),
                 "the compiled layers as transformers' own Qwen3_5DecoderLayer modules"),
    "ref": Engine("ref", "qgcc.ref.emulator", "run", ("cpu",),
                  "reference SIMT emulator (golden model for differential testing; pure Python, CPU)"),
}


def names() -> list[str]:
    return list(ENGINES)


def get(name: str) -> Engine:
    try:
        return ENGINES[name]
    except KeyError:
        raise UsageError(f"unknown engine '{name}' (engines: {', '.join(ENGINES)})") from None
