"""The token stream the parser is fed: Lark's lexer, macro expansion, then the token-level rules
of the subset (unsupported C++ keywords, `template<...>` and `operator` tokens, type names and
functional casts, struct and typedef names).  gcc-style messages for Lark's syntax errors.

Split from `parser` so the grammar-driven tree builder and this hand-written lexing layer can
each be read alone; `parser` is the only importer.
"""

from __future__ import annotations

from lark import Token
from lark.exceptions import UnexpectedCharacters

from ..diagnostics import CompileError
from . import classscope, ctors, enums, hostcode, lambdas, membertypes, namespaces, texdecl
from .coopgroups import Lowering
from .grammar import HINTS, get_lark
from .macros import Expander, HASH, HASHHASH
from .preprocess import Preprocessed
from .structs import VECTOR_NAMES
from .types import BUILTIN_TYPEDEFS


# Reserved words of CUDA C++ that the subset does not have, with the message naming them.
UNSUPPORTED_KEYWORDS: dict[str, str] = {
    "goto": "'goto' is not supported",
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
# The std:: names that are the built-in functions of the same name (tokens._std).
STD_NAMES = frozenset({"min", "max", "abs", "fabs", "fmin", "fmax", "sqrt", "cbrt", "exp", "exp2", "log", "log2",
                       "log10", "pow", "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh",
                       "tanh", "floor", "ceil", "trunc", "round", "rint", "fmod", "remainder", "hypot", "copysign",
                       "fdim", "fma", "expm1", "log1p", "ldexp", "isnan", "isinf", "isfinite", "signbit",
                       "sqrtf", "expf", "logf", "powf", "sinf", "cosf", "fabsf", "fminf", "fmaxf", "floorf",
                       "ceilf"})
# type words that can follow `operator` in a conversion operator (`operator const T *()`)
CONVERSION_WORDS = frozenset({"const", "unsigned", "signed", "int", "char", "bool", "float", "double", "long",
                              "void", "volatile", "struct"})
OVERLOADABLE = frozenset({"+", "-", "*", "/", "%", "+=", "-=", "*=", "/=", "==", "!=", "<", ">",
                          "<=", ">=", "=", "[]", "()"})
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
                 "cudaSurfaceObject_t": "surface objects"}


