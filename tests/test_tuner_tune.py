"""Local tuning in-process (``--workers 0``) on the real simulator: end to end, resume after an
interruption or a crash, failed trials, duplicates, grid, multi-objective and bad input."""

from __future__ import annotations

import json
import re
import signal
import time

import optuna
import pytest

from search_spaces.loader import load_space
from simulator import Strategy
from tests.tune_process import started_until
from tests.tune_process import tune_argv
from tuner.cli import main
from tuner.results.schema import SCHEMA_VERSION
from tuner.results.store import read_graphs
from tuner.results.store import read_trials
from tuner.tuning.evaluate import SimulatorBackend
from tuner.tuning.plan import check_spec
from tuner.tuning.plan import load_spaces
from tuner.tuning.plan import run_studies
from tuner.tuning.spec import Objective
from tuner.tuning.spec import StudySpec

GRAPH = "rmat:scale=8,seed=1"


def params_of(row):
    """A row's configuration: its non-null knob columns."""
    return {k[6:]: v for k, v in row.items() if k.startswith("param_") and v is not None}


def config_key(row):
    return tuple(sorted(params_of(row).items()))


def rows(results, role="trial"):
    table = read_trials(results)
    return [r for r in table.to_pylist() if r["role"] == role]


def tune(tmp_path, *extra, results=None):
    results = results or tmp_path / "res"
    graph = [] if "--graph" in extra else ["--graph", GRAPH]  # (given once: a second is refused)
    argv = ["tune", *graph, "--workers", "0", "--results", str(results), "--no-progress",
            *extra]
    return main(argv), results


def spec(space="vwarp", trials=12, sources=2, **kw):
    return check_spec(StudySpec(graph=GRAPH, algorithm="bfs", device="h100", space=space,
                                trials=trials, sources=sources, **kw))


def run(results, specs, backend=None, **kw):
    return run_studies(specs, load_spaces(specs), results, workers=0, backend=backend, **kw)


class CountingBackend(SimulatorBackend):
    """The simulator, counting evaluations and optionally interrupting or failing some."""

    def __init__(self, interrupt_after=None, fail_w=None):
        self.calls = []
        self.interrupt_after = interrupt_after
        self.fail_w = fail_w

    def evaluate(self, graph, runs, algorithm, device, config):
        if self.interrupt_after is not None and len(self.calls) == self.interrupt_after:
            self.interrupted = dict(config)
            raise KeyboardInterrupt
        self.calls.append(dict(config))
        if self.fail_w is not None and config.get("w") == self.fail_w:
            config = {**config, "w": 3}  # the simulator rejects it inside the evaluation
        return super().evaluate(graph, runs, algorithm, device, config)


def test_tune_end_to_end_in_process(tmp_path, capsys):
    code, results = tune(tmp_path, "--trials", "15", "--sources", "2")
    out = capsys.readouterr().out
    assert code == 0
    assert "rank" in out and "vs thread" in out and "best fixed virtual warp" in out
    trials = rows(results)
    assert sorted(r["trial"] for r in trials) == list(range(len(trials)))
    assert {r["state"] for r in trials} <= {"complete", "duplicate"}
    # repeats do not use up the budget: 15 distinct configurations were tried
    assert len({config_key(r) for r in trials}) == 15
    complete = [r for r in trials if r["state"] == "complete"]
    assert all(r["n_sources"] == 2 and len(r["sources"]) == 2 for r in complete)
    assert all(r["time_us_min"] <= r["time_us"] <= r["time_us_max"] for r in complete)
    assert all(r["values"] == [r["time_us"]] for r in complete)
    assert all(r["worker"] and r["wall_s"] > 0 for r in complete)
    assert all(r["warpsweep_version"] and r["schema_version"] == SCHEMA_VERSION for r in trials)
    refs = {r["label"] for r in rows(results, "reference")}
    assert refs == {"thread"} | {f"vwarp w={w}" for w in (1, 2, 4, 8, 16, 32)}
    for r in trials:  # effective knobs: null only where a knob does not apply
        assert r["param_block_size"] == 256 and r["param_driven"] == "topology"
        if r["param_mapping"] == "thread":
            assert r["param_w"] is r["param_chunk"] is r["param_distribution"] is None
        else:
            assert r["param_w"] in (1, 2, 4, 8, 16, 32) and r["param_chunk"] >= 1
    graphs = read_graphs(results).to_pylist()
    assert [g["n"] for g in graphs] == [256] and graphs[0]["kind"] == "rmat"
    assert len(list((results / "studies").glob("*.journal"))) == 1


