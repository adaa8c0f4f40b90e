"""The cost of each launch of a view (``cost_launches``): the units' work laid out together,
then each launch's sums and time from its own units, in phases that each count one kind of
work per unit (``_Costing`` holds what they all read, ``_Tally`` what they add up). See
docs/model.md, "The cost model in detail"."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simulator.auxiliary_kernels import outlier_kernel
from simulator.costs import InstructionCosts
from simulator.costs import LaunchCost
from simulator.device import Device
from simulator.edge_work import EdgeWork
from simulator.edge_work import piecewise_edge_work
from simulator.edge_work import unit_edge_work
from simulator.lanes import positions_holding
from simulator.lanes import sum_positions
from simulator.launch import Launch
from simulator.layout import TaskLayout
from simulator.mappings import MAPPINGS
from simulator.sectors import WORD_BYTES
from simulator.sectors import ascending_transactions
from simulator.sectors import ceil_div
from simulator.sectors import floor_div
from simulator.sectors import row_bounds_transactions
from simulator.sectors import sector_of
from simulator.sectors import step_row_bounds_transactions
from simulator.sectors import unit_transactions
from simulator.slot_views import SlotView
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
from simulator.worklist import prefix_scan_launch
from simulator.worklist import push_cost
from simulator.worklist_pushes import LaunchPushes
from simulator.worklist_pushes import joined_push_work
from simulator.worklist_pushes import joined_store_lanes
from simulator.worklist_pushes import who_pushes_what
from simulator.worklist_pushes import with_deferred_targets


@dataclass(frozen=True, eq=False)
class _Costing:
    """What every phase of ``cost_launches`` reads: the graph, the launches and their view,
    the strategy, device and costs, the stores' kind, and where each launch's units lie in
    the view (``segments``, ``ends``; ``launch_of_unit`` where it holds several)."""

    indptr: np.ndarray
    indices: np.ndarray
    launches: list[Launch]
    view: SlotView
    full_layout: TaskLayout
    strategy: Strategy
    device: Device
    costs: InstructionCosts
    hit_rate: float
    reads_weights: bool
    stores_per_vertex: bool  # each active vertex stores (PageRank), or clears its flag
    gathers: bool  # the edge loop sums what it loads (PageRank): no store, no branch on it
    atomic_updates: bool  # storing lanes lower with atomicMin (not re-read plain stores)
    lowers: bool  # SSSP, CC: an active vertex reads its own value (``LowerSweep.vertex``)
    flags: bool  # a sweep keeps activity in flags apart from the values
    changed_flag: bool  # a plain sweep stores the flag the host reads to stop
    pushes: list[LaunchPushes] | None
    words: int  # 32-bit words per sector
    segments: np.ndarray  # where each launch's units start in the view
    ends: np.ndarray
    launch_of_unit: np.ndarray | None
    n_slots: np.ndarray  # each launch's task slots
    launch_units: np.ndarray | int  # each launch's layout's units

    @property
    def launch(self) -> Launch:
        """The launches' form (they are all alike but for their work)."""
        return self.launches[0]

    @property
    def layout(self) -> TaskLayout:
        return self.view.layout

    @property
    def sweep(self) -> bool:
        return self.launch.slots is None

    @property
    def staged(self) -> bool:
        """Whether the kernel stages its slots' status and row bounds (vwarp)."""
        return self.layout.w > 1

    @property
    def reads_status(self) -> bool:
        """Whether the slots' status words are read: not by PageRank's sweep, whose every
        vertex is active (``PrSweep.status`` loads nothing)."""
        return not (self.gathers and self.sweep)

    @property
    def rechecks(self) -> bool:
        return self.launch.rechecks

    @property
    def unchecked(self) -> bool:
        """Every edge's lane issues atomicMin and waits for its old value (``precheck``
        false), rather than reading its target first."""
        return self.atomic_updates and self.strategy.unchecked_atomics

    @property
    def per_step(self) -> float:
        """A SIMD step's instructions per lane."""
        return self.costs.edge + (self.costs.weight if self.reads_weights else 0)

    def per_launch(self, per_unit_values: np.ndarray) -> np.ndarray:
        """Each launch's sum of a per-unit quantity."""
        if per_unit_values.size == 0:
            return np.zeros(self.segments.size, dtype=per_unit_values.dtype)
        return np.add.reduceat(per_unit_values, self.segments)


