"""Worklist SSSP and CC in waves of resident entries (simulator.asynchronous): counted on
paper on a four-vertex graph, and against the synchronous run and scipy on random ones."""

import dataclasses

import numpy as np
import pytest
from hand_counted import SERIAL
from hand_counted import after_read
from hand_counted import position_steps
from hand_counted import store_time
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components
from scipy.sparse.csgraph import dijkstra

from simulator import Graph
from simulator import Strategy
from simulator import functional_run
from simulator import simulate
from simulator.asynchronous import AsynchronousLowering
from simulator.asynchronous import ChunkWalk
from simulator.asynchronous import StaggeredChunkWalk
from simulator.asynchronous import StaggeredWaves
from simulator.asynchronous import _exclusive_running_min
from simulator.device import device_digest
from simulator.device import get_device
from simulator.driver import chunk_walk
from simulator.driver import wave_entries
from simulator.functional import edge_ids
from simulator.lanes import DonatedSteps
from simulator.load import load_graph
from simulator.timing import resident_blocks_per_sm


def chain_graph() -> Graph:
    """SSSP from 0 over 0->1 (1), 0->2 (5), 1->2 (1), 2->3 (1): edges 0..3 in that order."""
    return Graph.from_edges(np.array([0, 0, 1, 2]), np.array([1, 2, 2, 3]), 4,
                            weights=np.array([1.0, 5.0, 1.0, 1.0]), directed=True)


def test_wave_entries_are_the_resident_lanes_vertices():
    # SERIAL holds one block; 32-thread blocks make it one warp: 32 entries under the thread
    # mapping, 32 / W under virtual warps; chunks of C vertices per virtual warp multiply it
    one_warp = dict(block_size=32)
    assert wave_entries(Strategy(**one_warp), SERIAL) == 32
    assert wave_entries(Strategy(mapping="vwarp", w=32, **one_warp), SERIAL) == 1
    assert wave_entries(Strategy(mapping="vwarp", w=8, chunk=4, **one_warp), SERIAL) == 16
    # 256-thread blocks: SERIAL's one block slot holds 8 warps
    assert wave_entries(Strategy(mapping="vwarp", w=32), SERIAL) == 8


@pytest.mark.parametrize("mapping, worklists", [
    # one wave holds [1, 2]: both read the distances before the launch (1, 5); 1->2 lowers 2
    # to 2 and 2->3 sets 3 to 6, pushing [2, 3]; then 2 (read as 2) lowers 3 to 3: [3]
    ("mapping=thread", [1, 2, 2, 1]),
    # a wave holds one entry: 1 lowers 2 to 2 first, then 2 reads 2 and sets 3 to 3; the
    # third launch's 2->3 finds 3 already at 3, so it pushes nothing
    ("mapping=vwarp,w=32", [1, 2, 2]),
])
def test_later_waves_read_what_earlier_ones_lowered(mapping, worklists):
    graph = chain_graph()
    run = simulate(graph, "sssp", f"{mapping},driven=data,block_size=32", SERIAL, source=0,
                   trace=True)
    assert run.trace["worklist"].tolist() == worklists
    assert run.worklist_items == sum(worklists)
    assert run.output.tolist() == [0.0, 1.0, 2.0, 3.0]


def test_stores_of_a_launch_in_waves():
    fr = functional_run(chain_graph(), "sssp", source=0)
    # the second launch's worklist [1, 2]: edges 2 (1->2) and 3 (2->3), positions 0 and 1
    sync = AsynchronousLowering(fr)
    sync.launch(np.array([0]), 32)
    stores = sync.launch(np.array([1, 2]), 32)
    assert stores.lanes.tolist() == [0, 1]
    assert stores.values.tolist() == [2.0, 6.0]
    waves = AsynchronousLowering(fr)
    waves.launch(np.array([0]), 1)
    stores = waves.launch(np.array([1, 2]), 1)
    assert stores.lanes.tolist() == [0, 1]
    assert stores.values.tolist() == [2.0, 3.0]
    assert waves.values.tolist() == [0.0, 1.0, 2.0, 3.0]


def test_only_the_first_copy_in_a_wave_stores():
    fr = functional_run(chain_graph(), "sssp", source=0)
    run = AsynchronousLowering(fr)
    run.launch(np.array([0]), 32)
    # [2, 1, 2]: the copies of 2 read 5 alike; the first stores 2->3 (position 0), the
    # second (position 2) finds 3 at 6 already; 1->2 (position 1) lowers 2 to 2
    stores = run.launch(np.array([2, 1, 2]), 32)
    assert stores.lanes.tolist() == [0, 1]
    assert stores.values.tolist() == [6.0, 2.0]
    # in waves of one entry the second copy of 2 reads 2 and lowers 3 again, to 3
    run = AsynchronousLowering(fr)
    run.launch(np.array([0]), 1)
    stores = run.launch(np.array([2, 1, 2]), 1)
    assert stores.lanes.tolist() == [0, 1, 2]
    assert stores.values.tolist() == [6.0, 2.0, 3.0]


def test_deferred_entries_run_after_the_main_kernel():
    fr = functional_run(chain_graph(), "sssp", source=0)
    run = AsynchronousLowering(fr)
    run.launch(np.array([0]), 32)
    # deferring degree above 0 defers both 1 and 2: the main kernel stores nothing, the
    # outlier kernel after it stores 1->2 (edge 2) and 2->3 (edge 3)
    stores = run.launch(np.array([1, 2]), 32, defer_threshold=0)
    assert stores.lanes.size == 0
    assert stores.outlier_writes.tolist() == [2, 3]


@pytest.mark.parametrize("spec", ["rmat:scale=9,ef=8,weights=random,seed=5",
                                  "random:n=700,deg=4,weights=random,seed=2",
                                  "road:rows=20,weights=random,seed=3"])
@pytest.mark.parametrize("wave", [1, 7, 64, 10**9])
def test_waves_reach_the_reference_answers(spec, wave):
    graph = load_graph(spec)
    matrix = csr_matrix((graph.weights, graph.indices, graph.indptr), shape=(graph.n,) * 2)
    for algorithm in ("sssp", "cc"):
        fr = functional_run(graph, algorithm)
        run = AsynchronousLowering(fr)
        worklist = fr.iterations[0].active.astype(np.int64)
        launches = 0
        while worklist.size:
            stores = run.launch(worklist, wave)
            # the next worklist: every target a store lowered (the pushes, without duplicates)
            targets = fr.indices[edge_ids(fr.indptr, worklist)[stores.lanes]]
            worklist = np.unique(targets).astype(np.int64)
            launches += 1
        if algorithm == "sssp":
            reference = dijkstra(matrix, indices=fr.source)
            assert np.allclose(run.values, reference)
            assert np.array_equal(run.values, fr.output)
        else:
            _, labels = connected_components(matrix, directed=True, connection="weak")
            assert np.array_equal(run.values, fr.output)
            assert len(np.unique(run.values)) == labels.max() + 1
        if wave >= graph.n:  # one wave a launch: the synchronous run's iterations
            assert launches == len(fr.iterations)



@pytest.mark.parametrize("mapping, frontiers", [
    # one wave holds every vertex: the synchronous rounds. {0} lowers 1 and 2 (to 5); {1, 2}
    # read 1 and 5: 1->2 lowers 2 to 2, 2->3 sets 3 to 6; {2, 3}: 2->3 lowers 3 to 3; {3}
    ("mapping=thread", [1, 2, 2, 1]),
    # a wave a vertex: in the second sweep 2 reads the 2 that 1 has just stored and sets 3 to
    # 3 at once, so the third sweep ({2, 3}) lowers nothing and is the last
    ("mapping=vwarp,w=32", [1, 2, 2]),
])
def test_sweeps_read_what_their_earlier_waves_lowered(mapping, frontiers):
    """SSSP's sweeps run as the device runs them: a vertex reads the distances the waves of
    resident warps before it in the same sweep lowered (SERIAL holds one 32-thread block)."""
    run = simulate(chain_graph(), "sssp", f"{mapping},block_size=32", SERIAL, source=0,
                   trace=True)
    assert run.trace["frontier"].tolist() == frontiers
    assert run.iterations == len(frontiers)
    assert run.output.tolist() == [0.0, 1.0, 2.0, 3.0]


