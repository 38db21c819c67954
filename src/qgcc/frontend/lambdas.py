"""Lambdas called in the function that defines them, lowered on the token stream to function
templates (cuda-samples' shfl_scan: `auto at = [&result](unsigned i) -> const uint4 {...};`).

`auto NAME = [CAPTURES](PARAMS) -> RET { BODY };` in a function body becomes, before the item
that holds it (at file scope),

    template <typename C0, ...> __device__ RET NAME'(PARAMS, C0 &x, C1 y) { BODY }

with one parameter per capture (`&x` by reference, `y` by value: a copy, which C++ does not let
the body change), the captures' types (pointers too) deduced at the call; each later `NAME(ARGS)` in that block calls
`NAME'(ARGS, x, y)`.  The lambda is inlined as any device function.  Default captures (`[&]`,
`[=]`), a missing return type, a lambda used other than called and a by-value capture assigned
after the lambda (the call passes its value then, not the one captured) are named errors.
"""

from __future__ import annotations

from lark import Token

from .ctors import _v

PREFIX = "__qg_lambda_"
CHANGES = frozenset({"=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>=", "++", "--"})


def ends_operand(t: Token) -> bool:
    """Whether t can end an operand, so that a '&' after it is binary."""
    return t.type in ("NAME", "INTLIT", "FLOATLIT", "CHARLIT") or _v(t) in (")", "]")


