"""The contract a lane mapping implements (``Mapping``) and what its lane assignment is
given (``LaneRequest``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING
from typing import Any
from typing import ClassVar

import numpy as np

if TYPE_CHECKING:  # the mappings never import these at runtime: Strategy imports them
    from simulator.costs import InstructionCosts
    from simulator.device import Device
    from simulator.lanes import Lanes
    from simulator.layout import TaskLayout
    from simulator.strategy import Strategy


@dataclass(frozen=True, eq=False)
class LaneRequest:
    """What a launch's lane assignment is given: a view's expanding slots (ascending within
    each launch), each one's degree, each expanded edge's index in its vertex's list (slot
    by slot), the view's layout, and how to find its units' blocks."""

    slots: np.ndarray
    degree: np.ndarray
    local: np.ndarray
    layout: TaskLayout
    warp_size: int
    want_lanes: bool  # whether each edge's lane in its warp is wanted (narrow SIMD)
    # each of the view's units' number in its own launch's layout (a sweep's view holds some
    # of its units only); called only by mappings that share work across a block's warps
    unit_numbers: Callable[[], np.ndarray]
    segments: np.ndarray  # each launch's first unit in the view


class Mapping:
    """How a kernel maps vertices to lanes: one object per mapping, registered by name in
    ``simulator.mappings.MAPPINGS``. Every hook takes the validated ``Strategy`` (the knobs
    the mapping owns are set on it, defaulted); an adaptive mapping's hooks other than
    ``check``, ``per_iteration`` and ``for_iteration`` are asked of the strategy an
    iteration runs as (``for_iteration``).

    Subclasses set ``name`` and ``knobs`` and implement ``lanes``; the other hooks have the
    defaults of a warp-based mapping whose lanes take one vertex each at a time.
    """

    name: ClassVar[str]
    # the knobs it owns, each with its default (every one a ``Strategy`` field); knobs that
    # no registered mapping owns apply to none, and a knob several own applies to each
    knobs: ClassVar[dict[str, Any]] = {}
    # valid values of each owned knob that the contract tests draw (tests/test_mapping_contract)
    knob_samples: ClassVar[dict[str, tuple]] = {}
    # a warp's edges go into a table that its lanes pop (WER): steps per position follow
    # the position's edges over its lanes, and the edge-list reads are not per-vertex runs
    redistributes: ClassVar[bool] = False
    # each iteration runs as another strategy, chosen from its frontier (``for_iteration``)
    per_iteration: ClassVar[bool] = False

    def check(self, strategy: Strategy) -> None:
        """Refuse invalid values of the owned knobs (``ConfigError``, quoting them)."""

    def lanes_per_vertex(self, strategy: Strategy) -> int:
        """Lanes that expand one vertex's edge list together (W of the warp units)."""
        return 1

    def lockstep(self, strategy: Strategy) -> bool:
        """Whether each vertex's edges run on its own virtual warp's lanes, W at a time in
        lockstep steps, nothing shared or redistributed: ``lanes`` then equals
        ``simulator.lanes.lockstep_lanes``, and the engine may take its closed forms."""
        return False

    def lockstep_width(self, strategy: Strategy) -> int | None:
        """W where each virtual warp also takes one vertex at a time (chunk 1) in lockstep;
        None where a vertex's edges are spread otherwise (the asynchronous waves' model)."""
        if self.lockstep(strategy) and strategy.vertices_per_grab == 1:
            return self.lanes_per_vertex(strategy)
        return None

    def batches_per_warp(self, strategy: Strategy) -> bool:
        """Whether a worklist push batches per warp (True) or per thread; a launch in which
        a thread shares work (``shares_within_block``) batches per warp either way."""
        return True

    def shares_within_block(self, strategy: Strategy) -> bool:
        """Whether a thread's edges may run on other warps of its block (donation): a
        launch's view and pieces then hold whole blocks (see ``sharing_blocks``)."""
        return False

    def sharing_blocks(self, strategy: Strategy, device: Device, layout: TaskLayout,
                       vertex: np.ndarray, degree: np.ndarray, sweep: np.ndarray
                       ) -> np.ndarray:
        """Of sweeps' active vertices (ascending by sweep, then vertex; ``sweep``: each
        one's), the blocks in which a thread shares work, as keys sweep * blocks + block,
        ascending (asked only where ``shares_within_block``)."""
        return np.zeros(0, dtype=np.int64)

    def for_iteration(self, strategy: Strategy, degrees: np.ndarray) -> Strategy:
        """The strategy an iteration whose frontier has these ``degrees`` runs as."""
        return strategy

    def lanes(self, strategy: Strategy, request: LaneRequest
              ) -> tuple[Lanes, np.ndarray | None]:
        """Where each expanded edge runs (``simulator.lanes.Lanes``: its warp step and
        lane, each unit's steps, idle lane-steps and pop steps) and, for a mapping that
        shares work, each unit's threads that give some away (else None)."""
        raise NotImplementedError

    def position_sisd(self, strategy: Strategy, costs: InstructionCosts) -> int:
        """Extra SISD instructions per active chunk position (WER's warp scan and table
        store: push_job)."""
        return 0

    def sharing_sisd(self, strategy: Strategy, costs: InstructionCosts) -> int:
        """Extra SISD instructions on every unit of a launch in which a thread shares work
        (donation's block mean, shared atomic and barrier)."""
        return 0

    def __repr__(self) -> str:
        return f"<mapping {self.name!r}>"
