"""The warp cost model against counts done on paper for a 64-vertex graph.

Graph: vertex 0 is joined to vertices 1..40 (degree 40); 41..63 are isolated. CSR: vertex 0's
edges are ids 0..39 (neighbours 1..40); vertex i in 1..40 has edge id 39+i (neighbour 0).
BFS from 0: iteration 1 expands {0}, iteration 2 expands {1..40} and discovers nothing.
Sectors are 32 bytes = 8 words, so word x lies in sector x // 8.
"""

import dataclasses

import numpy as np
import pytest
from hand_counted import SERIAL
from hand_counted import star_graph

from simulator import Graph
from simulator import Strategy
from simulator import engine
from simulator import functional_run
from simulator import launch_costs
from simulator.driver import iteration_costs
from simulator.engine import vertex_kernel
from simulator.launch_costs import gather_group_size
from simulator.launch_costs import gathered_load_groups

# SERIAL (tests/hand_counted.py) runs one warp at a time: a launch takes the sum of its warps'
# alone-times L = instructions + round_trips * latency (100).


@pytest.fixture(scope="module")
def star():
    return star_graph()


@pytest.fixture(scope="module")
def bfs_run(star):
    return functional_run(star, "bfs", source=0)


def launch(run, iteration, device=SERIAL, **knobs):
    strategy = Strategy(block_size=32, **knobs)
    return vertex_kernel(run.indptr, run.indices, run.iterations[iteration], strategy, device)


def test_functional_iterations(bfs_run):
    assert [it.active.tolist() for it in bfs_run.iterations] == [[0], list(range(1, 41))]
    assert bfs_run.iterations[0].writes.tolist() == list(range(40))
    assert bfs_run.iterations[1].writes.size == 0


# (knobs, issued SIMD lane-steps, U_A, U_R) for iteration 1 (the hub) and iteration 2 (leaves)
LANES = [
    # W=32: hub takes ceil(40/32)=2 steps; each leaf one step with 31 idle lanes.
    (dict(mapping="vwarp", w=32), (64, 24, 0), (1280, 1240, 0)),
    # W=8: hub takes 5 steps while the 3 other virtual warps of its warp idle (3*8*5 = 120);
    # leaves: 11 warps with one step, 7 idle lanes per leaf, 32 lanes of inactive vertices.
    (dict(mapping="vwarp", w=8), (160, 0, 120), (352, 280, 32)),
    # thread: hub's lane loops 40 times while 31 lanes idle; leaves fill 2 warps of 1 step.
    (dict(mapping="thread"), (1280, 0, 1240), (64, 0, 24)),
]


@pytest.mark.parametrize("knobs, hub, leaves", LANES)
def test_simd_steps_and_underutilisation(bfs_run, knobs, hub, leaves):
    for iteration, (issued, u_a, u_r) in enumerate((hub, leaves)):
        cost = launch(bfs_run, iteration, **knobs)
        assert cost.simd_issued == issued
        assert cost.u_a == u_a
        assert cost.u_r == u_r
        assert cost.simd_active == 40
        assert cost.simd_active + cost.u_a + cost.u_r == cost.simd_issued


def test_sectors_thread_mapping(bfs_run):
    # Hub iteration: 40 one-lane steps each read one list sector, one status sector, store
    # one sector and the changed flag (40 + 40 + 40 + 40); the SISD checks read status words
    # 0..31 and 32..63 (4 + 4 sectors) and the hub's row bounds indptr[0], indptr[1] (sector
    # 0, twice): 170.
    assert launch(bfs_run, 0, mapping="thread").transactions == 170


def test_sectors_virtual_warp_8(bfs_run):
    # Hub: 5 steps read list words 8s..8s+7 (5 sectors); statuses 1..8, 9..16, ..., 33..40
    # straddle two sectors each (10); every edge stores (10), every step the flag (5).
    # Staging, per warp of 4 tasks: status words 4p..4p+3 (1 sector, 16 warps) and bounds
    # 4p..4p+4 (2 sectors for odd p): 16 + 24. Total 5 + 10 + 10 + 5 + 40 = 70.
    assert launch(bfs_run, 0, mapping="vwarp", w=8).transactions == 70


