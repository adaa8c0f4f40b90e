"""Tuning from Python: what ``warpsweep tune`` and ``warpsweep sweep`` do, as two functions.

>>> from tuner.api import figures, load_results, tune
>>> result = tune("rmat:scale=10,seed=1", "bfs", trials=20, workers=0, results="res")
>>> best = result.studies[0].best[0]          # a TrialRecord: .params, .values, .metrics
>>> summary = result.to_json()                # the summary `warpsweep tune --json` prints
>>> frame = result.to_pandas()                # its studies' rows: knobs and metrics as columns
>>> frame = load_results("res")               # every trial row of a results directory
>>> figs = figures("res")                     # the report's figures, matplotlib Figures by title

Both check every input before anything runs (a ``ConfigError`` or ``GraphError`` names the
problem), resume a study already in ``results`` and return its summary.
"""

from __future__ import annotations

import math
import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

import numpy as np

from search_spaces.loader import load_space
from simulator.errors import ConfigError
from simulator.errors import WarpsweepError
from tuner.env import git_commit
from tuner.env import warpsweep_version
from tuner.results.damaged import scanning
from tuner.results.damaged import verify_trials
from tuner.results.location import Location
from tuner.results.records import TrialRecord
from tuner.tuning.plan import RunResult
from tuner.tuning.plan import check_spec
from tuner.tuning.plan import load_spaces
from tuner.tuning.plan import run_studies
from tuner.tuning.progress import best_fixed_vwarp
from tuner.tuning.spec import Objective
from tuner.tuning.spec import StudySpec
from tuner.tuning.spec import StudySummary
from tuner.tuning.stopping import sigterm_interrupts
from tuner.tuning.sweep import load_sweep

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

DEFAULT_RESULTS = "./warpsweep-results"


@dataclass
class TuneResult:
    """The studies a tune or sweep ran, best configuration first, and the run's figures."""

    studies: list[StudySummary]
    results: str
    evaluations: int
    elapsed_s: float
    executor: str
    busy_fraction: float
    # a sweep's studies stopped (--timeout, a stop) before they began: "GRAPH ALGO DEVICE SPACE"
    not_begun: tuple[str, ...] = ()

    @classmethod
    def of(cls, run: RunResult, results: str | Path,
           planned: list[StudySpec] | None = None) -> TuneResult:
        """From the runner's result (``planned``: a sweep's specs, to name those not begun)."""
        st = run.stats
        begun = {s.spec for s in run.summaries}
        not_begun = tuple(f"{p.graph} {p.algorithm} {p.device} {p.space}"
                          for p in planned or () if p not in begun)
        # a local directory as it was when the run ended: after a chdir, to_pandas had read
        # another directory holding the same study (probe API2)
        location = Location.of(str(results))
        where = str(location.local_path().resolve()) if location.local else str(results)
        return cls(run.summaries, where, st.evaluations, st.elapsed_s, run.executor,
                   st.busy_fraction, not_begun)

    def to_pandas(self, duplicates: bool = False) -> pd.DataFrame:
        """The rows of this run's studies as ``load_results`` gives them now (every trial and
        reference of each study, those of earlier sessions of a resumed study too, and of
        later ones: the directory's rows when called, not a copy taken when the run ended)."""
        frame = load_results(self.results, duplicates=duplicates)
        keys = [s.key for s in self.studies]
        return frame[frame["study_key"].isin(keys)].reset_index(drop=True)

    def to_json(self) -> dict[str, Any]:
        """A JSON-able summary (what ``--json`` prints)."""
        return {
            "warpsweep_version": warpsweep_version(), "git_commit": git_commit(),
            "results": self.results, "evaluations": self.evaluations,
            "elapsed_s": round(self.elapsed_s, 3), "executor": self.executor,
            "workers_busy": round(self.busy_fraction, 3),
            "studies": [study_json(s) for s in self.studies],
            "not_begun": list(self.not_begun),
        }


