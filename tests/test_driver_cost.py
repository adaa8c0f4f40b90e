"""The driver's cost per trial (issue 44) cut without changing what it proposes: the sampler's
view of a study kept between asks, strategies built once per configuration, tells without the
copy Optuna returns, records without ``dataclasses.asdict``. Each is checked against the plain
code path it replaced (kept here as it was before), on a seeded TPE sweep run by the batch
driver in this process, whose asks, tells and batches are fixed by the code alone."""

from __future__ import annotations

import copy
import json
import math
import zlib
from dataclasses import asdict

import optuna
import pytest
from optuna.trial import TrialState

from simulator import Strategy
from simulator.errors import ConfigError
from tuner.results.records import TrialRecord
from tuner.results.store import ResultStore
from tuner.results.store import read_trials
from tuner.tuning.dispatch import BatchRunner
from tuner.tuning.evaluate import Outcome
from tuner.tuning.evaluate import SimulatorBackend
from tuner.tuning.executor import InlineExecutor
from tuner.tuning.plan import check_spec
from tuner.tuning.plan import load_spaces
from tuner.tuning.samplers import REPEATED_ATTR
from tuner.tuning.samplers import IncrementalGroups
from tuner.tuning.samplers import _DrawnView
from tuner.tuning.spec import StudySpec
from tuner.tuning.study import StudyRun


class InstantBackend(SimulatorBackend):
    """Real (tiny) graph preparation; an evaluation returns at once a time that depends on
    the configuration only, and reports 0.25 s (so batches are sized as on a cluster)."""

    def evaluate(self, graph, runs, algorithm, device, config):
        text = json.dumps(config, sort_keys=True, default=str)
        return Outcome({"time_us": 1.0 + zlib.crc32(text.encode()) % 1000}, {}, None, 0.25,
                       "inline", None)


