"""Semantic analysis: names, types, constants and every subset restriction.

Input: the `ast.TranslationUnit` from the parser.  Output: a `SemaResult`
listing the kernels and device functions, with every expression annotated in
place (`ty`, `const`, `arr`, `sym`, `opty`, `callee`, ...).  All user-facing
errors except capacity limits (registers, shared memory, instruction count,
which `codegen` checks) are raised here as `CompileError`s.
"""

from __future__ import annotations

from ..diagnostics import CompileError
from . import ast as A
from .structs import StructType, vector_types
from .structsema import StructSema
from .class_members import ClassMemberSema
from .types import BUILTIN_TYPEDEFS, Type
from .symbols import INT_MAX, FuncSym, SemaResult, SpecInfo, VarSym  # noqa: F401 - INT_MAX, SpecInfo re-exported
# The built-in tables, re-exported for callers that read them from sema (tests, bench).
from .builtin_names import (ATOMICS, BIT_CASTS, DOUBLE_FUNCS, FLOAT_FUNCS, INT_FUNCS, MATH_FUNCS,  # noqa: F401
                            WARP_FUNCS)
from .sema_decls import DeclSema
from .sema_templates import TemplateSema
from .sema_stmts import StmtSema
from .sema_exprs import ExprSema
from .sema_calls import CallSema
from .sema_textures import TextureSema
from .sema_printf import PrintfSema


class Sema(DeclSema, TemplateSema, StmtSema, ExprSema, CallSema, StructSema, ClassMemberSema, TextureSema,
           PrintfSema):
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
        self._null_guard()
        self.templates: dict[str, A.TemplateDef] = {}
        self.template_overloads: dict[str, list[A.TemplateDef]] = {}  # name -> all (by parameter count)
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
        self.float_init = False  # a file-scope const float's initialiser is checked (sema_decls)
        self.ntemps = 0

    def _null_guard(self) -> None:
        """Cells 0 and 1 as a __constant__ array of the compiler's (program.NULL_GUARD_NAME):
        everything else starts at cell 2, so a pointer to any object differs from a null one
        (a buffer at cell 0 made `if (p)` false for a valid pointer)."""
        from ..program import NULL_GUARD_CELLS, NULL_GUARD_NAME
        from .types import UINT, ArrayType

        sym = VarSym(NULL_GUARD_NAME, ArrayType(UINT, (NULL_GUARD_CELLS,)), "shared", 0, 0, space="constant",
                     address=0, init=[0] * NULL_GUARD_CELLS)
        self.constants.append(sym)
        self.constant_cells = NULL_GUARD_CELLS

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


    # (structs, class templates and overloads: structsema.StructSema)


    # ------------------------------------------------------------------ top level

    def run(self, tu: A.TranslationUnit, instantiate: tuple[str, ...] = (), prefix: bool = False) -> SemaResult:
        """prefix: `tu` is the complete items before a parse error (frontend/firsterror.py):
        only what those items show by themselves is checked (no launch requests, no
        'declared but never defined', which a later item may settle)."""
        defs: list[tuple[FuncSym, A.FunctionDef]] = []
        # The first problem in source order is reported (docs/cli.md, "Errors"): declarations are
        # read in order (one that fails ends them: later items may need it), and each function
        # body and member function is checked on its own, so a body's error does not hide an
        # earlier one that a later pass (member functions after free functions) would find.
        found: list[CompileError] = []
        try:
            for item in tu.items:
                if isinstance(item, A.TemplateDef):
                    self.template_declaration(item)
                elif isinstance(item, A.FunctionDef):
                    fs = self.declare_function(item.specs, item.decl, definition=item)
                    defs.append((fs, item))
                else:
                    self.top_declaration(item)
        except CompileError as e:
            found.append(e)
        declared = not found
        for fs, fd in defs:
            self._apart(found, self.function_body, fs, fd)
        while self.methods:  # (one that fails was taken off the list: the rest are still checked)
            self._apart(found, self.check_methods)
        if found:
            if not declared:  # (a body may call what the declarations after the failed one declare)
                found = found[:1] + [e for e in found[1:] if not e.message.startswith(("unknown function",
                                                                                       "unknown identifier"))]
            raise min(found, key=lambda e: (e.line, e.col))
        if prefix:
            return SemaResult([], self.functions, self.constants, [], [])
        for request in instantiate:
            self.instantiate_by_name(request)
        self.check_methods()
        defs += self.instances + self.checked_methods
        self.check_calls()
        self.check_recursion([fs for fs, _ in defs])
        kernels = [fs for fs, _ in defs if fs.kind == "global"]
        self.texture_params(kernels)
        printf, asserts = self.device_io()
        return SemaResult(kernels, self.functions, self.constants, printf, asserts)


    def _apart(self, found: list[CompileError], check, *args) -> None:
        """Run one check; its error is kept in `found` and the state it may have left half set
        (the function, its scopes, block typedefs) is put back, so the next check starts clean.
        Member functions it queued are dropped: their class may be the half-made instance whose
        error this is, and checking them against it would name members it never got."""
        saved = (self.func, self.scopes, self.loop_depth, dict(self.typedefs), self.method_env)
        queued = list(self.methods)
        try:
            check(*args)
        except CompileError as e:
            found.append(e)
            self.func, self.scopes, self.loop_depth, self.typedefs, self.method_env = saved
            self.methods[:] = [m for m in self.methods if any(m is q for q in queued)]

    # ------------------------------------------------------------------ templates


    # ------------------------------------------------------------------ statements


    # ------------------------------------------------------------------ expressions


    # -- literals


    # -- names


    # -- operators


def analyse(tu: A.TranslationUnit, filename: str, source: str, instantiate: tuple[str, ...] = (),
            prefix: bool = False) -> SemaResult:
    return Sema(filename, source).run(tu, tuple(instantiate), prefix)


