"""Combine sessions of the harness into one results file: per measurement, the median over
sessions.

A GPU's times move between processes (clocks, memory placement) by more than between the runs
of one process: 2-3% in the median and about 10% for one measurement in ten on the H100 here.
Separate harness sessions of one commit, merged, give each measurement the median of its
sessions' medians (``time_us``, ``kernel_us``), the fastest run of any (``time_us_min``), every
rep counted (``reps``), and correct only where every session's answers were.

Run: python bench/gpu/merge.py OUT.parquet SESSION.parquet [SESSION.parquet ...]
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


def merge_sessions(sessions: Sequence[pa.Table]) -> pa.Table:
    """One row per measurement, in the first session's order and schema; ValueError when the
    sessions do not measure the same things on the same commit and graphs."""
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
        merged.append({
            **first,
            "iterations": statistics.median_low(r["iterations"] for r in rows),
            "launches": statistics.median_low(r["launches"] for r in rows),
            "time_us": statistics.median(r["time_us"] for r in rows),
            "time_us_min": min(r["time_us_min"] for r in rows),
            "kernel_us": statistics.median(r["kernel_us"] for r in rows),
            "reps": sum(r["reps"] for r in rows),
            "correct": all(r["correct"] for r in rows),
            "measured_at": max(r["measured_at"] for r in rows),
        })
    return pa.Table.from_pylist(merged, schema=schema)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="Parquet file to write")
    parser.add_argument("sessions", type=Path, nargs="+", help="the harness's session files")
    args = parser.parse_args(argv)
    try:
        table = merge_sessions([pq.read_table(p) for p in args.sessions])
    except (OSError, ValueError, pa.ArrowException) as exc:
        print(f"merge: {exc}", file=sys.stderr)
        return 1
    args.out.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, args.out)
    print(f"{table.num_rows} measurements from {len(args.sessions)} sessions -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
