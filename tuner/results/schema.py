"""The Parquet results schema, declared once: columns, types, partitions and version.

``python -m tuner.results.schema`` prints it as Markdown (the schema section of
docs/results-store.md).
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Iterable
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from simulator.strategy import Strategy

SCHEMA_VERSION = 2
MANIFEST = "_warpsweep.json"
TRIALS = "trials"
GRAPHS = "graphs"
STUDIES = "studies"  # each study's Optuna journal
MEASURED = "measured"  # GPU-measured times beside the trials (tune --verify)
QUARANTINE = "quarantine"  # files check --repair moved aside
PARAM_PREFIX = "param_"
STATES = ("complete", "failed", "duplicate")  # a trial row's, as every writer spells them
ROLES = ("trial", "reference")


@dataclass(frozen=True)
class Column:
    """One declared column: name, Arrow type and what it holds."""

    name: str
    type: pa.DataType
    doc: str


def _cols(*specs: tuple[str, pa.DataType, str]) -> tuple[Column, ...]:
    return tuple(Column(*s) for s in specs)


# Hive partition keys (directories ``key=value``), not stored inside the files.
TRIAL_PARTITIONS = _cols(
    ("algorithm", pa.string(), "bfs, sssp, pagerank or cc"),
    ("device", pa.string(), "device model name (h100, c2050, ...)"),
)
TRIAL_COLUMNS = _cols(
    ("study_key", pa.string(), "stable id of the (graph, algorithm, device, space, objective, "
     "sources) study; also its Optuna study name"),
    ("trial", pa.int64(), "Optuna trial number (null for reference runs)"),
    ("role", pa.string(), "`trial` (drawn by the sampler) or `reference` (baseline runs)"),
    ("label", pa.string(), "reference name, e.g. `thread` or `vwarp w=8` (null for trials)"),
    ("state", pa.string(), "`complete`, `failed` (error set, no metrics) or `duplicate` "
     "(configuration already evaluated; answered from the study, its metrics repeated: "
     "written only where the sampler found no untried configuration, and by versions before "
     "`repeats` was counted)"),
    ("duplicate_of", pa.int64(), "trial number whose result a duplicate reused (-1: a reference)"),
    ("graph_id", pa.string(), "graph id (slug of the spec + hash); key of `graphs`"),
    ("graph_spec", pa.string(), "graph spec string as loaded"),
    ("space", pa.string(), "search space name"),
    ("device_digest", pa.string(), "hash of the device's fields the row was simulated with "
     "(null in rows written before it was recorded, issue 42)"),
    ("model_digest", pa.string(), "digest of the cost model that computed the row (the "
     "simulator's sources, less the modules no figure follows from (`tuner.env.NOT_THE_MODEL`: "
     "the YAML reader, error types, memory estimates; an edit elsewhere in the simulator, a "
     "message's too, counts as another model), and `tuner/tuning/evaluate.py`: "
     "`tuner.env.model_digest`); a study resumes only under its own. Null in rows written "
     "before it was recorded"),
    ("space_digest", pa.string(), "hash of the space's content"),
    ("sampler", pa.string(), "tpe, random, grid or gp"),
    ("objective", pa.string(), "objective metric(s), comma separated, `:max` when maximised"),
    ("values", pa.list_(pa.float64()), "objective values told to Optuna (mean over sources)"),
    ("values_std", pa.list_(pa.float64()), "standard deviation of each objective over sources"),
    ("sources", pa.list_(pa.int64()), "BFS/SSSP source vertices averaged (empty otherwise)"),
    ("n_sources", pa.int64(), "number of simulations averaged"),
    ("time_us_std", pa.float64(), "spread of time_us over sources: standard deviation"),
    ("time_us_min", pa.float64(), "spread of time_us over sources: minimum"),
    ("time_us_max", pa.float64(), "spread of time_us over sources: maximum"),
    ("error", pa.string(), "error text of a failed evaluation"),
    ("wall_s", pa.float64(), "wall time of the evaluation on its worker, seconds"),
    ("worker", pa.string(), "host name of the worker that ran it"),
    ("node_id", pa.string(), "Ray node id of the worker that ran it (null in-process)"),
    ("repeats", pa.int64(), "times the sampler proposed an already-tried configuration for "
     "this trial before it proposed this untried one (its neighbour) instead; a study's "
     "repeats are its sum. Null in rows written before it was counted, where each repeat has "
     "a `duplicate` row of its own"),
    ("seed", pa.int64(), "study seed (sampler and source choice)"),
    ("timestamp", pa.timestamp("us", tz="UTC"), "when the result reached the driver"),
    ("warpsweep_version", pa.string(), "warpsweep version that produced the row (the running "
     "checkout's `pyproject.toml`, else the installed package's; null if unknown: a row "
     "rebuilt from a journal record older than this field)"),
    ("git_commit", pa.string(), "source commit, `-dirty` if modified (null if unknown)"),
    ("schema_version", pa.int32(), f"results schema version ({SCHEMA_VERSION})"),
)
# Every knob gets a column ``param_<knob>`` holding its effective value (defaults included), null
# only where the knob does not apply. Knobs a space sets that are not listed here get a column
# typed from their values.
PARAM_NULLS = ("null where the knob does not apply to the mapping or driven form; "
               "`param_defer_threshold` and `param_donate_threshold` are also null when "
               "deferring / donation is off, `param_changed_flag` at its default `step`, "
               "`param_precheck` at its default `true`")
# Each knob's Arrow type comes from its annotation on ``simulator.strategy.Strategy``
# (``int | None`` -> int64, ``str`` -> string, ``bool`` -> bool, ``float`` -> float64).
ARROW_TYPES: dict[type, pa.DataType] = {
    bool: pa.bool_(), int: pa.int64(), float: pa.float64(), str: pa.string(),
}
# The adaptive policy's knobs were never declared: their columns are typed from their values
# (``infer_type``), and declaring them now could change the type of columns already written.
UNDECLARED_KNOBS = ("policy", "policy_t1", "policy_t2", "policy_t3")
# The declared knobs' column order in the files written so far; a knob Strategy gains later
# comes after them, in field order.
PARAM_ORDER = (
    "mapping", "w", "chunk", "distribution", "defer_threshold", "block_size", "driven", "push",
    "dedup", "donate_threshold", "variable_grid", "switch_to_topology", "switch_to_data",
    "switch_on", "relax", "partition", "unroll", "adaptive_min_w", "adaptive_max_w",
    "adaptive_stat",
)


def knob_arrow_type(annotation: Any) -> pa.DataType:
    """The Arrow type of a knob annotated ``annotation`` (``X`` or ``X | None``)."""
    kinds = [a for a in typing.get_args(annotation) if a is not type(None)] or [annotation]
    if len(kinds) != 1 or kinds[0] not in ARROW_TYPES:
        raise TypeError(f"no Arrow type for a knob annotated {annotation!r}")
    return ARROW_TYPES[kinds[0]]


def param_types() -> dict[str, pa.DataType]:
    """Knob -> Arrow type of its ``param_`` column, from Strategy's field annotations."""
    hints = typing.get_type_hints(Strategy)
    knobs = [f.name for f in dataclasses.fields(Strategy) if f.name not in UNDECLARED_KNOBS]
    order = [k for k in PARAM_ORDER if k in knobs] + [k for k in knobs if k not in PARAM_ORDER]
    return {k: knob_arrow_type(hints[k]) for k in order}


