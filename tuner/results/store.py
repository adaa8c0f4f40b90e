"""The results store: buffered rows flushed as new Parquet files, written atomically.

Two backends share one contract (``append`` a table to a partition, ``scan`` a table back):
``ParquetDirBackend`` (a hive-partitioned directory; temp file + ``os.replace``, so a crash never
leaves a torn file) and ``MemoryBackend`` (tests, benchmarks).
"""

from __future__ import annotations

import abc
import dataclasses
import hashlib
import json
import math
import os
import time
import urllib.parse
import uuid
from collections.abc import Callable
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute  # noqa: F401 - pa.compute
import pyarrow.dataset as ds
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from simulator.errors import ConfigError
from tuner.env import warpsweep_version
from tuner.results.location import Location
from tuner.results.location import shell_word
from tuner.results.records import TrialRecord
from tuner.results.schema import GRAPH_COLUMNS
from tuner.results.schema import GRAPH_PARTITIONS
from tuner.results.schema import GRAPHS
from tuner.results.schema import MANIFEST
from tuner.results.schema import MEASURED
from tuner.results.schema import METRIC_NAMES
from tuner.results.schema import PARAM_PREFIX
from tuner.results.schema import PARAM_TYPES
from tuner.results.schema import QUARANTINE
from tuner.results.schema import SCHEMA_VERSION
from tuner.results.schema import STUDIES
from tuner.results.schema import TRIAL_COLUMNS
from tuner.results.schema import TRIAL_PARTITIONS
from tuner.results.schema import TRIALS
from tuner.results.schema import VALUE_COLUMNS
from tuner.results.schema import Column
from tuner.results.schema import infer_type
from tuner.results.schema import metric_column
from tuner.results.schema import objective_columns
from tuner.results.schema import param_column
from tuner.results.schema import partition_problem
from tuner.results.schema import schema_problem
from tuner.results.schema import type_conflict
from tuner.results.schema import value_problem

PARTITIONS = {TRIALS: TRIAL_PARTITIONS, GRAPHS: GRAPH_PARTITIONS}
COLUMNS = {TRIALS: TRIAL_COLUMNS, GRAPHS: GRAPH_COLUMNS}


class Backend(abc.ABC):
    """Where tables live. Implementations must make each append all-or-nothing."""

    @abc.abstractmethod
    def append(self, table: str, partition: dict[str, str], data: pa.Table,
               name: str | None = None) -> None:
        """Add ``data`` (without the partition columns) to ``table`` under ``partition``;
        ``name``, when given, identifies the write (writing it again replaces it)."""

    @abc.abstractmethod
    def scan(self, table: str, columns: list[str] | None = None) -> pa.Table:
        """Everything appended to ``table``, partition columns included, schemas unified."""


class MemoryBackend(Backend):
    """Tables kept in memory."""

    def __init__(self) -> None:
        self.tables: dict[str, list[pa.Table]] = {}
        self._named: dict[tuple[str, str], int] = {}

    def append(self, table: str, partition: dict[str, str], data: pa.Table,
               name: str | None = None) -> None:
        """Keep the table with its partition values as constant columns."""
        for key, value in partition.items():
            data = data.append_column(key, pa.array([value] * data.num_rows, pa.string()))
        parts = self.tables.setdefault(table, [])
        if name is not None and (table, name) in self._named:
            parts[self._named[(table, name)]] = data  # the same write again: replaced
            return
        if name is not None:
            self._named[(table, name)] = len(parts)
        parts.append(data)

    def scan(self, table: str, columns: list[str] | None = None) -> pa.Table:
        """Concatenation of the appended tables (missing columns null)."""
        parts = self.tables.get(table, [])
        if not parts:
            return _empty(table, columns)
        out = pa.concat_tables(parts, promote_options="default")
        return out.select(columns) if columns else out


# Results files are named part-*.parquet; the readers count no other file.
RESULTS_FILE_PREFIX = "part-"


