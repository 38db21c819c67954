"""Launches stacked as a batch dimension compute exactly what each computes alone.

The batched step (qgcc.engines.neural_batch) runs B launches of one program through the
layers together: the projections become matrix-matrix products and each launch keeps its
own recurrent states.  Every sum in the layers is an exact integer (docs/engines.md), so a
member's numbers cannot depend on its neighbours or on the order of additions; these tests
hold it to that, bit for bit, against the compiled C step running each launch alone, and
check that a member that has halted stays frozen while the others go on.
"""

from __future__ import annotations

import importlib.util
import zlib

import numpy as np
import pytest

from qgcc.engines.batch import BatchRunner
from qgcc.engines.host import HALT, Host
from qgcc.engines.neural import neural_layers
from qgcc.engines.neural_batch import BatchedLayers
from qgcc.engines.neural_c import library
from qgcc.link.layout import PHASES
from qgcc.ref.emulator import run as emulate
from qgcc.runtime.launch import make_launch
from qgcc.trace import Fault

needs_c = pytest.mark.skipif(library() is None, reason="no C compiler for the compiled step")

from lockstep import MIXED, MIXED_KERNELS as KERNEL, linked  # noqa: E402  (three kernels of one program)
# (grid, block, n): launches of different lengths in network steps, so the members halt at different steps.
SHAPES = [(1, 1, 0), (1, 2, 1), (1, 4, 3)]


def program():
    return linked("mixed", KERNEL)


def launch(grid, block, n, a=None, kernel=0):
    prog, cm = program()
    a = np.arange(8, dtype=np.int32) * 5 - 11 if a is None else a
    return make_launch(prog, prog.kernels[kernel], (grid, 1, 1), (block, 1, 1), {"n": n}, {"a": a.copy()},
                       network=cm)


def fingerprint(states) -> list[int]:
    """Each state's bits, as a CRC (a one-bit difference always changes it)."""
    return [zlib.crc32(np.ascontiguousarray(s).view(np.uint8)) for s in states]


def alone(host: Host, net, lau) -> list[tuple[bytes, list[str]]]:
    """Every step's output and recurrent states of a launch run by itself."""
    h, init = host.initial(lau)
    net.reset(init)
    out = []
    while host.get(h, "phase") != HALT and host.get(h, "fault") == 0:
        h = net.step(h)
        out.append((h.tobytes(), fingerprint(net.recurrent_state(L) for L in range(len(host.cm.layers)))))
    return out


def stacked_equals_alone(cm, launches, lowp=True, fused=False, grow_at=None, phased=False) -> list[int]:
    """Run `launches` stacked and each alone on the C step; every hidden state and every
    recurrent state of every member must be the same bits at every step, a member that has
    halted must stay frozen, and its running bit must drop at its halt step.  Returns
    the members' lengths in steps.  `lowp`: the device's form of the products (bfloat16
    parts, engines/lowp.py), here computed on the CPU; the states are held as rail bits, each
    slot holding only the heads its launch can write (Host.written_heads; the others read
    as +0).  `fused`, `phased`: the step as Triton kernels (engines/fused.py, engines/phased.py,
    interpreted on the CPU).  `grow_at`: before that step, every slot's head blocks grow by
    one a layer (the blocks move in their pools mid-launch)."""
    host = Host(cm, neural_layers(cm, "cpu"))
    want = [alone(host, host.net, lau) for lau in launches]
    halt = cm.fields["phase"][PHASES.index("halt")]
    held = [host.written_heads(lau) for lau in launches]
    batch = BatchedLayers(cm.layers, len(launches), host._all_dims, halt, cm.fields["fault"], lowp=lowp,
                          level=cm.value_level, fused=fused, heads_per_slot=np.max([x.sum(1) for x in held], 0),
                          phased=phased)
    for slot, lau in enumerate(launches):
        batch.load(slot, *host.initial(lau), held[slot])
    for step in range(max(len(w) for w in want)):
        if step == grow_at:
            batch.reserve([m + 1 for m in batch.allot])
        bits, flags = batch.run()
        assert not flags.any()
        for slot, w in enumerate(want):
            h_want, states_want = w[min(step, len(w) - 1)]  # after its halt: frozen at its last step
            h = batch.hidden(slot)
            assert h.tobytes() == h_want, f"member {slot}: hidden state differs at step {step + 1}"
            assert fingerprint(batch.recurrent_state(slot, L) for L in range(cm.num_layers)) == states_want, \
                f"member {slot}: a recurrent state differs at step {step + 1}"
            # The fields the host decodes were gathered on the device from that same row.
            assert np.array_equal(bits[0, slot], h[host._all_dims] > 0)
            assert bool(batch.running[slot]) == (step + 1 < len(w))
    return [len(w) for w in want]


def in_device_form():
    """For the Triton steps' tests (skipped without triton, a third-party package: the `fused`
    extra): the mixed program's network, a host, its layers in the device's form (bfloat16
    parts) and phase.halt's dimension."""
    if importlib.util.find_spec("triton") is None:
        pytest.skip("triton is not installed")
    from qgcc.engines.neural_batch import row_layers

    prog, cm = program()
    return cm, Host(cm, None), row_layers(cm, "cpu", True), cm.fields["phase"][PHASES.index("halt")]


