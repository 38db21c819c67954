"""The preprocessor: line splicing, comments, directives, #include, macro definitions.

Why our own and not `pcpp`: every diagnostic must point at the exact
`file:line:col` of the token the user wrote, also for tokens after a macro use
on the same line and inside `#include`d files.  A text-to-text preprocessor
loses columns as soon as a macro expands to text of another length.  Here the
preprocessor never rewrites code text: comments become blanks of the same
length, directives and lines of false `#if` branches become empty lines, and
macros are expanded later on the token stream (`macros.py`), where every token
keeps a position.

Positions.  The output `text` is the concatenation, in processing order, of
the logical lines of the main file and of every included file (an `#include`
line is followed by the lines of the file it includes).  Each physical line of
each inclusion gets a *virtual line* number in that order, so in a file that
includes no file virtual line N is physical line N.  `SourceMap.pos` maps an
offset in `text` to (virtual line, column) of the physical character, through
backslash-newline splices (C translation phase 2, which applies anywhere, also
inside tokens and comments); `SourceMap.remap` turns a diagnostic at a virtual
line into the real file, line and source line.  Macro scopes are virtual-line
ranges (a macro is active after its `#define` line until its `#undef`), which
is right because virtual lines are in processing order.
"""

from __future__ import annotations

import os
import re
from bisect import bisect_right
from dataclasses import dataclass, field

from ..diagnostics import CompileError

# Headers accepted as built-in no-ops: they declare host APIs or things qgcc provides itself.
BUILTIN_HEADERS = frozenset({
    "cuda_runtime.h", "cuda.h", "cuda_runtime_api.h", "device_launch_parameters.h",
    "device_functions.h", "vector_types.h", "math_functions.h", "sm_20_atomic_functions.h",
    "stdio.h", "stdlib.h", "math.h", "string.h", "stddef.h", "limits.h", "float.h", "assert.h",
    "stdint.h", "cstdio", "cstdlib", "cmath", "cstring", "cstddef", "climits", "cfloat",
    "cassert", "cstdint", "stdbool.h",
    "iostream", "cooperative_groups.h", "cooperative_groups/reduce.h",  # (frontend/coopgroups.py)
    # host-only C/POSIX/C++ headers: what they declare is for host code, which qgcc does not compile
    "malloc.h", "memory.h", "pthread.h", "unistd.h", "time.h", "ctime", "sys/time.h", "fstream",
    "sstream", "iomanip", "string", "vector", "map", "set", "queue", "deque", "list", "iterator",
    "algorithm", "utility", "chrono", "sys/types.h", "sys/stat.h", "fcntl.h", "errno.h",
    "inttypes.h", "cinttypes",  # (the stdint.h names every file has)
})
# The macros that built-in headers define, for this machine (32-bit int, signed 8-bit char).
_LIMITS = ["CHAR_BIT 8", "SCHAR_MIN (-128)", "SCHAR_MAX 127", "UCHAR_MAX 255", "CHAR_MIN (-128)",
           "CHAR_MAX 127", "SHRT_MIN (-32768)", "SHRT_MAX 32767", "USHRT_MAX 65535",
           "INT_MIN (-2147483647 - 1)", "INT_MAX 2147483647",
           "UINT_MAX 4294967295u", "LONG_MIN (-9223372036854775807ll - 1)", "LONG_MAX 9223372036854775807ll",
           "ULONG_MAX 18446744073709551615ull", "LLONG_MIN (-9223372036854775807ll - 1)",
           "LLONG_MAX 9223372036854775807ll", "ULLONG_MAX 18446744073709551615ull"]
_FLOATS = ["FLT_MAX 3.40282347e+38f", "FLT_MIN 1.17549435e-38f", "FLT_EPSILON 1.1920929e-07f",
           "FLT_MANT_DIG 24", "FLT_RADIX 2"]
HEADER_MACROS = {"limits.h": _LIMITS, "climits": _LIMITS, "float.h": _FLOATS, "cfloat": _FLOATS}
# NULL, from the C headers that define it and from the CUDA headers that include them (a null
# pointer is the integer 0 here: pointers are cell addresses).
HEADER_MACROS.update({h: ["NULL 0"] for h in ("stdio.h", "stdlib.h", "stddef.h", "string.h", "cstdio",
                                               "cstdlib", "cstddef", "cstring", "cuda_runtime.h", "cuda.h")})
