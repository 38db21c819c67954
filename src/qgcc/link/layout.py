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


def pc_bits(n_instrs: int) -> int:
    """Width of the PC (and of every field holding one) in a network linked for an
    n-instruction program: SPEC.short_pc_bits, or as many bits as a longer program needs.
    Per program, not the longest program's width for all: a short program keeps the
    fields, and so the tensors, it had before the ROM grew, and no wider compares."""
    return max(SPEC.short_pc_bits, (n_instrs - 1).bit_length())


PCB_MAX = pc_bits(SPEC.max_instrs)  # the widest PC, that of the longest program
NREG = SPEC.num_regs
SLOTS = qwen.head_dim  # slots per DeltaNet head
# Global and shared memory hold two 32-bit words a slot, in one-hot groups of four rails
# (netlist.ONEHOT4_RAILS; docs/architecture.md, "What bounds the limits"): cell c is word
# c % 2 of slot c // 2.
WORDS_PER_SLOT = 2
CELLS_PER_HEAD = WORDS_PER_SLOT * SLOTS
CELLS_PER_LAYER = qwen.linear_heads * CELLS_PER_HEAD
# Widths of the counters and indices that the block size sets.
WARP_BITS = (NWARP - 1).bit_length()  # a warp index (cur, wb_w, wt_w, tr_w)
TID_BITS = (SPEC.max_block_threads - 1).bit_length()  # a thread index in one dimension (tx, ty, tz)
NT_BITS = SPEC.max_block_threads.bit_length()  # a thread count (bx, by, bz, nt, cnt)
NW_BITS = NWARP.bit_length()  # a warp count (nw)
GLOBAL_CELLS = SPEC.global_words
SHARED_CELLS = SPEC.shared_words
# Address bits: a global cell index, a shared offset, and the bit that marks a shared address.
G_ADDR_BITS = (GLOBAL_CELLS - 1).bit_length()
S_ADDR_BITS = (SHARED_CELLS - 1).bit_length()
SHARED_BIT = SPEC.shared_base.bit_length() - 1
assert GLOBAL_CELLS == 1 << G_ADDR_BITS and SPEC.shared_base == 1 << SHARED_BIT >= GLOBAL_CELLS >= SHARED_CELLS
# Memory index of a cell: global cell c is c, shared offset o is GLOBAL_CELLS + o; its slot
# index (the pending row write's address) drops the word bit.
IDX_BITS = (GLOBAL_CELLS + SHARED_CELLS - 1).bit_length()
SLOT_IDX_BITS = IDX_BITS - (WORDS_PER_SLOT - 1).bit_length()
ROW_RAILS = 4 * 32  # a stored row: 32 one-hot groups of four rails

