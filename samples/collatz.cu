// collatz.cu -- loops whose trip count differs per lane (SIMT divergence).
//
// Thread i follows the Collatz sequence from v = x[i]:  v -> v/2 when v is even,
// v -> 3v+1 when v is odd, until v <= 1.  It writes
//   steps[i] = number of moves taken to reach 1 (0 when x[i] <= 1), or -1 when
//              the sequence is still above 1 after `limit` moves;
//   peak[i]  = the largest value the sequence reached (unsigned);
//   odd[i]   = how many of the moves were 3v+1 moves.
// Every lane of a warp loops a different number of times: lanes that are done
// `break` out and wait while the others continue, and the odd-step branch uses
// `continue`.  Values are unsigned so 3v+1 wraps modulo 2^32 instead of being UB.
//
// Launch (from the repository root):
//   $ python -c "import numpy as np; np.save('x.npy', np.array([0, 1, 2, 3, 6, 7, 9, 12, 15, 18, 19, 25, 27, 31, 41, 97], dtype=np.int32))"
//   $ qgcc samples/collatz.cu -o collatz.qg
//   $ qgrun collatz.qg --grid 2 --block 12 --arg x=@x.npy --arg steps=zeros:16 --arg peak=zeros:16 --arg odd=zeros:16 --arg n=16 --arg limit=100 --out steps=steps.npy --out peak=peak.npy --out odd=odd.npy
//
// Expected output: the classic Collatz step counts (27, 31, 41 and 97 need more
// than 100 moves, so they report -1), the peak of each trajectory and the number
// of 3v+1 moves (counted only up to the cut-off for the -1 cases):
//   steps = [0, 0, 1, 7, 8, 16, 19, 9, 17, 20, 20, 23, -1, -1, -1, -1]
//   peak = [0, 1, 2, 16, 16, 52, 52, 16, 160, 52, 88, 88, 9232, 9232, 9232, 9232]
//   odd = [0, 0, 0, 2, 2, 5, 6, 2, 5, 6, 6, 7, 39, 38, 39, 39]

__global__ void collatz(const int *x, int *steps, unsigned *peak, int *odd, int n, int limit)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    unsigned v = x[i];
    unsigned hi = v;
    int s = 0;
    int odds = 0;
    while (1) {
        if (v <= 1)
            break;
        if (s >= limit) {
            s = -1;
            break;
        }
        s++;
        if (v & 1) {
            v = 3 * v + 1;
            odds++;
            if (v > hi)
                hi = v;
            continue;
        }
        v >>= 1;
    }
    steps[i] = s;
    peak[i] = hi;
    odd[i] = odds;
}
