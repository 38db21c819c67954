/* One network step of the compiled Qwen3.5 layers, in C: the stock decoder-layer math
 * (RMSNorm, projections, conv tap, SiLU, L2 norm, gated delta rule, gated RMSNorm, SwiGLU
 * MLP) evaluated through its nonzero weights.
 *
 * Why this equals transformers' numbers bit for bit (docs/engines.md):
 *  - every sublayer input is exactly +-8 in every dimension, so RMSNorm (weight 0, checked
 *    at load) yields exactly +-1;
 *  - every projection row is integer-valued or has a single term, and its sum of absolute
 *    weights is below 2^24 (checked at load), so every partial sum in any order is exact;
 *  - every SiLU/sigmoid argument is 0, >= 17 or <= -89, where the function is exactly the
 *    identity, 0 or 1 whatever library computes it;
 *  - keys and queries are one-hot with a power-of-two entry (L2 norm exactly 1.0), and a
 *    read's mean square is a power of four (its rsqrt is exact).
 * The kernel checks the runtime premises as it goes and returns a nonzero code the moment
 * one fails, so it can never silently differ from the stock path.
 *
 * With inputs exactly +-1, a row's pre-activation is its value at a reference sign vector
 * s0 (the `one` dimension at +1, every other at -1) plus twice the weights of the
 * columns that differ from s0 (about 5% of them): the same exact integer, far fewer terms.
 * s0 is passed as sign bits (1 for -1).
 *
 * Built with -ffp-contract=off (no fused multiply-adds) and without -ffast-math.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#define HIDDEN 2048
#define HD 128
#define EPS 1e-6f

/* A projection by columns: entries of column j are ptr[j]..ptr[j+1]; `base` is each row's
 * value at s0 and `val2` the change when column j flips (-2 * w * s0[j]). */
typedef struct { int32_t rows; const int32_t *ptr, *row; const float *val2, *base; } signcols;
/* A projection by columns whose input is a general vector (down_proj, out_proj). */
typedef struct { int32_t cols; const int32_t *ptr, *row; const float *val; } cols_t;

typedef struct {
    int32_t nheads;          /* DeltaNet heads in use (a prefix of the 16) */
    signcols mix;            /* rows: q | k | v | z (nheads*128 each) | b (nheads) */
    const float *gnorm;      /* 128 */
    cols_t out;              /* out_proj: columns head*128+e -> residual rows */
    int32_t units;
    signcols mlp;            /* rows: gate (units) | up (units) */
    cols_t down;             /* columns = units -> residual rows */
    float *state;            /* 16 x 128 x 128 recurrent state */
    float *scratch;          /* >= max(4*nheads*128 + nheads, 2*units) floats */
} layer_t;

enum { OK = 0, NOT_PM8 = 1, INEXACT_ACT = 2, NOT_ONE_HOT = 3, INEXACT_NORM = 4 };

/* SiLU where it is exact: identity for x >= 17 (1 + e^-x rounds to 1), -0 for x <= -89
 * (e^-x overflows), and 0 at 0.  *bad is set for any other argument. */
static inline float silu_exact(float x, int *bad) {
    if (x >= 17.0f) return x;
    if (x <= -89.0f) return -0.0f;
    if (x == 0.0f) return x / 2.0f;
    *bad = 1;
    return 0.0f;
}

static inline float sigmoid_exact(float x, int *bad) {
    if (x >= 17.0f) return 1.0f;
    if (x <= -89.0f) return 0.0f;
    if (x == 0.0f) return 0.5f;
    *bad = 1;
    return 0.0f;
}

static int is_pow2(float a) {
    int e;
    float m = frexpf(fabsf(a), &e);
    return a != 0.0f && m == 0.5f;
}

static int is_pow4(float a) {
    int e;
    float m = frexpf(a, &e);
    return a > 0.0f && m == 0.5f && ((e - 1) % 2 == 0);
}

/* Columns whose sign differs from s0; -1 if some entry is not exactly +-8.  Branch-free:
 * +-8 is the bit pattern 0x41000000 with either sign bit. */
static int flipped(const float *h, const uint32_t *s0sign, int32_t *diff) {
    const uint32_t *b = (const uint32_t *)h;
    uint32_t bad = 0;
    for (int i = 0; i < HIDDEN; i++) bad |= (b[i] & 0x7fffffffu) ^ 0x41000000u;
    if (bad) return -1;
    int n = 0;
    for (int i = 0; i < HIDDEN; i++) {
        diff[n] = i;
        n += (int)((b[i] >> 31) ^ s0sign[i]);
    }
    return n;
}

static void project(const signcols *m, const int32_t *diff, int nd, float *acc) {
    memcpy(acc, m->base, sizeof(float) * (size_t)m->rows);
    for (int t = 0; t < nd; t++) {
        int j = diff[t];
        for (int p = m->ptr[j]; p < m->ptr[j + 1]; p++) acc[m->row[p]] += m->val2[p];
    }
}

