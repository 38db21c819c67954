"""Does a network-scale spec keep its full launch's code path?  The instructions each one reaches, compared.

    python bench/netscale_cover.py FILE [--run I] [--spec JSON] [--corpus /work/corpus] [--cache DIR]

A launch too long for the network on the CPU is run there at a network-scale spec
(bench/published_netscale.json, see bench/published_run.py): the same kernel at a smaller size.
That stands for the full launch only if it executes everything the full launch executes, so this
runs both on the emulator (through qgrun, as published_run does, with the same inputs) and compares
the sets of program counters reached, and the warp-level control-flow edges between them (one warp's
PC at one step and at its next, which separates the two sides of a branch whose join is reached
either way).  A PC or edge of the full launch the spec lacks is a path it loses; the exit status
is 1 when any PC is missing.  `--spec` tries a spec (the keys of a netscale entry, as JSON) for
run I before it is written into the file.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import published_run as pr  # noqa: E402


class Reach:
    """The PCs and warp edges one launch reaches, gathered from the emulator's steps."""

    def __init__(self):
        self.pcs: set[int] = set()
        self.edges: set[tuple[int, int]] = set()
        self.last: dict[tuple[int, int], int] = {}
        self.program = None

    def step(self, rec) -> None:
        self.pcs.add(rec.pc)
        key = (rec.block, rec.warp)
        if key in self.last:
            self.edges.add((self.last[key], rec.pc))
        self.last[key] = rec.pc


CURRENT: list[Reach] = []  # the Reach the next qgrun launch feeds


def reaching() -> None:
    """qgrun's launches feed CURRENT[0] (api.run_launch wrapped once, around published_run's own
    wrapper that keeps the step counts: the engine calls on_step each step)."""
    import qgcc.api as api

    pr.capture_stats()
    real = api.run_launch

    def run_launch(engine, launch, **k):
        inner, reach = k.get("on_step"), CURRENT[0]
        reach.program = launch.program

        def on_step(rec):
            reach.step(rec)
            if inner is not None:
                inner(rec)

        k["on_step"] = on_step
        return real(engine, launch, **k)

    run_launch.qgpub = True  # capture_stats leaves it as it is
    api.run_launch = run_launch


def where(program, pc: int) -> str:
    ins = program.code[pc]
    return f"pc {pc} ({ins.op.name}, line {ins.line})"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file")
    ap.add_argument("--run", type=int, default=None, help="the manifest's run index (default: every one with a spec)")
    ap.add_argument("--spec", default=None, help="a netscale entry to try for --run, as JSON")
    ap.add_argument("--corpus", default="/work/corpus")
    ap.add_argument("--cache", default="/tmp/qgpub-cache")
    a = ap.parse_args(argv)
    pr.CACHE = Path(a.cache) if a.cache else None
    corpus = Path(a.corpus)
    entry = next((e for e in json.loads((corpus / "manifest.json").read_text()) if e["file"] == a.file), None)
    if entry is None:
        ap.error(f"{a.file}: not in the manifest")
    scaled = dict(pr.netscale().get(a.file, {}))
    if a.spec is not None:
        if a.run is None:
            ap.error("--spec needs --run")
        scaled[str(a.run)] = json.loads(a.spec)
    # the runs in published_run's order: their positions seed their inputs
    index = [i for i, s in enumerate(entry["runs"]) if "skip" not in s]
    specs = [entry["runs"][i] for i in index]
    runs, scaled_at = pr.with_scaled(specs, index, scaled)
    files = pr.tu_files(corpus / a.file)
    for run in runs:
        run.qgname = pr.by_type(pr.bare(run.kernel), files)
    missing_any = False
    reaching()
    with tempfile.TemporaryDirectory(prefix="qgcover") as d:
        work = Path(d)
        extra = [x for sp in specs for x in sp.get("instantiate", [])]
        ok, msg = pr.qgcc_compile(corpus, entry, work / "k.qg", link=False, extra=extra)
        if not ok:
            print(f"does not compile: {msg}")
            return 1
        for pos, i in enumerate(index):
            if pos not in scaled_at or a.run is not None and i != a.run:
                continue
            seen = []
            for k in (pos, scaled_at[pos]):
                reach = Reach()
                CURRENT[:] = [reach]
                bufs, consts = pr.inputs(a.file, runs[k], k)
                side = pr.qgrun_now(work / "k.qg", runs[k], bufs, consts, "ref", work, f"c{k}")
                if side.bufs is None:
                    print(f"run {i}: {runs[k].label} failed on the emulator: {side.why}")
                    return 1
                seen.append((reach, side))
            (full, fs), (small, ss) = seen
            lost, gained = sorted(full.pcs - small.pcs), sorted(small.pcs - full.pcs)
            lost_e, gained_e = sorted(full.edges - small.edges), sorted(small.edges - full.edges)
            missing_any |= bool(lost)
            print(f"run {i}: full {runs[pos].label}: {fs.network_steps:,} network steps, {len(full.pcs)} PCs, "
                  f"{len(full.edges)} edges")
            print(f"run {i}: spec {runs[scaled_at[pos]].label}: {ss.network_steps:,} network steps, "
                  f"{len(small.pcs)} PCs, {len(small.edges)} edges")
            verdict = "PC sets equal" if not lost and not gained else f"{len(lost)} PCs missing, {len(gained)} extra"
            verdict += "; edge sets equal" if not lost_e and not gained_e else \
                f"; {len(lost_e)} edges missing, {len(gained_e)} extra"
            print(f"run {i}: {verdict}")
            for pc in lost:
                print(f"    missing {where(full.program, pc)}")
            for pc in gained:
                print(f"    extra   {where(small.program, pc)}")
            for e in lost_e:
                print(f"    missing edge {e[0]} -> {e[1]}")
    return 1 if missing_any else 0


if __name__ == "__main__":
    sys.exit(main())
