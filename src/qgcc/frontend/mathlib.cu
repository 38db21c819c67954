/* qgcc's math library: the float functions of CUDA's math API.
 *
 * Like softfloat.cu this is CUDA-C in the qgcc subset, compiled by the front
 * end; a kernel links only the routines it calls (and what they call).  It is
 * also valid C: tests/native/mathlib_host.c compiles it with the host C
 * compiler (IEEE binary32, round to nearest, no contraction), which computes
 * exactly what the soft-float routines compute, so the algorithms are checked
 * against mpmath on many inputs at native speed, and the emulator only has to
 * show that qgcc compiles this text to the same bits.
 *
 * Written for this project from the numerical-analysis literature:
 * Cody-Waite and Payne-Hanek argument reduction, the Tang / fdlibm-style
 * reductions of exp and log, Newton iterations with exact fma residuals,
 * polynomials fitted by bench/mathlib_fit.py (minimax, Lawson's algorithm),
 * and, in powf, fma-free error-free transformations (Dekker's product with
 * Veltkamp's split, Knuth's TwoSum and Fast2Sum) on the float unit's + - *.
 *
 * Cost model.  The code was written when every float operation was a routine
 * call of 100-500 warp instructions, so it minimises float operations, not
 * integer ones: classification, rounding to integers, scaling by powers of two
 * and the huge-argument trig reduction are integer code, and floats are compared
 * and converted through their bit patterns.  With the float unit, + - * and
 * fmaf are one instruction each (FADD, FSUB, FMUL, FFMA) and division and sqrtf
 * short routines (divsqrt.cu); under --soft-float, + - * inside this file are
 * lowered to the fma routine (fmaf(a, 1, b), fmaf(a, 1, -b), fmaf(a, b, -0): the
 * same IEEE results), so a function links one float routine and stays within
 * the instruction limit.
 *
 * Semantics: CUDA's (every NaN result is the canonical 0x7FFFFFFF, denormals
 * kept).  Error bounds: docs/subset.md, "Math library".
 */

/* ---------------------------------------------------------------- helpers */

__device__ float __qgm_nan() {
    return __uint_as_float(0x7FFFFFFFu);
}

/* x, with a NaN made canonical. */
__device__ float __qgm_canon(float x) {
    if ((__float_as_uint(x) & 0x7FFFFFFFu) > 0x7F800000u)
        return __uint_as_float(0x7FFFFFFFu);
    return x;
}

/* (float)k for a small integer k (|k| < 2^22), exactly, without a conversion routine. */
__device__ float __qgm_small_int(int k) {
    return __uint_as_float(0x4B400000u + (unsigned)k) - 12582912.0f;
}

/* x * 2^n with one rounding (subnormal results round once, to nearest even). */
__device__ float __qgm_ldexp(float x, int n) {
    unsigned u = __float_as_uint(x);
    int e = (int)((u >> 23) & 0xFFu);
    unsigned sig = u & 0x7FFFFFu;
    if (e == 0xFF)
        return __qgm_canon(x);
    if (e == 0) {
        if (sig == 0u)
            return x;
        int sh = (int)__qg_clz(sig) - 8;
        sig <<= (unsigned)sh;
        e = 1 - sh;
    }
    if (n > 400)
        n = 400;
    if (n < -400)
        n = -400;
    return __uint_as_float(__qg_round_pack(u >> 31, e - 1 + n, (sig | 0x800000u) << 7));
}

/* 1/d to about 2^-12 relative (an integer estimate and two Newton steps): for
   corrections that are themselves about an ulp. */
__device__ float __qgm_recip_est(float d) {
    unsigned u = __float_as_uint(d);
    float a = __uint_as_float(u & 0x7FFFFFFFu);
    float y = __uint_as_float(0x7EF311C3u - (u & 0x7FFFFFFFu));
    y = y * fmaf(-a, y, 2.0f);
    y = y * fmaf(-a, y, 2.0f);
    return __uint_as_float(__float_as_uint(y) | (u & 0x80000000u));
}

/* ------------------------------------------------------ exact functions */

__device__ int __qgm_isnan(float x) {
    return (__float_as_uint(x) & 0x7FFFFFFFu) > 0x7F800000u;
}

__device__ int __qgm_isinf(float x) {
    return (__float_as_uint(x) & 0x7FFFFFFFu) == 0x7F800000u;
}

__device__ int __qgm_isfinite(float x) {
    return (__float_as_uint(x) & 0x7F800000u) != 0x7F800000u;
}

__device__ int __qgm_signbit(float x) {
    return (int)(__float_as_uint(x) >> 31);
}

__device__ float __qgm_copysignf(float x, float y) {
    return __uint_as_float((__float_as_uint(x) & 0x7FFFFFFFu) | (__float_as_uint(y) & 0x80000000u));
}

__device__ float __qgm_truncf(float x) {
    unsigned u = __float_as_uint(x);
    int e = (int)((u >> 23) & 0xFFu) - 127;
    if (e >= 23)
        return __qgm_canon(x);
    if (e < 0)
        return __uint_as_float(u & 0x80000000u);
    return __uint_as_float(u & ~(0x7FFFFFu >> (unsigned)e));
}

__device__ float __qgm_floorf(float x) {
    unsigned u = __float_as_uint(x);
    int e = (int)((u >> 23) & 0xFFu) - 127;
    if (e >= 23)
        return __qgm_canon(x);
    if (e < 0) {
        if ((u << 1) == 0u || (u >> 31) == 0u)
            return __uint_as_float(u & 0x80000000u);
        return -1.0f;
    }
    unsigned m = 0x7FFFFFu >> (unsigned)e;
    if ((u >> 31) != 0u)
        u += m;
    return __uint_as_float(u & ~m);
}

__device__ float __qgm_ceilf(float x) {
    unsigned u = __float_as_uint(x);
    int e = (int)((u >> 23) & 0xFFu) - 127;
    if (e >= 23)
        return __qgm_canon(x);
    if (e < 0) {
        if ((u << 1) == 0u || (u >> 31) != 0u)
            return __uint_as_float(u & 0x80000000u);
        return 1.0f;
    }
    unsigned m = 0x7FFFFFu >> (unsigned)e;
    if ((u >> 31) == 0u)
        u += m;
    return __uint_as_float(u & ~m);
}

/* Halfway cases away from zero. */
__device__ float __qgm_roundf(float x) {
    unsigned u = __float_as_uint(x);
    int e = (int)((u >> 23) & 0xFFu) - 127;
    if (e >= 23)
        return __qgm_canon(x);
    if (e < -1)
        return __uint_as_float(u & 0x80000000u);
    if (e == -1)
        return __uint_as_float((u & 0x80000000u) | 0x3F800000u);
    u += 0x400000u >> (unsigned)e;
    return __uint_as_float(u & ~(0x7FFFFFu >> (unsigned)e));
}

