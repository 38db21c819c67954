"""The reference emulator's execution model, specified on hand-built instruction lists.

These tests pin the rules the compiled network must reproduce: min-PC
reconvergence, round-robin warp scheduling, barrier release and faults,
lane-ordered atomics, and memory bounds.
"""

import numpy as np
import pytest

from qgcc.isa import AtomOp, Instr, Op, SReg
from qgcc.spec import SPEC
from qgcc.program import Kernel, Param, Program
from qgcc.ref.emulator import run
from qgcc.runtime.launch import make_launch
from qgcc.trace import BarrierFault, MemoryFault, StepLimitFault


def program(code, params=(), shared=0):
    k = Kernel("k", 0, len(code), [Param(n, "int", pointer=p) for n, p in params], shared, 32)
    return Program(code=list(code), kernels=[k])


def launch(prog, block=4, grid=1, arrays=None, scalars=None):
    k = prog.kernels[0]
    return make_launch(prog, k, (grid, 1, 1), (block, 1, 1), scalars or {}, arrays or {})


def trace_of(prog, **kw):
    steps = []
    res = run(launch(prog, **kw), on_step=steps.append)
    return res, steps


I = Instr


def test_each_lane_writes_its_thread_index_through_a_pointer_parameter():
    prog = program([
        I(Op.S2R, rd=0, mod=SReg.TID_X),
        I(Op.LDC, rd=1, imm=0),
        I(Op.ADD, rd=2, rs1=1, rs2=0),
        I(Op.ST, rs1=2, rs2=0),
        I(Op.EXIT),
    ], params=[("out", True)])
    lz = launch(prog, block=8, arrays={"out": np.zeros(8, np.int32)})
    res = run(lz)
    assert list(lz.read_buffer(res.memory, "out")) == list(range(8))
    assert res.stats.stores == 8


def test_divergent_branch_runs_the_smaller_pc_first_and_reconverges_at_the_join():
    # if (tid & 1) r1 = 10 else r1 = 20; join: store r1
    prog = program([
        I(Op.S2R, rd=0, mod=SReg.TID_X),           # 0
        I(Op.AND, rd=2, rs1=0, imm=1, use_imm=True),  # 1
        I(Op.BRZ, rs1=2, imm=5),                  # 2
        I(Op.MOV, rd=1, imm=10, use_imm=True),    # 3  odd lanes
        I(Op.BRA, imm=6),                         # 4
        I(Op.MOV, rd=1, imm=20, use_imm=True),    # 5  even lanes
        I(Op.LDC, rd=3, imm=0),                   # 6  join
        I(Op.ADD, rd=3, rs1=3, rs2=0),            # 7
        I(Op.ST, rs1=3, rs2=1),                   # 8
        I(Op.EXIT),                               # 9
    ], params=[("out", True)])
    res, steps = trace_of(prog, arrays={"out": np.zeros(4, np.int32)})
    assert [(s.pc, s.active) for s in steps] == [
        (0, 0b1111), (1, 0b1111), (2, 0b1111),
        (3, 0b1010), (4, 0b1010),   # odd lanes fall through first (smaller PC)
        (5, 0b0101),                # even lanes
        (6, 0b1111), (7, 0b1111), (8, 0b1111), (9, 0b1111),
    ]
    assert steps[2].diverged and steps[6].reconverged
    assert res.stats.divergent_steps == 1
    out = np.array(res.memory[:4], dtype=np.uint32)
    assert list(out) == [20, 10, 20, 10]


def test_warps_are_scheduled_round_robin():
    prog = program([I(Op.NOP), I(Op.NOP), I(Op.EXIT)])
    _, steps = trace_of(prog, block=12)
    assert [(s.warp, s.pc) for s in steps] == [
        (0, 0), (1, 0), (2, 0), (0, 1), (1, 1), (2, 1), (0, 2), (1, 2), (2, 2)]


def test_partial_warp_has_only_its_live_lanes_active():
    prog = program([I(Op.EXIT)])
    _, steps = trace_of(prog, block=6)
    assert [s.active for s in steps] == [0b1111, 0b0011]


def test_barrier_holds_early_warps_until_the_whole_block_arrives():
    # warp 0 reaches BAR at once; warp 1 first runs two NOPs (its lanes branch over nothing)
    prog = program([
        I(Op.S2R, rd=0, mod=SReg.WARPID),  # 0
        I(Op.BRZ, rs1=0, imm=4),          # 1
        I(Op.NOP),                        # 2
        I(Op.NOP),                        # 3
        I(Op.BAR),                        # 4
        I(Op.EXIT),                       # 5
    ])
    _, steps = trace_of(prog, block=8)
    seq = [(s.warp, s.pc, s.barrier) for s in steps]
    assert seq == [
        (0, 0, None), (1, 0, None), (0, 1, None), (1, 1, None),
        (0, 4, "wait"), (1, 2, None), (1, 3, None), (1, 4, "release"),
        (0, 5, None), (1, 5, None)]


