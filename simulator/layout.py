"""Task slots laid out on warp units under a strategy, and the reads every launch repeats."""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field
from dataclasses import replace
from functools import cached_property
from functools import partial
from typing import TYPE_CHECKING

import numpy as np

from simulator.device import Device
from simulator.functional import kept_recent
from simulator.sectors import WORD_BYTES
from simulator.sectors import ceil_div
from simulator.sectors import range_sectors
from simulator.sectors import row_bounds_transactions
from simulator.sectors import step_row_bounds_transactions
from simulator.sectors import unit_transactions

if TYPE_CHECKING:  # annotations only: the mappings import the lane layouts, Strategy them
    from simulator.strategy import Strategy


@dataclass(frozen=True, eq=False)
class TaskLayout:
    """The iteration-independent part of a launch's layout under one strategy: which warp
    unit holds which slot, and the SISD traffic every sweep repeats (staging or checks)."""

    w: int
    c: int
    k: int
    units: int
    real_positions: np.ndarray
    static_sectors: np.ndarray
    static_requests: int | np.ndarray  # one per worklist of joined ones (worklist_layouts)
    real_tasks: np.ndarray  # per unit: its slots that hold a task (not padding)
    # of the static traffic, the status words' reads (a sweep's layout): PageRank's kernel
    # has no status to read
    status_sectors: np.ndarray | None = None
    status_requests: int | np.ndarray = 0
    # what a sweep with no active slot costs, per device, costs and launch form: clean_sweep
    cache: dict = field(default_factory=dict, repr=False)

    @property
    def per_unit(self) -> int:
        """Tasks per physical-warp unit (K virtual warps of C tasks)."""
        return self.k * self.c

    @cached_property
    def _full_but_last(self) -> bool:
        """Whether every unit but the last holds ``per_unit`` tasks (one listing's layout)."""
        return bool((self.real_tasks[:-1] == self.per_unit).all())

    def of_units(self, units: np.ndarray) -> TaskLayout:
        """The layout of some of its ``units``, as a view of a sweep holds them. A sweep's
        units hold full chunks but for the last: their tasks and positions follow from that
        (a gather from every unit's costs more where the units are many)."""
        if self._full_but_last and self.units:
            real_tasks = np.full(units.size, self.per_unit, dtype=np.int64)
            real_tasks[units == self.units - 1] = self.real_tasks[-1]
            real_positions = np.minimum(real_tasks, self.c)
        else:
            real_tasks, real_positions = self.real_tasks[units], self.real_positions[units]
        return TaskLayout(self.w, self.c, self.k, units.size, real_positions,
                          self.static_sectors[units], self.static_requests, real_tasks,
                          None if self.status_sectors is None else self.status_sectors[units],
                          self.status_requests)


def task_layout(
    n: int, strategy: Strategy, device: Device, slot_vertex: np.ndarray | None = None
) -> TaskLayout:
    """Lay n task slots out on warp units and count the SISD sectors each launch reads to
    find its slots' vertices: status words (``slot_vertex`` None: slot t is vertex t) or
    worklist entries (slot t reads entry t, then vertex ``slot_vertex[t]``'s row bounds)."""
    layout = (status_layouts(np.array([n]), strategy, device) if slot_vertex is None
              else worklist_layouts(np.array([n]), strategy, device, slot_vertex))
    if slot_vertex is None:
        layout = replace(layout, status_requests=int(layout.status_requests[0]))
    return replace(layout, static_requests=int(layout.static_requests[0]))


# the topology sweeps' layouts last asked for, by what they depend on (``sweep_layout``)
_SWEEP_LAYOUTS: dict[tuple[int, ...], TaskLayout] = {}
SWEEP_LAYOUTS_KEPT = 4


