"""Which launches an algorithm's iterations become under a strategy's driven form, and what
each costs: topology sweeps (optionally unrolled), worklist launches, the temporal hybrid's
switches with their conversion kernels, and the spatial hybrid's representatives."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from dataclasses import field

import numpy as np

from simulator import store_races
from simulator.asynchronous import AsynchronousLowering
from simulator.asynchronous import ChunkWalk
from simulator.asynchronous import StaggeredChunkWalk
from simulator.asynchronous import StaggeredWaves
from simulator.auxiliary_kernels import idle_outlier_kernel
from simulator.auxiliary_kernels import to_sweeps_kernel
from simulator.auxiliary_kernels import to_worklist_kernel
from simulator.costs import COSTS
from simulator.costs import InstructionCosts
from simulator.costs import LaunchCost
from simulator.device import Device
from simulator.engine import Launch
from simulator.engine import LaunchPushes
from simulator.engine import batches_sweeps
from simulator.engine import batches_worklists
from simulator.engine import launch_pushes
from simulator.engine import sweep_kernels
from simulator.engine import vertex_kernel
from simulator.engine import worklist_kernels
from simulator.errors import ConfigError
from simulator.functional import FunctionalRun
from simulator.functional import IterationWork
from simulator.functional import kept
from simulator.lanes import DonatedSteps
from simulator.layout import TaskLayout
from simulator.layout import sweep_layout
from simulator.mappings import MAPPINGS
from simulator.sorted_runs import distinct
from simulator.sorted_runs import distinct_ids
from simulator.sorted_runs import run_starts
from simulator.sorted_runs import stable_order
from simulator.store_races import RacingStores
from simulator.store_races import unrelaxed_sources
from simulator.strategy import Strategy
from simulator.timing import grid_barrier_cycles
from simulator.timing import resident_blocks_per_sm
from simulator.timing import resident_warps
from simulator.timing import schedule_slots
from simulator.timing import working_set_bytes

HYBRID_ALGORITHMS = ("bfs", "sssp", "cc")
# Consecutive plain sweeps of one strategy holding up to this many active vertices in all are
# costed together (``engine.sweep_kernels``); 0 costs each on its own. (USA-road-FLA BFS, best
# of 3 at 2^14 / 2^15 / 2^16 / 2^17: thread 0.40 / 0.38 / 0.34 / 0.40 s, W=32 0.55 / 0.50 /
# 0.48 / 0.47 s, donation 0.51 / 0.46 / 0.44 / 0.44 s.)
_BATCH_ACTIVE = 1 << 16
# ... and expanding up to this many edges in all: a sweep of millions of edges costs less
# alone, numpy's fixed cost per call being nothing to its work (rmat:scale=20's second level,
# 64422 vertices and 22M edges, run with the first: 1.03-1.12x the whole BFS's time)
_BATCH_SWEEP_EDGES = 1 << 20
# ... and holding at most this many sweeps x schedule items (the larger of the layout's items
# and the device's slots): their schedule keeps a finish time per sweep and item (a path's
# sweeps, one vertex each, had batched 65536 sweeps of 50000 items at W = 32: 26 GB)
_BATCH_SWEEP_ITEMS = 1 << 22
# Worklist launches of one strategy holding up to this many slots and expanding up to this
# many edges in all are costed together (``engine.worklist_kernels``) once their pushes are
# known (which lays their lanes out twice: worth it only where numpy's fixed cost per call
# outweighs the work); 0 slots costs each as it comes.
_BATCH_SLOTS = 1 << 17
_BATCH_EDGES = 1 << 17
# A spatial hybrid's launches list whole partitions, most of whose slots only check their
# status: this many of them count as one worklist slot toward _BATCH_SLOTS (USA-road-FLA BFS,
# partitions of 16, at 1 / 4 / 8 / 16: 0.56 / 0.51 / 0.49 / 0.49 s; the 2M-vertex road grid at
# 1 / 8 / 16: 1.02 / 0.91 / 0.90 s)
_LISTED_SLOTS_PER_SLOT = 8


@dataclass
class IterationCost:
    """One iteration's launches: their cost, the form that ran it and the W it used."""

    cost: LaunchCost | _PendingCost  # pending only until the run's launcher settles
    form: str
    w: int


