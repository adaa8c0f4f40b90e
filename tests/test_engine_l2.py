"""The L2, block-launch and instruction-time terms of the cost model against counts done on
paper, and the per-launch bounds that calibration refits (their parts must add up to the
simulated cycles)."""

import dataclasses
import math

import numpy as np
import pytest
from hand_counted import SERIAL
from hand_counted import star_graph

from simulator import Strategy
from simulator import functional_run
from simulator import get_device
from simulator import load_graph
from simulator import simulate
from simulator.costs import BOUND_NAMES
from simulator.engine import vertex_kernel
from simulator.engine import working_set_bytes


@pytest.fixture(scope="module")
def star_bfs():
    # vertex 0 joined to 1..40, 41..63 isolated: 64 vertices, 80 directed edges
    star = star_graph()
    return functional_run(star, "bfs", source=0)


def hub_launch(run, device):
    return vertex_kernel(run.indptr, run.indices, run.iterations[0], Strategy(block_size=32),
                         device)


def test_working_set():
    # status words 64 + row offsets 65 + edge list 80 = 209 words; SSSP adds 80 weights;
    # worklist forms two worklists of 64.
    assert working_set_bytes(64, 80, reads_weights=False, worklist=False) == 4 * 209
    assert working_set_bytes(64, 80, reads_weights=True, worklist=True) == 4 * (209 + 80 + 128)


def test_hit_rate_and_round_trip():
    l2 = dataclasses.replace(SERIAL, l2_bytes=418, l2_latency_cycles=40)
    assert SERIAL.l2_hit_rate(10**9) == 0.0  # no L2: every access goes to DRAM
    assert l2.l2_hit_rate(400) == 1.0  # fits
    assert l2.l2_hit_rate(836) == 0.5  # half of it stays resident
    assert l2.round_trip_cycles(0.5) == 0.5 * 40 + 0.5 * 100


def test_latency_with_l2(star_bfs):
    # Without L2 (test_engine_hand_counted): warp 0 issues 165 instructions with 82 round
    # trips, warp 1 a check (2) with 1: 165 + 8200 + 2 + 100 = 8467.
    assert hub_launch(star_bfs, SERIAL).cycles == 8467
    # The working set (836 bytes) fits a 1 KB L2: every round trip takes 40 cycles.
    fits = dataclasses.replace(SERIAL, l2_bytes=1024, l2_latency_cycles=40)
    assert hub_launch(star_bfs, fits).cycles == 165 + 82 * 40 + 2 + 40
    # Half of it fits 418 bytes: a round trip takes 70 cycles.
    half = dataclasses.replace(SERIAL, l2_bytes=418, l2_latency_cycles=40)
    assert hub_launch(star_bfs, half).cycles == 165 + 82 * 70 + 2 + 70


def test_memory_bound_splits_dram_and_l2(star_bfs):
    # The hub launch moves 170 sectors of 32 bytes = 5440 bytes (test_engine_hand_counted).
    # At hit rate 0.5, DRAM carries half (2720 bytes at 0.2 bytes/cycle = 13600 cycles) and L2
    # all of it (5440 at 1 byte/cycle = 5440): memory takes 13600 > the latency makespan (5977).
    device = dataclasses.replace(SERIAL, dram_bandwidth_gbs=0.2, l2_bytes=418,
                                 l2_latency_cycles=40, l2_bandwidth_gbs=1.0)
    cost = hub_launch(star_bfs, device)
    assert cost.transactions == 170
    assert cost.cycles == pytest.approx(13600)
    issue, lsu, latency, memory, atomics, overhead = cost.bounds[0]
    assert (latency, memory, atomics, overhead) == (pytest.approx(5977), pytest.approx(13600),
                                                    0, 0)
    # With all of it in L2, DRAM carries nothing and L2 bandwidth bounds the launch.
    fits = dataclasses.replace(device, l2_bytes=1024)
    assert hub_launch(star_bfs, fits).cycles == pytest.approx(5440)


