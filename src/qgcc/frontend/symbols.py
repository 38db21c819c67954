"""The symbols semantic analysis creates and later passes read: variables (`VarSym`), functions
(`FuncSym`, also the routines of the .cu libraries), a declaration's specifiers (`SpecInfo`) and
the result of a translation unit (`SemaResult`).

Shared value types live here, below every pass, so that sema's topic mixins, `structsema`,
`softfloat` and the lowering passes import them without importing a pass.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from . import ast as A
from .structs import StructType
from .types import Type


INT_MAX = 0x7FFFFFFF


@dataclass(eq=False)
class VarSym:
    name: str
    ty: Type
    kind: str  # 'local' | 'param' | 'shared' | 'const'
    line: int
    col: int
    readonly: bool = False
    const_value: int | None = None  # compile-time value of a constant
    index: int = -1  # parameter position
    assigned: bool = False  # target of =, op=, ++ or -- somewhere
    hidden: bool = False  # an unnamed parameter (not visible in the body)
    ref: bool = False  # a reference parameter (`T &p`, `const T &p`) of a device function
    # Where a memory-resident variable (kind 'shared') lives: '' a static __shared__ variable,
    # 'dynamic' an extern __shared__ array (sized at launch), 'constant' a __constant__ variable
    # (global cells from 0, filled by the launcher).
    space: str = ""
    address: int = -1  # first global cell of a __constant__ variable
    init: list[int] | None = None  # a __constant__ variable's cells as the source initialises them
    # A local array's initialiser: (cell index, expression) pairs; the other cells become 0.
    init_exprs: list | None = None
    # A struct (or array of structs) initialiser: (cell, expression, type) triples, a struct-typed
    # expression copying cells(type) cells; with braces the other cells become 0.
    init_cells: list | None = None
    init_braced: bool = False
    # A texture (sema_textures.py): a `texture<T, N>` reference (kind 'texture'), a kernel's
    # hidden parameter standing for one, or a `cudaTextureObject_t` parameter.
    texture: "TexInfo | None" = None

    def __repr__(self) -> str:
        return f"VarSym({self.name}: {self.ty}, {self.kind})"


@dataclass(eq=False)
class TexInfo:
    """What a texture holds.  Its value at run time is a 64-bit handle (CUDA's
    cudaTextureObject_t is one too): the low word the first cell of its buffer, the high word
    (width - 1) | (height - 1) << 16, written by the launcher."""

    elem: Type | None  # the element type (None: a texture object never fetched from by name)
    dims: int  # 1 or 2 (0: not known)
    ref: "VarSym | None" = None  # a hidden kernel parameter: the file-scope texture it binds


@dataclass(eq=False)
class FuncSym:
    name: str
    kind: str  # 'global' | 'device'
    ret: Type
    param_types: list[Type]
    line: int
    col: int
    params: list[VarSym] = field(default_factory=list)
    definition: A.FunctionDef | None = None
    calls: list[tuple["FuncSym", A.Call]] = field(default_factory=list)
    param_refs: list[bool] = field(default_factory=list)  # which parameters are references
    param_ref_consts: list[bool] = field(default_factory=list)  # ... references to const
    template: tuple | None = None  # an instance: (template name, [type names and ints])
    method_of: "StructType | None" = None  # a member function: params[0] is `this`
    ret_ref: bool = False  # returns `T &`: the address of a memory lvalue

    def __repr__(self) -> str:
        return f"FuncSym({self.name})"


@dataclass
class SemaResult:
    kernels: list[FuncSym]
    functions: dict[str, FuncSym]
    constants: list[VarSym] = field(default_factory=list)  # __constant__ variables, by address
    printf: list = field(default_factory=list)  # (format, kinds, %s literals, virtual line) per printf
    asserts: list = field(default_factory=list)  # (virtual line, condition, function[, message]) per assert


@dataclass
class SpecInfo:
    base: Type
    const: bool
    storage: dict[str, A.Spec]
    first: A.Spec
