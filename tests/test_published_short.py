"""`short` and `unsigned short` as published CUDA uses them (issue 27): 16-bit integers with
C's promotion to int and wrap-around on every narrowing, as locals, parameters, buffers (one
16-bit value per 32-bit cell, like char), struct members, template arguments and the short2
vector types.  Compiled with `qgcc --no-link -o`, run with `qgrun`, compared with g++ on the
same kernel text (2-byte shorts there: C's own semantics) or numpy.
"""

from __future__ import annotations

import numpy as np
import pytest

from frontcheck import assert_error
from gxx import gxx_model, need_gxx
from test_published_constructs import cli_run

SHORTS = r"""
#include <limits.h>
#include <stdint.h>
template <typename T> __device__ T twice(T v) { return v + v; }
__global__ void shorts(const short *x, unsigned short *u, short *y, int *o, short s, unsigned short us) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    short a = x[i];
    unsigned short b = u[i];
    short c = a * 3 + s;                // int arithmetic, wrapped to 16 bits on the narrowing
    unsigned short d = b + us;
    a += 30000;                         // compound assignment narrows too
    b -= 7;
    int16_t e = -a;                     // the stdint.h names of the 16-bit types
    uint16_t f = ~b;
    ++a; b--;
    y[i] = c;
    u[i] = d ^ b;
    o[6 * i] = a;
    o[6 * i + 1] = twice<short>(a);     // a short template argument: the sum wraps
    o[6 * i + 2] = (int)(unsigned short)a + (short)(b << 3);
    o[6 * i + 3] = SHRT_MAX + SHRT_MIN + USHRT_MAX + (unsigned short)-1;
    o[6 * i + 4] = e * f + (a < b) + (a >> 2) + (b / (c | 1)) + (c % 7);
    o[6 * i + 5] = (short)(int)(x[i] * 1.5f) + (unsigned short)(-x[i]);
}
"""


