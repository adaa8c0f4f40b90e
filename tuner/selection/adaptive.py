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

The learned policy (``fit_fold``), from a fold's training graphs only: the candidates (their
best constants and oracle winners), the per-iteration tree (depth and leaf floor by inner
leave-one-graph-out with switch costs counted, then pruned where a switch eats a split's
gain), and the selector, whose "adapt" option costs the tree's inner figure plus
``GATE_GAIN``: where adapting is not predicted to win by that much, a leaf keeps a constant.
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
from simulator.policy import GRAPH_FEATURES
from simulator.policy import Policy
from simulator.policy import policy_iteration_costs
from simulator.strategy import Strategy

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
DEPTHS = (0, 1, 2, 3)
# A leaf's floor: (share of the training graphs' normalised time, graphs with rows in it).
MIN_LEAF = ((0.05, 1), (0.15, 1), (0.01, 3))
SELECTOR_DEPTHS = (0, 1, 2)  # the per-graph constant selector's depth
SELECTOR_MIN_LEAF = 0.1     # its leaf floor: a share of the training graphs
# The per-iteration tree is chosen for a selector leaf only where its leave-one-graph-out
# figures beat the leaf's best constant by this much (summed over the leaf's graphs).
GATE_GAIN = 0.01
# The oracle's schedule prefixes run as they are where its own run strays (``oracle_as_run``).
ORACLE_SEGMENTS = 6


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


def _key(spec: str, algorithm: str, device: str, source: int | None, candidate: str) -> str:
    text = json.dumps([CACHE_VERSION, spec, algorithm, device, source, candidate])
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def _run_candidate(fr: Any, strategy: Strategy, dev: Any) -> dict[str, Any]:
    """One candidate's constant run, per iteration: time, converting out, features."""
    its = policy_iteration_costs(fr, Policy((strategy,), schedule=(0,)), dev,
                                 count_features=False, record=True)
    return {"times": [dev.us(it.cost.cycles) for it in its],
            "convert": [dev.us(it.convert_out_cycles) for it in its],
            "features": [[it.features[f] for f in FEATURES] for it in its],
            "source": int(fr.source)}


def iteration_table(spec: str, algorithm: str, device: str = "h100",
                    candidates: Sequence[str] = CANDIDATES, source: int | None = None,
                    cache: bool = True) -> IterationTable:
    """The per-iteration table of one graph; each candidate's run is cached on its own, so a
    wider pool only runs the candidates it adds."""
    entries: dict[str, dict[str, Any]] = {}
    paths = {c: cache_dir() / f"{_key(spec, algorithm, device, source, c)}.json"
             for c in candidates}
    for c, path in paths.items():
        if cache and path.exists():
            try:
                entries[c] = json.loads(path.read_text())
            except ValueError:
                pass
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
        name or spec, algorithm, get_device(device).name, int(first["source"]),
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


# -- the learned policy ------------------------------------------------------------------------
FEATURE_INDEX = {f: i for i, f in enumerate(FEATURES)}
GRAPH_COLUMNS = np.array([FEATURE_INDEX[f] for f in GRAPH_FEATURES])


@dataclass
class Samples:
    """Training rows: features, per-candidate costs and costs of converting the frontier
    out (both normalised by the graph's best constant time over the pool) and the graph each
    row comes from, in iteration order; per graph, each candidate's constant time (also
    normalised) and the candidates its oracle schedule uses."""

    x: np.ndarray
    cost: np.ndarray
    group: np.ndarray
    names: list[str] = field(default_factory=list)
    convert: np.ndarray | None = None
    data: np.ndarray | None = None        # per candidate: data-driven (a worklist)?
    constant: np.ndarray | None = None    # graphs x candidates
    winners: list[set[int]] = field(default_factory=list)

    def rows(self, graphs: np.ndarray) -> np.ndarray:
        """The row mask of ``graphs``."""
        return np.isin(self.group, graphs)


