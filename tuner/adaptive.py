"""Per-iteration adaptation: the oracle (the best configuration chosen independently per
iteration, switches paid) and a learned policy (a small cost-sensitive decision tree over the
features the GPU has when an iteration starts), judged leave-one-graph-out.

The per-iteration costs come from each candidate's constant run through the policy runner
(``simulator.policy``, a one-candidate schedule: the same launches, time for time, as
``simulate``), cached per (graph, algorithm, device, source, candidates) under
``~/.cache/warpsweep/adaptive``.

The oracle. BFS's levels are the same under every configuration, so its iterations align
exactly: a dynamic programme over (iteration, candidate) adds each iteration's cost under the
candidate and, where the driven form changes, the conversion of the frontier the previous
iteration built (compaction of a sweep's flags into a worklist, scatter of a worklist into
flags, costed on that frontier). SSSP's (and CC's) asynchronous launches follow a
trajectory that depends on the configuration: the oracle aligns the candidates' own runs by
iteration index (iteration i of one run stands for iteration i of another) and a path ends
where the candidate it is on ends its own run. That is an approximation, so the oracle's
schedule is also run through the simulator as it is (``realised``: its own trajectory, the
worklist a switch really builds) and both are reported.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
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

# The candidates a policy chooses among: the configurations that win somewhere per
# iteration on the selector's graphs (thread with donation on skewed graphs' big levels,
# virtual warps of 8 or 32 lanes, worklists of 32 lanes for the small frontiers, deferred
# outliers for hub-heavy worklists) and the thread baseline.
CANDIDATES = (
    "mapping=thread",
    "mapping=thread,donate_threshold=0",
    "mapping=vwarp,w=8",
    "mapping=vwarp,w=32",
    "mapping=wer+",
    "mapping=vwarp,w=32,driven=data",
    "mapping=vwarp,w=16,driven=data",
    "mapping=vwarp,w=8,driven=data,defer_threshold=64",
)
CACHE_VERSION = 1
GAIN_FLOOR = 0.02  # below it, adaptation is not worth a policy: keep the constant
DEPTHS = (0, 1, 2, 3)
MIN_LEAF = (0.05, 0.15)  # a leaf's share of the training graphs' (normalised) time


def cache_dir() -> Path:
    """Where per-iteration tables are kept (``WARPSWEEP_CACHE`` or ~/.cache/warpsweep)."""
    base = os.environ.get("WARPSWEEP_CACHE") or Path.home() / ".cache" / "warpsweep"
    return Path(base) / "adaptive"


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
    source: int
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
        return cls(doc["graph"], doc["algorithm"], doc["device"], int(doc["source"]),
                   tuple(doc["candidates"]), tuple(doc["forms"]),
                   [np.asarray(t, dtype=float) for t in doc["times"]],
                   [np.asarray(t, dtype=float) for t in doc["convert"]],
                   [np.asarray(f, dtype=float).reshape(-1, len(FEATURES))
                    for f in doc["features"]])


def _key(spec: str, algorithm: str, device: str, source: int | None,
         candidates: Sequence[str]) -> str:
    text = json.dumps([CACHE_VERSION, spec, algorithm, device, source, list(candidates)])
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def iteration_table(spec: str, algorithm: str, device: str = "h100",
                    candidates: Sequence[str] = CANDIDATES, source: int | None = None,
                    cache: bool = True) -> IterationTable:
    """The per-iteration table of one graph, from the cache when there."""
    path = cache_dir() / f"{_key(spec, algorithm, device, source, candidates)}.json"
    if cache and path.exists():
        try:
            return IterationTable.from_json(json.loads(path.read_text()))
        except (ValueError, KeyError, TypeError):
            pass
    graph = load_graph(spec)
    fr = functional_run(graph, algorithm, source)
    dev = get_device(device)
    strategies = candidate_strategies(candidates)
    times, convert, features = [], [], []
    for s in strategies:
        its = policy_iteration_costs(fr, Policy((s,), schedule=(0,)), dev,
                                     count_features=False, record=True)
        times.append(np.array([dev.us(it.cost.cycles) for it in its]))
        convert.append(np.array([dev.us(it.convert_out_cycles) for it in its]))
        features.append(np.array([[it.features[f] for f in FEATURES] for it in its]))
    table = IterationTable(graph.name or spec, algorithm, dev.name, int(fr.source),
                           tuple(candidates), tuple(s.driven for s in strategies), times,
                           convert, features)
    if cache:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(table.to_json()))
        tmp.replace(path)
    return table


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
    lengths = [t.size for t in table.times]
    horizon = max(lengths)
    forms = np.array([f == "data" for f in table.forms])
    value = np.full(k, np.inf)
    back = np.zeros((horizon, k), dtype=np.int64)
    best_end, end_at = np.inf, (-1, -1)
    for i in range(horizon):
        new = np.full(k, np.inf)
        for c in range(k):
            if i >= lengths[c]:
                continue
            if i == 0:
                new[c], back[i, c] = table.times[c][0], c
            else:
                via = value.copy()
                for p in range(k):
                    if forms[p] != forms[c] and np.isfinite(via[p]):
                        via[p] += table.convert[p][i - 1]
                p = int(np.argmin(via))
                new[c], back[i, c] = via[p] + table.times[c][i], p
            if i == lengths[c] - 1 and new[c] < best_end:
                best_end, end_at = new[c], (i, c)
        value = new
    i, c = end_at
    schedule = [c]
    while i > 0:
        c = int(back[i, c])
        schedule.append(c)
        i -= 1
    schedule.reverse()
    switches = sum(1 for a, b in zip(schedule, schedule[1:], strict=False) if a != b)
    return Oracle(float(best_end), schedule, switches)


def run_policy(spec: str, algorithm: str, policy: Policy, device: str = "h100",
               source: int | None = None, count_features: bool = True,
               ) -> tuple[float, list[Any]]:
    """A policy's simulated time on a graph (us) and its iterations."""
    graph = load_graph(spec)
    fr = functional_run(graph, algorithm, source)
    dev = get_device(device)
    its = policy_iteration_costs(fr, policy, dev, count_features=count_features)
    return dev.us(total_cost([it.cost for it in its]).cycles), its


