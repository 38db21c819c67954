"""Sema, expressions and conversions: literals, names, members, operators, assignment,
casts (C and C++ casts), indexing; what converts to what implicitly and what is an lvalue.

A mixin of `sema.Sema`; it imports only the shared symbol types, never `sema`.
"""

from __future__ import annotations

import re

from ..diagnostics import CompileError
from ..spec import SPEC
from . import ast as A, doubleconst, floatconst
from .builtin_names import BUILTIN_VECTORS, CELL_TYPES
from .structs import is_struct
from .structsema import _become
from .symbols import FuncSym, INT_MAX, VarSym
from .types import (ArrayType, BOOL, CHAR, DOUBLE, DoubleType, FLOAT, FloatType, INT, IntType, LLONG, PtrType,
                    Type, UINT, ULLONG, VOID, VoidType, fold_binary, is_arith, is_double, is_float, is_floating,
                    is_int, is_ptr, is_scalar, is_wide, promote, usual_arithmetic, wrap)


class ExprSema:
    """Expressions and conversions (a mixin of `sema.Sema`)."""

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
                raise self.error(e, f"{len(t.dims)}-D array cannot be used as a value (type '{t}'); index it")
            t = PtrType(t.elem, t.const and not self.in_constant_memory(e))
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
                if src.elem != dst.elem and not isinstance(dst.elem, VoidType):  # T * -> void *
                    raise self.error(e, f"cannot convert '{src}' to '{dst}' in {ctx}")
                if src.const and not dst.const:
                    raise self.error(e, f"cannot convert '{src}' to '{dst}' in {ctx} "
                                        "(it would discard 'const')")
                return
            if isinstance(src, IntType) and e.const == 0:
                return  # null pointer constant
            raise self.error(e, f"cannot convert '{src}' to '{dst}' in {ctx}")
        raise self.error(e, f"cannot convert '{src}' to '{dst}' in {ctx}")  # pragma: no cover

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

    def check_Name(self, e: A.Name) -> Type:
        sym = self.lookup(e.name)
        if e.name == "this" and sym is None:
            raise self.error(e, "'this' is only available in a member function")
        st = self.func.method_of if self.func is not None else None
        if sym is None and st is not None and st.field(e.name) is not None:
            # A member named in a member function: `x` is `this->x`.
            _become(e, A.Member(e.line, e.col, A.Name(e.line, e.col, "this"), e.name, arrow=True))
            return self.check_Member(e)
        if sym is None and "::" in e.name:  # `S::N`: a class constant (class_members.py)
            return self.scoped_name(e)
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
        if self.float_init and sym.space == "constant" and sym.readonly and is_float(sym.ty) \
                and sym.init and len(sym.init) == 1:  # a file-scope const float, in another one's initialiser
            e.fconst = sym.init[0]
        if sym.kind == "texture":
            self.texture_used(sym)
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

    def check_Unary(self, e: A.Unary) -> Type:
        op = e.op
        if op == "&":
            t = self.check(e.operand)
            if isinstance(t, ArrayType):
                raise self.error(e, "taking the address of an array is not supported; use the "
                                    "array name or '&a[0]'")
            kind = self.lvalue_kind(e.operand)
            if kind == "var" and e.operand.sym.ref:  # a reference parameter: its referent's cell, if it
                return PtrType(t, e.operand.sym.readonly)  # has one (lower_memory checks where inlined)
            if kind == "var":
                raise self.error(e, f"cannot take the address of local variable "
                                    f"'{e.operand.sym.name}' (locals live in registers)")
            if kind != "mem":
                raise self.error(e, "cannot take the address of this expression")
            return PtrType(t, self.mem_const(e.operand) and not self.in_constant_memory(e.operand))
        t = self.rvalue(e.operand, dst=FLOAT if op in ("-", "+") else None)
        if is_struct(t) and op in ("-", "+"):  # `-v`: the struct's unary operator
            r = self.operator_call(e, op, e.operand, [])
            if r is None:
                raise self.error(e, f"invalid operand to unary '{op}' ('{t}'): no unary 'operator{op}'")
            return r
        if op == "*":
            if not isinstance(t, PtrType):
                raise self.error(e, f"indirection requires a pointer operand ('{t}' is not one)")
            self.no_void_pointee(e, t)
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

    def in_constant_memory(self, e: A.Expr) -> bool:
        """Whether e is (an element or member of) a __constant__ variable.  CUDA does not make
        them const-qualified: `unsigned *p = &c_Table[i][0];` and `unsigned *p = c_Table[i];`
        are allowed (writing through p is undefined there; here it changes the cell for the
        rest of the launch), while assigning to the variable itself stays an error."""
        while isinstance(e, (A.Index, A.Member)) and not (isinstance(e, A.Member) and e.arrow):
            e = e.base
        return isinstance(e, A.Name) and getattr(e.sym, "space", None) == "constant"

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
            if isinstance(target, A.Member) and not (self.func is not None and self.func.name.endswith("::__qg_ctor")):
                st = target.base.ty.elem if target.arrow else target.base.ty
                if target.name in getattr(st, "const_members", ()):
                    raise self.error(target, f"cannot {what} const member '{target.name}' of '{st}'")
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
        self.no_void_pointee(e, t)
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
            if lc is not None and rc is not None:  # truth values: a 64-bit constant is not cut to 32 bits
                e.const = int(lc != 0 and rc != 0) if op == "&&" else int(lc != 0 or rc != 0)
            e.opty = INT
            return BOOL
        if op in ("+", "-") and (is_ptr(lt) or is_ptr(rt)):
            for t in (lt, rt):
                self.no_void_pointee(e, t)
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
            self.no_void_pointee(e, tt)
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
                raise self.error(e, f"'{t}(...)' calls a constructor, and '{t}' has none; declare one "
                                    f"in the struct or write '{t} v = {{...}};'")
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
                bits = 32 if t.kind in ("char", "uchar", "short", "ushort") else t.bits
                signed = t.signed or t.kind in ("uchar", "ushort")
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
            if isinstance(st.elem, VoidType) or isinstance(t.elem, VoidType):
                return t  # to and from an untyped address: the same cell address
            if st.elem != t.elem and not (_byte_faithful(st.elem) and _byte_faithful(t.elem)):
                raise self.error(e, f"casts between pointer types are not supported "
                                    f"('{st}' to '{t}'): memory is addressed in 32-bit cells, so "
                                    "only pointers to int, unsigned, float, 64-bit scalars and structs of "
                                    "32-bit members (float4, int2, ...) convert to each other")
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

    def no_void_pointee(self, e: A.Expr, t: Type) -> None:
        """A `void *` is an address without an element type: no element to read, no size to step by."""
        if isinstance(t, PtrType) and isinstance(t.elem, VoidType):
            raise self.error(e, f"'{t}' points to no type; cast it to a typed pointer first "
                                "('(float *)p')")

    def check_Index(self, e: A.Index) -> Type:
        bt = self.check(e.base)
        self.no_void_pointee(e, bt)
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


def _byte_faithful(t: Type) -> bool:
    """Whether CUDA's size of t in bytes is 4 x its cells here, so that a pointer cast keeps
    CUDA's meaning (elements at the same byte offsets): the 32- and 64-bit scalars (low word
    first, as little-endian CUDA stores them) and complete structs whose members are 32-bit
    scalars or arrays of them, or all 64-bit scalars (no padding; `float4 *` from `float *`,
    `int4 *` from `float4 *`, `double4 *` from an `extern __shared__ int` array).  Not char or
    bool (one byte in CUDA, a cell here) nor structs with nested structs or with 32- and 64-bit
    members mixed (CUDA may pad them)."""
    wide = (LLONG, ULLONG, DOUBLE)
    if t in CELL_TYPES or t in wide:
        return True
    if not is_struct(t) or t.fields is None or not t.fields:
        return False
    kinds = set()
    for f in t.fields:
        ft = f.ty.elem if isinstance(f.ty, ArrayType) else f.ty
        while isinstance(ft, ArrayType):
            ft = ft.elem
        kinds.add("cell" if ft in CELL_TYPES else "wide" if ft in wide else "other")
    return kinds in ({"cell"}, {"wide"})
