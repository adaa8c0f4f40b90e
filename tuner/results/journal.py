"""The Optuna journal of one study, owned by one driver for the length of a run.

Same file format as ``optuna.storages.journal.JournalFileBackend`` (one JSON log per line), so
``optuna.storages.JournalStorage(JournalFileBackend(path))`` reads it for analysis. It differs
in three ways that take the per-trial bookkeeping from ~7 fsyncs and lock files to none:

- an exclusive ``flock`` on ``PATH.flock`` is held for the whole run (a second driver on the
  same study is refused; the kernel releases it when the process dies, so nothing goes stale);
- appends are written to the OS at once (a killed process loses nothing) and fsynced by
  ``sync()``, which the runner calls with every results flush (every few seconds);
- logs are served to Optuna from memory; a line torn by a crash is cut off on open.

Beside it, ``PATH.saved`` holds how far the journal ran when the study's rows last reached the
disk. A journal that grew past it, with no run holding it, ends in results the rows lack (a run
killed between flushes): ``unsaved_results`` names them for every reader of the rows.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
from collections.abc import Iterable
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from optuna.storages.journal import BaseJournalBackend

from simulator.errors import ConfigError
from simulator.errors import WarpsweepWarning
from tuner.results.location import shell_word

# Optuna's journal operations (``JournalOperation``): a line with another code is not its.
_OP_CODES = range(11)
_SET_STUDY_USER_ATTR = 2  # a reference's result (study attribute "ref:LABEL")
_SET_TRIAL_USER_ATTR = 8  # a trial's result (trial attribute "record")


class UnreadableJournal(ConfigError):
    """A study journal whose lines are not Optuna's journal records (damaged, or written
    by something else): named in one line, with the repair that sets it aside."""

    def __init__(self, path: Path, reason: str, results: str | None = None) -> None:
        # a local results directory's journals are RESULTS/studies/KEY.journal
        results = shell_word(str(results if results is not None else path.parent.parent))
        super().__init__(
            f"study journal {path} is unreadable ({' '.join(reason.split())[:150]}): run "
            f"`warpsweep check {results} --repair` to set it aside (the next run rebuilds "
            "it from the rows)")


def _parsed_logs(data: bytes) -> list[dict[str, Any]]:
    """A journal's complete lines as Optuna's records; ValueError naming the first line
    that is none."""
    logs = []
    for number, line in enumerate(data.splitlines(), 1):
        if not line.strip():
            continue
        problem = journal_line_problem(line)
        if problem is not None:
            raise ValueError(f"line {number}: {problem}")
        logs.append(json.loads(line))
    return logs


def journal_line_problem(line: bytes) -> str | None:
    """Why a journal's line is no Optuna journal operation (None: it is one, or blank)."""
    if not line.strip():
        return None
    try:
        log = json.loads(line)
    except ValueError as exc:
        return str(exc)
    if not isinstance(log, dict) or log.get("op_code") not in _OP_CODES:
        return "no journal operation"
    return None