# Headers that enable constructs qgcc does not have: accepted, and their types are named.
FP16_HEADERS = frozenset({"cuda_fp16.h"})
REJECTED_HEADERS = {
    "helper_cuda.h": "'helper_cuda.h' is host-side helper code of the CUDA samples and is not built "
                     "in (qgcc compiles device code only); remove the #include, or give its "
                     "directory with -I",
    "helper_functions.h": "'helper_functions.h' is host-side helper code of the CUDA samples and is "
                          "not built in; remove the #include, or give its directory with -I",
    "curand_kernel.h": "'curand_kernel.h' (cuRAND's device API: curand_init, curand_uniform, ...) is "
                       "not supported; make the random numbers on the host and pass them in an array",
    "cuda/barrier": "'cuda/barrier' (cuda::barrier, arrive/wait barriers) is not supported; use "
                    "__syncthreads() or cooperative groups' sync",
}
MAX_INCLUDE_DEPTH = 64
# Predefined as nvcc's device pass defines them.  __CUDA_ARCH__ is 700 (compute capability 7.0):
# the machine has what CUDA 9+ code for sm_70 expects (the *_sync warp intrinsics, cooperative
# groups, independent thread scheduling's rules), so `#if __CUDA_ARCH__ >= 300` paths are taken
# and pre-Volta fallbacks (`__shfl` without _sync) are not.  nvcc also includes cuda_runtime.h
# into every file, so its CUDART_VERSION is there too (12000: the CUDA 12 runtime API, whose
# device side this subset follows).  A -D of the same name replaces one.
PREDEFINED = {"__CUDACC__": "1", "__NVCC__": "1", "__CUDA_ARCH__": "700", "CUDART_VERSION": "12000"}


@dataclass
class MacroDef:
    name: str
    body: str  # replacement text (may be empty)
    line: int  # virtual line of the #define (0: from the command line)
    params: list[str] | None = None  # None: object-like
    variadic: bool = False
    end_line: int | None = None  # virtual line of the #undef that ends it
    tokens: list | None = None  # the body's tokens (lexed by macros.py, on first use)

    def active_at(self, line: int) -> bool:
        return self.line < line and (self.end_line is None or line < self.end_line)

    def same_as(self, other: "MacroDef") -> bool:
        return (self.params == other.params and self.variadic == other.variadic
                and self.body.split() == other.body.split())


@dataclass
class SourceMap:
    # One entry per virtual line: (file name, physical line, physical text).
    vlines: list[tuple[str, int, str]] = field(default_factory=list)
    seg_off: list[int] = field(default_factory=list)  # text offsets where a segment starts
    seg_pos: list[tuple[int, int]] = field(default_factory=list)  # (vline, col) there

    def pos(self, off: int) -> tuple[int, int]:
        i = bisect_right(self.seg_off, off) - 1
        if i < 0:
            return 1, 1
        vl, col = self.seg_pos[i]
        return vl, col + off - self.seg_off[i]

    def virtual_lines(self) -> list[str]:
        return [t for _, _, t in self.vlines]

    def locate(self, vline: int) -> tuple[str, int, str] | None:
        if 0 < vline <= len(self.vlines):
            return self.vlines[vline - 1]
        return None

    def remap(self, e: CompileError, main: str) -> CompileError:
        """A diagnostic at a virtual line, placed in the file and line it came from."""
        if e.filename != main or getattr(e, "mapped", False):
            return e
        loc = self.locate(e.line)
        if loc is None:
            return e
        e.filename, e.line, e.source_line = loc
        return e