def test_barrier_ignores_exited_threads():
    # warp 0 waits at the barrier; warp 1 exits instead, and its exit releases warp 0
    prog = program([
        I(Op.S2R, rd=0, mod=SReg.WARPID), I(Op.BRZ, rs1=0, imm=3), I(Op.EXIT), I(Op.BAR), I(Op.EXIT)])
    _, steps = trace_of(prog, block=8)
    assert [(s.warp, s.pc, s.barrier) for s in steps][-3:] == [
        (0, 3, "wait"), (1, 2, "release"), (0, 4, None)]


def test_barrier_in_divergent_code_is_a_fault_naming_the_lane_left_behind():
    prog = program([
        I(Op.S2R, rd=0, mod=SReg.TID_X), I(Op.BRZ, rs1=0, imm=3), I(Op.BAR), I(Op.EXIT)])
    with pytest.raises(BarrierFault) as e:
        run(launch(prog))
    assert "divergent" in str(e.value) and e.value.warp == 0 and e.value.pc == 2 and e.value.lane == 0


def test_atomics_apply_lane_by_lane_in_lane_order_and_return_old_values():
    prog = program([
        I(Op.LDC, rd=0, imm=0),
        I(Op.MOV, rd=1, imm=1, use_imm=True),
        I(Op.ATOM, rd=2, rs1=0, rs2=1, mod=AtomOp.ADD),
        I(Op.ADD, rd=3, rs1=0, imm=1, use_imm=True),
        I(Op.S2R, rd=4, mod=SReg.TID_X),
        I(Op.ADD, rd=3, rs1=3, rs2=4),
        I(Op.ST, rs1=3, rs2=2),
        I(Op.EXIT)], params=[("buf", True)])
    lz = launch(prog, arrays={"buf": np.zeros(5, np.int32)})
    res = run(lz)
    assert list(lz.read_buffer(res.memory, "buf")) == [4, 0, 1, 2, 3]


def test_compare_and_swap_takes_the_new_value_from_rd():
    prog = program([
        I(Op.LDC, rd=0, imm=0), I(Op.MOV, rd=1, imm=7, use_imm=True), I(Op.MOV, rd=2, imm=99, use_imm=True),
        I(Op.ATOM, rd=2, rs1=0, rs2=1, mod=AtomOp.CAS), I(Op.ST, rs1=0, imm=1, rs2=2), I(Op.EXIT)],
        params=[("buf", True)])
    lz = launch(prog, block=1, arrays={"buf": np.array([7, 0], np.int32)})
    res = run(lz)
    assert list(lz.read_buffer(res.memory, "buf")) == [99, 7]


def test_out_of_bounds_store_is_a_fault_with_its_location():
    prog = program([I(Op.LDC, rd=0, imm=0), I(Op.S2R, rd=1, mod=SReg.TID_X), I(Op.ADD, rd=0, rs1=0, rs2=1),
                    I(Op.ST, rs1=0, imm=2, rs2=1, line=7), I(Op.EXIT)], params=[("buf", True)])
    with pytest.raises(MemoryFault) as e:
        run(launch(prog, arrays={"buf": np.zeros(4, np.int32)}))
    f = e.value
    assert (f.block, f.warp, f.lane, f.pc, f.line) == (0, 0, 2, 3, 7)
    assert "out-of-bounds store" in str(f)


def test_shared_memory_is_bounded_by_the_kernels_declaration():
    prog = program([I(Op.MOV, rd=0, imm=SPEC.shared_base + 4, use_imm=True), I(Op.LD, rd=1, rs1=0),
                    I(Op.EXIT)], shared=4)
    with pytest.raises(MemoryFault):
        run(launch(prog))


def test_runaway_loop_hits_the_step_limit():
    prog = program([I(Op.BRA, imm=0)])
    with pytest.raises(StepLimitFault) as e:
        run(launch(prog), max_steps=50)
    assert e.value.step == 50


def test_registers_and_shared_memory_persist_from_one_block_to_the_next():
    # each block stores r5 then increments it: block b sees b
    prog = program([
        I(Op.LDC, rd=0, imm=0), I(Op.S2R, rd=1, mod=SReg.CTAID_X), I(Op.ADD, rd=0, rs1=0, rs2=1),
        I(Op.ST, rs1=0, rs2=5), I(Op.ADD, rd=5, rs1=5, imm=1, use_imm=True), I(Op.EXIT)],
        params=[("buf", True)])
    lz = launch(prog, block=1, grid=3, arrays={"buf": np.zeros(3, np.int32)})
    res = run(lz)
    assert list(lz.read_buffer(res.memory, "buf")) == [0, 1, 2]


def test_special_registers_describe_a_3d_launch():
    prog = program([
        I(Op.S2R, rd=0, mod=SReg.TID_Y), I(Op.S2R, rd=1, mod=SReg.NTID_Z), I(Op.S2R, rd=2, mod=SReg.CTAID_Y),
        I(Op.S2R, rd=3, mod=SReg.NCTAID_X), I(Op.EXIT)])
    k = prog.kernels[0]
    steps = []
    run(make_launch(prog, k, (2, 3, 1), (2, 2, 2), {}, {}), on_step=steps.append)
    first = [s for s in steps if s.block == 3 and s.warp == 1]
    vals = {s.pc: [w.value for w in s.writes] for s in first}
    assert vals[0] == [0, 0, 1, 1] and vals[1] == [2] * 4 and vals[2] == [1] * 4 and vals[3] == [2] * 4
