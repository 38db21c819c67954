"""Wall time spent in chosen methods, for the benches that split a run into its parts
(gpu_profile.py, host_ceiling.py): the method is replaced by a wrapper that adds its time."""
from __future__ import annotations

import time


def timed(owner, name: str, key: str, spent: dict[str, float]) -> None:
    """Make `owner.name` add its wall time to spent[key] (a class: every instance; an object: it)."""
    fn = getattr(owner, name)
    spent.setdefault(key, 0.0)

    def wrapper(*a, **k):
        t = time.perf_counter()
        try:
            return fn(*a, **k)
        finally:
            spent[key] += time.perf_counter() - t
    setattr(owner, name, wrapper)
