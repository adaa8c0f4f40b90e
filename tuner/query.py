"""SQL over a results directory: DuckDB with the ``trials`` and ``graphs`` datasets as views."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pyarrow as pa

from tuner.schema import GRAPHS
from tuner.schema import TRIALS
from tuner.store import check_readable
from tuner.store import declared_fields


def connect(results: str | Path) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection where ``trials`` and ``graphs`` are views of the results
    directory's Parquet datasets (hive partitions as columns, file schemas unified by name).

    A table with no file yet is an empty view with the declared columns, so queries over a
    fresh directory answer with no rows rather than an error.
    """
    root = Path(results)
    check_readable(root)
    con = duckdb.connect(":memory:")
    for table in (TRIALS, GRAPHS):
        files = sorted((root / table).rglob("part-*.parquet")) if (root / table).exists() else []
        if files:
            pattern = str(root / table / "**" / "*.parquet").replace("'", "''")
            source = (f"read_parquet('{pattern}', hive_partitioning=true, "
                      "union_by_name=true)")
        else:
            con.register(f"_{table}_empty", _empty_table(table))
            source = f"_{table}_empty"
        con.execute(f"CREATE VIEW {table} AS SELECT * FROM {source}")
    return con


def _empty_table(table: str) -> pa.Table:
    return pa.schema([(c.name, c.type) for c in declared_fields(table)]).empty_table()
