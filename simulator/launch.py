"""What one vertex-kernel launch visits (``Launch``): its task slots, how they find their
vertices, the work behind them and how it builds the next worklist. The cost model it feeds:
docs/model.md ("The cost model in detail")."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simulator.functional import IterationWork


@dataclass(frozen=True, eq=False)
class Launch:
    """What one vertex-kernel launch visits: its task slots and the work behind them.

    slots: the vertex of each task slot; None for the topology sweep (slot t is vertex t).
    lookup: how a slot finds its vertex and whether it is active: ``status`` (read the
        vertex's status word: the sweep, and the vertices behind a spatial representative),
        or ``worklist`` (read the worklist entry; every entry is active).
    active: the vertices that expand their edges (ascending); writes: the edges whose lane
        stores (ascending). A vertex in several slots expands in each; its first slot stores.
    push: how the launch builds the next worklist (None: it builds none); pushes: what is
        pushed, ``targets`` (each storing lane pushes its neighbour), ``partitions`` (the
        first store into each partition pushes its representative, after an atomic on the
        partition's flag) or ``self`` (the vertices in ``self_pushes`` push themselves).
    count_activations: the launch counts the vertices it activates, each once (a storing
        lane claims its target's flag with an exchange and waits for the old flag; a
        warp-aggregated atomic per warp that stores adds the claims), so the host can decide
        a hybrid's next form.
    grid_stride: launch the resident warps only, each striding over the units (fixed grid).
    write_values: each write's value where writers lower their target with atomicMin and
        push it only when they lowered it (see ``IterationWork``); None: plain stores.
    store_lanes: where every copy of a vertex stores what it lowers (SSSP's and CC's
        launches, run in waves, see ``simulator.asynchronous``), the storing lanes as
        positions in the launch's edge order (slot by slot, CSR order within; ascending),
        ``write_values`` then theirs in that order; None: the first copy of a vertex stores
        ``writes``.
    slot_ranks: each slot's vertex's index among ``active``, where the caller knows it (a
        worklist pushed by a lean launch, ``LaunchPushes.item_ranks``; checked before use).
    ranked_among: the array ``slot_ranks`` index, which gives the slots' vertices at them (a
        lean launch's targets, ``LaunchPushes.targets``): where it equals ``active`` (the
        next BFS level's), the ranks need no check (it is compared once per work, kept).
    partitions: where ``slots`` lists whole partitions of ``partition`` consecutive
        vertices (a spatial hybrid's; the graph's last may be short), those partitions,
        ascending: an active vertex's slot follows from its partition's place among them.
    rechecks: writers lower their target by a plain store, re-read until it holds
        (``Strategy.relax`` store), not atomicMin: no atomic, a dependent re-read a storing
        step, and every lane of a target's first storing step pushes it.
    """

    active: np.ndarray
    writes: np.ndarray
    slots: np.ndarray | None = None
    lookup: str = "status"
    push: str | None = None
    pushes: str = "targets"
    partition: int = 1
    self_pushes: np.ndarray | None = None
    count_activations: bool = False
    grid_stride: bool = False
    write_values: np.ndarray | None = None
    store_lanes: np.ndarray | None = None
    slot_ranks: np.ndarray | None = None
    ranked_among: np.ndarray | None = None
    partitions: np.ndarray | None = None
    rechecks: bool = False

    @classmethod
    def sweep(cls, work: IterationWork, **options) -> Launch:
        """The topology-driven launch of one iteration."""
        return cls(work.active, work.writes, **options)
