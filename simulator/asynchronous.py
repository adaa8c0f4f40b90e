"""SSSP and CC as a device runs them: asynchronously, in waves of resident entries.

The functional run is level-synchronous: every lane of an iteration reads its value before any
store. A worklist launch on a device holds only its resident warps' entries at once; the
entries after them start when those finish and read the values they lowered. So a launch
whose entries outnumber its resident lanes (wide virtual warps hold few entries) relaxes
from lower values, stores and pushes less, and the run converges in fewer worklist entries:
on the H100, 1.2-1.5x fewer at W = 32 on coAuthorsDBLP and dblp-2010 than the synchronous
replay (``bench/worklist_fidelity.py``). Modelled here as waves of consecutive entries, each
reading the values every earlier wave left, its own lanes all reading before any store.
Which entries share a wave follows the worklist's order, the order its pushes reached the
tail (``simulator.pushes.arrival_order``). Where a launch holds several waves of short-lived
entries (W = 32 on the road graphs), the GPU reads about 0.75x the entries of this model:
its warps start as others finish, not in waves (``bench/worklist_waves_fidelity.py``,
E = 0).

A sweep (``slots``) runs the same way over the vertex slots, and a spatial hybrid's launch over
its listed partitions' slots: a wave holds the resident warps' consecutive slots, and its
active vertices read the distances the earlier waves of the sweep lowered (the kernel reads
them live), so a vertex lowered again before its wave expands it relays the lower value at
once. Where each virtual warp (thread) walks a chunk of C slots, each slot reads what the
wave's stores made before it started, in steps (``ChunkWalk``, ``_chunked_sweep``): a warp's
next position starts when its current one's edges are done, so warps of light positions run
ahead of one expanding a hub. CC's WER sweeps of 16 vertices a thread take 1017 launches on
road-512 on the H200, 1015 so, 846 with the positions in lockstep across the warps
(``bench/gpu/results/h200_wer.parquet``). Wide virtual warps hold few
slots a wave, and their sweeps converge in fewer rounds: on the H100 web-NotreDame's SSSP takes
31 sweeps at W = 32 and 35 with the thread mapping, as many as the synchronous run (here 31 and
34: its waves hold 270k of the 326k vertices), random-deg32's 21 and 23 (here too;
``bench/gpu/results/h100.parquet``).
Deferred vertices are expanded after every wave, by the outlier kernel, reading what the main
kernel lowered. Within a sweep's wave, a vertex's edges go W at a time in lockstep steps, and
a lane reads its target after the earlier steps' stores: a relaxation that one of them
already beat does not store (``later_steps_see_earlier``; with the thread mapping a vertex of
degree 32 takes 32 steps), as the H100's stores count (``bench/store_count_fidelity.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field

import numpy as np

from simulator.functional import FunctionalRun
from simulator.functional import edge_ids
from simulator.functional import initial_values
from simulator.functional import relax
from simulator.lanes import DonatedSteps
from simulator.sectors import floor_div
from simulator.sorted_runs import distinct
from simulator.sorted_runs import distinct_ids
from simulator.sorted_runs import first_of_each
from simulator.sorted_runs import run_index
from simulator.sorted_runs import run_minima
from simulator.sorted_runs import run_starts
from simulator.sorted_runs import spread
from simulator.sorted_runs import stable_order
from simulator.store_races import RacingStores
from simulator.store_races import race_draw
from simulator.store_races import surviving_stores

# Relax a sweep's waves at once (``AsynchronousLowering._sweep_waves``), with the result of
# relaxing them wave by wave; False: wave by wave (the reference the tests compare with).
_MERGED_SWEEPS = True
# At most about this many edges are relaxed at once (a run of waves, ``_merged_sweep``;
# a wave of more goes alone): their lane arrays stay within the caches, and a sweep of
# millions of edges does not hold them all.
_MERGED_EDGES = 1 << 18
# A chunk position's time in dependent memory round trips, as the kernels' code chains them:
# the slot's status read (every position, unless the walk staged its chunk's statuses and
# row bounds in shared memory: vwarp), an active slot's row bounds (staged: its value), and
# per edge step its neighbour's id, then the atomic (or store) on that neighbour.
ROW_TRIPS = 1
EDGE_STEP_TRIPS = 2


@dataclass(frozen=True)
class ChunkWalk:
    """How a sweep's warps walk their chunks: ``chunk`` consecutive slots per virtual warp
    (thread), ``slots_per_warp`` consecutive slots per warp; a vertex's edges go ``lanes`` at
    a time (W), or with ``pooled``, a position's edges go through one table of the warp
    (WER, WER+), ``lanes`` at a time (WER+: 32; 0: as many as the position's active slots,
    WER's active lanes); ``staged``: the chunk's statuses and row bounds were read into
    shared memory before the walk (vwarp), so a position reads none of them."""

    chunk: int
    slots_per_warp: int
    lanes: int
    pooled: bool = False
    staged: bool = False

    def schedule(self, slots: np.ndarray, lengths: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For active ``slots`` (ascending) of degrees ``lengths``: each one's start within
        its wave, in round trips, the table position of its first edge (0 unless pooled) and
        the lanes its edges go over at once. A warp's position without an active slot takes
        one round trip (its status read; none where staged), one with some ``ROW_TRIPS``
        more and ``EDGE_STEP_TRIPS`` an edge step."""
        warp = slots // self.slots_per_warp
        group = warp * self.chunk + slots % self.chunk
        order = stable_order(group)  # a warp's virtual warps interleave their positions
        ordered = group[order]
        firsts = np.flatnonzero(run_starts(ordered))
        sizes = np.diff(np.append(firsts, ordered.size))
        of_slot = np.empty(slots.size, dtype=np.int64)
        of_slot[order] = np.repeat(np.arange(firsts.size), sizes)
        held = lengths[order]
        if self.pooled:
            table = np.add.reduceat(held, firsts)
            width = (np.full(firsts.size, self.lanes, dtype=np.int64) if self.lanes
                     else sizes.astype(np.int64))
            steps = -(-table // width)
            before = np.cumsum(held) - held
            lane_base = np.empty(slots.size, dtype=np.int64)
            lane_base[order] = before - np.repeat(before[firsts], sizes)
        else:
            width = np.full(firsts.size, self.lanes, dtype=np.int64)
            steps = -(-np.maximum.reduceat(held, firsts) // self.lanes)
            lane_base = np.zeros(slots.size, dtype=np.int64)
        group_warp = ordered[firsts] // self.chunk
        trips = ROW_TRIPS + EDGE_STEP_TRIPS * steps
        done = np.cumsum(trips) - trips  # the warp's earlier active positions' round trips
        warp_firsts = np.flatnonzero(run_starts(group_warp))
        done -= np.repeat(done[warp_firsts], np.diff(np.append(warp_firsts, group_warp.size)))
        start = done if self.staged else ordered[firsts] % self.chunk + done
        return start[of_slot], lane_base, width[of_slot]


@dataclass(frozen=True)
class StaggeredWaves:
    """How a sweep's blocks start where the device starts each block beyond the first
    ``resident_blocks`` as an earlier one finishes (``Device.staggered_waves``): blocks of
    ``slots_per_block`` consecutive slots, each vertex's edges ``lanes`` at a time. The first
    wave starts at once; wave k's blocks, in order, take the finishing times of wave k - 1's,
    in order (in-order dispatch into the freed places, wave by wave). A block takes one round
    trip (its statuses), and one with an active slot ``ROW_TRIPS`` more and
    ``EDGE_STEP_TRIPS`` a step of its longest vertex, as a chunk position does."""

    slots_per_block: int
    resident_blocks: int
    lanes: int
    pooled: bool = False

    def waves(self, n_slots: int) -> int:
        """Waves of resident blocks a sweep over ``n_slots`` slots takes."""
        return _waves(n_slots, self.slots_per_block, self.resident_blocks)

    def schedule(self, slots: np.ndarray, lengths: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For active ``slots`` (ascending) of degrees ``lengths``: each one's start, its
        block's, in round trips; its first edge's lane (0) and its edges' width (``lanes``),
        as ``ChunkWalk.schedule`` gives them."""
        ends = 1 + ROW_TRIPS + EDGE_STEP_TRIPS * (-(-lengths // self.lanes))
        start = staggered_block_starts(slots // self.slots_per_block, ends, 1,
                                       self.resident_blocks)
        return (start, np.zeros(slots.size, dtype=np.int64),
                np.full(slots.size, self.lanes, dtype=np.int64))


def _waves(n_slots: int, slots_per_block: int, resident_blocks: int) -> int:
    """Waves of ``resident_blocks`` blocks of ``slots_per_block`` slots over ``n_slots``."""
    blocks = -(-n_slots // slots_per_block)
    return -(-blocks // resident_blocks)


def staggered_block_starts(block: np.ndarray, ends: np.ndarray, idle: int,
                           resident_blocks: int) -> np.ndarray:
    """Each active slot's block's start, in round trips, as the block scheduler starts them:
    the first ``resident_blocks`` blocks at once, wave k's blocks, in order, at the finishing
    times of wave k - 1's, in order. ``block``: each active slot's block (ascending);
    ``ends``: each one's bound on its block's life; a block without an active slot lives
    ``idle``. Only a wave after one with an active block is sorted: after a wave of idle
    blocks a sorted vector of starts moves by ``idle``, and blocks past the last active one
    read nothing."""
    if block.size == 0:
        return np.zeros(0, dtype=np.int64)
    first = run_starts(block)
    busy = block[first]  # the blocks holding an active slot, and their lives
    life = np.maximum.reduceat(ends, np.flatnonzero(first))
    wave = busy // resident_blocks
    place = busy - wave * resident_blocks  # each busy block's place in its wave
    busy_start = np.zeros(busy.size, dtype=np.int64)
    starts = np.zeros(resident_blocks, dtype=np.int64)  # wave `at`'s blocks', in order
    at, lives = 0, np.full(resident_blocks, idle, dtype=np.int64)
    bounds = np.append(np.flatnonzero(run_starts(wave)), busy.size).tolist()
    waves = wave.take(bounds[:-1]).tolist()
    prev = slice(0, 0)  # the busy blocks of wave `at`
    for lo, hi, k in zip(bounds[:-1], bounds[1:], waves, strict=True):  # busy waves
        if k > at:  # wave at + 1 takes wave at's finishing times in order, then idle waves
            starts += lives
            starts.sort(kind="stable")
            if k > at + 1:
                starts += (k - at - 1) * idle
            lives[place[prev]] = idle
            at = k
        prev = slice(lo, hi)
        busy_start[prev] = starts.take(place[prev])
        lives[place[prev]] = life[prev]
    return busy_start.take(run_index(first))


@dataclass(frozen=True)
class StaggeredChunkWalk:
    """A chunk walk (``ChunkWalk``, not pooled) whose blocks of ``slots_per_block``
    consecutive slots start as ``StaggeredWaves``' do: the first ``resident_blocks`` at once,
    each later one, in order, as one of the earlier wave's finishes. A block lives as long as
    its slowest warp's walk: its statuses (staged: one round trip; else one a position),
    then its active positions' rows and edge steps. A slot starts at its block's start plus
    its place in its warp's walk, one timeline for the whole sweep."""

    walk: ChunkWalk
    slots_per_block: int
    resident_blocks: int

    @property
    def pooled(self) -> bool:
        return self.walk.pooled

    @property
    def lanes(self) -> int:
        return self.walk.lanes

    @property
    def chunk(self) -> int:
        return self.walk.chunk

    @property
    def slots_per_warp(self) -> int:
        return self.walk.slots_per_warp

    def waves(self, n_slots: int) -> int:
        """Waves of resident blocks a sweep over ``n_slots`` slots takes."""
        return _waves(n_slots, self.slots_per_block, self.resident_blocks)

    def schedule(self, slots: np.ndarray, lengths: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``ChunkWalk.schedule``'s starts, each moved by its block's staggered start."""
        within, lane_base, width = self.walk.schedule(slots, lengths)
        status_trips = 1 if self.walk.staged else 0  # staged: the chunk's, before the walk
        idle = 1 if self.walk.staged else self.walk.chunk  # a block without an active slot
        # a warp's walk ends after its last active position's edges and (unstaged) the status
        # reads of the positions after it: each active slot's end bounds its warp's
        ends = within + status_trips + ROW_TRIPS + EDGE_STEP_TRIPS * (-(-lengths // width))
        if not self.walk.staged:
            ends += self.walk.chunk - slots % self.walk.chunk
        start = staggered_block_starts(slots // self.slots_per_block, ends, idle,
                                       self.resident_blocks)
        return start + status_trips + within, lane_base, width


@dataclass(frozen=True)
class L1Reads:
    """When a chunk walk's slots read their own values through L1 (``l1_reads``): each
    active slot's sector's fill (``fill_key``: the earliest read of its sector in the
    sweep) and its warp."""

    fill_key: np.ndarray
    warp: np.ndarray


def l1_reads(walk: ChunkWalk | StaggeredWaves | StaggeredChunkWalk, slots: np.ndarray,
             vertices: np.ndarray, read_key: np.ndarray, values_per_sector: int
             ) -> L1Reads | None:
    """How a chunk walk's own-value reads go through the SM's L1 (None for one slot a
    virtual warp, and for WER's tables): the sector of values a slot reads
    (``values_per_sector`` of them: the sector's bytes over the values' width, so CC's int64
    labels 4 where the kernels' int32 labels are 8) is filled by the sector's first read, and
    a later read of it hits that copy, stale to other warps' stores landed since; the
    warp's own stores (its SM's atomics, which drop the copy) it sees as they land. On an
    H200, reading these values from L2 instead (``bench/gpu/sweep_profiles.py --l1
    bypass``) takes CC's chunk walks to the sweeps the model without L1 gave
    (docs/fidelity.md). ``slots``: the active slots, ascending (their warps);
    ``vertices``: the vertex each reads, whose address gives the sector (a spatial hybrid
    numbers its slots over the partitions it lists, so a slot's neighbour in the walk may
    lie in another sector); ``read_key``: each one's read time."""
    if getattr(walk, "chunk", 1) <= 1 or walk.pooled or slots.size == 0:
        return None
    sector = vertices // max(values_per_sector, 1)
    order = stable_order(sector)
    ordered = sector.take(order)
    firsts = np.flatnonzero(run_starts(ordered))
    fill = np.empty(sector.size, dtype=read_key.dtype)
    fill[order] = np.repeat(np.minimum.reduceat(read_key.take(order), firsts),
                            np.diff(np.append(firsts, sector.size)))
    return L1Reads(fill, slots // walk.slots_per_warp)


@dataclass(frozen=True)
class WaveStores:
    """The stores of one worklist launch run in waves.

    lanes: the main kernel's storing lanes, as positions in its edge order (entry by entry,
    CSR order within, deferred entries left out; ascending); values: the value each stores;
    writes: the edge each of them stores over; outlier_writes: the edges the outlier kernel
    stores to, after the main kernel (ascending, distinct).
    """

    lanes: np.ndarray
    values: np.ndarray
    writes: np.ndarray
    outlier_writes: np.ndarray
    # the vertices the launch lowered, where the launch found them on the way (int64)
    known_lowered: np.ndarray | None = field(default=None, repr=False, compare=False)

    def lowered(self, indices: np.ndarray, n: int) -> np.ndarray:
        """The vertices the launch lowered (ascending): a sweep's next active ones."""
        if self.known_lowered is not None:
            return self.known_lowered
        targets = indices[np.concatenate([self.writes, self.outlier_writes])]
        return distinct_ids(targets, n).astype(np.int64, copy=False)


class AsynchronousLowering:
    """The values of a lowering algorithm (SSSP's distances, CC's labels) as a run's worklist
    launches leave them, one launch at a time."""

    def __init__(self, functional: FunctionalRun, cached_value_reads: bool = False,
                 sector_bytes: int = 32):
        self.indptr, self.indices = functional.indptr, functional.indices
        # a chunk walk's own-value reads through L1 (``Device.cached_value_reads``)
        self.cached_value_reads, self.sector_bytes = cached_value_reads, sector_bytes
        self.edge_values = functional.edge_values
        self.values = initial_values(functional.algorithm, functional.n, functional.source)
        self.launches = 0  # the launch number each race's draw is hashed from
        self._flags: np.ndarray | None = None  # a table of the vertices, all False between uses
        self._degree: np.ndarray | None = None  # each vertex's degree (int64)
        self._entry_of: np.ndarray | None = None  # ``_vertex_table``

    @np.errstate(over="ignore")  # a float32 candidate past the largest is infinite: no store
    def launch(self, worklist: np.ndarray, entries_per_wave: int,
               defer_threshold: int | None = None, *, slots: np.ndarray | None = None,
               lanes_per_vertex: int | None = None,
               first_copies: np.ndarray | None = None,
               races: RacingStores | None = None,
               walk: ChunkWalk | StaggeredChunkWalk | None = None,
               staggered: StaggeredWaves | None = None,
               donated: DonatedSteps | None = None) -> WaveStores:
        """Expand ``worklist`` in waves of ``entries_per_wave`` consecutive entries; entries
        of degree above ``defer_threshold`` are expanded after them all (the outlier kernel).
        ``slots``: each entry's task slot (ascending), where the launch's slots are more than
        its entries (a sweep's are every vertex, its entries the distinct active ones): a
        wave then holds ``entries_per_wave`` consecutive slots. ``lanes_per_vertex`` (a
        sweep's W, each vertex's edges W at a time in lockstep steps): a wave's lanes see the
        stores of its earlier steps (``later_steps_see_earlier``). ``first_copies``: where
        the caller has them, the index of each vertex's first entry in ``worklist``
        (ascending), used where the launch is one wave. ``races``: a worklist launch's
        plain stores race across warps (``simulator.store_races``): some lowerings are
        lost, though their lanes stored and push. ``walk`` (a sweep whose virtual warps or threads
        take C > 1 slots each): each walks its C slots one after another, so within a wave a slot
        reads what the stores timed before its start lowered (``_chunked_sweep``); a
        ``StaggeredChunkWalk`` times the whole sweep so, its blocks beyond the first wave starting
        as the earlier wave's finish. ``staggered`` (a whole sweep, one slot a virtual warp or
        thread): its blocks beyond the first wave start as the earlier wave's finish, and a slot
        reads what the stores timed before its block's start lowered (where the sweep takes more
        than one wave; timed as a chunk walk is). ``donated`` (a sweep whose threads donate, in
        place of ``lanes_per_vertex``): a wave's lanes see the stores of its earlier steps as the
        donation's layout steps them."""
        if entries_per_wave < 1:
            raise ValueError(f"a wave holds at least one entry, not {entries_per_wave}")
        if self._degree is None:
            self._degree = np.diff(self.indptr).astype(np.int64, copy=False)
        degree = self._degree.take(worklist)
        deferred = None if defer_threshold is None else degree > defer_threshold
        lanes, values, writes = [np.zeros(0, dtype=np.int64)], [self.values[:0]], []
        known_lowered = None
        offset = 0
        if slots is None or worklist.size == 0:
            bounds = list(range(0, worklist.size, entries_per_wave)) + [worklist.size]
        else:
            wave_of = slots // entries_per_wave
            bounds = [0, *(np.flatnonzero(wave_of[1:] != wave_of[:-1]) + 1).tolist(),
                      worklist.size]
        if slots is not None and worklist.size and walk is not None and walk.chunk > 1:
            if isinstance(walk, StaggeredChunkWalk):  # one timeline: the blocks' starts
                wave_of = np.zeros(slots.size, dtype=np.int64)
            lanes, values, writes = self._chunked_sweep(worklist, degree, slots, wave_of,
                                                        walk, deferred)
            bounds = []
        elif (slots is not None and worklist.size and staggered is not None
              and staggered.waves(self.indptr.size - 1) > 1):
            lanes, values, writes = self._chunked_sweep(
                worklist, degree, slots, np.zeros(slots.size, dtype=np.int64), staggered,
                deferred)
            bounds = []
        elif slots is not None and worklist.size and _MERGED_SWEEPS:
            expands = slice(None) if deferred is None else ~deferred
            merged = self._merged_sweep(worklist[expands], wave_of[expands], degree[expands],
                                        lanes_per_vertex, donated, slots[expands])
            if merged is not None:
                lanes, values, writes, known_lowered = merged
                bounds = []
        for first, end in zip(bounds[:-1], bounds[1:], strict=True):
            wave = worklist[first:end]
            wave_degree = degree[first:end]
            if deferred is not None:
                expands = ~deferred[first:end]
                wave, wave_degree = wave[expands], wave_degree[expands]
            if slots is not None and (lanes_per_vertex is not None or donated is not None):
                # a sweep's vertices are distinct: every lane may store, unless an earlier
                # step of the wave stored as low
                sub_lanes, wave_writes, wave_values, local = relax(
                    self.indptr, self.indices, wave, self.values, self.edge_values,
                    with_local=True)
                if donated is None:
                    step = floor_div(local, lanes_per_vertex)
                else:
                    wave_slots = slots[first:end]
                    if deferred is not None:
                        wave_slots = wave_slots[expands]
                    step = donated.steps(wave_slots, wave_degree,
                                         np.cumsum(wave_degree).searchsorted(sub_lanes, "right"),
                                         local)
                keep = later_steps_see_earlier(step, self.indices[wave_writes], wave_values)
                sub_lanes, wave_writes = sub_lanes[keep], wave_writes[keep]
                wave_values = wave_values[keep]
                lanes.append(sub_lanes + offset)
            elif slots is not None:
                sub_lanes, wave_writes, wave_values = self._relax(wave)
                lanes.append(sub_lanes + offset)
            else:
                # a later copy of a vertex in the same wave reads what its first copy read
                # and finds its targets lowered already: only first copies store
                whole = first == 0 and end == worklist.size and deferred is None
                firsts = (first_copies if whole and first_copies is not None
                          else np.sort(first_of_each(wave)))
                starts = np.cumsum(wave_degree) - wave_degree
                sub_ends = np.cumsum(wave_degree[firsts])
                shift = starts[firsts] - (sub_ends - wave_degree[firsts]) + offset
                if races is None:
                    vertices = wave[firsts]
                    sub_lanes, wave_writes, wave_values, owner = self._relax_owned(
                        vertices, self.indptr.take(vertices).astype(np.int64, copy=False),
                        wave_degree.take(firsts))
                    lanes.append(sub_lanes + shift[owner])
                else:
                    sub_lanes, wave_writes, wave_values = self._racing_relax(
                        wave[firsts], first + firsts, races)
                    lanes.append(sub_lanes + shift[np.searchsorted(sub_ends, sub_lanes,
                                                                   side="right")])
            values.append(wave_values)
            writes.append(wave_writes)
            offset += int(wave_degree.sum())
        self.launches += 1
        outlier_writes = np.zeros(0, dtype=np.int64)
        if deferred is not None and deferred.any():
            _, outlier_edges, _ = self._relax(distinct(worklist[deferred]))
            outlier_writes = distinct(outlier_edges)
            known_lowered = None
        return WaveStores(np.concatenate(lanes), np.concatenate(values),
                          np.concatenate(writes or [np.zeros(0, dtype=np.int64)]),
                          outlier_writes, known_lowered)

    def _chunked_sweep(self, worklist: np.ndarray, degree: np.ndarray, slots: np.ndarray,
                       wave_of: np.ndarray,
                       walk: ChunkWalk | StaggeredWaves | StaggeredChunkWalk,
                       deferred: np.ndarray | None
                       ) -> tuple[list, list, list]:
        """A sweep whose virtual warps (threads) each walk ``walk.chunk`` consecutive slots
        (or whose blocks start staggered: ``StaggeredWaves``, one wave whose slots start at
        their blocks' times), timed in dependent round trips: a warp's position p starts
        when its earlier positions are done (``ChunkWalk.schedule``: the status read, an
        active slot's row, then its edges ``walk.lanes`` at a time, two round trips a
        step), a lane of edge
        step j stores ``ROW_TRIPS + EDGE_STEP_TRIPS * (j + 1)`` after its slot's read, and a
        slot reads the values every store of its wave made by its start (every earlier
        wave's). Warps of light positions run ahead of those expanding a hub. Returns the
        storing lanes in the sweep's edge order (slot by slot; ascending), their values and
        edges, as ``launch`` returns them: a lane stores where its value is below its
        target's when it lands, after the stores timed before it (those landing between the
        same two reads land together)."""
        expanding = (np.arange(worklist.size) if deferred is None
                     else np.flatnonzero(~deferred))
        nothing = np.zeros(0, dtype=np.int64)
        if expanding.size == 0:
            return [nothing], [self.values[:0]], [nothing]
        vertices = worklist[expanding]
        lengths = degree[expanding]
        start, lane_base, width = walk.schedule(slots[expanding], lengths)
        span = int(start.max() + ROW_TRIPS + EDGE_STEP_TRIPS * (lengths.max() + 1) + 1)
        read_key = wave_of[expanding].astype(np.int64) * span + start
        l1 = (l1_reads(walk, slots[expanding], vertices, read_key,
                       self.sector_bytes // self.values.dtype.itemsize)
              if self.cached_value_reads else None)
        edges, local = edge_ids(self.indptr, vertices, with_local=True, lengths=lengths)
        owner = np.repeat(np.arange(vertices.size), lengths)  # lane -> its slot's entry
        if walk.pooled:
            step = (lane_base.take(owner) + local) // width.take(owner)
        else:  # each vertex's edges from its first lane, ``walk.lanes`` at a time
            step = floor_div(local, walk.lanes)
        store_key = read_key.take(owner)
        store_key += ROW_TRIPS + EDGE_STEP_TRIPS
        store_key += EDGE_STEP_TRIPS * step
        targets = self.indices.take(edges)
        weights = None if self.edge_values is None else self.edge_values.take(edges)
        before = self.values.take(targets)
        candidate = self._settled_candidates(vertices, lengths, read_key, owner, store_key,
                                             targets, weights, before, l1)
        # a lane stores below what its target held before the stores landing before its own;
        # only lanes below their target's value before the sweep store, or bar another's
        lowering = np.flatnonzero(candidate < before)
        lowering_targets = targets.take(lowering)
        lowering_candidate = candidate.take(lowering)
        read_keys = np.unique(read_key)
        landing = np.searchsorted(read_keys, store_key.take(lowering), side="left")
        key = lowering_targets.astype(np.int64) * (read_keys.size + 1) + landing
        by_target = stable_order(key)
        firsts = run_starts(key.take(by_target))
        run_of = run_index(firsts)
        starts = np.flatnonzero(firsts)
        ordered_candidate = lowering_candidate.take(by_target)
        lowest = run_minima(ordered_candidate, starts, run_of)
        run_target = lowering_targets.take(by_target[starts])
        earlier = _exclusive_running_min(lowest, run_target, _highest(self.values.dtype))
        bar = np.minimum(self.values.take(run_target), earlier)
        storing = lowering.take(np.sort(by_target[ordered_candidate < bar.take(run_of)]))
        np.minimum.at(self.values, targets.take(storing), candidate.take(storing))
        return [storing], [candidate.take(storing)], [edges.take(storing)]

    def _settled_candidates(self, vertices: np.ndarray, lengths: np.ndarray,
                            read_key: np.ndarray, owner: np.ndarray, store_key: np.ndarray,
                            targets: np.ndarray, weights: np.ndarray | None,
                            before: np.ndarray, l1: L1Reads | None = None) -> np.ndarray:
        """Each lane's candidate in a timed sweep: its slot's read (the least of its
        vertex's value before the sweep and the values stored to it at or before its
        ``read_key``; with ``l1``, the stores landed by its sector's fill and its own warp's
        atomics, each lane's below its target's value before the sweep, by its read) plus
        its edge's weight (``before``: each lane's target's value before
        the sweep). Every slot reads its value before the sweep, then those an earlier-timed
        store lowered read again, until none is lowered (a store comes after its own slot's
        read, so this settles)."""
        entry_of = self._vertex_table()
        entry_of[vertices] = np.arange(vertices.size, dtype=entry_of.dtype)
        reader = entry_of.take(targets)
        entry_of[vertices] = -1
        if read_key.size and int(read_key.max()) < np.iinfo(np.int32).max:
            read_key = read_key.astype(np.int32)  # as the table: half the bytes to gather
        seen = self.values.take(vertices)

        def read_plus_weight(lanes: np.ndarray | None = None) -> np.ndarray:
            """The candidates of ``lanes`` (all where None) from their slots' reads."""
            if lanes is None:
                return seen.take(owner) if weights is None else seen.take(owner) + weights
            lane_candidate = seen.take(owner.take(lanes))
            if weights is not None:
                lane_candidate += weights.take(lanes)
            return lane_candidate

        def lowering_feeders(lanes: np.ndarray, lane_candidate: np.ndarray
                             ) -> tuple[np.ndarray, np.ndarray]:
            """Those of ``lanes`` (with their candidates) below their target's value before
            the sweep (no other can lower its read) whose store lands by their target's
            read in the sweep."""
            keep = reader.take(lanes) >= 0
            keep &= lane_candidate < before.take(lanes)
            return on_time(lanes[keep], lane_candidate[keep])

        def on_time(lanes: np.ndarray, lane_candidate: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray]:
            """Those of ``lanes`` whose store lands by their target's read."""
            readers = reader.take(lanes)
            lands = store_key.take(lanes)
            if l1 is None:
                keep = lands <= read_key.take(readers)
            else:  # by the sector's fill, or its own warp's by the read itself
                keep = lands <= l1.fill_key.take(readers)
                keep |= ((l1.warp.take(owner.take(lanes)) == l1.warp.take(readers))
                         & (lands <= read_key.take(readers)))
            return lanes[keep], lane_candidate[keep]

        has_reader = reader >= 0
        candidate = read_plus_weight()
        keep = candidate < before
        keep &= has_reader
        lanes = np.flatnonzero(keep)
        lanes, lane_candidate = on_time(lanes, candidate.take(lanes))
        first_lane = np.cumsum(lengths) - lengths
        moved = False
        while lanes.size:
            lowered = seen.copy()
            np.minimum.at(lowered, reader.take(lanes), lane_candidate)
            changed = np.flatnonzero(lowered < seen)
            seen = lowered
            if not changed.size:
                break
            moved = True
            counts = lengths.take(changed)
            if int(counts.sum()) * _DENSE_ROUND_SHARE > targets.size:
                # most lanes read again (a round after hubs' slots): masks over all lanes
                # cost less than gathers of theirs
                again = np.zeros(vertices.size, dtype=bool)
                again[changed] = True
                candidate = read_plus_weight()
                keep = again.take(owner)
                keep &= has_reader
                keep &= candidate < before
                lanes = np.flatnonzero(keep)
                lanes, lane_candidate = on_time(lanes, candidate.take(lanes))
                continue
            again = (np.repeat(first_lane.take(changed) - np.cumsum(counts) + counts, counts)
                     + np.arange(int(counts.sum())))
            lanes, lane_candidate = lowering_feeders(again, read_plus_weight(again))
        return read_plus_weight() if moved else candidate

    def _vertex_table(self) -> np.ndarray:
        """A table of the vertices, -1 between uses: a timed sweep's entry of each (int32
        where the vertices fit: half the bytes a gather from it misses the cache on)."""
        if self._entry_of is None:
            narrow = self.values.size < np.iinfo(np.int32).max
            self._entry_of = np.full(self.values.size, -1,
                                     dtype=np.int32 if narrow else np.int64)
        return self._entry_of

    def _merged_sweep(self, vertices: np.ndarray, wave_of: np.ndarray, lengths: np.ndarray,
                      lanes_per_vertex: int | None, donated: DonatedSteps | None = None,
                      slots: np.ndarray | None = None
                      ) -> tuple[list, list, list, np.ndarray] | None:
        """A sweep's waves (its non-deferred ``vertices``, ascending, each in wave
        ``wave_of``; ``lengths``, their degrees) relaxed in runs of consecutive waves, each
        at once (``_sweep_waves``), from the values the earlier runs left: the storing lanes
        (positions in the waves' edge order), their values and edges, run by run, and the
        vertices the sweep lowered; None where its (wave, step) keys would not fit in int64
        (then wave by wave). A run holds the waves that start within one span of
        ``_MERGED_EDGES`` edges: a sweep of millions of edges (rmat:scale=20 under the
        thread mapping) in one piece would hold a few GB of lane arrays, and gain nothing.
        ``donated``: the sweep's threads donate, its lanes stepped so (``slots``: the
        vertices' slots)."""
        if vertices.size > 1 and not bool((vertices[1:] > vertices[:-1]).all()):
            return None  # a sweep's vertices are distinct and ascending
        if vertices.size == 0:  # every vertex deferred
            none = np.zeros(0, dtype=np.int64)
            return [none], [self.values[:0]], [none], none
        new_wave = np.empty(vertices.size, dtype=bool)
        new_wave[:1] = True
        np.not_equal(wave_of[1:], wave_of[:-1], out=new_wave[1:])
        wave_starts = np.flatnonzero(new_wave)
        steps = 1 if lanes_per_vertex is None else (
            (int(lengths.max(initial=1)) - 1) // lanes_per_vertex + 1)
        if donated is not None:  # own steps, then the box's drain rounds
            steps = int(lengths.max(initial=1)) + int(lengths.sum()) // donated.warp_size + 1
        if (self.indptr.size - 1) * (wave_starts.size + 1) * (steps + 1) >= 2**62:
            return None
        starts = self.indptr.take(vertices).astype(np.int64, copy=False)
        ends = np.cumsum(lengths)
        # each wave's first lane position, and the run that holds it
        first_lane = np.concatenate([[0], ends])[wave_starts]
        run_of = first_lane // _MERGED_EDGES
        cuts = wave_starts[np.flatnonzero(np.diff(run_of, prepend=-1))].tolist()
        lanes, values, writes, lowered = [], [], [], []
        for first, end in zip(cuts, [*cuts[1:], vertices.size], strict=True):
            part = slice(first, end)
            run_lanes, run_values, run_writes, run_lowered = self._sweep_waves(
                vertices[part], wave_of[part], starts[part], lengths[part], lanes_per_vertex,
                None if donated is None else (donated, slots[part]))
            lanes.append(run_lanes + (int(ends[first - 1]) if first else 0))
            values.append(run_values)
            writes.append(run_writes)
            lowered.append(run_lowered)
        if len(lowered) > 1:
            ordered = np.sort(np.concatenate(lowered))
            lowered = [ordered[run_starts(ordered)]]
        return lanes, values, writes, lowered[0]

    def _sweep_waves(self, vertices: np.ndarray, wave_of: np.ndarray, starts: np.ndarray,
                     lengths: np.ndarray, lanes_per_vertex: int | None,
                     donated: tuple[DonatedSteps, np.ndarray] | None = None
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """A run of a sweep's consecutive waves (``vertices``, ascending, each in wave
        ``wave_of``; ``starts`` and ``lengths``, their first edges and degrees) relaxed at
        once, with the stores that relaxing them wave by wave gives: the storing lanes
        (positions in the run's edge order), their values and edges, and the vertices the
        run lowered (ascending, int64: every lowered target keeps its lowest lane).

        Why exact: a lane's candidate is its vertex's value when its wave expands it, the
        least of its value before the run and what earlier waves' lanes stored to it.
        Those values are worked out from the values before the run, lowering only the
        vertices an earlier wave's lane lowers, and again where that lowers their own
        lanes' candidates, until none moves (a wave depends only on earlier ones, so this
        ends, at most one round a wave). A lane then stores iff its candidate is below its
        target's value before the run and below all an earlier (wave, step) stored to its
        target (``later_steps_see_earlier``), as wave by wave, and the values end the same.
        One pass over the run's edges rather than one a wave: a vwarp W = 32 sweep of
        USA-road-FLA holds up to 80 waves."""
        indices, values = self.indices, self.values
        count = vertices.size
        total = int(lengths.sum())
        new_wave = np.empty(count, dtype=bool)
        new_wave[:1] = True
        np.not_equal(wave_of[1:], wave_of[:-1], out=new_wave[1:])
        wave_index = run_index(new_wave)
        waves = int(wave_index[-1]) + 1 if count else 0
        offsets = np.cumsum(lengths) - lengths
        owner = np.repeat(np.arange(count, dtype=np.int64), lengths)
        edges = np.arange(total, dtype=np.int64)
        edges += spread(starts - offsets, lengths, owner)
        cand = spread(values.take(vertices), lengths, owner)
        if self.edge_values is not None:
            cand += self.edge_values.take(edges)
        targets = indices.take(edges)
        target_values = values.take(targets)
        lowering = cand < target_values
        lanes = np.flatnonzero(lowering)
        if waves > 1 and self._interactions(vertices, wave_index, lanes, lengths, offsets,
                                            edges, cand, targets, target_values, lowering):
            lanes = np.flatnonzero(lowering)
        written = cand.take(lanes)
        lane_targets = targets.take(lanes)
        np.minimum.at(values, lane_targets, written)
        lowered, twice = _lowered_and_shared(lane_targets)
        if lanes_per_vertex is not None or donated is not None or waves > 1:
            lane_owner = owner.take(lanes)
            step = wave_index.take(lane_owner)
            within = None
            if lanes_per_vertex is not None:
                within = floor_div(lanes - offsets.take(lane_owner), lanes_per_vertex)
            elif donated is not None:
                within = donated[0].steps(donated[1], lengths, lane_owner,
                                          lanes - offsets.take(lane_owner))
            if within is not None:
                step = step * (int(within.max(initial=0)) + 1) + within
            if self._flags is None:
                self._flags = np.zeros(self.indptr.size - 1, dtype=bool)
            shared = np.zeros(0, dtype=np.int64)
            if twice.size:  # the lanes whose target another lane shares
                self._flags[twice] = True
                shared = np.flatnonzero(self._flags.take(lane_targets))
                self._flags[twice] = False
            keep = later_steps_see_earlier(step, lane_targets, written, shared)
            lanes, written = lanes[keep], written[keep]
        return lanes, written, edges.take(lanes), lowered

    def _interactions(self, vertices: np.ndarray, wave_index: np.ndarray, lanes: np.ndarray,
                      lengths: np.ndarray, offsets: np.ndarray, edges: np.ndarray,
                      cand: np.ndarray, targets: np.ndarray, target_values: np.ndarray,
                      lowering: np.ndarray) -> bool:
        """Where a run's earlier waves lower vertices its later waves expand, the
        candidates (``cand``, in place) and ``lowering`` lanes (``lanes``: those lowering
        from the values before the run) as those vertices' lanes see them: each such
        vertex's value lowered, and its lanes' candidates worked out again, round by round
        until none moves (``_sweep_waves``). Whether any moved."""
        # the run's vertices ascend, so a lane's target is expanded by a later wave iff it
        # is above its own wave's last vertex and one of the run's vertices
        last = np.flatnonzero(np.append(wave_index[1:] != wave_index[:-1], True))
        per_wave = np.diff(lanes.searchsorted(offsets[last] + lengths[last], side="left"),
                           prepend=0)
        later = np.flatnonzero(targets[lanes] > np.repeat(vertices[last], per_wave))
        lanes, at = self._expanded_at(vertices, lanes[later], targets)
        if lanes.size == 0:
            return False
        expanded = self.values[vertices]
        best = expanded.copy()
        np.minimum.at(best, at, cand[lanes])
        while True:
            moved = at[best[at] < expanded[at]]
            if moved.size == 0:
                return True
            moved = distinct(moved)
            expanded[moved] = best[moved]
            lanes = edge_ids(None, moved, starts=offsets[moved], lengths=lengths[moved])
            again = np.repeat(expanded[moved], lengths[moved])
            if self.edge_values is not None:
                again += self.edge_values[edges[lanes]]
            cand[lanes] = again
            lowers = again < target_values[lanes]
            lowering[lanes] = lowers
            bound = np.repeat(vertices[last][wave_index[moved]], lengths[moved])
            lanes = lanes[lowers & (targets[lanes] > bound)]
            lanes, at = self._expanded_at(vertices, lanes, targets)
            np.minimum.at(best, at, cand[lanes])

    @staticmethod
    def _expanded_at(vertices: np.ndarray, lanes: np.ndarray, targets: np.ndarray
                     ) -> tuple[np.ndarray, np.ndarray]:
        """Those of ``lanes`` whose target is one of the sweep's ascending ``vertices``, and
        its place among them."""
        wanted = targets[lanes]
        at = vertices.searchsorted(wanted)
        found = at < vertices.size
        found[found] = vertices[at[found]] == wanted[found]
        return lanes[found], at[found]

    def _relax_owned(self, vertices: np.ndarray, starts: np.ndarray, lengths: np.ndarray
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``_relax`` of ``vertices`` (``starts``, ``lengths``: their first edges and degrees,
        int64), with each lowering lane's vertex (its index in ``vertices``): the caller
        places the lanes by it rather than by searching the vertices' ends."""
        total = int(lengths.sum())
        owner = np.repeat(np.arange(vertices.size, dtype=np.int64), lengths)
        edges = np.arange(total, dtype=np.int64)
        edges += spread(starts - (np.cumsum(lengths) - lengths), lengths, owner)
        cand = spread(self.values.take(vertices), lengths, owner)
        if self.edge_values is not None:
            cand += self.edge_values.take(edges)
        targets = self.indices.take(edges)
        lanes = np.flatnonzero(cand < self.values.take(targets))
        written = cand.take(lanes)
        np.minimum.at(self.values, targets.take(lanes), written)
        return lanes, edges.take(lanes), written, owner.take(lanes)

    def _relax(self, vertices: np.ndarray):
        return relax(self.indptr, self.indices, vertices, self.values, self.edge_values)

    def _racing_relax(self, vertices: np.ndarray, entries: np.ndarray, races: RacingStores):
        """``_relax`` of the wave's ``vertices`` (at ``entries``, their positions in the
        launch's worklist) where plain stores race: every lowering lane stores, but only
        the stores that survive the races lower the values."""
        lanes, writes, written, local = relax(self.indptr, self.indices, vertices,
                                              self.values, self.edge_values,
                                              with_local=True, lower=False)
        targets = self.indices[writes]
        ends = np.cumsum(self.indptr[vertices + 1] - self.indptr[vertices])
        warps = entries[np.searchsorted(ends, lanes, side="right")] // races.entries_per_warp
        steps = floor_div(local, races.lanes_per_vertex)
        lost = race_draw(targets, self.launches) < races.rate
        keep = surviving_stores(targets, steps, warps, written, lost)
        np.minimum.at(self.values, targets[keep], written[keep])
        return lanes, writes, written


# A timed sweep's settling round (``AsynchronousLowering._settled_candidates``) whose slots
# read again hold more than 1 / this of the sweep's lanes works over all lanes by masks.
_DENSE_ROUND_SHARE = 4
# From this many lanes per target id, ``later_steps_see_earlier`` counts the lanes of each
# target through a table and sorts only those of targets stored to more than once.
_SHARED_TABLE_PER_LANE = 1 / 16


def _highest(dtype: np.dtype):
    """A value no distance or label reaches."""
    return np.inf if np.issubdtype(dtype, np.floating) else np.iinfo(dtype).max


def _exclusive_running_min(values: np.ndarray, segment: np.ndarray, empty) -> np.ndarray:
    """Per element, the least of the elements before it in its segment (``segment``:
    integers, sorted; ``empty`` for a segment's first). Whole-numbered values (CC's labels,
    SSSP's distances under integer weights) by one running minimum over their distances
    from the least, each segment's offset above the later ones' (``_whole_ranks``); others
    by doubling, exact for floats (a pass a doubling of the longest segment: 12 over 24M
    runs in a sweep of rmat:scale=20 at W = 8, chunk 64, up to 4015 landings a target)."""
    same = segment[1:] == segment[:-1]
    out = np.full_like(values, empty)
    if values.size == 0:
        return out
    highest = int(segment[-1])
    whole = _whole_ranks(values, highest - int(segment[0]) + 1)
    if whole is not None:
        rank, ranks, least = whole
        offset = highest - segment.astype(np.int64)
        offset *= ranks
        running = rank
        running += offset
        np.minimum.accumulate(running, out=running)
        running -= offset
        out[1:][same] = running[:-1][same] + least
        return out
    running = values.copy()
    shift = 1
    while shift < running.size:
        overlap = segment[shift:] == segment[:-shift]
        if not overlap.any():
            break
        running[shift:] = np.where(overlap, np.minimum(running[shift:], running[:-shift]),
                                   running[shift:])
        shift *= 2
    out[1:][same] = running[:-1][same]
    return out


def _whole_ranks(values: np.ndarray, segments: int) -> tuple[np.ndarray, int, int] | None:
    """Each value's distance from the least (int64), the number of distances and the least,
    where the values are whole numbers and ``segments`` offsets of that many distances fit
    in int64; else None."""
    least, most = values.min(), values.max()
    if values.dtype.kind == "f":
        if not (np.isfinite(least) and np.isfinite(most)) or max(-least, most) >= 2**53:
            return None
        if not np.array_equal(values, np.trunc(values)):
            return None
    elif values.dtype.kind not in "iu":
        return None
    ranks = int(most) - int(least) + 1
    if ranks * (segments + 1) >= 2**62:
        return None
    return (values - least).astype(np.int64), ranks, int(least)


def later_steps_see_earlier(step: np.ndarray, targets: np.ndarray,
                            values: np.ndarray, shared: np.ndarray | None = None
                            ) -> np.ndarray:
    """Which of a wave's lowering lanes (their warp ``step`` within their vertex, edge i of a
    vertex going at step i // W; their ``targets`` and the ``values`` they store) still
    store when each reads its target after the stores of the wave's earlier steps: a lane
    stores iff its value is below all an earlier step stored to its target. The lowest value
    still stores, so the wave lowers the same vertices to the same values; only stores
    lowered again at once drop out (random-deg32, thread mapping: the H100 stores 1.18M
    times, synchronous waves 2.51M, these 1.20M: ``bench/store_count_fidelity.py``).
    ``shared``: where the caller has them, the lanes (ascending) whose target another lane
    shares, the only ones an earlier step's store can stop."""
    keep = np.ones(step.size, dtype=bool)
    if step.size < 2 or not step.any():
        return keep
    picked = None
    if shared is not None:
        picked = shared
        if picked.size == 0:
            return keep
        targets, values, step = targets[picked], values[picked], step[picked]
    elif step.size >= (int(targets.max()) + 1) * _SHARED_TABLE_PER_LANE:
        # a lane whose target no other lane stores to sees no earlier store: only the
        # others are sorted
        picked = np.flatnonzero(np.bincount(targets)[targets] > 1)
        if picked.size == 0:
            return keep
        targets, values, step = targets[picked], values[picked], step[picked]
    span = int(step.max()) + 1
    key = targets.astype(np.int64) * span + step
    order = stable_order(key)
    key = key[order]
    value = values[order]
    # the (target, step) groups in order, and the lowest value each stores
    group_start = np.ones(order.size, dtype=bool)
    group_start[1:] = key[1:] != key[:-1]
    starts = np.flatnonzero(group_start)
    group_of = run_index(group_start)
    group_min = run_minima(value, starts, group_of)
    target = key[starts] // span
    earlier = np.full(starts.size, np.inf, dtype=np.float64)
    # only targets stored to in more than one step see an earlier step's store
    again = np.zeros(starts.size, dtype=bool)
    again[1:] = target[1:] == target[:-1]
    if again.any():
        several = again.copy()
        several[:-1] |= again[1:]
        groups = np.flatnonzero(several)
        # the groups' targets ascend: each target's groups are one segment
        earlier[groups] = _exclusive_running_min(group_min[groups], target[groups],
                                                 _highest(group_min.dtype))
    stores = value < earlier[group_of]
    keep[order if picked is None else picked[order]] = stores
    return keep


def _lowered_and_shared(targets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """From one sort of lowering lanes' ``targets`` (a few ns a lane; no table over every
    id): the distinct targets (ascending, int64), and each repeat of a target after its
    first (ascending), whose lanes an earlier step's store may stop."""
    ordered = np.sort(targets)
    first = run_starts(ordered)
    return ordered[first].astype(np.int64, copy=False), ordered[~first]