class DriverJournal(BaseJournalBackend):
    """A study's journal file, locked by this process until ``close``."""

    def __init__(self, path: str | Path, results: str | None = None) -> None:
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._lock = open(f"{self.path}.flock", "a")  # noqa: SIM115 - held until close()
        except (PermissionError, OSError) as exc:
            if not isinstance(exc, PermissionError) and exc.errno != errno.EROFS:
                raise
            raise ConfigError(
                f"cannot write the study journal under {str(self.path.parent)!r} "
                f"({exc.strerror or exc}): tune and sweep write their journal and rows in the "
                "results directory (readers such as best and query need only read it)"
            ) from None
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._lock.close()
            raise ConfigError(
                f"study journal {str(self.path)!r} is in use by another warpsweep process "
                "(wait for it, or use another --results directory)"
            ) from None
        if self.path.is_symlink() and not self.path.exists():
            # (its appends had made the link's target, outside the results directory)
            self._lock.close()
            raise ConfigError(
                f"study journal {str(self.path)!r} is a link to {os.readlink(self.path)}, "
                "which is not there (a disk not mounted?): mount it, or move the link aside")
        data = self.path.read_bytes() if self.path.exists() else b""
        cut = data.rfind(b"\n") + 1
        if cut < len(data):  # a line torn by a crash: drop it before appending more
            with open(self.path, "r+b") as f:
                f.truncate(cut)
        try:
            self._logs: list[dict[str, Any]] = _parsed_logs(data[:cut])
        except ValueError as exc:
            self._lock.close()  # closing it releases the lock
            raise UnreadableJournal(self.path, str(exc), results) from None
        self._base = 0  # log number of self._logs[0]
        self._file = open(self.path, "ab")  # noqa: SIM115 - held until close()
        self._dirty = False
        if cut == 0:  # a new journal: a kill before its first flush shows too
            mark_saved(self.path, 0, rows=0)

    def read_logs(self, log_number_from: int) -> Iterable[dict[str, Any]]:
        """Logs from ``log_number_from`` on (Optuna asks in increasing order only)."""
        start = max(0, log_number_from - self._base)
        out = self._logs[start:]
        if start:
            del self._logs[:start]  # already replayed; never asked for again
            self._base += start
        return out

    def append_logs(self, logs: list[dict[str, Any]]) -> None:
        """Write the logs to the file (to the OS, not yet fsynced) and keep a parsed copy."""
        text = "".join(json.dumps(log, separators=(",", ":")) + "\n" for log in logs)
        self._file.write(text.encode("utf-8"))
        self._file.flush()
        self._logs.extend(json.loads(line) for line in text.splitlines())
        self._dirty = True

    def sync(self) -> None:
        """fsync what was appended since the last sync."""
        if self._dirty and not self._file.closed:
            os.fsync(self._file.fileno())
            self._dirty = False

    def mark_saved(self, rows: int | None = None) -> None:
        """Record that every result in the journal so far is in the study's rows (called
        once they are written), and how many rows (results) that is, where known."""
        if not self._file.closed:
            self.sync()
            mark_saved(self.path, self._file.tell(), rows)

    def close(self) -> None:
        """Sync, close the file and release the lock."""
        if self._file.closed:
            return
        try:
            self.sync()
        finally:  # a failing fsync still releases the journal
            self._file.close()
            fcntl.flock(self._lock, fcntl.LOCK_UN)
        self._lock.close()


class UnsavedResults(WarpsweepWarning):
    """A study's journal holds results its rows lack (``unsaved_results``, ``unsaved_line``)."""


def saved_mark_path(journal: Path) -> Path:
    """Where a journal's saved mark lives (``PATH.saved``)."""
    return journal.with_name(f"{journal.name}.saved")


def mark_saved(journal: Path, length: int, rows: int | None = None) -> None:
    """Record that the journal's first ``length`` bytes hold no result the rows lack, and
    that the rows then held ``rows`` results of the study (None: not counted)."""
    mark = saved_mark_path(journal)
    tmp = mark.with_name(f".{mark.name}.tmp")
    saved: dict[str, int] = {"bytes": int(length)}
    if rows is not None:
        saved["rows"] = int(rows)
    tmp.write_text(json.dumps(saved))
    os.replace(tmp, mark)


def _held(journal: Path) -> bool:
    """Whether a run holds the journal now (its ``flock``)."""
    try:
        with open(f"{journal}.flock", "rb") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            fcntl.flock(lock, fcntl.LOCK_UN)
    except OSError:  # no lock file, or none readable: no run of this machine holds it
        return False
    return False


