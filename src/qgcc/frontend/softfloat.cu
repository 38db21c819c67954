/* qgcc's soft-float library: IEEE-754 binary32 on the machine's integer ISA.
 *
 * The machine has integer units only, so every float operation of a kernel is
 * a call of one of these routines; the compiler emits each routine a kernel
 * uses once, as a subroutine, and the compiled network executes it like any
 * other code.  Written in the qgcc CUDA-C subset (unsigned bit patterns, no
 * 64-bit type) and, unchanged, valid C: tests/softfloat_native.c compiles it
 * with the host C compiler and checks it against the host's IEEE hardware on
 * millions of operands, which is far faster than running it on the emulator.
 *
 * Semantics (docs/subset.md, "float"): round to nearest even, one rounding
 * per operation, denormals kept, and CUDA's NaN rule: every NaN result is the
 * canonical 0x7FFFFFFF.  The algorithms follow Berkeley SoftFloat 3
 * (f32_add/sub/mul/mulAdd, roundPackToF32); division and square root use
 * exact digit-by-digit integer loops instead of SoftFloat's estimates.
 *
 * Rules for this file: every shift amount stays in 0..31 (the machine uses
 * the low 5 bits; C leaves larger amounts undefined), and no routine calls a
 * routine that calls it.
 */

__device__ unsigned __qg_isnan(unsigned a) {
    return (a & 0x7FFFFFFFu) > 0x7F800000u;
}

__device__ unsigned __qg_clz(unsigned x) {
    unsigned n = 0u;
    unsigned t;
    t = (unsigned)(x < 0x10000u) << 4;
    n += t;
    x <<= t;
    t = (unsigned)(x < 0x1000000u) << 3;
    n += t;
    x <<= t;
    t = (unsigned)(x < 0x10000000u) << 2;
    n += t;
    x <<= t;
    t = (unsigned)(x < 0x40000000u) << 1;
    n += t;
    x <<= t;
    t = (unsigned)(x < 0x80000000u);
    n += t;
    x <<= t;
    return n + (unsigned)(x == 0u);
}

/* a >> dist, with every bit shifted out ORed into bit 0 ("jamming"). */
__device__ unsigned __qg_srj(unsigned a, unsigned dist) {
    if (dist == 0u)
        return a;
    if (dist >= 31u)
        return (unsigned)(a != 0u);
    return (a >> dist) | (unsigned)((a << (32u - dist)) != 0u);
}

/* sig has its leading bit at 30 (value sig * 2^(exp - 156)); 7 round bits. */
__device__ unsigned __qg_round_pack(unsigned sign, int exp, unsigned sig) {
    unsigned roundBits = sig & 0x7Fu;
    if ((unsigned)exp >= 0xFDu) {
        if (exp < 0) {
            sig = __qg_srj(sig, (unsigned)(-exp));
            exp = 0;
            roundBits = sig & 0x7Fu;
        } else if (exp > 0xFD || sig + 0x40u >= 0x80000000u) {
            return (sign << 31) | 0x7F800000u;
        }
    }
    sig = (sig + 0x40u) >> 7;
    if (roundBits == 0x40u)
        sig &= 0xFFFFFFFEu;
    if (sig == 0u)
        exp = 0;
    return (sign << 31) + ((unsigned)exp << 23) + sig;
}

__device__ unsigned __qg_norm_round_pack(unsigned sign, int exp, unsigned sig) {
    int shiftDist = (int)__qg_clz(sig) - 1;
    exp -= shiftDist;
    if (shiftDist >= 7 && (unsigned)exp < 0xFDu) {
        if (sig == 0u)
            exp = 0;
        return (sign << 31) + ((unsigned)exp << 23) + (sig << (unsigned)(shiftDist - 7));
    }
    return __qg_round_pack(sign, exp, sig << (unsigned)shiftDist);
}

