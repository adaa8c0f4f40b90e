"""Readers of the rows say when a study's journal holds results the rows lack: a run killed
between flushes leaves them there, and `best`, `query` and `report` had answered from the rows
alone, without a word (probe RI), until a resume or `check --repair` wrote them."""

from __future__ import annotations

import fcntl
import json
import signal

from tests.tune_process import started_until
from tests.tune_process import tune_argv
from tuner.cli import main
from tuner.results.journal import saved_mark_path
from tuner.results.store import read_trials


def _killed_run(results):
    """A tune run SIGKILLed once its journal holds some results: its journal."""
    proc, journal = started_until(tune_argv(results, 400), results, 8)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert journal is not None, proc.stderr.read().decode()
    return journal


def _warnings(capsys) -> list[str]:
    return [line for line in capsys.readouterr().err.splitlines()
            if line.startswith("warpsweep: warning:")]


def test_a_killed_runs_unsaved_results_are_named_by_the_readers(tmp_path, capsys):
    results = tmp_path / "r"
    journal = _killed_run(results)
    recorded = journal.read_text().count('"record"')
    rows = read_trials(results)
    missing = recorded - (0 if rows is None else rows.num_rows)
    assert missing > 0  # killed before its rows caught up (a flush is every 2 s)
    for argv in (["best", "--results", str(results)],
                 ["query", "--results", str(results), "SELECT count(*) FROM trials"]):
        main(argv)
        said = _warnings(capsys)
        assert len(said) == 1 and f"holds {missing} result(s) these rows lack" in said[0]
        assert "check" in said[0] and "--repair" in said[0]
    # a run holding the journal writes them as it goes: nothing to say of it
    with open(f"{journal}.flock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        main(["best", "--results", str(results)])
        assert _warnings(capsys) == []
    assert main(["check", str(results), "--repair"]) == 0
    capsys.readouterr()
    main(["best", "--results", str(results)])
    assert _warnings(capsys) == []


def test_a_finished_run_and_a_resume_say_nothing(tmp_path, capsys):
    results = tmp_path / "r"
    _killed_run(results)
    argv = tune_argv(results, 12)
    assert main(argv) == 0  # the resume writes the journal's results first
    capsys.readouterr()
    main(["best", "--results", str(results)])
    assert _warnings(capsys) == []
    journal = next((results / "studies").glob("*.journal"))
    assert json.loads(saved_mark_path(journal).read_text())["bytes"] == journal.stat().st_size


def test_results_after_the_mark_that_the_rows_hold_are_not_counted(tmp_path, capsys):
    # a flush that the store's row limit starts saves a row before its journal record: the
    # record then follows the mark, its row on disk
    results = tmp_path / "r"
    assert main(tune_argv(results, 6)) == 0
    journal = next((results / "studies").glob("*.journal"))
    saved_mark_path(journal).write_text(json.dumps({"bytes": 0}))
    capsys.readouterr()
    main(["query", "--results", str(results), "SELECT count(*) FROM trials"])
    assert _warnings(capsys) == []


def test_report_names_a_killed_runs_unsaved_results_once(tmp_path, capsys):
    """A report reads the results three times, and had said the warning three times (probe
    CR): a finished study, then a resume of it killed before its first flush."""
    results = tmp_path / "r"
    assert main(tune_argv(results, 6)) == 0
    journal = next((results / "studies").glob("*.journal"))
    done = journal.read_text().count('"record"')
    proc, _ = started_until(tune_argv(results, 400), results, done + 3)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    capsys.readouterr()
    main(["report", "--results", str(results), "--out", str(tmp_path / "out")])
    said = _warnings(capsys)
    assert len(said) == 1 and "result(s) these rows lack" in said[0]


def test_rows_deleted_after_they_were_saved_are_named_by_the_readers(tmp_path, capsys):
    """A rows file deleted once its run had saved it: `best`, `query` and `report` had
    answered from the rest without a word (probe RES: 97 rows of 127, a worse best), the
    journal's results all before its mark. The mark counts the rows it saw saved."""
    results = tmp_path / "r"
    assert main(tune_argv(results, 12)) == 0
    capsys.readouterr()
    main(["best", "--results", str(results)])
    before = capsys.readouterr().out
    (rows,) = list((results / "trials").rglob("*.parquet"))
    held = read_trials(results).num_rows
    rows.unlink()
    for argv in (["best", "--results", str(results)],
                 ["query", "--results", str(results), "SELECT count(*) FROM trials"]):
        main(argv)
        said = _warnings(capsys)
        assert len(said) == 1 and f"held {held} when its run saved them" in said[0]
        assert f"{held} were deleted or moved" in said[0] and "--repair" in said[0]
    assert main(["check", str(results), "--repair"]) == 0
    capsys.readouterr()
    main(["best", "--results", str(results)])
    captured = capsys.readouterr()
    assert captured.out == before and "warning" not in captured.err


def test_an_older_warpsweeps_journal_without_a_mark_is_read_whole(tmp_path, capsys):
    """A journal of a warpsweep older than the saved marks, its study's rows lost: every
    reader had left its results out without a word, exit 0 (probe COMPAT)."""
    results = tmp_path / "r"
    assert main(tune_argv(results, 6)) == 0
    journal = next((results / "studies").glob("*.journal"))
    saved_mark_path(journal).unlink()  # as an older warpsweep left it
    capsys.readouterr()
    main(["best", "--results", str(results)])
    assert _warnings(capsys) == []  # its rows hold every result: nothing to say
    recorded = journal.read_text().count('"record"')
    for part in (results / "trials").rglob("*.parquet"):
        part.unlink()
    main(["query", "--results", str(results), "SELECT count(*) FROM trials"])
    said = _warnings(capsys)
    assert len(said) == 1 and f"holds {recorded} result(s) these rows lack" in said[0]


def test_an_unreadable_journal_without_a_mark_does_not_stop_the_readers(tmp_path, capsys):
    """Read whole for want of a mark, a journal that could not be read had made every reader
    fail, exit 1 (review CR25); `check` is where it is judged."""
    results = tmp_path / "r"
    assert main(tune_argv(results, 4)) == 0
    journal = next((results / "studies").glob("*.journal"))
    saved_mark_path(journal).unlink()
    journal.unlink()
    journal.mkdir()  # not readable as a file
    capsys.readouterr()
    assert main(["best", "--results", str(results)]) == 0


def _cut_after_a_record(results, trial: int = 5):
    """The directory of a run killed between trial ``trial``'s record and its state: the
    journal ends at the record (its mark before it), the trial's row not yet written."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    (journal,) = (results / "studies").glob("*.journal")
    lines = journal.read_bytes().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if json.loads(line).get("op_code") == 8
              and json.loads(line)["user_attr"].get("record", {}).get("trial") == trial)
    journal.write_bytes(b"".join(lines[:at + 1]))
    mark = saved_mark_path(journal)
    saved = json.loads(mark.read_text())
    mark.write_text(json.dumps({**saved, "bytes": sum(map(len, lines[:at])),
                                "rows": saved["rows"] - 1}))
    (f,) = (results / "trials").rglob("*.parquet")
    t = pq.read_table(f)
    pq.write_table(t.filter(pc.invert(pc.fill_null(pc.equal(t["trial"], trial), False))), f,
                   write_page_checksum=True)
    return t.num_rows


def test_a_record_whose_trial_is_still_running_is_named_and_written(tmp_path, capsys):
    """A run killed between a trial's record and its state leaves the trial running with
    its result recorded. A resume tells it from the record and writes its row, so the
    readers warn of it and `check --repair` writes it as the resume would (the warning had
    been dropped for such trials, and check had been silent: review CR28)."""
    results = tmp_path / "r"
    argv = ["tune", "--graph", "rmat:scale=7,seed=1", "--algo", "bfs", "--trials", "6",
            "--sources", "1", "--workers", "0", "--sampler", "random", "--results",
            str(results), "-q"]
    assert main(argv) == 0
    rows = _cut_after_a_record(results)
    capsys.readouterr()
    main(["best", "--results", str(results)])
    said = _warnings(capsys)
    assert len(said) == 1 and "holds 1 result(s) these rows lack" in said[0]
    assert main(["check", str(results)]) == 1
    assert "1 recorded result(s) missing from the rows" in capsys.readouterr().out
    assert main(["check", str(results), "--repair"]) == 0
    assert read_trials(results).num_rows == rows
    main(["best", "--results", str(results)])
    assert _warnings(capsys) == []
    assert main(argv) == 0  # the resume tells the trial and writes no second row
    table = read_trials(results)
    assert table.num_rows == rows and sorted(table.column("trial").drop_null().to_pylist()) == (
        sorted(set(table.column("trial").drop_null().to_pylist())))
    assert main(["check", str(results)]) == 0
