"""The Lark grammar of the subset (grammars/cuda.lark), loaded once per process.

Its own module because two stages lex with it: the macro expander (`macros`, which the
preprocessor calls for `#if`) and the parser; neither may import the other for it.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from lark import Lark

from ..usercache import cache_file


GRAMMAR_FILE = "cuda.lark"
HINTS = ("__launch_bounds__", "__attribute__", "__align__")  # dropped with their arguments


def grammar_path() -> Path:
    """The grammar inside the installed package if present, else the repository's."""
    here = Path(__file__).resolve().parents[1] / "__init__.py"  # qgcc/__init__.py (not imported: no circle)
    candidates = [here.parent / "grammars" / GRAMMAR_FILE]
    if len(here.parents) > 2:
        candidates.append(here.parents[2] / "grammars" / GRAMMAR_FILE)
    for c in candidates:
        if c.is_file():
            return c
    raise FileNotFoundError(f"cannot find the grammar {GRAMMAR_FILE} (looked in "
                            + ", ".join(str(c.parent) for c in candidates) + ")")


@lru_cache(maxsize=1)
def get_lark() -> Lark:
    parser = _load_lark()
    # `Lark.lex`, which the token passes call for every piece of text they re-lex (20-odd times
    # a fuzz program), builds a new BasicLexer and compiles its scanner each time unless the
    # Lark has a `lexer` of its own, which Lark gives only a lexer-only instance: one made here
    # is the same BasicLexer over the same configuration, built once (lexers keep no state
    # between texts).  `_build_lexer` is Lark's own (1.1 on); a Lark without it keeps the
    # slow path rather than failing.
    build = getattr(parser, "_build_lexer", None)
    if build is not None:
        parser.lexer = build()
    return parser


def _load_lark() -> Lark:
    # Lark keeps the analysed tables in a file (qgcc.usercache; Lark also checks inside it that
    # they were built from this grammar, with these options, by this Lark): a process loads them
    # (~0.02 s) instead of building them (~0.3 s), which every `qgcc` run paid.  Lark writes the
    # file in place, so a new one is written under a name of this process's and then renamed:
    # a process starting meanwhile never reads half of it.
    import os
    import sys

    import lark

    text = grammar_path().read_text(encoding="utf-8")
    opts = dict(parser="lalr", lexer="basic", propagate_positions=True, maybe_placeholders=True)
    path = cache_file("lark", f"{text}\n{sorted(opts.items())}\n{lark.__version__}\n{sys.version_info[:2]}", ".cache")
    if path is None:
        return Lark(text, **opts)
    if path.exists():
        return Lark(text, cache=str(path), **opts)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    parser = Lark(text, cache=str(tmp), **opts)
    try:
        os.replace(tmp, path)
    except OSError:
        pass
    return parser
