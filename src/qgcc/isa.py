"""The qsass instruction set: opcodes, operand formats and the 64-bit encoding.

The set is deliberately small and orthogonal (one ALU shape, one load, one
store, one atomic, three branches, an indirect jump, and two lane-crossing instructions, SHFL and
VOTE) with fixed-width fields, because the linker
turns each field into a few residual-stream bits of the compiled network.  C
operators with no instruction (division, remainder, atomicSub, ...) are
lowered by the compiler to sequences of these.

Encoding of one instruction (uint64, bit 63 is the most significant):

    63..58 opcode   57..53 rd   52..48 rs1   47..43 rs2   42 use_imm
    41..38 mod      37..32 zero 31..0  imm (two's complement)
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from .spec import SPEC

MASK32 = 0xFFFFFFFF
WARP = SPEC.warp_size  # lanes per warp: SHFL and VOTE cross them


class Fmt(enum.Enum):
    """Operand shape of an opcode, which fixes its assembly syntax."""

    NONE = "none"  # NOP, BAR, EXIT
    ALU = "alu"  # OP rd, rs1, rs2|#imm
    MOV = "mov"  # MOV rd, rs1|#imm
    S2R = "s2r"  # S2R rd, %sreg
    LDC = "ldc"  # LDC rd, c[imm]
    LD = "ld"  # LD rd, [rs1+imm]
    ST = "st"  # ST [rs1+imm], rs2
    ATOM = "atom"  # ATOM.op rd, [rs1+imm], rs2
    BRA = "bra"  # BRA target
    BRC = "brc"  # BRZ/BRNZ rs1, target
    JR = "jr"  # JR rs1  (jump to the address in rs1, lane by lane)
    XLANE = "xlane"  # SHFL.mode[.Wn] / VOTE.mode rd, rs1, rs2|#imm  (lanes read each other's rs1)
    UN = "un"  # OP rd, rs1  (float conversions)


class Op(enum.IntEnum):
    NOP = 0
    MOV = 1
    ADD = 2
    SUB = 3
    MUL = 4
    AND = 5
    OR = 6
    XOR = 7
    SHL = 8
    SHR = 9
    SRA = 10
    SLT = 11
    SLTU = 12
    SEQ = 13
    SNE = 14
    S2R = 15
    LDC = 16
    LD = 17
    ST = 18
    ATOM = 19
    BRA = 20
    BRZ = 21
    BRNZ = 22
    BAR = 23
    EXIT = 24
    JR = 25
    SHFL = 26
    VOTE = 27
    # Float32 instructions (qgcc.fpu holds their exact semantics), 40 onwards.
    FADD = 40
    FSUB = 41
    FMUL = 42
    FFMA = 43  # rd <- rs1 * rs2 + rd, one rounding (reads rd, like ATOM.CAS)
    FMIN = 44
    FMAX = 45
    FSLT = 46
    FSLE = 47
    FSGT = 48
    FSGE = 49
    FSEQ = 50
    FSNE = 51  # unordered: 1 when an operand is NaN
    F2I = 52
    F2U = 53
    I2F = 54
    U2F = 55


FORMATS: dict[Op, Fmt] = {
    Op.NOP: Fmt.NONE,
    Op.MOV: Fmt.MOV,
    **{op: Fmt.ALU for op in (Op.ADD, Op.SUB, Op.MUL, Op.AND, Op.OR, Op.XOR, Op.SHL, Op.SHR, Op.SRA,
                              Op.SLT, Op.SLTU, Op.SEQ, Op.SNE)},
    Op.S2R: Fmt.S2R,
    Op.LDC: Fmt.LDC,
    Op.LD: Fmt.LD,
    Op.ST: Fmt.ST,
    Op.ATOM: Fmt.ATOM,
    Op.BRA: Fmt.BRA,
    Op.BRZ: Fmt.BRC,
    Op.BRNZ: Fmt.BRC,
    Op.BAR: Fmt.NONE,
    Op.EXIT: Fmt.NONE,
    Op.JR: Fmt.JR,
    Op.SHFL: Fmt.XLANE,
    Op.VOTE: Fmt.XLANE,
    **{op: Fmt.ALU for op in (Op.FADD, Op.FSUB, Op.FMUL, Op.FFMA, Op.FMIN, Op.FMAX, Op.FSLT, Op.FSLE, Op.FSGT,
                              Op.FSGE, Op.FSEQ, Op.FSNE)},
    **{op: Fmt.UN for op in (Op.F2I, Op.F2U, Op.I2F, Op.U2F)},
}
FLOAT_OPS = frozenset(op for op in Op if op >= Op.FADD)
# Float instructions the network runs in the micro-stepped float unit (one active lane per micro-step,
# like MUL); the compares and FMIN/FMAX run on every lane at once in the ALU.
FLOAT_MICRO_OPS = frozenset({Op.FADD, Op.FSUB, Op.FMUL, Op.FFMA, Op.F2I, Op.F2U, Op.I2F, Op.U2F})
# Instructions the network runs one lane per step (micro-steps): memory, MUL and the float unit's.
MICRO_STEPPED = frozenset({Op.LD, Op.ST, Op.ATOM, Op.MUL}) | FLOAT_MICRO_OPS

ALU_OPS = frozenset(op for op, f in FORMATS.items() if f is Fmt.ALU)
BRANCH_OPS = frozenset({Op.BRA, Op.BRZ, Op.BRNZ})
MEMORY_OPS = frozenset({Op.LD, Op.ST, Op.ATOM})
# Instructions that write rd.
WRITES_RD = frozenset(ALU_OPS | FLOAT_OPS | {Op.MOV, Op.S2R, Op.LDC, Op.LD, Op.ATOM, Op.SHFL, Op.VOTE})


class SReg(enum.IntEnum):
    """Special registers readable with S2R (the `mod` field)."""

    TID_X = 0
    TID_Y = 1
    TID_Z = 2
    NTID_X = 3
    NTID_Y = 4
    NTID_Z = 5
    CTAID_X = 6
    CTAID_Y = 7
    CTAID_Z = 8
    NCTAID_X = 9
    NCTAID_Y = 10
    NCTAID_Z = 11
    LANEID = 12
    WARPID = 13
    CLOCK = 14  # warp instructions completed so far in the launch, mod 2^32


    @property
    def asm(self) -> str:
        base, _, axis = self.name.lower().partition("_")
        return f"%{base}.{axis}" if axis else f"%{base}"

    @classmethod
    def from_asm(cls, text: str) -> "SReg":
        for s in cls:
            if s.asm == text:
                return s
        raise KeyError(text)


class AtomOp(enum.IntEnum):
    """Read-modify-write operations of ATOM (the `mod` field).

    CAS is the one three-operand atomic: rd holds the new value on entry
    (rd is read, then overwritten with the old memory value), rs2 the value
    compared against.  Keeping the third operand in rd lets every instruction
    read at most three registers: rs1, rs2 and rd.
    """

    ADD = 0
    MIN = 1  # signed
    MAX = 2  # signed
    MINU = 3
    MAXU = 4
    EXCH = 5
    CAS = 6
    AND = 7
    OR = 8
    XOR = 9


class ShflMode(enum.IntEnum):
    """Source-lane rule of SHFL (bits 1..0 of `mod`; bits 3..2 hold log2 of the width)."""

    IDX = 0
    UP = 1
    DOWN = 2
    XOR = 3


class VoteMode(enum.IntEnum):
    """What VOTE computes over the active lanes named in its mask operand (the `mod` field)."""

    BALLOT = 0
    ANY = 1
    ALL = 2
    MATCH = 3  # __match_any_sync: the lanes whose rs1 equals this lane's


def xlane_valid(op: Op, mod: int) -> bool:
    """Whether `mod` names a SHFL mode and width (1, 2 or 4 lanes) or a VOTE mode."""
    return (mod >> 2) <= 2 if op is Op.SHFL else mod in VoteMode._value2member_map_


def xlane_name(op: Op, mod: int) -> str:
    """The mnemonic of a SHFL or VOTE: SHFL.DOWN, SHFL.XOR.W2, VOTE.BALLOT, ..."""
    if op is Op.VOTE:
        return f"VOTE.{VoteMode(mod).name}"
    w = 1 << (mod >> 2)
    return f"SHFL.{ShflMode(mod & 3).name}" + ("" if w == WARP else f".W{w}")


def shfl_source(mod: int, lane: int, b: int) -> tuple[int, bool]:
    """(source lane, in range) of SHFL for `lane` with operand b (PTX's shfl rules, warp of 4).

    b is taken mod the warp size (as CUDA takes it mod 32).  The width w splits the warp
    into segments of w lanes; a lane whose source is out of range keeps its own value.
    """
    mode, w = ShflMode(mod & 3), 1 << (mod >> 2)
    b &= WARP - 1
    base = lane & ~(w - 1)
    top = base + w - 1
    if mode is ShflMode.IDX:
        return base | (b & (w - 1)), True
    if mode is ShflMode.UP:
        return lane - b, lane - b >= base
    if mode is ShflMode.DOWN:
        return lane + b, lane + b <= top
    return lane ^ b, (lane ^ b) <= top


def xlane(op: Op, mod: int, rs1: list[int], src2: list[int], active: int) -> list[int | None]:
    """Results of SHFL/VOTE for the four lanes (None for inactive lanes).

    rs1 and src2 are every lane's operands (u32), `active` the active mask.  A lane reads
    another lane only if that lane is active; otherwise (an inactive or out-of-range
    source) it gets its own rs1.  A VOTE counts the active lanes named in its own
    mask operand (src2's low 4 bits).
    """
    out: list[int | None] = []
    for l in range(WARP):
        if not (active >> l) & 1:
            out.append(None)
            continue
        if op is Op.SHFL:
            j, ok = shfl_source(mod, l, src2[l])
            out.append(rs1[j] & MASK32 if ok and (active >> j) & 1 else rs1[l] & MASK32)
            continue
        lanes = [j for j in range(WARP) if (active >> j) & 1 and (src2[l] >> j) & 1]
        mode = VoteMode(mod)
        if mode is VoteMode.BALLOT:
            out.append(sum(1 << j for j in lanes if rs1[j] & MASK32))
        elif mode is VoteMode.ANY:
            out.append(int(any(rs1[j] & MASK32 for j in lanes)))
        elif mode is VoteMode.ALL:
            out.append(int(all(rs1[j] & MASK32 for j in lanes)))
        else:
            out.append(sum(1 << j for j in lanes if (rs1[j] ^ rs1[l]) & MASK32 == 0))
    return out


@dataclass
class Instr:
    op: Op
    rd: int = 0
    rs1: int = 0
    rs2: int = 0
    imm: int = 0  # stored as a signed 32-bit value
    use_imm: bool = False
    mod: int = 0
    # Provenance, not encoded: the source line the compiler emitted this for.
    line: int | None = field(default=None, compare=False)

    @property
    def fmt(self) -> Fmt:
        return FORMATS[self.op]

    def reads(self) -> tuple[int, ...]:
        """Registers read, in operand order (used by liveness and the tracer)."""
        return registers_read(self)

# The formats and opcodes `registers_read` tests, as module names: it runs for every instruction
# in every liveness pass of the register allocator, and an enum member's lookup through its
# class costs several times a global's.
_F_ALU, _F_XLANE, _F_UN, _F_MOV, _F_LD, _F_ST, _F_ATOM, _F_BRC, _F_JR = (
    Fmt.ALU, Fmt.XLANE, Fmt.UN, Fmt.MOV, Fmt.LD, Fmt.ST, Fmt.ATOM, Fmt.BRC, Fmt.JR)
_OP_FFMA = Op.FFMA
_ATOM_CAS = AtomOp.CAS


def registers_read(ins) -> tuple[int, ...]:
    """Registers an instruction-shaped object (op, rs1, rs2, rd, use_imm, mod) reads, in operand order."""
    f = FORMATS[ins.op]
    if f is _F_ALU or f is _F_XLANE:
        regs = (ins.rs1,) if ins.use_imm else (ins.rs1, ins.rs2)
        return regs + (ins.rd,) if ins.op is _OP_FFMA else regs
    if f is _F_UN:
        return (ins.rs1,)
    if f is _F_MOV:
        return () if ins.use_imm else (ins.rs1,)
    if f is _F_LD:
        return (ins.rs1,)
    if f is _F_ST:
        return (ins.rs1, ins.rs2)
    if f is _F_ATOM:
        return (ins.rs1, ins.rs2, ins.rd) if ins.mod == _ATOM_CAS else (ins.rs1, ins.rs2)
    if f is _F_BRC or f is _F_JR:
        return (ins.rs1,)
    return ()


def to_s32(v: int) -> int:
    v &= MASK32
    return v - (1 << 32) if v & 0x80000000 else v


def to_u32(v: int) -> int:
    return v & MASK32


def encode(ins: Instr) -> int:
    for name, width in (("rd", 5), ("rs1", 5), ("rs2", 5), ("mod", 4)):
        val = getattr(ins, name)
        if not 0 <= val < (1 << width):
            raise ValueError(f"{name}={val} does not fit in {width} bits")
    if not -(1 << 31) <= ins.imm < (1 << 32):
        raise ValueError(f"immediate {ins.imm} does not fit in 32 bits")
    return (
        (int(ins.op) << 58)
        | (ins.rd << 53)
        | (ins.rs1 << 48)
        | (ins.rs2 << 43)
        | (int(ins.use_imm) << 42)
        | (ins.mod << 38)
        | to_u32(ins.imm)
    )


def decode(word: int) -> Instr:
    word &= (1 << 64) - 1
    opcode = word >> 58
    try:
        op = Op(opcode)
    except ValueError:
        raise ValueError(f"unknown opcode {opcode}") from None
    if (word >> 32) & 0x3F:
        raise ValueError("reserved bits 37..32 are not zero")
    return Instr(
        op=op,
        rd=(word >> 53) & 31,
        rs1=(word >> 48) & 31,
        rs2=(word >> 43) & 31,
        use_imm=bool((word >> 42) & 1),
        mod=(word >> 38) & 15,
        imm=to_s32(word & MASK32),
    )


def atom_apply(mod: AtomOp, old: int, operand: int, cas_new: int = 0) -> int:
    """New memory value of an atomic; `old` and operands are u32 patterns."""
    old &= MASK32
    operand &= MASK32
    if mod is AtomOp.ADD:
        return (old + operand) & MASK32
    if mod is AtomOp.MIN:
        return to_u32(min(to_s32(old), to_s32(operand)))
    if mod is AtomOp.MAX:
        return to_u32(max(to_s32(old), to_s32(operand)))
    if mod is AtomOp.MINU:
        return min(old, operand)
    if mod is AtomOp.MAXU:
        return max(old, operand)
    if mod is AtomOp.EXCH:
        return operand
    if mod is AtomOp.CAS:
        return cas_new & MASK32 if old == operand else old
    if mod is AtomOp.AND:
        return old & operand
    if mod is AtomOp.OR:
        return old | operand
    if mod is AtomOp.XOR:
        return old ^ operand
    raise ValueError(f"unknown atomic op {mod}")
