"""The warp cost model against counts done on paper: worklist pushes, donation, the temporal
hybrid, WER/WER+ and GW's device options.

Conventions as in test_engine_hand_counted.py. Costs are the defaults of ``InstructionCosts``:
check 2, setup 3, edge 4 per SIMD step, stage 1, scan 5, table_push 2, pop 2, donate 4,
push 2, aggregate 3, push_store 1, batch 2, barrier 2, vertex_store 1. Sectors are 32 bytes
= 8 words, so word x lies in sector x // 8. On SERIAL (one SM, one block slot of one warp,
one scheduler, no bandwidth or atomic limits, latency 100, no launch or host overhead) a launch
takes the sum over its warps of L = instructions + 100 * round_trips.

A worklist launch with the thread mapping puts one slot per lane; each of its warp units pays
a check (2) and, if any slot is active, a setup (3), with 2 dependent round trips (the
worklist entry, then the row bounds of its vertex), plus 2 per SIMD step (neighbour id, then
its status). Its SISD sectors: the entries, the row bounds v and v + 1 of the slots' vertices.
"""

import dataclasses

import numpy as np
import pytest
from hand_counted import SERIAL
from hand_counted import star_graph

from simulator import Graph
from simulator import Strategy
from simulator import functional_run
from simulator import simulate
from simulator.auxiliary_kernels import compaction_kernel
from simulator.auxiliary_kernels import scatter_kernel
from simulator.costs import COSTS
from simulator.driver import iteration_costs
from simulator.engine import Launch
from simulator.engine import vertex_kernel
from simulator.pushes import arrival_order
from simulator.worklist import scan_launch

# One block slot of two warps (block_size=64): a block takes its slower warp's L.
PAIR = dataclasses.replace(SERIAL, name="pair", max_warps_per_sm=2)
# GW-style narrow SIMD: 8 lanes, so a warp instruction takes 4 passes (L counts passes).
NARROW = dataclasses.replace(SERIAL, name="narrow", simd_width=8)
CLUSTER = dataclasses.replace(NARROW, name="cluster", cluster_issue=True)
SCALAR = dataclasses.replace(NARROW, name="scalar", scalar_unit=True)
SCALAR_CLUSTER = dataclasses.replace(NARROW, name="gw", scalar_unit=True, cluster_issue=True)

NO_WRITES = np.zeros(0, dtype=np.int64)

# The scan launch of a prefix push over at most 1024 block totals: one round of
# 2 * scan + 2 * barrier + 2 = 16 instructions for each of the 32 warps of one 1024-thread
# block (512), 2 round trips (read, write back) -> 2 * 100 + 16 * 32 = 712 cycles on SERIAL;
# it reads and writes ceil(blocks / 8) sectors each.
SCAN_CYCLES = 712
SCAN_INSTRUCTIONS = 512


def worklist_launch(fr, iteration, slots, **options):
    work = fr.iterations[iteration]
    return Launch(work.active, work.writes, slots=np.asarray(slots, dtype=np.int64),
                  lookup="worklist", **options)


def test_scan_launch():
    cost = scan_launch(1, SERIAL, COSTS, 8)
    assert (cost.cycles, cost.instructions, cost.transactions, cost.launches) == (
        SCAN_CYCLES, SCAN_INSTRUCTIONS, 2, 1)


# --- 1. pushing the next worklist: atomic, chunked, prefix ------------------------------------
#
# Graph "broom" (39 vertices, undirected): 0 is joined to 1..33; 1 to 34 and 35; 2 to 34;
# 33 to 36, 37, 38. CSR edge ids: vertex 0: 0..32 (neighbours 1..33); vertex 1: 33, 34, 35
# (0, 34, 35); vertex 2: 36, 37 (0, 34); vertex v in 3..32: 35 + v (0); vertex 33: 68..71
# (0, 36, 37, 38); 34: 72, 73 (1, 2); 35: 74 (1); 36..38: 75..77 (33).
# BFS from 0: iteration 0 expands {0} and stores to 1..33; iteration 1 expands {1..33} and
# stores 1->34, 1->35, 2->34 (both find 34 unvisited), 33->36, 33->37, 33->38 (edges 34, 35,
# 37, 69, 70, 71); iteration 2 expands {34..38} and discovers nothing.
# A storing lane pushes its target unless an earlier warp step already stored to it; lanes of
# the same step race and all push. With one lane per vertex, 1->34 and 2->34 are both the
# second edge of their lists, so they store in the same step: 34 is pushed twice.
# Data-driven worklists: [0], [1..33], [34, 35, 34, 36, 37, 38] (one duplicate).


@pytest.fixture(scope="module")
def broom():
    src = [0] * 33 + [1, 1, 2, 33, 33, 33]
    dst = list(range(1, 34)) + [34, 35, 34, 36, 37, 38]
    return Graph.from_edges(np.array(src), np.array(dst), 39, name="broom")


@pytest.fixture(scope="module")
def broom_bfs(broom):
    return functional_run(broom, "bfs", source=0)


def test_broom_iterations(broom, broom_bfs):
    assert [it.active.tolist() for it in broom_bfs.iterations] == [
        [0], list(range(1, 34)), [34, 35, 36, 37, 38]]
    assert broom_bfs.iterations[1].writes.tolist() == [34, 35, 37, 69, 70, 71]
    assert broom.indptr[33:35].tolist() == [68, 72]


