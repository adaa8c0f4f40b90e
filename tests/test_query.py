"""`warpsweep query`, `best`, `effect`, `pareto`: SQL over a results directory written by the
test, and the ready answers on synthetic rows whose answers are known."""

from __future__ import annotations

import csv
import io
import json
import math
import os
import stat
import threading
from datetime import UTC
from datetime import datetime

import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from pyarrow.fs import LocalFileSystem

from simulator import METRICS
from simulator.device import device_digest
from simulator.device import get_device
from simulator.errors import ConfigError
from tuner.analysis import answers
from tuner.analysis.answer_types import Filters
from tuner.analysis.answer_types import Objective
from tuner.analysis.answer_types import parse_objectives
from tuner.analysis.pareto import pareto_mask
from tuner.cli import main
from tuner.results.location import Location
from tuner.results.query import connect
from tuner.results.query import run_sql
from tuner.results.records import TrialRecord
from tuner.results.schema import SCHEMA_VERSION
from tuner.results.store import ParquetDirBackend
from tuner.results.store import ResultStore
from tuner.results.store import check_manifest

THREAD = {"mapping": "thread", "block_size": 256, "driven": "topology", "unroll": 1}


def vwarp(w: int, chunk: int = 1, **extra) -> dict:
    """Every effective knob of a vwarp configuration, as the writer stores them."""
    return {"mapping": "vwarp", "w": w, "chunk": chunk, "distribution": "static",
            "block_size": 256, "driven": "topology", "unroll": 1, **extra}


# (label or None for a trial, params, time_us, transactions) per study.
G1_BFS = [
    ("thread", THREAD, 100.0, 500.0),
    ("vwarp w=8", vwarp(8), 40.0, 300.0),
    ("vwarp w=32", vwarp(32), 50.0, 100.0),
    (None, vwarp(8, 4), 20.0, 400.0),     # the best
    (None, vwarp(16, 4), 30.0, 200.0),
    (None, vwarp(4, 4), 35.0, 250.0),
    (None, vwarp(32, 16), 45.0, 150.0),
    (None, vwarp(16, 8), 25.0, 1000.0),   # better than w=16 at the best's chunk=4
]
G2_BFS = [
    ("thread", THREAD, 80.0, 400.0),
    ("vwarp w=8", vwarp(8), 60.0, 300.0),
    ("vwarp w=32", vwarp(32), 30.0, 100.0),
    (None, vwarp(32, 2), 25.0, 120.0),    # the best
    # vwarp w=8 chunk=4 written by an older writer: knobs at their defaults left NULL
    (None, {"mapping": "vwarp", "w": 8, "chunk": 4}, 45.0, 350.0),
]
G1_SSSP = [
    ("thread", THREAD, 90.0, 900.0),
    ("vwarp w=32", vwarp(32), 10.0, 100.0),  # a reference wins
    (None, vwarp(8, 2), 12.0, 90.0),
]
STUDIES = {
    "g1.bfs.h100.vwarp.k1": ("g1-aaaa", "rmat:scale=8,ef=16,a=0.57,b=0.19,c=0.19,seed=1", "bfs",
                             G1_BFS),
    "g2.bfs.h100.vwarp.k2": ("g2-bbbb", "rmat:scale=9,ef=16,a=0.57,b=0.19,c=0.19,seed=2", "bfs",
                             G2_BFS),
    "g1.sssp.h100.vwarp.k3": ("g1-aaaa", "rmat:scale=8,ef=16,a=0.57,b=0.19,c=0.19,seed=1",
                              "sssp", G1_SSSP),
}
NAMES = {"g1-aaaa": "g1", "g2-bbbb": "g2"}


def _record(key: str, graph_id: str, spec: str, algo: str, label: str | None, params: dict,
            trial: int | None, state: str = "complete", time_us: float | None = None,
            transactions: float | None = None, **kw) -> TrialRecord:
    complete = state != "failed"
    # today's h100 (rows without a digest are an older warpsweep's, which the readers name)
    kw.setdefault("device_digest", device_digest(get_device("h100")))
    return TrialRecord(
        study_key=key, role="reference" if label else "trial", state=state, graph_id=graph_id,
        graph_spec=spec, algorithm=algo, device="h100", space="vwarp", space_digest="d",
        sampler="tpe", objective="time_us", params=params, seed=0, trial=trial, label=label,
        values=[time_us] if complete else None,
        metrics={"time_us": time_us, "transactions": transactions,
                 "simd_efficiency": 1.0 / time_us} if complete else None,
        error=None if complete else "ConfigError: boom", n_sources=1, **kw)


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """A results directory of three studies with known answers, plus rows that must not
    count: a failed trial and a duplicate that repeats a configuration with a better time."""
    root = tmp_path_factory.mktemp("results")
    check_manifest(root)
    store = ResultStore(ParquetDirBackend(root), flush_every_s=1e9)
    for graph_id, name in NAMES.items():
        spec = next(s[1] for s in STUDIES.values() if s[0] == graph_id)
        store.add_graph({"graph_id": graph_id, "graph_spec": spec, "name": name, "kind": "rmat",
                         "n": 256, "m": 4096, "directed": False, "weighted": False,
                         "timestamp": datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC),
                         "warpsweep_version": "test", "schema_version": SCHEMA_VERSION,
                         "degree_gini": 0.5})
    for key, (graph_id, spec, algo, rows) in STUDIES.items():
        trial = 0
        for label, params, time_us, transactions in rows:
            store.add_trial(_record(key, graph_id, spec, algo, label, params,
                                    None if label else trial, time_us=time_us,
                                    transactions=transactions))
            trial += label is None
        store.add_trial(_record(key, graph_id, spec, algo, None, vwarp(2, 8), trial,
                                state="failed"))
        store.add_trial(_record(key, graph_id, spec, algo, None, vwarp(8, 4), trial + 1,
                                state="duplicate", time_us=1.0, transactions=1.0,
                                duplicate_of=0))
    store.close()
    return root


