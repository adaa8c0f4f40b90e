"""How many worklist entries the real data-driven runs read, duplicates included: the ground
truth for the simulator's push model (who pushes a target a launch stores to more than once).

Runs every data-driven (algorithm, config, variant) of configs.measurements() ``--runs`` times
per graph (asynchronous kernels: the count varies from run to run) and writes one row per run
with the entries summed over launches. Compare with ``python bench/worklist_fidelity.py``.

    PYTHONPATH=. python bench/gpu/worklist_items.py --graphs-dir ../shared/graphs \\
        --out bench/gpu/results/h100_worklist.parquet [--only rmat] [--runs 3]
        [--specs SPEC ...] [--algorithm bfs] [--variant plain]
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
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--specs", nargs="*", default=None,
                        help="generated graph specs to measure instead of the catalog's "
                             "(graphs held out from a model's choices)")
    parser.add_argument("--algorithm", choices=("bfs", "sssp"), default=None)
    parser.add_argument("--variant", default=None, help="e.g. plain")
    args = parser.parse_args(argv)
    if args.specs is not None:
        if not args.specs:
            parser.error("--specs names no graph")
        configs.GENERATED_GRAPHS, configs.FILE_GRAPHS = tuple(args.specs), ()
    wanted = [(m, plan_for(m)) for m in configs.measurements()
              if args.algorithm in (None, m.algorithm) and args.variant in (None, m.variant)]
    wanted = [(m, p) for m, p in wanted if p.driven == "data"]
    if not wanted:  # an empty table had been written, exit 0
        parser.error(f"no data-driven measurement is {args.algorithm or 'any algorithm'} with "
                     f"variant {args.variant!r}; variants: "
                     f"{', '.join(sorted({m.variant for m in configs.measurements()}))}")
    kernels = compile_kernels([p for _, p in wanted])
    resident = device_resident_blocks()
    rows = []
    for name, repo_spec, source, dg in device_graphs(args.graphs_dir, tuple(args.only),
                                                     resident):
        for m, plan in wanted:
            for run in range(args.runs):
                dg.reset(m.algorithm, source, plan.driven)
                iterations = dg.run(plan, kernels, source, 4 * dg.n + 16)
                cp.cuda.Device().synchronize()
                rows.append({"graph": name, "graph_spec": repo_spec, "algorithm": m.algorithm,
                             "config": m.config, "variant": m.variant, "source": source,
                             "run": run, "iterations": iterations, "items": int(dg.items)})
            print(f"{name} {m.algorithm} {m.config} {m.variant}: items "
                  f"{[r['items'] for r in rows[-args.runs:]]}", flush=True)
        pq.write_table(pa.Table.from_pylist(rows), args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
