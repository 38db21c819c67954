"""Weight noise for measuring the machine's margin (bench/margin.py, tests/test_numerics.py).

Lives beside the weights rather than in a bench script so that the test of the readout and
the benchmark perturb a machine the same way."""
from __future__ import annotations

import copy

import numpy as np

from .weights import SparseTensor


def perturbed(cm, size: float, seed: int):
    """A copy of linked machine `cm` with every weight times (1 + size * N(0, 1)), drawn from `seed`."""
    rng = np.random.default_rng(seed)
    net = copy.copy(cm)
    net.layers = []
    net.hosts = {}
    for lw in cm.layers:
        lw2 = copy.copy(lw)
        lw2.tensors = {}
        for name, st in lw.tensors.items():
            idx, val = st.arrays()
            noisy = (val.astype(np.float64) * (1 + size * rng.standard_normal(len(val)))).astype(np.float32)
            lw2.tensors[name] = SparseTensor.from_arrays(st.shape, idx, noisy)
        net.layers.append(lw2)
    return net
