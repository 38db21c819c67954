/* Checks src/qgcc/frontend/softfloat.cu, compiled as plain C, against the host's
   IEEE-754 hardware (SSE: round to nearest even, denormals on) and libm's fmaf.
   Usage: softfloat_check N SEED  -> prints "ok <count>" or the first mismatch. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define __device__ static
#include "../../src/qgcc/frontend/softfloat.cu"

static uint64_t rng;
static uint32_t next(void) { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; return (uint32_t)(rng >> 11); }
static const uint32_t special[] = {0, 0x80000000u, 1, 0x80000001u, 0x7FFFFF, 0x807FFFFFu, 0x800000, 0x80800000u,
    0x3F800000, 0xBF800000u, 0x7F7FFFFF, 0xFF7FFFFFu, 0x7F800000, 0xFF800000u, 0x7FC00000, 0xFFC00000u,
    0x7F800001, 0x3F800001, 0x3FFFFFFF, 0x4B000000, 0x4B800000, 0xCF000000u, 0x4F000000, 0x4F800000, 0x3F000000,
    0x34000000, 0x33800000, 0x00400000, 0x00000003};
#define NSPEC (sizeof special / sizeof special[0])
static uint32_t operand(void) {
    uint32_t r = next();
    switch (next() % 8) {
    case 0: return special[next() % NSPEC];
    case 1: return (r & 0x807FFFFFu);                        /* denormal */
    case 2: return (r & 0x80FFFFFFu) | 0x3F000000u;           /* near 1 */
    case 3: return special[next() % NSPEC] + (next() % 5) - 2; /* around specials */
    default: return r;
    }
}
static float f(uint32_t u) { float x; memcpy(&x, &u, 4); return x; }
static uint32_t u(float x) { uint32_t v; memcpy(&v, &x, 4); return isnan(x) ? 0x7FFFFFFFu : v; }
static int bad;
static void check(const char *op, uint32_t a, uint32_t b, uint32_t c, uint32_t got, uint32_t want) {
    if (got != want && !bad) { printf("MISMATCH %s a=%08x b=%08x c=%08x got=%08x want=%08x\n", op, a, b, c, got, want); bad = 1; }
}
static uint32_t ref_f2i(float x) {
    if (isnan(x)) return 0;
    if (x >= 2147483648.0f) return 0x7FFFFFFFu;
    if (x < -2147483648.0f) return 0x80000000u;
    return (uint32_t)(int32_t)x;
}
static uint32_t ref_f2u(float x) {
    if (isnan(x) || x <= -1.0f) return 0;
    if (x >= 4294967296.0f) return 0xFFFFFFFFu;
    return (uint32_t)x;
}
static uint32_t ref_min(uint32_t a, uint32_t b) {
    float x = f(a), y = f(b);
    if (isnan(x)) return isnan(y) ? 0x7FFFFFFFu : b;
    if (isnan(y)) return a;
    if (x == y) return (a >> 31) ? a : b;
    return x < y ? a : b;
}
static uint32_t ref_max(uint32_t a, uint32_t b) {
    float x = f(a), y = f(b);
    if (isnan(x)) return isnan(y) ? 0x7FFFFFFFu : b;
    if (isnan(y)) return a;
    if (x == y) return (a >> 31) ? b : a;
    return x > y ? a : b;
}
int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 1000000;
    rng = argc > 2 ? strtoull(argv[2], 0, 10) * 2654435761u + 88172645463325252ull : 88172645463325252ull;
    for (long i = 0; i < n && !bad; i++) {
        uint32_t a = operand(), b = operand(), c = operand();
        if (i % 3 == 0) b = (a & 0xFF800000u) ^ (next() & 0x807FFFFFu); /* same exponent: cancellation */
        volatile float x = f(a), y = f(b), z = f(c);
        check("add", a, b, 0, __qg_fadd(a, b), u(x + y));
        check("sub", a, b, 0, __qg_fsub(a, b), u(x - y));
        check("mul", a, b, 0, __qg_fmul(a, b), u(x * y));
        check("div", a, b, 0, __qg_fdiv(a, b), u(x / y));
        check("sqrt", a, 0, 0, __qg_fsqrt(a), u(sqrtf(x)));
        check("fma", a, b, c, __qg_fma(a, b, c), u(fmaf(x, y, z)));
        if (i % 2 == 0) { /* product near -c: cancellation in fma */
            volatile float p = x * y; uint32_t c2 = u(-p) ^ (next() & 3); volatile float z2 = f(c2);
            check("fma", a, b, c2, __qg_fma(a, b, c2), u(fmaf(x, y, z2)));
        }
        check("f2i", a, 0, 0, __qg_f2i(a), ref_f2i(x));
        check("f2u", a, 0, 0, __qg_f2u(a), ref_f2u(x));
        check("i2f", a, 0, 0, __qg_i2f(a), u((float)(int32_t)a));
        check("u2f", a, 0, 0, __qg_u2f(a), u((float)a));
        check("lt", a, b, 0, __qg_flt(a, b), x < y);
        check("le", a, b, 0, __qg_fle(a, b), x <= y);
        check("eq", a, b, 0, __qg_feq(a, b), x == y);
        check("min", a, b, 0, __qg_fmin(a, b), ref_min(a, b));
        check("max", a, b, 0, __qg_fmax(a, b), ref_max(a, b));
    }
    if (!bad) printf("ok %ld\n", n);
    return bad;
}
