"""The figures the docs state about the machine are the code's: a second implementation is
written from docs/protocol.md, docs/qg-format.md and docs/checkpoint.md alone, so a stale
layer range, field width, limit or memory map there is a bug (qgcc.tools.docgen)."""

from __future__ import annotations

import dataclasses

from click.testing import CliRunner

from qgcc.cli.qgrun_cmd import main as qgrun_main
from qgcc.spec import SPEC
from qgcc.tools import docgen


def test_every_generated_block_in_the_docs_matches_the_code():
    """One test, so that the reference network is linked once (describe.reference_network)."""
    from qgcc.tools.describe import render

    assert docgen.stale() == [], "regenerate with: python -m qgcc.tools.docgen"
    architecture = (docgen.DOCS / "architecture.md").read_text()
    assert render() in architecture, "docs/architecture.md is stale: regenerate with python -m qgcc.tools.describe"


def test_a_changed_limit_makes_the_docs_stale(monkeypatch):
    """The check above can fail: a machine with another block limit no longer matches cli.md."""
    monkeypatch.setattr(docgen, "SPEC", dataclasses.replace(SPEC, max_block_threads=SPEC.max_block_threads // 2))
    assert docgen.stale(names=("limits", "ctypes")) == ["cli.md: limits"]


def test_rewriting_a_doc_replaces_only_the_generated_blocks():
    name = "limits"
    text = ("before\n<!-- generated: limits (python -m qgcc.tools.docgen) -->\nold numbers\n"
            f"<!-- end generated: {name} -->\nafter\n")
    assert docgen.rewrite(text) == ("before\n<!-- generated: limits (python -m qgcc.tools.docgen) -->\n"
                                    + docgen.render(name) + f"<!-- end generated: {name} -->\nafter\n")


def test_qgrun_help_states_the_machines_limits():
    out = CliRunner().invoke(qgrun_main, ["--help"], terminal_width=200).output
    assert f"at most {SPEC.max_block_threads} in all" in out
    assert f"at most {SPEC.shared_words} cells, {SPEC.shared_words * 4} bytes" in " ".join(out.split())