def test_a_sweeps_outlier_kernel_reads_what_its_main_kernel_lowered():
    """Deferred vertices are expanded by the outlier kernel after the main kernel, reading
    what it stored. Sweep 2 of the chain, {1, 2}, deferring degree above 0: the main kernel
    expands nothing and the outlier kernel relaxes 1 and 2 together (2 reads its 5: 3 gets
    6). Deferring nothing in waves of one vertex, 2 reads the 2 that 1 stored: 3 gets 3."""
    fr = functional_run(chain_graph(), "sssp", source=0)
    deferred = AsynchronousLowering(fr)
    deferred.launch(np.array([0]), 32, slots=np.array([0]))
    stores = deferred.launch(np.array([1, 2]), 32, defer_threshold=0, slots=np.array([1, 2]))
    assert stores.lanes.size == 0 and stores.outlier_writes.tolist() == [2, 3]
    assert deferred.values.tolist() == [0.0, 1.0, 2.0, 6.0]
    assert stores.lowered(fr.indices, fr.n).tolist() == [2, 3]
    waves = AsynchronousLowering(fr)
    waves.launch(np.array([0]), 1, slots=np.array([0]))
    stores = waves.launch(np.array([1, 2]), 1, slots=np.array([1, 2]))
    assert stores.lanes.tolist() == [0, 1] and stores.writes.tolist() == [2, 3]
    assert waves.values.tolist() == [0.0, 1.0, 2.0, 3.0]


def sweeps_in_waves(fr, slots_per_wave: int) -> tuple[np.ndarray, int]:
    """Sweeps as the driver runs them for SSSP and CC: each in waves of consecutive vertex
    slots, the next one over the vertices it lowered; the final values and the sweeps."""
    run = AsynchronousLowering(fr)
    active = fr.iterations[0].active.astype(np.int64)
    sweeps = 0
    while active.size:
        active = run.launch(active, slots_per_wave, slots=active).lowered(fr.indices, fr.n)
        sweeps += 1
    return run.values, sweeps


@pytest.mark.parametrize("spec", ["rmat:scale=9,ef=8,weights=random,seed=5",
                                  "random:n=700,deg=4,weights=random,seed=2",
                                  "road:rows=20,weights=random,seed=3"])
def test_asynchronous_sweeps_reach_the_reference_answers(spec):
    """Sweeps in waves of 1, 7, 64 slots or all of them reach scipy's distances and
    components, in no more sweeps than the synchronous run (all in one wave: as many), and the
    simulator's launches are these sweeps: with a wave a vertex (SERIAL's one 32-thread block
    under vwarp W = 32) the rmat graph's SSSP takes fewer."""
    graph = load_graph(spec)
    matrix = csr_matrix((graph.weights, graph.indices, graph.indptr), shape=(graph.n,) * 2)
    for algorithm in ("sssp", "cc"):
        fr = functional_run(graph, algorithm)
        for wave in (1, 7, 64, graph.n):
            values, sweeps = sweeps_in_waves(fr, wave)
            if algorithm == "sssp":
                assert np.allclose(values, dijkstra(matrix, indices=fr.source))
            else:
                _, labels = connected_components(matrix, directed=True, connection="weak")
                assert np.array_equal(values, fr.output)
                assert len(np.unique(values)) == labels.max() + 1
            assert sweeps <= len(fr.iterations)
            if wave == graph.n:
                assert sweeps == len(fr.iterations)
        one_a_wave = simulate(graph, algorithm, "mapping=vwarp,w=32,block_size=32", SERIAL,
                              functional=fr)
        assert one_a_wave.iterations == sweeps_in_waves(fr, 1)[1]
    if spec.startswith("rmat"):
        fr = functional_run(graph, "sssp")
        assert sweeps_in_waves(fr, 1)[1] < len(fr.iterations)


@pytest.mark.parametrize("mapping, forms", [
    # one wave holds every vertex: the synchronous rounds; {0} as a worklist pushes [1, 2]
    # (2 > 0.3 x 4: switch to sweeps), the sweep of {2, 3} lowers only 3: back to a worklist
    ("mapping=thread", ["data", "topology", "topology", "data"]),
    # a wave a vertex: {0} pushes [1, 2] (2 > 0.3 x 4: switch to sweeps); the sweep of
    # {1, 2} lowers 2 to 2 and 2 then sets 3 to 3; the sweep of {2, 3} lowers nothing
    ("mapping=vwarp,w=32", ["data", "topology", "topology"]),
])
def test_the_temporal_hybrids_launches_run_asynchronously(mapping, forms):
    run = simulate(chain_graph(), "sssp",
                   f"{mapping},block_size=32,driven=temporal,switch_to_topology=0.3",
                   SERIAL, source=0, trace=True)
    assert run.trace["form"].tolist() == forms
    assert run.trace["frontier"].tolist() == [1, 2, 2, 1][:len(forms)]


@pytest.mark.parametrize("algorithm", ["sssp", "cc"])
def test_the_temporal_hybrid_in_one_form_is_that_form(algorithm):
    """Never switching, the hybrid's asynchronous launches are those of ``driven=data`` (to
    the cycle) or of ``topology`` (as many sweeps, each also counting what it activates), in
    waves of a few vertices (SERIAL) on a graph whose runs need many waves."""
    graph = load_graph("rmat:scale=9,ef=8,weights=random,seed=5")
    fr = functional_run(graph, algorithm)
    base = "mapping=vwarp,w=8,block_size=32"
    data = simulate(graph, algorithm, f"{base},driven=data", SERIAL, functional=fr)
    never = simulate(graph, algorithm, f"{base},driven=temporal,switch_to_topology=1000",
                     SERIAL, functional=fr, trace=True)
    assert set(never.trace["form"].tolist()) == {"data"}
    assert never.time_us == data.time_us and never.iterations == data.iterations
    sweeps = simulate(graph, algorithm, f"{base},driven=temporal,switch_to_topology=1e-9,"
                      "switch_to_data=0", SERIAL, functional=fr, trace=True)
    topology = simulate(graph, algorithm, base, SERIAL, functional=fr)
    assert set(sweeps.trace["form"].tolist()) == {"topology"}
    assert sweeps.iterations == topology.iterations < len(fr.iterations)
    assert sweeps.edges_touched == topology.edges_touched


def two_paths_to_t() -> Graph:
    """SSSP from 0 over 0->1 (1), 0->2 (1), 1->4 (5), 2->3 (1), 2->4 (7): vertex 2's edge to
    4 is its second, one step after vertex 1's."""
    return Graph.from_edges(np.array([0, 0, 1, 2, 2]), np.array([1, 2, 4, 3, 4]), 5,
                            weights=np.array([1.0, 1.0, 5.0, 1.0, 7.0]), directed=True)


@pytest.mark.parametrize("lanes_per_vertex, stores", [
    # the second sweep expands 1 and 2 (both at distance 1): lanes 1->4 (6, step 0), 2->3
    # (2, step 0), 2->4 (8, step 1); thread-mapped, 2->4 reads 4 after 1->4 stored 6 and
    # finds nothing to lower; with W = 2 vertex 2's edges go in one step, and all three store
    (None, [0, 1, 2]), (1, [0, 1]), (2, [0, 1, 2]),
])
def test_a_sweeps_later_steps_see_its_earlier_stores(lanes_per_vertex, stores):
    run = AsynchronousLowering(functional_run(two_paths_to_t(), "sssp", 0))
    run.launch(np.array([0]), 1000, slots=np.array([0]), lanes_per_vertex=lanes_per_vertex)
    second = run.launch(np.array([1, 2]), 1000, slots=np.array([1, 2]),
                        lanes_per_vertex=lanes_per_vertex)
    assert second.lanes.tolist() == stores
    # the same vertices are lowered to the same distances either way
    assert second.lowered(run.indices, 5).tolist() == [3, 4]
    assert run.values.tolist() == [0.0, 1.0, 1.0, 2.0, 6.0]