# Iteration 1 with the thread mapping and block_size=64 on PAIR: worklist [1..33] fills warp
# unit 0 (slots 0..31 = vertices 1..32) and unit 1 (slot 32 = vertex 33), one block of two.
#   unit 0: degrees 3, 2, 1 x 30 -> 3 steps. Step 0: every lane reads neighbour 0 (visited);
#     step 1: lanes 0, 1 both store 34; step 2: lane 0 stores 35. I = 2 + 3 + 4*3 = 17,
#     round trips 2 + 2*3 = 8 -> L = 817.
#   unit 1: degree 4 -> 4 steps, steps 1..3 store 36, 37, 38. I = 5 + 16 = 21, round trips
#     2 + 8 = 10 -> L = 1021.
# Sectors without a push: unit 0 reads entries 0..31 (4), bounds of 1..32 (5: sectors 0..4)
#   and of 2..33 (5); step 0's list words 33, 36, 38..67 (sectors 4..8: 5) and status word 0
#   (1); steps 1 and 2 read one list (words 34, 37; 35), one status (34, 34; 35) and store
#   one sector each (6): 26.
#   Unit 1: entry 32, bounds 33, 34 (3); 4 steps of list word 68..71 (4), status words 0,
#   36, 37, 38 (4), 3 stores: 14. Total 40.
# Pushes per unit: items (3, 3), steps with a pushing lane (2, 3), pushing threads (2, 1);
# items of a unit land in consecutive words, ceil(3 / 8) = 1 sector, but each pushing step
# stores on its own: max(1, steps) = (2, 3) sectors.
#   atomic: the lanes' atomicAdds on the tail, warp-aggregated: per pushing step push 2 +
#     aggregate 3 instructions, 1 sector, a round trip and one tail atomic: +(10, 15)
#     instructions, +(2 + 2, 3 + 3) sectors, +(2, 3) round trips -> L = (27 + 1000, 36 +
#     1300); 5 atomics.
#   chunked: one atomic per pushing thread, issued as one warp instruction after a warp scan:
#     push_store per step + scan 5 + batch 2 per pushing unit: +(9, 10) instructions, the
#     stores + one sector per batch: +(2 + 2, 3 + 1) sectors, one round trip per pushing
#     unit -> L = (26 + 900, 31 + 1100); 3 atomics.
#   prefix: every unit runs the block scan: scan 5 + 2 barriers (4) + log2(2 warps) (1) = 10,
#     plus push_store per step: +(12, 13) instructions, the stores + the block count written
#     and its offset read: +(2 + 2, 3 + 2) sectors, 2 round trips each (its offset from the
#     scan, the block base) -> L = (29 + 1000, 34 + 1200); no atomics, and the scan launch
#     over ceil(2 units / 2) = 1 block total (712 cycles, 512 instructions, 2 sectors).
PUSHES = [
    # push, cycles (the slower warp; + the scan), instructions, transactions, atomics, launches
    (None, 1021, 38, 40, 0, 1),
    ("atomic", 1336, 63, 50, 5, 1),
    ("chunked", 1131, 57, 48, 3, 1),
    ("prefix", 1234 + SCAN_CYCLES, 63 + SCAN_INSTRUCTIONS, 49 + 2, 0, 2),
]


@pytest.mark.parametrize("push, cycles, instructions, transactions, atomics, launches", PUSHES)
def test_push_modes_thread_mapping(broom_bfs, push, cycles, instructions, transactions,
                                   atomics, launches):
    fr = broom_bfs
    launch = worklist_launch(fr, 1, range(1, 34), push=push)
    cost = vertex_kernel(fr.indptr, fr.indices, launch, Strategy(block_size=64), PAIR)
    assert cost.cycles == cycles
    assert cost.instructions == instructions
    assert cost.transactions == transactions
    assert cost.atomics == atomics
    assert cost.launches == launches
    # 3 + 4 steps; edges 3 + 2 + 30 + 4
    assert (cost.simd_issued, cost.simd_active) == (32 * 7, 39)
    # the next worklist. Prefix: in edge order, 1's 34, 35; 2's 34; 33's 36, 37, 38. Atomic:
    # as the warps' steps issue, both warps resident: step 1's 34, 34 (unit 0) and 36 (unit
    # 1), step 2's 35, 37, step 3's 38. Chunked: a warp's batch at once, unit 0's first.
    if push is not None:
        assert cost.pushed.tolist() == {"atomic": [34, 34, 36, 35, 37, 38]}.get(
            push, [34, 35, 34, 36, 37, 38])


def test_later_step_sees_the_store():
    # The broom with 2 joined to 35 instead of 34: 2->35 stores in step 1 (lane 1), 1->35 in
    # step 2 (lane 0), which reads 35's new level and pushes nothing: 5 items, and unit 0
    # pushes in step 1 only. Atomic push: unit 0 I = 17 + 5, round trips 8 + 1 -> 922;
    # unit 1 as before 1336; instructions 38 + 5 + 15; tail atomics 1 + 3.
    src = [0] * 33 + [1, 1, 2, 33, 33, 33]
    dst = list(range(1, 34)) + [34, 35, 35, 36, 37, 38]
    fr = functional_run(Graph.from_edges(np.array(src), np.array(dst), 39), "bfs", source=0)
    assert fr.iterations[1].writes.tolist() == [34, 35, 37, 69, 70, 71]  # 1->35 stores too
    launch = worklist_launch(fr, 1, range(1, 34), push="atomic")
    cost = vertex_kernel(fr.indptr, fr.indices, launch, Strategy(block_size=64), PAIR)
    assert cost.pushed.tolist() == [34, 35, 36, 37, 38]
    assert cost.atomics == 4
    assert cost.instructions == 58
    assert cost.cycles == 1336


# The same iteration with vwarp W=16 (two virtual warps per warp, 17 units): unit 0 holds
# vertices 1 and 2, unit 16 vertex 33; each vertex takes one step, so all three pushes of a
# unit fall in its one step, and the warp (not the thread) batches them. Deltas over no push:
#   atomic: 2 + 3 instructions and 1 + 1 sectors per pushing unit (+10, +4); one
#     warp-aggregated atomic per pushing step: 2.
#   chunked: 1 + 7 instructions, 1 + 1 sectors per pushing unit (+16, +4); 2 atomics (one per
#     warp; the thread mapping took 3: vertices 1 and 2 share a warp but not a thread).
#   prefix: 2 pushing steps + 10 for each of the 17 units (+172), and the scan launch
#     (+512); sectors 2 per unit (the block count, the offset) + 1 per pushing unit (36) +
#     2 * ceil(9 blocks / 8) (4).
VWARP_PUSHES = [
    ("atomic", 10, 4, 2, 0),
    ("chunked", 16, 4, 2, 0),
    ("prefix", 172 + SCAN_INSTRUCTIONS, 36 + 4, 0, 1),
]