class WideInline(InlineExecutor):
    """In-process calls, as many in flight as a cluster of ``capacity`` CPUs would hold."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity


def sweep(results, studies: int = 2, trials: int = 80) -> dict[str, list]:
    """A seeded TPE sweep by the batch driver; each study's trials (number, state, params)."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    specs = [check_spec(StudySpec(graph=f"rmat:scale=6,seed={s}", algorithm=a, device="h100",
                                  space="vwarp", trials=trials, sources=1, sampler="tpe",
                                  references=False, seed=s))
             for s in range(1, studies // 2 + 2) for a in ("bfs", "cc")][:studies]
    store = ResultStore.open(results)
    try:
        BatchRunner(WideInline(16), store, results, backend=InstantBackend()).run(
            specs, load_spaces(specs))
    finally:
        store.close()
    out: dict[str, list] = {}
    for r in sorted(read_trials(str(results)).to_pylist(),
                    key=lambda r: (r["study_key"], r["trial"])):
        params = {k: v for k, v in r.items() if k.startswith("param_") and v is not None}
        out.setdefault(r["study_key"], []).append((r["trial"], r["state"], r["repeats"],
                                                   params))
    return out


# -- the code paths before issue 44, as they were ------------------------------------------
def plain_number(view, t):
    return t.number + sum(len(v) for n, v in view._repeats.items() if n <= t.number)


def plain_convert(view, t, number=None):
    number = plain_number(view, t) if number is None else number
    params, dists = {}, {}
    for k, v in t.params.items():
        p = view._powers.get(k)
        if p is None:
            params[k], dists[k] = v, t.distributions[k]
        else:
            params[p.optuna_name] = round(math.log2(v))
            dists[p.optuna_name] = view._drawn[p.optuna_name]
    return optuna.trial.FrozenTrial(
        number=number, state=t.state, value=None, values=t.values,
        datetime_start=t.datetime_start, datetime_complete=t.datetime_complete,
        params=params, distributions=dists, user_attrs=t.user_attrs,
        system_attrs=t.system_attrs, intermediate_values=t.intermediate_values,
        trial_id=t._trial_id)


def plain_get_trials(view, deepcopy=True, states=None, use_cache=False):
    out, offset = [], 0
    for t in view._study._get_trials(deepcopy=False, use_cache=use_cache):
        for params, values in view._repeats.get(t.number, ()):
            state = TrialState.COMPLETE if values is not None else TrialState.FAIL
            if states is None or state in states:
                out.append(optuna.trial.FrozenTrial(
                    number=t.number + offset, state=state, value=None, values=values,
                    datetime_start=t.datetime_start, datetime_complete=t.datetime_start,
                    params=params, distributions={k: view._drawn[k] for k in params},
                    user_attrs={}, system_attrs={}, intermediate_values={},
                    trial_id=t._trial_id))
            offset += 1
        if states is None or t.state in states:
            out.append(plain_convert(view, t, t.number + offset))
    return out


def plain_calculate(self, study, use_cache=False):
    if self._study_id is None:
        self._study_id = study._study_id
    states = ((TrialState.COMPLETE, TrialState.PRUNED) if self._include_pruned
              else (TrialState.COMPLETE,))
    for trial in study._get_trials(deepcopy=False, states=states, use_cache=use_cache):
        if trial.number not in self._added:
            self._added.add(trial.number)
            self._search_space.add_distributions(trial.distributions)
    return copy.deepcopy(self._search_space)


def plain_paths(monkeypatch) -> None:
    """Every path issue 44 made cheaper, back as it was."""
    monkeypatch.setattr(_DrawnView, "_get_trials", plain_get_trials)
    monkeypatch.setattr(_DrawnView, "number", plain_number)
    monkeypatch.setattr(_DrawnView, "convert", plain_convert)
    monkeypatch.setattr(IncrementalGroups, "calculate", plain_calculate)
    monkeypatch.setattr(StudyRun, "_built", lambda self, config: self._build(config))


def summary(trials):
    return [(t.number, t.state, t.params, t.distributions, t.values, t._trial_id)
            for t in trials]


# -- tests ---------------------------------------------------------------------------------
def test_a_seeded_sweep_proposes_what_the_plain_code_path_proposes(tmp_path, monkeypatch):
    fast = sweep(tmp_path / "fast")
    with monkeypatch.context() as m:
        plain_paths(m)
        plain = sweep(tmp_path / "plain")
    assert fast == plain
    assert [len(v) for v in fast.values()] == [80, 80]
    for trials in fast.values():  # TPE's own proposals, repeats replaced: a real test
        assert len({json.dumps(p, sort_keys=True) for *_, p in trials}) == 80
        assert sum(r for _, _, r, _ in trials) > 0


def test_the_kept_view_lists_what_converting_every_trial_lists(tmp_path, monkeypatch):
    kept = _DrawnView._get_trials
    seen = {"calls": 0, "running": 0, "repeats": 0}

    def checked(self, deepcopy=True, states=None, use_cache=False):
        listed = kept(self, deepcopy, states, use_cache)
        assert summary(listed) == summary(plain_get_trials(self, deepcopy, states, use_cache))
        for t in self._study._get_trials(deepcopy=False):
            assert self.number(t) == plain_number(self, t)
        seen["calls"] += 1
        seen["running"] += any(t.state == TrialState.RUNNING for t in listed)
        seen["repeats"] += any(not t.user_attrs and t.state == TrialState.COMPLETE
                               for t in listed)
        return listed

    monkeypatch.setattr(_DrawnView, "_get_trials", checked)
    sweep(tmp_path / "r")
    # listed often, with trials in flight (TPE's constant liar) and repeats among them
    assert seen["calls"] > 40 and seen["running"] > 10 and seen["repeats"] > 10, seen


def test_a_resumed_view_reads_the_repeats_from_the_journal(tmp_path):
    sweep(tmp_path / "r", studies=1, trials=40)
    journal = next((tmp_path / "r" / "studies").glob("*.journal"))
    from tuner.results.journal import DriverJournal

    backend = DriverJournal(journal)
    try:
        study = optuna.load_study(study_name=journal.stem,
                                  storage=optuna.storages.JournalStorage(backend))
        space = load_spaces([check_spec(StudySpec(graph="rmat:scale=6,seed=1",
                                                  algorithm="bfs", device="h100",
                                                  space="vwarp", trials=40, sources=1))])
        view = _DrawnView(study, next(iter(space.values())))
        assert any(t.user_attrs.get(REPEATED_ATTR) for t in study.trials)
        for states in (None, (TrialState.COMPLETE,), (TrialState.COMPLETE, TrialState.FAIL)):
            assert summary(view._get_trials(states=states)) == summary(
                plain_get_trials(view, states=states))
    finally:
        backend.close()


def test_a_study_not_numbered_by_position_is_listed_whole():
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study()
    for _ in range(4):
        trial = study.ask()
        study.tell(trial, trial.suggest_categorical("w", [4, 8]))
    space = load_spaces([check_spec(StudySpec(graph="rmat:scale=6,seed=1", algorithm="bfs",
                                              device="h100", space="vwarp", trials=4,
                                              sources=1))])

    class Gapped:  # a study whose listing skips trial 1 (no Optuna storage does)
        _storage = study._storage

        def _get_trials(self, deepcopy=False, states=None, use_cache=False):
            return [t for t in study._get_trials(deepcopy=False) if t.number != 1]

    view = _DrawnView(Gapped(), next(iter(space.values())))
    running = study.ask()
    view.add_repeat(study._storage.get_trial(running._trial_id), {"w": 8}, [1.0])
    for _ in range(2):  # and again, from what the first call kept
        assert summary(view._get_trials()) == summary(plain_get_trials(view))
        assert [t.number for t in view._get_trials()] == [0, 2, 3, 4, 5]


def test_record_fields_are_what_asdict_gives(tmp_path):
    full = TrialRecord("k", "trial", "complete", "g", "gs", "bfs", "h100", "vwarp", "d", "tpe",
                       "time_us", {"w": 4, "chunk": None}, 3, trial=7, values=[1.5],
                       values_std=[0.1], metrics={"time_us": 1.5}, sources=[1, 2])
    failed = TrialRecord("k", "trial", "failed", "g", "gs", "bfs", "h100", "vwarp", "d", "tpe",
                         "time_us", {"w": 4}, 3, trial=8, error="boom")
    for record in (full, failed):
        fields = record._fields()
        assert fields == asdict(record) and list(fields) == list(asdict(record))
        assert fields["params"] is not record.params  # a copy, as asdict's
        assert TrialRecord.from_json(json.loads(json.dumps(record.to_json()))) == record


def test_built_strategies_are_remembered_and_rejections_raise_again():
    run = StudyRun.__new__(StudyRun)  # only the builder and its memo are needed
    calls = []
    run._build = lambda config: calls.append(dict(config)) or Strategy.from_params(config)
    run._built_memo = {}
    config = {"mapping": "vwarp", "w": 8}
    first = run._built(config)
    assert run._built(dict(config)) is first and first == Strategy.from_params(config)
    assert len(calls) == 1
    for _ in range(2):
        with pytest.raises(ConfigError):
            run._built({"mapping": "no-such-mapping"})
    assert len(calls) == 2  # rejected once, answered from the memo after
    with pytest.raises(ConfigError):  # equal to 8 but a float: built (and rejected), not
        run._built({"mapping": "vwarp", "w": 8.0})  # answered with 8's strategy
    assert len(calls) == 3


