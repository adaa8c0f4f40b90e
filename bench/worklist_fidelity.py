"""Worklist entries of the real data-driven runs against the simulator's (issue 11).

The GPU counts come from ``bench/gpu/worklist_items.py`` (every data-driven BFS and SSSP
kernel of the harness, a few runs each, entries read summed over launches, duplicates
included); the simulator's are ``Result.worklist_items`` of the same (graph, algorithm,
config, source). Prints per row the GPU median, the simulated count and their ratio, and per
(algorithm, config) the median ratio: how well the push model (who pushes a target that a
launch stores to more than once) predicts the duplicates.

Run from anywhere: python bench/worklist_fidelity.py [RESULTS.parquet] [--graphs a,b]
[--device h200] (bench/gpu/results/h200_worklist_heldout.parquet: the H200's BFS entries on
six generated graphs held out from the choices of the race model tried in docs/fidelity.md)
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import pyarrow.parquet as pq  # noqa: E402

from simulator.functional import functional_run  # noqa: E402
from simulator.load import load_graph  # noqa: E402
from simulator.simulate import simulate  # noqa: E402

RESULTS = ROOT / "bench" / "gpu" / "results" / "h100_worklist.parquet"


KEY = ("graph", "graph_spec", "source", "algorithm", "config", "variant")


def measured_items(path: Path, graphs: set[str] | None,
                   key: tuple[str, ...] = KEY) -> dict[tuple, float]:
    """Median entries over the runs of each ``key`` (its columns' values)."""
    runs: dict[tuple, list[int]] = {}
    for r in pq.read_table(path).to_pylist():
        if graphs and r["graph"] not in graphs:
            continue
        runs.setdefault(tuple(r[c] for c in key), []).append(r["items"])
    return {k: float(statistics.median(v)) for k, v in runs.items()}


def arguments(doc: str, default: Path, argv: list[str] | None, device: bool = False):
    """The results file (resolved) and the graphs to keep (None: all) from the command line
    (with ``device``, also the simulated device: the measured GPU's preset); the working
    directory becomes the repository root, as the recorded graph specs expect."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("results", nargs="?", type=Path, default=default)
    parser.add_argument("--graphs", default=None, help="short graph names, comma-separated")
    if device:
        parser.add_argument("--device", default="h100",
                            help="the simulated device (h200 for the H200's measurements)")
    args = parser.parse_args(argv)
    results = args.results.resolve()
    os.chdir(ROOT)
    graphs = set(args.graphs.split(",")) if args.graphs else None
    return (results, graphs, args.device) if device else (results, graphs)


def main(argv: list[str] | None = None) -> int:
    results, graphs, device = arguments(__doc__, RESULTS, argv, device=True)
    measured = measured_items(results, graphs)
    ratios: dict[tuple[str, str, str], list[float]] = {}
    print(f"{'graph':<22} {'alg':<4} {'config':<44} {'variant':<15} {'gpu':>10} "
          f"{'simulated':>10} {'ratio':>6}")
    loaded = None
    simulated: dict[tuple, float] = {}
    for (graph, spec, source, algorithm, config, variant), gpu in sorted(measured.items()):
        if loaded is None or loaded[0] != (spec, algorithm):
            g = load_graph(spec)
            loaded = ((spec, algorithm), g, functional_run(g, algorithm, source))
        _, g, fr = loaded
        if (spec, algorithm, config) not in simulated:  # the variants share a simulation
            simulated[spec, algorithm, config] = simulate(g, algorithm, config, device,
                                                          functional=fr).worklist_items
        sim = simulated[spec, algorithm, config]
        ratio = sim / gpu
        ratios.setdefault((algorithm, config, variant), []).append(ratio)
        print(f"{graph[:22]:<22} {algorithm:<4} {config:<44} {variant:<15} {gpu:>10.0f} "
              f"{sim:>10.0f} {ratio:>6.2f}")
    print("\nmedian simulated / GPU entries over graphs (1 = the push model's duplicates are "
          "right)")
    for (algorithm, config, variant), values in sorted(ratios.items()):
        print(f"  {algorithm:<4} {config:<44} {variant:<15} {statistics.median(values):5.2f}  "
              f"(range {min(values):.2f}..{max(values):.2f}, {len(values)} graphs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
