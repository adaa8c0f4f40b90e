"""How a view's active slots run their edges (``_Expansion``): which slots expand (the others,
deferred outliers, go to the outlier kernel), each edge's lane and warp step under the
strategy's mapping (its ``Mapping.lanes``), and which lanes store (``storing_lanes``,
``sweeps_storing_lanes``). See docs/model.md, "Layout" and "Other lane layouts"."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simulator.device import Device
from simulator.functional import edge_ids
from simulator.lanes import Lanes
from simulator.mappings import MAPPINGS
from simulator.mappings import LaneRequest
from simulator.slot_views import SlotView
from simulator.sorted_runs import first_of_each
from simulator.sorted_runs import member_mask
from simulator.strategy import Strategy


@dataclass(frozen=True, eq=False)
class _Expansion:
    """How a view's active slots run their edges: the slots that expand (the others,
    deferred outliers, go to the outlier kernel), with their vertices and degrees, their
    edges (slot by slot, CSR order within) and lanes (the mapping's ``lanes``), and each
    unit's threads that share work (donating ones; None where the mapping shares none)."""

    slots: np.ndarray
    vertices: np.ndarray
    degree: np.ndarray
    starts: np.ndarray  # the expanding vertices' first edges
    deferred_slots: np.ndarray
    deferred_vertices: np.ndarray
    edges: np.ndarray
    lanes: Lanes
    donating: np.ndarray | None


def expand_lanes(indptr: np.ndarray, view: SlotView, strategy: Strategy, device: Device,
                 segments: np.ndarray, ends: np.ndarray) -> _Expansion:
    """Which of a view's active slots expand and where each of their edges runs (``segments``
    and ``ends``: each launch's units in the view)."""
    layout, ws = view.layout, device.warp_size
    active_slots, active_vertex = view.active_slots, view.active_vertex
    slots, vertices, degree = active_slots, active_vertex, view.active_degree
    deferred_slots = deferred_vertices = active_slots[:0]
    if strategy.defer_threshold is not None:
        outlier = degree > strategy.defer_threshold
        if outlier.any():
            deferred_slots, deferred_vertices = active_slots[outlier], active_vertex[outlier]
            expanding = ~outlier
            slots, vertices, degree = slots[expanding], vertices[expanding], degree[expanding]

    starts = indptr[vertices].astype(np.int64, copy=False)
    edges, local = edge_ids(indptr, vertices, with_local=True, lengths=degree, starts=starts)
    # lane positions matter only where a step issues just the clusters holding a lane
    want_lanes = device.cluster_issue and device.simd_width < ws
    request = LaneRequest(slots, degree, local, layout, ws, want_lanes,
                          lambda: _launch_unit_numbers(view, segments, ends), segments)
    lanes, donating = MAPPINGS[strategy.mapping].lanes(strategy, request)
    return _Expansion(slots, vertices, degree, starts, deferred_slots, deferred_vertices, edges,
                      lanes, donating)


def _launch_unit_numbers(view: SlotView, segments: np.ndarray,
                         ends: np.ndarray) -> np.ndarray:
    """Each unit's number in its own launch's layout."""
    if view.units is not None:
        return view.units
    numbers = np.arange(view.layout.units)
    if segments.size > 1:
        numbers -= np.repeat(segments, ends - segments)
    return numbers


def storing_lanes(edges, vertices, degree, launch, m, first_copy=None):
    """Positions, in the expansion's edge order, of the lanes that store (``vertices`` and
    ``degree``: each expanding slot's; ``first_copy``: whether each is its vertex's first
    copy in the worklist, where the expansion is a piece of a launch)."""
    if launch.store_lanes is not None:
        return launch.store_lanes
    writes = launch.writes
    if writes.size == 0 or edges.size == 0:
        return np.zeros(0, dtype=np.int64)
    if launch.lookup == "status":  # distinct ascending vertices: ascending runs of edges
        if edges.size * 4 >= m:  # most of the graph's edges: mark the writes in a table
            return np.flatnonzero(member_mask(edges, writes, m))
        return _positions_in_runs(edges, degree, writes)
    # a worklist may hold a vertex twice: its first slot stores, later copies find it done
    if first_copy is None:
        first_copy = np.zeros(vertices.size, dtype=bool)
        first_copy[first_of_each(vertices)] = True
    lane_stores = member_mask(edges, writes, m)
    lane_stores &= np.repeat(first_copy, degree)
    return np.flatnonzero(lane_stores)


def _positions_in_runs(haystack: np.ndarray, lengths: np.ndarray, needles: np.ndarray,
                       run_shift: np.ndarray | None = None) -> np.ndarray:
    """Indices in ``haystack`` of those ascending ``needles`` it contains, where the haystack
    is runs of consecutive ids, ``lengths`` long, ascending from run to run (the edges of
    ascending vertices; each run's ids plus its ``run_shift`` where given): a search among
    the runs' starts rather than all their ids."""
    held = lengths > 0
    lengths = lengths[held]
    if lengths.size == 0:
        return np.zeros(0, dtype=np.int64)
    offsets = np.cumsum(lengths) - lengths
    starts = haystack[offsets]
    if run_shift is not None:
        starts = starts + run_shift[held]
    if needles.size > starts.size:  # many needles: find where each run starts among them
        run = np.bincount(np.searchsorted(needles, starts), minlength=needles.size + 1)
        run = np.maximum(np.cumsum(run[:-1]) - 1, 0)
    else:
        run = np.maximum(np.searchsorted(starts, needles, side="right") - 1, 0)
    within = needles - starts[run]
    inside = (within >= 0) & (within < lengths[run])
    return within[inside] + offsets[run[inside]]


# Several sweeps' storing lanes are looked up in a table of their writes where the writes
# number at least 1/200 of the graph's edges: clearing the table costs about 0.1 ns an edge,
# searching for a write about 20 ns (measured on this project's machines).
_TABLE_PER_WRITE = 200


def sweeps_storing_lanes(edges, expanding_slots, vertices, degree, launches, sweep_of_unit,
                         per_unit, m):
    """``storing_lanes`` of several sweeps viewed together (``_dirty_view``): through a
    table of all their writes where no vertex expands in two of them (then an edge is a
    lane of one sweep at most: a BFS's levels), else each sweep's edges and writes keyed by
    the sweep, so that each is found among its own sweep's."""
    if sum(launch.writes.size for launch in launches) * _TABLE_PER_WRITE >= m:
        expands = np.zeros(int(vertices.max(initial=-1)) + 1, dtype=bool)
        expands[vertices] = True
        if np.count_nonzero(expands) == vertices.size:
            stores = np.zeros(m, dtype=bool)
            for launch in launches:
                stores[launch.writes] = True
            return np.flatnonzero(stores[edges])
    writes = np.concatenate([launch.writes.astype(np.int64) + i * m
                             for i, launch in enumerate(launches)])
    return _positions_in_runs(edges, degree, writes,
                              sweep_of_unit[expanding_slots // per_unit] * m)