@pytest.mark.parametrize("push, d_instr, d_sectors, atomics, d_launches", VWARP_PUSHES)
def test_push_modes_virtual_warp_16(broom_bfs, push, d_instr, d_sectors, atomics, d_launches):
    fr = broom_bfs
    strategy = Strategy(mapping="vwarp", w=16, block_size=64)
    plain = vertex_kernel(fr.indptr, fr.indices, worklist_launch(fr, 1, range(1, 34)),
                          strategy, PAIR)
    cost = vertex_kernel(fr.indptr, fr.indices, worklist_launch(fr, 1, range(1, 34), push=push),
                         strategy, PAIR)
    assert cost.instructions - plain.instructions == d_instr
    assert cost.transactions - plain.transactions == d_sectors
    assert cost.atomics == atomics
    assert cost.launches - plain.launches == d_launches


# The whole data-driven BFS on PAIR, block_size=64, thread mapping (one warp per worklist
# except iteration 1's two):
#   iteration 0, worklist [0]: 33 steps, each with one pushing lane (33 items, one thread).
#     I = 5 + 4*33 = 137, round trips 2 + 66 = 68.
#       atomic: +5 * 33 instructions, +33 round trips -> 302 + 10100 = 10402; 33 atomics
#         (one per pushing step: its only pushing lane's).
#       chunked: +33 + 7, +1 -> 177 + 6900 = 7077; 1 atomic.
#       prefix: +33 + 10, +2 -> 180 + 7000 = 7180, + the scan 712 = 7892.
#   iteration 1: as above: 1336 / 1131 / 1946.
#   iteration 2, worklist [34, 35, 34, 36, 37, 38]: degrees 2, 1, 2, 1, 1, 1 -> 2 steps,
#     no stores (both copies of 34 expand). I = 5 + 8 = 13, round trips 2 + 4 = 6 -> 613;
#     prefix still scans: +10 instructions, +2 round trips -> 823, + 712 = 1535.
# Worklist items 1 + 33 + 6 = 40, one duplicate (34).
DATA_RUNS = [
    ("atomic", 10402 + 1336 + 613, 33 + 5, 3),
    ("chunked", 7077 + 1131 + 613, 1 + 3, 3),
    ("prefix", 7892 + 1946 + 1535, 0, 6),
]


@pytest.mark.parametrize("push, cycles, atomics, launches", DATA_RUNS)
def test_data_driven_bfs(broom, broom_bfs, push, cycles, atomics, launches):
    strategy = Strategy(driven="data", push=push, block_size=64)
    r = simulate(broom, "bfs", strategy, PAIR, source=0, functional=broom_bfs)
    assert r.cycles == cycles
    assert r.atomics == atomics
    assert r.launches == launches
    assert (r.iterations, r.worklist_items, r.duplicates) == (3, 40, 1)
    assert r.edges_touched == 33 + 39 + 8


# --- 2. work donation (thread mapping) ---------------------------------------------------------
#
# The star of test_engine_hand_counted.py: vertex 0 joined to 1..40 (edges 0..39, neighbours
# 1..40; leaf i's edge is 39 + i, neighbour 0), 41..63 isolated. One worklist launch of slots
# 0..31 with block_size=32: one warp, one block; vertex 0 has 40 edges, the 31 leaves 1 each:
# block edges 71, cap = ceil(71 / 32) + T = 3 + T.


@pytest.fixture(scope="module")
def star():
    return star_graph()


def star_block(star, **knobs):
    launch = Launch(np.arange(32), NO_WRITES, slots=np.arange(32), lookup="worklist")
    return vertex_kernel(star.indptr, star.indices, launch, Strategy(block_size=32, **knobs),
                         SERIAL)


# T, steps, cycles. own steps = max(min(40, cap), 1) = cap; box = 40 - cap; drain rounds =
# ceil(box / 32). I = check 2 + setup 3 + donate 4 + 4 * steps + pop 2 * drain rounds, round
# trips 2 + 2 * steps.
#   T=0: cap 3, box 37, 2 rounds, 5 steps: I = 9 + 20 + 4 = 33, 12 round trips -> 1233.
#   T=2: cap 5, box 35, 2 rounds, 7 steps: I = 9 + 28 + 4 = 41, 16 round trips -> 1641.
#   T=10: cap 13, box 27, 1 round, 14 steps: I = 9 + 56 + 2 = 67, 30 round trips -> 3067.
#   T=37: cap 40, nothing donated: the plain thread kernel, 40 steps, I = 5 + 160 = 165,
#     82 round trips -> 8365 (also without a donation knob).
DONATIONS = [(0, 5, 1233), (2, 7, 1641), (10, 14, 3067), (37, 40, 8365), (None, 40, 8365)]


@pytest.mark.parametrize("threshold, steps, cycles", DONATIONS)
def test_donation_steps_and_cycles(star, threshold, steps, cycles):
    cost = star_block(star, donate_threshold=threshold)
    assert cost.simd_issued == 32 * steps
    assert cost.simd_active == 71
    # the thread mapping has no intra-group waste: every idle lane-step is U_R
    assert (cost.u_a, cost.u_r) == (0, 32 * steps - 71)
    assert cost.cycles == cycles


def test_donation_sectors(star):
    # T=2. SISD: entries 0..31 (4 sectors), bounds 0..31 (4) and 1..32 (5): 13.
    # Own steps: step 0 has lane 0 on edge 0 and leaves 1..31 on edges 40..70: list sectors
    #   0, 5, 6, 7, 8 (5), status words 1 and 0 (1); steps 1..4: lane 0 alone on edges 1..4,
    #   neighbours 2..5 (1 + 1 each, 8).
    # Drain round 0: box entries 0..31 = edges 5..36 (sectors 0..4: 5), neighbours 6..37
    #   (0..4: 5); round 1: edges 37..39 (1), neighbours 38..40 (sectors 4, 5: 2).
    # Total 13 + 6 + 8 + 10 + 3 = 40; without donation 13 + 6 + 39 * 2 = 97.
    assert star_block(star, donate_threshold=2).transactions == 40
    assert star_block(star).transactions == 97