@need_gxx
def test_short_and_unsigned_short_promote_and_wrap_as_in_c(qgcc, qgrun, tmp_path):
    """Every operation on shorts promotes to int and each store, initialisation, compound
    assignment, cast and increment wraps to 16 bits (sign-extended for short), exactly as g++
    computes it; short buffers go in and out as int16/uint16 arrays."""
    n = 16
    rng = np.random.default_rng(5)
    x = np.concatenate([[32767, -32768, -1, 0, 12345, -20000], rng.integers(-32768, 32767, n - 6)]).astype(np.int16)
    u = np.concatenate([[0, 65535, 7, 6, 40000, 1], rng.integers(0, 65535, n - 6)]).astype(np.uint16)
    arrays = {"x": x, "u": u, "y": np.zeros(n, np.int16), "o": np.zeros(6 * n, np.int32)}
    scalars = {"s": -12000, "us": 60000}
    got = cli_run(qgcc, qgrun, tmp_path, SHORTS, "shorts", 2, n // 2, arrays, scalars)
    want = gxx_model(tmp_path, SHORTS, "shorts", 2, n // 2,
                     [(k, v) for k, v in arrays.items()] + [("s", np.int16(-12000)), ("us", np.uint16(60000))])
    for k in arrays:
        assert got[k].dtype == arrays[k].dtype
        assert got[k].tolist() == want[k].tolist(), k


FORMS = r"""
__constant__ short table[4] = {-1, (short)70000, 32767, (short)-32769};
__device__ unsigned short mix(short a, unsigned short b) { return a ^ b; }
template <typename T> __global__ void forms(T *io, int *o) {
    __shared__ short sh[16];
    short loc[3] = {1, -2, 3};
    unsigned i = threadIdx.x;
    sh[i] = io[i] * 7;
    short s = sh[i];
    s++;
    unsigned short u = static_cast<unsigned short>(s) + short(io[i]);
    signed short int t = (short)(u * 3);
    short unsigned v = mix(t, u);
    loc[i % 3] += t;
    o[4 * i] = s + u;
    o[4 * i + 1] = t > 0 ? v : -v;
    o[4 * i + 2] = loc[0] + loc[1] * loc[2] + table[i % 4];
    io[i] = (T)(o[4 * i] + o[4 * i + 1]);
    switch (s) { case -1: o[4 * i + 3] = 1; break; case 32767: o[4 * i + 3] = 2; break; default: o[4 * i + 3] = s >> 3; }
}
"""


@need_gxx
@pytest.mark.parametrize("elem,engine", [(np.int16, "ref"), (np.uint16, "ref"),
                                         pytest.param(np.int16, "neural", marks=pytest.mark.slow)])
def test_shorts_in_shared_constant_and_local_arrays_casts_switch_and_kernel_templates(qgcc, qgrun, tmp_path, elem,
                                                                                      engine):
    """A kernel template instantiated on short / unsigned short (`--instantiate`), short
    __shared__, __constant__ and local arrays, functional and static_cast casts, a device
    function taking and returning shorts, a switch on a short: g++ on the same text (and the
    network, slow)."""
    ctype = "short" if elem == np.int16 else "unsigned short"
    io = np.array([32767, -32768, 5, 4681, -4682, 100, 0, -1, 9362, 3, 2, 1, -9363, 7, 8, 12345]).astype(elem)
    arrays = {"io": io, "o": np.zeros(64, np.int32)}
    got = cli_run(qgcc, qgrun, tmp_path, FORMS, f"forms<{ctype}>", 1, 16, arrays, instantiate=[f"forms<{ctype}>"],
                  engine=engine)
    want = gxx_model(tmp_path, FORMS, f"forms<{ctype}>", 1, 16, list(arrays.items()))
    assert got["io"].tolist() == want["io"].tolist()
    assert got["o"].tolist() == want["o"].tolist()


STRUCTS = r"""
struct Sample { short level; unsigned short count; int total; };
__global__ void tally(Sample *s, short2 *v, ushort4 *w) {
    int i = threadIdx.x;
    s[i].level -= 1000;
    s[i].count += s[i].level;
    s[i].total = s[i].level * s[i].count;
    short2 p = v[i];
    v[i] = make_short2(p.y, (short)(p.x + p.y));
    w[i].w = w[i].x + w[i].y;
}
"""


def test_short_struct_members_and_short_vectors(qgcc, qgrun, tmp_path):
    """A struct with short members and the short2/ushort4 vector types: each member a cell of
    its 16-bit value (structured .npy buffers of int16/uint16 members through `qgrun`),
    wrapping on stores."""
    sample = np.dtype([("level", np.int16), ("count", np.uint16), ("total", np.int32)])
    s = np.zeros(4, sample)
    s["level"] = [-32000, 0, 1000, 32767]
    s["count"] = [65000, 5, 0, 3]
    v = np.zeros(4, np.dtype([("x", np.int16), ("y", np.int16)]))
    v["x"], v["y"] = [30000, -5, 7, -32768], [30000, 9, -7, -1]
    w = np.zeros(4, np.dtype([(m, np.uint16) for m in "xyzw"]))
    w["x"], w["y"] = [65535, 1, 2, 40000], [1, 2, 3, 40000]
    got = cli_run(qgcc, qgrun, tmp_path, STRUCTS, "tally", 1, 4, {"s": s, "v": v, "w": w})
    level = (s["level"].astype(np.int32) - 1000).astype(np.int16)
    count = (s["count"].astype(np.int32) + level).astype(np.uint16)
    assert got["s"]["level"].tolist() == level.tolist()
    assert got["s"]["count"].tolist() == count.tolist()
    assert got["s"]["total"].tolist() == (level.astype(np.int64) * count).astype(np.int32).tolist()
    assert got["v"]["x"].tolist() == v["y"].tolist()
    assert got["v"]["y"].tolist() == (v["x"].astype(np.int32) + v["y"]).astype(np.int16).tolist()
    assert got["w"]["w"].tolist() == (w["x"].astype(np.int32) + w["y"]).astype(np.uint16).tolist()


def test_sizeof_short_is_refused_like_sizeof_char():
    """A short takes a 4-byte cell here, not CUDA's 2 bytes: sizeof says so instead of lying."""
    assert_error("__global__ void k(int *o) { o[0] = sizeof(short); }\n", 1, 36,
                 "sizeof('short') is not available: 'short' takes a 4-byte cell per element here, not CUDA's "
                 "size; sizeof works on int, unsigned, float and structs and arrays made of them")