def _costing(indptr, indices, launches, view, full_layout, strategy, device, *, reads_weights,
             stores_per_vertex, atomic_updates, costs, hit_rate, pushes) -> _Costing:
    """``_Costing`` of ``cost_launches``' arguments."""
    launch = launches[0]  # their form
    n = indptr.size - 1
    sweep = launch.slots is None
    units = view.layout.units
    segments = view.segments if view.segments is not None else np.zeros(1, dtype=np.int64)
    ends = np.append(segments[1:], units)
    # each unit's launch, where the view holds several
    launch_of_unit = (np.repeat(np.arange(segments.size), ends - segments)
                      if segments.size > 1 else None)
    n_slots = (np.full(segments.size, n) if sweep
               else np.array([launch.slots.size for launch in launches]))
    # each launch's layout's units (a sweep's view holds only some of them)
    launch_units = full_layout.units if view.units is not None else ends - segments
    lowers = atomic_updates
    atomic_updates = atomic_updates and not launch.rechecks
    flags = atomic_updates and launch.lookup == "status"
    changed_flag = sweep and launch.push is None and not launch.count_activations
    return _Costing(indptr, indices, launches, view, full_layout, strategy, device, costs,
                    hit_rate, reads_weights, stores_per_vertex or flags, stores_per_vertex,
                    atomic_updates, lowers, flags, changed_flag, pushes,
                    device.sector_bytes // WORD_BYTES, segments, ends, launch_of_unit, n_slots,
                    launch_units)


@dataclass(frozen=True, eq=False)
class _Tasks:
    """Per unit, the active and deferred tasks and the chunk positions holding one (a
    position's SISD work is issued once for its virtual warps in lockstep), and which
    launches donate edges."""

    active_tasks: np.ndarray
    active_positions: np.ndarray
    deferred_tasks: np.ndarray | int
    deferred_positions: np.ndarray | int
    n_deferred: int
    launch_donates: np.ndarray  # per launch
    donated: bool


@dataclass(eq=False)
class _Tally:
    """What the phases add up: per unit, SISD and SIMD instructions, sectors and dependent
    round trips; per launch, memory requests, atomics and those serialised on one address
    (``queue_atomics``); and what each launch pushed."""

    sisd: np.ndarray
    simd: np.ndarray
    sectors: np.ndarray | None = None
    round_trips: np.ndarray | None = None
    requests: np.ndarray | None = None
    queue_atomics: np.ndarray | None = None
    atomics: np.ndarray | None = None
    flag_stores: np.ndarray | None = None  # per launch, the changed flag's stores
    pushed: list[np.ndarray] | None = None
    deferred_targets: list[int] | None = None


