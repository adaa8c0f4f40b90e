"""What a worklist-building launch pushes (``who_pushes_what``), worked out ahead of
its cost because the next launch expands it (``launch_pushes``, ``LaunchPushes``), from every
edge's lane or, for a lockstep launch whose lanes race plainly (BFS), from its storing lanes
alone (``_lockstep_worklist_pushes``, ``WriteSources``). See docs/model.md, "Worklist pushes"
and "Worklist launches in batches"."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simulator.asynchronous import later_steps_see_earlier
from simulator.device import Device
from simulator.expansion import expand_lanes
from simulator.expansion import storing_lanes
from simulator.functional import kept
from simulator.lanes import worklist_first_steps
from simulator.launch import Launch
from simulator.layout import unit_shape
from simulator.layout import worklist_layouts
from simulator.mappings import MAPPINGS
from simulator.pushes import arrival_order
from simulator.pushes import lowering_stores
from simulator.pushes import lowering_winners
from simulator.pushes import racing_stores
from simulator.sectors import floor_div
from simulator.slot_views import full_view
from simulator.sorted_runs import distinct
from simulator.sorted_runs import first_of_each
from simulator.sorted_runs import stable_order
from simulator.strategy import Strategy
from simulator.timing import resident_warps
from simulator.worklist import PushWork
from simulator.worklist import push_work


def who_pushes_what(launch, store_lanes, group, unit_of_step, edges, neighbours, expanding_slots,
                    degree, slot_vertex, layout, n_slots, *, warp_batches, steps_per_unit,
                    resident, launch_of_unit=None, lane_position=None, dedup=False):
    """Who pushes what in a launch that builds a worklist (see ``Launch``; ``degree``: each
    expanding slot's, ``slot_vertex``: every slot's vertex). ``launch_of_unit``: several
    launches that push partitions, viewed together (their items launch after launch).
    ``lane_position``: each lane's position in the launch's edge order, where ``group``,
    ``edges`` and ``neighbours`` hold only the storing lanes' (``EdgeWork``). ``dedup``:
    an in-queue flag lets only each target's first claim push (``first_arrivals``)."""
    empty = np.zeros(0, dtype=np.int64)
    flag_unit = empty
    if launch.pushes == "self":
        is_pushed = np.zeros(slot_vertex.size, dtype=bool)
        size = int(slot_vertex.max(initial=0)) + 1
        pushes_itself = np.zeros(size, dtype=bool)
        pushes_itself[launch.self_pushes[launch.self_pushes < size]] = True
        is_pushed[:n_slots] = pushes_itself[slot_vertex[:n_slots]]
        slots = np.flatnonzero(is_pushed)
        unit = slots // layout.per_unit
        work = push_work(unit, unit * layout.c + slots % layout.c, slots, flag_unit,
                         layout.units, warp_batches)
        return work, slot_vertex[slots]
    if launch.pushes == "partitions":  # an atomic on the flag, the first store pushes
        flag_unit = unit_of_step[group[store_lanes]]
        partition = neighbours[store_lanes] // launch.partition
        if launch_of_unit is not None:  # each launch's partitions apart
            partition = (launch_of_unit[flag_unit] * (int(partition.max(initial=0)) + 1)
                         + partition)
        first = np.zeros(store_lanes.size, dtype=bool)  # in lane order: by thread
        first[first_of_each(partition)] = True
        lanes = store_lanes[first]
    elif launch.write_values is not None:
        values = launch.write_values
        if launch.store_lanes is None:  # the writes' values, by edge
            values = values[launch.writes.searchsorted(edges[store_lanes])]
        if launch.rechecks:  # each lane that read a higher value stores, and pushes
            lanes = store_lanes[later_steps_see_earlier(group[store_lanes],
                                                        neighbours[store_lanes], values)]
        else:
            lanes = lowering_stores(group[store_lanes], neighbours[store_lanes], values,
                                    store_lanes)
    else:
        lanes = racing_stores(group[store_lanes], neighbours[store_lanes], store_lanes)
    lane_group = group[lanes]
    thread = None
    if isinstance(warp_batches, np.ndarray) or not warp_batches:  # each lane's thread (slot)
        if lane_position is not None:  # the pushing lanes' slots alone
            thread = expanding_slots[np.searchsorted(np.cumsum(degree), lane_position[lanes],
                                                     side="right")]
        elif lanes.size * 10 >= edges.size:  # many: each lane's slot by a repeat of them all
            thread = np.repeat(expanding_slots, degree)[lanes]
        else:
            thread = expanding_slots[np.searchsorted(np.cumsum(degree), lanes, side="right")]
    push_unit = unit_of_step[lane_group]
    work = push_work(push_unit, lane_group, thread, flag_unit, layout.units, warp_batches)
    items = neighbours[lanes].astype(np.int64)
    order = None
    if launch.pushes == "targets" and launch.push in ("atomic", "chunked", "block"):
        order = arrival_order(push_unit, lane_group, launch.push, resident,
                              np.cumsum(steps_per_unit) - steps_per_unit)
        items = items[order]
    if not dedup:
        return work, items
    kept = first_arrivals(items)
    won = np.sort(kept if order is None else order[kept])
    won_work = push_work(push_unit[won], lane_group[won], None if thread is None else thread[won],
                         flag_unit, layout.units, warp_batches)
    return won_work.claimed_by(work), items[kept]