def unsaved_results(journals: dict[str, str]) -> dict[str, set[tuple[str, Any]]]:
    """Per study (``journals``: key -> local journal path) whose journal grew past its saved
    mark while no run holds it (its last run ended between flushes: killed), the results
    recorded after the mark, as (role, trial number or reference label): those the rows may
    lack. A journal of no mark (an older warpsweep's: it marked none) is read whole, its
    results all ones the rows may lack (it had said nothing: a study's rows deleted, the
    readers left its results out without a word, probe COMPAT)."""
    out: dict[str, set[tuple[str, Any]]] = {}
    for key, path in sorted(journals.items()):
        journal = Path(path)
        try:
            size = journal.stat().st_size
        except OSError:
            continue
        try:
            mark = json.loads(saved_mark_path(journal).read_text())["bytes"]
        except FileNotFoundError:
            mark = 0  # (a journal gets its mark when it is made: no mark, an old one)
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if not isinstance(mark, int) or size <= mark or _held(journal):
            continue
        try:
            with open(journal, "rb") as f:
                f.seek(mark)
                tail = f.read()
        except OSError:  # unreadable here: nothing to say of it (`check` reads it)
            continue
        recorded = set(recorded_results(tail[:tail.rfind(b"\n") + 1].decode(errors="replace")))
        if recorded:
            out[key] = recorded
    return out


def recorded_results(text: str) -> Iterator[tuple[str, Any]]:
    """The results a journal's text records, as (role, trial number or reference label);
    lines that are no record this reads are passed over (`warpsweep check` judges them).
    A trial recorded but still running (its run killed before its state) counts: a resume
    tells it from the record and writes its row, as `check --repair` does."""
    for key, _ in _records(text):
        yield key


def recorded_records(text: str) -> list[tuple[tuple[str, Any], dict[str, Any]]]:
    """Every record a journal's text holds, in its order, with its (role, trial number or
    reference label): read from the lines themselves, so a journal that no longer replays (a
    line damaged in place) still gives every result it recorded."""
    return list(_records(text))


def _records(text: str) -> Iterator[tuple[tuple[str, Any], dict[str, Any]]]:
    for line in text.splitlines():
        if '"record"' not in line and '"ref:' not in line:
            continue
        try:
            log = json.loads(line)
            attrs = log.get("user_attr") or {}
            if log.get("op_code") == _SET_TRIAL_USER_ATTR and "record" in attrs:
                # a study's journal numbers its trials as their ids: a record naming another
                # trial than its line's is an edit, no result (review CR32: a phantom row)
                if log.get("trial_id") not in (None, attrs["record"]["trial"]):
                    continue
                yield ("trial", attrs["record"]["trial"]), attrs["record"]
            elif log.get("op_code") == _SET_STUDY_USER_ATTR:
                yield from ((("reference", name[len("ref:"):]), value)
                            for name, value in attrs.items() if name.startswith("ref:"))
        except (ValueError, AttributeError, TypeError, KeyError):
            continue


def records_a_result(text: str) -> bool:
    """Whether a journal's text records a trial's or a reference's result (a run refused as
    its study began leaves one that records none: nothing to resume or write rows from)."""
    return next(recorded_results(text), None) is not None


def saved_rows(journals: dict[str, str]) -> dict[str, int]:
    """Per study (``journals``: key -> local journal path) that no run holds now, how many
    results its rows held when they were last saved (its mark's count; studies of a mark
    without one are left out)."""
    out: dict[str, int] = {}
    for key, path in sorted(journals.items()):
        try:
            rows = json.loads(saved_mark_path(Path(path)).read_text()).get("rows")
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(rows, int) and not isinstance(rows, bool) and rows > 0 and not _held(
                Path(path)):
            out[key] = rows
    return out


def lost_rows_line(key: str, lost: int, saved: int, results: str) -> str:
    """What a reader of the rows says of a study whose rows hold ``lost`` fewer results
    than the ``saved`` they held when its run last saved them."""
    return (f"study {key}: its rows hold {saved - lost} result(s) where they held {saved} "
            f"when its run saved them: {lost} were deleted or moved since (a rows file "
            "removed?); what is read here leaves them out until `warpsweep check "
            f"{shell_word(results)} --repair` writes them again from the journal")


