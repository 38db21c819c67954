"""g++ as an independent model of a kernel's text: the same source compiled as C++ with a
small host shim that runs the threads of each block one after another.

Only for kernels whose threads do not communicate (no __syncthreads, no shared data, no
overlapping writes): then running them in sequence gives CUDA's result.
"""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

need_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ for the independent model")

# Host stand-ins for the intrinsics that qgcc's routine libraries (src/qgcc/frontend/*.cu)
# call, so a test can compile a library's own text natively and compare it with the host.
ROUTINE_SHIM = r"""
#include <cstdio>
#include <cstring>
#define __device__ static
static unsigned __clz(int x) { return x ? (unsigned)__builtin_clz((unsigned)x) : 32u; }
static int __clzll(unsigned long long x) { return x ? __builtin_clzll(x) : 64; }
static unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
    return (unsigned long long)(((unsigned __int128)a * b) >> 64); }
static float __uint_as_float(unsigned u) { float f; memcpy(&f, &u, 4); return f; }
static unsigned __float_as_uint(float f) { unsigned u; memcpy(&u, &f, 4); return u; }
"""

SHIM = r"""
#include <cmath>
#include <cstdio>
#include <cstring>
struct qg_dim3 { unsigned x, y, z; };
static qg_dim3 threadIdx, blockIdx, blockDim, gridDim;
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __restrict__
#define __constant__
#define __shared__ static  // compiled only: the kernels run by the shim do not share data
static void __syncthreads() {}
"""

CTYPES = {np.dtype(np.int32): "int", np.dtype(np.uint32): "unsigned", np.dtype(np.float32): "float",
          np.dtype(np.int64): "long long", np.dtype(np.uint64): "unsigned long long",
          np.dtype(np.float64): "double", np.dtype(np.int16): "short", np.dtype(np.uint16): "unsigned short"}


def gxx_model(tmp_path, src: str, kernel: str, grid: int, block: int, args: list, flags=()) -> dict:
    """Run `kernel` as C++ on the host, thread by thread; args are (name, array), (name, int),
    (name, numpy scalar) for a scalar of that type (np.int64(5): a long long), or
    (name, structured array, C struct name) for a buffer of structs whose members are all
    4-byte int/unsigned/float (then C's layout has no padding and matches the array's bytes)."""
    decls, call, prints = [], [], []
    for name, v, *ctype in args:
        if isinstance(v, np.ndarray):
            # a 64-bit element is two words, the low one first (x86 order)
            words = np.frombuffer(np.ascontiguousarray(v).tobytes(), np.uint32)
            ct = ctype[0] if ctype else CTYPES[v.dtype]
            bits = ", ".join(str(int(x)) for x in words)
            decls.append(f"static unsigned {name}_bits[] __attribute__((aligned(8))) = {{{bits}}};")
            decls.append(f"static {ct} *{name} = ({ct} *){name}_bits;")
            prints.append(f'for (unsigned i = 0; i < {words.size}; i++) printf("%u ", {name}_bits[i]); printf("\\n");')
        elif isinstance(v, np.float64):  # a double scalar, exactly (C's hexadecimal floating literal)
            decls.append(f"static double {name} = {float(v).hex() if np.isfinite(v) else ('1e999' if v > 0 else '-1e999') if np.isinf(v) else 'NAN'};")
        elif isinstance(v, np.float32):  # a float scalar, exactly (a hexadecimal literal)
            decls.append(f"static float {name} = {float(v).hex()}f;")
        elif isinstance(v, np.generic):
            decls.append(f"static {CTYPES[v.dtype]} {name} = ({CTYPES[v.dtype]})0x{int(v) & ((1 << 64) - 1):x}ull;")
        else:
            decls.append(f"static int {name} = {int(v)};")
        call.append(name)
    main = "\n".join(decls) + f"""
int main() {{
    gridDim = {{{grid}, 1, 1}}; blockDim = {{{block}, 1, 1}};
    for (unsigned qg_b = 0; qg_b < {grid}; qg_b++)
        for (unsigned qg_t = 0; qg_t < {block}; qg_t++) {{
            blockIdx = {{qg_b, 0, 0}}; threadIdx = {{qg_t, 0, 0}};
            {kernel}({", ".join(call)});
        }}
    {" ".join(prints)}
    return 0;
}}
"""
    cpp = tmp_path / "model.cpp"
    cpp.write_text(SHIM + src + main)
    exe = tmp_path / "model"
    subprocess.run(["g++", "-O1", "-std=c++17", "-ffp-contract=off", "-frounding-math", "-fno-strict-aliasing", *flags, "-o", str(exe),
                    str(cpp)], check=True, capture_output=True)
    lines = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.splitlines()
    arrays = [(a[0], a[1]) for a in args if isinstance(a[1], np.ndarray)]
    return {n: np.array([int(x) for x in line.split()], np.uint32).view(v.dtype) for (n, v), line in zip(arrays, lines)}