static inline void scatter(const cols_t *m, int col, float x, float *acc) {
    for (int p = m->ptr[col]; p < m->ptr[col + 1]; p++) acc[m->row[p]] += m->val[p] * x;
}

/* L2 norm of a one-hot head: returns the hot index (-1: all zero, -2: not one-hot) and
 * its normalised value (exactly 1.0 for a power-of-two entry). */
static int one_hot(const float *pre, int *bad, float *value) {
    int hot = -1, count = 0, inexact = 0;
    for (int e = 0; e < HD; e++) {
        float x = pre[e];
        count += x >= 17.0f;
        inexact |= !(x >= 17.0f || x <= -89.0f || x == 0.0f);
    }
    if (inexact) {
        *bad = 1;
        return -1;
    }
    if (count == 0) return -1;
    if (count > 1) return -2;
    for (int e = 0; e < HD; e++)
        if (pre[e] >= 17.0f) hot = e;
    float a = pre[hot];  /* silu(a) == a here */
    if (!is_pow2(a)) return -2;
    *value = a * (1.0f / sqrtf(a * a + EPS));
    return hot;
}

static int mixer(const layer_t *L, float *h, const uint32_t *s0, int32_t *diff, float *hacc) {
    int nh = L->nheads, span = nh * HD, bad = 0;
    if (!nh) return OK;
    int nd = flipped(h, s0, diff);
    if (nd < 0) return NOT_PM8;
    float *acc = L->scratch;
    project(&L->mix, diff, nd, acc);
    const float qscale = (float)sqrt((double)HD);
    memset(hacc, 0, sizeof(float) * HIDDEN);
    int any = 0;
    for (int hh = 0; hh < nh; hh++) {
        const float *qp = acc + hh * HD, *kp = acc + span + hh * HD, *vp = acc + 2 * span + hh * HD;
        const float *zp = acc + 3 * span + hh * HD;
        float beta = sigmoid_exact(acc[4 * span + hh], &bad);
        float qv = 0.0f, kv = 0.0f;
        int qh = one_hot(qp, &bad, &qv), kh = one_hot(kp, &bad, &kv);
        if (qh == -2 || kh == -2) return NOT_ONE_HOT;
        float *S = L->state + (size_t)hh * HD * HD;
        /* Decay exactly 1 (checked at load).  A one-hot key reads and rewrites one row:
         * every other row gets S + 0 * delta == S. */
        if (kh >= 0) {
            float *row = S + (size_t)kh * HD;
            for (int e = 0; e < HD; e++) {
                float v = silu_exact(vp[e], &bad);
                float delta = (v - row[e] * kv) * beta;
                row[e] = row[e] + kv * delta;
            }
        }
        if (qh < 0) continue;  /* o == 0: the head adds exactly nothing */
        float q = qv / qscale, o[HD], ss = 0.0f;
        for (int e = 0; e < HD; e++) {
            o[e] = S[(size_t)qh * HD + e] * q;
            ss += o[e] * o[e];
        }
        float var = ss / (float)HD + EPS;
        if (ss == 0.0f) continue;
        if (!is_pow4(var)) return INEXACT_NORM;
        float r = 1.0f / sqrtf(var);
        for (int e = 0; e < HD; e++) {
            float y = ((o[e] * r) * L->gnorm[e]) * silu_exact(zp[e], &bad);
            if (y != 0.0f) {
                scatter(&L->out, hh * HD + e, y, hacc);
                any = 1;
            }
        }
    }
    if (bad) return INEXACT_ACT;
    if (any)
        for (int d = 0; d < HIDDEN; d++) h[d] = h[d] + hacc[d];
    return OK;
}

static int mlp(const layer_t *L, float *h, const uint32_t *s0, int32_t *diff, float *hacc) {
    int nd = flipped(h, s0, diff), bad = 0, U = L->units;
    if (nd < 0) return NOT_PM8;
    float *acc = L->scratch;
    project(&L->mlp, diff, nd, acc);
    memset(hacc, 0, sizeof(float) * HIDDEN);
    for (int u = 0; u < U; u++) {
        float g = silu_exact(acc[u], &bad);
        if (g != 0.0f) scatter(&L->down, u, g * acc[U + u], hacc);
    }
    if (bad) return INEXACT_ACT;
    for (int d = 0; d < HIDDEN; d++) h[d] = h[d] + hacc[d];
    return OK;
}

/* One step through all layers, h updated in place.  Returns 0, or 100 * (layer + 1) + code. */
int qg_step(const layer_t *layers, int32_t nlayers, const uint32_t *s0, float *h) {
    int32_t diff[HIDDEN];
    float hacc[HIDDEN];
    for (int i = 0; i < nlayers; i++) {
        int rc;
        if ((rc = mixer(&layers[i], h, s0, diff, hacc))) return 100 * (i + 1) + rc;
        if ((rc = mlp(&layers[i], h, s0, diff, hacc))) return 100 * (i + 1) + rc;
    }
    return flipped(h, s0, diff) < 0 ? 100 * (nlayers + 1) + NOT_PM8 : OK;
}

int qg_size_of_layer(void) { return (int)sizeof(layer_t); }