def first_arrivals(items: np.ndarray) -> np.ndarray:
    """Where each distinct item first reaches the worklist's tail (ascending): the pushes an
    in-queue flag lets through (``Strategy.dedup``; a target still queued from the launch's
    own worklist is let through too, where the GPU's flag would still be set)."""
    return np.sort(first_of_each(items)) if items.size else np.zeros(0, dtype=np.int64)


@dataclass(frozen=True)
class Pushers:
    """Who pushes in one launch, before ``push_work`` counts them per unit: each pushing
    lane's warp unit and global warp step, and its thread's slot where threads (not warps)
    batch their items (else None); ``units``, ``steps`` and ``slots``: the launch's warp
    units, warp steps and (padded) slots, by which several launches' pushers join."""

    unit: np.ndarray
    step: np.ndarray
    slot: np.ndarray | None
    units: int
    steps: int
    slots: int

    @staticmethod
    def work_of(pushers: list[Pushers]) -> PushWork:
        """The push work of several launches' pushers, launch after launch, counted at once
        (numpy's fixed cost per call paid once, not per launch)."""
        per_unit = pushers[0].slots // max(pushers[0].units, 1)  # a slot's unit: slot // this
        pushes = np.array([p.unit.size for p in pushers])

        def joined(name: str, bound: str) -> np.ndarray:
            sizes = np.array([getattr(p, bound) for p in pushers])
            values = np.concatenate([getattr(p, name) for p in pushers])
            values += np.repeat(np.cumsum(sizes) - sizes, pushes)
            return values

        warp_batches = pushers[0].slot is None
        return push_work(joined("unit", "units"), joined("step", "steps"),
                         None if warp_batches else joined("slot", "slots"),
                         np.zeros(0, dtype=np.int64), sum(p.units for p in pushers),
                         warp_batches, per_unit)


@dataclass(frozen=True, eq=False)
class LaunchPushes:
    """What a worklist-building launch pushes, worked out before its cost (the next launch
    expands it): its full view (its layout's warp ``units``, its active slots, None where
    they are all its slots in order, as a worklist's, and their vertices and degrees), the
    lanes it expands and which of them store (``stores``: in any order), who pushes (per unit
    counters, or the pushers to count, see ``Pushers``), and the items pushed (the next
    worklist: in arrival order, then the targets only deferred vertices store to,
    ``deferred_targets`` of them; ``item_ranks``: where a lean launch pushed them, each one's
    index among its distinct ``targets``, the next BFS level's active vertices)."""

    units: int
    active_slots: np.ndarray | None
    active_vertex: np.ndarray
    active_degree: np.ndarray
    edges: int
    stores: np.ndarray
    pushers: PushWork | Pushers
    items: np.ndarray
    deferred_targets: int = 0
    item_ranks: np.ndarray | None = None  # each item's index among the launch's targets
    targets: np.ndarray | None = None
    claimers: Pushers | None = None  # under dedup, every would-be pusher (``pushers``: won)

    @property
    def store_lanes(self) -> np.ndarray:
        """The storing lanes, ascending."""
        return joined_store_lanes([self])

    @property
    def work(self) -> PushWork:
        """Who pushes, per warp unit."""
        return joined_push_work([self])


def joined_store_lanes(pushes: list[LaunchPushes]) -> np.ndarray:
    """Several launches' storing lanes, as positions in their joined expansion, ascending:
    marked in a table of all their lanes rather than sorted launch by launch."""
    edges = np.array([p.edges for p in pushes])
    offsets = (np.cumsum(edges) - edges).tolist()
    storing = np.zeros(int(edges.sum()), dtype=bool)
    for p, offset in zip(pushes, offsets, strict=True):
        storing[p.stores + offset] = True
    return np.flatnonzero(storing)


