"""Racing plain stores (relax=store, simulator/store_races.py): which lowerings a wave loses,
the verify sweeps that repair them, and outputs still equal to the references."""

import numpy as np
import pytest
from references import assert_cc_labels
from references import sssp_distances

from simulator import load_graph
from simulator import simulate
from simulator import store_races
from simulator.store_races import race_draw
from simulator.store_races import surviving_stores
from simulator.store_races import unrelaxed_sources


def test_a_race_between_warps_keeps_the_last_warps_store():
    """Target 4, step 0: warp 0 stores 3, warp 1 stores 6 and 5. A lost race leaves warp
    1's lanes (its lowest, 5, holds: the update to 3 is lost); a race not lost keeps all.
    Target 7 is stored at steps 0 and 1: no race. Target 9: the last warp stores the
    lowest, so nothing is lost either way. Target 11: both lanes in one warp: no race."""
    targets = np.array([4, 4, 4, 7, 7, 9, 9, 11, 11])
    steps = np.array([0, 0, 0, 0, 1, 0, 0, 2, 2])
    warps = np.array([0, 1, 1, 2, 3, 0, 1, 5, 5])
    values = np.array([3.0, 6.0, 5.0, 2.0, 1.0, 5.0, 2.0, 4.0, 8.0])
    lost = surviving_stores(targets, steps, warps, values, True)
    assert lost.tolist() == [False, True, True, True, True, True, True, True, True]
    assert surviving_stores(targets, steps, warps, values, False).all()
    # the draw decides per target: only target 4's race is lost here
    per_lane = targets == 4
    assert surviving_stores(targets, steps, warps, values, per_lane).tolist() == lost.tolist()


def test_lanes_given_in_any_order_survive_alike():
    rng = np.random.default_rng(3)
    targets = rng.integers(0, 20, 300)
    steps = rng.integers(0, 3, 300)
    warps = rng.integers(0, 6, 300)
    values = rng.random(300)
    keep = surviving_stores(targets, steps, warps, values, True)
    shuffle = rng.permutation(300)
    again = surviving_stores(targets[shuffle], steps[shuffle], warps[shuffle],
                             values[shuffle], True)
    assert np.array_equal(again, keep[shuffle])
    assert 0 < (~keep).sum() < 300


def test_race_draws_are_reproducible_and_uniform():
    targets = np.arange(200_000)
    first = race_draw(targets, 7)
    assert np.array_equal(first, race_draw(targets, 7))
    assert not np.array_equal(first, race_draw(targets, 8))
    assert first.min() >= 0 and first.max() < 1
    assert abs((first < 0.5).mean() - 0.5) < 0.01
    assert abs((first < 0.1).mean() - 0.1) < 0.01


def test_unrelaxed_sources_against_every_edge():
    g = load_graph("random:n=300,deg=6,weights=random,seed=2")
    values = sssp_distances(g, 0).copy()
    rng = np.random.default_rng(0)
    raised = rng.choice(g.n, 20, replace=False)
    values[raised] += 5.0
    expected = sorted({int(u) for u in range(g.n)
                       for e in range(g.indptr[u], g.indptr[u + 1])
                       if values[u] + g.weights[e] < values[g.indices[e]]})
    found = unrelaxed_sources(g.indptr, g.indices, values, g.weights)
    assert found.tolist() == expected and expected
    exact = sssp_distances(g, 0)
    assert unrelaxed_sources(g.indptr, g.indices, exact, g.weights).size == 0


@pytest.fixture(scope="module")
def racy():
    """A graph whose wide virtual warps race: W = 32 lanes a vertex, many vertices a wave."""
    return load_graph("random:n=6000,deg=12,weights=random,seed=5")


def _verify_sweeps(result):
    return list(result.trace["form"]).count("topology")


def test_lost_updates_are_repaired_to_the_exact_distances(racy):
    config = "mapping=vwarp,w=32,driven=data,relax=store"
    result = simulate(racy, "sssp", config, source=0, trace=True)
    np.testing.assert_allclose(result.output, sssp_distances(racy, 0), rtol=1e-6)
    assert _verify_sweeps(result) >= 2  # some update was lost, found and repaired
    again = simulate(racy, "sssp", config, source=0, trace=True)
    assert again.time_us == result.time_us
    assert list(again.trace["worklist"]) == list(result.trace["worklist"])


def test_cc_by_racing_stores_still_finds_the_components(racy):
    result = simulate(racy, "cc", "mapping=vwarp,w=32,driven=data,relax=store", trace=True)
    assert_cc_labels(racy, result.output)


def test_without_losses_one_verify_sweep_finds_nothing(racy, monkeypatch):
    monkeypatch.setattr(store_races, "LOST_RACE_RATE", 0.0)
    config = "mapping=vwarp,w=32,driven=data,relax=store"
    result = simulate(racy, "sssp", config, source=0, trace=True)
    atomic = simulate(racy, "sssp", "mapping=vwarp,w=32,driven=data", source=0, trace=True)
    assert _verify_sweeps(result) == 1 and list(result.trace["form"])[-1] == "topology"
    # the same launches as atomicMin, but for the verify sweep
    assert list(result.trace["worklist"])[:-1] == list(atomic.trace["worklist"])
    np.testing.assert_allclose(result.output, atomic.output)


def test_losses_make_a_store_run_slower_than_atomicmin(racy):
    """Repairs re-run worklist launches: more rounds and more time than atomicMin's run,
    as on the H100 (bench/gpu/results/store_race_fidelity.txt)."""
    store = simulate(racy, "sssp", "mapping=vwarp,w=32,driven=data,relax=store", source=0)
    atomic = simulate(racy, "sssp", "mapping=vwarp,w=32,driven=data", source=0)
    assert store.iterations > atomic.iterations + 1
    assert store.time_us > atomic.time_us