STRATEGIES = [
    "mapping=thread", "mapping=vwarp,w=8,chunk=4,distribution=dynamic",
    "mapping=thread,defer_threshold=16", "driven=data,push=prefix", "driven=data,push=atomic",
    "driven=temporal,switch_to_topology=0.05,switch_to_data=0.01", "mapping=vwarp,w=4,unroll=4",
    "driven=spatial,partition=4", "mapping=wer+,driven=data,push=chunked",
]


@pytest.mark.parametrize("algorithm", ["bfs", "sssp", "cc"])
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_bounds_add_up_to_cycles(algorithm, strategy):
    graph = load_graph("rmat:scale=9,seed=3,weights=random")
    r = simulate(graph, algorithm, strategy, "h100-datasheet")
    assert r.bounds.shape[1] == len(BOUND_NAMES)
    parts = (r.bounds[:, :5].max(axis=1) + r.bounds[:, 5]).sum()
    assert parts + r.host_cycles + r.extra_cycles == pytest.approx(r.cycles, rel=1e-12)
    assert r.host_cycles > 0


def test_block_launch_cycles(star_bfs):
    # block_size 32 on SERIAL: each warp is a block; both blocks pay 50 cycles before their
    # first instruction: 8467 + 2 * 50.
    device = dataclasses.replace(SERIAL, block_launch_cycles=50)
    assert hub_launch(star_bfs, device).cycles == 8467 + 100
    # dynamic distribution launches the resident warp (one here) once: it pays 50 once.
    dyn = Strategy(mapping="vwarp", w=8, chunk=2, distribution="dynamic", block_size=32)
    run = star_bfs
    plain = vertex_kernel(run.indptr, run.indices, run.iterations[0], dyn, SERIAL)
    late = vertex_kernel(run.indptr, run.indices, run.iterations[0], dyn, device)
    assert late.cycles == plain.cycles + 50


def test_instruction_cycles(star_bfs):
    # Two cycles per warp instruction: warp 0's 165 instructions take 330 (plus 82 round
    # trips), warp 1's check 4 (plus 1): 330 + 8200 + 4 + 100.
    device = dataclasses.replace(SERIAL, instruction_cycles=2.0)
    cost = hub_launch(star_bfs, device)
    assert cost.cycles == 330 + 8200 + 4 + 100
    assert cost.bounds[0][0] == 2 * 167  # the issue bound doubles too


def test_a_launch_takes_the_norm_of_its_bounds():
    """Hand count: bounds 3 and 4 (and idle ones) take 5 under the 2-norm, 4 under the
    maximum; a simulated run with bounds_norm = 3 costs, launch by launch, the 3-norm of the
    same bounds the maximum's run has, in place of their maximum."""
    from simulator.timing import combined_bounds

    assert combined_bounds(np.array([3.0, 4.0, 0.0, 0.0, 0.0]), 2.0) == pytest.approx(5.0)
    assert combined_bounds(np.array([3.0, 4.0, 0.0, 0.0, 0.0]), math.inf) == 4.0
    assert combined_bounds(np.zeros(5), 3.0) == 0.0
    g = load_graph("rmat:scale=9,seed=3,weights=random")
    base = get_device("h100-datasheet")
    cubed = dataclasses.replace(base, bounds_norm=3.0)
    for algorithm, config in (("bfs", "mapping=vwarp,w=8"), ("sssp", "mapping=thread")):
        r_max = simulate(g, algorithm, config, base)
        r_3 = simulate(g, algorithm, config, cubed)
        np.testing.assert_array_equal(r_max.bounds, r_3.bounds)
        five = r_max.bounds[:, :5]
        gained = np.sum(np.sum(five ** 3, axis=1) ** (1 / 3) - five.max(axis=1))
        assert gained > 0
        assert r_3.cycles - r_max.cycles == pytest.approx(gained, rel=1e-9)