PARAM_TYPES: dict[str, pa.DataType] = param_types()
# Every simulator metric gets a float64 column (mean over sources); metrics not listed here
# (added by a later simulator) get one too.
METRIC_NAMES = (
    "time_us", "cycles", "launches", "iterations", "simd_efficiency", "u_a", "u_r", "me",
    "transactions", "bytes", "transactions_per_request", "atomics", "edges_touched",
    "work_efficiency", "meps", "worklist_items", "duplicates",
)

GRAPH_PARTITIONS = _cols(
    ("kind", pa.string(), "spec family: rmat, random, grid2d, mesh2d, road or file"),
)
GRAPH_COLUMNS = _cols(
    ("graph_id", pa.string(), "graph id, as in `trials.graph_id`"),
    ("graph_spec", pa.string(), "graph spec string, as in `trials.graph_spec`"),
    ("name", pa.string(), "graph name"),
    ("n", pa.int64(), "vertices"),
    ("m", pa.int64(), "stored (directed) edges"),
    ("directed", pa.bool_(), "whether the graph is directed"),
    ("weighted", pa.bool_(), "whether it carries edge weights"),
    ("edges_digest", pa.string(), "hash of the graph as built (CSR and weights): one spec "
     "built into another graph elsewhere is refused (null in rows of older versions)"),
    ("timestamp", pa.timestamp("us", tz="UTC"), "when the row was written"),
    ("warpsweep_version", pa.string(), "warpsweep version that produced the row"),
    ("schema_version", pa.int32(), f"results schema version ({SCHEMA_VERSION})"),
)
# plus one column per graph feature (`simulator.features.graph_features`), float64 or int64.


