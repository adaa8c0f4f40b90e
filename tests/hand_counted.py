"""The device and graph the hand-counted cost tests share (counts done on paper).

SERIAL: one SM running one warp at a time, one instruction per cycle, DRAM latency 100, no
bandwidth, atomic, launch or host limits, an atomic's returned value one round trip away: a
launch takes the sum over its warps of instructions + 100 * round trips. The star: vertex 0
joined to 1..40, 41..63 isolated.
"""

import numpy as np

from simulator import Device
from simulator import Graph

SERIAL = Device(
    "serial", simd_width=32, sms=1, schedulers=1, max_warps_per_sm=1, max_blocks_per_sm=1,
    clock_ghz=1.0, dram_bandwidth_gbs=1e9, dram_latency_cycles=100,
    lsu_sectors_per_cycle=1e9, atomic_cycles=0, launch_overhead_us=0, host_roundtrip_us=0,
    atomic_round_trips=1,
)


def star_graph(weights: np.ndarray | None = None) -> Graph:
    """Vertex 0 joined to 1..40 (edges 0..39; leaf i's edge is 39 + i), 41..63 isolated."""
    return Graph.from_edges(np.zeros(40, dtype=np.int64), np.arange(1, 41), 64,
                            weights=weights, name="star64")


# a timed chunk position in dependent round trips, as counted from the kernels' code: the
# status read; an active position's row read, then per edge step the neighbour id and the
# atomic on it
def after_read(edge_steps: int) -> int:
    """The round trips an active position takes beyond its status read."""
    return 1 + 2 * edge_steps


def store_time(start: int, edge_step: int) -> int:
    """When a lane of ``edge_step`` of the position read at ``start`` stores."""
    return start + 1 + 2 * (edge_step + 1)


def position_steps(groups: dict, degree: dict, lanes: int, pooled: bool
                   ) -> tuple[dict, dict, dict]:
    """For a timed chunk sweep's (warp, position) ``groups`` of vertices: the steps each
    takes after its read (the most of its vertices' ceil(degree / ``lanes``); ``pooled``:
    its vertices' edges together over ``lanes`` lanes, or one lane a vertex where 0), the
    lanes its edges go over at once, and each vertex's first place in its group's edges."""
    steps, width, first_edge = {}, {}, {}
    for key, members in groups.items():
        if pooled:
            width[key] = lanes or len(members)
            steps[key] = -(-sum(degree[v] for v in members) // width[key])
            placed = 0
            for v in members:
                first_edge[v] = placed
                placed += degree[v]
        else:
            width[key] = lanes
            steps[key] = max(-(-degree[v] // lanes) for v in members)
            first_edge.update({v: 0 for v in members})
    return steps, width, first_edge
