"""Pareto fronts in numpy: which points of each group no other point of the group dominates (at
least as good in every objective, better in one), swept in two dimensions and compared
pairwise beyond.
"""

from __future__ import annotations

import numpy as np


def pareto_mask(group: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Mask of the rows of ``x`` (objectives to minimise, rows in any order) that no row of
    the same group dominates (at least as small everywhere, smaller somewhere)."""
    x = np.asarray(x, dtype=float)
    group = np.asarray(group)
    if len(x) == 0:
        return np.zeros(0, dtype=bool)
    if x.shape[1] == 1:
        lowest = np.full(int(group.max()) + 1, np.inf)
        np.minimum.at(lowest, group, x[:, 0])
        return x[:, 0] == lowest[group]
    if x.shape[1] == 2:
        return _pareto_mask_2d(group, x)
    return _pareto_mask_nd(group, x)


def _group_order(group: np.ndarray, key: np.ndarray) -> np.ndarray:
    """Permutation sorting by group, then by ``key`` (ties in any order): a quicksort of the
    key, then a stable radix sort of the small group numbers."""
    by_key = np.argsort(key)
    narrow = np.int16 if group.max() < np.iinfo(np.int16).max else np.int64
    return by_key[np.argsort(group[by_key].astype(narrow), kind="stable")]


def _pareto_mask_2d(group: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Two objectives in O(n log n): sorted by the first, a row is dominated iff a row with a
    smaller first value has a second value no larger, or a row with the same first value has
    a smaller second one."""
    order = _group_order(group, x[:, 0])
    g, a, b = group[order], x[order, 0], x[order, 1]
    starts = np.flatnonzero(np.r_[True, (g[1:] != g[:-1]) | (a[1:] != a[:-1])])
    run_min = np.minimum.reduceat(b, starts)            # lowest second value in each run
    run_group = g[starts]
    before = np.empty_like(run_min)                     # lowest second value of earlier runs
    bounds = np.flatnonzero(np.r_[True, run_group[1:] != run_group[:-1], True])
    for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
        before[lo] = np.inf
        before[lo + 1:hi] = np.minimum.accumulate(run_min[lo:hi - 1])
    run = np.cumsum(np.r_[True, (g[1:] != g[:-1]) | (a[1:] != a[:-1])]) - 1
    dominated = (before[run] <= b) | (run_min[run] < b)
    mask = np.zeros(len(x), dtype=bool)
    mask[order[~dominated]] = True
    return mask


def _pareto_mask_nd(group: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Any number of objectives: a cheap pass drops the rows dominated by a few pivots per
    group (rows that minimise positively weighted sums, which lie on the front); the
    survivors are sorted and swept exactly."""
    n, k = x.shape
    groups = int(group.max()) + 1
    scale = np.mean(np.abs(x), axis=0)
    scale[~(scale > 0) | ~np.isfinite(scale)] = 1.0
    weights = [np.eye(k)[i] for i in range(k)] + [np.ones(k)]
    weights += [np.where(np.arange(k) == i, 4.0, 1.0) for i in range(k)]
    rest, g, xs = np.arange(n), group, x
    for w in weights:
        score = xs @ (w / scale)
        lowest = np.full(groups, np.inf)
        np.minimum.at(lowest, g, score)
        at_lowest = np.flatnonzero(score == lowest[g])
        present, first = np.unique(g[at_lowest], return_index=True)
        pivot_x = np.full((groups, k), -np.inf)
        pivot_x[present] = xs[at_lowest[first]]
        alive = ~_dominated(xs, pivot_x, g)
        rest, g, xs = rest[alive], g[alive], xs[alive]
    order = np.lexsort([xs[:, i] for i in range(k - 1, -1, -1)] + [g])
    mask = np.zeros(n, dtype=bool)
    mask[rest[order[non_dominated_groups(g[order], xs[order])]]] = True
    return mask


def _dominated(x: np.ndarray, by: np.ndarray, group: np.ndarray | None = None) -> np.ndarray:
    """Row-wise: whether ``by`` (or ``by[group]``: one row per group) dominates ``x``;
    column by column, fast for few objectives."""
    all_ge = np.ones(len(x), dtype=bool)
    any_gt = np.zeros(len(x), dtype=bool)
    for i in range(x.shape[1]):
        other = by[:, i] if group is None else by[:, i][group]
        all_ge &= x[:, i] >= other
        any_gt |= x[:, i] > other
    return all_ge & any_gt


def non_dominated_groups(group: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Mask of the rows of ``x`` (objectives to minimise) that no row of the same group
    dominates. Rows must be sorted by group, then lexicographically by ``x``: the first row
    left in a group is then never dominated (a row dominating it would sort before it), so
    each round keeps the first row of every group and drops the rows it dominates; rounds =
    the largest front."""
    front = np.zeros(len(x), dtype=bool)
    alive = np.arange(len(x))
    while alive.size:
        g = group[alive]
        first = np.r_[True, g[1:] != g[:-1]]
        heads = alive[first]
        front[heads] = True
        dominated = _dominated(x[alive], x[heads][np.cumsum(first) - 1])
        alive = alive[~first & ~dominated]
    return front


def non_dominated(x: np.ndarray) -> np.ndarray:
    """Indices of the non-dominated rows of ``x`` (to minimise, any order), ascending."""
    x = np.asarray(x, dtype=float).reshape(len(x), -1)
    return np.flatnonzero(pareto_mask(np.zeros(len(x), dtype=np.int64), x))
