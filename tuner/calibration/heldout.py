"""Held-out judgement of a calibrated model, with every modelling choice made inside the fold.

Leave-one-graph-out (LOGO) refits the thetas without the judged graph, but the choices around
the fit (the bounds' norm, the fit mode, device switches that change the simulation itself)
are just as much fitted to data: picked by looking at LOGO's outcome on the same graphs, they
make that outcome in-sample. Nested LOGO makes each choice again inside each outer fold, by an
inner cross-validation over that fold's training graphs alone, then fits the chosen model on
them and predicts the held-out graph. Nothing about the held-out graph's measured times reaches
its prediction (``tests/test_heldout.py`` perturbs them to check).

The inner criterion is fixed here, before any result is seen: the mean log pick regret over
the inner folds' held-out (algorithm, graph) groups (what the figures judge), ties broken by
the higher median Spearman rho.
"""

from __future__ import annotations

import dataclasses
import math
import multiprocessing
from collections.abc import Callable
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

import numpy as np

from simulator.device import Device
from simulator.errors import ConfigError
from tuner.calibration.calibrate import Measured
from tuner.calibration.calibrate import Parts
from tuner.calibration.calibrate import fit
from tuner.calibration.calibrate import predict

FITS = ("launch", "relative", "absolute", "none")


@dataclass(frozen=True)
class Choice:
    """One way to build the calibrated model: device fields that change the simulation (it is
    simulated again with them), the norm a launch takes of its bounds, and the fit mode
    (``launch``: the kernel parts fitted to per-launch kernel times; ``relative`` or
    ``absolute``: to the runs' totals, as ``tuner.calibration.calibrate.fit`` says; ``none``:
    no fit, the base device as it is, the null model a fit has to beat); ``own_rows``: each
    algorithm's rows predicted by a fit of that algorithm's rows alone (``calibrate
    --algorithms A``), else by one fit of every row (a fit of totals only: not every
    algorithm's launches are timed)."""

    simulation: tuple[tuple[str, object], ...] = ()
    norm: float = math.inf
    fit: str = "launch"
    own_rows: bool = False

    def __post_init__(self) -> None:
        if self.fit not in FITS:
            raise ConfigError(f"fit mode {self.fit!r}: expected one of {FITS}")
        if self.own_rows and self.fit not in ("relative", "absolute"):
            raise ConfigError(f"a fit of each algorithm's own rows is a fit of the runs' "
                              f"totals (relative or absolute), not {self.fit!r}")
        if not self.norm >= 1:
            raise ConfigError(f"bounds norm {self.norm}: must be >= 1 (inf: the maximum)")

    def device(self, base: Device) -> Device:
        """``base`` with this choice's simulation fields and norm."""
        return dataclasses.replace(base, bounds_norm=self.norm, **dict(self.simulation))

    @property
    def label(self) -> str:
        norm = "max" if math.isinf(self.norm) else f"{self.norm:g}-norm"
        sim = "".join(f", {k}={str(v).lower()}" for k, v in self.simulation)
        fitted = "not fitted (the base device)" if self.fit == "none" else f"{self.fit} fit"
        rows = " of each algorithm's own rows" if self.own_rows else ""
        return f"{fitted}{rows}, {norm}{sim}"


def choices(simulations: Sequence[tuple[tuple[str, object], ...]], norms: Sequence[float],
            fits: Sequence[str], own_rows: bool = False) -> list[Choice]:
    """Every combination of the given simulation variants, norms and fit modes, and
    (``own_rows``) of those simulations and norms with relative and absolute fits of each
    algorithm's own rows."""
    out = [Choice(s, float(n), f) for s in simulations for n in norms for f in fits]
    if own_rows:
        out += [Choice(s, float(n), f, own_rows=True) for s in simulations for n in norms
                for f in fits if f in ("relative", "absolute")]
    return out


# ------------------------------------------------------------------------------ scoring


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman's rho (scipy), NaN with fewer than 3 points or a constant side."""
    from scipy.stats import spearmanr

    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return float("nan")
    return float(spearmanr(x, y).statistic)


