"""Launches per second of `qgrun --batch` at batch sizes 1, 8 and 64 (vadd, CPU).

    python bench/batch.py [--sizes 1,8,64] [--engine neural] [--stacked] [--device cpu|cuda]

By default the launches run as qgrun runs them on the device (on the CPU: the compiled C
step, one launch after another); --stacked passes --batch-width equal to the batch size,
so the whole batch steps together through the batched torch step.

Each batch is a JSONL file of independent vadd launches (grid 2, block 4, n = 6..8); the
figure is `launches_per_s` from qgrun's --json report (load and link excluded) and the
end-to-end wall time of the command (included).  Every batch's buffers are checked.
"""
import argparse, json, subprocess, sys, tempfile, time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
ap = argparse.ArgumentParser()
ap.add_argument("--sizes", default="1,8,64")
ap.add_argument("--engine", default="neural")
ap.add_argument("--stacked", action="store_true", help="--batch-width = the batch size (the batched step)")
ap.add_argument("--device", default="cpu")
args = ap.parse_args()
with tempfile.TemporaryDirectory() as d:
    d = Path(d)
    np.save(d / "a.npy", np.arange(8, dtype=np.int32))
    np.save(d / "b.npy", 100 * np.arange(8, dtype=np.int32))
    subprocess.run(["qgcc", str(ROOT / "samples" / "vadd.cu"), "-o", str(d / "vadd.qg")], check=True)
    print(f"{'batch':>5} {'width':>5} {'launches/s':>10} {'wall (s)':>8} {'end-to-end launches/s':>22}")
    for size in [int(x) for x in args.sizes.split(",")]:
        lines = [json.dumps({"grid": 2, "block": 4, "args": {"a": "@a.npy", "b": "@b.npy", "c": "zeros:8",
                                                            "n": 6 + i % 3}, "outs": {"c": f"c{i}.npy"}})
                 for i in range(size)]
        (d / "l.jsonl").write_text("\n".join(lines) + "\n")
        t = time.perf_counter()
        width = ["--batch-width", str(size)] if args.stacked else []
        r = subprocess.run(["qgrun", "vadd.qg", "--batch", "l.jsonl", "--engine", args.engine, "--trace", "none",
                            "--device", args.device, "--json", "r.json"] + width, cwd=d, capture_output=True,
                           text=True)
        wall = time.perf_counter() - t
        if r.returncode:
            sys.exit(r.stderr)
        for i in range(size):
            n = 6 + i % 3
            c = np.load(d / f"c{i}.npy")
            assert list(c[:n]) == [101 * k for k in range(n)] and not c[n:].any()
        rep = json.loads((d / "r.json").read_text())
        print(f"{size:5d} {rep.get('batch_width', 1):5d} {rep['launches_per_s']:10.2f} {wall:8.2f} "
              f"{size / wall:22.2f}")
