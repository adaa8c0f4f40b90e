"""Sweeps costed on their active blocks only give the figures of the full layout, every metric
of ``simulate`` within float rounding, on small graphs under many strategies and devices."""

import dataclasses

import numpy as np
import pytest

from simulator import Graph
from simulator import engine
from simulator import expansion
from simulator import functional_run
from simulator import get_device
from simulator import layout as layout_module
from simulator import load_graph
from simulator import scheduling
from simulator import sectors
from simulator import simulate
from simulator import slot_views
from simulator import timing
from simulator.costs import COSTS
from simulator.driver import iteration_costs
from simulator.mappings import MAPPINGS
from simulator.result import METRICS
from simulator.scheduling import list_schedule
from simulator.scheduling import list_schedule_sparse
from simulator.scheduling import whole_cycle_schedules
from simulator.sorted_runs import member_mask
from simulator.strategy import Strategy

GRAPHS = {
    "rmat": "rmat:scale=8,ef=8,seed=3",
    "grid": "grid2d:rows=16,cols=24",
    "road": "road:rows=24,cols=30,seed=2",
    "random": "random:n=500,m=2000,seed=5",
}
STRATEGIES = [
    "mapping=thread",
    "mapping=thread,block_size=64",
    "mapping=vwarp,w=1,chunk=4",
    "mapping=vwarp,w=2,chunk=3",
    "mapping=vwarp,w=4,chunk=8",
    "mapping=vwarp,w=8",
    "mapping=vwarp,w=16,chunk=2",
    "mapping=vwarp,w=32",
    "mapping=vwarp,w=8,chunk=64,distribution=dynamic",
    "mapping=vwarp,w=2,distribution=dynamic,block_size=128",
    "mapping=thread,defer_threshold=8",
    "mapping=vwarp,w=4,defer_threshold=16",
    "mapping=wer",
    "mapping=wer+,chunk=4",
    "mapping=thread,donate_threshold=2",
    "mapping=adaptive",
    "mapping=vwarp,w=8,unroll=4",
    "mapping=thread,unroll=2",
    "driven=temporal,switch_to_topology=0.05",
    "mapping=vwarp,w=4,driven=temporal,switch_to_topology=0.02,switch_to_data=0.01",
]
# A small device: 2 SMs of one block slot each, so that a sweep takes many rounds of blocks;
# with a small L2 the hit rate, and so every duration, is a fraction of a cycle.
TINY = dataclasses.replace(get_device("h100-datasheet"), name="tiny", sms=2, max_blocks_per_sm=1)
TINY_L2 = dataclasses.replace(TINY, name="tiny-l2", l2_bytes=3000)


def _both_paths(monkeypatch, graph, algorithm, strategy, device, fr):
    sparse = simulate(graph, algorithm, strategy, device, functional=fr, trace=True)
    monkeypatch.setattr(engine, "_SPARSE_SWEEPS", False)
    full = simulate(graph, algorithm, strategy, device, functional=fr, trace=True)
    monkeypatch.setattr(engine, "_SPARSE_SWEEPS", True)
    return sparse, full


def _assert_same(sparse, full):
    for name in METRICS:
        assert getattr(sparse, name) == pytest.approx(getattr(full, name), rel=1e-9), name
    assert np.allclose(sparse.trace["time_us"], full.trace["time_us"], rtol=1e-9, atol=0)


@pytest.fixture(scope="module")
def runs():
    out = {}
    for kind, spec in GRAPHS.items():
        graph = load_graph(spec + ",weights=random")
        for algorithm in ("bfs", "sssp", "cc", "pagerank"):
            out[kind, algorithm] = graph, functional_run(graph, algorithm)
    return out


@pytest.mark.parametrize("algorithm", ["bfs", "sssp", "cc", "pagerank"])
@pytest.mark.parametrize("kind", list(GRAPHS))
def test_sweeps_match_full_layout(monkeypatch, runs, kind, algorithm):
    """BFS under every strategy; the other algorithms under a third of them, a different
    third on each graph, so that every strategy meets every algorithm."""
    graph, fr = runs[kind, algorithm]
    strategies = STRATEGIES
    if algorithm != "bfs":
        strategies = STRATEGIES[list(GRAPHS).index(kind) % 3 :: 3]
    for strategy in strategies:
        if algorithm == "pagerank" and ("unroll" in strategy or "temporal" in strategy):
            continue
        device = TINY_L2 if strategies.index(strategy) % 2 else TINY
        _assert_same(*_both_paths(monkeypatch, graph, algorithm, strategy, device, fr))
    if kind in ("rmat", "road"):  # every block in one round of the real device's slots
        for strategy in STRATEGIES[::4]:
            if algorithm == "pagerank" and "unroll" in strategy:
                continue
            _assert_same(*_both_paths(monkeypatch, graph, algorithm, strategy,
                                      "h100-datasheet", fr))


def test_sweeps_cost_only_active_blocks():
    """The sparse path costs the units (for donation the blocks) that hold an active vertex,
    not the whole graph."""
    graph = load_graph("grid2d:rows=20,cols=30")  # vertex 300 sits on the left border
    strategy = Strategy.parse("mapping=vwarp,w=32")
    device = get_device("h100-datasheet")
    layout = layout_module.task_layout(graph.n, strategy, device)
    view = slot_views._dirty_view(graph.indptr, [np.array([5, 6, 300])], layout, 8)
    assert view.units.tolist() == [0, 1, 2, 3, 4, 5, 6, 7, 296, 297, 298, 299, 300, 301,
                                   302, 303]
    assert view.active_slots.tolist() == [5, 6, 12]
    view = slot_views._dirty_view(graph.indptr, [np.array([5, 6, 300])], layout, 1)
    assert view.units.tolist() == [5, 6, 300]
    assert view.active_slots.tolist() == [0, 1, 2]
    assert view.active_vertex.tolist() == [5, 6, 300]
    assert view.active_degree.tolist() == [3, 3, 3]