def samples(tables: Sequence[IterationTable]) -> Samples:
    """One row per iteration of the best constant candidate's run (BFS: every candidate's,
    they are the same). SSSP's candidates run for different numbers of iterations: aligned by
    index (as the oracle is), a candidate whose run is shorter is costed as the best constant
    there (neither better nor worse), a longer one's extra iterations are dropped."""
    xs, cs, vs, gs, consts, winners = [], [], [], [], [], []
    for g, t in enumerate(tables):
        best = t.best
        steps = t.times[best].size
        norm = float(t.constant_us.min())
        cost = np.empty((steps, len(t.times)))
        conv = np.empty_like(cost)
        for c, (times, convert) in enumerate(zip(t.times, t.convert, strict=True)):
            k = min(steps, times.size)
            cost[:, c], conv[:, c] = t.times[best], t.convert[best]
            cost[:k, c], conv[:k, c] = times[:k], convert[:k]
        xs.append(t.features[best])
        cs.append(cost / norm)
        vs.append(conv / norm)
        gs.append(np.full(steps, g))
        consts.append(t.constant_us / norm)
        winners.append(set(oracle(t).schedule) | {best})
    return Samples(np.concatenate(xs), np.concatenate(cs), np.concatenate(gs),
                   [t.graph for t in tables], np.concatenate(vs),
                   np.array([f == "data" for f in tables[0].forms]), np.array(consts),
                   winners)


def fold_candidates(s: Samples, graphs: Sequence[int]) -> np.ndarray:
    """A fold's candidates (pool indices): the union of its training graphs' best constants
    and of the candidates their oracle schedules use."""
    out: set[int] = set()
    for g in graphs:
        out |= s.winners[int(g)]
    return np.array(sorted(out), dtype=np.int64)


def fit_tree(x: np.ndarray, cost: np.ndarray, depth: int, min_leaf: float,
             columns: np.ndarray | None = None, features: np.ndarray | None = None,
             groups: np.ndarray | None = None, min_graphs: int = 1) -> dict[str, Any]:
    """A cost-sensitive tree: each leaf chooses the candidate of least summed cost over its
    rows; each split (on one feature, at a midpoint between two of its values) is the one
    that lowers that sum most, with at least ``min_leaf`` of the total cost on either side.
    ``columns``: the candidates (columns of ``cost``) it may choose, leaves naming the column
    index; ``features``: the feature indices it may split on (all by default); ``groups``
    (the graph of each row) with ``min_graphs``: rows of at least that many graphs on either
    side of a split."""
    if columns is not None:
        cost = cost[:, columns]
    names = np.arange(cost.shape[1]) if columns is None else np.asarray(columns)
    usable = range(x.shape[1]) if features is None else [int(f) for f in features]
    floor = min_leaf * float(cost.min(axis=1).sum())

    def grow(rows: np.ndarray, d: int) -> dict[str, Any]:
        sums = cost[rows].sum(axis=0)
        leaf = {"choose": int(names[int(np.argmin(sums))])}
        if d == 0 or rows.size < 2:
            return leaf
        best_loss, best = float(sums.min()) * (1 - 1e-9), None
        for f in usable:
            order = rows[np.argsort(x[rows, f], kind="stable")]
            values = x[order, f]
            prefix = np.cumsum(cost[order], axis=0)
            cut = np.flatnonzero(values[1:] > values[:-1])  # left = order[:cut + 1]
            if cut.size == 0:
                continue
            left, right = prefix[cut], prefix[-1] - prefix[cut]
            weight = np.cumsum(cost[order].min(axis=1))
            weight_left = weight[cut]
            weight_right = weight[-1] - weight_left
            loss = left.min(axis=1) + right.min(axis=1)
            loss[(weight_left < floor) | (weight_right < floor)] = np.inf
            if groups is not None and min_graphs > 1:
                g = groups[order]
                first = np.zeros(g.size)
                first[np.unique(g, return_index=True)[1]] = 1
                last = np.zeros(g.size)
                last[g.size - 1 - np.unique(g[::-1], return_index=True)[1]] = 1
                graphs_left = np.cumsum(first)[cut]
                graphs_right = np.cumsum(last[::-1])[::-1][cut + 1]
                loss[(graphs_left < min_graphs) | (graphs_right < min_graphs)] = np.inf
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
    out = np.empty(x.shape[0], dtype=np.int64)
    rows = np.arange(x.shape[0])

    def walk(node: dict[str, Any], rows: np.ndarray) -> None:
        if "choose" in node:
            out[rows] = node["choose"]
            return
        le = x[rows, FEATURE_INDEX[node["feature"]]] <= node["threshold"]
        walk(node["le"], rows[le])
        walk(node["gt"], rows[~le])

    walk(tree, rows)
    return out