/* Halfway cases to even (the rounding mode is always to nearest). */
__device__ float __qgm_rintf(float x) {
    unsigned u = __float_as_uint(x);
    int e = (int)((u >> 23) & 0xFFu) - 127;
    if (e >= 23)
        return __qgm_canon(x);
    if (e < -1 || (e == -1 && (u & 0x7FFFFFu) == 0u))
        return __uint_as_float(u & 0x80000000u);
    if (e == -1)
        return __uint_as_float((u & 0x80000000u) | 0x3F800000u);
    unsigned m = 0x7FFFFFu >> (unsigned)e;
    unsigned half = 0x400000u >> (unsigned)e;
    unsigned frac = u & m;
    u &= ~m;
    if (frac > half || (frac == half && (u & (m + 1u)) != 0u))
        u += m + 1u;
    return __uint_as_float(u);
}

/* An order on bit patterns that agrees with < on non-NaN floats (-0 < +0). */
__device__ unsigned __qgm_key(unsigned u) {
    return (u >> 31) != 0u ? ~u : (u | 0x80000000u);
}

__device__ float __qgm_fdimf(float x, float y) {
    unsigned ux = __float_as_uint(x);
    unsigned uy = __float_as_uint(y);
    if ((ux & 0x7FFFFFFFu) > 0x7F800000u || (uy & 0x7FFFFFFFu) > 0x7F800000u)
        return __qgm_nan();
    if (((ux | uy) << 1) != 0u && __qgm_key(ux) > __qgm_key(uy))
        return x - y;
    return 0.0f;
}

__device__ float __qgm_saturatef(float x) {
    unsigned u = __float_as_uint(x);
    if (u >= 0x7F800001u)
        return 0.0f; /* NaN, or negative (sign bit set) */
    if (u >= 0x3F800000u)
        return 1.0f;
    return x;
}

__device__ float __qgm_frexpf(float x, int *ep) {
    unsigned u = __float_as_uint(x);
    int e = (int)((u >> 23) & 0xFFu);
    unsigned sig = u & 0x7FFFFFu;
    if (e == 0xFF || (u << 1) == 0u) {
        *ep = 0;
        return __qgm_canon(x);
    }
    if (e == 0) {
        int sh = (int)__qg_clz(sig) - 8;
        sig <<= (unsigned)sh;
        e = 1 - sh;
    }
    *ep = e - 126;
    return __uint_as_float((u & 0x80000000u) | 0x3F000000u | (sig & 0x7FFFFFu));
}

/* fmodf (nearest = 0) and remainderf (nearest = 1): exact, by long division of
   the significands (one step per bit of exponent difference). */
__device__ float __qgm_fmodrem(float x, float y, unsigned nearest) {
    unsigned ux = __float_as_uint(x);
    unsigned uy = __float_as_uint(y);
    unsigned sx = ux >> 31;
    unsigned ax = ux & 0x7FFFFFFFu;
    unsigned ay = uy & 0x7FFFFFFFu;
    if (ax >= 0x7F800000u || ay > 0x7F800000u || ay == 0u)
        return __qgm_nan();
    if (ay == 0x7F800000u || ax == 0u)
        return x;
    int ex = (int)(ax >> 23);
    int ey = (int)(ay >> 23);
    unsigned mx = ax & 0x7FFFFFu;
    unsigned my = ay & 0x7FFFFFu;
    if (ex == 0) {
        int sh = (int)__qg_clz(mx) - 8;
        mx <<= (unsigned)sh;
        ex = 1 - sh;
    }
    if (ey == 0) {
        int sh = (int)__qg_clz(my) - 8;
        my <<= (unsigned)sh;
        ey = 1 - sh;
    }
    mx |= 0x800000u;
    my |= 0x800000u;
    int d = ex - ey;
    unsigned r = mx;
    unsigned yy = my;
    int eu = ey; /* the result is r * 2^(eu - 150) */
    if (d < 0) {
        if (nearest == 0u || d < -1)
            return x;
        yy = my << 1; /* |y| in units of x's exponent */
        eu = ex;
        d = 0;
    }
    while (d > 0) {
        if (r >= yy)
            r -= yy;
        r <<= 1;
        d -= 1;
    }
    unsigned q = (unsigned)(r >= yy); /* the quotient's last bit */
    if (q != 0u)
        r -= yy;
    if (nearest != 0u && (r + r > yy || (r + r == yy && q != 0u))) {
        r = yy - r;
        sx ^= 1u;
    }
    if (r == 0u)
        return __uint_as_float(sx << 31);
    int sh = (int)__qg_clz(r) - 8;
    r <<= (unsigned)sh;
    return __uint_as_float(__qg_round_pack(sx, eu - sh - 1, r << 7));
}

/* 1/sqrt(x): Newton's iteration from an integer estimate, the last step with
   an exact residual 1/2 - m*y*y/2 (y*y split into two floats by fma). */
__device__ float __qgm_rsqrtf(float x) {
    unsigned u = __float_as_uint(x);
    if ((u << 1) == 0u)
        return __uint_as_float((u & 0x80000000u) | 0x7F800000u);
    if (u > 0x7F800000u)
        return __qgm_nan(); /* NaN or negative */
    if (u == 0x7F800000u)
        return 0.0f;
    int e = (int)(u >> 23);
    unsigned sig = u & 0x7FFFFFu;
    if (e == 0) {
        int sh = (int)__qg_clz(sig) - 8;
        sig <<= (unsigned)sh;
        e = 1 - sh;
    }
    int k = (e - 127) >> 1; /* x = m * 4^k, m in [1, 4) */
    int j = e - 127 - 2 * k;
    float m = __uint_as_float(((unsigned)(127 + j) << 23) | (sig & 0x7FFFFFu));
    float mh = 0.5f * m;
    float y = __uint_as_float(0x5F3759DFu - (__float_as_uint(m) >> 1));
    y = fmaf(y, fmaf(-mh, y * y, 0.5f), y);
    y = fmaf(y, fmaf(-mh, y * y, 0.5f), y);
    float hi = y * y;
    float lo = fmaf(y, y, -hi);
    float r = fmaf(-mh, lo, fmaf(-mh, hi, 0.5f));
    y = fmaf(y, r, y);
    return __uint_as_float(__float_as_uint(y) - ((unsigned)k << 23));
}

/* cbrt: Newton for m^(-1/3) (no division), then one step for m^(1/3) with the
   residual m - y^3 computed exactly in two floats. */
