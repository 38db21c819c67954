"""Register allocation and final clean-up: virtual-register IR -> `isa.Instr` list.

Steps, over one kernel (device functions are already inlined):

1. resolve labels to instruction indices;
2. drop unreachable instructions and branches to the next instruction;
3. liveness (backward dataflow over the CFG); any virtual register live at
   the kernel entry would be read before being written on some path (the
   machine does not clear registers between blocks), so it gets `MOV v, #0`
   at the entry;
4. dead-code elimination of side-effect-free instructions whose result is dead;
5. interference graph and greedy colouring (program order, then
   smallest-last order if that needs fewer colours), preferring the colour of
   a MOV partner so that the MOV disappears;
6. rewrite with physical registers and remove `MOV r, r`.

Code addresses in the result (branch targets, return addresses) are absolute:
the caller passes the kernel's entry address as `base`.
"""

from __future__ import annotations

import heapq

from ..isa import Instr, Op
from .ir import PURE_OPS, VI

BRANCHES = (Op.BRA, Op.BRZ, Op.BRNZ)


def _has_target(vi: VI) -> bool:
    """Branches and return-address MOVs: instructions whose `target` is a code position."""
    return vi.op in BRANCHES or (vi.op is Op.MOV and vi.target is not None)


def _shift_targets(vi: VI, f) -> None:
    if _has_target(vi):
        vi.target = f(vi.target)


