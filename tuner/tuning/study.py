"""One study's run: its Optuna study on disk, driven by ask-and-tell (``StudyRun``).

The driver asks Optuna for configurations and tells it the results; evaluation happens
elsewhere. Each result reaches the results store before it is told, and its record is kept in
the trial's user attributes, so a resumed study rewrites rows a crash lost, tells trials whose
result was recorded but not told, and re-enqueues the ones that were still running. What a
study is (its spec, key, objective, budget and summary) is in ``tuner.tuning.spec``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import random
import re
import sys
import time
import warnings
from collections import Counter
from collections.abc import Callable
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC
from datetime import datetime
from pathlib import Path
from typing import Any

import optuna
from optuna.storages import JournalStorage
from optuna.trial import TrialState

from search_spaces.loader import SearchSpace
from simulator.errors import ConfigError
from simulator.errors import WarpsweepError
from simulator.sizes import ENV_MAX_MEMORY
from tuner.env import git_commit
from tuner.env import library_versions
from tuner.env import model_digest
from tuner.env import warpsweep_version
from tuner.results.journal import DriverJournal
from tuner.results.journal import UnreadableJournal
from tuner.results.journal import lost_for_good_line
from tuner.results.journal import saved_mark_path
from tuner.results.location import LEASE_S
from tuner.results.location import Location
from tuner.results.location import shell_word
from tuner.results.records import TrialRecord
from tuner.results.records import check_journal_records
from tuner.results.records import told_otherwise
from tuner.results.store import ConflictError
from tuner.results.store import record_fingerprint
from tuner.results.store import stopped_trials_run_again
from tuner.tuning.evaluate import GraphMeta
from tuner.tuning.evaluate import Outcome
from tuner.tuning.evaluate import check_same_build
from tuner.tuning.evaluate import is_finite
from tuner.tuning.samplers import UntriedSampler
from tuner.tuning.samplers import UserNamedTrial
from tuner.tuning.samplers import make_sampler
from tuner.tuning.samplers import sampler_info
from tuner.tuning.spec import Objective
from tuner.tuning.spec import StudySpec
from tuner.tuning.spec import StudySummary
from tuner.tuning.spec import budget_of
from tuner.tuning.spec import covers_space
from tuner.tuning.spec import policy_digests
from tuner.tuning.spec import reference_configs
from tuner.tuning.spec import resume_seed
from tuner.tuning.spec import used_sources
from tuner.tuning.stopping import stop_signals_held

# A study ends early when its sampler proposes only configurations it has already tried this
# many times in a row (a small or converged space): repeats never use up the budget.
MAX_REPEATS_IN_A_ROW = 50
# Strategies built per study that are remembered (StudyRun._built); beyond it, forgotten.
BUILT_MEMO_SIZE = 100_000


@dataclass
class Job:
    """A configuration to evaluate for a study (a sampler trial or a reference run)."""

    run: StudyRun
    role: str
    config: dict[str, Any]
    strategy: Any
    trial: optuna.trial.Trial | None = None
    label: str | None = None
    attempts: int = 0
    repeats: int = 0  # proposals of tried configurations this trial was chosen in place of


def journal_storage(path: Path, results: str | None = None
                    ) -> tuple[JournalStorage, DriverJournal]:
    """The Optuna storage of one study, on a journal file this process holds (see journal);
    ``results`` names the results location in the error of a journal it cannot replay."""
    backend = DriverJournal(path, results)
    try:
        return JournalStorage(backend), backend  # replays the journal's records
    except Exception as exc:  # noqa: BLE001 - records Optuna cannot replay, whatever they hold
        backend.close()
        raise UnreadableJournal(path, f"{type(exc).__name__}: {exc}", results) from None


def refuse_another_sampler_or_seed(key: str, spec: StudySpec, ran: dict[str, Any]) -> None:
    """A study resumes only with the sampler and seed it ran with (``ran``: the journal's
    record of the study, or its rows'): continuing it under others would mix their trials
    into one study, and a comparison of samplers or seeds tuned into one directory would
    read the first run's trials as the second's."""
    old = {k: ran[k] for k in ("sampler", "seed") if k in ran}
    new = {"sampler": spec.sampler, "seed": spec.seed}
    if all(old[k] == new[k] for k in old):
        return
    was = ", ".join(f"{k} {v}" for k, v in old.items())
    asks = ", ".join(f"{k} {new[k]}" for k in old)
    how = (f"set {', '.join(f'`{k}: {v}`' for k, v in old.items())} in {spec.origin}"
           if spec.origin else "pass " + " ".join(f"--{k} {v}" for k, v in old.items()))
    raise ConfigError(
        f"study {key} ran with {was}; this run asks for {asks}: continuing it would mix the "
        f"two in one study (to compare them, give each its own --results directory; to "
        f"continue it, {how})")


def journal_spec(path: Path) -> dict[str, Any] | None:
    """The study record (``spec``: sampler, seed, ...) a journal file holds, read from its
    lines without loading it; None where it holds none or cannot be read."""
    try:
        with open(path, "rb") as f:
            for line in f:
                try:
                    log = json.loads(line)
                except ValueError:  # a torn line: the study's own check names it
                    continue
                attr = log.get("user_attr") if isinstance(log, dict) else None
                if isinstance(attr, dict) and isinstance(attr.get("spec"), dict):
                    return attr["spec"]
    except OSError:
        return None
    return None


class StudyRun:
    """A study being tuned: Optuna study, budget, duplicates and records."""

    def __init__(self, spec: StudySpec, space: SearchSpace, results: str | Path | Location,
                 stored: set[tuple[str, Any]], add_row: Callable[[TrialRecord], None],
                 amend_row: Callable[[TrialRecord, TrialRecord], None],
                 build: Callable[[dict[str, Any]], Any],
                 load_rows: Callable[[], list[TrialRecord]] | None = None,
                 conflicts: list[str] | None = None,
                 reread: Callable[[], tuple[Any, list[str]]] | None = None,
                 dispatch: str = "in-process") -> None:
        self.spec = spec
        self.space = space
        # the policy files as the key names them: a trial that ran another is refused
        self._policy_digests = policy_digests(space)
        self.key = spec.key(space, self._policy_digests)
        self._device_digest = spec.device_digest  # the fields' digest, worked out once
        self._add_row = add_row
        self._amend_row = amend_row
        self._build = build
        self._built_memo: dict[tuple, tuple[Any, WarpsweepError | None]] = {}
        self.meta: GraphMeta | None = None
        self.stopping = False
        self.on_trial: Callable[[StudyRun, TrialRecord], None] | None = None
        self.exhaustive = sampler_info(spec.sampler).exhaustive
        self.budget = budget_of(spec, space)
        self.location = Location.of(results)
        self.journal = self.location.journal_dir() / f"{self.key}.journal"
        self._lease = self.location.take_lease(self.key)
        self._renewed = time.monotonic()
        try:
            in_bucket = self.location.pull_journal(self.journal)
        except BaseException:
            self.location.release_lease(self.key, self._lease)
            raise
        if not in_bucket and not stored and self.journal.exists():
            # neither the study's journal nor a row of it in the bucket (its prefix deleted
            # to start over): this machine's copy had brought the old results back
            orphaned = self.journal.with_name(f"{self.journal.name}.orphaned-{time.time_ns()}")
            os.replace(self.journal, orphaned)
            if saved_mark_path(self.journal).exists():  # its mark goes with it: no loss to tell
                os.replace(saved_mark_path(self.journal), saved_mark_path(orphaned))
        self._pushed_size = self.journal.stat().st_size if self.journal.exists() else -1
        created = self._created = self._pushed_size < 0
        # its journal gone, rows deleted with it (none left at all is a start over)
        saved_rows = self._saved_rows() if created and stored else None
        # a new journal marks itself saved at 0 rows: a run refused below puts the old mark
        # back, which still counts the results lost with the journal (probe STOREREAD)
        mark = saved_mark_path(self.journal)
        old_mark = mark.read_bytes() if created and mark.is_file() else None
        try:
            storage, self._journal = journal_storage(self.journal, self.location.text)
        except BaseException:
            self.location.release_lease(self.key, self._lease)
            raise
        sampler = self._sampler(spec.seed)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                self.study = optuna.create_study(
                    storage=storage, study_name=self.key, sampler=sampler,
                    directions=list(spec.objective.directions), load_if_exists=True,
                )
            check_journal_records(self.study.get_trials(deepcopy=False),
                                  self.study.user_attrs, self.key)  # (CR31: a traceback)
        except Exception as exc:  # noqa: BLE001 - records Optuna cannot replay, whatever they hold
            self._journal.close()
            self.location.release_lease(self.key, self._lease)
            raise UnreadableJournal(self.journal, f"{type(exc).__name__}: {exc}",
                                    self.location.text) from None
        self.records: dict[int, TrialRecord] = {}
        self._best: list[float] | None = None  # the best values among self.records
        self.references: dict[str, TrialRecord] = {}
        self._answers: dict[Any, tuple[int, TrialRecord]] = {}
        self._inflight: dict[Any, Job] = {}
        self._waiters: dict[Any, list[tuple[optuna.trial.Trial, dict[str, Any]]]] = {}
        self._pending_refs: list[tuple[str, dict[str, Any]]] = []
        self.exhausted = False
        self._repeats_in_a_row = 0
        self._tried: set[Any] = set()
        self._space_keys: frozenset[Any] | None = None  # ``_untried_left``'s, worked out once
        try:
            if saved_rows is not None and saved_rows > len(stored):
                # its journal gone, rows deleted with it: the rebuilt one knows nothing of them
                line = lost_for_good_line(self.key, saved_rows - len(stored), saved_rows)
                print(f"warpsweep: {line}", file=sys.stderr)
            self._refuse_another_sampler_or_seed(self.study.user_attrs.get("spec") or {})
            self._refuse_another_model(self.study.user_attrs.get("model"))
            if reread is not None and self._journal_knows_more(stored):
                # the rows were indexed when the run began, before this study's journal was
                # ours: another run may have finished it since (a sweep busy on an earlier
                # study while a tune ran this one), and its rows must not be written twice
                stored, conflicts = reread()
            self._reconcile(stored, load_rows, conflicts or [])
            self._resume(stored)
        except BaseException:
            if created:  # a refused run leaves no journal of its own (probe CONC), its lock held
                self.journal.unlink(missing_ok=True)
                if old_mark is not None:
                    mark.write_bytes(old_mark)
                else:
                    mark.unlink(missing_ok=True)
            self.close()
            raise
        resumed = len(self.study.get_trials(deepcopy=False))
        if resumed:
            # A sampler seeded as on the first run would draw its first run's configurations
            # again: a random study answered them as repeats until 50 in a row ended it early,
            # so it could never grow past them. Seeded by how far the study got, it draws on.
            self.study.sampler = self._sampler(resume_seed(spec.seed, resumed))
        self._record_session(resumed, dispatch)

    def _record_session(self, first_trial: int, dispatch: str) -> None:
        """Note in the journal how this run draws its trials: the seed is not all a resumed
        or Ray run's trials follow from (a resume reseeds the sampler by how far the study
        got; results told as they come depend on which worker finishes first)."""
        self.study.set_user_attr(f"run:{first_trial}", {
            "first_trial": first_trial,
            "sampler_seed": (resume_seed(self.spec.seed, first_trial) if first_trial
                             else self.spec.seed),
            "dispatch": dispatch, "warpsweep": warpsweep_version(), "commit": git_commit(),
            "model": model_digest(), "libraries": library_versions(),
            "started": datetime.now(UTC).isoformat(),
        })

    def _sampler(self, seed: int) -> UntriedSampler:
        """The study's sampler, proposing only configurations not tried yet (see
        ``UntriedSampler``)."""
        return UntriedSampler(make_sampler(self.spec.sampler, seed, self.space), self.space,
                              seed, self._key_and_valid, self._is_tried, self._answer_of,
                              self._is_tried_as_trial)

    def _built(self, config: dict[str, Any]) -> Any:
        """``build(config)``, remembered per configuration (its knobs, values and their
        types): the sampler's neighbour search and the dedupe keys build the strategies of
        the same configurations again and again (issue 44). A rejected configuration raises
        its error again."""
        try:
            key = tuple((k, type(v), v) for k, v in config.items())
            built = self._built_memo.get(key)
        except TypeError:  # an unhashable value: built every time
            return self._build(config)
        if built is None:
            try:
                built = (self._build(config), None)
            except WarpsweepError as exc:
                built = (None, exc)
            if len(self._built_memo) >= BUILT_MEMO_SIZE:
                self._built_memo.clear()
            self._built_memo[key] = built
        if built[1] is not None:
            raise built[1].with_traceback(None)
        return built[0]

    def _key_and_valid(self, config: dict[str, Any]) -> tuple[Any, bool]:
        try:
            return self._built(config), True
        except WarpsweepError:
            return ("invalid", json.dumps(config, sort_keys=True, default=repr)), False

    def _is_tried(self, key: Any) -> bool:
        """Whether a configuration is answered, being evaluated or waited for (a reference
        counts: the study answers a trial of its configuration from it)."""
        return key in self._answers or key in self._inflight or key in self._waiters

    def _untried_left(self) -> bool:
        """Whether a space the budget covers whole still holds a configuration no trial has
        tried, evaluates or waits for. With evaluations in flight (Ray workers) the sampler
        had been asked on, drawing only those, each a duplicate row of its own (probe CR10:
        56 rows for a 12-configuration space); other spaces always hold one."""
        if self._space_keys is None:
            covered = not self.exhaustive and covers_space(self.budget, self.space)
            self._space_keys = (frozenset(self._dedupe_key(c)
                                          for c in self.space.drawable_configs())
                                if covered else frozenset())
        busy = len(self._tried) + len(self._inflight) + len(self._waiters)
        if not self._space_keys or busy < len(self._space_keys):
            return True  # (some key is none of them: no scan before the space's end)
        return any(k not in self._tried and k not in self._inflight and k not in self._waiters
                   for k in self._space_keys)

    def _is_tried_as_trial(self, key: Any) -> bool:
        """``_is_tried`` less the configurations only a reference ran."""
        return key in self._tried or key in self._inflight or key in self._waiters

    def _answer_of(self, key: Any) -> tuple[bool, list[float] | None]:
        """Whether the study holds a result for a configuration, and its objective values
        (None: it failed)."""
        if key not in self._answers:
            return False, None
        record = self._answers[key][1]
        return True, record.values if record.state == "complete" else None

    def _journal_params(self, config: dict[str, Any]) -> dict[str, Any]:
        """The knobs of ``config`` Optuna draws, by their own names (what is enqueued)."""
        return {p.name: config[p.name] for p in self.space.params
                if p.suggested and p.name in config}

    def _drawn(self, params: dict[str, Any]) -> dict[str, Any]:
        """The knobs the space draws that give a row's configuration ``params``, each among
        the values the space offers. A row holds its configuration as the strategy does, a
        default dropped or filled in (``precheck=true`` reads back unset, an unset ``w`` as
        32): enqueued as such, a knob the row lacks had been drawn afresh, and a filled-in
        default had been refused as outside a space offering ``null``. A knob no offered
        value gives is left as the row has it (the rebuild then refuses the row)."""
        target = self._row_key(params)
        config: dict[str, Any] = dict(self.space.fixed)
        for p in self.space.params:
            if not p.active(config):
                continue
            if not p.suggested:
                config[p.name] = p.value
                continue
            held = params.get(p.name)
            chosen = held
            if not p.offers(held):
                for value in (None, *p.choices):
                    if p.offers(value) and self._row_key({**params, p.name: value}) == target:
                        chosen = value
                        break
            config[p.name] = chosen
        return config

    def _row_key(self, config: dict[str, Any]) -> Any:
        """``_dedupe_key`` of a configuration as a row holds it: an unset knob is absent (an
        invalid configuration is told by its text, where ``null`` and absent would differ)."""
        return self._dedupe_key({k: v for k, v in config.items() if v is not None})

    def _name_metrics(self, study: optuna.Study) -> None:
        """The objective's metric names on the study (optuna-dashboard shows them)."""
        names = list(self.spec.objective.metrics)
        if study.metric_names != names:
            study.set_metric_names(names)

    def sync(self) -> None:
        """fsync the study's journal and mark it saved (called with every results flush,
        once the rows are written), and upload it when the results live in object storage
        and it has grown."""
        self.mark_saved()
        self._push()

    def mark_saved(self) -> None:
        """Mark the journal's results so far as in the rows (``journal.unsaved_results``)."""
        self._journal.mark_saved(rows=len(self.records) + len(self.references))

    def _journal_closed(self) -> bool:
        return self._journal._file.closed

    def close(self) -> None:
        """Sync and release the study's journal (and, in a bucket, its lease)."""
        try:
            self._journal.close()
            self._push()
        finally:
            self.location.release_lease(self.key, self._lease)

    def _push(self) -> None:
        if self.location.local or not self.journal.exists():
            return
        size = self.journal.stat().st_size
        if size != self._pushed_size:
            self.location.renew_lease(self.key, self._lease)
            self.location.push_journal(self.journal)
            self._pushed_size = size
            self._renewed = time.monotonic()
        elif time.monotonic() - self._renewed > LEASE_S / 4:  # a study waiting, not idle
            self.location.renew_lease(self.key, self._lease)
            self._renewed = time.monotonic()

    def _saved_rows(self) -> int | None:
        """How many results the study's rows held when its last run saved them (its
        journal's saved mark), or None."""
        try:
            saved = json.loads(saved_mark_path(self.journal).read_text()).get("rows")
        except (OSError, ValueError, AttributeError):
            return None
        return saved if isinstance(saved, int) and not isinstance(saved, bool) else None

    # -- reconcile -------------------------------------------------------------------------
    def _reconcile(self, stored: Any, load_rows: Callable[[], list[TrialRecord]] | None,
                   conflicts: list[str]) -> None:
        """Make the journal agree with the stored rows, which are the record: a journal that
        lost trials the rows hold (truncated, deleted, an older copy pulled from a bucket) is
        rebuilt from the rows, trial numbers kept; rows that disagree with each other are
        refused."""
        where = shell_word(self.location.text)  # pasted into a shell: a URI's '&' quoted
        if conflicts:
            # with no journal, no repair can tell which run's rows are the study's: check
            # names each run's files (review CR29: this had sent the user to a repair that
            # refuses)
            how = (f"run `warpsweep check {where}`, which names each run's files, and move "
                   "one run's out of trials/" if self._created
                   else f"run `warpsweep check {where} --repair`")
            raise ConflictError(
                f"study {self.key}: {len(conflicts)} key(s) hold two different rows in {where} "
                f"({conflicts[0]}); {how}")
        if not stored:
            return
        trials = {t.number: t for t in self.study.get_trials(deepcopy=False)}
        misread = told_otherwise(trials)
        if misread:  # the sampler would learn from values nothing computed
            raise ConflictError(
                f"study {self.key}: its journal holds other values for {len(misread)} "
                f"trial(s) (trial {', '.join(map(str, misread[:3]))}"
                f"{', ...' if len(misread) > 3 else ''}) than what was told for them: the "
                f"journal edited; run `warpsweep check {where} --repair`, which sets it aside "
                "to be rebuilt from the rows")
        stale = stopped_trials_run_again(trials, stored)
        if stale:  # rebuilt from the rows, the journal would count them twice
            raise ConflictError(
                f"study {self.key}: the rows in {where} hold results for trial(s) "
                f"{', '.join(map(str, stale[:5]))}{', ...' if len(stale) > 5 else ''}, which "
                "its journal records as stopped and run again as later trials: rows copied in "
                f"from another run of the study; run `warpsweep check {where} --repair`, which "
                "sets them aside")
        behind, refs, disagree = [], [], []
        for (role, ident), fp in stored.items():
            if role == "reference":
                data = self.study.user_attrs.get(f"ref:{ident}")
                if data is None:
                    refs.append(ident)
            else:
                t = trials.get(ident)
                data = t.user_attrs.get("record") if t is not None else None
                if data is None:
                    behind.append(ident)
            if data is not None and record_fingerprint(TrialRecord.from_json(data)) != fp:
                disagree.append(f"trial {ident}" if role == "trial" else f"reference {ident!r}")
        if disagree:  # the journal was told what was computed: a row edited or copied
            raise ConflictError(
                f"study {self.key}: the rows in {where} record other results than its journal "
                f"for {len(disagree)} run(s) ({', '.join(disagree[:3])}"
                f"{', ...' if len(disagree) > 3 else ''}): rows edited or copied from "
                f"elsewhere; run `warpsweep check {where} --repair`, which puts back what "
                "the journal records")
        if not behind and not refs:
            return
        if load_rows is None:
            raise ConflictError(
                f"study {self.key}: its journal is behind the rows in {where} (trials "
                f"{_ranges(sorted(behind))}); run `warpsweep check {where} --repair`")
        rows = load_rows()
        self._refuse_rows_of_another_model(rows)
        if not self.study.user_attrs.get("spec"):
            # the journal that recorded how the study ran is gone: its rows say it instead
            self._refuse_another_sampler_or_seed(_how_rows_ran(self.key, rows))
        if not behind:
            # the model and spec first, as a rebuild writes them: references alone, cut
            # short before them, had read as an older warpsweep's study (probe RESUME2)
            if self.study.user_attrs.get("model") is None:
                self.study.set_user_attr("model", _model_attr())
            if not self.study.user_attrs.get("spec"):
                self.study.set_user_attr("spec", self._spec_attr())
            for r in rows:
                if r.role == "reference" and r.label in refs:
                    self.study.set_user_attr(f"ref:{r.label}", r.to_json())
            return
        self._rebuild(rows, trials, sorted(behind))

    def _rebuild(self, rows: list[TrialRecord], trials: dict[int, Any],
                 behind: list[int]) -> None:
        from tuner.results.cut_short import cut_short_repair

        if (unsettled := cut_short_repair(self.location, self.key)) is not None:
            raise ConflictError(f"{unsettled}: its rows past the journal may be that run's")
        by_number = {r.trial: r for r in rows if r.role == "trial"}
        records = {n: TrialRecord.from_json(t.user_attrs["record"]) for n, t in trials.items()
                   if "record" in t.user_attrs and n not in by_number}  # told, row lost
        records.update(by_number)
        requeue = [t.params for n, t in trials.items()
                   if n not in records and t.state == TrialState.RUNNING and t.params]
        attrs = dict(self.study.user_attrs)
        # first in the new journal: the rows were checked to be this model's, and a journal
        # cut short before them had read as an older warpsweep's, never to resume (probe R27)
        if attrs.get("model") is None:
            attrs["model"] = _model_attr()
        if not attrs.get("spec"):
            attrs["spec"] = self._spec_attr()
        for r in rows:
            if r.role == "reference":
                attrs[f"ref:{r.label}"] = r.to_json()
        self._journal.close()
        stale = None
        if self.journal.exists() and (self._created or not self.journal.stat().st_size):
            self.journal.unlink()  # empty, or this run's own: nothing to keep
        if self.journal.exists():
            stale = self.journal.with_name(f"{self.journal.name}.behind-{time.time_ns()}")
            os.replace(self.journal, stale)
        storage, self._journal = journal_storage(self.journal, self.location.text)
        self._pushed_size = -1
        directions = list(self.spec.objective.directions)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            study = optuna.create_study(
                storage=storage, study_name=self.key, directions=directions,
                sampler=optuna.samplers.RandomSampler(seed=self.spec.seed))
            for k, v in attrs.items():
                study.set_user_attr(k, v)
            for n in range(max(records, default=-1) + 1):
                record = records.get(n)
                if record is not None:
                    study.enqueue_trial(self._journal_params(self._drawn(record.params)))
                trial = study.ask()
                if trial.number != n:  # cannot happen on a fresh journal: say so if it does
                    raise ConflictError(f"study {self.key}: rebuilding its journal gave trial "
                                        f"{trial.number} where {n} was due")
                if record is None:  # a number the rows never held (interrupted, requeued)
                    storage.set_trial_user_attr(trial._trial_id, "rebuilt_gap", True)
                    study.tell(n, state=TrialState.FAIL)
                    continue
                try:
                    drawn = self.space.suggest(UserNamedTrial(trial, self.space))
                    if self._row_key(drawn) != self._row_key(record.params):
                        raise ValueError(f"the space draws no {record.params}")
                except ValueError as exc:  # a row's knob among no choice of the space
                    raise ConflictError(
                        f"study {self.key}: trial {n}'s row in {self.location.text} holds a "
                        f"configuration outside the study's space ({exc}), which no run of "
                        "it writes (a row edited, or copied from another study): set its file "
                        "aside or restore it") from None
                storage.set_trial_user_attr(trial._trial_id, "record", record.to_json())
                if record.values is not None:
                    study.tell(n, record.values)
                else:
                    study.tell(n, state=TrialState.FAIL)
            for params in requeue:
                study.enqueue_trial(self._journal_params(self.space.config_params(params)))
            self.study = optuna.create_study(
                storage=storage, study_name=self.key, directions=directions,
                sampler=self._sampler(self.spec.seed), load_if_exists=True)
        kept = f"; the old one is kept as {stale.name}" if stale is not None else ""
        print(f"warpsweep: study {self.key}: its journal was behind the results (trials "
              f"{_ranges(behind)}); rebuilt from the rows{kept}", file=sys.stderr)

    def _whole_configuration(self, params: dict[str, Any]) -> bool:
        """Whether a trial's journal holds every knob the space draws for it."""
        try:
            self.space.suggest(UserNamedTrial(optuna.trial.FixedTrial(params), self.space))
        except ValueError:
            return False
        return True

    def _spec_attr(self) -> dict[str, Any]:
        """How the study runs, as its journal records it."""
        return {"graph": self.spec.graph, "algorithm": self.spec.algorithm,
                "device": self.spec.device, "space": self.space.name,
                "space_digest": self.space.digest, "objective": str(self.spec.objective),
                "sources": self.spec.n_sources(), "seed": self.spec.seed,
                "sampler": self.spec.sampler}

    def _journal_knows_more(self, stored: Any) -> bool:
        """Whether the journal records a trial or reference the indexed rows lack."""
        if any(label.startswith("ref:") and ("reference", label[4:]) not in stored
               for label in self.study.user_attrs):
            return True
        return any("record" in t.user_attrs and ("trial", t.number) not in stored
                   for t in self.study.get_trials(deepcopy=False))

    # -- resume ----------------------------------------------------------------------------
    def _refuse_another_sampler_or_seed(self, ran: dict[str, Any]) -> None:
        refuse_another_sampler_or_seed(self.key, self.spec, ran)

    def _refuse_another_model(self, ran: dict[str, Any] | None) -> None:
        """A study resumes only under the cost model it was simulated with (``ran``: what its
        journal recorded when it began): continuing it would rank trials of two models as
        one study, and tell the sampler both. A study of an older warpsweep recorded none:
        one that holds results cannot be shown to be this model's, and is refused too."""
        if ran is None:
            if self.study.get_trials(deepcopy=False) or any(
                    label.startswith("ref:") for label in self.study.user_attrs):
                self._refuse_unrecorded_model(self._journal_provenance())
            return
        if ran.get("digest") == model_digest():
            return
        made = ", ".join(f"{k} {ran[k]}" for k in ("warpsweep", "commit") if ran.get(k))
        raise ConfigError(
            f"study {self.key} was simulated by another version of warpsweep's model "
            f"({ran.get('digest')}{'; ' + made if made else ''}) than this one's "
            f"({model_digest()}): its trials and new ones would be ranked as one study. Tune "
            f"into another --results directory to study this version, or resume it with the "
            f"version that began it")

    def _refuse_another_build(self, meta: GraphMeta) -> None:
        """A study resumes only on the graph and sources its rows were computed on: the
        journal records them when the graph is first prepared (a study of an older warpsweep
        recorded none; its rows name their sources). Another numpy can build another graph,
        or draw other sources, from the same spec and seed."""
        if not meta.edges:  # a finished study's graph, read from its row: nothing built
            return
        recorded = self.study.user_attrs.get("graph") or {}
        check_same_build(meta.spec, "edges", meta.edges, recorded.get("edges"))
        drawn = tuple(meta.sources)
        if recorded.get("sources"):
            check_same_build(meta.spec, "sources", drawn, tuple(recorded["sources"]))
        for record in [*self.records.values(), *self.references.values()]:
            if record.sources:
                check_same_build(meta.spec, "sources", drawn, tuple(record.sources))
        if not recorded and not self._journal_closed():
            self.study.set_user_attr("graph", {"edges": meta.edges, "sources": list(drawn),
                                               "libraries": library_versions()})

    def _refuse_rows_of_another_model(self, rows: list[TrialRecord]) -> None:
        """Rows the journal lacks, computed under another cost model (its journal lost, or
        a file copied in), are not rebuilt into it: their trials would be ranked with this
        model's. Rows older than the digest carry none: neither are they."""
        other = sorted({r.model_digest for r in rows} - {None, model_digest()})
        if other:
            self._refuse_another_model({"digest": ", ".join(other)})
        unrecorded = [r for r in rows if r.model_digest is None]
        if unrecorded:
            self._refuse_unrecorded_model(_provenance(unrecorded))

    def _journal_provenance(self) -> str:
        """The versions that made the journal's records, as ``_provenance`` words them."""
        records = [TrialRecord.from_json(t.user_attrs["record"])
                   for t in self.study.get_trials(deepcopy=False) if "record" in t.user_attrs]
        return _provenance(records)

    def _refuse_unrecorded_model(self, made: str) -> None:
        raise unrecorded_model_error(self.key, made)

    def _resume(self, stored: set[tuple[str, Any]]) -> None:
        retry: dict[Any, tuple[int, dict[str, Any]]] = {}
        self._name_metrics(self.study)
        if self.study.user_attrs.get("model") is None:
            self.study.set_user_attr("model", _model_attr())
        if not self.study.user_attrs.get("spec"):
            self.study.set_user_attr("spec", self._spec_attr())
        for label, data in self.study.user_attrs.items():
            if label.startswith("ref:"):
                record = TrialRecord.from_json(data)
                self.references[record.label] = record
                self._remember(-1, record)
                self._consider_best(record)
                if ("reference", record.label) not in stored:
                    self._add_row(record)
        storage = self.study._storage
        for t in self.study.get_trials(deepcopy=False):
            data = t.user_attrs.get("record")
            if t.state == TrialState.RUNNING:
                if data is not None:  # recorded but not told before the crash: tell it now
                    record = TrialRecord.from_json(data)
                    self._tell(t.number, record)
                else:  # interrupted: fail it, and enqueue its configuration again
                    storage.set_trial_user_attr(t._trial_id, "interrupted", True)
                    self.study.tell(t.number, state=TrialState.FAIL, skip_if_finished=True)
                    # only a whole one: knobs half drawn are no configuration, and the rest
                    # drawn for an enqueued trial miss the untried-configuration sampler
                    # (a repeat had been written while hundreds were untried, probe R27)
                    if self._whole_configuration(t.params):
                        self.study.enqueue_trial(self._journal_params(
                            self.space.config_params(t.params)),
                            user_attrs={"requeued_from": t.number})
                    continue
            elif data is None or not t.state.is_finished():
                continue
            record = TrialRecord.from_json(data)
            self._add_record(t.number, record)
            if ("trial", t.number) not in stored:
                self._add_row(record)
            if failed_by_environment(record):  # tried again below, unless since answered
                retry.setdefault(self._dedupe_key(record.params), (t.number, t.params))
                continue
            self._tried.add(self._dedupe_key(record.params))
            if record.state != "duplicate":
                self._remember(t.number, record)
        self._retry(retry)
        if self.exhaustive:
            self._enqueue_grid()

    def _retry(self, failed: dict[Any, tuple[int, dict[str, Any]]]) -> None:
        """Enqueue again the configurations whose trials failed for the machine's sake (a
        worker died, memory ran out) and that no trial has answered since, nor waits for:
        their failures had used up the budget, and a resume ran none of them again."""
        waiting = {self._dedupe_key(self.space.config_params(t.params))
                   for t in self.study.get_trials(deepcopy=False, states=(TrialState.WAITING,))}
        for key, (number, params) in failed.items():
            if key in self._tried or key in waiting:
                continue
            waiting.add(key)
            self.study.enqueue_trial(self._journal_params(self.space.config_params(params)),
                                     user_attrs={"retried_from": number})

    def _enqueue_grid(self) -> None:
        configs = list(self.space.configs())
        random.Random(self.spec.seed).shuffle(configs)
        seen = {self._dedupe_key(r.params) for r in self.records.values()}
        waiting = self.study.get_trials(deepcopy=False, states=(TrialState.WAITING,))
        for t in waiting:
            fixed = self.space.config_params(t.system_attrs.get("fixed_params", {}))
            seen.add(self._dedupe_key({**dict(self.space.fixed), **fixed}))
        room = self.budget - self.done - len(waiting)
        for config in configs:
            if room <= 0:
                break
            k = self._dedupe_key(config)
            if k in seen:
                continue
            seen.add(k)
            self.study.enqueue_trial(self._journal_params(config))
            room -= 1

    def _dedupe_key(self, config: dict[str, Any]) -> Any:
        try:
            return self._built(config)
        except WarpsweepError:
            return ("invalid", json.dumps(config, sort_keys=True, default=repr))

    def _remember(self, number: int, record: TrialRecord) -> None:
        if record.state == "failed" and (record.error or "").startswith(WORKER_FAILURE):
            return
        self._answers[self._dedupe_key(record.params)] = (number, record)

    # -- asking ----------------------------------------------------------------------------
    def _missing_references(self) -> list[tuple[str, dict[str, Any]]]:
        if not self.spec.references:
            return []
        missing = []
        for label, config in reference_configs().items():
            if label in self.references:
                continue
            try:
                self._built(config)
            except WarpsweepError:
                continue  # a baseline this simulator cannot run: nothing to compare with
            missing.append((label, config))
        return missing

    def wants_prepare(self) -> bool:
        """Whether anything is left to evaluate (else the graph need not be loaded at all)."""
        return self.done < self.budget or bool(self._missing_references())

    def refuse_changed_policy(self, config: dict[str, Any], ran: str) -> None:
        """Refuse a trial that ran another version of its policy file than the study's key
        names (the file edited or retrained during the run): recorded, its row would pass
        for the old policy's."""
        path = config.get("policy")
        meant = self._policy_digests.get(str(path)) if path else None
        if ran and meant is not None and ran != meant:
            raise ConfigError(
                f"policy file {str(path)!r} changed while {self.key} ran (content {meant} when "
                f"the run began, {ran} in the trial): that trial is not recorded. A changed "
                "policy is a new study: run the same command again once the file stays as it "
                "is; every finished evaluation is saved")

    def set_prepared(self, meta: GraphMeta) -> None:
        """The study's graph is ready; queue the reference runs not done yet."""
        self._refuse_another_build(meta)
        self.meta = meta
        self._pending_refs = self._missing_references()

    @property
    def done(self) -> int:
        """Distinct configurations the sampler has proposed and the study answered (resumed
        ones included; a repeat counts once): what the budget counts."""
        return len(self._tried)

    @property
    def runs_done(self) -> int:
        """What the progress counts: configurations tried (up to the budget) plus the
        reference runs finished."""
        return min(self.done, self.budget) + len(self.references)

    @property
    def busy(self) -> int:
        """Trials started but not finished (evaluating or waiting on a duplicate)."""
        return len(self._inflight) + sum(len(w) for w in self._waiters.values())

    def needs_work(self) -> bool:
        """Whether this study still wants trials or reference runs."""
        if self._pending_refs:
            return True
        return not self.exhausted and self.done + self._trials_busy() < self.budget

    def finished(self) -> bool:
        """Whether nothing is left to start or to wait for."""
        idle = not self._inflight and not self._waiters
        return idle and (self.stopping or not self.needs_work())

    def _trials_busy(self) -> int:
        return sum(1 for j in self._inflight.values() if j.role == "trial")

    def next_job(self) -> Job | None:
        """The next configuration to evaluate; duplicates and invalid ones are answered here."""
        if self.meta is None or self.stopping:
            return None
        while self._pending_refs:
            label, config = self._pending_refs.pop(0)
            strategy = self._built(config)
            if strategy in self._inflight:
                continue
            answered = self._answers.get(self._dedupe_key(config))
            if answered is not None and self._answer_reference(label, config, answered[1]):
                continue
            job = Job(self, "reference", config, strategy, label=label)
            self._inflight[strategy] = job
            return job
        while self.done + self._trials_busy() < self.budget and not self.exhausted:
            if not self._untried_left():
                if not self._inflight and not self._waiters:
                    self.exhausted = True  # (the budget counted the space otherwise)
                break  # what is left is in flight: asking now draws only repeats
            trial = self.study.ask()
            config = self.space.suggest(UserNamedTrial(trial, self.space))
            repeats = self.study.sampler.repeats.pop(trial.number, 0)
            key = self._dedupe_key(config)
            if key in self._answers or key in self._inflight:
                self._repeats_in_a_row += 1
                if self._repeats_in_a_row >= MAX_REPEATS_IN_A_ROW:
                    self.exhausted = True  # the sampler only proposes what it has seen
                if key in self._answers:
                    number, original = self._answers[key]
                    self._finish_trial(trial, config, self._duplicate(trial.number, config,
                                                                      number, original))
                else:
                    self._waiters.setdefault(key, []).append((trial, config))
                continue
            self._repeats_in_a_row = 0
            try:
                strategy = self._built(config)
            except WarpsweepError as exc:
                failed = self._failed_record("trial", config, f"invalid configuration: {exc}",
                                             trial=trial.number)
                failed.repeats = repeats
                record = self._finish_trial(trial, config, failed)
                self._answers[key] = (trial.number, record)
                continue
            job = Job(self, "trial", config, strategy, trial=trial, repeats=repeats)
            self._inflight[strategy] = job
            return job
        return None

    def abandon(self, job: Job) -> None:
        """A job asked but never started (the run stopped first): like a trial interrupted
        mid-run, it fails in Optuna and its configuration is enqueued for the next resume."""
        self._inflight.pop(job.strategy, None)
        if job.trial is None:
            self._pending_refs.insert(0, (job.label, job.config))
        else:
            self.study._storage.set_trial_user_attr(job.trial._trial_id, "interrupted", True)
            self.study.tell(job.trial.number, state=TrialState.FAIL, skip_if_finished=True)
            self.study.enqueue_trial(self._journal_params(job.config),
                                     user_attrs={"requeued_from": job.trial.number})
        for trial, _ in self._waiters.pop(job.strategy, []):
            self.study.tell(trial.number, state=TrialState.FAIL, skip_if_finished=True)

    # -- telling ---------------------------------------------------------------------------
    def finish(self, job: Job, outcome: Outcome) -> TrialRecord:
        """Record an evaluation's outcome (row first, then Optuna) and answer its duplicates,
        a stop signal held until both hold it (a SIGTERM between them had left the row
        ahead of the journal, which `check` names)."""
        with stop_signals_held():
            return self._finish(job, outcome)

    def _finish(self, job: Job, outcome: Outcome) -> TrialRecord:
        self._inflight.pop(job.strategy, None)
        number = job.trial.number if job.trial is not None else None
        if outcome.error is not None:
            record = self._failed_record(job.role, job.config, outcome.error, number,
                                         job.label, outcome)
        else:
            values = self.spec.objective.values(outcome.metrics)
            if not is_finite(values):
                record = self._failed_record(
                    job.role, job.config, f"objective {self.spec.objective} is not finite: "
                    f"{values}", number, job.label, outcome)
            else:
                record = self._record(job.role, "complete", job.config, trial=number,
                                      label=job.label, values=values, outcome=outcome)
        if job.role == "trial":
            record.repeats = job.repeats
        if job.role == "reference":
            self._add_row(record)
            self.study.set_user_attr(f"ref:{job.label}", record.to_json())
            self.references[job.label] = record
            self._remember(-1, record)
            self._consider_best(record)
        else:
            record = self._finish_trial(job.trial, job.config, record)
            self._remember(number, record)
        original_number = -1 if number is None else number
        for trial, config in self._waiters.pop(job.strategy, []):
            self._finish_trial(trial, config, self._duplicate(trial.number, config,
                                                              original_number, record))
        return record

    def _answer_reference(self, label: str, config: dict[str, Any],
                          original: TrialRecord) -> bool:
        """Record reference ``label`` from a trial that ran its configuration already (a
        study run first with --no-references), as a trial is answered from a reference;
        False where that trial failed or another cost model ran it (then it runs)."""
        if original.role != "trial" or original.state != "complete" or (
                original.model_digest != model_digest()):
            return False
        record = dataclasses.replace(  # the study's fields, the trial's figures
            self._record("reference", "failed", config, label=label, error="-"),
            state="complete", error=None, values=original.values, worker=original.worker,
            node_id=original.node_id, **_figures_of(original))
        self._add_row(record)
        self.study.set_user_attr(f"ref:{label}", record.to_json())
        self.references[label] = record
        self._consider_best(record)
        return True

    def _finish_trial(self, trial: optuna.trial.Trial, config: dict[str, Any],
                      record: TrialRecord) -> TrialRecord:
        self._add_row(record)
        record = self._tell(trial.number, record, trial)
        if self.on_trial is not None:
            self.on_trial(self, record)
        return record

    def _tell(self, number: int, record: TrialRecord,
              trial: optuna.trial.Trial | None = None) -> TrialRecord:
        storage = self.study._storage
        if trial is not None:
            trial_id = trial._trial_id
        else:
            trial_id = storage.get_trial_id_from_study_id_trial_number(self.study._study_id,
                                                                       number)
        storage.set_trial_user_attr(trial_id, "record", record.to_json())
        try:
            if record.values is not None:
                self.study.tell(number, record.values)
            else:
                self.study.tell(number, state=TrialState.FAIL)
        except OSError:  # the journal's disk: the run stops, the record kept for the resume
            raise  # (it had become a failed row, the result lost: probe STOREREAD)
        except Exception as exc:  # a tell that fails becomes a failed row, never only a log line
            failed = dataclasses.replace(
                record, state="failed", values=None, values_std=None, metrics=None,
                error=f"tell failed: {type(exc).__name__}: {exc}",
            )
            self._amend_row(record, failed)
            storage.set_trial_user_attr(trial_id, "record", failed.to_json())
            self.study.tell(number, state=TrialState.FAIL, skip_if_finished=True)
            record = failed
        self._add_record(number, record)
        self._tried.add(self._dedupe_key(record.params))
        return record

    def _add_record(self, number: int, record: TrialRecord) -> None:
        self.records[number] = record
        self._consider_best(record)

    def _consider_best(self, record: TrialRecord) -> None:
        """Keep the best values seen, trials' and references' alike."""
        sort_key = self.spec.objective.sort_key
        if record.values is not None and (self._best is None
                                          or sort_key(record.values) < sort_key(self._best)):
            self._best = record.values

    # -- records ---------------------------------------------------------------------------
    def _record(self, role: str, state: str, config: dict[str, Any], trial: int | None = None,
                label: str | None = None, values: list[float] | None = None,
                outcome: Outcome | None = None, error: str | None = None,
                duplicate_of: int | None = None) -> TrialRecord:
        meta = self.meta
        spread = outcome.spread if outcome is not None and state == "complete" else {}
        t_spread = spread.get("time_us")
        values_std = ([spread[m][0] for m in self.spec.objective.metrics if m in spread]
                      if spread else None)
        return TrialRecord(
            study_key=self.key, role=role, state=state,
            graph_id=meta.graph_id if meta else "", graph_spec=meta.spec if meta else "",
            algorithm=self.spec.algorithm, device=self.spec.device, space=self.space.name,
            space_digest=self.space.digest, sampler=self.spec.sampler,
            objective=str(self.spec.objective), params=self._effective(config),
            seed=self.spec.seed, trial=trial, label=label, values=values,
            values_std=values_std or None,
            metrics=outcome.metrics if outcome is not None and state == "complete" else None,
            sources=list(meta.sources) if meta else [], n_sources=used_sources(self.spec, meta),
            time_us_std=t_spread[0] if t_spread else None,
            time_us_min=t_spread[1] if t_spread else None,
            time_us_max=t_spread[2] if t_spread else None,
            error=error, duplicate_of=duplicate_of,
            wall_s=outcome.wall_s if outcome is not None else 0.0,
            device_digest=self._device_digest, model_digest=model_digest(),
            worker=outcome.worker or None if outcome is not None else None,
            node_id=outcome.node_id if outcome is not None else None,
        )

    def _effective(self, config: dict[str, Any]) -> dict[str, Any]:
        """Every knob that applies to the configuration, defaults included (the sampled
        config itself when the simulator rejects it)."""
        try:
            return self._built(config).to_params()
        except WarpsweepError:
            return dict(config)

    def _failed_record(self, role: str, config: dict[str, Any], error: str,
                       trial: int | None = None, label: str | None = None,
                       outcome: Outcome | None = None) -> TrialRecord:
        return self._record(role, "failed", config, trial=trial, label=label, outcome=outcome,
                            error=error or "unknown error")

    def _duplicate(self, number: int, config: dict[str, Any], original_number: int,
                   original: TrialRecord) -> TrialRecord:
        values = (self.spec.objective.values(original.metrics)
                  if original.state == "complete" else None)
        error = None if values is not None else (original.error or "duplicate of a failed trial")
        record = self._record("trial", "duplicate", config, trial=number, values=values,
                              error=error, duplicate_of=original_number)
        # the row repeats the original's figures, so a query over duplicates needs no join
        return dataclasses.replace(record, **_figures_of(original))

    # -- results ---------------------------------------------------------------------------
    def best_value(self) -> float | None:
        """Best first-objective value so far, the references' included."""
        return None if self._best is None else self._best[0]

    def ranked(self) -> list[TrialRecord]:
        """Every evaluated configuration, sampled or reference, best first (one row per
        configuration; for several objectives, the Pareto front)."""
        complete = [r for r in self.records.values() if r.state == "complete"]
        complete += [r for r in self.references.values() if r.state == "complete"]
        if len(self.spec.objective.metrics) == 1:
            # ties as `warpsweep best` breaks them (tuner.analysis.trials.study_summaries):
            # references first, then by trial number, then by label
            complete.sort(key=lambda r: (self.spec.objective.sort_key(r.values), r.role,
                                         -1 if r.trial is None else r.trial, r.label or ""))
        distinct: dict[Any, TrialRecord] = {}
        for r in complete:
            distinct.setdefault(self._dedupe_key(r.params), r)
        configs = list(distinct.values())
        if len(self.spec.objective.metrics) > 1:
            return pareto_front(configs, self.spec.objective)
        return configs

    @property
    def repeats(self) -> int:
        """Proposals of configurations already tried: those the sampler replaced by an untried
        one (each trial's ``repeats``) and those answered from the study (``duplicate``)."""
        return sum((r.repeats or 0) + (r.state == "duplicate") for r in self.records.values())

    def summary(self, top: int = 5) -> StudySummary:
        """Best configurations, the references and the counts."""
        evaluated = [r for r in self.records.values() if r.state != "duplicate"]
        failed = sum(r.state == "failed" for r in [*evaluated, *self.references.values()])
        answered = {self._dedupe_key(r.params) for r in evaluated
                    if not failed_by_environment(r)}
        to_retry = {self._dedupe_key(r.params) for r in evaluated
                    if failed_by_environment(r)} - answered
        counts = {"configurations": self.done, "evaluations": len(evaluated) + len(
            self.references), "references": len(self.references), "failed": failed,
            "repeats": self.repeats}
        if not self._journal_closed() and self.study.user_attrs.get("counts") != counts:
            self.study.set_user_attr("counts", counts)  # the journal says what the table says
        ranked = self.ranked()
        # failed evaluations grouped by their reason with its numbers blanked (w=18 and w=20
        # fail alike), each group shown by its first
        errors = [r.error.splitlines()[0][:300] for r in [*evaluated, *self.references.values()]
                  if r.state == "failed" and r.error]
        reasons = Counter(_NUMBERS.sub("#", e) for e in errors)
        common = None
        if reasons:
            shape, count = reasons.most_common(1)[0]
            common = (next(e for e in errors if _NUMBERS.sub("#", e) == shape), count)
        return StudySummary(
            key=self.key, spec=self.spec, space=self.space.name, budget=self.budget,
            done=self.done, evaluations=len(evaluated),
            failed=failed, to_retry=len(to_retry),
            duplicates=self.repeats,
            best=ranked[:top], references=dict(self.references), graph=self.meta,
            exhausted=self.exhausted,
            stored_sources=next((r.n_sources for r in [*self.records.values(),
                                                       *self.references.values()]
                                 if r.n_sources), 0),
            ranked=ranked,
            common_failure=common,
        )


