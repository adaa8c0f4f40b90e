"""Every algorithm's output against an independent reference (scipy.sparse.csgraph, networkx)."""

import numpy as np
import pytest
from scipy.sparse.csgraph import connected_components
from scipy.sparse.csgraph import dijkstra
from scipy.sparse.csgraph import shortest_path

from simulator import ConfigError
from simulator import Graph
from simulator import functional_run
from simulator import simulate
from simulator.functional import default_source
from tests.references import adjacency
from tests.references import assert_cc_labels
from tests.references import bfs_levels
from tests.references import networkx_pagerank
from tests.references import sssp_distances

STRATEGIES = [
    None,
    {"mapping": "vwarp", "w": 8, "chunk": 4},
    {"mapping": "vwarp", "w": 32, "distribution": "dynamic", "chunk": 16},
    {"mapping": "thread", "defer_threshold": 8},
]
# atomicMin on every edge, unread (the forms that lower values: SSSP's and CC's)
UNCHECKED = [
    {"mapping": "vwarp", "w": 8, "precheck": False, "defer_threshold": 8},
    {"driven": "data", "push": "block", "precheck": False},
    {"mapping": "vwarp", "w": 32, "driven": "temporal", "switch_on": "edges",
     "precheck": False},
]


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_bfs_levels_match_scipy(small_graphs, strategy):
    for g in small_graphs:
        source = default_source(g)
        levels = simulate(g, "bfs", strategy, source=source).output
        np.testing.assert_array_equal(levels, bfs_levels(g, source))


@pytest.mark.parametrize("strategy", STRATEGIES + UNCHECKED)
def test_sssp_distances_match_dijkstra(small_graphs, strategy):
    for g in small_graphs:
        dist = simulate(g, "sssp", strategy, source=3).output
        np.testing.assert_array_equal(dist, sssp_distances(g, 3))


@pytest.mark.parametrize("strategy", STRATEGIES[:2])
def test_pagerank_matches_networkx(small_graphs, strategy):
    for g in small_graphs:
        ranks = simulate(g, "pagerank", strategy).output
        ref = networkx_pagerank(g)
        np.testing.assert_allclose(ranks, ref, atol=1e-6)


@pytest.mark.parametrize("strategy", STRATEGIES + UNCHECKED)
def test_cc_labels_match_scipy(small_graphs, strategy):
    for g in small_graphs:
        assert_cc_labels(g, simulate(g, "cc", strategy).output)


def test_long_diameter_graph_matches_references():
    """A road-like graph's frontiers are a sliver of its vertices (the functional run then
    finds the next frontier by sorting, not through an N-sized table): same answers."""
    from simulator import functional_run
    from simulator import load_graph

    g = load_graph("road:rows=70,cols=60,seed=3,weights=random")
    source = default_source(g)
    run = functional_run(g, "bfs", source)
    assert max(it.active.size for it in run.iterations) * 16 < g.n
    ref = shortest_path(adjacency(g), directed=g.directed, unweighted=True, indices=source)
    np.testing.assert_array_equal(run.output, np.where(np.isinf(ref), -1, ref))
    dist = functional_run(g, "sssp", source).output
    np.testing.assert_allclose(dist, dijkstra(adjacency(g, weighted=True), indices=source))
    labels = functional_run(g, "cc").output
    count, ref_labels = connected_components(adjacency(g), connection="weak")
    assert np.unique(np.stack([labels, ref_labels]), axis=1).shape[1] == count


def test_distinct_ids_few_and_many():
    from simulator.sorted_runs import distinct_ids

    rng = np.random.default_rng(5)
    for size in (0, 3, 60, 5000):  # sorted below universe / 16, through a table above
        ids = rng.integers(0, 1000, size)
        np.testing.assert_array_equal(distinct_ids(ids, 1000), np.unique(ids))


def test_first_of_each_gives_each_keys_first_index_in_key_order():
    from simulator.sorted_runs import first_of_each

    rng = np.random.default_rng(6)
    for size in (0, 1, 40, 5000):  # sorted below universe / 16, through a table above
        keys = rng.integers(0, 1000, size)
        _, want = np.unique(keys, return_index=True)
        np.testing.assert_array_equal(first_of_each(keys), want)


def test_distinct_per_group_counts_each_groups_distinct_values():
    """Against a count of the distinct (group, value) pairs, on every path: values in
    order (by runs), many for their range (a table), few (a sort); groups with none."""
    from simulator.sorted_runs import distinct_per_group

    rng = np.random.default_rng(8)
    for size, universe, ordered in ((0, 1, False), (1, 5, False), (300, 200, False),
                                    (300, 200, True), (300, 100_000, False),
                                    (5000, 1_000_000, True)):
        values = rng.integers(0, universe, size)
        if ordered:
            values.sort()
        groups = values * 7 // universe  # a value's group is its own, 0-6; group 7 holds none
        pairs = np.unique(np.stack([groups, values]), axis=1)
        want = np.bincount(pairs[0], minlength=8) if size else np.zeros(8, dtype=np.int64)
        np.testing.assert_array_equal(distinct_per_group(values, groups, 8), want)