def joined_push_work(pushes: list[LaunchPushes]) -> PushWork:
    """Several launches' push work, launch after launch (their units joined)."""
    if all(isinstance(p.pushers, Pushers) for p in pushes):
        work = Pushers.work_of([p.pushers for p in pushes])
        if all(p.claimers is not None for p in pushes):
            work = work.claimed_by(Pushers.work_of([p.claimers for p in pushes]))
        return work
    return PushWork.joined([_own_push_work(p) for p in pushes])


def _own_push_work(pushes: LaunchPushes) -> PushWork:
    """One launch's push work, its claims with it under dedup."""
    if isinstance(pushes.pushers, PushWork):
        return pushes.pushers
    work = Pushers.work_of([pushes.pushers])
    if pushes.claimers is None:
        return work
    return work.claimed_by(Pushers.work_of([pushes.claimers]))


def _launch_pushed(indptr, indices, launch, view, expansion, store_lanes, unit_of_step,
                   neighbours, strategy, device, donated) -> LaunchPushes:
    """``LaunchPushes`` of one launch from its view's expansion (``neighbours``: its edges'
    targets; ``donated``: whether a thread donated)."""
    work, items = who_pushes_what(
        launch, store_lanes, expansion.lanes.group, unit_of_step, expansion.edges, neighbours,
        expansion.slots, expansion.degree, view.slot_vertex, view.layout, view.real_slots,
        warp_batches=(MAPPINGS[strategy.mapping].batches_per_warp(strategy) or donated),
        steps_per_unit=expansion.lanes.steps, resident=resident_warps(strategy, device),
        dedup=bool(strategy.dedup))
    items, deferred_targets = with_deferred_targets(indptr, indices, launch, expansion, items)
    return LaunchPushes(view.layout.units, view.active_slots, view.active_vertex,
                        view.active_degree, expansion.edges.size, store_lanes, work, items,
                        deferred_targets)


def with_deferred_targets(indptr, indices, launch, expansion, items):
    """A launch's pushed ``items`` and after them the targets only its deferred vertices
    store to (the outlier kernel pushes them), with their number (``expansion``: an
    ``_Expansion`` or ``EdgeWork``)."""
    if not expansion.deferred_slots.size or launch.pushes != "targets":
        return items, 0
    needed = np.zeros(indptr.size - 1, dtype=bool)
    needed[indices[launch.writes]] = True
    needed[items] = False
    extra = np.flatnonzero(needed)
    return np.concatenate([items, extra]), extra.size


def launch_pushes(indptr: np.ndarray, indices: np.ndarray, launch: Launch,
                  strategy: Strategy, device: Device, cache: dict | None = None,
                  ) -> LaunchPushes:
    """What a worklist-building launch (``batches_worklists``) pushes, ahead of its cost:
    the next launch needs its items now, ``worklist_kernels`` costs several such launches
    together later. ``cache``: the ``IterationWork.cache`` of the work the launch replays
    (its active vertices and writes), where what follows from that work alone is kept for
    the next strategy (None: worked out again)."""
    if _pushes_follow_storing_lanes(launch, strategy):
        sources = kept(cache, "write_sources",
                       lambda: write_sources(indptr, indices, launch.active, launch.writes))
        pushes = (None if sources is None else
                  _lockstep_worklist_pushes(launch, strategy, device, sources, cache))
        if pushes is not None:
            return pushes
    if _pushes_follow_lowering_lanes(launch, strategy):
        pushes = _lockstep_lowering_pushes(indptr, indices, launch, strategy, device)
        if pushes is not None:
            return pushes
    # its slots' placement only: their reads are counted with the others' later
    layout = worklist_layouts(np.array([launch.slots.size]), strategy, device, None)
    return _laid_out_pushes(indptr, indices, launch, layout, strategy, device)


def _pushes_follow_storing_lanes(launch: Launch, strategy: Strategy) -> bool:
    """Whether ``_lockstep_worklist_pushes`` applies: a worklist launch whose virtual warps
    walk their chunk positions in lockstep (no deferral, donation or redistribution) and
    whose vertices' first copies store plainly and push their targets (BFS)."""
    return (launch.lookup == "worklist" and launch.pushes == "targets"
            and launch.store_lanes is None and launch.write_values is None
            and MAPPINGS[strategy.mapping].lockstep(strategy)
            and strategy.defer_threshold is None)


