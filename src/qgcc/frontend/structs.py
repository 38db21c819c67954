"""POD structs: their type, and how they map onto 32-bit memory cells.

Layout rule (docs/subset.md, "Structs"): memory is an array of 32-bit cells
and every scalar occupies one cell (a 64-bit one two, the low word first), so a
struct is its members' cells in
declaration order, with no padding: a scalar or pointer member takes one cell,
an array member `T a[N]` takes N times T's cells, a nested struct its own
cells.  `offsetof(S, m)` is therefore the number of cells before `m`, and an
array of structs is the structs one after another.

A struct value always lives in memory (a local struct in the thread's local
frame, like a local array), so a struct-typed expression stands for the
address of its first cell; member access adds the member's offset.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..program import StructLayout
from .types import (CHAR, DOUBLE, FLOAT, INT, SHORT, UCHAR, UINT, USHORT, ArrayType, FloatType, IntType, PtrType,
                    Type, words)


@dataclass(frozen=True)
class Field:
    name: str
    ty: Type  # a scalar, a pointer, a StructType or an ArrayType (of scalars or structs)
    offset: int  # cells from the start of the struct
    line: int
    col: int


class StructType(Type):
    """`struct TAG {...}`: compared by identity (two definitions are two types)."""

    def __init__(self, tag: str | None, keyword: str = "struct"):
        self.tag = tag
        self.keyword = keyword
        self.fields: list[Field] | None = None  # None until the body is read (incomplete)
        self.size = 0
        self.methods: dict[str, object] = {}  # name -> FuncSym (member functions and operators)
        self.const_members: set[str] = set()  # `const T x;` members: a constructor sets them
        self.constants: dict[str, object] = {}  # static const ints, member enumerators: VarSyms
        self.member_types: dict[str, Type] = {}  # member typedefs: `typedef float3 Type;`
        # class_members.py: member function templates (name -> [(TemplateDef, bindings)]), the
        # member functions' definitions with their bindings (what a derived class inherits), and
        # the class template and arguments of an instance (for deduction from `Col<C> &`)
        self.method_templates: dict[str, list] = {}
        self.method_defs: list = []
        self.template_of: tuple | None = None

    def name(self) -> str:
        return self.tag or f"(anonymous {self.keyword})"

    def __repr__(self) -> str:
        return f"StructType({self.name()})"

    @property
    def complete(self) -> bool:
        return self.fields is not None

    def field(self, name: str) -> Field | None:
        for f in self.fields or ():
            if f.name == name:
                return f
        return None

    def layout(self, members: list[tuple[str, Type, int, int]]) -> None:
        """Place the members one after another (one cell per scalar, two for a 64-bit one)."""
        off = 0
        fields = []
        for name, ty, line, col in members:
            fields.append(Field(name, ty, off, line, col))
            off += cells(ty)
        self.fields = fields
        self.size = off


def cells(t: Type) -> int:
    """The number of 32-bit cells a value of type t occupies in memory."""
    if isinstance(t, StructType):
        return t.size
    if isinstance(t, ArrayType):
        n = cells(t.elem)
        for d in t.dims:
            n *= d
        return n
    return words(t)


def is_struct(t: Type) -> bool:
    return isinstance(t, StructType)


def leaves(t: Type, prefix: str = "", base: int = 0) -> list[tuple[str, int, Type]]:
    """Every scalar cell of t as (dotted path, cell offset, scalar type), in memory order:
    `p.x`, `v[2]`, `m.a[1].y`."""
    if isinstance(t, StructType):
        out = []
        for f in t.fields or ():
            out += leaves(f.ty, f"{prefix}.{f.name}" if prefix else f.name, base + f.offset)
        return out
    if isinstance(t, ArrayType):
        step = cells(t.elem)
        for d in t.dims[1:]:
            step *= d
        sub = ArrayType(t.elem, t.dims[1:], t.const) if len(t.dims) > 1 else t.elem
        out = []
        for i in range(t.dims[0]):
            out += leaves(sub, f"{prefix}[{i}]", base + i * step)
        return out
    return [(prefix, base, t)]


def cell_only(t: Type) -> bool:
    """Whether t is made of int, unsigned and float cells only: then its size in CUDA (4 bytes a
    member, no padding) is 4 bytes per cell here too, which is what `sizeof` reports."""
    if isinstance(t, StructType):
        return t.complete and all(cell_only(f.ty) for f in t.fields)
    if isinstance(t, ArrayType):
        return cell_only(t.elem)
    if isinstance(t, IntType):
        return t.kind in ("int", "unsigned")
    return isinstance(t, FloatType) and not isinstance(t, PtrType)


def struct_layout(st: StructType) -> StructLayout:
    """What the launcher needs of a struct: its cells' member paths and element kinds (a pointer
    member is an unsigned cell: a cell address)."""
    return StructLayout(st.name(), tuple((path, "unsigned" if isinstance(t, PtrType) else t.kind)
                                         for path, _, t in leaves(st)))


# CUDA's built-in vector types (vector_types.h): structs of 1-4 members x, y, z, w, made by
# make_<type>(...).  Only the element types the machine has (no long).
VECTOR_ELEMS = {"char": CHAR, "uchar": UCHAR, "short": SHORT, "ushort": USHORT, "int": INT, "uint": UINT,
                "float": FLOAT, "double": DOUBLE}
VECTOR_NAMES = tuple(f"{e}{n}" for e in VECTOR_ELEMS for n in range(1, 5))


def vector_types() -> dict[str, StructType]:
    """A fresh set of the vector types (each compilation has its own struct identities)."""
    out = {}
    for e, t in VECTOR_ELEMS.items():
        for n in range(1, 5):
            st = StructType(f"{e}{n}")
            st.layout([(m, t, 0, 0) for m in "xyzw"[:n]])
            out[st.tag] = st
    return out
