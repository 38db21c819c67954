"""Named namespaces around device code (rodinia dwt2d wraps its kernels in `namespace dwt_cuda`),
lowered on the token stream: `namespace N { ITEMS }` becomes ITEMS, `N::name` (N one of the
file's namespaces) becomes `name`, and `using namespace N;` (or `N::M`) is dropped.

The names then share one scope, so two namespaces that define the same name are reported as a
redefinition, not told apart.  Namespace aliases (`namespace fs = ...;`) and other `using`
forms keep their errors (cooperative groups' own forms are coopgroups.py's).
"""

from __future__ import annotations

from .ctors import _v


def qualified(peek, k: int, names: set[str]) -> int:
    """The number of tokens from peek(k) that spell a namespace of the file (`N`, `N::M`), or 0."""
    n = 0
    while True:
        t = peek(k + n)
        if t is None or t.type != "NAME" or t.value not in names:
            return 0
        a, b = peek(k + n + 1), peek(k + n + 2)
        if a is None or b is None or not (_v(a) == ":" == _v(b)):
            return n + 1
        n += 3


def run(toks):
    it = iter(toks)
    look: list = []
    names: set[str] = set()
    opened: list[bool] = []  # per open '{': is it a namespace's (its '}' is dropped)

    def nxt():
        return look.pop(0) if look else next(it, None)

    def peek(k: int):
        while len(look) <= k:
            t = next(it, None)
            if t is None:
                return None
            look.append(t)
        return look[k]

    while True:
        t = nxt()
        if t is None:
            return
        v = _v(t)
        if v == "namespace":
            a, b = peek(0), peek(1)
            if a is not None and _v(a) == "{":  # an anonymous namespace
                nxt()
                opened.append(True)
                continue
            if a is not None and a.type == "NAME" and b is not None and _v(b) == "{":
                names.add(a.value)
                nxt()
                nxt()
                opened.append(True)
                continue
        if v == "using":
            n = qualified(peek, 1, names)  # `using namespace N;`, `using namespace N::M;`
            a, c = peek(0), peek(n + 1) if n else None
            if a is not None and _v(a) == "namespace" and c is not None and _v(c) == ";":
                del look[:n + 2]
                continue
        if t.type == "NAME" and t.value in names:
            a, b = peek(0), peek(1)
            if a is not None and b is not None and _v(a) == ":" == _v(b) \
                    and (a.line, a.column + 1) == (b.line, b.column):
                del look[:2]
                continue
        if v == "{":
            opened.append(False)
        elif v == "}" and opened:
            if opened.pop():
                continue
        yield t
