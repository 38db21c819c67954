"""A compiled program: the unit that flows from compiler/assembler to linker and engines."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .isa import Instr

# Element types a kernel parameter (or the pointee of a pointer parameter) may have,
# with the numpy dtype a host buffer for it must have.
ELEM_DTYPES = {
    "int": "int32",
    "unsigned": "uint32",
    "bool": "bool",
    "char": "int8",
    "uchar": "uint8",
    "short": "int16",  # one cell per element, like char: the 16-bit pattern zero-extended
    "ushort": "uint16",
    "float": "float32",
    "llong": "int64",  # two cells per element, the low word first
    "ullong": "uint64",
    "double": "float64",  # two cells per element, the low word first
}


# Spellings of template type arguments -> the element kinds that name instances.
_TYPE_KINDS = {"int": "int", "signed": "int", "signed int": "int", "int32_t": "int", "unsigned": "unsigned",
               "unsigned int": "unsigned", "uint32_t": "unsigned", "size_t": "unsigned", "bool": "bool",
               "char": "char", "signed char": "char", "int8_t": "char", "unsigned char": "uchar",
               "uint8_t": "uchar", "short": "short", "short int": "short", "signed short": "short",
               "int16_t": "short", "unsigned short": "ushort", "unsigned short int": "ushort", "uint16_t": "ushort", "float": "float", "long long": "llong", "long": "llong", "int64_t": "llong",
               "unsigned long long": "ullong", "unsigned long": "ullong", "uint64_t": "ullong",
               "double": "double"}


def instance_name(template: str, args: list) -> str:
    """The kernel name of a template instance, an identifier: `matmul<8>` -> `matmul__8`,
    `scale<unsigned int>` -> `scale__unsigned`, `f<-1>` -> `f__m1`."""
    parts = [str(a).replace("-", "m") if isinstance(a, int) else a for a in args]
    return "__".join([template, *parts])


def parse_instance(text: str) -> str | None:
    """`NAME<ARGS>` as written on a command line -> its instance_name (None if not that form)."""
    m = re.fullmatch(r"\s*([A-Za-z_]\w*)\s*<(.*)>\s*", text)
    if m is None:
        return None
    args: list = []
    for a in (x.strip() for x in m.group(2).split(",")) if m.group(2).strip() else []:
        a = " ".join(a.split())
        if a in _TYPE_KINDS:
            args.append(_TYPE_KINDS[a])
            continue
        if a in ("true", "false"):  # a bool template argument
            args.append(int(a == "true"))
            continue
        if re.fullmatch(r"[A-Za-z_]\w*", a):  # a struct type: its instances are named by it (k__RGBA8)
            args.append(a)
            continue
        try:
            args.append(int(re.sub(r"(?i)(ull|llu|ul|lu|ll|u|l)$", "", a), 0))  # C's suffixes: 1U
        except ValueError:
            return None
    return instance_name(m.group(1), args)


def _unknown_template_argument(text: str) -> str | None:
    """The first argument of `NAME<ARGS>` that is neither a type qgrun knows nor an integer (a
    typedef or a struct no instance has), so that the error can name it."""
    m = re.fullmatch(r"\s*([A-Za-z_]\w*)\s*<(.*)>\s*", text)
    if m is None:
        return None
    for a in (" ".join(x.split()) for x in m.group(2).split(",")):
        if a and a not in _TYPE_KINDS and a not in ("true", "false") and not re.fullmatch(r"-?\d\w*", a):
            return a
    return None


@dataclass(frozen=True)
class StructLayout:
    """A struct as the launcher sees it: its scalar members in memory order, one cell each
    (two for a 64-bit member, the low word first)."""

    name: str
    cells: tuple[tuple[str, str], ...]  # (member path such as 'pos.x' or 'v[2]', ctype)

    @property
    def words(self) -> int:
        """The struct's size in cells."""
        return sum(2 if ct in ("llong", "ullong", "double") else 1 for _, ct in self.cells)


@dataclass
class Param:
    name: str
    ctype: str  # one of ELEM_DTYPES (for pointers: the pointee)
    pointer: bool = False
    const: bool = False
    # A pointer to a struct (ctype "struct"): the struct's name and its cells in memory order,
    # as (dotted member path, ctype) pairs (frontend/structs.py: one cell per scalar member).
    struct: "StructLayout | None" = None
    # A texture (1 or 2: its dimensions; docs/subset.md, "Textures"): a read-only buffer whose
    # parameter is a 64-bit handle, the buffer's first cell and (width-1) | (height-1) << 16.
    texture: int = 0
    # `T **` (T a scalar): the buffer holds the cell addresses of other buffers of ctype, which
    # the launch lays out from a list of arrays (docs/subset.md, "Pointers to pointers").
    indirect: bool = False

    @property
    def words(self) -> int:
        """Parameter words (LDC slots) the parameter takes: a 64-bit scalar two, low word first."""
        if self.texture:
            return 2
        if self.struct is not None and not self.pointer:
            return self.struct.words  # a struct by value: one word per cell
        return 2 if not self.pointer and self.ctype in ("llong", "ullong", "double") else 1

    def describe(self) -> str:
        if self.texture:
            elem = self.struct.name if self.struct is not None else {"uchar": "unsigned char"}.get(self.ctype, self.ctype)
            return f"texture<{elem}, {self.texture}> {self.name}"
        if self.struct is not None and not self.pointer:
            return f"{'const ' if self.const else ''}{self.struct.name} {self.name}"
        if self.struct is not None:
            return f"{'const ' if self.const else ''}{self.struct.name} * {self.name}"
        c = {"uchar": "unsigned char", "llong": "long long", "ullong": "unsigned long long"}.get(self.ctype, self.ctype)
        stars = " **" if self.indirect else " *" if self.pointer else ""
        return f"{'const ' if self.const else ''}{c}{stars} {self.name}"


