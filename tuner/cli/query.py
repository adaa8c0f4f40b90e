"""``warpsweep query``, ``best``, ``effect`` and ``pareto``: SQL and ready answers over a results
directory (the logic lives in tuner.results.query and tuner.analysis.answers; this module parses
and prints)."""

from __future__ import annotations

import argparse
import base64
import csv
import dataclasses
import datetime as dt
import decimal
import functools
import json
import math
import os
import shlex
import sys
import threading
from collections.abc import Callable
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from typing import TextIO

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from simulator.errors import ConfigError
from simulator.strategy import Strategy
from simulator.temp_files import beside
from simulator.temp_files import rename_target
from simulator.temp_files import written_whole
from tuner.analysis import answer_types
from tuner.analysis import answers
from tuner.cli.args import OneValue
from tuner.cli.args import add_filters
from tuner.cli.args import add_json
from tuner.cli.args import add_results
from tuner.cli.args import check_writable
from tuner.cli.args import path_arg
from tuner.results.configs import config_text
from tuner.results.damaged import reading
from tuner.results.location import Location
from tuner.results.location import home_of
from tuner.results.location import shell_word
from tuner.results.measured import MEASURED_COLUMNS
from tuner.results.query import connect
from tuner.results.query import run_sql

FORMATS = ("table", "csv", "json", "parquet")
TABLE_LIMIT = 50
QUERY_TIMEOUT_S = 60.0
MAX_LIMIT = 2**62  # more rows than any result has: --limit beyond it is every row
CELL_WIDTH = 60