@dataclass
class Preprocessed:
    text: str
    macros: dict[str, list[MacroDef]] = field(default_factory=dict)
    srcmap: SourceMap = field(default_factory=SourceMap)
    fp16_line: int | None = None  # virtual line of '#include <cuda_fp16.h>', if any
    # Names that kernel templates instantiated at launch use (`testKernel<uint8>`): kept when
    # host code is left out (hostcode.py), as the host code that launched them would keep them.
    launch_names: frozenset = frozenset()
    # Errors that need not stop preprocessing (a header qgcc rejects or cannot find, an unknown
    # directive, `#error`, a missing `#endif`): the file is read to its end without them, and the earliest of these and what a
    # later stage finds is reported (`earliest`; docs/cli.md, "Errors").
    deferred: list = field(default_factory=list)

    def lookup(self, name: str, line: int) -> MacroDef | None:
        for m in self.macros.get(name, ()):
            if m.active_at(line):
                return m
        return None


_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def position(e: CompileError) -> tuple[int, int]:
    """Where an error is in the preprocessed text: (virtual line, column).  The preprocessor's
    own errors carry it (`vpos`: they are already placed in their real file and line); the
    other stages' are still at virtual lines."""
    return getattr(e, "vpos", None) or (e.line, e.col)


def earliest(errors: list[CompileError]) -> CompileError:
    """The first of several errors in source order (included files at their #include)."""
    return min(errors, key=position)


def strip_comments(source: str, filename: str) -> str:
    """Blank out // and /* */ comments, keeping newlines (and so every position)."""
    out: list[str] = []
    i, n = 0, len(source)
    line, col = 1, 1
    lines = source.split("\n")

    def err(l: int, c: int, msg: str) -> CompileError:
        return CompileError(filename, l, c, msg, lines[l - 1] if l - 1 < len(lines) else "")

    while i < n:
        ch = source[i]
        if ch == "/" and i + 1 < n and source[i + 1] == "/":
            j = source.find("\n", i)
            if j < 0:
                j = n
            out.append(" " * (j - i))
            col += j - i
            i = j
            continue
        if ch == "/" and i + 1 < n and source[i + 1] == "*":
            j = source.find("*/", i + 2)
            if j < 0:
                raise err(line, col, "unterminated /* comment")
            chunk = source[i:j + 2]
            for c in chunk:
                if c == "\n":
                    out.append("\n")
                    line += 1
                    col = 1
                else:
                    out.append(" ")
                    col += 1
            i = j + 2
            continue
        if ch in "\"'":
            # Copy a string/char literal verbatim so that '//' inside it is not a comment.
            j = i + 1
            while j < n and source[j] != ch and source[j] != "\n":
                j += 2 if source[j] == "\\" else 1
            j = min(j + 1, n) if j < n and source[j] == ch else j
            out.append(source[i:j])
            col += j - i
            i = j
            continue
        out.append(ch)
        if ch == "\n":
            line += 1
            col = 1
        else:
            col += 1
        i += 1
    return "".join(out)


def _splice(source: str) -> tuple[str, list[tuple[int, int, int]]]:
    """Translation phase 2: delete every backslash-newline.

    Returns the spliced text and its pieces: (offset in spliced text, physical line, physical
    column) at the start of every physical line's contribution.
    """
    phys = source.split("\n")
    out: list[str] = []
    pieces: list[tuple[int, int, int]] = []
    off = 0
    for k, ln in enumerate(phys):
        pieces.append((off, k + 1, 1))
        last = k + 1 == len(phys)
        cut = 0 if last else 1 if ln.endswith("\\") else 2 if ln.endswith("\\\r") else 0
        text = ln[:len(ln) - cut]
        out.append(text)
        off += len(text)
        if not cut and not last:
            out.append("\n")
            off += 1
    return "".join(out), pieces


class _State:
    def __init__(self, main: str, include_dirs: list[str]):
        self.main = main
        self.include_dirs = include_dirs
        self.out: list[str] = []
        self.out_len = 0
        self.result = Preprocessed("", {}, SourceMap())
        self.once: set[str] = set()

    def emit(self, s: str, newlines: int = 1) -> None:
        self.out.append(s)
        self.out.append("\n" * newlines)
        self.out_len += len(s) + newlines


def _error(st: _State, vl: int, col: int, msg: str) -> CompileError:
    loc = st.result.srcmap.locate(vl)
    e = CompileError(st.main, vl, col, msg, "") if loc is None else \
        CompileError(loc[0], loc[1], col, msg, loc[2])
    e.mapped = True  # already in the real file and line
    e.vpos = (vl, col)
    return e


