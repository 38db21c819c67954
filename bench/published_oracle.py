"""The oracle for published kernels: the kernel file's own text, compiled by g++ and run as CUDA threads.

The thread machinery is bench/fuzz/diffshim.py's (every CUDA thread a coroutine; barriers, warp
operations on 4-lane warps, atomics, CUDA's built-ins with CUDA's semantics).  What published
files add is their surroundings: system and CUDA headers, `dim3`, cooperative groups' block
handle, the float overloads of `sqrt`/`fabs`/... that CUDA's headers declare, `extern __shared__`
arrays.  Stub headers here stand in for those (our own text), so the corpus file is compiled
unchanged except for one textual rewrite: `extern __shared__ T a[];` becomes a block's worth of
static cells (the shim has no per-launch shared memory).

Transcendental functions (expf, sinf, __logf, ...) are not exact operations: CUDA's, glibc's and
qgcc's differ in the last bits.  Two builds exist: `libm="host"` maps them to the host C library
(used only to detect that a kernel depends on them), `libm="qgcc"` maps them to qgcc's own math
library text (src/qgcc/frontend/mathlib.cu, compiled on the host as tests/native/mathlib_host.c
does, and dmath.cu for exp, log, log10, pow, sin, cos and tan on double): results of such kernels
are checked against qgcc's documented reference, which is not an independent model and is
reported apart.
"""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "fuzz"))
ROOT = HERE.parent

from diffshim import GXX_FLAGS, SHIM  # noqa: E402

# The approximate math functions: a kernel calling one of them has libm-dependent outputs.
LIBM = ("expf", "exp2f", "exp10f", "expm1f", "logf", "log2f", "log10f", "log1pf", "sinf", "cosf", "tanf",
        "asinf", "acosf", "atanf", "atan2f", "sinhf", "coshf", "tanhf", "powf", "hypotf", "cbrtf", "rsqrtf",
        "sincosf", "__expf", "__exp10f", "__logf", "__log2f", "__log10f", "__sinf", "__cosf", "__tanf",
        "__powf", "__sincosf", "erff", "erfcf")
# The same functions called with their C++ overload names on a float (CUDA's headers pick the float one).
LIBM_OVERLOADS = ("exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan", "asin", "acos",
                  "atan", "atan2", "sinh", "cosh", "tanh", "pow", "hypot", "cbrt", "rsqrt", "erf", "erfc")
LIBM_RE = re.compile(r"\b(" + "|".join(LIBM + LIBM_OVERLOADS) + r")\s*\(")

# Library headers the additions need, included before the shim's macros (threadIdx, __shared__, ...).
PRELUDE = ("#include <cstdarg>\n#include <unistd.h>\n#include <iosfwd>\n#include <vector>\n"
           "#define QG_OWN_CG 1\n")  # <iosfwd> (std::string), <vector>: host classes (nbody's BodySystem, dwt2d's tester)

