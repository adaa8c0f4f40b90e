"""Where a results directory lives: a local path, or any URI pyarrow's filesystems take
(``s3://bucket/prefix``, ``gs://...``, ``file:///...``).

Parquet files and the manifest go through the pyarrow filesystem. Optuna journals need a local
file (appends, locks, fsync): for a remote location they live in a local mirror directory and
are uploaded whenever the results are flushed, and downloaded when a study resumes on a machine
that has no local copy.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shlex
import socket
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.fs as pafs

from simulator.errors import ConfigError
from simulator.temp_files import beside
from tuner.results.schema import STUDIES

JOURNALS_ENV = "WARPSWEEP_JOURNAL_DIR"
_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
# pyarrow's GCS client retries a failing request for 15 minutes by default, so a machine without
# credentials or network sat silent that long before its first error; a URI's own
# ?retry_limit_seconds=N still wins
GCS_RETRY_LIMIT_S = 20


def _bounded_retries(uri: str) -> str:
    """A ``gs://`` URI with a bound on its requests' retries (``GCS_RETRY_LIMIT_S``) where it
    names none; any other URI as it is."""
    scheme = uri.split("://", 1)[0].lower()
    if scheme not in ("gs", "gcs") or "retry_limit_seconds=" in uri:
        return uri
    return f"{uri}{'&' if '?' in uri else '?'}retry_limit_seconds={GCS_RETRY_LIMIT_S}"


def home_path(text: str | Path, option: str = "--results") -> Path:
    """``text`` with a leading ``~`` or ``~user`` read as a shell reads it; one line for a
    user this machine does not know (a traceback before, review CR25)."""
    try:
        return Path(text).expanduser()
    except RuntimeError:
        if str(text) == "~" or str(text).startswith("~/"):
            raise ConfigError(f"{option} {str(text)!r}: no home directory is known here "
                              "(HOME is unset and this user has no entry)") from None
        raise ConfigError(f"{option} {str(text)!r}: no such user's home directory here") from None


def default_home_path(variable: str, default: str) -> Path:
    """The path ``variable`` names (``home_path``), else ``default`` under the home; one
    line naming the variable to set where neither can be read."""
    given = os.environ.get(variable, "").strip()  # blank is unset (not a directory " ")
    if given:
        return home_path(given, variable)
    return home_path(default, f"the default (set {variable} to choose another)")


def home_of(value: Any, option: str) -> Any:
    """An option's path with a leading ``~`` read as home (``home_path``), of the type it
    was given (str or Path); any other value as it is."""
    if isinstance(value, str | Path) and str(value).startswith("~"):
        expanded = home_path(value, option)
        return expanded if isinstance(value, Path) else str(expanded)
    return value


@dataclass(frozen=True)
class Location:
    """A results directory: its filesystem and the root path inside it."""

    text: str
    fs: pafs.FileSystem
    root: str
    local: bool

    @classmethod
    def of(cls, results: str | Path | Location) -> Location:
        """Parse ``--results``: a URI goes to pyarrow, anything else is a local path."""
        if isinstance(results, Location):
            return results
        text = str(results)
        if not text.strip():  # '' would be the current directory, taken without saying so
            raise ConfigError("--results is empty; give a directory or a URI")
        if _URI.match(text):
            if "#" in text:  # a fragment, which pyarrow drops with what follows it
                raise ConfigError(f"--results {text!r}: a '#' in a URI starts a fragment, "
                                  "which would be cut off with all after it (the prefix and "
                                  "any ?endpoint_override=...); write it as %23")
            try:
                fs, root = pafs.FileSystem.from_uri(_bounded_retries(text))
            except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
                raise ConfigError(f"--results {text!r}: not a location pyarrow can open "
                                  f"({' '.join(str(exc).split())[:200]})") from None
            local = isinstance(fs, pafs.LocalFileSystem)
            if not root.strip("/"):
                raise ConfigError(f"--results {text!r}: give a bucket or directory after the "
                                  "scheme, e.g. s3://my-bucket/sweeps")
            return cls(text, fs, root.rstrip("/"), local)
        # ~ as a shell would read it: a notebook's "~/res" had made a directory named "~"
        return cls(text, pafs.LocalFileSystem(), str(home_path(text).absolute()), True)

    def path(self, *parts: str) -> str:
        """A path inside the location."""
        return "/".join([self.root, *parts]) if parts else self.root

    def local_path(self) -> Path:
        """The local directory (local locations only)."""
        return Path(self.root)

    # -- files -----------------------------------------------------------------------------
    def kind(self, path: str) -> pafs.FileType:
        """What is at ``path`` (NotFound, File or Directory); a location that cannot be
        reached (credentials, network, a missing bucket) is a ConfigError naming it."""
        try:
            return self.fs.get_file_info(path).type
        except (OSError, ValueError) as exc:
            raise ConfigError(f"--results {self.text!r}: cannot reach it "
                              f"({' '.join(str(exc).split())[:200]})") from None

    def read_text(self, path: str) -> str | None:
        """A small file's text, or None if there is none."""
        if self.kind(path) != pafs.FileType.File:
            return None
        with self.fs.open_input_stream(path) as f:
            return f.read().decode()

    def write_bytes(self, path: str, data: bytes) -> None:
        """Write a whole file so that a reader sees all of it or nothing: a temp file and a
        rename on a local disk, one PUT on an object store."""
        parent = path.rsplit("/", 1)[0]
        if self.local:
            Path(parent).mkdir(parents=True, exist_ok=True)
            tmp = beside(path, f"{uuid.uuid4().hex[:8]}.tmp")
            try:
                tmp.write_bytes(data)
                os.replace(tmp, path)
            finally:
                # a read-only disk refuses the unlink too: the write's error is the one to say
                with contextlib.suppress(OSError):
                    tmp.unlink(missing_ok=True)
            return
        self.fs.create_dir(parent, recursive=True)
        with self.fs.open_output_stream(path) as f:
            f.write(data)

    def files(self, prefix: str, suffix: str = "") -> list[str]:
        """Finished files under ``prefix`` (names starting with a dot are in-progress)."""
        selector = pafs.FileSelector(self.path(prefix), recursive=True, allow_not_found=True)
        found = [i.path for i in self.fs.get_file_info(selector)
                 if i.type == pafs.FileType.File]
        return sorted(p for p in found
                      if p.endswith(suffix) and not p.rsplit("/", 1)[-1].startswith("."))

    def journals(self) -> dict[str, str]:
        """Study key -> its journal's path (the results' own copies; for a bucket, objects)."""
        return {p.rsplit("/", 1)[-1][: -len(".journal")]: p
                for p in self.files(STUDIES, ".journal")}

    def saved_marks(self) -> dict[str, str]:
        """Study key -> its journal's path, for every study with a saved mark
        (``tuner.results.journal.saved_mark_path``), its journal there or not."""
        return {p.rsplit("/", 1)[-1][: -len(".journal.saved")]: p[: -len(".saved")]
                for p in self.files(STUDIES, ".journal.saved")}

    def ensure_dir(self) -> None:
        """Create the root directory (object stores need none, but buckets must exist)."""
        if self.local:
            Path(self.root).mkdir(parents=True, exist_ok=True)
        else:
            if self.kind(self.root) == pafs.FileType.File:  # as a local file is refused
                raise ConfigError(f"results location {self.text!r} is an object, not a "
                                  "prefix of objects: name another")
            self.fs.create_dir(self.root, recursive=True)

    # -- journals --------------------------------------------------------------------------
    def journal_dir(self) -> Path:
        """Where the study journals are kept on this machine."""
        if self.local:
            return Path(self.root) / STUDIES
        cache = default_home_path(JOURNALS_ENV, "~/.cache/warpsweep/journals")
        digest = hashlib.sha256(self.text.encode()).hexdigest()[:16]
        return cache / digest

    def pull_journal(self, local: Path) -> bool:
        """Before a study opens: fetch its journal from a remote location where this machine
        has none (a resume elsewhere), or one the bucket's copy does not begin (another
        machine's run wrote the study since: a local copy ahead of the bucket's, a run here
        that stopped before its upload, is kept). A copy set aside is kept beside it as
        ``.diverged-<time>``: pushed back, it had overwritten the study's journal in the
        bucket. Whether the bucket holds the study's journal (a local location: True)."""
        if self.local:
            return True
        remote = self.path(STUDIES, local.name)
        if self.kind(remote) != pafs.FileType.File:
            return False
        with self.fs.open_input_stream(remote) as f:
            data = f.read()
        if local.exists():
            if local.read_bytes().startswith(data):
                return True
            os.replace(local, local.with_name(f"{local.name}.diverged-{time.time_ns()}"))
        local.parent.mkdir(parents=True, exist_ok=True)
        tmp = beside(local)
        tmp.write_bytes(data)
        os.replace(tmp, local)
        return True

    # -- a remote study's lease ------------------------------------------------------------
    # A journal's flock holds off a second run of a study on one machine only; a study in a
    # bucket is held by a lease object beside its journal, renewed with every upload. Object
    # stores have no lock: a lease is written, then read back (the last writer's stands), and
    # each renewal checks it is still this run's, so that two runs racing for a study end
    # with one stopped loudly, not one's results silently overwritten.
    def take_lease(self, key: str) -> str | None:
        """This run's lease on study ``key`` in a remote location (None for a local one); a
        ConfigError naming the holder where another run holds it."""
        if self.local:
            return None
        path = self.path(STUDIES, f"{key}.lease")
        held = self._read_lease(path)
        if held is not None and _lease_alive(held):
            raise ConfigError(_in_use(key, held, path))
        lease = {"run": uuid.uuid4().hex, "host": socket.gethostname(), "pid": os.getpid(),
                 "heartbeat": time.time()}
        self.write_bytes(path, json.dumps(lease).encode())
        back = self._read_lease(path)
        if back is None or back.get("run") != lease["run"]:
            raise ConfigError(_in_use(key, back or {}, path))
        return lease["run"]

    def renew_lease(self, key: str, run: str | None) -> None:
        """Before an upload: refresh the lease, or a ConfigError where another run took it
        (this run's lease lapsed): its uploads would overwrite the other's."""
        if self.local or run is None:
            return
        path = self.path(STUDIES, f"{key}.lease")
        held = self._read_lease(path)
        if held is None or held.get("run") != run:
            raise ConfigError(
                f"study {key}: another run took its lease in {self.text} "
                f"({_holder(held or {})}) while this one ran: this run stops without "
                "uploading over it; its journal stays on this machine "
                f"({self.journal_dir()})")
        held["heartbeat"] = time.time()
        self.write_bytes(path, json.dumps(held).encode())

    def release_lease(self, key: str, run: str | None) -> None:
        """Give the lease up (if it is still this run's)."""
        if self.local or run is None:
            return
        path = self.path(STUDIES, f"{key}.lease")
        held = self._read_lease(path)
        if held is not None and held.get("run") == run:
            self.fs.delete_file(path)

    def _read_lease(self, path: str) -> dict | None:
        text = self.read_text(path)
        if text is None:
            return None
        try:
            held = json.loads(text)
        except ValueError:
            return {}  # a torn or foreign object: no run's, lapsed
        return held if isinstance(held, dict) else {}

    def push_journal(self, local: Path) -> None:
        """After a flush: upload a study's journal to a remote location."""
        if self.local or not local.exists():
            return
        self.write_bytes(self.path(STUDIES, local.name), local.read_bytes())


