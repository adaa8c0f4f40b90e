"""The readers of a results directory (issue 41): `query` is read-only, `--results` paths are
taken literally, a damaged Parquet file is named in one line, bad `--top` / `--seed` refused."""

from __future__ import annotations

import shutil
from datetime import UTC
from datetime import datetime
from pathlib import Path

import pytest

from simulator.device import device_digest
from simulator.device import get_device
from tuner.cli import main
from tuner.results.damaged import DamagedResults
from tuner.results.query import connect
from tuner.results.records import TrialRecord
from tuner.results.schema import SCHEMA_VERSION
from tuner.results.store import ParquetDirBackend
from tuner.results.store import ResultStore
from tuner.results.store import check_manifest


def write_results(root: Path, graph: str, times: list[float]) -> Path:
    """A results directory of one study on ``graph``: a thread reference, then trials."""
    check_manifest(root)
    store = ResultStore(ParquetDirBackend(root), flush_every_s=1e9)
    gid = f"{graph}-id"
    store.add_graph({"graph_id": gid, "graph_spec": f"rmat:scale=8,seed={len(times)}",
                     "name": graph, "kind": "rmat", "n": 256, "m": 4096, "directed": False,
                     "weighted": False, "timestamp": datetime(2025, 1, 2, tzinfo=UTC),
                     "warpsweep_version": "test", "schema_version": SCHEMA_VERSION})
    for i, t in enumerate(times):
        label = "thread" if i == 0 else None
        params = ({"mapping": "thread"} if label else
                  {"mapping": "vwarp", "w": 2 ** i, "chunk": 1})
        store.add_trial(TrialRecord(
            study_key=f"{graph}.bfs.h100.vwarp.k", role="reference" if label else "trial",
            state="complete", graph_id=gid, graph_spec=f"rmat:scale=8,seed={len(times)}",
            algorithm="bfs", device="h100", space="vwarp", space_digest="d", sampler="tpe",
            objective="time_us", trial=None if label else i - 1, label=label, params=params,
            values=[t], metrics={"time_us": t, "transactions": 1000 / t}, sources=[0],
            seed=0, device_digest=device_digest(get_device("h100"))))
    store.close()
    return root


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    return write_results(tmp_path_factory.mktemp("safe") / "res", "g1", [100.0, 40.0, 20.0])


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


# -- read-only query ------------------------------------------------------------------------
@pytest.mark.parametrize("sql", [
    "COPY (SELECT * FROM trials) TO '{tmp}/out.csv'",
    "SELECT 1; COPY (SELECT 1) TO '{tmp}/out.csv'",
    "EXPLAIN ANALYZE COPY (SELECT 1) TO '{tmp}/out.csv'",
    "EXPORT DATABASE '{tmp}/out'",
    "ATTACH '{tmp}/out.db' AS other",
    "INSTALL httpfs",
    "LOAD httpfs",
    "SET enable_external_access = true",
    "PRAGMA enable_profiling",
    "SELECT * FROM read_text('/etc/passwd')",
    "SELECT * FROM read_csv('/etc/passwd')",
    "SELECT * FROM read_parquet('{other}/**/*.parquet')",
    "SELECT * FROM query('COPY (SELECT 1) TO ''{tmp}/out.csv''')",
])
def test_query_refuses_anything_but_reading_the_results(results, tmp_path, capsys, sql):
    other = write_results(tmp_path / "other", "g9", [1.0, 2.0])
    code, out, err = run_cli(capsys, "query", sql.format(tmp=tmp_path, other=other),
                             "--results", str(results))
    assert code == 2
    assert out == ""
    assert len(err.strip().splitlines()) == 1, err
    assert err.startswith("warpsweep: error: ")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other"]  # nothing written


def test_a_read_only_connection_still_reads_and_exports(results, tmp_path, capsys):
    con = connect(results)
    assert con.execute("SELECT current_setting('enable_external_access'), "
                       "current_setting('lock_configuration')").fetchone() == (False, True)
    code, out, _ = run_cli(capsys, "query", "DESCRIBE trials", "--results", str(results),
                           "--limit", "0")
    assert code == 0 and "time_us" in out
    code, _, _ = run_cli(capsys, "query", "EXPLAIN SELECT * FROM trials", "--results",
                         str(results))
    assert code == 0
    out_file = tmp_path / "rows.csv"
    code, _, _ = run_cli(capsys, "query", "SELECT time_us FROM trials ORDER BY 1", "--format",
                         "csv", "--out", str(out_file), "--results", str(results))
    assert code == 0
    assert out_file.read_text().split() == ["time_us", "20.0", "40.0", "100.0"]


