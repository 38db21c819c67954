"""The oracle: generated kernels compiled by g++ as C++, many programs to one binary.

tests/gxx.py runs a kernel's threads one after another, which is right only when threads do
not communicate.  Here every CUDA thread is a coroutine (ucontext): `__syncthreads()` parks a
thread until every live thread of the block is parked, and a warp operation parks it until the
four lanes of its warp have deposited their values (warp size 4, the machine's), so shared
memory, barriers, shuffles and votes get CUDA's meaning.  Each program runs twice, scheduling
threads in increasing and in decreasing order between synchronisations; a difference between
the two runs is a data race in the generated program (a generator bug, not a compiler bug).

The built-ins are defined here with CUDA's semantics (fminf orders -0 below +0, abs(INT_MIN)
wraps, __saturatef(NaN) is 0, ...), so no system math header is included; IEEE operations are
GCC's builtins, compiled with -ffp-contract=off, -frounding-math and without fast-math, on SSE (binary32 and
binary64, one rounding per operation, subnormals kept).  Signed overflow wraps (-fwrapv), the
documented qgcc rule.

Many programs go into one translation unit (a namespace each) and one binary, because g++
invocations dominate the cost otherwise.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from diffgen import DTYPE, Program

# -frounding-math: without it GCC 12 folds `0.0f - (float)i` into `-(float)i` even at -O0,
# which is -0 for i == 0 where IEEE (and CUDA, and qgcc) give +0 (fuzz seed 1201850).
GXX_FLAGS = ["-std=c++20", "-O0", "-fwrapv", "-ffp-contract=off", "-frounding-math", "-fno-strict-aliasing", "-w"]

SHIM = r"""
#include <cstdio>
#include <cstring>
#include <type_traits>
#include <ucontext.h>

struct qg_dim3 { unsigned x, y, z; };
enum { QG_READY, QG_BAR, QG_WARP, QG_DONE };
struct qg_thread { ucontext_t ctx; qg_dim3 tid; int state, lane, warp; unsigned long long xch; };
static qg_dim3 blockIdx, blockDim, gridDim;
static qg_thread qg_threads[256];
static qg_thread *qg_cur;
static int qg_nthreads;
static ucontext_t qg_sched;
static char qg_stacks[256][1 << 16];
static void (*qg_body)();
#define threadIdx (qg_cur->tid)
#define warpSize 4
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __restrict__
#define __shared__ static
#define __constant__

static void qg_yield(int st) { qg_cur->state = st; swapcontext(&qg_cur->ctx, &qg_sched); }
static void __syncthreads() { qg_yield(QG_BAR); }
static void __syncwarp(unsigned = 0xffffffffu) {}
static void qg_start() { qg_body(); qg_cur->state = QG_DONE; }

// Runs one block; 0, or -1 when the threads cannot all proceed (a divergent barrier or warp operation).
static int qg_run_block(int reverse) {
    int n = qg_nthreads;
    for (int i = 0; i < n; i++) {
        qg_thread &t = qg_threads[i];
        getcontext(&t.ctx);
        t.ctx.uc_stack.ss_sp = qg_stacks[i];
        t.ctx.uc_stack.ss_size = sizeof qg_stacks[i];
        t.ctx.uc_link = &qg_sched;
        makecontext(&t.ctx, qg_start, 0);
        t.state = QG_READY; t.lane = i % 4; t.warp = i / 4;
        t.tid = {(unsigned)(i % blockDim.x), (unsigned)(i / blockDim.x % blockDim.y), (unsigned)(i / (blockDim.x * blockDim.y))};
    }
    for (;;) {
        for (int k = 0; k < n; k++) {
            qg_thread *t = &qg_threads[reverse ? n - 1 - k : k];
            if (t->state == QG_READY) { qg_cur = t; swapcontext(&qg_sched, &t->ctx); }
        }
        bool done = true, released = false;
        for (int w = 0; w * 4 < n; w++) {
            int live = 0, waiting = 0;
            for (int i = w * 4; i < n && i < w * 4 + 4; i++)
                if (qg_threads[i].state != QG_DONE) { live++; waiting += qg_threads[i].state == QG_WARP; }
            if (live) done = false;
            if (live && waiting == live) {
                released = true;
                for (int i = w * 4; i < n && i < w * 4 + 4; i++) if (qg_threads[i].state == QG_WARP) qg_threads[i].state = QG_READY;
            }
        }
        if (done) return 0;
        if (released) continue;
        for (int i = 0; i < n; i++)
            if (qg_threads[i].state != QG_DONE && qg_threads[i].state != QG_BAR) return -1;
        for (int i = 0; i < n; i++) if (qg_threads[i].state == QG_BAR) qg_threads[i].state = QG_READY;
    }
}