class Code:
    """Real instructions with branch targets as indices into the same list."""

    def __init__(self, ins: list[VI]):
        self.ins = ins

    @classmethod
    def from_ir(cls, ir: list[VI]) -> "Code":
        pos: dict[int, int] = {}
        real: list[VI] = []
        for vi in ir:
            if vi.is_label:
                pos[vi.target] = len(real)
            else:
                real.append(vi)
        for vi in real:
            _shift_targets(vi, pos.__getitem__)
        return cls(real)

    def succ(self, i: int, into_calls: bool = True) -> list[int]:
        """Control-flow successors.  A call continues at its return point (the next
        instruction); only reachability also follows it into the routine.  Liveness
        treats the call as one instruction that reads the arguments and writes the
        routine's clobbers, so each routine is analysed once, for all callers."""
        vi = self.ins[i]
        n = len(self.ins)
        if vi.op in (Op.EXIT, Op.JR):
            return []
        if vi.clobbers is not None:
            nxt = [i + 1] if i + 1 < n else []
            return nxt + ([vi.target] if into_calls and vi.target < n else [])
        if vi.op is Op.BRA:
            return [vi.target] if vi.target < n else []
        out = [i + 1] if i + 1 < n else []
        if vi.op in (Op.BRZ, Op.BRNZ) and vi.target < n and vi.target != i + 1:
            out.append(vi.target)
        return out

    def keep(self, mask: list[bool]) -> bool:
        """Keep the instructions where mask is true; branch targets follow. True if changed."""
        if all(mask):
            return False
        newpos = []
        k = 0
        for m in mask:
            newpos.append(k)
            k += m
        newpos.append(k)
        out = []
        for vi, m in zip(self.ins, mask):
            if m:
                _shift_targets(vi, newpos.__getitem__)
                out.append(vi)
        self.ins = out
        return True

    def prune(self) -> None:
        """Remove unreachable instructions and branches to the next instruction."""
        changed = True
        while changed:
            ins = self.ins
            n = len(ins)
            seen = [False] * n
            stack = [0] if n else []
            while stack:
                # Walk a straight run (the successors of `succ`), stacking the branch targets.
                i = stack.pop()
                while i < n and not seen[i]:
                    seen[i] = True
                    vi = ins[i]
                    op = vi.op
                    if op is Op.EXIT or op is Op.JR:
                        break
                    if vi.clobbers is not None or op is Op.BRZ or op is Op.BRNZ:
                        stack.append(vi.target)
                    elif op is Op.BRA:
                        i = vi.target
                        continue
                    i += 1
            changed = self.keep(seen)
            mask = [not (vi.op in BRANCHES and vi.target == i + 1) for i, vi in enumerate(self.ins)]
            changed = self.keep(mask) or changed

    def _flow(self, masks: dict | None = None) -> tuple[list[int], list[int], list[tuple[int, int]], list[int]]:
        """Per-instruction use and def masks, the basic blocks (start, end) and each block's
        live-out: the dataflow solved over blocks rather than instructions (the same least
        fixpoint, in a fraction of the big-integer operations).  `masks` (id of an instruction
        -> its use and def masks) keeps them between calls while no instruction's registers change."""
        ins = self.ins
        n = len(ins)
        use = [0] * n
        dfn = [0] * n
        leader = bytearray(n + 1)
        if n:
            leader[0] = 1
        for i, vi in enumerate(ins):
            known = masks.get(id(vi)) if masks is not None else None
            if known is None:
                u = 0
                for r in vi.reads():
                    u |= 1 << r
                w = vi.writes()
                d = 0 if w is None else 1 << w  # a CAS reads rd before writing it: its use stays in `use`
                for c in vi.clobbers or ():
                    d |= 1 << c
                if masks is not None:
                    masks[id(vi)] = (u, d)
            else:
                u, d = known
            use[i] = u
            dfn[i] = d
            op = vi.op
            if op in BRANCHES and vi.clobbers is None:
                if vi.target < n:
                    leader[vi.target] = 1
                leader[i + 1] = 1
            elif op is Op.EXIT or op is Op.JR:
                leader[i + 1] = 1
        starts = [i for i in range(n) if leader[i]]
        blocks = list(zip(starts, starts[1:] + [n]))
        index = {s: b for b, (s, _) in enumerate(blocks)}
        gen = []
        kill = []
        for s, e in blocks:
            g = k = 0
            for i in range(e - 1, s - 1, -1):
                g = use[i] | (g & ~dfn[i])
                k |= dfn[i]
            gen.append(g)
            kill.append(~k)
        bsucc = [[index[t] for t in self.succ(e - 1, into_calls=False)] for _, e in blocks]
        nb = len(blocks)
        bin_ = list(gen)  # each block's live-in for a live-out of nothing
        bout = [0] * nb
        changed = True
        while changed:
            changed = False
            for b in range(nb - 1, -1, -1):
                out = 0
                for t in bsucc[b]:
                    out |= bin_[t]
                if out != bout[b]:
                    bout[b] = out
                    bin_[b] = gen[b] | (out & kill[b])
                    changed = True
        return use, dfn, blocks, bout

    def liveness(self, masks: dict | None = None) -> tuple[list[int], list[int]]:
        use, dfn, blocks, bout = self._flow(masks)
        n = len(self.ins)
        live_in = [0] * n
        live_out = [0] * n
        for (s, e), live in zip(blocks, bout):
            for i in range(e - 1, s - 1, -1):
                live_out[i] = live
                live = use[i] | (live & ~dfn[i])
                live_in[i] = live
        return live_in, live_out

    def dead_code(self, masks: dict | None = None) -> bool:
        """Drop pure instructions whose result is dead; True if any went.  Within a block the
        scan goes backward with the live set of what stays, so a chain of dead values goes in
        one round (the instructions that go are the same as round after round of single
        removals: removing a dead instruction only shrinks liveness, so the end is unique)."""
        use, dfn, blocks, bout = self._flow(masks)
        ins = self.ins
        mask = [True] * len(ins)
        for (s, e), live in zip(blocks, bout):
            for i in range(e - 1, s - 1, -1):
                vi = ins[i]
                if vi.op in PURE_OPS:
                    w = vi.writes()
                    if w is not None and not (live >> w) & 1:
                        mask[i] = False
                        continue
                live = use[i] | (live & ~dfn[i])
        return self.keep(mask)


def _bits(x: int) -> list[int]:
    """The positions of x's set bits, ascending (read off its binary text: linear in its
    length, where peeling the lowest bit off a wide integer again and again is quadratic)."""
    text = bin(x)[:1:-1]
    out = []
    i = text.find("1")
    while i >= 0:
        out.append(i)
        i = text.find("1", i + 1)
    return out