class ParquetDirBackend(Backend):
    """A hive-partitioned Parquet dataset under ``root/<table>/key=value/part-*.parquet``, on
    a local disk or any filesystem pyarrow opens from a URI (see ``tuner.results.location``)."""

    def __init__(self, root: str | Path | Location) -> None:
        self.location = Location.of(root)

    def append(self, table: str, partition: dict[str, str], data: pa.Table,
               name: str | None = None) -> None:
        """Write a new file whole: readers never see part of it. ``name`` (derived from the
        rows' keys) makes a retried write replace the same file instead of adding one."""
        parts = [f"{key}={urllib.parse.quote(str(value), safe='')}"
                 for key, value in partition.items()]
        name = name or f"part-{time.time_ns()}-{uuid.uuid4().hex[:8]}.parquet"
        buffer = pa.BufferOutputStream()
        # page checksums: `warpsweep check` finds bytes damaged anywhere in a file's body
        pq.write_table(data, buffer, write_page_checksum=True)
        self.location.write_bytes(self.location.path(table, *parts, name),
                                  buffer.getvalue().to_pybytes())

    def files(self, table: str) -> list[str]:
        """The dataset's finished files (temp files are hidden by their leading dot)."""
        return [f for f in self.location.files(table, ".parquet")
                if f.rsplit("/", 1)[-1].startswith(RESULTS_FILE_PREFIX)]

    def dataset(self, table: str) -> ds.Dataset | None:
        """The table as a pyarrow dataset (schemas unified, partitions as columns), or None
        while it has no file."""
        files = self.files(table)
        if not files:
            return None
        fs = self.location.fs
        part_schema = pa.schema([(c.name, c.type) for c in PARTITIONS[table]])
        schemas = [self._schema(f, table) for f in files]
        conflict = type_conflict(schemas)
        if conflict is not None:
            from tuner.results.damaged import DamagedResults

            raise DamagedResults(files[conflict[0]], conflict[1], self.location.text)
        # a column typed from its values is int64 in one file, double in another: read as double
        schema = pa.unify_schemas(schemas + [part_schema], promote_options="permissive")
        # page checksums verified on every read: bytes damaged in a page are an error that
        # names the file (tuner.results.damaged), never values read wrong
        verified = ds.ParquetFileFormat(default_fragment_scan_options=(
            ds.ParquetFragmentScanOptions(page_checksum_verification=True)))
        return ds.dataset(
            files, schema=schema, format=verified, filesystem=fs,
            partitioning=ds.partitioning(part_schema, flavor="hive"),
            partition_base_dir=self.location.path(table),
        )

    def _schema(self, path: str, table: str) -> pa.Schema:
        """A file's schema; one that is not the results' (a Parquet file of something else
        dropped in) raises DamagedResults naming it, as ``warpsweep check`` does."""
        schema = pq.read_schema(path, filesystem=self.location.fs)
        problem = (schema_problem(schema, table)
                   or partition_problem(self.location.path(table), path, table))
        if problem is not None:
            from tuner.results.damaged import DamagedResults  # (DuckDB's: not on a GPU machine)

            raise DamagedResults(path, problem, self.location.text)
        return schema

    def scan(self, table: str, columns: list[str] | None = None) -> pa.Table:
        """Read every file with the union of their schemas plus the partition columns."""
        dataset = self.dataset(table)
        if dataset is None:
            return _empty(table, columns)
        return dataset.to_table(columns=columns)


def _empty(table: str, columns: list[str] | None) -> pa.Table:
    cols = PARTITIONS[table] + COLUMNS[table]
    schema = pa.schema([(c.name, c.type) for c in cols])
    if columns:
        schema = pa.schema([schema.field(c) if c in schema.names else (c, pa.null())
                            for c in columns])
    return schema.empty_table()


