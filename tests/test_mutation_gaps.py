"""Tests for gaps that a mutation sample (bench/mutation_sample.py, issue 48) found: mutants
that every earlier test let through although they change a figure."""

import dataclasses

import numpy as np
import pytest
from hand_counted import SERIAL

from simulator import expansion
from simulator import functional_run
from simulator import get_device
from simulator import layout as layout_module
from simulator import load_graph
from simulator import slot_views
from simulator.costs import COSTS
from simulator.strategy import Strategy
from simulator.worklist import scan_launch


# scan_launch over v counters: ceil(v / 1024) rounds of 2 * scan + 2 * barrier + 2 = 16
# instructions for each of 32 warps, 2 round trips (100 cycles on SERIAL) a round, so
# 2 * 100 * rounds + 16 * 32 * rounds cycles; it reads and writes ceil(v / 8) sectors each,
# a request each by every warp with counters to move: 2 * ceil(v / 32) (the last round's
# idle warps only scan).
@pytest.mark.parametrize("values, rounds", [(1024, 1), (1025, 2), (2048, 2), (3073, 4)])
def test_scan_launch_takes_a_round_per_1024_counters(values, rounds):
    cost = scan_launch(values, SERIAL, COSTS, 8)
    assert cost.cycles == 200 * rounds + 512 * rounds
    assert cost.instructions == 512 * rounds
    assert cost.requests == 2 * -(-values // 32)
    assert cost.transactions == 2 * -(-values // 8)


@pytest.mark.parametrize("text", ["mapping=thread,donate_threshold=2",
                                  "mapping=thread,donate_threshold=0,block_size=96"])
def test_donated_edges_take_the_lanes_of_their_place_in_the_step(text):
    """On a narrow-SIMD device that issues only the clusters holding a lane, the lanes of
    donated edges matter: a block's box is drained a warp-size chunk a step, each entry on
    the lane of its place in its chunk, so a step of donated edges holding n of them uses
    lanes 0..n-1 (and those steps hold no thread's own edges)."""
    graph = load_graph("rmat:scale=9,ef=6,seed=4")
    fr = functional_run(graph, "bfs")
    strategy = Strategy.parse(text)
    device = dataclasses.replace(get_device("h100-datasheet"), simd_width=8, cluster_issue=True)
    layout = layout_module.task_layout(graph.n, strategy, device)
    sweeps = [work.active for work in fr.iterations if work.active.size]
    view = slot_views._dirty_view(graph.indptr, sweeps, layout,
                                  strategy.block_size // device.warp_size)
    ends = np.append(view.segments[1:], view.units.size)
    lanes = expansion.expand_lanes(graph.indptr, view, strategy, device, view.segments, ends).lanes
    assert lanes.lane is not None and lanes.given is not None and lanes.given.size
    given_group = lanes.group[lanes.given]
    assert given_group.tolist() == lanes.given_group.tolist()
    own = np.ones(lanes.group.size, dtype=bool)
    own[lanes.given] = False
    assert not np.isin(given_group, lanes.group[own]).any()
    order = np.lexsort((lanes.lane[lanes.given], given_group))
    groups, lane = given_group[order], lanes.lane[lanes.given][order]
    first = np.r_[True, groups[1:] != groups[:-1]]
    place = np.arange(groups.size) - np.maximum.accumulate(np.where(first, np.arange(groups.size),
                                                                    0))
    assert lane.tolist() == place.tolist()
    assert lane.max() < device.warp_size
