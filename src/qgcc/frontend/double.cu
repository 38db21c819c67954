/* qgcc's double library: IEEE-754 binary64 on `unsigned long long` bit patterns.
 *
 * The machine has no 64-bit floating point, so every double operation of a
 * kernel is a call of one of these routines (the compiler emits each routine a
 * kernel uses once, out of line, like the soft-float routines); + - << >> & |
 * and the compares of `unsigned long long` are the register-pair sequences of
 * frontend/wide.py.  Valid C++ as well: tests/test_double.py compiles this text
 * with g++ and checks it against the host's IEEE double on many operands.
 *
 * Semantics (docs/subset.md, "double"): round to nearest even, one rounding per
 * operation, subnormals kept (operands and results), every NaN result is the
 * canonical 0x7FFFFFFFFFFFFFFF (like the float rule; input payloads are not
 * propagated); double -> integer truncates and saturates as CUDA's cvt.rzi
 * (NaN -> 0); double -> float rounds once (NaN -> 0x7FFFFFFF).
 *
 * Rules for this file: every 64-bit shift amount stays in 0..63, and no
 * routine calls a routine that calls it.
 */

__device__ unsigned long long __qg_dnan(unsigned long long a) {
    return (unsigned long long)((a << 1) > 0xFFE0000000000000ull);
}

/* An order-preserving key: key(a) < key(b) exactly when a < b, for non-NaN a and b
 * (-0 just below +0). */
__device__ unsigned long long __qg_dkey(unsigned long long a) {
    return (a >> 63) != 0ull ? ~a : a | 0x8000000000000000ull;
}

/* The double nearest to (-1)^sign * m * 2^(e - 1085) (m's leading 1 at bit 62; sign
 * is the sign bit in place).  e is the biased exponent of a normal result: e <= 0 is
 * a subnormal, e >= 2047 overflows. */
__device__ unsigned long long __qg_dsrj(unsigned long long m, int s) {
    /* m >> s with every bit shifted out ORed into bit 0 ("jamming"); s >= 0 */
    if (s == 0)
        return m;
    return s < 63 ? (m >> s) | (unsigned long long)((m << (64 - s)) != 0ull) : (unsigned long long)(m != 0ull);
}

__device__ unsigned long long __qg_dpack(unsigned long long sign, int e, unsigned long long m) {
    if (e >= 2047)
        return sign | 0x7FF0000000000000ull;
    if (e <= 0) {
        m = __qg_dsrj(m, 1 - e);
        e = 1;
    }
    /* round the 10 bits below the 53-bit significand to nearest, ties to even; a carry out
     * of the significand moves into the exponent (the hidden bit adds 1 to e - 1) */
    unsigned long long q = (m + 0x1FFull + ((m >> 10) & 1ull)) >> 10;
    unsigned long long bits = ((unsigned long long)(e - 1) << 52) + q;
    if (bits >= 0x7FF0000000000000ull)
        return sign | 0x7FF0000000000000ull;
    return sign | bits;
}

/* The same for any nonzero m (value m * 2^(e - 1085)): normalized first. */
__device__ unsigned long long __qg_dnorm(unsigned long long sign, int e, unsigned long long m) {
    int n = (int)__clzll(m) - 1;
    if (n < 0)
        return __qg_dpack(sign, e + 1, __qg_dsrj(m, 1));
    return __qg_dpack(sign, e - n, m << n);
}

/* The significand of a finite nonzero a with its leading 1 at bit 52, and the exponent
 * that goes with it (below 1 for subnormals). */
__device__ unsigned long long __qg_dsig(unsigned long long a) {
    unsigned long long m = a & 0xFFFFFFFFFFFFFull;
    if ((a >> 52 & 0x7FFull) == 0ull)
        return m << ((int)__clzll(m) - 11);
    return m | 0x10000000000000ull;
}

__device__ int __qg_dexp(unsigned long long a) {
    int x = (int)(a >> 52) & 0x7FF;
    return x != 0 ? x : 12 - (int)__clzll(a & 0xFFFFFFFFFFFFFull);
}

