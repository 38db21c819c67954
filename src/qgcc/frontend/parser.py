"""Source text -> `ast.TranslationUnit`.

Pipeline: `preprocess` (comments, directives) -> Lark's lexer -> macro
expansion and rejection of unsupported C++ keywords on the token stream ->
Lark's LALR parser fed token by token -> a tree builder that turns the Lark
tree into the dataclasses of `ast.py`.  Lark's exceptions are converted into
`CompileError`s with gcc-style messages ("expected ';' before 'x'").
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken

from ..diagnostics import CompileError
from . import ast as A
from .coopgroups import Lowering
from .macros import HASH, HASHHASH, Expander
from .preprocess import Preprocessed, preprocess
from .structs import VECTOR_NAMES
from .types import BUILTIN_TYPEDEFS

GRAMMAR_FILE = "cuda.lark"
HINTS = ("__launch_bounds__", "__attribute__", "__align__")  # dropped with their arguments


def grammar_path() -> Path:
    """The grammar inside the installed package if present, else the repository's."""
    import qgcc

    here = Path(qgcc.__file__).resolve()
    candidates = [here.parent / "grammars" / GRAMMAR_FILE]
    if len(here.parents) > 2:
        candidates.append(here.parents[2] / "grammars" / GRAMMAR_FILE)
    for c in candidates:
        if c.is_file():
            return c
    raise FileNotFoundError(f"cannot find the grammar {GRAMMAR_FILE} (looked in "
                            + ", ".join(str(c.parent) for c in candidates) + ")")


@lru_cache(maxsize=1)
def get_lark() -> Lark:
    text = grammar_path().read_text(encoding="utf-8")
    return Lark(text, parser="lalr", lexer="basic", propagate_positions=True,
                maybe_placeholders=True)


# Reserved words of CUDA C++ that the subset does not have, with the message naming them.
UNSUPPORTED_KEYWORDS: dict[str, str] = {
    "switch": "'switch' statements are not supported; use if/else",
    "case": "'case' labels are not supported ('switch' is not supported)",
    "default": "'default' labels are not supported ('switch' is not supported)",
    "goto": "'goto' is not supported",
    "union": "'union' types are not supported",
    "enum": "'enum' types are not supported; use const int or #define",
    "typename": "'typename' is supported only in a template parameter list",
    "new": "dynamic memory allocation ('new') is not supported",
    "delete": "dynamic memory allocation ('delete') is not supported",
    "namespace": "namespaces are not supported",
    "virtual": "'virtual' is not supported",
    "throw": "exceptions are not supported ('throw')",
    "try": "exceptions are not supported ('try')",
    "catch": "exceptions are not supported ('catch')",
    "asm": "inline assembly ('asm') is not supported",
    "__asm__": "inline assembly ('__asm__') is not supported",
    "nullptr": "'nullptr' is not supported; use 0",
    "dynamic_cast": "'dynamic_cast' is not supported (no classes); use static_cast or a C cast",
    "decltype": "'decltype' is not supported",
    "static_assert": "'static_assert' is not supported",
    "alignas": "'alignas' is not supported",
    "__align__": "'__align__' is not supported",
    "explicit": "'explicit' is not supported",
    "friend": "'friend' is not supported",
    "mutable": "'mutable' is not supported",
    "typeid": "'typeid' is not supported",
    "wchar_t": "'wchar_t' is not supported",
    "int16_t": "'int16_t' is not supported ('short' is not supported)",
    "uint16_t": "'uint16_t' is not supported ('short' is not supported)",
}

_REGEX_TERMINAL_NAMES = {
    "NAME": "an identifier",
    "INTLIT": "a number",
    "FLOATLIT": "a number",
    "CHARLIT": "a character literal",
    "STRLIT": "a string literal",
    "$END": "end of input",
}


# The half-precision types of cuda_fp16.h: ordinary names unless that header is included.
HALF_TYPES = ("half", "__half", "half2", "__half2")
# Operators a struct may overload: `operator` and the operator become one OPERATOR_NAME token.
# type words that can follow `operator` in a conversion operator (`operator const T *()`)
CONVERSION_WORDS = frozenset({"const", "unsigned", "signed", "int", "char", "bool", "float", "double", "long",
                              "void", "volatile", "struct"})
OVERLOADABLE = frozenset({"+", "-", "*", "/", "%", "+=", "-=", "*=", "/=", "==", "!=", "<", ">",
                          "<=", ">=", "=", "[]"})
# Functional casts: the type keywords that may be called like a function, and the tokens after
# which such a call is an expression.
FCAST_WORDS = frozenset({"int", "unsigned", "signed", "char", "bool", "float", "double", "long", "short"})
EXPR_BEFORE = frozenset({"=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>=", "+", "-", "*",
                         "/", "%", "&", "|", "^", "!", "~", "<", ">", "<=", ">=", "==", "!=", "&&", "||",
                         "?", ":", ",", "(", "[", "return", "<<", ">>"})
# Keywords after which '&' declares a reference.
TYPE_KEYWORDS = frozenset({"int", "unsigned", "signed", "char", "bool", "float", "double", "void",
                           "long", "short", "const", "volatile"})


class _Ctx:
    def __init__(self, filename: str, lines: list[str]):
        self.filename = filename
        self.lines = lines

    def error(self, line: int, col: int, msg: str) -> CompileError:
        src = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        return CompileError(self.filename, line, col, msg, src)


def _describe_token(tok: Token) -> str:
    if tok.type == "$END":
        return "end of input"
    return f"'{tok.value}'"