def test_sectors_virtual_warp_32(bfs_run):
    # Hub: list words 0..31 and 32..39 (4 + 1); statuses 1..32 (5) and 33..40 (2); stores 7,
    # flags 2. Staging per warp of 1 task: status word v (64 sectors) and bounds v, v+1 (1
    # sector, or 2 when v+1 starts a sector: v = 7, 15, ..., 63 → 8 warps): 64 + 72. Total
    # 5 + 7 + 7 + 2 + 136.
    assert launch(bfs_run, 0, mapping="vwarp", w=32).transactions == 157


def test_cycles_virtual_warp_32(bfs_run):
    # Hub warp: 2 check + 2 staging + 3 setup + 4*2 SIMD = 15 instructions, 2*2 + 1 round
    # trips -> 515 cycles; the 63 other warps: 4 instructions, 1 round trip -> 104 each.
    assert launch(bfs_run, 0, mapping="vwarp", w=32).cycles == 515 + 63 * 104


def test_cycles_thread_mapping(bfs_run):
    # Warp 0: check 2 + setup 3 + 4*40 SIMD = 165 instructions, 2*40 + 2 round trips -> 8365;
    # warp 1: a check (2) and its round trip -> 102.
    assert launch(bfs_run, 0, mapping="thread").cycles == 8365 + 102


def test_virtual_warps_issue_their_staging_one_after_another(bfs_run):
    # W = 8: 16 warps of 4 virtual warps of one task. In lockstep a warp checks one position
    # (2) and stages once (1 + 1): 4 instructions, 1 round trip -> 104; the hub's warp adds
    # setup 3 and 5 SIMD steps of 4 with 2 round trips each: 27 instructions, 11 round trips
    # -> 1127. 1127 + 15 * 104 = 2687. Serial, each of the 4 virtual warps checks and stages
    # on its own: 16 instructions a warp -> 116, the hub's 39 -> 1139; 1139 + 15 * 116 = 2879.
    assert launch(bfs_run, 0, mapping="vwarp", w=8).cycles == 2687
    serial = dataclasses.replace(SERIAL, name="serial-vwarps", serial_virtual_warps=True)
    assert launch(bfs_run, 0, mapping="vwarp", w=8, device=serial).cycles == 2879
    # a virtual warp as wide as the warp, or one thread a vertex, has nothing to serialise
    for knobs in (dict(mapping="vwarp", w=32), dict(mapping="thread")):
        assert (launch(bfs_run, 0, device=serial, **knobs).cycles
                == launch(bfs_run, 0, **knobs).cycles)


def test_changed_flag_serialises_on_one_address(bfs_run):
    # Every storing step of a sweep stores the flag the host reads to stop, one word: with a
    # store to one address every 1000 cycles, the thread mapping's 40 storing steps take
    # 40000 cycles, more than its latency makespan (8467); W = 32 stores in 2 steps (2000,
    # under its 515 + 63 * 104). They are stores, not atomics.
    slow = dataclasses.replace(SERIAL, name="slow-flag", atomic_cycles=1000)
    thread = launch(bfs_run, 0, mapping="thread", device=slow)
    assert thread.bounds[0][4] == 40000
    assert thread.cycles == 40000
    assert thread.atomics == 0
    vw32 = launch(bfs_run, 0, mapping="vwarp", w=32, device=slow)
    assert vw32.bounds[0][4] == 2000
    assert vw32.cycles == 515 + 63 * 104
    # the leaves' sweep stores nothing, so no flag
    assert launch(bfs_run, 1, mapping="thread", device=slow).bounds[0][4] == 0


def test_changed_flag_once_a_warp(bfs_run):
    # changed_flag=warp: the warp votes when its loop is done and one lane stores the flag.
    # The thread mapping's hub warp stored in 40 steps but stores the flag once: 1000 cycles
    # on the slow flag, under its latency makespan 8467 (check 2 + setup 3 + 160 SIMD, 82
    # round trips, + the other warp's 102), which binds again; 40 - 1 fewer flag sectors than
    # the 170 of test_sectors_thread_mapping. W = 32: 2 storing steps, 1 flag store.
    slow = dataclasses.replace(SERIAL, name="slow-flag", atomic_cycles=1000)
    thread = launch(bfs_run, 0, mapping="thread", changed_flag="warp", device=slow)
    assert thread.bounds[0][4] == 1000
    assert thread.cycles == 8365 + 102
    assert thread.transactions == 170 - 39
    vw32 = launch(bfs_run, 0, mapping="vwarp", w=32, changed_flag="warp", device=slow)
    assert vw32.bounds[0][4] == 1000
    assert vw32.transactions == 157 - 1
    # the default is per step, and is left out of the configuration's canonical form
    assert Strategy(changed_flag="step") == Strategy()
    assert "changed_flag" not in str(Strategy(changed_flag="step"))


