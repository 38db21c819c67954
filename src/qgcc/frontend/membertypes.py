"""Member types of class templates named from outside: `typename vec3<T>::Type` (nbody's
bodysystem.h picks float3 or double3 so), lowered on the token stream.

The subset has no `::` in types, so this pass (after enums, before classification) writes
`typename X<ARGS>::NAME` as the one name `X::NAME` followed by `<ARGS>`: the grammar reads it as a
class template instance, and sema (structsema.class_instance) instantiates `X<ARGS>` and takes
its member typedef NAME.  Any other `typename` is left for the token stream's usual error.
"""

from __future__ import annotations

from lark import Token

LOOKAHEAD = 64  # tokens read ahead past `typename` at most (template argument lists are short)


def _v(t) -> str | None:
    return t.value if t.type not in ("STRLIT", "CHARLIT") else None


def _close(buf: list, i: int) -> int | None:
    """The index of the '>' that closes the '<' at buf[i], or None (a '>>' closes two; then the
    pattern is left alone: `A<B<int>>::T` is rare)."""
    depth = 0
    paren = 0
    for k in range(i, len(buf)):
        v = _v(buf[k])
        if v in ("(", "["):
            paren += 1
        elif v in (")", "]"):
            paren -= 1
        elif paren == 0 and v == "<":
            depth += 1
        elif paren == 0 and v == ">":
            depth -= 1
            if depth == 0:
                return k
        elif v in (";", "{", "}", ">>"):
            return None
    return None


def _fill(buf: list, it) -> None:
    """Read ahead into buf up to the end of the statement or block head (LOOKAHEAD tokens at most)."""
    while len(buf) < LOOKAHEAD:
        n = next(it, None)
        if n is None:
            return
        buf.append(n)
        if _v(n) in (";", "{", "}"):
            return


def _scope(buf: list, k: int) -> bool:
    """Whether buf[k], buf[k + 1] are an adjacent `::` followed by a name."""
    return k + 2 < len(buf) and _v(buf[k]) == ":" == _v(buf[k + 1]) and buf[k + 2].type == "NAME" \
        and (buf[k].line, buf[k].column + 1) == (buf[k + 1].line, buf[k + 1].column)


def _name(x: Token, text: str) -> Token:
    """A NAME token spelling `text` at x's place (a qualified name as one token)."""
    return Token("NAME", text, start_pos=x.start_pos, line=x.line, column=x.column, end_line=x.end_line,
                 end_column=x.end_column, end_pos=x.end_pos)


def run(toks):
    it = iter(toks)
    buf: list = []
    while True:
        if not buf:
            t = next(it, None)
            if t is None:
                return
            buf.append(t)
        t = buf[0]
        if not (t.type == "NAME" and t.value == "typename"):
            yield buf.pop(0)
            continue
        _fill(buf, it)
        k = _close(buf, 2) if len(buf) > 2 and buf[1].type == "NAME" and _v(buf[2]) == "<" else None
        if k is None or not _scope(buf, k + 1):
            yield buf.pop(0)  # the usual error ("'typename' is supported only in ...")
            continue
        yield _name(buf[1], f"{buf[1].value}::{buf[k + 3].value}")
        yield from buf[2:k + 1]
        del buf[:k + 4]