__device__ float __qgm_cbrtf(float x) {
    unsigned u = __float_as_uint(x);
    unsigned a = u & 0x7FFFFFFFu;
    if (a > 0x7F800000u)
        return __qgm_nan();
    if (a == 0u || a == 0x7F800000u)
        return x;
    int e = (int)(a >> 23);
    unsigned sig = a & 0x7FFFFFu;
    if (e == 0) {
        int sh = (int)__qg_clz(sig) - 8;
        sig <<= (unsigned)sh;
        e = 1 - sh;
    }
    int ee = e + 23; /* (e - 127) + 150, in 1..277 */
    int q = (ee * 21846) >> 16; /* ee / 3 */
    int rem = ee - 3 * q;
    int k = q - 50; /* x = m * 8^k, m in [1, 8) */
    float m = __uint_as_float(((unsigned)(127 + rem) << 23) | (sig & 0x7FFFFFu));
    float z = __uint_as_float(0x54A2FA8Cu - __qg_mulhi(__float_as_uint(m), 0x55555556u));
    float third = 0.333333343f;
    z = fmaf(z * third, fmaf(-m, z * z * z, 1.0f), z);
    z = fmaf(z * third, fmaf(-m, z * z * z, 1.0f), z);
    z = fmaf(z * third, fmaf(-m, z * z * z, 1.0f), z);
    float y = m * z * z;
    float y2 = y * y;
    float y2l = fmaf(y, y, -y2);
    float y3 = y2 * y;
    float y3l = fmaf(y2l, y, fmaf(y2, y, -y3));
    float d = (m - y3) - y3l;
    y = fmaf(d, z * z * third, y);
    return __uint_as_float((__float_as_uint(y) + ((unsigned)k << 23)) | (u & 0x80000000u));
}

/* sqrt(x^2 + y^2): scaled by a power of two, the sum of squares in two floats,
   one correctly rounded square root and one Newton correction. */
__device__ float __qgm_hypotf(float x, float y) {
    unsigned ax = __float_as_uint(x) & 0x7FFFFFFFu;
    unsigned ay = __float_as_uint(y) & 0x7FFFFFFFu;
    if (ax == 0x7F800000u || ay == 0x7F800000u)
        return __uint_as_float(0x7F800000u);
    if (ax > 0x7F800000u || ay > 0x7F800000u)
        return __qgm_nan();
    unsigned hi = ax > ay ? ax : ay;
    unsigned lo = ax > ay ? ay : ax;
    if (lo == 0u || (hi >> 23) > (lo >> 23) + 25u)
        return __uint_as_float(hi);
    int s = (hi >> 23) != 0u ? 127 - (int)(hi >> 23) : 127;
    float a = __qgm_ldexp(__uint_as_float(hi), s);
    float b = __qgm_ldexp(__uint_as_float(lo), s);
    float a2 = a * a;
    float b2 = b * b;
    float h = a2 + b2;
    float hl = ((a2 - h) + b2) + (fmaf(a, a, -a2) + fmaf(b, b, -b2));
    float r = sqrtf(h);
    float inv = __uint_as_float(0x7EF311C3u - __float_as_uint(r)); /* ~1/r */
    inv = inv * fmaf(-r, inv, 2.0f);
    r = fmaf(fmaf(-r, r, h) + hl, 0.5f * inv, r);
    return __qgm_ldexp(r, -s);
}

/* ------------------------------------------------------- exp family */

/* e^x (base 0), 2^x (base 1) or 10^x (base 2), times 2^scale, with one final
   rounding: x = k*log_b(2) + r, b^r by a minimax polynomial, 2^(k+scale) by
   the exponent. */
__device__ float __qgm_expk(float x, int scale, unsigned base) {
    unsigned u = __float_as_uint(x);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u)
        return __qgm_nan();
    if ((u & 0x7FFFFFFFu) > 0x43480000u) /* |x| > 200: the result is 0 or inf */
        x = __uint_as_float((u & 0x80000000u) | 0x43480000u);
    float p;
    float t;
    float kf;
    if (base == 1u) {
        t = x + 12582912.0f;
        kf = t - 12582912.0f;
        float r = x - kf;
        p = 0.000153533605f;
        p = fmaf(p, r, 0.0013398875f);
        p = fmaf(p, r, 0.00961843692f);
        p = fmaf(p, r, 0.0555033237f);
        p = fmaf(p, r, 0.240226477f);
        p = fmaf(p, r, 0.693147182f);
        p = fmaf(p, r, 1.0f);
    } else if (base == 2u) {
        t = fmaf(x, 3.32192802f, 12582912.0f);
        kf = t - 12582912.0f;
        float r = fmaf(-kf, -1.43209888e-08f, fmaf(-kf, 0.30103001f, x));
        p = 0.0678367913f;
        p = fmaf(p, r, 0.207845494f);
        p = fmaf(p, r, 0.539398193f);
        p = fmaf(p, r, 1.17124403f);
        p = fmaf(p, r, 2.03467846f);
        p = fmaf(p, r, 2.650949f);
        p = fmaf(p, r, 2.30258512f);
        p = fmaf(p, r, 1.0f);
    } else {
        t = fmaf(x, 1.44269502f, 12582912.0f);
        kf = t - 12582912.0f;
        float r1 = fmaf(-kf, 0.693147182f, x); /* exact */
        float ph = kf * -1.90465421e-09f;
        float pl = fmaf(kf, -1.90465421e-09f, -ph);
        float r = r1 - ph;
        float rl = ((r1 - r) - ph) - pl;
        float q = 0.00138146104f;
        q = fmaf(q, r, 0.00836871006f);
        q = fmaf(q, r, 0.041668389f);
        q = fmaf(q, r, 0.166665211f);
        q = fmaf(q, r, 0.49999994f);
        p = 1.0f + (r + fmaf(r * r, q, rl));
    }
    int k = (int)(__float_as_uint(t) - 0x4B400000u);
    return __qgm_ldexp(p, k + scale);
}

/* e^x - 1 without cancellation: e^r - 1 by a polynomial for |r| <= 3/4; beyond,
   x = k*ln2 + r and 2^k (1 + p) - 1 = (2^k - 1) + 2^k p (|k| >= 1: no
   cancellation), both parts exact before one fma. */