template <class T> static unsigned long long qg_bits(T v) { unsigned long long b = 0; memcpy(&b, &v, sizeof v); return b; }
template <class T> static T qg_from(unsigned long long b) { T v; memcpy(&v, &b, sizeof v); return v; }
static qg_thread *qg_lane(int lane) {
    int i = qg_cur->warp * 4 + lane;
    return i < qg_nthreads && qg_threads[i].state != QG_DONE ? &qg_threads[i] : nullptr;
}
static void qg_deposit(unsigned long long v) { qg_cur->xch = v; qg_yield(QG_WARP); }
static void qg_collected() { qg_yield(QG_WARP); }

// docs/qsass.md section 4: b = src mod 4; the source lane, and whether it is in range
template <class T> static T qg_shfl(int mode, T v, unsigned src, int width) {
    int w = width >= 4 ? 4 : width >= 2 ? 2 : 1;
    qg_deposit(qg_bits(v));
    int l = qg_cur->lane, base = l - l % w, b = (int)(src % 4u), j = 0;
    bool ok = true;
    if (mode == 0) j = base + b % w;
    else if (mode == 1) { j = l - b; ok = j >= base; }
    else if (mode == 2) { j = l + b; ok = j < base + w; }
    else { j = l ^ b; ok = j < base + w; }
    qg_thread *s = ok ? qg_lane(j) : nullptr;
    unsigned long long r = s ? s->xch : qg_cur->xch;
    qg_collected();
    return qg_from<T>(r);
}
template <class T> static T __shfl_sync(unsigned, T v, int src, int width = 4) { return qg_shfl<T>(0, v, (unsigned)src, width); }
template <class T> static T __shfl_up_sync(unsigned, T v, unsigned d, int width = 4) { return qg_shfl<T>(1, v, d, width); }
template <class T> static T __shfl_down_sync(unsigned, T v, unsigned d, int width = 4) { return qg_shfl<T>(2, v, d, width); }
template <class T> static T __shfl_xor_sync(unsigned, T v, int m, int width = 4) { return qg_shfl<T>(3, v, (unsigned)m, width); }

static unsigned qg_vote(unsigned long long v, unsigned *active, unsigned long long *vals) {
    qg_deposit(v);
    unsigned a = 0;
    for (int l = 0; l < 4; l++) { qg_thread *t = qg_lane(l); if (t) { a |= 1u << l; vals[l] = t->xch; } }
    qg_collected();
    *active = a;
    return a;
}
static unsigned __ballot_sync(unsigned, int p) {
    unsigned a; unsigned long long v[4]; qg_vote(p != 0, &a, v); unsigned m = 0;
    for (int l = 0; l < 4; l++) if ((a >> l & 1) && v[l]) m |= 1u << l;
    return m;
}
static int __any_sync(unsigned m, int p) { return __ballot_sync(m, p) != 0; }
static int __all_sync(unsigned m, int p) { unsigned a; unsigned long long v[4]; qg_vote(p != 0, &a, v);
    for (int l = 0; l < 4; l++) if ((a >> l & 1) && !v[l]) return 0; return 1; }
