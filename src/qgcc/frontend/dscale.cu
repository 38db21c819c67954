/* frexp, ldexp and scalbn on double: exact, by taking the bit pattern apart (the exponent
 * field and the significand) rather than by arithmetic, so no step rounds except ldexp's
 * one rounding when the result is subnormal (to nearest even, through __qg_dpack).
 *
 * C's cases: frexp(+-0) is +-0 with exponent 0; frexp of a subnormal normalizes it first
 * (the result is in [0.5, 1) like any other); frexp of an infinity returns it with exponent
 * 0 (the exponent is unspecified in C; glibc and CUDA store 0).  ldexp of +-0 or an infinity
 * is itself; ldexp overflows to an infinity and underflows to a (signed) zero.  A NaN gives
 * the canonical NaN, as every double routine here (double.cu).  Valid C++ as well:
 * tests/test_published_frexp.py compiles it with g++ against the host's frexp and ldexp.
 */

__device__ unsigned long long __qg_dfrexp(unsigned long long a, int *ep) {
    if (__qg_dnan(a) != 0ull) {
        *ep = 0;
        return 0x7FFFFFFFFFFFFFFFull;
    }
    if (((a >> 52) & 0x7FFull) == 0x7FFull || (a << 1) == 0ull) {
        *ep = 0;
        return a;  /* +-0, +-inf */
    }
    /* a = sig * 2^(e - 1075), sig's leading 1 at bit 52: the fraction sig * 2^-53 is in [0.5, 1) */
    *ep = __qg_dexp(a) - 1022;
    return (a & 0x8000000000000000ull) | 0x3FE0000000000000ull | (__qg_dsig(a) & 0xFFFFFFFFFFFFFull);
}

__device__ unsigned long long __qg_dldexp(unsigned long long a, int n) {
    if (__qg_dnan(a) != 0ull)
        return 0x7FFFFFFFFFFFFFFFull;
    if (((a >> 52) & 0x7FFull) == 0x7FFull || (a << 1) == 0ull)
        return a;
    /* past +-2200 every finite nonzero a overflows or underflows the same way: no int overflow */
    if (n > 2200)
        n = 2200;
    if (n < -2200)
        n = -2200;
    return __qg_dpack(a & 0x8000000000000000ull, __qg_dexp(a) + n, __qg_dsig(a) << 10);
}
