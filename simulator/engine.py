"""The warp cost model's entry points: the cost of vertex-kernel launches (one, several sweeps, or
several worklist launches), their work laid out on lanes exactly, and its time. The model, its
equations and which module holds each phase: docs/model.md ("The cost model in detail")."""

from __future__ import annotations

import numpy as np

from simulator.costs import COSTS
from simulator.costs import InstructionCosts
from simulator.costs import LaunchCost
from simulator.device import Device
from simulator.functional import IterationWork
from simulator.launch import Launch
from simulator.launch_costs import cost_launches
from simulator.layout import TaskLayout
from simulator.layout import status_layouts
from simulator.layout import task_layout
from simulator.layout import worklist_layouts
from simulator.slot_views import full_view
from simulator.slot_views import joined_view
from simulator.slot_views import listed_view
from simulator.slot_views import sweeps_view
from simulator.strategy import Strategy
from simulator.timing import working_set_bytes
from simulator.worklist_pushes import LaunchPushes
from simulator.worklist_pushes import Pushers
from simulator.worklist_pushes import WriteSources
from simulator.worklist_pushes import launch_pushes
from simulator.worklist_pushes import write_sources

# what the rest of the package calls: the kernels' costs here, and from the modules that hold
# their phases the launch and the pushes worked out ahead of a worklist launch's cost
__all__ = [
    "Launch", "LaunchPushes", "Pushers", "WriteSources", "batches_sweeps", "batches_worklists",
    "launch_pushes", "sweep_kernels", "task_layout", "vertex_kernel", "working_set_bytes",
    "worklist_kernels", "write_sources",
]

# Sweeps cost only the units holding an active vertex and take the others' cost from the
# layout (``timing.clean_sweep``); False costs every unit of every sweep (the reference path).
_SPARSE_SWEEPS = True


def batches_worklists(launch: Launch) -> bool:
    """Whether ``worklist_kernels`` takes this launch: one with listed slots (a worklist or
    a spatial hybrid's partitions), at least one, that builds a worklist."""
    return launch.slots is not None and launch.slots.size > 0 and launch.push is not None


def worklist_kernels(
    indptr: np.ndarray,
    indices: np.ndarray,
    launches: list[Launch],
    pushes: list[LaunchPushes] | None,
    strategy: Strategy,
    device: Device,
    *,
    reads_weights: bool = False,
    stores_per_vertex: bool = False,
    atomic_updates: bool = False,
    costs: InstructionCosts = COSTS,
    hit_rate: float,
) -> list[LaunchCost]:
    """``vertex_kernel``'s cost of each of several worklist-building launches
    (``batches_worklists``) under one strategy, given what each pushed (``launch_pushes``),
    costed together: as with ``sweep_kernels``, numpy's fixed cost per call is paid once for
    all of them; only working out the pushes, which the next launch needs, goes launch by
    launch. ``pushes`` None: launches that push partitions (a spatial hybrid's, whose next
    launch lists its partitions by itself), their pushes worked out here, together."""
    for launch in launches:
        if not batches_worklists(launch):
            raise ValueError(f"worklist_kernels takes launches with listed slots that push "
                             f"(see batches_worklists), not {launch}")
        if pushes is None and launch.pushes != "partitions":
            raise ValueError(f"worklist_kernels needs the pushes of launches that push "
                             f"{launch.pushes}, worked out ahead (launch_pushes)")
    sizes = np.array([launch.slots.size for launch in launches])
    if launches[0].lookup == "worklist":
        layout = worklist_layouts(sizes, strategy, device,
                                  np.concatenate([launch.slots for launch in launches]))
    else:
        layout = status_layouts(sizes, strategy, device)
    view = (joined_view(layout, [p.units for p in pushes], [p.active_slots for p in pushes],
                        [p.active_vertex for p in pushes], [p.active_degree for p in pushes])
            if pushes is not None else listed_view(indptr, launches, layout))
    return cost_launches(indptr, indices, launches, view, view.layout, strategy, device,
                         reads_weights=reads_weights, stores_per_vertex=stores_per_vertex,
                         atomic_updates=atomic_updates, costs=costs, hit_rate=hit_rate,
                         pushes=pushes)


