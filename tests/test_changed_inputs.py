"""Inputs that change while a run uses them (a graph file replaced, a policy retrained, a
journal edited) are refused or set aside, never recorded under what they were before."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pyarrow.parquet as pq

from simulator import graph_cache
from simulator import load as load_module
from simulator.load import load_graph
from tuner.cli import main
from tuner.tuning import evaluate

SHIPPED_POLICY = Path(__file__).parents[1] / "policies" / "bfs-h100.json"


def _edges(path: Path, lines: str) -> None:
    path.write_text(lines)


def _trial_rows(results: Path) -> list[dict]:
    files = sorted((results / "trials").rglob("*.parquet"))
    return [row for f in files for row in pq.read_table(f).to_pylist()]


def test_a_file_replaced_while_it_is_parsed_is_not_cached_as_the_new_one(tmp_path,
                                                                         monkeypatch):
    """The entry had been keyed by the file as it was after the parse: the old graph was
    served for good under the new file's key."""
    monkeypatch.setenv(graph_cache.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.setattr(graph_cache, "RACY_S", -1.0)  # every version settled at once
    path = tmp_path / "g.txt"
    _edges(path, "1 2\n2 3\n3 4\n")  # a path of 4 vertices: 3 edges
    read = load_module.read_edges

    def replaced_while_read(*args, **kwargs):
        edges = read(*args, **kwargs)
        new = tmp_path / "g.new"
        _edges(new, "1 2\n2 3\n1 4\n1 3\n")  # 4 edges
        new.replace(path)
        return edges

    monkeypatch.setattr(load_module, "read_edges", replaced_while_read)
    assert load_graph(f"file:{path}").m == 6  # what was read: the old file
    monkeypatch.setattr(load_module, "read_edges", read)
    assert load_graph(f"file:{path}").m == 8  # the file as it is, not a cached old graph
    assert load_graph(f"file:{path}").m == 8  # and now cached as it is
    assert len(list((tmp_path / "cache").glob("*.npz"))) == 1


def test_a_graph_file_replaced_after_the_run_read_it_is_refused(tmp_path, monkeypatch,
                                                                capsys):
    """Rows were filed under the file's first content and held the second's results."""
    path = tmp_path / "g.txt"
    _edges(path, "".join(f"{i} {i + 1}\n" for i in range(40)))
    prepare = evaluate.SimulatorBackend.prepare

    def replaced_first(self, *args, **kwargs):
        _edges(path, "".join(f"{i} {(i * 7 + 3) % 60}\n" for i in range(60)))
        return prepare(self, *args, **kwargs)

    monkeypatch.setattr(evaluate.SimulatorBackend, "prepare", replaced_first)
    results = tmp_path / "r"
    code = main(["tune", "--graph", f"file:{path}", "--trials", "3", "--workers", "0",
                 "--results", str(results)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "changed while this run used it" in err and str(path) in err
    assert not _trial_rows(results)


def test_prepare_takes_the_graph_the_driver_read(tmp_path):
    from simulator.graph_cache import content_digest
    from simulator.graph_spec import parse_spec

    path = tmp_path / "g.txt"
    _edges(path, "0 1\n1 2\n")
    spec = f"file:{path}"
    content = content_digest(parse_spec(spec))
    backend = evaluate.SimulatorBackend()
    graph, _, meta = backend.prepare(spec, "bfs", 1, 0, False, content)
    assert meta.error is None and graph.m == 4
    _edges(path, "0 1\n1 2\n2 0\n")
    graph, _, meta = backend.prepare(spec, "bfs", 1, 0, False, content)
    assert graph is None and "changed while this run used it" in meta.error


def test_a_policy_edited_during_the_run_is_not_recorded_as_the_study_s(tmp_path,
                                                                      monkeypatch, capsys):
    """The key named the policy as the run began; trials after an edit ran the new one and
    were stored under it (115.02 µs rows in a study whose policy gives 106.84)."""
    policy = tmp_path / "p.json"
    doc = json.loads(SHIPPED_POLICY.read_text())
    policy.write_text(json.dumps(doc))
    space = tmp_path / "pol.yaml"
    space.write_text(f"name: mypol\nfixed: {{policy: {policy}}}\n"
                     "params:\n  policy_t1: {float: [0.5, 2.0]}\n")
    calls = []
    run = evaluate.SimulatorBackend.evaluate

    def edited_on_the_third(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            doc.setdefault("meta", {})["note"] = "retrained"
            policy.write_text(json.dumps(doc))
        return run(self, *args, **kwargs)

    monkeypatch.setattr(evaluate.SimulatorBackend, "evaluate", edited_on_the_third)
    results = tmp_path / "r"
    code = main(["tune", "--graph", "rmat:scale=7", "--space", str(space), "--trials", "6",
                 "--sampler", "random", "--no-references", "--workers", "0",
                 "--results", str(results)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert f"policy file {str(policy)!r} changed while" in err
    assert len(calls) == 3 and len(_trial_rows(results)) == 2  # those before the edit


def _told_value(journal: Path, trial: int, value: float) -> None:
    text = journal.read_text()
    edited, count = re.subn(
        rf'("trial_id": ?{trial}, ?"state": ?1, ?"values": ?\[)[-0-9.e+]+', rf"\g<1>{value}",
        text)
    assert count == 1
    journal.write_text(edited)


def test_a_journal_whose_told_values_were_edited_is_named_and_set_aside(tmp_path, capsys):
    """`check` compared only the record each trial carries; the sampler, optuna.load_study
    and the dashboard read the told value, which nothing compared."""
    results = tmp_path / "r"
    args = ["tune", "--graph", "rmat:scale=7", "--trials", "4", "--workers", "0",
            "--results", str(results)]
    assert main(args) == 0
    (journal,) = (results / "studies").glob("*.journal")
    _told_value(journal, 2, 0.5)
    capsys.readouterr()
    assert main(["check", str(results)]) == 1
    assert "not what their records say was told" in capsys.readouterr().out
    assert main([*args[:4], "6", *args[5:]]) == 2  # the resume refuses to learn from it
    assert "check" in capsys.readouterr().err and journal.exists()
    assert main(["check", str(results), "--repair"]) == 0
    assert main([*args[:4], "6", *args[5:]]) == 0  # rebuilt from the rows, then resumed
    assert main(["check", str(results)]) == 0
    rows = [r for r in _trial_rows(results) if r["role"] == "trial"]
    assert len(rows) == 6 and min(r["time_us"] for r in rows) > 1.0


def test_check_names_a_journal_copied_from_another_study(tmp_path, capsys):
    """It had been 'unreadable (KeyError: Record does not exist.)', naming no study."""
    results = tmp_path / "r"
    for graph in ("rmat:scale=6", "rmat:scale=7"):
        assert main(["tune", "--graph", graph, "--trials", "2", "--workers", "0",
                     "--results", str(results), "-q"]) == 0
    first, second = sorted((results / "studies").glob("*.journal"))
    second.write_bytes(first.read_bytes())
    capsys.readouterr()
    assert main(["check", str(results)]) == 1
    out = capsys.readouterr().out
    assert (f"it is the journal of study {first.name[:-len('.journal')]}, not of "
            f"{second.name[:-len('.journal')]}") in out


def test_a_sweep_whose_seed_changed_is_refused_before_any_study_runs(tmp_path, capsys):
    """Refused only as each study opened: the studies before it had run under the new seed,
    leaving both seeds in one directory, and the hint named flags sweep has not."""
    sweep = tmp_path / "s.yaml"
    text = ("graphs: ['rmat:scale=6,seed=1', 'rmat:scale=7,seed=1']\nalgorithms: [bfs, cc]\n"
            "devices: [h100]\nspaces: [vwarp]\ntrials: 2\nsources: 2\nseed: {seed}\n")
    results = tmp_path / "r"
    sweep.write_text(text.format(seed=5))
    assert main(["sweep", str(sweep), "--workers", "0", "--results", str(results), "-q"]) == 0
    before = len(_trial_rows(results))
    sweep.write_text(text.format(seed=3))
    capsys.readouterr()
    assert main(["sweep", str(sweep), "--workers", "0", "--results", str(results), "-q"]) == 2
    err = capsys.readouterr().err
    assert "ran with sampler tpe, seed 5; this run asks for sampler tpe, seed 3" in err
    assert f"set `sampler: tpe`, `seed: 5` in {sweep})" in err  # the file, not a graph line
    assert len(_trial_rows(results)) == before  # nothing of the new seed ran


def test_check_counts_the_configurations_a_study_tried_failed_ones_too(tmp_path, capsys):
    """check had counted complete trials only (6 a study where sweep said 10 tried)."""
    space = tmp_path / "failsome.yaml"
    space.write_text("name: failsome\nparams:\n  mapping: {value: vwarp}\n"
                     "  w: {choices: [4, 8, 32]}\n  defer_threshold: {choices: [null, 16]}\n"
                     "  unroll: {choices: [1, 2]}\n")
    results = tmp_path / "r"
    assert main(["tune", "--graph", "rmat:scale=8,seed=1", "--space", str(space), "--trials",
                 "10", "--sampler", "random", "--workers", "0", "--results", str(results),
                 "--json"]) == 0
    study = json.loads(capsys.readouterr().out)["studies"][0]
    assert study["failed"] > 0
    assert main(["check", str(results)]) == 0
    assert f"{study['tried']} configurations sampled" in capsys.readouterr().out
