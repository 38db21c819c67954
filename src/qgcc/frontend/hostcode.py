"""Host code that device code does not use, left out on the token stream.

qgcc compiles the device side of a .cu file, as nvcc's device pass does; a published file
also holds host code: `main`, helper functions, classes with `virtual` members or base
classes, structs of host types (`pthread_barrier_t *`, `CPUAnimBitmap *`), globals of the
host.  This pass (after macro expansion, before enums, constructors and parsing) splits the
file into its top-level items and leaves out those that are host code by themselves:

* a function (or function template, or prototype) without `__device__` or `__global__`;
* a struct or class (or class template) with a host-only mark: `virtual`, a base class, `::`
  in its body, a member function without `__device__` (constructors and destructors are
  frontend/ctors.py's), a `void *` or `T **` member, or a member whose type is a name not
  declared before it;
* a file-scope variable of a type not declared before it (`FILE *fp;`) or without device
  storage (`int nthreads;`, `static const double PI = ...;`), and a typedef (`typedef
  vector<bool> Code;`, `typedef struct list_item list_item_t;`: a typedef only names a type,
  it is kept when something kept uses the name).

An item left out is still compiled, and so reported with the usual error, when a kept item
names it (a kernel that uses a host struct, calls a host function or reads a host global):
the kept set grows until nothing it names is left out.  A file without `__global__` keeps
everything (its errors are the errors of its items).  `extern "C" { ... }` is transparent.
"""

from __future__ import annotations

from dataclasses import dataclass, field


from .ctors import _v
from .structs import VECTOR_NAMES
from .types import BUILTIN_TYPEDEFS

TYPE_WORDS = {"int", "unsigned", "signed", "char", "bool", "float", "double", "long", "short", "void",
              "auto", "size_t"}
QUALIFIERS = {"const", "volatile", "static", "mutable", "inline", "__inline__", "__forceinline__", "__noinline__",
              "__device__", "__host__", "__global__", "__shared__", "__constant__", "__managed__", "extern",
              "constexpr", "explicit", "register", "__restrict__", "__restrict", "typedef", "struct", "class",
              "union", "enum", "typename", "friend"}
NOT_TYPES = {"public", "private", "protected", "operator", "template", "using", "return"}
DEVICE = {"__device__", "__global__"}
STORAGE = {"__device__", "__constant__", "__shared__", "__managed__"}


@dataclass
class _Item:
    toks: list
    kind: str = "other"  # function, struct, decl, using, linkage
    names: set = field(default_factory=set)  # what it declares
    host: bool = False


def _top(words: list, what: str) -> int:
    """The index of the first `what` outside brackets (len(words) if none)."""
    depth = 0
    for i, v in enumerate(words):
        if v == what and depth == 0:
            return i
        if v in ("(", "[", "{"):
            depth += 1
        elif v in (")", "]", "}"):
            depth -= 1
    return len(words)


def _words(toks) -> list:
    return [_v(t) for t in toks]