class ResultStore:
    """Buffers trial and graph rows and flushes them as new files every few seconds and at close.

    The rows are the record. A (study, role, trial-or-label) key is written once: adding a
    record whose key is already stored (on disk or buffered) with the same content does
    nothing, with other content is refused (``ConflictError``). A trial file is named by the
    keys it holds and a graph's file by its graph id, so a retried or concurrent write of the
    same rows replaces a file instead of adding one.
    """

    def __init__(self, backend: Backend, flush_every_s: float = 2.0, max_rows: int = 5000):
        self.backend = backend
        self.flush_every_s = flush_every_s
        self.max_rows = max_rows
        self._trials: list[TrialRecord] = []
        self._graphs: list[dict[str, Any]] = []
        self._last_flush = time.monotonic()
        self._graph_ids: set[str] | None = None
        self._index: dict[str, dict[tuple[str, Any], tuple]] | None = None
        self.conflicts: dict[str, list[str]] = {}
        self._unsure = False  # a write failed: it may have landed anyway
        self.files_written = 0
        self.flush_hooks: list[Callable[[], None]] = []

    @classmethod
    def open(cls, results: str | Path | Location, **kwargs: Any) -> ResultStore:
        """A store over a results directory (path or URI), created if needed; refuses one
        of another schema."""
        location = Location.of(results)
        check_manifest(location)
        return cls(ParquetDirBackend(location), **kwargs)

    # -- writing ---------------------------------------------------------------------------
    def add_trial(self, record: TrialRecord) -> None:
        """Buffer one evaluation's record (nothing if that very row is already stored)."""
        if not self._claim(record):
            return
        self._trials.append(record)
        if len(self._trials) >= self.max_rows:
            self.flush()

    def _claim(self, record: TrialRecord, replacing: TrialRecord | None = None) -> bool:
        """Register a record's key: True if new, False if stored with the same content."""
        known = self.index().setdefault(record.study_key, {})
        key = _row_id(record.role, record.trial, record.label)
        fp = record_fingerprint(record)
        have = known.get(key)
        if have is not None and replacing is None:
            if have == fp:
                return False
            what = (f"trial {record.trial}" if record.role == "trial"
                    else f"reference {record.label!r}")
            raise ConflictError(
                f"study {record.study_key}: {what} is already stored with another "
                f"configuration or result ({_describe(have)} vs {_describe(fp)}); refusing "
                "to write a second row for it"
            )
        known[key] = fp
        return True

    def amend_trial(self, old: TrialRecord, new: TrialRecord) -> None:
        """Replace a still-buffered record (a trial whose tell failed becomes failed)."""
        for i in range(len(self._trials) - 1, -1, -1):
            if self._trials[i] is old:
                self._claim(new, replacing=old)
                self._trials[i] = new
                return
        self.add_trial(new)

    def add_graph(self, row: dict[str, Any]) -> None:
        """Buffer a graph row unless that graph id is already stored."""
        known = self.graph_ids()
        if row["graph_id"] in known:
            return
        known.add(row["graph_id"])
        self._graphs.append(row)

    def seconds_to_flush(self) -> float:
        """Time left before the next periodic flush is due."""
        return max(0.0, self._last_flush + self.flush_every_s - time.monotonic())

    def maybe_flush(self) -> None:
        """Flush if the period has elapsed."""
        if self.seconds_to_flush() <= 0:
            self.flush()

    def flush(self) -> None:
        """Write the buffered rows as new files (one per partition; one per graph)."""
        self._last_flush = time.monotonic()
        trials, self._trials = self._trials, []
        graphs, self._graphs = self._graphs, []
        try:
            if self._unsure and trials:  # a failed write may have landed: not twice
                trials = self._not_on_disk(trials)
            self._write(TRIALS, [r.to_row() for r in trials])
            self._write(GRAPHS, graphs)
        except BaseException:
            self._trials[:0] = trials
            self._graphs[:0] = graphs
            self._unsure = True
            raise
        self._unsure = False
        for hook in list(self.flush_hooks):
            hook()

    def _not_on_disk(self, trials: list[TrialRecord]) -> list[TrialRecord]:
        disk, _, _ = scan_index(self.backend)
        out = []
        for r in trials:
            have = disk.get(r.study_key, {}).get(_row_id(r.role, r.trial, r.label))
            if have is None:
                out.append(r)
            elif have != record_fingerprint(r):
                raise ConflictError(f"study {r.study_key}: trial {r.trial} landed on disk "
                                    "with other content than retried")
        return out

    def close(self) -> None:
        """Flush what is left."""
        self.flush()

    def _write(self, table: str, rows: list[dict[str, Any]]) -> None:
        if not rows:
            return
        keys = [c.name for c in PARTITIONS[table]]
        groups: dict[tuple[str, ...], list[dict[str, Any]]] = {}
        for row in rows:
            groups.setdefault(tuple(str(row[k]) for k in keys), []).append(row)
        for values, group in groups.items():
            for name, chunk in _named_files(table, group):
                data = rows_to_table(table, chunk)
                meta = {b"warpsweep.schema_version": str(SCHEMA_VERSION).encode()}
                self.backend.append(table, dict(zip(keys, values, strict=True)),
                                    data.replace_schema_metadata(meta), name=name)
                self.files_written += 1

    # -- reading ---------------------------------------------------------------------------
    def graph_ids(self) -> set[str]:
        """Ids of the graphs already in the store (read once)."""
        if self._graph_ids is None:
            table = self.backend.scan(GRAPHS, columns=["graph_id"])
            self._graph_ids = set(table.column("graph_id").to_pylist())
        return self._graph_ids

    def index(self) -> dict[str, dict[tuple[str, Any], tuple]]:
        """Per study key, each stored row's key -> its fingerprint (state, configuration,
        values): on disk (read once) and buffered."""
        if self._index is None:
            self._index, self.conflicts, problem = scan_index(self.backend)
            if problem is not None:  # resumed on, such a row would be a study's best
                location = getattr(self.backend, "location", None)
                text = location.text if location is not None else "RESULTS"
                raise ConflictError(f"results {text}: {problem}; run `warpsweep check "
                                    f"{shell_word(text)}` to find its file (--repair sets "
                                    "it aside)")
        return self._index

    def reread_index(self) -> dict[str, dict[tuple[str, Any], tuple]]:
        """``index`` read from disk again, the buffered rows kept in it: a study opened
        under its lock after the run began may have rows another run wrote since."""
        self._index = None
        index = self.index()
        for r in self._trials:
            index.setdefault(r.study_key, {})[_row_id(r.role, r.trial, r.label)] = \
                record_fingerprint(r)
        return index

    def stored_trials(self) -> dict[str, set[tuple[str, Any]]]:
        """Per study key, the (role, trial-or-label) pairs already on disk or buffered."""
        return {key: set(rows) for key, rows in self.index().items()}

    def study_records(self, study_key: str) -> list[TrialRecord]:
        """The stored rows of one study as records (disk, then buffered)."""
        table = self.backend.scan(TRIALS)
        if table.num_rows:
            table = table.filter(pa.compute.equal(table.column("study_key"), study_key))
        out = [row_to_record(row) for row in table.to_pylist()]
        return out + [r for r in self._trials if r.study_key == study_key]


