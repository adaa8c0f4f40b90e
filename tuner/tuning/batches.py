"""What a Ray worker runs for ``tuner.tuning.dispatch``: several evaluations of one study in one
task.

Imports only the simulator's side (``tuner.tuning.evaluate``, numpy), never Optuna or pyarrow, so a
worker process stays small (a node runs one per CPU).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from tuner.tuning.evaluate import Outcome


@dataclass
class BatchResult:
    """A task's outcomes, in the order of its configurations, and where it ran."""

    outcomes: list[Outcome]
    node_id: str | None
    fetched: int = 0  # shared objects this worker process fetched from the store
    rebuilt: int = 0  # shared objects computed again on this node (their copy was lost)
    started: float = 0.0  # wall clock (time.time) when the task began and ended
    ended: float = 0.0


def evaluate_batch(backend: Any, graph: Any, runs: Any, algorithm: str, device: Any,
                   configs: list[dict[str, Any]]) -> BatchResult:
    """Evaluate several configurations of one study in this worker, one after another."""
    from tuner.env import ray_node_id
    from tuner.tuning import executor

    started = time.time()
    outcomes = [backend.evaluate(graph, runs, algorithm, device, c) for c in configs]
    fetched, rebuilt = executor.take_resolve_counts()
    return BatchResult(outcomes, ray_node_id(), fetched, rebuilt, started, time.time())


def prepare_counted(backend: Any, *args: Any) -> tuple[Any, Any, Any, str | None]:
    """``backend.prepare(*args)``, plus the node that loaded the graph."""
    from tuner.env import ray_node_id

    graph, runs, meta = backend.prepare(*args)
    return graph, runs, meta, ray_node_id()
