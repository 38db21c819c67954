"""The figures in docs/ that follow from the code, rendered from it.

A second implementation is written from docs/protocol.md, docs/qg-format.md and
docs/checkpoint.md alone, so a stale number there (a layer range, a field width, a
limit, the memory map) is a bug in it.  Each such figure lives in a block between

    <!-- generated: NAME (python -m qgcc.tools.docgen) -->
    ...
    <!-- end generated: NAME -->

and `render(NAME)` writes the block's body from the code.  `python -m qgcc.tools.docgen`
rewrites every block in place; `--check` lists stale ones and exits 1 (tests/test_docs.py
does the same).  docs/architecture.md's layer map is qgcc.tools.describe's.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Callable

from ..link.blocks.fetch import ROWS_PER_MLP, fetch_layers
from ..link.layout import (CELLS_PER_LAYER, GLOBAL_CELLS, L_MEM0, PHASES, SHARED_CELLS, SLOTS, WORDS_PER_SLOT,
                           cell_location)
from ..qwen35 import QWEN35_2B as qwen, ValueHeads
from ..spec import SPEC
from .describe import reference_network

DOCS = Path(__file__).resolve().parents[3] / "docs"
BEGIN = re.compile(r"<!-- generated: ([a-z0-9-]+) \(python -m qgcc\.tools\.docgen\) -->\n")


def _gb(n: float) -> str:
    return f"{n / 1e9:.1f} GB"


def limits() -> str:
    s = SPEC
    rows = [
        ("threads per block (`--block` X·Y·Z)", f"{s.max_block_threads}", "`SPEC.max_block_threads`"),
        ("each grid dimension (`--grid`)", f"{s.max_grid_dim}", "`SPEC.max_grid_dim`"),
        ("lanes per warp", f"{s.warp_size}", "`SPEC.warp_size`"),
        ("registers per thread", f"{s.num_regs}", "`SPEC.num_regs`"),
        ("global memory: constants, local frames and buffers together",
         f"{s.global_words:,} cells ({s.global_words * 4 // 1024} KiB)", "`SPEC.global_words`"),
        ("shared memory per block: static `__shared__` plus `--shared`",
         f"{s.shared_words:,} cells ({s.shared_words * 4 // 1024} KiB)", "`SPEC.shared_words`"),
        ("first shared cell address", f"{s.shared_base:#x}", "`SPEC.shared_base`"),
        ("parameter words (a 64-bit parameter takes two)", f"{s.max_params}", "`SPEC.max_params`"),
        ("instructions in a program", f"{s.max_instrs:,}", "`SPEC.max_instrs`"),
    ]
    out = ["| limit | value | in the code |", "|---|---|---|"]
    out += [f"| {a} | {b} | {c} |" for a, b, c in rows]
    return "\n".join(out)


# The first input's fields (docs/protocol.md, section 2): what the host writes there.
FIRST_INPUT = (
    ("one", "1 (always +8)"),
    ("bx", "block shape x"), ("by", "block shape y"), ("bz", "block shape z"),
    ("gx", "grid shape x"), ("gy", "grid shape y"), ("gz", "grid shape z"),
    ("nt", "threads per block, bx·by·bz"),
    ("nw", f"warps per block, ceil(nt / {SPEC.warp_size})"),
    ("gsize", "global cells in use: the whole image of section 3 (constants, local frames, buffers)"),
    ("shw", "shared cells per block: the kernel's static `shared_words` **plus** the launch's dynamic "
            "cells (`--shared` BYTES / 4, rounded up)"),
    ("nparam", "parameter **words**: one per parameter, two for a 64-bit scalar (low word first)"),
    ("entry", "the kernel's first instruction (`kernels[k].entry`)"),
    ("kend", "one past its last (`kernels[k].end`)"),
    ("phase", f"one-hot over `protocol.phases` = {list(PHASES)}: bit {PHASES.index('blkinit')} (`blkinit`)"),
)


def first_input() -> str:
    fields = reference_network().fields
    out = ["| field | bits | value |", "|---|---|---|"]
    out += [f"| `{name}` | {len(fields[name])} | {what} |" for name, what in FIRST_INPUT]
    return "\n".join(out)


def memory_map() -> str:
    cm = reference_network()
    mem0 = cm.layout.get("memory_first_layer", L_MEM0)
    g_first, g_last = cell_location(0, mem0)[0], cell_location(GLOBAL_CELLS - 1, mem0)[0]
    s_first = cell_location(GLOBAL_CELLS, mem0)[0]
    s_last = cell_location(GLOBAL_CELLS + SHARED_CELLS - 1, mem0)[0]
    pl, ph = cm.param_head
    return "\n".join([
        "| cells | what | where in the recurrent states |",
        "|---|---|---|",
        "| `0` … `C-1` | the `__constant__` variables (metadata `constants`), in address order | "
        f"global memory: layers {g_first}-{g_last} |",
        "| `C` … `C+nt·N-1` | local-array frames: thread `t` (warp·4 + lane) owns `C+t·N` … `C+t·N+N-1`, "
        "`N` = `kernels[k].local_words` (0 when absent); zero at launch | the same |",
        "| from `C+nt·N` on | the buffers, one per pointer parameter in parameter order, back to back; "
        "a buffer of `n` elements takes `n` cells (two per 64-bit element, low word first); `gsize` "
        "ends here | the same |",
        f"| shared offset `o` (address `{SPEC.shared_base:#x}+o`), `o` < `shw` | per block; the host seeds "
        f"nothing there | memory index `{GLOBAL_CELLS}+o`: layer {s_first}"
        + (f"-{s_last}" if s_last != s_first else "") + " |",
        f"| parameter word `j` (`j` < `nparam`) | a scalar's word (a 64-bit scalar: two words, low first), "
        f"or the first cell of a pointer's buffer | layer {pl}, head {ph}, row `j` (`protocol.params`), "
        "dual-rail |",
        "",
        f"Memory index `i` (a global cell, or {GLOBAL_CELLS} + a shared offset) is word `i % {WORDS_PER_SLOT}` of "
        f"slot `s = i // {WORDS_PER_SLOT}`, at layer `cells.first_layer + i // {CELLS_PER_LAYER}`, "
        f"head `(s // {SLOTS}) % {qwen.linear_heads}`, row `s % {SLOTS}`; `cells.first_layer` is {mem0} "
        "(one more past 4,096 instructions).",
    ])


def machine_layers() -> str:
    n = reference_network().num_layers
    return (f"An integer program (and one with floats but no `fmaf`) of up to 4,096 instructions links into "
            f"**{n}** layers: `qgpu.machine_layers` is `[0, 1, ..., {n - 1}]`, "
            f"`qgpu.text_config.num_hidden_layers` is {n} and its `layer_types` {n} × `linear_attention`. "
            f"`fmaf` adds up to 5 layers and a program past {ROWS_PER_MLP:,} instructions one more per further "
            f"{ROWS_PER_MLP:,}, {fetch_layers(SPEC.max_instrs) - 1} at most (docs/architecture.md); "
            "read the count from `num_layers` (`.qg`) or `qgpu.machine_layers` (checkpoint), never assume it.")


def layer_sizes() -> str:
    n = reference_network().num_layers
    out = ["| value heads | parameters per layer (dense) | the machine's " + f"{n} layers | bfloat16 | float32 |",
           "|---|---|---|---|---|"]
    for heads in (qwen.linear_heads, 2 * qwen.linear_heads):
        vh = ValueHeads(heads)
        per = sum(_prod(vh.shape(name)) for name in qwen.shapes)
        out.append(f"| {heads} | {per:,} | {per * n:,} | {_gb(2 * per * n)} | {_gb(4 * per * n)} |")
    return "\n".join(out)


def _prod(shape) -> int:
    p = 1
    for d in shape:
        p *= d
    return p


def ctypes() -> str:
    from ..program import ELEM_DTYPES

    out = ["| `ctype` | numpy dtype |", "|---|---|"]
    out += [f"| `{name}` | {dtype} |" for name, dtype in ELEM_DTYPES.items()]
    return "\n".join(out)


BLOCKS: dict[str, tuple[str, Callable[[], str]]] = {  # name -> (the doc that holds it, renderer)
    "limits": ("cli.md", limits),
    "ctypes": ("qg-format.md", ctypes),
    "first-input": ("protocol.md", first_input),
    "memory-map": ("protocol.md", memory_map),
    "machine-layers": ("checkpoint.md", machine_layers),
    "layer-sizes": ("checkpoint.md", layer_sizes),
}


def render(name: str) -> str:
    return BLOCKS[name][1]().rstrip("\n") + "\n"


def blocks(text: str) -> dict[str, str]:
    """Every generated block's body in a document."""
    out = {}
    for m in BEGIN.finditer(text):
        name = m.group(1)
        end = text.find(f"<!-- end generated: {name} -->", m.end())
        if end < 0:
            raise ValueError(f"generated block '{name}' has no end marker")
        out[name] = text[m.end():end]
    return out


