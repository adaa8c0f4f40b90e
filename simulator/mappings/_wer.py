"""``wer`` and ``wer+`` (warp-level edge redistribution, Huang et al.): each thread takes a
vertex, then per chunk position the warp's edges go into a table that its active lanes
(``wer``) or all its lanes (``wer+``) pop in turn."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from simulator.lanes import Lanes
from simulator.lanes import redistributed_lanes
from simulator.mappings._base import LaneRequest
from simulator.mappings._base import Mapping
from simulator.mappings._vwarp import CHUNKED_KNOBS
from simulator.mappings._vwarp import CHUNKED_SAMPLES
from simulator.mappings._vwarp import check_chunked

if TYPE_CHECKING:
    from simulator.costs import InstructionCosts
    from simulator.strategy import Strategy


class Redistributing(Mapping):
    name = "wer"
    knobs = CHUNKED_KNOBS
    knob_samples = CHUNKED_SAMPLES
    redistributes = True
    all_lanes = False  # whether every lane of the warp pops, or its active ones

    def check(self, strategy: Strategy) -> None:
        check_chunked(strategy)

    def lanes(self, strategy: Strategy, request: LaneRequest
              ) -> tuple[Lanes, np.ndarray | None]:
        r = request
        return redistributed_lanes(r.slots, r.degree, r.local, r.layout, r.warp_size,
                                   self.all_lanes, r.want_lanes), None

    def position_sisd(self, strategy: Strategy, costs: InstructionCosts) -> int:
        return costs.scan + costs.table_push  # push_job: a warp scan of the degrees, a store


class RedistributingAllLanes(Redistributing):
    name = "wer+"
    all_lanes = True
