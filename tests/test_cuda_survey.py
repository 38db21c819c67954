"""Kernels in the style of the published ones (issue 12's survey), written for this project.

Each kernel below is this project's own text, written after reading how a well-known public
kernel of that kind is put together (the CUDA samples, Rodinia, the PMPP and "CUDA by Example"
books, GPU Gems): the same constructs (macros with parameters, templates named at launch,
reference parameters, `__attribute__`, structs in buffers, `extern __shared__`, `__constant__`
tables, 2-D shared tiles, warp shuffles, 64-bit atomics, ...), at this machine's sizes.  Each
runs on the emulator and is compared with an independent model: numpy (integers exactly;
float32 kernels with the same operations in the same order, each rounded once, which numpy's
float32 arithmetic also does), a Python model of the algorithm, or g++ compiling the same text.
What such kernels use and qgcc does not have is a named error (the last test, and
docs/cuda-coverage.md).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import pytest

from qgcc.frontend import compile_source
from qgcc.ref.emulator import run as emulate
from qgcc.runtime.launch import make_launch
from frontcheck import assert_error
from gxx import gxx_model, need_gxx

F32 = np.float32


@lru_cache(maxsize=None)
def _compiled(src: str, instantiate: tuple):
    return compile_source(src, "survey.cu", instantiate=instantiate)


def run(src: str, kernel: str | None, grid, block, arrays: dict, scalars=None, instantiate=(), constants=None,
        shared: int = 0) -> dict:
    """One launch on the emulator; grid and block are ints or (x, y) pairs."""
    dim = (lambda d: (d, 1, 1) if isinstance(d, int) else (*d, 1))
    prog = _compiled(src, tuple(instantiate))
    k = prog.kernel(kernel)
    arrays = {n: v.copy() for n, v in arrays.items()}
    # a float scalar is passed as its bit pattern (qgrun's --arg parses decimals to these)
    scalars = {n: int(np.asarray(v, F32).view(np.uint32)) if isinstance(v, np.floating) else int(v)
               for n, v in (scalars or {}).items()}
    launch = make_launch(prog, k, dim(grid), dim(block), scalars, arrays, shared_bytes=shared,
                         constants=constants)
    res = emulate(launch, max_steps=3_000_000)
    return {n: launch.read_buffer(res.memory, n) for n in arrays}


# ---------------------------------------------------------------- CUDA by Example style

HISTO = r"""
#include <cuda_runtime.h>
#define BINS 16
__global__ void histo(const unsigned char *buf, long size, unsigned int *histo) {
    __shared__ unsigned int local[BINS];
    if (threadIdx.x < BINS) local[threadIdx.x] = 0;
    __syncthreads();
    long i = threadIdx.x + blockIdx.x * blockDim.x;
    const long step = blockDim.x * gridDim.x;
    while (i < size) {
        atomicAdd(&local[buf[i] % BINS], 1);
        i += step;
    }
    __syncthreads();
    if (threadIdx.x < BINS) atomicAdd(&(histo[threadIdx.x]), local[threadIdx.x]);
}
"""

DOT = r"""
#define imin(a, b) (a < b ? a : b)
const int threadsPerBlock = 8;
__global__ void dot(const int *a, const int *b, int *partial, int n) {
    __shared__ int cache[threadsPerBlock];
    int tid = threadIdx.x + blockIdx.x * blockDim.x;
    int cacheIndex = threadIdx.x;
    int temp = 0;
    while (tid < n) {
        temp += a[tid] * b[tid];
        tid += blockDim.x * gridDim.x;
    }
    cache[cacheIndex] = temp;
    __syncthreads();
    int i = blockDim.x / 2;
    while (i != 0) {
        if (cacheIndex < i) cache[cacheIndex] += cache[cacheIndex + i];
        __syncthreads();
        i /= 2;
    }
    if (cacheIndex == 0) partial[blockIdx.x] = cache[0] + imin(0, n);
}
"""


def test_histogram_and_dot_product_in_the_books_style():
    rng = np.random.default_rng(1)
    buf = rng.integers(0, 256, 150).astype(np.uint8)
    got = run(HISTO, None, 3, 16, {"buf": buf, "histo": np.zeros(16, np.uint32)}, {"size": buf.size})
    assert got["histo"].tolist() == np.bincount(buf % 16, minlength=16).tolist()
    a, b = rng.integers(-99, 99, 37).astype(np.int32), rng.integers(-99, 99, 37).astype(np.int32)
    got = run(DOT, None, 2, 8, {"a": a, "b": b, "partial": np.zeros(2, np.int32)}, {"n": 37})
    assert int(got["partial"].sum()) == int(a.astype(np.int64) @ b)


# ---------------------------------------------------------------- CUDA samples style

REDUCE = r"""
template <unsigned int blockSize>
__device__ void warpReduce(volatile int *sdata, unsigned int tid) {
    if (blockSize >= 8) sdata[tid] += sdata[tid + 4];
    if (blockSize >= 4) sdata[tid] += sdata[tid + 2];
    if (blockSize >= 2) sdata[tid] += sdata[tid + 1];
}