def _process(st: _State, source: str, filename: str, depth: int) -> None:
    res = st.result
    smap = res.srcmap
    if source.startswith("\ufeff"):  # a UTF-8 byte-order mark: blank it, keeping columns
        source = " " + source[1:]
    phys_lines = source.split("\n")
    spliced, pieces = _splice(source)
    piece_offs = [p[0] for p in pieces]
    vmap: dict[int, int] = {}  # physical line -> virtual line, given in processing order

    def piece(off: int) -> tuple[int, int, int]:
        return pieces[max(bisect_right(piece_offs, off) - 1, 0)]

    def spos(off: int) -> tuple[int, int]:
        """Offset in the spliced text -> (virtual line, column)."""
        p_off, pl, pc = piece(off)
        return vmap[pl], pc + off - p_off

    # Comments are removed after splicing (phase 3); errors in that step carry spliced positions.
    try:
        text = strip_comments(spliced, filename)
    except CompileError as e:
        sl = spliced.split("\n")
        off = sum(len(x) + 1 for x in sl[:e.line - 1]) + e.col - 1
        p_off, pl, pc = piece(off)
        err = CompileError(filename, pl, pc + off - p_off, e.message, phys_lines[pl - 1])
        err.mapped = True
        raise err from None

    # Conditional stack entries: [active_now, any_branch_taken, parent_active, (vline, col)]
    cond: list[list] = []

    def active() -> bool:
        return all(c[0] for c in cond)

    off = 0  # offset of the current logical line in the spliced text
    for raw in text.split("\n"):
        line_off = off
        off += len(raw) + 1
        for pl in range(piece(line_off)[1], piece(line_off + len(raw))[1] + 1):
            if pl not in vmap:
                smap.vlines.append((filename, pl, phys_lines[pl - 1]))
                vmap[pl] = len(smap.vlines)
        first_vl = spos(line_off)[0]
        nphys = spos(line_off + len(raw))[0] - first_vl + 1
        stripped = raw.lstrip()
        if not stripped.startswith("#"):
            if active():
                out_off = st.out_len
                i = bisect_right(piece_offs, line_off) - 1
                while i < len(pieces) and pieces[i][0] <= line_off + len(raw):
                    smap.seg_off.append(out_off + max(pieces[i][0], line_off) - line_off)
                    smap.seg_pos.append(spos(max(pieces[i][0], line_off)))
                    i += 1
                st.emit(raw, nphys)
            else:
                st.emit("", nphys)
            continue
        st.emit("", nphys)  # the directive is blanked

        def lpos(idx: int, line_off=line_off) -> tuple[int, int]:
            return spos(line_off + idx)

        def lerr(idx: int, msg: str) -> CompileError:
            return _error(st, *lpos(idx), msg)

        _directive(st, raw, len(raw) - len(stripped), lpos, lerr, cond, active, filename, depth)
    if cond:
        res.deferred.append(_error(st, *cond[-1][3], "unterminated conditional directive (missing '#endif')"))


