"""Semantic checks of structs, class templates and overloads, a part of `sema.Sema`.

Struct definitions (members laid out by `structs.py`, member functions declared as device
functions `S::f` whose parameter 0 is `this`), class template instances, struct locals and
their aggregate initialisers, struct temporaries, member function calls, operators on
structs, overload resolution, `make_<vector>(...)` and `sizeof`.  `Sema` inherits these
methods; they use its helpers (`error`, `rvalue`, `spec_info`, ...).
"""

from __future__ import annotations

import copy

from ..spec import SPEC
from . import ast as A
from .structs import Field, StructType, cell_only, cells, is_struct
from .symbols import FuncSym, SpecInfo, VarSym
from .types import FLOAT, UCHAR, UINT, ArrayType, PtrType, Type, VoidType, is_arith, is_float, is_int, is_ptr, wrap


def _syms():
    return FuncSym, VarSym


def _become(node: A.Expr, new: A.Expr) -> None:
    """Rewrite an expression node in place (its parent keeps the same object): an implicit
    `this->x`, an operator call."""
    node.__class__ = new.__class__
    node.__dict__.clear()
    node.__dict__.update(new.__dict__)


EMPTY_MEMBER = "<no members>"  # not an identifier: no source can name it


class CallbackType(PtrType):
    """A function-pointer struct member (`int (*compare)(const void *, const void *);`): one cell
    holding an address, like a `void *`, that device code may copy but not call."""