static unsigned __activemask() { unsigned a; unsigned long long v[4]; return qg_vote(0, &a, v); }
template <class T> static unsigned __match_any_sync(unsigned, T x) {
    unsigned a; unsigned long long v[4]; qg_vote(qg_bits(x), &a, v); unsigned m = 0;
    for (int l = 0; l < 4; l++) if ((a >> l & 1) && v[l] == qg_bits(x)) m |= 1u << l;
    return m;
}
template <class T, class F> static T qg_reduce(T x, F f) {
    unsigned a; unsigned long long v[4]; qg_vote(qg_bits(x), &a, v); bool first = true; T r = 0;
    for (int l = 0; l < 4; l++) if (a >> l & 1) { T y = qg_from<T>(v[l]); r = first ? y : f(r, y); first = false; }
    return r;
}
static int __reduce_add_sync(unsigned, int x) { return qg_reduce<int>(x, [](int a, int b) { return a + b; }); }
static unsigned __reduce_add_sync(unsigned, unsigned x) { return qg_reduce<unsigned>(x, [](unsigned a, unsigned b) { return a + b; }); }
static int __reduce_min_sync(unsigned, int x) { return qg_reduce<int>(x, [](int a, int b) { return a < b ? a : b; }); }
static unsigned __reduce_min_sync(unsigned, unsigned x) { return qg_reduce<unsigned>(x, [](unsigned a, unsigned b) { return a < b ? a : b; }); }
static int __reduce_max_sync(unsigned, int x) { return qg_reduce<int>(x, [](int a, int b) { return a > b ? a : b; }); }
static unsigned __reduce_max_sync(unsigned, unsigned x) { return qg_reduce<unsigned>(x, [](unsigned a, unsigned b) { return a > b ? a : b; }); }
static unsigned __reduce_and_sync(unsigned, unsigned x) { return qg_reduce<unsigned>(x, [](unsigned a, unsigned b) { return a & b; }); }
static unsigned __reduce_or_sync(unsigned, unsigned x) { return qg_reduce<unsigned>(x, [](unsigned a, unsigned b) { return a | b; }); }
static unsigned __reduce_xor_sync(unsigned, unsigned x) { return qg_reduce<unsigned>(x, [](unsigned a, unsigned b) { return a ^ b; }); }

// atomics (one thread runs at a time, so plain read-modify-write is atomic)
template <class T> static T atomicAdd(T *p, T v) { T o = *p; *p = o + v; return o; }
template <class T> static T atomicSub(T *p, T v) { T o = *p; *p = o - v; return o; }
template <class T> static T atomicAnd(T *p, T v) { T o = *p; *p = o & v; return o; }
template <class T> static T atomicOr(T *p, T v) { T o = *p; *p = o | v; return o; }
template <class T> static T atomicXor(T *p, T v) { T o = *p; *p = o ^ v; return o; }
template <class T> static T atomicMin(T *p, T v) { T o = *p; *p = v < o ? v : o; return o; }
template <class T> static T atomicMax(T *p, T v) { T o = *p; *p = v > o ? v : o; return o; }
template <class T> static T atomicExch(T *p, T v) { T o = *p; *p = v; return o; }
template <class T> static T atomicCAS(T *p, T cmp, T v) { T o = *p; *p = o == cmp ? v : o; return o; }
static unsigned atomicInc(unsigned *p, unsigned v) { unsigned o = *p; *p = o >= v ? 0 : o + 1; return o; }
static unsigned atomicDec(unsigned *p, unsigned v) { unsigned o = *p; *p = (o == 0 || o > v) ? v : o - 1; return o; }

// float and double: IEEE builtins, CUDA's min/max and saturate
static inline int isnan(float x) { return __builtin_isnan(x); }
static inline int isnan(double x) { return __builtin_isnan(x); }
static inline int isinf(float x) { return __builtin_isinf(x) != 0; }
static inline int isinf(double x) { return __builtin_isinf(x) != 0; }
static inline int isfinite(float x) { return __builtin_isfinite(x); }
static inline int isfinite(double x) { return __builtin_isfinite(x); }
static inline int signbit(float x) { return __builtin_signbit(x) != 0; }
static inline int signbit(double x) { return __builtin_signbit(x) != 0; }
template <class T> static inline T qg_fmin(T a, T b) {
    if (a != a) return b != b ? a + b : b; if (b != b) return a;
    if (a == b) return __builtin_signbit(a) ? a : b; return a < b ? a : b; }
