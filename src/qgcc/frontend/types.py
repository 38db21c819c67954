"""The C types of the subset, their value domains and the conversions between them.

Register representation: every scalar but the 64-bit integers lives in one 32-bit
register holding its C value as a two's-complement pattern (a `long long` or
`unsigned long long` is a register pair, the low word first: `wide.py`): `int`/`unsigned` use all 32 bits, `bool`
is 0 or 1, `char` (= `signed char`) is sign-extended (-128..127), `unsigned
char` is 0..255, `short` is sign-extended (-32768..32767), `unsigned short` 0..65535.  Promotion to int is therefore free; narrowing conversions
cost one or two instructions (see `codegen.convert`).

Memory representation: one 32-bit cell per element; char/uchar cells hold the
8-bit pattern zero-extended, short/ushort cells the 16-bit pattern, bool cells hold 0/1.

`float` is IEEE binary32: a register or a cell holds its bit pattern; the float
unit's instructions (or, under --soft-float, the soft-float library) operate on
it.  Constant float expressions are folded here (`floatconst`) with the same
results.
"""

from __future__ import annotations

from dataclasses import dataclass

MASK32 = 0xFFFFFFFF


class Type:
    def __str__(self) -> str:
        return self.name()

    def name(self) -> str:  # pragma: no cover - overridden
        raise NotImplementedError


@dataclass(frozen=True)
class VoidType(Type):
    def name(self) -> str:
        return "void"


@dataclass(frozen=True)
class IntType(Type):
    kind: str  # 'int' | 'unsigned' | 'bool' | 'char' | 'uchar' | 'short' | 'ushort' | 'llong' | 'ullong'

    def name(self) -> str:
        return {"unsigned": "unsigned int", "uchar": "unsigned char", "ushort": "unsigned short", "llong": "long long",
                "ullong": "unsigned long long"}.get(self.kind, self.kind)

    @property
    def signed(self) -> bool:
        return self.kind in ("int", "char", "short", "llong")

    @property
    def bits(self) -> int:
        return {"int": 32, "unsigned": 32, "bool": 1, "char": 8, "uchar": 8, "short": 16, "ushort": 16,
                "llong": 64, "ullong": 64}[self.kind]

    @property
    def wide(self) -> bool:
        """A 64-bit integer: a register pair and two memory cells (frontend/wide.py)."""
        return self.kind in ("llong", "ullong")


@dataclass(frozen=True)
class FloatType(Type):
    kind = "float"  # the launch-parameter element kind, like IntType.kind

    def name(self) -> str:
        return "float"

    @property
    def signed(self) -> bool:
        return True


@dataclass(frozen=True)
class DoubleType(Type):
    """IEEE binary64: a register pair (and two memory cells) holding the bit pattern, the low
    word first, like a 64-bit integer; every operation is a routine of double.cu."""

    kind = "double"

    def name(self) -> str:
        return "double"

    @property
    def signed(self) -> bool:
        return True


@dataclass(frozen=True)
class PtrType(Type):
    elem: "IntType | FloatType | PtrType | VoidType"  # a pointer to pointers: cells of addresses
    const: bool = False  # pointee is const

    def name(self) -> str:
        if isinstance(self.elem, PtrType):  # `int **`, `int *const *`
            return f"{self.elem.name()}{'const ' if self.const else ''}*"
        return f"{'const ' if self.const else ''}{self.elem.name()} *"


@dataclass(frozen=True)
class ArrayType(Type):
    """A __shared__ or __constant__ array (1-D or 2-D), never a value by itself; an extern
    __shared__ array has dims (0,) (its size is set at launch)."""

    elem: "IntType | FloatType"
    dims: tuple[int, ...]
    const: bool = False  # elements are read-only (__constant__, const __shared__)

    def name(self) -> str:
        dims = "".join(f"[{d or ''}]" for d in self.dims)  # 0: extern, unsized
        return f"{'const ' if self.const else ''}{self.elem.name()}{dims}"