class ConflictError(ConfigError):
    """Two different rows (or a row and a journal) claim one key."""


def _named_files(table: str, rows: list[dict[str, Any]]):
    """(file name, rows) pairs: a graph's row in a file named by its id (whoever writes it
    writes that file), trial rows in one file named by the keys it holds."""
    if table == GRAPHS:
        return [(f"part-g{_digest(str(r['graph_id']))}.parquet", [r]) for r in rows]
    ids = sorted(json.dumps([r["study_key"], r["role"], r.get("trial"), r.get("label")])
                 for r in rows)
    return [(f"part-t{_digest(chr(10).join(ids))}.parquet", rows)]


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def _norm(value: Any) -> Any:
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return float(value)
    return str(value)


def fingerprint(state: str, params: dict[str, Any], values: list[float] | None) -> tuple:
    """What must agree between two rows (or a row and a journal record) of one key: the
    state, the configuration and the objective values."""
    config = tuple(sorted((k, _norm(v)) for k, v in params.items() if v is not None))
    return _fingerprint(state, config, values)


def _fingerprint(state: str, config: tuple, values: list[float] | None) -> tuple:
    """``fingerprint`` of a configuration already as sorted (knob, normalised value) pairs."""
    vals = None if values is None else tuple(
        float(v) if not math.isnan(float(v)) else "nan" for v in values)
    return (state, config, vals)


def record_fingerprint(record: TrialRecord) -> tuple:
    """A record's fingerprint (see ``fingerprint``)."""
    return fingerprint(record.state, record.params, record.values)


def row_fingerprint(row: dict[str, Any]) -> tuple:
    """A stored row's fingerprint (see ``fingerprint``)."""
    params = {k[len(PARAM_PREFIX):]: v for k, v in row.items() if k.startswith(PARAM_PREFIX)}
    return fingerprint(row["state"], params, row.get("values"))