# Fixed layers of the memories.
L_WARP = 0
# The register file: three copies (read ports rs1, rs2, rd), each one head per lane and group of
# SLOTS // NREG warps.  The lanes' heads of ports A and B alternate (lane 0's A, lane 0's B, lane
# 1's A, ...), so that lane 0's operands are complete first and its ALU starts while the other
# lanes' registers are still being read: the operand buses and the ALU's words in flight are
# spread over the layers instead of all living at once.  Port C (rd, read by CAS) follows.
REG_HEADS_PER_LANE = NWARP * NREG // SLOTS  # per copy
REG_LAYERS = 3 * -(-W * REG_HEADS_PER_LANE // qwen.linear_heads)


def reg_layer(port: int, lane: int, group: int) -> int:
    """Layer of register-file copy `port` (0: rs1, 1: rs2, 2: rd), lane `lane`, warp group `group`."""
    k = lane * REG_HEADS_PER_LANE + group  # the copy's k-th head
    per = qwen.linear_heads
    if port == 2:
        return 1 + 2 * (-(-W * REG_HEADS_PER_LANE // per)) + k // per
    return 1 + 2 * (k // per) + port


L_REGS = tuple(range(1, 1 + REG_LAYERS))  # every layer of the register file
REG_PORTS = "ABC"
WARPS_PER_REG_HEAD = SLOTS // NREG  # a head's 128 slots: 4 warps x 32 registers


def reg_head(port: int, lane: int, group: int) -> str:
    """The name of register-file copy `port`'s head for `lane` and warp group `group` (the
    netlist's memory name, kept in the linked layout: LinkedNetwork.layout["layers"])."""
    return f"reg{REG_PORTS[port]}.l{lane}.g{group}"
L_MEM0 = 1 + REG_LAYERS
N_MEM_LAYERS = -(-(GLOBAL_CELLS + SHARED_CELLS) // CELLS_PER_LAYER)  # 17
# The parameter bank and the thread-index tables follow the memory: only writeback reads them
# (LDC, S2R of threadIdx), so their buses need not hold residual dimensions through the
# register file and the memory layers.
L_PARAM = L_MEM0 + N_MEM_LAYERS

PHASES = ("blkinit", "run", "halt")
FAULTS = ("oob", "barrier", "pc", "param")


def cell_location(index: int, first_layer: int = L_MEM0) -> tuple[int, int, int, int]:
    """Memory index (global cell, or GLOBAL_CELLS + shared offset) -> (layer, head, slot, word).
    `first_layer` is the memory's first layer in a linked network (L_MEM0 plus the extra
    fetch layers of a long program: LinkedNetwork.layout["memory_first_layer"])."""
    slot, word = divmod(index, WORDS_PER_SLOT)
    return first_layer + index // CELLS_PER_LAYER, (slot // SLOTS) % qwen.linear_heads, slot % SLOTS, word


def row_rails(words: tuple[int, int]) -> list[int]:
    """The 128 rails (0 or 1) of a slot holding the two 32-bit words `words`."""
    rails = [0] * ROW_RAILS
    for i in range(32):
        rails[4 * i + ((words[0] >> i) & 1) + 2 * ((words[1] >> i) & 1)] = 1
    return rails


def written_heads(layer_heads: list[list[str]], memory_first_layer: int, gsize: int, shared_words: int,
                  threads: int) -> list[list[bool]]:
    """Per layer, per head (`layer_heads[L]`: the linked layout's head names, in head order),
    whether a launch can ever write a row of that head; the batched step holds only those
    (docs/engines.md, "Rail bits: memory per slot").  Why the others stay +0 all launch:
    the host sets only cells 0..gsize-1 and the parameter bank; a memory row is written
    only by a committed store or atomic, whose address passed the bounds check (cell <
    gsize, shared offset < shw: lsu.valid gates commit's mw_en, so an out-of-bounds store
    writes nothing); a register row of warp w only by a writeback of warp w (regfile:
    wb_w == w), and only warps below ceil(threads / W) run.  Every other head (warp table,
    thread-index tables, parameters) is held.  The batched step checks the claim: a write
    into a head it does not hold stops the batch (premises.NOT_HELD)."""
    every = range(0, GLOBAL_CELLS + SHARED_CELLS, CELLS_PER_HEAD)
    memory = {cell_location(c, memory_first_layer)[:2] for c in every}
    mine = {cell_location(c, memory_first_layer)[:2]
            for lo, n in ((0, gsize), (GLOBAL_CELLS, shared_words))
            for c in range(lo - lo % CELLS_PER_HEAD, lo + n, CELLS_PER_HEAD)}
    groups = -(-(-(-threads // W)) // WARPS_PER_REG_HEAD)  # warp groups with a running warp
    regs = {reg_head(p, lane, g): g for p in range(len(REG_PORTS)) for lane in range(W)
            for g in range(NWARP // WARPS_PER_REG_HEAD)}
    return [[(L, h) in mine if (L, h) in memory else regs.get(name, -1) < groups
             for h, name in enumerate(names)] for L, names in enumerate(layer_heads)]