template <class T> static inline T qg_fmax(T a, T b) {
    if (a != a) return b != b ? a + b : b; if (b != b) return a;
    if (a == b) return __builtin_signbit(a) ? b : a; return a > b ? a : b; }
static inline float fminf(float a, float b) { return qg_fmin(a, b); }
static inline float fmaxf(float a, float b) { return qg_fmax(a, b); }
static inline double fmin(double a, double b) { return qg_fmin(a, b); }
static inline double fmax(double a, double b) { return qg_fmax(a, b); }
static inline float sqrtf(float x) { return __builtin_sqrtf(x); }
static inline double sqrt(double x) { return __builtin_sqrt(x); }
static inline float fmaf(float a, float b, float c) { return __builtin_fmaf(a, b, c); }
static inline float __fmaf_rn(float a, float b, float c) { return __builtin_fmaf(a, b, c); }
static inline float __fdiv_rn(float a, float b) { return a / b; }
static inline float __fadd_rn(float a, float b) { return a + b; }
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline float fabsf(float x) { return __builtin_fabsf(x); }
static inline double fabs(double x) { return __builtin_fabs(x); }
static inline float floorf(float x) { return __builtin_floorf(x); }
static inline float ceilf(float x) { return __builtin_ceilf(x); }
static inline float truncf(float x) { return __builtin_truncf(x); }
static inline float roundf(float x) { return __builtin_roundf(x); }
static inline float rintf(float x) { return __builtin_rintf(x); }
static inline float nearbyintf(float x) { return __builtin_nearbyintf(x); }
static inline double floor(double x) { return __builtin_floor(x); }
static inline double ceil(double x) { return __builtin_ceil(x); }
static inline double trunc(double x) { return __builtin_trunc(x); }
static inline double round(double x) { return __builtin_round(x); }
static inline float copysignf(float a, float b) { return __builtin_copysignf(a, b); }
static inline float fdimf(float a, float b) { return __builtin_fdimf(a, b); }
static inline float fmodf(float a, float b) { return __builtin_fmodf(a, b); }
static inline float remainderf(float a, float b) { return __builtin_remainderf(a, b); }
static inline float ldexpf(float a, int e) { return __builtin_ldexpf(a, e); }
static inline float __saturatef(float x) { return x != x ? 0.0f : x >= 1.0f ? 1.0f : x <= 0.0f ? 0.0f : x; }
static inline float __int_as_float(int i) { return qg_from<float>((unsigned)i); }
static inline float __uint_as_float(unsigned i) { return qg_from<float>(i); }
static inline unsigned __float_as_uint(float f) { return (unsigned)qg_bits(f); }
static inline int __float_as_int(float f) { return (int)(unsigned)qg_bits(f); }
static inline double __longlong_as_double(long long i) { return qg_from<double>((unsigned long long)i); }
static inline long long __double_as_longlong(double d) { return (long long)qg_bits(d); }

// integer built-ins with CUDA's definitions
template <class A, class B> static inline auto min(A a, B b) {
    using C = decltype(a + b);
    if constexpr (std::is_floating_point_v<C>) return qg_fmin<C>(a, b); else return (C)a < (C)b ? (C)a : (C)b; }
template <class A, class B> static inline auto max(A a, B b) {
    using C = decltype(a + b);
    if constexpr (std::is_floating_point_v<C>) return qg_fmax<C>(a, b); else return (C)a > (C)b ? (C)a : (C)b; }