def stopped_trials_run_again(trials: dict[int, Any], rows: dict[tuple[str, Any], tuple]
                             ) -> list[int]:
    """The trial numbers whose rows no run of this journal wrote: the journal (``trials``:
    number -> Optuna's trial) holds trial N stopped without a result, and a later trial of
    it ran N's configuration again (a resume re-asks what a stop cut off), so a row of N
    (``rows``: (role, number or label) -> fingerprint) is another run's, copied in. Counted,
    it would evaluate one configuration twice and take the study past its budget."""
    stopped = {ident: fp for (role, ident), fp in rows.items() if role == "trial"
               and (t := trials.get(ident)) is not None and "record" not in t.user_attrs}
    if not stopped:  # (every resume asks: the records are read only where a row may be stale)
        return []
    recorded: dict[Any, int] = {}  # configuration -> the last trial that recorded it
    for n, t in trials.items():
        data = t.user_attrs.get("record")
        if data is not None:
            config = record_fingerprint(TrialRecord.from_json(data))[1]
            recorded[config] = max(n, recorded.get(config, n))
    return sorted(n for n, fp in stopped.items() if recorded.get(fp[1], -1) > n)


def _describe(fp: tuple) -> str:
    state, config, values = fp
    knobs = " ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in config)
    return f"{state} {knobs}" + (f" values={list(values)}" if values else "")


def scan_index(backend: Backend) -> tuple[dict[str, dict[tuple[str, Any], tuple]],
                                          dict[str, list[str]], str | None]:
    """Every stored trial row's key -> fingerprint, per study; per study, the keys that
    hold two different rows (a conflict only ``warpsweep check --repair`` settles); and
    what rows hold values no simulation gives (``value_problem``), if any do."""
    every = _trial_columns(backend)
    names = [c for c in every if c in VALUE_COLUMNS or c.startswith(PARAM_PREFIX)]
    if "objective" in names:  # and the metric columns value_problem compares with values
        objectives = backend.scan(TRIALS, columns=["objective"]).column("objective")
        names += [c for c in objective_columns(objectives.unique().to_pylist(), every)
                  if c not in names]
    table = backend.scan(TRIALS, columns=names or None)
    index: dict[str, dict[tuple[str, Any], tuple]] = {}
    conflicts: dict[str, list[str]] = {}
    if not table.num_rows:
        return index, conflicts, None
    # column by column, not row dicts: a resume of 300k rows reads its index in 1.8 s, not 4
    params = sorted(c for c in table.column_names if c.startswith(PARAM_PREFIX))
    knobs = [p[len(PARAM_PREFIX):] for p in params]  # sorted as the names, prefix shared
    configs = ([tuple((k, _norm(v)) for k, v in zip(knobs, row, strict=True) if v is not None)
                for row in zip(*(table.column(p).to_pylist() for p in params), strict=True)]
               if params else [()] * table.num_rows)
    values = (table.column("values").to_pylist() if "values" in table.column_names
              else [None] * table.num_rows)
    columns = (table.column(c).to_pylist() for c in ("study_key", "role", "trial", "label",
                                                       "state"))
    for study, role, trial, label, state, config, vals in zip(*columns, configs, values,
                                                              strict=True):
        key = _row_id(role, trial, label)
        fp = _fingerprint(state, config, vals)
        known = index.setdefault(study, {})
        if key in known and known[key] != fp:
            conflicts.setdefault(study, []).append(
                f"{key[0]} {key[1]}: {_describe(known[key])} vs {_describe(fp)}")
        known.setdefault(key, fp)
    return index, conflicts, value_problem(table)


def _trial_columns(backend: Backend) -> list[str]:
    if isinstance(backend, ParquetDirBackend):
        dataset = backend.dataset(TRIALS)
        return [] if dataset is None else list(dataset.schema.names)
    parts = backend.tables.get(TRIALS, []) if isinstance(backend, MemoryBackend) else []
    return sorted({n for t in parts for n in t.schema.names})


