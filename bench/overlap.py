"""The batched runner with and without overlap (BatchRunner(..., overlap=...): the device steps
the next chunk while the host reads one): the same launches through both, timed alternately,
every result compared with the other variant's and with the C step's.

    python bench/overlap.py [--sample vadd] [--width 8] [--launches 256] [--device cpu]
                            [--chunk K] [--repeat 2] [--traced]

The launches differ in n (1 up to the sample's short launch's), so their lengths differ and
slots are refilled at different chunks.  On the CPU the "asynchronous" steps run when they
are started, so both variants do the same work in another order: there it shows that the
overlapped order costs nothing; on CUDA it measures what the overlap saves.  `--traced`
feeds every launch's rows to a Tracker with an on_step callback (more host work a chunk)
instead of the bulk sums.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
import lockstep  # noqa: E402
from qgcc.engines.batch import BatchRunner  # noqa: E402
from qgcc.engines.neural import NeuralEngine  # noqa: E402
from qgcc.runtime.launch import make_launch  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sample", default="vadd")
    ap.add_argument("--width", type=int, default=8)
    ap.add_argument("--launches", type=int, default=256)
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--chunk", type=int, default=None, help="steps a read (default: 16 on CUDA, 1 on the CPU)")
    ap.add_argument("--repeat", type=int, default=2, help="timed batches of each variant, alternately")
    ap.add_argument("--traced", action="store_true")
    args = ap.parse_args(argv)
    grid, block, scalars, arrays = lockstep.CASES[args.sample]
    prog, cm = lockstep.linked(args.sample)

    def todo():
        out = []
        for i in range(args.launches):
            sc = dict(scalars, n=1 + i % scalars["n"]) if "n" in scalars else scalars
            out.append(make_launch(prog, prog.kernels[0], grid, block, sc, {k: v.copy() for k, v in arrays.items()},
                                   network=cm))
        return out

    host = NeuralEngine("cpu").host(cm)
    want = [host.run(lau) for lau in todo()]
    steps = sum(w.network_steps for w in want)
    runners = {ov: BatchRunner(cm, args.width, args.device, chunk=args.chunk, overlap=ov) for ov in (False, True)}
    chunks = {False: 0, True: 0}
    for ov, runner in runners.items():  # chunks started, counted on the instance
        def counted(start=runner.layers.enqueue, ov=ov):
            chunks[ov] += 1
            start()
        runner.layers.enqueue = counted
    times: dict[bool, list[float]] = {False: [], True: []}
    cpu: dict[bool, list[float]] = {False: [], True: []}  # this process's CPU time: fairer on a shared machine
    same = True
    for _ in range(args.repeat):
        for ov, runner in runners.items():
            launches = todo()
            if args.device == "cuda":
                torch.cuda.synchronize()
            t, c = time.perf_counter(), time.process_time()
            got = runner.run(launches, 10 ** 6, on_step=(lambda r: None) if args.traced else None)
            if args.device == "cuda":
                torch.cuda.synchronize()
            times[ov].append(time.perf_counter() - t)
            cpu[ov].append(time.process_time() - c)
            same &= all(np.array_equal(g.memory, w.memory) and g.stats == w.stats
                        and g.network_steps == w.network_steps for g, w in zip(got, want))
    print(f"{args.sample}: {args.launches} launches ({steps} network steps in all) at width {args.width}, "
          f"chunk {runners[True].chunk}, {'traced' if args.traced else 'bulk sums'}, on {args.device}")
    for ov in (False, True):
        ts = times[ov]
        print(f"  overlap {'on ' if ov else 'off'}: best {min(ts):8.2f} s  median {statistics.median(ts):8.2f} s  "
              f"({args.launches / min(ts):7.2f} launches/s)  runs {', '.join(f'{t:.2f}' for t in ts)}  "
              f"process CPU s {', '.join(f'{t:.2f}' for t in cpu[ov])}  chunks {chunks[ov] // args.repeat}")
    print(f"  on / off (best wall): {min(times[True]) / min(times[False]):.3f}; (best CPU): "
          f"{min(cpu[True]) / min(cpu[False]):.3f}; every result equal to the C step's: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