def rewrite(text: str) -> str:
    for name in blocks(text):
        head = f"<!-- generated: {name} (python -m qgcc.tools.docgen) -->\n"
        start = text.index(head) + len(head)
        end = text.index(f"<!-- end generated: {name} -->", start)
        text = text[:start] + render(name) + text[end:]
    return text


def stale(docs: Path = DOCS, names=None) -> list[str]:
    """'DOC: NAME' for each block (of `names`, default all) that is missing from its document or
    differs from the code."""
    bad = []
    for name, (doc, _) in BLOCKS.items():
        if names is not None and name not in names:
            continue
        found = blocks((docs / doc).read_text(encoding="utf-8"))
        if name not in found:
            bad.append(f"{doc}: {name} (missing)")
        elif found[name] != render(name):
            bad.append(f"{doc}: {name}")
    return bad


def main(argv: list[str]) -> int:
    if "--check" in argv:
        bad = stale()
        for b in bad:
            print(f"stale generated block: docs/{b}", file=sys.stderr)
        return 1 if bad else 0
    for doc in sorted({d for d, _ in BLOCKS.values()}):
        path = DOCS / doc
        text = path.read_text(encoding="utf-8")
        new = rewrite(text)
        if new != text:
            path.write_text(new, encoding="utf-8")
            print(f"rewrote docs/{doc}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