@pytest.mark.parametrize("iteration, knobs, extra_steps, atomics", [
    (0, dict(mapping="thread"), 40, (40, 40)),  # the hub's lane: 40 steps, every edge lowers
    (0, dict(mapping="vwarp", w=32), 2, (40, 40)),
    (1, dict(mapping="thread"), 2, (0, 40)),  # 40 leaves in 2 warps of one step, none lowers
    (1, dict(mapping="vwarp", w=32), 40, (0, 40)),  # a warp a leaf, one step each
])
def test_unchecked_atomics_wait_a_step(star, iteration, knobs, extra_steps, atomics):
    # precheck=false (the independent kernels): a lane issues atomicMin on its edge without
    # reading the target first and waits for the old value, 2 round trips on this device,
    # where the checked lane waits for one read (and its atomicMin, issued only where it
    # lowers, returns nothing it waits for): one more round trip (100 cycles) a warp step,
    # and an atomic an edge rather than a lowering edge. Sectors stay: the atomic's are the
    # read's. SSSP from 0 over unit weights: the hub lowers its 40 leaves, they lower nothing.
    run = functional_run(star_graph(np.ones(40)), "sssp", source=0)
    device = dataclasses.replace(SERIAL, name="serial-2", atomic_round_trips=2)
    checked, unchecked = (
        vertex_kernel(run.indptr, run.indices, run.iterations[iteration],
                      Strategy(block_size=32, precheck=precheck, **knobs), device,
                      reads_weights=True, atomic_updates=True)
        for precheck in (True, False))
    assert unchecked.cycles - checked.cycles == 100 * extra_steps
    assert (checked.atomics, unchecked.atomics) == atomics
    assert unchecked.transactions == checked.transactions
    assert Strategy(precheck=True) == Strategy()
    assert "precheck" not in str(Strategy(precheck=True))


def test_deferred_outlier(bfs_run):
    cost = launch(bfs_run, 0, mapping="thread", defer_threshold=32)
    # Main kernel: warp 0 checks (2), sets up (3) and pushes the hub (2) with 3 round trips
    # -> 307; warp 1 -> 102. Outlier kernel, one 32-thread block: 2 rounds over 40 edges, setup
    # 3 + 4*2 instructions, 2*2 + 1 round trips -> 511.
    assert cost.launches == 2
    assert cost.cycles == 307 + 102 + 511
    assert cost.atomics == 1
    assert (cost.simd_issued, cost.u_a, cost.u_r) == (64, 24, 0)
    # Main: status checks 8 sectors, hub bounds 2, queue store 1. Outlier: list 5, status 7,
    # stores 7, the changed flag in each of its 2 steps; its warp reads the queue's length,
    # the queue entry and the hub's two row bounds (4; probe HC: these had been 1).
    assert cost.transactions == 11 + 25


def test_dynamic_distribution_adds_queue_atomics(bfs_run):
    static = launch(bfs_run, 0, mapping="vwarp", w=8, chunk=2)
    dynamic = launch(bfs_run, 0, mapping="vwarp", w=8, chunk=2, distribution="dynamic")
    # 64 vertices in chunks of 2, 4 virtual warps per warp: 8 warp units, whose 4 grabs on
    # the one queue counter the compiler aggregates into one atomic each, and the one
    # resident warp's last grab, which finds the queue empty.
    assert dynamic.atomics == 9
    assert static.atomics == 0
    assert dynamic.simd_issued == static.simd_issued


# SERIAL with 4 resident warps (4 one-warp blocks on the SM) and a queue counter that serves
# one atomic every 10 cycles.
CONTENDED = dataclasses.replace(SERIAL, name="contended", max_warps_per_sm=4,
                                max_blocks_per_sm=4, atomic_cycles=10)


