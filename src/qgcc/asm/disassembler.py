"""Program -> qsass text (the inverse of the assembler).

Round-trip property: for every valid Program p (see `check_program`),
`assemble(disassemble(p))` has the same code (encode() words), kernels
(names, entry, end, params, shared_words, regs) and Instr.line values.

Branch targets become labels `L<pc>`, where pc is the absolute instruction
index in Program.code: the same numbering as Kernel.entry, the branch
immediate and the PC column of qgrun traces.  An instruction whose encoding
the regular syntax cannot express (non-zero unused fields, a branch leaving
its kernel, an LDC slot out of range) is written as `.word 0x...` with its
decoded form in a comment, so the round trip is exact for every valid program.
"""

from __future__ import annotations

import json

from ..isa import FORMATS, AtomOp, Fmt, Instr, Op, SReg, encode, xlane_name
from ..spec import SPEC
from ..program import ELEM_DTYPES, PRINTF_NAME, Program, StructLayout
from .assembler import IDENT_RE, MAX_LINE, PARAM_TYPES, RESERVED_PARAM_NAMES, invalid_fields



def check_program(p: Program) -> str | None:
    """Why `p` is not a well-formed program (as the assembler would produce), or None.

    Well-formed: kernels tile the code in order (first entry 0, each end the next
    entry, last end len(code)); names are identifiers and unique; parameters are
    valid; every instruction encodes and decodes to an executable instruction;
    lines are None or non-negative ints; capacities of SPEC are respected.
    """
    if len(p.code) > SPEC.max_instrs:
        return f"{len(p.code)} instructions exceed the machine's {SPEC.max_instrs}"
    base = 0
    for c in p.constants:
        if not isinstance(c.name, str) or not IDENT_RE.match(c.name) or c.ctype not in ELEM_DTYPES:
            return f"constant {c.name!r} is malformed"
        if c.base != base or len(c.dims) > 2 or any(type(d) is not int or d < 1 for d in c.dims) \
                or len(c.init) != c.words or any(type(v) is not int or not 0 <= v <= 0xFFFFFFFF for v in c.init):
            return (f"constant '{c.name}' is malformed (constants lie from cell 0 in order, one cell per element, "
                    f"two for a 64-bit one)")
        base += c.words
    if base > SPEC.global_words:
        return f"constants need {base} cells; global memory has {SPEC.global_words}"
    pos = 0
    names: set[str] = set()
    for k in p.kernels:
        if not isinstance(k.name, str) or not IDENT_RE.match(k.name):
            return f"kernel name {k.name!r} is not an identifier"
        if k.name in names:
            return f"duplicate kernel '{k.name}'"
        names.add(k.name)
        if type(k.entry) is not int or type(k.end) is not int or k.entry != pos or k.end < k.entry:
            return (f"kernel '{k.name}' spans instructions [{k.entry}, {k.end}); kernels must tile the "
                    f"code in order (expected entry {pos})")
        pos = k.end
        if type(k.shared_words) is not int or not 0 <= k.shared_words <= SPEC.shared_words:
            return f"kernel '{k.name}' has shared_words={k.shared_words!r} (0..{SPEC.shared_words})"
        if type(k.local_words) is not int or not 0 <= k.local_words <= SPEC.global_words:
            return f"kernel '{k.name}' has local_words={k.local_words!r} (0..{SPEC.global_words})"
        if type(k.regs) is not int or not 0 <= k.regs <= SPEC.num_regs:
            return f"kernel '{k.name}' has regs={k.regs!r} (0..{SPEC.num_regs})"
        if sum(prm.words for prm in k.params) > SPEC.max_params:
            return f"kernel '{k.name}' has {len(k.params)} parameters (at most {SPEC.max_params} words)"
        pnames: set[str] = set()
        for prm in k.params:
            if not isinstance(prm.name, str) or not IDENT_RE.match(prm.name) or prm.name in RESERVED_PARAM_NAMES:
                return f"kernel '{k.name}' has a parameter named {prm.name!r}"
            if prm.name in pnames:
                return f"kernel '{k.name}' has a duplicate parameter '{prm.name}'"
            pnames.add(prm.name)
            problem = _param_type_problem(prm)
            if problem:
                return f"parameter '{prm.name}' {problem}"
            if not isinstance(prm.pointer, bool) or not isinstance(prm.const, bool):
                return f"parameter '{prm.name}' has non-boolean pointer/const flags"
    if pos != len(p.code):
        return f"instructions {pos}..{len(p.code) - 1} belong to no kernel"
    try:
        struct_layouts(p)
    except ValueError as e:
        return str(e)
    for pc, ins in enumerate(p.code):
        if not isinstance(ins, Instr) or not isinstance(ins.op, Op):
            return f"instruction {pc} is not an Instr"
        if any(type(getattr(ins, f)) is not int for f in ("rd", "rs1", "rs2", "imm", "mod")) \
                or ins.use_imm not in (0, 1):
            return f"instruction {pc} has a field of the wrong type"
        try:
            encode(ins)
        except ValueError as e:
            return f"instruction {pc} does not encode: {e}"
        problem = invalid_fields(ins)
        if problem:
            return f"instruction {pc}: {problem}"
        if ins.line is not None and (type(ins.line) is not int or not 0 <= ins.line <= MAX_LINE):
            return f"instruction {pc} has line {ins.line!r} (0..{MAX_LINE} or None)"
    return None


