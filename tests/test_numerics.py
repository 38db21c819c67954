"""The network's numbers are exact by construction, so every engine computes the same bits.

The invariant (docs/architecture.md, "Numerics"): at every RMSNorm the residual is exactly
+-8 in every dimension, and every sum the layers form is an exact integer below 2^24.
From it follows that the compiled C step (docs/engines.md), which adds in another order
and skips exact zeros, reproduces transformers' hidden and recurrent states bit for bit.
"""

from __future__ import annotations

import numpy as np
import pytest

from qgcc.frontend import compile_source
from qgcc.engines.hf import HFEngine, HFLayers
from qgcc.engines.host import Host
from qgcc.engines.neural import neural_layers
from qgcc.engines.neural_c import CStepLayers, StepError, Unsupported, library
from qgcc.engines.neural_torch import NeuralLayers
from qgcc.link import numerics
from qgcc.link.layout import PHASES
from qgcc.link.linker import link
from qgcc.link.weights import READ_ADD, VALUE_LEVEL
from qgcc.ref.emulator import run as emulate
from qgcc.runtime.launch import make_launch

SMALL = "__global__ void k(int *a, int n) { int i = threadIdx.x; if (i < n) a[i] = a[i] * 3 + i; }"
# The float unit (FMUL, FADD, micro-stepped) and its shared multiplier array in the layers.
FLOATY = "__global__ void f(float *x, int n) { int i = threadIdx.x; if (i < n) x[i] = x[i] * 1.5f + 0.75f; }"
_CACHE: dict[str, tuple] = {}


def linked(src: str):
    if src not in _CACHE:
        prog = compile_source(src, "k.cu")
        _CACHE[src] = (prog, link(prog))
    return _CACHE[src]


def start(src: str, arrays: dict, scalars: dict):
    prog, cm = linked(src)
    launch = make_launch(prog, prog.kernels[0], (1, 1, 1), (4, 1, 1), scalars, arrays)
    host = Host(cm, NeuralLayers(cm.layers))
    h, init = host.initial(launch)
    return cm, host, h, init


def whole_launch(src: str, arrays: dict, scalars: dict) -> int:
    """The network steps of start()'s launch from start to halt (the emulator's step model,
    which the lockstep tests check against the network)."""
    prog, _ = linked(src)
    return emulate(make_launch(prog, prog.kernels[0], (1, 1, 1), (4, 1, 1), scalars, arrays)).network_steps


def halted(host: Host, h) -> bool:
    return host.get(h, "phase") == 1 << PHASES.index("halt") or host.get(h, "fault") != 0


def lockstep(a, b, host: Host, h, init, layers: int, every_step_states: bool = False, limit: int = 10 ** 6) -> int:
    """Step two implementations of the same layers from the same start; every hidden state must
    be the same bits, and every recurrent state (after each step, or at the end)."""

    def same_states(where: str) -> None:
        for L in range(layers):
            assert np.array_equal(a.recurrent_state(L).view(np.uint32), b.recurrent_state(L).view(np.uint32)), \
                f"recurrent state of layer {L} differs {where}"

    a.reset(init)
    b.reset(init)
    ha = hb = h
    steps = 0
    while not halted(host, ha) and steps < limit:
        ha, hb = a.step(ha), b.step(hb)
        steps += 1
        assert np.array_equal(ha.view(np.uint32), hb.view(np.uint32)), f"hidden state differs at step {steps}"
        if every_step_states:
            same_states(f"at step {steps}")
    same_states("at the end")
    return steps


@pytest.mark.parametrize("src,arrays,scalars", [
    # the integer kernel's every hidden state is also compared with transformers' modules below
    pytest.param(SMALL, {"a": np.array([5, -2, 7, 9], np.int32)}, {"n": 3}, marks=pytest.mark.slow),
    (FLOATY, {"x": np.array([0.5, -2.25, 3e-39, 7.0], np.float32)}, {"n": 4}),
])
def test_residual_is_exactly_plus_minus_8_after_every_sublayer_of_every_step(src, arrays, scalars):
    """Checked on the torch path, which runs the stock operations one by one."""
    cm, host, h, init = start(src, arrays, scalars)
    net = host.net
    net.reset(init)
    import torch

    x = torch.from_numpy(h)
    steps = 0
    while True:
        for i, (layer, state) in enumerate(zip(net.layers, net.states)):
            for part in ("mix", "mlp"):
                x = layer.mix(x, state) if part == "mix" else layer.mlp(x)
                off = (x.abs() != 8.0).nonzero().flatten().tolist()
                assert not off, f"step {steps}, layer {i} {part}: dims {off[:5]} = {x[off[:5]].tolist()}"
        steps += 1
        if halted(host, x.numpy()):
            break
    assert steps == whole_launch(src, arrays, scalars)