__device__ unsigned __qg_fadd(unsigned a, unsigned b) {
    if (__qg_isnan(a) || __qg_isnan(b))
        return 0x7FFFFFFFu;
    int expA = (int)((a >> 23) & 0xFFu);
    int expB = (int)((b >> 23) & 0xFFu);
    unsigned sigA = a & 0x7FFFFFu;
    unsigned sigB = b & 0x7FFFFFu;
    int expDiff = expA - expB;
    unsigned signZ = a >> 31;
    int expZ;
    unsigned sigZ;
    if (((a ^ b) >> 31) == 0u) {
        /* magnitudes add */
        if (expDiff == 0) {
            if (expA == 0)
                return a + sigB;
            if (expA == 0xFF)
                return a;
            expZ = expA;
            sigZ = 0x01000000u + sigA + sigB;
            if ((sigZ & 1u) == 0u && expZ < 0xFE)
                return (signZ << 31) + ((unsigned)expZ << 23) + (sigZ >> 1);
            sigZ <<= 6;
        } else {
            sigA <<= 6;
            sigB <<= 6;
            if (expDiff < 0) {
                if (expB == 0xFF)
                    return (signZ << 31) | 0x7F800000u;
                expZ = expB;
                sigA += expA != 0 ? 0x20000000u : sigA;
                sigA = __qg_srj(sigA, (unsigned)(-expDiff));
            } else {
                if (expA == 0xFF)
                    return a;
                expZ = expA;
                sigB += expB != 0 ? 0x20000000u : sigB;
                sigB = __qg_srj(sigB, (unsigned)expDiff);
            }
            sigZ = 0x20000000u + sigA + sigB;
            if (sigZ < 0x40000000u) {
                expZ -= 1;
                sigZ <<= 1;
            }
        }
        return __qg_round_pack(signZ, expZ, sigZ);
    }
    /* magnitudes subtract */
    if (expDiff == 0) {
        if (expA == 0xFF)
            return 0x7FFFFFFFu;
        int sigDiff = (int)sigA - (int)sigB;
        if (sigDiff == 0)
            return 0u;
        if (expA != 0)
            expA -= 1;
        if (sigDiff < 0) {
            signZ ^= 1u;
            sigDiff = -sigDiff;
        }
        int shiftDist = (int)__qg_clz((unsigned)sigDiff) - 8;
        expZ = expA - shiftDist;
        if (expZ < 0) {
            shiftDist = expA;
            expZ = 0;
        }
        return (signZ << 31) + ((unsigned)expZ << 23) + ((unsigned)sigDiff << (unsigned)shiftDist);
    }
    unsigned sigX;
    unsigned sigY;
    sigA <<= 7;
    sigB <<= 7;
    if (expDiff < 0) {
        signZ ^= 1u;
        if (expB == 0xFF)
            return (signZ << 31) | 0x7F800000u;
        expZ = expB - 1;
        sigX = sigB | 0x40000000u;
        sigY = sigA + (expA != 0 ? 0x40000000u : sigA);
        expDiff = -expDiff;
    } else {
        if (expA == 0xFF)
            return a;
        expZ = expA - 1;
        sigX = sigA | 0x40000000u;
        sigY = sigB + (expB != 0 ? 0x40000000u : sigB);
    }
    return __qg_norm_round_pack(signZ, expZ, sigX - __qg_srj(sigY, (unsigned)expDiff));
}

__device__ unsigned __qg_fsub(unsigned a, unsigned b) {
    return __qg_fadd(a, b ^ 0x80000000u);
}

/* The high 32 bits of the 64-bit product x * y (the low 32 bits are just x * y). */
__device__ unsigned __qg_mulhi(unsigned x, unsigned y) {
    unsigned xl = x & 0xFFFFu;
    unsigned xh = x >> 16;
    unsigned yl = y & 0xFFFFu;
    unsigned yh = y >> 16;
    unsigned ll = xl * yl;
    unsigned lh = xl * yh;
    unsigned hl = xh * yl;
    unsigned mid = (ll >> 16) + (lh & 0xFFFFu) + (hl & 0xFFFFu);
    return xh * yh + (lh >> 16) + (hl >> 16) + (mid >> 16);
}

/* The high 32 bits of x * y, with the low 32 bits jammed into bit 0. */
__device__ unsigned __qg_mulhi_jam(unsigned x, unsigned y) {
    return __qg_mulhi(x, y) | (unsigned)(x * y != 0u);
}

__device__ unsigned __qg_fmul(unsigned a, unsigned b) {
    if (__qg_isnan(a) || __qg_isnan(b))
        return 0x7FFFFFFFu;
    unsigned signZ = (a ^ b) >> 31;
    int expA = (int)((a >> 23) & 0xFFu);
    int expB = (int)((b >> 23) & 0xFFu);
    unsigned sigA = a & 0x7FFFFFu;
    unsigned sigB = b & 0x7FFFFFu;
    if (expA == 0xFF || expB == 0xFF) {
        if ((a << 1) == 0u || (b << 1) == 0u)
            return 0x7FFFFFFFu;
        return (signZ << 31) | 0x7F800000u;
    }
    if (expA == 0) {
        if (sigA == 0u)
            return signZ << 31;
        int sh = (int)__qg_clz(sigA) - 8;
        expA = 1 - sh;
        sigA <<= (unsigned)sh;
    }
    if (expB == 0) {
        if (sigB == 0u)
            return signZ << 31;
        int sh = (int)__qg_clz(sigB) - 8;
        expB = 1 - sh;
        sigB <<= (unsigned)sh;
    }
    int expZ = expA + expB - 0x7F;
    unsigned sigZ = __qg_mulhi_jam((sigA | 0x800000u) << 7, (sigB | 0x800000u) << 8);
    if (sigZ < 0x40000000u) {
        expZ -= 1;
        sigZ <<= 1;
    }
    return __qg_round_pack(signZ, expZ, sigZ);
}