@pytest.mark.parametrize("dtype", [float, np.int64])
@pytest.mark.parametrize("table", [True, False])
def test_later_steps_see_earlier_by_definition(monkeypatch, table, dtype):
    """By definition, with the lanes of targets stored to once set aside through a table
    of each target's lanes, and with every lane sorted; for SSSP's distances (floats) and
    CC's labels (integers, ranked without a sort)."""
    from simulator import asynchronous
    from simulator.asynchronous import _lowered_and_shared
    from simulator.asynchronous import later_steps_see_earlier

    if not table:
        monkeypatch.setattr(asynchronous, "_SHARED_TABLE_PER_LANE", float("inf"))
    rng = np.random.default_rng(0)
    for _ in range(400):
        degree = rng.integers(1, 7, rng.integers(1, 6))
        w = int(rng.choice([1, 2, 4]))
        lanes = np.sort(rng.choice(int(degree.sum()), rng.integers(1, degree.sum() + 1),
                                   replace=False))
        # few targets (most stored to in several steps), more (most in one), or ids too
        # many for a table of each target's lanes (sorted, every lane)
        targets = rng.integers(0, int(rng.choice([3, 12, 10**6])), lanes.size)
        values = (rng.integers(0, 5, lanes.size) + int(rng.choice([0, 10**6]))).astype(dtype)
        ends = np.cumsum(degree)
        vertex = np.searchsorted(ends, lanes, side="right")
        step = (lanes - (ends - degree)[vertex]) // w
        # a lane stores unless an earlier step stored no more to the same target
        want = [not any(targets[j] == targets[i] and step[j] < step[i]
                        and values[j] <= values[i] for j in range(lanes.size))
                for i in range(lanes.size)]
        got = later_steps_see_earlier(step, targets, values)
        assert got.tolist() == want
        # the sweeps' way: the lanes of shared targets found by a sort, given
        _, twice = _lowered_and_shared(targets)
        shared = np.flatnonzero(np.isin(targets, twice))
        assert later_steps_see_earlier(step, targets, values, shared).tolist() == want


def merged_and_wave_by_wave_sweeps(monkeypatch, fr, slots_per_wave: int,
                                   lanes_per_vertex: int | None, defer: int | None,
                                   donated=None):
    """The stores of every sweep (the next one over the vertices it lowered) as the
    merged waves give them and as wave by wave does, launched from the same values, and how
    many sweeps had an earlier wave lower a vertex a later one expands."""
    from simulator import asynchronous

    merged, reference = AsynchronousLowering(fr), AsynchronousLowering(fr)
    interacted = []
    interactions = AsynchronousLowering._interactions

    def spy(self, *args):
        interacted.append(interactions(self, *args))
        return interacted[-1]

    monkeypatch.setattr(AsynchronousLowering, "_interactions", spy)
    active = fr.iterations[0].active.astype(np.int64)
    pairs = []
    while active.size:
        reference.values[:] = merged.values
        monkeypatch.setattr(asynchronous, "_MERGED_SWEEPS", False)
        want = reference.launch(active, slots_per_wave, defer, slots=active,
                                lanes_per_vertex=lanes_per_vertex, donated=donated)
        monkeypatch.setattr(asynchronous, "_MERGED_SWEEPS", True)
        got = merged.launch(active, slots_per_wave, defer, slots=active,
                            lanes_per_vertex=lanes_per_vertex, donated=donated)
        pairs.append((got, want, merged.values.copy(), reference.values.copy()))
        active = got.lowered(fr.indices, fr.n)
    return pairs, sum(interacted)


@pytest.mark.parametrize("algorithm", ["sssp", "cc"])
@pytest.mark.parametrize("threshold, defer", [(0, None), (3, None), (1, 12)])
def test_merged_donating_sweep_waves_store_as_wave_by_wave(monkeypatch, algorithm, threshold,
                                                           defer):
    """Donating sweeps' waves, relaxed at once or wave by wave (blocks of 64 slots, waves of
    two blocks), store the same lanes and leave the same values."""
    fr = functional_run(load_graph("rmat:scale=9,ef=8,weights=random,seed=5"), algorithm)
    donated = DonatedSteps(64, threshold, 32, fr.n)
    pairs, _ = merged_and_wave_by_wave_sweeps(monkeypatch, fr, 128, None, defer, donated)
    assert len(pairs) > 2
    for got, want, got_values, want_values in pairs:
        for name in ("lanes", "values", "writes", "outlier_writes"):
            assert np.array_equal(getattr(got, name), getattr(want, name)), name
        assert np.array_equal(got_values, want_values)


def test_donated_edges_step_after_their_drainers_own_steps():
    """Blocks of 64 threads (2 warps) over 100 slots, threshold 0. Block 0 holds slots 0 (10
    edges), 1 and 5 (1 each): cap ceil(12 / 64) = 1, so slot 0 keeps its first edge (step
    0) and gives 9, drained by threads 0-8 (warp 0) in round 0, after warp 0's one own step:
    step 1. Block 1 (slots 64-99: 2 warps) holds 64 (3 edges) and 70 (1): cap 1, slot 64
    gives 2, drained by threads 0-1 of its first warp at step 1. With a threshold above every
    degree nothing is given: edge i of a slot goes at step i, as the thread mapping's."""
    slots, degree = np.array([0, 1, 5, 64, 70]), np.array([10, 1, 1, 3, 1])
    owner, local = every_edge(degree)
    assert DonatedSteps(64, 0, 32, 100).steps(slots, degree, owner, local).tolist() == [
        0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 1, 1, 0]
    assert DonatedSteps(64, 10, 32, 100).steps(slots, degree, owner, local).tolist() == [
        *range(10), 0, 0, 0, 1, 2, 0]