template <class T, unsigned int blockSize, bool nIsPow2>
__global__ void reduce6(const T *g_idata, T *g_odata, unsigned int n) {
    extern __shared__ int sdata[];
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * (blockSize * 2) + threadIdx.x;
    unsigned int gridSize = blockSize * 2 * gridDim.x;
    T mySum = 0;
    while (i < n) {
        mySum += g_idata[i];
        if (nIsPow2 || i + blockSize < n) mySum += g_idata[i + blockSize];
        i += gridSize;
    }
    sdata[tid] = mySum;
    __syncthreads();
    if (blockSize >= 16) { if (tid < 8) sdata[tid] = mySum = mySum + sdata[tid + 8]; __syncthreads(); }
    if (tid < 4) warpReduce<blockSize>(sdata, tid);
    if (tid == 0) g_odata[blockIdx.x] = sdata[0];
}
"""

BITONIC = r"""
typedef unsigned int uint;
#define SHARED_SIZE_LIMIT 16U

__device__ static __attribute__((always_inline)) void Comparator(uint &keyA, uint &valA, uint &keyB,
                                                                uint &valB, uint dir) {
    uint t;
    if ((keyA > keyB) == dir) {
        t = keyA; keyA = keyB; keyB = t;
        t = valA; valA = valB; valB = t;
    }
}