# the numbers of a failure's reason, blanked to group failures alike (w=18, w=20)
_NUMBERS = re.compile(r"\d+(?:\.\d+)?")

# an evaluation Ray gave up on after its retries (the runners' reason's prefix)
WORKER_FAILURE = "worker failure"


def failed_by_environment(record: TrialRecord) -> bool:
    """Whether a trial failed for the machine's sake, not its configuration's: its worker
    died (``WORKER_FAILURE``), or memory ran out (a MemoryError, or the memory guard's limit),
    which another run, or a resume with more memory, may not meet."""
    if record.state != "failed" or not record.error:
        return False
    return (record.error.startswith((WORKER_FAILURE, "MemoryError"))
            or f"raise the limit with {ENV_MAX_MEMORY}" in record.error)


def _how_rows_ran(key: str, rows: list[TrialRecord]) -> dict[str, Any]:
    """The sampler and seed a study's rows were evaluated under: its earliest trial's (the
    run that started it; empty where it has no trial rows). Rows drawn under two are two
    runs' (directories merged by hand): refused, rather than a journal rebuilt from both
    (probe RESUME2: one configuration had been evaluated twice)."""
    trials = [r for r in rows if r.role == "trial" and r.trial is not None]
    if not trials:
        return {}
    runs: dict[tuple[str, Any], list[int]] = {}
    for r in trials:
        if r.seed is not None:
            runs.setdefault((str(r.sampler), r.seed), []).append(r.trial)
    if len(runs) > 1:
        told = "; ".join(f"{sampler} seed {seed}: trials {_ranges(sorted(numbers))}"
                         for (sampler, seed), numbers in sorted(runs.items(), key=str))
        raise ConflictError(
            f"study {key}: its rows were drawn by {len(runs)} runs ({told}) and no journal "
            "says which is the study's (directories merged?): move one run's rows out of "
            "trials/ (`warpsweep check` names their files), or tune into another --results")
    first = min(trials, key=lambda r: r.trial)
    return {"sampler": first.sampler, "seed": first.seed}


