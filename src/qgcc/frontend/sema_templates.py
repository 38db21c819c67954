"""Sema, templates and the call graph: function template declarations, explicit
specialisations, argument deduction, instantiation (also by name, for `qgrun --kernel 'f<8>'`),
and the checks over every call once all bodies are known (recursion is rejected).

A mixin of `sema.Sema`; it imports only the shared symbol types, never `sema`.
"""

from __future__ import annotations

import copy
import re

from ..diagnostics import CompileError
from . import ast as A
from .builtin_names import TYPE_WORDS
from .structs import is_struct
from .symbols import FuncSym, VarSym
from .types import PtrType, Type, is_arith, is_int, wrap



def address_taken(node) -> set[str]:
    """Names whose address a function body takes (`&n`): those locals live in the thread's
    frame instead of a register (sema_stmts.local_declaration), so `hit(ox, oy, &n)` works."""
    out: set[str] = set()
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, A.Unary) and n.op == "&" and isinstance(n.operand, A.Name):
            out.add(n.operand.name)
        if isinstance(n, A.Call) and isinstance(n.func, A.Name) and n.func.name == "__match_all_sync":
            stack.extend(n.args[:2])  # its `&pred` names a register (sema_calls.match_all_pred)
            continue
        if isinstance(n, list):
            stack.extend(n)
        elif isinstance(n, A.Node):
            stack.extend(v for v in vars(n).values() if isinstance(v, (A.Node, list)))
    return out

def _arity(t: A.TemplateDef) -> tuple[int, int]:
    """The fewest and the most arguments a function template takes (defaults may be left out)."""
    params = [p for p in t.func.decl.params or [] if not (p.name is None and not p.type.pointers and
                                                           [s.text for s in p.type.specs] == ["void"])]
    return sum(1 for p in params if p.default is None), len(params)


def _same_params(a: A.TemplateDef, b: A.TemplateDef) -> bool:
    def spelled(t):
        return [([s.text for s in p.type.specs], len(p.type.pointers), p.ref is not None, len(p.arrays or []))
                for p in t.func.decl.params or []]
    return spelled(a) == spelled(b)


class TemplateSema:
    """Templates and the call graph (a mixin of `sema.Sema`)."""

    def template_for_call(self, name: str, e: A.Call) -> A.TemplateDef | None:
        """The function template a call names: of overloads (bisect's two `storeIntervalConverged`),
        the one that takes as many arguments as the call gives."""
        group = self.template_overloads.get(name)
        if not group:
            return self.templates.get(name)
        fits = [t for t in group if _arity(t)[0] <= len(e.args) <= _arity(t)[1]]
        if len(fits) != 1:
            raise self.error(e, f"no overload of function template '{name}' takes {len(e.args)} "
                                f"argument{'s' if len(e.args) != 1 else ''}")
        return fits[0]

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
        elif earlier is not None and earlier.func is not None and name not in self.functions:
            group = self.template_overloads.setdefault(name, [earlier])
            for other in group:
                if _arity(other) == _arity(t):
                    raise self.error(t.func.decl, f"redefinition of '{name}'" if _same_params(other, t) else
                                     f"function template '{name}' is overloaded with the same number of "
                                     f"parameters as the one on line {other.line} (qgcc tells function "
                                     f"template overloads apart by their number of parameters); rename one")
            group.append(t)
            return
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

    def deduce(self, t: A.TemplateDef, given: list, args: list[A.Expr], at: A.Node) -> list | None:
        """The remaining template arguments, deduced from the call's argument types (None: a
        file's own min/max template that does not fit, so CUDA's built-in overload is called)."""
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
            capture = tnames[0].startswith("__qg_lambda_") and levels == 0  # lambdas.py: a pointer too
            if not (capture and isinstance(ty, PtrType)) and (isinstance(ty, PtrType)
                                                              or not (is_arith(ty) or is_struct(ty))):
                raise self.error(a, f"cannot deduce '{tnames[0]}' of '{name}' from '{a.ty}'")
            prev = found.get(tnames[0])
            if prev is not None and prev != ty:
                if name in ("min", "max") and not given:
                    return None  # not viable: CUDA's own min/max overloads take mixed types (sema_calls)
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
        fs.addressed = address_taken(fd.body)
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
        group = self.template_overloads.get(name, [t])
        nth = next(i for i, x in enumerate(group) if x is t)
        key = display if nth == 0 else f"{display}#t{nth}"  # overloads may share template arguments
        fs = self.functions.get(key)
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
            fs = self.declare_function(fd.specs, fd.decl, definition=fd, key=key)
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
