"""Batched dispatch on a Ray cluster: one driver keeps a large cluster busy (issue 44).

``BatchRunner`` is the driver loop for a ``RayExecutor``. It differs from ``Runner`` in how
evaluations reach the workers:

- **Batches.** A Ray task evaluates several trials of one study (``evaluate_batch``), as many
  as make it last about max(``TARGET_TASK_S``, ``TASK_S_PER_CPU`` x the cluster's CPUs) at the
  study's mean evaluation time (at most ``MAX_TASK_S`` and ``MAX_BATCH``; fewer near the end,
  so the last trials spread over every CPU). The driver's Ray cost (submit, wait, get) is paid
  once per task, not per trial.
- **Asked and told in batches.** The trials of a task are asked together, with TPE's Parzen
  estimators fitted once for the batch and the batch's candidates drawn at once
  (``BatchTPESampler``), and told together when the task returns. The sampler runs in the
  driver's thread, between dispatches: Optuna's study and the journal are not thread-safe, and
  a thread would not take its CPU off the driver's one core (the GIL).
- **Studies side by side.** Each study keeps at most a quarter of its budget (at least
  ``MIN_STUDY_SHARE``) in flight while another study (open or not yet opened) can take the
  room, so a sweep's studies run together and each sampler learns from its own results; a
  study takes any room nobody else can use, so no CPU waits while any study has budget left.
- **A task queued behind every node's CPUs.** ``capacity + queued`` tasks are in flight, so a
  CPU that finishes a task starts the next one without waiting for the driver's round trip.
  Capacity is re-read every second: nodes that join get tasks at once.

Results integrity is ``Runner``'s: a task's trials stay running in Optuna until its results
come back; then each is recorded (row first, then the journal's record and tell), one by one.
A task lost with its node is run again whole by Ray (nothing of it was recorded), and a task
that still fails is submitted again by the driver, then its trials fail with the reason. A
driver killed mid-batch leaves the untold trials running, failed and enqueued again on resume.

Graphs are prepared (loaded, functional runs computed) once per study's (graph, algorithm,
sources) in a task whose results go to Ray's object store; every worker process resolves them
once and keeps them (``tuner.tuning.executor._resolve``), and an object lost with its node is
computed again at most once per node (``NodeCache``). Loads and fetches are counted per node.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from dataclasses import field
from typing import Any

import numpy as np
import optuna
from optuna.samplers import TPESampler
from optuna.samplers._tpe.sampler import _split_trials
from optuna.samplers._tpe.sampler import default_gamma
from optuna.samplers._tpe.sampler import default_gamma_multiobjective
from optuna.trial import TrialState

from tuner.tuning.batches import BatchResult
from tuner.tuning.batches import evaluate_batch
from tuner.tuning.batches import prepare_counted
from tuner.tuning.evaluate import Outcome
from tuner.tuning.executor import Future
from tuner.tuning.runner import DRIVER_RESUBMITS
from tuner.tuning.runner import Prep
from tuner.tuning.runner import Runner
from tuner.tuning.runner import RunStats
from tuner.tuning.study import WORKER_FAILURE
from tuner.tuning.study import Job
from tuner.tuning.study import StudyRun

# A task's length the batch size aims at: long against Ray's round trip (~10-20 ms) and the
# driver's per-task cost (Ray's share of it ~5-10 ms), short enough that a sampler hears back
# often and the last tasks of a run end together: 1 s, longer on a large cluster (the driver
# handles capacity / length tasks a second), at most MAX_TASK_S.
TARGET_TASK_S = 1.0
TASK_S_PER_CPU = 0.03
MAX_TASK_S = 8.0
MAX_BATCH = 32
# Tasks queued beyond the CPUs: a fraction of them, at least 2.
QUEUED_FRACTION = 1 / 8
# A study's share of the trials in flight while other studies can take the room: its budget
# over this (TPE learns little from results that all come back at once).
STUDY_SHARE_DIVISOR = 4
MIN_STUDY_SHARE = 4


# -- TPE fitted once per batch -------------------------------------------------------------
class BatchTPESampler(TPESampler):
    """TPE whose Parzen estimators are fitted once per batch of asks (``batch_asks``) and
    reused for the batch's other trials; outside a batch it is TPE as shipped. Each trial of
    a batch still draws its own candidates and takes the best by expected improvement, so a
    batch is k draws from one fit: what k parallel workers asking at once would get, without
    the fit's cost (most of a TPE ask at a few hundred trials) k times."""

    def _sample(self, study: optuna.Study, trial: optuna.trial.FrozenTrial,
                search_space: dict[str, Any]) -> dict[str, Any]:
        drawn: dict[Any, list] | None = self.__dict__.get("_batch_draws")
        if drawn is None:
            return super()._sample(study, trial, search_space)
        key = tuple((name, repr(dist)) for name, dist in search_space.items())
        if not drawn.get(key):
            drawn[key] = self._draw(study, trial, search_space)
        return drawn[key].pop(0)

    def infer_relative_search_space(self, study: optuna.Study,
                                    trial: optuna.trial.FrozenTrial) -> dict[str, Any]:
        """TPE's, worked out once per batch (it depends on the finished trials only)."""
        drawn = self.__dict__.get("_batch_draws")
        if drawn is None:
            return super().infer_relative_search_space(study, trial)
        if "_space" not in self.__dict__ or self._space is None:
            self._space = super().infer_relative_search_space(study, trial)
        return dict(self._space)

    def _draw(self, study: optuna.Study, trial: optuna.trial.FrozenTrial,
              search_space: dict[str, Any]) -> list[dict[str, Any]]:
        """A batch's proposals from one fit: ``_batch_size`` groups of ``n_ei_candidates``
        candidates drawn at once, the best of each group by expected improvement."""
        below, above = self._fit(study, trial, search_space)
        n, size = self._n_ei_candidates, max(1, self.__dict__.get("_batch_size", 1))
        samples = below.sample(self._rng.rng, n * size)
        acq = self._compute_acquisition_func(samples, below, above)
        out = []
        for g in range(size):
            best = g * n + int(np.argmax(acq[g * n:(g + 1) * n]))
            out.append({name: dist.to_external_repr(samples[name][best].item())
                        for name, dist in search_space.items()})
        return out

    def _fit(self, study: optuna.Study, trial: optuna.trial.FrozenTrial,
             search_space: dict[str, Any]) -> tuple[Any, Any]:
        """The below and above estimators, as ``TPESampler._sample`` builds them."""
        states = [TrialState.COMPLETE, TrialState.PRUNED]
        if self._constant_liar:
            states.append(TrialState.RUNNING)
        trials = study._get_trials(deepcopy=False, states=states,
                                   use_cache=not self._constant_liar)
        if self._constant_liar:
            trials = [t for t in trials if t.number != trial.number]
        if self._gamma is None:
            self._gamma = (default_gamma if len(study.directions) <= 1
                           else default_gamma_multiobjective)
        n = sum(t.state != TrialState.RUNNING for t in trials)
        below_trials, above_trials = _split_trials(study, trials, self._gamma(n))
        below = self._build_parzen_estimator(study, search_space, below_trials,
                                             handle_below=True)
        above = self._build_parzen_estimator(study, search_space, above_trials,
                                             handle_below=False)
        return below, above


