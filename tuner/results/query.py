"""SQL over a results directory: DuckDB with the ``trials`` and ``graphs`` datasets as views,
and the GPU measurements of ``tune --verify`` (``measured``, and ``trials.measured_us``)."""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb
import pyarrow as pa

from simulator.errors import ConfigError
from simulator.errors import WarpsweepError
from simulator.errors import WarpsweepWarning
from simulator.graph_spec import parse_spec
from tuner.results.damaged import check_footers
from tuner.results.damaged import check_remote_values
from tuner.results.damaged import damage_behind
from tuner.results.damaged import damage_of
from tuner.results.damaged import remember
from tuner.results.damaged import verify_files
from tuner.results.journal import UnsavedResults
from tuner.results.journal import lost_for_good_line
from tuner.results.journal import lost_rows_line
from tuner.results.journal import saved_rows
from tuner.results.journal import unsaved_line
from tuner.results.journal import unsaved_results
from tuner.results.location import Location
from tuner.results.location import shell_word
from tuner.results.measured import add_views
from tuner.results.schema import GRAPHS
from tuner.results.schema import PARAM_TYPES
from tuner.results.schema import TRIALS
from tuner.results.schema import param_column
from tuner.results.store import ConflictError
from tuner.results.store import ParquetDirBackend
from tuner.results.store import check_readable
from tuner.results.store import declared_fields

BATCH_ROWS = 65_536


