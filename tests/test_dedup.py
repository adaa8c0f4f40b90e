"""dedup=true: an in-queue flag keeps a worklist free of duplicates, at the cost of a claim
per push and a clear per entry (hand-counted on the relay in
test_engine_hand_counted_worklists.py)."""

import numpy as np
import pytest
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import dijkstra
from scipy.sparse.csgraph import shortest_path

from simulator import Strategy
from simulator import load_graph
from simulator import simulate
from simulator.errors import ConfigError

GRAPH = "rmat:scale=10,ef=8,weights=random,seed=5"


@pytest.fixture(scope="module")
def graph():
    return load_graph(GRAPH)


@pytest.mark.parametrize("config", [
    "driven=data,dedup=true",
    "mapping=vwarp,w=32,driven=data,push=block,dedup=true",
    "mapping=vwarp,w=8,driven=temporal,switch_to_topology=0.05,dedup=true",
])
def test_deduplicated_worklists_reach_the_references(graph, config):
    source = int(np.argmax(np.diff(graph.indptr)))
    matrix = csr_matrix((graph.weights, graph.indices, graph.indptr), shape=(graph.n,) * 2)
    sssp = simulate(graph, "sssp", config, source=source)
    assert np.allclose(sssp.output, dijkstra(matrix, indices=source))
    bfs = simulate(graph, "bfs", config, source=source)
    hops = shortest_path(matrix, unweighted=True, indices=source)
    assert np.array_equal(bfs.output, np.where(np.isinf(hops), -1, hops).astype(np.int64))
    plain = simulate(graph, "sssp", config.replace(",dedup=true", ""), source=source)
    assert sssp.duplicates == 0 and sssp.worklist_items <= plain.worklist_items
    if "driven=data" in config:  # the worklists the plain run duplicates
        assert plain.duplicates > 0 and sssp.worklist_items < plain.worklist_items
        assert sssp.atomics > plain.atomics  # a claim a push and a clear an entry on top


def test_dedup_is_a_worklist_knob():
    assert Strategy.parse("driven=data").dedup is False
    assert Strategy.parse("driven=temporal,dedup=true").dedup is True
    with pytest.raises(ConfigError, match="dedup"):
        Strategy.parse("mapping=thread,dedup=true")  # a sweep has no worklist
    with pytest.raises(ConfigError, match="dedup"):
        Strategy.parse("driven=spatial,dedup=true")
    with pytest.raises(ConfigError, match="true or false"):
        Strategy(driven="data", dedup="yes")