QUERY_EXAMPLES = """examples:
  warpsweep query "SELECT graph_spec, min(time_us) FROM trials WHERE state = 'complete' GROUP BY 1"
  warpsweep query "SELECT param_w, avg(time_us) FROM trials GROUP BY ALL ORDER BY 1" --format csv
  warpsweep query "SELECT * FROM graphs" --format json > graphs.json
  warpsweep query "SELECT * FROM trials WHERE algorithm = 'bfs'" --format parquet --out bfs.parquet
  warpsweep query - < report.sql          (the SQL from stdin)
  warpsweep query "SELECT graph_spec, time_us, measured_us FROM trials WHERE measured_us > 0"

views: trials (one row per evaluation: study_key, role, label, state, graph_id, graph_spec,
algorithm, device, param_<knob>, time_us and the other metrics, and measured_us and
measured_kernel_us where tune --verify K measured the configuration on the GPU), graphs
(graph_id, graph_spec, name, kind, n, m and the graph features) and measured (every measured
row: its study's algorithm, device, graph_id and graph_spec, then study_key, role, trial,
label, config, rank, time_us simulated, measured_us, kernel_us, correct, note, gpu_name,
winner, source, variant, trials, labels); see docs/results-store.md (Schema).
"""
BEST_EXAMPLES = """examples:
  warpsweep best
  warpsweep best --algo bfs --device h100 --json
  warpsweep best --graph rmat:scale=14,seed=1 --metric transactions

vs thread: the study's thread-per-vertex reference over the best; vs fixed: the best single
configuration across the graphs of the (algorithm, device) group (among those evaluated on
every graph, the lowest geometric mean of time relative to each graph's best) over the best.
"""
EFFECT_EXAMPLES = """examples:
  warpsweep effect w
  warpsweep effect chunk --algo bfs --graph rmat14-ef16-s1 --metric transactions
  warpsweep effect mapping --json

others: 'at best' when the row has every other knob at the study's best configuration;
'best with this value' when no such row exists and the best row with that value is shown.
"""
PARETO_EXAMPLES = """examples:
  warpsweep pareto --objectives time_us,transactions
  warpsweep pareto --objectives time_us,simd_efficiency --algo sssp --json
  warpsweep pareto --objectives bytes:min,meps:max --graph rmat14-ef16-s1

larger is better for simd_efficiency, lane_efficiency, me, work_efficiency and meps, smaller
for every other metric; METRIC:max or METRIC:min overrides.
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``query``, ``best``, ``effect`` and ``pareto`` to the ``warpsweep`` parser."""
    query = subparsers.add_parser(
        "query", help="run SQL (DuckDB) over a results directory",
        description="Run DuckDB SQL over the results directory's trials and graphs datasets, "
                    "exposed as views of those names.",
        epilog=QUERY_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    query.add_argument("sql", metavar="SQL", help="the statement ('-': read it from stdin)")
    query.add_argument("--format", choices=FORMATS, default=None,
                       help="table (aligned), csv, json (a list of objects) or parquet "
                            "(needs --out); default: --out's suffix (.csv, .json, "
                            ".parquet), else table")
    query.add_argument("--limit", type=int, default=None, metavar="N",
                       help=f"rows to print (default {TABLE_LIMIT} for table, every row for "
                            "the other formats; 0: every row)")
    query.add_argument("--out", type=path_arg, default=None, metavar="FILE",
                       help="write to FILE instead of stdout ('-': stdout; a FILE is required "
                            "for parquet)")
    query.add_argument("--timeout", type=float, default=QUERY_TIMEOUT_S, metavar="S",
                       help=f"stop a query still running after S seconds (default "
                            f"{QUERY_TIMEOUT_S:g}; a recursive query that never ends, a "
                            "cross join of everything)")
    add_results(query)
    query.set_defaults(run=run_query)

    best = subparsers.add_parser(
        "best", help="best configuration per study, against thread and the best fixed one",
        description="One row per study: its best configuration (trials and references "
                    "alike), the speedup over the study's thread reference and over the best "
                    "single fixed configuration across the graphs of its (algorithm, device).",
        epilog=BEST_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_filters(best)
    best.add_argument("--metric", default="time_us", metavar="METRIC[:max|:min]",
                      action=OneValue, help="metric to rank by (default time_us)")
    add_results(best)
    add_json(best)
    best.set_defaults(run=run_best)

    effect = subparsers.add_parser(
        "effect", help="a metric as a function of one knob, the others at their best",
        description="For each study, the metric at each value of KNOB with every other knob "
                    "held at the study's best configuration.",
        epilog=EFFECT_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    effect.add_argument("knob", metavar="KNOB", help="a knob, e.g. w, chunk, mapping")
    add_filters(effect)
    effect.add_argument("--metric", default="time_us", metavar="METRIC[:max|:min]",
                        action=OneValue, help="metric to show (default time_us)")
    add_results(effect)
    add_json(effect)
    effect.set_defaults(run=run_effect)

    pareto = subparsers.add_parser(
        "pareto", help="non-dominated configurations per study over several metrics",
        description="For each study, the configurations no other configuration beats in "
                    "every objective, sorted by the first objective.",
        epilog=PARETO_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    pareto.add_argument("--objectives", default="time_us,transactions",
                        metavar="M[:max|:min],...", action=OneValue,
                        help="comma-separated metrics (default time_us,transactions)")
    add_filters(pareto)
    add_results(pareto)
    add_json(pareto)
    pareto.set_defaults(run=run_pareto)


def _pipe_safe(run: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """A verb that stops quietly when its reader goes away (``| head``)."""

    @functools.wraps(run)
    def wrapped(args: argparse.Namespace) -> int:
        try:
            code = run(args)
            sys.stdout.flush()
            return code
        except BrokenPipeError:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())  # no second error when Python exits
            return 0

    return wrapped


def _filters_of(args: argparse.Namespace) -> answer_types.Filters:
    from tuner.tuning.plan import filter_device

    return answer_types.Filters(graph=args.graph, algo=args.algo,
                                device=filter_device(args.device, args.results))


# -- query ----------------------------------------------------------------------------------
@_pipe_safe
def run_query(args: argparse.Namespace) -> int:
    """``warpsweep query``: run the SQL, print or write its rows."""
    args.out = home_of(args.out, "--out")  # ~ as --results reads it (review CR25)
    sql = sys.stdin.read() if args.sql == "-" else args.sql
    if any("\udc80" <= ch <= "\udcff" for ch in sql):
        # bytes the locale could not decode (UTF-8 mode off): DuckDB takes text, and had
        # raised a TypeError traceback on these; the bytes are the user's UTF-8
        sql = os.fsencode(sql).decode("utf-8", "replace")
    if args.format is None:  # `--out rows.parquet` had held an aligned text table, exit 0
        suffix = args.out.suffix.lower().lstrip(".") if args.out is not None else ""
        args.format = suffix if suffix in ("csv", "json", "parquet") else "table"
    if args.out is not None and str(args.out) == "-":  # as for SQL: '-' is the stream
        if args.format == "parquet":
            raise ConfigError("--out -: --format parquet writes a file, not stdout; give --out "
                              "FILE")
        args.out = None
    if args.format == "parquet" and args.out is None:
        raise ConfigError("--format parquet writes a file: give --out FILE")
    if args.limit is not None and args.limit < 0:
        raise ConfigError(f"--limit must be >= 0, got {args.limit}")
    if not args.timeout > 0:  # NaN too
        raise ConfigError(f"--timeout must be > 0 seconds, got {args.timeout}")
    limit = args.limit if args.limit is not None else (
        TABLE_LIMIT if args.format == "table" else 0)
    limit = min(limit, MAX_LIMIT)  # Arrow slices take 64-bit lengths
    if args.out is not None:
        _check_out(args.out, args.results, args.format == "parquet")
    con = connect(args.results)
    with _time_limit(con, args.timeout):
        return _answer(con, sql, args, limit)


def _answer(con: Any, sql: str, args: argparse.Namespace, limit: int) -> int:
    reader = run_sql(con, sql)
    if reader is None:
        return 0
    if args.format == "parquet":
        with written_whole(args.out) as tmp:
            rows = write_parquet(reader, tmp, limit)
        print(f"wrote {rows:,} rows to {args.out}", file=sys.stderr)
        return 0
    with _output(args.out) as out:
        if args.format == "table":
            write_table(reader, out, limit)
        elif args.format == "csv":
            write_csv(reader, out, limit)
        else:
            write_json(reader, out, limit)
    return 0


def _check_out(out: Path, results: str, parquet: bool = False) -> None:
    """``--out`` names a file to write, outside the results (a file written among the results'
    Parquet would be read as results)."""
    if not str(out).strip() or out.name in ("", ".", ".."):
        raise ConfigError(f"--out {str(out)!r}: give a file name")
    rename_target(out)  # a link leading back to itself: one line
    if out.is_dir():
        raise ConfigError(f"--out {str(out)!r} is a directory; give a file name")
    if not out.absolute().parent.is_dir():
        raise ConfigError(f"--out {str(out)!r}: directory {str(out.parent)!r} does not exist")
    location = Location.of(results)
    if location.local:
        root = Path(location.root).resolve()
        if out.absolute().resolve().is_relative_to(root):
            raise ConfigError(f"--out {str(out)!r} is inside the results directory "
                              f"{results!r}; write it elsewhere")
    # before the query runs, not after (an errno naming the hidden file, exit 1); a device
    # or a pipe is written through, not probed (opening a pipe waits for its reader)
    target = rename_target(out)
    if target.is_file() or not target.exists():
        check_writable(beside(target), f"--out {str(out)!r}: cannot write there")
    elif parquet:  # its writer seeks back to its footer (a bare `lseek failed`, review CR15)
        raise ConfigError(f"--out {str(out)!r} is no regular file: Parquet is written to a "
                          "file; use --format csv or json for a pipe or a device")


@contextmanager
def _time_limit(con: Any, seconds: float) -> Iterator[None]:
    """Interrupt the connection's query after ``seconds``: a ConfigError saying so. Once due,
    the interrupt is repeated until the block ends: one sent before DuckDB began the query
    (a tiny limit) did nothing, and the query ran unlimited."""
    fired, done = threading.Event(), threading.Event()

    def stop() -> None:
        if done.wait(seconds):
            return
        fired.set()
        while not done.is_set():
            con.interrupt()
            done.wait(0.05)

    timer = threading.Thread(target=stop, daemon=True) if math.isfinite(seconds) else None
    if timer is not None:
        timer.start()
    try:
        yield
    except (duckdb.InterruptException, ConfigError, pa.ArrowException):
        if fired.is_set():
            raise ConfigError(f"query stopped after {seconds:g} s (--timeout S allows "
                              "longer)") from None
        raise
    finally:
        done.set()
        if timer is not None:
            timer.join()  # no thread left running while the interpreter shuts down


@contextmanager
def _output(path: Path | None) -> Iterator[TextIO]:
    """stdout, or ``path`` written whole (nothing left behind when the query fails)."""
    if path is None:
        yield sys.stdout
        return
    with written_whole(path) as tmp, open(tmp, "w", newline="", encoding="utf-8") as f:
        yield f


def _batches(reader: pa.RecordBatchReader, limit: int) -> Iterator[pa.RecordBatch]:
    """The reader's batches, cut at ``limit`` rows (0: all)."""
    left = limit
    for batch in reader:
        if limit:
            if left <= 0:
                return
            batch = batch.slice(0, left)
            left -= batch.num_rows
        yield batch


def _unique_names(names: list[str]) -> list[str]:
    """Column names made unique (``a``, ``a_2``), so JSON objects keep every column."""
    seen: dict[str, int] = {}
    out = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        out.append(name if seen[name] == 1 else f"{name}_{seen[name]}")
    return out


def _rows(batch: pa.RecordBatch) -> Iterator[tuple]:
    columns = [c.to_pylist() for c in batch.columns]
    return zip(*columns, strict=True)


def write_table(reader: pa.RecordBatchReader, out: TextIO, limit: int) -> None:
    """Aligned columns: the first ``limit`` rows (0: all), then how many were left out."""
    names = reader.schema.names
    kept: list[tuple] = []
    total = 0
    for batch in reader:
        total += batch.num_rows
        if not limit or len(kept) < limit:
            take = batch if not limit else batch.slice(0, limit - len(kept))
            kept.extend(_rows(take))
    numeric = [_is_numeric(f.type) for f in reader.schema]
    cells = [[_cell(v) for v in row] for row in kept]
    print_table([list(names), *cells], out, right=numeric)
    if len(kept) < total:
        print(f"({len(kept):,} of {total:,} rows shown, {total - len(kept):,} left out: "
              "--limit N, or --limit 0 for all)", file=out)
    else:
        print(f"({total:,} row{'s' if total != 1 else ''})", file=out)


def print_table(rows: list[list[str]], out: TextIO, right: list[bool] | None = None,
                indent: str = "") -> None:
    """Rows of cells in aligned columns, the first row a header underlined with dashes."""
    if not rows or not rows[0]:
        return
    right = right or [False] * len(rows[0])
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]

    def line(cells: list[str]) -> str:
        parts = [c.rjust(w) if r else c.ljust(w)
                 for c, w, r in zip(cells, widths, right, strict=True)]
        return indent + "  ".join(parts).rstrip()

    print(line(rows[0]), file=out)
    print(indent + "  ".join("-" * w for w in widths), file=out)
    for row in rows[1:]:
        print(line(row), file=out)


def _is_numeric(kind: pa.DataType) -> bool:
    return pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_decimal(kind)


def _cell(value: Any) -> str:
    """A value as a table cell: NULL, 6 significant digits, ISO times, one line, capped."""
    if value is None:
        text = "NULL"
    elif isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, float):
        text = f"{value:.6g}"
    elif isinstance(value, (dt.datetime, dt.date, dt.time)):
        text = value.isoformat()
    elif isinstance(value, (list, dict)):
        text = json.dumps(_jsonable(value), allow_nan=False, default=str)
    else:
        text = str(value)
    text = " ".join(text.split()) if "\n" in text or "\t" in text else text
    return text if len(text) <= CELL_WIDTH else text[:CELL_WIDTH - 1] + "…"


def _jsonable(value: Any) -> Any:
    """A value from Arrow as strict JSON: NaN/inf null, times ISO, bytes base64."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, decimal.Decimal):  # sum() of integers is a HUGEINT: kept whole
        if not value.is_finite():
            return None
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, (bool, int, str)):
        return value
    return str(value)


def write_json(reader: pa.RecordBatchReader, out: TextIO, limit: int) -> None:
    """A JSON list of objects, one per row (strict JSON)."""
    names = _unique_names(reader.schema.names)
    first = True
    out.write("[")
    for batch in _batches(reader, limit):
        for row in _rows(batch):
            obj = {n: _jsonable(v) for n, v in zip(names, row, strict=True)}
            out.write(("\n" if first else ",\n") + json.dumps(obj, allow_nan=False))
            first = False
    out.write("\n]\n" if not first else "]\n")


def write_csv(reader: pa.RecordBatchReader, out: TextIO, limit: int) -> None:
    """CSV with a header: empty for NULL, ISO times, lists and structs as JSON."""
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(reader.schema.names)
    for batch in _batches(reader, limit):
        writer.writerows([_csv_value(v) for v in row] for row in _rows(batch))


def _csv_value(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):  # NaN and infinities as Python and pandas read them
        return repr(value)
    if isinstance(value, decimal.Decimal):  # exact, not through a float
        return format(value, "f")
    if isinstance(value, (list, dict)):
        return json.dumps(_jsonable(value), allow_nan=False)
    if isinstance(value, (int, str)):
        return value
    return _jsonable(value)


def write_parquet(reader: pa.RecordBatchReader, path: Path, limit: int) -> int:
    """Write the rows as one Parquet file; the number of rows written."""
    rows = 0
    try:
        with pq.ParquetWriter(path, reader.schema) as writer:
            for batch in _batches(reader, limit):
                writer.write_batch(batch)
                rows += batch.num_rows
    except pa.ArrowNotImplementedError as exc:  # a type Parquet has no form for (INTERVAL)
        raise ConfigError(f"--format parquet cannot hold these columns: {exc}; cast them "
                          "(e.g. to VARCHAR) or use --format csv/json") from None
    return rows


# -- ready answers --------------------------------------------------------------------------
def _dump(obj: dict[str, Any]) -> None:
    json.dump(obj, sys.stdout, indent=1, allow_nan=False)
    print()


def _fmt(value: float | None) -> str:
    return "-" if value is None or not math.isfinite(value) else f"{value:.6g}"


def _times(value: float | None) -> str:
    return "-" if value is None or not math.isfinite(value) else f"{value:.2f}x"


def _nothing(args: argparse.Namespace, metrics: str) -> str:
    """The line for an answer with no study (and, unfiltered, the studies whose journal holds
    results that no row does yet: a run killed before it wrote them)."""
    chosen = [f"--{name} {value}" for name in ("graph", "algo", "device")
              if (value := getattr(args, name)) is not None]
    line = (f"no complete evaluation with {metrics} in {args.results}"
            + (f" for {' '.join(chosen)}" if chosen else ""))
    pending = "" if chosen else _pending_studies(args.results)
    return line + (f"; {pending}" if pending else "")


def _pending_studies(results: str) -> str:
    """What to say of the studies whose journal holds results that no row does yet (a run
    killed before it wrote them), or "" where none does."""
    pending = _journals_without_rows(results)
    if not pending:
        return ""
    one = len(pending) == 1
    return (f"{len(pending)} stud{'y' if one else 'ies'} in studies/ ha{'s' if one else 've'} "
            "a journal but no rows yet (a run stopped before writing them): resume it, or "
            f"`warpsweep check {shell_word(str(results))} --repair` writes the rows its journal "
            "recorded")


def _journals_without_rows(results: str) -> list[str]:
    """Study keys with a journal in ``results`` that records a result, and no row in its
    trials (a journal recording none, left by a run refused as its study began, had been
    named here for ever: nothing resumes or repairs it)."""
    from tuner.results.location import Location
    from tuner.results.store import read_trials

    location = Location.of(results)
    journals = location.journals()
    if not journals:
        return []
    try:
        keys = set(read_trials(results, ["study_key"]).column("study_key").to_pylist())
    except Exception:  # noqa: BLE001 - a hint only: the readers name a damaged store
        return []
    return sorted(key for key in journals if key not in keys
                  and _records_a_result(location, journals[key]))


def _records_a_result(location: Any, path: str) -> bool:
    """``records_a_result`` of a journal; an unreadable one is named (`check` says why)."""
    from tuner.results.journal import records_a_result

    try:
        return records_a_result(location.read_text(path) or "")
    except (OSError, UnicodeDecodeError):
        return True


def _study_line(study: answer_types.Study) -> str:
    return (f"{study.graph}, {study.algorithm} on {study.device}, space {study.space}, "
            f"{study.complete} complete evaluations ({study.key})")


@_pipe_safe
def run_best(args: argparse.Namespace) -> int:
    """``warpsweep best``: one row per study, then each group's fixed configuration."""
    objective = answer_types.Objective.parse(args.metric)
    con = connect(args.results)
    filters = _filters_of(args)  # (a device file's fields checked against the rows once)
    with reading(con):
        result = answers.best(con, filters, objective)
    if args.json:
        _dump(result.to_json())
        return 0 if result.studies else 1
    if not result.studies:
        print(_nothing(args, objective.metric))
        return 1
    measured = any(s.measured is not None or s.measured_us is not None for s in result.studies)
    column = measured and objective.metric != "measured_us"  # (not twice)
    rows = [["graph", "algo", "device", "space", objective.metric,
             *(["measured_us"] if column else []), "vs thread", "vs fixed",
             "best configuration"]]
    # studies that differ only in what these columns leave out (objective, device fields, a
    # file's content) are told apart by their key's digest
    cells = [(s.study.graph, s.study.algorithm, s.study.device, s.study.space)
             for s in result.studies]
    alike = {c for c in cells if cells.count(c) > 1}
    for s, cell in zip(result.studies, cells, strict=True):
        origin = f"  [reference: {s.label}]" if s.role == "reference" else ""
        space = (f"{s.study.space} ({s.study.key.rsplit('.', 1)[-1]})" if cell in alike
                 else s.study.space)
        rows.append([s.study.graph, s.study.algorithm, s.study.device, space,
                     _fmt(s.value), *([_fmt(s.measured_us)] if column else []),
                     _times(s.vs_thread), _times(s.vs_fixed), s.config.text + origin])
    print_table(rows, sys.stdout, right=[False] * 4 + [True] * (4 if column else 3) + [False])
    if measured:
        print("\nmeasured_us: the best configuration's time on the GPU (tune --verify K; "
              "- where it was not measured).\nMeasured winners (the fastest configuration "
              "measured; simulated rank 1 is the simulator's pick):")
        for s in result.studies:
            w = s.measured
            if w is None:
                continue
            regret = s.measured_regret
            print(f"  {s.study.graph}, {s.study.algorithm} on {s.study.device}: "
                  f"{config_text(Strategy.parse(w.config).to_params())} {_fmt(w.measured_us)} us "
                  f"measured ({_fmt(w.time_us)} simulated, rank {w.rank} of the search when "
                  "measured) on "
                  f"{w.gpu_name or 'the GPU'}, {w.measured} measured"
                  + (f"; the simulated pick's regret {regret:.3f}" if regret is not None
                     else ""))
    print(f"\nvs thread, vs fixed: how many times better the best {objective.metric} is than "
          "the study's thread reference, and than the\nbest fixed configuration of its "
          "algorithm and device across graphs:")
    for f in result.fixed:
        graphs = "the graph" if f.graphs == 1 else f"all {f.graphs} graphs"
        each = "graph"
        # a graph timed from other sources too, or by another cost model
        if (f.workloads or f.graphs) > f.graphs:
            graphs = (f"all {f.workloads} workloads ({f.graphs} "
                      f"graph{'s' if f.graphs != 1 else ''})")
            each = "workload"
        gpu = (f" measured on {f.gpu}" if f.gpu else " measured on a GPU its rows do not name"
               if objective.metric in MEASURED_COLUMNS else "")
        print(f"  {f.algorithm} on {f.device}{gpu}: {f.config.text} (evaluated on {graphs}; "
              f"geometric mean {f.geomean_ratio:.3f}x each {each}'s best)")
    groups = {(s.study.algorithm, s.study.device) for s in result.studies}
    for algorithm, device in sorted(groups - {(f.algorithm, f.device) for f in result.fixed}):
        zero = sorted({s.study.graph for s in result.studies if s.value == 0
                       and (s.study.algorithm, s.study.device) == (algorithm, device)})
        print(f"  {algorithm} on {device}: " + (
            f"no ratio to the best: the best {objective.metric} is 0 on {', '.join(zero)}"
            if zero else "no configuration was evaluated on every graph"))
    from tuner.tuning.spec import Objective as StudyObjective

    # by what each objective means: a study's text may spell one as --metric does not
    ranked = StudyObjective.parse(str(objective))
    others = sorted(text for text in {s.study.objective for s in result.studies}
                    if StudyObjective.parse(text) != ranked)
    # a front's study has the metric among its objectives, the same way round: its row is
    # the front's best by it, no other objective's pick
    among = dict(zip(ranked.metrics, ranked.directions, strict=True))
    fronts = [text for text in others if any(
        among.get(m) == d for m, d in zip(*dataclasses.astuple(StudyObjective.parse(text)),
                                          strict=True))]
    for kind, texts in (("several objectives, one of them this one", fronts),
                        ("another objective", [t for t in others if t not in fronts])):
        if not texts:
            continue
        tuned = sum(s.study.objective in texts for s in result.studies)
        how = ("their rows are their Pareto fronts' best by "
               f"{objective.metric} (`pareto` gives the fronts)" if texts is fronts else
               f"their rows are the best by {objective.metric} (give --metric to rank by "
               "another)")
        print(f"note: {tuned} of these studies {'was' if tuned == 1 else 'were'} tuned for "
              f"{kind} ({', '.join(texts)}); {how}", file=sys.stderr)
    if not any(getattr(args, name) is not None for name in ("graph", "algo", "device")):
        pending = _pending_studies(args.results)
        if pending:  # left out of the table: said, not silently
            print(f"note: not in this table: {pending}", file=sys.stderr)
    if args.graph is None:
        failed = _studies_failed(con, filters)
        if failed:  # every evaluation failed: left out without a word (probe SWEEP2)
            print(f"note: not in this table: {failed} stud{'y' if failed == 1 else 'ies'} "
                  "whose every evaluation failed (their errors: warpsweep query --results "
                  f"{shlex.quote(str(args.results))} \"SELECT study_key, error FROM trials "
                  "WHERE state = 'failed'\")", file=sys.stderr)
        lacking = _studies_lacking(con, objective.metric, filters)
        if lacking:  # (--metric measured_us: the studies never verified on a GPU)
            print(f"note: not in this table: {lacking} stud{'y' if lacking == 1 else 'ies'} "
                  f"with no complete row holding {objective.metric}"
                  + (" (measured by tune --verify K)" if objective.metric == "measured_us"
                     else ""), file=sys.stderr)
    return 0


def _asked(filters: answer_types.Filters, clauses: list[str]) -> tuple[str, list[str]]:
    """``clauses`` and those of the --algo and --device asked, as SQL, with their values."""
    params = []
    for column, value in (("algorithm", filters.algo), ("device", filters.device)):
        if value is not None:
            clauses = [*clauses, f"{column} = ?"]
            params.append(value)
    return " AND ".join(clauses), params


def _studies_failed(con: Any, filters: answer_types.Filters) -> int:
    """Studies (of the --algo and --device asked) with rows, none of them complete."""
    where, params = _asked(filters, ["true"])
    with reading(con):
        return con.execute(
            f"SELECT count(*) FROM (SELECT study_key FROM trials WHERE {where} GROUP BY "
            "study_key HAVING count(*) FILTER (WHERE state IN ('complete', 'duplicate')) = 0 "
            "AND count(*) FILTER (WHERE state = 'failed') > 0)", params).fetchone()[0]


def _studies_lacking(con: Any, metric: str, filters: answer_types.Filters) -> int:
    """Studies (of the --algo and --device asked) none of whose complete rows holds
    ``metric``: `best` ranks rows by it, so it shows none of theirs."""
    where, params = _asked(filters, ["state = 'complete'"])
    with reading(con):
        return con.execute(
            f"SELECT count(*) FROM (SELECT study_key FROM trials WHERE {where} "
            f"GROUP BY study_key HAVING count(\"{metric}\") = 0)", params).fetchone()[0]


@_pipe_safe
def run_effect(args: argparse.Namespace) -> int:
    """``warpsweep effect KNOB``: per study, the metric at each value of the knob."""
    objective = answer_types.Objective.parse(args.metric)
    con = connect(args.results)
    with reading(con):
        result = answers.effect(con, args.knob, _filters_of(args), objective)
    if args.json:
        _dump(result.to_json())
        return 0 if result.studies else 1
    if not result.studies:
        print(_nothing(args, objective.metric))
        return 1
    knob = result.knob
    for i, s in enumerate(result.studies):
        print(("\n" if i else "") + _study_line(s.study))
        at = (f"at {knob}={_knob_value(s.best_value)}" if s.best_value is not None
              else f"with {knob} unset (off, or not applying to the configuration)")
        print(f"  best {objective.metric} {_fmt(s.best_metric)} {at}: {s.best_config.text}")
        rows = [[knob, objective.metric, "best is", "configurations", "others",
                 "configuration"]]
        for p in s.points:
            rows.append([_knob_value(p.value), _fmt(p.metric), _times(p.vs_best),
                         str(p.configurations), p.others,
                         p.config.text if p.others != answer_types.AT_BEST or p.value is None
                         else ""])
        _indented(rows, [False, True, True, True, False, False])
    return 0


def _knob_value(value: Any) -> str:
    if value is None:  # a knob set to none (defer_threshold: no deferring) or not applying
        return "unset"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


@_pipe_safe
def run_pareto(args: argparse.Namespace) -> int:
    """``warpsweep pareto``: per study, its non-dominated configurations."""
    objectives = answer_types.parse_objectives(args.objectives)
    con = connect(args.results)
    with reading(con):
        result = answers.pareto(con, objectives, _filters_of(args))
    if args.json:
        _dump(result.to_json())
        return 0 if result.studies else 1
    if not result.studies:
        print(_nothing(args, ", ".join(o.metric for o in objectives)))
        return 1
    names = [str(o) for o in objectives]
    for i, s in enumerate(result.studies):
        print(("\n" if i else "") + _study_line(s.study))
        print(f"  {len(s.points)} non-dominated configuration{'s' if len(s.points) != 1 else ''}"
              f" over {', '.join(names)} (of {s.study.complete} complete evaluations)")
        rows = [[o.metric for o in objectives] + ["configuration"]]
        rows += [[_fmt(v) for v in p.values] + [p.config.text] for p in s.points]
        _indented(rows, [True] * len(objectives) + [False])
    return 0


def _indented(rows: list[list[str]], right: list[bool]) -> None:
    print_table(rows, sys.stdout, right=right, indent="  ")
