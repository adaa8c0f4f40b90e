"""A view's expanded edges reduced to the per-unit counts its launches' costs need
(``EdgeWork``): SIMD steps, the edge-list, neighbour and store sectors, the storing lanes'
steps and targets; a launch too big to lay out at once is laid out in pieces of whole units
(``_pieces``, ``piecewise_edge_work``). See docs/model.md, "Memory"."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import partial

import numpy as np

from simulator.device import Device
from simulator.expansion import expand_lanes
from simulator.expansion import storing_lanes
from simulator.expansion import sweeps_storing_lanes
from simulator.layout import TaskLayout
from simulator.mappings import MAPPINGS
from simulator.sectors import is_power_of_two
from simulator.sectors import lockstep_list_sectors
from simulator.sectors import run_sectors
from simulator.sectors import thread_list_sectors
from simulator.sectors import unit_transactions
from simulator.slot_views import SlotView
from simulator.sorted_runs import distinct_ids
from simulator.sorted_runs import first_of_each
from simulator.sorted_runs import run_starts
from simulator.sorted_runs import stable_order
from simulator.strategy import Strategy

# From this many expanded edges, a launch counts its edge-list reads without the key sort where
# its layout allows (``_list_sectors``); below, the few calls of a small key sort cost less.
_CLOSED_FORM_FROM = 1 << 14

# The same for launches whose vertices do not ascend (a worklist's, runs of sweeps), which
# first put each step's vertices in order: below this, the key sort costs less.
_UNORDERED_CLOSED_FORM_FROM = 1 << 18

# A launch's stores are counted with its neighbours' reads, in their sort, where the storing
# lanes are at least 1/this of its lanes (USA-road-FLA BFS, some 45%: 0.93-0.97x of the time;
# rmat:scale=20's, 3%: 1.06-1.17x, the marks costing more passes over every lane than a sort
# of the stores alone)
_STORES_SORTED_WITH_READS = 4

# Thread-mapped lists in any order are counted as rows of their units' threads where the
# expanding threads fill at least 1/this of the units' places (USA-road-FLA BFS: a
# worklist's fill them, 0.93x of the time; a spatial hybrid's, 1 in 16, 2.6x its sort's)
_ROWS_HELD_PER_SLOT = 2

# A launch that expands more edges than this is laid out in pieces of whole units (of whole
# blocks under donation), each reduced to per-unit counts and its storing lanes before the
# next: some 36 bytes a lane live at once, so a piece holds under 1 GB (rmat:scale=20's
# asynchronous SSSP worklist launch expands 156M edges: 6.2 GB at once)
_PIECE_LANES = 1 << 24


@dataclass(frozen=True, eq=False)
class EdgeWork:
    """A view's expanded edges reduced to what its launches' costs need: per-unit counts (each of
    the layout's units) and the storing lanes' own values, in lane order: their global warp
    steps, and where the launch pushes their targets, edges and (thread mapping) positions
    in its edge order. O(units + stores), not O(lanes): a launch too big to lay out at once
    is laid out in pieces and their work joined (``piecewise_edge_work``)."""

    steps: np.ndarray  # SIMD steps per unit
    pop_steps: np.ndarray | int
    u_a: np.ndarray
    donating: np.ndarray | None
    unit_edges: np.ndarray
    list_sectors: np.ndarray
    read_sectors: np.ndarray
    store_sectors: np.ndarray | int  # the storing lanes' stores (0: none store)
    store_steps: np.ndarray | int  # per unit, the warp steps with a storing lane
    cluster_passes: np.ndarray | None
    unit_of_step: np.ndarray
    store_step: np.ndarray
    store_target: np.ndarray
    store_edge: np.ndarray
    store_position: np.ndarray | None
    slots: np.ndarray  # the expanding slots, with their degrees
    degree: np.ndarray
    deferred_slots: np.ndarray
    deferred_vertices: np.ndarray


def unit_edge_work(indptr, indices, launches, view, strategy, device, segments, ends,
                   launch_of_unit, words, store_lanes=None, first_copy=None,
                   value_words=None) -> EdgeWork:
    """``EdgeWork`` of a view of whole launches (``store_lanes``: where their pushes were
    worked out ahead, ``launch_pushes``; ``first_copy``: see ``storing_lanes``;
    ``value_words``: the neighbours' values a sector, where wider than ids: PageRank's
    doubles)."""
    launch = launches[0]
    pushing = launch.push is not None and store_lanes is None  # pushes to work out here
    layout = view.layout
    units, per_unit = layout.units, layout.per_unit
    count = partial(unit_transactions, words_per_sector=value_words or words, units=units)
    expansion = expand_lanes(indptr, view, strategy, device, segments, ends)
    expanding_slots, expanding_vertices = expansion.slots, expansion.vertices
    degree, edges, lanes = expansion.degree, expansion.edges, expansion.lanes
    simd_steps, group = lanes.steps, lanes.group
    donated = expansion.donating is not None and bool(expansion.donating.any())
    neighbours = indices.take(edges)  # the graph's index type (int32): half the bytes to move
    unit_of_step = np.repeat(np.arange(units), simd_steps)
    # lanes stay in their slot's unit, but for donated ones
    unit_edges = np.bincount(expanding_slots // per_unit, weights=degree,
                             minlength=units).astype(np.int64)
    lane_units = unit_edges  # each unit's lanes
    if donated:
        lane_units = None  # the counts find them among the sorted keys
        given = lanes.given_group
        if lanes.kept is not None and (given is None or given.size * 4 < edges.size):
            # few given lanes: its threads' kept edges and those the box gives it (a count
            # of every lane's unit costs more; a search of the units' ranges too, where the
            # view holds whole blocks of units)
            lane_units = np.bincount(expanding_slots // per_unit, weights=lanes.kept,
                                     minlength=units).astype(np.int64)
            if given is not None:
                lane_units += np.bincount(unit_of_step[given], minlength=units)
    list_sectors = _list_sectors(indptr, edges, expanding_vertices, degree, expansion.starts,
                                 expanding_slots, lanes, unit_of_step, layout, strategy, words,
                                 lane_units)
    if store_lanes is not None:
        pass
    elif len(launches) == 1:
        store_lanes = storing_lanes(edges, expanding_vertices, degree, launch, indices.size,
                                    first_copy)
    elif launch.store_lanes is not None:  # each sweep's own, after the earlier sweeps' edges
        sweep_edges = np.bincount(launch_of_unit[expanding_slots // per_unit],
                                  weights=degree, minlength=segments.size)
        offsets = (np.cumsum(sweep_edges) - sweep_edges).astype(np.int64).tolist()
        store_lanes = np.concatenate([one.store_lanes + offset
                                      for one, offset in zip(launches, offsets, strict=True)])
    else:  # each sweep's writes among its own edges: both keyed by the sweep
        store_lanes = sweeps_storing_lanes(edges, expanding_slots, expanding_vertices, degree,
                                           launches, launch_of_unit, per_unit, indices.size)
    # the neighbours' reads, and the storing lanes' stores to the same words: from one sort
    # where the stores are many (a few more passes over every lane), else from one apiece
    storing = None
    if store_lanes.size * _STORES_SORTED_WITH_READS >= group.size:
        storing = np.zeros(group.size, dtype=bool)
        storing[store_lanes] = True
    read_sectors = count(group, neighbours, unit_of_step,
                         unit_sizes=lane_units, marked=storing)
    store_sectors = store_steps = 0
    if storing is not None:
        read_sectors, store_sectors = read_sectors
    elif store_lanes.size:
        store_sectors = count(group.take(store_lanes), neighbours.take(store_lanes),
                              unit_of_step)
    store_step = group.take(store_lanes)
    if store_lanes.size:
        store_steps_at = distinct_ids(store_step, int(simd_steps.sum()))
        store_steps = np.bincount(unit_of_step[store_steps_at], minlength=units)
    cluster_passes = None
    if lanes.lane is not None:  # narrow SIMD: a step issues only the clusters with a lane
        cluster_passes = unit_transactions(group, lanes.lane // device.simd_width,
                                           unit_of_step, words_per_sector=1, units=units)
    # what the pushes need of the storing lanes: their targets, edges and (threads, not
    # warps, may batch their pushes: their slots are found from them) positions
    store_target = neighbours.take(store_lanes) if pushing else neighbours[:0]
    store_edge = edges.take(store_lanes) if pushing else edges[:0]
    threads_batch = not MAPPINGS[strategy.mapping].batches_per_warp(strategy)
    store_position = store_lanes if pushing and threads_batch else None
    return EdgeWork(simd_steps, lanes.pop_steps, lanes.u_a, expansion.donating, unit_edges,
                    list_sectors, read_sectors, store_sectors, store_steps, cluster_passes,
                    unit_of_step, store_step, store_target, store_edge, store_position,
                    expanding_slots, degree, expansion.deferred_slots,
                    expansion.deferred_vertices)


def _list_sectors(indptr, edges, vertices, degree, starts, expanding_slots, lanes,
                  unit_of_step, layout, strategy, words, lane_units):
    """Per unit, the transactions of the edge-list read indices[e] (the weights' read has
    the same; ``starts``: the vertices' first edges). Big launches over ascending vertices
    skip the sort of every lane's key: lockstep virtual warps are counted per vertex in
    closed form (with donation, the threads' own edges so and the box's drain rounds by
    their runs), and redistribution over one chunk position by its steps' runs (each step
    pops consecutive table entries). ``lane_units``: each unit's lanes, where known."""
    w, k, c, units = layout.w, layout.k, layout.c, layout.units
    m = MAPPINGS[strategy.mapping]
    lockstep = m.lockstep(strategy)
    ascending = k == 1 or bool((vertices[1:] > vertices[:-1]).all())
    if (not ascending and w == 1 and c == 1 and lockstep and is_power_of_two(words)
            and expanding_slots.size * _ROWS_HELD_PER_SLOT >= units * layout.per_unit):
        # threads, each on its own list, in any order, filling most of their units (a
        # worklist's, not a spatial hybrid's partitions, whose rows would be mostly empty):
        # in closed form per pair of threads
        return thread_list_sectors(starts, degree, expanding_slots, units=units,
                                   width=layout.per_unit, words_per_sector=words)
    if (edges.size >= _CLOSED_FORM_FROM and is_power_of_two(words)
            and (ascending or (edges.size >= _UNORDERED_CLOSED_FORM_FROM and lockstep))):
        if lockstep or m.shares_within_block(strategy):
            slots, start, length = expanding_slots, starts, degree
            if not ascending:  # a worklist's vertices, in any order and some twice
                slots, vertices = _lockstep_in_vertex_order(expanding_slots, vertices,
                                                            layout)
                start = indptr[vertices].astype(np.int64)
                length = indptr[vertices + 1] - start
            end = start + (lanes.kept if lanes.kept is not None else length)
            counts = lockstep_list_sectors(start, end, slots, w=w, k=k, c=c,
                                           units=units, words_per_sector=words)
            if lanes.given is not None:
                counts += run_sectors(lanes.given_group, edges[lanes.given],
                                      unit_of_step, words_per_sector=words, units=units)
            return counts
        if c == 1 and m.redistributes:
            return run_sectors(lanes.group, edges, unit_of_step, words_per_sector=words,
                               units=units)
    return unit_transactions(lanes.group, edges, unit_of_step, words_per_sector=words,
                             units=units, unit_sizes=lane_units)


def _lockstep_in_vertex_order(slots: np.ndarray, vertices: np.ndarray, layout: TaskLayout):
    """Slots and vertices that read, step by step, the sectors the given ones read, each
    (unit, position)'s vertices ascending along its virtual warps and each once: the K
    virtual warps of a position read their vertices' j-th W edges in step j whatever their
    order, and a vertex's copies read the same sectors (``lockstep_list_sectors`` wants
    ascending, distinct vertices)."""
    c, per_unit = layout.c, layout.per_unit
    position = (slots // per_unit) * c + slots % c
    key = position << np.int64(int(vertices.max(initial=0)).bit_length())
    key |= vertices
    order = stable_order(key)
    key = key[order]
    kept = run_starts(key)
    order, position = order[kept], position[order[kept]]
    # each vertex's rank among its position's, as its virtual warp
    new_position = run_starts(position)
    first = np.maximum.accumulate(np.where(new_position, np.arange(position.size), 0))
    rank = np.arange(position.size) - first
    new_slots = (position // c) * per_unit + rank * c + position % c
    return new_slots, vertices[order]


def _pieces(view: SlotView, strategy: Strategy, device: Device) -> np.ndarray:
    """Bounds of the view's active slots cut into pieces of about ``_PIECE_LANES`` edges,
    each whole units (whole blocks under donation, whose threads give edges across the
    block's units): [0, size] where one piece holds them all."""
    degree, slots = view.active_degree, view.active_slots
    total = int(degree.sum())
    if total <= _PIECE_LANES or (slots[1:] < slots[:-1]).any():
        return np.array([0, slots.size])
    units_a_piece_keeps = (strategy.block_size // device.warp_size
                           if MAPPINGS[strategy.mapping].shares_within_block(strategy) else 1)
    whole = slots // (view.layout.per_unit * units_a_piece_keeps)
    cuts = np.cumsum(degree).searchsorted(np.arange(_PIECE_LANES, total, _PIECE_LANES),
                                          side="right")
    cuts = whole.searchsorted(whole[cuts[cuts < slots.size]])  # back to a whole's start
    return np.unique(np.concatenate([[0], cuts, [slots.size]]))


def piecewise_edge_work(indptr, indices, launch, view, strategy, device, words,
                        value_words=None) -> EdgeWork | None:
    """``EdgeWork`` of one launch's full view laid out piece by piece (``_pieces``), the
    pieces' per-unit counts added and their storing lanes joined in lane order, their steps
    numbered as the whole launch's; None where one piece holds it all."""
    bounds = _pieces(view, strategy, device)
    if bounds.size == 2:
        return None
    units = view.layout.units
    degree = view.active_degree
    expands = (np.ones(degree.size, dtype=bool) if strategy.defer_threshold is None
               else degree <= strategy.defer_threshold)
    expanding_lanes = np.concatenate([[0], np.cumsum(np.where(expands, degree, 0))])
    expanding_before = np.concatenate([[0], np.cumsum(expands)])
    first_copy = None
    if launch.store_lanes is None and launch.lookup == "worklist":
        # a vertex's first copy in the whole worklist stores, whichever piece holds it
        first_copy = np.zeros(int(expanding_before[-1]), dtype=bool)
        first_copy[first_of_each(view.active_vertex[expands])] = True
    whole = np.zeros(1, dtype=np.int64)
    works = []
    steps_before = 0
    for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
        piece_launch = launch
        if launch.store_lanes is not None:  # ascending lanes: those of the piece's edges
            first_lane, end_lane = expanding_lanes[lo], expanding_lanes[hi]
            at = launch.store_lanes.searchsorted([first_lane, end_lane])
            piece_launch = dataclasses.replace(
                launch, store_lanes=launch.store_lanes[at[0]:at[1]] - first_lane)
        piece = dataclasses.replace(view, active_slots=view.active_slots[lo:hi],
                                    active_vertex=view.active_vertex[lo:hi],
                                    active_degree=degree[lo:hi])
        work = unit_edge_work(indptr, indices, [piece_launch], piece, strategy, device, whole,
                              np.array([units]), None, words, value_words=value_words,
                              first_copy=(None if first_copy is None else
                                          first_copy[expanding_before[lo]:expanding_before[hi]]))
        works.append(dataclasses.replace(
            work, store_step=work.store_step + steps_before,
            store_position=(None if work.store_position is None
                            else work.store_position + expanding_lanes[lo])))
        steps_before += int(work.steps.sum())

    def added(name: str):
        values = [getattr(work, name) for work in works]
        if any(value is None for value in values):
            return None
        return sum(values[1:], values[0])

    def joined(name: str):
        values = [getattr(work, name) for work in works]
        return None if values[0] is None else np.concatenate(values)

    return EdgeWork(*(added(name) for name in (
        "steps", "pop_steps", "u_a", "donating", "unit_edges", "list_sectors", "read_sectors",
        "store_sectors", "store_steps", "cluster_passes")), *(joined(name) for name in (
        "unit_of_step", "store_step", "store_target", "store_edge", "store_position", "slots",
        "degree", "deferred_slots", "deferred_vertices")))