@pytest.fixture()
def con(results):
    return connect(results)


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


# -- query ----------------------------------------------------------------------------------
def test_views_expose_trials_and_graphs(con):
    rows = run_sql(con, """
        SELECT g.name, count(*) AS runs, min(t.time_us) AS best
        FROM trials t JOIN graphs g USING (graph_id)
        WHERE t.state = 'complete' AND t.algorithm = 'bfs' GROUP BY g.name ORDER BY g.name
    """).read_all().to_pylist()
    assert rows == [{"name": "g1", "runs": 8, "best": 20.0}, {"name": "g2", "runs": 5,
                                                                "best": 25.0}]


def test_query_table_is_aligned_and_says_what_was_left_out(results, capsys):
    code, out, _ = run_cli(capsys, "query", "SELECT label, time_us FROM trials WHERE role = "
                           "'reference' ORDER BY time_us", "--results", str(results),
                           "--limit", "3")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["label", "time_us"] and set(lines[1]) <= {"-", " "}
    assert lines[2].split() == ["vwarp", "w=32", "10"]
    assert len({line.index(line.split()[-1][-1]) for line in lines[2:5]}) == 1  # right-aligned
    assert lines[-1] == "(3 of 8 rows shown, 5 left out: --limit N, or --limit 0 for all)"


def test_query_csv_and_strict_json(results, capsys):
    sql = ("SELECT label, time_us, 'nan'::DOUBLE AS nothing, values, timestamp FROM trials "
           "WHERE label = 'thread' ORDER BY time_us")
    code, out, _ = run_cli(capsys, "query", sql, "--results", str(results), "--format", "csv")
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [r["time_us"] for r in rows] == ["80.0", "90.0", "100.0"]
    assert rows[0]["nothing"] == "nan" and json.loads(rows[0]["values"]) == [80.0]
    code, out, _ = run_cli(capsys, "query", sql, "--results", str(results), "--format", "json")
    data = json.loads(out, parse_constant=lambda c: pytest.fail(f"non-strict JSON: {c}"))
    assert [r["time_us"] for r in data] == [80.0, 90.0, 100.0]
    assert data[0]["nothing"] is None and data[0]["values"] == [80.0]
    assert datetime.fromisoformat(data[0]["timestamp"]).tzinfo is not None


def test_query_keeps_whole_sums_and_decimals_exact(results, capsys):
    """A sum() of integers (a HUGEINT) had come out of csv and json as a float (6.0, and a
    sum beyond 2**53 rounded); a DECIMAL had lost its cents."""
    sql = ("SELECT sum(9007199254740993::BIGINT) AS big, 12345678901234567.25::DECIMAL(20,2) "
           "AS d, NULL AS z, 'inf'::DOUBLE AS i FROM trials")
    code, out, _ = run_cli(capsys, "query", sql, "--results", str(results), "--format", "csv")
    [row] = list(csv.DictReader(io.StringIO(out)))
    assert code == 0
    assert row == {"big": str(9007199254740993 * 22), "d": "12345678901234567.25", "z": "",
                   "i": "inf"}
    code, out, _ = run_cli(capsys, "query", sql, "--results", str(results), "--format", "json")
    [data] = json.loads(out)
    assert data["big"] == 9007199254740993 * 22 and data["i"] is None


def test_query_parquet_needs_out(results, tmp_path, capsys):
    sql = "SELECT study_key, time_us FROM trials WHERE state = 'complete'"
    code, _, err = run_cli(capsys, "query", sql, "--results", str(results), "--format",
                           "parquet")
    assert code == 2 and "--out FILE" in err
    out = tmp_path / "rows.parquet"
    code, _, err = run_cli(capsys, "query", sql, "--results", str(results), "--format",
                           "parquet", "--out", str(out))
    assert code == 0 and "wrote 16 rows" in err
    assert pq.read_table(out).num_rows == 16
    # without --format, --out's suffix says it: an aligned text table had been written into
    # rows.parquet, exit 0 (review CR16)
    out.unlink()
    code, _, _ = run_cli(capsys, "query", sql, "--results", str(results), "--out", str(out))
    assert code == 0 and pq.read_table(out).num_rows == 16


def test_query_out_where_nothing_can_be_written_is_one_line_before_the_query(results,
                                                                            capsys):
    """It had run the query, then exited 1 with the errno of a hidden temporary file."""
    code, _, err = run_cli(capsys, "query", "SELECT 1", "--results", str(results), "--out",
                           "/proc/warpsweep-out.csv", "--format", "csv")
    assert code == 2 and "--out '/proc/warpsweep-out.csv': cannot write there" in err


