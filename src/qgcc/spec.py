"""The machine description: every capacity and address-map fact in one place.

The compiler, the emulator, the launcher and the linker all read these
numbers from here, so a limit is changed once and every diagnostic that names
it stays true.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class MachineSpec:
    warp_size: int = 4
    num_regs: int = 32
    max_block_threads: int = 256
    # Memory is an array of 32-bit cells, addressed in cells (not bytes): every
    # element of every buffer, chars included, occupies one cell.  Pointer
    # arithmetic therefore adds element counts, never byte counts.
    global_words: int = 65536  # 256 KiB of global memory across all buffers
    shared_words: int = 4096  # 16 KiB of shared memory per block
    shared_base: int = 0x10000  # shared memory lives at cell addresses >= this
    # Instructions in one program.  The ROM holds one MLP's share of rows (4,096) per layer,
    # each MLP past the first costing a layer (docs/architecture.md, "Program ROM"): five
    # MLPs beside the largest machine (41 layers: the float FMA and lane crossing) make 45.
    max_instrs: int = 20480
    # The PC's width in a program of up to 2**short_pc_bits instructions, the width every
    # program had before the ROM grew past two MLPs (such programs link as they did); a
    # longer program's PC is as wide as its length needs (layout.pc_bits).
    short_pc_bits: int = 13
    max_params: int = 64
    max_grid_dim: int = 65535

    @property
    def max_warps(self) -> int:
        return self.max_block_threads // self.warp_size


SPEC = MachineSpec()
