"""``vwarp``: each virtual warp of ``w`` lanes takes a chunk of ``chunk`` consecutive
vertices and expands them one after the other, its lanes striding over each edge list;
``distribution=dynamic`` makes the resident warps pull chunks from a global queue. The
knobs and lanes shared with the other chunked mappings (WER, adaptive) are here too."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from simulator.knob_checks import check_choice
from simulator.knob_checks import check_positive
from simulator.knob_checks import check_width
from simulator.lanes import Lanes
from simulator.lanes import lockstep_lanes
from simulator.mappings._base import LaneRequest
from simulator.mappings._base import Mapping

if TYPE_CHECKING:
    from simulator.strategy import Strategy

DISTRIBUTIONS = ("static", "dynamic")
CHUNKED_KNOBS = {"chunk": 1, "distribution": "static"}
CHUNKED_SAMPLES = {"chunk": (1, 2, 3, 8, 64), "distribution": DISTRIBUTIONS}


def check_chunked(strategy: Strategy) -> None:
    """The knobs of a mapping whose (virtual) warps take chunks of vertices."""
    check_positive("chunk", strategy.chunk)
    check_choice("distribution", strategy.distribution, DISTRIBUTIONS)


class VirtualWarp(Mapping):
    name = "vwarp"
    knobs = {"w": 32, **CHUNKED_KNOBS}
    knob_samples = {"w": (1, 2, 4, 8, 16, 32), **CHUNKED_SAMPLES}

    def check(self, strategy: Strategy) -> None:
        check_width("w", strategy.w)
        check_chunked(strategy)

    def lanes_per_vertex(self, strategy: Strategy) -> int:
        return strategy.w

    def lockstep(self, strategy: Strategy) -> bool:
        return True

    def lanes(self, strategy: Strategy, request: LaneRequest
              ) -> tuple[Lanes, np.ndarray | None]:
        r = request
        return lockstep_lanes(r.slots, r.degree, r.local, r.layout, r.want_lanes), None
