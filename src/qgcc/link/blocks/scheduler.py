"""The warp scheduler: ready and waiting masks, block completion, round-robin next warp.

When the current warp completes an instruction it stays ready, leaves (EXIT of its
last lanes) or starts waiting at a barrier; when no warp is ready the waiting ones
are released together (the barrier), and when none is ready or waiting the block is
done.  The next warp is the lowest ready warp above the current one, wrapping.

The round robin is three levels after the ready mask, whatever the number of warps:
`above[w]` (ready and above the current warp, one AND per warp with the constant
compare of `cur`) and per group of RR_GROUP warps whether any is ready; per group whether
any is above; then each bit of the next warp as a sum of mutually exclusive AND steps: the
lowest warp above, or, when there is none, the lowest ready warp, each found from its
group's lower warps and the lower groups.  (A table of (current, next) pairs was one level
but NWARP^2 steps: 8,192 MLP units at 64 warps, more than a layer has; one AND over every
lower warp has a 129-literal row, whose threshold weight bfloat16 cannot hold.)
"""

from __future__ import annotations

from dataclasses import dataclass

from ..circuits import and_step, any_of, cmp_const_steps, eq_lits, neg
from ..layout import NWARP, WARP_BITS
from ..netlist import Netlist, Sig, Step

RR_GROUP = 8
from .fetch import Decoded
from .state import State


@dataclass
class Schedule:
    ready: list[list[list]]  # per warp, after this step: the OR of these AND cases (literal lists)
    waiting: list[list]  # per warp: the AND of these literals
    block_done: Sig
    next_cur: list[Sig]


def build(n: Netlist, st: State, dec: Decoded, complete: Sig, warp_alive: Sig, late: Sig) -> Schedule:
    """`late`: a signal from the end of the step; the next masks are computed after it."""
    RUN, CUR, op = st.RUN, st.CUR, dec.op
    R1, W1, anyready, anywait = _masks(n, st, op, complete, warp_alive, "")
    # The next masks (what the commit writes) are recomputed just in time from the state: the
    # masks computed here for the round robin die with it, instead of holding 2 x NWARP
    # residual dimensions through the memory layers and the float unit.
    with n.not_before(late):
        lR1, lW1, lany, _ = _masks(n, st, op, complete, warp_alive, "late")
    ready = [[[lR1[w]], [neg(lany), lW1[w]]] for w in range(NWARP)]
    waiting = [[lW1[w], lany] for w in range(NWARP)]
    R2 = [n.gate([and_step([R1[w]]), and_step([neg(anyready), W1[w]])], f"R2_{w}") for w in range(NWARP)]
    block_done = n.gate([and_step([RUN, complete, neg(anyready), neg(anywait)])], "blockdone")
    # Round robin: next = lowest ready warp above CUR, wrapping.  Warps are taken in groups of
    # RR_GROUP so that no AND step has more than about 2 RR_GROUP literals.
    above = [n.gate(cmp_const_steps(CUR, w, ge=False, extra=[R2[w]]), f"rrabove{w}") for w in range(NWARP)]
    groups = [list(range(g, min(g + RR_GROUP, NWARP))) for g in range(0, NWARP, RR_GROUP)]
    grp_ready = [n.or_([R2[w] for w in ws], f"rrgready{k}") for k, ws in enumerate(groups)]
    grp_above = [n.or_([above[w] for w in ws], f"rrgabove{k}") for k, ws in enumerate(groups)]
    none_above = n.gate([and_step([complete] + [neg(a) for a in grp_above])], "rrnoneabove")
    rr_steps, rr_coefs = [], [dict() for _ in range(WARP_BITS)]
    for k, ws in enumerate(groups):
        for w in ws:
            below = [x for x in ws if x < w]
            first_above = and_step([complete, above[w]] + [neg(above[x]) for x in below] +
                                   [neg(a) for a in grp_above[:k]])
            first_ready = and_step([none_above, R2[w]] + [neg(R2[x]) for x in below] +
                                   [neg(r) for r in grp_ready[:k]])
            for st_ in (first_above, first_ready):
                k_ = len(rr_steps)
                rr_steps.append(st_)
                for i in range(WARP_BITS):
                    if (w >> i) & 1:
                        rr_coefs[i][k_] = 1
    for i in range(WARP_BITS):
        k_ = len(rr_steps)
        rr_steps.append(and_step([neg(complete), CUR[i]]))
        rr_coefs[i][k_] = 1
    NEXTCUR = n.table(rr_steps, rr_coefs, "nextcur")
    return Schedule(ready, waiting, block_done, NEXTCUR)


def _masks(n: Netlist, st: State, op, complete: Sig, alive_cur: Sig, name: str):
    """Per warp: ready and waiting after this instruction, before a barrier's release; any of each."""
    CUR, READY, WAIT = st.CUR, st.READY, st.WAIT
    R1, W1 = [], []
    for w in range(NWARP):
        cw = eq_lits(CUR, w)
        R1.append(n.gate([
            and_step(cw + [complete, alive_cur, neg(op["BAR"])]),
            and_step([neg(complete), READY[w]]),
            _not_cur_keep(CUR, w, complete, READY[w])], f"{name}R1_{w}"))
        W1.append(n.gate([
            and_step(cw + [complete, alive_cur, op["BAR"]]),
            and_step([neg(complete), WAIT[w]]),
            _not_cur_keep(CUR, w, complete, WAIT[w])], f"{name}W1_{w}"))
    return R1, W1, _any(n, R1, f"{name}anyready"), _any(n, W1, f"{name}anywait")


def _any(n: Netlist, bits: list, name: str) -> Sig:
    """The OR of one bit per warp, as ORs of RR_GROUP warps: one NOR of 64 terms carries a
    constant of about 128 K, whose weight noise (bench/margin.py --probe: 1.7 K on
    `blockdone` at 1e-3) a consumer reads at full weight; a NOR of 8 carries 16 K."""
    return any_of(n, bits, name, flat=RR_GROUP, group=RR_GROUP)


def _not_cur_keep(CUR, w, complete, keep):
    """complete and CUR != w and keep: sum of mismatching bits >= 1 (one step)."""
    terms, const = [], 0
    for i, b in enumerate(CUR):
        if (w >> i) & 1:
            terms.append((b, -1))
            const += 1
        else:
            terms.append((b, 1))
    # mismatch count m >= 1, complete, keep: 8*complete + 8*keep + m >= 17
    return Step(tuple(terms) + ((complete, 8), (keep, 8)), const, 17)
