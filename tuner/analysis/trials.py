"""What the ready answers read: the complete rows of the filtered studies in the ``trials`` view
as SQL pieces (``FilteredTrials``), each knob at its canonical value (an older writer's NULL
read as the default where the knob applies), summarised per configuration, with the knobs and
metrics the results hold and the DuckDB helpers the answers share.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import duckdb
import pyarrow as pa

from simulator.errors import ConfigError
from simulator.errors import WarpsweepError
from simulator.strategy import DRIVEN
from simulator.strategy import MAPPINGS
from simulator.strategy import Strategy
from tuner.analysis.answer_types import THREAD_LABEL
from tuner.analysis.answer_types import Config
from tuner.analysis.answer_types import Filters
from tuner.analysis.answer_types import Objective
from tuner.analysis.answer_types import Study
from tuner.results.configs import canonical_params
from tuner.results.configs import strategy_defaults
from tuner.results.configs import value_text
from tuner.results.measured import MEASURED_COLUMNS
from tuner.results.query import graph_ids
from tuner.results.query import graph_name
from tuner.results.query import told_apart
from tuner.results.schema import PARAM_PREFIX
from tuner.results.schema import reserved_names

# Reading NULL knobs as their defaults in SQL is checked against Strategy on at most this many
# distinct configurations (a deterministic sample beyond).
VALIDATE_AT_MOST = 20_000
_NUMERIC = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "FLOAT", "DOUBLE", "REAL",
            "DECIMAL", "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT")


def drop_temporaries(con: duckdb.DuckDBPyConnection) -> None:
    """Leave the caller's connection as it was: the answers' temp tables and views go."""
    con.execute("DROP TABLE IF EXISTS _candidates")
    con.execute("DROP TABLE IF EXISTS _fix")
    for view in ("_pivot", "_workload_best", "_group_workloads", "_chosen", "_best", "_front",
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


class FilteredTrials:
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


# What a study's values are comparable on: its graph, the sources it averages (their
# number, and the seed that draws them where there are several; one is the default source)
# and the cost model that timed them. Two studies of one graph with other sources time other
# runs; two of other cost models (the simulator changed between them) time them otherwise:
# one's best is no yardstick for the other's rows (``best`` had averaged them, probe SELECT).
WORKLOAD_SQL = ("t.graph_id || '|' || coalesce(CAST(t.n_sources AS VARCHAR), '?') || '|' || "
                "coalesce(CASE WHEN t.n_sources > 1 THEN CAST(t.seed AS VARCHAR) END, '') "
                # the study's, not the row's: a study begun before rows recorded it and
                # resumed after holds rows without and with it, and is one workload (probe CR7)
                "|| '|' || coalesce((SELECT max(s.model_digest) FROM trials s "
                "WHERE s.study_key = t.study_key), '')")


def workload_text(n_sources: int | None, seed: int | None) -> str:
    """A row's workload (``WORKLOAD_SQL``) as a reader says it: ``4 sources, seed 0``,
    ``1 source``, ``no source`` (PageRank, CC)."""
    if n_sources is None:
        return "sources unrecorded"
    if n_sources == 0:
        return "no source"
    return (f"{n_sources} source{'s' if n_sources != 1 else ''}"
            + (f", seed {seed}" if n_sources > 1 else ""))


def study_summaries(src: FilteredTrials, objective: Objective | None, canonical: bool = True
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
    return row_dicts(src.con, f"""
        SELECT t.study_key, any_value(t.algorithm) AS algorithm, any_value(t.device) AS device,
               any_value(t.graph_id) AS graph_id, any_value({WORKLOAD_SQL}) AS workload,
               any_value(t.graph_spec) AS graph_spec,
               any_value(t.space) AS space, any_value(t.objective) AS objective,
               count(*) AS n, {unfixed} AS unfixed {extra}
        FROM trials t WHERE {src.where} GROUP BY t.study_key ORDER BY t.study_key""",
                     [*params, *src.params])


def studies_by_key(con: duckdb.DuckDBPyConnection, summaries: list[dict[str, Any]]
                   ) -> dict[str, Study]:
    """Study records from the summaries, graph names from ``graphs``."""
    names = dict(con.execute("SELECT graph_id, any_value(name) FROM graphs "
                             "WHERE name IS NOT NULL GROUP BY graph_id").fetchall())
    shown = told_apart({s["graph_id"]: graph_name(s["graph_spec"], names.get(s["graph_id"]))
                        or s["graph_spec"] for s in summaries})
    return {s["study_key"]: Study(
        s["study_key"], shown[s["graph_id"]], s["graph_spec"],
        s["graph_id"], s["algorithm"], s["device"], s["space"], s["objective"], s["n"])
        for s in summaries}


def explain_empty_filter(con: duckdb.DuckDBPyConnection, filters: Filters) -> None:
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
        why = ""
        if ":" in filters.graph:  # meant as a spec: say what is wrong with it, if anything
            from simulator.errors import WarpsweepError
            from simulator.graph_spec import parse_spec

            try:
                parse_spec(filters.graph)
            except WarpsweepError as exc:
                why = f" (as a graph spec: {exc})"
        raise ConfigError(f"--graph {filters.graph!r} matches no graph spec, id or name "
                          f"with a complete trial{why}; graphs present: {_listing(present)}")


def _listing(values: list[Any], limit: int = 12) -> str:
    if not values:
        return "(none)"
    shown = ", ".join(str(v) for v in values[:limit])
    return shown + (f", ... ({len(values) - limit} more)" if len(values) > limit else "")


def row_dicts(con: duckdb.DuckDBPyConnection, sql: str, params: list[Any] | None = None
              ) -> list[dict[str, Any]]:
    """Rows of a small result as dicts."""
    cursor = con.execute(sql, params or [])
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def register_rows(con: duckdb.DuckDBPyConnection, name: str, columns: list[str],
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