VOID = VoidType()
INT = IntType("int")
UINT = IntType("unsigned")
BOOL = IntType("bool")
CHAR = IntType("char")
UCHAR = IntType("uchar")
SHORT = IntType("short")
USHORT = IntType("ushort")
# The integer types narrower than a cell: their cells hold the low bits (zero-extended).
NARROW_MASKS = {"char": 0xFF, "uchar": 0xFF, "short": 0xFFFF, "ushort": 0xFFFF}
FLOAT = FloatType()
DOUBLE = DoubleType()
# `long` is 64 bits (LP64, as CUDA on Linux), so `long` and `long long` are one type here.
LLONG = IntType("llong")
ULLONG = IntType("ullong")
MASK64 = (1 << 64) - 1

# Typedef names every file has.  size_t is 32 bits because this machine's addresses are; the
# stdint.h names are the types of those widths that the machine has.
BUILTIN_TYPEDEFS = {"size_t": UINT, "ptrdiff_t": INT, "int32_t": INT, "uint32_t": UINT,
                    "int8_t": CHAR, "uint8_t": UCHAR, "int16_t": SHORT, "uint16_t": USHORT, "clock_t": INT,  # clock(): 32 bits here
                    "int64_t": LLONG, "uint64_t": ULLONG,
                    "cudaTextureObject_t": ULLONG}  # a texture's handle (sema_textures.py)


def is_int(t: Type) -> bool:
    return isinstance(t, IntType)


def is_wide(t: Type) -> bool:
    return isinstance(t, IntType) and t.wide


def is_double(t: Type) -> bool:
    return isinstance(t, DoubleType)


def is_pair(t: Type) -> bool:
    """A value that lives in a register pair and two cells: a 64-bit integer or a double."""
    return is_wide(t) or isinstance(t, DoubleType)


def words(t: Type) -> int:
    """Memory cells (and registers) one value of t takes: 2 for a 64-bit integer or a double,
    else 1."""
    return 2 if is_pair(t) else 1


def is_float(t: Type) -> bool:
    return isinstance(t, FloatType)


def is_arith(t: Type) -> bool:
    return isinstance(t, (IntType, FloatType, DoubleType))


def is_floating(t: Type) -> bool:
    """float or double: the types without %, <<, >>, &, |, ^ and ~."""
    return isinstance(t, (FloatType, DoubleType))


def is_ptr(t: Type) -> bool:
    return isinstance(t, PtrType)


def is_scalar(t: Type) -> bool:
    return isinstance(t, (IntType, FloatType, DoubleType, PtrType))


def promote(t):
    """Integer promotion: bool/char/unsigned char/short/unsigned short -> int (float and 64-bit types stay)."""
    if isinstance(t, (FloatType, DoubleType)) or t.wide:
        return t
    return UINT if t.kind == "unsigned" else INT


def usual_arithmetic(a, b):
    """C's usual arithmetic conversions for the subset: double wins, then float, then unsigned
    after promotion."""
    if isinstance(a, DoubleType) or isinstance(b, DoubleType):
        return DOUBLE
    if isinstance(a, FloatType) or isinstance(b, FloatType):
        return FLOAT
    pa, pb = promote(a), promote(b)
    if ULLONG in (pa, pb):
        return ULLONG
    if LLONG in (pa, pb):  # long long holds every unsigned int: the result is signed
        return LLONG
    return UINT if UINT in (pa, pb) else INT


def wrap(value: int, t: Type) -> int:
    """A Python int converted to type t, in t's value domain (the register value)."""
    if isinstance(t, IntType):
        k = t.kind
        if k == "bool":
            return int(value != 0)
        if k == "char":
            return ((value & 0xFF) ^ 0x80) - 0x80
        if k == "uchar":
            return value & 0xFF
        if k == "short":
            return ((value & 0xFFFF) ^ 0x8000) - 0x8000
        if k == "ushort":
            return value & 0xFFFF
        if k == "int":
            value &= MASK32
            return value - (1 << 32) if value & 0x80000000 else value
        if k == "llong":
            value &= MASK64
            return value - (1 << 64) if value >> 63 else value
        if k == "ullong":
            return value & MASK64
        return value & MASK32
    return value & MASK32  # pointers: cell addresses


def same_pointee(a: PtrType, b: PtrType) -> bool:
    return a.elem == b.elem