class Lowering:
    def __init__(self, lex, error):
        self.lex = lex
        self.error = error  # (token, message) -> exception
        self.count = 0

    def emit(self, text: str, at: Token) -> list[Token]:
        return [Token(t.type, t.value, start_pos=at.start_pos, line=at.line, column=at.column,
                      end_line=at.end_line, end_column=at.end_column, end_pos=at.end_pos)
                for t in self.lex(text)]

    def run(self, toks):
        """Tokens of a file-scope item are held until it ends, so that the functions its lambdas
        become are written before it."""
        toks = iter(toks)
        item: list[Token] = []
        pending: list[Token] = []
        live: list[tuple[str, str, list[str], int]] = []  # (name, function, capture names, depth)
        copies: dict[str, str] = {}  # a by-value capture -> its lambda, while that lambda is live
        depth = 0
        parens = 0
        calls: list[tuple[int, list[str]]] = []  # open calls of lambdas: (paren depth, captures)
        look: list[Token] = []

        def nxt():
            return look.pop(0) if look else next(toks, None)

        while True:
            t = nxt()
            if t is None:
                break
            v = _v(t)
            if depth > 0 and v == "auto":
                more = [nxt() for _ in range(3)]
                look[:0] = [x for x in more if x is not None]
                if len(look) >= 3 and look[0].type == "NAME" and _v(look[1]) == "=" and _v(look[2]) == "[":
                    name = look[0]
                    del look[:3]
                    fn, caps, vals = self.lambda_(name, nxt, pending)
                    live.append((name.value, fn, caps, depth))
                    copies.update((c, name.value) for c in vals)
                    continue
            if t.type == "NAME" and t.value in copies:
                if not look:
                    ahead = next(toks, None)
                    look.extend([ahead] if ahead is not None else [])
                after = look[0] if look else None
                before = _v(item[-1]) if item else None
                if before == "&" and len(item) > 1 and ends_operand(item[-2]):
                    before = None  # `m & x` is a bitwise and, not x's address
                if (after is not None and _v(after) in CHANGES) or before in ("++", "--", "&"):
                    raise self.error(t, f"'{t.value}' is captured by value by the lambda "
                                        f"'{copies[t.value]}' and changed after it; capture a const "
                                        "copy made before the lambda")
            if t.type == "NAME" and any(n == t.value for n, *_ in live):
                n, fn, caps, _ = next(x for x in reversed(live) if x[0] == t.value)
                p = nxt()
                if p is None or _v(p) != "(":
                    raise self.error(t, f"the lambda '{n}' is supported only when called in the block "
                                        f"that defines it ('{n}(...)')")
                item.append(Token("NAME", fn, start_pos=t.start_pos, line=t.line, column=t.column,
                                  end_line=t.end_line, end_column=t.end_column, end_pos=t.end_pos))
                item.append(p)
                parens += 1
                calls.append((parens, caps))
                continue
            if v == "(":
                parens += 1
            elif v == ")":
                if calls and calls[-1][0] == parens:
                    caps = calls.pop()[1]
                    if caps:  # the captures after the call's own arguments
                        item.extend(self.emit(("" if _v(item[-1]) == "(" else ",") + ", ".join(caps), t))
                parens -= 1
            item.append(t)
            if v == "{":
                depth += 1
            elif v == "}":
                depth -= 1
                live = [x for x in live if x[3] <= depth]
                names = {x[0] for x in live}
                copies = {c: n for c, n in copies.items() if n in names}
            if depth == 0 and v in (";", "}"):
                yield from pending
                yield from item
                pending, item = [], []
        yield from pending
        yield from item

    @staticmethod
    def until_close(nxt, at: Token) -> tuple[list[Token], Token]:
        """The tokens up to the ')' matching an opened '(' (consumed), and that ')'."""
        out: list[Token] = []
        depth = 0
        while True:
            t = nxt()
            if t is None:
                return out, at
            v = _v(t)
            if v in ("(", "[", "{"):
                depth += 1
            elif v in (")", "]", "}"):
                if depth == 0:
                    return out, t
                depth -= 1
            out.append(t)

    def lambda_(self, name: Token, nxt, pending: list) -> tuple[str, list[str], list[str]]:
        """Read `CAPTURES](PARAMS) -> RET { BODY };` (after `auto NAME = [`) and write its function
        into pending; returns the function's name, the capture names and the by-value ones."""
        caps, close = self.until_close(nxt, name)
        refs: list[tuple[bool, Token]] = []
        k = 0
        while k < len(caps):
            by_ref = _v(caps[k]) == "&"
            if by_ref:
                k += 1
            if k >= len(caps) or caps[k].type != "NAME":
                raise self.error(caps[k - 1] if by_ref else caps[k],
                                 "default lambda captures ('[&]', '[=]') are not supported; name what "
                                 "the lambda captures ('[&x, y]')")
            refs.append((by_ref, caps[k]))
            k += 1
            if k < len(caps):
                if _v(caps[k]) != ",":
                    raise self.error(caps[k], "expected ',' or ']' in a lambda's captures")
                k += 1
        p = nxt()
        if p is None or _v(p) != "(":
            raise self.error(name, "expected '(' after a lambda's captures (write its parameters)")
        params, _ = self.until_close(nxt, p)
        t = nxt()
        if t is not None and _v(t) == "mutable":
            t = nxt()
        ret: list[Token] = []
        if t is not None and _v(t) == "-" :
            t2 = nxt()
            if t2 is None or _v(t2) != ">":
                raise self.error(t, "expected '->' or '{' after a lambda's parameters")
            t = nxt()
            while t is not None and _v(t) != "{":
                ret.append(t)
                t = nxt()
        elif t is not None and _v(t) == "->":
            t = nxt()
            while t is not None and _v(t) != "{":
                ret.append(t)
                t = nxt()
        if t is None or _v(t) != "{":
            raise self.error(name, "expected '{' (the lambda's body)")
        if not ret:
            raise self.error(name, f"a lambda without a return type is not supported; write it "
                                   f"('[...](...) -> int {{...}}') for '{name.value}'")
        body, end = [t], None
        depth = 1
        while depth:
            b = nxt()
            if b is None:
                raise self.error(name, "unterminated lambda body: expected '}'")
            body.append(b)
            depth += {"{": 1, "}": -1}.get(_v(b) or "", 0)
        semi = nxt()
        if semi is None or _v(semi) != ";":
            raise self.error(name, f"expected ';' after the lambda '{name.value}'")
        self.count += 1
        fn = f"{PREFIX}{name.value}_{self.count}"
        out: list[Token] = []
        if refs:
            out += self.emit("template <" + ", ".join(f"typename {PREFIX}C{i}" for i in range(len(refs))) + ">",
                             name)
        out += self.emit("__device__", name)
        out += ret
        out.append(Token("NAME", fn, start_pos=name.start_pos, line=name.line, column=name.column,
                         end_line=name.end_line, end_column=name.end_column, end_pos=name.end_pos))
        out += self.emit("(", name) + params
        for i, (by_ref, c) in enumerate(refs):
            out += self.emit(("," if params or i else "") + f"{PREFIX}C{i} " + ("&" if by_ref else ""), c)
            out.append(c)
        out += self.emit(")", name) + body
        pending.extend(out)
        return fn, [c.value for _, c in refs], [c.value for r, c in refs if not r]
