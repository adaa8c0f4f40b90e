"""Memory transactions of warp steps: the distinct sectors a step's lanes touch, per warp unit."""

from __future__ import annotations

import numpy as np

from simulator.sorted_runs import compressed
from simulator.sorted_runs import run_starts
from simulator.sorted_runs import sort_keys
from simulator.sorted_runs import stable_order

WORD_BYTES = 4  # vertex ids, row offsets, status words and weights are 32-bit on the device

# From this many elements distinct_sectors counts each unit's distinct keys by summing their
# flags over the unit's key range (fewer passes over the keys); below, by compressing the
# distinct keys and counting their units (fewer calls). Where no unit sizes are given, it
# searches the sorted keys for the units' ranges, unless the units outnumber the keys by
# this (a donating launch's view holds whole blocks: many units, few of them with keys):
# then it counts each unit's keys (compressing each set of flags, as it did, costs more:
# the flags fall at random, so the compress mispredicts its branches)
_RANGE_COUNT_FROM = 1 << 16
_SEARCHED_UNITS_PER_KEY = 1 / 8
# From this many units per key it counts each unit's range by a running count rather than a
# reduceat (measured on 22M keys: 0.73 ns a key for the count, 0.3 ns a key and 18 ns a
# range for the reduceat)
_RUNNING_COUNT_UNITS_PER_KEY = 1 / 40
_LITTLE_ENDIAN = np.dtype(np.int64).byteorder == "=" and np.little_endian
# (step, sector) keys of up to this many bits are sorted as int32 (2-3x faster than int64:
# 30000 keys 47 against 109 us); one bit short of int32's, so that a unit's start past the
# last key still fits
_NARROW_KEY_BITS = 30


