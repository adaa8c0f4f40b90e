"""Combine sessions of the harness into one results file: per measurement, the median over
sessions.

A GPU's times move between processes (clocks, memory placement) by more than between the runs
of one process: 2-3% in the median and about 10% for one measurement in ten on the H100 here.
Separate harness sessions of one commit, merged, give each measurement the median of its
sessions' medians (``time_us``, ``kernel_us``: of the sessions that know it, none above the
total), the fastest run of any (``time_us_min``), every rep counted (``reps``), and correct only
where every session's answers were; bench/gpu/pr_cc.py's counters take the lower median.

Run: python bench/gpu/merge.py OUT.parquet SESSION.parquet [SESSION.parquet ...]
[--statistic median|min]
Needs pyarrow only (no GPU).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

KEY = ("graph", "algorithm", "config", "variant")
# what every session must agree on for one measurement
SAME = ("device", "gpu_name", "graph_spec", "n", "m", "source", "commit")


COUNTERS = ("worklist_items", "pushes", "atomics")


def _kernel_us(rows: list[dict]) -> float | None:
    """The median of the sessions' kernel times that are known, and none where that exceeds
    the median total (the per-kernel pass runs apart from the timed whole runs)."""
    known = [r["kernel_us"] for r in rows if r["kernel_us"] is not None]
    if not known:
        return None
    kernel = statistics.median(known)
    return kernel if kernel <= statistics.median(r["time_us"] for r in rows) else None


def merge_sessions(sessions: Sequence[pa.Table], statistic: str = "median") -> pa.Table:
    """One row per measurement, in the first session's order and schema; ValueError when the
    sessions do not measure the same things on the same commit and graphs. ``statistic``
    ``min``: each measurement's times are those of its fastest session (with two sessions a
    median is their mean, and a stall of one session's runs, which only ever slows them,
    moves it)."""
    if not sessions:
        raise ValueError("no sessions to merge")
    schema = sessions[0].schema
    grouped: dict[tuple, list[dict]] = {}
    for i, table in enumerate(sessions):
        if table.schema != schema:
            raise ValueError(f"session {i + 1} has other columns than session 1")
        keys = set()
        for row in table.to_pylist():
            key = tuple(row[k] for k in KEY)
            if key in keys:
                raise ValueError(f"session {i + 1} measures {key} twice")
            keys.add(key)
            grouped.setdefault(key, []).append(row)
    merged = []
    for key, rows in grouped.items():
        if len(rows) != len(sessions):
            raise ValueError(f"{key} is measured in {len(rows)} of {len(sessions)} sessions")
        for name in SAME:
            values = {r[name] for r in rows}
            if len(values) > 1:
                raise ValueError(f"{key}: the sessions differ in {name}: {sorted(values)}")
        first = rows[0]
        if statistic == "min":
            fastest = min(rows, key=lambda r: r["time_us"])
            kernel = fastest["kernel_us"]
            timing = {"time_us": fastest["time_us"],
                      "kernel_us": kernel if kernel is not None
                      and kernel <= fastest["time_us"] else None}
        else:
            timing = {"time_us": statistics.median(r["time_us"] for r in rows),
                      "kernel_us": _kernel_us(rows)}
        merged.append({
            **first,
            "iterations": statistics.median_low(r["iterations"] for r in rows),
            "launches": statistics.median_low(r["launches"] for r in rows),
            **timing,
            "time_us_min": min(r["time_us_min"] for r in rows),
            "reps": sum(r["reps"] for r in rows),
            "correct": all(r["correct"] for r in rows),
            "measured_at": max(r["measured_at"] for r in rows),
            # bench/gpu/pr_cc.py's counters (asynchronous runs' vary a little between runs)
            **{c: statistics.median_low(r[c] for r in rows) for c in COUNTERS if c in first},
        })
    return pa.Table.from_pylist(merged, schema=schema)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="Parquet file to write")
    parser.add_argument("sessions", type=Path, nargs="+", help="the harness's session files")
    parser.add_argument("--statistic", choices=("median", "min"), default="median",
                        help="a measurement's time: the median of its sessions' medians "
                             "(default), or the fastest session's (two sessions)")
    args = parser.parse_args(argv)
    try:
        table = merge_sessions([pq.read_table(p) for p in args.sessions], args.statistic)
    except (OSError, ValueError, pa.ArrowException) as exc:
        print(f"merge: {exc}", file=sys.stderr)
        return 1
    args.out.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, args.out)
    print(f"{table.num_rows} measurements from {len(args.sessions)} sessions -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
