"""Macro expansion on the token stream, and `#if` expressions.

The algorithm is the one the C standard describes (Prosser's, with hide sets):
every token carries the set of macro names it came out of, and a name is not
expanded again inside its own expansion, so recursive macros terminate.
Function-like macros take their arguments from the tokens that follow,
argument tokens are macro-expanded before substitution except next to `#` and
`##`, `#x` makes a string literal of the argument's spelling, `a ## b` pastes
two tokens into one, `__VA_ARGS__` holds the arguments of `...`.

Positions: a token of a macro body is placed at the macro name of the
outermost use (so a diagnostic points at the use); a token of an argument
keeps its own position.
"""

from __future__ import annotations

from collections import deque

from lark import Token
from lark.exceptions import UnexpectedCharacters

from .grammar import get_lark

# Pseudo token types for '#' and '##' inside macro bodies (the grammar has no such terminals).
HASH = "PP_HASH"
HASHHASH = "PP_HASHHASH"
MAX_TOKENS = 100_000  # expansion output limit (guards against exponential macros)


def _lark():
    return get_lark()


def pp_lex(text: str, err):
    """Tokens of `text` with '#'/'##' as HASH/HASHHASH; err(index, msg) -> CompileError.

    Token positions are the index in `text` (start_pos); line/column are left to the caller.
    """
    toks: list[Token] = []
    i, n = 0, len(text)
    start = 0

    def lex_chunk(a: int, b: int) -> None:
        chunk = text[a:b]
        if not chunk.strip():
            return
        try:
            for t in _lark().lex(chunk):
                toks.append(Token(t.type, t.value, start_pos=a + t.start_pos, line=1,
                                  column=a + t.start_pos + 1, end_pos=a + t.end_pos))
        except UnexpectedCharacters as e:
            p = a + e.pos_in_stream
            ch = text[p] if p < n else "?"
            if ch in "\"'":
                raise err(p, f"missing terminating {ch} character") from None
            shown = ch if ch.isprintable() and not ch.isspace() else f"U+{ord(ch):04X}"
            raise err(p, f"unexpected character '{shown}'") from None

    while i < n:
        ch = text[i]
        if ch in "\"'":
            j = i + 1
            while j < n and text[j] != ch:
                j += 2 if text[j] == "\\" else 1
            i = j + 1
            continue
        if ch == "#":
            lex_chunk(start, i)
            two = text[i:i + 2] == "##"
            toks.append(Token(HASHHASH if two else HASH, "##" if two else "#", start_pos=i,
                              line=1, column=i + 1, end_pos=i + (2 if two else 1)))
            i += 2 if two else 1
            start = i
            continue
        i += 1
    lex_chunk(start, n)
    return toks


def check_body(m, err) -> None:
    """Lex a macro body at its #define and check the placement of '#' and '##'."""
    try:
        toks = pp_lex(m.body, err)
    except Exception as e:  # a bad character: reported when (and if) the macro is used
        m.tokens = e
        return
    for i, t in enumerate(toks):
        if t.type == HASHHASH and (i == 0 or i == len(toks) - 1):
            raise err(t.start_pos, f"'##' cannot appear at either end of macro '{m.name}'")
        if t.type == HASH and m.params is not None:
            nxt = toks[i + 1] if i + 1 < len(toks) else None
            if nxt is None or nxt.type != "NAME" or nxt.value not in m.params:
                raise err(t.start_pos, f"'#' is not followed by a macro parameter in macro "
                                       f"'{m.name}'")
    m.tokens = toks


def _at(t: Token, where: Token, type_: str | None = None, value: str | None = None) -> Token:
    return Token(type_ or t.type, t.value if value is None else value, start_pos=where.start_pos,
                 line=where.line, column=where.column, end_line=where.end_line,
                 end_column=where.end_column, end_pos=where.end_pos)


def _spelling(toks: list[Token]) -> str:
    out = []
    prev = None
    for t in toks:
        if prev is not None and (t.start_pos != prev.end_pos or t.line != prev.line):
            out.append(" ")
        out.append(t.value)
        prev = t
    return "".join(out)