def batch_tpe(sampler: Any, depth: int = 4) -> BatchTPESampler | None:
    """The TPE sampler inside ``sampler`` (itself, or one it wraps), made a
    ``BatchTPESampler`` (same state, one method more); None if there is none."""
    if isinstance(sampler, TPESampler):
        if type(sampler) is TPESampler:
            sampler.__class__ = BatchTPESampler
        return sampler if isinstance(sampler, BatchTPESampler) else None
    if depth <= 0 or not hasattr(sampler, "__dict__"):
        return None
    for value in vars(sampler).values():
        if isinstance(value, optuna.samplers.BaseSampler):
            found = batch_tpe(value, depth - 1)
            if found is not None:
                return found
    return None


def trial_views(sampler: Any, depth: int = 4) -> list[Any]:
    """The study views a wrapping sampler shows the sampler it wraps (objects with the
    study's ``_get_trials`` of their own, such as ``tuner.tuning.samplers._DrawnView``)."""
    found: list[Any] = []
    if depth <= 0 or not hasattr(sampler, "__dict__"):
        return found
    for value in vars(sampler).values():
        if isinstance(value, optuna.samplers.BaseSampler):
            found += trial_views(value, depth - 1)
        elif hasattr(value, "_study") and callable(getattr(value, "_get_trials", None)):
            found.append(value)
    return found


