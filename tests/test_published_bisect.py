"""Two C++ rules the eigenvalues sample's bisection kernels rely on (issue 27), each in a
kernel of our own written the same way, compiled with `qgcc --no-link -o`, run with `qgrun`
on the emulator and compared with numpy:

* `&r` of a reference parameter is the address of what the call binds it to (a __shared__
  flag that every thread clears with atomicExch);
* a file's own `template <class T> T max(const T &, const T &)` does not fit `max(5.0e-37, f)`
  (T would be both double and float), so CUDA's built-in `max(double, float)` is called.
"""

from __future__ import annotations

import numpy as np

from frontcheck import assert_error
from test_published_constructs import cli_run

F32 = np.float32

REFADDR = r"""
__device__ void step(const float *x, float *y, unsigned int &converged) {
    unsigned i = threadIdx.x;
    if (x[i] > 0.5f) {
        y[i] = x[i] * 0.5f;
        atomicExch(&converged, 0);       // the caller's __shared__ flag
    } else {
        y[i] = x[i];
    }
}
__global__ void halve(const float *x, float *y, unsigned *flags) {
    __shared__ unsigned int all_converged;
    if (threadIdx.x == 0) all_converged = 1;
    __syncthreads();
    step(x, y, all_converged);
    __syncthreads();
    if (threadIdx.x == 0) flags[0] = all_converged;
}
"""


def test_the_address_of_a_reference_parameter_is_its_referents(qgcc, qgrun, tmp_path):
    """atomicExch(&r, 0) on a reference bound to a __shared__ variable clears that variable:
    the flag ends 0 when some element was above 0.5, 1 when none was."""
    for x, flag in ((np.linspace(0, 1, 8).astype(F32), 0), (np.linspace(0, 0.4, 8).astype(F32), 1)):
        got = cli_run(qgcc, qgrun, tmp_path, REFADDR, "halve", 1, 8,
                      {"x": x, "y": np.zeros(8, F32), "flags": np.full(1, 7, np.uint32)})
        assert got["y"].tobytes() == np.where(x > F32(0.5), x * F32(0.5), x).astype(F32).tobytes()
        assert got["flags"].tolist() == [flag]


def test_the_address_of_a_reference_bound_to_a_register_local_is_named():
    """Bound to a local that lives in a register, the reference has no address: a one-line
    error at the '&' naming the fix."""
    src = REFADDR.replace("    step(x, y, all_converged);", "    unsigned mine = 1;\n    step(x, y, mine);")
    assert_error(src, 6, 20, "cannot take the address of reference parameter 'converged': this call binds "
                             "it to a local variable, which lives in a register; pass a __shared__ or global "
                             "variable, or a local whose address is taken")


MIXED_MAX = r"""
#define MIN_ABS_INTERVAL 5.0e-37
template <class T> __device__ T max(const T &lhs, const T &rhs) { return (lhs < rhs) ? rhs : lhs; }
__global__ void conv(const float *l, const float *r, int *done, float *t) {
    int i = threadIdx.x;
    float t0 = fabsf(r[i] - l[i]);
    float t1 = max(fabsf(l[i]), fabsf(r[i])) * 1e-6f;   // the file's template: T = float
    t[i] = t1;
    done[i] = t0 <= max(MIN_ABS_INTERVAL, t1);          // CUDA's max(double, float): a double
}
"""


def test_a_min_max_template_that_does_not_fit_leaves_cudas_mixed_overload(qgcc, qgrun, tmp_path):
    """max(float, float) instantiates the file's template; max(double, float) cannot (T would be
    both), so it is CUDA's overload, compared in double like C++'s usual conversions."""
    l = np.array([0, 1, -2, 1e-30, 3, 0, 5e-37, -1], F32)
    r = np.array([5e-37, 1.000001, -2, 1e-30, 3.5, 1e-37, 5e-37, -1], F32)  # float(5e-37) > 5.0e-37
    got = cli_run(qgcc, qgrun, tmp_path, MIXED_MAX, "conv", 1, 8,
                  {"l": l, "r": r, "done": np.zeros(8, np.int32), "t": np.zeros(8, F32)})
    t1 = (np.maximum(np.abs(l), np.abs(r)) * F32(1e-6)).astype(F32)
    t0 = np.abs(r - l).astype(F32)
    assert got["t"].tobytes() == t1.tobytes()
    assert got["done"].tolist() == (t0.astype(np.float64) <= np.maximum(5.0e-37, t1.astype(np.float64))).astype(
        np.int32).tolist()
    assert got["done"][0] == 0  # compared in float, 5.0e-37 would round to r[0] and give 1