class HostCode:
    def __init__(self):
        self.known: set[str] = set(BUILTIN_TYPEDEFS) | set(VECTOR_NAMES) | TYPE_WORDS

    def run(self, tokens, keep=frozenset()):
        toks = list(tokens)
        if not any(_v(t) == "__global__" for t in toks):
            yield from toks
            return
        items = self.split(toks)
        for it in items:
            self.classify(it)
        kept = [it for it in items if not it.host]
        # (a host function of the name of a kept device function is another overload: not pulled in)
        defined = set().union(*(it.names for it in kept if it.kind == "function")) if kept else set()
        named = set(keep)
        for it in kept:
            named |= self.names_used(it)
        changed = True
        while changed:
            changed = False
            for it in items:
                if it.host and it.names & (named - defined):
                    it.host = False
                    named |= self.names_used(it)
                    changed = True
        for it in items:
            if not it.host:
                yield from it.toks

    # ------------------------------------------------------------------ items

    @staticmethod
    def split(toks: list) -> list[_Item]:
        items: list[_Item] = []
        linkage = 0  # open `extern "C" {` blocks
        i, n = 0, len(toks)
        while i < n:
            if _v(toks[i]) == "extern" and i + 2 < n and toks[i + 1].type == "STRLIT" and _v(toks[i + 2]) == "{":
                items.append(_Item(toks[i:i + 3], "linkage"))
                linkage += 1
                i += 3
                continue
            if linkage and _v(toks[i]) == "}":
                items.append(_Item(toks[i:i + 1], "linkage"))
                linkage -= 1
                i += 1
                continue
            j, depth, body = i, 0, None
            while j < n:
                v = _v(toks[j])
                if v in ("(", "[", "{"):
                    if v == "{" and depth == 0 and body is None:
                        prev = _v(toks[j - 1]) if j > i else None
                        body = "func" if prev in (")", "const") or _v(toks[i]) == "namespace" else "data"
                    depth += 1
                elif v in (")", "]", "}"):
                    depth -= 1
                    if v == "}" and depth == 0 and body == "func":
                        break
                    if depth < 0:  # a stray '}': the parser names it
                        break
                elif v == ";" and depth == 0:
                    break
                j += 1
            items.append(_Item(toks[i:j + 1]))
            i = j + 1
        return items

    def classify(self, it: _Item) -> None:
        toks = it.toks
        w = _words(toks)
        if it.kind == "linkage" or not toks:
            return
        params: set[str] = set()
        k = 0
        if w[0] == "extern" and len(toks) > 1 and toks[1].type == "STRLIT":
            k = 2
        if k < len(w) and w[k] == "template":
            k, params = self.template_header(toks, k)
        lead = w[k:]
        if not lead or lead[0] == "namespace" or w[-1] not in (";", "}") or \
                not (lead[0] and (lead[0][0].isalpha() or lead[0][0] == "_")):
            return  # not a whole declaration (a stray '}', the end of the file): the parser's
        if lead[0] == "using":
            if len(lead) > 2 and lead[2] == "=":
                it.names.add(lead[1])
                self.known.add(lead[1])
            return
        brace, paren, eq = (_top(lead, x) for x in ("{", "(", "="))
        agg = next((x for x in range(min(brace, paren, eq)) if lead[x] in ("struct", "class", "union")), None)
        if lead[0] != "typedef" and agg is not None and brace < min(paren, eq):
            it.kind = "struct"
            tag = toks[k + agg + 1].value if agg + 1 < brace and toks[k + agg + 1].type == "NAME" else None
            if tag:
                it.names.add(tag)
                self.known.add(tag)
            it.host = self.host_struct(toks[k + agg + 1:], params | ({tag} if tag else set()))
            return
        if "enum" in lead[:2]:  # enums are for device code too (frontend/enums.py)
            it.kind = "enum"
            it.names |= {t.value for t in toks[k:k + 4] if t.type == "NAME" and _v(t) not in QUALIFIERS}
            it.names |= self.declarators(toks[k:])
            self.known |= it.names
            return
        if paren < min(brace, eq) and lead[0] != "typedef":
            it.kind = "function"
            name = toks[k + paren - 1] if paren else None
            if name is not None and name.type == "NAME":
                it.names.add(name.value)
            it.host = not (set(lead[:paren]) & DEVICE)
            return
        it.kind = "decl"
        if lead[0] == "typedef" and agg is not None and brace < len(lead):  # `typedef struct [tag] {...} Name;`
            inner = toks[k + agg + 1:]
            tag = inner[0].value if inner and inner[0].type == "NAME" else None
            it.host = self.host_struct(inner, params | ({tag} if tag else set()))
            if tag:
                it.names.add(tag)
        elif lead[0] == "typedef" or not (set(lead[:eq]) & (STORAGE | {"const", "constexpr"})) or \
                (not set(lead[:eq]) & STORAGE and "double" in lead[:eq]):
            # (a double constant without device storage too: `static const double PI = ...;`, which
            # device code cannot hold at file scope: the host's, kept when device code names it)
            first = next((t for t in toks[k:] if _v(t) not in QUALIFIERS), None)
            if first is not None and first.value in ("texture", "surface") and lead[0] != "typedef":
                return  # a texture reference: device-side (frontend/texdecl.py)
            if first is not None and first.type == "NAME" and first.value not in self.known | params:
                it.host = True  # a type nothing declares: a host header's
            else:  # a host global (`int nthreads = 4;`), or a typedef: only a name, kept when named
                it.host = True
        names = self.declarators(toks[k:])
        it.names |= names
        if lead[0] == "typedef":
            self.known |= names | it.names

    @staticmethod
    def template_header(toks: list, k: int) -> tuple[int, set]:
        """The index after `template <...>` and its type parameters' names."""
        depth, j, params = 0, k + 1, set()
        while j < len(toks):
            v = _v(toks[j])
            if v == "<":
                depth += 1
            elif v in (">", ">>"):
                depth -= 1 if v == ">" else 2
                if depth <= 0:
                    return j + 1, params
            elif v in ("typename", "class") and j + 1 < len(toks) and toks[j + 1].type == "NAME":
                params.add(toks[j + 1].value)
            j += 1
        return j, params

    @staticmethod
    def declarators(toks: list) -> set:
        """The names a declaration declares: each NAME before `;`, `,`, `=`, `[` at depth 0."""
        out, depth = set(), 0
        for a, b in zip(toks, toks[1:]):
            v = _v(a)
            if v in ("(", "[", "{"):
                depth += 1
            elif v in (")", "]", "}"):
                depth -= 1
            if depth == 0 and a.type == "NAME" and _v(b) in (";", ",", "=", "[", ")"):
                out.add(a.value)
        return out

    def host_struct(self, toks: list, local: set) -> bool:
        """toks: from the tag (or the '{') of a struct or class definition."""
        w = _words(toks)
        if "{" not in w:
            return False
        brace = w.index("{")
        if ":" in w[:brace]:
            return True  # a base class
        tag = w[0] if toks[0].type == "NAME" else None
        depth, start, stmt = 0, True, []
        for x, t in enumerate(toks[brace:], brace):
            v = w[x]
            if v == "virtual" or (v == ":" and x + 1 < len(w) and w[x + 1] == ":"):
                return True
            if depth == 1 and v == "*" and (w[x - 1] in ("*", "void")):
                return True  # a `T **` or `void *` member: host data (bpnn's weights, b+tree's nodes)
            if v == "(" and depth == 1 and self.host_method(stmt, tag):
                return True
            if v in ("{", "(", "["):
                depth += 1
                start = v == "{" and depth == 1
                if start:
                    stmt = []
                continue
            if v in ("}", ")", "]"):
                depth -= 1
                start = depth == 1 and v == "}"
                if start:
                    stmt = []
                continue
            if depth != 1:
                continue
            if v == ";" or (v == ":" and stmt and stmt[-1] in ("public", "private", "protected")):
                start, stmt = True, []
                continue
            stmt.append(v)
            if start and t.type == "NAME" and v not in QUALIFIERS and v not in NOT_TYPES:
                nxt = w[x + 1] if x + 1 < len(w) else None
                if v not in self.known and v not in local and nxt is not None and \
                        (toks[x + 1].type == "NAME" or nxt in ("*", "&", "<")):
                    return True  # a member of a type nothing declares
            if v not in QUALIFIERS:
                start = False
        return False

    @staticmethod
    def host_method(stmt: list, tag: str | None) -> bool:
        """A member function without `__device__` (the '(' after its name); constructors and
        destructors are frontend/ctors.py's (a host one is dropped there)."""
        if not stmt or set(stmt) & DEVICE or "=" in stmt or "~" in stmt or "typedef" in stmt:
            return False
        first = next((x for x in stmt if x not in QUALIFIERS), None)
        return first is not None and first != tag and first != "operator" or "operator" in stmt

    @staticmethod
    def names_used(it: _Item) -> set:
        return {t.value for t in it.toks if t.type == "NAME"}


def run(keep, tokens):
    """`keep`: names that count as used by device code (kernel template arguments named at launch)."""
    return HostCode().run(tokens, keep)