def test_resume_after_interrupt_repeats_and_loses_nothing(tmp_path):
    results = tmp_path / "res"
    s = spec(trials=14, references=False, sampler="random")
    first = CountingBackend(interrupt_after=6)
    with pytest.raises(KeyboardInterrupt):
        run(results, [s], backend=first)
    before = {r["trial"]: r for r in rows(results)}
    # rows of finished trials flushed on the way out: 6 evaluations and their repeats
    assert sorted(before) == list(range(len(before)))
    assert sum(r["state"] == "complete" for r in before.values()) == 6
    interrupted = len(before)
    second = CountingBackend()
    (summary,) = run(results, [s], backend=second).summaries
    after = {r["trial"]: r for r in rows(results)}
    # the trial running at the interrupt was failed in Optuna (no row), its configuration
    # enqueued again and evaluated first on resume
    assert interrupted not in after and set(before) < set(after)
    assert summary.done == 14 and len({config_key(r) for r in after.values()}) == 14
    assert second.calls[0] == first.interrupted
    for number, row in before.items():  # finished trials kept as they were, not re-run
        assert after[number]["values"] == row["values"]
        assert after[number]["timestamp"] == row["timestamp"]
    assert not [c for c in second.calls if c in first.calls]


def test_rows_lost_in_a_crash_are_rewritten_from_the_journal(tmp_path, monkeypatch):
    results = tmp_path / "res"
    s = spec(trials=8, references=False, sampler="random")
    from tuner.results import store as store_module

    monkeypatch.setattr(store_module.ResultStore, "flush", lambda self: None)  # buffer lost
    first = CountingBackend(interrupt_after=5)
    with pytest.raises(KeyboardInterrupt):
        run(results, [s], backend=first)
    monkeypatch.undo()
    assert not (results / "trials").exists()
    backend = CountingBackend()
    run(results, [s], backend=backend)
    trials = rows(results)
    assert len({r["trial"] for r in trials}) == len(trials)
    assert len({config_key(r) for r in trials}) == 8
    evaluated_first = {Strategy.from_params(c) for c in first.calls}
    rewritten = {Strategy.from_params(params_of(r)) for r in trials if r["state"] == "complete"}
    assert len(evaluated_first) == 5 and evaluated_first <= rewritten  # rows back from the journal
    assert backend.calls[0] == first.interrupted  # re-enqueued, evaluated first
    assert not [c for c in backend.calls if c in first.calls]  # told ones not simulated again


def test_without_references_the_table_has_no_vs_columns(tmp_path, capsys):
    # the "vs thread" and "vs best vwarp" columns had stayed, filled with "-" (probe 01)
    code, _ = tune(tmp_path, "--trials", "3", "--sources", "1", "--no-references")
    out = capsys.readouterr().out
    assert code == 0
    header = next(line for line in out.splitlines() if line.strip().startswith("rank"))
    assert header.split() == ["rank", "time_us", "configuration"]
    assert "references included" not in out  # (it had said so, probe TUNE)
    code, _ = tune(tmp_path, "--trials", "3", "--sources", "1", results=tmp_path / "with")
    out = capsys.readouterr().out
    assert "vs thread" in out and "vs best vwarp" in out
    assert "every configuration evaluated is ranked, references included" in out


def test_an_objective_zero_everywhere_has_no_ratios(tmp_path, capsys):
    """BFS's atomics are 0 in every row: each 0/0 ratio is "-", the best fixed virtual warp's
    own included (it had read 1.00x, probe OBJECTIVES)."""
    code, _ = tune(tmp_path, "--trials", "3", "--sources", "1", "--objective", "atomics")
    out = capsys.readouterr().out
    assert code == 0
    (vwarp,) = [line.split() for line in out.splitlines() if "(best fixed virtual warp)" in line]
    assert vwarp[:4] == ["vwarp", "0", "-", "-"]


def test_references_added_on_resume_are_answered_by_the_trials_that_ran_them(tmp_path, capsys):
    """A study run first with --no-references, then resumed with its references: those whose
    configuration a trial ran are recorded from that trial's figures, not simulated again
    (probe OBJECTIVES: the thread and vwarp w=8 baselines had run twice)."""
    argv = ("--graph", "rmat:scale=8,seed=1", "--trials", "15", "--objective", "meps:max")
    assert tune(tmp_path, *argv, "--no-references")[0] == 0
    capsys.readouterr()
    code, results = tune(tmp_path, *argv)
    out = capsys.readouterr().out
    rows = read_trials(str(results)).to_pylist()
    trials = {Strategy.from_params(params_of(r)): r for r in rows if r["role"] == "trial"}
    answered = [r for r in rows if r["role"] == "reference"
                and Strategy.from_params(params_of(r)) in trials]
    assert code == 0 and len(answered) == 2  # thread and vwarp w=8, with this seed
    for r in answered:
        twin = trials[Strategy.from_params(params_of(r))]
        assert r["state"] == "complete" and r["meps"] == twin["meps"] and r["wall_s"] == 0
    assert f"\n{7 - len(answered)} evaluations simulated in this run" in out
    assert tune(tmp_path, *argv)[0] == 0
    assert "\n0 evaluations simulated in this run" in capsys.readouterr().out


