"""push=block: a block's warps push in rounds in step, one tail atomic per block a round
(the independent kernels' block push, bench/gpu/independent)."""

import numpy as np
import pytest
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import dijkstra

from simulator import load_graph
from simulator import simulate
from simulator.costs import COSTS
from simulator.device import get_device
from simulator.worklist import PushWork
from simulator.worklist import block_push_rounds
from simulator.worklist import push_cost

H100 = get_device("h100-datasheet")


def _work(items, steps):
    items, steps = np.array(items), np.array(steps)
    zeros = np.zeros(items.size, dtype=np.int64)
    return PushWork(items, steps, (items > 0).astype(np.int64), zeros)


def test_block_push_counted_by_hand():
    """Two blocks of 8 warps (256 threads). Block 0: units with 1 and 2 pushing steps, so
    its 8 warps wait 2 rounds; block 1: one unit with 3, so 3 rounds. A warp issues a block
    scan (scan 5 + 3 barriers of 2 + log2 8 = 14 instructions) in each round of its own
    loop (here its pushing steps) and waits at the barrier through the others; one tail
    atomic a round by the block's first unit, a wait of 2 round trips for it, for every
    warp of the block; a pushing step stores (1 instruction)."""
    items = [1, 0, 40, 0, 0, 0, 0, 0] + [0] * 7 + [3]
    steps = [1, 0, 2, 0, 0, 0, 0, 0] + [0] * 7 + [3]
    cost = push_cost(_work(items, steps), "block", H100, COSTS, block_size=256,
                     words_per_sector=8)
    rounds = np.array([2] * 8 + [3] * 8)
    assert cost.instructions.tolist() == [15, 0, 30] + [0] * 12 + [45]
    assert cost.queue_atomics.tolist() == [2] + [0] * 7 + [3] + [0] * 7
    assert cost.round_trips.tolist() == (2 * rounds).tolist()
    # 1, 0, 5 sectors of stores (items / 8 words, rounded up, and one a pushing step at
    # least: the last unit's 3 items in 3 steps, 3), 0...; plus the atomics' own
    assert cost.sectors.tolist() == [1 + 2, 0, 5] + [0] * 5 + [3] + [0] * 6 + [3]
    assert cost.requests.tolist() == (np.array(steps) + cost.queue_atomics).tolist()


def test_block_push_scans_in_each_warps_own_loop_steps():
    """The kernel's edge loop goes on while any thread of the block has an edge left (a
    barrier a step), and each step runs the block scan, pushes or not; a warp whose own
    edges are done waits at the barrier, issuing next to nothing. Block 0's units take 4, 0,
    2 warp steps and push in 1, 0, 2 of them: 4, 0 and 2 scans of 14 instructions, 2 atomic
    rounds waited for by each of its warps. Block 1 (3 steps, 3 pushing): 3 scans, 3 rounds
    waited. Block 2's unit takes 5 steps and pushes nothing: 5 scans, no atomic, no wait."""
    steps = [1, 0, 2, 0, 0, 0, 0, 0] + [0] * 7 + [3] + [0] * 8
    items = [1, 0, 40, 0, 0, 0, 0, 0] + [0] * 7 + [3] + [0] * 8
    unit_steps = [4, 0, 2, 0, 0, 0, 0, 0] + [0] * 7 + [3] + [5] + [0] * 7
    cost = push_cost(_work(items, steps), "block", H100, COSTS, block_size=256,
                     words_per_sector=8, unit_steps=np.array(unit_steps))
    own_rounds = np.array(unit_steps)
    assert cost.instructions.tolist() == (np.array(steps) + 14 * own_rounds).tolist()
    assert cost.queue_atomics.tolist() == [2] + [0] * 7 + [3] + [0] * 15
    assert cost.round_trips.tolist() == (2 * np.array([2] * 8 + [3] * 8 + [0] * 8)).tolist()


def test_block_push_blocks_start_again_at_each_launch():
    """Launches joined at units 0 and 4: blocks of 8 units are [0, 4), [4, 12), [12, 16)."""
    steps = np.array([1, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 7])
    rounds, first, block_rounds = block_push_rounds(steps, 8, np.array([0, 4]))
    assert first.tolist() == [0, 4, 12]
    assert block_rounds.tolist() == [1, 5, 7]
    assert rounds.tolist() == [1] * 4 + [5] * 8 + [7] * 4


def test_block_push_has_fewer_tail_atomics_than_warp_aggregated():
    """A block's one atomic a round against a warp's one a pushing step: on the same
    launches the tail sees at most as many, and fewer where a block's warps push alike."""
    steps = np.array([3, 3, 3, 3, 3, 3, 3, 3])
    work = _work(steps * 4, steps)
    block = push_cost(work, "block", H100, COSTS, block_size=256, words_per_sector=8)
    atomic = push_cost(work, "atomic", H100, COSTS, block_size=256, words_per_sector=8)
    assert block.queue_atomics.sum() == 3 and atomic.queue_atomics.sum() == 24


@pytest.mark.parametrize("config", [
    "driven=data,push=block",
    "mapping=vwarp,w=8,driven=data,push=block",
    "mapping=vwarp,w=32,driven=data,push=block",
    "mapping=vwarp,w=32,driven=temporal,push=block,switch_to_topology=0.05",
    "driven=spatial,push=block,partition=8",
])
def test_block_push_runs_sssp_to_dijkstra(config):
    g = load_graph("rmat:scale=10,ef=8,weights=random,seed=3")
    source = int(np.argmax(np.diff(g.indptr)))
    reference = dijkstra(csr_matrix((g.weights, g.indices, g.indptr), shape=(g.n, g.n)),
                         indices=source)
    r = simulate(g, "sssp", config, source=source)
    assert np.allclose(r.output, reference)
    atomic = simulate(g, "sssp", config.replace("push=block", "push=atomic"), source=source)
    assert r.atomics <= atomic.atomics
