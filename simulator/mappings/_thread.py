"""``thread``: each thread takes one vertex and walks its edges alone; with
``donate_threshold`` (Nasre et al.) a thread gives its edges beyond its block's mean degree
plus the threshold to a shared box that the whole block drains."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from simulator.knob_checks import check_threshold
from simulator.lanes import Lanes
from simulator.lanes import donating_blocks
from simulator.lanes import donating_lanes
from simulator.lanes import lockstep_lanes
from simulator.mappings._base import LaneRequest
from simulator.mappings._base import Mapping
from simulator.sorted_runs import run_starts

if TYPE_CHECKING:
    from simulator.costs import InstructionCosts
    from simulator.device import Device
    from simulator.layout import TaskLayout
    from simulator.strategy import Strategy


class Thread(Mapping):
    name = "thread"
    knobs = {"donate_threshold": None}
    knob_samples = {"donate_threshold": (None, 0, 2, 8)}

    def check(self, strategy: Strategy) -> None:
        check_threshold("donate_threshold", strategy.donate_threshold)

    def lockstep(self, strategy: Strategy) -> bool:
        return strategy.donate_threshold is None

    def batches_per_warp(self, strategy: Strategy) -> bool:
        return False

    def shares_within_block(self, strategy: Strategy) -> bool:
        return strategy.donate_threshold is not None

    def sharing_blocks(self, strategy: Strategy, device: Device, layout: TaskLayout,
                       vertex: np.ndarray, degree: np.ndarray, sweep: np.ndarray
                       ) -> np.ndarray:
        return donating_blocks(vertex, degree, sweep, layout, strategy.block_size,
                               device.warp_size, strategy.donate_threshold,
                               strategy.defer_threshold)

    def lanes(self, strategy: Strategy, request: LaneRequest
              ) -> tuple[Lanes, np.ndarray | None]:
        r = request
        if strategy.donate_threshold is None:
            return lockstep_lanes(r.slots, r.degree, r.local, r.layout, r.want_lanes), None
        # a view may hold only some units of a block (where no thread of it donates)
        ws, segments = r.warp_size, r.segments
        new_block = run_starts(r.unit_numbers() // (strategy.block_size // ws))
        new_block[segments[segments < new_block.size]] = True  # each launch's own blocks
        unit_block = np.cumsum(new_block) - 1
        return donating_lanes(r.slots, r.degree, r.local, unit_block, strategy.block_size,
                              strategy.donate_threshold, ws, r.want_lanes)

    def sharing_sisd(self, strategy: Strategy, costs: InstructionCosts) -> int:
        return costs.donate
