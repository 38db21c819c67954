"""Property tests of every integer operator of the CUDA-C subset against a Python
model of C 32-bit arithmetic written here (not taken from the compiler or the ISA).

For each operator one kernel is compiled (once per module) in which thread i
computes  c[i] = a[i] OP b[i]  over a buffer; hypothesis generates whole lists of
operand pairs (edge values mixed with arbitrary ones) and each example is a
single launch on the reference emulator.  Results are compared as 32-bit
patterns.  Besides variable operands the file covers constant operands on either
side (the immediate and division-by-constant paths), expressions of two
constants (the constant folder), compound assignments and ++/-- on int,
unsigned, char and unsigned char variables.

C semantics modelled:
* int is 32-bit two's complement; overflow wraps (as on a GPU);
* integer promotion (char, unsigned char, bool -> int) and the usual arithmetic
  conversions: int OP unsigned converts the int to unsigned (so -1 < 1u is 0);
* `/` truncates toward zero and `%` takes the dividend's sign; x / 0, x % 0 and
  INT_MIN / -1 (and INT_MIN % -1) are undefined and excluded from the model
  comparison (the deterministic results docs/subset.md documents for them are
  checked separately);
* `>>` is arithmetic for an int and logical for an unsigned left operand; a
  shift has the promoted left operand's type whatever the amount's type; the
  amount is masked to 5 bits, as the ISA's shifters do (C leaves amounts
  outside 0..31 undefined);
* the result of a comparison, `!`, `&&` and `||` is the int 0 or 1;
* (char) keeps the low byte sign-extended, (unsigned char) the low byte,
  (bool) is x != 0, (int)/(unsigned) keep the bit pattern; assignment to a
  narrower variable converts the same way;
* a hex literal that does not fit int (0x80000000) is unsigned, a decimal one
  (3000000000) a long long, as in C++ (tests/test_int64.py), so this file writes
  3000000000u; character literals have type char (docs/subset.md).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import pytest

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[1]
INT_MIN = -(1 << 31)
INT_MAX = (1 << 31) - 1
U32 = 0xFFFFFFFF


# --- the C model -------------------------------------------------------------------

from models import s8 as to_char, s32 as to_s32, tdiv as trunc_div, tmod as trunc_mod  # noqa: E402
from models import u8 as to_uchar, u32 as to_u32  # noqa: E402


def cast(v: int, ctype: str) -> int:
    """The value of v converted to ctype."""
    if ctype == "int":
        return to_s32(v)
    if ctype == "unsigned":
        return to_u32(v)
    if ctype == "char":
        return to_char(v)
    if ctype == "unsigned char":
        return to_uchar(v)
    if ctype == "bool":
        return int(v != 0)
    raise ValueError(ctype)


def promote(ctype: str) -> str:
    """Integer promotion: everything narrower than int becomes int."""
    return "unsigned" if ctype == "unsigned" else "int"


def common(ta: str, tb: str) -> str:
    """Usual arithmetic conversions (after promotion)."""
    return "unsigned" if "unsigned" in (promote(ta), promote(tb)) else "int"


ARITH = ["+", "-", "*", "/", "%", "&", "|", "^", "<<", ">>"]
CMPS = ["<", "<=", ">", ">=", "==", "!="]
LOGIC = ["&&", "||"]
BINARY_OPS = ARITH + CMPS + LOGIC


def binary_value(op: str, a: int, ta: str, b: int, tb: str) -> int:
    """The value of `a op b` for a of C type ta and b of C type tb."""
    if op in ("&&", "||"):
        return int((a != 0 and b != 0) if op == "&&" else (a != 0 or b != 0))
    if op in ("<<", ">>"):
        t = promote(ta)
        a, sh = cast(a, t), b & 31
        # Python's >> is arithmetic on a negative int and logical on a u32 value.
        return cast(a << sh, t) if op == "<<" else a >> sh
    t = common(ta, tb)
    a, b = cast(a, t), cast(b, t)
    if op == "+":
        return cast(a + b, t)
    if op == "-":
        return cast(a - b, t)
    if op == "*":
        return cast(a * b, t)
    if op == "/":
        return cast(trunc_div(a, b), t)
    if op == "%":
        return cast(trunc_mod(a, b), t)
    if op == "&":
        return cast(a & b, t)
    if op == "|":
        return cast(a | b, t)
    if op == "^":
        return cast(a ^ b, t)
    return int({"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b,
                "==": a == b, "!=": a != b}[op])


def binary_defined(op: str, a: int, ta: str, b: int, tb: str) -> bool:
    """False for the operand pairs C leaves undefined (and we exclude)."""
    if op not in ("/", "%"):
        return True
    t = common(ta, tb)
    a, b = cast(a, t), cast(b, t)
    return b != 0 and not (t == "int" and a == INT_MIN and b == -1)


UNARY: dict[str, Callable[[int, str], int]] = {
    "-": lambda a, t: cast(-a, promote(t)),
    "~": lambda a, t: cast(~a, promote(t)),
    "!": lambda a, t: int(a == 0),
}

CASTS = ["char", "unsigned char", "bool", "unsigned", "int"]
TAG = {"int": "i", "unsigned": "u", "char": "c", "unsigned char": "uc", "bool": "b"}


# --- the operator table -----------------------------------------------------------------

@dataclass(frozen=True)
class OpCase:
    """c[i] = <expr over x = a[i] (type ta) and y = b[i] (type tb)>."""

    id: str
    ta: str  # C type of a[] ("int" or "unsigned")
    tb: str  # C type of b[] (unused by unary operators and casts, still passed)
    expr: str  # a C expression, or a statement block `{ ... }` that assigns c[i]
    model: Callable[[int, int], int]  # (x, y) -> the value stored into c[i]
    defined: Callable[[int, int], bool] = lambda a, b: True  # pairs C defines

    @property
    def rt(self) -> str:
        return "unsigned" if "unsigned" in (self.ta, self.tb) else "int"

    def source(self) -> str:
        body = self.expr if self.expr.startswith("{") else f"c[i] = {self.expr};"
        return (f"__global__ void op(const {self.ta} *a, const {self.tb} *b, {self.rt} *c, int n)\n"
                "{\n"
                "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                "    if (i < n) {\n"
                f"        {self.ta} x = a[i];\n"
                f"        {self.tb} y = b[i];\n"
                f"        {body}\n"
                "    }\n"
                "}\n")


def _binary_case(op: str, ta: str, tb: str) -> OpCase:
    return OpCase(f"{TAG[ta]}{op}{TAG[tb]}", ta, tb, f"x {op} y",
                  lambda a, b: binary_value(op, a, ta, b, tb),
                  lambda a, b: binary_defined(op, a, ta, b, tb))


def _compound_case(op: str, t: str) -> OpCase:
    """{ T z = x; z op= y; c[i] = z; }: the operation in the promoted type, then back to T."""
    buf = "unsigned" if t == "unsigned" else "int"

    def model(a, b):
        z = cast(a, t)
        return cast(binary_value(op, z, t, b, buf), t)

    def defined(a, b):
        return binary_defined(op, cast(a, t), t, b, buf)

    return OpCase(f"{TAG[t]}{op}={TAG[buf]}", buf, buf, f"{{ {t} z = x; z {op}= y; c[i] = z; }}",
                  model, defined)


def _incdec_cases(t: str) -> list[OpCase]:
    buf = "unsigned" if t == "unsigned" else "int"
    pt = promote(t)

    def combine(w, z):  # w * 1000 + z in the promoted type
        return cast(cast(w * 1000, pt) + z, pt)

    def post_inc(a, b):
        z0 = cast(a, t)
        return combine(z0, cast(z0 + 1, t))

    def pre_dec(a, b):
        z = cast(cast(a, t) - 1, t)
        return combine(z, z)

    return [
        OpCase(f"{TAG[t]}++", buf, buf, f"{{ {t} z = x; {t} w = z++; c[i] = w * 1000 + z; }}", post_inc),
        OpCase(f"--{TAG[t]}", buf, buf, f"{{ {t} z = x; {t} w = --z; c[i] = w * 1000 + z; }}", pre_dec),
    ]


def _build_cases() -> list[OpCase]:
    cases: list[OpCase] = []
    for t in ("int", "unsigned"):
        for op in BINARY_OPS:
            cases.append(_binary_case(op, t, t))
    # Mixed signedness: comparisons, /, % and + convert the int operand to
    # unsigned; a shift keeps its left operand's type whatever the amount's type.
    for ta, tb in (("int", "unsigned"), ("unsigned", "int")):
        for op in CMPS + ["/", "%", "+", ">>", "<<"]:
            cases.append(_binary_case(op, ta, tb))
    for t in ("int", "unsigned"):
        for op, fn in UNARY.items():
            cases.append(OpCase(f"{op}{TAG[t]}", t, t, f"{op}x", lambda a, b, fn=fn, t=t: fn(a, t)))
        for ct in CASTS:
            cases.append(OpCase(f"({ct.replace(' ', '')}){TAG[t]}", t, t, f"({ct})x",
                                lambda a, b, ct=ct: cast(a, ct)))
        # Implicit conversions by assignment to narrow locals, read back widened.
        for ct in ("char", "unsigned char", "bool"):
            cases.append(OpCase(f"{TAG[ct]}={TAG[t]}", t, t, f"{{ {ct} z = x; c[i] = z; }}",
                                lambda a, b, ct=ct: cast(a, ct)))
    # Compound assignment, including to char / unsigned char (promote, operate, narrow).
    for t in ("int", "unsigned"):
        for op in ARITH:
            cases.append(_compound_case(op, t))
    for t in ("char", "unsigned char"):
        for op in ("+", "-", "*", "/", "%", "&", "|", "^", "<<", ">>"):
            cases.append(_compound_case(op, t))
    for t in ("int", "unsigned", "char", "unsigned char"):
        cases.extend(_incdec_cases(t))
    return cases


CASES = _build_cases()
CASE_BY_ID = {c.id: c for c in CASES}
assert len(CASE_BY_ID) == len(CASES), "duplicate case ids"


# --- constants: literal operands and the constant folder --------------------------------------

@dataclass(frozen=True)
class Lit:
    value: int  # the C value
    text: str  # how it is written
    ctype: str  # its C type


def _int_lit(v: int) -> Lit:
    if v == INT_MIN:
        return Lit(v, "(-2147483647 - 1)", "int")
    return Lit(v, f"({v})" if v < 0 else str(v), "int")


LITS = [_int_lit(v) for v in (0, 1, 2, 3, 4, 7, 8, 10, 31, 32, 33, -1, -2, -4, -7, 1 << 30,
                              INT_MAX, INT_MIN)] + [
    Lit(0, "0u", "unsigned"), Lit(1, "1u", "unsigned"), Lit(3, "3u", "unsigned"),
    Lit(8, "8U", "unsigned"), Lit(10, "10u", "unsigned"), Lit(31, "31u", "unsigned"),
    Lit(0xFFFFFFFF, "0xFFFFFFFF", "unsigned"),  # hex that does not fit int: unsigned
    Lit(0x80000000, "0x80000000", "unsigned"),
    Lit(0x7FFFFFFF, "0x7FFFFFFF", "int"),  # fits int: int
    Lit(0xFFFFFFFE, "4294967294u", "unsigned"),
    Lit(1 << 30, "1073741824u", "unsigned"),
    Lit(0x10000, "0x10000u", "unsigned"),
    Lit(15, "017", "int"),  # octal
    Lit(5, "0b101", "int"),  # binary
    Lit(3000000000, "3000000000u", "unsigned"),  # (unsuffixed, a decimal above INT_MAX is a long long)
    Lit(-1, "'\\xff'", "char"),  # character literals have type char
    Lit(65, "'A'", "char"),
]
FOLD_LITS = [LITS[i] for i in (0, 1, 3, 5, 11, 14, 16, 17)] + [
    Lit(0xFFFFFFFF, "0xFFFFFFFF", "unsigned"), Lit(0x80000000, "0x80000000", "unsigned"),
    Lit(33, "33", "int")]


def _lits_for(op: str) -> list[Lit]:
    # A literal zero divisor is left out: the compiler may rightly reject it.
    return [k for k in LITS if not (op in ("/", "%") and k.value == 0)]


@dataclass(frozen=True)
class ConstCase:
    """c[i*M + j] = x OP K_j (side 'r') or K_j OP x (side 'l') for every literal K_j."""

    id: str
    op: str
    tx: str
    side: str

    @property
    def lits(self) -> list[Lit]:
        return _lits_for(self.op)

    def source(self) -> str:
        m = len(self.lits)
        lines = [f"__global__ void op(const {self.tx} *a, unsigned *c, int n)", "{",
                 "    int i = blockIdx.x * blockDim.x + threadIdx.x;", "    if (i < n) {",
                 f"        {self.tx} x = a[i];"]
        for j, k in enumerate(self.lits):
            e = f"x {self.op} {k.text}" if self.side == "r" else f"{k.text} {self.op} x"
            lines.append(f"        c[i * {m} + {j}] = {e};")
        lines += ["    }", "}"]
        return "\n".join(lines) + "\n"

    def expect(self, x: int, k: Lit) -> tuple[bool, int]:
        if self.side == "r":
            args = (self.op, x, self.tx, k.value, k.ctype)
        else:
            args = (self.op, k.value, k.ctype, x, self.tx)
        if not binary_defined(*args):
            return False, 0
        return True, to_u32(binary_value(*args))


CONST_CASES = [ConstCase(f"{side}:{TAG[t]}{op}", op, t, side)
               for side in ("r", "l") for t in ("int", "unsigned") for op in BINARY_OPS]


def fold_source(op: str) -> tuple[str, list[tuple[bool, int]]]:
    """One thread stores `K1 op K2` for every pair of FOLD_LITS; returns source and expectations."""
    lines = ["__global__ void fold(unsigned *c)", "{"]
    want = []
    for k1 in FOLD_LITS:
        for k2 in FOLD_LITS:
            if not binary_defined(op, k1.value, k1.ctype, k2.value, k2.ctype):
                continue  # a constant expression C leaves undefined: the compiler may reject it
            lines.append(f"    c[{len(want)}] = {k1.text} {op} {k2.text};")
            want.append(to_u32(binary_value(op, k1.value, k1.ctype, k2.value, k2.ctype)))
    lines.append("}")
    return "\n".join(lines) + "\n", want


# --- compile once, launch per example ----------------------------------------------------------

_COMPILED: dict[str, object] = {}


@pytest.fixture(scope="module")
def toolchain():
    import qgcc.frontend as fe
    import qgcc.ref.emulator as emu
    from qgcc.runtime.launch import make_launch
    return fe, emu, make_launch


BLOCK = 64


def compiled(toolchain, key: str, source: str):
    if key not in _COMPILED:
        _COMPILED[key] = toolchain[0].compile_source(source, f"{key}.cu")
    return _COMPILED[key]


def launch_and_read(toolchain, prog, n_threads: int, scalars, arrays, out: str) -> list[int]:
    _, emu, make_launch = toolchain
    grid = (max(1, math.ceil(n_threads / BLOCK)), 1, 1)
    block = (max(1, min(n_threads, BLOCK)), 1, 1)
    launch = make_launch(prog, prog.kernel(None), grid, block, scalars, arrays)
    res = emu.run(launch, max_steps=2_000_000)
    return [int(v) & U32 for v in launch.read_buffer(res.memory, out).astype(np.int64)]


NP = {"int": np.int32, "unsigned": np.uint32}


def _arr(values, ctype):
    return np.array([cast(v, ctype) for v in values], dtype=np.int64).astype(NP[ctype])


def run_op(toolchain, case: OpCase, pairs: list[tuple[int, int]]) -> list[int]:
    """c[i] for each (a, b) pair, as u32 patterns."""
    prog = compiled(toolchain, "op_" + case.id, case.source())
    n = len(pairs)
    arrays = {"a": _arr([p[0] for p in pairs], case.ta), "b": _arr([p[1] for p in pairs], case.tb),
              "c": np.full(n, 0x5A5A5A5A, dtype=NP[case.rt])}
    return launch_and_read(toolchain, prog, n, {"n": n}, arrays, "c")


def check(toolchain, case: OpCase, pairs: list[tuple[int, int]]) -> None:
    got = run_op(toolchain, case, pairs)
    bad = []
    for (a, b), g in zip(pairs, got):
        a, b = cast(a, case.ta), cast(b, case.tb)
        if not case.defined(a, b):
            continue
        want = to_u32(case.model(a, b))
        if g != want:
            bad.append(f"x={a} y={b}: got {to_s32(g)} ({g:#010x}), want {to_s32(want)} ({want:#010x})")
    assert not bad, (f"`{case.expr}` with x:{case.ta} y:{case.tb}: {len(bad)} of {len(pairs)} wrong\n  "
                     + "\n  ".join(bad[:10]))


# --- operand strategies ----------------------------------------------------------------------

EDGES = [0, 1, -1, 2, -2, 3, 7, -7, 31, 32, 33, 127, 128, 255, 256, -128, -129,
         INT_MIN, INT_MAX, INT_MIN + 1, 0x80000000, 0xFFFFFFFF, 0xFFFFFFFE, 0x7FFFFFFF, 0x12345678]

operand = st.one_of(
    st.sampled_from(EDGES),
    st.integers(INT_MIN, U32),  # covers every int and every unsigned pattern
    st.integers(-300, 300),
)
pair_lists = st.lists(st.tuples(operand, operand), min_size=64, max_size=160)

GRID_EDGES = [0, 1, -1, 2, 7, -7, 31, 32, 33, 255, -128, INT_MIN, INT_MAX, INT_MIN + 1,
              0xFFFFFFFE, 0x12345678]
EDGE_GRID = [(a, b) for a in GRID_EDGES for b in GRID_EDGES]  # 256 pairs

# x values for the constant-operand kernels (fewer for / and %, whose lowering is long).
CONST_X = [0, 1, -1, 2, 3, 5, 7, -7, 8, -8, 31, 32, 100, -100, 127, 128, -129, 255, 65535,
           0x12345678, INT_MIN, INT_MAX, INT_MIN + 1, 0xFFFFFFFE]
CONST_X_DIV = [0, 1, -1, 7, -7, 100, INT_MIN, INT_MAX]


# --- tests ---------------------------------------------------------------------------------------

def test_model_self_check():
    """Spot checks of the model itself against values from the C standard."""
    assert trunc_div(-7, 2) == -3 and trunc_mod(-7, 2) == -1
    assert trunc_div(7, -2) == -3 and trunc_mod(7, -2) == 1
    assert to_s32(INT_MAX + 1) == INT_MIN
    assert CASE_BY_ID["i>>i"].model(-8, 1) == -4
    assert to_u32(CASE_BY_ID["u>>u"].model(0xFFFFFFF8, 1)) == 0x7FFFFFFC
    assert CASE_BY_ID["i>>u"].model(-8, 1) == -4  # the amount's type does not matter
    assert CASE_BY_ID["i<u"].model(-1, 1) == 0  # -1 converts to 0xFFFFFFFF
    assert CASE_BY_ID["u>i"].model(1, -1) == 0
    assert CASE_BY_ID["i<i"].model(-1, 1) == 1
    assert CASE_BY_ID["(char)i"].model(0x1FF, 0) == -1
    assert CASE_BY_ID["(unsignedchar)i"].model(-1, 0) == 255
    assert CASE_BY_ID["(bool)u"].model(0x100, 0) == 1
    assert CASE_BY_ID["i<<i"].model(1, 33) == 2  # amount masked to 5 bits
    assert to_u32(CASE_BY_ID["i/u"].model(-8, 2)) == 0x7FFFFFFC
    assert CASE_BY_ID["c+=i"].model(127, 1) == -128
    assert CASE_BY_ID["uc-=i"].model(0, 1) == 255
    assert CASE_BY_ID["c/=i"].model(-128, -1) == -128  # 128 in int, narrowed back to char
    assert CASE_BY_ID["c++"].model(127, 0) == 127 * 1000 - 128
    assert CASE_BY_ID["--uc"].model(0, 0) == 255 * 1001
    assert not CASE_BY_ID["i/i"].defined(INT_MIN, -1) and CASE_BY_ID["i/u"].defined(INT_MIN, -1)


@pytest.mark.parametrize("case_id", list(CASE_BY_ID))
def test_edge_grid(toolchain, case_id):
    """Every pair of edge values, one launch per operator."""
    check(toolchain, CASE_BY_ID[case_id], EDGE_GRID)


@pytest.mark.parametrize("case_id", list(CASE_BY_ID))
@settings(max_examples=3, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@given(pairs=pair_lists)
def test_random_pairs(toolchain, case_id, pairs):
    check(toolchain, CASE_BY_ID[case_id], pairs)


@pytest.mark.parametrize("case", CONST_CASES, ids=lambda c: c.id)
def test_constant_operand(toolchain, case):
    """x OP K and K OP x for literals K of both types (immediates, division by constants)."""
    prog = compiled(toolchain, "const_" + case.id, case.source())
    xs = CONST_X_DIV if case.op in ("/", "%") else CONST_X
    m = len(case.lits)
    got = launch_and_read(toolchain, prog, len(xs), {"n": len(xs)},
                          {"a": _arr(xs, case.tx), "c": np.zeros(len(xs) * m, np.uint32)}, "c")
    bad = []
    for i, x in enumerate(xs):
        x = cast(x, case.tx)
        for j, k in enumerate(case.lits):
            ok, want = case.expect(x, k)
            if ok and got[i * m + j] != want:
                e = f"x {case.op} {k.text}" if case.side == "r" else f"{k.text} {case.op} x"
                bad.append(f"{e} with x={x}: got {to_s32(got[i * m + j])}, want {to_s32(want)}")
    assert not bad, f"{len(bad)} wrong (x: {case.tx}):\n  " + "\n  ".join(bad[:10])


@pytest.mark.parametrize("op", BINARY_OPS)
def test_constant_folding(toolchain, op):
    """K1 OP K2 for literal pairs: what the constant folder produces."""
    source, want = fold_source(op)
    prog = compiled(toolchain, f"fold_{op}", source)
    got = launch_and_read(toolchain, prog, 1, {}, {"c": np.zeros(len(want), np.uint32)}, "c")
    lines = [ln.strip() for ln in source.splitlines() if ln.strip().startswith("c[")]
    bad = [f"{ln}  got {to_s32(g)}, want {to_s32(w)}" for ln, g, w in zip(lines, got, want) if g != w]
    assert not bad, f"{len(bad)} wrong:\n  " + "\n  ".join(bad[:10])


def _documented_division_by_zero() -> str:
    text = (ROOT / "docs" / "subset.md").read_text()
    assert re.search(r"by zero|/ ?0\b|x ?/ ?0", text, re.I), "docs/subset.md must document division by zero"
    return text


def test_division_by_zero_documented_result(toolchain):
    """C leaves x/0, x%0 and INT_MIN/-1 undefined; qgcc documents deterministic results
    (docs/subset.md): unsigned x/0 = 0xFFFFFFFF and x%0 = x; signed x/0 = -1 for x >= 0
    and 1 for x < 0, x%0 = x; INT_MIN / -1 = INT_MIN and INT_MIN % -1 = 0."""
    _documented_division_by_zero()
    xs = [0, 1, 7, -7, INT_MAX, INT_MIN, 0x12345678]
    pairs = [(x, 0) for x in xs] + [(INT_MIN, -1)]
    sdiv = run_op(toolchain, CASE_BY_ID["i/i"], pairs)
    smod = run_op(toolchain, CASE_BY_ID["i%i"], pairs)
    udiv = run_op(toolchain, CASE_BY_ID["u/u"], pairs)
    umod = run_op(toolchain, CASE_BY_ID["u%u"], pairs)
    for k, x in enumerate(xs):
        assert to_s32(sdiv[k]) == (-1 if x >= 0 else 1), f"{x} / 0"
        assert to_s32(smod[k]) == to_s32(x), f"{x} % 0"
        assert udiv[k] == U32, f"{to_u32(x)}u / 0u"
        assert umod[k] == to_u32(x), f"{to_u32(x)}u % 0u"
    assert to_s32(sdiv[-1]) == INT_MIN and smod[-1] == 0, "INT_MIN / -1 and INT_MIN % -1"


# --- random expression trees ------------------------------------------------------------------
# Whole expressions mixing every operator, casts and ?: over int, unsigned, char and
# unsigned char variables; one kernel per example stores several of them per thread.
# Divisors are forced into 1..32767 and shift amounts into 0..31, so every tree is
# defined C.

EXPR_VARS = {"x": "int", "y": "int", "u": "unsigned", "w": "unsigned", "ch": "char",
             "uc": "unsigned char"}


@dataclass(frozen=True)
class Node:
    text: str
    ctype: str
    fn: Callable[[dict], int] = field(compare=False)


def _mk_binary(args) -> Node:
    op, a, b = args
    if op in ("/", "%"):
        t = promote(b.ctype)
        b = Node(f"({b.text} & 32767 | 1)", t, lambda env, f=b.fn, tb=b.ctype: (cast(f(env), promote(tb)) & 32767) | 1)
    elif op in ("<<", ">>"):
        t = promote(b.ctype)
        b = Node(f"({b.text} & 31)", t, lambda env, f=b.fn, tb=b.ctype: cast(f(env), promote(tb)) & 31)
    if op in ("<<", ">>"):
        t = promote(a.ctype)
    elif op in CMPS or op in LOGIC:
        t = "int"
    else:
        t = common(a.ctype, b.ctype)
    return Node(f"({a.text} {op} {b.text})", t,
                lambda env: binary_value(op, a.fn(env), a.ctype, b.fn(env), b.ctype))


def _mk_unary(args) -> Node:
    op, a = args
    t = "int" if op == "!" else promote(a.ctype)
    return Node(f"({op}{a.text})", t, lambda env: UNARY[op](cast(a.fn(env), promote(a.ctype)), a.ctype))


def _mk_cast(args) -> Node:
    ct, a = args
    return Node(f"(({ct}){a.text})", ct, lambda env: cast(a.fn(env), ct))


def _mk_cond(args) -> Node:
    c, a, b = args
    t = common(a.ctype, b.ctype)
    return Node(f"({c.text} ? {a.text} : {b.text})", t,
                lambda env: cast(a.fn(env), t) if c.fn(env) != 0 else cast(b.fn(env), t))


_leaves = st.one_of(
    st.sampled_from(sorted(EXPR_VARS)).map(lambda n: Node(n, EXPR_VARS[n], lambda env: env[n])),
    st.sampled_from(LITS).map(lambda k: Node(k.text, k.ctype, lambda env: k.value)),
)
expr_trees = st.recursive(
    _leaves,
    lambda kids: st.one_of(
        st.tuples(st.sampled_from(BINARY_OPS), kids, kids).map(_mk_binary),
        st.tuples(st.sampled_from(list(UNARY)), kids).map(_mk_unary),
        st.tuples(st.sampled_from(CASTS), kids).map(_mk_cast),
        st.tuples(kids, kids, kids).map(_mk_cond),
    ),
    max_leaves=10,
)
_i32s = st.one_of(st.sampled_from(EDGES), st.integers(INT_MIN, INT_MAX), st.integers(-300, 300))
env_rows = st.lists(st.tuples(_i32s, _i32s, _i32s, _i32s, st.integers(-128, 127), st.integers(0, 255)),
                    min_size=4, max_size=8)


@settings(max_examples=60, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@given(exprs=st.lists(expr_trees, min_size=1, max_size=6), rows=env_rows)
def test_random_expression_trees(toolchain, exprs, rows):
    fe, _, _ = toolchain
    m = len(exprs)
    src = ["__global__ void k(const int *X, const int *Y, const unsigned *U, const unsigned *W,",
           "                  const char *CH, const unsigned char *UC, unsigned *c, int n)", "{",
           "    int i = blockIdx.x * blockDim.x + threadIdx.x;", "    if (i >= n) return;",
           "    int x = X[i]; int y = Y[i]; unsigned u = U[i]; unsigned w = W[i];",
           "    char ch = CH[i]; unsigned char uc = UC[i];"]
    src += [f"    c[i * {m} + {j}] = {e.text};" for j, e in enumerate(exprs)]
    src.append("}")
    source = "\n".join(src) + "\n"
    try:
        prog = fe.compile_source(source, "expr.cu")
    except fe.CompileError as err:
        if "registers" in err.message or "instructions" in err.message:
            return  # a machine capacity, not a miscompilation
        raise
    n = len(rows)
    envs = [dict(zip(("x", "y", "u", "w", "ch", "uc"),
                     (cast(r[0], "int"), cast(r[1], "int"), cast(r[2], "unsigned"), cast(r[3], "unsigned"),
                      r[4], r[5]))) for r in rows]
    arrays = {"X": np.array([e["x"] for e in envs], np.int32), "Y": np.array([e["y"] for e in envs], np.int32),
              "U": np.array([e["u"] for e in envs], np.uint32), "W": np.array([e["w"] for e in envs], np.uint32),
              "CH": np.array([e["ch"] for e in envs], np.int8), "UC": np.array([e["uc"] for e in envs], np.uint8),
              "c": np.zeros(n * m, np.uint32)}
    got = launch_and_read(toolchain, prog, n, {"n": n}, arrays, "c")
    bad = []
    for i, env in enumerate(envs):
        for j, e in enumerate(exprs):
            want = to_u32(e.fn(env))
            if got[i * m + j] != want:
                bad.append(f"{e.text} with {env}: got {to_s32(got[i * m + j])}, want {to_s32(want)}")
    assert not bad, f"{len(bad)} wrong:\n  " + "\n  ".join(bad[:6])