def unrecorded_model_error(key: str, made: str) -> ConfigError:
    """The refusal of a study whose results an older warpsweep made, before studies recorded
    their cost model (``made``: its version and commit, where known, as ``_provenance``)."""
    return ConfigError(
        f"study {key} was begun by an older warpsweep{made}, which did not record its cost "
        f"model: its trials cannot be shown to be this version's ({model_digest()}) and would "
        f"be ranked with new ones as one study. Tune into another --results directory to "
        f"study this version, or resume it with the version that began it")


def provenance(versions: Iterable[str | None], commits: Iterable[str | None]) -> str:
    """" (warpsweep V; commit C)" for the versions and commits given, or "" where none is
    known (records older than their provenance fields)."""
    versions, commits = sorted(set(versions) - {None}), sorted(set(commits) - {None})
    words = [f"warpsweep {', '.join(versions)}"] if versions else []
    words += [f"commit {', '.join(commits)}"] if commits else []
    return f" ({'; '.join(words)})" if words else ""


def _provenance(records: list[TrialRecord]) -> str:
    """``provenance`` of the versions that made ``records``."""
    return provenance((r.warpsweep_version for r in records), (r.git_commit for r in records))


def _model_attr() -> dict[str, str]:
    """The cost model a journal records its study under: this code's."""
    return {"digest": model_digest(), "warpsweep": warpsweep_version(), "commit": git_commit()}


