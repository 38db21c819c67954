"""qsass text -> Program.

The syntax is specified in docs/qsass.md.  In short: one statement per line,
`//` comments, `.kernel NAME` ... `.end` sections with `.param`, `.shared` and
`.regs` header directives, `.loc N` source annotations, `LABEL:` definitions,
and one instruction per line in the shape its opcode's Fmt fixes.

Every problem in the text is reported as a CompileError located at the
offending token; no other exception leaves `assemble` for any input string.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from ..diagnostics import CompileError
from ..isa import (FORMATS, WRITES_RD, AtomOp, Fmt, Instr, Op, SReg, VoteMode, decode, to_s32, xlane_name,
                   xlane_valid)
from ..spec import SPEC
from ..program import ELEM_DTYPES, Constant, DeviceAssert, Kernel, Param, PrintfFormat, Program, StructLayout

MAX_LINE = 1_000_000  # largest source line number a .loc (and Instr.line) may name
IMM_MIN = -(1 << 31)
IMM_MAX = (1 << 32) - 1  # immediates may be written as u32 patterns; stored as s32

# Type spellings accepted by .param (the canonical spelling first).
PARAM_TYPES = {
    "int": "int",
    "unsigned": "unsigned",
    "bool": "bool",
    "char": "char",
    "uchar": "uchar",
    "short": "short",
    "ushort": "ushort",
    "float": "float",
    "llong": "llong",  # 64-bit: two parameter words, the low one first
    "ullong": "ullong",
    "double": "double",  # IEEE binary64: two parameter words (the bit pattern), the low one first
}
CONST_TYPES = {k: v for k, v in PARAM_TYPES.items() if k != "double"}  # 64-bit: two cells an element

_TOKEN_RE = re.compile(
    r"""
    (?P<ws>[ \t\f\v\r]+)
  | (?P<comment>//.*)
  | (?P<string>"(?:[^"\\]|\\.)*")
  | (?P<num>[0-9][0-9A-Za-z_]*)
  | (?P<sreg>%[A-Za-z_][A-Za-z0-9_.]*)
  | (?P<ident>[.A-Za-z_][A-Za-z0-9_.$]*)
  | (?P<punct>[,:\[\]+\-*\#])
    """,
    re.VERBOSE,
)
IDENT_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_.$]*\Z")
# Names the .param syntax cannot take: `.param unsigned int` would read as a type.
RESERVED_PARAM_NAMES = frozenset({"const", "int", "char"})
_REG_RE = re.compile(r"[rR]([0-9]+)\Z")
_DEC_RE = re.compile(r"[0-9]+\Z")
_HEX_RE = re.compile(r"0[xX][0-9A-Fa-f]+\Z")

_MNEMONICS: dict[str, tuple[Op, int]] = {op.name: (op, 0) for op in Op
                                          if op not in (Op.ATOM, Op.SHFL, Op.VOTE)}
for _a in AtomOp:
    _MNEMONICS[f"ATOM.{_a.name}"] = (Op.ATOM, int(_a))
for _op in (Op.SHFL, Op.VOTE):
    for _m in range(16):
        if xlane_valid(_op, _m):
            _MNEMONICS[xlane_name(_op, _m)] = (_op, _m)


@dataclass
class Tok:
    kind: str  # num, sreg, ident, punct, string
    text: str
    col: int  # 1-based


@dataclass
class _Fixup:
    index: int  # instruction index in the program
    label: str
    line: int
    col: int
    src: str


@dataclass
class _KernelState:
    name: str
    line: int
    col: int
    src: str
    entry: int
    params: list[Param] = field(default_factory=list)
    shared_words: int = 0
    local_words: int = 0
    regs: int | None = None
    labels: dict[str, tuple[int, int]] = field(default_factory=dict)  # name -> (pc, line)
    fixups: list[_Fixup] = field(default_factory=list)
    loc: int | None = None


class _Line:
    """The tokens of one line and a cursor over them, with located errors."""

    def __init__(self, asm: "_Assembler", lineno: int, text: str):
        self.asm = asm
        self.lineno = lineno
        self.text = text
        self.toks: list[Tok] = []
        self.comment: str | None = None
        self.i = 0
        pos = 0
        n = len(text)
        while pos < n:
            m = _TOKEN_RE.match(text, pos)
            if m is None:
                ch = text[pos]
                shown = ch if ch.isprintable() else ascii(ch)[1:-1]
                self.error(pos + 1, f"unexpected character '{shown}'")
            kind = m.lastgroup
            if kind == "comment":
                self.comment = m.group()[2:]
            elif kind != "ws":
                self.toks.append(Tok(kind, m.group(), pos + 1))
            pos = m.end()

    # -- errors and cursor -------------------------------------------------
    def error(self, col: int, message: str):
        raise CompileError(self.asm.filename, self.lineno, col, message, self.text)

    def end_col(self) -> int:
        if self.toks:
            last = self.toks[-1]
            return last.col + len(last.text)
        return len(self.text.rstrip()) + 1

    def peek(self) -> Tok | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def next(self, what: str) -> Tok:
        t = self.peek()
        if t is None:
            self.error(self.end_col(), f"expected {what}")
        self.i += 1
        return t

    def at_end(self) -> bool:
        return self.i >= len(self.toks)

    def expect_end(self):
        t = self.peek()
        if t is not None:
            self.error(t.col, f"unexpected '{t.text}' after the end of the statement")

    def expect_punct(self, p: str, what: str | None = None):
        t = self.peek()
        if t is None or t.kind != "punct" or t.text != p:
            col = t.col if t is not None else self.end_col()
            found = f", found '{t.text}'" if t is not None else ""
            self.error(col, f"expected {what or repr(p)}{found}")
        self.i += 1

    def json_string(self, what: str) -> str:
        """A quoted operand (a file name, a member path): JSON, so that any character can be written."""
        t = self.next(what)
        if t.kind != "string":
            self.error(t.col, f"expected {what}, found '{t.text}'")
        try:
            value = json.loads(t.text)
        except ValueError:
            self.error(t.col, "malformed string (use JSON escapes: \\\" \\\\ \\n \\uXXXX)")
        if not isinstance(value, str):  # pragma: no cover - a JSON string always loads as str
            self.error(t.col, "malformed string")
        return value

    def accept_punct(self, p: str) -> bool:
        t = self.peek()
        if t is not None and t.kind == "punct" and t.text == p:
            self.i += 1
            return True
        return False

    # -- operands ----------------------------------------------------------
    def number_value(self, t: Tok) -> int:
        if t.kind != "num":
            self.error(t.col, f"expected a number, found '{t.text}'")
        s = t.text
        if len(s) > 40:
            self.error(t.col, f"number '{s[:20]}...' is out of range")
        if _DEC_RE.match(s):
            return int(s, 10)
        if _HEX_RE.match(s):
            return int(s, 16)
        self.error(t.col, f"malformed number '{s}' (use decimal or 0x hex)")

    def signed_number(self, what: str) -> tuple[int, int]:
        """[+|-] NUMBER -> (value, column of its first token)."""
        t = self.peek()
        col = t.col if t is not None else self.end_col()
        sign = 1
        if t is not None and t.kind == "punct" and t.text in ("+", "-"):
            sign = -1 if t.text == "-" else 1
            self.i += 1
        t = self.next(what)
        if t.kind != "num":
            self.error(t.col, f"expected {what}, found '{t.text}'")
        return sign * self.number_value(t), col

    def imm32(self, value: int, col: int, what: str = "immediate") -> int:
        if not IMM_MIN <= value <= IMM_MAX:
            self.error(col, f"{what} {value} is out of range (-2147483648..4294967295)")
        return to_s32(value)

    def reg(self) -> int:
        t = self.next("a register")
        if t.kind == "ident":
            m = _REG_RE.match(t.text)
            if m:
                digits = m.group(1)
                n = int(digits) if len(digits) < 6 else SPEC.num_regs
                if n >= SPEC.num_regs:
                    self.error(t.col, f"bad register '{t.text}' (registers are r0..r{SPEC.num_regs - 1})")
                return n
        self.error(t.col, f"expected a register (r0..r{SPEC.num_regs - 1}), found '{t.text}'")

    def imm_operand(self) -> int:
        t = self.peek()
        if t is None or t.text != "#":
            self.error(t.col if t else self.end_col(), "expected an immediate ('#' followed by a number)")
        self.i += 1
        value, col = self.signed_number("a number after '#'")
        return self.imm32(value, col)

    def reg_or_imm(self) -> tuple[int, int | None]:
        """Either (reg, None) or (0, imm)."""
        t = self.peek()
        if t is not None and t.text == "#":
            return 0, self.imm_operand()
        return self.reg(), None

    def mem_operand(self) -> tuple[int, int]:
        """[rN], [rN+off] or [rN-off] -> (reg, s32 offset)."""
        self.expect_punct("[", "a memory operand '[rN+offset]'")
        base = self.reg()
        off = 0
        t = self.peek()
        if t is not None and t.kind == "punct" and t.text in ("+", "-"):
            self.i += 1
            sign = -1 if t.text == "-" else 1
            self.accept_punct("#")
            nt = self.next("an offset")
            off = self.imm32(sign * self.number_value(nt), t.col, "offset")
        self.expect_punct("]", "']'")
        return base, off

    def label_ref(self) -> Tok:
        t = self.next("a label")
        if t.kind != "ident" or t.text.startswith("."):
            self.error(t.col, f"expected a label, found '{t.text}'")
        return t

    def comma(self):
        self.expect_punct(",", "','")


class _Assembler:
    def __init__(self, text: str, filename: str):
        self.text = text
        self.filename = filename
        self.code: list[Instr] = []
        self.kernels: list[Kernel] = []
        self.constants: list[Constant] = []
        self.printf: list[PrintfFormat] = []
        self.asserts: list[DeviceAssert] = []
        self.structs: dict[str, StructLayout] = {}
        self.cur: _KernelState | None = None
        self.kernel_names: dict[str, int] = {}
        self.source_name: str | None = None
        self.source_text: dict[int, str] = {}

    def run(self) -> Program:
        lines = self.text.split("\n")
        for lineno, raw in enumerate(lines, start=1):
            self.statement(_Line(self, lineno, raw))
        if self.cur is not None:
            k = self.cur
            raise CompileError(self.filename, k.line, k.col,
                               f"kernel '{k.name}' has no .end", k.src)
        src_lines: list[str] = []
        if self.source_text:
            top = max(self.source_text)
            src_lines = [self.source_text.get(i, "") for i in range(1, top + 1)]
        return Program(code=self.code, kernels=self.kernels,
                       source_name=self.source_name if self.source_name is not None else self.filename,
                       source_lines=src_lines, constants=self.constants, printf=self.printf,
                       asserts=self.asserts)

    # -- statements ---------------------------------------------------------
    def statement(self, ln: _Line):
        # Leading label definitions: IDENT ':'
        while (len(ln.toks) - ln.i >= 2 and ln.toks[ln.i].kind == "ident"
               and ln.toks[ln.i + 1].text == ":" and not ln.toks[ln.i].text.startswith(".")):
            self.define_label(ln, ln.toks[ln.i])
            ln.i += 2
        t = ln.peek()
        if t is None:
            return
        if t.kind == "ident" and t.text.startswith("."):
            ln.i += 1
            self.directive(ln, t)
        elif t.kind == "ident":
            ln.i += 1
            self.instruction(ln, t)
        else:
            ln.error(t.col, f"expected an instruction, a directive or a label, found '{t.text}'")

    def need_kernel(self, ln: _Line, t: Tok, what: str) -> _KernelState:
        if self.cur is None:
            ln.error(t.col, f"{what} outside a kernel (start one with '.kernel NAME')")
        return self.cur

    def define_label(self, ln: _Line, t: Tok):
        k = self.need_kernel(ln, t, f"label '{t.text}'")
        if t.text in k.labels:
            ln.error(t.col, f"duplicate label '{t.text}' (first defined on line {k.labels[t.text][1]})")
        k.labels[t.text] = (len(self.code), ln.lineno)

    def header_allowed(self, ln: _Line, t: Tok, k: _KernelState):
        if len(self.code) != k.entry:
            ln.error(t.col, f"{t.text} must come before the kernel's first instruction")

    def uint_arg(self, ln: _Line, what: str, lo: int, hi: int) -> int:
        t = ln.next(what)
        if t.kind != "num":
            ln.error(t.col, f"expected {what}, found '{t.text}'")
        v = ln.number_value(t)
        if not lo <= v <= hi:
            ln.error(t.col, f"{what} {v} is out of range ({lo}..{hi})")
        return v

    def directive(self, ln: _Line, t: Tok):
        d = t.text.lower()
        if d == ".kernel":
            if self.cur is not None:
                ln.error(t.col, f"missing .end of kernel '{self.cur.name}' (started on line {self.cur.line})")
            nt = ln.next("a kernel name")
            if nt.kind != "ident" or not IDENT_RE.match(nt.text):
                ln.error(nt.col, f"expected a kernel name, found '{nt.text}'")
            if nt.text in self.kernel_names:
                ln.error(nt.col, f"duplicate kernel '{nt.text}' (first defined on line "
                                 f"{self.kernel_names[nt.text]})")
            ln.expect_end()
            self.kernel_names[nt.text] = ln.lineno
            self.cur = _KernelState(nt.text, ln.lineno, t.col, ln.text, entry=len(self.code))
        elif d == ".end":
            k = self.need_kernel(ln, t, ".end")
            ln.expect_end()
            self.finish_kernel(k)
            self.cur = None
        elif d == ".param":
            k = self.need_kernel(ln, t, ".param")
            self.header_allowed(ln, t, k)
            self.param(ln, t, k)
        elif d == ".shared":
            k = self.need_kernel(ln, t, ".shared")
            self.header_allowed(ln, t, k)
            k.shared_words = self.uint_arg(ln, "a shared cell count", 0, SPEC.shared_words)
            ln.expect_end()
        elif d == ".local":
            k = self.need_kernel(ln, t, ".local")
            self.header_allowed(ln, t, k)
            k.local_words = self.uint_arg(ln, "a local cell count", 0, SPEC.global_words)
            ln.expect_end()
        elif d == ".regs":
            k = self.need_kernel(ln, t, ".regs")
            self.header_allowed(ln, t, k)
            k.regs = self.uint_arg(ln, "a register count", 0, SPEC.num_regs)
            ln.expect_end()
        elif d == ".loc":
            k = self.need_kernel(ln, t, ".loc")
            nt = ln.peek()
            if nt is not None and nt.kind == "ident" and nt.text.lower() == "none":
                ln.i += 1
                k.loc = None
            else:
                k.loc = self.uint_arg(ln, "a source line number", 0, MAX_LINE)
                if ln.comment is not None:
                    self.source_text.setdefault(k.loc, ln.comment.strip())
            ln.expect_end()
        elif d == ".source":
            if self.cur is not None or self.kernels:
                ln.error(t.col, ".source must come before the first kernel")
            name = ln.json_string("a quoted file name")
            ln.expect_end()
            self.source_name = name
        elif d == ".const":
            self.constant(ln, t)
        elif d in (".printf", ".assert"):  # `.printf LINE "KINDS" "FORMAT" "LIT"...`, `.assert LINE "FILE" "FN" "COND" ["MSG"]`
            if self.cur is not None or self.kernels:
                ln.error(t.col, f"{d} must come before the first kernel")
            line = self.uint_arg(ln, "a source line", 0, 1 << 31)
            texts = [ln.json_string("a quoted string")]
            while ln.peek() is not None:
                texts.append(ln.json_string("a quoted string"))
            if d == ".printf" and len(texts) >= 2 and not set(texts[0]) - set("iuIUfdsp"):
                self.printf.append(PrintfFormat(texts[1], texts[0], tuple(texts[2:]), line))
            elif d == ".assert" and len(texts) in (3, 4):
                self.asserts.append(DeviceAssert(texts[0], line, texts[2], texts[1], *texts[3:]))
            else:
                ln.error(t.col, f"malformed {d} (docs/qsass.md)")
        elif d == ".struct":
            self.struct(ln, t)
        elif d == ".word":
            k = self.need_kernel(ln, t, "instruction")
            nt = ln.next("a 64-bit instruction word")
            value = ln.number_value(nt)
            if not 0 <= value < (1 << 64):
                ln.error(nt.col, f"instruction word {value:#x} does not fit in 64 bits")
            try:
                ins = decode(value)
            except ValueError as e:
                ln.error(nt.col, f"invalid instruction word {value:#018x}: {e}")
            problem = invalid_fields(ins)
            if problem:
                ln.error(nt.col, f"invalid instruction word {value:#018x}: {problem}")
            ln.expect_end()
            self.emit(ln, t, k, ins, None)
        else:
            ln.error(t.col, f"unknown directive '{t.text}' (directives: .kernel .param .shared .regs "
                            ".local .loc .end .source .const .struct .printf .assert .word)")

    def struct(self, ln: _Line, t: Tok):
        """`.struct NAME "path" TYPE, ...`: the cells of a struct that a `.param struct NAME*`
        points to, in memory order (one cell per scalar member, two for a 64-bit one).  The
        launcher needs them to lay out a buffer of such structs; paths are JSON strings because
        they hold dots and brackets (`"pos.x"`, `"v[2]"`)."""
        if self.cur is not None or self.kernels:
            ln.error(t.col, ".struct must come before the first kernel")
        nt = ln.next("a struct name")
        if nt.kind != "ident" or not IDENT_RE.match(nt.text) or "." in nt.text or nt.text in PARAM_TYPES:
            ln.error(nt.col, f"expected a struct name, found '{nt.text}'")
        if nt.text in self.structs:
            ln.error(nt.col, f"duplicate struct '{nt.text}'")
        cells: list[tuple[str, str]] = []
        while True:
            if cells:
                if ln.at_end():
                    break
                ln.expect_punct(",")
            col = ln.peek().col if ln.peek() is not None else ln.end_col()
            path = ln.json_string('a quoted member path such as "x"')
            if not path:
                ln.error(col, "a member path is a non-empty string")
            tt = ln.next("a member type")
            if tt.kind != "ident" or tt.text not in PARAM_TYPES:
                ln.error(tt.col, f"unknown member type '{tt.text}' (types: {', '.join(PARAM_TYPES)})")
            cells.append((path, PARAM_TYPES[tt.text]))
        self.structs[nt.text] = StructLayout(nt.text, tuple(cells))

    def constant(self, ln: _Line, t: Tok):
        """`.const TYPE NAME[N][M] v0, v1, ...`: a __constant__ variable, its cells in order (all
        or none: none is zeros).  Constants lie from global cell 0 in the order of declaration."""
        if self.cur is not None or self.kernels:
            ln.error(t.col, ".const must come before the first kernel")
        tt = ln.next("a constant type")
        if tt.kind != "ident" or tt.text not in CONST_TYPES:
            ln.error(tt.col, f"unknown constant type '{tt.text}' (types: {', '.join(CONST_TYPES)})")
        nt = ln.next("a constant name")
        if nt.kind != "ident" or not IDENT_RE.match(nt.text) or nt.text.startswith("."):
            ln.error(nt.col, f"expected a constant name, found '{nt.text}'")
        if any(c.name == nt.text for c in self.constants):
            ln.error(nt.col, f"duplicate constant '{nt.text}'")
        dims: list[int] = []
        while ln.peek() is not None and ln.peek().text == "[":
            ln.i += 1
            dims.append(self.uint_arg(ln, "an array size", 1, SPEC.global_words))
            close = ln.next("']'")
            if close.text != "]":
                ln.error(close.col, f"expected ']', found '{close.text}'")
        if len(dims) > 2:
            ln.error(nt.col, "constant arrays have at most 2 dimensions")
        c = Constant(nt.text, PARAM_TYPES[tt.text], tuple(dims), sum(x.words for x in self.constants))
        cells: list[int] = []
        while ln.peek() is not None:
            if cells:
                comma = ln.next("','")
                if comma.text != ",":
                    ln.error(comma.col, f"expected ',', found '{comma.text}'")
            cells.append(self.uint_arg(ln, "a 32-bit cell value", 0, 0xFFFFFFFF))
        if cells and len(cells) != c.words:
            ln.error(nt.col, f"constant '{c.name}' has {c.words} cells; {len(cells)} values given")
        if c.base + c.words > SPEC.global_words:
            ln.error(nt.col, f"constants need {c.base + c.words} cells; global memory has {SPEC.global_words}")
        c.init = cells or [0] * c.words
        self.constants.append(c)

    def param(self, ln: _Line, t: Tok, k: _KernelState):
        const = False
        tt = ln.next("a parameter type")
        texture = 0
        if tt.kind == "ident" and tt.text in ("texture1", "texture2"):  # `.param texture2 float t`
            texture = int(tt.text[-1])
            const = True
            tt = ln.next("a texture's element type")
        if tt.kind == "ident" and tt.text == "const":
            const = True
            tt = ln.next("a parameter type")
        if tt.kind == "ident" and tt.text == "struct":
            st = ln.next("a struct name")
            if st.text not in self.structs:
                ln.error(st.col, f"unknown struct '{st.text}' (declare it with .struct before the first kernel)")
            pointer = ln.accept_punct("*") or bool(texture)  # without '*': the struct by value, a word per cell
            self.param_name(ln, t, k, Param("", "struct", pointer, const, self.structs[st.text], texture))
            return
        if tt.kind != "ident" or tt.text not in PARAM_TYPES:
            ln.error(tt.col, f"unknown parameter type '{tt.text}' (types: {', '.join(PARAM_TYPES)})")
        ctype = PARAM_TYPES[tt.text]
        nxt = ln.peek()
        if ctype == "unsigned" and nxt is not None and nxt.kind == "ident" and nxt.text in ("char", "int"):
            ln.i += 1
            ctype = "uchar" if nxt.text == "char" else "unsigned"
        pointer = ln.accept_punct("*") or bool(texture)
        assert ctype in ELEM_DTYPES
        self.param_name(ln, t, k, Param("", ctype, pointer, const, texture=texture))

    def param_name(self, ln: _Line, t: Tok, k: _KernelState, prm: Param):
        nt = ln.next("a parameter name")
        if nt.kind != "ident" or not IDENT_RE.match(nt.text) or nt.text in RESERVED_PARAM_NAMES:
            ln.error(nt.col, f"expected a parameter name, found '{nt.text}'")
        ln.expect_end()
        if any(p.name == nt.text for p in k.params):
            ln.error(nt.col, f"duplicate parameter '{nt.text}'")
        if len(k.params) >= SPEC.max_params:
            ln.error(t.col, f"too many parameters (the machine allows {SPEC.max_params})")
        prm.name = nt.text
        k.params.append(prm)

    def instruction(self, ln: _Line, t: Tok):
        k = self.need_kernel(ln, t, "instruction")
        key = t.text.upper()
        if key not in _MNEMONICS:
            if key == "ATOM" or key.startswith("ATOM."):
                ln.error(t.col, f"unknown atomic '{t.text}' (ATOM.{{{','.join(a.name for a in AtomOp)}}})")
            if key.split(".")[0] in ("SHFL", "VOTE"):
                ln.error(t.col, f"unknown lane-crossing mnemonic '{t.text}' (SHFL.{{IDX,UP,DOWN,XOR}}[.W1|.W2], "
                                f"VOTE.{{{','.join(m.name for m in VoteMode)}}})")
            ln.error(t.col, f"unknown mnemonic '{t.text}'")
        op, mod = _MNEMONICS[key]
        fmt = FORMATS[op]
        label: Tok | None = None
        if fmt is Fmt.NONE:
            ins = Instr(op)
        elif fmt in (Fmt.ALU, Fmt.XLANE):
            rd = ln.reg()
            ln.comma()
            rs1 = ln.reg()
            ln.comma()
            rs2, imm = ln.reg_or_imm()
            ins = Instr(op, rd=rd, rs1=rs1, rs2=rs2, mod=mod) if imm is None else \
                Instr(op, rd=rd, rs1=rs1, imm=imm, use_imm=True, mod=mod)
        elif fmt is Fmt.UN:
            rd = ln.reg()
            ln.comma()
            ins = Instr(op, rd=rd, rs1=ln.reg())
        elif fmt is Fmt.MOV:
            rd = ln.reg()
            ln.comma()
            rs1, imm = ln.reg_or_imm()
            ins = Instr(op, rd=rd, rs1=rs1) if imm is None else Instr(op, rd=rd, imm=imm, use_imm=True)
        elif fmt is Fmt.S2R:
            rd = ln.reg()
            ln.comma()
            st = ln.next("a special register")
            try:
                sreg = SReg.from_asm(st.text.lower())
            except KeyError:
                ln.error(st.col, f"unknown special register '{st.text}' "
                                 f"({' '.join(s.asm for s in SReg)})")
            ins = Instr(op, rd=rd, mod=int(sreg))
        elif fmt is Fmt.LDC:
            rd = ln.reg()
            ln.comma()
            ct = ln.next("a parameter slot 'c[N]'")
            if ct.kind != "ident" or ct.text.lower() != "c":
                ln.error(ct.col, f"expected a parameter slot 'c[N]', found '{ct.text}'")
            ln.expect_punct("[", "'['")
            nt = ln.next("a parameter index")
            idx = ln.number_value(nt)
            if not 0 <= idx < SPEC.max_params:
                ln.error(nt.col, f"parameter index {idx} is out of range (0..{SPEC.max_params - 1})")
            ln.expect_punct("]", "']'")
            ins = Instr(op, rd=rd, imm=idx)
        elif fmt is Fmt.LD:
            rd = ln.reg()
            ln.comma()
            base, off = ln.mem_operand()
            ins = Instr(op, rd=rd, rs1=base, imm=off)
        elif fmt is Fmt.ST:
            base, off = ln.mem_operand()
            ln.comma()
            rs2 = ln.reg()
            ins = Instr(op, rs1=base, rs2=rs2, imm=off)
        elif fmt is Fmt.ATOM:
            rd = ln.reg()
            ln.comma()
            base, off = ln.mem_operand()
            ln.comma()
            rs2 = ln.reg()
            ins = Instr(op, rd=rd, rs1=base, rs2=rs2, imm=off, mod=mod)
        elif fmt is Fmt.BRA:
            label = ln.label_ref()
            ins = Instr(op)
        elif fmt is Fmt.BRC:
            rs1 = ln.reg()
            ln.comma()
            label = ln.label_ref()
            ins = Instr(op, rs1=rs1)
        elif fmt is Fmt.JR:
            ins = Instr(op, rs1=ln.reg())
        else:  # pragma: no cover - every Fmt is handled above
            raise AssertionError(fmt)
        ln.expect_end()
        self.emit(ln, t, k, ins, label)

    def emit(self, ln: _Line, t: Tok, k: _KernelState, ins: Instr, label: Tok | None):
        if len(self.code) >= SPEC.max_instrs:
            ln.error(t.col, f"too many instructions: the machine holds at most {SPEC.max_instrs}; "
                            "put some kernels in a file of their own")
        ins.line = k.loc
        if label is not None:
            k.fixups.append(_Fixup(len(self.code), label.text, ln.lineno, label.col, ln.text))
        self.code.append(ins)

    def finish_kernel(self, k: _KernelState):
        for f in k.fixups:
            if f.label not in k.labels:
                raise CompileError(self.filename, f.line, f.col,
                                   f"unknown label '{f.label}' in kernel '{k.name}'", f.src)
            self.code[f.index].imm = k.labels[f.label][0]
        end = len(self.code)
        regs = k.regs
        if regs is None:
            regs = max((r + 1 for ins in self.code[k.entry:end] for r in used_regs(ins)), default=0)
        self.kernels.append(Kernel(k.name, k.entry, end, k.params, k.shared_words, regs, k.local_words))


def used_regs(ins: Instr) -> tuple[int, ...]:
    regs = ins.reads()
    return regs + (ins.rd,) if ins.op in WRITES_RD else regs


def invalid_fields(ins: Instr) -> str | None:
    """Why a decoded instruction cannot execute (bad special register or atomic), or None."""
    if ins.op is Op.S2R and ins.mod not in SReg._value2member_map_:
        return f"S2R special register {ins.mod} does not exist"
    if ins.op is Op.ATOM and ins.mod not in AtomOp._value2member_map_:
        return f"atomic operation {ins.mod} does not exist"
    if ins.op in (Op.SHFL, Op.VOTE) and not xlane_valid(ins.op, ins.mod):
        return f"{ins.op.name} mode {ins.mod} does not exist"
    return None


def assemble(text: str, filename: str = "<input>") -> Program:
    """Assemble qsass text; raises CompileError (only) for any problem in the text."""
    return _Assembler(text, filename).run()


__all__ = ["assemble", "used_regs", "invalid_fields", "PARAM_TYPES", "IDENT_RE", "RESERVED_PARAM_NAMES",
           "MAX_LINE"]
