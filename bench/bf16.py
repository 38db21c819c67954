"""The machine in bfloat16: each sample's launch through transformers' own modules in bf16.

    python bench/bf16.py                          # every sample in samples/ (3-4 hours on a 2-core CPU)
    python bench/bf16.py --samples bitops,saxpy   # some of them
    python bench/bf16.py --device cuda            # transformers' CUDA kernels, bf16 GEMMs
    python bench/bf16.py --list                   # the launches, without running them

Runs a short launch of every sample (SHORT below: one block of 4 threads and a few elements,
the fewest network steps that still take the kernel through its loops, branches,
barriers, atomics and float paths) with `--engine hf --dtype bf16` (weights and activations
in bfloat16, the stock Qwen3_5DecoderLayer) and compares the trace record by record and the
final memory bit for bit with the reference emulator.  One line per sample: exact or not,
layers, warp instructions, network steps, seconds per step; the last line sums up.
Exit status 0 only if every sample was exact.

On a 2-core CPU a bf16 step of the 36-layer machine costs about 0.5 s (one torch thread;
saxpy, `--profile 20`: 0.53 s, 0.42 s of it the layers' dense bf16 matrix products).
`--profile N` shows where the time goes; the 15 short launches are 5,879 warp instructions (`--list`).
tests/test_numerics.py runs two short kernels in bf16 in the slow suite.
"""
import argparse, gc, sys, time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from lockstep import CASES, linked  # noqa: E402
from qgcc import engines  # noqa: E402
from qgcc.ref.emulator import run as ref_run  # noqa: E402
from qgcc.runtime.launch import make_launch  # noqa: E402


def _f32bits(x: float) -> int:
    return int(np.array([x], np.float32).view(np.uint32)[0])


def _short() -> dict:
    """One short launch per sample not in tests/lockstep.py's CASES (those are short already)."""
    rng = np.random.default_rng(16)
    i32 = lambda n, lo=-1000, hi=1000: rng.integers(lo, hi, size=n).astype(np.int32)  # noqa: E731
    f32 = lambda n: (rng.standard_normal(n) * 4).astype(np.float32)  # noqa: E731
    z = lambda n, t=np.int32: np.zeros(n, t)  # noqa: E731
    n = 4
    return {
        "atomics": ((1, 1, 1), (4, 1, 1), {"n": n}, {
            "x": i32(n), "acc": np.append(i32(8), 0).astype(np.int32), "u": i32(2).view(np.uint32),
            "tickets": z(2, np.uint32), "slot": i32(n), "prev": z(n)}),
        "bitops": ((1, 1, 1), (4, 1, 1), {"n": n}, {
            "x": np.array([0, 1, 0x80000000, 0xDEADBEEF], np.uint32), "r": i32(n, -40, 40),
            "pop": z(n), "par": z(n, np.bool_), "rev": z(n, np.uint32), "rot": z(n, np.uint32),
            "low": z(n, np.uint32), "clz": z(n)}),
        "compact": ((1, 1, 1), (4, 1, 1), {"n": n, "threshold": 0}, {
            "x": np.array([3, -2, 0, 5], np.int32), "out": i32(4), "counts": z(1)}),
        "devfunc": ((1, 1, 1), (4, 1, 1), {"n": n, "cap": 500}, {
            "a": np.array([12, -7, 0, 9], np.int32), "b": np.array([4, 7, 5, -3], np.int32),  # one-step gcds
            "g": z(n), "l": z(n), "s": z(n)}),
        "divmod": ((1, 1, 1), (4, 1, 1), {"n": n}, {
            "a": np.array([17, -17, -2147483648, 1000000], np.int32), "b": np.array([5, 5, 7, -3], np.int32),
            **{k: z(n, t) for k, t in (("q", np.int32), ("r", np.int32), ("uq", np.uint32), ("ur", np.uint32),
                                         ("sr", np.int32), ("ur2", np.uint32), ("sl", np.int32), ("c", np.int8),
                                         ("cw", np.int32), ("uc", np.uint8), ("bz", np.bool_))}}),
        "dot": ((1, 1, 1), (4, 1, 1), {"n": 6}, {"x": f32(6), "y": f32(6), "result": f32(1)}),
        "mandelbrot": ((1, 1, 1), (4, 1, 1), {"width": 2, "height": 2, "x0": _f32bits(-2.1), "y0": _f32bits(-1.2),
                                               "dx": _f32bits(1.1), "dy": _f32bits(1.1), "max_iter": 3},
                       {"iters": np.full(5, -1, np.int32)}),
        "saxpy": ((1, 1, 1), (4, 1, 1), {"a": _f32bits(-1.5), "n": n}, {"x": f32(n), "y": f32(n + 1)}),
        "warpreduce": ((1, 1, 1), (4, 1, 1), {"n": 6}, {"x": i32(6), "partial": i32(1)}),
    }


