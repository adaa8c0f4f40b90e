"""What the report plots: one DuckDB read of a results directory, then pure functions that
shape its runs into the data of each figure (best time per W, per W x chunk cell, ...)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

from simulator.errors import ConfigError
from tuner.analysis.trials import workload_text
from tuner.results.configs import canonical_params
from tuner.results.configs import config_text
from tuner.results.measured import MeasuredWinner
from tuner.results.measured import winners
from tuner.results.query import connect
from tuner.results.query import graph_ids
from tuner.results.query import graph_name
from tuner.results.query import told_apart
from tuner.results.schema import PARAM_PREFIX

# Metric columns the report reads (any that a results directory lacks read as null).
METRICS = ("time_us", "simd_efficiency", "u_a", "u_r", "me")
THREAD = "thread"
VWARP_SIZES = (1, 2, 4, 8, 16, 32)


@dataclass(frozen=True)
class Filters:
    """Which part of the results the report covers (None: everything)."""

    algorithm: str | None = None
    device: str | None = None
    graphs: tuple[str, ...] = ()


@dataclass(frozen=True)
class Run:
    """One stored evaluation, its knobs as effective values (defaults filled in)."""

    study_key: str
    role: str
    label: str | None
    state: str
    trial: int | None
    graph_id: str
    graph_spec: str
    algorithm: str
    device: str
    space: str
    objective: str
    value: float | None
    error: str | None
    params: dict[str, Any]
    time_us: float | None = None
    simd_efficiency: float | None = None
    u_a: float | None = None
    u_r: float | None = None
    me: float | None = None
    measured_us: float | None = None  # on the GPU (tune --verify K), where measured
    repeats: int = 0  # proposals of tried configurations its trial answered (counted, not run)
    # the runs it timed (sources and the seed that drew them), as `best` keeps workloads
    # apart (trials.WORKLOAD_SQL): times of other sources are not one curve's
    workload: str = ""

    @property
    def complete(self) -> bool:
        """Whether it carries metrics of its own (not failed, not a repeat)."""
        return self.state == "complete" and self.time_us is not None

    @property
    def config(self) -> tuple[tuple[str, Any], ...]:
        """The configuration's identity: its effective knobs, sorted."""
        return tuple(sorted(self.params.items()))


@dataclass(frozen=True)
class Group:
    """One (graph, algorithm, device): the unit of the per-graph figures."""

    graph_id: str
    graph_spec: str
    graph_name: str
    n: int | None
    m: int | None
    algorithm: str
    device: str
    workload: str = ""  # its runs' sources ("4 sources, seed 0"; "" where the graph has one)


@dataclass
class ResultsData:
    """Every run the report covers, with the graphs' names and sizes."""

    results: str
    runs: list[Run]
    graphs: dict[str, dict[str, Any]] = field(default_factory=dict)
    # per study (tuner.results.measured)
    measured: dict[str, MeasuredWinner] = field(default_factory=dict)
    by_group: dict[tuple[str, str, str, str], list[Run]] = field(init=False, repr=False)
    by_study: dict[str, list[Run]] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.by_group, self.by_study = {}, {}
        for r in self.runs:
            self.by_group.setdefault((r.graph_id, r.algorithm, r.device, r.workload),
                                     []).append(r)
            self.by_study.setdefault(r.study_key, []).append(r)

    def groups(self) -> list[Group]:
        """The (graph, algorithm, device, workload) groups present, by graph name then
        algorithm; a graph timed on several workloads (other sources or seeds) is a group
        each, named with its workload (its times are not one curve's)."""
        keys = sorted({(r.graph_id, r.graph_spec, r.algorithm, r.device, r.workload)
                       for r in self.runs})
        several = {k[:4] for k in keys if sum(j[:4] == k[:4] for j in keys) > 1}
        labels = self.graph_labels()
        out = []
        for gid, spec, algo, dev, work in keys:
            info = self.graphs.get(gid, {})
            name = labels.get(gid, gid)
            if (gid, spec, algo, dev) in several:
                out.append(Group(gid, spec, f"{name} ({work})", info.get("n"), info.get("m"),
                                 algo, dev, work))
            else:
                out.append(Group(gid, spec, name, info.get("n"), info.get("m"), algo, dev))
        return sorted(out, key=lambda g: (g.graph_name, g.graph_id, g.algorithm, g.device))

    def graph_labels(self) -> dict[str, str]:
        """Each graph's name, with its id where another graph has that name (files of one
        stem in two directories: their sections, titles and legends had read alike, probe
        REPORT)."""
        # every graph of the results (a --graph page's selector figure draws the others)
        return told_apart({gid: self.graphs.get(gid, {}).get("name") or gid
                           for gid in {*self.graphs, *(r.graph_id for r in self.runs)}})

    def runs_of(self, group: Group) -> list[Run]:
        """The runs of one group."""
        if group.workload:
            return self.by_group.get((group.graph_id, group.algorithm, group.device,
                                      group.workload), [])
        return [r for (gid, algo, dev, _), runs in self.by_group.items()
                if (gid, algo, dev) == (group.graph_id, group.algorithm, group.device)
                for r in runs]

    def studies(self) -> list[str]:
        """Study keys present, sorted."""
        return sorted(self.by_study)


