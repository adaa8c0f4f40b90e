"""Instruction costs per kernel phase and the counters a launch's cost is made of."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np


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
    scan: int = 5  # a warp-wide prefix sum by shuffles (log2 32 steps)
    table_push: int = 2  # WER push_job: store the lane's edge range into the warp's table
    pop: int = 2  # WER pop_job / donation drain: find the edge's owner in the table
    donate: int = 4  # donation: block mean, shared atomic on the box, barrier
    push: int = 2  # worklist push per step with pushing lanes: atomicAdd on the tail, store
    aggregate: int = 3  # warp-aggregated atomic: ballot, leader's popc, shuffle of the base
    push_store: int = 1  # chunked / prefix push per step: store at the batch's offset
    batch: int = 2  # chunked push: one atomicAdd per batch, broadcast of its base
    barrier: int = 2  # a block barrier (__syncthreads) and its shared-memory traffic


COSTS = InstructionCosts()


# What bounds each kernel launch, in cycles (one row per launch, see ``LaunchCost.bounds``):
# the busiest SM's issue, its load/store unit, the latency makespan, memory traffic (DRAM or
# L2, the larger), serialised same-address atomics, and the fixed launch overhead.
BOUND_NAMES = ("issue", "lsu", "latency", "memory", "atomics", "overhead")


def no_bounds() -> np.ndarray:
    """An empty table of per-launch bounds."""
    return np.zeros((0, len(BOUND_NAMES)))


@dataclass
class LaunchCost:
    """Counters of one or more kernel launches; adding two gives the counters of both.

    ``cycles`` always equals, over the rows of ``bounds``, max(first five) + overhead, plus
    ``host_cycles`` (host round trips) and ``extra_cycles`` (grid barriers and the like):
    calibration refits the device from these parts without simulating again.
    """

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
    worklist_items: float = 0.0
    duplicates: float = 0.0
    host_cycles: float = 0.0
    extra_cycles: float = 0.0
    bounds: np.ndarray = dataclasses.field(default_factory=no_bounds, repr=False)
    # the items a worklist launch pushed, in push order (the next worklist); None elsewhere
    pushed: np.ndarray | None = dataclasses.field(default=None, repr=False)

    def __add__(self, other: LaunchCost) -> LaunchCost:
        numbers = {
            f.name: getattr(self, f.name) + getattr(other, f.name)
            for f in dataclasses.fields(self)
            if f.name not in ("pushed", "bounds")
        }
        return LaunchCost(**numbers, bounds=np.concatenate([self.bounds, other.bounds]),
                          pushed=_one_of(self.pushed, other.pushed))


def total_cost(costs: list[LaunchCost]) -> LaunchCost:
    """The counters of ``costs``, as adding them in turn gives them, with one concatenation
    of their bounds rather than one per addition (hundreds of launches on a road graph)."""
    numbers = {}
    for f in dataclasses.fields(LaunchCost):
        if f.name in ("pushed", "bounds"):
            continue
        acc = f.default
        for cost in costs:
            acc = acc + getattr(cost, f.name)
        numbers[f.name] = acc
    pushed = None
    for cost in costs:
        pushed = _one_of(pushed, cost.pushed)
    bounds = np.concatenate([no_bounds()] + [cost.bounds for cost in costs])
    return LaunchCost(**numbers, bounds=bounds, pushed=pushed)


def _one_of(a: np.ndarray | None, b: np.ndarray | None) -> np.ndarray | None:
    """The pushed items of a sum: those of the one launch that pushed (None if both did)."""
    if a is None:
        return b
    return a if b is None else None
