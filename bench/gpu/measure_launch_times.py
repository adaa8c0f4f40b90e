"""Each launch's kernel time in `warpsweep measure`'s runs (PageRank and CC as well as BFS and
SSSP), to set against the simulator's per-iteration times: where a run's total is off, which
launches make the difference. ``bench/gpu/launch_times.py`` does this for the BFS/SSSP harness.

For each graph and measurement of a catalog (``bench/gpu/pr_cc.py``'s), ``--reps`` runs with
CUDA events around every kernel after a warm-up run; one row per (graph, config, launch): the
launch's index and kernel name and its median time over the runs of the most common launch
count (asynchronous sweeps may take a launch more or fewer from run to run), and from one more,
untimed run the vertices flagged active as each sweep launch starts (``active``; that run's
launch count in ``active_run_launches``). Run on a GPU machine from the repository root:

    PYTHONPATH=. python bench/gpu/measure_launch_times.py --catalog cc_chunks \\
        --graphs-dir .gpu_graphs --out cc_launches.parquet --commit SHA [--only road:rows=512]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

import cupy as cp
import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import configs  # noqa: E402
from pr_cc import CATALOGS  # noqa: E402

from simulator import load_graph  # noqa: E402
from tuner.measure.measure import Session  # noqa: E402
from tuner.measure.measure import prepare  # noqa: E402
from tuner.measure.plan import plan_for  # noqa: E402
from tuner.measure.runner import Clock  # noqa: E402
from tuner.measure.runner import compile_kernels  # noqa: E402
from tuner.measure.runner import compile_together  # noqa: E402
from tuner.measure.runner import warm_gpu  # noqa: E402


class NamingClock(Clock):
    """The runner's clock, noting each launch's kernel and, in a counting run, the vertices
    flagged active as a sweep launch starts (the first of ``flags`` among its arguments)."""

    def __init__(self, name_of: dict[int, str], flags: list) -> None:
        super().__init__()
        self.name_of, self.flags = name_of, {id(f) for f in flags}
        self.counting = False
        self.names: list[str] = []
        self.active: list[int] = []

    def start(self, per_kernel: bool, counting: bool = False) -> None:
        super().start(per_kernel)
        self.counting, self.names, self.active = counting, [], []

    def launch(self, kernel, grid: int, block: int, args: tuple, shared: int = 0) -> None:
        self.names.append(self.name_of.get(id(kernel), "?"))
        if self.counting:
            cur = next((a for a in args if id(a) in self.flags), None)
            self.active.append(-1 if cur is None else int(cp.count_nonzero(cur)))
        super().launch(kernel, grid, block, args, shared)


def launch_times(dg, plan, reps: int) -> tuple[list[str], list[float], int, list[int]]:
    """Per launch, its kernel's name and median time (us) over those of the ``reps`` runs (after
    a warm-up) that launched the most common number of times; how many runs that was; and per
    launch of one more, untimed run, the vertices flagged active as it starts (-1: not a
    sweep)."""
    kernels = compile_kernels(plan.names())
    outlier_grid = dg.outlier_grid(plan, kernels)
    runner_clock = dg.clock
    clock = dg.clock = NamingClock({id(k): name for name, k in kernels.items()},
                                   list(getattr(dg, "flags", ())))
    runs: list[tuple[list[str], list[float]]] = []
    try:
        for rep in range(reps + 2):
            counting = rep == reps + 1
            dg.reset(plan)
            clock.start(not counting, counting)
            dg.run(plan, kernels, outlier_grid)
            cp.cuda.Device().synchronize()
            if 0 < rep <= reps:  # the first is a warm-up
                runs.append((clock.names, [1000.0 * cp.cuda.get_elapsed_time(b, e)
                                           for b, e in clock.pairs[:clock.used]]))
    finally:
        dg.clock = runner_clock
    count = Counter(len(times) for _, times in runs).most_common(1)[0][0]
    kept = [times for _, times in runs if len(times) == count]
    first = next(names for names, times in runs if len(times) == count)
    medians = [statistics.median(column) for column in zip(*kept, strict=True)]
    return first, medians, len(kept), clock.active


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graphs-dir", default=configs.REPO_GRAPHS_DIR)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--commit", required=True)
    parser.add_argument("--catalog", choices=tuple(CATALOGS), default="cc_chunks")
    parser.add_argument("--reps", type=int, default=9)
    parser.add_argument("--only", nargs="*", default=())
    args = parser.parse_args(argv)
    catalog, algorithms = CATALOGS[args.catalog]
    wanted = [(m, plan_for(m.algorithm, m.config, m.variant)) for m in catalog()]
    compile_together([plan.names() for _, plan in wanted])
    session = Session(0)
    device = configs.device_label(session.gpu_name)
    warm_gpu(2.0)
    rows: list[dict] = []
    t_begin = time.time()
    for spec, repo_spec in configs.graph_specs(args.graphs_dir, tuple(args.only)):
        graph = load_graph(spec, cache=False)
        for algorithm in algorithms:
            prepared = prepare(graph, repo_spec, algorithm)
            dg = session.device_graph(prepared, algorithm)
            for m, plan in wanted:
                if m.algorithm != algorithm:
                    continue
                names, medians, kept, active = launch_times(dg, plan, args.reps)
                rows += [{"device": device, "gpu_name": session.gpu_name,
                          "graph": prepared.name, "graph_spec": repo_spec,
                          "algorithm": algorithm, "config": m.config, "variant": m.variant,
                          "launch": i, "kernel": name, "kernel_us": us, "runs": kept,
                          "active_run_launches": len(active),
                          "active": active[i] if i < len(active) else None,
                          "commit": args.commit}
                         for i, (name, us) in enumerate(zip(names, medians, strict=False))]
                print(f"{prepared.name} {algorithm} {m.config}: {len(names)} launches, "
                      f"{kept}/{args.reps} runs kept, {sum(medians):.1f} us", flush=True)
            session.device_graphs.clear()
            cp.get_default_memory_pool().free_all_blocks()
    pq.write_table(pa.Table.from_pylist(rows), args.out)
    print(f"{len(rows)} rows in {time.time() - t_begin:.0f} s; wrote {args.out}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
