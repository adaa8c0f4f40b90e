"""Per-iteration adaptation: the oracle (the best configuration chosen independently per
iteration, switches paid) and a learned policy (a per-graph selector over graph-level features
whose leaves keep a constant configuration or hand each iteration to a small cost-sensitive
tree over the features the GPU has when the iteration starts), judged leave-one-graph-out.

The per-iteration costs come from each candidate's constant run through the policy runner
(``simulator.policy``, a one-candidate schedule: the same launches, time for time, as
``simulate``), cached per (graph, algorithm, device, source, candidate) under
``~/.cache/warpsweep/adaptive``.

The oracle. BFS's levels are the same under every configuration, so its iterations align
exactly: a dynamic programme over (iteration, candidate) adds each iteration's cost under the
candidate and, where the driven form changes, the conversion of the frontier the previous
iteration built (compaction of a sweep's flags into a worklist, scatter of a worklist into
flags, costed on that frontier). SSSP's (and CC's) asynchronous launches follow a
trajectory that depends on the configuration: the oracle aligns the candidates' own runs by
iteration index (iteration i of one run stands for iteration i of another) and a path ends
where the candidate it is on ends its own run. That is optimistic, so the primary figure is
the oracle as run (``oracle_as_run``): its schedule through the simulator (its own
trajectory, the worklist a switch really builds) or, where that strays, the best of a few of
its prefixes run as they are; never above the best constant.

The learned policy, judged leave-one-graph-out against these, is in
``tuner.selection.adaptive_policy``; ``adaptation_rows`` gives the report's section.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from simulator.costs import total_cost
from simulator.device import get_device
from simulator.functional import functional_run
from simulator.load import load_graph
from simulator.policy import FEATURES
from simulator.policy import Policy
from simulator.policy import policy_iteration_costs
from simulator.strategy import Strategy
from tuner.results.location import default_home_path

# The pool a policy's candidates are drawn from (each fold picks its own few from its training
# graphs, ``fold_candidates``): thread with and without donation, every virtual warp width,
# chunked and dynamically distributed virtual warps, deferred outliers, WER and WER+, and
# the data-driven (worklist) forms of the same, with the block push.
CANDIDATES = (
    "mapping=thread",
    "mapping=thread,donate_threshold=0",
    "mapping=thread,donate_threshold=32",
    "mapping=vwarp,w=2",
    "mapping=vwarp,w=4",
    "mapping=vwarp,w=8",
    "mapping=vwarp,w=16",
    "mapping=vwarp,w=32",
    "mapping=vwarp,w=8,chunk=4",
    "mapping=vwarp,w=32,distribution=dynamic",
    "mapping=vwarp,w=4,defer_threshold=64",
    "mapping=wer",
    "mapping=wer+",
    "mapping=thread,driven=data",
    "mapping=thread,donate_threshold=0,driven=data",
    "mapping=vwarp,w=4,driven=data",
    "mapping=vwarp,w=8,driven=data",
    "mapping=vwarp,w=16,driven=data",
    "mapping=vwarp,w=32,driven=data",
    "mapping=vwarp,w=32,driven=data,push=block",
    "mapping=vwarp,w=8,driven=data,defer_threshold=64",
    "mapping=wer+,driven=data",
)
CACHE_VERSION = 2
GAIN_FLOOR = 0.02  # below it, adaptation is not worth a policy: keep the constant


# The oracle's schedule prefixes run as they are where its own run strays (``oracle_as_run``).
ORACLE_SEGMENTS = 6


def cache_dir() -> Path:
    """Where per-iteration tables are kept (``WARPSWEEP_CACHE`` or ~/.cache/warpsweep)."""
    return default_home_path("WARPSWEEP_CACHE", "~/.cache/warpsweep") / "adaptive"


def candidate_strategies(candidates: Sequence[str] = CANDIDATES) -> tuple[Strategy, ...]:
    """The candidates as strategies."""
    return tuple(Strategy.parse(c) for c in candidates)


@dataclass
class IterationTable:
    """One (graph, algorithm, device, source): each candidate's constant run, per iteration:
    its time, the cost of converting the frontier it built to the other form, its features."""

    graph: str
    algorithm: str
    device: str
    source: int | None  # None: CC and PageRank, which take none
    candidates: tuple[str, ...]
    forms: tuple[str, ...]
    times: list[np.ndarray]      # per candidate: per-iteration time, us
    convert: list[np.ndarray]    # per candidate: converting its frontier out, us
    features: list[np.ndarray]   # per candidate: iterations x FEATURES

    @property
    def constant_us(self) -> np.ndarray:
        """Each candidate's constant run time, us."""
        return np.array([t.sum() for t in self.times])

    @property
    def best(self) -> int:
        """The best constant candidate."""
        return int(np.argmin(self.constant_us))

    def to_json(self) -> dict[str, Any]:
        """The table as JSON-able lists."""
        return {"version": CACHE_VERSION, "graph": self.graph, "algorithm": self.algorithm,
                "device": self.device, "source": self.source,
                "candidates": list(self.candidates), "forms": list(self.forms),
                "times": [t.tolist() for t in self.times],
                "convert": [t.tolist() for t in self.convert],
                "features": [f.tolist() for f in self.features]}

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> IterationTable:
        """Rebuild from ``to_json``."""
        return cls(doc["graph"], doc["algorithm"], doc["device"], _source(doc["source"]),
                   tuple(doc["candidates"]), tuple(doc["forms"]),
                   [np.asarray(t, dtype=float) for t in doc["times"]],
                   [np.asarray(t, dtype=float) for t in doc["convert"]],
                   [np.asarray(f, dtype=float).reshape(-1, len(FEATURES))
                    for f in doc["features"]])


