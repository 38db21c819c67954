"""Named namespaces around device code (issue 27; rodinia dwt2d wraps its kernels in one):
`namespace N {...}`, nested and anonymous namespaces, `N::name` and `using namespace N;`.
Compiled with `qgcc --no-link -o k.qg`, run by `qgrun --engine ref`, compared with g++ running
the same text."""

from __future__ import annotations

import numpy as np

from frontcheck import assert_error
from gxx import gxx_model, need_gxx
from test_published_constructs import cli_run

NAMESPACES = r"""
namespace geo {
  const int K = 3;
  struct P { int x; __device__ int twice() const { return 2 * x + K; } };
  namespace {
    __device__ int inc(int v) { return v + 1; }
  }
  namespace deep { __device__ int sq(int v) { return v * v; } }
  template <int N> __global__ void fill(int *o) {
      P p; p.x = threadIdx.x * N; o[threadIdx.x] = geo::inc(p.twice()) + deep::sq(N);
  }
}
using namespace geo;
__global__ void run(int *o) {
    geo::P q; q.x = geo::K + threadIdx.x;
    o[threadIdx.x] = inc(q.twice()) + K + geo::deep::sq(q.x);
}
"""


@need_gxx
def test_names_in_namespaces_are_reached_qualified_or_through_using_as_gxx_does(qgcc, qgrun, tmp_path):
    """A constant, a struct with a member function, a device function in an anonymous and in a
    nested namespace, a kernel and a kernel template inside the namespace."""
    for kernel, inst in (("run", ()), ("fill<2>", ("fill<2>",))):
        o = np.zeros(4, np.int32)
        got = cli_run(qgcc, qgrun, tmp_path, NAMESPACES, kernel, 1, 4, {"o": o}, instantiate=inst)
        want = gxx_model(tmp_path, NAMESPACES, ("geo::" if inst else "") + kernel, 1, 4, [("o", o)])
        assert got["o"].tolist() == want["o"].tolist(), kernel


def test_namespace_aliases_and_using_other_namespaces_are_still_named_errors():
    assert_error("namespace fs = filesystem;\n__global__ void k(int *o) {}\n", 1, 1, "namespaces are not supported")
    assert_error("using namespace thrust;\n__global__ void k(int *o) {}\n", 1, 7, "namespaces are not supported")
