"""Results that survive anything (issue 41): the Parquet rows are the record. A resumed study
whose journal lags the rows (truncated, deleted, an older copy) is rebuilt from them; no
(study, trial) key is written twice, no trial number carries two configurations, the budget
holds; `warpsweep check` finds damaged files and `--repair` sets them right."""

from __future__ import annotations

import collections
import functools
import json
from pathlib import Path

import pytest

from simulator.errors import ConfigError
from tuner import api
from tuner.cli import main
from tuner.results.location import Location
from tuner.results.store import ConflictError
from tuner.results.store import read_graphs
from tuner.results.store import read_trials

GRAPH = "rmat:scale=7,seed=3"
TRIALS = 12


def tune(results, trials=TRIALS, **kw):
    return api.tune(GRAPH, trials=trials, sources=1, results=str(results), sampler="random",
                    **kw)


def assert_sound(results, budget=TRIALS):
    """Nothing doubled, nothing conflicting, the budget respected."""
    rows = read_trials(str(results)).to_pylist()
    keys = collections.Counter((r["study_key"], r["role"], r["trial"] if r["role"] == "trial"
                                else r["label"]) for r in rows)
    assert [k for k, c in keys.items() if c > 1] == []
    trials = [r for r in rows if r["role"] == "trial"]
    numbers = sorted(r["trial"] for r in trials)
    assert numbers == sorted(set(numbers))
    configs = {json.dumps({k: v for k, v in r.items() if k.startswith("param_")},
                          sort_keys=True) for r in trials}
    assert len(configs) <= budget  # distinct configurations never exceed the budget
    return rows


def journal_of(results):
    (path,) = (Location.of(str(results)).journal_dir()).glob("*.journal")
    return path


def _repaired_whole_and_resumed(results, rows: int) -> None:
    """check names the damage, --repair writes every row back, and a resume runs clean."""
    assert main(["check", str(results)]) == 1
    assert main(["check", str(results), "--repair"]) == 0
    assert read_trials(str(results)).num_rows == rows
    assert main(["check", str(results)]) == 0
    tune(results, trials=8)
    assert_sound(results, budget=8)
    assert main(["check", str(results)]) == 0


def _tuned_with_rows_lost(tmp_path):
    """A 6-trial study whose trial files are gone (its journal ahead of the rows): the
    directory, the rows it held, its journal and the journal's lines."""
    results = tmp_path / "r"
    tune(results, trials=6)
    rows = read_trials(str(results)).num_rows
    for part in (results / "trials").rglob("part-*.parquet"):
        part.unlink()
    journal = journal_of(results)
    return results, rows, journal, journal.read_text().splitlines(keepends=True)


@pytest.mark.parametrize("damage", ["truncate", "delete", "empty"])
def test_a_journal_behind_its_rows_is_rebuilt_on_resume(tmp_path, damage, capsys):
    results = tmp_path / "r"
    first = tune(results)
    before = assert_sound(results)
    by_number = {r["trial"]: r for r in before if r["role"] == "trial"}
    path = journal_of(results)
    lines = path.read_bytes().splitlines(keepends=True)
    if damage == "truncate":  # cut at a line boundary, a third of the way in
        path.write_bytes(b"".join(lines[: len(lines) // 3]))
    elif damage == "delete":
        path.unlink()
    else:
        path.write_bytes(b"")
    again = tune(results)
    assert "journal was behind the results" in capsys.readouterr().err
    assert again.evaluations == 0  # nothing run again: the references neither
    assert again.studies[0].done == first.studies[0].done == TRIALS
    after = assert_sound(results)
    assert len(after) == len(before)
    # each trial number keeps its configuration
    for r in after:
        if r["role"] == "trial":
            assert {k: v for k, v in r.items() if k.startswith("param_")} == {
                k: v for k, v in by_number[r["trial"]].items() if k.startswith("param_")}
    more = tune(results, trials=TRIALS + 4)  # and it goes on from there, numbers in order
    assert more.studies[0].done == TRIALS + 4
    rows = assert_sound(results, TRIALS + 4)
    assert max(r["trial"] for r in rows if r["role"] == "trial") >= TRIALS + 3


SPACE_WITH_DEFAULTS = """name: defaults
params:
  mapping: {choices: [vwarp]}
  w: {choices: WIDTHS}
  precheck: {choices: [true, false]}
  changed_flag: {choices: [step, warp]}
"""


@pytest.mark.parametrize("widths", ["[null, 4, 8]", "[4, 8]"])
def test_a_rebuilt_journal_holds_what_each_row_ran_where_a_row_drops_defaults(tmp_path,
                                                                             capsys, widths):
    """A row holds its configuration as the strategy does (``precheck=true`` unset, an unset
    ``w`` as 32): the rebuild had drawn the dropped knobs afresh (trial 0's precheck true
    told as false, a wrong configuration beside its time) and refused ``w=32`` as outside a
    space offering null, for good."""
    import optuna
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    from simulator import Strategy

    space = tmp_path / "defaults.yaml"
    space.write_text(SPACE_WITH_DEFAULTS.replace("WIDTHS", widths))
    results = tmp_path / "r"

    def run(trials):
        return api.tune("rmat:scale=7,seed=1,weights=random", "sssp", space=space,
                        trials=trials, sources=1, results=str(results), sampler="random")

    run(8)
    journal_of(results).unlink()
    run(10)
    assert "journal was behind the results" in capsys.readouterr().err
    rows = {r["trial"]: r for r in assert_sound(results, 10) if r["role"] == "trial"}
    storage = JournalStorage(JournalFileBackend(str(journal_of(results))))
    trials = optuna.load_study(study_name=None, storage=storage).get_trials()
    assert {t.number for t in trials} == set(rows)
    for t in trials:
        drawn = Strategy.from_params(t.params)
        row = Strategy.from_params({k[6:]: v for k, v in rows[t.number].items()
                                    if k.startswith("param_") and v is not None})
        assert drawn == row, t.number


def test_a_journal_is_rebuilt_where_a_failed_rows_configuration_left_a_knob_unset(
        tmp_path, capsys):
    """An invalid configuration is told by its text, where a row holds an unset knob as
    absent and the drawn configuration as null: the rebuild had refused its own study's
    failed row, for good (probe CR4)."""
    space = tmp_path / "nulls.yaml"
    space.write_text("name: nulls\nparams:\n  mapping: {choices: [thread, vwarp]}\n"
                     "  donate_threshold: {choices: [null, 4]}\n"
                     "  defer_threshold: {choices: [null, 64]}\n")
    results = tmp_path / "r"

    def run(trials):
        return api.tune(GRAPH, space=space, trials=trials, sources=1, results=str(results),
                        sampler="grid")

    first = run(8)
    assert first.studies[0].failed  # some combination is refused by the simulator
    journal_of(results).unlink()
    again = run(8)
    assert "journal was behind the results" in capsys.readouterr().err
    assert again.evaluations == 0 and again.studies[0].done == first.studies[0].done
    assert_sound(results, 8)


def test_rows_that_conflict_are_refused_loudly(tmp_path, capsys):
    import pyarrow.parquet as pq

    results = tmp_path / "r"
    tune(results)
    (f,) = [p for p in (results / "trials").rglob("part-*.parquet")]
    table = pq.read_table(f)
    rows = table.to_pylist()
    twin = dict(next(r for r in rows if r["role"] == "trial" and r["state"] == "complete"))
    twin["values"] = [v + 1.0 for v in twin["values"]]
    twin["time_us"] = twin["values"][0]  # another evaluation's row, consistent in itself
    import pyarrow as pa

    pq.write_table(pa.Table.from_pylist([twin], schema=table.schema),
                   f.with_name("part-extra.parquet"))
    code = main(["tune", "--graph", GRAPH, "--trials", str(TRIALS), "--sources", "1",
                 "--sampler", "random", "--results", str(results), "--workers", "0"])
    err = capsys.readouterr().err
    assert code != 0
    assert "two different rows" in err and "warpsweep check" in err


# -- crash injection: the driver killed (os._exit, no cleanup) at every write point ------------

DRIVER = r'''
import os, sys
import tuner.tuning.plan as plan
from tuner import api
from tuner.results import journal
from tuner.results import location

point, n = sys.argv[1], int(sys.argv[2])
seen = [0]

def hit(tag):
    if tag == point:
        seen[0] += 1
        if seen[0] == n:
            os._exit(9)  # a kill: no flush, no close, no upload

write_bytes = location.Location.write_bytes

def patched_write(self, path, data):
    tag = ("journal-upload" if "/studies/" in path
           else "parquet" if path.endswith(".parquet") else "other")
    hit(tag + "-before")
    write_bytes(self, path, data)
    hit(tag + "-after")

append_logs = journal.DriverJournal.append_logs

def patched_append(self, logs):
    append_logs(self, logs)
    hit("journal")

location.Location.write_bytes = patched_write
journal.DriverJournal.append_logs = patched_append
run_studies = plan.run_studies
plan.run_studies = lambda *a, **kw: run_studies(*a, **{**kw, "flush_every_s": 0.0})
api.run_studies = plan.run_studies
api.tune(sys.argv[3], trials=int(sys.argv[4]), sources=1, results=sys.argv[5],
         sampler="random")
'''


def crash(tmp_path, results, point, n, env=None):
    import os
    import subprocess
    import sys

    script = tmp_path / "driver.py"
    script.write_text(DRIVER)
    proc = subprocess.run([sys.executable, str(script), point, str(n), GRAPH, str(TRIALS),
                           str(results)], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})})
    assert proc.returncode == 9, (point, n, proc.returncode, proc.stderr[-2000:])


def row_keys(results):
    try:
        rows = read_trials(str(results)).to_pylist()
    except Exception:  # noqa: BLE001 - nothing written yet
        return {}
    return {(r["role"], r["trial"], r["label"]): (r["state"], r["values"]) for r in rows}


def resume_and_check(results, before):
    again = tune(results)
    assert again.studies[0].done == TRIALS
    rows = assert_sound(results)
    after = {(r["role"], r["trial"], r["label"]): (r["state"], r["values"]) for r in rows}
    assert before.items() <= after.items()  # nothing the crash left was lost or changed
    distinct = {json.dumps({k: v for k, v in r.items() if k.startswith("param_")},
                           sort_keys=True) for r in rows
                if r["role"] == "trial"}
    assert len(distinct) == TRIALS  # the budget (distinct configurations tried), exactly
    assert {r["label"] for r in rows if r["role"] == "reference"} == {
        "thread", *(f"vwarp w={w}" for w in (1, 2, 4, 8, 16, 32))}
    assert tune(results).evaluations == 0  # and a third run finds it all done
    assert read_graphs(str(results)).num_rows == 1


@pytest.mark.parametrize(("point", "n"), [
    ("parquet-before", 1), ("parquet-after", 1), ("parquet-after", 9),
    ("journal", 12), ("journal", 70),
])
def test_killed_at_a_write_point_resumes_with_nothing_lost_or_doubled(tmp_path, point, n):
    results = tmp_path / "r"
    crash(tmp_path, results, point, n)
    resume_and_check(results, row_keys(results))




@pytest.mark.parametrize(("point", "n", "head"), [
    ("parquet-after", 2, "b"),  # rows PUT, journal never uploaded; another head resumes
    ("parquet-after", 8, "b"),
    ("parquet-after", 14, "b"),
    ("journal-upload-after", 9, "b"),
    ("parquet-before", 3, "a"),
    ("journal", 40, "a"),
])
def test_killed_writing_to_a_bucket_resumes_from_any_head(tmp_path, monkeypatch, bucket_uri,
                                                          point, n, head):
    monkeypatch.setenv("WARPSWEEP_JOURNAL_DIR", str(tmp_path / "head-a"))
    crash(tmp_path, bucket_uri, point, n)
    monkeypatch.setenv("WARPSWEEP_JOURNAL_DIR", str(tmp_path / f"head-{head}"))
    resume_and_check(bucket_uri, row_keys(bucket_uri))


def test_two_writers_of_one_graph_leave_one_graph_row(tmp_path):
    from datetime import UTC
    from datetime import datetime

    from tuner.results.store import ResultStore

    results = str(tmp_path / "r")
    one, two = ResultStore.open(results), ResultStore.open(results)
    assert one.graph_ids() == two.graph_ids() == set()  # both read before either wrote
    for store in (one, two):
        store.add_graph({"graph_id": "g-1", "graph_spec": "rmat:scale=7", "name": "g",
                         "kind": "rmat", "n": 128, "m": 1024, "directed": False,
                         "weighted": False, "timestamp": datetime.now(UTC)})
        store.flush()
    assert read_graphs(results).column("graph_id").to_pylist() == ["g-1"]


# -- warpsweep check [--repair] ----------------------------------------------------------------

def check(results, *more):
    return main(["check", str(results), *more])


