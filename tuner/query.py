"""SQL over a results directory: DuckDB with the ``trials`` and ``graphs`` datasets as views."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb
import pyarrow as pa

from simulator.errors import ConfigError
from simulator.errors import WarpsweepError
from simulator.graph_spec import parse_spec
from tuner.location import Location
from tuner.schema import GRAPHS
from tuner.schema import TRIALS
from tuner.store import ParquetDirBackend
from tuner.store import check_readable
from tuner.store import declared_fields

BATCH_ROWS = 65_536


def connect(results: str | Path | Location) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection where ``trials`` and ``graphs`` are views of the results
    directory's Parquet datasets (hive partitions as columns, file schemas unified by name).

    A table with no file yet is an empty view with the declared columns, so queries over a
    fresh directory answer with no rows rather than an error. A results URI (``s3://...``) is
    read through its pyarrow filesystem.
    """
    location = Location.of(results)
    check_readable(location)
    con = duckdb.connect(":memory:")
    # Every query re-binds the views, which reads each file's footer: keep the footers.
    con.execute("SET parquet_metadata_cache = true")
    for table in (TRIALS, GRAPHS):
        if location.local:
            root = location.local_path()
            files = (sorted((root / table).rglob("part-*.parquet"))
                     if (root / table).exists() else [])
            pattern = str(root / table / "**" / "*.parquet").replace("'", "''")
            source = (f"read_parquet('{pattern}', hive_partitioning=true, "
                      "union_by_name=true)") if files else None
        else:
            dataset = ParquetDirBackend(location).dataset(table)
            source = None
            if dataset is not None:
                con.register(f"_{table}_dataset", dataset)
                source = f"_{table}_dataset"
        if source is None:
            con.register(f"_{table}_empty", _empty_table(table))
            source = f"_{table}_empty"
        con.execute(f"CREATE VIEW {table} AS SELECT * FROM {source}")
    return con


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


@contextmanager
def sql_errors() -> Iterator[None]:
    """Turn DuckDB's errors about a user's statement into ConfigError (internal ones stay)."""
    try:
        yield
    except (duckdb.InternalException, duckdb.InterruptException):
        raise
    except duckdb.Error as exc:
        raise sql_error(exc) from None


def run_sql(con: duckdb.DuckDBPyConnection, sql: str,
            batch_rows: int = BATCH_ROWS) -> pa.RecordBatchReader | None:
    """Run a user's SQL; its rows as a stream of Arrow batches, or None for a statement that
    answers no rows. Errors in the SQL (while binding or running) raise ConfigError."""
    if not sql.strip():
        raise ConfigError("SQL error: empty statement")
    with sql_errors():
        relation = con.sql(sql)
        if relation is None:
            return None
        reader = relation.to_arrow_reader(batch_rows)
    return _guarded(reader)


def _guarded(reader: pa.RecordBatchReader) -> pa.RecordBatchReader:
    """The reader, with errors raised while the rows are produced turned into ConfigError."""

    def batches() -> Iterator[pa.RecordBatch]:
        with sql_errors():
            try:
                yield from reader
            except (pa.ArrowException, OSError) as exc:  # DuckDB's error, through Arrow
                raise sql_error(exc) from None

    return pa.RecordBatchReader.from_batches(reader.schema, batches())


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
    if not found:
        found = {r[0] for r in con.execute(
            f"SELECT DISTINCT graph_id FROM trials WHERE graph_id = ? "
            f"OR graph_spec IN ({marks})", [graph, *specs]).fetchall()}
    return found