def test_donation_partial_block(star):
    # block_size=64 but only one warp unit of slots: the model's block holds 32 threads (its
    # drain divides by 32), so its mean must too: cap = ceil(71 / 32) + 2 = 5, box 35, 2
    # drain rounds, 7 steps -- the same as block_size=32.
    cost = vertex_kernel(
        star.indptr, star.indices,
        Launch(np.arange(32), NO_WRITES, slots=np.arange(32), lookup="worklist"),
        Strategy(block_size=64, donate_threshold=2), PAIR,
    )
    assert cost.simd_issued == 32 * 7


# --- 3. the temporal hybrid ----------------------------------------------------------------------
#
# Graph "relay" (27 vertices, undirected): 0-1, 0-2, 1-3, 2-3, 3-k for k in 4..23, 4-24, 5-24,
# 6-25, 24-26. CSR: 0: edges 0, 1 (1, 2); 1: 2, 3 (0, 3); 2: 4, 5 (0, 3); 3: 6..27 (1, 2,
# 4..23); 4: 28, 29 (3, 24); 5: 30, 31 (3, 24); 6: 32, 33 (3, 25); v in 7..23: 27 + v (3);
# 24: 51..53 (4, 5, 26); 25: 54 (6); 26: 55 (24).
# BFS from 0 stores: 0->1, 0->2 | 1->3, 2->3 | 3->4..23 | 4->24, 5->24, 6->25 | 24->26 | none.
# switch_to_topology 0.25 (27 * 0.25 = 6.75 items), switch_to_data 0.1 (2.7 vertices):
#   it. 0 data, worklist [0] (1 <= 6.75); pushes [1, 2]
#   it. 1 data, [1, 2]; 1->3 and 2->3 store in the same step (both second edges) and both
#       push: [3, 3]
#   it. 2 data, [3, 3] (one duplicate: the second copy finds its stores done); pushes 20 >
#       6.75 items -> the next runs as a sweep; a scatter kernel sets the 20 flags
#   it. 3 topology, active 4..23; reaches {24, 25}: 2 < 2.7 -> back to data; a compaction
#       kernel writes [24, 25]
#   it. 4 data, [24, 25]; pushes [26]
#   it. 5 data, [26]; nothing.


@pytest.fixture(scope="module")
def relay():
    pairs = [(0, 1), (0, 2), (1, 3), (2, 3)] + [(3, k) for k in range(4, 24)]
    pairs += [(4, 24), (5, 24), (6, 25), (24, 26)]
    src, dst = np.array(pairs).T
    return Graph.from_edges(src, dst, 27, name="relay")


@pytest.fixture(scope="module")
def relay_bfs(relay):
    return functional_run(relay, "bfs", source=0)


TEMPORAL = Strategy(driven="temporal", switch_to_topology=0.25, switch_to_data=0.1,
                    block_size=32)


def test_scatter_and_compaction_kernels():
    # Scatter of 20 items: one warp reads 20 entries (3 sectors) and stores 20 flags (one
    # scattered sector each, as documented: the kernel is given the item count only, so it
    # cannot see that vertices 4..23 share 3 sectors), check 2 + vertex_store 1 = 3
    # instructions, 2 round trips.
    scatter = scatter_kernel(20, TEMPORAL, SERIAL)
    assert (scatter.cycles, scatter.instructions, scatter.transactions) == (203, 3, 23)
    # Compaction of 27 flags with 24, 25 set, as kernels.cu's compact_flags: one launch, one
    # warp reads 32 flag words (4 sectors); its flagged lanes clear their flags (1 sector,
    # vertex_store 1) and push warp-aggregated (push 2 + aggregate 3, the tail atomic, 1
    # sector, waited for: 1 round trip on SERIAL) 2 items at consecutive slots (1 sector);
    # check 2: 8 instructions, 2 round trips -> 208, 7 sectors, 1 atomic.
    compaction = compaction_kernel(27, np.array([24, 25]), TEMPORAL, SERIAL)
    assert (compaction.launches, compaction.cycles, compaction.instructions,
            compaction.transactions, compaction.atomics) == (1, 208, 8, 7, 1)
    # BFS's compact_levels reads levels and clears nothing: 7 instructions, 6 sectors.
    levels = compaction_kernel(27, np.array([24, 25]), TEMPORAL, SERIAL, clears=False)
    assert (levels.launches, levels.cycles, levels.instructions, levels.transactions) == (
        1, 207, 7, 6)


# Per iteration on SERIAL (thread mapping, atomic push, one warp each):
# (a pushing step costs push 2 + aggregate 3 instructions, a round trip and one tail atomic)
#   0: [0], 2 steps, both push: I = 5 + 8 + 5*2 = 23, round trips 2 + 4 + 2 = 8 -> 823.
#   1: [1, 2], 2 steps, step 1 pushes twice: I = 5 + 8 + 5 = 18, 2 + 4 + 1 = 7 -> 718.
#   2: [3, 3], 22 steps, 20 pushing (the first copy's lane): I = 5 + 88 + 100 = 193, round
#      trips 2 + 44 + 20 = 66 -> 6793; no scatter: BFS's sweeps find their vertices by
#      level (kernels.cu's runner launches none for BFS).
#   3: the sweep over 27 vertices, one warp, 2 steps (vertices 4, 5, 6 have degree 2):
#      check 2, setup 3, counting its activations (a warp scan 5 and one atomic), 8 SIMD:
#      I = 18, round trips 1 + 1 + 4 + 1 (step 1's lanes claim 24, 25 with an exchange
#      and wait for the old flag) = 7 -> 718; + compact_levels 207 = 925 (2 launches).
#   4: [24, 25], 3 steps, step 2 pushes 26: I = 5 + 12 + 5 = 22, 2 + 6 + 1 = 9 -> 922.
#   5: [26], 1 step: I = 9, 4 round trips -> 409.
TEMPORAL_ITERATIONS = [
    ("data", 823, 1), ("data", 718, 1), ("data", 6793, 1),
    ("topology", 718 + 207, 2), ("data", 922, 1), ("data", 409, 1),
]


def test_temporal_iterations(relay_bfs):
    its = iteration_costs(relay_bfs, TEMPORAL, SERIAL)
    assert [(it.form, it.cost.cycles, it.cost.launches) for it in its] == TEMPORAL_ITERATIONS
    # duplicates: iteration 2's worklist [3, 3] holds one entry beyond its 1 distinct vertex
    assert [it.cost.duplicates for it in its] == [0, 0, 1, 0, 0, 0]


