"""Sinking: move gates from the earliest MLP after their inputs to the latest one that costs no residual room.

schedule.place puts every gate as early as its inputs allow.  A gate whose output is read
much later (the scheduler's masks and the next PCs, read by the commit at the end of the
step; the micro-step lane's operands, read by the float unit) then holds a residual
dimension through every layer in between, where the register file's buses and the ALU's
words need the room.  Moving a gate g from stage s to a later MLP s' frees its outputs'
dimensions over [s, s') and keeps alive, up to s', each input of which g was the last
reader.  If the inputs kept alive are no more than g's outputs, no stage holds more
signals than before and the residual can only get emptier: that is the rule applied here,
gate by gate from the end of the netlist (consumers first, so that a chain of gates moves
together), to the latest such MLP that has room for the gate's units.  Placement never
changes what a gate computes, so exactness and noise margins (which depend only on the
netlist) are untouched.
"""

from __future__ import annotations

from collections import Counter

from ..qwen35 import QWEN35_2B as qwen
from .netlist import Gate, Netlist, Sig, Table, TableOut, gate_inputs

INF = 1 << 30


def _latest_before(c: int) -> int:
    """The latest MLP stage (odd) strictly before stage c."""
    return c - 1 if c % 2 == 0 else c - 2


def sink(net: Netlist, stage: dict[Sig, int], layer_gates: list[list[Sig]], units: list[int],
         commit_stage: int, always: set[Sig], mem_inputs: list[list[Sig]], passes: int = 3) -> int:
    """Move gates later where that frees residual room (see the module docstring); returns the moves.

    `stage`, `layer_gates` and `units` are updated in place.  `commit_stage` is the stage at
    which the step outputs are read (the last MLP); `always`: signals that hold their
    dimension for the whole step whoever reads them (launch constants, layer-0 read buses).
    A state field that the commit rewrites is not among them: its dimension is lent to other
    signals after its last reader (schedule.place), so a later reader costs room too.
    `mem_inputs`: each memory's key and value inputs (Memory.key_and_value_inputs)."""
    nodes = net.nodes
    outs: dict[Sig, list[Sig]] = {}
    for s, node in enumerate(nodes):
        if isinstance(node, TableOut):
            outs.setdefault(node.table, []).append(s)
    readers: dict[Sig, list[Sig]] = {}  # signal -> the gates and tables that read it
    inputs: dict[Sig, list[Sig]] = {}
    for s, node in enumerate(nodes):
        if isinstance(node, (Gate, Table)):
            inputs[s] = gate_inputs(node)
            for x in inputs[s]:
                readers.setdefault(x, []).append(s)
    # Stages at which each signal is read, as a multiset: memories and the commit never move.
    read_at: dict[Sig, Counter] = {}
    for s, rs in readers.items():
        read_at[s] = Counter(stage[r] for r in rs)
    fixed_reads: dict[Sig, list[int]] = {}
    for m, xs in zip(net.memories, mem_inputs):
        for x in xs:
            fixed_reads.setdefault(x, []).append(2 * m.layer)
    for _, new in net.outputs:
        fixed_reads.setdefault(new, []).append(commit_stage)
    for x, st in fixed_reads.items():
        read_at.setdefault(x, Counter()).update(st)

    def other_last(x: Sig, g_stage: int) -> int:
        """When x is last read if one of its reads at g_stage is not counted."""
        if x in always:
            return INF
        c = read_at[x]
        return max((st for st, k in c.items() if st != g_stage or k > 1), default=-INF)

    moved = 0
    for _ in range(passes):
        changed = 0
        for g in range(len(nodes) - 1, -1, -1):
            node = nodes[g]
            if not isinstance(node, (Gate, Table)) or (isinstance(node, Table) and node.single):
                continue
            o = outs.get(g, []) if isinstance(node, Table) else [g]
            cons = [st for x in o for st in read_at.get(x, ())]
            if not cons:
                continue  # read by nothing: leave it where it is
            s = stage[g]
            hi = min(_latest_before(c) for c in cons)
            if hi <= s:
                continue
            # Inputs that g would keep alive longer: no more of them may end before s' than g
            # has outputs that are read (an output nobody reads holds its dimension one stage
            # wherever g sits).
            freed = sum(1 for x in o if read_at.get(x))
            ends = sorted(other_last(x, s) for x in inputs[g])
            if len(ends) > freed:
                hi = min(hi, ends[freed])
            if hi % 2 == 0:
                hi -= 1
            cost = (node.units + len(node.coefs) if isinstance(node, Table)
                    else 2 * len(node.steps) + 1)
            while hi > s and units[hi // 2] + cost > qwen.intermediate:
                hi -= 2
            if hi <= s:
                continue
            L0, L1 = s // 2, hi // 2
            layer_gates[L0].remove(g)
            layer_gates[L1].append(g)
            units[L0] -= cost
            units[L1] += cost
            for x in inputs[g]:
                c = read_at[x]
                c[s] -= 1
                if not c[s]:
                    del c[s]
                c[hi] += 1
            stage[g] = hi
            for x in o:
                if x != g:
                    stage[x] = hi
            changed += 1
        moved += changed
        if not changed:
            break
    return moved
