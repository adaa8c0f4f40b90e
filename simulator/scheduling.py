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


def list_schedule_sparse(
    items: int, slots: int, base: float, listed: np.ndarray, durations: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``list_schedule`` of ``items`` items that all last ``base`` except the ``listed`` ones
    (ascending, with their ``durations``): the listed items' slots and every slot's finish
    time, the same as ``list_schedule`` gives, in O(listed + slots x rounds holding one).

    Every item of the last, partial round must be listed. A full round of unlisted items adds
    ``base`` to every slot and keeps the slots' order, so such rounds are applied in bulk:
    with whole-cycle durations as one addition (sums of integers in float64 do not round),
    else by the same sequence of float additions, once per distinct finish time.
    """
    listed = np.asarray(listed, dtype=np.int64)
    durations = np.asarray(durations, dtype=np.float64)
    base = float(base)
    full = items // slots
    rest = items - full * slots
    if rest and (listed.size < rest or listed[-rest] != full * slots or listed[-1] != items - 1):
        raise ValueError("every item of the last, partial round must be listed")
    in_full = listed.size - rest  # listed items of the full rounds
    owner = np.empty(listed.size, dtype=np.int64)
    if in_full == 0:  # every full round adds base to every slot: all finish together
        finish = _advance(np.zeros(slots), base, full)
        earliest = np.arange(rest)
    else:
        finish = _full_rounds(owner, slots, base, listed[:in_full], durations[:in_full], full)
        earliest = np.argsort(finish, kind="stable")[:rest]
    if rest:
        owner[in_full:] = earliest
        finish[earliest] += durations[in_full:]
    return owner, finish


def _full_rounds(owner: np.ndarray, slots: int, base: float, listed: np.ndarray,
                 durations: np.ndarray, full: int) -> np.ndarray:
    """The full rounds of ``list_schedule_sparse``: fills ``owner`` of the ``listed`` items
    (all in full rounds) and returns the slots' finish times after the ``full`` rounds."""
    rounds = listed // slots
    position = listed - rounds * slots
    new_round = np.empty(listed.size, dtype=bool)
    new_round[0] = True
    np.not_equal(rounds[1:], rounds[:-1], out=new_round[1:])
    starts = new_round.nonzero()[0].tolist()
    spans = zip(starts, starts[1:] + [listed.size], strict=False)
    finish = np.zeros(slots)
    if base.is_integer() and bool((np.floor(durations) == durations).all()):
        # finish times less ``base`` per round: the same order (and ties) as the real ones
        excess = durations - base
        no_faster = bool((excess >= 0).all())
        for a, b in spans:
            at = position[a:b]
            if no_faster:  # untouched slots (0) first, by index, then the few others
                order = (finish == 0).nonzero()[0]
                if at[-1] >= order.size:
                    later = finish.nonzero()[0]
                    order = np.concatenate([order, later[finish[later].argsort(kind="stable")]])
            else:
                order = finish.argsort(kind="stable")
            taken = order[at]
            owner[a:b] = taken
            finish[taken] += excess[a:b]
        finish += full * base
        return finish
    applied = 0  # rounds whose durations finish holds
    for a, b in spans:
        r = int(rounds[a])
        finish = _advance(finish, base, r - applied)
        taken = finish.argsort(kind="stable")[position[a:b]]
        owner[a:b] = taken
        before = finish[taken]
        finish += base
        finish[taken] = before + durations[a:b]
        applied = r + 1
    return _advance(finish, base, full - applied)


def _advance(finish: np.ndarray, base: float, rounds: int) -> np.ndarray:
    """``finish`` after ``rounds`` additions of ``base``, rounded as each addition rounds."""
    if rounds <= 1:
        return finish + base if rounds else finish
    values, inverse = np.unique(finish, return_inverse=True)
    steps = np.full((rounds + 1, values.size), base)
    steps[0] = values
    return np.cumsum(steps, axis=0)[-1][inverse]
