"""Device `memcpy` of whole 32-bit cells (issue 27; cuda-samples' shfl_scan copies an array of
unsigned into a struct of uint4 with it).  Compiled with `qgcc --no-link -o k.qg`, run by
`qgrun --engine ref`, compared with g++ running the same text."""

from __future__ import annotations

import numpy as np

from frontcheck import assert_error
from gxx import gxx_model, need_gxx
from test_published_constructs import cli_run

MEMCPY = r"""
#include <string.h>
struct Q4 { unsigned x, y, z, w; };
struct Pk { Q4 a, b; };
__global__ void pack(const unsigned *in, unsigned *o) {
    int i = threadIdx.x;
    unsigned w[8];
    for (int j = 0; j < 8; j++) w[j] = in[i * 8 + j] * 3u + j;
    Pk p;
    memcpy(&p, w, sizeof(p));                 // an array into a struct
    float f[2];
    memcpy(f, &w[2], 2 * sizeof(float));      // bits into floats
    o[i * 5] = p.a.x + p.b.w;
    o[i * 5 + 1] = p.a.y * 7u + p.b.x;
    memcpy(&o[i * 5 + 2], &f[1], 4);          // a float's bits out
    memcpy(o + i * 5 + 3, &p.b.y, 8);         // two members at once
    memcpy(w, w, 0);
}
"""


@need_gxx
def test_device_memcpy_copies_whole_cells_as_gxx_copies_bytes(qgcc, qgrun, tmp_path):
    """memcpy between arrays, structs, members and global memory, sizes from sizeof and
    constants: the same bytes as C's memcpy, since every side is 4-byte cells."""
    x = (np.arange(32, dtype=np.uint32) * 2654435761).astype(np.uint32)
    o = np.zeros(20, np.uint32)
    got = cli_run(qgcc, qgrun, tmp_path, MEMCPY, "pack", 1, 4, {"in": x, "o": o})
    want = gxx_model(tmp_path, MEMCPY, "pack", 1, 4, [("in", x), ("o", o)])
    assert got["o"].tolist() == want["o"].tolist()


def test_memcpy_of_parts_of_cells_is_a_named_error():
    k = "__global__ void k(unsigned *o, int n) {\n    unsigned w[2];\n    %s;\n}\n"
    assert_error(k % "memcpy(w, o, n)", 3, 18, "the size of a device 'memcpy' must be a compile-time multiple "
                 "of 4 bytes (whole 32-bit cells)")
    assert_error(k % "memcpy(w, o, 6)", 3, 18, "the size of a device 'memcpy' must be a compile-time multiple "
                 "of 4 bytes (whole 32-bit cells)")
    assert_error(k % "short s[2]; memcpy(s, o, 4)", 3, 24, "argument 1 of 'memcpy' must point to non-const int, "
                 "unsigned or float cells (or arrays and structs of them), got 'short *': memory is 32-bit cells here")
