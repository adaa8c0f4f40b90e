"""A learned per-iteration policy, judged leave-one-graph-out against the oracle and the best
constant of ``tuner.selection.adaptive`` (whose iteration tables it learns from).

The learned policy (``fit_fold``), from a fold's training graphs only: the candidates (their
best constants and oracle winners), the per-iteration tree (depth and leaf floor by inner
leave-one-graph-out with switch costs counted, then pruned where a switch eats a split's
gain), and the selector, whose "adapt" option costs the tree's inner figure plus
``GATE_GAIN``: where adapting is not predicted to win by that much, a leaf keeps a constant.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from typing import Any

import numpy as np

from simulator.device import get_device
from simulator.errors import ConfigError
from simulator.policy import FEATURES
from simulator.policy import GRAPH_FEATURES
from simulator.policy import Policy
from tuner.env import git_commit
from tuner.env import warpsweep_version
from tuner.selection.adaptive import CANDIDATES
from tuner.selection.adaptive import IterationTable
from tuner.selection.adaptive import candidate_strategies
from tuner.selection.adaptive import oracle
from tuner.selection.adaptive import oracle_as_run
from tuner.selection.adaptive import run_policy

DEPTHS = (0, 1, 2, 3)
# A leaf's floor: (share of the training graphs' normalised time, graphs with rows in it).
MIN_LEAF = ((0.05, 1), (0.15, 1), (0.01, 3))
SELECTOR_DEPTHS = (0, 1, 2)  # the per-graph constant selector's depth
SELECTOR_MIN_LEAF = 0.1     # its leaf floor: a share of the training graphs
# The per-iteration tree is chosen for a selector leaf only where its leave-one-graph-out
# figures beat the leaf's best constant by this much (summed over the leaf's graphs).
GATE_GAIN = 0.01


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


def check_alike(tables: Sequence[IterationTable], algorithm: str | None = None,
                device: str | None = None, candidates: Sequence[str] | None = None) -> None:
    """Refuse tables of different algorithms, devices or candidate pools, or of others than
    those given: a BFS policy had been judged against an SSSP table's constant (a ratio of
    0.41), and candidate c of one pool read as c of another (probe ADP). Tables keep the
    device's model name; ``device`` may be its preset or file name."""
    if not tables:
        return
    first = tables[0]
    for t in tables:
        for what, have, want in (("algorithm", t.algorithm, first.algorithm),
                                 ("device", t.device, first.device),
                                 ("candidates", t.candidates, first.candidates)):
            if have != want:
                raise ConfigError(f"per-iteration tables of different {what}: {t.graph}'s "
                                  f"{have!r}, {first.graph}'s {want!r}: a policy learns from "
                                  "and is judged on one algorithm, device and candidate pool")
    if algorithm is not None and first.algorithm != algorithm:
        raise ConfigError(f"the tables are {first.algorithm}'s, not {algorithm}'s")
    if device is not None and get_device(device).name != first.device:
        raise ConfigError(f"the tables are of device {first.device}, not {device}")
    if candidates is not None and tuple(candidates) != tuple(first.candidates):
        raise ConfigError("the tables' candidates are not the pool given: candidate i of one "
                          "would be read as candidate i of the other")


def samples(tables: Sequence[IterationTable]) -> Samples:
    """One row per iteration of the best constant candidate's run (BFS: every candidate's,
    they are the same). SSSP's candidates run for different numbers of iterations: aligned by
    index (as the oracle is), a candidate whose run is shorter is costed as the best constant
    there (neither better nor worse), a longer one's extra iterations are dropped."""
    check_alike(tables)
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
    if cost.shape[0] == 0 or cost.shape[1] == 0:  # (numpy's reduction error had said so)
        raise ConfigError("a policy is fitted on rows of at least one graph and one "
                          "candidate: a leave-one-graph-out fold of it needs graphs besides "
                          "the one held out (train on 3 or more)")
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


def fold_fit(s: Samples, held_out: int, twins: Sequence[int] = ()) -> FoldModel:
    """The policy for graph ``held_out``: its rows and constants never looked at, nor those
    of its ``twins`` (the same graph under another spec, ``twins_of``)."""
    graphs = np.unique(s.group)
    return fit_fold(s, graphs[~np.isin(graphs, [held_out, *twins])])


def twins_of(tables: Sequence[IterationTable], g: int) -> list[int]:
    """The tables other than ``g`` of the same graph under another spec (a weighted and an
    unweighted copy, for BFS): their first iteration's graph-level features are ``g``'s, as
    the selector finds its twins. Trained on, such a copy makes the held-out figure in-sample
    (probe ADP: 1.0002 became exactly the oracle's 0.9885)."""
    at = [FEATURES.index(f) for f in GRAPH_FEATURES]

    def ident(t: IterationTable) -> tuple:
        return tuple(np.round(t.features[t.best][0, at], 12).tolist())

    mine = ident(tables[g])
    return [i for i, t in enumerate(tables) if i != g and ident(t) == mine]


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
                        "cv_adaptive_geomean": model.adaptive.cv_geomean,
                        # the code that made it (fitting draws nothing at random: no seed)
                        "warpsweep_version": warpsweep_version(), "git_commit": git_commit(),
                        **(meta or {})})


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
    check_alike([*tables, *train_only], algorithm, device, candidates)
    out = []
    every = [*tables, *train_only]
    s = samples(every)
    for g, (spec, table) in enumerate(zip(specs, tables, strict=True)):
        twins = twins_of(every, g)
        model = fold_fit(s, g, twins)
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
            [t.graph for i, t in enumerate(every) if i != g and i not in twins]))
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
