"""References and per-thread local arrays (issue 12), checked against g++.

Device functions that take `T &` / `const T &` parameters and kernels with local arrays
indexed at run time are common in published kernels (a swap helper, a per-thread window
sorted in place, a digit buffer).  Each kernel below is compiled by qgcc and run on the
emulator, and the *same kernel text* is compiled by g++ with a small host shim that runs
the threads one after another (the kernels do not communicate between threads), so the
C++ compiler is the independent model of what the text means.  One launch runs through
the compiled network, because local arrays live in memory the launcher reserves.
"""

from __future__ import annotations

import numpy as np
import pytest

from qgcc.frontend import compile_source
from qgcc.runtime.launch import make_launch
from frontcheck import assert_error, emulate_src
from gxx import gxx_model, need_gxx

MEDIAN = r"""
#define WIN 5

__device__ __forceinline__ void cswap(float &a, float &b) {
    if (a > b) { float t = a; a = b; b = t; }
}

__device__ void minmax(const float &x, float &lo, float &hi) {
    lo = fminf(lo, x);
    hi = fmaxf(hi, x);
}

__host__ __device__ inline int clampi(int v, int lo, int hi) { return v < lo ? lo : (v > hi ? hi : v); }

__global__ void median5(const float *__restrict__ in, float *__restrict__ out, float *range, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float w[WIN];
    for (int k = 0; k < WIN; k++)
        w[k] = in[clampi(i + k - WIN / 2, 0, n - 1)];
    for (int a = 0; a < WIN; a++)
        for (int b = 0; b < WIN - 1 - a; b++)
            cswap(w[b], w[b + 1]);            // references to cells of a local array
    float lo = w[0], hi = w[0];
    for (int k = 1; k < WIN; k++)
        minmax(w[k], lo, hi);                 // const reference to a cell, references to registers
    out[i] = w[WIN / 2];
    range[i] = hi - lo;
}
"""

DIGITS = r"""
__device__ void divmod(int a, int b, int &q, int &r) { q = a / b; r = a % b; }
__device__ unsigned bump(unsigned &c) { return c++; }

__global__ void digits(const int *in, int *out, unsigned *counts) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int d[10];
    int table[2][4] = {{1, 10, 100, 1000}, {t, -t}};
    int x = in[t], nd = 0;
    unsigned c = 0;
    do {
        int q, r;
        divmod(x, 10, q, r);
        d[nd++] = r;
        x = q;
        bump(c);
    } while (x != 0 && nd < 10);
    int rev = 0;
    for (int k = 0; k < nd; k++)
        rev = rev * 10 + d[k];
    out[t] = rev + table[1][0] * table[0][3] + table[1][1] + table[1][2];
    counts[t] += bump(counts[t]) + c;         // a reference to a global cell
}
"""


@need_gxx
def test_references_and_a_local_window_sorted_in_place_match_gxx(tmp_path):
    rng = np.random.default_rng(5)
    x = rng.normal(size=10).astype(np.float32)
    x[3] = x[7]  # ties
    args = [("in", x), ("out", np.zeros(10, np.float32)), ("range", np.zeros(10, np.float32)), ("n", 10)]
    got = emulate_src(MEDIAN, None, 3, 4, args)
    want = gxx_model(tmp_path, MEDIAN, "median5", 3, 4, args)
    for name in ("out", "range"):
        assert got[name].view(np.uint32).tolist() == want[name].view(np.uint32).tolist(), name


@need_gxx
def test_reference_outputs_and_dynamically_indexed_2d_and_1d_local_arrays_match_gxx(tmp_path):
    vals = np.array([0, 7, -7, 1234567, -2147483648, 2147483647, 100, -90], np.int32)
    args = [("in", vals), ("out", np.zeros(8, np.int32)), ("counts", np.arange(8, dtype=np.uint32))]
    got = emulate_src(DIGITS, None, 2, 4, args)
    want = gxx_model(tmp_path, DIGITS, "digits", 2, 4, args)
    assert got["out"].tolist() == want["out"].tolist()
    assert got["counts"].tolist() == want["counts"].tolist()


