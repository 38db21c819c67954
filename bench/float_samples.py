"""The float samples with the machine's float instructions and with `--soft-float`.

    python bench/float_samples.py [--neural] [--tile-iters 24]

For dot, saxpy and mandelbrot (their documented launches, inputs built as their headers
say) and a 64-thread Mandelbrot tile: the program's instructions, the warp instructions
the launch executes (reference emulator) for both compilations and their ratio; with
--neural also the compiled layers, network steps and seconds of the default engine
(float instructions only; the results are checked equal to the emulator's).
"""
import argparse, sys, tempfile, time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from test_samples import documented_launch  # noqa: E402
from qgcc.engines.neural import NeuralEngine  # noqa: E402
from qgcc.frontend import compile_source  # noqa: E402
from qgcc.link.linker import link  # noqa: E402
from qgcc.ref.emulator import run as ref_run  # noqa: E402
from qgcc.runtime.launch import make_launch  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--neural", action="store_true")
ap.add_argument("--tile-iters", type=int, default=24)
args = ap.parse_args()


def f32(x: float) -> int:
    return int(np.array([x], np.float32).view(np.uint32)[0])


launches = {}
with tempfile.TemporaryDirectory() as tmp:
    for name in ("saxpy", "dot", "mandelbrot"):
        run, scalars, arrays, _ = documented_launch(name, Path(tmp))
        launches[name] = (name, run.grid, run.block, scalars, arrays)
launches["mandelbrot tile"] = ("mandelbrot", (1, 1, 1), (8, 8, 1),
                               {"width": 8, "height": 8, "x0": f32(-2.0), "y0": f32(-1.0), "dx": f32(0.3),
                                "dy": f32(0.25), "max_iter": args.tile_iters},
                               {"iters": np.zeros(64, np.int32)})
print(f"{'launch':16} {'code soft':>9} {'code hw':>7} {'warp instr soft':>15} {'warp instr hw':>13} {'ratio':>6}"
      + (f" {'layers':>6} {'net steps':>9} {'neural s':>8}" if args.neural else ""))
for label, (name, grid, block, scalars, arrays) in launches.items():
    src = (ROOT / "samples" / f"{name}.cu").read_text()
    res = {}
    for soft in (True, False):
        prog = compile_source(src, f"{name}.cu", soft_float=soft)
        mk = lambda: make_launch(prog, prog.kernels[0], grid, block, scalars,  # noqa: E731
                                 {k: v.copy() for k, v in arrays.items()})
        r = ref_run(mk(), max_steps=10 ** 8)
        res[soft] = (prog, mk, r)
    (ps, _, rs), (ph, mkh, rh) = res[True], res[False]
    assert np.array_equal(rs.memory, rh.memory), label
    line = (f"{label:16} {len(ps.code):9d} {len(ph.code):7d} {rs.stats.steps:15d} {rh.stats.steps:13d} "
            f"{rs.stats.steps / rh.stats.steps:6.1f}")
    if args.neural:
        cm = link(ph)
        t = time.perf_counter()
        out = NeuralEngine("cpu").host(cm).run(mkh(), max_steps=10 ** 7)
        dt = time.perf_counter() - t
        assert np.array_equal(out.memory, rh.memory), label
        line += f" {cm.num_layers:6d} {out.network_steps:9d} {dt:8.1f}"
    print(line, flush=True)