__device__ unsigned long long __qg_dadd(unsigned long long a, unsigned long long b) {
    if (__qg_dnan(a) != 0ull || __qg_dnan(b) != 0ull)
        return 0x7FFFFFFFFFFFFFFFull;
    if ((a << 1) < (b << 1)) {  /* |a| >= |b| from here on */
        unsigned long long t = a;
        a = b;
        b = t;
    }
    int ea = (int)(a >> 52) & 0x7FF;
    int eb = (int)(b >> 52) & 0x7FF;
    if (ea == 0x7FF)
        return (eb == 0x7FF && ((a ^ b) >> 63) != 0ull) ? 0x7FFFFFFFFFFFFFFFull : a;
    if ((b << 1) == 0ull)
        return (a << 1) == 0ull ? (a & b) : a;  /* -0 + -0 = -0; otherwise the zero adds nothing */
    unsigned long long ma = ((a & 0xFFFFFFFFFFFFFull) | (ea != 0 ? 0x10000000000000ull : 0ull)) << 9;
    unsigned long long mb = ((b & 0xFFFFFFFFFFFFFull) | (eb != 0 ? 0x10000000000000ull : 0ull)) << 9;
    ea = ea != 0 ? ea : 1;
    eb = eb != 0 ? eb : 1;
    mb = __qg_dsrj(mb, ea - eb);
    unsigned long long m = ((a ^ b) >> 63) != 0ull ? ma - mb : ma + mb;
    if (m == 0ull)
        return 0ull;  /* x - x = +0 */
    return __qg_dnorm(a & 0x8000000000000000ull, ea + 1, m);
}

__device__ unsigned long long __qg_dmul(unsigned long long a, unsigned long long b) {
    if (__qg_dnan(a) != 0ull || __qg_dnan(b) != 0ull)
        return 0x7FFFFFFFFFFFFFFFull;
    unsigned long long sign = (a ^ b) & 0x8000000000000000ull;
    unsigned long long a2 = a << 1;
    unsigned long long b2 = b << 1;
    if (a2 >= 0xFFE0000000000000ull || b2 >= 0xFFE0000000000000ull)  /* an infinity */
        return (a2 == 0ull || b2 == 0ull) ? 0x7FFFFFFFFFFFFFFFull : sign | 0x7FF0000000000000ull;
    if (a2 == 0ull || b2 == 0ull)
        return sign;
    int ea = __qg_dexp(a);
    int eb = __qg_dexp(b);
    unsigned long long ma = __qg_dsig(a) << 10;
    unsigned long long mb = __qg_dsig(b) << 11;
    unsigned long long hi = __umul64hi(ma, mb);
    unsigned long long lo = ma * mb;
    int e = ea + eb - 1022;
    if (hi < 0x4000000000000000ull) {
        hi = (hi << 1) | (lo >> 63);
        lo = lo << 1;
        e = e - 1;
    }
    return __qg_dpack(sign, e, hi | (unsigned long long)(lo != 0ull));
}

__device__ unsigned long long __qg_ddiv(unsigned long long a, unsigned long long b) {
    if (__qg_dnan(a) != 0ull || __qg_dnan(b) != 0ull)
        return 0x7FFFFFFFFFFFFFFFull;
    unsigned long long sign = (a ^ b) & 0x8000000000000000ull;
    unsigned long long a2 = a << 1;
    unsigned long long b2 = b << 1;
    if (a2 >= 0xFFE0000000000000ull)  /* inf / x */
        return b2 >= 0xFFE0000000000000ull ? 0x7FFFFFFFFFFFFFFFull : sign | 0x7FF0000000000000ull;
    if (b2 >= 0xFFE0000000000000ull)
        return sign;
    if (b2 == 0ull)
        return a2 == 0ull ? 0x7FFFFFFFFFFFFFFFull : sign | 0x7FF0000000000000ull;
    if (a2 == 0ull)
        return sign;
    int ea = __qg_dexp(a);
    int eb = __qg_dexp(b);
    unsigned long long r = __qg_dsig(a);
    unsigned long long mb = __qg_dsig(b);
    if (r < mb) {  /* the quotient's leading bit comes first */
        r = r << 1;
        ea = ea - 1;
    }
    /* 55 quotient bits, one per step (r < 2 mb < 2^54 throughout), the remainder sticky */
    unsigned long long q = 0ull;
    for (int i = 0; i < 55; i++) {
        q = q << 1;
        if (r >= mb) {
            r = r - mb;
            q = q | 1ull;
        }
        r = r << 1;
    }
    return __qg_dpack(sign, ea - eb + 1023, (q << 8) | (unsigned long long)(r != 0ull));
}

