"""`qgrun --batch --jobs N`: the launches of a batch spread over N worker processes.

Why processes: a launch on the CPU is one compiled C step driven by a Python host loop,
so one process uses one core.  Workers are forked after the program is loaded, linked
and its layers built, so each starts with its own copy of the C step (its states are
private to it after the fork) and none of them loads or links again.  A worker returns
plain data (the launch's JSON summary and its --out files' bytes), computed by the same
function the one-process loop calls, and the parent puts them back in the batch's
order: outputs, messages and the exit code cannot depend on N.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Iterator
from typing import Any

_TASK: Callable[[int], Any] | None = None  # set before the fork; workers inherit it


def available_cores() -> int:
    """The cores this process may run on (its affinity mask, not the machine's count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def can_fork() -> bool:
    return "fork" in multiprocessing.get_all_start_methods()


def _call(i: int) -> Any:
    assert _TASK is not None
    return _TASK(i)


def ordered(task: Callable[[int], Any], count: int, jobs: int) -> Iterator[Any]:
    """task(0), ..., task(count - 1), computed in `jobs` forked workers, yielded in order.

    A worker takes one index at a time, so long and short launches balance.  An exception a
    task raises is raised here, at its place in the order."""
    global _TASK
    if jobs <= 1 or count <= 1 or not can_fork():
        for i in range(count):
            yield task(i)
        return
    _TASK = task
    try:
        with multiprocessing.get_context("fork").Pool(min(jobs, count)) as pool:
            yield from pool.imap(_call, range(count), chunksize=1)
    finally:
        _TASK = None
