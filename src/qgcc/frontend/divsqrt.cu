/* qgcc's float division and square root on the machine's float unit.
 *
 * The float unit has FADD, FSUB, FMUL and the conversions, each one IEEE
 * rounding, but no divider and no square root, so `x / y` and `sqrtf(x)` are
 * these two routines: a few dozen instructions where the integer routines of
 * softfloat.cu (still used under `qgcc --soft-float`) take about 470-530.  Like
 * the other library files this is CUDA-C in the qgcc subset and, unchanged,
 * valid C: tests/native/divsqrt_check.c compiles it with the host C compiler
 * (binary32, one rounding per operation, no contraction: exactly the float
 * unit) and checks it bit for bit against the host's IEEE division and
 * square root on every float (sqrt) and on hundreds of millions of biased
 * and constructed hard cases (division).
 *
 * The method, for normal operands and results:
 *  1. Integer significands ma, mb (24 bits; subnormal inputs are first scaled
 *     by 2^24 with one exact FMUL) and the result's exponent, by integer code.
 *  2. A float estimate: a reciprocal (or reciprocal square root) seed from an
 *     integer bit trick, one Newton step with coefficients fitted to the
 *     seed's error range, one plain Newton step: 2^-19 relative, so the
 *     24-bit candidate quotient (root) p, an integer by F2U, is within
 *     2^24 * 2^-19 + 2 < 64 units of the exact value.
 *  3. The exact remainder d = ma * 2^23 - p * mb (root: X - p * p), in 32-bit
 *     integer arithmetic: its true value is below 2^31 in magnitude, so the
 *     low 32 bits of the products are enough.  (An FFMA computes this
 *     remainder in one instruction once the network has it.)
 *  4. One correction c = d / mb from the float estimate (truncated: |c| is at
 *     most 64, so its error is far below 1), then d is recomputed: now the
 *     exact quotient lies within 1 + 2^-10 units of p.
 *  5. The last bit from the exact remainder: p + 1 when the quotient is above
 *     the midpoint p + 1/2 (2d > mb), p - 1 when below p - 1/2 (2d < -mb).
 *     Neither a quotient of two 24-bit significands nor a square root can be
 *     a midpoint at 24 bits, so there is no tie to break (below the normal
 *     range there can be: that path rounds ties to even).  p may round up to 2^24: the
 *     carry into the exponent field is the right result, infinity included.
 * Zero, infinite and NaN operands take a short branch (division by one FMUL
 * that gives IEEE's and CUDA's result for every such case), and quotients
 * below the normal range round once from the exact quotient and remainder.
 *
 * Rules for this file: every shift amount stays in 0..31; only + - * and the
 * int <-> float conversions on floats (no division, no fmaf, no float compare).
 */

