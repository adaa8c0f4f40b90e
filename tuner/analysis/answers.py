"""Ready answers over a results directory: the best configuration of each study, one knob's
effect, Pareto fronts.

Functions of a DuckDB connection from ``tuner.results.query.connect`` (the temporary tables
they make are dropped before they return) that give dataclasses. DuckDB does the heavy lifting over
every complete trial row in a few scans, numpy sweeps the Pareto fronts, Python assembles one
result per study. A configuration is identified by its knob values (the non-null ``param_*``
columns), made canonical where a row left an applicable knob at NULL (its default), so that
the same strategy counts as one configuration whichever way its row was written.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from dataclasses import field
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from simulator.errors import ConfigError
from simulator.errors import WarpsweepError
from simulator.strategy import DRIVEN
from simulator.strategy import MAPPINGS
from simulator.strategy import Strategy
from tuner.results.configs import canonical_params
from tuner.results.configs import config_text
from tuner.results.configs import strategy_defaults
from tuner.results.configs import value_text
from tuner.results.measured import MEASURED_COLUMNS
from tuner.results.measured import MeasuredWinner
from tuner.results.measured import winners
from tuner.results.query import graph_ids
from tuner.results.query import graph_name
from tuner.results.schema import PARAM_PREFIX
from tuner.results.schema import reserved_names
from tuner.tuning.study import MAXIMIZED

# Metrics where a larger value is better; every other metric is minimised.
THREAD_LABEL = "thread"
AT_BEST = "at best"
BEST_WITH_VALUE = "best with this value"
# Reading NULL knobs as their defaults in SQL is checked against Strategy on at most this many
# distinct configurations (a deterministic sample beyond).
VALIDATE_AT_MOST = 20_000
_NUMERIC = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "FLOAT", "DOUBLE", "REAL",
            "DECIMAL", "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT")


# -- inputs ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Filters:
    """Which studies to answer for: a graph (spec, id or name), an algorithm, a device."""

    graph: str | None = None
    algo: str | None = None
    device: str | None = None

    def given(self) -> bool:
        """Whether any filter is set."""
        return any(v is not None for v in (self.graph, self.algo, self.device))


@dataclass(frozen=True)
class Objective:
    """A metric and whether larger is better."""

    metric: str
    maximize: bool = False

    @classmethod
    def parse(cls, text: str) -> Objective:
        """``metric``, ``metric:max`` or ``metric:min``; the direction defaults by metric."""
        name, colon, direction = text.strip().partition(":")
        name, direction = name.strip(), direction.strip().lower()
        if not name:
            raise ConfigError(f"objective {text!r}: expected METRIC[:max|:min]")
        if colon and direction not in ("max", "min"):
            raise ConfigError(f"objective {text!r}: direction must be max or min, "
                              f"got {direction!r}")
        maximize = direction == "max" if colon else name in MAXIMIZED
        return cls(name, maximize)

    def __str__(self) -> str:
        return f"{self.metric}:{'max' if self.maximize else 'min'}"

    def gain(self, reference: float | None, value: float | None) -> float | None:
        """How many times better ``value`` is than ``reference`` (> 1: better)."""
        if reference is None or value is None:
            return None
        num, den = (value, reference) if self.maximize else (reference, value)
        return num / den if den > 0 and num >= 0 else None


def parse_objectives(text: str) -> list[Objective]:
    """Comma-separated objectives, e.g. ``time_us,transactions`` or ``meps:max,bytes``."""
    parts = text.split(",")
    if text.strip() and any(not part.strip() for part in parts):
        raise ConfigError(f"objectives {text!r}: an empty name between commas")
    objectives = [Objective.parse(part) for part in parts if part.strip()]
    if not objectives:
        raise ConfigError(f"objectives {text!r}: expected METRIC[:max|:min],...")
    names = [o.metric for o in objectives]
    if len(set(names)) != len(names):
        raise ConfigError(f"objectives {text!r}: a metric is named twice")
    return objectives


# -- outputs --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Study:
    """One study: its key, graph (name, spec, id), algorithm, device, space, objective and
    its complete rows (``evaluations``)."""

    key: str
    graph: str
    graph_spec: str
    graph_id: str
    algorithm: str
    device: str
    space: str
    objective: str
    evaluations: int


@dataclass(frozen=True)
class Config:
    """A configuration: its canonical key and knob values."""

    key: str
    params: dict[str, Any]

    @property
    def text(self) -> str:
        """The knobs a reader needs (those away from the default they would take)."""
        return config_text(self.params)


@dataclass(frozen=True)
class FixedConfig:
    """The best single configuration across the graphs of an (algorithm, device) group: among
    those evaluated on every graph, the lowest geometric mean of value relative to each
    graph's best (1.0: the best on every graph)."""

    algorithm: str
    device: str
    config: Config
    graphs: int
    geomean_ratio: float


@dataclass(frozen=True)
class StudyBest:
    """A study's best row (its role, label or trial number say whether a reference won) and
    its speedups over the thread reference and the group's fixed configuration (> 1: the
    best is better)."""

    study: Study
    value: float
    config: Config
    role: str
    label: str | None
    trial: int | None
    thread_value: float | None
    vs_thread: float | None
    fixed: FixedConfig | None
    fixed_value: float | None
    vs_fixed: float | None
    # measured on the GPU (``tune --verify K``; None where the study was not measured): the
    # best row's configuration measured, and the study's measured winner
    measured_us: float | None = None
    measured: MeasuredWinner | None = None

    @property
    def measured_regret(self) -> float | None:
        """The simulated best's measured time over the measured winner's (None: either was
        not measured)."""
        if self.measured is None or self.measured_us is None:
            return None
        return self.measured_us / self.measured.measured_us


