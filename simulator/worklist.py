"""What building the next worklist costs a launch: per-item atomics, per-batch atomics or an
atomic-free prefix sum (Nasre et al., IPDPS'13, Section IV-A), per warp unit."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from simulator.costs import InstructionCosts
from simulator.costs import LaunchCost
from simulator.device import Device
from simulator.sorted_runs import distinct_per_group
from simulator.timing import combined_bounds


@dataclass(frozen=True)
class PushWork:
    """Who pushes in one launch, per warp unit: items, warp steps with a push, batches
    (threads or warps with a push) and flag atomics (spatial representatives). Under an
    in-queue flag (``Strategy.dedup``) those count the claims that won, and ``claims`` and
    ``claim_steps`` every would-be push and the warp steps with one (None: as pushed)."""

    items: np.ndarray
    steps: np.ndarray
    batches: np.ndarray
    flag_atomics: np.ndarray
    claims: np.ndarray | None = None
    claim_steps: np.ndarray | None = None

    @classmethod
    def joined(cls, works: list[PushWork]) -> PushWork:
        """Several launches' push work, launch after launch (their units joined)."""
        names = ["items", "steps", "batches", "flag_atomics"]
        if all(work.claims is not None for work in works):
            names += ["claims", "claim_steps"]
        return cls(*(np.concatenate([getattr(work, name) for work in works])
                     for name in names))

    def claimed_by(self, claims: PushWork) -> PushWork:
        """This work (the claims that won) with ``claims``' items and steps as every
        would-be push's."""
        return dataclasses.replace(self, claims=claims.items, claim_steps=claims.steps)

    @property
    def claimed(self) -> tuple[np.ndarray, np.ndarray]:
        """Per unit, the would-be pushes that claim a flag and the warp steps with one."""
        if self.claims is None:
            return self.items, self.steps
        return self.claims, self.claim_steps

    @property
    def total(self) -> int:
        """Items pushed by the launch: the next worklist's length, duplicates included."""
        return int(self.items.sum())


@dataclass(frozen=True)
class PushCost:
    """What pushing adds to a launch, per warp unit (a prefix push also needs
    ``prefix_scan_launch``)."""

    instructions: np.ndarray
    sectors: np.ndarray
    round_trips: np.ndarray
    queue_atomics: np.ndarray  # on the tail's address
    requests: np.ndarray


def push_work(
    push_unit: np.ndarray,
    push_step: np.ndarray,
    push_thread: np.ndarray | None,
    flag_unit: np.ndarray,
    units: int,
    warp_batches: bool | np.ndarray,
    threads_per_unit: int | None = None,
) -> PushWork:
    """Per-unit push counters from each pushed item's unit, warp step and thread (global ids),
    and each flag atomic's unit. ``warp_batches``: a warp (not a thread) batches its items,
    in every unit (then ``push_thread`` is not needed) or in the units marked.
    ``threads_per_unit``: where thread t is in unit t // threads_per_unit (a layout's padded
    slots), its threads with a push are counted through a table of all the units' threads."""
    items = np.bincount(push_unit, minlength=units)
    steps = distinct_per_group(push_step, push_unit, units)
    mixed = isinstance(warp_batches, np.ndarray)
    if not mixed and warp_batches:
        batches = (items > 0).astype(np.int64)
    else:
        if threads_per_unit is not None:
            pushing = np.zeros(units * threads_per_unit, dtype=bool)
            pushing[push_thread] = True
            batches = np.count_nonzero(pushing.reshape(units, threads_per_unit), axis=1)
        else:
            batches = distinct_per_group(push_thread, push_unit, units)
        if mixed:
            batches = np.where(warp_batches, (items > 0).astype(np.int64), batches)
    flags = np.bincount(flag_unit, minlength=units)
    return PushWork(items, steps, batches, flags)