def graph_ratio(tree: dict[str, Any], s: Samples, g: int, switches: bool = True) -> float:
    """Graph ``g``'s cost under the tree over its best constant (over the pool), from the
    tables: each row's cost under the candidate chosen and (``switches``) the conversion of
    the previous row's frontier where the driven form changes. A tree that keeps one
    candidate costs that candidate's constant run exactly."""
    rows = np.flatnonzero(s.group == g)
    chosen = tree_choices(tree, s.x[rows])
    if (chosen == chosen[0]).all() and s.constant is not None:
        return float(s.constant[g, chosen[0]])
    total = float(s.cost[rows, chosen].sum())
    if switches and s.convert is not None and rows.size > 1:
        turn = s.data[chosen[1:]] != s.data[chosen[:-1]]
        total += float(s.convert[rows[:-1][turn], chosen[:-1][turn]].sum())
    return total


def table_ratios(tree: dict[str, Any], s: Samples, switches: bool = True) -> np.ndarray:
    """``graph_ratio`` of every graph of ``s``."""
    return np.array([graph_ratio(tree, s, int(g), switches) for g in np.unique(s.group)])


def prune(tree: dict[str, Any], s: Samples, graphs: Sequence[int]) -> dict[str, Any]:
    """Bottom-up, replace a split by the better of its leaf choices where that does not
    raise the training graphs' summed ratio with switches counted (the fit itself sees each
    iteration alone; this is where switch costs enter training)."""

    def score(t: dict[str, Any]) -> float:
        return float(sum(graph_ratio(t, s, int(g)) for g in graphs))

    def walk(node: dict[str, Any]) -> None:
        if "choose" in node:
            return
        walk(node["le"])
        walk(node["gt"])
        if "choose" in node["le"] and "choose" in node["gt"]:
            before = score(tree)
            for leaf in (node["le"], node["gt"]):
                saved = dict(node)
                node.clear()
                node.update(leaf)
                if score(tree) <= before + 1e-12:
                    return
                node.clear()
                node.update(saved)

    tree = json.loads(json.dumps(tree))
    walk(tree)
    return tree


@dataclass
class Fitted:
    """A tree fitted with its depth and leaf floor chosen by leave-one-graph-out
    cross-validation on its own training graphs, and those graphs' inner figures."""

    tree: dict[str, Any]
    depth: int
    min_leaf: float
    cv_geomean: float
    inner: dict[int, float] = field(default_factory=dict)  # training graph -> its CV ratio
    min_graphs: int = 1


def geomean(values: Sequence[float]) -> float:
    """Geometric mean (1.0 of nothing)."""
    values = [float(v) for v in values]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else 1.0


def _fit_adaptive(s: Samples, train: np.ndarray, depth: int, min_leaf: float,
                  min_graphs: int = 1) -> dict[str, Any]:
    rows = s.rows(train)
    tree = fit_tree(s.x[rows], s.cost[rows], depth, min_leaf, fold_candidates(s, train),
                    groups=s.group[rows], min_graphs=min_graphs)
    return prune(tree, s, train) if depth else tree


def _cross_validate(graphs: np.ndarray, fit: Any, evaluate: Any, configs: Sequence[tuple]
                    ) -> Fitted:
    """Each config's leave-one-graph-out figures over ``graphs`` (``fit(train, *config)``,
    ``evaluate(tree, g)``); the config of least geomean, fitted on all of ``graphs``."""
    best = None
    for config in configs:
        inner = {}
        for g in graphs:
            inner[int(g)] = evaluate(fit(graphs[graphs != g], *config), int(g))
        score = geomean(list(inner.values()))
        if best is None or score < best[0] - 1e-9:
            best = (score, config, inner)
    score, config, inner = best
    return Fitted(fit(graphs, *config), config[0],
                  config[1] if len(config) > 1 else SELECTOR_MIN_LEAF, score, inner,
                  config[2] if len(config) > 2 else 1)


def fit_policy_tree(s: Samples, graphs: Sequence[int] | None = None) -> Fitted:
    """The per-iteration tree: depth and leaf floor chosen by leave-one-graph-out over
    ``graphs`` (all of ``s``'s by default; switches counted), then fitted on all of them
    among their candidates (``fold_candidates``) and pruned where switches eat its gain."""
    graphs = np.unique(s.group) if graphs is None else np.asarray(graphs)
    configs = [(d, *m) for d in DEPTHS for m in (MIN_LEAF if d else MIN_LEAF[:1])]
    return _cross_validate(graphs, lambda train, *c: _fit_adaptive(s, train, *c),
                           lambda tree, g: graph_ratio(tree, s, g), configs)


