"""The vertices each sweep starts from, and each launch's kernel time, on the GPU and in the
simulator: does an asynchronous sweep's model activate as many vertices as the GPU's kernels?

Reads ``bench/gpu/measure_launch_times.py``'s per-launch file (default
``bench/gpu/results/h200_cc_chunk_launches.parquet``: CC's sweeps on an H200, with the vertices
flagged active as each sweep launch starts) and simulates the same (graph, config) with
``--device``. Per (graph, config): the active vertices summed over the sweeps, GPU and model,
and their ratio; then, by fifths of the run's sweeps, the mean active vertices and the mean
kernel time of a sweep launch (the model's without its host time). Run from the repository
root (the graphs are ../shared/graphs):

    python bench/frontier_fidelity.py [LAUNCHES.parquet] [--device h200] [--graphs G,G]
        [--configs C;C]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simulator import functional_run  # noqa: E402
from simulator import load_graph  # noqa: E402
from simulator import simulate  # noqa: E402

LAUNCHES = ROOT / "bench" / "gpu" / "results" / "h200_cc_chunk_launches.parquet"
PARTS = 5


def fifths(values: np.ndarray) -> str:
    """The means of ``values`` over ``PARTS`` consecutive parts (a run of fewer sweeps: one a
    part, the rest left blank)."""
    parts = np.array_split(values, min(PARTS, values.size)) if values.size else []
    cells = [f"{part.mean():9.0f}" for part in parts]
    return " ".join(cells + [f"{'-':>9s}"] * (PARTS - len(cells)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("launches", nargs="?", type=Path, default=LAUNCHES)
    parser.add_argument("--device", default="h200")
    parser.add_argument("--graphs", help="short graph names, comma-separated (default: all)")
    parser.add_argument("--configs", help="configurations, ';'-separated (default: all)")
    args = parser.parse_args(argv)
    rows = pq.read_table(args.launches).to_pylist()
    sweeps = [r for r in rows if r["active"] is not None and r["active"] >= 0
              and "outliers" not in r["kernel"]]
    graphs = args.graphs.split(",") if args.graphs else sorted({r["graph"] for r in sweeps})
    configs = (args.configs.split(";") if args.configs
               else sorted({r["config"] for r in sweeps}))
    print(f"active vertices as each sweep starts and a sweep launch's kernel time, "
          f"{args.launches.name} against the simulator on {args.device}; by fifths of the sweeps")
    for graph_name in graphs:
        mine = [r for r in sweeps if r["graph"] == graph_name]
        if not mine:
            print(f"{graph_name}: no sweep launches in the file")
            continue
        spec, algorithm = mine[0]["graph_spec"], mine[0]["algorithm"]
        graph = load_graph(spec)
        functional = functional_run(graph, algorithm)
        for config in configs:
            measured = sorted((r for r in mine if r["config"] == config),
                              key=lambda r: r["launch"])
            if not measured:
                continue
            active = np.array([r["active"] for r in measured], dtype=np.float64)
            kernel_us = np.array([r["kernel_us"] for r in measured], dtype=np.float64)
            result = simulate(graph, algorithm, config, args.device, functional=functional,
                              trace=True)
            frontier = np.asarray(result.trace["frontier"], dtype=np.float64)
            sim_us = (np.asarray(result.trace["time_us"], dtype=np.float64)
                      - np.asarray(result.trace["host_us"], dtype=np.float64))
            print(f"{graph_name} {algorithm} {config}: sweeps GPU {active.size}, model "
                  f"{frontier.size}; active summed GPU {active.sum():.0f}, model "
                  f"{frontier.sum():.0f} ({frontier.sum() / max(active.sum(), 1):.2f}x)")
            print(f"   active  GPU   {fifths(active)}")
            print(f"           model {fifths(frontier)}")
            print(f"   us      GPU   {fifths(kernel_us)}")
            print(f"           model {fifths(sim_us)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
