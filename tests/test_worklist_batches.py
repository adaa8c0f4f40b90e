"""Worklist launches costed in batches, their pushes worked out launch by launch, give the
figures of costing each launch as it comes: the pushes, every counter, the time and the
bounds; and the sorts and joins they rest on agree with their definitions."""

import dataclasses

import numpy as np
import pytest

from simulator import driver
from simulator import engine
from simulator import expansion
from simulator import functional_run
from simulator import get_device
from simulator import load_graph
from simulator import simulate
from simulator import slot_views
from simulator import sorted_runs
from simulator import worklist_pushes
from simulator.asynchronous import AsynchronousLowering
from simulator.layout import status_layouts
from simulator.layout import task_layout
from simulator.layout import worklist_layouts
from simulator.result import METRICS
from simulator.sorted_runs import lexicographic_order
from simulator.sorted_runs import scattered_order
from simulator.sorted_runs import stable_order
from simulator.strategy import Strategy
from simulator.timing import UnitWork
from simulator.timing import kernel_cycles
from simulator.timing import kernels_cycles
from simulator.timing import schedule_slots


def _same_cost(together, alone):
    for field in dataclasses.fields(together):
        if field.name == "pushed":
            assert np.array_equal(together.pushed, alone.pushed)
        else:
            assert np.allclose(getattr(together, field.name), getattr(alone, field.name),
                               rtol=1e-12, atol=0), field.name


def _worklist_chain(graph, strategy, device):
    """A BFS's worklist launches, each listing what the one before pushed, with their pushes
    worked out ahead (``launch_pushes``)."""
    fr = functional_run(graph, "bfs")
    worklist = driver.initial_worklist(fr)
    for work in fr.iterations:
        launch = engine.Launch(work.active, work.writes, slots=worklist, lookup="worklist",
                               push=strategy.push, grid_stride=not strategy.variable_grid)
        pushes = engine.launch_pushes(graph.indptr, graph.indices, launch, strategy, device)
        yield launch, pushes
        worklist = pushes.items


@pytest.mark.parametrize("text", [
    "mapping=thread,driven=data",
    "mapping=vwarp,w=8,driven=data,push=chunked",
    "mapping=vwarp,w=4,chunk=3,driven=data,push=prefix,variable_grid=false",
    "mapping=vwarp,w=8,chunk=16,distribution=dynamic,driven=data",
    "mapping=wer+,chunk=2,driven=data",
    "mapping=thread,defer_threshold=3,driven=data",
    "mapping=thread,donate_threshold=1,block_size=64,driven=data,push=chunked",
    "mapping=vwarp,w=8,driven=data,push=chunked,dedup=true",
    "mapping=wer+,chunk=2,driven=data,dedup=true",
    "mapping=thread,defer_threshold=3,driven=data,dedup=true",
])
def test_worklist_launches_costed_together_equal_one_by_one(text):
    """A BFS's chain of worklist launches: each launch's pushes worked out ahead
    (``launch_pushes``) are the items ``vertex_kernel`` finds it pushed, and
    ``worklist_kernels`` over the chain gives each launch's ``vertex_kernel`` cost."""
    graph = load_graph("rmat:scale=9,ef=6,seed=4")
    strategy = Strategy.parse(text)
    device = get_device("h100-datasheet")
    launches, pushes, alone = [], [], []
    for launch, ahead in _worklist_chain(graph, strategy, device):
        cost = engine.vertex_kernel(graph.indptr, graph.indices, launch, strategy, device,
                                    hit_rate=0.25)
        assert np.array_equal(ahead.items, cost.pushed)
        launches.append(launch)
        pushes.append(ahead)
        alone.append(cost)
    assert len(launches) > 3 and pushes[-1].items.size == 0
    together = engine.worklist_kernels(graph.indptr, graph.indices, launches, pushes,
                                       strategy, device, hit_rate=0.25)
    for cost, one in zip(together, alone, strict=True):
        _same_cost(cost, one)


@pytest.mark.parametrize("text", ["mapping=thread,driven=data,push=chunked",
                                  "mapping=vwarp,w=4,chunk=3,driven=data,push=atomic",
                                  "mapping=vwarp,w=4,chunk=3,driven=data,dedup=true"])
