"""qgrun --timeline (a picture of the launch), --trace-out (the trace as JSON Lines) and --version."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from qgcc import qgfile
from qgcc.asm import assemble
from qgcc.cli.qgcc_cmd import main as qgcc_main
from qgcc.cli.qgrun_cmd import main as qgrun_main
from qgcc.timeline import MAX_COLUMNS

ROOT = Path(__file__).resolve().parents[1]
SVG = "{http://www.w3.org/2000/svg}"

# Two blocks of 6 threads (two warps, the second half full): lanes with i >= n skip the
# store (a divergent branch, then reconvergence), a barrier, and an atomic per thread.
KERNEL = """\
__global__ void k(const int *a, int *c, int *total, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = a[i] * 2;
    __syncthreads();
    atomicAdd(total, 1);
}
"""
SPIN = """\
.kernel spin
top:
    BRA top
.end
"""


@pytest.fixture
def work(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "k.cu").write_text(KERNEL)
    qgfile.save(assemble(SPIN, "spin.qsass"), tmp_path / "spin.qg")
    np.save(tmp_path / "a.npy", np.arange(9, dtype=np.int32))
    return tmp_path


def qgrun(*args: str):
    return CliRunner().invoke(qgrun_main, [*args, "--engine", "ref", "--trace", "none"], catch_exceptions=False)


LAUNCH = ["k.cu", "--grid", "2", "--block", "6", "--arg", "a=@a.npy", "--arg", "c=zeros:9",
          "--arg", "total=zeros:1", "--arg", "n=9"]


def jsonl(path) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text().splitlines()]


def test_trace_out_has_a_header_one_record_per_warp_instruction_and_an_end_line(work):
    r = qgrun(*LAUNCH, "--trace-out", "t.jsonl", "--json", "s.json", "--out", "c=c.npy")
    assert r.exit_code == 0, r.stderr
    lines = jsonl("t.jsonl")
    head, records, end = lines[0], lines[1:-1], lines[-1]
    summary = json.loads(Path("s.json").read_text())
    assert head == {"begin": True, "format": "qgtrace", "version": 1, "warp_size": 4, "kernel": "k",
                    "grid": [2, 1, 1], "block": [6, 1, 1], "engine": "ref", "device": "cpu"}
    assert [rec["step"] for rec in records] == list(range(summary["steps"]))
    assert end == {"end": True, "status": "ok", "exit_code": 0, "records": summary["steps"],
                   **{k: summary[k] for k in ("steps", "warp_instructions", "divergent_steps", "barrier_waits",
                                              "atomics", "loads", "stores")}}
    assert set(records[0]) == {"step", "block", "warp", "pc", "mask", "lanes", "instruction", "line", "source",
                               "writes", "mem", "flags"}
    stores = [m for rec in records for m in rec["mem"] if m["kind"] == "st"]
    assert sorted(m["addr"] for m in stores) == list(range(11, 20))  # the null guard's 2 cells, a's 9, then c
    assert sorted(m["value"] for m in stores) == [2 * i for i in range(9)]
    atom = [rec for rec in records if any(m["kind"] == "atom" for m in rec["mem"])]
    assert sum(len(rec["mem"]) for rec in atom) == summary["atomics"] == 12
    assert atom[0]["source"] == "atomicAdd(total, 1);" and atom[0]["line"] == 7
    assert "ATOM" in atom[0]["instruction"]
    assert sum("diverged" in rec["flags"] for rec in records) == summary["divergent_steps"] > 0
    # every warp's __syncthreads() counts as a barrier wait; the last arrival releases the block
    assert sum("barrier-release" in rec["flags"] for rec in records) == 2  # one per block
    assert sum(bool({"barrier-wait", "barrier-release"} & set(rec["flags"])) for rec in records) \
        == summary["barrier_waits"] == 4
    assert all(rec["lanes"] == [b for b in range(4) if rec["mask"] >> b & 1] for rec in records)


def test_trace_out_after_a_fault_ends_with_the_fault(work):
    r = qgrun("spin.qg", "--grid", "1", "--block", "4", "--max-steps", "25", "--trace-out", "t.jsonl")
    assert r.exit_code == 6
    lines = jsonl("t.jsonl")
    assert len(lines) == 1 + 25 + 1
    assert lines[-1]["end"] is True and lines[-1]["status"] == "step-limit" and lines[-1]["exit_code"] == 6
    assert lines[-1]["fault"] == r.stderr.strip().removeprefix("qgrun: error: ")


@pytest.mark.parametrize("argv, message", [
    (["--timeline", "t.png"], "--timeline t.png: expected a .svg (picture) or .html (interactive) file name"),
    (["--timeline", "nodir/t.svg"], "--timeline nodir/t.svg: directory 'nodir' does not exist"),
    (["--trace-out", "c.npy", "--out", "c=c.npy"], "--trace-out c.npy is also the --out c file"),
    (["--timeline", "s.svg", "--json", "s.svg"], "--timeline s.svg is also the --json file"),
    (["--arg", "n=x", "--trace-out", "t.jsonl", "--timeline", "t.svg"], "--arg 'n' is given twice"),
])
def test_bad_timeline_or_trace_out_is_one_usage_error_and_writes_nothing(work, argv, message):
    r = qgrun(*LAUNCH, *argv)
    assert r.exit_code == 2 and r.stderr == f"qgrun: error: {message}\n"
    assert sorted(p.name for p in work.iterdir()) == ["a.npy", "k.cu", "spin.qg"]


def test_timeline_and_trace_out_are_single_launch_options(work):
    Path("b.jsonl").write_text('{"grid": 1, "block": 4}\n')
    r = qgrun("spin.qg", "--batch", "b.jsonl", "--timeline", "t.svg")
    assert r.exit_code == 2 and "--batch takes each launch's --timeline from b.jsonl" in r.stderr


def marks(root: ET.Element, cls: str) -> list[ET.Element]:
    return [e for e in root.iter() if e.get("class") == cls]


def test_timeline_svg_parses_and_has_a_mark_per_event(work):
    r = qgrun(*LAUNCH, "--timeline", "t.svg", "--trace-out", "t.jsonl", "--json", "s.json")
    assert r.exit_code == 0, r.stderr
    root = ET.parse("t.svg").getroot()
    assert root.tag == f"{SVG}svg"
    s = json.loads(Path("s.json").read_text())
    records = jsonl("t.jsonl")[1:-1]
    assert int(root.get("data-steps")) == int(root.get("data-columns")) == s["steps"]  # a column per step
    assert len(marks(root, "mk-ld")) == s["loads"] == 9
    assert len(marks(root, "mk-st")) == s["stores"] == 9
    assert len(marks(root, "mk-atom")) == s["atomics"] == 12
    assert len(marks(root, "mk-div")) == s["divergent_steps"]
    assert len(marks(root, "mk-rec")) == sum("reconverged" in rec["flags"] for rec in records) > 0
    assert len(marks(root, "mk-bar")) == 2
    assert len(marks(root, "block-sep")) == 1  # between the two blocks
    assert [e.text for e in marks(root, "warp-label")] == ["w0", "w1"]
    assert len(marks(root, "lane-label")) == 8
    text = " ".join(" ".join(" ".join(e.itertext()).split()) for e in root.iter(f"{SVG}text"))
    for piece in ("k · k.cu", "grid 2×1×1", "block 6×1×1", "engine ref (cpu) · status ok", f"{s['steps']} steps",
                  "9 loads", "9 stores", "12 atomics", "waiting at barrier", "exited"):
        assert piece in text, piece
    # lanes 2 and 3 of warp 1 hold no thread (6 threads per block): no cell is drawn on them
    cells = next(e for e in root.iter(f"{SVG}g") if e.get("class") == "cells")
    rows_y = {round(float(e.get("y")), 1) for e in cells}
    label_y = [round(float(e.get("y")) - 8, 1) for e in marks(root, "lane-label")]  # a label sits 8 px lower
    assert set(label_y[:6]) <= rows_y and not set(label_y[6:]) & rows_y


def test_timeline_of_a_long_launch_aggregates_columns_and_is_written_after_a_fault(work):
    r = qgrun("spin.qg", "--grid", "1", "--block", "4", "--max-steps", "30000", "--timeline", "t.svg")
    assert r.exit_code == 6 and "did not finish within 30000 steps" in r.stderr
    root = ET.parse("t.svg").getroot()
    assert int(root.get("data-steps")) == 30000
    assert int(root.get("data-columns")) == MAX_COLUMNS
    assert len(ET.tostring(root)) < 400_000  # runs of equal columns are merged
    assert "step-limit" in " ".join(e.text or "" for e in root.iter(f"{SVG}tspan"))


def test_timeline_html_embeds_the_svg_and_the_hover_data(work):
    r = qgrun(*LAUNCH, "--timeline", "t.html")
    assert r.exit_code == 0, r.stderr
    page = Path("t.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and page.count("<svg") == 1 and "addEventListener('mousemove'" in page
    data = json.loads(page.split('id="timeline-data">', 1)[1].split("</script>", 1)[0])
    assert len(data["cols"]) == len(data["states"][0]) and len(data["rows"]) == 8
    first = data["cols"][0]
    assert first[:5] == [0, 0, 0, 0, first[4]] and data["code"][str(first[4])][0]


def test_version_names_the_package_and_the_qg_format():
    for main, tool in ((qgcc_main, "qgcc"), (qgrun_main, "qgrun")):
        r = CliRunner().invoke(main, ["--version"])
        assert r.exit_code == 0 and r.stdout == f"{tool} 0.1.0 (.qg format version {qgfile.FORMAT_VERSION})\n"
