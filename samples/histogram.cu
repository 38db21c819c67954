// histogram.cu -- byte histogram with atomicAdd on shared bins, then global bins.
//
// text is an array of n chars (signed, -128..127).  Every block clears 17 shared
// counters, walks the text with a grid-stride loop and counts
//   local[(unsigned char)c >> 4] += 1     (16 bins by high nibble of the byte)
//   local[16] += 1 when c < 0             (the char is negative as a signed char)
// with atomicAdd on shared memory; after a barrier each block adds its non-zero
// counters into the global bins with atomicAdd.  bins must start at zero.
// Because the bytes 0x80..0xFF are exactly the negative chars,
// bins[16] == bins[8] + ... + bins[15] always.
//
// Launch (from the repository root):
//   $ python -c "import numpy as np; np.save('text.npy', np.array(list(b'Hello, SIMT world! 0123456789 ~{|}') + [0xC3, 0xA9, 0xE2, 0x82, 0xAC, 0xFF, 0x80], dtype=np.uint8).view(np.int8))"
//   $ qgcc samples/histogram.cu -o histogram.qg
//   $ qgrun histogram.qg --grid 2 --block 8 --arg text=@text.npy --arg n=41 --arg bins=zeros:17 --out bins=bins.npy
//
// Expected output: the 34 ASCII bytes fall in bins 2 (spaces, ',' and '!': 6),
// 3 (digits: 10), 4 and 5 (upper case: 3 + 2), 6 and 7 (lower case and ~{|}:
// 7 + 6); the 7 bytes >= 0x80 (the UTF-8 of e-acute and the euro sign, 0xFF and
// 0x80) fall in bins 8, 10, 12, 14, 15 and count as negative chars in bins[16]:
//   bins = [0, 0, 6, 10, 3, 2, 7, 6, 2, 0, 2, 0, 1, 0, 1, 1, 7]

__global__ void histogram(const char *text, int n, int *bins)
{
    __shared__ int local[17];
    int t = threadIdx.x;
    for (int b = t; b < 17; b += blockDim.x)
        local[b] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + t; i < n; i += blockDim.x * gridDim.x) {
        char c = text[i];
        unsigned char u = (unsigned char)c;
        atomicAdd(&local[u >> 4], 1);
        if (c < 0)
            atomicAdd(&local[16], 1);
    }
    __syncthreads();
    for (int b = t; b < 17; b += blockDim.x) {
        if (local[b] != 0)
            atomicAdd(&bins[b], local[b]);
    }
}
