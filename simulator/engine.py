"""The warp cost model: one kernel launch's work laid out on lanes exactly, and its time.

Layout (vertex-parallel kernels). A launch processes tasks t = 0..n-1 (task t is vertex t; a
topology-driven kernel checks every vertex). With W lanes per vertex (W = 1 for the thread
mapping), K = warp_size / W virtual warps share a physical warp, and each virtual warp takes C
consecutive tasks (C = 1 for the thread mapping). Physical-warp unit p therefore holds tasks
[p*K*C, (p+1)*K*C), virtual warp k the tasks p*K*C + k*C + j for positions j = 0..C-1, and the
virtual warps walk their positions in lockstep (the loop over the chunk is uniform).

Per position j, an expanding task of degree d needs s = ceil(d / W) SIMD steps, and the warp
issues the lockstep maximum over its virtual warps (reconverging after each position):

    steps_p        = sum_j max_k s[p, k, j]
    issued_p       = warp_size * steps_p                   (SIMD lane-steps)
    U_A            = sum (W * s - d)                       (Cheng et al., intra-group)
    U_R            = sum W * (max_k s[p, k, j] - s)        (inter-group)
    active + U_A + U_R = issued                            (active = edges expanded)

SISD-phase instructions per position: a status check (every real task), the row-bound setup
(if any virtual warp's vertex is active), an outlier push (if any is deferred), a vertex store
(PageRank); the vwarp kernel first stages its chunk's status and row bounds into shared memory
(ceil(C/W) + ceil((C+1)/W) coalesced steps) and then checks from there; a dynamic kernel adds
one queue grab (K serialised atomics on one counter) per unit of K chunks. A warp's
instruction count is I_p = SISD_p + (edge cost per step) * steps_p.

Memory: each memory instruction of a warp step costs its distinct sectors (``sector_bytes``),
counted exactly from the addresses of the lanes active in that step: the neighbour-list read
indices[e] (coalesced), the neighbour status read status[indices[e]] (scattered), the edge
weight read (SSSP), the stores of lanes that update, the SISD reads. Caches are not modelled:
every sector is DRAM traffic (an upper bound on bytes).

Time. A warp alone takes L_p = I_p * (warp_size / simd_width) + M_p * dram_latency cycles,
with M_p its dependent memory round trips (2 per SIMD step: neighbour id, then its status).
Static distribution launches one virtual warp per chunk; blocks of block_size/32 units occupy a
block slot (min(max_blocks_per_sm, max_warps_per_sm / warps_per_block) per SM) until their
slowest warp ends, and are list-scheduled onto the slots. Dynamic distribution launches only the
resident warps, which list-schedule the units themselves. Per SM:

    T_sm   = max( sum I / issue_rate,  sum sectors / lsu_sectors_per_cycle,  latency makespan )
    T_kern = max( max_sm T_sm,  bytes / dram_bytes_per_cycle,  queue atomics * atomic_cycles )
             + launch_overhead

Deferred outliers (degree > threshold) are pushed to a queue by atomic and expanded by a second
kernel with one block of block_size threads per vertex (thread i takes edges i, i + B, ...).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import partial

import numpy as np

from simulator.device import Device
from simulator.functional import IterationWork
from simulator.functional import edge_ids
from simulator.scheduling import list_schedule
from simulator.strategy import Strategy

WORD_BYTES = 4  # vertex ids, row offsets, status words and weights are 32-bit on the device


@dataclass(frozen=True)
class InstructionCosts:
    """Warp instructions per kernel phase; one memory instruction in each memory phase."""

    check: int = 2  # load status, compare-and-branch
    setup: int = 3  # load row bounds, compute the loop range
    edge: int = 4  # per SIMD step: load neighbour id, load its status, compare, store
    weight: int = 1  # per SIMD step: load the edge weight (SSSP)
    stage: int = 1  # vwarp: one staging step into shared memory
    grab: int = 3  # dynamic: atomicAdd on the queue, broadcast through shared memory
    defer_push: int = 2  # atomicAdd on the outlier queue, store the vertex id
    vertex_store: int = 1  # PageRank: store the new rank


COSTS = InstructionCosts()


@dataclass
class LaunchCost:
    """Counters of one or more kernel launches; adding two gives the counters of both."""

    cycles: float = 0.0
    launches: int = 0
    instructions: float = 0.0
    issued_lane_instructions: float = 0.0
    useful_lane_instructions: float = 0.0
    simd_issued: float = 0.0
    simd_active: float = 0.0
    u_a: float = 0.0
    u_r: float = 0.0
    requests: float = 0.0
    transactions: float = 0.0
    atomics: float = 0.0
    edges: float = 0.0
    tasks: float = 0.0
    active_tasks: float = 0.0

    def __add__(self, other: LaunchCost) -> LaunchCost:
        return LaunchCost(
            **{
                f.name: getattr(self, f.name) + getattr(other, f.name)
                for f in dataclasses.fields(self)
            }
        )


@dataclass
class _UnitWork:
    """Per physical-warp-unit totals that the timing stage needs."""

    sisd: np.ndarray
    simd: np.ndarray
    sectors: np.ndarray
    round_trips: np.ndarray


def distinct_sectors(
    group: np.ndarray, sector: np.ndarray, unit_of_group: np.ndarray | int
) -> np.ndarray:
    """Distinct (group, sector) pairs per unit: the transactions each warp step issues.

    ``group`` numbers warp steps globally; ``unit_of_group`` maps a step to its warp unit (an
    array, or an int g meaning unit = step // g). Elements arrive as a few ascending runs per
    unit, which the stable (run-merging) sort handles fast.
    """
    if group.size == 0:
        return np.zeros(0, dtype=np.int64)
    bits = int(sector.max()).bit_length()
    keys = group << bits
    keys |= sector
    keys.sort(kind="stable")
    first = np.empty(keys.size, dtype=bool)
    first[0] = True
    np.not_equal(keys[1:], keys[:-1], out=first[1:])
    first_groups = keys[first] >> bits
    if isinstance(unit_of_group, int | np.integer):
        return np.bincount(first_groups // unit_of_group)
    return np.bincount(unit_of_group[first_groups])


def unit_transactions(
    group: np.ndarray,
    word_index: np.ndarray,
    unit_of_group: np.ndarray | int,
    *,
    words_per_sector: int,
    units: int,
) -> np.ndarray:
    """Transactions per warp unit of one memory instruction: lanes' 32-bit word indices,
    grouped by warp step, counted as distinct sectors (see ``distinct_sectors``)."""
    counts = distinct_sectors(group, _sector_of(word_index, words_per_sector), unit_of_group)
    return _per_unit(counts, units)


def _sector_of(word_index: np.ndarray, words_per_sector: int) -> np.ndarray:
    """Sector of each 32-bit word index (a shift when the sector holds 2**k words)."""
    if words_per_sector & (words_per_sector - 1) == 0:
        return word_index >> (words_per_sector.bit_length() - 1)
    return word_index // words_per_sector


def _per_unit(counts: np.ndarray, units: int) -> np.ndarray:
    """Pad a bincount to ``units`` entries."""
    out = np.zeros(units, dtype=np.int64)
    out[: counts.size] = counts
    return out


def _ceil_div(a, b):
    return -(-a // b)


def _any_virtual_warp(mask: np.ndarray, units: int, k: int, c: int) -> np.ndarray:
    """Per (unit, position): whether any of the K virtual warps' tasks is set."""
    shaped = mask.reshape(units, k, c)
    return shaped[:, 0, :] if k == 1 else shaped.any(axis=1)


def _sum_positions(per_position: np.ndarray) -> np.ndarray:
    """Per unit: the sum over its C positions (int64)."""
    if per_position.shape[1] == 1:
        return per_position[:, 0].astype(np.int64)
    return per_position.sum(axis=1, dtype=np.int64)


def _count_distinct(values: np.ndarray) -> int:
    """Number of distinct values (sort-based; faster than np.unique on large arrays)."""
    if values.size == 0:
        return 0
    ordered = np.sort(values, kind="stable")
    return int(np.count_nonzero(ordered[1:] != ordered[:-1])) + 1


def _positions_in_sorted(haystack: np.ndarray, needles: np.ndarray) -> np.ndarray:
    """Indices in ascending ``haystack`` of those ``needles`` it contains."""
    at = np.searchsorted(haystack, needles)
    inside = at < haystack.size
    inside[inside] = haystack[at[inside]] == needles[inside]
    return at[inside]


@dataclass(frozen=True, eq=False)
class TaskLayout:
    """The iteration-independent part of a vertex kernel's layout under one strategy: which
    warp unit holds which task, and the SISD traffic every launch repeats (staging or checks).
    """

    w: int
    c: int
    k: int
    units: int
    real_positions: np.ndarray
    static_sectors: np.ndarray
    static_requests: int

    @property
    def per_unit(self) -> int:
        """Tasks per physical-warp unit (K virtual warps of C tasks)."""
        return self.k * self.c


def task_layout(n: int, strategy: Strategy, device: Device) -> TaskLayout:
    """Lay n tasks out on warp units and count the SISD sectors every launch reads."""
    w = strategy.lanes_per_vertex
    c = strategy.vertices_per_grab
    k = device.warp_size // w
    per_unit = k * c
    units = _ceil_div(n, per_unit)
    words = device.sector_bytes // WORD_BYTES
    real = np.zeros(units * per_unit, dtype=bool)
    real[:n] = True
    real_positions = real.reshape(units, k, c).any(axis=1).sum(axis=1)
    tasks = np.arange(n, dtype=np.int64)
    task_unit = tasks // per_unit

    count = partial(unit_transactions, words_per_sector=words, units=units)

    if strategy.mapping == "thread":
        # every launch's status check: each thread reads its own vertex's status word
        static_sectors = count(task_unit, tasks, 1)
        static_requests = int(real_positions.sum())
    else:
        # the chunk's status words and C+1 row bounds, staged by W lanes per step
        per_stage = _ceil_div(c + 1, w)
        stage_group = task_unit * per_stage + (tasks % c) // w
        static_sectors = count(stage_group, tasks, per_stage)
        chunk_ends = np.arange(0, n, c, dtype=np.int64)
        bounds = np.concatenate([tasks, np.minimum(chunk_ends + c, n)])
        bounds_group = np.concatenate([stage_group, (chunk_ends // per_unit) * per_stage + c // w])
        order = np.argsort(bounds_group, kind="stable")
        static_sectors += count(bounds_group[order], bounds[order], per_stage)
        static_requests = units * (_ceil_div(c, w) + per_stage)
    return TaskLayout(w, c, k, units, real_positions, static_sectors, static_requests)


def vertex_kernel(
    indptr: np.ndarray,
    indices: np.ndarray,
    work: IterationWork,
    strategy: Strategy,
    device: Device,
    *,
    reads_weights: bool = False,
    stores_per_vertex: bool = False,
    costs: InstructionCosts = COSTS,
    layout: TaskLayout | None = None,
) -> LaunchCost:
    """Cost of one iteration of a topology-driven vertex kernel (plus its outlier kernel).

    Pass the ``layout`` of ``task_layout`` to share its work across a run's launches.
    """
    n = indptr.size - 1
    ws = device.warp_size
    layout = layout or task_layout(n, strategy, device)
    w, c, k, units, per_unit = layout.w, layout.c, layout.k, layout.units, layout.per_unit
    padded = units * per_unit
    sb = device.sector_bytes

    degree = np.diff(indptr)
    active = np.zeros(padded, dtype=bool)
    active[work.active] = True
    deferred = np.zeros(padded, dtype=bool)
    if strategy.defer_threshold is not None:
        deferred[:n] = active[:n] & (degree > strategy.defer_threshold)
    expanding = active & ~deferred
    expanding_ids = np.flatnonzero(expanding)
    steps = np.zeros(padded, dtype=np.int64)
    steps[expanding_ids] = _ceil_div(degree[expanding_ids], w)

    steps3 = steps.reshape(units, k, c)
    position_steps = steps3[:, 0, :] if k == 1 else steps3.max(axis=1)
    simd_steps = _sum_positions(position_steps)
    active_pos = _any_virtual_warp(active, units, k, c)
    deferred_pos = _any_virtual_warp(deferred, units, k, c)
    active_positions = _sum_positions(active_pos)
    deferred_positions = _sum_positions(deferred_pos)

    thread = strategy.mapping == "thread"
    sisd = (
        costs.check * layout.real_positions
        + costs.setup * active_positions
        + costs.defer_push * deferred_positions
    ).astype(np.float64)
    if stores_per_vertex:
        sisd += costs.vertex_store * active_positions
    stage_steps = 0 if thread else _ceil_div(c, w) + _ceil_div(c + 1, w)
    sisd += costs.stage * stage_steps
    if strategy.dynamic:
        sisd += costs.grab
    per_step = costs.edge + (costs.weight if reads_weights else 0)
    simd = per_step * simd_steps.astype(np.float64)

    n_real = n
    n_active = int(active[:n].sum())
    n_deferred = int(deferred.sum())
    edges_expanded = int(degree[expanding_ids].sum())
    chunks = _ceil_div(n, c)
    useful_sisd = (
        costs.check * n_real
        + costs.setup * n_active
        + costs.defer_push * n_deferred
        + (costs.vertex_store * n_active if stores_per_vertex else 0)
        + (0 if thread else costs.stage * (2 * n_real + chunks))
        + (costs.grab * chunks if strategy.dynamic else 0)
    )

    # --- exact sector counts -------------------------------------------------------------
    # SIMD phase: warp step id = first step of the unit + steps of earlier positions + e // W.
    step_base = np.zeros(units, dtype=np.int64)
    np.cumsum(simd_steps[:-1], out=step_base[1:])
    position_base = np.zeros_like(position_steps)
    np.cumsum(position_steps[:, :-1], axis=1, out=position_base[:, 1:])
    edges, local = edge_ids(indptr, expanding_ids, with_local=True)
    vertex_unit = expanding_ids // per_unit
    vertex_base = step_base[vertex_unit] + position_base[vertex_unit, expanding_ids % c]
    group = np.repeat(vertex_base, degree[expanding_ids]) + (local if w == 1 else local // w)
    del local
    neighbours = indices[edges].astype(np.int64)
    words = sb // WORD_BYTES  # 32-bit words per sector

    count = partial(unit_transactions, words_per_sector=words, units=units)

    unit_of_step = np.repeat(np.arange(units), simd_steps)
    list_sectors = count(group, edges, unit_of_step)
    sectors = list_sectors + count(group, neighbours, unit_of_step)
    if reads_weights:
        sectors += list_sectors
    store_requests = 0
    if work.writes.size and edges.size:
        at = _positions_in_sorted(edges, work.writes)
        sectors += count(group[at], neighbours[at], unit_of_step)
        store_requests = _count_distinct(group[at])
    del group, edges, neighbours, unit_of_step

    # SISD phase: beside the layout's per-launch traffic, the thread kernel reads the row
    # bounds of its active vertices from global memory (the vwarp kernel staged them).
    sectors += layout.static_sectors
    sisd_requests = layout.static_requests
    act = np.flatnonzero(active[:n])
    if thread:
        sectors += count(act // per_unit, act, 1)
        sectors += count(act // per_unit, act + 1, 1)
        sisd_requests += int(2 * active_pos.sum())
    if stores_per_vertex:
        sectors += count((act // per_unit) * c + act % c, act, c)
        sisd_requests += int(active_pos.sum())
    if n_deferred:
        sectors += deferred.reshape(units, per_unit).sum(axis=1)

    round_trips = 2 * simd_steps + deferred_positions
    round_trips += (layout.real_positions + active_positions) if thread else 1
    if strategy.dynamic:
        round_trips += 1
    memory_per_step = 2 + (1 if reads_weights else 0)
    requests = memory_per_step * simd_steps.sum() + store_requests + sisd_requests
    queue_atomics = (k * units if strategy.dynamic else 0) + n_deferred

    unit_work = _UnitWork(sisd, simd, sectors.astype(np.float64), round_trips)
    cycles = _kernel_cycles(unit_work, strategy, device, queue_atomics, k == 1)

    simd_issued = float(ws * simd_steps.sum())
    u_a = float(w * steps.sum() - edges_expanded)
    main = LaunchCost(
        cycles=cycles,
        launches=1,
        instructions=float(sisd.sum() + simd.sum()),
        issued_lane_instructions=float(ws * (sisd.sum() + simd.sum())),
        useful_lane_instructions=float(useful_sisd + per_step * edges_expanded),
        simd_issued=simd_issued,
        simd_active=float(edges_expanded),
        u_a=u_a,
        u_r=simd_issued - edges_expanded - u_a,
        requests=float(requests),
        transactions=float(sectors.sum()),
        atomics=float(queue_atomics),
        edges=float(edges_expanded),
        tasks=float(n_real),
        active_tasks=float(n_active),
    )
    if n_deferred:
        main = main + outlier_kernel(
            indptr, indices, np.flatnonzero(deferred), work, strategy, device,
            reads_weights=reads_weights, costs=costs,
        )
    return main


def outlier_kernel(
    indptr: np.ndarray,
    indices: np.ndarray,
    vertices: np.ndarray,
    work: IterationWork,
    strategy: Strategy,
    device: Device,
    *,
    reads_weights: bool = False,
    costs: InstructionCosts = COSTS,
) -> LaunchCost:
    """Cost of the second kernel that expands each deferred vertex with a whole block."""
    ws = device.warp_size
    block = strategy.block_size
    warps = block // ws
    sb = device.sector_bytes
    degree = (indptr[vertices + 1] - indptr[vertices]).astype(np.int64)
    lane_offset = np.arange(warps, dtype=np.int64) * ws
    warp_rounds = _ceil_div(np.maximum(degree[:, None] - lane_offset[None, :], 0), block)
    per_step = costs.edge + (costs.weight if reads_weights else 0)
    sisd = np.full(warp_rounds.size, float(costs.setup))
    simd = per_step * warp_rounds.ravel().astype(np.float64)

    edges, local = edge_ids(indptr, vertices, with_local=True)
    owner = np.repeat(np.arange(vertices.size), degree)
    warp_of_edge = (local % block) // ws
    units = warp_rounds.size
    group_base = np.zeros(units, dtype=np.int64)
    np.cumsum(warp_rounds.ravel()[:-1], out=group_base[1:])
    group = group_base[owner * warps + warp_of_edge] + local // block
    order = np.argsort(group, kind="stable")
    group, edges = group[order], edges[order]
    neighbours = indices[edges].astype(np.int64)
    words = sb // WORD_BYTES
    unit_of_step = np.repeat(np.arange(units), warp_rounds.ravel())

    count = partial(unit_transactions, words_per_sector=words, units=units)

    list_sectors = count(group, edges, unit_of_step)
    sectors = list_sectors + count(group, neighbours, unit_of_step)
    if reads_weights:
        sectors += list_sectors
    writes = np.isin(edges, work.writes)
    sectors += count(group[writes], neighbours[writes], unit_of_step)
    sectors = sectors + 1  # the queue entry and row bounds
    round_trips = 2 * warp_rounds.ravel() + 1
    unit_work = _UnitWork(sisd, simd, sectors.astype(np.float64), round_trips)
    cycles = _kernel_cycles(unit_work, strategy, device, 0, False, units_per_block=warps)

    simd_issued = float(ws * warp_rounds.sum())
    edges_expanded = float(degree.sum())
    memory_per_step = 2 + (1 if reads_weights else 0)
    return LaunchCost(
        cycles=cycles,
        launches=1,
        instructions=float(sisd.sum() + simd.sum()),
        issued_lane_instructions=float(ws * (sisd.sum() + simd.sum())),
        useful_lane_instructions=float(costs.setup * warp_rounds.size + per_step * edges_expanded),
        simd_issued=simd_issued,
        simd_active=edges_expanded,
        u_a=simd_issued - edges_expanded,
        u_r=0.0,
        requests=float(memory_per_step * warp_rounds.sum() + warp_rounds.size),
        transactions=float(sectors.sum()),
        edges=edges_expanded,
    )


def _kernel_cycles(
    unit: _UnitWork,
    strategy: Strategy,
    device: Device,
    queue_atomics: int,
    warp_uniform_sisd: bool,
    *,
    units_per_block: int | None = None,
) -> float:
    """Launch time in cycles from per-unit instructions, sectors and dependent round trips."""
    warps_per_block = strategy.block_size // device.warp_size
    units_per_block = units_per_block or warps_per_block
    blocks_per_sm = max(
        1, min(device.max_blocks_per_sm, device.max_warps_per_sm // warps_per_block)
    )
    pass_cycles = device.warp_size / device.simd_width
    scalar = device.scalar_unit and warp_uniform_sisd
    simd_cycles = unit.simd * pass_cycles + (0 if scalar else unit.sisd * pass_cycles)
    alone = simd_cycles + (unit.sisd if scalar else 0) + unit.round_trips * (
        device.dram_latency_cycles
    )
    instructions = unit.simd + (0 if scalar else unit.sisd)
    if strategy.dynamic:
        slots = device.sms * blocks_per_sm * warps_per_block
        durations = alone + device.atomic_cycles
        items_instr, items_sisd, items_sectors = instructions, unit.sisd, unit.sectors
    else:
        slots = device.sms * blocks_per_sm
        blocks = _ceil_div(alone.size, units_per_block)
        pad = blocks * units_per_block - alone.size

        def per_block(values, reduce):
            return reduce(np.pad(values, (0, pad)).reshape(blocks, units_per_block), axis=1)

        durations = per_block(alone, np.max)
        items_instr = per_block(instructions, np.sum)
        items_sisd = per_block(unit.sisd, np.sum)
        items_sectors = per_block(unit.sectors, np.sum)
    owner, finish = list_schedule(durations, slots)
    sm = owner % device.sms
    latency = finish.reshape(-1, device.sms).max(axis=0)
    issue = np.bincount(sm, weights=items_instr, minlength=device.sms) / device.issue_rate
    if scalar:
        scalar_issue = np.bincount(sm, weights=items_sisd, minlength=device.sms)
        issue = np.maximum(issue, scalar_issue / device.schedulers)
    lsu = np.bincount(sm, weights=items_sectors, minlength=device.sms)
    lsu /= device.lsu_sectors_per_cycle
    sm_time = np.maximum(np.maximum(issue, lsu), latency).max(initial=0.0)
    dram = unit.sectors.sum() * device.sector_bytes / device.dram_bytes_per_cycle
    atomics = queue_atomics * device.atomic_cycles
    return float(max(sm_time, dram, atomics) + device.cycles(device.launch_overhead_us))
