"""Lane mappings: how a kernel's warps take vertices and spread their edges over lanes.

Each mapping is one module implementing ``Mapping`` (the knobs it owns with their defaults
and checks, its lane assignment, its extra serial costs and the questions the driver and
engine ask of it) and one entry in ``MAPPINGS``, which ``Strategy`` validates against.
``registered(mapping)`` adds one for a ``with`` block (a test's own mapping);
tests/test_mapping_contract.py runs the same contract over every registered mapping.
"""

from simulator.mappings._adaptive import Adaptive
from simulator.mappings._adaptive import adaptive_width
from simulator.mappings._base import LaneRequest
from simulator.mappings._base import Mapping
from simulator.mappings._registry import MAPPINGS
from simulator.mappings._registry import knob_owners
from simulator.mappings._registry import mapping_names
from simulator.mappings._registry import mapping_of
from simulator.mappings._registry import register
from simulator.mappings._registry import registered
from simulator.mappings._registry import unregister
from simulator.mappings._thread import Thread
from simulator.mappings._vwarp import VirtualWarp
from simulator.mappings._wer import Redistributing
from simulator.mappings._wer import RedistributingAllLanes

for _mapping in (Thread(), VirtualWarp(), Redistributing(), RedistributingAllLanes(),
                 Adaptive()):
    register(_mapping)

__all__ = [
    "MAPPINGS", "LaneRequest", "Mapping", "adaptive_width", "knob_owners", "mapping_names",
    "mapping_of", "register", "registered", "unregister",
]