def test_every_read_adds_exactly_16():
    assert READ_ADD == 16.0
    scale = np.float32(1.0) / np.float32(128 ** 0.5)
    assert np.float32(np.float32(VALUE_LEVEL) * scale) == np.float32(16.0)


@pytest.mark.slow  # 9.5 GB of fp32 stock layers: beside the other xdist worker's caches it ran a 23 GB CI machine out of memory
@pytest.mark.skipif(library() is None, reason="no C compiler for the compiled step")
def test_compiled_step_equals_transformers_modules_in_every_hidden_and_recurrent_state():
    """The strongest check: every step's output and every layer's recurrent state, as bits."""
    arrays, scalars = {"a": np.array([5, -2, 7, 9], np.int32)}, {"n": 3}
    cm, host, h, init = start(SMALL, arrays, scalars)
    c, hf = CStepLayers(cm.layers, cm.fields["one"][0]), HFEngine("cpu").layers(cm)
    assert isinstance(hf, HFLayers)
    steps = lockstep(c, hf, host, h, init, cm.num_layers, every_step_states=True)
    assert steps == whole_launch(SMALL, arrays, scalars)


@pytest.mark.skipif(library() is None, reason="no C compiler for the compiled step")
@pytest.mark.parametrize("src,arrays,scalars", [
    (FLOATY, {"x": np.array([0.5, -2.25, 3e-39, 7.0], np.float32)}, {"n": 4}),
])
def test_compiled_step_equals_the_torch_path_on_a_float_kernel(src, arrays, scalars):
    cm, host, h, init = start(src, arrays, scalars)
    c = CStepLayers(cm.layers, cm.fields["one"][0])
    assert lockstep(c, host.net, host, h, init, cm.num_layers) == whole_launch(src, arrays, scalars)


@pytest.mark.skipif(library() is None, reason="no C compiler for the compiled step")
def test_compiled_step_refuses_a_residual_that_is_not_exact():
    cm, host, h, init = start(SMALL, {"a": np.zeros(4, np.int32)}, {"n": 3})
    c = CStepLayers(cm.layers, cm.fields["one"][0])
    c.reset(init)
    h = h.copy()
    h[cm.fields["gx"][0]] = 7.999999
    with pytest.raises(StepError, match="not exactly"):
        c.step(h)


def test_a_weight_property_the_compiled_step_needs_sends_it_to_the_torch_path():
    prog, cm = linked(SMALL)
    import copy

    broken = copy.deepcopy(cm)
    conv = broken.layers[5].tensors["linear_attn.conv1d.weight"]
    conv.set((0, 0, 0), 0.5)  # a nonzero earlier conv tap: the output depends on past steps
    with pytest.raises(Unsupported, match="conv taps"):
        CStepLayers(broken.layers, broken.fields["one"][0])
    assert isinstance(neural_layers(broken, "cpu"), NeuralLayers)


def test_link_checks_every_sum_stays_below_2_to_the_24():
    prog, cm = linked(SMALL)
    b = numerics.check(cm.layers)
    assert 0 < b.largest_sum < 2 ** 24 and b.largest_weight <= b.largest_sum
    assert cm.layout["numerics"]["largest_sum"] == b.largest_sum
    import copy

    broken = copy.deepcopy(cm.layers)
    broken[2].tensors["mlp.gate_proj.weight"].add((7, 0), 2.0 ** 24)
    with pytest.raises(numerics.NumericsError, match="2\\^24"):
        numerics.check(broken)



