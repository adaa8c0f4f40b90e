"""The one public entry point: simulate an algorithm on a graph under a strategy and device."""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np

from simulator.costs import BOUND_NAMES
from simulator.costs import LaunchCost
from simulator.costs import total_cost
from simulator.device import Device
from simulator.device import get_device
from simulator.driver import iteration_costs
from simulator.errors import ConfigError
from simulator.functional import ALGORITHMS
from simulator.functional import FunctionalRun
from simulator.functional import functional_run
from simulator.graph import Graph
from simulator.graph import is_graph
from simulator.load import load_graph
from simulator.result import Result
from simulator.sizes import check_simulation
from simulator.strategy import Strategy


def as_strategy(strategy: Strategy | dict[str, Any] | str | None) -> Strategy:
    """Accept a Strategy, a dict of knobs, ``key=value,...`` text, or None (the baseline)."""
    if strategy is None:
        return Strategy()
    if isinstance(strategy, Strategy):
        return strategy
    if isinstance(strategy, dict):
        return Strategy.from_params(strategy)
    if isinstance(strategy, str):
        return Strategy.parse(strategy)
    raise ConfigError(f"cannot build a strategy from {type(strategy).__name__}")


def simulate(
    graph: Graph | str | os.PathLike,
    algorithm: str,
    strategy: Strategy | dict[str, Any] | str | None = None,
    device: str | Device = "h100",
    source: int | None = None,
    *,
    functional: FunctionalRun | None = None,
    trace: bool = False,
) -> Result:
    """Run ``algorithm`` on ``graph`` (a Graph, or a spec or a file's path to load) and time
    its kernels under ``strategy`` on ``device``.

    Pass ``functional`` (from ``functional_run``) to reuse the algorithm's per-iteration work
    across strategies; it must have been computed for this graph, algorithm and source.
    """
    if isinstance(graph, str | os.PathLike):  # a spec, as the command line takes it, or a path
        graph = load_graph(graph)
    elif not is_graph(graph):
        raise ConfigError(f"graph must be a Graph or a graph spec (load_graph makes one), "
                          f"not {type(graph).__name__}")
    if algorithm not in ALGORITHMS:
        raise ConfigError(f"unknown algorithm {algorithm!r}; choose one of {ALGORITHMS}")
    strategy = as_strategy(strategy)
    device = get_device(device)
    check_fits_device(strategy, algorithm, device)
    for label, run in _strategies_run(strategy, algorithm):
        what = label if run is strategy else f"policy {label} ({run})"
        check_simulation(graph.n, graph.m, run, f"simulating {what} on "
                                                f"{graph.spec or graph.name}")
    if functional is None:
        functional = functional_run(graph, algorithm, source)
    elif not all(hasattr(functional, a) for a in ("algorithm", "source", "n", "iterations")):
        raise ConfigError(f"functional must be what functional_run returns, not "
                          f"{type(functional).__name__}")
    elif functional.algorithm != algorithm or functional.n != graph.n or (
        source is not None and functional.source != source
    ):
        raise ConfigError(
            f"the functional run given is for {functional.algorithm} from source "
            f"{functional.source} on {functional.n} vertices, not {algorithm} from {source} "
            f"on {graph.n}"
        )
    elif _computed_elsewhere(functional, graph):
        raise ConfigError(
            f"the functional run given was computed on another graph than "
            f"{graph.spec or graph.name} (its edges, weights or direction differ): run "
            "functional_run on this graph"
        )
    iterations = iteration_costs(functional, strategy, device)
    total = total_cost([it.cost for it in iterations])
    time_us = device.us(total.cycles)
    if not math.isfinite(time_us):
        raise ConfigError(
            f"the device {device.name}'s figures give no finite time ({time_us} us): a field "
            "far outside any GPU's range overflows the cost model"
        )
    result_trace = None
    if trace:
        costs = [it.cost for it in iterations]
        result_trace = {
            "frontier": np.array([c.active_tasks for c in costs]),
            "edges": np.array([c.edges for c in costs]),
            "time_us": np.array([device.us(c.cycles) for c in costs]),
            "simd_efficiency": np.array([_ratio(c.simd_active, c.simd_issued) for c in costs]),
            "form": np.array([it.form for it in iterations]),
            "w": np.array([it.w for it in iterations]),
            "worklist": np.array([c.worklist_items for c in costs]),
            "duplicates": np.array([c.duplicates for c in costs]),
            "pushed": np.array([0 if c.pushed is None else c.pushed.size for c in costs]),
            "atomics": np.array([c.atomics for c in costs]),
            "host_us": np.array([device.us(c.host_cycles) for c in costs]),
            "bound": np.array([limiting_bound(c) for c in costs]),
        }
        if strategy.policy is not None:  # what the policy chose per iteration, and why
            result_trace["choice"] = np.array([it.choice for it in iterations])
            result_trace["rule"] = np.array([it.rule for it in iterations])
            result_trace["switch_us"] = np.array(
                [device.us(it.switch_cycles) for it in iterations])
    output = functional.output
    if strategy.driven == "data" and functional.worklist_run is not None:
        output = functional.worklist_run.output
    return Result(
        algorithm=algorithm,
        device=device.name,
        strategy=strategy.to_params(),
        time_us=time_us,
        cycles=total.cycles,
        launches=total.launches,
        iterations=len(iterations),
        simd_efficiency=_ratio(total.simd_active, total.simd_issued),
        lane_efficiency=_ratio(total.useful_lane_instructions, total.issued_lane_instructions),
        u_a=_ratio(total.u_a, total.simd_issued),
        u_r=_ratio(total.u_r, total.simd_issued),
        me=_ratio(total.simd_active, total.simd_issued),
        transactions=total.transactions,
        bytes=total.transactions * device.sector_bytes,
        transactions_per_request=_ratio(total.transactions, total.requests),
        atomics=total.atomics,
        edges_touched=total.edges,
        work_efficiency=_ratio(total.active_tasks, total.tasks),
        meps=total.edges / time_us if time_us else 0.0,
        worklist_items=total.worklist_items,
        duplicates=total.duplicates,
        output=output,
        trace=result_trace,
        bounds=total.bounds,
        host_cycles=total.host_cycles,
        extra_cycles=total.extra_cycles,
        source=functional.source,
    )