# ---------------------------------------------------------------- constant arithmetic
# The exact semantics of every operator on 32-bit values, shared by the constant
# folder and the code generator's immediate folding; the emitted instruction
# sequences compute the same results (including division by zero, see docs/subset.md).


def to_s32(v: int) -> int:
    v &= MASK32
    return v - (1 << 32) if v & 0x80000000 else v


def udiv(a: int, b: int) -> int:
    a &= MASK32
    b &= MASK32
    return MASK32 if b == 0 else a // b


def urem(a: int, b: int) -> int:
    a &= MASK32
    b &= MASK32
    return a if b == 0 else a % b


def sdiv(a: int, b: int) -> int:
    """Signed division truncating toward zero; x/0 = -1 for x >= 0 and 1 for x < 0."""
    a, b = to_s32(a), to_s32(b)
    q = udiv(abs(a), abs(b))
    if (a < 0) != (b < 0):
        q = -q
    return to_s32(q)


def srem(a: int, b: int) -> int:
    """Signed remainder with the dividend's sign; x%0 = x."""
    a, b = to_s32(a), to_s32(b)
    r = urem(abs(a), abs(b))
    return to_s32(-r if a < 0 else r)


def fold_binary(op: str, a: int, b: int, t: IntType) -> int:
    """`a op b` evaluated in the (promoted) type t; comparisons return 0/1.  64-bit types use
    the same rules at 64 bits (shift amounts modulo 64, division by zero as for 32 bits)."""
    if isinstance(t, IntType) and t.wide:
        return _fold64(op, a, b, t)
    ua, ub = a & MASK32, b & MASK32
    if op == "+":
        r = ua + ub
    elif op == "-":
        r = ua - ub
    elif op == "*":
        r = ua * ub
    elif op == "/":
        r = sdiv(ua, ub) if t.signed else udiv(ua, ub)
    elif op == "%":
        r = srem(ua, ub) if t.signed else urem(ua, ub)
    elif op == "&":
        r = ua & ub
    elif op == "|":
        r = ua | ub
    elif op == "^":
        r = ua ^ ub
    elif op == "<<":
        r = ua << (ub & 31)
    elif op == ">>":
        r = (to_s32(ua) >> (ub & 31)) if t.signed else (ua >> (ub & 31))
    elif op in ("<", ">", "<=", ">=", "==", "!="):
        x, y = (to_s32(ua), to_s32(ub)) if t.signed else (ua, ub)
        return int({"<": x < y, ">": x > y, "<=": x <= y, ">=": x >= y,
                    "==": x == y, "!=": x != y}[op])
    elif op == "&&":
        return int(ua != 0 and ub != 0)
    elif op == "||":
        return int(ua != 0 or ub != 0)
    else:  # pragma: no cover
        raise ValueError(op)
    return wrap(r, t)


def _fold64(op: str, a: int, b: int, t: IntType) -> int:
    ua, ub = a & MASK64, b & MASK64
    sa, sb = wrap(ua, LLONG), wrap(ub, LLONG)
    if op in ("<", ">", "<=", ">=", "==", "!="):
        x, y = (sa, sb) if t.signed else (ua, ub)
        return int({"<": x < y, ">": x > y, "<=": x <= y, ">=": x >= y, "==": x == y, "!=": x != y}[op])
    if op in ("/", "%"):
        if t.signed:
            q, r = (-1 if sa >= 0 else 1, sa) if sb == 0 else (abs(sa) // abs(sb), abs(sa) % abs(sb))
            if sb != 0:
                q = -q if (sa < 0) != (sb < 0) else q
                r = -r if sa < 0 else r
        else:
            q, r = (MASK64, ua) if ub == 0 else (ua // ub, ua % ub)
        return wrap(q if op == "/" else r, t)
    if op == "<<":
        return wrap(ua << (ub & 63), t)
    if op == ">>":
        return wrap((sa if t.signed else ua) >> (ub & 63), t)
    r = {"+": ua + ub, "-": ua - ub, "*": ua * ub, "&": ua & ub, "|": ua | ub, "^": ua ^ ub}.get(op)
    if r is None:
        return int(bool(ua) and bool(ub)) if op == "&&" else int(bool(ua) or bool(ub))
    return wrap(r, t)
