"""The SIMT machine as a netlist: one forward pass of the compiled layers is one step.

Layout decisions (docs/architecture.md renders the generated maps):

* Residual state fields carry the launch constants, the phase, the scheduler
  summary (current warp, ready and waiting masks) and the *pending writes* of the
  previous step (register writeback, memory write, warp-table row).  Every
  memory writes its pending entry before it reads, in the same DeltaNet call,
  so a value written by step t is visible to every read of step t+1.
* DeltaNet memories: warp table (per warp: 4 lane PCs, live lanes, min PC,
  active mask) and the thread-index table in layer 0; three copies of the
  register file (read ports rs1, rs2, rd) in layers 1-3, one head per lane and
  group of four warps; the kernel-parameter bank in layer 4; global and shared
  memory in layers 5-13, one 32-bit cell per slot.
* Phases: TIDINIT (one step per thread of a block: the network computes each
  thread's (x, y, z) by counting and stores it), BLKINIT (one step per warp at
  the start of every block: its warp-table row), RUN (one warp instruction per
  step; LD, ST, ATOM and MUL take four micro-steps, one lane each), HALT.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..isa import AtomOp, Fmt, Op, SReg, WRITES_RD, encode
from ..spec import SPEC
from ..program import Program
from ..qwen35 import QWEN35_2B as qwen
from . import circuits as C
from .circuits import and_step, neg, step
from .netlist import Netlist, Sig

W = SPEC.warp_size  # lanes
NWARP = SPEC.max_warps
PCB = 10  # PC bits
NREG = SPEC.num_regs
GLOBAL_CELLS = SPEC.global_words
SHARED_CELLS = SPEC.shared_words
SLOTS = qwen.head_dim  # cells per DeltaNet head: one per slot
CELLS_PER_LAYER = qwen.linear_heads * SLOTS

# Fixed layers of the memories.
L_WARP = 0
L_REGS = (1, 2, 3)
L_PARAM = 4
L_MEM0 = 5
N_MEM_LAYERS = -(-(GLOBAL_CELLS + SHARED_CELLS) // CELLS_PER_LAYER)  # 9

PHASES = ("tidinit", "blkinit", "run", "halt")
FAULTS = ("oob", "barrier", "pc", "param")


def cell_location(index: int) -> tuple[int, int, int]:
    """Memory index (global cell, or GLOBAL_CELLS + shared offset) -> (layer, head, slot)."""
    return L_MEM0 + index // CELLS_PER_LAYER, (index // SLOTS) % qwen.linear_heads, index % SLOTS


@dataclass
class Core:
    """The machine as a netlist, with the state fields and memory heads the linker maps."""

    net: Netlist
    fields: dict[str, list[Sig]]  # state fields (inputs), by name
    heads: dict[str, tuple[int, int]] = field(default_factory=dict)  # memory name -> (layer, memory index)
    program_code: list[int] = field(default_factory=list)


def bits_of(v: int, w: int) -> list[int]:
    return [(v >> i) & 1 for i in range(w)]


def eq_lits(bus: list, value: int) -> list:
    return [(b, bool((value >> i) & 1)) for i, b in enumerate(bus)]


def build_core(program: Program) -> Core:
    n = Netlist()
    F: dict[str, list[Sig]] = {}

    def fld(name: str, width: int) -> list[Sig]:
        F[name] = n.inputs_bus(name, width)
        return F[name]

    ONE = n.ONE
    # ---- launch constants (set once by the host, never written) ----
    BX, BY, BZ = fld("bx", 7), fld("by", 7), fld("bz", 7)
    GX, GY, GZ = fld("gx", 16), fld("gy", 16), fld("gz", 16)
    NT, NW = fld("nt", 7), fld("nw", 5)
    GSIZE, SHW, NPARAM = fld("gsize", 15), fld("shw", 11), fld("nparam", 7)
    ENTRY, KEND = fld("entry", PCB), fld("kend", PCB + 1)
    # ---- dynamic state ----
    PH = dict(zip(PHASES, fld("phase", 4)))
    FLT = dict(zip(FAULTS, fld("fault", 4)))
    CNT = fld("cnt", 7)
    TX, TY, TZ = fld("tx", 6), fld("ty", 6), fld("tz", 6)
    CX, CY, CZ = fld("ctax", 16), fld("ctay", 16), fld("ctaz", 16)
    CUR = fld("cur", 4)
    READY, WAIT = fld("ready", NWARP), fld("wait", NWARP)
    MS = fld("ms", 2)
    WB_EN, WB_W, WB_RD = fld("wb_en", W), fld("wb_w", 4), fld("wb_rd", 5)
    WB_VAL = [fld(f"wb_val{l}", 32) for l in range(W)]
    MW_EN, MW_IDX, MW_VAL = fld("mw_en", 1)[0], fld("mw_idx", 15), fld("mw_val", 32)
    WT_EN, WT_W = fld("wt_en", 1)[0], fld("wt_w", 4)
    WT_PC = [fld(f"wt_pc{l}", PCB) for l in range(W)]
    WT_LIVE, WT_MIN, WT_ACT = fld("wt_live", W), fld("wt_min", PCB), fld("wt_act", W)
    # ---- trace fields (written every step, read by the host) ----
    TR_DONE = fld("tr_done", 1)[0]  # an instruction completed this step
    TR_PC, TR_ACT, TR_W = fld("tr_pc", PCB), fld("tr_act", W), fld("tr_w", 4)
    TR_LD = fld("tr_ld", 1)[0]
    TR_ADDR = fld("tr_addr", 32)
    TR_LANE = fld("tr_lane", 2)

    RUN, TID, BLK, HALT = PH["run"], PH["tidinit"], PH["blkinit"], PH["halt"]
    heads: dict[str, tuple[int, int]] = {}

    # ================= layer 0: warp table and thread-index table =================
    row_in = [b for l in range(W) for b in WT_PC[l]] + WT_LIVE + WT_MIN + WT_ACT
    wt_write = [[(WT_EN, True)] + eq_lits(WT_W, w) for w in range(NWARP)]
    wt_read = [[(RUN, True)] + eq_lits(CUR, w) for w in range(NWARP)]
    row = n.memory("warptable", L_WARP, wt_write, wt_read, row_in)
    heads["warptable"] = (L_WARP, len(n.memories) - 1)
    R_PC = [row[l * PCB:(l + 1) * PCB] for l in range(W)]
    o = W * PCB
    R_LIVE, R_MIN, R_ACT = row[o:o + W], row[o + W:o + W + PCB], row[o + W + PCB:o + 2 * W + PCB]
    TIDL = []
    for l in range(W):
        wk = [[(TID, True)] + eq_lits(CNT[:2], l) + eq_lits(CNT[2:6], s) for s in range(NWARP)]
        rk = [[(RUN, True)] + eq_lits(CUR, s) for s in range(NWARP)]
        TIDL.append(n.memory(f"tid{l}", L_WARP, wk, rk, TX + TY + TZ))
        heads[f"tid{l}"] = (L_WARP, len(n.memories) - 1)

    # ================= fetch: the program ROM (layer 0 MLP) =================
    rom_fields: dict[str, int] = {}
    widths = {"rd": 5, "rs1": 5, "rs2": 5, "immv": 32, "off": 32, "tgt": PCB, "nxt": PCB}
    flags = [f"op_{op.name}" for op in Op] + [f"atom_{a.name}" for a in AtomOp] + \
        [f"sreg_{s.name}" for s in SReg] + ["rs1en", "rs2en", "rden", "wrd", "ismem", "ismul"]
    cols = []
    for f_ in flags:
        rom_fields[f_] = len(cols)
        cols.append(f_)
    for name, wd in widths.items():
        rom_fields[name] = len(cols)
        cols += [f"{name}[{i}]" for i in range(wd)]
    steps, coefs = [], [dict() for _ in cols]
    for pc, ins in enumerate(program.code):
        k = len(steps)
        steps.append(and_step([RUN] + eq_lits(R_MIN, pc)))
        on = set()
        on.add(f"op_{ins.op.name}")
        if ins.op is Op.ATOM:
            on.add(f"atom_{AtomOp(ins.mod).name}")
        if ins.op is Op.S2R:
            on.add(f"sreg_{SReg(ins.mod).name}")
        f = ins.fmt
        if f in (Fmt.ALU, Fmt.LD, Fmt.ST, Fmt.ATOM, Fmt.BRC, Fmt.JR) or (f is Fmt.MOV and not ins.use_imm):
            on.add("rs1en")
        if (f is Fmt.ALU and not ins.use_imm) or f in (Fmt.ST, Fmt.ATOM):
            on.add("rs2en")
        if ins.op is Op.ATOM and ins.mod == AtomOp.CAS:
            on.add("rden")
        if ins.op in WRITES_RD:
            on.add("wrd")
        if ins.op in (Op.LD, Op.ST, Op.ATOM, Op.MUL):
            on.add("ismem")
        if ins.op is Op.MUL:
            on.add("ismul")
        vals = {"rd": ins.rd, "rs1": ins.rs1, "rs2": ins.rs2,
                "immv": ins.imm & 0xFFFFFFFF if ins.use_imm and f in (Fmt.ALU, Fmt.MOV) else 0,
                "off": ins.imm & 0xFFFFFFFF if f in (Fmt.LD, Fmt.ST, Fmt.ATOM, Fmt.LDC) else 0,
                "tgt": ins.imm & (2 ** PCB - 1) if f in (Fmt.BRA, Fmt.BRC) else 0,
                "nxt": (pc + 1) & (2 ** PCB - 1)}
        for name in on:
            coefs[rom_fields[name]][k] = 1
        for name, v in vals.items():
            for i in range(widths[name]):
                if (v >> i) & 1:
                    coefs[rom_fields[name] + i][k] = 1
    rom = n.table(steps, coefs, "rom")

    def R(name: str) -> Sig:
        return rom[rom_fields[name]]

    def RB(name: str) -> list[Sig]:
        return rom[rom_fields[name]:rom_fields[name] + widths[name]]

    op = {o_.name: R(f"op_{o_.name}") for o_ in Op}
    RD, RS1, RS2, IMMV, OFF, TGT, NXT = (RB(x) for x in ("rd", "rs1", "rs2", "immv", "off", "tgt", "nxt"))

    # ================= register file: three read ports (layers 1-3) =================
    def regfile(port: str, layer: int, sel: list[Sig], en: Sig) -> list[list[Sig]]:
        outs = []
        for l in range(W):
            bus = None
            for g in range(NWARP // 4):
                wk, rk = [], []
                for w4 in range(4):
                    w = g * 4 + w4
                    for r in range(NREG):
                        wk.append([(WB_EN[l], True)] + eq_lits(WB_W, w) + eq_lits(WB_RD, r))
                        rk.append([(en, True)] + eq_lits(CUR, w) + eq_lits(sel, r))
                bus = n.memory(f"reg{port}.l{l}.g{g}", layer, wk, rk, WB_VAL[l], outputs=bus)
                heads[f"reg{port}.l{l}.g{g}"] = (layer, len(n.memories) - 1)
            outs.append(bus)
        return outs

    A = regfile("A", L_REGS[0], RS1, R("rs1en"))
    B = regfile("B", L_REGS[1], RS2, R("rs2en"))
    Cc = regfile("C", L_REGS[2], RD, R("rden"))
    # Second ALU operand: the register (read only without an immediate) or the immediate.
    Bop = [[[B[l][i], IMMV[i]] for i in range(32)] for l in range(W)]

    # ================= kernel parameters (layer 4) =================
    pk = [[(op["LDC"], True)] + eq_lits(OFF[:6], j) + [(b, False) for b in OFF[6:]] for j in range(64)]
    # Never written by the network: the host seeds it (the value wiring is a placeholder).
    CONST = n.memory("params", L_PARAM, [[] for _ in range(64)], pk, WB_VAL[0])
    heads["params"] = (L_PARAM, len(n.memories) - 1)

    # ================= per-lane ALU =================
    RES = []  # per lane: the ALU-class result (every source gated by its opcode flag)
    for l in range(W):
        a, b = A[l], Bop[l]
        s_add = C.add(n, a, b, en=op["ADD"], name=f"add{l}")
        s_sub = C.add(n, a, [neg(x) for x in b], cin=ONE, en=op["SUB"], name=f"sub{l}")
        ge, eq = C.compare(n, a, b, name=f"cmp{l}")
        sh = shifter(n, a, b[:5], op["SHL"], op["SHR"], op["SRA"], name=f"sh{l}")
        sreg_src = {
            "TID_X": TIDL[l][0:6], "TID_Y": TIDL[l][6:12], "TID_Z": TIDL[l][12:18],
            "NTID_X": BX, "NTID_Y": BY, "NTID_Z": BZ, "CTAID_X": CX, "CTAID_Y": CY, "CTAID_Z": CZ,
            "NCTAID_X": GX, "NCTAID_Y": GY, "NCTAID_Z": GZ, "WARPID": CUR,
        }
        res = []
        for i in range(32):
            pairs = [(a[i], 1), (b[i], 1)]
            st = [step([(s_add[i], 1)], 1), step([(s_sub[i], 1)], 1), step([(sh[i], 1)], 1),
                  step(pairs + [(op["AND"], 2)], 4),
                  step(pairs + [(op["OR"], 2)], 3),
                  step(pairs + [(op["XOR"], 2)], 3), step(pairs + [(op["XOR"], 2)], 4, -1),
                  and_step([op["MOV"], a[i]]), and_step([op["MOV"], IMMV[i]]),  # exclusive under MOV
                  and_step([op["LDC"], CONST[i]])]
            for sname, bus in sreg_src.items():
                if i < len(bus):
                    st.append(and_step([R(f"sreg_{sname}"), bus[i]]))
            if i < 2 and (l >> i) & 1:
                st.append(and_step([R("sreg_LANEID")]))
            if i == 0:
                b31 = b[31]
                st += [and_step([op["SLTU"], neg(ge)]), and_step([op["SEQ"], eq]), and_step([op["SNE"], neg(eq)]),
                       and_step([op["SLT"], a[31], neg(b31)]),
                       and_step([op["SLT"], neg(a[31]), neg(b31), neg(ge)]),
                       and_step([op["SLT"], a[31], b31, neg(ge)])]
            res.append(n.gate(st, f"res{l}.{i}"))
        RES.append(res)

    # ================= memory micro-step (one lane per step) =================
    Ams = [n.gate([and_step(eq_lits(MS, l) + [A[l][i]]) for l in range(W)], f"Ams{i}") for i in range(32)]
    ADDR = C.add(n, Ams, OFF, name="addr")
    ldatom = [op["LD"], op["ATOM"]]
    act_ms = n.gate([and_step(eq_lits(MS, l) + [R_ACT[l]]) for l in range(W)], "act_ms")
    RDEN = n.gate([and_step([act_ms, ldatom])], "rden")
    # Global cell index = ADDR[0:14]; shared offset = ADDR[0:10] when bit 16 is set.
    MEMOUT = None
    for m in range(N_MEM_LAYERS):
        layer = L_MEM0 + m
        for h in range(qwen.linear_heads):
            base = m * CELLS_PER_LAYER + h * SLOTS
            if base >= GLOBAL_CELLS + SHARED_CELLS:
                break
            wk, rk = [], []
            for s in range(SLOTS):
                idx = base + s
                wk.append([(MW_EN, True)] + eq_lits(MW_IDX, idx))
                if idx < GLOBAL_CELLS:
                    rk.append([(RDEN, True), (ADDR[16], False)] + eq_lits(ADDR[:14], idx))
                else:
                    rk.append([(RDEN, True), (ADDR[16], True)] + eq_lits(ADDR[:10], idx - GLOBAL_CELLS))
            MEMOUT = n.memory(f"mem.l{layer}.h{h}", layer, wk, rk, MW_VAL, outputs=MEMOUT)
            heads[f"mem.l{layer}.h{h}"] = (layer, len(n.memories) - 1)

    # Bounds: global needs ADDR < GSIZE with bits 14.. zero; shared needs bit 16 and offset < SHW.
    hi17 = n.threshold([(ADDR[i], -1) for i in range(17, 32)], 0, 0, "hi17zero")
    z1415 = n.threshold([(ADDR[14], -1), (ADDR[15], -1)], 0, 0, "z1415")
    z1015 = n.threshold([(ADDR[i], -1) for i in range(10, 16)], 0, 0, "z1015")
    ltg = C.less_than(n, ADDR[:14], GSIZE, "ltg")
    lts = C.less_than(n, ADDR[:10], SHW, "lts")
    valid = n.gate([and_step([hi17, neg(ADDR[16]), z1415, ltg]), and_step([hi17, ADDR[16], z1015, lts])], "valid")
    memop = n.gate([and_step([act_ms, [op["LD"], op["ST"], op["ATOM"]]])], "memop")
    oob = n.gate([and_step([memop, neg(valid)])], "oob")
    IDX = [n.gate([and_step([neg(ADDR[16]), ADDR[i]])] + ([and_step([ADDR[16], ADDR[i]])] if i < 10 else []),
                  f"IDX{i}") for i in range(14)] + [n.copy(ADDR[16], "IDX14")]

    # Lane-MS operands for stores, atomics and MUL.
    Bms = [n.gate([and_step(eq_lits(MS, l) + [Bop[l][i]]) for l in range(W)], f"Bms{i}") for i in range(32)]
    Cms = [n.gate([and_step(eq_lits(MS, l) + [Cc[l][i]]) for l in range(W)], f"Cms{i}") for i in range(32)]
    # Atomic read-modify-write on the value just read.
    at = {a_.name: R(f"atom_{a_.name}") for a_ in AtomOp}
    isat = op["ATOM"]
    nadd = C.add(n, MEMOUT, Bms, en=n.and_([isat, at["ADD"]], "en_atadd"), name="atadd")
    geu, equ = C.compare(n, MEMOUT, Bms, name="atcmpu")
    ges, _ = C.compare(n, MEMOUT[:31] + [neg(MEMOUT[31])], Bms[:31] + [neg(Bms[31])], name="atcmps")
    newv = []
    for i in range(32):
        m_, b_ = MEMOUT[i], Bms[i]
        st = [
            and_step([at["MIN"], ges, b_]), and_step([at["MIN"], neg(ges), m_]),
            and_step([at["MAX"], ges, m_]), and_step([at["MAX"], neg(ges), b_]),
            and_step([at["MINU"], geu, b_]), and_step([at["MINU"], neg(geu), m_]),
            and_step([at["MAXU"], geu, m_]), and_step([at["MAXU"], neg(geu), b_]),
            and_step([at["EXCH"], b_]),
            and_step([at["CAS"], equ, Cms[i]]), and_step([at["CAS"], neg(equ), m_]),
            and_step([at["AND"], m_, b_]),
            step([(at["OR"], 2), (m_, 1), (b_, 1)], 3),
            step([(at["XOR"], 2), (m_, 1), (b_, 1)], 3), step([(at["XOR"], 2), (m_, 1), (b_, 1)], 4, -1),
        ]
        newv.append(n.gate([_gate_with(s_, isat) for s_ in st] + [and_step([op["ST"], b_])]
                           + [step([(nadd[i], 1)], 1)], f"newv{i}"))

    # MUL, one lane per micro-step.
    with n.at_least(L_MEM0 + 1):
        prod = multiplier(n, Ams, Bms, en=op["MUL"])

    # ================= writeback =================
    complete = n.gate([and_step([neg(R("ismem"))]), and_step([R("ismem")] + eq_lits(MS, 3))], "complete")
    new_wb_val = [[n.gate([step([(RES[l][i], 1)], 1), and_step([ldatom, MEMOUT[i]]),
                           and_step([op["MUL"], prod[i]])], f"wbv{l}.{i}") for i in range(32)] for l in range(W)]
    # Lane writes: ALU-like instructions write every active lane; micro-stepped ones lane MS.
    new_wb_en = []
    for l in range(W):
        new_wb_en.append(n.gate([
            and_step([RUN, R("wrd"), neg(R("ismem")), R_ACT[l]]),
            and_step([RUN, R("wrd"), R("ismem"), R_ACT[l]] + eq_lits(MS, l))], f"wb_en{l}"))

    # ================= control flow: lane PCs, liveness, next min PC =================
    zero = [n.threshold([(A[l][i], -1) for i in range(32)], 0, 0, f"zero{l}") for l in range(W)]
    brany = [op["BRA"], op["BRZ"], op["BRNZ"], op["JR"]]
    NPC, NLIVE = [], []
    for l in range(W):
        act, z = R_ACT[l], zero[l]
        pcb = []
        for i in range(PCB):
            pcb.append(n.gate([
                and_step([neg(act), R_PC[l][i]]),
                and_step([act, op["BRA"], TGT[i]]),
                and_step([act, op["BRZ"], z, TGT[i]]), and_step([act, op["BRZ"], neg(z), NXT[i]]),
                and_step([act, op["BRNZ"], neg(z), TGT[i]]), and_step([act, op["BRNZ"], z, NXT[i]]),
                and_step([act, op["JR"], A[l][i]]),
                and_step([act, neg(brany), NXT[i]])], f"npc{l}.{i}"))
        NPC.append(pcb)
        NLIVE.append(n.gate([step([(R_LIVE[l], 2), (neg(act), 1), (neg(op["EXIT"]), 1)], 3)], f"nlive{l}"))
    nmin, nact = min_pc(n, NPC, NLIVE, "n")
    warp_alive = n.or_(NLIVE, "alive")

    # Barrier in divergent code: some live lane is not active.
    behind = [n.and_([R_LIVE[l], neg(R_ACT[l])], f"behind{l}") for l in range(W)]
    bar_div = n.gate([step([(op["BAR"], 8)] + [(x, 1) for x in behind], 9)], "bardiv")
    # PC outside the kernel.
    pc_bad = n.gate([
        step([(neg(R_MIN[i]), 1 << i) for i in range(PCB)] + [(ENTRY[i], 1 << i) for i in range(PCB)]
             + [(RUN, 4096)], 4096 + (1 << PCB)),
        step([(R_MIN[i], 1 << i) for i in range(PCB)] + [(neg(KEND[i]), 1 << i) for i in range(PCB + 1)]
             + [(RUN, 4096)], 4096 + (1 << (PCB + 1)) - 1)], "pcbad")
    # JR to an address outside the kernel (lane by lane): below the entry, at or past
    # the end, or beyond the PC's width.
    jr_bad = []
    for l in range(W):
        on = [(R_ACT[l], 4096), (op["JR"], 4096)]
        jr_bad.append(n.gate([step([(neg(A[l][i]), 1 << i) for i in range(PCB)]
                                   + [(ENTRY[i], 1 << i) for i in range(PCB)] + on, 8192 + (1 << PCB))],
                             f"jrlo{l}"))
        jr_bad.append(n.gate([step([(A[l][i], 1 << i) for i in range(PCB)]
                                   + [(neg(KEND[i]), 1 << i) for i in range(PCB + 1)] + on,
                                   8192 + (1 << (PCB + 1)) - 1)], f"jrhi{l}"))
        jr_bad.append(n.gate([step([(A[l][i], 1) for i in range(PCB, 32)] + [(R_ACT[l], 64), (op["JR"], 64)],
                                   129)], f"jrwide{l}"))
    pc_bad = n.or_([pc_bad, n.and_([RUN, n.or_(jr_bad, "jrbad")], "jrbadrun")], "pcbadany")
    # LDC index beyond the parameters.
    par_bad = _param_bad(n, op["LDC"], OFF, NPARAM)

    any_fault = n.or_([oob, bar_div, pc_bad, par_bad], "anyfault")

    # ================= scheduler =================
    alive_cur = warp_alive
    R1, W1 = [], []
    for w in range(NWARP):
        cw = eq_lits(CUR, w)
        R1.append(n.gate([
            and_step(cw + [complete, alive_cur, neg(op["BAR"])]),
            and_step([neg(complete), READY[w]]),
            _not_cur_keep(CUR, w, complete, READY[w])], f"R1_{w}"))
        W1.append(n.gate([
            and_step(cw + [complete, alive_cur, op["BAR"]]),
            and_step([neg(complete), WAIT[w]]),
            _not_cur_keep(CUR, w, complete, WAIT[w])], f"W1_{w}"))
    anyready = n.or_(R1, "anyready")
    anywait = n.or_(W1, "anywait")
    R2 = [n.gate([and_step([R1[w]]), and_step([neg(anyready), W1[w]])], f"R2_{w}") for w in range(NWARP)]
    W2 = [n.and_([W1[w], anyready], f"W2_{w}") for w in range(NWARP)]
    block_done = n.gate([and_step([RUN, complete, neg(anyready), neg(anywait)])], "blockdone")
    # Round robin: next = lowest ready warp above CUR, wrapping.
    rr_steps, rr_coefs = [], [dict() for _ in range(4)]
    for c in range(NWARP):
        for w in range(NWARP):
            seq = [(c + k) % NWARP for k in range(1, NWARP + 1)]
            between = seq[:seq.index(w)]
            k_ = len(rr_steps)
            rr_steps.append(and_step(eq_lits(CUR, c) + [complete, R2[w]] + [neg(R2[x]) for x in between]))
            for i in range(4):
                if (w >> i) & 1:
                    rr_coefs[i][k_] = 1
    for i in range(4):
        k_ = len(rr_steps)
        rr_steps.append(and_step([neg(complete), CUR[i]]))
        rr_coefs[i][k_] = 1
    NEXTCUR = n.table(rr_steps, rr_coefs, "nextcur")

    # ================= launch bookkeeping: thread indices, blocks, phases =================
    tid_done = C.eq_plus(n, CNT, 1, NT, "tiddone")
    blk_done = C.eq_plus(n, CNT, 1, NW, "blkdone")
    cnt_inc = C.increment(n, CNT, "cntinc")
    wx, wy = C.eq_plus(n, TX, 1, BX, "wrapx"), C.eq_plus(n, TY, 1, BY, "wrapy")
    tx1, ty1, tz1 = C.increment(n, TX, "tx1"), C.increment(n, TY, "ty1"), C.increment(n, TZ, "tz1")
    cwx, cwy = C.eq_plus(n, CX, 1, GX, "cwrapx"), C.eq_plus(n, CY, 1, GY, "cwrapy")
    cwz = C.eq_plus(n, CZ, 1, GZ, "cwrapz")
    last_block = n.and_([cwx, cwy, cwz], "lastblock")
    cx1, cy1, cz1 = C.increment(n, CX, "cx1"), C.increment(n, CY, "cy1"), C.increment(n, CZ, "cz1")

    def counter3(x, y, z, x1, y1, z1, wrx, wry, active, name):
        """(x,y,z) + 1 in a mixed radix; the unchanged value when not active."""
        nx = [n.gate([and_step([active, neg(wrx), x1[i]]), and_step([neg(active), x[i]])], f"{name}x{i}")
              for i in range(len(x))]
        ny = [n.gate([and_step([active, wrx, neg(wry), y1[i]]), and_step([active, neg(wrx), y[i]]),
                      and_step([neg(active), y[i]])], f"{name}y{i}") for i in range(len(y))]
        nz = [n.gate([and_step([active, wrx, wry, z1[i]]), and_step([active, neg(wrx), z[i]]),
                      and_step([active, wrx, neg(wry), z[i]]), and_step([neg(active), z[i]])], f"{name}z{i}")
              for i in range(len(z))]
        return nx, ny, nz

    ntx, nty, ntz = counter3(TX, TY, TZ, tx1, ty1, tz1, wx, wy, TID, "ntid")
    next_block = n.and_([block_done, neg(last_block), neg(any_fault)], "nextblock")
    ncx, ncy, ncz = counter3(CX, CY, CZ, cx1, cy1, cz1, cwx, cwy, next_block, "ncta")
    ncnt = [n.gate([and_step([TID, neg(tid_done), cnt_inc[i]]), and_step([BLK, neg(blk_done), cnt_inc[i]])],
                   f"ncnt{i}") for i in range(7)]
    nph = {
        "tidinit": n.and_([TID, neg(tid_done)], "ph_tid"),
        "blkinit": n.gate([and_step([TID, tid_done]), and_step([BLK, neg(blk_done)]), and_step([next_block])],
                          "ph_blk"),
        "run": n.gate([and_step([BLK, blk_done]), and_step([RUN, neg(block_done), neg(any_fault)])], "ph_run"),
        "halt": n.gate([and_step([HALT]), and_step([RUN, block_done, last_block, neg(any_fault)]),
                        and_step([RUN, any_fault])], "ph_halt"),
    }
    nflt = {
        "oob": n.or_([FLT["oob"], n.and_([RUN, oob], "f_oob")], "nf_oob"),
        "barrier": n.or_([FLT["barrier"], n.and_([RUN, bar_div], "f_bar")], "nf_bar"),
        "pc": n.or_([FLT["pc"], pc_bad], "nf_pc"),
        "param": n.or_([FLT["param"], n.and_([RUN, par_bad], "f_par")], "nf_par"),
    }
    # BLKINIT: the warp-table row of warp CNT.
    blk_live = [n.gate([step([(NT[i], 1 << i) for i in range(7)] + [(neg(CNT[i]), 4 << i) for i in range(5)],
                             1 + l + 4 * 31)], f"blklive{l}") for l in range(W)]
    ready_init = [n.gate([step([(NW[i], 1 << i) for i in range(5)], w + 1)], f"rdyinit{w}") for w in range(NWARP)]

    # ---- next state ----
    run_ok = n.and_([RUN, neg(any_fault)], "runok")
    n.output_bus(list(PH.values()), [nph[p] for p in PHASES])
    n.output_bus(list(FLT.values()), [nflt[f_] for f_ in FAULTS])
    n.output_bus(CNT, ncnt)
    n.output_bus(TX, ntx)
    n.output_bus(TY, nty)
    n.output_bus(TZ, ntz)
    n.output_bus(CX, ncx)
    n.output_bus(CY, ncy)
    n.output_bus(CZ, ncz)
    n.output_bus(CUR, [n.and_([run_ok, neg(block_done), x], f"ncur{i}") for i, x in enumerate(NEXTCUR)])
    n.output_bus(READY, [n.gate([and_step([run_ok, R2[w]]), and_step([BLK, blk_done, ready_init[w]])], f"nready{w}")
                         for w in range(NWARP)])
    n.output_bus(WAIT, [n.and_([run_ok, W2[w]], f"nwait{w}") for w in range(NWARP)])
    ms_inc = C.increment(n, MS, "msinc")
    n.output_bus(MS, [n.and_([run_ok, R("ismem"), neg(complete), ms_inc[i]], f"nms{i}") for i in range(2)])
    n.output_bus(WB_EN, [n.and_([run_ok, new_wb_en[l]], f"nwben{l}") for l in range(W)])
    n.output_bus(WB_W, [n.copy(x, f"nwbw{i}") for i, x in enumerate(CUR)])
    n.output_bus(WB_RD, [n.copy(x, f"nwbrd{i}") for i, x in enumerate(RD)])
    for l in range(W):
        n.output_bus(WB_VAL[l], new_wb_val[l])
    mwen = n.gate([and_step([run_ok, memop, valid, [op["ST"], op["ATOM"]]])], "nmwen")
    n.output(MW_EN, mwen)
    n.output_bus(MW_IDX, IDX)
    n.output_bus(MW_VAL, newv)
    n.output(WT_EN, n.gate([and_step([run_ok, complete]), and_step([BLK])], "nwten"))
    n.output_bus(WT_W, [n.gate([and_step([RUN, CUR[i]]), and_step([BLK, CNT[i]])], f"nwtw{i}") for i in range(4)])
    for l in range(W):
        n.output_bus(WT_PC[l], [n.gate([and_step([RUN, NPC[l][i]]), and_step([BLK, ENTRY[i]])], f"nwtpc{l}.{i}")
                                for i in range(PCB)])
    n.output_bus(WT_LIVE, [n.gate([and_step([RUN, NLIVE[l]]), and_step([BLK, blk_live[l]])], f"nwtlive{l}")
                           for l in range(W)])
    n.output_bus(WT_MIN, [n.gate([and_step([RUN, nmin[i]]), and_step([BLK, ENTRY[i]])], f"nwtmin{i}")
                          for i in range(PCB)])
    n.output_bus(WT_ACT, [n.gate([and_step([RUN, nact[l]]), and_step([BLK, blk_live[l]])], f"nwtact{l}")
                          for l in range(W)])
    # ---- trace ----
    n.output(TR_DONE, n.and_([RUN, complete], "trdone"))
    n.output_bus(TR_PC, [n.copy(x, f"trpc{i}") for i, x in enumerate(R_MIN)])
    n.output_bus(TR_ACT, [n.copy(x, f"tract{i}") for i, x in enumerate(R_ACT)])
    n.output_bus(TR_W, [n.copy(x, f"trw{i}") for i, x in enumerate(CUR)])
    n.output(TR_LD, n.copy(RDEN, "trld"))
    n.output_bus(TR_ADDR, [n.copy(x, f"traddr{i}") for i, x in enumerate(ADDR)])
    n.output_bus(TR_LANE, [n.gate([and_step([neg(bar_div), MS[i]])] +
                                  [and_step([bar_div, behind[l]] + [neg(behind[j]) for j in range(l)])
                                   for l in range(W) if (l >> i) & 1], f"trlane{i}") for i in range(2)])
    return Core(n, F, heads, [encode(i) for i in program.code])


def _gate_with(s_, en):
    """A step that can only fire when `en` is 1."""
    from .netlist import Step

    return Step(s_.terms + ((en, 64),), s_.const, s_.T + 64, s_.coef)


def _not_cur_keep(CUR, w, complete, keep):
    """complete and CUR != w and keep: sum of mismatching bits >= 1 (one step)."""
    from .netlist import Step

    terms, const = [], 0
    for i, b in enumerate(CUR):
        if (w >> i) & 1:
            terms.append((b, -1))
            const += 1
        else:
            terms.append((b, 1))
    # mismatch count m >= 1, complete, keep: 8*complete + 8*keep + m >= 17
    return Step(tuple(terms) + ((complete, 8), (keep, 8)), const, 17)


def _param_bad(n: Netlist, ldc: Sig, OFF, NPARAM) -> Sig:
    """LDC with an index >= the number of parameters."""
    hi = n.threshold([(x, 1) for x in OFF[7:]], 1, 0, "offhi")
    ge = n.gate([step([(OFF[i], 1 << i) for i in range(7)] + [(neg(NPARAM[i]), 1 << i) for i in range(7)], 127)],
                "offge")
    return n.gate([and_step([ldc, hi]), and_step([ldc, neg(hi), ge])], "parbad")


def min_pc(n: Netlist, pcs: list[list[Sig]], live: list[Sig], name: str):
    """(smallest PC among live lanes, mask of live lanes at it): three levels."""
    Wl = len(pcs)
    le, lt = {}, {}
    for l in range(Wl):
        for j in range(Wl):
            if j == l:
                continue
            diff = [(pcs[j][i], 1 << i) for i in range(PCB)] + [(neg(pcs[l][i]), 1 << i) for i in range(PCB)]
            base = (1 << PCB) - 1  # sum = pc_j - pc_l + base
            dead = [(neg(live[j]), 2048)]
            le[l, j] = n.gate([step(diff + dead, base)], f"{name}le{l}{j}")
            lt[l, j] = n.gate([step(diff + dead, base + 1)], f"{name}lt{l}{j}")
    act = [n.and_([live[l]] + [le[l, j] for j in range(Wl) if j != l], f"{name}act{l}") for l in range(Wl)]
    sel = [n.and_([live[l]] + [lt[l, j] for j in range(l)] + [le[l, j] for j in range(l + 1, Wl)],
                  f"{name}sel{l}") for l in range(Wl)]
    mpc = [n.gate([and_step([sel[l], pcs[l][i]]) for l in range(Wl)], f"{name}min{i}") for i in range(PCB)]
    return mpc, act


def shifter(n: Netlist, x: list[Sig], amt: list, shl: Sig, shr: Sig, sra: Sig, name: str) -> list[Sig]:
    """SHL/SHR/SRA by amt (5 bits) in two levels; SHL is a right shift of the reversed word."""
    rev = list(reversed(x))
    # Stage 1: right shift by amt[0:2] of x (SHR/SRA) or of rev(x) (SHL); fill: x31 for SRA.
    st1 = []
    for i in range(32):
        steps = []
        for s in range(4):
            sel = eq_lits(amt[:2], s)
            j = i + s
            if j < 32:
                steps.append(and_step(sel + [shl, rev[j]]))
                steps.append(and_step(sel + [[shr, sra], x[j]]))
            else:
                steps.append(and_step(sel + [sra, x[31]]))
        st1.append(n.gate(steps, f"{name}.a{i}"))
    out = []
    for i in range(32):
        steps = []
        for t in range(8):
            sel = eq_lits(amt[2:5], t)
            # SHL result bit i = reversed-shift bit 31-i.
            j = (31 - i) + 4 * t
            if j < 32:
                steps.append(and_step(sel + [shl, st1[j]]))
            j = i + 4 * t
            if j < 32:
                steps.append(and_step(sel + [[shr, sra], st1[j]]))
            else:
                steps.append(and_step(sel + [sra, x[31]]))
        out.append(n.gate(steps, f"{name}.b{i}"))
    return out


def multiplier(n: Netlist, a: list, b: list, en: Sig) -> list[Sig]:
    """Low 32 bits of a*b: partial products, column counts, then a final adder."""
    width = 32
    cols: list[list[Sig]] = [[] for _ in range(width)]
    for i in range(width):
        for j in range(width - i):
            cols[i + j].append(n.and_([a[i], b[j], en], f"pp{i}_{j}"))
    # Compress until every column holds at most two bits.
    level = 0
    while max(len(c) for c in cols) > 2:
        new: list[list[Sig]] = [[] for _ in range(width)]
        for k, col in enumerate(cols):
            h = len(col)
            if h <= 2:
                new[k] += col
                continue
            nb = h.bit_length()
            pairs = [(x, 1) for x in col]
            for d in range(nb):
                if k + d >= width:
                    break
                steps = []
                m = 1
                while m * (1 << d) <= h:
                    steps.append(step(pairs, m * (1 << d), 1 if m % 2 else -1))
                    m += 1
                new[k + d].append(n.gate(steps, f"mc{level}_{k}_{d}"))
        cols = new
        level += 1
    x = [c[0] if len(c) > 0 else (n.ONE, False) for c in cols]
    y = [c[1] if len(c) > 1 else (n.ONE, False) for c in cols]
    return C.add(n, x, y, name="mulsum")