def test_query_out_writes_through_a_symlink_and_a_pipe(results, tmp_path, capsys):
    """The temporary file had been renamed over the link (its target left stale) and over a
    pipe (its reader got nothing); over /dev/null it had replaced the device (probe QUERY)."""
    target = tmp_path / "real.csv"
    target.write_text("stale\n")
    link = tmp_path / "link.csv"
    link.symlink_to(target)
    code, _, _ = run_cli(capsys, "query", "SELECT 7 AS n", "--results", str(results),
                         "--format", "csv", "--out", str(link))
    assert code == 0 and link.is_symlink() and target.read_text().split() == ["n", "7"]
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()), daemon=True)
    reader.start()
    code, _, _ = run_cli(capsys, "query", "SELECT 7 AS n", "--results", str(results),
                         "--format", "csv", "--out", str(fifo))
    reader.join(timeout=30)
    assert code == 0 and stat.S_ISFIFO(fifo.stat().st_mode) and got[0].split() == ["n", "7"]
    # Parquet seeks back to its footer: refused, not a bare `lseek failed` (review CR15)
    code, _, err = run_cli(capsys, "query", "SELECT 7 AS n", "--results", str(results),
                           "--format", "parquet", "--out", str(fifo))
    assert code == 2 and "is no regular file: Parquet is written to a file" in err


def test_query_out_dash_is_stdout(results, tmp_path, capsys, monkeypatch):
    """``--out -`` had written a file named '-' into the working directory."""
    monkeypatch.chdir(tmp_path)
    code, out, _ = run_cli(capsys, "query", "SELECT count(*) AS n FROM graphs", "--results",
                           str(results), "--format", "json", "--out", "-")
    assert code == 0 and json.loads(out) == [{"n": 2}] and not (tmp_path / "-").exists()
    code, _, err = run_cli(capsys, "query", "SELECT 1", "--results", str(results),
                           "--format", "parquet", "--out", "-")
    assert code == 2 and "not stdout" in err and not (tmp_path / "-").exists()


@pytest.mark.parametrize("sql, words", [
    ("SELEC 1", "Parser Error"),
    ("SELECT nope FROM trials", "Binder Error"),
    ("SELECT * FROM trial", 'Did you mean "trials"'),
    ("SELECT CAST(label AS INTEGER) FROM trials WHERE label IS NOT NULL", "Conversion Error"),
])
def test_sql_errors_are_reported_as_such(results, capsys, sql, words):
    code, out, err = run_cli(capsys, "query", sql, "--results", str(results))
    assert code == 2 and out == ""
    assert err.startswith("warpsweep: error: SQL error: ") and words in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_query_reads_sql_from_stdin(results, capsys, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO("SELECT count(*) AS n FROM graphs"))
    code, out, _ = run_cli(capsys, "query", "-", "--results", str(results), "--format", "json")
    assert code == 0 and json.loads(out) == [{"n": 2}]


def test_query_refuses_a_directory_without_results(tmp_path, capsys):
    code, _, err = run_cli(capsys, "query", "SELECT 1", "--results", str(tmp_path / "none"))
    assert code == 2 and "does not exist" in err
    code, _, err = run_cli(capsys, "query", "SELECT 1", "--results", str(tmp_path))
    assert code == 2 and "not a warpsweep results directory" in err
    (tmp_path / "afile").write_text("x")  # said as `tune` says it (probe SELECT)
    code, _, err = run_cli(capsys, "best", "--results", str(tmp_path / "afile"))
    assert code == 2 and "is a file, not a directory" in err


def test_fresh_results_answer_with_no_rows(tmp_path, capsys):
    check_manifest(tmp_path)
    code, out, _ = run_cli(capsys, "query", "SELECT count(*) AS n FROM trials",
                           "--results", str(tmp_path))
    assert code == 0 and out.splitlines()[2].strip() == "0"
    code, out, _ = run_cli(capsys, "best", "--results", str(tmp_path))
    assert code == 1 and "no complete evaluation" in out
    assert "journal" not in out
    assert answers.pareto(connect(tmp_path), parse_objectives("time_us,bytes")
                          ).studies == []


def test_best_over_a_journal_without_rows_says_how_to_write_them(tmp_path, capsys):
    """A run killed before its rows reached disk leaves a journal only: `best` says so and
    names `check --repair`, which writes them (it had said only 'no complete evaluation')."""
    import shutil

    results = tmp_path / "r"
    assert run_cli(capsys, "tune", "--graph", "rmat:scale=7,seed=3", "--algo", "bfs",
                   "--trials", "3", "--workers", "0", "--results", str(results), "-q")[0] == 0
    shutil.rmtree(results / "trials")
    code, out, _ = run_cli(capsys, "best", "--results", str(results))
    assert code == 1 and "1 study in studies/ has a journal but no rows yet" in out
    assert f"warpsweep check {results} --repair" in out
    assert run_cli(capsys, "check", str(results), "--repair")[0] == 0
    code, out, _ = run_cli(capsys, "best", "--results", str(results))
    assert code == 0 and "mapping=" in out


def test_a_journal_recording_no_result_is_not_offered_for_resume(tmp_path, capsys):
    """A run refused as its study began leaves a journal recording nothing: `best` had asked
    to resume it or `check --repair` for ever, and neither changed anything (probe SPACE)."""
    import optuna
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    results = tmp_path / "r"
    assert run_cli(capsys, "tune", "--graph", "rmat:scale=7,seed=3", "--algo", "bfs",
                   "--trials", "2", "--workers", "0", "--results", str(results), "-q")[0] == 0
    empty = results / "studies" / "rmat9-ef16.bfs.h100.vwarp.0123456789.journal"
    optuna.create_study(study_name=empty.stem,
                        storage=JournalStorage(JournalFileBackend(str(empty))))
    code, out, err = run_cli(capsys, "best", "--results", str(results))
    assert code == 0 and "mapping=" in out and "no rows yet" not in err