def test_lean_and_laid_out_pushes_join_alike(text):
    """A chain whose pushes come from storing lanes alone (``Pushers`` still to count) and
    from all lanes laid out (counted), alternately or all of one kind: ``worklist_kernels``
    joins their storing lanes and push work to the same costs."""
    graph = load_graph("rmat:scale=9,ef=6,seed=4")
    strategy = Strategy.parse(text)
    device = get_device("h100-datasheet")
    launches, lean, laid_out = [], [], []
    for launch, pushes in _worklist_chain(graph, strategy, device):
        layout = worklist_layouts(np.array([launch.slots.size]), strategy, device, None)
        launches.append(launch)
        lean.append(pushes)
        laid_out.append(worklist_pushes._laid_out_pushes(graph.indptr, graph.indices, launch,
                                                         layout, strategy, device))
    assert len(launches) > 3 and all(isinstance(p.pushers, engine.Pushers) for p in lean)
    mixed = [pushes[i % 2] for i, pushes in enumerate(zip(lean, laid_out, strict=True))]
    want = engine.worklist_kernels(graph.indptr, graph.indices, launches, laid_out, strategy,
                                   device, hit_rate=0.25)
    for pushes in lean, mixed:
        got = engine.worklist_kernels(graph.indptr, graph.indices, launches, pushes,
                                      strategy, device, hit_rate=0.25)
        for cost, one in zip(got, want, strict=True):
            _same_cost(cost, one)


@pytest.mark.parametrize(("batch_slots", "batch_edges"), [(64, 1 << 17), (1 << 15, 1 << 17),
                                                          (1 << 15, 200)])
@pytest.mark.parametrize(("algorithm", "text"), [
    ("bfs", "mapping=vwarp,w=8,driven=data,push=chunked"),
    ("bfs", "driven=temporal,switch_to_topology=0.1"),
    ("bfs", "mapping=adaptive,driven=data"),
    ("bfs", "driven=spatial,partition=16"),
    ("bfs", "mapping=thread,defer_threshold=3,driven=data"),
    ("sssp", "mapping=thread,driven=data"),
    ("sssp", "driven=temporal,switch_to_topology=0.05,switch_to_data=0.01"),
    ("cc", "mapping=vwarp,w=4,driven=spatial,partition=4,push=prefix"),
    ("pagerank", "mapping=vwarp,w=2,driven=data"),
    ("bfs", "mapping=vwarp,w=8,driven=data,push=chunked,dedup=true"),
    ("sssp", "mapping=vwarp,w=32,driven=data,dedup=true"),
    ("cc", "driven=temporal,switch_to_topology=0.05,dedup=true"),
])
def test_runs_of_worklist_launches_match_launches_alone(monkeypatch, batch_slots, batch_edges,
                                                        algorithm, text):
    """Whole runs with their small worklist launches costed in batches (many small batches,
    launches with too many slots or edges for one costed as they come, or few big ones) and
    each as it comes (``driver._BATCH_SLOTS = 0``): the same figures, per iteration too."""
    graph = load_graph("road:rows=40,cols=40,seed=1,weights=random")
    fr = functional_run(graph, algorithm)
    monkeypatch.setattr(driver, "_BATCH_SLOTS", batch_slots)
    monkeypatch.setattr(driver, "_BATCH_EDGES", batch_edges)
    together = simulate(graph, algorithm, text, "h100-datasheet", functional=fr, trace=True)
    monkeypatch.setattr(driver, "_BATCH_SLOTS", 0)
    alone = simulate(graph, algorithm, text, "h100-datasheet", functional=fr, trace=True)
    assert together.launches > 10
    for name in METRICS:
        assert getattr(together, name) == pytest.approx(getattr(alone, name), rel=1e-12), name
    assert np.allclose(together.trace["time_us"], alone.trace["time_us"], rtol=1e-12, atol=0)
    assert list(together.trace["form"]) == list(alone.trace["form"])


@pytest.mark.parametrize("text", ["mapping=thread", "mapping=vwarp,w=8,block_size=512",
                                  "mapping=vwarp,w=4,chunk=2,distribution=dynamic",
                                  "mapping=vwarp,w=8,variable_grid=false,driven=data"])
