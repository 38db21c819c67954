"""Structure of the code the front end generates (no execution).

* the Program is well formed (kernels tile the code, params, lines);
* reconvergence layout: the only backward branches are loop back-edges, every
  other branch goes forward, loops nest;
* no instruction reads a register that is not written on every path to it;
* register allocation stays within the machine and reports its limit;
* __shared__ arrays are laid out from SPEC.shared_base, row-major;
* loads/stores of char, unsigned char and bool, atomics, special registers
  and parameters use the documented instruction sequences.
"""

from __future__ import annotations

import re

import numpy as np

import pytest

from qgcc.asm.disassembler import check_program
from qgcc.isa import AtomOp, Op, SReg
from qgcc.spec import SPEC
from qgcc.frontend import compile_source

BRANCHES = (Op.BRA, Op.BRZ, Op.BRNZ)


def compile_ok(src: str):
    p = compile_source(src, "t.cu")
    assert check_program(p) is None
    for k in p.kernels:
        assert reads_before_writes(p, k) == []
    return p


def kcode(p, name=None):
    k = p.kernel(name)
    return [(pc, p.code[pc]) for pc in range(k.entry, k.end)]


def succ(p, k, pc):
    ins = p.code[pc]
    if ins.op in (Op.EXIT, Op.JR):
        return []  # a routine's JR returns to its caller: see is_call
    if ins.op is Op.BRA:
        return [ins.imm]
    nxt = [pc + 1] if pc + 1 < k.end else []
    if ins.op in (Op.BRZ, Op.BRNZ):
        nxt.append(ins.imm)
    return nxt


def is_call(p, pc) -> bool:
    """`MOV link, #ret; BRA routine` with ret the next instruction: a soft-float routine call."""
    ins, prev = p.code[pc], p.code[pc - 1] if pc > 0 else None
    return ins.op is Op.BRA and prev is not None and prev.op is Op.MOV and prev.use_imm and prev.imm == pc + 1


WRITERS = (Op.MOV, Op.ADD, Op.SUB, Op.MUL, Op.AND, Op.OR, Op.XOR, Op.SHL, Op.SHR,
           Op.SRA, Op.SLT, Op.SLTU, Op.SEQ, Op.SNE, Op.S2R, Op.LDC, Op.LD, Op.ATOM)


def _flow(p, k, start, init, summary, into_calls=True):
    """Must-written registers at every reachable pc from `start` (calls use `summary`)."""
    allr = (1 << SPEC.num_regs) - 1
    written = {pc: allr for pc in range(k.entry, k.end)}
    written[start] = init
    work, reach = [start], {start}
    while work:
        pc = work.pop()
        ins = p.code[pc]
        out = written[pc] | ((1 << ins.rd) if ins.op in WRITERS else 0)
        edges = [(s, out) for s in succ(p, k, pc)]
        if is_call(p, pc):  # into the routine, and back at the return point with its writes
            edges = ([(ins.imm, out)] if into_calls else []) + [(pc + 1, out | summary(ins.imm))]
        for s, st in edges:
            new = written[s] & st if s in reach else st
            if s not in reach or new != written[s]:
                written[s] = new
                reach.add(s)
                work.append(s)
    return written, reach


def reads_before_writes(p, k):
    """Instructions reading a register that some path from the entry has not written.

    A routine call continues at its return point with the registers the routine
    writes on every path (its summary); the routine body is checked with what
    every call site has written."""
    memo: dict[int, int] = {}

    def summary(entry: int) -> int:
        if entry not in memo:
            w, reach = _flow(p, k, entry, 0, summary, into_calls=False)
            jrs = [pc for pc in reach if p.code[pc].op is Op.JR]
            allr = (1 << SPEC.num_regs) - 1
            memo[entry] = allr
            for pc in jrs:
                memo[entry] &= w[pc]
        return memo[entry]

    written, reach = _flow(p, k, k.entry, 0, summary)
    bad = []
    for pc in sorted(reach):
        for r in p.code[pc].reads():
            if not (written[pc] >> r) & 1:
                bad.append((pc, r))
    return bad


def backward_branches(p, name=None):
    return [(pc, ins) for pc, ins in kcode(p, name) if ins.op in BRANCHES and ins.imm <= pc]