def row_to_record(row: dict[str, Any]) -> TrialRecord:
    """A stored ``trials`` row back as the record it was written from."""
    declared = {c.name for c in TRIAL_COLUMNS + TRIAL_PARTITIONS}
    params = {k[len(PARAM_PREFIX):]: v for k, v in row.items()
              if k.startswith(PARAM_PREFIX) and v is not None}
    metrics = {k: v for k, v in row.items()
               if k not in declared and not k.startswith(PARAM_PREFIX) and v is not None}
    fields = {f.name for f in dataclasses.fields(TrialRecord)} - {"params", "metrics"}
    kwargs = {k: row.get(k) for k in fields if k in row}
    for k in ("values", "values_std"):
        if kwargs.get(k) is not None:
            kwargs[k] = list(kwargs[k])
    kwargs["sources"] = list(row.get("sources") or [])
    kwargs["n_sources"] = int(row.get("n_sources") or 0)
    kwargs["wall_s"] = float(row.get("wall_s") or 0.0)
    if kwargs.get("timestamp") is None:
        kwargs.pop("timestamp", None)
    return TrialRecord(params=params, metrics=metrics or None, **kwargs)


def _row_id(role: str, trial: int | None, label: str | None) -> tuple[str, Any]:
    return (role, trial if role == "trial" else label)


def rows_to_table(table: str, rows: list[dict[str, Any]]) -> pa.Table:
    """Rows to an Arrow table with the declared schema (plus columns for undeclared knobs,
    metrics or features), partition columns left out."""
    fields = [(c.name, c.type) for c in COLUMNS[table]]
    declared = {name for name, _ in fields} | {c.name for c in PARTITIONS[table]}
    present = _keys(rows) - declared
    if table == TRIALS:
        params = {param_column(k): t for k, t in PARAM_TYPES.items()}
        metrics = {metric_column(m) for m in METRIC_NAMES}
        extra_params = sorted(k for k in present if k.startswith("param_") and k not in params)
        extra_metrics = sorted(present - set(params) - metrics - set(extra_params))
        fields += list(params.items())
        fields += [(k, _column_type(rows, k)) for k in extra_params]
        fields += [(m, pa.float64()) for m in [*METRIC_NAMES, *extra_metrics]]
    else:
        fields += [(k, _column_type(rows, k)) for k in sorted(present)]
    schema = pa.schema(fields)
    coerced = [_coerce(row, schema) for row in rows]
    return pa.Table.from_pylist(coerced, schema=schema)


def _keys(rows: Iterable[dict[str, Any]]) -> set[str]:
    out: set[str] = set()
    for row in rows:
        out.update(row)
    return out


def _column_type(rows: list[dict[str, Any]], key: str) -> pa.DataType:
    return infer_type([row.get(key) for row in rows])


def _coerce(row: dict[str, Any], schema: pa.Schema) -> dict[str, Any]:
    out = {}
    for f in schema:
        v = row.get(f.name)
        if v is not None:
            if pa.types.is_string(f.type) and not isinstance(v, str):
                v = str(v)
            elif pa.types.is_floating(f.type) and not isinstance(v, float):
                v = float(v)
        out[f.name] = v
    return out


# What a results directory holds as directories.
_RESULTS_DIRS = (TRIALS, GRAPHS, STUDIES, MEASURED, QUARANTINE)


def _check_local_layout(loc: Location) -> None:
    """Refuse a local results path that is a file, or holds a file where one of its
    directories belongs (the readers and writers would fail on it with a bare OS error)."""
    root = loc.local_path()
    try:
        there = root.exists()
    except OSError as exc:  # a name too long (pathlib raises on it): nothing ran yet
        raise ConfigError(f"--results {loc.text!r}: cannot reach it ({exc.strerror})") from None
    if there and not root.is_dir():
        raise ConfigError(f"--results {loc.text!r} is a file, not a directory")
    if not there and root.is_symlink():
        raise ConfigError(f"--results {loc.text!r} is a link to {os.readlink(root)}, which is "
                          "not there (a disk not mounted?): mount it, or give another directory")
    for name in _RESULTS_DIRS:
        inner = root / name
        if inner.exists() and not inner.is_dir():
            raise ConfigError(f"--results {loc.text!r}: {inner} is a file where the results' "
                              f"{name}/ directory belongs (move it aside)")
        if inner.is_symlink() and not inner.exists():  # (a run had failed at its first write)
            raise ConfigError(f"--results {loc.text!r}: {inner} is a link to "
                              f"{os.readlink(inner)}, which is not there (a disk not "
                              f"mounted?): mount it, or move the link aside")


