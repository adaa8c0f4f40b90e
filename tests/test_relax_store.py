"""relax=store: SSSP and CC worklists lowering by a plain store re-read until it holds, as the
independent kernels' store_recheck (bench/gpu/independent/sssp.cu), against atomicMin."""

import numpy as np
import pytest
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components
from scipy.sparse.csgraph import dijkstra

from simulator import Strategy
from simulator import load_graph
from simulator import simulate
from simulator.device import get_device
from simulator.engine import Launch
from simulator.engine import vertex_kernel
from simulator.errors import ConfigError
from simulator.graph import Graph

H100 = get_device("h100-datasheet")


@pytest.fixture(scope="module")
def kite():
    """0 -> 1, 2, 3 (weight 1), and 1, 2, 3 -> 4 (weights 5, 3, 4); undirected."""
    return Graph.from_edges(np.array([0, 0, 0, 1, 2, 3]), np.array([1, 2, 3, 4, 4, 4]),
                            weights=np.array([1.0, 1, 1, 5, 3, 4]), name="kite")


def test_pushes_and_atomics_counted_by_hand(kite):
    """Thread mapping. Launch 1: vertex 0's thread lowers 1, 2, 3 in three steps: three
    atomicMins (or plain stores), three pushes, one tail atomic a pushing step. Launch 2:
    threads 1, 2, 3 reach 4 in one step with 6, 4, 5. atomicMin in lane order: 6 lowers
    (inf), 4 lowers, 5 does not: two pushes; three atomicMins, one tail atomic. Plain
    stores: all three read inf, store and push; no atomicMin. Launch 3: vertex 4's copies
    lower nothing. Store then runs a verify sweep over all 12 stored edges."""
    atomic = simulate(kite, "sssp", "driven=data", device=H100, source=0, trace=True)
    store = simulate(kite, "sssp", "driven=data,relax=store", device=H100, source=0,
                     trace=True)
    assert atomic.output.tolist() == store.output.tolist() == [0, 1, 1, 1, 4]
    assert list(atomic.trace["pushed"]) == [3, 2, 0]
    assert list(store.trace["pushed"]) == [3, 3, 0, 0]
    assert list(atomic.trace["atomics"]) == [3 + 3, 3 + 1, 0]
    assert list(store.trace["atomics"]) == [3, 1, 0, 0]
    assert (atomic.worklist_items, atomic.duplicates) == (1 + 3 + 2, 1)
    assert (store.worklist_items, store.duplicates) == (1 + 3 + 3, 2)
    assert list(store.trace["form"]) == ["data"] * 3 + ["topology"]
    assert store.trace["edges"][-1] == kite.m == 12


def test_a_recheck_reads_its_words_again(kite):
    """Launch 2 alone (worklist 1, 2, 3; the writes to 4 with 6, 4, 5): the stores'
    re-read adds the stored word's sector and a request for the storing step, and the
    three atomicMins go; the tail atomic stays."""
    def launch(rechecks):
        writes = np.array([4, 6, 8])  # the edges 1->4, 2->4, 3->4
        assert kite.indices[writes].tolist() == [4, 4, 4]
        return vertex_kernel(
            kite.indptr, kite.indices,
            Launch(np.array([1, 2, 3]), writes, slots=np.array([1, 2, 3]),
                   lookup="worklist", push="atomic", write_values=np.array([6.0, 4.0, 5.0]),
                   rechecks=rechecks),
            Strategy.parse("driven=data"), H100, reads_weights=True, atomic_updates=True)
    atomic, store = launch(False), launch(True)
    assert atomic.pushed.tolist() == [4, 4] and store.pushed.tolist() == [4, 4, 4]
    assert (atomic.atomics, store.atomics) == (3 + 1, 1)
    assert store.transactions == atomic.transactions + 1
    assert store.requests == atomic.requests + 1


@pytest.mark.parametrize("config", [
    "driven=data,relax=store",
    "mapping=vwarp,w=8,driven=data,push=block,relax=store",
    "mapping=vwarp,w=32,driven=data,dedup=true,relax=store",
])
def test_plain_stores_reach_the_references(config):
    g = load_graph("rmat:scale=10,ef=8,weights=random,seed=5")
    matrix = csr_matrix((g.weights, g.indices, g.indptr), shape=(g.n,) * 2)
    source = int(np.argmax(np.diff(g.indptr)))
    sssp = simulate(g, "sssp", config, source=source)
    assert np.allclose(sssp.output, dijkstra(matrix, indices=source))
    cc = simulate(g, "cc", config)
    _, labels = connected_components(matrix, directed=False)
    # one label per component, the same partition as scipy's
    pairs = set(zip(cc.output.tolist(), labels.tolist(), strict=True))
    assert len(pairs) == len(set(labels.tolist())) == len(set(cc.output.tolist()))
    atomic = simulate(g, "sssp", config.replace(",relax=store", ""), source=source)
    assert sssp.atomics < atomic.atomics and sssp.worklist_items >= atomic.worklist_items


def test_relax_is_a_data_driven_knob_of_sssp_and_cc(kite):
    assert Strategy.parse("driven=data").relax == "atomic"
    with pytest.raises(ConfigError, match="relax"):
        Strategy.parse("driven=temporal,relax=store")
    with pytest.raises(ConfigError, match="relax"):
        Strategy.parse("driven=data,relax=cas")
    with pytest.raises(ConfigError, match="relax='store' does not apply to bfs"):
        simulate(kite, "bfs", "driven=data,relax=store", source=0)
    with pytest.raises(ConfigError) as refused:  # PageRank's had named BFS's worklists (SPACES)
        simulate(kite, "pagerank", "driven=data,relax=store")
    assert "pagerank" in str(refused.value) and "BFS" not in str(refused.value)