def cost_launches(
    indptr: np.ndarray,
    indices: np.ndarray,
    launches: list[Launch],
    view: SlotView,
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
    cx = _costing(indptr, indices, launches, view, full_layout, strategy, device,
                  reads_weights=reads_weights, stores_per_vertex=stores_per_vertex,
                  atomic_updates=atomic_updates, costs=costs, hit_rate=hit_rate,
                  pushes=pushes)
    e = _launch_edge_work(cx)
    tasks = _tasks(cx, e)
    tally = _instructions(cx, e, tasks)
    _count_sectors(cx, e, tasks, tally)
    _count_round_trips_and_atomics(cx, e, tasks, tally)
    _count_storing_atomics(cx, e, tally)
    if cx.launch.push is not None:
        _count_pushes(cx, e, tasks, tally)
    timed, instructions, transactions = _timed(cx, e, tasks, tally)
    return _costs_of_launches(cx, e, tasks, tally, timed, instructions, transactions)


def _launch_edge_work(cx: _Costing) -> EdgeWork:
    """The view's ``EdgeWork``: laid out in pieces where one launch's full view is too big
    to lay out at once, else at once."""
    launches, view = cx.launches, cx.view
    # PageRank gathers 8-byte shares: half the values a sector
    value_words = cx.words // 2 if cx.gathers else cx.words
    edge_work = (piecewise_edge_work(cx.indptr, cx.indices, cx.launch, view, cx.strategy,
                                     cx.device, cx.words, value_words)
                 if len(launches) == 1 and view.units is None and cx.pushes is None else None)
    if edge_work is None:
        edge_work = unit_edge_work(cx.indptr, cx.indices, launches, view, cx.strategy, cx.device,
                                   cx.segments, cx.ends, cx.launch_of_unit, cx.words,
                                   None if cx.pushes is None else joined_store_lanes(cx.pushes),
                                   value_words=value_words)
    return edge_work


def _tasks(cx: _Costing, e: EdgeWork) -> _Tasks:
    """``_Tasks`` of the view's active slots and the edge work's deferred ones."""
    layout = cx.layout
    units, per_unit, c = layout.units, layout.per_unit, layout.c
    deferred_slots = e.deferred_slots
    launch_donates = (np.zeros(cx.segments.size, dtype=bool) if e.donating is None
                      else cx.per_launch(e.donating) > 0)
    active_slots = cx.view.active_slots
    active_pos = positions_holding(active_slots, units, per_unit, c)
    active_positions = sum_positions(active_pos)
    n_deferred = deferred_slots.size
    deferred_positions = deferred_tasks = 0
    if n_deferred:
        deferred_positions = sum_positions(positions_holding(deferred_slots, units, per_unit,
                                                               c))
        deferred_tasks = np.bincount(deferred_slots // per_unit, minlength=units)
    active_tasks = np.bincount(active_slots // per_unit, minlength=units)
    return _Tasks(active_tasks, active_positions, deferred_tasks, deferred_positions,
                  n_deferred, launch_donates, bool(launch_donates.any()))


def _instructions(cx: _Costing, e: EdgeWork, tasks: _Tasks) -> _Tally:
    """Per unit, the SISD phase's instructions (status checks, staging, setup, outlier
    pushes, vertex stores, queue grabs, WER's scan, donation) and the SIMD steps'."""
    costs, strategy, layout = cx.costs, cx.strategy, cx.layout
    serial = cx.sweep and serial_virtual_warps(layout, cx.device)
    sisd = check_and_stage_sisd(layout, costs, serial)
    # the per-vertex SISD work: once per position in lockstep, once per task when serial
    active_sisd = tasks.active_tasks if serial else tasks.active_positions
    sisd += costs.setup * active_sisd
    if tasks.n_deferred:
        sisd += costs.defer_push * (tasks.deferred_tasks if serial
                                    else tasks.deferred_positions)
    if cx.stores_per_vertex:
        sisd += costs.vertex_store * active_sisd
    if strategy.dynamic:
        sisd += costs.grab
    mapping = MAPPINGS[strategy.mapping]
    position_sisd = mapping.position_sisd(strategy, costs)  # WER's push_job: scan, store
    if position_sisd:
        sisd += position_sisd * tasks.active_positions
    if tasks.donated:  # the sharing threads' work (donation's shared atomic, the barrier)
        sisd += mapping.sharing_sisd(strategy, costs) * np.repeat(tasks.launch_donates,
                                                                  cx.ends - cx.segments)
    simd = cx.per_step * e.steps.astype(np.float64) + costs.pop * e.pop_steps
    return _Tally(sisd, simd)


def _count_sectors(cx: _Costing, e: EdgeWork, tasks: _Tasks, tally: _Tally) -> None:
    """Per unit, the exact sector counts (``unit_edge_work``'s, the stores' and the SISD
    phase's), and per launch the memory requests."""
    launch, layout, words = cx.launch, cx.layout, cx.words
    per_unit = layout.per_unit
    per_launch = cx.per_launch
    stores = e.store_step.size
    sectors = e.list_sectors + e.read_sectors
    if cx.reads_weights:
        sectors += e.list_sectors
    store_requests = 0
    if stores:
        # a flag's store, or the re-read of a plain store, after the store: the same words
        sectors += e.store_sectors * (2 if cx.flags or cx.rechecks else 1)
        store_steps = e.store_steps
        steps_storing = per_launch(store_steps)
        store_requests = steps_storing * (2 if cx.flags or cx.rechecks else 1)
        if cx.changed_flag:
            flag_stores = _changed_flag_stores(cx, e)
            sectors += flag_stores
            # (once a storing step: the storing steps' per-launch sums already made)
            tally.flag_stores = (steps_storing if flag_stores is store_steps
                                 else per_launch(flag_stores))
            store_requests = store_requests + tally.flag_stores

    # SISD phase: the layout's per-launch traffic; the thread-based sweep also reads the
    # row bounds of its active vertices (vwarp staged them; worklist slots read them always)
    sectors += layout.static_sectors
    sisd_requests = layout.static_requests
    if cx.gathers:
        if not cx.reads_status and layout.status_sectors is not None:
            sectors -= layout.status_sectors
            sisd_requests = sisd_requests - layout.status_requests
        # each warp reads the dangling sum the base rank is worked out from (``pr_base``)
        sectors += 1
        sisd_requests = sisd_requests + (cx.ends - cx.segments)
    if launch.lookup == "status" and not cx.staged:
        # two reads (row start, row end), counted as separate warp steps of one unit
        sectors += _slot_word_transactions(cx, (0, 1))
        sisd_requests = sisd_requests + 2 * per_launch(tasks.active_positions)
    if cx.gathers:
        # PageRank's first lane stores the rank and the share and reads the old rank and
        # 1 / out-degree: four doubles (``PrSweep.store``, ``pagerank_wl``)
        sectors += 4 * _slot_word_transactions(cx, (0,), cx.words // 2)
        sisd_requests = sisd_requests + 4 * per_launch(tasks.active_positions)
    else:
        # a lowering sweep's vertex clears its flag, and (SSSP, CC) any active vertex reads
        # its own value: the same words of two arrays, counted once
        per_vertex = int(cx.stores_per_vertex) + int(cx.lowers)
        if per_vertex:
            sectors += per_vertex * _slot_word_transactions(cx, (0,))
            sisd_requests = sisd_requests + per_vertex * per_launch(tasks.active_positions)
    if tasks.n_deferred:
        sectors += tasks.deferred_tasks
    if launch.slots is not None and launch.lookup == "status":
        # the spatial kernel reads its representatives' worklist entries
        sectors += ceil_div(ceil_div(per_unit, launch.partition), words)
    tally.sectors = sectors
    memory_per_step = 2 + (1 if cx.reads_weights else 0)
    tally.requests = (memory_per_step * per_launch(e.steps) + store_requests
                      + sisd_requests).astype(np.float64)


def _slot_word_transactions(cx: _Costing, offsets: tuple[int, ...],
                            words: int | None = None) -> np.ndarray:
    """Per unit, the sectors of the active slots' reads of their vertex's word (``offsets``
    (0,): a vertex store) or words (0, 1): its row bounds), each a warp step of its
    (unit, position). Under C = 1 a unit's step reads its vertices ascending where they
    come in order (sweeps, and runs of them): counted along them without a sort."""
    layout, words = cx.layout, words or cx.words  # (``words``: of wider values, per sector)
    c, units, per_unit = layout.c, layout.units, layout.per_unit
    act, vertex = cx.view.active_slots, cx.view.active_vertex
    if c == 1:
        unit = floor_div(act, per_unit)
        counts = [ascending_transactions(unit, sector_of(vertex + offset, words), units)
                  for offset in offsets]
        if all(count is not None for count in counts):
            return sum(counts[1:], counts[0])
        # out of order (a worklist's): each unit's one step laid out as a row and sorted
        return step_row_bounds_transactions(act, vertex, words_per_sector=words, units=units,
                                            width=per_unit, offsets=offsets)
    group = (act // per_unit) * c + act % c
    if offsets == (0, 1):
        return row_bounds_transactions(group, vertex, c, words_per_sector=words, units=units)
    return unit_transactions(group, vertex, c, words_per_sector=words, units=units)


def _count_round_trips_and_atomics(cx: _Costing, e: EdgeWork, tasks: _Tasks,
                                   tally: _Tally) -> None:
    """Per unit, the dependent round trips of the SIMD steps, the slots' lookups, waits for
    atomics and re-reads; per launch, the queue grabs' and outlier pushes' atomics and the
    changed flag's serialised stores."""
    strategy, device, launch, layout = cx.strategy, cx.device, cx.launch, cx.layout
    stores = e.store_step.size
    waits = device.atomic_round_trips  # for an atomic's returned value
    # two dependent loads a step (the neighbour's id, then its value), a step at a time
    # where each step branches or stores on what it loaded (unchecked: the id, then the
    # atomic's old value); a gathering loop's groups
    steps = (gathered_load_groups(e.steps, tasks.active_positions,
                                  gather_group_size(strategy)) if cx.gathers else e.steps)
    trips_per_step = 1 + waits if cx.unchecked else 2
    round_trips = trips_per_step * steps + waits * tasks.deferred_positions
    # finding the slots' vertices: thread-based sweeps read the status (``reads_status``),
    # then the active vertices' row bounds; staged (vwarp) sweeps one staging round trip,
    # staged worklist launches two (the entries, then their vertices' row bounds)
    if launch.slots is not None and launch.lookup == "status":
        # a spatial launch stages nothing, at any W: a slot reads its partition's worklist
        # entry, then its status (an address that waits for the entry), then, active, its row
        round_trips += tasks.active_positions + 2 * layout.real_positions
    elif not cx.staged:
        round_trips += tasks.active_positions
        if cx.reads_status:
            round_trips += layout.real_positions
    else:
        round_trips += 2 if launch.lookup == "worklist" else 1
    if strategy.dynamic:
        round_trips += waits
    if cx.rechecks and stores:  # a storing lane waits for its re-read
        round_trips += e.store_steps
    tally.round_trips = round_trips
    # same-address atomics of a warp step are warp-aggregated (one per warp, as compilers
    # emit them): one queue grab per dynamic unit and one more per resident warp (its last,
    # which finds the queue empty), one outlier push per deferring position
    grabs = (cx.launch_units + schedule_slots(strategy, device)[0]) if strategy.dynamic else 0
    queue_atomics = np.zeros(cx.segments.size, dtype=np.int64) + grabs
    if tasks.n_deferred:
        queue_atomics += cx.per_launch(tasks.deferred_positions)
    if cx.gathers:  # each block's sum of its vertices' changes, added to one global sum
        queue_atomics += _blocks(cx)
    tally.atomics = queue_atomics.copy()
    if cx.changed_flag and stores:
        queue_atomics += tally.flag_stores  # stores, but serialised on one address
    tally.queue_atomics = queue_atomics


def _changed_flag_stores(cx: _Costing, e: EdgeWork) -> np.ndarray:
    """Per unit, a sweep's stores of the changed flag: one per warp step with a storing lane
    (``changed_flag`` step, kernels.cu's sweeps), or one per warp that stored at all (warp:
    the warp votes when its loop is done; the vote's one instruction is not counted)."""
    if cx.strategy.changed_flag != "warp":
        return e.store_steps
    storing = np.bincount(e.unit_of_step[e.store_step], minlength=cx.layout.units)
    return (storing > 0).astype(e.store_steps.dtype)


def gather_group_size(strategy: Strategy) -> int:
    """The most loads a gathering edge loop issues before it waits, as nvcc compiles it
    (``tuner/measure/kernels.cu``'s ``pagerank_sweep``, ``bash bench/gpu/gather_groups.sh``):
    16 where each virtual warp (thread) of a static launch takes one vertex; 4 inside a chunk
    walk or a dynamic grab loop, whose SASS issues 2-4 value loads before an add against 5-8."""
    return 16 if strategy.vertices_per_grab == 1 and not strategy.dynamic else 4


def gathered_load_groups(steps: np.ndarray, positions: np.ndarray,
                         group: int = 16) -> np.ndarray:
    """Per unit, the load groups of a gathering edge loop (PageRank's sum, whose steps are
    independent): nvcc unrolls it to single steps for its trip count mod 4, then groups of
    ``group`` while that many are left, then halves (16: one of 8, then one of 4). A group
    issues all its loads before it waits. A unit's trip count is its SIMD steps (its longest
    lane's), over each position (the mean where a unit holds several)."""
    held = np.maximum(positions, 1)
    # the unit's steps spread over its positions as evenly as they go: some positions one
    # trip more than the others (a floored mean had left a unit of fewer steps than
    # positions no trip at all: probe HC)
    fewer = steps // held
    more = steps - fewer * held

    def groups_of(trips: np.ndarray) -> np.ndarray:
        groups = trips % 4
        rest = trips - groups
        size = group
        while size >= 4:
            groups = groups + rest // size
            rest = rest % size
            size //= 2
        return groups

    return groups_of(fewer) * (held - more) + groups_of(fewer + 1) * more


def _blocks(cx: _Costing) -> np.ndarray:
    """Each launch's blocks: its units' (static), or the resident ones that take them
    (dynamic distribution, a fixed grid)."""
    warps_per_block = cx.strategy.block_size // cx.device.warp_size
    blocks = ceil_div(np.zeros(cx.segments.size, dtype=np.int64) + cx.launch_units,
                      warps_per_block)
    if cx.strategy.dynamic or cx.launch.grid_stride:
        blocks = np.minimum(blocks, resident_warps(cx.strategy, cx.device) // warps_per_block)
    return blocks


def _count_storing_atomics(cx: _Costing, e: EdgeWork, tally: _Tally) -> None:
    """The storing lanes' atomics: atomicMin's (every lane's where unchecked; elsewhere a
    pushing lane waits for its old value), and a counting launch's claims of its targets'
    flags."""
    launch = cx.launch
    if cx.unchecked:  # every lane's atomicMin, its wait a step's (round trips)
        tally.atomics += cx.per_launch(e.unit_edges)
    if not (e.store_step.size and (cx.atomic_updates or launch.count_activations
                                   or launch.push)):
        return
    units, per_launch = cx.layout.units, cx.per_launch
    waits = cx.device.atomic_round_trips
    store_unit = e.unit_of_step[e.store_step]
    if cx.atomic_updates and not cx.unchecked:
        tally.atomics += per_launch(np.bincount(store_unit, minlength=units))
        if launch.push is not None and launch.pushes != "partitions":
            # the push decision waits for atomicMin's old value
            tally.round_trips += waits * e.store_steps
    if launch.pushes == "partitions":
        # a storing lane exchanges its target's partition tag and pushes the partition
        # where the old tag was not this launch's: an exchange and a compare a step, and
        # the push waits for the old tag (not for atomicMin's value, which it never reads)
        tally.sisd += 2 * e.store_steps
        tally.round_trips += waits * e.store_steps
        tally.requests += per_launch(e.store_steps)
    if launch.count_activations:
        # a vertex is counted once: the lane that stored to it (under atomicMin, once
        # its old value says it lowered it) claims its flag with an exchange and waits
        # for the old flag, then the warp adds its claims with one aggregated atomic
        lanes_storing = np.bincount(store_unit, minlength=units)
        storing = (lanes_storing > 0).astype(np.int64)
        tally.sisd += cx.costs.scan * storing
        tally.queue_atomics += per_launch(storing)
        tally.atomics += per_launch(storing + lanes_storing)
        if launch.push is None:  # (unchecked: atomicMin's wait is the step's)
            waited = 2 if cx.atomic_updates and not cx.unchecked else 1
            tally.round_trips += waited * waits * e.store_steps


def _count_pushes(cx: _Costing, e: EdgeWork, tasks: _Tasks, tally: _Tally) -> None:
    """Who pushes what (worked out ahead, or here from the storing lanes), the push's cost
    (``push_cost``) and the in-queue flags of ``dedup``."""
    launch, launches, strategy, device = cx.launch, cx.launches, cx.strategy, cx.device
    per_launch, layout, view = cx.per_launch, cx.layout, cx.view
    simd_steps = e.steps
    store_lanes = np.arange(e.store_step.size)  # of the storing lanes' own arrays (EdgeWork)
    per_warp = MAPPINGS[strategy.mapping].batches_per_warp(strategy)  # else per thread
    if cx.pushes is not None:
        work = joined_push_work(cx.pushes)
        pushed = [p.items for p in cx.pushes]
        deferred_targets = [p.deferred_targets for p in cx.pushes]
    elif len(launches) == 1:  # one launch, costed as it pushes
        work, items = who_pushes_what(launch, store_lanes, e.store_step, e.unit_of_step,
                                      e.store_edge, e.store_target, e.slots, e.degree,
                                      view.slot_vertex, layout, view.real_slots,
                                      warp_batches=per_warp or tasks.donated,
                                      steps_per_unit=simd_steps,
                                      resident=resident_warps(strategy, device),
                                      lane_position=e.store_position,
                                      dedup=bool(strategy.dedup))
        items, extra_targets = with_deferred_targets(cx.indptr, cx.indices, launch, e, items)
        pushed, deferred_targets = [items], [extra_targets]
    else:  # several launches that push partitions: all their pushes at once
        warp_batches = (True if per_warp
                        else tasks.launch_donates[cx.launch_of_unit] if tasks.donated
                        else False)
        work, items = who_pushes_what(launch, store_lanes, e.store_step, e.unit_of_step,
                                      e.store_edge, e.store_target, e.slots, e.degree, None,
                                      layout, 0, warp_batches=warp_batches,
                                      steps_per_unit=simd_steps,
                                      resident=resident_warps(strategy, device),
                                      launch_of_unit=cx.launch_of_unit,
                                      lane_position=e.store_position)
        pushed = np.split(items, np.cumsum(per_launch(work.items))[:-1])
        deferred_targets = [0] * cx.segments.size
    tally.pushed, tally.deferred_targets = pushed, deferred_targets
    extra = push_cost(work, launch.push, device, cx.costs, block_size=strategy.block_size,
                      words_per_sector=cx.words, hit_rate=cx.hit_rate,
                      launch_starts=cx.segments,
                      # an entry that pushes itself does so once, after its edge loop
                      unit_steps=None if launch.pushes == "self" else simd_steps)
    tally.sisd += extra.instructions
    tally.sectors += extra.sectors + work.flag_atomics
    tally.round_trips += extra.round_trips
    tail_atomics = per_launch(extra.queue_atomics)
    tally.queue_atomics += tail_atomics
    tally.atomics += tail_atomics + per_launch(work.flag_atomics)
    tally.requests += per_launch(extra.requests)
    if strategy.dedup and launch.lookup == "worklist":
        # the in-queue flags: each entry clears its own (an exchange, then a fence before
        # it reads its value: a round trip a position); each would-be push claims its
        # target's (a fence, then an exchange whose old flag it waits for), one word a
        # claim and a clear; only the claims that won push (``push_cost`` above)
        waits = device.atomic_round_trips
        claims, claim_steps = work.claimed
        tally.sisd += 2 * tasks.active_positions + 3 * claim_steps
        tally.round_trips += tasks.active_positions + (1 + waits) * claim_steps
        tally.sectors += tasks.active_tasks + claims
        tally.atomics += per_launch(tasks.active_tasks + claims)
        tally.requests += per_launch(tasks.active_positions + claim_steps)


def _timed(cx: _Costing, e: EdgeWork, tasks: _Tasks, tally: _Tally):
    """Each launch's (cycles, bounds), instructions and transactions: whole launches timed
    on their own units, sweeps' views with their clean units' figures besides."""
    strategy, device, costs, launch = cx.strategy, cx.device, cx.costs, cx.launch
    view, layout, segments, ends = cx.view, cx.layout, cx.segments, cx.ends
    launch_donates, hit_rate = tasks.launch_donates, cx.hit_rate
    unit_work = UnitWork(tally.sisd, tally.simd, tally.sectors.astype(np.float64),
                         tally.round_trips, cluster_passes=e.cluster_passes,
                         simd_steps=e.steps)
    instructions = (cx.per_launch(tally.sisd) + cx.per_launch(tally.simd)).astype(np.float64)
    transactions = cx.per_launch(unit_work.sectors)
    if view.units is None:  # whole launches, each laid out on its own
        timed = kernels_cycles(unit_work, segments, strategy, device, tally.queue_atomics,
                               layout.k == 1, grid_stride=launch.grid_stride,
                               check=costs.check, hit_rate=hit_rate)
        return timed, instructions, transactions
    # the launches' clean units cost alike but for the donation barrier: the launches
    # that donated are timed against that clean sweep, the others against the plain one
    timed = [None] * segments.size
    for with_barrier in np.unique(launch_donates).tolist():
        picked = launch_donates == with_barrier
        clean = clean_sweep(cx.full_layout, strategy, device, costs, with_barrier,
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
            device, tally.queue_atomics[picked], layout.k == 1, transactions[picked],
            grid_stride=launch.grid_stride, check=costs.check, hit_rate=hit_rate,
        )
        for i, launch_timed in zip(np.flatnonzero(picked), picked_timed, strict=True):
            timed[i] = launch_timed
    return timed, instructions, transactions


def _costs_of_launches(cx: _Costing, e: EdgeWork, tasks: _Tasks, tally: _Tally, timed,
                       instructions: np.ndarray, transactions: np.ndarray
                       ) -> list[LaunchCost]:
    """Each launch's ``LaunchCost`` from its sums and time, with its pushed items, the
    outlier kernel's tail atomics, the prefix scan's launch and the outlier kernel."""
    launch, strategy, device, costs = cx.launch, cx.strategy, cx.device, cx.costs
    per_launch, segments, ends, n_slots = cx.per_launch, cx.segments, cx.ends, cx.n_slots
    c, per_unit = cx.layout.c, cx.layout.per_unit
    ws = device.warp_size
    n_deferred = tasks.n_deferred
    n_active = per_launch(tasks.active_tasks)
    n_deferred_per_launch = per_launch(tasks.deferred_tasks) if n_deferred else 0
    chunks = ceil_div(n_slots, c)
    useful_sisd = (
        costs.check * n_slots
        + costs.setup * n_active
        + costs.defer_push * n_deferred_per_launch
        + (costs.vertex_store * n_active if cx.stores_per_vertex else 0)
        + (costs.stage * (2 * n_slots + chunks) if cx.staged else 0)
        + (costs.grab * chunks if strategy.dynamic else 0)
    )
    per_step = cx.per_step
    simd_issued = ws * per_launch(e.steps).astype(np.float64)
    edges_expanded = per_launch(e.unit_edges).astype(np.float64)
    u_a = per_launch(e.u_a)
    requests, atomics = tally.requests, tally.atomics
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
            main.pushed = tally.pushed[i]
            if tally.deferred_targets[i]:
                # the outlier kernel's warps push them, one aggregated tail atomic per warp
                tail = ceil_div(tally.deferred_targets[i], ws)
                main.atomics += tail
                main.cycles += tail * device.atomic_cycles
                main.extra_cycles += tail * device.atomic_cycles
        if launch.push == "prefix":
            main = main + prefix_scan_launch(int(cx.launch_units[i]), device, costs,
                                             block_size=strategy.block_size,
                                             words_per_sector=cx.words, hit_rate=cx.hit_rate)
        if n_deferred and n_deferred_per_launch[i]:
            lo, hi = e.deferred_slots.searchsorted([segments[i] * per_unit,
                                                    ends[i] * per_unit])
            main = main + outlier_kernel(
                cx.indptr, cx.indices, e.deferred_vertices[lo:hi], cx.launches[i], strategy,
                device, reads_weights=cx.reads_weights, costs=costs, hit_rate=cx.hit_rate,
                changed_flag=cx.changed_flag, unchecked_atomics=cx.unchecked, lowers=cx.lowers,
                gathers=cx.gathers,
            )
        out.append(main)
    return out
