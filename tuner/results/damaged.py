"""Damaged Parquet files under a results directory: find them and name them in one line.

The readers (``query``, ``best``, ``effect``, ``pareto``, ``report``, ``select``) check every
file's footer before they read (cheap: the footer only), so a truncated or empty file is named
at once; damage inside a file's pages shows only when a statement reads those pages, and is then
named by ``reading``, which scans the files whole to find the one that fails.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import weakref
from collections.abc import Iterable
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from simulator.errors import ConfigError
from tuner.results.location import Location
from tuner.results.location import default_home_path
from tuner.results.location import shell_word
from tuner.results.schema import TRIALS
from tuner.results.schema import VALUE_COLUMNS
from tuner.results.schema import objective_columns
from tuner.results.schema import partition_problem
from tuner.results.schema import schema_problem
from tuner.results.schema import type_conflict
from tuner.results.schema import value_problem

REASON_CHARS = 200
# DuckDB's errors that say something about the statement, never about a file's bytes.
_STATEMENT_ERRORS = (duckdb.ParserException, duckdb.BinderException, duckdb.CatalogException,
                     duckdb.PermissionException, duckdb.InterruptException)


class DamagedResults(ConfigError):
    """A results file that cannot be read as Parquet."""

    def __init__(self, path: str | Path, reason: str, results: str | Path | None = None) -> None:
        self.path = str(path)
        self.reason = _one_line(reason)
        where = shell_word(str(results)) if results is not None else "RESULTS"
        super().__init__(f"damaged results file {self.path}: {self.reason} (run `warpsweep "
                         f"check {where} --repair` to set it aside)")


def _one_line(text: str) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= REASON_CHARS else text[:REASON_CHARS - 1] + "…"


def footer_problem(path: str | Path, filesystem: Any = None) -> str | None:
    """Why the file's footer cannot be read (None when it can): empty, truncated, not
    Parquet."""
    try:
        pq.read_metadata(str(path), filesystem=filesystem)
    except (OSError, pa.ArrowException, ValueError) as exc:
        return " ".join(str(exc).split()) or type(exc).__name__
    return None


def body_problem(path: str | Path, filesystem: Any = None) -> str | None:
    """Why the file cannot be read whole (None when it can): its footer, or a page that does
    not decode (or whose checksum, where the writer stored one, does not match)."""
    problem = footer_problem(path, filesystem)
    if problem is not None:
        return problem
    try:
        pf = pq.ParquetFile(str(path), filesystem=filesystem, page_checksum_verification=True)
        for i in range(pf.num_row_groups):
            pf.read_row_group(i)
    except (OSError, pa.ArrowException, ValueError) as exc:
        return " ".join(str(exc).split()) or type(exc).__name__
    return None


def check_footers(files: Iterable[str | Path], results: str | Path | None = None,
                  filesystem: Any = None) -> None:
    """Raise DamagedResults for the first file whose footer cannot be read."""
    for f in files:
        problem = footer_problem(f, filesystem)
        if problem is not None:
            raise DamagedResults(f, problem, results)


VERIFIED_ENV = "WARPSWEEP_VERIFIED_CACHE"
# 2: schemas checked too; 3: keyed by inode and change time too (files verified before are
# read again)
VERIFIED_VERSION = 3


def _verified_path(results: str, table: str) -> Path | None:
    """Where the files of ``results``' ``table`` verified so far are kept; None where the
    default's home is unknown (every file is verified again); one line for a variable that
    names a home unknown here (a traceback before, review CR28)."""
    # (an empty or blank variable is unset: Path("") had put the cache in the working
    # directory, " " in a directory named so)
    try:
        root = default_home_path(VERIFIED_ENV, "~/.cache/warpsweep/verified")
    except ConfigError:
        if os.environ.get(VERIFIED_ENV, "").strip():
            raise
        return None
    name = hashlib.sha256(str(Path(results).resolve()).encode()).hexdigest()[:24]
    return root / f"{name}.{table}.{VERIFIED_VERSION}.json"


def rows_value_problem(path: str | Path, filesystem: Any = None) -> str | None:
    """``value_problem`` of a trials file's rows: its value columns and the metrics its
    objectives rank, read alone."""
    names = pq.read_schema(path, filesystem=filesystem).names
    rows = pq.read_table(path, columns=[c for c in VALUE_COLUMNS if c in names],
                         filesystem=filesystem)
    ranked = objective_columns(
        rows.column("objective").unique().to_pylist()
        if "objective" in rows.column_names else (), names)
    for metric in (m for m in ranked if m not in rows.column_names):
        rows = rows.append_column(metric, pq.read_table(path, columns=[metric],
                                                        filesystem=filesystem).column(metric))
    return value_problem(rows)


def check_remote_values(files: Iterable[str], results: str, filesystem: Any,
                        table_root: str) -> None:
    """Raise DamagedResults for the first remote trials file that is no results file of
    trials (``schema_problem``), lies outside its partition directories under ``table_root``
    (``partition_problem``) or whose rows ``value_problem`` refuses (an objective value
    edited apart from its metric), as ``verify_files`` does for local ones. A file is read
    once: those verified are kept by (path, size, modification time), as local ones are, in
    the cache outside the results (one listing's infos, no request a file)."""
    files = list(files)
    cache = _verified_path(results, "remote-" + TRIALS)
    try:
        known = set(map(tuple, json.loads(cache.read_text()))) if cache else set()
    except (OSError, ValueError, TypeError):
        known = set()
    keys = []
    for info in filesystem.get_file_info(files) if files else []:
        if info.type == pafs.FileType.NotFound:  # gone since the listing: nothing to read
            continue
        key = (info.path, info.size, info.mtime_ns)
        keys.append(key)
        if key in known:
            continue
        problem = (schema_problem(pq.read_schema(info.path, filesystem=filesystem), TRIALS)
                   or partition_problem(table_root, info.path, TRIALS)
                   or rows_value_problem(info.path, filesystem))
        if problem is not None:
            raise DamagedResults(info.path, problem, results)
    if set(keys) - known:
        _keep_verified(cache, keys)


def verify_trials(results: Any) -> None:
    """The trials files of a results location, each as ``verify_files`` (local) or
    ``check_remote_values`` (object storage) checks it: for a reader that scans them itself
    (``tuner.api.load_results`` had read an edited row in as its figure)."""
    from tuner.results.location import Location
    from tuner.results.store import ParquetDirBackend

    location = Location.of(results)
    files = ParquetDirBackend(location).files(TRIALS)
    if location.local:
        verify_files(files, location.text, TRIALS)
    else:
        check_remote_values(files, location.text, location.fs, location.path(TRIALS))


def verify_files(files: Iterable[str | Path], results: str, table: str) -> None:
    """Raise DamagedResults for the first local file that does not read whole with its page
    checksums (``body_problem``): DuckDB does not verify them, so bytes damaged in a page
    could otherwise be read as other values; or that is no results file of ``table``
    (``schema_problem``: DuckDB would read its rows in, the store refuses it). A file is read
    once: those verified are kept (path, size, modification and change times, inode) in a cache
    outside the results, and a file is never changed in place (a retried write replaces it,
    with a new inode). Any write to a file moves its change time, which no tool can set
    back (a copy with ``cp -p`` or bytes rewritten and the modification time restored had
    kept the old key, and their damage was read as values). ``files`` are all of one
    table's: the cache keeps those alone."""
    cache = _verified_path(results, table)
    try:
        known = set(map(tuple, json.loads(cache.read_text()))) if cache else set()
    except (OSError, ValueError, TypeError):
        known = set()
    keys = []
    for f in files:
        try:
            st = os.stat(f)
        except OSError as exc:
            raise DamagedResults(f, str(exc), results) from None
        keys.append((str(f), st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino))
    fresh = [k for k in keys if k not in known]
    root = Location.of(results).path(table)
    for path, *_ in fresh:
        problem = (body_problem(path) or schema_problem(pq.read_schema(path), table)
                   or partition_problem(root, path, table))
        if problem is None and table == TRIALS:
            problem = rows_value_problem(path)
        if problem is not None:
            raise DamagedResults(path, problem, results)
    if not fresh:
        return
    # a new file must type its columns as the others do (each passed alone)
    conflict = type_conflict([pq.read_schema(path) for path, *_ in keys])
    if conflict is not None:
        raise DamagedResults(keys[conflict[0]][0], conflict[1], results)
    _keep_verified(cache, keys)


def _keep_verified(cache: Path | None, keys: list[tuple]) -> None:
    """Write the verified files' keys (atomically); an unwritable cache only means reading
    the files again next time."""
    if cache is None:
        return
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache.with_name(f".{cache.name}.{os.getpid()}")
        tmp.write_text(json.dumps([list(k) for k in keys]))
        os.replace(tmp, cache)
    except OSError:
        pass


def find_damaged(files: Iterable[str | Path], filesystem: Any = None) -> tuple[str, str] | None:
    """The first file that cannot be read whole, and why; None when every file reads."""
    for f in files:
        problem = body_problem(f, filesystem)
        if problem is not None:
            return str(f), problem
    return None


_NAMED_FILE = re.compile(r'file "([^"]+)"')


def damage_behind(exc: BaseException, files: list[str], results: str | Path | None = None,
                  filesystem: Any = None) -> DamagedResults | None:
    """The damaged file behind an error raised while reading (the file DuckDB names, if it
    is one of ``files``; else the first of ``files`` that does not read whole), or None when
    every file reads and the error is about something else."""
    if isinstance(exc, _STATEMENT_ERRORS):
        return None
    named = _NAMED_FILE.search(str(exc))
    if named and named.group(1) in files:
        problem = body_problem(named.group(1), filesystem)
        if problem is not None:
            return DamagedResults(named.group(1), problem, results)
    found = find_damaged(files, filesystem)
    return DamagedResults(found[0], found[1], results) if found else None


@contextmanager
def reading(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """Errors raised while the block reads through ``con`` (a ``tuner.results.query.connect``
    connection) that come from a damaged file become DamagedResults naming it."""
    try:
        yield
    except DamagedResults:
        raise
    except (duckdb.Error, pa.ArrowException, OSError) as exc:
        damage = damage_of(con, exc)
        if damage is None:
            raise
        raise damage from None


@contextmanager
def scanning(results: Any) -> Iterator[None]:
    """Like ``reading``, for a block that opens its own connections to ``results`` (a report,
    the selector): an error from a damaged file of the results raises DamagedResults."""
    from tuner.results.location import Location

    location = Location.of(results)
    try:
        yield
    except DamagedResults:
        raise
    except (duckdb.Error, pa.ArrowException, OSError) as exc:
        if not location.local:
            raise
        from tuner.results.store import ParquetDirBackend

        backend = ParquetDirBackend(location)
        files = [f for table in ("trials", "graphs") for f in backend.files(table)]
        damage = damage_behind(exc, files, location.text)
        if damage is None:
            raise
        raise damage from None


# The files (and results directory) behind each connection made by tuner.results.query.connect.
_SOURCES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def remember(con: duckdb.DuckDBPyConnection, files: list[str], results: str,
             filesystem: Any = None) -> None:
    """Note the files a connection reads, for ``damage_of``."""
    _SOURCES[con] = (files, results, filesystem)


def damage_of(con: duckdb.DuckDBPyConnection, exc: BaseException) -> DamagedResults | None:
    """The damaged file behind ``exc``, raised while reading through ``con``, or None."""
    source = _SOURCES.get(con)
    if source is None:
        return None
    files, results, fs = source
    return damage_behind(exc, files, results, fs)
