"""Distinct values and first occurrences by one sort and a run mask (np.unique is far slower
on tens of millions of keys with numpy 2.x), and membership in a set of ids."""

from __future__ import annotations

import numpy as np

# ``sort_keys`` merges runs (timsort) where keys come nearly in order: at most this share of
# them below their predecessor, each by a drop small against the keys' span (the median drop
# at most this share of it), so that the runs barely overlap; else numpy's default sort
# (x86-simd-sort: 4-5 ns a key, whatever the order). Timsort takes 0.4-2.5 ns a key on keys
# out of order only locally (2**20 keys, up to 15% descents; rmat:scale=20 BFS's 22M
# dynamic-chunk sector keys, 0.25% descents by 1: 2.4 against 6.2), but 40-60 where
# ascending runs start at random (a frontier's neighbour lists) or shuffled groups.
_MERGED_DESCENTS = 0.1
_MERGED_DROP = 0.01
_DROPS_SAMPLED = 1024
_CHOOSE_SORT_FROM = 256
_PAIRS_STRIDE = 17  # odd: no aliasing with runs of a power-of-two length (warp steps)

# Below this many keys numpy's stable argsort is faster than packing keys with their indices
# (measured: 300 random keys 7.5 vs 15.9 us, 1000 keys 27.6 vs 22.1 us).
_PACKED_SORT_FROM = 800


# Per-lane copies of per-vertex values: a gather through a lane-to-vertex array a run
# already made costs 2-5x less than np.repeat on short runs (a road graph's degrees, 2-8 on
# average), some 10% more on long ones (an RMAT's, 28 on average)
GATHERED_RUNS_UP_TO = 12


def spread(values: np.ndarray, counts: np.ndarray, owner: np.ndarray) -> np.ndarray:
    """``np.repeat(values, counts)``, by a gather through ``owner`` (that repeat of the
    values' indices) where the runs are short."""
    if owner.size <= GATHERED_RUNS_UP_TO * counts.size:
        return values.take(owner)
    return np.repeat(values, counts)


def sort_keys(keys: np.ndarray) -> None:
    """Sort integer ``keys`` in place by whichever of timsort and numpy's default sort their
    order favours (equal keys are indistinguishable, so either gives the same array)."""
    if keys.size >= _CHOOSE_SORT_FROM and _nearly_in_order(keys):
        keys.sort(kind="stable")
    else:
        keys.sort()