def connect(results: str | Path | Location) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection where ``trials`` and ``graphs`` are views of the results
    directory's Parquet datasets (hive partitions as columns, file schemas unified by name).

    A table with no file yet is an empty view with the declared columns, so queries over a
    fresh directory answer with no rows rather than an error. A results URI (``s3://...``) is
    read through its pyarrow filesystem. The files are listed as the store lists them and named
    to DuckDB one by one, their paths taken literally (glob characters, spaces, any script); a
    file whose footer cannot be read raises DamagedResults naming it.

    The connection is read-only towards everything outside it: once the views are made it can
    read only those files (no other file, no writing, no ATTACH of a file, no extension
    installed or loaded) and its configuration is locked, so no statement can undo that.
    """
    location = Location.of(results)
    check_readable(location)
    con = duckdb.connect(":memory:", config={"autoinstall_known_extensions": False,
                                             "autoload_known_extensions": False})
    # Every query re-binds the views, which reads each file's footer: keep the footers.
    con.execute("SET parquet_metadata_cache = true")
    allowed: list[str] = []
    every: list[str] = []
    fs = None
    for table in (TRIALS, GRAPHS):
        source = None
        if location.local:
            # the store's own listing (pyarrow's, no glob): the files it counts as results
            files = ParquetDirBackend(location).files(table)
            verify_files(files, location.text, table)
            every += files
            if files:
                # read_parquet expands glob characters even in a list of files: escape them
                listed = ", ".join(_sql_string(_glob_literal(str(f))) for f in files)
                source = (f"read_parquet([{listed}], hive_partitioning=true, "
                          "union_by_name=true)")
                # DuckDB checks the pattern as written, then each file it names
                allowed += [p for f in files for p in {str(f), _glob_literal(str(f))}]
        else:
            backend = ParquetDirBackend(location)
            fs = location.fs
            files = backend.files(table)
            check_footers(files, location.text, fs)
            if table == TRIALS:  # an edited value is refused there as here (probe S3)
                check_remote_values([str(f) for f in files], location.text, fs,
                                    location.path(TRIALS))
            every += [str(f) for f in files]
            dataset = backend.dataset(table)
            if dataset is not None:
                con.register(f"_{table}_dataset", dataset)
                source = f"_{table}_dataset"
        if source is None:
            con.register(f"_{table}_empty", _empty_table(table))
            source = f"_{table}_empty"
        with reading_files(every, location.text, fs):
            if table == TRIALS:  # measured GPU times beside the simulated (tuner.results.measured)
                source = _with_every_knob(con, source)
                _refuse_shared_keys(con, source, location.text)
                _refuse_two_runs(con, source, location.text)
                _refuse_misplaced_rows(con, source, location.text)
                con.execute(f"CREATE VIEW {table} AS {add_views(con, location, source)}")
            else:
                graphs = _with_graph_spec(con, source)
                con.execute(f"CREATE VIEW {table} AS SELECT * FROM {graphs}")
    remember(con, every, location.text, fs)
    if location.local:
        _warn_unsaved(con, location)
    _warn_older_presets(con)
    lock_down(con, allowed)
    return con


def _warn_older_presets(con: duckdb.DuckDBPyConnection) -> None:
    """Say where rows of a preset's name predate its present meaning (no device digest, the
    preset's fields then other than now: ``h100`` before it meant the calibrated H100): the
    readers group rows by the name, and had shown them as today's device without a word
    (probe COMPAT)."""
    from simulator.device import DATASHEETS
    from simulator.device import device_digest
    from simulator.device import get_device
    from tuner.tuning.spec import LEGACY_PRESET_DIGESTS

    changed = [name for name, old in LEGACY_PRESET_DIGESTS.items()
               if name in DATASHEETS and old != device_digest(get_device(name))]
    if not changed:
        return
    found = con.execute(
        "SELECT DISTINCT device FROM trials WHERE device_digest IS NULL AND device IN "
        f"({', '.join('?' * len(changed))}) ORDER BY device", changed).fetchall()
    for (name,) in found:
        warnings.warn(f"rows of {name} without a device digest were simulated before `{name}` "
                      f"meant the calibrated device: they are the model now named "
                      f"{DATASHEETS[name]}, read here under the name {name}", OlderPresetRows,
                      stacklevel=3)


class OlderPresetRows(WarpsweepWarning):
    """Rows of a preset's name simulated with what the name meant before (``connect``)."""


def _warn_unsaved(con: duckdb.DuckDBPyConnection, location: Location) -> None:
    """Warn of each study whose journal holds results its rows lack (a run killed between
    flushes): figures from the rows would leave them out without a word."""
    for key, recorded in unsaved_results(location.journals()).items():
        rows = con.execute("SELECT role, CASE WHEN role = 'trial' THEN CAST(trial AS VARCHAR) "
                           "ELSE label END FROM trials WHERE study_key = ?", [key]).fetchall()
        have = {(role, ident) for role, ident in rows}
        missing = {(role, str(ident)) for role, ident in recorded} - have
        if missing:
            warnings.warn(unsaved_line(key, len(missing), location.text), UnsavedResults,
                          stacklevel=3)
    marks = location.saved_marks()  # a mark outlives its journal deleted with rows
    saved = saved_rows(marks)
    if not saved:
        return
    held = dict(con.execute(
        "SELECT study_key, count(DISTINCT (role, trial, label)) FROM trials "
        f"WHERE study_key IN ({', '.join('?' * len(saved))}) GROUP BY study_key",
        list(saved)).fetchall())
    for key, count in sorted(saved.items()):
        lost = count - held.get(key, 0)
        if Path(marks[key]).exists():
            if lost > 0:
                warnings.warn(lost_rows_line(key, lost, count, location.text), UnsavedResults,
                              stacklevel=3)
        elif 0 < lost < count:  # its journal gone too (none left at all: a start over)
            warnings.warn(lost_for_good_line(key, lost, count), UnsavedResults, stacklevel=3)


def _with_every_knob(con: duckdb.DuckDBPyConnection, source: str) -> str:
    """``source`` with a ``param_`` column for every declared knob, null where its files have
    none (no trial of a space that sets it yet): a query naming one answers with nulls, as
    for a knob that does not apply, rather than a binder error; and so with
    ``model_digest``."""
    knobs = pa.schema([(param_column(k), t) for k, t in PARAM_TYPES.items()]
                      # rows written before it was recorded are a cost model of their own
                      # (``trials.WORKLOAD_SQL``); and so with the device's fields (the
                      # selector's and the report's queries name it: a binder error on an
                      # older warpsweep's rows, probe COMPAT)
                      + [("model_digest", pa.string()), ("device_digest", pa.string())])
    con.register("_declared_knobs", knobs.empty_table())
    return f"(SELECT * FROM {source} UNION ALL BY NAME SELECT * FROM _declared_knobs)"


def _with_graph_spec(con: duckdb.DuckDBPyConnection, source: str) -> str:
    """The graph rows with a ``graph_spec`` column: results schema 1 named it ``spec``, and
    the readers (the report, the selector) name it (a binder error, probe COMPAT)."""
    columns = {row[0] for row in con.execute(f"DESCRIBE SELECT * FROM {source}").fetchall()}
    if "spec" not in columns:
        return source
    if "graph_spec" in columns:  # files of both schemas (an old directory tuned again)
        return f"(SELECT * REPLACE (coalesce(graph_spec, spec) AS graph_spec) FROM {source})"
    return f"(SELECT *, spec AS graph_spec FROM {source})"


def _refuse_shared_keys(con: duckdb.DuckDBPyConnection, source: str, where: str) -> None:
    """Raise ConflictError where two trial rows share a (study, role, trial or label) key:
    files merged from two copies of a study (one row twice, or two different rows) would
    otherwise be read as two evaluations, or the reader would pick either at random; ``tune``
    refuses them too, and ``check --repair`` keeps the first written."""
    shared = con.execute(
        "SELECT study_key, role, CASE WHEN role = 'trial' THEN CAST(trial AS VARCHAR) "
        "ELSE label END AS ident, count(*) AS n, count(DISTINCT (state, \"values\")) AS kinds "
        f"FROM {source} GROUP BY ALL HAVING count(*) > 1 ORDER BY ALL LIMIT 1").fetchone()
    if shared is None:
        return
    study, role, ident, n, kinds = shared
    how = " with different values" if kinds > 1 else ""
    raise ConflictError(
        f"study {study} {role} {ident} has {n} rows{how} in {where} (as from two copies of "
        f"a study merged): run `warpsweep check {shell_word(where)}` to see the files and "
        "what `--repair` sets right (it keeps the row the study's journal records; with no "
        "journal, check names each run's files, to move one run's out)")


def _refuse_two_runs(con: duckdb.DuckDBPyConnection, source: str, where: str) -> None:
    """Raise ConflictError where one study's trial rows were drawn under two samplers or
    seeds: two runs' rows merged (``check`` names their files, ``tune`` refuses to resume
    them); the readers had ranked them as one study (review CR30)."""
    columns = {row[0] for row in con.execute(f"DESCRIBE SELECT * FROM {source}").fetchall()}
    if not {"sampler", "seed"} <= columns:
        return
    mixed = con.execute(
        f"SELECT study_key, string_agg(DISTINCT sampler || ' seed ' || seed, ', ' ORDER BY "
        f"sampler || ' seed ' || seed) FROM {source} WHERE role = 'trial' AND seed IS NOT "
        "NULL GROUP BY study_key HAVING count(DISTINCT (sampler, seed)) > 1 ORDER BY 1 "
        "LIMIT 1").fetchone()
    if mixed is not None:
        raise ConflictError(
            f"study {mixed[0]}: its rows in {where} were drawn by two runs ({mixed[1]}): "
            f"directories merged? `warpsweep check {shell_word(where)}` names each run's "
            "files, to move one run's out")


def _refuse_misplaced_rows(con: duckdb.DuckDBPyConnection, source: str, where: str) -> None:
    """Raise ConflictError where rows sit in a study they do not belong to (a row edited, a
    file copied or moved): rows of one study naming two graphs, or lying under another
    ``algorithm=``/``device=`` directory than the study key names, would be read as the
    other graph's, algorithm's or device's results."""
    checks = (
        (f"SELECT study_key, count(DISTINCT graph_id) FROM {source} GROUP BY study_key "
         "HAVING count(DISTINCT graph_id) > 1 ORDER BY 1 LIMIT 1",
         "has rows of {1} graphs in {where} (a row edited, or copied from another study)"),
        (f"SELECT study_key, algorithm, device FROM {source} WHERE strpos(study_key, "
         "'.' || algorithm || '.' || device || '.') = 0 LIMIT 1",
         "has rows under algorithm={1}/device={2} in {where}, which is not its algorithm and "
         "device (a file moved or copied there)"),
    )
    for sql, problem in checks:
        found = con.execute(sql).fetchone()
        if found is not None:
            raise ConflictError(f"study {found[0]} {problem.format(*found, where=where)}: "
                                f"`warpsweep check {shell_word(where)}` names them")


def lock_down(con: duckdb.DuckDBPyConnection, allowed_paths: list[str]) -> None:
    """No file access but ``allowed_paths`` (read by the views), no extension installed or
    loaded, and the configuration locked so that no later statement can change it."""
    if allowed_paths:
        con.execute("SET allowed_paths = ?", [allowed_paths])
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")


def _glob_literal(path: str) -> str:
    """A path as a DuckDB glob pattern that matches only itself."""
    return re.sub(r"([\[*?])", r"[\1]", path)


def _sql_string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


@contextmanager
def reading_files(files: list[str], results: str, fs: object = None) -> Iterator[None]:
    """Errors from a damaged file among ``files`` raise DamagedResults naming it."""
    try:
        yield
    except (duckdb.Error, pa.ArrowException, OSError) as exc:
        damage = damage_behind(exc, files, results, fs)
        if damage is None:
            raise
        raise damage from None


def _empty_table(table: str) -> pa.Table:
    return pa.schema([(c.name, c.type) for c in declared_fields(table)]).empty_table()


def sql_error(exc: Exception) -> ConfigError:
    """DuckDB's complaint about a statement as a one-line ConfigError (``SQL error: ...``),
    its hints kept and the echo of the statement with its caret left out."""
    lines = [line.strip() for line in str(exc).splitlines()]
    kept = []
    for i, line in enumerate(lines):
        if not line or line.startswith("LINE ") or (i and lines[i - 1].startswith("LINE ")
                                                    and set(line) <= {"^", " "}):
            continue
        kept.append(line)
    return ConfigError("SQL error: " + " ".join(kept))


READ_ONLY = ("SELECT (with WITH, FROM-first, DESCRIBE, SUMMARIZE, SHOW) and EXPLAIN; "
             "--out FILE writes the rows to a file")


@contextmanager
def sql_errors(con: duckdb.DuckDBPyConnection | None = None) -> Iterator[None]:
    """Turn DuckDB's errors about a user's statement into ConfigError (internal ones stay); a
    refused file access says the query is read-only; an error from a damaged results file of
    ``con`` raises DamagedResults naming the file."""
    try:
        yield
    except (duckdb.InternalException, duckdb.InterruptException):
        raise
    except duckdb.PermissionException as exc:
        raise ConfigError("refused: warpsweep query reads the results only (no other file, no "
                          "writing, no ATTACH, no extension): "
                          + sql_error(exc).args[0].removeprefix("SQL error: ")) from None
    except (duckdb.Error, pa.ArrowException, OSError) as exc:
        damage = damage_of(con, exc) if con is not None else None
        if damage is not None:
            raise damage from None
        raise sql_error(exc) from None  # DuckDB's error, directly or through Arrow


def check_read_only(con: duckdb.DuckDBPyConnection, sql: str) -> None:
    """Refuse (ConfigError) a statement that is not a read: only SELECT and EXPLAIN of one."""
    with sql_errors():
        statements = con.extract_statements(sql)
    if not statements:
        raise ConfigError("SQL error: empty statement")
    if len(statements) > 1:  # only the last one's rows would be shown
        raise ConfigError(f"SQL error: {len(statements)} statements; give one at a time")
    for statement in statements:
        kind = statement.type
        if kind == duckdb.StatementType.EXPLAIN:
            inner = _EXPLAIN.sub("", statement.query.strip(), count=1)
            if inner.strip().rstrip(";").strip() and inner != statement.query.strip():
                check_read_only(con, inner)
                continue
        elif kind == duckdb.StatementType.SELECT:
            continue
        verb = (statement.query.split() or [kind.name])[0].upper()
        raise ConfigError(f"refused: warpsweep query runs read-only statements ({READ_ONLY}), "
                          f"not {verb}")


_EXPLAIN = re.compile(r"^\s*explain\s+(analy[sz]e\s+|\([^)]*\)\s*)?", re.IGNORECASE)


def run_sql(con: duckdb.DuckDBPyConnection, sql: str,
            batch_rows: int = BATCH_ROWS) -> pa.RecordBatchReader | None:
    """Run a user's SQL (read statements only: ``check_read_only``); its rows as a stream of
    Arrow batches, or None for a statement that answers no rows. Errors in the SQL (while
    binding or running) raise ConfigError; a damaged results file, DamagedResults."""
    if not sql.strip():
        raise ConfigError("SQL error: empty statement")
    check_read_only(con, sql)
    with sql_errors(con):
        relation = con.sql(sql)
        if relation is None:
            return None
        reader = relation.to_arrow_reader(batch_rows)
    return _guarded(reader, con)


def _guarded(reader: pa.RecordBatchReader,
             con: duckdb.DuckDBPyConnection | None = None) -> pa.RecordBatchReader:
    """The reader, with errors raised while the rows are produced turned into ConfigError."""

    def batches() -> Iterator[pa.RecordBatch]:
        with sql_errors(con):
            yield from reader

    return pa.RecordBatchReader.from_batches(reader.schema, batches())


def _unique_name(spec: str) -> str | None:
    """The unique name of a stored graph spec (None if it no longer parses)."""
    try:
        return parse_spec(spec).unique_name()
    except WarpsweepError:
        return None


def _short_name(spec: str) -> str | None:
    """The name warpsweep stored for a spec before names were unique (None if unparsable)."""
    try:
        return parse_spec(spec).short_name()
    except WarpsweepError:
        return None


def graph_name(spec: str | None, stored: str | None) -> str | None:
    """The name shown for a stored graph: the name stored, but where that is the shared name
    warpsweep stored before names were unique (issue 42), or none, the spec's unique name."""
    if not spec or (stored and stored != _short_name(spec)):
        return stored
    return _unique_name(spec) or stored


def told_apart(names: dict[str, str]) -> dict[str, str]:
    """Graph id -> name, with the id beside a name two graphs share (files of one stem in two
    directories had read alike in `best` and the report; probes QUERY, REPORT)."""
    shared = {n for n in names.values() if sum(v == n for v in names.values()) > 1}
    return {gid: f"{n} ({gid})" if n in shared and n != gid else n
            for gid, n in names.items()}


def graph_ids(con: duckdb.DuckDBPyConnection, graph: str) -> set[str]:
    """Graph ids a --graph value names: a graph name, id or spec (as given or canonical)."""
    specs = [graph]
    try:
        canonical = str(parse_spec(graph))
        if canonical != graph:
            specs.append(canonical)
    except WarpsweepError:
        pass
    marks = ", ".join("?" for _ in specs)
    found = {r[0] for r in con.execute(
        f"SELECT DISTINCT graph_id FROM graphs WHERE name = ? OR graph_id = ? "
        f"OR graph_spec IN ({marks})", [graph, graph, *specs]).fetchall()}
    # a graph's unique name (issue 42) also finds rows stored before it, under the old name
    for gid, spec in con.execute("SELECT DISTINCT graph_id, graph_spec FROM graphs").fetchall():
        if gid not in found and spec and _unique_name(spec) == graph:
            found.add(gid)
    if not found:
        found = {r[0] for r in con.execute(
            f"SELECT DISTINCT graph_id FROM trials WHERE graph_id = ? "
            f"OR graph_spec IN ({marks})", [graph, *specs]).fetchall()}
    return found
