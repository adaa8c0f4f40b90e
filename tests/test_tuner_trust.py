"""Tuning results a user can trust: the right winner, study identity by graph content, no trial
spent on a repeat or on a knob the algorithm lacks, effective knob values in the store,
progress that says what it does, and the scripting basics (--version, --json, --quiet, the
Python API, examples in every --help)."""

from __future__ import annotations

import argparse
import io
import json
import re
from pathlib import Path

import pytest

from simulator.errors import ConfigError
from tuner import api
from tuner.cli import build_parser
from tuner.cli import main
from tuner.results.schema import MANIFEST
from tuner.results.schema import SCHEMA_VERSION
from tuner.results.store import ResultStore
from tuner.results.store import read_graphs
from tuner.results.store import read_trials
from tuner.tuning.progress import Progress

GRAPH = "rmat:scale=8,seed=1"


def trial_rows(results, role="trial"):
    return [r for r in read_trials(results).to_pylist() if r["role"] == role]


def test_a_faster_reference_is_rank_one(tmp_path, capsys):
    # the space holds one configuration, slower than the best fixed virtual warp
    space = tmp_path / "one.yaml"
    space.write_text("fixed: {mapping: vwarp, w: 1, chunk: 2}\n")
    result = api.tune(GRAPH, space=str(space), sources=1, results=tmp_path / "res")
    (study,) = result.studies
    everything = [r for r in read_trials(tmp_path / "res").to_pylist() if r["time_us"]]
    fastest = min(everything, key=lambda r: r["time_us"])
    assert fastest["role"] == "reference"
    assert study.best[0].role == "reference" and study.best[0].label == fastest["label"]
    assert study.best[0].values[0] == pytest.approx(fastest["time_us"])
    assert [r.values[0] for r in study.best] == sorted(r.values[0] for r in study.best)
    assert main(["tune", "--graph", GRAPH, "--space", str(space), "--sources", "1",
                 "--workers", "0", "--results", str(tmp_path / "res"), "--no-progress"]) == 0
    out = capsys.readouterr().out
    rank1 = next(line for line in out.splitlines() if re.match(r"\s+1\s+\d", line))
    assert f"[reference: {fastest['label']}]" in rank1
    assert "means over 1 source" in out


def test_pagerank_searches_only_knobs_it_has(tmp_path):
    result = api.tune(GRAPH, "pagerank", space="driven", trials=15, sampler="random",
                      references=False, results=tmp_path / "res")
    rows = trial_rows(tmp_path / "res")
    assert result.studies[0].done == 15
    assert [r["error"] for r in rows if r["state"] == "failed"] == []
    assert {r["param_driven"] for r in rows} <= {"topology", "data"}
    assert {r["param_unroll"] for r in rows} <= {1, None}


def test_repeats_do_not_use_up_the_budget(tmp_path):
    # 2 mappings x 3 thresholds: a random sampler repeats itself long before 6 distinct ones
    space = tmp_path / "six.yaml"
    space.write_text("params:\n  mapping: [thread, wer+]\n  defer_threshold: [null, 16, 64]\n")
    result = api.tune(GRAPH, space=str(space), trials=100, sampler="random", references=False,
                      sources=1, results=tmp_path / "res")
    (study,) = result.studies
    rows = trial_rows(tmp_path / "res")
    assert study.budget == 6 and study.done == 6 and study.evaluations == 6
    assert sum(r["state"] == "complete" for r in rows) == 6 == len(rows)
    # the repeats are counted on the trials that replaced them, not stored as rows
    assert study.duplicates == sum(r["repeats"] for r in rows) > 0


def edge_file(path: Path, edges: list[tuple[int, int]]) -> None:
    path.write_text("".join(f"{u} {v}\n" for u, v in edges))


