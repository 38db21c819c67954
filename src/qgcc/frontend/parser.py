"""Source text -> `ast.TranslationUnit`.

Pipeline: `preprocess` (comments, directives) -> Lark's lexer -> macro
expansion and rejection of unsupported C++ keywords on the token stream ->
Lark's LALR parser fed token by token -> a tree builder that turns the Lark
tree into the dataclasses of `ast.py`.  Lark's exceptions are converted into
`CompileError`s with gcc-style messages ("expected ';' before 'x'").
"""

from __future__ import annotations

from lark import Token, Tree
from lark.exceptions import UnexpectedInput, UnexpectedToken

from ..diagnostics import CompileError
from . import ast as A, refvars
from .preprocess import Preprocessed, earliest, preprocess
from .grammar import get_lark, grammar_path  # noqa: F401 - re-exported
from .tokens import UNSUPPORTED_KEYWORDS, FCAST_WORDS, _Ctx, _Stream, _syntax_message, _unknown_type


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
        if bad.value == "[" and bad.type == "LSQB" and prev is not None and prev.type not in ("STRLIT", "CHARLIT") \
                and prev.value in ("=", "(", ",", "return"):
            raise ctx.error(line, col, "lambda expressions are not supported; write a __device__ function "
                                       "and pass what the lambda captures as parameters") from None
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
        tu = parse_pp(pp, filename)
        if pp.deferred:  # (a header or directive the preprocessor read past: the earliest error wins)
            raise earliest(pp.deferred)
        return tu
    except CompileError as e:
        raise pp.srcmap.remap(earliest([e] + pp.deferred), filename) from None


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
                    items.append(self.template_def(ch))
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

    def template_def(self, ch: Tree) -> A.TemplateDef:
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
                return A.TemplateDef(kw.line, kw.column, params,
                                     A.FunctionDef(d.line, d.col, decl.specs, d, None, d.line))
            sd = decl.specs[0].struct if len(decl.specs) == 1 and not decl.items else None
            if sd is None or sd.fields is None or not sd.tag:
                raise self.ctx.error(kw.line, kw.column, "a template must define a function "
                                     "or a struct ('template <...> struct NAME {...};')")
            return A.TemplateDef(kw.line, kw.column, params, None, sd)
        return A.TemplateDef(kw.line, kw.column, params, self.function_def(body))

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
                                                                                          "access_spec",
                                                                                          "template_def")]
        for b in t.children:
            if isinstance(b, Tree) and b.data == "base_spec":  # `: protected IO<T, C>`
                sd.bases.extend(self.specs(Tree("decl_specs", [Tree("decl_spec", [b.children[-1]])])))
        if not any(isinstance(c, Token) and c.value == "{" for c in t.children):
            return sd
        sd.fields = []
        sd.end_line = t.meta.end_line
        for ch in t.children:
            if isinstance(ch, Tree) and ch.data == "declaration":
                sd.fields.append(self.declaration(ch))
            elif isinstance(ch, Tree) and ch.data == "function_def":
                sd.methods.append(self.function_def(ch))
            elif isinstance(ch, Tree) and ch.data == "template_def":
                sd.templates.append(self.template_def(ch))
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
        default = self.expr(t.children[2]) if len(t.children) > 2 and t.children[2] is not None else None
        return A.ParamDecl(d.line, d.col, A.TypeSyntax(line, col, specs, d.pointers), d.name,
                           list(d.arrays), funcptr=d.funcptr or d.params is not None or d.parens,
                           ref=d.ref, default=default)

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
        body = refvars.rewrite(self.block(t.children[2]))  # `T &r = x;` locals
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
        if k == "switch_stmt":
            return A.Switch(line, col, self.expr(ch[0]), [self.item(c) for c in ch[1:]])
        if k == "case_label":
            return A.Case(ch[0].line, ch[0].column, self.expr(ch[1]))
        if k == "default_label":
            return A.Case(ch[0].line, ch[0].column, None)
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
        if k == "member_template":  # `b.f<A, B>`: a member function template's arguments
            name = ch[2]
            return A.Member(name.line, name.column, self.expr(ch[0]), name.value, ch[1].value == "->",
                            targs=self.targs(ch[4:-1]))
        raise AssertionError(k)
