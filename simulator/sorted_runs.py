"""Distinct values and first occurrences by one sort and a run mask (np.unique is far slower
on tens of millions of keys with numpy 2.x)."""

from __future__ import annotations

import numpy as np


def distinct(values: np.ndarray) -> np.ndarray:
    """The distinct values, ascending."""
    ordered = np.sort(values, kind="stable")  # timsort: fast on the nearly sorted keys here
    keep = np.empty(ordered.size, dtype=bool)
    keep[:1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
    return ordered[keep]


def distinct_ids(ids: np.ndarray, universe: int) -> np.ndarray:
    """The distinct ``ids`` (below ``universe``), ascending: sorted when they are few, so a
    call costs O(ids log ids) rather than O(universe), else through a table."""
    if ids.size * 16 < universe:
        return distinct(ids)
    table = np.zeros(universe, dtype=bool)
    table[ids] = True
    return np.flatnonzero(table)


def first_of_each(keys: np.ndarray) -> np.ndarray:
    """Indices of the first occurrence of every distinct key, in key order."""
    if keys.size == 0:
        return np.zeros(0, dtype=np.int64)
    order = np.argsort(keys, kind="stable")
    ordered = keys[order]
    first = np.empty(keys.size, dtype=bool)
    first[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
    return order[first]
