"""The CUDA built-ins the subset knows, by family: atomics, float, double, math, warp and
integer functions, bit casts, built-in vector types, and the ones it rejects with a reason.

Tables only: sema checks calls against them and the lowering passes choose code by them; both
import this module, neither imports the other for it.
"""

from __future__ import annotations

from ..isa import SReg
from .types import BOOL, CHAR, DOUBLE, FLOAT, INT, LLONG, SHORT, PtrType, UCHAR, UINT, ULLONG, USHORT, VOID
from .overloads import UNSIGNED_MINMAX


BUILTIN_VECTORS = {
    "threadIdx": (SReg.TID_X, SReg.TID_Y, SReg.TID_Z),
    "blockDim": (SReg.NTID_X, SReg.NTID_Y, SReg.NTID_Z),
    "blockIdx": (SReg.CTAID_X, SReg.CTAID_Y, SReg.CTAID_Z),
    "gridDim": (SReg.NCTAID_X, SReg.NCTAID_Y, SReg.NCTAID_Z),
}

ATOMICS = {"atomicAdd", "atomicSub", "atomicMin", "atomicMax", "atomicExch", "atomicCAS",
           "atomicAnd", "atomicOr", "atomicXor"}
# Float built-ins: name -> number of float arguments.  The __f*_rn intrinsics are
# the same operations (every operation already rounds to nearest even).
FLOAT_FUNCS = {"sqrtf": 1, "fabsf": 1, "fminf": 2, "fmaxf": 2, "fmaf": 3, "__fadd_rn": 2,
               "__fsub_rn": 2, "__fmul_rn": 2, "__fdiv_rn": 2, "__fsqrt_rn": 1, "__fmaf_rn": 3,
               "__fdividef": 2, "__frcp_rn": 1}
# The math library (mathlib.cu): name -> (routine, signature, constant arguments appended).
# Signature letters: f float, d double, i int, F float *, I int *, v void; arguments, then ':' and the
# result.  The fast intrinsics (__expf, ...) are the accurate functions (docs/subset.md).
MATH_FUNCS = {n: ("__qgm_" + n, "f:f", ()) for n in (
    "floorf", "ceilf", "truncf", "roundf", "rintf", "rsqrtf", "cbrtf", "expm1f", "log1pf", "atanf",
    "tanhf")}
MATH_FUNCS.update({n: ("__qgm_" + n, "ff:f", ()) for n in ("copysignf", "fdimf", "hypotf", "atan2f", "powf")})
MATH_FUNCS["__powf"] = MATH_FUNCS["powf"]
MATH_FUNCS.update({n: ("__qgm_" + n, "f:i", ()) for n in ("isnan", "isinf", "isfinite", "signbit")})
for _i, _n in enumerate(("exp", "exp2", "exp10")):  # __qgm_expk(x, scale, base)
    MATH_FUNCS[_n + "f"] = MATH_FUNCS["__" + _n + "f"] = ("__qgm_expk", "f:f", (0, _i))
for _i, _n in enumerate(("log", "log2", "log10")):  # __qgm_logk(x, correction, base)
    MATH_FUNCS[_n + "f"] = MATH_FUNCS["__" + _n + "f"] = ("__qgm_logk", "f:f", (0, _i))
for _i, _n in enumerate(("sin", "cos", "tan")):
    MATH_FUNCS[_n + "f"] = MATH_FUNCS["__" + _n + "f"] = ("__qgm_trig", "f:f", (_i,))
MATH_FUNCS.update({
    "asinf": ("__qgm_asincos", "f:f", (0,)), "acosf": ("__qgm_asincos", "f:f", (1,)),
    "sinhf": ("__qgm_sinhcosh", "f:f", (0,)), "coshf": ("__qgm_sinhcosh", "f:f", (1,)),
    "fmodf": ("__qgm_fmodrem", "ff:f", (0,)), "remainderf": ("__qgm_fmodrem", "ff:f", (1,)),
    "nearbyintf": ("__qgm_rintf", "f:f", ()), "__saturatef": ("__qgm_saturatef", "f:f", ()),
    "__frsqrt_rn": ("__qgm_rsqrtf", "f:f", ()), "ldexpf": ("__qgm_ldexp", "fi:f", ()),
    "scalbnf": ("__qgm_ldexp", "fi:f", ()), "frexpf": ("__qgm_frexpf", "fI:f", ()),
    "sincosf": ("__qgm_sincosf", "fFF:v", ()), "__sincosf": ("__qgm_sincosf", "fFF:v", ())})
