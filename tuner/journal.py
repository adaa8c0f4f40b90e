"""The Optuna journal of one study, owned by one driver for the length of a run.

Same file format as ``optuna.storages.journal.JournalFileBackend`` (one JSON log per line), so
``optuna.storages.JournalStorage(JournalFileBackend(path))`` reads it for analysis. It differs
in three ways that take the per-trial bookkeeping from ~7 fsyncs and lock files to none:

- an exclusive ``flock`` on ``PATH.flock`` is held for the whole run (a second driver on the
  same study is refused; the kernel releases it when the process dies, so nothing goes stale);
- appends are written to the OS at once (a killed process loses nothing) and fsynced by
  ``sync()``, which the runner calls with every results flush (every few seconds);
- logs are served to Optuna from memory; a line torn by a crash is cut off on open.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from optuna.storages.journal import BaseJournalBackend

from simulator.errors import ConfigError


class DriverJournal(BaseJournalBackend):
    """A study's journal file, locked by this process until ``close``."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = open(f"{self.path}.flock", "a")  # noqa: SIM115 - held until close()
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._lock.close()
            raise ConfigError(
                f"study journal {str(self.path)!r} is in use by another warpsweep process "
                "(wait for it, or use another --results directory)"
            ) from None
        data = self.path.read_bytes() if self.path.exists() else b""
        cut = data.rfind(b"\n") + 1
        if cut < len(data):  # a line torn by a crash: drop it before appending more
            with open(self.path, "r+b") as f:
                f.truncate(cut)
        self._logs: list[dict[str, Any]] = [
            json.loads(line) for line in data[:cut].splitlines() if line.strip()
        ]
        self._base = 0  # log number of self._logs[0]
        self._file = open(self.path, "ab")  # noqa: SIM115 - held until close()
        self._dirty = False

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

    def close(self) -> None:
        """Sync, close the file and release the lock."""
        if self._file.closed:
            return
        self.sync()
        self._file.close()
        fcntl.flock(self._lock, fcntl.LOCK_UN)
        self._lock.close()
