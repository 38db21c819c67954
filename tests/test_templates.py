"""Function and kernel templates (issue 12).

Published kernels are templated on a tile size (`template <int BLOCK_SIZE> __global__ void
matrixMul(...)`) or an element type (`template <class T>`), and host code instantiates them
in the launch (`matrixMul<16><<<grid, block>>>(...)`), which qgcc never sees.  So device
function templates are instantiated from their uses (explicit `f<float, 4>(...)` or deduced
`f(x)`), and a kernel template when it is named at launch (`qgrun --kernel 'matmul<8>'`,
`qgcc --instantiate`, `compile_source(instantiate=...)`).  Thread-independent kernels are
compared with g++ compiling the same text (templates are C++), the tiled matrix product with
a float32 numpy model that adds in the kernel's order.
"""

from __future__ import annotations

import numpy as np
import pytest

from qgcc.frontend import compile_source
from qgcc.ref.emulator import run as emulate
from qgcc.runtime.launch import make_launch
from frontcheck import assert_error, emulate_src
from gxx import gxx_model, need_gxx

F32 = np.float32

DEVICE = r"""
template <typename T, int N>
__device__ T dotN(const T *a, const T *b) {
    T s = 0;
    for (int i = 0; i < N; i++)
        s += a[i] * b[i];
    return s;
}

template <typename T> __device__ __forceinline__ T clamp01(T v) { return v < (T)0 ? (T)0 : (v > (T)1 ? (T)1 : v); }

template <class T> __device__ T maxOf(T a, T b) { return a > b ? a : b; }

template <int SHIFT> __device__ unsigned rotl(unsigned x) { return (x << SHIFT) | (x >> (32 - SHIFT)); }

__global__ void templated(const float *fa, const int *ia, float *fout, int *iout, unsigned *uout) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    fout[t] = clamp01(dotN<float, 3>(fa + 3 * t, fa + 3 * t + 1));     // explicit, then deduced
    iout[t] = dotN<int, 4>(ia + t, ia + t + 1) + maxOf(ia[t], -ia[t]) + maxOf<int>(t, 'a');
    uout[t] = rotl<7>(uout[t]) ^ rotl<31>(t);
}
"""


@need_gxx
def test_device_function_templates_explicit_and_deduced_match_gxx(tmp_path):
    rng = np.random.default_rng(9)
    args = [("fa", (rng.normal(size=30) * 0.7).astype(F32)), ("ia", rng.integers(-50, 50, 16).astype(np.int32)),
            ("fout", np.zeros(8, F32)), ("iout", np.zeros(8, np.int32)),
            ("uout", rng.integers(0, 2**32, 8, dtype=np.uint64).astype(np.uint32))]
    got = emulate_src(DEVICE, "templated", 2, 4, args)
    want = gxx_model(tmp_path, DEVICE, "templated", 2, 4, args)
    for name in ("fout", "iout", "uout"):
        assert got[name].view(np.uint32).tolist() == want[name].view(np.uint32).tolist(), name


KERNELS = r"""
template <int BLOCK_SIZE>
__global__ void matrixMulTile(const float *A, const float *B, float *C, int n) {
    __shared__ float As[BLOCK_SIZE][BLOCK_SIZE];
    __shared__ float Bs[BLOCK_SIZE][BLOCK_SIZE];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * BLOCK_SIZE + ty, col = blockIdx.x * BLOCK_SIZE + tx;
    float sum = 0.0f;
    for (int t = 0; t < n / BLOCK_SIZE; t++) {
        As[ty][tx] = A[row * n + t * BLOCK_SIZE + tx];
        Bs[ty][tx] = B[(t * BLOCK_SIZE + ty) * n + col];
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BLOCK_SIZE; ++k)
            sum += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    C[row * n + col] = sum;
}

template <typename T>
__global__ void scale(T *x, T f, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = x[i] * f;
}
"""


