"""Launch specs of published kernels: how the manifest says a kernel is run, and its input data.

A file's manifest entry (outside the repo, next to the file it describes) may carry
"runs": [{"kernel": "vectorAdd", "grid": [2], "block": [64], "shared": 0,
          "args": ["A:float[128]=rand", "B:float[128]=rand(-2,2)", "C:float[128]", "numElements=128"],
          "consts": ["c_Kernel:float[17]=rand"], "neural": false, "from": "where the host code says so"}]
A kernel in a namespace is named with it ("dwt_cuda::fdwt53Kernel<64, 8>"), as C++ calls it.
Arguments are in the kernel's parameter order.  `name:type[n]=gen` is a buffer of n elements
(zeros without `=gen`); `name=value` or `name:type=value` a scalar (in "consts": a scalar
`__constant__`, `softeningSquared:float=0.01`).  Generators: rand
(floats in [-1, 1), integers in [0, 100)), rand(lo,hi), iota, iota(start), iota(start,step), fill(v), perm
(a permutation of 0..n-1), bits (any pattern), vals(a,b,...) (repeated), sorted(lo,hi,seg)
(rand, sorted within segments of seg elements).  `name:Node{starting,no_of_edges}int[n]` is a
buffer of structs whose members, in declaration order, are all of one scalar type; a vector
type (float4, uint2, uchar4, ...) is written as such.  A run may list "ignore": buffers whose
contents the kernel leaves undefined (clock() readings), "unordered": buffers a kernel fills in an
order CUDA leaves open (slots handed out by an atomic counter), compared as sorted multisets, and a file's runs may be replaced by
{"skip": "why"} where the published launch cannot be scaled to the machine.
"textures": ["texIn:float[64x32]=rand"] binds the file's texture references (or, when named like
a `cudaTextureObject_t` parameter in "args", texture objects) by name, as `qgrun --arg` does:
`[H x W]` is a 2-D texture H rows high and W wide, `[n]` a 1-D one; a texture object parameter is
written in "args" as the bare name of its texture.  (`name:float[n]*k` is read as k arrays of n
elements, a `T **` parameter, but the runner does not pass those yet.)  Inputs are drawn from a seed made of the file,
kernel and run index, so every run of the tool sees the same data.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

import numpy as np

CTYPES = {"float": ("float", "f4"), "double": ("double", "f8"), "int": ("int", "i4"),
          "unsigned": ("unsigned", "u4"), "uint": ("unsigned", "u4"), "unsigned int": ("unsigned", "u4"),
          "char": ("char", "i1"), "uchar": ("unsigned char", "u1"), "unsigned char": ("unsigned char", "u1"),
          "bool": ("bool", "?"), "long long": ("long long", "i8"), "long": ("long", "i8"),
          "ull": ("unsigned long long", "u8"), "unsigned long long": ("unsigned long long", "u8"),
          "short": ("short", "i2"), "ushort": ("unsigned short", "u2"), "unsigned short": ("unsigned short", "u2"),
          "clock_t": ("clock_t", "i4")}
# CUDA's vector types: (C type, scalar dtype, lanes); buffers of them are structured arrays x, y, z, w
VECTORS = {f"{b}{k}": (f"{b}{k}", dt, k) for b, dt in (("float", "f4"), ("int", "i4"), ("uint", "u4"), ("uchar", "u1"), ("double", "f8"))
           for k in (2, 3, 4)}


@dataclass
class Arg:
    name: str
    ctype: str  # C type of an element (or of the scalar)
    dtype: str  # numpy dtype
    count: int | None = None  # elements of a buffer; None for a scalar
    gen: str = ""
    value: str = ""  # a scalar's text
    lanes: int = 0  # a vector type's or struct's members (0: a scalar element)
    fields: tuple[str, ...] = ()  # a struct's member names (a vector type's are x, y, z, w)
    shape: tuple[int, ...] = ()  # a 2-D texture's (rows, columns); () for a flat buffer
    lists: int = 0  # a `T **` parameter: how many arrays of `count` elements (0: not a list)
    texobj: bool = False  # a `cudaTextureObject_t` parameter: the texture of this name in "textures"

    @property
    def np_dtype(self) -> np.dtype:
        if not self.lanes:
            return np.dtype(self.dtype)
        return np.dtype([(c, self.dtype) for c in (self.fields or tuple("xyzw"[:self.lanes]))])

    @property
    def is_buffer(self) -> bool:
        return self.count is not None


@dataclass
class Run:
    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    args: list[Arg]
    consts: list[Arg] = field(default_factory=list)
    shared: int = 0
    neural: bool = False
    origin: str = ""
    ignore: tuple[str, ...] = ()  # buffers whose contents are not defined by the kernel's semantics (clock())
    textures: list[Arg] = field(default_factory=list)  # texture references bound by name (read-only)
    unordered: tuple[str, ...] = ()  # buffers filled through atomic counters: CUDA leaves their order open

    @property
    def label(self) -> str:
        return f"{self.kernel}<<<{','.join(map(str, self.grid))}; {','.join(map(str, self.block))}>>>"


ARG_RE = re.compile(r"^\s*(\w+)\s*(?::\s*([\w ]+?)\s*(?:\[(\d+)(?:\s*x\s*(\d+))?\](?:\s*\*\s*(\d+))?)?)?\s*(?:=\s*(.+?))?\s*$")


STRUCT_RE = re.compile(r"^\s*(\w+)\s*:\s*(\w+)\s*\{([\w\s,]+)\}\s*([\w ]+?)\s*\[(\d+)\]\s*(?:=\s*(.+?))?\s*$")


def parse_arg(text: str, scalar_default: str = "int") -> Arg:
    s = STRUCT_RE.match(text)
    if s:  # name:Struct{m1,m2,...}scalar[n]=gen, a struct whose members are all of one scalar type
        name, struct, members, t, n, rhs = s.groups()
        if t not in CTYPES:
            raise ValueError(f"unknown member type {t!r} in {text!r}")
        fields = tuple(f.strip() for f in members.split(","))
        return Arg(name, struct, CTYPES[t][1], int(n), rhs or "zeros", lanes=len(fields), fields=fields)
    m = ARG_RE.match(text)
    if not m:
        raise ValueError(f"cannot read the argument {text!r} (want name:type[n]=gen or name=value)")
    name, t, n, w, k, rhs = m.groups()
    t = t or scalar_default
    shape = (int(n), int(w)) if w else ()
    count = int(n) * int(w) if w else int(n) if n is not None else None
    lists = int(k) if k else 0
    if t in VECTORS and n is not None:
        ctype, dt, lanes = VECTORS[t]
        return Arg(name, ctype, dt, count, rhs or "zeros", lanes=lanes, shape=shape, lists=lists)
    if t not in CTYPES:
        raise ValueError(f"unknown element type {t!r} in {text!r}")
    ctype, dt = CTYPES[t]
    if n is not None:
        return Arg(name, ctype, dt, count, rhs or "zeros", shape=shape, lists=lists)
    if rhs is None:
        raise ValueError(f"the scalar {name!r} needs a value ({text!r})")
    return Arg(name, ctype, dt, None, value=rhs)


def dims(v) -> tuple[int, int, int]:
    v = [v] if isinstance(v, int) else list(v)
    return tuple(v + [1] * (3 - len(v)))  # type: ignore[return-value]


def parse_param(text: str, textures: set[str]) -> Arg:
    """A kernel argument; a bare name of one of the run's textures is a texture object parameter."""
    if text.strip() in textures:
        return Arg(text.strip(), "cudaTextureObject_t", "u8", None, value="0", texobj=True)
    return parse_arg(text)