class Expander:
    """Expands macros in a token iterator.

    lookup(name, line) -> MacroDef | None gives the macro active at a line;
    error(token, msg) -> CompileError.
    """

    def __init__(self, lookup, error):
        self.lookup = lookup
        self.error = error
        self.count = 0

    def expand(self, tokens):
        """Yields the tokens of the iterator with every macro expanded."""
        for t, _ in self._run(iter((t, frozenset()) for t in tokens)):
            yield t

    def _run(self, src):
        pending: deque = deque()

        def nxt():
            if pending:
                return pending.popleft()
            return next(src, None)

        while True:
            item = nxt()
            if item is None:
                return
            tok, hs = item
            if tok.type == "NAME" and tok.value not in hs:
                m = self.lookup(tok.value, tok.line)
                if m is not None:
                    if m.params is None:
                        out = self._subst(m, tok, None, hs | {m.name})
                    else:
                        peek = nxt()
                        if peek is None or peek[0].value != "(" or peek[0].type in ("STRLIT", "CHARLIT"):
                            if peek is not None:
                                pending.appendleft(peek)
                            yield tok, hs
                            continue
                        args, rp_hs = self._collect(m, tok, nxt)
                        out = self._subst(m, tok, args, (hs & rp_hs) | {m.name})
                    self.count += len(out)
                    if self.count > MAX_TOKENS:
                        raise self.error(tok, f"macro expansion of '{m.name}' is too large")
                    pending.extendleft(reversed(out))
                    continue
            yield tok, hs

    def _collect(self, m, name_tok: Token, nxt):
        """The arguments after '(' (already read): lists of (token, hideset)."""
        args: list[list] = [[]]
        depth = 1
        while True:
            item = nxt()
            if item is None:
                raise self.error(name_tok, f"unterminated argument list invoking macro '{m.name}'")
            t = item[0]
            v = t.value if t.type not in ("STRLIT", "CHARLIT") else None
            if v == "(":
                depth += 1
            elif v == ")":
                depth -= 1
                if depth == 0:
                    break
            elif v == "," and depth == 1 and not (m.variadic and len(args) == len(m.params)):
                args.append([])
                continue
            args[-1].append(item)
        if len(args) == 1 and not args[0] and len(m.params) == 0:
            args = []
        if m.variadic and len(args) == len(m.params) - 1:
            args.append([])
        if len(args) != len(m.params):
            want = len(m.params) - (1 if m.variadic else 0)
            more = " or more" if m.variadic else ""
            raise self.error(name_tok, f"macro '{m.name}' takes {want}{more} argument"
                                       f"{'s' if want != 1 or more else ''}, {len(args)} given")
        return args, item[1]

    def _body(self, m, at: Token) -> list[Token]:
        if isinstance(m.tokens, Exception):  # a bad character in the body, placed at the #define
            e = m.tokens
            if not e.message.endswith(f"in macro '{m.name}'"):
                e.message += f" in macro '{m.name}'"
            raise e
        return m.tokens

    def _subst(self, m, use: Token, args, hs: frozenset) -> list:
        body = self._body(m, use)
        params = m.params
        out: list = []  # (token, hideset) or None (a placemarker)
        expanded: dict[int, list] = {}

        def param(t: Token):
            if params is not None and t.type == "NAME" and t.value in params:
                return params.index(t.value)
            return None

        def arg_expanded(j: int) -> list:
            if j not in expanded:
                expanded[j] = list(self._run(iter(args[j])))
            return expanded[j]

        i = 0
        while i < len(body):
            t = body[i]
            if t.type == HASH and params is not None:
                j = param(body[i + 1])
                out.append((self._stringize(args[j], use), hs))
                i += 2
                continue
            if t.type == HASHHASH:
                nt = body[i + 1]
                j = param(nt)
                if j is not None:
                    operand = [(a, h) for a, h in args[j]]
                elif nt.type == HASH and params is not None:
                    operand = [(self._stringize(args[param(body[i + 2])], use), hs)]
                    i += 1
                else:
                    operand = [(_at(nt, use), frozenset())]
                i += 2
                left = out.pop() if out else None
                if not operand:
                    out.append(left)
                    continue
                if left is None:
                    out.extend(operand)
                    continue
                out.append((self._paste(left[0], operand[0][0], use, m), frozenset()))
                out.extend(operand[1:])
                continue
            j = param(t)
            if j is not None:
                if i + 1 < len(body) and body[i + 1].type == HASHHASH:
                    out.extend(args[j] if args[j] else [None])
                else:
                    out.extend(arg_expanded(j))
                i += 1
                continue
            out.append((_at(t, use), frozenset()))
            i += 1
        return [(t, h | hs) for t, h in (x for x in out if x is not None)]

    def _stringize(self, arg: list, use: Token) -> Token:
        s = _spelling([t for t, _ in arg])
        text = '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'
        return _at(use, use, "STRLIT", text)

    def _paste(self, a: Token, b: Token, use: Token, m) -> Token:
        text = a.value + b.value
        try:
            toks = list(_lark().lex(text))
        except UnexpectedCharacters:
            toks = []
        if len(toks) != 1 or len(toks[0].value) != len(text):
            raise self.error(use, f"pasting '{a.value}' and '{b.value}' does not give a valid "
                                  f"token (in macro '{m.name}')")
        return _at(toks[0], use)