__device__ float __qgm_expm1f(float x) {
    unsigned u = __float_as_uint(x);
    unsigned a = u & 0x7FFFFFFFu;
    if (a > 0x7F800000u)
        return __qgm_nan();
    if (a < 0x33000000u) /* |x| < 2^-25 */
        return x;
    if (u > 0xC18B0000u) /* x < -17.375: e^x < 2^-25 */
        return -1.0f;
    if (u < 0x80000000u && a > 0x42A00000u) /* x > 80: e^x - 1 rounds like e^x */
        return __qgm_expk(x, 0, 0u);
    float r = x;
    int k = 0;
    if (a > 0x3F400000u) { /* |x| > 3/4 */
        float t = fmaf(x, 1.44269502f, 12582912.0f);
        float kf = t - 12582912.0f;
        k = (int)(__float_as_uint(t) - 0x4B400000u);
        r = fmaf(-kf, -1.90465421e-09f, fmaf(-kf, 0.693147182f, x));
    }
    float q = 2.47777843e-05f;
    q = fmaf(q, r, 0.000201389179f);
    q = fmaf(q, r, 0.00138909905f);
    q = fmaf(q, r, 0.00833237078f);
    q = fmaf(q, r, 0.0416665934f);
    q = fmaf(q, r, 0.166666761f);
    q = fmaf(q, r, 0.5f);
    float p = fmaf(r * r, q, r);
    if (k == 0)
        return p;
    float two_k = __uint_as_float((unsigned)(127 + k) << 23);
    if (k > 24) /* 2^k - 1 is not a float: 2^k (1 + (p - 2^-k)) */
        return fmaf(two_k, p - __uint_as_float((unsigned)(127 - k) << 23), two_k);
    return fmaf(two_k, p, two_k - 1.0f);
}

/* sinh (fn 0) or cosh (fn 1).  Below 1, minimax polynomials; up to 12,
   e^|x| = 2^k (ph + pl) and its reciprocal in two floats each, combined with
   one rounding; beyond, e^|x| / 2. */
__device__ float __qgm_sinhcosh(float x, unsigned fn) {
    unsigned u = __float_as_uint(x);
    unsigned a = u & 0x7FFFFFFFu;
    unsigned sign = fn == 0u ? (u & 0x80000000u) : 0u;
    if (a > 0x7F800000u)
        return __qgm_nan();
    if (a > 0x42C80000u) /* |x| > 100: the result is inf */
        a = 0x42C80000u;
    float ax = __uint_as_float(a);
    float r;
    if (a < 0x3F800000u) { /* |x| < 1 */
        if (a < 0x39800000u) /* |x| < 2^-12 */
            return fn == 0u ? x : 1.0f;
        float z = ax * ax;
        if (fn == 0u) { /* sinh x = x + x^3 H(x^2) */
            float p = 2.552982e-08f;
            p = fmaf(p, z, 2.75520642e-06f);
            p = fmaf(p, z, 0.000198412963f);
            p = fmaf(p, z, 0.00833333284f);
            p = fmaf(p, z, 0.166666672f);
            r = fmaf(ax * z, p, ax);
        } else { /* cosh x = 1 + x^2/2 + x^4 C(x^2) */
            float p = 2.81197316e-07f;
            p = fmaf(p, z, 2.47962362e-05f);
            p = fmaf(p, z, 0.00138889102f);
            p = fmaf(p, z, 0.0416666679f);
            r = 1.0f + fmaf(z * z, p, 0.5f * z);
        }
    } else {
        float t = fmaf(ax, 1.44269502f, 12582912.0f);
        float kf = t - 12582912.0f;
        int k = (int)(__float_as_uint(t) - 0x4B400000u);
        float r1 = fmaf(-kf, 0.693147182f, ax); /* exact */
        float mh = kf * -1.90465421e-09f;
        float ml = fmaf(kf, -1.90465421e-09f, -mh);
        float rr = r1 - mh;
        float rl = ((r1 - rr) - mh) - ml;
        float q = 0.00138146104f;
        q = fmaf(q, rr, 0.00836871006f);
        q = fmaf(q, rr, 0.041668389f);
        q = fmaf(q, rr, 0.166665211f);
        q = fmaf(q, rr, 0.49999994f);
        float h = 1.0f + rr;
        float l = ((1.0f - h) + rr) + fmaf(rr * rr, q, rl);
        float ph = h + l; /* e^rr = ph + pl */
        float pl = (h - ph) + l;
        if (a >= 0x41400000u) /* |x| >= 12: e^-|x| is below 2^-34 of the result */
            return __uint_as_float(__float_as_uint(__qgm_ldexp(ph, k - 1)) | sign);
        float ih = __qgm_recip_est(ph);
        ih = fmaf(ih, fmaf(-ph, ih, 1.0f), ih);
        float il = ih * (fmaf(-ih, ph, 1.0f) - ih * pl); /* 1/(ph + pl) = ih + il */
        float two = __uint_as_float((unsigned)(126 + k) << 23); /* 2^(k-1) */
        float itwo = __uint_as_float((unsigned)(126 - k) << 23); /* 2^(-k-1) */
        float bh = ih * itwo;
        float bl = il * itwo;
        if (fn == 0u) {
            bh = -bh;
            bl = -bl;
        }
        float ah = ph * two;
        float s1 = ah + bh; /* Fast2Sum: |ah| > |bh| */
        r = s1 + (((ah - s1) + bh) + fmaf(pl, two, bl));
    }
    return __uint_as_float(__float_as_uint(r) | sign);
}

__device__ float __qgm_tanhf(float x) {
    unsigned u = __float_as_uint(x);
    unsigned a = u & 0x7FFFFFFFu;
    if (a > 0x7F800000u)
        return __qgm_nan();
    if (a < 0x39800000u)
        return x;
    float r = 1.0f;
    if (a < 0x3F0CCCCDu) { /* |x| < 0.55: tanh x = x + x^3 K(x^2) */
        float ax = __uint_as_float(a);
        float z = ax * ax;
        float p = -0.000915057492f;
        p = fmaf(p, z, 0.00335357082f);
        p = fmaf(p, z, -0.0088059986f);
        p = fmaf(p, z, 0.0218617897f);
        p = fmaf(p, z, -0.0539676957f);
        p = fmaf(p, z, 0.13333331f);
        p = fmaf(p, z, -0.333333343f);
        r = fmaf(ax * z, p, ax);
    } else if (a < 0x4111999Au) { /* |x| < 9.1; beyond, tanh rounds to 1 */
        float e = __qgm_expm1f(__uint_as_float(a + 0x800000u)); /* 2|x| */
        float d = e + 2.0f;
        float dl = (e - d) + 2.0f; /* e >= 2 here: exact */
        /* e / (d + dl) by Newton's reciprocal and one exact residual (no division routine) */
        float inv = __qgm_recip_est(d);
        inv = fmaf(inv, fmaf(-d, inv, 1.0f), inv);
        r = e * inv;
        r = fmaf(fmaf(-r, d, e) - r * dl, inv, r);
    }
    return __uint_as_float(__float_as_uint(r) | (u & 0x80000000u));
}

