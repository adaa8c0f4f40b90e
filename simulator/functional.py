"""The algorithms themselves, level/iteration-synchronous like the papers' kernels.

What each iteration does (which vertices expand their edges, which edge lanes store) does not
depend on the load-balancing knobs, so it is computed once per (graph, algorithm, source) as a
``FunctionalRun`` and replayed by the timing engine under every strategy.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from collections.abc import Hashable
from dataclasses import dataclass
from dataclasses import field
from typing import TypeVar

import numpy as np

from simulator.errors import ConfigError
from simulator.graph import FLOAT32_MAX
from simulator.graph import Graph
from simulator.graph import is_graph
from simulator.sorted_runs import GATHERED_RUNS_UP_TO
from simulator.sorted_runs import distinct_ids

ALGORITHMS = ("bfs", "sssp", "pagerank", "cc")
T = TypeVar("T")


@dataclass(frozen=True)
class IterationWork:
    """One iteration's work: the vertices whose edge lists are expanded, and the edges whose
    lane performs a store (ids into the expansion CSR's ``indices``). ``write_values``: where
    writers of one target store different values (SSSP distances, CC labels, lowered with
    atomicMin), each write's value; None where they all store the same (a BFS level).
    ``cache``: what the timing engine works out from this work alone, kept for the next
    strategy replayed on it (``simulator.engine.launch_pushes``' write sources, the edges
    the driver batches launches by, the partitions a spatial hybrid's writes store into)."""

    active: np.ndarray
    writes: np.ndarray
    write_values: np.ndarray | None = None
    cache: dict = field(default_factory=dict, repr=False, compare=False)


def kept(cache: dict | None, key: Hashable, work_out: Callable[[], T]) -> T:
    """What ``work_out`` gives, kept in ``cache`` (an ``IterationWork.cache``) under ``key``
    for the next strategy replayed on the work; worked out each time where there is none."""
    if cache is None:
        return work_out()
    if key not in cache:
        cache[key] = work_out()
    return cache[key]


def kept_recent(cache: dict, key: Hashable, work_out: Callable[[], T], most: int,
                holds: Callable[[T], bool] = lambda value: True) -> T:
    """``kept`` in a cache that outlives a run: only the ``most`` values last asked for stay
    (the oldest go first); a kept value that no longer ``holds`` is worked out again."""
    value = cache.pop(key, None)
    if value is None or not holds(value):
        value = work_out()
    cache[key] = value  # the most recent last
    while len(cache) > most:
        cache.pop(next(iter(cache)))
    return value


@dataclass(frozen=True, eq=False)
class FunctionalRun:
    """An algorithm's answer and its per-iteration work on one graph, reusable across strategies.

    ``indptr``/``indices`` are the CSR the kernel expands (the graph itself, or its transpose
    for pull-style PageRank on a directed graph, or its symmetrisation for CC).
    ``worklist_run``: where a data-driven kernel computes something else (PageRank, which
    recomputes only the vertices whose rank still moved), that run; else the worklists
    follow from this run's stores. ``edge_values``: what an edge adds to the value it
    relays (SSSP's weights; distances are float32, as the kernels'), None where it adds nothing.
    """

    algorithm: str
    source: int | None
    output: np.ndarray
    iterations: tuple[IterationWork, ...]
    indptr: np.ndarray
    indices: np.ndarray
    reads_weights: bool = False
    stores_per_vertex: bool = False
    worklist_run: FunctionalRun | None = None
    edge_values: np.ndarray | None = None
    graph_digest: str | None = None  # its graph's ``Graph.content_digest`` (None: not known)

    def __post_init__(self) -> None:
        # every Result of this run hands out its output: one caller's edit would be another's;
        # and every strategy replays its iterations: an edit of one had changed later runs
        self.output.flags.writeable = False
        for work in self.iterations:
            for array in (work.active, work.writes, work.write_values):
                if array is not None:
                    array.flags.writeable = False

    @property
    def n(self) -> int:
        """Vertices of the expanded graph."""
        return self.indptr.size - 1

    @property
    def edges_expanded(self) -> int:
        """Edges expanded over all iterations, the work a work-efficient kernel does."""
        deg = np.diff(self.indptr)
        return int(sum(int(deg[it.active].sum()) for it in self.iterations))


def default_source(graph: Graph) -> int:
    """The source used when none is given: the lowest-id vertex of maximum degree."""
    if graph.n == 0:
        raise ConfigError(f"{graph.spec or graph.name}: the graph has no vertices")
    return int(np.argmax(graph.degrees))


def edge_ids(indptr: np.ndarray, vertices: np.ndarray, *, with_local: bool = False,
             lengths: np.ndarray | None = None, starts: np.ndarray | None = None):
    """Ids of all edges leaving ``vertices``, in vertex order then CSR order (int64).

    With ``with_local`` also each edge's position within its vertex's list. ``lengths``
    and ``starts`` (int64): the vertices' degrees and first edges, where the caller has them.
    """
    if starts is None:
        starts = indptr[vertices].astype(np.int64, copy=False)
    if lengths is None:
        lengths = indptr[vertices + 1].astype(np.int64, copy=False) - starts
    total = int(lengths.sum())
    offsets = np.cumsum(lengths) - lengths
    if with_local:
        # positions within a list as int32 where they fit: half the bytes to move
        narrow = np.int32 if total < np.iinfo(np.int32).max else np.int64
        local = np.arange(total, dtype=narrow)
        if total <= GATHERED_RUNS_UP_TO * lengths.size:  # short runs: gathers (spread)
            owner = np.repeat(np.arange(lengths.size, dtype=narrow), lengths)
            local -= offsets.astype(narrow).take(owner)
            edges = starts.take(owner)
        else:
            local -= np.repeat(offsets.astype(narrow), lengths)
            edges = np.repeat(starts, lengths)
        edges += local
        return edges, local
    running = np.arange(total, dtype=np.int64)
    running += np.repeat(starts - offsets, lengths)
    return running


def checked_source(graph: Graph, algorithm: str, source: int | None) -> int | None:
    """The source ``algorithm`` runs from on ``graph`` (BFS and SSSP: ``source``, or the
    default one; the others none), after refusing what cannot run: an unknown algorithm, an
    empty graph, a source out of range or given where none is taken, SSSP without weights."""
    if algorithm not in ALGORITHMS:
        raise ConfigError(f"unknown algorithm {algorithm!r}; choose one of {ALGORITHMS}")
    if not is_graph(graph):
        raise ConfigError(f"graph must be a Graph (load_graph makes one from a spec), not "
                          f"{type(graph).__name__}")
    label = graph.spec or graph.name
    if graph.n == 0:
        raise ConfigError(f"{label}: the graph has no vertices")
    if algorithm == "sssp" and graph.weights is None:
        if not graph.spec:  # built from arrays: no spec to add to (probe API2)
            raise ConfigError(f"{label}: SSSP needs edge weights; build the graph with them "
                              "(Graph.from_edges(..., weights=w), Graph(indptr, indices, "
                              "weights)) or load one with `weights=random` in its spec")
        raise ConfigError(
            f"{label}: SSSP needs edge weights; add `weights=random` to the spec "
            f"(e.g. '{label},weights=random') or use a weighted file with `weights=file`"
        )
    if algorithm in ("bfs", "sssp"):
        source = default_source(graph) if source is None else source
        if isinstance(source, bool | np.bool_) or not isinstance(source, int | np.integer):
            raise ConfigError(f"{label}: source must be a vertex id (an integer), not "
                              f"{source!r}")
        if not 0 <= source < graph.n:
            raise ConfigError(f"{label}: source {source!r} is out of range 0..{graph.n - 1}")
        return int(source)
    if source is not None:
        raise ConfigError(f"{algorithm} takes no source vertex (got source={source})")
    return None


def functional_run(
    graph: Graph,
    algorithm: str,
    source: int | None = None,
    *,
    tolerance: float = 1e-6,
    max_iterations: int = 100,
    damping: float = 0.85,
) -> FunctionalRun:
    """Run ``algorithm`` on ``graph`` and record its per-iteration work."""
    source = checked_source(graph, algorithm, source)
    if algorithm == "pagerank":
        _check_pagerank_settings(tolerance, max_iterations, damping)
    if algorithm == "bfs":
        run = _bfs(graph, source)
    elif algorithm == "sssp":
        run = _sssp(graph, source)
    elif algorithm == "cc":
        run = _cc(graph)
    else:
        run = _pagerank(graph, tolerance, max_iterations, damping)
    # (a Graph of another checkout, as bench/compare_revisions passes, may have no digest)
    return dataclasses.replace(run, graph_digest=getattr(graph, "content_digest", None))


def _check_pagerank_settings(tolerance: float, max_iterations: int, damping: float) -> None:
    """Refuse PageRank settings that give no ranking: damping outside [0, 1) had given
    negative or NaN ranks, no iteration the uniform start and a time of 0."""
    numbers = (int, float, np.integer, np.floating)
    if (not isinstance(damping, numbers) or isinstance(damping, bool)
            or not 0 <= damping < 1):
        raise ConfigError(f"PageRank's damping must be in [0, 1), not {damping!r}")
    if (not isinstance(tolerance, numbers) or isinstance(tolerance, bool)
            or not 0 < tolerance < float("inf")):
        raise ConfigError(f"PageRank's tolerance must be a positive number, not {tolerance!r}")
    if (not isinstance(max_iterations, int | np.integer) or isinstance(max_iterations, bool)
            or max_iterations < 1):
        raise ConfigError(f"PageRank's max_iterations must be a whole number >= 1, not "
                          f"{max_iterations!r}")


def _bfs(graph: Graph, source: int) -> FunctionalRun:
    indptr, indices = graph.indptr, graph.indices
    level = np.full(graph.n, -1, dtype=np.int64)
    level[source] = 0
    frontier = np.array([source], dtype=np.int32)
    iterations = []
    depth = 0
    while frontier.size:
        edges = edge_ids(indptr, frontier)
        nbrs = indices[edges]
        unvisited = level[nbrs] < 0
        discovered = distinct_ids(nbrs[unvisited], graph.n)
        level[discovered] = depth + 1
        iterations.append(IterationWork(frontier, edges[unvisited]))
        frontier = discovered.astype(np.int32)
        depth += 1
    return FunctionalRun("bfs", source, level, tuple(iterations), indptr, indices)


def initial_values(algorithm: str, n: int, source: int | None = None) -> np.ndarray:
    """What SSSP's distances and CC's labels start from, before any launch lowers them."""
    if algorithm == "sssp":
        dist = np.full(n, np.inf, dtype=np.float32)
        dist[source] = 0.0
        return dist
    if algorithm == "cc":
        return np.arange(n, dtype=np.int64)
    raise ValueError(f"{algorithm} does not lower values with atomicMin")


@np.errstate(over="ignore")  # a float32 candidate past the largest is infinite: no store
def relax(indptr, indices, vertices, values, edge_values, *, with_local: bool = False,
          lower: bool = True):
    """One synchronous push step: every lane of ``vertices`` (duplicates too) reads its
    candidate ``values[v] (+ edge value)`` before any store; those below their target's value
    lower it (``values``, in place; not where ``lower`` is False: the caller decides which
    stores hold). Returns the lowering lanes (positions in the edge order of ``vertices``:
    vertex by vertex, CSR order within), their edges and their candidates; with
    ``with_local`` also each one's position within its vertex's list."""
    # gathers by ndarray.take: a third to a half faster than indexing here (numpy 2.x;
    # int32 indices most), the same values
    starts = indptr.take(vertices).astype(np.int64, copy=False)
    lengths = indptr.take(vertices + 1).astype(np.int64, copy=False) - starts
    if with_local:
        edges, local = edge_ids(indptr, vertices, with_local=True, lengths=lengths,
                                starts=starts)
    else:
        edges = edge_ids(indptr, vertices, lengths=lengths, starts=starts)
    cand = np.repeat(values.take(vertices), lengths)
    if edge_values is not None:
        cand += edge_values.take(edges)
    targets = indices.take(edges)
    lanes = np.flatnonzero(cand < values.take(targets))
    written = cand.take(lanes)
    if lower:
        np.minimum.at(values, targets.take(lanes), written)
    if with_local:
        return lanes, edges.take(lanes), written, local.take(lanes)
    return lanes, edges.take(lanes), written


def _lowering_run(algorithm, source, indptr, indices, values, active, edge_values):
    """Iterate ``relax`` from ``active`` until no value moves."""
    iterations = []
    while active.size:
        _, writes, written = relax(indptr, indices, active, values, edge_values)
        iterations.append(IterationWork(active, writes, written))
        active = distinct_ids(indices[writes], values.size).astype(np.int32)
    return FunctionalRun(
        algorithm, source, values, tuple(iterations), indptr, indices,
        reads_weights=edge_values is not None, edge_values=edge_values,
    )


def _sssp(graph: Graph, source: int) -> FunctionalRun:
    run = _lowering_run("sssp", source, graph.indptr, graph.indices,
                        initial_values("sssp", graph.n, source),
                        np.array([source], dtype=np.int32), graph.weights)
    # a float32 sum past float32's largest is infinite: a vertex reached only so would read
    # as unreached
    if graph.weights is not None and graph.m:
        tails = run.output.take(graph.sources)
        over = np.isfinite(tails)
        over &= np.isinf(run.output.take(graph.indices))
        if over.any():
            most = (tails[over].astype(np.float64) + graph.weights[over]).max()
            raise ConfigError(
                f"{graph.spec or graph.name}: SSSP distances reach {most:.9g}, beyond "
                f"float32's {FLOAT32_MAX:.9g}: the GPU's distances are float32, where they "
                "would be infinite (scale the weights down)")
    return run


def _cc(graph: Graph) -> FunctionalRun:
    sym = graph if not graph.directed else Graph.from_edges(
        graph.sources, graph.indices, graph.n, name=graph.name
    )
    return _lowering_run("cc", None, sym.indptr, sym.indices, initial_values("cc", sym.n),
                         np.arange(sym.n, dtype=np.int32), None)


def _pagerank(graph: Graph, tolerance: float, max_iterations: int, damping: float):
    n = graph.n
    out_degree = graph.degrees
    if graph.directed:
        order = np.argsort(graph.indices, kind="stable")
        pull_indices = graph.sources[order]
        pull_indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(graph.indices, minlength=n), out=pull_indptr[1:])
    else:
        pull_indptr, pull_indices = graph.indptr, graph.indices
    pull_rows = np.repeat(np.arange(n), np.diff(pull_indptr))
    dangling = out_degree == 0
    no_writes = np.zeros(0, dtype=np.int64)

    def step(rank):
        share = np.divide(rank, out_degree, out=np.zeros(n), where=~dangling)
        gathered = np.bincount(pull_rows, weights=share[pull_indices], minlength=n)
        return damping * (gathered + rank[dangling].sum() / n) + (1.0 - damping) / n

    # topology-driven: every vertex, until the L1 change is below n * tolerance
    rank = np.full(n, 1.0 / n)
    everyone = np.arange(n, dtype=np.int32)
    iterations = []
    for _ in range(max_iterations):
        new_rank = step(rank)
        iterations.append(IterationWork(everyone, no_writes))
        error = np.abs(new_rank - rank).sum()
        rank = new_rank
        if error < n * tolerance:
            break
    else:  # its ranks are not PageRank's, nor its iterations a converging run's
        raise ConfigError(
            f"{graph.spec or graph.name}: PageRank did not converge in {max_iterations} "
            f"iterations (the last changed the ranks by {error:.3g} in all, above n x tolerance "
            f"= {n * tolerance:.3g}): raise max_iterations or the tolerance")
    # data-driven: only the vertices whose rank moved by more than tolerance last time
    data_rank = np.full(n, 1.0 / n)
    worklist = everyone
    data_iterations = []
    for _ in range(max_iterations):
        if worklist.size == 0:
            break
        new_rank = step(data_rank)
        moved = np.abs(new_rank[worklist] - data_rank[worklist]) > tolerance
        data_rank[worklist] = new_rank[worklist]
        data_iterations.append(IterationWork(worklist, no_writes))
        worklist = worklist[moved]
    worklist_run = FunctionalRun(
        "pagerank", None, data_rank, tuple(data_iterations), pull_indptr, pull_indices,
        stores_per_vertex=True,
    )
    return FunctionalRun(
        "pagerank", None, rank, tuple(iterations), pull_indptr, pull_indices,
        stores_per_vertex=True, worklist_run=worklist_run,
    )