def test_temporal_run(relay, relay_bfs):
    r = simulate(relay, "bfs", TEMPORAL, SERIAL, source=0, functional=relay_bfs, trace=True)
    assert r.trace["form"].tolist() == [it[0] for it in TEMPORAL_ITERATIONS]
    assert r.cycles == sum(it[1] for it in TEMPORAL_ITERATIONS)  # 10590
    # one launch per iteration and the compaction (BFS launches no scatter)
    assert r.launches == 6 + 1
    # pushing steps 2 + 1 + 20 + 1, the sweep's activation count 1 and its 3 lanes' claims
    # (4->24, 5->24, 6->25: every storing lane exchanges its target's flag), the
    # compaction's tail atomic
    assert r.atomics == 25 + 3 + 1
    assert r.duplicates == 1


def test_deduplicated_worklist_relay(relay, relay_bfs):
    # dedup=true on the relay (SERIAL: a wait is 1 round trip). Each entry clears its flag
    # (2 instructions, a fence's round trip a position; thread mapping: one position a
    # launch); each pushing step's lanes claim their targets (3 instructions, a fence and
    # the exchange's wait: 2 round trips). Only the first push of a target lands, so
    # iteration 2 expands [3] and iteration 4 [24, 25], in the same lockstep steps as their
    # duplicated worklists did:
    #   0: 823 + I 2 + 3*2, RT 1 + 2*2 -> 31 + 100*13 = 1331
    #   1: 718 + I 2 + 3, RT 1 + 2 -> 23 + 1000 = 1023 (pushes 3, 3: one lands)
    #   2: 6793 + I 2 + 3*20, RT 1 + 2*20 -> 255 + 10700 = 10955
    #   3: 718 -> 1023 as in 1 (pushes 24, 24, 25: two land)
    #   4: 922 + I 5, RT 3 -> 27 + 1200 = 1227
    #   5: 409 + I 2, RT 1 -> 11 + 500 = 511
    r = simulate(relay, "bfs", Strategy(driven="data", dedup=True, block_size=32), SERIAL,
                 source=0, functional=relay_bfs, trace=True)
    assert r.trace["time_us"].tolist() == [1.331, 1.023, 10.955, 1.023, 1.227, 0.511]
    assert r.trace["worklist"].tolist() == [1, 2, 1, 20, 2, 1]
    assert r.duplicates == 0
    # tail atomics one a pushing step (25, as without dedup), an exchange a claim (2 + 2 + 20
    # + 3 + 1) and a clear an entry (27)
    assert r.atomics == 25 + 28 + 27


def test_dedup_claims_that_lose_push_nothing():
    # SSSP from 0 on 0 -> 1, 2, 3 (weight 1), then 1 -> 4 (5), 2 -> 4 (3), 3 -> 4 (1). With
    # W = 32 the worklist [1, 2, 3] puts one vertex in each of 3 warps, and each lowers
    # dist[4] (6, 4, 2) in its one step. Without dedup each warp pushes 4: 3 tail atomics.
    # With dedup each claims 4's in-queue flag, only warp 0's claim wins, and only it pushes
    # (the kernels return from the push when no lane of the step holds a won claim). On top
    # of the plain launch: 3 clears (2 instructions + a fence's round trip each: 102), 3
    # claiming steps (3 instructions + 2 round trips: 203), less 2 pushing steps (push 2 +
    # aggregate 3, the tail atomic's wait: 105). Atomics: 3 clears + 3 atomicMin + 3 claims
    # + 1 tail = 10 (12 had counted a tail atomic for every claim).
    g = Graph.from_edges(np.array([0, 0, 0, 1, 2, 3]), np.array([1, 2, 3, 4, 4, 4]), 6,
                         directed=True, weights=np.array([1, 1, 1, 5, 3, 1.0]))

    def launches(config):
        r = simulate(g, "sssp", Strategy.parse(config + ",driven=data,push=atomic,block_size=32"),
                     SERIAL, source=0, trace=True)
        return r.trace["time_us"].tolist(), r.trace["atomics"].tolist(), r

    plain, plain_atomics, _ = launches("mapping=vwarp,w=32")
    flagged, flagged_atomics, r = launches("mapping=vwarp,w=32,dedup=true")
    assert plain_atomics[1] == 6 and flagged_atomics[1] == 10
    assert round(flagged[1] * 1000) == round(plain[1] * 1000) + 3 * 102 + 3 * 203 - 2 * 105
    assert r.trace["worklist"].tolist()[2] == 1  # [4]
    # one warp whose one step holds all 3 claims pushes once either way: 1 clear, 1 claiming
    # step on top, no push saved
    plain, _, _ = launches("mapping=thread")
    flagged, flagged_atomics, _ = launches("mapping=thread,dedup=true")
    assert flagged_atomics[1] == 10
    assert round(flagged[1] * 1000) == round(plain[1] * 1000) + 102 + 203


def test_data_driven_relay(relay, relay_bfs):
    # Without the switch, iteration 3 expands the worklist [4..23] (2 steps, step 1 pushes
    # 24, 24, 25: I = 18, 7 round trips -> 718) and iteration 4 the worklist [24, 24, 25]
    # (3 steps, only the first copy of 24 pushes: 922): a second duplicate.
    r = simulate(relay, "bfs", Strategy(driven="data", block_size=32), SERIAL, source=0,
                 functional=relay_bfs)
    assert r.cycles == 823 + 718 + 6793 + 718 + 922 + 409
    assert r.launches == 6
    assert r.atomics == 2 + 1 + 20 + 1 + 1  # one per pushing step
    assert (r.worklist_items, r.duplicates) == (1 + 2 + 2 + 20 + 3 + 1, 2)


def test_temporal_worklist_items(relay, relay_bfs):
    # worklist_items counts the entries worklist launches expanded (Result's docstring):
    # 1 + 2 + 2 + 0 (the sweep expands no worklist) + 2 + 1 = 8.
    r = simulate(relay, "bfs", TEMPORAL, SERIAL, source=0, functional=relay_bfs, trace=True)
    assert r.trace["worklist"].tolist() == [1, 2, 2, 0, 2, 1]
    assert r.worklist_items == 8


