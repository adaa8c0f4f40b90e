"""What a Ray worker runs for ``tuner.tuning.dispatch``: several evaluations of one study in one
task.

Imports only the simulator's side (``tuner.tuning.evaluate``, numpy), never Optuna or pyarrow, so a
worker process stays small (a node runs one per CPU).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
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


def prepare_counted(backend: Any, cwd: str, *args: Any) -> tuple[Any, Any, Any, str | None]:
    """``backend.prepare(*args)`` from the driver's ``cwd`` (``prepare_from``), plus the node
    that loaded the graph."""
    from tuner.env import ray_node_id

    graph, runs, meta = prepare_from(cwd, backend.prepare, *args)
    return graph, runs, meta, ray_node_id()


def prepare_from(cwd: str, prepare: Callable[..., Any], *args: Any) -> Any:
    """``prepare(*args)`` with a graph file's relative path read from ``cwd``, the driver's
    working directory, where this machine has it: a cluster's workers run in their own
    (``file:g.npz`` had been "not found" there, found in-process)."""
    if os.path.isdir(cwd) and os.getcwd() != cwd:
        with contextlib.chdir(cwd):  # a worker runs one task at a time
            return prepare(*args)
    return prepare(*args)


def prepared_again(prepare: Callable[..., Any], *args: Any) -> Any:
    """``prepare(*args)`` where a lost copy of a study's graph or functional runs is built
    again: its refusal (this machine builds another graph, or draws other sources, than the
    study's) raised, not returned as a graph of None."""
    from simulator.errors import GraphError

    graph, runs, meta = prepare(*args)
    if meta.error is not None:
        raise GraphError(meta.error)
    return graph, runs, meta