def study_json(s: StudySummary) -> dict[str, Any]:
    """One study's summary as JSON: identity, counts, ranked configurations, baselines."""
    spec, obj, g = s.spec, s.spec.objective, s.graph
    thread = s.references.get("thread")
    base = thread.values[0] if thread is not None and thread.state == "complete" else None
    fixed = best_fixed_vwarp(s)
    best = s.best[0].values[0] if s.best else None
    return {
        "key": s.key,
        "graph": {"spec": g.spec, "graph_id": g.graph_id, "name": g.name, "n": g.n, "m": g.m}
        if g is not None else {"spec": spec.graph},
        "algorithm": spec.algorithm, "device": spec.device, "space": s.space,
        "sampler": spec.sampler, "objective": str(obj), "sources": s.n_sources,
        "seed": spec.seed, "budget": s.budget, "tried": s.done, "evaluated": s.evaluations,
        "failed": s.failed, "repeats": s.duplicates, "complete": s.complete,
        # the table's words: configurations tried, evaluations (references included)
        "configurations": s.done, "evaluations": s.total_evaluations,
        "common_failure": ({"reason": s.common_failure[0], "count": s.common_failure[1]}
                           if s.common_failure else None),
        "best": [_ranked(i, r, obj) for i, r in enumerate(s.best, 1)],
        # how many ``best`` is the first of (--top cuts it): the ranking's length, or the
        # Pareto front's for several objectives (a front.json had held 5 of 12 unsaid)
        "ranked": len(s.ranked) or len(s.best),
        "best_is": ("the Pareto front" if len(obj.metrics) > 1 else "the ranking")
        + (f", its first {len(s.best)} (--top)" if len(s.best) < (len(s.ranked) or len(s.best))
           else ""),
        "thread": base,
        "best_fixed_vwarp": {"label": fixed.label, "value": fixed.values[0]} if fixed else None,
        "speedup_vs_thread": _speedup(obj, base, best),
        "speedup_vs_best_fixed_vwarp": _speedup(obj, fixed.values[0] if fixed else None, best),
    }


def _ranked(rank: int, r: TrialRecord, obj: Objective) -> dict[str, Any]:
    return {
        "rank": rank, "role": r.role, "trial": r.trial, "label": r.label,
        "values": dict(zip(obj.metrics, r.values, strict=True)), "params": r.params,
        "time_us": (r.metrics or {}).get("time_us"),
    }


def _speedup(obj: Objective, base: float | None, value: float | None) -> float | None:
    if base is None or value is None or not base or not value:
        return None
    return base / value if obj.directions[0] == "minimize" else value / base


def _plain(value: Any) -> Any:
    """A numpy scalar as the Python number it holds (``trials=np.int64(2)``, as ``range`` or
    a DataFrame gives them: an int in all but type; ``references=np.False_`` had been refused
    as "a bool", ``timeout=np.int64(30)`` as "an int64"); anything else as it is, for
    ``_check_types``."""
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    return float(value) if isinstance(value, np.floating) else value