def _directive(st: _State, raw: str, hash_idx: int, lpos, lerr, cond: list, active,
               filename: str, depth: int) -> None:
    res = st.result
    body = raw[hash_idx + 1:]
    m = re.match(r"\s*([A-Za-z_]\w*)?", body)
    name = m.group(1) or ""
    name_idx = hash_idx + 1 + (m.start(1) if m.group(1) else 0)
    rest = body[m.end():]
    rest_idx = hash_idx + 1 + m.end() + (len(rest) - len(rest.lstrip()))
    rest = rest.strip()
    vline = lpos(hash_idx)[0]

    def sub_pos(o: int, base=rest_idx):
        return lpos(base + o)

    def sub_err(o: int, msg: str, base=rest_idx):
        return lerr(base + o, msg)

    if name in ("ifdef", "ifndef", "if"):
        if not active():
            cond.append([False, True, False, lpos(hash_idx)])
            return
        if name == "if":
            val = _eval_if(st, raw[rest_idx:], sub_pos, sub_err, vline, name, lerr, hash_idx)
        else:
            mm = _IDENT.match(rest)
            if not mm:
                raise lerr(rest_idx, f"'#{name}' needs a macro name")
            val = (res.lookup(mm.group(0), vline + 1) is not None) == (name == "ifdef")
        cond.append([val, val, True, lpos(hash_idx)])
        return
    if name in ("elif", "else", "endif"):
        if not cond:
            raise lerr(hash_idx, f"'#{name}' without '#if'")
        top = cond[-1]
        if name == "endif":
            cond.pop()
        elif name == "else":
            top[0] = top[2] and not top[1]
            top[1] = True
        else:
            if top[2] and not top[1]:
                val = _eval_if(st, raw[rest_idx:], sub_pos, sub_err, vline, name, lerr, hash_idx)
                top[0] = val
                top[1] = val
            else:
                top[0] = False
        return
    if not active():
        return
    if name == "":
        if body.strip() == "":
            return  # the null directive
        raise lerr(hash_idx, "expected a preprocessor directive after '#'")
    if name == "pragma":
        if rest.split() == ["once"]:
            st.once.add(os.path.realpath(filename))
        return
    if name == "include":
        _include(st, rest, rest_idx, lerr, vline, filename, depth)
        return
    if name == "define":
        define(res, raw[rest_idx:], vline, sub_err)
        return
    if name == "undef":
        mm = _IDENT.match(rest)
        if not mm:
            raise lerr(rest_idx, "'#undef' needs a macro name")
        prev = res.lookup(mm.group(0), vline + 1)
        if prev is not None:
            prev.end_line = vline
        return
    if name == "error":
        res.deferred.append(lerr(hash_idx, f"#error {rest}".rstrip()))
        return
    if name == "warning":
        return
    res.deferred.append(lerr(name_idx, f"preprocessor directive '#{name}' is not supported"))


def define(res: Preprocessed, text: str, vline: int, err) -> MacroDef:
    """Record `#define` (text: what follows 'define'); err(index in text, msg) -> CompileError."""
    mm = re.match(r"\s*([A-Za-z_]\w*)", text)
    if not mm:
        raise err(0, "'#define' needs a macro name")
    mname = mm.group(1)
    name_at = mm.start(1)
    if mname == "defined":
        raise err(name_at, "'defined' cannot be used as a macro name")
    after = mm.end()
    params = None
    variadic = False
    if text[after:after + 1] == "(":  # function-like: '(' right after the name
        close = text.find(")", after)
        if close < 0:
            raise err(after, f"missing ')' in the parameter list of macro '{mname}'")
        params = []
        plist = text[after + 1:close]
        if plist.strip():
            pos = after + 1
            for part in plist.split(","):
                p = part.strip()
                p_at = pos + len(part) - len(part.lstrip())
                pos += len(part) + 1
                if variadic:
                    raise err(p_at, f"'...' must be the last parameter of macro '{mname}'")
                if p == "...":
                    variadic = True
                    params.append("__VA_ARGS__")
                    continue
                if not _IDENT.fullmatch(p):
                    raise err(p_at, f"invalid parameter '{p}' in macro '{mname}'"
                              if p else f"missing parameter name in macro '{mname}'")
                if p in params:
                    raise err(p_at, f"duplicate parameter '{p}' in macro '{mname}'")
                params.append(p)
        after = close + 1
    body = text[after:].strip()
    body_idx = after + (len(text[after:]) - len(text[after:].lstrip()))
    m = MacroDef(mname, body, vline, params, variadic)
    prev = res.lookup(mname, vline + 1)
    if prev is not None:
        if prev.same_as(m):
            return prev
        first = "on the command line" if prev.line == 0 else f"on line {_phys_line(res, prev.line)}"
        raise err(name_at, f"macro '{mname}' redefined with a different value (first defined {first})")
    from .macros import check_body

    check_body(m, lambda o, msg: err(body_idx + o, msg))
    res.macros.setdefault(mname, []).append(m)
    return m


def _phys_line(res: Preprocessed, vline: int) -> int:
    loc = res.srcmap.locate(vline)
    return loc[1] if loc else vline


