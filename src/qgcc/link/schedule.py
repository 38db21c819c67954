"""Place a netlist into decoder layers: gates into MLP levels, memories into DeltaNet heads,
signals into residual dimensions.

Stages: layer L's mixer is stage 2L, its MLP stage 2L+1; step inputs are stage -1.
A gate goes in the earliest MLP after all its inputs (as soon as possible), unless
that MLP is full; then gates whose outputs wait for a late reader move later where that
frees residual room (sink.py).  A memory sits in the layer the machine design names; its key
and value inputs must exist before that layer.  Residual dimensions are reused
once a signal's last reader has run.  Every step output (`Netlist.outputs`) is
copied into its input's dimension by the last layer, so the residual leaving
the network is the next step's input.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..qwen35 import QWEN35_2B as qwen
from .netlist import Gate, Input, MemRead, Netlist, Sig, Table, TableOut, gate_inputs
from .sink import sink



class CapacityError(Exception):
    pass


@dataclass
class Placement:
    num_layers: int
    stage: dict[Sig, int]  # production stage of every signal
    dim: dict[Sig, int]  # residual dimension of every signal
    layer_gates: list[list[Sig]]  # gates per MLP
    layer_heads: list[list[int]]  # memory indices per DeltaNet, in head order
    read_dims: list[tuple[int, int]] = field(default_factory=list)  # (layer whose MLP resets it, dim) per bus bit
    copies: list[tuple[Sig, Sig]] = field(default_factory=list)  # (state input, new value) committed last
    units_used: list[int] = field(default_factory=list)
    table_outputs: dict[Sig, list[Sig]] = field(default_factory=dict)
    # The fewest residual dimensions left free (besides lent state dimensions) when a signal
    # was given one, and the stage where that happened: how close the program came to the limit.
    spare_dims: int = 0
    tightest_stage: int = 0


def place(net: Netlist, num_layers: int) -> Placement:
    nodes = net.nodes
    stage: dict[Sig, int] = {}
    layer_gates: list[list[Sig]] = [[] for _ in range(num_layers)]
    units = [1] * num_layers  # one constant unit per MLP
    layer_heads: list[list[int]] = [[] for _ in range(num_layers)]
    for i, m in enumerate(net.memories):
        if m.layer >= num_layers:
            raise CapacityError(f"memory {m.name} sits in layer {m.layer}; the network has {num_layers} layers")
        layer_heads[m.layer].append(i)
    for L, heads in enumerate(layer_heads):
        if len(heads) > qwen.linear_heads:
            raise CapacityError(f"layer {L} holds {len(heads)} memory heads; a DeltaNet has {qwen.linear_heads}")

    last = num_layers - 1
    commit = dict(net.outputs)  # state input -> new value
    # Memory-read buses must hold bit 0 when their first memory adds the word read.  A bus
    # whose first memory is in layer L > 0 is reset by the MLP of layer L-1 and lives from
    # there; a bus read in layer 0 is reset by the last layer, for the next step.  Their
    # units are reserved before any gate is placed, so that no MLP is filled past them.
    bus_reset: dict[Sig, int] = {}
    for s, node in enumerate(nodes):
        if isinstance(node, MemRead):
            first = min(net.memories[mm].layer for mm in node.mems)
            bus_reset[s] = first - 1 if first > 0 else last
            units[bus_reset[s]] += 1
    for s, node in enumerate(nodes):
        if isinstance(node, Input):
            stage[s] = -1
        elif isinstance(node, MemRead):
            stage[s] = 2 * max(net.memories[mm].layer for mm in net.readers_of(s))
        elif isinstance(node, TableOut):
            stage[s] = stage[node.table]
        else:
            need = max((stage[x] for x in gate_inputs(node)), default=-1)
            if s in net.after:
                need = max(need, stage[net.after[s]])
            L = (need + 1) // 2 if need >= 0 else 0
            L = max(L, net.floor.get(s, 0))
            cost = (node.units + len(node.coefs) if isinstance(node, Table)
                    else 2 * len(node.steps) + 1)
            while L < num_layers and units[L] + cost > qwen.intermediate:
                L += 1
            if L >= num_layers:
                raise CapacityError(f"gate {node.name or s} does not fit: the network has {num_layers} layers")
            stage[s] = 2 * L + 1
            layer_gates[L].append(s)
            units[L] += cost
    mem_inputs = [m.key_and_value_inputs() for m in net.memories]  # (a set over 128 slots' keys: once)
    for i, m in enumerate(net.memories):
        for x in mem_inputs[i]:
            if stage[x] >= 2 * m.layer:
                raise CapacityError(f"memory {m.name} in layer {m.layer} needs {net.names.get(x, x)}, "
                                    f"which is produced at stage {stage[x]} (layer {stage[x] // 2})")
    # Commit copies of the step outputs into the state dims, in the last MLP.
    copies = []
    for inp, new in commit.items():
        if stage[new] > 2 * last:
            raise CapacityError(f"output {net.names.get(new, new)} is produced in the last layer; "
                                "the commit needs it one layer earlier")
        copies.append((inp, new))
        units[last] += 3
    if units[last] > qwen.intermediate:
        raise CapacityError(f"the commit layer needs {units[last]} units; an MLP has {qwen.intermediate}")
    # Gates whose outputs wait for a late reader go later, where that costs no residual room.
    # (Launch constants and layer-0 read buses hold their dimensions all step; a state field
    # that the commit rewrites lends its dimension after its last reader, so it counts.)
    always = {s for s, node in enumerate(nodes) if (isinstance(node, Input) and s not in commit) or (
        isinstance(node, MemRead) and bus_reset[s] == last and min(net.memories[mm].layer for mm in node.mems) == 0)}
    sink(net, stage, layer_gates, units, 2 * last + 1, always, mem_inputs)

    # Last use of every signal.
    last_use: dict[Sig, int] = {s: stage[s] for s in stage}
    for s, node in enumerate(nodes):
        if isinstance(node, (Gate, Table)):
            for x in gate_inputs(node):
                last_use[x] = max(last_use[x], stage[s])
    for m, xs in zip(net.memories, mem_inputs):
        for x in xs:
            last_use[x] = max(last_use[x], 2 * m.layer)
    end = 2 * last + 1
    for inp, new in copies:
        last_use[new] = max(last_use[new], end)
    # A state field that the commit rewrites is dead between its last reader and the commit:
    # its dimension is lent to signals that die before the last MLP (the commit's overwrite
    # subtracts whatever +-8 the dimension holds, so the field comes back intact).  Launch
    # constants are never rewritten and keep their dimensions.
    lendable = {s: last_use[s] for s, node in enumerate(nodes) if isinstance(node, Input) and s in commit}
    for s, node in enumerate(nodes):
        if isinstance(node, Input):
            last_use[s] = end + 1  # state lives across the step boundary
        else:
            last_use[s] = max(last_use[s], stage[s] + 1)  # never share a dim with a same-stage write

    over = [L for L in range(num_layers) if units[L] > qwen.intermediate]
    if over:
        raise CapacityError(f"MLP of layer {over[0]} needs {units[over[0]]} units; an MLP has {qwen.intermediate}")

    # Dimensions: inputs and layer-0 read buses are fixed for the whole step; everything else
    # (gates, later read buses from their reset) shares dims by interval colouring.
    dim: dict[Sig, int] = {}
    nxt = 0
    for s, node in enumerate(nodes):
        if isinstance(node, Input) or (isinstance(node, MemRead) and bus_reset[s] == last
                                       and min(net.memories[mm].layer for mm in node.mems) == 0):
            dim[s] = nxt
            nxt += 1
    import heapq
    pool = list(range(qwen.hidden - 1, nxt - 1, -1))
    busy: list[tuple[int, int]] = []  # (last_use, dim)
    lent = [(free_from, dim[s]) for s, free_from in lendable.items()]  # (free from stage, dim)
    heapq.heapify(lent)
    lent_dims = {d for _, d in lent}
    alloc_stage = {s: stage[s] for s, n in enumerate(nodes) if isinstance(n, (Gate, TableOut))}
    for s, L in bus_reset.items():
        if s not in dim:
            alloc_stage[s] = 2 * L + 1
    order = sorted(alloc_stage, key=lambda s: (alloc_stage[s], s))
    spare = (len(pool), 0)
    for s in order:
        p = alloc_stage[s]
        while busy and busy[0][0] <= p:
            lu, d = heapq.heappop(busy)
            if d in lent_dims:
                heapq.heappush(lent, (lu, d))
            else:
                pool.append(d)
        if last_use[s] < end and lent and lent[0][0] <= p:
            d = heapq.heappop(lent)[1]
            dim[s] = d
            heapq.heappush(busy, (last_use[s], d))
            continue
        if not pool:
            import collections
            live = collections.Counter()
            for sig, st in alloc_stage.items():
                if st <= p and sig in dim and last_use[sig] > p:
                    nm = net.names.get(sig, "?")
                    live[nm.split(".")[0].split("[")[0].rstrip("0123456789_")] += 1
            top = ", ".join(f"{k}:{v}" for k, v in live.most_common(12))
            raise CapacityError(f"the residual stream ({qwen.hidden} dims) is full at stage {p} "
                                f"({nxt} fixed; live: {top})")
        if len(pool) - 1 < spare[0]:
            spare = (len(pool) - 1, p)
        d = pool.pop()
        dim[s] = d
        heapq.heappush(busy, (last_use[s], d))
    table_outputs: dict[Sig, list[Sig]] = {}
    for s, node in enumerate(nodes):
        if isinstance(node, TableOut):
            table_outputs.setdefault(node.table, []).append(s)
    read_resets = [(bus_reset[s], dim[s]) for s in bus_reset]
    return Placement(num_layers, stage, dim, layer_gates, layer_heads, read_resets, copies, units,
                     table_outputs, spare[0], spare[1])