def test_launches_timed_together_as_alone(text):
    """``kernels_cycles`` over launches laid one after another gives each one's
    ``kernel_cycles``: launches of one unit, of a short last block, of more schedule items
    than slots (timed alone), and with a fixed grid."""
    strategy = Strategy.parse(text)
    device = get_device("h100-datasheet")
    slots, per_item = schedule_slots(strategy, device)
    rng = np.random.default_rng(3)
    sizes = np.array([1, per_item + 3, 200 * per_item + 1, slots * per_item + 7, 2])
    units = int(sizes.sum())
    work = UnitWork(rng.integers(0, 50, units).astype(np.float64),
                    rng.integers(0, 400, units).astype(np.float64),
                    rng.integers(0, 90, units).astype(np.float64),
                    rng.integers(2, 60, units))
    segments = np.cumsum(sizes) - sizes
    atomics = rng.integers(0, 500, sizes.size)
    grid_stride = strategy.variable_grid is False
    together = kernels_cycles(work, segments, strategy, device, atomics, True,
                              grid_stride=grid_stride, check=2, hit_rate=0.3)
    for i, (start, size) in enumerate(zip(segments.tolist(), sizes.tolist(), strict=True)):
        alone = kernel_cycles(work.of_units(slice(start, start + size)), strategy, device,
                              int(atomics[i]), True, grid_stride=grid_stride, check=2,
                              hit_rate=0.3)
        assert together[i][0] == pytest.approx(alone[0], rel=1e-12)
        assert np.allclose(together[i][1], alone[1], rtol=1e-12, atol=0)


@pytest.mark.parametrize("text", ["mapping=thread", "mapping=thread,chunk=1",
                                  "mapping=vwarp,w=4,chunk=8", "mapping=vwarp,w=8",
                                  "mapping=vwarp,w=2,chunk=3", "mapping=wer+,chunk=4"])
def test_worklists_laid_out_together_as_alone(text):
    """``worklist_layouts`` of several worklists is each one's ``task_layout``, unit after
    unit, with each one's requests; without the entries, the placement alone."""
    strategy = Strategy.parse(text.replace(",chunk=1", ""))
    device = get_device("h100-datasheet")
    rng = np.random.default_rng(7)
    sizes = np.array([5, 1, 33, 100, 700, 7, 64])
    entries = [rng.integers(0, 5000, size) for size in sizes]
    joined = worklist_layouts(sizes, strategy, device, np.concatenate(entries))
    alone = [task_layout(int(size), strategy, device, slots)
             for size, slots in zip(sizes, entries, strict=True)]
    for name in ("real_positions", "static_sectors", "real_tasks"):
        assert np.array_equal(getattr(joined, name),
                              np.concatenate([getattr(layout, name) for layout in alone])), name
    assert joined.static_requests.tolist() == [layout.static_requests for layout in alone]
    placement = worklist_layouts(sizes, strategy, device, None)
    assert placement.units == joined.units == sum(layout.units for layout in alone)
    assert np.array_equal(placement.real_tasks, joined.real_tasks)


@pytest.mark.parametrize("text", ["mapping=thread", "mapping=vwarp,w=1,chunk=4",
                                  "mapping=vwarp,w=4,chunk=2", "mapping=vwarp,w=4,chunk=8",
                                  "mapping=vwarp,w=8", "mapping=vwarp,w=2,chunk=3",
                                  "mapping=wer+,chunk=4"])
def test_status_listings_laid_out_together_as_alone(text):
    """``status_layouts`` of several listings (a spatial hybrid's launches, costed together)
    is each one's ``task_layout``, unit after unit, with each one's requests."""
    strategy = Strategy.parse(text)
    device = get_device("h100-datasheet")
    sizes = np.array([5, 1, 0, 33, 100, 700, 7, 64, 16])
    joined = status_layouts(sizes, strategy, device)
    alone = [task_layout(int(size), strategy, device) for size in sizes]
    for name in ("real_positions", "static_sectors", "real_tasks"):
        assert np.array_equal(getattr(joined, name),
                              np.concatenate([getattr(layout, name) for layout in alone])), name
    assert joined.static_requests.tolist() == [layout.static_requests for layout in alone]
    assert joined.units == sum(layout.units for layout in alone)