def _key(spec: str, algorithm: str, device: str, source: int | None, candidate: str,
         made_of: Sequence[str]) -> str:
    text = json.dumps([CACHE_VERSION, spec, algorithm, device, source, candidate, *made_of])
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def _made_of(spec: str, device: str) -> tuple[str, str, str]:
    """What a table's times follow from beyond its spec and device names: the graph's
    content (a file's bytes), the device's fields (a device file edited in place) and the cost
    model (the simulator's sources). Cached tables had been keyed by the names alone, and
    served after any of these changed (probe ADP)."""
    from simulator.device import device_digest
    from simulator.graph_cache import content_digest
    from simulator.graph_spec import parse_spec
    from tuner.env import simulator_digest

    return (content_digest(parse_spec(spec)), device_digest(get_device(device)),
            simulator_digest())


def _run_candidate(fr: Any, strategy: Strategy, dev: Any) -> dict[str, Any]:
    """One candidate's constant run, per iteration: time, converting out, features."""
    its = policy_iteration_costs(fr, Policy((strategy,), schedule=(0,)), dev,
                                 count_features=False, record=True)
    return {"times": [dev.us(it.cost.cycles) for it in its],
            "convert": [dev.us(it.convert_out_cycles) for it in its],
            "features": [[it.features[f] for f in FEATURES] for it in its],
            "source": _source(fr.source)}


def _whole(entry: Any) -> bool:
    """Whether a cached candidate run holds what a table reads, in step (an entry ``{}``
    had ended in a KeyError traceback)."""
    if not isinstance(entry, dict):
        return False
    try:
        n = len(entry["times"])
        return (n > 0 and len(entry["convert"]) == n and len(entry["features"]) == n
                and "source" in entry)
    except (KeyError, TypeError):
        return False


def _source(source: Any) -> int | None:
    """A run's source as the table keeps it (CC and PageRank have none)."""
    return None if source is None else int(source)


