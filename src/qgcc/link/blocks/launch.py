"""Launch bookkeeping: thread indices, blocks and phases.

BLKINIT runs one step per warp at the start of every block: it writes the warp's
warp-table row and, in the same step, its four lanes' thread indices (x, y, z) into the
thread-index tables (one head per lane).  The network counts the lanes' indices from the
warp's first thread, held in (tx, ty, tz): four mixed-radix increments in a row, so a
block narrower than four threads wraps x (and y) several times within one step.  RUN
executes until the block is done, then the next block (x, y, z) starts with BLKINIT, or
the machine halts after the last block or on a fault.
Counting is done by the network, in mixed radix, never by the host.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import circuits as C
from ..circuits import and_step, cmp_const_steps, neg
from ..layout import L_PARAM, NWARP, TID_BITS, WARP_BITS, W
from ..netlist import Netlist, Sig, Step
from .state import State


@dataclass
class ThreadIndices:
    """The thread indices BLKINIT writes for warp CNT: per lane (and one past lane 3, the next
    warp's first thread) the bits of x, y and z, TID_BITS each, x first."""

    lanes: list[list[Sig]]


def _successor(n: Netlist, x, y, z, wx: Sig, wy: Sig, active, name: str, hold: bool = True):
    """(x, y, z) + 1 in a mixed radix, where wx and wy say that x + 1 and y + 1 reach their
    radix; gated by the literal `active` (None: always): when not active, the unchanged value
    (`hold`) or zero."""
    x1, y1, z1 = C.increment(n, x, f"{name}x1"), C.increment(n, y, f"{name}y1"), C.increment(n, z, f"{name}z1")
    on = [] if active is None else [active]

    def held(b):
        return [and_step([neg(active), b])] if active is not None and hold else []

    nx = [n.gate([and_step(on + [neg(wx), x1[i]])] + held(x[i]), f"{name}x{i}") for i in range(len(x))]
    ny = [n.gate([and_step(on + [wx, neg(wy), y1[i]]), and_step(on + [neg(wx), y[i]])] + held(y[i]), f"{name}y{i}")
          for i in range(len(y))]
    nz = [n.gate([and_step(on + [wx, wy, z1[i]]), and_step(on + [neg(wx), z[i]]),
                  and_step(on + [wx, neg(wy), z[i]])] + held(z[i]), f"{name}z{i}") for i in range(len(z))]
    return nx, ny, nz


def thread_indices(n: Netlist, st: State) -> ThreadIndices:
    """Lane l of the BLKINIT warp is thread (tx, ty, tz) + l, counted in the block's shape; one
    past lane 3, gated by BLKINIT (zero in every other phase), is the next (tx, ty, tz).

    Three levels per lane, placed just in time for the thread-index tables (layer L_PARAM):
    started early, the lanes' words would hold residual dimensions through the register file
    and the memory layers."""
    lanes = [st.TX + st.TY + st.TZ]
    x, y, z = st.TX, st.TY, st.TZ
    with n.at_least(L_PARAM - 3 * (W - 1)):
        for l in range(1, W + 1):
            wx, wy = C.eq_plus(n, x, 1, st.BX, f"lanetid{l}wx"), C.eq_plus(n, y, 1, st.BY, f"lanetid{l}wy")
            x, y, z = _successor(n, x, y, z, wx, wy, None if l < W else st.BLK, f"lanetid{l}", hold=False)
            lanes.append(x + y + z)
    return ThreadIndices(lanes)


@dataclass
class Bookkeeping:
    ncnt: list[Sig]
    ntid: tuple[list[Sig], list[Sig], list[Sig]]  # the next warp's first thread (x, y, z)
    ncta: tuple[list[Sig], list[Sig], list[Sig]]  # next block (x, y, z)
    nph: dict[str, Sig]  # next phase, one-hot
    nflt: dict[str, Sig]  # fault flags (sticky)
    blk_done: Sig
    blk_live: list[Sig]  # BLKINIT: live lanes of warp CNT
    ready_init: list[list[Step]]  # BLKINIT: warp w starts ready (w < nw), as steps of the commit's gate


def build(n: Netlist, st: State, tids: ThreadIndices, block_done: Sig, any_fault: Sig, oob: Sig, bar_div: Sig,
          pc_bad: Sig, par_bad: Sig) -> Bookkeeping:
    RUN, BLK, HALT, FLT, CNT, NT, NW = st.RUN, st.BLK, st.HALT, st.FLT, st.CNT, st.NT, st.NW
    CX, CY, CZ, GX, GY, GZ = st.CX, st.CY, st.CZ, st.GX, st.GY, st.GZ
    blk_done = C.eq_plus(n, CNT, 1, NW, "blkdone")
    cnt_inc = C.increment(n, CNT, "cntinc")
    cwx, cwy = C.eq_plus(n, CX, 1, GX, "cwrapx"), C.eq_plus(n, CY, 1, GY, "cwrapy")
    cwz = C.eq_plus(n, CZ, 1, GZ, "cwrapz")
    last_block = n.and_([cwx, cwy, cwz], "lastblock")
    # (tx, ty, tz) is the first thread of warp CNT during BLKINIT and (0, 0, 0) when a block's
    # BLKINIT starts: it steps by one warp in BLKINIT and is cleared in every other phase.
    ntid = tuple(tids.lanes[W][k * TID_BITS:(k + 1) * TID_BITS] for k in range(3))
    next_block = n.and_([block_done, neg(last_block), neg(any_fault)], "nextblock")
    ncx, ncy, ncz = _successor(n, CX, CY, CZ, cwx, cwy, next_block, "ncta")
    ncnt = [n.and_([BLK, neg(blk_done), cnt_inc[i]], f"ncnt{i}") for i in range(len(CNT))]
    nph = {
        "blkinit": n.gate([and_step([BLK, neg(blk_done)]), and_step([next_block])], "ph_blk"),
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
    # Lane l of warp CNT is live iff 4 CNT + l < NT.
    blk_live = [C.less_than(n, C.const_bits(n, l, 2) + CNT[:WARP_BITS], NT, f"blklive{l}") for l in range(W)]
    # Steps, not gates: folded into the commit's ready gates, they hold no residual dimension
    # through the step (64 of them at 64 warps).
    ready_init = [cmp_const_steps(NW, w + 1, ge=True, extra=[BLK, blk_done]) for w in range(NWARP)]
    return Bookkeeping(ncnt, ntid, (ncx, ncy, ncz), nph, nflt, blk_done, blk_live, ready_init)
