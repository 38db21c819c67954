"""Register allocation's analyses are the textbook ones, computed faster: these tests hold the fast
forms (liveness over basic blocks, dead code removed a block's chain per round, smallest-last by
one-integer heap keys) to plain reference forms written here, on the IR of real kernels, so the
speed-up cannot change a compiled program."""

from __future__ import annotations

import copy
import random
from pathlib import Path

import pytest

import qgcc.frontend as F
from qgcc.frontend import regalloc as R
from qgcc.frontend.ir import PURE_OPS

ROOT = Path(__file__).resolve().parents[1]
KERNELS = ["histogram.cu", "scan.cu", "mandelbrot.cu", "collatz.cu"]


def kernel_irs(name: str) -> list:
    """The virtual-register IR of each kernel of a sample, as compile_source hands it over."""
    irs = []
    real = F.allocate

    def grab(ir, *a, **k):
        irs.append(copy.deepcopy(ir))
        return real(ir, *a, **k)

    F.allocate = grab
    try:
        F.compile_source((ROOT / "samples" / name).read_text(), name)
    finally:
        F.allocate = real
    return irs


def reference_liveness(code: R.Code) -> tuple[list[int], list[int]]:
    """Round-robin over single instructions until nothing changes (the definition)."""
    n = len(code.ins)
    use, dfn = [0] * n, [0] * n
    for i, vi in enumerate(code.ins):
        for r in vi.reads():
            use[i] |= 1 << r
        if vi.writes() is not None:
            dfn[i] |= 1 << vi.writes()
        for c in vi.clobbers or ():
            dfn[i] |= 1 << c
    live_in, live_out = [0] * n, [0] * n
    changed = True
    while changed:
        changed = False
        for i in range(n - 1, -1, -1):
            out = 0
            for s in code.succ(i, into_calls=False):
                out |= live_in[s]
            inn = use[i] | (out & ~dfn[i])
            if (out, inn) != (live_out[i], live_in[i]):
                live_out[i], live_in[i], changed = out, inn, True
    return live_in, live_out


@pytest.mark.parametrize("name", KERNELS)
def test_liveness_over_blocks_equals_the_per_instruction_fixpoint(name):
    for ir in kernel_irs(name):
        code = R.Code.from_ir(ir)
        code.prune()
        assert len(code.ins) > 20
        assert code.liveness() == reference_liveness(code)


@pytest.mark.parametrize("name", KERNELS)
def test_dead_code_removes_what_rounds_of_whole_program_removal_remove(name):
    for ir in kernel_irs(name):
        # Make dead chains: every third pure instruction's result goes to a fresh register.
        fresh = 1 + max(r for vi in ir if not vi.is_label for r in (vi.rd, vi.rs1, vi.rs2))
        for k, vi in enumerate(x for x in ir if not x.is_label and x.op in PURE_OPS and x.target is None):
            if k % 3 == 0:
                vi.rd, fresh = fresh, fresh + 1
        before = len(R.Code.from_ir(copy.deepcopy(ir)).ins)
        fast, slow = R.Code.from_ir(copy.deepcopy(ir)), R.Code.from_ir(copy.deepcopy(ir))
        fast.prune()
        slow.prune()
        while fast.dead_code():
            pass
        while True:
            _, live_out = reference_liveness(slow)
            keep = [not (vi.op in PURE_OPS and vi.writes() is not None and not (live_out[i] >> vi.writes()) & 1)
                    for i, vi in enumerate(slow.ins)]
            if not slow.keep(keep):
                break
        assert len(fast.ins) < before
        assert [repr(vi) for vi in fast.ins] == [repr(vi) for vi in slow.ins]


def test_smallest_last_takes_the_least_degree_then_the_least_number():
    rng = random.Random(5)
    for _ in range(20):
        nodes = list(range(rng.randrange(5, 60)))
        adj = {v: set() for v in nodes}
        for _ in range(rng.randrange(0, 400)):
            a, b = rng.sample(nodes, 2)
            adj[a].add(b)
            adj[b].add(a)
        left, order = set(nodes), []
        while left:
            v = min(left, key=lambda x: (len(adj[x] & left), x))
            order.append(v)
            left.remove(v)
        assert R._smallest_last(nodes, adj) == order[::-1]