def test_resume_after_sigkill(tmp_path):
    results = tmp_path / "res"
    argv = tune_argv(results, 150)
    proc, journal = started_until(argv, results, 25)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert journal is not None, proc.stderr.read().decode()
    recorded = {}
    for line in journal.read_text().splitlines():
        if '"record"' in line:
            op = json.loads(line)
            recorded[op["trial_id"]] = op["user_attr"]["record"]["values"]
    assert 25 <= len(recorded) < 150  # killed mid-run
    assert main(argv) == 0
    after = {r["trial"]: r for r in rows(results)}
    assert len({config_key(r) for r in after.values()}) == 150
    for number, values in recorded.items():  # every recorded trial kept, none re-run
        assert after[number]["values"] == values


def test_failed_trial_is_recorded_and_the_study_goes_on(tmp_path):
    results = tmp_path / "res"
    s = spec(trials=20, references=False, sampler="random", seed=1)
    (summary,) = run(results, [s], backend=CountingBackend(fail_w=4)).summaries
    trials = rows(results)
    failed = [r for r in trials if r["state"] == "failed"]
    assert failed, "the space draws w=4 in 20 random trials"
    for r in failed:
        assert r["param_w"] == 4 and "w in (1, 2, 4, 8, 16, 32)" in r["error"]
        assert r["time_us"] is None and r["values"] is None
    assert summary.done == 20 and summary.failed == len(failed)
    assert any(r["state"] == "complete" for r in trials)


def _tiny_space_study(tmp_path):
    """A random-sampled study of 12 trials over a space of 4 configurations (so its draws
    repeat): its results directory, summary and counting backend."""
    space = tmp_path / "tiny.yaml"
    space.write_text("fixed: {mapping: vwarp}\nparams:\n  w: [8, 32]\n  chunk: [1, 4]\n")
    results = tmp_path / "res"
    s = spec(space=str(space), trials=12, references=False, sampler="random")
    backend = CountingBackend()
    (summary,) = run(results, [s], backend=backend).summaries
    return results, summary, backend


def test_repeats_are_replaced_by_untried_configurations(tmp_path):
    results, summary, backend = _tiny_space_study(tmp_path)
    assert len(backend.calls) == 4 and summary.budget == 4 and summary.done == 4
    trials = rows(results)  # one row per configuration, every one evaluated
    assert len(trials) == 4 and {r["state"] for r in trials} == {"complete"}
    assert len({(r["param_w"], r["param_chunk"]) for r in trials}) == 4
    # random draws from 4 configurations repeat: each repeat is counted on the trial that
    # replaced it, none is a row or a journal trial of its own
    assert summary.duplicates == sum(r["repeats"] for r in trials) > 0
    (path,) = (results / "studies").glob("*.journal")
    storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(
        str(path)))
    study = optuna.load_study(study_name=path.stem, storage=storage)
    assert len(study.trials) == 4


def test_duplicates_are_answered_from_the_study(tmp_path, monkeypatch):
    from tuner.tuning import samplers

    monkeypatch.setattr(samplers, "REPLACE_REPEATS", False)  # as before issue 42
    results, summary, backend = _tiny_space_study(tmp_path)
    # the space holds 4 configurations: the budget of 12 is capped there, each simulated once
    assert len(backend.calls) == 4 and summary.budget == 4 and summary.done == 4
    trials = rows(results)
    dups = [r for r in trials if r["state"] == "duplicate"]
    assert len(dups) == summary.duplicates == len(trials) - 4
    by_trial = {r["trial"]: r for r in trials}
    for d in dups:  # a repeat is answered from the study and its row repeats the figures
        original = by_trial[d["duplicate_of"]]
        assert original["state"] == "complete" and d["values"] == original["values"]
        assert (d["param_w"], d["param_chunk"]) == (original["param_w"], original["param_chunk"])
        assert d["time_us"] == original["time_us"] and d["bytes"] == original["bytes"]
        assert d["wall_s"] == 0.0


def test_reference_answers_a_trial_with_the_same_strategy(tmp_path):
    space = tmp_path / "one.yaml"
    space.write_text("fixed: {mapping: vwarp}\nparams:\n  w: [8]\n")
    results = tmp_path / "res"
    backend = CountingBackend()
    run(results, [spec(space=str(space), trials=2)], backend=backend)
    assert len(backend.calls) == 7  # the 7 references; the space's one configuration is
    assert [r["duplicate_of"] for r in rows(results)] == [-1]  # `vwarp w=8`: budget 1