def test_best_beside_a_journal_without_rows_says_it_is_left_out(tmp_path, capsys):
    """Once another study had rows, the stopped one dropped out of the table silently."""
    import shutil

    results = tmp_path / "r"
    for graph in ("rmat:scale=7,seed=3", "rmat:scale=6,seed=1"):
        assert run_cli(capsys, "tune", "--graph", graph, "--trials", "2", "--workers", "0",
                       "--results", str(results), "-q")[0] == 0
    stopped = next((results / "trials").rglob("*.parquet"))
    keys = set(pq.read_table(stopped).column("study_key").to_pylist())
    others = [f for f in (results / "trials").rglob("*.parquet")
              if set(pq.read_table(f).column("study_key").to_pylist()) != keys]
    if not others:  # both studies in one file: keep the other's rows only
        table = pq.read_table(stopped)
        (key, *_) = sorted(keys)
        pq.write_table(table.filter(pc.not_equal(table.column("study_key"), key)), stopped)
    else:
        shutil.move(stopped, tmp_path / "gone.parquet")
    code, out, err = run_cli(capsys, "best", "--results", str(results))
    assert code == 0 and "mapping=" in out
    assert "not in this table: 1 study in studies/ has a journal but no rows yet" in err


def test_best_says_a_study_whose_every_evaluation_failed_is_left_out(tmp_path, capsys):
    """A study on a device that holds no block of the space's size fails every evaluation:
    `best` had left it out of the table without a word, exit 0 (probe SWEEP2)."""
    results = tmp_path / "r"
    device = tmp_path / "tiny.toml"
    device.write_text('base = "h100"\nname = "tiny-tpb"\nmax_threads_per_block = 128\n')
    assert run_cli(capsys, "tune", "--graph", "rmat:scale=6,seed=1", "--trials", "2",
                   "--workers", "0", "--results", str(results), "-q")[0] == 0
    run_cli(capsys, "tune", "--graph", "rmat:scale=6,seed=1", "--trials", "2", "--workers",
            "0", "--device", str(device), "--results", str(results), "-q")
    code, out, err = run_cli(capsys, "best", "--results", str(results))
    assert code == 0 and "tiny-tpb" not in out
    assert "not in this table: 1 study whose every evaluation failed" in err
    assert f"warpsweep query --results {results}" in err


def test_best_tells_apart_studies_its_columns_would_show_alike(tmp_path, capsys):
    """Two studies of one graph, algorithm, device and space (here: two objectives) had
    printed two rows no column told apart."""
    results = tmp_path / "r"
    for objective in ("time_us", "transactions"):
        assert run_cli(capsys, "tune", "--graph", "rmat:scale=6,seed=1", "--trials", "2",
                       "--objective", objective, "--workers", "0", "--results", str(results),
                       "-q")[0] == 0
    code, out, _ = run_cli(capsys, "best", "--results", str(results))
    keys = {k.rsplit(".", 1)[-1] for k in (p.name[:-len(".journal")]
                                            for p in (results / "studies").glob("*.journal"))}
    assert code == 0 and len(keys) == 2
    assert all(f"vwarp ({k})" in out for k in keys)



def test_best_tells_apart_two_graphs_of_one_name(tmp_path, capsys):
    """Files of one stem in two directories: two rows both `g` (probe QUERY)."""
    results = tmp_path / "r"
    for d, edges in (("a", "0 1\n1 2\n2 3\n"), ("b", "0 1\n1 2\n2 0\n0 3\n")):
        (tmp_path / d).mkdir()
        (tmp_path / d / "g.txt").write_text(edges)
        assert run_cli(capsys, "tune", "--graph", f"file:{tmp_path / d / 'g.txt'}", "--trials",
                       "2", "--sources", "1", "--workers", "0", "--results", str(results),
                       "-q")[0] == 0
    code, out, _ = run_cli(capsys, "best", "--results", str(results))
    ids = [gid for (gid,) in connect(results).execute("SELECT graph_id FROM graphs").fetchall()]
    assert code == 0 and len(ids) == 2 and all(f"g ({gid})" in out for gid in ids)


# -- best -----------------------------------------------------------------------------------
def test_best_per_study_with_both_speedups(con):
    result = answers.best(con, Filters(algo="bfs"))
    by_graph = {b.study.graph: b for b in result.studies}
    assert set(by_graph) == {"g1", "g2"}
    g1, g2 = by_graph["g1"], by_graph["g2"]
    assert g1.value == 20.0 and g1.config.params == vwarp(8, 4) and g1.role == "trial"
    assert g1.config.text == "mapping=vwarp w=8 chunk=4"
    assert g1.vs_thread == pytest.approx(100 / 20) and g2.vs_thread == pytest.approx(80 / 25)
    # Configurations on both graphs, value over each graph's best: thread (5, 3.2), w=8
    # (2, 2.4), w=32 (2.5, 1.2), w=8 chunk=4 (1, 1.8, its g2 row written with NULL defaults).
    [fixed] = result.fixed
    assert fixed.config.params == vwarp(8, 4) and fixed.graphs == 2
    assert fixed.geomean_ratio == pytest.approx(math.sqrt(1.8))
    assert g1.fixed_value == 20.0 and g1.vs_fixed == pytest.approx(1.0)
    assert g2.fixed_value == 45.0 and g2.vs_fixed == pytest.approx(45 / 25)