__device__ unsigned long long __qg_dsqrt(unsigned long long a) {
    if (__qg_dnan(a) != 0ull || ((a >> 63) != 0ull && (a << 1) != 0ull))
        return 0x7FFFFFFFFFFFFFFFull;  /* NaN, and the square root of a negative number */
    if ((a << 1) == 0ull || a == 0x7FF0000000000000ull)
        return a;  /* +-0, +inf */
    int ea = __qg_dexp(a);
    unsigned long long m = __qg_dsig(a);
    /* radicand X = m << k, 110 bits (k = 57) or 109 (k = 56) so that the exponent
     * ea - 1075 - k is even; x holds X's top 64 bits, fed two at a time */
    int odd = (ea - 1075) & 1;
    unsigned long long x = m << (10 + odd);
    unsigned long long q = 0ull;
    unsigned long long r = 0ull;
    for (int i = 0; i < 55; i++) {
        r = (r << 2) | (x >> 62);
        x = x << 2;
        unsigned long long t = (q << 2) | 1ull;
        q = q << 1;
        if (r >= t) {
            r = r - t;
            q = q | 1ull;
        }
    }
    return __qg_dpack(0ull, 1077 + ((ea - 1075 - 56 - odd) >> 1), (q << 8) | (unsigned long long)(r != 0ull));
}

/* Compares: 1 when a < b, 2 when a == b, 0 when a > b or either is NaN (unordered);
 * -0 == +0.  The compiler takes <, <=, ==, != from the one result. */
__device__ unsigned __qg_dcmp(unsigned long long a, unsigned long long b) {
    if (__qg_dnan(a) != 0ull || __qg_dnan(b) != 0ull)
        return 0u;
    if (a == b || ((a | b) << 1) == 0ull)
        return 2u;
    return (unsigned)(__qg_dkey(a) < __qg_dkey(b));
}

/* fmin/fmax: a NaN operand is ignored (two NaNs give NaN); -0 < +0. */
__device__ unsigned long long __qg_dmin(unsigned long long a, unsigned long long b) {
    if (__qg_dnan(a) != 0ull)
        return __qg_dnan(b) != 0ull ? 0x7FFFFFFFFFFFFFFFull : b;
    if (__qg_dnan(b) != 0ull)
        return a;
    return __qg_dkey(b) < __qg_dkey(a) ? b : a;
}

__device__ unsigned long long __qg_dmax(unsigned long long a, unsigned long long b) {
    if (__qg_dnan(a) != 0ull)
        return __qg_dnan(b) != 0ull ? 0x7FFFFFFFFFFFFFFFull : b;
    if (__qg_dnan(b) != 0ull)
        return a;
    return __qg_dkey(a) < __qg_dkey(b) ? b : a;
}

/* ---------------------------------------------------------------- conversions */

__device__ unsigned long long __qg_f2d(float f) {
    unsigned u = __float_as_uint(f);
    unsigned long long sign = (unsigned long long)(u >> 31) << 63;
    unsigned x = (u >> 23) & 255u;
    unsigned long long m = (unsigned long long)(u & 0x7FFFFFu);
    if (x == 255u)
        return m != 0ull ? 0x7FFFFFFFFFFFFFFFull : sign | 0x7FF0000000000000ull;
    if (x == 0u)  /* zero, or a subnormal float: a normal double, exactly */
        return m == 0ull ? sign : __qg_dnorm(sign, 936, m);
    return sign | ((unsigned long long)(x + 896u) << 52) | (m << 29);
}

__device__ float __qg_d2f(unsigned long long a) {
    if (__qg_dnan(a) != 0ull)
        return __uint_as_float(0x7FFFFFFFu);
    unsigned sign = (unsigned)(a >> 63);
    int x = (int)(a >> 52) & 0x7FF;
    if (x == 0x7FF)
        return __uint_as_float((sign << 31) | 0x7F800000u);
    if (x < 850)  /* below half the smallest float subnormal (and zeros): +-0 */
        return __uint_as_float(sign << 31);
    /* 31 significant bits, the rest sticky, rounded once by the float library */
    unsigned long long m = (a & 0xFFFFFFFFFFFFFull) | 0x10000000000000ull;
    unsigned sig = (unsigned)(m >> 22) | (unsigned)((m & 0x3FFFFFull) != 0ull);
    return __uint_as_float(__qg_round_pack(sign, x - 897, sig));
}

/* 32-bit integers convert exactly: the leading 1 moves to bit 52 and adds itself to the
 * exponent field. */
__device__ unsigned long long __qg_u2d(unsigned x) {
    if (x == 0u)
        return 0ull;
    int n = (int)__clz((int)x);
    return ((unsigned long long)(1053 - n) << 52) + ((unsigned long long)x << (21 + n));
}

