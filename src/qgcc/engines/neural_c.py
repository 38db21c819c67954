"""The `neural` engine's compiled CPU step: neural_c.c built once with the system C compiler.

Why C: a step is about a million multiply-adds spread over ~50 small operations per
layer; in torch the per-operation overhead dominates (46 steps/s), while one C call per
step runs the same arithmetic at the speed of the products.  The C code computes the
stock layer math, restricted to nonzero weights; docs/engines.md gives the argument
that its numbers are transformers' numbers, and the kernel checks that argument's
premises at every sublayer (a nonzero return code means "fall back").

The shared library is cached under $QGCC_CACHE (default ~/.cache/qgcc) by a hash of
the source and flags, written atomically, so concurrent first runs are safe.  When no
compiler is available `library()` is None and the engine uses its torch path.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from ..link.weights import LayerWeights
from ..qwen35 import QWEN35_2B as qwen
from ..usercache import cache_dir

HEADS, HIDDEN, HEAD_DIM, CONV = qwen.linear_heads, qwen.hidden, qwen.head_dim, qwen.conv_kernel

SOURCE = Path(__file__).with_name("neural_c.c")
FLAGS = ["-O3", "-march=native", "-ffp-contract=off", "-fno-fast-math", "-shared", "-fPIC", "-lm"]
CODES = {1: "a residual entry is not exactly +-8", 2: "a SiLU/sigmoid argument is outside its exact range",
         3: "a key or query is not one-hot with a power-of-two entry",
         4: "a read's mean square is not a power of four"}

_lib = None
_lib_error: str | None = None


class StepError(RuntimeError):
    """The compiled step found a premise of its exactness argument violated."""


def _cpu_id() -> str:
    import platform

    ident = platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith(("model name", "flags")):
                    ident += "|" + line.split(":", 1)[-1].strip()
                if ident.count("|") >= 2:
                    break
    except OSError:
        pass
    return ident


def _build() -> Path:
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not cc:
        raise OSError("no C compiler (cc or gcc) on PATH")
    src = SOURCE.read_bytes()
    # -march=native code is only valid on this kind of CPU: the cache key names it.
    tag = hashlib.sha256(src + " ".join([cc] + FLAGS + [_cpu_id()]).encode()).hexdigest()[:16]
    out = cache_dir() / f"neural_c-{tag}.so"
    if out.exists():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(suffix=".so", dir=out.parent)
    os.close(fd)
    try:
        r = subprocess.run([cc, str(SOURCE), "-o", tmp] + FLAGS, capture_output=True, text=True)
        if r.returncode != 0:
            raise OSError(f"{cc} failed: {r.stderr.strip()[:500]}")
        os.replace(tmp, out)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return out


def library():
    """The loaded kernel, or None (with the reason in `unavailable_reason()`)."""
    global _lib, _lib_error
    if _lib is None and _lib_error is None:
        try:
            lib = ctypes.CDLL(str(_build()))
            lib.qg_step.restype = ctypes.c_int
            lib.qg_step.argtypes = [ctypes.c_void_p, ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p]
            lib.qg_size_of_layer.restype = ctypes.c_int
            if lib.qg_size_of_layer() != ctypes.sizeof(_Layer):
                raise OSError("neural_c.c and neural_c.py disagree on the layer struct")
            _lib = lib
        except OSError as e:
            _lib_error = str(e)
    return _lib


def unavailable_reason() -> str | None:
    library()
    return _lib_error


class _SignCols(ctypes.Structure):
    _fields_ = [("rows", ctypes.c_int32), ("ptr", ctypes.c_void_p), ("row", ctypes.c_void_p),
                ("val2", ctypes.c_void_p), ("base", ctypes.c_void_p)]


class _Cols(ctypes.Structure):
    _fields_ = [("cols", ctypes.c_int32), ("ptr", ctypes.c_void_p), ("row", ctypes.c_void_p),
                ("val", ctypes.c_void_p)]


class _Layer(ctypes.Structure):
    _fields_ = [("nheads", ctypes.c_int32), ("mix", _SignCols), ("gnorm", ctypes.c_void_p), ("out", _Cols),
                ("units", ctypes.c_int32), ("mlp", _SignCols), ("down", _Cols),
                ("state", ctypes.c_void_p), ("scratch", ctypes.c_void_p)]


def _coo(st):
    idx, val = st.arrays()
    r, c = np.divmod(idx, st.shape[-1])
    return r, c, val


class Unsupported(Exception):
    """A weight property the compiled step relies on does not hold (the torch path is used)."""


EXACT_LIMIT = 2 ** 24


class CompiledLayers:
    """The layers in the column form neural_c.c reads, with the load-time checks of docs/engines.md."""

    def __init__(self, layers: list[LayerWeights], one_dim: int):
        self.keep: list[np.ndarray] = []  # arrays the C structs point into
        self.s0 = np.full(HIDDEN, -1.0, np.float32)
        self.s0[one_dim] = 1.0
        self.states = np.zeros((len(layers), HEADS, HEAD_DIM, HEAD_DIM), np.float32)
        self.structs = (_Layer * len(layers))()
        for i, lw in enumerate(layers):
            self._layer(i, lw, self.structs[i])

    def _arr(self, a, dtype) -> int:
        a = np.ascontiguousarray(a, dtype=dtype)
        self.keep.append(a)
        return a.ctypes.data

    def _by_column(self, r, c, v, ncols: int):
        order = np.lexsort((r, c))
        r, c, v = r[order], c[order], v[order]
        ptr = np.concatenate([[0], np.cumsum(np.bincount(c, minlength=ncols)[:ncols])])
        return ptr, r, c, v

    def _signcols(self, i: int, what: str, r, c, v, nrows: int) -> _SignCols:
        """Rows evaluated on a +-1 input: exact only if every row is integer-valued or has a
        single term, and its absolute sum stays below 2^24 (then any order is exact)."""
        r, c, v = np.asarray(r, np.int64), np.asarray(c, np.int64), np.asarray(v, np.float32)
        terms = np.bincount(r, minlength=nrows)
        multi = terms[r] > 1
        if np.any(v[multi] != np.round(v[multi])):
            raise Unsupported(f"layer {i}: a {what} row of several terms has a non-integer weight")
        l1 = np.bincount(r, weights=np.abs(v.astype(np.float64)), minlength=nrows)
        if np.any(l1 >= EXACT_LIMIT):
            raise Unsupported(f"layer {i}: a {what} row can sum beyond 2^24")
        s0 = self.s0.astype(np.float64)
        base = np.bincount(r, weights=v.astype(np.float64) * s0[c], minlength=nrows)
        ptr, r, c, v = self._by_column(r, c, v, HIDDEN)
        val2 = (-2.0 * v.astype(np.float64) * s0[c]).astype(np.float32)
        return _SignCols(nrows, self._arr(ptr, np.int32), self._arr(r, np.int32), self._arr(val2, np.float32),
                         self._arr(base, np.float32))

    def _cols(self, r, c, v, ncols: int) -> _Cols:
        ptr, r, c, v = self._by_column(np.asarray(r), np.asarray(c), np.asarray(v, np.float32), ncols)
        return _Cols(ncols, self._arr(ptr, np.int32), self._arr(r, np.int32), self._arr(v, np.float32))

    def _layer(self, i: int, lw: LayerWeights, L: _Layer) -> None:
        t = lw.tensors

        def dense(name):
            return t[name].dense()

        for name in ("input_layernorm.weight", "post_attention_layernorm.weight"):
            if np.any(dense(name) != 0):
                raise Unsupported(f"layer {i}: {name} is not zero, so RMSNorm is not exactly h/8")
        gr, gc, gv = _coo(t["mlp.gate_proj.weight"])
        ur, uc, uv = _coo(t["mlp.up_proj.weight"])
        dr, dc, dv = _coo(t["mlp.down_proj.weight"])
        units = int(max(gr.max(initial=-1), ur.max(initial=-1), dc.max(initial=-1))) + 1
        L.units = units
        L.mlp = self._signcols(i, "gate/up", np.concatenate([gr, ur + units]), np.concatenate([gc, uc]),
                               np.concatenate([gv, uv]), 2 * units)
        L.down = self._cols(dr, dc, dv, units)
        qr, qc, qv = _coo(t["linear_attn.in_proj_qkv.weight"])
        used = sorted(int(h) for h in np.unique((qr[qr < 2 * HEADS * HEAD_DIM] // HEAD_DIM) % HEADS))
        if used != list(range(len(used))):
            raise Unsupported(f"layer {i}: the DeltaNet heads in use are not a prefix")
        nh = len(used)
        span = nh * HEAD_DIM
        L.nheads = nh
        L.scratch = self._arr(np.zeros(max(4 * span + nh, 2 * units, 1)), np.float32)
        L.state = self.states[i].ctypes.data
        if not nh:
            empty = np.zeros(0, np.int64)
            L.mix = self._signcols(i, "mixer", empty, empty, empty, 0)
            L.out = self._cols(empty, empty, empty, 0)
            L.gnorm = self._arr(np.zeros(1), np.float32)
            return
        conv = dense("linear_attn.conv1d.weight")
        rows = np.array([p * HEADS * HEAD_DIM + e for p in range(3) for e in range(span)])
        if np.any(conv[rows, 0, :CONV - 1] != 0) or np.any(conv[rows, 0, CONV - 1] != 1):
            raise Unsupported(f"layer {i}: the conv taps are not [0, 0, 0, 1]")
        part, rest = np.divmod(qr, HEADS * HEAD_DIM)  # rows renumbered q | k | v for the used heads
        keep = rest < span
        zr, zc, zv = _coo(t["linear_attn.in_proj_z.weight"])
        zk = zr < span
        br, bc, bv = _coo(t["linear_attn.in_proj_b.weight"])
        bk = br < nh
        L.mix = self._signcols(i, "mixer",
                               np.concatenate([part[keep] * span + rest[keep], 3 * span + zr[zk], 4 * span + br[bk]]),
                               np.concatenate([qc[keep], zc[zk], bc[bk]]),
                               np.concatenate([qv[keep], zv[zk], bv[bk]]), 4 * span + nh)
        ar, _, _ = _coo(t["linear_attn.in_proj_a.weight"])
        if np.any(ar < nh):
            raise Unsupported(f"layer {i}: in_proj_a is not zero, so the decay depends on the input")
        # The stock decay is exp(-exp(A_log) * softplus(a + dt_bias)) with a == 0 here; with
        # exp(A_log) == 0 (A_log = -1000 underflows) it is exp(-0) == 1 in any library.
        A_log = dense("linear_attn.A_log")[:nh].astype(np.float32)
        dt = dense("linear_attn.dt_bias")[:nh]
        with np.errstate(under="ignore"):
            if np.any(np.exp(A_log) != 0) or not np.all(np.isfinite(dt)):
                raise Unsupported(f"layer {i}: the state decay is not exactly 1")
        L.gnorm = self._arr(dense("linear_attn.norm.weight"), np.float32)
        orr, oc, ov = _coo(t["linear_attn.out_proj.weight"])
        if np.any(oc >= span):
            raise Unsupported(f"layer {i}: out_proj reads a head that is not in use")
        L.out = self._cols(orr, oc, ov, span)


class CStepLayers:
    """All compiled layers stepped by neural_c.c; the same interface as the torch path."""

    def __init__(self, layers: list[LayerWeights], one_dim: int):
        self.lib = library()
        if self.lib is None:
            raise Unsupported(f"the C step is unavailable: {unavailable_reason()}")
        self.compiled = CompiledLayers(layers, one_dim)
        self.nlayers = len(layers)
        self._ptr = ctypes.cast(self.compiled.structs, ctypes.c_void_p)
        self._s0sign = (self.compiled.s0 < 0).astype(np.uint32)
        self._s0 = self._s0sign.ctypes.data

    def reset(self, recurrent_init: dict[int, np.ndarray] | None = None) -> None:
        self.compiled.states[:] = 0.0
        for i, s0 in (recurrent_init or {}).items():
            self.compiled.states[i] = np.asarray(s0, np.float32).reshape(HEADS, HEAD_DIM, HEAD_DIM)

    def recurrent_state(self, layer: int) -> np.ndarray:
        return self.compiled.states[layer].copy()

    def step(self, h: np.ndarray) -> np.ndarray:
        x = np.array(h, dtype=np.float32, copy=True).reshape(HIDDEN)
        rc = self.lib.qg_step(self._ptr, self.nlayers, self._s0, x.ctypes.data)
        if rc:
            raise StepError(f"layer {rc // 100 - 1}: {CODES.get(rc % 100, rc % 100)}")
        return x