def _check_types(**args: Any) -> None:
    """Arguments of the wrong type are a ConfigError naming the argument, not a TypeError deep
    inside (or, worse, a silent reading: ``results=None`` is not the directory ``./None``,
    ``trials=2.5`` not 2, ``references="no"`` not True)."""
    def is_int(v: Any) -> bool:
        return isinstance(v, int) and not isinstance(v, bool)

    checks = {
        "trials": lambda v: v is None or is_int(v), "sources": is_int, "seed": is_int,
        "workers": lambda v: v is None or is_int(v),
        "timeout": lambda v: v is None or (isinstance(v, (int, float))
                                           and not isinstance(v, bool) and not math.isnan(v)),
        "results": lambda v: isinstance(v, (str, os.PathLike)),
        "sweep_file": lambda v: isinstance(v, (str, os.PathLike)),
        "algorithm": lambda v: isinstance(v, str),
        "device": lambda v: isinstance(v, (str, os.PathLike)),  # a preset or a device file
        "optional_algorithm": lambda v: v is None or isinstance(v, str),
        "optional_device": lambda v: v is None or isinstance(v, (str, os.PathLike)),
        "graphs": lambda v: (isinstance(v, (list, tuple))
                             and all(isinstance(g, str) for g in v)),
        "duplicates": lambda v: isinstance(v, bool), "selector": lambda v: isinstance(v, bool),
        "space": lambda v: isinstance(v, (str, os.PathLike)),
        "sampler": lambda v: isinstance(v, str), "objective": lambda v: isinstance(v, str),
        "address": lambda v: v is None or isinstance(v, str),
        "references": lambda v: isinstance(v, bool), "verbose": lambda v: isinstance(v, bool),
        "deterministic": lambda v: isinstance(v, bool),
        "progress": lambda v: isinstance(v, bool) or v in ("bar", "log", "off"),
    }
    wanted = {"device": "a preset's name or a device file's path (a Device object: write it "
                        "to a .toml file; results name devices by name)",
              "graph": "a graph spec"}
    for name, value in args.items():
        if not checks[name](value):
            shown = name.removeprefix("optional_")
            kind = type(value).__name__
            text = repr(value) if len(repr(value)) <= 80 else f"<{kind}>"
            raise ConfigError(f"{shown}={text}: not a valid value for `{shown}` "
                              f"({'an' if kind[0] in 'aeiou' else 'a'} {kind})"
                              + (f"; give {wanted[shown]}" if shown in wanted else ""))


def tune(graph: str, algorithm: str = "bfs", device: str = "h100", space: str = "vwarp",
         trials: int | None = None, sampler: str = "tpe", objective: str = "time_us",
         sources: int = 4, seed: int = 0, references: bool = True,
         results: str | Path = DEFAULT_RESULTS, workers: int | None = 0,
         address: str | None = None, timeout: float | None = None,
         progress: bool | str = False, verbose: bool = False,
         deterministic: bool = False) -> TuneResult:
    """Tune one (graph, algorithm, device) over a search space; resumes the study if
    ``results`` holds it. ``workers=0`` evaluates in this process (None: in this process,
    handing over to a local Ray once the work left is worth its start-up; with ``address``,
    the default runs on that Ray cluster, N caps the evaluations in flight);
    ``deterministic`` with ``workers`` N tells the sampler the results in the order it asked
    for them, so that a seed gives the same trials on every run."""
    trials, sources, seed, workers, timeout = (
        _plain(v) for v in (trials, sources, seed, workers, timeout))
    references, verbose, deterministic, progress = (
        _plain(v) for v in (references, verbose, deterministic, progress))
    workers = _on_the_cluster(workers, address)
    _check_types(algorithm=algorithm, device=device, space=space, trials=trials,
                 sampler=sampler, objective=objective, sources=sources, seed=seed,
                 references=references, results=results, workers=workers, address=address,
                 timeout=timeout, progress=progress, verbose=verbose,
                 deterministic=deterministic)
    if isinstance(space, os.PathLike):
        load_space(Path(space))  # a path is a file, never a shipped space's name
    spec = check_spec(StudySpec(
        graph=graph, algorithm=algorithm, device=str(device), space=str(space), trials=trials,
        sampler=sampler, objective=Objective.parse(objective), sources=sources, seed=seed,
        references=references,
    ))
    _read_graph_files([spec], address, workers)  # a bad file leaves no study behind
    # a damaged results file is named, not a bare Arrow error; SIGTERM stops the run as
    # Ctrl-C does, every finished evaluation saved (it had ended a script at once; probe API)
    with scanning(results), sigterm_interrupts():
        run = run_studies([spec], load_spaces([spec]), results, workers=workers,
                          address=address, timeout=timeout, progress=progress, desc="tune",
                          verbose=verbose, deterministic=deterministic)
    return TuneResult.of(run, results, [spec])  # a timeout before it opened names it


def _on_the_cluster(workers: int | None, address: str | None) -> int | None:
    """``workers`` as the run takes it: an ``address`` names where to evaluate, so the
    in-process default (0) leaves the cluster uncapped (the CLI, whose --workers has no
    default, refuses --workers 0 with --address)."""
    return None if address is not None and workers == 0 else workers