def regret(predicted: np.ndarray, measured: np.ndarray) -> tuple[float, int]:
    """Measured time of the predicted-fastest configuration over the best measured time, and
    that configuration's index; exact ties in the prediction count against it (the worst of
    the tied configurations is what a user may get)."""
    tied = np.flatnonzero(predicted == predicted.min())
    pick = int(tied[np.argmax(measured[tied])])
    return float(measured[pick] / measured.min()), pick


def groups_of(measured: Sequence[Measured]) -> dict[tuple[str, str], np.ndarray]:
    """Row indices of each (algorithm, graph)."""
    out: dict[tuple[str, str], list[int]] = {}
    for i, m in enumerate(measured):
        out.setdefault((m.algorithm, m.graph), []).append(i)
    return {k: np.array(v) for k, v in out.items()}


def selection_score(pred_us: np.ndarray, measured: Sequence[Measured],
                    rows: np.ndarray) -> tuple[float, float]:
    """The inner criterion on ``rows`` (lower is better): mean log pick regret over their
    (algorithm, graph) groups, then minus the median rho."""
    times = np.array([m.time_us for m in measured])
    log_regrets, rhos = [], []
    for idx in groups_of([measured[i] for i in rows]).values():
        at = rows[idx]
        log_regrets.append(math.log(regret(pred_us[at], times[at])[0]))
        rhos.append(spearman(pred_us[at], times[at]))
    rhos = [r for r in rhos if not math.isnan(r)]
    return float(np.mean(log_regrets)), -float(np.median(rhos)) if rhos else 0.0


# ------------------------------------------------------------------------------ fitting


@dataclass(frozen=True)
class Data:
    """What every fit reads: the measured rows, each simulation variant's parts of them (same
    order), their per-launch kernel times (None where not measured) and the base device."""

    measured: list[Measured]
    parts: dict[tuple[tuple[str, object], ...], list[Parts]]
    launch_us: list[np.ndarray | None] | None
    base: Device

    def supports(self, choice: Choice) -> bool:
        return choice.simulation in self.parts and (
            choice.fit != "launch" or self.launch_us is not None)


def fit_predict(data: Data, choice: Choice, train: np.ndarray, test: np.ndarray,
                starts: int = 3) -> tuple[np.ndarray, dict[str, float]]:
    """The predicted times (us) of the ``test`` rows by ``choice`` fitted on the ``train``
    rows alone, and the fitted thetas."""
    if choice.own_rows:
        return _fit_predict_own_rows(data, choice, train, test, starts)
    parts = data.parts[choice.simulation]
    device = choice.device(data.base)
    if choice.fit == "none":
        cycles = predict([parts[i] for i in test], None, choice.norm)
        return np.array([device.us(c) for c in cycles]), {}
    launch_us = None
    if choice.fit == "launch":
        launch_us = [data.launch_us[i] for i in train]
    calibration = fit([parts[i] for i in train], [data.measured[i] for i in train], device,
                      starts=starts, relative=choice.fit == "relative", launch_us=launch_us)
    cycles = predict([parts[i] for i in test], calibration.thetas, choice.norm)
    return np.array([device.us(c) for c in cycles]), calibration.thetas


def _fit_predict_own_rows(data: Data, choice: Choice, train: np.ndarray, test: np.ndarray,
                          starts: int) -> tuple[np.ndarray, dict[str, float]]:
    """``fit_predict`` of a choice of ``own_rows``: each algorithm of the ``test`` rows by a fit
    of that algorithm's ``train`` rows; the thetas of the last."""
    algorithm_of = np.array([m.algorithm for m in data.measured])
    pred, thetas = np.full(test.size, np.nan), {}
    whole = dataclasses.replace(choice, own_rows=False)
    for algorithm in dict.fromkeys(algorithm_of[test].tolist()):
        own_train = train[algorithm_of[train] == algorithm]
        if not own_train.size:
            raise ConfigError(f"a fit of {algorithm}'s own rows: none to fit outside the "
                              "judged graphs")
        at = algorithm_of[test] == algorithm
        pred[at], thetas = fit_predict(data, whole, own_train, test[at], starts)
    return pred, thetas


