"""Engine entry points for qgrun: `neural` (compact stock math) and `hf` (transformers' modules).

Both run the compiled layers attached to the program (from the .qg) or, for a
program compiled on the fly, link it first.  Neither imports the reference emulator.
"""

from __future__ import annotations

from ..runtime.launch import Launch
from .linker import CompiledMachine, link
from .runner import Host, NeuralResult


def machine_for(launch: Launch) -> CompiledMachine:
    cm = getattr(launch.program, "machine", None)
    if cm is None:
        cm = link(launch.program)
        launch.program.machine = cm  # type: ignore[attr-defined]
    return cm


def _run(engine: str, launch: Launch, max_steps: int, on_step=None, device: str = "cpu") -> NeuralResult:
    if device == "cuda":
        import torch

        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    cm = machine_for(launch)
    host = cm.hosts.get((engine, device))
    if host is None:  # built once per program: later launches (qgrun --batch) reuse it
        host = cm.hosts[(engine, device)] = Host(cm, engine=engine, device=device)
    return host.run(launch, max_steps=max_steps, on_step=on_step)


def run_neural(launch: Launch, max_steps: int, on_step=None, device: str = "cpu") -> NeuralResult:
    return _run("neural", launch, max_steps, on_step, device)


def run_hf(launch: Launch, max_steps: int, on_step=None, device: str = "cpu") -> NeuralResult:
    return _run("hf", launch, max_steps, on_step, device)
