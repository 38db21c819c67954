"""Semantic analysis: names, types, constants and every subset restriction.

Input: the `ast.TranslationUnit` from the parser.  Output: a `SemaResult`
listing the kernels and device functions, with every expression annotated in
place (`ty`, `const`, `arr`, `sym`, `opty`, `callee`, ...).  All user-facing
errors except capacity limits (registers, shared memory, instruction count,
which `codegen` checks) are raised here as `CompileError`s.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field

from ..diagnostics import CompileError
from ..isa import SReg
from ..spec import SPEC
from . import ast as A
from . import doubleconst, floatconst
from .structs import StructType, is_struct, vector_types
from .overloads import FLOAT_OVERLOADS, UNSIGNED_MINMAX, float_overload
from .structsema import StructSema, _become
from .types import (BOOL, BUILTIN_TYPEDEFS, CHAR, DOUBLE, FLOAT, INT, LLONG, UCHAR, UINT, ULLONG, VOID, ArrayType,
                    DoubleType, FloatType, IntType, is_double, is_floating, is_pair, is_wide, words,
                    PtrType, Type, is_float,
                    VoidType, fold_binary, is_arith, is_int, is_ptr, is_scalar, promote,
                    usual_arithmetic, wrap)

INT_MAX = 0x7FFFFFFF


@dataclass(eq=False)
class VarSym:
    name: str
    ty: Type
    kind: str  # 'local' | 'param' | 'shared' | 'const'
    line: int
    col: int
    readonly: bool = False
    const_value: int | None = None  # compile-time value of a constant
    index: int = -1  # parameter position
    assigned: bool = False  # target of =, op=, ++ or -- somewhere
    hidden: bool = False  # an unnamed parameter (not visible in the body)
    ref: bool = False  # a reference parameter (`T &p`, `const T &p`) of a device function
    # Where a memory-resident variable (kind 'shared') lives: '' a static __shared__ variable,
    # 'dynamic' an extern __shared__ array (sized at launch), 'constant' a __constant__ variable
    # (global cells from 0, filled by the launcher).
    space: str = ""
    address: int = -1  # first global cell of a __constant__ variable
    init: list[int] | None = None  # a __constant__ variable's cells as the source initialises them
    # A local array's initialiser: (cell index, expression) pairs; the other cells become 0.
    init_exprs: list | None = None
    # A struct (or array of structs) initialiser: (cell, expression, type) triples, a struct-typed
    # expression copying cells(type) cells; with braces the other cells become 0.
    init_cells: list | None = None
    init_braced: bool = False

    def __repr__(self) -> str:
        return f"VarSym({self.name}: {self.ty}, {self.kind})"


@dataclass(eq=False)
class FuncSym:
    name: str
    kind: str  # 'global' | 'device'
    ret: Type
    param_types: list[Type]
    line: int
    col: int
    params: list[VarSym] = field(default_factory=list)
    definition: A.FunctionDef | None = None
    calls: list[tuple["FuncSym", A.Call]] = field(default_factory=list)
    param_refs: list[bool] = field(default_factory=list)  # which parameters are references
    param_ref_consts: list[bool] = field(default_factory=list)  # ... references to const
    template: tuple | None = None  # an instance: (template name, [type names and ints])
    method_of: "StructType | None" = None  # a member function: params[0] is `this`
    ret_ref: bool = False  # returns `T &`: the address of a memory lvalue

    def __repr__(self) -> str:
        return f"FuncSym({self.name})"


@dataclass
class SemaResult:
    kernels: list[FuncSym]
    functions: dict[str, FuncSym]
    constants: list[VarSym] = field(default_factory=list)  # __constant__ variables, by address


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
# Signature letters: f float, i int, F float *, I int *, v void; arguments, then ':' and the
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
                "__dsqrt_rn": 1, "__dadd_rn": 2, "__dsub_rn": 2, "__dmul_rn": 2, "__ddiv_rn": 2}
# Memory fences order a thread's memory operations for the others; here every load and store
# acts on the one memory at once (no caches, blocks in turn), so they are already in order.
FENCES = frozenset({"__threadfence", "__threadfence_block", "__threadfence_system"})
BUILTIN_FUNCS = FENCES | ATOMICS | {"__syncthreads", "min", "max", "abs", "llmin", "llmax", "ullmin", "ullmax", "llabs"} | set(UNSIGNED_MINMAX) | set(FLOAT_FUNCS) | set(DOUBLE_FUNCS) | set(BIT_CASTS) | \
    set(WARP_FUNCS) | set(INT_FUNCS) | set(ATOMIC_SCOPES) | set(MATH_FUNCS)

UNSUPPORTED_FUNCS = {
    "printf": "'printf' is not supported (there is no host I/O)",
    "malloc": "dynamic memory allocation ('malloc') is not supported",
    "calloc": "dynamic memory allocation ('calloc') is not supported",
    "realloc": "dynamic memory allocation ('realloc') is not supported",
    "free": "dynamic memory allocation ('free') is not supported",
    "cudaMalloc": "dynamic memory allocation ('cudaMalloc') is not supported",
    "assert": "'assert' is not supported",
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
for _n in ("fma", "pow", "sin", "cos", "tan", "exp", "exp2", "log", "log2", "log10", "fmod", "atan2", "hypot",
           "rint", "nearbyint", "cbrt", "rsqrt", "asin", "acos", "atan", "sinh", "cosh", "tanh", "expm1",
           "log1p", "copysign", "fdim", "ldexp", "frexp", "remainder", "sincos", "scalbn"):
    UNSUPPORTED_FUNCS[_n] = (f"'{_n}' on double is not supported (qgcc's double functions are sqrt, fabs, "
                             f"fmin, fmax, floor, ceil, trunc and round); use '{_n}f' on float")

TYPE_WORDS = ("void", "bool", "char", "int", "unsigned", "signed", "float", "double")
STORAGE_WORDS = ("__global__", "__device__", "__shared__", "static", "inline", "__inline__",
                 "__forceinline__", "__noinline__", "register")
BASE_TYPES = {
    ("void",): VOID,
    ("bool",): BOOL,
    ("char",): CHAR,
    ("char", "signed"): CHAR,
    ("char", "unsigned"): UCHAR,
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
                "llong": "llong", "ullong": "ullong", "double": "double"}


@dataclass
class SpecInfo:
    base: Type
    const: bool
    storage: dict[str, A.Spec]
    first: A.Spec


class Sema(StructSema):
    def __init__(self, filename: str, source: str):
        self.filename = filename
        self.lines = source.split("\n")
        self.functions: dict[str, FuncSym] = {}
        self.globals: dict[str, VarSym] = {}
        self.scopes: list[dict[str, VarSym]] = []
        self.func: FuncSym | None = None
        self.loop_depth = 0
        self.constants: list[VarSym] = []
        self.constant_cells = 0
        self.templates: dict[str, A.TemplateDef] = {}
        self.specialisations: dict[str, A.FunctionDef] = {}  # 'f<float>' -> its explicit specialisation
        self.instances: list[tuple[FuncSym, A.FunctionDef]] = []
        # typedef/using names -> (type, read-only); size_t is 32 bits (32-bit addresses).
        self.typedefs: dict[str, tuple[Type, bool]] = {n: (t, False) for n, t in
                                                        BUILTIN_TYPEDEFS.items()}
        # Structs by definition (the parser's StructDef), and member functions waiting for
        # their bodies to be checked (after every file-scope declaration, like functions).
        # id(StructDef) -> (the StructDef, kept alive so that its id is not reused, its type)
        self.struct_defs: dict[int, tuple[A.StructDef, StructType]] = {}
        self.vectors = vector_types()  # int2, float3, ... and their make_ functions
        self.typedefs.update({n: (t, False) for n, t in self.vectors.items()})
        self.methods: list[tuple[FuncSym, A.FunctionDef, tuple | None]] = []
        self.checked_methods: list[tuple[FuncSym, A.FunctionDef]] = []
        # Overloaded functions: name -> every FuncSym of that name (self.functions keeps the
        # others under 'name#1', 'name#2', ...).
        self.overloads: dict[str, list[FuncSym]] = {}
        # Class templates by name, their instances by (name, arguments), and the template
        # parameters' bindings while an instance's members are declared.
        self.class_templates: dict[str, A.TemplateDef] = {}
        self.class_instances: dict[tuple, StructType] = {}
        self.class_specialisations: dict[tuple, A.StructDef] = {}  # (name, args) -> `template <> struct`
        self.method_env: tuple | None = None
        self.ntemps = 0

    # ------------------------------------------------------------------ helpers

    def error(self, node_or_line, col_or_msg, msg: str | None = None) -> CompileError:
        if msg is None:
            line, col, msg = node_or_line.line, node_or_line.col, col_or_msg
        else:
            line, col = node_or_line, col_or_msg
        src = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        return CompileError(self.filename, line, col, msg, src)

    def lookup(self, name: str) -> VarSym | None:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return self.globals.get(name)

    def declare(self, sym: VarSym) -> None:
        scope = self.scopes[-1] if self.scopes else self.globals
        if sym.name in scope:
            prev = scope[sym.name]
            raise self.error(sym.line, sym.col,
                             f"redefinition of '{sym.name}' (previously declared on line {prev.line})")
        if not self.scopes and sym.name in self.functions:
            raise self.error(sym.line, sym.col, f"redefinition of '{sym.name}' (a function)")
        scope[sym.name] = sym

    # ------------------------------------------------------------------ types

    def spec_info(self, specs: list[A.Spec], what: str = "declaration") -> SpecInfo:
        words: dict[str, A.Spec] = {}
        const = False
        storage: dict[str, A.Spec] = {}
        longs = [s for s in specs if s.text == "long"]
        tdef: A.Spec | None = None
        device = any(s.text in ("__device__", "__global__") for s in specs)
        for s in specs:
            t = s.text
            if s.struct is not None:
                self.struct_type(s.struct)
            if s.typename and s.targs is None and s.text in self.class_templates \
                    and s.text not in self.typedefs:
                raise self.error(s, f"'{s.text}' is a class template; write '{s.text}<...>'")
            if s.typename:
                if tdef is not None:
                    raise self.error(s, f"two type names in one declaration ('{tdef.text}' and "
                                        f"'{t}')")
                tdef = s
                continue
            if t == "double" and longs:
                raise self.error(s, "'long double' is not supported; use 'double'")
            if t == "long":
                if len(longs) > 2 and s is longs[2]:
                    raise self.error(s, "'long long long' is too long")
                continue
            if t == "short":
                raise self.error(s, "'short' is not supported")
            if t == "auto":
                raise self.error(s, "'auto' is not supported; write the type")
            if t == "__host__":
                if any(x.text == "__global__" for x in specs):
                    raise self.error(s, "a kernel cannot be '__host__'")
                if not device:
                    raise self.error(s, "'__host__' is not supported (only device code is "
                                        "compiled; '__host__ __device__' functions are)")
                continue
            if t == "__managed__":
                raise self.error(s, "'__managed__' memory is not supported")
            if t == "extern" and not any(x.text == "__shared__" for x in specs):
                raise self.error(s, "'extern' is not supported (only 'extern __shared__' arrays "
                                    "and 'extern \"C\"')")
            if t in ("const", "constexpr"):
                const = True
            elif t in ("volatile", "__restrict__", "__restrict"):
                pass
            elif t in TYPE_WORDS:
                if t in words:
                    raise self.error(s, f"duplicate '{t}'")
                words[t] = s
            else:
                if t in storage:
                    raise self.error(s, f"duplicate '{t}'")
                storage[t] = s
        if tdef is not None:
            if words:
                later = max([tdef, *words.values()], key=lambda s: (s.line, s.col))
                raise self.error(later, "invalid combination of type specifiers '"
                                 + " ".join(s.text for s in specs if s.text in TYPE_WORDS
                                            or s.typename) + "'")
            if tdef.targs is not None:
                base, tconst = self.class_instance(tdef), False
            elif tdef.struct is not None:
                base, tconst = self.struct_type(tdef.struct), False
            else:
                base, tconst = self.typedefs[tdef.text]
            return SpecInfo(base, const or tconst, storage, specs[0])
        if longs:
            # long, long long, long int, unsigned long long, ...: 64 bits (LP64, as CUDA on Linux)
            if tdef is not None or set(words) - {"int", "signed", "unsigned"} or \
                    {"signed", "unsigned"} <= set(words):
                later = max([*longs, *words.values(), *([tdef] if tdef else [])], key=lambda s: (s.line, s.col))
                raise self.error(later, "invalid combination of type specifiers '"
                                 + " ".join(s.text for s in specs if s.text in TYPE_WORDS + ("long",)
                                            or s.typename) + "'")
            return SpecInfo(ULLONG if "unsigned" in words else LLONG, const, storage, specs[0])
        if not words:
            raise self.error(specs[0], f"missing type specifier in {what}")
        key = tuple(sorted(words))
        if key not in BASE_TYPES:
            later = max(words.values(), key=lambda s: (s.line, s.col))
            raise self.error(later, "invalid combination of type specifiers '"
                             + " ".join(s.text for s in specs if s.text in TYPE_WORDS) + "'")
        return SpecInfo(BASE_TYPES[key], const, storage, specs[0])

    def apply_pointers(self, base: Type, pointers: list[list[A.Spec]], const: bool,
                       at: A.Node) -> tuple[Type, bool]:
        """Returns (type, readonly-variable) for `base` with the declarator's '*'s."""
        if not pointers:
            return base, const
        if len(pointers) > 1:
            raise self.error(at, "pointers to pointers are not supported")
        if isinstance(base, VoidType):
            raise self.error(at, "'void *' pointers are not supported; use a typed pointer")
        if isinstance(base, PtrType):  # a typedef of a pointer type
            raise self.error(at, "pointers to pointers are not supported")
        ptr_const = any(q.text == "const" for q in pointers[0])
        return PtrType(base, const), ptr_const

    def type_of_syntax(self, ts: A.TypeSyntax, what: str) -> Type:
        info = self.spec_info(ts.specs, what)
        for k, s in info.storage.items():
            raise self.error(s, f"'{k}' is not allowed in a {what}")
        t, _ = self.apply_pointers(info.base, ts.pointers, info.const, ts)
        return t

    # (structs, class templates and overloads: structsema.StructSema)

    def array_dim(self, e: A.Expr | None, name: str, at: A.Node) -> int:
        if e is None:
            raise self.error(at, f"array '{name}' needs a size")
        self.rvalue(e)
        if e.const is None or not is_int(e.ty):
            raise self.error(e, f"size of array '{name}' is not a compile-time constant")
        if e.const <= 0:
            raise self.error(e, f"size of array '{name}' must be positive (got {e.const})")
        return e.const

    # ------------------------------------------------------------------ top level

    def run(self, tu: A.TranslationUnit, instantiate: tuple[str, ...] = ()) -> SemaResult:
        defs: list[tuple[FuncSym, A.FunctionDef]] = []
        for item in tu.items:
            if isinstance(item, A.TemplateDef):
                self.template_declaration(item)
            elif isinstance(item, A.FunctionDef):
                fs = self.declare_function(item.specs, item.decl, definition=item)
                defs.append((fs, item))
            else:
                self.top_declaration(item)
        for fs, fd in defs:
            self.function_body(fs, fd)
        self.check_methods()
        for request in instantiate:
            self.instantiate_by_name(request)
        self.check_methods()
        defs += self.instances + self.checked_methods
        self.check_calls()
        self.check_recursion([fs for fs, _ in defs])
        kernels = [fs for fs, _ in defs if fs.kind == "global"]
        return SemaResult(kernels, self.functions, self.constants)

    def typedef_again(self, d: A.Declaration) -> bool:
        """`typedef float T;` when T is a typedef already: the lexer made T a type name."""
        specs = d.specs
        if d.items or not any(s.text == "typedef" for s in specs) or not specs[-1].typename \
                or not any(s.text in TYPE_WORDS or s.typename for s in specs[:-1]):
            return False
        name = specs[-1]
        decl = A.Declarator(name.line, name.col, name.text)
        alias = A.Declaration(d.line, d.col, specs[:-1], [A.InitDeclarator(name.line, name.col,
                                                                           decl, None)])
        self.typedef_declaration(alias, self.spec_info(specs[:-1], "typedef"))
        return True

    def typedef_declaration(self, d: A.Declaration, info: SpecInfo) -> None:
        """`typedef T NAME;` / `using NAME = T;`: scalar and pointer aliases."""
        for k, sp in info.storage.items():
            if k != "typedef":
                raise self.error(sp, f"'{k}' is not allowed in a typedef")
        for it in d.items:
            decl = it.decl
            if decl.params is not None or decl.funcptr:
                raise self.error(decl, f"function types in typedefs are not supported ('{decl.name}')")
            if decl.ref is not None:
                raise self.error(decl.ref, f"reference types in typedefs are not supported ('{decl.name}')")
            if decl.parens:
                raise self.error(decl, f"unsupported declarator for '{decl.name}'")
            if decl.arrays:
                raise self.error(decl, f"array typedefs are not supported ('{decl.name}')")
            if it.init is not None:
                raise self.error(it.init, f"typedef '{decl.name}' cannot have an initialiser")
            ty, ro = self.apply_pointers(info.base, decl.pointers, info.const, decl)
            if is_struct(ty) and ty.tag is None:
                ty.tag = decl.name  # `typedef struct {...} T;`: the struct is called T
            prev = self.typedefs.get(decl.name)
            if prev is not None and prev != (ty, ro):
                raise self.error(decl, f"conflicting typedef '{decl.name}' (was '{prev[0]}')")
            if prev is None and (self.lookup(decl.name) is not None or decl.name in self.functions):
                raise self.error(decl, f"typedef '{decl.name}' redeclares a variable or function")
            self.typedefs[decl.name] = (ty, ro)

    def scalar_init(self, init, name: str):
        """`T x{e};`, `T x = {e};` and `T x{};` for a scalar: the initialiser expression."""
        if not isinstance(init, A.BraceInit):
            return init
        self.no_designators(init, name)
        if not init.items:
            z = A.IntLit(init.line, init.col, "0")
            return z
        if len(init.items) > 1:
            raise self.error(init.items[1], f"too many initialisers for '{name}'")
        if isinstance(init.items[0], A.BraceInit):
            raise self.error(init.items[0], f"braces around the initialiser of scalar '{name}'")
        return init.items[0]

    def no_designators(self, init: A.BraceInit, name: str) -> None:
        """Designated initialisers (`.m = v`) name struct members: not for scalars and arrays."""
        for x in init.items:
            if isinstance(x, A.Designated):
                raise self.error(x, f"designated initialiser '.{x.name}' for '{name}', which is not a "
                                    "struct")
            if isinstance(x, A.BraceInit):
                self.no_designators(x, name)

    def top_declaration(self, d: A.Declaration) -> None:
        if self.typedef_again(d):
            return
        if not d.items:
            self.spec_info(d.specs)
            return
        if any(sp.text == "typedef" for sp in d.specs):
            self.typedef_declaration(d, self.spec_info(d.specs, "typedef"))
            return
        for it in d.items:
            if it.decl.params is not None and not it.decl.funcptr and not it.decl.parens:
                if it.init is not None:
                    raise self.error(it, f"function '{it.decl.name}' cannot have an initialiser")
                self.declare_function(d.specs, it.decl, definition=None)
                continue
            info = self.spec_info(d.specs)
            self.check_declarator_shape(it.decl)
            st = info.storage
            if "__shared__" in st and "extern" in st:
                sym = self.dynamic_shared_declaration(info, it)
                prev = self.globals.get(sym.name)
                if prev is not None and prev.space == "dynamic" and prev.ty == sym.ty:
                    continue  # extern declarations may be repeated
                self.declare(sym)
                continue
            if "__shared__" in st:
                raise self.error(st["__shared__"], "__shared__ variables must be declared inside a "
                                                   "kernel or device function")
            if "__constant__" in st:
                self.declare(self.constant_declaration(info, it))
                continue
            if "__device__" in st:
                self.declare(self.device_variable(info, it))
                continue
            if it.decl.arrays:
                raise self.error(it.decl, "global arrays are not supported; pass a pointer "
                                          "parameter or use a __shared__ array")
            ty, readonly = self.apply_pointers(info.base, it.decl.pointers, info.const, it.decl)
            if not readonly or not is_int(ty):
                raise self.error(it.decl, f"global variable '{it.decl.name}' is not supported; only "
                                          "integer constants ('const int N = 4;') may be declared "
                                          "at file scope")
            if it.init is None:
                raise self.error(it.decl, f"constant '{it.decl.name}' needs an initialiser")
            it.init = self.scalar_init(it.init, it.decl.name)
            self.rvalue(it.init)
            if it.init.const is None or not is_int(it.init.ty):
                raise self.error(it.init, f"file-scope constant '{it.decl.name}' needs a "
                                          "compile-time constant initialiser")
            sym = VarSym(it.decl.name, ty, "const", it.decl.line, it.decl.col, readonly=True,
                         const_value=wrap(it.init.const, ty))
            self.declare(sym)

    def check_declarator_shape(self, d: A.Declarator, ref_return: bool = False) -> None:
        if d.targs is not None:
            raise self.error(d, f"'{d.name}<...>' names a specialisation; write 'template <>' before "
                                "its definition")
        if d.ref is not None and not (ref_return and d.params is not None):
            if d.params is not None:
                raise self.error(d.ref, f"functions returning references are not supported "
                                        f"('{d.name}'); return a value")
            raise self.error(d.ref, f"reference '{d.name}': references are supported only as "
                                    "parameters of device functions")
        if d.funcptr:
            raise self.error(d, "function pointers are not supported")
        if d.parens:
            raise self.error(d, f"unsupported declarator for '{d.name}'")

    def declare_function(self, specs: list[A.Spec], d: A.Declarator,
                         definition: A.FunctionDef | None, key: str | None = None) -> FuncSym:
        """key: where the function is kept in self.functions (a member function's overloads)."""
        self.check_declarator_shape(d, ref_return=True)
        if d.params is None:
            raise self.error(d, f"expected a parameter list after '{d.name}'")
        if d.arrays:
            raise self.error(d, f"function '{d.name}' cannot return an array")
        info = self.spec_info(specs, "function declaration")
        st = info.storage
        for bad in ("__shared__", "register", "__constant__"):
            if bad in st:
                raise self.error(st[bad], f"'{bad}' is not allowed on a function")
        if "__global__" in st and "__device__" in st:
            raise self.error(st["__device__"], "a function cannot be both __global__ and __device__")
        if "__global__" in st:
            kind = "global"
        elif "__device__" in st:
            kind = "device"
        else:
            raise self.error(d, f"function '{d.name}' must be __global__ or __device__ "
                                "(host code is not supported)")
        ret, _ = self.apply_pointers(info.base, d.pointers, False, d)
        if kind == "global" and not isinstance(ret, VoidType):
            raise self.error(d, f"kernel '{d.name}' must return void")
        if is_struct(ret) and not ret.complete:
            raise self.error(d, f"function '{d.name}' returns incomplete type '{ret}'")
        if d.ref is not None and isinstance(ret, VoidType):
            raise self.error(d.ref, "a reference to void is not a type")
        ptypes: list[Type] = []
        refs: list[bool] = []
        ref_consts: list[bool] = []
        pnames: list[tuple[A.ParamDecl, Type, bool]] = []
        params = d.params
        if len(params) == 1 and params[0].name is None and not params[0].type.pointers \
                and not params[0].arrays:
            t0 = self.spec_info(params[0].type.specs, "parameter").base
            if isinstance(t0, VoidType):
                params = []
        for p in params:
            if p.funcptr:
                raise self.error(p, "function pointers are not supported")
            pinfo = self.spec_info(p.type.specs, "parameter")
            for k, s in pinfo.storage.items():
                if k != "register":
                    raise self.error(s, f"'{k}' is not allowed on a parameter")
            ptrs = list(p.type.pointers)
            if p.arrays:
                if len(p.arrays) > 1:
                    raise self.error(p, "multi-dimensional array parameters are not supported")
                ptrs = ptrs + [[]]
            t, readonly = self.apply_pointers(pinfo.base, ptrs, pinfo.const, p)
            if isinstance(t, VoidType):
                raise self.error(p, f"parameter '{p.name or '?'}' has type void")
            if p.ref is not None:
                if kind == "global":
                    raise self.error(p.ref, "a kernel parameter cannot be a reference (it would "
                                            "refer to host memory); pass a pointer or a value")
                if not is_arith(t) and not is_struct(t) and not is_ptr(t):
                    raise self.error(p.ref, f"references to '{t}' are not supported (only to "
                                            "int, unsigned, char, bool and float variables, pointers "
                                            "and structs)")
            if is_struct(t):
                if not t.complete:
                    raise self.error(p, f"parameter '{p.name or '?'}' has incomplete type '{t}'")
                if kind == "global":
                    raise self.error(p, f"a kernel parameter cannot be a struct passed by value "
                                        f"('{t} {p.name or ''}'); pass a pointer to a buffer of one "
                                        f"'{t}' ('{t} *{p.name or 'p'}', a .npy with a structured "
                                        "dtype at launch)")
            refs.append(p.ref is not None)
            ref_consts.append(p.ref is not None and readonly)
            ptypes.append(t)
            pnames.append((p, t, readonly))
        nwords = sum(1 if isinstance(t, PtrType) else words(t) for t in ptypes)
        if kind == "global" and nwords > SPEC.max_params:
            raise self.error(d, f"kernel '{d.name}' has {len(ptypes)} parameters ({nwords} words: a 64-bit "
                                f"one takes two); the machine allows at most {SPEC.max_params}"
                             if nwords > len(ptypes) else
                             f"kernel '{d.name}' has {len(ptypes)} parameters; the machine "
                             f"allows at most {SPEC.max_params}")
        key = key or d.name
        group: list[FuncSym] | None = None
        prev = self.functions.get(key)
        if d.name in self.globals:
            raise self.error(d, f"redefinition of '{d.name}' (a constant)")
        if prev is not None and kind == prev.kind == "device" and (
                prev.param_types != ptypes or prev.param_refs != refs or prev.param_ref_consts != ref_consts):
            # An overload: the one with these parameters if it was declared before, else a new one.
            group = self.overloads.setdefault(key, [prev])
            same = [f for f in group if f.param_types == ptypes and f.param_refs == refs
                    and f.param_ref_consts == ref_consts]
            if same:
                prev = same[0]
            else:
                key = f"{key}#{len(group)}"
                prev = None
        if prev is not None:
            if prev.kind != kind or prev.ret != ret or prev.param_types != ptypes or prev.param_refs != refs \
                    or prev.param_ref_consts != ref_consts:
                raise self.error(d, f"conflicting declaration of '{d.name}' (previously declared "
                                    f"on line {prev.line})")
            if definition is not None and prev.definition is not None:
                raise self.error(d, f"redefinition of function '{d.name}' (previously defined "
                                    f"on line {prev.definition.line})")
            fs = prev
        else:
            fs = FuncSym(d.name, kind, ret, ptypes, d.line, d.col, param_refs=refs,
                         param_ref_consts=ref_consts, ret_ref=d.ref is not None)
            self.functions[key] = fs
            if group is not None:
                group.append(fs)
        if definition is not None:
            fs.definition = definition
            fs.params = []
            seen: set[str] = set()
            named = {p.name for p, _, _ in pnames if p.name is not None}
            word = 0  # a parameter's first word (LDC index): 64-bit scalars take two
            for i, (p, t, readonly) in enumerate(pnames):
                name = p.name
                if name is None:  # an unnamed parameter still needs a name in Kernel.params
                    name = f"arg{i}"
                    while name in named or name in seen:
                        name += "_"
                elif name in seen:
                    raise self.error(p, f"redefinition of parameter '{p.name}'")
                seen.add(name)
                if is_struct(t):  # in memory: a copy in the local frame, or the argument's cells
                    fs.params.append(VarSym(name, t, "shared", p.line, p.col, readonly=readonly,
                                            index=word, hidden=p.name is None, ref=p.ref is not None,
                                            space="bound" if p.ref is not None else "local"))
                    word += 1
                    continue
                fs.params.append(VarSym(name, t, "param", p.line, p.col, readonly=readonly, index=word,
                                        hidden=p.name is None, ref=p.ref is not None))
                word += 1 if isinstance(t, PtrType) else words(t)
        return fs

    def function_body(self, fs: FuncSym, fd: A.FunctionDef) -> None:
        self.check_body(fs, fd, {})
        self.scopes = []
        self.func = None

    # ------------------------------------------------------------------ templates

    def template_declaration(self, t: A.TemplateDef) -> None:
        name = t.name
        if t.struct is not None and t.struct.targs is not None:
            return self.class_specialisation(t)
        if t.struct is not None:
            if name in self.class_templates or name in self.typedefs:
                raise self.error(t.struct, f"redefinition of '{name}'")
            self.class_templates[name] = t
            for p in t.params:
                if p.kind == "value" and not is_int(self.spec_info(p.specs, "template parameter").base):
                    raise self.error(p, f"template parameter '{p.name}' must have an integer type")
            return
        if not t.params:
            return self.specialisation(t)
        if t.func.decl.targs is not None:
            raise self.error(t.func.decl, f"partial specialisation of function template '{name}' is not "
                                          "allowed (C++ has none; overload it or specialise fully: "
                                          f"'template <> ... {name}<...>(...)')")
        earlier = self.templates.get(name)
        if earlier is not None and earlier.func is not None and (earlier.func.body is None or t.func.body is None):
            if len(earlier.params) != len(t.params) or [p.kind for p in earlier.params] != [p.kind for p in t.params]:
                raise self.error(t.func.decl, f"template '{name}' redeclared with different template parameters")
            if t.func.body is None:
                return  # a prototype after the definition (or another prototype)
        elif name in self.templates or name in self.functions:
            raise self.error(t.func.decl, f"redefinition of '{name}'")
        seen: set[str] = set()
        for i, p in enumerate(t.params):
            if p.name in seen:
                raise self.error(p, f"duplicate template parameter '{p.name}'")
            seen.add(p.name)
            if p.default is None and i and t.params[i - 1].default is not None and \
                    (t.func is None or "__global__" in {s.text for s in t.func.specs}):
                raise self.error(p, f"template parameter '{p.name}' needs a default argument (the "
                                    "parameters before it have one)")
            if p.kind == "value":
                base = self.spec_info(p.specs, "template parameter").base
                if not is_int(base):
                    raise self.error(p, f"template parameter '{p.name}' must have an integer type "
                                        f"(got '{base}')")
        self.templates[name] = t

    def specialisation(self, t: A.TemplateDef) -> None:
        """`template <> __device__ float f<float>(float x) {...}`: the body used for f<float>,
        instead of the template's text with T = float."""
        if t.func is None:
            raise self.error(t, "explicit specialisation of a class template is not supported; "
                                "give the specialised struct its own name")
        d = t.func.decl
        name = d.name
        primary = self.templates.get(name)
        if primary is None:
            raise self.error(d, f"explicit specialisation of '{name}', which is not a function "
                                "template declared before it")
        if d.targs is None:
            raise self.error(d, f"explicit specialisation of '{name}': write its template arguments "
                                f"('{name}<...>(...)'; they are not deduced from the parameters here)")
        values = self.template_args(primary, d.targs, d)
        for p in primary.params[len(values):]:
            if p.default is None:
                raise self.error(d, f"too few template arguments for '{name}' (give '{p.name}')")
            values.append(self.template_default(primary, p, values))
        display = self.instance_name(name, values)
        if display in self.specialisations:
            raise self.error(d, f"redefinition of '{display}'")
        self.specialisations[display] = t.func

    @staticmethod
    def instance_name(name: str, values: list) -> str:
        return f"{name}<{', '.join(str(v) for v in values)}>"

    def template_args(self, t: A.TemplateDef, targs: list, at: A.Node, offset: int = 0) -> list:
        """Explicit template arguments -> a Type or an int per parameter (from parameter `offset`)."""
        name = t.name
        if len(targs) > len(t.params):
            raise self.error(at, f"too many template arguments for '{name}' ({len(targs)} for "
                                 f"{len(t.params)})")
        out: list = []
        for p, a in zip(t.params[offset:], targs):
            if p.kind == "type":
                if not isinstance(a, A.TypeSyntax):
                    raise self.error(a, f"template argument for '{p.name}' of '{name}' must be a type")
                out.append(self.type_of_syntax(a, "template argument"))
            else:
                if isinstance(a, A.TypeSyntax):
                    raise self.error(a, f"template argument for '{p.name}' of '{name}' must be a "
                                        "constant, not a type")
                self.rvalue(a)
                if a.const is None or not is_int(a.ty):
                    raise self.error(a, f"template argument for '{p.name}' of '{name}' is not an "
                                        "integer constant")
                out.append(wrap(a.const, self.spec_info(p.specs, "template parameter").base))
        return out

    def deduce(self, t: A.TemplateDef, given: list, args: list[A.Expr], at: A.Node) -> list:
        """The remaining template arguments, deduced from the call's argument types."""
        name = t.func.decl.name
        found: dict[str, Type] = {}
        open_types = {p.name for p in t.params[len(given):] if p.kind == "type"}
        for pd, a in zip(t.func.decl.params or [], args):
            tnames = [s.text for s in pd.type.specs if s.typename and s.text in open_types]
            if not tnames:
                continue
            ty = self.rvalue(a)
            levels = len(pd.type.pointers) + (1 if pd.arrays else 0)
            for _ in range(levels):
                if not isinstance(ty, PtrType):
                    raise self.error(a, f"cannot deduce '{tnames[0]}' of '{name}' from '{a.ty}'")
                ty = ty.elem
            if isinstance(ty, PtrType) or not (is_arith(ty) or is_struct(ty)):
                raise self.error(a, f"cannot deduce '{tnames[0]}' of '{name}' from '{a.ty}'")
            prev = found.get(tnames[0])
            if prev is not None and prev != ty:
                raise self.error(a, f"conflicting deductions of '{tnames[0]}' for '{name}' ('{prev}' "
                                    f"and '{ty}'); write {name}<...>(...)")
            found[tnames[0]] = ty
        out = list(given)
        for p in t.params[len(given):]:
            if p.name not in found:
                if p.default is not None:
                    out.append(self.template_default(t, p, out))
                    continue
                raise self.error(at, f"cannot deduce template parameter '{p.name}' of '{name}'; "
                                     f"write {name}<...>(...)")
            out.append(found[p.name])
        return out

    def bind_template_params(self, params: list, values: list) -> dict[str, VarSym]:
        """Type parameters become typedefs (in place; callers restore them), the others the
        constants returned, for the scope of an instance's body or a later default."""
        consts = {}
        for p, v in zip(params, values):
            if p.kind == "type":
                self.typedefs[p.name] = (v, False)
            else:
                ty = self.spec_info(p.specs, "template parameter").base
                consts[p.name] = VarSym(p.name, ty, "const", p.line, p.col, readonly=True, const_value=v)
        return consts

    def check_body(self, fs: FuncSym, fd: A.FunctionDef, consts: dict) -> None:
        """Check a function's body with its parameters (and a template's constants) in scope."""
        self.func, self.loop_depth = fs, 0
        self.scopes = [dict(consts)]
        for p in fs.params:
            if not p.hidden:
                self.scopes[0][p.name] = p
        for item in fd.body.items:
            self.stmt(item)

    def template_default(self, t: A.TemplateDef, p: A.TemplateParam, before: list):
        """A default template argument, which may name the parameters before it
        (`int M = N * 2`)."""
        saved = dict(self.typedefs), self.scopes
        try:
            self.scopes = [self.bind_template_params(t.params, before)]
            return self.template_args(t, [copy.deepcopy(p.default)], p.default, offset=len(before))[0]
        finally:
            self.typedefs, self.scopes = saved

    def instantiate(self, t: A.TemplateDef, values: list, at: A.Node) -> FuncSym:
        name = t.func.decl.name
        display = self.instance_name(name, values)
        fs = self.functions.get(display)
        if fs is not None:
            return fs
        special = self.specialisations.get(display)
        if special is None and t.func.body is None:
            raise self.error(at, f"'{display}' is used but the template '{name}' is only declared, and has "
                                 f"no specialisation for these arguments; define the template or "
                                 f"'template <> ... {display}(...)'")
        fd = copy.deepcopy(special if special is not None else t.func)
        fd.decl.name, fd.decl.targs = display, None
        saved = (self.func, self.scopes, self.loop_depth, dict(self.typedefs))
        consts = self.bind_template_params(t.params, values) if special is None else {}
        try:
            self.func, self.scopes = None, []
            fs = self.declare_function(fd.specs, fd.decl, definition=fd)
            fs.template = (name, [v if isinstance(v, int) else getattr(v, "kind", str(v)) for v in values])
            self.check_body(fs, fd, consts)
        finally:
            self.func, self.scopes, self.loop_depth, self.typedefs = saved
        self.instances.append((fs, fd))
        return fs

    def instantiate_by_name(self, request: str) -> None:
        """`matmul<8>` or `scale<float>` named at launch: a kernel template instantiated."""
        m = re.fullmatch(r"\s*([A-Za-z_]\w*)\s*<(.*)>\s*", request)
        if m is None:
            raise self.error(1, 1, f"kernel '{request}': expected NAME<ARGS> for a kernel template")
        t = self.templates.get(m.group(1))
        if t is None or "__global__" not in {s.text for s in t.func.specs}:
            have = ", ".join(n for n, x in self.templates.items()
                             if "__global__" in {s.text for s in x.func.specs}) or "none"
            raise self.error(1, 1, f"kernel '{request}': the program has no kernel template "
                                   f"'{m.group(1)}' (kernel templates: {have})")
        parts = [x.strip() for x in m.group(2).split(",")] if m.group(2).strip() else []
        required = sum(1 for p in t.params if p.default is None)
        if not required <= len(parts) <= len(t.params):
            n = str(len(t.params)) if required == len(t.params) else f"{required} to {len(t.params)}"
            raise self.error(1, 1, f"kernel '{request}': '{m.group(1)}' takes {n} template "
                                   f"argument{'s' if len(t.params) != 1 else ''}")
        values: list = []
        for p, text in zip(t.params, parts):
            if p.kind == "value":
                try:
                    n = {"true": 1, "false": 0}.get(text)
                    values.append(wrap(int(re.sub(r"(?i)(ull|llu|ul|lu|ll|u|l)$", "", text), 0) if n is None else n,
                                       self.spec_info(p.specs, "template parameter").base))
                except ValueError:
                    raise self.error(1, 1, f"kernel '{request}': '{text}' is not an integer for "
                                           f"'{p.name}'") from None
            else:
                words = text.replace("*", " * ").split()
                specs = [A.Spec(1, 1, w, typename=w in self.typedefs and w not in TYPE_WORDS)
                         for w in words if w != "*"]
                try:
                    values.append(self.type_of_syntax(A.TypeSyntax(1, 1, specs, [[]] * words.count("*")),
                                                      "template argument"))
                except CompileError as e:
                    why = e.message if words and words[0] in TYPE_WORDS + ("double", "long", "short") \
                        else f"'{text}' is not a type"
                    raise self.error(1, 1, f"kernel '{request}': {why} (for '{p.name}')") from None
        for p in t.params[len(values):]:
            values.append(self.template_default(t, p, values))
        self.instantiate(t, values, t.func.decl)

    def check_calls(self) -> None:
        for fs in self.functions.values():
            for callee, call in fs.calls:
                if callee.definition is None:
                    raise self.error(call, f"function '{callee.name}' is declared but never defined")

    def check_recursion(self, order: list[FuncSym]) -> None:
        for start in order:
            # Depth-first search for a call path from `start` back to `start`.
            stack: list[tuple[FuncSym, int, list[FuncSym]]] = [(start, 0, [start])]
            visited: set[int] = set()
            first_call: dict[int, A.Call] = {}
            while stack:
                f, i, path = stack.pop()
                if i >= len(f.calls):
                    continue
                stack.append((f, i + 1, path))
                callee, call = f.calls[i]
                if len(path) == 1:
                    first_call[id(callee)] = call
                    root_call = call
                else:
                    root_call = first_call[id(path[1])]
                if callee is start:
                    if len(path) == 1:
                        raise self.error(call, f"recursion is not supported: '{start.name}' "
                                               "calls itself")
                    chain = " -> ".join(p.name for p in path + [start])
                    raise self.error(root_call, f"recursion is not supported: '{start.name}' calls "
                                                f"itself ({chain})")
                if id(callee) in visited:
                    continue
                visited.add(id(callee))
                stack.append((callee, 0, path + [callee]))

    # ------------------------------------------------------------------ statements

    def stmt(self, s) -> None:
        if isinstance(s, A.DeclStmt):
            self.local_declaration(s)
        elif isinstance(s, A.Block):
            self.scopes.append({})
            for it in s.items:
                self.stmt(it)
            self.scopes.pop()
        elif isinstance(s, A.ExprStmt):
            if s.expr is not None:
                self.rvalue(s.expr, allow_void=True)
        elif isinstance(s, A.If):
            self.condition(s.cond)
            self.sub_stmt(s.then)
            if s.other is not None:
                self.sub_stmt(s.other)
        elif isinstance(s, A.While):
            self.condition(s.cond)
            self.loop_body(s.body)
        elif isinstance(s, A.DoWhile):
            self.loop_body(s.body)
            self.condition(s.cond)
        elif isinstance(s, A.For):
            self.scopes.append({})
            if s.init is not None:
                self.stmt(s.init)
            if s.cond is not None:
                self.condition(s.cond)
            if s.step is not None:
                self.rvalue(s.step, allow_void=True)
            self.loop_body(s.body)
            self.scopes.pop()
        elif isinstance(s, A.Break):
            if self.loop_depth == 0:
                raise self.error(s, "'break' statement not in a loop")
        elif isinstance(s, A.Continue):
            if self.loop_depth == 0:
                raise self.error(s, "'continue' statement not in a loop")
        elif isinstance(s, A.Return):
            self.return_stmt(s)
        else:  # pragma: no cover
            raise AssertionError(type(s))

    def sub_stmt(self, s) -> None:
        # A declaration as the whole body of if/while gets its own scope.
        self.scopes.append({})
        self.stmt(s)
        self.scopes.pop()

    def loop_body(self, s) -> None:
        self.loop_depth += 1
        self.sub_stmt(s)
        self.loop_depth -= 1

    def condition(self, e: A.Expr) -> None:
        t = self.rvalue(e)
        if not is_scalar(t):
            raise self.error(e, f"condition has type '{t}'; expected a scalar")

    def return_stmt(self, s: A.Return) -> None:
        fs = self.func
        assert fs is not None
        if isinstance(fs.ret, VoidType):
            if s.value is not None:
                t = self.rvalue(s.value, allow_void=True)
                if not isinstance(t, VoidType):
                    what = "kernel" if fs.kind == "global" else "void function"
                    raise self.error(s.value, f"{what} '{fs.name}' must not return a value")
            return
        if s.value is None:
            raise self.error(s, f"function '{fs.name}' must return a value of type '{fs.ret}'")
        if isinstance(s.value, A.BraceInit):  # `return {a, b};`: the return type brace-initialised
            if fs.ret_ref:
                raise self.error(s.value, f"function '{fs.name}' returns a reference; it cannot "
                                          "return a brace list")
            if is_struct(fs.ret):
                s.temp = self.temp(fs.ret, s.value)
                s.temp.init_cells = self.aggregate(fs.ret, s.value, f"return value of {fs.name}")
                s.temp.init_braced = True
                s.value = A.Name(s.value.line, s.value.col, s.temp.name)
                s.value.sym = s.temp
                s.value.ty = fs.ret
                return
            if isinstance(fs.ret, PtrType) or is_arith(fs.ret):
                s.value = self.scalar_init(s.value, f"return value of {fs.name}")
            else:
                raise self.error(s.value, f"cannot return a brace list from '{fs.name}' "
                                          f"(returning '{fs.ret}')")
        if fs.ret_ref:
            t = self.check(s.value)
            kind = self.lvalue_kind(s.value)
            if kind == "var":
                raise self.error(s.value, f"cannot return a reference to local variable "
                                          f"'{s.value.sym.name}' (locals live in registers)")
            if kind != "mem" or t != fs.ret:
                raise self.error(s.value, f"function '{fs.name}' returns a reference: return a "
                                          f"'{fs.ret}' in memory ('*this', 'a[i]', 'p->x')")
            root = s.value
            while isinstance(root, (A.Member, A.Index)) and not getattr(root, "arrow", False) \
                    and (isinstance(root, A.Member) or root.base.arr is not None):
                root = root.base
            if isinstance(root, A.Name) and root.sym.space == "local":
                raise self.error(s.value, "cannot return a reference to a member of a struct passed "
                                          "by value or a local; return a value")
            return
        self.rvalue(s.value, dst=fs.ret)
        self.convert_check(s.value, fs.ret, "return")

    def local_declaration(self, ds: A.DeclStmt) -> None:
        d = ds.decl
        if self.typedef_again(d):
            return
        info = self.spec_info(d.specs)
        st = info.storage
        for bad in ("__global__", "__device__", "static", "__constant__"):
            if bad in st:
                msg = ("static local variables are not supported" if bad == "static"
                       else "__constant__ variables must be declared at file scope"
                       if bad == "__constant__" else f"'{bad}' is not allowed on a local variable")
                raise self.error(st[bad], msg)
        for k in ("inline", "__inline__", "__forceinline__", "__noinline__"):
            if k in st:
                raise self.error(st[k], f"'{k}' is not allowed on a variable")
        shared = "__shared__" in st
        if not d.items:
            return
        if "typedef" in st:
            self.typedef_declaration(d, info)
            return
        for it in d.items:
            decl = it.decl
            if decl.params is not None and not decl.funcptr:
                raise self.error(decl, "local function declarations are not supported")
            self.check_declarator_shape(decl)
            if shared and "extern" in st:
                sym = self.dynamic_shared_declaration(info, it)
                self.declare(sym)
                ds.syms.append(sym)
                continue
            if is_struct(info.base) and not decl.pointers and not shared and not decl.arrays:
                sym = self.struct_local(info, it)
                self.declare(sym)
                ds.syms.append(sym)
                continue
            if decl.arrays and not shared and not decl.pointers:
                sym = self.local_array_declaration(info, it)
                self.declare(sym)
                ds.syms.append(sym)
                continue
            if isinstance(it.init, A.BraceInit) and (shared or decl.arrays):
                raise self.error(it.init, "initialiser lists are not supported")
            if it.init is not None:
                it.init = self.scalar_init(it.init, decl.name)
            if shared:
                sym = self.shared_declaration(info, it)
            else:
                if decl.arrays:
                    raise self.error(decl, f"arrays of pointers are not supported ('{decl.name}')")
                ty, readonly = self.apply_pointers(info.base, decl.pointers, info.const, decl)
                if isinstance(ty, VoidType):
                    raise self.error(decl, f"variable '{decl.name}' has type void")
                sym = VarSym(decl.name, ty, "local", decl.line, decl.col, readonly=readonly)
                if it.init is not None:
                    self.rvalue(it.init, dst=ty)
                    self.convert_check(it.init, ty, "initialisation")
                    if readonly and is_int(ty) and it.init.const is not None:
                        sym.kind = "const"
                        sym.const_value = wrap(it.init.const, ty)
                elif readonly:
                    raise self.error(decl, f"const variable '{decl.name}' needs an initialiser")
            self.declare(sym)
            ds.syms.append(sym)

    def check_shared(self, info: SpecInfo, it: A.InitDeclarator) -> None:
        """What static and extern __shared__ declarations share: no initialiser, no pointer,
        an arithmetic element type."""
        decl = it.decl
        if it.init is not None:
            raise self.error(it.init, "__shared__ variables cannot have an initialiser")
        if decl.pointers:
            raise self.error(decl, "__shared__ pointers are not supported; declare a __shared__ "
                                   "array")
        if not is_arith(info.base) and not (is_struct(info.base) and info.base.complete):
            raise self.error(decl, f"__shared__ variable '{decl.name}' has type '{info.base}'")

    def shared_declaration(self, info: SpecInfo, it: A.InitDeclarator) -> VarSym:
        decl = it.decl
        self.check_shared(info, it)
        if len(decl.arrays) > 2:
            raise self.error(decl, "__shared__ arrays have at most 2 dimensions")
        dims = tuple(self.array_dim(e, decl.name, decl) for e in decl.arrays)
        ty: Type = ArrayType(info.base, dims, info.const) if dims else info.base
        return VarSym(decl.name, ty, "shared", decl.line, decl.col, readonly=info.const)

    def local_array_declaration(self, info: SpecInfo, it: A.InitDeclarator) -> VarSym:
        """`T a[N]` / `T a[N][M]` in a function: a per-thread array in memory (registers cannot
        be indexed), optionally brace-initialised with run-time values."""
        decl = it.decl
        if not is_arith(info.base) and not is_struct(info.base):
            raise self.error(decl, f"local array '{decl.name}' has type '{info.base}'")
        if len(decl.arrays) > 2:
            raise self.error(decl, "local arrays have at most 2 dimensions")
        init = it.init
        if init is not None and not isinstance(init, A.BraceInit):
            raise self.error(init, f"array '{decl.name}' must be initialised with braces")
        if is_struct(info.base):
            self.complete(info.base, decl)
            dims = tuple(self.array_dim(x, decl.name, decl) for x in decl.arrays)
            ty = ArrayType(info.base, dims, info.const)
            sym = VarSym(decl.name, ty, "shared", decl.line, decl.col, readonly=info.const,
                         space="local")
            if init is not None:
                sym.init_cells = self.aggregate(ty, init, decl.name)
                sym.init_braced = True
            return sym
        dims, pairs = self.array_initialiser(decl, info.base, init, constant=False)
        if info.const and init is None:
            raise self.error(decl, f"const array '{decl.name}' needs an initialiser")
        sym = VarSym(decl.name, ArrayType(info.base, tuple(dims), info.const), "shared", decl.line,
                     decl.col, readonly=info.const, space="local")
        sym.init_exprs = pairs if init is not None else None
        return sym

    def array_initialiser(self, decl: A.Declarator, base: Type, init, constant: bool):
        """Dimensions (an empty first one sized by the list) and (cell, expression) pairs of a
        brace initialiser: flat, or nested by rows for a 2-D array."""
        arrays = decl.arrays
        items: list = list(init.items) if isinstance(init, A.BraceInit) else []
        if isinstance(init, A.BraceInit):
            self.no_designators(init, decl.name)
        nested = len(arrays) == 2 and any(isinstance(x, A.BraceInit) for x in items)
        rows = [x.items if isinstance(x, A.BraceInit) else [x] for x in items] if nested else [items]
        for x in (y for r in rows for y in r):
            if isinstance(x, A.BraceInit):
                raise self.error(x, f"unexpected braces in the initialiser of '{decl.name}'")
        dims = [0 if e is None and i == 0 and init is not None else self.array_dim(e, decl.name, decl)
                for i, e in enumerate(arrays)]
        if dims and dims[0] == 0:  # `T a[] = {...}`: the initialiser gives the size
            cols = dims[1] if len(dims) == 2 else 1
            dims[0] = max(1, len(rows) if nested else -(-len(items) // cols))
        size = 1
        for d in dims:
            size *= d
        width = dims[-1] if nested else size
        if nested and len(rows) > dims[0]:
            raise self.error(items[dims[0]], f"too many initialisers for '{decl.name}' "
                                             f"({len(rows)} rows for {dims[0]})")
        pairs = []
        for r, row in enumerate(rows):
            if len(row) > width:
                raise self.error(row[width], f"too many initialisers for '{decl.name}' "
                                             f"({len(row)} for {width})")
            for j, x in enumerate(row):
                if constant:
                    pairs.append((r * width + j, self.constant_cell(x, base, decl.name)))
                else:
                    self.rvalue(x, dst=base)
                    self.convert_check(x, base, "initialisation")
                    pairs.append((r * width + j, x))
        return dims, pairs

    def dynamic_shared_declaration(self, info: SpecInfo, it: A.InitDeclarator) -> VarSym:
        """`extern __shared__ T name[];`: every such array starts where the kernel's static
        __shared__ variables end (CUDA's rule, so several declarations alias one base)."""
        decl = it.decl
        self.check_shared(info, it)
        if len(decl.arrays) != 1 or decl.arrays[0] is not None:
            raise self.error(decl, f"extern __shared__ '{decl.name}' must be a 1-D array of unknown "
                                   f"size ('{decl.name}[]'); its size is set at launch "
                                   "(qgrun --shared BYTES)")
        return VarSym(decl.name, ArrayType(info.base, (0,), info.const), "shared", decl.line, decl.col,
                      readonly=info.const, space="dynamic")

    def device_variable(self, info: SpecInfo, it: A.InitDeclarator) -> VarSym:
        """`__device__ unsigned int count = 0;` (or an array): global cells laid out and filled
        like a __constant__ variable (from its initialiser, or --const at launch), but writable
        (stores, atomics, a non-const pointer to it)."""
        sym = self.constant_declaration(info, it)
        sym.readonly = False
        if isinstance(sym.ty, ArrayType):
            sym.ty = ArrayType(sym.ty.elem, sym.ty.dims, info.const)
        return sym

    def constant_declaration(self, info: SpecInfo, it: A.InitDeclarator) -> VarSym:
        """`__constant__ T name[N] = {...};` (or a scalar): read-only global cells that the
        launcher fills from the initialiser, or from a --const array."""
        decl = it.decl
        if decl.pointers:
            raise self.error(decl, "__constant__ pointers are not supported; declare a __constant__ "
                                   "array or scalar")
        if is_struct(info.base):
            raise self.error(decl, f"__constant__ structs are not supported ('{decl.name}'); declare "
                                   "a __constant__ array per member, or pass a pointer to a buffer "
                                   "of structs")
        if not is_arith(info.base):
            raise self.error(decl, f"__constant__ variable '{decl.name}' has type '{info.base}'")
        if is_double(info.base):
            raise self.error(decl, f"__constant__ variables of type double are not supported ('{decl.name}'); "
                                   "pass a 'const double *' buffer")
        if len(decl.arrays) > 2:
            raise self.error(decl, "__constant__ arrays have at most 2 dimensions")
        base, init, arrays = info.base, it.init, decl.arrays
        if arrays and init is not None and not isinstance(init, A.BraceInit):
            raise self.error(init, f"array '{decl.name}' must be initialised with braces")
        dims, pairs = self.array_initialiser(decl, base, init if arrays else None, constant=True)
        size = 1
        for d in dims:
            size *= d
        values = [0] * size
        for i, v in pairs:
            values[i] = v
        if init is not None and not arrays:
            values[0] = self.constant_cell(self.scalar_init(init, decl.name), base, decl.name)
        # a 64-bit element is two cells, the low word first
        cells = [w for v in values for w in (v & 0xFFFFFFFF, v >> 32)] if is_wide(base) else values
        size = len(cells)
        if self.constant_cells + size > SPEC.global_words:
            raise self.error(decl, f"__constant__ variables need {self.constant_cells + size} cells; "
                                   f"global memory has {SPEC.global_words}")
        ty: Type = ArrayType(base, tuple(dims), True) if dims else base
        sym = VarSym(decl.name, ty, "shared", decl.line, decl.col, readonly=True, space="constant",
                     address=self.constant_cells, init=cells)
        self.constant_cells += size
        self.constants.append(sym)
        return sym

    def constant_cell(self, e: A.Expr, ty: Type, name: str) -> int:
        """The memory cell of a constant initialiser converted to ty (chars: 8-bit pattern)."""
        self.rvalue(e, dst=ty)
        self.convert_check(e, ty, "initialisation")
        if e.dconst is not None:  # a double constant: converted as C converts it
            if is_float(ty):
                return doubleconst.to_float(e.dconst)
            if ty.kind == "bool":
                return int(doubleconst.truth(e.dconst))
            lo, hi = (-(1 << (ty.bits - 1)), (1 << (ty.bits - 1)) - 1) if ty.signed else (0, (1 << ty.bits) - 1)
            if ty.kind in ("char", "uchar"):
                lo, hi = (-(1 << 31), (1 << 31) - 1)  # through int, then modulo 2^8
            v = wrap(doubleconst.to_int(e.dconst, lo, hi), ty)
            return v & (0xFF if ty.kind in ("char", "uchar") else (1 << 64) - 1 if is_wide(ty) else 0xFFFFFFFF)
        if is_float(ty):
            if e.fconst is not None:
                return e.fconst
            if e.const is not None:
                return (floatconst.from_int64 if is_wide(e.ty) else floatconst.from_int)(e.const, e.ty.signed)
        elif is_wide(ty):  # both cells in one int, the low word first (split by the caller)
            if e.fconst is not None:
                return wrap(floatconst.to_int64(e.fconst, ty.signed), ty) & ((1 << 64) - 1)
            if e.const is not None:
                return wrap(e.const, ty) & ((1 << 64) - 1)
        elif e.fconst is not None:
            fc = e.fconst
            v = (int(floatconst.truth(fc)) if ty.kind == "bool" else floatconst.to_uint(fc)
                 if ty.kind == "unsigned" else floatconst.to_int(fc))
            v = wrap(v, ty)
            return v & 0xFF if ty.kind in ("char", "uchar") else v & 0xFFFFFFFF
        elif e.const is not None:
            v = wrap(e.const, ty)
            return v & 0xFF if ty.kind in ("char", "uchar") else v & 0xFFFFFFFF
        raise self.error(e, f"the initialiser of __constant__ '{name}' is not a compile-time constant")

    # ------------------------------------------------------------------ expressions

    def rvalue(self, e: A.Expr, allow_void: bool = False, dst: Type | None = None) -> Type:
        """Type-check e as a value: arrays decay to pointers (2-D arrays are an error).

        dst is the type the value is converted to right away (initialiser,
        assignment, argument, return, cast): only a float destination accepts an
        unsuffixed (double) floating constant, because elsewhere C would compute
        in double, which the machine does not have."""
        t = e.ty if getattr(e, "pretyped", False) else self.check(e)
        if isinstance(t, ArrayType):
            e.arr = t
            if len(t.dims) > 1:
                raise self.error(e, f"2-D array cannot be used as a value (type '{t}'); index it")
            t = PtrType(t.elem, t.const)
            e.ty = t
        if isinstance(t, VoidType) and not allow_void:
            raise self.error(e, "void value used in an expression")
        return t

    def probe_type(self, e: A.Expr) -> Type:
        """Type e as a value once, before the callee is chosen (frontend/overloads.py); a later
        rvalue() of e reuses the type instead of checking e again."""
        t = self.rvalue(e)
        e.pretyped = True
        return t

    def check(self, e: A.Expr) -> Type:
        m = getattr(self, "check_" + type(e).__name__)
        t = m(e)
        e.ty = t
        return t

    def convert_check(self, e: A.Expr, dst: Type, ctx: str) -> None:
        src = e.ty
        if isinstance(src, VoidType):
            raise self.error(e, "void value used in an expression")
        if is_struct(dst) or is_struct(src):
            if src != dst and is_struct(src) and not is_struct(dst) and self.conversion(e, src, dst, ctx):
                return
            if src != dst:
                raise self.error(e, f"cannot convert '{src}' to '{dst}' in {ctx}")
            return
        if isinstance(dst, (IntType, FloatType, DoubleType)):
            if is_arith(src):
                return
            raise self.error(e, f"cannot convert '{src}' to '{dst}' in {ctx}")
        if isinstance(dst, PtrType):
            if isinstance(src, PtrType):
                if src.elem != dst.elem:
                    raise self.error(e, f"cannot convert '{src}' to '{dst}' in {ctx}")
                if src.const and not dst.const:
                    raise self.error(e, f"cannot convert '{src}' to '{dst}' in {ctx} "
                                        "(it would discard 'const')")
                return
            if isinstance(src, IntType) and e.const == 0:
                return  # null pointer constant
            raise self.error(e, f"cannot convert '{src}' to '{dst}' in {ctx}")
        raise self.error(e, f"cannot convert '{src}' to '{dst}' in {ctx}")  # pragma: no cover

    # -- literals

    def check_IntLit(self, e: A.IntLit) -> Type:
        m = re.fullmatch(r"(0[xX][0-9a-fA-F]*|0[bB][01]*|[0-9]+)([A-Za-z_][A-Za-z0-9_]*)?", e.text)
        if not m:
            raise self.error(e, f"invalid integer literal '{e.text}'")  # pragma: no cover
        digits, suffix = m.group(1), m.group(2) or ""
        if digits[:2] in ("0x", "0X"):
            if len(digits) == 2:
                raise self.error(e, f"invalid integer literal '{e.text}'")
            value = int(digits[2:], 16)
        elif digits[:2] in ("0b", "0B"):
            if len(digits) == 2:
                raise self.error(e, f"invalid integer literal '{e.text}'")
            value = int(digits[2:], 2)
        elif digits.startswith("0") and len(digits) > 1:
            if not re.fullmatch(r"[0-7]+", digits):
                raise self.error(e, f"invalid digit in octal literal '{e.text}'")
            value = int(digits, 8)
        else:
            value = int(digits)
        m = re.fullmatch(r"(?:([uU])(l|L|ll|LL)?|(l|L|ll|LL)([uU])?)?", suffix)
        if m is None:
            raise self.error(e, f"invalid suffix '{suffix}' on integer literal")
        unsigned = bool(m.group(1) or m.group(4))
        long_ = bool(m.group(2) or m.group(3))
        if value > (1 << 64) - 1:
            raise self.error(e, f"integer literal '{e.text}' is too large (it does not fit in 64 bits)")
        # C++'s rule: the first type of the list that holds the value; a decimal literal without
        # 'u' is never unsigned (long is 64 bits, so long and long long are one type here).
        decimal = not digits.startswith("0") or digits == "0"
        if unsigned:
            cands = [ULLONG] if long_ else [UINT, ULLONG]
        elif decimal:
            cands = [LLONG] if long_ else [INT, LLONG]
        else:
            cands = [LLONG, ULLONG] if long_ else [INT, UINT, LLONG, ULLONG]
        fits = [t for t in cands if value <= {"int": INT_MAX, "unsigned": 0xFFFFFFFF,
                                              "llong": (1 << 63) - 1, "ullong": (1 << 64) - 1}[t.kind]]
        if not fits:
            raise self.error(e, f"integer literal '{e.text}' is too large for 'long long'; write "
                                f"'{e.text}ull'")
        e.const = wrap(value, fits[0])
        return fits[0]

    def check_CharLit(self, e: A.CharLit) -> Type:
        body = e.text[1:-1]
        if body == "":
            raise self.error(e, "empty character constant")
        vals = []
        i = 0
        simple = {"n": 10, "t": 9, "r": 13, "0": 0, "\\": 92, "'": 39, '"': 34, "a": 7, "b": 8,
                  "f": 12, "v": 11, "?": 63}
        while i < len(body):
            c = body[i]
            if c != "\\":
                if ord(c) > 127:
                    raise self.error(e, "non-ASCII character constants are not supported")
                vals.append(ord(c))
                i += 1
                continue
            nxt = body[i + 1]
            if nxt == "x":
                m = re.match(r"[0-9a-fA-F]+", body[i + 2:])
                if not m:
                    raise self.error(e, "\\x used with no following hex digits")
                vals.append(int(m.group(0), 16))
                i += 2 + len(m.group(0))
            elif nxt in "01234567":
                m = re.match(r"[0-7]{1,3}", body[i + 1:])
                vals.append(int(m.group(0), 8))
                i += 1 + len(m.group(0))
            elif nxt in simple:
                vals.append(simple[nxt])
                i += 2
            else:
                raise self.error(e, f"unknown escape sequence '\\{nxt}'")
        if len(vals) != 1:
            raise self.error(e, "multi-character character constants are not supported")
        if vals[0] > 255:
            raise self.error(e, "character constant out of range")
        e.const = wrap(vals[0], CHAR)
        return CHAR

    def check_BoolLit(self, e: A.BoolLit) -> Type:
        e.const = int(e.value)
        return BOOL

    def check_FloatLit(self, e: A.FloatLit) -> Type:
        try:
            fbits, e.double = floatconst.literal(e.text)
        except floatconst.LiteralError as err:
            raise self.error(e, str(err)) from None
        if e.double:  # unsuffixed: a double constant (C++)
            e.dconst = doubleconst.literal(floatconst.literal_number(e.text))
            return DOUBLE
        e.fconst = fbits
        return FLOAT

    def check_StringLit(self, e: A.StringLit) -> Type:
        raise self.error(e, "string literals are not supported")

    # -- names

    def check_Name(self, e: A.Name) -> Type:
        sym = self.lookup(e.name)
        if e.name == "this" and sym is None:
            raise self.error(e, "'this' is only available in a member function")
        st = self.func.method_of if self.func is not None else None
        if sym is None and st is not None and st.field(e.name) is not None:
            # A member named in a member function: `x` is `this->x`.
            _become(e, A.Member(e.line, e.col, A.Name(e.line, e.col, "this"), e.name, arrow=True))
            return self.check_Member(e)
        if sym is None:
            if e.name in self.functions:
                raise self.error(e, f"function '{e.name}' cannot be used as a value (function "
                                    "pointers are not supported)")
            if e.name in BUILTIN_VECTORS:
                raise self.error(e, f"'{e.name}' must be used with .x, .y or .z")
            if e.name == "warpSize":
                e.const = SPEC.warp_size
                return INT
            if e.name == "NULL":
                raise self.error(e, "unknown identifier 'NULL'; use 0")
            raise self.error(e, f"unknown identifier '{e.name}'")
        e.sym = sym
        if sym.const_value is not None:
            e.const = sym.const_value
        return sym.ty

    def check_Member(self, e: A.Member) -> Type:
        b = e.base
        if isinstance(b, A.Name) and b.name in BUILTIN_VECTORS and self.lookup(b.name) is None:
            if e.arrow:
                raise self.error(e, f"'{b.name}' is not a pointer; use '{b.name}.{e.name}'")
            axes = {"x": 0, "y": 1, "z": 2}
            if e.name not in axes:
                raise self.error(e, f"'{b.name}' has no member '{e.name}' (use .x, .y or .z)")
            e.sreg = BUILTIN_VECTORS[b.name][axes[e.name]]
            b.ty = None
            return UINT
        if e.arrow:
            bt = self.rvalue(b)
            if not (is_ptr(bt) and is_struct(bt.elem)):
                raise self.error(e, f"'->' needs a pointer to a struct ('{bt}' is not one)")
            st = bt.elem
        else:
            bt = self.check(b)
            if is_ptr(bt) and is_struct(bt.elem):
                raise self.error(e, f"'{bt}' is a pointer; use '->{e.name}'")
            if not is_struct(bt):
                raise self.error(e, f"member '.{e.name}' of a value of type '{bt}', which is not a "
                                    "struct")
            st = bt
        self.complete(st, e)
        f = st.field(e.name)
        if f is None:
            if e.name in st.methods:
                raise self.error(e, f"member function '{st}::{e.name}' must be called: "
                                    f"'{e.name}(...)'")
            raise self.error(e, f"'{st}' has no member named '{e.name}'")
        e.member = f
        if isinstance(f.ty, ArrayType):
            return ArrayType(f.ty.elem, f.ty.dims, self.mem_const(e))
        return f.ty

    # -- operators

    def check_Unary(self, e: A.Unary) -> Type:
        op = e.op
        if op == "&":
            t = self.check(e.operand)
            if isinstance(t, ArrayType):
                raise self.error(e, "taking the address of an array is not supported; use the "
                                    "array name or '&a[0]'")
            kind = self.lvalue_kind(e.operand)
            if kind == "var":
                raise self.error(e, f"cannot take the address of local variable "
                                    f"'{e.operand.sym.name}' (locals live in registers)")
            if kind != "mem":
                raise self.error(e, "cannot take the address of this expression")
            return PtrType(t, self.mem_const(e.operand))
        t = self.rvalue(e.operand, dst=FLOAT if op in ("-", "+") else None)
        if is_struct(t) and op in ("-", "+"):  # `-v`: the struct's unary operator
            r = self.operator_call(e, op, e.operand, [])
            if r is None:
                raise self.error(e, f"invalid operand to unary '{op}' ('{t}'): no unary 'operator{op}'")
            return r
        if op == "*":
            if not isinstance(t, PtrType):
                raise self.error(e, f"indirection requires a pointer operand ('{t}' is not one)")
            return t.elem
        if op == "!":
            if not is_scalar(t):
                raise self.error(e, f"invalid operand to '!' ('{t}')")
            if e.operand.const is not None:
                e.const = int(e.operand.const == 0)
            elif e.operand.dconst is not None:
                e.const = int(not doubleconst.truth(e.operand.dconst))
            return BOOL
        if not is_arith(t) or (op == "~" and is_floating(t)):
            raise self.error(e, f"invalid operand to unary '{op}' ('{t}')")
        if is_double(t):
            dc = e.operand.dconst
            if dc is not None:
                e.dconst = dc ^ doubleconst.SIGN if op == "-" else dc
            return t
        if is_float(t):
            fc = e.operand.fconst
            if fc is not None:
                e.fconst = fc ^ floatconst.SIGN if op == "-" else fc
            return t
        r = promote(t)
        c = e.operand.const
        if c is not None:
            e.const = wrap(-c if op == "-" else (~c if op == "~" else c), r)
        return r

    def lvalue_kind(self, e: A.Expr) -> str | None:
        """'var' (a register variable), 'mem' (a memory cell) or None."""
        if isinstance(e, A.Name) and isinstance(e.sym, VarSym):
            if e.sym.kind in ("local", "param"):
                return "var"
            if e.sym.kind == "const":
                return "const"
            if e.sym.kind == "shared" and not isinstance(e.sym.ty, ArrayType):
                return "mem"
            return None
        if isinstance(e, A.Index) and not isinstance(e.ty, ArrayType):
            return "mem"
        if isinstance(e, A.Unary) and e.op == "*":
            return "mem"
        if isinstance(e, A.Member) and e.member is not None and not isinstance(e.ty, ArrayType):
            return "mem"
        if isinstance(e, A.Call) and isinstance(e.callee, FuncSym) and e.callee.ret_ref:
            return "mem"
        return None

    def mem_const(self, e: A.Expr) -> bool:
        """Whether a memory lvalue is read-only (through a pointer to const)."""
        if isinstance(e, A.Member):
            if e.arrow:
                return e.base.ty.const
            return self.mem_const(e.base)
        if isinstance(e, A.Call):
            return False
        if isinstance(e, A.Name):
            return e.sym.readonly
        if isinstance(e, A.Index):
            bt = e.base.ty
            if isinstance(bt, (PtrType, ArrayType)):
                return bt.const
            return False
        if isinstance(e, A.Unary):
            return e.operand.ty.const
        return False

    def check_assignable(self, target: A.Expr, at: A.Node, what: str) -> None:
        kind = self.lvalue_kind(target)
        if kind == "var":
            sym = target.sym
            if sym.readonly:
                raise self.error(target, f"cannot {what} const variable '{sym.name}'")
            sym.assigned = True
            return
        if kind == "const":
            raise self.error(target, f"cannot {what} const variable '{target.sym.name}'")
        if kind == "mem":
            if self.mem_const(target):
                if isinstance(target, A.Name):
                    raise self.error(target, f"cannot {what} const variable '{target.name}'")
                if isinstance(target, A.Member):
                    raise self.error(target, f"cannot {what} member '{target.name}' of a const "
                                             "struct")
                ptr = target.base.ty if isinstance(target, A.Index) else target.operand.ty
                raise self.error(target, f"cannot {what} read-only memory (through '{ptr}')")
            return
        if isinstance(target, A.Member) and target.sreg is not None:
            raise self.error(target, f"cannot {what} '{target.base.name}.{target.name}' "
                                     "(it is read-only)")
        if isinstance(target.ty, ArrayType):
            raise self.error(target, f"cannot {what} an array")
        raise self.error(at, "expression is not assignable")

    def check_IncDec(self, e: A.IncDec) -> Type:
        t = self.check(e.operand)
        verb = "increment" if e.op == "++" else "decrement"
        if isinstance(t, ArrayType):
            raise self.error(e.operand, f"cannot {verb} an array")
        self.check_assignable(e.operand, e, verb)
        if t == BOOL:
            raise self.error(e, f"cannot {verb} a bool")
        if not is_scalar(t):  # pragma: no cover
            raise self.error(e, f"cannot {verb} a value of type '{t}'")
        return t

    def check_Binary(self, e: A.Binary) -> Type:
        op = e.op
        lt = self.rvalue(e.left)
        rt = self.rvalue(e.right)
        lc, rc = e.left.const, e.right.const
        if is_struct(lt) or is_struct(rt):
            r = self.operator_call(e, op, e.left, [e.right])
            if r is None:
                raise self.error(e, f"invalid operands to binary '{op}' ('{lt}' and '{rt}'): no "
                                    f"'operator{op}' for them")
            return r

        def bad() -> CompileError:
            return self.error(e, f"invalid operands to binary '{op}' ('{lt}' and '{rt}')")

        if op in ("&&", "||"):
            if not (is_scalar(lt) and is_scalar(rt)):
                raise bad()
            if lc is not None and rc is not None:
                e.const = fold_binary(op, lc, rc, INT)
            e.opty = INT
            return BOOL
        if op in ("+", "-") and (is_ptr(lt) or is_ptr(rt)):
            if is_ptr(lt) and is_int(rt):
                e.opty = lt
                return lt
            if op == "+" and is_int(lt) and is_ptr(rt):
                e.opty = rt
                return rt
            if op == "-" and is_ptr(lt) and is_ptr(rt):
                if lt.elem != rt.elem:
                    raise bad()
                e.opty = INT
                return INT
            raise bad()
        if op in ("<", ">", "<=", ">=", "==", "!=") and (is_ptr(lt) or is_ptr(rt)):
            ok = (is_ptr(lt) and is_ptr(rt) and lt.elem == rt.elem) or (
                op in ("==", "!=") and ((is_ptr(lt) and rc == 0 and is_int(rt))
                                        or (is_ptr(rt) and lc == 0 and is_int(lt))))
            if not ok:
                raise bad()
            e.opty = UINT
            return BOOL
        if not (is_arith(lt) and is_arith(rt)):
            raise bad()
        if (is_floating(lt) or is_floating(rt)) and op in ("%", "&", "|", "^", "<<", ">>"):
            raise bad()
        if is_floating(lt) or is_floating(rt):
            e.opty = usual_arithmetic(lt, rt)  # double when either side is (C++'s promotion)
            return BOOL if op in ("<", ">", "<=", ">=", "==", "!=") else e.opty
        if op in ("<<", ">>"):
            t = promote(lt)
            e.opty = t
            res = t
        elif op in ("<", ">", "<=", ">=", "==", "!="):
            e.opty = usual_arithmetic(lt, rt)
            res = BOOL
        else:
            e.opty = usual_arithmetic(lt, rt)
            res = e.opty
        if lc is not None and rc is not None:
            e.const = fold_binary(op, lc, rc, e.opty)
        return res

    def check_Assign(self, e: A.Assign) -> Type:
        tt = self.check(e.target)
        verb = "assign to"
        if isinstance(tt, ArrayType):
            raise self.error(e.target, "cannot assign to an array")
        if is_struct(tt) and e.op != "=":
            self.rvalue(e.value)
            r = self.operator_call(e, e.op, e.target, [e.value])
            if r is None:
                raise self.error(e, f"no 'operator{e.op}' for '{tt}'")
            return r
        vt = self.rvalue(e.value, dst=tt if e.op == "=" else None)
        self.check_assignable(e.target, e, verb)
        if e.op == "=":
            self.convert_check(e.value, tt, "assignment")
            return tt
        op = e.op[:-1]
        if is_ptr(tt):
            if op in ("+", "-") and is_int(vt):
                e.opty = tt
                return tt
            raise self.error(e, f"invalid operands to '{e.op}' ('{tt}' and '{vt}')")
        if not (is_arith(tt) and is_arith(vt)) or (
                (is_floating(tt) or is_floating(vt)) and op in ("%", "&", "|", "^", "<<", ">>")):
            raise self.error(e, f"invalid operands to '{e.op}' ('{tt}' and '{vt}')")
        e.opty = promote(tt) if op in ("<<", ">>") else usual_arithmetic(tt, vt)
        return tt

    def check_Cond(self, e: A.Cond) -> Type:
        ct = self.rvalue(e.cond)
        if not is_scalar(ct):
            raise self.error(e.cond, f"condition has type '{ct}'; expected a scalar")
        a = self.rvalue(e.then, allow_void=True)
        b = self.rvalue(e.other, allow_void=True)
        if isinstance(a, VoidType) and isinstance(b, VoidType):
            return VOID
        if is_struct(a) and a == b:
            e.tmp = self.temp(a, e)
            return a
        if is_arith(a) and is_arith(b):
            t = a if a == b else usual_arithmetic(a, b)
        elif is_ptr(a) and is_ptr(b) and a.elem == b.elem:
            t = PtrType(a.elem, a.const or b.const)
        elif is_ptr(a) and e.other.const == 0 and is_int(b):
            t = a
        elif is_ptr(b) and e.then.const == 0 and is_int(a):
            t = b
        else:
            raise self.error(e, f"incompatible operand types in '?:' ('{a}' and '{b}')")
        if e.cond.const is not None and e.then.const is not None and e.other.const is not None:
            e.const = wrap(e.then.const if e.cond.const else e.other.const, t)
        return t

    def check_Comma(self, e: A.Comma) -> Type:
        self.rvalue(e.left, allow_void=True)
        return self.rvalue(e.right, allow_void=True)

    def check_Cast(self, e: A.Cast) -> Type:
        t = self.type_of_syntax(e.type, "cast")
        e.target = t
        if e.kind == "functional" and is_struct(t) and self.value_initialisation(e, t):
            return self.make_vector(e, t)
        st = self.rvalue(e.operand, allow_void=isinstance(t, VoidType), dst=t)
        if isinstance(t, VoidType):
            if e.kind in ("reinterpret_cast", "const_cast"):
                raise self.error(e, f"{e.kind} to 'void' is not allowed; use static_cast<void>")
            return VOID
        if is_struct(t) or is_struct(st):
            if e.kind == "functional" and is_struct(t):
                raise self.error(e, f"'{t}(...)' calls a constructor, and constructors are not "
                                    f"supported; write '{t} v = {{...}};' or make_...(...)")
            raise self.error(e, f"cannot cast '{st}' to '{t}'")
        self.check_cxx_cast(e, st, t)
        if isinstance(t, (IntType, FloatType, DoubleType)) and isinstance(st, PtrType):
            raise self.error(e, f"cast from pointer to {'integer' if is_int(t) else 'float'} is not "
                                f"supported ('{st}' to '{t}')")
        dc = e.operand.dconst
        if isinstance(t, DoubleType):
            if e.operand.const is not None:
                e.dconst = doubleconst.from_int(e.operand.const, st.signed, 64 if is_wide(st) else 32)
            elif e.operand.fconst is not None:
                e.dconst = doubleconst.from_float(e.operand.fconst)
            else:
                e.dconst = dc
            return t
        if dc is not None and isinstance(t, FloatType):
            e.fconst = doubleconst.to_float(dc)
            return t
        if dc is not None and isinstance(t, IntType):
            if t.kind == "bool":
                e.const = int(doubleconst.truth(dc))
            else:
                bits = 32 if t.kind in ("char", "uchar") else t.bits
                signed = t.signed or t.kind == "uchar"
                lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
                e.const = wrap(doubleconst.to_int(dc, lo, hi), t)
            return t
        if isinstance(t, FloatType):
            if e.operand.const is not None:
                e.fconst = (floatconst.from_int64 if is_wide(st) else floatconst.from_int)(e.operand.const,
                                                                                          st.signed)
            elif e.operand.fconst is not None:
                e.fconst = e.operand.fconst
            return t
        if isinstance(t, IntType):
            fc = e.operand.fconst
            if fc is not None:
                if t.kind == "bool":
                    e.const = int(floatconst.truth(fc))
                elif t.wide:
                    e.const = wrap(floatconst.to_int64(fc, t.signed), t)
                elif t.kind == "unsigned":
                    e.const = floatconst.to_uint(fc)
                else:
                    e.const = wrap(floatconst.to_int(fc), t)
            elif e.operand.const is not None:
                e.const = wrap(e.operand.const, t)
            return t
        assert isinstance(t, PtrType)
        if isinstance(st, PtrType):
            if st.elem != t.elem and not (st.elem in CELL_TYPES and t.elem in CELL_TYPES):
                raise self.error(e, f"casts between pointer types are not supported "
                                    f"('{st}' to '{t}'): memory is addressed in 32-bit cells, so "
                                    "only 'int *', 'unsigned *' and 'float *' convert to each other")
            return t
        if e.operand.const == 0:
            return t
        raise self.error(e, f"cast from integer to pointer is not supported ('{st}' to '{t}')")

    def check_cxx_cast(self, e: A.Cast, st: Type, t: Type) -> None:
        """The C++ rules that tell static_cast, reinterpret_cast and const_cast apart."""
        k = e.kind
        if k in ("c", "functional"):  # T(x) is the C cast (T)x
            return
        ptrs = isinstance(st, PtrType), isinstance(t, PtrType)
        if k == "const_cast":
            if not all(ptrs) or st.elem != t.elem:
                raise self.error(e, f"const_cast can only add or remove const ('{st}' to '{t}'); "
                                    "use static_cast")
            return
        if all(ptrs) and st.const and not t.const:
            raise self.error(e, f"{k} cannot cast away const ('{st}' to '{t}'); use const_cast")
        if k == "static_cast" and all(ptrs) and st.elem != t.elem:
            raise self.error(e, f"static_cast from '{st}' to '{t}' is not allowed; use "
                                "reinterpret_cast")
        if k == "reinterpret_cast" and not any(ptrs):
            raise self.error(e, f"reinterpret_cast from '{st}' to '{t}' is not allowed; use "
                                "static_cast to convert the value, or __float_as_int / "
                                "__int_as_float for its bits")

    def check_Index(self, e: A.Index) -> Type:
        bt = self.check(e.base)
        it = self.rvalue(e.index)
        if is_struct(bt):
            r = self.operator_call(e, "[]", e.base, [e.index])
            if r is None:
                raise self.error(e, f"'{bt}' has no 'operator[]'")
            return r
        if isinstance(bt, ArrayType):
            e.base.arr = bt
            if not is_int(it):
                raise self.error(e, f"array subscript is not an integer ('{it}')")
            if len(bt.dims) > 1:
                return ArrayType(bt.elem, bt.dims[1:], bt.const)
            return bt.elem
        if isinstance(bt, PtrType):
            if not is_int(it):
                raise self.error(e, f"array subscript is not an integer ('{it}')")
            return bt.elem
        if is_int(bt) and isinstance(it, (PtrType, ArrayType)):
            raise self.error(e, "write the pointer first: 'p[i]', not 'i[p]'")
        raise self.error(e, f"subscripted value is not an array or pointer (type '{bt}')")

    def check_Call(self, e: A.Call) -> Type:
        f = e.func
        if isinstance(f, A.Member) and f.sreg is None:
            return self.method_call(e)
        if not isinstance(f, A.Name):
            raise self.error(e, "called object is not a function")
        name = f.name
        st = self.func.method_of if self.func is not None else None
        if st is not None and name in st.methods and self.lookup(name) is None:
            e.func = A.Member(f.line, f.col, A.Name(f.line, f.col, "this"), name, arrow=True)
            return self.method_call(e)
        if self.lookup(name) is not None:
            raise self.error(e, f"called object '{name}' is not a function")
        fs = self.functions.get(name)
        if name in self.overloads:
            fs = self.resolve(self.overloads[name], e, name)
        t = self.templates.get(name)
        if t is not None:
            given = self.template_args(t, f.targs or [], f)
            fs = self.instantiate(t, self.deduce(t, given, e.args, e), f)
            name = fs.name
        elif f.targs is not None:
            raise self.error(f, f"'{name}' is not a template")
        if fs is not None:
            return self.function_call(e, fs, name)
        if name.startswith("make_") and name[5:] in self.vectors:
            return self.make_vector(e, self.vectors[name[5:]])
        if name in FLOAT_OVERLOADS:
            t = float_overload(self, e, name, FLOAT_FUNCS, MATH_FUNCS)
            if t is not None:
                return t
        if name in UNSUPPORTED_FUNCS:
            raise self.error(e, UNSUPPORTED_FUNCS[name])
        if name in BUILTIN_FUNCS:
            name = ATOMIC_SCOPES.get(name, name)
            e.callee = name
            return self.builtin_call(e, name)
        raise self.error(e, f"unknown function '{name}'")

    def function_call(self, e: A.Call, fs: FuncSym, name: str, checked: int = 0) -> Type:
        """A call of a device function (the first `checked` arguments are typed already)."""
        if fs.kind == "global":
            raise self.error(e, f"cannot call kernel '{name}' from device code (kernel "
                                "launches are not supported)")
        shown = len(fs.param_types) - checked
        if len(e.args) != len(fs.param_types):
            raise self.error(e, f"function '{name}' expects {shown} "
                                f"argument{'s' if shown != 1 else ''}, got {len(e.args) - checked}")
        e.ref_binds = []
        for i, (a, pt) in enumerate(zip(e.args, fs.param_types)):
            if i < checked:
                e.ref_binds.append(False)
                continue
            if a.ty is None:  # (an operator's operands are typed already)
                self.rvalue(a, dst=pt)
            bind = False
            if fs.param_refs and fs.param_refs[i] and is_struct(pt):
                # A struct reference names the argument's cells (codegen binds the parameter).
                if not fs.param_ref_consts[i] and (self.lvalue_kind(a) != "mem" or self.mem_const(a)):
                    raise self.error(a, f"argument {i + 1 - checked} of '{name}': cannot bind the "
                                        f"non-const reference '{pt} &' to "
                                        + ("a const struct" if self.lvalue_kind(a) == "mem"
                                           else "a temporary") + f"; pass a variable of type '{pt}'")
            elif fs.param_refs and fs.param_refs[i]:
                bind = self.reference_argument(a, pt, fs, i, name)
            if not bind:
                self.convert_check(a, pt, f"argument {i + 1 - checked} of '{name}'")
            e.ref_binds.append(bind)
        e.callee = fs
        if self.func is None:
            raise self.error(e, f"a constant initialiser cannot call function '{name}'")
        self.func.calls.append((fs, e))
        if is_struct(fs.ret) and not fs.ret_ref:
            e.tmp = self.temp(fs.ret, e)
        return fs.ret

    def reference_argument(self, a: A.Expr, pt: Type, fs: FuncSym, i: int, name: str) -> bool:
        """Whether reference parameter i binds to the argument itself (an lvalue of its type),
        as C++ does; a `const T &` takes any value of a convertible type as a temporary."""
        readonly = fs.param_ref_consts[i]
        kind = self.lvalue_kind(a)
        if kind in ("var", "mem") and a.ty == pt:
            if not readonly:
                self.check_assignable(a, a, "bind a non-const reference to")
            return True
        if readonly:
            return False
        what = "a value of type '" + str(a.ty) + "'" if kind in ("var", "mem") else "a temporary"
        raise self.error(a, f"argument {i + 1} of '{name}': cannot bind the non-const reference "
                            f"'{pt} &' to {what}; pass a variable of type '{pt}'")

    def nargs(self, e: A.Call, name: str, n: int) -> None:
        if len(e.args) != n:
            raise self.error(e, f"'{name}' expects {n} argument{'s' if n != 1 else ''}, "
                                f"got {len(e.args)}")

    def warp_call(self, e: A.Call, name: str) -> Type:
        """Warp intrinsics: masks are 4 bits (0xffffffff is every lane); a shuffle's width is a constant."""
        counts = WARP_FUNCS[name]
        if len(e.args) not in counts:
            want = " or ".join(str(c) for c in counts)
            raise self.error(e, f"'{name}' expects {want} argument{'s' if counts[-1] != 1 else ''}, "
                                f"got {len(e.args)}")
        if name == "__match_all_sync":
            self.match_all_pred(e)
        for i, a in enumerate(e.args[:2] if name == "__match_all_sync" else e.args, start=1):
            t = self.rvalue(a)
            if not is_arith(t):
                raise self.error(a, f"argument {i} of '{name}' must be a number (got '{t}')")
            if is_pair(t) and not (i == 2 and (name.startswith("__match") or name.startswith("__shfl"))) \
                    and not name.startswith("__qg_reduce"):
                raise self.error(a, f"argument {i} of '{name}' is 64-bit ('{t}'); it takes a 32-bit value")
            if i != 2 and is_floating(t):
                raise self.error(a, f"argument {i} of '{name}' must be an integer (got '{t}')")
        if name.startswith("__qg_reduce"):
            if not is_int(e.args[0].ty) or is_wide(e.args[0].ty):
                raise self.error(e.args[0], f"cg::reduce of '{e.args[0].ty}' is not supported (32-bit integers only)")
            return UINT if e.args[0].ty == UINT else INT
        if name.startswith("__shfl"):
            if len(e.args) == 4:
                w = e.args[3].const
                if w is None or w <= 0 or w & (w - 1):
                    raise self.error(e.args[3], f"the width of '{name}' must be a constant power of two "
                                                f"(1, 2 or {SPEC.warp_size}; larger widths mean the whole warp)")
            if is_floating(e.args[1].ty) or is_wide(e.args[1].ty):
                return e.args[1].ty
            return UINT if e.args[1].ty == UINT else INT
        if name.startswith("__reduce_"):
            if is_floating(e.args[1].ty):
                raise self.error(e.args[1], f"argument 2 of '{name}' must be an integer (got '{e.args[1].ty}')")
            signed = name[9:12] in ("add", "min", "max") and promote(e.args[1].ty) == INT
            return INT if signed else UINT
        if name == "clock64":
            return LLONG
        if name in ("__ballot_sync", "__activemask", "__match_any_sync", "__match_all_sync"):
            return UINT
        if name == "__syncwarp":
            return VOID
        return INT  # __any_sync, __all_sync, clock

    def match_all_pred(self, e: A.Call) -> None:
        """The third argument of __match_all_sync, where it stores whether all lanes matched: an
        'int *', or the address of a local int variable (written in its register)."""
        p = e.args[2]
        if isinstance(p, A.Unary) and p.op == "&" and isinstance(p.operand, A.Name):
            t = self.check(p.operand)
            if self.lvalue_kind(p.operand) == "var":
                if t != INT:
                    raise self.error(p, f"argument 3 of '__match_all_sync' must point to an 'int' (got '{t}')")
                self.check_assignable(p.operand, p, "assign to")
                p.ty = PtrType(INT)
                return
        t = self.rvalue(p)
        if not isinstance(t, PtrType) or t.elem != INT or t.const:
            raise self.error(p, f"argument 3 of '__match_all_sync' must be an 'int *' (got '{t}')")

    def math_call(self, e: A.Call, name: str) -> Type:
        args, ret = MATH_FUNCS[name][1].split(":")
        self.nargs(e, name, len(args))
        for i, (a, k) in enumerate(zip(e.args, args), start=1):
            if k in "fi":
                t = self.rvalue(a, dst=FLOAT if k == "f" else INT)
                if not is_arith(t):
                    raise self.error(a, f"argument {i} of '{name}' must be a number (got '{t}')")
                if k == "i":
                    self.convert_check(a, INT, f"argument {i} of '{name}'")
                continue
            want = PtrType(FLOAT if k == "F" else INT)
            t = self.rvalue(a)
            if not isinstance(t, PtrType) or t.elem != want.elem or t.const:
                raise self.error(a, f"argument {i} of '{name}' must be a '{want}' pointer (got '{t}')")
        return {"f": FLOAT, "i": INT, "v": VOID}[ret]

    def builtin_call(self, e: A.Call, name: str) -> Type:
        if name in WARP_FUNCS:
            return self.warp_call(e, name)
        if name in INT_FUNCS:
            ptypes, ret = INT_FUNCS[name]
            self.nargs(e, name, len(ptypes))
            for i, (a, pt) in enumerate(zip(e.args, ptypes), start=1):
                t = self.rvalue(a, dst=pt)
                if not is_int(t):
                    raise self.error(a, f"argument {i} of '{name}' must be an integer (got '{t}')")
            return ret
        if name == "__syncthreads" or name in FENCES:
            self.nargs(e, name, 0)
            return VOID
        if name in FLOAT_FUNCS:
            self.nargs(e, name, FLOAT_FUNCS[name])
            for i, a in enumerate(e.args, start=1):
                self.rvalue(a, dst=FLOAT)
                if not is_arith(a.ty):
                    raise self.error(a, f"argument {i} of '{name}' must be a number (got '{a.ty}')")
            return FLOAT
        if name in DOUBLE_FUNCS:
            self.nargs(e, name, DOUBLE_FUNCS[name])
            for i, a in enumerate(e.args, start=1):
                self.rvalue(a, dst=DOUBLE)
                if not is_arith(a.ty):
                    raise self.error(a, f"argument {i} of '{name}' must be a number (got '{a.ty}')")
            return DOUBLE
        if name in MATH_FUNCS:
            return self.math_call(e, name)
        if name in ("__double_as_longlong", "__longlong_as_double"):
            self.nargs(e, name, 1)
            a = self.rvalue(e.args[0])
            want = DOUBLE if name == "__double_as_longlong" else LLONG  # converted to it, as a C++ argument
            if not (is_arith(a) if want is DOUBLE else is_int(a)):
                raise self.error(e.args[0], f"'{name}' needs a '{want}' argument (got '{a}')")
            return BIT_CASTS[name]
        if name in BIT_CASTS:
            self.nargs(e, name, 1)
            a = self.rvalue(e.args[0])
            want = INT if BIT_CASTS[name] is FLOAT else FLOAT
            if name == "__uint_as_float":
                want = UINT
            if not (is_float(a) if is_float(want) else is_int(a)):
                raise self.error(e.args[0], f"'{name}' needs a '{want}' argument (got '{a}')")
            return BIT_CASTS[name]
        forced = None
        if name in ("llmin", "llmax", "ullmin", "ullmax", "llabs"):  # CUDA's 64-bit spellings
            forced = ULLONG if name.startswith("u") else LLONG
            e.callee = name = name[2:] if name.startswith("ll") else name[3:]
        if name in UNSIGNED_MINMAX:
            forced, e.callee = UINT, UNSIGNED_MINMAX[name]
            name = e.callee
        if name in ("min", "max"):
            self.nargs(e, name, 2)
            a, b = (self.rvalue(x) for x in e.args)
            if not (is_arith(a) and is_arith(b)) or (forced and not (is_int(a) and is_int(b))):
                raise self.error(e, f"'{name}' needs integer arguments ('{a}' and '{b}')")
            t = forced or usual_arithmetic(a, b)
            if is_floating(t):
                return t  # fminf/fmaxf, fmin/fmax
            ca, cb = e.args[0].const, e.args[1].const
            if ca is not None and cb is not None:
                lt = fold_binary("<", ca, cb, t)
                e.const = wrap((ca if lt else cb) if name == "min" else (cb if lt else ca), t)
            return t
        if name == "abs":
            self.nargs(e, name, 1)
            a = self.rvalue(e.args[0])
            if not is_int(a):
                raise self.error(e, f"'abs' needs an integer argument ('{a}')"
                                 + ("; use fabsf" if is_float(a) else "; use fabs" if is_double(a) else ""))
            t = forced or (LLONG if is_wide(a) else INT)  # C++'s abs(long long) overload
            if e.args[0].const is not None:
                e.const = wrap(abs(wrap(e.args[0].const, t)), t)
            return t
        # atomics
        self.nargs(e, name, 3 if name == "atomicCAS" else 2)
        pt = self.rvalue(e.args[0])
        float_ok = name in ("atomicAdd", "atomicExch")
        if name in ("atomicInc", "atomicDec") and isinstance(pt, PtrType) and pt.elem != UINT:
            raise self.error(e.args[0], f"first argument of '{name}' must be an 'unsigned int *' pointer "
                                        f"(got '{pt}')")
        if isinstance(pt, PtrType) and is_double(pt.elem):
            raise self.error(e.args[0], f"'{name}' on '{pt}' is not supported (the machine's atomics are "
                                        "32-bit); accumulate in float or in a 64-bit integer")
        if isinstance(pt, PtrType) and is_wide(pt.elem):
            why = _wide_atomic_problem(name, pt)
            if why is not None:
                raise self.error(e.args[0], f"'{name}' on '{pt}' is not supported ({why})")
        elif not isinstance(pt, PtrType) or pt.elem not in ((INT, UINT, FLOAT) if float_ok else (INT, UINT)):
            kinds = "an 'int *', 'unsigned int *' or 'float *'" if float_ok else \
                "an 'int *' or 'unsigned int *'"
            raise self.error(e.args[0], f"first argument of '{name}' must be {kinds} pointer (got '{pt}')")
        if pt.const:
            raise self.error(e.args[0], f"first argument of '{name}' points to const ('{pt}')")
        for i, a in enumerate(e.args[1:], start=2):
            self.rvalue(a, dst=pt.elem)
            self.convert_check(a, pt.elem, f"argument {i} of '{name}'")
        return pt.elem


def analyse(tu: A.TranslationUnit, filename: str, source: str, instantiate: tuple[str, ...] = ()) -> SemaResult:
    return Sema(filename, source).run(tu, tuple(instantiate))


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

