"""Placing work items on execution slots the way a GPU's block scheduler or a work queue does."""

from __future__ import annotations

import numpy as np

from simulator.sorted_runs import run_index
from simulator.sorted_runs import run_starts
from simulator.sorted_runs import stable_order

# whole_cycle_schedules moves a step's grown keys behind the rest before sorting where they
# are at least 1 in this many of the stepped keys (captured USA-road-FLA BFS schedules, W=32
# and W=8: 0.93x; a 2M-vertex road grid's, W=8: 0.72x, W=32: unchanged; from 1 in 250 its
# W=32 schedules took 1.25x)
_COMPACTED_FROM = 100


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


class RoundOrders:
    """Where a list schedule's full rounds put their items: the rounds from ``starts[i]`` up
    to the next start (or ``rounds``) hand position p to slot ``orders[i][p]``, the p-th by
    the finish times ``finish[i]`` (ties by index). Orders not given are worked out from the
    finish times when first asked for."""

    def __init__(self, starts: list[int], finish: list[np.ndarray] | None, rounds: int,
                 orders: list[np.ndarray] | None = None):
        self.starts = np.asarray(starts)
        self.finish = finish
        self.rounds = rounds
        self._orders: dict[int, np.ndarray] = dict(enumerate(orders or ()))
        self.slots = (orders[0] if orders else finish[0]).size

    def order(self, stretch: int) -> np.ndarray:
        """The slots in the order the rounds of ``stretch`` hand their items out."""
        order = self._orders.get(stretch)
        if order is None:
            order = self._orders[stretch] = finish_order(self.finish[stretch])
        return order

    def owners(self, items: np.ndarray) -> np.ndarray:
        """The slots of ``items`` (ascending indices of items in the full rounds)."""
        rounds = items // self.slots
        stretch = np.searchsorted(self.starts, rounds, side="right") - 1
        position = items - rounds * self.slots
        out = np.empty(items.size, dtype=np.int64)
        cuts = (np.flatnonzero(stretch[1:] != stretch[:-1]) + 1).tolist()
        for a, b in zip([0] + cuts, cuts + [items.size], strict=False):
            if b > a:
                out[a:b] = self.order(int(stretch[a]))[position[a:b]]
        return out

    def slot_sums(self, prefix: np.ndarray) -> np.ndarray:
        """Every slot's sums, per row, of the full rounds' items, from ``prefix`` (rows,
        rounds + 1, slots): each position's running sums over the rounds before."""
        slots = self.slots
        bounds = np.append(self.starts, self.rounds)
        stretch_sums = prefix[:, bounds[1:]] - prefix[:, bounds[:-1]]
        orders = np.concatenate([self.order(k) for k in range(self.starts.size)])
        rows = prefix.shape[0]
        return np.bincount((orders + slots * np.arange(rows)[:, None]).ravel(),
                           weights=stretch_sums.ravel(),
                           minlength=rows * slots).reshape(rows, slots)