def test_run_reductions_equal_reduceat():
    from simulator.sorted_runs import run_maxima
    from simulator.sorted_runs import run_minima
    from simulator.sorted_runs import run_numbers
    from simulator.sorted_runs import run_sums

    rng = np.random.default_rng(7)
    for size, mean_run in ((1, 1), (30, 1.2), (4000, 3), (4000, 40)):
        first = np.append(True, rng.random(size - 1) < 1 / mean_run)
        starts = np.flatnonzero(first)
        numbers = run_numbers(starts, size)
        np.testing.assert_array_equal(numbers, np.cumsum(first) - 1)
        rows = rng.integers(0, 50, (3, size)).astype(np.float64)  # whole: sums exact
        np.testing.assert_array_equal(run_sums(rows, numbers, starts.size),
                                      np.add.reduceat(rows, starts, axis=1))
        for values in (rows[0], rng.integers(-9, 9, size)):
            np.testing.assert_array_equal(run_maxima(values, starts, numbers),
                                          np.maximum.reduceat(values, starts))
            np.testing.assert_array_equal(run_minima(values, starts, numbers),
                                          np.minimum.reduceat(values, starts))


def test_real_graph_matches_references():
    from tests.conftest import SHARED_GRAPHS

    path = SHARED_GRAPHS / "p2p-Gnutella08.txt.gz"
    if not path.exists():
        pytest.skip(f"{path} is not present")
    from simulator import load_graph

    g = load_graph(f"file:{path}")
    source = default_source(g)
    levels = simulate(g, "bfs", {"mapping": "vwarp", "w": 4}, source=source).output
    ref = shortest_path(adjacency(g), directed=g.directed, unweighted=True, indices=source)
    np.testing.assert_array_equal(levels, np.where(np.isinf(ref), -1, ref))
    count, _ = connected_components(adjacency(g), directed=g.directed, connection="weak")
    assert np.unique(simulate(g, "cc").output).size == count


def test_sssp_without_weights_says_how_to_add_them():
    g = Graph.from_edges([0, 1], [1, 2], 3, name="path", spec="grid2d:rows=1,cols=3")
    with pytest.raises(ConfigError, match="weights=random"):
        simulate(g, "sssp", source=0)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(algorithm="dfs"), "unknown algorithm"),
        (dict(algorithm="bfs", source=99), "out of range"),
        (dict(algorithm="bfs", device="gtx9000"), "unknown device"),
        (dict(algorithm="bfs", strategy={"mapping": "vwarp", "w": 3}), "w in"),
        (dict(algorithm="pagerank", source=1), "takes no source"),
    ],
)
def test_bad_input_is_a_clear_error(kwargs, message):
    g = Graph.from_edges([0, 1], [1, 2], 3)
    algorithm = kwargs.pop("algorithm")
    with pytest.raises(ConfigError, match=message):
        simulate(g, algorithm, **kwargs)


def test_empty_graph_is_rejected():
    g = Graph(np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int32), name="empty")
    with pytest.raises(ConfigError, match="no vertices"):
        simulate(g, "bfs")


# Every driven form, hybrid and mapping of issue 4 computes the topology-driven answer.
FORMS = [
    "driven=data",
    "driven=data,push=chunked,mapping=vwarp,w=4",
    "driven=data,push=prefix,variable_grid=false",
    "driven=temporal,switch_to_topology=0.05,switch_to_data=0.01",
    "driven=temporal,switch_to_topology=0.3,push=prefix,mapping=wer",
    "driven=spatial,partition=4",
    "driven=spatial,partition=32,push=chunked,mapping=adaptive",
    "unroll=3,mapping=wer+",
    "mapping=thread,donate_threshold=2",
    "mapping=adaptive,adaptive_stat=p90,adaptive_max_w=16,defer_threshold=16",
]


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("algorithm", ["bfs", "sssp", "cc"])
def test_driven_forms_match_topology(small_graphs, form, algorithm):
    """The answer always; the launches too where nothing runs asynchronously: these graphs fit
    one wave of resident warps, but SSSP's and CC's outlier kernel reads what its main kernel
    lowered, so deferring converges in as many launches as the synchronous run or fewer."""
    for g in small_graphs:
        topology = simulate(g, algorithm, None)
        result = simulate(g, algorithm, form)
        np.testing.assert_array_equal(result.output, topology.output)
        if algorithm == "bfs" or "defer_threshold" not in form:
            assert result.iterations == topology.iterations
        else:
            assert result.iterations <= len(functional_run(g, algorithm).iterations)