@pytest.mark.parametrize("sparse", [True, False])
def test_dynamic_grabs_queue_behind_every_resident_warp(bfs_run, monkeypatch, sparse):
    monkeypatch.setattr(engine, "_SPARSE_SWEEPS", sparse)
    # The hub iteration with W = 8, C = 8: 4 virtual warps of 8 tasks, 2 warp units of 32
    # vertices. Unit 0 holds the hub (virtual warp 0, position 0): checks 2 * 8, staging
    # ceil(8/8) + ceil(9/8) = 3, setup 3, grab 3, SIMD 4 * ceil(40/8) = 20: 45 instructions;
    # round trips 2 * 5 steps + staging 1 + grab 1 = 12 -> 1245 cycles. Unit 1: 16 + 3 + 3 =
    # 22 instructions, 2 round trips -> 222.
    # Each grab waits for one grab of each of the 4 resident warps: 4 * 10 = 40 cycles. Warp 0
    # takes unit 0 (40 + 1245), warp 1 unit 1 (40 + 222); then every warp's last grab finds
    # the queue empty (40 more): warp 0 ends at 1325, the others at 302, 40 and 40.
    dyn = launch(bfs_run, 0, mapping="vwarp", w=8, chunk=8, distribution="dynamic",
                 device=CONTENDED)
    issue, lsu, latency, memory, atomics, overhead = dyn.bounds[0]
    assert latency == 1325
    assert issue == 45 + 22
    # 2 units' grabs and 4 empty ones on the counter: 6 atomics; with the hub's 5 storing
    # steps' stores of the changed flag, 11 operations on one address: 110 cycles
    assert dyn.atomics == 6
    assert atomics == 110
    assert dyn.cycles == 1325
    # Statically the 2 units are 2 blocks on the 4 block slots and do not grab: the hub's
    # unit without the grab's 3 instructions and round trip, 1245 - 3 - 100.
    static = launch(bfs_run, 0, mapping="vwarp", w=8, chunk=8, device=CONTENDED)
    assert static.cycles == 1142 and static.atomics == 0


def test_sssp_sweep_lowers_with_atomic_min():
    # SSSP on the star (unit weights): the hub's sweep relaxes its 40 edges with atomicMin,
    # one atomic per storing lane; the sweep does not use the old value (the compiler emits a
    # reduction), so no round trip waits on it. Each storing lane also sets its target's flag
    # for the next sweep, and the hub clears its own (a vertex store, 1 instruction).
    # Warp 0: check 2 + setup 3 + clear 1 + (edge 4 + weight 1) * 40 = 206 instructions,
    # round trips 2 + 2 * 40 = 82 -> 8406; warp 1 checks: 102. BFS stores its levels plainly.
    star = star_graph(weights=np.ones(40))
    run = functional_run(star, "sssp", source=0)
    strategy = Strategy(block_size=32)
    hub = iteration_costs(run, strategy, SERIAL)[0].cost
    assert hub.atomics == 40
    assert hub.cycles == 8406 + 102
    # Against BFS's sweep of the hub: the thread takes one edge per step, so each of its 40
    # steps reads one more sector (the weight) and stores one more (the flag), and the clear
    # and the hub's read of its own distance (``LowerSweep.vertex``; probe HC: not counted
    # before) are one more each: 82 sectors in as many requests.
    bfs = iteration_costs(functional_run(star, "bfs", source=0), strategy, SERIAL)[0].cost
    assert bfs.atomics == 0
    assert hub.transactions == bfs.transactions + 40 + 40 + 2
    assert hub.requests == bfs.requests + 40 + 40 + 2


def test_sssp_counting_sweep_waits_for_its_claims():
    # A temporal hybrid's sweep counts the vertices it activates, each once: a lane that
    # lowered its target (atomicMin's old value, waited for: 1 round trip on SERIAL) claims
    # the target's flag with an exchange (its old flag waited for: 1 more); the warp adds its
    # claims with one aggregated atomic after a warp scan (5 instructions). On the star, the
    # hub's sweep (the worklist [0] is over 0.01 x 64 entries, so it runs as a sweep):
    # warp 0 as the plain sweep (206 instructions, 82 round trips) + the scan 5 + 2 waits in
    # each of its 40 storing steps: 211 + 100 * (82 + 80) = 16411; warp 1 checks: 102.
    # Atomics: 40 atomicMin, 40 exchanges, 1 count.
    star = star_graph(weights=np.ones(40))
    run = functional_run(star, "sssp", source=0)
    strategy = Strategy(driven="temporal", switch_to_topology=0.01, block_size=32)
    first = iteration_costs(run, strategy, SERIAL)[0]
    assert first.form == "topology"
    assert first.cost.cycles == 16411 + 102
    assert first.cost.atomics == 40 + 40 + 1