@dataclass
class BestAnswer:
    """`best`: one row per study, and the fixed configuration of each group."""

    objective: Objective
    studies: list[StudyBest]
    fixed: list[FixedConfig]

    def to_json(self) -> dict[str, Any]:
        """JSON-able dict (non-finite numbers as null)."""
        return _clean({"objective": str(self.objective),
                       "studies": [_study_best_json(s) for s in self.studies],
                       "fixed": [_fixed_json(f) for f in self.fixed]})


@dataclass(frozen=True)
class EffectPoint:
    """The metric at one value of the knob (None: the knob does not apply), from the best row
    with every other knob as in the study's best configuration (``others`` AT_BEST) or, with
    no such row, the best row with this value (BEST_WITH_VALUE). ``vs_best``: how many times
    better the study's best is; ``configurations``: complete rows with this value."""

    value: Any
    metric: float
    vs_best: float | None
    others: str
    config: Config
    configurations: int


@dataclass(frozen=True)
class StudyEffect:
    """One study's metric as a function of the knob, the other knobs at the best."""

    study: Study
    best_value: Any
    best_metric: float
    best_config: Config
    points: list[EffectPoint]


@dataclass
class EffectAnswer:
    """`effect`: per study, the metric for each value of the knob."""

    knob: str
    objective: Objective
    studies: list[StudyEffect]

    def to_json(self) -> dict[str, Any]:
        """JSON-able dict (non-finite numbers as null)."""
        return _clean({
            "knob": self.knob, "objective": str(self.objective),
            "studies": [{"study": vars(s.study), "best_value": s.best_value,
                         "best_metric": s.best_metric, "best_config": _config_json(s.best_config),
                         "points": [{"value": p.value, "metric": p.metric, "vs_best": p.vs_best,
                                     "others": p.others, "configurations": p.configurations,
                                     "config": _config_json(p.config)} for p in s.points]}
                        for s in self.studies],
        })


@dataclass(frozen=True)
class ParetoPoint:
    """A non-dominated configuration and its objective values."""

    config: Config
    values: tuple[float, ...]


@dataclass(frozen=True)
class StudyFront:
    """One study's Pareto front over the configurations evaluated."""

    study: Study
    points: list[ParetoPoint]


@dataclass
class ParetoAnswer:
    """`pareto`: per study, the non-dominated configurations, best first objective first."""

    objectives: list[Objective]
    studies: list[StudyFront] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """JSON-able dict (non-finite numbers as null)."""
        names = [o.metric for o in self.objectives]
        return _clean({
            "objectives": [str(o) for o in self.objectives],
            "studies": [{"study": vars(s.study),
                         "front": [{**dict(zip(names, p.values, strict=True)),
                                    "config": _config_json(p.config)} for p in s.points]}
                        for s in self.studies],
        })


# -- the answers ----------------------------------------------------------------------------
def best(con: duckdb.DuckDBPyConnection, filters: Filters = Filters(),
         objective: Objective = Objective("time_us")) -> BestAnswer:
    """Per study, the best complete row (trials and references), its speedup over the
    study's ``thread`` reference and over the best fixed configuration of its (algorithm,
    device) group (the group counts every graph, whatever ``--graph`` picks)."""
    try:
        return _best(con, filters, objective)
    finally:
        _drop_temporaries(con)


def effect(con: duckdb.DuckDBPyConnection, knob: str, filters: Filters = Filters(),
           objective: Objective = Objective("time_us")) -> EffectAnswer:
    """Per study, the metric for each value of ``knob`` with the other knobs held at the
    study's best configuration; a value with no such row falls back to its best row."""
    try:
        return _effect(con, knob, filters, objective)
    finally:
        _drop_temporaries(con)


def pareto(con: duckdb.DuckDBPyConnection, objectives: list[Objective],
           filters: Filters = Filters()) -> ParetoAnswer:
    """Per study, the complete configurations no other configuration of the study dominates
    (at least as good in every objective, better in one), sorted by the first objective."""
    try:
        return _pareto(con, objectives, filters)
    finally:
        _drop_temporaries(con)


def _best(con: duckdb.DuckDBPyConnection, filters: Filters, objective: Objective) -> BestAnswer:
    src = _Source(con, filters, [objective.metric], graph_filter=False)
    if src.empty:
        return BestAnswer(objective, [], [])
    summaries = _summaries(src, objective)
    src.canonicalise(sum(s["unfixed"] for s in summaries))
    shown = graph_ids(con, filters.graph) if filters.graph is not None else None
    studies = _studies(con, summaries)
    fixed, fixed_values = _fixed_configs(src, summaries, objective)
    measured = winners(con) if "measured_us" in src.columns else {}
    out = []
    for s in summaries:
        if shown is not None and s["graph_id"] not in shown:
            continue
        study, win = studies[s["study_key"]], s["win"]
        group = fixed.get((study.algorithm, study.device))
        fixed_value = fixed_values.get(s["study_key"])
        out.append(StudyBest(
            study=study, value=win["value"], config=src.config(win), role=win["role"],
            label=win["label"], trial=win["trial"], thread_value=s["thread"],
            vs_thread=objective.gain(s["thread"], win["value"]), fixed=group,
            fixed_value=fixed_value, vs_fixed=objective.gain(fixed_value, win["value"]),
            measured_us=win.get("measured_us"), measured=measured.get(s["study_key"])))
    if not out and filters.given():
        _explain_empty(con, filters)
    out.sort(key=lambda b: _study_order(b.study))
    used = {(b.study.algorithm, b.study.device) for b in out}
    return BestAnswer(objective, out, [f for k, f in sorted(fixed.items()) if k in used])