class StructSema:
    """The struct methods of Sema (see the module docstring)."""

    def struct_type(self, sd: A.StructDef) -> StructType:
        """The type `struct TAG {...}` defines (its members laid out, its member functions
        declared), or the one `struct TAG` names."""
        known = self.struct_defs.get(id(sd))
        if known is not None and known[0] is sd:
            return known[1]
        prev = self.typedefs.get(sd.tag) if sd.tag else None
        if prev is not None and not isinstance(prev[0], StructType):
            raise self.error(sd, f"'{sd.tag}' is already a type name (a typedef of '{prev[0]}')")
        st = prev[0] if prev is not None else None
        if st is None:
            st = StructType(sd.tag, sd.keyword)  # `struct S;` or `struct S *` before S's body
            if sd.tag:
                self.typedefs[sd.tag] = (st, False)
        self.struct_defs[id(sd)] = (sd, st)
        if sd.fields is None:
            return st
        if st.complete:
            raise self.error(sd, f"redefinition of '{sd.keyword} {sd.tag}'")
        members: list[tuple[str, Type, int, int]] = []
        seen: dict[str, int] = {}
        consts: set[str] = set()
        class_scope: dict = {}  # `static const int N = 4;`, a member enum's enumerators
        self.scopes.append(class_scope)  # (an error ends the check: no restore needed)
        members += self.class_members(sd, st, class_scope)  # class_members.py: nested, inherited
        for d in sd.fields:
            if any(s.text == "static" for s in d.specs):
                self.class_constant(d, class_scope)
                continue
            anon = next((s.struct for s in d.specs if s.struct is not None and s.struct.tag is None), None)
            if anon is not None and not d.items:  # (C++ would put its members in the enclosing one)
                raise self.error(anon, f"an anonymous {anon.keyword} member is not supported; name "
                                       f"the member ('{anon.keyword} {{...}} m;')")
            if any(s.text == "typedef" for s in d.specs):  # `typedef float3 Type;` (nbody's vec3<T>)
                info = self.spec_info(d.specs, "member typedef")
                for it in d.items:
                    self.check_declarator_shape(it.decl)
                    st.member_types[it.decl.name] = self.apply_pointers(info.base, it.decl.pointers,
                                                                        info.const, it.decl)[0]
                    if self.method_env is not None:  # named by the class's later members and bodies
                        self.typedefs[it.decl.name] = self.method_env[0][it.decl.name] = \
                            (st.member_types[it.decl.name], False)
                continue
            for it in d.items:
                decl = it.decl
                if decl.params is not None and not decl.funcptr and not decl.parens:
                    raise self.error(decl, f"member function '{decl.name}' is declared but not defined "
                                           "here; define member functions inside the struct")
            info = self.spec_info(d.specs, "member declaration")
            for k, sp in info.storage.items():
                raise self.error(sp, f"'{k}' is not allowed on a struct member")
            if info.const:  # `const float scale;`: set by a constructor only (sema_exprs.check_assignable)
                consts.update(it.decl.name for it in d.items if not it.decl.pointers)
            for it in d.items:
                decl = it.decl
                if decl.funcptr and not decl.arrays and decl.ref is None:
                    # `int (*compare)(const void *, const void *);`: host code's callback, kept as
                    # one opaque cell (an untyped address) that device code cannot call
                    members.append((decl.name, CallbackType(VoidType()), decl.line, decl.col))
                    seen[decl.name] = decl.line
                    continue
                self.check_declarator_shape(decl)
                if it.init is not None:
                    raise self.error(it.init, f"default member initialisers of a class template are "
                                              f"not supported ('{decl.name}'); assign the member after declaring the object")
                ty, _ = self.apply_pointers(info.base, decl.pointers, info.const, decl)  # `const float *p`
                if isinstance(ty, VoidType):
                    raise self.error(decl, f"member '{decl.name}' has type void")
                if ty is st:
                    raise self.error(decl, f"member '{decl.name}' has the type of the struct being "
                                           "defined; use a pointer")
                if is_struct(ty) and not ty.complete:
                    raise self.error(decl, f"member '{decl.name}' has incomplete type '{ty}'")
                if decl.arrays:
                    if len(decl.arrays) > 2:
                        raise self.error(decl, "array members have at most 2 dimensions")
                    if is_ptr(ty):
                        raise self.error(decl, f"arrays of pointers are not supported ('{decl.name}')")
                    ty = ArrayType(ty, tuple(self.array_dim(x, decl.name, decl) for x in decl.arrays))
                if decl.name in seen:
                    raise self.error(decl, f"duplicate member '{decl.name}' (first declared on line "
                                           f"{seen[decl.name]})")
                seen[decl.name] = decl.line
                members.append((decl.name, ty, decl.line, decl.col))
        self.scopes.pop()
        st.constants = class_scope
        if not members:
            # C++ gives an empty struct a size (1 byte); here it is one cell that nothing reads,
            # so the SharedMemory<T> idiom (a struct that only has member functions) works.
            members.append((EMPTY_MEMBER, UCHAR, sd.line, sd.col))
        if sd.keyword == "union":
            self.union_layout(st, members)
        else:
            st.layout(members)
        st.const_members = consts
        if cells(st) > SPEC.global_words:
            raise self.error(sd, f"'{st}' needs {cells(st)} cells; global memory has {SPEC.global_words}")
        for fd in sd.methods:
            if self.func is not None:
                raise self.error(fd.decl, "member functions of a struct declared inside a function "
                                          "are not supported; declare the struct at file scope")
            self.declare_method(st, fd)
        return st

    def union_layout(self, st: StructType, members: list) -> None:
        """A union's members all start at its first cell, so writing one and reading another views
        the same bits (float and int punning).  Memory is 32-bit cells, so only members made of
        whole cells (int, unsigned, float: arrays and structs of them) can share them."""
        fields = []
        for name, ty, line, col in members:
            if name != EMPTY_MEMBER and not cell_only(ty):
                raise self.error(line, col, f"union member '{name}' has type '{ty}'; a union's members "
                                            "share 32-bit cells, so only int, unsigned and float members "
                                            "(and arrays and structs of them) are supported; view 16-bit "
                                            "halves of an unsigned with shifts and masks")
            fields.append(Field(name, ty, 0, line, col))
        st.fields = fields
        st.size = max((cells(f.ty) for f in fields), default=0)

    def class_constant(self, d: A.Declaration, scope: dict) -> None:
        """`static const int N = 4;` in a class: a compile-time integer constant named inside the
        class (its member declarations and member functions), as a member enum's enumerators are
        (enums.py writes them so); nothing is stored in the objects."""
        VarSym = _syms()[1]
        info = self.spec_info(d.specs, "member declaration")
        for it in d.items:
            decl = it.decl
            if not info.const or not is_int(info.base) or decl.pointers or decl.arrays \
                    or decl.params is not None or it.init is None:
                raise self.error(decl, f"static member '{decl.name}' is not supported; only integer "
                                       "constants ('static const int N = 4;') may be static members")
            init = self.scalar_init(it.init, decl.name)
            self.rvalue(init)
            if init.const is None or not is_int(init.ty):
                raise self.error(init, f"static member '{decl.name}' needs a compile-time constant "
                                       "initialiser")
            if decl.name in scope:
                raise self.error(decl, f"redefinition of '{decl.name}' (previously declared on line "
                                       f"{scope[decl.name].line})")
            scope[decl.name] = VarSym(decl.name, info.base, "const", decl.line, decl.col, readonly=True,
                                      const_value=wrap(init.const, info.base))

    def declare_method(self, st: StructType, fd: A.FunctionDef) -> None:
        """A member function is a device function `S::f` whose parameter 0 is `this`."""
        VarSym = _syms()[1]
        d = fd.decl
        if st.field(d.name) is not None:
            raise self.error(d, f"'{st}' already has a data member '{d.name}'")
        qual = copy.copy(d)
        qual.name = f"{st}::{d.name}"
        others = st.methods.get(d.name, [])
        fs = self.declare_function(fd.specs, qual, definition=fd, key=f"{qual.name}#{len(others)}")
        this_t = PtrType(st, d.const_method)
        this = VarSym("this", this_t, "param", d.line, d.col, readonly=True, index=0)
        for p in fs.params:
            p.index += 1
        fs.params.insert(0, this)
        fs.param_types.insert(0, this_t)
        fs.param_refs.insert(0, False)
        fs.param_ref_consts.insert(0, False)
        fs.method_of = st
        for o in others:
            if o.param_types[1:] == fs.param_types[1:] and o.param_refs == fs.param_refs \
                    and o.param_types[0].const == this_t.const:
                raise self.error(d, f"redefinition of '{qual.name}' (previously defined on line {o.line})")
        st.methods.setdefault(d.name, []).append(fs)
        self.methods.append((fs, fd, self.method_env))

    def check_methods(self) -> None:
        """The bodies of member functions, each with its class template's bindings (if any);
        checking one may instantiate more."""
        while self.methods:
            fs, fd, env = self.methods.pop(0)
            saved = dict(self.typedefs)
            consts = {}
            if env is not None:
                self.typedefs.update(env[0])
                consts = env[1]
            consts = {**consts, **getattr(fs.method_of, "constants", {})}
            try:
                self.check_body(fs, fd, consts)
            finally:
                self.typedefs, self.scopes, self.func = saved, [], None
            self.checked_methods.append((fs, fd))

    def class_instance(self, spec: A.Spec) -> StructType:
        """`Vec<float>`: the struct a class template defines for these arguments (one per
        distinct argument list), its members and member functions with the parameters bound."""
        VarSym = _syms()[1]
        if "::" in spec.text:  # `typename vec3<T>::Type` (membertypes.py): a member typedef
            outer, member = spec.text.split("::", 1)
            inner = copy.copy(spec)
            inner.text = outer
            st = self.class_instance(inner)
            if member not in st.member_types:
                raise self.error(spec, f"'{st}' has no member type '{member}'")
            return st.member_types[member]
        t = self.nested_template(spec.text) or self.class_templates.get(spec.text)
        if t is None:
            raise self.error(spec, f"'{spec.text}' is not a class template")
        outer = getattr(t, "outer", None) or ("", None)  # a class template nested in a class
        values = self.template_args(t, spec.targs, spec)
        for p in t.params[len(values):]:
            if p.default is None:
                raise self.error(spec, f"too few template arguments for '{spec.text}' (give "
                                       f"'{p.name}')")
            values.append(self.template_default(t, p, values))
        key = (spec.text, tuple(values)) + ((outer[0],) if outer[0] else ())
        st = self.class_instances.get(key)
        if st is not None:
            return st
        display = f"{outer[0] + '::' if outer[0] else ''}{spec.text}<{', '.join(str(v) for v in values)}>"
        st = StructType(display, t.struct.keyword)
        st.template_of = (spec.text, tuple(values))
        self.class_instances[key] = st
        special = self.class_specialisations.get(key)
        sd = copy.deepcopy(special or t.struct)
        sd.tag, sd.targs = display, None
        binds: dict[str, tuple[Type, bool]] = {**(outer[1][0] if outer[1] else {}), spec.text: (st, False),
                                               display: (st, False)}
        consts = dict(outer[1][1]) if outer[1] else {}
        for p, v in zip(t.params if special is None else [], values):
            if p.kind == "type":
                binds[p.name] = (v, False)
            else:
                ty = self.spec_info(p.specs, "template parameter").base
                consts[p.name] = VarSym(p.name, ty, "const", p.line, p.col, readonly=True, const_value=v)
        saved = (self.func, self.scopes, dict(self.typedefs), self.method_env)
        try:
            self.typedefs.update(binds)
            self.func, self.scopes, self.method_env = None, [dict(consts)], (binds, consts)
            self.struct_type(sd)
        finally:
            self.func, self.scopes, self.typedefs, self.method_env = saved
        return st

    def class_specialisation(self, t: A.TemplateDef) -> None:
        """`template <> struct SharedMemory<double> {...}`: the struct used for that argument list
        instead of the class template's text (checked when that instance is first used, as C++
        instantiates it)."""
        sd, name = t.struct, t.name
        primary = self.class_templates.get(name)
        if primary is None:
            raise self.error(sd, f"explicit specialisation of '{name}', which is not a class template "
                                 "declared before it")
        values = self.template_args(primary, sd.targs, sd)
        for p in primary.params[len(values):]:
            if p.default is None:
                raise self.error(sd, f"too few template arguments for '{name}' (give '{p.name}')")
            values.append(self.template_default(primary, p, values))
        key = (name, tuple(values))
        if key in self.class_specialisations:
            raise self.error(sd, f"redefinition of '{name}<{', '.join(str(v) for v in values)}>'")
        if key in self.class_instances:
            raise self.error(sd, f"explicit specialisation of '{name}' after its instance was used")
        self.class_specialisations[key] = sd

    def temp(self, ty: Type, at: A.Node) -> VarSym:
        """A struct temporary (a call's result, a `?:`): cells in the thread's local frame."""
        VarSym = _syms()[1]
        self.ntemps += 1
        return VarSym(f"<temporary {self.ntemps}>", ty, "shared", at.line, at.col, space="local")

    def complete(self, t: Type, at: A.Node) -> None:
        if is_struct(t) and not t.complete:
            raise self.error(at, f"'{t}' is an incomplete type (declared but not defined)")

    def struct_local(self, info: SpecInfo, it: A.InitDeclarator) -> VarSym:
        """`S s;`, `S s = t;`, `S s = f(x);`, `S s = {1, 2.0f};`, `S s{...};`: a struct in the
        thread's local frame."""
        VarSym = _syms()[1]
        decl = it.decl
        ty = info.base
        self.complete(ty, decl)
        sym = VarSym(decl.name, ty, "shared", decl.line, decl.col, readonly=info.const, space="local")
        init = it.init
        if isinstance(init, A.BraceInit):
            sym.init_cells = self.aggregate(ty, init, decl.name)
            sym.init_braced = True
        elif init is not None:
            self.rvalue(init, dst=ty)
            self.convert_check(init, ty, "initialisation")
            sym.init_cells = [(0, init, ty)]
        elif info.const:
            raise self.error(decl, f"const variable '{decl.name}' needs an initialiser")
        return sym

    def aggregate(self, ty: Type, init: A.BraceInit, name: str) -> list:
        """The (cell, expression, type) triples of a brace initialiser of a struct or array,
        in C's order: members (elements) in turn, nested braces or brace elision, a value of
        the member's struct type copied whole."""
        out: list = []

        def parts(t: Type) -> list[tuple[int, Type]]:
            if is_struct(t):  # a union's braces initialise its first member, as in C
                return [(f.offset, f.ty) for f in t.fields[:1 if t.keyword == "union" else None]]
            sub = ArrayType(t.elem, t.dims[1:], t.const) if len(t.dims) > 1 else t.elem
            return [(i * cells(sub), sub) for i in range(t.dims[0])]

        def fill(t: Type, base: int, items: list, i: int) -> int:
            for off, sub in parts(t):
                if i >= len(items):
                    break
                x = items[i]
                if isinstance(sub, (StructType, ArrayType)):
                    if isinstance(x, A.BraceInit):
                        braced(sub, base + off, x)
                        i += 1
                        continue
                    if is_struct(sub):
                        xt = self.rvalue(x, dst=sub)
                        if xt == sub:
                            out.append((base + off, x, sub))
                            i += 1
                            continue
                    i = fill(sub, base + off, items, i)  # brace elision
                    continue
                if isinstance(x, A.BraceInit):
                    if len(x.items) != 1 or isinstance(x.items[0], A.BraceInit):
                        raise self.error(x, f"braces around the scalar initialiser of a member of "
                                            f"'{name}'")
                    x = x.items[0]
                self.rvalue(x, dst=sub)
                self.convert_check(x, sub, "initialisation")
                out.append((base + off, x, sub))
                i += 1
            return i

        def braced(t: Type, base: int, b: A.BraceInit) -> None:
            if any(isinstance(x, A.Designated) for x in b.items):
                return designated(t, base, b)
            n = fill(t, base, b.items, 0)
            if n < len(b.items):
                raise self.error(b.items[n], f"too many initialisers for '{t}' in '{name}'")

        def designated(t: Type, base: int, b: A.BraceInit) -> None:
            """`{.x = 1, .z = 3}` (C++20): members named in declaration order, the others 0."""
            if not is_struct(t):
                x = next(x for x in b.items if isinstance(x, A.Designated))
                raise self.error(x, f"designated initialiser '.{x.name}' for '{t}', which is not a "
                                    f"struct (in '{name}')")
            order = [f.name for f in t.fields]
            last = -1
            for x in b.items:
                if not isinstance(x, A.Designated):
                    raise self.error(x, f"mixing designated and positional initialisers for '{t}' "
                                        f"in '{name}'; name every member ('.m = ...')")
                f = t.field(x.name)
                if f is None:
                    raise self.error(x, f"'{t}' has no member named '{x.name}'")
                i = order.index(x.name)
                if i <= last:
                    raise self.error(x, f"designated initialisers must follow the order of the "
                                        f"members of '{t}' ('.{x.name}' after '.{order[last]}')")
                last = i
                v = x.value
                if isinstance(f.ty, (StructType, ArrayType)) and isinstance(v, A.BraceInit):
                    braced(f.ty, base + f.offset, v)
                elif isinstance(f.ty, ArrayType):
                    raise self.error(v, f"array member '{x.name}' needs a brace initialiser "
                                        f"('.{x.name} = {{...}}')")
                else:
                    fill_one(f.ty, base + f.offset, v)

        def fill_one(t: Type, base: int, x) -> None:
            """One member (not an array) from one initialiser clause."""
            if is_struct(t):
                xt = self.rvalue(x, dst=t)
                if xt != t:
                    raise self.error(x, f"cannot initialise a member of type '{t}' with a value of "
                                        f"type '{xt}'")
                out.append((base, x, t))
                return
            fill(ArrayType(t, (1,), False), base, [x], 0)

        braced(ty, 0, init)
        return out

    def check_SizeOf(self, e: A.SizeOf) -> Type:
        """sizeof in bytes where CUDA and this machine agree: types made of 4-byte int, unsigned
        and float cells (a cell is 4 bytes; CUDA pads nothing between 4-byte members)."""
        t = self.type_of_syntax(e.type, "sizeof") if e.type is not None else self.check(e.operand)
        self.complete(t, e)
        if isinstance(t, VoidType) or not cell_only(t):
            why = ("a pointer is 8 bytes in CUDA and one 4-byte cell here" if is_ptr(t) else
                   f"'{t}' takes a 4-byte cell per {'member' if is_struct(t) else 'element'} here, "
                   "not CUDA's size" if not isinstance(t, VoidType) else "'void' has no size")
            raise self.error(e, f"sizeof('{t}') is not available: {why}; sizeof works on int, "
                                "unsigned, float and structs and arrays made of them")
        e.const = 4 * cells(t)
        return UINT

    def method_call(self, e: A.Call) -> Type:
        """`s.f(x)`, `p->f(x)`, `f(x)` in a member function: S::f(&s, x)."""
        m = e.func
        if m.arrow:
            bt = m.base.ty if m.base.ty is not None else self.rvalue(m.base)
            if not (is_ptr(bt) and is_struct(bt.elem)):
                raise self.error(m, f"'->' needs a pointer to a struct ('{bt}' is not one)")
            st, const, this = bt.elem, bt.const, m.base
        else:
            bt = m.base.ty if m.base.ty is not None else self.check(m.base)  # an operator's operand
            if not is_struct(bt):
                raise self.error(m, f"member function '.{m.name}' called on a value of type '{bt}', "
                                    "which is not a struct")
            st, const = bt, self.mem_const(m.base) and not self.in_constant_memory(m.base)
            this = A.Unary(m.line, m.col, "&", m.base)
            this.ty = PtrType(st, const)
        self.member_template_call(st, m, e)  # class_members.py: `b.f<A>(x)`
        cands = st.methods.get(m.name)
        if cands is None:
            f = st.field(m.name)
            what = ("a function-pointer member (host code's callback); calling through a function pointer "
                    "is not supported" if f is not None and isinstance(f.ty, CallbackType) else
                    "a data member, not a function" if f is not None else "no such member function")
            raise self.error(m, f"'{st}::{m.name}': {what}")
        usable = [f for f in cands if f.param_types[0].const or not const]
        if not usable:
            raise self.error(m, f"cannot call '{cands[0].name}' on a const '{st}' (declare it "
                                f"'{m.name}(...) const')")
        e.args = [this] + e.args
        fs = self.resolve(usable, e, f"{st}::{m.name}", checked=1)
        return self.function_call(e, fs, fs.name, checked=1)

    def resolve(self, cands: list[FuncSym], e: A.Call, name: str, checked: int = 0) -> FuncSym:
        """The overload a call means: the viable one with the most arguments of exactly its
        parameter types (C++'s ranking, simplified: every conversion ranks the same)."""
        if len(cands) == 1:
            return cands[0]
        n = len(e.args)
        fit = [f for f in cands if len(f.param_types) == n]
        if not fit:
            raise self.error(e, f"no overload of '{name}' takes {n - checked} argument"
                                f"{'s' if n - checked != 1 else ''}")
        for i, a in enumerate(e.args[checked:], checked):
            if a.ty is None:
                kinds = {is_float(f.param_types[i]) for f in fit}
                self.rvalue(a, dst=FLOAT if kinds == {True} else None)

        def score(f: FuncSym) -> int | None:
            total = 0
            for i, a in enumerate(e.args):
                pt, at = f.param_types[i], a.ty
                if at == pt:
                    total += 2
                elif is_ptr(pt) and is_ptr(at) and pt.elem == at.elem and pt.const:
                    total += 1 if i < checked else 2  # `this`: a non-const object prefers non-const
                elif f.param_refs[i] and not f.param_ref_consts[i]:
                    return None  # a non-const reference binds only to its own type
                elif (is_arith(pt) and is_arith(at)) or (is_ptr(pt) and is_int(at) and a.const == 0):
                    total += 1
                else:
                    return None
            return total

        ranked = [(score(f), f) for f in fit]
        ranked = [(s_, f) for s_, f in ranked if s_ is not None]
        shown = ", ".join(str(a.ty) for a in e.args[checked:])
        if not ranked:
            raise self.error(e, f"no overload of '{name}' takes ({shown})")
        best = max(s_ for s_, _ in ranked)
        top = [f for s_, f in ranked if s_ == best]
        if len(top) > 1:
            raise self.error(e, f"call of overloaded '{name}' with ({shown}) is ambiguous")
        return top[0]

    def conversion(self, e: A.Expr, st: StructType, dst: Type, ctx: str) -> bool:
        """A struct converted to a non-struct type through its conversion operator (`operator T *()`,
        as the SharedMemory<T> idiom defines one): e becomes the call `e.operator T *()`.  The
        operator returning exactly dst is preferred, then one whose result converts to it; of two
        that differ only by `const` on `this`, the non-const one (False: the struct has none)."""
        cands = [fs for name, fss in st.methods.items() if name.startswith("operator ") for fs in fss]
        if not cands:
            return False
        exact = [fs for fs in cands if fs.ret == dst]
        pick = exact or [fs for fs in cands if is_ptr(fs.ret) and is_ptr(dst) and fs.ret.elem == dst.elem
                         and dst.const] or [fs for fs in cands if is_arith(fs.ret) and is_arith(dst)]
        if not pick:
            return False
        pick.sort(key=lambda fs: fs.param_types[0].const)
        name = pick[0].name.split("::")[-1]
        inner = copy.copy(e)
        _become(e, A.Call(e.line, e.col, A.Member(e.line, e.col, inner, name), []))
        t = self.method_call(e)
        e.ty = t
        self.convert_check(e, dst, ctx)
        return True

    def value_initialisation(self, e: A.Cast, st: StructType) -> bool:
        """`S()`: a temporary S with every member zero (C++ value-initialisation of an aggregate),
        as `T *p = SharedMemory<T>();` writes it; e becomes that temporary (False: not `S()`)."""
        op = e.operand  # the parser gives `S()` a 0 at the cast's own place
        if not (isinstance(op, A.IntLit) and (op.line, op.col) == (e.line, e.col)):
            return False
        if any(not is_arith(f.ty) for f in st.fields):
            return False
        zeros = [A.IntLit(e.line, e.col, "0") for _ in st.fields]
        call = A.Call(e.line, e.col, A.Name(e.line, e.col, f"make_{st}"), zeros)
        _become(e, call)
        return True

    def make_vector(self, e: A.Call, st: StructType) -> Type:
        """`make_float3(x, y, z)`: a temporary vector, each argument converted to the member type."""
        name = f"make_{st}"
        self.nargs(e, name, len(st.fields))
        for a, f in zip(e.args, st.fields):
            self.rvalue(a, dst=f.ty)
            self.convert_check(a, f.ty, f"argument of '{name}'")
        e.callee = "make_vector"
        e.tmp = self.temp(st, e)
        return st

    def operator_call(self, e: A.Expr, op: str, left: A.Expr, args: list[A.Expr]) -> Type | None:
        """`a op b` on a struct: its member `operator op` or a function `operator op`, as a call
        that replaces e (None when there is none)."""
        name = "operator" + op
        lt = left.ty
        if is_struct(lt) and name in lt.methods:
            call = A.Call(e.line, e.col, A.Member(e.line, e.col, left, name), args)
        elif name in self.functions:
            call = A.Call(e.line, e.col, A.Name(e.line, e.col, name), [left] + args)
        else:
            return None
        _become(e, call)
        return self.check_Call(e)
