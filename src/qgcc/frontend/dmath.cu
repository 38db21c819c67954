/* qgcc's double math library: exp on IEEE binary64.
 *
 * CUDA-C in the subset, written with `double` itself: every + - * / below is
 * a routine of double.cu (one IEEE rounding, to nearest even), so the
 * algorithms are exact, documented sequences of binary64 operations that a
 * numpy model (tests/dmathref.py) repeats operation for operation and matches
 * bit for bit.  The operation count matters (each is a routine call), so the
 * reductions use integer code on the bit patterns where they can.  A routine
 * that calls the double routines keeps its values in a local array (the
 * thread's frame) across the calls: a routine's registers cannot be spilled,
 * and each call of __qg_dmul needs about 20 of the machine's 32.
 *
 * Written for this project from textbook methods: Cody-Waite reduction by
 * ln 2 split in two (the high part with 21 trailing zero bits, so k * LN2_HI
 * is exact for |k| < 2^21) and the Taylor polynomial of exp (coefficients
 * 1/n!, rounded to nearest) evaluated by Horner's rule.
 *
 * Semantics: CUDA's special values (C99 Annex F), every NaN result is the
 * canonical 0x7FFFFFFFFFFFFFFF, subnormal arguments and results kept.  Not
 * correctly rounded: error bounds in docs/subset.md ("double").
 */

__device__ double __qgd_nan() {
    return __longlong_as_double(0x7FFFFFFFFFFFFFFFll);
}

__device__ double __qgd_inf() {
    return __longlong_as_double(0x7FF0000000000000ll);
}

/* 2^e for -1022 <= e <= 1023, exactly. */
__device__ double __qgd_pow2(int e) {
    return __longlong_as_double((long long)(e + 1023) << 52);
}

/* r * 2^k with one rounding, for r in [0.5, 2] and -1100 < k < 1100: the first product is
 * exact (a normal result), only the second one rounds (to a subnormal, or to infinity). */
__device__ double __qgd_scale(double r, int k) {
    if (k > 1000)
        return (r * __qgd_pow2(k - 100)) * __qgd_pow2(100);
    if (k < -1000)
        return (r * __qgd_pow2(k + 100)) * __qgd_pow2(-100);
    return r * __qgd_pow2(k);
}

/* exp(hi + lo) for |hi| <= 709.8 and |lo| <= 2^-40 |hi| (a double-double argument; lo = 0 for
 * exp itself).  k = nearest integer to hi / ln 2 (by adding 1.5 * 2^52, whose last bits then
 * hold k); r = (hi - k LN2_HI) + (lo - k LN2_LO), where hi - k LN2_HI is exact (Sterbenz);
 * exp(r) = 1 + (r + r^2 (1/2! + r (1/3! + ... + r / 13!))), then times 2^k. */
__device__ double __qgd_expdd(double hi, double lo) {
    double v[4];                                    /* values live across the routine calls
                                                       stay in the thread's frame */
    v[2] = hi;
    v[3] = lo;
    double t = hi * 1.4426950408889634 + 6755399441055744.0;
    v[1] = t;
    v[0] = t - 6755399441055744.0;                  /* k */
    double r = v[2] - v[0] * 0.6931471803691238;
    v[2] = r;
    r = v[3] - v[0] * 1.9082149292705877e-10;
    v[0] = v[2] + r;
    double p = 1.6059043836821613e-10 * v[0] + 2.08767569878681e-09;    /* 1/13!, 1/12! */
    p = p * v[0] + 2.505210838544172e-08;           /* 1/11! */
    p = p * v[0] + 2.755731922398589e-07;           /* 1/10! */
    p = p * v[0] + 2.7557319223985893e-06;          /* 1/9! */
    p = p * v[0] + 2.48015873015873e-05;            /* 1/8! */
    p = p * v[0] + 0.0001984126984126984;           /* 1/7! */
    p = p * v[0] + 0.001388888888888889;            /* 1/6! */
    p = p * v[0] + 0.008333333333333333;            /* 1/5! */
    p = p * v[0] + 0.041666666666666664;            /* 1/4! */
    p = p * v[0] + 0.16666666666666666;             /* 1/3! */
    p = p * v[0] + 0.5;                             /* 1/2! */
    p = v[0] * v[0] * p;
    p = 1.0 + (v[0] + p);
    int k = (int)(unsigned)(unsigned long long)__double_as_longlong(v[1]);
    return __qgd_scale(p, k);
}

__device__ double __qgd_exp(double x) {
    unsigned long long u = (unsigned long long)__double_as_longlong(x);
    if ((u << 1) > 0xFFE0000000000000ull)
        return __qgd_nan();
    if (x > 709.79)
        return __qgd_inf();
    if (x < -745.2)
        return 0.0;
    return __qgd_expdd(x, 0.0);
}