EXTRA = r"""
#include <cstdint>
typedef int clock_t;  // docs/subset.md: clock_t is a 32-bit int on this machine
struct dim3 { unsigned x, y, z; dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {} };
typedef unsigned int uint;
typedef unsigned short ushort;
#define __launch_bounds__(...)
#define __align__(n) alignas(n)
#define __noinline__
#define __inline__ inline
#define __CUDACC__ 1
#define __CUDA_ARCH__ 700  // nvcc's device pass defines it; qgcc documents 700 (docs/subset.md)
#define CUDART_VERSION 12000
#define CUDART_PI_F 3.141592654f
static inline long long clock64() { return 0; }
static inline clock_t clock() { return 0; }
template <class T, class U> static T atomicExch(T *p, U v) { T o = *p; *p = v; return o; }
template <class T, class U, class V> static T atomicCAS(T *p, U c, V v) { T o = *p; *p = o == (T)c ? (T)v : o; return o; }
// an operand of another integer type converts to the pointee's (CUDA declares one type per overload)
template <class T, class U> static T atomicAdd(T *p, U v) { return atomicAdd(p, (T)v); }
template <class T, class U> static T atomicSub(T *p, U v) { return atomicSub(p, (T)v); }
template <class T, class U> static T atomicAnd(T *p, U v) { return atomicAnd(p, (T)v); }
template <class T, class U> static T atomicOr(T *p, U v) { return atomicOr(p, (T)v); }
template <class T, class U> static T atomicXor(T *p, U v) { return atomicXor(p, (T)v); }
template <class T, class U> static T atomicMin(T *p, U v) { return atomicMin(p, (T)v); }
template <class T, class U> static T atomicMax(T *p, U v) { return atomicMax(p, (T)v); }
static inline unsigned umin(unsigned a, unsigned b) { return a < b ? a : b; }
static inline unsigned umax(unsigned a, unsigned b) { return a > b ? a : b; }
static inline float __fdividef(float a, float b) { return a / b; }
// CUDA's headers overload the std names on float
static inline float sqrt(float x) { return __builtin_sqrtf(x); }
static inline float fabs(float x) { return __builtin_fabsf(x); }
static inline float floor(float x) { return __builtin_floorf(x); }
static inline float ceil(float x) { return __builtin_ceilf(x); }
static inline float trunc(float x) { return __builtin_truncf(x); }
static inline float round(float x) { return __builtin_roundf(x); }
static inline float fmin(float a, float b) { return fminf(a, b); }
static inline float fmax(float a, float b) { return fmaxf(a, b); }
static inline double fabs(int x) { return __builtin_fabs(x); }
static inline float abs(float x) { return __builtin_fabsf(x); }
static inline double abs(double x) { return __builtin_fabs(x); }
namespace cooperative_groups {
struct thread_block {
    void sync() const { __syncthreads(); }
    unsigned thread_rank() const { return (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x; }
    unsigned size() const { return blockDim.x * blockDim.y * blockDim.z; }
    unsigned num_threads() const { return size(); }
    dim3 group_index() const { return dim3(blockIdx.x, blockIdx.y, blockIdx.z); }
    dim3 thread_index() const { return dim3(threadIdx.x, threadIdx.y, threadIdx.z); }
    dim3 group_dim() const { return dim3(blockDim.x, blockDim.y, blockDim.z); }
};
static inline thread_block this_thread_block() { return thread_block(); }
static inline void sync(const thread_block &) { __syncthreads(); }
// A tile's barrier: the warp's (all live lanes) for tiles of at most 4 threads, the block's for wider
// ones: as strong or stronger than CUDA's, the same when every thread reaches it (else: a deadlock,
// reported).  Shuffles work within a warp only; a wider tile's shuffle stops the run (exit 5), so
// the file's other kernels still run.
template <unsigned N> static inline void qg_narrow_tile() { if (N > 4) { fflush(stdout); _exit(5); } }
template <unsigned N> struct thread_block_tile {
    unsigned thread_rank() const { return thread_block().thread_rank() % N; }
    unsigned size() const { return N; }
    unsigned num_threads() const { return N; }
    unsigned meta_group_rank() const { return thread_block().thread_rank() / N; }
    unsigned meta_group_size() const { return (thread_block().size() + N - 1) / N; }
    void sync() const { if (N > 4) __syncthreads(); else (void)__activemask(); }
    template <class T> T shfl(T v, int src) const { qg_narrow_tile<N>(); return __shfl_sync(0xffffffffu, v, src, N); }
    template <class T> T shfl_down(T v, unsigned d) const { qg_narrow_tile<N>(); return __shfl_down_sync(0xffffffffu, v, d, N); }
    template <class T> T shfl_up(T v, unsigned d) const { qg_narrow_tile<N>(); return __shfl_up_sync(0xffffffffu, v, d, N); }
    template <class T> T shfl_xor(T v, int m) const { qg_narrow_tile<N>(); return __shfl_xor_sync(0xffffffffu, v, m, N); }
};
template <unsigned N> static inline thread_block_tile<N> tiled_partition(const thread_block &) { return {}; }
template <unsigned N> static inline void sync(const thread_block_tile<N> &t) { t.sync(); }
}
namespace cooperative_groups {
// A generic group handle (a device function's parameter): a block's or a tile's, synchronising as they do.
struct thread_group {
    unsigned qg_rank, qg_size; bool qg_block;
    thread_group(const thread_block &b) : qg_rank(b.thread_rank()), qg_size(b.size()), qg_block(true) {}
    template <unsigned N> thread_group(const thread_block_tile<N> &t) : qg_rank(t.thread_rank()), qg_size(N), qg_block(N > 4) {}
    unsigned thread_rank() const { return qg_rank; }
    unsigned size() const { return qg_size; }
    unsigned num_threads() const { return qg_size; }
    void sync() const { if (qg_block) __syncthreads(); else (void)__activemask(); }
};
static inline void sync(const thread_group &g) { g.sync(); }
template <unsigned long N> struct block_tile_memory {};  // scratch for wide tiles: the block's barrier serves here
template <unsigned long N> static inline thread_block this_thread_block(block_tile_memory<N> &) { return thread_block(); }
// The grid: blocks run one after another here, so a grid-wide barrier cannot be kept (exit 3).
struct grid_group {
    unsigned long long block_rank() const { return (blockIdx.z * gridDim.y + blockIdx.y) * (unsigned long long)gridDim.x + blockIdx.x; }
    unsigned long long thread_rank() const { return block_rank() * thread_block().size() + thread_block().thread_rank(); }
    unsigned long long size() const { return (unsigned long long)gridDim.x * gridDim.y * gridDim.z * thread_block().size(); }
    unsigned long long num_threads() const { return size(); }
    bool is_valid() const { return true; }
    void sync() const { fflush(stdout); _exit(3); }
};
static inline grid_group this_grid() { return {}; }
static inline void sync(const grid_group &g) { g.sync(); }
// A coalesced group: lanes of one warp (4 lanes on this machine), ranked by lane among the mask's.
struct coalesced_group {
    unsigned mask;
    unsigned thread_rank() const { return __builtin_popcount(mask & ((1u << qg_cur->lane) - 1)); }
    unsigned size() const { return __builtin_popcount(mask); }
    unsigned num_threads() const { return size(); }
    void sync() const { (void)__activemask(); }
    template <class T> T shfl(T v, unsigned src) const {
        unsigned a; unsigned long long vals[4]; qg_vote(qg_bits(v), &a, vals);
        unsigned k = 0;
        for (int l = 0; l < 4; l++) if (mask >> l & 1) { if (k == src) return qg_from<T>(vals[l]); k++; }
        return v;
    }
    template <class T, class F> T qg_fold(T v, F f) const {  // in rank order
        unsigned a; unsigned long long vals[4]; qg_vote(qg_bits(v), &a, vals);
        bool first = true; T r = v;
        for (int l = 0; l < 4; l++) if (mask >> l & 1) { T y = qg_from<T>(vals[l]); r = first ? y : f(r, y); first = false; }
        return r;
    }
};
static inline coalesced_group coalesced_threads() { return {__activemask()}; }
template <class L> static coalesced_group labeled_partition(const coalesced_group &g, L label) { return {__match_any_sync(g.mask, label) & g.mask}; }
static inline coalesced_group binary_partition(const coalesced_group &g, bool p) { return labeled_partition(g, (int)p); }
template <unsigned N> static coalesced_group binary_partition(const thread_block_tile<N> &, bool p) {
    static_assert(N <= 4, "a partition of a tile wider than the warp");
    return labeled_partition(coalesced_threads(), (int)p);
}
template <unsigned N> static coalesced_group labeled_partition(const thread_block_tile<N> &, int label) {
    static_assert(N <= 4, "a partition of a tile wider than the warp");
    return labeled_partition(coalesced_threads(), label);
}
template <class T> struct plus { T operator()(T a, T b) const { return a + b; } };
template <class T> struct less { T operator()(T a, T b) const { return b < a ? b : a; } };
template <class T> struct greater { T operator()(T a, T b) const { return a < b ? b : a; } };
template <class T> struct bit_and { T operator()(T a, T b) const { return a & b; } };
template <class T> struct bit_or { T operator()(T a, T b) const { return a | b; } };
template <class T> struct bit_xor { T operator()(T a, T b) const { return a ^ b; } };
template <class T, class F> static T reduce(const coalesced_group &g, T v, F f) { return g.qg_fold(v, f); }
template <unsigned N, class T, class F> static T reduce(const thread_block_tile<N> &, T v, F f) {
    static_assert(N <= 4, "cg::reduce over a tile wider than the warp");
    return coalesced_group{__activemask()}.qg_fold(v, f);
}
}
namespace cg = cooperative_groups;
// Host helpers (helper_functions.h) that host-side classes of the samples name, declared only: no kernel calls them.
template <class T, class S> bool compareData(const T *, const T *, unsigned, S, float);
template <class T, class S> bool sdkWriteFile(const char *, const T *, unsigned, S, bool);
// Host types the files' host-side structs name (CUDA by Example's bitmaps, the runtime's handles), declared only.
struct CPUAnimBitmap; struct CPUBitmap; struct GPUAnimBitmap;
typedef struct qg_event_st *cudaEvent_t;
typedef struct qg_stream_st *cudaStream_t;
typedef struct qg_graphics_st *cudaGraphicsResource_t;
enum cudaError_t { cudaSuccess };  // the runtime calls of host-side classes (dwt2d's CudaDWTTester), declared only
const char *cudaGetErrorString(cudaError_t); cudaError_t cudaThreadSynchronize(); cudaError_t cudaEventCreate(cudaEvent_t *);
cudaError_t cudaEventRecord(cudaEvent_t, int); cudaError_t cudaEventSynchronize(cudaEvent_t);
cudaError_t cudaEventElapsedTime(float *, cudaEvent_t, cudaEvent_t); cudaError_t cudaEventDestroy(cudaEvent_t);
namespace std { template <class I> void sort(I, I); }  // (<algorithm> needs the real <cstdlib>, stubbed here)
// Textures, from CUDA's Programming Guide ("Texture Fetching"): point sampling of unnormalised
// coordinates is texel floor(x); the clamp address mode keeps it in 0 .. N-1; tex1Dfetch reads
// linear memory without addressing modes and returns zero outside it.  The host binds the data.
enum cudaTextureReadMode { cudaReadModeElementType, cudaReadModeNormalizedFloat };
enum cudaTextureFilterMode { cudaFilterModePoint, cudaFilterModeLinear };
enum cudaTextureAddressMode { cudaAddressModeWrap, cudaAddressModeClamp, cudaAddressModeMirror, cudaAddressModeBorder };
template <class T, int D = 1, int M = cudaReadModeElementType> struct texture {
    const T *qg_data = nullptr; int qg_w = 0, qg_h = 1;
    void qg_bind(const T *d, int w, int h) { qg_data = d; qg_w = w; qg_h = h; }
};
static inline int qg_texel(float x, int n) {
    if (!(x >= 0.0f)) return 0;
    float f = __builtin_floorf(x);
    return f >= (float)(n - 1) ? n - 1 : (int)f;
}
template <class T, int D, int M> static T tex1Dfetch(const texture<T, D, M> &t, int i) { return i >= 0 && i < t.qg_w ? t.qg_data[i] : T{}; }
template <class T, int D, int M> static T tex1D(const texture<T, D, M> &t, float x) { return t.qg_data[qg_texel(x, t.qg_w)]; }
template <class T, int D, int M> static T tex2D(const texture<T, D, M> &t, float x, float y) {
    return t.qg_data[qg_texel(y, t.qg_h) * t.qg_w + qg_texel(x, t.qg_w)];
}
// Texture objects: a handle indexes the launcher's table; the texel type is the fetch's template argument.
typedef unsigned long long cudaTextureObject_t;
struct qg_texobj { const void *data; int w, h; };
static qg_texobj qg_texobjs[8];
template <class T> static T tex1Dfetch(cudaTextureObject_t o, int i) {
    const qg_texobj &t = qg_texobjs[o]; return i >= 0 && i < t.w ? ((const T *)t.data)[i] : T{};
}
template <class T> static T tex1D(cudaTextureObject_t o, float x) { const qg_texobj &t = qg_texobjs[o]; return ((const T *)t.data)[qg_texel(x, t.w)]; }
template <class T> static T tex2D(cudaTextureObject_t o, float x, float y) {
    const qg_texobj &t = qg_texobjs[o]; return ((const T *)t.data)[qg_texel(y, t.h) * t.w + qg_texel(x, t.w)];
}
// Device printf: each call's text kept (CUDA prints after the launch; the order between threads is open).
static char qg_printed[1 << 20];  // the calls' texts, each after its length (4 bytes)
static unsigned qg_printed_len, qg_printed_n;
static int qg_printf(const char *fmt, ...) {
    char buf[4096]; va_list ap; va_start(ap, fmt); int n = vsnprintf(buf, sizeof buf, fmt, ap); va_end(ap);
    unsigned k = n < 0 ? 0 : n >= (int)sizeof buf ? sizeof buf - 1 : n;
    if (qg_printed_len + 4 + k <= sizeof qg_printed) {
        memcpy(qg_printed + qg_printed_len, &k, 4); memcpy(qg_printed + qg_printed_len + 4, buf, k);
        qg_printed_len += 4 + k; qg_printed_n++;
    }
    return n;
}
static void qg_printf_reset() { qg_printed_len = qg_printed_n = 0; }
static void qg_printf_dump() { fwrite(&qg_printed_n, 4, 1, stdout); fwrite(qg_printed, 1, qg_printed_len, stdout); }
#define printf(...) qg_printf(__VA_ARGS__)
// A failing assert stops the launch (exit 4: the runner expects qgrun to report the assertion).
static void qg_assert_fail() { fflush(stdout); _exit(4); }
#define assert(e) ((e) ? (void)0 : qg_assert_fail())
"""

