/* Host build of the math library (src/qgcc/frontend/mathlib.cu), for tests/mathref.py.
 *
 * Compiled with `-O2 -ffp-contract=off -fno-fast-math`: float arithmetic is
 * then IEEE binary32 with one rounding per operation, exactly what the
 * soft-float routines compute, so this build returns the same bits as the
 * kernel qgcc compiles from the same text (a test checks that on the
 * emulator), at native speed.  The shim defines the CUDA spellings away.
 */
#include <math.h>
#include <string.h>

#define __device__ static
static float __uint_as_float(unsigned u) { float f; memcpy(&f, &u, 4); return f; }
static unsigned __float_as_uint(float f) { unsigned u; memcpy(&u, &f, 4); return u; }

#include "../../src/qgcc/frontend/softfloat.cu"
#include "../../src/qgcc/frontend/mathlib.cu"

/* out[i] = f(x[i], y[i]) (bit patterns); iout[i] = the int result or out-parameter. */
void qgm_eval(const char *name, const float *x, const float *y, const int *n_in, float *out, int *iout, int n) {
    for (int i = 0; i < n; i++) {
        float a = x[i], b = y[i], r = 0.0f, r2 = 0.0f;
        int k = 0;
#define F1(N) if (!strcmp(name, #N)) r = __qgm_##N(a); else
#define F2(N) if (!strcmp(name, #N)) r = __qgm_##N(a, b); else
#define I1(N) if (!strcmp(name, #N)) k = __qgm_##N(a); else
#define C1(N, CALL) if (!strcmp(name, #N)) r = CALL; else
        F1(floorf) F1(ceilf) F1(truncf) F1(roundf) F1(rintf) F1(rsqrtf) F1(cbrtf) F1(saturatef)
        F1(expm1f) F1(log1pf) F1(atanf) F1(tanhf)
        F2(copysignf) F2(fdimf) F2(hypotf) F2(atan2f) F2(powf)
        I1(isnan) I1(isinf) I1(isfinite) I1(signbit)
        /* the routines and constant arguments of sema.MATH_FUNCS */
        C1(expf, __qgm_expk(a, 0, 0)) C1(exp2f, __qgm_expk(a, 0, 1)) C1(exp10f, __qgm_expk(a, 0, 2))
        C1(logf, __qgm_logk(a, 0.0f, 0)) C1(log2f, __qgm_logk(a, 0.0f, 1)) C1(log10f, __qgm_logk(a, 0.0f, 2))
        C1(sinf, __qgm_trig(a, 0)) C1(cosf, __qgm_trig(a, 1)) C1(tanf, __qgm_trig(a, 2))
        C1(asinf, __qgm_asincos(a, 0)) C1(acosf, __qgm_asincos(a, 1))
        C1(sinhf, __qgm_sinhcosh(a, 0)) C1(coshf, __qgm_sinhcosh(a, 1))
        C1(fmodf, __qgm_fmodrem(a, b, 0)) C1(remainderf, __qgm_fmodrem(a, b, 1))
        C1(ldexpf, __qgm_ldexp(a, n_in[i]))
        if (!strcmp(name, "frexpf")) r = __qgm_frexpf(a, &k);
        else if (!strcmp(name, "sincosf")) __qgm_sincosf(a, &r, &r2);
        else return;
        out[i] = r;
        out[n + i] = r2;
        iout[i] = k;
    }
}