@pytest.mark.parametrize("size", [0, 1, 2, 100, 5000])
@pytest.mark.parametrize("high", [1, 3, 1 << 16, 1 << 17, 1 << 20, 1 << 40, 1 << 62])
def test_stable_order_is_numpys_stable_argsort(size, high):
    """Radix-sorted (16-bit keys), packed, or (keys too wide to pack with their indices) by
    numpy's stable argsort."""
    keys = np.random.default_rng(size + high.bit_length()).integers(0, high, size)
    assert np.array_equal(stable_order(keys), np.argsort(keys, kind="stable"))
    bits = max(high - 1, 0).bit_length()
    assert np.array_equal(scattered_order(keys, bits), np.argsort(keys, kind="stable"))


@pytest.mark.parametrize("mean", [1.5, 3, 11, 13, 40])
def test_spread_is_numpys_repeat(mean):
    """By a gather through the lane-to-vertex array (short runs) or by np.repeat (long ones),
    the same array, a zero count included."""
    rng = np.random.default_rng(int(mean * 10))
    counts = rng.poisson(mean, 500)
    values = rng.random(500)
    owner = np.repeat(np.arange(500), counts)
    np.testing.assert_array_equal(sorted_runs.spread(values, counts, owner),
                                  np.repeat(values, counts))


@pytest.mark.parametrize("highs", [(4, 50, 1 << 32), (1 << 30, 1 << 30, 1 << 10), (3,),
                                   (1, 5, 1), (1 << 40, 1 << 30)])
def test_lexicographic_order_is_numpys_lexsort(highs):
    """Ties on every column but the last, and columns too wide to pack (numpy's lexsort)."""
    rng = np.random.default_rng(len(highs))
    columns = [rng.integers(0, high, 3000) for high in highs]
    assert np.array_equal(lexicographic_order(columns), np.lexsort(columns[::-1]))


def _pushes_fields(pushes):
    slots = pushes.active_slots
    return {"edges": pushes.edges, "store_lanes": pushes.store_lanes, "items": pushes.items,
            "deferred_targets": pushes.deferred_targets, "units": pushes.units,
            "active_slots": np.arange(pushes.active_vertex.size) if slots is None else slots,
            **{f"work.{f.name}": getattr(pushes.work, f.name)
               for f in dataclasses.fields(pushes.work)},
            **{name: getattr(pushes, name) for name in ("active_vertex", "active_degree")}}


@pytest.mark.parametrize("text", [
    "mapping=thread,driven=data",
    "mapping=thread,driven=data,push=chunked",
    "mapping=vwarp,w=1,chunk=4,driven=data,push=atomic",
    "mapping=vwarp,w=8,driven=data,push=chunked",
    "mapping=vwarp,w=4,chunk=3,driven=data,push=prefix,variable_grid=false",
    "mapping=vwarp,w=32,driven=data,push=atomic",
    "mapping=vwarp,w=2,chunk=64,distribution=dynamic,driven=data,push=chunked",
    "mapping=thread,driven=data,dedup=true",
    "mapping=vwarp,w=32,driven=data,push=atomic,dedup=true",
])
def test_lockstep_worklist_pushes_from_storing_lanes_equal_all_lanes_laid_out(text):
    """A lockstep worklist launch's pushes worked out from its storing lanes alone are those
    of laying out all its lanes: the storing lanes, every per-unit push counter, the items
    in arrival order; on worklists in shuffled order holding vertices up to four times
    (only a vertex's first copy stores) and with a hub of many warp steps; with the slots'
    ranks among the active vertices searched for or given, and the work's sources kept.
    Each item's rank is its place among the launch's targets."""
    graph = load_graph("rmat:scale=10,ef=8,seed=2")
    fr = functional_run(graph, "bfs")
    strategy = Strategy.parse(text)
    device = get_device("h100-datasheet")
    rng = np.random.default_rng(7)
    checked = 0
    for work in fr.iterations:
        copies = rng.integers(1, 5, work.active.size)
        worklist = rng.permutation(np.repeat(work.active.astype(np.int64), copies))
        launch = engine.Launch(work.active, work.writes, slots=worklist, lookup="worklist",
                               push=strategy.push, grid_stride=not strategy.variable_grid)
        layout = worklist_layouts(np.array([worklist.size]), strategy, device, None)
        laid_out = worklist_pushes._laid_out_pushes(graph.indptr, graph.indices, launch, layout,
                                                    strategy, device)
        want = _pushes_fields(laid_out)
        sources = engine.write_sources(graph.indptr, graph.indices, work.active, work.writes)
        ranked = dataclasses.replace(launch, slot_ranks=np.searchsorted(work.active, worklist))
        # ranks among an array equal to the active vertices (not them): not checked
        among = dataclasses.replace(ranked, ranked_among=work.active.copy())
        for given in launch, ranked, among:
            lean = worklist_pushes._lockstep_worklist_pushes(given, strategy, device, sources)
            got = _pushes_fields(lean)
            for name in want:
                assert np.array_equal(got[name], want[name]), name
            assert np.array_equal(sources.targets[lean.item_ranks], lean.items)
        cache = {}  # the work's write sources, worked out once and kept
        for given in launch, among, among:
            kept = engine.launch_pushes(graph.indptr, graph.indices, given, strategy, device,
                                        cache)
            assert isinstance(cache["write_sources"], engine.WriteSources)
            got = _pushes_fields(kept)
            for name in want:
                assert np.array_equal(got[name], want[name]), name
        assert cache["ranked among"] == (among.ranked_among, True)
        checked += work.writes.size
    assert checked > 1000 and np.diff(graph.indptr).max() > 64


