"""`qgrun --dump-states`: a launch's network states as raw float32 bits, for outside comparison.

An implementation of docs/protocol.md that shares no code with qgcc (examples/run_qg.py,
or anyone's) is checked bit for bit against the engines by comparing these arrays, so
the file needs nothing but numpy to read and stores every float as its uint32 bits.
The format is docs/protocol.md, section 5a; this module is its only writer.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..diagnostics import UsageError

FORMAT = "qgcc-states"
FORMAT_VERSION = 1


def _bits(a) -> np.ndarray:
    return np.ascontiguousarray(np.asarray(a, dtype=np.float32)).view(np.uint32)


@dataclass
class StateDump:
    """Filled by the host as it steps one launch (Host.run(states=...))."""

    every: int = 1
    steps: int = 0
    hidden_steps: list[int] = field(default_factory=list)
    hidden: list[np.ndarray] = field(default_factory=list)
    final_hidden: np.ndarray | None = None
    initial_states: np.ndarray | None = None
    final_states: np.ndarray | None = None

    def __post_init__(self):
        if isinstance(self.every, bool) or not isinstance(self.every, (int, np.integer)) or self.every < 1:
            raise UsageError(f"dump_every={self.every!r}: expected a positive integer")

    def start(self, layers: int, recurrent_state: Callable[[int], np.ndarray]) -> None:
        """The states the layers hold before the first step, as the engine seeded them (in
        bf16 the value level is 181, not V)."""
        self.initial_states = np.stack([_bits(recurrent_state(L)) for L in range(layers)])

    def step(self, h: np.ndarray) -> None:
        """The input of the next network step."""
        if self.steps % self.every == 0:
            self.hidden_steps.append(self.steps)
            self.hidden.append(_bits(h).reshape(-1).copy())
        self.steps += 1

    def finish(self, h: np.ndarray, layers: int, recurrent_state: Callable[[int], np.ndarray]) -> None:
        """The last step's output and every layer's state after it."""
        self.final_hidden = _bits(h).reshape(-1).copy()
        self.final_states = np.stack([_bits(recurrent_state(L)) for L in range(layers)])

    def to_bytes(self, meta: dict, layer_names: list[int], head_map: list[int]) -> bytes:
        """The .npz file (docs/protocol.md, section 5a)."""
        buf = io.BytesIO()
        width = self.final_hidden.size if self.final_hidden is not None else 0
        np.savez_compressed(
            buf, format=np.array(FORMAT), format_version=np.array(FORMAT_VERSION, np.int64),
            meta=np.array(json.dumps(meta, sort_keys=True)),
            layers=np.asarray(layer_names, np.int64), head_map=np.asarray(head_map, np.int64),
            dump_every=np.array(self.every, np.int64), steps=np.array(self.steps, np.int64),
            hidden_steps=np.asarray(self.hidden_steps, np.int64),
            hidden=np.stack(self.hidden) if self.hidden else np.zeros((0, width), np.uint32),
            final_hidden=self.final_hidden, initial_states=self.initial_states, final_states=self.final_states)
        return buf.getvalue()


# Engines whose launches go through the host's step loop, and so can be dumped.
DUMPING_ENGINES = ("neural", "hf")


def check_engine(engine: str, option: str = "--dump-states", step: str = "unfused") -> None:
    if engine not in DUMPING_ENGINES:
        raise UsageError(f"{option}: the {engine} engine runs no network layers, so it has no states to dump; "
                         f"use --engine {' or '.join(DUMPING_ENGINES)}")
    if step != "unfused":  # the Triton steps hold states as rail bits on the device, not as the stock tensors
        raise UsageError(f"{option}: states are dumped from the one-launch path, not from --step {step}; "
                         "drop --step (the states are the same bits)")


def dump_bytes(dump: StateDump, launch, engine: str, device: str, dtype: str, status: str) -> bytes:
    """The file for one launch: the states and what identifies the run."""
    from ..link.layout import L_MEM0
    from ..qwen35 import ValueHeads

    net = launch.network
    meta = {"kernel": launch.kernel.name, "grid": list(launch.grid), "block": list(launch.block),
            "engine": engine, "device": device, "dtype": dtype, "status": status,
            "source_name": launch.program.source_name,
            "memory_first_layer": int(net.layout.get("memory_first_layer", L_MEM0)),
            "param_head": [int(x) for x in net.param_head]}
    return dump.to_bytes(meta, list(range(net.num_layers)), ValueHeads(net.value_heads).head_map)


def save(path: str, data: bytes) -> None:
    """Write the file atomically (qgcc.atomicfile): a failed run never leaves half of one."""
    from ..atomicfile import AtomicFiles
    from ..diagnostics import OutputError

    with AtomicFiles() as batch:
        try:
            batch.add(path, data)
            batch.commit()
        except OSError as e:
            raise OutputError(str(path), e) from None