/* ------------------------------------------------------- log family */

/* log(x) + c (base 0), or the same over ln2 (base 1) or ln10 (base 2), for a
   small correction c: x = 2^k (1 + f), f in [sqrt(1/2) - 1, sqrt(2) - 1],
   log(1+f) = f - f^2/2 + s (f^2/2 + R(s^2)), s = f / (2 + f), carried as
   hi + lo before the final scaling and the one rounding at the end. */
__device__ float __qgm_logk(float x, float c, unsigned base) {
    unsigned u = __float_as_uint(x);
    if ((u << 1) == 0u)
        return __uint_as_float(0xFF800000u); /* log(+-0) = -inf */
    if (u > 0x7F800000u)
        return __qgm_nan(); /* NaN or negative */
    if (u == 0x7F800000u)
        return x;
    int e = (int)(u >> 23);
    unsigned sig = u & 0x7FFFFFu;
    if (e == 0) {
        int sh = (int)__qg_clz(sig) - 8;
        sig <<= (unsigned)sh;
        e = 1 - sh;
    }
    int k = e - 127;
    unsigned me = 127u;
    if ((sig & 0x7FFFFFu) >= 0x3504F3u) { /* m >= sqrt(2): use m/2 */
        me = 126u;
        k += 1;
    }
    float f = __uint_as_float((me << 23) | (sig & 0x7FFFFFu)) - 1.0f;
    float s = f / (2.0f + f);
    float z = s * s;
    float R = 0.235821545f;
    R = fmaf(R, z, 0.285373092f);
    R = fmaf(R, z, 0.400003344f);
    R = fmaf(R, z, 0.666666627f);
    R = R * z;
    float hf = 0.5f * f;
    float hfsq = hf * f;
    float hfsql = fmaf(hf, f, -hfsq);
    float hi = f - hfsq;
    float lo = (((f - hi) - hfsq) - hfsql) + fmaf(s, hfsq + R, c);
    float kf = __qgm_small_int(k);
    float wh = hi;
    float wl = lo;
    float kh = kf;
    float kl = 0.0f;
    if (base != 0u) { /* (hi + lo) / ln(base) in two floats */
        float ch = 1.44269502f;
        float cl = 1.92596303e-08f;
        if (base == 2u) {
            ch = 0.434294492f;
            cl = -1.010305e-08f;
        }
        wh = hi * ch;
        wl = fmaf(hi, ch, -wh) + fmaf(lo, ch, hi * cl);
    }
    if (k == 0)
        return wh + wl;
    if (base != 1u) { /* k * log_base(2) in two floats */
        float c2h = 0.693147182f;
        float c2l = -1.90465421e-09f;
        if (base == 2u) {
            c2h = 0.30103001f;
            c2l = -1.43209888e-08f;
        }
        kh = kf * c2h;
        kl = fmaf(kf, c2l, fmaf(kf, c2h, -kh));
    }
    float sh = kh + wh;
    float bb = sh - kh;
    float err = (kh - (sh - bb)) + (wh - bb);
    return sh + (err + (wl + kl));
}

__device__ float __qgm_log1pf(float x) {
    unsigned u = __float_as_uint(x);
    unsigned a = u & 0x7FFFFFFFu;
    if (a > 0x7F800000u || u > 0xBF800000u)
        return __qgm_nan(); /* NaN or x < -1 */
    if (u == 0xBF800000u)
        return __uint_as_float(0xFF800000u);
    if (a == 0x7F800000u)
        return x;
    if (a < 0x33800000u) /* |x| < 2^-24 */
        return x;
    if (a < 0x3C000000u) { /* |x| < 2^-7: x - x^2/2 + x^3/3 - x^4/4 */
        float p = fmaf(x, -0.25f, 0.333333343f);
        p = fmaf(p, x, -0.5f);
        return fmaf(x * x, p, x);
    }
    float v = 1.0f + x;
    float c;
    if (u >= 0x3F800000u && u < 0x80000000u) /* x >= 1: v - x is exact */
        c = 1.0f - (v - x);
    else
        c = x - (v - 1.0f);
    /* log(1+x) = log(v) + c/v, to first order (c is below an ulp of v) */
    return __qgm_logk(v, c / v, 0u);
}

/* ------------------------------------------------------------- trig */

/* Bits 32j+1 .. 32j+32 of the binary expansion of 2/pi. */
__device__ unsigned __qgm_2opi_word(int j) {
    if (j == 0)
        return 0xA2F9836Eu;
    if (j == 1)
        return 0x4E441529u;
    if (j == 2)
        return 0xFC2757D1u;
    if (j == 3)
        return 0xF534DDC0u;
    if (j == 4)
        return 0xDB629599u;
    if (j == 5)
        return 0x3C439041u;
    if (j == 6)
        return 0xFE5163ABu;
    return 0xDEBBC561u;
}

/* Bits i .. i+31 of 2/pi (bit 1 is the first after the point; bits i <= 0 are 0). */
__device__ unsigned __qgm_2opi_bits(int i) {
    int p = i - 1;
    if (p < 0)
        return __qgm_2opi_word(0) >> (unsigned)(-p);
    int j = p >> 5;
    unsigned s = (unsigned)(p & 31);
    if (s == 0u)
        return __qgm_2opi_word(j);
    return (__qgm_2opi_word(j) << s) | (__qgm_2opi_word(j + 1) >> (32u - s));
}

/* sin (fn 0), cos (fn 1) or tan (fn 2).  x = q*pi/2 + (rh + rl), |rh| <= pi/4
   about: Cody-Waite with a three-part pi/2 below 2^17, Payne-Hanek (integer
   product with 96 bits of 2/pi) above; then odd/even minimax polynomials. */
