"""The driver loop: keeps every worker busy with evaluations from one or many studies.

Studies are opened in order and prepared (graph loaded, functional runs computed) by a worker
task whose results stay in the object store, shared by every study that needs them. The loop
fills the in-flight window from the open studies (references first, fewest in flight first),
opens the next study whenever the open ones cannot fill it, and flushes the results store at
least every few seconds and on exit (Ctrl-C included).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

from search_spaces.loader import SearchSpace
from simulator.errors import ConfigError
from simulator.errors import WarpsweepError
from tuner.results.location import Location
from tuner.results.records import TrialRecord
from tuner.results.schema import GRAPHS
from tuner.results.schema import TRIALS
from tuner.results.store import ResultStore
from tuner.tuning.batches import prepare_from
from tuner.tuning.batches import prepared_again
from tuner.tuning.evaluate import GraphMeta
from tuner.tuning.evaluate import Outcome
from tuner.tuning.evaluate import SimulatorBackend
from tuner.tuning.evaluate import check_same_build
from tuner.tuning.evaluate import graph_id
from tuner.tuning.executor import Executor
from tuner.tuning.executor import Future
from tuner.tuning.executor import Rebuild
from tuner.tuning.progress import Progress
from tuner.tuning.spec import StudySpec
from tuner.tuning.spec import StudySummary
from tuner.tuning.spec import planned_runs
from tuner.tuning.stopping import stop_signals_held
from tuner.tuning.study import WORKER_FAILURE
from tuner.tuning.study import Job
from tuner.tuning.study import StudyRun

# Times the driver submits a trial again when its task fails for a system reason (Ray has
# already retried it TASK_RETRIES times): then it becomes a failed trial with the reason.
DRIVER_RESUBMITS = 2
# past --timeout, how often the run says what it still waits for
OVERDUE_NOTE_S = 30.0
# past --timeout, evaluations still running after this long, or 10x the longest evaluation
# so far if longer, are cancelled: failed for the machine's sake, a resume runs them again (a
# hung worker had held the run for good)
OVERDUE_CANCEL_S = 120.0


class WorkerFailure(WarpsweepError):
    """A worker died where the run cannot go on without it (preparing a graph)."""


class WorkerCodeMismatch(WarpsweepError):
    """A worker runs another cost model than the driver: its results are not this study's."""


def refuse_other_model(told: str, where: str) -> None:
    """Refuse what a worker computed under another cost model than the driver's (a cluster
    node with other code): recorded, its rows would pass for this code's."""
    from tuner.env import model_digest

    if told and told != model_digest():
        raise WorkerCodeMismatch(
            f"{where} runs other code than this driver (cost model {told}, the driver's "
            f"{model_digest()}): its result is not recorded. Give every node the driver's "
            "checkout (`ray rsync-up`, or `ray up cluster.yaml` again) and run the same "
            "command again: every finished evaluation is saved")


@dataclass
class Prep:
    """A prepared (graph, algorithm, sources): futures, then shared handles and metadata."""

    futures: list[Future]
    rebuild: tuple = ()  # the prepare call: (fn, args)
    meta: GraphMeta | None = None
    graph: Any = None
    runs: Any = None
    users: list[StudyRun] = field(default_factory=list)


@dataclass
class RunStats:
    """What the run did, for the report and the benchmark."""

    evaluations: int = 0
    busy_s: float = 0.0
    elapsed_s: float = 0.0
    capacity: int = 1
    trials: int = 0
    prepares: int = 0

    eval_s: float = 0.0
    capacity_s: float = 0.0
    resubmitted: int = 0
    eval_wall_s: float = 0.0  # busy_s without the preparations

    @property
    def busy_fraction(self) -> float:
        """Worker time spent evaluating over the worker time available (the cluster's CPUs
        integrated over the run, so nodes joining or leaving count while they are there)."""
        span = self.capacity_s or self.elapsed_s * self.capacity
        return self.busy_s / span if span else 0.0

    @property
    def eval_busy_fraction(self) -> float:
        """Busy fraction from the first evaluation started to the last one finished."""
        span = self.eval_s * self.capacity
        return self.busy_s / span if span else 0.0


