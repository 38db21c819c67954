"""Typed abstract syntax tree produced by `parser.py` and annotated by `sema.py`.

Every node carries the 1-based line and column of the token that best locates
it in a diagnostic (the operator of a binary expression, the name of a
declarator, the keyword of a statement).  `sema.py` fills in the annotation
fields (declared with `init=False`): expression types, constant values,
resolved symbols.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Node:
    line: int
    col: int


# ------------------------------------------------------------------ declarations


@dataclass
class Spec(Node):
    """One declaration-specifier keyword (`int`, `const`, `__global__`, ...) or typedef name."""

    text: str
    typename: bool = False  # a name declared by typedef/using
    struct: "StructDef | None" = None  # `struct S {...}` or `struct S` written here
    targs: "list | None" = None  # `Vec<float>`: the class template's arguments (TypeSyntax or Expr)


@dataclass
class StructDef(Node):
    """`struct TAG { fields and member functions }` (body None: `struct TAG` names a struct)."""

    tag: str | None
    keyword: str  # 'struct' or 'class'
    fields: list["Declaration"] | None = None  # None: no body (a use of the tag)
    methods: list["FunctionDef"] = field(default_factory=list)
    end_line: int = 0
    targs: list | None = None  # `template <> struct S<double> {...}`: the specialisation's arguments
    bases: list["Spec"] = field(default_factory=list)  # `class L : protected IO<T> {`: base classes
    templates: list["TemplateDef"] = field(default_factory=list)  # member templates (functions, structs)


@dataclass
class TypeSyntax(Node):
    """Specifiers plus pointer levels, as written (resolved by sema)."""

    specs: list[Spec]
    # One entry per '*', each with the qualifiers written after it.
    pointers: list[list[Spec]] = field(default_factory=list)


@dataclass
class ParamDecl(Node):
    type: TypeSyntax
    name: str | None
    # Array suffixes written on the parameter (`int a[]` -> [None]); adjusted to a pointer.
    arrays: list["Expr | None"] = field(default_factory=list)
    funcptr: bool = False
    ref: "Spec | None" = None  # `T &name`: the '&' (a reference)
    targs: "list | None" = None  # `f<float>` in `template <> ... f<float>(...)`: a specialisation's arguments
    default: "Expr | None" = None  # `int step = 1`: a default argument


@dataclass
class Declarator(Node):
    """A flattened declarator: name, pointer levels, array sizes, parameter list."""

    name: str
    pointers: list[list[Spec]] = field(default_factory=list)
    arrays: list["Expr | None"] = field(default_factory=list)
    params: list[ParamDecl] | None = None  # not None for a function declarator
    funcptr: bool = False  # `(*name)(...)`
    parens: bool = False  # some other parenthesised declarator
    const_method: bool = False  # `f(...) const`: a member function that does not change *this
    ref: "Spec | None" = None  # `T &name`: the '&' (a reference)
    targs: "list | None" = None  # `f<float>` in `template <> ... f<float>(...)`: a specialisation's arguments


@dataclass
class InitDeclarator(Node):
    decl: Declarator
    init: "Expr | BraceInit | None"


@dataclass
class BraceInit(Node):
    items: list[Any]


@dataclass
class Designated(Node):
    """`.name = value` in a brace initialiser of a struct."""
    name: str
    value: Any  # an Expr or a BraceInit


@dataclass
class Declaration(Node):
    specs: list[Spec]
    items: list[InitDeclarator]


@dataclass
class FunctionDef(Node):
    specs: list[Spec]
    decl: Declarator
    body: "Block | None"  # None: a function template's prototype (`template <...> T f(T);`)
    end_line: int


# ------------------------------------------------------------------ expressions


@dataclass
class Expr(Node):
    # Annotations set by sema.
    ty: Any = field(default=None, init=False, repr=False, compare=False)
    const: int | None = field(default=None, init=False, repr=False, compare=False)
    # A constant float value's bit pattern (float constants never use `const`,
    # whose integer truth and comparisons would be wrong for -0.0 and NaN).
    fconst: int | None = field(default=None, init=False, repr=False, compare=False)
    # A constant double value's 64-bit pattern (double constants use neither of the above).
    dconst: int | None = field(default=None, init=False, repr=False, compare=False)
    # The undecayed type when the expression names a (__shared__) array or a row of one.
    arr: Any = field(default=None, init=False, repr=False, compare=False)


@dataclass
class IntLit(Expr):
    text: str


@dataclass
class CharLit(Expr):
    text: str


@dataclass
class BoolLit(Expr):
    value: bool


@dataclass
class FloatLit(Expr):
    text: str
    double: bool = field(default=False, init=False, repr=False, compare=False)  # no 'f' suffix


@dataclass
class StringLit(Expr):
    text: str


@dataclass
class Name(Expr):
    name: str
    sym: Any = field(default=None, init=False, repr=False, compare=False)
    targs: Any = None  # `f<float, 4>`: TypeSyntax or Expr per template argument


@dataclass
class Member(Expr):
    base: Expr
    name: str
    arrow: bool = False
    sreg: Any = field(default=None, init=False, repr=False, compare=False)
    member: Any = field(default=None, init=False, repr=False, compare=False)  # the struct's Field
    targs: Any = None  # `b.f<float, 4>(...)`: a member function template's arguments


@dataclass
class Unary(Expr):
    op: str  # - + ! ~ * &
    operand: Expr


@dataclass
class IncDec(Expr):
    op: str  # ++ or --
    prefix: bool
    operand: Expr


@dataclass
class Binary(Expr):
    op: str
    left: Expr
    right: Expr
    # For arithmetic ops: the common type both operands are converted to.
    opty: Any = field(default=None, init=False, repr=False, compare=False)


@dataclass
class Assign(Expr):
    op: str  # '=' or '+=' ...
    target: Expr
    value: Expr
    opty: Any = field(default=None, init=False, repr=False, compare=False)


@dataclass
class Cond(Expr):
    cond: Expr
    then: Expr
    other: Expr
    tmp: Any = field(default=None, init=False, repr=False, compare=False)  # a struct result


@dataclass
class Comma(Expr):
    left: Expr
    right: Expr


@dataclass
class Cast(Expr):
    type: TypeSyntax
    operand: Expr
    kind: str = "c"  # "c", "functional" (T(x)), "static_cast", "reinterpret_cast" or "const_cast"
    target: Any = field(default=None, init=False, repr=False, compare=False)


@dataclass
class SizeOf(Expr):
    """`sizeof(T)` (type) or `sizeof x` (operand, not evaluated)."""

    type: "TypeSyntax | None"
    operand: "Expr | None"


@dataclass
class Index(Expr):
    base: Expr
    index: Expr


@dataclass
class Call(Expr):
    func: Expr
    args: list[Expr]
    # Resolved callee: a FuncSym or the name of a built-in.
    callee: Any = field(default=None, init=False, repr=False, compare=False)
    # Per argument: True when a reference parameter is bound to the argument (an lvalue) itself.
    ref_binds: Any = field(default=None, init=False, repr=False, compare=False)
    # Where a call that returns a struct puts it (a VarSym in the local frame).
    tmp: Any = field(default=None, init=False, repr=False, compare=False)


# ------------------------------------------------------------------ statements


@dataclass
class Stmt(Node):
    pass


@dataclass
class Block(Stmt):
    items: list[Any]  # Stmt | Declaration
    end_line: int = 0


@dataclass
class DeclStmt(Stmt):
    decl: Declaration
    # Set by sema: the VarSym of each declarator, in order.
    syms: list[Any] = field(default_factory=list, init=False, repr=False, compare=False)


@dataclass
class ExprStmt(Stmt):
    expr: Expr | None


@dataclass
class If(Stmt):
    cond: Expr
    then: Stmt
    other: Stmt | None


@dataclass
class While(Stmt):
    cond: Expr
    body: Stmt


@dataclass
class DoWhile(Stmt):
    body: Stmt
    cond: Expr


@dataclass
class For(Stmt):
    init: Stmt | None  # DeclStmt or ExprStmt
    cond: Expr | None
    step: Expr | None
    body: Stmt


@dataclass
class Case(Stmt):
    """`case VALUE:` (value None: `default:`), a label directly in a switch body."""

    value: "Expr | None"


@dataclass
class Switch(Stmt):
    """`switch (cond) { ... }`: the body's statements with Case labels among them."""

    cond: Expr
    body: list


@dataclass
class Break(Stmt):
    pass


@dataclass
class Continue(Stmt):
    pass


@dataclass
class Return(Stmt):
    value: "Expr | BraceInit | None"  # `return {a, b};`: a BraceInit of the return type
    temp: Any = field(default=None, init=False, repr=False, compare=False)  # set by sema for a struct


@dataclass
class TemplateParam(Node):
    name: str
    kind: str  # "type" or "value"
    specs: list[Spec] | None = None  # the type of a value parameter
    default: Any = None  # `typename T = float` (TypeSyntax), `int N = 4` (Expr)


@dataclass
class TemplateDef(Node):
    params: list[TemplateParam]
    func: "FunctionDef | None"
    struct: "StructDef | None" = None  # a class template: `template <typename T> struct Vec {...};`

    @property
    def name(self) -> str:
        return self.func.decl.name if self.func is not None else (self.struct.tag or "")


@dataclass
class TranslationUnit:
    items: list[Any]  # FunctionDef | Declaration
