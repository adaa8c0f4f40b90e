"""The kernels beside a launch's main expansion: the deferred outliers' kernel (a block per
vertex), the one a level that deferred nothing still launches, and the temporal hybrid's
switches between a worklist and status flags (compaction and scatter)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from simulator.costs import COSTS
from simulator.costs import InstructionCosts
from simulator.costs import LaunchCost
from simulator.device import Device
from simulator.functional import IterationWork
from simulator.functional import edge_ids
from simulator.sectors import WORD_BYTES
from simulator.sectors import ceil_div
from simulator.sectors import distinct_sectors
from simulator.sectors import padded_counts
from simulator.sectors import range_sectors
from simulator.sectors import row_distinct
from simulator.sectors import sector_of
from simulator.sorted_runs import distinct
from simulator.sorted_runs import member_mask
from simulator.strategy import Strategy
from simulator.timing import UnitWork
from simulator.timing import kernel_cycles
from simulator.timing import resident_blocks_per_sm

if TYPE_CHECKING:  # not at run time: the engine imports this module
    from simulator.engine import Launch


def outlier_kernel(
    indptr: np.ndarray,
    indices: np.ndarray,
    vertices: np.ndarray,
    work: IterationWork | Launch,
    strategy: Strategy,
    device: Device,
    *,
    reads_weights: bool = False,
    costs: InstructionCosts = COSTS,
    hit_rate: float = 0.0,
    changed_flag: bool = False,
    unchecked_atomics: bool = False,
    lowers: bool = False,
    gathers: bool = False,
) -> LaunchCost:
    """Cost of the second kernel that expands each deferred vertex with a whole block
    (``changed_flag``: its storing steps store the sweep's changed flag, see the module;
    ``unchecked_atomics``: a step waits for its lanes' atomicMin, ``Strategy.precheck``;
    ``lowers``: SSSP's and CC's, whose every warp clears the vertex's flag and reads its
    value, and whose lowering lanes atomicMin their target and flag it; ``gathers``:
    PageRank's, whose block sums 8-byte shares, its first thread storing the rank and share
    and reading two more, and adds to the change once a block)."""
    ws = device.warp_size
    block = strategy.block_size
    warps = block // ws
    sb = device.sector_bytes
    degree = (indptr[vertices + 1] - indptr[vertices]).astype(np.int64)
    lane_offset = np.arange(warps, dtype=np.int64) * ws
    warp_rounds = ceil_div(np.maximum(degree[:, None] - lane_offset[None, :], 0), block)
    per_step = costs.edge + (costs.weight if reads_weights else 0)
    sisd = np.full(warp_rounds.size, float(costs.setup))
    simd = per_step * warp_rounds.ravel().astype(np.float64)

    # a warp step reads ws consecutive edges of one vertex: natural step j of a vertex is
    # round j // warps of its warp j % warps, so steps are costed in edge order, no sort
    words = sb // WORD_BYTES
    value_words = words // 2 if gathers else words  # PageRank's shares are doubles
    units = warp_rounds.size
    step_vertex, step_j, list_sectors = _run_steps(indptr, vertices, ws, words)
    steps = step_vertex.size
    step_base = np.flatnonzero(step_j == 0)  # each vertex's first step
    step_unit = step_vertex * warps + step_j % warps

    edges = edge_ids(indptr, vertices)
    lane_slot = np.repeat(step_base * ws - indptr[vertices].astype(np.int64), degree) + edges
    neighbour_sector = sector_of(indices[edges], value_words)
    rows = np.full(steps * ws, -1, dtype=neighbour_sector.dtype)
    rows[lane_slot] = neighbour_sector
    step_sectors = list_sectors + row_distinct(rows.reshape(steps, ws))
    if reads_weights:
        step_sectors += list_sectors
    writes = member_mask(edges, work.writes, indices.size)
    write_step = lane_slot[writes] // ws
    # a lowering lane's atomicMin and its flag store: the same words of two arrays
    stores_per_write = 2 if lowers else 1
    step_sectors += stores_per_write * padded_counts(
        distinct_sectors(write_step, neighbour_sector[writes], 1), steps)
    storing_steps = distinct(write_step)
    flag_steps = 0
    if changed_flag:  # as the main kernel's: one flag store per storing step
        step_sectors += np.bincount(storing_steps, minlength=steps)
        flag_steps = storing_steps.size
    sectors = np.bincount(step_unit, weights=step_sectors, minlength=units)
    # each warp reads the queue entry and the two row bounds; a lowering kernel's warp also
    # clears the vertex's flag and reads its value
    setup = 3 + (2 if lowers else 0)
    sectors += setup
    # the first thread's PageRank store: rank and share out, two doubles read beside them
    vertex_stores = 4 if gathers else 0
    sectors[::warps] += vertex_stores
    # the grid strides over the queue with at most the resident blocks, each of whose warps
    # reads the queue's length once (counted with the first vertices' units)
    launched = Strategy(block_size=block)
    blocks = min(vertices.size, device.sms * resident_blocks_per_sm(launched, device))
    sectors[:blocks * warps] += 1
    trips_per_step = 1 + device.atomic_round_trips if unchecked_atomics else 2
    rounds = warp_rounds.ravel()
    if gathers:
        # PageRank's sum over a queued vertex's edges: nvcc unrolls the loop, whose SASS
        # issues at most 2 value loads before an add (``bench/gpu/outlier_gather_groups.sh``),
        # as a chunk walk's: load groups of 4 (``launch_costs.gather_group_size``)
        from simulator.launch_costs import gathered_load_groups  # (it imports this module)

        rounds = gathered_load_groups(rounds, np.ones_like(rounds), 4)
    round_trips = trips_per_step * rounds + 1
    unit_work = UnitWork(sisd, simd, sectors, round_trips)
    # PageRank's change sum: an atomicAdd on one word by each block that expanded a vertex
    sums = blocks if gathers else 0
    # launched as blocks (no grabs on the queue counter), whatever the main kernel's distribution
    cycles, bounds = kernel_cycles(unit_work, launched, device, flag_steps + sums,
                                    False,
                                    units_per_block=warps, hit_rate=hit_rate)
    if unchecked_atomics:  # every lane's atomicMin
        atomics = float(degree.sum())
    else:
        atomics = float(np.count_nonzero(writes)) if lowers else 0.0
    atomics += sums

    simd_issued = float(ws * warp_rounds.sum())
    edges_expanded = float(degree.sum())
    memory_per_step = 2 + (1 if reads_weights else 0)
    return LaunchCost(
        cycles=cycles,
        bounds=bounds[None, :],
        launches=1,
        instructions=float(sisd.sum() + simd.sum()),
        issued_lane_instructions=float(ws * (sisd.sum() + simd.sum())),
        useful_lane_instructions=float(costs.setup * warp_rounds.size + per_step * edges_expanded),
        simd_issued=simd_issued,
        simd_active=edges_expanded,
        u_a=simd_issued - edges_expanded,
        u_r=0.0,
        requests=float(memory_per_step * warp_rounds.sum() + setup * warp_rounds.size
                       + stores_per_write * storing_steps.size + flag_steps
                       + vertex_stores * vertices.size + blocks * warps),
        transactions=float(sectors.sum()),
        atomics=atomics,
        edges=edges_expanded,
    )


def idle_outlier_kernel(device: Device, hit_rate: float = 0.0) -> LaunchCost:
    """The outlier kernel of a level that deferred nothing: the host launches it anyway (it
    does not read the queue length back); its first block reads the empty queue and exits."""
    latency = device.block_launch_cycles + device.round_trip_cycles(hit_rate)
    overhead = device.cycles(device.launch_overhead_us)
    return LaunchCost(cycles=latency + overhead, launches=1, requests=1.0, transactions=1.0,
                      bounds=np.array([[0.0, 0.0, latency, 0.0, 0.0, overhead]]))


def compaction_kernel(
    n: int, flagged: np.ndarray, strategy: Strategy, device: Device,
    costs: InstructionCosts = COSTS, hit_rate: float = 0.0, clears: bool = True,
) -> LaunchCost:
    """The temporal hybrid's switch back, as ``tuner/measure/kernels.cu``'s ``compact_flags``
    and the independent kernels' ``flags_to_queue`` run it: one launch, a thread per vertex
    reads its status word (coalesced) and a flagged one clears it (``clears``; BFS's
    ``compact_levels`` reads levels and clears nothing) and is pushed warp-aggregated: a
    warp with flagged lanes pays the ballot, its leader's atomicAdd on the tail (waited
    for; the pushing warps' atomics serialise on its address) and the stores at consecutive
    slots. ``flagged``: the flagged vertices, ascending."""
    words = device.sector_bytes // WORD_BYTES
    ws = device.warp_size
    units = ceil_div(n, ws)
    flagged = np.asarray(flagged, dtype=np.int64)
    items = np.bincount(flagged // ws, minlength=units).astype(np.int64)
    pushing = items > 0
    sisd = (costs.check + (costs.push + costs.aggregate) * pushing).astype(np.float64)
    sectors = np.full(units, ceil_div(ws, words)) + pushing + ceil_div(items, words)
    if clears:  # the flagged lanes' stores to their own words: the sectors they fall in
        sisd += costs.vertex_store * pushing
        cleared = distinct(flagged // words)
        sectors += np.bincount(cleared * words // ws, minlength=units)
    round_trips = 1 + device.atomic_round_trips * pushing
    plain = Strategy(block_size=strategy.block_size)
    tail_atomics = int(np.count_nonzero(pushing))
    cycles, bounds = kernel_cycles(
        UnitWork(sisd, np.zeros(units), sectors.astype(np.float64), round_trips), plain,
        device, tail_atomics, False, hit_rate=hit_rate,
    )
    return LaunchCost(
        cycles=cycles, bounds=bounds[None, :], launches=1, instructions=float(sisd.sum()),
        issued_lane_instructions=float(ws * sisd.sum()),
        useful_lane_instructions=float(ws * sisd.sum()),
        requests=float(units + (2 + clears) * tail_atomics),
        transactions=float(sectors.sum()), atomics=float(tail_atomics),
    )


def scatter_kernel(
    items: int, strategy: Strategy, device: Device, costs: InstructionCosts = COSTS,
    hit_rate: float = 0.0,
) -> LaunchCost:
    """A thread per worklist item sets its vertex's status flag (the temporal hybrid's switch
    to sweeps): coalesced item reads, one scattered store each."""
    words = device.sector_bytes // WORD_BYTES
    ws = device.warp_size
    units = ceil_div(items, ws)
    lanes = np.full(units, ws)
    if units:
        lanes[-1] = items - ws * (units - 1)
    sisd = np.full(units, float(costs.check + costs.vertex_store))
    sectors = (ceil_div(lanes, words) + lanes).astype(np.float64)
    plain = Strategy(block_size=strategy.block_size)
    cycles, bounds = kernel_cycles(
        UnitWork(sisd, np.zeros(units), sectors, np.full(units, 2)), plain, device, 0, False,
        hit_rate=hit_rate,
    )
    return LaunchCost(
        cycles=cycles, bounds=bounds[None, :], launches=1, instructions=float(sisd.sum()),
        issued_lane_instructions=float(ws * sisd.sum()),
        useful_lane_instructions=float(items * (costs.check + costs.vertex_store)),
        requests=float(2 * units), transactions=float(sectors.sum()),
    )


def _run_steps(indptr: np.ndarray, vertices: np.ndarray, width: int, words: int):
    """Warp steps that each read ``width`` consecutive edges of one vertex (the last one of a
    vertex fewer): each step's vertex (index into ``vertices``), its number j within the vertex,
    and the sectors of its edge-list read, a range in closed form."""
    start = indptr[vertices].astype(np.int64)
    end = indptr[vertices + 1].astype(np.int64)
    steps_of = ceil_div(end - start, width)
    owner = np.repeat(np.arange(vertices.size), steps_of)
    j = np.arange(owner.size, dtype=np.int64) - np.repeat(np.cumsum(steps_of) - steps_of,
                                                            steps_of)
    first = start[owner] + j * width
    last = np.minimum(first + width, end[owner]) - 1
    return owner, j, range_sectors(first, last, words)


def to_sweeps_kernel(algorithm: str, items: int, strategy: Strategy, device: Device,
                     costs: InstructionCosts = COSTS, hit_rate: float = 0.0
                     ) -> LaunchCost | None:
    """The temporal hybrid's (or a policy's) switch from a worklist of ``items`` entries to
    sweeps: their status flags set (``scatter_kernel``); None for BFS, whose sweeps find
    their vertices by level (``tuner/measure``'s runner launches nothing there)."""
    if algorithm == "bfs":
        return None
    return scatter_kernel(items, strategy, device, costs, hit_rate)


def to_worklist_kernel(algorithm: str, n: int, flagged: np.ndarray, strategy: Strategy,
                       device: Device, costs: InstructionCosts = COSTS,
                       hit_rate: float = 0.0) -> LaunchCost:
    """The switch from sweeps back to a worklist of the ``flagged`` vertices
    (``compaction_kernel``): BFS's reads levels and clears no flag (``compact_levels``)."""
    return compaction_kernel(n, flagged, strategy, device, costs, hit_rate,
                             clears=algorithm != "bfs")

