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
