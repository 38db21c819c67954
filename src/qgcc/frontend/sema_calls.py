"""Sema, calls and built-ins: user function calls (overload choice, reference arguments), and
the CUDA built-ins -- atomics (32- and 64-bit), warp functions, math functions, integer and float
intrinsics, bit casts.

A mixin of `sema.Sema`; it imports only the shared symbol types and the built-in tables, never
`sema`.
"""

from __future__ import annotations

import copy

from ..spec import SPEC
from . import ast as A
from .builtin_names import (ATOMIC_SCOPES, BIT_CASTS, BUILTIN_FUNCS, DOUBLE_FUNCS, FENCES, FLOAT_FUNCS, INT_FUNCS,
                            MATH_FUNCS, UNSUPPORTED_FUNCS, WARP_FUNCS, _wide_atomic_problem)
from . import atomic_double
from .overloads import FLOAT_OVERLOADS, UNSIGNED_MINMAX, float_overload
from .structs import cell_only, is_struct
from .symbols import FuncSym, VarSym
from .types import (DOUBLE, FLOAT, INT, LLONG, PtrType, Type, UINT, ULLONG, VOID, fold_binary, is_arith, is_double,
                    is_float, is_floating, is_int, is_pair, is_wide, promote, usual_arithmetic, wrap)