static inline int abs(int x) { return x < 0 ? -x : x; }
static inline long long abs(long long x) { return x < 0 ? -x : x; }
static inline long long llabs(long long x) { return x < 0 ? -x : x; }
static inline long long llmin(long long a, long long b) { return a < b ? a : b; }
static inline long long llmax(long long a, long long b) { return a > b ? a : b; }
static inline unsigned long long ullmin(unsigned long long a, unsigned long long b) { return a < b ? a : b; }
static inline unsigned long long ullmax(unsigned long long a, unsigned long long b) { return a > b ? a : b; }
static inline int __popc(unsigned x) { return __builtin_popcount(x); }
static inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
static inline int __clz(int x) { return x ? __builtin_clz((unsigned)x) : 32; }
static inline int __clzll(long long x) { return x ? __builtin_clzll((unsigned long long)x) : 64; }
static inline int __ffs(int x) { return __builtin_ffs(x); }
static inline int __ffsll(long long x) { return __builtin_ffsll(x); }
static inline unsigned __brev(unsigned x) { unsigned r = 0; for (int i = 0; i < 32; i++) r |= ((x >> i) & 1u) << (31 - i); return r; }
static inline unsigned long long __brevll(unsigned long long x) { unsigned long long r = 0; for (int i = 0; i < 64; i++) r |= ((x >> i) & 1ull) << (63 - i); return r; }
static inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
    unsigned long long b = (unsigned long long)y << 32 | x; unsigned r = 0;
    for (int k = 0; k < 4; k++) r |= (unsigned)((b >> (8 * ((s >> (4 * k)) & 7))) & 0xff) << (8 * k);
    return r; }
static inline int __mulhi(int a, int b) { return (int)(((long long)a * b) >> 32); }
static inline unsigned __umulhi(unsigned a, unsigned b) { return (unsigned)(((unsigned long long)a * b) >> 32); }
static inline long long __mul64hi(long long a, long long b) { return (long long)(((__int128)a * b) >> 64); }
static inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) { return (unsigned long long)(((unsigned __int128)a * b) >> 64); }
static inline int __mul24(int a, int b) { int x = (int)((unsigned)a << 8) >> 8, y = (int)((unsigned)b << 8) >> 8; return (int)((unsigned)x * (unsigned)y); }
static inline unsigned __umul24(unsigned a, unsigned b) { return (a & 0xffffffu) * (b & 0xffffffu); }
static inline unsigned __sad(int x, int y, unsigned z) { return (unsigned)(x > y ? (long long)x - y : (long long)y - x) + z; }
static inline unsigned __usad(unsigned x, unsigned y, unsigned z) { return (x > y ? x - y : y - x) + z; }

static void qg_dump(const void *p, unsigned long n) { fwrite(p, 1, n, stdout); }

// CUDA's vector types and their make_ functions
#define QG_VEC(B, T) \
    struct B##2 { T x, y; }; struct B##3 { T x, y, z; }; struct B##4 { T x, y, z, w; }; \
    static inline B##2 make_##B##2(T x, T y) { return {x, y}; } \
    static inline B##3 make_##B##3(T x, T y, T z) { return {x, y, z}; } \
    static inline B##4 make_##B##4(T x, T y, T z, T w) { return {x, y, z, w}; }
QG_VEC(int, int) QG_VEC(uint, unsigned) QG_VEC(float, float) QG_VEC(char, signed char) QG_VEC(uchar, unsigned char)
QG_VEC(short, short) QG_VEC(ushort, unsigned short) QG_VEC(double, double)

// memory fences: one memory, one thread at a time
static void __threadfence() {} static void __threadfence_block() {} static void __threadfence_system() {}

// the exactly specified float and double functions that take an exponent (C's, which CUDA's equal
// on finite arguments; the generator keeps infinities and NaN away from frexp, whose exponent
// CUDA leaves unspecified for them)
static inline double frexp(double x, int *e) { return __builtin_frexp(x, e); }
static inline float frexpf(float x, int *e) { return __builtin_frexpf(x, e); }
static inline double ldexp(double x, int e) { return __builtin_ldexp(x, e); }
static inline double scalbn(double x, int e) { return __builtin_scalbn(x, e); }
static inline float scalbnf(float x, int e) { return __builtin_scalbnf(x, e); }
static inline float __fsub_rn(float a, float b) { return a - b; }
static inline float __fsqrt_rn(float x) { return __builtin_sqrtf(x); }
static inline float __frcp_rn(float x) { return 1.0f / x; }
static inline double __dadd_rn(double a, double b) { return a + b; }
static inline double __dsub_rn(double a, double b) { return a - b; }
static inline double __dmul_rn(double a, double b) { return a * b; }
static inline double __ddiv_rn(double a, double b) { return a / b; }
static inline double __dsqrt_rn(double x) { return __builtin_sqrt(x); }