@contextmanager
def batch_asks(sampler: BatchTPESampler | None, outer: Any = None,
               size: int = 1) -> Iterator[None]:
    """Within (the ``size`` asks of one batch, no tell among them): ``sampler`` fits once
    and draws the batch's proposals at once, and the views of ``outer`` (the study's
    sampler) list the finished trials once. Both are exact for the finished trials, which no
    ask changes; the running ones (TPE's constant liar) are those of the batch's first ask."""
    views = trial_views(outer) if outer is not None else []
    for view in views:
        view._get_trials = _finished_once(view._get_trials)
    if sampler is not None:
        sampler._batch_draws = {}
        sampler._batch_size = size
        sampler._space = None
    try:
        yield
    finally:
        if sampler is not None:
            sampler._batch_draws = sampler._space = None
        for view in views:
            view.__dict__.pop("_get_trials", None)


def _finished_once(get_trials: Any) -> Any:
    """``get_trials`` remembering its answers for lists of finished states only."""
    memo: dict[Any, list] = {}

    def listed(deepcopy: bool = True, states: Any = None, use_cache: bool = False) -> list:
        if deepcopy or states is None or TrialState.RUNNING in states \
                or TrialState.WAITING in states:
            return get_trials(deepcopy, states, use_cache)
        key = tuple(states)
        if key not in memo:
            memo[key] = get_trials(deepcopy, states, use_cache)
        return memo[key]

    return listed


# -- driver side ---------------------------------------------------------------------------
@dataclass
class BatchStats(RunStats):
    """``RunStats`` plus what batching did."""

    tasks: int = 0
    max_batch: int = 0
    max_studies_in_flight: int = 0  # studies with trials in flight at once, at most
    loads: dict[str, int] = field(default_factory=dict)  # graph preparations per node
    fetches: dict[str, int] = field(default_factory=dict)  # store fetches per node
    nodes_seen_at: dict[str, float] = field(default_factory=dict)  # first result, run time
    # summed over tasks: submitted to started on a worker, and ended to handled by the driver
    to_start_s: float = 0.0
    to_handled_s: float = 0.0
    trials_in_flight_s: float = 0.0  # trials in flight integrated over the run

    @property
    def mean_batch(self) -> float:
        """Trials per task."""
        return self.evaluations / self.tasks if self.tasks else 0.0


@dataclass
class Batch:
    """The jobs of one task, of one study."""

    run: StudyRun
    jobs: list[Job]
    attempts: int = 0
    submitted: float = 0.0