@needs_c
def test_every_member_of_a_batch_of_two_kernels_equals_its_launch_alone_at_every_step_and_halted_members_stay_frozen():
    """Launches of both kernels of one program, of four different lengths, stacked: one-hot
    rows gathered and scattered, bfloat16 parts for the +-1 products (the CUDA form)."""
    prog, cm = program()
    launches = [launch(g, b, n, kernel=k) for k, g, b, n in MIXED]
    lengths = [emulate(launch(g, b, n, kernel=k)).network_steps for k, g, b, n in MIXED]
    assert len(set(lengths)) == len(MIXED)
    assert stacked_equals_alone(cm, launches, grow_at=5) == lengths


@needs_c
@pytest.mark.slow
def test_the_fused_step_gives_every_member_of_a_batch_of_two_kernels_the_bits_of_its_launch_alone():
    """engines/fused.py: the step as a few Triton kernels a layer (run here by Triton's
    interpreter, about 8 s a step on this machine, hence slow), in the device's form: every
    hidden and recurrent state of a launch of each kernel, of different lengths (11 and 23
    steps), equals the C step's alone at every step, and the shorter stays frozen after its halt."""
    if importlib.util.find_spec("triton") is None:  # a third-party package (the `fused` extra), not ours;
        pytest.skip("triton is not installed")     # not imported here: engines.fused imports it interpreted
    prog, cm = program()
    todo = [MIXED[0], MIXED[3]]
    assert [m[0] for m in todo] == [0, 1]
    lengths = stacked_equals_alone(cm, [launch(g, b, n, kernel=k) for k, g, b, n in todo], fused=True)
    assert lengths[0] < lengths[1]


@pytest.mark.slow
def test_a_broken_premise_raises_the_same_flags_in_the_fused_step_as_in_the_unfused_one_and_only_in_its_slot():
    """A residual entry of 4 instead of +-8 in one member's mixer input: both steps flag that
    member, with the same premises (here all five, as the error spreads through the layers),
    and not the other member."""
    cm, host, layers, halt = in_device_form()
    steps = [BatchedLayers(layers, 2, host._all_dims, halt, cm.fields["fault"], level=cm.value_level, fused=f)
             for f in (False, True)]
    for slot, (k, g, b, n) in enumerate([MIXED[0], MIXED[3]]):
        h, init = host.initial(launch(g, b, n, kernel=k))
        if slot == 0:
            h = h.copy()
            h[int(layers[0].L.mix_in[0])] = 4.0
        for step in steps:
            step.load(slot, h, init)
    (_, unfused), (_, fused) = (step.run() for step in steps)
    assert fused.tolist() == unfused.tolist()
    assert fused[0] & 1 and fused[0] & 2 and fused[1] == 0  # NOT_PM8, INEXACT_ACT


@pytest.mark.slow
def test_a_write_into_a_head_the_slot_does_not_hold_is_flagged_alike_by_the_fused_and_unfused_steps():
    """NOT_HELD from the fused kernels (engines/fused_kernels.mix_rows reads the head table
    itself): the second member's table leaves out the warp table's last head, which the block's
    start writes; both steps flag that member only, with the same flags, give it the same
    hidden state, and leave block 0 +0."""
    from qgcc.engines.premises import NOT_HELD

    cm, host, layers, halt = in_device_form()
    todo = [launch(1, 1, 0), launch(1, 2, 1)]
    held = [host.written_heads(lau).copy() for lau in todo]
    held[1][0, len(cm.layout["layers"][0]["heads"]) - 1] = False
    steps = [BatchedLayers(layers, 2, host._all_dims, halt, cm.fields["fault"], level=cm.value_level, fused=f,
                           heads_per_slot=np.max([x.sum(1) for x in held], 0)) for f in (False, True)]
    for step in steps:
        for slot, lau in enumerate(todo):
            step.load(slot, *host.initial(lau), held[slot])
    seen = [np.zeros(2, np.int32), np.zeros(2, np.int32)]
    for _ in range(3):
        for j, step in enumerate(steps):
            seen[j] |= step.run()[1]
        assert steps[0].hidden(1).tobytes() == steps[1].hidden(1).tobytes()
    assert seen[0].tolist() == seen[1].tolist() and seen[0][0] == 0 and seen[0][1] & NOT_HELD
    assert not any(S[0].any() for step in steps for S, p in zip(step.states, step.pooled) if p)