def test_grid_visits_every_configuration_once(tmp_path):
    space = tmp_path / "grid.yaml"
    space.write_text("params:\n  mapping: [thread, vwarp]\n"
                     "  w: {choices: [8, 32], when: {mapping: vwarp}}\n"
                     "  chunk: {int: [1, 4], log: true, when: {mapping: vwarp}}\n")
    results = tmp_path / "res"
    s = spec(space=str(space), trials=None, sampler="grid", references=False)
    backend = CountingBackend()
    (summary,) = run(results, [s], backend=backend).summaries
    expected = list(load_space(str(space)).configs())
    assert summary.budget == len(expected) == 1 + 2 * 3
    assert sorted(map(repr, backend.calls)) == sorted(map(repr, expected))
    # a resumed grid study has nothing left to do
    again = CountingBackend()
    (summary,) = run(results, [s], backend=again).summaries
    assert again.calls == [] and summary.done == summary.budget


def test_interrupted_grid_of_powers_of_two_resumes_without_repeats(tmp_path):
    # Optuna holds the grid's queued chunks as log2_chunk: the resumed study runs the rest
    space = tmp_path / "grid.yaml"
    space.write_text("params:\n  mapping: [thread, vwarp]\n"
                     "  chunk: {int: [1, 8], powers_of_two: true, when: {mapping: vwarp}}\n")
    results = tmp_path / "res"
    s = spec(space=str(space), trials=None, sampler="grid", references=False)
    first = CountingBackend(interrupt_after=2)
    with pytest.raises(KeyboardInterrupt):
        run(results, [s], backend=first)
    second = CountingBackend()
    (summary,) = run(results, [s], backend=second).summaries
    expected = list(load_space(str(space)).configs())
    assert summary.budget == summary.done == len(expected) == 5
    visited = first.calls + second.calls
    assert sorted(map(repr, visited)) == sorted(map(repr, expected))
    assert {r["param_chunk"] for r in rows(results) if r["param_mapping"] == "vwarp"} == {
        1, 2, 4, 8}


def test_multi_objective_pareto_front(tmp_path, capsys):
    code, results = tune(tmp_path, "--trials", "10", "--objective", "time_us,simd_efficiency",
                         "--no-references")
    assert code == 0
    complete = [r for r in rows(results) if r["state"] == "complete"]
    assert all(r["objective"] == "time_us,simd_efficiency:max" for r in complete)
    assert all(r["values"] == [r["time_us"], r["simd_efficiency"]] for r in complete)
    assert "simd_efficiency=" in capsys.readouterr().out


def test_timeout_stops_starting_trials(tmp_path, capsys):
    code, results = tune(tmp_path, "--trials", "100000", "--timeout", "1", "--no-references")
    assert code == 0
    out, err = capsys.readouterr()
    assert "stopped at" in out
    done = len(rows(results))
    assert 0 < done < 100000
    # why it stopped and how to go on, as Ctrl-C says (probe LL: the stop had been silent)
    assert re.search(f"warpsweep: stopped at --timeout 1 s with {done} of [0-9]+ "
                     "configurations of 1 unfinished study; every finished evaluation is "
                     "saved. Go on with:", err), err
    assert "--trials 100000" in err and "--timeout 1.0" in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--sampler", "annealing"], "unknown sampler 'annealing'; choose one of tpe, random"),
        (["--sampler", "gp"], "needs the 'torch' package"),
        (["--device", "gtx9090"], "unknown device 'gtx9090'; choose one of"),
        (["--algo", "bc"], "unknown algorithm 'bc'"),
        (["--space", "nope"], "unknown search space 'nope'"),
        (["--objective", "speed"], "unknown objective metric 'speed'"),
        (["--objective", "time_us:up"], "direction must be min or max"),
        # a colon and no direction had been filed as time_us (probe OBJECTIVES)
        (["--objective", "time_us:"], "objective 'time_us:': direction must be min or max"),
        (["--trials", "0"], "trials must be >= 1"),
        (["--workers", "-1"], "--workers must be >= 0"),
        (["--graph", "rmat:scale=abc"], "rmat:scale=abc"),
        (["--graph", "rmat:scale=8", "--algo", "sssp"], "SSSP needs edge weights"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, args, message):
    if "--sampler" in args and "gp" in args and _has_torch():
        pytest.skip("torch is installed")
    code, _ = tune(tmp_path, "--trials", "2", *args)
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("warpsweep: error: ") and err.count("\n") == 1
    assert message in err


