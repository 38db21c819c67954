"""Fetch and decode: the program ROM, one table row per instruction (layer 0 MLP).

The row selected by the warp's minimum PC drives one-hot opcode flags, operand
enables and the instruction's fields (registers, immediate, offset, branch target,
next PC), so decoding costs no gates of its own: the program is baked into the
table's weights.

A row is one MLP unit (an AND of the PC's bits and RUN, netlist.Table.single), and one
MLP holds ROWS_PER_MLP rows beside the layer's other gates.  A longer program's ROM is
split into chunks of ROWS_PER_MLP rows in consecutive MLPs: chunk c's table also passes
chunk c-1's outputs through (a restoring pair per column, Table.restoring: a single unit
would double their error at every chunk), so the last chunk's outputs are the decoded
instruction whatever chunk holds it (at most one chunk's row fires).  Each chunk after the
first delays decoding by one layer, so the linker moves every layer after the warp table
down by `fetch_layers(len(code)) - 1` (core.build_core): programs of up to ROWS_PER_MLP
instructions link exactly as before.  A row matches the PC's bits: as many as
layout.pc_bits gives the program (13 up to 8,192 instructions).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...isa import FLOAT_OPS, MICRO_STEPPED, WRITES_RD, AtomOp, Fmt, Op, ShflMode, SReg, VoteMode
from ...program import Program
from ..circuits import and_step, eq_lits
from ..netlist import Netlist, Sig

ROWS_PER_MLP = 4096  # ROM rows per MLP (one unit each), leaving room for the layer's other gates


def fetch_layers(n_instrs: int) -> int:
    """MLP layers the ROM of an n-instruction program spans (1 up to ROWS_PER_MLP)."""
    return max(1, -(-n_instrs // ROWS_PER_MLP))


def field_widths(pc_bits: int) -> dict[str, int]:
    """The ROM's fields and their widths; branch targets and next PCs are as wide as the PC."""
    return {"rd": 5, "rs1": 5, "rs2": 5, "immv": 32, "off": 32, "tgt": pc_bits, "nxt": pc_bits}


@dataclass
class Decoded:
    rom: list[Sig]
    columns: dict[str, int]  # flag or field name -> first ROM column
    widths: dict[str, int]  # field name -> width (field_widths)
    layers: int = 1  # MLP layers the ROM spans (fetch_layers)
    restored_buses: dict[str, list[Sig]] = field(default_factory=dict)

    def flag(self, name: str) -> Sig:
        return self.rom[self.columns[name]]

    def bus(self, name: str) -> list[Sig]:
        return self.rom[self.columns[name]:self.columns[name] + self.widths[name]]

    def restored(self, n: Netlist, name: str) -> list[Sig]:
        """Field `name` through one restoring gate per bit (n.copy), for readers that weight it by 2 or more.

        A ROM row is one unit, without a pair's level restoration, and an AND of the PC's
        bits and RUN is a wide row: under relative weight noise e its outputs' levels are off
        by about 400 e, which a reader multiplies by its weight (bench/margin_static.py: the
        ALU's and the address adder's sum bits read immv and off by 4).  A copy is off by
        about 50 e.  The copies sit in the MLP after the ROM, before their readers need them."""
        if name not in self.restored_buses:
            self.restored_buses[name] = [n.copy(x, f"{name}r{i}") for i, x in enumerate(self.bus(name))]
        return self.restored_buses[name]

    def restored_flag(self, n: Netlist, name: str) -> Sig:
        """Flag `name` through a restoring gate, for a reader that weights it by 2 or more (see restored)."""
        if name not in self.restored_buses:
            self.restored_buses[name] = [n.copy(self.flag(name), f"{name}r")]
        return self.restored_buses[name][0]

    @property
    def op(self) -> dict[str, Sig]:
        return {o_.name: self.flag(f"op_{o_.name}") for o_ in Op if f"op_{o_.name}" in self.columns}


