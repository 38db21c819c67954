"""The compiled network executes every launch: traces and buffers equal the emulator's, bit for bit.

Every sample runs through the compiled Qwen3.5 layers (the `neural` engine) on a
launch small enough for CI, and is compared step by step (PC, active mask, every
register write, every memory access) with the reference emulator and, for the
buffers, with the independent C model of the sample.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import models
import sample_cases
from lockstep import CASES, both, host, linked
from qgcc.engines.neural_c import StepError
from qgcc.link.linker import link
from qgcc.runtime.launch import make_launch
from qgcc.trace import BarrierFault, MemoryFault, StepLimitFault

ROOT = Path(__file__).resolve().parents[1]




@pytest.mark.parametrize("name", sorted(CASES))
def test_sample_runs_bit_exact_inside_the_network(name):
    grid, block, scalars, arrays = CASES[name]
    outs, _ = both(name, grid, block, scalars, arrays)
    want = models.MODELS[name](arrays, scalars, grid, block)
    for buf, value in want.items():
        np.testing.assert_array_equal(outs[buf], value, err_msg=f"{name}.{buf}")


ATOMIC_KERNEL = r"""
__global__ void atoms(int *x, unsigned *u, int *old, int *sh) {
    __shared__ int s[4];
    int t = threadIdx.x;
    if (t < 4) s[t] = 0;
    __syncthreads();
    old[t] = atomicAdd(&x[0], t + 1);
    atomicSub(&x[1], t);
    atomicMin(&x[2], 5 - t);
    atomicMax(&x[3], t * 3);
    atomicMin(&u[0], (unsigned)(7 - t));
    atomicMax(&u[1], (unsigned)t);
    atomicExch(&x[4], t);
    atomicCAS(&x[5], t, t + 10);
    atomicAnd(&u[2], ~(1u << t));
    atomicOr(&u[3], 1u << t);
    atomicXor(&u[4], 3u << t);
    atomicAdd(&s[t & 1], t);
    __syncthreads();
    if (t < 2) sh[t] = s[t];
}
"""


def test_every_atomic_and_shared_memory_inside_the_network():
    arrays = {"x": np.array([10, 10, 10, 10, 99, 1], np.int32), "u": np.array([9, 0, 255, 0, 0], np.uint32),
              "old": np.zeros(6, np.int32), "sh": np.zeros(2, np.int32)}
    outs, _ = both("atoms", (1, 1, 1), (6, 1, 1), {}, arrays, source=ATOMIC_KERNEL)
    # exch: warp 1 reaches it first (its lanes skip the shared init), warp 0 writes last
    assert list(outs["x"]) == [10 + 21, 10 - 15, 0, 15, 3, 11]
    old = sorted(outs["old"].tolist())  # each lane saw a distinct partial sum, in schedule order
    assert old[0] == 10 and len(set(old)) == 6 and all(10 <= o < 31 for o in old)
    assert list(outs["u"]) == [2, 5, 255 & ~63, 63, 3 ^ 6 ^ 12 ^ 24 ^ 48 ^ 96]
    assert list(outs["sh"]) == [0 + 2 + 4, 1 + 3 + 5]


@pytest.mark.parametrize("grid, block", [((1, 2, 2), (3, 2, 2)), ((2, 1, 1), (1, 3, 2)), ((1, 1, 2), (2, 1, 3))])
def test_three_dimensional_blocks_and_grid(grid, block):
    """BLKINIT counts a warp's four lanes' (x, y, z) in one step: a block narrower than four
    threads wraps x (and y) more than once within it (1 x 3 x 2: three wraps per warp)."""
    src = r"""
    __global__ void ids(int *out) {
        int t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
        int b = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
        out[b * 12 + t] = threadIdx.z * 100 + threadIdx.y * 10 + threadIdx.x + 1000 * b + 10000 * (warpSize == 4);
    }
    """
    outs, _ = both("ids", grid, block, {}, {"out": np.zeros(48, np.int32)}, source=src)
    (bx, by, bz), nb = block, grid[0] * grid[1] * grid[2]
    want = np.zeros(48, np.int64)
    for b in range(nb):
        for z in range(bz):
            for y in range(by):
                for x in range(bx):
                    want[b * 12 + x + bx * (y + by * z)] = 10000 + 1000 * b + z * 100 + y * 10 + x
    assert list(outs["out"]) == want.tolist()


def test_out_of_bounds_store_faults_inside_the_network():
    src = "__global__ void k(int *a) { a[threadIdx.x + 2] = 1; }"
    prog, cm = linked("oob", src)
    launch = make_launch(prog, prog.kernels[0], (1, 1, 1), (4, 1, 1), {}, {"a": np.zeros(4, np.int32)})
    with pytest.raises(MemoryFault) as e:
        host(cm).run(launch, max_steps=1000)
    assert (e.value.warp, e.value.lane) == (0, 2)


def test_barrier_in_divergent_code_faults_inside_the_network():
    src = "__global__ void k(int *a) { if (threadIdx.x < 2) __syncthreads(); a[0] = 1; }"
    prog, cm = linked("bardiv", src)
    launch = make_launch(prog, prog.kernels[0], (1, 1, 1), (4, 1, 1), {}, {"a": np.zeros(1, np.int32)})
    with pytest.raises(BarrierFault):
        host(cm).run(launch, max_steps=1000)


def test_runaway_kernel_stops_at_the_step_limit():
    src = "__global__ void k(int *a) { while (a[0] == 0) { } }"
    prog, cm = linked("spin", src)
    launch = make_launch(prog, prog.kernels[0], (1, 1, 1), (1, 1, 1), {}, {"a": np.zeros(1, np.int32)})
    with pytest.raises(StepLimitFault):
        host(cm).run(launch, max_steps=30)


def assert_vadd_broken(prog, cm2):
    """The damaged network must not compute vadd: wrong sums, a fault (stray addresses), or the
    compiled step's refusal (a damaged MLP leaves a residual entry off +-8, which the exactness
    check catches before any result is read)."""
    grid, block, scalars, arrays = CASES["vadd"]
    launch = make_launch(prog, prog.kernels[0], grid, block, scalars, {a: v.copy() for a, v in arrays.items()})
    try:
        res = host(cm2).run(launch, max_steps=2000)
    except (MemoryFault, StepLimitFault, StepError):
        return
    c = launch.read_buffer(res.memory, "c")
    assert not np.array_equal(c[:10], arrays["a"] + arrays["b"])


def test_liveness_zeroing_the_register_write_path_breaks_results():
    prog, cm = linked("vadd")
    cm2 = link(prog)
    # The register file's value rows (what a write stores) in every register-file layer.
    from qgcc.link.layout import L_REGS
    for L in L_REGS:
        qkv = cm2.layers[L].tensors["linear_attn.in_proj_qkv.weight"]
        cols = qkv.shape[1]
        qkv.entries = {i: v for i, v in qkv.entries.items() if i // cols < 2 * 16 * 128}
    assert_vadd_broken(prog, cm2)


def test_liveness_zeroing_the_adders_breaks_results():
    prog, _ = linked("vadd")
    cm2 = link(prog)
    # Zero the MLP units of the layers holding the ALU adders' sum bits.
    from qgcc.link.core import build_core
    from qgcc.link.schedule import place
    m = build_core(prog)
    pl = place(m.net, cm2.num_layers)
    sums = [s for s, nm in m.net.names.items() if nm.startswith(("add0.s", "add1.s", "add2.s", "add3.s"))]
    dims = {pl.dim[s] for s in sums}
    layer = pl.stage[sums[0]] // 2
    dn = cm2.layers[layer].tensors["mlp.down_proj.weight"]
    ncol = dn.shape[1]
    dn.entries = {i: v for i, v in dn.entries.items() if i // ncol not in dims or v < 0 and abs(v) == 1 / 32}
    assert_vadd_broken(prog, cm2)


def test_neural_engine_never_needs_the_emulator(tmp_path):
    """Run a launch with qgcc.ref made unimportable."""
    code = f"""