def test_every_decision_is_a_small_sum_and_a_wide_threshold_fails_the_link():
    """The noise margin rests on it (docs/architecture.md, "Every decision is a small sum"):
    no threshold step's weighted sum gets more than 63 from its threshold, so no gate unit's
    pre-activation reaches 2^16; a gate written as one wide threshold is refused at link time."""
    from qgcc.link.core import build_core
    from qgcc.link.netlist import Gate, Table
    from qgcc.link.weights import K

    prog, cm = linked(SMALL)
    worst = 0
    for node in build_core(prog).net.nodes:
        if isinstance(node, (Gate, Table)):
            for st in node.steps:
                hi = st.const + sum(w for _, w in st.terms if w > 0)
                lo = st.const + sum(w for _, w in st.terms if w < 0)
                worst = max(worst, hi - st.T, st.T - lo)
    assert 0 < worst <= 63
    b = numerics.check(cm.layers)
    assert b.largest_preactivation <= 4 * K * worst + 2 * K < numerics.PREACT_LIMIT
    import copy

    broken = list(cm.layers)
    broken[2] = copy.copy(cm.layers[2])
    broken[2].tensors = dict(cm.layers[2].tensors)
    gate = broken[2].tensors["mlp.gate_proj.weight"] = copy.deepcopy(cm.layers[2].tensors["mlp.gate_proj.weight"])
    # A 10-bit comparison as one threshold: the top bit's weight 512 in weighted-sum units.
    gate.add((7, 3), 2 * K * 512)
    with pytest.raises(numerics.NumericsError, match="pre-activation"):
        numerics.check(broken)


EVERY_FLAG = """
__global__ void k(int *a, unsigned *u, float *f, int n) {
    int i = threadIdx.x;
    __syncthreads();
    unsigned v = __ballot_sync(0xffffffff, a[i + 1] > 0) | __any_sync(0xffffffff, i > 1)
                 | __all_sync(0xffffffff, i < 9);
    atomicOr(&u[0], v ^ 5u);
    atomicXor(&u[1], v & 12u);
    atomicAdd(&a[0], (int)v);
    f[i] = f[i] * 2.5f + 1.0f;
}
"""


def test_no_decision_weights_an_unrestored_rom_output_by_2_or_more():
    """A ROM row is one MLP unit, without a pair's level restoration (docs/architecture.md,
    "Program ROM"), so its outputs carry several times a gate's level error under weight
    noise.  Readers that weight a field or flag by 2 or more (adders' sum bits, the logic
    operations, VOTE, the atomics, the barrier fault) read restored copies (Decoded.restored);
    bench/margin_static.py measured the ROM's level errors as what sank the ALU's sum bits."""
    from qgcc.link.core import build_core
    from qgcc.link.netlist import Gate, Table, TableOut

    net = build_core(compile_source(EVERY_FLAG, "k.cu")).net
    rom = {s for s, node in enumerate(net.nodes) if isinstance(node, Table) and node.single}
    assert rom
    heavy, light = [], 0
    for s, node in enumerate(net.nodes):
        if isinstance(node, (Gate, Table)):
            for st in node.steps:
                for x, w in st.terms:
                    src = net.nodes[x]
                    if isinstance(src, TableOut) and src.table in rom:
                        if abs(w) >= 2:
                            heavy.append((net.names.get(s), net.names.get(x), w))
                        else:
                            light += 1
    assert light > 0 and heavy == []



def test_results_are_read_at_the_rails_midpoint_so_a_perturbed_networks_stores_read_back():
    """A store erases a slot's old rails with the delta rule, exactly only when beta |k|^2 is
    exactly 1: under relative weight noise the erased rails keep a few ulps of either sign.
    The network's own reads never see them (the gated RMSNorm's level), so the host reads
    results as the network does, a rail set above V/2 (docs/protocol.md, section 5); read by
    its sign, bench/margin.py's noisy launches came back with old bits ORed into new ones."""
    from qgcc.link.noise import perturbed

    prog, cm = linked(SMALL)
    noisy = perturbed(cm, 1e-3, 2)  # a draw whose erasures leave residues in a's rows
    a = np.array([0x7FFFFFFF, -1, 0x55555555, 7], np.int32)  # old words with many set bits
    launch = make_launch(prog, prog.kernels[0], (1, 1, 1), (4, 1, 1), {"n": 4}, {"a": a.copy()})
    want = emulate(make_launch(prog, prog.kernels[0], (1, 1, 1), (4, 1, 1), {"n": 4}, {"a": a.copy()})).memory
    layers = NeuralLayers(noisy.layers)
    res = Host(noisy, layers).run(launch)
    assert np.array_equal(res.memory, want)
    # what the midpoint is for: erased rails that are not exactly 0, and not a whole level
    mem = {L: np.asarray(layers.recurrent_state(L)) for L in range(cm.num_layers)}
    level = cm.value_level
    residues = [np.abs(m[(m != 0) & (np.abs(m) < level / 2)]) for m in mem.values()]
    residues = np.concatenate(residues)
    assert residues.size > 0 and residues.max() < level / 100