def graph_folds(graphs: Sequence[str], k: int, seed: int) -> list[list[str]]:
    """``graphs`` dealt into ``k`` folds (at most one a graph) in a seeded shuffled order."""
    order = sorted(graphs)
    np.random.default_rng(seed).shuffle(order)
    k = max(1, min(k, len(order)))
    return [order[i::k] for i in range(k)]


_DATA: Data | None = None  # the pool's workers read it (forked): not pickled per task


def _task(args: tuple[Choice, np.ndarray, np.ndarray, int]
          ) -> tuple[np.ndarray, dict[str, float]]:
    choice, train, test, starts = args
    return fit_predict(_DATA, choice, train, test, starts)


def _one_blas_thread() -> None:
    """A worker's BLAS runs on one thread: ``jobs`` processes of as many threads each (the
    fit's least squares) oversubscribe the cores several times over."""
    from threadpoolctl import threadpool_limits

    threadpool_limits(1)


def fit_predict_all(tasks: list[tuple[Choice, np.ndarray, np.ndarray, int]], data: Data,
                    jobs: int = 1) -> list[tuple[np.ndarray, dict[str, float]]]:
    """``fit_predict`` of every (choice, train, test, starts) task, in order, in ``jobs``
    processes."""
    global _DATA
    _DATA = data
    try:
        if jobs <= 1 or len(tasks) <= 1:
            return [_task(t) for t in tasks]
        context = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(max_workers=jobs, mp_context=context,
                                 initializer=_one_blas_thread) as pool:
            return list(pool.map(_task, tasks, chunksize=1))
    finally:
        _DATA = None


@dataclass(frozen=True)
class Selection:
    """What the inner cross-validation over ``graphs`` chose for each algorithm
    (``by_algorithm``: one choice for all of them, or one each where chosen per algorithm), and
    every candidate's score (``selection_score``) per scope: ``"all"`` (every algorithm's
    groups) and, where chosen per algorithm, each algorithm's."""

    graphs: tuple[str, ...]
    by_algorithm: dict[str, Choice]
    scores: dict[str, dict[Choice, tuple[float, float]]]

    @property
    def chosen(self) -> Choice:
        """The one choice made for every algorithm (ValueError where they differ)."""
        distinct = set(self.by_algorithm.values())
        if len(distinct) != 1:
            raise ValueError("the algorithms' choices differ: see by_algorithm")
        return distinct.pop()

    def score(self, algorithm: str) -> tuple[float, float]:
        """The chosen candidate's score in the scope it was chosen in."""
        scope = algorithm if algorithm in self.scores else "all"
        return self.scores[scope][self.by_algorithm[algorithm]]


def _inner_tasks(data: Data, candidates: Sequence[Choice], graphs: Sequence[str],
                 inner_folds: int, starts: int, seed: int) -> list[tuple]:
    rows_of = {g: np.flatnonzero([m.graph == g for m in data.measured]) for g in graphs}
    tasks = []
    for choice in candidates:
        for fold in graph_folds(graphs, inner_folds, seed):
            test = np.concatenate([rows_of[g] for g in fold])
            train = np.concatenate([rows_of[g] for g in graphs if g not in fold])
            tasks.append((choice, train, test, starts))
    return tasks


