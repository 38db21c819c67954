"""The `ref` engine: the reference SIMT emulator (qgcc.ref), the golden model the network
engines are tested against.  It runs on the CPU in pure Python; `device` is accepted
and ignored so that every engine is built the same way."""

from __future__ import annotations

from ..ref import emulator


class RefEngine:
    name = "ref"

    def __init__(self, device: str = "cpu"):
        self.device = "cpu"

    def run(self, launch, max_steps: int, on_step=None):
        # Looked up on the module at call time, so a test can stand in for the emulator.
        return emulator.run(launch, max_steps, on_step=on_step)