def test_best_counts_references_and_filters(con):
    [s] = answers.best(con, Filters(graph="g1", algo="sssp")).studies
    assert (s.role, s.label, s.value) == ("reference", "vwarp w=32", 10.0)
    assert s.vs_thread == pytest.approx(9.0) and s.vs_fixed == pytest.approx(1.0)
    for graph in ("g1-aaaa", "rmat:scale=8,seed=1", "rmat:scale=8,ef=16,a=0.57,b=0.19,c=0.19,"
                  "seed=1"):
        found = answers.best(con, Filters(graph=graph, algo="bfs")).studies
        assert [b.study.key for b in found] == ["g1.bfs.h100.vwarp.k1"]
        # the fixed configuration still looks at every graph of the group
        assert found[0].fixed.graphs == 2


def test_best_with_a_metric_to_maximise(con):
    result = answers.best(con, Filters(algo="bfs", graph="g2"),
                          Objective.parse("simd_efficiency"))
    [s] = result.studies
    assert s.value == pytest.approx(1 / 25) and s.vs_thread == pytest.approx(80 / 25)


def test_unknown_filters_name_what_is_there(con):
    with pytest.raises(ConfigError, match=r"--algo 'pr' matches no complete trial; "
                                          r"present: bfs, sssp"):
        answers.best(con, Filters(algo="pr"))
    with pytest.raises(ConfigError, match=r"--graph 'nope'.*graphs present: g1, g2"):
        answers.pareto(con, parse_objectives("time_us"), Filters(graph="nope"))
    # meant as a spec, with a key no generator has: what is wrong with it is named
    with pytest.raises(ConfigError, match=r"with a complete trial \(as a graph spec: .*unknown "
                                          r"key 'bogus' for rmat.*graphs present: g1, g2"):
        answers.best(con, Filters(graph="rmat:scale=8,seed=1,bogus=2"))
    with pytest.raises(ConfigError, match=r"unknown metric 'speed'; metrics present: .*time_us"):
        answers.best(con, objective=Objective("speed"))


def test_answers_take_the_texts_and_dicts_a_notebook_gives(con):
    """``best(DIR, objective="time_us")``, ``pareto(DIR, ["time_us", "bytes"])`` and
    ``best(DIR, {"algo": "bfs"})`` had raised AttributeError (probe API)."""
    by_text = answers.best(con, {"algo": "bfs"}, objective="time_us")
    assert by_text == answers.best(con, Filters(algo="bfs"), Objective("time_us"))
    assert answers.pareto(con, ["time_us", "bytes"]) == answers.pareto(
        con, parse_objectives("time_us,bytes"))
    with pytest.raises(ConfigError, match=r"unknown filter\(s\) \['algorithm'\]"):
        answers.best(con, {"algorithm": "bfs"})
    with pytest.raises(ConfigError, match="pareto takes a list of objectives"):
        answers.pareto(con, "time_us")
    with pytest.raises(ConfigError, match="an objective is an Objective or its text"):
        answers.best(con, objective=3)


def test_best_counts_the_workloads_its_fixed_mean_is_over(tmp_path, capsys):
    """A graph timed from one and from two sources is two workloads of the fixed
    configuration's mean; the footer had said "all 2 graphs" of a mean over 3 (probe AN)."""
    from tuner import api

    res = tmp_path / "r"
    for graph, sources in (("rmat:scale=7,seed=1", 1), ("rmat:scale=7,seed=1", 2),
                           ("grid2d:rows=8", 1)):
        api.tune(graph, "bfs", trials=3, sources=sources, results=str(res))
    code, out, _ = run_cli(capsys, "best", "--results", str(res))
    assert code == 0
    assert "(evaluated on all 3 workloads (2 graphs); geometric mean" in out
    assert "each workload's best" in out
    code, out, _ = run_cli(capsys, "best", "--results", str(res), "--json")
    doc = json.loads(out)
    (fixed,) = doc["fixed"]
    assert (fixed["graphs"], fixed["workloads"]) == (2, 3)
    # its complete evaluations are called so: `tune`'s "evaluations" count the failed too
    study = doc["studies"][0]["study"]
    assert "evaluations" not in study and study["complete"] > 0


def test_best_keeps_studies_of_two_cost_models_apart(tmp_path, capsys, monkeypatch):
    """Two studies of one graph and sources timed by two cost models (the simulator changed
    between them) are two workloads: `best` had taken the newer model's best as the older
    rows' yardstick and averaged the fixed configuration over both (probe SELECT)."""
    from tuner import api
    from tuner import env
    from tuner.tuning import evaluate
    from tuner.tuning import study

    res = tmp_path / "r"
    api.tune("rmat:scale=7,seed=1", "bfs", trials=3, results=str(res))
    for module in (env, study, evaluate):
        monkeypatch.setattr(module, "model_digest", lambda: "0123456789abcdef")
    api.tune("rmat:scale=7,seed=1", "bfs", trials=3, space="driven", results=str(res))
    code, out, _ = run_cli(capsys, "best", "--results", str(res), "--json")
    assert code == 0
    (fixed,) = json.loads(out)["fixed"]
    assert (fixed["graphs"], fixed["workloads"]) == (1, 2)
    code, out, _ = run_cli(capsys, "best", "--results", str(res))
    assert "(evaluated on all 2 workloads (1 graph); geometric mean" in out


