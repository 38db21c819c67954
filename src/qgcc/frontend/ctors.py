"""Constructors and default member initialisers, lowered on the token stream to methods.

A struct's constructor is a member function that runs on a fresh object, and the subset
already has member functions, `this->` and struct returns; so this pass (after macro
expansion, before parsing) rewrites, for every non-template struct or class `S`:

* a constructor `S(params) : a(x), b{y} { body }` into `void __qg_ctor(params) { this->a = x;
  this->b = y; body }` (members in declaration order, as C++ initialises them; a member with
  a default initialiser and no list entry gets its default), `S() = default;` into an
  empty one, and default member initialisers `int n = 0;` into the list of every constructor
  (a struct with defaults and no constructor gets `S()`);
* after the struct, one factory per constructor, `S __qg_make_S(params)` (a fresh object, its
  constructor called, returned): a functional cast `S(1, 2)` anywhere becomes a call of it,
  which covers `S s = S(1, 2);` and `return S(a, b);`;
* in function bodies, `S s(1, 2);` into `S s; s.__qg_ctor(1, 2);` and `S s;` (a struct with a
  default constructor) into `S s; s.__qg_ctor();`.

A constructor of a class template, a member initialiser with several arguments, or an array
with a default initialiser keep a named error.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lark import Token

CTOR = "__qg_ctor"
LEAD = {"__device__", "__host__", "__forceinline__", "inline", "explicit", "constexpr", "__noinline__"}
NOT_FIELDS = {"static", "typedef", "using", "enum", "friend", "template", "struct", "class", "union"}


def _factory(tag: str) -> str:
    return f"__qg_make_{tag}"


def _v(t: Token) -> str | None:
    """The punctuation value of a token (None for string and character literals)."""
    return None if t.type in ("STRLIT", "CHARLIT") else t.value


@dataclass
class _Struct:
    tag: str
    params: list[list[Token]] = field(default_factory=list)  # each constructor's parameter tokens
    default_ctor: bool = False
    host: Token | None = None  # where a host-only constructor was (dropped)


class Lowering:
    def __init__(self, lex, error):
        self.lex = lex
        self.error = error  # (token, message) -> exception
        self.structs: dict[str, _Struct] = {}

    def emit(self, text: str, at: Token) -> list[Token]:
        return [Token(t.type, t.value, start_pos=at.start_pos, line=at.line, column=at.column,
                      end_line=at.end_line, end_column=at.end_column, end_pos=at.end_pos)
                for t in self.lex(text)]

    @staticmethod
    def match(toks: list, i: int) -> int:
        """Index of the bracket closing the one at toks[i]."""
        depth = 0
        for j in range(i, len(toks)):
            v = _v(toks[j])
            if v in ("(", "{", "["):
                depth += 1
            elif v in (")", "}", "]"):
                depth -= 1
                if depth == 0:
                    return j
        raise IndexError

    @staticmethod
    def split(toks: list, sep: str = ",") -> list[list]:
        """toks split at top-level `sep`."""
        out, cur, depth = [], [], 0
        for t in toks:
            v = _v(t)
            if v in ("(", "{", "["):
                depth += 1
            elif v in (")", "}", "]"):
                depth -= 1
            if v == sep and depth == 0:
                out.append(cur)
                cur = []
            else:
                cur.append(t)
        if cur:
            out.append(cur)
        return out

    # -- the pass ------------------------------------------------------------------
    def run(self, tokens):
        toks = list(tokens)
        if not any(t.type in ("STRUCT", "CLASS") for t in toks):
            yield from toks
            return
        try:
            toks = self.structs_pass(toks)
            if self.structs:
                toks = self.uses_pass(toks)
        except IndexError:
            raise self.error(toks[-1], "incomplete struct or constructor") from None
        yield from toks

    def structs_pass(self, toks: list) -> list:
        out: list = []
        i = depth = 0
        while i < len(toks):
            t = toks[i]
            if t.type in ("STRUCT", "CLASS") and i + 2 < len(toks) and toks[i + 1].type == "NAME" \
                    and _v(toks[i + 2]) == "{" and not (out and _v(out[-1]) in (">", "<", ",")):
                tag = toks[i + 1].value
                end = self.match(toks, i + 2)
                body, st = self.struct_body(tag, toks[i + 3:end], toks[i + 1])
                if st is not None and depth > 0:
                    raise self.error(toks[i + 1], f"constructors and default member initialisers of a struct "
                                                  f"declared in a function are not supported; declare "
                                                  f"'{tag}' at file scope")
                out.extend(toks[i:i + 3])
                out.extend(body)
                out.append(toks[end])
                i = end + 1
                if st is None:
                    continue
                while _v(toks[i]) != ";":  # `} s;` declarators, then the factories
                    out.append(toks[i])
                    i += 1
                out.append(toks[i])
                i += 1
                self.structs[tag] = st
                for p in st.params:
                    out.extend(self.factory(tag, p, toks[end]))
                continue
            if _v(t) == "{":
                depth += 1
            elif _v(t) == "}":
                depth -= 1
            out.append(t)
            i += 1
        return out

    def items(self, body: list) -> list[tuple[str, list]]:
        """A struct body as ("func" | "field", tokens) items."""
        out, i, start = [], 0, 0
        while i < len(body):
            v = _v(body[i])
            if v in ("(", "["):
                i = self.match(body, i) + 1
                continue
            if v == "{":
                seg = body[start:i]
                is_func = self.is_method_decl(seg)
                j = self.match(body, i)
                if is_func:
                    if j + 1 < len(body) and _v(body[j + 1]) == ";":
                        j += 1
                    out.append(("func", body[start:j + 1]))
                    i = start = j + 1
                else:
                    i = j + 1
                continue
            if v == ";":
                out.append(("field", body[start:i + 1]))
                start = i + 1
            elif v == ":" and body[i - 1].value in ("public", "private", "protected") and i == start + 1:
                out.append(("access", body[start:i + 1]))
                start = i + 1
            i += 1
        if start < len(body):
            out.append(("field", body[start:]))
        return out

    def struct_body(self, tag: str, body: list, at: Token):
        """The rewritten body and what the struct's uses need (None: nothing to do)."""
        items = self.items(body)
        defaults: dict[str, list] = {}
        order: list[str] = []
        mtypes: dict[str, str] = {}  # member -> the tag of its type, when that type has constructors
        ctors = []  # (index in items, lead tokens, params, init list, body tokens or None)
        new_items: list[list] = []
        host: Token | None = None  # a host-only constructor (dropped: host code)
        for kind, seg in items:
            if kind == "func" and self.destructor(tag, seg):
                continue
            if kind == "func" or (kind == "field" and any(_v(x) == "=" and k + 1 < len(seg) and
                                                          _v(seg[k + 1]) == "default" for k, x in enumerate(seg))):
                c = self.ctor(tag, seg)
                if c is not None and not any(x.value == "__device__" for x in c[0]):
                    host = host or next(x for x in seg if x.value == tag)
                    continue
                if c is not None:
                    ctors.append((len(new_items), *c))
                    new_items.append([])
                    continue
            if kind == "field" and seg and seg[0].value not in NOT_FIELDS and not self.is_method_decl(seg):
                seg = self.field(seg, defaults, order, mtypes)
            new_items.append(seg)
        built = {m for m, tg in mtypes.items() if self.structs[tg].default_ctor}  # members to default-construct
        if not ctors and not defaults and not built:
            return [x for seg in new_items for x in seg], (_Struct(tag, host=host) if host else None)
        st = _Struct(tag, host=host)
        if not ctors:
            ctors.append((len(new_items), self.device([], at), [], [], []))
            new_items.append([])
        for idx, lead, params, inits, cbody in ctors:
            given = {}
            for name_tok, args in inits:
                if name_tok.value not in order:
                    raise self.error(name_tok, f"'{name_tok.value}' in the initialiser list of '{tag}' is not "
                                               f"a data member of '{tag}'")
                if name_tok.value in mtypes:  # a member with constructors: built by its factory
                    joined = [x for k, a in enumerate(args) for x in (self.emit(",", at) if k else []) + a]
                    given[name_tok.value] = self.emit(f"{_factory(mtypes[name_tok.value])}(", at) + joined \
                        + self.emit(")", at)
                    continue
                if len(args) != 1:
                    raise self.error(name_tok, f"member initialiser '{name_tok.value}(...)' with "
                                               f"{len(args)} arguments is not supported; write one value")
                given[name_tok.value] = args[0]
            text_toks: list = []
            for m in order:
                val = given.get(m, defaults.get(m))
                if val is not None:
                    text_toks += self.emit(f"this->{m} = (", at) + val + self.emit(");", at)
                elif m in built:
                    text_toks += self.emit(f"this->{m}.{CTOR}();", at)
            lead = [x for x in lead if x.value != "explicit"]
            new_items[idx] = (lead + self.emit(f"void {CTOR}(", at) + params
                              + self.emit(") {", at) + text_toks + cbody + self.emit("}", at))
            st.params.append(params)
            if not self.split_params(params):
                st.default_ctor = True
        return [x for seg in new_items for x in seg], st

    @staticmethod
    def host_destructor(tag: str, seg: list) -> bool:
        """`~S() {...}` without `__device__`: host code (freeing what a host constructor made)."""
        k = next((k for k, x in enumerate(seg) if x.value not in LEAD), len(seg))
        return k + 2 < len(seg) and seg[k].value == "~" and seg[k + 1].value == tag

    def destructor(self, tag: str, seg: list) -> bool:
        """A destructor without `__device__` is host code (freeing what a host constructor made):
        dropped; a device one is a named error."""
        if not self.host_destructor(tag, seg):
            return False
        k = next(k for k, x in enumerate(seg) if x.value not in LEAD)
        if any(x.value == "__device__" for x in seg[:k]):
            raise self.error(seg[k], f"destructors are not supported ('~{tag}'); a local struct needs no "
                                     f"clean-up here, so remove it or make it a member function")
        return True

    def device(self, lead: list, at: Token) -> list:
        """An implicit or defaulted constructor is `__host__ __device__` in CUDA."""
        return lead if any(x.value == "__device__" for x in lead) else self.emit("__device__", at) + lead

    @staticmethod
    def is_method_decl(seg: list) -> bool:
        """A '(' comes before any '=' at the top level: a function, not a member's initialiser."""
        for x in seg:
            v = _v(x)
            if v == "=":
                return False
            if v == "(":
                return True
        return False

    def split_params(self, params: list) -> list[list]:
        ps = self.split(params)
        if len(ps) == 1 and len(ps[0]) == 1 and ps[0][0].value == "void":
            return []
        return ps

    def ctor(self, tag: str, seg: list):
        """(lead, params, inits, body) when seg defines a constructor of tag, else None."""
        k = 0
        while k < len(seg) and seg[k].value in LEAD:
            k += 1
        if not (k + 1 < len(seg) and seg[k].value == tag and _v(seg[k + 1]) == "("):
            return None
        close = self.match(seg, k + 1)
        params = seg[k + 2:close]
        rest = seg[close + 1:]
        if rest and _v(rest[0]) == "=":  # `S() = default;`
            return self.device(seg[:k], seg[k]), [], [], []
        inits = []
        j = 0
        if rest and _v(rest[0]) == ":":
            j = 1
            while _v(rest[j]) != "{" or (j > 0 and _v(rest[j - 1]) not in (")", "}")):
                name = rest[j]
                if _v(rest[j + 1]) not in ("(", "{"):
                    raise self.error(name, f"expected '(' after '{name.value}' in the member initialiser list")
                e = self.match(rest, j + 1)
                inits.append((name, self.split(rest[j + 2:e])))
                j = e + 1
                if _v(rest[j]) == ",":
                    j += 1
        if _v(rest[j]) != "{":
            return None  # a declaration only: the parser names it
        body = rest[j + 1:self.match(rest, j)]
        return seg[:k], params, inits, body

    def field(self, seg: list, defaults: dict, order: list, mtypes: dict) -> list:
        """A data member declaration without its default initialisers (recorded in defaults)."""
        decls = self.split(seg[:-1] if _v(seg[-1]) == ";" else seg)
        out = []
        for n, d in enumerate(decls):
            eq = next((k for k, x in enumerate(d) if _v(x) == "="), None)
            brace = None
            if eq is None and d and _v(d[-1]) == "}":
                brace = next(k for k, x in enumerate(d) if _v(x) == "{")
            cut = eq if eq is not None else brace
            decl = d if cut is None else d[:cut]
            names = [k for k, x in enumerate(decl) if x.type == "NAME"]
            if names:
                name_tok = decl[names[-1]]
                order.append(name_tok.value)
                tag = next((x.value for x in decls[0] if x.type == "NAME" and x.value in self.structs), None)
                if tag is not None and not any(_v(x) in ("*", "[") for x in decl):
                    mtypes[name_tok.value] = tag
                if cut is not None:
                    val = d[eq + 1:] if eq is not None else d[brace + 1:-1]
                    if any(_v(x) == "[" for x in decl):
                        raise self.error(name_tok, f"a default initialiser of the array member "
                                                   f"'{name_tok.value}' is not supported; assign it in a constructor")
                    if val and _v(val[0]) == "{" and _v(val[-1]) == "}":
                        val = val[1:-1]
                    if len(self.split(val)) != 1:
                        raise self.error(name_tok, f"default initialiser of '{name_tok.value}' must be one value")
                    defaults[name_tok.value] = val
            if n:
                out.append(self.emit(",", d[0])[0])
            out.extend(decl)
        return out + seg[-1:] if _v(seg[-1]) == ";" else out

    def factory(self, tag: str, params: list, at: Token) -> list:
        names = []
        for k, p in enumerate(self.split_params(params)):
            eq = next((j for j, x in enumerate(p) if _v(x) == "="), len(p))
            ns = [x for x in p[:eq] if x.type == "NAME"]
            if not ns:
                raise self.error(p[0] if p else at, f"a constructor parameter of '{tag}' needs a name")
            names.append(ns[-1].value)
        return (self.emit(f"__device__ {tag} {_factory(tag)}(", at) + params
                + self.emit(f") {{ {tag} __qg_r; __qg_r.{CTOR}({', '.join(names)}); return __qg_r; }}", at))

    # -- uses ----------------------------------------------------------------------
    def uses_pass(self, toks: list) -> list:
        out: list = []
        ctx: list[str] = []  # per open brace: "struct" (a struct body) or "block"
        i = 0
        while i < len(toks):
            t = toks[i]
            v = _v(t)
            if v == "{":
                prev = out[-3:]
                in_struct = any(x.type in ("STRUCT", "CLASS") for x in prev)
                ctx.append("struct" if in_struct else "block")
            elif v == "}" and ctx:
                ctx.pop()
            st = self.structs.get(t.value) if t.type == "NAME" else None
            if st is None or (out and out[-1].type in ("STRUCT", "CLASS")) or i + 1 >= len(toks):
                out.append(t)
                i += 1
                continue
            nxt = _v(toks[i + 1])
            if st.host is not None and not st.params:
                if nxt == "(" or ("block" in ctx and ctx[-1] == "block" and toks[i + 1].type == "NAME"
                                  and _v(toks[i + 2]) in ("(", ";", "[")):
                    raise self.error(t, f"constructor '{t.value}::{t.value}' (line {st.host.line}) is host "
                                        f"code; make it __device__ to construct a '{t.value}' on the device")
                out.append(t)
                i += 1
                continue
            if nxt == "(":  # S(args): a value
                out.extend(self.emit(_factory(t.value), t))
                i += 1
                continue
            in_body = "block" in ctx and ctx[-1] == "block"
            if in_body and toks[i + 1].type == "NAME" and toks[i + 1].value != "__qg_r" and i + 2 < len(toks):
                name = toks[i + 1]
                after = _v(toks[i + 2])
                if after in ("(", "{") and out and _v(out[-1]) == "(":
                    raise self.error(name, f"declare '{t.value} {name.value}(...)' before the statement; a "
                                           f"constructor call is not supported in a 'for' header")
                if after in ("(", "{"):  # `S s(1, 2);` and `S s{1, 2};` both call the constructor
                    e = self.match(toks, i + 2)
                    if _v(toks[e + 1]) != ";":
                        raise self.error(name, f"declare one '{t.value}' per statement when it has "
                                               f"constructor arguments ('{t.value} {name.value}(...);')")
                    if out and out[-1].value == "const":
                        out.pop()
                    out.extend([t, name])
                    out.extend(self.emit(f"; {name.value}.{CTOR}(", name))
                    out.extend(toks[i + 3:e])
                    out.extend(self.emit(")", toks[e]))
                    i = e + 1
                    continue
                shared = any(x.value in ("__shared__", "extern") for x in out[-2:])
                if after in (";", "[") and not shared and not (out and _v(out[-1]) in ("(", ",")):
                    if after == "[":
                        raise self.error(name, f"a local array of '{t.value}' (a struct with a constructor) is "
                                               f"not supported; construct the elements one by one")
                    if not st.default_ctor:
                        raise self.error(name, f"'{t.value}' has no default constructor; write "
                                               f"'{t.value} {name.value}(...);' with its arguments")
                    out.extend([t, name])
                    out.extend(self.emit(f"; {name.value}.{CTOR}()", name))
                    i += 2
                    continue
            out.append(t)
            i += 1
        return out
