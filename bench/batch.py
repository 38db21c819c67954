"""Launches per second of `qgrun --batch` at several batch sizes and --jobs counts (vadd).

    python bench/batch.py [--sizes 1,8,64] [--jobs 1,2] [--repeat 3] [--engine neural] [--stacked]
                          [--device cpu|cuda] [--n 6]

By default the launches run as qgrun runs them on the device (on the CPU: the compiled C
step, one launch after another, in as many worker processes as --jobs says; on CUDA the
batched step); --stacked passes --batch-width equal to the batch size, so the whole batch
steps together through the batched torch step.

Each batch is a JSONL file of independent vadd launches (grid 2, block 4, n = N..N+2); the
figure is `launches_per_s` from qgrun's --json report (load and link excluded, building the
layers included) and the end-to-end wall time of the command, best of --repeat runs (the
machine is shared: the best run is the one least disturbed by others).  Every batch's buffers
are checked, and every --jobs count's --json report (timings aside) must equal --jobs 1's.
The last column is the speed-up over the first --jobs count at that size.
"""
import argparse, json, subprocess, sys, tempfile, time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
ap = argparse.ArgumentParser()
ap.add_argument("--sizes", default="1,8,64")
ap.add_argument("--jobs", default="", help="comma list of qgrun --jobs values (default: qgrun's default)")
ap.add_argument("--repeat", type=int, default=1)
ap.add_argument("--engine", default="neural")
ap.add_argument("--stacked", action="store_true", help="--batch-width = the batch size (the batched step)")
ap.add_argument("--device", default="cpu")
ap.add_argument("--n", type=int, default=6, help="the first launch's n (vector length; buffers hold n + 2)")
args = ap.parse_args()
N = args.n


def untimed(report):
    drop = ("wall_time_s", "launches_per_s")
    return {k: ([{a: b for a, b in r.items() if a not in drop} for r in v] if k == "results" else v)
            for k, v in report.items() if k not in drop}


with tempfile.TemporaryDirectory() as d:
    d = Path(d)
    np.save(d / "a.npy", np.arange(N + 2, dtype=np.int32))
    np.save(d / "b.npy", 100 * np.arange(N + 2, dtype=np.int32))
    subprocess.run(["qgcc", str(ROOT / "samples" / "vadd.cu"), "-o", str(d / "vadd.qg")], check=True)
    print(f"{'batch':>5} {'width':>5} {'jobs':>4} {'launches/s':>10} {'wall (s)':>8} {'end-to-end launches/s':>22}"
          f" {'speed-up':>8}")
    for size in [int(x) for x in args.sizes.split(",")]:
        lines = [json.dumps({"grid": 2, "block": 4, "args": {"a": "@a.npy", "b": "@b.npy", "c": f"zeros:{N + 2}",
                                                            "n": N + i % 3}, "outs": {"c": f"c{i}.npy"}})
                 for i in range(size)]
        (d / "l.jsonl").write_text("\n".join(lines) + "\n")
        first_rate, first_report = None, None
        for jobs in (args.jobs.split(",") if args.jobs else [None]):
            best = None
            for _ in range(args.repeat):
                width = ["--batch-width", str(size)] if args.stacked else []
                more = ["--jobs", jobs] if jobs else []
                t = time.perf_counter()
                r = subprocess.run(["qgrun", "vadd.qg", "--batch", "l.jsonl", "--engine", args.engine, "--trace",
                                    "none", "--device", args.device, "--json", "r.json"] + width + more, cwd=d,
                                   capture_output=True, text=True)
                wall = time.perf_counter() - t
                if r.returncode:
                    sys.exit(r.stderr)
                for i in range(size):
                    n = N + i % 3
                    c = np.load(d / f"c{i}.npy")
                    assert list(c[:n]) == [101 * k for k in range(n)] and not c[n:].any()
                rep = json.loads((d / "r.json").read_text())
                if first_report is None:
                    first_report = untimed(rep)
                assert untimed(rep) == first_report, "a --jobs count changed the --json report"
                if best is None or rep["launches_per_s"] > best[0]["launches_per_s"]:
                    best = (rep, wall)
            rep, wall = best
            first_rate = first_rate or rep["launches_per_s"]
            print(f"{size:5d} {rep.get('batch_width', 1):5d} {jobs or '-':>4} {rep['launches_per_s']:10.2f} "
                  f"{wall:8.2f} {size / wall:22.2f} {rep['launches_per_s'] / first_rate:7.2f}x", flush=True)