SHORT = {**CASES, **_short()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", default=",".join(sorted(p.stem for p in (ROOT / "samples").glob("*.cu"))))
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--list", action="store_true", help="print the launches and their step counts on the emulator")
    ap.add_argument("--profile", type=int, default=0, metavar="STEPS",
                    help="time STEPS bf16 steps of the first sample's launch per module and per op")
    ap.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (0: torch's default)")
    args = ap.parse_args()
    if args.threads:
        import torch
        torch.set_num_threads(args.threads)
    if args.device.startswith("cuda"):
        import torch
        if not torch.cuda.is_available():
            sys.exit("bench/bf16.py: --device cuda: no CUDA device here (--device cpu runs the same launches)")
    names = args.samples.split(",")
    missing = [n for n in names if n not in SHORT]
    if missing:
        sys.exit(f"bench/bf16.py: --samples: no short launch for {', '.join(missing)} (add one to SHORT)")
    if args.profile:
        return profile(names[0], args.profile, args.device)
    exact_all, total_steps, total_run = True, 0, 0.0
    for name in names:
        grid, block, scalars, arrays = SHORT[name]
        prog, cm = linked(name)
        mk = lambda: make_launch(prog, prog.kernels[0], grid, block, scalars,  # noqa: E731
                                 {k: v.copy() for k, v in arrays.items()})
        ref_trace, net_trace = [], []
        ref = ref_run(mk(), on_step=lambda r: ref_trace.append(r.key()))
        if args.list:
            print(f"{name:11s} grid {grid} block {block} {scalars}: {len(ref_trace)} warp instructions, "
                  f"{cm.num_layers} layers", flush=True)
            continue
        t0 = time.time()
        host = engines.get("hf").create(args.device, "bf16").host(cm)
        t1 = time.time()
        res = host.run(mk(), max_steps=20000, on_step=lambda r: net_trace.append(r.key()))
        t2 = time.time()
        exact = net_trace == ref_trace and np.array_equal(res.memory, ref.memory)
        exact_all &= exact
        total_steps += res.network_steps
        total_run += t2 - t1
        print(f"{name:11s} {'exact' if exact else 'DIFFERS'}: {cm.num_layers} layers, {len(ref_trace)} warp "
              f"instructions, {res.network_steps} network steps, load {t1 - t0:.0f} s, run {t2 - t1:.0f} s "
              f"({(t2 - t1) / max(res.network_steps, 1):.2f} s/step, {args.device})", flush=True)
        del host, res  # one sample's dense bf16 layers (GBs) at a time: a set of 15 ran out of 23 GB
        gc.collect()
    if args.list:
        return
    print(f"bf16 on {args.device}: {'every sample exact' if exact_all else 'SOME SAMPLE DIFFERS'} "
          f"({len(names)} samples, {total_steps} network steps, {total_run:.0f} s)")
    sys.exit(0 if exact_all else 1)


def profile(name: str, steps: int, device: str) -> None:
    """Where a bf16 step's time goes: per submodule kind (forward hooks) and per torch op."""
    import collections
    import torch
    from qgcc.engines.hf import HFLayers
    from qgcc.engines.host import Host
    grid, block, scalars, arrays = SHORT[name]
    prog, cm = linked(name)
    layers = HFLayers(cm.layers, device, dtype="bf16")
    spent, t0 = collections.defaultdict(float), {}

    def pre(mod, *_):
        t0[id(mod)] = time.perf_counter()

    def post(kind):
        def hook(mod, *_):
            spent[kind] += time.perf_counter() - t0[id(mod)]
        return hook
    for layer in layers.layers:
        for sub, mod in layer.named_modules():
            kind = type(mod).__name__ + (f" {sub.split('.')[-1]}" if sub else " (whole layer)")
            mod.register_forward_pre_hook(pre)
            mod.register_forward_hook(post(kind))

    class Counted:
        """The layers, stopped after `steps` steps (the launch need not finish)."""
        n, glue = 0, 0.0

        def reset(self, init):
            layers.reset(init)

        def recurrent_state(self, i):
            return layers.recurrent_state(i)

        def step(self, h):
            Counted.n += 1
            if Counted.n > steps:
                raise StopIteration
            t = time.perf_counter()
            out = layers.step(h)
            Counted.glue += time.perf_counter() - t
            return out
    launch = make_launch(prog, prog.kernels[0], grid, block, scalars, {k: v.copy() for k, v in arrays.items()})
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        try:
            Host(cm, Counted()).run(launch, max_steps=10 ** 6)
        except StopIteration:
            pass
    n = min(Counted.n, steps)
    print(f"{name}: {cm.num_layers} layers, {n} bf16 steps on {device}, {torch.get_num_threads()} torch threads: "
          f"{Counted.glue / n:.3f} s per step (HFLayers.step)")
    print("per submodule kind, summed over layers (nested: a layer includes its mixer and MLP), s per step:")
    for kind, s in sorted(spent.items(), key=lambda kv: -kv[1])[:16]:
        print(f"  {s / n:7.3f}  {kind}")
    print("per torch op (self CPU time), s per step:")
    for ev in sorted(prof.key_averages(), key=lambda e: -e.self_cpu_time_total)[:14]:
        print(f"  {ev.self_cpu_time_total / 1e6 / n:7.3f}  {ev.key} (x{ev.count // n} per step)")


if __name__ == "__main__":
    main()
