"""Vertices expanded and relaxations stored per launch of SSSP's topology sweeps, simulated
against the H100 (issue 11).

The GPU side is ``bench/gpu/store_counts.py`` (``results/h100_store_counts.parquet``:
kernels.cu's sweeps with counters, every launch of one run per graph and W); the simulator's
is each launch's active vertices and storing lanes (its atomicMin updates) in the same
configuration. A sweep's time follows its storing lanes (the changed flag they all write
serialises at the L2: ``bench/sparse_sweep_fidelity.py``), so a simulation that stores
less than the GPU charges its sweeps less.

Run from anywhere: python bench/store_count_fidelity.py [--device FILE|NAME]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from simulator.device import get_device  # noqa: E402
from simulator.driver import iteration_costs  # noqa: E402
from simulator.functional import functional_run  # noqa: E402
from simulator.load import load_graph  # noqa: E402
from simulator.strategy import Strategy  # noqa: E402

RESULTS = ROOT / "bench" / "gpu" / "results"
STRATEGIES = {1: "mapping=thread", 8: "mapping=vwarp,w=8", 32: "mapping=vwarp,w=32"}


def simulated_counts(fr, width: int, device) -> tuple[np.ndarray, np.ndarray]:
    """Per launch, the simulator's active vertices and storing lanes."""
    costs = [it.cost for it in iteration_costs(fr, Strategy.parse(STRATEGIES[width]), device)]
    return (np.array([c.active_tasks for c in costs], dtype=np.int64),
            np.array([c.atomics for c in costs], dtype=np.int64))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default=str(RESULTS / "h100.toml"),
                        help="device preset or file (default: the calibrated h100.toml)")
    args = parser.parse_args(argv)
    device = get_device(args.device)
    os.chdir(ROOT)  # the recorded graph specs are relative to the repository root
    rows = pq.read_table(RESULTS / "h100_store_counts.parquet").to_pylist()
    print("SSSP topology sweeps: launches, vertices expanded and lanes storing, summed over "
          "a run (sim / GPU)")
    print(f"{'graph':22s} {'W':>3s} {'launches':>15s} {'active vertices':>27s} "
          f"{'storing lanes':>27s}")
    for name in dict.fromkeys(r["graph"] for r in rows):
        mine = [r for r in rows if r["graph"] == name]
        fr = functional_run(load_graph(mine[0]["graph_spec"]), "sssp", mine[0]["source"])
        for width in STRATEGIES:
            run = sorted((r for r in mine if r["w"] == width), key=lambda r: r["launch"])
            gpu_active = sum(r["active"] for r in run) // width  # the GPU counts lanes
            gpu_stores = sum(r["stores"] for r in run)
            active, stores = simulated_counts(fr, width, device)
            print(f"{name:22s} {width:3d} {len(active):6d} / {len(run):6d} "
                  f"{active.sum():10d} / {gpu_active:10d} ({active.sum() / gpu_active:4.2f}) "
                  f"{stores.sum():10d} / {gpu_stores:10d} ({stores.sum() / gpu_stores:4.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
