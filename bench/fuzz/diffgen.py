"""Random kernels free of undefined behaviour, for differential execution (Csmith's idea).

Each program is one `__global__ void k(...)` over the documented subset (docs/subset.md), with
its launch: the grid, the block, the input buffers and scalars.  Everything a C++ compiler
could read two ways is written so that it reads one way: division and remainder go through
guards (or a divisor that cannot be 0 or -1), shift amounts are masked, float-to-integer
conversions are clamped first, a NaN's sign never reaches copysignf/signbit and a NaN's bits
never reach an integer (NaN payloads and signs are the one IEEE freedom qgcc and x86 use
differently); signed overflow wraps (qgcc's documented rule, g++ -fwrapv).

Threads communicate only where the order cannot matter: each thread writes its own element of
the outputs; shared memory is written, then read after a barrier that every thread reaches
(barriers and warp operations stand at the kernel's top level, before any early exit, so they
are never divergent); atomics are commutative and their old values are not used.

The weighting favours what breaks: mixed-width integer arithmetic at the limits, float and
double at the rounding-sensitive points (fma, division, sqrt, conversions, min/max with NaN
and -0, subnormals).
"""

from __future__ import annotations

import contextlib
import random
import struct as _struct
from dataclasses import dataclass, field

import numpy as np

INTS = ["char", "unsigned char", "short", "unsigned short", "int", "unsigned", "long long", "unsigned long long"]
FLOATS = ["float", "double"]
NARROW = ("char", "unsigned char", "short", "unsigned short")  # promoted to int; converted to through int
WIDTH = {"bool": 1, "char": 8, "unsigned char": 8, "short": 16, "unsigned short": 16, "int": 32, "unsigned": 32,
         "long long": 64, "unsigned long long": 64, "float": 32, "double": 64}
SIGNED = {"char", "short", "int", "long long"}
DTYPE = {"bool": "?", "char": "i1", "unsigned char": "u1", "short": "i2", "unsigned short": "u2", "int": "i4",
         "unsigned": "u4", "long long": "i8", "unsigned long long": "u8", "float": "f4", "double": "f8"}
PROMOTED = {"bool": "int", "char": "int", "unsigned char": "int", "short": "int", "unsigned short": "int",
            "int": "int", "unsigned": "unsigned", "long long": "long long", "unsigned long long": "unsigned long long"}
HELPER_SUFFIX = {"int": "i", "unsigned": "u", "long long": "l", "unsigned long long": "ul"}
MINS = {"int": "(int)0x80000000", "long long": "(long long)0x8000000000000000ull"}

# Device helpers a program may call; each is part of the program's own text (qgcc compiles it too).
HELPERS = {
    "q_div_i": "__device__ int q_div_i(int a, int b) { return (b == 0 || (a == (int)0x80000000 && b == -1)) ? a : a / b; }",
    "q_mod_i": "__device__ int q_mod_i(int a, int b) { return (b == 0 || b == -1) ? a : a % b; }",
    "q_div_u": "__device__ unsigned q_div_u(unsigned a, unsigned b) { return b == 0u ? a : a / b; }",
    "q_mod_u": "__device__ unsigned q_mod_u(unsigned a, unsigned b) { return b == 0u ? a : a % b; }",
    "q_div_l": ("__device__ long long q_div_l(long long a, long long b) { return (b == 0 || "
                "(a == (long long)0x8000000000000000ull && b == -1)) ? a : a / b; }"),
    "q_mod_l": "__device__ long long q_mod_l(long long a, long long b) { return (b == 0 || b == -1) ? a : a % b; }",
    "q_div_ul": ("__device__ unsigned long long q_div_ul(unsigned long long a, unsigned long long b) "
                 "{ return b == 0ull ? a : a / b; }"),
    "q_mod_ul": ("__device__ unsigned long long q_mod_ul(unsigned long long a, unsigned long long b) "
                 "{ return b == 0ull ? a : a % b; }"),
    "q_bits": "__device__ unsigned q_bits(float x) { return x != x ? 0x7fffffffu : __float_as_uint(x); }",
    "q_bitsd": ("__device__ unsigned long long q_bitsd(double x) { return x != x ? 0x7fffffffffffffffull : "
                "(unsigned long long)__double_as_longlong(x); }"),
    "q_nn": "__device__ float q_nn(float x) { return x != x ? 1.0f : x; }",
    "q_nnd": "__device__ double q_nnd(double x) { return x != x ? 1.0 : x; }",
    # finite arguments for frexp (CUDA leaves the exponent of an infinity or a NaN unspecified)
    "q_finf": "__device__ float q_finf(float x) { return x - x == 0.0f ? x : 1.5f; }",
    "q_find": "__device__ double q_find(double x) { return x - x == 0.0 ? x : 1.5; }",
    "q_mix": ("__device__ unsigned q_mix(unsigned h, unsigned long long x) { "
              "return (h ^ (unsigned)x ^ (unsigned)(x >> 32)) * 16777619u + 1u; }"),
}

F32_SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 3.0, 0.1, 1.0 / 3, 1e-45, -1e-45, 1.1754942e-38, 1.1754944e-38,
               5.877472e-39, 3.4028235e38, -3.4028235e38, 16777216.0, 16777217.0, 8388608.5, 2147483648.0,
               -2147483904.0, 4294967296.0, 1e10, 0.75, 1.5, 2.5, -2.5, 65504.0]
F64_SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, 0.1, 1.0 / 3, 5e-324, 2.2250738585072009e-308, 2.2250738585072014e-308,
               1.7976931348623157e308, 9007199254740992.0, 9007199254740993.0, 4503599627370496.5, 2.5, -2.5,
               1e300, 1e-300, 3.0, 2147483648.0, 9.2233720368547758e18]
INT_EDGES = [0, 1, 2, 3, 7, 8, 15, 16, 31, 32, 33, 63, 64, 100, 127, 128, 255, 256, 0x7FFF, 0x8000, 0xFFFF, 0x10000,
             0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0x100000000, 0x7FFFFFFFFFFFFFFF, 0x8000000000000000,
             0xFFFFFFFFFFFFFFFF, 0xFFFFFFFE, 0x80000001, 0x55555555, 0xAAAAAAAA, 0xDEADBEEF, 1000000007]


RAW_LITERALS = ["3000000000", "0x80000000", "2147483648", "0xffffffff", "4294967295u", "0x7fffffffffffffff",
                "18446744073709551615ull", "(-2147483648)", "1l", "017", "0b1011", "'a'", "'\\n'", "'\\xff'",
                "0xFFFFFFFFul", "9223372036854775807", "0x8000000000000000", "(-1 < 2147483648)", "(-1 < 1u)",
                "(0u - 1)", "(1ull << 63)", "100000u", "0XaBcU", "1LL"]

# Float arithmetic with a float compare or FMIN/FMAX and SHFL/VOTE in one program once overflowed
# the network's residual stream ("does not fit in 45 layers"); the linker's sinking pass
# (qgcc.link.sink) fits them, so network runs generate them again.  True would leave floats out of
# network programs with warp operations (a program that does not link is a crash either way).
AVOID_LINK_LIMIT = False


def wrap(v: int, t: str) -> int:
    """v as a value of integer type t (two's complement for the signed ones)."""
    w = WIDTH[t]
    v &= (1 << w) - 1
    if t in SIGNED and v >> (w - 1):
        v -= 1 << w
    return v


def int_lit(v: int, t: str) -> str:
    """A literal that has exactly type t and value v in both compilers."""
    v = wrap(v, t)
    if t == "bool":
        return "true" if v else "false"
    if t in NARROW:
        return f"({t}){v}"
    if t == "int":
        return f"{MINS['int']}" if v == -(1 << 31) else (str(v) if v >= 0 else f"({v})")
    if t == "unsigned":
        return f"{v}u" if v < 1000 else f"0x{v:x}u"
    if t == "long long":
        return MINS["long long"] if v == -(1 << 63) else (f"{v}ll" if v >= 0 else f"({v}ll)")
    return f"{v}ull" if v < 1000 else f"0x{v:x}ull"


def f32_lit(v: float) -> str:
    f = np.float32(v)
    if np.isnan(f):
        return "__int_as_float(0x7fc00000)"
    if np.isinf(f):
        return "__int_as_float(0x7f800000)" if f > 0 else "__int_as_float((int)0xff800000u)"
    text = np.format_float_scientific(f, unique=True, trim="-")
    return f"{text}f" if not text.startswith("-") else f"({text}f)"


def f64_lit(v: float) -> str:
    if v != v:
        return "__longlong_as_double(0x7ff8000000000000ll)"
    if v in (float("inf"), float("-inf")):
        return "__longlong_as_double(0x7ff0000000000000ll)" if v > 0 else "(-__longlong_as_double(0x7ff0000000000000ll))"
    text = repr(v)
    if "e" not in text and "." not in text:
        text += ".0"
    return text if not text.startswith("-") else f"({text})"


@dataclass
class StructDef:
    name: str
    members: list[tuple[str, str, int]]  # (name, scalar type, array length or 0)
    # get() const, set(v), binary and unary operator+/-, += and == on the first scalar member (for a
    # vector type: +, unary -, += and == on every member, as free functions)
    methods: bool = False
    builtin: bool = False  # a CUDA vector type (int2, float4, ...): no definition in the text
    # a class constant in the body: `enum { K = k };` (get() adds K) and `static const int L = n;`
    # sizing the first array member; None: neither
    kval: int | None = None
    instance: bool = False  # an instance of a class template (members and methods its own)

    def first(self) -> tuple[str, str]:
        return next((n, t) for n, t, k in self.members if not k)

    def text(self) -> str:
        if self.instance:
            return ""
        sized = next((n for n, t, k in self.members if k), None) if self.kval is not None else None
        body = " ".join((f"{t} {n}[L];" if n == sized else f"{t} {n}[{k}];") if k else f"{t} {n};"
                        for n, t, k in self.members)
        if sized is not None:
            k = next(k for n, t, k in self.members if n == sized)
            body = f"static const int L = {k}; " + body
        if self.kval is not None:
            body = f"enum {{ K = {self.kval} }}; " + body
        if self.methods:
            n, t = self.first()
            one = "K" if self.kval is not None else "1"
            body += (f" __device__ {t} get() const {{ return ({t})({n} + ({t}){one}); }}"
                     f" __device__ void set({t} v) {{ {n} = v; }}"
                     f" __device__ {self.name} operator+(const {self.name} &o) const {{ {self.name} r = *this; "
                     f"r.{n} = ({t})({n} + o.{n}); return r; }}"
                     f" __device__ {self.name} operator-() const {{ {self.name} r = *this; r.{n} = ({t})(-{n}); "
                     f"return r; }}"
                     f" __device__ {self.name} &operator+=(const {self.name} &o) {{ {n} = ({t})({n} + o.{n}); "
                     f"return *this; }}"
                     f" __device__ bool operator==(const {self.name} &o) const {{ return {n} == o.{n}; }}")
        if self.builtin:  # CUDA predefines no operators on vector types: free functions, as helper_math.h's
            if not self.methods:
                return ""
            ms = [m for m, _, _ in self.members]
            add = ", ".join(f"a.{m} + b.{m}" for m in ms)
            return (f"__device__ {self.name} operator+({self.name} a, {self.name} b) {{ return make_{self.name}({add}); }}\n"
                    f"__device__ {self.name} operator-({self.name} a) {{ return make_{self.name}("
                    + ", ".join(f"-a.{m}" for m in ms) + "); }\n"
                    f"__device__ {self.name} &operator+=({self.name} &a, {self.name} b) {{ "
                    + " ".join(f"a.{m} += b.{m};" for m in ms) + " return a; }\n"
                    f"__device__ bool operator==({self.name} a, {self.name} b) {{ return "
                    + " && ".join(f"a.{m} == b.{m}" for m in ms) + "; }")
        return f"struct {self.name} {{ {body} }};"

    def dtype(self) -> np.dtype:
        return np.dtype([(n, DTYPE[t], (k,)) if k else (n, DTYPE[t]) for n, t, k in self.members])