@pytest.mark.slow
def test_the_phased_step_gives_every_member_of_a_batch_of_two_kernels_the_bits_of_its_launch_alone():
    """engines/phased.py: the one-launch form (the products over the flipped columns only, a
    head's rows and row work in one program, out_proj/down_proj over their active inputs),
    run by Triton's interpreter (about 9 s a step here, hence slow): every hidden and recurrent
    state of a launch of each kernel (11 and 23 steps) equals the C step's alone at every step,
    and the shorter stays frozen after its halt."""
    if importlib.util.find_spec("triton") is None:  # third-party (the `fused` extra), not ours
        pytest.skip("triton is not installed")
    prog, cm = program()
    todo = [MIXED[0], MIXED[3]]
    lengths = stacked_equals_alone(cm, [launch(g, b, n, kernel=k) for k, g, b, n in todo], phased=True)
    assert lengths[0] < lengths[1]


@pytest.mark.slow
def test_a_broken_premise_stops_the_phased_step_in_the_members_step_and_only_there():
    """A residual entry of 4 instead of +-8 in one member's input: the phased step reads inputs by
    sign, so it computes other numbers than the unfused step from there, but it raises the
    residual premise in that member in that step (the batch stops), and not in the other."""
    from qgcc.engines.premises import NOT_PM8

    cm, host, layers, halt = in_device_form()
    step = BatchedLayers(layers, 2, host._all_dims, halt, cm.fields["fault"], level=cm.value_level, phased=True)
    for slot, (k, g, b, n) in enumerate([MIXED[0], MIXED[3]]):
        h, init = host.initial(launch(g, b, n, kernel=k))
        if slot == 0:
            h = h.copy()
            h[int(layers[0].L.mix_in[0])] = 4.0
        step.load(slot, h, init)
    _, flags = step.run()
    assert flags[0] & NOT_PM8 and flags[1] == 0
    mixers = sum(1 for R in layers if R.nh)  # 2 kernels a mixer layer, 1 an MLP-only one, 3 a step
    assert step._fused.per_step == 3 + 2 * mixers + (len(layers) - mixers)


def test_a_batch_steps_fused_or_phased_not_both():
    prog, cm = program()
    with pytest.raises(ValueError, match="either fused or phased"):
        BatchedLayers(cm.layers, 1, np.arange(3), 0, [1], level=cm.value_level, fused=True, phased=True)


