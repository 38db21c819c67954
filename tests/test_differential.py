"""Differential execution fuzzing (bench/fuzz/differential.py), briefly, and the bugs it found.

The fuzzer generates kernels free of undefined behaviour, runs them under g++ with a host
shim of CUDA's threads (the oracle) and through qgcc, and requires every byte of every
buffer to agree.  Each test below under "found by the fuzzer" is the minimised reproducer of
a bug, kept so that it stays fixed.
"""

from __future__ import annotations

import numpy as np

import qgcc


# ---- found by the fuzzer

def test_a_double_scalar_parameter_takes_a_python_number_in_the_api():
    # Program.launch rejected x=0.1 for `double x` ("give an int"): only float had a branch.
    prog = qgcc.compile("__global__ void k(double *o, double x) { o[threadIdx.x] = x * 2.0; }")
    r = prog.launch(1, 2, engine="ref", o=np.zeros(2), x=0.1)
    assert r["o"].tolist() == [0.2, 0.2]  # 0.1 * 2 is exact in binary64
    assert prog.launch(1, 1, engine="ref", o=np.zeros(1), x=3)["o"].tolist() == [6.0]
    r = prog.launch(1, 1, engine="ref", o=np.zeros(1), x=float("-inf"))
    assert r["o"].tolist() == [float("-inf")]