def limiting_bound(cost: LaunchCost) -> str:
    """What most of an iteration's cycles wait on: the host's round trips, or the bound
    (``costs.BOUND_NAMES``) that limits its launches for the most cycles in all."""
    rows = cost.bounds
    by_bound = np.zeros(len(BOUND_NAMES))
    if rows.size:
        limiting = rows[:, :5].argmax(axis=1)
        np.add.at(by_bound, limiting, rows[np.arange(rows.shape[0]), limiting])
        by_bound[5] = rows[:, 5].sum()
    if cost.host_cycles >= by_bound.max():
        return "host"
    return BOUND_NAMES[int(by_bound.argmax())]


def _ratio(num: float, den: float) -> float:
    return float(num / den) if den else 0.0


def check_fits_device(strategy: Strategy, algorithm: str, device: Device) -> None:
    """Refuse a strategy whose blocks or virtual warps the device cannot hold (each of a
    policy file's candidates: the policy's own block size launches nothing)."""
    if strategy.policy is not None:
        for label, candidate in _strategies_run(strategy, algorithm):
            try:
                check_fits_device(candidate, algorithm, device)
            except ConfigError as exc:
                raise ConfigError(f"{label}: {exc}") from None
        return
    if strategy.block_size > device.max_threads_per_block:
        raise ConfigError(
            f"block_size={strategy.block_size} exceeds the device {device.name}'s "
            f"max_threads_per_block={device.max_threads_per_block}"
        )
    if strategy.block_size % device.warp_size:
        raise ConfigError(
            f"block_size={strategy.block_size} is no multiple of the device {device.name}'s "
            f"warp_size={device.warp_size}: a block holds whole warps"
        )
    for knob, lanes in _virtual_warp_widths(strategy):
        if lanes > device.warp_size:
            raise ConfigError(
                f"{knob}={lanes} exceeds the device {device.name}'s warp_size="
                f"{device.warp_size}: a virtual warp is a part of a warp")


def _strategies_run(strategy: Strategy, algorithm: str) -> list[tuple[str, Strategy]]:
    """The strategies a run may launch under, each with a label: a policy file's candidates
    (``FILE's candidate i``), or ``strategy`` itself (its text)."""
    if strategy.policy is None:
        return [(str(strategy), strategy)]
    from simulator.policy import strategy_policy

    return [(f"{strategy.policy}'s candidate {i}", c)
            for i, c in enumerate(strategy_policy(strategy, algorithm).candidates)]


def _virtual_warp_widths(strategy: Strategy) -> list[tuple[str, int]]:
    """The virtual warp widths a strategy other than a policy runs with, each named by its
    knob."""
    if strategy.mapping == "vwarp":
        return [("w", strategy.w)]
    if strategy.mapping == "adaptive":
        return [("adaptive_max_w", strategy.adaptive_max_w)]
    return []


def _computed_elsewhere(functional: FunctionalRun, graph: Graph) -> bool:
    """Whether a functional run records another graph's digest than ``graph``'s (either may
    lack one: another checkout's objects, as bench/compare_revisions passes them)."""
    recorded = getattr(functional, "graph_digest", None)
    digest = getattr(graph, "content_digest", None)
    return recorded is not None and digest is not None and recorded != digest