import sys, numpy as np
class Block:
    def find_spec(self, name, path=None, target=None):
        if name == "qgcc.ref" or name.startswith("qgcc.ref."):
            raise ImportError("the emulator is unimportable in this test")
sys.meta_path.insert(0, Block())
from qgcc.frontend import compile_source
from qgcc.engines.neural import NeuralEngine
from qgcc.runtime.launch import make_launch
src = open({str(ROOT / 'samples' / 'vadd.cu')!r}).read()
p = compile_source(src, 'vadd.cu')
a = np.arange(5, dtype=np.int32); b = 10 * a
L = make_launch(p, p.kernels[0], (1, 1, 1), (5, 1, 1), {{'n': 5}}, {{'a': a, 'b': b, 'c': np.zeros(5, np.int32)}})
r = NeuralEngine().run(L, 5000)
assert list(L.read_buffer(r.memory, 'c')) == [0, 11, 22, 33, 44]
assert 'qgcc.ref.emulator' not in sys.modules
print('ok')
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


def _case(name, seed):
    return sample_cases.CASES[name](np.random.default_rng(seed))


@pytest.mark.parametrize("name,seed", [("atomics", 34), ("bitops", 34)])
def test_more_samples_run_bit_exact_inside_the_network(name, seed):
    grid, block, scalars, arrays = _case(name, seed)
    outs, _ = both(name, grid, block, scalars, arrays)
    for buf, value in models.MODELS[name](arrays, scalars, grid, block).items():
        np.testing.assert_array_equal(outs[buf], value, err_msg=f"{name}.{buf}")


@pytest.mark.slow
@pytest.mark.parametrize("name,seed", [("devfunc", 29), ("divmod", 34)])
def test_long_samples_run_bit_exact_inside_the_network(name, seed):
    """Over 2,000 warp instructions each (a few minutes on a CPU): `pytest -m slow`."""
    grid, block, scalars, arrays = _case(name, seed)
    outs, _ = both(name, grid, block, scalars, arrays)
    for buf, value in models.MODELS[name](arrays, scalars, grid, block).items():
        np.testing.assert_array_equal(outs[buf], value, err_msg=f"{name}.{buf}")
