"""The task slots a launch is costed on (``SlotView``): every slot of one launch
(``full_view``), the units of one or more sweeps that hold an active vertex (``_dirty_view``,
``sweeps_view``, with donation's whole blocks), and several launches' full views joined
(``joined_view``, ``listed_view``). See docs/model.md, "Sweeps in O(active work)"."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simulator.device import Device
from simulator.launch import Launch
from simulator.layout import TaskLayout
from simulator.layout import padded_places
from simulator.mappings import MAPPINGS
from simulator.sectors import ceil_div
from simulator.sorted_runs import compressed
from simulator.sorted_runs import distinct
from simulator.sorted_runs import member_mask
from simulator.sorted_runs import run_index
from simulator.sorted_runs import run_starts
from simulator.strategy import Strategy


@dataclass(frozen=True, eq=False)
class SlotView:
    """The units a launch is costed on: all of its layout's, or (a sweep) only those that
    hold an active vertex, with their active slots (ascending) and those slots' vertices
    and degrees: the kernel reads no other slot's.

    real_slots: slots that hold a task (the padding of a partial last unit follows them).
    units: the full layout's unit of each unit here (ascending within a sweep); None when
        these are all.
    segments: where each sweep's units start, when the view holds several sweeps (each one
        holds a unit at least).
    slot_vertex: every slot's vertex (padded) where the launch pushes its own slots, else
        None.
    """

    layout: TaskLayout
    active_slots: np.ndarray
    active_vertex: np.ndarray
    active_degree: np.ndarray
    real_slots: int
    units: np.ndarray | None = None
    segments: np.ndarray | None = None
    slot_vertex: np.ndarray | None = None


def full_view(indptr: np.ndarray, launch: Launch, layout: TaskLayout, n_slots: int):
    """Every slot of the launch (a sweep's: O(vertices) per launch; a worklist's: O(slots))."""
    n = indptr.size - 1
    slots = np.arange(n) if launch.slots is None else launch.slots.astype(np.int64, copy=False)
    if launch.lookup == "worklist":  # every entry is active
        active_slots, vertex = np.arange(n_slots), slots
    elif (launch.slots is not None and n_slots
          and bool((slots[1:] > slots[:-1]).all())):  # a spatial launch's: find the active
        active = np.asarray(launch.active)
        at = np.minimum(slots.searchsorted(active), n_slots - 1)
        active_slots = at[slots[at] == active]
        vertex = slots[active_slots]
    else:
        active_slots = np.flatnonzero(member_mask(slots, np.asarray(launch.active), n))
        vertex = slots[active_slots]
    degree = (indptr[vertex + 1] - indptr[vertex]).astype(np.int64, copy=False)
    slot_vertex = None
    if launch.pushes == "self":
        slot_vertex = np.zeros(layout.units * layout.per_unit, dtype=np.int64)
        slot_vertex[:n_slots] = slots
    return SlotView(layout, active_slots, vertex, degree, n_slots, slot_vertex=slot_vertex)


def _dirty_view(indptr: np.ndarray, sweeps: list[np.ndarray], layout: TaskLayout,
                block: int = 1) -> SlotView:
    """The units of one or more sweeps (each given by its active vertices, ascending) that
    hold an active vertex, sweep after sweep, in O(active vertices + their units); with
    ``block`` > 1, every unit of the blocks of ``block`` units that hold one."""
    unit_keys, at, act, degree = _active_units(indptr, sweeps, layout)
    whole_blocks = None
    if block > 1:
        sweep, unit = np.divmod(unit_keys, layout.units)
        whole_blocks = distinct(sweep * ceil_div(layout.units, block) + unit // block)
    return _view_of_units(indptr.size - 1, layout, len(sweeps), unit_keys, at, act, degree,
                          block, whole_blocks)


def _active_units(indptr: np.ndarray, sweeps: list[np.ndarray], layout: TaskLayout):
    """The units of sweeps' active vertices (keys sweep * units + unit, ascending), each
    active vertex's slot in a view of those units, the vertices (ascending by slot, once
    each) and their degrees."""
    per_unit, layout_units = layout.per_unit, layout.units
    many = len(sweeps) > 1
    act = np.concatenate(sweeps) if many else np.asarray(sweeps[0])
    act_unit = act // per_unit
    if many:  # number each sweep's units after the previous sweep's
        sweep_of = np.repeat(np.arange(len(sweeps)), [sweep.size for sweep in sweeps])
        act_unit = act_unit.astype(np.int64) + sweep_of * layout_units
    if act.size and bool((act_unit[1:] >= act_unit[:-1]).all()):  # each unit's run
        new_unit = run_starts(act_unit)
        unit_keys = compressed(act_unit, new_unit).astype(np.int64, copy=False)
        unit_of = run_index(new_unit)
    else:
        unit_keys = (distinct(act_unit).astype(np.int64, copy=False) if act.size
                     else np.zeros(1, dtype=np.int64))
        unit_of = unit_keys.searchsorted(act_unit)
    at = unit_of * per_unit + act % per_unit
    if not bool((at[1:] > at[:-1]).all()):  # active vertices given out of order or twice
        at, first = np.unique(at, return_index=True)
        act = act[first]
    act = act.astype(np.int64, copy=False)
    degree = (indptr[act + 1] - indptr[act]).astype(np.int64, copy=False)
    return unit_keys, at, act, degree


def _view_of_units(n: int, layout: TaskLayout, sweeps: int, unit_keys: np.ndarray,
                   at: np.ndarray, act: np.ndarray, degree: np.ndarray, block: int = 1,
                   whole_blocks: np.ndarray | None = None) -> SlotView:
    """A view of ``sweeps`` sweeps' units (``unit_keys``, ascending: sweep * units + unit)
    whose slots ``at`` hold the active vertices ``act`` of ``degree``, with every unit of
    the ``whole_blocks`` as well (ascending keys sweep * blocks + block, ``block`` units a
    block; the layout's last block may hold fewer): donation works per block, its warps
    all draining the block's box."""
    layout_units, per_unit = layout.units, layout.per_unit
    if whole_blocks is not None and whole_blocks.size:
        sweep, block_number = np.divmod(whole_blocks, ceil_div(layout_units, block))
        members = ((block_number * block)[:, None] + np.arange(block)).ravel()
        real = members < layout_units
        members = members[real] + np.repeat(sweep * layout_units, block)[real]
        keys = distinct(np.concatenate([unit_keys, members]))
        at = keys.searchsorted(unit_keys)[at // per_unit] * per_unit + at % per_unit
        unit_keys = keys
    units = unit_keys % layout_units if sweeps > 1 else unit_keys
    segments = (np.searchsorted(unit_keys, np.arange(sweeps) * layout_units) if sweeps > 1
                else None)
    padded = units.size * per_unit
    real_slots = padded if sweeps > 1 else padded - max(0, (int(units[-1]) + 1) * per_unit - n)
    return SlotView(layout.of_units(units), at, act, degree, real_slots, units, segments)


def joined_view(layout: TaskLayout, units: list[int], active_slots: list[np.ndarray | None],
                active_vertex: list[np.ndarray], active_degree: list[np.ndarray]
                ) -> SlotView:
    """Several launches' full views as one, launch after launch, each keeping its own
    layout's units (numbered on after the previous launch's); ``layout``: their layouts
    joined (``worklist_layouts``, ``status_layouts``). Per launch: its layout's ``units``
    and its active slots (None: all its slots, in order, as a worklist's), their vertices
    and degrees."""
    units = np.array(units)
    segments = np.cumsum(units) - units
    if all(slots is None for slots in active_slots):
        joined_slots = padded_places(np.array([vertex.size for vertex in active_vertex]),
                                     segments, layout.per_unit)
    else:
        joined_slots = np.concatenate([
            (np.arange(vertex.size) if slots is None else slots) + offset
            for slots, vertex, offset in zip(active_slots, active_vertex,
                                             (segments * layout.per_unit).tolist(),
                                             strict=True)])
    return SlotView(layout, joined_slots,
                    np.concatenate(active_vertex).astype(np.int64, copy=False),
                    np.concatenate(active_degree), layout.units * layout.per_unit,
                    segments=segments)


def listed_view(indptr: np.ndarray, launches: list[Launch], layout: TaskLayout) -> SlotView:
    """The full views of several launches that list their slots ascending and find the
    active ones by their status (a spatial hybrid's partitions), joined as ``joined_view``
    joins them: each launch's active vertices found among its slots (among its listed
    partitions where it lists whole ones), both keyed by the launch, in one search for all."""
    n = indptr.size - 1
    per_unit = layout.per_unit
    sizes = np.array([launch.slots.size for launch in launches])
    units = ceil_div(sizes, per_unit)
    segments = np.cumsum(units) - units
    actives = [np.asarray(launch.active) for launch in launches]
    launch_of = np.repeat(np.arange(len(launches)), [active.size for active in actives])
    active = np.concatenate(actives).astype(np.int64, copy=False)
    if all(launch.partitions is not None for launch in launches):  # by partition
        p = launches[0].partition
        listings, per_launch = [launch.partitions for launch in launches], ceil_div(n, p)
        key, offset = launch_of * per_launch + active // p, active % p
    else:
        p, listings, per_launch = 1, [launch.slots for launch in launches], n
        key, offset = launch_of * n + active, 0
    counts = np.array([listing.size for listing in listings])
    listed = np.concatenate([np.add(listing, base, dtype=np.int64) for listing, base
                             in zip(listings, (np.arange(len(launches)) * per_launch).tolist(),
                                    strict=True)])
    if not bool((listed[1:] > listed[:-1]).all()):
        raise ValueError("listed_view takes launches whose slots (partitions) ascend")
    at = np.minimum(listed.searchsorted(key), max(listed.size - 1, 0))
    found = (listed[at] == key) if listed.size else np.zeros(key.size, dtype=bool)
    slot = ((at - (np.cumsum(counts) - counts)[launch_of]) * p + offset)[found]
    launch_of, active = launch_of[found], active[found]
    active_slots = slot + segments[launch_of] * per_unit
    degree = (indptr[active + 1] - indptr[active]).astype(np.int64, copy=False)
    return SlotView(layout, active_slots, active, degree, layout.units * per_unit,
                    segments=segments)


def sweeps_view(indptr: np.ndarray, sweeps: list[np.ndarray], layout: TaskLayout,
                strategy: Strategy, device: Device) -> SlotView:
    """The view of sweeps (their active vertices) that their costs need: the units holding
    an active vertex, and with donation every unit of a block in which a thread donates
    (the block's warps drain its box; elsewhere a sweep runs as without donation)."""
    m = MAPPINGS[strategy.mapping]
    if not m.shares_within_block(strategy):
        return _dirty_view(indptr, sweeps, layout)
    unit_keys, at, act, degree = _active_units(indptr, sweeps, layout)
    block = strategy.block_size // device.warp_size
    sweep = unit_keys[at // layout.per_unit] // layout.units
    return _view_of_units(indptr.size - 1, layout, len(sweeps), unit_keys, at, act, degree,
                          block, m.sharing_blocks(strategy, device, layout, act, degree, sweep))