def _terminal_text(name: str) -> str | None:
    if name in _REGEX_TERMINAL_NAMES:
        return None
    try:
        t = get_lark().get_terminal(name)
    except KeyError:
        return None
    if t.pattern.type == "str":
        return t.pattern.value
    return None


# CUDA's texture and surface types: named, since the machine has no texture unit.
TEXTURE_TYPES = {"texture": "texture references", "surface": "surface references",
                 "cudaTextureObject_t": "texture objects", "cudaSurfaceObject_t": "surface objects"}


def _unknown_type(name: str) -> str:
    if name in TEXTURE_TYPES:
        return (f"{TEXTURE_TYPES[name]} ('{name}') are not supported (there is no texture unit); pass the "
                f"array as a pointer and index it (tex1Dfetch(t, i) is p[i])")
    hint = (" (half precision needs cuda_fp16.h, which qgcc does not support; use float)"
            if name in HALF_TYPES else "")
    return f"unknown type name '{name}'{hint}"


def _syntax_message(expected: set[str], tok: Token) -> str:
    texts = {_terminal_text(n) for n in expected}
    found = _describe_token(tok)
    where = "at end of input" if tok.type == "$END" else f"before {found}"
    if tok.type == "$END" and "}" in texts:
        return "expected '}' at end of input"
    if "NAME" in expected and "INTLIT" not in expected and \
            tok.type in ("INTLIT", "FLOATLIT", "CHARLIT", "STRLIT"):
        return f"expected an identifier {where}"
    if "__global__" in texts and "}" not in texts:
        if tok.type == "NAME":  # a declaration starts here, so the name would be a type
            return _unknown_type(tok.value)
        return f"expected a declaration {where}"
    if "INTLIT" in expected and ("(" in texts or "-" in texts):
        return f"expected an expression {where}"
    for want in (";", ")", "]", "}", ":", "(", "while"):
        if want in texts:
            return f"expected '{want}' {where}"
    if "NAME" in expected:
        return f"expected an identifier {where}"
    if tok.type == "$END":
        return "unexpected end of input"
    return f"unexpected {found}"