# --- 4. WER / WER+ -------------------------------------------------------------------------------
#
# Graph "fan" (directed, 41 vertices): 0 -> 1..40 (edges 0..39), 1 -> 0, 2 (edges 40, 41),
# 2 -> 0 (edge 42). One worklist launch of slots [0, 1, 2]: one warp with 3 active lanes of
# degrees 40, 2, 1 (43 edges); the warp's edge table lists them in that order, so table
# offset o is edge o.


@pytest.fixture(scope="module")
def fan():
    src = [0] * 40 + [1, 1, 2]
    dst = list(range(1, 41)) + [0, 2, 0]
    return Graph.from_edges(np.array(src), np.array(dst), 41, directed=True, name="fan")


def fan_warp(fan, device=SERIAL, **knobs):
    launch = Launch(np.arange(3), NO_WRITES, slots=np.arange(3), lookup="worklist")
    return vertex_kernel(fan.indptr, fan.indices, launch, Strategy(block_size=32, **knobs),
                         device)


# mapping, steps, U_A, U_R, cycles, transactions
#   thread: the 40-edge lane loops 40 times: U_A 0, U_R 32*40 - 43 = 1237. I = 5 + 160,
#     82 round trips -> 8365. Sectors: SISD 3 (entries 0..2, bounds 0..2 and 1..3); step 0
#     edges 0, 40, 42 (2), neighbours 1, 0, 0 (1); step 1 edges 1, 41 (2), neighbours 2, 2
#     (1); steps 2..39 one list and one status sector each (76): 85.
#   wer: the 3 active lanes pop the 43 edges: ceil(43/3) = 15 steps; U_A = 3*15 - 43 = 2,
#     U_R = 32*15 - 45 = 435. I = check 2 + setup 3 + scan 5 + table_push 2 + (edge 4 +
#     pop 2) * 15 = 102, round trips 2 + 30 -> 3302. Sectors: step s reads edges 3s..3s+2
#     (s <= 13 counts 39, 40, 41), 2 sectors where a triple crosses 8, 16, 32, 40 (s = 2, 5,
#     10, 13) else 1, and step 14 edge 42: 15 + 4 = 19; neighbours 3s+1..3s+3 cross 8, 24, 32
#     at s = 2, 7, 10 (s <= 12: 16), step 13 neighbours 40, 0, 2 (2), step 14 neighbour 0
#     (1): 19; + SISD 3: 41.
#   wer+: all 32 lanes pop: ceil(43/32) = 2 steps; U_A = 32*2 - 43 = 21, U_R 0. I = 12 +
#     6*2 = 24, round trips 2 + 4 -> 624. Sectors: step 0 edges 0..31 (4), neighbours 1..32
#     (5); step 1 edges 32..42 (2), neighbours 33..40, 0, 2, 0 (sectors 4, 5, 0: 3); + 3: 17.
WER = [
    ("thread", 40, 0, 1237, 8365, 85),
    ("wer", 15, 2, 435, 3302, 41),
    ("wer+", 2, 21, 0, 624, 17),
]


@pytest.mark.parametrize("mapping, steps, u_a, u_r, cycles, transactions", WER)
def test_wer(fan, mapping, steps, u_a, u_r, cycles, transactions):
    cost = fan_warp(fan, mapping=mapping)
    assert cost.simd_issued == 32 * steps
    assert cost.simd_active == 43
    assert (cost.u_a, cost.u_r) == (u_a, u_r)
    assert cost.cycles == cycles
    assert cost.transactions == transactions


# --- GW's device options -------------------------------------------------------------------------
#
# simd_width 8: a warp instruction takes 4 passes. With cluster_issue a SIMD step issues only
# the 8-lane clusters that hold an active lane; SISD instructions still take 4 passes.
#   thread (fan warp): every step's lanes (0..2, then 0..1, then 0) lie in cluster 0: 160
#     SIMD instructions x 1 pass instead of 4; SISD 5 x 4 = 20; 82 round trips:
#     20 + 160 + 8200 = 8380 (8860 without cluster issue).
#   wer: lanes 0..2 pop every step: 90 x 1 pass; SISD 12 x 4 = 48; 32 round trips:
#     48 + 90 + 3200 = 3338 (3608).
#   wer+: step 0 uses lanes 0..31 (4 passes), step 1 lanes 0..10 (clusters 0, 1: 2 passes),
#     6 instructions per step: 6*4 + 6*2 = 36; 48 + 36 + 600 = 684 (696).
CLUSTERS = [
    ("thread", 8380, 8860),
    ("wer", 3338, 3608),
    ("wer+", 684, 696),
]


@pytest.mark.parametrize("mapping, clustered, full", CLUSTERS)
def test_cluster_issue(fan, mapping, clustered, full):
    assert fan_warp(fan, CLUSTER, mapping=mapping).cycles == clustered
    assert fan_warp(fan, NARROW, mapping=mapping).cycles == full


# vwarp W=32 sweep over the fan with vertices 0, 1, 2 active: 41 warp units (K = 1), each
# stages its status and row bounds (2 stage steps) and checks: SISD 2 + 2 = 4, 1 round trip;
# the active ones also set up (3) and expand: vertex 0 in 2 steps (8 SIMD instructions),
# vertices 1 and 2 in 1 (4), with 2 round trips per step.
#   narrow SIMD, no scalar unit: SISD x 4 passes, SIMD x 4:
#     v0: 28 + 32 + 500 = 560; v1, v2: 28 + 16 + 300 = 344; 38 idle: 16 + 100 = 116.
#   scalar unit (K = 1: SISD is warp-uniform, 1 cycle each on the scalar pipe):
#     v0: 7 + 32 + 500 = 539; v1, v2: 7 + 16 + 300 = 323; idle: 4 + 100 = 104.
#   scalar unit and cluster issue: v0's step 0 fills 4 clusters, step 1 lanes 0..7 one:
#     8 * 5 / 2 = 20 passes -> 527; v1 (lanes 0, 1) and v2 (lane 0): 4 -> 311.
SCALARS = [
    (NARROW, 560 + 2 * 344 + 38 * 116),
    (SCALAR, 539 + 2 * 323 + 38 * 104),
    (SCALAR_CLUSTER, 527 + 2 * 311 + 38 * 104),
]


