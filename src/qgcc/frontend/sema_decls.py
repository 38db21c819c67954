"""Sema, declarations and scopes: declaration specifiers and declarators, typedefs and `using`,
file-scope variables, function declarations (overloads, default arguments, references) and the
start of a function body.

A mixin of `sema.Sema` (which composes the topic mixins over one state: scopes, functions,
typedefs, ...); it imports only the shared symbol types below the passes, never `sema`.
"""

from __future__ import annotations

from ..spec import SPEC
from . import ast as A
from .builtin_names import BASE_TYPES, TYPE_WORDS
from .structs import cells, is_struct
from .symbols import FuncSym, SpecInfo, VarSym
from .types import LLONG, PtrType, Type, ULLONG, VoidType, is_arith, is_float, is_int, is_ptr, words, wrap


class DeclSema:
    """Declarations and scopes (a mixin of `sema.Sema`; its state is documented there)."""

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
        # `T **p`: a pointer whose cells hold pointers (cell addresses); `void *`: an untyped
        # address, cast to a typed pointer before use (sema_exprs); `T *const *`: the inner
        # pointer's own const is its cells' const
        t: Type = PtrType(base, const)
        for level in pointers[:-1]:
            t = PtrType(t, any(q.text == "const" for q in level))
        ptr_const = any(q.text == "const" for q in pointers[-1])
        return t, ptr_const

    def type_of_syntax(self, ts: A.TypeSyntax, what: str) -> Type:
        info = self.spec_info(ts.specs, what)
        for k, s in info.storage.items():
            raise self.error(s, f"'{k}' is not allowed in a {what}")
        t, _ = self.apply_pointers(info.base, ts.pointers, info.const, ts)
        return t

    def array_dim(self, e: A.Expr | None, name: str, at: A.Node) -> int:
        if e is None:
            raise self.error(at, f"array '{name}' needs a size")
        self.rvalue(e)
        if e.const is None or not is_int(e.ty):
            raise self.error(e, f"size of array '{name}' is not a compile-time constant")
        if e.const <= 0:
            raise self.error(e, f"size of array '{name}' must be positive (got {e.const})")
        return e.const

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
            if "__shared__" in st:  # file scope: each kernel that uses it gets its own cells
                self.declare(self.shared_declaration(info, it))  # (lower_stmts.alloc_shared)
                continue
            if "__constant__" in st:
                self.declare(self.constant_declaration(info, it))
                continue
            if "__qg_texture" in st:  # `texture<T, N> name;` (texdecl.py, sema_textures.py)
                self.declare(self.texture_declaration(info, it))
                continue
            if "__device__" in st:
                self.declare(self.device_variable(info, it))
                continue
            if info.const and not it.decl.pointers and is_float(info.base) and it.init is not None:
                # `const float RISKFREE = 0.02f;`, `const float c[3] = {...};`: read-only cells,
                # laid out and filled like a __constant__ variable (sema_stmts.constant_declaration);
                # its initialiser may name the ones before (`const float b = -a;`: dwt2d's common.h)
                self.float_init = True
                try:
                    self.declare(self.constant_declaration(info, it))
                finally:
                    self.float_init = False
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
            if d.ref.text == "&temporary":  # refvars.py
                raise self.error(d.ref, f"cannot bind the non-const reference '{d.name}' to a temporary; "
                                        f"initialise it with a variable or an element, or declare it 'const'")
            raise self.error(d.ref, f"reference '{d.name}': references are supported only as "
                                    "parameters of device functions and initialised locals ('T &r = x;')")
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
            refs.append(p.ref is not None)
            ref_consts.append(p.ref is not None and readonly)
            ptypes.append(t)
            pnames.append((p, t, readonly))
        nwords = sum(1 if isinstance(t, PtrType) else cells(t) if is_struct(t) else words(t) for t in ptypes)
        if kind == "global" and nwords > SPEC.max_params:
            raise self.error(d, f"kernel '{d.name}' has {len(ptypes)} parameters ({nwords} words: a 64-bit "
                                f"one takes two, a struct by value one per cell); the machine allows at most "
                                f"{SPEC.max_params}"
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
                    word += cells(t) if kind == "global" else 1  # a kernel's: its cells as words
                    continue
                fs.params.append(VarSym(name, t, "param", p.line, p.col, readonly=readonly, index=word,
                                        hidden=p.name is None, ref=p.ref is not None))
                if kind == "global":
                    self.texture_object_param(p.type.specs, fs.params[-1])
                word += 1 if isinstance(t, PtrType) else words(t)
        self.default_arguments(fs, params, kind)
        return fs

    def default_arguments(self, fs: FuncSym, params: list, kind: str) -> None:
        """`__device__ float lerp(float a, float b, float t = 0.5f)`: a call may leave out the
        trailing parameters that have defaults (each default is checked where it is used, as a
        copy of its expression).  A kernel's defaults are for its host-side launches and change
        nothing here.  C++'s rule: once a parameter has a default, every later one has one."""
        defaults = [p.default for p in params]
        for i, p in enumerate(params):
            if p.default is None and any(x is not None for x in defaults[:i]):
                raise self.error(p, f"parameter '{p.name or i + 1}' needs a default argument (the "
                                    "parameters before it have one)")
        if kind != "global" and any(x is not None for x in defaults):
            fs.defaults = defaults

    def function_body(self, fs: FuncSym, fd: A.FunctionDef) -> None:
        self.check_body(fs, fd, {})
        self.scopes = []
        self.func = None
