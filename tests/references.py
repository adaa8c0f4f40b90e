"""Independent references for the algorithms' outputs (scipy.sparse.csgraph, networkx), shared
by tests/test_algorithms.py and tests/test_mapping_contract.py."""

import networkx as nx
import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components
from scipy.sparse.csgraph import dijkstra
from scipy.sparse.csgraph import shortest_path

from simulator import Graph


def adjacency(g: Graph, weighted: bool = False) -> csr_matrix:
    data = g.weights.astype(np.float64) if weighted else np.ones(g.m)
    return csr_matrix((data, g.indices, g.indptr), shape=(g.n, g.n))


def bfs_levels(g: Graph, source: int) -> np.ndarray:
    """Each vertex's BFS level from ``source`` (-1: unreached)."""
    ref = shortest_path(adjacency(g), directed=g.directed, unweighted=True, indices=source)
    return np.where(np.isinf(ref), -1, ref).astype(np.int64)


def sssp_distances(g: Graph, source: int) -> np.ndarray:
    return dijkstra(adjacency(g, weighted=True), directed=g.directed, indices=source)


def networkx_pagerank(g: Graph) -> list[float]:
    nxg = nx.DiGraph() if g.directed else nx.Graph()
    nxg.add_nodes_from(range(g.n))
    nxg.add_edges_from(zip(g.sources.tolist(), g.indices.tolist(), strict=True))
    ranks = nx.pagerank(nxg, alpha=0.85, tol=1e-6)
    return [ranks[v] for v in range(g.n)]


def assert_cc_labels(g: Graph, labels: np.ndarray) -> None:
    """``labels`` partition the graph as its weakly connected components do, each the
    smallest vertex id of its component."""
    count, ref = connected_components(adjacency(g), directed=g.directed, connection="weak")
    assert np.unique(labels).size == count
    # same partition: labels map one-to-one onto the reference's
    pairs = np.unique(np.stack([labels, ref]), axis=1)
    assert pairs.shape[1] == count
    # every label is the smallest vertex id of its component
    assert np.all(labels[labels] == labels) and np.all(labels <= np.arange(g.n))