@pytest.mark.parametrize("device, cycles", SCALARS)
def test_scalar_unit_virtual_warp_32(fan, device, cycles):
    launch = Launch(np.arange(3), NO_WRITES)
    strategy = Strategy(mapping="vwarp", w=32, block_size=32)
    assert vertex_kernel(fan.indptr, fan.indices, launch, strategy, device).cycles == cycles


def test_scalar_unit_ignores_thread_mapping(fan):
    # K = 32 threads hold different vertices: SISD is not warp-uniform, so the scalar pipe
    # does not take it: 5 x 4 + 160 x 4 + 8200 = 8860 either way.
    assert fan_warp(fan, SCALAR).cycles == fan_warp(fan, NARROW).cycles == 8860


def test_staged_worklist_round_trips(fan):
    # vwarp W=32 over the worklist [0, 1, 2]: each warp reads its entry, then (dependent on
    # it) the row bounds: 2 round trips, as the thread mapping's worklist launch charges.
    # SISD check 2 + setup 3 + stage 2 = 7, SIMD 8 / 4 / 4, round trips 2 + 2 * steps:
    # (15 + 600) + 2 * (11 + 400) = 1437.
    cost = fan_warp(fan, mapping="vwarp", w=32)
    assert cost.cycles == 615 + 2 * 411


@pytest.mark.parametrize("late, pushed, duplicates", [
    (2.0, [5, 4, 5], 1),  # 2->5 (1 + 2) lowers 5 below 1->5's 1 + 3: pushed again
    (3.0, [5, 4], 0),  # a tie lowers nothing
    (5.0, [5, 4], 0),
])
def test_later_step_lowers_again(late, pushed, duplicates):
    # SSSP from 0 over 0->1, 0->2 (weight 1), 1->5 (3), 2->4 (1), 2->5 (late). The second
    # launch's worklist [1, 2] puts 1 on lane 0 and 2 on lane 1: step 0 runs 1->5 and 2->4,
    # step 1 runs 2->5. Every edge improves on the distances before the launch, but an
    # atomicMin pushes only when its old value was higher: 2->5 pushes 5 again only if it
    # comes below 1->5's 4 (BFS's plain stores would push nothing in step 1).
    graph = Graph.from_edges(np.array([0, 0, 1, 2, 2]), np.array([1, 2, 5, 4, 5]), 6,
                             weights=np.array([1.0, 1.0, 3.0, 1.0, late]), directed=True)
    fr = functional_run(graph, "sssp", source=0)
    work = fr.iterations[1]
    assert work.writes.tolist() == [2, 3, 4]
    assert work.write_values.tolist() == [4.0, 2.0, 1.0 + late]
    launch = Launch(work.active, work.writes, slots=np.array([1, 2]), lookup="worklist",
                    push="atomic", write_values=work.write_values)
    cost = vertex_kernel(fr.indptr, fr.indices, launch, Strategy(), SERIAL, reads_weights=True,
                         atomic_updates=True)
    assert cost.pushed.tolist() == pushed
    run = simulate(graph, "sssp", "mapping=thread,driven=data", SERIAL, source=0, trace=True)
    assert run.trace["worklist"].tolist() == [1, 2, len(pushed)]
    assert run.duplicates == duplicates


@pytest.mark.parametrize("push, cycles", [("atomic", 36 + 1600), ("chunked", 31 + 1200),
                                          ("prefix", 1234 + SCAN_CYCLES)])
def test_returning_atomics_wait_their_round_trips(broom_bfs, push, cycles):
    """With a returned atomic value two round trips away (``atomic_round_trips``, the H100's
    figure), each wait for one costs 200 cycles rather than 100: the atomic push waits once
    per pushing step, (2, 3) times -> L = (27 + 1200, 36 + 1600); chunked once per pushing
    unit -> (26 + 1000, 31 + 1200); prefix waits on no atomic (the slower warp's L each)."""
    slow_atomics = dataclasses.replace(PAIR, name="pair-atomics", atomic_round_trips=2)
    launch = worklist_launch(broom_bfs, 1, range(1, 34), push=push)
    cost = vertex_kernel(broom_bfs.indptr, broom_bfs.indices, launch, Strategy(block_size=64),
                         slow_atomics)
    assert cost.cycles == cycles


def two_unit_worklist(push):
    """Vertex 0 (edges to 33, 34) on lane 0 of the first warp, vertex 32 (edge to 35) on lane
    0 of the second; the 31 slots between hold vertices of no edges. Every edge stores."""
    sources = np.array([0, 0, 32])
    graph = Graph.from_edges(sources, np.array([33, 34, 35]), 36, directed=True)
    fr = functional_run(graph, "bfs", source=0)
    launch = Launch(np.arange(33), np.arange(3), slots=np.arange(33), lookup="worklist",
                    push=push)
    return fr, launch


@pytest.mark.parametrize("device, block_size, push, pushed", [
    # both warps resident at once: step 0 of both pushes before step 1 of the first
    (PAIR, 64, "atomic", [33, 35, 34]),
    # one resident warp: the second warp starts when the first ends
    (SERIAL, 32, "atomic", [33, 34, 35]),
    # a chunked batch lands when its warp is done: warp 0's (fixed scramble: unit 0 first)
    (PAIR, 64, "chunked", [33, 34, 35]),
    # prefix offsets follow the slots, whenever the stores happen
    (PAIR, 64, "prefix", [33, 34, 35]),
])
def test_pushes_land_in_the_order_their_steps_issue(device, block_size, push, pushed):
    fr, launch = two_unit_worklist(push)
    cost = vertex_kernel(fr.indptr, fr.indices, launch, Strategy(block_size=block_size), device)
    assert cost.pushed.tolist() == pushed