def test_idle_outlier_kernel_follows_every_level(bfs_run):
    # With deferral the host launches the outlier kernel after every level (it does not read
    # the queue length): the leaves' level defers nothing, and its outlier kernel reads the
    # empty queue (one round trip, 100 cycles on SERIAL) and exits.
    strategy = Strategy(mapping="thread", defer_threshold=32, block_size=32)
    hub, leaves = iteration_costs(bfs_run, strategy, SERIAL)
    plain = launch(bfs_run, 1, mapping="thread", defer_threshold=32)
    assert hub.cost.launches == 2
    assert leaves.cost.launches == 2
    assert leaves.cost.cycles == plain.cycles + 100


@pytest.fixture(scope="module")
def pagerank_run(star):
    return functional_run(star, "pagerank")


def pagerank_launch(run, device=SERIAL, **knobs):
    strategy = Strategy(block_size=32, **knobs)
    return vertex_kernel(run.indptr, run.indices, run.iterations[0], strategy, device,
                         stores_per_vertex=True)


def test_pagerank_sweep_gathers_in_unrolled_groups(pagerank_run):
    # PageRank's edge loop sums what it loads: nvcc unrolls it (single steps for the trip
    # count mod 4, groups of 16, then one of 8 and one of 4), each group's loads issued before
    # it waits. Thread mapping, a sweep of all 64 vertices: warp 0 (the hub's 40 steps: groups
    # 16, 16, 8 -> 3 groups, 2 round trips each) checks (2), sets up (3), stores the rank (1)
    # and runs 4 * 40 SIMD instructions: 166 instructions, 6 + 1 (the row bounds:
    # ``PrSweep.status`` loads nothing, so no status round trip) round trips -> 866; warp 1
    # (one step: 1 group) 10 instructions, 2 + 1 round trips -> 310 (966 and 410 had charged
    # a status read: probe HC). (A step at a time, as BFS's loop waits, warp 0 would take
    # 166 + 81 * 100.)
    assert pagerank_launch(pagerank_run, mapping="thread").cycles == 866 + 310
    # W = 32, one vertex a warp: the hub's 2 steps are 2 single steps (4 round trips, 1 staging)
    # with 2 + 2 + 3 + 1 + 8 = 16 instructions -> 516; a leaf's step 12 instructions, 3 round
    # trips -> 312 (40 of them); an isolated vertex 8 instructions, 1 round trip -> 108 (23).
    assert pagerank_launch(pagerank_run, mapping="vwarp", w=32).cycles == (
        516 + 40 * 312 + 23 * 108)


@pytest.mark.parametrize("trips, groups", [
    (0, 0), (3, 3), (4, 1), (7, 4), (8, 2), (16, 4), (31, 10), (100, 25),
])
def test_gathered_load_groups_of_four(trips, groups):
    # a chunk walk's loop: trips mod 4 single steps, then 4s (31: 3 singles and seven 4s)
    assert gathered_load_groups(np.array([trips]), np.array([1]), 4).tolist() == [groups]


def test_pagerank_chunk_walks_gather_in_fours(monkeypatch):
    # Inside a chunk walk (or a dynamic grab loop) nvcc keeps 4 of PageRank's loads in flight,
    # not 16. A hub of 256 leaves, W = 8, C = 2: the hub's warp holds vertices 0..7, position
    # 0 the hub (32 steps) and three leaves, position 1 four leaves (1 step): 33 SIMD steps,
    # the mean position's 16 trips. Groups of 16: one a position, 2 groups, 4 round trips;
    # groups of 4: four a position, 8 groups, 16 round trips. Every other warp's positions
    # take one step each, alike. At 100 cycles a round trip: 12 * 100 cycles more.
    hub = Graph.from_edges(np.zeros(256, dtype=np.int64), np.arange(1, 257), 257, name="hub256")
    run = functional_run(hub, "pagerank")
    chunked = pagerank_launch(run, mapping="vwarp", w=8, chunk=2)
    monkeypatch.setattr(launch_costs, "gather_group_size", lambda strategy: 16)
    assert chunked.cycles - pagerank_launch(run, mapping="vwarp", w=8, chunk=2).cycles == 1200
    assert gather_group_size(Strategy(mapping="vwarp", w=8)) == 16
    assert gather_group_size(Strategy(mapping="thread", defer_threshold=32)) == 16
    assert gather_group_size(Strategy(mapping="vwarp", w=8, chunk=2)) == 4
    assert gather_group_size(Strategy(mapping="vwarp", w=8, distribution="dynamic")) == 4