def pick_colour(v: int, adj: dict[int, set[int]], colour: dict[int, int], prefs: dict[int, list[int]],
                limit: int | None = None) -> int | None:
    """The colour v takes: a move partner's (so the move disappears) when no neighbour has it,
    else the lowest free one; None when every colour below `limit` is a neighbour's."""
    used = {colour[u] for u in adj[v] if u in colour}
    for p in prefs.get(v, ()):
        pc = colour.get(p)
        if pc is not None and pc not in used:
            return pc
    c = 0
    while c in used:
        c += 1
    return c if limit is None or c < limit else None


def _colour(order: list[int], adj: dict[int, set[int]], prefs: dict[int, list[int]]) -> dict[int, int]:
    colour: dict[int, int] = {}
    for v in order:
        colour[v] = pick_colour(v, adj, colour, prefs)
    return colour


def _smallest_last(nodes: list[int], adj: dict[int, set[int]]) -> list[int]:
    """Repeatedly take out the vertex of least (degree, number) among those left; colour in the
    reverse order.  The vertices wait in one bucket per degree, each a heap of vertex numbers,
    and `lo` is the least degree whose bucket may hold a vertex (taking a vertex out lowers its
    neighbours' degrees by one, so `lo` goes down by at most one a step).  A vertex whose degree
    drops is pushed into its new bucket; the entry left in the old one is stale (its degree is
    no longer the bucket's) and skipped, and a vertex taken out gets degree -1.  The buckets'
    heaps hold small integers and stay short: half the time of one heap keyed by degree."""
    deg = {v: len(adj[v]) for v in nodes}
    buckets: list[list[int]] = [[] for _ in range(max(deg.values(), default=0) + 1)]
    for v, d in deg.items():
        buckets[d].append(v)
    for bucket in buckets:
        heapq.heapify(bucket)
    pop, push = heapq.heappop, heapq.heappush
    order: list[int] = []
    lo = 0
    while len(order) < len(deg):
        bucket = buckets[lo]
        if not bucket:
            lo += 1
            continue
        v = pop(bucket)
        if deg[v] != lo:
            continue
        deg[v] = -1
        order.append(v)
        for u in adj[v]:
            d = deg[u]
            if d > 0:
                deg[u] = d - 1
                push(buckets[d - 1], u)
                if d - 1 < lo:
                    lo = d - 1
    order.reverse()
    return order


class TooLong(Exception):
    """The code cannot fit however its registers are coloured: `least` instructions remain
    even if every register-to-register move and branch went away."""

    def __init__(self, least: int):
        super().__init__(least)
        self.least = least


def least_length(code: Code) -> int:
    """A lower bound of the emitted length: colouring removes only self-moves (and the branches
    that then jump to the next instruction); spilling only adds."""
    return sum(1 for vi in code.ins if not (vi.op is Op.MOV and not vi.use_imm) and vi.op not in BRANCHES)


def allocate(ir: list[VI], entry_line: int | None, base: int = 0,
             budget: int | None = None) -> tuple[list[Instr], int]:
    """Returns (instructions, registers used); code addresses (branch targets,
    return addresses) are absolute for a kernel placed at `base`.  With a `budget` (the
    instructions left in the machine), code that cannot fit raises TooLong before colouring,
    whose cost grows with the square of a huge kernel's length (minutes, then spilling)."""
    code = prepare(ir, entry_line)
    if budget is not None and least_length(code) > budget:
        raise TooLong(least_length(code))
    best, nregs = colour(code)
    return emit(code, best, base), nregs


