"""Enumerations, lowered on the token stream to integer constants and a typedef.

An enumerator is a named integer constant and an enum type is its underlying integer type
(int unless written `enum E : unsigned {...}`), so this pass (after macro expansion, before
parsing) rewrites, at file scope or in a function body,

* `enum E { A, B = 5, C };` into `const int A = 0; const int B = (5); const int C = B + 1;
  typedef int E;` (each enumerator without a value is the previous one plus one, as C++ says);
* `enum class E { A, B };` (scoped) the same, its enumerators named `E::A` and `E::B` (one
  token: `E::A` in the source becomes that name, so it is reported as written);
* `typedef enum { ... } E;` and `enum E {...} x;` into the constants, then the typedef or the
  declaration of `x` with the underlying type; `enum E x;` (C style) into `E x;`.

Scoped enums convert to int without a cast here (a wider rule than C++'s, which changes no
valid program).  An enum inside a struct or class body becomes `static const` members, class
constants (structsema.class_constant), and later uses of its name its underlying type.
"""

from __future__ import annotations

from lark import Token

from .ctors import _v


class Lowering:
    def __init__(self, lex, error):
        self.lex = lex
        self.error = error  # (token, message) -> exception
        self.enums: dict[str, bool] = {}  # enum name -> scoped
        self.member_tags: dict[str, str] = {}  # a member enum's name -> its underlying type

    def emit(self, text: str, at: Token) -> list[Token]:
        return [Token(t.type, t.value, start_pos=at.start_pos, line=at.line, column=at.column,
                      end_line=at.end_line, end_column=at.end_column, end_pos=at.end_pos)
                for t in self.lex(text)]

    @staticmethod
    def name(value: str, at: Token) -> Token:
        return Token("NAME", value, start_pos=at.start_pos, line=at.line, column=at.column,
                     end_line=at.end_line, end_column=at.end_column, end_pos=at.end_pos)

    def run(self, toks):
        """Lazily (errors keep their order): tokens are read ahead only as far as an enum needs."""
        toks = _Lazy(toks)
        out: list[Token] = []
        braces: list[bool] = []  # per open '{': is it a struct/class body
        head: list[Token] = []  # tokens since the last ';', '{' or '}' (for what a '{' opens)
        i = 0
        while toks.has(i):
            t = toks[i]
            v = _v(t)
            if v == "enum" and t.type == "NAME":
                typedef = bool(out) and _v(out[-1]) == "typedef"
                if typedef:
                    out.pop()
                i = self.enum(toks, i, out, typedef, member=bool(braces and braces[-1]))
                head = []
                continue
            if t.type == "NAME" and v in self.member_tags and not (toks.has(i + 1) and _v(toks[i + 1]) == ":"):
                out.extend(self.emit(self.member_tags[v], t))  # `Mode m;`: a member enum's type
                i += 1
                continue
            if t.type == "NAME" and v in self.enums and toks.has(i + 3) and _v(toks[i + 1]) == ":" \
                    == _v(toks[i + 2]) and toks[i + 3].type == "NAME":
                out.append(self.name(f"{v}::{toks[i + 3].value}" if self.enums[v] else toks[i + 3].value, t))
                i += 4
                continue
            if v == "{":
                words = [_v(x) for x in head]
                braces.append(any(w in ("struct", "class", "union") for w in words)
                              and "(" not in words and "=" not in words)
                head = []
            elif v == "}":
                if braces:
                    braces.pop()
                head = []
            elif v == ";":
                head = []
            else:
                head.append(t)
            out.append(t)
            i += 1
            if len(out) > 1:  # (a `typedef` just before an enum is taken back)
                yield from out[:-1]
                del out[:-1]
                toks.drop(i)
                i = 0
        yield from out

    def enum(self, toks: list, i: int, out: list, typedef: bool, member: bool = False) -> int:
        """Lower the enum at toks[i] into out; returns the index after what it consumed.  In a
        struct or class body (member) its enumerators are class constants, `static const int`."""
        kw = toks[i]
        j = i + 1
        scoped = toks.has(j) and _v(toks[j]) in ("class", "struct")
        if scoped:
            j += 1
        tag = None
        if toks.has(j) and toks[j].type == "NAME":
            tag = toks[j].value
            j += 1
        under = "int"
        if toks.has(j) and _v(toks[j]) == ":":
            k = j + 1
            while toks.has(k) and _v(toks[k]) not in ("{", ";"):
                k += 1
            under = " ".join(x.value for x in toks[j + 1:k]) or "int"
            j = k
        if not toks.has(j) or _v(toks[j]) != "{":
            if tag is None:
                raise self.error(kw, "expected '{' after 'enum'")
            if tag not in self.enums:
                raise self.error(kw, f"'enum {tag}' is not declared before this use")
            if toks.has(j) and _v(toks[j]) == ";":
                return j + 1  # a repeated declaration, `enum E : int;`
            if typedef:
                out.extend(self.emit("typedef", kw))
            if tag in self.member_tags:
                out.extend(self.emit(self.member_tags[tag], toks[j - 1]))
            else:
                out.append(self.name(tag, toks[j - 1]))
            return j
        close = j + 1
        depth = 0
        while toks.has(close) and not (depth == 0 and _v(toks[close]) == "}"):
            depth += {"(": 1, "[": 1, "{": 1, ")": -1, "]": -1, "}": -1}.get(_v(toks[close]) or "", 0)
            close += 1
        if not toks.has(close):
            raise self.error(kw, "unterminated enum: expected '}'")
        names: list[str] = []
        prev = None
        for item in _split(toks[j + 1:close]):
            if not item:
                continue
            at = item[0]
            if at.type != "NAME":
                raise self.error(at, f"expected an enumerator name, got '{at.value}'")
            full = f"{tag}::{at.value}" if scoped and tag else at.value
            out.extend(self.emit(f"{'static ' if member else ''}const {under}", at))
            out.append(self.name(full, at))
            out.extend(self.emit("=", at))
            if len(item) > 1:
                if _v(item[1]) != "=" or len(item) < 3:
                    raise self.error(item[1], "expected '=', ',' or '}' after an enumerator")
                out.extend(self.emit("(", at))
                out.extend(self.name(f"{tag}::{x.value}", x) if scoped and tag and x.type == "NAME"
                           and x.value in names else x for x in item[2:])
                out.extend(self.emit(");", at))
            elif prev is None:
                out.extend(self.emit("0;", at))
            else:
                out.append(self.name(prev, at))
                out.extend(self.emit("+ 1;", at))
            names.append(at.value)
            prev = full
        if tag is not None and member:
            self.enums[tag] = scoped
            self.member_tags[tag] = under  # (a typedef has no place in a class body)
        elif tag is not None:
            self.enums[tag] = scoped
            out.extend(self.emit(f"typedef {under}", kw))
            out.append(self.name(tag, kw))
            out.extend(self.emit(";", kw))
        j = close + 1
        if toks.has(j) and _v(toks[j]) == ";" and not typedef:
            return j + 1
        out.extend(self.emit(("typedef " if typedef else "") + under, kw))
        return j


class _Lazy:
    """A token iterator read as a list: indexing and len() pull tokens as far as they look."""

    def __init__(self, it):
        self.it = iter(it)
        self.buf: list = []
        self.done = False

    def _fill(self, n: int) -> None:
        while not self.done and len(self.buf) < n:
            t = next(self.it, None)
            if t is None:
                self.done = True
            else:
                self.buf.append(t)

    def __getitem__(self, k):
        if isinstance(k, slice):
            self._fill(k.stop if k.stop is not None else 1 << 62)
            return self.buf[k]
        self._fill(k + 1)
        return self.buf[k]

    def has(self, i: int) -> bool:
        self._fill(i + 1)
        return i < len(self.buf)

    def drop(self, n: int) -> None:
        del self.buf[:n]


def _split(toks: list) -> list[list]:
    out, cur, depth = [], [], 0
    for t in toks:
        v = _v(t)
        if v in ("(", "[", "{"):
            depth += 1
        elif v in (")", "]", "}"):
            depth -= 1
        if v == "," and depth == 0:
            out.append(cur)
            cur = []
        else:
            cur.append(t)
    out.append(cur)
    return out