@pytest.mark.parametrize(("algorithm", "text"), [
    ("sssp", "mapping=thread,driven=data"),
    ("sssp", "mapping=thread,driven=data,push=chunked"),
    ("sssp", "mapping=vwarp,w=4,chunk=3,driven=data,push=prefix,variable_grid=false"),
    ("sssp", "mapping=vwarp,w=32,driven=data,push=atomic"),
    ("sssp", "mapping=vwarp,w=2,chunk=64,distribution=dynamic,driven=data,push=block"),
    ("sssp", "mapping=vwarp,w=8,driven=data,push=chunked,relax=store"),
    ("sssp", "mapping=thread,driven=data,push=atomic,relax=store"),
    ("cc", "mapping=vwarp,w=8,driven=data,push=chunked"),
    ("cc", "mapping=thread,driven=data,push=atomic"),
])
def test_lockstep_lowering_pushes_from_storing_lanes_equal_all_lanes_laid_out(algorithm, text):
    """A lockstep worklist launch whose lanes lower their targets (SSSP, CC; atomicMin or
    plain stores rechecked): its pushes worked out from its storing lanes alone are those of
    laying out all its lanes, on worklists in shuffled order holding vertices up to three
    times, run in one wave and in many (each reading what earlier waves lowered)."""
    graph = load_graph("rmat:scale=10,ef=8,seed=2,weights=random")
    fr = functional_run(graph, algorithm)
    strategy = Strategy.parse(text)
    device = get_device("h100-datasheet")
    rng = np.random.default_rng(11)
    checked = 0
    for entries_per_wave in (1 << 20, 97):
        run = AsynchronousLowering(fr)
        worklist = driver.initial_worklist(fr)
        while worklist.size and checked < 40_000 * (1 + (entries_per_wave == 97)):
            worklist = rng.permutation(np.repeat(worklist, rng.integers(1, 4, worklist.size)))
            order = stable_order(worklist)
            starts = sorted_runs.run_starts(worklist[order])
            stores = run.launch(worklist, entries_per_wave, first_copies=np.sort(order[starts]))
            launch = engine.Launch(
                worklist[order[starts]], stores.outlier_writes, slots=worklist,
                lookup="worklist", push=strategy.push, grid_stride=not strategy.variable_grid,
                write_values=stores.values, store_lanes=stores.lanes,
                rechecks=strategy.relax == "store")
            assert worklist_pushes._pushes_follow_lowering_lanes(launch, strategy)
            layout = worklist_layouts(np.array([worklist.size]), strategy, device, None)
            want = _pushes_fields(worklist_pushes._laid_out_pushes(
                graph.indptr, graph.indices, launch, layout, strategy, device))
            lean = engine.launch_pushes(graph.indptr, graph.indices, launch, strategy, device)
            assert isinstance(lean.pushers, engine.Pushers)
            got = _pushes_fields(lean)
            for name in want:
                assert np.array_equal(got[name], want[name]), name
            checked += stores.lanes.size
            worklist = lean.items
    assert checked > 1000