def repeats_of(drawn: Sequence[Run]) -> int:
    """Proposals of tried configurations among trial rows: those counted on the trial that
    answered them, and (written before they were counted) those stored as a row each."""
    return sum(r.repeats for r in drawn) + sum(1 for r in drawn if r.state == "duplicate")


# -- reading ---------------------------------------------------------------------------------
def load_results(results: str | Path, filters: Filters = Filters()) -> ResultsData:
    """Read the runs of a results directory through DuckDB; a missing or empty directory, or
    filters that match nothing, are a ConfigError naming the problem."""
    from tuner.results.location import Location

    location = Location.of(results)
    if location.local and not location.local_path().exists():  # (a bucket: connect says)
        raise ConfigError(f"results directory {str(results)!r} does not exist")
    con = connect(location.text if not location.local else location.local_path())
    try:
        columns = {name for name, *_ in con.execute("DESCRIBE trials").fetchall()}
        total = con.execute("SELECT count(*) FROM trials").fetchone()[0]
        if not total:
            raise ConfigError(f"results directory {str(results)!r} holds no trial rows yet")
        graphs = _graph_rows(con)
        where, args = _where(con, filters, graphs)
        params = sorted(c for c in columns if c.startswith(PARAM_PREFIX))
        metrics = [m if m in columns else f"NULL AS {m}" for m in METRICS]
        base = ["study_key", "role", "label", "state", "trial", "graph_id", "graph_spec",
                "algorithm", "device", "space", "objective", "values[1] AS value", "error"]
        gpu = ["measured_us" if "measured_us" in columns else "NULL AS measured_us",
               "coalesce(repeats, 0)" if "repeats" in columns else "0",
               "n_sources" if "n_sources" in columns else "NULL",
               "seed" if "seed" in columns else "NULL"]
        sql = (f"SELECT {', '.join(base + metrics + params + gpu)} FROM trials {where} "
               "ORDER BY study_key, role, trial, label")
        rows = con.execute(sql, args).fetchall()
        measured = winners(con) if "measured_us" in columns else {}
    finally:
        con.close()
    if not rows:
        raise ConfigError(f"no trial rows in {str(results)!r} match {describe(filters)}")
    nbase, nmet = 13, len(METRICS)
    names = [p[len(PARAM_PREFIX):] for p in params]
    runs = []
    for row in rows:
        raw = {k: v for k, v in zip(names, row[nbase + nmet:-4], strict=True) if v is not None}
        metric = dict(zip(METRICS, row[nbase:nbase + nmet], strict=True))
        state = row[3]
        if state != "complete":
            metric = dict.fromkeys(METRICS)
        runs.append(Run(*row[:nbase], params=canonical_params(raw), **metric,
                        measured_us=row[-4] if state == "complete" else None,
                        repeats=int(row[-3]), workload=workload_text(row[-2], row[-1])))
    studies = {r.study_key for r in runs}
    return ResultsData(str(results), runs, graphs,
                       {k: w for k, w in measured.items() if k in studies})


def describe(filters: Filters) -> str:
    """The filters as the command line spells them."""
    parts = [f"--algo {filters.algorithm}" if filters.algorithm else "",
             f"--device {filters.device}" if filters.device else "",
             *(f"--graph {g}" for g in filters.graphs)]
    return " ".join(p for p in parts if p) or "no filter"


