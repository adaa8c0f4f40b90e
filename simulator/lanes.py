"""Which lane runs each expanded edge, in which warp step: virtual warps walking their chunk
positions in lockstep (the thread mapping: W = 1), warp-level edge redistribution (WER) and
work donation (``simulator.engine``, "Layout" and "Other lane layouts"). Each mapping
(``simulator.mappings``) assigns its lanes through one of these."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from simulator.sectors import ceil_div
from simulator.sectors import floor_div
from simulator.sorted_runs import distinct
from simulator.sorted_runs import run_starts
from simulator.sorted_runs import stable_order

if TYPE_CHECKING:  # the mappings import this module, and Strategy imports them
    from simulator.layout import TaskLayout


def position_of(slots: np.ndarray, per_unit: int, c: int) -> np.ndarray:
    """Each slot's (unit, chunk position) as one index, unit * C + position."""
    if c == 1:
        return floor_div(slots, per_unit)
    return (slots // per_unit) * c + slots % c


def positions_holding(slots: np.ndarray, units: int, per_unit: int, c: int) -> np.ndarray:
    """Per (unit, position): whether one of ``slots`` lies there, any of the K virtual
    warps' tasks at that position."""
    out = np.zeros(units * c, dtype=bool)
    out[position_of(slots, per_unit, c)] = True
    return out.reshape(units, c)


def sum_positions(per_position: np.ndarray) -> np.ndarray:
    """Per unit: the sum over its C positions (int64)."""
    if per_position.shape[1] == 1:
        return per_position[:, 0].astype(np.int64)
    return per_position.sum(axis=1, dtype=np.int64)


@dataclass
class Lanes:
    """Where each expanded edge runs: its warp step (global id) and its lane in the warp."""

    group: np.ndarray
    lane: np.ndarray | None
    steps: np.ndarray  # SIMD steps per unit
    u_a: np.ndarray  # per unit: idle lane-steps of the vertices' own lanes (Cheng et al.)
    pop_steps: np.ndarray | int = 0  # steps per unit whose lanes first pop their edge
    # work donation: the edges each expanding slot keeps (its thread's own steps, in
    # lockstep), the positions of those it gives to the block's box, ascending (None: it
    # gives none), and their steps (``group[given]``)
    kept: np.ndarray | None = None
    given: np.ndarray | None = None
    given_group: np.ndarray | None = None


def lockstep_steps(slot_steps: np.ndarray, layout: TaskLayout, position: np.ndarray):
    """Each (unit, position)'s first warp step (global; indexed unit * C + position) and
    each unit's SIMD steps, where the K virtual warps of a position walk it in lockstep for
    the most steps any of their tasks there takes. ``slot_steps``: those of the slots at
    ``position``."""
    units, k, c = layout.units, layout.k, layout.c
    position_steps = np.zeros(units * c, dtype=np.int64)
    if k == 1:  # one task a position
        position_steps[position] = slot_steps
    else:
        np.maximum.at(position_steps, position, slot_steps)
    simd_steps = sum_positions(position_steps.reshape(units, c))
    return np.cumsum(position_steps) - position_steps, simd_steps


def worklist_first_steps(degree: np.ndarray, w: int, k: int, c: int, units: int
                          ) -> tuple[np.ndarray, int]:
    """``lockstep_steps`` of a worklist's slots in order, each of ``degree`` edges, on
    ``units`` warp units of K virtual warps of W lanes taking chunks of C slots: each
    (unit, position)'s first warp step, and the launch's warp steps."""
    if c == 1 and degree.size:  # a unit's K slots one after another: the most of each run
        most = np.maximum.reduceat(degree, np.arange(0, degree.size, k)) if k > 1 else degree
        position_steps = floor_div(most + (w - 1), w) if w > 1 else most
        # the degrees are int64: add.accumulate sums as cumsum would, without its wrapper's
        # microsecond a call (a lean launch is a few dozen such calls)
        ends = np.add.accumulate(position_steps)
        return ends - position_steps, int(ends[-1])
    position_steps = np.zeros(units * k * c, dtype=np.int64)
    position_steps[:degree.size] = degree
    if w > 1:
        position_steps += w - 1
        position_steps = floor_div(position_steps, w)
    if 1 < k <= 4:  # the most over a few virtual warps: pairwise, faster than a reduction
        by_warp = position_steps.reshape(units, k, c)
        most = by_warp[:, 0]
        for j in range(1, k):
            most = np.maximum(most, by_warp[:, j])
        position_steps = most.ravel()
    elif k > 1:
        position_steps = position_steps.reshape(units, k, c).max(axis=1).ravel()
    ends = np.cumsum(position_steps)
    return ends - position_steps, int(ends[-1]) if ends.size else 0


def lockstep_lanes(expanding_slots, degree, local, layout, want_lanes):
    """Virtual warps of W lanes walk their chunk positions in lockstep (thread: W = 1);
    ``degree``: each expanding slot's."""
    w, c, units, per_unit = layout.w, layout.c, layout.units, layout.per_unit
    slot_steps = ceil_div(degree, w)
    position = position_of(expanding_slots, per_unit, c)
    position_base, simd_steps = lockstep_steps(slot_steps, layout, position)
    group = np.repeat(position_base[position], degree)
    group += floor_div(local, w)
    lane = None
    if want_lanes:
        vw = (expanding_slots % per_unit) // c
        lane = np.repeat(vw * w, degree) + (local % w if w > 1 else 0)
    u_a = np.zeros(units)
    if w > 1:  # a vertex's lanes idle in its last step
        u_a = np.bincount(expanding_slots // per_unit, weights=w * slot_steps - degree,
                          minlength=units)
    return Lanes(group, lane, simd_steps, u_a)


def redistributed_lanes(expanding_slots, degree, local, layout, warp_size, all_lanes,
                         want_lanes):
    """WER: per chunk position, the warp's edges are popped by its active lanes in turn
    (WER+: by all lanes), so the position takes ceil(edges / lanes) steps; ``degree``:
    each expanding slot's."""
    c, units, per_unit = layout.c, layout.units, layout.per_unit
    unit = expanding_slots // per_unit
    position = unit * c + expanding_slots % c
    order = stable_order(position)  # by position, then virtual warp (lane)
    slots_in_order, pos_sorted = expanding_slots[order], position[order]
    degree_in_order = degree[order]
    position_edges = np.bincount(pos_sorted, weights=degree_in_order,
                                 minlength=units * c).astype(np.int64)
    if all_lanes:
        position_lanes = np.full(units * c, warp_size, dtype=np.int64)
    else:
        position_lanes = np.bincount(pos_sorted, minlength=units * c)
    position_steps = ceil_div(position_edges, np.maximum(position_lanes, 1))
    simd_steps = position_steps.reshape(units, c).sum(axis=1)
    position_base = np.zeros(units * c, dtype=np.int64)
    np.cumsum(position_steps[:-1], out=position_base[1:])
    # edge offset inside its position's table: degrees of the earlier lanes of the position
    running = np.cumsum(degree_in_order) - degree_in_order
    position_first_edge = np.zeros(units * c, dtype=np.int64)
    np.cumsum(position_edges[:-1], out=position_first_edge[1:])
    offset = running - position_first_edge[pos_sorted]
    lanes = position_lanes[pos_sorted]
    # ``local`` follows slot order; bring the offsets to that order
    inverse = np.empty_like(order)
    inverse[order] = np.arange(order.size)
    edge_offset = np.repeat(offset[inverse], degree)
    edge_offset += local
    group = np.repeat(position_base[position], degree)
    if all_lanes:  # every position pops its edges warp_size at a time
        group += floor_div(edge_offset, warp_size)
    else:
        edge_lanes = np.repeat(lanes[inverse], degree)
        group += edge_offset // edge_lanes
    lane = None
    if want_lanes and all_lanes:
        lane = edge_offset % warp_size
    elif want_lanes:  # the r-th active lane of the position pops edge r, r + L, ...
        first_active = np.zeros(units * c, dtype=np.int64)
        np.cumsum(position_lanes[:-1], out=first_active[1:])
        lane_of_rank = (slots_in_order % per_unit) // c
        lane = lane_of_rank[np.repeat(first_active[position], degree)
                            + edge_offset % edge_lanes]
    u_a = (position_lanes * position_steps - position_edges).reshape(units, c).sum(axis=1)
    return Lanes(group, lane, simd_steps, u_a.astype(np.float64), simd_steps)


def donating_lanes(expanding_slots, degree, local, unit_block, block_size, threshold,
                    warp_size, want_lanes):
    """Thread mapping with work donation: a thread keeps at most cap = ceil(block mean
    degree) + threshold edges and puts the rest in the block's box, which every thread of
    the block drains in rounds after its own edges (box entry b: round b // threads, thread
    b % threads). ``degree``: each expanding slot's; ``unit_block``: each unit's block
    (ascending; a block's units are consecutive, a sweep's last one may hold fewer). Also
    each unit's donating threads."""
    units = unit_block.size
    slot_unit = expanding_slots // warp_size
    slot_block = unit_block[slot_unit]
    block_units = np.bincount(unit_block)
    blocks = block_units.size
    block_threads = block_units * warp_size
    block_edges = np.bincount(slot_block, weights=degree, minlength=blocks)
    cap = (np.ceil(block_edges / block_threads) + threshold).astype(np.int64)[slot_block]
    own = np.minimum(degree, cap)
    donated = degree - own
    own_steps = np.zeros(units, dtype=np.int64)
    np.maximum.at(own_steps, slot_unit, own)
    box = np.bincount(slot_block, weights=donated, minlength=blocks).astype(np.int64)
    drain_rounds = ceil_div(box, block_threads)
    simd_steps = own_steps + drain_rounds[unit_block]
    step_base = np.zeros(units, dtype=np.int64)
    np.cumsum(simd_steps[:-1], out=step_base[1:])
    group = np.repeat(step_base[slot_unit], degree)
    group += local  # a kept edge: its thread's own step
    lane = np.repeat(expanding_slots % warp_size, degree) if want_lanes else None
    given = given_group = None
    donating = np.bincount(slot_unit[donated > 0], minlength=units)
    if donated.any():
        # each donating slot's last ``donated`` edges, by position (few of all the edges)
        giving = np.flatnonzero(donated)
        gives = donated[giving]
        given = np.repeat(np.cumsum(degree)[giving] - np.cumsum(gives), gives)
        given += np.arange(given.size)  # slot s's run starts at its end less its gives
        # donated edges in box order (slot order within the block; a block's slots, and so
        # its donated edges, are consecutive); box entry b is drained by thread
        # b % threads in round b // threads, after that thread's own steps: a round's
        # warp-size consecutive entries are one warp's step, so each such chunk of a block's
        # box is worked out once and its step repeated over its entries
        chunks = ceil_div(box, warp_size)
        chunk_first = np.cumsum(chunks) - chunks
        chunk = np.arange(int(chunks.sum())) - np.repeat(chunk_first, chunks)
        warp_round, warp = np.divmod(chunk, np.repeat(block_units, chunks))
        block_first_unit = np.cumsum(block_units) - block_units
        warp += np.repeat(block_first_unit, chunks)
        chunk_step = (step_base + own_steps)[warp] + warp_round
        entries = np.full(chunk.size, warp_size, dtype=np.int64)
        filled = chunks > 0  # each box's last chunk holds the rest of its entries
        entries[chunk_first[filled] + chunks[filled] - 1] = (
            box[filled] - (chunks[filled] - 1) * warp_size)
        drain_round = np.repeat(chunk_step, entries)
        group[given] = drain_round
        if want_lanes:  # an entry's lane: its place in its chunk
            lane[given] = (np.arange(drain_round.size)
                           - np.repeat(np.cumsum(entries) - entries, entries))
        given_group = drain_round
    lanes = Lanes(group, lane, simd_steps, np.zeros(units), drain_rounds[unit_block], own,
                   given, given_group)
    return lanes, donating


@dataclass(frozen=True)
class DonatedSteps:
    """Where a sweep's threads donate (``donating_lanes``): each expanded edge's warp step
    within the warp that runs it, its thread's own edges one a step, the box's after the
    draining warp's own steps. A sweep's waves read the stores of their earlier steps by it
    (``simulator.asynchronous``), as a lockstep sweep's do by W; a block with no donor runs
    as the thread mapping does. ``slot_count``: the launch's slots (its units' span)."""

    block_size: int
    threshold: int
    warp_size: int
    slot_count: int

    def steps(self, slots: np.ndarray, degree: np.ndarray, owner: np.ndarray,
              local: np.ndarray) -> np.ndarray:
        """For edges of the expanding ``slots`` (ascending, whole blocks; ``degree`` each),
        given by their slot's index (``owner``) and their place in its edge list
        (``local``), each one's step within the warp that runs it."""
        ws, size = self.warp_size, self.block_size
        block = slots // size
        new_block = run_starts(block)
        block_of = np.cumsum(new_block) - 1
        first = block[new_block] * size  # each block's first slot
        units = ceil_div(np.minimum(size, self.slot_count - first), ws)
        edges = np.bincount(block_of, weights=degree)
        cap = (np.ceil(edges / (units * ws)) + self.threshold).astype(np.int64)[block_of]
        own = np.minimum(degree, cap)
        donated = degree - own
        steps = local.astype(np.int64, copy=True)  # a kept edge: its thread's own step
        given = np.flatnonzero(local >= own[owner])
        if given.size == 0:
            return steps
        # box entry b of a block: drained by thread b % threads, in round b // threads, after
        # the drainer's warp's own steps (the most any of its slots keeps)
        unit = slots // ws
        unit_first = np.flatnonzero(run_starts(unit))
        unit_own = np.maximum.reduceat(own, unit_first)
        box_before = np.cumsum(donated) - donated  # a slot's first box entry, block by block
        box_before -= (box_before[new_block])[block_of]
        giver = owner[given]
        entry = box_before[giver] + local[given] - own[giver]
        threads = (units * ws)[block_of[giver]]
        drainer = first[block_of[giver]] // ws + entry % threads // ws
        at = unit[unit_first].searchsorted(drainer)
        held = at < unit_first.size
        held[held] = unit[unit_first[at[held]]] == drainer[held]
        drainer_own = np.zeros(given.size, dtype=np.int64)
        drainer_own[held] = unit_own[at[held]]
        steps[given] = drainer_own + entry // threads
        return steps


def donating_blocks(vertex: np.ndarray, degree: np.ndarray, sweep: np.ndarray,
                    layout: TaskLayout, block_size: int, warp_size: int, threshold: int,
                    defer_threshold: int | None) -> np.ndarray:
    """The blocks (keys sweep * blocks + block, ascending) in which a thread donates edges
    (``donating_lanes``: it has more than its block's cap), from sweeps' active vertices
    (ascending by sweep, then vertex) alone. A donor's block's cap is at least the
    threshold plus one (the block holds the donor's edges), so only the blocks of vertices
    with more edges than that have their edges summed."""
    warps_per_block = block_size // warp_size
    blocks = ceil_div(layout.units, warps_per_block)
    if defer_threshold is not None:  # deferred outliers do not expand
        degree = np.where(degree <= defer_threshold, degree, 0)
    candidate = np.flatnonzero(degree > threshold + 1)
    if candidate.size == 0:
        return candidate
    key = sweep * blocks + vertex // (layout.per_unit * warps_per_block)
    # each candidate's block's expanding edges, from the running sum of all degrees
    edges_before = np.zeros(degree.size + 1, dtype=np.int64)
    np.cumsum(degree, out=edges_before[1:])
    candidate_key = key[candidate]
    block_edges = (edges_before[key.searchsorted(candidate_key, "right")]
                   - edges_before[key.searchsorted(candidate_key, "left")])
    block = candidate_key % blocks
    block_units = np.minimum(warps_per_block, layout.units - block * warps_per_block)
    cap = np.ceil(block_edges / (block_units * warp_size)) + threshold
    return distinct(candidate_key[degree[candidate] > cap])
