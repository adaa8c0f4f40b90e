"""What a worker runs: prepare a study's graph and functional runs, then evaluate configurations.

Imports only the simulator (numpy), so a Ray worker needs neither Optuna nor pyarrow. A backend
is a picklable object with ``prepare`` and ``evaluate``; ``SimulatorBackend`` is the real one.
"""

from __future__ import annotations

import hashlib
import math
import re
import time
from dataclasses import dataclass
from dataclasses import field
from typing import Any

import numpy as np

from simulator.errors import GraphError
from simulator.errors import WarpsweepError
from tuner.env import hostname
from tuner.env import library_versions
from tuner.env import model_digest
from tuner.env import ray_node_id

SOURCE_ALGORITHMS = ("bfs", "sssp")


@dataclass(frozen=True)
class GraphMeta:
    """What the driver needs to know about a prepared graph (small; the graph stays remote)."""

    graph_id: str
    spec: str
    name: str
    kind: str
    n: int
    m: int
    directed: bool
    weighted: bool
    sources: tuple[int, ...]
    features: dict[str, Any] | None = None
    error: str | None = None
    prepare_s: float = 0.0
    model: str = ""  # the model digest of the code that prepared it ("" : not told)
    edges: str = ""  # the prepared graph's ``Graph.content_digest`` ("": not told)


@dataclass
class Outcome:
    """One configuration's evaluation: mean metrics over sources and their spread, or an error."""

    metrics: dict[str, float] | None
    spread: dict[str, tuple[float, float, float]] = field(default_factory=dict)
    error: str | None = None
    wall_s: float = 0.0
    worker: str = ""
    node_id: str | None = None
    model: str = ""  # the model digest of the code that evaluated it ("" : not told)
    policy: str = ""  # the content digest of the policy file it ran ("": none, or not told)


def graph_slug(spec: str) -> str:
    """A short readable, path-safe name for a graph spec (``rmat12-ef16``)."""
    try:
        from simulator.graph_spec import parse_spec

        name = parse_spec(spec).short_name()
    except (ImportError, WarpsweepError):
        name = spec.split("/")[-1]
    return re.sub(r"[^A-Za-z0-9]+", "-", name).strip("-")[:40] or "graph"


def graph_id(spec: str, content: str = "") -> str:
    """A path-safe, stable id for a graph: readable slug plus a hash of the spec and the
    graph's content digest (a regenerated file is a new graph)."""
    return f"{graph_slug(spec)}-{hashlib.sha1(f'{spec}|{content}'.encode()).hexdigest()[:8]}"


def graph_kind(spec: str) -> str:
    """The spec's family (``rmat`` in ``rmat:scale=12``); ``file`` for a bare path."""
    head, sep, _ = spec.partition(":")
    return head if sep and re.fullmatch(r"[A-Za-z0-9_]+", head) else "file"


def choose_sources(degrees: np.ndarray, count: int, seed: int, default: int) -> tuple[int, ...]:
    """``count`` source vertices: the default (max degree) one, then seeded random others
    among vertices with edges."""
    candidates = np.flatnonzero(degrees > 0)
    candidates = candidates[candidates != default]
    extra = min(max(count - 1, 0), candidates.size)
    rng = np.random.default_rng(seed)
    picked = rng.choice(candidates, size=extra, replace=False) if extra else []
    return (int(default), *sorted(int(v) for v in picked))