def _select(data: Data, candidates: Sequence[Choice], graphs: Sequence[str],
            tasks: list[tuple], preds: list[np.ndarray], per_algorithm: bool) -> Selection:
    """The best candidate from its inner folds' predictions (``tasks`` in candidate order):
    on every algorithm's groups together, or on each algorithm's own (``per_algorithm``; an
    algorithm without rows in ``graphs`` takes the choice made on all)."""
    per_choice = len(tasks) // len(candidates)
    algorithm_of = np.array([m.algorithm for m in data.measured])
    algorithms = sorted(set(algorithm_of.tolist()))
    scores: dict[str, dict[Choice, tuple[float, float]]] = {}
    for c, choice in enumerate(candidates):
        pred = np.full(len(data.measured), np.nan)
        tests = []
        for (_, _, test, _), p in zip(tasks[c * per_choice:(c + 1) * per_choice],
                                      preds[c * per_choice:(c + 1) * per_choice], strict=True):
            pred[test] = p
            tests.append(test)
        rows = np.sort(np.concatenate(tests))
        scopes = [("all", rows)]
        if per_algorithm:
            scopes += [(a, rows[algorithm_of[rows] == a]) for a in algorithms]
        for scope, at in scopes:
            if at.size:
                scores.setdefault(scope, {})[choice] = selection_score(pred, data.measured, at)

    def best(scope: str) -> Choice:  # first of equals: the listed order
        return min(candidates, key=lambda ch: scores[scope][ch])

    overall = best("all")
    by_algorithm = {a: best(a) if a in scores else overall for a in algorithms}
    return Selection(tuple(graphs), by_algorithm, scores)


def nested_logo(data: Data, candidates: Sequence[Choice], *, inner_folds: int = 3,
                starts: int = 3, inner_starts: int = 1, seed: int = 0, jobs: int = 1,
                per_algorithm: bool = False,
                progress: Callable[[str], None] | None = None,
                ) -> tuple[np.ndarray, dict[str, Selection], Selection]:
    """Nested leave-one-graph-out predictions (us) of every row; each outer fold's selection
    (by held-out graph); and the selection the same procedure makes on every graph (the
    model a user gets, which the nested figure judges).

    In the fold without graph g, each candidate is fitted ``inner_folds`` times (``inner_starts``
    seeded starts) over g's complement split by graph (``graph_folds``) and scored on what
    each fit left out; the best (for each algorithm on its own groups, ``per_algorithm``) is
    fitted on the whole complement (``starts``) and predicts g's rows (of that algorithm).
    """
    candidates = [c for c in candidates if data.supports(c)]
    if not candidates:
        raise ConfigError("no candidate model can be fitted to these data")
    graphs = sorted({m.graph for m in data.measured})
    if len(graphs) < 3:
        raise ConfigError(f"nested leave-one-graph-out needs 3 graphs or more, got {graphs}")
    outer = list(graphs)
    inner = {g: _inner_tasks(data, candidates, [h for h in graphs if h != g], inner_folds,
                             inner_starts, seed) for g in outer}
    final_tasks = _inner_tasks(data, candidates, graphs, inner_folds, inner_starts, seed)
    flat = [t for g in outer for t in inner[g]] + final_tasks
    if progress:
        progress(f"nested LOGO: {len(candidates)} candidate models, {len(flat)} inner fits")
    preds = [p for p, _ in fit_predict_all(flat, data, jobs)]
    selections, at = {}, 0
    for g in outer:
        n = len(inner[g])
        selections[g] = _select(data, candidates, [h for h in graphs if h != g], inner[g],
                                preds[at:at + n], per_algorithm)
        at += n
    final = _select(data, candidates, graphs, final_tasks, preds[at:], per_algorithm)
    algorithm_of = np.array([m.algorithm for m in data.measured])
    graph_of = np.array([m.graph for m in data.measured])
    outer_tasks = []
    for g in outer:
        train = np.flatnonzero(graph_of != g)
        chosen = selections[g].by_algorithm
        for choice in dict.fromkeys(chosen.values()):
            of_choice = [a for a, c in chosen.items() if c == choice]
            test = np.flatnonzero((graph_of == g) & np.isin(algorithm_of, of_choice))
            if test.size:
                outer_tasks.append((choice, train, test, starts))
    pred = np.full(len(data.measured), np.nan)
    for (_, _, test, _), (p, _) in zip(outer_tasks, fit_predict_all(outer_tasks, data, jobs),
                                       strict=True):
        pred[test] = p
    if progress:
        progress("nested LOGO: done")
    return pred, selections, final


