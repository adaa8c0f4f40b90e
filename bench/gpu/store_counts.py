"""How many vertices expand and how many relaxations store in each launch of a real SSSP
topology run (issue 11): kernels.cu's sssp_topo with two counters added, one atomicAdd per
active vertex in each of its W lanes (``active`` counts lanes: vertices times W) and one
per storing lane, read back after every launch.

The counters' atomics slow the launches, so only the counts are kept: the simulator's
asynchronous sweeps are meant to expand and store as the GPU's do, and a sweep's time follows
its storing lanes (``sparse_sweeps.py``: the changed flag they all write serialises at the
L2). ``bench/store_count_fidelity.py`` sets the counts against the simulator's.

On a machine with an NVIDIA GPU and CuPy, from the repository root:
PYTHONPATH=. python bench/gpu/store_counts.py --graphs-dir ../shared/graphs \\
    --out bench/gpu/results/h100_store_counts.parquet [--only USA-road-NY]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import cupy as cp
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness  # noqa: E402
from plans import KernelPlan  # noqa: E402

WIDTHS = (1, 8, 32)
BLOCK = 256
COUNTERS = "__device__ unsigned long long g_counts[2];  // active vertices, storing lanes\n"
VERTEX = ("        cur[v] = 0;  // the owner clears its flag: cur is all zero again after "
          "the round\n")
STORE = "            nxt[u] = 1;\n"


def counting_source() -> str:
    """kernels.cu with the two counters in SsspTopo."""
    src = harness.KERNELS.read_text()
    for part in (VERTEX, STORE):
        if src.count(part) != 1:
            raise SystemExit(f"kernels.cu changed: cannot find {part.strip()!r} once")
    src = src.replace(VERTEX, VERTEX + "        atomicAdd(&g_counts[0], 1ULL);\n")
    src = src.replace(STORE, STORE + "            atomicAdd(&g_counts[1], 1ULL);\n")
    return COUNTERS + src


class CountingClock(harness.Clock):
    """Launches kernels and, after each, reads and clears the counters."""

    def __init__(self, counters: cp.ndarray) -> None:
        super().__init__()
        self.counters = counters
        self.counts: list[tuple[int, int]] = []

    def launch(self, kernel, grid: int, block: int, args: tuple, shared: int = 0) -> None:
        super().launch(kernel, grid, block, args, shared)
        active, stores = (int(x) for x in self.counters.get())
        self.counts.append((active, stores))
        self.counters.fill(0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graphs-dir", default="../shared/graphs")
    parser.add_argument("--out", type=Path, required=True, help="Parquet file to write")
    parser.add_argument("--only", nargs="*",
                        default=("USA-road-NY", "road:rows=512", "grid2d:rows=512",
                                 "NotreDame", "deg=32", "dblp-2010"),
                        help="graphs whose spec contains one of these strings")
    args = parser.parse_args(argv)
    plans = [KernelPlan("sssp", "topology", w, 1, False, None, BLOCK, "default")
             for w in WIDTHS]
    module = cp.RawModule(code=counting_source(), options=("-std=c++17",),
                          name_expressions=[p.name for p in plans])
    kernels = {p.name: module.get_function(p.name) for p in plans}
    counters = cp.ndarray((2,), dtype=cp.uint64, memptr=module.get_global("g_counts"))
    counters.fill(0)
    rows = []
    resident = harness.device_resident_blocks()
    for name, repo_spec, source, dg in harness.device_graphs(args.graphs_dir,
                                                             tuple(args.only), resident):
        for plan in plans:
            dg.clock = CountingClock(counters)
            dg.reset("sssp", source, "topology")
            rounds = dg.run(plan, kernels, source, 4 * dg.n + 16)
            counts = np.array(dg.clock.counts)
            print(f"{name:22s} W={plan.w:<2d} launches {len(counts):5d} (run {rounds}) "
                  f"active {counts[:, 0].sum():9d} stores {counts[:, 1].sum():9d}", flush=True)
            rows += [{"graph": name, "graph_spec": repo_spec, "source": source, "w": plan.w,
                      "launch": i, "active": int(a), "stores": int(s)}
                     for i, (a, s) in enumerate(counts)]
    pq.write_table(pa.Table.from_pylist(rows), args.out)
    print(f"wrote {len(rows)} rows to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
