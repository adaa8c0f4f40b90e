"""The cost of each launch of a view (``_launch_costs``): the units' work laid out together,
then each launch's sums and time from its own units. See docs/model.md, "The cost model in
detail"."""

from __future__ import annotations

from functools import partial

import numpy as np

from simulator.auxiliary_kernels import outlier_kernel
from simulator.costs import InstructionCosts
from simulator.costs import LaunchCost
from simulator.device import Device
from simulator.edge_work import _edge_work
from simulator.edge_work import _piecewise_edge_work
from simulator.lanes import positions_holding
from simulator.lanes import sum_positions
from simulator.launch import Launch
from simulator.layout import TaskLayout
from simulator.sectors import WORD_BYTES
from simulator.sectors import ceil_div
from simulator.sectors import row_bounds_transactions
from simulator.sectors import unit_transactions
from simulator.slot_views import _SlotView
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
from simulator.worklist_pushes import _joined_push_work
from simulator.worklist_pushes import _joined_store_lanes
from simulator.worklist_pushes import _pushes
from simulator.worklist_pushes import _with_deferred_targets


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
