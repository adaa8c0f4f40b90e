"""Placing work items on execution slots the way a GPU's block scheduler or a work queue does."""

from __future__ import annotations

import numpy as np


def list_schedule(durations: np.ndarray, slots: int) -> tuple[np.ndarray, np.ndarray]:
    """Greedy list scheduling of items, in order, onto ``slots`` identical slots.

    Items are handed out in rounds of ``slots``: within a round the earliest-free slot takes
    the next item. This is exact greedy scheduling while a round's items all fit before the
    next round starts (always so with at most ``slots`` items) and a close, vectorised
    approximation otherwise. Returns each item's slot and every slot's finish time.
    """
    durations = np.asarray(durations, dtype=np.float64)
    finish = np.zeros(slots)
    owner = np.empty(durations.size, dtype=np.int64)
    for start in range(0, durations.size, slots):
        batch = durations[start : start + slots]
        earliest = np.argsort(finish, kind="stable")[: batch.size]
        owner[start : start + batch.size] = earliest
        finish[earliest] += batch
    return owner, finish
