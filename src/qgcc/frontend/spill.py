"""Register spilling: when a kernel needs more than the machine's 32 registers, some values
live in the thread's local frame instead, as every GPU compiler does (CUDA's "local memory").

The frame is the one local arrays use (docs/subset.md, "Variables"): `local_words` cells per
thread in global memory, its base computed once at the kernel's entry in one register.  The
spill slots follow the local arrays in it.  Spilling a virtual register v rewrites the code so
that every instruction that reads v first loads it from v's slot into a fresh register, and
every instruction that writes v writes a fresh register and stores it to the slot (one fresh
register per instruction, so an instruction that reads and writes v, like ATOM.CAS or FFMA,
keeps one register); a v whose every definition moves one immediate is not stored at all: the
immediate is moved again before each use (rematerialised).  Which values spill is the
colouring's answer (frontend/spillcolour.py): all those it could not colour, in one round,
then the kernel is coloured again; at the end the allocator's own colouring
(regalloc.colour_graph) is kept instead when it fits and leaves fewer moves.  Never spilled:
the frame base, what is computed before it (the thread's ids), a reload, and what a
subroutine touches (routines are shared by their callers, whose clobber sets are fixed).

Cost: one LD per use and one ST per definition of a spilled value, each a micro-stepped memory
instruction in the network (one step per active lane); one MOV per use of a rematerialised one.
"""

from __future__ import annotations

from ..isa import Instr, Op
from .ir import VI
from .regalloc import BRANCHES, Code, colour_graph, emit, interference, prepare
from .spillcolour import NEVER, colour_or_spill, spill_costs


def _routine_vregs(code: Code) -> set[int]:
    """Vregs that subroutine code or a call touches (its arguments, link and clobbers)."""
    out: set[int] = set()
    starts = [vi.target for vi in code.ins if vi.clobbers is not None]
    seen: set[int] = set()
    stack = list(starts)
    while stack:
        i = stack.pop()
        if i in seen or i >= len(code.ins):
            continue
        seen.add(i)
        stack.extend(code.succ(i, into_calls=False))
    for i, vi in enumerate(code.ins):
        if i in seen or vi.clobbers is not None or (vi.op is Op.MOV and vi.target is not None):
            out.update(r for r in vi.reads() if r >= 0)
            if vi.writes() is not None:
                out.add(vi.writes())
            out.update(vi.clobbers or ())
    return out


def _before_frame(code: Code, frame: int) -> set[int]:
    """Vregs computed before the frame base exists (the thread's ids it is computed from): no
    slot to store them in yet.  Entry zeroings (`MOV v, #0`) are not computed: those may spill."""
    out: set[int] = set()
    for vi in code.ins:
        w = vi.writes()
        if w == frame:
            break
        if w is not None and not (vi.op is Op.MOV and vi.use_imm and vi.imm == 0 and vi.target is None):
            out.add(w)
    return out


def _constants(code: Code) -> dict[int, int]:
    """Vregs whose every definition is `MOV v, #imm` with one imm: spilling one of them moves
    the immediate again before each use (no slot, no load, no store)."""
    out: dict[int, int | None] = {}
    for vi in code.ins:
        w = vi.writes()
        if w is not None:
            imm = vi.imm if vi.op is Op.MOV and vi.use_imm and vi.target is None else None
            out[w] = imm if out.get(w, imm) == imm else None
    return {v: imm for v, imm in out.items() if imm is not None}