# ------------------------------------------------------------------ program shape


def test_program_records_source_kernels_params_and_lines():
    src = ("__global__ void first(int *out, const unsigned char *in, bool flag, char c, unsigned n) {\n"
           "  int i = threadIdx.x;\n"
           "  if (flag) out[i] = in[i] + c + n;\n"
           "}\n"
           "__global__ void second(unsigned *x) {\n"
           "  x[threadIdx.x] = 7;\n"
           "}\n")
    p = compile_ok(src)
    assert p.source_name == "t.cu"
    assert p.source_lines == src.split("\n")
    k1, k2 = p.kernels
    assert (k1.name, k1.entry, k2.name, k2.entry, k2.end) == ("first", 0, "second", k1.end, len(p.code))
    assert [(q.name, q.ctype, q.pointer, q.const) for q in k1.params] == [
        ("out", "int", True, False), ("in", "uchar", True, True), ("flag", "bool", False, False),
        ("c", "char", False, False), ("n", "unsigned", False, False)]
    assert [(q.name, q.ctype, q.pointer) for q in k2.params] == [("x", "unsigned", True)]
    for k, (lo, hi) in ((k1, (1, 4)), (k2, (5, 7))):
        for pc in range(k.entry, k.end):
            assert lo <= p.code[pc].line <= hi, (pc, p.code[pc])
        assert p.code[k.end - 1].op is Op.EXIT and p.code[k.end - 1].line == hi
        # branches stay inside their kernel (targets are absolute addresses)
        for pc in range(k.entry, k.end):
            if p.code[pc].op in BRANCHES:
                assert k.entry <= p.code[pc].imm < k.end


def test_parameters_are_read_with_ldc_of_their_position():
    p = compile_ok("__global__ void k(int *a, int b, int c) { a[0] = c - b; }")
    ldc = {ins.imm for _, ins in kcode(p) if ins.op is Op.LDC}
    assert ldc == {0, 1, 2}
    unused = compile_ok("__global__ void k(int *a, int unused) { a[0] = 1; }")
    assert {ins.imm for _, ins in kcode(unused) if ins.op is Op.LDC} == {0}


def test_every_instruction_carries_its_source_line():
    src = ("__device__ int twice(int v) {\n"
           "  return v * 3;\n"
           "}\n"
           "__global__ void k(int *a) {\n"
           "  int t = threadIdx.x;\n"
           "  a[t] = twice(t);\n"
           "}\n")
    p = compile_ok(src)
    lines = [ins.line for _, ins in kcode(p)]
    assert all(isinstance(ln, int) for ln in lines)
    mul = [ins for _, ins in kcode(p) if ins.op is Op.MUL]
    assert mul and all(ins.line == 2 for ins in mul)  # inlined body keeps its own lines
    st = [ins for _, ins in kcode(p) if ins.op is Op.ST]
    assert [ins.line for ins in st] == [6]
    assert any(ins.op is Op.S2R and ins.line == 5 for _, ins in kcode(p))


# ------------------------------------------------------------------ reconvergence layout


def test_code_without_loops_or_division_branches_only_forward():
    src = ("__device__ int clamp(int v, int lo, int hi) {\n"
           "  if (v < lo) return lo;\n"
           "  if (v > hi) return hi;\n"
           "  return v;\n"
           "}\n"
           "__global__ void k(int *a, int n) {\n"
           "  int i = threadIdx.x;\n"
           "  if (i >= n) return;\n"
           "  int v = a[i];\n"
           "  if (v > 0 && v < 100 || v == -5) v = clamp(v, 3, 50); else v = v ? -v : 9;\n"
           "  a[i] = (v & 1) ? v >> 1 : v << 1;\n"
           "}\n")
    p = compile_ok(src)
    assert backward_branches(p) == []
    assert any(ins.op is Op.EXIT for _, ins in kcode(p)[:-1])  # early return is an EXIT


