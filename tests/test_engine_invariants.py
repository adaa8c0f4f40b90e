"""Properties the cost model must keep on any graph, and the papers' trends it must show."""

import dataclasses

import numpy as np
import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from simulator import DEVICES
from simulator import Graph
from simulator import functional_run
from simulator import simulate
from simulator.expansion import _positions_in_runs
from simulator.mappings import MAPPINGS
from simulator.simulate import as_strategy
from simulator.timing import combined_bounds
from tests.conftest import random_graph
from tests.conftest import skewed_graph
from tests.hand_counted import after_read
from tests.hand_counted import position_steps
from tests.hand_counted import store_time
from tests.mapping_draws import registry_knobs

knobs = st.one_of(
    st.builds(dict, mapping=st.just("thread"),
              defer_threshold=st.one_of(st.none(), st.integers(0, 64))),
    st.builds(
        dict,
        mapping=st.just("vwarp"),
        w=st.sampled_from([1, 2, 4, 8, 16, 32]),
        chunk=st.sampled_from([1, 2, 3, 8, 64]),
        distribution=st.sampled_from(["static", "dynamic"]),
        defer_threshold=st.one_of(st.none(), st.integers(0, 64)),
        block_size=st.sampled_from([32, 128, 256]),
    ),
    # every registered mapping (wer, wer+, adaptive, thread with donation: tests/mapping_draws)
    registry_knobs(defer_threshold=st.one_of(st.none(), st.integers(0, 64)),
                   block_size=st.sampled_from([32, 128, 256])),
)


def walk_of(strategy) -> tuple[int, int, bool, bool]:
    """The slots a warp of 32 lanes holds, the lanes a vertex's edges (pooled: a position's)
    go over at once, whether they are pooled (WER's warp table; 0 lanes: as many as the
    position's active vertices, WER+'s 32) and whether the chunk is staged (virtual warps
    of W > 1 read its statuses and rows into shared memory first)."""
    pooled = strategy.mapping in ("wer", "wer+")
    lanes = (32 if strategy.mapping == "wer+" else 0) if pooled else strategy.lanes_per_vertex
    staged = not pooled and strategy.lanes_per_vertex > 1
    return 32 // strategy.lanes_per_vertex * strategy.vertices_per_grab, lanes, pooled, staged


