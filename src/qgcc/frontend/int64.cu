/* qgcc's 64-bit integer routines: division and the conversions between 64-bit
 * integers and float, written in the qgcc CUDA-C subset on `unsigned long long`
 * (whose + - << >> & | and compares the compiler inlines on register pairs,
 * frontend/wide.py).  The compiler emits each routine a kernel uses once, out of
 * line, like the soft-float routines.  Valid C++ as well: the tests compile this
 * text with g++ and compare it with the host's 64-bit arithmetic.
 *
 * Semantics (docs/subset.md, "64-bit integers"): unsigned x / 0 = all ones,
 * x % 0 = x; signed x / 0 = -1 (x >= 0) or 1 (x < 0); LLONG_MIN / -1 = LLONG_MIN;
 * float -> 64-bit truncates and saturates as CUDA's cvt.rzi (NaN -> 0); 64-bit ->
 * float rounds once to nearest even.
 */

__device__ unsigned long long __qg_udivmod64(unsigned long long n, unsigned long long d, int rem) {
    if ((n >> 32) == 0ull && (d >> 32) == 0ull) {  /* both fit 32 bits: one 32-bit division */
        unsigned a = (unsigned)n;
        unsigned b = (unsigned)d;
        if (b == 0u)  /* (tested here, not left to the machine's a / 0, so that the host runs this text too) */
            return rem ? n : 0xFFFFFFFFFFFFFFFFull;
        unsigned q = a / b;
        return rem ? (unsigned long long)(a - q * b) : (unsigned long long)q;
    }
    if ((d >> 32) == 0ull) {  /* a 32-bit divisor: the high word by the 32-bit division, then 32 steps */
        unsigned b = (unsigned)d;
        if (b == 0u)
            return rem ? n : 0xFFFFFFFFFFFFFFFFull;
        unsigned nh = (unsigned)(n >> 32);
        unsigned qh = nh / b;
        unsigned long long rr = (unsigned long long)(nh - qh * b);  /* < d: the steps never overflow */
        unsigned lo = (unsigned)n;
        unsigned ql = 0u;
        for (int i = 0; i < 32; i++) {
            rr = (rr << 1) | (unsigned long long)(lo >> 31);
            lo = lo << 1;
            ql = ql << 1;
            if (rr >= d) {
                rr = rr - d;
                ql = ql | 1u;
            }
        }
        return rem ? rr : ((unsigned long long)qh << 32) | (unsigned long long)ql;
    }
    /* restoring division, one quotient bit per step; the quotient bits enter n from the right */
    unsigned long long r = 0ull;
    for (int i = 0; i < 64; i++) {
        unsigned long long top = r >> 63;  /* the bit shifted out of r */
        r = (r << 1) | (n >> 63);
        n = n << 1;
        if (top != 0ull || r >= d) {
            r = r - d;
            n = n | 1ull;
        }
    }
    return rem ? r : n;
}

__device__ long long __qg_sdivmod64(long long a, long long b, int rem) {
    unsigned long long ua = a < 0 ? 0ull - (unsigned long long)a : (unsigned long long)a;
    unsigned long long ub = b < 0 ? 0ull - (unsigned long long)b : (unsigned long long)b;
    unsigned long long r = __qg_udivmod64(ua, ub, rem);
    int negative = rem ? a < 0 : (a < 0) != (b < 0);
    return negative ? (long long)(0ull - r) : (long long)r;
}

__device__ float __qg_ull2f(unsigned long long x) {
    unsigned hi = (unsigned)(x >> 32);
    if (hi == 0u)
        return (float)(unsigned)x;
    /* keep the top 32 bits, with a sticky bit for the rest, round them once, then scale */
    int s = 32 - (int)__clz(hi);
    unsigned long long lost = x & ((1ull << s) - 1ull);
    unsigned m = (unsigned)(x >> s) | (unsigned)(lost != 0ull);
    return (float)m * __uint_as_float((unsigned)(127 + s) << 23);
}

__device__ float __qg_ll2f(long long x) {
    if (x < 0)
        return -__qg_ull2f(0ull - (unsigned long long)x);
    return __qg_ull2f((unsigned long long)x);
}

__device__ unsigned long long __qg_f2ull(float f) {
    unsigned b = __float_as_uint(f);
    unsigned e = (b >> 23) & 255u;
    if (e == 255u && (b & 0x7FFFFFu) != 0u)
        return 0ull;  /* NaN */
    if ((b >> 31) != 0u || e < 127u)
        return 0ull;  /* negative, or below 1 */
    if (e >= 127u + 64u)
        return 0xFFFFFFFFFFFFFFFFull;  /* 2^64 and beyond, +inf */
    unsigned long long m = (unsigned long long)((b & 0x7FFFFFu) | 0x800000u);
    int sh = (int)e - 150;
    return sh >= 0 ? m << sh : m >> (0 - sh);
}

__device__ long long __qg_f2ll(float f) {
    unsigned b = __float_as_uint(f);
    unsigned e = (b >> 23) & 255u;
    if (e == 255u && (b & 0x7FFFFFu) != 0u)
        return 0;  /* NaN */
    if (e < 127u)
        return 0;
    if (e >= 127u + 63u)  /* |f| >= 2^63, infinities */
        return (b >> 31) != 0u ? (long long)0x8000000000000000ull : 0x7FFFFFFFFFFFFFFFll;
    unsigned long long m = (unsigned long long)((b & 0x7FFFFFu) | 0x800000u);
    int sh = (int)e - 150;
    unsigned long long v = sh >= 0 ? m << sh : m >> (0 - sh);
    return (b >> 31) != 0u ? (long long)(0ull - v) : (long long)v;
}