def _param_type_problem(prm) -> str | None:
    """Why a parameter's type cannot be written to a .qg or .qsass, or None.

    A pointer to a struct (or a CUDA vector type such as float4) has ctype "struct" and
    carries its layout: the launcher needs the cells to lay out a structured buffer."""
    if prm.ctype == "struct":
        st = prm.struct
        if not isinstance(prm.pointer, bool) or not isinstance(st, StructLayout):
            return "has type 'struct' without a struct layout"
        if not isinstance(st.name, str) or not IDENT_RE.match(st.name) or st.name in PARAM_TYPES:
            return f"points to a struct named {st.name!r}"
        if not st.cells or not all(isinstance(c, tuple) and len(c) == 2 and isinstance(c[0], str) and c[0]
                                   and c[1] in ELEM_DTYPES for c in st.cells):
            return f"points to struct '{st.name}' with malformed cells"
        return None
    if prm.ctype not in ELEM_DTYPES:
        return f"has unknown type {prm.ctype!r}"
    if prm.struct is not None:
        return f"has type {prm.ctype!r} and a struct layout"
    return None


def struct_layouts(p: Program) -> list[StructLayout]:
    """The distinct struct layouts that the program's parameters point to, in first-use order;
    raises ValueError if two layouts share a name (a .qsass names a struct once)."""
    seen: dict[str, StructLayout] = {}
    for k in p.kernels:
        for prm in k.params:
            if prm.struct is not None:
                old = seen.setdefault(prm.struct.name, prm.struct)
                if old != prm.struct:
                    raise ValueError(f"two different structs are named '{prm.struct.name}'")
    return list(seen.values())


def fmt_num(v: int) -> str:
    """Decimal for small magnitudes, hex beyond 65535 (sign kept)."""
    if -65535 <= v <= 65535:
        return str(v)
    return f"-{-v:#x}" if v < 0 else f"{v:#x}"


def fmt_imm(v: int) -> str:
    """An ALU/MOV immediate: decimal when small, else the u32 pattern in hex."""
    if -65535 <= v <= 65535:
        return f"#{v}"
    return f"#{v & 0xFFFFFFFF:#x}"


def fmt_mem(base: int, off: int) -> str:
    if off == 0:
        return f"[r{base}]"
    return f"[r{base}-{fmt_num(-off)}]" if off < 0 else f"[r{base}+{fmt_num(off)}]"