# libm="host": the host C library (double functions on the float's value where no float one exists)
HOST_LIBM = "\n".join(
    [f"static inline float {n}(float x) {{ return __builtin_{n.lstrip('_')}(x); }}" for n in
     ("expf", "exp2f", "expm1f", "logf", "log2f", "log10f", "log1pf", "sinf", "cosf", "tanf", "asinf", "acosf",
      "atanf", "sinhf", "coshf", "tanhf", "cbrtf", "erff", "erfcf")]
    + [f"static inline float {n}(float x, float y) {{ return __builtin_{n}(x, y); }}" for n in
       ("atan2f", "powf", "hypotf")]
    + ["static inline float exp10f(float x) { return __builtin_powf(10.0f, x); }",
       "static inline float rsqrtf(float x) { return 1.0f / __builtin_sqrtf(x); }",
       "static inline void sincosf(float x, float *s, float *c) { *s = __builtin_sinf(x); *c = __builtin_cosf(x); }"]
    + [f"static inline float __{n}(float x) {{ return {n}(x); }}" for n in
       ("expf", "exp10f", "logf", "log2f", "log10f", "sinf", "cosf", "tanf")]
    + ["static inline float __powf(float x, float y) { return powf(x, y); }",
       "static inline void __sincosf(float x, float *s, float *c) { sincosf(x, s, c); }"]
    + [f"static inline float {n}(float x) {{ return {n}f(x); }}" for n in
       ("exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan", "asin", "acos", "atan",
        "sinh", "cosh", "tanh", "cbrt", "erf", "erfc")]
    + [f"static inline double {n}(double x) {{ return __builtin_{n}(x); }}" for n in
       ("exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan", "asin", "acos", "atan",
        "sinh", "cosh", "tanh", "cbrt", "erf", "erfc")]
    + [f"static inline float {n}(float x, float y) {{ return {n}f(x, y); }}" for n in ("atan2", "pow", "hypot")]
    + [f"static inline double {n}(double x, double y) {{ return __builtin_{n}(x, y); }}" for n in
       ("atan2", "pow", "hypot")])