# The columns every writer has written since the first results schema (a trial file: its
# declared columns and a column for each of its knobs; a graph file: its keys; time_us is
# rows_value_problem's): a file without one was cut by another tool, and its rows would be read
# with nulls, which readers take for a knob's default or which break them (a missing `param_w`
# had read `vwarp w=8` as w=32; a missing `graph_id`, a traceback; probe QUERY).
KEY_COLUMNS = {
    TRIALS: ("study_key", "role", "trial", "label", "state", "duplicate_of", "graph_id",
             "graph_spec", "space", "space_digest", "sampler", "objective", "values",
             "values_std", "sources", "n_sources", "time_us_std", "time_us_min",
             "time_us_max", "error", "wall_s", "worker", "seed", "timestamp",
             "warpsweep_version", "git_commit", "schema_version",
             *(PARAM_PREFIX + knob for knob in (
                 "mapping", "w", "chunk", "distribution", "defer_threshold", "block_size",
                 "driven", "push", "donate_threshold", "variable_grid", "switch_to_topology",
                 "switch_to_data", "partition", "unroll", "adaptive_min_w",
                 "adaptive_max_w"))),
    GRAPHS: ("graph_id", "n", "m"),
}


def schema_problem(schema: pa.Schema, table: str) -> str | None:
    """Why a file of ``table`` with ``schema`` is not a results file (a declared column of
    another type, a column every writer has written missing), or None."""
    declared = (TRIAL_PARTITIONS + TRIAL_COLUMNS if table == TRIALS
                else GRAPH_PARTITIONS + GRAPH_COLUMNS)
    types = {col.name: col.type for col in declared}
    if table == TRIALS:  # each knob's column has its annotation's type
        types.update((param_column(knob), t) for knob, t in PARAM_TYPES.items())
    for name, declared_type in types.items():
        if name in schema.names and not schema.field(name).type.equals(declared_type):
            return f"schema: column {name} is {schema.field(name).type}, declared {declared_type}"
    if table == GRAPHS and "study_key" in schema.names:  # had been read as graph rows
        return "schema: holds trial rows (a study_key column), not graph rows"
    missing = [c for c in KEY_COLUMNS[table] if c not in schema.names]
    if missing:
        return f"schema: no column {', '.join(missing)}"
    return _version_problem(schema)


def partition_problem(table_root: str, path: str, table: str) -> str | None:
    """Why ``path`` (a file under ``table_root``, the table's directory) is not where the store
    writes ``table``'s files (``algorithm=.../device=...``, ``kind=...``), or None: DuckDB's
    hive partitioning had refused one at another depth with a traceback, and read one a
    level deeper as rows (probe QUERY)."""
    rel = str(path)[len(table_root.rstrip("/")) + 1:].replace("\\", "/").split("/")[:-1]
    keys = [c.name for c in (TRIAL_PARTITIONS if table == TRIALS else GRAPH_PARTITIONS)]
    if [part.split("=", 1)[0] for part in rel] != keys:
        return f"not under {'/'.join(k + '=...' for k in keys)}"
    return None


def _version_problem(schema: pa.Schema) -> str | None:
    """Why the results schema version a file's footer records cannot be read by this
    warpsweep (None: it records none, or one no newer than ``SCHEMA_VERSION``): a newer
    version's columns may mean something else, so its rows are refused, not reinterpreted
    (a file copied in from another machine's results)."""
    recorded = (schema.metadata or {}).get(b"warpsweep.schema_version")
    if recorded is None:
        return None
    text = recorded.decode(errors="replace")
    if not text.isdigit():
        return f"schema: its footer records results schema version {text!r}, no integer"
    if int(text) > SCHEMA_VERSION:
        return (f"schema: written with results schema version {text}, newer than this "
                f"warpsweep reads ({SCHEMA_VERSION}); read it with the warpsweep that wrote it")
    return None


VALUE_COLUMNS = ("study_key", "role", "trial", "label", "state", "time_us", "values",
                 "objective")


def objective_columns(objectives: Iterable[str | None], names: Iterable[str]) -> list[str]:
    """The metric columns among ``names`` that the ``objectives`` (``time_us``,
    ``time_us,simd_efficiency:max``) rank by: what ``value_problem`` compares with a row's
    ``values``."""
    named = set(names)
    out: list[str] = []
    for objective in objectives:
        for part in str(objective or "").split(","):
            column = metric_column(part.partition(":")[0].strip())
            if column in named and column not in out:
                out.append(column)
    return out


