"""The linker: program -> the Qwen3.5 layers that run it (a LinkedNetwork), and their .qg tensor form.

Storage rule (docs/qg-format.md): every layer tensor `layers.{i}.{name}` is stored
sparse as `layers.{i}.{name}.idx` (int64 flat indices, ascending) and
`layers.{i}.{name}.val` (float32 values); the dense tensor is
`zeros(shape).flatten()[idx] = val`, with the shape from the Qwen3.5 config in the
metadata (SHAPES in weights.py).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass

import numpy as np

from ..isa import encode
from ..program import Program
from ..qwen35 import SHAPES
from . import numerics
from .core import build_core
from .layout import L_MEM0
from .schedule import CapacityError, Placement, place
from .weights import VALUE_LEVEL, LayerWeights, SparseTensor, build_weights

MAX_LAYERS = 45


@dataclass
class LinkedNetwork:
    """The compiled decoder layers and where the host finds the machine's state in them."""

    layers: list[LayerWeights]
    fields: dict[str, list[int]]  # residual field -> dims (LSB first)
    param_head: tuple[int, int]  # (layer, head) of the kernel-parameter bank
    code: list[int]  # the program encoding the ROM was baked from
    layout: dict  # documentation data: layer map, memory map
    # Value heads of the stock layers that hold the machine (a checkpoint may have 32; the
    # machine's 16 memory heads then sit on every other one: qgcc.qwen35.ValueHeads).
    value_heads: int = 16
    # Level of a stored value rail (docs/protocol.md); .qg files linked before the exact
    # encoding used 128 and run only on the torch path.
    value_level: float = VALUE_LEVEL
    # Hosts built for this network, by (engine, device): a batch of launches reuses one.
    hosts: dict = dataclasses.field(default_factory=dict, repr=False, compare=False)

    @property
    def num_layers(self) -> int:
        return len(self.layers)


@dataclass
class LinkedProgram:
    """What a .qg file or a checkpoint holds: the program and, once linked, its network.

    `network` is None for a program written with `qgcc --no-link` (or compiled on the
    fly): the network engines then link it when they first run it.
    """

    program: Program
    network: LinkedNetwork | None = None


def link(program: Program, min_layers: int = 16) -> LinkedNetwork:
    m = build_core(program)
    pl: Placement | None = None
    err = None
    for L in range(min_layers, MAX_LAYERS + 1):
        try:
            pl = place(m.net, L)
            break
        except CapacityError as e:
            err = e
    if pl is None:
        raise CapacityError(f"the machine does not fit in {MAX_LAYERS} layers: {err}")
    layers = build_weights(m.net, pl)
    bounds = numerics.check(layers)
    fields = {name: [pl.dim[s] for s in sigs] for name, sigs in m.fields.items()}
    fields["one"] = [pl.dim[m.net.ONE]]
    head_of = {mi: (L, h) for L, hs in enumerate(pl.layer_heads) for h, mi in enumerate(hs)}
    heads = {name: head_of[mi] for name, (_, mi) in m.heads.items()}
    layout = {
        "layers": [{"layer": L, "mixer": "linear_attention",
                    "heads": [m.net.memories[mi].name for mi in pl.layer_heads[L]],
                    "mlp_units": pl.units_used[L], "gates": len(pl.layer_gates[L])} for L in range(pl.num_layers)],
        "fields": fields,
        "heads": {k: list(v) for k, v in heads.items()},
        "numerics": dataclasses.asdict(bounds),
        "memory_first_layer": L_MEM0 + m.shift,  # later than L_MEM0 when the ROM spans several MLPs
    }
    return LinkedNetwork(layers, fields, heads["params"], [encode(i) for i in program.code], layout)


def to_tensors(cm: LinkedNetwork) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    tensors: dict[str, np.ndarray] = {}
    for i, lw in enumerate(cm.layers):
        for name, st in lw.tensors.items():
            idx, val = st.arrays()
            tensors[f"layers.{i}.{name}.idx"] = idx
            tensors[f"layers.{i}.{name}.val"] = val
    from ..qwen35 import text_config_json
    from .layout import CELLS_PER_LAYER, FAULTS, PHASES, SLOTS, WORDS_PER_SLOT

    meta = {
        "machine": json.dumps({"fields": cm.fields, "param_head": list(cm.param_head), "layout": cm.layout}),
        "num_layers": str(cm.num_layers),
        # What a runner needs besides transformers and safetensors (docs/protocol.md).
        "text_config": text_config_json(cm.num_layers),
        "tensor_shapes": json.dumps({name: list(shape) for name, shape in SHAPES.items()}),
        "protocol": json.dumps({
            "fields": cm.fields, "phases": list(PHASES), "faults": list(FAULTS),
            "cells": {"first_layer": cm.layout.get("memory_first_layer", L_MEM0), "cells_per_layer": CELLS_PER_LAYER, "slots_per_head": SLOTS,
                      "words_per_slot": WORDS_PER_SLOT, "encoding": "onehot4"},
            "params": list(cm.param_head), "one": 8.0, "zero": -8.0, "value_level": VALUE_LEVEL,
        }),
    }
    return tensors, meta


def from_tensors(tensors: dict[str, np.ndarray], meta: dict[str, str], code: list[int]) -> LinkedNetwork:
    from .layout import PHASES

    phases = json.loads(meta["protocol"]).get("phases") if "protocol" in meta else None
    if phases is not None and phases != list(PHASES):
        # The host drives the machine by its phases: another machine's would be misread.
        raise ValueError(f"the layers were linked for a machine with phases {phases}, "
                         f"this qgcc runs {list(PHASES)}")
    n = int(meta["num_layers"])
    mach = json.loads(meta["machine"])
    layers = []
    for i in range(n):
        ts = {}
        for name, shape in SHAPES.items():
            ts[name] = SparseTensor.from_arrays(shape, tensors[f"layers.{i}.{name}.idx"],
                                                tensors[f"layers.{i}.{name}.val"])
        layers.append(LayerWeights("linear_attention", ts, 0, 0))
    fields = {k: list(v) for k, v in mach["fields"].items()}
    level = json.loads(meta["protocol"]).get("value_level", 128.0) if "protocol" in meta else 128.0
    return LinkedNetwork(layers, fields, tuple(mach["param_head"]), code, mach["layout"], value_level=level)