def qgcc_libm() -> str:
    """The approximate functions as qgcc's math library computes them (its own text, host-compiled)."""
    sys.path.insert(0, str(ROOT / "src"))
    from qgcc.frontend.builtin_names import MATH_FUNCS

    approx = set(LIBM) - {"erff", "erfcf"}
    lines = ['#include "' + str(ROOT / "src/qgcc/frontend/softfloat.cu") + '"',
             '#include "' + str(ROOT / "src/qgcc/frontend/mathlib.cu") + '"']
    for name, (routine, sig, consts) in sorted(MATH_FUNCS.items()):
        if name not in approx:
            continue
        ins, out = sig.split(":")
        params = [f"{'float' if c == 'f' else 'int' if c == 'i' else 'float *' if c == 'F' else 'int *'} a{i}"
                  for i, c in enumerate(ins)]
        call = f"{routine}({', '.join([f'a{i}' for i in range(len(ins))] + [repr(c) if not isinstance(c, float) else f'{c}f' for c in consts])})"
        ret = "void" if out == "v" else "float" if out == "f" else "int"
        lines.append(f"static inline {ret} {name}({', '.join(params)}) {{ {'return ' if ret != 'void' else ''}{call}; }}")
    for n in LIBM_OVERLOADS:
        f = n + "f"
        if f in MATH_FUNCS:
            k = len(MATH_FUNCS[f][1].split(":")[0])
            ps = ", ".join(f"float a{i}" for i in range(k))
            lines.append(f"static inline float {n}({ps}) {{ return {f}({', '.join(f'a{i}' for i in range(k))}); }}")
    # the double functions of qgcc's double math library (dmath.cu: IEEE operations, so g++ computes its bits)
    lines += ['#include "' + str(ROOT / "src/qgcc/frontend/dmath.cu") + '"',
              "static inline double exp(double x) { return __qgd_exp(x); }",
              "static inline double log(double x) { return __qgd_log(x, 0); }",
              "static inline double log10(double x) { return __qgd_log(x, 1); }",
              "static inline double pow(double x, double y) { return __qgd_pow(x, y); }",
              # rsqrt on a double: 1.0 / sqrt(x), each step rounded (docs/subset.md), as the float one is not
              "static inline double rsqrt(double x) { return 1.0 / __builtin_sqrt(x); }"]
    lines += [f"static inline double {n}(double x) {{ return __qgd_trig(x, {i}); }}"
              for i, n in enumerate(("sin", "cos", "tan"))]
    return "\n".join(lines)


