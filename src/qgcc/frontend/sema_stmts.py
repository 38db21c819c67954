"""Sema, statements and local storage: control flow, `return`, local declarations, local and
`__shared__` arrays, brace initialisers and `__constant__` variables (their cells and values).

A mixin of `sema.Sema`; it imports only the shared symbol types, never `sema`.
"""

from __future__ import annotations

from ..spec import SPEC
from . import ast as A, doubleconst, floatconst
from .structs import cells, is_struct
from .symbols import SpecInfo, VarSym
from .types import (NARROW_MASKS, ArrayType, PtrType, Type, VoidType, is_arith, is_double, is_float, is_int,
                    is_pair, is_scalar, is_wide, promote, wrap)

SWITCH_DEPTH = 1000  # a switch's share of Sema.loop_depth: break needs > 0, continue a loop



def _double_fold(e: A.Binary) -> int | None:
    """A double `+ - * /` of two constants (literals, or float and integer constants converted)."""
    def bits(x: A.Expr) -> int | None:
        if x.dconst is not None:
            return x.dconst
        if x.fconst is not None:
            return doubleconst.from_float(x.fconst)
        if x.const is not None and is_int(x.ty):
            return doubleconst.from_int(x.const, x.ty.signed, 64 if is_wide(x.ty) else 32)
        return None
    a, b = bits(e.left), bits(e.right)
    return None if a is None or b is None else doubleconst.fold(e.op, a, b)