class BatchRunner(Runner):
    """``Runner`` with batched tasks, batched asks and tells, and studies side by side."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.stats = BatchStats(capacity=self.executor.capacity)
        self._samplers: dict[int, BatchTPESampler | None] = {}
        self._trials_out: dict[int, int] = {}  # jobs in flight, per study
        self._mean_s: dict[int, float] = {}  # mean evaluation time, per study
        self._all_mean_s: float | None = None
        self._start = self._last_fill = time.monotonic()
        self._prep_nodes: dict[int, Future] = {}  # a prepare's node-id future, per Prep

    # -- scheduling ------------------------------------------------------------------------
    def _slots(self) -> int:
        cap = self.executor.capacity
        return cap + max(2, math.ceil(cap * QUEUED_FRACTION))

    def _fill(self, pending: Any, spaces: Any,
              done: dict[int, Any]) -> None:
        now = time.monotonic()
        self.stats.trials_in_flight_s += sum(self._trials_out.values()) * (now - self._last_fill)
        self._last_fill = now
        while len(self._inflight) < self._slots():
            if any(self._submit_batch(r) for r in self._candidates(bool(pending))):
                continue
            if pending:
                self._open_next(pending, spaces, done)
                continue
            if not any(self._submit_batch(r) for r in self._candidates(False, any_room=True)):
                return

    def _open_next(self, pending: Any, spaces: Any,
                   done: dict[int, Any]) -> StudyRun | None:
        """Open the next study as ``Runner`` does, its sampler asking in batches."""
        run = super()._open_next(pending, spaces, done)
        if run is not None:
            self._samplers[id(run)] = batch_tpe(run.study.sampler)
        return run

    def _share(self, run: StudyRun) -> int:
        """Trials ``run`` may have in flight while another study can take the room."""
        return max(MIN_STUDY_SHARE, math.ceil(run.budget / STUDY_SHARE_DIVISOR))

    def _candidates(self, others_waiting: bool, any_room: bool = False) -> list[StudyRun]:
        """Open studies with work to hand out, fewest trials in flight first; one that a
        batch would take past its share only if ``any_room`` (nobody else can take it)."""
        open_ = []
        for run in self._active:
            if run.meta is None or run.stopping or not run.needs_work():
                continue
            out = self._trials_out.get(id(run), 0)
            full = out + self._batch_size(run) > self._share(run)
            open_.append((out, self._spec_index(run.spec), run, full))
        under = sum(1 for *_, full in open_ if not full)
        found = [t for t in open_ if any_room or not t[3] or not (
            others_waiting or under > 0)]
        return [run for _, _, run, _ in sorted(found, key=lambda t: t[:2])]

    def _batch_size(self, run: StudyRun) -> int:
        mean = self._mean_s.get(id(run), self._all_mean_s)
        if mean is None:
            return 1
        cap = self.executor.capacity
        target = min(MAX_TASK_S, max(TARGET_TASK_S, cap * TASK_S_PER_CPU))
        size = min(MAX_BATCH, max(1, round(target / max(mean, 1e-4))))
        # near the end, spread what is left over every CPU rather than fill a few
        left = max(1, self._planned - self._finished - sum(self._trials_out.values()))
        return max(1, min(size, math.ceil(left / max(1, cap))))

    def _submit_batch(self, run: StudyRun) -> bool:
        """Ask up to a batch of jobs of ``run`` and submit them as one task."""
        size = self._batch_size(run)
        jobs: list[Job] = []
        with batch_asks(self._samplers.get(id(run)), run.study.sampler, size):
            while len(jobs) < size:
                job = run.next_job()
                if job is None:
                    break
                jobs.append(job)
        if not jobs:
            return False
        self._send(Batch(run, jobs))
        return True

    def _send(self, batch: Batch) -> None:
        run = batch.run
        prep = self._preps[run.spec.prepare_key()]
        spec = run.spec
        now = time.monotonic()
        if self._first_eval is None:
            self._first_eval = now
        batch.submitted = time.time()
        self._calling = list(batch.jobs)  # (in this process the call evaluates them)
        (future,) = self.executor.call(evaluate_batch, self.backend, prep.graph, prep.runs,
                                       spec.algorithm, spec.device_model or spec.device,
                                       [j.config for j in batch.jobs])
        self._calling = []
        self._inflight[future] = ("batch", batch)
        self._trials_out[id(run)] = self._trials_out.get(id(run), 0) + len(batch.jobs)
        self.stats.tasks += 1
        self.stats.max_batch = max(self.stats.max_batch, len(batch.jobs))
        studies = sum(1 for n in self._trials_out.values() if n)
        self.stats.max_studies_in_flight = max(self.stats.max_studies_in_flight, studies)

    def _start_prepare(self, args: tuple) -> Prep:
        """As ``Runner``'s, counting on which node the graph was loaded."""
        futures = self.executor.call(prepare_counted, self.backend, os.getcwd(), *args,
                                     num_returns=4)
        prep = Prep(futures[:3], (self._prepare, args))
        self._prep_nodes[id(prep)] = futures[3]
        return prep

    def _drop_inflight(self, future: Future) -> list[Job]:
        kind, obj = self._inflight[future]
        if kind == "prep":
            self._prep_nodes.pop(id(obj), None)
        if kind != "batch":
            return super()._drop_inflight(future)
        del self._inflight[future]
        self._trials_out[id(obj.run)] -= len(obj.jobs)
        return list(obj.jobs)

    # -- results ---------------------------------------------------------------------------
    def _handle(self, future: Future) -> None:
        kind, obj = self._inflight[future]
        if kind == "prep":
            node_f = self._prep_nodes.pop(id(obj), None)
            super()._handle(future)
            if node_f is not None:
                node = self.executor.result(node_f) or "?"
                self.stats.loads[node] = self.stats.loads.get(node, 0) + 1
            return
        if kind != "batch":
            super()._handle(future)
            return
        del self._inflight[future]
        batch: Batch = obj
        run = batch.run
        self._trials_out[id(run)] -= len(batch.jobs)
        try:
            result: BatchResult = self.executor.result(future)
        except Exception as exc:  # the worker or its node died, after Ray's own retries
            reason = f"{type(exc).__name__}: {' '.join(str(exc).split())[:500]}"
            if batch.attempts < DRIVER_RESUBMITS:  # the same trials, asked again: never lost
                batch.attempts += 1
                self.stats.resubmitted += len(batch.jobs)
                if self.progress is not None:
                    self.progress.note(f"resubmitting after a worker failure ({reason})")
                self._send(batch)
                return
            outcomes = [Outcome(None, error=f"{WORKER_FAILURE}: {reason}")] * len(batch.jobs)
        else:
            outcomes = result.outcomes
            node = result.node_id or "?"
            if result.fetched or result.rebuilt:
                self.stats.fetches[node] = self.stats.fetches.get(node, 0) + result.fetched
            if result.rebuilt:
                self.stats.loads[node] = self.stats.loads.get(node, 0) + result.rebuilt
            self.stats.nodes_seen_at.setdefault(node, time.monotonic() - self._start)
            if result.started:
                self.stats.to_start_s += max(0.0, result.started - batch.submitted)
                self.stats.to_handled_s += max(0.0, time.time() - result.ended)
        for job, outcome in zip(batch.jobs, outcomes, strict=True):
            self._finish_job(job, outcome)
        walls = [o.wall_s for o in outcomes if o.wall_s]
        if walls:
            mean = sum(walls) / len(walls)
            old = self._mean_s.get(id(run))
            self._mean_s[id(run)] = mean if old is None else 0.7 * old + 0.3 * mean
            self._all_mean_s = (mean if self._all_mean_s is None
                                else 0.9 * self._all_mean_s + 0.1 * mean)


def make_runner(executor: Any, *args: Any, **kwargs: Any) -> Runner:
    """``BatchRunner`` for a ``RayExecutor`` (``--workers N``, ``--address``, a Ray already
    up); ``Runner`` otherwise: in-process, the default hand-over to a local Ray, and
    ``--deterministic``, whose trials are fixed by results told one by one in call order."""
    from tuner.tuning.executor import RayExecutor

    cls = BatchRunner if type(executor) is RayExecutor else Runner
    return cls(executor, *args, **kwargs)