def test_if_else_layout_is_brz_to_else_then_bra_to_join():
    p = compile_ok("__global__ void k(int *a) {\n"
                   "  int t = threadIdx.x;\n"
                   "  if (t) a[0] = 1; else a[1] = 2;\n"
                   "  a[2] = 3;\n"
                   "}\n")
    code = kcode(p)
    (brz_pc, brz), = [(pc, i) for pc, i in code if i.op is Op.BRZ]
    (bra_pc, bra), = [(pc, i) for pc, i in code if i.op is Op.BRA]
    assert brz_pc < bra_pc
    assert brz.imm == bra_pc + 1  # the else branch starts right after the then branch's BRA
    assert bra.imm > bra_pc  # the join is after the else branch
    stores = [pc for pc, i in code if i.op is Op.ST]
    assert stores[0] < bra_pc < stores[1] < bra.imm <= stores[2]


def test_each_loop_has_exactly_one_back_edge_on_its_own_line():
    src = ("__global__ void k(int *a, int n) {\n"
           "  int s = 0;\n"
           "  for (int i = 0; i < n; i++) {\n"       # 3
           "    if (a[i] < 0) continue;\n"
           "    int j = 0;\n"
           "    while (j < a[i]) {\n"                # 6
           "      if (j == 7) break;\n"
           "      j++;\n"
           "    }\n"
           "    s += j;\n"
           "  }\n"
           "  do {\n"
           "    s--;\n"
           "  } while (s > 100);\n"                  # 14
           "  a[0] = s;\n"
           "}\n")
    p = compile_ok(src)
    back = backward_branches(p)
    assert sorted(ins.line for _, ins in back) == [3, 6, 14]
    # loops nest properly: back-edge intervals [target, pc] are nested or disjoint
    spans = [(ins.imm, pc) for pc, ins in back]
    for a0, a1 in spans:
        for b0, b1 in spans:
            assert a1 < b0 or b1 < a0 or (a0 <= b0 and b1 <= a1) or (b0 <= a0 and a1 <= b1)
    # break/continue/exit tests branch forward
    for pc, ins in kcode(p):
        if ins.op in BRANCHES and (pc, ins) not in back:
            assert ins.imm > pc


def test_general_division_is_one_uniform_counted_loop():
    p = compile_ok("__global__ void k(int *a) {\n  a[0] = a[1] / a[2];\n}\n")
    back = backward_branches(p)
    assert len(back) == 1
    pc, ins = back[0]
    assert ins.op is Op.BRNZ and ins.line == 2


def test_division_by_constant_powers_of_two_needs_no_loop():
    p = compile_ok("__global__ void k(unsigned *u, int *s) {\n"
                   "  u[0] = u[0] / 8 + u[1] % 16;\n"
                   "  s[0] = s[0] / 4 + s[1] % 2 + s[2] / -1 + s[3] / 1;\n"
                   "}\n")
    assert backward_branches(p) == []
    ops = [i.op for _, i in kcode(p)]
    assert Op.SHR in ops and Op.AND in ops and Op.SRA in ops


def test_short_circuit_and_conditional_expressions_branch_forward():
    p = compile_ok("__global__ void k(int *a) {\n"
                   "  int x = a[0], y = a[1];\n"
                   "  a[2] = x && y;\n"
                   "  a[3] = x || (y = 4);\n"
                   "  a[4] = x ? y : -y;\n"
                   "  a[5] = y;\n"
                   "}\n")
    assert backward_branches(p) == []
    assert sum(i.op in (Op.BRZ, Op.BRNZ) for _, i in kcode(p)) >= 3


# ------------------------------------------------------------------ registers


def test_registers_are_never_read_before_written_even_for_uninitialised_locals():
    p = compile_ok("__global__ void k(int *a) {\n"
                   "  int x;\n"
                   "  unsigned u;\n"
                   "  if (threadIdx.x) { x = 5; u = 3; }\n"
                   "  a[threadIdx.x] = x + u;\n"
                   "}\n")
    assert reads_before_writes(p, p.kernels[0]) == []


def test_register_count_is_recorded_and_within_the_machine():
    p = compile_ok("__global__ void k(int *a) { a[threadIdx.x] = threadIdx.x * 2; }")
    k = p.kernels[0]
    used = set()
    for _, ins in kcode(p):
        used.update(ins.reads())
        if ins.op not in (Op.ST, Op.BRA, Op.BRZ, Op.BRNZ, Op.BAR, Op.EXIT, Op.NOP):
            used.add(ins.rd)
    assert k.regs == max(used) + 1 <= SPEC.num_regs
    assert k.regs <= 4