# ------------------------------------------------------------------ #if expressions


def eval_if(res, text: str, vline: int, pos, err, name: str) -> bool:
    """Value of the `#if`/`#elif` expression `text` (pos/err take an index into `text`)."""
    raw = pp_lex(text, err)
    placed = []
    for t in raw:
        vl, col = pos(t.start_pos)
        placed.append(Token(t.type, t.value, start_pos=t.start_pos, line=vl, column=col,
                            end_pos=t.end_pos))

    def terr(t: Token, msg: str):
        return err(t.start_pos, msg)

    # `defined X` / `defined(X)` are evaluated before macro expansion.
    toks: list[Token] = []
    i = 0
    while i < len(placed):
        t = placed[i]
        if t.type == "NAME" and t.value == "defined":
            j = i + 1
            paren = j < len(placed) and placed[j].value == "("
            if paren:
                j += 1
            if j >= len(placed) or placed[j].type != "NAME":
                raise terr(t, "'defined' needs a macro name")
            val = res.lookup(placed[j].value, vline + 1) is not None
            j += 1
            if paren:
                if j >= len(placed) or placed[j].value != ")":
                    raise terr(t, "missing ')' after 'defined'")
                j += 1
            toks.append(Token("INTLIT", "1" if val else "0", start_pos=t.start_pos, line=t.line,
                              column=t.column, end_pos=t.end_pos))
            i = j
            continue
        toks.append(t)
        i += 1

    def lookup(n, line):
        return res.lookup(n, vline + 1)

    exp = Expander(lookup, terr)
    toks = list(exp.expand(toks))
    return _IfParser(toks, terr, name, err, len(text)).run() != 0


_MASK = (1 << 64) - 1


def _wrap(v: int, unsigned: bool) -> int:
    v &= _MASK
    if not unsigned and v >= 1 << 63:
        v -= 1 << 64
    return v