def check_manifest(root: str | Path | Location, create: bool = True,
                   writing: bool = True) -> None:
    """Create the results directory's manifest, or refuse one written by a newer schema (or,
    to write into, by an older one: its rows would not mean what the new ones mean)."""
    loc = Location.of(root)
    if loc.local:
        _check_local_layout(loc)
    path = loc.path(MANIFEST)
    try:
        text = loc.read_text(path)
    except OSError as exc:
        raise ConfigError(f"--results {loc.text!r}: cannot read {MANIFEST} ({exc})") from None
    if text is not None:
        try:
            manifest = json.loads(text)
            version = manifest["schema_version"]
            if not isinstance(version, int) or isinstance(version, bool):
                raise TypeError(f"schema_version {version!r} is no integer")
        except (ValueError, KeyError, TypeError) as exc:
            raise ConfigError(
                f"{path}: unreadable results manifest ({exc}); it should read "
                f'{{"schema_version": {SCHEMA_VERSION}, ...}} for a directory this warpsweep '
                "wrote: restore it, or move the directory's rows to a new --results"
            ) from None
        if version > SCHEMA_VERSION:
            raise ConfigError(
                f"results directory {loc.text!r} was written with results schema version "
                f"{version} (by warpsweep {manifest.get('warpsweep_version', '?')}); this "
                f"warpsweep {warpsweep_version()} reads schema version {SCHEMA_VERSION} and "
                "older: upgrade warpsweep or choose another --results directory"
            )
        if writing and version < SCHEMA_VERSION:
            raise ConfigError(
                f"results directory {loc.text!r} holds results schema version {version} (by "
                f"warpsweep {manifest.get('warpsweep_version', '?')}); this warpsweep "
                f"{warpsweep_version()} writes version {SCHEMA_VERSION}, whose rows differ: "
                "write to a new --results directory (the old one stays readable)"
            )
        return
    if not create:
        return
    try:
        loc.ensure_dir()
    except OSError as exc:
        raise ConfigError(f"--results {loc.text!r}: cannot create the directory "
                          f"({exc.strerror or exc})") from None
    body = {"schema_version": SCHEMA_VERSION, "warpsweep_version": warpsweep_version()}
    try:
        loc.write_bytes(path, (json.dumps(body, indent=1) + "\n").encode())
    except OSError as exc:  # before any work: bad input, not a disk failing mid-run
        raise ConfigError(f"--results {loc.text!r}: cannot write there "
                          f"({exc.strerror or exc})") from None


def read_trials(results: str | Path | Location, columns: list[str] | None = None) -> pa.Table:
    """The ``trials`` table of a results directory (schema checked)."""
    check_readable(results)
    return ParquetDirBackend(results).scan(TRIALS, columns)


def read_graphs(results: str | Path | Location, columns: list[str] | None = None) -> pa.Table:
    """The ``graphs`` table of a results directory (schema checked)."""
    check_readable(results)
    return ParquetDirBackend(results).scan(GRAPHS, columns)


def check_readable(root: str | Path | Location) -> None:
    """Refuse a missing results directory or one of a newer schema."""
    loc = Location.of(root)
    if loc.kind(loc.path(MANIFEST)) != pafs.FileType.File:
        kind = loc.kind(loc.root)
        if kind == pafs.FileType.NotFound:
            raise ConfigError(f"results directory {loc.text!r} does not exist")
        if kind == pafs.FileType.File:  # as `tune` says it
            raise ConfigError(f"results {loc.text!r} is a file, not a directory")
        raise ConfigError(f"{loc.text!r} is not a warpsweep results directory (no {MANIFEST})")
    check_manifest(loc, writing=False)


def declared_fields(table: str = TRIALS) -> list[Column]:
    """Declared columns of a table, partitions first."""
    return list(PARTITIONS[table] + COLUMNS[table])