def sweep(sweep_file: str | Path, results: str | Path = DEFAULT_RESULTS,
          workers: int | None = 0, address: str | None = None, timeout: float | None = None,
          progress: bool | str = False, verbose: bool = False,
          deterministic: bool = False) -> TuneResult:
    """Run every study of a sweep file (graphs x algorithms x devices x spaces); ``workers``,
    ``address`` and ``deterministic`` as ``tune`` says."""
    workers, timeout, progress, verbose, deterministic = (
        _plain(v) for v in (workers, timeout, progress, verbose, deterministic))
    workers = _on_the_cluster(workers, address)
    _check_types(sweep_file=sweep_file, results=results, workers=workers, address=address,
                 timeout=timeout, progress=progress, verbose=verbose,
                 deterministic=deterministic)
    specs = [check_spec(s) for s in load_sweep(sweep_file)]
    _read_graph_files(specs, address, workers)
    with scanning(results), sigterm_interrupts():
        run = run_studies(specs, load_spaces(specs), results, workers=workers,
                          address=address, timeout=timeout, progress=progress,
                          desc=Path(sweep_file).stem, verbose=verbose,
                          deterministic=deterministic)
    return TuneResult.of(run, results, specs)


def _read_graph_files(specs: list[StudySpec], address: str | None = None,
                      workers: int | None = 0) -> None:
    """Read each graph file of a tune or sweep once before any study runs (into the graph
    cache, so its studies load it from there): a file that does not parse is an error before
    anything is written, not a study journal left with no rows (which readers then ask to
    resume), nor one after a sweep's earlier studies have run. A generated graph is only
    held to its memory estimate (probe SPACE: one too large had been refused as its study
    began, leaving such a journal), where this machine builds it: not where ``workers`` run on
    a cluster (``address``, ``RAY_ADDRESS``), which may hold more than the driver does."""
    from simulator.graph_spec import parse_spec
    from simulator.load import load_graph
    from simulator.sizes import check_spec

    seen: set[str] = set()
    for spec in specs:
        if spec.graph in seen:
            continue
        seen.add(spec.graph)
        try:
            parsed = parse_spec(spec.graph)
            if parsed.is_file:
                load_graph(spec.graph)
            elif workers == 0 or (address is None and not os.environ.get("RAY_ADDRESS")):
                check_spec(parsed)
        except WarpsweepError as exc:
            origin = spec.graph_origin or spec.origin  # its graph entry's line
            raise type(exc)(f"{origin + ': ' if origin else ''}{exc}") from None