def _ranges(numbers: list[int]) -> str:
    """``0-2,5`` for [0, 1, 2, 5]."""
    out: list[str] = []
    for n in numbers:
        if out and "-" not in out[-1].split(",")[-1] and int(out[-1]) == n - 1:
            out[-1] = f"{n - 1}-{n}"
        elif out and "-" in out[-1] and int(out[-1].split("-")[1]) == n - 1:
            out[-1] = f"{out[-1].split('-')[0]}-{n}"
        else:
            out.append(str(n))
    return ",".join(out)


def pareto_front(records: list[TrialRecord], objective: Objective) -> list[TrialRecord]:
    """Records not dominated by any other, sorted by the first objective."""
    signs = [1.0 if d == "minimize" else -1.0 for d in objective.directions]

    def key(r: TrialRecord) -> list[float]:
        return [s * v for s, v in zip(signs, r.values, strict=True)]

    keyed = [(key(r), r) for r in records]
    front = [
        r for k, r in keyed
        if not any(all(a <= b for a, b in zip(o, k, strict=True)) and o != k for o, _ in keyed)
    ]
    return sorted(front, key=lambda r: key(r))


def _figures_of(original: TrialRecord) -> dict[str, Any]:
    """A record's figures, for a row answered from it (not simulated: no wall time)."""
    return {"metrics": original.metrics, "values_std": original.values_std,
            "time_us_std": original.time_us_std, "time_us_min": original.time_us_min,
            "time_us_max": original.time_us_max, "wall_s": 0.0}