def _eval_if(st: _State, text: str, sub_pos, sub_err, vline: int, name: str, lerr,
             hash_idx: int) -> bool:
    from .macros import eval_if

    if not text.strip():
        raise lerr(hash_idx, f"'#{name}' with no expression")
    return eval_if(st.result, text, vline, sub_pos, sub_err, name)


def _include(st: _State, text: str, idx: int, lerr, vline: int, filename: str, depth: int) -> None:
    m = re.match(r'"([^"]*)"|<([^>]*)>', text)
    if not m:
        raise lerr(idx, "'#include' expects \"FILE\" or <FILE> (computed includes are not "
                        "supported)")
    quoted = m.group(1) is not None
    hname = m.group(1) if quoted else m.group(2)
    name_idx = idx + 1
    if hname in FP16_HEADERS:
        if st.result.fp16_line is None:
            st.result.fp16_line = vline
        return
    candidates = []
    if quoted:
        candidates.append(os.path.join(os.path.dirname(filename), hname))
    elif hname in BUILTIN_HEADERS:
        if hname in ("assert.h", "cassert") and st.result.lookup("NDEBUG", vline) is not None:
            # C's rule: with NDEBUG defined, assert(e) is nothing (sema_printf.py compiles it otherwise)
            define(st.result, "assert(e) do {} while (0)", vline, lambda o, msg: lerr(name_idx, msg))
        for text in HEADER_MACROS.get(hname, ()):
            define(st.result, text, vline, lambda o, msg, t=text: lerr(name_idx, f"{hname}: {msg}"))
        return
    candidates.extend(os.path.join(d, hname) for d in st.include_dirs)
    for path in candidates:
        if os.path.isfile(path):
            break
    else:
        if hname in BUILTIN_HEADERS:
            return
        base = os.path.basename(hname)
        if base in REJECTED_HEADERS or hname in REJECTED_HEADERS:
            st.result.deferred.append(lerr(name_idx, REJECTED_HEADERS.get(hname) or REJECTED_HEADERS[base]))
            return
        where = ", ".join(os.path.dirname(c) or "." for c in candidates) or "no -I directories"
        st.result.deferred.append(lerr(name_idx, f"cannot find '{hname}' (looked in: {where}); it is not one "
                                                 "of qgcc's built-in headers (docs/subset.md lists them)"))
        return
    if os.path.realpath(path) in st.once:
        return
    if depth >= MAX_INCLUDE_DEPTH:
        raise lerr(name_idx, f"#include nested more than {MAX_INCLUDE_DEPTH} deep (an include loop?)")
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise lerr(name_idx, f"cannot read '{hname}': {e.strerror or e}") from None
    try:
        src = data.decode("utf-8")
    except UnicodeDecodeError:
        # Published headers carry Latin-1 names in comments (rodinia's avilib.h); gcc and nvcc
        # read bytes.  One byte, one character: columns stay byte columns, and a non-ASCII
        # character outside a comment or string is still the lexer's error at its place.
        src = data.decode("latin-1")
    _process(st, src, os.path.normpath(path), depth + 1)


def preprocess(source: str, filename: str, include_dirs=(), defines=()) -> Preprocessed:
    """Preprocess `source` (the text of `filename`).

    include_dirs: the -I directories, searched after the including file's directory.
    defines: -D arguments, "NAME" (defined as 1) or "NAME=VALUE".
    Errors that need not stop it are returned in `.deferred`, not raised: a caller reports the
    earliest of them and its own (firsterror.front_end, parser.parse).
    """
    st = _State(filename, list(include_dirs))
    res = st.result
    given = {d.partition("=")[0] for d in defines}
    for name, value in PREDEFINED.items():
        if name not in given:
            define(res, f"{name} {value}", 0, None)
    for d in defines:
        name, eq, value = d.partition("=")

        def derr(o: int, msg: str, d=d) -> CompileError:
            return CompileError("<command line>", 1, 1, f"-D {d}: {msg}", "")

        define(res, f"{name} {value if eq else '1'}", 0, derr)
    try:
        _process(st, source, filename, 0)
    except CompileError as e:
        if res.deferred and hasattr(e, "vpos"):
            raise earliest(res.deferred + [e]) from None
        raise
    text = "".join(st.out)
    res.text = text[:-1] if text.endswith("\n") else text
    return res