__global__ void bitonicSortShared(uint *d_DstKey, uint *d_DstVal, uint *d_SrcKey, uint *d_SrcVal,
                                  uint arrayLength, uint dir) {
    __shared__ uint s_key[SHARED_SIZE_LIMIT];
    __shared__ uint s_val[SHARED_SIZE_LIMIT];
    d_SrcKey += blockIdx.x * SHARED_SIZE_LIMIT + threadIdx.x;
    d_SrcVal += blockIdx.x * SHARED_SIZE_LIMIT + threadIdx.x;
    d_DstKey += blockIdx.x * SHARED_SIZE_LIMIT + threadIdx.x;
    d_DstVal += blockIdx.x * SHARED_SIZE_LIMIT + threadIdx.x;
    s_key[threadIdx.x] = d_SrcKey[0];
    s_val[threadIdx.x] = d_SrcVal[0];
    s_key[threadIdx.x + (SHARED_SIZE_LIMIT / 2)] = d_SrcKey[(SHARED_SIZE_LIMIT / 2)];
    s_val[threadIdx.x + (SHARED_SIZE_LIMIT / 2)] = d_SrcVal[(SHARED_SIZE_LIMIT / 2)];
    for (uint size = 2; size < arrayLength; size <<= 1) {
        uint ddd = dir ^ ((threadIdx.x & (size / 2)) != 0);
        for (uint stride = size / 2; stride > 0; stride >>= 1) {
            __syncthreads();
            uint pos = 2 * threadIdx.x - (threadIdx.x & (stride - 1));
            Comparator(s_key[pos], s_val[pos], s_key[pos + stride], s_val[pos + stride], ddd);
        }
    }
    for (uint stride = arrayLength / 2; stride > 0; stride >>= 1) {
        __syncthreads();
        uint pos = 2 * threadIdx.x - (threadIdx.x & (stride - 1));
        Comparator(s_key[pos], s_val[pos], s_key[pos + stride], s_val[pos + stride], dir);
    }
    __syncthreads();
    d_DstKey[0] = s_key[threadIdx.x];
    d_DstVal[0] = s_val[threadIdx.x];
    d_DstKey[(SHARED_SIZE_LIMIT / 2)] = s_key[threadIdx.x + (SHARED_SIZE_LIMIT / 2)];
    d_DstVal[(SHARED_SIZE_LIMIT / 2)] = s_val[threadIdx.x + (SHARED_SIZE_LIMIT / 2)];
}
"""

MATMUL = r"""
#define AS(i, j) As[i][j]
#define BS(i, j) Bs[i][j]
template <int BLOCK_SIZE> __global__ void matrixMulCUDA(float *C, const float *A, const float *B, int wA, int wB) {
    int bx = blockIdx.x, by = blockIdx.y, tx = threadIdx.x, ty = threadIdx.y;
    int aBegin = wA * BLOCK_SIZE * by;
    int aEnd = aBegin + wA - 1;
    int aStep = BLOCK_SIZE;
    int bBegin = BLOCK_SIZE * bx;
    int bStep = BLOCK_SIZE * wB;
    float Csub = 0;
    for (int a = aBegin, b = bBegin; a <= aEnd; a += aStep, b += bStep) {
        __shared__ float As[BLOCK_SIZE][BLOCK_SIZE];
        __shared__ float Bs[BLOCK_SIZE][BLOCK_SIZE];
        AS(ty, tx) = A[a + wA * ty + tx];
        BS(ty, tx) = B[b + wB * ty + tx];
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BLOCK_SIZE; ++k) Csub += AS(ty, k) * BS(k, tx);
        __syncthreads();
    }
    int c = wB * BLOCK_SIZE * by + BLOCK_SIZE * bx;
    C[c + wB * ty + tx] = Csub;
}
"""

TRANSPOSE = r"""
#define TILE_DIM 4
#define BLOCK_ROWS 2
__global__ void transposeNoBankConflicts(float *odata, const float *idata, int width, int height) {
    __shared__ float tile[TILE_DIM][TILE_DIM + 1];
    int xIndex = blockIdx.x * TILE_DIM + threadIdx.x;
    int yIndex = blockIdx.y * TILE_DIM + threadIdx.y;
    int index_in = xIndex + yIndex * width;
    xIndex = blockIdx.y * TILE_DIM + threadIdx.x;
    yIndex = blockIdx.x * TILE_DIM + threadIdx.y;
    int index_out = xIndex + yIndex * height;
    for (int i = 0; i < TILE_DIM; i += BLOCK_ROWS) tile[threadIdx.y + i][threadIdx.x] = idata[index_in + i * width];
    __syncthreads();
    for (int i = 0; i < TILE_DIM; i += BLOCK_ROWS) odata[index_out + i * height] = tile[threadIdx.x][threadIdx.y + i];
}
"""


def test_samples_reduction_bitonic_matmul_transpose():
    rng = np.random.default_rng(2)
    x = rng.integers(-1000, 1000, 100).astype(np.int32)
    for inst, n in (("reduce6<int, 8, true>", 64), ("reduce6<int, 8, false>", 100)):
        got = run(REDUCE, inst, 3, 8, {"g_idata": x[:n], "g_odata": np.zeros(3, np.int32)}, {"n": n},
                  instantiate=(inst,), shared=8 * 4)
        assert int(got["g_odata"].sum()) == int(x[:n].sum()), inst
    keys = rng.integers(0, 1000, 32).astype(np.uint32)
    vals = np.arange(32, dtype=np.uint32)
    got = run(BITONIC, None, 2, 8, {"d_DstKey": np.zeros(32, np.uint32), "d_DstVal": np.zeros(32, np.uint32),
                                    "d_SrcKey": keys, "d_SrcVal": vals}, {"arrayLength": 16, "dir": 1})
    for blk in range(2):
        k, v = got["d_DstKey"][16 * blk:16 * blk + 16], got["d_DstVal"][16 * blk:16 * blk + 16]
        assert k.tolist() == sorted(keys[16 * blk:16 * blk + 16].tolist())
        assert (keys[v] == k).all() and sorted(v.tolist()) == list(range(16 * blk, 16 * blk + 16))
    a = rng.integers(-8, 8, (4, 8)).astype(F32)  # small integers: every sum exact in any order
    b = rng.integers(-8, 8, (8, 8)).astype(F32)
    got = run(MATMUL, "matrixMulCUDA<4>", (2, 1), (4, 4), {"C": np.zeros(32, F32), "A": a.ravel(), "B": b.ravel()},
              {"wA": 8, "wB": 8}, instantiate=("matrixMulCUDA<4>",))
    assert got["C"].reshape(4, 8).tolist() == (a @ b).tolist()
    m = rng.normal(size=(8, 4)).astype(F32)
    got = run(TRANSPOSE, None, (1, 2), (4, 2), {"odata": np.zeros(32, F32), "idata": m.ravel()},
              {"width": 4, "height": 8})
    assert got["odata"].reshape(4, 8).tolist() == m.T.tolist()


# ---------------------------------------------------------------- PMPP / GPU Gems style

SCAN = r"""
#define NUM_BANKS 4
#define LOG_NUM_BANKS 2
#define CONFLICT_FREE_OFFSET(n) ((n) >> LOG_NUM_BANKS)
__global__ void prescan(int *g_odata, const int *g_idata, int n) {
    extern __shared__ int temp[];
    int thid = threadIdx.x;
    int offset = 1;
    int ai = thid, bi = thid + (n / 2);
    int bankOffsetA = CONFLICT_FREE_OFFSET(ai), bankOffsetB = CONFLICT_FREE_OFFSET(bi);
    temp[ai + bankOffsetA] = g_idata[ai];
    temp[bi + bankOffsetB] = g_idata[bi];
    for (int d = n >> 1; d > 0; d >>= 1) {
        __syncthreads();
        if (thid < d) {
            int a = offset * (2 * thid + 1) - 1, b = offset * (2 * thid + 2) - 1;
            a += CONFLICT_FREE_OFFSET(a);
            b += CONFLICT_FREE_OFFSET(b);
            temp[b] += temp[a];
        }
        offset *= 2;
    }
    if (thid == 0) temp[n - 1 + CONFLICT_FREE_OFFSET(n - 1)] = 0;
    for (int d = 1; d < n; d *= 2) {
        offset >>= 1;
        __syncthreads();
        if (thid < d) {
            int a = offset * (2 * thid + 1) - 1, b = offset * (2 * thid + 2) - 1;
            a += CONFLICT_FREE_OFFSET(a);
            b += CONFLICT_FREE_OFFSET(b);
            int t = temp[a];
            temp[a] = temp[b];
            temp[b] += t;
        }
    }
    __syncthreads();
    g_odata[ai] = temp[ai + bankOffsetA];
    g_odata[bi] = temp[bi + bankOffsetB];
}
"""

CONV1D = r"""
#define MAX_MASK_WIDTH 7
#define TILE_SIZE 8
__constant__ float M[MAX_MASK_WIDTH];
__global__ void convolution_1D_tiled_kernel(const float *N, float *P, int Mask_Width, int Width) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    __shared__ float N_ds[TILE_SIZE + MAX_MASK_WIDTH - 1];
    int n = Mask_Width / 2;
    int halo_index_left = (blockIdx.x - 1) * blockDim.x + threadIdx.x;
    if (threadIdx.x >= blockDim.x - n) N_ds[threadIdx.x - (blockDim.x - n)] = (halo_index_left < 0) ? 0 : N[halo_index_left];
    N_ds[n + threadIdx.x] = N[i];
    int halo_index_right = (blockIdx.x + 1) * blockDim.x + threadIdx.x;
    if (threadIdx.x < n) N_ds[n + blockDim.x + threadIdx.x] = (halo_index_right >= Width) ? 0 : N[halo_index_right];
    __syncthreads();
    float Pvalue = 0;
    for (int j = 0; j < Mask_Width; j++) Pvalue += N_ds[threadIdx.x + j] * M[j];
    P[i] = Pvalue;
}
"""

CONV2D = r"""
#define FILTER_RADIUS 1
#define TILE_DIM 4
__constant__ float F_c[2 * FILTER_RADIUS + 1][2 * FILTER_RADIUS + 1] = {{1, 2, 1}, {2, 4, 2}, {1, 2, 1}};
__global__ void conv2d_cached(const float *N, float *P, int width, int height) {
    int col = blockIdx.x * TILE_DIM + threadIdx.x;
    int row = blockIdx.y * TILE_DIM + threadIdx.y;
    __shared__ float N_s[TILE_DIM][TILE_DIM];
    N_s[threadIdx.y][threadIdx.x] = (row < height && col < width) ? N[row * width + col] : 0.0f;
    __syncthreads();
    if (col < width && row < height) {
        float Pvalue = 0.0f;
        for (int fRow = 0; fRow < 2 * FILTER_RADIUS + 1; ++fRow)
            for (int fCol = 0; fCol < 2 * FILTER_RADIUS + 1; ++fCol) {
                int tx = (int)threadIdx.x - FILTER_RADIUS + fCol, ty = (int)threadIdx.y - FILTER_RADIUS + fRow;
                int gr = row - FILTER_RADIUS + fRow, gc = col - FILTER_RADIUS + fCol;
                if (tx >= 0 && tx < TILE_DIM && ty >= 0 && ty < TILE_DIM) Pvalue += F_c[fRow][fCol] * N_s[ty][tx];
                else if (gr >= 0 && gr < height && gc >= 0 && gc < width) Pvalue += F_c[fRow][fCol] * N[gr * width + gc];
            }
        P[row * width + col] = Pvalue;
    }
}
"""

NBODY = r"""
#define EPS2 0.01f
__device__ float3 bodyBodyInteraction(float4 bi, float4 bj, float3 ai) {
    float3 r;
    r.x = bj.x - bi.x;
    r.y = bj.y - bi.y;
    r.z = bj.z - bi.z;
    float distSqr = r.x * r.x + r.y * r.y + r.z * r.z + EPS2;
    float distSixth = distSqr * distSqr * distSqr;
    float invDistCube = 1.0f / sqrtf(distSixth);
    float s = bj.w * invDistCube;
    ai.x += r.x * s;
    ai.y += r.y * s;
    ai.z += r.z * s;
    return ai;
}
__device__ float3 tile_calculation(float4 myPosition, float3 accel) {
    extern __shared__ float4 shPosition[];
    for (int i = 0; i < blockDim.x; i++) accel = bodyBodyInteraction(myPosition, shPosition[i], accel);
    return accel;
}
__global__ void calculate_forces(const float4 *globalX, float4 *globalA, int N) {
    extern __shared__ float4 shPosition[];
    float3 acc = {0.0f, 0.0f, 0.0f};
    int gtid = blockIdx.x * blockDim.x + threadIdx.x;
    float4 myPosition = globalX[gtid];
    for (int i = 0, tile = 0; i < N; i += blockDim.x, tile++) {
        shPosition[threadIdx.x] = globalX[tile * blockDim.x + threadIdx.x];
        __syncthreads();
        acc = tile_calculation(myPosition, acc);
        __syncthreads();
    }
    float4 acc4 = {acc.x, acc.y, acc.z, 0.0f};
    globalA[gtid] = acc4;
}
"""

F4 = np.dtype([("x", F32), ("y", F32), ("z", F32), ("w", F32)])


@pytest.mark.slow
def test_pmpp_scan_convolutions_and_gems_nbody():
    rng = np.random.default_rng(3)
    x = rng.integers(-50, 50, 16).astype(np.int32)
    got = run(SCAN, None, 1, 8, {"g_odata": np.zeros(16, np.int32), "g_idata": x}, {"n": 16}, shared=20 * 4)
    assert got["g_odata"].tolist() == np.concatenate([[0], np.cumsum(x)[:-1]]).tolist()
    sig = rng.integers(-9, 9, 24).astype(F32)  # small integers: every sum exact
    mask = np.array([1, -2, 3, 0, 0, 0, 0], F32)
    got = run(CONV1D, None, 3, 8, {"N": sig, "P": np.zeros(24, F32)}, {"Mask_Width": 3, "Width": 24},
              constants={"M": mask})
    assert got["P"].tolist() == np.convolve(sig, mask[:3][::-1], mode="same").tolist()
    img = rng.integers(0, 9, (8, 8)).astype(F32)
    got = run(CONV2D, None, (2, 2), (4, 4), {"N": img.ravel(), "P": np.zeros(64, F32)}, {"width": 8, "height": 8})
    k = np.array([[1, 2, 1], [2, 4, 2], [1, 2, 1]], F32)
    pad = np.pad(img, 1)
    want = sum(k[r, c] * pad[r:r + 8, c:c + 8] for r in range(3) for c in range(3))
    assert got["P"].reshape(8, 8).tolist() == want.tolist()
    pos = np.zeros(8, F4)
    for f in "xyz":
        pos[f] = rng.normal(size=8).astype(F32)
    pos["w"] = rng.uniform(0.5, 2, 8).astype(F32)
    got = run(NBODY, None, 2, 4, {"globalX": pos, "globalA": np.zeros(8, F4)}, {"N": 8}, shared=4 * 16)
    for i in range(8):  # the kernel's operations in its order, each rounded to float32 once
        a = [F32(0)] * 3
        for j in range(8):
            r = [pos[f][j] - pos[f][i] for f in "xyz"]
            d = r[0] * r[0] + r[1] * r[1] + r[2] * r[2] + F32(0.01)
            s = pos["w"][j] * (F32(1) / np.sqrt(d * d * d))
            a = [a[c] + r[c] * s for c in range(3)]
        assert [got["globalA"][f][i] for f in "xyz"] == a, i


# ---------------------------------------------------------------- Rodinia style

BFS = r"""
#include <stdio.h>
typedef struct Node {
    int starting;
    int no_of_edges;
} Node;
__global__ void Kernel(const Node *g_graph_nodes, const int *g_graph_edges, bool *g_graph_mask,
                       bool *g_updating_graph_mask, bool *g_graph_visited, int *g_cost, int no_of_nodes) {
    int tid = blockIdx.x * blockDim.x + threadIdx.x;
    if (tid < no_of_nodes && g_graph_mask[tid]) {
        g_graph_mask[tid] = false;
        for (int i = g_graph_nodes[tid].starting; i < (g_graph_nodes[tid].no_of_edges + g_graph_nodes[tid].starting); i++) {
            int id = g_graph_edges[i];
            if (!g_graph_visited[id]) {
                g_cost[id] = g_cost[tid] + 1;
                g_updating_graph_mask[id] = true;
            }
        }
    }
}
__global__ void Kernel2(bool *g_graph_mask, bool *g_updating_graph_mask, bool *g_graph_visited, bool *g_over,
                        int no_of_nodes) {
    int tid = blockIdx.x * blockDim.x + threadIdx.x;
    if (tid < no_of_nodes && g_updating_graph_mask[tid]) {
        g_graph_mask[tid] = true;
        g_graph_visited[tid] = true;
        *g_over = true;
        g_updating_graph_mask[tid] = false;
    }
}
"""

PATHFINDER = r"""
#define BLOCK_SIZE 8
#define HALO 1
#define IN_RANGE(x, min, max) ((x) >= (min) && (x) <= (max))
#define CLAMP_RANGE(x, min, max) x = (x < (min)) ? min : ((x > (max)) ? max : x)
#define MIN(a, b) ((a) <= (b) ? (a) : (b))
__global__ void dynproc_kernel(int iteration, const int *gpuWall, const int *gpuSrc, int *gpuResults, int cols,
                               int rows, int startStep, int border) {
    __shared__ int prev[BLOCK_SIZE];
    __shared__ int result[BLOCK_SIZE];
    int bx = blockIdx.x, tx = threadIdx.x;
    int small_block_cols = BLOCK_SIZE - iteration * HALO * 2;
    int blkX = small_block_cols * bx - border;
    int blkXmax = blkX + BLOCK_SIZE - 1;
    int xidx = blkX + tx;
    int validXmin = (blkX < 0) ? -blkX : 0;
    int validXmax = (blkXmax > cols - 1) ? BLOCK_SIZE - 1 - (blkXmax - cols + 1) : BLOCK_SIZE - 1;
    int W = tx - 1, E = tx + 1;
    W = (W < validXmin) ? validXmin : W;
    E = (E > validXmax) ? validXmax : E;
    bool isValid = IN_RANGE(tx, validXmin, validXmax);
    if (IN_RANGE(xidx, 0, cols - 1)) prev[tx] = gpuSrc[xidx];
    __syncthreads();
    bool computed;
    for (int i = 0; i < iteration; i++) {
        computed = false;
        if (IN_RANGE(tx, i + 1, BLOCK_SIZE - i - 2) && isValid) {
            computed = true;
            int left = prev[W], up = prev[tx], right = prev[E];
            int shortest = MIN(left, up);
            shortest = MIN(shortest, right);
            int index = cols * (startStep + i) + xidx;
            result[tx] = shortest + gpuWall[index];
        }
        __syncthreads();
        if (i == iteration - 1) break;
        if (computed) prev[tx] = result[tx];
        __syncthreads();
    }
    if (computed) gpuResults[xidx] = result[tx];
}
"""

NW = r"""
#define BLOCK_SIZE 4
__device__ int maximum(int a, int b, int c) {
    int k;
    if (a <= b) k = b; else k = a;
    if (k <= c) return c; else return k;
}
__global__ void needle_cuda_shared_1(const int *referrence, int *matrix_cuda, int cols, int penalty, int i,
                                     int block_width) {
    int bx = blockIdx.x, tx = threadIdx.x;
    int b_index_x = bx, b_index_y = i - 1 - bx;
    int index = cols * BLOCK_SIZE * b_index_y + BLOCK_SIZE * b_index_x + tx + (cols + 1);
    int index_n = cols * BLOCK_SIZE * b_index_y + BLOCK_SIZE * b_index_x + tx + 1;
    int index_w = cols * BLOCK_SIZE * b_index_y + BLOCK_SIZE * b_index_x + cols;
    int index_nw = cols * BLOCK_SIZE * b_index_y + BLOCK_SIZE * b_index_x;
    __shared__ int temp[BLOCK_SIZE + 1][BLOCK_SIZE + 1];
    __shared__ int ref[BLOCK_SIZE][BLOCK_SIZE];
    if (tx == 0) temp[tx][0] = matrix_cuda[index_nw];
    for (int ty = 0; ty < BLOCK_SIZE; ty++) ref[ty][tx] = referrence[index + cols * ty];
    __syncthreads();
    temp[tx + 1][0] = matrix_cuda[index_w + cols * tx];
    __syncthreads();
    temp[0][tx + 1] = matrix_cuda[index_n];
    __syncthreads();
    for (int m = 0; m < BLOCK_SIZE; m++) {
        if (tx <= m) {
            int t_index_x = tx + 1, t_index_y = m - tx + 1;
            temp[t_index_y][t_index_x] = maximum(temp[t_index_y - 1][t_index_x - 1] + ref[t_index_y - 1][t_index_x - 1],
                                                 temp[t_index_y][t_index_x - 1] - penalty,
                                                 temp[t_index_y - 1][t_index_x] - penalty);
        }
        __syncthreads();
    }
    for (int m = BLOCK_SIZE - 2; m >= 0; m--) {
        if (tx <= m) {
            int t_index_x = tx + BLOCK_SIZE - m, t_index_y = BLOCK_SIZE - tx;
            temp[t_index_y][t_index_x] = maximum(temp[t_index_y - 1][t_index_x - 1] + ref[t_index_y - 1][t_index_x - 1],
                                                 temp[t_index_y][t_index_x - 1] - penalty,
                                                 temp[t_index_y - 1][t_index_x] - penalty);
        }
        __syncthreads();
    }
    for (int ty = 0; ty < BLOCK_SIZE; ty++) matrix_cuda[index + ty * cols] = temp[ty + 1][tx + 1];
}
"""

KMEANS = r"""
#include <float.h>
#define ASSUMED_NR_CLUSTERS 4
#define NFEATURES 3
__constant__ float c_clusters[ASSUMED_NR_CLUSTERS * NFEATURES];
__global__ void kmeansPoint(const float *features, int nfeatures, int npoints, int nclusters, int *membership) {
    unsigned int point_id = blockIdx.x * blockDim.x + threadIdx.x;
    int index = -1;
    if (point_id < npoints) {
        float min_dist = FLT_MAX;
        for (int i = 0; i < nclusters; i++) {
            float dist = 0;
            for (int l = 0; l < nfeatures; l++) {
                float d = features[l * npoints + point_id] - c_clusters[i * nfeatures + l];
                dist += d * d;
            }
            if (dist < min_dist) { min_dist = dist; index = i; }
        }
        membership[point_id] = index;
    }
}
"""

HOTSPOT = r"""
#define BLOCK_SIZE 4
#define IN_RANGE(x, min, max) ((x) >= (min) && (x) <= (max))
extern "C" __global__ void calculate_temp(const float *power, const float *temp_src, float *temp_dst, int grid_cols,
                                          int grid_rows, float Cap, float Rx, float Ry, float Rz, float step) {
    __shared__ float temp_on_cuda[BLOCK_SIZE][BLOCK_SIZE];
    float amb_temp = 80.0f;
    float step_div_Cap = step / Cap;
    float Rx_1 = 1 / Rx, Ry_1 = 1 / Ry, Rz_1 = 1 / Rz;
    int tx = threadIdx.x, ty = threadIdx.y;
    int xidx = blockIdx.x * BLOCK_SIZE + tx, yidx = blockIdx.y * BLOCK_SIZE + ty;
    int index = grid_cols * yidx + xidx;
    temp_on_cuda[ty][tx] = temp_src[index];
    __syncthreads();
    if (IN_RANGE(xidx, 1, grid_cols - 2) && IN_RANGE(yidx, 1, grid_rows - 2)) {
        float N = ty > 0 ? temp_on_cuda[ty - 1][tx] : temp_src[index - grid_cols];
        float S = ty < BLOCK_SIZE - 1 ? temp_on_cuda[ty + 1][tx] : temp_src[index + grid_cols];
        float W = tx > 0 ? temp_on_cuda[ty][tx - 1] : temp_src[index - 1];
        float E = tx < BLOCK_SIZE - 1 ? temp_on_cuda[ty][tx + 1] : temp_src[index + 1];
        float T = temp_on_cuda[ty][tx];
        temp_dst[index] = T + step_div_Cap * (power[index] + (S + N - 2.0f * T) * Ry_1 + (E + W - 2.0f * T) * Rx_1
                                              + (amb_temp - T) * Rz_1);
    } else {
        temp_dst[index] = temp_on_cuda[ty][tx];
    }
}
"""


def test_rodinia_bfs_pathfinder_nw_kmeans_hotspot():
    rng = np.random.default_rng(4)
    # bfs: one level from node 0 of a small graph, both kernels
    adj = {0: [1, 2], 1: [3], 2: [3, 4], 3: [5], 4: [5, 6], 5: [7], 6: [7], 7: []}
    nodes = np.zeros(8, np.dtype([("starting", np.int32), ("no_of_edges", np.int32)]))
    edges = []
    for v in range(8):
        nodes[v] = (len(edges), len(adj[v]))
        edges += adj[v]
    mask, visited, cost = np.zeros(8, bool), np.zeros(8, bool), np.full(8, -1, np.int32)
    mask[0] = visited[0] = True
    cost[0] = 0
    upd = np.zeros(8, bool)
    for level in range(1, 5):
        got = run(BFS, "Kernel", 2, 4, {"g_graph_nodes": nodes, "g_graph_edges": np.array(edges, np.int32),
                                        "g_graph_mask": mask, "g_updating_graph_mask": upd,
                                        "g_graph_visited": visited, "g_cost": cost}, {"no_of_nodes": 8})
        cost, mask, upd = got["g_cost"], got["g_graph_mask"], got["g_updating_graph_mask"]
        got = run(BFS, "Kernel2", 2, 4, {"g_graph_mask": mask, "g_updating_graph_mask": upd,
                                         "g_graph_visited": visited, "g_over": np.zeros(1, bool)}, {"no_of_nodes": 8})
        mask, upd, visited = got["g_graph_mask"], got["g_updating_graph_mask"], got["g_graph_visited"]
    assert cost.tolist() == [0, 1, 1, 2, 2, 3, 3, 4]  # breadth-first distances of the graph above
    # pathfinder: one pyramid step of 2 rows over 12 columns
    rows, cols, it = 3, 12, 2
    wall = rng.integers(0, 10, (rows, cols)).astype(np.int32)
    got = run(PATHFINDER, None, 3, 8, {"gpuWall": wall.ravel(), "gpuSrc": wall[0].copy(),
                                       "gpuResults": np.zeros(cols, np.int32)},
              {"iteration": it, "cols": cols, "rows": rows, "startStep": 1, "border": it})
    dp = wall[0].astype(np.int64)
    for r in range(1, rows):
        dp = wall[r] + np.minimum(np.minimum(np.r_[dp[0], dp[:-1]], dp), np.r_[dp[1:], dp[-1]])
    assert got["gpuResults"].tolist() == dp.tolist()
    # nw: the first anti-diagonal pass of 4x4 blocks over a 9x9 score matrix
    n, pen = 9, 2
    ref = rng.integers(-4, 5, (n, n)).astype(np.int32)
    mat = np.zeros((n, n), np.int32)
    mat[0, :] = -pen * np.arange(n)
    mat[:, 0] = -pen * np.arange(n)
    got = mat.copy()
    for i in (1, 2):
        got = run(NW, None, i, 4, {"referrence": ref.ravel(), "matrix_cuda": got.ravel()},
                  {"cols": n, "penalty": pen, "i": i, "block_width": 2})["matrix_cuda"].reshape(n, n)
    want = mat.copy()
    for r in range(1, n):
        for c in range(1, n):
            want[r, c] = max(want[r - 1, c - 1] + ref[r, c], want[r, c - 1] - pen, want[r - 1, c] - pen)
    assert got[:5, :9].tolist() == want[:5, :9].tolist() and got[:9, :5].tolist() == want[:9, :5].tolist()
    # kmeans: nearest centre, features stored feature-major
    pts = rng.normal(size=(3, 10)).astype(F32)
    cen = rng.normal(size=(4, 3)).astype(F32)
    got = run(KMEANS, None, 3, 4, {"features": pts.ravel(), "membership": np.zeros(10, np.int32)},
              {"nfeatures": 3, "npoints": 10, "nclusters": 4}, constants={"c_clusters": cen.ravel()})
    d = [[(F32(0) + (pts[0, p] - cen[c, 0]) ** 2 + (pts[1, p] - cen[c, 1]) ** 2) + (pts[2, p] - cen[c, 2]) ** 2
          for c in range(4)] for p in range(10)]
    assert got["membership"].tolist() == [int(np.argmin(r)) for r in d]
    # hotspot: one step of the thermal stencil, the kernel's operations in its order
    t = rng.uniform(300, 340, (8, 8)).astype(F32)
    p = rng.uniform(0, 1, (8, 8)).astype(F32)
    cap, rx, ry, rz, step = F32(0.5), F32(1.5), F32(2.5), F32(4.0), F32(0.1)
    got = run(HOTSPOT, None, (2, 2), (4, 4), {"power": p.ravel(), "temp_src": t.ravel(), "temp_dst": np.zeros(64, F32)},
              {"grid_cols": 8, "grid_rows": 8, "Cap": cap, "Rx": rx, "Ry": ry, "Rz": rz, "step": step})
    want = t.copy()
    sdc, rx1, ry1, rz1 = step / cap, F32(1) / rx, F32(1) / ry, F32(1) / rz
    for y in range(1, 7):
        for x in range(1, 7):
            T = t[y, x]
            want[y, x] = T + sdc * (p[y, x] + (t[y + 1, x] + t[y - 1, x] - F32(2) * T) * ry1
                                    + (t[y, x + 1] + t[y, x - 1] - F32(2) * T) * rx1 + (F32(80) - T) * rz1)
    assert got["temp_dst"].reshape(8, 8).tolist() == want.tolist()


# ---------------------------------------------------------------- modern idioms, thread-independent (g++)

MODERN = r"""
#include <cuda_runtime.h>
#include <stdint.h>
struct Vec3 {
    float x, y, z;
    __host__ __device__ Vec3 operator+(const Vec3 &o) const { return {x + o.x, y + o.y, z + o.z}; }
    __host__ __device__ Vec3 operator*(float s) const { return {x * s, y * s, z * s}; }
    __host__ __device__ float dot(const Vec3 &o) const { return x * o.x + y * o.y + z * o.z; }
};
struct Particle { Vec3 pos; Vec3 vel; int64_t id; };
template <typename T> __device__ __forceinline__ T clamp_to(T v, T lo, T hi) { return v < lo ? lo : (v > hi ? hi : v); }
template <> __device__ __forceinline__ float clamp_to<float>(float v, float lo, float hi) { return fminf(fmaxf(v, lo), hi); }
__device__ inline uint64_t mix64(uint64_t h) {
    h ^= h >> 33; h *= 0xff51afd7ed558ccdULL; h ^= h >> 33; h *= 0xc4ceb9fe1a85ec53ULL; h ^= h >> 33;
    return h;
}
extern "C" __global__ void __launch_bounds__(64) step(Particle *__restrict__ ps, float dt, int n, uint64_t seed) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    Particle *p = &ps[i];
    Vec3 g = {.x = 0.0f, .y = -9.8f, .z = 0.0f};
    p->vel = p->vel + g * dt;
    p->pos = p->pos + p->vel * dt;
    p->pos.y = clamp_to(p->pos.y, 0.0f, 100.0f);
    p->id = (int64_t)mix64((uint64_t)p->id ^ seed) >> 3;
    p->vel.x = static_cast<float>(clamp_to<int>(static_cast<int>(p->vel.dot(p->vel)), -5, 5));
}
"""


@need_gxx
def test_modern_struct_template_64bit_kernel_matches_gxx(tmp_path):
    rng = np.random.default_rng(6)
    dt = np.dtype([("pos", F32, (3,)), ("vel", F32, (3,)), ("id", np.int64)])
    ps = np.zeros(6, dt)
    ps["pos"] = rng.normal(size=(6, 3)).astype(F32) * 10
    ps["vel"] = rng.normal(size=(6, 3)).astype(F32)
    ps["id"] = rng.integers(-2**63, 2**63 - 1, 6, dtype=np.int64)
    pdt = np.dtype([("pos", np.dtype([("x", F32), ("y", F32), ("z", F32)])),
                    ("vel", np.dtype([("x", F32), ("y", F32), ("z", F32)])), ("id", np.int64)])
    args = [("ps", ps.view(pdt), "Particle"), ("dt", F32(0.25)), ("n", 5), ("seed", np.uint64(0x9E3779B97F4A7C15))]
    got = run(MODERN, None, 2, 4, {"ps": ps.view(pdt)}, {"dt": F32(0.25), "n": 5, "seed": 0x9E3779B97F4A7C15})
    # the emulator's result and g++'s, byte for byte
    host = "#pragma pack(4)\n#define __launch_bounds__(...)\n" + MODERN.replace("#include <cuda_runtime.h>", "")
    want = gxx_model(tmp_path, host, "step", 2, 4, args)
    assert got["ps"].tobytes() == want["ps"].view(np.uint32).tobytes()


# ---------------------------------------------------------------- warp-level and 64-bit atomics

WARP = r"""
__inline__ __device__ int warpReduceSum(int val) {
    for (int offset = warpSize / 2; offset > 0; offset /= 2) val += __shfl_down_sync(0xffffffff, val, offset);
    return val;
}
__global__ void deviceReduceWarpAtomicKernel(const int *in, int *out, unsigned long long *bits,
                                             unsigned long long *wide, int N) {
    int sum = 0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < N; i += blockDim.x * gridDim.x) {
        sum += in[i];
        atomicOr(&bits[in[i] & 1], 1ull << (in[i] & 63));
        atomicAdd(wide, (unsigned long long)(long long)in[i] << 20);
    }
    sum = warpReduceSum(sum);
    if ((threadIdx.x & (warpSize - 1)) == 0) atomicAdd(out, sum);
}
"""


def test_warp_shuffle_reduction_and_64bit_atomics():
    rng = np.random.default_rng(7)
    x = rng.integers(-1000, 1000, 50).astype(np.int32)
    got = run(WARP, None, 2, 8, {"in": x, "out": np.zeros(1, np.int32), "bits": np.zeros(2, np.uint64),
                                 "wide": np.zeros(1, np.uint64)}, {"N": 50})
    assert int(got["out"][0]) == int(x.sum())
    for parity in (0, 1):
        want = 0
        for v in x[(x & 1) == parity]:
            want |= 1 << (int(v) & 63)
        assert int(got["bits"][parity]) == want
    assert int(got["wide"][0]) == (int(x.astype(np.int64).sum()) << 20) % 2**64


# ---------------------------------------------------------------- what such kernels use that is not in the subset

def test_constructs_outside_the_subset_are_named():
    assert_error("__global__ void k(float *o) { __shared__ float in_s[4][4][4][2]; }\n", 1, 48,
                 "__shared__ arrays have at most 3 dimensions")
    assert_error("template <int N> struct cuComplex { float r, i; __device__ cuComplex(float a, float b) : r(a), i(b) {} };\n"
                 "__global__ void k(float *o) {}\n", 1, 60,
                 "constructors of a class template are not supported ('cuComplex'); initialise a struct with braces "
                 "('cuComplex s = {...};') or assign its members")
    assert_error("__global__ void k(void *devX) { devX[0] = 1; }\n", 1, 33,
                 "'void *' points to no type; cast it to a typed pointer first ('(float *)p')")
