"""A launch: kernel, grid and block shape, parameter words and the global memory image.

Every engine starts from the same Launch, so the memory map (which buffer sits
at which cell address) is decided once, here, before anything runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ..diagnostics import UsageError
from ..spec import SPEC
from ..program import ELEM_DTYPES, NULL_GUARD_NAME, Kernel, Program
from .structbuf import to_cells

if TYPE_CHECKING:  # the launch is built before, and without, linking
    from ..link.linker import LinkedNetwork

Dim3 = tuple[int, int, int]


@dataclass(frozen=True)
class Buffer:
    name: str
    base: int  # first cell
    length: int  # cells (elements; two per element of a 64-bit type)
    ctype: str
    dtype: np.dtype | None = None  # a buffer of structs: the caller's structured dtype


@dataclass
class Launch:
    program: Program
    kernel: Kernel
    grid: Dim3
    block: Dim3
    params: list[int]  # u32 words: one per kernel parameter (pointers: base cell address), two for a 64-bit scalar
    # (a T ** parameter's buffers: NAME[0], NAME[1], ... then NAME, the cells holding their addresses)
    memory: np.ndarray  # uint32 global memory image, one cell per element
    buffers: dict[str, Buffer] = field(default_factory=dict)
    # The layers the program was linked into (a .qg or a checkpoint carries them); None: the
    # network engines link the program when they first run it.
    network: LinkedNetwork | None = None
    dynamic_shared: int = 0  # extern __shared__ cells per block, set at launch (--shared BYTES)

    @property
    def shared_words(self) -> int:
        """Shared cells per block: the kernel's static __shared__ cells, then the dynamic ones."""
        return self.kernel.shared_words + self.dynamic_shared

    @property
    def threads_per_block(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]

    @property
    def num_blocks(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]

    @property
    def warps_per_block(self) -> int:
        return -(-self.threads_per_block // SPEC.warp_size)

    def read_buffer(self, memory: np.ndarray, name: str) -> np.ndarray:
        """A buffer's final contents in its pointee dtype (chars keep their low 8 bits); a `T **`
        parameter's is its cells (addresses), 'NAME[J]' the J-th buffer they point to."""
        b = self.buffers[name]
        cells = np.asarray(memory[b.base:b.base + b.length], dtype=np.uint32)
        if b.dtype is not None:
            from .structbuf import cells_to_struct

            return cells_to_struct(cells, b.dtype)
        dtype = ELEM_DTYPES[b.ctype]
        if dtype == "bool":
            return cells != 0
        if dtype in ("int8", "uint8"):
            return (cells & 0xFF).astype(np.uint8).view(dtype)
        if dtype in ("int16", "uint16"):
            return (cells & 0xFFFF).astype(np.uint16).view(dtype)
        return cells.view(dtype).copy()


def parse_dim3(text: str, what: str) -> Dim3:
    try:
        parts = [int(p) for p in text.split(",")]
    except ValueError:
        raise UsageError(f"--{what} '{text}': expected X[,Y[,Z]] with positive integers") from None
    if not 1 <= len(parts) <= 3 or any(p < 1 for p in parts):
        raise UsageError(f"--{what} '{text}': expected X[,Y[,Z]] with positive integers")
    while len(parts) < 3:
        parts.append(1)
    return (parts[0], parts[1], parts[2])


def shared_cells(shared_bytes: int, kernel: Kernel) -> int:
    """--shared BYTES (CUDA's third launch parameter) -> dynamic shared cells, checked against
    the per-block limit together with the kernel's static __shared__ cells."""
    if type(shared_bytes) is not int or shared_bytes < 0:
        raise UsageError(f"--shared {shared_bytes!r}: expected a number of bytes >= 0")
    cells = -(-shared_bytes // 4)  # a cell is 4 bytes; every element, a char too, takes one cell
    if kernel.shared_words + cells > SPEC.shared_words:
        raise UsageError(f"--shared {shared_bytes}: kernel '{kernel.name}' would use "
                         f"{kernel.shared_words} static + {cells} dynamic = "
                         f"{kernel.shared_words + cells} shared cells per block; the machine has "
                         f"{SPEC.shared_words} ({SPEC.shared_words * 4} bytes); give --shared at most "
                         f"{(SPEC.shared_words - kernel.shared_words) * 4}")
    return cells


def constant_image(program: Program, values: dict[str, np.ndarray] | None) -> np.ndarray:
    """Global cells 0.. of the __constant__ variables: the source's initialisers, replaced by
    --const arrays (which must have the variable's dtype and element count)."""
    values = dict(values or {})
    known = {c.name: c for c in program.user_constants}
    for name in values:
        if name not in known:
            have = ", ".join(known) or "none"
            raise UsageError(f"--const {name}: the program has no __constant__ variable '{name}' "
                             f"(it has: {have})")
    cells = []
    for c in program.constants:
        if c.name in values:
            arr = np.asarray(values[c.name])
            want = np.dtype(ELEM_DTYPES[c.ctype])
            if arr.dtype.names is not None and c.ctype == "unsigned" and arr.nbytes == 4 * c.length:
                # a __constant__ array of structs is kept as its cells: a structured array whose
                # members are 4-byte numbers (docs/subset.md, "Structs") is those cells
                arr = np.ascontiguousarray(arr).view(np.uint32).reshape(-1)
            if arr.dtype != want or arr.size != c.length:
                raise UsageError(f"--const {c.name}: {c.describe()} needs {c.length} {want} "
                                 f"value{'s' if c.length != 1 else ''}; got {arr.dtype} of shape "
                                 f"{tuple(arr.shape)}")
            cells.append(to_cells(arr.reshape(-1)))
        else:
            cells.append(np.array(c.init, dtype=np.uint32))
    return np.concatenate(cells).astype(np.uint32) if cells else np.zeros(0, np.uint32)


def make_launch(program: Program, kernel: Kernel, grid: Dim3, block: Dim3,
                scalars: dict[str, int], arrays: dict[str, np.ndarray],
                network: LinkedNetwork | None = None, shared_bytes: int = 0,
                constants: dict[str, np.ndarray] | None = None) -> Launch:
    """Lay out the __constant__ variables from cell 0 (a compiled program's first is the null
    guard, cells 0 and 1: program.NULL_GUARD_NAME), then the buffers contiguously in parameter
    order, and check every capacity."""
    threads = block[0] * block[1] * block[2]
    if threads > SPEC.max_block_threads:
        raise UsageError(f"--block {block[0]},{block[1]},{block[2]} has {threads} threads; "
                         f"the machine runs at most {SPEC.max_block_threads} threads per block")
    for axis, g in zip("xyz", grid):
        if g > SPEC.max_grid_dim:
            raise UsageError(f"--grid {axis}={g} exceeds the limit {SPEC.max_grid_dim}")
    if kernel.shared_words > SPEC.shared_words:
        raise UsageError(f"kernel '{kernel.name}' uses {kernel.shared_words} shared cells; "
                         f"the machine has {SPEC.shared_words}")
    dynamic = shared_cells(shared_bytes, kernel)
    params: list[int] = []
    buffers: dict[str, Buffer] = {}
    chunks: list[np.ndarray] = [constant_image(program, constants)]
    # Local-array frames, one per thread of a block (blocks run one after another).
    chunks.append(np.zeros(kernel.local_words * threads, np.uint32))
    base = int(chunks[0].size + chunks[1].size)
    for p in kernel.params:
        if p.texture:  # a texture: its buffer, and its handle as two parameter words
            from .textures import texture_cells

            cells, handle = texture_cells(arrays[p.name], p, base)
            buffers[p.name] = Buffer(p.name, base, int(cells.size), p.ctype,
                                     arrays[p.name].dtype if p.struct is not None else None)
            params.extend(handle)
            chunks.append(cells)
            base += int(cells.size)
        elif p.indirect:
            # `T **`: each array its own buffer (NAME[0], NAME[1], ...), then NAME, their
            # base addresses, one cell each
            addrs = []
            for j, arr in enumerate(arrays[p.name]):
                cells = to_cells(np.asarray(arr).reshape(-1))
                buffers[f"{p.name}[{j}]"] = Buffer(f"{p.name}[{j}]", base, int(cells.size), p.ctype)
                addrs.append(base)
                chunks.append(cells)
                base += int(cells.size)
            buffers[p.name] = Buffer(p.name, base, len(addrs), "unsigned")
            params.append(base)
            chunks.append(np.array(addrs, np.uint32))
            base += len(addrs)
        elif p.pointer and arrays[p.name] is None:  # a null pointer argument (qgrun --arg p=null)
            _check_null_guard(program, p)
            params.append(0)
        elif p.pointer:
            arr = arrays[p.name]
            if p.struct is not None:
                from .structbuf import struct_cells

                cells = struct_cells(arr.reshape(-1))
                buffers[p.name] = Buffer(p.name, base, int(cells.size), p.ctype, arr.dtype)
            else:
                cells = to_cells(arr.reshape(-1))
                buffers[p.name] = Buffer(p.name, base, int(cells.size), p.ctype)
            params.append(base)
            chunks.append(cells)
            base += int(cells.size)
        elif p.struct is not None:  # a struct by value: its cells are parameter words
            from .structbuf import struct_cells

            params.extend(int(c) for c in struct_cells(arrays[p.name].reshape(-1)))
        else:
            v = scalars[p.name]
            params.extend((v >> (32 * i)) & 0xFFFFFFFF for i in range(p.words))
    if base > SPEC.global_words:
        what = ("the buffers" if not program.user_constants and not kernel.local_words else
                "the __constant__ variables, local arrays and buffers")
        guard = program.null_guard_cells
        size = f"{SPEC.global_words * 4 // 1024} KiB"
        has = (f"{SPEC.global_words - guard} for them ({SPEC.global_words}, {size}, less the null guard's {guard})"
               if guard else f"{SPEC.global_words} ({size})")
        raise UsageError(f"{what} need {base - guard} cells of global memory; the machine has {has}")
    memory = np.concatenate(chunks)
    return Launch(program, kernel, grid, block, params, memory.astype(np.uint32), buffers, network,
                  dynamic)


def _check_null_guard(program: Program, p) -> None:
    """A null argument is address 0, which only a program with the null guard keeps free of
    objects (program.NULL_GUARD_NAME); in another it would point at the first one."""
    if not program.null_guard_cells:
        raise UsageError(f"--arg {p.name}=null: this program has an object at address 0 (a .qsass without "
                         f"'.const unsigned {NULL_GUARD_NAME}[2]', or a .qg compiled before the null guard), "
                         "so a null pointer would point at it; compile it again with qgcc")


def memory_map(global_cells: int, shared_cells: int) -> str:
    """The valid cell ranges, for fault messages (shared by every engine)."""
    g = f"global cells 0..{global_cells - 1}" if global_cells else "no global cells"
    s = (f"shared cells {SPEC.shared_base:#x}..{SPEC.shared_base + shared_cells - 1:#x}" if shared_cells
         else "no shared cells")
    return f"{g}, {s}"