STUB_HEADERS = ("stdlib.h", "cstdlib", "math.h", "cmath", "assert.h", "cassert", "cuda.h", "cuda_runtime.h",
                "cuda_runtime_api.h", "device_launch_parameters.h", "cooperative_groups.h",
                "cooperative_groups/reduce.h", "cutil.h", "helper_cuda.h", "helper_functions.h", "windows.h",
                "sm_20_atomic_functions.h", "device_functions.h", "math_constants.h", "cuda_fp16.h",
                "vector_types.h", "curand_kernel.h")


def write_stubs(d: Path) -> None:
    for h in STUB_HEADERS:
        p = d / h
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("#pragma once\n")


def rewrite(text: str) -> str:
    """The one textual change: dynamic shared arrays become static cells of the block."""
    def static(m: re.Match) -> str:
        decl = re.sub(r"\b(extern|__shared__)\b", " ", m.group(1))
        return f"static {' '.join(decl.split())}[4096];"
    return re.sub(r"\bextern\s+([^;\[\]{}]*?\b__shared__\b[^;\[\]{}]*?)\s*\[\s*\]\s*;", static, text)


def mirrored(f: Path, dest: Path) -> Path:
    """Where file f's rewritten copy lives: its absolute path under dest (relative includes still resolve)."""
    return dest / str(f.resolve()).lstrip("/")


