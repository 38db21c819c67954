/* qgcc's double math library: exp, log, log10, pow, sin, cos and tan on IEEE binary64.
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
 * 1/n!, rounded to nearest) evaluated by Horner's rule.  sin, cos and tan: Cody-Waite reduction
 * by pi/2 in four parts and minimax polynomials fitted for this project (bench/dmath_fit.py).
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

/* log(x) = k ln 2 + log(m), x = m 2^k with m in [sqrt(2)/2, sqrt(2)), for finite x > 0, as
 * out[0] + out[1] (a double-double when dd != 0; out[1] = 0 otherwise).  f = m - 1 (exact),
 * s = f / (2 + f), R = 2 s^2/3 + 2 s^4/5 + ... + 2 s^20/21, and
 * log(1 + f) = f - (f^2/2 - s (f^2/2 + R)) (the identity 2s = f - s f, solved for f).  With
 * dd != 0 the sum k LN2_HI + f - f^2/2 is carried exactly (Dekker's square of f, Knuth's
 * TwoSum) and the rest goes into out[1].  One operation a statement, on the frame array v. */
__device__ void __qgd_logdd(double x, double *out, int dd) {
    double v[12];       /* 0 f, 1 s, 2 z, 3 R, 4 hfsq, 5 kd, 6 t, 7 u, 8 a, 9 b, 10 c, 11 w */
    unsigned long long u = (unsigned long long)__double_as_longlong(x);
    int k = 0;
    if ((u >> 52) == 0ull) {                        /* subnormal: scale by 2^54 (exact) */
        u = (unsigned long long)__double_as_longlong(x * 18014398509481984.0);
        k = -54;
    }
    k += (int)(u >> 52) - 1023;
    unsigned long long mb = (u & 0x000FFFFFFFFFFFFFull) | 0x3FF0000000000000ull;
    if (mb > 0x3FF6A09E667F3BCCull) {               /* m > sqrt(2): halve it */
        mb -= 0x0010000000000000ull;
        k += 1;
    }
    v[5] = (double)k;
    v[0] = __longlong_as_double((long long)mb) - 1.0;
    v[6] = 2.0 + v[0];
    v[1] = v[0] / v[6];
    v[2] = v[1] * v[1];
    v[3] = 0.09523809523809523 * v[2];              /* 2/21 */
    v[3] = v[3] + 0.10526315789473684;              /* 2/19 */
    v[3] = v[3] * v[2];
    v[3] = v[3] + 0.11764705882352941;              /* 2/17 */
    v[3] = v[3] * v[2];
    v[3] = v[3] + 0.13333333333333333;              /* 2/15 */
    v[3] = v[3] * v[2];
    v[3] = v[3] + 0.15384615384615385;              /* 2/13 */
    v[3] = v[3] * v[2];
    v[3] = v[3] + 0.18181818181818182;              /* 2/11 */
    v[3] = v[3] * v[2];
    v[3] = v[3] + 0.2222222222222222;               /* 2/9 */
    v[3] = v[3] * v[2];
    v[3] = v[3] + 0.2857142857142857;               /* 2/7 */
    v[3] = v[3] * v[2];
    v[3] = v[3] + 0.4;                              /* 2/5 */
    v[3] = v[3] * v[2];
    v[3] = v[3] + 0.6666666666666666;               /* 2/3 */
    v[3] = v[3] * v[2];
    v[6] = v[0] * v[0];
    v[4] = 0.5 * v[6];                              /* hfsq */
    /* s (hfsq + R) + kd LN2_LO, the part both forms share */
    v[6] = v[4] + v[3];
    v[6] = v[1] * v[6];
    v[7] = v[5] * 1.9082149292705877e-10;
    v[6] = v[6] + v[7];
    if (!dd) {
        v[6] = v[4] - v[6];
        v[6] = v[0] - v[6];
        v[7] = v[5] * 0.6931471803691238;
        out[0] = v[7] + v[6];
        out[1] = 0.0;
        return;
    }
    /* f*f exactly as qh + ql (Veltkamp's split of f into 26 + 27 bits, Dekker's product):
     * v[10] = fh, v[11] = fl, v[3] = qh, v[2] = ql (R and z are not needed any more) */
    v[7] = 134217729.0 * v[0];
    v[10] = v[7] - v[0];
    v[10] = v[7] - v[10];
    v[11] = v[0] - v[10];
    v[3] = v[0] * v[0];
    v[2] = v[10] * v[10];
    v[2] = v[2] - v[3];
    v[7] = v[10] * v[11];
    v[7] = 2.0 * v[7];
    v[2] = v[2] + v[7];
    v[7] = v[11] * v[11];
    v[2] = v[2] + v[7];
    v[4] = 0.5 * v[3];                              /* h2 = qh / 2, exact */
    /* a = kd LN2_HI + f (TwoSum: v[8] = a, v[10] = its error) */
    v[7] = v[5] * 0.6931471803691238;               /* a1 */
    v[8] = v[7] + v[0];
    v[11] = v[8] - v[7];                            /* av */
    v[10] = v[8] - v[11];
    v[10] = v[7] - v[10];
    v[7] = v[0] - v[11];
    v[10] = v[10] + v[7];                           /* ae */
    /* b = a - h2 (TwoSum: v[9] = b, v[11] = its error) */
    v[9] = v[8] - v[4];
    v[7] = v[9] - v[8];                             /* bv */
    v[11] = v[9] - v[7];
    v[11] = v[8] - v[11];
    v[7] = v[4] + v[7];
    v[11] = v[11] - v[7];                           /* be */
    /* tail = ((ae + be) - ql/2) + (s (hfsq + R) + kd LN2_LO) */
    v[10] = v[10] + v[11];
    v[7] = 0.5 * v[2];
    v[10] = v[10] - v[7];
    v[10] = v[10] + v[6];
    v[8] = v[9] + v[10];                            /* hi */
    out[0] = v[8];
    v[7] = v[8] - v[9];
    out[1] = v[10] - v[7];
}

