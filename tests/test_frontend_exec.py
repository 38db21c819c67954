"""Compiled kernels run on the reference emulator and agree with C semantics.

Each test compiles a small kernel for one construct, launches it with
`make_launch` + `qgcc.ref.emulator.run`, and compares the buffers with values
computed here from the C rules (32-bit wrap-around, truncating division,
usual arithmetic conversions, ...), never from the compiler's own helpers.
Division by zero and INT_MIN / -1 are checked against the values documented
in docs/subset.md.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from qgcc.frontend import compile_source
from qgcc.ref.emulator import run as emulate
from qgcc.runtime.launch import make_launch
from models import s8, s32, tdiv, tmod, u32

INT_MIN, INT_MAX, U32 = -(1 << 31), (1 << 31) - 1, 0xFFFFFFFF


# ------------------------------------------------------------------ C model
# The 32-bit helpers are tests/models.py's; division by zero is the compiler's documented result.


def sdiv(a: int, b: int) -> int:
    if b == 0:  # documented: x/0 = -1 for x >= 0, 1 for x < 0
        return -1 if a >= 0 else 1
    return s32(tdiv(a, b))  # INT_MIN / -1 wraps to INT_MIN


def smod(a: int, b: int) -> int:
    if b == 0:  # documented: x%0 = x
        return a
    return s32(tmod(a, b))


def udiv(a: int, b: int) -> int:
    return U32 if b == 0 else a // b  # documented: x/0 = 0xFFFFFFFF


def umod(a: int, b: int) -> int:
    return a if b == 0 else a % b  # documented: x%0 = x


# ------------------------------------------------------------------ harness


def dim3(v):
    if isinstance(v, int):
        return (v, 1, 1)
    return tuple(v) + (1,) * (3 - len(v))


def run(src: str, arrays: dict, scalars: dict | None = None, grid=1, block=4, kernel=None,
        max_steps: int = 400_000) -> dict:
    prog = compile_source(src, "t.cu")
    k = prog.kernel(kernel)
    launch = make_launch(prog, k, dim3(grid), dim3(block), scalars or {},
                         {n: np.asarray(v) for n, v in arrays.items()})
    res = emulate(launch, max_steps=max_steps)
    return {n: launch.read_buffer(res.memory, n) for n in launch.buffers}


def ints(xs) -> list[int]:
    return [int(v) for v in xs]


EDGE_INT = [0, 1, -1, 2, -2, 3, 7, -7, 100, -100, 12345, -98765, INT_MAX, INT_MIN, INT_MAX - 1,
            INT_MIN + 1, 0x40000000, -0x40000000, 31, 32, 33, 255, -256, 65536]


def pairs(values, count, seed):
    rnd = random.Random(seed)
    out = [(a, b) for a in values[:6] for b in values[:6]]
    while len(out) < count:
        out.append((rnd.choice(values + [rnd.randint(INT_MIN, INT_MAX)]),
                    rnd.choice(values + [rnd.randint(-40, 40)])))
    return out[:count]


# ------------------------------------------------------------------ operators

BIN_OPS = ["+", "-", "*", "/", "%", "&", "|", "^", "<<", ">>", "<", "<=", ">", ">=", "==", "!=",
           "&&", "||"]


def model_binary(op: str, x: int, y: int, signed: bool) -> int:
    conv = s32 if signed else u32
    x, y = conv(x), conv(y)
    r = {
        "+": lambda: x + y, "-": lambda: x - y, "*": lambda: x * y,
        "/": lambda: (sdiv if signed else udiv)(x, y), "%": lambda: (smod if signed else umod)(x, y),
        "&": lambda: x & y, "|": lambda: x | y, "^": lambda: x ^ y,
        "<<": lambda: x << (y & 31), ">>": lambda: x >> (y & 31),
        "<": lambda: x < y, "<=": lambda: x <= y, ">": lambda: x > y, ">=": lambda: x >= y,
        "==": lambda: x == y, "!=": lambda: x != y,
        "&&": lambda: x != 0 and y != 0, "||": lambda: x != 0 or y != 0,
    }[op]()
    return u32(int(r))


@pytest.mark.parametrize("ctype", ["int", "unsigned"])
def test_every_binary_operator_on_32_bit_values(ctype):
    ps = pairs(EDGE_INT, 40, seed=len(ctype))
    body = "\n".join(f"    o[{j}] = x {op} y;" for j, op in enumerate(BIN_OPS))
    src = (f"__global__ void ops(const {ctype} *a, const {ctype} *b, {ctype} *out, int n) {{\n"
           "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
           "    if (i >= n) return;\n"
           f"    {ctype} x = a[i], y = b[i];\n"
           f"    {ctype} *o = out + i * {len(BIN_OPS)};\n"
           f"{body}\n"
           "}\n")
    dt = np.int32 if ctype == "int" else np.uint32
    a = np.array([p[0] for p in ps], dtype=np.int64).astype(dt)
    b = np.array([p[1] for p in ps], dtype=np.int64).astype(dt)
    out = run(src, {"a": a, "b": b, "out": np.zeros(len(ps) * len(BIN_OPS), dt)},
              {"n": len(ps)}, grid=2, block=20)["out"]
    got = ints(out.view(np.uint32))
    bad = []
    for i, (x, y) in enumerate(ps):
        for j, op in enumerate(BIN_OPS):
            want = model_binary(op, x, y, ctype == "int")
            if got[i * len(BIN_OPS) + j] != want:
                bad.append(f"{s32(x)} {op} {s32(y)}: got {got[i * len(BIN_OPS) + j]:#x}, want {want:#x}")
    assert not bad, "\n".join(bad[:20])


def test_unary_operators_and_mixed_signedness():
    src = ("__global__ void k(const int *a, int *o) {\n"
           "  int i = threadIdx.x;\n"
           "  int x = a[i];\n"
           "  unsigned u = 1;\n"
           "  int *r = o + 8 * i;\n"
           "  r[0] = -x; r[1] = ~x; r[2] = !x; r[3] = +x;\n"
           "  r[4] = x < u;          // x converted to unsigned\n"
           "  r[5] = x > -1;         // signed comparison\n"
           "  r[6] = (x + u) >> 31;  // unsigned: logical shift\n"
           "  r[7] = x >> 31;        // int: arithmetic shift\n"
           "}\n")
    xs = [0, 1, -1, INT_MIN, INT_MAX, -5, 7, 1 << 20]
    o = ints(run(src, {"a": np.array(xs, np.int32), "o": np.zeros(64, np.int32)}, block=8)["o"])
    for i, x in enumerate(xs):
        assert o[8 * i: 8 * i + 8] == [
            s32(-x), s32(~x), int(x == 0), x, int(u32(x) < 1), int(x > -1),
            u32(x + 1) >> 31, x >> 31], x


def test_division_edge_cases_are_deterministic_and_documented():
    src = ("__global__ void k(const int *a, const int *b, const unsigned *ua, const unsigned *ub,"
           " int *q, int *r, unsigned *uq, unsigned *ur) {\n"
           "  int i = threadIdx.x;\n"
           "  q[i] = a[i] / b[i]; r[i] = a[i] % b[i];\n"
           "  uq[i] = ua[i] / ub[i]; ur[i] = ua[i] % ub[i];\n"
           "}\n")
    cases = [(INT_MIN, -1), (INT_MIN, 1), (INT_MIN, INT_MIN), (INT_MAX, INT_MIN), (7, 0), (-7, 0),
             (0, 0), (INT_MIN, 0), (-7, 2), (7, -2), (-7, -2), (1, INT_MAX), (-1, 3), (INT_MAX, -1)]
    ucases = [(5, 0), (0, 0), (U32, 0), (U32, U32), (U32, 1), (0x80000000, 0x80000001),
              (0xFFFFFFFE, 0x80000000), (100, 7), (7, 100), (U32, 2), (0x80000000, 3), (1, 1),
              (123456789, 10), (U32, 0x7FFFFFFF)]
    n = len(cases)
    out = run(src, {"a": np.array([c[0] for c in cases], np.int32),
                    "b": np.array([c[1] for c in cases], np.int32),
                    "ua": np.array([c[0] for c in ucases], np.uint32),
                    "ub": np.array([c[1] for c in ucases], np.uint32),
                    "q": np.zeros(n, np.int32), "r": np.zeros(n, np.int32),
                    "uq": np.zeros(n, np.uint32), "ur": np.zeros(n, np.uint32)}, block=n)
    assert ints(out["q"]) == [sdiv(a, b) for a, b in cases]
    assert ints(out["r"]) == [smod(a, b) for a, b in cases]
    assert ints(out["uq"]) == [udiv(a, b) for a, b in ucases]
    assert ints(out["ur"]) == [umod(a, b) for a, b in ucases]
    # the headline facts, spelled out
    assert ints(out["q"])[:1] == [INT_MIN] and ints(out["r"])[:1] == [0]
    assert ints(out["q"])[4:6] == [-1, 1] and ints(out["r"])[4:6] == [7, -7]
    assert ints(out["uq"])[:1] == [U32] and ints(out["ur"])[:1] == [5]


SIGNED_DIVISORS = [1, -1, 2, -2, 4, 8, 1 << 30, 3, 7, -5, 10, 0, INT_MIN, INT_MAX]
UNSIGNED_DIVISORS = [1, 2, 16, 1 << 31, 3, 10, 0, U32, 0x80000001]


def test_division_by_constants_matches_general_division():
    dividends = [0, 1, -1, 5, -5, 7, -8, 9, 100, -100, INT_MAX, INT_MIN, INT_MIN + 1, 12345]
    lines = []
    for j, d in enumerate(SIGNED_DIVISORS):
        dl = f"({d})" if d != INT_MIN else "(-2147483647 - 1)"
        lines.append(f"  q[i * {len(SIGNED_DIVISORS)} + {j}] = x / {dl}; "
                     f"r[i * {len(SIGNED_DIVISORS)} + {j}] = x % {dl};")
    for j, d in enumerate(UNSIGNED_DIVISORS):
        lines.append(f"  uq[i * {len(UNSIGNED_DIVISORS)} + {j}] = ux / {d}u; "
                     f"ur[i * {len(UNSIGNED_DIVISORS)} + {j}] = ux % {d}u;")
    src = ("__global__ void k(const int *a, int *q, int *r, unsigned *uq, unsigned *ur) {\n"
           "  int i = threadIdx.x;\n  int x = a[i];\n  unsigned ux = x;\n"
           + "\n".join(lines) + "\n}\n")
    n = len(dividends)
    out = run(src, {"a": np.array(dividends, np.int32),
                    "q": np.zeros(n * len(SIGNED_DIVISORS), np.int32),
                    "r": np.zeros(n * len(SIGNED_DIVISORS), np.int32),
                    "uq": np.zeros(n * len(UNSIGNED_DIVISORS), np.uint32),
                    "ur": np.zeros(n * len(UNSIGNED_DIVISORS), np.uint32)},
              block=n, max_steps=1_000_000)
    assert ints(out["q"]) == [sdiv(x, d) for x in dividends for d in SIGNED_DIVISORS]
    assert ints(out["r"]) == [smod(x, d) for x in dividends for d in SIGNED_DIVISORS]
    assert ints(out["uq"]) == [udiv(u32(x), d) for x in dividends for d in UNSIGNED_DIVISORS]
    assert ints(out["ur"]) == [umod(u32(x), d) for x in dividends for d in UNSIGNED_DIVISORS]


def test_constant_folding_agrees_with_the_machine():
    exprs = ["-7 / 2", "-7 % 2", "7 / -2", "(-2147483647 - 1) / -1", "(-2147483647 - 1) % -1",
             "5 / 0", "-5 / 0", "5 % 0", "-5 % 0", "5u / 0u", "5u % 0u", "1 << 33", "-16 >> 2",
             "0x80000000 >> 4", "-1 < 1u", "(char)200", "(unsigned char)-1", "(bool)-3",
             "2147483647 + 1", "'a' * 2", "~0u / 3u", "-(-2147483647 - 1)", "!5 + !0",
             "3 > 2 ? 10 : 20", "0 && 1 / 0", "1 || 1 / 0", "min(-3, 2u)", "max(-3, 2)", "abs(-9)"]
    body = "\n".join(f"  o[{j}] = {e};" for j, e in enumerate(exprs))
    folded = run(f"__global__ void k(int *o) {{\n{body}\n}}\n",
                 {"o": np.zeros(len(exprs), np.int32)}, block=1)["o"]
    # the same expressions with every literal coming from memory at run time
    rt_body = "\n".join(f"  o[{j}] = {e};" for j, e in enumerate(exprs))
    import re
    lits: list[str] = []

    def sub(m):
        lits.append(m.group(0))
        unsigned = m.group(0).endswith("u") or int(m.group(0).rstrip("u"), 0) > INT_MAX
        return f"(({'unsigned' if unsigned else 'int'})v[{len(lits) - 1}])"
    rt_body = re.sub(r"0x[0-9a-fA-F]+|[0-9]+u?", sub, rt_body.replace("o[", "o[@"))
    rt_body = re.sub(r"o\[@\(\(int\)v\[(\d+)\]\)\]", lambda m: f"o[{lits[int(m.group(1))]}]", rt_body)
    vals = np.array([int(x.rstrip("u"), 0) & U32 for x in lits], np.uint32)
    runtime = run(f"__global__ void k(int *o, const unsigned *v) {{\n{rt_body}\n}}\n",
                  {"o": np.zeros(len(exprs), np.int32), "v": vals}, block=1)["o"]
    assert ints(folded) == ints(runtime)
    assert ints(folded)[:6] == [-3, -1, -3, INT_MIN, 0, -1]
    assert ints(folded)[14:18] == [0, -56, 255, 1]


# ------------------------------------------------------------------ assignments


COMPOUND = ["+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>="]


def model_compound(op: str, x: int, y: int, ctype: str) -> int:
    signed = ctype in ("int", "char")
    r = model_binary(op[:-1], x, y, signed)
    if ctype == "char":
        return s8(r)
    return s32(r) if ctype == "int" else r


@pytest.mark.parametrize("ctype,where", [
    ("int", "local"), ("unsigned", "local"), ("char", "local"),
    ("int", "global"), ("unsigned", "shared"), ("int", "pointer"),
])
def test_every_compound_assignment(ctype, where):
    xs = [100, -7, INT_MIN, 13] if ctype == "int" else [100, 250, 0x80000001, 13]
    if ctype == "char":
        xs = [100, -7, 127, -128]
    ys = [3, 5, 2, 31]
    dt = {"int": np.int32, "unsigned": np.uint32, "char": np.int8}[ctype]
    n = len(COMPOUND)
    if where == "local":
        body = "".join(f"  {{ {ctype} v = x; v {op} y; o[i * {n} + {j}] = v; }}\n"
                       for j, op in enumerate(COMPOUND))
        pre = ""
    elif where == "global":
        body = "".join(f"  o[i * {n} + {j}] = x; o[i * {n} + {j}] {op} y;\n"
                       for j, op in enumerate(COMPOUND))
        pre = ""
    elif where == "shared":
        pre = f"  __shared__ {ctype} s[4][{n}];\n"
        body = "".join(f"  s[i][{j}] = x; s[i][{j}] {op} y; o[i * {n} + {j}] = s[i][{j}];\n"
                       for j, op in enumerate(COMPOUND))
    else:
        pre = f"  {ctype} *p = o + i * {n};\n"
        body = "".join(f"  *p = x; *p {op} y; p++;\n" for op in COMPOUND)
    src = (f"__global__ void k(const {ctype} *a, const int *b, {ctype} *o) {{\n"
           f"  int i = threadIdx.x;\n  {ctype} x = a[i];\n  int y = b[i];\n{pre}{body}}}\n")
    out = run(src, {"a": np.array(xs, np.int64).astype(dt), "b": np.array(ys, np.int32),
                    "o": np.zeros(4 * n, dt)})["o"]
    want = [model_compound(op, x, y, ctype) for x, y in zip(xs, ys) for op in COMPOUND]
    if ctype == "unsigned":
        want = [u32(w) for w in want]
    assert ints(out) == want


def test_assignment_is_an_expression_and_chains():
    src = ("__global__ void k(int *o) {\n"
           "  int a, b, c;\n"
           "  a = b = c = 7;\n"
           "  o[0] = a + b + c;\n"
           "  o[1] = (a += 5) * 2;\n"
           "  char ch = 0;\n"
           "  o[2] = (ch = 300);\n"
           "  o[3] = (o[4] = 9) + 1;\n"
           "  int x = 1;\n"
           "  x = x++ + 10;\n"
           "  o[5] = x;\n"
           "}\n")
    o = ints(run(src, {"o": np.zeros(6, np.int32)}, block=1)["o"])
    assert o == [21, 24, 44, 10, 9, 11]


def test_increment_and_decrement_in_every_position():
    src = ("__global__ void k(int *o, char *c, unsigned *u) {\n"
           "  int x = 5;\n"
           "  o[0] = x++; o[1] = x; o[2] = ++x; o[3] = x--; o[4] = --x;\n"
           "  int *p = o + 8;\n"
           "  *p = 40;\n"
           "  o[5] = (*p)++; o[6] = ++*p; o[7] = o[8]--;\n"
           "  int *q = o + 10;\n"
           "  *q++ = 1; *q++ = 2; *q = 3; q--; *q += 10;\n"
           "  c[0]++; --c[1]; u[0]--; ++u[1];\n"
           "  char ch = 127; ch++; o[13] = ch;\n"
           "  unsigned char uc = 0; uc--; o[14] = uc;\n"
           "}\n")
    out = run(src, {"o": np.zeros(15, np.int32), "c": np.array([127, -128], np.int8),
                    "u": np.array([0, U32], np.uint32)}, block=1)
    o = ints(out["o"])
    assert o[:8] == [5, 6, 7, 7, 5, 40, 42, 42]
    assert o[8] == 41 and o[10:13] == [1, 12, 3]
    assert o[13:15] == [-128, 255]
    assert ints(out["c"]) == [-128, 127]
    assert ints(out["u"]) == [U32, 0]


# ------------------------------------------------------------------ control flow


def test_loops_with_break_and_continue_and_per_lane_trip_counts():
    src = ("__global__ void k(const int *a, int *o) {\n"
           "  int i = threadIdx.x;\n"
           "  int n = a[i];\n"
           "  int s = 0;\n"
           "  for (int j = 0; j < n; j++) {\n"
           "    if (j % 3 == 1) continue;\n"
           "    if (j == 9) break;\n"
           "    s += j;\n"
           "  }\n"
           "  int w = 0, m = n;\n"
           "  while (m > 0) { m -= 2; w++; if (w > 4) break; }\n"
           "  int d = 0;\n"
           "  do { d++; if (d == 2) continue; d += 10; } while (d < n);\n"
           "  int nest = 0;\n"
           "  for (int x = 0; x < 3; x++)\n"
           "    for (int y = 0; y < n; y++) { if (y > x) break; nest++; }\n"
           "  o[4 * i] = s; o[4 * i + 1] = w; o[4 * i + 2] = d; o[4 * i + 3] = nest;\n"
           "}\n")
    ns = [0, 1, 4, 7, 12, 15, 2, 3]
    o = ints(run(src, {"a": np.array(ns, np.int32), "o": np.zeros(32, np.int32)}, block=8)["o"])

    def model(n):
        s = 0
        for j in range(n):
            if j % 3 == 1:
                continue
            if j == 9:
                break
            s += j
        w, m = 0, n
        while m > 0:
            m -= 2
            w += 1
            if w > 4:
                break
        d = 0
        while True:
            d += 1
            if d != 2:
                d += 10
            if not d < n:
                break
        nest = sum(min(x + 1, n) for x in range(3))
        return [s, w, d, nest]
    assert o == [v for n in ns for v in model(n)]


def test_early_return_from_a_kernel_and_from_device_functions():
    src = ("__device__ int first_multiple(int n, int k) {\n"
           "  for (int v = 1; v < 100; v++) {\n"
           "    if (v % k == 0 && v > n) return v;\n"
           "  }\n"
           "  return -1;\n"
           "}\n"
           "__device__ void mark(int *o, int i) {\n"
           "  if (i & 1) return;\n"
           "  o[i] += 100;\n"
           "}\n"
           "__global__ void k(int *o, int n) {\n"
           "  int i = threadIdx.x;\n"
           "  if (i >= n) return;\n"
           "  o[i] = first_multiple(i * 3, i + 2);\n"
           "  mark(o, i);\n"
           "  if (i == 2) return;\n"
           "  o[i] += 1000;\n"
           "}\n")
    o = ints(run(src, {"o": np.full(8, -9, np.int32)}, {"n": 6}, block=8)["o"])

    def fm(n, k):
        return next((v for v in range(1, 100) if v % k == 0 and v > n), -1)
    want = []
    for i in range(8):
        if i >= 6:
            want.append(-9)
            continue
        v = fm(i * 3, i + 2) + (0 if i & 1 else 100)
        want.append(v if i == 2 else v + 1000)
    assert o == want


def test_device_functions_are_inlined_with_value_parameters():
    src = ("__device__ int gcd(int a, int b) { while (b) { int t = a % b; a = b; b = t; } return a; }\n"
           "__device__ int lcm(int a, int b) { return a / gcd(a, b) * b; }\n"
           "__device__ void swap_ends(int *p, int n) { int t = p[0]; p[0] = p[n - 1]; p[n - 1] = t; }\n"
           "__device__ unsigned char lo(int v) { return v; }\n"
           "__device__ bool odd(int v) { return v & 1; }\n"
           "__global__ void k(int *o) {\n"
           "  int a = 12, b = 18;\n"
           "  o[0] = gcd(a, b); o[1] = lcm(a, b);\n"
           "  o[2] = a; o[3] = b;  // unchanged by the calls\n"
           "  swap_ends(o + 4, 3);\n"
           "  o[7] = lo(0x1234) + odd(7) + odd(8);\n"
           "  int calls = 0;\n"
           "  o[8] = gcd(calls++, 5) + calls;\n"
           "}\n")
    o = ints(run(src, {"o": np.array([0, 0, 0, 0, 1, 2, 3, 0, 0], np.int32)}, block=1)["o"])
    assert o == [6, 36, 12, 18, 3, 2, 1, 0x34 + 1, 5 + 1]


def test_conditional_operator_and_short_circuit_evaluation():
    src = ("__global__ void k(const int *a, int *o, int n) {\n"
           "  int i = threadIdx.x;\n"
           "  int hits = 0;\n"
           "  // a[i] is only read when i < n\n"
           "  if (i < n && a[i] > 0) hits++;\n"
           "  int z = 0;\n"
           "  bool t = i > 1 || (z = 7);\n"
           "  bool f = i > 1 && (z = 9);\n"
           "  o[5 * i] = hits;\n"
           "  o[5 * i + 1] = z;\n"
           "  o[5 * i + 2] = t + 2 * f;\n"
           "  o[5 * i + 3] = i ? (i > 2 ? 30 : 20) : 10;\n"
           "  unsigned u = i == 1 ? -1 : 1u;\n"
           "  o[5 * i + 4] = u > 5;\n"
           "}\n")
    o = ints(run(src, {"a": np.array([5, -1], np.int32), "o": np.zeros(20, np.int32)},
                 {"n": 2}, block=4)["o"])
    want = []
    for i in range(4):
        a = [5, -1][i] if i < 2 else None
        z = 0 if i > 1 else 7
        if i > 1:
            z = 9
        t, f = (i > 1 or True), (i > 1)
        want += [int(i < 2 and a > 0), z, int(t) + 2 * int(f), [10, 20, 20, 30][i], int(i == 1)]
    assert o == want


def test_scopes_and_shadowing():
    src = ("const int X = 5;\n"
           "__global__ void k(int *o) {\n"
           "  int x = 1;\n"
           "  { int x = 2; o[0] = x; { int x = 3; o[1] = x; } o[2] = x; }\n"
           "  o[3] = x;\n"
           "  for (int x = 10; x < 11; x++) o[4] = x;\n"
           "  int X = 6;\n"
           "  o[5] = X;\n"
           "}\n")
    assert ints(run(src, {"o": np.zeros(6, np.int32)}, block=1)["o"]) == [2, 3, 2, 1, 10, 6]


# ------------------------------------------------------------------ types and memory


def test_constants_from_macros_and_const_locals_size_shared_arrays():
    src = ("#define ROWS 3\n"
           "const int BASE = ROWS * 10;\n"
           "__global__ void k(int *o) {\n"
           "  const int M = ROWS - 1;\n"
           "  const unsigned W = M * 2 + 1;\n"
           "  __shared__ int s[ROWS][W];\n"
           "  s[M][W - 1] = BASE + M * W;\n"
           "  o[0] = s[2][4];\n"
           "}\n")
    prog = compile_source(src, "t.cu")
    assert prog.kernels[0].shared_words == 3 * 5
    assert ints(run(src, {"o": np.zeros(1, np.int32)}, block=1)["o"]) == [30 + 2 * 5]


def test_casts_between_integer_types():
    src = ("__global__ void k(const int *a, int *o) {\n"
           "  int i = threadIdx.x;\n"
           "  int x = a[i];\n"
           "  int *r = o + 8 * i;\n"
           "  r[0] = (char)x; r[1] = (unsigned char)x; r[2] = (bool)x; r[3] = (signed char)x;\n"
           "  r[4] = (unsigned)x >> 28; r[5] = (int)(unsigned)x >> 28;\n"
           "  char c = x; unsigned char uc = x; bool b = x;\n"
           "  r[6] = c + uc + b;\n"
           "  r[7] = (char)(unsigned char)(x + 1);\n"
           "}\n")
    xs = [0, 1, -1, 127, 128, 255, 256, -129, 0x12345678, INT_MIN]
    o = ints(run(src, {"a": np.array(xs, np.int32), "o": np.zeros(80, np.int32)}, block=10)["o"])
    for i, x in enumerate(xs):
        assert o[8 * i: 8 * i + 8] == [s8(x), x & 0xFF, int(x != 0), s8(x), u32(x) >> 28, x >> 28,
                                       s8(x) + (x & 0xFF) + int(x != 0), s8(x + 1)], x


def test_char_unsigned_char_and_bool_buffers():
    src = ("__global__ void k(char *c, unsigned char *u, bool *b, int *o) {\n"
           "  int i = threadIdx.x;\n"
           "  o[3 * i] = c[i];\n"
           "  o[3 * i + 1] = u[i];\n"
           "  o[3 * i + 2] = b[i];\n"
           "  c[i] = c[i] * 3;\n"
           "  u[i] = u[i] + 100;\n"
           "  b[i] = c[i] & 4;\n"
           "}\n")
    cs = [-128, -1, 0, 1, 100, 127, -60, 42]
    us = [0, 1, 127, 128, 200, 255, 155, 156]
    bs = [True, False, True, True, False, False, True, False]
    out = run(src, {"c": np.array(cs, np.int8), "u": np.array(us, np.uint8),
                    "b": np.array(bs), "o": np.zeros(24, np.int32)}, block=8)
    assert ints(out["o"]) == [v for c, u, b in zip(cs, us, bs) for v in (c, u, int(b))]
    assert ints(out["c"]) == [s8(3 * c) for c in cs]
    assert ints(out["u"]) == [(u + 100) & 0xFF for u in us]
    assert list(out["b"]) == [bool(s8(3 * c) & 4) for c in cs]


def test_pointer_arithmetic_in_global_and_shared_memory():
    src = ("__global__ void k(int *a, int *o) {\n"
           "  __shared__ int s[8];\n"
           "  int i = threadIdx.x;\n"
           "  s[i] = a[i] * 2;\n"
           "  __syncthreads();\n"
           "  int *p = s + i;\n"
           "  const int *q = a;\n"
           "  o[i] = *p + *(q + i) + p[0] + (i < 7 ? *(p + 1) : 0);\n"
           "  if (i == 0) {\n"
           "    int *e = &a[6];\n"
           "    o[8] = e - a;\n"
           "    o[9] = (p < s + 3) + (e >= a) * 2 + (p == s) * 4 + (e != 0) * 8;\n"
           "    int sum = 0;\n"
           "    for (int *it = s; it != s + 8; ++it) sum += *it;\n"
           "    o[10] = sum;\n"
           "    int *r = &s[2];\n"
           "    r += 3; r -= 1;\n"
           "    o[11] = *r;\n"
           "  }\n"
           "}\n")
    a = list(range(10, 18))
    o = ints(run(src, {"a": np.array(a, np.int32), "o": np.zeros(12, np.int32)}, block=8)["o"])
    s = [2 * v for v in a]
    assert o[:8] == [s[i] + a[i] + s[i] + (s[i + 1] if i < 7 else 0) for i in range(8)]
    assert o[8:] == [6, 1 + 2 + 4 + 8, sum(s), s[4]]


def test_two_dimensional_shared_arrays_transpose_through_a_barrier():
    src = ("#define W 4\n"
           "#define H 3\n"
           "__global__ void k(const int *in, int *out) {\n"
           "  __shared__ int tile[H][W];\n"
           "  __shared__ int t2[W][H];\n"
           "  int x = threadIdx.x, y = threadIdx.y;\n"
           "  tile[y][x] = in[y * W + x];\n"
           "  __syncthreads();\n"
           "  t2[x][y] = tile[y][x] * 10;\n"
           "  __syncthreads();\n"
           "  out[x * H + y] = t2[x][y] + tile[H - 1 - y][W - 1 - x];\n"
           "}\n")
    inp = np.arange(12, dtype=np.int32)
    out = ints(run(src, {"in": inp, "out": np.zeros(12, np.int32)}, block=(4, 3))["out"])
    m = inp.reshape(3, 4)
    assert out == [int(m[y][x] * 10 + m[2 - y][3 - x]) for x in range(4) for y in range(3)]


def test_rows_of_a_2d_shared_array_are_pointers():
    src = ("__global__ void k(int *o) {\n"
           "  __shared__ unsigned char g[3][5];\n"
           "  int t = threadIdx.x;\n"
           "  unsigned char *row = g[t % 3];\n"
           "  row[t / 3] = 250 + t;   // wraps to 0..255\n"
           "  __syncthreads();\n"
           "  if (t == 0) {\n"
           "    for (int y = 0; y < 3; y++) {\n"
           "      unsigned char *r = g[y];\n"
           "      o[y] = r[0] + (r[1] << 8) + (*(r + 2) << 16) + (int)(&g[y][4] - g[y]) * 1000000;\n"
           "    }\n"
           "  }\n"
           "}\n")
    o = ints(run(src, {"o": np.zeros(3, np.int32)}, block=9)["o"])
    g = [[0] * 5 for _ in range(3)]
    for t in range(9):
        g[t % 3][t // 3] = (250 + t) & 0xFF
    assert o == [g[y][0] + (g[y][1] << 8) + (g[y][2] << 16) + 4000000 for y in range(3)]


def test_parameters_re_read_under_register_pressure_keep_their_values():
    params = ", ".join(f"int p{i}" for i in range(40))
    total = " + ".join(f"p{i} * {i + 1}" for i in range(40))
    src = f"__global__ void k(int *o, {params}) {{\n  o[threadIdx.x] = {total} + threadIdx.x;\n}}\n"
    vals = {f"p{i}": 3 * i - 7 for i in range(40)}
    o = ints(run(src, {"o": np.zeros(4, np.int32)}, vals)["o"])
    s = sum((3 * i - 7) * (i + 1) for i in range(40))
    assert o == [s, s + 1, s + 2, s + 3]


def test_builtin_indices_over_a_3d_grid_and_block():
    src = ("__global__ void k(int *o) {\n"
           "  int t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);\n"
           "  int b = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);\n"
           "  int nt = blockDim.x * blockDim.y * blockDim.z;\n"
           "  o[b * nt + t] = b * 100 + t + warpSize * 1000;\n"
           "}\n")
    o = ints(run(src, {"o": np.zeros(2 * 2 * 2 * 12, np.int32)}, grid=(2, 2, 2), block=(2, 3, 2))["o"])
    assert o == [b * 100 + t + 4000 for b in range(8) for t in range(12)]


def test_locals_start_at_zero_in_every_block_although_registers_are_not_cleared():
    src = ("__global__ void k(int *o) {\n"
           "  int x;\n"
           "  unsigned y;\n"
           "  int b = blockIdx.x;\n"
           "  if (b == 0) { x = 1234; y = 77; }\n"
           "  o[b * 4 + threadIdx.x] = x + y;\n"
           "}\n")
    o = ints(run(src, {"o": np.full(12, -1, np.int32)}, grid=3, block=4)["o"])
    assert o == [1311] * 4 + [0] * 8


def test_min_max_abs_builtins():
    src = ("__global__ void k(const int *a, const int *b, int *o, unsigned *u) {\n"
           "  int i = threadIdx.x;\n"
           "  o[3 * i] = min(a[i], b[i]); o[3 * i + 1] = max(a[i], b[i]); o[3 * i + 2] = abs(a[i]);\n"
           "  u[2 * i] = min((unsigned)a[i], (unsigned)b[i]); u[2 * i + 1] = max(a[i], 5u);\n"
           "}\n")
    xs = [3, -3, INT_MIN, INT_MAX, 0, -1]
    ys = [-3, 3, INT_MAX, INT_MIN, 0, 7]
    out = run(src, {"a": np.array(xs, np.int32), "b": np.array(ys, np.int32),
                    "o": np.zeros(18, np.int32), "u": np.zeros(12, np.uint32)}, block=6)
    assert ints(out["o"]) == [v for x, y in zip(xs, ys) for v in (min(x, y), max(x, y), s32(abs(x)))]
    assert ints(out["u"]) == [v for x, y in zip(xs, ys)
                              for v in (min(u32(x), u32(y)), max(u32(x), 5))]


# ------------------------------------------------------------------ atomics


@pytest.mark.parametrize("space", ["global", "shared"])
def test_every_atomic_returns_the_old_value(space):
    ops = [("atomicAdd", 5), ("atomicSub", 3), ("atomicMin", -50), ("atomicMax", 1000),
           ("atomicExch", 77), ("atomicAnd", 0x0F), ("atomicOr", 0x100), ("atomicXor", 0xFF)]
    init = [10, 10, 7, 7, 10, 0x3C, 0x3C, 0x3C]
    if space == "global":
        body = "".join(f"  old[{j}] = {op}(&m[{j}], {v});\n" for j, (op, v) in enumerate(ops))
        body += "  old[8] = atomicCAS(m + 8, 4, 40);\n  old[9] = atomicCAS(m + 9, 4, 40);\n"
        pre, post = "", ""
    else:
        pre = ("  __shared__ int s[10];\n"
               "  for (int j = 0; j < 10; j++) s[j] = m[j];\n")
        body = "".join(f"  old[{j}] = {op}(&s[{j}], {v});\n" for j, (op, v) in enumerate(ops))
        body += "  old[8] = atomicCAS(s + 8, 4, 40);\n  old[9] = atomicCAS(&s[9], 4, 40);\n"
        post = "  for (int j = 0; j < 10; j++) m[j] = s[j];\n"
    src = f"__global__ void k(int *m, int *old) {{\n{pre}{body}{post}}}\n"
    m0 = init + [4, 5]
    out = run(src, {"m": np.array(m0, np.int32), "old": np.zeros(10, np.int32)}, block=1)
    assert ints(out["old"]) == m0
    assert ints(out["m"]) == [15, 7, -50, 1000, 77, 0x0C, 0x13C, 0xC3, 40, 5]


def test_atomics_under_contention_and_signedness():
    src = ("__global__ void k(int *sum, unsigned *umin, int *smin, int *smax, unsigned *umax,"
           " int *ticket, int *order) {\n"
           "  __shared__ int local;\n"
           "  int t = blockIdx.x * blockDim.x + threadIdx.x;\n"
           "  if (threadIdx.x == 0) local = 0;\n"
           "  __syncthreads();\n"
           "  int v = t * 7 - 20;\n"
           "  atomicAdd(&local, v);\n"
           "  atomicSub(sum, -v);\n"
           "  atomicMin(umin, (unsigned)v);\n"
           "  atomicMin(smin, v);\n"
           "  atomicMax(smax, v);\n"
           "  atomicMax(umax, (unsigned)v);\n"
           "  order[atomicAdd(ticket, 1)] = t;\n"
           "  __syncthreads();\n"
           "  if (threadIdx.x == 0) atomicAdd(sum + 1, local);\n"
           "}\n")
    n = 16
    out = run(src, {"sum": np.zeros(2, np.int32), "umin": np.array([U32], np.uint32),
                    "smin": np.array([INT_MAX], np.int32), "smax": np.array([INT_MIN], np.int32),
                    "umax": np.zeros(1, np.uint32), "ticket": np.zeros(1, np.int32),
                    "order": np.full(n, -1, np.int32)}, grid=2, block=8)
    vs = [t * 7 - 20 for t in range(n)]
    assert ints(out["sum"]) == [sum(vs), sum(vs)]
    assert ints(out["umin"]) == [min(u32(v) for v in vs)]
    assert ints(out["smin"]) == [min(vs)] and ints(out["smax"]) == [max(vs)]
    assert ints(out["umax"]) == [max(u32(v) for v in vs)]
    assert ints(out["ticket"]) == [n] and sorted(ints(out["order"])) == list(range(n))


def test_cas_loop_implements_an_atomic_maximum_of_squares():
    src = ("__device__ int atomic_max_sq(int *p, int v) {\n"
           "  int old = *p, assumed;\n"
           "  do {\n"
           "    assumed = old;\n"
           "    old = atomicCAS(p, assumed, max(assumed, v * v));\n"
           "  } while (assumed != old);\n"
           "  return old;\n"
           "}\n"
           "__global__ void k(int *best, const int *a) {\n"
           "  atomic_max_sq(best, a[threadIdx.x]);\n"
           "}\n")
    a = [3, -9, 4, 7, -2, 8, 1, 5]
    out = run(src, {"best": np.zeros(1, np.int32), "a": np.array(a, np.int32)}, block=8)
    assert ints(out["best"]) == [81]


# ------------------------------------------------------------------ random expressions


class Gen:
    """Random well-defined C expressions over x:int, y:int, u:unsigned, c:char, with a C model."""

    VARS = {"x": "int", "y": "int", "u": "unsigned", "c": "char"}

    def __init__(self, seed: int):
        self.r = random.Random(seed)

    def expr(self, depth: int) -> tuple[str, object]:
        r = self.r
        if depth == 0 or r.random() < 0.2:
            if r.random() < 0.6:
                v = r.choice(list(self.VARS))
                return v, ("var", v)
            k = r.choice([0, 1, 2, 3, 5, 7, 31, 100, -1, -8, 255, 1000000, INT_MAX])
            if r.random() < 0.25:
                return f"{k & U32}u", ("const", k & U32, "unsigned")
            return (f"({k})", ("const", k, "int"))
        kind = r.random()
        if kind < 0.6:
            op = r.choice(["+", "-", "*", "/", "%", "&", "|", "^", "<<", ">>", "<", ">=", "==",
                           "!=", "&&", "||"])
            a, ta = self.expr(depth - 1)
            b, tb = self.expr(depth - 1)
            if op in ("/", "%"):
                b, tb = f"({b} | 1)", ("bin", "|", tb, ("const", 1, "int"))
            return f"({a} {op} {b})", ("bin", op, ta, tb)
        if kind < 0.75:
            op = r.choice(["-", "~", "!"])
            a, ta = self.expr(depth - 1)
            return f"({op}{a})", ("un", op, ta)
        if kind < 0.88:
            t = r.choice(["char", "unsigned char", "bool", "unsigned", "int"])
            a, ta = self.expr(depth - 1)
            return f"(({t}){a})", ("cast", t, ta)
        c, tc = self.expr(depth - 1)
        a, ta = self.expr(depth - 1)
        b, tb = self.expr(depth - 1)
        return f"({c} ? {a} : {b})", ("cond", tc, ta, tb)


def c_eval(t, env) -> tuple[int, str]:
    """(value, type) of a generated expression under C rules; type in int/unsigned/char/uchar/bool."""
    kind = t[0]
    if kind == "var":
        return env[t[1]], Gen.VARS[t[1]]
    if kind == "const":
        return t[1], t[2]

    def promote(v, ty):
        return (v, "unsigned") if ty == "unsigned" else (v, "int")

    def common(ta, tb):
        return "unsigned" if "unsigned" in (ta, tb) else "int"

    def conv(v, ty):
        return {"int": s32, "unsigned": u32, "char": s8, "uchar": lambda z: z & 0xFF,
                "bool": lambda z: int(z != 0)}[ty](v)
    if kind == "un":
        v, ty = promote(*c_eval(t[2], env))
        if t[1] == "!":
            return int(v == 0), "bool"
        return conv(-v if t[1] == "-" else ~v, ty), ty
    if kind == "cast":
        v, _ = c_eval(t[2], env)
        ty = {"unsigned char": "uchar"}.get(t[1], t[1])
        return conv(v, ty), ty
    if kind == "cond":
        c, _ = c_eval(t[1], env)
        a, ta = c_eval(t[2], env)
        b, tb = c_eval(t[3], env)
        ty = ta if ta == tb else common(promote(a, ta)[1], promote(b, tb)[1])
        return conv(a if c else b, ty), ty
    op = t[1]
    a, ta = promote(*c_eval(t[2], env))
    b, tb = promote(*c_eval(t[3], env))
    if op in ("&&", "||"):
        return int((a != 0 and b != 0) if op == "&&" else (a != 0 or b != 0)), "bool"
    if op in ("<<", ">>"):
        a = conv(a, ta)
        return conv(a << (b & 31) if op == "<<" else a >> (b & 31), ta), ta
    ty = common(ta, tb)
    a, b = conv(a, ty), conv(b, ty)
    if op in ("<", ">=", "==", "!="):
        return int({"<": a < b, ">=": a >= b, "==": a == b, "!=": a != b}[op]), "bool"
    if op == "/":
        return conv(tdiv(a, b), ty), ty
    if op == "%":
        return conv(tmod(a, b), ty), ty
    return conv({"+": a + b, "-": a - b, "*": a * b, "&": a & b, "|": a | b, "^": a ^ b}[op], ty), ty


def test_random_expressions_match_a_c_model():
    g = Gen(2024)
    exprs = [g.expr(3) for _ in range(36)]
    body = "\n".join(f"  o[i * {len(exprs)} + {j}] = {e};" for j, (e, _) in enumerate(exprs))
    src = ("__global__ void k(const int *a, int *o) {\n"
           "  int i = threadIdx.x;\n"
           "  int x = a[4 * i], y = a[4 * i + 1];\n"
           "  unsigned u = a[4 * i + 2];\n"
           "  char c = a[4 * i + 3];\n"
           f"{body}\n}}\n")
    envs = [dict(x=3, y=-5, u=7, c=-3), dict(x=INT_MIN, y=-1, u=U32, c=127),
            dict(x=100000, y=31, u=0x80000000, c=-128), dict(x=0, y=0, u=0, c=0)]
    a = np.array([s32(e[k]) for e in envs for k in "xyuc"], np.int32)
    out = ints(run(src, {"a": a, "o": np.zeros(len(envs) * len(exprs), np.int32)},
                   block=len(envs), max_steps=1_000_000)["o"])
    bad = []
    for i, env in enumerate(envs):
        for j, (e, t) in enumerate(exprs):
            want = s32(c_eval(t, env)[0])
            if out[i * len(exprs) + j] != want:
                bad.append(f"{e} with {env}: got {out[i * len(exprs) + j]}, want {want}")
    assert not bad, "\n".join(bad[:10])
