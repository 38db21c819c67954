"""atomicAdd on `double *`, as conjugateGradientMultiBlockCG accumulates its dot products (issue 27).

The machine's atomics are 32-bit; a double atomicAdd is a read-modify-write under a lock cell
the compiler reserves (frontend/atomic_double.py).  CUDA leaves the order of atomics open, so
the model takes the order from the values the calls return (each returns the sum before it)
and checks that every step is exactly numpy's double add and the final sum the last step.
"""

from __future__ import annotations


import numpy as np
import pytest

from frontcheck import assert_error
from test_published_constructs import cli_run

DOT = r"""
__global__ void dot(const double *a, const double *b, double *result, double *olds, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    double s = 0.0;
    for (int k = i; k < n; k += gridDim.x * blockDim.x) s += a[k] * b[k];
    olds[i] = atomicAdd(result, s);
}
"""


def partial_sums(a: np.ndarray, b: np.ndarray, threads: int) -> list[float]:
    s = [np.float64(0.0)] * threads
    for i in range(threads):
        for k in range(i, len(a), threads):
            s[i] = s[i] + a[k] * b[k]
    return s


def check_serial_order(olds: np.ndarray, parts: list, start: float, total: float) -> list[int]:
    """The order the adds took, read off the returned old values; fails unless each add saw
    exactly the sum of the adds before it (no lost or torn update) and the total is the last."""
    left, cur, order = set(range(len(parts))), np.float64(start), []
    while left:
        nxt = [i for i in left if olds[i].tobytes() == cur.tobytes()]
        assert len(nxt) == 1, f"after {order} no single add saw {cur!r}"
        order.append(nxt[0])
        left.remove(nxt[0])
        cur = cur + parts[nxt[0]]
    assert np.float64(total).tobytes() == cur.tobytes()
    return order


def test_double_atomic_add_is_a_serial_chain_of_exact_double_adds(qgcc, qgrun, tmp_path):
    """Sixteen threads in two blocks of two warps add their partial dot products into one
    double: the returned old values form one chain of correctly rounded adds starting from
    the cell's value, and the cell ends at the chain's sum."""
    n, grid, block = 30, 2, 8
    a = np.linspace(-1.3, 2.7, n) ** 3
    b = np.cos(np.arange(n, dtype=np.float64))
    got = cli_run(qgcc, qgrun, tmp_path, DOT, "dot", grid, block,
                  {"a": a, "b": b, "result": np.array([0.625]), "olds": np.zeros(grid * block)}, {"n": n})
    order = check_serial_order(got["olds"], partial_sums(a, b, grid * block), 0.625, got["result"][0])
    assert sorted(order) == list(range(grid * block))


def test_other_atomics_on_double_are_named():
    """Only atomicAdd exists for double in CUDA's common set; the rest are a one-line error."""
    src = "__global__ void k(double *p) { atomicExch(p, 1.0); }\n"
    assert_error(src, 1, 43, "'atomicExch' on 'double *' is not supported (on doubles only atomicAdd is); "
                             "use a 64-bit integer")


@pytest.mark.slow
def test_double_atomic_add_runs_inside_the_network(qgcc, qgrun, tmp_path):
    """The lock, the loads, the soft-float add and the stores are ordinary instructions: the
    network returns the same chain and sum as the emulator, bit for bit."""
    n, grid, block = 12, 1, 8
    a = np.linspace(-1.3, 2.7, n) ** 3
    b = np.cos(np.arange(n, dtype=np.float64))
    arrays = {"a": a, "b": b, "result": np.array([0.625]), "olds": np.zeros(grid * block)}
    (tmp_path / "ref").mkdir()
    ref = cli_run(qgcc, qgrun, tmp_path / "ref", DOT, "dot", grid, block, arrays, {"n": n})
    net = cli_run(qgcc, qgrun, tmp_path, DOT, "dot", grid, block, arrays, {"n": n}, engine="neural")
    assert net["olds"].tobytes() == ref["olds"].tobytes() and net["result"].tobytes() == ref["result"].tobytes()
    check_serial_order(net["olds"], partial_sums(a, b, grid * block), 0.625, net["result"][0])