__device__ float __qgm_trig(float x, unsigned fn) {
    unsigned u = __float_as_uint(x);
    unsigned a = u & 0x7FFFFFFFu;
    if (a >= 0x7F800000u)
        return __qgm_nan();
    if (a < 0x39800000u) /* |x| < 2^-12 */
        return fn == 1u ? 1.0f : x;
    unsigned q;
    float rh;
    float rl;
    if (a < 0x3F490FDBu) { /* |x| < pi/4 */
        q = 0u;
        rh = x;
        rl = 0.0f;
    } else if (a < 0x48000000u) { /* |x| < 2^17 */
        float t = fmaf(x, 0.636619747f, 12582912.0f);
        float kf = t - 12582912.0f;
        q = __float_as_uint(t);
        float r1 = fmaf(-kf, 1.57079637f, x); /* exact */
        float ph = kf * -4.37113883e-08f;
        float pl = fmaf(kf, -4.37113883e-08f, -ph);
        rh = r1 - ph;
        float bb = rh - r1;
        float err = (r1 - (rh - bb)) - (ph + bb);
        rl = fmaf(-kf, -1.71512451e-15f, err - pl);
    } else {
        /* x = M * 2^E, E >= -6; x*2/pi mod 4 = M * W * 2^-94 mod 4, W = bits E-1 .. E+94 of 2/pi */
        unsigned mant = (a & 0x7FFFFFu) | 0x800000u;
        int i0 = (int)(a >> 23) - 151;
        unsigned w0 = __qgm_2opi_bits(i0);
        unsigned w1 = __qgm_2opi_bits(i0 + 32);
        unsigned w2 = __qgm_2opi_bits(i0 + 64);
        unsigned p0 = mant * w2;
        unsigned lo1 = mant * w1;
        unsigned p1 = __qg_mulhi(mant, w2) + lo1;
        unsigned c1 = (unsigned)(p1 < lo1);
        unsigned lo0 = mant * w0;
        unsigned p2 = __qg_mulhi(mant, w1) + lo0 + c1;
        q = p2 >> 30;
        /* the fraction, bits 93..30 of the product, as fh:fl (64 bits) */
        unsigned fh = (p2 << 2) | (p1 >> 30);
        unsigned fl = (p1 << 2) | (p0 >> 30);
        unsigned neg = fh >> 31;
        if (neg != 0u) { /* fraction >= 1/2: round the quotient up, negate */
            q += 1u;
            fl = 0u - fl;
            fh = ~fh + (unsigned)(fl == 0u);
        }
        int n = 0;
        if (fh == 0u) {
            fh = fl;
            fl = 0u;
            n = 32;
        }
        unsigned lz = __qg_clz(fh);
        if (lz != 0u) {
            fh = (fh << lz) | (fl >> (32u - lz));
            fl <<= lz;
        }
        n += (int)lz;
        float hi = __uint_as_float(((unsigned)(126 - n) << 23) | ((fh >> 8) & 0x7FFFFFu));
        unsigned li = (fh << 24) | (fl >> 8);
        float lo = 0.0f;
        if (li != 0u) {
            unsigned lz2 = __qg_clz(li);
            int el = 102 - n - (int)lz2;
            if (el > 0)
                lo = __uint_as_float(((unsigned)el << 23) | (((li << lz2) >> 8) & 0x7FFFFFu));
        }
        rh = hi * 1.57079637f;
        rl = fmaf(hi, 1.57079637f, -rh) + fmaf(lo, 1.57079637f, hi * -4.37113883e-08f);
        if ((neg ^ (u >> 31)) != 0u) {
            rh = -rh;
            rl = -rl;
        }
        if ((u >> 31) != 0u)
            q = 0u - q;
    }
    float z = rh * rh;
    float s = 0.0f;
    float sl = 0.0f;
    float c = 0.0f;
    float cl = 0.0f;
    if (fn != 1u || (q & 1u) != 0u) {
        float p = 2.71831163e-06f;
        p = fmaf(p, z, -0.000198393347f);
        p = fmaf(p, z, 0.00833332911f);
        p = fmaf(p, z, -0.166666672f);
        float st = fmaf(rh * z, p, rl);
        s = rh + st;
        sl = (rh - s) + st;
    }
    if (fn != 0u || (q & 1u) != 0u) {
        float p = -2.72057548e-07f;
        p = fmaf(p, z, 2.47994594e-05f);
        p = fmaf(p, z, -0.00138888834f);
        p = fmaf(p, z, 0.0416666679f);
        float hz = 0.5f * z;
        float w = 1.0f - hz;
        float zl = fmaf(rh, rh, -z); /* rh^2 = z + zl */
        float ct = ((1.0f - w) - hz) + (fmaf(z * z, p, -(rh * rl)) - 0.5f * zl);
        c = w + ct;
        cl = (w - c) + ct;
    }
    if (fn == 2u) {
        /* (s + sl) / (c + cl), or -(c + cl) / (s + sl) in odd quadrants, by Newton's
           reciprocal and one exact residual (no division routine) */
        float nh = s;
        float nl = sl;
        float dh = c;
        float dl = cl;
        if ((q & 1u) != 0u) {
            nh = -c;
            nl = -cl;
            dh = s;
            dl = sl;
        }
        float inv = __qgm_recip_est(dh);
        inv = fmaf(inv, fmaf(-dh, inv, 1.0f), inv);
        float t = nh * inv;
        float e = fmaf(-t, dh, nh) + fmaf(-t, dl, nl);
        return fmaf(e, inv, t);
    }
    float v;
    if (fn == 1u)
        q += 1u;
    if ((q & 1u) != 0u)
        v = c;
    else
        v = s;
    if ((q & 2u) != 0u)
        v = -v;
    return v;
}

__device__ void __qgm_sincosf(float x, float *sp, float *cp) {
    *sp = __qgm_trig(x, 0u);
    *cp = __qgm_trig(x, 1u);
}

/* ------------------------------------------------------ inverse trig */

/* asin(x) - x = x^3 A(x^2) for |x| <= 1/2. */
__device__ float __qgm_asin_poly(float z) {
    float p = 0.0422185473f;
    p = fmaf(p, z, 0.0241476111f);
    p = fmaf(p, z, 0.045477096f);
    p = fmaf(p, z, 0.0749524161f);
    p = fmaf(p, z, 0.166667536f);
    return p;
}

/* asin (fn 0) or acos (fn 1); |x| > 1/2 through asin(sqrt((1 - |x|)/2)). */
__device__ float __qgm_asincos(float x, unsigned fn) {
    unsigned u = __float_as_uint(x);
    unsigned a = u & 0x7FFFFFFFu;
    if (a > 0x3F800000u)
        return __qgm_nan();
    if (a <= 0x3F000000u) {
        float z = x * x;
        float t = x * z * __qgm_asin_poly(z);
        if (fn == 0u)
            return a < 0x39800000u ? x : x + t;
        float h = 1.57079637f - x; /* Fast2Sum: |x| <= pi/2 */
        return h + (((1.57079637f - h) - x) - (t - -4.37113883e-08f));
    }
    float z = (1.0f - __uint_as_float(a)) * 0.5f;
    float s = sqrtf(z);
    float sl = 0.0f;
    if (__float_as_uint(z) != 0u)
        sl = fmaf(-s, s, z) / (s + s);
    float tl = fmaf(s * z, __qgm_asin_poly(z), sl); /* asin(sqrt z) = s + tl */
    if (fn == 1u && (u >> 31) == 0u)
        return 2.0f * (s + tl);
    /* c - 2 asin(sqrt z) with c = pi/2 (asin) or pi (acos of x < 0), the first sum exact (Fast2Sum) */
    float ch = 1.57079637f;
    float cl = -4.37113883e-08f;
    if (fn == 1u) {
        ch = 3.14159274f;
        cl = -8.74227766e-08f;
    }
    float h = fmaf(-2.0f, s, ch);
    float r = h + (fmaf(-2.0f, s, ch - h) + fmaf(-2.0f, tl, cl));
    if (fn == 1u)
        return r;
    return __uint_as_float(__float_as_uint(r) | (u & 0x80000000u));
}

