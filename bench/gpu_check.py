"""The batched step on a device against the compiled C step on this machine's CPU: exactness,
then every figure issue #26 names.

    python bench/gpu_check.py [--samples vadd,reduce] [--sizes 64,1024,8192] [--chunk 16]
    python bench/gpu_check.py --device cpu --short     # the whole device code path on the CPU (CI)
    python bench/gpu_check.py --fused both             # every check for the unfused and the fused step
    python bench/gpu_check.py --phased                 # and the phased step beside them
    python bench/gpu_check.py --overlap on             # batches with overlap only (default: on and off)

`--fused yes|both` runs the fused step (engines/fused.py, Triton kernels; needs triton; on
the CPU interpreted, about 8 s a step) instead of / beside the unfused one, labelled "fused".
`--phased` adds the phased step (engines/phased.py, the one-launch form: Triton kernels, 10-20
s a step interpreted), labelled "phased", in the lockstep, the one launch and the batches
of widths up to 64 (it reads weight columns per launch: a one-launch form).

1. Precision: how many projections run as exact bfloat16 parts (engines/lowp.py) and which
   fell back to float32, and why; weight bytes on the device.
2. Lockstep: for each sample's short launch (tests/lockstep.py), and for a batch mixing
   launches of two kernels of one program with four lengths (lockstep.MIXED), the batched
   step (one-hot rows, bfloat16 parts, a CUDA graph of one step on CUDA) against the C step
   running each launch alone: every hidden state at every step, every recurrent state at the
   end (a member is frozen from its halt on), as bits; for the mixed batch every recurrent
   state of every member at every step too (as CRCs: 36 MB a member-step, so not for the
   samples' longer launches).
3. One launch: the C step's steps/s (best of 3) and the device's (qgcc.engines.batch at width
   1, the graph holding --chunk steps; best of 2, after a warm-up launch).
4. Batches: --batch-samples' short launches at each width in --sizes, every result checked
   against the C step's: launches/s, lane-instructions/s (lanes active in each warp
   instruction, summed), device bytes per slot (the slot's own tensors, and measured: peak
   allocation less the weights, over the width), and the time to build the runner; with
   --overlap both (the default) each width with the host's work overlapped with the device's
   (the next chunk stepped while the host reads one: BatchRunner's default on CUDA) and
   without, side by side.
5. The targets of issue #26, each as "met" or "not met" with the figure it was judged on:
   one launch at least 2x the C step, at least 10^6 lane-instructions/s batched (vadd and
   collatz), every check exact.  On the CPU the first two are printed for the record only
   (the CPU runs the device's form to test it, not to be fast).

Exits 1 on any difference.  TF32 is off (BatchedLayers switches it off on CUDA).
"""
from __future__ import annotations

import argparse
import sys
import time
import zlib
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
import lockstep  # noqa: E402
from qgcc.engines.batch import BatchRunner  # noqa: E402
from qgcc.engines.host import HALT  # noqa: E402
from qgcc.engines.neural import NeuralEngine  # noqa: E402
from qgcc.engines.neural_batch import BatchedLayers, row_layers  # noqa: E402
from qgcc.link.layout import PHASES  # noqa: E402
from qgcc.runtime.launch import make_launch  # noqa: E402


def sample_launch(name):
    grid, block, scalars, arrays = lockstep.CASES[name]
    prog, cm = lockstep.linked(name)
    return make_launch(prog, prog.kernels[0], grid, block, scalars, {k: v.copy() for k, v in arrays.items()},
                       network=cm)


def launches_of(name):
    """(network, a function giving fresh copies of the launches the name stands for):
    "mixed" is lockstep.MIXED (two kernels, four lengths), "mixed2" and "mixed1" its first two and one."""
    if name.startswith("mixed"):
        cm = lockstep.linked("mixed", lockstep.MIXED_KERNELS)[1]
        todo = {"mixed": lockstep.MIXED, "mixed2": lockstep.MIXED[:2], "mixed1": lockstep.MIXED[:1]}[name]
        return cm, lambda: [lockstep.mixed_launch(*m) for m in todo]
    return lockstep.linked(name)[1], lambda: [sample_launch(name)]