# A remote study's lease lapses this long after its run last renewed it (a run renews it with
# every upload, some every few seconds while results come): then another run may take it.
LEASE_S = 600.0


def _lease_alive(held: dict) -> bool:
    """Whether a lease still holds: renewed within ``LEASE_S``, and (taken on this machine)
    its process still running, and another than this one (which runs a study once at a
    time)."""
    beat = held.get("heartbeat")
    if not isinstance(beat, int | float) or time.time() - beat > LEASE_S:
        return False
    if held.get("host") == socket.gethostname() and isinstance(held.get("pid"), int):
        if held["pid"] == os.getpid():  # a run of this process that stopped before its end
            return False
        try:
            os.kill(held["pid"], 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
    return True


def _holder(held: dict) -> str:
    beat = held.get("heartbeat")
    ago = f", last heard from {time.time() - beat:.0f} s ago" if isinstance(
        beat, int | float) else ""
    return f"host {held.get('host', '?')}, pid {held.get('pid', '?')}{ago}"


def _in_use(key: str, held: dict, path: str) -> str:
    return (f"study {key} is in use by another warpsweep run ({_holder(held)}): wait for it, "
            f"or use another --results; a run that died gives its lease up {LEASE_S:.0f} s "
            f"after its last word (or delete {path})")


def shell_word(path: str | Path) -> str:
    """``path`` as one word of a command to paste into a shell: quoted, and led by ``./``
    where it begins with a dash (a results directory named ``-res`` is no option then)."""
    text = str(path)
    return shlex.quote(f"./{text}" if text.startswith("-") else text)
