"""numpy SIMT simulator of GPU graph kernels under load-balancing strategies."""

from simulator.errors import ConfigError
from simulator.errors import GraphError
from simulator.errors import WarpsweepError
from simulator.graph import Graph

__all__ = ["ConfigError", "Graph", "GraphError", "WarpsweepError"]