/* a / b, correctly rounded (bit patterns in and out). */
__device__ unsigned __qg_fdiv_fpu(unsigned a, unsigned b) {
    unsigned sign = (a ^ b) & 0x80000000u;
    unsigned ua = a & 0x7FFFFFFFu;
    unsigned ub = b & 0x7FFFFFFFu;
    int ea = (int)(ua >> 23);
    int eb = (int)(ub >> 23);
    /* (int)(u + 2^23) < 2^24: u is zero, subnormal, infinite or NaN */
    if ((unsigned)((int)(ua + 0x800000u) < 0x1000000) | (unsigned)((int)(ub + 0x800000u) < 0x1000000)) {
        /* u - 0x7F800000 <= 0x80800000: u is zero, infinite or NaN */
        if ((unsigned)(ua - 0x7F800000u < 0x80800001u) | (unsigned)(ub - 0x7F800000u < 0x80800001u)) {
            /* a * (1/b), with 1/b exact for b = 0 or inf, and b itself when a is the special
               one (only b's sign and its being finite and nonzero matter then) */
            unsigned inv = (unsigned)(ub == 0u) | (unsigned)(ub == 0x7F800000u);
            return __float_as_uint(__uint_as_float(a) * __uint_as_float(b ^ (inv * 0x7F800000u)));
        }
        /* subnormal operands: scaled by 2^24 (exactly), their exponent fields by -24 */
        if (ua < 0x800000u) {
            ua = __float_as_uint(__uint_as_float(ua) * 16777216.0f);
            ea = (int)(ua >> 23) - 24;
        }
        if (ub < 0x800000u) {
            ub = __float_as_uint(__uint_as_float(ub) * 16777216.0f);
            eb = (int)(ub >> 23) - 24;
        }
    }
    unsigned ma = (ua & 0x7FFFFFu) | 0x800000u;
    unsigned mb = (ub & 0x7FFFFFu) | 0x800000u;
    unsigned t = (unsigned)(ma < mb);
    ma <<= t; /* ma / mb in [1, 2) */
    int e = ea - eb + 126 - (int)t; /* the result's exponent field, less one */
    int nmb = -(int)mb;
    /* y ~ 1/mb: seed (0x7EEEEBB3 - the bits of (float)mb), fitted Newton step, Newton step */
    float x = (float)mb;
    float nx = (float)nmb;
    float y = __uint_as_float((unsigned)nmb + 0x346EEBB3u);
    y = y * (x * -1.04196469f * y + 2.04270453f);
    y = y * (nx * y + 2.0f);
    /* p ~ ma * 2^23 / mb and the exact remainder d = ma * 2^23 - p * mb (|d| < 2^31) */
    unsigned p = (unsigned)((float)ma * 8388608.0f * y);
    int d = (int)((ma << 23) - p * mb);
    int c = (int)((float)d * y);
    p += (unsigned)c;
    d += c * nmb;
    /* ma * 2^23 / mb = p + d / mb with |d| < mb (1 + 2^-10): round to nearest */
    int d2 = d + d;
    if ((unsigned)e >= 254u) {
        if (e > 0)
            return sign | 0x7F800000u;
        /* below the normal range: the exact floor p and remainder d, then one rounding at 2^-149 */
        if (d < 0) {
            p -= 1u;
            d -= nmb;
        }
        if (d >= (int)mb) {
            p += 1u;
            d += nmb;
        }
        unsigned n = (unsigned)(-e); /* p + d/mb is shifted right by n >= 1 */
        if (n > 25u)
            n = 25u;
        unsigned m = p >> n;
        unsigned rest = (p << (32u - n)) | (unsigned)(d != 0); /* bits shifted out, then the sticky bit */
        return sign | (m + (unsigned)(rest + (m & 1u) > 0x80000000u));
    }
    p = p + (unsigned)(d2 > (int)mb) - (unsigned)(d2 < nmb);
    return sign | (((unsigned)e << 23) + p);
}

/* sqrtf(a), correctly rounded (bit patterns in and out). */
__device__ unsigned __qg_fsqrt_fpu(unsigned a) {
    unsigned u = a;
    int ea = (int)(a >> 23);
    if (a - 0x800000u >= 0x7F000000u) {
        /* zero, subnormal, infinity, NaN or negative */
        if (a - 1u >= 0x7F7FFFFFu) {
            if ((a << 1) == 0u || a == 0x7F800000u)
                return a; /* sqrt(+-0) = +-0, sqrt(inf) = inf */
            return 0x7FFFFFFFu;
        }
        u = __float_as_uint(__uint_as_float(a) * 16777216.0f);
        ea = (int)(u >> 23) - 24;
    }
    /* a = m * 2^(ea - 150); X = m * 2^sh with sh = 24 - (ea & 1), so that
       sqrt(a) = sqrt(X) * 2^((ea - sh - 150) / 2) and sqrt(X) in [2^23, 2^24) */
    int e1 = ea + 1;
    unsigned mo = ((u & 0x7FFFFFu) | 0x800000u) << ((unsigned)e1 & 1u);
    unsigned X = mo << 23; /* the low 32 bits of X */
    float x2 = __uint_as_float(__float_as_uint((float)mo) + 0xC000000u); /* 2X exactly: mo * 2^24 */
    /* h ~ 1/(2 sqrt(X)): seed (0x5F200000 - the bits of X / 2), fitted Newton step, Newton step */
    float h = __uint_as_float(0x5F600000u - (__float_as_uint(x2) >> 1));
    h = h * (x2 * -0.351975983f * h * h + 1.68191388f);
    h = h * (x2 * -0.125f * h * h + 0.75f);
    unsigned p = (unsigned)(x2 * h); /* ~ sqrt(X) */
    int d = (int)(X - p * p);
    int c = (int)((float)d * h); /* d / 2p */
    p += (unsigned)c;
    d = (int)(X - p * p);
    /* sqrt(X) > p + 1/2  <=>  X > p^2 + p (integers);  sqrt(X) < p - 1/2  <=>  X <= p^2 - p */
    p = p + (unsigned)(d > (int)p) - (unsigned)(d + (int)p < 1);
    return (((unsigned)(e1 >> 1) + 62u) << 23) + p;
}
