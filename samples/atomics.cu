// atomics.cu -- every atomic: Add, Sub, Min, Max (signed and unsigned), And, Or,
// Xor, Exch and CAS (a lock-free maximum), plus a ticket counter.
//
// Every thread i < n folds x[i] into the accumulators acc[] (which the host
// initialises) and u[] (the same bits viewed as unsigned):
//   acc[0] += x         atomicAdd        acc[1] -= x      atomicSub
//   acc[2] = min        atomicMin        acc[3] = max     atomicMax (signed)
//   acc[4] &= x         atomicAnd        acc[5] |= x      atomicOr
//   acc[6] ^= x         atomicXor
//   acc[7] = max        a compare-and-swap loop: read, and retry atomicCAS
//                       until no other thread changed the cell in between
//   acc[8] += 1         a ticket counter: atomicAdd returns each thread a unique
//                       ticket t = old value; bit t of tickets[] is set with
//                       atomicOr, so tickets[] gets exactly acc[8]'s first n
//                       bits set, whatever order the threads came in
//   u[0] = min, u[1] = max over (unsigned)x   atomicMin / atomicMax on unsigned
//   prev[i] = atomicExch(&slot[i], x[i]):   prev gets slot's old contents and
//                       slot[i] becomes x[i]
// All results are independent of the order in which the threads' atomics land.
//
// Launch (from the repository root):
//   $ python -c "import numpy as np; np.save('x.npy', np.array([5, -3, 12, 7, -20, 0, 9, 33, -1, 4, 18, -7], dtype=np.int32)); np.save('acc.npy', np.array([100, 100, 2**31 - 1, -2**31, -1, 0, 0, -2**31, 0], dtype=np.int32)); np.save('u.npy', np.array([2**32 - 1, 0], dtype=np.uint32)); np.save('slot.npy', np.arange(12, dtype=np.int32) * 11)"
//   $ qgcc samples/atomics.cu -o atomics.qg
//   $ qgrun atomics.qg --grid 2 --block 8 --arg x=@x.npy --arg n=12 --arg acc=@acc.npy --arg u=@u.npy --arg tickets=zeros:2 --arg slot=@slot.npy --arg prev=zeros:12 --out acc=acc.npy --out u=u.npy --out tickets=tickets.npy --out slot=slot.npy --out prev=prev.npy
//
// Expected output: the sum of x is 57, so acc[0] = 100 + 57 and acc[1] = 100 - 57;
// min -20, max 33 (twice: atomicMax and the CAS loop); AND/OR/XOR of the twelve
// values; 12 tickets; unsigned min 0 and max 0xFFFFFFFF (-1 as unsigned);
// slot = x and prev = the old slot contents 0, 11, 22, ...:
//   acc = [157, 43, -20, 33, 0, -1, 39, 33, 12]
//   u = [0, 4294967295]
//   tickets = [4095, 0]
//   slot = [5, -3, 12, 7, -20, 0, 9, 33, -1, 4, 18, -7]
//   prev = [0, 11, 22, 33, 44, 55, 66, 77, 88, 99, 110, 121]

__device__ void cas_max(int *p, int v)
{
    int old = *p;
    while (old < v) {
        int seen = atomicCAS(p, old, v);
        if (seen == old)
            break;
        old = seen;
    }
}

__global__ void atomics(const int *x, int n, int *acc, unsigned *u, unsigned *tickets, int *slot, int *prev)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    int v = x[i];
    atomicAdd(&acc[0], v);
    atomicSub(&acc[1], v);
    atomicMin(&acc[2], v);
    atomicMax(&acc[3], v);
    atomicAnd(&acc[4], v);
    atomicOr(&acc[5], v);
    atomicXor(&acc[6], v);
    cas_max(&acc[7], v);
    int t = atomicAdd(&acc[8], 1);
    atomicOr(&tickets[t >> 5], 1u << (t & 31));
    atomicMin(&u[0], (unsigned)v);
    atomicMax(&u[1], (unsigned)v);
    prev[i] = atomicExch(&slot[i], v);
}