def every_edge(degree: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each edge of slots of ``degree`` edges: its slot's index and its place in its list."""
    owner = np.repeat(np.arange(degree.size), degree)
    return owner, np.arange(owner.size) - np.repeat(np.cumsum(degree) - degree, degree)


def test_donated_steps_are_the_timing_layouts():
    """The steps the waves read by are those of the layout the launch is timed with
    (``donating_lanes``, each edge's global step less its warp's first), for every edge or any
    subset, on random blocks: partial last blocks, slots without edges, hubs, warps of 16-64."""
    from simulator.lanes import donating_lanes

    rng = np.random.default_rng(1)
    for _ in range(300):
        ws = int(rng.choice([16, 32, 64]))
        size, n = ws * int(rng.integers(1, 5)), int(rng.integers(1, 600))
        slots = np.sort(rng.choice(n, int(rng.integers(1, n + 1)), replace=False))
        degree = rng.integers(0, 40, slots.size) * (rng.random(slots.size) < 0.9)
        degree[rng.random(slots.size) < 0.05] = int(rng.integers(50, 300))
        if not degree.any():
            continue
        donated = DonatedSteps(size, int(rng.integers(0, 6)), ws, n)
        owner, local = every_edge(degree)
        units = -(-n // ws)
        lanes, _ = donating_lanes(slots, degree, local, np.arange(units) // (size // ws), size,
                                  donated.threshold, ws, False)
        first = np.cumsum(lanes.steps) - lanes.steps
        want = lanes.group - first[first.searchsorted(lanes.group, "right") - 1]
        assert np.array_equal(donated.steps(slots, degree, owner, local), want)
        pick = np.flatnonzero(rng.random(owner.size) < 0.3)
        assert np.array_equal(donated.steps(slots, degree, owner[pick], local[pick]), want[pick])


@pytest.mark.parametrize("spec", ["rmat:scale=10,seed=1,weights=random",
                                  "road:rows=24,cols=24,seed=1,weights=random"])
@pytest.mark.parametrize("algorithm", ["sssp", "cc"])
@pytest.mark.parametrize("form", ["", ",defer_threshold=20", ",driven=spatial,partition=8",
                                  ",driven=temporal,switch_to_topology=0.05"])
def test_a_donation_no_thread_takes_is_the_thread_mapping(spec, algorithm, form):
    """A threshold above every degree: no block has a donor, and "elsewhere a sweep runs as
    it would without donation" (probe META: every sweep's lanes had all read before any
    stored, doubling SSSP's and CC's atomics)."""
    graph = load_graph(spec)
    fr = functional_run(graph, algorithm)
    plain = simulate(graph, algorithm, f"mapping=thread{form}", "h100", functional=fr)
    idle = simulate(graph, algorithm, f"mapping=thread,donate_threshold=100000{form}", "h100",
                    functional=fr)
    assert idle.to_dict() == plain.to_dict()


@pytest.mark.parametrize("spec", ["rmat:scale=9,ef=8,weights=random,seed=5",
                                  "random:n=700,deg=4,weights=random,seed=2",
                                  "road:rows=20,weights=random,seed=3"])
@pytest.mark.parametrize("algorithm", ["sssp", "cc"])
@pytest.mark.parametrize("slots_per_wave, lanes_per_vertex, defer", [
    (1, 32, None), (3, 1, None), (7, None, None), (7, 2, None), (64, 1, None),
    (5, 1, 6), (10**9, 1, None)])
@pytest.mark.parametrize("merged_edges", [1 << 18, 40])
def test_merged_sweep_waves_store_as_wave_by_wave(monkeypatch, spec, algorithm,
                                                  slots_per_wave, lanes_per_vertex, defer,
                                                  merged_edges):
    """A sweep's waves relaxed at once (``_sweep_waves``), or in runs of a few waves each
    (about 40 edges a run), store the same lanes, values and edges, and leave the same
    values, as wave by wave, on graphs where earlier waves lower vertices later ones expand
    (the merged run then works their lanes out again)."""
    from simulator import asynchronous

    monkeypatch.setattr(asynchronous, "_MERGED_EDGES", merged_edges)
    fr = functional_run(load_graph(spec), algorithm)
    pairs, interacted = merged_and_wave_by_wave_sweeps(monkeypatch, fr, slots_per_wave,
                                                       lanes_per_vertex, defer)
    for got, want, got_values, want_values in pairs:
        for name in ("lanes", "values", "writes", "outlier_writes"):
            assert np.array_equal(getattr(got, name), getattr(want, name)), name
            assert getattr(got, name).dtype == getattr(want, name).dtype, name
        lowered = got.lowered(fr.indices, fr.n)  # known on the way, where none is deferred
        assert defer is not None or got.known_lowered is not None
        assert np.array_equal(lowered, want.lowered(fr.indices, fr.n))
        assert lowered.dtype == np.int64
        assert np.array_equal(got_values, want_values)
    # many waves in one run (not on the small road grid): some lower what later ones expand
    if slots_per_wave < 10 and merged_edges > 1000 and not spec.startswith("road"):
        assert interacted > 0



@pytest.mark.parametrize("mapping, frontiers", [
    # partitions of one vertex list what the last launch lowered, as a sweep's flags do; one
    # wave holds every slot: the synchronous rounds
    ("mapping=thread", [1, 2, 2, 1]),
    # a wave a slot: 2 reads the 2 that 1 has just stored and sets 3 to 3 at once
    ("mapping=vwarp,w=32", [1, 2, 2]),
])
def test_the_spatial_hybrids_launches_run_asynchronously(mapping, frontiers):
    run = simulate(chain_graph(), "sssp", f"{mapping},block_size=32,driven=spatial,partition=1",
                   SERIAL, source=0, trace=True)
    assert run.trace["frontier"].tolist() == frontiers
    assert run.iterations == len(frontiers)


@pytest.mark.parametrize("algorithm", ["sssp", "cc"])
def test_a_spatial_hybrid_of_one_partition_is_the_sweep(algorithm):
    """One partition holding every vertex lists every slot, as a sweep does: its launches
    read what earlier waves lowered as the sweep's do, in waves of a few vertices (SERIAL),
    so they are as many as the sweep's, fewer than the synchronous run's, over the same
    edges."""
    graph = load_graph("rmat:scale=9,ef=8,weights=random,seed=5")
    fr = functional_run(graph, algorithm)
    base = "mapping=vwarp,w=8,block_size=32"
    sweep = simulate(graph, algorithm, base, SERIAL, functional=fr)
    spatial = simulate(graph, algorithm, f"{base},driven=spatial,partition={graph.n}", SERIAL,
                       functional=fr)
    assert spatial.iterations == sweep.iterations < len(fr.iterations)
    assert spatial.edges_touched == sweep.edges_touched


@pytest.mark.parametrize("mapping, frontiers", [
    # one wave holds every slot, each virtual warp one vertex: the synchronous rounds
    ("mapping=vwarp,w=2", [1, 2, 2, 1]),
    # a virtual warp (WER: a thread) walks vertices 0..3 one after another: in the second
    # sweep 1 (position 1) lowers 2 to 2 before 2 (position 2) reads it and sets 3 to 3, so
    # the third sweep ({2, 3}) lowers nothing and is the last
    ("mapping=vwarp,w=2,chunk=4", [1, 2, 2]),
    ("mapping=wer,chunk=4", [1, 2, 2]),
    ("mapping=wer+,chunk=4", [1, 2, 2]),
])
def test_a_chunks_later_positions_read_what_its_earlier_ones_lowered(mapping, frontiers):
    run = simulate(chain_graph(), "sssp", f"{mapping},block_size=32", SERIAL, source=0,
                   trace=True)
    assert run.trace["frontier"].tolist() == frontiers


def two_slot_walk_sweeps(graph: Graph, walk: ChunkWalk | None = None, cached: bool = False
                         ) -> tuple[list[int], list[int]]:
    """CC's sweeps over a graph in one wave, each warp one thread walking 2 slots (or
    ``walk``), reading values through L1 where ``cached`` (8 labels a sector): the frontier
    of each sweep and the labels at the end."""
    walk = walk or ChunkWalk(chunk=2, slots_per_warp=2, lanes=1)
    fr = functional_run(graph, "cc")
    run = AsynchronousLowering(fr, cached_value_reads=cached, sector_bytes=32)
    active, frontiers = np.arange(graph.n), []
    while active.size:
        frontiers.append(active.size)
        active = run.launch(active, graph.n, slots=active, walk=walk).lowered(fr.indices, fr.n)
    return frontiers, run.values.tolist()


def test_a_position_reads_the_stores_made_before_it_starts():
    """CC on edges 0-2, 0-4, 0-5, 3-5, one wave of warps of one thread walking 2 slots (A
    holds 0, 1; B 2, 3; C 4, 5), times in round trips. Sweep 1: 0, 2, 4 read at 0; 0's
    lanes store to 2, 4, 5 at 3, 5, 7 (its row read, then two round trips an edge). B and C
    finish their one-edge vertices at 4 (status, row, id, atomic), when 3 and 5 start: 5
    still reads 5 (0's store to it lands at 7), so nothing lowers 3; A's 1 starts at 8.
    Lowered {2, 4, 5}. Sweep 2: 5 lowers 3. Sweep 3: 3 lowers nothing. With the positions
    in lockstep across warps, 5 would read 0 at position 1 and lower 3 in sweep 1: sweeps
    of [6, 4]."""
    graph = Graph.from_edges(np.array([0, 0, 0, 3]), np.array([2, 4, 5, 5]), 6)
    frontiers, labels = two_slot_walk_sweeps(graph)
    assert frontiers == [6, 3, 1]
    assert labels == [0, 1, 0, 0, 0, 0]


def test_a_store_lands_two_round_trips_an_edge_step_after_its_read():
    """CC on edges 0-3, 3-5, warps of one thread walking 2 slots (A: 0, 1; B: 2, 3; C: 4,
    5; 1, 2, 4 isolated). Sweep 1: 0 reads at 0 and its store to 3 lands at 3 (row read,
    neighbour id, atomic); B's 2 has no edge, so its position ends at 2 (status, row), when
    3 reads 3, not 0: 3 lowers 5 to 3, and 0 lowers 3. Sweep 2 (3 and 5, each at position 1
    after an idle position: read at 1): 3 lowers 5 to 0. Sweep 3: nothing. Were a store one
    step after its read and an active position one step plus its edge steps, 3 would read 0
    at 1 and lower 5 to 0 in sweep 1: sweeps of [6, 2]."""
    graph = Graph.from_edges(np.array([0, 3]), np.array([3, 5]), 6)
    frontiers, labels = two_slot_walk_sweeps(graph)
    assert frontiers == [6, 2, 1]
    assert labels == [0, 1, 2, 0, 4, 0]


def test_a_read_through_l1_sees_other_warps_stores_landed_by_its_sectors_fill():
    """CC on edges 0-3, 2-4, 3-5, warps of one thread walking 2 slots (A: 0, 1; B: 2, 3; C:
    4, 5), one sector (8 labels). Sweep 1: 0, 2, 4 read at 0, filling the sector; 0's store
    to 3 lands at 3 (row, id, atomic), 2's to 4 at 3; B's 3 reads at 4 (2's position: status,
    row, one edge). From L2, 3 reads 0 and lowers 5 to 0: sweep 2 ({3, 4, 5}) lowers
    nothing, sweeps [6, 3]. Through L1, 3 reads its copy of time 0, 3, and lowers 5 to 3;
    sweep 2 (sector filled by 4 at 0, after sweep 1's stores) 3 reads 0 and lowers 5 to 0
    (5 reads 3 at 4: 3 is warp B's, not its own); sweep 3 ({5}) nothing: [6, 3, 1]."""
    graph = Graph.from_edges(np.array([0, 2, 3]), np.array([3, 4, 5]), 6)
    assert two_slot_walk_sweeps(graph) == ([6, 3], [0, 1, 2, 0, 2, 0])
    assert two_slot_walk_sweeps(graph, cached=True) == ([6, 3, 1], [0, 1, 2, 0, 2, 0])


def test_a_read_through_l1_sees_its_own_warps_stores_as_they_land():
    """CC on edges 2-3, 2-4, 3-5 (warps as above): 2 reads at 0, its stores land at 3 (to
    3) and 5 (to 4); 3 reads at 6 (2's position: status, row, two edge steps). The store to
    3 is its own warp's (the SM's atomic drops the stale copy): through L1 too, 3 reads 2
    and lowers 5 to 2 in sweep 1, and sweep 2 ({3, 4, 5}) lowers nothing."""
    graph = Graph.from_edges(np.array([2, 2, 3]), np.array([3, 4, 5]), 6)
    for cached in (False, True):
        assert two_slot_walk_sweeps(graph, cached=cached) == ([6, 3], [0, 1, 2, 2, 2, 2])


def test_a_staged_walk_reads_no_status_a_position():
    """CC on edges 0-2, 0-7, 7-8, warps of one thread walking 4 slots (A: 0-3, B: 4-7, C:
    8-11; 1, 3-6, 9-11 isolated). Sweep 1: 0 reads at 0, stores to 2 at 3 and to 7 at 5.
    Staged (the chunk's statuses and rows read before the walk), B's isolated 4, 5, 6 take a
    round trip each (their values), so 7 reads 7 at 3: it lowers 8 to 7, and 0 lowers 7.
    Sweep 2: 7 lowers 8 to 0; sweep 3: nothing. Unstaged, each of them also reads its
    status (two each): 7 reads 0 at 6 and lowers 8 to 0 in sweep 1, sweeps of [12, 3]."""
    graph = Graph.from_edges(np.array([0, 0, 7]), np.array([2, 7, 8]), 12)
    walk = ChunkWalk(chunk=4, slots_per_warp=4, lanes=1, staged=True)
    frontiers, labels = two_slot_walk_sweeps(graph, walk)
    assert frontiers == [12, 3, 1]
    assert labels == [0, 1, 0, 3, 4, 5, 6, 0, 0, 9, 10, 11]
    unstaged, _ = two_slot_walk_sweeps(graph, ChunkWalk(chunk=4, slots_per_warp=4, lanes=1))
    assert unstaged == [12, 3]


def chunked_sweeps(fr, slots_per_wave: int, chunk: int) -> tuple[np.ndarray, int]:
    """``sweeps_in_waves`` with each virtual warp walking ``chunk`` consecutive slots."""
    run = AsynchronousLowering(fr)
    active = fr.iterations[0].active.astype(np.int64)
    sweeps = 0
    while active.size:
        walk = ChunkWalk(chunk, 4 * chunk, 1) if chunk > 1 else None  # warps of 4 threads
        active = run.launch(active, slots_per_wave, slots=active,
                            walk=walk).lowered(fr.indices, fr.n)
        sweeps += 1
    return run.values, sweeps


@pytest.mark.parametrize("spec", ["rmat:scale=9,ef=8,weights=random,seed=5",
                                  "road:rows=20,weights=random,seed=3"])
def test_chunked_sweeps_reach_the_reference_answers(spec):
    """Sweeps whose chunks go position by position reach scipy's distances and components,
    in no more sweeps than with every slot of a wave reading at once (chunks of 1), and a
    road's labels in fewer."""
    graph = load_graph(spec)
    matrix = csr_matrix((graph.weights, graph.indices, graph.indptr), shape=(graph.n,) * 2)
    for algorithm in ("sssp", "cc"):
        fr = functional_run(graph, algorithm)
        for wave, chunk in ((64, 4), (64, 16), (graph.n, 8)):
            values, sweeps = chunked_sweeps(fr, wave, chunk)
            if algorithm == "sssp":
                assert np.allclose(values, dijkstra(matrix, indices=fr.source))
            else:
                assert np.array_equal(values, fr.output)
            assert sweeps <= chunked_sweeps(fr, wave, 1)[1]
            if algorithm == "cc" and spec.startswith("road"):
                assert sweeps < chunked_sweeps(fr, wave, 1)[1]


def timed_sweep_by_events(fr, values: list, active: list[int], wave_slots: int,
                          walk: ChunkWalk, blocks: tuple[int, int] | None = None,
                          per_sector: int | None = None,
                          slot_of: dict[int, int] | None = None
                          ) -> list[tuple[int, float, int]]:
    """One timed chunked sweep over ``active`` (each its own slot), event by event in plain
    Python: its storing lanes as (position in the sweep's edge order, value, edge), and
    ``values`` lowered in place. Warp v // slots_per_warp, position v % chunk; a position
    takes one step plus its edges' (the most of its vertices' ceil(degree / lanes), or with
    ``pooled`` its vertices' edges together over ``lanes`` lanes, or one a vertex where 0);
    a vertex reads its value when its position starts, edge j stores one step after the
    step it goes in; the stores timed at or before a read land before it, each lowering
    where below what its target held before that batch landed. ``blocks`` (slots a block,
    resident blocks; ``wave_slots`` then past every slot): the blocks start staggered, on
    one timeline: a block of the first wave at 0, each later one, in order, at the next of
    the finishing times of the blocks one wave before it (a block lives its warps' longest
    walk: the staged statuses' round trip or a status read a position, then its active
    positions'). ``per_sector`` (values a sector): a vertex reads its value through L1 (not
    under a pooled walk): what had landed when the first active vertex of its sector read,
    and what its own warp's lanes, below its value before the sweep, stored to it since,
    landing by its read. ``slot_of`` (a spatial hybrid's listed partitions): each vertex's
    slot, which places it in its wave, warp, position and block; its value's sector is the
    vertex's own (memory's), not its slot's."""
    slot = (lambda v: v) if slot_of is None else slot_of.__getitem__
    indptr, indices = fr.indptr.tolist(), fr.indices.tolist()
    weights = None if fr.edge_values is None else fr.edge_values.tolist()
    groups: dict[tuple, list[int]] = {}
    for v in active:
        groups.setdefault((slot(v) // wave_slots, slot(v) // walk.slots_per_warp,
                           slot(v) % walk.chunk), []).append(v)
    degree = {v: indptr[v + 1] - indptr[v] for v in active}
    steps, width, first_edge = position_steps(groups, degree, walk.lanes, walk.pooled)

    def walked(wave: int, warp: int, p: int) -> int:
        """When position p of a warp starts, from its warp's start."""
        return (0 if walk.staged else p) + sum(after_read(steps[(wave, warp, q)])
                                               for q in range(p) if (wave, warp, q) in steps)

    block_start: dict[int, int] = {}
    if blocks is not None:
        per_block, resident = blocks
        statuses = 1 if walk.staged else walk.chunk  # a warp's: staged at once, else each
        walk_of = {}  # each warp with an active position: its statuses, its positions' trips
        for _, warp, p in groups:
            walk_of[warp] = walk_of.get(warp, statuses) + after_read(steps[(0, warp, p)])
        life = {}
        for b in range(max(map(slot, active)) // per_block + 1):
            life[b] = max([statuses] + [w for warp, w in walk_of.items()
                                        if warp * walk.slots_per_warp // per_block == b])
            if b < resident:
                block_start[b] = 0
            else:
                wave_before = range(b - b % resident - resident, b - b % resident)
                freed = sorted(block_start[q] + life[q] for q in wave_before)
                block_start[b] = freed[b % resident]
    read_at, lanes, position = {}, [], 0
    for v in active:  # lanes in the sweep's edge order
        wave, warp, p = slot(v) // wave_slots, slot(v) // walk.slots_per_warp, slot(v) % walk.chunk
        key = (wave, warp, p)
        start = walked(wave, warp, p)
        if blocks is not None:
            start += block_start[slot(v) // blocks[0]] + (1 if walk.staged else 0)
        read_at[v] = (wave, start)
        for j in range(degree[v]):
            lanes.append((position, v, indptr[v] + j,
                          (wave, store_time(start, (first_edge[v] + j) // width[key]))))
            position += 1
    candidate, stored, pending = {}, [], []
    l1 = per_sector is not None and not walk.pooled
    fill: dict[int, tuple] = {}  # each sector's first read
    for v in active if l1 else ():
        fill[v // per_sector] = min(fill.get(v // per_sector, read_at[v]), read_at[v])
    at_fill: dict[int, float] = {}  # each vertex's value when its sector filled
    sweep_start = list(values)
    issued: list[tuple] = []  # lanes below their target's value before the sweep

    def seen(v: int, when: tuple) -> float:
        if not l1:
            return values[v]
        own = [c for t, target, c, warp in issued if target == v and t <= when
               and warp == slot(v) // walk.slots_per_warp]
        return min([at_fill[v], *own])

    def land(batch):
        before = list(values)
        for at, _, edge, _ in batch:
            target = indices[edge]
            if candidate[at] < before[target]:
                values[target] = min(values[target], candidate[at])
                stored.append((at, candidate[at], edge))

    for when in sorted(set(read_at.values())):
        land([lane for lane in pending if lane[3] <= when])
        pending = [lane for lane in pending if lane[3] > when]
        for v in active:
            if l1 and fill[v // per_sector] == when:
                at_fill[v] = values[v]
        for lane in lanes:
            at, v, edge, _ = lane
            if read_at[v] == when:
                candidate[at] = seen(v, when) + (weights[edge] if weights else 0)
                pending.append(lane)
                if candidate[at] < sweep_start[indices[edge]]:
                    issued.append((lane[3], indices[edge], candidate[at],
                                   slot(v) // walk.slots_per_warp))
    land(pending)
    return sorted(stored)


@pytest.mark.parametrize("walk", [ChunkWalk(4, 8, 1), ChunkWalk(3, 12, 2),
                                  ChunkWalk(3, 12, 2, staged=True),
                                  ChunkWalk(4, 16, 0, pooled=True),
                                  ChunkWalk(8, 32, 4, pooled=True)])
@pytest.mark.parametrize("spec", ["rmat:scale=7,ef=4,weights=random,seed=2",
                                  "road:rows=9,weights=random,seed=1"])
def test_timed_sweeps_store_as_events_in_time_order_do(spec, walk):
    """Every sweep of SSSP and CC under a chunk walk: the same storing lanes, values and
    edges as the event-by-event sweep, and the same values after it."""
    graph = load_graph(spec)
    for algorithm in ("sssp", "cc"):
        fr = functional_run(graph, algorithm)
        # a wave holds whole warps (the resident ones)
        for wave_slots in (2 * walk.slots_per_warp,
                           walk.slots_per_warp * (graph.n // walk.slots_per_warp + 1)):
            run = AsynchronousLowering(fr)
            values = run.values.tolist()
            active = fr.iterations[0].active.astype(np.int64)
            while active.size:
                expected = timed_sweep_by_events(fr, values, active.tolist(), wave_slots,
                                                 walk)
                stores = run.launch(active, wave_slots, slots=active, walk=walk)
                assert list(zip(stores.lanes.tolist(), stores.values.tolist(),
                                stores.writes.tolist(), strict=True)) == expected
                assert run.values.tolist() == values
                active = stores.lowered(fr.indices, fr.n)


@pytest.mark.parametrize("kind", ["fractions", "whole floats", "labels", "huge whole floats",
                                  "with inf"])
def test_exclusive_running_min_is_each_segments_least_before(kind):
    """Per element, the least of its segment's earlier elements, as a plain loop finds it:
    fractional distances (by doubling), whole-numbered ones and labels (by offsets), whole
    numbers too far apart for the offsets, and unreached (inf) values."""
    rng = np.random.default_rng(len(kind))
    for _ in range(40):
        size = int(rng.integers(1, 400))
        segment = np.sort(rng.integers(0, int(rng.integers(1, size + 1)), size)).astype(np.int32)
        if kind == "labels":
            values, empty = rng.integers(-5, 60, size), np.iinfo(np.int64).max
        else:
            values, empty = rng.random(size) * 50, np.inf
            if kind != "fractions":
                values = np.floor(values)
            if kind == "huge whole floats":
                values *= 2.0**50
            if kind == "with inf":
                values[rng.random(size) < 0.2] = np.inf
        expected = []
        for i in range(size):
            earlier = [values[j] for j in range(i) if segment[j] == segment[i]]
            expected.append(min(earlier) if earlier else empty)
        got = _exclusive_running_min(values, segment, empty)
        assert got.dtype == values.dtype
        assert got.tolist() == expected


def test_staggered_blocks_start_as_the_earlier_wave_finishes():
    # Blocks of 2 slots, 2 resident: active slots 0 (degree 3), 3 (1), 4 (2), 6 (1), one lane
    # a vertex. Lives (1 status + 1 row + 2 a step of the longest vertex): block 0 8, block 1
    # 4, block 2 6, block 3 4. Wave 0 (blocks 0, 1) starts at 0 and frees places at 4 and 8:
    # block 2 starts at 4, block 3 at 8.
    staggered = StaggeredWaves(slots_per_block=2, resident_blocks=2, lanes=1)
    start, lane_base, width = staggered.schedule(np.array([0, 3, 4, 6]),
                                                 np.array([3, 1, 2, 1]))
    assert start.tolist() == [0, 0, 4, 8]
    assert lane_base.tolist() == [0, 0, 0, 0] and width.tolist() == [1, 1, 1, 1]
    assert staggered.waves(8) == 2 and staggered.waves(4) == 1 and staggered.waves(9) == 3


def test_staggered_chunk_walks_start_at_their_blocks_start():
    # Unstaged walks of 2 slots a warp, a warp a block, 2 resident blocks; active slots 0
    # (degree 1), 3 (2), 4 (1), 6 (1), one lane a vertex. In its warp slot 3 starts after
    # slot 2's status read: 1. Lives (a status read a position, an active position's row and
    # 2 a step): block 0 2 + 1 + 2 = 5, block 1 2 + 1 + 4 = 7, blocks 2 and 3 5. Wave 1
    # takes the places freed at 5 and 7: slot 4 starts at 5, slot 6 at 7.
    walk = StaggeredChunkWalk(ChunkWalk(chunk=2, slots_per_warp=2, lanes=1),
                              slots_per_block=2, resident_blocks=2)
    start, lane_base, width = walk.schedule(np.array([0, 3, 4, 6]), np.array([1, 2, 1, 1]))
    assert start.tolist() == [0, 1, 5, 7]
    assert lane_base.tolist() == [0, 0, 0, 0] and width.tolist() == [1, 1, 1, 1]
    assert walk.waves(8) == 2 and walk.waves(4) == 1 and walk.chunk == 2
    # A walk of one slot a warp is StaggeredWaves' blocks: a status read, a row, 2 a step
    one = StaggeredChunkWalk(ChunkWalk(chunk=1, slots_per_warp=1, lanes=1), 2, 2)
    slots, degrees = np.array([0, 3, 4, 6]), np.array([3, 1, 2, 1])
    assert (one.schedule(slots, degrees)[0].tolist()
            == StaggeredWaves(2, 2, 1).schedule(slots, degrees)[0].tolist() == [0, 0, 4, 8])
    # Staged walks (statuses in one round trip, then positions back to back), 2 lanes a
    # vertex, one block resident: slots 1 (degree 4: 2 steps), 2 (2), 5 (1). Lives: block 0
    # 1 + 1 + 4 = 6, block 1 1 + 1 + 2 = 4, block 2 4; block 1 starts at 6, block 2 at 10;
    # a slot reads after its block's staging: 1, 7, 11.
    walk = StaggeredChunkWalk(ChunkWalk(chunk=2, slots_per_warp=2, lanes=2, staged=True),
                              slots_per_block=2, resident_blocks=1)
    start, _, width = walk.schedule(np.array([1, 2, 5]), np.array([4, 2, 1]))
    assert start.tolist() == [1, 7, 11] and width.tolist() == [2, 2, 2]
    # Blocks without an active slot live their staging's round trip: slot 5 alone, its block
    # 2 after two such blocks, starts at 2 and reads at 3; slots 0 (degree 2: one step) and
    # 7: block 0 lives 1 + 1 + 2 = 4, blocks 1 and 2 one each, so block 3 starts at 6.
    assert walk.schedule(np.array([5]), np.array([1]))[0].tolist() == [3]
    assert walk.schedule(np.array([0, 7]), np.array([2, 3]))[0].tolist() == [1, 7]


@pytest.mark.parametrize("walk, blocks", [(ChunkWalk(4, 8, 1), (8, 2)),
                                          (ChunkWalk(3, 12, 2), (24, 3)),
                                          (ChunkWalk(3, 12, 2, staged=True), (12, 4)),
                                          (ChunkWalk(2, 4, 2, staged=True), (8, 5))])
@pytest.mark.parametrize("spec", ["rmat:scale=7,ef=4,weights=random,seed=2",
                                  "road:rows=9,weights=random,seed=1"])
def test_staggered_chunk_walks_store_as_events_in_time_order_do(spec, walk, blocks):
    """Every sweep of SSSP and CC under a chunk walk whose blocks start staggered: the same
    storing lanes, values and edges as the event-by-event sweep, and the same values."""
    graph = load_graph(spec)
    staggered = StaggeredChunkWalk(walk, *blocks)
    assert staggered.waves(graph.n) > 1
    for algorithm in ("sssp", "cc"):
        fr = functional_run(graph, algorithm)
        run = AsynchronousLowering(fr)
        values = run.values.tolist()
        active = fr.iterations[0].active.astype(np.int64)
        while active.size:
            expected = timed_sweep_by_events(fr, values, active.tolist(), 2 * graph.n, walk,
                                             blocks)
            stores = run.launch(active, blocks[0] * blocks[1], slots=active, walk=staggered)
            assert list(zip(stores.lanes.tolist(), stores.values.tolist(),
                            stores.writes.tolist(), strict=True)) == expected
            assert run.values.tolist() == values
            active = stores.lowered(fr.indices, fr.n)


def staggered_sweeps(fr, staggered: StaggeredWaves) -> tuple[np.ndarray, list[int]]:
    """``sweeps_in_waves`` with the blocks staggered: the final values and each sweep's
    active vertices."""
    run = AsynchronousLowering(fr)
    active = fr.iterations[0].active.astype(np.int64)
    frontiers = []
    while active.size:
        frontiers.append(int(active.size))
        wave = staggered.slots_per_block * staggered.resident_blocks
        active = run.launch(active, wave, slots=active, lanes_per_vertex=staggered.lanes,
                            staggered=staggered).lowered(fr.indices, fr.n)
    return run.values, frontiers


@pytest.mark.parametrize("spec", ["rmat:scale=9,ef=8,weights=random,seed=5",
                                  "road:rows=20,weights=random,seed=3"])
def test_staggered_sweeps_reach_the_reference_answers(spec):
    """Sweeps whose blocks start as others finish reach scipy's distances and components;
    a sweep of one wave is the waves' sweep, lane for lane."""
    graph = load_graph(spec)
    matrix = csr_matrix((graph.weights, graph.indices, graph.indptr), shape=(graph.n,) * 2)
    for algorithm in ("sssp", "cc"):
        fr = functional_run(graph, algorithm)
        for per_block, resident in ((1, 8), (4, 16), (32, 3)):
            values, _ = staggered_sweeps(fr, StaggeredWaves(per_block, resident, 1))
            if algorithm == "sssp":
                assert np.allclose(values, dijkstra(matrix, indices=fr.source))
            else:
                assert np.array_equal(values, fr.output)
        whole = StaggeredWaves(32, -(-graph.n // 32), 1)
        one_wave = AsynchronousLowering(fr).launch(
            fr.iterations[0].active.astype(np.int64), graph.n,
            slots=fr.iterations[0].active.astype(np.int64), lanes_per_vertex=1,
            staggered=whole)
        waves = AsynchronousLowering(fr).launch(
            fr.iterations[0].active.astype(np.int64), graph.n,
            slots=fr.iterations[0].active.astype(np.int64), lanes_per_vertex=1)
        assert np.array_equal(one_wave.lanes, waves.lanes)
        assert np.array_equal(one_wave.values, waves.values)


@pytest.mark.parametrize("config", ["mapping=vwarp,w=8,chunk=4",
                                    "mapping=vwarp,w=32,chunk=2,defer_threshold=3",
                                    "mapping=vwarp,w=8,chunk=2,driven=temporal,"
                                    "switch_to_topology=0.01"])
def test_staggered_chunk_walks_reach_the_reference_answers(config, monkeypatch):
    """On a device of one SM (8 resident blocks: a sweep of 2-13 waves), SSSP and CC under
    static chunk walks, with deferral or in a temporal hybrid's sweeps, start the walks'
    blocks staggered and end at scipy's distances and components."""
    graph = load_graph("road:rows=40,weights=random,seed=3")
    matrix = csr_matrix((graph.weights, graph.indices, graph.indptr), shape=(graph.n,) * 2)
    one_sm = dataclasses.replace(get_device("h100"), sms=1)
    strategy = Strategy.parse(config)
    walk = chunk_walk(strategy, one_sm)
    blocks = strategy.block_size // one_sm.warp_size * walk.slots_per_warp
    assert -(-graph.n // blocks) > resident_blocks_per_sm(strategy, one_sm)  # several waves
    scheduled = []
    schedule = StaggeredChunkWalk.schedule
    monkeypatch.setattr(StaggeredChunkWalk, "schedule",
                        lambda walk, *args: scheduled.append(1) or schedule(walk, *args))
    for algorithm in ("sssp", "cc"):
        scheduled.clear()
        result = simulate(graph, algorithm, config, one_sm)
        assert scheduled  # its sweeps' blocks were started staggered
        if algorithm == "sssp":
            assert np.allclose(result.output, dijkstra(matrix, indices=result.source))
        else:
            _, labels = connected_components(matrix, directed=True, connection="weak")
            assert len(np.unique(result.output)) == labels.max() + 1
            assert np.array_equal(result.output, functional_run(graph, "cc").output)


def test_staggered_waves_only_where_the_device_says_so():
    """Off (the presets), or a sweep of one wave: the simulation is the waves' to the bit."""
    graph = load_graph("road:rows=40,weights=random,seed=3")
    staggered = dataclasses.replace(get_device("h100"), staggered_waves=True)
    assert device_digest(dataclasses.replace(staggered, staggered_waves=False)) == (
        device_digest(get_device("h100")))
    assert device_digest(staggered) != device_digest(get_device("h100"))
    for config in ("mapping=thread", "mapping=vwarp,w=32,chunk=4"):  # one wave; a walk
        a = simulate(graph, "sssp", config, "h100")
        b = simulate(graph, "sssp", config, staggered)
        assert (a.time_us, a.iterations) == (b.time_us, b.iterations)
    small = dataclasses.replace(staggered, sms=1)  # 8 blocks of 8 vertices: 25 waves
    a = simulate(graph, "cc", "mapping=vwarp,w=32", dataclasses.replace(small,
                                                                       staggered_waves=False))
    b = simulate(graph, "cc", "mapping=vwarp,w=32", small)
    assert a.time_us != b.time_us


def l1_run_stores(fr, walk: ChunkWalk, blocks, cached: bool, expect: bool) -> list:
    """Every sweep's stores of one run under ``walk`` (in waves of two warps, or with
    ``blocks`` staggered), through L1 where ``cached``; with ``expect``, each sweep checked
    against the event-by-event one."""
    run = AsynchronousLowering(fr, cached_value_reads=cached, sector_bytes=32)
    per_sector = 32 // run.values.dtype.itemsize if cached else None
    values = run.values.tolist()
    active = fr.iterations[0].active.astype(np.int64)
    out = []
    while active.size:
        wave = 2 * walk.slots_per_warp if blocks is None else 2 * fr.n
        if expect:
            expected = timed_sweep_by_events(fr, values, active.tolist(), wave, walk, blocks,
                                             per_sector=per_sector)
        if blocks is None:
            stores = run.launch(active, wave, slots=active, walk=walk)
        else:
            stores = run.launch(active, blocks[0] * blocks[1], slots=active,
                                walk=StaggeredChunkWalk(walk, *blocks))
        got = list(zip(stores.lanes.tolist(), stores.values.tolist(), stores.writes.tolist(),
                       strict=True))
        if expect:
            assert got == expected
            assert run.values.tolist() == values
        out.append(got)
        active = stores.lowered(fr.indices, fr.n)
    return out


@pytest.mark.parametrize("walk, blocks", [(ChunkWalk(4, 8, 1), None), (ChunkWalk(3, 12, 2), None),
                                          (ChunkWalk(3, 12, 2, staged=True), None),
                                          (ChunkWalk(4, 16, 0, pooled=True), None),
                                          (ChunkWalk(4, 8, 1), (8, 2)),
                                          (ChunkWalk(2, 4, 2, staged=True), (8, 5))])
@pytest.mark.parametrize("spec", ["rmat:scale=7,ef=4,weights=random,seed=2",
                                  "road:rows=9,weights=random,seed=1"])
def test_chunk_walks_reading_through_l1_store_as_events_in_time_order_do(spec, walk, blocks):
    """With ``cached_value_reads``, every sweep of SSSP and CC under a chunk walk (in waves,
    or its blocks staggered): the same storing lanes, values and edges as the event-by-event
    sweep whose vertices read what had landed when their sector filled, and their own
    warp's stores since; and other stores than without L1 (a pooled walk, WER's table:
    the same)."""
    graph = load_graph(spec)
    differs = []
    for algorithm in ("sssp", "cc"):
        fr = functional_run(graph, algorithm)
        cached = l1_run_stores(fr, walk, blocks, True, True)
        differs.append(cached != l1_run_stores(fr, walk, blocks, False, False))
    assert any(differs) != walk.pooled


@pytest.mark.parametrize("partition", [3, 5, 6])
def test_a_spatial_walk_reads_through_l1_by_its_vertices_sectors_not_its_slots(
        partition):
    """A spatial hybrid numbers its slots over the partitions it lists, so consecutive slots
    may hold vertices of two sectors: a vertex reads through the copy of its own value's
    sector (review CR27: the slots' had been taken), as the event-by-event sweep does, on
    every sweep of SSSP and CC."""
    graph = load_graph("rmat:scale=7,ef=4,weights=random,seed=2")
    walk = ChunkWalk(2, 8, 4)
    compared = 0
    for algorithm in ("sssp", "cc"):
        fr = functional_run(graph, algorithm)
        run = AsynchronousLowering(fr, cached_value_reads=True, sector_bytes=32)
        per_sector = 32 // run.values.dtype.itemsize
        values = run.values.tolist()
        active = fr.iterations[0].active.astype(np.int64)
        while active.size:
            reps = np.unique(active // partition)  # the partitions listed, as the driver's
            slots = reps.searchsorted(active // partition) * partition + active % partition
            expected = timed_sweep_by_events(
                fr, values, active.tolist(), 2 * walk.slots_per_warp, walk,
                per_sector=per_sector, slot_of=dict(zip(active.tolist(), slots.tolist(),
                                                        strict=True)))
            stores = run.launch(active, 2 * walk.slots_per_warp, slots=slots, walk=walk)
            assert list(zip(stores.lanes.tolist(), stores.values.tolist(),
                            stores.writes.tolist(), strict=True)) == expected
            assert run.values.tolist() == values
            compared += int(not np.array_equal(slots // per_sector, active // per_sector))
            active = stores.lowered(fr.indices, fr.n)
    assert compared  # some sweep's slots and vertices fell in different sectors


@pytest.mark.parametrize("config", ["mapping=vwarp,w=8,chunk=16",
                                    "mapping=vwarp,w=32,chunk=4,distribution=dynamic",
                                    "mapping=vwarp,w=8,chunk=8,defer_threshold=16",
                                    "mapping=vwarp,w=8,chunk=4,driven=temporal,"
                                    "switch_to_topology=0.01"])
def test_chunk_walks_reading_through_l1_reach_the_reference_answers(config):
    """The presets read a chunk walk's values through L1 (``cached_value_reads``): SSSP and
    CC end at scipy's distances and components, in other sweeps than reading them from L2
    on some algorithm."""
    graph = load_graph("rmat:scale=10,ef=8,weights=random,seed=4")
    matrix = csr_matrix((graph.weights, graph.indices, graph.indptr), shape=(graph.n,) * 2)
    h200 = get_device("h200")
    assert h200.cached_value_reads
    from_l2 = dataclasses.replace(h200, cached_value_reads=False)
    assert device_digest(from_l2) != device_digest(h200)  # on: the digest as before it
    moved = []
    for algorithm in ("sssp", "cc"):
        result = simulate(graph, algorithm, config, h200, trace=True)
        if algorithm == "sssp":
            assert np.allclose(result.output, dijkstra(matrix, indices=result.source))
        else:
            assert np.array_equal(result.output, functional_run(graph, "cc").output)
        other = simulate(graph, algorithm, config, from_l2, trace=True)
        moved.append(result.trace["frontier"].tolist() != other.trace["frontier"].tolist())
    assert any(moved)