def _pushes_follow_lowering_lanes(launch: Launch, strategy: Strategy) -> bool:
    """Whether ``_lockstep_lowering_pushes`` applies: a worklist launch whose virtual warps
    walk their chunk positions in lockstep (no deferral, donation or redistribution) and
    whose lanes lower their targets' values (SSSP, CC), its storing lanes given."""
    return (launch.lookup == "worklist" and launch.pushes == "targets"
            and launch.store_lanes is not None and launch.write_values is not None
            and MAPPINGS[strategy.mapping].lockstep(strategy)
            and strategy.defer_threshold is None)


def _lockstep_lowering_pushes(indptr, indices, launch, strategy, device
                              ) -> LaunchPushes | None:
    """``launch_pushes`` of a lockstep worklist launch whose storing lanes lower their
    targets (``_pushes_follow_lowering_lanes``), from those lanes alone: O(slots + stores)
    where laying out every edge's lane is O(edges). None for an empty launch."""
    w, c, k = unit_shape(strategy, device)
    per_unit = k * c
    vertex = launch.slots
    n_slots = vertex.size
    if n_slots == 0:
        return None
    units = -(-n_slots // per_unit)
    first_edge = indptr[vertex].astype(np.int64, copy=False)
    degree = indptr[vertex + 1].astype(np.int64, copy=False) - first_edge
    position_base, steps = worklist_first_steps(degree, w, k, c, units)
    ends = np.add.accumulate(degree)
    edges = int(ends[-1])
    lanes = launch.store_lanes  # ascending positions in the launch's edge order
    slot = ends.searchsorted(lanes, side="right")
    local = lanes - (ends[slot] - degree[slot])
    target = indices[first_edge[slot] + local]
    unit = floor_div(slot, per_unit)
    step = position_base[unit * c + slot % c if c > 1 else unit]
    step += floor_div(local, w) if w > 1 else local
    if launch.rechecks:  # each lane that read a higher value stores, and pushes
        won = np.flatnonzero(later_steps_see_earlier(step, target, launch.write_values))
    else:
        won = lowering_winners(step, target, launch.write_values)
    pushers_of = _pushers_of(unit, step, slot, strategy, units, steps, units * per_unit)
    pushers = pushers_of(won)
    pushed = won
    if launch.push in ("atomic", "chunked", "block"):
        pushed = won[arrival_order(pushers.unit, pushers.step, launch.push,
                                   resident_warps(strategy, device), position_base[::c])]
    items = target[pushed].astype(np.int64, copy=False)
    claimers = None
    if strategy.dedup:
        kept = first_arrivals(items)
        items, claimers, pushers = items[kept], pushers, pushers_of(np.sort(pushed[kept]))
    return LaunchPushes(units, None, vertex, degree, edges, lanes, pushers, items,
                        claimers=claimers)


def _laid_out_pushes(indptr, indices, launch, layout, strategy, device) -> LaunchPushes:
    """``launch_pushes`` of any launch, from the lanes of all its edges."""
    view = full_view(indptr, launch, layout, launch.slots.size)
    expansion = expand_lanes(indptr, view, strategy, device, np.zeros(1, dtype=np.int64),
                             np.array([layout.units]))
    store_lanes = storing_lanes(expansion.edges, expansion.vertices, expansion.degree,
                                launch, indices.size)
    unit_of_step = np.repeat(np.arange(layout.units), expansion.lanes.steps)
    donated = expansion.donating is not None and bool(expansion.donating.any())
    return _launch_pushed(indptr, indices, launch, view, expansion, store_lanes,
                          unit_of_step, indices[expansion.edges], strategy, device, donated)


@dataclass(frozen=True)
class WriteSources:
    """Where each write of a launch comes from: its vertex's index among the launch's
    (ascending) active vertices, its place in that vertex's list, its target and that
    target's index among the launch's distinct ``targets`` (ascending: a BFS level's next
    active vertices); and each active vertex's degree. They follow from the launch's work
    alone, whatever its worklist's order."""

    owner: np.ndarray
    local: np.ndarray
    target: np.ndarray
    target_rank: np.ndarray
    targets: np.ndarray
    active_degree: np.ndarray


def write_sources(indptr: np.ndarray, indices: np.ndarray, active: np.ndarray,
                  writes: np.ndarray) -> WriteSources | None:
    """``WriteSources`` of ascending ``writes`` from the lists of ascending ``active``
    vertices; None where a write lies in no active vertex's list."""
    active = np.asarray(active)
    starts = indptr[active]
    owner = starts.searchsorted(writes, "right") - 1
    if writes.size and owner[0] < 0:
        return None
    local = writes - starts[owner]
    active_degree = (indptr[active + 1] - starts).astype(np.int64, copy=False)
    if bool((local >= active_degree[owner]).any()):
        return None
    narrow = np.int32 if indptr[-1] <= np.iinfo(np.int32).max else np.int64
    target = indices[writes].astype(np.int64)  # as worklists hold them
    targets = distinct(target)
    return WriteSources(owner.astype(narrow), local.astype(narrow), target,
                        targets.searchsorted(target), targets, active_degree)


def _lockstep_worklist_pushes(launch, strategy, device, sources, cache=None
                              ) -> LaunchPushes | None:
    """``launch_pushes`` of a worklist launch whose virtual warps walk their chunk positions
    in lockstep and whose storing lanes race plainly (BFS), from its storing lanes alone
    (``sources``: where its writes come from): O(slots + writes) in a few dozen numpy calls
    on arrays of the launch's size, where laying out every edge's lane costs a small launch
    several times more. None where a slot's vertex is not active or a write's vertex not
    listed."""
    # its slots' placement (``worklist_layouts``): full units of K virtual warps but the last
    w, c, k = unit_shape(strategy, device)
    per_unit = k * c
    vertex = launch.slots
    n_slots = vertex.size
    units = -(-n_slots // per_unit)
    active = np.asarray(launch.active)
    # each slot's vertex's index among the active ones: given (checked), or searched for
    rank = launch.slot_ranks
    if rank is None:
        rank = np.minimum(active.searchsorted(vertex), max(active.size - 1, 0))
    if active.size == 0 or not (_ranked_among_active(launch, active, cache)
                                or bool((active[rank] == vertex).all())):
        return None
    degree = sources.active_degree[rank]
    position_base, steps = worklist_first_steps(degree, w, k, c, units)
    # each write's lane: in the first slot holding its vertex (later copies find it done)
    first_slot = np.full(active.size, n_slots, dtype=np.int64)
    np.minimum.at(first_slot, rank, np.arange(n_slots))
    slot = first_slot[sources.owner]
    if slot.size and int(slot.max()) == n_slots:
        return None
    local = sources.local
    unit = floor_div(slot, per_unit)
    step = position_base[unit * c + slot % c if c > 1 else unit]
    step += floor_div(local, w) if w > 1 else local
    # racing stores: each target pushed by the lanes of the first step that stores to it
    first_step = np.full(sources.targets.size, steps, dtype=np.int64)
    np.minimum.at(first_step, sources.target_rank, step)
    won = (step == first_step[sources.target_rank]).nonzero()[0]
    edge_offset = np.add.accumulate(degree) - degree
    edges = int(edge_offset[-1] + degree[-1])
    lane = edge_offset[slot]  # each write's position in the launch's edge order
    lane += local
    pushers_of = _pushers_of(unit, step, slot, strategy, units, steps, units * per_unit)
    pushers = pushers_of(won)
    if launch.push in ("atomic", "chunked", "block"):
        pushed = won[arrival_order(pushers.unit, pushers.step, launch.push,
                                   resident_warps(strategy, device), position_base[::c],
                                   lane[won], units=units, lanes=edges)]
    else:  # in lane order
        pushed = won[stable_order(lane[won])]
    claimers = None
    if strategy.dedup:
        pushed, claimers = pushed[first_arrivals(sources.target[pushed])], pushers
        pushers = pushers_of(np.sort(pushed))
    return LaunchPushes(units, None, vertex, degree, edges, lane, pushers,
                        sources.target[pushed], item_ranks=sources.target_rank[pushed],
                        targets=sources.targets, claimers=claimers)


def _pushers_of(unit, step, slot, strategy, units, steps, slots):
    """``Pushers`` of the lanes picked from the launch's ``unit``, ``step`` and ``slot``
    arrays (a warp's items batched together where the mapping batches per warp)."""
    warp_batches = MAPPINGS[strategy.mapping].batches_per_warp(strategy)

    def pushers_of(lanes: np.ndarray) -> Pushers:
        return Pushers(unit[lanes], step[lanes], None if warp_batches else slot[lanes], units,
                       steps, slots)
    return pushers_of


def _ranked_among_active(launch: Launch, active: np.ndarray, cache: dict | None) -> bool:
    """Whether the launch's slot ranks, given among ``launch.ranked_among``, are its slots'
    ranks among its ``active`` vertices: the two arrays are equal (compared once per work
    and array ranked among, kept with the work, rather than each slot's rank checked in
    every launch that replays it)."""
    among = launch.ranked_among
    if launch.slot_ranks is None or among is None:
        return False
    kept_among, equal = kept(cache, "ranked among",
                             lambda: (among, bool(np.array_equal(among, active))))
    if kept_among is not among:  # ranks among another array than the kept one
        return bool(np.array_equal(among, active))
    return equal
