"""Where the machine sits in the layers: widths, fixed memory layers, phases and faults.

The netlist builder (link/blocks), the linker's protocol metadata and the host
(qgcc.engines.host) must agree on these facts, so they are stated once, here.
Capacities come from the machine description (qgcc.spec), head sizes from the
Qwen3.5 geometry (qgcc.qwen35).
"""

from __future__ import annotations

from ..qwen35 import QWEN35_2B as qwen
from ..spec import SPEC

W = SPEC.warp_size  # lanes
NWARP = SPEC.max_warps
PCB = 10  # PC bits
NREG = SPEC.num_regs
GLOBAL_CELLS = SPEC.global_words
SHARED_CELLS = SPEC.shared_words
# Address bits: a global cell index, a shared offset, and the bit that marks a shared address.
G_ADDR_BITS = (GLOBAL_CELLS - 1).bit_length()
S_ADDR_BITS = (SHARED_CELLS - 1).bit_length()
SHARED_BIT = SPEC.shared_base.bit_length() - 1
assert GLOBAL_CELLS == 1 << G_ADDR_BITS and SPEC.shared_base == 1 << SHARED_BIT > GLOBAL_CELLS >= SHARED_CELLS
# Memory index of a cell: global cell c is c, shared offset o is GLOBAL_CELLS + o.
IDX_BITS = (GLOBAL_CELLS + SHARED_CELLS - 1).bit_length()
SLOTS = qwen.head_dim  # cells per DeltaNet head: one per slot
CELLS_PER_LAYER = qwen.linear_heads * SLOTS

# Fixed layers of the memories.
L_WARP = 0
L_REGS = (1, 2, 3)
L_PARAM = 4
L_MEM0 = 5
N_MEM_LAYERS = -(-(GLOBAL_CELLS + SHARED_CELLS) // CELLS_PER_LAYER)  # 10

PHASES = ("tidinit", "blkinit", "run", "halt")
FAULTS = ("oob", "barrier", "pc", "param")


def cell_location(index: int) -> tuple[int, int, int]:
    """Memory index (global cell, or GLOBAL_CELLS + shared offset) -> (layer, head, slot)."""
    return L_MEM0 + index // CELLS_PER_LAYER, (index // SLOTS) % qwen.linear_heads, index % SLOTS
