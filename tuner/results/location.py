"""Where a results directory lives: a local path, or any URI pyarrow's filesystems take
(``s3://bucket/prefix``, ``gs://...``, ``file:///...``).

Parquet files and the manifest go through the pyarrow filesystem. Optuna journals need a local
file (appends, locks, fsync): for a remote location they live in a local mirror directory and
are uploaded whenever the results are flushed, and downloaded when a study resumes on a machine
that has no local copy.
"""

from __future__ import annotations

import hashlib
import os
import re
import uuid
from dataclasses import dataclass
from pathlib import Path

import pyarrow.fs as pafs

from simulator.errors import ConfigError
from tuner.results.schema import STUDIES

JOURNALS_ENV = "WARPSWEEP_JOURNAL_DIR"
_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


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
            try:
                fs, root = pafs.FileSystem.from_uri(text)
            except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
                raise ConfigError(f"--results {text!r}: not a location pyarrow can open "
                                  f"({' '.join(str(exc).split())[:200]})") from None
            local = isinstance(fs, pafs.LocalFileSystem)
            if not root.strip("/"):
                raise ConfigError(f"--results {text!r}: give a bucket or directory after the "
                                  "scheme, e.g. s3://my-bucket/sweeps")
            return cls(text, fs, root.rstrip("/"), local)
        return cls(text, pafs.LocalFileSystem(), str(Path(text).absolute()), True)

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
            tmp = Path(parent) / f".{Path(path).name}.{uuid.uuid4().hex[:8]}.tmp"
            try:
                tmp.write_bytes(data)
                os.replace(tmp, path)
            finally:
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

    def ensure_dir(self) -> None:
        """Create the root directory (object stores need none, but buckets must exist)."""
        if self.local:
            Path(self.root).mkdir(parents=True, exist_ok=True)
        else:
            self.fs.create_dir(self.root, recursive=True)

    # -- journals --------------------------------------------------------------------------
    def journal_dir(self) -> Path:
        """Where the study journals are kept on this machine."""
        if self.local:
            return Path(self.root) / STUDIES
        base = os.environ.get(JOURNALS_ENV)
        cache = Path(base).expanduser() if base else (
            Path.home() / ".cache" / "warpsweep" / "journals")
        digest = hashlib.sha256(self.text.encode()).hexdigest()[:16]
        return cache / digest

    def pull_journal(self, local: Path) -> None:
        """Before a study opens: fetch its journal from a remote location if this machine has
        none (a resume elsewhere)."""
        if self.local or local.exists():
            return
        remote = self.path(STUDIES, local.name)
        if self.kind(remote) == pafs.FileType.File:
            local.parent.mkdir(parents=True, exist_ok=True)
            with self.fs.open_input_stream(remote) as f:
                data = f.read()
            tmp = local.with_name(f".{local.name}.tmp")
            tmp.write_bytes(data)
            os.replace(tmp, local)

    def push_journal(self, local: Path) -> None:
        """After a flush: upload a study's journal to a remote location."""
        if self.local or not local.exists():
            return
        self.write_bytes(self.path(STUDIES, local.name), local.read_bytes())
