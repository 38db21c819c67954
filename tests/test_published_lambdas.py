"""Lambdas called in the function that defines them (issue 27; cuda-samples' shfl_scan picks a
vector component through one), lowered to function templates with the captures as parameters
(frontend/lambdas.py).  Compiled with `qgcc --no-link -o k.qg`, run by `qgrun --engine ref`,
and compared with g++ running the same text."""

from __future__ import annotations

import numpy as np

from frontcheck import assert_error
from gxx import gxx_model, need_gxx
from test_published_constructs import cli_run

LAMBDAS = r"""
struct Q { unsigned x, y, z, w; };
__global__ void lanes(const unsigned *in, unsigned *o, int n) {
    int i = threadIdx.x;
    Q r = {in[i], in[i] * 2u, in[i] * 3u, in[i] + 7u};
    const int scale = 3 + n;
    auto pick = [&r, scale](unsigned idx) -> const unsigned {
        switch (idx) { case 0: return r.x * scale; case 1: return r.y; case 2: return r.z; }
        return r.w;
    };
    auto bump = [&r]() -> int { r.x += 1u; return 0; };   // by reference: changes the caller's r
    auto sq = [](int v) -> int { return v * v; };
    unsigned *row = o + i * 4;
    auto put = [row, &in](int k, unsigned v) -> int { row[k] = v + in[0] * 0u; return k; };
    o[i * 4] = pick(i & 3);
    bump();
    o[i * 4 + 1] = pick(0) + pick((i + 1) & 3);
    o[i * 4 + 2] = sq(i + n) + sq(sq(2));
    {
        auto pick = [&r](int k) -> unsigned { return k ? r.w : r.y; };   // an inner block's own
        o[i * 4 + 3] = pick(i & 1);
    }
    o[i * 4 + 3] += pick(3);
    put(2, o[i * 4 + 2] + 1u);                 // pointers captured by value and by reference
}
"""


@need_gxx
def test_lambdas_called_where_they_are_defined_capture_as_gxx_does(qgcc, qgrun, tmp_path):
    """Captures by reference (changes reach the caller) and by value, pointers, no captures, a switch in
    the body, a nested call, and a lambda of the same name in an inner block."""
    x = np.array([5, 17, 1000, 0xFFFFFFF0], np.uint32)
    o = np.zeros(16, np.uint32)
    got = cli_run(qgcc, qgrun, tmp_path, LAMBDAS, "lanes", 1, 4, {"in": x, "o": o}, scalars={"n": 2})
    want = gxx_model(tmp_path, LAMBDAS, "lanes", 1, 4, [("in", x), ("o", o), ("n", 2)])
    assert got["o"].tolist() == want["o"].tolist()


def test_lambdas_outside_the_lowered_form_are_named_errors():
    body = "__global__ void k(int *o) {\n    int s = 1;\n    auto f = %s;\n    o[0] = f(1);%s\n}\n"
    assert_error(body % ("[&](int i) -> int { return s + i; }", ""), 3, 15,
                 "default lambda captures ('[&]', '[=]') are not supported; name what the lambda captures "
                 "('[&x, y]')")
    assert_error(body % ("[s](int i) { return s + i; }", ""), 3, 10,
                 "a lambda without a return type is not supported; write it ('[...](...) -> int {...}') for 'f'")
    assert_error(body % ("[s](int i) -> int { return s + i; }", "\n    s += 2;"), 5, 5,
                 "'s' is captured by value by the lambda 'f' and changed after it; capture a const copy made "
                 "before the lambda")
    assert_error(body % ("[s](int i) -> int { return s + i; }", "\n    int *p = (int *)&f;"), 5, 22,
                 "the lambda 'f' is supported only when called in the block that defines it ('f(...)')")
    assert_error("__global__ void k(int *o) {\n    o[0] = [](int i) -> int { return i; }(1);\n}\n", 2, 12,
                 "lambda expressions are not supported; write a __device__ function and pass what the lambda "
                 "captures as parameters")