def iteration_table(spec: str, algorithm: str, device: str = "h100",
                    candidates: Sequence[str] = CANDIDATES, source: int | None = None,
                    cache: bool = True) -> IterationTable:
    """The per-iteration table of one graph; each candidate's run is cached on its own, so a
    wider pool only runs the candidates it adds."""
    entries: dict[str, dict[str, Any]] = {}
    made_of = _made_of(spec, device) if cache else ()
    paths = {c: cache_dir() / f"{_key(spec, algorithm, device, source, c, made_of)}.json"
             for c in candidates}
    for c, path in paths.items():
        if cache and path.exists():
            try:
                entry = json.loads(path.read_text())
            except ValueError:
                continue
            if _whole(entry):  # else (a damaged or hand-made entry) simulated again
                entries[c] = entry
    graph = fr = dev = None
    name = next((e["graph"] for e in entries.values() if e.get("graph")), None)
    for c in candidates:
        if c in entries:
            continue
        if fr is None:
            graph = load_graph(spec)
            fr = functional_run(graph, algorithm, source)
            dev = get_device(device)
            name = graph.name or spec
        entries[c] = _run_candidate(fr, Strategy.parse(c), dev)
        entries[c]["graph"] = name
        if cache:
            path = paths[c]
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
            tmp.write_text(json.dumps(entries[c]))
            tmp.replace(path)
    first = entries[candidates[0]]
    return IterationTable(
        name or spec, algorithm, get_device(device).name, _source(first["source"]),
        tuple(candidates), tuple(Strategy.parse(c).driven for c in candidates),
        [np.asarray(entries[c]["times"], dtype=float) for c in candidates],
        [np.asarray(entries[c]["convert"], dtype=float) for c in candidates],
        [np.asarray(entries[c]["features"], dtype=float).reshape(-1, len(FEATURES))
         for c in candidates])


# -- the oracle --------------------------------------------------------------------------------
@dataclass
class Oracle:
    """The best per-iteration schedule of one table and its time (us), switches paid."""

    time_us: float
    schedule: list[int]
    switches: int

    def gain(self, table: IterationTable) -> float:
        """Best constant time over the oracle's (> 1: adaptation can win)."""
        return float(table.constant_us.min() / self.time_us)


def oracle(table: IterationTable) -> Oracle:
    """The dynamic programme over (iteration, candidate): each iteration's cost under the
    candidate, plus the conversion of the previous iteration's frontier where the driven form
    changes; a path ends where its candidate's own run ends (see the module)."""
    k = len(table.candidates)
    lengths = np.array([t.size for t in table.times])
    horizon = int(lengths.max())
    data = np.array([f == "data" for f in table.forms])
    differ = data[:, None] != data[None, :]  # [previous, next]
    times = np.full((horizon, k), np.inf)
    convert = np.zeros((horizon, k))
    for c in range(k):
        times[: lengths[c], c] = table.times[c]
        convert[: lengths[c], c] = table.convert[c]
    value = times[0].copy()
    back = np.zeros((horizon, k), dtype=np.int64)
    back[0] = np.arange(k)
    ends = lengths - 1
    best_end, end_at = np.inf, (-1, -1)
    for i in range(horizon):
        if i:
            via = value[:, None] + np.where(differ, convert[i - 1][:, None], 0.0)
            p = np.argmin(via, axis=0)
            value = via[p, np.arange(k)] + times[i]
            back[i] = p
        done = np.flatnonzero(ends == i)
        if done.size:
            c = int(done[np.argmin(value[done])])
            if value[c] < best_end:
                best_end, end_at = float(value[c]), (i, c)
    i, c = end_at
    schedule = [c]
    while i > 0:
        c = int(back[i, c])
        schedule.append(c)
        i -= 1
    schedule.reverse()
    switches = sum(1 for a, b in zip(schedule, schedule[1:], strict=False) if a != b)
    return Oracle(float(best_end), schedule, switches)


def schedule_family(schedule: Sequence[int], best: int, segments: int = ORACLE_SEGMENTS
                    ) -> list[tuple[int, ...]]:
    """Schedules to run as they are beside the oracle's own: its first j runs of one candidate
    (j = 1 .. ``segments``), then either the last of them kept or the best constant ``best``
    to the end (a policy schedule's last entry repeats)."""
    runs: list[list[int]] = []
    for c in schedule:
        if runs and runs[-1][0] == c:
            runs[-1][1] += 1
        else:
            runs.append([c, 1])
    out: list[tuple[int, ...]] = [tuple(schedule)]
    for j in range(1, min(segments, len(runs)) + 1):
        head = tuple(c for c, k in runs[:j] for _ in range(k))
        out.append(head)
        out.append((*head, best))
    return list(dict.fromkeys(out))