def canonical(ins: Instr) -> Instr:
    """The instruction with every field its syntax does not show cleared."""
    f = FORMATS[ins.op]
    op = ins.op
    if f is Fmt.NONE:
        return Instr(op)
    if f in (Fmt.ALU, Fmt.XLANE):
        mod = ins.mod if f is Fmt.XLANE else 0
        if ins.use_imm:
            return Instr(op, rd=ins.rd, rs1=ins.rs1, imm=ins.imm, use_imm=True, mod=mod)
        return Instr(op, rd=ins.rd, rs1=ins.rs1, rs2=ins.rs2, mod=mod)
    if f is Fmt.UN:
        return Instr(op, rd=ins.rd, rs1=ins.rs1)
    if f is Fmt.MOV:
        if ins.use_imm:
            return Instr(op, rd=ins.rd, imm=ins.imm, use_imm=True)
        return Instr(op, rd=ins.rd, rs1=ins.rs1)
    if f is Fmt.S2R:
        return Instr(op, rd=ins.rd, mod=ins.mod)
    if f is Fmt.LDC:
        return Instr(op, rd=ins.rd, imm=ins.imm)
    if f is Fmt.LD:
        return Instr(op, rd=ins.rd, rs1=ins.rs1, imm=ins.imm)
    if f is Fmt.ST:
        return Instr(op, rs1=ins.rs1, rs2=ins.rs2, imm=ins.imm)
    if f is Fmt.ATOM:
        return Instr(op, rd=ins.rd, rs1=ins.rs1, rs2=ins.rs2, imm=ins.imm, mod=ins.mod)
    if f is Fmt.BRA:
        return Instr(op, imm=ins.imm)
    if f is Fmt.JR:
        return Instr(op, rs1=ins.rs1)
    return Instr(op, rs1=ins.rs1, imm=ins.imm)  # BRC


def format_instr(ins: Instr, label: str | None = None) -> tuple[str, str]:
    """(mnemonic, operands) of an instruction in regular syntax; branches need `label`."""
    f = FORMATS[ins.op]
    name = ins.op.name
    if f is Fmt.NONE:
        return name, ""
    if f in (Fmt.ALU, Fmt.XLANE):
        src = fmt_imm(ins.imm) if ins.use_imm else f"r{ins.rs2}"
        if f is Fmt.XLANE:
            name = xlane_name(ins.op, ins.mod)
        return name, f"r{ins.rd}, r{ins.rs1}, {src}"
    if f is Fmt.UN:
        return name, f"r{ins.rd}, r{ins.rs1}"
    if f is Fmt.MOV:
        src = fmt_imm(ins.imm) if ins.use_imm else f"r{ins.rs1}"
        return name, f"r{ins.rd}, {src}"
    if f is Fmt.S2R:
        return name, f"r{ins.rd}, {SReg(ins.mod).asm}"
    if f is Fmt.LDC:
        return name, f"r{ins.rd}, c[{ins.imm}]"
    if f is Fmt.LD:
        return name, f"r{ins.rd}, {fmt_mem(ins.rs1, ins.imm)}"
    if f is Fmt.ST:
        return name, f"{fmt_mem(ins.rs1, ins.imm)}, r{ins.rs2}"
    if f is Fmt.ATOM:
        return f"ATOM.{AtomOp(ins.mod).name}", f"r{ins.rd}, {fmt_mem(ins.rs1, ins.imm)}, r{ins.rs2}"
    if f is Fmt.JR:
        return name, f"r{ins.rs1}"
    target = label if label is not None else f"L{ins.imm}"
    if f is Fmt.BRA:
        return name, target
    return name, f"r{ins.rs1}, {target}"


def instr_text(ins: Instr) -> str:
    """One-line disassembly of a single instruction, for traces and messages (branch targets as L<pc>)."""
    try:
        if invalid_fields(ins):
            raise ValueError
        mnem, ops = format_instr(ins)
    except (ValueError, KeyError):
        return f".word {encode(ins):#018x}"
    return f"{mnem} {ops}".rstrip()


def _param_words(k) -> list[str]:
    """What each parameter word holds: a parameter's name (a 64-bit one's second word: 'NAME.hi')."""
    out: list[str] = []
    for prm in k.params:
        if prm.struct is not None and not prm.pointer:  # by value: a word a cell
            for path, ct in prm.struct.cells:
                out.append(f"{prm.name}.{path}")
                if ct in ("llong", "ullong"):
                    out.append(f"{prm.name}.{path}.hi")
            continue
        out.append(prm.name)
        if getattr(prm, "words", 1) == 2:
            out.append(prm.name + ".hi")
    return out


def _param_decl(prm) -> str:
    ty = f"struct {prm.struct.name}" if prm.struct is not None else prm.ctype
    if getattr(prm, "texture", 0):  # a texture: its handle, two words (docs/qsass.md)
        return f".param texture{prm.texture} {ty} {prm.name}"
    return f".param {'const ' if prm.const else ''}{ty}{'*' if prm.pointer else ''} {prm.name}"


