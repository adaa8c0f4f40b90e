"""numpy SIMT simulator of GPU graph kernels under load-balancing strategies."""

from simulator.device import DEVICES
from simulator.device import Device
from simulator.device import get_device
from simulator.errors import ConfigError
from simulator.errors import GraphError
from simulator.errors import WarpsweepError
from simulator.functional import ALGORITHMS
from simulator.functional import FunctionalRun
from simulator.functional import functional_run
from simulator.graph import Graph
from simulator.result import METRICS
from simulator.result import Result
from simulator.simulate import simulate
from simulator.strategy import Strategy

try:  # the graph loaders are written alongside; keep the simulator importable meanwhile
    from simulator.load import load_graph
except ImportError:  # pragma: no cover
    load_graph = None

__all__ = [
    "ALGORITHMS", "DEVICES", "METRICS", "ConfigError", "Device", "FunctionalRun", "Graph",
    "GraphError", "Result", "Strategy", "WarpsweepError", "functional_run", "get_device",
    "load_graph", "simulate",
]
