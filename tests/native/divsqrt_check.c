/* Checks src/qgcc/frontend/divsqrt.cu, compiled as plain C, against the host's IEEE-754
   division and square root (SSE: binary32, round to nearest even, subnormals kept).
   Compile with -ffp-contract=off: then every + - * of the routines is one binary32
   rounding, exactly the machine's FADD/FSUB/FMUL.
   Usage: divsqrt_check MODE N SEED
     MODE sqrt-all : every one of the 2^32 inputs of sqrtf (N, SEED ignored)
     MODE sqrt     : N inputs, half random, half biased (specials, subnormals, ...)
     MODE div      : N biased random pairs (specials, subnormals, huge/tiny ratios)
     MODE div-hard : N quotients constructed to lie within 2^-30 ulp of a midpoint, or
                     exactly representable, or landing in the subnormal range
   Prints "ok <count>" or the first mismatch. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define __device__ static
static float __uint_as_float(unsigned u) { float f; memcpy(&f, &u, 4); return f; }
static unsigned __float_as_uint(float f) { unsigned u; memcpy(&u, &f, 4); return u; }
#include "../../src/qgcc/frontend/divsqrt.cu"

static uint64_t rng;
static uint32_t next(void) { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; return (uint32_t)(rng >> 11); }
static const uint32_t special[] = {0, 0x80000000u, 1, 0x80000001u, 2, 3, 0x7FFFFF, 0x807FFFFFu, 0x400000, 0x800000,
    0x80800000u, 0x800001, 0x3F800000, 0xBF800000u, 0x7F7FFFFF, 0xFF7FFFFFu, 0x7F7FFFFE, 0x7F800000, 0xFF800000u,
    0x7FC00000, 0xFFC00000u, 0x7F800001, 0x7FFFFFFF, 0x3F800001, 0x3FFFFFFF, 0x3F7FFFFF, 0x40000000, 0x4B000000,
    0x00000003, 0x34000000, 0x33800000, 0x0C000000, 0x72800000, 0x01000000, 0x7E800000};
#define NSPEC (sizeof special / sizeof special[0])
static uint32_t operand(void) {
    uint32_t r = next();
    switch (next() % 10) {
    case 0: return special[next() % NSPEC];
    case 1: return r & 0x807FFFFFu;                             /* subnormal */
    case 2: return (r & 0x807FFFFFu) | (next() % 3 == 0 ? 0x00800000u : 0x7F000000u); /* extreme exponents */
    case 3: return special[next() % NSPEC] + (next() % 7) - 3;  /* around specials */
    case 4: return (r & 0x80000000u) | ((r & 0x7F) << 23) | (next() & 7); /* few mantissa bits */
    case 5: return (r & 0x80000000u) | (r % 0x7F800000u) | 0x7FFF00u; /* many trailing ones */
    default: return r;
    }
}
static uint32_t canon(float x) { return isnan(x) ? 0x7FFFFFFFu : __float_as_uint(x); }
/* The machine's FMUL gives the canonical NaN, the host's keeps a payload: compare NaNs as NaNs
   here (the emulator tests check the routines' bits, canonical NaN included). */
static uint32_t canon_bits(uint32_t u) { return (u & 0x7FFFFFFFu) > 0x7F800000u ? 0x7FFFFFFFu : u; }
static int fail(const char *op, uint32_t a, uint32_t b, uint32_t got, uint32_t want) {
    printf("MISMATCH %s a=%08x b=%08x got=%08x want=%08x\n", op, a, b, got, want);
    return 1;
}
static int check_div(uint32_t a, uint32_t b) {
    volatile float x = __uint_as_float(a), y = __uint_as_float(b);
    uint32_t got = canon_bits(__qg_fdiv_fpu(a, b)), want = canon(x / y);
    return got != want ? fail("div", a, b, got, want) : 0;
}
int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "div";
    long n = argc > 2 ? atol(argv[2]) : 1000000;
    rng = (argc > 3 ? strtoull(argv[3], 0, 10) : 1) * 2654435761u + 88172645463325252ull;
    long count = 0;
    if (!strcmp(mode, "sqrt-all")) {
        uint32_t a = 0;
        do {
            volatile float x = __uint_as_float(a);
            uint32_t got = __qg_fsqrt_fpu(a), want = canon(sqrtf(x));
            if (got != want) return fail("sqrt", a, 0, got, want);
            count++;
        } while (++a != 0);
    } else if (!strcmp(mode, "sqrt")) {
        for (; count < n; count++) {
            uint32_t a = count & 1 ? operand() : next() & 0x7FFFFFFFu;
            volatile float x = __uint_as_float(a);
            uint32_t got = __qg_fsqrt_fpu(a), want = canon(sqrtf(x));
            if (got != want) return fail("sqrt", a, 0, got, want);
        }
    } else if (!strcmp(mode, "div")) {
        for (; count < n; count++)
            if (check_div(operand(), operand())) return 1;
    } else if (!strcmp(mode, "div-hard")) {
        for (; count < n; count++) {
            uint32_t a, b;
            if (count & 1) {
                /* The hardest cases a 24-bit division has: a/b within r/(2 mb) ulp (about
                   2^-24 ulp, |r| <= 8) of the midpoint m = (2q+1)/2^25 between two 24-bit
                   quotients: mb = r / (2q+1) mod 2^25, ma = ((2q+1) mb - r) / 2^25. */
                uint64_t mid, inv, mb;
                int64_t r;
                do {
                    mid = 2 * (uint64_t)(0x800000u | (next() & 0x7FFFFFu)) + 1;
                    inv = mid;
                    for (int k = 0; k < 5; k++) inv *= 2 - mid * inv; /* 1/mid mod 2^64 */
                    r = (int64_t)(next() % 17) - 8;
                    mb = ((uint64_t)r * inv) & 0x1FFFFFFu;
                } while (r == 0 || mb < 0x800000u || mb >= 0x1000000u);
                uint64_t ma = (mid * mb - (uint64_t)r) >> 25;
                int eb = (int)(next() % 300) - 170, ea = eb + (int)(next() % 300) - 150;
                a = __float_as_uint((float)ldexp((double)ma, ea - 23));
                b = __float_as_uint((float)ldexp((double)mb, eb - 23));
            } else {
                /* Quotients that are exact or exact midpoints at the subnormal (or normal) grid:
                   a = m * b exactly, m with few bits, b with few bits. */
                uint32_t mb = 1 + 2 * (next() & 0xFF), mm = next() & 0xFFFF;
                int eb = (int)(next() % 200) - 100, em = -150 - (int)(next() % 8) + (int)(next() % 4);
                if (next() % 4 == 0) em += (int)(next() % 120);
                double M = ldexp((double)mm, em), B = ldexp((double)mb, eb);
                a = __float_as_uint((float)(M * B));
                b = __float_as_uint((float)B);
                if (next() % 3 == 0) a += (next() & 1) ? 1 : -1;
            }
            a ^= next() & 0x80000000u;
            b ^= next() & 0x80000000u;
            if (check_div(a, b)) return 1;
        }
    } else {
        printf("unknown mode %s\n", mode);
        return 2;
    }
    printf("ok %ld\n", count);
    return 0;
}
