"""Sema, the C++ class features that class templates are written with (rodinia dwt2d's
transform buffer and pixel loaders): member function templates (`b.f<A, B>(x)`, `b.f(x)` with
deduction, also of an integer parameter from a class template argument: `Col<C> &c`),
class templates nested in a class template (`template <bool C> struct Col {...};` inside
`FDWT53<64, 8>`), nested structs, base classes, and names qualified by a class (`S::N` of a
class constant, `X<8>::run(...)` of a static member function).

Everything here is the existing machinery applied once more: a member template's instance is
an ordinary member function `S::f<A, B>` declared with the class's bindings plus its own; a
base class's members come first in the derived struct's cells (single inheritance: a base is
at offset 0) and its member functions are declared again as the derived class's, so `this`
always has the type it is used with; a static member function is a member function called
with a null `this`, which it never reads.  A mixin of `sema.Sema`.
"""

from __future__ import annotations

import copy

from . import ast as A
from .structs import StructType, is_struct
from .symbols import VarSym
from .types import INT, PtrType, Type

TEMPLATE_KEY = "template "  # typedefs key prefix of a class template nested in a class instance


class ClassMemberSema:
    """Member templates, nested classes, bases and class-qualified names (see the module docstring)."""

    # ------------------------------------------------------------ the class body

    def class_members(self, sd: A.StructDef, st: StructType, class_scope: dict) -> list:
        """Before a struct's own members: its nested structs and templates, member templates, and
        what it inherits.  Returns the inherited members (placed first)."""
        env = self.method_env
        st.method_templates = {}
        st.method_defs = [(fd, env) for fd in sd.methods]
        for d in sd.fields:
            for s in d.specs:
                n = s.struct
                if env is not None and n is not None and n.fields is not None and n.tag \
                        and "::" not in n.tag:  # a nested struct: one per instance of its class
                    plain, n.tag = n.tag, f"{st.tag}::{n.tag}"
                    nst = self.struct_type(n)
                    self.typedefs[plain] = env[0][plain] = (nst, False)
        for t in sd.templates:
            if t.struct is not None:  # a nested class template: its instances see the class's bindings
                t.outer = (st.tag, env)
                if env is None:
                    self.class_templates[t.name] = t
                else:
                    self.typedefs[TEMPLATE_KEY + t.name] = env[0][TEMPLATE_KEY + t.name] = (t, False)
            elif t.func is not None and t.params:
                st.method_templates.setdefault(t.func.decl.name, []).append((t, env))
            else:
                raise self.error(t, "explicit specialisations of member function templates are not supported")
        inherited: list = []
        own = {fd.decl.name for fd in sd.methods}
        for spec in sd.bases:
            base = self.spec_info([spec], "base class").base
            if not is_struct(base) or not base.complete:
                raise self.error(spec, f"base class '{spec.text}' is not a complete struct or class")
            inherited += [(f.name, f.ty, f.line, f.col) for f in base.fields if not f.name.startswith("<")]
            for k, v in base.constants.items():
                class_scope.setdefault(k, v)
            for k, v in base.member_types.items():
                st.member_types.setdefault(k, v)
            for name, group in base.method_templates.items():
                st.method_templates.setdefault(name, list(group))
            for fd, benv in base.method_defs:
                if fd.decl.name not in own:
                    self.inherit_method(st, fd, benv)
        return inherited

    def inherit_method(self, st: StructType, fd: A.FunctionDef, env) -> None:
        """A base class's member function, declared again as one of st with the base's bindings."""
        saved = dict(self.typedefs), self.method_env
        try:
            if env is not None:
                self.typedefs.update(env[0])
            self.method_env = env
            self.declare_method(st, copy.deepcopy(fd))
            st.method_defs.append((fd, env))
        finally:
            self.typedefs, self.method_env = saved

    def nested_template(self, name: str):
        """The class template nested in the class being checked that `name` names (or None)."""
        hit = self.typedefs.get(TEMPLATE_KEY + name)
        return hit[0] if hit is not None else None

    # ------------------------------------------------------------ member function templates

    def member_template_call(self, st: StructType, m: A.Member, e: A.Call) -> None:
        """`b.f<A>(x)` or `b.f(x)` where f is a member function template of st: m.name becomes
        the member function `f<A, ...>`, instantiated with the arguments given or deduced."""
        group = st.method_templates.get(m.name)
        if not group:
            if m.targs is not None:
                raise self.error(m, f"'{st}::{m.name}' is not a member function template")
            return
        fits = [g for g in group if len([p for p in g[0].func.decl.params or [] if p.default is None])
                <= len(e.args) <= len(g[0].func.decl.params or [])]
        if len(fits) != 1:
            raise self.error(e, f"no single overload of member function template '{st}::{m.name}' takes "
                                f"{len(e.args)} argument{'s' if len(e.args) != 1 else ''}")
        t, env = fits[0]
        values = self.deduce_member(t, self.template_args(t, m.targs or [], m), e.args, e)
        display = self.instance_name(m.name, values)
        if display not in st.methods:
            binds = dict(env[0]) if env is not None else {}
            consts = dict(env[1]) if env is not None else {}
            for p, v in zip(t.params, values):
                if p.kind == "type":
                    binds[p.name] = (v, False)
                else:
                    ty = self.spec_info(p.specs, "template parameter").base
                    consts[p.name] = VarSym(p.name, ty, "const", p.line, p.col, readonly=True, const_value=v)
            fd = copy.deepcopy(t.func)
            fd.decl.name = display
            saved = (dict(self.typedefs), self.method_env, self.func, self.scopes)
            try:
                self.typedefs.update(binds)
                self.method_env, self.func, self.scopes = (binds, consts), None, [dict(consts)]
                self.declare_method(st, fd)
            finally:
                self.typedefs, self.method_env, self.func, self.scopes = saved
        m.name, m.targs = display, None

    def deduce_member(self, t: A.TemplateDef, given: list, args: list, at: A.Node) -> list:
        """The template arguments after `given`: a type parameter from an argument whose parameter
        is written as it (`const F &f`), an integer or type parameter from the arguments of a
        class template instance (`Col<C> &c` given a `Col<1>`)."""
        found: dict[str, object] = {}
        open_names = {p.name for p in t.params[len(given):]}
        for pd, a in zip(t.func.decl.params or [], args):
            for s in pd.type.specs:
                if s.typename and s.targs is None and s.text in open_names and not pd.type.pointers:
                    ty = self.rvalue(a)
                    found.setdefault(s.text, ty)
                elif s.targs is not None:
                    ty = self.rvalue(a)
                    for _ in pd.type.pointers:
                        ty = ty.elem if isinstance(ty, PtrType) else ty
                    have = ty.template_of if is_struct(ty) else None
                    if have is None:
                        continue
                    for ta, v in zip(s.targs, have[1]):
                        if isinstance(ta, A.Name) and ta.name in open_names:
                            found.setdefault(ta.name, v)
                        elif isinstance(ta, A.TypeSyntax) and len(ta.specs) == 1 and not ta.pointers \
                                and ta.specs[0].text in open_names:
                            found.setdefault(ta.specs[0].text, v)
        out = list(given)
        for p in t.params[len(given):]:
            if p.name in found:
                out.append(found[p.name])
            elif p.default is not None:
                out.append(self.template_default(t, p, out))
            else:
                raise self.error(at, f"cannot deduce template parameter '{p.name}' of member function "
                                     f"template '{t.func.decl.name}'; write .{t.func.decl.name}<...>(...)")
        return out

    # ------------------------------------------------------------ names qualified by a class

    def scoped_class(self, e: A.Name) -> tuple[StructType, str]:
        """`S::x` or `X<8>::f`: the class (instantiated) and the member's name."""
        outer, member = e.name.rsplit("::", 1)
        if e.targs is not None:
            st = self.class_instance(A.Spec(e.line, e.col, outer, typename=True, targs=e.targs))
        else:
            hit = self.typedefs.get(outer)
            st = hit[0] if hit is not None else None
        if not is_struct(st):
            raise self.error(e, "'::' is not supported (C++ namespaces and classes are not)")
        return st, member

    def scoped_name(self, e: A.Name) -> Type:
        """`S::N`: a class constant (a member enum's enumerator, `static const int N`)."""
        st, member = self.scoped_class(e)
        sym = st.constants.get(member)
        if sym is None:
            raise self.error(e, f"'{st}' has no constant '{member}' (outside the class, '::' names only "
                                "class constants and static member functions)")
        e.sym, e.const = sym, sym.const_value
        return sym.ty

    def scoped_call(self, e: A.Call) -> Type:
        """`X<8>::run(a, b)`: a static member function, called with a null `this` (it reads none)."""
        f = e.func
        st, member = self.scoped_class(f)
        zero = A.IntLit(f.line, f.col, "0")
        zero.ty, zero.const = INT, 0
        null = A.Cast(f.line, f.col, None, zero)
        null.ty = null.target = PtrType(st, False)
        cands = st.methods.get(member)
        if cands is None:
            raise self.error(f, f"'{st}::{member}' is not a static member function")
        e.args = [null] + e.args
        fs = self.resolve(cands, e, f"{st}::{member}", checked=1)
        return self.function_call(e, fs, fs.name, checked=1)