def test_a_regenerated_file_is_a_new_study(tmp_path):
    path = tmp_path / "g.txt"
    edge_file(path, [(0, 1), (1, 2), (2, 3), (3, 0), (0, 2)])
    res = tmp_path / "res"
    first = api.tune(f"file:{path}", trials=3, references=False, sources=1, results=res)
    again = api.tune(f"file:{path}", trials=3, references=False, sources=1, results=res)
    assert again.studies[0].key == first.studies[0].key and again.evaluations == 0  # resumed
    edge_file(path, [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (5, 0)])
    second = api.tune(f"file:{path}", trials=3, references=False, sources=1, results=res)
    assert second.studies[0].key != first.studies[0].key
    assert second.evaluations == 3  # nothing resumed from the other graph's study
    graphs = read_graphs(res).to_pylist()
    assert sorted(g["n"] for g in graphs) == [4, 6] and len({g["graph_id"] for g in graphs}) == 2
    assert len(list((res / "studies").glob("*.journal"))) == 2


def test_the_same_relative_path_elsewhere_is_another_graph(tmp_path, monkeypatch):
    keys = []
    for name, edges in (("a", [(0, 1), (1, 2)]), ("b", [(0, 1), (1, 2), (2, 0), (2, 3)])):
        (tmp_path / name).mkdir()
        edge_file(tmp_path / name / "g.txt", edges)
        monkeypatch.chdir(tmp_path / name)
        result = api.tune("file:g.txt", trials=2, references=False, sources=1,
                          results=tmp_path / "res")
        keys.append(result.studies[0].key)
        assert result.evaluations == 2
    assert keys[0] != keys[1]


def test_store_holds_effective_knobs_and_one_graph_column_name(tmp_path):
    api.tune(GRAPH, trials=8, sampler="random", sources=1, results=tmp_path / "res")
    for r in trial_rows(tmp_path / "res") + trial_rows(tmp_path / "res", "reference"):
        assert r["param_block_size"] == 256 and r["param_driven"] == "topology"
        assert r["param_unroll"] == 1
        if r["param_mapping"] == "vwarp":
            assert r["param_chunk"] >= 1 and r["param_distribution"] in ("static", "dynamic")
        else:
            assert r["param_w"] is r["param_chunk"] is None
    graphs = read_graphs(tmp_path / "res")
    assert "graph_spec" in graphs.column_names and "spec" not in graphs.column_names
    assert graphs.column("graph_spec").to_pylist() == [trial_rows(tmp_path / "res")[0][
        "graph_spec"]]


def test_an_older_schema_directory_is_refused_for_writing(tmp_path):
    old = tmp_path / "old"
    old.mkdir()
    (old / MANIFEST).write_text(json.dumps({"schema_version": SCHEMA_VERSION - 1,
                                            "warpsweep_version": "0.0.1"}))
    with pytest.raises(ConfigError, match=r"schema version 1 .*write to a new --results"):
        ResultStore.open(old)
    assert main(["tune", "--graph", GRAPH, "--trials", "2", "--workers", "0",
                 "--results", str(old), "--no-progress"]) == 2
    assert not (old / "trials").exists()


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_log_lines_count_references_and_keep_the_eta_after_a_resume():
    clock, out = FakeClock(), io.StringIO()
    p = Progress(107, "log", desc="tune", out=out, clock=clock, log_every_s=5, references=7)
    p.resume(50)  # finished in an earlier session: no part of this session's rate
    for _ in range(7):
        clock.now += 1
        p.advance(1, reference=True)
    for _ in range(10):
        clock.now += 1
        p.advance(1)
    # 17 runs in 17 s: 1 run/s, 40 left -> 40 s (a rate counting the resumed 50 says 12 s)
    assert p.rate() == pytest.approx(1.0) and p.eta_s() == pytest.approx(40.0)
    lines = out.getvalue().splitlines()
    assert len(lines) == 3  # one every 5 s of the 17
    assert lines[-1] == ("tune: 58/100 configurations, 7/7 references (50 resumed), 1.0/s, "
                         "ETA 0:42")


def test_output_that_is_not_a_terminal_gets_log_lines(tmp_path, capsys):
    code = main(["tune", "--graph", GRAPH, "--trials", "4", "--workers", "0", "--sources", "1",
                 "--results", str(tmp_path / "res")])
    err = capsys.readouterr().err
    assert code == 0
    assert "tune: 4/4 configurations, 7/7 references" in err  # the closing line


