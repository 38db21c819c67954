"""C++ overloads that CUDA's headers add to C's math functions.

nvcc compiles CUDA as C++, and its math headers overload `cos`, `exp`, `fabs`, `pow`, ... on
`float`: `cos(x)` with a float `x` is `cosf(x)` and returns a float, so the rest of the
expression stays in float.  C's rule (every argument converted to double) would give a
different result (`sqrt(x) * y` rounded once in double, not twice in float), so qgcc picks the
float function exactly where nvcc does: every argument arithmetic, at least one `float`, none
`double` (an integer argument alone still means the double function, as in C++).  `pow(float,
int)` is CUDA's `powf` overload too.  The 32-bit `umin`/`umax` are here as well: CUDA's unsigned
spellings of `min`/`max`.
"""

from __future__ import annotations

from . import ast as A
from .types import FLOAT, is_arith, is_double, is_float

# name -> the float function the overload calls
FLOAT_OVERLOADS = {n: n + "f" for n in (
    "sqrt", "fabs", "fmin", "fmax", "floor", "ceil", "trunc", "round", "rint", "nearbyint", "cbrt",
    "rsqrt", "pow", "sin", "cos", "tan", "exp", "exp2", "exp10", "log", "log2", "log10", "fmod",
    "remainder", "atan2", "hypot", "asin", "acos", "atan", "sinh", "cosh", "tanh", "expm1", "log1p",
    "copysign", "fdim", "fma", "ldexp", "scalbn", "frexp")}
FLOAT_OVERLOADS["abs"] = "fabsf"  # abs(float) is fabsf in CUDA's headers (abs(int) stays abs)
# the argument (by index) that stays an integer in the float overload
INT_ARG = {"ldexp": 1, "scalbn": 1, "frexp": 1, "pow": None}  # frexp's: the `int *` it stores to

UNSIGNED_MINMAX = {"umin": "min", "umax": "max"}


def float_overload(sema, e: A.Call, name: str, float_funcs: dict, math_funcs: dict):
    """The type of `name(args)` when it is CUDA's float overload (e.callee is set to the float
    function), else None with the arguments left untyped for C's double function."""
    fname = FLOAT_OVERLOADS[name]
    if fname not in float_funcs and fname not in math_funcs:
        return None
    types = [sema.probe_type(a) for a in e.args]
    int_arg = INT_ARG.get(name)
    if any(t is None or not is_arith(t) or is_double(t) for i, t in enumerate(types)
           if not (name == "frexp" and i == int_arg)):
        return None
    floats = [t for i, t in enumerate(types) if i != int_arg]
    if not any(is_float(t) for t in floats):
        return None
    if name == "pow" and len(types) == 2 and is_float(types[0]) and not is_float(types[1]):
        pass  # pow(float, int): CUDA's float overload
    elif not all(is_float(t) for t in floats):
        return None  # a float with an integer converts both to double in C++ (no float overload)
    e.callee = fname
    e.func.name = fname
    return sema.builtin_call(e, fname)


__all__ = ["FLOAT_OVERLOADS", "UNSIGNED_MINMAX", "float_overload"]