# -- the learned policy ------------------------------------------------------------------------
@dataclass
class Samples:
    """Training rows: features, per-candidate costs (normalised by the graph's best constant
    time) and the graph each row comes from."""

    x: np.ndarray
    cost: np.ndarray
    group: np.ndarray
    names: list[str] = field(default_factory=list)


def samples(tables: Sequence[IterationTable]) -> Samples:
    """One row per iteration where every candidate still runs, along the best constant
    candidate's trajectory (BFS: every candidate's, they are the same)."""
    xs, cs, gs = [], [], []
    for g, t in enumerate(tables):
        steps = min(x.size for x in t.times)
        best = t.constant_us.min()
        xs.append(t.features[t.best][:steps])
        cs.append(np.stack([x[:steps] for x in t.times], axis=1) / best)
        gs.append(np.full(steps, g))
    return Samples(np.concatenate(xs), np.concatenate(cs), np.concatenate(gs),
                   [t.graph for t in tables])


def fit_tree(x: np.ndarray, cost: np.ndarray, depth: int, min_leaf: float) -> dict[str, Any]:
    """A cost-sensitive tree: each leaf chooses the candidate of least summed cost over its
    rows; each split (on one feature, at a midpoint between two of its values) is the one
    that lowers that sum most, with at least ``min_leaf`` of the total cost on either side."""
    floor = min_leaf * float(cost.min(axis=1).sum())

    def grow(rows: np.ndarray, d: int) -> dict[str, Any]:
        sums = cost[rows].sum(axis=0)
        leaf = {"choose": int(np.argmin(sums))}
        if d == 0 or rows.size < 2:
            return leaf
        best_loss, best = float(sums.min()) * (1 - 1e-9), None
        for f in range(x.shape[1]):
            order = rows[np.argsort(x[rows, f], kind="stable")]
            values = x[order, f]
            prefix = np.cumsum(cost[order], axis=0)
            cut = np.flatnonzero(values[1:] > values[:-1])  # left = order[:cut + 1]
            if cut.size == 0:
                continue
            left, right = prefix[cut], prefix[-1] - prefix[cut]
            weight_left = np.cumsum(cost[order].min(axis=1))[cut]
            weight_right = cost[order].min(axis=1).sum() - weight_left
            loss = left.min(axis=1) + right.min(axis=1)
            loss[(weight_left < floor) | (weight_right < floor)] = np.inf
            j = int(np.argmin(loss))
            if loss[j] < best_loss:
                best_loss = float(loss[j])
                best = (f, 0.5 * (values[cut[j]] + values[cut[j] + 1]))
        if best is None:
            return leaf
        f, threshold = best
        mask = x[rows, f] <= threshold
        return {"feature": FEATURES[f], "threshold": float(threshold),
                "le": grow(rows[mask], d - 1), "gt": grow(rows[~mask], d - 1)}

    return grow(np.arange(x.shape[0]), depth)


def tree_choices(tree: dict[str, Any], x: np.ndarray) -> np.ndarray:
    """The candidate the tree chooses for each row."""
    index = {f: i for i, f in enumerate(FEATURES)}
    out = np.empty(x.shape[0], dtype=np.int64)
    for r in range(x.shape[0]):
        node = tree
        while "choose" not in node:
            node = node["le"] if x[r, index[node["feature"]]] <= node["threshold"] else node["gt"]
        out[r] = node["choose"]
    return out


def table_ratios(tree: dict[str, Any], s: Samples) -> np.ndarray:
    """Per graph of ``s``: the tree's summed cost over its rows (switches not counted), over
    the graph's best constant candidate's."""
    chosen = s.cost[np.arange(s.x.shape[0]), tree_choices(tree, s.x)]
    out = []
    for g in np.unique(s.group):
        rows = s.group == g
        out.append(chosen[rows].sum() / s.cost[rows].sum(axis=0).min())
    return np.array(out)


