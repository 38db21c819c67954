"""Colouring for a kernel that must spill: Chaitin's simplify with Briggs's optimistic select,
which names every value it could not colour in one pass, so that the spiller rewrites them all
at once and colours again (frontend/spill.py).

Why not the allocator's greedy colouring (regalloc.colour_graph) to choose what spills (once the
spills are chosen, spill.py may still keep it): it colours in program order,
so the registers of the shared subroutines (whose clobbers interfere with every value live
across a call) spread over all 32 colours, and nothing but the frame base can then live across
a call to the largest routine, however much is spilled: spilling one value a round and colouring
greedily again never converged on a kernel of many inlined double calls (Rodinia's myocyte).
Simplify takes the subroutine registers out last (their degree is the largest), so select gives
them colours first and packs them low; a value is chosen to spill by the classic rule, least
cost (uses and definitions, ten times more inside each loop) per interference.

The guarantee that makes the rounds end: a spilled value lives in a register only from its
reload to its use (or its definition to its store), and such registers, like the subroutines'
own and the frame base, are never chosen; every round spills at least one value of the kernel
as generated, each at most once, or stops.  When all that may spill has spilled, what is left
live at an instruction is its own operands and result, the frame base (and the thread ids it
is computed from) and what the routines hold.
"""

from __future__ import annotations

import heapq
import math

from .regalloc import BRANCHES, Code, pick_colour

NEVER = math.inf


def spill_costs(code: Code, never: set[int]) -> dict[int, float]:
    """Each vreg's cost of spilling: its reads and writes, each weighted 10 ** (loops around
    it); `never` (and unknown vregs) cost infinity."""
    n = len(code.ins)
    depth = [0] * (n + 1)
    for i, vi in enumerate(code.ins):
        if vi.op in BRANCHES and vi.clobbers is None and vi.target <= i:
            depth[vi.target] += 1
            depth[i + 1] -= 1
    cost: dict[int, float] = {}
    d = 0
    for i, vi in enumerate(code.ins):
        d += depth[i]
        w = 10.0 ** min(d, 8)
        regs = set(vi.reads())
        if vi.writes() is not None:
            regs.add(vi.writes())
        for r in regs:
            cost[r] = cost.get(r, 0.0) + w
    for r in never:
        cost[r] = NEVER
    return cost


def colour_or_spill(adj: dict[int, set[int]], prefs: dict[int, list[int]], first_def: dict[int, int],
                    cost: dict[int, float], k: int) -> tuple[dict[int, int], list[int]]:
    """A colouring with at most k colours of the vregs it could colour, and those it could not
    (in select order), for spilling.  A vreg with a MOV partner already coloured takes its
    colour when free (the MOV then disappears)."""
    nodes = sorted(adj, key=lambda v: (first_def.get(v, -1), v))
    deg = {v: len(adj[v]) for v in nodes}
    low = [v for v in reversed(nodes) if deg[v] < k]
    # Candidates to push while every node left has k or more neighbours: least cost per
    # interference first.  Degrees only fall, so a key computed earlier is a lower bound: a
    # popped entry whose key is stale goes back with its current key.
    high = [(cost.get(v, NEVER) / deg[v], v) for v in nodes if deg[v] >= k]
    heapq.heapify(high)
    removed: set[int] = set()
    stack: list[int] = []
    while len(stack) < len(nodes):
        if low:
            v = low.pop()
            if v in removed:
                continue
        else:
            key, v = heapq.heappop(high)
            if v in removed:
                continue
            if deg[v] < k:
                continue  # in `low` already (it went there when its degree fell below k)
            now = cost.get(v, NEVER) / deg[v]
            if now != key:
                heapq.heappush(high, (now, v))
                continue
        removed.add(v)
        stack.append(v)
        for u in adj[v]:
            if u not in removed:
                d = deg[u] - 1
                deg[u] = d
                if d == k - 1:
                    low.append(u)
    colour: dict[int, int] = {}
    spilled: list[int] = []
    for v in reversed(stack):
        c = pick_colour(v, adj, colour, prefs, k)
        if c is None:
            spilled.append(v)
        else:
            colour[v] = c
    return colour, spilled


__all__ = ["NEVER", "colour_or_spill", "spill_costs"]