def test_pagerank_outlier_kernel_gathers_in_fours(monkeypatch):
    # The outlier kernel's sum over a queued vertex's edges is a gathering loop too, whose
    # SASS issues at most 2 value loads before an add (bench/gpu/outlier_gather_groups.sh on
    # the H200), as a chunk walk's: groups of 4. A hub of 256 leaves deferred, one block of
    # 32 threads: 8 rounds, 2 groups of 4 (2 round trips each) where one round trip pair a
    # round had been charged: 12 round trips less, at 100 cycles each (probe HC).
    hub = Graph.from_edges(np.zeros(256, dtype=np.int64), np.arange(1, 257), 257, name="hub256")
    run = functional_run(hub, "pagerank")
    deferred = Strategy(mapping="thread", defer_threshold=32, block_size=32)
    grouped = iteration_costs(run, deferred, SERIAL)[0].cost.cycles
    monkeypatch.setattr(launch_costs, "gathered_load_groups",
                        lambda steps, positions, group=16: steps)
    assert iteration_costs(run, deferred, SERIAL)[0].cost.cycles - grouped == 12 * 100


def test_pagerank_blocks_add_to_one_global_sum(pagerank_run, bfs_run):
    # Every block adds its vertices' rank changes to one global sum with one atomicAdd, all
    # on the same address: blocks of 32 threads, so 2 blocks under the thread mapping and 64
    # at W = 32. At 1000 cycles an atomic, 2000 and 64000 cycles.
    slow = dataclasses.replace(SERIAL, name="slow-sum", atomic_cycles=1000)
    thread = pagerank_launch(pagerank_run, mapping="thread", device=slow)
    assert thread.atomics == 2
    assert thread.bounds[0][4] == 2000
    vw32 = pagerank_launch(pagerank_run, mapping="vwarp", w=32, device=slow)
    assert vw32.atomics == 64
    assert vw32.bounds[0][4] == vw32.cycles == 64000
    # BFS's sweeps have no such sum
    assert launch(bfs_run, 0, mapping="vwarp", w=32, device=slow).atomics == 0


@pytest.mark.parametrize("trips, groups", [
    (0, 0), (1, 1), (3, 3), (4, 1), (5, 2), (7, 4), (8, 1), (12, 2), (15, 5), (16, 1),
    (17, 2), (24, 2), (28, 3), (31, 6), (32, 2), (40, 3), (100, 7),
])
def test_gathered_load_groups_follow_the_unrolled_loop(trips, groups):
    # trips mod 4 single steps, then 16s while 16 are left, then an 8, then a 4 (31: 3
    # singles, one 16, 12 left: an 8 and a 4 -> 6; 100: six 16s, 4 left: a 4 -> 7)
    got = gathered_load_groups(np.array([trips]), np.array([1]))
    assert got.tolist() == [groups]
    # a unit of two positions counts each as the mean
    assert gathered_load_groups(np.array([2 * trips]), np.array([2])).tolist() == [2 * groups]


def _small_cc_graph() -> Graph:
    """16 vertices, edges 0-1, 0-2, 0-3, 5-6, 9-10 (probe HC's case)."""
    return Graph.from_edges(np.array([0, 0, 0, 5, 9]), np.array([1, 2, 3, 6, 10]), 16,
                            name="cc16")


