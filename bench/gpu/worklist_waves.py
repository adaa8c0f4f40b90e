"""Worklist entries of data-driven SSSP when each launch's worklist is split into consecutive
launches of at most E entries: on hardware, the simulator's own picture of an asynchronous
launch (waves of entries, each seeing the stores of the waves before it, its own entries
reading together), so that the simulator's waves can be checked apart from the GPU's timing.

One row per (graph, config, E, run): E = 0 is the plain run (one launch per worklist), as
``worklist_items.py`` counts it. Compare with ``python bench/worklist_waves_fidelity.py``.

    PYTHONPATH=. python bench/gpu/worklist_waves.py --graphs-dir ../shared/graphs \\
        --out bench/gpu/results/h100_worklist_waves.parquet --only USA-road-NY --waves 0 8448 2048
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import cupy as cp
import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
import configs  # noqa: E402
from harness import compile_kernels  # noqa: E402
from harness import device_graphs  # noqa: E402
from harness import device_resident_blocks  # noqa: E402
from plans import plan_for  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--graphs-dir", default=configs.REPO_GRAPHS_DIR)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--only", nargs="*", default=())
    parser.add_argument("--waves", type=int, nargs="+", default=[0, 8448, 2048],
                        help="entries per launch (0: the whole worklist in one launch)")
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args(argv)
    wanted = [(m, plan_for(m)) for m in configs.measurements()]
    wanted = [(m, p) for m, p in wanted
              if p.driven == "data" and m.algorithm == "sssp" and m.variant == "plain"]
    kernels = compile_kernels([p for _, p in wanted])
    rows = []
    for name, repo_spec, source, dg in device_graphs(args.graphs_dir, tuple(args.only),
                                                     device_resident_blocks()):
        for m, plan in wanted:
            for wave in args.waves:
                for run in range(args.runs):
                    dg.reset(m.algorithm, source, plan.driven)
                    iterations = dg.run(plan, kernels, source, 4 * dg.n + 16,
                                        entries_per_launch=wave)
                    cp.cuda.Device().synchronize()
                    rows.append({"graph": name, "graph_spec": repo_spec, "algorithm": "sssp",
                                 "config": m.config, "variant": m.variant, "source": source,
                                 "wave_entries": wave, "run": run, "iterations": iterations,
                                 "items": int(dg.items)})
                print(f"{name} {m.config} wave {wave}: items "
                      f"{[r['items'] for r in rows[-args.runs:]]}", flush=True)
        pq.write_table(pa.Table.from_pylist(rows), args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