def selector_costs(s: Samples, adaptive: Fitted | None) -> np.ndarray:
    """Per graph of ``s``: each candidate's constant time over the graph's best, and (column
    ``ADAPT``, the pool's size) the per-iteration tree's leave-one-graph-out figure on it
    raised by ``GATE_GAIN`` (adapting must win by that much to be chosen); 1e6 where
    there is no such figure."""
    extra = np.full((s.constant.shape[0], 1), 1e6)  # finite: the fit's sums stay numbers
    if adaptive is not None and "choose" not in adaptive.tree:
        for g, ratio in adaptive.inner.items():
            extra[g, 0] = ratio * (1 + GATE_GAIN)
    return np.hstack([s.constant, extra])


def fit_selector(s: Samples, graphs: Sequence[int] | None = None,
                 adaptive: Fitted | None = None) -> Fitted:
    """The per-graph selector: a cost-sensitive tree over graph-level features
    (``GRAPH_FEATURES``) on one row per graph choosing a constant candidate or (leaf
    ``ADAPT``: the pool's size) the per-iteration tree ``adaptive``, which must beat the
    constants by ``GATE_GAIN`` on the leaf's graphs (its leave-one-graph-out figures);
    depth chosen by leave-one-graph-out over ``graphs``."""
    graphs = np.unique(s.group) if graphs is None else np.asarray(graphs)
    cost = selector_costs(s, adaptive)
    adapt = cost.shape[1] - 1
    first = np.array([np.flatnonzero(s.group == g)[0] for g in range(cost.shape[0])])
    x = s.x[first]

    def fit(train: np.ndarray, depth: int) -> dict[str, Any]:
        columns = np.append(fold_candidates(s, train), adapt)
        return fit_tree(x[train], cost[train], depth, SELECTOR_MIN_LEAF, columns,
                        GRAPH_COLUMNS)

    def evaluate(tree: dict[str, Any], g: int) -> float:
        c = int(tree_choices(tree, x[[g]])[0])
        return float(cost[g, c] / (1 + GATE_GAIN) if c == adapt else cost[g, c])

    return _cross_validate(graphs, fit, evaluate, [(d,) for d in SELECTOR_DEPTHS])


@dataclass
class FoldModel:
    """A fold's policy: the selector's tree, the per-iteration tree grafted on the leaves
    that choose to adapt."""

    tree: dict[str, Any]
    selector: Fitted
    adaptive: Fitted
    adapt_leaves: int
    leaves: int
    candidates: np.ndarray

    @property
    def kind(self) -> str:
        """``constant`` (one candidate per run), ``adaptive`` or ``mixed``."""
        if not self.adapt_leaves:
            return "constant"
        return "adaptive" if self.adapt_leaves == self.leaves else "mixed"


def _leaves(node: dict[str, Any]) -> list[dict[str, Any]]:
    if "choose" in node:
        return [node]
    return _leaves(node["le"]) + _leaves(node["gt"])


def graft(selector: dict[str, Any], adaptive: dict[str, Any], adapt: int
          ) -> tuple[dict[str, Any], int, int]:
    """The selector's tree with each leaf choosing ``adapt`` replaced by the per-iteration
    tree; the tree, how many leaves adapt, how many leaves."""
    tree = json.loads(json.dumps(selector))
    leaves = _leaves(tree)
    n = 0
    for leaf in leaves:
        if leaf["choose"] == adapt:
            leaf.clear()
            leaf.update(json.loads(json.dumps(adaptive)))
            n += 1
    return tree, n, len(leaves)


def fit_fold(s: Samples, graphs: Sequence[int]) -> FoldModel:
    """A policy from ``graphs`` alone: the per-iteration tree (its candidates, depth and
    leaf floor by inner leave-one-graph-out), then the selector that chooses per graph
    between a constant candidate and that tree, from the tree's inner figures."""
    graphs = np.asarray(graphs)
    adaptive = fit_policy_tree(s, graphs)
    selector = fit_selector(s, graphs, adaptive)
    tree, adapt, leaves = graft(selector.tree, adaptive.tree, s.constant.shape[1])
    return FoldModel(tree, selector, adaptive, adapt, leaves, fold_candidates(s, graphs))


def fold_fit(s: Samples, held_out: int) -> FoldModel:
    """The policy for graph ``held_out``: its rows and constants never looked at."""
    graphs = np.unique(s.group)
    return fit_fold(s, graphs[graphs != held_out])