/* log(x) (base10 = 0) or log10(x) (base10 = 1): NaN and x < 0 give NaN, +-0 gives -inf, +inf
 * gives +inf.  log10 is the double-double log times 1/ln 10 (split in two). */
__device__ double __qgd_log(double x, int base10) {
    double r[3];
    unsigned long long u = (unsigned long long)__double_as_longlong(x);
    if ((u << 1) > 0xFFE0000000000000ull)
        return __qgd_nan();
    if ((u << 1) == 0ull)
        return -__qgd_inf();
    if ((u >> 63) != 0ull)
        return __qgd_nan();
    if (u == 0x7FF0000000000000ull)
        return x;
    __qgd_logdd(x, r, base10);
    if (!base10)
        return r[0];
    r[2] = r[0] * 1.098319650216765e-17;
    r[1] = r[1] * 0.4342944819032518;
    r[2] = r[1] + r[2];
    r[0] = r[0] * 0.4342944819032518;
    return r[0] + r[2];
}

/* y's kind: 0 not an integer, 1 an odd integer, 2 an even integer (y finite or infinite;
 * infinities and |y| >= 2^53 are even). */
__device__ int __qgd_intkind(unsigned long long y) {
    int e = (int)((y >> 52) & 0x7FFull) - 1075;     /* y = sig * 2^e, sig with its hidden bit */
    if (e >= 1)
        return 2;
    if (e < -52)
        return (y << 1) == 0ull ? 2 : 0;
    unsigned long long sig = (y & 0x000FFFFFFFFFFFFFull) | 0x0010000000000000ull;
    if (e == 0)
        return (int)(sig & 1ull) != 0 ? 1 : 2;
    if ((sig << (64 + e)) != 0ull)
        return 0;
    return (int)((sig >> (-e)) & 1ull) != 0 ? 1 : 2;
}

/* pow(x, y) = exp(y log|x|): the logarithm as a double-double, y * hi formed exactly (Dekker's
 * product) and y * lo added, then exp of that double-double; the sign from an odd integer y.
 * Special values as C99 Annex F: pow(x, +-0) = 1 and pow(1, y) = 1 even for NaN. */
