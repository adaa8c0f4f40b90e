"""Ready answers over a results directory: the best configuration of each study, one knob's
effect, Pareto fronts.

Functions of a DuckDB connection from ``tuner.results.query.connect`` (the temporary tables
they make are dropped before they return) that give dataclasses. DuckDB does the heavy lifting over
every complete trial row in a few scans, numpy sweeps the Pareto fronts, Python assembles one
result per study. A configuration is identified by its knob values (the non-null ``param_*``
columns), made canonical where a row left an applicable knob at NULL (its default), so that
the same strategy counts as one configuration whichever way its row was written.

What a question takes and gives is in ``answer_types``, the reading of the ``trials`` view in
``trials``, the fronts' numpy in ``pareto``.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from simulator.errors import ConfigError
from tuner.analysis.answer_types import AT_BEST
from tuner.analysis.answer_types import BEST_WITH_VALUE
from tuner.analysis.answer_types import BestAnswer
from tuner.analysis.answer_types import EffectAnswer
from tuner.analysis.answer_types import EffectPoint
from tuner.analysis.answer_types import Filters
from tuner.analysis.answer_types import FixedConfig
from tuner.analysis.answer_types import Objective
from tuner.analysis.answer_types import ParetoAnswer
from tuner.analysis.answer_types import ParetoPoint
from tuner.analysis.answer_types import StudyBest
from tuner.analysis.answer_types import StudyEffect
from tuner.analysis.answer_types import StudyFront
from tuner.analysis.answer_types import study_sort_key
from tuner.analysis.answer_types import value_sort_key
from tuner.analysis.pareto import pareto_mask
from tuner.analysis.trials import WORKLOAD_SQL
from tuner.analysis.trials import FilteredTrials
from tuner.analysis.trials import drop_temporaries
from tuner.analysis.trials import explain_empty_filter
from tuner.analysis.trials import register_rows
from tuner.analysis.trials import row_dicts
from tuner.analysis.trials import studies_by_key
from tuner.analysis.trials import study_summaries
from tuner.results.measured import MEASURED_COLUMNS
from tuner.results.measured import winners
from tuner.results.query import graph_ids
from tuner.results.schema import PARAM_PREFIX

# the questions' defaults (frozen: one instance serves every call)
ALL_STUDIES = Filters()
TIME_US = Objective("time_us")


# -- the answers ----------------------------------------------------------------------------
def _connection(con: duckdb.DuckDBPyConnection | str | os.PathLike) -> duckdb.DuckDBPyConnection:
    """A connection as given, or one over the results directory given in its stead (a
    notebook's ``best("res")`` had failed with "'str' object has no attribute 'execute'")."""
    if isinstance(con, duckdb.DuckDBPyConnection):
        return con
    if isinstance(con, str | os.PathLike):
        from tuner.results.query import connect

        return connect(os.fspath(con))
    raise ConfigError(f"{type(con).__name__} is no results connection: give a results "
                      "directory, or tuner.results.query.connect(RESULTS)")


def _as_objective(objective: Objective | str) -> Objective:
    """An ``Objective``, or its text as the CLI's ``--metric`` takes it (``"time_us"``,
    ``"simd_efficiency:max"``): a notebook's string had failed with an AttributeError."""
    if isinstance(objective, str):
        return Objective.parse(objective)
    if not isinstance(objective, Objective):
        raise ConfigError(f"an objective is an Objective or its text such as 'time_us' or "
                          f"'simd_efficiency:max', not {type(objective).__name__}")
    return objective


def _as_filters(filters: Filters | Mapping[str, str | None],
                con: duckdb.DuckDBPyConnection | str | os.PathLike | None = None) -> Filters:
    """``Filters``, or a dict of its fields (graph, algo, device), each one string or None; a
    device file named by its device's name, as the CLI's ``--device`` reads it (checked
    against the rows' fields where ``con`` is the results directory)."""
    if isinstance(filters, Mapping) and not isinstance(filters, Filters):
        unknown = sorted(set(filters) - {"graph", "algo", "device"})
        if unknown:
            raise ConfigError(f"unknown filter(s) {unknown}: the filters are graph, algo and "
                              "device")
        filters = Filters(**filters)
    if not isinstance(filters, Filters):
        raise ConfigError(f"filters are a Filters(graph=, algo=, device=) or a dict of them, "
                          f"not {type(filters).__name__}")
    for field in ("graph", "algo", "device"):  # a list had reached DuckDB (probe API2)
        value = getattr(filters, field)
        if value is not None and not isinstance(value, str):
            raise ConfigError(f"filter {field}={value!r}: give one {field} as a string, "
                              f"not a {type(value).__name__}")
    if filters.device is None:
        return filters
    from tuner.tuning.plan import filter_device

    # a device file by its name, as --device reads it: refused where the rows of that name
    # were simulated with other fields, read from the connection's rows where given one
    if isinstance(con, str | os.PathLike):
        device = filter_device(filters.device, os.fspath(con))
    else:
        device = filter_device(filters.device, "", _device_digests(con))
    return dataclasses.replace(filters, device=device)


def _device_digests(con: duckdb.DuckDBPyConnection) -> dict[str, set[str | None]]:
    """Per device name of a connection's trials view, its rows' device digests (None: a
    row written before rows recorded one)."""
    columns = {d[0] for d in con.execute("SELECT * FROM trials LIMIT 0").description}
    digest = "device_digest" if "device_digest" in columns else "NULL"
    found: dict[str, set[str | None]] = {}
    for name, value in con.execute(f"SELECT DISTINCT device, {digest} FROM trials").fetchall():
        found.setdefault(name, set()).add(value)
    return found


def best(con: duckdb.DuckDBPyConnection | str | os.PathLike,
         filters: Filters | Mapping[str, str | None] = ALL_STUDIES,
         objective: Objective | str = TIME_US) -> BestAnswer:
    """Per study, the best complete row (trials and references), its speedup over the
    study's ``thread`` reference and over the best fixed configuration of its (algorithm,
    device) group (the group counts every graph, whatever ``--graph`` picks). ``con``: a
    ``tuner.results.query.connect`` connection, or the results directory (or URI) itself."""
    filters, objective = _as_filters(filters, con), _as_objective(objective)
    con = _connection(con)
    try:
        return _best(con, filters, objective)
    finally:
        drop_temporaries(con)


def effect(con: duckdb.DuckDBPyConnection | str | os.PathLike, knob: str,
           filters: Filters | Mapping[str, str | None] = ALL_STUDIES,
           objective: Objective | str = TIME_US) -> EffectAnswer:
    """Per study, the metric for each value of ``knob`` with the other knobs held at the
    study's best configuration; a value with no such row falls back to its best row."""
    if not isinstance(knob, str):  # an AttributeError deep inside had said it (probe API)
        raise ConfigError(f"effect's knob is a knob's name such as 'w', not {knob!r}")
    filters, objective = _as_filters(filters, con), _as_objective(objective)
    con = _connection(con)
    try:
        return _effect(con, knob, filters, objective)
    finally:
        drop_temporaries(con)


def pareto(con: duckdb.DuckDBPyConnection | str | os.PathLike,
           objectives: list[Objective | str],
           filters: Filters | Mapping[str, str | None] = ALL_STUDIES) -> ParetoAnswer:
    """Per study, the complete configurations no other configuration of the study dominates
    (at least as good in every objective, better in one), sorted by the first objective."""
    if not isinstance(objectives, list | tuple):  # None had been a TypeError (review CR11)
        raise ConfigError("pareto takes a list of objectives, e.g. [\"time_us\", \"bytes\"]")
    objectives = [_as_objective(o) for o in objectives]
    names = [o.metric for o in objectives]
    if len(set(names)) != len(names):  # every configuration had been "the front" (probe API)
        raise ConfigError(f"objectives {', '.join(map(str, objectives))}: a metric is named "
                          "twice")
    filters = _as_filters(filters, con)
    con = _connection(con)
    try:
        return _pareto(con, objectives, filters)
    finally:
        drop_temporaries(con)


def _best(con: duckdb.DuckDBPyConnection, filters: Filters, objective: Objective) -> BestAnswer:
    src = FilteredTrials(con, filters, [objective.metric], graph_filter=False)
    if src.empty:
        return BestAnswer(objective, [], [])
    summaries = study_summaries(src, objective)
    src.canonicalise(sum(s["unfixed"] for s in summaries))
    shown = graph_ids(con, filters.graph) if filters.graph is not None else None
    studies = studies_by_key(con, summaries)
    measured = winners(con) if "measured_us" in src.columns else {}
    # under a measured metric a fixed configuration compares one GPU's studies: pooled, an
    # A100's graphs and an H100's had made one "best on h100" (probe MEASURED2)
    by_gpu = objective.metric in MEASURED_COLUMNS
    gpu_of = _measured_gpus(measured, studies) if by_gpu else {}
    fixed, fixed_values = {}, {}
    subsets: dict[str | None, list[dict[str, Any]]] = {}
    for s in summaries:
        subsets.setdefault(gpu_of.get(s["study_key"]), []).append(s)
    for gpu, subset in sorted(subsets.items(), key=lambda item: str(item[0])):
        groups, values = _fixed_configs(src, subset, objective)
        fixed.update({(*key, gpu): (dataclasses.replace(f, gpu=gpu) if by_gpu else f)
                      for key, f in groups.items()})
        fixed_values.update(values)
    out = []
    for s in summaries:
        if shown is not None and s["graph_id"] not in shown:
            continue
        study, win = studies[s["study_key"]], s["win"]
        group = fixed.get((study.algorithm, study.device, gpu_of.get(s["study_key"])))
        fixed_value = fixed_values.get(s["study_key"])
        out.append(StudyBest(
            study=study, value=win["value"], config=src.config(win), role=win["role"],
            label=win["label"], trial=win["trial"], thread_value=s["thread"],
            vs_thread=objective.gain(s["thread"], win["value"]), fixed=group,
            fixed_value=fixed_value, vs_fixed=objective.gain(fixed_value, win["value"]),
            measured_us=win.get("measured_us"), measured=measured.get(s["study_key"])))
    if not out and filters.given():
        explain_empty_filter(con, filters)
    out.sort(key=lambda b: study_sort_key(b.study))
    used = {(b.study.algorithm, b.study.device, gpu_of.get(b.study.key)) for b in out}
    return BestAnswer(objective, out, [f for k, f in sorted(fixed.items(), key=lambda i: (
        i[0][:2], str(i[0][2]))) if k in used])


def _measured_gpus(measured: Mapping[str, Any], studies: Mapping[str, Any]
                   ) -> dict[str, str | None]:
    """Per measured study, the GPU its rows name. Rows naming none are their device's, as
    calibrate and select train read them: pooled with the one GPU that the named rows of
    their (algorithm, device) give and that may be the device (they had made a fixed line
    of their own naming nothing: review CR28); None where there is no such one GPU."""
    from tuner.results.measured import measured_on

    named: dict[tuple[str, str], set[str]] = {}
    for key, win in measured.items():
        study = studies.get(key)
        if win.gpu_name and study is not None and measured_on(study.device,
                                                              win.gpu_name) is not False:
            named.setdefault((study.algorithm, study.device), set()).add(win.gpu_name)
    out: dict[str, str | None] = {}
    for key, win in measured.items():
        study = studies.get(key)
        gpus = named.get((study.algorithm, study.device), set()) if study else set()
        out[key] = win.gpu_name or (next(iter(gpus)) if len(gpus) == 1 else None)
    return out


def _fixed_configs(src: FilteredTrials, summaries: list[dict[str, Any]], objective: Objective
                   ) -> tuple[dict[tuple[str, str], FixedConfig], dict[str, float]]:
    """Per (algorithm, device) group, the configuration evaluated on every workload of the
    group (a graph with the sources its studies average, ``WORKLOAD_SQL``) with the lowest
    geometric mean of its value relative to each workload's best; and per study, that
    configuration's value there (the study's own rows, else those of the other studies of
    its workload: never a study's of other sources, which times other runs).

    Candidates are the configurations of the group's workload with the fewest rows, so only
    the rows of those configurations are aggregated."""
    con = src.con
    groups: dict[tuple[str, str], dict[str, list[dict[str, Any]]]] = {}
    for s in summaries:
        groups.setdefault((s["algorithm"], s["device"]), {}).setdefault(
            s["workload"], []).append(s)
    if not groups:
        return {}, {}
    pick = max if objective.maximize else min
    pivots, workload_best, group_workloads = [], [], []
    for (algorithm, device), workloads in groups.items():
        pivot = min(workloads, key=lambda w: (sum(s["n"] for s in workloads[w]), w))
        pivots.append((algorithm, device, pivot))
        group_workloads.append((algorithm, device, len(workloads),
                                len({s["graph_id"] for w in workloads.values() for s in w})))
        for workload, studies in workloads.items():
            workload_best.append((algorithm, device, workload,
                                  pick(s["win"]["value"] for s in studies)))
    register_rows(con, "_pivot", ["algorithm", "device", "workload"], pivots)
    register_rows(con, "_workload_best", ["algorithm", "device", "workload", "best"],
                  workload_best)
    register_rows(con, "_group_workloads", ["algorithm", "device", "workloads", "graphs"],
                  group_workloads)
    h = src.hash_sql()
    con.execute(f"""
        CREATE OR REPLACE TEMP TABLE _candidates AS
        WITH cand AS (
            SELECT DISTINCT t.algorithm, t.device, {h} AS h
            FROM {src.from_sql} JOIN _pivot p ON p.algorithm = t.algorithm
                 AND p.device = t.device AND p.workload = {WORKLOAD_SQL}
            WHERE {src.where})
        SELECT t.algorithm, t.device, {WORKLOAD_SQL} AS workload, t.study_key, c.h,
               avg({src.metric(0)}) AS v, any_value({src.row_struct()}) AS row
        FROM {src.from_sql} JOIN cand c ON c.algorithm = t.algorithm AND c.device = t.device
             AND c.h = {h}
        WHERE {src.where} GROUP BY ALL""", [*src.params, *src.params])
    ratio = "b.best / g.v" if objective.maximize else "g.v / b.best"
    chosen = row_dicts(con, f"""
        WITH g AS (SELECT algorithm, device, workload, h, avg(v) AS v FROM _candidates
                   GROUP BY ALL),
             s AS (SELECT algorithm, device, h,
                          count(CASE WHEN g.v > 0 AND b.best > 0 THEN 1 END) AS k,
                          exp(avg(CASE WHEN g.v > 0 AND b.best > 0 THEN ln({ratio}) END)) AS geo
                   FROM g JOIN _workload_best b USING (algorithm, device, workload)
                   GROUP BY ALL)
        SELECT s.algorithm, s.device, s.h, s.geo, n.graphs, n.workloads
        FROM s JOIN _group_workloads n USING (algorithm, device) WHERE s.k = n.workloads
        QUALIFY row_number() OVER (PARTITION BY algorithm, device ORDER BY s.geo, s.h) = 1""")
    if not chosen:
        return {}, {}
    register_rows(con, "_chosen", ["algorithm", "device", "h"],
                  [(c["algorithm"], c["device"], c["h"]) for c in chosen], {"h": pa.uint64()})
    values = row_dicts(con, """
        SELECT c.algorithm, c.device, c.h, c.study_key, c.workload, c.v, c.row
        FROM _candidates c JOIN _chosen USING (algorithm, device, h)""")
    params = {(v["algorithm"], v["device"], v["h"]): v["row"] for v in values}
    fixed = {(c["algorithm"], c["device"]): FixedConfig(
        c["algorithm"], c["device"], src.config(params[(c["algorithm"], c["device"], c["h"])]),
        c["graphs"], c["geo"], c["workloads"]) for c in chosen}
    own = {v["study_key"]: v["v"] for v in values}
    by_workload: dict[tuple[str, str, str], list[float]] = {}
    for v in values:
        by_workload.setdefault((v["algorithm"], v["device"], v["workload"]), []).append(v["v"])
    per_study = {}
    for s in summaries:
        if (s["algorithm"], s["device"]) in fixed:
            alike = by_workload.get((s["algorithm"], s["device"], s["workload"]))
            per_study[s["study_key"]] = own.get(s["study_key"], (
                sum(alike) / len(alike) if alike else None))
    return fixed, per_study


def _effect(con: duckdb.DuckDBPyConnection, knob: str, filters: Filters,
            objective: Objective) -> EffectAnswer:
    knob = knob.removeprefix(PARAM_PREFIX)
    src = FilteredTrials(con, filters, [objective.metric], graph_filter=True)
    if knob not in src.knobs:
        raise ConfigError(f"unknown knob {knob!r}; knobs present: "
                          f"{', '.join(src.knobs) if src.knobs else '(none: no trial rows)'}")
    if src.empty:
        return EffectAnswer(knob, objective, [])
    summaries = study_summaries(src, objective)
    src.canonicalise(sum(s["unfixed"] for s in summaries))
    if not summaries:
        if filters.given():
            explain_empty_filter(con, filters)
        return EffectAnswer(knob, objective, [])
    others = [k for k in src.knobs if k != knob]
    best_configs = {s["study_key"]: src.config(s["win"]) for s in summaries}
    register_rows(con, "_best", ["study_key", *(PARAM_PREFIX + k for k in others)],
                  [(key, *(c.params.get(k) for k in others)) for key, c in best_configs.items()],
                  src.param_types())
    at_best = " AND ".join(f'{src.param(k)} IS NOT DISTINCT FROM b."{PARAM_PREFIX}{k}"'
                           for k in others) or "true"
    sign = "-" if objective.maximize else ""
    m = src.metric(0)
    picks = row_dicts(con, f"""
        SELECT t.study_key, {src.param(knob)} AS kv, count(*) AS n,
               arg_min(struct_pack(at_best := ({at_best}), row := {src.row_struct()}),
                       (NOT ({at_best}), {sign}{m}, t.role, t.trial, t.label)) AS pick
        FROM {src.from_sql} JOIN _best b ON b.study_key = t.study_key
        WHERE {src.where} GROUP BY ALL""", src.params)
    studies = studies_by_key(con, summaries)
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
        pts = sorted(points.get(s["study_key"], []), key=lambda p: value_sort_key(p.value))
        config = best_configs[s["study_key"]]
        out.append(StudyEffect(studies[s["study_key"]], config.params.get(knob),
                               s["win"]["value"], config, pts))
    out.sort(key=lambda e: study_sort_key(e.study))
    return EffectAnswer(knob, objective, out)


def _pareto(con: duckdb.DuckDBPyConnection, objectives: list[Objective],
            filters: Filters) -> ParetoAnswer:
    if not objectives:
        raise ConfigError("pareto needs at least one objective")
    src = FilteredTrials(con, filters, [o.metric for o in objectives], graph_filter=True)
    if src.empty:
        return ParetoAnswer(objectives, [])
    k = len(objectives)
    table = con.sql(f"""
        SELECT t.study_key, {', '.join(f'{src.metric(i)} AS m{i}' for i in range(k))}
        FROM {src.from_sql} WHERE {src.where}""", params=src.params).to_arrow_table()
    if not table.num_rows:
        if filters.given():
            explain_empty_filter(con, filters)
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
    register_rows(con, "_front", ["study_key", *(f"m{i}" for i in range(k))], rows,
                  {f"m{i}": pa.float64() for i in range(k)})
    match = " AND ".join(f"{src.metric(i)} = fr.m{i}" for i in range(k))
    found = row_dicts(con, f"""
        SELECT t.study_key, t.algorithm, t.device, t.graph_id, t.graph_spec, t.space,
               t.objective, {src.row_struct()} AS row,
               [{', '.join(src.metric(i) for i in range(k))}] AS vals
        FROM {src.from_sql} JOIN _front fr ON fr.study_key = t.study_key AND {match}
        WHERE {src.where}""", src.params)
    firsts = {r["study_key"]: r for r in found}
    studies = studies_by_key(con, [{**r, "n": evaluations[key]} for key, r in firsts.items()])
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
    out.sort(key=lambda f: study_sort_key(f.study))
    return ParetoAnswer(objectives, out)
