"""Plain stores that race (``relax=store``): which lowerings a launch loses, and which
vertices the verify sweep then finds with an edge still to relax.

A lane that lowers its target with a plain store reads the target, stores, re-reads and
stores again while it reads a higher value. Lanes of one warp store in one instruction and
re-read after it, so the lowest of them holds. Lanes of different warps that lower one
target in the same lockstep step race: a lane that read the target before the lowest lane's
store landed, and stores after that lane's re-read, leaves its own higher value, and the
lowest is lost. Which store lands last is up to the warps' timing: the model takes the
warp scheduled last, and loses the race with probability ``LOST_RACE_RATE``, a draw hashed
from the target and the launch, so that a run is reproducible. The rate is the even chance
that the higher of two racing stores lands last. Against the counters of the H100's
store_recheck kernels (``bench/gpu/results/h100_independent.parquet``: 2-10 verify sweeps a
run), leave one graph out chooses it among 0.25, 0.5 and 1 on all 17 graphs, by the repairs
alone and never by times; the sweeps and rounds then come within about 10-15% (median;
``bench/store_race_fidelity.py``, ``bench/gpu/results/store_race_fidelity.txt``). The
verify sweep's own pushes of the vertices it finds are charged as ``push=atomic``'s
(``simulator.driver.verify_sweep``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simulator.sorted_runs import run_index
from simulator.sorted_runs import stable_order

# The chance that a race between warps loses its lowest store (see the module docstring).
LOST_RACE_RATE = 0.5



@dataclass(frozen=True)
class RacingStores:
    """How a worklist launch's plain stores race: its entries per warp and lanes per vertex
    (a lane's lockstep step is its edge's position in its vertex's list // W), and the
    chance a race is lost."""

    entries_per_warp: int
    lanes_per_vertex: int
    rate: float


_MIX = np.uint64(0x9E3779B97F4A7C15)
_MIX2 = np.uint64(0xBF58476D1CE4E5B9)
_MIX3 = np.uint64(0x94D049BB133111EB)


def race_draw(targets: np.ndarray, launch: int) -> np.ndarray:
    """A uniform draw in [0, 1) per target of launch ``launch``, the same on every run
    (splitmix64 of the target and the launch's number)."""
    with np.errstate(over="ignore"):
        x = targets.astype(np.uint64) * _MIX + np.uint64(launch) * _MIX2
        x ^= x >> np.uint64(30)
        x *= _MIX2
        x ^= x >> np.uint64(27)
        x *= _MIX3
        x ^= x >> np.uint64(31)
    return (x >> np.uint64(11)).astype(np.float64) * (1.0 / (1 << 53))


def surviving_stores(targets: np.ndarray, steps: np.ndarray, warps: np.ndarray,
                     values: np.ndarray, lost: np.ndarray | float) -> np.ndarray:
    """Which of a wave's lowering lanes (their ``targets``, lockstep ``steps``, ``warps``
    and the ``values`` they store) still hold their store after the races: in each (target,
    step) group whose lanes span several warps and whose last warp's lowest value is above
    the group's lowest, the race is lost where ``lost`` (per lane: its target's draw is
    below the rate; or one bool for all), and only the last warp's lanes count."""
    keep = np.ones(targets.size, dtype=bool)
    if targets.size < 2:
        return keep
    order = stable_order(warps)
    order = order[stable_order(steps[order])]
    order = order[stable_order(targets[order])]
    t, s, w, v = targets[order], steps[order], warps[order], values[order]
    group_start = np.ones(t.size, dtype=bool)
    group_start[1:] = (t[1:] != t[:-1]) | (s[1:] != s[:-1])
    starts = np.flatnonzero(group_start)
    group_of = run_index(group_start)
    ends = np.append(starts[1:], t.size)
    last_warp = w[ends - 1]
    several = w[starts] != last_warp
    if not several.any():
        return keep
    lowest = np.minimum.reduceat(v, starts)
    in_last = w == last_warp[group_of]
    last_lowest = np.minimum.reduceat(np.where(in_last, v, np.inf), starts)
    lost_here = lost if np.ndim(lost) == 0 else np.asarray(lost)[order][starts]
    loses = several & (last_lowest > lowest) & lost_here
    keep[order] = ~loses[group_of] | in_last
    return keep


@np.errstate(over="ignore")  # a float32 candidate past the largest is infinite: no store
def unrelaxed_sources(indptr: np.ndarray, indices: np.ndarray, values: np.ndarray,
                      edge_values: np.ndarray | None) -> np.ndarray:
    """The vertices with an edge whose relaxation would still lower its target (ascending):
    what a verify sweep finds and pushes."""
    degree = np.diff(indptr)
    candidate = np.repeat(values, degree)
    if edge_values is not None:
        candidate = candidate + edge_values
    unrelaxed = candidate < values[indices]
    if not unrelaxed.any():
        return np.zeros(0, dtype=np.int64)
    source = np.repeat(np.arange(indptr.size - 1), degree)
    return np.unique(source[unrelaxed])