def _graph_rows(con: Any) -> dict[str, dict[str, Any]]:
    rows = con.execute("SELECT graph_id, graph_spec, name, n, m FROM graphs").fetchall()
    return {gid: {"graph_spec": spec, "name": graph_name(spec, name), "n": n, "m": m}
            for gid, spec, name, n, m in rows}


def _where(con: Any, filters: Filters, graphs: dict[str, dict[str, Any]]
           ) -> tuple[str, list[Any]]:
    clauses, args = [], []
    if filters.algorithm:
        clauses.append("algorithm = ?")
        args.append(filters.algorithm)
    if filters.device:
        clauses.append("device = ?")
        args.append(filters.device)
    if filters.graphs:
        ids = _graph_ids(con, filters.graphs, graphs)
        clauses.append(f"graph_id IN ({', '.join('?' for _ in ids)})")
        args += ids
    return ("WHERE " + " AND ".join(clauses) if clauses else ""), args


def _graph_ids(con: Any, wanted: Sequence[str], graphs: dict[str, dict[str, Any]]) -> list[str]:
    """Graph ids named by --graph (an id, a graph name, a spec as stored or as typed)."""
    ids: set[str] = set()
    for text in wanted:
        hits = graph_ids(con, text)
        if not hits:
            stored = [r[0] for r in con.execute("SELECT DISTINCT graph_id FROM trials").fetchall()]
            known = ", ".join(sorted({graphs.get(g, {}).get("name") or g for g in stored}))
            raise ConfigError(f"--graph {text!r} matches no graph in the results "
                              f"(graphs: {known})")
        ids |= hits
    return sorted(ids)


def complete(runs: Iterable[Run]) -> list[Run]:
    """The runs with metrics of their own."""
    return [r for r in runs if r.complete]


def best(runs: Iterable[Run]) -> Run | None:
    """The fastest complete run (first in input order on ties)."""
    done = complete(runs)
    return min(done, key=lambda r: r.time_us) if done else None


def thread_baseline(runs: Iterable[Run]) -> Run | None:
    """The thread-per-vertex reference (its fastest copy if several studies ran it)."""
    refs = [r for r in runs if r.role == "reference" and r.label == THREAD]
    return best(refs)


def best_fixed_vwarp(runs: Iterable[Run]) -> Run | None:
    """The best of the fixed virtual-warp references (labels ``vwarp w=...``)."""
    return best(r for r in runs if r.role == "reference" and (r.label or "").startswith("vwarp"))


def pow2_bin(value: float) -> float:
    """The power of two nearest to ``value`` on a log scale (bins a log-scaled knob)."""
    return 2.0 ** round(math.log2(value)) if value > 0 else value


# -- figure data -------------------------------------------------------------------------------
@dataclass
class WCurve:
    """Fig. 7b shape: the best vwarp time for each W, the thread baseline and each study's
    best (any mapping)."""

    points: list[tuple[int, float]]
    thread_us: float | None
    study_best: list[tuple[str, float, str]]  # (space, time_us, configuration)
    best_w: int | None = None


def time_over_w(runs: Sequence[Run]) -> WCurve | None:
    """Best time per virtual warp size over the complete vwarp runs; None without any."""
    per_w: dict[int, float] = {}
    for r in complete(runs):
        w = r.params.get("w")
        if r.params.get("mapping") == "vwarp" and w is not None:
            per_w[int(w)] = min(per_w.get(int(w), math.inf), r.time_us)
    if not per_w:
        return None
    points = sorted(per_w.items())
    thread = thread_baseline(runs)
    studies = []
    for key in sorted({r.study_key for r in runs}):
        b = best(r for r in runs if r.study_key == key)
        if b is not None:
            studies.append((b.space, b.time_us, config_text(b.params)))
    return WCurve(points, thread.time_us if thread else None, studies,
                  min(points, key=lambda p: p[1])[0])


@dataclass
class Heatmap:
    """Best time per (W, chunk) cell; chunk binned to powers of two."""

    ws: list[int]
    chunks: list[int]
    cells: dict[tuple[int, int], float]
    binned: bool


