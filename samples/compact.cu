// compact.cu -- stream compaction with warp votes: keep the elements above a threshold.
//
// Each thread decides whether its element is kept (x[i] > threshold).  One
// __ballot_sync gives every lane the warp's 4-bit vote; a lane's place among the
// kept elements of its warp is the number of kept lanes below it,
// __popc(votes & ((1 << lane) - 1)), and lane 0 records the warp's count,
// __popc(votes), in shared memory.  After one barrier each thread adds the counts
// of the warps before its own and writes its element there.  Block b compacts
// its own elements, in order, to the start of its slice out[b*blockDim.x ...];
// counts[b] is how many it kept (the rest of the slice is left as it was).
// blockDim.x must be a multiple of warpSize (4 here).
//
// Launch (from the repository root):
//   $ python -c "import numpy as np; np.save('x.npy', np.array([3, -1, 4, -1, 5, -9, 2, 6, -5, 3, 5, -8, 9, 7, -9, 3], dtype=np.int32))"
//   $ qgcc samples/compact.cu -o compact.qg
//   $ qgrun compact.qg --grid 2 --block 8 --arg x=@x.npy --arg out=zeros:16 --arg counts=zeros:2 --arg n=14 --arg threshold=2 --out out=out.npy --out counts=counts.npy
//
// Expected output: block 0 sees 3 -1 4 -1 5 -9 2 6 and keeps 3 4 5 6 (2 is not
// above the threshold); block 1 sees 8 elements of which 6 exist (n = 14):
// -5 3 5 -8 9 7, and keeps 3 5 9 7.
//   out = [3, 4, 5, 6, 0, 0, 0, 0, 3, 5, 9, 7, 0, 0, 0, 0]
//   counts = [4, 4]

__global__ void compact(const int *x, int *out, int *counts, int n, int threshold)
{
    __shared__ int warp_count[16];
    int t = threadIdx.x;
    int i = blockIdx.x * blockDim.x + t;
    int lane = t % warpSize;
    int warp = t / warpSize;
    bool keep = false;
    if (i < n)
        keep = x[i] > threshold;
    unsigned votes = __ballot_sync(0xffffffff, keep);
    int rank = __popc(votes & ((1u << lane) - 1));
    if (lane == 0)
        warp_count[warp] = __popc(votes);
    __syncthreads();
    int base = blockIdx.x * blockDim.x;
    for (int w = 0; w < warp; w++)
        base += warp_count[w];
    if (keep)
        out[base + rank] = x[i];
    if (t == 0) {
        int total = 0;
        for (int w = 0; w < blockDim.x / warpSize; w++)
            total += warp_count[w];
        counts[blockIdx.x] = total;
    }
}
