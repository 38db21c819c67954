"""C++ constructs and host-side leftovers of published CUDA (issue 27): function template
overloads, enums, functor objects (`operator()`), host-only headers.  Each kernel is written in
the published style (our own text), compiled with `qgcc --no-link -o k.qg`, run by `qgrun` on
the emulator, and compared with g++ running the same text thread by thread."""

from __future__ import annotations

import numpy as np

from frontcheck import assert_error
from gxx import gxx_model, need_gxx
from test_published_constructs import cli_run

# ---------------------------------------------------------------- function template overloads

TEMPLATE_OVERLOADS = r"""
#include <malloc.h>
#include <pthread.h>
template <class T, class S>
__device__ void store(T *lo, T *hi, S &count, const unsigned n) {
    lo[threadIdx.x] = count;
    hi[threadIdx.x] = count + n;
}
template <class T, class S>
__device__ void store(T *lo, T *hi, S &count, const unsigned n, unsigned &second) {
    lo[threadIdx.x] = count * 2;
    hi[threadIdx.x + n] = count - 1;
    second = count + 7;
}
template <typename T> __device__ T twice(T x) { return x + x; }
template <typename T> __device__ T twice(T x, T y, T z = 1) { return x * y + z; }
__global__ void bisect(unsigned *lo, unsigned *hi, int *o) {
    unsigned c = threadIdx.x * 3 + 1, s = 0;
    if (threadIdx.x & 1) store(lo, hi, c, 4u);
    else store(lo, hi, c, 4u, s);
    o[threadIdx.x * 3] = s;
    o[threadIdx.x * 3 + 1] = twice((int)threadIdx.x);
    o[threadIdx.x * 3 + 2] = twice((int)threadIdx.x, 5) + twice(2, 3, 4);
}
"""


@need_gxx
def test_function_template_overloads_are_chosen_by_argument_count_as_gxx_does(qgcc, qgrun, tmp_path):
    """Two templates of one name with different parameter counts (bisect_util's
    storeIntervalConverged) are overloads, also when their template arguments are the same;
    the call's argument count picks one (defaults counted).  malloc.h/pthread.h are host
    headers: accepted, declaring nothing."""
    lo, hi, o = np.zeros(4, np.uint32), np.zeros(8, np.uint32), np.zeros(12, np.int32)
    got = cli_run(qgcc, qgrun, tmp_path, TEMPLATE_OVERLOADS, "bisect", 1, 4, {"lo": lo, "hi": hi, "o": o})
    src = TEMPLATE_OVERLOADS.replace("#include <malloc.h>\n", "").replace("#include <pthread.h>\n", "")
    want = gxx_model(tmp_path, src, "bisect", 1, 4, [("lo", lo), ("hi", hi), ("o", o)])
    for n in ("lo", "hi", "o"):
        assert got[n].tolist() == want[n].tolist(), n


def test_function_template_overloads_need_different_parameter_counts():
    src = ("template <typename T> __device__ T f(T x) { return x; }\n"
           "template <typename T> __device__ T f(T *x) { return *x; }\n"
           "__global__ void k(int *o) { o[0] = f(o); }\n")
    assert_error(src, 2, 36, "function template 'f' is overloaded with the same number of parameters as "
                             "the one on line 1 (qgcc tells function template overloads apart by their "
                             "number of parameters); rename one")
    src = ("template <typename T> __device__ T f(T x) { return x; }\n"
           "template <typename T> __device__ T f(T x, T y) { return x; }\n"
           "__global__ void k(int *o) { o[0] = f(1, 2, 3); }\n")
    assert_error(src, 3, 36, "no overload of function template 'f' takes 3 arguments")


def test_device_only_library_headers_are_named_errors():
    assert_error("#include <curand_kernel.h>\n__global__ void k(int *o) {}\n", 1, 11,
                 "'curand_kernel.h' (cuRAND's device API: curand_init, curand_uniform, ...) is not supported; "
                 "make the random numbers on the host and pass them in an array")
    assert_error("#include <cuda/barrier>\n__global__ void k(int *o) {}\n", 1, 11,
                 "'cuda/barrier' (cuda::barrier, arrive/wait barriers) is not supported; use __syncthreads() "
                 "or cooperative groups' sync")
