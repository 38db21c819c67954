"""What qgcc keeps in the user's cache directory (qgcc.usercache) only saves time: the cached parser
tables and config text give exactly what building them anew gives, and the files go where
$QGCC_CACHE says, named by what they depend on."""

from __future__ import annotations

from pathlib import Path

from lark import Lark

from qgcc import usercache
from qgcc.frontend.grammar import get_lark, grammar_path

ROOT = Path(__file__).resolve().parents[1]


def test_the_cached_parser_tables_parse_every_sample_as_freshly_built_ones(monkeypatch, tmp_path):
    import qgcc.frontend.macros as macros
    import qgcc.frontend.parser as parser
    import qgcc.frontend.tokens as tokens

    monkeypatch.setenv("QGCC_CACHE", str(tmp_path))
    text = grammar_path().read_text(encoding="utf-8")
    opts = dict(parser="lalr", lexer="basic", propagate_positions=True, maybe_placeholders=True)
    path = usercache.cache_file("lark", text, ".cache")
    assert path is not None and path.parent == tmp_path
    Lark(text, cache=str(path), **opts)  # builds the tables and writes them
    assert path.stat().st_size > 0

    def asts(lark: Lark) -> list:
        for mod in (parser, tokens, macros):
            if hasattr(mod, "get_lark"):
                monkeypatch.setattr(mod, "get_lark", lambda: lark)
        return [parser.parse(cu.read_text(), cu.name) for cu in sorted((ROOT / "samples").glob("*.cu"))]

    assert asts(Lark(text, cache=str(path), **opts)) == asts(Lark(text, **opts))
    assert get_lark() is get_lark()


def test_the_cached_config_text_is_transformers_own(monkeypatch, tmp_path):
    from qgcc.qwen35 import text_config, text_config_json

    monkeypatch.setenv("QGCC_CACHE", str(tmp_path))
    want = text_config(7).to_json_string(use_diff=False)
    assert text_config_json(7) == want  # computed, then written
    files = list(tmp_path.glob("text_config-*.json"))
    assert len(files) == 1 and files[0].read_text() == want
    assert text_config_json(7) == want  # read back
    assert text_config_json(9) != want  # another layer count is another file
    assert len(list(tmp_path.glob("text_config-*.json"))) == 2


def test_no_usable_cache_directory_means_no_cache(monkeypatch, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("QGCC_CACHE", str(blocker / "sub"))
    assert usercache.cache_file("x", "key", ".json") is None
    usercache.write_text(None, "ignored")
    assert usercache.read_text(None) is None


def test_the_parser_writes_its_tables_once_whole_and_then_reads_them(monkeypatch, tmp_path):
    monkeypatch.setenv("QGCC_CACHE", str(tmp_path))
    first = get_lark.__wrapped__()  # builds the tables, writes them under a private name, renames
    files = sorted(p.name for p in tmp_path.iterdir())
    assert len(files) == 1 and files[0].startswith("lark-") and files[0].endswith(".cache")
    again = get_lark.__wrapped__()  # loads them
    assert sorted(p.name for p in tmp_path.iterdir()) == files
    src = "__global__ void k(float *a, int n) { int i = threadIdx.x; if (i < n) a[i] = 2.0f * a[i]; }"
    assert [t.type for t in first.lex(src)] == [t.type for t in again.lex(src)]
