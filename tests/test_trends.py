"""The papers' headline trends on graphs shaped like theirs."""

import pytest

from simulator import functional_run
from simulator import simulate

load_graph = pytest.importorskip("simulator.load").load_graph


def best_time(g, fr, strategies, device="h100-datasheet"):
    return min(simulate(g, "bfs", s, device, functional=fr).time_us for s in strategies)


def test_virtual_warps_recover_the_baseline_on_rmat():
    g = load_graph("rmat:scale=16,seed=1")
    fr = functional_run(g, "bfs")
    baseline = simulate(g, "bfs", {"mapping": "thread"}, "gtx260", functional=fr).time_us
    vwarps = [{"mapping": "vwarp", "w": w} for w in (2, 4, 8, 16, 32)]
    assert baseline >= 2 * best_time(g, fr, vwarps, "gtx260")


def test_wide_virtual_warps_waste_lanes_on_grids():
    g = load_graph("grid2d:rows=128,cols=128")
    fr = functional_run(g, "bfs")
    w4 = simulate(g, "bfs", {"mapping": "vwarp", "w": 4}, functional=fr)
    w32 = simulate(g, "bfs", {"mapping": "vwarp", "w": 32}, functional=fr)
    assert w32.time_us > w4.time_us
    assert w32.u_a > w4.u_a
