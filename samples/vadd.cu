// vadd.cu -- bounds-checked vector add: c[i] = a[i] + b[i] for every i < n.
//
// The grid has more threads (3 blocks x 16 = 48) than elements (n = 37), so the
// last block has threads past the end; the `if (i < n)` guard keeps them from
// touching memory.  Additions wrap around modulo 2^32 like any C int on a GPU.
//
// Launch (from the repository root):
//   $ python -c "import numpy as np; i = np.arange(37, dtype=np.int32); np.save('a.npy', i); np.save('b.npy', 100 * i)"
//   $ qgcc samples/vadd.cu -o vadd.qg
//   $ qgrun vadd.qg --grid 3 --block 16 --arg a=@a.npy --arg b=@b.npy --arg c=zeros:37 --arg n=37 --out c=c.npy
//
// Expected output: with a[i] = i and b[i] = 100*i, every element is c[i] = 101*i,
// i.e. 0, 101, 202, ... up to c[36] = 3636:
//   c = [0, 101, 202, 303, 404, 505, 606, 707, 808, 909, 1010, 1111, 1212, 1313,
//        1414, 1515, 1616, 1717, 1818, 1919, 2020, 2121, 2222, 2323, 2424, 2525,
//        2626, 2727, 2828, 2929, 3030, 3131, 3232, 3333, 3434, 3535, 3636]

__global__ void vadd(const int *a, const int *b, int *c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        c[i] = a[i] + b[i];
    }
}
