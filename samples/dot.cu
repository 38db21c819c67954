// dot.cu -- float dot product: per-thread partial sums, a shared-memory tree
// reduction with __syncthreads(), and one float atomicAdd per block.
//
// Each thread sums x[i]*y[i] over a grid-stride loop (multiply, round, add, round),
// the block halves its partial sums in shared memory until part[0] holds the
// block's sum, and thread 0 adds it to *result with atomicAdd on a float (a
// compare-and-swap loop around FADD).  Blocks run one after the
// other on this machine, so block 0's sum is added first.
//
// Launch (from the repository root):
//   $ python -c "import numpy as np; i = np.arange(40, dtype=np.float32); np.save('x.npy', i / 8); np.save('y.npy', 1 - i / 4)"
//   $ qgcc samples/dot.cu -o dot.qg
//   $ qgrun dot.qg --grid 2 --block 8 --arg x=@x.npy --arg y=@y.npy --arg result=zeros:1 --arg n=40 --out result=r.npy
//
// Expected output: the sum over i < 40 of (i/8) * (1 - i/4) = 780/8 - 20540/32 = -544.375;
// every product and partial sum here is a multiple of 1/32 well inside float32's 24
// bits, so the float result is exact whatever the order of the additions:
//   result = [-544.375]

#define BLOCK 8

__global__ void dot(const float *x, const float *y, float *result, int n)
{
    __shared__ float part[BLOCK];
    int t = threadIdx.x;
    float sum = 0.0f;
    for (int i = blockIdx.x * blockDim.x + t; i < n; i += blockDim.x * gridDim.x) {
        sum += x[i] * y[i];
    }
    part[t] = sum;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (t < s) {
            part[t] += part[t + s];
        }
        __syncthreads();
    }
    if (t == 0) {
        atomicAdd(result, part[0]);
    }
}