def value_problem(table: pa.Table) -> str | None:
    """Why trial rows hold values no simulation gives (None: they do not): a complete row's
    ``time_us`` that is not a positive finite number, an objective value that is NaN or
    infinite, or one that is not its metric's column (the two are written from one figure:
    a row edited in one place reads as another result in the other). The readers would rank
    such a row (a time of 0 or -5 the best, NaN skipped) and the selector and the report
    fail on it; ``table`` needs ``VALUE_COLUMNS`` that the file has (the partition columns
    aside) and the ``objective_columns``. Nulls of other columns pass: not recorded (rows of
    old versions); a complete row's ``time_us`` every version has recorded."""
    import pyarrow.compute as pc  # (not at import: the CLI's start stays light)

    if "state" not in table.column_names or not table.num_rows:
        return None
    for column, known in (("state", STATES), ("role", ROLES)):
        # another spelling (COMPLETE, done) had hidden its study from the readers unsaid
        odd = set(table.column(column).unique().to_pylist()) - set(known) \
            if column in table.column_names else set()
        if odd:
            return (f"{column} {sorted(odd, key=str)[0]!r}, which no writer gives (a row's "
                    f"{column} is {' or '.join(known)})")
    complete = table.filter(pc.equal(table.column("state"), "complete"))
    types = dict(zip(complete.column_names, complete.schema.types, strict=True))
    # (column, each row wrong, why); others: type_conflict
    found: list[tuple[str, np.ndarray, str]] = []
    time_type = types.get("time_us")
    if time_type is None and complete.num_rows:  # every simulation times its run
        found.append(("time_us", np.ones(complete.num_rows, dtype=bool),
                      "which no simulation gives (the file has no time_us column)"))
    elif time_type is not None and (pa.types.is_floating(time_type)
                                    or pa.types.is_integer(time_type)):
        t = complete.column("time_us")
        wrong = pc.invert(pc.and_(pc.is_finite(t), pc.greater(t, 0)))
        # a null too: every writer has recorded a complete row's time (readers had
        # dropped such rows, and with them a study's best, probe SELECT)
        found.append(("time_us", pc.fill_null(wrong, True).to_numpy(zero_copy_only=False),
                      "which no simulation gives"))
    values_type = types.get("values")
    if values_type is not None and pa.types.is_list(values_type) and pa.types.is_floating(
            values_type.value_type):
        values = complete.column("values")
        owner = pc.list_parent_indices(values).to_numpy(zero_copy_only=False)
        wrong = pc.fill_null(pc.invert(pc.is_finite(pc.list_flatten(values))), False)
        flags = np.zeros(complete.num_rows, dtype=bool)
        flags[owner[wrong.to_numpy(zero_copy_only=False)]] = True
        found.append(("values", flags, "which no simulation gives"))
        found += _objectives_apart(complete, values, owner)
    for column, flags, why in found:
        at = np.flatnonzero(flags)
        if at.size:
            row = {c: complete.column(c)[int(at[0])].as_py()
                   for c in (*VALUE_COLUMNS, column) if c in types}
            row.setdefault(column, None)
            who = (f"trial {row.get('trial')}" if row.get("role") == "trial"
                   else f"reference {row.get('label')!r}")
            more = f" (and {at.size - 1} more)" if at.size > 1 else ""
            return (f"rows: study {row.get('study_key')} {who} is complete with {column} "
                    f"{row[column]}, {why.format(**row)}{more}")
    return None


def _objectives_apart(complete: pa.Table, values: pa.ChunkedArray, owner: np.ndarray,
                      ) -> list[tuple[str, np.ndarray, str]]:
    """Per metric column an objective ranks by, the complete rows whose objective value
    (``values``, ``owner``: each value's row) is not that column's: (column, a flag per
    row, why)."""
    import pyarrow.compute as pc

    if "objective" not in complete.column_names:
        return []
    objectives = complete.column("objective")
    flat = pc.list_flatten(values).to_numpy(zero_copy_only=False)
    # each value's place in its row's list
    starts = np.zeros(complete.num_rows + 1, dtype=np.int64)
    np.cumsum(pc.fill_null(pc.list_value_length(values), 0).to_numpy(zero_copy_only=False),
              out=starts[1:])
    place = np.arange(flat.size) - starts[owner]
    found = []
    for objective in pc.unique(objectives).drop_null().to_pylist():
        metrics = [part.partition(":")[0].strip() for part in str(objective).split(",")]
        mine = pc.fill_null(pc.equal(objectives, objective), False).to_numpy(
            zero_copy_only=False)
        for i, metric in enumerate(map(metric_column, metrics)):
            if metric not in complete.column_names or not (
                    pa.types.is_floating(complete.schema.field(metric).type)
                    or pa.types.is_integer(complete.schema.field(metric).type)):
                continue
            column = complete.column(metric).to_numpy(zero_copy_only=False).astype(float)
            at = place == i
            rows = owner[at]
            apart = (flat[at] != column[rows]) & ~np.isnan(column[rows]) & mine[rows]
            flags = np.zeros(complete.num_rows, dtype=bool)
            flags[rows[apart]] = True
            if flags.any():
                found.append((metric, flags,
                              f"where its objective value {i + 1} ({objective}) is "
                              f"{{values[{i}]}}: the one figure stored twice differs, as in "
                              "a row edited by hand"))
    return found