def build(n: Netlist, program: Program, RUN: Sig, R_MIN: list[Sig]) -> Decoded:
    rom_fields: dict[str, int] = {}
    PCB = len(R_MIN)
    widths = field_widths(PCB)
    # Float opcodes get ROM columns only in programs that use floats (integer programs link as before).
    has_float = any(ins.op in FLOAT_OPS for ins in program.code)
    flags = [f"op_{op.name}" for op in Op if has_float or op not in FLOAT_OPS] + \
        [f"atom_{a.name}" for a in AtomOp] + [f"sreg_{s.name}" for s in SReg] + \
        [f"shfl_{m.name}" for m in ShflMode] + \
        [f"shfl_w{1 << k}" for k in range(3)] + [f"vote_{m.name}" for m in VoteMode] + \
        ["rs1en", "rs2en", "rden", "wrd", "ismem", "ismul"]
    cols = []
    for f_ in flags:
        rom_fields[f_] = len(cols)
        cols.append(f_)
    for name, wd in widths.items():
        rom_fields[name] = len(cols)
        cols += [f"{name}[{i}]" for i in range(wd)]
    rows: list[set[int]] = []  # per instruction: the ROM columns that are 1
    for pc, ins in enumerate(program.code):
        on = set()
        on.add(f"op_{ins.op.name}")
        if ins.op is Op.ATOM:
            on.add(f"atom_{AtomOp(ins.mod).name}")
        if ins.op is Op.S2R:
            on.add(f"sreg_{SReg(ins.mod).name}")
        if ins.op is Op.SHFL:
            on |= {f"shfl_{ShflMode(ins.mod & 3).name}", f"shfl_w{1 << (ins.mod >> 2)}"}
        if ins.op is Op.VOTE:
            on.add(f"vote_{VoteMode(ins.mod).name}")
        f = ins.fmt
        if f in (Fmt.ALU, Fmt.XLANE, Fmt.UN, Fmt.LD, Fmt.ST, Fmt.ATOM, Fmt.BRC, Fmt.JR) or (f is Fmt.MOV and not ins.use_imm):
            on.add("rs1en")
        if (f in (Fmt.ALU, Fmt.XLANE) and not ins.use_imm) or f in (Fmt.ST, Fmt.ATOM):
            on.add("rs2en")
        if (ins.op is Op.ATOM and ins.mod == AtomOp.CAS) or ins.op is Op.FFMA:
            on.add("rden")
        if ins.op in WRITES_RD:
            on.add("wrd")
        if ins.op in MICRO_STEPPED:
            on.add("ismem")
        if ins.op is Op.MUL:
            on.add("ismul")
        vals = {"rd": ins.rd, "rs1": ins.rs1, "rs2": ins.rs2,
                "immv": ins.imm & 0xFFFFFFFF if ins.use_imm and f in (Fmt.ALU, Fmt.XLANE, Fmt.MOV) else 0,
                "off": ins.imm & 0xFFFFFFFF if f in (Fmt.LD, Fmt.ST, Fmt.ATOM, Fmt.LDC) else 0,
                "tgt": ins.imm & (2 ** PCB - 1) if f in (Fmt.BRA, Fmt.BRC) else 0,
                "nxt": (pc + 1) & (2 ** PCB - 1)}
        ones = {rom_fields[name] for name in on}
        for name, v in vals.items():
            ones |= {rom_fields[name] + i for i in range(widths[name]) if (v >> i) & 1}
        rows.append(ones)
    rom: list[Sig] = []
    layers = fetch_layers(len(rows))
    for c in range(layers):
        steps, coefs = [], [dict() for _ in cols]
        if rom:  # the previous chunk's outputs, passed through (restored: see Table.restoring)
            for j, x in enumerate(rom):
                coefs[j][len(steps)] = 1
                steps.append(and_step([x]))
        for pc in range(c * ROWS_PER_MLP, min(len(rows), (c + 1) * ROWS_PER_MLP)):
            for j in rows[pc]:
                coefs[j][len(steps)] = 1
            steps.append(and_step([RUN] + eq_lits(R_MIN, pc)))
        rom = n.table(steps, coefs, "rom" if layers == 1 else f"rom{c}", single=True, restoring=len(rom))
    return Decoded(rom, rom_fields, widths, layers)
