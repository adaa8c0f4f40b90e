"""Which storing lanes push their target, and the order pushed items take their places on the
worklist's tail (docs/model.md, "Worklist pushes"): plain racing stores (BFS), lowering
with atomicMin (SSSP, CC), and the arrival order of atomic and chunked pushes."""

from __future__ import annotations

from functools import cache
from functools import lru_cache

import numpy as np

from simulator.sorted_runs import dense_ranks
from simulator.sorted_runs import lexicographic_order
from simulator.sorted_runs import run_starts
from simulator.sorted_runs import scattered_order
from simulator.sorted_runs import sort_keys
from simulator.sorted_runs import stable_order


def arrival_order(unit: np.ndarray, step: np.ndarray, push: str, resident: int,
                  unit_first_step: np.ndarray, lane: np.ndarray | None = None, *,
                  units: int | None = None, lanes: int | None = None) -> np.ndarray:
    """The order in which pushes (their warp unit and global warp step, in lane order, or in
    any order with their ``lane``) take their places on the queue's tail: the units of the
    first ``resident`` warps run at once, the later ones as places free up, so by wave of
    ``resident`` units first; within a wave, atomic pushes by the step of its unit they
    issue in (a unit's steps follow each other), chunked ones when their unit's batch is
    complete; pushes of one wave and step come from concurrent warps, which reach the tail
    in no fixed order (a fixed scramble of the unit ids stands for it); a warp's own pushes
    keep lane order. ``units``, ``lanes``: the launch's, where known (bounds on the ids that
    spare a pass over them)."""
    if unit.size == 0:
        return np.zeros(0, dtype=np.int64)
    last_unit = units - 1 if units is not None else int(unit.max())
    wave = unit // resident if last_unit >= resident else None
    in_unit = step - unit_first_step[unit] if push in ("atomic", "block") else None
    wave_bits = 0 if wave is None else (last_unit // resident).bit_length()
    in_bits = 0 if in_unit is None else int(in_unit.max()).bit_length()
    lane_bits = (0 if lane is None else (lanes - 1).bit_length() if lanes is not None
                 else int(lane.max()).bit_length())
    bits = wave_bits + in_bits + _SCRAMBLE_BITS + lane_bits
    rank_bits = last_unit.bit_length()
    if lane is not None and wave is None and max(lane_bits, in_bits + rank_bits) <= 16:
        # a launch of one wave, with few lanes: by lane, then stably by step and the rank of
        # its unit's scramble among the launch's, two radix sorts of 16-bit keys (a fifth
        # of one comparison sort of the packed keys)
        by_lane = np.argsort(lane.astype(np.uint16), kind="stable")
        if in_unit is None:  # the units' ranks among all 2**16 keep their scrambles' order
            group = _all_scramble_ranks()[unit[by_lane]]
        else:  # the ranks among the launch's own units, below the step's bits
            group = _scramble_ranks(last_unit + 1)[unit[by_lane]]
            group |= in_unit[by_lane].astype(np.uint16) << rank_bits
        return by_lane[np.argsort(group, kind="stable")]
    if last_unit >= 1 << 31 or bits > 63:  # the columns apart
        columns = [wave, in_unit, _scrambled(unit), lane]
        return lexicographic_order([c for c in columns if c is not None])
    # one key: the scramble, the columns above it, the lane below
    key = _unit_scrambles(last_unit + 1)[unit]
    if in_unit is not None:
        key |= in_unit.astype(np.int64, copy=False) << _SCRAMBLE_BITS
    if wave is not None:
        key |= wave.astype(np.int64) << (_SCRAMBLE_BITS + in_bits)
    if lane is not None:
        key <<= lane_bits
        key |= lane
    return scattered_order(key, bits)


_SCRAMBLE_MULTIPLIER = 2654435761  # Knuth's multiplicative hash, odd: a bijection mod 2**32
_SCRAMBLE_BITS = 32
_UNIT_SCRAMBLES = np.zeros(0, dtype=np.int64)


def _unit_scrambles(units: int) -> np.ndarray:
    """``_scrambled`` of unit ids 0 up to at least ``units`` - 1, kept and grown as needed:
    a gather from it costs less than scrambling each push's unit."""
    global _UNIT_SCRAMBLES
    if _UNIT_SCRAMBLES.size < units:
        _UNIT_SCRAMBLES = _scrambled(np.arange(max(units, 2 * _UNIT_SCRAMBLES.size)))
    return _UNIT_SCRAMBLES


@lru_cache(maxsize=256)  # launches of up to 2**16 units: 128 kB a table at most
def _scramble_ranks(units: int) -> np.ndarray:
    """Each of ``units`` unit ids' rank among their scrambles (uint16; at most 2**16 units),
    kept per count of units: the order of ``_scrambled`` among a launch's units."""
    ranks = np.empty(units, dtype=np.uint16)
    ranks[np.argsort(_unit_scrambles(units)[:units])] = np.arange(units, dtype=np.uint16)
    ranks.flags.writeable = False
    return ranks


@cache
def _all_scramble_ranks() -> np.ndarray:
    """``_scramble_ranks`` of all 2**16 unit ids: among any first units, their order is
    their scrambles' (one table for every launch, where a table per count of units, 455 of
    them over USA-road-FLA's chunked BFS launches, would not stay cached)."""
    return _scramble_ranks.__wrapped__(1 << 16)


def _scrambled(unit: np.ndarray) -> np.ndarray:
    """A fixed scramble of warp unit ids (distinct ids stay distinct)."""
    return ((unit.astype(np.uint64) * np.uint64(_SCRAMBLE_MULTIPLIER))
            & np.uint64((1 << _SCRAMBLE_BITS) - 1)).astype(np.int64)


def racing_stores(step: np.ndarray, target: np.ndarray, lanes: np.ndarray) -> np.ndarray:
    """The storing lanes that push their target under plain stores (BFS), ascending: see
    ``racing_winners``."""
    if lanes.size == 0:
        return lanes
    winners = lanes[racing_winners(step, target)]
    sort_keys(winners)  # often in order
    return winners


def racing_winners(step: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Which storing lanes (given by their warp step and target) push their target under
    plain stores, as indices in no set order: all lanes of the first warp step (in step
    order) that stores to it read the old value before any store lands, so each pushes (the
    worklist's duplicates); lanes of later steps see the store and push nothing."""
    if step.size == 0:
        return np.zeros(0, dtype=np.int64)
    targets = int(target.max()) + 1
    if step.size * 8 >= targets:  # many stores: each target's first step through a table
        # of int32 where the steps fit: the table's random reads and writes cost less
        narrow = np.int32 if int(step.max()) < np.iinfo(np.int32).max else np.int64
        step = step.astype(narrow, copy=False)
        first_step = np.full(targets, np.iinfo(narrow).max, dtype=narrow)
        np.minimum.at(first_step, target, step)
        return np.flatnonzero(step == first_step[target])
    key = target.astype(np.int64) << np.int64(int(step.max()).bit_length())
    key |= step
    order = stable_order(key)
    ordered_step = step[order]
    first_of_target = run_starts(target[order])
    first_step = np.maximum.accumulate(np.where(first_of_target, np.arange(order.size), 0))
    return order[ordered_step == ordered_step[first_step]]


def lowering_stores(step: np.ndarray, target: np.ndarray, value: np.ndarray,
                    lanes: np.ndarray) -> np.ndarray:
    """The storing lanes that push their target when each lowers it with atomicMin and pushes
    only if the old value it returns was higher: in (step, lane) order, those whose value is
    below every earlier one stored to that target (the first always is: it improves on the
    value before the launch). Ties push once."""
    if lanes.size == 0:
        return lanes
    ascending = bool((lanes[1:] > lanes[:-1]).all())  # else their order breaks ties
    return np.sort(lanes[_lowering(step, target, value, None if ascending else lanes)])


def lowering_winners(step: np.ndarray, target: np.ndarray, value: np.ndarray) -> np.ndarray:
    """``lowering_stores`` of lanes given in lane order, as their indices (ascending)."""
    if step.size == 0:
        return np.zeros(0, dtype=np.int64)
    return np.sort(_lowering(step, target, value, None))


def _lowering(step, target, value, lanes):
    """Indices of the lanes that lower their target (in no set order): see
    ``lowering_stores``; ``lanes``: their order where it is not the one given."""
    by = [target, step] if lanes is None else [target, step, lanes]
    order = lexicographic_order(by)
    new_target = run_starts(target[order])
    starts = np.flatnonzero(new_target)
    sizes = np.diff(starts, append=order.size)
    if starts.size == order.size:  # every target stored to once: each lane lowers it
        return order
    # only the lanes of targets stored to more than once can fail to lower theirs
    shared = np.flatnonzero(np.repeat(sizes > 1, sizes))
    lowers = np.ones(order.size, dtype=bool)
    lowers[shared] = False
    lowers[shared[_records(value.take(order.take(shared)),
                           new_target.take(shared))]] = True
    return np.compress(lowers, order)


# ``_records`` drops lanes an earlier neighbour beats for at most this many passes, then
# ranks what is left
_RECORD_PASSES = 4


def _records(value: np.ndarray, first: np.ndarray) -> np.ndarray:
    """The positions (ascending) of the lanes, in segments (``first``: a lane starts one),
    whose ``value`` is below every earlier one of their segment: the lanes that lower their
    target. A lane that the candidate before it beats or ties is no record, nor needed to
    rule out later ones (that candidate rules them out as well), so a few passes compare
    neighbours among the candidates left, and only those still undecided are ranked (a
    sort of all the values cost half of rmat:scale=20's lowering pushes)."""
    candidates = np.arange(value.size)
    for _ in range(_RECORD_PASSES):
        v = value.take(candidates)
        beaten = np.empty(candidates.size, dtype=bool)
        beaten[0] = False
        np.greater_equal(v[1:], v[:-1], out=beaten[1:])
        beaten &= ~first.take(candidates)
        if not beaten.any():
            return candidates
        candidates = np.compress(~beaten, candidates)
    first, value = first.take(candidates), value.take(candidates)
    # the values' ranks, offset so that each segment's ranks lie below all earlier
    # segments': a running minimum then restarts at every segment
    rank = dense_ranks(value)
    keyed = rank - np.cumsum(first, dtype=np.int64) * (rank.max() + 1)
    running = np.minimum.accumulate(keyed)
    lowers = np.ones(candidates.size, dtype=bool)
    lowers[1:] = first[1:] | (keyed[1:] < running[:-1])
    return np.compress(lowers, candidates)