/* atan(t) - t = t^3 T(t^2) for 0 <= t <= 1. */
__device__ float __qgm_atan_tail(float t) {
    float z = t * t;
    float p = -0.00179359387f;
    p = fmaf(p, z, 0.0109144812f);
    p = fmaf(p, z, -0.0311776139f);
    p = fmaf(p, z, 0.0579573587f);
    p = fmaf(p, z, -0.0840343684f);
    p = fmaf(p, z, 0.109521814f);
    p = fmaf(p, z, -0.142642409f);
    p = fmaf(p, z, 0.199985489f);
    p = fmaf(p, z, -0.333332986f);
    return t * z * p;
}

__device__ float __qgm_atanf(float x) {
    unsigned u = __float_as_uint(x);
    unsigned a = u & 0x7FFFFFFFu;
    if (a > 0x7F800000u)
        return __qgm_nan();
    if (a < 0x39800000u)
        return x;
    float r = 1.57079637f;
    if (a == 0x7F800000u) {
    } else if (a > 0x3F800000u) { /* atan(t) = pi/2 - atan(1/t) */
        float ax = __uint_as_float(a);
        float t = 1.0f / ax;
        /* 1/ax = t + tl; atan(t + tl) = atan(t) + tl / (1 + t^2) */
        float tl = fmaf(-t, ax, 1.0f) * t;
        float b = fmaf(tl, __qgm_recip_est(fmaf(t, t, 1.0f)), __qgm_atan_tail(t));
        float h = 1.57079637f - t; /* Fast2Sum */
        r = h + (((1.57079637f - h) - t) + (-4.37113883e-08f - b));
    } else {
        float t = __uint_as_float(a);
        r = t + __qgm_atan_tail(t);
    }
    return __uint_as_float(__float_as_uint(r) | (u & 0x80000000u));
}

__device__ float __qgm_atan2f(float y, float x) {
    unsigned uy = __float_as_uint(y);
    unsigned ux = __float_as_uint(x);
    unsigned ay = uy & 0x7FFFFFFFu;
    unsigned ax = ux & 0x7FFFFFFFu;
    unsigned sy = uy & 0x80000000u;
    float r;
    if (ay > 0x7F800000u || ax > 0x7F800000u)
        return __qgm_nan();
    if (ay == 0u) {
        if ((ux >> 31) == 0u)
            return y;
        r = 3.14159274f;
    } else if (ax == 0x7F800000u && ay == 0x7F800000u) {
        r = (ux >> 31) == 0u ? 0.785398185f : 2.3561945f;
    } else if (ax == 0u || ay == 0x7F800000u) {
        r = 1.57079637f;
    } else if (ax == 0x7F800000u) {
        r = (ux >> 31) == 0u ? 0.0f : 3.14159274f;
    } else {
        unsigned off = (unsigned)(ay > ax);
        unsigned un = off != 0u ? ax : ay;
        unsigned ud = off != 0u ? ay : ax;
        int sc = (ud >> 23) != 0u ? 127 - (int)(ud >> 23) : 127; /* den to [2^-23, 2) */
        float num = __qgm_ldexp(__uint_as_float(un), sc);
        float den = __qgm_ldexp(__uint_as_float(ud), sc);
        float t = num / den;
        /* num/den = t + tl; atan(t + tl) = atan(t) + tl / (1 + t^2) */
        float tl = fmaf(-t, den, num) * __qgm_recip_est(den);
        float b = fmaf(tl, __qgm_recip_est(fmaf(t, t, 1.0f)), __qgm_atan_tail(t));
        if ((ux >> 31) == 0u && off == 0u) {
            r = t + b;
        } else { /* c + t + b with c = pi/2 or pi, the first sum exact (Fast2Sum, |t| <= 1 < c) */
            float ch = 1.57079637f;
            float cl = -4.37113883e-08f;
            if ((ux >> 31) != 0u && off == 0u) {
                ch = 3.14159274f;
                cl = -8.74227766e-08f;
            }
            if ((ux >> 31) == 0u || off == 0u) {
                t = -t;
                b = -b;
            }
            float h = ch + t;
            r = h + (((ch - h) + t) + (cl + b));
        }
    }
    return __uint_as_float(__float_as_uint(r) | sy);
}

/* ------------------------------------------------------------- pow */

/* The high half of a float in Veltkamp's split (a = hi + lo, each with at
   most 12 significant bits, so products of halves are exact). */
__device__ float __qgm_split_hi(float a) {
    float c = 4097.0f * a;
    return c - (c - a);
}

/* a * b - p exactly, for p = a * b rounded (Dekker's TwoProduct, no fma;
   |a|, |b| < 2^100 and no underflow of the partial products). */
__device__ float __qgm_mul_err(float a, float b, float p) {
    float ah = __qgm_split_hi(a);
    float al = a - ah;
    float bh = __qgm_split_hi(b);
    float bl = b - bh;
    return (((ah * bh - p) + ah * bl) + al * bh) + al * bl;
}

/* 2^(zh + zl) with the sign bit `sign`, rounded once (|zh| <= 300, |zl| <= ulp(zh)):
   z = j + r, |r| <= 1/2, 2^r = 1 + q with q in two floats, then 2^j (1 + q)
   rounded by the exponent (subnormal results round once too). */