def w_chunk_cells(runs: Sequence[Run]) -> Heatmap | None:
    """Best time per (W, chunk) over the complete vwarp runs; None with fewer than two chunk
    values (nothing to compare)."""
    raw: list[tuple[int, int, float]] = []
    for r in complete(runs):
        p = r.params
        if p.get("mapping") == "vwarp" and p.get("w") is not None and p.get("chunk") is not None:
            raw.append((int(p["w"]), int(p["chunk"]), r.time_us))
    chunks = {c for _, c, _ in raw}
    binned = any(c & (c - 1) for c in chunks)
    cells: dict[tuple[int, int], float] = {}
    for w, c, t in raw:
        key = (w, int(pow2_bin(c)))
        cells[key] = min(cells.get(key, math.inf), t)
    cols = sorted({c for _, c in cells})
    if len(cols) < 2:
        return None
    return Heatmap(sorted({w for w, _ in cells}), cols, cells, binned)


@dataclass
class Curve:
    """One line of a figure: a graph's best time per x value."""

    label: str
    points: list[tuple[Any, float]]


NO_DEFER = "none"


def defer_curves(groups: Sequence[tuple[Group, Sequence[Run]]]) -> list[Curve]:
    """Per graph, the best time per defer threshold (``none``: no deferring), over the
    mappings that were run with deferring; graphs with no deferred run are left out."""
    out = []
    for group, runs in groups:
        done = complete(runs)
        mappings = {r.params.get("mapping") for r in done if "defer_threshold" in r.params}
        if not mappings:
            continue
        per: dict[Any, float] = {}
        for r in done:
            if r.params.get("mapping") in mappings:
                key = r.params.get("defer_threshold", NO_DEFER)
                per[key] = min(per.get(key, math.inf), r.time_us)
        order = sorted(per, key=lambda k: -1 if k == NO_DEFER else k)
        out.append(Curve(group.graph_name, [(k, per[k]) for k in order]))
    return out


def knob_curves(groups: Sequence[tuple[Group, Sequence[Run]]], driven: str, knob: str
                ) -> list[Curve]:
    """Per graph, the best time of the ``driven`` form per value of ``knob``, binned to powers
    of two (switch points of the temporal hybrid, partitions of the spatial one)."""
    out = []
    for group, runs in groups:
        per: dict[float, float] = {}
        for r in complete(runs):
            value = r.params.get(knob)
            if r.params.get("driven") == driven and value is not None:
                key = pow2_bin(float(value))
                per[key] = min(per.get(key, math.inf), r.time_us)
        if per:
            out.append(Curve(group.graph_name, sorted(per.items())))
    return out


@dataclass
class SimdBar:
    """One configuration's SIMD lane-step breakdown (Cheng et al.)."""

    name: str
    config: str
    time_us: float
    active: float
    u_a: float
    u_r: float

    @property
    def total(self) -> float:
        """active + U_A + U_R: 1 where the three partition the issued lane-steps."""
        return self.active + self.u_a + self.u_r


def simd_bars(runs: Sequence[Run], limit: int = 8) -> list[SimdBar]:
    """The thread baseline, the best fixed vwarp, the best overall, then the best of each
    other mapping and driven form present: each configuration once, at most ``limit``."""
    done = [r for r in complete(runs) if r.simd_efficiency is not None
            and r.u_a is not None and r.u_r is not None]
    picks: list[tuple[str, Run | None]] = [
        ("thread", thread_baseline(done)),
        ("best fixed vwarp", best_fixed_vwarp(done)),
        ("best overall", best(done)),
    ]
    for mapping in sorted({r.params.get("mapping") for r in done} - {None}):
        picks.append((f"best {mapping} mapping", best(r for r in done
                                              if r.params.get("mapping") == mapping)))
    for form in sorted({r.params.get("driven") for r in done} - {None}):
        picks.append((f"best {form}-driven", best(r for r in done
                                                  if r.params.get("driven") == form)))
    seen, out = set(), []
    for name, run in picks:
        if run is None or run.config in seen:
            continue
        seen.add(run.config)
        if name == "best fixed vwarp" and run.label:
            name = f"best fixed {run.label}"
        out.append(SimdBar(name, config_text(run.params), run.time_us, run.simd_efficiency,
                           run.u_a, run.u_r))
    return out[:limit]