def _unknown_type(name: str) -> str:
    if name == "texture":  # texdecl.py rewrites the declaration form
        return ("a texture reference is declared at file scope as 'texture<TYPE, DIMENSIONS, "
                "cudaReadModeElementType> NAME;' (docs/subset.md, \"Textures\")")
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
        self.prev3: str | None = None  # the token before prev2 (a cast's type, an initialiser's '=')
        self.prev3_type: str | None = None
        # typedef/using declaration being read: [kind, names, paren depth, bracket depth, want]
        self.decl: list | None = None
        # Templates: the header being read or the templated function after it, the names of
        # function templates (a '<' after one opens template arguments) and open '<'s.
        self.tmpl: dict | None = None
        self.outer_tmpls: list[dict] = []  # templates whose body a member template interrupts
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
        self.shadowed: list[set[str]] = [set()]  # per open '{': type names a local variable hides

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

    def _std(self, toks):
        """`std::fmax(a, b)`, `std::min(i, j)`: the C++ standard library's math functions are
        the built-ins of the same name (CUDA's headers put them in std as well), so the `std::`
        before one of STD_NAMES is dropped; `using namespace std;` declares nothing here."""
        buf: list = []
        for tok in toks:
            buf.append(tok)
            if len(buf) < 4:
                continue
            a, b, c, d = buf[-4:]
            if (a.value == "std" and a.type not in ("STRLIT", "CHARLIT") and b.value == ":" == c.value
                    and (b.line, b.column + 1) == (c.line, c.column) and d.type == "NAME" and d.value in STD_NAMES):
                del buf[-4:-1]
            elif (a.value == "using" and b.value == "namespace" and c.value == "std" and d.value == ";"
                  and "STRLIT" not in (a.type, b.type, c.type) and "CHARLIT" not in (a.type, b.type, c.type)):
                del buf[-4:]
            while len(buf) > 3:
                yield buf.pop(0)
        yield from buf

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
        ct = ctors.Lowering(lambda text: get_lark().lex(text), lambda t, msg: self.ctx.error(t.line, t.column, msg))
        en = enums.Lowering(lambda text: get_lark().lex(text), lambda t, msg: self.ctx.error(t.line, t.column, msg))
        lm = lambdas.Lowering(lambda text: get_lark().lex(text), lambda t, msg: self.ctx.error(t.line, t.column, msg))
        tx = texdecl.Lowering(lambda text: get_lark().lex(text), lambda t, msg: self.ctx.error(t.line, t.column, msg))
        inner = cg.run(tx.run(ct.run(self._operators(self._std(membertypes.run(en.run(hostcode.run(
            self.pp.launch_names, lm.run(namespaces.run(self._drop_hints(exp.expand(self._placed()))))))))))))
        for tok in classscope.run(inner, self.template_names.add):  # one token of lookahead, for '::'
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
                if prev.type == "NAME" and prev.value in self.typedefs and self._shadows(tok):
                    self.shadowed[-1].add(prev.value)
                cls = self._classify(prev)
                if cls.type in ("LBRACE", "LBRACE_INIT"):
                    self.shadowed.append(set())
                elif cls.type == "RBRACE" and len(self.shadowed) > 1:
                    self.shadowed.pop()
                if tok.value == "(" and tok.type == "LPAR" and self._functional_cast(cls):
                    cls = self._retype(cls, "FCAST_TYPE")
                elif tok.value == "<" and self._template_value_init(cls):
                    cls = self._retype(cls, "FCAST_TYPE")
                yield cls
            prev = tok
        if prev is not None:
            yield self._classify(prev)

    def _shadows(self, nxt: Token) -> bool:
        """`LatLong *latLong = ...;` in a function: a local variable named like a type (rodinia
        nn's struct tag) hides the type in its block, as in C++; it is a name there."""
        p = self.prev
        if len(self.shadowed) < 2 or self.structs or p is None or nxt.value not in ("=", ";", ",", "["):
            return False
        if p.value == "*" and p.type == "STAR":
            return self.prev2_type == "TYPE_NAME" or self.prev2 in TYPE_KEYWORDS or self.prev2 == "*"
        return p.type == "TYPE_NAME" or (p.value in TYPE_KEYWORDS and p.type != "NAME")

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
        '(', '[', ',', 'return', a cast's ')', an initialiser list's first '{'), so declarations
        such as `int (*f)(int)` keep their meaning."""
        if not (tok.type == "TYPE_NAME" or tok.value in FCAST_WORDS):
            return False
        before = self.prev2
        if before == ")":  # `(int)F0()(x)`: right after a cast's type
            return self.prev3 in FCAST_WORDS or self.prev3_type == "TYPE_NAME" or self.prev3 == "*"
        if before == "{":  # `= {F0()(x), 1}`, `{{F0()(x)}}`, `S s{F0()(x)}`: an initialiser list's first value
            return self.prev3 in ("=", ",", "(", "{", "return") or self.prev2_type == "LBRACE_INIT"
        return before is not None and before in EXPR_BEFORE

    @staticmethod
    def _retype(tok: Token, kind: str) -> Token:
        return Token(kind, tok.value, start_pos=tok.start_pos, line=tok.line, column=tok.column,
                     end_line=tok.end_line, end_column=tok.end_column, end_pos=tok.end_pos)

    def _template(self, tok: Token) -> Token | None:
        """Template headers and template arguments; None when tok is ordinary."""
        v = tok.value
        t = self.tmpl
        if t is None or (t["state"] == "decl" and tok.type == "NAME" and v == "template"):
            if tok.type == "NAME" and v == "template":
                if t is not None:  # a member template inside a class template's body
                    self.outer_tmpls.append(t)
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
            # `template <> struct S<double> {...}`: an explicit specialisation (sema_templates.py)
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
            self.tmpl = self.outer_tmpls.pop() if self.outer_tmpls else None
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
            if special.type in ("TLT", "TGT") and self.decl is not None:
                self._track(special)  # `typedef Buf<int, W> B;`: W is not declared
            self.prev = special
            return special
        if tok.type in (HASH, HASHHASH):
            raise err(tok.line, tok.column, f"stray '{tok.value}' in program")
        if tok.type == "NAME":
            v = tok.value
            if v in UNSUPPORTED_KEYWORDS:
                raise err(tok.line, tok.column, UNSUPPORTED_KEYWORDS[v])
            if v == "nullptr":  # the null pointer constant, 0 here (no object is at address 0)
                self.prev = Token.new_borrow_pos("INTLIT", "0", tok)
                return self.prev
            fp16 = self.pp.fp16_line
            if v in HALF_TYPES and fp16 is not None and tok.line > fp16:
                raise err(tok.line, tok.column, f"'{v}' (half precision, cuda_fp16.h) is not "
                                                "supported; use float")
            if "::" in v and v.split("::")[0] in self.class_templates and v not in self.template_names:  # membertypes
                self.typedefs.add(v)
                self.class_templates.add(v)
            if v in self.typedefs and not (self.decl and self.decl[4] is True) and \
                    not any(v in names for names in self.shadowed):
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
        self.prev3, self.prev3_type = self.prev2, self.prev2_type
        self.prev2 = self.prev.value if self.prev is not None else None
        self.prev2_type = self.prev.type if self.prev is not None else None
        self.prev = tok
        return tok

    def _struct(self, tok: Token) -> None:
        """Struct tags become type names as soon as they are written (C++: `S` alone names the
        struct, also in its own body); constructors are named as not supported."""
        v = tok.value
        st = self.struct_state
        if tok.type in ("STRUCT", "CLASS", "UNION"):
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
        if st == "tag" and tok.type == "COLON" or st == "bases" and tok.type != "LBRACE":
            self.struct_state = "bases"  # `class L : protected IO<T> {` (structsema_bases.py)
            return
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
            # (ctors.py has lowered the constructors of every other struct by now)
            what = "destructors" if self.prev2 == "~" else "constructors of a class template"
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
            if self.prev is not None and self.prev.type in ("STRUCT", "CLASS", "UNION"):
                return  # `typedef struct tag {...} Name;`: the tag, not the declarator
            names.append(v)  # the first name of each declarator
            d[5] = False
        elif v in ("(", "{") and tok.type != "STRLIT" or tok.type == "TLT":
            d[2] += 1  # parentheses, the body of `typedef struct {...} T;`, template arguments
        elif v in (")", "}") and tok.type != "STRLIT" or tok.type == "TGT":
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