def push_cost(
    work: PushWork,
    mode: str,
    device: Device,
    costs: InstructionCosts,
    *,
    block_size: int,
    words_per_sector: int,
    hit_rate: float = 0.0,
    launch_starts: np.ndarray | None = None,
    unit_steps: np.ndarray | None = None,
) -> PushCost:
    """The instructions, sectors, dependent round trips and tail atomics of a push mode.

    atomic: each pushing lane does atomicAdd(tail, 1), which compilers warp-aggregate: per
        warp step with pushes a ballot, one atomic by a leader, a shuffle of the base, the
        stores (one tail atomic per pushing step, serialised on the tail's address at L2), and
        the wait for the atomic's result (``device.atomic_round_trips``).
    chunked: each batch (thread, or warp when the warp aggregates) adds its count with one
        atomic and stores its items at consecutive slots.
    prefix: every warp takes part in a block-wide prefix sum of the counts (scan, barriers);
        a scan launch over the block totals gives the block offsets
        (``prefix_scan_launch``); no atomics.
    block: the block pushes in rounds, its warps in step together: every step of its edge
        loop (a barrier to agree on going on) a block-wide prefix sum of the lanes' pushes
        (scan, barriers) and a barrier to hand out the base. A warp issues a round's scan and
        barriers in each step of its own loop (``unit_steps``: each unit's; without them, its
        pushing steps) and waits at the barrier through its block's other rounds; in a round
        with a push one thread's atomicAdd on the tail, which every warp of the block waits
        for: as many as the block's unit with the most pushing steps (the fewest the block
        can have), the stores. A block is
        ``block_size / warp_size`` consecutive units of a launch (``launch_starts``: the
        first unit of each launch, where several are joined).
    """
    items, steps = work.items, work.steps
    # a unit's items land in consecutive words, each pushing step's store a transaction of
    # its own at least (a thread pushing a hub's targets one a step: one a step, not one
    # per sector's worth of them)
    stores = np.maximum(-(-items // words_per_sector), steps)
    if mode == "atomic":
        instructions = (costs.push + costs.aggregate) * steps
        sectors = stores + steps
        round_trips = device.atomic_round_trips * steps
        tail_atomics = steps
        requests = 2 * steps
    elif mode == "chunked":
        pushing = work.batches > 0
        instructions = costs.push_store * steps + (costs.scan + costs.batch) * pushing
        sectors = stores + work.batches
        round_trips = device.atomic_round_trips * pushing.astype(np.int64)
        tail_atomics = work.batches
        requests = steps + work.batches
    elif mode == "prefix":
        warps_per_block = max(1, block_size // device.warp_size)
        block_scan = costs.scan + 2 * costs.barrier + int(np.log2(warps_per_block))
        instructions = costs.push_store * steps + block_scan
        sectors = stores + 2  # the block's count written, its offset read: one each
        round_trips = 2
        tail_atomics = 0
        requests = steps + 2
    elif mode == "block":
        warps_per_block = max(1, block_size // device.warp_size)
        rounds, first_units, block_rounds = block_push_rounds(steps, warps_per_block,
                                                              launch_starts)
        # a warp issues a round's scan and barriers in the rounds of its own loop; through
        # the rest of its block's rounds it waits at the barrier (the round trips below)
        own_rounds = steps if unit_steps is None else np.maximum(steps, unit_steps)
        round_cost = costs.scan + 3 * costs.barrier + int(np.log2(warps_per_block))
        instructions = costs.push_store * steps + round_cost * own_rounds
        tail_atomics = np.zeros(items.size, dtype=np.int64)
        tail_atomics[first_units] = block_rounds  # one thread's atomic a round
        sectors = stores + tail_atomics
        round_trips = device.atomic_round_trips * rounds
        requests = steps + tail_atomics
    else:
        raise ValueError(f"unknown push mode {mode!r}")

    def per_unit(values, dtype):
        return np.broadcast_to(np.asarray(values, dtype=dtype), items.shape).copy()

    return PushCost(
        per_unit(instructions, np.float64),
        per_unit(sectors, np.int64),
        per_unit(round_trips, np.int64),
        per_unit(tail_atomics, np.int64),
        per_unit(requests, np.int64),
    )


def block_push_rounds(steps: np.ndarray, warps_per_block: int,
                      launch_starts: np.ndarray | None = None
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A block push's rounds: per unit, its block's most pushing steps of any unit; the first
    unit of each block; each block's rounds. Blocks are runs of ``warps_per_block`` units
    from each launch's first unit (``launch_starts``, ascending; None: one launch)."""
    units = steps.size
    if units == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty
    starts = np.zeros(units, dtype=bool)
    starts[0] = True
    if launch_starts is not None:
        launch_starts = np.asarray(launch_starts)
        starts[launch_starts[launch_starts < units]] = True
    index = np.arange(units)
    local = index - np.maximum.accumulate(np.where(starts, index, 0))
    first_units = np.flatnonzero(starts | (local % warps_per_block == 0))
    block_rounds = np.maximum.reduceat(np.asarray(steps, dtype=np.int64), first_units)
    rounds = np.repeat(block_rounds, np.diff(np.append(first_units, units)))
    return rounds, first_units, block_rounds


def prefix_scan_launch(units: int, device: Device, costs: InstructionCosts, *,
                       block_size: int, words_per_sector: int,
                       hit_rate: float = 0.0) -> LaunchCost:
    """The scan launch a prefix push needs after a launch of ``units`` warp units: one
    counter per block."""
    warps_per_block = max(1, block_size // device.warp_size)
    return scan_launch(-(-units // warps_per_block), device, costs, words_per_sector, hit_rate)


def scan_launch(
    values: int, device: Device, costs: InstructionCosts, words_per_sector: int,
    hit_rate: float = 0.0,
) -> LaunchCost:
    """An exclusive prefix sum over ``values`` counters by one block of 1024 threads (32
    warps on one SM's schedulers): read, log2(1024) shuffle-and-barrier rounds per 1024
    values, write back."""
    rounds = -(-values // 1024)
    instructions = rounds * (2 * costs.scan + 2 * costs.barrier + 2)
    sectors = 2 * -(-values // words_per_sector)
    issue = (instructions * 32 * (device.warp_size / device.simd_width)
             * device.instruction_cycles / device.schedulers)
    overhead = device.cycles(device.launch_overhead_us)
    latency = 2 * rounds * device.round_trip_cycles(hit_rate) + issue
    bounds = np.array([[issue, 0.0, latency, 0.0, 0.0, overhead]])
    # the launch's time from its bounds as every launch's (``Device.bounds_norm``), so that
    # calibration, which refits from the bounds, sees the cycles the run counted
    cycles = combined_bounds(bounds[0, :-1], device.bounds_norm) + overhead
    # a read and a write a round by each warp with values to move; the others only scan
    requests = 2 * -(-values // 32)
    return LaunchCost(
        cycles=float(cycles), bounds=bounds, launches=1, instructions=float(32 * instructions),
        issued_lane_instructions=float(32 * 32 * instructions),
        useful_lane_instructions=float(32 * 32 * instructions),
        requests=float(requests), transactions=float(sectors),
    )
