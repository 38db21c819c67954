"""The machine as a netlist of threshold gates and DeltaNet memories.

Every signal is one bit, carried in one residual dimension as +8 (1) or -8 (0).
A *gate* is what one MLP hidden layer computes exactly: its output bit is a
linear combination of threshold steps over a weighted sum of input bits,

    out = sum_k a_k * [ sum_i w_i * b_i + c >= T_k ]      (must be 0 or 1)

Each step becomes two SiLU units whose pre-activations are 0 or at least 256 in
magnitude, where SiLU is an exact ReLU.  A *memory* is one Gated DeltaNet head:
one-hot keys decoded from address bits, dual-rail values (or, for global and
shared memory, two words a slot in one-hot groups of four rails), one write and
one read per step.  The scheduler (schedule.py) places gates and memories into
decoder layers; weights.py turns the placement into Qwen3.5 tensors.

Circuits are built with the helpers here (and, or, xor, mux, adders in
circuits.py); `simulate` evaluates a netlist at the bit level, which tests use
to check circuits before they are turned into weights.  It is never used to run
a kernel.
"""

from __future__ import annotations

from contextlib import contextmanager

from dataclasses import dataclass, field
from typing import Iterable, Sequence

Sig = int  # index into Netlist.nodes
WORD_BITS = 32  # widest word one memory head stores (see Netlist.memory)
# One-hot groups of four: rail c of group i is set when bit i of word 0 is c & 1 and bit i
# of word 1 is c >> 1, so word w's bit i is the OR of the rails listed here.
ONEHOT4_RAILS = ((1, 3), (2, 3))


@dataclass(frozen=True)
class Step:
    """coef * [ sum(w * b for b, w in terms) + const >= T ]"""

    terms: tuple[tuple[int, int], ...]
    const: int
    T: int
    coef: int = 1


@dataclass
class Gate:
    """A bit computed by one MLP level: the sum of its steps (must be 0 or 1)."""

    steps: list[Step]
    name: str = ""


@dataclass
class Table:
    """Several output bits sharing one set of steps (a ROM or decoder): output j is
    sum_k coefs[j][k] * step_k, 0 or 1.  Costs two units per step, not per output.

    A `single` table (the program ROM) is made of AND steps only (no input pattern takes a
    step's sum above its threshold), which one unit computes exactly: see weights.emit_steps.
    It costs one unit per step, at the price of the pair's level restoration (its inputs
    must be exact levels: step inputs and memory reads, never a noisy sum).  Its first
    `restoring` steps are pairs all the same: they read inputs that are not exact levels
    (a ROM chunk passing the previous chunk's outputs through, fetch.py), and a single
    unit would pass their error on doubled (its pre-activation moves 2K per 8 of input
    level, its output 16 per 2K).
    """

    steps: list[Step]
    coefs: list[dict[int, int]]
    name: str = ""
    single: bool = False
    restoring: int = 0

    @property
    def units(self) -> int:
        """MLP units of its steps (the outputs' overwrites not counted)."""
        return len(self.steps) + self.restoring if self.single else 2 * len(self.steps)


@dataclass
class TableOut:
    table: int  # node index of the Table
    index: int
    name: str = ""


@dataclass
class Input:
    name: str


@dataclass
class MemRead:
    """Output bit `bit` of the memory heads in `mems` (a shared read bus: at most one of
    them reads in a step; 0 when none does)."""

    mems: list[int]
    bit: int
    name: str = ""


Pattern = list[tuple[Sig, bool]]  # AND of literals (signal, wanted value)


