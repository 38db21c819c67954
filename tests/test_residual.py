"""The residual stream's 2,048 dimensions: units that a program combines must fit in them together.

The float unit, the lane-crossing unit (shuffles and votes) and the float compares each
fit beside the integer machine; all three in one program overflowed the residual in the
register-file layers ("does not fit in 45 layers ... full at stage 17"): gates placed as
early as their inputs allow (the scheduler's masks, the next PCs, the micro-step lane's
operands) held dimensions there while waiting for readers at the end of the step.  The
linker now moves such gates later where that frees room (qgcc.link.sink).  These tests
check the rule that makes the move safe, and a kernel that needs it end to end, through the
CLI, in the network against the emulator and a numpy model.
"""

from __future__ import annotations

import functools
from unittest import mock

import numpy as np
import pytest

import qgcc
from qgcc.link.core import build_core
from qgcc.link.netlist import Gate, Table, TableOut, gate_inputs
from qgcc.link.schedule import place
from qgcc.link.sink import sink

# Float arithmetic, a float compare and a warp vote: the fuzzer's reproducer (tests/test_differential.py).
VOTE_KERNEL = """
__global__ void k(float *a, unsigned *b) {
    float x = a[threadIdx.x];
    a[threadIdx.x] = (x * 2.0f) + 1.0f;
    b[threadIdx.x] = __ballot_sync(0xffffffff, x != 3.0f);
}
"""

# A float max-reduction over the warp with __shfl_down_sync, after a scale and an offset.
WARP_MAX = r"""
__global__ void warp_max(const float *a, float *out, float scale) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = a[i] * scale + 1.0f;
    for (int o = warpSize / 2; o > 0; o /= 2)
        v = fmaxf(v, __shfl_down_sync(0xffffffff, v, o));
    if ((threadIdx.x & (warpSize - 1)) == 0)
        out[i / warpSize] = v;
}
"""


def live_counts(net, stage: dict[int, int], num_layers: int) -> list[int]:
    """Signals that hold a residual dimension of their own at each stage (not the fixed state)."""
    readers: dict[int, int] = {}
    for s, node in enumerate(net.nodes):
        if isinstance(node, (Gate, Table)):
            for x in gate_inputs(node):
                readers[x] = max(readers.get(x, -1), stage[s])
    for m in net.memories:
        for x in m.key_and_value_inputs():
            readers[x] = max(readers.get(x, -1), 2 * m.layer)
    end = 2 * num_layers - 1
    for _, new in net.outputs:
        readers[new] = end
    counts = [0] * (end + 1)
    for s, node in enumerate(net.nodes):
        if isinstance(node, (Gate, TableOut)):
            for t in range(stage[s], max(readers.get(s, -1), stage[s] + 1)):
                counts[t] += 1
    return counts


@functools.lru_cache(maxsize=1)
def vote_kernel_placed():
    """The reproducer's netlist placed in 36 layers, with every gate's stage before and after sinking."""
    from qgcc.link import schedule

    seen = {}

    def spy(net, stage, *args):
        seen["early"] = dict(stage)
        moved = sink(net, stage, *args)
        seen["late"] = dict(stage)
        return moved

    net = build_core(qgcc.compile(VOTE_KERNEL).program).net
    with mock.patch.object(schedule, "sink", spy):
        pl = place(net, 36)
    return net, pl, seen["early"], seen["late"]


def test_moving_gates_later_never_holds_more_residual_dimensions_at_any_stage():
    """The sinking rule: a gate moves later only if the inputs it then keeps alive are no
    more than its outputs, so the residual holds no more signals at any stage than with
    every gate placed as early as possible, and many fewer where the register file sits."""
    net, pl, early_stage, late_stage = vote_kernel_placed()
    assert late_stage == pl.stage and early_stage != late_stage
    early, late = live_counts(net, early_stage, 36), live_counts(net, late_stage, 36)
    assert all(a <= b for a, b in zip(late, early)), [(t, a, b) for t, (a, b) in enumerate(zip(late, early)) if a > b]
    assert early[17] - late[17] >= 100  # the stage that overflowed before


def ops(source: str) -> set[str]:
    return {ins.op.name for ins in qgcc.compile(source).program.code}


def test_float_arithmetic_a_float_compare_and_a_warp_vote_link_together():
    assert {"FADD", "FMUL", "FSNE", "VOTE"} <= ops(VOTE_KERNEL)
    assert vote_kernel_placed()[1].num_layers == 36  # the integer machine's depth: the units add no layer


@pytest.mark.slow  # links a float program (about 15 s) and runs it in the network: 35 s on a loaded CPU
def test_a_float_warp_max_reduction_runs_in_the_network_as_in_the_emulator(qgcc, qgrun, tmp_path):
    """`qgcc -o` links the kernel (it did not fit before), and `qgrun --engine neural` gives
    the emulator's bytes, which are the numpy model's: per warp of 4 lanes, the max of
    fl(fl(a * scale) + 1) over the lanes, with NaN inputs ignored as fmaxf does."""
    a = np.array([1.5, -2.0, 7.25, 0.5, -1e30, np.nan, -3.0, -0.75, 3e38, 2.0, np.inf, -np.inf],
                 np.float32)
    scale = np.float32(-1.25)
    (tmp_path / "k.cu").write_text(WARP_MAX)
    np.save(tmp_path / "a.npy", a)
    r = qgcc(tmp_path / "k.cu", "-o", tmp_path / "k.qg")
    assert r.exit_code == 0, r.output
    outs = {}
    for engine in ("neural", "ref"):
        r = qgrun(tmp_path / "k.qg", "--grid", 3, "--block", 4, "--arg", f"a=@{tmp_path / 'a.npy'}",
                  "--arg", "out=zeros:3", "--arg", f"scale={float(scale)}",
                  "--out", f"out={tmp_path / engine}.npy", "--engine", engine, "--trace", "none")
        assert r.exit_code == 0, r.output
        outs[engine] = np.load(tmp_path / f"{engine}.npy")
    assert outs["neural"].view(np.uint32).tolist() == outs["ref"].view(np.uint32).tolist()
    assert {"FADD", "FMUL", "FMAX", "SHFL"} <= ops(WARP_MAX)
    with np.errstate(over="ignore"):
        v = (a * scale + np.float32(1.0)).astype(np.float32)
    want = np.fmax.reduce(v.reshape(3, 4), axis=1)
    assert outs["ref"].view(np.uint32).tolist() == want.astype(np.float32).view(np.uint32).tolist()