__device__ unsigned __qg_fdiv(unsigned a, unsigned b) {
    if (__qg_isnan(a) || __qg_isnan(b))
        return 0x7FFFFFFFu;
    unsigned signZ = (a ^ b) >> 31;
    int expA = (int)((a >> 23) & 0xFFu);
    int expB = (int)((b >> 23) & 0xFFu);
    unsigned sigA = a & 0x7FFFFFu;
    unsigned sigB = b & 0x7FFFFFu;
    if (expA == 0xFF) {
        if (expB == 0xFF)
            return 0x7FFFFFFFu;
        return (signZ << 31) | 0x7F800000u;
    }
    if (expB == 0xFF)
        return signZ << 31;
    if (expB == 0) {
        if (sigB == 0u) {
            if ((a << 1) == 0u)
                return 0x7FFFFFFFu;
            return (signZ << 31) | 0x7F800000u;
        }
        int sh = (int)__qg_clz(sigB) - 8;
        expB = 1 - sh;
        sigB <<= (unsigned)sh;
    }
    if (expA == 0) {
        if (sigA == 0u)
            return signZ << 31;
        int sh = (int)__qg_clz(sigA) - 8;
        expA = 1 - sh;
        sigA <<= (unsigned)sh;
    }
    int expZ = expA - expB + 0x7E;
    sigA |= 0x800000u;
    sigB |= 0x800000u;
    if (sigA < sigB) {
        expZ -= 1;
        sigA <<= 1;
    }
    /* restoring division: q = floor(sigA * 2^30 / sigB), 31 quotient bits */
    unsigned q = 0u;
    unsigned r = sigA;
    for (int i = 0; i < 31; i++) {
        unsigned ge = (unsigned)(r >= sigB);
        r -= sigB & (0u - ge);
        q = (q << 1) | ge;
        r <<= 1;
    }
    return __qg_round_pack(signZ, expZ, q | (unsigned)(r != 0u));
}

__device__ unsigned __qg_fsqrt(unsigned a) {
    if (__qg_isnan(a))
        return 0x7FFFFFFFu;
    int expA = (int)((a >> 23) & 0xFFu);
    unsigned sigA = a & 0x7FFFFFu;
    if ((a << 1) == 0u)
        return a; /* sqrt(+-0) = +-0 */
    if ((a >> 31) != 0u)
        return 0x7FFFFFFFu;
    if (expA == 0xFF)
        return a;
    if (expA == 0) {
        int sh = (int)__qg_clz(sigA) - 8;
        expA = 1 - sh;
        sigA <<= (unsigned)sh;
    }
    int expZ = ((expA - 0x7F) >> 1) + 0x7E;
    unsigned m = sigA | 0x800000u;
    if ((expA & 1) == 0)
        m <<= 1;
    /* digit-by-digit square root of m * 2^27: 26 result bits, exact remainder */
    unsigned x = m << 7;
    unsigned q = 0u;
    unsigned r = 0u;
    for (int i = 0; i < 26; i++) {
        r = (r << 2) | (x >> 30);
        x <<= 2;
        unsigned t = (q << 2) | 1u;
        unsigned ge = (unsigned)(r >= t);
        r -= t & (0u - ge);
        q = (q << 1) | ge;
    }
    return __qg_round_pack(0u, expZ, (q << 5) | (unsigned)(r != 0u));
}

/* fmaf: a * b + c with one rounding.  The exact product needs 48 bits, so the
   64-bit quantities of SoftFloat's mulAddF32 are kept as (hi, lo) pairs. */
