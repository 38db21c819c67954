// scan.cu -- inclusive prefix sum (Hillis-Steele) in shared memory, per block.
//
// Each block scans its own blockDim.x-element segment of x:
//   y[i] = x[base] + x[base+1] + ... + x[i]     with base = blockIdx.x * blockDim.x
// and the last thread of the block writes the segment total to sums[blockIdx.x]
// (elements past n count as 0).  Round k adds buf[t - 2^k] into buf[t]; every
// thread first reads its addend, all threads meet at __syncthreads(), then all
// write, and meet again -- without the two barriers a thread could read a cell
// its neighbour has already updated in this round.  Sums wrap modulo 2^32.
//
// Launch (from the repository root):
//   $ python -c "import numpy as np; np.save('x.npy', np.arange(1, 41, dtype=np.int32))"
//   $ qgcc samples/scan.cu -o scan.qg
//   $ qgrun scan.qg --grid 2 --block 32 --arg x=@x.npy --arg y=zeros:40 --arg sums=zeros:2 --arg n=40 --out y=y.npy --out sums=sums.npy
//
// Expected output: block 0 scans 1..32, giving the triangular numbers
// y[i] = (i+1)(i+2)/2 up to 528; block 1 starts again at x[32] = 33 and scans
// 33..40 (its other 24 threads see 0); sums = [528, 292]:
//   y = [1, 3, 6, 10, 15, 21, 28, 36, 45, 55, 66, 78, 91, 105, 120, 136, 153, 171, 190,
//        210, 231, 253, 276, 300, 325, 351, 378, 406, 435, 465, 496, 528, 33, 67, 102, 138,
//        175, 213, 252, 292]
//   sums = [528, 292]

__global__ void scan(const int *x, int *y, int *sums, int n)
{
    __shared__ int buf[64];
    int t = threadIdx.x;
    int i = blockIdx.x * blockDim.x + t;
    buf[t] = i < n ? x[i] : 0;
    __syncthreads();
    for (int off = 1; off < blockDim.x; off <<= 1) {
        int v = 0;
        if (t >= off)
            v = buf[t - off];
        __syncthreads();
        buf[t] += v;
        __syncthreads();
    }
    if (i < n)
        y[i] = buf[t];
    if (t == blockDim.x - 1)
        sums[blockIdx.x] = buf[t];
}