def load_results(results: str | Path = DEFAULT_RESULTS,
                 duplicates: bool = False) -> pd.DataFrame:
    """Every trial row of a results directory (or URI) as a pandas DataFrame: one row per
    evaluation, each knob a column by its name (``w``, ``chunk``, ...: its effective value,
    missing where it does not apply), each metric a column (``time_us``, ...), and ``graph``
    the graph's name. Read through the store, so a damaged file is an error naming it, never
    values read wrong. ``duplicates``: also the ``duplicate`` rows, which repeat an earlier
    evaluation's figures (left out by default, so that means over rows count each
    configuration once)."""
    import pandas as pd
    import pyarrow as pa
    import pyarrow.compute as pc

    from simulator.result import METRICS
    from tuner.results.measured import MEASURED_COLUMNS
    from tuner.results.measured import measured_keys
    from tuner.results.measured import read_measured_rows
    from tuner.results.query import connect
    from tuner.results.query import graph_name
    from tuner.results.schema import PARAM_PREFIX
    from tuner.results.schema import PARAM_TYPES
    from tuner.results.schema import metric_column
    from tuner.results.schema import param_column
    from tuner.results.schema import reserved_names
    from tuner.results.store import check_readable
    from tuner.results.store import read_graphs
    from tuner.results.store import read_trials

    duplicates = _plain(duplicates)
    _check_types(results=results, duplicates=duplicates)
    with scanning(results):
        check_readable(results)
        verify_trials(results)  # an edited row is refused, as every reader refuses it
        # and results the rows lack said, as every reader says them, at the caller's line
        # (probe API: a notebook had computed on partial rows without a word)
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            connect(results).close()
        for warning in said:
            warnings.warn(warning.message, warning.category, stacklevel=2)
        trials = read_trials(results)
        graphs = read_graphs(results, columns=["graph_id", "graph_spec", "name"])
        measured = measured_keys(read_measured_rows(Location.of(os.fspath(results))))
    if not duplicates and trials.num_rows:
        trials = trials.filter(pc.not_equal(trials.column("state"), "duplicate"))
    # the GPU times the ``trials`` view joins (``tune --verify``): the frame had lacked them
    # (probe API2)
    found = {(k, t, label): (us, kernel) for k, t, label, us, kernel in zip(
        *(measured.column(c).to_pylist() for c in measured.column_names), strict=True)}
    joined = [found.get(key, (None, None)) for key in zip(
        *(trials.column(c).to_pylist() for c in ("study_key", "trial", "label")), strict=True)]
    for i, column in enumerate(MEASURED_COLUMNS):
        if column not in trials.column_names:
            trials = trials.append_column(column, pa.array([j[i] for j in joined], pa.float64()))
    nullable = {pa.int64(): pd.Int64Dtype(), pa.bool_(): pd.BooleanDtype()}
    frame = trials.to_pandas(types_mapper=nullable.get)
    if frame.empty:  # no rows, no columns of knobs or metrics: groupby("w") had a KeyError
        for knob, kind in PARAM_TYPES.items():
            column = param_column(knob)
            if column not in frame:  # the dtypes rows give them (nullable, as mapped above)
                dtype = "str" if pa.types.is_string(kind) else nullable.get(
                    kind, kind.to_pandas_dtype())
                frame[column] = pd.Series(dtype=dtype)
        for metric in METRICS:
            if metric_column(metric) not in frame:
                frame[metric_column(metric)] = pd.Series(dtype="float64")
    taken = reserved_names() | set(frame.columns)
    frame = frame.rename(columns={
        c: c[len(PARAM_PREFIX):] for c in frame.columns
        if c.startswith(PARAM_PREFIX) and c[len(PARAM_PREFIX):] not in taken})
    names = {gid: graph_name(spec, name) for gid, spec, name in zip(
        *(graphs.column(c).to_pylist() for c in ("graph_id", "graph_spec", "name")),
        strict=True)}
    shown = {gid: names.get(gid) or graph_name(spec, None) or spec
             for gid, spec in zip(frame["graph_id"], frame["graph_spec"], strict=True)}
    # two graphs of one name (files of one stem in two directories) had been one group in
    # a groupby("graph"): such a name carries its graph's id
    ids_of: dict[str, set[str]] = {}
    for gid, name in shown.items():
        ids_of.setdefault(name, set()).add(gid)
    frame.insert(frame.columns.get_loc("graph_id"), "graph", pd.Series([
        shown[gid] if len(ids_of[shown[gid]]) == 1 else f"{shown[gid]} ({gid})"
        for gid in frame["graph_id"]], index=frame.index, dtype=object))
    return frame


def figures(results: str | Path = DEFAULT_RESULTS, algorithm: str | None = None,
            device: str | None = None, graphs: tuple[str, ...] = (),
            selector: bool = False) -> dict[str, Figure]:
    """The figures ``warpsweep report`` draws from ``results``, as matplotlib Figures by
    title (nothing written); ``algorithm``, ``device`` (a name or a device file) and
    ``graphs`` (names, specs or ids) filter as the report's options do, ``selector`` adds the
    selector's figures (it trains models)."""
    from tuner.analysis.report import report_figures
    from tuner.analysis.report_data import Filters
    from tuner.tuning.plan import filter_device

    selector = _plain(selector)
    _check_types(results=results, optional_algorithm=algorithm, optional_device=device,
                 graphs=graphs, selector=selector)
    if device is not None:  # a device file as report --device reads it (review CR28)
        device = filter_device(str(device), str(results))
    with scanning(results):
        return report_figures(results, Filters(algorithm, device, tuple(graphs)), selector)
