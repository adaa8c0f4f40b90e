"""The driver-owned study journal: Optuna-compatible file, exclusive lock, torn-line repair."""

from __future__ import annotations

import optuna
import pytest
from optuna.storages import JournalStorage
from optuna.storages.journal import JournalFileBackend

from simulator.errors import ConfigError
from tuner.results.journal import DriverJournal


def make_study(backend, name="s"):
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna.create_study(storage=JournalStorage(backend), study_name=name,
                               load_if_exists=True,
                               sampler=optuna.samplers.RandomSampler(seed=0))


def fill(study, n):
    for _ in range(n):
        trial = study.ask()
        study.tell(trial, trial.suggest_float("x", 0, 1))


def test_file_is_readable_by_optunas_own_backend(tmp_path):
    path = tmp_path / "s.journal"
    journal = DriverJournal(path)
    fill(make_study(journal), 5)
    journal.close()
    stock = make_study(JournalFileBackend(str(path)))
    assert [t.state.name for t in stock.trials] == ["COMPLETE"] * 5
    again = DriverJournal(path)  # and back: resumed with everything
    study = make_study(again)
    assert len(study.trials) == 5
    fill(study, 2)
    assert len(study.trials) == 7
    again.close()


def test_second_driver_on_the_same_study_is_refused(tmp_path):
    path = tmp_path / "s.journal"
    first = DriverJournal(path)
    with pytest.raises(ConfigError, match="in use by another warpsweep process"):
        DriverJournal(path)
    first.close()
    DriverJournal(path).close()  # released on close (and by the kernel on process death)


def test_line_torn_by_a_crash_is_cut_off(tmp_path):
    path = tmp_path / "s.journal"
    journal = DriverJournal(path)
    fill(make_study(journal), 3)
    journal.close()
    with open(path, "ab") as f:
        f.write(b'{"op_code":5,"trial_id"')  # a write interrupted mid-line
    journal = DriverJournal(path)
    study = make_study(journal)
    assert len(study.trials) == 3
    fill(study, 1)
    journal.close()
    assert len(make_study(JournalFileBackend(str(path))).trials) == 4


def test_sync_fsyncs_only_after_appends(tmp_path, monkeypatch):
    import tuner.results.journal as module

    calls = []
    monkeypatch.setattr(module.os, "fsync", lambda fd: calls.append(fd))
    journal = DriverJournal(tmp_path / "s.journal")
    journal.sync()
    assert calls == []
    fill(make_study(journal), 2)
    assert calls == []  # no fsync per append
    journal.sync()
    journal.sync()
    assert len(calls) == 1
    journal.close()


def test_a_read_only_results_directory_is_one_line_naming_it(tmp_path, monkeypatch, capsys):
    """A results directory on a read-only mount had ended tune with a bare '[Errno 30]' and
    exit 1; it is an input the user gave: one line naming it, exit 2."""
    import errno as errno_module

    from tuner.cli import main
    from tuner.results import journal

    def read_only(path, *args, **kwargs):
        raise OSError(errno_module.EROFS, "Read-only file system", str(path))

    monkeypatch.setattr(journal, "open", read_only, raising=False)
    code = main(["tune", "--graph", "rmat:scale=6", "--trials", "2", "--workers", "0",
                 "--sources", "1", "--results", str(tmp_path / "r"), "-q"])
    err = capsys.readouterr().err
    assert code == 2
    assert "cannot write the study journal" in err and "Read-only file system" in err
    assert "Traceback" not in err