__device__ unsigned __qg_fma(unsigned a, unsigned b, unsigned c) {
    if (__qg_isnan(a) || __qg_isnan(b) || __qg_isnan(c))
        return 0x7FFFFFFFu;
    unsigned signP = (a ^ b) >> 31;
    unsigned signC = c >> 31;
    int expA = (int)((a >> 23) & 0xFFu);
    int expB = (int)((b >> 23) & 0xFFu);
    int expC = (int)((c >> 23) & 0xFFu);
    unsigned sigA = a & 0x7FFFFFu;
    unsigned sigB = b & 0x7FFFFFu;
    unsigned sigC = c & 0x7FFFFFu;
    if (expA == 0xFF || expB == 0xFF) {
        if ((a << 1) == 0u || (b << 1) == 0u)
            return 0x7FFFFFFFu; /* inf * 0 */
        if (expC == 0xFF && signC != signP)
            return 0x7FFFFFFFu; /* inf - inf */
        return (signP << 31) | 0x7F800000u;
    }
    if (expC == 0xFF)
        return c;
    if ((a << 1) == 0u || (b << 1) == 0u) {
        if ((c << 1) == 0u && signC != signP)
            return 0u;
        if ((c << 1) == 0u)
            return signP << 31;
        return c;
    }
    if (expA == 0) {
        int sh = (int)__qg_clz(sigA) - 8;
        expA = 1 - sh;
        sigA <<= (unsigned)sh;
    }
    if (expB == 0) {
        int sh = (int)__qg_clz(sigB) - 8;
        expB = 1 - sh;
        sigB <<= (unsigned)sh;
    }
    int expP = expA + expB - 0x7E;
    /* P = (sigA << 7) * (sigB << 7), a 62-bit product, as pH:pL */
    unsigned x = (sigA | 0x800000u) << 7;
    unsigned y = (sigB | 0x800000u) << 7;
    unsigned pH = __qg_mulhi(x, y);
    unsigned pL = x * y;
    if (pH < 0x20000000u) {
        expP -= 1;
        pH = (pH << 1) | (pL >> 31);
        pL <<= 1;
    }
    if ((c << 1) == 0u) {
        /* c is zero: round the product alone */
        unsigned s = (pH << 1) | (pL >> 31) | (unsigned)((pL << 1) != 0u);
        return __qg_round_pack(signP, expP - 1, s);
    }
    if (expC == 0) {
        int sh = (int)__qg_clz(sigC) - 8;
        expC = 1 - sh;
        sigC <<= (unsigned)sh;
    }
    /* C = (sigC << 6) << 32, aligned with P when the exponents are equal */
    unsigned cH = (sigC | 0x800000u) << 6;
    int expDiff = expP - expC;
    /* big - or + (small >> d, jammed); big has the larger exponent */
    unsigned bH;
    unsigned bL;
    unsigned sH;
    unsigned sL;
    unsigned d;
    int expZ;
    unsigned signZ;
    if (expDiff < 0) {
        bH = cH;
        bL = 0u;
        sH = pH;
        sL = pL;
        d = (unsigned)(-expDiff);
        expZ = expC;
        signZ = signC;
    } else {
        bH = pH;
        bL = pL;
        sH = cH;
        sL = 0u;
        d = (unsigned)expDiff;
        expZ = expP;
        signZ = signP;
    }
    if (d >= 64u) {
        sL = (unsigned)((sH | sL) != 0u);
        sH = 0u;
    } else if (d >= 32u) {
        unsigned e = d - 32u;
        unsigned jam = (unsigned)(sL != 0u);
        if (e != 0u)
            jam |= (unsigned)((sH << (32u - e)) != 0u);
        sL = (sH >> e) | jam;
        sH = 0u;
    } else if (d != 0u) {
        unsigned jam = (unsigned)((sL << (32u - d)) != 0u);
        sL = (sL >> d) | (sH << (32u - d)) | jam;
        sH >>= d;
    }
    unsigned sigZ;
    if (signP == signC) {
        unsigned zL = bL + sL;
        unsigned zH = bH + sH + (unsigned)(zL < bL);
        sigZ = zH | (unsigned)(zL != 0u);
        if (sigZ < 0x40000000u) {
            expZ -= 1;
            sigZ <<= 1;
        }
        return __qg_round_pack(signZ, expZ, sigZ);
    }
    unsigned zL = bL - sL;
    unsigned zH = bH - sH - (unsigned)(bL < sL);
    if ((zH | zL) == 0u)
        return 0u; /* exact cancellation gives +0 */
    if ((zH >> 31) != 0u) {
        signZ ^= 1u;
        zL = 0u - zL;
        zH = 0u - zH - (unsigned)(zL != 0u);
    }
    int lz = zH != 0u ? (int)__qg_clz(zH) : 32 + (int)__qg_clz(zL);
    int shiftDist = lz - 1;
    expZ -= shiftDist;
    shiftDist -= 32;
    if (shiftDist < 0) {
        unsigned s = (unsigned)(-shiftDist);
        if (s == 32u)
            sigZ = zH | (unsigned)(zL != 0u);
        else
            sigZ = (zH << (32u - s)) | (zL >> s) | (unsigned)((zL << (32u - s)) != 0u);
    } else {
        sigZ = zL << (unsigned)shiftDist;
    }
    return __qg_round_pack(signZ, expZ, sigZ);
}