def vertex_kernel(
    indptr: np.ndarray,
    indices: np.ndarray,
    launch: Launch | IterationWork,
    strategy: Strategy,
    device: Device,
    *,
    reads_weights: bool = False,
    stores_per_vertex: bool = False,
    atomic_updates: bool = False,
    costs: InstructionCosts = COSTS,
    layout: TaskLayout | None = None,
    hit_rate: float | None = None,
) -> LaunchCost:
    """Cost of one vertex-kernel launch (plus its outlier kernel and worklist scan).

    Pass the ``layout`` of ``task_layout`` to share its work across a run's sweeps, and the
    run's L2 ``hit_rate`` (default: from the graph's working set, see ``working_set_bytes``).
    ``atomic_updates``: storing lanes lower their target with an atomic (atomicMin), as SSSP
    and CC kernels must (BFS stores plainly); a lane that pushes waits for its old value,
    and a sweep keeps activity in flags apart from the values: each storing lane sets its
    target's flag for the next sweep, and each active vertex clears its own.
    """
    if isinstance(launch, IterationWork):
        launch = Launch.sweep(launch)
    n = indptr.size - 1
    sweep = launch.slots is None
    if hit_rate is None:
        hit_rate = device.l2_hit_rate(working_set_bytes(
            n, indices.size, reads_weights=reads_weights, worklist=launch.lookup == "worklist"
        ))
    n_slots = n if sweep else launch.slots.size
    if layout is None:
        listed = None if sweep or launch.lookup == "status" else launch.slots.astype(np.int64)
        layout = task_layout(n_slots, strategy, device, listed)
    if sweep and launch.push is None and _SPARSE_SWEEPS:
        view = sweeps_view(indptr, [launch.active], layout, strategy, device)
    else:
        view = full_view(indptr, launch, layout, n_slots)
    return cost_launches(indptr, indices, [launch], view, layout, strategy, device,
                         reads_weights=reads_weights, stores_per_vertex=stores_per_vertex,
                         atomic_updates=atomic_updates, costs=costs, hit_rate=hit_rate)[0]


def batches_sweeps(launch: Launch, strategy: Strategy) -> bool:
    """Whether ``sweep_kernels`` takes this launch: a plain sweep (no worklist built, no
    activations counted) with an active vertex, costed sparsely."""
    return (_SPARSE_SWEEPS and launch.slots is None and launch.push is None
            and not launch.count_activations and launch.active.size > 0)


def sweep_kernels(
    indptr: np.ndarray,
    indices: np.ndarray,
    launches: list[Launch],
    strategy: Strategy,
    device: Device,
    *,
    reads_weights: bool = False,
    stores_per_vertex: bool = False,
    atomic_updates: bool = False,
    costs: InstructionCosts = COSTS,
    layout: TaskLayout,
    hit_rate: float,
) -> list[LaunchCost]:
    """``vertex_kernel``'s cost of each of several sweeps (``batches_sweeps``) under one
    strategy, costed together: numpy's fixed cost per call is paid once for all of them
    rather than per sweep, which is most of a small sweep's cost (a road graph's hundreds of
    levels hold a few hundred vertices each). Either every sweep gives its storing lanes
    (SSSP's and CC's, ``atomic_updates``) or none does (plain stores: BFS, PageRank)."""
    for launch in launches:
        if not batches_sweeps(launch, strategy):
            raise ValueError(f"sweep_kernels takes plain sweeps with an active vertex only "
                             f"(see batches_sweeps), not {launch}")
    if len({launch.store_lanes is None for launch in launches}) > 1:
        raise ValueError("sweep_kernels takes sweeps that all give their storing lanes or "
                         "none that does")
    view = sweeps_view(indptr, [launch.active for launch in launches], layout, strategy,
                       device)
    return cost_launches(indptr, indices, launches, view, layout, strategy, device,
                         reads_weights=reads_weights, stores_per_vertex=stores_per_vertex,
                         atomic_updates=atomic_updates, costs=costs, hit_rate=hit_rate)