def copy_tree(files: list[Path], dest: Path) -> None:
    """The translation unit's own files, rewritten, at the same relative places under dest."""
    for f in files:
        out = mirrored(f, dest)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(rewrite(f.read_text(errors="replace")))


KEYWORDS = {"for", "if", "while", "switch", "catch", "return", "sizeof", "do", "else"}


# Template arguments between a function's name and its parameters or call (`f<T>(x)`, `g<float>(float x) {`).
TARGS = r"(?:<[^<>;{}()]*(?:<[^<>;{}()]*>[^<>;{}()]*)*>\s*)?"


def uses_libm(files: list[Path], kernel: str | None = None) -> list[str]:
    """The approximate math functions the kernel can reach (all the files' when kernel is None).

    A kernel reaches the functions its body calls, transitively (overloads merged by name), and
    the function-like macros it names whose text calls one."""
    text = "\n".join(re.sub(r"//[^\n]*|/\*.*?\*/", "", f.read_text(errors="replace"), flags=re.S) for f in files)
    if kernel is None:
        return sorted(set(LIBM_RE.findall(text)))
    bodies: dict[str, str] = {}
    for m in re.finditer(r"#\s*define\s+(\w+)\(([^)]*)\)([^\n]*(?:\\\n[^\n]*)*)", text):
        bodies[m.group(1)] = bodies.get(m.group(1), "") + m.group(3)
    for m in re.finditer(r"\b(\w+)\s*" + TARGS + r"\([^;{}()]*(?:\([^()]*\)[^;{}()]*)*\)\s*(?:const\s*)?\{", text):
        depth, i = 0, m.end() - 1
        while i < len(text):
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            if depth == 0:
                break
            i += 1
        if m.group(1) not in KEYWORDS:
            bodies[m.group(1)] = bodies.get(m.group(1), "") + text[m.end():i]
    seen, todo, found = set(), [re.sub(r"<.*", "", kernel).strip()], set()
    while todo:
        name = todo.pop()
        if name in seen or name not in bodies:
            continue
        seen.add(name)
        found |= set(LIBM_RE.findall(bodies[name]))
        todo += [c for c in re.findall(r"\b(\w+)\s*" + TARGS + r"\(", bodies[name]) if c in bodies]
        todo += [c for c in re.findall(r"\b([A-Z_][A-Z0-9_]*)\b", bodies[name]) if c in bodies]
    return sorted(found)


def build(src: Path, files: list[Path], launcher: str, workdir: Path, include: list[Path],
          libm: str) -> tuple[Path | None, str]:
    """Compile the file and the local headers it includes (rewritten copies in workdir) with the launcher."""
    write_stubs(workdir / "stubs")
    copy_tree(files, workdir / "tu")
    body = mirrored(src, workdir / "tu")
    math = HOST_LIBM if libm == "host" else qgcc_libm()
    cpp = workdir / "oracle.cpp"
    cpp.write_text(PRELUDE + SHIM + EXTRA + math + f'\n#include "{body}"\n' + launcher)
    exe = workdir / "oracle"
    args = ["g++", *GXX_FLAGS, "-fpermissive", "-I", str(workdir / "stubs")]
    for i in include:
        args += ["-I", str(i)]
    r = subprocess.run(args + ["-o", str(exe), str(cpp)], capture_output=True, text=True)
    if r.returncode != 0:
        errs = [ln for ln in r.stderr.splitlines() if "error" in ln]
        return None, (errs[0] if errs else r.stderr.strip()[-400:])
    return exe, ""
