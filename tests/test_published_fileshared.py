"""`__shared__` variables declared at file scope, outside any kernel, as the CUDA samples'
dct8x8 declares its temporary blocks (issue 27).  That is valid CUDA: each kernel that uses
such a variable gets it in its own block's shared memory, and device functions name it too.
Kernels are compiled with `qgcc --no-link -o k.qg`, run by `qgrun` on the emulator (and once
in the network) and compared with a numpy model in the kernels' own operation order."""

from __future__ import annotations

import numpy as np
import pytest

from test_published_constructs import cli_run

BLOCKS8 = r"""
#define BS 8
#define BS2 64
__shared__ float TileA[BS2];          // file scope: every kernel that uses them has its own
__shared__ float TileB[BS2];
static __shared__ int Touched;        // `static` as well

__device__ float dot8(const float *a, int sa, const float *b, int sb) {
    float s = 0.0f;
    for (int k = 0; k < BS; k++)
        s += a[k * sa] * b[k * sb];
    return s;
}

__device__ void loadTile(const float *src, int tx, int ty) {   // a device function writes one
    TileA[ty * BS + tx] = src[ty * BS + tx];
}

// dst = C X C^T for each 8x8 block: rows into TileB, then columns out of it
__global__ void forward8x8(const float *src, const float *coef, float *dst, int *touched) {
    int tx = threadIdx.x, ty = threadIdx.y;
    int base = blockIdx.x * BS2;
    if (tx == 0 && ty == 0)
        Touched = 0;
    loadTile(src + base, tx, ty);
    __syncthreads();
    TileB[ty * BS + tx] = dot8(coef + tx * BS, 1, TileA + ty * BS, 1);
    atomicAdd(&Touched, 1);
    __syncthreads();
    dst[base + ty * BS + tx] = dot8(coef + ty * BS, 1, TileB + tx, BS);
    if (tx == 0 && ty == 0)
        touched[blockIdx.x] = Touched;
}

// X = C^T Y C, in place in TileA only
__global__ void inverse8x8(float *data, const float *coef) {
    int tx = threadIdx.x, ty = threadIdx.y;
    int base = blockIdx.x * BS2;
    loadTile(data + base, tx, ty);
    __syncthreads();
    float v = dot8(coef + tx, BS, TileA + ty * BS, 1);
    __syncthreads();
    TileA[ty * BS + tx] = v;
    __syncthreads();
    data[base + ty * BS + tx] = dot8(coef + ty, BS, TileA + tx, BS);
}
"""


def dot8(a, b) -> np.float32:
    s = np.float32(0)
    for x, y in zip(a, b):
        s = np.float32(s + np.float32(x * y))
    return s


def forward_model(src: np.ndarray, c: np.ndarray) -> np.ndarray:
    out = np.zeros_like(src)
    for b in range(src.size // 64):
        x = src[64 * b:64 * b + 64].reshape(8, 8)
        t = np.array([[dot8(c[tx], x[ty]) for tx in range(8)] for ty in range(8)], np.float32)
        out[64 * b:64 * b + 64] = np.array([[dot8(c[ty], t[:, tx]) for tx in range(8)] for ty in range(8)],
                                           np.float32).reshape(-1)
    return out


def inverse_model(y: np.ndarray, c: np.ndarray) -> np.ndarray:
    out = np.zeros_like(y)
    for b in range(y.size // 64):
        x = y[64 * b:64 * b + 64].reshape(8, 8)
        t = np.array([[dot8(c[:, tx], x[ty]) for tx in range(8)] for ty in range(8)], np.float32)
        out[64 * b:64 * b + 64] = np.array([[dot8(c[:, ty], t[:, tx]) for tx in range(8)] for ty in range(8)],
                                           np.float32).reshape(-1)
    return out


def dct_matrix() -> np.ndarray:
    k = np.arange(8)
    c = np.cos((2 * k[None, :] + 1) * k[:, None] * np.pi / 16) * np.sqrt(2 / 8)
    c[0] /= np.sqrt(2)
    return c.astype(np.float32)


def test_file_scope_shared_arrays_serve_each_kernel_that_uses_them(qgcc, qgrun, tmp_path):
    """dct8x8's layout: two file-scope `__shared__` tiles and a `static __shared__` counter, one
    written by a device function, both read through pointers passed to another; two kernels in
    one file, 2 blocks of 8x8 threads.  The forward transform and the inverse (in place) equal
    the numpy model bit for bit; each block counts its own 64 atomics (its own cells)."""
    rng = np.random.default_rng(8)
    src = rng.uniform(-128, 127, 128).astype(np.float32)
    c = dct_matrix()
    got = cli_run(qgcc, qgrun, tmp_path, BLOCKS8, "forward8x8", 2, "8,8",
                  {"src": src, "coef": c.reshape(-1), "dst": np.zeros(128, np.float32),
                   "touched": np.zeros(2, np.int32)})
    want = forward_model(src, c)
    assert got["dst"].tobytes() == want.tobytes()
    assert got["touched"].tolist() == [64, 64]
    back = cli_run(qgcc, qgrun, tmp_path, BLOCKS8, "inverse8x8", 2, "8,8", {"data": want, "coef": c.reshape(-1)})
    assert back["data"].tobytes() == inverse_model(want, c).tobytes()
    assert np.max(np.abs(back["data"] - src)) < 1e-3        # and it is the inverse


def test_each_kernel_gets_cells_only_for_the_file_scope_shared_it_uses():
    """The forward kernel uses both tiles and the counter (129 cells), the inverse one tile
    (64): CUDA's rule that a file-scope `__shared__` variable lives in the shared memory of each
    kernel that references it, which a kernel-local declaration of the same name hides."""
    import qgcc

    prog = qgcc.compile(BLOCKS8 + "__global__ void hides(float *o) { __shared__ float TileA[2];\n"
                                  "TileA[threadIdx.x] = 1.0f; o[0] = TileA[0]; }\n").program
    assert {k.name: k.shared_words for k in prog.kernels} == {"forward8x8": 129, "inverse8x8": 64, "hides": 2}


@pytest.mark.slow  # about a minute: 16 warps of float loops, step by step in the network
def test_file_scope_shared_in_the_network(qgcc, qgrun, tmp_path):
    """The inverse kernel linked (`qgcc -o`) and run by `qgrun --engine neural`: the same bytes
    as the model."""
    c = dct_matrix()
    y = np.random.default_rng(9).normal(size=64).astype(np.float32) * 50
    d = tmp_path / "net"
    d.mkdir()
    (d / "k.cu").write_text(BLOCKS8)
    assert qgcc(d / "k.cu", "-o", d / "k.qg").exit_code == 0
    np.save(d / "data.npy", y)
    np.save(d / "coef.npy", c.reshape(-1))
    res = qgrun(d / "k.qg", "--kernel", "inverse8x8", "--engine", "neural", "--grid", "1", "--block", "8,8",
                "--trace", "none", "--arg", f"data=@{d / 'data.npy'}", "--arg", f"coef=@{d / 'coef.npy'}",
                "--out", f"data={d / 'out.npy'}")
    assert res.exit_code == 0, res.stderr
    assert np.load(d / "out.npy").tobytes() == inverse_model(y, c).tobytes()