// Cooperative groups: the block, and tiles of N threads (N <= 4: inside a 4-lane warp, through the
// warp operations with width N; N = 8, 16, 32: through a block-wide exchange between two barriers,
// which is the tile's exchange because the generator calls wide-tile operations only where every
// thread of the block does, with the block a multiple of N).  cg::reduce is the butterfly (rank ^ 1,
// ^ 2, ...); the generator reduces only where the order cannot matter.  The published-kernel oracle
// (bench/published_oracle.py) brings its own, wider implementation and defines QG_OWN_CG.
#ifndef QG_OWN_CG
static unsigned qg_lin() { return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z); }
static unsigned qg_bsize() { return blockDim.x * blockDim.y * blockDim.z; }
static unsigned long long qg_slots[256];
template <class T> static T qg_xchg(T v, int src, unsigned n) {
    unsigned lin = qg_lin(), base = lin - lin % n;
    qg_slots[lin] = qg_bits(v);
    __syncthreads();
    T r = v;
    if (src >= 0 && src < (int)n && base + src < qg_bsize()) r = qg_from<T>(qg_slots[base + src]);
    __syncthreads();
    return r;
}
namespace cooperative_groups {
struct thread_block {
    void sync() const { __syncthreads(); }
    unsigned thread_rank() const { return qg_lin(); }
    unsigned size() const { return qg_bsize(); }
    unsigned num_threads() const { return qg_bsize(); }
};
static thread_block this_thread_block() { return {}; }
static void sync(const thread_block &) { __syncthreads(); }
template <unsigned N> struct thread_block_tile {
    void sync() const { if (N > 4) __syncthreads(); }
    unsigned thread_rank() const { return qg_lin() % N; }
    unsigned size() const { return N; }
    unsigned num_threads() const { return N; }
    unsigned meta_group_rank() const { return qg_lin() / N; }
    unsigned meta_group_size() const { return (qg_bsize() + N - 1) / N; }
    template <class T> T shfl(T v, int src) const {
        if (N <= 4) return __shfl_sync(0xffffffffu, v, src, N);
        return qg_xchg<T>(v, (int)((unsigned)src % N), N); }
    template <class T> T shfl_up(T v, unsigned d) const {
        if (N <= 4) return __shfl_up_sync(0xffffffffu, v, d, N);
        return qg_xchg<T>(v, (int)thread_rank() - (int)d, N); }
    template <class T> T shfl_down(T v, unsigned d) const {
        if (N <= 4) return __shfl_down_sync(0xffffffffu, v, d, N);
        return qg_xchg<T>(v, (int)thread_rank() + (int)d, N); }
    template <class T> T shfl_xor(T v, unsigned m) const {
        if (N <= 4) return __shfl_xor_sync(0xffffffffu, v, m, N);
        return qg_xchg<T>(v, (int)(thread_rank() ^ m), N); }
    unsigned ballot(int p) const {
        unsigned m = __ballot_sync(0xffffffffu, p), lane = qg_cur->lane;
        return (m >> (lane - lane % N)) & ((1u << N) - 1u); }
    int any(int p) const { return ballot(p) != 0; }
    int all(int p) const {
        unsigned a = __ballot_sync(0xffffffffu, 1), lane = qg_cur->lane;
        return ballot(p) == ((a >> (lane - lane % N)) & ((1u << N) - 1u)); }
};
template <unsigned N> static thread_block_tile<N> tiled_partition(const thread_block &) { return {}; }
template <unsigned N> static void sync(const thread_block_tile<N> &t) { t.sync(); }
template <class T> struct plus { T operator()(T a, T b) const { return a + b; } };
template <class T> struct less { T operator()(T a, T b) const { return b < a ? b : a; } };
template <class T> struct greater { T operator()(T a, T b) const { return a < b ? b : a; } };
template <unsigned N, class T, class Op> static T reduce(const thread_block_tile<N> &t, T v, Op op) {
    for (unsigned k = 1; k < N; k *= 2) v = op(v, t.shfl_xor(v, k));
    return v;
}
}
#endif
"""


def c_type(b) -> str:
    return b.ctype


def members(b) -> list[tuple[str, str, int]]:
    """The buffer's storage as (field, scalar type, length per element): one entry for a scalar buffer."""
    if b.struct is None:
        return [("", b.ctype, 0)]
    return list(b.struct.members)


