"""Few repeats, clean records (issue 42): a study proposes only configurations it has not tried,
counting the sampler's repeats on the trials instead of storing them; its journal holds one trial
per configuration under the knobs' own names and the metric's name; `warpsweep check` knows it;
`warpsweep dashboard` reads every journal of a results directory as one storage."""

from __future__ import annotations

import json
import shutil

import optuna
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from optuna.storages import JournalStorage
from optuna.storages.journal import JournalFileBackend

from tuner import api
from tuner.cli import main
from tuner.cli.check import check
from tuner.results.journal import MergedJournals
from tuner.results.store import read_trials
from tuner.tuning.samplers import REPEATED_ATTR

GRAPH = "rmat:scale=8,seed=2"


def _journal(results):
    (path,) = (results / "studies").glob("*.journal")
    storage = JournalStorage(JournalFileBackend(str(path)))
    return optuna.load_study(study_name=path.stem, storage=storage)


def _config(row):
    return json.dumps({k: v for k, v in row.items() if k.startswith("param_")}, sort_keys=True,
                      default=str)


def test_a_60_trial_vwarp_study_stores_one_trial_and_row_per_configuration(tmp_path):
    result = api.tune(GRAPH, trials=60, sources=1, results=str(tmp_path), seed=3)
    (summary,) = result.studies
    rows = read_trials(str(tmp_path)).to_pylist()
    trials = [r for r in rows if r["role"] == "trial"]
    assert summary.done == 60 and len(trials) == 60
    assert {r["state"] for r in trials} <= {"complete", "failed"}  # no `duplicate` row
    assert len({_config(r) for r in trials}) == 60  # every row a new configuration
    # TPE converges within the space's 725 configurations and proposes tried ones: each is
    # counted on the trial that replaced it, and shown to TPE as it was seen before
    repeats = sum(r["repeats"] for r in trials)
    assert repeats == summary.duplicates > 0
    study = _journal(tmp_path)
    assert len(study.trials) == 60  # one trial per configuration (references: user attrs)
    assert study.metric_names == ["time_us"]
    chunked = [t for t in study.trials if "chunk" in t.params]
    assert chunked and not any("log2_chunk" in t.params for t in study.trials)
    assert all(t.params["chunk"] & (t.params["chunk"] - 1) == 0 for t in chunked)
    shown = sum(len(t.user_attrs.get(REPEATED_ATTR, [])) for t in study.trials)
    assert 0 < shown <= repeats
    report = check(str(tmp_path))
    assert report.problems == [] and f"{repeats} repeats" in report.counts


def test_a_resumed_study_never_evaluates_a_configuration_twice(tmp_path):
    api.tune(GRAPH, trials=25, sources=1, results=str(tmp_path), seed=1)
    again = api.tune(GRAPH, trials=50, sources=1, results=str(tmp_path), seed=1)
    assert again.studies[0].done == 50
    trials = [r for r in read_trials(str(tmp_path)).to_pylist() if r["role"] == "trial"]
    assert len(trials) == 50 and len({_config(r) for r in trials}) == 50
    assert len(_journal(tmp_path).trials) == 50
    assert check(str(tmp_path)).problems == []