__device__ double __qgd_pow(double x, double y) {
    double v[11];       /* 0 y, 1-2 log (hi, lo), 3 ph, 4 yh, 5 yl, 6 hh, 7 hl, 8 pl, 9 t, 10 sign */
    unsigned long long ux = (unsigned long long)__double_as_longlong(x);
    unsigned long long uy = (unsigned long long)__double_as_longlong(y);
    if ((uy << 1) == 0ull || ux == 0x3FF0000000000000ull)
        return 1.0;
    if ((ux << 1) > 0xFFE0000000000000ull || (uy << 1) > 0xFFE0000000000000ull)
        return __qgd_nan();
    int kind = __qgd_intkind(uy);
    unsigned long long ax = ux & 0x7FFFFFFFFFFFFFFFull;
    int yneg = (int)(uy >> 63);
    int odd = (int)(ux >> 63) != 0 && kind == 1;
    if ((uy << 1) == 0xFFE0000000000000ull) {       /* y = +-inf */
        if (ax == 0x3FF0000000000000ull)
            return 1.0;                             /* (-1)^+-inf */
        return (ax > 0x3FF0000000000000ull) != (yneg != 0) ? __qgd_inf() : 0.0;
    }
    if (ax == 0ull || ax == 0x7FF0000000000000ull) {    /* x = +-0 or +-inf */
        unsigned long long big = (ax == 0ull) == (yneg != 0) ? 0x7FF0000000000000ull : 0ull;
        return __longlong_as_double((long long)((odd ? 0x8000000000000000ull : 0ull) | big));
    }
    if ((ux >> 63) != 0ull && kind == 0)
        return __qgd_nan();                         /* a negative base, y not an integer */
    if (ax == 0x3FF0000000000000ull)                /* x = -1, y an integer (even when huge) */
        return odd ? -1.0 : 1.0;
    v[0] = y;
    v[10] = __longlong_as_double((long long)(odd ? 0x8000000000000000ull : 0ull));  /* kept in the frame */
    __qgd_logdd(__longlong_as_double((long long)ax), v + 1, 1);
    v[3] = v[0] * v[1];
    if (v[3] > 709.79)
        v[9] = __qgd_inf();
    else if (v[3] < -745.2)
        v[9] = 0.0;
    else {
        /* y * hi exactly as ph + pl: both split into 26 + 27 bits (|y| < 2^1000 here, since
         * |y log x| <= 746 and |log x| >= 2^-53 when x != 1) */
        v[9] = 134217729.0 * v[0];
        v[4] = v[9] - v[0];
        v[4] = v[9] - v[4];                         /* yh */
        v[5] = v[0] - v[4];                         /* yl */
        v[9] = 134217729.0 * v[1];
        v[6] = v[9] - v[1];
        v[6] = v[9] - v[6];                         /* hh */
        v[7] = v[1] - v[6];                         /* hl */
        v[8] = v[4] * v[6];
        v[8] = v[8] - v[3];
        v[9] = v[4] * v[7];
        v[8] = v[8] + v[9];
        v[9] = v[5] * v[6];
        v[8] = v[8] + v[9];
        v[9] = v[5] * v[7];
        v[8] = v[8] + v[9];                         /* pl */
        v[9] = v[0] * v[2];
        v[8] = v[8] + v[9];                         /* pl + y lo */
        v[9] = __qgd_expdd(v[3], v[8]);
    }
    unsigned long long r = (unsigned long long)__double_as_longlong(v[9]);
    return __longlong_as_double((long long)((unsigned long long)__double_as_longlong(v[10]) | r));
}

/* Knuth's TwoSum: out[0] + out[1] = a + b exactly, out[0] = the rounded sum. */
__device__ void __qgd_twosum(double a, double b, double *out) {
    double v[4];                                    /* 0 a, 1 b, 2 s, 3 bv */
    v[0] = a;
    v[1] = b;
    v[2] = v[0] + v[1];
    v[3] = v[2] - v[0];
    out[0] = v[2];
    v[2] = v[2] - v[3];
    v[2] = v[0] - v[2];
    v[3] = v[1] - v[3];
    out[1] = v[2] + v[3];
}

/* x = k pi/2 + (rr[0] + rr[1]) for |x| < 2^50; returns k (its low 32 bits).  k = nearest
 * integer to x 2/pi (the last bits of x 2/pi + 1.5 * 2^52, as in exp); pi/2 = P1 + P2 + P3 + P4,
 * P1..P3 with 33 significant bits each, so k P1, k P2, k P3 are exact for |k| < 2^20 (|x| < 2^20
 * here) and P4 the next 53 bits (pi/2 to 2^-160).  x - k P1 is exact (Sterbenz); the two next
 * parts are taken off by exact TwoSums, so the cancellation near a multiple of pi/2 (down to
 * |r| = 2^-60.5 for |x| < 2^20, at k = 29) loses nothing; the tails and k P4 are summed last,
 * about 2^-130 absolutely.  Beyond 2^20 the products k P1.. round: the reduction is then that
 * of an argument within about half an ulp of x. */
__device__ int __qgd_trigred(double x, double *rr) {
    double v[6];                                    /* 0 kd, 1 t, 2 a, 3-4 TwoSum, 5 e1 */
    v[1] = x * 0.6366197723675814 + 6755399441055744.0;
    v[0] = v[1] - 6755399441055744.0;
    v[2] = v[0] * 1.5707963267341256;
    v[2] = x - v[2];
    v[3] = v[0] * 6.077100506303966e-11;
    __qgd_twosum(v[2], -v[3], v + 3);               /* s1, e1 */
    v[5] = v[4];
    v[2] = v[0] * 2.0222662487111665e-21;
    __qgd_twosum(v[3], -v[2], v + 3);               /* s2, e2 */
    v[5] = v[5] + v[4];
    v[2] = v[0] * 8.4784276603689e-32;
    v[5] = v[5] - v[2];                             /* lo */
    v[2] = v[3] + v[5];                             /* r */
    rr[0] = v[2];
    v[2] = v[2] - v[3];
    rr[1] = v[5] - v[2];                            /* rl: Fast2Sum, |s2| >= |lo| */
    return (int)(unsigned)(unsigned long long)__double_as_longlong(v[1]);
}