@dataclass
class Memory:
    """One DeltaNet head used as a word memory of up to 128 slots.

    Slot j is written when `write_keys[j]` matches (at most one slot matches per
    step) with the bits `value`; slot j is read when `read_keys[j]` matches.  The
    write happens before the read of the same step (DeltaNet's order), so a read
    of the slot just written sees the new word.
    """

    name: str
    layer: int  # decoder layer whose DeltaNet holds this head (fixed by the machine design)
    write_keys: list[Pattern]
    read_keys: list[Pattern]
    value: list[Sig]
    width: int
    outputs: list[Sig] = field(default_factory=list)
    # "dual": output i is value bit i (rails 2i, 2i+1 hold b and 1 - b).  "onehot4": `value`
    # is 128 rails, one of each group of four set (ONEHOT4_RAILS); output w*32 + i is bit i of
    # word w, the OR of group i's rails whose index has bit w.
    encoding: str = "dual"

    def read_word(self, row: list[int]) -> list[int]:
        """The output bits of a stored row (a list of value bits)."""
        if self.encoding == "dual":
            return list(row)
        return [int(any(row[4 * i + c] for c in ONEHOT4_RAILS[w])) for w in range(2) for i in range(32)]

    def key_and_value_inputs(self) -> list[Sig]:
        xs = {x for p in self.write_keys + self.read_keys for x, _ in p}
        return sorted(xs | set(self.value))


