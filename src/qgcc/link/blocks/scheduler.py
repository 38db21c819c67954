"""The warp scheduler: ready and waiting masks, block completion, round-robin next warp.

When the current warp completes an instruction it stays ready, leaves (EXIT of its
last lanes) or starts waiting at a barrier; when no warp is ready the waiting ones
are released together (the barrier), and when none is ready or waiting the block is
done.  The next warp is the lowest ready warp above the current one, wrapping.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..circuits import and_step, eq_lits, neg
from ..layout import NWARP
from ..netlist import Netlist, Sig, Step
from .fetch import Decoded
from .state import State


@dataclass
class Schedule:
    ready: list[Sig]  # per warp, after this step
    waiting: list[Sig]
    block_done: Sig
    next_cur: list[Sig]


def build(n: Netlist, st: State, dec: Decoded, complete: Sig, warp_alive: Sig) -> Schedule:
    RUN, CUR, READY, WAIT, op = st.RUN, st.CUR, st.READY, st.WAIT, dec.op
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
    return Schedule(R2, W2, block_done, NEXTCUR)


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