# frexp, ldexp and scalbn on double (dscale.cu); d is double in these signatures
MATH_FUNCS.update({"frexp": ("__qg_dfrexp", "dI:d", ()), "ldexp": ("__qg_dldexp", "di:d", ()),
                   "scalbn": ("__qg_dldexp", "di:d", ())})
BIT_CASTS = {"__float_as_int": INT, "__float_as_uint": UINT, "__int_as_float": FLOAT,
             "__uint_as_float": FLOAT, "__double_as_longlong": LLONG, "__longlong_as_double": DOUBLE}
# ---- warp, integer and clock intrinsics (compiled by frontend/intrinsics.py) ----
# Warp intrinsics: name -> accepted argument counts.
WARP_FUNCS = {"__shfl_sync": (3, 4), "__shfl_up_sync": (3, 4), "__shfl_down_sync": (3, 4),
              "__shfl_xor_sync": (3, 4), "__ballot_sync": (2,), "__any_sync": (2,), "__all_sync": (2,),
              "__match_any_sync": (2,), "__activemask": (0,), "__syncwarp": (0, 1), "clock": (0,),
              "clock64": (0,), "__match_all_sync": (3,), "__reduce_add_sync": (2,), "__reduce_min_sync": (2,),
              "__reduce_max_sync": (2,), "__reduce_and_sync": (2,), "__reduce_or_sync": (2,),
              "__reduce_xor_sync": (2,),
              # cg::reduce over a tile (frontend/coopgroups.py): (value, tile size)
              "__qg_reduce_add": (2,), "__qg_reduce_max": (2,), "__qg_reduce_min": (2,)}
# Integer intrinsics: name -> (parameter types, result type), as CUDA declares them.
INT_FUNCS = {"__popc": ((UINT,), INT), "__clz": ((INT,), INT), "__ffs": ((INT,), INT),
             "__brev": ((UINT,), UINT), "__byte_perm": ((UINT, UINT, UINT), UINT),
             "__mul24": ((INT, INT), INT), "__umul24": ((UINT, UINT), UINT),
             "__mulhi": ((INT, INT), INT), "__umulhi": ((UINT, UINT), UINT),
             "__sad": ((INT, INT, UINT), UINT), "__usad": ((UINT, UINT, UINT), UINT),
             # 64-bit forms (frontend/wide.py)
             "__popcll": ((ULLONG,), INT), "__clzll": ((LLONG,), INT), "__ffsll": ((LLONG,), INT),
             "__brevll": ((ULLONG,), ULLONG), "__mul64hi": ((LLONG, LLONG), LLONG),
             "__umul64hi": ((ULLONG, ULLONG), ULLONG)}
# atomicInc/atomicDec, and the _block/_system scopes of every atomic (one block runs at a time,
# so every scope is the same).
ATOMICS |= {"atomicInc", "atomicDec"}
ATOMIC_SCOPES = {f"{a}{sfx}": a for a in ATOMICS for sfx in ("_block", "_system")}
# The double functions qgcc has (double.cu): name -> argument count; each argument converts to double.
DOUBLE_FUNCS = {"sqrt": 1, "fabs": 1, "fmin": 2, "fmax": 2, "floor": 1, "ceil": 1, "trunc": 1, "round": 1,
                "__dsqrt_rn": 1, "__dadd_rn": 2, "__dsub_rn": 2, "__dmul_rn": 2, "__ddiv_rn": 2,
                # the double math library (dmath.cu)
                "exp": 1, "log": 1, "log10": 1, "pow": 2, "sin": 1, "cos": 1, "tan": 1,
                "rsqrt": 1}  # 1.0 / sqrt(x), two roundings (within CUDA's 1 ulp bound; doubles.func)
# Memory fences order a thread's memory operations for the others; here every load and store
# acts on the one memory at once (no caches, blocks in turn), so they are already in order.
FENCES = frozenset({"__threadfence", "__threadfence_block", "__threadfence_system"})
BUILTIN_FUNCS = FENCES | ATOMICS | {"__syncthreads", "memcpy", "min", "max", "abs", "llmin", "llmax", "ullmin", "ullmax", "llabs"} | set(UNSIGNED_MINMAX) | set(FLOAT_FUNCS) | set(DOUBLE_FUNCS) | set(BIT_CASTS) | \
    set(WARP_FUNCS) | set(INT_FUNCS) | set(ATOMIC_SCOPES) | set(MATH_FUNCS)