__device__ float __qgm_pow_exp2(float zh, float zl, unsigned sign) {
    float t = zh + 12582912.0f;
    float jf = t - 12582912.0f;
    int j = (int)(__float_as_uint(t) - 0x4B400000u);
    float ra = zh - jf;
    float rh = ra + zl;
    float rl = zl - (rh - ra);
    /* 2^r = 1 + q, q = r ln2 + r^2 c2 + r^3 P(r), the first two terms in two floats */
    float a1 = rh * 0.693147182f;
    float e1 = (__qgm_mul_err(rh, 0.693147182f, a1) + rh * -1.90465421e-09f) + rl * 0.693147182f;
    float r2h = rh * rh;
    float r2l = __qgm_mul_err(rh, rh, r2h) + 2.0f * rh * rl;
    float a2 = r2h * 0.240226507f;
    float e2 = (__qgm_mul_err(r2h, 0.240226507f, a2) + r2h * -2.27788936e-10f) + r2l * 0.240226507f;
    float p = 1.01780863e-07f;
    p = p * rh + 1.32154867e-06f;
    p = p * rh + 1.52527336e-05f;
    p = p * rh + 0.000154035304f;
    p = p * rh + 0.00133335581f;
    p = p * rh + 0.00961812911f;
    p = p * rh + 0.0555041087f;
    float qh = a1 + a2; /* Fast2Sum: |a2| < |a1| */
    float ql = ((a1 - qh) + a2) + ((e1 + e2) + r2h * rh * p);
    float vh = 1.0f + qh;
    float vb = vh - 1.0f;
    float ve = ((1.0f - (vh - vb)) + (qh - vb)) + ql;
    float v = vh + ve;
    float vr = ve - (v - vh);
    unsigned uv = __float_as_uint(v);
    unsigned sig7 = ((uv & 0x7FFFFFu) | 0x800000u) << 7;
    unsigned ur = __float_as_uint(vr);
    if ((ur << 1) != 0u) { /* the sign of the remainder breaks ties after scaling */
        if ((ur >> 31) != 0u)
            sig7 -= 1u;
        else
            sig7 |= 1u;
    }
    return __uint_as_float(__qg_round_pack(sign >> 31, (int)(uv >> 23) - 1 + j, sig7));
}

/* x^y.  C99 Annex F special cases by bit patterns; otherwise |x| = 2^k m,
   m in [sqrt(1/2), sqrt(2)), f = m - 1 (exact), s = f / (2 + f) in two floats
   (one division), ln m = 2s + s^3 (2/3 + s^2 Q(s^2)) with the leading terms
   in two floats (Dekker products, Knuth sums), log2 |x| = k + ln m / ln 2 to
   about 2^-33 relative, times y in two floats, then 2^(j + r) = 2^j (1 + q)
   with |r| <= 1/2, q in two floats, and one rounding of 2^j (1 + q) at the
   end (subnormal results included): within 0.55 ulp. */
__device__ float __qgm_powf(float x, float y) {
    unsigned ux = __float_as_uint(x);
    unsigned uy = __float_as_uint(y);
    unsigned ax = ux & 0x7FFFFFFFu;
    unsigned ay = uy & 0x7FFFFFFFu;
    if (ay == 0u || ux == 0x3F800000u)
        return 1.0f;
    if (ax > 0x7F800000u || ay > 0x7F800000u)
        return __qgm_nan();
    if (ay == 0x7F800000u) { /* y = +-inf */
        if (ax == 0x3F800000u)
            return 1.0f;
        if ((ax < 0x3F800000u) == ((uy >> 31) == 0u))
            return 0.0f;
        return __uint_as_float(0x7F800000u);
    }
    /* y's integer class: 0 not an integer, 1 odd, 2 even */
    unsigned yint = 2u;
    int ey = (int)(ay >> 23) - 127;
    if (ey < 0) {
        yint = 0u;
    } else if (ey < 24) {
        if ((ay & (0x7FFFFFu >> (unsigned)ey)) != 0u)
            yint = 0u;
        else if (ey == 0 || ((ay >> (unsigned)(23 - ey)) & 1u) != 0u)
            yint = 1u;
    }
    unsigned sign = 0u;
    if (yint == 1u)
        sign = ux & 0x80000000u;
    if (ax == 0u || ax == 0x7F800000u) { /* +-0 and +-inf */
        if ((ax == 0u) == ((uy >> 31) != 0u))
            return __uint_as_float(sign | 0x7F800000u);
        return __uint_as_float(sign);
    }
    if ((ux >> 31) != 0u && yint == 0u)
        return __qgm_nan();
    if (ax == 0x3F800000u) /* x = -1 */
        return __uint_as_float(sign | 0x3F800000u);
    /* |x| = 2^k m */
    int e = (int)(ax >> 23);
    unsigned sig = ax & 0x7FFFFFu;
    if (e == 0) {
        int sh = (int)__qg_clz(sig) - 8;
        sig <<= (unsigned)sh;
        e = 1 - sh;
    }
    int k = e - 127;
    unsigned me = 127u;
    if ((sig & 0x7FFFFFu) >= 0x3504F3u) {
        me = 126u;
        k += 1;
    }
    float f = __uint_as_float((me << 23) | (sig & 0x7FFFFFu)) - 1.0f;
    /* s = f / (2 + f) = sh + sl */
    float uh = 2.0f + f;
    float ul = f - (uh - 2.0f);
    float inv = 1.0f / uh;
    float sh = f * inv;
    float ph = sh * uh;
    float sl = (((f - ph) - __qgm_mul_err(sh, uh, ph)) - sh * ul) * inv;
    /* w = s^2, c = s^3 in two floats */
    float wh = sh * sh;
    float wl = __qgm_mul_err(sh, sh, wh) + 2.0f * sh * sl;
    float ch = sh * wh;
    float cl = (__qgm_mul_err(sh, wh, ch) + sh * wl) + sl * wh;
    /* T = 2/3 + w Q(w) in two floats */
    float q = 0.153846154f;
    q = q * wh + 0.181818187f;
    q = q * wh + 0.222222224f;
    q = q * wh + 0.285714298f;
    q = q * wh + 0.400000006f;
    float th = 0.666666687f;
    float tl = q * wh - 1.98682149e-08f;
    /* ln m = 2s + c T */
    float dh = ch * th;
    float dl = (__qgm_mul_err(ch, th, dh) + ch * tl) + cl * th;
    float s2 = 2.0f * sh;
    float lnh = s2 + dh;
    float lnl = ((s2 - lnh) + dh) + (2.0f * sl + dl);
    /* log2 |x| = k + ln m / ln 2 */
    float l2h = lnh * 1.44269502f;
    float l2l = (__qgm_mul_err(lnh, 1.44269502f, l2h) + lnh * 1.92596303e-08f) + lnl * 1.44269502f;
    float kf = __qgm_small_int(k);
    float lh = kf + l2h;
    float lb = lh - kf;
    float ll = ((kf - (lh - lb)) + (l2h - lb)) + l2l;
    /* z = y log2 |x| */
    float zh = y * lh;
    unsigned az = __float_as_uint(zh) & 0x7FFFFFFFu;
    if (az > 0x43960000u) { /* |z| > 300: overflow or underflow */
        if ((__float_as_uint(zh) >> 31) == 0u)
            return __uint_as_float(sign | 0x7F800000u);
        return __uint_as_float(sign);
    }
    float zl = __qgm_mul_err(y, lh, zh) + y * ll;
    return __qgm_pow_exp2(zh, zl, sign);
}