def distinct_sectors(
    group: np.ndarray, sector: np.ndarray, unit_of_group: np.ndarray | int,
    unit_sizes: np.ndarray | None = None, marked: np.ndarray | None = None,
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """Distinct (group, sector) pairs per unit: the transactions each warp step issues.

    ``group`` numbers warp steps globally; ``unit_of_group`` maps a step to its warp unit (a
    nondecreasing array, or an int g meaning unit = step // g), so that each unit's keys are
    one range of the sorted keys. Counts run up to the last unit with a step.
    ``unit_sizes``, the number of elements of each unit where the caller knows it, spares a
    search of the sorted keys for where each unit's range starts. ``marked``: a flag per
    element; then also the distinct pairs per unit among the marked elements (the
    transactions of another instruction of those lanes at the same addresses, a store after
    a load), from the same sort, as a second array of the same length.
    """
    if group.size == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty if marked is None else (empty, empty)
    bits = int(sector.max()).bit_length()
    # a step indexes unit_of_group, so it is below its size: no pass for the steps' maximum
    last_group = (unit_of_group.size - 1 if isinstance(unit_of_group, np.ndarray)
                  else int(group.max()))
    if last_group.bit_length() + bits + (marked is not None) <= _NARROW_KEY_BITS:
        keys = group.astype(np.int32)  # sorts in half the time of int64 keys
        keys <<= bits
    else:
        keys = group << bits
    keys |= sector
    if marked is not None:  # the flag below the pair: a pair's marked elements sort last
        keys <<= 1
        keys |= marked
        bits += 1
    # the keys come in warp-step order, out of order within a step's lanes: timsort where
    # those are few or come in order, else the default sort
    sort_keys(keys)
    if marked is not None:  # the flags apart (each key's low byte: no int64 temporary)
        sorted_marked = (keys.view(np.uint8)[::keys.itemsize] & 1 if _LITTLE_ENDIAN
                         else keys & 1)
        keys >>= 1
        bits -= 1
    first = np.empty(keys.size, dtype=bool)
    first[0] = True
    np.not_equal(keys[1:], keys[:-1], out=first[1:])
    flag_sets = [first]
    if marked is not None:  # a pair with a marked element ends with one
        last_marked = np.empty(keys.size, dtype=bool)
        last_marked[-1] = True
        last_marked[:-1] = first[1:]
        np.logical_and(last_marked, sorted_marked, out=last_marked)
        flag_sets.append(last_marked)
    if keys.size < _RANGE_COUNT_FROM:
        counts = [np.bincount(_unit_of(compressed(keys, flags) >> bits, unit_of_group))
                  for flags in flag_sets]
        if marked is not None:  # both up to the last unit with a step
            counts[1] = padded_counts(counts[1], counts[0].size)
        return counts[0] if marked is None else (counts[0], counts[1])
    units = int(_unit_of(keys[-1] >> bits, unit_of_group)) + 1
    if unit_sizes is None and units > keys.size * _SEARCHED_UNITS_PER_KEY:
        unit_sizes = np.bincount(_unit_of(keys >> bits, unit_of_group), minlength=units)
    if unit_sizes is not None:
        at = np.zeros(units + 1, dtype=np.int64)
        np.cumsum(unit_sizes[:units], out=at[1:])
    else:
        if isinstance(unit_of_group, int | np.integer):
            unit_start = np.arange(units + 1, dtype=np.int64) * int(unit_of_group)
        else:
            unit_start = unit_of_group.searchsorted(np.arange(units + 1))
        bounds = unit_start << bits
        if keys.dtype == np.int32:  # below 2**30: the bounds past them clipped, not widened
            bounds = np.minimum(bounds, 1 << _NARROW_KEY_BITS).astype(np.int32)
        at = keys.searchsorted(bounds)
    counts = [_range_sums(flags, at, units) for flags in flag_sets]
    return counts[0] if marked is None else (counts[0], counts[1])


def _unit_of(group: np.ndarray, unit_of_group: np.ndarray | int) -> np.ndarray:
    """Each of some warp steps' unit (see ``distinct_sectors``)."""
    if isinstance(unit_of_group, int | np.integer):
        return group // unit_of_group
    return unit_of_group[group]


def _range_sums(flags: np.ndarray, at: np.ndarray, units: int) -> np.ndarray:
    """Each unit's flags, summed over its key range ``at[u]..at[u + 1]``, as bytes into
    int32 where a unit's count fits (casting each flag to int64 costs more than the sum)."""
    flags = flags.view(np.uint8)
    wide = flags.size >= np.iinfo(np.int32).max
    if units >= flags.size * _RUNNING_COUNT_UNITS_PER_KEY:
        # as differences of their running count: a reduceat pays a call of its inner loop
        # per range, several times more where most hold a few keys
        running = np.zeros(flags.size + 1, dtype=np.int64 if wide else np.int32)
        np.cumsum(flags, out=running[1:], dtype=running.dtype)
        return np.diff(running[at]).astype(np.int64)
    # units without keys count none (the last one's range ends at the end of the keys)
    counts = np.zeros(units, dtype=np.int64)
    held = at[1:] > at[:-1]
    counts[held] = np.add.reduceat(flags, at[:-1][held], dtype=np.int64 if wide else np.int32)
    return counts


def row_distinct(rows: np.ndarray) -> np.ndarray:
    """Distinct values of each row of a (steps, lanes) array of sectors, -1 marking an idle
    lane: the transactions of warp steps laid out a row each. Sorts ``rows`` in place (a
    row sort of 32 lanes is several times faster than one sort of all the keys)."""
    rows.sort(axis=1)
    return _sorted_row_distinct(rows)


def _sorted_row_distinct(rows: np.ndarray) -> np.ndarray:
    """``row_distinct`` of rows sorted already (idle lanes, negative, first)."""
    counts = np.count_nonzero(rows[:, 1:] != rows[:, :-1], axis=1) + 1
    counts -= rows[:, 0] < 0
    return counts


def unit_transactions(
    group: np.ndarray,
    word_index: np.ndarray,
    unit_of_group: np.ndarray | int,
    *,
    words_per_sector: int,
    units: int,
    unit_sizes: np.ndarray | None = None,
    marked: np.ndarray | None = None,
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """Transactions per warp unit of one memory instruction: lanes' 32-bit word indices,
    grouped by warp step, counted as distinct sectors (see ``distinct_sectors``; with
    ``marked``, also those of the marked lanes)."""
    counts = distinct_sectors(group, sector_of(word_index, words_per_sector), unit_of_group,
                              unit_sizes, marked)
    if marked is None:
        return padded_counts(counts, units)
    return padded_counts(counts[0], units), padded_counts(counts[1], units)


def ascending_transactions(unit: np.ndarray, sector: np.ndarray, units: int
                           ) -> np.ndarray | None:
    """Per unit, the distinct sectors of one warp step a unit (``unit``: each lane's), where
    the (unit, sector) pairs come in order already (a sweep's slots' own words under C = 1):
    the changes along them, without the sort of ``unit_transactions``; None where they do
    not come in order."""
    if unit.size == 0:
        return np.zeros(units, dtype=np.int64)
    keys = unit << np.int64(int(sector.max()).bit_length())
    keys |= sector
    if not bool((keys[1:] >= keys[:-1]).all()):
        return None
    return np.bincount(compressed(unit, run_starts(keys)), minlength=units)


def row_bounds_transactions(
    group: np.ndarray, vertex: np.ndarray, groups_per_unit: int, *, words_per_sector: int,
    units: int,
) -> np.ndarray:
    """Transactions per warp unit of reading each lane's vertex's row start and row end (two
    instructions of the same ``group`` of lanes): one count over both, each group split in
    two."""
    return unit_transactions(np.concatenate([2 * group, 2 * group + 1]),
                             np.concatenate([vertex, vertex + 1]), 2 * groups_per_unit,
                             words_per_sector=words_per_sector, units=units)


def step_row_bounds_transactions(place: np.ndarray, vertex: np.ndarray, *,
                                 words_per_sector: int, units: int, width: int,
                                 offsets: tuple[int, ...] = (0, 1)) -> np.ndarray:
    """``row_bounds_transactions`` where each unit's lanes (``place``: unit * ``width`` +
    the lane's place in its unit) read their row bounds (or the words ``offsets`` past
    their vertex: (0,), its own word) in one step: each step's sectors laid
    out as a row and the rows sorted, rather than one sort of all the (step, sector) keys.
    Wide rows are sorted once, by vertex: both the row starts' and the row ends' sectors then
    ascend along them. The lanes go into the rows by their flat places (several times
    faster to scatter through than a 2-D index)."""
    if width > _PAIRWISE_UP_TO:
        narrow = int(vertex.max(initial=0)) < np.iinfo(np.int32).max - 1
        rows = np.full((units, width), -2, dtype=np.int32 if narrow else np.int64)
        rows.reshape(-1)[place] = vertex
        rows.sort(axis=1)
        # an idle lane (-2) reads sector -1 either way, and sorts first
        return sum(_sorted_row_distinct(sector_of(rows + offset, words_per_sector))
                   for offset in offsets)
    reads = [sector_of(vertex + offset, words_per_sector) for offset in offsets]
    narrow = int(max(read.max(initial=0) for read in reads)) < np.iinfo(np.int32).max - 1
    rows = np.empty((units, width), dtype=np.int32 if narrow else np.int64)
    counts = np.zeros(units, dtype=np.int64)
    for read in reads:  # e.g. row starts, row ends
        rows.fill(-1)
        rows.reshape(-1)[place] = read
        counts += pairwise_distinct(rows)
    return counts


# Rows of up to this many lanes count their distinct sectors by comparing each lane with the
# earlier ones (6 comparisons for 4 lanes) rather than sorting them
_PAIRWISE_UP_TO = 4


def pairwise_distinct(rows: np.ndarray) -> np.ndarray:
    """``row_distinct`` of a few lanes a row, each lane compared with the row's earlier
    ones: a lane counts if it is busy (not -1) and differs from each of them."""
    counts = (rows[:, 0] >= 0).astype(np.int64)
    for i in range(1, rows.shape[1]):
        new = rows[:, i] >= 0
        for j in range(i):
            new &= rows[:, i] != rows[:, j]
        counts += new
    return counts


def is_power_of_two(x: int) -> bool:
    return x > 0 and x & (x - 1) == 0


def floor_div(values: np.ndarray, divisor: int) -> np.ndarray:
    """``values // divisor`` of non-negative integers: a shift where ``divisor`` is a power
    of two (several times faster)."""
    if is_power_of_two(divisor):
        return values >> (divisor.bit_length() - 1)
    return values // divisor


def sector_of(word_index: np.ndarray, words_per_sector: int) -> np.ndarray:
    """Sector of each 32-bit word index (a shift when the sector holds 2**k words)."""
    return floor_div(word_index, words_per_sector)


def range_sectors(first: np.ndarray, last: np.ndarray, words_per_sector: int) -> np.ndarray:
    """Sectors spanned by the 32-bit words ``first..last`` (inclusive) of each warp step."""
    return last // words_per_sector - first // words_per_sector + 1


def padded_counts(counts: np.ndarray, units: int) -> np.ndarray:
    """Pad a bincount to ``units`` entries."""
    out = np.zeros(units, dtype=np.int64)
    out[: counts.size] = counts
    return out


def ceil_div(a, b):
    return -(-a // b)


def lockstep_list_sectors(
    start: np.ndarray, end: np.ndarray, slots: np.ndarray, *, w: int, k: int, c: int,
    units: int, words_per_sector: int,
) -> np.ndarray:
    """Per warp unit, the distinct sectors of the edge-list reads of lockstep virtual warps,
    in O(vertices) rather than a sort of every lane's key.

    Slot ``slots[i]`` (unit * K * C + virtual warp * C + position, ascending) expands the
    edges ``start[i]..end[i] - 1``, W per step; the vertices must ascend with their slots, so
    that the K virtual warps of a step read ascending, disjoint ranges. A vertex's own steps
    then cost ``steps`` plus the sector boundaries inside a step, and two virtual warps of one
    step can share a sector only in its first steps (j * W <= words - 2), where the count
    takes back each sector a warp shares with the next one. W and the words per sector must
    be powers of two.
    """
    words = words_per_sector
    shift = words.bit_length() - 1  # word to sector
    degree = end - start
    steps = ceil_div(degree, w)
    boundaries = np.where(degree > 0, ((end - 1) >> shift) - (start >> shift), 0)
    if w <= words:  # steps start on multiples of W, so on a boundary only if start % W == 0
        on_step_starts = np.where(start & (w - 1) == 0, boundaries, 0)
    else:  # every later step starts on a boundary if the first does
        on_step_starts = np.where(start & (words - 1) == 0, np.maximum(steps - 1, 0), 0)
    per_unit = k * c
    counts = np.bincount(floor_div(slots, per_unit), weights=steps + boundaries - on_step_starts,
                         minlength=units).astype(np.int64)
    if k == 1:
        return counts
    # bring the virtual warps of one (unit, position) together, in virtual-warp order
    if c == 1:  # one position a unit: its warps are in order already
        lockstep_index = slots
    else:
        within = slots % per_unit
        lockstep_index = (slots - within) + (within % c) * k + within // c
    if c > 1:
        order = stable_order(lockstep_index)
        start, end, lockstep_index = start[order], end[order], lockstep_index[order]
        degree = degree[order]
    # the steps with j * W <= words - 2, each over the vertices still reading (a subset of
    # the previous step's)
    if w == 1:
        sharing = _thread_lockstep_sharing(start, end, floor_div(lockstep_index, k), words)
        return counts - np.bincount(sharing // c, minlength=units)
    reading = np.flatnonzero(degree > 0)
    start, end = start[reading], end[reading]
    position = lockstep_index[reading] // k
    sharing = []  # the position of each warp that shares a sector with the next one
    for j in range(ceil_div(words - 1, w)):
        if j:
            reading = np.flatnonzero(end - start > j * w)
            start, end, position = start[reading], end[reading], position[reading]
        first_sector = (start + j * w) >> shift
        last_sector = (np.minimum(start + (j + 1) * w, end) - 1) >> shift
        next_shares = (position[1:] == position[:-1]) & (last_sector[:-1] == first_sector[1:])
        sharing.append(compressed(position[1:], next_shares))
    if not sharing:  # a sector of one word: no two warps share one
        return counts
    return counts - np.bincount(np.concatenate(sharing) // c, minlength=units)


def _thread_lockstep_sharing(start: np.ndarray, end: np.ndarray, position: np.ndarray,
                             words: int) -> np.ndarray:
    """``lockstep_list_sectors``' sharing warps under W = 1 (step j reads word start + j):
    the position of each warp that shares a sector with the next one still reading, step by
    step, from one key a warp, its position above its word (step j's sector pairs are
    then equal keys + j, shifted), so that each step compresses two arrays, not three."""
    shift = words.bit_length() - 1
    word_bits = int(end.max(initial=0)).bit_length()
    if position.size == 0 or int(position.max()).bit_length() + word_bits > 62:
        word_bits = None
    left = end - start
    reading = np.flatnonzero(left > 0)
    left = left[reading]
    if word_bits is None:  # positions and words do not pack: compared apart
        start, position = start[reading], position[reading]
    else:
        key = position[reading] << np.int64(word_bits)
        key |= start[reading]
    sharing = []
    for j in range(words - 1):
        if j:
            reading = np.flatnonzero(left > j)
            left = left[reading]
            if word_bits is None:
                start, position = start[reading], position[reading]
            else:
                key = key[reading]
        if word_bits is None:
            sector = (start + j) >> shift
            next_shares = (position[1:] == position[:-1]) & (sector[:-1] == sector[1:])
            sharing.append(compressed(position[1:], next_shares))
        else:
            sector = key + j  # the position's bits stay apart: start + j < end
            sector >>= shift
            sharing.append(compressed(key[1:], sector[1:] == sector[:-1]) >> np.int64(word_bits))
    return np.concatenate(sharing)


def thread_list_sectors(
    start: np.ndarray, degree: np.ndarray, place: np.ndarray, *,
    units: int, width: int, words_per_sector: int,
) -> np.ndarray:
    """Per warp unit, the distinct sectors of the edge-list reads of threads that each walk
    their own vertex's list in lockstep (thread mapping, one task a position), in any order,
    without a sort of every lane's key.

    The thread at ``place`` (unit * ``width`` + its lane) reads word ``start + j`` in its
    unit's step j for j below its ``degree``. Each thread's reads count a sector a step,
    less those where the nearest thread reading before it in address order reads the same
    sector: only a thread less than a sector's words after it can, and over the steps where
    both read and none between them does, the steps where the pair shares a sector are a run
    of residues mod the sector's words, counted in closed form. Lists are disjoint but for a
    vertex listed twice in a unit, whose copies read the same words. The words per sector
    must be a power of two.
    """
    words = words_per_sector
    shift = words.bit_length() - 1
    reading = np.flatnonzero(degree > 0)
    owner, s, d = _threads_by_address(start[reading], degree[reading], place[reading],
                                      units, width)
    reads = np.bincount(owner, weights=d, minlength=units).astype(np.int64)
    # pairs (p, i = p + o) of one unit less than a sector apart, with the most steps of the
    # threads between them (those steps read nothing between the pair)
    i = np.flatnonzero(s[1:] - s[:-1] < words) + 1
    i = i[owner[i] == owner[i - 1]]
    between = np.zeros(i.size, dtype=np.int64)
    shares = np.zeros(units, dtype=np.int64)
    for o in range(1, words):  # disjoint lists: o threads apart is at least o words apart
        if o > 1:
            keep = i >= o
            i, between = i[keep], between[keep]
            between = np.maximum(between, d[i - o + 1])
            keep = (owner[i - o] == owner[i]) & (s[i] - s[i - o] < words)
            i, between = i[keep], between[keep]
        if i.size == 0:
            break
        both = np.minimum(d[i - o], d[i])
        live = both > between  # steps between..both - 1: both read, none between them
        later, lo, hi = i[live], between[live], both[live]
        first = s[later - o]
        sharing = words - (s[later] - first)  # residues of first + j below this share
        count = (((first + hi) >> shift) - ((first + lo) >> shift)) * sharing
        count += (np.minimum((first + hi) & (words - 1), sharing)
                  - np.minimum((first + lo) & (words - 1), sharing))
        shares += np.bincount(owner[later], weights=count, minlength=units).astype(np.int64)
    return reads - shares


def _threads_by_address(start: np.ndarray, degree: np.ndarray, place: np.ndarray,
                        units: int, width: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``thread_list_sectors``' threads (of ``degree`` > 0) by address within their units,
    a vertex's first copy in its unit only: each one's unit, start and steps. Each unit's
    keys are a row, sorted: a thread's start above its steps where both fit in 62 bits (a
    vertex's copies, of one start and one degree, make equal keys), else above its lane,
    whose steps are then looked up."""
    step_bits = int(degree.max(initial=0)).bit_length()
    by_steps = int(start.max(initial=0)).bit_length() + step_bits <= 62
    low_bits = step_bits if by_steps else width.bit_length()
    padding = np.iinfo(np.int64).max  # sorts last: the keys take 62 bits at most
    keys = np.full((units, width), padding, dtype=np.int64)
    packed = start.astype(np.int64) << low_bits
    if by_steps:
        packed |= degree
    else:
        packed |= place & (width - 1) if is_power_of_two(width) else place % width
    keys.reshape(-1)[place] = packed
    keys.sort(axis=1)
    keys = keys.reshape(-1)
    address = keys if by_steps else keys >> low_bits
    kept = np.empty(keys.size, dtype=bool)  # a vertex's first copy in its unit, no padding
    kept[0] = True
    np.not_equal(address[1:], address[:-1], out=kept[1:])
    kept[::width] = True
    kept &= keys != padding
    at = np.flatnonzero(kept)
    owner = floor_div(at, width)
    first = keys[at]
    low = first & ((1 << low_bits) - 1)
    first >>= low_bits
    if by_steps:
        return owner, first, low
    steps_of = np.zeros(units * width, dtype=np.int64)
    steps_of[place] = degree
    return owner, first, steps_of[owner * width + low]


def run_sectors(
    group: np.ndarray, word_index: np.ndarray, unit_of_group: np.ndarray, *,
    words_per_sector: int, units: int,
) -> np.ndarray:
    """``unit_transactions`` of a memory instruction whose warp steps each read a run of
    adjacent elements with ascending word indices (a donation box's drain rounds): each
    step's sectors are the changes along its run, counted without a sort."""
    if group.size == 0:
        return np.zeros(units, dtype=np.int64)
    sector = sector_of(word_index, words_per_sector)
    new = run_starts(group)
    new[1:] |= sector[1:] != sector[:-1]
    return np.bincount(unit_of_group[group[new]], minlength=units)