def test_a_lowering_vertex_reads_its_own_value():
    """``LowerSweep.vertex`` clears the vertex's flag and loads its value (``mine``): two
    memory instructions an active vertex, of which only the clear had been counted (probe HC,
    from ``tuner/measure/kernels.cu``). CC's first sweep on the 16-vertex graph, every vertex
    flagged, one 32-thread block.
    W = 8, C = 4 (four virtual warps, virtual warp k walking 4k..4k+3): staging the 16 flags 2
    sectors and the 17 row bounds 3; each of the 4 positions clears 2 sectors and loads 2
    (vertices 0, 4, 8, 12 at position 0, and so on); the edge steps: position 0 lists 1,
    reads 1 label sector, lowers labels 1..3 with atomicMin (1) and flags them (1), and
    stores the changed flag (1); position 1 lists 2, reads 2, lowers 6 and 10 (2 + 2 flags)
    and the changed flag 1; positions 2 and 3 list and read 2 + 2 and 1 + 1, storing
    nothing: 5 + 16 + 5 + 9 + 4 + 2 = 41 sectors in 24 requests.
    The thread mapping: 2 status sectors, then per vertex its 2 row bounds, its clear and its
    load (2 sectors each over the 16 vertices), and the edge steps: 30 sectors."""
    run = functional_run(_small_cc_graph(), "cc")
    chunked = iteration_costs(run, Strategy(mapping="vwarp", w=8, chunk=4, block_size=32),
                              SERIAL)[0].cost
    assert (chunked.transactions, chunked.requests) == (41, 24)
    thread = iteration_costs(run, Strategy(mapping="thread", block_size=32), SERIAL)[0].cost
    assert thread.transactions == 30
    # a worklist's vertex reads its value too: SSSP on the path 0 -> 1 -> 2, the third
    # launch's worklist [2] (degree 0): its entry, its two row bounds and its distance
    path = Graph.from_edges(np.array([0, 1]), np.array([1, 2]), 3, directed=True,
                            weights=np.ones(2), name="path3")
    worklist = iteration_costs(functional_run(path, "sssp", source=0),
                               Strategy(mapping="thread", driven="data", block_size=32),
                               SERIAL)
    assert (worklist[2].cost.transactions, worklist[2].cost.requests) == (4, 4)


def test_the_outlier_kernels_atomics_and_setup_are_counted():
    """CC on the star with the hub deferred (threshold 32): the main kernel queues the hub
    (1 atomic) and its leaves lower nothing; the outlier kernel's 40 lanes lower labels 1..40
    with atomicMin: 41 atomics, as the sweep without deferral has 40 (the outlier kernel's
    had been 0: probe HC)."""
    run = functional_run(star_graph(), "cc")
    deferred = iteration_costs(run, Strategy(mapping="thread", defer_threshold=32,
                                             block_size=32), SERIAL)[0].cost
    plain = iteration_costs(run, Strategy(mapping="thread", block_size=32), SERIAL)[0].cost
    assert (deferred.atomics, plain.atomics) == (41, 40)


def test_pagerank_counts_its_doubles_and_no_status():
    """PageRank's sweep, from ``tuner/measure/kernels.cu`` (probe HC's case): the star of
    vertex 0 and leaves 1..16, vertices 17..31 isolated; the first sweep, one warp, 32-byte
    sectors. ``PrSweep.status`` reads nothing (0); the row bounds ``indptr[v]`` and
    ``indptr[v + 1]`` of the 32 threads (4 + 5); the gather's first step reads the edge ids
    of vertices 0 and 16..31 (3) and the 8-byte shares of their in-neighbours 1 and 0 (1),
    each of the hub's 15 later steps one id and one share (30); the first lane of each
    vertex stores the rank and the share and reads the old rank and 1 / out-degree: 4
    arrays of 32 doubles, 8 sectors each (32); each warp reads the dangling sum once (1):
    76 sectors in 39 requests (the model had read 4-byte shares, a status word, and one
    4-byte store: 51). Under W = 8, C = 2 the units whose SIMD steps are fewer than their
    positions wait for their loads too: 16 round trips, as the kernel (12 before)."""
    star = Graph.from_edges(np.zeros(16, dtype=np.int64), np.arange(1, 17), 32,
                            name="star32")
    run = functional_run(star, "pagerank")
    thread = iteration_costs(run, Strategy(mapping="thread", block_size=32), SERIAL)[0].cost
    assert (thread.transactions, thread.requests) == (76, 39)
    chunked = iteration_costs(run, Strategy(mapping="vwarp", w=8, chunk=2, block_size=32),
                              SERIAL)[0].cost
    assert chunked.cycles - chunked.instructions == 16 * 100
