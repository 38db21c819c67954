// reduce.cu -- shared-memory tree reduction, one partial sum per block.
//
// Each block loads blockDim.x elements of x into shared memory (0 past the end
// of the array), then halves the number of active threads each round:
// thread t < s adds buf[t + s] into buf[t], with a __syncthreads() between rounds
// so no thread reads a cell before its writer has finished.  Thread 0 writes
// the block's total to partial[blockIdx.x].  blockDim.x must be a power of two
// (at most 64).  Sums wrap modulo 2^32.
//
// Launch (from the repository root):
//   $ python -c "import numpy as np; np.save('x.npy', np.arange(1, 91, dtype=np.int32))"
//   $ qgcc samples/reduce.cu -o reduce.qg
//   $ qgrun reduce.qg --grid 3 --block 32 --arg x=@x.npy --arg partial=zeros:3 --arg n=90 --out partial=partial.npy
//
// Expected output: x = 1..90 split into blocks of 32: 1+...+32 = 528,
// 33+...+64 = 1552, and 65+...+90 = 2015 (the last block has 6 zero pads);
// together 4095 = 90*91/2.
//   partial = [528, 1552, 2015]

__global__ void reduce(const int *x, int *partial, int n)
{
    __shared__ int buf[64];
    int t = threadIdx.x;
    int i = blockIdx.x * blockDim.x + t;
    buf[t] = 0;
    if (i < n)
        buf[t] = x[i];
    __syncthreads();
    for (int s = blockDim.x >> 1; s > 0; s >>= 1) {
        if (t < s)
            buf[t] += buf[t + s];
        __syncthreads();
    }
    if (t == 0)
        partial[blockIdx.x] = buf[0];
}
