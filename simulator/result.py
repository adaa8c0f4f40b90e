"""What one simulation returns: the algorithm's answer beside the metrics of its kernels."""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field

import numpy as np

METRICS = (
    "time_us", "cycles", "launches", "iterations", "simd_efficiency", "lane_efficiency",
    "u_a", "u_r", "me",
    "transactions", "bytes", "transactions_per_request", "atomics", "edges_touched",
    "work_efficiency", "meps", "worklist_items", "duplicates",
)


@dataclass(frozen=True, eq=False)
class Result:
    """Metrics of one (graph, algorithm, strategy, device) simulation and the computed output.

    simd_efficiency is active / issued lane-steps of the SIMD (edge expansion) phase; u_a, u_r
    and me are Cheng et al.'s intra-group waste, inter-group waste and mapping efficiency as
    fractions of those issued lane-steps (they sum to 1, and me equals simd_efficiency);
    lane_efficiency counts every issued instruction, SISD phase and queue work included;
    worklist_items counts the entries worklist launches expanded, duplicates those of them
    that repeat a vertex already on the same worklist. A ratio with nothing to count (a run
    that expands no edge, from a source without edges: no SIMD lane-steps) is 0, and then u_a,
    u_r and me do not sum to 1. ``output``: BFS levels, SSSP distances, CC labels, PageRank's
    ranks; data-driven PageRank's are its worklist kernel's, which never puts a vertex back,
    so only roughly PageRank's (docs/model.md, "What the algorithms compute").
    """

    algorithm: str
    device: str
    strategy: dict
    time_us: float
    cycles: float
    launches: int
    iterations: int
    simd_efficiency: float
    lane_efficiency: float
    u_a: float
    u_r: float
    me: float
    transactions: float
    bytes: float
    transactions_per_request: float
    atomics: float
    edges_touched: float
    work_efficiency: float
    meps: float
    worklist_items: float
    duplicates: float
    output: np.ndarray = field(repr=False)
    trace: dict[str, np.ndarray] | None = field(default=None, repr=False)
    # what bounds each iteration's launch work (a row per iteration, columns
    # ``costs.BOUND_NAMES``, cycles: an unrolled launch's levels are rows of their own, the
    # launch's overhead on its first), with the host round trips and the other cycles outside
    # launches: the parts ``cycles`` is the sum of
    bounds: np.ndarray | None = field(default=None, repr=False)
    host_cycles: float = 0.0
    extra_cycles: float = 0.0
    # the BFS or SSSP source the run started from (None: PageRank, CC), where ``simulate``
    # picked it when given none (the vertex of highest degree)
    source: int | None = None

    def to_dict(self) -> dict[str, float | int]:
        """The metrics as a flat dict of Python scalars (no output, no trace)."""
        return {name: getattr(self, name) for name in METRICS}
