"""Program size: SPEC.max_instrs instructions run in the network, one more is a named error.

The ROM holds one MLP unit per instruction; a program longer than one MLP's share
(fetch.ROWS_PER_MLP) spreads it over as many MLPs as it needs, one chunk each, and moves
the rest of the machine one layer down per chunk past the first
(core.shift_after_warp_table); a program longer than 2**SPEC.short_pc_bits instructions
gets a wider PC (layout.pc_bits).  These tests run generated programs whose branches,
calls and returns cross the whole PC range on the emulator and the network, and compare
both with a plain per-thread model of the program text (tests/longprog.py).
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from longprog import generate, model
from lockstep import host
from qgcc.asm.assembler import assemble
from qgcc.diagnostics import CompileError
from qgcc.link.blocks.fetch import ROWS_PER_MLP, fetch_layers
from qgcc.link.layout import L_MEM0, PCB_MAX, pc_bits
from qgcc.link.linker import MAX_LAYERS, link
from qgcc.ref.emulator import run as ref_run
from qgcc.runtime.launch import make_launch
from qgcc.spec import SPEC

THREADS = 8


def run_both(n: int, threads: int = THREADS, skip: bool = False):
    """(network, emulator trace length): a generated n-instruction program on both engines
    (`skip`: its straight code mostly branched over, longprog.generate)."""
    text = generate(n, threads, skip)
    prog = assemble(text, "long.qsass")
    assert len(prog.code) == n
    cm = link(prog)
    k = prog.kernels[0]
    mk = lambda: make_launch(prog, k, (1, 1, 1), (threads, 1, 1), {},  # noqa: E731
                             {"out": np.zeros(2 * threads, np.int32)})
    lr, ln = mk(), mk()
    assert lr.params == [0]  # the model places `out` at cell 0
    ref_trace, net_trace = [], []
    r = ref_run(lr, max_steps=10 * n, on_step=ref_trace.append)
    res = host(cm).run(ln, max_steps=10 * n, on_step=net_trace.append)
    assert [a.key() for a in ref_trace] == [b.key() for b in net_trace]
    assert np.array_equal(r.memory, res.memory)
    want = model(text, threads)
    assert ln.read_buffer(res.memory, "out").astype(np.uint32).tolist() == want
    return cm, len(ref_trace)


def test_pc_width_and_rom_chunks_follow_the_spec():
    """Programs of up to 2**short_pc_bits instructions keep the 13-bit PC every program had before
    the ROM grew (they link as they did); a longer one's PC addresses each of its instructions;
    the longest program's ROM spans the five MLPs that the largest machine's layers allow."""
    assert pc_bits(1) == pc_bits(1 << SPEC.short_pc_bits) == SPEC.short_pc_bits == 13
    assert pc_bits((1 << SPEC.short_pc_bits) + 1) == SPEC.short_pc_bits + 1
    assert 1 << (PCB_MAX - 1) < SPEC.max_instrs <= 1 << PCB_MAX
    assert fetch_layers(ROWS_PER_MLP) == 1 and fetch_layers(ROWS_PER_MLP + 1) == 2
    assert fetch_layers(SPEC.max_instrs) == 5 and fetch_layers(SPEC.max_instrs + 1) == 6


def test_a_program_over_five_rom_chunks_with_a_wider_pc_runs_bit_exact(monkeypatch):
    """Each ROM chunk past the first decodes a layer later and passes the earlier chunks' outputs
    through: calls, returns and branches between all five chunks, a PC one bit wider than the
    short programs', and the memory four layers further down still work.  (Smaller chunks and a
    narrower short PC than the real ones, so that CI links and runs a program of 1,700
    instructions, most of them branched over; the slow tests below run the real sizes.)"""
    import dataclasses

    import qgcc.link.blocks.fetch as fetch
    import qgcc.link.layout as layout
    monkeypatch.setattr(fetch, "ROWS_PER_MLP", 400)
    monkeypatch.setattr(layout, "SPEC", dataclasses.replace(SPEC, short_pc_bits=10))
    cm, _ = run_both(1700, threads=4, skip=True)
    assert cm.layout["memory_first_layer"] == L_MEM0 + 4
    assert [cm.layout["layers"][L]["heads"] for L in range(1, 5)] == [[]] * 4  # the chunks' layers hold no memory
    assert len(cm.fields["wt_min"]) == len(cm.fields["tr_pc"]) == 11


@pytest.mark.slow
def test_a_program_past_one_rom_chunk_runs_bit_exact_with_the_machine_moved_one_layer(monkeypatch):
    """Past ROWS_PER_MLP instructions the ROM's second chunk decodes a layer later: calls, returns
    and branches between the chunks, and the memory one layer further down, still work.  (Smaller
    chunks than the real ones: a program of 1,100 instructions, every one executed; slow since
    the five-chunk test above covers the chunks' chain in CI.)"""
    import qgcc.link.blocks.fetch as fetch
    monkeypatch.setattr(fetch, "ROWS_PER_MLP", 640)
    cm, _ = run_both(1100, threads=4)
    assert cm.layout["memory_first_layer"] == L_MEM0 + 1
    assert cm.layout["layers"][1]["heads"] == []  # the second ROM chunk's layer has no memory


@pytest.mark.slow
def test_a_program_one_past_the_first_rom_chunk_runs_bit_exact():
    cm, _ = run_both(ROWS_PER_MLP + 100)
    assert cm.layout["memory_first_layer"] == L_MEM0 + 1


def test_one_instruction_past_the_limit_is_a_named_error():
    text = generate(SPEC.max_instrs + 1, THREADS, skip=True)
    with pytest.raises(CompileError) as e:
        assemble(text, "long.qsass")
    msg = str(e.value)
    assert msg.startswith("long.qsass:") and f"at most {SPEC.max_instrs}" in msg
    assert "put some kernels in a file of their own" in msg


@pytest.mark.slow
def test_a_program_of_max_instrs_runs_bit_exact():
    """The largest program the spec allows (its five ROM chunks full, a 15-bit PC; its straight
    code mostly branched over, so that it runs about 1,000 steps), with its time printed."""
    t0 = time.perf_counter()
    cm, steps = run_both(SPEC.max_instrs, skip=True)
    assert cm.layout["memory_first_layer"] == L_MEM0 + 4 and len(cm.fields["wt_min"]) == PCB_MAX == 15
    print(f"{SPEC.max_instrs} instructions: {cm.num_layers} layers, {steps} steps, "
          f"{time.perf_counter() - t0:.1f} s (link, emulator and network)")


@pytest.mark.slow
def test_a_long_program_written_by_qgcc_runs_through_qgrun_in_the_network(qgcc, qgrun, tmp_path, monkeypatch):
    """The path users take: `qgcc long.qsass -o long.qg` links a program of three ROM chunks and a
    14-bit PC, and `qgrun long.qg --engine neural` finds the moved memory from the file's metadata
    and writes the plain model's output."""
    monkeypatch.chdir(tmp_path)
    text = generate(3 * ROWS_PER_MLP, THREADS, skip=True)
    (tmp_path / "long.qsass").write_text(text)
    r = qgcc("long.qsass", "-o", "long.qg")
    assert r.exit_code == 0, r.stderr
    r = qgrun("long.qg", "--grid", "1", "--block", THREADS, "--arg", f"out=zeros:{2 * THREADS}",
              "--out", "out=o.npy", "--engine", "neural", "--trace", "none")
    assert r.exit_code == 0, r.stderr
    assert np.load(tmp_path / "o.npy").astype(np.uint32).tolist() == model(text, THREADS)


@pytest.mark.slow
def test_a_straight_program_of_8192_instructions_runs_bit_exact():
    """Two ROM chunks full and every one of their instructions executed (the short PC's largest
    program: about 8,500 steps)."""
    cm, steps = run_both(1 << SPEC.short_pc_bits)
    assert cm.layout["memory_first_layer"] == L_MEM0 + 1 and len(cm.fields["wt_min"]) == SPEC.short_pc_bits
    assert steps >= 1 << SPEC.short_pc_bits


@pytest.mark.slow
def test_the_longest_program_with_every_optional_unit_links_within_the_layers():
    """SPEC.max_instrs is what the layers allow: the largest machine (float FMA, lane crossing,
    atomics; 41 layers at one ROM chunk) with a ROM of max_instrs rows still fits in MAX_LAYERS."""
    import dataclasses

    from qgcc.frontend import compile_source
    from qgcc.isa import Instr, Op

    prog = compile_source(EVERY_UNIT, "every.cu")
    pad = [Instr(Op.ADD, rd=2, rs1=2, imm=i, use_imm=True) for i in range(SPEC.max_instrs - len(prog.code))]
    one = link(prog)
    full = link(dataclasses.replace(prog, code=prog.code + pad))
    assert full.num_layers == one.num_layers + 4 <= MAX_LAYERS


EVERY_UNIT = r"""
__global__ void k(float *a, int *c, unsigned *u) {
    float x = a[threadIdx.x];
    float y = fmaf(x, x, 1.5f) / (x + 2.0f);
    y = y + __shfl_down_sync(0xffffffff, y, 1);
    int v = __any_sync(0xffffffff, y > 1.0f);
    atomicAdd(&c[0], v);
    atomicCAS(&c[1], 0, 5);
    u[threadIdx.x] = u[threadIdx.x] * 7u + (unsigned)(y * 3.0f);
    a[threadIdx.x] = sqrtf(y) + (float)(c[2] % 7) + __int_as_float(c[3] << 2);
}
"""


@pytest.mark.slow
def test_a_two_chunk_network_is_exact_in_every_sublayer_and_equals_transformers_modules(monkeypatch):
    """The one-unit ROM rows and the moved layers keep the numerics invariant: every residual dim
    exactly +-8 after every sublayer (torch path), and the compiled step equal, bit for bit, to
    transformers' modules, over the first 50 steps (the call into the second chunk at pc ~12, the
    low subroutine, and the JRs to a high and back to a low address)."""
    import torch

    import qgcc.link.blocks.fetch as fetch
    from qgcc.engines.hf import HFEngine
    from qgcc.engines.host import Host
    from qgcc.engines.neural_c import CStepLayers
    from qgcc.engines.neural_torch import NeuralLayers
    from test_numerics import lockstep

    monkeypatch.setattr(fetch, "ROWS_PER_MLP", 640)
    prog = assemble(generate(1100, 4), "long.qsass")
    cm = link(prog)
    launch = make_launch(prog, prog.kernels[0], (1, 1, 1), (4, 1, 1), {}, {"out": np.zeros(8, np.int32)})
    hst = Host(cm, NeuralLayers(cm.layers))
    h, init = hst.initial(launch)
    net = hst.net
    net.reset(init)
    x = torch.from_numpy(h)
    pcs = set()
    for step in range(50):
        for i, (layer, state) in enumerate(zip(net.layers, net.states)):
            for part in ("mix", "mlp"):
                x = layer.mix(x, state) if part == "mix" else layer.mlp(x)
                off = (x.abs() != 8.0).nonzero().flatten().tolist()
                assert not off, f"step {step}, layer {i} {part}: dims {off[:5]}"
        pcs.add(hst.get(x.numpy(), "tr_pc"))
    assert max(pcs) >= 640 and min(pcs) < 640
    c, hf = CStepLayers(cm.layers, cm.fields["one"][0]), HFEngine("cpu").layers(cm)
    assert lockstep(c, hf, hst, h, init, cm.num_layers, every_step_states=True, limit=50) == 50


LONG_KERNEL = """
#define R4(x) x x x x
#define R16(x) R4(R4(x))
#define STEP w = (w * 0x9E3779B97F4A7C15ull) ^ (w >> 29);
__global__ void k(unsigned long long *a) {
    unsigned long long w = a[threadIdx.x];
    R16(R16(R4(STEP)))
    a[threadIdx.x] = w;
}
"""


def test_a_kernel_too_long_for_any_colouring_is_refused_before_registers_are_coloured(monkeypatch):
    """Colouring (and then spilling) a huge kernel takes minutes: one that cannot fit even if every
    move went away is named at once, with the lower bound of its length."""
    import qgcc.frontend.regalloc as regalloc
    from qgcc.frontend import compile_source

    def no_colouring(code):
        raise AssertionError("a kernel that cannot fit was coloured")

    monkeypatch.setattr(regalloc, "colour", no_colouring)
    with pytest.raises(CompileError) as e:
        compile_source(LONG_KERNEL, "long.cu")
    msg = e.value.render()
    assert "long.cu:5:17" in msg and "kernel 'k' needs at least 28684 instructions" in msg
    assert f"holds at most {SPEC.max_instrs}" in msg