class SimulatorBackend:
    """Evaluations by the warpsweep simulator."""

    def prepare(self, spec: str, algorithm: str, n_sources: int, seed: int,
                want_features: bool, content: str = "", recorded_edges: str = "",
                recorded_sources: tuple[int, ...] = ()
                ) -> tuple[Any, dict[int | None, Any], GraphMeta]:
        """Load the graph and compute the functional run of every source, once per study;
        ``content``: the digest the driver took of the graph (GraphError where the graph
        read here is another: its file replaced since); ``recorded_edges`` and
        ``recorded_sources``: what the study's rows were computed on, where known (GraphError
        where this machine builds another graph or draws other sources from the spec)."""
        from simulator import functional_run
        from simulator import load_graph
        from simulator.functional import default_source

        t0 = time.perf_counter()
        try:
            graph = load_graph(spec)
            check_same_graph(spec, content)
            built = graph.content_digest  # its edges, weights and direction
            check_same_build(spec, "edges", built, recorded_edges)
            if algorithm in SOURCE_ALGORITHMS:
                sources = choose_sources(graph.degrees, n_sources, seed, default_source(graph))
                if recorded_sources:
                    check_same_build(spec, "sources", sources, tuple(recorded_sources))
                runs = {s: functional_run(graph, algorithm, s) for s in sources}
            else:
                sources = ()
                runs = {None: functional_run(graph, algorithm)}
            features = selector_features(graph) if want_features else None
        except WarpsweepError as exc:
            meta = GraphMeta(graph_id(spec), spec, "", graph_kind(spec), 0, 0, False, False, (),
                             error=str(exc))
            return None, {}, meta
        canonical = graph.spec or spec
        meta = GraphMeta(
            graph_id=graph_id(canonical), spec=canonical, name=graph.name,
            kind=graph_kind(canonical), n=graph.n, m=graph.m, directed=graph.directed,
            weighted=graph.weights is not None, sources=sources, features=features,
            prepare_s=time.perf_counter() - t0, model=model_digest(), edges=built,
        )
        return graph, runs, meta

    def evaluate(self, graph: Any, runs: dict[int | None, Any], algorithm: str,
                 device: Any, config: dict[str, Any]) -> Outcome:
        """Simulate ``config`` from every prepared source on ``device`` (a preset's name or a
        Device); any exception becomes the error."""
        from simulator import Strategy
        from simulator import simulate

        t0 = time.perf_counter()
        try:
            strategy = Strategy.from_params(config)
            results = [
                simulate(graph, algorithm, strategy, device=device, source=source,
                         functional=fr).to_dict()
                for source, fr in runs.items()
            ]
            metrics, spread = aggregate(results)
            error = None
        except Exception as exc:  # a failed trial, recorded with its reason; the study goes on
            metrics, spread, error = None, {}, f"{type(exc).__name__}: {exc}"
        return Outcome(metrics, spread, error, time.perf_counter() - t0, hostname(),
                       ray_node_id(), model_digest(), _policy_ran(config))


def check_same_graph(spec: str, content: str) -> None:
    """GraphError where ``spec``'s graph is no longer the one of digest ``content`` (its file
    replaced after the driver read it: rows filed under the old graph would hold the new)."""
    if not content:
        return
    from simulator.graph_cache import content_digest
    from simulator.graph_spec import parse_spec

    parsed = parse_spec(spec)
    now = content_digest(parsed)
    if now != content:
        raise GraphError(
            f"graph file {parsed.params.get('path', spec)!r} changed while this run used it "
            f"(content {content} when the run began, {now} now): nothing computed on it is "
            "recorded; run the command again once it stays as it is (a changed file is a new "
            "study)")


def check_same_build(spec: str, what: str, built: Any, recorded: Any) -> None:
    """GraphError where this machine built ``built`` from ``spec`` and its seed, and the
    study's rows were computed on ``recorded`` (falsy: not recorded): a study's values on two
    graphs, or two sets of sources, would be ranked as one."""
    if not recorded or built == recorded:
        return
    versions = ", ".join(f"{k} {v}" for k, v in library_versions().items()
                         if k in ("python", "numpy"))
    raise GraphError(
        f"{spec}: this machine builds other {what} from the spec ({built}) than the study's "
        f"rows were computed on ({recorded}); here {versions}. A generated graph and the "
        "sources drawn on it follow from numpy's random generator, whose draws may change "
        "between numpy versions: run it where numpy is the version that began it (its "
        "journal's run records name it), or in another --results directory. Nothing "
        "computed on this graph here is recorded")


def _policy_ran(config: dict[str, Any]) -> str:
    """The content digest of the policy file ``config`` runs, as this worker read it."""
    if not config.get("policy"):
        return ""
    from simulator.policy import policy_digest

    try:
        return policy_digest(config["policy"])
    except WarpsweepError:  # no file to read: the trial failed saying so
        return ""


def selector_features(graph: Any) -> dict[str, Any] | None:
    """The features the selector learns from, as a graph row holds them (None where the
    selector's module is not installed)."""
    try:
        from simulator.features import graph_features
    except ImportError:
        return None
    return graph_features(graph)


def aggregate(results: list[dict[str, Any]]) -> tuple[dict[str, float],
                                                      dict[str, tuple[float, float, float]]]:
    """Mean of every numeric metric over sources, and (std, min, max) of each."""
    metrics: dict[str, float] = {}
    spread: dict[str, tuple[float, float, float]] = {}
    for name in results[0]:
        vals = [r[name] for r in results]
        if not all(isinstance(v, (int, float, np.number)) and not isinstance(v, bool)
                   for v in vals):
            continue
        arr = np.asarray(vals, dtype=np.float64)
        metrics[name] = float(arr.mean())
        spread[name] = (float(arr.std()), float(arr.min()), float(arr.max()))
    return metrics, spread


def is_finite(values: list[float]) -> bool:
    """Whether every objective value is a finite number."""
    return all(isinstance(v, (int, float)) and math.isfinite(v) for v in values)
