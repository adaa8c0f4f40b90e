"""The warp cost model's entry points: the cost of vertex-kernel launches (one, several sweeps, or
several worklist launches), their work laid out on lanes exactly, and its time. The model, its
equations and which module holds each phase: docs/model.md ("The cost model in detail")."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import partial

import numpy as np

from simulator.asynchronous import later_steps_see_earlier
from simulator.auxiliary_kernels import outlier_kernel
from simulator.costs import COSTS
from simulator.costs import InstructionCosts
from simulator.costs import LaunchCost
from simulator.device import Device
from simulator.functional import IterationWork
from simulator.functional import edge_ids
from simulator.functional import kept
from simulator.lanes import Lanes
from simulator.lanes import donating_lanes
from simulator.lanes import lockstep_lanes
from simulator.lanes import positions_holding
from simulator.lanes import redistributed_lanes
from simulator.lanes import sum_positions
from simulator.lanes import worklist_first_steps
from simulator.layout import TaskLayout
from simulator.layout import padded_places
from simulator.layout import status_layouts
from simulator.layout import task_layout
from simulator.layout import unit_shape
from simulator.layout import worklist_layouts
from simulator.pushes import arrival_order
from simulator.pushes import lowering_stores
from simulator.pushes import racing_stores
from simulator.sectors import WORD_BYTES
from simulator.sectors import ceil_div
from simulator.sectors import floor_div
from simulator.sectors import is_power_of_two
from simulator.sectors import lockstep_list_sectors
from simulator.sectors import row_bounds_transactions
from simulator.sectors import run_sectors
from simulator.sectors import thread_list_sectors
from simulator.sectors import unit_transactions
from simulator.sorted_runs import distinct
from simulator.sorted_runs import distinct_ids
from simulator.sorted_runs import first_of_each
from simulator.sorted_runs import member_mask
from simulator.sorted_runs import repeat_runs
from simulator.sorted_runs import run_starts
from simulator.sorted_runs import stable_order
from simulator.strategy import Strategy
from simulator.timing import UnitWork
from simulator.timing import check_and_stage_sisd
from simulator.timing import clean_sweep
from simulator.timing import clean_unit_rows
from simulator.timing import kernels_cycles
from simulator.timing import resident_warps
from simulator.timing import schedule_slots
from simulator.timing import serial_virtual_warps
from simulator.timing import sparse_sweeps_cycles
from simulator.timing import working_set_bytes
from simulator.worklist import PushWork
from simulator.worklist import prefix_scan_launch
from simulator.worklist import push_cost
from simulator.worklist import push_work

# Sweeps cost only the units holding an active vertex and take the others' cost from the
# layout (``timing.clean_sweep``); False costs every unit of every sweep (the reference path).
_SPARSE_SWEEPS = True
# From this many expanded edges, a launch counts its edge-list reads without the key sort where
# its layout allows (``_list_sectors``); below, the few calls of a small key sort cost less.
_CLOSED_FORM_FROM = 1 << 14
# The same for launches whose vertices do not ascend (a worklist's, runs of sweeps), which
# first put each step's vertices in order: below this, the key sort costs less.
_UNORDERED_CLOSED_FORM_FROM = 1 << 18
# A launch that expands more edges than this is laid out in pieces of whole units (of whole
# blocks under donation), each reduced to per-unit counts and its storing lanes before the
# next: some 36 bytes a lane live at once, so a piece holds under 1 GB (rmat:scale=20's
# asynchronous SSSP worklist launch expands 156M edges: 6.2 GB at once)
_PIECE_LANES = 1 << 24


def _positions_in_runs(haystack: np.ndarray, lengths: np.ndarray, needles: np.ndarray,
                       run_shift: np.ndarray | None = None) -> np.ndarray:
    """Indices in ``haystack`` of those ascending ``needles`` it contains, where the haystack
    is runs of consecutive ids, ``lengths`` long, ascending from run to run (the edges of
    ascending vertices; each run's ids plus its ``run_shift`` where given): a search among
    the runs' starts rather than all their ids."""
    held = lengths > 0
    lengths = lengths[held]
    if lengths.size == 0:
        return np.zeros(0, dtype=np.int64)
    offsets = np.cumsum(lengths) - lengths
    starts = haystack[offsets]
    if run_shift is not None:
        starts = starts + run_shift[held]
    if needles.size > starts.size:  # many needles: find where each run starts among them
        run = np.bincount(np.searchsorted(needles, starts), minlength=needles.size + 1)
        run = np.maximum(np.cumsum(run[:-1]) - 1, 0)
    else:
        run = np.maximum(np.searchsorted(starts, needles, side="right") - 1, 0)
    within = needles - starts[run]
    inside = (within >= 0) & (within < lengths[run])
    return within[inside] + offsets[run[inside]]


@dataclass(frozen=True, eq=False)
class Launch:
    """What one vertex-kernel launch visits: its task slots and the work behind them.

    slots: the vertex of each task slot; None for the topology sweep (slot t is vertex t).
    lookup: how a slot finds its vertex and whether it is active: ``status`` (read the
        vertex's status word: the sweep, and the vertices behind a spatial representative),
        or ``worklist`` (read the worklist entry; every entry is active).
    active: the vertices that expand their edges (ascending); writes: the edges whose lane
        stores (ascending). A vertex in several slots expands in each; its first slot stores.
    push: how the launch builds the next worklist (None: it builds none); pushes: what is
        pushed, ``targets`` (each storing lane pushes its neighbour), ``partitions`` (the
        first store into each partition pushes its representative, after an atomic on the
        partition's flag) or ``self`` (the vertices in ``self_pushes`` push themselves).
    count_activations: the launch counts the vertices it activates, each once (a storing
        lane claims its target's flag with an exchange and waits for the old flag; a
        warp-aggregated atomic per warp that stores adds the claims), so the host can decide
        a hybrid's next form.
    grid_stride: launch the resident warps only, each striding over the units (fixed grid).
    write_values: each write's value where writers lower their target with atomicMin and
        push it only when they lowered it (see ``IterationWork``); None: plain stores.
    store_lanes: where every copy of a vertex stores what it lowers (SSSP's and CC's
        launches, run in waves, see ``simulator.asynchronous``), the storing lanes as
        positions in the launch's edge order (slot by slot, CSR order within; ascending),
        ``write_values`` then theirs in that order; None: the first copy of a vertex stores
        ``writes``.
    slot_ranks: each slot's vertex's index among ``active``, where the caller knows it (a
        worklist pushed by a lean launch, ``LaunchPushes.item_ranks``; checked before use).
    ranked_among: the array ``slot_ranks`` index, which gives the slots' vertices at them (a
        lean launch's targets, ``LaunchPushes.targets``): where it equals ``active`` (the
        next BFS level's), the ranks need no check (it is compared once per work, kept).
    partitions: where ``slots`` lists whole partitions of ``partition`` consecutive
        vertices (a spatial hybrid's; the graph's last may be short), those partitions,
        ascending: an active vertex's slot follows from its partition's place among them.
    rechecks: writers lower their target by a plain store, re-read until it holds
        (``Strategy.relax`` store), not atomicMin: no atomic, a dependent re-read a storing
        step, and every lane of a target's first storing step pushes it.
    """

    active: np.ndarray
    writes: np.ndarray
    slots: np.ndarray | None = None
    lookup: str = "status"
    push: str | None = None
    pushes: str = "targets"
    partition: int = 1
    self_pushes: np.ndarray | None = None
    count_activations: bool = False
    grid_stride: bool = False
    write_values: np.ndarray | None = None
    store_lanes: np.ndarray | None = None
    slot_ranks: np.ndarray | None = None
    ranked_among: np.ndarray | None = None
    partitions: np.ndarray | None = None
    rechecks: bool = False

    @classmethod
    def sweep(cls, work: IterationWork, **options) -> Launch:
        """The topology-driven launch of one iteration."""
        return cls(work.active, work.writes, **options)


def _storing_lanes(edges, vertices, degree, launch, m, first_copy=None):
    """Positions, in the expansion's edge order, of the lanes that store (``vertices`` and
    ``degree``: each expanding slot's; ``first_copy``: whether each is its vertex's first
    copy in the worklist, where the expansion is a piece of a launch)."""
    if launch.store_lanes is not None:
        return launch.store_lanes
    writes = launch.writes
    if writes.size == 0 or edges.size == 0:
        return np.zeros(0, dtype=np.int64)
    if launch.lookup == "status":  # distinct ascending vertices: ascending runs of edges
        if edges.size * 4 >= m:  # most of the graph's edges: mark the writes in a table
            return np.flatnonzero(member_mask(edges, writes, m))
        return _positions_in_runs(edges, degree, writes)
    # a worklist may hold a vertex twice: its first slot stores, later copies find it done
    if first_copy is None:
        first_copy = np.zeros(vertices.size, dtype=bool)
        first_copy[first_of_each(vertices)] = True
    lane_stores = member_mask(edges, writes, m)
    lane_stores &= np.repeat(first_copy, degree)
    return np.flatnonzero(lane_stores)


def _list_sectors(indptr, edges, vertices, degree, starts, expanding_slots, lanes,
                  unit_of_step, layout, strategy, words, lane_units):
    """Per unit, the transactions of the edge-list read indices[e] (the weights' read has
    the same; ``starts``: the vertices' first edges). Big launches over ascending vertices
    skip the sort of every lane's key: lockstep virtual warps are counted per vertex in
    closed form (with donation, the threads' own edges so and the box's drain rounds by
    their runs), and redistribution over one chunk position by its steps' runs (each step
    pops consecutive table entries). ``lane_units``: each unit's lanes, where known."""
    w, k, c, units = layout.w, layout.k, layout.c, layout.units
    ascending = k == 1 or bool((vertices[1:] > vertices[:-1]).all())
    if (not ascending and w == 1 and c == 1 and lanes.kept is None
            and not strategy.redistributes and is_power_of_two(words)
            and expanding_slots.size * _ROWS_HELD_PER_SLOT >= units * layout.per_unit):
        # threads, each on its own list, in any order, filling most of their units (a
        # worklist's, not a spatial hybrid's partitions, whose rows would be mostly empty):
        # in closed form per pair of threads
        return thread_list_sectors(starts, degree, expanding_slots, units=units,
                                   width=layout.per_unit, words_per_sector=words)
    if (edges.size >= _CLOSED_FORM_FROM and is_power_of_two(words)
            and (ascending or (edges.size >= _UNORDERED_CLOSED_FORM_FROM
                               and lanes.kept is None and not strategy.redistributes))):
        if not strategy.redistributes:
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
        if c == 1:
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


# Thread-mapped lists in any order are counted as rows of their units' threads where the
# expanding threads fill at least 1/this of the units' places (USA-road-FLA BFS: a
# worklist's fill them, 0.93x of the time; a spatial hybrid's, 1 in 16, 2.6x its sort's)
_ROWS_HELD_PER_SLOT = 2
def _pushes(launch, store_lanes, group, unit_of_step, edges, neighbours, expanding_slots,
            degree, slot_vertex, layout, n_slots, *, warp_batches, steps_per_unit,
            resident, launch_of_unit=None, lane_position=None):
    """Who pushes what in a launch that builds a worklist (see ``Launch``; ``degree``: each
    expanding slot's, ``slot_vertex``: every slot's vertex). ``launch_of_unit``: several
    launches that push partitions, viewed together (their items launch after launch).
    ``lane_position``: each lane's position in the launch's edge order, where ``group``,
    ``edges`` and ``neighbours`` hold only the storing lanes' (``_EdgeWork``)."""
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
            thread = repeat_runs(expanding_slots, degree, edges.size)[lanes]
        else:
            thread = expanding_slots[np.searchsorted(np.cumsum(degree), lanes, side="right")]
    push_unit = unit_of_step[lane_group]
    work = push_work(push_unit, lane_group, thread, flag_unit, layout.units, warp_batches)
    items = neighbours[lanes].astype(np.int64)
    if launch.pushes == "targets" and launch.push in ("atomic", "chunked", "block"):
        items = items[arrival_order(push_unit, lane_group, launch.push, resident,
                                    np.cumsum(steps_per_unit) - steps_per_unit)]
    return work, items


@dataclass(frozen=True, eq=False)
class _SlotView:
    """The units a launch is costed on: all of its layout's, or (a sweep) only those that
    hold an active vertex, with their active slots (ascending) and those slots' vertices
    and degrees: the kernel reads no other slot's.

    real_slots: slots that hold a task (the padding of a partial last unit follows them).
    units: the full layout's unit of each unit here (ascending within a sweep); None when
        these are all.
    segments: where each sweep's units start, when the view holds several sweeps (each one
        holds a unit at least).
    slot_vertex: every slot's vertex (padded) where the launch pushes its own slots, else
        None.
    """

    layout: TaskLayout
    active_slots: np.ndarray
    active_vertex: np.ndarray
    active_degree: np.ndarray
    real_slots: int
    units: np.ndarray | None = None
    segments: np.ndarray | None = None
    slot_vertex: np.ndarray | None = None


def _full_view(indptr: np.ndarray, launch: Launch, layout: TaskLayout, n_slots: int):
    """Every slot of the launch (a sweep's: O(vertices) per launch; a worklist's: O(slots))."""
    n = indptr.size - 1
    slots = np.arange(n) if launch.slots is None else launch.slots.astype(np.int64, copy=False)
    if launch.lookup == "worklist":  # every entry is active
        active_slots, vertex = np.arange(n_slots), slots
    elif (launch.slots is not None and n_slots
          and bool((slots[1:] > slots[:-1]).all())):  # a spatial launch's: find the active
        active = np.asarray(launch.active)
        at = np.minimum(slots.searchsorted(active), n_slots - 1)
        active_slots = at[slots[at] == active]
        vertex = slots[active_slots]
    else:
        active_slots = np.flatnonzero(member_mask(slots, np.asarray(launch.active), n))
        vertex = slots[active_slots]
    degree = (indptr[vertex + 1] - indptr[vertex]).astype(np.int64, copy=False)
    slot_vertex = None
    if launch.pushes == "self":
        slot_vertex = np.zeros(layout.units * layout.per_unit, dtype=np.int64)
        slot_vertex[:n_slots] = slots
    return _SlotView(layout, active_slots, vertex, degree, n_slots, slot_vertex=slot_vertex)


def _dirty_view(indptr: np.ndarray, sweeps: list[np.ndarray], layout: TaskLayout,
                block: int = 1) -> _SlotView:
    """The units of one or more sweeps (each given by its active vertices, ascending) that
    hold an active vertex, sweep after sweep, in O(active vertices + their units); with
    ``block`` > 1, every unit of the blocks of ``block`` units that hold one."""
    unit_keys, at, act, degree = _active_units(indptr, sweeps, layout)
    whole_blocks = None
    if block > 1:
        sweep, unit = np.divmod(unit_keys, layout.units)
        whole_blocks = distinct(sweep * ceil_div(layout.units, block) + unit // block)
    return _view_of_units(indptr.size - 1, layout, len(sweeps), unit_keys, at, act, degree,
                          block, whole_blocks)


def _active_units(indptr: np.ndarray, sweeps: list[np.ndarray], layout: TaskLayout):
    """The units of sweeps' active vertices (keys sweep * units + unit, ascending), each
    active vertex's slot in a view of those units, the vertices (ascending by slot, once
    each) and their degrees."""
    per_unit, layout_units = layout.per_unit, layout.units
    many = len(sweeps) > 1
    act = np.concatenate(sweeps) if many else np.asarray(sweeps[0])
    act_unit = act // per_unit
    if many:  # number each sweep's units after the previous sweep's
        sweep_of = np.repeat(np.arange(len(sweeps)), [sweep.size for sweep in sweeps])
        act_unit = act_unit.astype(np.int64) + sweep_of * layout_units
    if act.size and bool((act_unit[1:] >= act_unit[:-1]).all()):  # each unit's run
        new_unit = run_starts(act_unit)
        unit_keys = act_unit[new_unit].astype(np.int64, copy=False)
        unit_of = np.cumsum(new_unit) - 1
    else:
        unit_keys = (distinct(act_unit).astype(np.int64, copy=False) if act.size
                     else np.zeros(1, dtype=np.int64))
        unit_of = unit_keys.searchsorted(act_unit)
    at = unit_of * per_unit + act % per_unit
    if not bool((at[1:] > at[:-1]).all()):  # active vertices given out of order or twice
        at, first = np.unique(at, return_index=True)
        act = act[first]
    act = act.astype(np.int64, copy=False)
    degree = (indptr[act + 1] - indptr[act]).astype(np.int64, copy=False)
    return unit_keys, at, act, degree


def _view_of_units(n: int, layout: TaskLayout, sweeps: int, unit_keys: np.ndarray,
                   at: np.ndarray, act: np.ndarray, degree: np.ndarray, block: int = 1,
                   whole_blocks: np.ndarray | None = None) -> _SlotView:
    """A view of ``sweeps`` sweeps' units (``unit_keys``, ascending: sweep * units + unit)
    whose slots ``at`` hold the active vertices ``act`` of ``degree``, with every unit of
    the ``whole_blocks`` as well (ascending keys sweep * blocks + block, ``block`` units a
    block; the layout's last block may hold fewer): donation works per block, its warps
    all draining the block's box."""
    layout_units, per_unit = layout.units, layout.per_unit
    if whole_blocks is not None and whole_blocks.size:
        sweep, block_number = np.divmod(whole_blocks, ceil_div(layout_units, block))
        members = ((block_number * block)[:, None] + np.arange(block)).ravel()
        real = members < layout_units
        members = members[real] + np.repeat(sweep * layout_units, block)[real]
        keys = distinct(np.concatenate([unit_keys, members]))
        at = keys.searchsorted(unit_keys)[at // per_unit] * per_unit + at % per_unit
        unit_keys = keys
    units = unit_keys % layout_units if sweeps > 1 else unit_keys
    segments = (np.searchsorted(unit_keys, np.arange(sweeps) * layout_units) if sweeps > 1
                else None)
    padded = units.size * per_unit
    real_slots = padded if sweeps > 1 else padded - max(0, (int(units[-1]) + 1) * per_unit - n)
    return _SlotView(layout.of_units(units), at, act, degree, real_slots, units, segments)


def _joined_view(layout: TaskLayout, units: list[int], active_slots: list[np.ndarray | None],
                 active_vertex: list[np.ndarray], active_degree: list[np.ndarray]
                 ) -> _SlotView:
    """Several launches' full views as one, launch after launch, each keeping its own
    layout's units (numbered on after the previous launch's); ``layout``: their layouts
    joined (``worklist_layouts``, ``status_layouts``). Per launch: its layout's ``units``
    and its active slots (None: all its slots, in order, as a worklist's), their vertices
    and degrees."""
    units = np.array(units)
    segments = np.cumsum(units) - units
    if all(slots is None for slots in active_slots):
        joined_slots = padded_places(np.array([vertex.size for vertex in active_vertex]),
                                     segments, layout.per_unit)
    else:
        joined_slots = np.concatenate([
            (np.arange(vertex.size) if slots is None else slots) + offset
            for slots, vertex, offset in zip(active_slots, active_vertex,
                                             (segments * layout.per_unit).tolist(),
                                             strict=True)])
    return _SlotView(layout, joined_slots,
                     np.concatenate(active_vertex).astype(np.int64, copy=False),
                     np.concatenate(active_degree), layout.units * layout.per_unit,
                     segments=segments)


def _listed_view(indptr: np.ndarray, launches: list[Launch], layout: TaskLayout) -> _SlotView:
    """The full views of several launches that list their slots ascending and find the
    active ones by their status (a spatial hybrid's partitions), joined as ``_joined_view``
    joins them: each launch's active vertices found among its slots (among its listed
    partitions where it lists whole ones), both keyed by the launch, in one search for all."""
    n = indptr.size - 1
    per_unit = layout.per_unit
    sizes = np.array([launch.slots.size for launch in launches])
    units = ceil_div(sizes, per_unit)
    segments = np.cumsum(units) - units
    actives = [np.asarray(launch.active) for launch in launches]
    launch_of = np.repeat(np.arange(len(launches)), [active.size for active in actives])
    active = np.concatenate(actives).astype(np.int64, copy=False)
    if all(launch.partitions is not None for launch in launches):  # by partition
        p = launches[0].partition
        listings, per_launch = [launch.partitions for launch in launches], ceil_div(n, p)
        key, offset = launch_of * per_launch + active // p, active % p
    else:
        p, listings, per_launch = 1, [launch.slots for launch in launches], n
        key, offset = launch_of * n + active, 0
    counts = np.array([listing.size for listing in listings])
    listed = np.concatenate([np.add(listing, base, dtype=np.int64) for listing, base
                             in zip(listings, (np.arange(len(launches)) * per_launch).tolist(),
                                    strict=True)])
    if not bool((listed[1:] > listed[:-1]).all()):
        raise ValueError("_listed_view takes launches whose slots (partitions) ascend")
    at = np.minimum(listed.searchsorted(key), max(listed.size - 1, 0))
    found = (listed[at] == key) if listed.size else np.zeros(key.size, dtype=bool)
    slot = ((at - (np.cumsum(counts) - counts)[launch_of]) * p + offset)[found]
    launch_of, active = launch_of[found], active[found]
    active_slots = slot + segments[launch_of] * per_unit
    degree = (indptr[active + 1] - indptr[active]).astype(np.int64, copy=False)
    return _SlotView(layout, active_slots, active, degree, layout.units * per_unit,
                     segments=segments)


@dataclass(frozen=True, eq=False)
class _Expansion:
    """How a view's active slots run their edges: the slots that expand (the others,
    deferred outliers, go to the outlier kernel), with their vertices and degrees, their
    edges (slot by slot, CSR order within) and lanes, and each unit's donating threads (None
    without donation)."""

    slots: np.ndarray
    vertices: np.ndarray
    degree: np.ndarray
    starts: np.ndarray  # the expanding vertices' first edges
    deferred_slots: np.ndarray
    deferred_vertices: np.ndarray
    edges: np.ndarray
    lanes: Lanes
    donating: np.ndarray | None


def _expansion(indptr: np.ndarray, view: _SlotView, strategy: Strategy, device: Device,
               segments: np.ndarray, ends: np.ndarray) -> _Expansion:
    """Which of a view's active slots expand and where each of their edges runs (``segments``
    and ``ends``: each launch's units in the view)."""
    layout, ws = view.layout, device.warp_size
    active_slots, active_vertex = view.active_slots, view.active_vertex
    slots, vertices, degree = active_slots, active_vertex, view.active_degree
    deferred_slots = deferred_vertices = active_slots[:0]
    if strategy.defer_threshold is not None:
        outlier = degree > strategy.defer_threshold
        if outlier.any():
            deferred_slots, deferred_vertices = active_slots[outlier], active_vertex[outlier]
            expanding = ~outlier
            slots, vertices, degree = slots[expanding], vertices[expanding], degree[expanding]

    starts = indptr[vertices].astype(np.int64, copy=False)
    edges, local = edge_ids(indptr, vertices, with_local=True, lengths=degree, starts=starts)
    donating = None
    # lane positions matter only where a step issues just the clusters holding a lane
    want_lanes = device.cluster_issue and device.simd_width < ws
    if strategy.redistributes:
        lanes = redistributed_lanes(slots, degree, local, layout, ws,
                                     strategy.mapping == "wer+", want_lanes)
    elif strategy.donate_threshold is not None:
        # a view may hold only some units of a block (where no thread of it donates)
        new_block = run_starts(_launch_unit_numbers(view, segments, ends)
                               // (strategy.block_size // ws))
        new_block[segments[segments < new_block.size]] = True  # each launch's own blocks
        unit_block = np.cumsum(new_block) - 1
        lanes, donating = donating_lanes(slots, degree, local, unit_block,
                                          strategy.block_size, strategy.donate_threshold, ws,
                                          want_lanes)
    else:
        lanes = lockstep_lanes(slots, degree, local, layout, want_lanes)
    return _Expansion(slots, vertices, degree, starts, deferred_slots, deferred_vertices, edges,
                      lanes, donating)


def _launch_unit_numbers(view: _SlotView, segments: np.ndarray,
                         ends: np.ndarray) -> np.ndarray:
    """Each unit's number in its own launch's layout."""
    if view.units is not None:
        return view.units
    numbers = np.arange(view.layout.units)
    if segments.size > 1:
        numbers -= np.repeat(segments, ends - segments)
    return numbers


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

    @property
    def store_lanes(self) -> np.ndarray:
        """The storing lanes, ascending."""
        return _joined_store_lanes([self])

    @property
    def work(self) -> PushWork:
        """Who pushes, per warp unit."""
        return _joined_push_work([self])


def _launch_pushed(indptr, indices, launch, view, expansion, store_lanes, unit_of_step,
                   neighbours, strategy, device, donated) -> LaunchPushes:
    """``LaunchPushes`` of one launch from its view's expansion (``neighbours``: its edges'
    targets; ``donated``: whether a thread donated)."""
    work, items = _pushes(launch, store_lanes, expansion.lanes.group, unit_of_step,
                          expansion.edges, neighbours, expansion.slots, expansion.degree,
                          view.slot_vertex, view.layout, view.real_slots,
                          warp_batches=strategy.mapping != "thread" or donated,
                          steps_per_unit=expansion.lanes.steps,
                          resident=resident_warps(strategy, device))
    items, deferred_targets = _with_deferred_targets(indptr, indices, launch, expansion, items)
    return LaunchPushes(view.layout.units, view.active_slots, view.active_vertex,
                        view.active_degree, expansion.edges.size, store_lanes, work, items,
                        deferred_targets)


def _with_deferred_targets(indptr, indices, launch, expansion, items):
    """A launch's pushed ``items`` and after them the targets only its deferred vertices
    store to (the outlier kernel pushes them), with their number (``expansion``: an
    ``_Expansion`` or ``_EdgeWork``)."""
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
    # its slots' placement only: their reads are counted with the others' later
    layout = worklist_layouts(np.array([launch.slots.size]), strategy, device, None)
    return _laid_out_pushes(indptr, indices, launch, layout, strategy, device)


def _pushes_follow_storing_lanes(launch: Launch, strategy: Strategy) -> bool:
    """Whether ``_lockstep_worklist_pushes`` applies: a worklist launch whose virtual warps
    walk their chunk positions in lockstep (no deferral, donation or redistribution) and
    whose vertices' first copies store plainly and push their targets (BFS)."""
    return (launch.lookup == "worklist" and launch.pushes == "targets"
            and launch.store_lanes is None and launch.write_values is None
            and not strategy.redistributes and strategy.donate_threshold is None
            and strategy.defer_threshold is None)


def _laid_out_pushes(indptr, indices, launch, layout, strategy, device) -> LaunchPushes:
    """``launch_pushes`` of any launch, from the lanes of all its edges."""
    view = _full_view(indptr, launch, layout, launch.slots.size)
    expansion = _expansion(indptr, view, strategy, device, np.zeros(1, dtype=np.int64),
                           np.array([layout.units]))
    store_lanes = _storing_lanes(expansion.edges, expansion.vertices, expansion.degree,
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
    warp_batches = strategy.mapping != "thread"
    pushers = Pushers(unit[won], step[won], None if warp_batches else slot[won], units,
                      steps, units * per_unit)
    if launch.push in ("atomic", "chunked", "block"):
        pushed = won[arrival_order(pushers.unit, pushers.step, launch.push,
                                   resident_warps(strategy, device), position_base[::c],
                                   lane[won], units=units, lanes=edges)]
    else:  # in lane order
        pushed = won[stable_order(lane[won])]
    return LaunchPushes(units, None, vertex, degree, edges, lane, pushers,
                        sources.target[pushed],
                        item_ranks=sources.target_rank[pushed], targets=sources.targets)


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


def batches_worklists(launch: Launch) -> bool:
    """Whether ``worklist_kernels`` takes this launch: one with listed slots (a worklist or
    a spatial hybrid's partitions), at least one, that builds a worklist."""
    return launch.slots is not None and launch.slots.size > 0 and launch.push is not None


def worklist_kernels(
    indptr: np.ndarray,
    indices: np.ndarray,
    launches: list[Launch],
    pushes: list[LaunchPushes] | None,
    strategy: Strategy,
    device: Device,
    *,
    reads_weights: bool = False,
    stores_per_vertex: bool = False,
    atomic_updates: bool = False,
    costs: InstructionCosts = COSTS,
    hit_rate: float,
) -> list[LaunchCost]:
    """``vertex_kernel``'s cost of each of several worklist-building launches
    (``batches_worklists``) under one strategy, given what each pushed (``launch_pushes``),
    costed together: as with ``sweep_kernels``, numpy's fixed cost per call is paid once for
    all of them; only working out the pushes, which the next launch needs, goes launch by
    launch. ``pushes`` None: launches that push partitions (a spatial hybrid's, whose next
    launch lists its partitions by itself), their pushes worked out here, together."""
    for launch in launches:
        if not batches_worklists(launch):
            raise ValueError(f"worklist_kernels takes launches with listed slots that push "
                             f"(see batches_worklists), not {launch}")
        if pushes is None and launch.pushes != "partitions":
            raise ValueError(f"worklist_kernels needs the pushes of launches that push "
                             f"{launch.pushes}, worked out ahead (launch_pushes)")
    sizes = np.array([launch.slots.size for launch in launches])
    if launches[0].lookup == "worklist":
        layout = worklist_layouts(sizes, strategy, device,
                                  np.concatenate([launch.slots for launch in launches]))
    else:
        layout = status_layouts(sizes, strategy, device)
    view = (_joined_view(layout, [p.units for p in pushes], [p.active_slots for p in pushes],
                         [p.active_vertex for p in pushes], [p.active_degree for p in pushes])
            if pushes is not None else _listed_view(indptr, launches, layout))
    return _launch_costs(indptr, indices, launches, view, view.layout, strategy, device,
                         reads_weights=reads_weights, stores_per_vertex=stores_per_vertex,
                         atomic_updates=atomic_updates, costs=costs, hit_rate=hit_rate,
                         pushes=pushes)


def _joined_store_lanes(pushes: list[LaunchPushes]) -> np.ndarray:
    """Several launches' storing lanes, as positions in their joined expansion, ascending:
    marked in a table of all their lanes rather than sorted launch by launch."""
    edges = np.array([p.edges for p in pushes])
    offsets = (np.cumsum(edges) - edges).tolist()
    storing = np.zeros(int(edges.sum()), dtype=bool)
    for p, offset in zip(pushes, offsets, strict=True):
        storing[p.stores + offset] = True
    return np.flatnonzero(storing)


def _joined_push_work(pushes: list[LaunchPushes]) -> PushWork:
    """Several launches' push work, launch after launch (their units joined)."""
    if all(isinstance(p.pushers, Pushers) for p in pushes):
        return Pushers.work_of([p.pushers for p in pushes])
    return PushWork.joined([p.pushers if isinstance(p.pushers, PushWork)
                            else Pushers.work_of([p.pushers]) for p in pushes])


def vertex_kernel(
    indptr: np.ndarray,
    indices: np.ndarray,
    launch: Launch | IterationWork,
    strategy: Strategy,
    device: Device,
    *,
    reads_weights: bool = False,
    stores_per_vertex: bool = False,
    atomic_updates: bool = False,
    costs: InstructionCosts = COSTS,
    layout: TaskLayout | None = None,
    hit_rate: float | None = None,
) -> LaunchCost:
    """Cost of one vertex-kernel launch (plus its outlier kernel and worklist scan).

    Pass the ``layout`` of ``task_layout`` to share its work across a run's sweeps, and the
    run's L2 ``hit_rate`` (default: from the graph's working set, see ``working_set_bytes``).
    ``atomic_updates``: storing lanes lower their target with an atomic (atomicMin), as SSSP
    and CC kernels must (BFS stores plainly); a lane that pushes waits for its old value,
    and a sweep keeps activity in flags apart from the values: each storing lane sets its
    target's flag for the next sweep, and each active vertex clears its own.
    """
    if isinstance(launch, IterationWork):
        launch = Launch.sweep(launch)
    n = indptr.size - 1
    sweep = launch.slots is None
    if hit_rate is None:
        hit_rate = device.l2_hit_rate(working_set_bytes(
            n, indices.size, reads_weights=reads_weights, worklist=launch.lookup == "worklist"
        ))
    n_slots = n if sweep else launch.slots.size
    if layout is None:
        listed = None if sweep or launch.lookup == "status" else launch.slots.astype(np.int64)
        layout = task_layout(n_slots, strategy, device, listed)
    if sweep and launch.push is None and _SPARSE_SWEEPS:
        view = _sweeps_view(indptr, [launch.active], layout, strategy, device)
    else:
        view = _full_view(indptr, launch, layout, n_slots)
    return _launch_costs(indptr, indices, [launch], view, layout, strategy, device,
                         reads_weights=reads_weights, stores_per_vertex=stores_per_vertex,
                         atomic_updates=atomic_updates, costs=costs, hit_rate=hit_rate)[0]


def batches_sweeps(launch: Launch, strategy: Strategy) -> bool:
    """Whether ``sweep_kernels`` takes this launch: a plain sweep (no worklist built, no
    activations counted) with an active vertex, costed sparsely."""
    return (_SPARSE_SWEEPS and launch.slots is None and launch.push is None
            and not launch.count_activations and launch.active.size > 0)


def sweep_kernels(
    indptr: np.ndarray,
    indices: np.ndarray,
    launches: list[Launch],
    strategy: Strategy,
    device: Device,
    *,
    reads_weights: bool = False,
    stores_per_vertex: bool = False,
    atomic_updates: bool = False,
    costs: InstructionCosts = COSTS,
    layout: TaskLayout,
    hit_rate: float,
) -> list[LaunchCost]:
    """``vertex_kernel``'s cost of each of several sweeps (``batches_sweeps``) under one
    strategy, costed together: numpy's fixed cost per call is paid once for all of them
    rather than per sweep, which is most of a small sweep's cost (a road graph's hundreds of
    levels hold a few hundred vertices each). Either every sweep gives its storing lanes
    (SSSP's and CC's, ``atomic_updates``) or none does (plain stores: BFS, PageRank)."""
    for launch in launches:
        if not batches_sweeps(launch, strategy):
            raise ValueError(f"sweep_kernels takes plain sweeps with an active vertex only "
                             f"(see batches_sweeps), not {launch}")
    if len({launch.store_lanes is None for launch in launches}) > 1:
        raise ValueError("sweep_kernels takes sweeps that all give their storing lanes or "
                         "none that does")
    view = _sweeps_view(indptr, [launch.active for launch in launches], layout, strategy,
                        device)
    return _launch_costs(indptr, indices, launches, view, layout, strategy, device,
                         reads_weights=reads_weights, stores_per_vertex=stores_per_vertex,
                         atomic_updates=atomic_updates, costs=costs, hit_rate=hit_rate)


def _sweeps_view(indptr: np.ndarray, sweeps: list[np.ndarray], layout: TaskLayout,
                 strategy: Strategy, device: Device) -> _SlotView:
    """The view of sweeps (their active vertices) that their costs need: the units holding
    an active vertex, and with donation every unit of a block in which a thread donates
    (the block's warps drain its box; elsewhere a sweep runs as without donation)."""
    if strategy.donate_threshold is None:
        return _dirty_view(indptr, sweeps, layout)
    unit_keys, at, act, degree = _active_units(indptr, sweeps, layout)
    block = strategy.block_size // device.warp_size
    sweep = unit_keys[at // layout.per_unit] // layout.units
    return _view_of_units(indptr.size - 1, layout, len(sweeps), unit_keys, at, act, degree,
                          block, _donating_blocks(act, degree, sweep, strategy, device,
                                                  layout))


def _donating_blocks(vertex: np.ndarray, degree: np.ndarray, sweep: np.ndarray,
                     strategy: Strategy, device: Device, layout: TaskLayout) -> np.ndarray:
    """The blocks (keys sweep * blocks + block, ascending) in which a thread donates edges
    (``donating_lanes``: it has more than its block's cap), from sweeps' active vertices
    (ascending by sweep, then vertex) alone. A donor's block's cap is at least the
    threshold plus one (the block holds the donor's edges), so only the blocks of vertices
    with more edges than that have their edges summed."""
    warps_per_block = strategy.block_size // device.warp_size
    blocks = ceil_div(layout.units, warps_per_block)
    threshold = strategy.donate_threshold
    if strategy.defer_threshold is not None:  # deferred outliers do not expand
        degree = np.where(degree <= strategy.defer_threshold, degree, 0)
    candidate = np.flatnonzero(degree > threshold + 1)
    if candidate.size == 0:
        return candidate
    key = sweep * blocks + vertex // (layout.per_unit * warps_per_block)
    # each candidate's block's expanding edges, from the running sum of all degrees
    edges_before = np.zeros(degree.size + 1, dtype=np.int64)
    np.cumsum(degree, out=edges_before[1:])
    candidate_key = key[candidate]
    block_edges = (edges_before[key.searchsorted(candidate_key, "right")]
                   - edges_before[key.searchsorted(candidate_key, "left")])
    block = candidate_key % blocks
    block_units = np.minimum(warps_per_block, layout.units - block * warps_per_block)
    cap = np.ceil(block_edges / (block_units * device.warp_size)) + threshold
    return distinct(candidate_key[degree[candidate] > cap])


@dataclass(frozen=True, eq=False)
class _EdgeWork:
    """A view's expanded edges reduced to what its launches' costs need: per-unit counts (each of
    the layout's units) and the storing lanes' own values, in lane order: their global warp
    steps, and where the launch pushes their targets, edges and (thread mapping) positions
    in its edge order. O(units + stores), not O(lanes): a launch too big to lay out at once
    is laid out in pieces and their work joined (``_piecewise_edge_work``)."""

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


def _edge_work(indptr, indices, launches, view, strategy, device, segments, ends,
               launch_of_unit, words, store_lanes=None, first_copy=None) -> _EdgeWork:
    """``_EdgeWork`` of a view of whole launches (``store_lanes``: where their pushes were
    worked out ahead, ``launch_pushes``; ``first_copy``: see ``_storing_lanes``)."""
    launch = launches[0]
    pushing = launch.push is not None and store_lanes is None  # pushes to work out here
    layout = view.layout
    w, units, per_unit = layout.w, layout.units, layout.per_unit
    count = partial(unit_transactions, words_per_sector=words, units=units)
    expansion = _expansion(indptr, view, strategy, device, segments, ends)
    expanding_slots, expanding_vertices = expansion.slots, expansion.vertices
    degree, edges, lanes = expansion.degree, expansion.edges, expansion.lanes
    simd_steps, group = lanes.steps, lanes.group
    donated = expansion.donating is not None and bool(expansion.donating.any())
    neighbours = indices[edges]  # the graph's index type (int32): half the bytes to move
    unit_of_step = repeat_runs(np.arange(units), simd_steps)
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
        store_lanes = _storing_lanes(edges, expanding_vertices, degree, launch, indices.size,
                                     first_copy)
    elif launch.store_lanes is not None:  # each sweep's own, after the earlier sweeps' edges
        sweep_edges = np.bincount(launch_of_unit[expanding_slots // per_unit],
                                  weights=degree, minlength=segments.size)
        offsets = (np.cumsum(sweep_edges) - sweep_edges).astype(np.int64).tolist()
        store_lanes = np.concatenate([one.store_lanes + offset
                                      for one, offset in zip(launches, offsets, strict=True)])
    else:  # each sweep's writes among its own edges: both keyed by the sweep
        store_lanes = _sweeps_storing_lanes(edges, expanding_slots, expanding_vertices, degree,
                                            launches, launch_of_unit, per_unit, indices.size)
    # the neighbours' reads, and the storing lanes' stores to the same words: from one sort
    # where the stores are many (a few more passes over every lane), else from one apiece
    storing = None
    if store_lanes.size * _STORES_SORTED_WITH_READS >= group.size:
        storing = np.zeros(group.size, dtype=bool)
        storing[store_lanes] = True
    # a thread-mapped worklist's lanes read unrelated vertices' neighbours, scrambled
    scattered = (w == 1 and launch.slots is not None and launch.lookup == "worklist"
                 and not donated)
    read_sectors = count(group, neighbours, unit_of_step,
                         unit_sizes=lane_units, marked=storing,
                         scattered=scattered)
    store_sectors = store_steps = 0
    if storing is not None:
        read_sectors, store_sectors = read_sectors
    elif store_lanes.size:
        store_sectors = count(group[store_lanes], neighbours[store_lanes], unit_of_step)
    store_step = group[store_lanes]
    if store_lanes.size:
        store_steps_at = distinct_ids(store_step, int(simd_steps.sum()))
        store_steps = np.bincount(unit_of_step[store_steps_at], minlength=units)
    cluster_passes = None
    if lanes.lane is not None:  # narrow SIMD: a step issues only the clusters with a lane
        cluster_passes = unit_transactions(group, lanes.lane // device.simd_width,
                                           unit_of_step, words_per_sector=1, units=units)
    # what the pushes need of the storing lanes: their targets, edges and (threads, not
    # warps, may batch their pushes: their slots are found from them) positions
    store_target = neighbours[store_lanes] if pushing else neighbours[:0]
    store_edge = edges[store_lanes] if pushing else edges[:0]
    store_position = store_lanes if pushing and strategy.mapping == "thread" else None
    return _EdgeWork(simd_steps, lanes.pop_steps, lanes.u_a, expansion.donating, unit_edges,
                     list_sectors, read_sectors, store_sectors, store_steps, cluster_passes,
                     unit_of_step, store_step, store_target, store_edge, store_position,
                     expanding_slots, degree, expansion.deferred_slots,
                     expansion.deferred_vertices)


def _pieces(view: _SlotView, strategy: Strategy, device: Device) -> np.ndarray:
    """Bounds of the view's active slots cut into pieces of about ``_PIECE_LANES`` edges,
    each whole units (whole blocks under donation, whose threads give edges across the
    block's units): [0, size] where one piece holds them all."""
    degree, slots = view.active_degree, view.active_slots
    total = int(degree.sum())
    if total <= _PIECE_LANES or (slots[1:] < slots[:-1]).any():
        return np.array([0, slots.size])
    units_a_piece_keeps = (strategy.block_size // device.warp_size
                           if strategy.donate_threshold is not None else 1)
    whole = slots // (view.layout.per_unit * units_a_piece_keeps)
    cuts = np.cumsum(degree).searchsorted(np.arange(_PIECE_LANES, total, _PIECE_LANES),
                                          side="right")
    cuts = whole.searchsorted(whole[cuts[cuts < slots.size]])  # back to a whole's start
    return np.unique(np.concatenate([[0], cuts, [slots.size]]))


def _piecewise_edge_work(indptr, indices, launch, view, strategy, device, words
                         ) -> _EdgeWork | None:
    """``_EdgeWork`` of one launch's full view laid out piece by piece (``_pieces``), the
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
        work = _edge_work(indptr, indices, [piece_launch], piece, strategy, device, whole,
                          np.array([units]), None, words,
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

    return _EdgeWork(*(added(name) for name in (
        "steps", "pop_steps", "u_a", "donating", "unit_edges", "list_sectors", "read_sectors",
        "store_sectors", "store_steps", "cluster_passes")), *(joined(name) for name in (
        "unit_of_step", "store_step", "store_target", "store_edge", "store_position", "slots",
        "degree", "deferred_slots", "deferred_vertices")))


def _launch_costs(
    indptr: np.ndarray,
    indices: np.ndarray,
    launches: list[Launch],
    view: _SlotView,
    full_layout: TaskLayout,
    strategy: Strategy,
    device: Device,
    *,
    reads_weights: bool,
    stores_per_vertex: bool,
    atomic_updates: bool,
    costs: InstructionCosts,
    hit_rate: float,
    pushes: list[LaunchPushes] | None = None,
) -> list[LaunchCost]:
    """The cost of each launch of ``view`` (several: sweeps, see ``sweep_kernels``, or
    worklist launches, see ``worklist_kernels``; all alike but for their work): the units'
    work laid out together, then each launch's sums and time from its own units. ``pushes``:
    what each launch pushed, when worked out ahead (``launch_pushes``)."""
    launch = launches[0]  # their form
    n = indptr.size - 1
    ws = device.warp_size
    sweep = launch.slots is None
    layout = view.layout
    w, c, k, units, per_unit = layout.w, layout.c, layout.k, layout.units, layout.per_unit
    words = device.sector_bytes // WORD_BYTES  # 32-bit words per sector
    count = partial(unit_transactions, words_per_sector=words, units=units)
    segments = view.segments if view.segments is not None else np.zeros(1, dtype=np.int64)
    ends = np.append(segments[1:], units)
    # each unit's launch, where the view holds several
    launch_of_unit = (np.repeat(np.arange(segments.size), ends - segments)
                      if segments.size > 1 else None)
    n_slots = (np.full(segments.size, n) if sweep
               else np.array([launch.slots.size for launch in launches]))
    # each launch's layout's units (a sweep's view holds only some of them)
    launch_units = full_layout.units if view.units is not None else ends - segments

    def per_launch(per_unit_values: np.ndarray) -> np.ndarray:
        """Each launch's sum of a per-unit quantity."""
        if per_unit_values.size == 0:
            return np.zeros(segments.size, dtype=per_unit_values.dtype)
        return np.add.reduceat(per_unit_values, segments)

    rechecks = launch.rechecks
    atomic_updates = atomic_updates and not rechecks
    flags = atomic_updates and launch.lookup == "status"
    changed_flag = sweep and launch.push is None and not launch.count_activations
    stores_per_vertex = stores_per_vertex or flags
    active_slots, active_vertex = view.active_slots, view.active_vertex
    edge_work = (_piecewise_edge_work(indptr, indices, launch, view, strategy, device, words)
                 if len(launches) == 1 and view.units is None and pushes is None else None)
    if edge_work is None:
        edge_work = _edge_work(indptr, indices, launches, view, strategy, device, segments,
                               ends, launch_of_unit, words,
                               None if pushes is None else _joined_store_lanes(pushes))
    e = edge_work
    deferred_slots, deferred_vertices = e.deferred_slots, e.deferred_vertices
    launch_donates = (np.zeros(segments.size, dtype=bool) if e.donating is None
                      else per_launch(e.donating) > 0)
    simd_steps = e.steps

    active_pos = positions_holding(active_slots, units, per_unit, c)
    active_positions = sum_positions(active_pos)
    n_deferred = deferred_slots.size
    deferred_positions = deferred_tasks = 0
    if n_deferred:
        deferred_positions = sum_positions(positions_holding(deferred_slots, units, per_unit,
                                                               c))
        deferred_tasks = np.bincount(deferred_slots // per_unit, minlength=units)

    staged = w > 1
    serial = sweep and serial_virtual_warps(layout, device)
    sisd = check_and_stage_sisd(layout, costs, serial)
    # the per-vertex SISD work: once per position in lockstep, once per task when serial
    active_tasks = np.bincount(active_slots // per_unit, minlength=units)
    active_sisd = active_tasks if serial else active_positions
    sisd += costs.setup * active_sisd
    if n_deferred:
        sisd += costs.defer_push * (deferred_tasks if serial else deferred_positions)
    if stores_per_vertex:
        sisd += costs.vertex_store * active_sisd
    if strategy.dynamic:
        sisd += costs.grab
    if strategy.redistributes:  # push_job: a warp scan of the degrees, one table store
        sisd += (costs.scan + costs.table_push) * active_positions
    donated = bool(launch_donates.any())
    if donated:  # the donating threads' shared atomic, the barrier: every unit of the launch
        sisd += costs.donate * np.repeat(launch_donates, ends - segments)
    per_step = costs.edge + (costs.weight if reads_weights else 0)
    simd = per_step * simd_steps.astype(np.float64) + costs.pop * e.pop_steps

    n_active = per_launch(active_tasks)
    n_deferred_per_launch = per_launch(deferred_tasks) if n_deferred else 0
    chunks = ceil_div(n_slots, c)
    useful_sisd = (
        costs.check * n_slots
        + costs.setup * n_active
        + costs.defer_push * n_deferred_per_launch
        + (costs.vertex_store * n_active if stores_per_vertex else 0)
        + (costs.stage * (2 * n_slots + chunks) if staged else 0)
        + (costs.grab * chunks if strategy.dynamic else 0)
    )

    # --- exact sector counts (``_edge_work``) -------------------------------------------------
    unit_edges = e.unit_edges
    stores = e.store_step.size
    sectors = e.list_sectors + e.read_sectors
    if reads_weights:
        sectors += e.list_sectors
    store_requests = 0
    if stores:
        # a flag's store, or the re-read of a plain store, after the store: the same words
        sectors += e.store_sectors * (2 if flags or rechecks else 1)
        store_steps = e.store_steps
        steps_storing = per_launch(store_steps)
        store_requests = steps_storing * (2 if flags or rechecks else 1)
        if changed_flag:
            sectors += store_steps
            store_requests = store_requests + steps_storing
    cluster_passes = e.cluster_passes

    # SISD phase: the layout's per-launch traffic; the thread-based sweep also reads the
    # row bounds of its active vertices (vwarp staged them; worklist slots read them always)
    sectors += layout.static_sectors
    sisd_requests = layout.static_requests
    if launch.lookup == "status" and not staged:
        act = active_slots
        act_group = (act // per_unit) * c + act % c
        # two reads (row start, row end), counted as separate warp steps of one unit
        sectors += row_bounds_transactions(act_group, active_vertex, c, words_per_sector=words,
                                           units=units)
        sisd_requests = sisd_requests + 2 * per_launch(active_positions)
    if stores_per_vertex:
        act = active_slots
        sectors += count((act // per_unit) * c + act % c, active_vertex, c)
        sisd_requests = sisd_requests + per_launch(active_positions)
    if n_deferred:
        sectors += deferred_tasks
    if launch.slots is not None and launch.lookup == "status":
        # the spatial kernel reads its representatives' worklist entries
        sectors += ceil_div(ceil_div(per_unit, launch.partition), words)

    waits = device.atomic_round_trips  # for an atomic's returned value
    round_trips = 2 * simd_steps + waits * deferred_positions
    # finding the slots' vertices: thread-based sweeps read the status, then the active
    # vertices' row bounds; staged (vwarp) sweeps one staging round trip, staged worklist
    # launches two (the entries, then their vertices' row bounds)
    if not staged:
        round_trips += layout.real_positions + active_positions
    else:
        round_trips += 2 if launch.lookup == "worklist" else 1
    if strategy.dynamic:
        round_trips += waits
    if rechecks and stores:  # a storing lane waits for its re-read
        round_trips += store_steps
    memory_per_step = 2 + (1 if reads_weights else 0)
    requests = (memory_per_step * per_launch(simd_steps) + store_requests
                + sisd_requests).astype(np.float64)
    # same-address atomics of a warp step are warp-aggregated (one per warp, as compilers
    # emit them): one queue grab per dynamic unit and one more per resident warp (its last,
    # which finds the queue empty), one outlier push per deferring position
    grabs = (launch_units + schedule_slots(strategy, device)[0]) if strategy.dynamic else 0
    queue_atomics = np.zeros(segments.size, dtype=np.int64) + grabs
    if n_deferred:
        queue_atomics += per_launch(deferred_positions)
    atomics = queue_atomics.copy()
    if changed_flag and stores:
        queue_atomics += steps_storing  # stores, but serialised on one address

    # --- storing lanes' atomics and the worklist they build ---------------------------------
    if stores and (atomic_updates or launch.count_activations or launch.push):
        store_unit = e.unit_of_step[e.store_step]
        if atomic_updates:
            atomics += per_launch(np.bincount(store_unit, minlength=units))
            if launch.push is not None:  # the push decision waits for atomicMin's old value
                round_trips += waits * store_steps
        if launch.count_activations:
            # a vertex is counted once: the lane that stored to it (under atomicMin, once
            # its old value says it lowered it) claims its flag with an exchange and waits
            # for the old flag, then the warp adds its claims with one aggregated atomic
            lanes_storing = np.bincount(store_unit, minlength=units)
            storing = (lanes_storing > 0).astype(np.int64)
            sisd += costs.scan * storing
            queue_atomics += per_launch(storing)
            atomics += per_launch(storing + lanes_storing)
            if launch.push is None:
                round_trips += (2 if atomic_updates else 1) * waits * store_steps
    if launch.push is not None:
        store_lanes = np.arange(stores)  # of the storing lanes' own arrays (``_EdgeWork``)
        if pushes is not None:
            work = _joined_push_work(pushes)
            pushed = [p.items for p in pushes]
            deferred_targets = [p.deferred_targets for p in pushes]
        elif len(launches) == 1:  # one launch, costed as it pushes
            work, items = _pushes(launch, store_lanes, e.store_step, e.unit_of_step,
                                  e.store_edge, e.store_target, e.slots, e.degree,
                                  view.slot_vertex, layout, view.real_slots,
                                  warp_batches=strategy.mapping != "thread" or donated,
                                  steps_per_unit=simd_steps,
                                  resident=resident_warps(strategy, device),
                                  lane_position=e.store_position)
            items, extra_targets = _with_deferred_targets(indptr, indices, launch, e, items)
            pushed, deferred_targets = [items], [extra_targets]
        else:  # several launches that push partitions: all their pushes at once
            warp_batches = (True if strategy.mapping != "thread"
                            else launch_donates[launch_of_unit] if donated else False)
            work, items = _pushes(launch, store_lanes, e.store_step, e.unit_of_step,
                                  e.store_edge, e.store_target, e.slots, e.degree, None,
                                  layout, 0, warp_batches=warp_batches,
                                  steps_per_unit=simd_steps,
                                  resident=resident_warps(strategy, device),
                                  launch_of_unit=launch_of_unit,
                                  lane_position=e.store_position)
            pushed = np.split(items, np.cumsum(per_launch(work.items))[:-1])
            deferred_targets = [0] * segments.size
        extra = push_cost(work, launch.push, device, costs, block_size=strategy.block_size,
                          words_per_sector=words, hit_rate=hit_rate, launch_starts=segments,
                          unit_steps=simd_steps)
        sisd += extra.instructions
        sectors += extra.sectors + work.flag_atomics
        round_trips += extra.round_trips
        tail_atomics = per_launch(extra.queue_atomics)
        queue_atomics += tail_atomics
        atomics += tail_atomics + per_launch(work.flag_atomics)
        requests += per_launch(extra.requests)
        if strategy.dedup and launch.lookup == "worklist":
            # the in-queue flags: each entry clears its own (an exchange, then a fence before
            # it reads its value: a round trip a position); each would-be push claims its
            # target's (a fence, then an exchange whose old flag it waits for), one word a
            # claim and a clear; the tail's pushes are counted for every claim
            sisd += 2 * active_positions + 3 * work.steps
            round_trips += active_positions + (1 + waits) * work.steps
            sectors += active_tasks + work.items
            atomics += per_launch(active_tasks + work.items)
            requests += per_launch(active_positions + work.steps)

    unit_work = UnitWork(sisd, simd, sectors.astype(np.float64), round_trips,
                          cluster_passes=cluster_passes, simd_steps=simd_steps)
    instructions = (per_launch(sisd) + per_launch(simd)).astype(np.float64)
    transactions = per_launch(unit_work.sectors)
    if view.units is None:  # whole launches, each laid out on its own
        timed = kernels_cycles(unit_work, segments, strategy, device, queue_atomics, k == 1,
                               grid_stride=launch.grid_stride, check=costs.check,
                               hit_rate=hit_rate)
    else:
        # the launches' clean units cost alike but for the donation barrier: the launches
        # that donated are timed against that clean sweep, the others against the plain one
        timed = [None] * segments.size
        for with_barrier in np.unique(launch_donates).tolist():
            picked = launch_donates == with_barrier
            clean = clean_sweep(full_layout, strategy, device, costs, with_barrier,
                                launch.grid_stride, hit_rate)
            picked_units, picked_segments, picked_work = view.units, segments, unit_work
            if picked.all():
                # the view's units' clean rows from its own layout (a gather of them from
                # the sweep's clean rows costs several times more)
                clean_rows = clean_unit_rows(layout, strategy, device, costs, with_barrier,
                                             launch.grid_stride, hit_rate)
            else:
                in_picked = np.repeat(picked, ends - segments)
                picked_units, picked_work = view.units[in_picked], unit_work.of_units(in_picked)
                sizes = (ends - segments)[picked]
                picked_segments = np.cumsum(sizes) - sizes
                # np.take: several times faster than fancy indexing along the second axis
                clean_rows = np.take(clean.units, picked_units, axis=1)
            rest_sisd, rest_sectors = clean.rest(clean_rows, picked_segments)
            transactions[picked] += rest_sectors
            instructions[picked] += rest_sisd
            picked_timed = sparse_sweeps_cycles(
                clean, picked_units, picked_segments, clean_rows, picked_work, strategy,
                device, queue_atomics[picked], k == 1, transactions[picked],
                grid_stride=launch.grid_stride, check=costs.check, hit_rate=hit_rate,
            )
            for i, launch_timed in zip(np.flatnonzero(picked), picked_timed, strict=True):
                timed[i] = launch_timed

    simd_issued = ws * per_launch(simd_steps).astype(np.float64)
    edges_expanded = per_launch(unit_edges).astype(np.float64)
    u_a = per_launch(e.u_a)
    out = []
    for i, (cycles, bounds) in enumerate(timed):
        main = LaunchCost(
            cycles=cycles,
            bounds=bounds[None, :],
            launches=1,
            instructions=float(instructions[i]),
            issued_lane_instructions=float(ws * instructions[i]),
            useful_lane_instructions=float(useful_sisd[i] + per_step * edges_expanded[i]),
            simd_issued=float(simd_issued[i]),
            simd_active=float(edges_expanded[i]),
            u_a=float(u_a[i]),
            u_r=float(simd_issued[i] - edges_expanded[i] - u_a[i]),
            requests=float(requests[i]),
            transactions=float(transactions[i]),
            atomics=float(atomics[i]),
            edges=float(edges_expanded[i]),
            tasks=float(n_slots[i]),
            active_tasks=float(n_active[i]),
        )
        if launch.push is not None:
            main.pushed = pushed[i]
            if deferred_targets[i]:
                # the outlier kernel's warps push them, one aggregated tail atomic per warp
                tail = ceil_div(deferred_targets[i], ws)
                main.atomics += tail
                main.cycles += tail * device.atomic_cycles
                main.extra_cycles += tail * device.atomic_cycles
        if launch.push == "prefix":
            main = main + prefix_scan_launch(int(launch_units[i]), device, costs,
                                             block_size=strategy.block_size,
                                             words_per_sector=words, hit_rate=hit_rate)
        if n_deferred and n_deferred_per_launch[i]:
            lo, hi = deferred_slots.searchsorted([segments[i] * per_unit, ends[i] * per_unit])
            main = main + outlier_kernel(
                indptr, indices, deferred_vertices[lo:hi], launches[i], strategy,
                device, reads_weights=reads_weights, costs=costs, hit_rate=hit_rate,
                changed_flag=changed_flag,
            )
        out.append(main)
    return out


# A launch's stores are counted with its neighbours' reads, in their sort, where the storing
# lanes are at least 1/this of its lanes (USA-road-FLA BFS, some 45%: 0.93-0.97x of the time;
# rmat:scale=20's, 3%: 1.06-1.17x, the marks costing more passes over every lane than a sort
# of the stores alone)
_STORES_SORTED_WITH_READS = 4
# Several sweeps' storing lanes are looked up in a table of their writes where the writes
# number at least 1/200 of the graph's edges: clearing the table costs about 0.1 ns an edge,
# searching for a write about 20 ns (measured on this project's machines).
_TABLE_PER_WRITE = 200


def _sweeps_storing_lanes(edges, expanding_slots, vertices, degree, launches, sweep_of_unit,
                          per_unit, m):
    """``_storing_lanes`` of several sweeps viewed together (``_dirty_view``): through a
    table of all their writes where no vertex expands in two of them (then an edge is a
    lane of one sweep at most: a BFS's levels), else each sweep's edges and writes keyed by
    the sweep, so that each is found among its own sweep's."""
    if sum(launch.writes.size for launch in launches) * _TABLE_PER_WRITE >= m:
        expands = np.zeros(int(vertices.max(initial=-1)) + 1, dtype=bool)
        expands[vertices] = True
        if np.count_nonzero(expands) == vertices.size:
            stores = np.zeros(m, dtype=bool)
            for launch in launches:
                stores[launch.writes] = True
            return np.flatnonzero(stores[edges])
    writes = np.concatenate([launch.writes.astype(np.int64) + i * m
                             for i, launch in enumerate(launches)])
    return _positions_in_runs(edges, degree, writes,
                              sweep_of_unit[expanding_slots // per_unit] * m)