def test_many_rounds_with_narrow_simd_and_scalar_unit(monkeypatch, runs):
    """Cluster issue makes durations fractional and the scalar unit changes what an SM
    issues; both must still agree with the full layout."""
    graph, fr = runs["road", "bfs"]
    for options in ({"cluster_issue": True}, {"scalar_unit": True}):
        device = dataclasses.replace(TINY, **options)
        for strategy in ("mapping=thread", "mapping=vwarp,w=4,chunk=2", "mapping=wer"):
            _assert_same(*_both_paths(monkeypatch, graph, "bfs", strategy, device, fr))


def test_sparse_schedule_equals_list_schedule():
    rng = np.random.default_rng(7)
    for trial in range(400):
        slots, items = int(rng.integers(1, 12)), int(rng.integers(0, 120))
        base = float(rng.integers(1, 40))
        listed = rng.random(items) < rng.random() * 0.4
        listed[items // slots * slots :] = True
        listed = np.flatnonzero(listed)
        if trial % 3 == 0:  # fractional rounds: float additions round as list_schedule's do
            base += 0.1
        # items at least as long as the others (the usual case), or some shorter ones
        durations = base + rng.integers(-10 if trial % 2 else 0, 90, listed.size)
        durations += 0.5 if trial % 4 == 0 else 0.0
        dense = np.full(items, base)
        dense[listed] = durations
        owner, finish = list_schedule(dense, slots)
        for every_order in (False, True):
            sparse_owner, sparse_finish, placed = list_schedule_sparse(
                items, slots, base, listed, durations, every_order=every_order)
            assert np.array_equal(owner[listed], sparse_owner)
            assert np.array_equal(finish, sparse_finish)
            _assert_placed(placed, owner, slots, rng)


@pytest.mark.parametrize("compacted_from", [1, 100, 10**9])
def test_whole_cycle_schedules_equal_list_schedule_each(monkeypatch, compacted_from):
    """Several schedules at once, some with slower items in every round (so rounds reach the
    busy slots), some with base-length items listed, some with none: each as
    ``list_schedule`` places it on its own; with the grown keys of a step moved behind the
    others never, where they are many, always."""
    monkeypatch.setattr(scheduling, "_COMPACTED_FROM", compacted_from)
    rng = np.random.default_rng(11)
    reached_busy = 0
    for _trial in range(600):
        slots, items = int(rng.integers(1, 12)), int(rng.integers(0, 120))
        schedules = int(rng.integers(1, 6))
        base = float(rng.integers(1, 40))
        last_start = items // slots * slots
        dense = np.full((schedules, items), base)
        dense[:, last_start:] = rng.integers(0, 60, (schedules, items - last_start))
        share = rng.random()
        listed = [np.flatnonzero(rng.random(last_start) < share * rng.random())
                  for _ in range(schedules)]
        for row, mine in zip(dense, listed, strict=True):
            row[mine] = base + rng.integers(0, 30, mine.size) * (rng.random(mine.size) < 0.8)
        sweep = np.repeat(np.arange(schedules), [mine.size for mine in listed])
        listed = np.concatenate(listed).astype(np.int64)
        owner, last_owner, finish = whole_cycle_schedules(
            items, slots, base, sweep, listed, dense[sweep, listed], dense[:, last_start:])
        for i in range(schedules):
            want_owner, want_finish = list_schedule(dense[i], slots)
            assert np.array_equal(owner[sweep == i], want_owner[listed[sweep == i]])
            assert np.array_equal(last_owner[i], want_owner[last_start:])
            assert np.array_equal(finish[i], want_finish)
        reached_busy += bool(share > 0.5 and slots > 2)
    assert reached_busy > 100


def test_whole_cycle_schedules_leave_fractions_and_faster_items_to_one_by_one():
    listed, sweep, last = np.array([0, 5]), np.array([0, 0]), np.zeros((1, 2))
    assert whole_cycle_schedules(10, 4, 3.0, sweep, listed, np.array([4.0, 2.0]), last) is None
    assert whole_cycle_schedules(10, 4, 3.0, sweep, listed, np.array([4.0, 3.5]), last) is None
    assert whole_cycle_schedules(10, 4, 2.5, sweep, listed, np.array([4.0, 3.0]), last) is None
    assert whole_cycle_schedules(10, 4, 3.0, sweep, listed, np.array([4.0, 3.0]),
                                 last) is not None
    # finish times too long for their keys to fit in int64
    assert whole_cycle_schedules(10, 4, 3.0, sweep, listed, np.array([2.0**60, 3.0]),
                                 last) is None


def _assert_placed(placed, owner, slots, rng):
    """``placed`` puts every item of the full rounds where ``list_schedule`` does and sums
    rows of them per slot from their running sums by round."""
    in_full = placed.rounds * slots
    assert np.array_equal(placed.owners(np.arange(in_full)), owner[:in_full])
    rows = rng.integers(0, 50, (2, in_full)).astype(np.float64)
    prefix = np.zeros((2, placed.rounds + 1, slots))
    prefix[:, 1:] = rows.reshape(2, placed.rounds, slots).cumsum(axis=1)
    want = [np.bincount(owner[:in_full], weights=row, minlength=slots) for row in rows]
    assert np.array_equal(placed.slot_sums(prefix), np.stack(want))


def test_sparse_schedule_follows_ties_made_by_rounding():
    """Finish times near 2**52 that adding the base rounds to one value: the slots' order
    changes in rounds no listed item is in, and the placement must follow it."""
    rng = np.random.default_rng(3)
    for trial in range(300):
        slots, items = int(rng.integers(2, 10)), int(rng.integers(10, 200))
        base = (0.75, 0.3, 1.25)[trial % 3]
        listed = rng.random(items) < 0.15
        listed[items // slots * slots :] = True
        listed = np.flatnonzero(listed)
        durations = (2.0**52 - rng.choice([0.5, 1.0, 1.5, 2.0, 3.5], listed.size)
                     - 2.0**50 * rng.integers(0, 2, listed.size))
        dense = np.full(items, base)
        dense[listed] = durations
        owner, finish = list_schedule(dense, slots)
        sparse_owner, sparse_finish, placed = list_schedule_sparse(items, slots, base,
                                                                   listed, durations)
        assert np.array_equal(owner[listed], sparse_owner)
        assert np.array_equal(finish, sparse_finish)
        _assert_placed(placed, owner, slots, rng)


def test_sparse_schedule_needs_the_partial_round():
    with pytest.raises(ValueError, match="partial round"):
        list_schedule_sparse(10, 4, 1.0, np.array([0, 8]), np.array([2.0, 2.0]))


@pytest.mark.parametrize("n", [700, 10753])
@pytest.mark.parametrize("text", [
    "mapping=vwarp,w=4,chunk=8", "mapping=vwarp,w=8", "mapping=vwarp,w=4,distribution=dynamic",
    "mapping=thread,unroll=2",
])
def test_sparse_cycles_equal_kernel_cycles(text, n):
    """Any per-unit work on some units, the clean work elsewhere: the sparse launch time and
    bounds are ``kernel_cycles``' on the whole array, units faster than clean ones and units
    as long as clean ones too. With 10753 vertices and chunks of 8 the last block holds one
    vertex, checks one position rather than 8 and sits in a full round of the schedule: full
    rounds have an item of other than the usual duration."""
    strategy = Strategy.parse(text)
    layout = layout_module.task_layout(n, strategy, TINY)
    base = timing.clean_unit_work(layout, strategy, TINY, COSTS, False)
    rng = np.random.default_rng(11)
    # most units; the first 32 (whole blocks) without a round trip, faster than clean ones
    units = np.flatnonzero((rng.random(layout.units) < 0.6) | (np.arange(layout.units) < 32))
    work = timing.UnitWork(
        rng.integers(0, 40, units.size).astype(np.float64),
        rng.integers(0, 30, units.size).astype(np.float64),
        rng.integers(0, 20, units.size).astype(np.float64),
        np.where(units < 32, 0, rng.integers(0, 9, units.size)),
    )
    # units 64-79 (whole blocks) as long as clean ones but reading more sectors
    alike = (units >= 64) & (units < 80)
    for name in ("sisd", "simd", "round_trips"):
        getattr(work, name)[alike] = getattr(base, name)[units[alike]]
    work.sectors[alike] = base.sectors[units[alike]] + 3
    dense = timing.UnitWork(base.sisd.copy(), base.simd.copy(), base.sectors.copy(),
                             base.round_trips.copy())
    for name in ("sisd", "simd", "sectors", "round_trips"):
        getattr(dense, name)[units] = getattr(work, name)
    grid_stride = (strategy.unroll or 1) > 1
    for hit_rate in (0.0, 0.37):
        want = timing.kernel_cycles(dense, strategy, TINY, 5, layout.k == 1,
                                     grid_stride=grid_stride, check=2, hit_rate=hit_rate)
        clean = timing.clean_sweep(layout, strategy, TINY, COSTS, False, grid_stride,
                                    hit_rate)
        got = timing.sparse_sweep_cycles(
            clean, units, clean.units[:, units], work, strategy, TINY, 5, layout.k == 1,
            float(dense.sectors.sum()), grid_stride=grid_stride, check=2, hit_rate=hit_rate,
        )
        assert got[0] == pytest.approx(want[0], rel=1e-12)
        assert np.allclose(got[1], want[1], rtol=1e-12, atol=0)


@pytest.mark.parametrize("units_per_key", [1 / 8, 1e9])
def test_distinct_sectors_with_more_units_than_keys(monkeypatch, units_per_key):
    """A launch whose units far outnumber its keys (a donating view's whole blocks): the
    count that counts each unit's keys and the one that searches every unit's range both
    give the plain count."""
    monkeypatch.setattr(sectors, "_RANGE_COUNT_FROM", 0)
    monkeypatch.setattr(sectors, "_SEARCHED_UNITS_PER_KEY", units_per_key)
    rng = np.random.default_rng(6)
    unit_of_step = np.repeat(np.arange(4000), rng.integers(0, 3, 4000))
    group = np.sort(rng.choice(unit_of_step.size, 300))
    sector = rng.integers(0, 30, 300)
    _assert_plain_count(group, sector, unit_of_step, 4000)


def _assert_plain_count(group, sector, unit_of_step, units):
    """``distinct_sectors`` against counting the distinct (step, sector) pairs one by one;
    the units after its last count none. With some elements marked (and with the units'
    sizes given or searched for), the same count, and that of the marked elements alone."""
    def plain(group, sector):
        want = np.zeros(units, dtype=np.int64)
        for g, _ in set(zip(group.tolist(), sector.tolist(), strict=True)):
            want[unit_of_step[g]] += 1
        return want

    want = plain(group, sector)
    marked = np.random.default_rng(group.size).random(group.size) < 0.3
    want_marked = plain(group[marked], sector[marked])
    got = sectors.distinct_sectors(group.copy(), sector, unit_of_step)
    assert got.tolist() == want[: got.size].tolist() and not want[got.size :].any()
    for unit_sizes in None, np.bincount(unit_of_step[group], minlength=units):
        got, got_marked = sectors.distinct_sectors(group.copy(), sector, unit_of_step,
                                                   unit_sizes, marked=marked)
        assert got.size == got_marked.size
        assert got.tolist() == want[: got.size].tolist() and not want[got.size :].any()
        assert got_marked.tolist() == want_marked[: got.size].tolist()


@pytest.mark.parametrize("range_count_from,running_count_from",
                         [(0, 0.0), (0, float("inf")), (1 << 16, 0.0)])
def test_distinct_sectors_counts_pairs_per_unit(monkeypatch, range_count_from,
                                                running_count_from):
    """Distinct (step, sector) pairs per unit against a plain count, units without a step
    (no steps, or no element) included, for both forms of the step-to-unit map and every
    way of counting (compressed keys, ranges by a running count or by a reduceat)."""
    monkeypatch.setattr(sectors, "_RANGE_COUNT_FROM", range_count_from)
    monkeypatch.setattr(sectors, "_RUNNING_COUNT_UNITS_PER_KEY", running_count_from)
    rng = np.random.default_rng(5)
    steps_per_unit = rng.integers(0, 4, 50)
    unit_of_step = np.repeat(np.arange(50), steps_per_unit)
    group = rng.integers(0, unit_of_step.size, 3000)
    sector = rng.integers(0, 40, 3000)
    _assert_plain_count(group, sector, unit_of_step, 50)
    _assert_plain_count(group, rng.integers(0, 10**6, 3000), unit_of_step, 50)  # most once
    got = sectors.distinct_sectors(group.copy(), sector, 3)
    want = np.zeros(got.size, dtype=np.int64)
    for g, _ in set(zip(group.tolist(), sector.tolist(), strict=True)):
        want[g // 3] += 1
    assert got.tolist() == want.tolist()


def test_members_by_search_or_table():
    """Worklist launches test membership in O(values) when values are few: the same answer as
    a table, members sorted or not."""
    rng = np.random.default_rng(3)
    for values_size, universe in ((10, 10**6), (5000, 4000)):  # searched, then a table
        values = rng.integers(0, 4000, values_size)
        members = np.unique(rng.integers(0, 4000, 300))
        for given in (members, rng.permutation(members)):
            assert np.array_equal(member_mask(values, given, universe),
                                  np.isin(values, members))
    # ascending values (repeats included), more than the members: searched the other way
    values = np.sort(rng.integers(0, 4000, 900))
    members = np.unique(rng.integers(0, 4000, 300))
    found = member_mask(values, members, 10**6)
    assert np.array_equal(found, np.isin(values, members)) and 0 < found.sum() < values.size


def test_sweep_bounds_match_full_layout(monkeypatch, runs):
    """Each launch's row of bounds (what calibration refits) is the full layout's too."""
    graph, fr = runs["road", "sssp"]
    for text in ("mapping=thread", "mapping=vwarp,w=8,chunk=4", "mapping=wer+,unroll=2"):
        strategy = Strategy.parse(text)
        rows = {}
        for sparse in (True, False):
            monkeypatch.setattr(engine, "_SPARSE_SWEEPS", sparse)
            costs = iteration_costs(fr, strategy, TINY_L2)
            rows[sparse] = np.concatenate([it.cost.bounds for it in costs])
        assert np.allclose(rows[True], rows[False], rtol=1e-9, atol=0)


def _staged_static_sectors(n: int, w: int, c: int, k: int, words: int) -> list[int]:
    """Per unit, as tuner/measure/kernels.cu's ``vwarp_chunk`` stages them: the sectors its
    W-lane steps read, lane j of a chunk at ``base`` reading status word base + j (j < C,
    below n) and row bound min(base + j, n) (j <= C), in step j // W; summed over steps."""
    out = []
    for u in range(-(-n // (k * c))):
        steps: dict[int, tuple[set, set]] = {}
        for base in range(u * k * c, min(n, (u + 1) * k * c), c):
            for j in range(c + 1):
                status, bounds = steps.setdefault(j // w, (set(), set()))
                if j < c and base + j < n:
                    status.add((base + j) // words)
                bounds.add(min(base + j, n) // words)
        out.append(sum(len(status) + len(bounds) for status, bounds in steps.values()))
    return out


@pytest.mark.parametrize("n", [1, 7, 19, 20, 32, 33, 257])
@pytest.mark.parametrize(("w", "c"), [(2, 1), (4, 3), (8, 1), (8, 7), (8, 8), (16, 40),
                                      (32, 1), (32, 31), (4, 64), (2, 8), (4, 5)])
@pytest.mark.parametrize("sector_bytes", [32, 128])
def test_staged_layout_reads_count_by_definition(n, w, c, sector_bytes):
    """A staged sweep's per-launch reads (status words and row bounds, in sectors per unit) are
    what its staging steps touch, for chunks shorter than W (closed form) and longer (counted),
    the graph's last chunk cut short by n too (its lanes past n re-read word n a step)."""
    dev = dataclasses.replace(get_device("h100-datasheet"), sector_bytes=sector_bytes)
    layout = layout_module.task_layout(n, Strategy.parse(f"mapping=vwarp,w={w},chunk={c}"), dev)
    words = sector_bytes // 4
    assert layout.static_sectors.tolist() == _staged_static_sectors(n, w, c, layout.k, words)


@pytest.mark.parametrize("spec", ["mapping=thread", "mapping=vwarp,w=8,chunk=3",
                                  "mapping=vwarp,w=32"])
def test_layout_of_some_units_equals_their_rows(spec):
    """A view's layout of some units (worked out for a sweep's, whose units are full but the
    last) holds what the whole layout holds for them, for one listing and for several."""
    device, strategy = get_device("h100-datasheet"), Strategy.parse(spec)
    rng = np.random.default_rng(4)
    for sizes in ([1000], [1], [0, 300, 77, 5]):
        whole = layout_module.status_layouts(np.array(sizes), strategy, device)
        units = np.sort(rng.choice(whole.units, min(whole.units, 9), replace=False))
        units = np.append(units, whole.units - 1)  # the last one, whatever else
        part = whole.of_units(units)
        assert part.units == units.size
        for name in ("real_positions", "static_sectors", "real_tasks"):
            assert getattr(part, name).tolist() == getattr(whole, name)[units].tolist(), name


@pytest.mark.parametrize("n", [1, 45, 300])
@pytest.mark.parametrize(("w", "c"), [(1, 1), (1, 3), (8, 1), (4, 8), (4, 3), (2, 1),
                                    (16, 1), (32, 1)])
def test_worklist_layout_reads_count_by_definition(n, w, c):
    """A worklist launch's per-unit reads: each step's worklist entries, then its vertices'
    row starts and row ends, in distinct sectors per step (positions of a chunk for W = 1,
    W-lane staging steps otherwise; counted as rows of a unit's slots where one step reads
    them all, by a sort of the keys otherwise)."""
    device = get_device("h100-datasheet")
    words = device.sector_bytes // 4
    slot_vertex = np.random.default_rng(n + w + c).integers(0, 5000, n)
    strategy = Strategy.parse(f"mapping=vwarp,w={w},chunk={c}")
    layout = layout_module.task_layout(n, strategy, device, slot_vertex)
    per_unit = device.warp_size // w * c
    expected = []
    for u in range(-(-n // per_unit)):
        steps: dict[int, tuple[set, set, set]] = {}
        for t in range(u * per_unit, min(n, (u + 1) * per_unit)):
            entries, starts, ends = steps.setdefault((t % c) // w, (set(), set(), set()))
            entries.add(t // words)
            starts.add(int(slot_vertex[t]) // words)
            ends.add((int(slot_vertex[t]) + 1) // words)
        expected.append(sum(len(a) + len(b) + len(e) for a, b, e in steps.values()))
    assert layout.static_sectors.tolist() == expected


@pytest.mark.parametrize(("width", "words"), [(32, 8), (32, 4), (8, 16), (32, 1)])
def test_thread_list_sectors_count_each_steps_sectors(width, words):
    """Threads each walking their own list in lockstep, in any order, some vertices listed
    twice in a unit, some lists empty, a few long (hubs), on a graph whose lists sit a few
    words apart: the closed form per pair of threads equals the distinct (step, sector)
    pairs of every lane."""
    rng = np.random.default_rng(width + words)
    for _ in range(40):
        units = int(rng.integers(1, 30))
        full = rng.random() < 0.3  # units full up: a unit's last vertex may start the next
        n = units * width if full else int(rng.integers(1, units * width + 1))
        slots = np.sort(rng.choice(units * width, n, replace=False))
        unit = slots // width
        vertices = int(rng.integers(2, 12)) if full else int(rng.integers(5, 300))
        degree_of = rng.integers(0, 6, vertices)
        hubs = rng.random(vertices) < 0.05
        degree_of[hubs] = rng.integers(6, 60, int(hubs.sum()))
        indptr = np.concatenate([[0], np.cumsum(degree_of)])
        vertex = rng.integers(0, vertices, n)
        start, degree = indptr[vertex], degree_of[vertex]
        got = sectors.thread_list_sectors(start, degree, slots, units=units, width=width,
                                          words_per_sector=words)
        shuffled = rng.permutation(n)  # the threads given in any order
        assert np.array_equal(got, sectors.thread_list_sectors(
            start[shuffled], degree[shuffled], slots[shuffled], units=units, width=width,
            words_per_sector=words))
        # every lane: thread t's j-th edge in its unit's step j
        unit_steps = np.zeros(units, dtype=np.int64)
        np.maximum.at(unit_steps, unit, degree)
        thread = np.repeat(np.arange(n), degree)
        j = np.arange(thread.size) - np.repeat(np.cumsum(degree) - degree, degree)
        step = (np.cumsum(unit_steps) - unit_steps)[unit[thread]] + j
        want = np.zeros(units, dtype=np.int64)
        for g, _ in set(zip(step.tolist(), ((start[thread] + j) // words).tolist(),
                            strict=True)):
            want[np.repeat(np.arange(units), unit_steps)[g]] += 1
        assert got.tolist() == want.tolist()
    # two full units of one vertex's 12 edges: each unit reads a sector a step
    slots = np.arange(2 * width)
    got = sectors.thread_list_sectors(np.full(2 * width, 3), np.full(2 * width, 12), slots,
                                      units=2, width=width, words_per_sector=words)
    assert got.tolist() == [12, 12]


@pytest.mark.parametrize("width", [1, 2, 3, 4])
def test_pairwise_distinct_is_row_distinct(width):
    """Rows of a few lanes, busy or idle (-1), with many repeated sectors: the pairwise
    count is the sorted rows' count."""
    rng = np.random.default_rng(width)
    rows = rng.integers(-1, 4, (5000, width))
    assert np.array_equal(sectors.pairwise_distinct(rows), sectors.row_distinct(rows.copy()))


def _assert_together_equal_alone(graph, fr, strategy, device):
    """``sweep_kernels`` over the run's levels gives each level's ``vertex_kernel`` cost:
    every counter, the time and the bounds."""
    layout = layout_module.task_layout(graph.n, strategy, device)
    launches = [engine.Launch.sweep(work, grid_stride=strategy.unroll is not None)
                for work in fr.iterations]
    together = engine.sweep_kernels(graph.indptr, graph.indices, launches, strategy, device,
                                     layout=layout, hit_rate=0.25)
    for launch, cost in zip(launches, together, strict=True):
        alone = engine.vertex_kernel(graph.indptr, graph.indices, launch, strategy, device,
                                     layout=layout, hit_rate=0.25)
        for field in dataclasses.fields(cost):
            if field.name != "pushed":
                assert np.allclose(getattr(cost, field.name), getattr(alone, field.name),
                                   rtol=1e-12, atol=0), field.name


@pytest.mark.parametrize("text", [
    "mapping=thread", "mapping=vwarp,w=4,chunk=8", "mapping=vwarp,w=32",
    "mapping=vwarp,w=8,chunk=64,distribution=dynamic", "mapping=thread,defer_threshold=3",
    "mapping=wer+,chunk=4", "mapping=thread,unroll=2",
])
def test_sweeps_costed_together_equal_one_by_one(text):
    """``sweep_kernels`` over a BFS's levels gives each level's ``vertex_kernel`` cost: every
    counter, the time and the bounds (deferral's outlier kernels included)."""
    graph = load_graph("rmat:scale=9,ef=6,seed=4")
    fr = functional_run(graph, "bfs")
    strategy = Strategy.parse(text)
    device = get_device("h100-datasheet")
    assert len(fr.iterations) > 3
    _assert_together_equal_alone(graph, fr, strategy, device)


@pytest.mark.parametrize("text", ["mapping=thread,donate_threshold=2",
                                  "mapping=thread,donate_threshold=1,block_size=128,unroll=2"])
def test_donating_sweeps_costed_together_equal_one_by_one(text):
    """Donation's views hold whole blocks, sweep after sweep, the graph's last block short
    of units; levels that donate and levels that do not (each timed against its own clean
    sweep) costed together give each level's ``vertex_kernel`` cost."""
    graph = load_graph("road:rows=60,cols=60,seed=1")  # 113 units: the last block holds one
    fr = functional_run(graph, "bfs")
    strategy = Strategy.parse(text)
    device = get_device("h100-datasheet")
    per_block = strategy.block_size
    degree = np.diff(graph.indptr)
    donates, reaches_last_block = [], False
    for work in fr.iterations:
        block = work.active // per_block
        edges = np.bincount(block, weights=degree[work.active])
        cap = np.ceil(edges / per_block) + strategy.donate_threshold
        donates.append(bool((degree[work.active] > cap[block]).any()))
        reaches_last_block |= bool((block == (graph.n - 1) // per_block).any())
    assert any(donates) and not all(donates) and reaches_last_block
    _assert_together_equal_alone(graph, fr, strategy, device)


@pytest.mark.parametrize("text", ["mapping=thread,donate_threshold=2",
                                  "mapping=thread,donate_threshold=1,block_size=96",
                                  "mapping=thread,donate_threshold=0,defer_threshold=6"])
@pytest.mark.parametrize("spec", ["road:rows=60,cols=60,seed=1", "rmat:scale=9,ef=6,seed=4"])
def test_donating_blocks_are_those_whose_threads_donate(spec, text):
    """The blocks a sweep's view takes whole are exactly those in which ``lanes.donating_lanes``,
    laying out every block whole, finds a donating thread (found from the degrees alone)."""
    graph = load_graph(spec)
    fr = functional_run(graph, "bfs")
    strategy, device = Strategy.parse(text), get_device("h100-datasheet")
    layout = layout_module.task_layout(graph.n, strategy, device)
    block = strategy.block_size // device.warp_size
    blocks = -(-layout.units // block)
    sweeps = [work.active for work in fr.iterations if work.active.size]
    whole = slot_views._dirty_view(graph.indptr, sweeps, layout, block)
    ends = np.append(whole.segments[1:], whole.units.size)
    expanded = expansion.expand_lanes(graph.indptr, whole, strategy, device, whole.segments, ends)
    sweep_of_unit = np.repeat(np.arange(len(sweeps)), ends - whole.segments)
    donating = np.flatnonzero(expanded.donating)
    want = np.unique(sweep_of_unit[donating] * blocks + whole.units[donating] // block)
    unit_keys, at, act, degree = slot_views._active_units(graph.indptr, sweeps, layout)
    sweep = unit_keys[at // layout.per_unit] // layout.units
    got = MAPPINGS[strategy.mapping].sharing_blocks(strategy, device, layout, act, degree,
                                                    sweep)
    assert want.size and got.tolist() == want.tolist()


@pytest.mark.parametrize("table_per_write", [expansion._TABLE_PER_WRITE, 0])
@pytest.mark.parametrize("text", ["mapping=thread", "mapping=vwarp,w=4,chunk=2"])
def test_sweeps_sharing_vertices_store_only_their_own_writes(monkeypatch, table_per_write,
                                                             text):
    """Sweeps costed together whose active vertices overlap (an edge expands in two of them
    and stores in one) give each one's cost alone, as do sweeps of distinct vertices, with
    their storing lanes found through a table of the writes or by a search."""
    monkeypatch.setattr(expansion, "_TABLE_PER_WRITE", table_per_write)
    graph = load_graph("road:rows=12,cols=12,seed=3")
    indptr = graph.indptr
    strategy = Strategy.parse(text)
    device = get_device("h100-datasheet")

    def sweep(active, writers):
        writes = np.concatenate([np.arange(indptr[v], indptr[v + 1]) for v in writers])
        return engine.Launch(np.array(active), writes)

    overlapping = [sweep(range(0, 21), range(5, 10)), sweep(range(5, 31), range(20, 26)),
                   sweep(range(40, 61), range(40, 61))]
    disjoint = [sweep(range(0, 21), range(5, 10)), sweep(range(30, 51), range(30, 40))]
    layout = layout_module.task_layout(graph.n, strategy, device)
    for launches in overlapping, disjoint:
        together = engine.sweep_kernels(indptr, graph.indices, launches, strategy, device,
                                        layout=layout, hit_rate=0.25)
        for launch, cost in zip(launches, together, strict=True):
            alone = engine.vertex_kernel(indptr, graph.indices, launch, strategy, device,
                                         layout=layout, hit_rate=0.25)
            for field in dataclasses.fields(cost):
                if field.name != "pushed":
                    assert np.allclose(getattr(cost, field.name), getattr(alone, field.name),
                                       rtol=1e-12, atol=0), field.name


def test_runs_of_small_sweeps_match_sweeps_alone(monkeypatch):
    """A road graph's many small BFS levels, costed in runs (``driver._BATCH_ACTIVE``) and
    one by one: the same figures."""
    from simulator import driver

    graph = load_graph("road:rows=60,cols=60,seed=1")
    fr = functional_run(graph, "bfs")
    assert len(fr.iterations) > 40
    for text in ("mapping=thread", "mapping=vwarp,w=8", "mapping=adaptive",
                 "mapping=thread,donate_threshold=2"):
        together = simulate(graph, "bfs", text, "h100-datasheet", functional=fr, trace=True)
        monkeypatch.setattr(driver, "_BATCH_ACTIVE", 0)
        alone = simulate(graph, "bfs", text, "h100-datasheet", functional=fr, trace=True)
        monkeypatch.undo()
        _assert_same(together, alone)


def test_a_paths_sweeps_are_batched_within_a_bounded_schedule(monkeypatch):
    """A path's levels, one vertex each, had gone 65536 sweeps to a batch, each scheduled
    over every item of the layout: 26 GB on a 50000-vertex path at W = 32, dynamic (probe
    PERF). A batch now holds at most ``_BATCH_SWEEP_ITEMS`` sweeps x items; the figures are
    those of sweeps costed alone, and of batches of any size."""
    from simulator import driver

    n = 3000
    graph = Graph.from_edges(np.arange(n - 1), np.arange(1, n), n, name="path")
    fr = functional_run(graph, "bfs", source=0)
    text = "mapping=vwarp,w=32,distribution=dynamic"
    sizes = []
    real = driver.Launcher.sweeps

    def counted(self, launches, strategy):
        sizes.append(len(launches))
        return real(self, launches, strategy)

    monkeypatch.setattr(driver.Launcher, "sweeps", counted)
    monkeypatch.setattr(driver, "_BATCH_SWEEP_ITEMS", 100 * n)
    bounded = simulate(graph, "bfs", text, "h100-datasheet", functional=fr, trace=True)
    assert max(sizes) <= 100 and sum(sizes) == len(fr.iterations) == n
    monkeypatch.setattr(driver, "_BATCH_SWEEP_ITEMS", 1 << 40)
    _assert_same(simulate(graph, "bfs", text, "h100-datasheet", functional=fr, trace=True),
                 bounded)
    monkeypatch.setattr(driver, "_BATCH_ACTIVE", 0)
    _assert_same(simulate(graph, "bfs", text, "h100-datasheet", functional=fr, trace=True),
                 bounded)


@pytest.mark.parametrize("algorithm", ["sssp", "cc"])
def test_runs_of_small_lowering_sweeps_match_sweeps_alone(monkeypatch, algorithm):
    """SSSP's and CC's small sweeps (atomicMin stores, their storing lanes found wave by
    wave) costed in runs and one by one: the same figures; deferral's outlier kernels and
    donation's whole blocks included."""
    from simulator import driver

    graph = load_graph("road:rows=50,cols=50,seed=2,weights=random")
    fr = functional_run(graph, algorithm)
    small = [it.active.size for it in fr.iterations if it.active.size <= driver._BATCH_ACTIVE]
    assert len(small) > 10
    for text in ("mapping=thread", "mapping=vwarp,w=8", "mapping=thread,defer_threshold=3",
                 "mapping=wer+", "mapping=thread,donate_threshold=2", "mapping=adaptive"):
        together = simulate(graph, algorithm, text, "h100-datasheet", functional=fr, trace=True)
        monkeypatch.setattr(driver, "_BATCH_ACTIVE", 0)
        alone = simulate(graph, algorithm, text, "h100-datasheet", functional=fr, trace=True)
        monkeypatch.undo()
        _assert_same(together, alone)


def test_sweep_kernels_refuse_sweeps_with_and_without_storing_lanes():
    graph = load_graph("grid2d:rows=8,cols=8")
    fr = functional_run(graph, "bfs")
    strategy = Strategy()
    device = get_device("h100-datasheet")
    work = fr.iterations[1]
    plain = engine.Launch(work.active, work.writes)
    given = engine.Launch(work.active, work.writes, store_lanes=np.zeros(1, dtype=np.int64))
    with pytest.raises(ValueError, match="storing lanes"):
        engine.sweep_kernels(graph.indptr, graph.indices, [plain, given], strategy, device,
                             layout=layout_module.task_layout(graph.n, strategy, device),
                             hit_rate=0.0)


def test_sweep_kernels_refuse_launches_that_push():
    graph = load_graph("grid2d:rows=8,cols=8")
    fr = functional_run(graph, "bfs")
    strategy = Strategy()
    device = get_device("h100-datasheet")
    launch = engine.Launch(fr.iterations[0].active, fr.iterations[0].writes, push="atomic")
    with pytest.raises(ValueError, match="plain sweeps"):
        engine.sweep_kernels(graph.indptr, graph.indices, [launch], strategy, device,
                             layout=layout_module.task_layout(graph.n, strategy, device),
                             hit_rate=0.0)


def test_total_cost_adds_launches_in_turn():
    """A run's total: every counter, the bounds' rows and the pushed items as adding the
    launches' costs one after another gives them."""
    from simulator.costs import LaunchCost
    from simulator.costs import total_cost

    graph = load_graph("road:rows=30,cols=30,seed=3")
    fr = functional_run(graph, "bfs")
    for text in ("mapping=vwarp,w=4", "mapping=thread,driven=data,push=atomic"):
        costs = [it.cost for it in iteration_costs(fr, Strategy.parse(text),
                                                   get_device("h100-datasheet"))]
        folded = LaunchCost()
        for cost in costs:
            folded = folded + cost
        total = total_cost(costs)
        for field in dataclasses.fields(LaunchCost):
            if field.name == "pushed":
                assert (total.pushed is None) == (folded.pushed is None)
                continue
            assert np.array_equal(getattr(total, field.name), getattr(folded, field.name))


def test_sweep_layouts_are_kept_by_shape_and_reused_alike(monkeypatch):
    """A sweep layout (and the clean sweeps it keeps) is shared by runs of one shape and
    slot count, a few at most; runs that reuse it give the figures fresh ones give: BFS and
    SSSP (another L2 hit rate), static and dynamic distribution, another graph of the same
    size, each against a run with nothing kept."""
    monkeypatch.setattr(layout_module, "_SWEEP_LAYOUTS", {})
    monkeypatch.setattr(layout_module, "SWEEP_LAYOUTS_KEPT", 2)
    monkeypatch.setattr(timing, "CLEAN_SWEEPS_KEPT", 2)
    device = get_device("h100-datasheet")
    w32 = Strategy.parse("mapping=vwarp,w=32")
    same_shape = Strategy.parse("mapping=vwarp,w=32,distribution=dynamic,block_size=128")
    kept = layout_module.sweep_layout(500, w32, device)
    assert layout_module.sweep_layout(500, same_shape, device) is kept
    assert layout_module.sweep_layout(501, w32, device) is not kept
    layout_module.sweep_layout(500, Strategy.parse("mapping=vwarp,w=8"), device)
    assert len(layout_module._SWEEP_LAYOUTS) == 2
    assert layout_module.sweep_layout(500, w32, device) is not kept  # the oldest went

    # an L2 of a few kB: BFS's and SSSP's working sets hit it at different rates; a few SMs:
    # several rounds of blocks, the clean ones' times among them
    small_l2 = dataclasses.replace(device, l2_bytes=4096, sms=4)

    def fresh(graph, algorithm, strategy):
        monkeypatch.setattr(layout_module, "_SWEEP_LAYOUTS", {})
        return simulate(graph, algorithm, strategy, small_l2)

    graphs = [load_graph("road:rows=20,cols=25,seed=1,weights=random"),
              load_graph("road:rows=25,cols=20,seed=3,weights=random")]
    assert graphs[0].n == graphs[1].n
    runs = [(graph, algorithm, strategy) for graph in graphs for algorithm in ("bfs", "sssp")
            for strategy in ("mapping=vwarp,w=32", "mapping=vwarp,w=32,distribution=dynamic",
                             "mapping=thread", "mapping=vwarp,w=32,defer_threshold=2")]
    want = [fresh(*run).time_us for run in runs]
    monkeypatch.setattr(layout_module, "_SWEEP_LAYOUTS", {})
    for _ in range(2):  # in the order given, then again: each run meets what others kept
        assert [simulate(*run, small_l2).time_us for run in runs] == want
    shared = layout_module.sweep_layout(graphs[0].n, w32, small_l2)
    assert 0 < len(shared.cache) <= 2


def test_kept_recent_keeps_the_last_asked_for():
    """Only the values last asked for stay (a value asked for again counts as new); one that
    no longer holds is worked out again."""
    from simulator.functional import kept_recent

    cache, worked = {}, []

    def ask(key, holds=lambda value: True):
        return kept_recent(cache, key, lambda: worked.append(key) or f"{key}{len(worked)}", 2,
                           holds)

    assert [ask("a"), ask("b"), ask("a"), ask("c")] == ["a1", "b2", "a1", "c3"]
    assert list(cache) == ["a", "c"]  # b, the oldest asked for, went
    assert ask("b") == "b4" and list(cache) == ["c", "b"]
    assert ask("c", holds=lambda value: False) == "c5" and worked == ["a", "b", "c", "b", "c"]
