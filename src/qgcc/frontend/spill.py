"""Register spilling: when a kernel needs more than the machine's 32 registers, some values
live in the thread's local frame instead, as every GPU compiler does (CUDA's "local memory").

The frame is the one local arrays use (docs/subset.md, "Variables"): `local_words` cells per
thread in global memory, its base computed once at the kernel's entry in one register.  The
spill slots follow the local arrays in it.  Spilling a virtual register v rewrites the code so
that every instruction that reads v first loads it from v's slot into a fresh register, and
every instruction that writes v writes a fresh register and stores it to the slot (one fresh
register per instruction, so an instruction that reads and writes v, like ATOM.CAS or FFMA,
keeps one register).  Then the graph is coloured again; the vreg spilled next is the one with
the most interferences per use, among those that are not the frame base, not a reload, and not
touched by a subroutine (routines are shared by their callers, whose clobber sets are fixed).

Cost: one LD per use and one ST per definition of a spilled value, each a micro-stepped memory
instruction in the network (one step per active lane).
"""

from __future__ import annotations

from ..isa import Instr, Op
from .ir import VI
from .regalloc import BRANCHES, Code, colour_graph, emit, interference, prepare


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


def _spill(code: Code, v: int, slot: int, frame: int, fresh: int) -> int:
    """Rewrite code so that v lives in `slot` of the frame; returns the next fresh vreg."""
    fdef = next(i for i, vi in enumerate(code.ins) if vi.writes() == frame)
    new: list[VI] = []
    where: dict[int, int] = {}
    zero_init = False
    for i, vi in enumerate(code.ins):
        reads = v in vi.reads()
        writes = vi.writes() == v
        where[i] = len(new)
        if i < fdef and writes and not reads:
            # `MOV v, #0` at the entry, before the frame base exists: stored after it instead
            assert vi.op is Op.MOV and vi.use_imm, vi
            zero_init = vi.imm == 0
            if not zero_init:  # pragma: no cover - regalloc only zeroes
                raise AssertionError(vi)
            continue
        if reads or writes:
            t = fresh
            fresh += 1
            if reads:
                new.append(VI(Op.LD, t, frame, imm=slot, line=vi.line))
            for f in ("rd", "rs1", "rs2"):
                if getattr(vi, f) == v:
                    setattr(vi, f, t)
            if vi.extra_reads:
                vi.extra_reads = tuple(t if r == v else r for r in vi.extra_reads)
            new.append(vi)
            if writes:
                new.append(VI(Op.ST, -1, frame, t, imm=slot, line=vi.line))
        else:
            new.append(vi)
        if i == fdef and zero_init:
            t = fresh
            fresh += 1
            new.append(VI(Op.MOV, t, imm=0, use_imm=True, line=vi.line))
            new.append(VI(Op.ST, -1, frame, t, imm=slot, line=vi.line))
    for vi in new:
        if vi.op in BRANCHES or (vi.op is Op.MOV and vi.target is not None):
            if vi.target in where:
                vi.target = where[vi.target]
            elif vi.target == len(code.ins):
                vi.target = len(new)
    code.ins = new
    return fresh


# Rounds of spilling before giving up (the caller reports the registers still needed): each
# round recolours the whole kernel, and a kernel that 48 rounds do not bring under the limit
# (rodinia's myocyte: 14,000 instructions, 225 registers, stuck at 36 after 60 rounds and
# seven minutes) is not converging.
MAX_ROUNDS = 48


def allocate_spilling(ir: list[VI], entry_line: int | None, base: int, frame: int, first_slot: int,
                      limit: int) -> tuple[list[Instr], int, int]:
    """Like regalloc.allocate, spilling values to frame slots first_slot, first_slot + 1, ...
    until `limit` registers suffice.  `frame` is the vreg of the frame's base (kept live to
    the end).  Returns (instructions, registers used, slots used)."""
    for vi in ir:
        if vi.op is Op.EXIT:
            vi.extra_reads = vi.extra_reads + (frame,)
    code = prepare(ir, entry_line)
    protected = _routine_vregs(code) | {frame} | _before_frame(code, frame)
    fresh = 1 + max((r for vi in code.ins for r in (vi.rd, vi.rs1, vi.rs2, *vi.extra_reads)), default=0)
    reloads: set[int] = set()
    slots = 0
    rounds = 0
    while True:
        graph = interference(code)
        best, nregs = colour_graph(*graph)
        if nregs <= limit or rounds == MAX_ROUNDS:
            break
        rounds += 1
        adj = graph[0]
        uses: dict[int, int] = {}
        for vi in code.ins:
            for r in set(vi.reads()) | ({vi.writes()} if vi.writes() is not None else set()):
                uses[r] = uses.get(r, 0) + 1
        cands = [r for r in adj if r not in protected and r not in reloads and r >= 0]
        if not cands:
            break
        # One value a round while the excess is small (each round recolours, so the choice
        # sees the last spill's effect); a huge kernel far over the limit spills half its
        # excess a round, or its rounds (each quadratic in its length) would take hours.
        ranked = sorted(cands, key=lambda r: (len(adj[r]) / uses.get(r, 1), -r), reverse=True)
        for v in ranked[:max(1, (nregs - limit) // 2)]:
            start = fresh
            fresh = _spill(code, v, first_slot + slots, frame, fresh)
            reloads.update(range(start, fresh))
            slots += 1
    return emit(code, best, base), nregs, slots


__all__ = ["allocate_spilling"]