def prepare(ir: list[VI], entry_line: int | None) -> Code:
    """Steps 1-4: labels resolved, unreachable and dead code gone, registers read before
    written zeroed at the entry."""
    code = Code.from_ir(ir)
    code.prune()
    # No instruction's registers change below (`ir` keeps every instruction alive, so no id is reused).
    masks: dict[int, tuple[int, int]] = {}
    # Registers read before written on some path: zero them at the entry.
    live_in, _ = code.liveness(masks)
    if code.ins and live_in[0]:
        zeros = [VI(Op.MOV, v, imm=0, use_imm=True, line=entry_line) for v in _bits(live_in[0])]
        for vi in code.ins:
            _shift_targets(vi, lambda t: t + len(zeros))
        code.ins = zeros + code.ins
    # Dead-code elimination.
    while code.dead_code(masks):
        pass
    code.prune()
    return code


def interference(code: Code) -> tuple[dict[int, set[int]], dict[int, list[int]], dict[int, int]]:
    """The interference graph, MOV partners (colour preferences) and each vreg's first definition.

    Each vreg's neighbours are first gathered as one bit mask (an edge is met at every
    definition it spans, so as sets it would be added many times over), then made sets once."""
    live_in, live_out = code.liveness()
    rows: dict[int, int] = {}
    prefs: dict[int, list[int]] = {}
    first_def: dict[int, int] = {}
    for i, vi in enumerate(code.ins):
        for r in vi.reads():
            rows.setdefault(r, 0)
        if vi.clobbers:
            # Values live across a call must survive everything the routine writes.
            across = live_out[i]
            for c in vi.clobbers:
                rows[c] = rows.get(c, 0) | (across & ~(1 << c))
            for v in _bits(across):
                rows.setdefault(v, 0)
        w = vi.writes()
        if w is None:
            continue
        first_def.setdefault(w, i)
        drop = 1 << w
        if vi.op is Op.MOV and not vi.use_imm:
            drop |= 1 << vi.rs1
            prefs.setdefault(w, []).append(vi.rs1)
            prefs.setdefault(vi.rs1, []).append(w)
        rows[w] = rows.get(w, 0) | (live_out[i] & ~drop)
    adj: dict[int, set[int]] = {v: set() for v in rows}
    for w, row in rows.items():
        aw = adj[w]
        for v in _bits(row):
            aw.add(v)
            adj[v].add(w)
    return adj, prefs, first_def


def colour(code: Code) -> tuple[dict[int, int], int]:
    """Step 5: a physical register per vreg, and how many are used."""
    return colour_graph(*interference(code))


def colour_graph(adj: dict[int, set[int]], prefs: dict[int, list[int]],
                 first_def: dict[int, int]) -> tuple[dict[int, int], int]:
    """`colour` of an interference graph already built (the spiller reuses it to rank)."""
    nodes = sorted(adj, key=lambda v: (first_def.get(v, -1), v))
    best = _colour(nodes, adj, prefs)
    nregs = max(best.values(), default=-1) + 1
    if nregs > 16:
        alt = _colour(_smallest_last(nodes, adj), adj, prefs)
        n2 = max(alt.values(), default=-1) + 1
        if n2 < nregs:
            best, nregs = alt, n2
    return best, nregs


def emit(code: Code, best: dict[int, int], base: int) -> list[Instr]:
    """Step 6: rewrite with physical registers; code addresses absolute for a kernel at base."""
    phys = [(best[vi.rd] if vi.rd >= 0 else 0, best[vi.rs1] if vi.rs1 >= 0 else 0,
             best[vi.rs2] if vi.rs2 >= 0 else 0) for vi in code.ins]
    mask = [not (vi.op is Op.MOV and not vi.use_imm and p[0] == p[1]) for vi, p in zip(code.ins, phys)]
    if not all(mask):
        # Remove self-moves, remapping branch targets, then prune again.
        for vi, p in zip(code.ins, phys):
            vi.rd, vi.rs1, vi.rs2 = p
        code.keep(mask)
        code.prune()
        phys = [(vi.rd, vi.rs1, vi.rs2) for vi in code.ins]
    return [Instr(vi.op, rd=p[0], rs1=p[1], rs2=p[2], imm=base + vi.target if _has_target(vi) else vi.imm,
                  use_imm=vi.use_imm, mod=vi.mod, line=vi.line) for vi, p in zip(code.ins, phys)]