def test_local_frames_are_per_thread_and_sized_by_the_kernel():
    """Each thread's frame is its own: the same local array in every thread holds that thread's data."""
    prog = compile_source(DIGITS, "t.cu")
    assert prog.kernels[0].local_words == 10 + 8
    launch = make_launch(prog, prog.kernels[0], (1, 1, 1), (4, 1, 1), {},
                         {"in": np.zeros(4, np.int32), "out": np.zeros(4, np.int32),
                          "counts": np.zeros(4, np.uint32)})
    assert launch.buffers["in"].base == 2 + 18 * 4  # the null guard's two cells, the frames, then the buffers


@pytest.mark.parametrize("src, line, col, message", [
    ("__device__ void g(int &r) { r = 1; }\n__global__ void k(int *a) { g(a[0] + 1); }\n", 2, 36,
     "argument 1 of 'g': cannot bind the non-const reference 'int &' to a temporary; pass a variable of type 'int'"),
    ("__device__ void g(int &r) { r = 1; }\n__global__ void k(unsigned *a) { g(a[0]); }\n", 2, 36,
     "argument 1 of 'g': cannot bind the non-const reference 'int &' to a value of type 'unsigned int'; pass a "
     "variable of type 'int'"),
    ("__device__ void g(int &r) { r = 1; }\n__global__ void k(const int *a) { g(a[0]); }\n", 2, 37,
     "cannot bind a non-const reference to read-only memory (through 'const int *')"),
    ("__device__ void g(const int &r) { r = 1; }\n__global__ void k(int *a) {}\n", 1, 35,
     "cannot assign to const variable 'r'"),
    ("__global__ void k(int &a) { }\n", 1, 23,
     "a kernel parameter cannot be a reference (it would refer to host memory); pass a pointer or a value"),
    ("__global__ void k(int *a) { int &r; }\n", 1, 33,
     "reference 'r': references are supported only as parameters of device functions and initialised locals "
     "('T &r = x;')"),
    ("__global__ void k(int *a) { a[0] = (int &)a[1]; }\n", 1, 41,
     "references ('int &') are only supported as device function parameters"),
    ("typedef int &iref;\n__global__ void k(int *a) { iref x = a[0]; }\n", 1, 13,
     "reference types in typedefs are not supported ('iref')"),
    ("__global__ void k(int *a) { int v[2] = {1, 2, 3}; }\n", 1, 47, "too many initialisers for 'v' (3 for 2)"),
    ("__global__ void k(int *a) { int v[2][2][2]; }\n", 1, 33, "local arrays have at most 2 dimensions"),
    ("__global__ void k(int *a) { int v[]; }\n", 1, 33, "array 'v' needs a size"),
    ("__global__ void k(int *a) { int *v[2]; }\n", 1, 34, "arrays of pointers are not supported ('v')"),
], ids=lambda v: v if isinstance(v, str) and len(v) < 3 else None)
def test_misuses_are_named(src, line, col, message):
    assert_error(src, line, col, message)


NET = r"""
__device__ void rotate(int &a, int &b, int &c) { int t = a; a = b; b = c; c = t; }

__global__ void local_net(const int *in, int *out) {
    int t = threadIdx.x;
    int v[4] = {in[t], in[t] * 2};
    v[3] = t;
    rotate(v[0], v[1], v[3]);
    int s = 0;
    for (int i = 0; i < 4; i++)
        s += v[(i + t) & 3] * (i + 1);
    out[t] = s;
}
"""


def test_the_network_runs_local_arrays_and_references():
    from lockstep import both

    x = np.array([5, -3, 11, 2], np.int32)
    outs, _ = both("locals_refs", (1, 1, 1), (4, 1, 1), {}, {"in": x, "out": np.zeros(4, np.int32)},
                   source=NET, max_steps=3000)
    want = []
    for t in range(4):
        v = [int(x[t]), int(x[t]) * 2, 0, t]
        v[0], v[1], v[3] = v[1], v[3], v[0]
        want.append(sum(v[(i + t) & 3] * (i + 1) for i in range(4)))
    assert outs["out"].tolist() == want