def parse_run(d: dict) -> Run:
    tex = {re.split(r"[:\s]", t.strip())[0] for t in d.get("textures", [])}
    return Run(d["kernel"], dims(d["grid"]), dims(d["block"]), [parse_param(a, tex) for a in d["args"]],
               [parse_arg(c) for c in d.get("consts", [])], int(d.get("shared", 0)), bool(d.get("neural", False)),
               d.get("from", ""), tuple(d.get("ignore", ())), [parse_arg(t) for t in d.get("textures", [])],
               tuple(d.get("unordered", ())))


def generate(a: Arg, rng: np.random.Generator) -> np.ndarray:
    """The buffer's initial contents (a vector type's components drawn as one flat array)."""
    n, dt = (a.count or 0) * max(a.lanes, 1) * max(a.lists, 1), np.dtype(a.dtype)
    flat = scalars(a, n, dt, rng)
    return flat.view(a.np_dtype) if a.lanes else flat


def scalars(a: Arg, n: int, dt: np.dtype, rng: np.random.Generator) -> np.ndarray:
    m = re.match(r"(\w+)(?:\((.*)\))?$", a.gen.strip())
    if not m:
        raise ValueError(f"unknown generator {a.gen!r} for {a.name!r}")
    kind, params = m.group(1), [float(x) for x in m.group(2).split(",")] if m.group(2) else []
    if kind == "zeros":
        return np.zeros(n, dt)
    if kind == "fill":
        return np.full(n, params[0], dt)
    if kind == "iota":  # iota(start, step)
        return (np.arange(n) * (params[1] if len(params) > 1 else 1) + (params[0] if params else 0)).astype(dt)
    if kind == "vals":
        return np.resize(np.array(params, dt), n)
    if kind == "sorted":  # rand(lo, hi), sorted within segments of params[2] elements
        lo, hi, seg = params
        v = rng.uniform(lo, hi, n) if dt.kind == "f" else rng.integers(int(lo), int(hi), n)
        return np.concatenate([np.sort(v[i:i + int(seg)]) for i in range(0, n, int(seg))]).astype(dt)
    if kind == "perm":
        return rng.permutation(n).astype(dt)
    if kind == "bits":
        return np.frombuffer(rng.bytes(n * dt.itemsize), dt).copy()
    if kind == "rand":
        if dt.kind == "f":
            lo, hi = params or (-1.0, 1.0)
            return rng.uniform(lo, hi, n).astype(dt)
        if dt.kind == "b":
            return rng.integers(0, 2, n).astype(dt)
        lo, hi = params or (0, 100)
        return rng.integers(int(lo), int(hi), n).astype(dt)
    raise ValueError(f"unknown generator {a.gen!r} for {a.name!r}")


def inputs(file: str, run: Run, index: int) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """(buffers, constants) of the run, from its own seed."""
    seed = int.from_bytes(hashlib.sha256(f"{file}:{run.kernel}:{index}".encode()).digest()[:8], "little")
    rng = np.random.default_rng(seed)
    bufs = {a.name: generate(a, rng) for a in run.args if a.is_buffer}
    consts = {c.name: generate(c, rng) for c in run.consts if c.is_buffer}
    for t in run.textures:  # read-only: kept with the buffers (the oracle reads them in the same order)
        bufs[t.name] = generate(t, rng)
    return bufs, consts


def c_scalar(a: Arg) -> str:
    """The scalar as a C++ expression of its type (floats exactly, through a hex literal)."""
    if a.ctype in ("float", "double"):
        v = float(a.value)
        return f"(({a.ctype}){v.hex()})"
    return f"(({a.ctype}){int(a.value, 0)})"


def qgrun_scalar(a: Arg) -> str:
    if a.ctype in ("float", "double"):
        return repr(float(a.value))
    return str(int(a.value, 0))