def test_a_study_resumed_across_the_digests_recording_is_one_workload(tmp_path, capsys):
    """A study begun before rows recorded model_digest and resumed after holds rows without
    and with it: it had been split into two workloads by row, and `best` had chosen its fixed
    configuration from whichever half came first (probe CR7)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from tuner import api

    res = tmp_path / "r"
    for seed in (1, 2):
        api.tune(f"rmat:scale=7,seed={seed}", "bfs", trials=6, results=str(res))
    code, out, _ = run_cli(capsys, "best", "--results", str(res), "--json")
    before = json.loads(out)["fixed"]
    for path in sorted((res / "trials").rglob("*.parquet")):
        table = pq.read_table(path)
        at = table.column_names.index("model_digest")
        old = pc.equal(table.column("role"), "reference")  # written by the older version
        table = table.set_column(at, "model_digest", pc.if_else(
            old, pa.scalar(None, pa.string()), table.column("model_digest")))
        table = table.take(pc.sort_indices(table, sort_keys=[("role", "descending")]))
        pq.write_table(table, path, write_page_checksum=True)
    code, out, _ = run_cli(capsys, "best", "--results", str(res), "--json")
    assert code == 0
    (fixed,) = json.loads(out)["fixed"]
    assert (fixed["graphs"], fixed["workloads"]) == (2, 2)
    assert fixed == before[0]


def test_readers_take_rows_of_an_older_schema_without_a_binder_error(tmp_path, capsys):
    """An older warpsweep's directory (trial rows without ``device_digest``, graph rows naming
    their spec ``spec``, as results schema 1 did): `select train`, `select evaluate` and
    `report` had ended in a DuckDB binder error's traceback, exit 1 (probe COMPAT)."""
    import pyarrow.parquet as pq

    from tuner import api

    res = tmp_path / "r"
    for seed in (1, 2, 3):  # select evaluate leaves one of at least three out
        api.tune(f"rmat:scale=7,seed={seed}", "bfs", trials=4, results=str(res))
    for path in sorted((res / "trials").rglob("*.parquet")):
        pq.write_table(pq.read_table(path).drop_columns(["device_digest"]), path,
                       write_page_checksum=True)
    for path in sorted((res / "graphs").rglob("*.parquet")):
        table = pq.read_table(path)
        names = ["spec" if n == "graph_spec" else n for n in table.column_names]
        pq.write_table(table.rename_columns(names), path, write_page_checksum=True)
    code, out, err = run_cli(capsys, "query", "SELECT count(*) FROM graphs WHERE graph_spec "
                             "LIKE 'rmat:%'", "--results", str(res))
    assert code == 0 and "3" in out, err
    code, _, err = run_cli(capsys, "select", "train", "--results", str(res), "--algo", "bfs",
                           "--model", str(tmp_path / "model.json"))
    assert code == 0, err
    # rows of h100 without a device digest are the datasheet-era h100: said once (they had
    # been shown as today's calibrated h100 without a word)
    said = [line for line in err.splitlines() if "h100-datasheet" in line]
    assert len(said) == 1 and said[0].startswith("warpsweep: warning: rows of h100"), err
    code, _, err = run_cli(capsys, "select", "evaluate", "--results", str(res), "--algo",
                           "bfs")
    assert code == 0, err
    code, _, err = run_cli(capsys, "report", "--results", str(res), "--out",
                           str(tmp_path / "rep"))
    assert code == 0 and "Traceback" not in err, err
    assert "BinderException" not in (tmp_path / "rep" / "index.html").read_text()
    # beside a file of today's schema (an old directory tuned again): the old graph's
    # spec had read NULL there (review CR24)
    api.tune("rmat:scale=7,seed=4", "bfs", "a100", trials=2, results=str(res))
    code, out, err = run_cli(capsys, "query", "SELECT count(*) FROM graphs WHERE graph_spec "
                             "LIKE 'rmat:%'", "--results", str(res))
    assert code == 0 and "4" in out, err


def test_best_cli_table_and_json(results, capsys):
    code, out, _ = run_cli(capsys, "best", "--results", str(results))
    assert code == 0
    assert "[reference: vwarp w=32]" in out
    assert "  bfs on h100: mapping=vwarp w=8 chunk=4 (evaluated on all 2 graphs" in out
    code, out, _ = run_cli(capsys, "best", "--results", str(results), "--algo", "bfs", "--json")
    data = json.loads(out)
    assert [s["value"] for s in data["studies"]] == [20.0, 25.0]
    assert data["studies"][1]["fixed_config"]["text"] == "mapping=vwarp w=8 chunk=4"


def test_null_defaults_are_read_as_strategy_reads_them(tmp_path):
    """Rows whose knobs at their defaults are NULL (an older writer) are the same
    configurations as rows with every knob set, also where a default follows another knob
    (switch_to_data defaults to switch_to_topology)."""
    full = {"mapping": "thread", "block_size": 256, "driven": "temporal", "push": "atomic",
            "dedup": False, "variable_grid": True, "switch_to_topology": 0.5,
            "switch_to_data": 0.5, "switch_on": "vertices"}
    old = {"mapping": "thread", "driven": "temporal", "switch_to_topology": 0.5}
    check_manifest(tmp_path)
    store = ResultStore(ParquetDirBackend(tmp_path), flush_every_s=1e9)
    for key, graph_id, rows in (
            ("a.bfs.h100.vwarp.k", "ga", [("thread", THREAD, 100.0), (None, full, 10.0),
                                          (None, vwarp(8), 50.0)]),
            ("b.bfs.h100.vwarp.k", "gb", [("thread", THREAD, 90.0), (None, old, 30.0),
                                          (None, vwarp(8), 20.0)])):
        for i, (label, params, time_us) in enumerate(rows):
            store.add_trial(_record(key, graph_id, f"file:{graph_id}.mtx", "bfs", label, params,
                                    None if label else i, time_us=time_us, transactions=1.0))
    store.close()
    # Over each graph's best: thread (10, 4.5), temporal (1, 1.5), vwarp w=8 (5, 1).
    [fixed] = answers.best(connect(tmp_path)).fixed
    assert fixed.config.params == full and fixed.graphs == 2
    assert fixed.geomean_ratio == pytest.approx(math.sqrt(1.5))