def _fixed_configs(src: _Source, summaries: list[dict[str, Any]], objective: Objective
                   ) -> tuple[dict[tuple[str, str], FixedConfig], dict[str, float]]:
    """Per (algorithm, device) group, the configuration evaluated on every graph of the group
    with the lowest geometric mean of its value relative to each graph's best; and per study,
    that configuration's value there (the study's own rows, else the graph's other studies).

    Candidates are the configurations of the group's graph with the fewest rows, so only the
    rows of those configurations are aggregated."""
    con = src.con
    groups: dict[tuple[str, str], dict[str, list[dict[str, Any]]]] = {}
    for s in summaries:
        groups.setdefault((s["algorithm"], s["device"]), {}).setdefault(
            s["graph_id"], []).append(s)
    if not groups:
        return {}, {}
    pick = max if objective.maximize else min
    pivots, graph_best, group_graphs = [], [], []
    for (algorithm, device), graphs in groups.items():
        pivot = min(graphs, key=lambda g: (sum(s["n"] for s in graphs[g]), g))
        pivots.append((algorithm, device, pivot))
        group_graphs.append((algorithm, device, len(graphs)))
        for graph_id, studies in graphs.items():
            graph_best.append((algorithm, device, graph_id,
                               pick(s["win"]["value"] for s in studies)))
    _register(con, "_pivot", ["algorithm", "device", "graph_id"], pivots)
    _register(con, "_graph_best", ["algorithm", "device", "graph_id", "best"], graph_best)
    _register(con, "_group_graphs", ["algorithm", "device", "graphs"], group_graphs)
    pivot_ids = sorted({p[2] for p in pivots})
    marks = ", ".join("?" for _ in pivot_ids)
    h = src.hash_sql()
    con.execute(f"""
        CREATE OR REPLACE TEMP TABLE _candidates AS
        WITH cand AS (
            SELECT DISTINCT t.algorithm, t.device, {h} AS h
            FROM {src.from_sql} JOIN _pivot p ON p.algorithm = t.algorithm
                 AND p.device = t.device AND p.graph_id = t.graph_id
            WHERE {src.where} AND t.graph_id IN ({marks}))
        SELECT t.algorithm, t.device, t.graph_id, t.study_key, c.h, avg({src.metric(0)}) AS v,
               any_value({src.row_struct()}) AS row
        FROM {src.from_sql} JOIN cand c ON c.algorithm = t.algorithm AND c.device = t.device
             AND c.h = {h}
        WHERE {src.where} GROUP BY ALL""", [*src.params, *pivot_ids, *src.params])
    ratio = "b.best / g.v" if objective.maximize else "g.v / b.best"
    chosen = _records(con, f"""
        WITH g AS (SELECT algorithm, device, graph_id, h, avg(v) AS v FROM _candidates
                   GROUP BY ALL),
             s AS (SELECT algorithm, device, h,
                          count(CASE WHEN g.v > 0 AND b.best > 0 THEN 1 END) AS k,
                          exp(avg(CASE WHEN g.v > 0 AND b.best > 0 THEN ln({ratio}) END)) AS geo
                   FROM g JOIN _graph_best b USING (algorithm, device, graph_id) GROUP BY ALL)
        SELECT s.algorithm, s.device, s.h, s.geo, n.graphs
        FROM s JOIN _group_graphs n USING (algorithm, device) WHERE s.k = n.graphs
        QUALIFY row_number() OVER (PARTITION BY algorithm, device ORDER BY s.geo, s.h) = 1""")
    if not chosen:
        return {}, {}
    _register(con, "_chosen", ["algorithm", "device", "h"],
              [(c["algorithm"], c["device"], c["h"]) for c in chosen], {"h": pa.uint64()})
    values = _records(con, """
        SELECT c.algorithm, c.device, c.h, c.study_key, c.graph_id, c.v, c.row
        FROM _candidates c JOIN _chosen USING (algorithm, device, h)""")
    params = {(v["algorithm"], v["device"], v["h"]): v["row"] for v in values}
    fixed = {(c["algorithm"], c["device"]): FixedConfig(
        c["algorithm"], c["device"], src.config(params[(c["algorithm"], c["device"], c["h"])]),
        c["graphs"], c["geo"]) for c in chosen}
    own = {v["study_key"]: v["v"] for v in values}
    by_graph: dict[tuple[str, str, str], list[float]] = {}
    for v in values:
        by_graph.setdefault((v["algorithm"], v["device"], v["graph_id"]), []).append(v["v"])
    per_study = {}
    for s in summaries:
        if (s["algorithm"], s["device"]) in fixed:
            graph_values = by_graph.get((s["algorithm"], s["device"], s["graph_id"]))
            per_study[s["study_key"]] = own.get(s["study_key"], (
                sum(graph_values) / len(graph_values) if graph_values else None))
    return fixed, per_study


