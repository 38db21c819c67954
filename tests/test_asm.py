"""The qsass assembler and disassembler: syntax, errors, and the round-trip property."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from qgcc.asm import assemble, check_program, disassemble, instr_text
from qgcc.diagnostics import CompileError
from qgcc.isa import FORMATS, AtomOp, Fmt, Instr, Op, SReg, encode, xlane_valid
from qgcc.spec import SPEC
from qgcc.program import ELEM_DTYPES, Kernel, Param, Program

BRIEF_EXAMPLE = """\
// comment
.kernel vadd
.param int* a          // pointers: int* unsigned* bool* char* uchar*, optional leading 'const'
.param int n
.shared 16             // shared cells used
.regs 6
    .loc 3             // following instructions come from source line 3
    S2R   r0, %tid.x
    LDC   r1, c[3]
    SLT   r2, r0, r1
    BRZ   r2, L7
    LD    r3, [r4+2]
    ST    [r4-1], r3
    ATOM.ADD r5, [r4], r3      // ATOM.{ADD,MIN,MAX,MINU,MAXU,EXCH,CAS,AND,OR,XOR}
    ADD   r1, r1, #-5          // immediates: #decimal or #0xhex
    MOV   r1, #7
L7:
    EXIT
.end
"""


def words(p: Program) -> list[int]:
    return [encode(i) for i in p.code]


def asm_err(text: str) -> CompileError:
    with pytest.raises(CompileError) as ei:
        assemble(text, "t.qsass")
    return ei.value


def k(body: str, header: str = "") -> str:
    """Wrap instruction lines in a one-kernel file."""
    return f".kernel k\n{header}{body}\n.end\n"


# -- syntax ------------------------------------------------------------------------------

def test_brief_example():
    p = assemble(BRIEF_EXAMPLE, "ex.qsass")
    (kern,) = p.kernels
    assert (kern.name, kern.entry, kern.end, kern.shared_words, kern.regs) == ("vadd", 0, 10, 16, 6)
    assert kern.params == [Param("a", "int", True, False), Param("n", "int", False, False)]
    assert p.code[0] == Instr(Op.S2R, rd=0, mod=SReg.TID_X)
    assert p.code[1] == Instr(Op.LDC, rd=1, imm=3)
    assert p.code[2] == Instr(Op.SLT, rd=2, rs1=0, rs2=1)
    assert p.code[3] == Instr(Op.BRZ, rs1=2, imm=9)  # absolute pc of L7
    assert p.code[4] == Instr(Op.LD, rd=3, rs1=4, imm=2)
    assert p.code[5] == Instr(Op.ST, rs1=4, rs2=3, imm=-1)
    assert p.code[6] == Instr(Op.ATOM, rd=5, rs1=4, rs2=3, mod=AtomOp.ADD)
    assert p.code[7] == Instr(Op.ADD, rd=1, rs1=1, imm=-5, use_imm=True)
    assert p.code[8] == Instr(Op.MOV, rd=1, imm=7, use_imm=True)
    assert p.code[9] == Instr(Op.EXIT)
    assert [i.line for i in p.code] == [3] * 10
    assert p.source_line(3) == "following instructions come from source line 3"
    assert p.source_name == "ex.qsass"


@pytest.mark.parametrize("text,expected", [
    ("NOP", Instr(Op.NOP)),
    ("bar", Instr(Op.BAR)),
    ("Exit", Instr(Op.EXIT)),
    ("MOV r31, r30", Instr(Op.MOV, rd=31, rs1=30)),
    ("MOV r1, #0x10", Instr(Op.MOV, rd=1, imm=16, use_imm=True)),
    ("MOV r1, #-0x10", Instr(Op.MOV, rd=1, imm=-16, use_imm=True)),
    ("MOV r1, #0xFFFFFFFF", Instr(Op.MOV, rd=1, imm=-1, use_imm=True)),
    ("MOV r1, #-2147483648", Instr(Op.MOV, rd=1, imm=-(1 << 31), use_imm=True)),
    ("MOV r1, #4294967295", Instr(Op.MOV, rd=1, imm=-1, use_imm=True)),
    ("SRA R1, R2, #+3", Instr(Op.SRA, rd=1, rs1=2, imm=3, use_imm=True)),
    ("SLTU r1,r2,r3", Instr(Op.SLTU, rd=1, rs1=2, rs2=3)),
    ("S2R r1, %ctaid.z", Instr(Op.S2R, rd=1, mod=SReg.CTAID_Z)),
    ("S2R r1, %laneid", Instr(Op.S2R, rd=1, mod=SReg.LANEID)),
    ("S2R r1, %WARPID", Instr(Op.S2R, rd=1, mod=SReg.WARPID)),
    ("LDC r2, c[0x3f]", Instr(Op.LDC, rd=2, imm=63)),
    ("LD r1, [r2]", Instr(Op.LD, rd=1, rs1=2)),
    ("LD r1, [ r2 + #0x10000 ]", Instr(Op.LD, rd=1, rs1=2, imm=0x10000)),
    ("ST [r2-0x80000000], r3", Instr(Op.ST, rs1=2, rs2=3, imm=-(1 << 31))),
    ("ATOM.cas r1, [r2+4], r3", Instr(Op.ATOM, rd=1, rs1=2, rs2=3, imm=4, mod=AtomOp.CAS)),
    ("ATOM.MAXU r1, [r2], r3", Instr(Op.ATOM, rd=1, rs1=2, rs2=3, mod=AtomOp.MAXU)),
    (".word 0x0420000000000007", Instr(Op.MOV, rd=1, imm=7)),  # MOV with use_imm clear and an imm
])
def test_single_instructions(text, expected):
    p = assemble(k(text))
    assert p.code == [expected]
    assert encode(p.code[0]) == encode(expected)


def test_documented_encoding_example():
    # docs/qsass.md section 5
    assert encode(assemble(k("ADD r1, r1, #-5")).code[0]) == 0x0821_0400_FFFF_FFFB


def test_every_atomic_mnemonic():
    text = "\n".join(f"ATOM.{a.name} r1, [r2], r3" for a in AtomOp)
    p = assemble(k(text))
    assert [i.mod for i in p.code] == [int(a) for a in AtomOp]


def test_every_special_register():
    p = assemble(k("\n".join(f"S2R r0, {s.asm}" for s in SReg)))
    assert [i.mod for i in p.code] == [int(s) for s in SReg]


def test_params_all_types_and_spellings():
    header = "".join(f".param {t} x{i}\n" for i, t in enumerate(
        ["int", "unsigned", "bool", "char", "uchar", "const int*", "unsigned *", "bool*",
         "const char *", "uchar*", "unsigned char*", "unsigned int", "const int"]))
    p = assemble(k("EXIT", header))
    got = [(q.ctype, q.pointer, q.const) for q in p.kernels[0].params]
    assert got == [("int", False, False), ("unsigned", False, False), ("bool", False, False),
                   ("char", False, False), ("uchar", False, False), ("int", True, True),
                   ("unsigned", True, False), ("bool", True, False), ("char", True, True),
                   ("uchar", True, False), ("uchar", True, False), ("unsigned", False, False),
                   ("int", False, True)]


def test_labels_several_kernels_and_scoping():
    text = """