def test_lockstep_worklist_pushes_leave_writes_of_vertices_off_the_worklist():
    """A launch whose writes leave a vertex that is not on its worklist, or that lists a
    vertex that is not active, is laid out lane by lane (such writes store nowhere): writes
    of a vertex that is not active (no ``write_sources``), whether after an active vertex's
    edges or before every one's, writes of an active vertex that is not listed, a listed
    vertex that is not active, and ranks given that do not name the slots' vertices (among
    another array than the active vertices, whose ranks are then checked)."""
    graph = load_graph("road:rows=6,cols=6,seed=1")
    strategy = Strategy.parse("mapping=vwarp,w=4,driven=data")
    device = get_device("h100-datasheet")
    indptr = graph.indptr
    for active, listed, writer, ranks, among in (
            ([5, 9], [5, 9], 7, None, None), ([9, 20], [9, 20], 3, None, None),
            ([5, 9], [9], 5, None, None), ([5, 9], [5, 8], 5, None, None),
            ([5, 9], [5, 9], 5, [1, 0], None), ([5, 9], [5, 9], 5, [1, 0], [9, 5])):
        writes = np.arange(indptr[writer], indptr[writer + 1])
        launch = engine.Launch(np.array(active), writes, slots=np.array(listed),
                               lookup="worklist", push="atomic",
                               slot_ranks=None if ranks is None else np.array(ranks),
                               ranked_among=None if among is None else np.array(among))
        layout = worklist_layouts(np.array([len(listed)]), strategy, device, None)
        sources = engine.write_sources(indptr, graph.indices, launch.active, writes)
        assert (sources is None) == (writer not in active)
        if sources is not None:
            assert worklist_pushes._lockstep_worklist_pushes(launch, strategy, device,
                                                             sources) is None
        pushes = engine.launch_pushes(indptr, graph.indices, launch, strategy, device)
        laid_out = worklist_pushes._laid_out_pushes(indptr, graph.indices, launch, layout,
                                                    strategy, device)
        assert np.array_equal(pushes.store_lanes, laid_out.store_lanes)
        assert np.array_equal(pushes.items, laid_out.items)
        if writer not in listed or writer not in active:
            assert pushes.store_lanes.size == 0 and pushes.items.size == 0


