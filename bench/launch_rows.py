"""Two simulators' launch counts against a measured catalog's, row by row.

A launch count is measured, and no fitted time enters it: a change to how a launch's values
propagate (which stores a read sees) can be judged on it before any ranking is looked at.
Reads the measured rows of RESULTS (one per graph, algorithm, source and configuration: the
fastest correct variant's launches) and two ``bench/catalog_fidelity.py`` simulation files
(``--sims``: one JSON line per row, ``{"key": "spec|algorithm|source|config|device|simulator",
"sim": [time_us, launches]}``), the simulator before (OLD) and after (NEW); per algorithm, the
rows whose simulated launches came closer to the measured, went further, stayed as far, and
the summed |simulated - measured| of each, then the rows that moved by more than ``--show``.

Run from anywhere: python bench/launch_rows.py RESULTS.parquet OLD.jsonl NEW.jsonl
[--configs WORD] [--algorithms A,A] [--show N]
e.g. the chunked sweeps of the WER catalog, against a65faf1's simulations:
  git show a65faf1:bench/gpu/results/h200_wer_sims.jsonl > /tmp/old.jsonl
  python bench/launch_rows.py bench/gpu/results/h200_wer.parquet /tmp/old.jsonl \
      bench/gpu/results/h200_wer_sims.jsonl --configs chunk= --algorithms sssp,cc
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

import pyarrow.parquet as pq


def sims_by_row(path: Path) -> dict[tuple, tuple[float, int]]:
    """(graph spec, algorithm, source, config) -> simulated (time_us, launches), from a
    ``bench/catalog_fidelity.py`` sims file."""
    out = {}
    for line in path.read_text().splitlines():
        record = json.loads(line)
        spec, algorithm, source, config = record["key"].split("|")[:4]
        out[(spec, algorithm, source, config)] = (float(record["sim"][0]),
                                                  int(record["sim"][1]))
    return out


def launches_by_row(path: Path) -> dict[tuple, int]:
    """(graph spec, algorithm, source, config) -> simulated launches, from a sims file."""
    return {row: launches for row, (_, launches) in sims_by_row(path).items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path)
    parser.add_argument("old", type=Path)
    parser.add_argument("new", type=Path)
    parser.add_argument("--configs", default="", help="keep configs containing this text")
    parser.add_argument("--algorithms", help="e.g. sssp,cc (default: all)")
    parser.add_argument("--show", type=int, default=2, metavar="N",
                        help="list rows whose error changed by more than N launches")
    args = parser.parse_args()
    measured: dict[tuple, dict] = {}
    for r in pq.read_table(args.results).to_pylist():
        if not r["correct"] or args.configs not in r["config"]:
            continue
        if args.algorithms and r["algorithm"] not in args.algorithms.split(","):
            continue
        key = (r["graph_spec"], r["algorithm"], str(r["source"]), r["config"])
        if key not in measured or r["time_us"] < measured[key]["time_us"]:
            measured[key] = r
    old, new = launches_by_row(args.old), launches_by_row(args.new)
    tally: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0, 0])
    moved = []
    for key, r in sorted(measured.items()):
        if key not in old or key not in new:
            raise SystemExit(f"{key} is not simulated in both files: run catalog_fidelity.py")
        was, now = abs(old[key] - r["launches"]), abs(new[key] - r["launches"])
        counts = tally[r["algorithm"]]
        counts[0 if now < was else 1 if now > was else 2] += 1
        counts[3] += was
        counts[4] += now
        if abs(now - was) > args.show:
            moved.append(f"  {r['graph']:22s} {r['algorithm']:5s} {r['config']:48s} measured "
                         f"{r['launches']:6d}  old {old[key]:6d}  new {new[key]:6d}")
    for algorithm, (closer, further, same, was, now) in tally.items():
        print(f"{algorithm}: {closer} rows closer, {further} further, {same} as far; "
              f"summed |simulated - measured| {was} -> {now} launches")
    if moved:
        print(f"rows whose error changed by more than {args.show}:")
        print("\n".join(moved))


if __name__ == "__main__":
    main()
