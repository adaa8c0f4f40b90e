"""Generators (size, degree shape, determinism), normalisation, random weights and relabelling."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import breadth_first_order

from simulator.generators import grid2d_edges
from simulator.generators import random_edges
from simulator.generators import rmat_edges
from simulator.graph import Graph
from simulator.load import load_graph
from simulator.load import relabel
from simulator.load import vertex_order


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("WARPSWEEP_CACHE_DIR", str(tmp_path / "cache"))


def edge_set(g: Graph) -> set[tuple[int, int]]:
    """Stored edges as a Python set (small graphs only)."""
    return set(zip(g.sources.tolist(), g.indices.tolist(), strict=True))


def assert_simple_symmetric(g: Graph) -> None:
    """No self loops, no duplicates, every edge stored both ways, rows sorted."""
    edges = edge_set(g)
    assert len(edges) == g.m
    assert all(u != v for u, v in edges)
    assert all((v, u) in edges for u, v in edges)
    for v in range(min(g.n, 200)):
        row = g.indices[g.indptr[v] : g.indptr[v + 1]]
        assert np.all(np.diff(row) > 0)


# --------------------------------------------------------------------------- rmat


def test_rmat_size_and_skew() -> None:
    g = load_graph("rmat:scale=12,ef=8,seed=1", cache=False)
    assert g.n == 4096
    assert not g.directed
    # 8 * 4096 generated edges, stored both ways, minus self loops and duplicates.
    assert 0.7 * 2 * 8 * 4096 < g.m <= 2 * 8 * 4096
    assert g.degrees.max() > 20 * g.degrees.mean()
    assert np.count_nonzero(g.degrees == 0) > 0.05 * g.n  # RMAT leaves many isolated vertices
    assert_simple_symmetric(g)


def test_rmat_is_deterministic_under_a_seed() -> None:
    a = load_graph("rmat:scale=10,seed=3", cache=False)
    b = load_graph("rmat:scale=10,seed=3", cache=False)
    c = load_graph("rmat:scale=10,seed=4", cache=False)
    np.testing.assert_array_equal(a.indptr, b.indptr)
    np.testing.assert_array_equal(a.indices, b.indices)
    assert not np.array_equal(a.indptr, c.indptr)


def test_rmat_quadrant_probabilities() -> None:
    # scale=1: every edge is one quadrant draw; frequencies must match a, b, c, d.
    e = rmat_edges(1, ef=100_000, a=0.5, b=0.2, c=0.1, seed=0, permute=False)
    counts = np.bincount(e.src * 2 + e.dst, minlength=4) / e.size
    np.testing.assert_allclose(counts, [0.5, 0.2, 0.1, 0.2], atol=0.005)


def test_rmat_bits_are_independent_across_levels() -> None:
    # Without permutation, a=1 puts every edge at (0, 0); d=1 at (n-1, n-1).
    e = rmat_edges(9, ef=2, a=1.0, b=0.0, c=0.0, permute=False)
    assert e.src.max() == 0 and e.dst.max() == 0
    e = rmat_edges(9, ef=2, a=0.0, b=0.0, c=0.0, permute=False)
    assert np.all(e.src == 511) and np.all(e.dst == 511)
    # Source bit i is 1 with probability c + d at every level.
    e = rmat_edges(16, ef=4, seed=2, permute=False)
    bits = (e.src[:, None] >> np.arange(16)) & 1
    np.testing.assert_allclose(bits.mean(axis=0), 0.24, atol=0.01)


def test_rmat_directed_keeps_direction() -> None:
    g = load_graph("rmat:scale=10,ef=4,directed=true", cache=False)
    assert g.directed
    assert g.m <= 4 * 1024
    edges = edge_set(g)
    assert any((v, u) not in edges for u, v in edges)


# --------------------------------------------------------------------------- random


def test_random_has_exactly_m_distinct_edges_and_tight_degrees() -> None:
    g = load_graph("random:n=2000,m=16000,seed=5", cache=False)
    assert g.n == 2000
    assert g.m == 2 * 16000
    d = g.degrees
    assert d.mean() == 16
    assert d.max() < 2 * d.mean()
    assert d.std() / d.mean() < 0.4
    assert_simple_symmetric(g)


def test_random_deg_and_directed() -> None:
    assert load_graph("random:n=1000,deg=6", cache=False).m == 6000
    g = load_graph("random:n=1000,deg=6,directed=true", cache=False)
    assert g.directed and g.m == 6000


def test_random_complete_graph() -> None:
    g = load_graph("random:n=12,m=66", cache=False)
    assert np.all(g.degrees == 11)
    g = load_graph("random:n=12,m=132,directed=true", cache=False)
    assert np.all(g.degrees == 11)


def test_random_pair_decoding_is_exact_for_huge_n() -> None:
    # Float roots lose precision near 2**31 vertices; the decoded pairs must stay exact.
    n = 2**31 - 1
    e = random_edges(n, 20_000, seed=11)
    assert np.all(e.src < e.dst) and e.src.min() >= 0 and e.dst.max() < n
    assert len(set(zip(e.src.tolist(), e.dst.tolist(), strict=True))) == 20_000


def test_random_is_deterministic_under_a_seed() -> None:
    a = random_edges(500, 900, seed=1)
    b = random_edges(500, 900, seed=1)
    c = random_edges(500, 900, seed=2)
    np.testing.assert_array_equal(a.src, b.src)
    np.testing.assert_array_equal(a.dst, b.dst)
    assert not np.array_equal(a.src, c.src)


# --------------------------------------------------------------------------- grids


def test_grid2d_shape() -> None:
    rows, cols = 7, 9
    g = load_graph(f"grid2d:rows={rows},cols={cols}", cache=False)
    assert g.n == rows * cols
    assert g.m == 2 * (rows * (cols - 1) + cols * (rows - 1))
    assert g.degrees.max() == 4 and g.degrees.min() == 2
    v = 3 * cols + 4
    assert set(g.indices[g.indptr[v] : g.indptr[v + 1]].tolist()) == {
        v - 1, v + 1, v - cols, v + cols,
    }
    assert_simple_symmetric(g)


def test_mesh2d_shape() -> None:
    rows, cols = 6, 5
    g = load_graph(f"mesh2d:rows={rows},cols={cols}", cache=False)
    assert g.m == 2 * (rows * (cols - 1) + cols * (rows - 1) + (rows - 1) * (cols - 1))
    assert g.degrees.max() == 6
    v = 2 * cols + 2
    assert set(g.indices[g.indptr[v] : g.indptr[v + 1]].tolist()) == {
        v - 1, v + 1, v - cols, v + cols, v - cols - 1, v + cols + 1,
    }
    assert_simple_symmetric(g)


def test_road_is_a_thinned_grid() -> None:
    g = load_graph("road:rows=100,cols=100,seed=2", cache=False)
    grid = edge_set(load_graph("grid2d:rows=100,cols=100", cache=False))
    assert edge_set(g) <= grid
    assert g.degrees.max() <= 4
    assert 2.3 < g.degrees.mean() < 2.9
    again = load_graph("road:rows=100,cols=100,seed=2", cache=False)
    other = load_graph("road:rows=100,cols=100,seed=3", cache=False)
    np.testing.assert_array_equal(g.indices, again.indices)
    assert edge_set(g) != edge_set(other)
    full = load_graph("road:rows=10,cols=10,keep=1", cache=False)
    assert edge_set(full) == edge_set(load_graph("grid2d:rows=10", cache=False))


def test_directed_grid_stores_both_directions() -> None:
    g = load_graph("grid2d:rows=4,cols=5,directed=true", cache=False)
    assert g.directed
    assert edge_set(g) == edge_set(load_graph("grid2d:rows=4,cols=5", cache=False))


def test_grid_edges_are_right_and_down() -> None:
    e = grid2d_edges(2, 3)
    assert sorted(zip(e.src.tolist(), e.dst.tolist(), strict=True)) == [
        (0, 1), (0, 3), (1, 2), (1, 4), (2, 5), (3, 4), (4, 5),
    ]


# --------------------------------------------------------------------------- weights


def test_random_weights_are_seeded_integers_symmetric() -> None:
    g = load_graph("rmat:scale=11,weights=random,seed=4", cache=False)
    w = g.weights
    assert w is not None and w.dtype == np.float32 and w.size == g.m
    assert np.all(w == np.round(w)) and w.min() == 1 and w.max() == 100
    assert abs(float(w.mean()) - 50.5) < 1.5
    weight = dict(zip(zip(g.sources.tolist(), g.indices.tolist(), strict=True), w.tolist(),
                      strict=True))
    assert all(weight[(v, u)] == x for (u, v), x in weight.items())
    same = load_graph("rmat:scale=11,weights=random,seed=4", cache=False)
    np.testing.assert_array_equal(w, same.weights)
    unweighted = load_graph("rmat:scale=11,seed=4", cache=False)
    np.testing.assert_array_equal(g.indices, unweighted.indices)  # weights leave structure


def test_random_weights_change_with_the_seed() -> None:
    a = load_graph("grid2d:rows=20,weights=random,seed=1", cache=False)
    b = load_graph("grid2d:rows=20,weights=random,seed=2", cache=False)
    np.testing.assert_array_equal(a.indices, b.indices)
    assert np.mean(a.weights != b.weights) > 0.9


def test_directed_random_weights_differ_by_direction() -> None:
    g = load_graph("grid2d:rows=20,directed=true,weights=random", cache=False)
    weight = dict(zip(zip(g.sources.tolist(), g.indices.tolist(), strict=True),
                      g.weights.tolist(), strict=True))
    assert np.mean([weight[(v, u)] != x for (u, v), x in weight.items()]) > 0.9


# --------------------------------------------------------------------------- relabelling


def test_order_degree_sorts_by_decreasing_degree() -> None:
    base = load_graph("rmat:scale=10,seed=1", cache=False)
    g = load_graph("rmat:scale=10,seed=1,order=degree", cache=False)
    assert np.all(np.diff(g.degrees) <= 0)
    np.testing.assert_array_equal(np.sort(g.degrees), np.sort(base.degrees))
    assert g.m == base.m


def test_order_bfs_numbers_vertices_in_bfs_order() -> None:
    g = load_graph("road:rows=30,cols=30,seed=1,order=bfs", cache=False)
    adj = csr_matrix((np.ones(g.m), g.indices, g.indptr), shape=(g.n, g.n))
    seen = breadth_first_order(adj, 0, directed=False, return_predecessors=False)
    # The first component is 0..k-1 in exactly scipy's BFS order from vertex 0.
    np.testing.assert_array_equal(seen, np.arange(seen.size))
    base = load_graph("road:rows=30,cols=30,seed=1", cache=False)
    np.testing.assert_array_equal(np.sort(g.degrees), np.sort(base.degrees))


def test_order_bfs_improves_locality_of_a_shuffled_grid() -> None:
    shuffled = load_graph("grid2d:rows=40,order=random,seed=3", cache=False)
    ordered = relabel(shuffled, vertex_order(shuffled, "bfs"))
    gap = np.abs(ordered.sources - ordered.indices.astype(np.int64)).mean()
    assert gap < 0.2 * np.abs(shuffled.sources - shuffled.indices.astype(np.int64)).mean()


def test_relabel_maps_every_edge_and_weight() -> None:
    g = load_graph("random:n=300,m=900,weights=random,seed=2", cache=False)
    perm = np.random.default_rng(0).permutation(g.n)
    h = relabel(g, perm)
    before = {(int(perm[u]), int(perm[v])): w for u, v, w in
              zip(g.sources, g.indices, g.weights, strict=True)}
    after = dict(zip(zip(h.sources.tolist(), h.indices.tolist(), strict=True),
                     h.weights.tolist(), strict=True))
    assert before == after


def test_order_random_is_a_seeded_permutation() -> None:
    a = load_graph("grid2d:rows=10,order=random,seed=1", cache=False)
    b = load_graph("grid2d:rows=10,order=random,seed=2", cache=False)
    assert a.m == b.m
    assert edge_set(a) != edge_set(b)
    np.testing.assert_array_equal(np.sort(a.degrees), np.sort(b.degrees))


# --------------------------------------------------------------------------- normalisation


@settings(max_examples=60, deadline=None)
@given(
    edges=st.lists(
        st.tuples(st.integers(0, 11), st.integers(0, 11), st.integers(0, 9)), max_size=60
    ),
    directed=st.booleans(),
)
def test_from_edges_matches_a_set_reference(edges, directed: bool) -> None:
    n = 12
    src = np.array([e[0] for e in edges], dtype=np.int64)
    dst = np.array([e[1] for e in edges], dtype=np.int64)
    w = np.array([e[2] for e in edges], dtype=np.float32)
    g = Graph.from_edges(src, dst, n, w, directed=directed)
    best: dict[tuple[int, int], float] = {}
    for u, v, x in edges:
        if u == v:
            continue
        for key in [(u, v)] if directed else [(u, v), (v, u)]:
            best[key] = min(best.get(key, np.inf), float(x))
    got = dict(zip(zip(g.sources.tolist(), g.indices.tolist(), strict=True),
                   g.weights.tolist(), strict=True))
    assert got == best
    assert list(zip(g.sources.tolist(), g.indices.tolist(), strict=True)) == sorted(best)