class _Stream:
    """The token stream: Lark's lexer output placed at real positions, macros expanded,
    typedef names retyped TYPE_NAME, `{` after a declared name retyped LBRACE_INIT, and
    unsupported C++ keywords rejected by name."""

    def __init__(self, ctx: _Ctx, pp: Preprocessed):
        self.ctx = ctx
        self.pp = pp
        self.typedefs: set[str] = set(BUILTIN_TYPEDEFS) | set(VECTOR_NAMES)
        self.prev: Token | None = None
        self.prev2: str | None = None
        self.prev2_type: str | None = None
        # typedef/using declaration being read: [kind, names, paren depth, bracket depth, want]
        self.decl: list | None = None
        # Templates: the header being read or the templated function after it, the names of
        # function templates (a '<' after one opens template arguments) and open '<'s.
        self.tmpl: dict | None = None
        self.template_names: set[str] = set()
        self.class_templates: set[str] = set()  # a '<' after one (a type name) opens its arguments
        self.angles = 0
        self.depth = 0  # open '(' and '[' (a '>' inside them is an operator)
        self.angle_depths: list[int] = []  # self.depth at each open '<'
        # Struct bodies being read: [tag, brace depth inside the body]; `state` follows the
        # header: 'kw' after struct/class, 'tag' after its name.
        self.structs: list[list] = []
        self.struct_state: str | None = None
        self.struct_tag: str | None = None

    def _placed(self):
        smap = self.pp.srcmap
        text = self.pp.text
        try:
            for t in get_lark().lex(text):
                line, col = smap.pos(t.start_pos)
                eline, ecol = smap.pos(max(t.end_pos - 1, t.start_pos))
                yield Token(t.type, t.value, start_pos=t.start_pos, line=line, column=col,
                            end_line=eline, end_column=ecol + 1, end_pos=t.end_pos)
        except UnexpectedCharacters as e:
            ch = text[e.pos_in_stream] if e.pos_in_stream < len(text) else "?"
            line, col = smap.pos(e.pos_in_stream)
            if ch in "\"'":
                raise self.ctx.error(line, col, f"missing terminating {ch} character") from None
            shown = ch if ch.isprintable() and not ch.isspace() else f"U+{ord(ch):04X}"
            raise self.ctx.error(line, col, f"unexpected character '{shown}'") from None

    def _drop_hints(self, toks):
        """`__launch_bounds__(...)`, `__attribute__((...))` and `__align__(n)` are hints (inlining,
        alignment, warnings) that change no result here: dropped, with their arguments."""
        it = iter(toks)
        for tok in it:
            if tok.type == "NAME" and tok.value in HINTS:
                nxt = next(it, None)
                if nxt is None or nxt.value != "(":
                    raise self.ctx.error(tok.line, tok.column, f"expected '(' after '{tok.value}'")
                depth = 1
                while depth:
                    t = next(it, None)
                    if t is None:
                        raise self.ctx.error(tok.line, tok.column, f"unterminated '{tok.value}('")
                    depth += {"(": 1, ")": -1}.get(t.value, 0) if t.type not in (
                        "STRLIT", "CHARLIT") else 0
                continue
            yield tok

    def _operators(self, toks):
        """`operator` and the operator after it become one OPERATOR_NAME token (`operator[]`)."""
        it = iter(toks)
        for tok in it:
            if tok.type == "NAME" and tok.value == "operator":
                op = next(it, None)
                if op is None:
                    raise self.ctx.error(tok.line, tok.column, "expected an operator after 'operator'")
                text = op.value
                if text in ("[", "("):
                    close = next(it, None)
                    text += close.value if close is not None else ""
                if text not in OVERLOADABLE and (op.type == "NAME" or text in CONVERSION_WORDS):
                    yield from self._conversion_operator(tok, op, it)
                    continue
                if text not in OVERLOADABLE:
                    raise self.ctx.error(op.line, op.column, f"'operator{text}' is not supported "
                                         "(a struct may define operator" + ", operator".join(
                                             sorted(OVERLOADABLE)) + ")")
                yield Token("OPERATOR_NAME", "operator" + text, start_pos=tok.start_pos, line=tok.line,
                            column=tok.column, end_line=op.end_line, end_column=op.end_column,
                            end_pos=op.end_pos)
                continue
            yield tok

    def _conversion_operator(self, tok, first, it):
        """`operator T *()`: a conversion operator becomes a member function returning `T *`
        whose name is OPERATOR_NAME 'operator T *' (sema calls it where the struct converts)."""
        typ = [first]
        for t in it:
            if t.value == "(":
                break
            typ.append(t)
        else:
            raise self.ctx.error(tok.line, tok.column, "expected '(' after the type of a conversion operator")
        yield from typ
        yield Token("OPERATOR_NAME", "operator " + " ".join(x.value for x in typ), start_pos=tok.start_pos,
                    line=tok.line, column=tok.column, end_line=tok.end_line, end_column=tok.end_column,
                    end_pos=tok.end_pos)
        yield t

    def tokens(self):
        exp = Expander(self.pp.lookup, lambda t, msg: self.ctx.error(t.line, t.column, msg))
        prev = None
        cg = Lowering(lambda text: get_lark().lex(text), lambda t, msg: self.ctx.error(t.line, t.column, msg))
        for tok in cg.run(self._operators(self._drop_hints(exp.expand(self._placed())))):  # one token of lookahead, for '::'
            if prev is not None:
                if prev.value == ":" == tok.value and prev.type == tok.type == "COLON" \
                        and (prev.line, prev.column + 1) == (tok.line, tok.column):
                    if self.decl is not None and self.decl[0] == "using":
                        self._using_error(self.decl[5])
                    raise self.ctx.error(prev.line, prev.column, "'::' is not supported (C++ "
                                         "namespaces and classes are not)")
                if prev.value == ">>" and prev.type != "STRLIT" and self.closes_angle():
                    # C++11: `>>` closes two template argument lists (`A<B<int>>`).
                    first, prev = self._split_shift(prev)
                    yield self._classify(first)
                cls = self._classify(prev)
                if tok.value == "(" and tok.type == "LPAR" and self._functional_cast(cls):
                    cls = self._retype(cls, "FCAST_TYPE")
                elif tok.value == "<" and self._template_value_init(cls):
                    cls = self._retype(cls, "FCAST_TYPE")
                yield cls
            prev = tok
        if prev is not None:
            yield self._classify(prev)

    @staticmethod
    def _split_shift(tok: Token) -> tuple[Token, Token]:
        """`>>` as two `>` tokens, one column apart."""
        def gt(col: int, pos: int) -> Token:
            return Token("MORETHAN", ">", start_pos=pos, line=tok.line, column=col, end_line=tok.line,
                         end_column=col + 1, end_pos=pos + 1)
        return gt(tok.column, tok.start_pos), gt(tok.column + 1, tok.start_pos + 1)

    def _template_value_init(self, tok: Token) -> bool:
        """`T *p = SharedMemory<T>();`, `return Vec<int>();`: a class template instance written as
        a value right after '=' or 'return' (elsewhere `Vec<int>` stays a type: casts, sizeof,
        template arguments)."""
        return (tok.type == "TYPE_NAME" and tok.value in self.class_templates and not self.angles
                and self.prev2 in ("=", "return"))

    def _functional_cast(self, tok: Token) -> bool:
        """`float(i)`, `T(x)`: a type followed by '(' where an expression goes (after an operator,
        '(', '[', ',', 'return'), so declarations such as `int (*f)(int)` keep their meaning."""
        if not (tok.type == "TYPE_NAME" or tok.value in FCAST_WORDS):
            return False
        before = self.prev2
        return before is not None and before in EXPR_BEFORE

    @staticmethod
    def _retype(tok: Token, kind: str) -> Token:
        return Token(kind, tok.value, start_pos=tok.start_pos, line=tok.line, column=tok.column,
                     end_line=tok.end_line, end_column=tok.end_column, end_pos=tok.end_pos)

    def _template(self, tok: Token) -> Token | None:
        """Template headers and template arguments; None when tok is ordinary."""
        v = tok.value
        t = self.tmpl
        if t is None:
            if tok.type == "NAME" and v == "template":
                self.tmpl = {"state": "open", "names": [], "type_next": False, "brace": 0,
                             "named": False, "last": None, "had": set(), "values": False}
                return self._retype(tok, "TEMPLATE")
            return self._template_args(tok)
        if t["state"] == "open":
            if v != "<":
                raise self.ctx.error(tok.line, tok.column, "expected '<' after 'template'")
            t["state"] = "params"
            return self._retype(tok, "TLT")
        if t["state"] == "params":
            if tok.type in ("NAME", "CLASS") and v in ("typename", "class"):
                t["type_next"] = True
                return self._retype(tok, "TYPENAME_KW")
            if tok.type == "NAME" and t["type_next"]:
                t["type_next"] = False
                t["names"].append(v)
                if v in self.typedefs:
                    t["had"].add(v)
                self.typedefs.add(v)  # a type inside the template
                return tok
            if v == ">":
                t["state"] = "decl"
                return self._retype(tok, "TGT")
            t["values"] = True  # an integer parameter
            return None
        # the templated declaration: learn its name, and forget the type parameters at its end
        after_tag, t["tag"] = t.get("tag"), None
        if after_tag and v == "<" and not t["names"] and not t["values"]:
            # `template <> struct S<double> {...}`: an explicit specialisation (sema.py)
            self.angles += 1
            self.angle_depths.append(self.depth)
            return self._retype(tok, "TLT")
        if after_tag and v == "<":
            kind = "explicit" if not t["names"] and not t["values"] else "partial"
            raise self.ctx.error(tok.line, tok.column, f"{kind} specialisation of class template "
                                 f"'{after_tag}' is not supported; give the specialised struct its own name")
        if v == "<" and not t["names"] and not t["values"] and not t["named"] and \
                self.prev is not None and self.prev.type == "NAME" and self.prev.value not in self.template_names:
            raise self.ctx.error(self.prev.line, self.prev.column, f"explicit specialisation of "
                                 f"'{self.prev.value}', which is not a function template declared before it")
        if tok.type in ("STRUCT", "CLASS") and t["brace"] == 0 and not t["named"]:
            t["named"] = "struct"
        elif t["named"] == "struct" and tok.type in ("NAME", "TYPE_NAME"):
            t["named"] = True
            t["tag"] = v
            self.class_templates.add(v)
        if tok.type == "NAME":
            t["last"] = v
        elif v == "(" and t["brace"] == 0 and not t["named"] and t["last"]:
            t["named"] = True
            self.template_names.add(t["last"])
        elif v == "{":
            t["brace"] += 1
        elif v in ("}", ";") and (t["brace"] - (v == "}")) == 0:
            if v == "}":
                t["brace"] -= 1
            for n in t["names"]:
                if n not in t["had"]:
                    self.typedefs.discard(n)
            self.tmpl = None
        elif v == "}":
            t["brace"] -= 1
        return self._template_args(tok)

    def _template_args(self, tok: Token) -> Token | None:
        """`<` after the name of a function template opens its arguments, up to the matching `>`."""
        v = tok.value
        if tok.type in ("LPAR", "LSQB"):
            self.depth += 1
        elif tok.type in ("RPAR", "RSQB"):
            self.depth -= 1
        if v == "<" and self.prev is not None and (
                (self.prev.type == "NAME" and self.prev.value in self.template_names)
                or (self.prev.type == "TYPE_NAME" and self.prev.value in self.class_templates)):
            self.angles += 1
            self.angle_depths.append(self.depth)
            return self._retype(tok, "TLT")
        if v == ">" and self.closes_angle():
            self.angles -= 1
            self.angle_depths.pop()
            return self._retype(tok, "TGT")
        return None

    def closes_angle(self) -> bool:
        """Whether a '>' here closes template arguments (not inside parentheses in them)."""
        return bool(self.angles) and self.angle_depths[-1] == self.depth

    def _classify(self, tok: Token) -> Token:
        err = self.ctx.error
        special = self._template(tok)
        if special is not None:
            self.prev = special
            return special
        if tok.type in (HASH, HASHHASH):
            raise err(tok.line, tok.column, f"stray '{tok.value}' in program")
        if tok.type == "NAME":
            v = tok.value
            if v in UNSUPPORTED_KEYWORDS:
                raise err(tok.line, tok.column, UNSUPPORTED_KEYWORDS[v])
            fp16 = self.pp.fp16_line
            if v in HALF_TYPES and fp16 is not None and tok.line > fp16:
                raise err(tok.line, tok.column, f"'{v}' (half precision, cuda_fp16.h) is not "
                                                "supported; use float")
            if v in self.typedefs and not (self.decl and self.decl[4] is True):
                tok = Token("TYPE_NAME", v, start_pos=tok.start_pos, line=tok.line,
                            column=tok.column, end_line=tok.end_line, end_column=tok.end_column,
                            end_pos=tok.end_pos)
        elif tok.value in ("&", "&&") and tok.type not in ("STRLIT", "CHARLIT") and \
                self.prev is not None and (self.prev.type in ("TYPE_NAME", "TGT") or self.prev.value in TYPE_KEYWORDS
                                           or self._pointer_declarator()):
            if tok.value == "&&":
                raise err(tok.line, tok.column, f"rvalue references ('{self.prev.value} &&') are not "
                                                "supported")
            tok = Token("REF", tok.value, start_pos=tok.start_pos, line=tok.line, column=tok.column,
                        end_line=tok.end_line, end_column=tok.end_column, end_pos=tok.end_pos)
        elif tok.type == "LBRACE" and self.struct_state is not None:
            pass  # the body of a struct
        elif tok.type == "LBRACE" and self.prev is not None and self.prev.type == "NAME":
            tok = Token("LBRACE_INIT", tok.value, start_pos=tok.start_pos, line=tok.line,
                        column=tok.column, end_line=tok.end_line, end_column=tok.end_column,
                        end_pos=tok.end_pos)
        self._track(tok)
        self._struct(tok)
        self.prev2 = self.prev.value if self.prev is not None else None
        self.prev2_type = self.prev.type if self.prev is not None else None
        self.prev = tok
        return tok

    def _struct(self, tok: Token) -> None:
        """Struct tags become type names as soon as they are written (C++: `S` alone names the
        struct, also in its own body); constructors are named as not supported."""
        v = tok.value
        st = self.struct_state
        if tok.type in ("STRUCT", "CLASS"):
            self.struct_state, self.struct_tag = "kw", None
            return
        if st == "kw" and tok.type in ("NAME", "TYPE_NAME"):
            self.typedefs.add(v)
            self.struct_state, self.struct_tag = "tag", v
            return
        if st in ("tag", "targs") and (tok.type == "TLT" or st == "targs"):
            self.struct_state = "tag" if tok.type == "TGT" else "targs"  # `struct S<double> {`
            return
        self.struct_state = None
        if st == "tag" and tok.type == "COLON":
            raise self.ctx.error(tok.line, tok.column, f"inheritance is not supported "
                                 f"('{self.struct_tag} : ...'); put the members in the struct itself")
        if st is not None and tok.type == "LBRACE":
            self.structs.append([self.struct_tag, 0])
            return
        if not self.structs:
            return
        top = self.structs[-1]
        if tok.type == "LBRACE":
            top[1] += 1
        elif tok.type == "RBRACE":
            if top[1] == 0:
                self.structs.pop()
            else:
                top[1] -= 1
        elif top[1] == 0 and tok.type == "COLON" and self.prev is not None and self.prev.type == "NAME":
            raise self.ctx.error(self.prev.line, self.prev.column, f"bit-fields are not supported "
                                 f"('{self.prev.value} : ...'); use a whole member")
        elif top[1] == 0 and self.prev is not None and self.prev.value == top[0] and v == "(" \
                and (len(self.structs) > 0):
            what = "destructors" if self.prev2 == "~" else "constructors"
            raise self.ctx.error(self.prev.line, self.prev.column,
                                 f"{what} are not supported ('{top[0]}'); initialise a struct with "
                                 f"braces ('{top[0]} s = {{...}};') or assign its members")

    def _pointer_declarator(self) -> bool:
        """Whether the '*' just read follows a type (`int *&p`: a reference to a pointer), not an
        operand (`a * &b`)."""
        return self.prev is not None and self.prev.value == "*" and self.prev2_type is not None \
            and (self.prev2_type == "TYPE_NAME" or self.prev2 in TYPE_KEYWORDS)

    def _using_error(self, at: Token):
        raise self.ctx.error(at.line, at.column, "'using' declarations are not supported; only "
                                                 "aliases ('using NAME = TYPE;')")

    def _track(self, tok: Token) -> None:
        """Learn the names that typedef and using declare (C's "lexer hack")."""
        d = self.decl
        v = tok.value
        if d is None:
            if tok.type == "TYPEDEF":
                self.decl = ["typedef", [], 0, 0, False, True]
            elif tok.type == "USING":
                self.decl = ["using", [], 0, 0, True, tok]
            return
        kind, names = d[0], d[1]
        if kind == "using":
            if d[4] is True:  # the name right after 'using'
                if tok.type != "NAME":
                    self._using_error(d[5])
                names.append(v)
                d[4] = "="
            elif d[4] == "=":
                if v != "=":
                    self._using_error(d[5])
                d[4] = False
            elif v == ";":
                self.typedefs.update(names)
                self.decl = None
            return
        if tok.type == "NAME" and d[5] and d[3] == 0 and d[2] == 0:
            names.append(v)  # the first name of each declarator
            d[5] = False
        elif v in ("(", "{") and tok.type != "STRLIT":
            d[2] += 1  # parentheses, and the body of `typedef struct {...} T;`
        elif v in (")", "}") and tok.type != "STRLIT":
            d[2] -= 1
        elif v == "[":
            d[3] += 1
        elif v == "]":
            d[3] -= 1
        elif v == "," and d[2] == 0 and d[3] == 0:
            d[5] = True
        elif v == ";" and d[2] == 0:
            self.typedefs.update(names)
            self.decl = None


