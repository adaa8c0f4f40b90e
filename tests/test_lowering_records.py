"""``pushes._lowering``'s records (neighbour passes, then ranks of what is left) against
ranking every shared lane (``_RECORD_PASSES = 0``, the reference)."""

from __future__ import annotations

import numpy as np
import pytest

from simulator import functional_run
from simulator import load_graph
from simulator import pushes
from simulator import simulate


@pytest.mark.parametrize("seed", range(40))
def test_records_match_ranking_every_lane(monkeypatch, seed: int) -> None:
    """Random stores (ties, repeated steps, lanes in and out of order): the same pushers
    with 1-5 neighbour passes as with none; some cases settle within the passes, others
    leave lanes to rank (both asserted over the seeds' cases)."""
    rng = np.random.default_rng(seed)
    settled = ranked = 0
    calls = []
    real = pushes.dense_ranks
    monkeypatch.setattr(pushes, "dense_ranks",
                        lambda values: calls.append(values.size) or real(values))
    for trial in range(30):
        n = int(rng.integers(2, 3000))
        step = rng.integers(0, int(rng.integers(1, 20)), n)
        target = rng.integers(0, int(rng.integers(1, 60)), n)
        value = rng.integers(0, int(rng.integers(1, 40)), n).astype(np.float64)
        lanes = np.sort(rng.choice(10 * n, n, replace=False))
        if trial % 2:
            lanes = rng.permutation(lanes)
        monkeypatch.setattr(pushes, "_RECORD_PASSES", 0)
        want = pushes.lowering_stores(step, target, value, lanes)
        want_winners = pushes.lowering_winners(step, target, value)
        monkeypatch.setattr(pushes, "_RECORD_PASSES", int(rng.integers(1, 6)))
        calls.clear()
        got = pushes.lowering_stores(step, target, value, lanes)
        settled += not calls
        ranked += bool(calls)
        assert np.array_equal(got, want)
        assert np.array_equal(pushes.lowering_winners(step, target, value), want_winners)
    assert settled or ranked


def test_records_cases_occur() -> None:
    """Both of ``_records``' ways occur: settled by the passes, and ranked after them."""
    rising = np.arange(10, dtype=np.float64)  # every lane after the first beaten at once
    first = np.zeros(10, dtype=bool)
    first[0] = True
    assert pushes._records(rising, first).tolist() == [0]
    # 9, 0, 8, 7, ..., 1: one lane beaten a pass, more passes than allowed
    slow = np.array([9.0, 0.0, 8, 7, 6, 5, 4, 3, 2, 1])
    assert pushes._records(slow, first).tolist() == [0, 1]
    first[5] = True
    assert pushes._records(slow, first).tolist() == [0, 1, 5, 6, 7, 8, 9]


@pytest.mark.parametrize("strategy", ["mapping=vwarp,w=8,driven=data,push=chunked",
                                      "mapping=thread,driven=data,push=atomic"])
def test_records_leave_simulated_times(monkeypatch, strategy: str) -> None:
    """A data-driven SSSP simulation on an R-MAT graph (targets stored many times) times
    the same with the neighbour passes as with ranking every shared lane."""
    graph = load_graph("rmat:scale=11,ef=8,weights=random,seed=3")
    fr = functional_run(graph, "sssp")
    monkeypatch.setattr(pushes, "_RECORD_PASSES", 0)
    want = simulate(graph, "sssp", strategy, "h100", functional=fr)
    monkeypatch.setattr(pushes, "_RECORD_PASSES", 4)
    got = simulate(graph, "sssp", strategy, "h100", functional=fr)
    assert got.time_us == want.time_us
    assert got.iterations == want.iterations