def field_bytes(arr: np.ndarray, b, field: str, t: str, k: int) -> bytes:
    """The bytes of one member of every element, in the shim's order (member-major)."""
    a = arr if not field else arr[field]
    return np.ascontiguousarray(a.astype(DTYPE[t], copy=False)).tobytes()


def c_bytes(data: bytes) -> str:
    return '"' + "".join(f"\\x{x:02x}" for x in data) + '"'


def program_unit(idx: int, prog: Program) -> tuple[str, str]:
    """(namespace text, body of the launcher) for one program."""
    ns = f"p{idx}"
    # `extern __shared__ T a[];` is storage sized at launch: here a block's worth of static cells
    source = re.sub(r"extern __shared__ ([\w ]+?) (\w+)\[\];", r"static \1 \2[1024];", prog.source)
    source = re.sub(r"(?m)^#include .*$", "", source)  # the shim declares what the headers would
    lines = [f"namespace {ns} {{", source, "}"]
    for b in prog.buffers:
        ct = f"{ns}::{b.ctype}" if b.struct is not None and not b.struct.builtin else b.ctype
        lines.append(f"static {ct} {ns}_{b.name}[{len(b.data)}];")
    for s in prog.scalars:
        lines.append(f"static {s.ctype} {ns}_{s.name};")
    args = [f"{ns}_{b.name}" for b in prog.buffers] + [f"{ns}_{s.name}" for s in prog.scalars]
    lines.append(f"static void {ns}_body() {{ {ns}::k({', '.join(args)}); }}")
    init = []
    for b in prog.buffers:
        n = len(b.data)
        for field, t, k in members(b):
            raw = field_bytes(b.data, b, field, t, k)
            size = np.dtype(DTYPE[t]).itemsize * max(k, 1)
            dest = f"{ns}_{b.name}[i]" + (f".{field}" if field else "")
            ptr = f"&{dest}[0]" if k else f"&{dest}"
            init.append(f"    {{ static const char d[] = {c_bytes(raw)}; for (int i = 0; i < {n}; i++) "
                        f"memcpy({ptr}, d + i * {size}, {size}); }}")
    for s in prog.scalars:
        raw = np.array([s.value], DTYPE[s.ctype]).tobytes()
        init.append(f"    memcpy(&{ns}_{s.name}, {c_bytes(raw)}, {len(raw)});")
    dump = []
    for b in prog.buffers:
        n = len(b.data)
        for field, t, k in members(b):
            size = np.dtype(DTYPE[t]).itemsize * max(k, 1)
            dest = f"{ns}_{b.name}[i]" + (f".{field}" if field else "")
            ptr = f"&{dest}[0]" if k else f"&{dest}"
            dump.append(f"    for (int i = 0; i < {n}; i++) qg_dump({ptr}, {size});")
    bx, by = prog.block_shape if len(prog.block_shape) == 2 else (prog.block_shape[0], 1)
    lines.append(f"static void {ns}_run(int reverse) {{")
    lines += init
    # __device__ variables keep their values between launches in CUDA; qgcc writes the
    # initialiser before every launch, as this does before each of the two runs
    for name, ct, n, lits in prog.globals:
        ct = f"{ns}::{ct}" if ct in {s.name for s in prog.structs if not s.builtin} else ct
        if n:
            lines.append(f"    {{ static const {ct} qg_i[{n}] = {{{lits}}}; memcpy({ns}::{name}, qg_i, sizeof qg_i); }}")
        else:
            lines.append(f"    {{ static const {ct} qg_i = {{{lits}}}; memcpy(&{ns}::{name}, &qg_i, sizeof qg_i); }}")
    lines.append(f"    int status = 0; gridDim = {{{prog.grid}u, 1u, 1u}}; blockDim = {{{bx}u, {by}u, 1u}};")
    lines.append(f"    qg_nthreads = {bx * by}; qg_body = {ns}_body;")
    lines.append(f"    for (unsigned b = 0; b < {prog.grid}u && !status; b++) {{ blockIdx = {{b, 0u, 0u}}; "
                 f"status = qg_run_block(reverse); }}")
    lines.append("    qg_dump(&status, 4);")
    lines += dump
    lines.append("}")
    return "\n".join(lines), f"{ns}_run(0); {ns}_run(1);"