@pytest.mark.parametrize("damage", ["truncate", "empty", "body"])
def test_check_finds_a_damaged_parquet_file_and_repair_sets_it_aside(tmp_path, damage,
                                                                     capsys):
    results = tmp_path / "r"
    tune(results)
    assert check(results) == 0
    capsys.readouterr()
    count = read_trials(str(results)).num_rows
    victim = max((results / "trials").rglob("part-*.parquet"), key=lambda p: p.stat().st_size)
    data = victim.read_bytes()
    if damage == "truncate":
        victim.write_bytes(data[: len(data) // 2])
    elif damage == "empty":
        victim.write_bytes(b"")
    else:  # random bytes in the body: the footer still reads
        import random

        at = len(data) // 3
        noise = random.Random(1).randbytes(48)
        victim.write_bytes(data[:at] + noise + data[at + len(noise):])
    assert check(results) == 1
    out = capsys.readouterr().out.strip().splitlines()
    assert out[0].startswith(str(victim) + ": ")  # one line per problem, naming the file
    assert len(out) == 2 and "recorded result(s) missing from the rows" in out[1]
    assert check(results, "--repair") == 0
    assert "moved to" in capsys.readouterr().out
    assert list((results / "quarantine").rglob(victim.name + ".*"))  # set aside
    # (its rows, rewritten from the journal, land in a file of the same name: named by keys)
    assert check(results) == 0
    assert read_trials(str(results)).num_rows == count  # its rows rewritten from the journal
    assert_sound(results)


def test_rows_rebuilt_from_the_journal_keep_the_commit_that_made_them(tmp_path, capsys,
                                                                    monkeypatch):
    """Rows `check --repair` wrote from the journal had been stamped with the repairing
    checkout's commit and version, not those of the run that computed them."""
    import tuner.results.records as records

    results = tmp_path / "r"
    tune(results)
    made = set(read_trials(str(results)).column("git_commit").to_pylist())
    for victim in (results / "trials").rglob("part-*.parquet"):
        victim.write_bytes(b"")
    monkeypatch.setattr(records, "git_commit", lambda: "f00dcafe0000-dirty")
    monkeypatch.setattr(records, "warpsweep_version", lambda: "9.9.9")
    assert check(results, "--repair") == 0
    rows = read_trials(str(results))
    assert set(rows.column("git_commit").to_pylist()) == made
    assert "9.9.9" not in rows.column("warpsweep_version").to_pylist()
    assert check(results) == 0


def _age_journal(results):
    """Rewrite the study's journal as a warpsweep older than the model digest and the
    records' provenance wrote it: no ``model`` attribute, records without version, commit or
    model digest."""
    import json

    path = journal_of(results)
    lines = []
    for line in path.read_text().splitlines():
        op = json.loads(line)
        attrs = op.get("user_attr", {})
        if "model" in attrs:
            continue
        record = attrs.get("record")
        if isinstance(record, dict):
            for key in ("warpsweep_version", "git_commit", "model_digest"):
                record.pop(key, None)
        for value in attrs.values():  # references: ref:<label> -> record
            if isinstance(value, dict) and "metrics" in value:
                for key in ("warpsweep_version", "git_commit", "model_digest"):
                    value.pop(key, None)
        lines.append(json.dumps(op, separators=(",", ":")))
    path.write_text("\n".join(lines) + "\n")


def test_rows_rebuilt_from_records_older_than_their_provenance_are_not_stamped(tmp_path,
                                                                              capsys):
    """`check --repair` rewriting rows from a journal an older warpsweep wrote (its records
    without version or commit) had stamped them with the repairing checkout's commit and
    version: rows claiming a version that never computed them (probe COMPAT). Unknown is
    null, as the schema says."""
    from tuner.env import git_commit

    results = tmp_path / "r"
    tune(results, trials=4)
    _age_journal(results)
    for victim in (results / "trials").rglob("part-*.parquet"):
        victim.write_bytes(b"")
    assert check(results, "--repair") == 0
    rows = read_trials(str(results))
    assert rows.num_rows > 0
    assert set(rows.column("git_commit").to_pylist()) == {None} != {git_commit()}
    assert set(rows.column("warpsweep_version").to_pylist()) == {None}


def test_a_study_begun_before_the_model_digest_is_refused_not_adopted(tmp_path, capsys):
    """A study of a warpsweep older than the model digest (its journal and rows record no
    cost model) had been resumed under the current model with exit 0, both models' trials
    ranked as one study (probe COMPAT, high). Refused now, journal kept or lost, nothing
    written; `check` names a study whose rows hold unrecorded and recorded models."""
    from simulator.errors import ConfigError

    results = tmp_path / "r"
    tune(results, trials=4)
    count = read_trials(str(results)).num_rows
    _age_journal(results)
    with pytest.raises(ConfigError, match=r"begun by an older warpsweep.*did not record its "
                                          r"cost model"):
        tune(results, trials=8)
    assert read_trials(str(results)).num_rows == count

    _set_model_digest(results, None)
    journal_of(results).unlink()  # rebuilt from the rows, which record none either
    with pytest.raises(ConfigError, match=r"did not record its cost model"):
        tune(results, trials=8)
    assert read_trials(str(results)).num_rows == count


def test_a_study_whose_rows_record_no_model_is_refused_whatever_its_journal_says(tmp_path,
                                                                                 capsys):
    """A resume by the code before this check stamped an older study's journal with its own
    model: the rows record none, the journal one. It had been resumed with exit 0, two
    models' trials ranked as one, and `check` had passed it (review CR24)."""
    from simulator.errors import ConfigError

    results = tmp_path / "r"
    tune(results, trials=4)
    count = read_trials(str(results)).num_rows
    _set_model_digest(results, None)
    capsys.readouterr()
    assert main(["check", str(results)]) == 1
    assert "unrecorded (rows older than the model digest)" in capsys.readouterr().out
    with pytest.raises(ConfigError, match=r"did not record its cost model"):
        tune(results, trials=8)
    assert read_trials(str(results)).num_rows == count


def test_check_names_a_study_with_rows_of_an_unrecorded_model(tmp_path, capsys):
    results = tmp_path / "r"
    tune(results, trials=6)
    tune(results, trials=10)  # a second flush: a second trial file
    _set_model_digest(results, None, files=1)
    capsys.readouterr()
    assert main(["check", str(results)]) == 1
    out = capsys.readouterr().out
    assert "unrecorded (rows older than the model digest)" in out
    assert "computed under 2 cost model(s)" in out


def test_check_finds_doubled_rows_and_a_lagging_journal_and_repairs_them(tmp_path, capsys):
    import pyarrow as pa
    import pyarrow.parquet as pq

    results = tmp_path / "r"
    tune(results)
    count = read_trials(str(results)).num_rows
    f = next((results / "trials").rglob("part-*.parquet"))
    table = pq.read_table(f)
    pq.write_table(table.slice(0, 2), f.with_name("part-copy.parquet"))  # same rows again
    other = table.slice(2, 1).to_pydict()  # a row again with another time: not "the same"
    other["time_us"] = [2 * other["time_us"][0]]
    other["values"] = [[other["time_us"][0]]]  # (its objective value is its time)
    pq.write_table(pa.table(other, schema=table.schema), f.with_name("part-zz.parquet"))
    graphs = next((results / "graphs").rglob("part-*.parquet"))
    pq.write_table(pq.read_table(graphs), graphs.with_name("part-copy.parquet"))
    journal = journal_of(results)
    lines = journal.read_bytes().splitlines(keepends=True)
    journal.write_bytes(b"".join(lines[: len(lines) // 2]))
    assert check(results) == 1
    out = capsys.readouterr().out
    assert out.count("has 2 rows (same content)") == 3  # two trial rows and the graph's
    assert out.count("has 2 rows with different content") == 1
    assert "behind the rows (7: trial" in out
    assert check(results, "--repair") == 0
    capsys.readouterr()
    assert check(results) == 0
    assert len(assert_sound(results)) == count  # the copies gone, nothing else
    assert read_graphs(str(results)).num_rows == 1
    again = tune(results)  # the next run rebuilds the journal from the rows
    assert again.evaluations == 0 and again.studies[0].done == TRIALS
    assert check(results) == 0


def test_a_graph_row_set_aside_is_written_again_by_the_repair(tmp_path):
    """check --repair quarantines a damaged graphs file, and writes the graph's row again
    from its spec (it had been flagged until the next run of the study wrote it)."""
    import pyarrow.parquet as pq

    from tuner.cli import main
    from tuner.cli.check import check

    results = tmp_path / "r"
    args = ["tune", "--graph", "rmat:scale=7,seed=2", "--algo", "bfs", "--trials", "3",
            "--workers", "0", "--results", str(results), "-q"]
    assert main(args) == 0
    (graph_file,) = (results / "graphs").rglob("*.parquet")
    data = bytearray(graph_file.read_bytes())
    data[len(data) // 2:len(data) // 2 + 48] = bytes(48)
    graph_file.write_bytes(data)
    report = check(str(results), repair=True)
    assert any("quarantine" in line for line in report.repaired)
    assert any("no row for graph rmat7" in line and "wrote it" in line
               for line in report.repaired) and report.problems == []
    assert check(str(results)).problems == []
    assert main(args) == 0  # nothing left to run, nor a second graph row
    rows = pq.read_table(results / "graphs").num_rows
    assert rows == 1


# --------------------------------------------------------------------------- round 2


def test_a_resumed_random_study_draws_new_configurations(tmp_path):
    """A seeded sampler resumed as on its first run drew the first run's configurations again;
    past 50 of them in a row the study 'ended early' and could never grow (round 2)."""
    results = tmp_path / "r"
    for budget in (5, 60, 70):
        summary = tune(results, trials=budget, seed=7).studies[0]
        assert summary.done == budget and not summary.exhausted
    assert_sound(results, budget=70)


def test_n_sources_records_the_sources_averaged(tmp_path):
    """--sources beyond the graph's vertices with edges averages over fewer: the rows and the
    summary say how many, not how many were asked (round 2)."""
    result = api.tune("rmat:scale=1", trials=2, sources=50, results=str(tmp_path / "r"),
                      sampler="random")
    rows = read_trials(str(tmp_path / "r")).to_pylist()
    assert {r["n_sources"] for r in rows} == {len(rows[0]["sources"])} != {50}
    assert result.to_json()["studies"][0]["sources"] == len(rows[0]["sources"])


def test_bytes_damaged_in_a_page_are_an_error_never_wrong_values(tmp_path):
    """Snappy carries no checksum: a flipped byte in a page's data can decode to other values.
    The store writes page checksums and verifies them on every scan, so a copy damaged
    anywhere before the footer either fails to read or reads back exactly. (The footer has no
    checksum: damage there can change a column's type, which `check` compares with the
    schema, or a row count, which nothing catches.)"""
    import numpy as np
    import pyarrow as pa

    from tuner.results.store import ParquetDirBackend

    backend = ParquetDirBackend(tmp_path)
    table = pa.table({"graph_id": [f"g{i}" for i in range(500)],
                      "n": np.arange(500, dtype=np.int64) * 7919,
                      "m": np.arange(500, dtype=np.int64) * 31})
    backend.append("graphs", {"kind": "rmat"}, table, name="part-g.parquet")
    (path,) = (tmp_path / "graphs").rglob("part-g.parquet")
    clean = path.read_bytes()
    expected = backend.scan("graphs", ["graph_id", "n"])
    silent = 0
    footer = int.from_bytes(clean[-8:-4], "little") + 8
    for offset in range(4, len(clean) - footer, 3):
        damaged = bytearray(clean)
        damaged[offset] ^= 0x5A
        path.write_bytes(bytes(damaged))
        try:
            got = backend.scan("graphs", ["graph_id", "n"])
        except (OSError, pa.ArrowException):
            continue
        silent += not got.equals(expected)
    assert silent == 0


@pytest.mark.parametrize("mtime_shift", [1, 0])
def test_query_refuses_a_file_whose_page_was_damaged_not_read_wrong(tmp_path, monkeypatch,
                                                                     capsys, mtime_shift):
    """DuckDB does not check page checksums: `query` verifies each file once (kept in a cache
    outside the results) and names a damaged one, where DuckDB alone reads other values; also
    when the damage keeps the file's size and modification time (``mtime_shift`` 0), which
    the cache had taken for the file it verified."""
    import pyarrow.parquet as pq

    from tuner.cli import main

    monkeypatch.setenv("WARPSWEEP_VERIFIED_CACHE", str(tmp_path / "verified"))
    results = tmp_path / "r"
    assert main(["tune", "--graph", "rmat:scale=7,seed=3", "--algo", "bfs", "--trials", "3",
                 "--workers", "0", "--results", str(results), "-q"]) == 0
    sql = "SELECT sum(time_us) AS s FROM trials"
    assert main(["query", "--results", str(results), "--format", "csv", sql]) == 0
    clean = capsys.readouterr().out
    (path,) = (results / "trials").rglob("*.parquet")
    data = path.read_bytes()
    mtime = path.stat().st_mtime_ns
    footer = int.from_bytes(data[-8:-4], "little") + 8
    md = pq.read_metadata(path)
    col = next(md.row_group(0).column(i) for i in range(md.num_columns)
               if md.row_group(0).column(i).path_in_schema == "time_us")
    damaged = bytearray(data)
    at = col.data_page_offset + col.total_compressed_size - 3  # inside its last page's data
    assert at < len(data) - footer
    damaged[at] ^= 0x5A
    path.write_bytes(bytes(damaged))
    import os

    os.utime(path, ns=(os.stat(path).st_atime_ns, mtime + mtime_shift))
    assert main(["query", "--results", str(results), "--format", "csv", sql]) == 2
    err = capsys.readouterr().err
    assert f"damaged results file {path}" in err and clean


def test_a_file_written_by_a_newer_results_schema_is_refused_by_readers_and_check(
        tmp_path, monkeypatch, capsys):
    """A rows file copied in from a newer warpsweep (its footer records a later results schema
    version) may mean other things by its columns: query and check name it, never read it."""
    import pyarrow.parquet as pq

    from tuner.results.schema import SCHEMA_VERSION

    monkeypatch.setenv("WARPSWEEP_VERIFIED_CACHE", str(tmp_path / "verified"))
    results = tmp_path / "r"
    tune(results, trials=3)
    sql = "SELECT count(*) AS c FROM trials"
    assert main(["query", "--results", str(results), "--format", "csv", sql]) == 0
    capsys.readouterr()
    (path,) = list((results / "trials").rglob("*.parquet"))[:1]
    table = pq.read_table(path)
    newer = {b"warpsweep.schema_version": str(SCHEMA_VERSION + 1).encode()}
    pq.write_table(table.replace_schema_metadata(newer), path)
    assert main(["query", "--results", str(results), "--format", "csv", sql]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and f"schema version {SCHEMA_VERSION + 1}, newer" in err
    assert check(results) == 1
    assert f"schema version {SCHEMA_VERSION + 1}, newer" in capsys.readouterr().out


@pytest.mark.parametrize("bad,alone", [(float("nan"), False), (float("inf"), False),
                                       (0.0, False), (-5.0, False), (1.0, True),
                                       (None, True)])
def test_a_complete_row_with_an_impossible_time_is_refused_not_ranked(tmp_path, monkeypatch,
                                                                      capsys, bad, alone):
    """A row edited (or copied in) with a time no simulation gives, the file otherwise sound
    (schema, footer metadata, page checksums): NaN had been skipped and 0 or -5 ranked best
    by `best`, `check` had found no problem, and a resumed `tune` had adopted it. Now the
    readers and the resume refuse it naming it, `check` names its file, `--repair` sets it
    aside and the next run writes its rows again from the journal. ``alone``: a plausible
    time edited, its objective value left: the one figure, stored twice, differs (probe RES:
    `best` had ranked it first, "606x vs thread"); a null time (readers had dropped the
    row, the study's best among them, probe SELECT)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    monkeypatch.setenv("WARPSWEEP_VERIFIED_CACHE", str(tmp_path / "verified"))
    results = tmp_path / "r"
    tune(results)
    best = ["best", "--results", str(results)]
    assert main(best) == 0
    clean = capsys.readouterr().out
    (path,) = [p for p in (results / "trials").rglob("*.parquet")
               if "trial" in pq.read_table(p).column("role").to_pylist()][:1]
    table = pq.read_table(path)
    rows = table.to_pydict()
    at = rows["role"].index("trial")
    kept = rows["values"][at][0]
    rows["time_us"][at] = bad
    if not alone:
        rows["values"][at] = [bad]
    edited = pa.table(rows, schema=table.schema).replace_schema_metadata(table.schema.metadata)
    pq.write_table(edited, path, write_page_checksum=True)
    assert main(best) == 2
    err = capsys.readouterr().err
    assert f"damaged results file {path}" in err and f"time_us {bad}" in err
    if alone and bad is not None:
        assert f"time_us 1.0, where its objective value 1 (time_us) is {kept}" in err
    from tuner.results.damaged import DamagedResults
    from tuner.results.store import ConflictError

    with pytest.raises(DamagedResults, match=f"time_us {bad}"):  # it had read it in (S3)
        api.load_results(str(results))

    with pytest.raises(ConflictError, match=f"is complete with time_us {bad}"):
        tune(results)  # resumed on, it would have been the study's best
    assert check(results) == 1
    assert f"{path}: rows: study" in capsys.readouterr().out
    assert check(results, "--repair") == 0
    tune(results)
    capsys.readouterr()
    assert main(best) == 0
    assert capsys.readouterr().out == clean
    assert_sound(results)


def test_a_trials_file_without_its_time_column_is_refused(tmp_path, monkeypatch, capsys):
    """Complete rows in a file with no time_us column: `best` had left the study out with a
    note and `check` had found no problem (probe SELECT)."""
    import pyarrow.parquet as pq

    monkeypatch.setenv("WARPSWEEP_VERIFIED_CACHE", str(tmp_path / "verified"))
    results = tmp_path / "r"
    tune(results)
    path = next(p for p in (results / "trials").rglob("*.parquet")
                if "complete" in pq.read_table(p).column("state").to_pylist())
    table = pq.read_table(path)
    pq.write_table(table.drop_columns(["time_us"]), path, write_page_checksum=True)
    assert main(["best", "--results", str(results)]) == 2
    err = capsys.readouterr().err
    assert f"damaged results file {path}" in err and "(the file has no time_us column)" in err
    assert check(results) == 1


@pytest.mark.parametrize("column", ["param_mapping", "param_w", "graph_id", "objective"])
def test_a_trials_file_without_a_column_every_writer_writes_is_refused(tmp_path, monkeypatch,
                                                                       capsys, column):
    """Read as nulls: a missing knob column had made `vwarp w=8` read as w=32 in `best` and
    `effect`, exit 0; a missing graph_id or objective, a traceback (probe QUERY)."""
    import pyarrow.parquet as pq

    monkeypatch.setenv("WARPSWEEP_VERIFIED_CACHE", str(tmp_path / "verified"))
    results = tmp_path / "r"
    tune(results)
    path = next((results / "trials").rglob("*.parquet"))
    pq.write_table(pq.read_table(path).drop_columns([column]), path, write_page_checksum=True)
    assert main(["best", "--results", str(results)]) == 2
    err = capsys.readouterr().err
    assert f"damaged results file {path}" in err and f"no column {column}" in err


@pytest.mark.parametrize("column,value", [("state", "COMPLETE"), ("role", "baseline")])
def test_a_state_or_role_no_writer_gives_is_refused(tmp_path, monkeypatch, capsys, column,
                                                    value):
    """A study whose rows read `COMPLETE` had vanished from `best`, exit 0 (probe QUERY)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    monkeypatch.setenv("WARPSWEEP_VERIFIED_CACHE", str(tmp_path / "verified"))
    results = tmp_path / "r"
    tune(results)
    path = next((results / "trials").rglob("*.parquet"))
    table = pq.read_table(path)
    table = table.set_column(table.schema.get_field_index(column), column,
                             pa.array([value] * table.num_rows))
    pq.write_table(table, path, write_page_checksum=True)
    assert main(["best", "--results", str(results)]) == 2
    err = capsys.readouterr().err
    assert f"damaged results file {path}: {column} {value!r}, which no writer gives" in err


@pytest.mark.parametrize("where", ["trials/part-x.parquet",
                                   "trials/algorithm=bfs/device=h100/sub/part-x.parquet",
                                   "trials/device=h100/algorithm=bfs/part-x.parquet"])
def test_a_rows_file_out_of_its_partition_is_refused_in_one_line(tmp_path, monkeypatch,
                                                                 capsys, where):
    """DuckDB had refused one at another depth with a traceback from every reader, and read
    one a level deeper as rows while `check` called it misplaced (probe QUERY)."""
    monkeypatch.setenv("WARPSWEEP_VERIFIED_CACHE", str(tmp_path / "verified"))
    results = tmp_path / "r"
    tune(results)
    path = next((results / "trials").rglob("*.parquet"))
    moved = results / where
    moved.parent.mkdir(parents=True, exist_ok=True)
    path.rename(moved)
    assert main(["best", "--results", str(results)]) == 2
    err = capsys.readouterr().err
    assert f"damaged results file {moved}: not under algorithm=.../device=..." in err
    # nor does a resume count its rows as done (review CR15)
    from tuner.results.damaged import DamagedResults

    with pytest.raises(DamagedResults, match="not under algorithm="):
        tune(results)


def test_repair_sets_aside_another_runs_rows_past_the_journal_too(tmp_path, capsys):
    """Another run's rows copied in: some contradict the journal, one is past its last trial.
    --repair kept the journal's rows, then set the journal aside as behind the rows; the
    study kept a configuration past its budget and check called it clean (probe RESUME)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    results = tmp_path / "r"
    tune(results)
    path = next(p for p in (results / "trials").rglob("part-*.parquet")
                if "trial" in pq.read_table(p).column("role").to_pylist())
    rows = [r for r in pq.read_table(path).to_pylist() if r["role"] == "trial"]
    last = max(r["trial"] for r in rows)
    other = []
    for r in rows[:2]:  # the other run's results of the same trial numbers
        t = r["time_us"] * 1.5
        other.append({**r, "time_us": t, "values": [t]})
    other.append({**other[0], "trial": last + 1})  # and a trial past the journal's last
    table = pa.Table.from_pylist(other, schema=pq.read_table(path).schema)
    pq.write_table(table, path.with_name("part-tother.parquet"), write_page_checksum=True)
    assert check(results, "--repair") == 0
    assert "moved the rows it lacks (trial" in capsys.readouterr().out
    assert check(results) == 0
    trials = {r["trial"] for r in read_trials(str(results)).to_pylist()
              if r["role"] == "trial"}
    assert max(trials) == last


def merged_with_a_resumed_run(tmp_path):
    """A study's results (10 trials, TPE) with another run's (random, 12 trials, resumed to
    20: two files) copied in."""
    import shutil

    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    api.tune(GRAPH, trials=10, sources=1, results=str(ours), sampler="tpe")
    api.tune(GRAPH, trials=12, sources=1, results=str(theirs), sampler="random")
    api.tune(GRAPH, trials=20, sources=1, results=str(theirs), sampler="random")
    mine = {p.name for p in (ours / "trials").rglob("part-*.parquet")}
    copied = [p for p in (theirs / "trials").rglob("part-*.parquet") if p.name not in mine]
    assert len(copied) == 2
    for p in copied:
        shutil.copy(p, ours / p.relative_to(theirs))
    return ours


def test_repair_sets_aside_another_runs_rows_in_every_file_of_that_run(tmp_path, capsys):
    """Another run of the study (another sampler), resumed once, copied in: its rows past the
    journal lie in two files, only one of which contradicts the journal. The rows of the
    other file had been kept, the journal set aside for them, and the study had held one
    configuration twice (probe CR18)."""
    ours = merged_with_a_resumed_run(tmp_path)
    journal = journal_of(ours).read_bytes()
    assert check(ours, "--repair") == 0
    assert "moved the rows it lacks (trial 10, trial 11, trial 12" in capsys.readouterr().out
    assert journal_of(ours).read_bytes() == journal  # the journal kept
    assert check(ours) == 0
    numbers = sorted(r["trial"] for r in read_trials(str(ours)).to_pylist()
                     if r["role"] == "trial")
    assert numbers == list(range(10))
    api.tune(GRAPH, trials=20, sources=1, results=str(ours), sampler="tpe")
    assert check(ours) == 0
    assert_sound(ours, budget=20)


def test_a_repair_cut_short_after_dropping_the_other_runs_copies_is_finished_by_the_next(
        tmp_path, capsys, monkeypatch):
    """Killed after the rows of one key written twice were dropped (the other run's copies,
    which told its files), before the journals: the next repair had kept that run's rows
    past the journal and rebuilt the journal from two runs' draws (review CR18)."""
    from tuner.cli import check as check_module

    ours = merged_with_a_resumed_run(tmp_path)
    journals = check_module._check_journals

    def killed(*args, **kwargs):
        raise KeyboardInterrupt
    monkeypatch.setattr(check_module, "_check_journals", killed)
    with pytest.raises(KeyboardInterrupt):
        check_module.check(str(ours), repair=True)
    monkeypatch.setattr(check_module, "_check_journals", journals)
    capsys.readouterr()
    # until it is run again: a plain check names it, and a resume refuses to rebuild the
    # journal from the rows it left (it had, from two runs' draws; review CR20)
    assert check(ours) == 1
    assert "a `warpsweep check --repair` was cut short" in capsys.readouterr().out
    with pytest.raises(ConflictError, match="was cut short"):
        api.tune(GRAPH, trials=20, sources=1, results=str(ours), sampler="tpe")
    assert check(ours, "--repair") == 0
    assert "moved the rows it lacks (trial 10, trial 11, trial 12" in capsys.readouterr().out
    assert check(ours) == 0
    numbers = sorted(r["trial"] for r in read_trials(str(ours)).to_pylist()
                     if r["role"] == "trial")
    assert numbers == list(range(10))
    assert not (ours / "quarantine" / "other-runs.json").exists()


def lag_journal(results, records):
    """The journal as it stood at its ``records``-th result (an older copy put back)."""
    journal = journal_of(results)
    lines = journal.read_bytes().splitlines(keepends=True)
    at = [i for i, line in enumerate(lines) if b'"record"' in line][records - 1]
    journal.write_bytes(b"".join(lines[:at + 1]))


def halve_time_of(results, trial):
    """Edit one trial's row in place: its time (and value) halved."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    for path in (results / "trials").rglob("part-*.parquet"):
        table = pq.read_table(path)
        rows = table.to_pylist()
        for r in rows:
            if r["role"] == "trial" and r["trial"] == trial:
                r["time_us"], r["values"] = r["time_us"] / 2, [r["time_us"] / 2]
                pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), path,
                               write_page_checksum=True)
                return
    raise AssertionError(f"no row of trial {trial}")


def copy_in_the_later_file_of_another_run(ours, theirs, seed, trials=(12, 20)):
    """Run another study of ``ours``'s key (CC: one source, so the seed is not in the key)
    into ``theirs``, resumed once, and copy the rows file its resume wrote into ``ours``."""
    import shutil

    api.tune(GRAPH, "cc", trials=trials[0], results=str(theirs), sampler="random", seed=seed)
    first = {p.name for p in (theirs / "trials").rglob("part-*.parquet")}
    api.tune(GRAPH, "cc", trials=trials[1], results=str(theirs), sampler="random", seed=seed)
    (later,) = [p for p in (theirs / "trials").rglob("part-*.parquet") if p.name not in first]
    shutil.copy(later, ours / later.relative_to(theirs))


def test_repair_sets_aside_rows_past_the_journal_another_seed_drew(tmp_path, capsys):
    """Another run's later file alone (trials 12-19 of seed 1) copied into a study of seed 0:
    --repair had rebuilt the journal from them, and the study went on with two seeds' draws,
    checked clean; its rows name the seed they were drawn under (review CR19)."""

    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    api.tune(GRAPH, "cc", trials=10, results=str(ours), sampler="random", seed=0)
    copy_in_the_later_file_of_another_run(ours, theirs, seed=1)
    assert check(ours, "--repair") == 0
    assert "moved the rows it lacks (trial 12, trial 13" in capsys.readouterr().out
    assert check(ours) == 0
    rows = [r for r in read_trials(str(ours)).to_pylist() if r["role"] == "trial"]
    assert sorted(r["trial"] for r in rows) == list(range(10))
    assert {r["seed"] for r in rows} == {0}


def test_rows_of_its_own_set_aside_beside_another_runs_leave_no_reader_asking_for_repair(
        tmp_path, capsys):
    """An older journal put back and another run's file copied in: the study's rows past the
    journal in a file of their own cannot be told from that run's and are set aside with the
    journal kept; its saved mark, which counted them, had had every reader ask for a repair
    that restores nothing (review CR19)."""

    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    api.tune(GRAPH, "cc", trials=8, results=str(ours), sampler="random", seed=0)
    records = journal_of(ours).read_bytes().count(b'"record"')
    api.tune(GRAPH, "cc", trials=12, results=str(ours), sampler="random", seed=0)
    copy_in_the_later_file_of_another_run(ours, theirs, seed=1)
    lag_journal(ours, records)
    assert check(ours, "--repair") == 0
    assert "moved its saved mark to" in capsys.readouterr().out
    assert check(ours) == 0
    assert main(["best", "--results", str(ours)]) == 0
    assert "warning" not in capsys.readouterr().err
    api.tune(GRAPH, "cc", trials=12, results=str(ours), sampler="random", seed=0)
    assert check(ours) == 0
    assert_sound(ours, budget=12)


def test_two_runs_rows_of_keys_past_a_lagging_journal_are_both_set_aside(tmp_path, capsys):
    """Another run's later file holding other rows of trial numbers the journal (an older
    copy) lacks: the first written of each had been kept, neither file called another run's,
    and the journal rebuilt from both runs' draws, one configuration evaluated twice for
    good (review CR20)."""
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    for trials in (6, 10):
        api.tune(GRAPH, "cc", trials=trials, results=str(ours), sampler="random")
    records = journal_of(ours).read_bytes().count(b'"record"')
    api.tune(GRAPH, "cc", trials=14, results=str(ours), sampler="random")
    copy_in_the_later_file_of_another_run(ours, theirs, seed=0, trials=(10, 15))
    lag_journal(ours, records)
    assert check(ours, "--repair") == 0
    assert check(ours) == 0
    assert sorted(r["trial"] for r in read_trials(str(ours)).to_pylist()
                  if r["role"] == "trial") == list(range(10))
    api.tune(GRAPH, "cc", trials=14, results=str(ours), sampler="random")
    assert check(ours) == 0
    assert_sound(ours, budget=14)


def test_a_repair_cut_short_before_setting_rows_aside_keeps_the_journal(tmp_path, capsys,
                                                                         monkeypatch):
    """Killed after deciding, before setting another seed's rows aside: the journal (behind
    the study's own rows too) had already been moved away, and with it what told the seeds
    apart; the next check called the store clean and a resume rebuilt the journal from two
    seeds' draws (review CR20)."""

    from tuner.cli import check as check_module

    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    api.tune(GRAPH, "cc", trials=12, results=str(ours), sampler="random", seed=0)
    copy_in_the_later_file_of_another_run(ours, theirs, seed=1)
    lag_journal(ours, 8)  # its own trials past the journal in its one file: kept
    drop_rows = check_module._drop_rows

    def killed(loc, tables, drop):
        if drop:
            raise KeyboardInterrupt
        return drop_rows(loc, tables, drop)
    monkeypatch.setattr(check_module, "_drop_rows", killed)
    with pytest.raises(KeyboardInterrupt):
        check_module.check(str(ours), repair=True)
    monkeypatch.setattr(check_module, "_drop_rows", drop_rows)
    assert journal_of(ours).exists()
    assert check(ours) == 1
    assert check(ours, "--repair") == 0
    api.tune(GRAPH, "cc", trials=14, results=str(ours), sampler="random", seed=0)
    assert check(ours) == 0
    rows = [r for r in read_trials(str(ours)).to_pylist() if r["role"] == "trial"]
    assert {r["seed"] for r in rows} == {0}
    assert_sound(ours, budget=14)


def test_a_repair_cut_short_between_two_files_it_sets_rows_aside_in_is_finished_by_the_next(
        tmp_path, monkeypatch):
    """Killed after rewriting the file of rows the journal records another configuration for
    (what told another run's rows), before the file of that run's rows past the journal: the
    next repair had adopted them, and the study held one configuration twice for good
    (review CR21)."""
    import shutil

    from tuner.cli import check as check_module

    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    tune_ = functools.partial(api.tune, GRAPH, "cc", sampler="tpe")
    tune_(trials=7, results=str(ours))
    first = {p.name for p in (ours / "trials").rglob("part-*.parquet")}
    tune_(trials=10, results=str(ours))
    for p in (ours / "trials").rglob("part-*.parquet"):
        if p.name not in first:
            p.unlink()  # our resume's rows lost: the journal records trials 7-9
    for trials in (10, 14):
        tune_(trials=trials, results=str(theirs))
    for p in (theirs / "trials").rglob("part-*.parquet"):
        shutil.copy(p, ours / p.relative_to(theirs))
    drop_rows, calls = check_module._drop_rows, []

    def killed(loc, tables, drop):
        calls.append(drop)
        if len(calls) < 2:  # _check_keys' drop, then the journals'
            return drop_rows(loc, tables, drop)
        drop_rows(loc, tables, dict(list(drop.items())[:1]))
        raise KeyboardInterrupt
    monkeypatch.setattr(check_module, "_drop_rows", killed)
    with pytest.raises(KeyboardInterrupt):
        check_module.check(str(ours), repair=True)
    monkeypatch.setattr(check_module, "_drop_rows", drop_rows)
    assert len(calls[1]) == 2  # (the file of rows the journal records otherwise, first)
    assert check(ours) == 1
    assert check(ours, "--repair") == 0
    assert check(ours) == 0
    assert sorted(r["trial"] for r in read_trials(str(ours)).to_pylist()
                  if r["role"] == "trial") == list(range(10))  # the other run's 10-13 aside
    tune_(trials=14, results=str(ours))
    assert check(ours) == 0
    assert_sound(ours, budget=14)


def test_one_repair_of_a_lagging_journal_and_a_lost_rows_file_leaves_the_store_clean(
        tmp_path):
    """The journal moved aside to be rebuilt: its saved mark, counting the lost file's rows,
    had been left until a second repair (review CR21)."""
    results = tmp_path / "r"
    files = []
    for trials in (7, 10, 12, 14):
        api.tune(GRAPH, "cc", trials=trials, results=str(results), sampler="random")
        if trials == 10:
            records = journal_of(results).read_bytes().count(b'"record"')
        files.append({p.name for p in (results / "trials").rglob("part-*.parquet")})
    lag_journal(results, records)
    for p in (results / "trials").rglob("part-*.parquet"):
        if p.name not in files[-2]:
            p.unlink()  # the last resume's rows (trials 12, 13)
    assert check(results, "--repair") == 0
    assert check(results) == 0


def test_rows_its_mark_counted_that_neither_rows_nor_journal_hold_are_named_by_check(
        tmp_path, capsys):
    """An older journal copy put back and the rows file written since deleted: every reader
    warned of 4 results deleted and sent the user to `check --repair`, which found nothing
    and changed nothing (review CR22)."""
    results = tmp_path / "r"
    api.tune(GRAPH, "cc", trials=8, results=str(results), sampler="random")
    records = journal_of(results).read_bytes().count(b'"record"')
    first = {p.name for p in (results / "trials").rglob("part-*.parquet")}
    api.tune(GRAPH, "cc", trials=12, results=str(results), sampler="random")
    lag_journal(results, records)
    for p in (results / "trials").rglob("part-*.parquet"):
        if p.name not in first:
            p.unlink()
    assert check(results) == 1
    assert "4 result(s) its saved mark counted are in neither" in capsys.readouterr().out
    assert check(results, "--repair") == 0
    assert check(results) == 0
    capsys.readouterr()
    assert main(["best", "--results", str(results)]) == 0
    assert "warning" not in capsys.readouterr().err
    api.tune(GRAPH, "cc", trials=12, results=str(results), sampler="random")
    assert check(results) == 0
    assert_sound(results, budget=12)


def test_of_two_files_holding_a_trial_number_the_one_the_journal_knows_is_the_studys_own(
        tmp_path, capsys):
    """Another run's rows of trial numbers past a lagging journal: both files had been
    called another run's, and the study's own later trials set aside (review CR21)."""
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    tune_ = functools.partial(api.tune, GRAPH, "cc", sampler="tpe")
    tune_(trials=7, results=str(ours))
    tune_(trials=14, results=str(ours))
    mine = {r["trial"]: r["time_us"] for r in read_trials(str(ours)).to_pylist()
            if r["role"] == "trial"}
    lag_journal(ours, 10)
    copy_in_the_later_file_of_another_run(ours, theirs, seed=0, trials=(10, 13))
    assert check(ours, "--repair") == 0
    assert check(ours) == 0
    kept = {r["trial"]: r["time_us"] for r in read_trials(str(ours)).to_pylist()
            if r["role"] == "trial"}
    assert kept == mine


def test_repair_keeps_a_resumes_own_rows_past_a_lagging_journal_beside_its_edited_row(
        tmp_path, capsys):
    """The edited row the only one of its file (a resume's) the journal records: the file
    had been called another run's, the study's own later trials (its best among them) set
    aside, and readers had asked for a repair for good (review CR19)."""
    results = tmp_path / "r"
    tune(results, trials=8)
    tune(results, trials=12)
    best = min(r["time_us"] for r in read_trials(str(results)).to_pylist()
               if r["role"] == "trial" and r["trial"] > 8)
    lag_journal(results, 9)  # references and trials 0-7 from the first run, 8 from the second
    halve_time_of(results, 8)
    assert check(results, "--repair") == 0
    out = capsys.readouterr().out
    assert "wrote 1 row(s) from it" in out and "rows it lacks" not in out
    assert check(results) == 0
    rows = [r for r in read_trials(str(results)).to_pylist() if r["role"] == "trial"]
    assert sorted(r["trial"] for r in rows) == list(range(12))
    assert best in {r["time_us"] for r in rows}


def test_repair_keeps_a_runs_own_rows_past_a_lagging_journal_beside_an_edited_row(tmp_path,
                                                                                   capsys):
    """An older copy of the journal and one row's time edited: the row is put back from the
    journal and the study's own rows past the journal kept (the journal rebuilt from them);
    the edit had marked the whole file another run's and its 7 trials past the journal had
    been set aside (probe CR18)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    results = tmp_path / "r"
    tune(results, trials=12)
    journal = journal_of(results)
    lines = journal.read_bytes().splitlines(keepends=True)
    fifth = [i for i, line in enumerate(lines) if b'"record"' in line][4]
    journal.write_bytes(b"".join(lines[:fifth + 1]))  # as it stood at the fifth result
    path = next(p for p in (results / "trials").rglob("part-*.parquet")
                if 1 in pq.read_table(p).column("trial").to_pylist())
    rows = pq.read_table(path).to_pylist()
    edited = next(r for r in rows if r["trial"] == 1)
    right = edited["time_us"]
    edited["time_us"], edited["values"] = right / 2, [right / 2]
    pq.write_table(pa.Table.from_pylist(rows, schema=pq.read_table(path).schema), path,
                   write_page_checksum=True)
    assert check(results, "--repair") == 0
    out = capsys.readouterr().out
    assert "wrote 1 row(s) from it" in out and "rows it lacks" not in out
    assert check(results) == 0
    trials = {r["trial"]: r for r in read_trials(str(results)).to_pylist()
              if r["role"] == "trial"}
    assert sorted(trials) == list(range(12)) and trials[1]["time_us"] == right
    tune(results, trials=12)
    assert_sound(results, budget=12)


def test_repair_reports_what_is_left_not_what_it_set_right(tmp_path, capsys):
    """A file missing a knob column: the journal rewrite repairs it, and the reference rows
    it had mislabelled are right again; `--repair` had listed those as problems and exited 1
    (probe SELECT), a plain `check` after it finding none."""
    import pyarrow.parquet as pq

    results = tmp_path / "r"
    tune(results)
    path = next(p for p in (results / "trials").rglob("*.parquet")
                if "reference" in pq.read_table(p).column("role").to_pylist()
                and "param_w" in pq.read_table(p).column_names)
    pq.write_table(pq.read_table(path).drop_columns(["param_w"]), path,
                   write_page_checksum=True)
    assert check(results) == 1  # a column every writer writes (probe QUERY)
    assert "schema: no column param_w" in capsys.readouterr().out
    assert check(results, "--repair") == 0
    out = capsys.readouterr().out
    assert "moved to" in out and "files checked, all repaired" in out
    assert check(results) == 0


def test_check_calls_a_copied_rows_file_doubled_rows_not_repeats(tmp_path, capsys):
    # each trial of a copied file had also been named "one configuration evaluated by trials
    # 9, 9; a repeat is counted, not run again", blaming the original file (probe RES)
    import shutil

    import pyarrow.parquet as pq

    results = tmp_path / "r"
    tune(results)
    f = next(p for p in (results / "trials").rglob("part-*.parquet")
             if "trial" in pq.read_table(p).column("role").to_pylist())
    shutil.copy(f, f.with_name("part-copy.parquet"))
    assert check(results) == 1
    out = capsys.readouterr().out
    assert "trial 0 has 2 rows (same content)" in out
    assert "one configuration evaluated by" not in out


def test_a_row_outside_its_studys_space_is_refused_by_the_resume_not_a_traceback(tmp_path):
    """A trial row edited to w=3 (no choice of the vwarp space): the resume that rebuilds
    the journal from the rows had raised a bare ValueError; now a message naming the trial."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tuner.results.store import ConflictError

    results = tmp_path / "r"
    tune(results)
    for path in sorted((results / "trials").rglob("*.parquet")):
        table = pq.read_table(path)
        rows = table.to_pydict()
        if "trial" in rows["role"]:
            at = rows["role"].index("trial")
            rows["param_w"][at] = 3
            pq.write_table(pa.table(rows, schema=table.schema).replace_schema_metadata(
                table.schema.metadata), path, write_page_checksum=True)
            break
    journal_of(results).unlink()  # (with it, the row disagrees with what it records)
    with pytest.raises(ConflictError, match=rf"trial {rows['trial'][at]}'s row in .* holds a "
                                            r"configuration outside the study's space"):
        tune(results)


def test_a_row_that_disagrees_with_its_journal_is_refused_and_repaired_from_it(
        tmp_path, capsys):
    """A trial row whose result was rewritten (checksums valid) had been called "behind" and
    won: the resume rebuilt the journal from it and `best` reported a time never computed.
    The journal was told what was computed: the resume refuses, `check` names the row, and
    `--repair` puts back the journal's record."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tuner.results.store import ConflictError

    results = tmp_path / "r"
    tune(results)
    before = {r["trial"]: r for r in assert_sound(results) if r["role"] == "trial"}
    for path in sorted((results / "trials").rglob("*.parquet")):
        table = pq.read_table(path)
        rows = table.to_pydict()
        at = next((i for i, (role, state) in enumerate(zip(rows["role"], rows["state"],
                                                           strict=True))
                   if role == "trial" and state == "complete"), None)
        if at is not None:
            edited = rows["trial"][at]
            rows["time_us"][at] = 0.5
            rows["values"][at] = [0.5]
            pq.write_table(pa.table(rows, schema=table.schema).replace_schema_metadata(
                table.schema.metadata), path, write_page_checksum=True)
            break
    with pytest.raises(ConflictError, match=rf"other results than its journal .*trial "
                                            rf"{edited}\b"):
        tune(results)
    capsys.readouterr()
    assert main(["check", str(results)]) == 1
    assert f"records other results than the rows (1: trial {edited}" in capsys.readouterr().out
    assert main(["check", str(results), "--repair"]) == 0
    assert main(["check", str(results)]) == 0
    after = {r["trial"]: r for r in assert_sound(results) if r["role"] == "trial"}
    assert after[edited]["time_us"] == before[edited]["time_us"]
    tune(results)  # resumes: nothing left to run, nothing refused


def test_check_names_a_study_whose_rows_name_two_graphs(tmp_path, capsys):
    """A trial row pointed at another graph (edited, or copied from another study) had been
    read by `best` and `select` as that graph's result; `check` now names the study."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    results = tmp_path / "r"
    tune(results)
    assert check(results) == 0
    path = next(p for p in (results / "trials").rglob("*.parquet")
                if pq.read_table(p).num_rows > 1)
    table = pq.read_table(path)
    rows = table.to_pydict()
    rows["graph_id"][0] = "road-32x32-184dd06e"
    pq.write_table(pa.table(rows, schema=table.schema).replace_schema_metadata(
        table.schema.metadata), path, write_page_checksum=True)
    capsys.readouterr()
    assert check(results) == 1
    out = capsys.readouterr().out
    assert f"study {rows['study_key'][0]}: its rows name 2 graphs" in out
    assert "road-32x32-184dd06e" in out
    assert main(["best", "--results", str(results)]) == 2  # read as the other graph's, before
    assert f"study {rows['study_key'][0]} has rows of 2 graphs" in capsys.readouterr().err


def test_repair_keeps_the_copy_of_a_row_that_its_journal_records(tmp_path, capsys):
    """Two rows of one trial with different times, the same timestamp (a row copied, then
    edited): `--repair` had kept whichever file name sorts first; now the one the study's
    journal records, whatever the names."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    results = tmp_path / "r"
    tune(results)
    best = ["best", "--results", str(results)]
    assert main(best) == 0
    clean = capsys.readouterr().out
    path = next(p for p in (results / "trials").rglob("*.parquet")
                if "trial" in pq.read_table(p).column("role").to_pylist())
    table = pq.read_table(path)
    rows = table.to_pydict()
    at = rows["role"].index("trial")
    copy = {k: [v[at]] for k, v in rows.items()}
    copy["time_us"] = [copy["time_us"][0] / 2]  # a better time than it ran: would be the best
    copy["values"] = [[copy["time_us"][0]]]
    pq.write_table(pa.table(copy, schema=table.schema), path.with_name("part-aa.parquet"))
    assert check(results) == 1
    assert "has 2 rows with different content" in capsys.readouterr().out
    assert check(results, "--repair") == 0
    assert "kept the one its study's journal records" in capsys.readouterr().out
    assert main(best) == 0
    assert capsys.readouterr().out == clean


def test_check_names_a_reference_whose_knobs_are_another_baselines(tmp_path, capsys):
    """The `vwarp w=32` reference row edited to w=8: `best` had shown it as
    "[reference: vwarp w=32]" with w=8's time; `check` now names it."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    results = tmp_path / "r"
    tune(results)
    path = next(p for p in (results / "trials").rglob("*.parquet")
                if "vwarp w=32" in pq.read_table(p).column("label").to_pylist())
    table = pq.read_table(path)
    rows = table.to_pydict()
    rows["param_w"][rows["label"].index("vwarp w=32")] = 8
    pq.write_table(pa.table(rows, schema=table.schema).replace_schema_metadata(
        table.schema.metadata), path, write_page_checksum=True)
    capsys.readouterr()
    assert check(results) == 1
    out = capsys.readouterr().out
    assert f"{path}: study " in out and "reference 'vwarp w=32' holds the knobs" in out


def test_a_study_finished_by_another_run_after_this_one_began_is_not_written_twice(
        tmp_path, monkeypatch):
    """A run indexes the rows when it begins and takes a study's journal only when it opens
    it (a sweep busy on an earlier study): another run may finish the study in between.
    Its rows are read again once the journal is ours, not written a second time."""
    from tuner.results import store as store_module

    results = tmp_path / "r"
    tune(results, trials=TRIALS // 2)  # the other run, in two sittings (two row files),
    tune(results)  # finished before this one opens the study
    before = assert_sound(results)
    real = store_module.scan_index
    calls = []

    def stale_then_real(backend):
        calls.append(1)
        return ({}, {}, None) if len(calls) == 1 else real(backend)

    monkeypatch.setattr(store_module, "scan_index", stale_then_real)
    tune(results)
    assert len(calls) == 2  # the index the run began with, then read again under the lock
    after = assert_sound(results)
    assert len(after) == len(before)


def test_a_study_resumes_only_under_the_model_that_began_it(tmp_path, monkeypatch, capsys):
    """A resume under another simulator (a changed cost model) had ranked its trials with
    the first model's as one study, and told TPE both; now it is refused, naming both."""
    from tuner import env
    from tuner.tuning import study as study_module

    results = tmp_path / "r"
    tune(results, trials=TRIALS // 2)
    before = assert_sound(results)
    monkeypatch.setattr(study_module, "model_digest", lambda: "0123456789abcdef")
    code = main(["tune", "--graph", GRAPH, "--trials", str(TRIALS), "--sources", "1",
                 "--sampler", "random", "--workers", "0", "--results", str(results), "-q"])
    err = capsys.readouterr().err
    assert code == 2
    assert f"another version of warpsweep's model ({env.model_digest()}" in err
    assert "(0123456789abcdef)" in err and "another --results directory" in err
    assert len(assert_sound(results)) == len(before)  # nothing written
    monkeypatch.undo()
    tune(results)  # the model that began it resumes it
    assert len(assert_sound(results)) > len(before)


@pytest.mark.parametrize("move", ["device=a100", "algorithm=sssp"])
def test_rows_moved_to_another_algorithm_or_device_are_refused_and_named(tmp_path, capsys,
                                                                          move):
    """A trial file moved under another ``device=`` or ``algorithm=`` directory had been read
    by `best` as that device's or algorithm's result, and `check` saw nothing."""
    results = tmp_path / "r"
    tune(results)
    (path,) = [p for p in (results / "trials").rglob("*.parquet")][:1]
    part = path.parent if move.startswith("device") else path.parent.parent
    key = move.split("=")[0]
    target = part.parent / move
    if key == "algorithm":
        target = target / path.parent.name
    target.mkdir(parents=True)
    path.rename(target / path.name)
    capsys.readouterr()
    assert main(["best", "--results", str(results)]) == 2
    err = capsys.readouterr().err
    assert "under algorithm=" in err and move in err and "not its algorithm and device" in err
    assert main(["check", str(results)]) == 1
    assert "not their study's algorithm and device" in capsys.readouterr().out


def test_trials_failed_for_the_machines_sake_are_named_and_tried_again(tmp_path, monkeypatch,
                                                                       capsys):
    """Trials whose worker died or ran out of memory had used up the budget as failures:
    the run exited 0 and a resume ran none of them again. Now the run names them (exit 1)
    with the command that retries them, and that command does."""
    import simulator

    results = tmp_path / "r"
    real = simulator.simulate
    hit = []

    def short_of_memory(graph, algorithm, strategy, *args, **kwargs):
        if getattr(strategy, "w", None) == 4 and strategy.mapping == "vwarp":
            hit.append(1)
            raise MemoryError("out of memory")
        return real(graph, algorithm, strategy, *args, **kwargs)

    monkeypatch.setattr(simulator, "simulate", short_of_memory)
    argv = ["tune", "--graph", GRAPH, "--trials", str(TRIALS), "--sources", "1", "--sampler",
            "random", "--workers", "0", "--results", str(results), "-q"]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert hit and "failed for the machine's sake" in err and "Try them again with:" in err
    failed = [r for r in assert_sound(results) if r["state"] == "failed"]
    assert failed and all(r["error"].startswith("MemoryError") for r in failed)
    monkeypatch.setattr(simulator, "simulate", real)
    assert main(argv) == 0  # the command printed: the failed configurations tried again
    rows = assert_sound(results)

    def knobs(row):
        return {k: v for k, v in row.items() if k.startswith("param_") and v is not None}

    # (a reference's row is written once: a failed reference stays failed)
    for r in (r for r in failed if r["role"] == "trial"):
        assert [x for x in rows if x["role"] == "trial" and x["state"] == "complete"
                and knobs(x) == knobs(r)], r


def test_repair_puts_back_rows_of_two_studies_edited_in_one_file(tmp_path, capsys):
    """A sweep's flush writes rows of several studies into one file: a repair that set aside
    one study's edited row shifted the rows of the other's, and a store opened before the
    drop took the dropped row for a conflict. Both rows are put back."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    sweep = tmp_path / "sweep.yaml"
    sweep.write_text("trials: 6\nsampler: random\nsources: 1\ngraphs: ['rmat:scale=6,seed=1',"
                     " 'rmat:scale=6,seed=2']\nalgorithms: [bfs]\ndevices: [h100]\n"
                     "spaces: [vwarp]\n")
    results = tmp_path / "r"
    api.sweep(sweep, results=results)
    before = trial_times(results)
    # one file of both studies' rows, as a flush of studies run side by side on Ray writes
    files = sorted((results / "trials").rglob("*.parquet"))
    table = pa.concat_tables([pq.read_table(p) for p in files])
    for p in files:
        p.unlink()
    path = files[0]
    rows = table.to_pydict()
    edited = {}
    for i, (key, role, state) in enumerate(zip(rows["study_key"], rows["role"], rows["state"],
                                               strict=True)):
        if role == "trial" and state == "complete" and key not in edited:
            edited[key] = rows["trial"][i]
            rows["time_us"][i], rows["values"][i] = 0.5, [0.5]
    assert len(edited) == 2
    pq.write_table(pa.table(rows, schema=table.schema).replace_schema_metadata(
        table.schema.metadata), path, write_page_checksum=True)
    assert main(["check", str(results), "--repair"]) == 0
    assert main(["check", str(results)]) == 0
    assert trial_times(results) == before


def trial_times(results):
    """Every study's trial rows' times, by (study, trial); no key held twice."""
    rows = [r for r in read_trials(str(results)).to_pylist() if r["role"] == "trial"]
    times = {(r["study_key"], r["trial"]): r["time_us"] for r in rows}
    assert len(times) == len(rows)
    return times


def _set_model_digest(results, digest, files=None):
    """Rewrite the rows' model digest (checksums valid), as rows another cost model computed
    read; ``files``: how many trial files to rewrite (None: all)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    for path in sorted((results / "trials").rglob("*.parquet"))[:files]:
        table = pq.read_table(path)
        rows = table.to_pydict()
        rows["model_digest"] = [digest] * table.num_rows
        pq.write_table(pa.table(rows, schema=table.schema).replace_schema_metadata(
            table.schema.metadata), path, write_page_checksum=True)


def test_rows_of_another_cost_model_are_not_rebuilt_into_a_lost_journal(tmp_path, capsys):
    """The cost model a study ran under was recorded in its journal alone: with the journal
    lost, a resume by other code rebuilt it from the other model's rows, stamped it with its
    own model and ranked both as one study (exit 0, `best` naming a time this code never
    computed, `check` clean). The rows now carry their model; the resume refuses them and
    `check` names them."""
    from simulator.errors import ConfigError
    from tuner.env import model_digest

    results = tmp_path / "r"
    tune(results, trials=6)
    rows = read_trials(str(results)).to_pylist()
    assert {r["model_digest"] for r in rows} == {model_digest()}
    _set_model_digest(results, "0123456789abcdef")
    capsys.readouterr()
    assert main(["check", str(results)]) == 1
    out = capsys.readouterr().out
    assert "its rows were computed under 1 cost model(s), 0123456789abcdef" in out
    assert f"its journal records {model_digest()}" in out

    journal_of(results).unlink()
    with pytest.raises(ConfigError,
                       match=r"another version of warpsweep's model \(0123456789abcdef\)"):
        tune(results)
    assert read_trials(str(results)).num_rows == len(rows)  # nothing written


def test_check_names_a_study_whose_rows_hold_two_cost_models(tmp_path, capsys):
    import pyarrow.parquet as pq

    results = tmp_path / "r"
    tune(results, trials=6)
    tune(results, trials=10)  # a second flush: a second trial file
    assert len(list((results / "trials").rglob("*.parquet"))) >= 2
    _set_model_digest(results, "0123456789abcdef", files=1)
    capsys.readouterr()
    assert main(["check", str(results)]) == 1
    out = capsys.readouterr().out
    assert "its rows were computed under 2 cost model(s)" in out
    assert pq.read_table(sorted((results / "trials").rglob("*.parquet"))[0]).num_rows


def test_a_trials_file_under_graphs_is_refused_not_read_as_graph_rows(tmp_path, capsys):
    """It had been read as graph rows: `SELECT count(*) FROM graphs` 18 for 3 graphs, exit
    0, and `check` called them duplicate graph rows."""
    import shutil

    results = tmp_path / "r"
    tune(results, trials=3)
    trial_file = next((results / "trials").rglob("*.parquet"))
    shutil.copy(trial_file, results / "graphs" / "part-gcopy.parquet")
    capsys.readouterr()
    assert main(["query", "SELECT count(*) FROM graphs", "--results", str(results)]) == 2
    assert "holds trial rows (a study_key column), not graph rows" in capsys.readouterr().err
    assert main(["check", str(results), "--repair"]) == 0
    assert main(["query", "SELECT count(*) FROM graphs", "--results", str(results)]) == 0


@pytest.mark.parametrize("code", [1, 30])  # EPERM (chattr +i), EROFS
def test_a_results_disk_refusing_writes_mid_run_is_named(tmp_path, capsys, monkeypatch, code):
    """A write refused mid-run had been a bare "[Errno 1] Operation not permitted", naming no
    file or directory (probe FILESYS)."""
    import os

    from tuner.results.store import ResultStore

    results = tmp_path / "r"

    def refused(self, *a, **k):
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(ResultStore, "flush", refused)
    assert main(["tune", "--graph", "rmat:scale=7,seed=1", "--algo", "bfs", "--trials", "2",
                 "--sources", "1", "--workers", "0", "--results", str(results),
                 "--no-progress"]) == 1
    err = capsys.readouterr().err
    # EPERM may be a read's (review CR25): only the directory is named, not the act
    said = "under" if code == 1 else "writing under"
    assert f"{os.strerror(code)} ({said} {results})" in err


def test_a_disk_that_fills_mid_run_names_the_way_on(tmp_path, capsys, monkeypatch):
    """It had said only `[Errno 28] No space left on device`: nothing on what was kept or
    how to go on."""
    from tuner.results.store import ResultStore

    results = tmp_path / "r"
    real = ResultStore.flush

    def full(self, *a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(ResultStore, "flush", full)
    args = ["tune", "--graph", "rmat:scale=7,seed=1", "--algo", "bfs", "--trials", "4",
            "--sources", "1", "--workers", "0", "--results", str(results), "--no-progress"]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert "No space left on device" in err and "resume with:\n  warpsweep tune" in err
    assert f"(writing under {results})" in err  # whose disk: the error names no file
    monkeypatch.setattr(ResultStore, "flush", real)
    assert main(args) == 0 and check(results) == 0


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full here")
def test_a_full_disk_under_standard_output_is_not_blamed_on_the_results(tmp_path):
    """Standard output redirected to a full disk had been reported as "(writing under
    RESULTS)", and `tune` had said the run stopped writing its results, though they were
    whole (probe FILESYS)."""
    import subprocess
    import sys

    results = tmp_path / "r"
    tune(results, trials=3)
    before = read_trials(str(results)).num_rows
    for argv in (["best", "--results", str(results)],
                 ["tune", "--graph", GRAPH, "--trials", "4", "--sources", "1", "--sampler",
                  "random", "--workers", "0", "--results", str(results), "--no-progress"]):
        with open("/dev/full", "w") as full:
            done = subprocess.run([sys.executable, "-m", "tuner.cli", *argv], stdout=full,
                                  stderr=subprocess.PIPE, text=True, check=False)
        assert done.returncode == 1, done.stderr
        assert "(writing to standard output)" in done.stderr, done.stderr
        assert "writing under" not in done.stderr and "Traceback" not in done.stderr
        assert "stopped writing its results" not in done.stderr
    assert read_trials(str(results)).num_rows > before  # the tune's trials are kept
    assert check(results) == 0


def test_check_repairs_summary_counts_what_the_rows_hold_after_it(tmp_path, capsys):
    """Its last line had counted the rows as they were before the repair."""
    results = tmp_path / "r"
    tune(results)
    for victim in (results / "trials").rglob("part-*.parquet"):
        victim.write_bytes(b"")
    assert check(results, "--repair") == 0
    repaired = capsys.readouterr().out.strip().splitlines()[-1]
    assert check(results) == 0
    after = capsys.readouterr().out.strip().splitlines()[-1]
    assert repaired.split("; ", 1)[1] == after.split("; ", 1)[1]
    assert "configurations sampled" in after


def test_check_names_a_rows_file_the_readers_do_not_count_and_repair_sets_it_aside(
        tmp_path, capsys):
    """A Parquet file under trials/ not named part-*.parquet: the readers and tune never
    count it, yet `check` had compared its rows with the rest, and a repair could keep its
    copy of a row over the counted one (that row then lost to every reader)."""
    import shutil

    import pyarrow.parquet as pq

    results = tmp_path / "r"
    tune(results)
    before = read_trials(str(results)).num_rows
    f = next(p for p in (results / "trials").rglob("part-*.parquet")
             if "trial" in pq.read_table(p).column("role").to_pylist())
    shutil.copy(f, f.with_name("backup.parquet"))
    assert check(results) == 1
    out = capsys.readouterr().out
    assert "backup.parquet: not a results file" in out and "part-*.parquet" in out
    assert "has 2 rows" not in out
    assert check(results, "--repair") == 0
    assert not f.with_name("backup.parquet").exists()
    assert list((results / "quarantine").rglob("backup.parquet*"))
    assert read_trials(str(results)).num_rows == before
    assert check(results) == 0


def test_rows_deleted_with_their_journal_are_named_by_check_readers_and_tune(tmp_path,
                                                                             capsys):
    """Probe CONC: a rows file and the study's journal both deleted. `check` had said "no
    problem", the readers nothing, though the saved mark still counted the rows; the next
    tune ran new trials in their place without a word."""
    import warnings as w

    from tuner.results.query import connect

    results = tmp_path / "r"
    tune(results, trials=20)
    journal = journal_of(results)
    files = sorted((results / "trials").rglob("part-*.parquet"),
                   key=lambda p: p.stat().st_size)
    saved = json.loads(journal.with_name(journal.name + ".saved").read_text())["rows"]
    before = read_trials(str(results)).num_rows
    _keep_half_of_the_rows(files[-1])  # as if one rows file of two were deleted
    assert 0 < read_trials(str(results)).num_rows < before
    journal.unlink()
    assert check(results) == 1
    out = capsys.readouterr().out
    assert "its journal is gone" in out and f"held {saved}" in out
    with w.catch_warnings(record=True) as caught:
        w.simplefilter("always")
        connect(str(results))
    assert any("its journal is gone" in str(c.message) for c in caught)
    assert check(results, "--repair") == 0
    assert "moved the mark" in capsys.readouterr().out
    assert check(results) == 0


def _keep_half_of_the_rows(path) -> None:
    import pyarrow.parquet as pq

    table = pq.read_table(path, partitioning=None)
    pq.write_table(table.slice(0, table.num_rows // 2), path)


def test_the_next_tune_says_what_was_deleted_with_the_journal(tmp_path, capsys):
    results = tmp_path / "r"
    tune(results, trials=20)
    journal = journal_of(results)
    _keep_half_of_the_rows(max(((results / "trials").rglob("part-*.parquet")),
                               key=lambda p: p.stat().st_size))
    journal.unlink()
    capsys.readouterr()
    tune(results, trials=20)
    assert "its journal is gone" in capsys.readouterr().err


def test_a_refused_resume_leaves_no_journal_of_its_own(tmp_path, capsys):
    """Probe CONC: a resume refused (another seed, its journal deleted) had left a journal of
    only the study's header, which `check` then called behind the rows."""
    results = tmp_path / "r"
    argv = ["tune", "--graph", GRAPH, "--workers", "0", "--results", str(results), "--trials",
            "12", "--sources", "1", "--no-progress", "--no-references"]
    assert main(argv) == 0
    journal = journal_of(results)
    journal.unlink()
    assert main([*argv, "--seed", "5"]) == 2
    assert not journal.exists()
    assert main(argv) == 0  # the right command rebuilds it
    assert check(results) == 0


def test_a_study_deleted_but_for_its_saved_mark_starts_over_without_a_loss_told(tmp_path,
                                                                               capsys):
    """Review CR9: rows, graph rows and journal all deleted (a start over) had been told as
    results deleted with the journal, and `check` had exited 1 for it."""
    import shutil

    results = tmp_path / "r"
    tune(results)
    journal = journal_of(results)
    shutil.rmtree(results / "trials")
    shutil.rmtree(results / "graphs")
    journal.unlink()
    assert journal.with_name(journal.name + ".saved").exists()
    assert check(results) == 0
    capsys.readouterr()
    tune(results)
    assert "deleted with it" not in capsys.readouterr().err
    assert_sound(results)


def test_a_journal_rebuilt_after_its_deletion_keeps_no_copy_of_this_runs_stub(tmp_path,
                                                                              capsys):
    """Review CR9: the rebuild had said "the old one is kept as ....behind-..." of a journal
    the run itself had just made."""
    results = tmp_path / "r"
    tune(results)
    journal_of(results).unlink()
    capsys.readouterr()
    tune(results, trials=TRIALS + 2)
    err = capsys.readouterr().err
    assert "rebuilt from the rows" in err and "kept as" not in err
    assert not list(journal_of(results).parent.glob("*.behind-*"))


def test_check_names_h100_rows_older_than_the_device_digest_beside_todays(tmp_path, capsys):
    """Rows of an older warpsweep's h100 (no device_digest: the model now named
    h100-datasheet) copied beside today's h100 rows had passed `check`, "no problem", while
    `tune` refuses the directory and the readers rank both as one device (probe COMPAT)."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    results = tmp_path / "r"
    for seed in (1, 2):
        api.tune(f"rmat:scale=7,seed={seed}", trials=3, sources=1, results=str(results),
                 sampler="random")
    files = sorted((results / "trials").rglob("*.parquet"))
    assert main(["check", str(results)]) == 0
    table = pq.read_table(files[0])
    older = table.filter(pc.equal(table.column("graph_id"), table.column("graph_id")[0]))
    pq.write_table(older.drop_columns(["device_digest"]), files[0], write_page_checksum=True)
    capsys.readouterr()
    assert main(["check", str(results)]) == 1
    out = capsys.readouterr().out
    assert "device 'h100': rows simulated with 2 sets of device fields" in out
    assert "9a731a5c989842f1" in out  # the datasheet-era h100's


def test_a_hand_merge_across_a_model_change_is_refused_and_repaired_to_the_journals_model(
        tmp_path, capsys, monkeypatch):
    """One study run before and after a change to the simulator that moves none of its
    figures, the older directory's trials copied into the newer's: the rows differ only in
    their model (which the fingerprints leave out). `check --repair` had kept the older
    model's rows and set the study's own aside, and the resume had gone on with exit 0, two
    models in one study (probe R27, high). The resume refuses now, naming the repair; the
    repair keeps the journal's model's rows; then the resume runs."""
    import shutil

    from tuner import env
    from tuner.tuning import evaluate
    from tuner.tuning import study

    old, new = tmp_path / "old", tmp_path / "new"
    tune(old, trials=4)
    for module in (env, study, evaluate):
        monkeypatch.setattr(module, "model_digest", lambda: "0123456789abcdef")
    tune(new, trials=4)
    own = read_trials(str(new)).num_rows
    for path in (old / "trials").rglob("*.parquet"):
        target = new / path.relative_to(old)
        target = target.with_name(f"{target.stem}-copied.parquet")  # beside the newer's
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, target)
    assert {r["model_digest"] for r in read_trials(str(new)).to_pylist()} > {"0123456789abcdef"}
    with pytest.raises(ConflictError, match=r"2 cost models .*check .* --repair`, which keeps "
                       r"the rows of its journal's model"):
        tune(new, trials=8)
    journal = next(Location.of(str(new)).journal_dir().glob("*.journal"))
    journal.rename(journal.with_suffix(".aside"))
    # without the journal the repair keeps the first-written rows: the refusal says so,
    # rather than promise the journal's model (review CR27)
    with pytest.raises(ConflictError, match=r"journal gone, keeps the rows written first"):
        tune(new, trials=8)
    journal.with_suffix(".aside").rename(journal)
    capsys.readouterr()
    main(["check", str(new), "--repair"])
    rows = read_trials(str(new)).to_pylist()
    assert len(rows) == own and {r["model_digest"] for r in rows} == {"0123456789abcdef"}
    tune(new, trials=8)
    rows = assert_sound(new, budget=8)
    assert {r["model_digest"] for r in rows} == {"0123456789abcdef"}
    assert main(["check", str(new)]) == 0


def test_a_rebuild_of_a_lost_journal_killed_midway_resumes(tmp_path, capsys):
    """A SIGKILL while `tune` rebuilds a lost journal from the rows had left trials without
    the study's model, and every later resume was refused as "begun by an older warpsweep"
    (probe R27): the rebuilt journal records the model and how the study runs first."""
    import subprocess
    import sys

    results = tmp_path / "r"
    tune(results)
    before = assert_sound(results)
    for path in Location.of(str(results)).journal_dir().glob("*.journal"):
        path.unlink()
    killed = f"""
import os, optuna
from tuner import api
tell, calls = optuna.study.Study.tell, []
def tell_then_die(self, *args, **kwargs):
    calls.append(1)
    if len(calls) == 4:
        os._exit(9)  # as a SIGKILL: no handler, no flush
    return tell(self, *args, **kwargs)
optuna.study.Study.tell = tell_then_die
api.tune({GRAPH!r}, trials={TRIALS}, sources=1, results={str(results)!r}, sampler="random")
"""
    run = subprocess.run([sys.executable, "-c", killed], capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parent.parent)
    assert run.returncode == 9, run.stderr
    again = tune(results)
    assert again.studies[0].done == TRIALS
    assert len(assert_sound(results)) == len(before)


def test_a_trial_killed_while_its_knobs_were_drawn_is_not_requeued_half_drawn(tmp_path,
                                                                           capsys):
    """A trial killed between two of its knobs had been requeued with the knobs drawn so
    far, the rest drawn outside the untried-configuration sampler (a repeat written while
    configurations were untried, probe R27): a half-drawn trial is failed, not requeued."""
    import subprocess
    import sys

    import optuna

    results = tmp_path / "r"
    killed = f"""
import os
from tuner import api
from tuner.tuning.samplers import UserNamedTrial
draw, calls = UserNamedTrial.suggest_int, []
def draw_then_die(self, *args, **kwargs):
    calls.append(1)
    if len(calls) == 5:
        os._exit(9)  # the trial's categorical knobs drawn, its chunk not
    return draw(self, *args, **kwargs)
UserNamedTrial.suggest_int = draw_then_die
api.tune({GRAPH!r}, trials={TRIALS}, sources=1, results={str(results)!r}, sampler="random")
"""
    run = subprocess.run([sys.executable, "-c", killed], capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parent.parent)
    assert run.returncode == 9, run.stderr

    def trials():
        storage = optuna.storages.JournalStorage(
            optuna.storages.journal.JournalFileBackend(str(journal_of(results))))
        (name,) = optuna.study.get_all_study_names(storage)
        return optuna.load_study(study_name=name, storage=storage).get_trials()

    (half,) = [t for t in trials() if t.state == optuna.trial.TrialState.RUNNING]
    assert "mapping" in half.params and "chunk" not in half.params
    tune(results)
    assert not [t for t in trials() if t.user_attrs.get("requeued_from") == half.number]
    assert_sound(results)


def test_check_takes_the_results_directory_as_the_other_verbs_name_it(tmp_path, capsys,
                                                                       monkeypatch):
    """`check --results DIR` as `best` and `query` take it, and with nothing given the same
    default they read; two different directories are refused rather than one checked."""
    results = tmp_path / "warpsweep-results"
    tune(results, trials=3)
    capsys.readouterr()
    assert main(["check", "--results", str(results)]) == 0
    assert f"{results}: " in capsys.readouterr().out
    monkeypatch.chdir(tmp_path)
    assert main(["check"]) == 0
    assert "./warpsweep-results: " in capsys.readouterr().out
    assert main(["check", str(results), "--results", f"{results}/"]) == 0  # one, spelt twice
    (tmp_path / "link").symlink_to(results)
    assert main(["check", str(results), "--results", str(tmp_path / "x" / ".." / "link")]) == 0
    capsys.readouterr()
    assert main(["check", str(results), "--results", str(tmp_path / "other")]) == 2
    err = capsys.readouterr().err
    assert "two results directories given" in err and err.count("\n") == 1


@pytest.mark.parametrize("bad", ['{"op_code": 99}', '{"garbage": 1}', "garbage {not json"])
@pytest.mark.parametrize("where", ["last", "middle", "first"])
def test_a_bad_journal_line_is_left_out_and_the_results_of_the_others_written(tmp_path,
                                                                             capsys, bad,
                                                                             where):
    """A journal holding results the rows lack, and a line that is no journal operation:
    `check --repair` had set the whole journal aside ("unreadable journal (AssertionError:
    Should not reach.)"), the results with it, and called the directory repaired (probe
    RESUME2); then it kept only the lines before the bad one, dropping the results after it
    and a journal whose first line was bad (review CR29). The other lines count: their
    results are written, the journal written without the line (the whole kept in the
    quarantine), and a resume goes on from them."""
    results, rows, journal, lines = _tuned_with_rows_lost(tmp_path)
    at = {"last": len(lines), "middle": len(lines) // 2, "first": 0}[where]
    journal.write_text("".join(lines[:at] + [bad + "\n"] + lines[at:]))
    capsys.readouterr()
    assert main(["check", str(results)]) == 1
    out = capsys.readouterr().out
    assert f"line {at + 1}: " in out and f"{rows} recorded result(s) missing" in out
    assert "nothing is left to write them from" not in out
    assert main(["check", str(results), "--repair"]) == 0
    assert read_trials(str(results)).num_rows == rows
    (kept,) = (results / "quarantine" / "studies").glob(journal.name + ".*")
    assert bad + "\n" in kept.read_text()
    assert journal.read_text() == "".join(lines)
    assert main(["check", str(results)]) == 0
    tune(results, trials=8)
    assert_sound(results, budget=8)
    assert main(["check", str(results)]) == 0


def test_two_runs_rows_of_one_study_merged_without_a_journal_are_never_mixed(tmp_path,
                                                                             capsys):
    """Two directories of one study (other seeds: with one source the seed is not in the
    key) merged by hand, no journal: `check --repair` had kept the first written row of
    each key, one run's trials 0-5 and the other's 6-9, and `tune` had rebuilt a journal
    from them and gone on (probe RESUME2). Now the repair names the two runs' files and
    changes nothing, and a study whose rows were drawn under two seeds is refused."""
    import shutil

    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    a, b, merged = tmp_path / "a", tmp_path / "b", tmp_path / "m"
    tune(a, trials=6, seed=5)
    tune(b, trials=10, seed=6)
    shutil.copytree(a, merged, ignore=shutil.ignore_patterns("studies"))
    for part in (b / "trials").rglob("part-*.parquet"):
        shutil.copy(part, merged / part.relative_to(b))
    from tuner.results.query import connect

    def stored_rows():
        return sum(pq.read_table(p).num_rows for p in (merged / "trials").rglob("part-*.parquet"))

    rows = stored_rows()
    capsys.readouterr()
    assert main(["check", str(merged), "--repair"]) == 1
    out = capsys.readouterr().out
    assert "rows of two runs and no journal" in out and "seed 5" in out and "seed 6" in out
    assert stored_rows() == rows
    with pytest.raises(ConflictError, match=r"names each run's files, and move one run's"):
        tune(merged, trials=10, seed=5)  # (it had sent the user to the refusing repair)
    assert stored_rows() == rows and not list((merged / "studies").glob("*.journal"))
    # what the old repair left: each key once, trials 0-5 of one run and 6-9 of the other
    for part in (merged / "trials").rglob("part-*.parquet"):
        t = pq.read_table(part)
        if 6 in t.column("seed").to_pylist():
            keep = pc.fill_null(pc.greater_equal(t["trial"], 6), False)
            pq.write_table(t.filter(keep), part, write_page_checksum=True)
    # no key held twice now, yet two runs' draws: named all the same (review CR29), also
    # by a repair that sets something else right (it had dropped the line and exited 0)
    (merged / "trials" / "algorithm=bfs" / "device=h100" / "part-junk.parquet").write_text("x")
    capsys.readouterr()
    assert main(["check", str(merged), "--repair"]) == 1
    assert "rows of two runs and no journal" in capsys.readouterr().out
    assert main(["check", str(merged)]) == 1
    with pytest.raises(ConflictError, match=r"drawn by two runs \(random seed 5, random seed 6"):
        connect(str(merged))  # the readers refuse them too (review CR30: silent)
    assert main(["best", "--results", str(merged)]) == 2
    with pytest.raises(ConflictError, match=r"drawn by 2 runs \(.*seed 5: trials 0-5; .*seed "
                                            r"6: trials 6-9\)"):
        tune(merged, trials=10, seed=5)


def test_a_journal_with_results_and_no_model_record_is_named_and_set_aside(tmp_path,
                                                                          capsys):
    """A journal holding results but not the cost model, beside rows that record it (a run
    cut short as it rebuilt the journal, which wrote references before the model): every
    run refused the study as an older warpsweep's, and `check --repair` said no problem
    (probe RESUME2). Check names it; the repair sets it aside; the rows rebuild it."""
    results = tmp_path / "r"
    tune(results, trials=4)
    journal = journal_of(results)
    lines = [line for line in journal.read_text().splitlines(keepends=True)
             if not ({"model", "spec"} & set(json.loads(line).get("user_attr") or {}))]
    journal.write_text("".join(lines))
    capsys.readouterr()
    assert main(["check", str(results)]) == 1
    assert "records results but not the cost model" in capsys.readouterr().out
    assert main(["check", str(results), "--repair"]) == 0
    tune(results, trials=6)
    assert_sound(results, budget=6)
    assert main(["check", str(results)]) == 0


def test_a_missing_graph_row_is_written_again_where_its_spec_still_builds_the_graph(
        tmp_path, capsys, monkeypatch):
    """A study's graph row lost (a run killed before it, or rows written back from the
    journal): `check` had said the next tune writes it, which never runs once the graph file
    is edited (another study; probe RESUME2). `--repair` builds the graph again from its
    spec, checks its edges against the journal's record and writes the row as tune did;
    where the file was edited it says to put the file back."""
    import pyarrow.parquet as pq

    edges = tmp_path / "g.txt"
    edges.write_text("".join(f"{i} {(i * 7 + 3) % 50}\n{i} {(i + 1) % 50}\n" for i in range(50)))
    results = tmp_path / "r"
    argv = ["tune", "--graph", f"file:{edges}", "--algo", "bfs", "--trials", "3",
            "--sources", "1", "--workers", "0", "--results", str(results), "-q"]
    assert main(argv) == 0
    (row_file,) = (results / "graphs").rglob("part-*.parquet")
    before = pq.read_table(row_file).drop_columns(["timestamp"]).to_pylist()
    row_file.unlink()
    capsys.readouterr()
    assert main(["check", str(results)]) == 1
    assert "`--repair` writes it" in capsys.readouterr().out
    assert main(["check", str(results), "--repair"]) == 0
    (row_file,) = (results / "graphs").rglob("part-*.parquet")
    assert pq.read_table(row_file).drop_columns(["timestamp"]).to_pylist() == before
    assert main(["check", str(results)]) == 0
    row_file.unlink()
    edges.write_text(edges.read_text() + "3 40\n")
    capsys.readouterr()
    assert main(["check", str(results), "--repair"]) == 1
    assert "builds another graph now (its file edited" in capsys.readouterr().out
    # said once, the same with and without --repair, also where the repair set something
    # else right (a plain check after it had repeated it promising the repair: review CR31)
    (results / "trials" / "part-junk.parquet").write_text("x")
    assert main(["check", str(results), "--repair"]) == 1
    out = capsys.readouterr().out
    assert out.count("no row for graph") == 1 and "`--repair` writes it" not in out
    # a relative path is read from where the study was tuned: said so (review CR29)
    relative = tmp_path / "rel"
    (tmp_path / "here").mkdir()
    monkeypatch.chdir(tmp_path / "here")
    (tmp_path / "here" / "g.txt").write_text("0 1\n1 2\n")
    assert main(["tune", "--graph", "file:g.txt", "--algo", "bfs", "--trials", "2",
                 "--sources", "1", "--workers", "0", "--results", str(relative), "-q"]) == 0
    next((relative / "graphs").rglob("part-*.parquet")).unlink()
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    assert main(["check", str(relative), "--repair"]) == 1
    assert "its path is relative, read here from" in capsys.readouterr().out


def test_a_journal_write_failing_at_a_tell_stops_the_run_and_loses_nothing(tmp_path,
                                                                          monkeypatch, capsys):
    """The journal's disk failing as a finished trial is told had been caught as a tell
    Optuna rejects: the trial became a failed row, its result lost, exit 0, and no resume
    ran it again (probe STOREREAD). It stops the run as a failing rows write does; the
    resume tells the trial from its record."""
    import errno

    from tuner.results import journal

    append = journal.DriverJournal.append_logs
    failed = []

    def failing_once(self, logs):
        if not failed and any(log.get("op_code") == 6 and log.get("trial_id") == 2
                              for log in logs):
            failed.append(True)
            raise OSError(errno.ENOSPC, "No space left on device")
        return append(self, logs)

    results = tmp_path / "r"
    argv = ["tune", "--graph", "rmat:scale=7,seed=1", "--algo", "bfs", "--trials", "5",
            "--sources", "1", "--workers", "0", "--no-references", "--sampler", "random",
            "--results", str(results), "-q"]
    monkeypatch.setattr(journal.DriverJournal, "append_logs", failing_once)
    assert main(argv) == 1 and failed
    assert "No space left on device" in capsys.readouterr().err
    monkeypatch.setattr(journal.DriverJournal, "append_logs", append)
    assert main(argv) == 0
    rows = {r["trial"]: r for r in read_trials(str(results)).to_pylist()}
    assert sorted(rows) == [0, 1, 2, 3, 4]
    assert rows[2]["state"] == "complete" and rows[2]["error"] is None
    assert main(["check", str(results)]) == 0


def test_a_refused_run_keeps_the_mark_that_counts_results_lost_with_the_journal(tmp_path,
                                                                               capsys):
    """A study's journal gone and rows deleted with it: the mark still counts them, and
    `check` says so. A tune refused as it began (another sampler) had overwritten the mark
    with its new journal's, and the loss went unsaid (probe STOREREAD)."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from simulator.errors import ConfigError

    results = tmp_path / "r"
    tune(results, trials=6, references=False)
    journal_of(results).unlink()
    for part in (results / "trials").rglob("part-*.parquet"):
        t = pq.read_table(part)
        pq.write_table(t.filter(pc.fill_null(pc.less(t["trial"], 4), False)), part,
                       write_page_checksum=True)
    capsys.readouterr()
    assert main(["check", str(results)]) == 1
    assert "2 were deleted with it" in capsys.readouterr().out
    with pytest.raises(ConfigError, match="sampler"):
        api.tune(GRAPH, trials=6, sources=1, results=str(results), sampler="tpe",
                 references=False)
    assert main(["check", str(results)]) == 1
    assert "2 were deleted with it" in capsys.readouterr().out


def test_a_repair_of_an_older_schemas_directory_is_refused_before_anything_moves(tmp_path,
                                                                                 capsys):
    """A row edited in a directory of an older results schema: `check --repair` had set the
    row aside, then refused to write the journal's record back (this version writes another
    schema), leaving the trial out of every reader (probe STOREREAD)."""
    results = tmp_path / "r"
    tune(results, trials=4)
    manifest = results / "_warpsweep.json"
    body = json.loads(manifest.read_text())
    manifest.write_text(json.dumps({**body, "schema_version": body["schema_version"] - 1}))
    before = {p: p.read_bytes() for p in results.rglob("*") if p.is_file()}
    line = _error_line(capsys, ["check", str(results), "--repair"])
    assert line.startswith("warpsweep: error: --repair: results directory") and (
        "repair it with the warpsweep that wrote it" in line)
    assert {p: p.read_bytes() for p in results.rglob("*") if p.is_file()} == before


def _error_line(capsys, argv):
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


def test_a_row_the_repair_writes_back_is_not_called_lost_in_the_same_run(tmp_path, capsys):
    """A journal behind the rows (set aside to be rebuilt) and ahead of them (a row it
    records is missing): the repair wrote the row back, then its check of the marks, on the
    rows as read before, called it deleted with nothing left to write it from (review
    CR29)."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    results = tmp_path / "r"
    tune(results, trials=6)
    rows = read_trials(str(results)).num_rows
    for part in (results / "trials").rglob("part-*.parquet"):
        t = pq.read_table(part)
        pq.write_table(t.filter(pc.fill_null(pc.not_equal(t["trial"], 1), True)), part,
                       write_page_checksum=True)
    journal = journal_of(results)
    lines = journal.read_text().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if json.loads(line).get("op_code") == 8
              and (json.loads(line)["user_attr"].get("record") or {}).get("trial") == 3)
    journal.write_text("".join(lines[:at]))
    capsys.readouterr()
    assert main(["check", str(results), "--repair"]) == 0
    out = capsys.readouterr().out
    assert "wrote 1 row(s) from it" in out and "nothing is left to write" not in out
    assert read_trials(str(results)).num_rows == rows


@pytest.mark.parametrize("damage", ["replay-breaking line", "line garbled in place"])
def test_a_journal_that_no_longer_replays_gives_up_its_recorded_results(tmp_path, capsys,
                                                                        damage):
    """A line Optuna's replay cannot take (`{"op_code": 6}`: valid JSON and op code), or a
    trial's create line damaged in place (the trials after it numbered otherwise): the repair
    had set the whole journal aside, or called the results after the line lost, and said
    "all repaired" (review CR30). The results its lines record are written from the lines
    themselves before the journal is set aside; the next run rebuilds it from the rows."""
    results, rows, journal, lines = _tuned_with_rows_lost(tmp_path)
    if damage == "replay-breaking line":
        lines.insert(len(lines) // 2, '{"op_code": 6}\n')
    else:
        at = [i for i, line in enumerate(lines) if json.loads(line).get("op_code") == 4][3]
        lines[at] = "garbage {damaged line\n"
    journal.write_text("".join(lines))
    capsys.readouterr()
    _repaired_whole_and_resumed(results, rows)




def _records_of(lines, trial):
    return [i for i, line in enumerate(lines) if json.loads(line).get("op_code") == 8
            and (json.loads(line)["user_attr"].get("record") or {}).get("trial") == trial]


@pytest.mark.parametrize("damage", ["renumbered", "values edited", "a damaged record after",
                                    "another study's record after"])
def test_a_repair_writes_every_result_a_damaged_journals_lines_record(tmp_path, capsys,
                                                                     damage):
    """Journals whose replay is no reading of them (review CR31): one that replays with its
    trials renumbered (a create line naming another study), one whose values were edited,
    one with a record that is no record after a trial's valid one (a traceback in check and
    tune), one with another study's record after it. The repair writes every result their
    lines validly record before setting them aside; tune refuses in one line; nothing lost."""
    results, rows, journal, lines = _tuned_with_rows_lost(tmp_path)
    if damage == "renumbered":
        at = [i for i, line in enumerate(lines) if json.loads(line).get("op_code") == 4][0]
        lines[at] = lines[at].replace('"study_id":0', '"study_id":7')
    elif damage == "values edited":
        at = [i for i, line in enumerate(lines) if json.loads(line).get("op_code") == 6
              and json.loads(line).get("values")][1]
        log = json.loads(lines[at])
        lines[at] = json.dumps({**log, "values": [v * 2 for v in log["values"]]}) + "\n"
    else:
        at = _records_of(lines, 3)[-1]
        log = json.loads(lines[at])
        record = dict(log["user_attr"]["record"])
        if damage == "a damaged record after":
            record.update(state="failed", values=None, error="RuntimeError: boom")
        else:
            record["study_key"] = "another.study.key"
        lines.insert(at + 1, json.dumps({**log, "user_attr": {"record": record}}) + "\n")
    journal.write_text("".join(lines))
    capsys.readouterr()
    if damage in ("a damaged record after", "another study's record after"):
        with pytest.raises(ConfigError, match="record is (damaged|of study another)"):
            tune(results, trials=6)
    _repaired_whole_and_resumed(results, rows)


@pytest.mark.parametrize("number", [999, 4])
def test_a_record_edited_to_name_another_trial_is_no_result(tmp_path, capsys, number):
    """Trial 3's record edited to name trial 999, or trial 4: the repair had written a
    phantom row copying trial 3's result (check not clean after it), or passed the journal
    and then refused its own write (review CR32). Such a record is no result: tune refuses
    the journal in one line, the repair writes every other record's row and sets it aside,
    and the mark's count of the one it could not trust is said and moved."""
    results, rows, journal, lines = _tuned_with_rows_lost(tmp_path)
    (at,) = _records_of(lines, 3)
    log = json.loads(lines[at])
    record = {**log["user_attr"]["record"], "trial": number}
    lines[at] = json.dumps({**log, "user_attr": {"record": record}}) + "\n"
    journal.write_text("".join(lines))
    with pytest.raises(ConfigError, match="trial 3's record names trial"):
        tune(results, trials=6)
    capsys.readouterr()
    assert main(["check", str(results)]) == 1
    assert main(["check", str(results), "--repair"]) == 0
    table = read_trials(str(results))
    assert table.num_rows == rows - 1 and 3 not in table.column("trial").to_pylist()
    assert number not in table.column("trial").to_pylist() or number == 4
    assert main(["check", str(results)]) == 0
    tune(results, trials=8)
    assert_sound(results, budget=8)
    assert main(["check", str(results)]) == 0