def test_lowerings_of_two_warps_race_in_their_arrival_order() -> None:
    """Two warps' atomicMins on one target in the same step of their units race at the L2
    in the order their pushes reach the tail (``arrival_order``: concurrent warps in the
    fixed scramble of their unit ids), not in unit order. Units 1 and 2 (their hashes
    2654435761 and 1013904226: unit 2 first) each lower target 7 in their first step,
    unit 1 to 3, unit 2 to 5: unit 2's 5 lands first and lowers, then unit 1's 3 lowers
    again: both push. In unit order unit 1's 3 came first and unit 2's 5 did not push."""
    unit = np.array([1, 2])
    step = np.array([1, 2])  # global steps: unit 0 owns step 0, unit 1 step 1, unit 2 step 2
    first = np.array([0, 1, 2])
    target = np.array([7, 7])
    value = np.array([3.0, 5.0])
    assert pushes.racing_lowerings(unit, step, target, value, 8, first).tolist() == [0, 1]
    assert pushes.lowering_winners(step, target, value).tolist() == [0]
    # the values the other way round: unit 2's 3 lands first, unit 1's 5 no longer lowers
    assert pushes.racing_lowerings(unit, step, target, value[::-1].copy(), 8,
                                   first).tolist() == [1]
    # a later wave arrives after the earlier wave's every step: with one unit resident a
    # wave, unit 1 (wave 1) before unit 2 (wave 2), so unit 1's 3 first: one push
    assert pushes.racing_lowerings(unit, step, target, value, 1, first).tolist() == [0]
    # a warp's own lanes in one step keep lane order
    unit, step, first = np.array([0, 0]), np.array([0, 0]), np.array([0])
    assert pushes.racing_lowerings(unit, step, np.array([7, 7]), np.array([3.0, 5.0]), 8,
                                   first).tolist() == [0]


@pytest.mark.parametrize("seed", range(12))
def test_racing_lowerings_are_the_records_in_arrival_order(seed: int) -> None:
    """Random lanes (several units, steps, waves, targets, ties): the lanes that push are
    those whose value is below every earlier one of their target in ``arrival_order``,
    counted one lane at a time in plain Python; given out of lane order with their lanes,
    the same lanes."""
    rng = np.random.default_rng(seed)
    units = int(rng.integers(2, 30))
    unit_steps = rng.integers(1, 5, units)
    first = np.cumsum(unit_steps) - unit_steps
    n = int(rng.integers(2, 400))
    unit = np.sort(rng.integers(0, units, n))
    step = np.sort(first[unit] + rng.integers(0, unit_steps[unit]))
    order = np.lexsort((step, unit))
    unit, step = unit[order], step[order]
    target = rng.integers(0, int(rng.integers(1, 12)), n)
    value = rng.integers(0, 9, n).astype(np.float64)
    resident = int(rng.integers(1, units + 2))
    arrival = pushes.arrival_order(unit, step, "atomic", resident, first)
    best: dict[int, float] = {}
    want = []
    for lane in arrival.tolist():
        if value[lane] < best.get(int(target[lane]), np.inf):
            best[int(target[lane])] = value[lane]
            want.append(lane)
    got = pushes.racing_lowerings(unit, step, target, value, resident, first)
    assert got.tolist() == sorted(want)
    lanes = np.sort(rng.choice(10 * n, n, replace=False))
    shuffled = rng.permutation(n)
    again = pushes.racing_lowerings(unit[shuffled], step[shuffled], target[shuffled],
                                    value[shuffled], resident, first, lanes[shuffled])
    assert sorted(shuffled[again].tolist()) == sorted(want)


def test_cc_first_worklist_pushes_race_across_warps() -> None:
    """CC's first launch expands every vertex, whose labels rise with the lane order: in
    unit order only each target's first lowering lane of a step pushed; racing in arrival
    order, later-hashed warps' lower labels push again, so the next worklist holds more
    duplicates (on the H200, ca-AstroPh's `data vw32`: 55,771 entries, the model 27,047
    in unit order, 58,623 racing; bench/gpu/results/h200_sweep_profiles.txt)."""
    graph = load_graph("rmat:scale=10,ef=8,seed=5")
    config = "mapping=vwarp,w=32,driven=data,push=atomic"
    fr = functional_run(graph, "cc")
    racing = simulate(graph, "cc", config, "h100", functional=fr, trace=True)
    distinct = int(racing.trace["worklist"][0])
    assert racing.trace["worklist"][1] > distinct  # duplicates: several pushes a target
    assert np.array_equal(racing.output, fr.output)