/* (int)f: truncation; NaN gives 0, out-of-range values saturate (CUDA's cvt.rzi.s32.f32). */
__device__ unsigned __qg_f2i(unsigned a) {
    int exp = (int)((a >> 23) & 0xFFu);
    if (__qg_isnan(a))
        return 0u;
    if (exp < 0x7F)
        return 0u;
    if (exp >= 0x7F + 31)
        return (a >> 31) != 0u ? 0x80000000u : 0x7FFFFFFFu;
    unsigned m = (a & 0x7FFFFFu) | 0x800000u;
    int sh = exp - 0x7F - 23;
    unsigned v = sh >= 0 ? m << (unsigned)sh : m >> (unsigned)(-sh);
    return (a >> 31) != 0u ? 0u - v : v;
}

/* (unsigned)f: truncation; NaN and negative values give 0, large values 0xFFFFFFFF. */
__device__ unsigned __qg_f2u(unsigned a) {
    int exp = (int)((a >> 23) & 0xFFu);
    if (__qg_isnan(a) || (a >> 31) != 0u || exp < 0x7F)
        return 0u;
    if (exp >= 0x7F + 32)
        return 0xFFFFFFFFu;
    unsigned m = (a & 0x7FFFFFu) | 0x800000u;
    int sh = exp - 0x7F - 23;
    return sh >= 0 ? m << (unsigned)sh : m >> (unsigned)(-sh);
}

__device__ unsigned __qg_u2f_signed(unsigned sign, unsigned x) {
    if (x == 0u)
        return sign << 31;
    unsigned sh = __qg_clz(x);
    unsigned m = x << sh;
    return __qg_round_pack(sign, 157 - (int)sh, (m >> 1) | (m & 1u));
}

__device__ unsigned __qg_u2f(unsigned x) {
    return __qg_u2f_signed(0u, x);
}

__device__ unsigned __qg_i2f(unsigned x) {
    unsigned sign = x >> 31;
    return __qg_u2f_signed(sign, sign != 0u ? 0u - x : x);
}

/* Comparisons, C semantics: false whenever an operand is NaN; -0 == +0. */
__device__ unsigned __qg_flt(unsigned a, unsigned b) {
    if (__qg_isnan(a) || __qg_isnan(b))
        return 0u;
    unsigned signA = a >> 31;
    if (signA != (b >> 31))
        return (unsigned)(signA != 0u && ((a | b) << 1) != 0u);
    return (unsigned)(a != b && (signA ^ (unsigned)(a < b)) != 0u);
}

__device__ unsigned __qg_fle(unsigned a, unsigned b) {
    if (__qg_isnan(a) || __qg_isnan(b))
        return 0u;
    unsigned signA = a >> 31;
    if (signA != (b >> 31))
        return (unsigned)(signA != 0u || ((a | b) << 1) == 0u);
    return (unsigned)(a == b || (signA ^ (unsigned)(a < b)) != 0u);
}

__device__ unsigned __qg_feq(unsigned a, unsigned b) {
    if (__qg_isnan(a) || __qg_isnan(b))
        return 0u;
    return (unsigned)(a == b || ((a | b) << 1) == 0u);
}

/* fminf/fmaxf: a NaN operand is ignored (both NaN: canonical NaN); -0 < +0. */
__device__ unsigned __qg_fmin(unsigned a, unsigned b) {
    if (__qg_isnan(a))
        return __qg_isnan(b) ? 0x7FFFFFFFu : b;
    if (__qg_isnan(b))
        return a;
    if ((a >> 31) != (b >> 31))
        return (a >> 31) != 0u ? a : b;
    return ((a < b) ^ (unsigned)((a >> 31) != 0u)) != 0u ? a : b;
}

__device__ unsigned __qg_fmax(unsigned a, unsigned b) {
    if (__qg_isnan(a))
        return __qg_isnan(b) ? 0x7FFFFFFFu : b;
    if (__qg_isnan(b))
        return a;
    if ((a >> 31) != (b >> 31))
        return (a >> 31) != 0u ? b : a;
    return ((a < b) ^ (unsigned)((a >> 31) != 0u)) != 0u ? b : a;
}