def cc_sweep_edges(fr, threshold: int | None, chunk: int, strategy) -> int:
    """The edges CC's sweeps expand (every sweep in one wave: the graphs here fit the
    device's resident warps), event by event. The main kernel's vertex v sits at position
    v % ``chunk`` of warp v // ``warp_slots``; a warp's position starts when its earlier
    positions are done, each taking a round trip (its status read; none where ``staged``),
    and where active one more (its row; staged, its value) and two an edge step
    (``after_read``: the most of its vertices' degree / ``lanes``, rounded up; ``pooled``:
    the position's edges together over ``lanes`` lanes, or as many as its vertices where
    0). A vertex reads its label when its position starts; its
    edge j stores at the end of the step it goes in (j // lanes, or its place in the pooled
    table // lanes; ``store_time``), lowering where below the label then; a read sees the
    stores made by its time (in a chunk walk, through L1: ``asynchronous.l1_reads``). Then
    the vertices of degree above ``threshold``, deferred to an
    outlier kernel that reads the main kernel's stores. ``strategy``: the sweep's (adaptive:
    the W its frontier picks), as ``walk_of`` reads it."""
    labels = list(range(fr.n))
    degree = [int(fr.indptr[v + 1] - fr.indptr[v]) for v in range(fr.n)]
    mapping = MAPPINGS[strategy.mapping]
    active, edges = list(range(fr.n)), 0
    while active:
        lowered = set()
        swept = (mapping.for_iteration(strategy, np.array([degree[v] for v in active]))
                 if mapping.per_iteration else strategy)
        warp_slots, lanes, pooled, staged = walk_of(swept)
        main = [v for v in active if threshold is None or degree[v] <= threshold]
        outliers = [v for v in active if threshold is not None and degree[v] > threshold]
        groups: dict[tuple[int, int], list[int]] = {}
        for v in main:
            groups.setdefault((v // warp_slots, v % chunk), []).append(v)
        steps, width, first_edge = position_steps(groups, degree, lanes, pooled)
        start = {}
        for v in main:
            warp, position = v // warp_slots, v % chunk
            start[v] = (0 if staged else position) + sum(
                after_read(steps[(warp, q)]) for q in range(position) if (warp, q) in steps)
        stores = []  # (time, target, label)
        # a chunk walk (not WER's table) reads labels through L1: what had landed when its
        # 32-byte sector (4 of the simulator's int64 labels) was first read, and its own
        # warp's stores below the target's label before the sweep, landed by its read
        l1 = chunk > 1 and not pooled
        fill: dict[int, int] = {}
        for v in main if l1 else ():
            fill[v // 4] = min(fill.get(v // 4, start[v]), start[v])
        sweep_start, at_fill, issued = list(labels), {}, []
        for t in sorted(set(start.values())):
            for _, u, value in sorted(s for s in stores if s[0] <= t):
                if value < labels[u]:
                    labels[u] = value
                    lowered.add(u)
            stores = [s for s in stores if s[0] > t]
            at_fill.update({v: labels[v] for v in main if l1 and fill[v // 4] == t})
            for v in (v for v in main if start[v] == t):
                key = (v // warp_slots, v % chunk)
                seen = labels[v] if not l1 else min([at_fill[v]] + [
                    value for at, u, value, warp in issued
                    if u == v and warp == v // warp_slots and at <= t])
                for j, u in enumerate(fr.indices[fr.indptr[v]:fr.indptr[v + 1]].tolist()):
                    at = store_time(t, (first_edge[v] + j) // width[key])
                    stores.append((at, u, seen))
                    if seen < sweep_start[u]:
                        issued.append((at, u, seen, v // warp_slots))
        for _, u, value in sorted(stores):
            if value < labels[u]:
                labels[u] = value
                lowered.add(u)
        before = list(labels)  # the outlier kernel reads what the main kernel stored
        for v in outliers:
            for u in fr.indices[fr.indptr[v]:fr.indptr[v + 1]].tolist():
                if before[v] < labels[u]:
                    labels[u] = before[v]
                    lowered.add(u)
        edges += sum(degree[v] for v in active)
        active = sorted(lowered)
    assert labels == fr.output.tolist()
    return edges


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), knob=knobs, algorithm=st.sampled_from(["bfs", "cc"]))
def test_lane_accounting(seed, knob, algorithm):
    g = skewed_graph(200, 800, seed) if seed % 2 else random_graph(150, 400, seed)
    r = simulate(g, algorithm, knob)
    fr = functional_run(g, algorithm)
    # active lane-steps are exactly the edges expanded, under every mapping: the functional
    # run's, but where CC's outlier kernel reads what its main kernel lowered, or a chunk's
    # later vertices what its earlier ones did
    expected = fr.edges_expanded
    chunk = knob.get("chunk") or 1
    if algorithm == "cc" and (knob.get("defer_threshold") is not None or chunk > 1):
        expected = cc_sweep_edges(fr, knob.get("defer_threshold"), chunk, as_strategy(knob))
    assert r.edges_touched == expected
    assert r.u_a + r.u_r + r.me == pytest.approx(1.0)
    assert 0 < r.simd_efficiency <= 1 and r.me == pytest.approx(r.simd_efficiency)
    assert r.transactions_per_request >= 1
    assert r.time_us > 0 and r.launches >= r.iterations


# No L2: DRAM carries every sector. Cut 10^5-fold, DRAM bandwidth binds in every launch of
# these runs, so time is the rest plus the run's bytes over the bandwidth.
NO_L2 = dataclasses.replace(DEVICES["h100-datasheet"], l2_bytes=0)
CUT = 1e5


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), knob=knobs)
def test_time_grows_with_the_bytes_when_bandwidth_binds(seed, knob):
    g = random_graph(400, 3000, seed)
    fr = functional_run(g, "bfs")

    def run(cut):
        device = dataclasses.replace(NO_L2, dram_bandwidth_gbs=NO_L2.dram_bandwidth_gbs / cut)
        return simulate(g, "bfs", knob, device, functional=fr)

    fast, slow, slower = run(1), run(CUT), run(2 * CUT)
    assert slow.time_us > fast.time_us
    # halving the bandwidth again adds the time to move the run's bytes once more at the
    # slow bandwidth (GB/s = 10^3 bytes/us); Result.bytes also counts the outlier queue's
    # atomics, a sector each, which the atomics bound times: hence rel=1e-3, not exact
    bytes_us = slow.bytes / (NO_L2.dram_bandwidth_gbs / CUT * 1e3)
    assert slower.time_us - slow.time_us == pytest.approx(bytes_us, rel=1e-3)


def test_dram_bandwidth_does_not_matter_while_l2_holds_the_working_set():
    """The preset H100's 50 MB L2 holds a small graph's arrays: DRAM carries no sector."""
    g = random_graph(400, 3000, 3)
    fast = DEVICES["h100-datasheet"]
    slow = dataclasses.replace(fast, dram_bandwidth_gbs=fast.dram_bandwidth_gbs / CUT)
    knob = {"mapping": "vwarp", "w": 8}
    assert simulate(g, "bfs", knob, slow).time_us == simulate(g, "bfs", knob, fast).time_us
    # without the L2 the same cut binds
    no_l2 = dataclasses.replace(slow, l2_bytes=0)
    assert simulate(g, "bfs", knob, no_l2).time_us > 10 * simulate(g, "bfs", knob, fast).time_us


def test_full_warps_on_degree_32_graph():
    # circulant graph: vertex v joined to v +- 1..16 (mod n): every degree is exactly 32
    n = 256
    v = np.repeat(np.arange(n), 16)
    g = Graph.from_edges(v, (v + np.tile(np.arange(1, 17), n)) % n, n)
    assert set(g.degrees.tolist()) == {32}
    r = simulate(g, "bfs", {"mapping": "vwarp", "w": 32}, source=0)
    assert r.simd_efficiency == 1.0 and r.u_a == 0 and r.u_r == 0


def test_functional_run_is_reused_not_recomputed():
    g = random_graph(100, 300, 7)
    fr = functional_run(g, "bfs", 0)
    a = simulate(g, "bfs", {"mapping": "vwarp", "w": 4}, functional=fr, source=0)
    b = simulate(g, "bfs", {"mapping": "vwarp", "w": 4}, source=0)
    assert a.to_dict() == b.to_dict() and a.output is fr.output


def test_trace_has_one_entry_per_iteration():
    g = random_graph(200, 600, 8)
    r = simulate(g, "bfs", {"mapping": "vwarp", "w": 8}, trace=True)
    assert set(r.trace) == {
        "frontier", "edges", "time_us", "simd_efficiency", "form", "w", "worklist",
        "duplicates", "pushed", "atomics", "host_us", "bound",
    }
    assert all(a.size == r.iterations for a in r.trace.values())
    assert r.trace["edges"].sum() == r.edges_touched
    assert r.trace["time_us"].sum() == pytest.approx(r.time_us)
    assert r.trace["atomics"].sum() == r.atomics


@pytest.mark.parametrize("config", ["driven=data", "mapping=vwarp,w=32,driven=data",
                                    "driven=temporal,switch_to_topology=0.05",
                                    "mapping=vwarp,w=8,driven=data,push=block,dedup=true"])
def test_sssp_trace_explains_a_worklist_run(config):
    """An SSSP worklist run's trace: each launch's pushes are the next launch's worklist,
    its duplicates the entries beyond its distinct vertices, its host time the device's
    round trip, its bound one of the named bounds; the totals are the run's."""
    from simulator.costs import BOUND_NAMES
    from simulator.device import get_device

    g = random_graph(400, 3000, 3, weights=True)
    r = simulate(g, "sssp", config, device="h100-datasheet", trace=True)
    t = r.trace
    data = np.flatnonzero(t["form"] == "data")
    assert data.size
    for i in data[:-1]:
        if i + 1 < r.iterations and t["form"][i + 1] == "data":
            assert t["pushed"][i] == t["worklist"][i + 1]
    assert (t["pushed"][t["form"] == "topology"] == 0).all()
    assert t["duplicates"].sum() == r.duplicates and (t["duplicates"] <= t["worklist"]).all()
    assert t["worklist"].sum() == r.worklist_items
    round_trip = get_device("h100-datasheet").host_roundtrip_us
    assert t["host_us"] == pytest.approx(np.full(r.iterations, round_trip))
    assert set(t["bound"].tolist()) <= {*BOUND_NAMES, "host"}


def test_positions_in_runs_match_a_membership_scan():
    """The storing lanes' positions, found among runs of consecutive edge ids (some empty,
    some needles outside every run), are those a plain membership test gives."""
    rng = np.random.default_rng(1)
    for _ in range(500):
        runs = int(rng.integers(1, 40))
        lengths = rng.integers(0, 6, runs)
        starts = np.cumsum(rng.integers(0, 4, runs) + np.concatenate([[0], lengths[:-1]]))
        haystack = np.concatenate([np.arange(s, s + n) for s, n in zip(starts, lengths,
                                                                       strict=True)])
        needles = np.unique(rng.integers(0, int(starts[-1] + lengths[-1] + 3),
                                         int(rng.integers(0, 30))))
        want = np.flatnonzero(np.isin(haystack, needles))
        assert np.array_equal(_positions_in_runs(haystack.astype(np.int64), lengths, needles),
                              want)


STAR = Graph.from_edges(np.zeros(1500, dtype=np.int64), np.arange(1, 1501), 1501)
PAIR = Graph.from_edges(np.array([0]), np.array([1]), 2)


@pytest.mark.parametrize("device", ["h100", "h200"])  # bounds_norm 3 and inf
@pytest.mark.parametrize("config", [
    "driven=data", "driven=data,push=chunked", "driven=data,push=prefix",
    "driven=data,push=block", "mapping=vwarp,w=8,driven=data,push=prefix",
    "driven=temporal,switch_to_topology=0.5,push=prefix", "mapping=thread",
])
@pytest.mark.parametrize("algorithm", ["bfs", "sssp", "cc", "pagerank"])
def test_every_request_moves_a_sector_and_the_bounds_give_the_cycles(algorithm, config,
                                                                     device):
    """A memory request issues a transaction at least (a thread pushing a hub's targets one
    a step stores once a step; the scan launch's idle warps request nothing), and a run's
    cycles are its launches' bounds combined by the device's norm, which calibration refits
    from (the scan launch had added its latency alone under a 3-norm)."""
    if algorithm == "pagerank" and "temporal" in config:
        pytest.skip("PageRank has no hybrids")
    for graph in (STAR, PAIR):
        if algorithm == "sssp":
            graph = dataclasses.replace(graph, weights=np.ones(graph.indices.size))
        r = simulate(graph, algorithm, config, device)
        assert r.transactions_per_request >= 1, (graph.n, r.requests, r.transactions)
        norm = DEVICES[device].bounds_norm
        added = combined_bounds(r.bounds[:, :-1], norm).sum() + r.bounds[:, -1].sum()
        assert r.cycles == pytest.approx(added + r.host_cycles + r.extra_cycles, rel=1e-12)


@pytest.mark.parametrize("device", ["h100", "h200"])
@pytest.mark.parametrize("algorithm", ["bfs", "sssp", "cc"])
def test_unrolled_levels_pay_one_launch_overhead_a_launch(algorithm, device):
    """An unrolled launch's later levels keep their rows of bounds but no launch overhead
    (their grid barrier is extra cycles, never negative): the rows that pay an overhead are
    the launches, and the bounds still give the cycles."""
    graph = Graph.from_edges(np.arange(9), np.arange(1, 10), 10)  # a path: 9 levels
    if algorithm == "sssp":
        graph = dataclasses.replace(graph, weights=np.ones(graph.indices.size))
    r = simulate(graph, algorithm, "unroll=4", device)
    assert r.launches < r.bounds.shape[0]
    assert r.extra_cycles > 0
    assert int((r.bounds[:, -1] > 0).sum()) == r.launches
    added = combined_bounds(r.bounds[:, :-1], DEVICES[device].bounds_norm).sum()
    assert r.cycles == pytest.approx(added + r.bounds[:, -1].sum() + r.host_cycles
                                     + r.extra_cycles, rel=1e-12)


@pytest.mark.parametrize("config", ["mapping=vwarp,w=2,chunk=3,driven=data",
                                    "mapping=vwarp,w=2,chunk=5,driven=data",
                                    "mapping=vwarp,w=4,chunk=8,driven=data"])
def test_a_worklist_unit_stages_only_its_positions_with_a_slot(config):
    """A chunk wider than W staged in steps of no slot had been counted requests: 0.60-0.76
    transactions a request on a path's one-entry worklists."""
    n = 20
    path = Graph.from_edges(np.arange(n - 1), np.arange(1, n), n)
    assert simulate(path, "bfs", config, source=0).transactions_per_request >= 1
