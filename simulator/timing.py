"""From per-unit work to a launch's time: block scheduling on the SMs and the bounds of
issue, load/store, latency, memory bandwidth, atomics and launch overhead, for a whole launch or
for a sweep of which only the units holding an active vertex differ from an idle one."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from simulator.costs import InstructionCosts
from simulator.device import Device
from simulator.functional import kept_recent
from simulator.layout import TaskLayout
from simulator.mappings import MAPPINGS
from simulator.scheduling import list_schedule
from simulator.scheduling import list_schedule_sparse
from simulator.scheduling import whole_cycle_schedules
from simulator.sectors import WORD_BYTES
from simulator.sectors import ceil_div
from simulator.sorted_runs import distinct
from simulator.sorted_runs import run_index
from simulator.sorted_runs import run_maxima
from simulator.sorted_runs import run_numbers
from simulator.sorted_runs import run_sums
from simulator.strategy import Strategy


@dataclass
class UnitWork:
    """Per physical-warp-unit totals that the timing stage needs; ``cluster_passes`` (SIMD
    steps times the lane clusters they issue, with a narrow SIMD) replaces full passes."""

    sisd: np.ndarray
    simd: np.ndarray
    sectors: np.ndarray
    round_trips: np.ndarray
    cluster_passes: np.ndarray | None = None
    simd_steps: np.ndarray | None = None

    def of_units(self, picked: np.ndarray) -> UnitWork:
        """The work of the ``picked`` units (a mask or indices) only."""
        def pick(values):
            return None if values is None else values[picked]
        return UnitWork(self.sisd[picked], self.simd[picked], self.sectors[picked],
                        self.round_trips[picked], pick(self.cluster_passes),
                        pick(self.simd_steps))


def grid_barrier_cycles(strategy: Strategy, device: Device, hit_rate: float = 0.0) -> float:
    """A software grid barrier among the resident blocks: one atomic each on the barrier
    counter (serialised), then a round trip to see the last arrival."""
    blocks = device.sms * resident_blocks_per_sm(strategy, device)
    return blocks * device.atomic_cycles + 2 * device.round_trip_cycles(hit_rate)


def grab_cycles(strategy: Strategy, device: Device) -> float:
    """How long a dynamic launch's warp waits for one grab on the shared queue counter: the
    counter serves one atomic per ``atomic_cycles``, and with every resident warp grabbing,
    a warp's grab queues behind one grab of each of them (itself included). Whole cycles, so
    that durations stay whole and the sparse schedule can add them exactly."""
    return float(round(schedule_slots(strategy, device)[0] * device.atomic_cycles))


def unit_start_cycles(strategy: Strategy, device: Device, grid_stride: bool) -> float:
    """When a unit's work starts after its slot frees: once its block has launched (static
    blocks), once its grab has waited on the queue counter (dynamic), at once (fixed grid)."""
    if grid_stride:
        return 0.0
    return grab_cycles(strategy, device) if strategy.dynamic else device.block_launch_cycles


def resident_tail_cycles(strategy: Strategy, device: Device, grid_stride: bool) -> float:
    """What launching only the resident warps adds to their schedule: the grid's one block
    launch and, dynamic, each warp's last grab, which finds the queue empty."""
    if grid_stride:
        return device.block_launch_cycles
    if strategy.dynamic:
        return device.block_launch_cycles + grab_cycles(strategy, device)
    return 0.0