def output_size(prog: Program) -> int:
    total = 4
    for b in prog.buffers:
        for field, t, k in members(b):
            total += len(b.data) * np.dtype(DTYPE[t]).itemsize * max(k, 1)
    return total


@dataclass
class OracleResult:
    status: str  # "ok", "deadlock", "race", "error"
    outputs: dict | None = None  # buffer -> {field: array}
    detail: str = ""


def parse(prog: Program, blob: bytes) -> tuple[int, dict]:
    status = int.from_bytes(blob[:4], "little", signed=True)
    pos, out = 4, {}
    for b in prog.buffers:
        fields = {}
        for field, t, k in members(b):
            n = len(b.data) * max(k, 1)
            size = n * np.dtype(DTYPE[t]).itemsize
            fields[field] = np.frombuffer(blob[pos:pos + size], DTYPE[t]).copy()
            pos += size
        out[b.name] = fields
    return status, out


def same(a: dict, b: dict) -> bool:
    return all(equal_bits(a[n][f], b[n][f]) for n in a for f in a[n])


def equal_bits(x: np.ndarray, y: np.ndarray) -> bool:
    """Bit for bit, except that any NaN equals any NaN (payloads and signs are free in IEEE)."""
    if x.shape != y.shape:
        return False
    if x.dtype.kind == "f":
        bits = np.uint32 if x.itemsize == 4 else np.uint64
        eq = (x.view(bits) == y.view(bits)) | (np.isnan(x) & np.isnan(y))
        return bool(eq.all())
    return bool((x == y).all())


def run_batch(progs: list[Program], workdir: Path | None = None, timeout: float = 120) -> list[OracleResult]:
    """Every program's outputs under g++; one compile for the batch (a failing batch is split)."""
    if not progs:
        return []
    with tempfile.TemporaryDirectory(dir=workdir) as d:
        units, calls = zip(*(program_unit(i, p) for i, p in enumerate(progs)))
        cpp = Path(d) / "batch.cpp"
        cpp.write_text(SHIM + "\n".join(units) + "\nint main() {\n" + "\n".join(calls) + "\nreturn 0;\n}\n")
        exe = Path(d) / "batch"
        c = subprocess.run(["g++", *GXX_FLAGS, "-o", str(exe), str(cpp), "-lm"], capture_output=True, text=True)
        if c.returncode != 0:
            if len(progs) == 1:
                return [OracleResult("error", detail="g++: " + c.stderr[-3000:])]
            half = len(progs) // 2
            return run_batch(progs[:half], workdir, timeout) + run_batch(progs[half:], workdir, timeout)
        try:
            r = subprocess.run([str(exe)], capture_output=True, timeout=timeout)
            ok = r.returncode == 0
            blob = r.stdout
        except subprocess.TimeoutExpired:
            r, ok, blob = None, False, b""
        sizes = [output_size(p) for p in progs]
        if not ok or len(blob) != 2 * sum(sizes):
            if len(progs) == 1:
                return [OracleResult("error", detail="the g++ binary failed (" + ("timeout" if r is None else f"exit {r.returncode}") + ")")]
            half = len(progs) // 2
            return run_batch(progs[:half], workdir, timeout) + run_batch(progs[half:], workdir, timeout)
        results, pos = [], 0
        for p, size in zip(progs, sizes):
            s1, o1 = parse(p, blob[pos:pos + size])
            s2, o2 = parse(p, blob[pos + size:pos + 2 * size])
            pos += 2 * size
            if s1 or s2:
                results.append(OracleResult("deadlock", detail="a barrier or warp operation not reached by all threads"))
            elif not same(o1, o2):
                results.append(OracleResult("race", o1, "the two thread orders disagree"))
            else:
                results.append(OracleResult("ok", o1))
        return results
