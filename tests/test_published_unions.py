"""Unions as published CUDA writes them (issue 27; cuda-samples' dct8x8 packs shorts in one):
members sharing their cells, read back through another member.  Each kernel is compiled with
`qgcc --no-link -o k.qg`, run by `qgrun --engine ref`, and compared with g++ running the same
text."""

from __future__ import annotations

import numpy as np
import pytest

from frontcheck import assert_error
from gxx import gxx_model, need_gxx
from test_published_constructs import cli_run

UNIONS = r"""
union Bits { float f; unsigned u; int i; };
struct F2 { float x, y; };
typedef union { unsigned w[2]; F2 v; } Pair;
struct Tagged { int tag; union Bits b; };
__device__ unsigned flip(Bits b) { b.u ^= 0x80000000u; return b.u; }
__global__ void pun(const float *x, unsigned *o, float *f) {
    int i = threadIdx.x;
    Bits b;
    b.f = x[i];
    o[i * 6 + 0] = b.u;
    o[i * 6 + 1] = flip(b);                  // by value: the caller's copy is unchanged
    Pair p;
    p.w[0] = b.u; p.w[1] = b.u + 1u;
    f[i * 2] = p.v.x + p.v.y;                // an array member seen as a struct of floats
    Tagged t;
    t.tag = i; t.b.i = -i * 3;
    o[i * 6 + 2] = t.b.u + t.tag;
    o[i * 6 + 3] = (unsigned)sizeof(Bits) * 10u + (unsigned)sizeof(Pair) * 100u + (unsigned)sizeof(Tagged);
    Bits c = b;
    Bits z = {0.5f * i};                     // braces initialise the first member
    c.i += 1;
    f[i * 2 + 1] = c.f;                      // the next float up
    union Bits *q = &c;
    q->u = 0x3f800000u;
    o[i * 6 + 4] = (unsigned)c.f;
    o[i * 6 + 5] = (b.i >> 23) + z.u;
}
"""


@need_gxx
@pytest.mark.parametrize("engine", ["ref", pytest.param("neural", marks=pytest.mark.slow)])
def test_union_members_share_their_cells_as_gxx_lays_them_out(qgcc, qgrun, tmp_path, engine):
    """Float/int punning through a union, a union of an array and a struct of two floats, a union inside a
    struct, a brace initialiser (its first member), copies, by-value parameters, pointers to unions and sizeof (the largest member); on the emulator and inside the network."""
    x = np.array([1.5, -2.25, 3.0e-39, 65504.0], np.float32)
    o, f = np.zeros(4 * 6, np.uint32), np.zeros(4 * 2, np.float32)
    got = cli_run(qgcc, qgrun, tmp_path, UNIONS, "pun", 1, 4, {"x": x, "o": o, "f": f}, engine=engine)
    want = gxx_model(tmp_path, UNIONS, "pun", 1, 4, [("x", x), ("o", o), ("f", f)])
    assert got["o"].tolist() == want["o"].tolist()
    assert got["f"].tobytes() == want["f"].tobytes()


def test_a_union_of_16_bit_halves_an_anonymous_member_and_a_second_initialiser_are_named_errors():
    assert_error("union U { float f; unsigned u; };\n__global__ void k(int *o) { U x = {1.0f, 2u}; }\n", 2, 42,
                 "too many initialisers for 'U' in 'x'")
    assert_error("union P {\n  struct { short a; short b; };\n  unsigned w;\n};\n__global__ void k(int *o) {}\n",
                 2, 3, "an anonymous struct member is not supported; name the member ('struct {...} m;')")
    assert_error("union P {\n  struct { short a; short b; } h;\n  unsigned w;\n};\n__global__ void k(int *o) {}\n",
                 2, 32, "union member 'h' has type '(anonymous struct)'; a union's members share 32-bit "
                 "cells, so only int, unsigned and float members (and arrays and structs of them) are "
                 "supported; view 16-bit halves of an unsigned with shifts and masks")
