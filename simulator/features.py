"""Graph features for the selector and the results table: a flat dict of ints and floats.

Degrees are out-degrees (the work a kernel does per vertex; for an undirected graph, the
degree). The diameter is estimated on the underlying undirected graph by double-sweep BFS
from a few seeded sources: a lower bound that is usually exact or close. Everything is
deterministic for a given graph (and ``seed``).
"""

from __future__ import annotations

import numpy as np

from simulator.graph import Graph

DEGREE_THRESHOLDS = (1, 4, 8, 16, 32)
FEATURE_KEYS = (
    "n",
    "m",
    "directed",
    "avg_degree",
    "median_degree",
    "max_degree",
    "degree_std",
    "degree_cv",
    "degree_gini",
    "degree_skewness",
    "degree_p90",
    "degree_p99",
    *(f"frac_degree_gt_{t}" for t in DEGREE_THRESHOLDS),
    "isolated",
    "est_diameter",
    "locality",
)


def graph_features(graph: Graph, *, seed: int = 0, sources: int = 4) -> dict[str, float | int]:
    """n, m, degree statistics, isolated count, estimated diameter and index locality.

    ``m`` counts stored edges (both directions of an undirected edge); ``locality`` is the
    mean of |u - v| / n over the stored edges (small when neighbours have nearby ids).
    """
    n, m = graph.n, graph.m
    deg = graph.degrees
    degf = deg.astype(np.float64)
    mean = float(degf.mean()) if n else 0.0
    std = float(degf.std()) if n else 0.0
    feats: dict[str, float | int] = {
        "n": n,
        "m": m,
        "directed": int(graph.directed),
        "avg_degree": mean,
        "median_degree": float(np.median(degf)) if n else 0.0,
        "max_degree": int(deg.max(initial=0)),
        "degree_std": std,
        "degree_cv": std / mean if mean > 0 else 0.0,
        "degree_gini": gini(degf),
        "degree_skewness": float(np.mean((degf - mean) ** 3) / std**3) if std > 0 else 0.0,
        "degree_p90": float(np.percentile(degf, 90)) if n else 0.0,
        "degree_p99": float(np.percentile(degf, 99)) if n else 0.0,
    }
    for t in DEGREE_THRESHOLDS:
        feats[f"frac_degree_gt_{t}"] = float(np.count_nonzero(deg > t) / n) if n else 0.0
    touched = deg > 0
    if graph.directed:
        touched |= np.bincount(graph.indices, minlength=n) > 0
    feats["isolated"] = int(n - np.count_nonzero(touched))
    feats["est_diameter"] = estimate_diameter(graph, seed=seed, sources=sources)
    if m:
        gap = np.abs(graph.sources.astype(np.int64) - graph.indices.astype(np.int64))
        feats["locality"] = float(gap.mean() / n)
    else:
        feats["locality"] = 0.0
    return feats


def gini(values: np.ndarray) -> float:
    """Gini coefficient of non-negative values (0: all equal; towards 1: one holds all)."""
    x = np.sort(np.asarray(values, dtype=np.float64))
    total = x.sum()
    if x.size == 0 or total <= 0:
        return 0.0
    rank = np.arange(1, x.size + 1, dtype=np.float64)
    return float(np.sum((2 * rank - x.size - 1) * x) / (x.size * total))


def _adjacency(graph: Graph):
    """scipy CSR of the graph's structure (int8 ones)."""
    from scipy.sparse import csr_matrix

    data = np.ones(graph.m, dtype=np.int8)
    return csr_matrix((data, graph.indices, graph.indptr), shape=(graph.n, graph.n))


def bfs_depths(adj, source: int, directed: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(vertices reached in BFS order, their hop distance from ``source``).

    ``directed`` follows out-edges only; otherwise edges are followed both ways.
    """
    from scipy.sparse.csgraph import breadth_first_order

    order, pred = breadth_first_order(adj, source, directed=directed, return_predecessors=True)
    pos = np.full(adj.shape[0], -1, dtype=np.int64)
    pos[order] = np.arange(order.size)
    parent = pos[np.where(pred[order] < 0, source, pred[order])]
    depth = (parent != np.arange(order.size)).astype(np.int64)
    # Pointer jumping: log2(depth) whole-array passes instead of walking BFS levels.
    while True:
        grand = parent[parent]
        if np.array_equal(grand, parent):
            break
        depth += depth[parent]
        parent = grand
    return order, depth


def estimate_diameter(graph: Graph, *, seed: int = 0, sources: int = 4) -> int:
    """Largest BFS eccentricity found by double sweeps from ``sources`` seeded start vertices.

    The starts are the highest-degree vertex and random non-isolated vertices; each sweep
    BFSes from a start and again from the farthest vertex found.
    """
    if graph.m == 0 or sources < 1:
        return 0
    adj = _adjacency(graph)
    # On a symmetric CSR, following out-edges is the undirected BFS, and faster.
    out_only = not graph.directed
    deg = graph.degrees
    if graph.directed:
        deg = deg + np.bincount(graph.indices, minlength=graph.n)
    candidates = np.flatnonzero(deg > 0)
    rng = np.random.default_rng(seed)
    extra = rng.choice(candidates, size=min(sources - 1, candidates.size), replace=False)
    starts = [int(np.argmax(deg)), *(int(s) for s in extra)]
    best = 0
    for start in starts:
        order, depth = bfs_depths(adj, start, out_only)
        far = int(order[np.argmax(depth)])
        best = max(best, int(depth.max()))
        _, depth = bfs_depths(adj, far, out_only)
        best = max(best, int(depth.max()))
    return best