def test_verbose_prints_a_line_per_run(tmp_path, capsys):
    main(["tune", "--graph", GRAPH, "--trials", "3", "--workers", "0", "--sources", "1",
          "--results", str(tmp_path / "res"), "--verbose"])
    err = capsys.readouterr().err
    assert err.count("tune: reference ") == 7 and err.count("tune: trial ") >= 3


def test_json_and_quiet_summaries(tmp_path, capsys):
    argv = ["tune", "--graph", GRAPH, "--trials", "5", "--workers", "0", "--sources", "1",
            "--results", str(tmp_path / "res")]
    assert main([*argv, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    (study,) = doc["studies"]
    assert study["tried"] == 5 and study["graph"]["n"] == 256 and study["sources"] == 1
    ranked = study["best"]
    assert [b["rank"] for b in ranked] == list(range(1, len(ranked) + 1))
    values = [b["values"]["time_us"] for b in ranked]
    assert values == sorted(values) and study["speedup_vs_thread"] == pytest.approx(
        study["thread"] / values[0])
    assert doc["warpsweep_version"] and doc["results"] == str(tmp_path / "res")
    assert main([*argv, "--quiet"]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    assert captured.out.splitlines() == [f"{study['key']}: {values[0]:.6g} " + " ".join(
        f"{k}={v}" for k, v in ranked[0]["params"].items())]


def test_version(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.startswith("warpsweep ")


def _parsers(parser: argparse.ArgumentParser, name: str = "warpsweep"):
    yield name, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub_name, sub in action.choices.items():
                yield from _parsers(sub, f"{name} {sub_name}")


def test_every_help_has_examples():
    missing = [name for name, p in _parsers(build_parser())
               if "examples:" not in p.format_help() or "warpsweep" not in (p.epilog or "")]
    assert missing == []


def test_python_api_result_is_json(tmp_path):
    result = api.tune(GRAPH, trials=4, sources=1, results=tmp_path / "res")
    doc = json.loads(json.dumps(result.to_json(), allow_nan=False, default=str))
    rows = read_trials(tmp_path / "res").to_pylist()
    assert doc["studies"][0]["tried"] == 4
    assert result.evaluations == sum(r["state"] != "duplicate" for r in rows)
    sweep = tmp_path / "s.yaml"
    sweep.write_text(f"trials: 3\nsources: 1\ngraphs: ['{GRAPH}']\nalgorithms: [bfs, cc]\n"
                     "devices: [h100]\nspaces: [vwarp]\n")
    swept = api.sweep(sweep, results=tmp_path / "res2")
    assert [s.spec.algorithm for s in swept.studies] == ["bfs", "cc"]
    assert all(s.done == 3 for s in swept.studies)


def test_tied_configurations_name_one_winner_in_tune_and_best(tmp_path):
    """On a road grid several configurations tie for the best time: the tune's table and
    `best` name the same one (references first, then trial number, then label)."""
    from tuner.analysis import answers
    from tuner.results.query import connect

    results = str(tmp_path / "r")
    # the datasheet model (the maximum of the bounds) ties configurations whose largest
    # bound is the same; the calibrated h100's 3-norm of the bounds rarely ties exactly
    run = api.tune("road:rows=64,seed=1", "bfs", device="h100-datasheet", space="vwarp",
                   trials=40, sources=1, results=results, sampler="random")
    ranked = run.studies[0].best
    assert ranked[0].values == ranked[1].values  # a tie, or the test proves nothing
    (won,) = answers.best(connect(results)).studies
    top = ranked[0]
    assert (won.role, won.trial, won.label) == (top.role, top.trial, top.label)
    assert won.value == top.values[0]


@pytest.mark.parametrize("per_second, text", [
    (12.34, "12.3/s"), (1.0, "1.0/s"), (0.5, "2 s each"), (1 / 70, "70 s each"),
    (1 / 95.5, "95.5 s each"), (0.0, "0/s"),
])
def test_slow_studies_say_how_long_an_evaluation_takes(per_second, text):
    from tuner.tuning.progress import rate_text

    assert rate_text(per_second) == text