class Runner:
    """Runs studies over an executor, writing results to a store."""

    def __init__(self, executor: Executor, store: ResultStore, results: str | Path,
                 backend: Any = None, progress: Progress | None = None,
                 timeout: float | None = None) -> None:
        self.executor = executor
        self.store = store
        self.results = Location.of(results)
        self.backend = backend or SimulatorBackend()
        self.progress = progress
        self.deadline = time.monotonic() + timeout if timeout else None
        self.stats = RunStats(capacity=executor.capacity)
        self._first_eval: float | None = None
        self._build = _strategy_builder()
        self._preps: dict[tuple, Prep] = {}
        self._inflight: dict[Future, tuple[str, Any]] = {}
        self._calling: list[Job] = []  # the jobs whose evaluation call is running
        self._active: list[StudyRun] = []
        self.summaries: list[StudySummary] = []
        self._single = False
        self._order: dict[int, int] = {}
        self._counted: dict[int, tuple[int, int]] = {}  # (runs, references) counted
        self._ready: deque[Job] = deque()
        self._planned = 0  # runs the studies make to their ends, resumed ones included
        self._finished = 0  # of those, done (resumed or in this session)
        self._study_graphs: dict[str, set[str]] | None = None  # graph ids of stored rows
        self._graph_rows: dict[str, dict] | None = None  # stored graph rows, by id
        self._edges: dict[str, str | None] | None = None  # see _known_edges
        self._overdue_noted = -math.inf  # when the run last said it waits past --timeout
        self._longest_eval_s = 0.0

    def run(self, specs: list[StudySpec],
            spaces: dict[tuple[str, str], SearchSpace]) -> list[StudySummary]:
        """Run every study to its budget (or the timeout); returns their summaries in order."""
        start = time.monotonic()
        self._single = len(specs) == 1
        self._planned = sum(planned_runs(s, spaces[s.space_ref]) for s in specs)
        pending = deque(specs)
        self.store.index()  # read, and its rows' values checked, before any study opens
        self._order = {id(s): i for i, s in enumerate(specs)}
        done_summaries: dict[int, StudySummary] = {}
        last, capacity = start, self.executor.capacity
        try:
            while True:
                now = time.monotonic()
                self.stats.capacity_s += capacity * (now - last)
                last, capacity = now, self.executor.capacity
                self.stats.capacity = max(self.stats.capacity, capacity)
                if self.deadline is not None and time.monotonic() >= self.deadline:
                    pending.clear()
                    for run in self._active:
                        run.stopping = True
                    self._note_overdue()
                    self._cancel_overdue()
                self._fill(pending, spaces, done_summaries)
                if not self._inflight:
                    if pending:
                        continue
                    break
                wait = self.store.seconds_to_flush()
                if self.deadline is not None:
                    wait = min(wait, max(0.0, self.deadline - time.monotonic()))
                for future in self.executor.wait(list(self._inflight), max(wait, 0.01)):
                    self._handle(future)
                self.store.maybe_flush()
                self._retire(done_summaries)
            self._retire(done_summaries)
        finally:
            self.stats.elapsed_s = time.monotonic() - start
            self._shutdown()
        self.summaries = [done_summaries[i] for i in sorted(done_summaries)]
        return self.summaries

    def _note_overdue(self) -> None:
        """Past --timeout, every ``OVERDUE_NOTE_S``: what the run still waits for (a worker
        stopped or hung had left it silent, its progress lines gone, for minutes)."""
        now = time.monotonic()
        if not self._inflight or self.progress is None:
            return
        if now - max(self.deadline, self._overdue_noted) < OVERDUE_NOTE_S:
            return
        self._overdue_noted = now
        self.progress.warn(
            f"--timeout passed {now - self.deadline:.0f} s ago; waiting for "
            f"{len(self._inflight)} evaluation(s) still running (a worker hung or stopped "
            "keeps it waiting; Ctrl-C stops the run, every finished evaluation saved)")

    def _cancel_overdue(self) -> None:
        """Past --timeout by ``OVERDUE_CANCEL_S`` (or 10x the longest evaluation so far):
        cancel what still runs. Its trials fail for the machine's sake, named at the end and
        run again by a resume; a graph still being prepared is left for the resume."""
        waited = time.monotonic() - self.deadline
        if not self._inflight or waited < max(OVERDUE_CANCEL_S, 10 * self._longest_eval_s):
            return
        late = list(self._inflight)
        cancel = getattr(self.executor, "cancel", None)
        if cancel is not None:
            cancel(late)
        reason = (f"{WORKER_FAILURE}: still running {waited:.0f} s past --timeout, cancelled "
                  "(a hung or stopped worker)")
        jobs = [job for future in late for job in self._drop_inflight(future)]
        for job in jobs:
            self._finish_job(job, Outcome(None, error=reason))
        if self.progress is not None:
            self.progress.warn(f"--timeout passed {waited:.0f} s ago: cancelled {len(late)} "
                               f"task(s) still running, {len(jobs)} evaluation(s) in them")

    def _drop_inflight(self, future: Future) -> list[Job]:
        """Forget a call in flight; the jobs it was evaluating."""
        kind, obj = self._inflight.pop(future)
        return [obj] if kind == "eval" else []

    # -- scheduling ------------------------------------------------------------------------
    def _open_next(self, pending: deque, spaces: dict[tuple[str, str], SearchSpace],
                   done: dict[int, StudySummary]) -> StudyRun | None:
        """Open the next pending study: a finished one is summed up and closed at once (None),
        another becomes active."""
        spec = pending.popleft()
        run = self._open(spec, spaces[spec.space_ref])
        if not run.wants_prepare():
            self._restore_graph_row(spec, spec.key(spaces[spec.space_ref]), {
                r.graph_id for r in (*run.records.values(), *run.references.values())})
            run.meta = run.meta or self._stored_graph(spec)  # named as on its first run
            run.stopping = True
            done[self._spec_index(spec)] = run.summary()
            self._count_study(done)
            self._close(run)
            return None
        self._active.append(run)
        self._attach(run)
        return run

    def _fill(self, pending: deque, spaces: dict[tuple[str, str], SearchSpace],
              done: dict[int, StudySummary]) -> None:
        while len(self._inflight) < self.executor.capacity:
            job = self._take_ready() or self._next_job()
            if job is not None:
                self._submit(job)
                continue
            if not pending:
                return
            self._open_next(pending, spaces, done)
        # Ask the sampler ahead, while the workers are busy, so a free worker gets its next
        # trial at once instead of waiting for a TPE ask (tens of ms at a few hundred trials);
        # one asked trial per worker absorbs results that arrive together.
        while self._ask_ahead and len(self._ready) < self.executor.capacity:
            job = self._next_job()
            if job is None:
                break
            self._ready.append(job)

    @property
    def _ask_ahead(self) -> bool:
        """Whether calls run elsewhere (asked anew: the default executor hands over to Ray)."""
        return bool(getattr(self.executor, "asynchronous", False))

    def _consider_ray(self) -> None:
        """Tell an executor that can start Ray how much in-process work is left: the runs
        not done yet at the mean evaluation time so far."""
        consider = getattr(self.executor, "consider", None)
        if consider is None or not self.stats.evaluations:
            return
        left = max(0, self._planned - self._finished)
        mean_s = self.stats.eval_wall_s / self.stats.evaluations
        consider(left * mean_s)

    def _take_ready(self) -> Job | None:
        while self._ready:
            job = self._ready.popleft()
            if not job.run.stopping:
                return job
            job.run.abandon(job)
        return None

    def _spec_index(self, spec: StudySpec) -> int:
        return self._order[id(spec)]

    def _next_job(self) -> Job | None:
        for run in sorted(self._active, key=lambda r: r.busy):
            job = run.next_job()
            if job is not None:
                return job
        return None

    def _open(self, spec: StudySpec, space: SearchSpace) -> StudyRun:
        key = spec.key(space)
        def reread() -> tuple[dict, list[str]]:
            return self.store.reread_index().get(key, {}), self.store.conflicts.get(key, [])

        run = StudyRun(spec, space, self.results, self.store.index().get(key, {}),
                       self.store.add_trial, self.store.amend_trial, self._build,
                       load_rows=lambda: self.store.study_records(key),
                       conflicts=self.store.conflicts.get(key), reread=reread,
                       dispatch=self.executor.mode)
        self._counted[id(run)] = (run.runs_done, len(run.references))
        self._finished += run.runs_done
        if run.runs_done and self.progress is not None:
            self.progress.resume(run.runs_done, references=len(run.references))
            if self._single:
                self.progress.set_best(run.best_value())
        run.on_trial = self._after
        self.store.flush_hooks.append(run.sync)
        return run

    def _stored_graph(self, spec: StudySpec) -> GraphMeta | None:
        """A study's graph as its ``graphs`` row records it (a finished study's is not
        loaded again), or None where there is none."""
        if self._graph_rows is None:  # read once for every finished study of the run
            columns = ["graph_id", "graph_spec", "name", "kind", "n", "m", "directed",
                       "weighted"]
            try:
                table = self.store.backend.scan(GRAPHS, columns=columns)
            except Exception:  # noqa: BLE001 - a summary's name only: check names damage
                table = None
            self._graph_rows = {} if table is None else {
                row["graph_id"]: row for row in table.to_pylist()}
        row = self._graph_rows.get(graph_id(spec.graph, spec.graph_content))
        if row is None:
            return None
        return GraphMeta(row["graph_id"], row["graph_spec"], row["name"], row["kind"],
                         int(row["n"]), int(row["m"]), bool(row["directed"]),
                         bool(row["weighted"]), ())

    def _known_edges(self) -> dict[str, str | None]:
        """Each graph id's edges digest, as the store's rows record it (None: a row of a
        warpsweep that recorded none) and as this run prepared it."""
        if self._edges is None:
            table = self.store.backend.scan(GRAPHS)
            digests = (table.column("edges_digest").to_pylist()
                       if "edges_digest" in table.column_names else [None] * table.num_rows)
            self._edges = dict(zip(table.column("graph_id").to_pylist(), digests, strict=True))
        return self._edges

    def _restore_graph_row(self, spec: StudySpec, key: str, recorded: set[str]) -> None:
        """Write the ``graphs`` row of a study with nothing left to run whose rows or journal
        records (``recorded``: their graph ids; rows rewritten from the journal after a disk
        filled are not stored yet) name a graph the store lacks (its file set aside by
        ``warpsweep check --repair``, or never written): the graph is loaded for that
        alone."""
        if self._study_graphs is None:
            table = self.store.backend.scan(TRIALS, columns=["study_key", "graph_id"])
            self._study_graphs = {}
            for study, graph in zip(table.column("study_key").to_pylist(),
                                    table.column("graph_id").to_pylist(), strict=True):
                self._study_graphs.setdefault(study, set()).add(graph)
        if not (self._study_graphs.get(key, set()) | recorded) - self.store.graph_ids() - {
                None, ""}:
            return
        args = (spec.graph, spec.algorithm, spec.n_sources(), spec.seed, True,
                spec.graph_content)
        meta: GraphMeta = self.executor.result(
            self.executor.call(self._prepare, *args, num_returns=3)[2])
        if meta.error is None:
            self.store.add_graph(graph_row(dataclasses.replace(
                meta, graph_id=graph_id(meta.spec, spec.graph_content))))

    def _attach(self, run: StudyRun) -> None:
        key = run.spec.prepare_key()
        prep = self._preps.get(key)
        if prep is None:
            want_features = True
            prep = self._start_prepare((run.spec.graph, run.spec.algorithm,
                                        run.spec.n_sources(), run.spec.seed, want_features,
                                        run.spec.graph_content))
            self.stats.prepares += 1
            self._preps[key] = prep
            self._inflight[prep.futures[2]] = ("prep", prep)
        prep.users.append(run)
        if prep.meta is not None:
            run.set_prepared(prep.meta)

    def _start_prepare(self, args: tuple) -> Prep:
        """Submit the prepare call of a (graph, algorithm, sources): its future results."""
        futures = self.executor.call(self._prepare, *args, num_returns=3)
        return Prep(futures, (self._prepare, args))

    @property
    def _prepare(self) -> Callable[..., Any]:
        """The backend's prepare, reading relative graph paths from this driver's working
        directory wherever it runs (``batches.prepare_from``)."""
        return functools.partial(prepare_from, os.getcwd(), self.backend.prepare)

    def _submit(self, job: Job) -> None:
        prep = self._preps[job.run.spec.prepare_key()]
        spec = job.run.spec
        if self._first_eval is None:
            self._first_eval = time.monotonic()
        # in flight while the call runs: this process's executor evaluates within it, where
        # a stop lands most often (the trial had stayed running in the journal: probe
        # STOREREAD)
        self._calling = [job]
        (future,) = self.executor.call(self.backend.evaluate, prep.graph, prep.runs,
                                       spec.algorithm, spec.device_model or spec.device,
                                       job.config)
        self._calling = []
        self._inflight[future] = ("eval", job)

    # -- results ---------------------------------------------------------------------------
    def _handle(self, future: Future) -> None:
        kind, obj = self._inflight.pop(future)
        if kind == "prep":
            self._prepared(obj)
            return
        job: Job = obj
        try:
            outcome = self.executor.result(future)
        except Exception as exc:  # the worker or its node died, after Ray's own retries
            reason = f"{type(exc).__name__}: {' '.join(str(exc).split())[:500]}"
            if job.attempts < DRIVER_RESUBMITS:  # the same trial, asked again: never lost
                job.attempts += 1
                self.stats.resubmitted += 1
                if self.progress is not None:
                    self.progress.note(f"resubmitting after a worker failure ({reason})")
                self._submit(job)
                return
            outcome = Outcome(None, error=f"{WORKER_FAILURE}: {reason}")
        self._finish_job(job, outcome)
        self._consider_ray()

    def _finish_job(self, job: Job, outcome: Outcome) -> None:
        """Record one trial's outcome (its row, then its journal entry) and count it."""
        refuse_other_model(outcome.model, _worker_named(outcome))
        job.run.refuse_changed_policy(job.config, outcome.policy)
        self._longest_eval_s = max(self._longest_eval_s, outcome.wall_s)
        self.stats.evaluations += 1
        self.stats.busy_s += outcome.wall_s
        self.stats.eval_wall_s += outcome.wall_s
        self.stats.eval_s = time.monotonic() - (self._first_eval or time.monotonic())
        record = job.run.finish(job, outcome)
        if job.role == "reference":
            self._count(job.run)
            self._note(job.run, record)

    def _prepared(self, prep: Prep) -> None:
        graph_f, runs_f, meta_f = prep.futures
        try:
            meta: GraphMeta = self.executor.result(meta_f)
        except WarpsweepError:
            raise
        except Exception as exc:  # the worker or its node died (after Ray's own retries)
            reason = f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}"
            graph = prep.users[0].spec.graph if prep.users else "a graph"
            where = ("after Ray's retries" if self.executor.asynchronous
                     else "in this process")
            if "MemoryError" in reason:  # the same graph runs out again: no resume helps
                raise WorkerFailure(
                    f"preparing {graph} ran out of memory ({reason}), {where}, though the "
                    "size check found it within the memory: use a smaller graph, or lower "
                    "WARPSWEEP_MAX_MEMORY so the check refuses such a graph up front; every "
                    "finished evaluation is saved") from None
            raise WorkerFailure(
                f"the worker preparing {graph} failed ({reason}), {where} (it may have run "
                "out of memory); every finished evaluation is saved: run the same command "
                "again to resume") from None
        refuse_other_model(meta.model, f"the worker that prepared {meta.spec}")
        self.stats.busy_s += meta.prepare_s  # a worker loading the graph is a busy worker
        if meta.error is not None:
            user = prep.users[0].spec if prep.users else None
            origin = (user.graph_origin or user.origin) if user is not None else ""
            raise ConfigError(f"{origin + ': ' if origin else ''}{meta.error}")
        if prep.users:  # named by its content, which the driver read when checking the spec
            content = prep.users[0].spec.graph_content
            meta = dataclasses.replace(meta, graph_id=graph_id(meta.spec, content))
        known = self._known_edges()
        check_same_build(meta.spec, "edges", meta.edges, known.get(meta.graph_id))
        if not known.get(meta.graph_id):
            known[meta.graph_id] = meta.edges
        prep.meta = meta
        # a copy lost with its node is built again from the same spec: refused there if
        # that machine builds another graph or draws other sources
        fn, args = prep.rebuild
        again = (functools.partial(prepared_again, fn), (*args, meta.edges, meta.sources))
        prep.graph = self.executor.share(graph_f, Rebuild(*again, 0))
        prep.runs = self.executor.share(runs_f, Rebuild(*again, 1))
        self.store.add_graph(graph_row(meta))
        for run in prep.users:
            run.set_prepared(meta)

    def _after(self, run: StudyRun, record: TrialRecord) -> None:
        self.stats.trials += 1
        self._count(run)
        self._note(run, record)

    def _count(self, run: StudyRun) -> None:
        """Advance the progress by the runs this study finished since last counted, its
        references apart (a trial answered by a reference's run finishes when the
        reference does: either event may bring both kinds)."""
        counted, counted_refs = self._counted.get(id(run), (0, 0))
        new, new_refs = run.runs_done - counted, len(run.references) - counted_refs
        self._counted[id(run)] = (run.runs_done, len(run.references))
        self._finished += max(0, new)
        if self.progress is not None:
            self.progress.advance(new_refs, reference=True)
            self.progress.advance(new - new_refs)
            if self._single:
                self.progress.set_best(run.best_value())

    def _note(self, run: StudyRun, record: TrialRecord) -> None:
        if self.progress is None or not self.progress.verbose:
            return
        who = f"reference {record.label}" if record.role == "reference" else (
            f"trial {record.trial}")
        if record.state == "complete":
            what = f"{run.spec.objective}={', '.join(f'{v:.6g}' for v in record.values)}"
        elif record.state == "duplicate":
            of = "a reference" if record.duplicate_of == -1 else f"trial {record.duplicate_of}"
            what = f"repeat of {of}"
        else:
            what = f"failed: {record.error}"
        config = " ".join(f"{k}={v}" for k, v in record.params.items())
        prefix = "" if self._single else f"{run.key} "
        self.progress.note(f"{prefix}{who} {what}  [{config}]")

    def _retire(self, done: dict[int, StudySummary]) -> None:
        for run in list(self._active):
            if not run.finished():
                continue
            self._active.remove(run)
            if run.exhausted:
                self._planned -= max(0, run.budget - run.done)
            if run.exhausted and self.progress is not None:
                self.progress.discount(run.budget - run.done)
            done[self._spec_index(run.spec)] = run.summary()
            self._count_study(done)
            self._close(run)
            key = run.spec.prepare_key()
            prep = self._preps.get(key)
            if prep is not None:
                prep.users.remove(run)
                if not prep.users and prep.meta is not None:
                    del self._preps[key]  # drop the references; Ray frees the objects

    def _count_study(self, done: dict[int, StudySummary]) -> None:
        if self.progress is not None and not self._single:
            self.progress.set_studies(len(done), len(self._order))

    def _close(self, run: StudyRun) -> None:
        if run.sync in self.store.flush_hooks:
            self.store.flush_hooks.remove(run.sync)
        try:
            self.store.flush()  # the study's rows are on disk before its journal is released
            run.mark_saved()
        finally:  # (a failing disk: released still, or a retry in this process is refused)
            run.close()

    def _shutdown(self) -> None:
        with stop_signals_held():  # a second stop had cut the last flush short
            while self._ready:  # asked but never started: failed and enqueued for a resume
                job = self._ready.popleft()
                job.run.abandon(job)
            for job in self._calling:  # stopped within their evaluation call
                job.run.abandon(job)
            self._calling = []
            try:
                cancel = getattr(self.executor, "cancel", None)
                if cancel is not None and self._inflight:
                    cancel(list(self._inflight))
                # their trials fail in Optuna as interrupted, enqueued again, as Optuna's own
                # optimize does on Ctrl-C (they had stayed running in the journal until a
                # resume: a dashboard showed a stopped study running)
                for future in list(self._inflight):
                    for job in self._drop_inflight(future):
                        job.run.abandon(job)
            finally:
                try:
                    self.store.close()
                finally:
                    for run in self._active:
                        run.close()


def _strategy_builder():
    from simulator import Strategy

    return Strategy.from_params


def graph_row(meta: GraphMeta) -> dict[str, Any]:
    """The ``graphs`` row of a prepared graph."""
    from datetime import UTC
    from datetime import datetime

    from tuner.env import warpsweep_version
    from tuner.results.schema import SCHEMA_VERSION

    row: dict[str, Any] = dict(meta.features or {})
    row.update(
        graph_id=meta.graph_id, graph_spec=meta.spec, name=meta.name, kind=meta.kind, n=meta.n,
        m=meta.m, directed=meta.directed, weighted=meta.weighted, edges_digest=meta.edges or None,
        timestamp=datetime.now(UTC), warpsweep_version=warpsweep_version(),
        schema_version=SCHEMA_VERSION,
    )
    return row


def _worker_named(outcome: Outcome) -> str:
    """The worker that evaluated an outcome, as a message names it."""
    node = f"(Ray node {outcome.node_id[:12]})" if outcome.node_id else ""
    where = " ".join(part for part in (outcome.worker, node) if part)
    return f"the worker {where}" if where else "a worker"