# ------------------------------------------------------------------------ a user's check


def logo_calibration(parts: Sequence[Parts], measured: Sequence[Measured], base: Device, *,
                     launch_us: Sequence[np.ndarray | None] | None = None,
                     progress: Callable[[str], None] | None = None,
                     **fit_options) -> np.ndarray:
    """Leave-one-graph-out predictions (us) of every row: ``fit`` with ``fit_options`` (and
    ``base``'s bounds norm) made without each graph in turn, predicting that graph's rows."""
    graph_of = np.array([m.graph for m in measured])
    graphs = list(dict.fromkeys(graph_of.tolist()))
    if len(graphs) < 2:
        raise ConfigError("a held-out check needs measured rows on 2 graphs or more")
    pred = np.full(len(measured), np.nan)
    for k, graph in enumerate(graphs):
        if progress:
            progress(f"held-out check: fit {k + 1} of {len(graphs)}, without {graph}")
        train, test = np.flatnonzero(graph_of != graph), np.flatnonzero(graph_of == graph)
        calibration = fit([parts[i] for i in train], [measured[i] for i in train], base,
                          launch_us=None if launch_us is None else [launch_us[i] for i in train],
                          **fit_options)
        cycles = predict([parts[i] for i in test], calibration.thetas, base.bounds_norm)
        pred[test] = [base.us(c) for c in cycles]
    return pred


@dataclass(frozen=True)
class PickFigures:
    """How one model ranks one algorithm's configurations, over its graphs: picks within
    ``within`` of the measured best, the geometric mean of the picks' regrets, the median
    Spearman rho."""

    algorithm: str
    graphs: int
    picks_within: int
    geomean_regret: float
    median_rho: float


def pick_figures(pred: np.ndarray, measured: Sequence[Measured], within: float = 1.05
                 ) -> dict[str, PickFigures]:
    """``PickFigures`` of each algorithm of ``measured`` under the predictions ``pred``."""
    times = np.array([m.time_us for m in measured])
    by_algorithm: dict[str, list[tuple[float, float]]] = {}
    for (algorithm, _), idx in groups_of(measured).items():
        by_algorithm.setdefault(algorithm, []).append(
            (regret(pred[idx], times[idx])[0], spearman(pred[idx], times[idx])))
    out = {}
    for algorithm, scores in sorted(by_algorithm.items()):
        regrets = np.array([r for r, _ in scores])
        rhos = [rho for _, rho in scores if not math.isnan(rho)]
        out[algorithm] = PickFigures(algorithm, len(scores), int((regrets <= within).sum()),
                                     float(np.exp(np.log(regrets).mean())),
                                     float(np.median(rhos)) if rhos else math.nan)
    return out


# ------------------------------------------------------------------------------ intervals


def bootstrap_interval(rhos: Sequence[float], regrets: Sequence[float], *, within: float,
                       draws: int = 4000, level: float = 0.95, seed: int = 0
                       ) -> dict[str, tuple[float, float]]:
    """Percentile intervals of the median rho and of the share of picks within ``within`` of
    the best, over graphs drawn with replacement (one (rho, regret) per graph)."""
    rho = np.asarray(rhos, dtype=np.float64)
    ok = np.asarray(regrets, dtype=np.float64) <= within
    if rho.size == 0:
        return {"median_rho": (math.nan, math.nan), "fraction_within": (math.nan, math.nan)}
    draw = np.random.default_rng(seed).integers(0, rho.size, size=(draws, rho.size))
    tail = 100 * (1 - level) / 2
    with np.errstate(all="ignore"):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a draw of only NaN rhos
            medians = np.nanmedian(rho[draw], axis=1)
    shares = ok[draw].mean(axis=1)
    return {"median_rho": tuple(float(v) for v in np.nanpercentile(medians, [tail, 100 - tail])),
            "fraction_within": tuple(float(v) for v in np.percentile(shares, [tail, 100 - tail]))}
