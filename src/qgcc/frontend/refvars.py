"""Local reference variables (`T &center = data[i];`, rodinia dwt2d's transform buffer), on the
AST of a function body as the parser builds it.

A reference names its referent for the rest of its block, so `T &r = LVALUE;` becomes the
pointer `T *const __qg_ref_r = &(LVALUE);` and every later `r` in its scope `(*__qg_ref_r)`:
reads and writes go to the referent's cell, as C++ requires (a local whose address is so taken
lives in the thread's frame, as any local whose address is taken).  A `const T &` bound to a
value that is not an lvalue (`const int &n = a + b;`) is that value's temporary, a `const T`.
Sema then checks the rewritten declaration as any other (a non-const reference to a value that
is not an lvalue is its error at the `&`).
"""

from __future__ import annotations

from . import ast as A

TEMPORARY = "&temporary"  # the '&' of a non-const reference initialised with a value that is not an lvalue


def _lvalue(e) -> bool:
    return isinstance(e, (A.Name, A.Index, A.Member)) or (isinstance(e, A.Unary) and e.op == "*")


def _replace(node: A.Name, target: str) -> None:
    deref = A.Unary(node.line, node.col, "*", A.Name(node.line, node.col, target))
    node.__class__ = A.Unary
    node.__dict__.clear()
    node.__dict__.update(deref.__dict__)


def _walk(node, names: dict[str, str]) -> None:
    if isinstance(node, list):
        for x in node:
            _walk(x, names)
        return
    if isinstance(node, A.Name):
        if node.targs is None and node.name in names:
            _replace(node, names[node.name])
        return
    if isinstance(node, A.Block):
        _items(node.items, dict(names))
        return
    if isinstance(node, A.For):
        scope = dict(names)
        _items([node.init] if node.init is not None else [], scope)
        for part in (node.cond, node.step, node.body):
            if part is not None:
                _walk(part, scope)
        return
    if isinstance(node, A.Node):
        for v in vars(node).values():
            if isinstance(v, (A.Node, list)):
                _walk(v, names)


def _items(items: list, names: dict[str, str]) -> None:
    """A block's items in order: a declaration's initialisers see the names before it; the names
    it declares shadow (or, for a reference, rename) the outer ones for the items after it."""
    for item in items:
        if not isinstance(item, A.DeclStmt):
            _walk(item, names)
            continue
        for it in item.decl.items:
            if it.init is not None:
                _walk(it.init, names)
            d = it.decl
            names.pop(d.name, None)
            if d.ref is None or d.params is not None or it.init is None or isinstance(it.init, A.BraceInit):
                continue
            const = any(s.text == "const" for s in item.decl.specs)
            if not _lvalue(it.init):
                if const:
                    d.ref = None  # a temporary: the value itself
                else:
                    d.ref.text = TEMPORARY  # named by sema (check_declarator_shape)
                continue
            target = f"__qg_ref_{d.name}"
            names[d.name] = target
            at = d.ref
            d.name, d.ref = target, None
            d.pointers = d.pointers + [[A.Spec(at.line, at.col, "const")]]
            it.init = A.Unary(at.line, at.col, "&", it.init)


def rewrite(body: A.Block) -> A.Block:
    _walk(body, {})
    return body