class Netlist:
    def __init__(self) -> None:
        self.nodes: list[Gate | Input | MemRead] = []
        self.names: dict[Sig, str] = {}
        self.memories: list[Memory] = []
        self.inputs: dict[str, Sig] = {}
        self.outputs: list[tuple[Sig, Sig]] = []  # (state input, its value for the next step)
        self.floor: dict[Sig, int] = {}  # earliest layer allowed for a gate (to spread pressure)
        self._floor = 0
        self.after: dict[Sig, Sig] = {}  # a gate placed no earlier than this signal's level (just in time)
        self._after: Sig | None = None
        self.ONE = self.input("one")

    # -- construction -----------------------------------------------------------
    @contextmanager
    def at_least(self, layer: int):
        """Context: gates built inside go no earlier than `layer` (they are not urgent)."""
        old, self._floor = self._floor, layer
        try:
            yield
        finally:
            self._floor = old

    @contextmanager
    def not_before(self, sig: Sig):
        """Context: gates built inside are placed no earlier than `sig` (computed just in time,
        so that their outputs do not occupy residual dimensions while they wait)."""
        old, self._after = self._after, sig
        try:
            yield
        finally:
            self._after = old

    def _add(self, node, name: str = "") -> Sig:
        self.nodes.append(node)
        s = len(self.nodes) - 1
        if self._floor:
            self.floor[s] = self._floor
        if self._after is not None:
            self.after[s] = self._after
        if name:
            self.names[s] = name
        return s

    def input(self, name: str) -> Sig:
        s = self._add(Input(name), name)
        self.inputs[name] = s
        return s

    def inputs_bus(self, name: str, width: int) -> list[Sig]:
        return [self.input(f"{name}[{i}]") for i in range(width)]

    def _merged(self, st: Step) -> Step:
        """The step with ONE folded into the constant and repeated signals' weights summed."""
        merged: dict[Sig, int] = {}
        const = st.const
        for x, w in st.terms:
            if x == self.ONE:
                const += w
            else:
                merged[x] = merged.get(x, 0) + w
        return Step(tuple((x, w) for x, w in merged.items() if w), const, st.T, st.coef)

    def gate(self, steps: Iterable[Step], name: str = "") -> Sig:
        return self._add(Gate([self._merged(st) for st in steps], name), name)

    def memory(self, name: str, layer: int, write_keys: list[Pattern], read_keys: list[Pattern],
               value: list[Sig], outputs: list[Sig] | None = None, encoding: str = "dual") -> list[Sig]:
        """Add one DeltaNet head; `outputs` joins an existing read bus instead of a new one.

        With encoding "onehot4" the head holds two words a slot: `value` is the row's 128
        one-hot rails (exactly one of each group of four set, which the caller's circuit
        guarantees) and the read bus is both words, 64 bits (Memory.encoding).
        A word wider than WORD_BITS is stored in several heads with the same keys (one
        slice each): a row's read is exact only with a fixed number of nonzero rails
        (weights.VALUE_RAILS), which a dual-rail word of more than 32 bits exceeds.
        """
        width = len(value)
        if encoding == "onehot4":
            assert width == 4 * WORD_BITS
            width = 2 * WORD_BITS
        elif width > WORD_BITS:
            outs: list[Sig] = []
            for part, lo in enumerate(range(0, width, WORD_BITS)):
                hi = min(width, lo + WORD_BITS)
                outs += self.memory(f"{name}.{part}", layer, write_keys, read_keys, value[lo:hi],
                                    None if outputs is None else outputs[lo:hi])
            return outs
        assert len(write_keys) <= 128 and len(read_keys) <= 128
        m = Memory(name, layer, write_keys, read_keys, value, width, encoding=encoding)
        self.memories.append(m)
        idx = len(self.memories) - 1
        if outputs is None:
            outputs = [self._add(MemRead([idx], i, f"{name}.out[{i}]"), f"{name}.out[{i}]")
                       for i in range(width)]
        else:
            assert len(outputs) == width
            for o in outputs:
                self.nodes[o].mems.append(idx)
        m.outputs = outputs
        return outputs

    def readers_of(self, s: Sig) -> list[int]:
        return self.nodes[s].mems

    def output(self, state: Sig, new: Sig) -> None:
        """The next step's value of a state input."""
        assert isinstance(self.nodes[state], Input)
        self.outputs.append((state, new))

    def output_bus(self, state: list[Sig], new: list[Sig]) -> None:
        assert len(state) == len(new)
        for a, b in zip(state, new):
            self.output(a, b)

    # -- boolean helpers (bit domain) ---------------------------------------------
    def table(self, steps: Sequence[Step], coefs: Sequence[dict[int, int]], name: str = "",
              single: bool = False, restoring: int = 0) -> list[Sig]:
        merged = [self._merged(st) for st in steps]
        if single:
            for st in merged:
                assert st.coef == 1 and st.const + sum(w for _, w in st.terms if w > 0) == st.T, \
                    f"table {name}: a one-unit step must be an AND (sum at most its threshold)"
        t = self._add(Table(merged, [dict(c) for c in coefs], name, single, restoring))
        return [self._add(TableOut(t, j, f"{name}[{j}]"), f"{name}[{j}]") for j in range(len(coefs))]

    def threshold(self, terms: Iterable[tuple[Sig, int]], T: int, const: int = 0, name: str = "") -> Sig:
        return self.gate([Step(tuple(terms), const, T)], name)

    def steps_of(self, terms: Iterable[tuple[Sig, int]], thresholds: Sequence[tuple[int, int]],
                 const: int = 0, name: str = "") -> Sig:
        """sum_k a_k [sum w b + const >= T_k] over one shared weighted sum."""
        terms = tuple(terms)
        return self.gate([Step(terms, const, T, a) for T, a in thresholds], name)

    @staticmethod
    def lits(lits) -> tuple[tuple[tuple[Sig, int], ...], int]:
        """Literals as terms: b contributes +b, not-b contributes (1 - b)."""
        terms, const = [], 0
        for x in lits:
            s, pol = (x, True) if isinstance(x, int) else x
            if pol:
                terms.append((s, 1))
            else:
                terms.append((s, -1))
                const += 1
        return tuple(terms), const

    def and_step(self, lits) -> Step:
        terms, const = self.lits(lits)
        return Step(terms, const, len(terms))

    def and_(self, lits, name: str = "") -> Sig:
        return self.gate([self.and_step(lits)], name)

    def or_(self, lits, name: str = "") -> Sig:
        terms, const = self.lits(lits)
        return self.gate([Step(terms, const, 1)], name)

    def not_(self, a: Sig, name: str = "") -> Sig:
        return self.threshold([(a, -1)], 0, 0, name)

    def copy(self, a: Sig, name: str = "") -> Sig:
        return self.threshold([(a, 1)], 1, 0, name)

    def xor(self, a: Sig, b: Sig, name: str = "") -> Sig:
        return self.steps_of([(a, 1), (b, 1)], [(1, 1), (2, -1)], name=name)

    def mux(self, sel: Sig, a: Sig, b: Sig, name: str = "") -> Sig:
        """sel ? a : b in one level."""
        return self.gate([self.and_step([sel, a]), self.and_step([(sel, False), b])], name)

    def select(self, cases, name: str = "") -> Sig:
        """OR of mutually exclusive AND-terms (each a list of literals), in one level."""
        return self.gate([self.and_step(c) for c in cases], name)

    # -- evaluation (tests only) ---------------------------------------------------
    def simulate(self, inputs: dict[Sig, int], mem_state: dict[int, dict[int, list[int]]] | None = None
                 ) -> dict[Sig, int]:
        """Evaluate every node (memories: write, then read) with memoised recursion."""
        import sys
        mem_state = {} if mem_state is None else mem_state
        val: dict[Sig, int] = {self.ONE: 1}
        val.update(inputs)
        mems_done: set[int] = set()

        def ev(s: Sig) -> int:
            if s in val:
                return val[s]
            node = self.nodes[s]
            if isinstance(node, Input):
                raise KeyError(f"input {node.name} not given")
            if isinstance(node, MemRead):
                for mi in node.mems:
                    if mi not in mems_done:
                        for x in self.memories[mi].key_and_value_inputs():
                            ev(x)
                        self._sim_memory(mi, val, mem_state)
                        mems_done.add(mi)
                return val[s]
            if isinstance(node, TableOut):
                ev(node.table)
                tab = self.nodes[node.table]
                fired = val[node.table]
                out = sum(c for k, c in tab.coefs[node.index].items() if fired[k])
                if out not in (0, 1):
                    raise ValueError(f"table {tab.name} output {node.index} produced {out}")
                val[s] = out
                return out
            if isinstance(node, Table):
                for x in gate_inputs(node):
                    ev(x)
                val[s] = [st.const + sum(w * val[x] for x, w in st.terms) >= st.T for st in node.steps]
                return val[s]
            for x in gate_inputs(node):
                ev(x)
            val[s] = eval_node(node, val)
            return val[s]

        old = sys.getrecursionlimit()
        sys.setrecursionlimit(max(old, 100000))
        try:
            for s in range(len(self.nodes)):
                ev(s)
        finally:
            sys.setrecursionlimit(old)
        return val

    def _sim_memory(self, idx: int, val: dict[Sig, int], mem_state) -> None:
        m = self.memories[idx]
        st = mem_state.setdefault(idx, {})

        def match(p: Pattern) -> bool:
            return all(val[s] == int(pol) for s, pol in p)

        w = [j for j, p in enumerate(m.write_keys) if p and match(p)]
        assert len(w) <= 1, f"memory {m.name}: several write slots match"
        if w:
            st[w[0]] = [val[s] for s in m.value]
            if m.encoding == "onehot4":  # the exact read needs one rail of each group (32 in all)
                assert all(sum(st[w[0]][4 * i:4 * i + 4]) == 1 for i in range(WORD_BITS)), \
                    f"memory {m.name}: a written row is not one-hot in groups of four"
        r = [j for j, p in enumerate(m.read_keys) if p and match(p)]
        assert len(r) <= 1, f"memory {m.name}: several read slots match"
        if r:
            word = m.read_word(st.get(r[0], [0] * len(m.value)))
            for i, s in enumerate(m.outputs):
                assert s not in val or val[s] == 0, f"read bus of {m.name} driven twice"
                val[s] = word[i]
        else:
            for s in m.outputs:
                val.setdefault(s, 0)


def eval_node(node: Gate, val: dict[Sig, int]) -> int:
    out = 0
    for st in node.steps:
        if st.const + sum(w * val[x] for x, w in st.terms) >= st.T:
            out += st.coef
    if out not in (0, 1):
        raise ValueError(f"gate {node.name or '?'} produced {out}, not a bit")
    return out


def gate_inputs(node) -> list[Sig]:
    if isinstance(node, (Gate, Table)):
        return sorted({x for st in node.steps for x, _ in st.terms})
    return []