def test_connect_reads_through_a_pyarrow_filesystem(results):
    """The branch for results in object storage: datasets through the location's filesystem."""
    remote = Location("remote://results", LocalFileSystem(), str(results), local=False)
    con = connect(remote)
    assert con.execute("SELECT count(*) FROM trials WHERE state = 'complete'").fetchone() == (16,)
    assert [b.value for b in answers.best(con, Filters(algo="bfs")).studies] == [20, 25]


# -- effect ---------------------------------------------------------------------------------
def test_effect_holds_the_other_knobs_at_the_best(con):
    result = answers.effect(con, "w", Filters(graph="g1", algo="bfs"))
    [study] = result.studies
    assert study.best_value == 8 and study.best_metric == 20.0
    got = [(p.value, p.metric, p.others) for p in study.points]
    assert got == [(4, 35.0, "at best"), (8, 20.0, "at best"),
                   (16, 30.0, "at best"),  # not chunk=8's 25: the other knobs as at the best
                   (32, 45.0, "best with this value"),  # chunk=16 beats the reference's 50
                   (None, 100.0, "best with this value")]
    assert study.points[3].config.params == vwarp(32, 16)
    assert study.points[0].vs_best == pytest.approx(35 / 20)
    assert [p.configurations for p in study.points] == [1, 2, 2, 2, 1]


def test_effect_refuses_an_unknown_knob(con, results, capsys):
    with pytest.raises(ConfigError, match=r"unknown knob 'warps'; knobs present: mapping, w, "
                                          r"chunk"):
        answers.effect(con, "warps")
    code, out, _ = run_cli(capsys, "effect", "param_chunk", "--results", str(results),
                           "--algo", "sssp")
    assert code == 0 and "best time_us 10 at chunk=1" in out


# -- pareto ---------------------------------------------------------------------------------
def test_pareto_front_on_known_points(con):
    result = answers.pareto(con, parse_objectives("time_us,transactions"),
                            Filters(graph="g1", algo="bfs"))
    [front] = result.studies
    assert [p.values for p in front.points] == [(20.0, 400.0), (30.0, 200.0), (45.0, 150.0),
                                                (50.0, 100.0)]
    assert front.study.complete == 8
    flipped = answers.pareto(con, parse_objectives("time_us,transactions:max"),
                             Filters(graph="g1", algo="bfs"))
    assert [p.values for p in flipped.studies[0].points] == [(20.0, 400.0), (25.0, 1000.0)]


def test_pareto_cli(results, capsys):
    code, out, _ = run_cli(capsys, "pareto", "--objectives", "time_us,transactions",
                           "--results", str(results), "--algo", "sssp", "--json")
    assert code == 0
    [study] = json.loads(out)["studies"]
    assert [(p["time_us"], p["transactions"]) for p in study["front"]] == [(10.0, 100.0),
                                                                           (12.0, 90.0)]


def test_objective_directions():
    assert Objective.parse("simd_efficiency").maximize
    # every efficiency is a share of useful work: larger is better (lane_efficiency had been
    # minimised, so best and pareto ranked the least efficient configuration first)
    for name in METRICS:
        if name.endswith("efficiency"):
            assert Objective.parse(name).maximize, name
    assert not Objective.parse("time_us").maximize
    assert not Objective.parse("meps:min").maximize
    assert Objective.parse("bytes:max").maximize
    with pytest.raises(ConfigError, match="direction"):
        Objective.parse("time_us:fast")
    with pytest.raises(ConfigError, match="named twice"):
        parse_objectives("time_us,time_us:max")


def test_non_dominated_matches_brute_force():
    rng = np.random.default_rng(7)
    for _ in range(200):
        n, k = int(rng.integers(1, 40)), int(rng.integers(1, 4))
        x = rng.integers(0, 4, (n, k)).astype(float)   # many ties
        group = rng.integers(0, 3, n)
        want = np.array([not any(np.all(x[j] <= x[i]) and np.any(x[j] < x[i])
                                 for j in range(n) if group[j] == group[i])
                         for i in range(n)])
        assert (pareto_mask(group, x) == want).all()


def test_answers_leave_the_connection_clean(con):
    before = sorted(r[0] for r in con.execute("SHOW TABLES").fetchall())
    assert {"graphs", "trials", "measured"} <= set(before)  # (and the measured rows' tables)
    answers.best(con)
    answers.effect(con, "w")
    answers.pareto(con, parse_objectives("time_us,transactions"))
    assert sorted(r[0] for r in con.execute("SHOW TABLES").fetchall()) == before


