// devfunc.cu -- __device__ helper functions (the compiler inlines every call).
//
// For each i < n thread i computes, from a[i] and b[i]:
//   g[i] = gcd(|a[i]|, |b[i]|)          (Euclid with %, gcd(0, 0) = 0)
//   l[i] = clamp(lcm(a[i], b[i]), 0, cap) where lcm(x, y) = |x| / gcd * |y|,
//          and lcm is 0 when either operand is 0 (an early return)
//   s[i] = sign(a[i] - b[i])            (-1, 0 or 1; a helper with three returns)
// Helpers call helpers (lcm calls gcd and iabs) and return from inside loops and
// ifs, so inlining has to turn every `return` into a jump to the call's end.
//
// Launch (from the repository root):
//   $ python -c "import numpy as np; np.save('a.npy', np.array([12, 18, -15, 0, 7, 100, 35, -64, 9, 21, 0, 81], dtype=np.int32)); np.save('b.npy', np.array([8, 24, 10, 5, 13, -75, 35, 48, 0, 14, 0, 54], dtype=np.int32))"
//   $ qgcc samples/devfunc.cu -o devfunc.qg
//   $ qgrun devfunc.qg --grid 2 --block 8 --arg a=@a.npy --arg b=@b.npy --arg g=zeros:12 --arg l=zeros:12 --arg s=zeros:12 --arg n=12 --arg cap=200 --out g=g.npy --out l=l.npy --out s=s.npy
//
// Expected output (gcd, clamped lcm, sign of the difference):
//   g = [4, 6, 5, 5, 1, 25, 35, 16, 9, 7, 0, 27]
//   l = [24, 72, 30, 0, 91, 200, 35, 192, 0, 42, 0, 162]
//   s = [1, -1, -1, -1, -1, 1, 0, -1, 1, 1, 0, 1]

__device__ int iabs(int v)
{
    if (v < 0)
        return -v;
    return v;
}

__device__ int clamp(int v, int lo, int hi)
{
    if (v < lo)
        return lo;
    if (v > hi)
        return hi;
    return v;
}

__device__ int gcd(int x, int y)
{
    x = iabs(x);
    y = iabs(y);
    while (y != 0) {
        int t = x % y;
        x = y;
        y = t;
    }
    return x;
}

__device__ int lcm(int x, int y)
{
    if (x == 0 || y == 0)
        return 0;
    return iabs(x) / gcd(x, y) * iabs(y);
}

__device__ int sign(int v)
{
    if (v > 0)
        return 1;
    if (v < 0)
        return -1;
    return 0;
}

__global__ void devfunc(const int *a, const int *b, int *g, int *l, int *s, int n, int cap)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        g[i] = gcd(a[i], b[i]);
        l[i] = clamp(lcm(a[i], b[i]), 0, cap);
        s[i] = sign(a[i] - b[i]);
    }
}