def type_conflict(schemas: Sequence[pa.Schema]) -> tuple[int, str] | None:
    """The first of ``schemas`` (one a file) holding a column typed apart from most of the
    files that hold it (on a tie, from the file of most columns: a results file's, beside a
    stray one's few), and why (a metric written as text beside numbers, say); None when each
    column has one type (all-null columns aside). Checked across a table's files: each alone
    may pass ``schema_problem``."""
    typed: dict[str, list[tuple[int, str]]] = {}
    for i, schema in enumerate(schemas):
        for field in schema:
            if not pa.types.is_null(field.type):
                typed.setdefault(field.name, []).append((i, _type_kind(field.type)))
    for name, held in typed.items():
        holders: dict[str, list[int]] = {}
        for i, kind in held:
            holders.setdefault(kind, []).append(i)
        if len(holders) > 1:
            common = max(holders, key=lambda k: (len(holders[k]),
                                                 max(len(schemas[i]) for i in holders[k])))
            i, other = next((i, k) for i, k in held if k != common)
            return i, f"schema: column {name} is {other}, {common} in the other files"
    return None


def _type_kind(t: pa.DataType) -> str:
    """A column type as ``type_conflict`` compares it: integers and floats alike (a column
    typed from its values, ``infer_type``, is int64 in one file and double in another where
    one batch held whole numbers only), anything else by its name."""
    return "number" if pa.types.is_integer(t) or pa.types.is_floating(t) else str(t)


def param_column(knob: str) -> str:
    """Column name of a knob."""
    return PARAM_PREFIX + knob


def reserved_names() -> set[str]:
    """Declared trial column names a metric must not shadow."""
    return {c.name for c in TRIAL_COLUMNS + TRIAL_PARTITIONS}


def metric_column(metric: str) -> str:
    """Column name of a metric (prefixed only if it would clash with a declared column)."""
    return f"metric_{metric}" if metric in reserved_names() else metric


def infer_type(values: list) -> pa.DataType:
    """Arrow type for a column not declared here, from its Python values."""
    present = [v for v in values if v is not None]
    if present and all(isinstance(v, bool) for v in present):
        return pa.bool_()
    if present and all(isinstance(v, int) and not isinstance(v, bool) for v in present):
        return pa.int64()
    if present and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present):
        return pa.float64()
    return pa.string()


def markdown() -> str:
    """The schema as Markdown tables."""
    lines = [f"Results schema version {SCHEMA_VERSION}.", "",
             "`trials/algorithm=<algo>/device=<device>/part-*.parquet`, one row per evaluation:",
             "", "| column | type | meaning |", "| --- | --- | --- |"]
    for c in TRIAL_PARTITIONS + TRIAL_COLUMNS:
        lines.append(f"| `{c.name}` | {c.type} | {c.doc} |")
    knobs = ", ".join(f"`{param_column(k)}`" for k in PARAM_TYPES)
    lines += [f"| {knobs}, ... | per knob | every knob as its own column, its effective value "
              f"(defaults included); {PARAM_NULLS} |",
              f"| {', '.join(f'`{m}`' for m in METRIC_NAMES)}, ... | double | every simulator "
              "metric, mean over sources (null unless complete) |", "",
              "`graphs/kind=<kind>/part-*.parquet`, one row per graph:", "",
              "| column | type | meaning |", "| --- | --- | --- |"]
    for c in GRAPH_PARTITIONS + GRAPH_COLUMNS:
        lines.append(f"| `{c.name}` | {c.type} | {c.doc} |")
    lines.append("| *features* | double/int64 | one column per graph feature |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(markdown())
