"""Task slots laid out on warp units under a strategy, and the reads every launch repeats."""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field
from functools import partial

import numpy as np

from simulator.device import Device
from simulator.sectors import WORD_BYTES
from simulator.sectors import ceil_div
from simulator.sectors import range_sectors
from simulator.sectors import row_bounds_transactions
from simulator.sectors import unit_transactions
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
    static_requests: int
    real_tasks: np.ndarray  # per unit: its slots that hold a task (not padding)
    # what a sweep with no active slot costs, per device, costs and launch form: clean_sweep
    cache: dict = field(default_factory=dict, repr=False)

    @property
    def per_unit(self) -> int:
        """Tasks per physical-warp unit (K virtual warps of C tasks)."""
        return self.k * self.c


def task_layout(
    n: int, strategy: Strategy, device: Device, slot_vertex: np.ndarray | None = None
) -> TaskLayout:
    """Lay n task slots out on warp units and count the SISD sectors each launch reads to
    find its slots' vertices: status words (``slot_vertex`` None: slot t is vertex t) or
    worklist entries (slot t reads entry t, then vertex ``slot_vertex[t]``'s row bounds)."""
    w = strategy.lanes_per_vertex
    c = strategy.vertices_per_grab
    k = device.warp_size // w
    per_unit = k * c
    units = ceil_div(n, per_unit)
    words = device.sector_bytes // WORD_BYTES
    real = np.zeros(units * per_unit, dtype=bool)
    real[:n] = True
    real_positions = real.reshape(units, k, c).any(axis=1).sum(axis=1)
    real_tasks = np.full(units, per_unit, dtype=np.int64)
    if units:
        real_tasks[-1] = n - (units - 1) * per_unit
    count = partial(unit_transactions, words_per_sector=words, units=units)
    row_bounds = partial(row_bounds_transactions, words_per_sector=words, units=units)
    # each unit's slots, ascending: with chunks of one a step reads their words together
    first = np.arange(units, dtype=np.int64) * per_unit
    end = np.minimum(first + per_unit, n)
    slot_words = range_sectors(first, end - 1, words)
    if w > 1 and c < w and slot_vertex is None:
        # one staging step reads the unit's status words, one its row bounds: two ranges
        static_sectors = slot_words + range_sectors(first, end, words)
        return TaskLayout(w, c, k, units, real_positions, static_sectors, units * 2,
                          real_tasks)

    tasks = np.arange(n, dtype=np.int64)
    task_unit = tasks // per_unit
    if w == 1:
        # each thread reads its own slot's status word (or worklist entry): one per position
        static_sectors = slot_words if c == 1 else count(task_unit * c + tasks % c, tasks, c)
        static_requests = int(real_positions.sum())
        if slot_vertex is not None:  # and the row bounds of its vertex, all entries active
            static_sectors += row_bounds(task_unit * c + tasks % c, slot_vertex, c)
            static_requests *= 3
    else:
        # the chunk's status words (or entries) and row bounds, staged by W lanes per step
        per_stage = ceil_div(c + 1, w)
        stage_group = task_unit * per_stage + (tasks % c) // w
        static_sectors = slot_words if c == 1 else count(stage_group, tasks, per_stage)
        if slot_vertex is None:
            chunk_ends = np.arange(0, n, c, dtype=np.int64)
            bounds = np.concatenate([tasks, np.minimum(chunk_ends + c, n)])
            bounds_group = np.concatenate(
                [stage_group, (chunk_ends // per_unit) * per_stage + c // w]
            )
            # two ascending runs: distinct_sectors' run-merging sort needs no argsort first
            static_sectors += count(bounds_group, bounds, per_stage)
            static_requests = units * (ceil_div(c, w) + per_stage)
        else:
            static_sectors += row_bounds(stage_group, slot_vertex, per_stage)
            static_requests = units * 3 * ceil_div(c, w)
    return TaskLayout(w, c, k, units, real_positions, static_sectors, static_requests,
                      real_tasks)