__device__ unsigned long long __qg_i2d(int x) {
    if (x < 0)
        return __qg_u2d(0u - (unsigned)x) | 0x8000000000000000ull;
    return __qg_u2d((unsigned)x);
}

__device__ unsigned long long __qg_ull2d(unsigned long long x) {
    if (x == 0ull)
        return 0ull;
    return __qg_dnorm(0ull, 1085, x);
}

__device__ unsigned long long __qg_ll2d(long long x) {
    if (x < 0)
        return __qg_ull2d(0ull - (unsigned long long)x) | 0x8000000000000000ull;
    return __qg_ull2d((unsigned long long)x);
}

__device__ unsigned long long __qg_d2ull(unsigned long long a) {
    int x = (int)(a >> 52) & 0x7FF;
    if (__qg_dnan(a) != 0ull || (a >> 63) != 0ull || x < 1023)
        return 0ull;  /* NaN, negative, or below 1 */
    if (x >= 1023 + 64)
        return 0xFFFFFFFFFFFFFFFFull;  /* 2^64 and beyond, +inf */
    unsigned long long m = (a & 0xFFFFFFFFFFFFFull) | 0x10000000000000ull;
    return x >= 1075 ? m << (x - 1075) : m >> (1075 - x);
}

__device__ long long __qg_d2ll(unsigned long long a) {
    if (__qg_dnan(a) != 0ull)
        return 0;
    int x = (int)(a >> 52) & 0x7FF;
    if (x >= 1023 + 63)  /* |a| >= 2^63, infinities */
        return (a >> 63) != 0ull ? (long long)0x8000000000000000ull : 0x7FFFFFFFFFFFFFFFll;
    unsigned long long v = __qg_d2ull(a & 0x7FFFFFFFFFFFFFFFull);
    return (a >> 63) != 0ull ? (long long)(0ull - v) : (long long)v;
}

__device__ int __qg_d2i(unsigned long long a) {
    long long v = __qg_d2ll(a);
    return v < -2147483647ll - 1ll ? -2147483647 - 1 : v > 2147483647ll ? 2147483647 : (int)v;
}

__device__ unsigned __qg_d2u(unsigned long long a) {
    unsigned long long v = __qg_d2ull(a);
    return v > 0xFFFFFFFFull ? 0xFFFFFFFFu : (unsigned)v;
}

/* ---------------------------------------------------------------- rounding to integers */

__device__ unsigned long long __qg_dtrunc(unsigned long long a) {
    int x = (int)(a >> 52) & 0x7FF;
    if (__qg_dnan(a) != 0ull)
        return 0x7FFFFFFFFFFFFFFFull;
    if (x >= 1075)
        return a;  /* already an integer (or inf) */
    if (x < 1023)
        return a & 0x8000000000000000ull;
    return a & ~((1ull << (1075 - x)) - 1ull);
}

/* floor (up = 0) and ceil (up = 1): trunc, then one step away from zero when it dropped
 * a fraction on the side that rounds outward. */
__device__ unsigned long long __qg_dfloorceil(unsigned long long a, int up) {
    unsigned long long t = __qg_dtrunc(a);
    if (t == a || __qg_dnan(a) != 0ull)
        return t;
    unsigned long long neg = a >> 63;
    if (neg == (unsigned long long)up)
        return t;  /* floor of a positive, ceil of a negative: trunc */
    if ((t << 1) == 0ull)  /* |a| < 1: -1 or +1 */
        return (neg << 63) | 0x3FF0000000000000ull;
    return __qg_dadd(t, (neg << 63) | 0x3FF0000000000000ull);
}

/* round: to nearest, halfway cases away from zero. */
__device__ unsigned long long __qg_dround(unsigned long long a) {
    int x = (int)(a >> 52) & 0x7FF;
    if (__qg_dnan(a) != 0ull)
        return 0x7FFFFFFFFFFFFFFFull;
    if (x >= 1075)
        return a;
    if (x < 1022)
        return a & 0x8000000000000000ull;
    if (x == 1022)  /* 0.5 <= |a| < 1 */
        return (a & 0x8000000000000000ull) | 0x3FF0000000000000ull;
    /* add half a unit of the integer's last place to the magnitude (a carry moves into the
     * exponent), then drop the fraction */
    unsigned long long r = a + (1ull << (1074 - x));
    return r & ~((1ull << (1075 - x)) - 1ull);
}
