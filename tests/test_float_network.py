"""The float instructions inside the network: every float operation the code generator
emits as one instruction, run by the compiled layers and compared record by record with the
reference emulator, and the buffers with the independent IEEE model (numpy float32 and
exact rationals, floatref).

The default run uses a short, special-heavy set of pairs; `-m slow` runs every
special x special pair and 2,000 random and hard pairs per operation."""

from __future__ import annotations

import copy
import dataclasses

import numpy as np
import pytest

import floatref as R
from lockstep import both, host, linked
from qgcc.frontend import compile_source
from qgcc.fpu import IN_NETWORK
from qgcc.isa import FLOAT_OPS, Op
from qgcc.runtime.launch import make_launch
from qgcc.trace import MemoryFault, StepLimitFault
from test_fpu import hard_pairs, hard_triples

FOPS = """
__global__ void fops(const float *a, const float *b, float *r, int *c, int n) {
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        float x = a[i], y = b[i];
        r[i * 6 + 0] = x + y;
        r[i * 6 + 1] = x - y;
        r[i * 6 + 2] = x * y;
        r[i * 6 + 3] = fminf(x, y);
        r[i * 6 + 4] = fmaxf(x, y);
        r[i * 6 + 5] = (float)__float_as_int(x);
        c[i * 4 + 0] = (x < y) | ((x <= y) << 1) | ((x > y) << 2) | ((x >= y) << 3) | ((x == y) << 4)
                       | ((x != y) << 5);
        c[i * 4 + 1] = (int)x;
        c[i * 4 + 2] = (unsigned)y;
        c[i * 4 + 3] = __float_as_int((float)__float_as_uint(y));
    }
}
"""