SAMPLE_STEPS = 100  # BLKINIT and the first instructions, loads and stores included


@pytest.mark.skipif(library() is None, reason="no C compiler for the compiled step")
@pytest.mark.parametrize("name", ["collatz", "histogram", "matmul", "reduce", "scan", "vadd"])
def test_compiled_step_equals_the_stock_torch_path_on_every_sample(name):
    """Every hidden state of the first steps of each sample's short launch (tests/lockstep.py),
    and every recurrent state after them, as bits."""
    import lockstep as samples

    grid, block, scalars, arrays = samples.CASES[name]
    prog, cm = samples.linked(name)
    launch = make_launch(prog, prog.kernels[0], grid, block, scalars, {a: v.copy() for a, v in arrays.items()})
    host = Host(cm, NeuralLayers(cm.layers))
    h, init = host.initial(launch)
    c = CStepLayers(cm.layers, cm.fields["one"][0])
    assert lockstep(c, host.net, host, h, init, cm.num_layers, limit=SAMPLE_STEPS) == SAMPLE_STEPS


def test_without_a_c_compiler_the_engine_runs_the_torch_path(monkeypatch, tmp_path):
    from qgcc.engines import neural_c as cstep

    prog, cm = linked(SMALL)
    monkeypatch.setattr(cstep, "_lib", None)
    monkeypatch.setattr(cstep, "_lib_error", None)
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
    monkeypatch.setenv("QGCC_CACHE", str(tmp_path / "cache"))
    assert cstep.library() is None and "no-such-cc" in cstep.unavailable_reason()
    assert isinstance(neural_layers(cm, "cpu"), NeuralLayers)


def test_bf16_is_the_hf_engines_alone_and_other_engines_say_so():
    """--dtype bf16 needs transformers' modules; the C step and the torch path are float32 by
    design (docs/engines.md), so asking them for bf16 is a usage error naming the fix."""
    from qgcc import engines
    from qgcc.diagnostics import UsageError

    assert engines.get("hf").resolve_dtype("bf16") == ("bf16", None)
    with pytest.raises(UsageError, match="neural engine computes in fp32 only; use --engine hf"):
        engines.get("neural").resolve_dtype("bf16")
    dtype, note = engines.get("ref").resolve_dtype("bf16")
    assert dtype == "fp32" and "ignored" in note
    import qgcc

    prog = qgcc.compile(SMALL)
    with pytest.raises(UsageError, match="use --engine hf"):
        prog.launch(1, 4, a=np.zeros(4, np.int32), n=3, dtype="bf16")


@pytest.mark.slow
@pytest.mark.parametrize("src,arrays,scalars", [
    (SMALL, {"a": np.array([5, -2, 7, 9], np.int32)}, {"n": 3}),
    (FLOATY, {"x": np.array([0.5, -2.25, 3e-39, 7.0], np.float32)}, {"n": 4}),
], ids=["int", "float"])
def test_bf16_modules_compute_every_hidden_state_of_the_fp32_layers(src, arrays, scalars):
    """The numerics margin (docs/architecture.md, "Numerics"): with weights and activations in
    bfloat16, transformers' own layers still leave every dimension at exactly +-8 after every
    step, the very hidden states of the float32 layers, so every decoded decision, trace
    record and buffer is the same (bench/bf16.py runs every sample end to end)."""
    cm, host, h, init = start(src, arrays, scalars)
    bf = HFLayers(cm.layers, dtype="bf16")
    assert lockstep(host.net, bf, host, h, init, 0) == whole_launch(src, arrays, scalars)
