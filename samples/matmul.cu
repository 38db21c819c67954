// matmul.cu -- C = A * B for n x n int matrices (row-major), 4x4 shared tiles.
//
// A 2-D block of 4x4 threads computes one 4x4 tile of C: thread (tx, ty) owns
// C[row][col] with row = blockIdx.y*4 + ty, col = blockIdx.x*4 + tx.  For each
// 4-wide slab of the inner dimension the block copies a tile of A and a tile of
// B into __shared__ int As[4][4], Bs[4][4] (0 outside the matrix, so n need not
// be a multiple of 4), waits at __syncthreads(), accumulates 4 products, and
// waits again before the tiles are overwritten.  Products and sums wrap modulo
// 2^32.  Launch ceil(n/4) x ceil(n/4) blocks of 4x4 threads.
//
// Launch (from the repository root):
//   $ python -c "import numpy as np; k = np.arange(64, dtype=np.int32); np.save('A.npy', k % 7 - 3); np.save('B.npy', k // 8 - k % 8)"
//   $ qgcc samples/matmul.cu -o matmul.qg
//   $ qgrun matmul.qg --grid 2,2 --block 4,4 --arg A=@A.npy --arg B=@B.npy --arg C=zeros:64 --arg n=8 --out C=C.npy
//
// Expected output: A[r][c] = (8r + c) % 7 - 3 and B[r][c] = r - c, so
// C[r][c] = sum_k A[r][k] * (k - c); row by row:
//   C = [7, 10, 13, 16, 19, 22, 25, 28, -7, -5, -3, -1, 1, 3, 5, 7, -14, -13, -12, -11,
//        -10, -9, -8, -7, -14, -14, -14, -14, -14, -14, -14, -14, -7, -8, -9, -10, -11,
//        -12, -13, -14, 7, 5, 3, 1, -1, -3, -5, -7, 28, 25, 22, 19, 16, 13, 10, 7, 7, 10,
//        13, 16, 19, 22, 25, 28]

__global__ void matmul(const int *A, const int *B, int *C, int n)
{
    __shared__ int As[4][4];
    __shared__ int Bs[4][4];
    int tx = threadIdx.x;
    int ty = threadIdx.y;
    int row = blockIdx.y * 4 + ty;
    int col = blockIdx.x * 4 + tx;
    int acc = 0;
    for (int t = 0; t < n; t += 4) {
        int ac = t + tx;
        int br = t + ty;
        As[ty][tx] = (row < n && ac < n) ? A[row * n + ac] : 0;
        Bs[ty][tx] = (br < n && col < n) ? B[br * n + col] : 0;
        __syncthreads();
        for (int k = 0; k < 4; k++)
            acc += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    if (row < n && col < n)
        C[row * n + col] = acc;
}