def make_policy(model: FoldModel, candidates: Sequence[str], name: str,
                meta: dict[str, Any] | None = None) -> Policy:
    """The policy file of a fold's model: only the candidates its tree chooses, renumbered."""
    tree = json.loads(json.dumps(model.tree))
    used = sorted({leaf["choose"] for leaf in _leaves(tree)})
    index = {c: i for i, c in enumerate(used)}
    for leaf in _leaves(tree):
        leaf["choose"] = index[leaf["choose"]]
    return Policy(candidate_strategies([candidates[c] for c in used]), tree=tree, name=name,
                  meta={"kind": model.kind, "selector_depth": model.selector.depth,
                        "adaptive_depth": model.adaptive.depth,
                        "adaptive_min_leaf": model.adaptive.min_leaf,
                        "adaptive_min_graphs": model.adaptive.min_graphs,
                        "cv_selector_geomean": model.selector.cv_geomean,
                        "cv_adaptive_geomean": model.adaptive.cv_geomean, **(meta or {})})


@dataclass
class GraphOutcome:
    """One held-out graph: best constant of the pool, oracle (dynamic programme and its
    schedule as run), the policy trained without it, as run."""

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
    kind: str          # on this graph: "constant" (one candidate the whole run) or "adaptive"
    candidates: int
    trained_on: list[str]

    @property
    def oracle_honest_us(self) -> float:
        """The oracle as run, or the best constant where its schedule runs slower (an oracle
        may always keep the constant): the primary figure."""
        return min(self.oracle_realised_us, self.constant_us)

    @property
    def oracle_gain(self) -> float:
        """Best constant over the oracle as run (>= 1)."""
        return self.constant_us / self.oracle_honest_us

    @property
    def ratio(self) -> float:
        """Policy over best constant (< 1: the policy wins)."""
        return self.policy_us / self.constant_us

    @property
    def captured(self) -> float:
        """Share of the oracle's (as run) saving the policy captures (1: all of it)."""
        saving = self.constant_us - self.oracle_honest_us
        if saving <= 1e-6 * self.constant_us:  # nothing to capture
            return float("nan")
        return (self.constant_us - self.policy_us) / saving

    def to_json(self) -> dict[str, Any]:
        """The outcome with its derived ratios."""
        out = dict(self.__dict__)
        out.update(oracle_honest_us=self.oracle_honest_us, oracle_gain=self.oracle_gain,
                   ratio=self.ratio, captured=self.captured)
        return out


def leave_one_graph_out(specs: Sequence[str], tables: Sequence[IterationTable],
                        algorithm: str, device: str = "h100",
                        candidates: Sequence[str] = CANDIDATES,
                        train_only: Sequence[IterationTable] = ()) -> list[GraphOutcome]:
    """For each graph of ``tables``: the policy trained (candidates, model choice and gate
    included) on the others and on ``train_only`` (graphs that only ever train), run on it
    through the simulator, beside its best constant of the whole pool and its oracle over the
    whole pool."""
    out = []
    s = samples([*tables, *train_only])
    for g, (spec, table) in enumerate(zip(specs, tables, strict=True)):
        model = fold_fit(s, g)
        policy = make_policy(model, candidates, f"logo-{table.graph}")
        policy_us, its = run_policy(spec, algorithm, policy, device, table.source)
        orc = oracle(table)
        realised_us = oracle_as_run(spec, table, orc, device)
        graph = dict(zip(FEATURES, table.features[table.best][0], strict=True))
        choices = [policy.candidates[it.choice] for it in its]
        names = {c: i for i, c in enumerate(candidate_strategies(candidates))}
        pool = [names[c] for c in choices]
        out.append(GraphOutcome(
            table.graph, algorithm, candidates[table.best], float(table.constant_us.min()),
            orc.time_us, realised_us, orc.switches, policy_us,
            sum(1 for a, b in zip(pool, pool[1:], strict=False) if a != b),
            _runs(pool), "constant" if "choose" in policy.residual(graph) else "adaptive",
            int(model.candidates.size),
            [t.graph for i, t in enumerate([*tables, *train_only]) if i != g]))
    return out


def _runs(choices: Sequence[int]) -> str:
    """``3x2 1x5``: runs of the same candidate (pool index x iterations)."""
    out: list[list[int]] = []
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
