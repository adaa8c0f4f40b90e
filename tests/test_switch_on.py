"""The temporal hybrid's switch weighed by the frontier's vertices (x N) or out-edges (x M)."""

import numpy as np
import pytest
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import dijkstra

from simulator import Strategy
from simulator import simulate
from simulator.errors import ConfigError
from simulator.graph import Graph

LEAVES = 100


@pytest.fixture(scope="module")
def hub_behind_a_path():
    """0 - 1, and 1 a hub of 100 leaves: n = 102, M = 2 x 101 = 202 stored edges. The
    frontiers are {0} (1 edge), {1} (101 edges), the leaves (100 vertices, 100 edges)."""
    src = np.array([0] + [1] * LEAVES)
    dst = np.array([1] + list(range(2, 2 + LEAVES)))
    return Graph.from_edges(src, dst, weights=np.ones(src.size), name="hub")


@pytest.mark.parametrize("algorithm", ["bfs", "sssp"])
def test_edges_switch_earlier_on_a_hub(hub_behind_a_path, algorithm):
    g = hub_behind_a_path
    assert (g.n, g.m) == (102, 202)
    config = "driven=temporal,switch_to_topology=0.05"
    # by vertices (limit 0.05 x 102 = 5.1): {0} and {1} are worklists, the 100 leaves a sweep
    by_vertices = simulate(g, algorithm, config, source=0, trace=True)
    assert list(by_vertices.trace["form"]) == ["data", "data", "topology"]
    # by edges (limit 0.05 x 202 = 10.1): {1}'s 101 edges are already past it
    by_edges = simulate(g, algorithm, config + ",switch_on=edges", source=0, trace=True)
    assert list(by_edges.trace["form"]) == ["data", "topology", "topology"]
    # a limit above the hub's edges (0.6 x 202 = 121.2) keeps every frontier a worklist
    wide = simulate(g, algorithm, "driven=temporal,switch_to_topology=0.6,switch_on=edges",
                    source=0, trace=True)
    assert list(wide.trace["form"]) == ["data", "data", "data"]
    if algorithm == "sssp":
        matrix = csr_matrix((g.weights, g.indices, g.indptr), shape=(g.n,) * 2)
        assert np.allclose(by_edges.output, dijkstra(matrix, indices=0))


def test_switch_on_is_a_temporal_knob():
    assert Strategy.parse("driven=temporal").switch_on == "vertices"
    assert Strategy.parse("driven=temporal,switch_on=edges").switch_on == "edges"
    with pytest.raises(ConfigError, match="switch_on"):
        Strategy.parse("driven=data,switch_on=edges")
    with pytest.raises(ConfigError, match="switch_on"):
        Strategy.parse("driven=temporal,switch_on=bytes")