def _nearly_in_order(keys: np.ndarray) -> bool:
    """Whether ``keys`` come as one mostly ascending sequence, out of order only locally:
    judged on every ``_PAIRS_STRIDE``-th pair of neighbours (a full pass over the keys cost
    BFS on rmat:scale=20 5-10% of its time, where timsort was always the choice)."""
    stride = _PAIRS_STRIDE if keys.size >= _PAIRS_STRIDE * _CHOOSE_SORT_FROM else 1
    before, after = keys[:-1:stride], keys[1::stride]
    descending = after < before
    count = np.count_nonzero(descending)
    if count > _MERGED_DESCENTS * before.size:
        return False
    if count == 0:
        return True
    descents = np.flatnonzero(descending)
    if descents.size > _DROPS_SAMPLED:
        descents = descents[:: descents.size // _DROPS_SAMPLED]
    drops = before[descents] - after[descents]
    span = int(before.max()) - int(before.min())
    return float(np.median(drops)) <= _MERGED_DROP * span


def run_starts(ordered: np.ndarray) -> np.ndarray:
    """Whether each element of sorted ``ordered`` starts a run of equal values."""
    first = np.empty(ordered.size, dtype=bool)
    first[:1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
    return first


def run_index(first: np.ndarray) -> np.ndarray:
    """Each element's run (0 for the first), from a flag on each run's first element: a
    running count of the flags widened first (numpy's cumsum of bools casts them in small
    buffers, 2-3x slower on a sweep's 100k flags)."""
    index = first.astype(np.int64)
    np.cumsum(index, out=index)
    index -= 1
    return index


def run_numbers(starts: np.ndarray, size: int) -> np.ndarray:
    """Each of ``size`` elements' run, from the runs' ascending starts (the first at 0)."""
    numbers = np.zeros(size, dtype=np.intp)
    numbers[starts[1:]] = 1
    np.cumsum(numbers, out=numbers)
    return numbers


def run_sums(rows: np.ndarray, numbers: np.ndarray, runs: int) -> np.ndarray:
    """Each row's sums over its runs (``numbers``: each element's, ascending): what
    ``np.add.reduceat(rows, starts, axis=1)`` gives (within float rounding) at a fraction of
    its cost where the runs are short (it pays a call of its inner loop per run)."""
    return np.stack([np.bincount(numbers, weights=row, minlength=runs) for row in rows])


def run_maxima(values: np.ndarray, starts: np.ndarray, numbers: np.ndarray) -> np.ndarray:
    """The greatest of ``values`` in each run (``starts``; ``numbers``: each element's run):
    ``np.maximum.reduceat`` by a ufunc.at, which costs less where the runs are short."""
    out = values[starts]
    np.maximum.at(out, numbers, values)
    return out


def run_minima(values: np.ndarray, starts: np.ndarray, numbers: np.ndarray) -> np.ndarray:
    """The least of ``values`` in each run: see ``run_maxima``."""
    out = values[starts]
    np.minimum.at(out, numbers, values)
    return out


def stable_order(keys: np.ndarray) -> np.ndarray:
    """``np.argsort(keys, kind="stable")`` of non-negative integer keys: by one sort of the
    keys packed with their indices where both fit in 63 bits (a sort of int64 takes a
    fraction of the argsort's time), else by that argsort; keys in order already, by none;
    keys below 2**16, by numpy's radix sort of them as 16-bit keys (a fifth of the packed
    sort's time on a sweep's 50k steps); a few hundred keys, by that argsort (faster there
    than packing them). The packed keys are sorted by ``sort_keys``: timsort where they come
    nearly in order (a sweep's, a round's, a step's), else numpy's default sort."""
    if keys.size < _PACKED_SORT_FROM:
        return np.argsort(keys, kind="stable")
    if bool((keys[1:] >= keys[:-1]).all()):  # already in order (WER's positions, chunks of 1)
        return np.arange(keys.size)
    key_bits = int(keys.max()).bit_length()
    if key_bits <= 16:  # numpy sorts 16-bit keys by radix: O(keys), whatever their order
        return np.argsort(keys.astype(np.uint16), kind="stable")
    return _packed_order(keys, key_bits, "stable")


def scattered_order(keys: np.ndarray, key_bits: int) -> np.ndarray:
    """``np.argsort(keys, kind="stable")`` of non-negative integer keys below
    ``2**key_bits`` that come in no useful order (a scramble): by numpy's default sort of the
    keys packed with their indices, where both fit in 63 bits, which sorts such keys in about
    half a stable argsort's time (timsort finds no runs to merge; arrival orders of
    USA-road-FLA's worklist launches: 14 against 22-27 us a launch)."""
    return _packed_order(keys, key_bits, None)


def _packed_order(keys: np.ndarray, key_bits: int, kind: str | None) -> np.ndarray:
    """The stable order of ``keys`` below ``2**key_bits`` by a sort (of ``kind``) of the
    keys packed with their indices into one int64, where both fit in 63 bits, else by a
    stable argsort."""
    index_bits = max(keys.size - 1, 0).bit_length()
    if key_bits + index_bits > 63:
        return np.argsort(keys, kind="stable")
    packed = keys.astype(np.int64, copy=False) << np.int64(index_bits)
    packed |= np.arange(keys.size, dtype=np.int64)
    if kind == "stable":  # packed keys are distinct: any sort is stable
        sort_keys(packed)
    else:
        packed.sort(kind=kind)
    packed &= np.int64((1 << index_bits) - 1)
    return packed


def lexicographic_order(columns: list[np.ndarray]) -> np.ndarray:
    """The stable order of the rows of non-negative integer ``columns`` (the first the most
    significant): ``np.lexsort(columns[::-1])``, by ``stable_order`` of the columns packed
    into one key where they fit in 63 bits."""
    key = np.asarray(columns[0]).astype(np.int64)
    bits = int(key.max(initial=0)).bit_length()
    for column in columns[1:]:
        width = int(column.max(initial=0)).bit_length()
        bits += width
        if bits > 63:
            return np.lexsort(columns[::-1])
        key <<= np.int64(width)
        key |= column
    return stable_order(key)


def dense_ranks(values: np.ndarray) -> np.ndarray:
    """Each value's rank among the distinct values (0 for the smallest; equal values share)."""
    order = np.argsort(values, kind="stable")
    ranks = np.empty(values.size, dtype=np.int64)
    ranks[order] = np.cumsum(run_starts(values[order])) - 1
    return ranks


def distinct(values: np.ndarray) -> np.ndarray:
    """The distinct values, ascending."""
    ordered = values.copy()
    sort_keys(ordered)
    return ordered[run_starts(ordered)]


def distinct_ids(ids: np.ndarray, universe: int) -> np.ndarray:
    """The distinct ``ids`` (below ``universe``), ascending: sorted when they are few, so a
    call costs O(ids log ids) rather than O(universe), else through a table."""
    if ids.size * 16 < universe:
        return distinct(ids)
    table = np.zeros(universe, dtype=bool)
    table[ids] = True
    return np.flatnonzero(table)


def distinct_per_group(values: np.ndarray, groups: np.ndarray, n_groups: int) -> np.ndarray:
    """How many distinct ``values`` (non-negative) each of ``n_groups`` groups holds, where
    a value always comes with the same group (a warp step's or a thread's unit): through a
    table of each value's group where the values are many for their range (every value's
    entries write the same group, so the order of the writes does not matter), else by
    one sort of them; values in order, by their runs."""
    if values.size == 0:
        return np.zeros(n_groups, dtype=np.int64)
    if bool((values[1:] >= values[:-1]).all()):
        return np.bincount(groups[run_starts(values)], minlength=n_groups)
    universe = int(values.max()) + 1
    if values.size * 16 >= universe:
        group_of = np.zeros(universe, dtype=np.int64)
        group_of[values] = groups + 1  # 0: a value none holds
        return np.bincount(group_of, minlength=n_groups + 1)[1:]
    return np.bincount(groups[first_of_each(values)], minlength=n_groups)


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
    order = stable_order(keys)
    return order[run_starts(keys[order])]


# Membership is searched for when values are fewer than 1/1024 of the ids, else looked up in
# a table: numpy searches unsorted values at about 10-90 ns each (more as they grow), and
# clears a table of ids at about 0.03 ns an id (measured on this project's machines).
_SEARCH_BELOW = 1024


def member_mask(values: np.ndarray, members: np.ndarray, universe: int) -> np.ndarray:
    """Whether each of ``values`` (ids below ``universe``) is one of ``members``: by binary
    search in the ascending members when values are few (O(values log members), not
    O(universe) per launch), else by a table."""
    if values.size * _SEARCH_BELOW < universe and bool((members[1:] >= members[:-1]).all()):
        if values.size > members.size and bool((values[1:] >= values[:-1]).all()):
            # ascending values (a spatial launch's partitions): each member's run of equal
            # values, from searching the members among them (numpy searches unsorted keys
            # several times slower than sorted ones)
            lo = values.searchsorted(members, "left")
            hi = values.searchsorted(members, "right")
            runs = np.bincount(lo, minlength=values.size + 1)
            runs -= np.bincount(hi, minlength=values.size + 1)
            return np.cumsum(runs[:-1]) > 0
        at = members.searchsorted(values)
        found = at < members.size
        found[found] = members[at[found]] == values[found]
        return found
    table = np.zeros(universe, dtype=bool)
    table[members] = True
    return table[values]


# Boolean indexing branches per element: on masks neither mostly set nor mostly clear it
# mispredicts its way to 2-4 ns an element, where np.compress (a vectorised nonzero, then a
# take) costs 0.5-0.7 (50k-150k elements half set: 150-630 us against 28-84; measured on
# this project's machines, numpy 2.4); on masks mostly one way the indexing is as fast or
# faster
_COMPRESSED_SHARE = (0.05, 0.9)
_COMPRESSED_FROM = 256


def compressed(values: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """``values[mask]`` of a 1-D boolean ``mask``: by ``np.compress`` where the mask is
    mixed (some 5-7x faster there), else by boolean indexing."""
    low, high = _COMPRESSED_SHARE
    if mask.size < _COMPRESSED_FROM:
        return values[mask]
    share = np.count_nonzero(mask) / mask.size
    if low < share < high:
        return np.compress(mask, values)
    return values[mask]