def _spatial_launches(fr, strategy, n):
    """A spatial hybrid's launches over a BFS, as ``driver._spatial`` lists them."""
    p = strategy.partition
    reps = np.unique(fr.iterations[0].active.astype(np.int64) // p)
    launches = []
    for work in fr.iterations:
        slots = (reps[:, None] * p + np.arange(p)).ravel()
        launches.append(engine.Launch(work.active, work.writes, slots=slots[slots < n],
                                      lookup="status", push=strategy.push,
                                      pushes="partitions", partition=p, partitions=reps,
                                      grid_stride=not strategy.variable_grid))
        reps = np.unique(fr.indices[work.writes].astype(np.int64) // p)
    return launches


@pytest.mark.parametrize("text", [
    "driven=spatial,partition=16",
    "mapping=vwarp,w=8,driven=spatial,partition=4,push=chunked",
    "mapping=vwarp,w=4,chunk=3,driven=spatial,partition=8,push=prefix",
    "mapping=thread,driven=spatial,partition=4,push=chunked",
    "mapping=thread,donate_threshold=2,block_size=64,driven=spatial,partition=4,push=chunked",
    "mapping=wer+,driven=spatial,partition=2",
])
def test_partition_pushes_worked_out_together_equal_launch_by_launch(text):
    """A spatial hybrid's launches, whose pushes no launch expands, costed together with
    their pushes worked out there (``worklist_kernels`` without ``pushes``) give each
    launch's ``vertex_kernel`` cost and pushed representatives; with donation, launches
    that donated (their warps batch the pushes) beside launches that did not (each thread
    batches its own)."""
    graph = load_graph("rmat:scale=9,ef=6,seed=4")
    fr = functional_run(graph, "bfs")
    strategy = Strategy.parse(text)
    device = get_device("h100-datasheet")
    launches = _spatial_launches(fr, strategy, graph.n)
    alone = [engine.vertex_kernel(graph.indptr, graph.indices, launch, strategy, device,
                                  hit_rate=0.25) for launch in launches]
    together = engine.worklist_kernels(graph.indptr, graph.indices, launches, None, strategy,
                                       device, hit_rate=0.25)
    assert len(launches) > 3
    for cost, one in zip(together, alone, strict=True):
        _same_cost(cost, one)
    if strategy.donate_threshold is not None:
        layout = status_layouts(np.array([launch.slots.size for launch in launches]),
                                strategy, device)
        view = slot_views.listed_view(graph.indptr, launches, layout)
        segments = view.segments
        ends = np.append(segments[1:], layout.units)
        donating = expansion.expand_lanes(graph.indptr, view, strategy, device, segments,
                                          ends).donating
        donated = np.add.reduceat(donating, segments) > 0
        assert donated.any() and not donated.all()


@pytest.mark.parametrize("partition", [4, 7])
@pytest.mark.parametrize("listing", ["partitions", "some slots"])
def test_listed_view_joins_the_launches_full_views(partition, listing):
    """The joined view of several listed launches found in one search is the views of each
    found alone, joined: active slots, vertices and degrees, launch segments; with whole
    partitions listed (the graph's last short for P = 7) and with slots that are not whole
    partitions and miss some active vertices."""
    graph = load_graph("road:rows=30,cols=30,seed=2")
    fr = functional_run(graph, "bfs")
    strategy = Strategy.parse(f"mapping=vwarp,w=4,chunk=2,driven=spatial,"
                              f"partition={partition}")
    device = get_device("h100-datasheet")
    launches = _spatial_launches(fr, strategy, graph.n)
    if listing == "some slots":  # every third slot dropped
        launches = [dataclasses.replace(launch, slots=np.delete(launch.slots, np.s_[1::3]),
                                        partitions=None) for launch in launches]
    sizes = np.array([launch.slots.size for launch in launches])
    layout = status_layouts(sizes, strategy, device)
    views = [slot_views.full_view(graph.indptr, launch,
                                  status_layouts(np.array([launch.slots.size]), strategy,
                                                 device),
                                  launch.slots.size) for launch in launches]
    want = slot_views.joined_view(layout, [view.layout.units for view in views],
                                  [view.active_slots for view in views],
                                  [view.active_vertex for view in views],
                                  [view.active_degree for view in views])
    got = slot_views.listed_view(graph.indptr, launches, layout)
    for name in ("active_slots", "active_vertex", "active_degree", "segments"):
        assert np.array_equal(getattr(got, name), getattr(want, name)), name
    assert got.real_slots == want.real_slots and len(launches) > 10


def test_worklist_kernels_need_the_pushes_of_launches_that_push_targets():
    graph = load_graph("road:rows=6,cols=6,seed=1")
    fr = functional_run(graph, "bfs")
    work = fr.iterations[1]
    launch = engine.Launch(work.active, work.writes, slots=work.active.astype(np.int64),
                           lookup="worklist", push="atomic")
    with pytest.raises(ValueError, match="worked out ahead"):
        engine.worklist_kernels(graph.indptr, graph.indices, [launch], None, Strategy(),
                                get_device("h100-datasheet"), hit_rate=0.0)


def test_work_kept_across_strategies_changes_no_figure():
    """What a level's work keeps for the next strategy (write sources, edges, a spatial
    hybrid's partitions per partition size) gives every strategy replayed on one functional
    run the figures of its own fresh run, whatever ran before it (sweeps and worklists
    sharing the level's edges)."""
    graph = load_graph("road:rows=30,cols=40,seed=2")
    texts = ["driven=spatial,partition=16", "driven=spatial,partition=4",
             "mapping=vwarp,w=8,driven=data,push=chunked", "mapping=thread,driven=data",
             "mapping=vwarp,w=32", "driven=temporal,switch_to_topology=0.1",
             "mapping=thread", "driven=spatial,partition=16"]
    shared = functional_run(graph, "bfs")
    for text in texts:
        kept = simulate(graph, "bfs", text, "h100-datasheet", functional=shared, trace=True)
        fresh = simulate(graph, "bfs", text, "h100-datasheet",
                         functional=functional_run(graph, "bfs"), trace=True)
        for name in METRICS:
            assert getattr(kept, name) == getattr(fresh, name), (text, name)
        assert np.array_equal(kept.trace["time_us"], fresh.trace["time_us"])
    assert any(("partitions", 4) in work.cache for work in shared.iterations)
    assert any("write_sources" in work.cache for work in shared.iterations)
