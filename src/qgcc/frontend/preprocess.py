"""The preprocessor: comments, directives and object-like macro definitions.

Works line-preserving: every comment and directive is replaced by blanks, so a
line/column in the output is the same line/column in the user's file.  Macros
are not substituted here; `parser.py` expands them on the token stream (placing
expanded tokens at the macro use), which keeps every diagnostic's position true.

Supported directives: `#define NAME value` (object-like; function-like macros
are rejected), `#undef`, `#ifdef`/`#ifndef`/`#if`/`#elif`/`#else`/`#endif` (the
`#if`/`#elif` condition must be an integer literal, a macro that expands to one,
or `defined(NAME)`, optionally negated with `!`), `#error`; `#include` and
`#pragma` lines are ignored.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..diagnostics import CompileError


@dataclass
class MacroDef:
    name: str
    body: str  # replacement text (may be empty)
    line: int  # line of the #define
    body_col: int  # 1-based column where the body starts (for lexing errors)
    end_line: int | None = None  # line of the #undef that ends it

    def active_at(self, line: int) -> bool:
        return self.line < line and (self.end_line is None or line < self.end_line)


@dataclass
class Preprocessed:
    text: str
    macros: dict[str, list[MacroDef]] = field(default_factory=dict)

    def lookup(self, name: str, line: int) -> MacroDef | None:
        for m in self.macros.get(name, ()):
            if m.active_at(line):
                return m
        return None


_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


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


def preprocess(source: str, filename: str) -> Preprocessed:
    orig_lines = source.split("\n")
    if source.startswith("\ufeff"):  # a UTF-8 byte-order mark: blank it, keeping columns
        source = " " + source[1:]
    text = strip_comments(source, filename)
    lines = text.split("\n")
    macros: dict[str, list[MacroDef]] = {}
    result = Preprocessed("", macros)

    def err(lineno: int, col: int, msg: str) -> CompileError:
        src = orig_lines[lineno - 1] if 0 < lineno <= len(orig_lines) else ""
        return CompileError(filename, lineno, col, msg, src)

    # Conditional stack: (active_now, any_branch_taken, parent_active, line, col)
    cond: list[list] = []

    def active() -> bool:
        return all(c[0] for c in cond)

    def eval_condition(expr: str, lineno: int, col: int) -> bool:
        e = expr.strip()
        neg = False
        while e.startswith("!"):
            neg = not neg
            e = e[1:].strip()
        m = re.fullmatch(r"defined\s*\(\s*([A-Za-z_]\w*)\s*\)|defined\s+([A-Za-z_]\w*)", e)
        if m:
            name = m.group(1) or m.group(2)
            val = result.lookup(name, lineno + 1) is not None
            return val != neg
        seen = set()
        while _IDENT.fullmatch(e) and e not in seen:
            seen.add(e)
            d = result.lookup(e, lineno + 1)
            if d is None:
                e = "0"  # C: an unknown identifier in #if is 0
                break
            e = d.body.strip()
        m = re.fullmatch(r"(0[xX][0-9a-fA-F]+|[0-9]+)[uU]?", e)
        if not m:
            raise err(lineno, col, "'#if' condition must be an integer literal, a macro or "
                                   "defined(NAME); expressions are not supported")
        digits = m.group(1)
        if digits[:2] in ("0x", "0X"):
            value = int(digits, 16)
        elif digits.startswith("0") and len(digits) > 1:
            if not re.fullmatch(r"[0-7]+", digits):
                raise err(lineno, col, f"invalid octal literal '{digits}'")
            value = int(digits, 8)
        else:
            value = int(digits)
        return (value != 0) != neg

    i = 0
    while i < len(lines):
        raw = lines[i]
        lineno = i + 1
        stripped = raw.lstrip()
        if not stripped.startswith("#"):
            if not active():
                lines[i] = ""
            i += 1
            continue
        hash_col = len(raw) - len(stripped) + 1
        # Join continuation lines (backslash-newline) into this directive.
        full = raw
        j = i
        while full.endswith("\\") and j + 1 < len(lines):
            full = full[:-1] + " " + lines[j + 1]
            j += 1
        for k in range(i, j + 1):
            lines[k] = ""
        i = j + 1
        body = full[hash_col:]  # after '#'
        m = re.match(r"\s*([A-Za-z_]\w*)?", body)
        name = m.group(1) or ""
        name_col = hash_col + 1 + (m.start(1) if m.group(1) else 0)
        rest = body[m.end():]
        # 1-based column of the first non-blank character after the directive name
        rest_start = hash_col + 1 + m.end() + (len(rest) - len(rest.lstrip()))
        if name in ("ifdef", "ifndef", "if"):
            if not active():
                cond.append([False, True, False, lineno, hash_col])
                continue
            if name == "if":
                val = eval_condition(rest, lineno, rest_start)
            else:
                mm = _IDENT.match(rest.strip())
                if not mm:
                    raise err(lineno, rest_start, f"'#{name}' needs a macro name")
                val = (result.lookup(mm.group(0), lineno + 1) is not None) == (name == "ifdef")
            cond.append([val, val, True, lineno, hash_col])
            continue
        if name in ("elif", "else", "endif"):
            if not cond:
                raise err(lineno, hash_col, f"'#{name}' without '#if'")
            top = cond[-1]
            if name == "endif":
                cond.pop()
            elif name == "else":
                top[0] = top[2] and not top[1]
                top[1] = True
            else:
                if top[2] and not top[1]:
                    val = eval_condition(rest, lineno, rest_start)
                    top[0] = val
                    top[1] = val
                else:
                    top[0] = False
            continue
        if not active():
            continue
        if name == "":
            if body.strip() == "":
                continue  # the null directive
            raise err(lineno, hash_col, "expected a preprocessor directive after '#'")
        if name in ("include", "pragma"):
            continue
        if name == "define":
            mm = re.match(r"\s*([A-Za-z_]\w*)", rest)
            if not mm:
                raise err(lineno, rest_start, "'#define' needs a macro name")
            mname = mm.group(1)
            after = rest[mm.end():]
            rest_start -= mm.start(1)  # make column arithmetic below relative to `rest`
            if after.startswith("("):
                raise err(lineno, rest_start + mm.start(1),
                          f"function-like macros are not supported ('{mname}'); "
                          "use a __device__ function")
            mbody = after.strip()
            body_col = rest_start + mm.end() + (len(after) - len(after.lstrip()))
            prev = result.lookup(mname, lineno + 1)
            if prev is not None:
                if prev.body.split() == mbody.split():
                    continue
                raise err(lineno, rest_start + mm.start(1),
                          f"macro '{mname}' redefined with a different value "
                          f"(first defined on line {prev.line})")
            macros.setdefault(mname, []).append(MacroDef(mname, mbody, lineno, body_col))
            continue
        if name == "undef":
            mm = re.match(r"\s*([A-Za-z_]\w*)", rest)
            if not mm:
                raise err(lineno, rest_start, "'#undef' needs a macro name")
            prev = result.lookup(mm.group(1), lineno + 1)
            if prev is not None:
                prev.end_line = lineno
            continue
        if name == "error":
            raise err(lineno, hash_col, f"#error {rest.strip()}".rstrip())
        raise err(lineno, name_col, f"preprocessor directive '#{name}' is not supported")
    if cond:
        raise err(cond[-1][3], cond[-1][4], "unterminated conditional directive (missing '#endif')")
    result.text = "\n".join(lines)
    return result