.kernel one
loop: SUB r1, r1, #1
    BRNZ r1, loop
    BRA end
end:
.end
.kernel two
    NOP
loop:
    BRA loop
    EXIT
.end
"""
    p = assemble(text)
    assert [(q.name, q.entry, q.end) for q in p.kernels] == [("one", 0, 3), ("two", 3, 6)]
    assert p.code[1].imm == 0 and p.code[2].imm == 3  # `end` is one past the kernel's last instruction
    assert p.code[4].imm == 4


def test_regs_default_is_highest_register_plus_one():
    p = assemble(k("MOV r7, #1\nST [r9], r2\nEXIT"))
    assert p.kernels[0].regs == 10
    p = assemble(k("ATOM.CAS r12, [r1], r2"))  # CAS reads rd
    assert p.kernels[0].regs == 13
    assert assemble(k("EXIT")).kernels[0].regs == 0


def test_loc_none_and_source_directive():
    text = '.source "dir/kern el.cu"\n.kernel k\n.loc 4 // a = 1;\nNOP\n.loc none\nNOP\n.loc 0\nNOP\n.end\n'
    p = assemble(text, "x.qsass")
    assert [i.line for i in p.code] == [4, None, 0]
    assert p.source_name == "dir/kern el.cu"
    assert p.source_lines == ["", "", "", "a = 1;"]


def test_loc_resets_per_kernel():
    p = assemble(".kernel a\n.loc 5\nNOP\n.end\n.kernel b\nNOP\n.end\n")
    assert [i.line for i in p.code] == [5, None]


def test_empty_file_and_empty_kernel():
    assert assemble("").kernels == []
    p = assemble("// nothing\n\n")
    assert p.code == [] and p.kernels == []
    p = assemble(".kernel e\n.end")
    assert p.kernels[0].entry == p.kernels[0].end == 0


def test_crlf_and_tabs():
    p = assemble(".kernel k\r\n\tMOV\tr1,\t#2\r\n\tEXIT\r\n.end\r\n")
    assert len(p.code) == 2


# -- errors -----------------------------------------------------------------------------------

@pytest.mark.parametrize("text,line,col,msg", [
    (k("FOO r1"), 2, 1, "unknown mnemonic 'FOO'"),
    (k("  ATOM.SUB r1, [r2], r3"), 2, 3, "unknown atomic 'ATOM.SUB'"),
    (k("MOV r32, #1"), 2, 5, "bad register 'r32' (registers are r0..r31)"),
    (k("MOV r1, r99999999"), 2, 9, "bad register 'r99999999'"),
    (k("MOV x1, #1"), 2, 5, "expected a register (r0..r31), found 'x1'"),
    (k("MOV r1, #4294967296"), 2, 10, "immediate 4294967296 is out of range (-2147483648..4294967295)"),
    (k("MOV r1, #-2147483649"), 2, 10, "immediate -2147483649 is out of range"),
    (k("MOV r1, #" + "9" * 5000), 2, 10, "is out of range"),
    (k("MOV r1, #0x"), 2, 10, "malformed number '0x'"),
    (k("MOV r1, #12ab"), 2, 10, "malformed number '12ab'"),
    (k("MOV r1, 5"), 2, 9, "expected a register"),
    (k("MOV r1"), 2, 7, "expected ','"),
    (k("ADD r1, r2, r3, r4"), 2, 15, "unexpected ',' after the end of the statement"),
    (k("LD r1, r2"), 2, 8, "expected a memory operand '[rN+offset]', found 'r2'"),
    (k("LD r1, [r2+0x100000000]"), 2, 11, "offset 4294967296 is out of range"),
    (k("LD r1, [r2"), 2, 11, "expected ']'"),
    (k("LDC r1, c[64]"), 2, 11, "parameter index 64 is out of range (0..63)"),
    (k("LDC r1, d[1]"), 2, 9, "expected a parameter slot 'c[N]', found 'd'"),
    (k("S2R r1, %tid.w"), 2, 9, "unknown special register '%tid.w'"),
    (k("BRA nowhere"), 2, 5, "unknown label 'nowhere' in kernel 'k'"),
    (k("BRA #3"), 2, 5, "expected a label, found '#'"),
    (k("x: NOP\nx: NOP"), 3, 1, "duplicate label 'x' (first defined on line 2)"),
    (".kernel k\nNOP\n", 1, 1, "kernel 'k' has no .end"),
    ("NOP\n", 1, 1, "instruction outside a kernel (start one with '.kernel NAME')"),
    ("top: .kernel k\n", 1, 1, "label 'top' outside a kernel"),
    (".end\n", 1, 1, ".end outside a kernel"),
    (".param int n\n", 1, 1, ".param outside a kernel"),
    (".kernel a\n.kernel b\n.end\n", 2, 1, "missing .end of kernel 'a' (started on line 1)"),
    (".kernel a\n.end\n.kernel a\n.end\n", 3, 9, "duplicate kernel 'a' (first defined on line 1)"),
    (".kernel 9a\n.end\n", 1, 9, "expected a kernel name, found '9a'"),
    (k("NOP\n.param int n"), 3, 1, ".param must come before the kernel's first instruction"),
    (k("NOP", ".param half x\n"), 2, 8, "unknown parameter type 'half'"),
    (k("NOP", ".param int n\n.param char n\n"), 3, 13, "duplicate parameter 'n'"),
    (k("NOP", ".param int* const\n"), 2, 13, "expected a parameter name, found 'const'"),
    (k("NOP", f".shared {SPEC.shared_words + 1}\n"), 2, 9,
     f"a shared cell count {SPEC.shared_words + 1} is out of range (0..{SPEC.shared_words})"),
    (k("NOP", ".regs 33\n"), 2, 7, "a register count 33 is out of range (0..32)"),
    (k(".foo 1"), 2, 1, "unknown directive '.foo'"),
    (k("MOV r1, #1 ; x"), 2, 12, "unexpected character ';'"),
    (k("MOV r1, #1 \x00"), 2, 12, "unexpected character '\\x00'"),
    (k(".word 0xfc00000000000000"), 2, 7, "invalid instruction word 0xfc00000000000000: unknown opcode 63"),
    (k(".word 0x3c00000f00000000"), 2, 7, "reserved bits 37..32 are not zero"),
    (k(".word 0x3c0003c000000000"), 2, 7, "S2R special register 15 does not exist"),
    (k(".word 0x10000000000000000"), 2, 7, "does not fit in 64 bits"),
    ('.kernel k\n.end\n.source "a.cu"\n', 3, 1, ".source must come before the first kernel"),
    ('.source "a\\q"\n', 1, 9, "malformed string"),
    ('.source "abc\n', 1, 9, "unexpected character '\"'"),
    (k(".loc -1"), 2, 6, "expected a source line number, found '-'"),
    (k("ADD r1, r2, #"), 2, 14, "expected a number after '#'"),
    (k(".loc 1000001 // x"), 2, 6, "a source line number 1000001 is out of range (0..1000000)"),
])
def test_errors(text, line, col, msg):
    e = asm_err(text)
    assert (e.filename, e.line, e.col) == ("t.qsass", line, col), e.render()
    assert msg in e.message, e.message


def test_error_render_has_source_line_and_caret():
    e = asm_err(".kernel k\n    MOV r32, #1\n.end\n")
    assert e.render() == ("t.qsass:2:9: error: bad register 'r32' (registers are r0..r31)\n"
                          "    MOV r32, #1\n"
                          "        ^")


def test_too_many_instructions():
    e = asm_err(k("\n".join(["NOP"] * (SPEC.max_instrs + 1))))
    assert e.line == SPEC.max_instrs + 2
    assert e.message == (f"too many instructions: the machine holds at most {SPEC.max_instrs}; "
                         "put some kernels in a file of their own")
    assert len(assemble(k("\n".join(["NOP"] * SPEC.max_instrs))).code) == SPEC.max_instrs


def test_too_many_params():
    header = "".join(f".param int p{i}\n" for i in range(SPEC.max_params + 1))
    e = asm_err(k("EXIT", header))
    assert e.message == f"too many parameters (the machine allows {SPEC.max_params})"


def test_label_of_another_kernel_is_unknown():
    e = asm_err(".kernel a\nx: NOP\n.end\n.kernel b\nBRA x\n.end\n")
    assert (e.line, e.message) == (5, "unknown label 'x' in kernel 'b'")


# -- disassembler -----------------------------------------------------------------------------

def test_disassembly_text_shape():
    p = assemble(BRIEF_EXAMPLE, "ex.qsass")
    text = disassemble(p, header="hello")
    lines = text.splitlines()
    assert lines[:2] == ["// hello", '.source "ex.qsass"']
    assert ".param int* a" in lines and ".param int n" in lines
    assert ".shared 16" in lines and ".regs 6" in lines
    assert "    .loc 3    // following instructions come from source line 3" in lines
    assert "L9:" in lines
    assert any(ln.strip().startswith("BRZ      r2, L9") for ln in lines)
    assert any(ln.strip().startswith("LDC      r1, c[3]") for ln in lines)
    assert any(ln.strip().startswith("ST       [r4-1], r3") for ln in lines)
    assert text.endswith(".end\n")


def test_disassembly_of_irregular_words_uses_dot_word():
    prog = Program(code=[Instr(Op.NOP, rd=3), Instr(Op.BRA, imm=99), Instr(Op.LDC, rd=1, imm=-1),
                         Instr(Op.EXIT, line=2)],
                   kernels=[Kernel("k", 0, 4)])
    text = disassemble(prog)
    assert text.count(".word") == 3
    assert "(unused fields set)" in text and "(branch target outside the kernel)" in text
    back = assemble(text)
    assert words(back) == words(prog)
    assert [i.line for i in back.code] == [None, None, None, 2]


def test_instr_text():
    assert instr_text(Instr(Op.ADD, rd=1, rs1=2, imm=-5, use_imm=True)) == "ADD r1, r2, #-5"
    assert instr_text(Instr(Op.BRZ, rs1=2, imm=7)) == "BRZ r2, L7"
    assert instr_text(Instr(Op.AND, rd=1, rs1=1, imm=-16777216, use_imm=True)) == "AND r1, r1, #0xff000000"
    assert instr_text(Instr(Op.ATOM, rd=1, rs1=2, rs2=3, mod=12)) == ".word 0x4c221b0000000000"
    assert instr_text(Instr(Op.EXIT)) == "EXIT"


@pytest.mark.parametrize("prog,why", [
    (Program([Instr(Op.NOP)], []), "belong to no kernel"),
    (Program([Instr(Op.NOP)], [Kernel("k", 0, 1), Kernel("k", 1, 1)]), "duplicate kernel 'k'"),
    (Program([Instr(Op.NOP)], [Kernel("k", 1, 1)]), "must tile the code"),
    (Program([Instr(Op.NOP, rd=40)], [Kernel("k", 0, 1)]), "does not encode"),
    (Program([Instr(Op.S2R, mod=15)], [Kernel("k", 0, 1)]), "S2R special register 15 does not exist"),
    (Program([Instr(Op.NOP, line=-1)], [Kernel("k", 0, 1)]), "has line -1"),
    (Program([Instr(Op.NOP, line=10**7)], [Kernel("k", 0, 1)]), "has line 10000000 (0..1000000 or None)"),
    (Program([], [Kernel("k", 0, 0, [Param("a", "half")])]), "unknown type 'half'"),
    (Program([], [Kernel("k", 0, 0, [Param("int", "int")])]), "parameter named 'int'"),
    (Program([], [Kernel("k-1", 0, 0)]), "not an identifier"),
    (Program([], [Kernel("k", 0, 0, shared_words=5000)]), "shared_words=5000"),
])
def test_malformed_programs_are_rejected(prog, why):
    assert why in check_program(prog)
    with pytest.raises(ValueError, match="cannot disassemble"):
        disassemble(prog)


# -- round trip -------------------------------------------------------------------------------

regs = st.integers(0, SPEC.num_regs - 1)
imm32 = st.one_of(st.integers(-(1 << 31), (1 << 31) - 1), st.sampled_from([0, 1, -1, 65535, 65536, -65536]))


@st.composite
def instrs(draw, entry: int, end: int):
    op = draw(st.sampled_from(list(Op)))
    f = FORMATS[op]
    line = draw(st.one_of(st.none(), st.integers(0, 50)))
    if draw(st.integers(0, 9)) == 0:  # occasionally: arbitrary field values (irregular encodings)
        mod = draw(st.integers(0, 15))
        if op is Op.S2R:
            mod = draw(st.sampled_from([int(s) for s in SReg]))
        if op is Op.ATOM:
            mod = draw(st.sampled_from([int(a) for a in AtomOp]))
        if op in (Op.SHFL, Op.VOTE):
            mod = draw(st.sampled_from([m for m in range(16) if xlane_valid(op, m)]))
        return Instr(op, rd=draw(regs), rs1=draw(regs), rs2=draw(regs), imm=draw(imm32),
                     use_imm=draw(st.booleans()), mod=mod, line=line)
    if f is Fmt.NONE:
        ins = Instr(op)
    elif f in (Fmt.ALU, Fmt.XLANE):
        mod = draw(st.sampled_from([m for m in range(16) if xlane_valid(op, m)])) if f is Fmt.XLANE else 0
        ins = Instr(op, rd=draw(regs), rs1=draw(regs), imm=draw(imm32), use_imm=True, mod=mod) \
            if draw(st.booleans()) else Instr(op, rd=draw(regs), rs1=draw(regs), rs2=draw(regs), mod=mod)
    elif f is Fmt.MOV:
        ins = Instr(op, rd=draw(regs), imm=draw(imm32), use_imm=True) if draw(st.booleans()) \
            else Instr(op, rd=draw(regs), rs1=draw(regs))
    elif f is Fmt.UN:
        ins = Instr(op, rd=draw(regs), rs1=draw(regs))
    elif f is Fmt.S2R:
        ins = Instr(op, rd=draw(regs), mod=int(draw(st.sampled_from(list(SReg)))))
    elif f is Fmt.LDC:
        ins = Instr(op, rd=draw(regs), imm=draw(st.integers(0, SPEC.max_params - 1)))
    elif f is Fmt.LD:
        ins = Instr(op, rd=draw(regs), rs1=draw(regs), imm=draw(imm32))
    elif f is Fmt.ST:
        ins = Instr(op, rs1=draw(regs), rs2=draw(regs), imm=draw(imm32))
    elif f is Fmt.ATOM:
        ins = Instr(op, rd=draw(regs), rs1=draw(regs), rs2=draw(regs), imm=draw(imm32),
                    mod=int(draw(st.sampled_from(list(AtomOp)))))
    else:
        target = draw(st.one_of(st.integers(entry, end), st.integers(-5, 2000)))
        ins = Instr(op, imm=target) if f is Fmt.BRA else Instr(op, rs1=draw(regs), imm=target)
    ins.line = line
    return ins


names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True).filter(lambda s: s not in ("const", "int", "char"))


@st.composite
def programs(draw):
    nk = draw(st.integers(0, 3))
    kernel_names = draw(st.lists(names, min_size=nk, max_size=nk, unique=True))
    code: list[Instr] = []
    kernels = []
    for name in kernel_names:
        n = draw(st.integers(0, 12))
        entry = len(code)
        for _ in range(n):
            code.append(draw(instrs(entry, entry + n)))
        pnames = draw(st.lists(names, max_size=4, unique=True))
        params = [Param(pn, draw(st.sampled_from(list(ELEM_DTYPES))), draw(st.booleans()), draw(st.booleans()))
                  for pn in pnames]
        kernels.append(Kernel(name, entry, len(code), params, draw(st.integers(0, SPEC.shared_words)),
                              draw(st.integers(0, SPEC.num_regs))))
    src = draw(st.lists(st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\n\r"),
                                max_size=20), max_size=5))
    return Program(code, kernels, source_name=draw(st.text(max_size=10)), source_lines=src)


def assert_same_program(a: Program, b: Program):
    assert words(a) == words(b)
    assert a.kernels == b.kernels
    assert [i.line for i in a.code] == [i.line for i in b.code]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_round_trip(prog):
    text = disassemble(prog)
    back = assemble(text, "rt.qsass")
    assert_same_program(prog, back)
    assert back.source_name == prog.source_name
    for ins in prog.code:  # source annotations survive (stripped, as source_line() gives them)
        if ins.line is not None:
            assert back.source_line(ins.line) == prog.source_line(ins.line)
    # and the disassembly of the reassembled program is the same text
    assert disassemble(back) == text


def test_round_trip_brief_example():
    p = assemble(BRIEF_EXAMPLE)
    assert_same_program(p, assemble(disassemble(p)))


# -- no exception but CompileError, whatever the text ------------------------------------------

VOCAB = [".kernel", ".end", ".param", ".shared", ".regs", ".loc", ".source", ".word", "none", "const",
         "int", "unsigned", "char", "uchar", "bool", "*", "k", "L1", "x", ":", ",", "[", "]", "+", "-", "#",
         "c", "r0", "r31", "r32", "R5", "%tid.x", "%nope", "0", "7", "0x1f", "0x", "99999999999999999999",
         "4294967296", "ADD", "MOV", "LD", "ST", "LDC", "S2R", "BRA", "BRZ", "ATOM.CAS", "ATOM.XYZ", "EXIT",
         "BAR", "NOP", '"a.cu"', '"', "//", "\n", "\n", "\n", " ", "\t", "\r", "\x00", "é", ";", "0x0420000000000007"]


@st.composite
def mutated_disassemblies(draw):
    """The disassembly of a random program with a few characters deleted, replaced or inserted."""
    text = disassemble(draw(programs()))
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(text)))
        how = draw(st.sampled_from(["del", "ins", "rep"]))
        ch = draw(st.sampled_from(list("\n #[],:+-*%.0179xrLc\"/") + ["\x00", "é"]))
        if how == "del":
            text = text[:i] + text[i + 1:]
        elif how == "ins":
            text = text[:i] + ch + text[i:]
        else:
            text = text[:i] + ch + text[i + 1:]
    return text


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(
    st.lists(st.sampled_from(VOCAB), max_size=60).map(" ".join),
    st.lists(st.sampled_from(VOCAB), max_size=60).map("".join),
    st.text(max_size=200),
    mutated_disassemblies(),
))
def test_fuzz_only_compile_errors(text):
    try:
        prog = assemble(text, "fuzz.qsass")
    except CompileError as e:
        assert e.filename == "fuzz.qsass" and e.line >= 1 and e.col >= 1
        assert "\n" not in e.message
        e.render()
        return
    assert check_program(prog) is None  # whatever assembles is well-formed and disassembles
    assert_same_program(prog, assemble(disassemble(prog)))
