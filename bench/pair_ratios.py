"""Two simulators' time ratios of paired configurations against a measured catalog's, pair by pair.

A pair is one knob's value against another's with every other knob equal (``--knob
push=block --against push=atomic``: a block push against the atomic push of the same
mapping), on one graph and algorithm. Its error is |log(sim ratio) - log(measured ratio)|:
a ratio of two times of one graph holds no per-graph level, so a change to what one knob
costs can be judged on it before any ranking or fitted level is looked at. Reads the measured
rows of RESULTS (a configuration's time is its fastest correct variant's) and two
``bench/catalog_fidelity.py`` simulation files (``--sims``), the simulator before (OLD) and
after (NEW); per algorithm, the pairs whose error fell, rose or stayed, and the summed error
of each, then every pair with both errors.

Run from anywhere: python bench/pair_ratios.py RESULTS.parquet OLD.jsonl NEW.jsonl
--knob K=V --against K=V [--algorithms A,A]
e.g. the block push against the atomic push in bench/gpu's PageRank / CC catalog:
  python bench/pair_ratios.py bench/gpu/results/h100_pr_cc.parquet OLD.jsonl \
      bench/gpu/results/h100_pr_cc_sims.jsonl --knob push=block --against push=atomic
"""

from __future__ import annotations

import argparse
import math
from collections import defaultdict
from pathlib import Path

import pyarrow.parquet as pq
from launch_rows import sims_by_row  # bench/, beside this script


def times_by_row(path: Path) -> dict[tuple, float]:
    """(graph spec, algorithm, source, config) -> simulated time_us, from a sims file."""
    return {row: time_us for row, (time_us, _) in sims_by_row(path).items()}


def partner(config: str, knob: str, against: str) -> str | None:
    """``config`` with ``knob`` replaced by ``against``; None where it lacks the knob."""
    items = config.split(",")
    if knob not in items:
        return None
    return ",".join(against if item == knob else item for item in items)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path)
    parser.add_argument("old", type=Path)
    parser.add_argument("new", type=Path)
    parser.add_argument("--knob", required=True, help="e.g. push=block")
    parser.add_argument("--against", required=True, help="e.g. push=atomic")
    parser.add_argument("--algorithms", help="e.g. pagerank,cc (default: all)")
    args = parser.parse_args()
    measured: dict[tuple, float] = {}
    for r in pq.read_table(args.results).to_pylist():
        if not r["correct"]:
            continue
        if args.algorithms and r["algorithm"] not in args.algorithms.split(","):
            continue
        key = (r["graph_spec"], r["algorithm"], str(r["source"]), r["config"])
        measured[key] = min(measured.get(key, math.inf), r["time_us"])
    old, new = times_by_row(args.old), times_by_row(args.new)
    tally: dict[str, list[float]] = defaultdict(lambda: [0, 0, 0, 0.0, 0.0])
    lines, missing = [], 0
    for key, time_us in sorted(measured.items()):
        other = partner(key[3], args.knob, args.against)
        pair = (*key[:3], other)
        if other is None or pair not in measured:
            continue
        sims = [(s.get(key), s.get(pair)) for s in (old, new)]
        if any(a is None or b is None for a, b in sims):
            missing += 1
            continue
        truth = math.log(time_us / measured[pair])
        before, after = (abs(math.log(a / b) - truth) for a, b in sims)
        t = tally[key[1]]
        t[0 if after < before - 1e-9 else 1 if after > before + 1e-9 else 2] += 1
        t[3] += before
        t[4] += after
        lines.append(f"  {key[1]:9s} {key[0].split('/')[-1][:34]:34s} {key[3]:48s} measured "
                     f"{math.exp(truth):5.2f}  old {sims[0][0] / sims[0][1]:5.2f}  new "
                     f"{sims[1][0] / sims[1][1]:5.2f}")
    print(f"{args.knob} against {args.against}: |log(sim ratio) - log(measured ratio)| per pair")
    print(f"{'algorithm':10s} {'closer':>6s} {'further':>7s} {'same':>5s} {'old error':>10s} "
          f"{'new error':>10s}")
    for algorithm, (closer, further, same, before, after) in sorted(tally.items()):
        print(f"{algorithm:10s} {closer:6d} {further:7d} {same:5d} {before:10.2f} {after:10.2f}")
    if missing:
        print(f"({missing} pairs not simulated in both files, left out)")
    print("pairs (ratio = the knob's time over its partner's):")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