def resident_blocks_per_sm(strategy: Strategy, device: Device) -> int:
    """Blocks of ``strategy.block_size`` threads an SM holds at once."""
    warps_per_block = strategy.block_size // device.warp_size
    return max(1, min(device.max_blocks_per_sm, device.max_warps_per_sm // warps_per_block))


def resident_warps(strategy: Strategy, device: Device) -> int:
    """Warps the whole device holds at once (a fixed grid's size)."""
    warps_per_block = strategy.block_size // device.warp_size
    return device.sms * resident_blocks_per_sm(strategy, device) * warps_per_block


def kernel_cycles(
    unit: UnitWork,
    strategy: Strategy,
    device: Device,
    queue_atomics: int,
    warp_uniform_sisd: bool,
    *,
    units_per_block: int | None = None,
    grid_stride: bool = False,
    check: int = 0,
    hit_rate: float = 0.0,
) -> tuple[float, np.ndarray]:
    """Launch time in cycles from per-unit instructions, sectors and dependent round trips,
    and the row of bounds it is made of (``costs.BOUND_NAMES``). A round trip takes
    ``device.round_trip_cycles(hit_rate)``.

    ``grid_stride``: only the resident warps are launched and warp g runs units g, g + G, ...
    in turn (a fixed grid), each paying ``check`` instructions and a round trip to find out
    whether more work is left.
    """
    warps_per_block = strategy.block_size // device.warp_size
    units_per_block = units_per_block or warps_per_block
    blocks_per_sm = resident_blocks_per_sm(strategy, device)
    pass_cycles = device.warp_size / device.simd_width * device.instruction_cycles
    rows = unit_timing(unit, device, warp_uniform_sisd, hit_rate,
                       unit_start_cycles(strategy, device, grid_stride))
    sectors_total = float(rows[3].sum())
    if grid_stride:
        resident = resident_warps(strategy, device)
        warp = np.arange(rows.shape[1]) % resident
        items = np.stack([np.bincount(warp, weights=row, minlength=resident) for row in rows])
        items[0] += check * pass_cycles + device.round_trip_cycles(hit_rate)
        items[1] += check * pass_cycles
        items[2] += check
        # resident blocks are spread over the SMs; their warps never leave
        sm = (np.arange(resident) // warps_per_block) % device.sms
        latency = np.zeros(device.sms)
        np.maximum.at(latency, sm, items[0])
    else:
        if strategy.dynamic:
            slots = resident_warps(strategy, device)
            items = rows
        else:
            slots = device.sms * blocks_per_sm
            items = block_items(rows, units_per_block)
        owner, finish = list_schedule(items[0], slots)
        sm = owner % device.sms
        latency = finish.reshape(-1, device.sms).max(axis=0)

    def per_sm(row: int) -> np.ndarray:
        return np.bincount(sm, weights=items[row], minlength=device.sms)

    return launch_bounds(per_sm, latency, sectors_total, queue_atomics, device,
                         warp_uniform_sisd, hit_rate,
                         resident_tail_cycles(strategy, device, grid_stride))


def kernels_cycles(
    unit: UnitWork,
    segments: np.ndarray,
    strategy: Strategy,
    device: Device,
    queue_atomics: np.ndarray,
    warp_uniform_sisd: bool,
    *,
    grid_stride: bool = False,
    check: int = 0,
    hit_rate: float = 0.0,
) -> list[tuple[float, np.ndarray]]:
    """``kernel_cycles`` of several launches laid out one after another, launch i on
    ``unit``'s units from ``segments[i]`` to the next, with ``queue_atomics[i]``: those
    whose schedule items all start at once (no more than the slots: each item has a slot of
    its own, slot j on SM j % SMs) timed together, the others one by one."""
    sms = device.sms
    units = unit.sisd.size
    ends = np.append(segments[1:], units)
    slots, per_item = schedule_slots(strategy, device)
    items_of = ceil_div(ends - segments, per_item)
    out: list[tuple[float, np.ndarray] | None] = [None] * segments.size
    for i in (range(segments.size) if grid_stride
              else np.flatnonzero(items_of > slots).tolist()):
        out[i] = kernel_cycles(unit.of_units(slice(int(segments[i]), int(ends[i]))),
                               strategy, device, int(queue_atomics[i]), warp_uniform_sisd,
                               grid_stride=grid_stride, check=check, hit_rate=hit_rate)
    together = np.flatnonzero([cost is None for cost in out])
    if together.size == 0:
        return out
    rows = unit_timing(unit, device, warp_uniform_sisd, hit_rate,
                       unit_start_cycles(strategy, device, False))
    launch_of = np.repeat(np.arange(segments.size), ends - segments)
    local = np.arange(units) - segments[launch_of]
    if per_item > 1:  # a launch's blocks of consecutive units, the last maybe short
        starts = np.flatnonzero(local % per_item == 0)
        item_of = run_numbers(starts, units)
        items = run_sums(rows, item_of, starts.size)
        items[0] = run_maxima(rows[0], starts, item_of)
        launch_of, local = launch_of[starts], local[starts] // per_item
    else:
        items = rows
    at = launch_of * sms + local % sms
    per_sm = np.stack([np.bincount(at, weights=items[row], minlength=segments.size * sms)
                       .reshape(segments.size, sms) for row in (1, 2, 3)], axis=1)
    latency = np.zeros(segments.size * sms)
    np.maximum.at(latency, at, items[0])
    sectors = np.add.reduceat(rows[3], segments)
    cycles, bounds = launches_bounds(
        per_sm[together], latency.reshape(-1, sms)[together],
        sectors[together], np.asarray(queue_atomics)[together], device, warp_uniform_sisd,
        hit_rate, resident_tail_cycles(strategy, device, False))
    for j, i in enumerate(together.tolist()):
        out[i] = (float(cycles[j]), bounds[j])
    return out


def launch_bounds(per_sm, latency: np.ndarray, sectors: float, queue_atomics: int,
                  device: Device, warp_uniform_sisd: bool, hit_rate: float,
                  tail: float) -> tuple[float, np.ndarray]:
    """A launch's time and its row of bounds (``costs.BOUND_NAMES``) from each SM's sums of
    the schedule items' rows (``per_sm(row)``: 1 issue passes, 2 SISD instructions, 3
    sectors), each SM's latency makespan (and the ``tail`` every SM's adds: see
    ``resident_tail_cycles``) and the launch's sectors and queue atomics."""
    sums = np.stack([per_sm(1), per_sm(2), per_sm(3)])
    cycles, bounds = launches_bounds(sums[None], latency[None], np.array([sectors]),
                                     np.array([queue_atomics]), device, warp_uniform_sisd,
                                     hit_rate, tail)
    return float(cycles[0]), bounds[0]


def launches_bounds(per_sm: np.ndarray, latency: np.ndarray, sectors: np.ndarray,
                    queue_atomics: np.ndarray, device: Device, warp_uniform_sisd: bool,
                    hit_rate: float, tail: float) -> tuple[np.ndarray, np.ndarray]:
    """``launch_bounds`` of several launches: each one's time and row of bounds from its
    SMs' sums (``per_sm``, launches x 3 rows x SMs) and latency makespans (launches x SMs)."""
    latency = latency + tail
    # a scheduler issues one pass of a warp instruction per cycle
    issue = per_sm[:, 0] / device.schedulers
    if device.scalar_unit and warp_uniform_sisd:
        issue = np.maximum(issue, per_sm[:, 1] / device.schedulers)
    lsu = per_sm[:, 2] / device.lsu_sectors_per_cycle
    bounds = np.empty((latency.shape[0], 6))
    bounds[:, 0] = issue.max(axis=1, initial=0.0)
    bounds[:, 1] = lsu.max(axis=1, initial=0.0)
    bounds[:, 2] = latency.max(axis=1, initial=0.0)
    bounds[:, 3] = memory_cycles(np.asarray(sectors, dtype=np.float64), device, hit_rate)
    bounds[:, 4] = np.asarray(queue_atomics) * device.atomic_cycles
    bounds[:, 5] = device.cycles(device.launch_overhead_us)
    return combined_bounds(bounds[:, :-1], device.bounds_norm) + bounds[:, -1], bounds


def combined_bounds(bounds: np.ndarray, norm: float):
    """A launch's time before its overhead from its issue, load/store, latency, memory and
    atomics bounds (the last axis): their maximum (``norm`` inf) or their p-norm
    (``Device.bounds_norm``); one per row of a 2-d array."""
    top = bounds.max(axis=-1, initial=0.0)
    if math.isinf(norm):
        return top if bounds.ndim > 1 else float(top)
    scale = np.where(top > 0, top, 1.0)
    norms = top * np.sum((bounds / scale[..., None]) ** norm, axis=-1) ** (1 / norm)
    return norms if bounds.ndim > 1 else float(norms)


def memory_cycles(sectors, device: Device, hit_rate: float):
    """Time to move a launch's sectors (or each of an array's): the DRAM share over DRAM
    bandwidth, all of them over L2 bandwidth (where the device has an L2), whichever is
    longer."""
    total = sectors * device.sector_bytes
    dram = (1 - hit_rate) * total / device.dram_bytes_per_cycle
    if device.l2_bytes > 0 and device.l2_bandwidth_gbs > 0:  # (l2_bytes = 0: no L2)
        return np.maximum(dram, total * device.clock_ghz / device.l2_bandwidth_gbs)
    return dram


def working_set_bytes(n: int, m: int, *, reads_weights: bool, worklist: bool) -> int:
    """The data a run re-reads launch after launch: status words and row offsets, the edge
    lists (and weights), and two worklists for data-driven forms; L2 keeps it between
    launches when it fits."""
    words = 2 * n + 1 + m * (2 if reads_weights else 1) + (2 * n if worklist else 0)
    return WORD_BYTES * words


@dataclass(frozen=True, eq=False)
class CleanSweep:
    """A sweep launch in which no vertex is active: each unit's cycles alone, issue passes,
    SISD instructions and sectors (rows of ``units``), their totals, and each schedule item's
    (block's, or unit's when dynamic) duration and sums (rows of ``items``). The schedule
    lists only the ``timed`` items, whose duration is not the ``base`` one, and every item of
    the last, partial round. Every slot takes one item a full round, so a row (of 1-3) alike
    in all full rounds sums to their number times its value, and the ``varying`` rows from
    ``prefix``: per position of a full round, their running sums over the rounds before.
    With ``grid_stride`` the resident warps' sums (rows of ``per_warp``) stand in for
    items."""

    units: np.ndarray
    sisd_total: float
    sectors_total: float
    items: np.ndarray | None
    base: float
    timed: np.ndarray | None
    varying: np.ndarray | None
    prefix: np.ndarray | None
    per_warp: np.ndarray | None

    def rest(self, rows: np.ndarray, segments: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per sweep, the SISD instructions and sectors of the units whose ``rows`` (of
        ``units``; sweep i's from ``segments[i]`` to the next) it did not take."""
        sisd, sectors = np.add.reduceat(rows[2:], segments, axis=1)
        return self.sisd_total - sisd, self.sectors_total - sectors


def schedule_slots(strategy: Strategy, device: Device) -> tuple[int, int]:
    """Schedule slots of a launch and the units one item holds (a block, or a unit when
    dynamic distribution lets the resident warps take units themselves)."""
    warps_per_block = strategy.block_size // device.warp_size
    blocks_per_sm = resident_blocks_per_sm(strategy, device)
    if strategy.dynamic:
        return resident_warps(strategy, device), 1
    return device.sms * blocks_per_sm, warps_per_block


def unit_timing(unit: UnitWork, device: Device, warp_uniform_sisd: bool,
                 hit_rate: float, start: float = 0.0) -> np.ndarray:
    """Per unit, as rows: cycles alone (from ``start``: its block's launch), issue passes,
    SISD instructions and sectors (the quantities ``kernel_cycles`` schedules and sums)."""
    pass_cycles = device.warp_size / device.simd_width * device.instruction_cycles
    scalar = device.scalar_unit and warp_uniform_sisd
    out = np.empty((4, unit.sisd.size))
    # issue passes: the SIMD ones, and the SISD ones unless the scalar unit takes those
    # (worked out in place: a sweep's clean units number up to the graph's vertices)
    instructions = out[1]
    if unit.cluster_passes is not None:  # narrow SIMD issues only clusters with a lane
        instructions[:] = (unit.simd * unit.cluster_passes / np.maximum(unit.simd_steps, 1)
                           * device.instruction_cycles)
    else:
        np.multiply(unit.simd, pass_cycles, out=instructions)
    if not scalar:
        instructions += unit.sisd * pass_cycles
    alone = out[0]
    np.add(instructions, start, out=alone)
    if scalar:
        alone += unit.sisd * device.instruction_cycles
    alone += unit.round_trips * device.round_trip_cycles(hit_rate)
    out[2], out[3] = unit.sisd, unit.sectors
    return out


def block_items(rows: np.ndarray, per_item: int) -> np.ndarray:
    """Rows of per-unit quantities (see ``unit_timing``) to per-block ones, ``per_item``
    consecutive units a block (the last padded with empty units)."""
    units = rows.shape[1]
    blocks = ceil_div(units, per_item)
    if blocks * per_item != units:
        padded = np.zeros((rows.shape[0], blocks * per_item))
        padded[:, :units] = rows
        rows = padded
    return reduce_items(rows.reshape(rows.shape[0], blocks, per_item))


def reduce_items(rows: np.ndarray) -> np.ndarray:
    """Rows of per-unit quantities, shaped (4, items, units per item), to per-item ones:
    the slowest unit's cycles, the sums of the others."""
    # einsum's sum and a running maximum over the items' units: a reduction over a short
    # innermost axis costs several times more (a sweep's clean units: up to the vertices)
    out = np.einsum("rik->ri", rows)
    slowest = out[0]
    slowest[:] = rows[0, :, 0]
    for position in range(1, rows.shape[2]):
        np.maximum(slowest, rows[0, :, position], out=slowest)
    return out


def serial_virtual_warps(layout: TaskLayout, device: Device) -> bool:
    """Whether a sweep's virtual warps issue their SISD phase one after another
    (``Device.serial_virtual_warps``): only staged ones, several to a warp."""
    return device.serial_virtual_warps and layout.w > 1 and layout.k > 1


def check_and_stage_sisd(layout: TaskLayout, costs: InstructionCosts,
                         serial: bool) -> np.ndarray:
    """Per unit, the SISD instructions of a sweep's status checks and (vwarp) staging: once
    per position of its K virtual warps in lockstep, or (``serial``) once per virtual warp."""
    steps = ceil_div(layout.c, layout.w) + ceil_div(layout.c + 1, layout.w) if layout.w > 1 else 0
    if serial:
        vwarps = ceil_div(layout.real_tasks, layout.c)
        return (costs.check * layout.real_tasks + costs.stage * steps * vwarps).astype(np.float64)
    return (costs.check * layout.real_positions + costs.stage * steps).astype(np.float64)


def clean_unit_work(layout: TaskLayout, strategy: Strategy, device: Device,
                    costs: InstructionCosts, donated: bool) -> UnitWork:
    """Each unit's work in a sweep with no active vertex: its status checks (or staging),
    the dynamic grab, the donation barrier when some thread donates, the static reads."""
    staged = layout.w > 1
    sisd = check_and_stage_sisd(layout, costs, serial_virtual_warps(layout, device))
    if strategy.dynamic:
        sisd += costs.grab
    if donated:  # a thread shared work: the mapping's cost of it (donation's barrier)
        sisd += MAPPINGS[strategy.mapping].sharing_sisd(strategy, costs)
    round_trips = (layout.real_positions.astype(np.int64) if not staged
                   else np.ones(layout.units, dtype=np.int64))
    if strategy.dynamic:
        round_trips = round_trips + device.atomic_round_trips  # the grab's returned unit
    sectors = layout.static_sectors.astype(np.float64)
    return UnitWork(sisd, np.zeros(layout.units), sectors, round_trips)


def clean_unit_rows(layout: TaskLayout, strategy: Strategy, device: Device,
                    costs: InstructionCosts, donated: bool, grid_stride: bool,
                    hit_rate: float) -> np.ndarray:
    """Per unit of ``layout``, the rows (see ``unit_timing``) of its work in a sweep with no
    active vertex: they follow from the unit's own layout alone, so a view's layout (some
    units of a sweep's) gives its units' rows without a gather from every unit's."""
    work = clean_unit_work(layout, strategy, device, costs, donated)
    return unit_timing(work, device, layout.k == 1, hit_rate,
                       unit_start_cycles(strategy, device, grid_stride))


CLEAN_SWEEPS_KEPT = 2  # per layout: the last worked out (a donating run times two)


def clean_sweep(layout: TaskLayout, strategy: Strategy, device: Device,
                 costs: InstructionCosts, donated: bool, grid_stride: bool,
                 hit_rate: float) -> CleanSweep:
    """What a sweep with no active vertex costs under ``layout`` (cached in it, by what of the
    strategy it depends on and the identity of the device and costs: hashing those each
    launch would cost more)."""
    key = (strategy.dynamic, strategy.block_size, id(device), id(costs), donated, grid_stride,
           hit_rate)
    # a layout outlives its run (``sweep_layout``): its last few clean sweeps stay
    return kept_recent(
        layout.cache, key,
        lambda: (device, costs, _clean_sweep(layout, strategy, device, costs, donated,
                                             grid_stride, hit_rate)),
        CLEAN_SWEEPS_KEPT, lambda kept: kept[0] is device and kept[1] is costs)[2]


def _clean_sweep(layout: TaskLayout, strategy: Strategy, device: Device,
                 costs: InstructionCosts, donated: bool, grid_stride: bool,
                 hit_rate: float) -> CleanSweep:
    """``clean_sweep``, worked out."""
    units = clean_unit_rows(layout, strategy, device, costs, donated, grid_stride, hit_rate)
    items = timed = varying = prefix = per_warp = None
    base = 0.0
    if grid_stride:
        resident = resident_warps(strategy, device)
        warp = np.arange(layout.units) % resident
        per_warp = np.stack([np.bincount(warp, weights=row, minlength=resident)
                             for row in units])
    else:
        slots, per_item = schedule_slots(strategy, device)
        items = units if strategy.dynamic else block_items(units, per_item)
        durations, counts = np.unique(items[0], return_counts=True)
        base = float(durations[counts.argmax()])
        full = items.shape[1] // slots
        unlike = items[0] != base
        unlike[full * slots :] = True  # the last, partial round
        timed = np.flatnonzero(unlike)
        in_full = items[:, : full * slots]
        varying = 1 + np.flatnonzero((in_full[1:] != items[1:, :1]).any(axis=1))
        prefix = np.zeros((varying.size, full + 1, slots))
        np.cumsum(in_full[varying].reshape(varying.size, full, slots), axis=1,
                  out=prefix[:, 1:])
    return CleanSweep(units, float(units[2].sum()), float(units[3].sum()), items, base, timed,
                      varying, prefix, per_warp)


def sparse_sweep_cycles(
    clean: CleanSweep,
    units: np.ndarray,
    clean_rows: np.ndarray,
    unit: UnitWork,
    strategy: Strategy,
    device: Device,
    queue_atomics: int,
    warp_uniform_sisd: bool,
    transactions: float,
    *,
    grid_stride: bool = False,
    check: int = 0,
    hit_rate: float = 0.0,
) -> tuple[float, np.ndarray]:
    """``kernel_cycles`` of a sweep whose ``units`` (ascending; ``clean_rows`` their clean
    columns) did ``unit``'s work and whose other units did ``clean``'s, ``transactions``
    sectors in all: the same figure in O(units + slots x dirty rounds)."""
    (cycles, bounds), = sparse_sweeps_cycles(
        clean, units, np.zeros(1, dtype=np.int64), clean_rows, unit, strategy, device,
        np.array([queue_atomics]), warp_uniform_sisd, np.array([transactions]),
        grid_stride=grid_stride, check=check, hit_rate=hit_rate,
    )
    return cycles, bounds


def sparse_sweeps_cycles(
    clean: CleanSweep,
    units: np.ndarray,
    segments: np.ndarray,
    clean_rows: np.ndarray,
    unit: UnitWork,
    strategy: Strategy,
    device: Device,
    queue_atomics: np.ndarray,
    warp_uniform_sisd: bool,
    transactions: np.ndarray,
    *,
    grid_stride: bool = False,
    check: int = 0,
    hit_rate: float = 0.0,
) -> list[tuple[float, np.ndarray]]:
    """``sparse_sweep_cycles`` of several sweeps of one layout: sweep i did ``unit``'s work on
    its ``units`` from ``segments[i]`` to the next (ascending, at least one), ``queue_atomics[i]``
    and ``transactions[i]`` in all. Only the list schedule runs sweep by sweep."""
    sms = device.sms
    sweeps = segments.size
    ends = np.append(segments[1:], units.size)
    pass_cycles = device.warp_size / device.simd_width * device.instruction_cycles
    rows = unit_timing(unit, device, warp_uniform_sisd, hit_rate,
                        unit_start_cycles(strategy, device, grid_stride))
    warps_per_block = strategy.block_size // device.warp_size
    per_sm = np.empty((sweeps, 3, sms))
    if grid_stride:
        resident = resident_warps(strategy, device)
        sm = (np.arange(resident) // warps_per_block) % sms
        latency = np.zeros((sweeps, sms))
        for i, (lo, hi) in enumerate(zip(segments.tolist(), ends.tolist(), strict=True)):
            warp = units[lo:hi] % resident
            per_warp = clean.per_warp.copy()
            more = rows[:, lo:hi] - clean_rows[:, lo:hi]
            for row in range(4):
                per_warp[row] += np.bincount(warp, weights=more[row], minlength=resident)
            per_warp[0] += check * pass_cycles + device.round_trip_cycles(hit_rate)
            per_warp[1] += check * pass_cycles
            per_warp[2] += check
            np.maximum.at(latency[i], sm, per_warp[0])
            for row in range(1, 4):
                per_sm[i, row - 1] = np.bincount(sm, weights=per_warp[row], minlength=sms)
    else:
        slots, per_item = schedule_slots(strategy, device)
        if strategy.dynamic:
            dirty, item_segments = units, segments
        else:  # the blocks holding these units, their other units clean
            block_of = units // per_item
            first = np.empty(units.size, dtype=bool)
            first[:1] = True
            np.not_equal(block_of[1:], block_of[:-1], out=first[1:])
            first[segments] = True  # a sweep's blocks are its own
            starts = first.nonzero()[0]
            dirty = block_of[starts]
            item_segments = starts.searchsorted(segments)
            if (rows[0] >= clean_rows[0]).all():
                # a unit with work is no faster than without: a block's slowest unit is its
                # slowest clean one or its slowest unit with work
                block_rows = np.take(clean.items, dirty, axis=1)
                block_of_unit = run_index(first)
                block_rows[1:] += run_sums(rows[1:] - clean_rows[1:], block_of_unit,
                                           dirty.size)
                np.maximum.at(block_rows[0], block_of_unit, rows[0])
                rows = block_rows
            else:
                members = (dirty[:, None] * per_item + np.arange(per_item)).ravel()
                real = members < clean.units.shape[1]
                block_rows = np.zeros((4, members.size))
                block_rows[:, real] = np.take(clean.units, members[real], axis=1)
                block_rows[:, run_index(first) * per_item + units % per_item] = rows
                rows = reduce_items(block_rows.reshape(4, dirty.size, per_item))
        finish, per_sm = _scheduled_sweeps(clean, dirty, item_segments, rows, slots, sms)
        latency = finish.reshape(sweeps, -1, sms).max(axis=1)

    cycles, bounds = launches_bounds(per_sm, latency, transactions, queue_atomics, device,
                                     warp_uniform_sisd, hit_rate,
                                     resident_tail_cycles(strategy, device, grid_stride))
    return [(float(cycles[i]), bounds[i]) for i in range(sweeps)]


def _scheduled_sweeps(clean: CleanSweep, dirty: np.ndarray, segments: np.ndarray,
                      rows: np.ndarray, slots: int, sms: int) -> tuple[np.ndarray, np.ndarray]:
    """Each sweep's list schedule of its items, those from ``segments[i]`` on in ``dirty``
    (ascending item ids; ``rows`` their sums, see ``unit_timing``) and clean ones elsewhere:
    every slot's finish time and every SM's sums of rows 1-3 (sweeps x slots, sweeps x 3 x
    SMs; slot s is on SM s % sms). Where one round holds every item, the finish times only
    of the slots up to the SMs' round holding the last one (the others stay idle at 0)."""
    sweeps = segments.size
    items = clean.items.shape[1]
    full = items // slots
    last_start = full * slots  # the first item of the last, partial round
    bounds = np.append(segments, dirty.size)
    sweep = np.repeat(np.arange(sweeps), np.diff(bounds))
    sm_sums = np.empty((sweeps, 3, sms))
    # the full rounds' clean items: each slot takes one a round
    sm_sums[:] = full * (slots // sms) * clean.items[1:, :1]
    placed = None
    if full == 0:
        placed = _single_round_sweeps(clean, dirty, sweep, rows[0], sweeps, sms)
    elif not clean.varying.size and clean.timed.size == items - last_start:
        placed = _whole_cycle_sweeps(clean, dirty, sweep, rows[0], slots, sweeps)
    if placed is None:
        placed = _sweeps_one_by_one(clean, dirty, bounds.tolist(), rows[0], slots, sms,
                                    sm_sums)
    finish, last_owner, dirty_owner = placed
    # the last round's clean items (with no full round before it, every sweep hands them to
    # the slots in order), then the dirty items' work less their clean work counted above
    last = clean.items[1:, last_start:]
    if full == 0:
        sm_sums += np.stack([np.bincount(last_owner[0] % sms, weights=row, minlength=sms)
                             for row in last])
    else:
        _add_to_sms(sm_sums, np.repeat(np.arange(sweeps), items - last_start),
                    last_owner.ravel(), np.tile(last, sweeps))
    _add_to_sms(sm_sums, sweep, dirty_owner, rows[1:] - np.take(clean.items[1:], dirty, axis=1))
    return finish, sm_sums


def _single_round_sweeps(clean: CleanSweep, dirty: np.ndarray, sweep: np.ndarray,
                         durations: np.ndarray, sweeps: int, sms: int
                         ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``_whole_cycle_sweeps`` where the items fit on the slots in one round (a dynamic
    launch's units on its resident warps): item i takes slot i in every sweep. The slots'
    finish times only up to the SM round holding the last item (the others stay idle)."""
    items = clean.items.shape[1]
    finish = np.zeros((sweeps, ceil_div(items, sms) * sms))
    finish[:, :items] = clean.items[0]
    finish[sweep, dirty] = durations
    return finish, np.arange(items)[None, :], dirty


def _whole_cycle_sweeps(clean: CleanSweep, dirty: np.ndarray, sweep: np.ndarray,
                        durations: np.ndarray, slots: int, sweeps: int
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The sweeps' schedules together (``whole_cycle_schedules``) where only the last
    round's clean items are timed: every slot's finish time, the last round's items' slots
    and the ``dirty`` items' (of ``sweep``, lasting ``durations``); None where that does not
    apply."""
    items = clean.items.shape[1]
    last_start = items // slots * slots
    in_full = dirty < last_start
    in_last = ~in_full
    last = np.tile(clean.items[0, last_start:], (sweeps, 1))
    last[sweep[in_last], dirty[in_last] - last_start] = durations[in_last]
    placed = whole_cycle_schedules(items, slots, clean.base, sweep[in_full], dirty[in_full],
                                   durations[in_full], last)
    if placed is None:
        return None
    owner, last_owner, finish = placed
    dirty_owner = np.empty(dirty.size, dtype=np.int64)
    dirty_owner[in_full] = owner
    dirty_owner[in_last] = last_owner[sweep[in_last], dirty[in_last] - last_start]
    return finish, last_owner, dirty_owner


def _sweeps_one_by_one(clean: CleanSweep, dirty: np.ndarray, bounds: list[int],
                       durations: np.ndarray, slots: int, sms: int, sm_sums: np.ndarray
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``_whole_cycle_sweeps`` one sweep at a time by ``list_schedule_sparse``, for any
    durations; adds the varying rows' sums of the full rounds' clean items to ``sm_sums``."""
    sweeps = len(bounds) - 1
    items = clean.items.shape[1]
    last_start = items // slots * slots
    finish = np.empty((sweeps, slots))
    last_owner = np.empty((sweeps, items - last_start), dtype=np.int64)
    dirty_owner = np.empty(dirty.size, dtype=np.int64)
    for i in range(sweeps):
        lo, hi = bounds[i], bounds[i + 1]
        mine, durations_now = dirty[lo:hi], durations[lo:hi]
        dirty_full = int(mine.searchsorted(last_start))  # dirty items of the full rounds
        # the schedule lists the items of other than the base duration (the clean sweep's
        # timed ones unless now dirty and base, the dirty ones unless base) and the last round
        if clean.timed.size == items - last_start:  # only the last round is timed
            unlike = durations_now[:dirty_full] != clean.base
            listed = np.concatenate([mine[:dirty_full][unlike], clean.timed])
            listed_durations = np.concatenate([durations_now[:dirty_full][unlike],
                                               clean.items[0, last_start:]])
            listed_durations[unlike.sum() + mine[dirty_full:] - last_start] = (
                durations_now[dirty_full:])
        else:
            merged = distinct(np.concatenate([clean.timed, mine]))
            listed_durations = clean.items[0, merged]
            listed_durations[np.searchsorted(merged, mine)] = durations_now
            keep = (listed_durations != clean.base) | (merged >= last_start)
            listed, listed_durations = merged[keep], listed_durations[keep]
        owner, finish[i], placed = list_schedule_sparse(items, slots, clean.base, listed,
                                                        listed_durations,
                                                        every_order=bool(clean.varying.size))
        if clean.varying.size:
            sm_sums[i, clean.varying - 1] = placed.slot_sums(clean.prefix).reshape(
                clean.varying.size, -1, sms).sum(axis=1)
        last_owner[i] = owner[listed.size - (items - last_start):]  # on distinct slots
        at = np.minimum(np.searchsorted(listed, mine), listed.size - 1)
        mine_owner = owner[at]
        unlisted = listed[at] != mine  # of the base duration, in full rounds
        if unlisted.any():
            mine_owner[unlisted] = placed.owners(mine[unlisted])
        dirty_owner[lo:hi] = mine_owner
    return finish, last_owner, dirty_owner


def _add_to_sms(sm_sums: np.ndarray, sweep: np.ndarray, slot: np.ndarray,
                values: np.ndarray) -> None:
    """Add each item's ``values`` (3 rows) to its sweep's sums on its slot's SM (sweeps x 3
    x SMs), by one count per row and SM (a fancy-indexed add costs more)."""
    sweeps, rows, sms = sm_sums.shape
    at = sweep * sms + (slot - slot // sms * sms)  # numpy divides by a scalar faster than %
    for row in range(rows):
        sm_sums[:, row] += np.bincount(at, weights=values[row],
                                       minlength=sweeps * sms).reshape(sweeps, sms)