def test_bad_space_file_names_the_line(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("params:\n  w:\n    choices: [1, 2]\n    when: {mapping: vwarp}\n")
    code, _ = tune(tmp_path, "--space", str(bad))
    err = capsys.readouterr().err
    assert code == 2 and f"{bad}:4: params.w.when.mapping" in err


def test_newer_results_schema_is_refused(tmp_path, capsys):
    results = tmp_path / "res"
    results.mkdir()
    (results / "_warpsweep.json").write_text('{"schema_version": 99}')
    code, _ = tune(tmp_path, results=results)
    assert code == 2 and "schema version 99" in capsys.readouterr().err


def test_no_ray_cluster_at_address(tmp_path, capsys):
    code = main(["tune", "--graph", GRAPH, "--address", "127.0.0.1:9", "--results",
                 str(tmp_path / "r"), "--no-progress"])
    assert code == 2
    assert "no Ray cluster at --address '127.0.0.1:9'" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("server", ["http", "closes"])
def test_a_listener_that_is_not_ray_at_address_is_named_at_once(tmp_path, capsys, server):
    """A web server (or a dashboard, a typo's port) at --address had passed the TCP probe,
    and ray.init then retried for good (probe JJ: 11 minutes until killed)."""
    import http.server
    import socket
    import threading

    if server == "http":
        listener = http.server.HTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
        port = listener.server_address[1]
        serve = listener.serve_forever
    else:
        listener = socket.create_server(("127.0.0.1", 0))
        port = listener.getsockname()[1]

        def serve():
            while True:
                conn, _ = listener.accept()
                conn.close()
    threading.Thread(target=serve, daemon=True).start()
    t0 = time.monotonic()
    code = main(["tune", "--graph", GRAPH, "--address", f"127.0.0.1:{port}", "--results",
                 str(tmp_path / "r"), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and time.monotonic() - t0 < 30
    assert f"no Ray cluster at --address '127.0.0.1:{port}': something listens" in err
    assert ("it answered '<!DOCTYPE HTML>'" in err if server == "http"  # its 505 page
            else "it closed the connection" in err)
    assert "GCS port" in err and not (tmp_path / "r").exists()


def test_study_key_is_stable_and_discriminating():
    space = load_space("vwarp")
    a = spec()
    assert a.key(space) == spec().key(space)
    assert a.key(space).startswith("rmat8-ef16.bfs.h100.vwarp.")
    others = [spec(objective=Objective.parse("bytes")), spec(sources=3),
              check_spec(StudySpec(graph=GRAPH, algorithm="bfs", device="a100", space="vwarp"))]
    assert len({a.key(space)} | {o.key(space) for o in others}) == 4
    # sampler, trials and (single-source) seed do not change the study
    assert spec(sampler="random", trials=99).key(space) == a.key(space)


def _has_torch() -> bool:
    import importlib.util

    return importlib.util.find_spec("torch") is not None


@pytest.mark.parametrize("space", ["driven", "wer", "adaptive", "all"])
def test_issue4_spaces_tune_on_the_simulator(tmp_path, space):
    """The hybrid, WER and adaptive spaces run as studies; every trial completes (BFS has
    every knob) and lands with its conditional knobs null where they do not apply."""
    code, results = tune(tmp_path, "--space", space, "--trials", "10", "--sources", "1",
                         "--algo", "sssp", "--graph", GRAPH + ",weights=random")
    assert code == 0
    trials = rows(results)
    assert len(trials) == 10
    assert {r["state"] for r in trials} <= {"complete", "duplicate"}, [r["error"] for r in trials]
    for r in trials:
        driven = r.get("param_driven")
        if driven is not None and driven != "temporal":
            assert r["param_switch_to_topology"] is None
        if driven is not None and driven != "spatial":
            assert r["param_partition"] is None


@pytest.mark.parametrize("other, names", [
    (["--sampler", "random"], "asks for sampler random, seed 0"),
    (["--seed", "7"], "asks for sampler tpe, seed 7"),
])
def test_a_study_resumes_only_with_its_sampler_and_seed(tmp_path, capsys, other, names):
    """One source puts no seed in the study key: a second run with another sampler or seed
    would have continued the first study, so a comparison tuned into one directory read the
    first run's trials as the second's. It is refused, nothing added; as it ran, it goes on."""
    results = str(tmp_path / "r")
    base = ["tune", "--graph", "rmat:scale=5,seed=1", "--sources", "1", "--workers", "0",
            "--results", results, "-q"]
    assert main([*base, "--trials", "3"]) == 0
    rows = len(read_trials(results))
    capsys.readouterr()
    assert main([*base, "--trials", "5", *other]) == 2
    err = capsys.readouterr().err
    assert "ran with sampler tpe, seed 0" in err and names in err
    assert "pass --sampler tpe --seed 0" in err
    assert len(read_trials(results)) == rows
    assert main([*base, "--trials", "5", "--sampler", "tpe", "--seed", "0"]) == 0
    assert len(read_trials(results)) > rows


def test_a_study_whose_journal_is_lost_resumes_only_as_its_rows_ran(tmp_path, capsys):
    """With the journal gone, the rows are the study's record of its sampler and seed: a
    run asking for others is refused before the journal is rebuilt, nothing added."""
    results = tmp_path / "r"
    base = ["tune", "--graph", "rmat:scale=5,seed=1", "--sources", "1", "--workers", "0",
            "--results", str(results), "-q"]
    assert main([*base, "--trials", "3", "--sampler", "random", "--seed", "3"]) == 0
    rows = len(read_trials(results))
    for journal in (results / "studies").glob("*.journal"):
        journal.unlink()
    capsys.readouterr()
    assert main([*base, "--trials", "5"]) == 2
    err = capsys.readouterr().err
    assert "ran with sampler random, seed 3" in err and "asks for sampler tpe, seed 0" in err
    assert len(read_trials(results)) == rows
    assert main([*base, "--trials", "5", "--sampler", "random", "--seed", "3"]) == 0
    assert len(read_trials(results)) > rows


def test_what_the_run_prints_to_stdout_is_kept_off_the_json(monkeypatch, capsys, tmp_path):
    """Ray prints its workers' deaths ("(raylet) A worker died ...") to stdout while a run
    goes on: --json's output had stopped being JSON."""
    import json

    from tuner import api as api_module
    from tuner.cli import main

    real = api_module.tune

    def noisy(*args, **kwargs):
        print("(raylet) A worker died or was killed while executing a task")
        return real(*args, **kwargs)

    monkeypatch.setattr(api_module, "tune", noisy)
    assert main(["tune", "--graph", "rmat:scale=6", "--trials", "2", "--sources", "1",
                 "--workers", "0", "--results", str(tmp_path / "r"), "--json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["studies"] and "(raylet) A worker died" in err


def test_a_graph_whose_preparation_dies_is_one_line_with_the_way_on(monkeypatch, capsys,
                                                                    tmp_path):
    """A preparation task that still failed after Ray's retries (its worker out of memory)
    had ended the run with Ray's traceback, and no word on how to go on."""
    from tuner.cli import main
    from tuner.tuning import evaluate

    def preparing_raises(error: BaseException) -> str:
        def prepare(self, *args, **kwargs):
            raise error

        monkeypatch.setattr(evaluate.SimulatorBackend, "prepare", prepare)
        code = main(["tune", "--graph", "rmat:scale=6", "--trials", "2", "--sources", "1",
                     "--workers", "0", "--results", str(tmp_path / "r")])
        err = capsys.readouterr().err
        assert code == 2 and "Traceback" not in err
        return err

    err = preparing_raises(RuntimeError("WorkerCrashedError: the worker died unexpectedly"))
    assert "the worker preparing rmat:scale=6," in err and "failed (RuntimeError: Worker" in err
    assert "in this process" in err and "Ray" not in err  # --workers 0: no Ray to retry
    assert "run the same command again to resume" in err
    # the same graph runs out again: a resume is no way on (probe LL)
    err = preparing_raises(MemoryError("Unable to allocate 2.00 GiB"))
    assert "preparing rmat:scale=6,ef=16" in err and "ran out of memory" in err
    assert "use a smaller graph" in err and "resume" not in err


def test_past_the_timeout_the_run_says_what_it_waits_for():
    """A worker stopped (SIGSTOP) or hung had left a run silent past --timeout, its progress
    lines gone, for minutes: every OVERDUE_NOTE_S it now says what it waits for."""
    import math
    import time

    from tuner.tuning import runner as runner_module

    lines = []

    class Progress:
        def warn(self, text):
            lines.append(text)

    runner = runner_module.Runner.__new__(runner_module.Runner)
    runner._inflight, runner.progress = {"future": ("eval", None)}, Progress()
    runner.deadline, runner._overdue_noted = time.monotonic() - 100, -math.inf
    runner._note_overdue()
    runner._note_overdue()  # not again within OVERDUE_NOTE_S
    assert len(lines) == 1 and "--timeout passed 100 s ago" in lines[0]
    assert "waiting for 1 evaluation(s) still running" in lines[0]


def test_a_worker_running_other_code_is_refused_and_nothing_finished_is_lost(monkeypatch,
                                                                             capsys, tmp_path):
    """A cluster node with another checkout had its trials written under the driver's
    version, commit and cost model, ranked with this code's: exit 0, `check` clean. Its
    results are now refused, naming the node and both models; a run with every node on the
    driver's code resumes the study."""
    import dataclasses

    from tuner.env import model_digest
    from tuner.tuning import evaluate

    real = evaluate.SimulatorBackend.evaluate
    calls = []

    def other_node_after_three(self, *args, **kwargs):
        outcome = real(self, *args, **kwargs)
        calls.append(outcome)
        if len(calls) > 3:
            return dataclasses.replace(outcome, model="0123456789abcdef")
        return outcome

    monkeypatch.setattr(evaluate.SimulatorBackend, "evaluate", other_node_after_three)
    results = tmp_path / "r"
    command = ["tune", "--graph", "rmat:scale=6", "--trials", "6", "--sources", "1",
               "--space", "vwarp", "--workers", "0", "--results", str(results)]
    code = main(command)
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert "runs other code than this driver (cost model 0123456789abcdef" in err
    assert model_digest() in err and "run the same command again" in err
    kept = read_trials(results).to_pylist()
    assert len(kept) == 3  # the three this code computed, not the fourth

    monkeypatch.setattr(evaluate.SimulatorBackend, "evaluate", real)
    assert main(command) == 0
    capsys.readouterr()
    assert main(["check", str(results)]) == 0
    trials = [r for r in read_trials(results).to_pylist() if r["role"] == "trial"]
    assert len({config_key(r) for r in trials}) == 6


def test_a_graph_prepared_by_other_code_is_refused(monkeypatch, capsys, tmp_path):
    """The functional runs a study's trials are costed from come from the worker that
    prepared the graph: prepared under another cost model, they are not used."""
    import dataclasses

    from tuner.tuning import evaluate

    real = evaluate.SimulatorBackend.prepare

    def other_node(self, *args, **kwargs):
        graph, runs, meta = real(self, *args, **kwargs)
        return graph, runs, dataclasses.replace(meta, model="fedcba9876543210")

    monkeypatch.setattr(evaluate.SimulatorBackend, "prepare", other_node)
    code = main(["tune", "--graph", "rmat:scale=6", "--trials", "2", "--sources", "1",
                 "--workers", "0", "--results", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert "the worker that prepared rmat:scale=6" in err and "fedcba9876543210" in err


def test_an_unreachable_ray_address_in_the_environment_is_one_line(monkeypatch, capsys,
                                                                   tmp_path):
    """--address was probed, RAY_ADDRESS not: Ray retried it for good, printing its GCS
    timeouts (a run still going after a minute)."""
    import time

    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:1")
    start = time.monotonic()
    code = main(["tune", "--graph", "rmat:scale=6", "--trials", "2", "--sources", "1",
                 "--workers", "1", "--results", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert code == 2 and time.monotonic() - start < 30
    assert "no Ray cluster at RAY_ADDRESS '127.0.0.1:1': cannot connect" in err


def test_a_multi_objective_table_says_it_shows_the_pareto_front(tmp_path, capsys):
    """It had said every configuration evaluated was ranked, and cut the front to --top
    without a word (probe AN)."""
    code, results = tune(tmp_path, "--trials", "12", "--sources", "1", "--objective",
                         "time_us,transactions", "--top", "2")
    out = capsys.readouterr().out
    assert code == 0
    front = re.search(r"the Pareto front over time_us, transactions \((\d+) configurations?, "
                      r"references included\), by time_us; the first 2 of (\d+) shown", out)
    assert front and front.group(1) == front.group(2) and int(front.group(1)) > 2
    assert "every configuration evaluated is ranked" not in out
    code, _ = tune(tmp_path, "--trials", "4", "--sources", "1", results=tmp_path / "single")
    assert "every configuration evaluated is ranked, references included; the first 5 of " \
        in capsys.readouterr().out


def test_an_objective_written_out_parses_back_to_itself():
    """``simd_efficiency:min`` had been written bare, ``simd_efficiency``, which reads back as
    max: its rows and journal said the other direction, and best ranked it so (probe SP).
    The texts study keys hold for the defaults and for ``:max`` stay as they were."""
    for text, written in (("time_us", "time_us"), ("time_us:max", "time_us:max"),
                          ("simd_efficiency", "simd_efficiency:max"),
                          ("simd_efficiency:min", "simd_efficiency:min"),
                          ("time_us,simd_efficiency:min", "time_us,simd_efficiency:min")):
        objective = Objective.parse(text)
        assert str(objective) == written
        assert Objective.parse(str(objective)) == objective


def test_best_notes_a_study_tuned_the_other_way_on_the_same_metric(tmp_path, capsys):
    """A study tuned for ``simd_efficiency:min``, ranked by best's ``simd_efficiency`` (max),
    is a study tuned for another objective, and said to be (probe SP)."""
    results = tmp_path / "r"
    assert main(["tune", "--graph", GRAPH, "--trials", "3", "--sources", "1", "--workers",
                 "0", "--no-progress", "--results", str(results), "--objective",
                 "simd_efficiency:min"]) == 0
    capsys.readouterr()
    assert main(["best", "--results", str(results), "--metric", "simd_efficiency"]) == 0
    err = capsys.readouterr().err
    assert "1 of these studies was tuned for another objective (simd_efficiency:min)" in err


def test_the_reason_most_failures_give_is_printed(tmp_path, capsys):
    """A space whose int range holds mostly impossible W (w: int 1..32, powers of two only)
    had failed every trial with exit 0, the reason in the rows alone (probe SP)."""
    space = tmp_path / "wint.yaml"
    space.write_text("params:\n  mapping: {value: vwarp}\n  w: {int: [1, 32]}\n")
    main(["tune", "--graph", GRAPH, "--space", str(space), "--trials", "6", "--sources", "1",
          "--workers", "0", "--no-progress", "--no-references", "--results",
          str(tmp_path / "r")])
    out = capsys.readouterr().out
    line = next(t for t in out.splitlines() if "failures read like this one" in t)
    assert "must hold, but got w=" in line


def test_rows_of_another_run_for_a_stopped_trial_are_set_aside_not_counted(tmp_path, capsys):
    """Probe CONC: a run stopped at trial k and resumed evaluates k's configuration again as
    a later trial; rows copied in from a clean run of the same study hold a row for k. That
    row is the other run's: `check --repair` had kept it, set the intact journal aside as
    "behind the rows", and left one configuration evaluated twice (exit 1 for ever, then a
    study past its budget). Now repair sets the row aside and keeps the journal; a resume
    meeting such a row refuses, naming it."""
    import shutil

    from tuner.cli.check import check

    s = spec(trials=10, references=False, sampler="random")
    a, b = tmp_path / "a", tmp_path / "b"
    with pytest.raises(KeyboardInterrupt):
        run(a, [s], backend=CountingBackend(interrupt_after=4))
    stopped = len(rows(a))
    run(a, [s], backend=CountingBackend())
    run(b, [s])
    assert stopped not in {r["trial"] for r in rows(a)}
    part = next((b / "trials").rglob("*.parquet")).parent
    target = next((a / "trials").rglob("*.parquet")).parent
    copied = [shutil.copy(f, target / f.name) for f in part.glob("*.parquet")
              if not (target / f.name).exists()]
    assert copied
    assert main(["tune", "--graph", GRAPH, "--workers", "0", "--results", str(a), "--trials",
                 "10", "--sources", "2", "--sampler", "random", "--no-references",
                 "--no-progress"]) == 2
    report = check(str(a), repair=True)
    assert report.problems == []
    journal = next((a / "studies").glob("*.journal"))  # kept, not set aside
    assert journal.stat().st_size > 0
    assert not list((a / "quarantine").rglob("*.journal*"))
    kept = rows(a)
    assert stopped not in {r["trial"] for r in kept}
    assert len({config_key(r) for r in kept}) == len(kept) == 10
    assert check(str(a)).problems == []
    capsys.readouterr()
    assert main(["tune", "--graph", GRAPH, "--workers", "0", "--results", str(a), "--trials",
                 "10", "--sources", "2", "--sampler", "random", "--no-references",
                 "--no-progress"]) == 0
    assert len({config_key(r) for r in rows(a)}) == len(rows(a)) == 10


def test_a_resume_refuses_another_runs_row_of_a_stopped_trial(tmp_path, capsys):
    """Only the other run's row of the stopped trial copied in (no row conflicts): the resume
    had rebuilt the journal from the rows, counting that configuration twice. It refuses,
    naming the trial; `check --repair` sets the row aside and the resume then runs."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from tuner.cli.check import check

    s = spec(trials=8, references=False, sampler="random")
    a, b = tmp_path / "a", tmp_path / "b"
    with pytest.raises(KeyboardInterrupt):
        run(a, [s], backend=CountingBackend(interrupt_after=3))
    stopped = len(rows(a))
    run(a, [s], backend=CountingBackend())
    run(b, [s])
    theirs = pq.read_table(next((b / "trials").rglob("*.parquet")))
    row = theirs.filter(pc.equal(theirs["trial"], stopped))
    assert row.num_rows == 1
    target = next((a / "trials").rglob("*.parquet")).parent
    pq.write_table(row.drop_columns([c for c in row.column_names
                                     if c in ("algorithm", "device")]),
                   target / "part-tcopied.parquet")
    argv = ["tune", "--graph", GRAPH, "--workers", "0", "--results", str(a), "--trials", "8",
            "--sources", "2", "--sampler", "random", "--no-references", "--no-progress"]
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"trial(s) {stopped}" in err and "check" in err and "--repair" in err
    assert check(str(a), repair=True).problems == []
    assert main(argv) == 0
    kept = rows(a)
    assert stopped not in {r["trial"] for r in kept}
    assert len({config_key(r) for r in kept}) == len(kept) == 8
