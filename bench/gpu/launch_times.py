"""Each launch's kernel time in the real runs, to set against the simulator's per-launch times
(``Result.trace``): where a run's total is off, which launches (large frontiers or small, sweeps
or worklists) make the difference.

Runs the harness's measurements of one algorithm (every configuration in every kernel
variant) ``--reps`` times per graph with CUDA events around every launch and writes one row per
(graph, config, variant, launch): the median kernel time over the runs and, for worklist
launches, the entries the launch read (the median too: asynchronous kernels differ from run
to run). Runs whose launch count differs from the first run's are
left out of the medians.

    PYTHONPATH=. python bench/gpu/launch_times.py --graphs-dir ../shared/graphs \\
        --out bench/gpu/results/h100_launches.parquet [--only email-Enron] [--algorithm sssp]
        [--l1 cached|small|bypass]

``--l1`` sets how the kernels' status and distance loads meet the SMs' L1 caches (the ``l1``
column): ``cached``, as the harness runs them; ``small``, the L1 shrunk to its least (the
kernels' carveout set to the most shared memory); ``bypass``, those loads served by L2 only
(``STATUS_LOADS_BYPASS_L1``, ld.global.cg). The differences are what L1 hits save.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import cupy as cp
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
import configs  # noqa: E402
from harness import Clock  # noqa: E402
from harness import compile_kernels  # noqa: E402
from harness import device_graphs  # noqa: E402
from harness import device_resident_blocks  # noqa: E402
from harness import warm_gpu  # noqa: E402
from plans import plan_for  # noqa: E402

L1_MODES = ("cached", "small", "bypass")


class EntryClock(Clock):
    """A per-kernel clock that also notes each worklist launch's length: its count argument,
    which the harness passes third from last (count, output worklist, control words)."""

    def __init__(self, worklist: bool) -> None:
        super().__init__()
        self.worklist = worklist
        self.entries: list[int] = []

    def start(self, per_kernel: bool) -> None:
        super().start(per_kernel)
        self.entries = []

    def launch(self, kernel, grid: int, block: int, args: tuple, shared: int = 0) -> None:
        self.entries.append(int(args[-3]) if self.worklist else -1)
        super().launch(kernel, grid, block, args, shared)

    def launch_us(self) -> list[float]:
        return [1000.0 * cp.cuda.get_elapsed_time(b, e) for b, e in self.pairs[: self.used]]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--graphs-dir", default=configs.REPO_GRAPHS_DIR)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--only", nargs="*", default=())
    parser.add_argument("--algorithm", default="sssp", choices=("bfs", "sssp"))
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--l1", default="cached", choices=L1_MODES)
    parser.add_argument("--configs", nargs="*", default=(),
                        help="only these configurations (the harness's config strings)")
    args = parser.parse_args(argv)
    wanted = [(m, plan_for(m)) for m in configs.measurements()
              if m.algorithm == args.algorithm and (not args.configs
                                                    or m.config in args.configs)]
    defines = ("STATUS_LOADS_BYPASS_L1",) if args.l1 == "bypass" else ()
    kernels = compile_kernels([p for _, p in wanted], defines)
    if args.l1 == "small":
        for kernel in kernels.values():  # percent of L1/shared memory given to shared
            kernel.preferred_shared_memory_carveout = 100
    resident = device_resident_blocks()
    warm_gpu(2.0)
    rows = []
    for name, repo_spec, source, dg in device_graphs(args.graphs_dir, tuple(args.only),
                                                     resident):
        for m, plan in wanted:
            dg.clock = EntryClock(plan.driven == "data")
            runs = []
            for _ in range(args.reps + 1):  # the first run warms up
                dg.reset(m.algorithm, source, plan.driven)
                dg.clock.start(True)
                dg.run(plan, kernels, source, 4 * dg.n + 16)
                cp.cuda.Device().synchronize()
                runs.append((dg.clock.launch_us(), list(dg.clock.entries)))
            runs = runs[1:]
            launches = len(runs[0][0])
            kept = [r for r in runs if len(r[0]) == launches]
            for i in range(launches):
                rows.append({
                    "graph": name, "graph_spec": repo_spec, "algorithm": m.algorithm,
                    "config": m.config, "variant": m.variant, "source": source,
                    "launch": i, "runs": len(kept), "l1": args.l1,
                    "kernel_us": float(statistics.median(r[0][i] for r in kept)),
                    "entries": int(statistics.median_low(r[1][i] for r in kept)),
                })
            total = sum(r["kernel_us"] for r in rows[-launches:])
            print(f"{name} {m.config} {m.variant}: {launches} launches, {total:.1f} us "
                  f"({len(kept)}/{len(runs)} runs)", flush=True)
        pq.write_table(pa.Table.from_pylist(rows), args.out)
    print(f"wrote {len(rows)} rows to {args.out}; entries -1: a sweep "
          f"({np.mean([r['runs'] for r in rows]):.1f} runs a launch on average)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
