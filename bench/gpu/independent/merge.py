"""Merge sessions of independent-kernel measurements (run.py, bfs_run.py) into one file: per
(graph, implementation) the row of the session whose time is the median (the lower middle for
an even count), its time_us_min the least over the sessions. A GPU's times move more between
processes than between runs of one (the H200's BFS set: a median spread of 5.5%, up to 1.5x,
over three sessions), so one session's ranking of near ties is partly chance.

Run: python bench/gpu/independent/merge.py OUT.parquet SESSION.parquet [SESSION.parquet ...]
"""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from bench.gpu.independent.catalog import write_results  # noqa: E402


def merged_rows(paths: list[Path]) -> list[dict]:
    """The sessions' rows merged (see the module's docstring); a (graph, implementation)
    wrong in any session is kept as wrong, from that session."""
    by_key: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for path in paths:
        for r in pq.read_table(path).to_pylist():
            by_key[(r["graph"], r["impl"])].append(r)
    out = []
    for rows in by_key.values():
        wrong = [r for r in rows if not r["correct"]]
        if wrong:
            out.append(wrong[0])
            continue
        ordered = sorted(rows, key=lambda r: r["time_us"])
        middle = dict(ordered[(len(ordered) - 1) // 2])
        middle["time_us_min"] = min(r["time_us_min"] for r in rows)
        out.append(middle)
    return out


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    out, sessions = Path(argv[0]), [Path(p) for p in argv[1:]]
    rows = merged_rows(sessions)
    write_results(rows, out)
    print(f"{len(rows)} rows from {len(sessions)} sessions to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