def list_schedule_sparse(
    items: int, slots: int, base: float, listed: np.ndarray, durations: np.ndarray,
    *, every_order: bool = False,
) -> tuple[np.ndarray, np.ndarray, RoundOrders]:
    """``list_schedule`` of ``items`` items that all last ``base`` except the ``listed`` ones
    (ascending, with their ``durations``): the listed items' slots and every slot's finish
    time, the same as ``list_schedule`` gives, and where the full rounds put any item, in
    O(listed + slots x rounds holding one). Every item of the last, partial round must be
    listed. ``every_order``: the caller will ask for the slots' order in every round, so keep
    it up to date as the rounds go rather than sort it when asked.

    A full round of unlisted items adds ``base`` to every slot and keeps the slots' order, so
    such rounds are applied in bulk: with whole-cycle durations as one addition (sums of
    integers in float64 do not round), else by the same sequence of float additions, once per
    distinct finish time, noting the rounds at which rounding ties two finish times.
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
        finish, starts, states = _advance(np.zeros(slots), base, full)
        placed = RoundOrders([0] + starts, [np.zeros(slots)] + states, full)
    else:
        finish, placed = _full_rounds(owner, slots, base, listed[:in_full],
                                      durations[:in_full], full, every_order)
    if rest:
        owner[in_full:] = finish_order(finish)[:rest]
        finish[owner[in_full:]] += durations[in_full:]
    return owner, finish, placed


def whole_cycle_schedules(
    items: int, slots: int, base: float, sweep: np.ndarray, listed: np.ndarray,
    durations: np.ndarray, last: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """``list_schedule_sparse`` of several schedules at once (one per row of ``last``): each
    of ``items`` items on ``slots`` slots, all lasting ``base`` except its ``listed`` items
    of the full rounds (by ``sweep``, then ascending; with their ``durations``) and its last,
    partial round's (``last``: every such item's duration). The listed items' slots, every
    last-round item's and every slot's finish times (rows of ``last`` x slots), as
    ``list_schedule`` gives them; None unless every duration is a whole number of cycles and
    no listed item is faster than ``base`` (``list_schedule_sparse`` does those one by one).

    In such rounds a slot that took a slower item stays behind the idle ones, so a round
    hands its items to the idle slots by index, then to the busy ones by finish time. Each
    schedule keeps its slots in that order, the slots a round takes moving back in by their
    new finish times; the schedules advance together, each by its next round holding a
    listed item."""
    base = float(base)
    excess = durations - base
    if not base.is_integer() or (excess < 0).any() or (np.floor(durations) != durations).any():
        return None
    schedules, rest = last.shape
    full = items // slots
    # a slot's key: its finish time less base a round (whole cycles) plus its schedule's
    # offset, above the bits of its index: a schedule's keys ascending are the order its next
    # round hands items out in, and the keys of every schedule ascend row after row
    most = np.bincount(sweep, weights=excess, minlength=schedules).max(initial=0)
    index_bits = (slots - 1).bit_length()
    index_mask = (1 << index_bits) - 1
    span = (int(most) + 1) << index_bits
    if most >= 2**52 or schedules * span >= 2**62:  # sums exact, keys within int64
        return None
    rounds = listed // slots
    position = listed - rounds * slots
    # each listed item's round among its schedule's rounds holding one
    new_round = run_starts(sweep * (full + 1) + rounds)
    group = run_index(new_round)
    first_group = np.zeros(listed.size, dtype=np.int64)
    starts = run_starts(sweep)
    first_group[starts] = group[starts]
    step = group - np.maximum.accumulate(first_group)
    order = stable_order(step)
    bounds = np.append(0, np.cumsum(np.bincount(step))).tolist()
    # the schedules' rows by their rounds holding a listed item, most first: a step
    # advances the schedules with more such rounds than it, the first rows, sorted in place
    rounds_of = np.bincount(sweep[new_round], minlength=schedules)
    row = np.empty(schedules, dtype=np.int64)
    row[np.argsort(-rounds_of, kind="stable")] = np.arange(schedules)
    stepping = (schedules - np.sort(rounds_of).searchsorted(np.arange(len(bounds) - 1),
                                                           side="right")) * slots
    ordered = (np.arange(schedules, dtype=np.int64) * span)[:, None] + np.arange(slots)
    keys = ordered.ravel()
    at = (row[sweep] * slots + position)[order]
    more = excess[order].astype(np.int64) << index_bits
    taken = np.empty(listed.size, dtype=np.int64)
    for a, b, stepped_keys in zip(bounds[:-1], bounds[1:], stepping.tolist(), strict=True):
        now = at[a:b]
        taken[a:b] = keys[now]
        # the taken slots' keys grow by their items' excess: the rows sorted again (timsort
        # merges the few keys out of place into the rest), the grown keys moved behind the
        # others first where they are not so few (then it merges two runs, not one per key)
        if (b - a) * _COMPACTED_FROM > stepped_keys:
            grown = keys[now] + more[a:b]
            keep = np.ones(stepped_keys, dtype=bool)
            keep[now] = False
            staying = stepped_keys - (b - a)
            keys[:staying] = keys[:stepped_keys][keep]
            keys[staying:stepped_keys] = grown
        else:
            keys[now] += more[a:b]
        keys[:stepped_keys].sort(kind="stable")
    owner = np.empty(listed.size, dtype=np.int64)
    owner[order] = taken & index_mask
    # every slot's finish after the full rounds: base a round and its items' excess
    finish = np.bincount(sweep * slots + owner, weights=excess,
                         minlength=schedules * slots) + full * base
    # the last round hands its items out in the slots' order after the full rounds
    last_owner = ordered[row, :rest] & index_mask
    finish[(np.arange(schedules)[:, None] * slots + last_owner).ravel()] += last.ravel()
    return owner, last_owner, finish.reshape(schedules, slots)


def finish_order(finish: np.ndarray) -> np.ndarray:
    """The slots by finish time, ties by index: the order a round hands its items out in."""
    return np.argsort(finish, kind="stable")


def _full_rounds(owner: np.ndarray, slots: int, base: float, listed: np.ndarray,
                 durations: np.ndarray, full: int, every_order: bool
                 ) -> tuple[np.ndarray, RoundOrders]:
    """The full rounds of ``list_schedule_sparse``: fills ``owner`` of the ``listed`` items
    (all in them) and returns the slots' finish times after the ``full`` rounds and where
    the rounds put their items."""
    rounds = listed // slots
    position = listed - rounds * slots
    new_round = np.empty(listed.size, dtype=bool)
    new_round[0] = True
    np.not_equal(rounds[1:], rounds[:-1], out=new_round[1:])
    round_starts = new_round.nonzero()[0]
    starts = round_starts.tolist()
    spans = zip(starts, starts[1:] + [listed.size], strict=False)
    finish = np.zeros(slots)
    starts, states = [0], [finish.copy()]
    if base.is_integer() and bool((np.floor(durations) == durations).all()):
        # finish times less ``base`` per round: the same order (and ties) as the real ones
        excess = durations - base
        if every_order:
            return _ordered_rounds(owner, slots, base, rounds, position, excess, spans, full)
        # with no item faster than base, the slots still at 0 come first (by index), then
        # the busy ones by finish time and index: only those (the few that took a slower
        # item) are sorted as the rounds go, by integer keys
        no_faster = bool((excess >= 0).all())
        idle, busy = np.arange(slots), None  # None: not sorted since they last changed
        slower = np.add.reduceat(excess > 0, round_starts).tolist()  # per round
        for (a, b), any_slower in zip(spans, slower, strict=True):
            at = position[a:b]
            if not no_faster:
                taken = finish_order(finish)[at]
            elif at[-1] < idle.size:
                taken = idle[at]
            else:
                if busy is None:
                    busy = (finish != 0).nonzero()[0]
                    keys = finish[busy].astype(np.int64) * slots + busy
                    keys.sort()
                    busy = keys % slots
                taken = np.concatenate([idle, busy])[at]
            owner[a:b] = taken
            more = excess[a:b]
            finish[taken] += more
            if no_faster and any_slower:
                idle, busy = (finish == 0).nonzero()[0], None
            starts.append(int(rounds[a]) + 1)
            states.append(finish.copy())
        finish += full * base
        return finish, RoundOrders(starts, states, full)
    applied = 0  # rounds whose durations finish holds
    for a, b in spans:
        r = int(rounds[a])
        finish, more_starts, more_states = _advance(finish, base, r - applied)
        starts += [applied + step for step in more_starts]
        states += more_states
        taken = finish_order(finish)[position[a:b]]
        owner[a:b] = taken
        before = finish[taken]
        finish += base
        finish[taken] = before + durations[a:b]
        applied = r + 1
        starts.append(applied)
        states.append(finish.copy())
    finish, more_starts, more_states = _advance(finish, base, full - applied)
    starts += [applied + step for step in more_starts]
    return finish, RoundOrders(starts, states + more_states, full)


def _ordered_rounds(owner: np.ndarray, slots: int, base: float, rounds: np.ndarray,
                    position: np.ndarray, excess: np.ndarray, spans, full: int
                    ) -> tuple[np.ndarray, RoundOrders]:
    """``_full_rounds`` with whole-cycle durations, the slots' order kept up to date round by
    round: the taken slots leave it and go back in by their new finish times (less ``base``
    a round), ties by index."""
    finish = np.zeros(slots)
    order = np.arange(slots)
    keys = order.copy()  # finish * slots + slot, ascending along order
    starts, orders = [0], [order]
    for a, b in spans:
        at = position[a:b]
        taken = order[at]
        owner[a:b] = taken
        finish[taken] += excess[a:b]
        stay = np.ones(slots, dtype=bool)
        stay[at] = False
        kept_order, kept_keys = order[stay], keys[stay]
        new_keys = finish[taken].astype(np.int64) * slots + taken
        by_key = new_keys.argsort()
        new_keys = new_keys[by_key]
        # where the taken slots go back: ascending, one place further for each before
        back = np.searchsorted(kept_keys, new_keys) + np.arange(new_keys.size)
        stay[:] = True
        stay[back] = False
        order = np.empty(slots, dtype=np.int64)
        order[back] = taken[by_key]
        order[stay] = kept_order
        keys = np.empty(slots, dtype=np.int64)
        keys[back] = new_keys
        keys[stay] = kept_keys
        starts.append(int(rounds[a]) + 1)
        orders.append(order)
    finish += full * base
    return finish, RoundOrders(starts, None, full, orders)


def _advance(finish: np.ndarray, base: float, rounds: int
             ) -> tuple[np.ndarray, list[int], list[np.ndarray]]:
    """``finish`` after ``rounds`` additions of ``base``, rounded as each addition rounds,
    and the additions after which rounding tied finish times and so changed their order,
    with the finish times then."""
    if rounds == 0:
        return finish, [], []
    values, inverse = np.unique(finish, return_inverse=True)
    steps = np.full((rounds + 1, values.size), base)
    steps[0] = values
    sums = np.cumsum(steps, axis=0)
    ties = (sums[:, 1:] == sums[:, :-1]).sum(axis=1)
    changed = (np.flatnonzero(np.diff(ties)) + 1).tolist()
    return sums[-1][inverse], changed, [sums[step][inverse] for step in changed]
