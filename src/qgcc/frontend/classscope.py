"""Names qualified by a class, on the token stream: `Buffer::STRIDE` (a class constant, also
through a typedef of a class template instance) and `FDWT53<64, 8>::run(...)` (a static member
function), as rodinia dwt2d writes them.

The subset has no `::` in expressions, so this pass (after namespaces, `typename X<A>::T` and
`std::` are gone) writes `S::NAME` as the one name `S::NAME`, and `X<ARGS>::NAME` as the one
name `X::NAME` followed by `<ARGS>`, which the parser reads as a template-id (the name is
reported through `on_scoped`, so the token stream opens its `<`).  Sema (class_members.py)
looks the member up in the class.  Only names this file declared as a struct, class or typedef
are taken (`cg::sync`, `std::vector` keep the token stream's `'::'` error).
"""

from __future__ import annotations

from .membertypes import _close, _fill, _name, _scope, _v


def run(toks, on_scoped):
    classes: set[str] = set()
    it = iter(toks)
    buf: list = []
    kw = typedef = False
    last = None
    depth = 0
    while True:
        if not buf:
            t = next(it, None)
            if t is None:
                return
            buf.append(t)
        t = buf[0]
        v = _v(t)
        if t.type in ("STRUCT", "CLASS", "UNION"):  # a class's name, from its keyword on
            kw = True
        elif kw and t.type == "NAME":
            classes.add(t.value)
            kw = False
        elif v == "typedef":
            typedef, depth, kw = True, 0, False
        elif typedef and v in ("(", "{", "<"):
            depth += 1
        elif typedef and v in (")", "}", ">"):
            depth -= 1
        elif typedef and depth == 0 and t.type == "NAME":
            last = t.value
        elif typedef and depth == 0 and v == ";":
            typedef = False
            if last:
                classes.add(last)
        else:
            kw = False
        if not (t.type == "NAME" and t.value in classes):
            yield buf.pop(0)
            continue
        _fill(buf, it)
        if _scope(buf, 1):
            yield _name(t, f"{t.value}::{buf[3].value}")
            del buf[:4]
            continue
        k = _close(buf, 1) if len(buf) > 1 and _v(buf[1]) == "<" else None
        if k is not None and _scope(buf, k + 1):
            name = f"{t.value}::{buf[k + 3].value}"
            on_scoped(name)
            yield _name(t, name)
            yield from buf[1:k + 1]
            del buf[:k + 4]
            continue
        yield buf.pop(0)