def _batch_slots(launch: Launch) -> int:
    """What a listed launch's slots count toward a batch's ``_BATCH_SLOTS``."""
    if launch.lookup == "worklist":
        return launch.slots.size
    return -(-launch.slots.size // _LISTED_SLOTS_PER_SLOT)


@dataclass(eq=False)
class _PendingCost:
    """A worklist launch whose cost comes later, with other launches' (``Launcher.settle``),
    its pushes known (None: partitions, worked out then) and its edges counted, and what that
    cost then takes on: the worklist's items and duplicates, the kernels that follow it
    (``pending + kernel``), the host's round trip."""

    launch: Launch
    strategy: Strategy
    pushes: LaunchPushes | None
    edges: int
    worklist_items: float = 0.0
    duplicates: float = 0.0
    kernels: list[LaunchCost] = field(default_factory=list)
    host: bool = False

    def __add__(self, kernel: LaunchCost) -> _PendingCost:
        self.kernels.append(kernel)
        return self


def check_applicable(strategy: Strategy, algorithm: str) -> None:
    """Refuse knobs that the algorithm's kernels do not have."""
    if strategy.driven in ("temporal", "spatial") and algorithm not in HYBRID_ALGORITHMS:
        raise ConfigError(
            f"driven={strategy.driven!r} does not apply to {algorithm}: the hybrids switch "
            f"between worklist and sweep forms of {', '.join(HYBRID_ALGORITHMS)}; use "
            "driven='topology' or 'data'"
        )
    if strategy.relax == "store" and algorithm not in ("sssp", "cc"):
        raise ConfigError(
            f"relax='store' does not apply to {algorithm}: it replaces the atomicMin by which "
            "SSSP and CC lower a value"
            + (" (BFS's worklists store plainly already)" if algorithm == "bfs" else "")
        )
    if strategy.unchecked_atomics and algorithm not in ("sssp", "cc"):
        raise ConfigError(
            f"precheck=false does not apply to {algorithm}: it drops the read before the "
            "atomicMin by which SSSP and CC lower a value, and its kernels issue none")
    if strategy.changed_flag is not None and algorithm == "pagerank":
        raise ConfigError(
            f"changed_flag={strategy.changed_flag!r} does not apply to pagerank: its sweeps "
            "add their changes to a sum the host reads, they store no flag"
        )
    if (strategy.unroll or 1) > 1 and algorithm not in HYBRID_ALGORITHMS:
        raise ConfigError(
            f"unroll={strategy.unroll} does not apply to {algorithm}: kernel unrolling is "
            f"modelled for the level-synchronous {', '.join(HYBRID_ALGORITHMS)}"
        )


class Launcher:
    """Costs launches of one run, sharing sweep layouts across iterations."""

    def __init__(self, functional: FunctionalRun, strategy: Strategy, device: Device,
                 costs: InstructionCosts):
        self.fr, self.strategy, self.device, self.costs = functional, strategy, device, costs
        self.degree = np.diff(functional.indptr)
        # SSSP and CC lower distances and labels with atomicMin in every launch, as a correct
        # kernel must (two relaxations of one target race); BFS writers all store one level
        self.atomic_updates = functional.algorithm in ("sssp", "cc")
        self.layouts: dict[Strategy, TaskLayout] = {}
        self.mapping = MAPPINGS[strategy.mapping]
        self.hit_rate = device.l2_hit_rate(working_set_bytes(
            functional.n, functional.indices.size, reads_weights=functional.reads_weights,
            worklist=strategy.driven != "topology",
        ))
        # with deferral, the outlier kernel follows every launch once the graph has outliers
        threshold = strategy.defer_threshold
        self.has_outliers = threshold is not None and bool(
            self.degree.size and self.degree.max() > threshold
        )
        self.pending: list[IterationCost] = []
        self.pending_slots = self.pending_edges = 0

    def strategy_for(self, active: np.ndarray) -> Strategy:
        """The strategy an iteration over the ``active`` vertices runs as (adaptive: the
        vwarp one of the W its frontier picks)."""
        if not self.mapping.per_iteration:
            return self.strategy
        return self.mapping.for_iteration(self.strategy, self.degree[active])

    def width(self, work: IterationWork) -> int:
        """W the iteration runs with (1 for the thread-based mappings)."""
        return self.strategy_for(work.active).lanes_per_vertex

    def sweep_layout(self, strategy: Strategy) -> TaskLayout:
        if strategy not in self.layouts:
            self.layouts[strategy] = sweep_layout(self.fr.n, strategy, self.device)
        return self.layouts[strategy]

    def launch(self, launch: Launch, strategy: Strategy) -> LaunchCost:
        cost = vertex_kernel(
            self.fr.indptr, self.fr.indices, launch, strategy, self.device,
            reads_weights=self.fr.reads_weights, stores_per_vertex=self.fr.stores_per_vertex,
            atomic_updates=self.atomic_updates, costs=self.costs,
            layout=self.sweep_layout(strategy) if launch.slots is None else None,
            hit_rate=self.hit_rate,
        )
        return self._with_idle_outliers(cost, launch, strategy)

    def sweeps(self, launches: list[Launch], strategy: Strategy) -> list[LaunchCost]:
        """Costs of plain sweeps (``engine.batches_sweeps``) under one strategy, costed
        together."""
        costs = sweep_kernels(
            self.fr.indptr, self.fr.indices, launches, strategy, self.device,
            reads_weights=self.fr.reads_weights, stores_per_vertex=self.fr.stores_per_vertex,
            atomic_updates=self.atomic_updates, costs=self.costs,
            layout=self.sweep_layout(strategy), hit_rate=self.hit_rate,
        )
        return [self._with_idle_outliers(cost, launch, strategy)
                for cost, launch in zip(costs, launches, strict=True)]

    def worklist_launch(self, launch: Launch, strategy: Strategy, cache: dict | None = None,
                        ) -> tuple[LaunchCost | _PendingCost, np.ndarray | None,
                                   tuple[np.ndarray, np.ndarray] | None]:
        """A launch that builds a worklist: its cost, or a small one's cost to come (costed
        with others by ``settle``), the items it pushed (None for a small launch that
        pushes partitions: no launch expands them, so they are worked out with its cost) and,
        where known, their ranks among its targets and those targets
        (``LaunchPushes.item_ranks``, ``targets``). ``cache``: that of the work it replays
        (``IterationWork.cache``)."""
        small = (_BATCH_SLOTS and batches_worklists(launch)
                 and _batch_slots(launch) <= _BATCH_SLOTS)
        # a worklist's duplicates expand their edges again, counted once its pushes are known
        edges = self.active_edges(launch, cache) if small else 0
        if not small or edges > _BATCH_EDGES:
            cost = self.launch(launch, strategy)
            return cost, cost.pushed, None
        if launch.pushes == "partitions":
            return _PendingCost(launch, strategy, None, edges), None, None
        pushes = launch_pushes(self.fr.indptr, self.fr.indices, launch, strategy, self.device,
                               cache)
        ranks = None if pushes.item_ranks is None else (pushes.item_ranks, pushes.targets)
        return _PendingCost(launch, strategy, pushes, pushes.edges), pushes.items, ranks

    def active_edges(self, launch: Launch, cache: dict | None) -> int:
        """The edges the launch's active vertices expand: the work's alone, kept with it
        (``cache``: its ``IterationWork.cache``)."""
        return kept(cache, "active_edges", lambda: int(self.degree[launch.active].sum()))

    def iteration(self, cost: LaunchCost | _PendingCost, form: str, w: int) -> IterationCost:
        """An iteration's record; a pending cost is filled in by a later ``settle``, which
        comes once enough slots or edges are pending."""
        iteration = IterationCost(cost, form, w)
        if isinstance(cost, _PendingCost):
            self.pending.append(iteration)
            self.pending_slots += _batch_slots(cost.launch)
            self.pending_edges += cost.edges
            if self.pending_slots > _BATCH_SLOTS or self.pending_edges > _BATCH_EDGES:
                self.settle()
        return iteration

    def settle(self) -> None:
        """Cost the pending worklist launches, runs of one strategy (and with pushes known
        or not) together."""
        pending, self.pending = self.pending, []
        self.pending_slots = self.pending_edges = 0
        start = 0
        while start < len(pending):
            s = pending[start].cost.strategy
            known = pending[start].cost.pushes is not None
            end = start + 1
            while (end < len(pending) and pending[end].cost.strategy == s
                   and (pending[end].cost.pushes is not None) == known):
                end += 1
            run = [iteration.cost for iteration in pending[start:end]]
            pushes = [p.pushes for p in run]
            costs = worklist_kernels(
                self.fr.indptr, self.fr.indices, [p.launch for p in run],
                pushes if known else None, s, self.device,
                reads_weights=self.fr.reads_weights,
                stores_per_vertex=self.fr.stores_per_vertex,
                atomic_updates=self.atomic_updates, costs=self.costs, hit_rate=self.hit_rate,
            )
            for iteration, p, cost in zip(pending[start:end], run, costs, strict=True):
                cost = self._with_idle_outliers(cost, p.launch, p.strategy)
                cost.worklist_items += p.worklist_items
                cost.duplicates += p.duplicates
                for kernel in p.kernels:
                    cost = cost + kernel
                if p.host:
                    self.host(cost)
                iteration.cost = cost
            start = end

    def _with_idle_outliers(self, cost: LaunchCost, launch: Launch,
                            strategy: Strategy) -> LaunchCost:
        """With deferral on a graph with outliers, the outlier kernel follows every launch,
        idle where the launch deferred none."""
        if self.has_outliers and not (self.degree[launch.active]
                                      > strategy.defer_threshold).any():
            cost = cost + idle_outlier_kernel(self.device, self.hit_rate)
        return cost

    def host(self, cost: LaunchCost | _PendingCost) -> None:
        """Add the host's round trip after a launch (it reads a flag or the queue length)."""
        if isinstance(cost, _PendingCost):
            cost.host = True
            return
        host = self.device.cycles(self.device.host_roundtrip_us)
        cost.cycles += host
        cost.host_cycles += host


def iteration_costs(
    functional: FunctionalRun,
    strategy: Strategy,
    device: Device,
    costs: InstructionCosts = COSTS,
) -> list[IterationCost]:
    """Every iteration's launches under ``strategy``, host round trips included."""
    if strategy.policy is not None:  # a per-iteration policy file (simulator/policy.py)
        from simulator.policy import policy_iteration_costs
        from simulator.policy import strategy_policy
        policy = strategy_policy(strategy, functional.algorithm, device)
        return policy_iteration_costs(functional, policy, device, costs)
    check_applicable(strategy, functional.algorithm)
    launcher = Launcher(functional, strategy, device, costs)
    if strategy.driven == "topology":
        return _topology(launcher)
    if strategy.driven == "data":
        out = _data(launcher)
    elif strategy.driven == "spatial":
        out = _spatial(launcher)
    else:
        out = _temporal(launcher)
    launcher.settle()
    return out


def _sweeps(launcher: Launcher):
    """Each sweep's work, strategy and storing lanes (None: the first copy of a vertex stores
    ``work.writes``): the functional run's iterations, or for SSSP and CC the sweeps as the
    device runs them (``asynchronous_sweep``), until one lowers nothing."""
    if not launcher.atomic_updates:
        for work in launcher.fr.iterations:
            yield work, launcher.strategy_for(work.active), None
        return
    run = asynchronous_run(launcher)
    active = launcher.fr.iterations[0].active.astype(np.int64)
    while active.size:
        work, s, store_lanes, active = asynchronous_sweep(launcher, run, active)
        yield work, s, store_lanes


def asynchronous_sweep(launcher: Launcher, run: AsynchronousLowering, active: np.ndarray,
                       slots: np.ndarray | None = None, slot_count: int | None = None):
    """One SSSP or CC sweep over the ``active`` vertices, each reading the values its sweep's
    earlier waves of resident warps lowered (``simulator.asynchronous``: wide virtual warps
    hold few vertices a wave, so their sweeps converge in fewer rounds): its work, strategy,
    storing lanes, and the vertices it lowered (the next sweep's). ``slots``: the active
    vertices' places among the launch's slots, where those are not every vertex (a spatial
    hybrid's listed partitions; ``slot_count``: the launch's slots there)."""
    s = launcher.strategy_for(active)
    lockstep = MAPPINGS[s.mapping].lockstep_width(s)
    staggered = None
    if (slots is None and launcher.device.staggered_waves and lockstep is not None
            and not s.dynamic and (s.unroll or 1) == 1):  # blocks launched, not resident
        staggered = StaggeredWaves(
            s.block_size // s.lanes_per_vertex,
            launcher.device.sms * resident_blocks_per_sm(s, launcher.device), lockstep)
    donated = None
    if (lockstep is None and s.vertices_per_grab == 1
            and MAPPINGS[s.mapping].shares_within_block(s)):
        donated = DonatedSteps(s.block_size, s.donate_threshold, launcher.device.warp_size,
                               launcher.fr.n if slots is None else slot_count)
    walk = chunk_walk(s, launcher.device)
    if (slots is None and walk is not None and not walk.pooled and not s.dynamic
            and (s.unroll or 1) == 1):  # blocks launched, each walking its warps' chunks
        staggered_walk = StaggeredChunkWalk(
            walk, s.block_size // launcher.device.warp_size * walk.slots_per_warp,
            launcher.device.sms * resident_blocks_per_sm(s, launcher.device))
        if staggered_walk.waves(launcher.fr.n) > 1:  # one wave: the walk as it is
            walk = staggered_walk
    stores = run.launch(active, wave_entries(s, launcher.device), s.defer_threshold,
                        slots=active if slots is None else slots, lanes_per_vertex=lockstep,
                        walk=walk, staggered=staggered,
                        donated=donated)
    work = IterationWork(active, stores.outlier_writes, stores.values)
    return work, s, stores.lanes, stores.lowered(launcher.fr.indices, launcher.fr.n)


def asynchronous_run(launcher: Launcher) -> AsynchronousLowering:
    """A run of SSSP's or CC's launches as the device relaxes them (its L1, its sectors)."""
    device = launcher.device
    return AsynchronousLowering(launcher.fr, device.cached_value_reads, device.sector_bytes)


def chunk_walk(s: Strategy, device: Device) -> ChunkWalk | None:
    """How a sweep's warps walk their chunks (None: one slot each)."""
    if s.vertices_per_grab == 1:
        return None
    per_warp = device.warp_size // s.lanes_per_vertex * s.vertices_per_grab
    mapping = MAPPINGS[s.mapping]
    if mapping.redistributes:  # a position's edges go through the warp's table
        return ChunkWalk(s.vertices_per_grab, per_warp,
                         device.warp_size if mapping.all_lanes else 0, pooled=True)
    return ChunkWalk(s.vertices_per_grab, per_warp, s.lanes_per_vertex,
                     staged=s.lanes_per_vertex > 1)


def asynchronous_worklist(launcher: Launcher, run: AsynchronousLowering,
                          worklist: np.ndarray):
    """One SSSP or CC worklist launch in waves of resident entries: its work, strategy and
    storing lanes."""
    order = stable_order(worklist)  # one sort gives the distinct vertices and first copies
    starts = run_starts(worklist[order])
    active = worklist[order[starts]]
    s = launcher.strategy_for(active)
    races = None
    if s.relax == "store":
        races = RacingStores(
            launcher.device.warp_size // s.lanes_per_vertex * s.vertices_per_grab,
            s.lanes_per_vertex, store_races.LOST_RACE_RATE)
    stores = run.launch(worklist, wave_entries(s, launcher.device), s.defer_threshold,
                        first_copies=np.sort(order[starts]), races=races)
    return IterationWork(active, stores.outlier_writes, stores.values), s, stores.lanes


def _topology(launcher: Launcher) -> list[IterationCost]:
    """Sweeps; with ``unroll`` k, k levels per launch on a resident (fixed) grid, separated by
    grid barriers instead of relaunches and host round trips."""
    strategy, device = launcher.strategy, launcher.device
    unroll = strategy.unroll or 1
    sweeps = ((Launch.sweep(work, grid_stride=unroll > 1, store_lanes=store_lanes), s,
               work.cache) for work, s, store_lanes in _sweeps(launcher))
    out = []
    for i, (s, cost) in enumerate(_sweep_costs(launcher, sweeps)):
        if i % unroll == 0:
            launcher.host(cost)
        else:  # the level runs inside the previous launch, after a grid barrier
            # its row keeps its bounds but not a launch's overhead, which calibration scales
            overhead = cost.bounds[0, -1]
            cost.bounds = cost.bounds.copy()
            cost.bounds[0, -1] = 0.0
            barrier = grid_barrier_cycles(s, device, launcher.hit_rate)
            cost.cycles += barrier - overhead
            cost.extra_cycles += barrier
            cost.launches -= 1
        out.append(IterationCost(cost, "topology", s.lanes_per_vertex))
    return out


def _sweep_costs(launcher: Launcher, sweeps):
    """Each of ``sweeps``' (launch, strategy, ``IterationWork.cache`` of the work it replays)
    triples' strategy and cost, in order: runs of small plain sweeps of one strategy costed
    together (``_BATCH_ACTIVE``; SSSP's and CC's with the storing lanes their waves found),
    the others one by one as they come."""
    batch: list[Launch] = []
    batch_strategy, held, held_edges, most = None, 0, 0, 1
    for launch, s, cache in sweeps:
        small = launch.active.size <= _BATCH_ACTIVE and batches_sweeps(launch, s)
        edges = launcher.active_edges(launch, cache) if small else 0
        small = small and edges <= _BATCH_SWEEP_EDGES
        if batch and not (small and held + launch.active.size <= _BATCH_ACTIVE
                          and held_edges + edges <= _BATCH_SWEEP_EDGES
                          and len(batch) < most
                          and (s is batch_strategy or s == batch_strategy)):
            for cost in launcher.sweeps(batch, batch_strategy):
                yield batch_strategy, cost
            batch, held, held_edges = [], 0, 0
        if small:
            if not batch:
                most = _most_batched_sweeps(launcher, s)
            batch.append(launch)
            batch_strategy = s
            held, held_edges = held + launch.active.size, held_edges + edges
        else:
            yield s, launcher.launch(launch, s)
    for cost in launcher.sweeps(batch, batch_strategy) if batch else ():
        yield batch_strategy, cost


def _most_batched_sweeps(launcher: Launcher, s: Strategy) -> int:
    """How many sweeps of ``s`` one batch may hold (``_BATCH_SWEEP_ITEMS``)."""
    slots, per_item = schedule_slots(s, launcher.device)
    items = -(-launcher.sweep_layout(s).units // per_item)
    return max(1, _BATCH_SWEEP_ITEMS // max(items, slots))


def initial_worklist(functional: FunctionalRun) -> np.ndarray:
    """The first launch's worklist: the source, or every vertex."""
    return functional.iterations[0].active.astype(np.int64)


def wave_entries(strategy: Strategy, device: Device) -> int:
    """Worklist entries a launch runs at once: its resident warps' units."""
    per_unit = device.warp_size // strategy.lanes_per_vertex * strategy.vertices_per_grab
    return resident_warps(strategy, device) * per_unit


def data_launch(launcher: Launcher, work: IterationWork, worklist: np.ndarray,
                self_pushes: np.ndarray | None = None, store_lanes: np.ndarray | None = None,
                ranks: tuple[np.ndarray, np.ndarray] | None = None,
                ) -> tuple[LaunchCost | _PendingCost, np.ndarray,
                           tuple[np.ndarray, np.ndarray] | None]:
    """A worklist launch (its cost, or its cost to come), the items it pushed (the next
    worklist, duplicates included) and, where known, their ranks among its targets with
    those targets (the next launch's ``ranks``: its slots' among its active vertices)."""
    s = launcher.strategy_for(work.active)
    launch = Launch(
        work.active, work.writes, slots=worklist, lookup="worklist", push=s.push,
        pushes="self" if self_pushes is not None else "targets", self_pushes=self_pushes,
        grid_stride=not s.variable_grid, write_values=work.write_values,
        store_lanes=store_lanes, slot_ranks=None if ranks is None else ranks[0],
        ranked_among=None if ranks is None else ranks[1], rechecks=s.relax == "store",
    )
    cost, pushed, pushed_ranks = launcher.worklist_launch(launch, s, work.cache)
    cost.worklist_items += worklist.size
    cost.duplicates += worklist.size - work.active.size
    return cost, pushed, pushed_ranks


def _data(launcher: Launcher) -> list[IterationCost]:
    """Worklist launches: each expands the items the previous one pushed, duplicates too."""
    fr = launcher.fr
    if fr.worklist_run is not None:  # PageRank: the vertices whose rank still moves
        iterations = fr.worklist_run.iterations
        out = []
        for i, work in enumerate(iterations):
            nxt = iterations[i + 1].active if i + 1 < len(iterations) else work.active[:0]
            cost, _, _ = data_launch(launcher, work, work.active.astype(np.int64), nxt)
            launcher.host(cost)
            out.append(launcher.iteration(cost, "data", launcher.width(work)))
        return out
    if launcher.atomic_updates:
        return _asynchronous_data(launcher)
    worklist, ranks = initial_worklist(fr), None
    out = []
    for work in fr.iterations:
        cost, worklist, ranks = data_launch(launcher, work, worklist, ranks=ranks)
        launcher.host(cost)
        out.append(launcher.iteration(cost, "data", launcher.width(work)))
    return out


def _asynchronous_data(launcher: Launcher) -> list[IterationCost]:
    """SSSP's and CC's worklist launches as the device runs them, in waves of resident
    entries (``simulator.asynchronous``), until one pushes nothing; under plain stores
    (``relax=store``) then a verify sweep, whose vertices with an edge still to relax (a
    lowering a racing store lost) start the launches again, until one finds none."""
    run = asynchronous_run(launcher)
    worklist = initial_worklist(launcher.fr)
    out = []
    for _ in range(MOST_VERIFY_SWEEPS):
        while worklist.size:
            work, s, store_lanes = asynchronous_worklist(launcher, run, worklist)
            cost, worklist, _ = data_launch(launcher, work, worklist, store_lanes=store_lanes)
            launcher.host(cost)
            out.append(launcher.iteration(cost, "data", s.lanes_per_vertex))
        if launcher.strategy.relax != "store":
            return out
        fr = launcher.fr
        worklist = unrelaxed_sources(fr.indptr, fr.indices, run.values, fr.edge_values)
        out.append(verify_sweep(launcher, worklist))
        if not worklist.size:
            return out
    raise RuntimeError(f"plain-store relaxation still lost updates after "
                       f"{MOST_VERIFY_SWEEPS} verify sweeps")


# Verify sweeps a plain-store run may take before the model is deemed broken: each repairs
# every update its launches lost, and repairs lose fewer (the H100's take 2-7).
MOST_VERIFY_SWEEPS = 1000


def verify_sweep(launcher: Launcher, unrelaxed: np.ndarray) -> IterationCost:
    """The sweep that makes plain-store relaxation exact: every vertex reads its edges and
    its targets' values, stores nothing, and pushes itself where an edge is unrelaxed
    (``unrelaxed``: an update a racing store lost, ``simulator.store_races``) by an
    atomicAdd on the tail, as the independent kernels' ``verify_edges`` does, charged as
    ``push=atomic``'s (warp-aggregated: one a pushing warp step); the host reads whether any
    was."""
    fr = launcher.fr
    s = launcher.strategy_for(np.arange(fr.n))
    sweep = dataclasses.replace(s, driven="topology", push=None, dedup=None,
                                variable_grid=None, relax=None)
    empty = np.zeros(0, dtype=np.int64)
    cost = launcher.launch(Launch(np.arange(fr.n), empty, store_lanes=empty, push="atomic",
                                  pushes="self", self_pushes=unrelaxed), sweep)
    launcher.host(cost)
    return launcher.iteration(cost, "topology", sweep.lanes_per_vertex)


def _spatial(launcher: Launcher) -> list[IterationCost]:
    """Representatives of P consecutive vertices on the worklist; each launch visits all P
    vertices behind every representative (the first store into a partition pushes it). SSSP's
    and CC's launches run in waves that read the values earlier waves lowered, as their
    sweeps do (``asynchronous_sweep``): a launch's active vertices are those the previous one
    lowered, its partitions theirs."""
    fr, strategy = launcher.fr, launcher.strategy
    p = strategy.partition
    n = fr.n
    out = []
    for work, store_lanes, reps in _spatial_launches(launcher):
        s = launcher.strategy_for(work.active)
        slots = (reps[:, None] * p + np.arange(p)).ravel()
        if reps.size and (int(reps[-1]) + 1) * p > n:  # the graph's last partition is short
            slots = slots[slots < n]
        launch = Launch(
            work.active, work.writes, slots=slots, lookup="status", push=s.push,
            pushes="partitions", partition=p, partitions=reps, grid_stride=not s.variable_grid,
            store_lanes=store_lanes,
        )
        cost, _, _ = launcher.worklist_launch(launch, s, work.cache)
        cost.worklist_items += reps.size
        launcher.host(cost)
        out.append(launcher.iteration(cost, "spatial", s.lanes_per_vertex))
    return out


def _spatial_launches(launcher: Launcher):
    """Each spatial launch's work, storing lanes (None: the first copy of a vertex stores
    ``work.writes``) and listed partitions (ascending): the functional run's iterations, or
    for SSSP and CC the launches as the device runs them, until one lowers nothing."""
    fr, p = launcher.fr, launcher.strategy.partition
    partitions = -(-fr.n // p)
    reps = distinct(fr.iterations[0].active.astype(np.int64) // p)
    if not launcher.atomic_updates:
        for work in fr.iterations:
            yield work, None, reps
            # the partitions its writes store into: the work's alone, kept with it
            reps = kept(work.cache, ("partitions", p), lambda writes=work.writes: distinct_ids(
                fr.indices[writes].astype(np.int64) // p, partitions))
        return
    run = asynchronous_run(launcher)
    active = fr.iterations[0].active.astype(np.int64)
    while active.size:
        # an active vertex's slot: its partition's place among the listed ones, then its own
        slot = reps.searchsorted(active // p) * p + active % p
        work, _, store_lanes, active = asynchronous_sweep(launcher, run, active, slot,
                                                          reps.size * p)
        yield work, store_lanes, reps
        reps = distinct_ids(active // p, partitions)


def _temporal(launcher: Launcher) -> list[IterationCost]:
    """Worklist launches while the worklist holds at most ``switch_to_topology`` x N items,
    sweeps (counting what they activate) until fewer than ``switch_to_data`` x N vertices
    are active; a switch to sweeps scatters the worklist into the status flags, a switch back
    compacts the flags into a worklist (BFS's sweeps find their vertices by level: no
    scatter, and its compaction reads levels; ``auxiliary_kernels``). SSSP's and CC's
    launches of either form run asynchronously, as ``driven=data``'s and ``topology``'s do
    (``simulator.asynchronous``), until one lowers nothing; the other algorithms' replay the
    synchronous run.
    ``switch_on=edges`` weighs the worklist and the active vertices by their out-edges
    against the fractions of M."""
    fr, device, strategy = launcher.fr, launcher.device, launcher.strategy
    n = fr.n
    whole = n if strategy.switch_on == "vertices" else fr.indices.size
    to_topology, to_data = strategy.switch_to_topology * whole, strategy.switch_to_data * whole

    def size(frontier: np.ndarray) -> int:
        """What the switch weighs: the frontier's entries, or their out-edges."""
        if strategy.switch_on == "vertices":
            return frontier.size
        return int(launcher.degree[frontier].sum())

    run = asynchronous_run(launcher) if launcher.atomic_updates else None
    synchronous = iter(fr.iterations)
    pending = initial_worklist(fr)  # the next worklist, or the next sweep's active vertices
    ranks = None  # the next worklist's ranks among its launch's active vertices, where known
    form = "topology" if size(pending) > to_topology else "data"
    out = []
    while True:
        if run is None:
            work = next(synchronous, None)
            if work is None:
                break
        elif pending.size == 0:
            break
        store_lanes = None
        if form == "data":
            if run is None:
                s = launcher.strategy_for(work.active)
            else:
                work, s, store_lanes = asynchronous_worklist(launcher, run, pending)
            cost, pending, ranks = data_launch(launcher, work, pending,
                                               store_lanes=store_lanes, ranks=ranks)
            ran = "data"
            if size(pending) > to_topology:
                form = "topology"
                scatter = to_sweeps_kernel(fr.algorithm, pending.size, s, device,
                                           launcher.costs, launcher.hit_rate)
                if scatter is not None:
                    cost = cost + scatter
                pending, ranks = distinct(pending), None
        else:
            if run is None:
                s = launcher.strategy_for(work.active)
                pending = distinct_ids(fr.indices[work.writes], n).astype(np.int64, copy=False)
            else:
                work, s, store_lanes, pending = asynchronous_sweep(launcher, run, pending)
            cost = launcher.launch(Launch.sweep(work, count_activations=True,
                                                store_lanes=store_lanes), s)
            ran = "topology"
            if size(pending) < to_data:
                form = "data"
                cost = cost + to_worklist_kernel(fr.algorithm, n, pending, s, device,
                                                 launcher.costs, launcher.hit_rate)
        launcher.host(cost)
        out.append(launcher.iteration(cost, ran, s.lanes_per_vertex))
    return out
