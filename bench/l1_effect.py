"""What the SMs' L1 caches save the measured kernels: the H100's kernel time of each run with
the status and distance loads cached in L1 (as the harness runs them), with L1 shrunk to its
least, and with those loads served by L2 only.

The simulator has no L1: it counts every status read as an L2 (or DRAM) sector. This checks
that leaving L1 out costs little: where the bypass barely moves a run's time, L1 hits do not
shape it. ``bench/gpu/launch_times.py --l1 cached|small|bypass`` measured the three (one
session, every configuration and variant of both algorithms, 17 graphs); ``--collect`` sums
their launches into ``bench/gpu/results/h100_l1.parquet``, which this script reads.

Run from anywhere: python bench/l1_effect.py [--collect LAUNCH_TIMES.parquet ...]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.fidelity import short  # noqa: E402

RESULTS = ROOT / "bench" / "gpu" / "results" / "h100_l1.parquet"
KEY = ("algorithm", "graph", "config", "variant")
MODES = ("cached", "small", "bypass")
NOTABLE = 1.15  # a run whose time moves by more than this factor is listed


def collect(files: list[Path], out: Path) -> None:
    """One row per (algorithm, graph, config, variant, l1): the summed per-launch medians."""
    totals: dict[tuple, dict] = {}
    for path in files:
        for r in pq.read_table(path).to_pylist():
            key = (*(r[k] for k in KEY), r["l1"])
            row = totals.setdefault(key, {**{k: r[k] for k in KEY}, "l1": r["l1"],
                                          "kernel_us": 0.0, "launches": 0})
            row["kernel_us"] += r["kernel_us"]
            row["launches"] += 1
    pq.write_table(pa.Table.from_pylist(sorted(totals.values(), key=lambda r: tuple(
        r[k] for k in (*KEY, "l1")))), out)
    print(f"wrote {len(totals)} rows to {out}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--collect", nargs="+", type=Path, metavar="FILE",
                        help="launch_times.py outputs to sum into the results file first")
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    if args.collect:
        collect(args.collect, args.results)
    runs: dict[tuple, dict[str, float]] = {}
    for r in pq.read_table(args.results).to_pylist():
        runs.setdefault(tuple(r[k] for k in KEY), {})[r["l1"]] = r["kernel_us"]
    runs = {k: v for k, v in runs.items() if all(m in v for m in MODES)}
    print(f"kernel time with L1 shrunk (small) or bypassed for status loads (bypass), over the "
          f"time with L1 (cached); {len(runs)} runs")
    print(f"{'algorithm':9s} {'kernels':13s} {'runs':>5s} {'small median':>13s} "
          f"{'bypass median':>14s} {'bypass range':>14s}")
    groups: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for (algorithm, _, config, _), t in runs.items():
        mapping = "data" if "driven=data" in config else "sweep"
        mapping += " thread" if "mapping=thread" in config else " vwarp"
        groups.setdefault((algorithm, mapping), []).append(
            (t["small"] / t["cached"], t["bypass"] / t["cached"]))
    for (algorithm, mapping), ratios in sorted(groups.items()):
        small = statistics.median(r[0] for r in ratios)
        bypass = [r[1] for r in ratios]
        print(f"{algorithm:9s} {mapping:13s} {len(ratios):5d} {small:13.2f} "
              f"{statistics.median(bypass):14.2f} {min(bypass):9.2f}..{max(bypass):.2f}")
    notable = sorted(((t["bypass"] / t["cached"], k, t) for k, t in runs.items()
                      if t["bypass"] / t["cached"] > NOTABLE), reverse=True)
    print(f"\nruns the bypass slows by more than {NOTABLE}x:")
    for ratio, (algorithm, graph, config, variant), t in notable:
        print(f"  {algorithm:4s} {graph:22s} {short(config):14s} {variant:15s} "
              f"{t['cached']:9.0f} us cached  {ratio:5.2f}x bypass")
    return 0


if __name__ == "__main__":
    sys.exit(main())