# -- literal paths --------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["R[ab]", "R*", "R?", "r é ü 結果"])
def test_results_paths_are_taken_literally(tmp_path, capsys, name):
    # the directory a glob would match instead: Ra matches R[ab], R* and R?
    write_results(tmp_path / "Ra", "decoy", [5.0, 1.0])
    target = write_results(tmp_path / name, "real", [100.0, 40.0, 20.0])
    code, out, _ = run_cli(capsys, "query", "SELECT DISTINCT name FROM graphs", "--format",
                           "csv", "--results", str(target))
    assert code == 0 and out.split() == ["name", "real"]
    code, out, _ = run_cli(capsys, "query", "SELECT count(*) AS n, min(time_us) AS t FROM "
                           "trials", "--format", "csv", "--results", str(target))
    assert out.split() == ["n,t", "3,20.0"]
    code, out, _ = run_cli(capsys, "best", "--json", "--results", str(target))
    assert code == 0 and '"real"' in out and "decoy" not in out


# -- damaged files --------------------------------------------------------------------------
def _damaged_copy(results: Path, tmp_path: Path, how: str) -> tuple[Path, Path]:
    root = tmp_path / "damaged"
    shutil.copytree(results, root)
    (victim,) = sorted((root / "trials").rglob("part-*.parquet"))
    data = victim.read_bytes()
    if how == "empty":
        data = b""
    elif how == "truncated":
        data = data[: len(data) // 2]
    else:  # bytes of the first data pages overwritten, footer intact
        body = bytearray(data)
        for i in range(8, min(len(body) - 200, 1500)):
            body[i] = (body[i] * 7 + 13) % 256
        data = bytes(body)
    victim.write_bytes(data)
    return root, victim


@pytest.mark.parametrize("how", ["empty", "truncated", "body"])
@pytest.mark.parametrize("verb", [
    ("query", "SELECT * FROM trials"), ("best",), ("effect", "w"), ("pareto",),
    ("select", "adaptive"),
])
def test_a_damaged_file_is_named_in_one_line(results, tmp_path, capsys, how, verb):
    root, victim = _damaged_copy(results, tmp_path, how)
    code, out, err = run_cli(capsys, *verb, "--results", str(root))
    assert code == 2
    assert len(err.strip().splitlines()) == 1, err
    assert f"damaged results file {victim}" in err
    assert f"warpsweep check {root} --repair" in err


def test_report_names_a_damaged_file(results, tmp_path, capsys):
    root, victim = _damaged_copy(results, tmp_path, "body")
    code, _, err = run_cli(capsys, "report", "--no-selector", "--results", str(root), "--out",
                           str(tmp_path / "report"))
    assert code == 2 and f"damaged results file {victim}" in err


def test_connect_names_a_truncated_file(results, tmp_path):
    root, victim = _damaged_copy(results, tmp_path, "truncated")
    with pytest.raises(DamagedResults) as info:
        connect(root)
    assert info.value.path == str(victim)


# -- arguments ------------------------------------------------------------------------------
@pytest.mark.parametrize("argv, words", [
    (["tune", "--graph", "rmat:scale=6", "--top", "0"], "--top: must be >= 1, got 0"),
    (["tune", "--graph", "rmat:scale=6", "--seed", "-1"], "--seed: must be from 0 to"),
    (["tune", "--graph", "rmat:scale=6", "--seed", str(2**32)], "--seed: must be from 0 to"),
    (["tune", "--graph", "rmat:scale=6", "--seed", "x"], "--seed: must be an integer"),
    (["select", "evaluate", "--seed", "-1"], "--seed: must be from 0 to"),
])
def test_bad_top_and_seed_are_one_line_errors(capsys, argv, words):
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert words in err
    assert "Traceback" not in err