@dataclass
class UnionDef:
    """`union U0 { unsigned u[k]; int i[k]; float f[k]; }` in some member order."""
    name: str
    k: int
    members: list[tuple[str, str]]


@dataclass
class FunctorDef:
    """`struct F0 { T k; T operator()(T a, T b) const; }`."""
    name: str
    t: str


@dataclass
class Buffer:
    name: str
    ctype: str  # a scalar type or a struct name
    data: np.ndarray
    const: bool = False
    struct: StructDef | None = None
    atomic: bool = False  # only atomics touch it (never read or stored)


@dataclass
class Scalar:
    name: str
    ctype: str
    value: object


@dataclass
class Program:
    """A kernel and its launch; `source` is the whole .cu text."""

    seed: int
    source: str
    grid: int
    block: int
    buffers: list[Buffer]
    scalars: list[Scalar]
    structs: list[StructDef]
    features: set[str] = field(default_factory=set)
    kernel: str = "k"
    block_shape: tuple = ()  # (x,) or (x, y)
    shared_bytes: int = 0  # the launch's dynamic shared memory
    # __device__ variables: (name, type, element count or 0 for a scalar, initialiser list text);
    # the oracle rewrites them before each run, as qgcc's launcher does before each launch
    globals: list = field(default_factory=list)

    def args(self) -> dict:
        out: dict = {b.name: b.data.copy() for b in self.buffers}
        for s in self.scalars:
            out[s.name] = s.value
        return out


def random_values(rng: random.Random, t: str, n: int) -> np.ndarray:
    """n values of scalar type t, a quarter of them at the interesting edges."""
    if t == "float":
        vals = []
        for _ in range(n):
            r = rng.random()
            if r < 0.45:
                vals.append(np.float32(rng.choice(F32_SPECIAL)))
            elif r < 0.55:
                vals.append(np.array([rng.getrandbits(32)], np.uint32).view(np.float32)[0])
            elif r < 0.6:
                vals.append(np.float32(rng.choice([np.nan, np.inf, -np.inf])))
            elif r < 0.7:  # subnormal
                vals.append(np.array([rng.getrandbits(23) | (rng.getrandbits(1) << 31)], np.uint32).view(np.float32)[0])
            else:
                vals.append(np.float32(rng.uniform(-100, 100) * 2.0 ** rng.randint(-10, 10)))
        return np.array(vals, np.float32)
    if t == "double":
        vals = []
        for _ in range(n):
            r = rng.random()
            if r < 0.45:
                vals.append(rng.choice(F64_SPECIAL))
            elif r < 0.55:
                vals.append(_struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))[0])
            elif r < 0.6:
                vals.append(rng.choice([float("nan"), float("inf"), float("-inf")]))
            else:
                vals.append(rng.uniform(-100, 100) * 2.0 ** rng.randint(-30, 30))
        return np.array(vals, np.float64)
    if t == "bool":
        return np.array([rng.random() < 0.5 for _ in range(n)], np.bool_)
    vals = []
    for _ in range(n):
        r = rng.random()
        if r < 0.35:
            v = rng.choice(INT_EDGES) * rng.choice([1, 1, -1])
        elif r < 0.6:
            v = rng.randint(-20, 20)
        else:
            v = rng.getrandbits(WIDTH[t])
        vals.append(wrap(v, t))
    return np.array(vals, DTYPE[t])