@pytest.mark.slow
def test_the_fused_and_phased_kernels_compile_for_an_h200_with_correctly_rounded_division_and_square_root_and_no_fma():
    """bench/fused_ptx.py compiles every kernel of the fused and the phased step for sm_90 (no GPU
    needed) as the step launches it, and finds in its PTX no fused multiply-add, no approximate division,
    reciprocal or square root and no flush-to-zero: the rounding the exactness argument assumes.
    In a process of its own: triton compiles there, while this one may have it interpreted."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    if importlib.util.find_spec("triton") is None:  # third-party (the `fused` extra)
        pytest.skip("triton is not installed")
    root = Path(__file__).resolve().parents[1]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root / "src"), os.environ.get("PYTHONPATH", "")]))
    env.pop("TRITON_INTERPRET", None)
    for step, kernel in (("fused", "mix_rows"), ("phased", "mix_head")):
        out = subprocess.run([sys.executable, str(root / "bench" / "fused_ptx.py"), "--step", step], env=env,
                             capture_output=True, text=True, timeout=600)
        assert out.returncode == 0, out.stdout + out.stderr
        assert kernel in out.stdout and "no risky instruction in the step's kernels: True" in out.stdout


@needs_c
@pytest.mark.slow
@pytest.mark.parametrize("name", ["collatz", "histogram", "matmul", "reduce", "scan", "vadd"])
def test_every_sample_stacked_with_a_shorter_launch_of_itself_equals_both_run_alone(name):
    """Each sample's short launch (tests/lockstep.py) and the same launch with a smaller n."""
    import lockstep as samples

    grid, block, scalars, arrays = samples.CASES[name]
    prog, cm = samples.linked(name)
    launches = [make_launch(prog, prog.kernels[0], grid, block, dict(scalars, n=n),
                            {a: v.copy() for a, v in arrays.items()}, network=cm)
                for n in (scalars["n"], scalars["n"] // 2)]
    lengths = stacked_equals_alone(cm, launches)
    assert lengths[0] > lengths[1]


@needs_c
def test_a_batch_with_more_launches_than_slots_gives_each_launch_its_own_result_or_fault():
    """Slots are refilled as launches end; a fault or a step limit ends one member only."""
    prog, cm = program()
    host = Host(cm, neural_layers(cm, "cpu"))
    specs = [((1, 1, 0), None), ((1, 4, 4), np.zeros(2, np.int32)),  # out of bounds
             ((1, 4, 3), None)]  # 16 warp instructions: over the limit of 12
    max_steps = 12
    results = BatchRunner(cm, 2).run([launch(*s, a) for s, a in specs], max_steps)
    for (shape, a), got in zip(specs, results):
        try:
            want = host.run(launch(*shape, a), max_steps)
        except Fault as fault:
            assert isinstance(got, type(fault)) and str(got) == str(fault)
            # A memory fault carries the memory at the fault (the printf records so far): the same cells.
            mine, theirs = dict(got.__dict__), dict(fault.__dict__)
            assert np.array_equal(mine.pop("memory", None), theirs.pop("memory", None)) and mine == theirs
        else:
            assert np.array_equal(got.memory, want.memory) and got.stats == want.stats
            assert got.network_steps == want.network_steps
    assert sum(isinstance(r, Fault) for r in results) == 2


def _outcome(result) -> tuple:
    """A launch's result or fault, as everything it carries (a memory fault's memory included)."""
    if isinstance(result, Fault):
        fields = dict(result.__dict__)
        memory = fields.pop("memory", None)
        return type(result).__name__, str(result), sorted(fields.items()), None if memory is None else memory.tolist()
    return result.memory.tolist(), result.stats, result.network_steps


@needs_c
@pytest.mark.parametrize("overlap,traced", [(True, True), (True, False),
                                            pytest.param(False, True, marks=pytest.mark.slow)])
def test_overlapped_batches_give_each_launch_the_result_fault_statistics_and_trace_records_of_host_run(
        overlap, traced, monkeypatch):
    """With overlap the device steps chunk j + 1 while the host reads chunk j (the CUDA default;
    on the CPU the same order of work, computed synchronously): slots refilled while the chunk
    in flight still holds their previous launch's rows (a launch frozen by its halt or fault is
    refilled before the next chunk, one ended by the host at the step limit runs on during it
    and is refilled after), memory read when the device froze a launch, the last chunk started
    for nothing.  Each of five launches in three slots, three steps a read, gets Host.run's
    result or fault (a step limit that ends a launch which diverged, barrier-waited and did an
    atomic; an out-of-bounds load with the memory at the fault; the step limit of the last
    launch, twelve instructions before its halt), statistics, network steps and trace records."""
    from qgcc.engines import batch as batch_mod

    prog, cm = program()
    host = Host(cm, neural_layers(cm, "cpu"))
    max_steps = 17
    specs = [(2, 1, 2, 1, None), (0, 1, 1, 0, None), (0, 1, 4, 4, np.zeros(2, np.int32)), (0, 1, 4, 3, None),
             (1, 1, 2, 2, None)]
    todo = lambda: [launch(g, b, n, a, kernel=k) for k, g, b, n, a in specs]  # noqa: E731
    want, want_records = [], []
    for lau in todo():
        records = []
        try:
            want.append(_outcome(host.run(lau, max_steps, on_step=records.append if traced else None)))
        except Fault as fault:
            want.append(_outcome(fault))
        want_records.append([(r.key(), r.diverged, r.reconverged, r.barrier) for r in records])
    assert [w[0] for w in want] == ["StepLimitFault", want[1][0], "MemoryFault", want[3][0], "StepLimitFault"]
    assert want[3][1].divergent_steps == 1

    by_launch: dict[int, list] = {}

    class Tagged(batch_mod.Tracker):  # each launch's records apart (on_step itself does not say whose)
        def __init__(self, host, lau, max_steps, on_step, first):
            tag = lambda r: by_launch.setdefault(id(lau), []).append(r)  # noqa: E731
            super().__init__(host, lau, max_steps, tag if on_step else None, first)

    monkeypatch.setattr(batch_mod, "Tracker", Tagged)
    launches = todo()
    runner = BatchRunner(cm, 3, chunk=3, overlap=overlap)
    drain, drained = runner.layers.drain, []
    runner.layers.drain = lambda: (drained.append(len(runner.layers._pending)), drain())
    got = runner.run(launches, max_steps, on_step=(lambda r: None) if traced else None)
    assert [_outcome(g) for g in got] == want
    # The last launch ends at the step limit, still running on the device: with overlap the
    # chunk started after its last read is dropped at the end, so the next batch starts clean.
    assert drained == [0, 1 if overlap else 0] and not runner.layers._pending
    if traced:
        assert [[(r.key(), r.diverged, r.reconverged, r.barrier) for r in by_launch.get(id(lau), [])]
                for lau in launches] == want_records
        assert all(want_records)


def test_chunks_are_started_and_collected_in_order_two_at_most_in_flight():
    """BatchedLayers.enqueue / collect (the overlapped runner's halves of `run`): two chunks may
    be in flight, one per page-locked buffer on CUDA; each chunk's rows are its own steps
    (the same as `run` gives), its running bits drop when the launch halts; a third enqueue or a
    collect with nothing in flight is an error, not a buffer overwritten or a wait forever."""
    from qgcc.engines.neural_batch import row_layers

    prog, cm = program()
    host = Host(cm, None)
    halt = cm.fields["phase"][PHASES.index("halt")]

    def layers():
        batch = BatchedLayers(row_layers(cm, "cpu", False), 1, host._all_dims, halt, cm.fields["fault"],
                              level=cm.value_level, chunk=6, decode=(host._all_pow, host._starts))
        h, rails = host.initial_rails(launch(1, 1, 0))  # 11 steps
        batch.load_many(np.array([0]), h[None], [rails])
        return batch

    one, two = layers(), layers()
    want = [one.run() for _ in range(2)]
    two.enqueue()
    two.enqueue()
    with pytest.raises(RuntimeError, match="two chunks are in flight"):
        two.enqueue()
    got = [two.collect() for _ in range(2)]
    with pytest.raises(RuntimeError, match="no chunk in flight"):
        two.collect()
    for (values, flags), chunk in zip(want, got):
        assert np.array_equal(values, chunk.values) and np.array_equal(flags, chunk.flags)
    assert got[0].running.tolist() == [True] and got[1].running.tolist() == [False]
    assert got[1].values[4, 0, host._names.index("phase")] == HALT  # step 11 of 12
    two.enqueue()
    two.drain()
    assert not two._pending


@needs_c
@pytest.mark.slow
def test_untraced_batches_count_divergence_barriers_atomics_loads_and_stores_like_a_launch_alone():
    """Without trace records the runner sums every slot's statistics at once (engines.bulk);
    they, the network steps and the buffers are what the C step's loop gives each launch."""
    prog, cm = program()
    host = Host(cm, neural_layers(cm, "cpu"))
    specs = [(2, 1, 4, 5), (1, 1, 3, 2), (2, 1, 8, 3), (0, 1, 4, 3), (2, 1, 6, 1)]
    results = BatchRunner(cm, 3, lowp=True).run([launch(g, b, n, kernel=k) for k, g, b, n in specs], 500)
    stats = []
    for (k, g, b, n), got in zip(specs, results):
        want = host.run(launch(g, b, n, kernel=k), 500)
        assert np.array_equal(got.memory, want.memory) and got.stats == want.stats
        assert got.network_steps == want.network_steps
        stats.append(got.stats)
    assert all(sum(getattr(s, key) for s in stats) > 0
               for key in ("divergent_steps", "barrier_waits", "atomics", "loads", "stores"))


@needs_c
def test_a_batch_of_one_traces_like_a_launch_run_alone():
    """How `qgrun --device cuda` runs a single launch (there in a CUDA graph): the same
    records, flags and buffers as the C step's loop, here with 4 steps per host read."""
    prog, cm = program()
    want, got = [], []
    alone_result = Host(cm, neural_layers(cm, "cpu")).run(launch(1, 1, 1), 100, on_step=want.append)
    result = BatchRunner(cm, 1, chunk=4).run([launch(1, 1, 1)], 100, on_step=got.append)[0]
    assert [(r.key(), r.diverged, r.reconverged, r.barrier) for r in got] == \
        [(r.key(), r.diverged, r.reconverged, r.barrier) for r in want]
    assert np.array_equal(result.memory, alone_result.memory) and result.stats == alone_result.stats


def test_the_device_one_hot_check_accepts_one_power_of_two_entry_at_or_above_17_and_nothing_else():
    """neural_batch._one_hot, the C step's one_hot evaluated on the device for every (slot, head):
    one entry >= 17 that is a power of two is a key (its index), none is no key, and two such
    entries or one that is not a power of two break the premise (NOT_ONE_HOT)."""
    import torch

    from qgcc.engines.neural_batch import _one_hot

    pre = torch.full((1, 5, 128), -89.0)
    pre[0, 0, 77] = 128.0  # a key
    pre[0, 1, [3, 9]] = 128.0  # two hot entries
    pre[0, 2, 5] = 24.0  # not a power of two
    pre[0, 3, 0] = 16.0  # below 17: no key
    pre[0, 4, 127] = 32.0
    idx, one, value, bad = _one_hot(pre)
    assert one.tolist() == [[True, False, True, False, True]]
    assert bad.tolist() == [[False, True, True, False, False]]
    assert idx[0, 0] == 77 and idx[0, 4] == 127
    assert value[0, 0] == value[0, 4] == 1.0  # a / sqrt(a * a + eps) rounds to 1 for these a


@needs_c
def test_a_broken_premise_stops_the_batch_with_an_error_naming_the_launch_and_the_premise():
    """The premise flags computed on the device are read with the fields; a set flag ends the
    batch with the launch's number and the premise's text, not with numbers that may differ
    from the C step's.  Here the second launch's first input has a residual entry of 4."""
    from qgcc.engines.neural_c import StepError

    prog, cm = program()
    runner = BatchRunner(cm, 2)
    first = runner.host.initial_rails_many

    def corrupt(launches):
        h, at, owner = first(launches)
        assert len(launches) == 2  # both loaded together
        h[1, int(runner.layers.layers[0].L.mix_in[0])] = 4.0
        return h, at, owner

    runner.host.initial_rails_many = corrupt
    with pytest.raises(StepError, match=r"launch 2 of the batch: .*a residual entry is not exactly \+-8.*premise of the "
                       r"batched step.s exactness"):
        runner.run([launch(1, 1, 0), launch(1, 2, 1)], 100)


def test_cuda_graphs_are_asked_for_only_on_cuda():
    prog, cm = program()
    with pytest.raises(ValueError, match="CUDA graphs need --device cuda"):
        BatchedLayers(cm.layers, 2, np.arange(3), 0, [1], device="cpu", graph=True)


def test_the_fused_step_applies_to_a_compiled_network_and_refuses_forms_its_kernels_do_not_compute():
    """engines.fused.why_not_fused, checked before triton is imported: a linked program's layers
    (RMSNorm weights 0, one-hot rows, conv taps 1, states as rail bits whose read squares add
    exactly) are the fused kernels' form; states without the rail level, or a level whose read
    squares could round when summed in another order, are refused."""
    from qgcc.engines.fused import why_not_fused
    from qgcc.engines.neural_batch import row_layers

    prog, cm = program()
    batch = BatchedLayers(row_layers(cm, "cpu", False), 2, np.arange(3), 0, [1], level=cm.value_level)
    assert why_not_fused(batch.layers, batch.packed, cm.value_level) == ""
    assert "more than 17 significant bits" in why_not_fused(batch.layers, batch.packed, 1.2345)
    with pytest.raises(ValueError, match="fused step does not apply: .*rail level"):
        BatchedLayers(batch.layers, 2, np.arange(3), 0, [1], fused=True)


def _gpu_check():
    """bench/gpu_check.py as a module."""
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "bench" / "gpu_check.py"
    spec = importlib.util.spec_from_file_location("gpu_check", path)
    check = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(check)
    return check


def test_a_failing_fused_step_ends_only_the_fused_checks_of_the_gpu_check_and_is_reported(capsys):
    """One device run must still give the unfused step's figures when the fused step cannot run
    there (Triton failing to compile on that machine's version, say): the error is printed, the
    fused variant's later checks are skipped, the unfused and phased ones still run, and the exit
    code says that something failed."""
    check = _gpu_check()
    chk = check.Check("cpu", 1, 1, ("unfused", "fused", "phased"))
    calls = []

    def broken(name, step):
        calls.append((name, step))
        if step == "fused":
            raise RuntimeError("PassManager::run failed\nmore")

    chk.guarded("fused", broken, "mixed")
    chk.guarded("fused", broken, "vadd")
    chk.guarded("phased", broken, "vadd")
    chk.guarded("unfused", broken, "vadd")
    assert calls == [("mixed", "fused"), ("vadd", "phased"), ("vadd", "unfused")]
    assert chk.errors == {"fused": "RuntimeError: PassManager::run failed"}
    assert "the fused step failed here, its checks end: RuntimeError: PassManager::run failed" in \
        capsys.readouterr().out
    with pytest.raises(ZeroDivisionError):  # the unfused step's errors are not swallowed
        chk.guarded("unfused", lambda step: 1 / 0)


@needs_c
def test_the_gpu_check_runs_its_whole_device_code_path_on_the_cpu_and_finds_it_exact(capsys):
    """bench/gpu_check.py --device cpu --short: precision, a lockstep batch (every hidden and
    recurrent state at every step), one launch, and batches through the runner, all against the
    C step; then each target of issue #26 judged on those figures."""
    check = _gpu_check()
    assert check.main(["--device", "cpu", "--short"]) == 0
    out = capsys.readouterr().out
    assert "bit-identical: True" in out and "every check exact" in out and "results equal: False" not in out
    assert "(every hidden and recurrent state at every step)  bit-identical: True" in out
    verdicts = out.split("targets (issue #26):")[1]
    assert "one launch >= 2x the C step: not met" in verdicts  # the CPU runs the device's form slowly
    assert "batched mixed1 >= 1,000,000 lane-instr/s: not met" in verdicts and "at width " in verdicts
    assert "bit-identical to the C step: met" in verdicts


@needs_c
def test_the_host_ceiling_bench_replays_the_c_steps_fields_through_the_runner_to_the_c_steps_results(capsys):
    """bench/host_ceiling.py: the runner's own work (loading groups of slots, the bulk
    bookkeeping, handing halted launches to a Tracker, refilling slots) fed the C step's
    fields by a stand-in device; every one of 3 x 3 launches through 3 slots ends with the
    C step's memory and statistics."""
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "bench" / "host_ceiling.py"
    spec = importlib.util.spec_from_file_location("host_ceiling", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    assert bench.main(["--samples", "vadd", "--widths", "3", "--rounds", "3", "--chunk", "4"]) == 0
    out = capsys.readouterr().out
    assert "9 launches in" in out and "results equal the C step's: True" in out


def test_the_sparse_against_dense_comparison_runs_on_the_cpu_and_finds_both_forms_exact(capsys):
    """bench/sparse_dense.py (issue #26 item 2: measure sparse weights against the dense products),
    on two layers at widths 1 and 3: the device's dense form and CSR products of the +-1
    projections both equal the exact product, bit for bit."""
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "bench" / "sparse_dense.py"
    spec = importlib.util.spec_from_file_location("sparse_dense", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    assert bench.main(["--device", "cpu", "--sample", "mixed", "--layers", "2", "--widths", "1,3",
                       "--repeat", "1"]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()[2:]]
    assert [r[0] for r in rows] == ["1", "3"] and all(r[-1] == "True" for r in rows)


def test_rail_bits_give_back_every_state_entry_and_refuse_any_other_value():
    """States are held as bits of +0 / V (neural_batch.Rails): a round trip is the same
    float32 bits, and a value that is neither (-0 included) is reported, never stored."""
    import torch

    from qgcc.engines.neural_batch import Rails

    level = 181.01934814453125
    rails = Rails(level, torch.device("cpu"))
    rng = np.random.default_rng(3)
    rows = np.where(rng.random((3, 5, 128)) < 0.3, np.float32(level), np.float32(0.0)).astype(np.float32)
    packed = torch.from_numpy(rails.pack_numpy(rows))
    assert packed.shape == (3, 5, 16) and packed.dtype == torch.uint8
    back = rails.unpack(packed).numpy()
    assert back.view(np.uint32).tobytes() == rows.view(np.uint32).tobytes()
    again, off = rails.pack(torch.from_numpy(rows))
    assert torch.equal(again, packed) and not off.any()
    for wrong in (-0.0, 16.0, level * 2):
        bad = rows.copy()
        bad[1, 2, 77] = wrong
        _, off = rails.pack(torch.from_numpy(bad))
        assert off.nonzero().tolist() == [[1, 2, 77]]
        with pytest.raises(ValueError, match="neither"):
            rails.pack_numpy(bad)


def test_loading_and_reading_a_group_of_slots_at_once_gives_the_bits_of_one_slot_at_a_time():
    """BatchRunner loads launches as rail positions, a group at a time, and reads the rows
    of every halted slot in one gather: each slot must hold the states `load` gives it from
    Host.initial's dense ones (every entry of every layer, over whatever the slot held
    before), and its cells must be those `Host.read_cells` reads from them."""
    from qgcc.engines.neural_batch import row_layers

    prog, cm = program()
    host = Host(cm, None)
    launches = [launch(g, b, n, kernel=k) for k, g, b, n in MIXED]
    halt = cm.fields["phase"][PHASES.index("halt")]

    def layers():
        return BatchedLayers(row_layers(cm, "cpu", False), 6, host._all_dims, halt, cm.fields["fault"],
                             level=cm.value_level)

    def load_many(batch, slots, todo):
        starts = [host.initial_rails(lau) for lau in todo]
        batch.load_many(np.array(slots), np.stack([s[0] for s in starts]), [s[1] for s in starts])

    for slots in ([5, 0, 3, 2], [1, 2, 3, 4]):  # scattered slots, and a run of them
        one, bulk = layers(), layers()
        for slot, lau in zip(slots, launches):
            one.load(slot, *host.initial(lau))
            other = launch(1, 4, 3, a=np.arange(40, dtype=np.int32) * 7 + slot, kernel=1)  # more rows
            bulk.load(slot, *host.initial(other))  # something else first
        load_many(bulk, slots, launches)
        count = max(len(lau.memory) for lau in launches)
        cells = host.cells_from_rails(bulk.read_rails(np.array(slots), host.cell_rows(count)), count)
        for j, (slot, lau) in enumerate(zip(slots, launches)):
            assert bulk.hidden(slot).tobytes() == one.hidden(slot).tobytes()
            assert fingerprint(bulk.recurrent_state(slot, L) for L in range(cm.num_layers)) == \
                fingerprint(one.recurrent_state(slot, L) for L in range(cm.num_layers)), f"slot {slot}"
            want = host.read_cells(len(lau.memory), lambda L: one.recurrent_state(slot, L))
            assert np.array_equal(want, np.asarray(lau.memory, np.uint32))
            assert np.array_equal(cells[j, :len(lau.memory)], want)
        assert bool(bulk.running[slots].all()) and not bulk.flags[slots].any()


def test_the_first_inputs_and_rail_positions_of_a_group_are_those_of_each_launch_alone():
    """Host.initial_rails_many (BatchRunner loads groups of launches with it) gives each launch of
    a group of different kernels, sizes and parameter values the arrays initial_rails gives it alone,
    and changing a launch's cells changes only its own positions."""
    prog, cm = program()
    host = Host(cm, None)
    todo = [launch(g, b, n, kernel=k) for k, g, b, n in MIXED] + [launch(1, 4, 3, a=np.arange(40, dtype=np.int32),
                                                                           kernel=1)]
    assert len({len(lau.memory) for lau in todo}) > 1 and len({tuple(lau.params) for lau in todo}) > 1
    h, at, owner = host.initial_rails_many(todo)
    for j, lau in enumerate(todo):
        alone_h, alone = host.initial_rails(lau)
        assert h[j].tobytes() == alone_h.tobytes() and np.array_equal(at[owner == j], alone), j
    todo[1].memory[0] ^= 1
    h2, at2, owner2 = host.initial_rails_many(todo)
    assert np.array_equal(owner, owner2)
    assert [np.array_equal(at[owner == j], at2[owner == j]) for j in range(len(todo))] == \
        [True, False] + [True] * (len(todo) - 2)


def test_layout_written_heads_holds_the_cells_shared_cells_and_warp_groups_of_a_launch_and_every_other_head():
    """layout.written_heads on the linked layout's names: memory heads only where the launch's
    cells or shared cells are (256 cells a head), register heads only for warp groups with a
    running warp (4 warps a head), every other head (warp table, thread indices, parameters)."""
    from qgcc.link.layout import GLOBAL_CELLS, cell_location, written_heads

    prog, cm = program()
    names = [L["heads"] for L in cm.layout["layers"]]
    mem0 = cm.layout["memory_first_layer"]

    def held(gsize, shared, threads):
        rows = written_heads(names, mem0, gsize, shared, threads)
        return {(L, h) for L, row in enumerate(rows) for h, x in enumerate(row) if x}

    small = held(8, 0, 4)
    assert {names[L][h] for L, h in small if names[L][h].startswith("mem.")} == {names[mem0][0]}
    assert sorted(names[L][h] for L, h in small if names[L][h].startswith("reg")) == \
        sorted(f"reg{p}.l{lane}.g0" for p in "ABC" for lane in range(4))
    assert {names[L][h] for L, h in small if not names[L][h].startswith(("mem.", "reg"))} == \
        {"warptable.0", "warptable.1", "warptable.2", "tid0", "tid1", "tid2", "tid3", "params"}
    big = held(257, 1, 17)  # cells 0..256: two heads; one shared cell; 5 warps: groups 0 and 1
    assert big - small == {cell_location(256, mem0)[:2], cell_location(GLOBAL_CELLS, mem0)[:2]} | \
        {tuple(cm.layout["heads"][f"reg{p}.l{lane}.g1"]) for p in "ABC" for lane in range(4)}
    others = {(L, h) for L, h in small if not names[L][h].startswith(("mem.", "reg"))}
    assert len(small) == 21 and held(0, 0, 0) == others


@needs_c
def test_a_batch_slot_holds_only_the_heads_its_launch_can_write_far_below_every_head():
    """A runner sized for the mixed program's launches holds 21 heads a slot (22 with shared
    memory) of the 472 every slot held before: the slot's bytes (BatchedLayers.slot_bytes)
    are far below those of every head (982,149 at 16 steps a read), and its results are the C
    step's."""
    prog, cm = program()
    todo = [launch(1, 1, 0), launch(1, 2, 1, kernel=2)]
    runner = BatchRunner(cm, 2, launches=todo[:1])
    every = runner.layers.slot_bytes([R.nh for R in runner.layers.layers])
    assert every > 472 * 2048 and sum(runner.layers.allot) == 21  # 2 KiB a head of 128 rows of rail bits
    assert runner.layers.slot_bytes() < every / 15
    host = Host(cm, neural_layers(cm, "cpu"))
    results = runner.run(todo, 200)  # the second needs a shared-memory head: the pools grow
    assert sum(runner.layers.allot) == 22 and runner.layers.slot_bytes() == runner.layers.slot_bytes(
        runner.layers.heads_held(host.written_heads(todo[1])))
    for lau, got in zip([launch(1, 1, 0), launch(1, 2, 1, kernel=2)], results):
        want = host.run(lau, 200)
        assert np.array_equal(got.memory, want.memory) and got.stats == want.stats


@needs_c
def test_a_write_into_a_head_the_slot_does_not_hold_stops_the_batch_naming_the_launch_and_leaves_block_0_at_zero():
    """The heads a slot holds are a claim about the launch (Host.written_heads); if it were
    wrong, the write would land in the shared all-+0 block 0 and later reads would differ
    from the C step.  Here the second launch's table leaves out the warp table's last head,
    which the block's start writes: the batch stops with NOT_HELD's error naming launch 2,
    and block 0 stays +0 (the last slot's last head of the layer: the last of the rows a
    step scatters there, so a nonzero row written there would stay)."""
    from qgcc.engines.neural_c import StepError
    from qgcc.engines.premises import NOT_HELD

    prog, cm = program()
    runner = BatchRunner(cm, 2)
    honest = runner.host.written_heads
    names = cm.layout["layers"][0]["heads"]
    where = (0, len(names) - 1)
    assert names[-1] == "warptable.2"

    def short(lau):
        held = honest(lau)
        if lau.params[-1] == 1:  # the second launch (n = 1)
            held = held.copy()
            held[where] = False
        return held

    runner.host.written_heads = short
    with pytest.raises(StepError, match=r"launch 2 of the batch: a state row was written in a head its slot does not "
                       r"hold \(a premise"):
        runner.run([launch(1, 1, 0), launch(1, 2, 1)], 100)
    # Stepped on past the flag (as no runner does): the writes, of nonzero rows too, never reach
    # block 0, which the other slot reads for every head it does not hold.
    batch, host = runner.layers, runner.host
    for slot, lau in enumerate([launch(1, 1, 0), launch(1, 2, 1)]):
        batch.load(slot, *host.initial(lau), short(lau))
    seen = np.zeros(2, np.int32)
    for _ in range(30):
        seen |= batch.run()[1]
        assert not any(S[0].any() for S, p in zip(batch.states, batch.pooled) if p)
    assert seen[0] == 0 and seen[1] & NOT_HELD and not batch.running[0]  # the first halted (11 steps), unflagged