def _spill(code: Code, slots: dict[int, int], remat: dict[int, int], frame: int, fresh: int) -> int:
    """Rewrite code so that each vreg v of `slots` lives in frame slot slots[v], and each of
    `remat` is moved from its immediate before each use; returns the next fresh vreg."""
    fdef = next(i for i, vi in enumerate(code.ins) if vi.writes() == frame)
    new: list[VI] = []
    where: dict[int, int] = {}
    zero_init: list[int] = []
    for i, vi in enumerate(code.ins):
        w = vi.writes()
        where[i] = len(new)
        if w in remat:
            continue  # its definition: `MOV v, #imm`, moved again at each use instead
        reads = [r for r in dict.fromkeys(vi.reads()) if r in slots or r in remat]
        writes = w if w in slots else None
        if i < fdef and writes is not None and writes not in reads:
            # `MOV v, #0` at the entry, before the frame base exists: stored after it instead
            if not (vi.op is Op.MOV and vi.use_imm and vi.imm == 0):  # pragma: no cover - regalloc only zeroes
                raise AssertionError(vi)
            zero_init.append(writes)
            continue
        if reads or writes is not None:
            temp: dict[int, int] = {}
            for r in reads:
                temp[r] = fresh
                if r in remat:
                    new.append(VI(Op.MOV, fresh, imm=remat[r], use_imm=True, line=vi.line))
                else:
                    new.append(VI(Op.LD, fresh, frame, imm=slots[r], line=vi.line))
                fresh += 1
            if writes is not None and writes not in temp:
                temp[writes] = fresh
                fresh += 1
            for f in ("rd", "rs1", "rs2"):
                r = getattr(vi, f)
                if r in temp:
                    setattr(vi, f, temp[r])
            if vi.extra_reads:
                vi.extra_reads = tuple(temp.get(r, r) for r in vi.extra_reads)
            new.append(vi)
            if writes is not None:
                new.append(VI(Op.ST, -1, frame, temp[writes], imm=slots[writes], line=vi.line))
        else:
            new.append(vi)
        if i == fdef:
            for v in zero_init:
                new.append(VI(Op.MOV, fresh, imm=0, use_imm=True, line=vi.line))
                new.append(VI(Op.ST, -1, frame, fresh, imm=slots[v], line=vi.line))
                fresh += 1
    for vi in new:
        if vi.op in BRANCHES or (vi.op is Op.MOV and vi.target is not None):
            if vi.target in where:
                vi.target = where[vi.target]
            elif vi.target == len(code.ins):
                vi.target = len(new)
    code.ins = new
    return fresh


def _moves_kept(code: Code, colour: dict[int, int]) -> int:
    return sum(1 for vi in code.ins if vi.op is Op.MOV and not vi.use_imm and vi.target is None
               and colour[vi.rd] != colour[vi.rs1])


def allocate_spilling(ir: list[VI], entry_line: int | None, base: int, frame: int, first_slot: int,
                      limit: int) -> tuple[list[Instr], int, int]:
    """Like regalloc.allocate, spilling values to frame slots first_slot, first_slot + 1, ...
    until `limit` registers suffice.  `frame` is the vreg of the frame's base (kept live to
    the end).  Returns (instructions, registers used, slots used); registers used over
    `limit` when the values that may not spill alone need more."""
    for vi in ir:
        if vi.op is Op.EXIT:
            vi.extra_reads = vi.extra_reads + (frame,)
    code = prepare(ir, entry_line)
    protected = _routine_vregs(code) | {frame} | _before_frame(code, frame)
    fresh = 1 + max((r for vi in code.ins for r in (vi.rd, vi.rs1, vi.rs2, *vi.extra_reads)), default=0)
    first_fresh = fresh
    slots = 0
    while True:
        graph = interference(code)
        cost = spill_costs(code, protected)
        for r in range(first_fresh, fresh):  # reloads and the registers stored: never again
            cost[r] = NEVER
        best, spilled = colour_or_spill(*graph, cost, limit)
        chosen = [v for v in spilled if cost.get(v, NEVER) != NEVER]
        if not spilled or not chosen:
            break
        constants = _constants(code)
        remat = {v: constants[v] for v in chosen if v in constants}
        stored = [v for v in chosen if v not in remat]
        fresh = _spill(code, {v: first_slot + slots + j for j, v in enumerate(stored)}, remat, frame, fresh)
        slots += len(stored)
    # Spilling done, the allocator's own colouring may fit too: of the two, the one that leaves
    # fewer register moves (a MOV between two vregs of one colour goes away).  While values are
    # still short of registers, its count is what the values that may not spill need.
    colour, nregs = colour_graph(*graph)
    if not spilled and (nregs > limit or _moves_kept(code, best) < _moves_kept(code, colour)):
        colour, nregs = best, max(best.values(), default=-1) + 1
    return emit(code, colour, base), nregs, slots


__all__ = ["allocate_spilling"]