/* sin(r + rl) for |r| <= pi/4 (a hair more), |rl| <= ulp(r)/2:
 * r + (r^3 S(r^2) + (rl - (r^2/2) rl)), S fitted by bench/dmath_fit.py (relative error 2^-57.9). */
__device__ double __qgd_ksin(double *rr) {
    double v[4];                                    /* 0 z, 1 p, 2 r, 3 t */
    v[2] = rr[0];
    v[0] = v[2] * v[2];
    v[1] = 1.5895831390124462e-10 * v[0];
    v[1] = v[1] + -2.5050740396269475e-08;
    v[1] = v[1] * v[0];
    v[1] = v[1] + 2.7557313570424023e-06;
    v[1] = v[1] * v[0];
    v[1] = v[1] + -0.00019841269829427846;
    v[1] = v[1] * v[0];
    v[1] = v[1] + 0.008333333333321891;
    v[1] = v[1] * v[0];
    v[1] = v[1] + -0.1666666666666663;
    v[3] = v[2] * v[0];
    v[1] = v[3] * v[1];                             /* r^3 S */
    v[3] = 0.5 * v[0];
    v[3] = v[3] * rr[1];
    v[3] = rr[1] - v[3];                            /* rl (1 - z/2) */
    v[1] = v[1] + v[3];
    return v[2] + v[1];
}

/* cos(r + rl) for |r| <= pi/4 (a hair more): w + (((1 - w) - z/2) + (z^2 C(z) - r rl)), with
 * w = 1 - z/2 rounded and (1 - w) - z/2 its exact rounding error; C fitted by
 * bench/dmath_fit.py (relative error 2^-63.9). */
__device__ double __qgd_kcos(double *rr) {
    double v[5];                                    /* 0 z, 1 p, 2 hz, 3 w, 4 t */
    v[4] = rr[0];
    v[0] = v[4] * v[4];
    v[1] = -1.1358748988066748e-11 * v[0];
    v[1] = v[1] + 2.0875705395562304e-09;
    v[1] = v[1] * v[0];
    v[1] = v[1] + -2.75573142170586e-07;
    v[1] = v[1] * v[0];
    v[1] = v[1] + 2.4801587289002157e-05;
    v[1] = v[1] * v[0];
    v[1] = v[1] + -0.0013888888888873342;
    v[1] = v[1] * v[0];
    v[1] = v[1] + 0.041666666666666595;
    v[2] = v[0] * v[0];
    v[1] = v[2] * v[1];                             /* z^2 C */
    v[4] = v[4] * rr[1];
    v[1] = v[1] - v[4];
    v[2] = 0.5 * v[0];
    v[3] = 1.0 - v[2];
    v[4] = 1.0 - v[3];
    v[4] = v[4] - v[2];
    v[1] = v[4] + v[1];
    return v[3] + v[1];
}

/* sin (fn = 0), cos (fn = 1) or tan (fn = 2) of x.  NaN, +-inf and |x| >= 2^50 give NaN; for
 * |x| < 2^-27 sin x and tan x round to x and cos x to 1 (which keeps -0 and subnormals exact);
 * otherwise x = k pi/2 + r, sin x = +-sin r or +-cos r by the quadrant k (cos x is sin in
 * quadrant k + 1), tan x = sin r / cos r or -cos r / sin r for odd k. */
__device__ double __qgd_trig(double x, int fn) {
    double rr[4];                                   /* 0-1 r + rl, 2 sin r, 3 the result */
    unsigned long long a = (unsigned long long)__double_as_longlong(x) & 0x7FFFFFFFFFFFFFFFull;
    if (a >= 0x4310000000000000ull)                 /* 2^50, inf, NaN */
        return __qgd_nan();
    if (a < 0x3E40000000000000ull)                  /* 2^-27 */
        return fn == 1 ? 1.0 : x;
    int k = __qgd_trigred(x, rr);
    if (fn == 2) {
        rr[2] = __qgd_ksin(rr);
        rr[3] = __qgd_kcos(rr);
        if ((k & 1) != 0)
            return -rr[3] / rr[2];
        return rr[2] / rr[3];
    }
    k += fn;
    rr[3] = (k & 1) != 0 ? __qgd_kcos(rr) : __qgd_ksin(rr);
    return (k & 2) != 0 ? -rr[3] : rr[3];
}
