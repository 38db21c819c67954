"""The shape of the source tree: no module over 700 lines, no import circle, and the front end's
passes import only the passes and shared types below them (docs/frontend.md).

Every import counts, wherever it is written: at the top of a module, inside a function (a "lazy"
import), or under `if TYPE_CHECKING:`.  A function-level import only postpones the circle to the
first call -- the two modules still need each other to be read or changed -- so it is not a way out.
The import of a package's `__init__` that Python performs before one of the package's own modules
is not counted (every module would otherwise "import" its package).
"""

from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
PKG = SRC / "qgcc"
MAX_LINES = 700

# The front end's passes, bottom up: a module may import modules of its own layer or below.
FRONTEND_LAYERS = [
    # shared types and tables: the AST, C types, constants, symbols, built-in tables, lowering values, the IR
    {"ast", "types", "structs", "floatconst", "doubleconst", "grammar", "symbols", "builtin_names", "values", "ir",
     "overloads"},
    {"preprocess", "macros", "coopgroups", "coopwide", "coopparts", "ctors", "texdecl", "enums", "hostcode",
     "lambdas", "membertypes", "namespaces", "classscope"},  # preprocess (and #if, macros)
    {"tokens", "parser", "refvars"},                                           # parse
    {"structsema", "sema_decls", "sema_templates", "sema_stmts", "sema_exprs", "sema_calls", "sema_textures",
     "sema_printf", "atomic_double", "class_members"},  # sema by topic (atomic_double: checked in sema_calls, emitted by lower_calls)
    {"sema", "firsterror"},  # sema's composition and entry; parse + sema, the first error in source order
    {"softfloat"},                                                             # the .cu libraries, checked
    {"bitops", "wide", "doubles", "intrinsics", "textures", "printf"},                               # lowering by family
    {"lower_stmts", "lower_memory", "lower_exprs", "lower_calls"},             # lowering by construct
    {"codegen"},                                                               # lowering's composition
    {"regalloc", "spillcolour", "spill"},                                      # registers -> isa.Instr
    {"__init__"},                                                              # the driver: compile_source
]


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PKG.rglob("*.py"))}


def _resolve(name: str, mods: dict[str, Path]) -> str | None:
    """The qgcc module an imported dotted name refers to (its longest module prefix), if any."""
    parts = name.split(".")
    while parts:
        if ".".join(parts) in mods:
            return ".".join(parts)
        parts.pop()
    return None


@lru_cache(maxsize=1)
def import_graph() -> dict[str, set[str]]:
    """module -> the qgcc modules it imports, counting every import statement in the file."""
    mods = _modules()
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for mod, path in mods.items():
        is_pkg = path.name == "__init__.py"
        package = mod if is_pkg else mod.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")
                    base = base[:len(base) - (node.level - 1)]
                    origin = ".".join(base + ([node.module] if node.module else []))
                else:
                    origin = node.module or ""
                # `from pkg import mod` imports the module pkg.mod; `from mod import name` imports mod.
                targets = [f"{origin}.{a.name}" if f"{origin}.{a.name}" in mods else origin for a in node.names]
            for t in targets:
                r = _resolve(t, mods)
                if r is not None and r != mod:
                    graph[mod].add(r)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_module_in_src_is_over_700_lines():
    long = {str(p.relative_to(SRC)): n for p in sorted(SRC.rglob("*.py"))
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines (split them by topic): {long}"


def test_no_import_circle_in_qgcc_counting_function_level_imports():
    cycles = _cycles(import_graph())
    assert not cycles, "modules that import each other (directly or through others): " + "; ".join(
        " <-> ".join(c) for c in cycles)


def test_frontend_passes_import_only_the_layers_below_them():
    layer_of = {m: i for i, layer in enumerate(FRONTEND_LAYERS) for m in layer}
    graph = import_graph()
    front = {m for m in graph if m.startswith("qgcc.frontend")}
    short = {m: ("__init__" if m == "qgcc.frontend" else m.rpartition(".")[2]) for m in front}
    unplaced = sorted(short[m] for m in front if short[m] not in layer_of)
    assert not unplaced, f"front-end modules missing from FRONTEND_LAYERS (and docs/frontend.md): {unplaced}"
    upward = sorted(f"{short[m]} (layer {layer_of[short[m]]}) imports {short[t]} (layer {layer_of[short[t]]})"
                    for m in front for t in graph[m] if t in front and layer_of[short[t]] > layer_of[short[m]])
    assert not upward, "imports that run back up the front end's passes: " + "; ".join(upward)


def test_import_graph_sees_function_level_and_relative_imports():
    # The checker itself: a lazy relative import inside a function is an edge of the graph.
    graph = import_graph()
    assert "qgcc.frontend.macros" in graph["qgcc.frontend.preprocess"]  # imported inside functions
    assert "qgcc.frontend.ast" in graph["qgcc.frontend.parser"]  # `from . import ast as A`