class CallSema:
    """Calls and built-ins (a mixin of `sema.Sema`)."""

    def check_Call(self, e: A.Call) -> Type:
        f = e.func
        if isinstance(f, A.Member) and f.sreg is None:
            return self.method_call(e)
        if not isinstance(f, A.Name) or (self.lookup(f.name) is not None and is_struct(self.lookup(f.name).ty)):
            return self.functor_call(e)
        name = f.name
        st = self.func.method_of if self.func is not None else None
        if "::" in name:  # `X<8>::run(...)`, `S::f(...)`: a static member function (class_members.py)
            return self.scoped_call(e)
        if st is not None and (name in st.methods or name in st.method_templates) \
                and self.lookup(name) is None:
            e.func = A.Member(f.line, f.col, A.Name(f.line, f.col, "this"), name, arrow=True)
            return self.method_call(e)
        if self.lookup(name) is not None:
            raise self.error(e, f"called object '{name}' is not a function")
        if name in ("tex1Dfetch", "tex1D", "tex2D", "tex3D") and name not in self.functions:
            return self.texture_call(e, name)
        if name in ("printf", "assert") and name not in self.functions:  # sema_printf.py
            return self.printf_call(e) if name == "printf" else self.assert_call(e)
        if name == "__qg_grid_sync":  # coopgroups' grid.sync()
            return self.grid_sync_call(e)
        fs = self.functions.get(name)
        if name in self.overloads:
            fs = self.resolve(self.overloads[name], e, name)
        t = self.template_for_call(name, e)
        deduced = None if t is None else self.deduce(t, self.template_args(t, f.targs or [], f), e.args, e)
        if deduced is not None:
            fs = self.instantiate(t, deduced, f)
            name = fs.name
        elif t is None and f.targs is not None:
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

    def functor_call(self, e: A.Call) -> Type:
        """`f(x)` where f is a struct with `operator()` (a functor, as dwt2d's lifting steps pass
        them): the member function call `f.operator()(x)`."""
        f = e.func
        t = f.ty if f.ty is not None else self.check(f)
        if not (is_struct(t) and "operator()" in t.methods):
            raise self.error(e, f"called object of type '{t}' has no 'operator()'" if is_struct(t) else
                             f"called object '{f.name}' is not a function" if isinstance(f, A.Name)
                             else "called object is not a function")
        e.func = A.Member(f.line, f.col, f, "operator()", arrow=False)
        return self.method_call(e)

    def function_call(self, e: A.Call, fs: FuncSym, name: str, checked: int = 0) -> Type:
        """A call of a device function (the first `checked` arguments are typed already)."""
        if fs.kind == "global":
            raise self.error(e, f"cannot call kernel '{name}' from device code (kernel "
                                "launches are not supported)")
        shown = len(fs.param_types) - checked
        defaults = getattr(fs, "defaults", [])
        missing = len(fs.param_types) - len(e.args)
        if 0 < missing <= len(defaults) and all(x is not None for x in defaults[len(defaults) - missing:]):
            e.args = e.args + [copy.deepcopy(x) for x in defaults[len(defaults) - missing:]]
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
        if fs.template is not None and a.ty == pt and isinstance(a, A.Name) and isinstance(a.sym, VarSym) and \
                (kind == "const" or (kind == "var" and a.sym.readonly)):
            return False  # a template's `T &` deduced from a const variable is `const T &` in C++: a copy reads the same
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

    def narrow_reduce(self, e: A.Call, name: str, t: Type) -> Type:
        """`cg::reduce` on a tile of 1, 2 or 4 threads of a float, double or 64-bit value: the
        same butterfly through frontend/coopwide.py's `__qg_narrow_reduce` (SHFL.XOR of any
        arithmetic type), instead of the integer instruction sequence."""
        if not is_arith(t):
            raise self.error(e.args[0], f"cg::reduce of '{t}' is not supported (a number is reduced)")
        op = {"__qg_reduce_add": 0, "__qg_reduce_max": 1, "__qg_reduce_min": 2}[name]
        width = e.args[1].const if e.args[1].ty is not None else None
        if width is None:
            self.rvalue(e.args[1])
            width = e.args[1].const
        targs = [A.IntLit(e.line, e.col, str(width)), A.IntLit(e.line, e.col, str(op))]
        call = A.Call(e.line, e.col, A.Name(e.line, e.col, "__qg_narrow_reduce", targs=targs), [e.args[0]])
        e.__class__ = call.__class__
        e.__dict__.clear()
        e.__dict__.update(call.__dict__)
        return self.check_Call(e)

    def warp_call(self, e: A.Call, name: str) -> Type:
        """Warp intrinsics: masks are 4 bits (0xffffffff is every lane); a shuffle's width is a constant."""
        counts = WARP_FUNCS[name]
        if len(e.args) not in counts:
            want = " or ".join(str(c) for c in counts)
            raise self.error(e, f"'{name}' expects {want} argument{'s' if counts[-1] != 1 else ''}, "
                                f"got {len(e.args)}")
        if name == "__match_all_sync":
            self.match_all_pred(e)
        if name.startswith("__qg_reduce"):
            t = self.probe_type(e.args[0])
            if is_floating(t) or is_wide(t) or not is_arith(t):
                return self.narrow_reduce(e, name, t)
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
                if w is not None and (w <= 0 or w & (w - 1)):
                    raise self.error(e.args[3], f"the width of '{name}' must be a power of two "
                                                f"(1, 2 or {SPEC.warp_size}; larger widths mean the whole warp)")
                if w is None and (is_wide(e.args[3].ty) or not is_int(e.args[3].ty)):
                    raise self.error(e.args[3], f"the width of '{name}' must be an int")
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
            if k in "fid":
                t = self.rvalue(a, dst={"f": FLOAT, "i": INT, "d": DOUBLE}[k])
                if not is_arith(t):
                    raise self.error(a, f"argument {i} of '{name}' must be a number (got '{t}')")
                if k == "i":
                    self.convert_check(a, INT, f"argument {i} of '{name}'")
                continue
            want = PtrType(FLOAT if k == "F" else INT)
            t = self.rvalue(a)
            if not isinstance(t, PtrType) or t.elem != want.elem or t.const:
                raise self.error(a, f"argument {i} of '{name}' must be a '{want}' pointer (got '{t}')")
        return {"f": FLOAT, "d": DOUBLE, "i": INT, "v": VOID}[ret]

    def memcpy_call(self, e: A.Call) -> Type:
        """`memcpy(&out, words, sizeof(out))` in device code (shfl_scan): whole 32-bit cells are
        copied, so both sides must be made of int, unsigned and float cells (4 bytes each, as in
        CUDA) and the size a compile-time multiple of 4; its result is not a value here."""
        self.nargs(e, "memcpy", 3)
        for i, a in enumerate(e.args[:2], start=1):
            t = self.rvalue(a)
            if not isinstance(t, PtrType) or not cell_only(t.elem) or (i == 1 and t.const):
                raise self.error(a, f"argument {i} of 'memcpy' must point to {'non-const ' if i == 1 else ''}"
                                    f"int, unsigned or float cells (or arrays and structs of them), got "
                                    f"'{t}': memory is 32-bit cells here")
        n = e.args[2]
        self.rvalue(n)
        if n.const is None or not is_int(n.ty) or n.const < 0 or n.const % 4:
            raise self.error(n, "the size of a device 'memcpy' must be a compile-time multiple of 4 bytes "
                                "(whole 32-bit cells)")
        return VOID

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
        if name == "memcpy":
            return self.memcpy_call(e)
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
        if isinstance(pt, PtrType) and is_double(pt.elem):  # atomicAdd: under a lock (atomic_double.py)
            if name != "atomicAdd":
                raise self.error(e.args[0], f"'{name}' on '{pt}' is not supported (on doubles only atomicAdd "
                                            "is); use a 64-bit integer")
            e.fmt = atomic_double.lock_cell(self)
        elif isinstance(pt, PtrType) and is_wide(pt.elem):
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