@dataclass
class History:
    """One study's optimisation history: objective per trial number."""

    study_key: str
    space: str
    metric: str
    maximize: bool
    trials: list[tuple[int, float, str]]  # (trial, value, state) of complete and repeats
    failed: list[int]
    thread: float | None
    best_vwarp: tuple[str, float] | None

    def best_so_far(self) -> list[tuple[int, float]]:
        """The running best value after each trial."""
        out, cur = [], None
        for trial, value, _ in sorted(self.trials):
            if cur is None or (value > cur if self.maximize else value < cur):
                cur = value
            out.append((trial, cur))
        return out


def histories(runs: Sequence[Run]) -> list[History]:
    """The history of every study among ``runs`` that drew at least one trial."""
    out = []
    studies: dict[str, list[Run]] = {}
    for r in runs:
        studies.setdefault(r.study_key, []).append(r)
    for key in sorted(studies):
        mine = studies[key]
        drawn = [r for r in mine if r.role == "trial" and r.trial is not None]
        if not drawn:
            continue
        objective = mine[0].objective.split(",")[0]
        metric, _, direction = objective.partition(":")
        points = [(r.trial, r.value, r.state) for r in drawn
                  if r.state in ("complete", "duplicate") and r.value is not None]
        refs = [r for r in mine if r.role == "reference" and r.state == "complete"
                and r.value is not None]
        thread = next((r.value for r in refs if r.label == THREAD), None)
        vw = [(r.label, r.value) for r in refs if (r.label or "").startswith("vwarp")]
        pick = max if direction == "max" else min
        out.append(History(key, mine[0].space, metric, direction == "max", sorted(points),
                           sorted(r.trial for r in drawn if r.state == "failed"), thread,
                           pick(vw, key=lambda lv: lv[1]) if vw else None))
    return out


@dataclass
class StudyLine:
    """One line of the report's summary table."""

    study_key: str
    graph: str
    algorithm: str
    device: str
    space: str
    objective: str
    trials: int  # configurations tried (a trial answered from a reference's row among them)
    repeats: int
    failed: int
    best_time_us: float | None
    best_config: str
    best_label: str | None
    thread_us: float | None
    best_vwarp_us: float | None
    best_measured_us: float | None = None  # the best configuration's time on the GPU
    measured: MeasuredWinner | None = None  # the study's measured winner (tune --verify K)

    @property
    def speedup(self) -> float | None:
        """Thread time over best time (>1: faster than the baseline)."""
        return _over(self.thread_us, self.best_time_us)

    @property
    def speedup_vwarp(self) -> float | None:
        """Best fixed virtual warp's time over best time (>1: the search found better)."""
        return _over(self.best_vwarp_us, self.best_time_us)


def _over(base: float | None, value: float | None) -> float | None:
    return base / value if base and value else None


def study_lines(data: ResultsData) -> list[StudyLine]:
    """Per study: trials drawn, failures, the best time, its configuration, the baseline."""
    # by the study's own group: a graph timed on several workloads is named with each
    # (keyed by graph alone, one study's workload had labelled every study of the graph)
    names = {(g.graph_id, g.algorithm, g.device, g.workload): g.graph_name
             for g in data.groups()}
    out = []
    for key in data.studies():
        mine = data.by_study[key]
        first = mine[0]
        group = (first.graph_id, first.algorithm, first.device)
        b = best(mine)
        thread = thread_baseline(mine)
        fixed = best_fixed_vwarp(mine)
        drawn = [r for r in mine if r.role == "trial"]
        out.append(StudyLine(
            key, names.get((*group, first.workload)) or names.get((*group, ""), first.graph_spec),
            first.algorithm, first.device,
            first.space, first.objective, len({r.config for r in drawn}),
            repeats_of(drawn),
            sum(1 for r in mine if r.state == "failed"),
            b.time_us if b else None, config_text(b.params) if b else "",
            b.label if b is not None and b.role == "reference" else None,
            thread.time_us if thread else None, fixed.time_us if fixed else None,
            b.measured_us if b else None, data.measured.get(key),
        ))
    return out