class Gen:
    """One program's generator state: the variables in scope and the program's parts."""

    def __init__(self, seed: int, *, neural: bool = False):
        self.seed = seed
        self.r = random.Random(seed)
        self.neural = neural  # smaller programs: each network step is a millisecond
        self.counter = 0
        self.scopes: list[list[tuple[str, str, bool]]] = [[]]  # (name, type, assignable)
        self.arrays: list[list[tuple[str, str, int]]] = [[]]  # local arrays
        self.svars: list[list[tuple[str, StructDef]]] = [[]]
        self.features: set[str] = set()
        self.structs: list[StructDef] = []
        self.funcs: list[str] = []
        self.func_sigs: list[tuple[str, str, list[str]]] = []  # (name, result, param types)
        self.templates: list[str] = []  # names of `template <typename T> T f(T, T)`
        self.budget = 0
        self.hvar = "h"
        self.no_fminmax = False
        self.no_float = False
        self.shared_bytes = 0  # dynamic shared memory (one extern __shared__ array at most)
        self.consts: list[tuple[str, str, int]] = []
        self.ptrs: list[tuple[str, str]] = []  # kernel-level `const T *p = in + i;`
        self.cptrs: list[tuple[str, str, int]] = []  # `const U *pc = (const U *)in;` (same-size U)
        self.optrs: list[tuple[str, str, bool]] = []  # `U *qc = (U *)out;` (name, U, readable)
        self.uvars: list[list[tuple[str, "UnionDef"]]] = [[]]  # union locals
        self.fvars: list[list[tuple[str, "FunctorDef"]]] = [[]]  # functor locals
        self.unions: list[UnionDef] = []
        self.functors: list[FunctorDef] = []
        self.enums: list[tuple[str, int]] = []  # enumerator expressions (E_a, E1::b) and values
        self.ctemplate = False  # `template <typename T, int N> struct CT0` defined
        self.globals: list[tuple[str, str, int]] = []  # __device__ arrays (one element a thread) / scalars
        self.ns = ""  # the device functions' namespace qualifier ("N0::")
        self.in_func = False

    # ---------------------------------------------------------------- names and scopes
    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def push(self):
        self.scopes.append([])
        self.arrays.append([])
        self.svars.append([])
        self.uvars.append([])
        self.fvars.append([])

    def pop(self):
        self.scopes.pop()
        self.arrays.pop()
        self.svars.pop()
        self.uvars.pop()
        self.fvars.pop()

    LOCAL_STATE = ("scopes", "arrays", "svars", "uvars", "fvars", "bufs", "scalars", "ptrs", "cptrs", "optrs",
                   "in_func", "hvar")

    @contextlib.contextmanager
    def isolated(self, params: list[tuple[str, str, bool]], hvar: str):
        """A function body's scope (a device function, a lambda): only its parameters, no
        buffers, no kernel locals (they are not visible there)."""
        saved = {k: getattr(self, k) for k in self.LOCAL_STATE}
        self.scopes, self.arrays, self.svars, self.uvars, self.fvars = [list(params)], [[]], [[]], [[]], [[]]
        self.bufs, self.scalars, self.ptrs, self.cptrs, self.optrs = [], [], [], [], []
        self.in_func, self.hvar = True, hvar
        try:
            yield
        finally:
            for k, v in saved.items():
                setattr(self, k, v)

    def vars(self, pred=lambda n, t, a: True):
        return [(n, t, a) for s in self.scopes for (n, t, a) in s if pred(n, t, a)]

    def all_arrays(self):
        return [a for s in self.arrays for a in s]

    def all_svars(self):
        return [a for s in self.svars for a in s]

    # ---------------------------------------------------------------- expressions
    def expr(self, t: str, d: int) -> str:
        self.budget -= 1
        if self.no_float and t in FLOATS:
            return "1.5f" if t == "float" else "0.25"
        if d <= 0 or self.budget <= 0 or self.r.random() < 0.25:
            return self.leaf(t)
        if t == "float":
            return self.float_expr(d)
        if t == "double":
            return self.double_expr(d)
        if t == "bool":
            return f"(bool)({self.expr(self.r.choice(INTS + ['float']), d - 1)})"
        return self.int_expr(t, d)

    def leaf(self, t: str) -> str:
        r = self.r
        options = []
        vs = self.vars(lambda n, vt, a: vt == t)
        if vs:
            options += [lambda: r.choice(vs)[0]] * 4
        other = self.vars(lambda n, vt, a: vt in INTS) if t in INTS else []
        if other:
            options.append(lambda: f"({t}){r.choice(other)[0]}")
        bufs = [b for b in self.bufs if b.struct is None and b.ctype == t and not b.atomic]
        if bufs:
            options += [lambda: self.buf_read(r.choice(bufs))] * 3
        sbufs = [b for b in self.bufs if b.struct is not None]
        members = [(b, m) for b in sbufs for m in b.struct.members if m[1] == t]
        if members:
            options.append(lambda: self.member_read(*r.choice(members)))
        consts = [c for c in self.consts if c[1] == t]
        if consts:
            options.append(lambda: (lambda c: f"{c[0]}[{self.arr_index(c[2])}]")(r.choice(consts)))
        ptrs = [p for p in self.ptrs if p[1] == t]
        if ptrs:
            options.append(lambda: (lambda p: r.choice([f"*{p[0]}", f"{p[0]}[0]"]))(r.choice(ptrs)))
        arrs = [a for a in self.all_arrays() if a[1] == t]
        if arrs:
            options += [lambda: self.arr_read(r.choice(arrs))] * 2
        sv = [(n, s, m) for n, s in self.all_svars() for m in s.members if m[1] == t]
        if sv:
            options.append(lambda: self.svar_read(*r.choice(sv)))
        getters = [n for n, s in self.all_svars() if s.methods and not s.builtin and s.first()[1] == t]
        if getters:
            options.append(lambda: f"{r.choice(getters)}.get()")
        scal = [s for s in self.scalars if s.ctype == t]
        if scal:
            options.append(lambda: r.choice(scal).name)
        options += self.cxx_leaves(t)
        if t in INTS:
            ids = ['threadIdx.x', 'blockIdx.x', 'blockDim.x', 'gridDim.x'] + ([] if self.in_func else ['tid', 'gid'] * 2)
            options.append(lambda: f"({t}){r.choice(ids)}")
        options += [lambda: self.literal(t)] * (1 if len(options) > 2 else 3)
        return r.choice(options)()

    def literal(self, t: str) -> str:
        r = self.r
        if t == "float":
            return f32_lit(r.choice(F32_SPECIAL) * r.choice([1, 1, -1]) if r.random() < 0.85 else r.uniform(-10, 10))
        if t == "double":
            return f64_lit(r.choice(F64_SPECIAL) * r.choice([1, 1, -1]) if r.random() < 0.7 else r.uniform(-10, 10))
        if t == "bool":
            return r.choice(["true", "false"])
        if r.random() < 0.15:  # C++'s literal typing: the cast gives t whatever the literal's own type
            return f"({t}){r.choice(RAW_LITERALS)}"
        v = r.choice(INT_EDGES) * r.choice([1, -1]) if r.random() < 0.6 else r.randint(-9, 9)
        return int_lit(v, t)

    def index(self, n: int) -> str:
        """An in-bounds index into n elements, usually this thread's own element."""
        r = self.r.random()
        if r < 0.6 or n == 0:
            return "gid"
        e = self.expr(self.r.choice(["int", "unsigned", "unsigned char"]), 1)
        return f"(unsigned)({e}) % {n}u"

    def buf_read(self, b: Buffer) -> str:
        n = len(b.data)
        if b.const:
            return f"{b.name}[{self.index(n)}]"
        return f"{b.name}[gid]"  # outputs: only this thread's element (no race)

    def member_read(self, b: Buffer, m) -> str:
        name, t, k = m
        base = f"{b.name}[{self.index(len(b.data)) if b.const else 'gid'}].{name}"
        return f"{base}[{self.arr_index(k)}]" if k else base

    def arr_index(self, k: int) -> str:
        e = self.expr(self.r.choice(["int", "unsigned"]), 1)
        if k & (k - 1) == 0:
            return f"({e}) & {k - 1}"
        return f"(unsigned)({e}) % {k}u"

    def arr_read(self, a) -> str:
        name, t, k, k2 = a
        return f"{name}[{self.arr_index(k)}]" + (f"[{self.arr_index(k2)}]" if k2 else "")

    def svar_read(self, name, s, m) -> str:
        mn, t, k = m
        return f"{name}.{mn}[{self.arr_index(k)}]" if k else f"{name}.{mn}"

    def any_int(self) -> str:
        return self.r.choice(INTS + ["int", "unsigned", "int", "unsigned"])

    def int_expr(self, t: str, d: int) -> str:
        r = self.r
        k = r.random()
        same = r.random() < 0.6
        ta = t if same else self.any_int()
        tb = t if same else self.any_int()
        if k < 0.30:
            op = r.choice(["+", "-", "*", "&", "|", "^", "+", "-", "*"])
            return f"({t})({self.expr(ta, d - 1)} {op} {self.expr(tb, d - 1)})"
        if k < 0.40:
            a = self.expr(ta, d - 1)
            mask = 63 if WIDTH[PROMOTED[ta]] == 64 else 31
            amt = self.expr(tb, d - 1) if r.random() < 0.6 else str(r.randint(0, mask))
            op = r.choice(["<<", ">>"])
            return f"({t})({a} {op} (({amt}) & {mask}))"
        if k < 0.50:
            return f"({t}){self.division(ta, d)}"
        if k < 0.58:
            op = r.choice(["<", "<=", ">", ">=", "==", "!="])
            ct = r.choice([ta, "float", "double"] if r.random() < 0.3 else [ta])
            return f"({t})({self.expr(ct, d - 1)} {op} {self.expr(ct if r.random() < 0.7 else tb, d - 1)})"
        if k < 0.63:
            return f"({t})({self.expr(ta, d - 1)} {r.choice(['&&', '||'])} {self.expr(tb, d - 1)})"
        if k < 0.68:
            return f"({t})({r.choice(['-', '~', '!'])}{self.expr(ta, d - 1)})"
        if k < 0.74:
            return f"({self.expr('bool', d - 1)} ? {self.expr(t, d - 1)} : {self.expr(t, d - 1)})"
        if k < 0.82:
            return self.float_to_int(t, d)
        if k < 0.88:
            return f"({t}){self.intrinsic(d)}"
        return self.call(t, d)

    def division(self, t: str, d: int) -> str:
        """Division or remainder in promoted type t, never by 0 (nor MIN / -1)."""
        r = self.r
        p = PROMOTED[t]
        a, b = self.expr(t, d - 1), self.expr(t, d - 1)
        op = r.choice(["/", "%"])
        k = r.random()
        if k < 0.45:
            name = ("q_div_" if op == "/" else "q_mod_") + HELPER_SUFFIX[p]
            return f"{name}(({p})({a}), ({p})({b}))"
        if k < 0.75:  # a constant divisor: the strength-reduced paths
            c = r.choice([1, 2, 3, 4, 7, 8, 10, 16, 255, 256, 65536, 1000000007, -1, -2, -3, -8, -16])
            if p in ("unsigned", "unsigned long long"):
                c = abs(c)
            if c == -1 and p in SIGNED:
                c = -3
            return f"(({p})({a}) {op} {int_lit(c, p)})"
        if p in SIGNED:  # a divisor in 1 .. 256
            # Summed in unsigned: with -fwrapv, GCC 12 rewrites `x - a / (b + 1)` and `-(a / (b + 1))`
            # as a division by `~b` (even at -O0), which for a == MIN and b == 0 divides by -1 and
            # traps on x86 (seed 8712002); it does not negate through a change of signedness.
            return f"(({p})({a}) {op} (({p})((unsigned)(({p})({b}) & 255) + 1u)))"
        return f"(({p})({a}) {op} (({p})({b}) | 1u))"

    def float_to_int(self, t: str, d: int) -> str:
        """A float or double converted to t after clamping into t's range (C leaves the rest undefined)."""
        r = self.r
        if self.no_float:
            return f"({t}){self.intrinsic(d)}"
        ft = "float" if r.random() < 0.75 else "double"
        e = self.expr(ft, d - 1)
        w = WIDTH[t]
        if t in ("unsigned", "unsigned long long"):
            lo, hi = 0.0, (4e9 if w == 32 else 1.8e19)
        elif t in ("int",) + NARROW:
            lo, hi = -2.1e9, 2.1e9
        else:
            lo, hi = -9.2e18, 9.2e18
        if ft == "float" and self.no_fminmax:
            clamped = f"fmin(fmax((double)({e}), {f64_lit(lo)}), {f64_lit(hi)})"
        elif ft == "float":
            clamped = f"fminf(fmaxf({e}, {f32_lit(lo)}), {f32_lit(hi)})"
        else:
            clamped = f"fmin(fmax({e}, {f64_lit(lo)}), {f64_lit(hi)})"
        via = "(int)" if t in NARROW else ""
        return f"({t}){via}{clamped}"

    def intrinsic(self, d: int) -> str:
        r = self.r
        u = lambda: self.expr("unsigned", d - 1)  # noqa: E731
        i = lambda: self.expr("int", d - 1)  # noqa: E731
        ll = lambda: self.expr("long long", d - 1)  # noqa: E731
        ull = lambda: self.expr("unsigned long long", d - 1)  # noqa: E731
        f = lambda: self.expr("float", d - 1)  # noqa: E731
        choices = [
            lambda: f"__popc({u()})", lambda: f"__clz({i()})", lambda: f"__ffs({i()})", lambda: f"__brev({u()})",
            lambda: f"__byte_perm({u()}, {u()}, {u()})", lambda: f"__mulhi({i()}, {i()})",
            lambda: f"__umulhi({u()}, {u()})", lambda: f"__mul24({i()}, {i()})", lambda: f"__umul24({u()}, {u()})",
            lambda: f"__sad({i()}, {i()}, {u()})", lambda: f"__usad({u()}, {u()}, {u()})",
            lambda: f"min({self.expr(self.any_int(), d - 1)}, {self.expr(self.any_int(), d - 1)})",
            lambda: f"max({self.expr(self.any_int(), d - 1)}, {self.expr(self.any_int(), d - 1)})",
            lambda: f"abs({i()})", lambda: f"__popcll({ull()})", lambda: f"__clzll({ll()})",
            lambda: f"__ffsll({ll()})", lambda: f"__brevll({ull()})", lambda: f"__umul64hi({ull()}, {ull()})",
            lambda: f"__mul64hi({ll()}, {ll()})", lambda: f"llmin({ll()}, {ll()})", lambda: f"ullmax({ull()}, {ull()})",
            lambda: f"llabs({ll()})", lambda: f"q_bits({f()})", lambda: f"isnan({f()})", lambda: f"isinf({f()})",
            lambda: f"isfinite({f()})", lambda: f"signbit(q_nn({f()}))",
            lambda: f"q_bitsd({self.expr('double', d - 1)})",
        ]
        if self.no_float:
            choices = choices[:-6]  # the float and double ones are the last six
        return r.choice(choices)()

    def float_expr(self, d: int) -> str:
        r = self.r
        f = lambda: self.expr("float", d - 1)  # noqa: E731
        k = r.random()
        if k < 0.35:
            return f"({f()} {r.choice(['+', '-', '*', '/', '+', '*'])} {f()})"
        if self.no_fminmax and k < 0.5:
            return f"({f()} {r.choice(['+', '-', '*'])} {f()})"
        choices = [
            lambda: f"fmaf({f()}, {f()}, {f()})", lambda: f"sqrtf({f()})",
        ] + ([] if self.no_fminmax else [
            lambda: f"fminf({f()}, {f()})", lambda: f"fmaxf({f()}, {f()})", lambda: f"min({f()}, {f()})",
            lambda: f"max({f()}, {f()})"]) + [
            lambda: f"fabsf({f()})", lambda: f"(-{f()})", lambda: f"floorf({f()})", lambda: f"ceilf({f()})",
            lambda: f"truncf({f()})", lambda: f"roundf({f()})", lambda: f"rintf({f()})",
            lambda: f"copysignf({f()}, q_nn({f()}))", lambda: f"fdimf({f()}, {f()})", lambda: f"fmodf({f()}, {f()})",
            lambda: f"remainderf({f()}, {f()})", lambda: f"__saturatef({f()})",
            lambda: f"ldexpf({f()}, (int)({self.expr('int', d - 1)}) % 300)",
            lambda: f"(float)({self.expr(self.any_int(), d - 1)})", lambda: f"(float)({self.expr('double', d - 1)})",
            lambda: f"({self.expr('bool', d - 1)} ? {f()} : {f()})", lambda: f"__fdiv_rn({f()}, {f()})",
            lambda: f"__fmaf_rn({f()}, {f()}, {f()})", lambda: f"__uint_as_float({self.expr('unsigned', d - 1)})",
            lambda: f"{r.choice(['__fadd_rn', '__fsub_rn', '__fmul_rn'])}({f()}, {f()})",
            lambda: f"{r.choice(['__fsqrt_rn', '__frcp_rn', 'nearbyintf'])}({f()})",
            lambda: f"{r.choice(['scalbnf', 'ldexpf'])}({f()}, {self.expr('int', d - 1)})",
            lambda: f"(float)({f()} * {f64_lit(r.choice([0.1, 0.3, 1.0 / 3, 1e-30, 3e38]))})",
            lambda: f"({f()} {r.choice(['+', '-', '*', '/'])} {self.expr(self.any_int(), d - 1)})",
            lambda: self.call("float", d), lambda: self.call("float", d),
        ]
        return r.choice(choices)()

    def double_expr(self, d: int) -> str:
        r = self.r
        g = lambda: self.expr("double", d - 1)  # noqa: E731
        k = r.random()
        if k < 0.4:
            return f"({g()} {r.choice(['+', '-', '*', '/'])} {g()})"
        choices = [
            lambda: f"sqrt({g()})", lambda: f"fmin({g()}, {g()})", lambda: f"fmax({g()}, {g()})", lambda: f"fabs({g()})",
            lambda: f"(-{g()})", lambda: f"floor({g()})", lambda: f"ceil({g()})", lambda: f"trunc({g()})",
            lambda: f"round({g()})", lambda: f"(double)({self.expr(self.any_int(), d - 1)})",
            lambda: f"(double)({self.expr('float', d - 1)})", lambda: f"({self.expr('bool', d - 1)} ? {g()} : {g()})",
            lambda: f"__longlong_as_double({self.expr('long long', d - 1)})",
            lambda: f"({self.expr('float', d - 1)} {r.choice(['+', '*'])} {g()})",
            lambda: f"{r.choice(['ldexp', 'scalbn'])}({g()}, {self.expr('int', d - 1)})",
            lambda: f"{r.choice(['ldexp', 'scalbn'])}({g()}, (int)({self.expr('int', d - 1)}) % 2100)",
            lambda: f"{r.choice(['__dadd_rn', '__dsub_rn', '__dmul_rn', '__ddiv_rn'])}({g()}, {g()})",
            lambda: f"__dsqrt_rn({g()})", lambda: f"min({g()}, {g()})", lambda: f"max({g()}, {g()})",
        ]
        return r.choice(choices)()

    def call(self, t: str, d: int) -> str:
        fs = [f for f in self.func_sigs if f[1] == t]
        if self.templates and self.r.random() < 0.4:
            name = self.r.choice(self.templates)
            tt = t if t in ("int", "unsigned", "float", "long long", "unsigned long long") else "int"
            explicit = self.r.random() < 0.5
            call = f"{name}<{tt}>" if explicit else name
            arity = 2 if name == "t0" else self.r.choice([1, 3])
            args = ", ".join(f"({tt})({self.expr(tt, d - 1)})" for _ in range(arity))
            return f"({t}){call}({args})"
        if not fs:
            return self.leaf(t)
        name, res, params = self.r.choice(fs)
        args = ", ".join(f"({p})({self.expr(p, d - 1)})" for p in params)
        return f"{self.ns}{name}({args})"

    # ---------------------------------------------------------------- statements
    def ty(self, choices: list[str]) -> str:
        """One of the types, floats left out where the program must not use them."""
        if self.no_float:
            choices = [c for c in choices if c not in FLOATS] or ["int"]
        return self.r.choice(choices)

    def scalar_type(self) -> str:
        if self.no_float:
            return self.ty(INTS + ["int", "unsigned"])
        r = self.r.random()
        if r < 0.35:
            return self.r.choice(["int", "unsigned"])
        if r < 0.55:
            return "float"
        if r < 0.7:
            return self.r.choice(["long long", "unsigned long long"])
        if r < 0.8:
            return self.r.choice(["char", "unsigned char", "short", "unsigned short"])
        if r < 0.88 and not self.neural:
            return "double"
        return self.r.choice(["int", "float", "unsigned"])

    def depth(self) -> int:
        return self.r.choice([1, 2, 2, 3])

    def stmts(self, out: list[str], ind: str, n: int, level: int, loop: str | None = None, fn: bool = False):
        for _ in range(n):
            self.stmt(out, ind, level, loop, fn)

    def stmt(self, out: list[str], ind: str, level: int, loop: str | None, fn: bool):
        r = self.r
        self.budget = 14
        if r.random() < 0.2 and self.cxx_stmt(out, ind, level, loop, fn):
            return
        self.budget = 14
        k = r.random()
        assignable = self.vars(lambda n, t, a: a)
        if k < 0.22 or not assignable:
            t = self.scalar_type()
            name = self.fresh("v")
            out.append(f"{ind}{t} {name} = {self.expr(t, self.depth())};")
            self.scopes[-1].append((name, t, True))
            return
        if k < 0.42:
            n, t, _ = r.choice(assignable)
            if t in INTS and r.random() < 0.4:
                op = r.choice(["+=", "-=", "*=", "^=", "|=", "&="])
                out.append(f"{ind}{n} {op} {self.expr(t, self.depth())};")
            elif t in INTS and r.random() < 0.2:
                out.append(f"{ind}{n}{r.choice(['++', '--'])};")
            elif t in FLOATS and r.random() < 0.3:
                out.append(f"{ind}{n} {r.choice(['+=', '-=', '*=', '/='])} {self.expr(t, self.depth())};")
            else:
                out.append(f"{ind}{n} = {self.expr(t, self.depth())};")
            return
        if k < 0.55 and not fn:
            self.store(out, ind)
            return
        if k < 0.63 and level < 3:
            out.append(f"{ind}if ({self.expr('bool', 2)}) {{")
            self.push()
            self.stmts(out, ind + "    ", r.randint(1, 3), level + 1, loop, fn)
            self.sink(out, ind + "    ")
            self.pop()
            if r.random() < 0.5:
                out.append(f"{ind}}} else {{")
                self.push()
                self.stmts(out, ind + "    ", r.randint(1, 2), level + 1, loop, fn)
                self.sink(out, ind + "    ")
                self.pop()
            out.append(f"{ind}}}")
            return
        if k < 0.70 and level < 3:
            self.loop(out, ind, level, fn)
            return
        if k < 0.75 and loop is not None:
            kw = r.choice(["break", "continue"]) if loop == "for" else "break"
            out.append(f"{ind}if ({self.expr('bool', 1)}) {kw};")
            return
        if k < 0.81:
            self.local_array(out, ind)
            return
        if k < 0.91 and self.structs:
            self.struct_stmt(out, ind)
            return
        if k < 0.95 and self.void_funcs:
            name, params = r.choice(self.void_funcs)
            refs = [v for v in assignable if v[1] == params[0]]
            if refs:
                out.append(f"{ind}{name}({r.choice(refs)[0]}, ({params[1]})({self.expr(params[1], 2)}));")
                return
        if k >= 0.965 and level < 3:
            self.switch(out, ind, level, loop, fn)
            return
        t = self.scalar_type()
        name = self.fresh("v")
        out.append(f"{ind}{t} {name} = {self.expr(t, self.depth())};")
        self.scopes[-1].append((name, t, True))

    def switch(self, out: list[str], ind: str, level: int, loop: str | None, fn: bool):
        """A switch over a small integer: distinct case values (some never hit), bodies in braces
        (a declaration may not be jumped over), some ending in `break`, the others falling
        through; `break` in a body's statements leaves the switch."""
        r = self.r
        t = r.choice(["int", "unsigned", "char", "unsigned char", "int", "short", "unsigned short"])
        k = r.choice([2, 3, 4, 8])
        cond = f"({t})(({self.expr(t, 1)}) & {int_lit(k - 1, t) if t in ('int', 'unsigned') else k - 1})"
        if t == "int" and r.random() < 0.3:
            cond = f"({self.expr('int', 1)}) % {k}"  # negative values too
        values = r.sample([v for v in range(-k + 1, k + 2)] if t in ("int", "char", "short") else list(range(k + 2)),
                          r.randint(1, min(4, k + 1)))
        if t in ("char", "unsigned char") and min(values) >= 0 and r.random() < 0.3:
            values = [f"'\\{v:o}'" for v in values]  # a character constant
        labels = [f"case {v}" for v in values]
        if r.random() < 0.6:
            labels.insert(r.randint(0, len(labels)), "default")
        out.append(f"{ind}switch ({cond}) {{")
        for label in labels:
            out.append(f"{ind}{label}: {{")
            self.push()
            self.stmts(out, ind + "    ", r.randint(1, 2), level + 1, "switch", fn)
            self.sink(out, ind + "    ")
            self.pop()
            out.append(f"{ind}}}" + (" break;" if r.random() < 0.7 else ""))
        out.append(f"{ind}}}")
        self.features.add("switch")

    def assign_op(self, t: str) -> str:
        """A compound assignment operator that is defined for any operand values of type t."""
        r = self.r.random()
        if r < 0.5 or t == "bool":
            return "="
        if t in FLOATS:
            return self.r.choice(["+=", "-=", "*=", "/="])
        return self.r.choice(["+=", "-=", "*=", "^=", "|=", "&="])

    def sink(self, out: list[str], ind: str):
        """Fold every value of the innermost scope into the hash, so that no computation is dead."""
        h = self.hvar

        def mix(x: str, t: str) -> str:
            if t == "float":
                return f"{ind}{h} = q_mix({h}, (unsigned long long)q_bits({x}));"
            if t == "double":
                return f"{ind}{h} = q_mix({h}, q_bitsd({x}));"
            return f"{ind}{h} = q_mix({h}, (unsigned long long)({x}));"
        for n, t, _ in self.scopes[-1]:
            if n not in ("tid", "gid"):
                out.append(mix(n, t))
        for n, t, k, k2 in self.arrays[-1]:
            out += [mix(f"{n}[{j}][{j2}]", t) for j in range(k) for j2 in range(k2)] if k2 else \
                [mix(f"{n}[{j}]", t) for j in range(k)]
        for n, st in self.svars[-1]:
            for mn, t, k in st.members:
                out += [mix(f"{n}.{mn}[{j}]", t) for j in range(k)] if k else [mix(f"{n}.{mn}", t)]
        for n, u in self.uvars[-1]:
            out += [mix(f"{n}.u[{j}]", "unsigned") for j in range(u.k)]
        for n, f in self.fvars[-1]:
            out.append(mix(f"{n}.k", f.t))

    def store(self, out: list[str], ind: str):
        r = self.r
        outs = [b for b in self.bufs if not b.const and not b.atomic]
        b = r.choice(outs)
        if b.struct is None:
            if r.random() < 0.3:  # through a pointer
                q = self.fresh("q")
                out.append(f"{ind}{b.ctype} *{q} = {b.name} + gid;")
                out.append(f"{ind}{r.choice(['*' + q, q + '[0]'])} {self.assign_op(b.ctype)} {self.expr(b.ctype, self.depth())};")
                self.features.add("pointers")
                return
            if b.ctype in INTS and r.random() < 0.1:
                out.append(f"{ind}{b.name}[gid]{r.choice(['++', '--'])};")
                return
            out.append(f"{ind}{b.name}[gid] {self.assign_op(b.ctype)} {self.expr(b.ctype, self.depth())};")
            return
        sv = [(n, s) for n, s in self.all_svars() if s is b.struct]
        if sv and r.random() < 0.3:
            out.append(f"{ind}{b.name}[gid] = {r.choice(sv)[0]};")
            return
        name, t, k = r.choice(b.struct.members)
        target = f"{b.name}[gid].{name}" + (f"[{self.arr_index(k)}]" if k else "")
        out.append(f"{ind}{target} {self.assign_op(t)} {self.expr(t, self.depth())};")

    def loop(self, out: list[str], ind: str, level: int, fn: bool):
        r = self.r
        i = self.fresh("i")
        kind = r.random()
        self.push()
        if kind < 0.5:
            bound = str(r.randint(1, 4)) if r.random() < 0.6 else f"(int)(({self.expr('unsigned', 1)}) & 3u)"
            out.append(f"{ind}for (int {i} = 0; {i} < {bound}; {i}++) {{")
            self.scopes[-1].append((i, "int", False))
            self.stmts(out, ind + "    ", r.randint(1, 3), level + 1, "for", fn)
            self.sink(out, ind + "    ")
            out.append(f"{ind}}}")
        elif kind < 0.8:
            out.append(f"{ind}int {i} = (int)(({self.expr('unsigned', 1)}) & 3u);")
            self.scopes[-2].append((i, "int", False))
            out.append(f"{ind}while ({i} > 0) {{")
            out.append(f"{ind}    {i}--;")
            self.stmts(out, ind + "    ", r.randint(1, 3), level + 1, "while", fn)
            self.sink(out, ind + "    ")
            out.append(f"{ind}}}")
        else:
            out.append(f"{ind}int {i} = {r.randint(1, 3)};")
            self.scopes[-2].append((i, "int", False))
            out.append(f"{ind}do {{")
            out.append(f"{ind}    {i}--;")
            self.stmts(out, ind + "    ", r.randint(1, 2), level + 1, "while", fn)
            self.sink(out, ind + "    ")
            out.append(f"{ind}}} while ({i} > 0);")
        self.pop()

    def local_array(self, out: list[str], ind: str):
        r = self.r
        arrs = self.all_arrays()
        if arrs and r.random() < 0.5:
            a = r.choice(arrs)
            target = self.arr_read(a)
            out.append(f"{ind}{target} {self.assign_op(a[1])} {self.expr(a[1], self.depth())};")
            return
        t = self.scalar_type()
        k = r.choice([2, 3, 4, 4, 5])
        name = self.fresh("a")
        if r.random() < 0.25:
            k2 = r.choice([2, 3])
            rows = ", ".join("{" + ", ".join(self.expr(t, 1) for _ in range(r.randint(1, k2))) + "}"
                             for _ in range(r.randint(1, k)))
            out.append(f"{ind}{t} {name}[{k}][{k2}] = {{{rows}}};")
            self.arrays[-1].append((name, t, k, k2))
            self.features.add("2-D local arrays")
            return
        vals = ", ".join(self.expr(t, 1) for _ in range(k if r.random() < 0.8 else r.randint(1, k)))
        out.append(f"{ind}{t} {name}[{k}] = {{{vals}}};")
        self.arrays[-1].append((name, t, k, 0))
        self.features.add("local arrays")

    def struct_stmt(self, out: list[str], ind: str):
        r = self.r
        sv = self.all_svars()
        s = r.choice(self.structs)
        if not [v for v in sv if not v[1].instance]:
            sv = []
        k = r.random()
        if not sv or k < 0.2 or (k < 0.35 and len(sv) < 2):
            name = self.fresh("s")
            inits = []
            for mn, t, n in s.members:
                inits.append("{" + ", ".join(self.expr(t, 1) for _ in range(n)) + "}" if n else self.expr(t, 1))
            if s.builtin and r.random() < 0.5:
                out.append(f"{ind}{s.name} {name} = make_{s.name}({', '.join(inits)});")
            else:
                out.append(f"{ind}{s.name} {name} = {{{', '.join(inits)}}};")
            self.svars[-1].append((name, s))
            self.features.add("struct locals")
            if r.random() < 0.6:  # and use it at once: by value, by reference, a member function
                self.struct_stmt(out, ind)
            return
        name, s = r.choice(sv)
        if k < 0.55 or s.instance:
            mn, t, n = r.choice(s.members)
            target = f"{name}.{mn}" + (f"[{self.arr_index(n)}]" if n else "")
            out.append(f"{ind}{target} {self.assign_op(t)} {self.expr(t, self.depth())};")
        elif k < 0.62 and s.methods and not s.builtin:
            mn, t = s.first()
            out.append(f"{ind}{name}.set(({t})({self.expr(t, self.depth())}));")
            self.features.add("member functions")
        elif k < 0.75:
            same = [v for v, s2 in sv if s2 is s and v != name]
            if s.methods and (same or r.random() < 0.6):
                o = r.choice(same) if same else name  # `v += v` too: the operand aliases the target
                out.append(f"{ind}" + r.choice([f"{name} = {name} + {o};", f"{name} += {o};", f"{name} = -{o};",
                                                 f"{name} = ({name} == {o}) ? -{name} : {o} + {name};"]))
                self.features.add("struct operators")
            elif same:
                out.append(f"{ind}{name} = {r.choice(same)};")
        elif k < 0.85:
            fn = f"upd_{s.name}"
            mn, t, n = next(m for m in s.members if not m[2])
            out.append(f"{ind}{name} = {fn}({name}, ({t})({self.expr(t, 2)}));")
            self.features.add("struct by value")
        else:
            fn = f"bump_{s.name}"
            out.append(f"{ind}{fn}({name}, {self.expr('int', 2)});")
            self.features.add("struct by reference")

    # ---------------------------------------------------------------- the program
    def make_structs(self):
        for si in range(self.r.choice([0, 1, 1, 2])):
            members = []
            for mi in range(self.r.randint(1, 4)):
                t = self.ty(["int", "unsigned", "float", "char", "unsigned char", "long long",
                             "unsigned long long", "float", "bool", "short", "unsigned short"]
                            + ([] if self.neural else ["double"]))
                members.append((f"m{mi}", t, self.r.choice([0, 0, 0, 2, 3])))
            if all(m[2] for m in members) or members[0][1] == "bool":
                members.insert(0, ("m", "int", 0))
            kval = self.r.choice([None, None, 0, 3, -2, 100]) if self.r.random() < 0.5 else None
            self.structs.append(StructDef(f"S{si}", members, methods=self.r.random() < 0.5, kval=kval))
            if kval is not None:
                self.features.add("class constants")
        if self.r.random() < 0.3:
            base, t = self.r.choice([("int", "int"), ("uint", "unsigned"), ("char", "char"), ("uchar", "unsigned char"),
                                     ("short", "short"), ("ushort", "unsigned short")]
                                    + ([] if self.no_float else [("float", "float")])
                                    + ([] if self.no_float or self.neural else [("double", "double")]))
            k = self.r.choice([2, 3, 4])
            self.structs.append(StructDef(f"{base}{k}", [(m, t, 0) for m in "xyzw"[:k]], builtin=True,
                                          methods=self.r.random() < 0.5))
            self.features.add("vector types")

    def struct_funcs(self) -> list[str]:
        out = []
        for s in self.structs:
            mn, t, n = next(m for m in s.members if not m[2])
            out.append(f"__device__ {s.name} upd_{s.name}({s.name} v, {t} x) {{ v.{mn} = ({t})(v.{mn} + x); "
                       f"return v; }}")
            m2, t2, _ = self.r.choice([m for m in s.members if not m[2]])
            out.append(f"__device__ void bump_{s.name}({s.name} &v, int x) {{ v.{m2} = ({t2})(v.{m2} {'+' if t2 != 'bool' else '^'} "
                       f"({t2})x); }}")
        return out

    def device_funcs(self) -> list[str]:
        r = self.r
        texts = []
        self.void_funcs: list[tuple[str, list[str]]] = []
        funcs = []
        # the device functions in a namespace (nested too), called qualified or after `using namespace`
        ns = r.choice([[], [], [], ["N0"], ["N0"], ["N0", "N1"]])
        using = ns and r.random() < 0.3
        for fi in range(r.choice([0, 1, 1, 2, 3])):
            name = f"f{fi}"
            res = self.scalar_type()
            params = [self.scalar_type() for _ in range(r.randint(1, 3))]
            body: list[str] = ["    unsigned fh = 0u;"]
            with self.isolated([(f"p{j}", t, True) for j, t in enumerate(params)], "fh"):
                if r.random() < 0.4:
                    self.budget = 8
                    body.append(f"    if ({self.expr('bool', 1)}) return {self.expr(res, 1)};")
                self.stmts(body, "    ", r.randint(1, 4), 1, None, fn=True)
                self.sink(body, "    ")
                self.budget = 12
                fold = f"({res})fh" if res in INTS else f"({res})(fh & 255u)"
                op = "^" if res in INTS else "+"
                body.append(f"    return ({res})({self.expr(res, self.depth())} {op} {fold});")
            ps = ", ".join(f"{t} p{j}" for j, t in enumerate(params))
            funcs.append(f"__device__ {res} {name}({ps}) {{\n" + "\n".join(body) + "\n}")
            self.func_sigs.append((name, res, params))
            self.features.add("device functions")
            self.ns = "" if using or not ns else "::".join(ns) + "::"
        if ns and funcs:
            funcs = ["".join(f"namespace {n} {{ " for n in ns)] + funcs + ["}" * len(ns)]
            if using:
                funcs.append(f"using namespace {'::'.join(ns)};")
            self.features.add("namespaces")
        texts += funcs
        self.ns = "" if using or not ns else "::".join(ns) + "::"
        if r.random() < 0.4:
            op = r.choice(["a + b", "a * b - a", "(a < b) ? b : a", "a - b * a"])
            texts.append(f"template <typename T> __device__ T t0(T a, T b) {{ return (T)({op}); }}")
            self.templates.append("t0")
            self.features.add("templates")
        if r.random() < 0.3:  # overloads told apart by their number of parameters
            texts.append("template <typename T> __device__ T t1(T a) { return (T)(a + a); }")
            texts.append("template <typename T> __device__ T t1(T a, T b, T c) { return (T)(a * b - c); }")
            self.templates.append("t1")
            self.features.add("template overloads by arity")
        if r.random() < 0.4:
            t = self.ty(["int", "unsigned", "float", "long long"])
            op = r.choice(["+=", "-=", "*="])
            texts.append(f"__device__ void acc0({t} &x, {t} y) {{ x {op} y; }}")
            self.void_funcs.append(("acc0", [t, t]))
            self.features.add("references")
        return texts

    def program(self) -> Program:
        r = self.r
        self.in_func = False
        warp_ops = r.random() < 0.35
        self.no_float = self.neural and warp_ops and AVOID_LINK_LIMIT
        block = r.choice([4, 8, 8, 12, 16, 32, 64] if warp_ops else [1, 3, 4, 5, 8, 8, 16, 24, 37, 64])
        grid = r.choice([1, 1, 2, 3, 5])
        if self.neural:
            block, grid = r.choice([4, 8]), r.choice([1, 2])
        n = grid * block
        self.make_structs()
        self.bufs: list[Buffer] = []
        self.scalars: list[Scalar] = []
        for bi in range(r.randint(1, 3)):
            t = self.ty(INTS + ["float", "float", "double", "bool", "int", "unsigned"])
            m = n + r.choice([0, 0, 3])
            self.bufs.append(Buffer(f"in{bi}", t, random_values(r, t, m), const=True))
        for bi in range(r.randint(1, 3)):
            t = self.ty(INTS + ["float", "float", "double", "int", "unsigned", "bool"])
            self.bufs.append(Buffer(f"out{bi}", t, random_values(r, t, n + r.choice([0, 0, 2]))))
        self.bufs.append(Buffer("chk", "unsigned", random_values(r, "unsigned", n), atomic=True))
        for s in self.structs:
            arr = np.zeros(n, s.dtype())
            for mn, t, k in s.members:
                vals = random_values(r, t, n * max(k, 1))
                arr[mn] = vals.reshape(n, k) if k else vals
            self.bufs.append(Buffer(f"sb{self.structs.index(s)}", s.name, arr, const=False, struct=s))
            self.features.add("struct buffers")
        for si in range(r.randint(0, 2)):
            t = self.ty(["int", "unsigned", "float", "long long", "double", "unsigned long long", "short",
                         "unsigned short", "char", "unsigned char"])
            self.scalars.append(Scalar(f"x{si}", t, random_values(r, t, 1)[0].item()))
        consts = []
        for ci in range(r.choice([0, 0, 1, 2])):
            t = self.ty(["int", "unsigned", "float", "long long", "unsigned long long", "char", "unsigned char"])
            k = r.choice([2, 3, 4])
            vals = random_values(r, t, k)
            # a constant initialiser takes literals only (no __int_as_float): a NaN becomes 0, an infinity 1e39f
            lits = [(("(-1e39f)" if v < 0 else "1e39f") if np.isinf(v) else f32_lit(0.0 if np.isnan(v) else float(v)))
                    if t == "float" else int_lit(int(v), t) for v in vals]
            consts.append(f"__constant__ {t} c{ci}[{k}] = {{{', '.join(lits[:r.randint(1, k)])}}};")
            self.consts.append((f"c{ci}", t, k))
            self.features.add("__constant__ arrays")
        self.prog_globals: list = []
        funcs = consts + self.make_cxx_types() + self.make_globals(n) + self.struct_funcs() + self.device_funcs()
        body: list[str] = []
        two_d = block % 2 == 0 and r.random() < 0.15
        self.scopes = [[("tid", "unsigned", False), ("gid", "unsigned", False)]]
        body.append("    unsigned tid = threadIdx.x + threadIdx.y * blockDim.x;")
        body.append("    unsigned gid = blockIdx.x * blockDim.x * blockDim.y + tid;")
        body.append("    unsigned h = 0u;")
        ins = [b for b in self.bufs if b.const and b.struct is None]
        if ins and r.random() < 0.3:
            b = r.choice(ins)
            body.append(f"    const {b.ctype} *p0 = {b.name} + (unsigned)({self.expr('unsigned', 1)}) % {len(b.data)}u;")
            self.ptrs.append(("p0", b.ctype))
            self.features.add("pointers")
        if r.random() < 0.2:
            self.cast_pointers(body)
        self.stmts(body, "    ", r.randint(2, 6) if not self.neural else r.randint(2, 4), 0)
        if r.random() < 0.35:
            self.shared_phase(body, block)
        if warp_ops:
            self.warp_phase(body)
        cg = block % 4 == 0 and r.random() < 0.3
        if cg:
            self.cg_phase(body, block)
        if r.random() < 0.3:
            self.atomic_phase(body)
        self.stmts(body, "    ", r.randint(1, 4) if not self.neural else r.randint(1, 2), 0)
        if r.random() < 0.3:
            body.append(f"    if ({self.expr('bool', 2)}) {{")
            self.sink(body, "        ")
            body.append("        chk[gid] = h;")
            body.append("        return;")
            body.append("    }")
            self.features.add("early exit")
            self.stmts(body, "    ", r.randint(1, 2), 0)
        self.sink(body, "    ")
        body.append("    chk[gid] = h;")
        params = []
        for b in self.bufs:
            params.append(f"{'const ' if b.const else ''}{b.ctype} *{b.name}")
        params += [f"{s.ctype} {s.name}" for s in self.scalars]
        kernel = f"__global__ void k({', '.join(params)}) {{\n" + "\n".join(body) + "\n}\n"
        text = "\n".join(s.text() for s in self.structs) + "\n" + "\n".join(funcs) + "\n" + kernel
        helpers = [h for name, h in HELPERS.items() if name + "(" in text]
        source = "\n".join(helpers) + "\n" + text
        if cg:
            source = "#include <cooperative_groups.h>\nnamespace cg = cooperative_groups;\n" + source
        block_shape = (block // 2, 2) if two_d else (block,)
        prog = Program(self.seed, source, grid, block, self.bufs, self.scalars, self.structs, self.features)
        prog.block_shape = block_shape
        prog.shared_bytes = self.shared_bytes
        prog.globals = self.prog_globals
        return prog

    def shared_phase(self, body: list[str], block: int):
        r = self.r
        t = self.ty(["int", "unsigned", "float", "long long", "double", "unsigned char"])
        sh = self.fresh("sh")
        if r.random() < 0.3:
            body.append(f"    extern __shared__ {t} {sh}[];")
            self.shared_bytes = 4 * block * (2 if WIDTH[t] == 64 else 1)
            self.features.add("extern __shared__")
        else:
            body.append(f"    __shared__ {t} {sh}[{block}];")
        body.append(f"    {sh}[tid] = {self.expr(t, 2)};")
        body.append("    __syncthreads();")
        v = self.fresh("v")
        k = r.random()
        if k < 0.5 or block < 4:
            src = r.choice([f"(tid + {r.randint(1, 7)}u) % {block}u", f"{block - 1}u - tid", f"(tid ^ 1u) % {block}u",
                            f"(unsigned)({self.expr('unsigned', 1)}) % {block}u"])
            body.append(f"    {t} {v} = {sh}[{src}];")
            body.append("    __syncthreads();")
        elif block & (block - 1) == 0 and t in ("int", "unsigned", "long long") and block > 1:
            body.append(f"    for (unsigned s = {block // 2}u; s > 0u; s >>= 1) {{")
            body.append(f"        if (tid < s) {sh}[tid] = ({t})({sh}[tid] {r.choice(['+', '^', '|'])} {sh}[tid + s]);")
            body.append("        __syncthreads();")
            body.append("    }")
            body.append(f"    {t} {v} = {sh}[0];")
            body.append("    __syncthreads();")
            self.features.add("shared tree reduction")
        else:
            cnt = self.fresh("cnt")
            body.append(f"    __shared__ unsigned {cnt}[4];")
            body.append(f"    if (tid < 4u) {cnt}[tid] = {int_lit(r.choice([0, 7, 0xFFFFFFFF]), 'unsigned')};")
            body.append("    __syncthreads();")
            op = r.choice(["atomicAdd", "atomicOr", "atomicXor", "atomicMax", "atomicMin", "atomicAnd"])
            body.append(f"    {op}(&{cnt}[({self.expr('unsigned', 1)}) & 3u], {self.expr('unsigned', 2)});")
            body.append("    __syncthreads();")
            body.append(f"    {t} {v} = ({t}){cnt}[tid & 3u];")
            body.append("    __syncthreads();")
            self.features.add("shared atomics")
        self.scopes[-1].append((v, t, True))
        self.features.add("shared memory")

    def warp_phase(self, body: list[str]):
        r = self.r
        for _ in range(r.randint(1, 3)):
            k = r.random()
            v = self.fresh("w")
            if k < 0.5:
                t = self.ty(["int", "unsigned", "float", "long long", "unsigned long long", "double"])
                val = self.expr(t, 2)
                width = r.choice(["", "", ", 4", ", 2", ", 1", ", 32"])
                mode = r.choice(["__shfl_sync", "__shfl_up_sync", "__shfl_down_sync", "__shfl_xor_sync"])
                if mode == "__shfl_sync":
                    src = r.choice([str(r.randint(0, 5)), f"(int)(({self.expr('unsigned', 1)}) & 3u)"])
                else:
                    src = f"{r.randint(0, 3)}u"
                body.append(f"    {t} {v} = {mode}(0xffffffff, ({t})({val}), {src}{width});")
                self.scopes[-1].append((v, t, True))
            elif k < 0.55:
                body.append(f"    unsigned {v} = __activemask();")
                body.append("    __syncwarp();")
                self.scopes[-1].append((v, "unsigned", True))
            elif k < 0.75:
                fn = r.choice(["__ballot_sync", "__any_sync", "__all_sync"])
                t = "unsigned" if fn == "__ballot_sync" else "int"
                body.append(f"    {t} {v} = {fn}(0xffffffff, {self.expr('bool', 2)});")
                self.scopes[-1].append((v, t, True))
            elif k < 0.85:
                t = r.choice(["int", "unsigned", "long long", "unsigned long long"])
                body.append(f"    unsigned {v} = __match_any_sync(0xffffffff, ({t})({self.expr(t, 1)}));")
                self.scopes[-1].append((v, "unsigned", True))
            else:
                fn = r.choice(["__reduce_add_sync", "__reduce_min_sync", "__reduce_max_sync", "__reduce_and_sync",
                               "__reduce_or_sync", "__reduce_xor_sync"])
                t = r.choice(["int", "unsigned"]) if fn in ("__reduce_add_sync", "__reduce_min_sync",
                                                            "__reduce_max_sync") else "unsigned"
                body.append(f"    {t} {v} = {fn}(0xffffffff, ({t})({self.expr(t, 2)}));")
                self.scopes[-1].append((v, t, True))
        self.features.add("warp operations")

    def atomic_phase(self, body: list[str]):
        r = self.r
        if r.random() < 0.4:
            self.own_atomics(body)
            return
        t = r.choice(["int", "unsigned", "unsigned long long"])
        acc = Buffer(f"acc{len(self.bufs)}", t, random_values(r, t, 4), atomic=True)
        self.bufs.append(acc)
        # one family per buffer: operations that commute with each other
        if t == "unsigned long long":
            family = r.choice([["atomicAdd"], ["atomicAnd"], ["atomicOr"], ["atomicXor"]])
        else:
            family = r.choice([["atomicAdd", "atomicSub"], ["atomicAnd"], ["atomicOr"], ["atomicXor"], ["atomicMin"],
                               ["atomicMax"]] + ([["atomicInc"], ["atomicDec"]] if t == "unsigned" else []))
        limit = int_lit(r.choice([3, 100, 0xFFFFFFFF]), 'unsigned')
        for _ in range(r.randint(1, 3)):
            op = r.choice(family)
            idx = f"({self.expr('unsigned', 1)}) & 3u"
            if op in ("atomicInc", "atomicDec"):
                body.append(f"    {op}(&{acc.name}[{idx}], {limit});")
            else:
                line = f"    {op}(&{acc.name}[{idx}], ({t})({self.expr(t, 2)}));"
                if r.random() < 0.3:
                    line = f"    if ({self.expr('bool', 1)}) " + line.strip()
                body.append(line)
        self.features.add("atomics")

    def own_atomics(self, body: list[str]):
        """Atomics on this thread's own element, whose old values are used: with one thread per
        address the order is defined, so every atomic may be used (CAS and Exch too).  A CAS
        often compares with the value just read by `atomicOr(p, 0)`, so that it succeeds."""
        r = self.r
        t = r.choice(["int", "unsigned", "unsigned", "unsigned long long"])
        n = len(next(b for b in self.bufs if b.name == "chk").data)
        acc = Buffer(f"own{len(self.bufs)}", t, random_values(r, t, n), atomic=True)
        self.bufs.append(acc)
        if t == "unsigned long long":
            ops = ["atomicAdd", "atomicAnd", "atomicOr", "atomicXor"]
        else:
            ops = ["atomicAdd", "atomicSub", "atomicAnd", "atomicOr", "atomicXor", "atomicMin", "atomicMax",
                   "atomicExch", "atomicCAS", "atomicCAS"] + (["atomicInc", "atomicDec"] if t == "unsigned" else [])
        cell = f"&{acc.name}[gid]"
        for _ in range(r.randint(1, 4)):
            op = r.choice(ops)
            v = self.fresh("o")
            if op in ("atomicInc", "atomicDec"):
                call = f"{op}({cell}, {int_lit(r.choice([0, 3, 100, 0xFFFFFFFF]), 'unsigned')})"
            elif op == "atomicCAS":
                cmp = f"({t})({self.expr(t, 1)})"
                if r.random() < 0.6:
                    cur = self.fresh("o")
                    body.append(f"    {t} {cur} = atomicOr({cell}, {int_lit(0, t)});")
                    self.scopes[-1].append((cur, t, True))
                    cmp = cur
                call = f"{op}({cell}, {cmp}, ({t})({self.expr(t, 2)}))"
            else:
                call = f"{op}({cell}, ({t})({self.expr(t, 2)}))"
            if r.random() < 0.25:  # divergent: some threads skip it
                body.append(f"    {t} {v} = {int_lit(0, t)};")
                body.append(f"    if ({self.expr('bool', 1)}) {v} = {call};")
            else:
                body.append(f"    {t} {v} = {call};")
            self.scopes[-1].append((v, t, True))
        self.features.add("atomics with old values")

    # ---------------------------------------------------------------- C++ constructs, cg, exact math
    def cxx_leaves(self, t: str) -> list:
        """Leaf options of type t from this round's constructs: enumerators, union members,
        functor calls, class-template instances, __device__ variables, pointers cast between
        types of one size."""
        r = self.r
        out = []
        if t in INTS and self.enums:
            out.append(lambda: f"({t}){r.choice(self.enums)[0]}")
        us = [(n, u, m) for sc in self.uvars for n, u in sc for m, mt in u.members if mt == t]
        if us:
            out.append(lambda: (lambda n, u, m: f"{n}.{m}[{self.arr_index(u.k)}]")(*r.choice(us)))
        fs = [f for f in self.functors if f.t == t] if self.budget > 0 else []  # calls recurse: bounded
        if fs:
            def functor_call():
                f = r.choice(fs)
                mine = [n for sc in self.fvars for n, g in sc if g is f]
                a, b = self.expr(t, 1), self.expr(t, 1)
                k = r.random()
                if mine and k < 0.5:
                    return f"{r.choice(mine)}(({t})({a}), ({t})({b}))"
                if k < 0.75:
                    # a temporary, k value-initialised to 0 (also right after a cast or an initialiser
                    # list's '{', where qgcc once did not take `F0(` for an expression: seed 8000175)
                    call = f"{f.name}()(({t})({a}), ({t})({b}))"
                    return call if r.random() < 0.5 else f"({call})"
                obj = r.choice(mine) if mine else f"({f.name}())"
                return f"app0({obj}, ({t})({a}), ({t})({b}))"
            out += [functor_call] * 2
        cts = [n for n, s in self.all_svars() if s.instance and s.members[0][1] == t]
        if cts and self.budget > 0:
            out.append(lambda: r.choice([f"{r.choice(cts)}.sum()", f"{r.choice(cts)}.at({self.expr('unsigned', 1)})"]))
        gl = [g for g in self.globals if g[1] == t and (g[2] == 0 or not self.in_func)]
        if gl:
            out.append(lambda: (lambda g: f"{g[0]}[gid]" if g[2] else g[0])(r.choice(gl)))
        cp = [c for c in self.cptrs if c[1] == t]
        if cp:
            out.append(lambda: (lambda c: f"{c[0]}[{self.index(c[2])}]")(r.choice(cp)))
        op = [o for o in self.optrs if o[1] == t and o[2]]
        if op:
            out.append(lambda: f"{r.choice(op)[0]}[gid]")
        return out

    def make_cxx_types(self) -> list[str]:
        """File-scope enums, unions, functors and the class template; their text."""
        r = self.r
        texts = []
        if r.random() < 0.3:  # an unscoped enum: implicit values count on from the previous one
            v = r.choice([0, 0, 1, -3, 100, 0x7FFFFFFE, -(1 << 31)])
            parts = []
            for j in range(r.randint(1, 4)):
                name = f"E0_{j}"
                if j == 0 or r.random() < 0.4:
                    v = r.choice([0, 1, 2, 7, -1, -100, 1000, 0x7FFFFFFF, -(1 << 31), 0x10000])
                    parts.append(f"{name} = {int_lit(v, 'int')}")
                else:
                    v += 1
                    if v > 0x7FFFFFFF:  # past INT_MAX: C++ would widen the type, keep it an int
                        v = 5
                        parts.append(f"{name} = 5")
                    else:
                        parts.append(name)
                self.enums.append((name, v))
            texts.append(f"enum E0 {{ {', '.join(parts)} }};")
            self.features.add("enums")
        if r.random() < 0.25:  # a scoped enum with a written underlying type
            ut = r.choice(["int", "unsigned", "unsigned char", "short", "long long", "unsigned short"])
            parts = []
            lo, hi = (-(1 << (WIDTH[ut] - 1)), (1 << (WIDTH[ut] - 1)) - 1) if ut in SIGNED else (0, (1 << WIDTH[ut]) - 1)
            v = None
            for j in range(r.randint(1, 3)):
                k = r.random()
                if v is not None and k < 0.3 and v + 1 <= hi:  # the previous one plus one
                    v += 1
                    parts.append(f"b{j}")
                elif v is not None and k < 0.5 and lo <= v + 3 <= hi:  # named in the enum's own body
                    v += 3
                    parts.append(f"b{j} = b{j - 1} + 3")
                else:
                    v = wrap(r.choice(INT_EDGES) * r.choice([1, -1]) if r.random() < 0.5 else r.randint(-5, 9), ut)
                    parts.append(f"b{j} = {int_lit(v, ut)}")
                self.enums.append((f"E1::b{j}", v))
            texts.append(f"enum class E1 : {ut} {{ {', '.join(parts)} }};")
            self.features.add("scoped enums")
        if r.random() < 0.25:
            k = r.choice([1, 2, 3])
            members = [("u", "unsigned"), ("i", "int"), ("f", "float")]
            r.shuffle(members)
            self.unions.append(UnionDef("U0", k, members))
            texts.append("union U0 { " + " ".join(f"{mt} {m}[{k}];" for m, mt in members) + " };")
            self.features.add("unions")
        if r.random() < 0.3:
            t = r.choice(["int", "unsigned", "float", "long long", "unsigned long long"])
            op = r.choice(["a * k + b", "a - b * k", "(a < b) ? b + k : a", "a + b + k"])
            self.functors.append(FunctorDef("F0", t))
            texts.append(f"struct F0 {{ {t} k; __device__ {t} operator()({t} a, {t} b) const "
                         f"{{ return ({t})({op}); }} }};")
            texts.append("template <typename OP, typename T> __device__ T app0(OP op, T a, T b) "
                         "{ return op(op(a, b), b); }")
            self.features.add("functors")
        if r.random() < 0.25:
            texts.append("template <typename T, int N> struct CT0 { T v[N]; "
                         "__device__ T sum() const { T s = (T)0; for (int j = 0; j < N; j++) s = (T)(s + v[j]); "
                         "return s; } __device__ T at(unsigned j) const { return v[j % N]; } };")
            self.ctemplate = True
        return texts

    def make_globals(self, n: int) -> list[str]:
        r = self.r
        texts = []
        for gi in range(r.choice([0, 0, 0, 1, 2])):
            t = self.ty(["int", "unsigned", "float", "long long", "unsigned char", "short"]
                        + ([] if self.neural else ["double"]))
            vals = random_values(r, t, r.randint(1, min(4, n)))
            # an initialiser takes literals only: a NaN becomes 0, an infinity a finite or overflowing literal
            lits = ", ".join((("(-1e39f)" if v < 0 else "1e39f") if np.isinf(v) else f32_lit(0.0 if np.isnan(v) else float(v)))
                             if t == "float" else (f64_lit(0.0 if np.isnan(v) else (1e300 if v > 0 else -1e300)
                                                           if np.isinf(v) else float(v)) if t == "double"
                                                   else int_lit(int(v), t)) for v in vals)
            if r.random() < 0.3:  # a scalar every thread reads (none writes)
                lits = lits.split(", ")[0]
                texts.append(f"__device__ {t} g{gi} = {lits};")
                self.globals.append((f"g{gi}", t, 0))
                self.prog_globals.append((f"g{gi}", t, 0, lits))
            else:  # one element a thread, read and written by that thread only
                texts.append(f"__device__ {t} g{gi}[{n}] = {{{lits}}};")
                self.globals.append((f"g{gi}", t, n))
                self.prog_globals.append((f"g{gi}", t, n, lits))
            self.features.add("__device__ variables")
        return texts

    def cast_pointers(self, body: list[str]):
        """Pointers cast between types of one size: an input read as another type (its bytes are
        the launch's on both sides), an output written as another type (read back only between
        integer types: a float computed as NaN has no one bit pattern)."""
        r = self.r
        ins = [b for b in self.bufs if b.const and b.struct is None and b.ctype not in NARROW + ("bool",)]
        if ins and r.random() < 0.7:
            b = r.choice(ins)
            u = r.choice(["int", "unsigned"] if WIDTH[b.ctype] == 32 else ["long long", "unsigned long long"])
            name = self.fresh("pc")
            body.append(f"    const {u} *{name} = (const {u} *){b.name};")
            self.cptrs.append((name, u, len(b.data)))
        outs = [b for b in self.bufs if not b.const and not b.atomic and b.struct is None
                and b.ctype not in NARROW + ("bool",)]
        if outs and r.random() < 0.6:
            b = r.choice(outs)
            u = r.choice(["int", "unsigned"] if WIDTH[b.ctype] == 32 else ["long long", "unsigned long long"])
            name = self.fresh("qc")
            body.append(f"    {u} *{name} = ({u} *){b.name};")
            self.optrs.append((name, u, b.ctype in INTS))
        self.features.add("pointer casts")

    def cxx_stmt(self, out: list[str], ind: str, level: int, loop, fn: bool) -> bool:
        """One statement of this round's constructs, or False when none applies here."""
        r = self.r
        k = r.random()
        assignable = self.vars(lambda n, t, a: a)
        if k < 0.14 and self.unions:
            u = self.unions[0]
            us = [n for sc in self.uvars for n, _ in sc]
            if not us or r.random() < 0.4:
                name = self.fresh("un")
                m, mt = u.members[0]
                vals = ", ".join(f"q_nn({self.expr(mt, 1)})" if mt == "float" else self.expr(mt, 1)
                                 for _ in range(u.k))
                out.append(f"{ind}U0 {name} = {{{{{vals}}}}};")
                self.uvars[-1].append((name, u))
                return True
            if r.random() < 0.2:  # whole unions: a copy, an assignment
                src = r.choice(us)
                if r.random() < 0.5:
                    name = self.fresh("un")
                    out.append(f"{ind}U0 {name} = {src};")
                    self.uvars[-1].append((name, u))
                else:
                    out.append(f"{ind}{r.choice(us)} = {src};")
                return True
            m, mt = r.choice(u.members)
            target = f"{r.choice(us)}.{m}[{self.arr_index(u.k)}]"
            if mt == "float":  # stored as a number that is not NaN: its bits are read as an integer
                out.append(f"{ind}{target} = q_nn({self.expr(mt, self.depth())});")
            else:
                out.append(f"{ind}{target} {self.assign_op(mt)} {self.expr(mt, self.depth())};")
            return True
        if k < 0.24 and self.functors:
            name = self.fresh("fo")
            f = self.functors[0]
            out.append(f"{ind}F0 {name} = {{({f.t})({self.expr(f.t, 1)})}};")
            self.fvars[-1].append((name, f))
            return True
        if k < 0.40 and assignable:
            return self.lambda_block(out, ind)
        if k < 0.52 and self.ctemplate:
            t = r.choice(["int", "unsigned", "float", "long long"] if not self.neural else ["int", "unsigned", "float"])
            kk = r.choice([1, 2, 3, 4])
            name = self.fresh("ct")
            vals = ", ".join(self.expr(t, 1) for _ in range(r.randint(1, kk)))
            out.append(f"{ind}CT0<{t}, {kk}> {name} = {{{{{vals}}}}};")
            self.svars[-1].append((name, StructDef(f"CT0<{t}, {kk}>", [("v", t, kk)], instance=True)))
            self.features.add("class templates")
            return True
        if k < 0.62:
            self.exact_math_stmt(out, ind)
            return True
        if k < 0.72:
            return self.memcpy_stmt(out, ind)
        if k < 0.76:
            out.append(f"{ind}{r.choice(['__threadfence', '__threadfence_block', '__threadfence_system'])}();")
            self.features.add("fences")
            return True
        if k < 0.90:
            gl = [g for g in self.globals if g[2] and not self.in_func]
            outs = [o for o in self.optrs if not self.in_func]
            if gl and (not outs or r.random() < 0.5):
                g = r.choice(gl)
                out.append(f"{ind}{g[0]}[gid] {self.assign_op(g[1])} {self.expr(g[1], self.depth())};")
                return True
            if outs:
                o = r.choice(outs)
                op = self.assign_op(o[1]) if o[2] else "="
                out.append(f"{ind}{o[0]}[gid] {op} {self.expr(o[1], self.depth())};")
                return True
        return False

    def lambda_block(self, out: list[str], ind: str) -> bool:
        """A lambda called in the block that defines it: `{ auto l = [&r, c](T a, T b) -> T
        {...}; x = l(...); }` (a block of its own, so that nothing assigns the by-value capture
        while the lambda lives)."""
        r = self.r
        vs = self.vars(lambda n, t, a: True)
        assignable = [v for v in self.vars(lambda n, t, a: a) if v[1] != "bool"]
        if not vs or not assignable:
            return False
        ref = r.choice(assignable) if r.random() < 0.6 else None
        val = r.choice([v for v in vs if ref is None or v[0] != ref[0]] or [None])
        if val is None:
            return False
        t = r.choice([v[1] for v in assignable if val is None or v[0] != val[0]] or ["int"])
        targets = [v for v in assignable if v[1] == t and v[0] != val[0]]
        if not targets:
            return False
        caps = ", ".join(([f"&{ref[0]}"] if ref else []) + [val[0]])
        params = [("a", t, True), ("b", t, True), (val[0], val[1], False)] + ([(ref[0], ref[1], True)] if ref else [])
        with self.isolated(params, "fh"):
            self.budget = 10
            ret = self.expr(t, 2)
            op = r.choice(['+', '-'] if ref and ref[1] in FLOATS else ['+', '^', '-'])
            upd = f"{ref[0]} = ({ref[1]})({ref[0]} {op} {self.expr(ref[1], 1)}); " if ref else ""
        name = self.fresh("lam")
        out.append(f"{ind}{{")
        out.append(f"{ind}    auto {name} = [{caps}]({t} a, {t} b) -> {t} {{ {upd}return ({t})({ret}); }};")
        for _ in range(r.randint(1, 2)):
            tgt = r.choice(targets)[0]
            out.append(f"{ind}    {tgt} = {name}(({t})({self.expr(t, 1)}), ({t})({self.expr(t, 1)}));")
        out.append(f"{ind}}}")
        self.features.add("lambdas")
        return True

    def exact_math_stmt(self, out: list[str], ind: str):
        """frexp/frexpf (the exponent through a pointer to a local), on finite arguments."""
        r = self.r
        e, v = self.fresh("e"), self.fresh("m")
        dbl = not self.neural and not self.no_float and r.random() < 0.5
        out.append(f"{ind}int {e} = {r.choice(['0', '7', '-1'])};")
        if dbl:
            out.append(f"{ind}double {v} = frexp(q_find({self.expr('double', self.depth())}), &{e});")
            self.scopes[-1].append((v, "double", True))
        elif not self.no_float:
            fn = r.choice(["frexpf", "frexp"])  # frexp of a float is CUDA's frexpf overload
            out.append(f"{ind}float {v} = {fn}(q_finf({self.expr('float', self.depth())}), &{e});")
            self.scopes[-1].append((v, "float", True))
        self.scopes[-1].append((e, "int", True))
        self.features.add("frexp")

    def memcpy_stmt(self, out: list[str], ind: str) -> bool:
        """A device memcpy of whole cells into a local array: from another local array of a type
        of the same cells, or from an input buffer (whose bytes are the launch's)."""
        r = self.r
        arrs = [a for a in self.all_arrays() if a[1] in ("int", "unsigned", "float") and not a[3]]
        if not arrs:
            return False
        dst = r.choice(arrs)
        group = ("float",) if dst[1] == "float" else ("int", "unsigned")
        srcs = [a for a in arrs if a[1] in group and a[0] != dst[0]]
        ins = [b for b in self.bufs if b.const and b.struct is None and b.ctype in ("int", "unsigned", "float")
               and len(b.data) >= dst[2]]
        if srcs and (not ins or r.random() < 0.5):
            src = r.choice(srcs)
            n = min(dst[2], src[2])
            out.append(f"{ind}memcpy({dst[0]}, {src[0]}, {4 * n});")
        elif ins and not self.in_func:
            b = r.choice(ins)
            span = len(b.data) - dst[2] + 1
            n = r.randint(1, dst[2])
            out.append(f"{ind}memcpy({dst[0]}, {b.name} + (gid % {span}u), {4 * n});")
        else:
            return False
        self.features.add("memcpy")
        return True

    def cg_phase(self, body: list[str], block: int):
        """Cooperative groups at the kernel's top level (every thread of the block takes part, the
        block a multiple of each tile): tiles of 1-4 threads inside the warp, of 8-32 through
        shared memory and barriers; shuffles, votes (narrow tiles), ranks and reductions whose
        result does not depend on the order of the butterfly."""
        r = self.r
        sizes = [s for s in (1, 2, 4, 8, 16, 32) if block % s == 0]
        body.append("    cg::thread_block cb = cg::this_thread_block();")
        tiles = []
        for _ in range(r.randint(1, 2)):
            n = r.choice(sizes)
            name = self.fresh("tile")
            if r.random() < 0.3:
                body.append(f"    auto {name} = cg::tiled_partition<{n}>(cb);")
            else:
                body.append(f"    cg::thread_block_tile<{n}> {name} = cg::tiled_partition<{n}>(cb);")
            tiles.append((name, n))
        for _ in range(r.randint(1, 4)):
            name, n = r.choice(tiles)
            v = self.fresh("w")
            k = r.random()
            if k < 0.35:
                t = self.ty(["int", "unsigned", "float", "long long", "unsigned long long"]
                            + ([] if self.neural else ["double"]))
                m = r.choice(["shfl", "shfl_up", "shfl_down", "shfl_xor"])
                arg = (f"{r.randint(-n, 2 * n - 1)}" if m == "shfl" and r.random() < 0.4 else
                       f"(int)({self.expr('int', 1)})" if m == "shfl" and r.random() < 0.3 else
                       f"(int)(({self.expr('unsigned', 1)}) % {2 * n}u)" if m == "shfl" else
                       f"{r.randint(1, max(1, n - 1))}u" if m != "shfl_xor" else f"{r.choice([x for x in (1, 2, 4, 8, 16) if x < n] or [1])}u")
                body.append(f"    {t} {v} = {name}.{m}(({t})({self.expr(t, 2)}), {arg});")
                self.scopes[-1].append((v, t, True))
            elif k < 0.5 and n <= 4:
                m = r.choice(["ballot", "any", "all"])
                t = "unsigned" if m == "ballot" else "int"
                body.append(f"    {t} {v} = {name}.{m}({self.expr('bool', 2)});")
                self.scopes[-1].append((v, t, True))
            elif k < 0.8:
                op = r.choice(["plus", "less", "greater"])
                t = self.ty(["int", "unsigned", "long long", "unsigned long long", "float"]
                            + ([] if self.neural else ["double"]))
                val = f"({t})({self.expr(t, 2)})"
                if t == "float":  # sums of small integers, minima of numbers without NaN or -0: exact in any order
                    val = (f"(float)((int)({self.expr('int', 1)}) & 1023)" if op == "plus"
                           else f"(q_nn({self.expr('float', 2)}) + 0.0f)")
                elif t == "double":
                    val = (f"(double)((int)({self.expr('int', 1)}) & 1048575)" if op == "plus"
                           else f"(q_nnd({self.expr('double', 2)}) + 0.0)")
                body.append(f"    {t} {v} = cg::reduce({name}, {val}, cg::{op}<{t}>());")
                self.scopes[-1].append((v, t, True))
                self.features.add("cg::reduce")
            elif k < 0.92:
                m = r.choice(["thread_rank", "meta_group_rank", "size", "num_threads", "meta_group_size"])
                body.append(f"    unsigned {v} = {name}.{m}() + cb.thread_rank() * {r.randint(0, 3)}u;")
                self.scopes[-1].append((v, "unsigned", True))
            else:
                body.append(f"    {r.choice([name + '.sync()', f'cg::sync({name})', 'cb.sync()', 'cg::sync(cb)'])};")
        self.features.add("cooperative groups")
        if any(n > 4 for _, n in tiles):
            self.features.add("wide tiles")


def generate(seed: int, *, neural: bool = False) -> Program:
    return Gen(seed, neural=neural).program()
