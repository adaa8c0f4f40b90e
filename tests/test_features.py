"""graph_features against numpy/scipy/networkx computed independently on small graphs."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import scipy.sparse
import scipy.stats
from scipy.sparse.csgraph import shortest_path

from simulator.features import FEATURE_KEYS
from simulator.features import bfs_depths
from simulator.features import estimate_diameter
from simulator.features import gini
from simulator.features import graph_features
from simulator.graph import Graph
from simulator.load import load_graph


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("WARPSWEEP_CACHE_DIR", str(tmp_path / "cache"))


def small_graph() -> Graph:
    """A skewed graph with isolated vertices: RMAT scale 9 (many isolated) plus a path tail."""
    base = load_graph("rmat:scale=9,ef=4,seed=7", cache=False)
    src = np.concatenate([base.sources, np.arange(511, 530)])
    dst = np.concatenate([base.indices, np.arange(512, 531)])
    return Graph.from_edges(src, dst, 540, name="small")


def test_features_match_independent_numpy_scipy() -> None:
    g = small_graph()
    f = graph_features(g)
    adj = scipy.sparse.coo_matrix(
        (np.ones(g.m), (g.sources, g.indices)), shape=(g.n, g.n)
    ).tocsr()
    deg = np.asarray(adj.sum(axis=1)).ravel()
    assert f["n"] == 540 and f["m"] == adj.nnz
    assert f["directed"] == 0
    assert f["avg_degree"] == pytest.approx(deg.mean())
    assert f["median_degree"] == pytest.approx(np.median(deg))
    assert f["max_degree"] == deg.max()
    assert f["degree_std"] == pytest.approx(deg.std())
    assert f["degree_cv"] == pytest.approx(deg.std() / deg.mean())
    assert f["degree_skewness"] == pytest.approx(scipy.stats.skew(deg))
    assert f["degree_p90"] == pytest.approx(np.percentile(deg, 90))
    assert f["degree_p99"] == pytest.approx(np.percentile(deg, 99))
    for t in (1, 4, 8, 16, 32):
        assert f[f"frac_degree_gt_{t}"] == pytest.approx(np.mean(deg > t))
    assert f["isolated"] == np.count_nonzero(deg == 0) > 0
    # Gini via the mean absolute difference over all pairs.
    mad = np.abs(deg[:, None] - deg[None, :]).mean()
    assert f["degree_gini"] == pytest.approx(mad / (2 * deg.mean()))
    coo = adj.tocoo()
    assert f["locality"] == pytest.approx(np.mean(np.abs(coo.row - coo.col)) / g.n)
    dist = shortest_path(adj, unweighted=True, directed=False)
    exact = int(dist[np.isfinite(dist)].max())
    assert exact - 2 <= f["est_diameter"] <= exact


def test_feature_keys_types_and_determinism() -> None:
    g = load_graph("random:n=400,deg=5,seed=2", cache=False)
    f = graph_features(g)
    assert tuple(f) == FEATURE_KEYS
    assert all(type(v) in (int, float) for v in f.values())
    assert graph_features(g) == f
    assert f["frac_degree_gt_32"] == 0.0


@pytest.mark.parametrize(
    ("spec", "diameter"),
    [
        ("grid2d:rows=10,cols=15", 23),
        ("mesh2d:rows=8,cols=8", 14),  # the diagonals only shorten one direction
        ("random:n=30,m=435", 1),
    ],
)
def test_diameter_is_exact_on_regular_graphs(spec: str, diameter: int) -> None:
    g = load_graph(spec, cache=False)
    assert estimate_diameter(g) == diameter
    nxg = nx.Graph(list(zip(g.sources.tolist(), g.indices.tolist(), strict=True)))
    assert nx.diameter(nxg) == diameter


def test_diameter_of_a_path_and_of_a_directed_graph() -> None:
    n = 60
    path = Graph.from_edges(np.arange(n - 1), np.arange(1, n), n)
    assert estimate_diameter(path) == n - 1
    # Directed: measured on the underlying undirected graph, so a directed path counts fully.
    dpath = Graph.from_edges(np.arange(n - 1), np.arange(1, n), n, directed=True)
    assert estimate_diameter(dpath) == n - 1
    assert graph_features(dpath)["isolated"] == 0  # the sink has an in-edge
    assert graph_features(dpath)["directed"] == 1


def test_bfs_depths_match_scipy_shortest_path() -> None:
    g = load_graph("road:rows=25,cols=25,seed=4", cache=False)
    adj = scipy.sparse.csr_matrix((np.ones(g.m), g.indices, g.indptr), shape=(g.n, g.n))
    order, depth = bfs_depths(adj, 7)
    dist = shortest_path(adj, unweighted=True, indices=7)
    np.testing.assert_array_equal(depth, dist[order].astype(np.int64))
    assert set(order.tolist()) == set(np.flatnonzero(np.isfinite(dist)).tolist())


def test_skew_separates_rmat_from_random_and_grid() -> None:
    rmat = graph_features(load_graph("rmat:scale=11,seed=1", cache=False))
    rand = graph_features(load_graph("random:n=2048,deg=30,seed=1", cache=False))
    grid = graph_features(load_graph("grid2d:rows=45", cache=False))
    assert rmat["degree_gini"] > 0.5 > rand["degree_gini"] > grid["degree_gini"] >= 0
    assert rmat["max_degree"] > 10 * rmat["avg_degree"]
    assert grid["max_degree"] == 4 and grid["isolated"] == 0
    assert grid["locality"] < rand["locality"]


def test_gini_edge_cases() -> None:
    assert gini(np.zeros(5)) == 0.0
    assert gini(np.full(7, 3.0)) == 0.0
    assert gini(np.array([0, 0, 0, 10.0])) == pytest.approx(0.75)


def test_graph_without_edges() -> None:
    g = Graph(np.zeros(4, dtype=np.int64), np.zeros(0, dtype=np.int32))
    f = graph_features(g)
    assert f["isolated"] == 3 and f["est_diameter"] == 0 and f["locality"] == 0.0
    assert f["degree_cv"] == 0.0 and f["degree_skewness"] == 0.0