class _IfParser:
    """C integer constant expressions in intmax_t/uintmax_t (64 bits), as `#if` evaluates them."""

    BIN = [("||",), ("&&",), ("|",), ("^",), ("&",), ("==", "!="), ("<", ">", "<=", ">="),
           ("<<", ">>"), ("+", "-"), ("*", "/", "%")]

    def __init__(self, toks, terr, name, err, end):
        self.t = toks
        self.i = 0
        self.terr = terr
        self.name = name
        self.err = err
        self.end = end

    def peek(self):
        return self.t[self.i] if self.i < len(self.t) else None

    def fail(self, msg: str):
        t = self.peek()
        if t is None:
            return self.err(self.end, msg)
        return self.terr(t, msg)

    def run(self) -> int:
        v, _ = self.cond()
        if self.peek() is not None:
            raise self.fail(f"unexpected '{self.peek().value}' in '#{self.name}' expression")
        return v

    def cond(self):
        c, cu = self.binary(0)
        t = self.peek()
        if t is not None and t.value == "?":
            self.i += 1
            a, au = self.cond()
            t = self.peek()
            if t is None or t.value != ":":
                raise self.fail(f"expected ':' in '#{self.name}' expression")
            self.i += 1
            b, bu = self.cond()
            u = au or bu
            return _wrap(a if c else b, u), u
        return c, cu

    def binary(self, level: int):
        if level == len(self.BIN):
            return self.unary()
        a, au = self.binary(level + 1)
        while True:
            t = self.peek()
            if t is None or t.type in ("STRLIT", "CHARLIT") or t.value not in self.BIN[level]:
                return a, au
            op = t.value
            self.i += 1
            b, bu = self.binary(level + 1)
            if op in ("||", "&&"):
                a, au = int(bool(a) or bool(b)) if op == "||" else int(bool(a) and bool(b)), False
                continue
            if op in ("<<", ">>"):
                u = au
                a = _wrap(a << (b & 63) if op == "<<" else a >> (b & 63), u)
                continue
            u = au or bu
            x, y = _wrap(a, u), _wrap(b, u)
            if op in ("/", "%"):
                if y == 0:
                    raise self.terr(t, f"division by zero in '#{self.name}' expression")
                q = abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1)
                a, au = _wrap(q if op == "/" else x - q * y, u), u
                continue
            r = {"|": lambda: x | y, "^": lambda: x ^ y, "&": lambda: x & y, "+": lambda: x + y,
                 "-": lambda: x - y, "*": lambda: x * y}.get(op)
            if r is not None:
                a, au = _wrap(r(), u), u
            else:
                a, au = int({"==": x == y, "!=": x != y, "<": x < y, ">": x > y, "<=": x <= y,
                             ">=": x >= y}[op]), False

    def unary(self):
        t = self.peek()
        if t is None:
            raise self.fail(f"expected a value at the end of the '#{self.name}' expression")
        if t.type not in ("STRLIT", "CHARLIT") and t.value in ("-", "+", "~", "!"):
            self.i += 1
            v, u = self.unary()
            if t.value == "-":
                return _wrap(-v, u), u
            if t.value == "~":
                return _wrap(~v, u), u
            if t.value == "!":
                return int(not v), False
            return v, u
        if t.value == "(":
            self.i += 1
            v = self.cond()
            t2 = self.peek()
            if t2 is None or t2.value != ")":
                raise self.fail(f"missing ')' in '#{self.name}' expression")
            self.i += 1
            return v
        self.i += 1
        if t.type == "INTLIT":
            return self.intlit(t)
        if t.type == "CHARLIT":
            body = t.value[1:-1]
            if len(body) == 1 and ord(body) < 128:
                return ord(body), False
            raise self.terr(t, f"character constant {t.value} in '#{self.name}' expression is not "
                               "supported; write its number")
        if t.type in ("TRUE", "FALSE"):
            return int(t.type == "TRUE"), False
        if t.type == "FLOATLIT":
            raise self.terr(t, f"floating constant '{t.value}' in '#{self.name}' expression")
        if t.type == "STRLIT":
            raise self.terr(t, f"string literal in '#{self.name}' expression")
        if t.type == "NAME" or t.value.isidentifier():
            return 0, False  # C: an identifier that is not a macro is 0
        raise self.terr(t, f"unexpected '{t.value}' in '#{self.name}' expression")

    def intlit(self, t: Token):
        s = t.value
        low = s.lower()
        k = len(s)
        while k > 0 and low[k - 1] in "ul":
            k -= 1
        digits, suffix = s[:k], low[k:]
        if suffix not in ("", "u", "l", "ul", "lu", "ll", "ull", "llu"):
            raise self.terr(t, f"invalid integer constant '{s}' in '#{self.name}' expression")
        try:
            if digits[:2].lower() == "0x":
                v = int(digits[2:], 16)
            elif digits[:2].lower() == "0b":
                v = int(digits[2:], 2)
            elif len(digits) > 1 and digits[0] == "0":
                v = int(digits, 8)
            else:
                v = int(digits)
        except ValueError:
            raise self.terr(t, f"invalid integer constant '{s}' in '#{self.name}' expression") from None
        u = "u" in suffix or v >= 1 << 63
        if v > _MASK:
            raise self.terr(t, f"integer constant '{s}' is too large for '#{self.name}'")
        return _wrap(v, u), u