def parse_pp(pp: Preprocessed, filename: str) -> A.TranslationUnit:
    """Parse preprocessed text; diagnostics are at virtual lines (see preprocess.SourceMap)."""
    ctx = _Ctx(filename, pp.srcmap.virtual_lines())
    lark = get_lark()
    ip = lark.parse_interactive(None)
    stream = _Stream(ctx, pp)
    prev: Token | None = None
    tok: Token | None = None
    try:
        for tok in stream.tokens():
            ip.feed_token(tok)
            prev = tok
        tree = ip.feed_eof(prev)
    except UnexpectedToken as e:
        bad = e.token
        if bad.type == "$END":
            line = prev.end_line if prev is not None else 1
            col = prev.end_column if prev is not None else 1
        else:
            line, col = bad.line, bad.column
        if bad.type == "NAME" and prev is not None and prev.type == "NAME" and \
                (prev.line, prev.column) != (bad.line, bad.column):
            raise ctx.error(prev.line, prev.column, _unknown_type(prev.value)) from None
        expected = set(e.expected)
        try:  # exact set (LALR lookaheads of a reduce state over-approximate)
            expected = set((e.interactive_parser or ip).accepts()) or expected
        except Exception:  # pragma: no cover - fall back to the table's lookaheads
            pass
        raise ctx.error(line, col, _syntax_message(expected, bad)) from None
    except UnexpectedInput as e:  # pragma: no cover - other Lark input errors
        raise ctx.error(getattr(e, "line", 1) or 1, getattr(e, "column", 1) or 1,
                        "syntax error") from None
    return _Builder(ctx).build(tree)