def lost_for_good_line(key: str, lost: int, saved: int) -> str:
    """What is said of a study whose journal is gone and whose rows hold ``lost`` fewer
    results than the ``saved`` they held when its run last saved them."""
    return (f"study {key}: its journal is gone and its rows hold {saved - lost} result(s) "
            f"where they held {saved} when its run saved them: {lost} were deleted with it, "
            "and nothing is left to write them from (the next tune of the study rebuilds its "
            "journal from the rows left and runs new trials in their place)")


def unsaved_line(key: str, missing: int, results: str) -> str:
    """What a reader of the rows says of a study whose journal holds ``missing`` results
    they lack."""
    return (f"study {key}: its journal holds {missing} result(s) these rows lack, written "
            "after they were last saved (its last run was killed between flushes?): what "
            "is read here leaves them out until the same tune command runs again (it writes "
            f"them first) or `warpsweep check {shell_word(results)} --repair` writes them")


class MergedJournals(BaseJournalBackend):
    """Every study journal of a results directory as one read-only journal: what
    ``warpsweep dashboard`` gives optuna-dashboard, which opens one storage.

    Each file numbers its study and trials from 0; read in turn, each file's study and trial
    ids are renumbered to the next free ones as its create operations come (the order
    ``JournalStorage`` assigns ids in). Files are re-read for what was appended since (a
    study being tuned: the view is live); a last line not yet complete waits for its end.
    """

    STUDY_OPS = frozenset({0})   # create_study
    TRIAL_OPS = frozenset({4})   # create_trial

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        self._logs: list[dict[str, Any]] = []
        self._read: dict[Path, int] = {}  # bytes consumed per file
        self._studies: dict[Path, list[int]] = {}  # per file: local study id -> global
        self._trials: dict[Path, list[int]] = {}
        self._next_study = 0
        self._next_trial = 0
        self._names: set[str] = set()

    def _refresh(self) -> None:
        for path in sorted(self.directory.glob("*.journal")):
            done = self._read.get(path, 0)
            try:
                with open(path, "rb") as f:
                    f.seek(done)
                    data = f.read()
            except OSError:
                continue
            cut = data.rfind(b"\n") + 1
            self._read[path] = done + cut
            studies = self._studies.setdefault(path, [])
            trials = self._trials.setdefault(path, [])
            for line in data[:cut].splitlines():
                if not line.strip():
                    continue
                log = json.loads(line)
                if "study_id" in log and log.get("op_code") not in self.STUDY_OPS:
                    local = log["study_id"]
                    log["study_id"] = studies[local] if local < len(studies) else -1
                if "trial_id" in log:
                    local = log["trial_id"]
                    log["trial_id"] = trials[local] if local < len(trials) else -1
                if log.get("op_code") in self.STUDY_OPS:
                    if log.get("study_name") in self._names:  # a copy: Optuna ignores it
                        studies.append(-1)
                    else:
                        self._names.add(log.get("study_name"))
                        studies.append(self._next_study)
                        self._next_study += 1
                elif log.get("op_code") in self.TRIAL_OPS:
                    if log["study_id"] < 0:  # a trial of no study: Optuna numbers nothing
                        trials.append(-1)
                    else:
                        trials.append(self._next_trial)
                        self._next_trial += 1
                self._logs.append(log)

    def read_logs(self, log_number_from: int) -> Iterable[dict[str, Any]]:
        """Logs from ``log_number_from`` on, after reading what the files gained."""
        self._refresh()
        return self._logs[log_number_from:]

    def append_logs(self, logs: list[dict[str, Any]]) -> None:
        """Refused: the journals are written by the tuner only."""
        raise ConfigError("the merged study journals are read-only")