@dataclass
class Fitted:
    """A tree fitted with its depth and leaf floor chosen by leave-one-graph-out
    cross-validation on its own training graphs."""

    tree: dict[str, Any]
    depth: int
    min_leaf: float
    cv_geomean: float


def geomean(values: Sequence[float]) -> float:
    """Geometric mean (1.0 of nothing)."""
    values = [float(v) for v in values]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else 1.0


def fit_policy_tree(s: Samples) -> Fitted:
    """Choose depth and leaf floor by leave-one-graph-out over ``s``'s graphs (table costs),
    then fit on all of them."""
    groups = np.unique(s.group)
    best = None
    for depth in DEPTHS:
        for min_leaf in MIN_LEAF if depth else MIN_LEAF[:1]:
            ratios = []
            for g in groups:
                train, test = s.group != g, s.group == g
                tree = fit_tree(s.x[train], s.cost[train], depth, min_leaf)
                ratios.extend(table_ratios(tree, Samples(s.x[test], s.cost[test],
                                                         s.group[test])))
            score = geomean(ratios)
            if best is None or score < best[0] - 1e-9:
                best = (score, depth, min_leaf)
    score, depth, min_leaf = best
    return Fitted(fit_tree(s.x, s.cost, depth, min_leaf), depth, min_leaf, score)


def make_policy(fitted: Fitted, candidates: Sequence[str], name: str,
                meta: dict[str, Any] | None = None) -> Policy:
    """The policy file of a fitted tree."""
    return Policy(candidate_strategies(candidates), tree=fitted.tree, name=name,
                  meta={"depth": fitted.depth, "min_leaf": fitted.min_leaf,
                        "cv_geomean": fitted.cv_geomean, **(meta or {})})


@dataclass
class GraphOutcome:
    """One held-out graph: best constant, oracle (dynamic programme and as run), the policy
    trained without it, as run."""

    graph: str
    algorithm: str
    best_constant: str
    constant_us: float
    oracle_us: float
    oracle_realised_us: float
    oracle_switches: int
    policy_us: float
    policy_switches: int
    policy_choices: str
    depth: int
    trained_on: list[str]

    @property
    def oracle_gain(self) -> float:
        """Best constant over the oracle (dynamic programme)."""
        return self.constant_us / self.oracle_us

    @property
    def ratio(self) -> float:
        """Policy over best constant (< 1: the policy wins)."""
        return self.policy_us / self.constant_us

    @property
    def captured(self) -> float:
        """Share of the oracle's saving the policy captures (1: all of it)."""
        saving = self.constant_us - self.oracle_us
        if saving <= 1e-6 * self.constant_us:  # nothing to capture
            return float("nan")
        return (self.constant_us - self.policy_us) / saving

    def to_json(self) -> dict[str, Any]:
        """The outcome with its derived ratios."""
        out = dict(self.__dict__)
        out.update(oracle_gain=self.oracle_gain, ratio=self.ratio, captured=self.captured)
        return out


def fold_fit(s: Samples, held_out: int) -> Fitted:
    """The tree for graph ``held_out``: its rows dropped before anything is chosen or fitted."""
    keep = s.group != held_out
    return fit_policy_tree(Samples(s.x[keep], s.cost[keep], s.group[keep]))


def leave_one_graph_out(specs: Sequence[str], tables: Sequence[IterationTable],
                        algorithm: str, device: str = "h100",
                        candidates: Sequence[str] = CANDIDATES) -> list[GraphOutcome]:
    """For each graph: the policy trained (model choice included) on the others only, run on
    it through the simulator, beside its best constant candidate and its oracle."""
    out = []
    all_samples = samples(tables)
    for g, (spec, table) in enumerate(zip(specs, tables, strict=True)):
        fitted = fold_fit(all_samples, g)
        policy = make_policy(fitted, candidates, f"logo-{table.graph}")
        policy_us, its = run_policy(spec, algorithm, policy, device, table.source)
        orc = oracle(table)
        realised_us, _ = run_policy(spec, algorithm, Policy(
            candidate_strategies(candidates), schedule=tuple(orc.schedule)), device,
            table.source, count_features=False)
        choices = [it.choice for it in its]
        out.append(GraphOutcome(
            table.graph, algorithm, candidates[table.best], float(table.constant_us.min()),
            orc.time_us, realised_us, orc.switches, policy_us,
            sum(1 for a, b in zip(choices, choices[1:], strict=False) if a != b),
            _runs(choices), fitted.depth,
            [t.graph for i, t in enumerate(tables) if i != g]))
    return out


def _runs(choices: Sequence[int]) -> str:
    """``3x2 1x5``: runs of the same candidate (index x iterations)."""
    out: list[str] = []
    for c in choices:
        if out and out[-1][0] == c:
            out[-1][1] += 1
        else:
            out.append([c, 1])
    return " ".join(f"{c}x{k}" for c, k in out)


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
    device) the policy runs (BFS, SSSP, CC), and why any was left out."""
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
        rows.append(AdaptationRow(table.graph, algorithm, device,
                                  table.candidates[table.best],
                                  float(table.constant_us.min()), orc.time_us, orc.switches))
    return rows, skipped