class Check:
    def __init__(self, dev: str, chunk: int, repeat: int = 3, variants=("unfused",), overlaps=(True,)):
        self.dev, self.chunk, self.bad, self.repeat = dev, chunk, 0, repeat
        self.variants = variants  # the steps: "unfused", "fused", "phased"
        self.overlaps = overlaps  # batches with the host's work overlapped with the device's, and/or not
        self.figures: dict[str, str] = {}
        self.ratios: dict[str, float] = {}  # one launch, device / C step, by variant tag
        self.errors: dict[str, str] = {}  # why a Triton step could not run here, by step
        self.rates: dict[tuple[str, str], tuple[float, int, float | None]] = {}  # (tag, sample): best

    def guarded(self, step: str, fn, *args) -> None:
        """fn(*args, step); an error of a Triton step (compiling its kernels on this machine's
        version, say) is reported and ends that step's checks only, so that one device run
        still gives the unfused step's figures."""
        if step in self.errors:
            return
        if step == "unfused":
            fn(*args, step)
            return
        try:
            fn(*args, step)
        except Exception as e:  # noqa: BLE001 (reported, counted, and the run goes on)
            self.errors[step] = f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
            print(f"the {step} step failed here, its checks end: {self.errors[step]}", flush=True)

    def sync(self):
        if self.dev == "cuda":
            torch.cuda.synchronize()

    def precision(self, name):
        cm, make = launches_of(name)
        cpu = NeuralEngine("cpu").host(cm)
        halt = cm.fields["phase"][PHASES.index("halt")]
        held = [cpu.written_heads(lau) for lau in make()]
        layers = BatchedLayers(row_layers(cm, self.dev, True), 1, cpu._all_dims, halt, cm.fields["fault"],
                               self.dev, graph=False, level=cm.value_level,
                               heads_per_slot=np.max([x.sum(1) for x in held], 0))
        every = layers.slot_bytes([R.nh for R in layers.layers])
        projs = [p for R in layers.layers for p in R.projections()]
        lowp = [p for p in projs if p.lowp]
        parts = sum(p.parts for p in lowp)
        print(f"precision ({name}): {len(lowp)} of {len(projs)} +-1 projections in bfloat16 parts "
              f"({parts} parts, {sum(p.elements for p in lowp) / 1e6:.1f} M part elements), "
              f"down_proj/out_proj float32; weights on the device {layers.weight_bytes() / 2**20:.0f} MiB; "
              f"state heads {sum(R.nh for R in layers.layers)}, a slot holds {sum(layers.allot)} of them: "
              f"slot bytes {layers.slot_bytes():,} (every head: {every:,})")
        for n in layers.notes:
            print(f"  fell back: {n}")
        self.figures[f"bytes per slot (its tensors, {name})"] = \
            f"{layers.slot_bytes():,} ({sum(layers.allot)} heads; every head: {every:,})"

    def lockstep(self, name, step="unfused") -> bool:
        """Every member against the C step alone, every hidden state, final recurrent states."""
        cm, make = launches_of(name)
        tag = _tag(step)
        launches = make()
        cpu = NeuralEngine("cpu").host(cm)
        halt = cm.fields["phase"][PHASES.index("halt")]
        held = [cpu.written_heads(lau) for lau in launches]  # each slot holds only its launch's heads
        dev = BatchedLayers(row_layers(cm, self.dev, True), len(launches), cpu._all_dims, halt, cm.fields["fault"],
                            self.dev, chunk=1, level=cm.value_level, **_step_kw(step),
                            heads_per_slot=np.max([x.sum(1) for x in held], 0))
        every = name.startswith("mixed")  # every recurrent state at every step (see the docstring)

        def crcs(state_of) -> list[int]:
            return [zlib.crc32(np.ascontiguousarray(state_of(L)).view(np.uint8)) for L in range(cm.num_layers)]

        alone, trail, states = [], [], []
        for b, lau in enumerate(launches):
            h, init = cpu.initial(lau)
            dev.load(b, h, init, held[b])
            cpu.net.reset(init)
            seq, crc = [], []
            while cpu.get(h, "phase") != HALT and cpu.get(h, "fault") == 0:
                h = cpu.net.step(h)
                seq.append(h.view(np.uint32).copy())
                if every:
                    crc.append(crcs(cpu.net.recurrent_state))
            alone.append(seq)
            trail.append(crc)
            states.append([cpu.net.recurrent_state(L).view(np.uint32).copy() for L in range(cm.num_layers)])
        same, steps = True, max(len(s) for s in alone)
        for t in range(steps):
            _, flags = dev.run()
            if flags.any():
                print(f"{name}: premise flag {flags.tolist()} at step {t + 1}")
                same = False
                break
            for b, seq in enumerate(alone):
                want = seq[min(t, len(seq) - 1)]  # after its halt: frozen at its last step
                if not np.array_equal(dev.hidden(b).view(np.uint32), want):
                    print(f"{name}: member {b} hidden state differs at step {t + 1}")
                    same = False
                if every and crcs(lambda L: dev.recurrent_state(b, L)) != trail[b][min(t, len(seq) - 1)]:
                    print(f"{name}: member {b} recurrent state differs at step {t + 1}")
                    same = False
            if not same:
                break
        for b in range(len(launches)):
            same = same and all(np.array_equal(dev.recurrent_state(b, L).view(np.uint32), states[b][L])
                                for L in range(cm.num_layers))
        what = "every hidden and recurrent state at every step" if every else \
            "every hidden state at every step, recurrent states at the end"
        print(f"lockstep{tag} {name:10} members {len(launches)} steps {steps:5d} "
              f"lengths {[len(s) for s in alone]}  ({what})  bit-identical: {same}")
        self.bad += not same
        return same

    def one_launch(self, name):
        cm, make = launches_of(name)
        host = NeuralEngine("cpu").host(cm)
        best_c = None
        for _ in range(self.repeat):
            t = time.perf_counter(); want = host.run(make()[0]); dt = time.perf_counter() - t
            best_c = dt if best_c is None else min(best_c, dt)
        for step in self.variants:
            self.guarded(step, self._one_launch, name, cm, make, want, best_c)

    def _one_launch(self, name, cm, make, want, best_c, step="unfused"):
        tag = _tag(step)
        runner = BatchRunner(cm, 1, self.dev, chunk=self.chunk, lowp=True, **_step_kw(step))
        if self.repeat > 1:
            runner.run(make()[:1], 10 ** 6)  # warm-up
        best_d = None
        for _ in range(max(1, self.repeat - 1)):
            self.sync(); t = time.perf_counter()
            res = runner.run(make()[:1], 10 ** 6)[0]
            self.sync(); dt = time.perf_counter() - t
            best_d = dt if best_d is None else min(best_d, dt)
        ok = np.array_equal(res.memory, want.memory) and res.stats == want.stats
        self.bad += not ok
        c_rate, d_rate = want.network_steps / best_c, res.network_steps / best_d
        kern = runner.layers._fused  # a Triton step counts its kernel launches
        per = f"  kernels a step {kern.per_step}" if kern is not None else ""
        if step == "phased":  # its weights by columns, beside the batched step's products
            from qgcc.engines.phased import column_bytes

            per += f"  weights by columns {column_bytes(kern) / 2**20:.0f} MiB"
        print(f"one launch{tag} {name:8} steps {want.network_steps:5d}  C step {c_rate:8.0f} steps/s  "
              f"{self.dev} {d_rate:8.1f} steps/s  ratio {d_rate / c_rate:6.3f}x{per}  results equal: {ok}")
        self.figures[f"one launch{tag} {name}: {self.dev}/C step"] = \
            f"{d_rate / c_rate:.3f}x ({d_rate:.1f} vs {c_rate:.0f} steps/s)"
        self.ratios[tag] = d_rate / c_rate

    def batches(self, name, sizes, step="unfused"):
        """Each width with each overlap variant in turn (so a run cut short has both for the
        smaller widths); the targets are judged on the first variant (overlap on by default)."""
        cm, make = launches_of(name)
        tag = _tag(step)
        if step == "phased":
            sizes = [s for s in sizes if s <= PHASED_WIDTHS] or sizes[:1]
        lanes = []
        host = NeuralEngine("cpu").host(cm)
        wants = [host.run(lau, on_step=lambda r: lanes.append(bin(r.active).count("1"))) for lau in make()]
        best = {ov: (0.0, 0, None) for ov in self.overlaps}
        for size in sizes:
            done = [self._batch(name, cm, make, wants, sum(lanes), size, step, ov) for ov in self.overlaps]
            for ov, got in zip(self.overlaps, done):
                if got is not None:
                    best[ov] = max(best[ov], (got[0], size, got[1]), key=lambda r: r[:2])
            if None in done:
                break
        for k, ov in enumerate(self.overlaps):
            at = f"; device bytes/slot there {best[ov][2] / 2**20:.2f} MiB" if best[ov][2] is not None else ""
            self.figures[f"batched{tag} {name}{OVERLAP_LABEL[ov]}: best lane-instr/s (width)"] = \
                f"{best[ov][0]:,.0f} ({best[ov][1]}){at}"
            if k == 0:
                self.rates[(tag, name)] = best[ov]

    def _batch(self, name, cm, make, wants, lanes, size, step, overlap):
        """One batch of `size` launches through a runner of that width: (lane-instr/s, device
        bytes a slot or None), or None when the device's memory ran out."""
        tag = f"{_tag(step)} {name:8}{OVERLAP_LABEL[overlap]:11}"
        per_round = len(wants)
        # The weights are built once per network (row_layers); allocated before m0 they are
        # not in the peak's difference, else they are and are taken out.
        resident = ("row-layers", str(torch.device(self.dev)), True) in cm.hosts
        if self.dev == "cuda":
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats()
            m0 = torch.cuda.memory_allocated()
        todo = [lau for _ in range(-(-size // per_round)) for lau in make()][:size]
        t = time.perf_counter()
        try:
            runner = BatchRunner(cm, size, self.dev, chunk=self.chunk, lowp=True, **_step_kw(step), launches=todo,
                                 overlap=overlap)
            build = time.perf_counter() - t
            self.sync(); t = time.perf_counter()
            results = runner.run(todo, 10 ** 6)
            self.sync(); wall = time.perf_counter() - t
        except torch.cuda.OutOfMemoryError as e:
            print(f"batch{tag} width {size:6d}  out of device memory ({str(e).splitlines()[0][:120]})")
            return None
        ok = all(not isinstance(r, Exception) and np.array_equal(r.memory, wants[i % per_round].memory)
                 and r.stats == wants[i % per_round].stats for i, r in enumerate(results))
        self.bad += not ok
        rate = lanes * size / per_round / wall
        mem, per_slot = f"  slot tensors {runner.layers.slot_bytes():,} B", None
        if self.dev == "cuda":
            peak = torch.cuda.max_memory_allocated() - m0 - (0 if resident else runner.layers.weight_bytes())
            per_slot = peak / size
            mem += f"  device bytes/slot {per_slot / 2**20:7.2f} MiB"
        print(f"batch{tag} width {size:6d}  build {build:6.1f} s  {size / wall:9.1f} launches/s "
              f"{rate:12,.0f} lane-instr/s{mem}  results equal: {ok}", flush=True)
        return rate, per_slot


OVERLAP_LABEL = {True: " overlap", False: " no overlap"}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", default=",".join(sorted(lockstep.CASES)), help="lockstep samples")
    ap.add_argument("--sizes", default="64,1024,8192")
    ap.add_argument("--batch-samples", default="vadd,collatz")
    ap.add_argument("--one", default="vadd", help="the sample of the one-launch comparison")
    ap.add_argument("--chunk", type=int, default=16)
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--short", action="store_true",
                    help="only the mixed program's shortest launch: in lockstep, alone and "
                         "at widths 1 and 2, each timed once (what CI runs on the CPU)")
    ap.add_argument("--fused", default="no", choices=["no", "yes", "both"],
                    help="the fused step (Triton kernels) instead of the unfused one, or both side by side")
    ap.add_argument("--phased", action="store_true", help="the phased step (Triton kernels) beside them")
    ap.add_argument("--overlap", default="both", choices=["on", "off", "both"],
                    help="batches with the next chunk stepped while the host reads one (BatchRunner's "
                         "default on CUDA), without, or both side by side (the targets are judged on the first)")
    args = ap.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        print("bench/gpu_check.py: no CUDA device here (--device cpu runs the same code path on the CPU)")
        return 2
    first = "mixed"
    if args.short:
        args.samples, args.batch_samples, args.one, args.sizes, first = "", "mixed1", "mixed1", "1,2", "mixed1"
    variants = {"no": ("unfused",), "yes": ("fused",), "both": ("unfused", "fused")}[args.fused]
    variants += ("phased",) if args.phased else ()
    if variants != ("unfused",):
        from qgcc.engines.fused import kernels
        try:
            kernels(torch.device(args.device))  # before anything imports triton in the other mode
        except ValueError as e:
            print(f"bench/gpu_check.py: the fused and phased steps cannot run here: {e}")
            if "unfused" not in variants:
                return 2
            variants = ("unfused",)
    overlaps = {"on": (True,), "off": (False,), "both": (True, False)}[args.overlap]
    chk = Check(args.device, args.chunk, 1 if args.short else 3, variants, overlaps)
    print(f"device: {torch.cuda.get_device_name() if args.device == 'cuda' else 'cpu (no graphs)'}, "
          f"torch {torch.__version__}", flush=True)
    chk.precision(first if args.short else args.one)
    for step in variants:
        for name in [first] + [s for s in args.samples.split(",") if s]:
            chk.guarded(step, chk.lockstep, name)
    chk.one_launch(args.one)
    for name in [s for s in args.batch_samples.split(",") if s]:
        for step in variants:
            chk.guarded(step, chk.batches, name, [int(s) for s in args.sizes.split(",")])
    print("\nfigures:")
    for k, v in chk.figures.items():
        print(f"  {k:56} {v}")
    print(f"  {'every check exact':56} {chk.bad == 0}")
    for step, error in chk.errors.items():
        print(f"  {'the ' + step + ' step could not run':56} {error}")
    print("\ntargets (issue #26):")
    for line in targets(chk, args.device):
        print(f"  {line}")
    return 1 if chk.bad or chk.errors else 0


PHASED_WIDTHS = 64  # the phased step reads weight columns per launch: batches up to this width


def _tag(step: str) -> str:
    return "" if step == "unfused" else f" {step}"


def _step_kw(step: str) -> dict[str, bool]:
    return {"fused": step == "fused", "phased": step == "phased"}


ONE_LAUNCH_TARGET = 2.0  # one launch on the device at least 2x the C step on the same machine
LANE_RATE_TARGET = 1e6  # batched lane-instructions/s on the vadd and collatz short launches


def targets(chk: Check, device: str) -> list[str]:
    """Each target of issue #26 judged on this run's figures."""
    def verdict(ok: bool) -> str:
        return "met" if ok else "not met"

    out = []
    for tag, ratio in chk.ratios.items():
        out.append(f"one launch{tag} >= {ONE_LAUNCH_TARGET:g}x the C step: {verdict(ratio >= ONE_LAUNCH_TARGET)} "
                   f"({ratio:.3f}x)")
    for (tag, name), (rate, width, per_slot) in chk.rates.items():
        mem = f", {per_slot / 2**20:.2f} MiB of device memory a slot" if per_slot is not None else ""
        out.append(f"batched{tag} {name} >= {LANE_RATE_TARGET:,.0f} lane-instr/s: "
                   f"{verdict(rate >= LANE_RATE_TARGET)} ({rate:,.0f} at width {width}{mem})")
    out.append(f"every hidden and recurrent state bit-identical to the C step: {verdict(chk.bad == 0)}")
    if device != "cuda":
        out.append("(on the CPU the speed targets are printed for the record only: they are for a GPU)")
    return out


if __name__ == "__main__":
    sys.exit(main())