@pytest.mark.parametrize("form", ["driven=data", "driven=data,mapping=wer+,push=prefix"])
def test_data_driven_pagerank_stays_near_networkx(small_graphs, form):
    """Data-driven PageRank freezes vertices whose rank moved by at most the tolerance (and
    never wakes them), so it approximates the fixpoint: within 10% per rank on these graphs,
    not on every graph (docs/model.md gives how far it strays)."""
    for g in small_graphs:
        ranks = simulate(g, "pagerank", form).output
        ref = networkx_pagerank(g)
        np.testing.assert_allclose(ranks, ref, rtol=0.1, atol=1e-5)
        assert abs(ranks.sum() - 1.0) < 1e-3


def test_the_output_a_run_shares_with_its_results_is_read_only():
    """Every Result of one functional run hands out the run's output array: a caller that
    edited one result's answer in place had changed every later result's, silently."""
    import pytest as _pytest

    from simulator import functional_run
    from simulator import load_graph
    from simulator import simulate

    graph = load_graph("rmat:scale=7,weights=random")
    for algorithm in ("bfs", "sssp", "cc", "pagerank"):
        run = functional_run(graph, algorithm)
        for strategy in ("mapping=thread", "driven=data"):
            result = simulate(graph, algorithm, strategy, functional=run)
            with _pytest.raises(ValueError, match="read-only"):
                result.output[0] = 1
        # nor its iterations, which every strategy replays (an edit had changed later
        # runs: probe API)
        with _pytest.raises(ValueError, match="read-only"):
            run.iterations[0].active[0] = 1


def test_a_graph_keeps_its_own_arrays_not_the_callers():
    """Graph(...) had kept the caller's arrays, made read-only but not copied: a view's base
    edited afterwards changed the graph under its checks and its content digest, and a
    functional run of the graph before passed for the graph after."""
    import numpy as np

    from simulator import Graph

    base_indices = np.array([1, 0, 2, 1], dtype=np.int32)
    weights = np.array([1.0, 1.0, 2.0, 2.0], dtype=np.float32)
    indptr = np.array([0, 1, 3, 4, 4, 4], dtype=np.int64)
    graph = Graph(indptr, base_indices[:], weights, name="g")
    base_indices[:] = [3, 4, 4, 3]
    weights[:] = 9.0
    indptr[1] = 2
    assert graph.indices.tolist() == [1, 0, 2, 1] and graph.indptr.tolist()[1] == 1
    assert graph.weights.tolist() == [1.0, 1.0, 2.0, 2.0]
    assert base_indices.flags.writeable and weights.flags.writeable  # the caller's, as given
    frozen = np.array([0, 1, 2], dtype=np.int32)
    frozen.flags.writeable = False  # read-only and owning its memory: kept without a copy
    kept = Graph(np.array([0, 1, 2, 3]), frozen, directed=True)
    assert kept.indices.base is frozen  # a view of it, not a copy
    # and for good: the flag had been set back by setflags, the graph edited under its
    # checks and content digest (probe API)
    for array in (kept.indptr, kept.indices, graph.weights):
        with pytest.raises(ValueError, match="WRITEABLE"):
            array.setflags(write=True)
    # and through pickle and deepcopy, which had given them back writeable (probe CR6)
    import copy
    import pickle

    for again in (pickle.loads(pickle.dumps(graph)), copy.deepcopy(graph)):
        for array in (again.indptr, again.indices, again.weights):
            with pytest.raises(ValueError, match="WRITEABLE"):
                array.setflags(write=True)
        assert again.content_digest == graph.content_digest


def test_sssp_sums_distances_in_float32_as_the_kernels_do():
    """The kernels keep distances as float32 (``LowerSweep<float, ...>`` in
    ``tuner/measure/kernels.cu``): on the path 0-1-2-3 of weights 2**24, 1, 1 every vertex
    past 0 is at 2**24 there, float32 having no 2**24 + 1; sums taken in float64 had given
    2**24 + 1 and 2**24 + 2 (probe SC)."""
    g = Graph.from_edges(np.array([0, 1, 2]), np.array([1, 2, 3]), 4,
                         weights=np.array([2**24, 1, 1], dtype=np.float32))
    for strategy in [*STRATEGIES, {"driven": "data"},
                     {"driven": "temporal", "switch_to_topology": 0.5}]:
        dist = simulate(g, "sssp", strategy, source=0).output
        assert dist.dtype == np.float32
        assert dist.tolist() == [0, 2**24, 2**24, 2**24]