def test_thirty_live_values_fit_and_forty_spill_to_the_local_frame():
    def src(n):
        body = "".join(f"  int v{i} = a[{i}] ^ a[{i + 1}];\n" for i in range(n))
        total = " + ".join(f"v{i} * {i + 2}" for i in reversed(range(n)))
        return f"__global__ void heavy(int *a) {{\n{body}  a[0] = {total};\n}}\n"
    p = compile_ok(src(28))
    assert p.kernels[0].regs <= 32 and p.kernels[0].local_words == 0
    p = compile_ok(src(40))
    assert p.kernels[0].regs <= 32 and p.kernels[0].local_words > 0  # spill slots (frontend/spill.py)
    from frontcheck import emulate_src
    a = (np.arange(41, dtype=np.int64) * 7919 % 1000 - 500).astype(np.int32)
    got = emulate_src(src(40), "heavy", 1, 1, [("a", a)])["a"]
    want = sum(int(a[i] ^ a[i + 1]) * (i + 2) for i in range(40))
    assert int(got[0]) == (want + 2**31) % 2**32 - 2**31


# ------------------------------------------------------------------ memory


def test_shared_arrays_are_laid_out_row_major_from_the_shared_base():
    p = compile_ok("__global__ void k(int *out) {\n"
                   "  __shared__ int s1[4];\n"
                   "  __shared__ unsigned s2[2][3];\n"
                   "  __shared__ int total;\n"
                   "  s1[3] = 1;\n"
                   "  s2[1][2] = 2;\n"
                   "  total = 3;\n"
                   "}\n")
    k = p.kernels[0]
    assert k.shared_words == 4 + 6 + 1
    base = SPEC.shared_base
    addrs = {ins.imm for _, ins in kcode(p) if ins.op is Op.MOV and ins.use_imm}
    assert {base + 3, base + 4 + 1 * 3 + 2, base + 10} <= addrs


def test_shared_array_indexed_by_a_variable_uses_the_base_as_offset():
    p = compile_ok("__global__ void k(int *out) {\n"
                   "  __shared__ int pad[5];\n"
                   "  __shared__ int s[8][4];\n"
                   "  s[threadIdx.y][threadIdx.x] = 1;\n"
                   "  out[0] = pad[threadIdx.x + 1];\n"
                   "}\n")
    code = kcode(p)
    st = [i for _, i in code if i.op is Op.ST]
    ld = [i for _, i in code if i.op is Op.LD]
    assert [i.imm for i in st] == [SPEC.shared_base + 5, 0]  # s[y][x], then out[0]
    assert [i.imm for i in ld] == [SPEC.shared_base + 1]
    assert any(i.op is Op.SHL and i.use_imm and i.imm == 2 for _, i in code)  # row stride 4


def test_a_device_functions_shared_array_is_allocated_once_per_kernel():
    p = compile_ok("__device__ void bump(int v) { __shared__ int acc[3]; acc[v] = v; }\n"
                   "__global__ void k() { bump(0); bump(1); bump(2); }\n")
    assert p.kernels[0].shared_words == 3


def test_char_loads_sign_extend_and_narrow_stores_mask():
    p = compile_ok("__global__ void k(char *c, unsigned char *u, bool *b, int *i) {\n"
                   "  i[0] = c[0];\n"
                   "  i[1] = u[0];\n"
                   "  c[1] = i[2];\n"
                   "  u[1] = i[3];\n"
                   "  b[0] = i[4];\n"
                   "}\n")
    ops = [(i.op, i.imm if i.use_imm else None, i.line) for _, i in kcode(p)]
    line2 = [o for o in ops if o[2] == 2]
    assert (Op.SHL, 24, 2) in line2 and (Op.SRA, 24, 2) in line2
    assert not [o for o in ops if o[2] == 3 and o[0] in (Op.SHL, Op.SRA, Op.AND)]
    assert (Op.AND, 0xFF, 4) in ops and (Op.AND, 0xFF, 5) in ops
    assert (Op.SNE, 0, 6) in ops


