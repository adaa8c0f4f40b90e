"""Nearly idle sweeps, simulated against the H100 (issue 11): one BFS or SSSP topology launch
with k random vertices active, every relaxation storing or none.

The GPU side is ``bench/gpu/sparse_sweeps.py`` (``results/h100_sparse_sweeps.parquet``: the
same k vertices, drawn with the same seed, one launch timed with CUDA events, median of 15);
the simulator's is ``engine.vertex_kernel`` for that launch with the calibrated device. The
GPU's SSSP kernel without its changed flag (``no_changed_flag``) or with a plain store for
atomicMin (``plain_min``) is printed beside the kernel the simulator models.

Run from anywhere: python bench/sparse_sweep_fidelity.py [--device FILE|NAME]
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
from simulator.engine import Launch  # noqa: E402
from simulator.engine import vertex_kernel  # noqa: E402
from simulator.functional import edge_ids  # noqa: E402
from simulator.load import load_graph  # noqa: E402
from simulator.strategy import Strategy  # noqa: E402

RESULTS = ROOT / "bench" / "gpu" / "results"
STRATEGIES = {1: "mapping=thread", 8: "mapping=vwarp,w=8"}


def simulated_us(graph, algorithm: str, width: int, active: np.ndarray, stores: bool,
                 device) -> float:
    """The simulator's kernel time of one sweep with ``active`` vertices expanding."""
    indptr = graph.indptr
    active = np.sort(active).astype(np.int64)
    writes = (np.sort(edge_ids(indptr, active)) if stores and active.size
              else np.zeros(0, dtype=np.int64))
    sssp = algorithm == "sssp"
    cost = vertex_kernel(indptr, graph.indices, Launch(active=active, writes=writes),
                         Strategy.parse(STRATEGIES[width]), device, reads_weights=sssp,
                         stores_per_vertex=sssp, atomic_updates=sssp)
    return device.us(cost.cycles)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default=str(RESULTS / "h100.toml"),
                        help="device preset or file (default: the calibrated h100.toml)")
    parser.add_argument("--seed", type=int, default=1, help="the GPU run's --seed")
    args = parser.parse_args(argv)
    device = get_device(args.device)
    os.chdir(ROOT)  # the recorded graph specs are relative to the repository root
    rows = pq.read_table(RESULTS / "h100_sparse_sweeps.parquet").to_pylist()
    gpu = {(r["graph"], r["algorithm"], r["variant"], r["state"], r["w"], r["active"]):
           r["time_us"] for r in rows}
    print("kernel us of one sweep, k random vertices active; GPU kernel / simulated, and the "
          "GPU's SSSP kernel without the changed flag and with a plain store for atomicMin")
    for graph_name in dict.fromkeys(r["graph"] for r in rows):
        spec = next(r["graph_spec"] for r in rows if r["graph"] == graph_name)
        graph = load_graph(spec)
        order = np.random.default_rng(args.seed).permutation(graph.n)
        print(f"\n{graph_name}")
        print(f"{'':18s} {'k':>6s} {'GPU':>7s} {'sim':>7s} {'ratio':>6s}   no flag  plain min")
        for algorithm in ("bfs", "sssp"):
            for state in ("stores", "no_stores"):
                for width in STRATEGIES:
                    ks = sorted(k for (g, a, v, s, w, k) in gpu if (g, a, v, s, w) == (
                        graph_name, algorithm, "kernel", state, width))
                    for k in ks:
                        key = (graph_name, algorithm, "kernel", state, width, k)
                        sim = simulated_us(graph, algorithm, width, order[:k],
                                           state == "stores", device)
                        extra = ""
                        if algorithm == "sssp" and state == "stores":
                            extra = "   ".join(f"{gpu[(*key[:2], v, *key[3:])]:7.1f}"
                                               for v in ("no_changed_flag", "plain_min"))
                        label = f"{algorithm} {'W=' + str(width):4s} {state}"
                        print(f"{label:18s} {k:6d} {gpu[key]:7.1f} {sim:7.1f} "
                              f"{sim / gpu[key]:6.2f}   {extra}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
