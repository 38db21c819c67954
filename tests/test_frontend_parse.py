"""The front end's reading of source text: preprocessing, grammar, AST shape and positions.

These tests pin what the parser builds (before any type checking): C operator
precedence and associativity, declarators, statements, literals kept as
written, and the line/column every node carries for diagnostics.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from qgcc.frontend import ast as A
from qgcc.frontend.parser import UNSUPPORTED_KEYWORDS, get_lark, grammar_path, parse
from qgcc.frontend.preprocess import preprocess, strip_comments


def kernel_body(body: str, params: str = "int *a, int n"):
    tu = parse(f"__global__ void k({params}) {{\n{body}\n}}\n", "t.cu")
    return tu.items[0].body.items


def expr_of(text: str) -> A.Expr:
    (stmt,) = kernel_body(f"{text};")
    assert isinstance(stmt, A.ExprStmt)
    return stmt.expr


def shape(e) -> str:
    """A compact, fully parenthesised rendering of an expression tree."""
    if isinstance(e, A.Name):
        return e.name
    if isinstance(e, (A.IntLit, A.CharLit, A.FloatLit)):
        return e.text
    if isinstance(e, A.BoolLit):
        return "true" if e.value else "false"
    if isinstance(e, A.Binary):
        return f"({shape(e.left)} {e.op} {shape(e.right)})"
    if isinstance(e, A.Assign):
        return f"({shape(e.target)} {e.op} {shape(e.value)})"
    if isinstance(e, A.Unary):
        return f"({e.op}{shape(e.operand)})"
    if isinstance(e, A.IncDec):
        return f"({e.op}{shape(e.operand)})" if e.prefix else f"({shape(e.operand)}{e.op})"
    if isinstance(e, A.Cond):
        return f"({shape(e.cond)} ? {shape(e.then)} : {shape(e.other)})"
    if isinstance(e, A.Comma):
        return f"({shape(e.left)}, {shape(e.right)})"
    if isinstance(e, A.Cast):
        t = " ".join(s.text for s in e.type.specs) + " *" * len(e.type.pointers)
        return f"(({t}){shape(e.operand)})"
    if isinstance(e, A.Index):
        return f"{shape(e.base)}[{shape(e.index)}]"
    if isinstance(e, A.Call):
        return f"{shape(e.func)}({', '.join(shape(x) for x in e.args)})"
    if isinstance(e, A.Member):
        return f"{shape(e.base)}{'->' if e.arrow else '.'}{e.name}"
    raise AssertionError(type(e))


# ------------------------------------------------------------------ grammar file


def test_grammar_is_loaded_from_the_package_or_the_repository():
    p = grammar_path()
    assert p.name == "cuda.lark" and p.is_file()
    import qgcc
    pkg = Path(qgcc.__file__).resolve()
    assert p in (pkg.parent / "grammars" / "cuda.lark", pkg.parents[2] / "grammars" / "cuda.lark")
    assert get_lark() is get_lark()  # built once


# ------------------------------------------------------------------ expressions


@pytest.mark.parametrize("src,want", [
    ("a + b * c", "(a + (b * c))"),
    ("a * b + c", "((a * b) + c)"),
    ("a - b - c", "((a - b) - c)"),
    ("a / b % c", "((a / b) % c)"),
    ("a << 1 + 2", "(a << (1 + 2))"),
    ("a < b == c > d", "((a < b) == (c > d))"),
    ("a & b ^ c | d", "(((a & b) ^ c) | d)"),
    ("a || b && c", "(a || (b && c))"),
    ("a | b && c | d", "((a | b) && (c | d))"),
    ("a = b = c", "(a = (b = c))"),
    ("a += b -= 2", "(a += (b -= 2))"),
    ("x <<= 3", "(x <<= 3)"),
    ("x >>= y >> 1", "(x >>= (y >> 1))"),
    ("c ? x : y ? z : w", "(c ? x : (y ? z : w))"),
    ("a || b ? x : y", "((a || b) ? x : y)"),
    ("a = c ? x : y", "(a = (c ? x : y))"),
    ("x, y = 1, z", "((x, (y = 1)), z)"),
    ("-a * b", "((-a) * b)"),
    ("!a && ~b", "((!a) && (~b))"),
    ("*p++", "(*(p++))"),
    ("++*p", "(++(*p))"),
    ("-x--", "(-(x--))"),
    ("&a[i + 1]", "(&a[(i + 1)])"),
    ("(int)x + 1", "(((int)x) + 1)"),
    ("(unsigned char)-x", "((unsigned char)(-x))"),
    ("(const int *)p", "((const int *)p)"),
    ("s[i][j] * 2", "(s[i][j] * 2)"),
    ("f(a, b + 1)[2]", "f(a, (b + 1))[2]"),
    ("blockIdx.x * blockDim.x + threadIdx.x", "((blockIdx.x * blockDim.x) + threadIdx.x)"),
    ("a >= b != c <= d", "((a >= b) != (c <= d))"),
    ("x = y == z", "(x = (y == z))"),
])
def test_operator_precedence_and_associativity(src, want):
    assert shape(expr_of(src)) == want


def test_literals_are_kept_as_written():
    assert shape(expr_of("0x1F + 017 + 0b101 + 42u + 'a' + '\\n' + true")) == \
        "((((((0x1F + 017) + 0b101) + 42u) + 'a') + '\\n') + true)"
    e = expr_of("1.5f")
    assert isinstance(e, A.FloatLit) and e.text == "1.5f"
    e = expr_of('"two" "parts"')
    assert isinstance(e, A.StringLit) and e.text == '"two""parts"'


def test_operators_carry_the_position_of_their_token():
    e = expr_of("  x  =  a  +  b  *  c")
    assert (e.line, e.col) == (2, 6)  # '='
    assert (e.value.line, e.value.col) == (2, 12)  # '+'
    assert (e.value.right.line, e.value.right.col) == (2, 18)  # '*'
    assert (e.target.line, e.target.col) == (2, 3)
    c = expr_of("f(1)")
    assert (c.line, c.col) == (2, 1)
    m = expr_of("threadIdx.y")
    assert (m.line, m.col, m.name) == (2, 11, "y")


# ------------------------------------------------------------------ declarations


def test_kernel_signature_parameters_and_qualifiers():
    tu = parse("__global__ void k(int *a, const unsigned char * __restrict__ b, bool f, int c[]) {}",
               "t.cu")
    (fd,) = tu.items
    assert isinstance(fd, A.FunctionDef)
    assert [s.text for s in fd.specs] == ["__global__", "void"]
    assert fd.decl.name == "k" and (fd.decl.line, fd.decl.col) == (1, 17)
    a, b, f, c = fd.decl.params
    assert (a.name, [s.text for s in a.type.specs], len(a.type.pointers)) == ("a", ["int"], 1)
    assert [s.text for s in b.type.specs] == ["const", "unsigned", "char"]
    assert [[q.text for q in p] for p in b.type.pointers] == [["__restrict__"]]
    assert (f.name, f.type.pointers) == ("f", [])
    assert c.arrays == [None]


def test_several_declarators_in_one_declaration():
    (d,) = kernel_body("int i = 0, *p = a, j, s2 = n + 1;")
    assert isinstance(d, A.DeclStmt)
    items = d.decl.items
    assert [it.decl.name for it in items] == ["i", "p", "j", "s2"]
    assert [len(it.decl.pointers) for it in items] == [0, 1, 0, 0]
    assert items[2].init is None
    assert shape(items[3].init) == "(n + 1)"


def test_shared_arrays_keep_their_dimensions_outer_first():
    (d,) = kernel_body("__shared__ int tile[4][8];")
    (it,) = d.decl.items
    assert [shape(x) for x in it.decl.arrays] == ["4", "8"]
    assert [s.text for s in d.decl.specs] == ["__shared__", "int"]


def test_function_pointer_declarators_are_recognised_for_a_precise_error():
    (d,) = kernel_body("int (*fp)(int);")
    assert d.decl.items[0].decl.funcptr


def test_prototypes_and_void_parameter_lists():
    tu = parse("__device__ int f(int, unsigned *);\n__device__ int g(void) { return 1; }\n"
               "__global__ void k() {}", "t.cu")
    proto, g, k = tu.items
    assert isinstance(proto, A.Declaration)
    (it,) = proto.items
    assert [p.name for p in it.decl.params] == [None, None]
    assert len(it.decl.params[1].type.pointers) == 1
    assert isinstance(g, A.FunctionDef) and len(g.decl.params) == 1  # (void), resolved by sema


# ------------------------------------------------------------------ statements


def test_statements_of_every_kind():
    items = kernel_body(
        "if (n) a[0] = 1; else { a[1] = 2; }\n"
        "while (n > 0) n--;\n"
        "do { n++; } while (n < 3);\n"
        "for (int i = 0; i < n; i++) { if (i == 2) continue; if (i == 5) break; }\n"
        "for (;;) break;\n"
        ";\n"
        "return;")
    kinds = [type(s).__name__ for s in items]
    assert kinds == ["If", "While", "DoWhile", "For", "For", "ExprStmt", "Return"]
    f = items[3]
    assert isinstance(f.init, A.DeclStmt) and shape(f.cond) == "(i < n)" and shape(f.step) == "(i++)"
    body = f.body.items
    assert isinstance(body[0].then, A.Continue) and isinstance(body[1].then, A.Break)
    forever = items[4]
    assert forever.init is None and forever.cond is None and forever.step is None
    assert items[5].expr is None
    assert [(s.line, s.col) for s in items] == [(2, 1), (3, 1), (4, 1), (5, 1), (6, 1), (7, 1), (8, 1)]


def test_else_binds_to_the_nearest_if():
    (s,) = kernel_body("if (a) if (b) x = 1; else x = 2;")
    assert s.other is None
    assert s.then.other is not None


def test_blocks_nest_and_record_their_last_line():
    tu = parse("__global__ void k(int *a) {\n  {\n    { a[0] = 1; }\n  }\n}\n", "t.cu")
    fd = tu.items[0]
    assert fd.end_line == 5
    inner = fd.body.items[0]
    assert isinstance(inner, A.Block) and isinstance(inner.items[0], A.Block)


# ------------------------------------------------------------------ preprocessing


def test_comments_become_blanks_and_keep_every_position():
    src = "int a; // line comment\n/* block\n   comment */ int b; /* x */ int c;\n"
    out = strip_comments(src, "t.cu")
    assert out.split("\n")[2].index("int b") == src.split("\n")[2].index("int b")
    assert out.count("\n") == src.count("\n")
    assert "comment" not in out and '"' not in out
    assert strip_comments('char *s = "// not a comment";', "t.cu") == 'char *s = "// not a comment";'


def test_directives_are_blanked_and_macros_recorded():
    pp = preprocess("#include <cuda.h>\n#pragma unroll\n#define N 16 // size\n#define EMPTY\n"
                    "#define LONG (1 + \\\n 2)\nint x;\n", "t.cu")
    lines = pp.text.split("\n")
    assert lines[:6] == ["", "", "", "", "", ""]
    assert lines[6] == "int x;"
    assert pp.lookup("N", 7).body == "16"
    assert pp.lookup("EMPTY", 7).body == ""
    assert pp.lookup("LONG", 7).body == "(1 +  2)"  # C deletes backslash-newline
    assert pp.lookup("N", 3) is None  # not active on its own line


def test_conditional_directives_select_lines():
    pp = preprocess("#define A 1\n#ifdef A\nyes1\n#else\nno1\n#endif\n#ifndef A\nno2\n#elif 1\n"
                    "yes2\n#endif\n#if 0\nno3\n#endif\n#if A\nyes3\n#endif\n#if !defined(B)\nyes4\n#endif\n",
                    "t.cu")
    kept = [ln for ln in pp.text.split("\n") if ln]
    assert kept == ["yes1", "yes2", "yes3", "yes4"]


def test_macros_expand_on_the_token_stream_at_the_use_site():
    tu = parse("#define N 4\n#define M (N * 2)\n#define KERNEL __global__ void\n"
               "KERNEL k(int *a) {\n  a[0] = M;\n}\n", "t.cu")
    fd = tu.items[0]
    assert [s.text for s in fd.specs] == ["__global__", "void"]
    (st,) = fd.body.items
    v = st.expr.value
    assert shape(v) == "(4 * 2)"
    assert (v.line, v.col) == (5, 10)  # every expanded token sits on the macro name


def test_macro_scope_follows_define_and_undef():
    tu = parse("#define V 1\n__global__ void k(int *a) { a[0] = V; }\n#undef V\n#define V 2\n"
               "__global__ void j(int *a) { a[0] = V; }\n", "t.cu")
    vals = [fd.body.items[0].expr.value.text for fd in tu.items]
    assert vals == ["1", "2"]


def test_a_macro_does_not_expand_inside_its_own_expansion():
    tu = parse("#define X X + 1\n__global__ void k(int *a) { a[0] = X; }\n", "t.cu")
    assert shape(tu.items[0].body.items[0].expr.value) == "(X + 1)"


def test_unsupported_cpp_keywords_are_listed_with_a_message_each():
    for kw in ("goto", "typename", "new", "delete"):
        assert kw in UNSUPPORTED_KEYWORDS and kw in UNSUPPORTED_KEYWORDS[kw]
