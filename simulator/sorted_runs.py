"""Distinct values and first occurrences by one sort and a run mask (np.unique is far slower
on tens of millions of keys with numpy 2.x)."""

from __future__ import annotations

import numpy as np


def run_starts(ordered: np.ndarray) -> np.ndarray:
    """Whether each element of sorted ``ordered`` starts a run of equal values."""
    first = np.empty(ordered.size, dtype=bool)
    first[:1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
    return first


def dense_ranks(values: np.ndarray) -> np.ndarray:
    """Each value's rank among the distinct values (0 for the smallest; equal values share)."""
    order = np.argsort(values, kind="stable")
    ranks = np.empty(values.size, dtype=np.int64)
    ranks[order] = np.cumsum(run_starts(values[order])) - 1
    return ranks


def distinct(values: np.ndarray) -> np.ndarray:
    """The distinct values, ascending."""
    ordered = np.sort(values, kind="stable")  # timsort: fast on the nearly sorted keys here
    return ordered[run_starts(ordered)]


def distinct_ids(ids: np.ndarray, universe: int) -> np.ndarray:
    """The distinct ``ids`` (below ``universe``), ascending: sorted when they are few, so a
    call costs O(ids log ids) rather than O(universe), else through a table."""
    if ids.size * 16 < universe:
        return distinct(ids)
    table = np.zeros(universe, dtype=bool)
    table[ids] = True
    return np.flatnonzero(table)


def first_of_each(keys: np.ndarray) -> np.ndarray:
    """Indices of the first occurrence of every distinct key (non-negative), in key order:
    through a table of first indices when the keys are many for their range (a stable sort
    of millions of scattered keys costs ten times more), else by one sort."""
    if keys.size == 0:
        return np.zeros(0, dtype=np.int64)
    universe = int(keys.max()) + 1
    if keys.size * 16 >= universe:
        first = np.full(universe, keys.size, dtype=np.int64)
        np.minimum.at(first, keys, np.arange(keys.size, dtype=np.int64))
        return first[first < keys.size]
    order = np.argsort(keys, kind="stable")
    return order[run_starts(keys[order])]