def parse(source: str, filename: str = "<input>", include_dirs=(), defines=()) -> A.TranslationUnit:
    pp = preprocess(source, filename, include_dirs, defines)
    try:
        return parse_pp(pp, filename)
    except CompileError as e:
        raise pp.srcmap.remap(e, filename) from None


# ---------------------------------------------------------------------- tree -> AST


class _Builder:
    def __init__(self, ctx: _Ctx):
        self.ctx = ctx

    def build(self, tree: Tree) -> A.TranslationUnit:
        items: list = []
        self.top_items(tree.children, items)
        return A.TranslationUnit(items)

    def top_items(self, children, items: list) -> None:
        for ch in children:
            if isinstance(ch, Tree):
                if ch.data == "function_def":
                    items.append(self.function_def(ch))
                elif ch.data == "template_def":
                    kw = ch.children[0]
                    params = []
                    for p in ch.children[2:-2]:
                        if not isinstance(p, Tree):
                            continue
                        name, default = p.children[1], p.children[2]
                        specs = self.specs(p.children[0]) if p.data == "value_tparam" else None
                        if default is not None:
                            default = self.type_name(default) if specs is None else self.expr(default)
                        params.append(A.TemplateParam(name.line, name.column, name.value,
                                                      "type" if specs is None else "value", specs,
                                                      default))
                    body = ch.children[-1]
                    if body.data == "declaration":  # a class template, or a function template prototype
                        decl = self.declaration(body)
                        if len(decl.items) == 1 and decl.items[0].decl.params is not None \
                                and decl.items[0].init is None and not decl.items[0].decl.funcptr:
                            d = decl.items[0].decl
                            items.append(A.TemplateDef(kw.line, kw.column, params,
                                                       A.FunctionDef(d.line, d.col, decl.specs, d, None, d.line)))
                            continue
                        sd = decl.specs[0].struct if len(decl.specs) == 1 and not decl.items else None
                        if sd is None or sd.fields is None or not sd.tag:
                            raise self.ctx.error(kw.line, kw.column, "a template must define a function "
                                                 "or a struct ('template <...> struct NAME {...};')")
                        items.append(A.TemplateDef(kw.line, kw.column, params, None, sd))
                        continue
                    items.append(A.TemplateDef(kw.line, kw.column, params, self.function_def(body)))
                elif ch.data == "declaration":
                    items.append(self.declaration(ch))
                elif ch.data == "alias_decl":
                    items.append(self.alias(ch))
                elif ch.data == "linkage_spec":
                    lang = ch.children[0]
                    if lang.value not in ('"C"', '"C++"'):
                        raise self.ctx.error(lang.line, lang.column,
                                             f"unknown language linkage {lang.value}; write "
                                             'extern "C"')
                    self.top_items(ch.children[1:], items)

    def alias(self, t: Tree) -> A.Declaration:
        """`using NAME = TYPE;` is `typedef TYPE NAME;`."""
        name = t.children[0]
        ts = self.type_name(t.children[1])
        td = A.Spec(name.line, name.column, "typedef")
        d = A.Declarator(name.line, name.column, name.value, pointers=ts.pointers)
        return A.Declaration(name.line, name.column, [td] + ts.specs,
                             [A.InitDeclarator(d.line, d.col, d, None)])

    # ---------------------------------------------------------------- declarations

    def specs(self, t: Tree) -> list[A.Spec]:
        out = []
        for ch in t.children:  # decl_spec trees
            tok = ch.children[0]
            if isinstance(tok, Tree) and tok.data == "class_template_id":
                name = tok.children[0]
                targs = [self.type_name(a) if isinstance(a, Tree) and a.data == "type_name" else self.expr(a)
                         for a in tok.children[2:-1] if isinstance(a, Tree)]
                out.append(A.Spec(name.line, name.column, name.value, typename=True, targs=targs))
                continue
            if isinstance(tok, Tree):  # struct_spec
                sd = self.struct_spec(tok)
                out.append(A.Spec(sd.line, sd.col, sd.tag or "", typename=True, struct=sd))
                continue
            out.append(A.Spec(tok.line, tok.column, tok.value, typename=tok.type == "TYPE_NAME"))
        return out

    def struct_spec(self, t: Tree) -> A.StructDef:
        kw = t.children[0]
        tag = t.children[1] if len(t.children) > 1 and isinstance(t.children[1], Token) \
            and t.children[1].type in ("NAME", "TYPE_NAME") else None
        at = tag or kw
        sd = A.StructDef(at.line, at.column, tag.value if tag is not None else None, kw.value)
        if any(isinstance(c, Token) and c.type == "TLT" for c in t.children):  # an explicit specialisation
            sd.targs = [self.type_name(a) if a.data == "type_name" else self.expr(a)
                        for a in t.children[3:] if isinstance(a, Tree) and a.data not in ("declaration",
                                                                                          "function_def",
                                                                                          "access_spec")]
        if not any(isinstance(c, Token) and c.value == "{" for c in t.children):
            return sd
        sd.fields = []
        sd.end_line = t.meta.end_line
        for ch in t.children:
            if isinstance(ch, Tree) and ch.data == "declaration":
                sd.fields.append(self.declaration(ch))
            elif isinstance(ch, Tree) and ch.data == "function_def":
                sd.methods.append(self.function_def(ch))
        return sd

    def pointers(self, t: Tree | None) -> list[list[A.Spec]]:
        if t is None:
            return []
        out = []
        for p in t.children:  # pointer trees: '*' ptr_qual*
            quals = []
            for q in p.children[1:]:
                tok = q.children[0]
                quals.append(A.Spec(tok.line, tok.column, tok.value))
            out.append(quals)
        return out

    def declarator(self, t: Tree) -> A.Declarator:
        ptrs = self.pointers(t.children[0])
        ref = t.children[1]
        d = self.direct(t.children[2])
        d.pointers = ptrs + d.pointers
        if ref is not None:
            d.ref = A.Spec(ref.line, ref.column, "&")
        return d

    def direct(self, t: Tree) -> A.Declarator:
        kind = t.data
        ch = t.children
        if kind == "name_decl":
            tok = ch[0]
            return A.Declarator(tok.line, tok.column, tok.value)
        if kind == "specialised_decl":
            tok = ch[0]
            return A.Declarator(tok.line, tok.column, tok.value, targs=self.targs(ch[2:-1]))
        if kind == "array_decl":
            d = self.direct(ch[0])
            size = self.expr(ch[2]) if ch[2] is not None else None
            if d.params is not None or d.funcptr:
                d.parens = True
            d.arrays.append(size)
            return d
        if kind == "func_decl":
            d = self.direct(ch[0])
            params = [self.param(p) for p in ch[2].children] if ch[2] is not None else []
            if d.params is not None or d.arrays:
                d.parens = True
            elif d.pointers and d.name:
                # `(*f)(...)`: the inner declarator had pointers -> a function pointer.
                d.funcptr = True
                return d
            d.params = params
            return d
        if kind == "const_func_decl":
            d = self.direct(Tree("func_decl", ch[:4], t.meta))
            d.const_method = True
            return d
        if kind == "paren_decl":
            inner = self.declarator(ch[1])
            if not inner.pointers:
                inner.parens = True
            return inner
        raise AssertionError(kind)

    def param(self, t: Tree) -> A.ParamDecl:
        specs = self.specs(t.children[0])
        line, col = specs[0].line, specs[0].col
        if t.data == "abstract_param":
            ptrs = self.pointers(t.children[1])
            ref = t.children[2]
            return A.ParamDecl(line, col, A.TypeSyntax(line, col, specs, ptrs), None,
                               ref=A.Spec(ref.line, ref.column, "&") if ref is not None else None)
        d = self.declarator(t.children[1])
        return A.ParamDecl(d.line, d.col, A.TypeSyntax(line, col, specs, d.pointers), d.name,
                           list(d.arrays), funcptr=d.funcptr or d.params is not None or d.parens,
                           ref=d.ref)

    def declaration(self, t: Tree) -> A.Declaration:
        specs = self.specs(t.children[0])
        items = []
        for ch in t.children[1:]:
            if isinstance(ch, Tree) and ch.data == "init_declarator":
                d = self.declarator(ch.children[0])
                init = ch.children[1]
                if isinstance(init, Tree) and init.data == "brace_direct":
                    init = self.brace(init)
                elif init is not None:
                    init = self.brace(init) if isinstance(init, Tree) and init.data == "brace_init" \
                        else self.expr(init)
                items.append(A.InitDeclarator(d.line, d.col, d, init))
        return A.Declaration(specs[0].line, specs[0].col, specs, items)

    def brace(self, t: Tree) -> A.BraceInit:
        tok = t.children[0]
        items = []
        for ch in t.children[1:]:
            if isinstance(ch, Tree):
                items.append(self.init_item(ch))
        return A.BraceInit(tok.line, tok.column, items)

    def init_item(self, t: Tree):
        if t.data == "designated":
            name, value = t.children[0], t.children[1]
            return A.Designated(name.line, name.column, name.value, self.init_item(value))
        return self.brace(t) if t.data in ("brace_init", "brace_direct") else self.expr(t)

    def function_def(self, t: Tree) -> A.FunctionDef:
        specs = self.specs(t.children[0])
        d = self.declarator(t.children[1])
        body = self.block(t.children[2])
        return A.FunctionDef(d.line, d.col, specs, d, body, t.meta.end_line)

    def type_name(self, t: Tree) -> A.TypeSyntax:
        specs = self.specs(t.children[0])
        ref = t.children[2]
        if ref is not None:
            raise self.ctx.error(ref.line, ref.column, f"references ('{specs[-1].text} &') are only "
                                                       "supported as device function parameters")
        return A.TypeSyntax(specs[0].line, specs[0].col, specs, self.pointers(t.children[1]))

    # ---------------------------------------------------------------- statements

    def block(self, t: Tree) -> A.Block:
        items = [self.item(ch) for ch in t.children]
        return A.Block(t.meta.line, t.meta.column, items, t.meta.end_line)

    def item(self, t: Tree):
        if t.data == "alias_decl":
            d = self.alias(t)
            return A.DeclStmt(d.line, d.col, d)
        if t.data == "declaration":
            d = self.declaration(t)
            return A.DeclStmt(d.line, d.col, d)
        return self.stmt(t)

    def stmt(self, t) -> A.Stmt:
        if not isinstance(t, Tree):
            raise AssertionError(f"unexpected statement {t!r}")
        k = t.data
        ch = t.children
        line, col = t.meta.line, t.meta.column
        if k == "compound_stmt":
            return self.block(t)
        if k == "declaration":
            d = self.declaration(t)
            return A.DeclStmt(d.line, d.col, d)
        if k == "expr_stmt":
            if ch[0] is None:
                return A.ExprStmt(ch[1].line, ch[1].column, None)
            e = self.expr(ch[0])
            return A.ExprStmt(e.line, e.col, e)
        if k == "if_stmt":
            return A.If(line, col, self.expr(ch[0]), self.stmt(ch[1]),
                        self.stmt(ch[2]) if ch[2] is not None else None)
        if k == "while_stmt":
            return A.While(line, col, self.expr(ch[0]), self.stmt(ch[1]))
        if k == "do_stmt":
            return A.DoWhile(line, col, self.stmt(ch[0]), self.expr(ch[1]))
        if k == "for_stmt":
            init = self.item(ch[0])
            if isinstance(init, A.ExprStmt) and init.expr is None:
                init = None
            cond = self.expr(ch[1]) if ch[1] is not None else None
            step = self.expr(ch[2]) if ch[2] is not None else None
            return A.For(line, col, init, cond, step, self.stmt(ch[3]))
        if k == "break_stmt":
            return A.Break(line, col)
        if k == "continue_stmt":
            return A.Continue(line, col)
        if k == "return_braced":
            return A.Return(line, col, self.brace(ch[1]))
        if k == "return_stmt":
            return A.Return(line, col, self.expr(ch[1]) if ch[1] is not None else None)
        raise AssertionError(k)

    # ---------------------------------------------------------------- expressions

    def targs(self, children) -> list:
        """Template arguments: a TypeSyntax or an Expr each."""
        return [self.type_name(a) if a.data == "type_name" else self.expr(a)
                for a in children if isinstance(a, Tree)]

    def expr(self, t) -> A.Expr:
        if isinstance(t, Token):  # pragma: no cover - primaries are always wrapped
            raise AssertionError(f"bare token {t!r}")
        k = t.data
        ch = t.children
        if k == "name":
            tok = ch[0]
            return A.Name(tok.line, tok.column, tok.value)
        if k == "template_id":
            tok = ch[0]
            return A.Name(tok.line, tok.column, tok.value, targs=self.targs(ch[2:-1]))
        if k == "functional_cast":
            tok = ch[0]
            ts = A.TypeSyntax(tok.line, tok.column, [A.Spec(tok.line, tok.column, tok.value,
                                                             typename=tok.value not in FCAST_WORDS)])
            arg = self.expr(ch[1]) if ch[1] is not None else A.IntLit(tok.line, tok.column, "0")
            return A.Cast(tok.line, tok.column, ts, arg, kind="functional")
        if k == "template_value_init":  # `Vec<int>()`: a class template instance, value-initialised
            tok = ch[0]
            targs = [self.type_name(a) if isinstance(a, Tree) and a.data == "type_name" else self.expr(a)
                     for a in ch[2:-1] if isinstance(a, Tree)]
            ts = A.TypeSyntax(tok.line, tok.column, [A.Spec(tok.line, tok.column, tok.value, typename=True,
                                                            targs=targs)])
            return A.Cast(tok.line, tok.column, ts, A.IntLit(tok.line, tok.column, "0"), kind="functional")
        if k == "this_ptr":
            return A.Name(t.meta.line, t.meta.column, "this")
        if k == "int_lit":
            tok = ch[0]
            return A.IntLit(tok.line, tok.column, tok.value)
        if k == "float_lit":
            tok = ch[0]
            return A.FloatLit(tok.line, tok.column, tok.value)
        if k == "char_lit":
            tok = ch[0]
            return A.CharLit(tok.line, tok.column, tok.value)
        if k == "string_lit":
            tok = ch[0]
            return A.StringLit(tok.line, tok.column, "".join(c.value for c in ch))
        if k == "bool_lit":
            tok = ch[0]
            return A.BoolLit(tok.line, tok.column, tok.value == "true")
        if k == "binop":
            op = ch[1]
            return A.Binary(op.line, op.column, op.value, self.expr(ch[0]), self.expr(ch[2]))
        if k == "assign":
            op = ch[1].children[0]
            return A.Assign(op.line, op.column, op.value, self.expr(ch[0]), self.expr(ch[2]))
        if k == "cond":
            q = ch[1]
            return A.Cond(q.line, q.column, self.expr(ch[0]), self.expr(ch[2]), self.expr(ch[4]))
        if k == "comma":
            c = ch[1]
            return A.Comma(c.line, c.column, self.expr(ch[0]), self.expr(ch[2]))
        if k == "cast":
            p = ch[0]
            return A.Cast(p.line, p.column, self.type_name(ch[1]), self.expr(ch[3]))
        if k == "cxx_cast":
            kw = ch[0]
            return A.Cast(kw.line, kw.column, self.type_name(ch[2]), self.expr(ch[5]),
                          kind=kw.value)
        if k == "unary":
            op = ch[0]
            return A.Unary(op.line, op.column, op.value, self.expr(ch[1]))
        if k == "sizeof_type":
            return A.SizeOf(ch[0].line, ch[0].column, self.type_name(ch[2]), None)
        if k == "sizeof_expr":
            return A.SizeOf(ch[0].line, ch[0].column, None, self.expr(ch[1]))
        if k == "pre_incdec":
            op = ch[0]
            return A.IncDec(op.line, op.column, op.value, True, self.expr(ch[1]))
        if k == "post_incdec":
            op = ch[1]
            return A.IncDec(op.line, op.column, op.value, False, self.expr(ch[0]))
        if k == "index":
            base = self.expr(ch[0])
            return A.Index(base.line, base.col, base, self.expr(ch[2]))
        if k == "call":
            callee = self.expr(ch[0])
            for a in ch[2].children if ch[2] is not None else ():
                if a.data == "brace_init":
                    tok = a.children[0]
                    raise self.ctx.error(tok.line, tok.column, "a brace list as a function argument is not "
                                         "supported; declare a variable ('S v = {...};') and pass it")
            args = [self.expr(a) for a in ch[2].children] if ch[2] is not None else []
            return A.Call(callee.line, callee.col, callee, args)
        if k == "member":
            name = ch[2]
            return A.Member(name.line, name.column, self.expr(ch[0]), name.value, ch[1].value == "->")
        raise AssertionError(k)
