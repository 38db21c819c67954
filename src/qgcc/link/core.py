"""The SIMT machine as a netlist: one forward pass of the compiled layers is one step.

build_core wires the hardware blocks (qgcc.link.blocks) the way a core wires its
fetcher, decoder, register file, ALU, load/store unit and scheduler.  The order of
the calls is the order of the netlist's nodes, which decides placement and weights.

Layout decisions (docs/architecture.md renders the generated maps):

* Residual state fields carry the launch constants, the phase, the scheduler
  summary (current warp, ready and waiting masks) and the *pending writes* of the
  previous step (register writeback, memory write, warp-table row).  Every
  memory writes its pending entry before it reads, in the same DeltaNet call,
  so a value written by step t is visible to every read of step t+1.
* DeltaNet memories: warp table (per warp: 4 lane PCs, live lanes, min PC,
  active mask) in layer 0; three copies of the register file (read ports rs1,
  rs2, rd) in layers 1-12, one head per lane and group of four warps; global and
  shared memory in layers 13-22, one 32-bit cell per slot; the kernel-parameter
  bank and the thread-index tables in layer 23 (layout.py derives these numbers).
* Phases: BLKINIT (one step per warp at the start of every block: its warp-table
  row, and its four lanes' (x, y, z), which the network counts, in the thread-index
  tables), RUN (one warp instruction per
  step; LD, ST, ATOM, MUL and the micro-stepped float instructions take one micro-step
  per active lane), HALT.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..isa import encode
from ..program import Program
from .blocks import (alu, commit, control, fetch, fpu, launch, lsu, mul, params, regfile, scheduler, trace,
                     warptable, writeback, xlane)
from .blocks.state import declare_state
from .layout import L_WARP, pc_bits
from .netlist import Netlist, Sig


@dataclass
class Core:
    """The machine as a netlist, with the state fields and memory heads the linker maps."""

    net: Netlist
    fields: dict[str, list[Sig]]  # state fields (inputs), by name
    heads: dict[str, tuple[int, int]] = field(default_factory=dict)  # memory name -> (layer, memory index)
    program_code: list[int] = field(default_factory=list)
    shift: int = 0  # layers every memory after the warp table moved down (fetch.fetch_layers - 1)


def build_core(program: Program) -> Core:
    n = Netlist()
    st = declare_state(n, pc_bits(len(program.code)))
    heads: dict[str, tuple[int, int]] = {}
    tids = launch.thread_indices(n, st)  # BLKINIT: the lanes' (x, y, z), counted by the network
    row = warptable.build(n, st, heads, tids.lanes[:-1])  # layer 0 (and the thread-index tables)
    dec = fetch.build(n, program, st.RUN, row.min_pc)  # the ROM, layer 0 MLP (and more for a long program)
    ops = regfile.build(n, st, dec, heads)  # layers 1-12
    const = params.build(n, st, dec, heads)  # layer L_PARAM, after the memory
    fops = fpu.used_ops(program)  # the float unit is linked only into programs that use it
    xl = xlane.build(n, dec, ops, row) if xlane.used(program) else None  # SHFL/VOTE: lanes read each other
    res = alu.build(n, st, dec, ops, row, fops, xl)
    mem = lsu.build(n, st, dec, ops, row, heads)  # layers 13-22
    fu = fpu.build(n, dec, mem, fops)  # FMUL shares the integer multiplier's array
    prod = fu.product if fu.product is not None else mul.build(n, mem.Ams, mem.Bms, dec.op["MUL"])
    wb = writeback.build(n, st, dec, row, res, mem, prod, const, fu.result)
    ctl = control.build(n, st, dec, row, ops, mem)
    sch = scheduler.build(n, st, dec, wb.complete, ctl.warp_alive, late=mem.MEMOUT[0])
    lb = launch.build(n, st, tids, sch.block_done, ctl.any_fault, mem.oob, ctl.bar_div, ctl.pc_bad, ctl.par_bad)
    commit.build(n, st, dec, mem, wb, ctl, sch, lb)
    trace.build(n, st, row, mem, ctl, wb.complete)
    shift = dec.layers - 1
    if shift:
        shift_after_warp_table(n, heads, shift)
    return Core(n, st.fields, heads, [encode(i) for i in program.code], shift)


def shift_after_warp_table(n: Netlist, heads: dict[str, tuple[int, int]], by: int) -> None:
    """Move every memory after layer L_WARP, and every gate's earliest layer, `by` layers down.

    A ROM spread over several MLPs (fetch.fetch_layers) decodes `by` layers later, so the
    register file, the memory and everything placed relative to them move with it; the
    mixers of the layers between stay empty.  Layer numbers in layout.py are those of a
    one-layer ROM; a linked network records its memory's first layer (linker).
    """
    for m in n.memories:
        if m.layer > L_WARP:
            m.layer += by
    n.floor = {s: f + by for s, f in n.floor.items()}
    for name, (layer, mi) in heads.items():
        if layer > L_WARP:
            heads[name] = (layer + by, mi)