def test_arrival_order_by_wave_then_step_then_scrambled_warp():
    # pushes of units 0, 0, 0, 1, 1, 2 at global steps 0, 1, 1, 3, 4, 5; unit 1 starts at
    # step 3, unit 2 at 5; two units resident. Wave 0 step 0: units 0, 1 (hashes 0 <
    # 2654435761); step 1: unit 0's two lanes in lane order, then unit 1; wave 1: unit 2.
    unit = np.array([0, 0, 0, 1, 1, 2])
    step = np.array([0, 1, 1, 3, 4, 5])
    first = np.array([0, 3, 5])
    assert arrival_order(unit, step, "atomic", 2, first).tolist() == [0, 3, 1, 2, 4, 5]
    # chunked: whole warps; unit 2's hash (2 x 2654435761 mod 2**32 = 1013904226) comes
    # before unit 1's when they share a wave
    assert arrival_order(unit, step, "chunked", 4, first).tolist() == [0, 1, 2, 5, 3, 4]
    # the same pushes given out of lane order, with their lanes: the same arrival
    shuffled = np.array([4, 1, 5, 0, 3, 2])
    for push, resident in ("atomic", 2), ("chunked", 4):
        want = arrival_order(unit, step, push, resident, first)
        got = arrival_order(unit[shuffled], step[shuffled], push, resident, first,
                            lane=shuffled)
        assert shuffled[got].tolist() == want.tolist()


@pytest.mark.parametrize("lanes", [3000, 1 << 16, (1 << 16) + 1])
def test_arrival_order_with_lanes_is_the_lane_ordered_one(lanes):
    """Pushes given out of lane order with their lanes (one wave of few lanes: two radix
    sorts; more lanes than 16 bits hold, or several waves: the packed keys) arrive as the
    same pushes given in lane order."""
    rng = np.random.default_rng(lanes)
    units = 40
    unit_steps = rng.integers(1, 9, units)
    first = np.cumsum(unit_steps) - unit_steps
    lane = np.sort(rng.choice(lanes, 500, replace=False))
    unit = np.sort(rng.integers(0, units, lane.size))
    step = first[unit] + rng.integers(0, unit_steps[unit])
    shuffled = rng.permutation(lane.size)
    for push in ("atomic", "chunked"):
        for resident in (64, 16):
            want = arrival_order(unit, step, push, resident, first)
            got = arrival_order(unit[shuffled], step[shuffled], push, resident, first,
                                lane=lane[shuffled], units=units, lanes=lanes)
            assert shuffled[got].tolist() == want.tolist()


# --- PageRank's worklist: entries that push themselves ------------------------------------------
#
# One launch of slots 0..31 of the star (vertex 0: 40 edges, the leaves 1 each), every entry
# pushing itself, thread mapping, block_size=32 (one warp, one block). The warp: check 2 +
# setup 3 + the rank's store 1 + 4 * 40 SIMD = 166 instructions; round trips: the entry and
# its row bounds (2), then the gathering loop's 3 load groups (16, 16, 8) at 2 each (6).
# The block's sum of rank changes: 1 atomic. The pushes, all 32 in one step:
#   atomic: push 2 + aggregate 3 -> 171 instructions, a round trip for the tail's old value,
#     1 tail atomic: 171 + 9 * 100 = 1071 cycles, 2 atomics;
#   block: an entry pushes once, after its loop, so the block runs one round: push_store 1 +
#     scan 5 + 3 barriers (6) + log2(1 warp) -> 178 instructions, a round trip for the base:
#     178 + 9 * 100 = 1078 (a round every step of the hub's 40-step loop, as a lowering
#     launch's block push runs, would be 166 + 1 + 40 * 11 = 607 instructions).


@pytest.mark.parametrize("push, instructions, cycles", [("atomic", 171, 1071),
                                                         ("block", 178, 1078)])
def test_pagerank_entries_push_themselves_once(star, push, instructions, cycles):
    launch = Launch(np.arange(32), np.zeros(0, dtype=np.int64), slots=np.arange(32),
                    lookup="worklist", push=push, pushes="self", self_pushes=np.arange(32))
    cost = vertex_kernel(star.indptr, star.indices, launch,
                         Strategy(block_size=32, driven="data", push=push), SERIAL,
                         stores_per_vertex=True)
    assert cost.instructions == instructions
    assert cost.cycles == cycles
    assert cost.atomics == 2


# --- the spatial hybrid's partition tags (kernels.cu spatial_launch) --------------------------
# BFS on the star from 0, partitions of 16, block_size=32, thread mapping. Launch 0 lists
# partition 0 (slots 0..15, one warp position); its slot's thread reads the partition's
# worklist entry, then its vertex's status (a load whose address waits for the entry), then
# vertex 0's row bounds; the hub's 40 edges take 40 steps, each storing a new leaf. A storing
# lane exchanges its target partition's tag and pushes the partition where the old tag was
# not this launch's: per storing step 2 instructions (exchange, compare) and a round trip for
# the old tag. Without the tags (as counted before): I = 180, round trips 85 (status 1, row 1,
# 2 a step, the 3 partitions' pushes) -> 8680. With them: I = 180 + 2 * 40 = 260, round trips
# 85 + 40 (tags) + 1 (entry) = 126 -> 260 + 12600 = 12860; 40 tag exchanges and 3 tail
# atomics. Launch 1 lists partitions 0..2 (48 slots, 2 warp positions), none storing: 18
# instructions, 8 + 2 entry round trips -> 1018.
# At W = 4 the kernel stages nothing either: a unit (8 slots, one warp position) reads the
# entries, then the statuses, then, with an active slot, the rows: 3 round trips where the
# vwarp sweep's staging takes 1. Launch 0's 2 units (one active), the hub's 10 steps storing:
# I = 66 + 20 = 86, 1300 more cycles (10 tags; 3 + 2 lookups for the staging's 2) -> 3886;
# launch 1's 6 units, each active: 1866 + 6 * 200 = 3066.
@pytest.mark.parametrize("knobs,cycles,instructions", [
    ("mapping=thread", [12860, 1018], [260, 18]),
    ("mapping=vwarp,w=4", [3886, 3066], [86, 66]),
])
def test_spatial_partition_tags_are_waited_for(knobs, cycles, instructions):
    fr = functional_run(star_graph(), "bfs", source=0)
    strategy = Strategy.parse(f"{knobs},driven=spatial,partition=16,block_size=32")
    launches = [c.cost for c in iteration_costs(fr, strategy, SERIAL)]
    assert [c.cycles for c in launches] == cycles
    assert [c.instructions for c in launches] == instructions
    assert launches[0].atomics == 43 and [c.launches for c in launches] == [1, 1]
