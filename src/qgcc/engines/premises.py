"""The batched steps' premise flags and the query scale, shared by the unfused step
(neural_batch.py) and the fused one (fused.py), which must raise the same flag for the same
broken premise and scale queries by the same float (so neither imports the other)."""

from __future__ import annotations

import numpy as np

from ..qwen35 import QWEN35_2B as qwen

HD = qwen.head_dim
QSCALE = float(np.float32(np.sqrt(np.float64(HD))))  # the C step's (float)sqrt(128.0)
# Premise flags (a slot's OR of them): the C step's checks, evaluated on the device.
NOT_PM8, INEXACT_ACT, NOT_ONE_HOT, INEXACT_NORM, NOT_RAIL, NOT_HELD = 1, 2, 4, 8, 16, 32
FLAG_TEXT = {NOT_RAIL: "a state row would hold a value other than +0 or the rail level",
             NOT_PM8: "a residual entry is not exactly +-8",
             INEXACT_ACT: "a SiLU/sigmoid argument is outside its exact range",
             NOT_ONE_HOT: "a key or query is not one-hot with a power-of-two entry",
             INEXACT_NORM: "a read's mean square is not a power of four",
             # The slot holds only the heads layout.written_heads says the launch can write; a
             # write elsewhere means that claim is wrong (an internal error), so the batch stops.
             NOT_HELD: "a state row was written in a head its slot does not hold"}


def flag_text(flags: int) -> str:
    return "; ".join(t for bit, t in FLAG_TEXT.items() if flags & bit)