def test_a_kernel_template_named_at_launch_is_instantiated():
    """The source never instantiates matrixMulTile; naming it at launch does (tile 2 and 4)."""
    rng = np.random.default_rng(10)
    n = 4
    a = rng.normal(size=(n, n)).astype(F32)
    b = rng.normal(size=(n, n)).astype(F32)
    want = np.zeros((n, n), F32)
    for i in range(n):
        for j in range(n):
            s = F32(0)
            for k in range(n):
                s = F32(s + F32(a[i, k] * b[k, j]))
            want[i, j] = s
    prog = compile_source(KERNELS, "mm.cu", instantiate=("matrixMulTile<2>", "matrixMulTile< 4 >"))
    assert [k.name for k in prog.kernels] == ["matrixMulTile__2", "matrixMulTile__4"]
    for tile in (2, 4):
        k = prog.kernel(f"matrixMulTile<{tile}>")
        launch = make_launch(prog, k, (n // tile, n // tile, 1), (tile, tile, 1), {"n": n},
                             {"A": a.reshape(-1), "B": b.reshape(-1), "C": np.zeros(n * n, F32)})
        c = launch.read_buffer(emulate(launch, max_steps=500_000).memory, "C")
        assert c.view(np.uint32).tolist() == want.reshape(-1).view(np.uint32).tolist(), tile


@need_gxx
def test_type_parameters_of_a_kernel_template_match_gxx(tmp_path):
    for ty, arr in (("float", np.array([1.5, -2.25, 3e-3, 7.0, 0.1], F32)),
                    ("unsigned int", np.array([1, 2, 0xFFFFFFFF, 7, 12345], np.uint32))):
        args = [("x", arr), ("f", 3), ("n", 5)]
        word = int(F32(3).view(np.uint32)) if ty == "float" else 3  # the launch takes parameter words
        got = emulate_src(KERNELS, f"scale<{ty}>", 1, 8, [("x", arr), ("f", word), ("n", 5)],
                          instantiate=(f"scale<{ty}>",))
        want = gxx_model(tmp_path, KERNELS, f"scale<{ty}>", 1, 8, args)
        assert got["x"].view(np.uint32).tolist() == want["x"].view(np.uint32).tolist(), ty


def test_qgrun_instantiates_the_kernel_it_is_asked_for(tmp_path, qgrun, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "k.cu").write_text(KERNELS)
    np.save("x.npy", np.arange(5, dtype=np.int32))
    r = qgrun("k.cu", "--kernel", "scale<int>", "--grid", "1", "--block", "8", "--arg", "x=@x.npy",
              "--arg", "f=-3", "--arg", "n=5", "--engine", "ref", "--trace", "none", "--out", "x=o.npy")
    assert r.exit_code == 0, r.output
    assert np.load("o.npy").tolist() == [0, -3, -6, -9, -12]
    r = qgrun("k.cu", "--grid", "1", "--block", "8", "--engine", "ref")
    assert r.exit_code != 0 and "the file defines only templates; a kernel template is instantiated when it " \
                               "is named at launch (qgrun --kernel 'NAME<ARGS>')" in r.output


@pytest.mark.parametrize("src, inst, line, col, message", [
    (KERNELS, ("nope<1>",), 1, 1,
     "kernel 'nope<1>': the program has no kernel template 'nope' (kernel templates: matrixMulTile, scale)"),
    (KERNELS, ("matrixMulTile<float>",), 1, 1, "kernel 'matrixMulTile<float>': 'float' is not an integer for "
                                                "'BLOCK_SIZE'"),
    (KERNELS, ("scale<long double>",), 1, 1,
     "kernel 'scale<long double>': 'long double' is not supported; use 'double' (for 'T')"),
    ("template <typename T> __device__ T f(T a, T b) { return a; }\n"
     "__global__ void k(int *a, float *b) { a[0] = f(a[0], b[0]); }\n", (), 2, 54,
     "conflicting deductions of 'T' for 'f' ('int' and 'float'); write f<...>(...)"),
    ("template <int N> __device__ int f() { return N; }\n__global__ void k(int *a) { a[0] = f(); }\n", (), 2, 36,
     "cannot deduce template parameter 'N' of 'f'; write f<...>(...)"),
    ("template <float N> __global__ void k(int *a) { }\n", (), 1, 17,
     "template parameter 'N' must have an integer type (got 'float')"),
    ("template <typename T> __device__ T f(T a) { return a; }\n__global__ void k(int *a) { T x = 1; }\n", (), 2, 29,
     "unknown type name 'T'"),
], ids=lambda v: v if isinstance(v, str) and len(v) < 3 else None)
def test_template_misuses_are_named(src, inst, line, col, message):
    assert_error(src, line, col, message, instantiate=inst)


STRUCT_COPY = """struct __align__(4) Pixel { unsigned char r, g, b, a; };
template <class T> __global__ void copyk(T *dst, const T *src, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[i] = src[i];
}
"""


def test_an_instance_on_a_struct_type_is_named_at_launch_as_it_was_instantiated(tmp_path, qgcc, qgrun, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "k.cu").write_text(STRUCT_COPY)
    assert qgcc("k.cu", "--no-link", "--instantiate", "copyk<Pixel>", "-o", "k.qg").exit_code == 0
    src = np.zeros(6, dtype=[(c, np.uint8) for c in "rgba"])
    src.view(np.uint8)[:] = np.arange(24, dtype=np.uint8) * 7
    np.save("src.npy", src)
    np.save("dst.npy", np.zeros_like(src))
    r = qgrun("k.qg", "--kernel", "copyk<Pixel>", "--grid", "1", "--block", "8", "--arg", "src=@src.npy",
              "--arg", "dst=@dst.npy", "--arg", "n=5", "--engine", "ref", "--trace", "none", "--out", "dst=o.npy")
    assert r.exit_code == 0, r.output
    got = np.load("o.npy").view(np.uint8).tolist()
    assert got == src.view(np.uint8)[:20].tolist() + [0, 0, 0, 0]  # five pixels copied, the sixth untouched