def oracle_as_run(spec: str, table: IterationTable, orc: Oracle, device: str = "h100"
                  ) -> float:
    """The oracle's schedule run through the simulator as it is (its own trajectory, the
    worklist a switch really builds), us. Where that run is slower than the dynamic
    programme said by more than 0.5% (SSSP: trajectories differ), the best of
    ``schedule_family`` as run: the oracle's first runs then its last candidate or the best
    constant; never above the best constant. Every figure is a run, none a table's sum."""
    constant = float(table.constant_us.min())
    if not orc.switches:
        return float(table.constant_us[orc.schedule[0]])
    strategies = candidate_strategies(table.candidates)

    def run(schedule: Sequence[int]) -> float:
        if len(set(schedule)) == 1:
            return float(table.constant_us[schedule[0]])
        us, _ = run_policy(spec, table.algorithm, Policy(strategies, schedule=tuple(schedule)),
                           device, table.source, count_features=False)
        return us

    us = run(orc.schedule)
    if us > orc.time_us * 1.005:
        us = min([us, *(run(sch) for sch in schedule_family(orc.schedule, table.best)[1:])])
    return min(us, constant)


def run_policy(spec: str, algorithm: str, policy: Policy, device: str = "h100",
               source: int | None = None, count_features: bool = True,
               ) -> tuple[float, list[Any]]:
    """A policy's simulated time on a graph (us) and its iterations (feature counters paid
    where the policy reads them)."""
    graph = load_graph(spec)
    fr = functional_run(graph, algorithm, source)
    dev = get_device(device)
    its = policy_iteration_costs(fr, policy, dev, count_features=count_features)
    return dev.us(total_cost([it.cost for it in its]).cycles), its


# -- the report's section -----------------------------------------------------------------------
@dataclass
class AdaptationRow:
    """One (graph, algorithm, device) of a results directory: what adaptation could win."""

    graph: str
    algorithm: str
    device: str
    best_constant: str
    constant_us: float
    oracle_us: float
    switches: int

    @property
    def gain(self) -> float:
        """Best constant over the oracle (1.0: nothing to win)."""
        return self.constant_us / self.oracle_us

    @property
    def verdict(self) -> str:
        """What to run: adapt, or (under ``GAIN_FLOOR``) keep the constant."""
        saving = 1 - 1 / self.gain
        if saving < GAIN_FLOOR:
            return (f"under {100 * GAIN_FLOOR:g}% ({100 * saving:.1f}%): keep the constant "
                    f"{self.best_constant}")
        return f"adaptation can save {100 * saving:.1f}% ({self.switches} switch(es))"


def adaptation_rows(groups: Sequence[tuple[str, str, str]]) -> tuple[list[AdaptationRow],
                                                                       list[str]]:
    """The oracle's gap over the best constant candidate for each (graph spec, algorithm,
    device) the policy runs (BFS, SSSP, CC), and why any was left out. The oracle's time is
    its schedule as run (``oracle_as_run``), never above the best constant."""
    rows, skipped = [], []
    for spec, algorithm, device in groups:
        if algorithm not in ("bfs", "sssp", "cc"):
            continue
        try:
            table = iteration_table(spec, algorithm, device)
        except Exception as exc:  # noqa: BLE001 - one graph must not sink the section
            skipped.append(f"{spec} {algorithm} on {device}: {type(exc).__name__}: {exc}")
            continue
        orc = oracle(table)
        constant = float(table.constant_us.min())
        realised = oracle_as_run(spec, table, orc, device)
        rows.append(AdaptationRow(table.graph, algorithm, device,
                                  table.candidates[table.best], constant,
                                  min(realised, constant),
                                  orc.switches if realised < constant else 0))
    return rows, skipped
