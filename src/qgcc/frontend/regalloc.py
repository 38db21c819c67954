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
            n = len(self.ins)
            seen = [False] * n
            stack = [0] if n else []
            while stack:
                i = stack.pop()
                if seen[i]:
                    continue
                seen[i] = True
                stack.extend(s for s in self.succ(i) if not seen[s])
            changed = self.keep(seen)
            mask = [not (vi.op in BRANCHES and vi.target == i + 1) for i, vi in enumerate(self.ins)]
            changed = self.keep(mask) or changed

    def liveness(self) -> tuple[list[int], list[int]]:
        n = len(self.ins)
        use = [0] * n
        dfn = [0] * n
        for i, vi in enumerate(self.ins):
            u = 0
            for r in vi.reads():
                u |= 1 << r
            use[i] = u
            w = vi.writes()
            if w is not None:
                # A CAS reads rd before writing it: its use stays in `use`.
                dfn[i] = 1 << w
            for c in vi.clobbers or ():
                dfn[i] |= 1 << c
        succ = [self.succ(i, into_calls=False) for i in range(n)]
        live_in = [0] * n
        live_out = [0] * n
        changed = True
        while changed:
            changed = False
            for i in range(n - 1, -1, -1):
                out = 0
                for s in succ[i]:
                    out |= live_in[s]
                inn = use[i] | (out & ~dfn[i])
                if out != live_out[i] or inn != live_in[i]:
                    live_out[i] = out
                    live_in[i] = inn
                    changed = True
        return live_in, live_out


def _bits(x: int):
    while x:
        low = x & -x
        yield low.bit_length() - 1
        x ^= low


def _colour(order: list[int], adj: dict[int, set[int]], prefs: dict[int, list[int]]) -> dict[int, int]:
    colour: dict[int, int] = {}
    for v in order:
        used = {colour[u] for u in adj[v] if u in colour}
        c = None
        for p in prefs.get(v, ()):
            pc = colour.get(p)
            if pc is not None and pc not in used:
                c = pc
                break
        if c is None:
            c = 0
            while c in used:
                c += 1
        colour[v] = c
    return colour


def _smallest_last(nodes: list[int], adj: dict[int, set[int]]) -> list[int]:
    deg = {v: len(adj[v]) for v in nodes}
    heap = [(d, v) for v, d in deg.items()]
    heapq.heapify(heap)
    removed: set[int] = set()
    order: list[int] = []
    while heap:
        d, v = heapq.heappop(heap)
        if v in removed or d != deg[v]:
            continue
        removed.add(v)
        order.append(v)
        for u in adj[v]:
            if u not in removed:
                deg[u] -= 1
                heapq.heappush(heap, (deg[u], u))
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
    # Registers read before written on some path: zero them at the entry.
    live_in, _ = code.liveness()
    if code.ins and live_in[0]:
        zeros = [VI(Op.MOV, v, imm=0, use_imm=True, line=entry_line) for v in _bits(live_in[0])]
        for vi in code.ins:
            _shift_targets(vi, lambda t: t + len(zeros))
        code.ins = zeros + code.ins
    # Dead-code elimination.
    while True:
        live_in, live_out = code.liveness()
        mask = []
        for i, vi in enumerate(code.ins):
            w = vi.writes()
            dead = vi.op in PURE_OPS and w is not None and not (live_out[i] >> w) & 1
            mask.append(not dead)
        if not code.keep(mask):
            break
    code.prune()
    return code


def interference(code: Code) -> tuple[dict[int, set[int]], dict[int, list[int]], dict[int, int]]:
    """The interference graph, MOV partners (colour preferences) and each vreg's first definition."""
    live_in, live_out = code.liveness()
    # Interference graph.
    adj: dict[int, set[int]] = {}
    prefs: dict[int, list[int]] = {}
    first_def: dict[int, int] = {}
    for i, vi in enumerate(code.ins):
        for r in vi.reads():
            adj.setdefault(r, set())
        if vi.clobbers:
            # Values live across a call must survive everything the routine writes.
            across = list(_bits(live_out[i]))
            for c in vi.clobbers:
                adj.setdefault(c, set()).update(v for v in across if v != c)
                for v in across:
                    if v != c:
                        adj.setdefault(v, set()).add(c)
        w = vi.writes()
        if w is None:
            continue
        adj.setdefault(w, set())
        first_def.setdefault(w, i)
        skip = -1
        if vi.op is Op.MOV and not vi.use_imm:
            skip = vi.rs1
            prefs.setdefault(w, []).append(vi.rs1)
            prefs.setdefault(vi.rs1, []).append(w)
        for v in _bits(live_out[i] & ~(1 << w)):
            if v != skip:
                adj[w].add(v)
                adj.setdefault(v, set()).add(w)
    return adj, prefs, first_def


def colour(code: Code) -> tuple[dict[int, int], int]:
    """Step 5: a physical register per vreg, and how many are used."""
    adj, prefs, first_def = interference(code)
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
    out: list[Instr] = []
    mask = []
    for vi in code.ins:
        def phys(r: int) -> int:
            return best[r] if r >= 0 else 0
        ins = Instr(vi.op, rd=phys(vi.rd), rs1=phys(vi.rs1), rs2=phys(vi.rs2), imm=vi.imm,
                    use_imm=vi.use_imm, mod=vi.mod, line=vi.line)
        if _has_target(vi):
            ins.imm = base + vi.target
        out.append(ins)
        mask.append(not (vi.op is Op.MOV and not vi.use_imm and ins.rd == ins.rs1))
    if not all(mask):
        # Remove self-moves, remapping branch targets, then prune again.
        for vi, ins in zip(code.ins, out):
            vi.rd, vi.rs1, vi.rs2 = ins.rd, ins.rs1, ins.rs2
        code.keep(mask)
        code.prune()
        out = []
        for vi in code.ins:
            ins = Instr(vi.op, rd=max(vi.rd, 0), rs1=max(vi.rs1, 0), rs2=max(vi.rs2, 0),
                        imm=base + vi.target if _has_target(vi) else vi.imm, use_imm=vi.use_imm,
                        mod=vi.mod, line=vi.line)
            out.append(ins)
    return out