class StmtSema:
    """Statements and local storage (a mixin of `sema.Sema`)."""

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
                raise self.error(s, "'break' statement not in a loop or switch")
        elif isinstance(s, A.Continue):
            if self.loop_depth % SWITCH_DEPTH == 0:
                raise self.error(s, "'continue' statement not in a loop")
        elif isinstance(s, A.Switch):
            self.switch_stmt(s)
        elif isinstance(s, A.Case):
            raise self.error(s, "'case' label not directly in the braces of a switch statement (qgcc "
                                "takes labels at the top level of the switch body)" if s.value is not None
                             else "'default' label not directly in the braces of a switch statement")
        elif isinstance(s, A.Return):
            self.return_stmt(s)
        else:  # pragma: no cover
            raise AssertionError(type(s))

    def switch_stmt(self, s: A.Switch) -> None:
        """`switch (x) { case 1: ... break; default: ... }`: an integer condition (promoted), case
        values that are integer constants converted to its type, distinct, and one default.
        Inside, `break` leaves the switch (loop_depth counts a switch as SWITCH_DEPTH, so that
        `continue` still needs a loop)."""
        t = self.rvalue(s.cond)
        if not is_int(t):
            raise self.error(s.cond, f"switch quantity is not an integer (type '{t}')")
        if is_wide(t):
            raise self.error(s.cond, f"switch on a 64-bit value ('{t}') is not supported; switch on an int")
        s.opty = promote(t)
        seen: dict[int, A.Case] = {}
        default = None
        self.scopes.append({})
        self.loop_depth += SWITCH_DEPTH
        try:
            for item in s.body:
                if not isinstance(item, A.Case):
                    self.stmt(item)
                    continue
                if item.value is None:
                    if default is not None:
                        raise self.error(item, f"multiple default labels in one switch (the first on "
                                               f"line {default.line})")
                    default = item
                    continue
                vt = self.rvalue(item.value)
                if item.value.const is None or not is_int(vt):
                    raise self.error(item.value, "case label does not reduce to an integer constant")
                item.key = wrap(item.value.const, s.opty)
                if item.key in seen:
                    raise self.error(item.value, f"duplicate case value {item.key} (first on line "
                                                 f"{seen[item.key].line})")
                seen[item.key] = item
        finally:
            self.loop_depth -= SWITCH_DEPTH
            self.scopes.pop()

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
            if bad == "static" and "__shared__" in st:
                continue  # `static __shared__ T s[N];`: shared memory is static storage already
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
            elif decl.name in getattr(self.func, "addressed", ()) and not decl.pointers and is_arith(info.base):
                sym = self.addressed_local(info, it)
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

    def addressed_local(self, info: SpecInfo, it: A.InitDeclarator) -> VarSym:
        """A local scalar whose address is taken: one cell of the thread's frame (like a local
        array of one element), initialised where it is declared (0 without an initialiser)."""
        decl = it.decl
        sym = VarSym(decl.name, info.base, "shared", decl.line, decl.col, readonly=info.const, space="local")
        sym.init_cells = []
        sym.init_braced = True
        if it.init is not None:
            self.rvalue(it.init, dst=info.base)
            self.convert_check(it.init, info.base, "initialisation")
            sym.init_cells = [(0, it.init, info.base)]
        return sym

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
        if len(decl.arrays) > 3:  # (PMPP's 3-D stencil tiles; row-major like the 2-D ones)
            raise self.error(decl, "__shared__ arrays have at most 3 dimensions")
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
            return self.constant_struct(info, it)
        if not is_arith(info.base):
            raise self.error(decl, f"__constant__ variable '{decl.name}' has type '{info.base}'")
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
        cells = [w for v in values for w in (v & 0xFFFFFFFF, v >> 32)] if is_pair(base) else values
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

    def constant_struct(self, info: SpecInfo, it: A.InitDeclarator) -> VarSym:
        """`__constant__ Sphere s[20];`, `__constant__ float3 c[1] = {...};`: the structs' cells,
        in the struct layout (docs/subset.md, "Structs"), filled from a brace initialiser of
        constants or set at launch (--const with a structured array of the members).  The
        Program keeps them as unsigned cells (`Constant.ctype` 'unsigned', one dimension)."""
        decl = it.decl
        st = info.base
        self.complete(st, decl)
        if len(decl.arrays) > 2:
            raise self.error(decl, "__constant__ arrays have at most 2 dimensions")
        dims = tuple(self.array_dim(x, decl.name, decl) for x in decl.arrays)
        ty: Type = ArrayType(st, dims, True) if dims else st
        values = [0] * cells(ty)
        if it.init is not None:
            if not isinstance(it.init, A.BraceInit):
                raise self.error(it.init, f"'{decl.name}' must be initialised with braces")
            for cell, e, t in self.aggregate(ty, it.init, decl.name):
                if is_struct(t):
                    raise self.error(e, f"an initialiser of __constant__ '{decl.name}' must be constants")
                v = self.constant_cell(e, t, decl.name)
                if e.const is None and e.fconst is None and e.dconst is None:
                    raise self.error(e, f"__constant__ '{decl.name}' needs a constant initialiser")
                if is_pair(t):
                    values[cell], values[cell + 1] = v & 0xFFFFFFFF, v >> 32
                else:
                    values[cell] = v & 0xFFFFFFFF
        if self.constant_cells + len(values) > SPEC.global_words:
            raise self.error(decl, f"__constant__ variables need {self.constant_cells + len(values)} cells; "
                                   f"global memory has {SPEC.global_words}")
        sym = VarSym(decl.name, ty, "shared", decl.line, decl.col, readonly=True, space="constant",
                     address=self.constant_cells, init=values)
        self.constant_cells += len(values)
        self.constants.append(sym)
        return sym

    def constant_cell(self, e: A.Expr, ty: Type, name: str) -> int:
        """The memory cell of a constant initialiser converted to ty (chars: 8-bit pattern)."""
        self.rvalue(e, dst=ty)
        self.convert_check(e, ty, "initialisation")
        if isinstance(e, A.Binary) and e.op in ("+", "-", "*", "/") and is_double(e.ty) and e.dconst is None:
            e.dconst = _double_fold(e)  # `1.0 / scale` (the lowering folds these; sema did not)
        if is_double(ty):  # both cells in one int, the low word first (split by the caller)
            if e.dconst is not None:
                return e.dconst
            if e.fconst is not None:
                return doubleconst.from_float(e.fconst)
            if e.const is not None:
                return doubleconst.from_int(e.const, e.ty.signed, 64 if is_wide(e.ty) else 32)
            raise self.error(e, f"the initialiser of __constant__ '{name}' is not a compile-time constant")
        if e.dconst is not None:  # a double constant: converted as C converts it
            if is_float(ty):
                return doubleconst.to_float(e.dconst)
            if ty.kind == "bool":
                return int(doubleconst.truth(e.dconst))
            lo, hi = (-(1 << (ty.bits - 1)), (1 << (ty.bits - 1)) - 1) if ty.signed else (0, (1 << ty.bits) - 1)
            if ty.kind in NARROW_MASKS:
                lo, hi = (-(1 << 31), (1 << 31) - 1)  # through int, then modulo 2^8 or 2^16
            v = wrap(doubleconst.to_int(e.dconst, lo, hi), ty)
            return v & (NARROW_MASKS[ty.kind] if ty.kind in NARROW_MASKS else (1 << 64) - 1 if is_wide(ty) else 0xFFFFFFFF)
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
            return v & NARROW_MASKS.get(ty.kind, 0xFFFFFFFF)
        elif e.const is not None:
            v = wrap(e.const, ty)
            return v & NARROW_MASKS.get(ty.kind, 0xFFFFFFFF)
        raise self.error(e, f"the initialiser of __constant__ '{name}' is not a compile-time constant")