@dataclass
class Kernel:
    name: str
    entry: int  # first instruction (index into Program.code)
    end: int  # one past the last instruction
    params: list[Param] = field(default_factory=list)
    shared_words: int = 0  # static __shared__ cells used by the kernel
    regs: int = 0  # registers per thread actually used
    # Cells of local arrays per thread: each thread's frame lies in global memory at
    # Program.constant_cells + (linear thread index) * local_words (the launcher reserves
    # local_words * threads per block cells there, below the buffers).
    local_words: int = 0


@dataclass
class Constant:
    """A `__constant__` variable: `length` read-only global cells from `base`, which the launcher
    fills before the launch (from `init`, the source's initialiser, or from a --const array)."""

    name: str
    ctype: str  # one of ELEM_DTYPES
    dims: tuple[int, ...]  # () for a scalar
    base: int  # first global cell (constants sit at the bottom of global memory)
    init: list[int] = field(default_factory=list)  # one cell per element (64-bit: two, low first)

    @property
    def length(self) -> int:
        """The number of elements."""
        n = 1
        for d in self.dims:
            n *= d
        return n

    @property
    def words(self) -> int:
        """The number of cells (two per element of a 64-bit type)."""
        return self.length * (2 if self.ctype in ("llong", "ullong", "double") else 1)

    def describe(self) -> str:
        c = {"uchar": "unsigned char"}.get(self.ctype, self.ctype)
        return f"__constant__ {c} {self.name}" + "".join(f"[{d}]" for d in self.dims)


# Cells 0 and 1 of every compiled program: no object lives at address 0, so a null pointer
# compares unequal to every pointer to an object, as in CUDA (frontend/sema.py adds them as a
# __constant__ array the compiler owns; two cells keep 64-bit objects on even cells).
NULL_GUARD_NAME = "__qg_null"
NULL_GUARD_CELLS = 2

# Device printf and assert (frontend/sema_printf.py, runtime/printf.py): the record buffer, a
# __device__ array the compiler adds, and the address band a failing assert stores to.
PRINTF_NAME = "__qg_printf"
PRINTF_CELLS = 1024
ASSERT_BAND = 0xA55E0000


@dataclass(frozen=True)
class PrintfFormat:
    """A printf call's format: its text, one argument kind per conversion (printfmt.py), the
    %s literals in order, and its source line."""

    text: str
    kinds: str
    literals: tuple[str, ...]
    line: int


@dataclass(frozen=True)
class DeviceAssert:
    """An assert call: where it is, its condition as written, and the function it is in.

    `message`, when set, replaces the "Assertion `cond` failed." report: a check the compiler
    adds for a construct (grid.sync() in a launch of more than one block) says why."""

    file: str
    line: int
    cond: str
    function: str
    message: str = ""


@dataclass
class Program:
    code: list[Instr]
    kernels: list[Kernel]
    source_name: str = "<input>"
    # Source text lines (1-based line N is source_lines[N-1]) for annotations and traces.
    source_lines: list[str] = field(default_factory=list)
    constants: list[Constant] = field(default_factory=list)
    printf: list[PrintfFormat] = field(default_factory=list)  # by format number
    asserts: list[DeviceAssert] = field(default_factory=list)  # by assert number

    @property
    def user_constants(self) -> list[Constant]:
        """The __constant__ variables the source declared: those a user may set (--const) or be
        told of; the compiler's own (the null guard, printf's buffer, a lock) are named __qg_."""
        return [c for c in self.constants if not c.name.startswith("__qg_")]

    @property
    def null_guard_cells(self) -> int:
        """2 for a program compiled by qgcc from CUDA (its first constant is the null guard), 0 for
        one without (a .qsass that does not declare it, a .qg compiled before it)."""
        first = self.constants[0] if self.constants else None
        return first.words if first is not None and first.name == NULL_GUARD_NAME else 0

    @property
    def constant_cells(self) -> int:
        """Global cells 0 .. constant_cells-1 hold the __constant__ variables; buffers follow."""
        return sum(c.words for c in self.constants)

    def kernel(self, name: str | None) -> Kernel:
        """Pick a kernel by name; with one kernel in the file no name is needed."""
        if name is None:
            if len(self.kernels) == 1:
                return self.kernels[0]
            names = ", ".join(k.name for k in self.kernels)
            raise LookupError(f"the program has several kernels ({names}); choose one with --kernel")
        wanted = parse_instance(name) or name if "<" in name else name
        for k in self.kernels:
            if k.name == wanted:
                return k
        if "<" in name:  # `k<8>` for the instance `k<8, float>` of a template with a default argument
            more = [k for k in self.kernels if k.name.startswith(wanted + "__")]
            if len(more) == 1:
                return more[0]
        names = ", ".join(k.name for k in self.kernels)
        bad = _unknown_template_argument(name) if "<" in name else None
        if bad is not None:
            raise LookupError(f"no kernel named '{name}': '{bad}' is not a type or integer qgrun knows, "
                              f"nor a struct of an instance (a typedef used with --instantiate is not kept "
                              f"in the program: write the type it names, such as 'unsigned char'); the "
                              f"program has: {names}")
        raise LookupError(f"no kernel named '{name}'; the program has: {names}")

    def source_line(self, line: int | None) -> str:
        if line is None or not (1 <= line <= len(self.source_lines)):
            return ""
        return self.source_lines[line - 1].strip()

