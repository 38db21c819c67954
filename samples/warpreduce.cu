// warpreduce.cu -- sum reduction with warp shuffles, one partial sum per block.
//
// Each thread loads one element (0 past the end of x).  Every warp adds its
// four values with __shfl_down_sync: after the offsets 2 and 1, lane 0 holds the
// warp's sum, with no shared memory and no barrier.  Lane 0 of each warp stores
// that sum in shared memory; after one __syncthreads() the first warp reads the
// warp sums (lane l takes warps l, l+4, ...), reduces them the same way, and its
// lane 0 writes partial[blockIdx.x].  blockDim.x must be a multiple of warpSize
// (4 here), as a full mask (0xffffffff) names every lane of the warp.  Sums wrap
// modulo 2^32.
//
// Launch (from the repository root):
//   $ python -c "import numpy as np; np.save('x.npy', np.arange(1, 41, dtype=np.int32))"
//   $ qgcc samples/warpreduce.cu -o warpreduce.qg
//   $ qgrun warpreduce.qg --grid 3 --block 16 --arg x=@x.npy --arg partial=zeros:3 --arg n=40 --out partial=partial.npy
//
// Expected output: x = 1..40 in blocks of 16: 1+...+16 = 136, 17+...+32 = 392,
// 33+...+40 = 292 (the last block's other 8 threads add zeros); 820 in all.
//   partial = [136, 392, 292]

__global__ void warpreduce(const int *x, int *partial, int n)
{
    __shared__ int warp_sums[16];
    int t = threadIdx.x;
    int i = blockIdx.x * blockDim.x + t;
    int lane = t % warpSize;
    int warp = t / warpSize;
    int v = 0;
    if (i < n)
        v = x[i];
    for (int offset = warpSize / 2; offset > 0; offset /= 2)
        v += __shfl_down_sync(0xffffffff, v, offset);
    if (lane == 0)
        warp_sums[warp] = v;
    __syncthreads();
    if (warp == 0) {
        int nwarps = blockDim.x / warpSize;
        v = 0;
        for (int w = lane; w < nwarps; w += warpSize)
            v += warp_sums[w];
        for (int offset = warpSize / 2; offset > 0; offset /= 2)
            v += __shfl_down_sync(0xffffffff, v, offset);
        if (lane == 0)
            partial[blockIdx.x] = v;
    }
}