def _struct_decl(st: StructLayout) -> str:
    return f".struct {st.name} " + ", ".join(f"{json.dumps(path)} {ct}" for path, ct in st.cells)


def disassemble(p: Program, *, header: str | None = None, pc_comments: bool = True) -> str:
    """qsass text for a well-formed program; raises ValueError naming the defect otherwise."""
    problem = check_program(p)
    if problem:
        raise ValueError(f"cannot disassemble: {problem}")
    out: list[str] = []
    if header:
        out.extend(f"// {h}" if h else "//" for h in header.split("\n"))
    if isinstance(p.source_name, str):
        out.append(f".source {json.dumps(p.source_name)}")
    for c in p.constants:
        ty = "".join(f"[{d}]" for d in c.dims)
        if c.name == PRINTF_NAME and not any(c.init):  # the printf buffer: zeros (no list)
            out.append(f".const {c.ctype} {c.name}{ty}")
            continue
        out.append(f".const {c.ctype} {c.name}{ty} " + ", ".join(f"{v:#x}" for v in c.init))
    out.extend(_struct_decl(st) for st in struct_layouts(p))
    for f in getattr(p, "printf", ()):  # device printf's formats and asserts (docs/qsass.md)
        out.append(f".printf {f.line} " + " ".join(json.dumps(x) for x in (f.kinds, f.text, *f.literals)))
    for a in getattr(p, "asserts", ()):
        out.append(f".assert {a.line} " + " ".join(json.dumps(x) for x in (a.file, a.function, a.cond,
                                                                           *([a.message] if a.message else []))))
    for k in p.kernels:
        if out:
            out.append("")
        out.append(f".kernel {k.name}")
        out.extend(_param_decl(prm) for prm in k.params)
        out.append(f".shared {k.shared_words}")
        if k.local_words:
            out.append(f".local {k.local_words}")
        out.append(f".regs {k.regs}")
        code = p.code[k.entry:k.end]
        targets = set()
        irregular: list[str | None] = []  # why an instruction needs .word, or None
        for ins in code:
            why = None
            if encode(canonical(ins)) != encode(ins):
                why = "unused fields set"
            elif ins.op is Op.LDC and not 0 <= ins.imm < SPEC.max_params:
                why = "parameter slot out of range"
            elif ins.op in (Op.BRA, Op.BRZ, Op.BRNZ):
                if k.entry <= ins.imm <= k.end:
                    targets.add(ins.imm)
                else:
                    why = "branch target outside the kernel"
            irregular.append(why)
        loc: int | None = None
        for i, ins in enumerate(code):
            pc = k.entry + i
            if pc in targets:
                out.append(f"L{pc}:")
            if ins.line != loc:
                if ins.line is None:
                    out.append("    .loc none")
                elif ins.line == 0:
                    out.append("    .loc 0    // (soft-float library)")
                else:
                    text = p.source_line(ins.line)
                    out.append(f"    .loc {ins.line}" + (f"    // {text}" if text else ""))
                loc = ins.line
            if irregular[i] is None:
                mnem, ops = format_instr(ins)
                body = f"{mnem:<8} {ops}".rstrip()
                note = ""
                if ins.op is Op.LDC and ins.imm < len(words := _param_words(k)):
                    note = f"  {words[ins.imm]}"
                elif ins.op is Op.MOV and ins.use_imm and ins.imm == pc + 2 and i + 1 < len(code) \
                        and code[i + 1].op is Op.BRA:
                    note = "  return address (the BRA calls a soft-float routine)"
            else:
                body = f".word    {encode(ins):#018x}"
                mnem, ops = format_instr(ins)
                note = f"  {mnem} {ops} ({irregular[i]})".replace("  (", " (")
            if pc_comments or note:
                out.append(f"    {body:<36}// {pc}{note}" if pc_comments else f"    {body:<36}//{note}")
            else:
                out.append(f"    {body}")
        if k.end in targets:
            out.append(f"L{k.end}:")
        out.append(".end")
    return "\n".join(out) + "\n"