def _effect(con: duckdb.DuckDBPyConnection, knob: str, filters: Filters,
            objective: Objective) -> EffectAnswer:
    knob = knob.removeprefix(PARAM_PREFIX)
    src = _Source(con, filters, [objective.metric], graph_filter=True)
    if knob not in src.knobs:
        raise ConfigError(f"unknown knob {knob!r}; knobs present: "
                          f"{', '.join(src.knobs) if src.knobs else '(none: no trial rows)'}")
    if src.empty:
        return EffectAnswer(knob, objective, [])
    summaries = _summaries(src, objective)
    src.canonicalise(sum(s["unfixed"] for s in summaries))
    if not summaries:
        if filters.given():
            _explain_empty(con, filters)
        return EffectAnswer(knob, objective, [])
    others = [k for k in src.knobs if k != knob]
    best_configs = {s["study_key"]: src.config(s["win"]) for s in summaries}
    _register(con, "_best", ["study_key", *(PARAM_PREFIX + k for k in others)],
              [(key, *(c.params.get(k) for k in others)) for key, c in best_configs.items()],
              src.param_types())
    at_best = " AND ".join(f'{src.param(k)} IS NOT DISTINCT FROM b."{PARAM_PREFIX}{k}"'
                           for k in others) or "true"
    sign = "-" if objective.maximize else ""
    m = src.metric(0)
    picks = _records(con, f"""
        SELECT t.study_key, {src.param(knob)} AS kv, count(*) AS n,
               arg_min(struct_pack(at_best := ({at_best}), row := {src.row_struct()}),
                       (NOT ({at_best}), {sign}{m}, t.role, t.trial, t.label)) AS pick
        FROM {src.from_sql} JOIN _best b ON b.study_key = t.study_key
        WHERE {src.where} GROUP BY ALL""", src.params)
    studies = _studies(con, summaries)
    best_values = {s["study_key"]: s["win"]["value"] for s in summaries}
    points: dict[str, list[EffectPoint]] = {}
    for r in picks:
        row = r["pick"]["row"]
        points.setdefault(r["study_key"], []).append(EffectPoint(
            value=r["kv"], metric=row["value"],
            vs_best=objective.gain(row["value"], best_values[r["study_key"]]),
            others=AT_BEST if r["pick"]["at_best"] else BEST_WITH_VALUE,
            config=src.config(row), configurations=r["n"]))
    out = []
    for s in summaries:
        pts = sorted(points.get(s["study_key"], []), key=lambda p: _value_order(p.value))
        config = best_configs[s["study_key"]]
        out.append(StudyEffect(studies[s["study_key"]], config.params.get(knob),
                               s["win"]["value"], config, pts))
    out.sort(key=lambda e: _study_order(e.study))
    return EffectAnswer(knob, objective, out)


def _pareto(con: duckdb.DuckDBPyConnection, objectives: list[Objective],
            filters: Filters) -> ParetoAnswer:
    if not objectives:
        raise ConfigError("pareto needs at least one objective")
    src = _Source(con, filters, [o.metric for o in objectives], graph_filter=True)
    if src.empty:
        return ParetoAnswer(objectives, [])
    k = len(objectives)
    table = con.sql(f"""
        SELECT t.study_key, {', '.join(f'{src.metric(i)} AS m{i}' for i in range(k))}
        FROM {src.from_sql} WHERE {src.where}""", params=src.params).to_arrow_table()
    if not table.num_rows:
        if filters.given():
            _explain_empty(con, filters)
        return ParetoAnswer(objectives, [])
    codes = pc.dictionary_encode(table.column("study_key")).combine_chunks()
    group = codes.indices.to_numpy(zero_copy_only=False)
    evaluations = dict(zip(codes.dictionary.to_pylist(),
                           np.bincount(group, minlength=len(codes.dictionary)).tolist(),
                           strict=True))
    signs = np.array([-1.0 if o.maximize else 1.0 for o in objectives])
    x = np.column_stack([table.column(f"m{i}").to_numpy() for i in range(k)]) * signs
    front = np.flatnonzero(pareto_mask(group, x))
    rows = list(zip(codes.dictionary.take(pa.array(group[front])).to_pylist(),
                    *(x[front, i] * signs[i] for i in range(k)), strict=True))
    _register(con, "_front", ["study_key", *(f"m{i}" for i in range(k))], rows,
              {f"m{i}": pa.float64() for i in range(k)})
    match = " AND ".join(f"{src.metric(i)} = fr.m{i}" for i in range(k))
    found = _records(con, f"""
        SELECT t.study_key, t.algorithm, t.device, t.graph_id, t.graph_spec, t.space,
               t.objective, {src.row_struct()} AS row,
               [{', '.join(src.metric(i) for i in range(k))}] AS vals
        FROM {src.from_sql} JOIN _front fr ON fr.study_key = t.study_key AND {match}
        WHERE {src.where}""", src.params)
    firsts = {r["study_key"]: r for r in found}
    studies = _studies(con, [{**r, "n": evaluations[key]} for key, r in firsts.items()])
    fronts: dict[str, dict[str, ParetoPoint]] = {}
    for r in found:
        config = src.config(r["row"])
        fronts.setdefault(r["study_key"], {}).setdefault(
            config.key, ParetoPoint(config, tuple(float(v) for v in r["vals"])))
    out = []
    for key, points in fronts.items():
        ranked = sorted(points.values(), key=lambda p: (
            tuple(v * s for v, s in zip(p.values, signs, strict=True)), p.config.key))
        out.append(StudyFront(studies[key], ranked))
    out.sort(key=lambda f: _study_order(f.study))
    return ParetoAnswer(objectives, out)


