// bitops.cu -- bit manipulation on unsigned words: popcount, parity, bit
// reversal, rotation, lowest set bit and leading-zero count.
//
// For each i < n, with v = x[i] (unsigned) and k = r[i] & 31:
//   pop[i] = number of 1 bits of v       (Kernighan's loop v &= v - 1: the trip
//                                          count is the popcount, so lanes diverge)
//   par[i] = parity of v (bool)          (the low bit of pop)
//   rev[i] = v with its 32 bits reversed (a fixed 32-iteration loop)
//   rot[i] = v rotated left by k         ((v << k) | (v >> (32 - k)), with k == 0
//                                          handled separately since a shift by 32
//                                          is undefined in C)
//   low[i] = v & -v                      (the lowest set bit; 0 for v = 0)
//   clz[i] = number of leading zero bits (32 for v = 0; a loop that stops early)
//
// Launch (from the repository root):
//   $ python -c "import numpy as np; np.save('x.npy', np.array([0, 1, 2, 3, 0x80000000, 0xFFFFFFFF, 0x12345678, 0xF0F0F0F0, 255, 256, 0xDEADBEEF, 0x00010000], dtype=np.uint32)); np.save('r.npy', np.array([0, 1, 31, 4, 1, 7, 8, 4, 24, 40, 16, 33], dtype=np.int32))"
//   $ qgcc samples/bitops.cu -o bitops.qg
//   $ qgrun bitops.qg --grid 2 --block 8 --arg x=@x.npy --arg r=@r.npy --arg pop=zeros:12 --arg par=zeros:12 --arg rev=zeros:12 --arg rot=zeros:12 --arg low=zeros:12 --arg clz=zeros:12 --arg n=12 --out pop=pop.npy --out par=par.npy --out rev=rev.npy --out rot=rot.npy --out low=low.npy --out clz=clz.npy
//
// Expected output (rev, rot and low as unsigned decimals; e.g. rev(1) = 0x80000000
// = 2147483648, 0x12345678 rotated left by 8 is 0x34567812 = 878082066):
//   pop = [0, 1, 1, 2, 1, 32, 13, 16, 8, 1, 24, 1]
//   par = [0, 1, 1, 0, 1, 0, 1, 0, 0, 1, 0, 1]
//   rev = [0, 2147483648, 1073741824, 3221225472, 1, 4294967295, 510274632, 252645135,
//          4278190080, 8388608, 4152210811, 32768]
//   rot = [0, 2, 1, 48, 1, 4294967295, 878082066, 252645135, 4278190080, 65536, 3203391149,
//          131072]
//   low = [0, 1, 2, 1, 2147483648, 1, 8, 16, 1, 256, 1, 65536]
//   clz = [32, 31, 30, 30, 0, 0, 3, 0, 24, 23, 0, 15]

__device__ int popcount(unsigned v)
{
    int count = 0;
    while (v != 0) {
        v &= v - 1;
        count++;
    }
    return count;
}

__device__ unsigned reverse(unsigned v)
{
    unsigned out = 0;
    for (int b = 0; b < 32; b++) {
        out = (out << 1) | (v & 1);
        v >>= 1;
    }
    return out;
}

__device__ unsigned rotl(unsigned v, int k)
{
    if (k == 0)
        return v;
    return (v << k) | (v >> (32 - k));
}

__device__ int clz32(unsigned v)
{
    int z = 0;
    for (int b = 31; b >= 0; b--) {
        if ((v >> b) & 1)
            break;
        z++;
    }
    return z;
}

__global__ void bitops(const unsigned *x, const int *r, int *pop, bool *par, unsigned *rev,
                       unsigned *rot, unsigned *low, int *clz, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        unsigned v = x[i];
        int p = popcount(v);
        pop[i] = p;
        par[i] = p & 1;
        rev[i] = reverse(v);
        rot[i] = rotl(v, r[i] & 31);
        low[i] = v & -v;
        clz[i] = clz32(v);
    }
}
