"""Per-step counts that the fast paths take without sorting every lane (the outlier kernel's
rows of lanes, racing stores through a table, units' key ranges from their sizes) against
counts by definition, with plain Python sets."""

import dataclasses

import numpy as np
import pytest

from simulator import auxiliary_kernels
from simulator import edge_work
from simulator import get_device
from simulator import sectors
from simulator import simulate
from simulator.auxiliary_kernels import outlier_kernel
from simulator.engine import Launch
from simulator.pushes import lowering_stores
from simulator.pushes import racing_stores
from simulator.pushes import racing_winners
from simulator.strategy import Strategy
from simulator.timing import kernel_cycles
from tests.conftest import skewed_graph


def _outlier_unit_sectors(indptr, indices, vertices, writes, block, ws, words, weights,
                          lowers=False, gathers=False):
    """Sectors of the outlier kernel's (vertex, warp) units by definition, from
    ``tuner/measure/kernels.cu``'s ``expand_outliers``: each warp reads the queue entry and
    the vertex's two row bounds (3; a lowering kernel's warp also clears the vertex's flag
    and reads its value: 5); per warp step (a round of one warp) the distinct sectors of its
    edge ids, of its neighbours' values (8-byte shares where it gathers) and of its storing
    lanes' neighbours (atomicMin and the flag: twice where it lowers), and of the edge ids
    again for weights; a gathering kernel's first thread stores and reads 4 doubles."""
    writes = set(writes.tolist())
    warps = block // ws
    units = [3 + (2 if lowers else 0)] * (vertices.size * warps)
    for unit in range(vertices.size * warps):  # the queue's length, a warp of each block
        units[unit] += 1  # (the hubs here are fewer than the resident blocks)
    value_words = words // 2 if gathers else words
    for i, v in enumerate(vertices.tolist()):
        units[i * warps] += 4 if gathers else 0
        start, degree = int(indptr[v]), int(indptr[v + 1] - indptr[v])
        for local0 in range(0, degree, ws):  # a step: ws consecutive edges of one warp
            edges = range(start + local0, start + min(local0 + ws, degree))
            unit = i * warps + (local0 % block) // ws
            units[unit] += len({e // words for e in edges}) * (2 if weights else 1)
            units[unit] += len({int(indices[e]) // value_words for e in edges})
            units[unit] += len({int(indices[e]) // value_words for e in edges
                                if e in writes}) * (2 if lowers else 1)
    return units


@pytest.mark.parametrize("block", [32, 128, 256])
@pytest.mark.parametrize("sector_bytes", [32, 128])
@pytest.mark.parametrize("weights,lowers,gathers", [(False, False, False),
                                                    (True, True, False),
                                                    (False, True, False),
                                                    (False, False, True)])
def test_outlier_kernel_sectors_by_definition(monkeypatch, block, sector_bytes, weights,
                                              lowers, gathers):
    """The outlier kernel's sectors per unit, counted per step in edge order, are the distinct
    sectors each of the unit's warp steps touches, on hubs of many degrees (partial last steps
    included); the work it times is the work it counts. Its atomics: a lowering lane's
    atomicMin each, a gathering block's change sum (probe HC: none had been counted)."""
    timed = []

    def record(unit_work, *args, **kwargs):
        timed.append(unit_work.sectors.copy())
        return kernel_cycles(unit_work, *args, **kwargs)

    monkeypatch.setattr(auxiliary_kernels, "kernel_cycles", record)
    graph = skewed_graph(400, 6000, 7)
    degree = np.diff(graph.indptr)
    vertices = np.flatnonzero(degree > 20)
    assert vertices.size > 3 and (degree[vertices] % 32).any()
    rng = np.random.default_rng(block + sector_bytes)
    writes = (np.zeros(0, dtype=np.int64) if gathers
              else np.flatnonzero(rng.random(graph.indices.size) < 0.3))
    device = dataclasses.replace(get_device("h100-datasheet"), sector_bytes=sector_bytes)
    cost = outlier_kernel(graph.indptr, graph.indices, vertices,
                          Launch(active=vertices, writes=writes),
                          Strategy.parse(f"mapping=thread,defer_threshold=20,block_size={block}"),
                          device, reads_weights=weights, lowers=lowers, gathers=gathers)
    want = _outlier_unit_sectors(graph.indptr, graph.indices, vertices, writes, block,
                                 device.warp_size, sector_bytes // 4, weights, lowers, gathers)
    assert timed[0].tolist() == want
    assert cost.transactions == sum(want)
    edges = set().union(*(range(int(graph.indptr[v]), int(graph.indptr[v + 1]))
                          for v in vertices.tolist()))
    lowering = len(edges & set(writes.tolist())) if lowers else 0
    assert cost.atomics == lowering + (vertices.size if gathers else 0)


def _racing_by_definition(step, target, lanes):
    first = {}
    for s, t in zip(step.tolist(), target.tolist(), strict=True):
        first[t] = min(first.get(t, s), s)
    return sorted(lane for lane, s, t in zip(lanes.tolist(), step.tolist(), target.tolist(),
                                             strict=True) if s == first[t])


@pytest.mark.parametrize(("stores", "targets", "first_step"),
                         [(2000, 50, 0), (2000, 50, 2**31), (30, 10**6, 0)])
def test_racing_stores_by_table_or_sort(stores, targets, first_step):
    """Every lane of a target's first storing step pushes it, whether the launch has many
    stores for few targets (a table of first steps, int32 or, for steps past 2^31, int64)
    or few for many (a sort)."""
    rng = np.random.default_rng(stores)
    lanes = np.sort(rng.choice(10 * stores, stores, replace=False))
    step = first_step + rng.integers(0, stores // 3 + 1, stores)
    target = rng.integers(0, targets, stores)
    got = racing_stores(step, target, lanes)
    assert got.tolist() == _racing_by_definition(step, target, lanes)
    got = np.sort(lanes[racing_winners(step, target.astype(np.int32))])
    assert got.tolist() == _racing_by_definition(step, target, lanes)


def test_lowering_stores_are_running_minima():
    """An atomicMin lane pushes its target when its value is below every value stored to it
    before, in (step, lane) order: checked against a walk through the stores in that order,
    with ties, repeated steps and lanes given out of order."""
    rng = np.random.default_rng(5)
    stores = 3000
    lanes = rng.permutation(np.sort(rng.choice(10 * stores, stores, replace=False)))
    step = rng.integers(0, 400, stores)
    target = rng.integers(0, 200, stores)
    value = rng.integers(0, 40, stores).astype(np.float64)
    lowest = {}
    want = []
    for i in sorted(range(stores), key=lambda i: (step[i], lanes[i])):
        t = int(target[i])
        if t not in lowest or value[i] < lowest[t]:
            lowest[t] = value[i]
            want.append(int(lanes[i]))
    got = lowering_stores(step, target, value, lanes)
    assert got.tolist() == sorted(want)
    assert len(want) > len(lowest)  # later steps did lower some targets again


def test_row_and_step_distinct_count_sets():
    """Distinct sectors per row of lanes (idle lanes -1) and per step of lanes in any order
    (the outlier kernel's storing lanes: steps as their own units)."""
    rng = np.random.default_rng(2)
    rows = rng.integers(0, 9, (300, 32))
    rows[rng.random(rows.shape) < 0.3] = -1
    rows[0] = -1
    rows[0, 5] = 4
    want = [len(set(r.tolist()) - {-1}) for r in rows]
    assert sectors.row_distinct(rows.copy()).tolist() == want
    step = rng.integers(0, 50, 2000)
    sector = rng.integers(0, 30, 2000)
    want = np.zeros(60, dtype=np.int64)
    for s, _ in set(zip(step.tolist(), sector.tolist(), strict=True)):
        want[s] += 1
    per_step = sectors.padded_counts(sectors.distinct_sectors(step, sector, 1), 60)
    assert per_step.tolist() == want.tolist()
    empty = sectors.padded_counts(sectors.distinct_sectors(step[:0], sector[:0], 1), 4)
    assert not empty.any()


@pytest.mark.parametrize("range_count_from", [0, 1 << 16])
def test_unit_sizes_give_the_searched_ranges(monkeypatch, range_count_from):
    """A caller's per-unit element counts stand in for the search of each unit's key range."""
    monkeypatch.setattr(sectors, "_RANGE_COUNT_FROM", range_count_from)
    rng = np.random.default_rng(4)
    unit_of_step = np.repeat(np.arange(40), rng.integers(0, 4, 40))
    group = rng.integers(0, unit_of_step.size, 2500)
    sector = rng.integers(0, 25, 2500)
    sizes = np.bincount(unit_of_step[group], minlength=40)
    want = sectors.distinct_sectors(group.copy(), sector, unit_of_step)
    got = sectors.distinct_sectors(group.copy(), sector, unit_of_step, unit_sizes=sizes)
    assert got.tolist() == want.tolist() and want.sum() > 0


def _lockstep_list_sectors_by_definition(start, end, slots, w, k, c, units, words):
    """Per unit, the distinct (step, sector) pairs of the edge-list reads: step j of a slot's
    position takes words start + jW .. of each of the position's K virtual warps."""
    per_unit = k * c
    pairs = [set() for _ in range(units)]
    for s, a, b in zip(slots.tolist(), start.tolist(), end.tolist(), strict=True):
        unit, position = s // per_unit, s % c
        for e in range(a, b):
            pairs[unit].add((position, (e - a) // w, e // words))
    return [len(p) for p in pairs]


@pytest.mark.parametrize(("w", "c"), [(1, 1), (2, 1), (4, 3), (8, 1), (8, 5), (16, 2), (32, 1),
                                      (32, 4)])
@pytest.mark.parametrize("words", [8, 4])
def test_lockstep_list_sectors_count_each_steps_sectors_once(w, c, words):
    """Short, adjacent edge lists (degree 0-9) make neighbouring virtual warps share sectors
    in their first steps; the closed form takes each shared sector back exactly once."""
    rng = np.random.default_rng(w * 100 + c + words)
    k = 32 // w
    units = 30
    slots = np.flatnonzero(rng.random(units * k * c) < 0.7)
    degree = rng.integers(0, 10, slots.size)
    degree[rng.random(slots.size) < 0.1] = rng.integers(10, 80)
    gaps = rng.integers(0, 3, slots.size) * (rng.random(slots.size) < 0.3)
    start = np.cumsum(degree + gaps) - degree
    end = start + degree
    got = sectors.lockstep_list_sectors(start, end, slots, w=w, k=k, c=c, units=units,
                                        words_per_sector=words)
    want = _lockstep_list_sectors_by_definition(start, end, slots, w, k, c, units, words)
    assert got.tolist() == want and sum(want) > 0


def test_lockstep_list_sectors_hand_count():
    """Thread mapping, one unit of 32 lanes, 8-word sectors; lanes 0-2 expand words 0-2
    (degree 1 each) and words 3-12 (lane 3, degree 10). Step 0 reads words 0, 1, 2, 3: one
    sector. Steps 1-4 read words 4-7 (sector 0), steps 5-9 words 8-12 (sector 1): nine more."""
    start, end = np.array([0, 1, 2, 3]), np.array([1, 2, 3, 13])
    got = sectors.lockstep_list_sectors(start, end, np.arange(4), w=1, k=32, c=1, units=1,
                                        words_per_sector=8)
    assert got.tolist() == [10]


@pytest.mark.parametrize("text", ["mapping=thread", "mapping=vwarp,w=4",
                                  "mapping=vwarp,w=8,chunk=3", "mapping=vwarp,w=32",
                                  "mapping=vwarp,w=32,chunk=3", "mapping=vwarp,w=32,driven=data",
                                  "mapping=vwarp,w=2,driven=data",
                                  "mapping=thread,defer_threshold=40",
                                  "mapping=thread,donate_threshold=2",
                                  "mapping=thread,donate_threshold=0,block_size=96",
                                  "mapping=wer", "mapping=wer+", "mapping=wer+,chunk=4",
                                  "mapping=vwarp,w=16,chunk=2,distribution=dynamic",
                                  "driven=spatial,partition=4",
                                  "driven=temporal,switch_to_topology=0.1", "mapping=adaptive",
                                  "mapping=vwarp,w=8,driven=data,push=chunked",
                                  "mapping=vwarp,w=4,chunk=3,driven=data",
                                  "mapping=thread,driven=data,push=atomic"])
def test_closed_form_list_reads_match_the_key_sort(monkeypatch, text):
    """The edge-list reads counted per vertex in closed form (a donation box's drain rounds
    and redistributed steps by their runs, a worklist's vertices put in order step by step,
    copies dropped) give every figure that the sort of all lanes' keys gives."""
    graph = skewed_graph(600, 9000, 11, weights=True)
    results = {}
    for threshold in (0, 1 << 62):
        monkeypatch.setattr(edge_work, "_CLOSED_FORM_FROM", threshold)
        monkeypatch.setattr(edge_work, "_UNORDERED_CLOSED_FORM_FROM", threshold)
        for algorithm in ("bfs", "sssp"):
            r = simulate(graph, algorithm, text, "h100-datasheet")
            results[threshold, algorithm] = (r.to_dict(), r.bounds)
    for algorithm in ("bfs", "sssp"):
        fast, slow = results[0, algorithm], results[1 << 62, algorithm]
        assert fast[0] == slow[0] and np.array_equal(fast[1], slow[1])
