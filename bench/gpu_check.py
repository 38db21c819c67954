"""Every sample on the CPU (the compiled C step) and on CUDA (the batched step in a CUDA graph).

    python bench/gpu_check.py [--samples vadd,reduce] [--sizes 1,64,1024] [--chunk 16]
    python bench/gpu_check.py --device cpu --samples vadd --sizes 1,2   # a dry run of this script

1. For each sample's short launch (tests/lockstep.py): the C step and the batched step at
   width 1, captured as a CUDA graph of one step, in lockstep; every step's hidden state
   and, at the end, every recurrent state compared as bits.
2. Steps/s of one launch on the device: the same launch again, the graph holding --chunk
   steps, the host reading the fields once per chunk (qgcc.engines.batch.BatchRunner).
3. Launches/s at each batch width in --sizes: that many copies of the vadd and collatz
   launches through BatchRunner, each result checked against the C step's, and the
   lane-instructions/s this is (lanes active in each warp instruction, summed).
4. bfloat16 on the device (--bf16, default vadd,saxpy; "" skips it): each sample's short launch
   through transformers' own modules in bf16 (`--engine hf --dtype bf16`, bench/bf16.py's
   launches), trace and memory against the emulator.  bench/bf16.py --device cuda runs
   every sample this way.

Exits 1 on any difference.  TF32 is off (BatchedLayers switches it off on CUDA).
"""
import argparse, sys, time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from lockstep import CASES, linked  # noqa: E402
from qgcc.engines.batch import BatchRunner  # noqa: E402
from qgcc.engines.host import HALT  # noqa: E402
from qgcc.engines.neural import NeuralEngine  # noqa: E402
from qgcc.engines.neural_batch import BatchedLayers  # noqa: E402
from qgcc.link.layout import PHASES  # noqa: E402
from qgcc.runtime.launch import make_launch  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--samples", default=",".join(sorted(CASES)))
ap.add_argument("--sizes", default="1,64,1024")
ap.add_argument("--batch-samples", default="vadd,collatz")
ap.add_argument("--chunk", type=int, default=16)
ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
ap.add_argument("--bf16", default="vadd,saxpy", help="samples to run in bf16 through transformers' modules")
args = ap.parse_args()
if args.device == "cuda" and not torch.cuda.is_available():
    sys.exit("bench/gpu_check.py: no CUDA device here (--device cpu runs the same checks without graphs)")
dev = args.device


def launch_of(name):
    grid, block, scalars, arrays = CASES[name]
    prog, cm = linked(name)
    return make_launch(prog, prog.kernels[0], grid, block, scalars, {k: v.copy() for k, v in arrays.items()},
                       network=cm)


def sync():
    if dev == "cuda":
        torch.cuda.synchronize()


bad = 0
print(f"device: {torch.cuda.get_device_name() if dev == 'cuda' else 'cpu (no graphs)'}")
print(f"{'sample':10} {'steps':>6} {'C step/s':>9} {'device/s':>9} {'chunked/s':>10}  equal")
for name in args.samples.split(","):
    prog, cm = linked(name)
    cpu = NeuralEngine("cpu").host(cm)
    halt = cm.fields["phase"][PHASES.index("halt")]
    gpu = BatchedLayers(cm.layers, 1, cpu._all_dims, halt, cm.fields["fault"], dev, chunk=1)
    h, init = cpu.initial(launch_of(name))
    cpu.net.reset(init)
    gpu.load(0, h, init)
    hc = h
    steps, t_c, t_g, same = 0, 0.0, 0.0, True
    while cpu.get(hc, "phase") != HALT and cpu.get(hc, "fault") == 0:
        t = time.perf_counter(); hc = cpu.net.step(hc); t_c += time.perf_counter() - t
        t = time.perf_counter(); gpu.run(); t_g += time.perf_counter() - t
        steps += 1
        if not np.array_equal(hc.view(np.uint32), gpu.hidden(0).view(np.uint32)):
            print(f"{name}: hidden state differs at step {steps}")
            same = False
            break
    same = same and all(np.array_equal(cpu.net.recurrent_state(L).view(np.uint32),
                                       gpu.recurrent_state(0, L).view(np.uint32)) for L in range(cm.num_layers))
    # One launch, K steps per graph replay and per transfer.
    runner = BatchRunner(cm, 1, dev, chunk=args.chunk)
    sync(); t = time.perf_counter()
    res = runner.run([launch_of(name)], 10 ** 6)[0]
    sync(); t_k = time.perf_counter() - t
    same = same and np.array_equal(res.memory, cpu.run(launch_of(name)).memory)
    bad += not same
    print(f"{name:10} {steps:6d} {steps / t_c:9.0f} {steps / t_g:9.0f} {res.network_steps / t_k:10.0f}  {same}")

print(f"\n{'sample':10} {'batch':>6} {'launches/s':>11} {'lane-instr/s':>13}  results equal")
for name in args.batch_samples.split(","):
    prog, cm = linked(name)
    lanes = []
    want = NeuralEngine("cpu").host(cm).run(launch_of(name), on_step=lambda r: lanes.append(bin(r.active).count("1")))
    for size in [int(s) for s in args.sizes.split(",")]:
        runner = BatchRunner(cm, size, dev, chunk=args.chunk)
        launches = [launch_of(name) for _ in range(size)]
        sync(); t = time.perf_counter()
        results = runner.run(launches, 10 ** 6)
        sync(); wall = time.perf_counter() - t
        ok = all(not isinstance(r, Exception) and np.array_equal(r.memory, want.memory) and r.stats == want.stats
                 for r in results)
        bad += not ok
        print(f"{name:10} {size:6d} {size / wall:11.1f} {size * sum(lanes) / wall:13.0f}  {ok}")
        del runner
        if dev == "cuda":
            torch.cuda.empty_cache()
if args.bf16:
    import subprocess
    print(f"\nbf16 through transformers' modules on {dev}:", flush=True)
    bad += subprocess.call([sys.executable, str(ROOT / "bench" / "bf16.py"), "--device", dev,
                            "--samples", args.bf16]) != 0
sys.exit(1 if bad else 0)