# -- a real run -----------------------------------------------------------------------------
def test_answers_on_a_real_tuning_run(tmp_path, capsys):
    res = str(tmp_path / "res")
    assert main(["tune", "--graph", "rmat:scale=8,seed=1", "--algo", "bfs", "--trials", "6",
                 "--results", res, "--workers", "0", "--sources", "1", "--no-progress",
                 "-q"]) == 0
    capsys.readouterr()
    con = connect(res)
    [best] = answers.best(con).studies
    lowest, thread = con.execute(
        "SELECT min(time_us), min(time_us) FILTER (WHERE label = 'thread') FROM trials "
        "WHERE state = 'complete'").fetchone()
    assert best.value == lowest and best.thread_value == thread
    assert best.vs_fixed == pytest.approx(1.0)  # one graph: the fixed one is its best
    [front] = answers.pareto(con, parse_objectives("time_us,transactions")).studies
    assert front.points[0].values[0] == lowest
    code, out, _ = run_cli(capsys, "effect", "w", "--results", res)
    assert code == 0 and "at best" in out


def test_an_algorithm_filter_no_study_can_hold_is_refused(tmp_path, capsys):
    """`best --algo BFS` had answered 'no complete evaluation', as if none were tuned yet."""
    check_manifest(tmp_path)
    with pytest.raises(SystemExit) as info:
        run_cli(capsys, "best", "--results", str(tmp_path), "--algo", "BFS")
    assert info.value.code == 2
    assert "invalid choice: 'BFS'" in capsys.readouterr().err


def test_best_compares_a_study_only_with_studies_of_its_sources(tmp_path):
    """Two studies of one graph, one averaging 4 sources and one the default source, time
    other runs: the best fixed configuration had been the one only the 1-source study tried,
    and the 4-source study shown "vs fixed 0.20x" against that study's value."""
    import dataclasses

    check_manifest(tmp_path)
    store = ResultStore(ParquetDirBackend(tmp_path), flush_every_s=1e9)
    for key, n_sources, rows in (
            ("ga.bfs.h100.vwarp.k4", 4, [("thread", THREAD, 100.0), (None, vwarp(8), 50.0)]),
            ("ga.bfs.h100.vwarp.k1", 1, [("thread", THREAD, 90.0), (None, vwarp(8), 60.0),
                                          (None, vwarp(32), 10.0)])):
        for i, (label, params, time_us) in enumerate(rows):
            store.add_trial(dataclasses.replace(
                _record(key, "ga", "file:ga.mtx", "bfs", label, params, None if label else i,
                        time_us=time_us), n_sources=n_sources))
    store.close()
    answer = answers.best(connect(tmp_path))
    [fixed] = answer.fixed
    assert fixed.config.params == vwarp(8)  # the one configuration both workloads tried
    by_key = {b.study.key: b for b in answer.studies}
    assert by_key["ga.bfs.h100.vwarp.k4"].fixed_value == pytest.approx(50.0)
    assert by_key["ga.bfs.h100.vwarp.k1"].fixed_value == pytest.approx(60.0)


def test_best_of_a_metric_whose_best_is_zero_says_why_there_is_no_ratio(tmp_path, capsys):
    """It had said no configuration was evaluated on every graph (one graph, every
    configuration evaluated): the ratios to a best of 0 are what is undefined."""
    from tuner import api

    api.tune("rmat:scale=7,seed=1", "bfs", trials=3, sources=1, results=str(tmp_path / "r"))
    code, out, _ = run_cli(capsys, "best", "--results", str(tmp_path / "r"), "--metric",
                           "atomics")
    assert code == 0 and "no ratio to the best: the best atomics is 0 on rmat7" in out
    assert "evaluated on every graph" not in out


def test_effect_shows_a_knob_set_to_none_as_unset(tmp_path, capsys):
    """"No deferring", a value the vwarp space draws, had been shown as "n/a" and said not to
    apply."""
    from tuner import api

    api.tune("rmat:scale=7,seed=1", "bfs", trials=4, sources=1, results=str(tmp_path / "r"))
    code, out, _ = run_cli(capsys, "effect", "defer_threshold", "--results",
                           str(tmp_path / "r"))
    assert code == 0 and "unset" in out and "n/a" not in out


def test_best_says_when_a_study_was_tuned_for_another_objective(tmp_path, capsys):
    """A study tuned for simd_efficiency:max had been shown its fastest row without a word."""
    from tuner import api

    res = str(tmp_path / "r")
    api.tune("rmat:scale=7,seed=1", "bfs", trials=3, sources=1, results=res)
    code, _, err = run_cli(capsys, "best", "--results", res)
    assert code == 0 and "another objective" not in err
    api.tune("rmat:scale=7,seed=1", "bfs", trials=3, sources=1, results=res,
             objective="simd_efficiency:max")
    code, _, err = run_cli(capsys, "best", "--results", res)
    assert code == 0 and "1 of these studies was tuned for another objective" in err
    assert "simd_efficiency:max" in err


def test_best_says_a_front_is_ranked_by_one_of_its_own_objectives(tmp_path, capsys):
    """A study of time_us,simd_efficiency:max ranked by time_us (or by simd_efficiency) had
    been called "tuned for another objective" (probe REP): both are its own."""
    from tuner import api

    res = str(tmp_path / "r")
    api.tune("rmat:scale=7,seed=1", "bfs", trials=3, sources=1, results=res,
             objective="time_us,simd_efficiency:max")
    for metric in ("time_us", "simd_efficiency"):
        code, _, err = run_cli(capsys, "best", "--results", res, "--metric", metric)
        assert code == 0 and "another objective" not in err
        assert ("1 of these studies was tuned for several objectives, one of them this one "
                "(time_us,simd_efficiency:max); their rows are their Pareto fronts' best by "
                f"{metric}") in err
    code, _, err = run_cli(capsys, "best", "--results", res, "--metric", "bytes")
    assert "1 of these studies was tuned for another objective" in err
