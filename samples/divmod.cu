// divmod.cu -- signed and unsigned division and remainder, shifts, and casts to
// char / unsigned char / bool.
//
// For each i < n, with a = a[i] and b = b[i] (b != 0, and not a = INT_MIN with
// b = -1, both of which C leaves undefined):
//   q[i]  = a / b     r[i]  = a % b        signed: the quotient truncates toward
//                                          zero, the remainder has a's sign
//   uq[i] = ua / ub   ur[i] = ua % ub      the same bits as unsigned (ua = (unsigned)a)
//   sr[i] = a >> s    ur2[i] = ua >> s     arithmetic vs logical right shift
//   sl[i] = a << s                         with s = (5 * i) & 31 (the sample's shifts stay
//                                          in 0..31, where C defines them)
//   c[i]  = (char)a          signed low byte, stored in a char buffer
//   cw[i] = (char)a          the same, widened back to int: -128..127
//   uc[i] = (unsigned char)a the low byte, 0..255
//   bz[i] = (bool)(a % b)    true when b does not divide a
//
// Launch (from the repository root):
//   $ python -c "import numpy as np; np.save('a.npy', np.array([7, -7, 7, -7, 100, -2147483648, 2147483647, -1, 255, 384, -129, 1000000], dtype=np.int32)); np.save('b.npy', np.array([2, 2, -2, -2, 7, 3, -10, 3, 16, 128, 5, -999], dtype=np.int32))"
//   $ qgcc samples/divmod.cu -o divmod.qg
//   $ qgrun divmod.qg --grid 3 --block 4 --arg a=@a.npy --arg b=@b.npy --arg q=zeros:12 --arg r=zeros:12 --arg uq=zeros:12 --arg ur=zeros:12 --arg sr=zeros:12 --arg ur2=zeros:12 --arg sl=zeros:12 --arg c=zeros:12 --arg cw=zeros:12 --arg uc=zeros:12 --arg bz=zeros:12 --arg n=12 --out q=q.npy --out r=r.npy --out uq=uq.npy --out ur=ur.npy --out sr=sr.npy --out ur2=ur2.npy --out sl=sl.npy --out c=c.npy --out cw=cw.npy --out uc=uc.npy --out bz=bz.npy
//
// Expected output: 7/2 = 3 r 1, -7/2 = -3 r -1, 7/-2 = -3 r 1, -7/-2 = 3 r -1;
// as unsigned, -7 is 4294967289, so (unsigned)-7 / 2 = 2147483644 r 1; the low byte of
// 255 is -1 as a char and 255 as an unsigned char; 384 = 0x180 gives char -128:
//   q = [3, -3, -3, 3, 14, -715827882, -214748364, 0, 15, 3, -25, -1001]
//   r = [1, -1, 1, -1, 2, -2, 7, -1, 15, 0, -4, 1]
//   uq = [3, 2147483644, 0, 0, 14, 715827882, 0, 1431655765, 15, 3, 858993433, 0]
//   ur = [1, 1, 7, 4294967289, 2, 2, 2147483647, 0, 15, 0, 2, 1000000]
//   sr = [7, -1, 0, -1, 0, -64, 1, -1, 0, 0, -1, 0]
//   ur2 = [7, 134217727, 0, 131071, 0, 64, 1, 536870911, 0, 0, 16383, 0]
//   sl = [7, -224, 7168, -229376, 104857600, 0, -1073741824, -8, 65280, 3145728, -33816576,
//         536870912]
//   c = [7, -7, 7, -7, 100, 0, -1, -1, -1, -128, 127, 64]
//   cw = [7, -7, 7, -7, 100, 0, -1, -1, -1, -128, 127, 64]
//   uc = [7, 249, 7, 249, 100, 0, 255, 255, 255, 128, 127, 64]
//   bz = [1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1]

__global__ void divmod(const int *a, const int *b, int *q, int *r, unsigned *uq, unsigned *ur,
                       int *sr, unsigned *ur2, int *sl, char *c, int *cw, unsigned char *uc,
                       bool *bz, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    int x = a[i];
    int y = b[i];
    unsigned ux = (unsigned)x;
    unsigned uy = (unsigned)y;
    int s = (5 * i) & 31;
    q[i] = x / y;
    r[i] = x % y;
    uq[i] = ux / uy;
    ur[i] = ux % uy;
    sr[i] = x >> s;
    ur2[i] = ux >> s;
    sl[i] = x << s;
    c[i] = (char)x;
    cw[i] = (char)x;
    uc[i] = (unsigned char)x;
    bz[i] = (bool)(x % y);
}