def test_atomics_map_to_atom_modifiers():
    p = compile_ok("__global__ void k(int *s, unsigned *u, int v) {\n"
                   "  atomicAdd(s, v); atomicSub(s, v); atomicMin(s, v); atomicMax(s, v);\n"
                   "  atomicMin(u, 1u); atomicMax(u, 2u); atomicExch(s, v); atomicAnd(s, v);\n"
                   "  atomicOr(s, v); atomicXor(s, v); atomicCAS(s, v, 9);\n"
                   "}\n")
    mods = [AtomOp(i.mod) for _, i in kcode(p) if i.op is Op.ATOM]
    A = AtomOp
    assert mods == [A.ADD, A.ADD, A.MIN, A.MAX, A.MINU, A.MAXU, A.EXCH, A.AND, A.OR, A.XOR, A.CAS]
    code = kcode(p)
    (cas_pc, cas), = [(pc, i) for pc, i in code if i.op is Op.ATOM and i.mod == A.CAS]
    prev = code[cas_pc - code[0][0] - 1][1]
    assert prev.op is Op.MOV and prev.use_imm and prev.imm == 9 and prev.rd == cas.rd


def test_atomic_on_a_shared_element_addresses_it_directly():
    p = compile_ok("__global__ void k() {\n"
                   "  __shared__ int h[4];\n"
                   "  atomicAdd(&h[threadIdx.x], 1);\n"
                   "}\n")
    (atom,) = [i for _, i in kcode(p) if i.op is Op.ATOM]
    assert atom.imm == SPEC.shared_base and atom.mod == AtomOp.ADD


def test_builtins_read_special_registers_and_barrier_is_bar():
    p = compile_ok("__global__ void k(int *a) {\n"
                   "  a[0] = threadIdx.x + threadIdx.y + threadIdx.z + blockIdx.x + blockIdx.y\n"
                   "       + blockIdx.z + blockDim.x + blockDim.y + blockDim.z + gridDim.x\n"
                   "       + gridDim.y + gridDim.z + warpSize;\n"
                   "  __syncthreads();\n"
                   "}\n")
    sregs = {SReg(i.mod) for _, i in kcode(p) if i.op is Op.S2R}
    assert sregs == set(SReg) - {SReg.LANEID, SReg.WARPID, SReg.CLOCK}
    assert [i.line for _, i in kcode(p) if i.op is Op.BAR] == [5]
    assert any(i.op is Op.ADD and i.use_imm and i.imm == 4 for _, i in kcode(p))  # warpSize


def test_constants_fold_and_immediates_are_used():
    p = compile_ok("#define N 10\nconst int M = N * 3;\n"
                   "__global__ void k(int *a) { a[threadIdx.x] = (M + 2) * 4 - N / 3; }\n")
    imms = {i.imm for _, i in kcode(p) if i.use_imm}
    assert 125 in imms
    assert not any(i.op is Op.MUL for _, i in kcode(p))


# ------------------------------------------------------------------ every sample


SAMPLES = sorted((__import__("pathlib").Path(__file__).resolve().parents[1] / "samples").glob("*.cu"))


@pytest.mark.parametrize("path", SAMPLES, ids=[p.name for p in SAMPLES])
def test_samples_compile_to_well_formed_structured_code(path):
    p = compile_ok(path.read_text())
    for k in p.kernels:
        assert 0 < k.regs <= SPEC.num_regs
        for pc, ins in backward_branches(p, k.name):
            assert k.entry <= ins.imm
            if is_call(p, pc) or ins.line == 0:
                continue  # a call of a soft-float routine (they sit below the body), or a loop in one
            src = p.source_line(ins.line)
            # a back-edge belongs to a loop statement, a division loop or a float atomicAdd's CAS loop
            assert re.search(r"\b(for|while|atomicAdd)\b|[/%]", src), (path.name, pc, src)


def test_many_parameters_are_re_read_when_registers_run_short():
    params = ", ".join(f"int p{i}" for i in range(40))
    total = " + ".join(f"p{i} * {i + 1}" for i in range(40))
    p = compile_ok(f"__global__ void k(int *o, {params}) {{\n  int t = threadIdx.x;\n"
                   f"  o[t] = {total};\n}}\n")
    k = p.kernels[0]
    assert k.regs <= SPEC.num_regs and len(k.params) == 41
    assert sorted(i.imm for _, i in kcode(p) if i.op is Op.LDC) == list(range(41))