def test_check_flags_a_configuration_evaluated_twice(tmp_path, capsys):
    api.tune(GRAPH, trials=6, sources=1, results=str(tmp_path), references=False)
    (path,) = (tmp_path / "trials").rglob("*.parquet")
    table = pq.read_table(path)
    first = table.slice(0, 1).to_pylist()[0]
    first["trial"] = 99  # a second trial of the same configuration
    twice = pa.concat_tables([table, pa.Table.from_pylist([first], schema=table.schema)])
    pq.write_table(twice, path)
    assert main(["check", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "one configuration evaluated by trials 0, 99" in out


def test_the_journals_of_a_results_directory_open_as_one_storage(tmp_path):
    api.tune(GRAPH, trials=5, sources=1, results=str(tmp_path / "a"), references=False)
    api.tune(GRAPH, algorithm="cc", trials=4, results=str(tmp_path / "a"), references=False)
    storage = JournalStorage(MergedJournals(tmp_path / "a" / "studies"))
    studies = {s.study_name: s for s in optuna.get_all_study_summaries(storage)}
    assert len(studies) == 2
    counts = sorted(len(optuna.load_study(study_name=n, storage=storage).trials)
                    for n in studies)
    assert counts == [4, 5]
    with pytest.raises(Exception, match="read-only"):
        optuna.create_study(storage=storage, study_name="new")
    # a study that goes on is seen going on (the dashboard is live)
    api.tune(GRAPH, trials=8, sources=1, results=str(tmp_path / "a"), references=False)
    bfs = next(n for n in studies if ".bfs." in n)
    assert len(optuna.load_study(study_name=bfs, storage=storage).trials) == 8


def test_dashboard_without_the_extra_is_one_line_naming_it(tmp_path, capsys, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "optuna_dashboard" else real(name, *a))
    api.tune(GRAPH, trials=2, sources=1, results=str(tmp_path), references=False)
    assert main(["dashboard", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and 'pip install -e ".[dashboard]"' in err


def test_dashboard_on_a_port_in_use_is_refused_naming_it(tmp_path, capsys, monkeypatch):
    """It had said it was listening, then failed with "[Errno 98] Address already in use",
    exit 1 (probe SWEEP)."""
    import importlib.util
    import socket

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",  # as if the extra were installed
                        lambda name, *a: real("json") if name == "optuna_dashboard"
                        else real(name, *a))
    api.tune(GRAPH, trials=2, sources=1, results=str(tmp_path), references=False)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["dashboard", str(tmp_path), "--port", str(port)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and f"cannot listen on 127.0.0.1:{port}" in err
    assert main(["dashboard", str(tmp_path), "--host", "no.such.host.invalid"]) == 2
    assert "cannot listen on no.such.host.invalid" in capsys.readouterr().err
    from tuner.cli.dashboard import _check_listenable

    with socket.socket() as free:  # a port nothing listens on
        free.bind(("", 0))
        unused = free.getsockname()[1]
    _check_listenable("", unused)  # '': every interface, as the server takes it


def test_results_from_before_repeats_were_counted_still_check_and_resume(tmp_path,
                                                                        monkeypatch):
    from tuner.tuning import samplers

    monkeypatch.setattr(samplers, "REPLACE_REPEATS", False)  # repeats answered as rows
    api.tune(GRAPH, trials=30, sources=1, results=str(tmp_path), seed=2)
    rows = read_trials(str(tmp_path)).to_pylist()
    duplicates = sum(r["state"] == "duplicate" for r in rows)
    assert duplicates > 0
    for f in (tmp_path / "trials").rglob("*.parquet"):  # written before the column existed
        table = pq.read_table(f)
        pq.write_table(table.drop_columns(["repeats"]), f)
    shutil.rmtree(tmp_path / "studies")  # and rebuilt from the rows
    report = check(str(tmp_path))
    assert report.problems == [] and f"{duplicates} as rows of their own" in report.counts
    monkeypatch.setattr(samplers, "REPLACE_REPEATS", True)
    more = api.tune(GRAPH, trials=40, sources=1, results=str(tmp_path), seed=2)
    assert more.studies[0].done == 40
    new = [r for r in read_trials(str(tmp_path)).to_pylist()
           if r["role"] == "trial" and r["repeats"] is not None]
    assert new and all(r["state"] != "duplicate" for r in new)
    assert check(str(tmp_path)).problems == []


def test_a_finite_space_holding_the_references_configurations_completes_without_repeats(
        tmp_path):
    # the cap had counted the 6 configurations of `select` a reference runs, which the
    # sampler takes as tried: 50 of 56 reached, then 50 duplicate rows and "ended early",
    # 50 more on every resume (probe SPACE)
    for _ in range(2):
        result = api.tune(GRAPH, space="select", sources=1, results=str(tmp_path), seed=1)
    (summary,) = result.studies
    trials = [r for r in read_trials(str(tmp_path)).to_pylist() if r["role"] == "trial"]
    assert summary.complete and not summary.exhausted
    assert summary.done == summary.budget == len(trials) == 56
    # the 6 a reference ran are answered from it, the others evaluated
    assert sorted(r["duplicate_of"] for r in trials if r["state"] == "duplicate") == [-1] * 6
    assert sum(r["state"] == "complete" for r in trials) == 50


def test_a_stepped_float_range_caps_the_budget_at_its_steps(tmp_path):
    space = tmp_path / "fstep.yaml"
    space.write_text("name: fstep\nparams:\n  driven: [temporal]\n"
                     "  switch_to_topology: {float: [0.1, 0.5], step: 0.1}\n")
    result = api.tune(GRAPH, space=str(space), trials=20, sources=1,
                      results=str(tmp_path / "res"), seed=1)
    (summary,) = result.studies
    trials = [r for r in read_trials(str(tmp_path / "res")).to_pylist() if r["role"] == "trial"]
    assert summary.budget == summary.done == len(trials) == 5 and not summary.exhausted
    assert len({r["param_switch_to_topology"] for r in trials}) == 5


def test_the_grid_sampler_visits_a_stepped_float_ranges_steps(tmp_path):
    # finite for TPE, it had been refused by the grid sampler (review CR10)
    space = tmp_path / "fstep.yaml"
    space.write_text("name: fstep\nparams:\n  driven: [temporal]\n"
                     "  switch_to_topology: {float: [0.1, 0.5], step: 0.1}\n")
    api.tune(GRAPH, space=str(space), sampler="grid", sources=1, results=str(tmp_path / "r"))
    trials = [r for r in read_trials(str(tmp_path / "r")).to_pylist() if r["role"] == "trial"]
    assert sorted(round(r["param_switch_to_topology"], 9) for r in trials) == [
        0.1, 0.2, 0.3, 0.4, 0.5]


def test_a_finite_space_of_millions_is_not_listed_to_see_whether_a_budget_covers_it(
        monkeypatch):
    # the check that a study's budget covers its space had listed all 4.2M configurations of
    # one on its first trial: no trial after 100 s (review CR11)
    from search_spaces.loader import parse_space
    from simulator.yamldoc import parse_yaml
    from tuner.tuning import spec as spec_module

    space = parse_space(parse_yaml(
        "name: huge\nparams:\n  mapping: {value: vwarp}\n  w: {int: [1, 32]}\n"
        "  chunk: {int: [1, 64]}\n  defer_threshold: {int: [1, 64]}\n"
        "  push: {choices: [atomic, chunked, prefix, block]}\n", "huge.yaml"), "huge")

    def listed(*args, **kwargs):
        raise AssertionError("listed every configuration")

    monkeypatch.setattr(spec_module, "distinct_configurations", listed)
    assert space.finite and not spec_module.covers_space(3, space)


def test_a_finite_spaces_invalid_configurations_are_tried_once_not_repeated(tmp_path):
    # the cap counts each invalid combination; the sampler had looked for valid ones alone,
    # answering 38 repeats as duplicate rows before TPE drew the last one itself (review CR11)
    space = tmp_path / "inv.yaml"
    space.write_text("name: inv\nfixed: {mapping: vwarp}\nparams:\n  w: {choices: [1, 4, 32]}\n"
                     "  unroll: {choices: [1, 8]}\n  defer_threshold: {choices: [null, 16]}\n")
    result = api.tune(GRAPH, space=str(space), trials=40, sources=1, references=False,
                      results=str(tmp_path / "r"), seed=0)
    (summary,) = result.studies
    trials = [r for r in read_trials(str(tmp_path / "r")).to_pylist() if r["role"] == "trial"]
    assert summary.done == summary.budget == len(trials) == 12 and not summary.exhausted
    assert {r["state"] for r in trials} == {"complete", "failed"}


@pytest.mark.parametrize("sampler,seed", [("random", 2), ("tpe", 1)])
def test_a_stepped_float_ranges_top_step_is_proposed_without_repeat_rows(tmp_path, sampler,
                                                                          seed):
    # the fallback had counted 0.6 / 0.1 as 5 steps and found no neighbour of 0.6 in a range
    # of 7 steps: 34 duplicate rows (random) before Optuna drew 0.7 itself (review CR14)
    space = tmp_path / "f7.yaml"
    space.write_text("name: f7\nfixed: {mapping: thread, driven: temporal}\nparams:\n"
                     "  switch_to_topology: {float: [0.1, 0.7], step: 0.1}\n"
                     "  switch_on:\n    choices: [vertices, edges]\n"
                     "    when: {switch_to_topology: [0.3, 0.7]}\n")
    api.tune(GRAPH, space=str(space), trials=30, sources=1, sampler=sampler, seed=seed,
             references=False, results=str(tmp_path / "r"))
    trials = [r for r in read_trials(str(tmp_path / "r")).to_pylist() if r["role"] == "trial"]
    assert [r["state"] for r in trials] == ["complete"] * 9


def test_a_stepped_float_range_far_from_zero_holds_every_step(tmp_path):
    # (1e6 + 0.002 - 1e6) / 0.001 is 1.9999998 in binary: counted as 2 steps, the grid had
    # skipped the top one and a `when` on it was refused as never holding (review CR14)
    from search_spaces.loader import parse_space
    from simulator.yamldoc import parse_yaml

    space = parse_space(parse_yaml(
        "name: big\nfixed: {driven: temporal}\nparams:\n"
        "  switch_to_topology: {float: [1000000, 1000000.002], step: 0.001}\n"
        "  switch_on:\n    choices: [vertices, edges]\n"
        "    when: {switch_to_topology: 1000000.002}\n", "big.yaml"), "big")
    (knob, _) = space.params
    assert knob.grid_values() == (1000000.0, 1000000.001, 1000000.002)