def expected(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    with np.errstate(all="ignore"):
        r = np.stack([R.binary("+", a, b), R.binary("-", a, b), R.binary("*", a, b), R.minmax("min", a, b),
                      R.minmax("max", a, b), R.from_int(a.view(np.int32))], axis=1)
        cmp = sum(R.compare(o, a, b) << k for k, o in enumerate(["<", "<=", ">", ">=", "==", "!="]))
        c = np.stack([cmp.astype(np.uint32), R.to_int(a).view(np.uint32), R.to_uint(b), R.from_uint(b)], axis=1)
    return r, c


def arrays(a, b):
    n = len(a)
    return {"a": R.f(a), "b": R.f(b), "r": np.zeros(6 * n, np.float32), "c": np.zeros(4 * n, np.int32)}


def run_pairs(a: np.ndarray, b: np.ndarray) -> None:
    outs, _ = both("fops", (1, 1, 1), (4, 1, 1), {"n": len(a)}, arrays(a, b), source=FOPS, max_steps=10 ** 7)
    want_r, want_c = expected(a, b)
    got_r = outs["r"].view(np.uint32).reshape(len(a), 6)
    got_c = outs["c"].view(np.uint32).reshape(len(a), 4)
    names = ["+", "-", "*", "fminf", "fmaxf", "(float)int", "compares", "(int)", "(unsigned)", "(float)unsigned"]
    for j, (got, want) in enumerate(zip(np.concatenate([got_r, got_c], 1).T, np.concatenate([want_r, want_c], 1).T)):
        bad = np.nonzero(got != want)[0]
        assert len(bad) == 0, (names[j], [(hex(a[i]), hex(b[i]), hex(got[i]), hex(want[i])) for i in bad[:4]])


def test_the_kernel_uses_only_float_instructions():
    """Every float operator of the kernel is one instruction, so the network runs each one itself."""
    prog = compile_source(FOPS, "fops.cu")
    used = {ins.op for ins in prog.code}
    assert used & FLOAT_OPS == IN_NETWORK - {Op.FSGT, Op.FSGE, Op.FFMA}  # > and >= swap the operands; no fmaf
    assert Op.JR not in used  # no soft-float routine


def test_float_ops_run_bit_exact_inside_the_network():
    rng = np.random.default_rng(8)
    s = R.SPECIALS
    pick = rng.integers(0, len(s), size=(24, 2))
    a1, b1 = hard_pairs(rng, 16)
    run_pairs(np.concatenate([s[pick[:, 0]], a1]), np.concatenate([s[pick[:, 1]], b1]))


@pytest.mark.slow
def test_every_special_pair_and_2000_pairs_inside_the_network():
    rng = np.random.default_rng(2026)
    s = R.SPECIALS
    a1, b1 = R.pairs(rng, 1000)
    a2, b2 = hard_pairs(rng, 1000)
    a, b = np.concatenate([np.repeat(s, len(s)), a1, a2]), np.concatenate([np.tile(s, len(s)), b1, b2])
    for lo in range(0, len(a), 1000):  # 12 cells a pair: 1,000 pairs fit global memory
        run_pairs(a[lo:lo + 1000], b[lo:lo + 1000])

def without_gates(prog, cm, prefix: str):
    """A copy of the linked network whose gates named `prefix...` never write their dimension (their
    down_proj entries dropped, the pass-through kept), and how many there are: a liveness probe."""
    from qgcc.link.core import build_core
    from qgcc.link.schedule import place

    cm2 = dataclasses.replace(cm, layers=copy.deepcopy(cm.layers), hosts={})  # no cached host
    m = build_core(prog)
    pl = place(m.net, cm2.num_layers)
    gates = [s for s, nm in m.net.names.items() if nm.startswith(prefix)]
    for layer in {pl.stage[s] // 2 for s in gates}:
        dims = {pl.dim[s] for s in gates if pl.stage[s] // 2 == layer}
        dn = cm2.layers[layer].tensors["mlp.down_proj.weight"]
        ncol = dn.shape[1]
        dn.entries = {i: v for i, v in dn.entries.items() if i // ncol not in dims or v < 0 and abs(v) == 1 / 32}
    return cm2, len(gates)



def test_liveness_zeroing_the_adders_alignment_shifter_breaks_float_sums():
    """The float adder in the network is what computes x + y: without its alignment shifter
    (the MLP units of the gates that shift the smaller mantissa) the sums go wrong."""

    prog, cm = linked("fops", FOPS)
    cm2, n = without_gates(prog, cm, "fadd.y")
    assert n
    rng = np.random.default_rng(4)
    a, b = R.pairs(rng, 8)
    k = prog.kernels[0]
    launch = make_launch(prog, k, (1, 1, 1), (4, 1, 1), {"n": 8}, arrays(a, b))
    try:
        res = host(cm2).run(launch, max_steps=20000)
    except (MemoryFault, StepLimitFault):
        return
    got = launch.read_buffer(res.memory, "r").view(np.uint32).reshape(8, 6)
    want, _ = expected(a, b)
    assert not np.array_equal(got[:, :2], want[:, :2])
    assert np.array_equal(got[:, 2:], want[:, 2:])  # the other units still work


def test_soft_float_compiles_every_float_operation_to_routines():
    prog = compile_source(FOPS, "fops.cu", soft_float=True)
    assert not {ins.op for ins in prog.code} & FLOAT_OPS
    assert Op.JR in {ins.op for ins in prog.code}


def test_the_network_executes_every_float_instruction_of_the_isa():
    """No float opcode is left to a routine without --soft-float (FFMA was the last)."""
    assert IN_NETWORK == FLOAT_OPS


# ---- FFMA: fmaf is one instruction, and in a program with FFMA the fused datapath also runs
# +, - and * (a*1+b, a*1-b, a*b-0; qgcc.link.blocks.fpu.fused_operands)
FMA = """
__global__ void fma4(const float *a, const float *b, const float *c, float *r, int *k, int n) {
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        float x = a[i], y = b[i];
        r[i * 4 + 0] = fmaf(x, y, c[i]);
        r[i * 4 + 1] = x + y;
        r[i * 4 + 2] = x - c[i];
        r[i * 4 + 3] = x * y;
        k[i] = (int)x;
    }
}
"""


def fma_arrays(a, b, c):
    n = len(a)
    return {"a": R.f(a), "b": R.f(b), "c": R.f(c), "r": np.zeros(4 * n, np.float32), "k": np.zeros(n, np.int32)}


def fma_expected(a, b, c):
    with np.errstate(all="ignore"):
        return np.stack([R.fma(a, b, c), R.binary("+", a, b), R.binary("-", a, c), R.binary("*", a, b)], axis=1)


def run_triples(a, b, c) -> None:
    outs, _ = both("fma4", (1, 1, 1), (4, 1, 1), {"n": len(a)}, fma_arrays(a, b, c), source=FMA, max_steps=10 ** 7)
    got = outs["r"].view(np.uint32).reshape(len(a), 4)
    for j, (g, w) in enumerate(zip(got.T, fma_expected(a, b, c).T)):
        bad = np.nonzero(g != w)[0]
        assert len(bad) == 0, (["fmaf", "+", "-", "*"][j], [(hex(a[i]), hex(b[i]), hex(c[i]), hex(g[i]), hex(w[i]))
                                                          for i in bad[:4]])
    assert np.array_equal(outs["k"], R.to_int(a))


def test_fmaf_is_one_instruction_unless_soft_float():
    used = {ins.op for ins in linked("fma4", FMA)[0].code}
    assert Op.FFMA in used and Op.JR not in used
    assert not {ins.op for ins in compile_source(FMA, "fma.cu", soft_float=True).code} & FLOAT_OPS


def test_fma_runs_bit_exact_inside_the_network():
    """Record by record against the emulator, and the buffers against exact rationals."""
    rng = np.random.default_rng(11)
    s = R.SPECIALS
    pick = rng.integers(0, len(s), size=(8, 3))
    a, b, c = hard_triples(rng, 16)
    run_triples(np.concatenate([s[pick[:, 0]], a]), np.concatenate([s[pick[:, 1]], b]),
                np.concatenate([s[pick[:, 2]], c]))


@pytest.mark.slow
def test_every_special_pair_and_2000_triples_through_fma_inside_the_network():
    rng = np.random.default_rng(2027)
    s = R.SPECIALS
    k = len(s)
    a1, b1, c1 = hard_triples(rng, 2000)
    sc = np.array([s[(i + j) % k] for i in range(k) for j in range(k)], dtype=np.uint32)
    a = np.concatenate([np.repeat(s, k), a1])
    b = np.concatenate([np.tile(s, k), b1])
    c = np.concatenate([sc, c1])
    for lo in range(0, len(a), 1000):  # 8 cells a triple: 1,000 fit global memory
        run_triples(a[lo:lo + 1000], b[lo:lo + 1000], c[lo:lo + 1000])


@pytest.mark.slow
def test_liveness_zeroing_the_fused_alignment_breaks_fma_results():
    """fmaf's result comes from the fused datapath: zeroing the MLP units of its aligned addend
    (the gates that place c against the product) breaks the fused results, not (int)x."""

    prog, cm = linked("fma4", FMA)
    cm2, n = without_gates(prog, cm, "ffma.y")
    assert n > 90
    rng = np.random.default_rng(5)
    a, b, c = hard_triples(rng, 8)
    launch = make_launch(prog, prog.kernels[0], (1, 1, 1), (4, 1, 1), {"n": 8}, fma_arrays(a, b, c))
    try:
        res = host(cm2).run(launch, max_steps=20000)
    except (MemoryFault, StepLimitFault):
        return
    got = launch.read_buffer(res.memory, "r").view(np.uint32).reshape(8, 4)
    assert not np.array_equal(got, fma_expected(a, b, c))
    assert np.array_equal(launch.read_buffer(res.memory, "k"), R.to_int(a))