UNSUPPORTED_FUNCS = {
    "malloc": "dynamic memory allocation ('malloc') is not supported",
    "calloc": "dynamic memory allocation ('calloc') is not supported",
    "realloc": "dynamic memory allocation ('realloc') is not supported",
    "free": "dynamic memory allocation ('free') is not supported",
    "cudaMalloc": "dynamic memory allocation ('cudaMalloc') is not supported",
}
for _n in ("__syncthreads_count", "__syncthreads_and",
           "__syncthreads_or", "__ldg"):
    UNSUPPORTED_FUNCS[_n] = f"'{_n}' is not supported"
for _n in ("__shfl", "__shfl_up", "__shfl_down", "__shfl_xor", "__ballot", "__any", "__all"):
    UNSUPPORTED_FUNCS[_n] = f"'{_n}' was removed in CUDA 9; use {_n}_sync(0xffffffff, ...)"
for _n in ("fadd", "fsub", "fmul", "fdiv", "fmaf", "frcp", "fsqrt"):
    for _m in ("rz", "ru", "rd"):
        UNSUPPORTED_FUNCS[f"__{_n}_{_m}"] = (f"'__{_n}_{_m}' is not supported (only round to nearest: "
                                            f"'__{_n}_rn')")
for _n in ("fma", "exp2", "log2", "fmod", "atan2", "hypot",
           "rint", "nearbyint", "cbrt", "asin", "acos", "atan", "sinh", "cosh", "tanh", "expm1",
           "log1p", "copysign", "fdim", "remainder", "sincos"):  # frexp, ldexp, scalbn: MATH_FUNCS
    UNSUPPORTED_FUNCS[_n] = (f"'{_n}' on double is not supported (qgcc's double functions are sqrt, fabs, "
                             f"fmin, fmax, floor, ceil, trunc, round, exp, log, log10, pow, sin, cos, tan, rsqrt, frexp, ldexp "
                             f"and scalbn); use '{_n}f' on float")

TYPE_WORDS = ("void", "bool", "char", "short", "int", "unsigned", "signed", "float", "double")
STORAGE_WORDS = ("__global__", "__device__", "__shared__", "static", "inline", "__inline__",
                 "__forceinline__", "__noinline__", "register")
BASE_TYPES = {
    ("void",): VOID,
    ("bool",): BOOL,
    ("char",): CHAR,
    ("char", "signed"): CHAR,
    ("char", "unsigned"): UCHAR,
    ("short",): SHORT,
    ("short", "signed"): SHORT,
    ("int", "short"): SHORT,
    ("int", "short", "signed"): SHORT,
    ("short", "unsigned"): USHORT,
    ("int", "short", "unsigned"): USHORT,
    ("int",): INT,
    ("signed",): INT,
    ("int", "signed"): INT,
    ("unsigned",): UINT,
    ("int", "unsigned"): UINT,
    ("float",): FLOAT,
    ("double",): DOUBLE,
}
# Element types that fill a 32-bit cell exactly, as in CUDA: pointers to them convert freely.
CELL_TYPES = (INT, UINT, FLOAT)
PARAM_CTYPES = {"int": "int", "unsigned": "unsigned", "bool": "bool", "char": "char", "uchar": "uchar",
                "short": "short", "ushort": "ushort", "llong": "llong", "ullong": "ullong", "double": "double"}


# 64-bit atomics: the machine's ATOM works on one 32-bit cell.  Addition and the bitwise
# operations act on each half on its own (addition with a carry computed from the low word the
# lane's own atomic saw), so two ATOMs leave memory exactly as one 64-bit atomic would, whatever
# another warp does between them; the others need a 64-bit compare-and-swap.
WIDE_ATOMICS = ("atomicAdd", "atomicAnd", "atomicOr", "atomicXor")
_CAS64 = "needs a 64-bit compare-and-swap, which the machine does not have (its ATOM works on one 32-bit cell)"


def _wide_atomic_problem(name: str, pt: PtrType) -> str | None:
    """Why the 64-bit atomic `name` on a `pt` pointer is not provided, or None if it is."""
    if name in WIDE_ATOMICS:
        return None if pt.elem == ULLONG else f"CUDA's 64-bit '{name}' takes an 'unsigned long long *'"
    if name == "atomicCAS":
        return ("the machine's ATOM.CAS compares one 32-bit cell, and two of them cannot compare and "
                "swap 64 bits at once")
    if name == "atomicExch":
        return ("two 32-bit exchanges could interleave with another warp's and leave one value's low word "
                f"with the other's high word; a 64-bit exchange {_CAS64}")
    if name in ("atomicMin", "atomicMax"):
        return ("the high words decide only when they differ, so it cannot be done a half at a time; it "
                + _CAS64)
    return f"CUDA's '{name}' is 32-bit only"