def sweep_layout(n: int, strategy: Strategy, device: Device) -> TaskLayout:
    """``task_layout`` of a topology sweep's ``n`` slots, kept for later runs (the last
    ``SWEEP_LAYOUTS_KEPT`` asked for): it depends on n and the units' shape alone, and it
    keeps what a sweep with no active vertex costs (``timing.clean_sweep``), which a run of
    W = 32 on a million vertices would otherwise work out again (40 ms a run)."""
    return kept_recent(_SWEEP_LAYOUTS, (n, *unit_shape(strategy, device), device.sector_bytes),
                       lambda: task_layout(n, strategy, device), SWEEP_LAYOUTS_KEPT)


def status_layouts(sizes: np.ndarray, strategy: Strategy, device: Device) -> TaskLayout:
    """Several listings' layouts joined, listing after listing (each from a unit of its own;
    ``static_requests`` one per listing), slot t of a listing reading status word t (a
    spatial hybrid's partitions: ascending runs of vertices, aligned as the words are)."""
    placement = _placement(sizes, strategy, device)
    w, c, per_unit, units = placement.w, placement.c, placement.per_unit, placement.units
    words = device.sector_bytes // WORD_BYTES
    count = partial(unit_transactions, words_per_sector=words, units=units)
    slots = _ListedSlots.of(sizes, per_unit)
    slot_words = range_sectors(slots.first, slots.end - 1, words)
    if w > 1 and c < w:
        # one staging step reads the unit's status words, one its row bounds: two ranges
        static_sectors = slot_words + range_sectors(slots.first, slots.end, words)
        return replace(placement, static_sectors=static_sectors,
                       static_requests=slots.units_of * 2, status_sectors=slot_words,
                       status_requests=slots.units_of)

    if w == 1:
        # each thread reads its own slot's status word: one per position
        static_sectors = (slot_words if c == 1 else
                          count(slots.task_unit * c + slots.tasks % c, slots.tasks, c))
        static_requests = np.bincount(slots.listing_of_unit, weights=placement.real_positions,
                                      minlength=sizes.size).astype(np.int64)
        status_sectors, status_requests = static_sectors, static_requests
    else:
        # the chunk's status words and row bounds, staged by W lanes per step
        per_stage = ceil_div(c + 1, w)
        tasks, task_unit = slots.tasks, slots.task_unit
        stage_group = task_unit * per_stage + (tasks % c) // w
        static_sectors = slot_words if c == 1 else count(stage_group, tasks, per_stage)
        status_sectors = static_sectors.copy()
        chunks_of = ceil_div(sizes, c)
        chunk_starts = np.arange(int(chunks_of.sum()), dtype=np.int64) * c
        chunk_unit = chunk_starts // per_unit
        if sizes.size > 1:
            chunk_starts -= np.repeat((np.cumsum(chunks_of) - chunks_of) * c, chunks_of)
            chunk_unit = chunk_starts // per_unit + np.repeat(slots.segments, chunks_of)
        chunk_ends = np.minimum(chunk_starts + c, np.repeat(sizes, chunks_of))
        # the lanes of a chunk cut short by its listing's end read that end's word (the
        # kernel clamps base + j to n) in every step from the first such lane's to C // W:
        # a step after the first of those reads it again
        first_past = (chunk_ends - chunk_starts) // w
        short = np.flatnonzero(first_past < c // w)
        again = c // w - first_past[short]
        again_group = (np.repeat(chunk_unit[short] * per_stage + first_past[short], again)
                       + np.arange(int(again.sum())) - np.repeat(np.cumsum(again) - again, again))
        bounds = np.concatenate([tasks, chunk_ends, np.repeat(chunk_ends[short], again)])
        bounds_group = np.concatenate([stage_group, chunk_unit * per_stage + c // w,
                                       again_group])
        # ascending runs: distinct_sectors' run-merging sort needs no argsort first
        static_sectors += count(bounds_group, bounds, per_stage)
        static_requests = slots.units_of * (ceil_div(c, w) + per_stage)
        status_requests = slots.units_of * ceil_div(c, w)
    return replace(placement, static_sectors=static_sectors, static_requests=static_requests,
                   status_sectors=status_sectors, status_requests=status_requests)


def worklist_layouts(sizes: np.ndarray, strategy: Strategy, device: Device,
                     slot_vertex: np.ndarray | None) -> TaskLayout:
    """Several worklists' layouts joined, worklist after worklist (each from a unit of its
    own; ``static_requests`` one per worklist): slot t of a worklist reads its entry t, then
    the row bounds of its vertex (``slot_vertex``, the worklists' entries one after another).
    ``slot_vertex`` None: the placement only, without those reads (no ``static_sectors``),
    which is all that laying a launch's lanes out needs."""
    placement = _placement(sizes, strategy, device)
    if slot_vertex is None:
        return placement
    w, c, per_unit, units = placement.w, placement.c, placement.per_unit, placement.units
    words = device.sector_bytes // WORD_BYTES
    count = partial(unit_transactions, words_per_sector=words, units=units)
    row_bounds = partial(row_bounds_transactions, words_per_sector=words, units=units)
    slots = _ListedSlots.of(sizes, per_unit)
    slot_words = range_sectors(slots.first, slots.end - 1, words)
    units_of = slots.units_of
    # with one slot a position (C = 1) one step reads a unit's entries, one its row bounds:
    # no step groups to work out
    if w == 1:
        # each thread reads its own entry and its vertex's row bounds: one each per position
        per_group = c
        group = None if c == 1 else slots.task_unit * c + slots.tasks % c
        static_sectors = slot_words if c == 1 else count(group, slots.tasks, c)
        last = sizes - (units_of - 1) * per_unit  # the last unit's tasks
        static_requests = 3 * np.where(units_of > 0,
                                       c * (units_of - 1) + np.minimum(last, c), 0)
    else:
        # the chunk's entries and row bounds, staged by W lanes per step
        per_group = ceil_div(c + 1, w)
        group = (None if c == 1
                 else slots.task_unit * per_group + (slots.tasks % c) // w)
        static_sectors = slot_words if c == 1 else count(group, slots.tasks, per_group)
        # a unit stages its chunk positions that hold a slot (the last unit's first min(last,
        # c)): a staging step of no slot is not issued (its requests had been counted, and
        # transactions per request fallen below 1)
        last = sizes - (units_of - 1) * per_unit
        static_requests = 3 * np.where(
            units_of > 0, ceil_div(c, w) * (units_of - 1) + ceil_div(np.minimum(last, c), w), 0)
    if per_group == 1:
        # one step reads a unit's row bounds: its sectors as a row of the unit's slots (21
        # worklists of 100k slots, rows against a sort of all the keys: 32 slots a unit 2.5
        # against 5.2 ms, 16 3.3 against 5.7, 8 4.1 against 4.8; up to 4 compared lane by
        # lane, the whole layout: W=8 4.9 against 10.3 ms, W=16 6.9 against 10.5, W=32 7.0
        # against 10.4)
        static_sectors += step_row_bounds_transactions(
            slots.places, slot_vertex, words_per_sector=words, units=units, width=per_unit)
    else:
        static_sectors += row_bounds(group, slot_vertex, per_group)
    return replace(placement, static_sectors=static_sectors, static_requests=static_requests)


def unit_shape(strategy: Strategy, device: Device) -> tuple[int, int, int]:
    """W, C and K of a strategy's warp units: K virtual warps of W lanes, each taking
    chunks of C slots."""
    w = strategy.lanes_per_vertex
    return w, strategy.vertices_per_grab, device.warp_size // w


def _placement(sizes: np.ndarray, strategy: Strategy, device: Device) -> TaskLayout:
    """Listings of ``sizes`` slots laid on warp units one after another (each from a unit of
    its own), without the reads that find their vertices."""
    w, c, k = unit_shape(strategy, device)
    if sizes.size == 1:  # one listing (a launch as it comes): full units but its last
        size, per_unit = int(sizes[0]), k * c
        real_tasks = np.full(-(-size // per_unit), per_unit, dtype=np.int64)
        if size:
            real_tasks[-1] = size - (real_tasks.size - 1) * per_unit
    else:
        real_tasks = _real_tasks(sizes, k * c)
    real_positions = np.minimum(real_tasks, c)  # a position is real if its first task is
    return TaskLayout(w, c, k, real_tasks.size, real_positions, np.zeros(0, dtype=np.int64),
                      0, real_tasks)


@dataclass(frozen=True)
class _ListedSlots:
    """Where the slots of listings laid one after another fall: per unit its listing and
    its first and end slot within it, per slot (worked out where asked for) its index in
    its listing and its unit."""

    sizes: np.ndarray  # per listing
    per_unit: int
    units_of: np.ndarray  # per listing
    segments: np.ndarray  # per listing: its first unit
    listing_of_unit: np.ndarray
    first: np.ndarray
    end: np.ndarray

    @classmethod
    def of(cls, sizes: np.ndarray, per_unit: int) -> _ListedSlots:
        units_of = ceil_div(sizes, per_unit)
        segments = np.cumsum(units_of) - units_of
        # each unit's slots, ascending: with chunks of one a step reads their words together
        if sizes.size == 1:  # one listing (a sweep's): full units but the last
            units = int(units_of[0])
            listing_of_unit = np.zeros(units, dtype=np.int64)
            first = np.arange(0, units * per_unit, per_unit, dtype=np.int64)
            end = first + per_unit
            if units:
                end[-1] = int(sizes[0])
            return cls(sizes, per_unit, units_of, segments, listing_of_unit, first, end)
        listing_of_unit = np.repeat(np.arange(sizes.size), units_of)
        first = (np.arange(int(units_of.sum()), dtype=np.int64)
                 - segments[listing_of_unit]) * per_unit
        end = np.minimum(first + per_unit, sizes[listing_of_unit])
        return cls(sizes, per_unit, units_of, segments, listing_of_unit, first, end)

    @cached_property
    def tasks(self) -> np.ndarray:
        """Each slot's index in its listing."""
        sizes = self.sizes
        tasks = np.arange(int(sizes.sum()), dtype=np.int64)
        if sizes.size > 1:
            tasks -= np.repeat(np.cumsum(sizes) - sizes, sizes)
        return tasks

    @cached_property
    def places(self) -> np.ndarray:
        """Each slot's place among the units' slots (``padded_places``)."""
        return padded_places(self.sizes, self.segments, self.per_unit)

    @cached_property
    def task_unit(self) -> np.ndarray:
        """Each slot's unit."""
        task_unit = self.tasks // self.per_unit
        if self.sizes.size > 1:
            task_unit += np.repeat(self.segments, self.sizes)
        return task_unit


def padded_places(sizes: np.ndarray, segments: np.ndarray, per_unit: int) -> np.ndarray:
    """Each slot's place among the warp units' slots of listings of ``sizes`` slots laid one
    after another, each from its own first unit (``segments``): unit * ``per_unit`` + its
    place in the unit."""
    places = np.arange(int(sizes.sum()), dtype=np.int64)
    if sizes.size > 1:
        places += np.repeat(segments * per_unit - (np.cumsum(sizes) - sizes), sizes)
    return places


def _real_tasks(sizes: np.ndarray, per_unit: int) -> np.ndarray:
    """Per unit of listings of ``sizes`` slots laid one after another (each from a unit of
    its own): its slots that hold a task."""
    units_of = ceil_div(sizes, per_unit)
    real_tasks = np.full(int(units_of.sum()), per_unit, dtype=np.int64)
    held = units_of > 0
    real_tasks[np.cumsum(units_of)[held] - 1] = sizes[held] - (units_of[held] - 1) * per_unit
    return real_tasks
