"""Named namespaces around device code (rodinia dwt2d wraps its kernels in `namespace dwt_cuda`),
lowered on the token stream: `namespace N { ITEMS }` becomes ITEMS, `N::name` (N one of the
file's namespaces) becomes `name`, and `using namespace N;` is dropped.

The names then share one scope, so two namespaces that define the same name are reported as a
redefinition, not told apart.  Namespace aliases (`namespace fs = ...;`) and other `using`
forms keep their errors (cooperative groups' own forms are coopgroups.py's).
"""

from __future__ import annotations

from .ctors import _v


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
            a, b, c = peek(0), peek(1), peek(2)
            if a is not None and _v(a) == "namespace" and b is not None and b.value in names \
                    and c is not None and _v(c) == ";":
                del look[:3]
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