def pareto_mask(group: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Mask of the rows of ``x`` (objectives to minimise, rows in any order) that no row of
    the same group dominates (at least as small everywhere, smaller somewhere)."""
    x = np.asarray(x, dtype=float)
    group = np.asarray(group)
    if len(x) == 0:
        return np.zeros(0, dtype=bool)
    if x.shape[1] == 1:
        lowest = np.full(int(group.max()) + 1, np.inf)
        np.minimum.at(lowest, group, x[:, 0])
        return x[:, 0] == lowest[group]
    if x.shape[1] == 2:
        return _pareto_mask_2d(group, x)
    return _pareto_mask_nd(group, x)


def _group_order(group: np.ndarray, key: np.ndarray) -> np.ndarray:
    """Permutation sorting by group, then by ``key`` (ties in any order): a quicksort of the
    key, then a stable radix sort of the small group numbers."""
    by_key = np.argsort(key)
    narrow = np.int16 if group.max() < np.iinfo(np.int16).max else np.int64
    return by_key[np.argsort(group[by_key].astype(narrow), kind="stable")]


def _pareto_mask_2d(group: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Two objectives in O(n log n): sorted by the first, a row is dominated iff a row with a
    smaller first value has a second value no larger, or a row with the same first value has
    a smaller second one."""
    order = _group_order(group, x[:, 0])
    g, a, b = group[order], x[order, 0], x[order, 1]
    starts = np.flatnonzero(np.r_[True, (g[1:] != g[:-1]) | (a[1:] != a[:-1])])
    run_min = np.minimum.reduceat(b, starts)            # lowest second value in each run
    run_group = g[starts]
    before = np.empty_like(run_min)                     # lowest second value of earlier runs
    bounds = np.flatnonzero(np.r_[True, run_group[1:] != run_group[:-1], True])
    for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
        before[lo] = np.inf
        before[lo + 1:hi] = np.minimum.accumulate(run_min[lo:hi - 1])
    run = np.cumsum(np.r_[True, (g[1:] != g[:-1]) | (a[1:] != a[:-1])]) - 1
    dominated = (before[run] <= b) | (run_min[run] < b)
    mask = np.zeros(len(x), dtype=bool)
    mask[order[~dominated]] = True
    return mask


def _pareto_mask_nd(group: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Any number of objectives: a cheap pass drops the rows dominated by a few pivots per
    group (rows that minimise positively weighted sums, which lie on the front); the
    survivors are sorted and swept exactly."""
    n, k = x.shape
    groups = int(group.max()) + 1
    scale = np.mean(np.abs(x), axis=0)
    scale[~(scale > 0) | ~np.isfinite(scale)] = 1.0
    weights = [np.eye(k)[i] for i in range(k)] + [np.ones(k)]
    weights += [np.where(np.arange(k) == i, 4.0, 1.0) for i in range(k)]
    rest, g, xs = np.arange(n), group, x
    for w in weights:
        score = xs @ (w / scale)
        lowest = np.full(groups, np.inf)
        np.minimum.at(lowest, g, score)
        at_lowest = np.flatnonzero(score == lowest[g])
        present, first = np.unique(g[at_lowest], return_index=True)
        pivot_x = np.full((groups, k), -np.inf)
        pivot_x[present] = xs[at_lowest[first]]
        alive = ~_dominated(xs, pivot_x, g)
        rest, g, xs = rest[alive], g[alive], xs[alive]
    order = np.lexsort([xs[:, i] for i in range(k - 1, -1, -1)] + [g])
    mask = np.zeros(n, dtype=bool)
    mask[rest[order[non_dominated_groups(g[order], xs[order])]]] = True
    return mask


def _dominated(x: np.ndarray, by: np.ndarray, group: np.ndarray | None = None) -> np.ndarray:
    """Row-wise: whether ``by`` (or ``by[group]``: one row per group) dominates ``x``;
    column by column, fast for few objectives."""
    all_ge = np.ones(len(x), dtype=bool)
    any_gt = np.zeros(len(x), dtype=bool)
    for i in range(x.shape[1]):
        other = by[:, i] if group is None else by[:, i][group]
        all_ge &= x[:, i] >= other
        any_gt |= x[:, i] > other
    return all_ge & any_gt


def non_dominated_groups(group: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Mask of the rows of ``x`` (objectives to minimise) that no row of the same group
    dominates. Rows must be sorted by group, then lexicographically by ``x``: the first row
    left in a group is then never dominated (a row dominating it would sort before it), so
    each round keeps the first row of every group and drops the rows it dominates; rounds =
    the largest front."""
    front = np.zeros(len(x), dtype=bool)
    alive = np.arange(len(x))
    while alive.size:
        g = group[alive]
        first = np.r_[True, g[1:] != g[:-1]]
        heads = alive[first]
        front[heads] = True
        dominated = _dominated(x[alive], x[heads][np.cumsum(first) - 1])
        alive = alive[~first & ~dominated]
    return front


def non_dominated(x: np.ndarray) -> np.ndarray:
    """Indices of the non-dominated rows of ``x`` (to minimise, any order), ascending."""
    x = np.asarray(x, dtype=float).reshape(len(x), -1)
    return np.flatnonzero(pareto_mask(np.zeros(len(x), dtype=np.int64), x))


def _drop_temporaries(con: duckdb.DuckDBPyConnection) -> None:
    """Leave the caller's connection as it was: the answers' temp tables and views go."""
    con.execute("DROP TABLE IF EXISTS _candidates")
    con.execute("DROP TABLE IF EXISTS _fix")
    for view in ("_pivot", "_graph_best", "_group_graphs", "_chosen", "_best", "_front",
                 "_fix_src"):
        try:
            con.unregister(view)
        except duckdb.Error:
            pass


# -- what the results hold ------------------------------------------------------------------
def _columns(con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    """Column name -> DuckDB type of the ``trials`` view."""
    return {name: str(kind) for name, kind, *_ in con.execute("DESCRIBE trials").fetchall()}


def knob_names(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Knobs with a ``param_`` column in ``trials``, Strategy's order first."""
    return _knobs(_columns(con))


def metric_names(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Numeric metric columns of ``trials`` (not declared columns, not knobs)."""
    return _metrics(_columns(con))


def _knobs(columns: dict[str, str]) -> list[str]:
    present = [c[len(PARAM_PREFIX):] for c in columns if c.startswith(PARAM_PREFIX)]
    order = {k: i for i, k in enumerate(Strategy.KNOBS)}
    return sorted(present, key=lambda k: (order.get(k, len(order)), k))


def _metrics(columns: dict[str, str]) -> list[str]:
    reserved = reserved_names()
    return [c for c, t in columns.items()
            if c not in reserved and not c.startswith(PARAM_PREFIX) and _numeric(t)]


def _numeric(duck_type: str) -> bool:
    return duck_type.upper().split("(")[0] in _NUMERIC


class _Source:
    """The complete rows of the filtered studies in ``trials`` as SQL pieces: ``from_sql``
    (alias ``t``), ``where`` with ``params``, each knob's canonical value and a hash of the
    configuration. Rows an older writer left with an applicable knob at NULL (its default)
    get their canonical values once ``canonicalise`` has run: in SQL (each knob's default
    where it applies) when that gives what Strategy gives for every such configuration,
    else from a ``_fix`` table of their canonical values."""

    def __init__(self, con: duckdb.DuckDBPyConnection, filters: Filters, metrics: list[str],
                 graph_filter: bool) -> None:
        self.con = con
        self.columns = _columns(con)
        known = _metrics(self.columns)
        for metric in metrics:
            # a metric column: not a knob (param_w), a text column (error) or bookkeeping;
            # results with no row yet have no metric column to name (and nothing to rank)
            if set(known) - set(MEASURED_COLUMNS) and metric not in known:
                raise ConfigError(f"unknown metric {metric!r}; metrics present: "
                                  f"{', '.join(known) or 'none'}")
        self.metrics = metrics
        self.knobs = _knobs(self.columns)
        self.types = {k: self.columns[PARAM_PREFIX + k] for k in self.knobs}
        self.fixed = False      # canonical values from the _fix table
        self.filled = False     # canonical values filled in SQL
        self._configs: dict[str, Config] = {}
        where, params = ["t.state = 'complete'"], []
        for column, value in (("algorithm", filters.algo), ("device", filters.device)):
            if value is not None:
                where.append(f"t.{column} = ?")
                params.append(value)
        if graph_filter and filters.graph is not None:
            ids = sorted(graph_ids(con, filters.graph))
            where.append(f"t.graph_id IN ({', '.join('?' for _ in ids)})" if ids else "false")
            params += ids
        # No metric column at all: no trial file yet, so no rows to answer from.
        self.empty = not all(m in self.columns for m in metrics)
        if not self.empty:
            where += [f"{self.metric(i)} IS NOT NULL AND NOT isnan({self.metric(i)})"
                      for i in range(len(metrics))]
        self.where = " AND ".join(where)
        self.params = params

    def metric(self, i: int) -> str:
        """SQL of the i-th metric's column."""
        return f't."{self.metrics[i]}"'

    @property
    def from_sql(self) -> str:
        """``trials t``, joined to the canonical values of rows that need them."""
        if not self.fixed:
            return "trials t"
        return "trials t LEFT JOIN _fix f ON f.raw_h = " + self._hash('t."{}"')

    def param(self, knob: str) -> str:
        """SQL of a knob's canonical value."""
        column = f'"{PARAM_PREFIX}{knob}"'
        if self.fixed:
            return f"coalesce(f.{column}, t.{column})"
        if self.filled:
            return self._fill_sql(knob)
        return f"t.{column}"

    def _fill_sql(self, knob: str) -> str:
        """SQL of a knob's value with a NULL read as its default where the knob applies."""
        column = f't."{PARAM_PREFIX}{knob}"'
        base = strategy_defaults(None, None)
        if knob in ("mapping", "driven"):
            return f"coalesce({column}, {_literal(base[knob])})"
        rule = _default_rules().get(knob)
        if rule is None:
            return column
        mappings, drivens, default = rule
        cond = []
        for selector, values, every in (("mapping", mappings, MAPPINGS),
                                        ("driven", drivens, DRIVEN)):
            if set(values) != set(every):
                listed = ", ".join(_literal(v) for v in sorted(values))
                cond.append(f"coalesce(t.param_{selector}, {_literal(base[selector])}) "
                            f"IN ({listed})")
        value = f"CAST({_literal(default)} AS {self.types[knob]})"
        if cond:
            value = f"CASE WHEN {' AND '.join(cond)} THEN {value} END"
        return f"coalesce({column}, {value})"

    def _filled(self, raw: dict[str, Any]) -> dict[str, Any]:
        """What ``_fill_sql`` makes of a configuration, in Python."""
        base = strategy_defaults(None, None)
        mapping = raw.get("mapping") or base["mapping"]
        driven = raw.get("driven") or base["driven"]
        out = {}
        for knob in self.knobs:
            value = raw.get(knob)
            if value is None and knob in ("mapping", "driven"):
                value = base[knob]
            elif value is None and knob in _default_rules():
                mappings, drivens, default = _default_rules()[knob]
                value = default if mapping in mappings and driven in drivens else None
            if value is not None:
                out[knob] = value
        return out

    def param_types(self) -> dict[str, pa.DataType]:
        """Arrow type of every knob column."""
        schema = self.con.sql("SELECT " + ", ".join(
            f'"{PARAM_PREFIX}{k}"' for k in self.knobs) + " FROM trials LIMIT 0"
        ).to_arrow_table().schema if self.knobs else pa.schema([])
        return {f.name: f.type for f in schema}

    def hash_sql(self) -> str:
        """SQL of a 64-bit hash of the configuration's canonical knob values."""
        if not self.knobs:
            return "hash(0)"
        return "hash(" + ", ".join(self.param(k) for k in self.knobs) + ")"

    def _hash(self, column: str) -> str:
        """SQL hash of the raw knob columns, ``column`` formatting each name."""
        if not self.knobs:
            return "hash(0)"
        return "hash(" + ", ".join(column.format(PARAM_PREFIX + k) for k in self.knobs) + ")"

    def row_struct(self) -> str:
        """SQL of a struct with a row's value (first metric), role, label, trial and raw knobs."""
        knobs = ", ".join(f'"{PARAM_PREFIX}{k}" := t."{PARAM_PREFIX}{k}"' for k in self.knobs)
        measured = ", measured_us := t.measured_us" if "measured_us" in self.columns else ""
        return (f"struct_pack(value := {self.metric(0)}, role := t.role, "
                f"label := t.label, trial := t.trial{measured}{', ' + knobs if knobs else ''})")

    def unfixed_sql(self) -> str:
        """SQL true where a knob that applies to the row's mapping and driven form is NULL
        (left at its default by an older writer). Knobs that apply to the same settings share
        one term: (a IS NULL OR b IS NULL) AND mapping IN (...) AND driven IN (...)."""
        if "mapping" not in self.knobs or "driven" not in self.knobs:
            return "false"
        groups: dict[tuple[frozenset[str], frozenset[str]], list[str]] = {}
        for knob, (mappings, drivens) in _applicable().items():
            if knob in self.knobs:
                groups.setdefault((mappings, drivens), []).append(knob)
        terms = []
        for (mappings, drivens), knobs in sorted(groups.items(), key=lambda g: g[1]):
            parts = ["(" + " OR ".join(f't."{PARAM_PREFIX}{k}" IS NULL' for k in knobs) + ")"]
            for column, values, every in (("mapping", mappings, MAPPINGS),
                                          ("driven", drivens, DRIVEN)):
                if set(values) != set(every):
                    listed = ", ".join(f"'{v}'" for v in sorted(values))
                    parts.append(f"t.param_{column} IN ({listed})")
            terms.append(" AND ".join(parts))
        return "(" + " OR ".join(f"({t})" for t in terms) + ")"

    def canonicalise(self, unfixed: int) -> None:
        """With ``unfixed`` rows (an applicable knob at NULL) present: read such NULLs as
        their defaults in SQL if that gives Strategy's canonical configuration for each of
        their distinct configurations (for a deterministic sample of ``VALIDATE_AT_MOST``
        when there are more), else join a ``_fix`` table of their canonical values."""
        if not unfixed or self.fixed or self.filled:
            return
        columns = ", ".join(f't."{PARAM_PREFIX}{k}"' for k in self.knobs)
        rows = self.con.execute(f"SELECT DISTINCT {columns} FROM trials t WHERE {self.where} "
                                f"AND {self.unfixed_sql()}", self.params).fetchall()
        configs = [{k: v for k, v in zip(self.knobs, row, strict=True) if v is not None}
                   for row in rows]
        step = max(1, math.ceil(len(configs) / VALIDATE_AT_MOST))
        if all(self._filled(c) == self._canonical(c) for c in configs[::step]):
            self.filled = True
            return
        canon = [self._canonical(c) for c in configs]
        types = self.param_types()
        data: dict[str, pa.Array] = {}
        for knob in self.knobs:
            name = PARAM_PREFIX + knob
            data["raw_" + name] = pa.array([c.get(knob) for c in configs], types[name])
            data[name] = pa.array([c.get(knob) for c in canon], types[name])
        self.con.register("_fix_src", pa.table(data))
        cols = ", ".join(f'"{PARAM_PREFIX}{k}"' for k in self.knobs)
        self.con.execute(f"CREATE OR REPLACE TEMP TABLE _fix AS SELECT "
                         f"{self._hash(chr(34) + 'raw_{}' + chr(34))} AS raw_h, {cols} "
                         f"FROM _fix_src")
        self.con.unregister("_fix_src")
        self.fixed = True

    def _canonical(self, config: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in canonical_params(config).items() if k in self.types}

    def config(self, row: dict[str, Any]) -> Config:
        """The canonical configuration of a row struct (its ``param_*`` fields)."""
        params = canonical_params({k: row.get(PARAM_PREFIX + k) for k in self.knobs
                                   if row.get(PARAM_PREFIX + k) is not None})
        key = " ".join(f"{k}={value_text(v)}" for k, v in params.items())
        found = self._configs.get(key)
        if found is None:
            found = self._configs[key] = Config(key, params)
        return found


def _summaries(src: _Source, objective: Objective | None, canonical: bool = True
               ) -> list[dict[str, Any]]:
    """Per study: its columns, complete rows (``n``), rows needing canonical values
    (``unfixed``) and, with an objective, its best row (``win``) and thread reference."""
    extra = ""
    params: list[Any] = []
    if objective is not None:
        sign = "-" if objective.maximize else ""
        m = src.metric(0)
        # ties broken as the tune's own table breaks them (StudyRun.ranked)
        extra = (f", arg_min({src.row_struct()}, ({sign}{m}, t.role, t.trial, t.label)) AS win"
                 f", avg({m}) FILTER (WHERE t.role = 'reference' AND t.label = ?) AS thread")
        params.append(THREAD_LABEL)
    unfixed = f"count(*) FILTER (WHERE {src.unfixed_sql()})" if canonical else "0"
    return _records(src.con, f"""
        SELECT t.study_key, any_value(t.algorithm) AS algorithm, any_value(t.device) AS device,
               any_value(t.graph_id) AS graph_id, any_value(t.graph_spec) AS graph_spec,
               any_value(t.space) AS space, any_value(t.objective) AS objective,
               count(*) AS n, {unfixed} AS unfixed {extra}
        FROM trials t WHERE {src.where} GROUP BY t.study_key ORDER BY t.study_key""",
                    [*params, *src.params])


def _studies(con: duckdb.DuckDBPyConnection, summaries: list[dict[str, Any]]
             ) -> dict[str, Study]:
    """Study records from the summaries, graph names from ``graphs``."""
    names = dict(con.execute("SELECT graph_id, any_value(name) FROM graphs "
                             "WHERE name IS NOT NULL GROUP BY graph_id").fetchall())
    return {s["study_key"]: Study(
        s["study_key"], graph_name(s["graph_spec"], names.get(s["graph_id"])) or s["graph_spec"],
        s["graph_spec"],
        s["graph_id"], s["algorithm"], s["device"], s["space"], s["objective"], s["n"])
        for s in summaries}


def _explain_empty(con: duckdb.DuckDBPyConnection, filters: Filters) -> None:
    """Raise ConfigError naming a filter that matches no complete trial row, with the values
    present; return quietly when each matches alone (only their combination is empty)."""
    checks = (("algo", "algorithm", filters.algo), ("device", "device", filters.device))
    for option, column, value in checks:
        if value is None:
            continue
        present = [r[0] for r in con.execute(
            f"SELECT DISTINCT {column} FROM trials WHERE state = 'complete' ORDER BY 1"
        ).fetchall()]
        if value not in present:
            raise ConfigError(f"--{option} {value!r} matches no complete trial; present: "
                              f"{_listing(present)}")
    if filters.graph is not None and not graph_ids(con, filters.graph):
        present = sorted({graph_name(spec, name) or spec for spec, name in con.execute(
            "SELECT DISTINCT t.graph_spec, g.name FROM trials t LEFT JOIN graphs g "
            "USING (graph_id) WHERE t.state = 'complete'").fetchall()})
        raise ConfigError(f"--graph {filters.graph!r} matches no graph spec, id or name "
                          f"with a complete trial; graphs present: {_listing(present)}")


def _listing(values: list[Any], limit: int = 12) -> str:
    if not values:
        return "(none)"
    shown = ", ".join(str(v) for v in values[:limit])
    return shown + (f", ... ({len(values) - limit} more)" if len(values) > limit else "")


def _records(con: duckdb.DuckDBPyConnection, sql: str, params: list[Any] | None = None
             ) -> list[dict[str, Any]]:
    """Rows of a small result as dicts."""
    cursor = con.execute(sql, params or [])
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def _register(con: duckdb.DuckDBPyConnection, name: str, columns: list[str],
              rows: list[tuple], types: dict[str, pa.DataType] | None = None) -> None:
    """Register rows as a view (strings unless typed in ``types``)."""
    types = types or {}
    data = {}
    for i, column in enumerate(columns):
        values = [r[i] for r in rows]
        kind = types.get(column)
        if kind is None:
            kind = pa.int64() if all(isinstance(v, int) for v in values) and values else (
                pa.float64() if all(isinstance(v, (int, float)) for v in values) and values
                else pa.string())
        data[column] = pa.array(values, kind)
    con.register(name, pa.table(data))


@functools.cache
def _settings() -> dict[str, dict[tuple[str, str], Any]]:
    """Per knob with a non-null default: that default under each (mapping, driven form)
    where the knob applies (probed from Strategy, so the rules live in one place)."""
    found: dict[str, dict[tuple[str, str], Any]] = {}
    for mapping in MAPPINGS:
        for driven in DRIVEN:
            try:
                defaults = strategy_defaults(mapping, driven)
            except WarpsweepError:
                continue
            for knob, value in defaults.items():
                found.setdefault(knob, {})[(mapping, driven)] = value
    return found


def _product(by_pair: dict[tuple[str, str], Any]) -> tuple[frozenset[str], frozenset[str]]:
    """The mappings and the driven forms among the pairs."""
    return frozenset(m for m, _ in by_pair), frozenset(d for _, d in by_pair)


@functools.cache
def _applicable() -> dict[str, tuple[frozenset[str], frozenset[str]]]:
    """Per knob with a non-null default, the mappings and the driven forms it applies to (a
    knob of a mapping applies under every driven form and the other way round; were that not
    so, every setting is listed, which only makes more rows go through ``canonicalise``)."""
    out = {}
    for knob, by_pair in _settings().items():
        mappings, drivens = _product(by_pair)
        if len(by_pair) != len(mappings) * len(drivens):
            mappings, drivens = frozenset(MAPPINGS), frozenset(DRIVEN)
        out[knob] = (mappings, drivens)
    return out


@functools.cache
def _default_rules() -> dict[str, tuple[frozenset[str], frozenset[str], Any]]:
    """Per knob other than mapping and driven: the mappings and driven forms it applies to
    and its one default there; knobs whose default differs by setting are left out."""
    rules = {}
    for knob, by_pair in _settings().items():
        mappings, drivens = _product(by_pair)
        values = {(type(v), v) for v in by_pair.values()}
        if knob not in ("mapping", "driven") and len(values) == 1 and (
                len(by_pair) == len(mappings) * len(drivens)):
            rules[knob] = (mappings, drivens, next(iter(by_pair.values())))
    return rules


def _literal(value: Any) -> str:
    """A Python value as a SQL literal."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    return "'" + str(value).replace("'", "''") + "'"


def _value_order(value: Any) -> tuple:
    """Sort key for knob values: None last, numbers numerically, the rest as text."""
    if value is None:
        return (2, 0, "")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return (0, value, "")
    return (1, 0, str(value))


def _study_order(study: Study) -> tuple:
    return (study.algorithm, study.device, study.graph, study.space, study.key)


# -- JSON -----------------------------------------------------------------------------------
def _config_json(config: Config) -> dict[str, Any]:
    return {"text": config.text, "params": config.params}


def _fixed_json(f: FixedConfig) -> dict[str, Any]:
    return {"algorithm": f.algorithm, "device": f.device, "config": _config_json(f.config),
            "graphs": f.graphs, "geomean_ratio": f.geomean_ratio}


def _study_best_json(s: StudyBest) -> dict[str, Any]:
    return {"study": vars(s.study), "value": s.value, "config": _config_json(s.config),
            "role": s.role, "label": s.label, "trial": s.trial, "thread_value": s.thread_value,
            "vs_thread": s.vs_thread,
            "fixed_config": _config_json(s.fixed.config) if s.fixed else None,
            "fixed_value": s.fixed_value, "vs_fixed": s.vs_fixed,
            "measured_us": s.measured_us, "measured_regret": s.measured_regret,
            "measured_winner": vars(s.measured) if s.measured is not None else None}


def _clean(value: Any) -> Any:
    """Non-finite floats to None, recursively (strict JSON)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value
