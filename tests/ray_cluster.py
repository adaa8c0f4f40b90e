"""What the multi-node tests share: a local Ray cluster (``ray.cluster_utils.Cluster``) of a head
with no CPUs, as on a real cluster, and worker nodes; and the simulator backend with a fixed
sleep per evaluation, so that trials overlap across nodes."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType

from tuner.tuning.evaluate import SimulatorBackend

STORE = 80 * 1024**2  # each node's object store


class DelayedBackend(SimulatorBackend):
    """The simulator, plus a fixed sleep per evaluation."""

    def __init__(self, delay_s: float) -> None:
        self.delay_s = delay_s

    def evaluate(self, graph, runs, algorithm, device, config):
        time.sleep(self.delay_s)
        return super().evaluate(graph, runs, algorithm, device, config)


@contextmanager
def local_cluster(nodes: int, cpus: int, test_module: ModuleType) -> Iterator:
    """A head of 0 CPUs and ``nodes`` worker nodes of ``cpus`` CPUs, Ray connected to it; this
    module and ``test_module`` pickled by value (the workers cannot import tests)."""
    import ray
    from ray import cluster_utils

    for module in (sys.modules[__name__], test_module):
        ray.cloudpickle.register_pickle_by_value(module)
    c = cluster_utils.Cluster(initialize_head=True, head_node_args={
        "num_cpus": 0, "include_dashboard": False, "object_store_memory": STORE})
    workers = [c.add_node(num_cpus=cpus, object_store_memory=STORE) for _ in range(nodes)]
    c.wait_for_nodes()
    ray.init(address=c.address, logging_level="WARNING")
    try:
        yield c, workers
    finally:
        ray.shutdown()
        c.shutdown()
